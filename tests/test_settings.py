"""irpass.settings: finding the config file, its schema, precedence and sources (no registries)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from irpass.plugins import PluginSettings
from irpass.settings import CLI_FLAGS, ConfigError, Settings, load_settings


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(cwd: Path, cli=None, env=None) -> Settings:
    return load_settings(cli=cli, environ=env or {}, cwd=cwd)


def error_of(cwd: Path, cli=None, env=None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load(cwd, cli, env)
    return info.value


# -- finding the file ------------------------------------------------------------------------


def test_irpass_toml_in_cwd_is_used(tmp_path):
    write(tmp_path / "irpass.toml", "opt_level = 3\n")
    s = load(tmp_path)
    assert s.opt_level == 3
    assert s.path == tmp_path / "irpass.toml"
    assert s.source("opt_level") == "file irpass.toml"
    assert s.found_by == "irpass.toml in the working directory"


def test_pyproject_tool_irpass_in_cwd(tmp_path):
    write(tmp_path / "pyproject.toml", """
        [project]
        name = "x"
        [tool.irpass]
        opt_level = 1
        [tool.irpass.plugins]
        strict = true
    """)
    s = load(tmp_path)
    assert (s.opt_level, s.plugins_strict) == (1, True)
    assert s.path == tmp_path / "pyproject.toml"
    assert s.source("plugins.strict") == "file pyproject.toml"


def test_irpass_toml_wins_over_pyproject_in_the_same_directory(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.irpass]\nopt_level = 1\n")
    write(tmp_path / "irpass.toml", "opt_level = 4\n")
    assert load(tmp_path).opt_level == 4


def test_nearest_pyproject_with_the_table_walking_up(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.irpass]\nopt_level = 0\n")
    write(tmp_path / "a" / "pyproject.toml", "[tool.irpass]\nopt_level = 1\n")
    # nearer, but without [tool.irpass]: skipped
    write(tmp_path / "a" / "b" / "pyproject.toml", "[tool.black]\nline-length = 99\n")
    cwd = tmp_path / "a" / "b" / "c"
    cwd.mkdir()
    s = load(cwd)
    assert s.opt_level == 1
    assert s.path == tmp_path / "a" / "pyproject.toml"
    assert s.source("opt_level") == "file ../../pyproject.toml"


def test_irpass_toml_in_a_parent_directory_is_not_used(tmp_path):
    write(tmp_path / "irpass.toml", "opt_level = 4\n")
    cwd = tmp_path / "sub"
    cwd.mkdir()
    s = load(cwd)
    assert s.path is None
    assert s.opt_level == 2
    # ...but a pyproject.toml with the table next to it is
    write(tmp_path / "pyproject.toml", "[tool.irpass]\nopt_level = 1\n")
    assert load(cwd).path == tmp_path / "pyproject.toml"


def test_no_file_means_defaults(tmp_path):
    s = load(tmp_path)
    assert s == Settings()
    assert s.path is None and s.found_by is None
    assert all(source == "default" for _, _, source in s.describe())


def test_config_flag_wins_over_env_and_cwd(tmp_path):
    write(tmp_path / "irpass.toml", "opt_level = 1\n")
    write(tmp_path / "env.toml", "opt_level = 2\n")
    write(tmp_path / "conf" / "cli.toml", "opt_level = 3\n")
    s = load(tmp_path, cli={"config": "conf/cli.toml"}, env={"IRPASS_CONFIG": "env.toml"})
    assert s.opt_level == 3
    assert s.path == tmp_path / "conf" / "cli.toml"
    assert s.source("opt_level") == "file conf/cli.toml"
    assert s.found_by == "cli --config"


def test_env_config_wins_over_cwd(tmp_path):
    write(tmp_path / "irpass.toml", "opt_level = 1\n")
    other = write(tmp_path / "elsewhere" / "x.toml", "opt_level = 4\n")
    s = load(tmp_path, env={"IRPASS_CONFIG": str(other)})
    assert s.opt_level == 4
    assert s.found_by == "env IRPASS_CONFIG"
    assert s.describe()[0] == ("config_file", str(other), "env IRPASS_CONFIG")


def test_empty_env_config_is_unset(tmp_path):
    write(tmp_path / "irpass.toml", "opt_level = 1\n")
    assert load(tmp_path, env={"IRPASS_CONFIG": ""}).opt_level == 1


def test_explicit_pyproject_reads_its_table(tmp_path):
    write(tmp_path / "p" / "pyproject.toml", "[tool.irpass]\nopt_level = 0\n")
    assert load(tmp_path, cli={"config": "p/pyproject.toml"}).opt_level == 0


def test_explicit_pyproject_without_the_table_is_an_error(tmp_path):
    write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n")
    err = error_of(tmp_path, cli={"config": "pyproject.toml"})
    assert str(err).startswith("pyproject.toml: has no [tool.irpass] table")
    assert "cli --config" in str(err)


def test_missing_explicit_file_is_an_error(tmp_path):
    err = error_of(tmp_path, env={"IRPASS_CONFIG": "nope.toml"})
    assert str(err).startswith("nope.toml: cannot read the config file")
    assert "env IRPASS_CONFIG" in str(err)
    assert err.path == "nope.toml"


def test_defaults_for_environ_and_cwd(tmp_path, monkeypatch):
    write(tmp_path / "a" / "irpass.toml", "opt_level = 1\n")
    write(tmp_path / "b.toml", "opt_level = 3\n")
    monkeypatch.chdir(tmp_path / "a")
    monkeypatch.delenv("IRPASS_CONFIG", raising=False)
    assert load_settings().opt_level == 1
    monkeypatch.setenv("IRPASS_CONFIG", str(tmp_path / "b.toml"))
    assert load_settings().opt_level == 3


# -- TOML syntax and encoding ----------------------------------------------------------------


def test_toml_syntax_error_names_line_and_column(tmp_path):
    write(tmp_path / "irpass.toml", "opt_level = 3\n[plugins]\n[plugins]\n")
    err = error_of(tmp_path)
    assert (err.line, err.column) == (3, 9)
    assert str(err).startswith("irpass.toml:3:9: invalid TOML: ")
    assert "\n  [plugins]\n          ^" in str(err)


def test_toml_error_at_end_of_file_points_at_the_last_line(tmp_path):
    write(tmp_path / "irpass.toml", 'opt_level = 3\nrequired_pass = ["A",\n')
    err = error_of(tmp_path)
    assert (err.line, err.column) == (2, 22)
    assert str(err).startswith("irpass.toml:2:22: invalid TOML: ")
    assert "at the end of the file" in str(err)


def test_toml_error_in_a_pyproject_found_walking_up(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.irpass\n")
    cwd = tmp_path / "x"
    cwd.mkdir()
    err = error_of(cwd)
    assert str(err).startswith("../pyproject.toml:1:")


def test_non_utf8_file(tmp_path):
    (tmp_path / "irpass.toml").write_bytes(b"opt_level = 3 # \xff\n")
    err = error_of(tmp_path)
    assert str(err).startswith("irpass.toml: the config file is not UTF-8 text (byte 0xff")


# -- structure and types ---------------------------------------------------------------------

OPT = "irpass.toml: opt_level: expected an integer from 0 to 4"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("opt_levl = 3", "irpass.toml: opt_levl: unknown key; did you mean 'opt_level'?"),
        ("disabled_passes = []",
         "irpass.toml: disabled_passes: unknown key; did you mean 'disabled_pass'?"),
        ("disable = ['x']", "irpass.toml: disable: unknown key; did you mean [plugins] disable?"),
        ("[tool.irpass]\nopt_level = 1",
         "irpass.toml: tool: unknown key; irpass.toml holds the settings at top level"),
        ("zzz = 1", "irpass.toml: zzz: unknown key (known keys: opt_level, pipeline,"),
        ("[plugins]\ndisabel = []",
         "irpass.toml: [plugins] disabel: unknown key; did you mean 'disable'?"),
        ("[plugins]\nopt_level = 1",
         "irpass.toml: [plugins] opt_level: unknown key; 'opt_level' is a top-level key"),
        ("opt_level = '3'", f"{OPT}, got string '3'"),
        ("opt_level = true", f"{OPT}, got boolean true"),
        ("opt_level = 2.0", f"{OPT}, got float 2.0"),
        ("opt_level = 5", f"{OPT}, got 5"),
        ("opt_level = -1", f"{OPT}, got -1"),
        ("pipeline = ''", "irpass.toml: pipeline: expected a non-empty string, got string ''"),
        ("pipeline = 3", "irpass.toml: pipeline: expected a non-empty string, got integer 3"),
        ("required_pass = 'FoldConstant'",
         "irpass.toml: required_pass: expected an array of pass names, got string 'FoldConstant';"
         " write ['FoldConstant']"),
        ("disabled_pass = ['A', 3]",
         "irpass.toml: disabled_pass: item 1: expected a non-empty string, got integer 3"),
        ("plugins = ['std']", "irpass.toml: plugins: expected a table, got array ['std']"),
        ("[plugins]\nautoload = 'no'",
         "irpass.toml: [plugins] autoload: expected a boolean (true or false), got string 'no'"),
        ("[plugins]\nstrict = 1",
         "irpass.toml: [plugins] strict: expected a boolean (true or false), got integer 1"),
        ("[plugins]\nonly = 'std'",
         "irpass.toml: [plugins] only: expected an array of plugin names, got string 'std'"),
        ("[plugins]\nmodules = ['my mod']",
         "irpass.toml: [plugins] modules: item 0: 'my mod' is not a valid module name"),
        ("[instruments]\ntiming = 3",
         "irpass.toml: [instruments] timing: expected a table of keyword arguments (or true/false),"
         " got integer 3"),
        ("[instruments.dump-ir]\n'dump dir' = 'x'",
         "irpass.toml: [instruments.dump-ir] dump dir: not a keyword argument name"),
        ("config = 3", "irpass.toml: config: expected a table, got integer 3"),
        ("[pipelines]\ndefault = 'A'",
         "irpass.toml: [pipelines] default: 'default' is reserved in pipeline strings"),
        ("[pipelines]\nfast = ['A']",
         "irpass.toml: [pipelines] fast: expected a non-empty string, got array ['A']"),
        ("[pipelines.fast]\nx = 1",
         "irpass.toml: [pipelines] fast: expected a pipeline string, got a table"),
    ],
)
def test_file_errors_name_file_key_and_close_matches(tmp_path, text, message):
    write(tmp_path / "irpass.toml", text + "\n")
    err = error_of(tmp_path)
    assert str(err).startswith(message), str(err)
    assert err.path == "irpass.toml"


def test_errors_in_pyproject_name_the_tool_table(tmp_path):
    write(tmp_path / "pyproject.toml", """
        [tool.irpass]
        opt_level = 9
        [tool.irpass.plugins]
        disable = "std"
    """)
    err = error_of(tmp_path)
    lines = str(err).splitlines()
    assert lines[0].startswith("pyproject.toml: [tool.irpass] opt_level: expected an integer")
    assert lines[1].startswith("pyproject.toml: [tool.irpass.plugins] disable: expected an array")
    assert [e.key for e in err.errors] == ["[tool.irpass] opt_level",
                                           "[tool.irpass.plugins] disable"]


def test_every_structural_error_is_reported_at_once(tmp_path):
    write(tmp_path / "irpass.toml", "opt_level = 'x'\npipelin = 'A'\n[plugins]\nstrict = 3\n")
    err = error_of(tmp_path)
    assert len(err.errors) == 3
    assert len(str(err).splitlines()) == 3
    assert err.key == "opt_level"


def test_tool_irpass_that_is_not_a_table(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool]\nirpass = 3\n")
    err = error_of(tmp_path)
    assert str(err) == "pyproject.toml: [tool] irpass: expected a table, got integer 3"


def test_instruments_true_false_and_tables(tmp_path):
    write(tmp_path / "irpass.toml", """
        [instruments]
        timing = true
        print-before = false
        [instruments.dump-ir]
        dump_dir = "out"
    """)
    s = load(tmp_path)
    assert s.instruments == (("timing", (), {}), ("dump-ir", (), {"dump_dir": "out"}))


def test_lists_are_deduplicated_in_order(tmp_path):
    write(tmp_path / "irpass.toml", "required_pass = ['B', 'A', 'B']\n")
    assert load(tmp_path).required_pass == ("B", "A")


# -- [config] flattening ---------------------------------------------------------------------


def test_config_tables_become_dotted_keys(tmp_path):
    write(tmp_path / "irpass.toml", """
        [config]
        testing.immutable_module = true
        top = 1
        [config.example]
        max_depth = 4
        names = ["a", "b"]
        [config.a.b]
        c = 1.5
    """)
    s = load(tmp_path)
    assert dict(s.config) == {
        "testing.immutable_module": True,
        "top": 1,
        "example.max_depth": 4,
        "example.names": ["a", "b"],
        "a.b.c": 1.5,
    }
    assert s.source("config.example.max_depth") == "file irpass.toml"


def test_config_read_only(tmp_path):
    write(tmp_path / "irpass.toml", "[config]\nx = 1\n")
    with pytest.raises(TypeError):
        load(tmp_path).config["x"] = 2  # type: ignore[index]


# -- precedence ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file_level", "cli_level", "expected", "source"),
    [
        (None, None, 2, "default"),
        (3, None, 3, "file irpass.toml"),
        (None, 1, 1, "cli --opt-level"),
        (3, 1, 1, "cli --opt-level"),
        (3, 0, 0, "cli --opt-level"),  # 0 is a value, not "not given"
        (0, None, 0, "file irpass.toml"),
    ],
)
def test_opt_level_precedence(tmp_path, file_level, cli_level, expected, source):
    if file_level is not None:
        write(tmp_path / "irpass.toml", f"opt_level = {file_level}\n")
    s = load(tmp_path, cli={"opt_level": cli_level})
    assert s.opt_level == expected
    assert s.source("opt_level") == source
    assert ("opt_level", expected, source) in s.describe()


@pytest.mark.parametrize(
    ("in_file", "from_cli", "expected", "source"),
    [
        (None, None, None, "default"),
        ("fast", None, "fast", "file irpass.toml"),
        (None, "A,B", "A,B", "cli --pipeline"),
        ("fast", "A,B", "A,B", "cli --pipeline"),
    ],
)
def test_pipeline_precedence(tmp_path, in_file, from_cli, expected, source):
    if in_file is not None:
        write(tmp_path / "irpass.toml", f"pipeline = {in_file!r}\n")
    s = load(tmp_path, cli={"pipeline": from_cli})
    assert (s.pipeline, s.source("pipeline")) == (expected, source)


@pytest.mark.parametrize("key", ["required_pass", "disabled_pass"])
@pytest.mark.parametrize(
    ("in_file", "from_cli", "expected", "source"),
    [
        (None, None, (), "default"),
        (["A", "B"], None, ("A", "B"), "file irpass.toml"),
        (None, ["C"], ("C",), "cli --{flag}"),
        (["A", "B"], ["B", "C,D"], ("A", "B", "C", "D"), "file irpass.toml + cli --{flag}"),
        (["A"], ["A"], ("A",), "file irpass.toml"),
    ],
)
def test_pass_list_precedence_extends(tmp_path, key, in_file, from_cli, expected, source):
    flag = CLI_FLAGS[key][2:]
    if in_file is not None:
        write(tmp_path / "irpass.toml", f"{key} = {in_file!r}\n")
    s = load(tmp_path, cli={key: from_cli})
    assert getattr(s, key) == expected
    assert s.source(key) == source.format(flag=flag)
    if expected:
        # the per-item origins: file items first, then the command line's
        kinds = [s.origin_of(key, i).kind for i in range(len(expected))]
        assert kinds == sorted(kinds, key=["file", "cli"].index)


def test_plugin_modules_from_file_env_and_cli(tmp_path):
    write(tmp_path / "irpass.toml", "[plugins]\nmodules = ['a', 'b']\n")
    s = load(tmp_path, cli={"plugins": ["c", "no:std", "b"]}, env={"IRPASS_PLUGINS": "b, e ,"})
    assert s.plugins_modules == ("a", "b", "e", "c")
    assert [s.origin_of("plugins.modules", i).source for i in range(4)] == [
        "file irpass.toml", "file irpass.toml", "env IRPASS_PLUGINS", "cli -p"]
    assert s.source("plugins.modules") == "file irpass.toml + env IRPASS_PLUGINS + cli -p"
    assert s.plugins_disable == ("std",)
    assert s.source("plugins.disable") == "cli -p"


def test_plugin_disable_from_file_and_cli(tmp_path):
    write(tmp_path / "irpass.toml", "[plugins]\ndisable = ['example']\nonly = ['std']\n")
    s = load(tmp_path, cli={"plugins": ["no:std"]})
    assert s.plugins_disable == ("example", "std")
    assert s.source("plugins.disable") == "file irpass.toml + cli -p"
    assert s.plugins_only == ("std",)


@pytest.mark.parametrize(
    ("in_file", "env", "expected", "source"),
    [
        (None, None, True, "default"),
        (False, None, False, "file irpass.toml"),
        (None, "1", False, "env IRPASS_DISABLE_PLUGIN_AUTOLOAD"),
        (True, "yes", False, "env IRPASS_DISABLE_PLUGIN_AUTOLOAD"),
        (True, "ON", False, "env IRPASS_DISABLE_PLUGIN_AUTOLOAD"),
        (False, "0", False, "file irpass.toml"),  # "0" means "not asked", the file decides
        (False, "", False, "file irpass.toml"),
    ],
)
def test_autoload_precedence(tmp_path, in_file, env, expected, source):
    if in_file is not None:
        write(tmp_path / "irpass.toml", f"[plugins]\nautoload = {str(in_file).lower()}\n")
    environ = {} if env is None else {"IRPASS_DISABLE_PLUGIN_AUTOLOAD": env}
    s = load(tmp_path, env=environ)
    assert (s.plugins_autoload, s.source("plugins.autoload")) == (expected, source)


@pytest.mark.parametrize(
    ("in_file", "from_cli", "expected", "source"),
    [
        (None, None, False, "default"),
        (True, None, True, "file irpass.toml"),
        (False, True, True, "cli --strict-plugins"),
        (True, False, True, "file irpass.toml"),  # the flag can only switch strict mode on
    ],
)
def test_strict_precedence(tmp_path, in_file, from_cli, expected, source):
    if in_file is not None:
        write(tmp_path / "irpass.toml", f"[plugins]\nstrict = {str(in_file).lower()}\n")
    s = load(tmp_path, cli={"strict": from_cli})
    assert (s.plugins_strict, s.source("plugins.strict")) == (expected, source)


def test_instruments_from_cli_extend_and_replace_by_name(tmp_path):
    write(tmp_path / "irpass.toml", """
        [instruments.timing]
        [instruments.dump-ir]
        dump_dir = "from-file"
    """)
    # no arguments: already on, keeps the file's; with arguments: replaces it in place
    s = load(tmp_path, cli={"instruments": ["dump-ir", "print-after", "timing"]})
    assert s.instruments == (("timing", (), {}), ("dump-ir", (), {"dump_dir": "from-file"}),
                             ("print-after", (), {}))
    assert [s.origin_of("instruments", i).source for i in range(3)] == [
        "file irpass.toml", "file irpass.toml", "cli --instrument"]
    s = load(tmp_path, cli={"instruments": ["dump-ir:a:b"]})
    assert s.instruments == (("timing", (), {}), ("dump-ir", ("a:b",), {}))
    assert s.origin_of("instruments", 1).source == "cli --instrument"


def test_cli_only_settings_without_a_file(tmp_path):
    s = load(tmp_path, cli={"opt_level": 4, "instruments": ["timing"], "plugins": ["m.x"],
                            "required_pass": ["A"], "strict": True, "config": None})
    assert s.path is None
    assert (s.opt_level, s.instruments, s.plugins_modules, s.required_pass, s.plugins_strict) == (
        4, (("timing", (), {}),), ("m.x",), ("A",), True)


def test_plugin_settings(tmp_path):
    write(tmp_path / "irpass.toml", """
        [plugins]
        disable = ["example"]
        only = ["std", "instruments"]
        modules = ["my.mod"]
        autoload = false
        strict = true
    """)
    s = load(tmp_path, cli={"plugins": ["no:other", "extra"]})
    assert s.plugin_settings == PluginSettings(
        autoload=False, modules=("my.mod", "extra"), block=frozenset({"example", "other"}),
        only=("std", "instruments"), strict=True)
    assert Settings().plugin_settings == PluginSettings()


# -- command-line and environment errors -----------------------------------------------------


@pytest.mark.parametrize(
    ("cli", "env", "message"),
    [
        ({"opt_level": 7}, {}, "command line: --opt-level: expected an integer from 0 to 4, got 7"),
        ({"opt_level": True}, {},
         "command line: --opt-level: expected an integer from 0 to 4, got boolean true"),
        ({"pipeline": " "}, {}, "command line: --pipeline: expected a pipeline, got ' '"),
        ({"plugins": ["no:"]}, {}, "command line: -p no:: missing plugin name after 'no:'"),
        ({"plugins": ["a b"]}, {}, "command line: -p a b: expected a module (or plugin name)"),
        ({"instruments": [":x"]}, {}, "command line: --instrument :x: instrument spec ':x' has no"),
        ({}, {"IRPASS_PLUGINS": "a,no:std"},
         "environment: IRPASS_PLUGINS: 'no:std': IRPASS_PLUGINS lists modules to load"),
        ({}, {"IRPASS_DISABLE_PLUGIN_AUTOLOAD": "maybe"},
         "environment: IRPASS_DISABLE_PLUGIN_AUTOLOAD: expected 1/true/yes or 0/false/no, "
         "got 'maybe'"),
    ],
)
def test_cli_and_env_errors(tmp_path, cli, env, message):
    err = error_of(tmp_path, cli=cli, env=env)
    assert str(err).startswith(message), str(err)


def test_unknown_cli_key_is_a_programming_error(tmp_path):
    with pytest.raises(TypeError, match="unknown cli key.*'opt-level'"):
        load(tmp_path, cli={"opt-level": 3})


def test_config_error_is_a_value_error_and_an_irpass_error(tmp_path):
    from irpass.errors import IRPassError

    write(tmp_path / "irpass.toml", "opt_level = 9\n")
    err = error_of(tmp_path)
    assert isinstance(err, ValueError) and isinstance(err, IRPassError)


# -- describe ----------------------------------------------------------------------------------


def test_describe_rows(tmp_path):
    write(tmp_path / "irpass.toml", """
        opt_level = 3
        pipeline = "fast"
        required_pass = ["A"]
        [plugins]
        disable = ["example"]
        [instruments.dump-ir]
        dump_dir = "out"
        [config]
        testing.immutable_module = true
        [pipelines]
        fast = "InferType"
    """)
    s = load(tmp_path, cli={"disabled_pass": ["B"], "instruments": ["print-ir:X"]},
             env={"IRPASS_PLUGINS": "m"})
    assert s.describe() == [
        ("config_file", str(tmp_path / "irpass.toml"), "irpass.toml in the working directory"),
        ("opt_level", 3, "file irpass.toml"),
        ("pipeline", "fast", "file irpass.toml"),
        ("required_pass", ("A",), "file irpass.toml"),
        ("disabled_pass", ("B",), "cli --disable-pass"),
        ("instruments.dump-ir", {"dump_dir": "out"}, "file irpass.toml"),
        ("instruments.print-ir", ("X",), "cli --instrument"),
        ("rewrites.disable", (), "default"),
        ("plugins.disable", ("example",), "file irpass.toml"),
        ("plugins.only", None, "default"),
        ("plugins.modules", ("m",), "env IRPASS_PLUGINS"),
        ("plugins.autoload", True, "default"),
        ("plugins.strict", False, "default"),
        ("config.testing.immutable_module", True, "file irpass.toml"),
        ("pipelines.fast", "InferType", "file irpass.toml"),
    ]


def test_describe_defaults_lists_registered_options(tmp_path):
    from irpass.transform import register_config_option

    register_config_option("zz_settings_test.depth", int, 8, "test option", owner="zzpack")
    rows = load(tmp_path).describe(include_defaults=True)
    assert ("config.zz_settings_test.depth", 8, "default (zzpack)") in rows
    assert ("config", {}, "default") not in rows
    assert ("config", {}, "default") in load(tmp_path).describe()
