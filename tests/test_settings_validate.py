"""irpass.settings against the registries: validate(), pass_context(), build_pipeline()."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from irpass.instrument import (
    DumpIR,
    PassInstrument,
    PassTimingInstrument,
    PrintAfterAll,
    register_instrument,
)
from irpass.plugins import PluginWarning
from irpass.settings import ConfigError, Settings, load_settings
from irpass.testing.plugins import isolated_plugins
from irpass.transform import (
    PassContext,
    Sequential,
    default_pipeline,
    register_config_option,
)


def settings_for(tmp_path: Path, text: str = "", cli=None, env=None) -> Settings:
    if text:
        (tmp_path / "irpass.toml").write_text(textwrap.dedent(text), encoding="utf-8")
    return load_settings(cli=cli, environ=env or {}, cwd=tmp_path)


def validate_error(settings: Settings) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        settings.validate()
    return info.value


def names(seq: Sequential) -> list[str]:
    return [p.info.name for p in seq.passes]


# -- names against the registries ------------------------------------------------------------


def test_valid_settings_have_no_notes(tmp_path):
    s = settings_for(tmp_path, """
        required_pass = ["InferType"]
        disabled_pass = ["PrintIR"]
        pipeline = "fast"
        [instruments.timing]
        [config]
        testing.immutable_module = true
        [pipelines]
        fast = "InferType,Identity"
    """)
    assert s.validate() == []
    assert s.notes == []


def test_unknown_required_pass_names_file_key_and_close_match(tmp_path):
    s = settings_for(tmp_path, "required_pass = ['InferTyp']\n")
    err = validate_error(s)
    assert str(err) == (
        "irpass.toml: required_pass: no pass named 'InferTyp' is registered; "
        "did you mean 'InferType'?"
    )
    assert (err.path, err.key) == ("irpass.toml", "required_pass")


def test_unknown_disabled_pass_from_the_command_line(tmp_path):
    s = settings_for(tmp_path, cli={"disabled_pass": ["identity"]})
    err = validate_error(s)
    assert str(err) == (
        "command line: --disable-pass identity: no pass named 'identity' is registered; "
        "did you mean 'Identity'?"
    )


def test_unknown_pass_hints_at_plugins_not_loaded(tmp_path):
    s = settings_for(tmp_path, """
        required_pass = ["InferType"]
        [plugins]
        disable = ["std"]
    """)
    with isolated_plugins(s.plugin_settings):
        err = validate_error(s)
    assert str(err).startswith("irpass.toml: required_pass: no pass named 'InferType'")
    assert "(plugins not loaded: std (disabled); it may come from one of them)" in str(err)


def test_unknown_instrument_with_close_match(tmp_path):
    s = settings_for(tmp_path, "[instruments.timming]\n")
    err = validate_error(s)
    assert str(err).startswith(
        "irpass.toml: [instruments.timming]: no instrument named 'timming' is registered; "
        "did you mean 'timing'? (registered: check-each, dump-ir, print-after,"
    )


def test_unknown_instrument_from_the_command_line(tmp_path):
    s = settings_for(tmp_path, cli={"instruments": ["dumpir:out"]})
    err = validate_error(s)
    assert str(err).startswith(
        "command line: --instrument dumpir:out: no instrument named 'dumpir' is registered; "
        "did you mean 'dump-ir'?"
    )


def test_instrument_arguments_checked_against_the_factory(tmp_path):
    s = settings_for(tmp_path, "[instruments.dump-ir]\ndumpdir = 'x'\n")
    err = validate_error(s)
    assert str(err) == (
        "irpass.toml: [instruments.dump-ir]: cannot create instrument 'dump-ir': "
        "unexpected argument 'dumpdir'; did you mean 'dump_dir'? "
        "(it takes: dump_dir, elide_constants)"
    )


def test_instrument_missing_argument(tmp_path):
    s = settings_for(tmp_path, cli={"instruments": ["dump-ir"]})
    assert str(validate_error(s)) == (
        "command line: --instrument dump-ir: cannot create instrument 'dump-ir': "
        "missing a required argument: 'dump_dir' (it takes: dump_dir, elide_constants)"
    )


def test_unknown_config_key_with_close_match(tmp_path):
    s = settings_for(tmp_path, "[config]\ntesting.immutable_modul = true\n")
    err = validate_error(s)
    assert str(err) == (
        "irpass.toml: [config.testing] immutable_modul: unknown option "
        "'testing.immutable_modul'; did you mean 'testing.immutable_module'?"
    )


def test_unknown_config_key_lists_the_sections_options(tmp_path):
    register_config_option("zzpack.max_depth", int, 8, owner="zzpack")
    register_config_option("zzpack.min_width", int, 1, owner="zzpack")
    s = settings_for(tmp_path, "[config.zzpack]\nbreadth = 3\n")
    err = validate_error(s)
    assert str(err) == (
        "irpass.toml: [config.zzpack] breadth: unknown option 'zzpack.breadth' "
        "(options under 'zzpack': zzpack.max_depth, zzpack.min_width)"
    )


def test_config_value_of_the_wrong_type(tmp_path):
    s = settings_for(tmp_path, "[config]\ntesting.immutable_module = 1\n")
    err = validate_error(s)
    assert str(err) == (
        "irpass.toml: [config.testing] immutable_module: expected a boolean, got integer 1"
    )


def test_config_types_convert_like_pass_context(tmp_path):
    register_config_option("zzpack.scale", float, 1.0, owner="zzpack")
    register_config_option("zzpack.names", tuple, None, owner="zzpack")
    s = settings_for(tmp_path, "[config.zzpack]\nscale = 2\nnames = ['a', 'b']\n")
    ctx = s.pass_context()
    assert ctx.config["zzpack.scale"] == 2.0 and isinstance(ctx.config["zzpack.scale"], float)
    assert ctx.config["zzpack.names"] == ("a", "b")


def test_config_expected_text_for_float_mentions_integers(tmp_path):
    register_config_option("zzpack.scale", float, 1.0, owner="zzpack")
    s = settings_for(tmp_path, "[config.zzpack]\nscale = 'big'\n")
    assert str(validate_error(s)).endswith("expected a float or an integer, got string 'big'")


def test_config_errors_in_pyproject_name_the_tool_table(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.irpass.config.testing]\nimmutable_module = 'yes'\n", encoding="utf-8"
    )
    s = load_settings(environ={}, cwd=tmp_path)
    assert str(validate_error(s)).startswith(
        "pyproject.toml: [tool.irpass.config.testing] immutable_module: expected a boolean"
    )


def test_all_problems_reported_together(tmp_path):
    s = settings_for(tmp_path, """
        required_pass = ["Nope"]
        [instruments.nope]
        [config]
        nope = 1
    """)
    err = validate_error(s)
    assert len(err.errors) == 3
    assert [e.key for e in err.errors] == ["required_pass", "[instruments.nope]", "[config] nope"]


# -- plugins: disable / only, ignored sections ----------------------------------------------


def test_blocked_plugin_config_section_is_ignored_with_a_note(tmp_path):
    s = settings_for(tmp_path, """
        [plugins]
        disable = ["example"]
        [config.example]
        max_depth = 4
        [config]
        testing.immutable_module = true
        [instruments.example]
    """)
    notes = s.validate()
    assert "config.example.max_depth: ignored: plugin 'example' is not loaded (disabled)" in notes
    assert "instruments.example: ignored: plugin 'example' is not loaded (disabled)" in notes
    rows = {key: source for key, _, source in s.describe()}
    assert rows["config.example.max_depth"] == (
        "file irpass.toml; ignored: plugin 'example' is not loaded (disabled)"
    )
    ctx = s.pass_context()
    assert dict(ctx.config.explicit) == {"testing.immutable_module": True}
    assert ctx.instruments == ()


def test_disabling_an_unknown_plugin_is_a_note_not_an_error(tmp_path):
    s = settings_for(tmp_path, "[plugins]\ndisable = ['instrumets']\n")
    notes = s.validate()
    assert notes == [
        "plugins.disable: no installed plugin is named 'instrumets'; nothing to disable; "
        "did you mean 'instruments'?"
    ]
    source = dict((k, src) for k, _, src in s.describe())["plugins.disable"]
    assert source.startswith("file irpass.toml; no installed plugin is named 'instrumets'")


def test_disabling_the_core_is_an_error(tmp_path):
    s = settings_for(tmp_path, cli={"plugins": ["no:irpass"]})
    assert str(validate_error(s)) == (
        "command line: -p no:irpass: 'irpass' is the core and cannot be disabled"
    )


def test_unknown_plugin_in_only_is_an_error(tmp_path):
    s = settings_for(tmp_path, "[plugins]\nonly = ['sdt']\n")
    err = validate_error(s)
    assert str(err).startswith(
        "irpass.toml: [plugins] only: no installed plugin is named 'sdt'; did you mean 'std'?"
    )


def test_plugin_outside_the_allow_list_has_its_section_ignored(tmp_path):
    s = settings_for(tmp_path, """
        [plugins]
        only = ["instruments"]
        [config.std]
        level = 1
    """)
    with isolated_plugins(s.plugin_settings):
        notes = s.validate()
    assert notes == [
        "config.std.level: ignored: plugin 'std' is not loaded "
        "(not in the allow-list ([plugins] only))"
    ]


def test_failed_plugin_has_its_section_ignored(tmp_path):
    s = settings_for(tmp_path, """
        [plugins]
        modules = ["zz_no_such_plugin_module"]
        [config.zz_no_such_plugin_module]
        x = 1
    """)
    with pytest.warns(PluginWarning), isolated_plugins(s.plugin_settings):
        notes = s.validate()
    assert notes == [
        "config.zz_no_such_plugin_module.x: ignored: plugin 'zz_no_such_plugin_module' "
        "is not loaded (failed to load)"
    ]


def test_unknown_section_of_a_loaded_plugin_is_still_an_error(tmp_path):
    s = settings_for(tmp_path, "[config.std]\nlevel = 1\n")
    assert str(validate_error(s)).startswith(
        "irpass.toml: [config.std] level: unknown option 'std.level'"
    )


def test_pass_context_keeps_the_notes_of_validate(tmp_path):
    s = settings_for(tmp_path, "[plugins]\ndisable = ['zzz']\n")
    notes = s.validate()
    s.pass_context()
    assert s.notes == notes and len(notes) == 1


def test_validate_replaces_old_notes(tmp_path):
    s = settings_for(tmp_path, "[plugins]\ndisable = ['zzz']\n")
    assert len(s.validate()) == 1
    s._notes["other"] = ["stale"]
    assert s.validate() == s.notes and len(s.notes) == 1


# -- pipelines -------------------------------------------------------------------------------


def test_pipeline_string_that_does_not_parse(tmp_path):
    s = settings_for(tmp_path, "pipeline = 'InferType,Identiy'\n")
    err = validate_error(s)
    assert str(err).startswith(
        "irpass.toml: pipeline: column 11: unknown pass 'Identiy'; did you mean 'Identity'?"
    )
    with pytest.raises(ConfigError) as info:
        s.build_pipeline()
    assert str(info.value) == str(err)


def test_pipeline_from_the_command_line_that_does_not_parse(tmp_path):
    s = settings_for(tmp_path, cli={"pipeline": "seq(Identity"})
    assert str(validate_error(s)).startswith("command line: --pipeline: column ")


def test_named_pipeline_that_does_not_parse(tmp_path):
    s = settings_for(tmp_path, "[pipelines]\nfast = 'InferType,,Identity'\n")
    assert str(validate_error(s)).startswith("irpass.toml: [pipelines] fast: column ")


def test_named_pipeline_that_shadows_a_pass(tmp_path):
    s = settings_for(tmp_path, "[pipelines]\nIdentity = 'InferType'\n")
    assert str(validate_error(s)) == (
        "irpass.toml: [pipelines] Identity: 'Identity' is also a registered pass; "
        "pick another name"
    )


def test_build_pipeline_default(tmp_path):
    for text, level in (("", 2), ("opt_level = 0\n", 0), ("pipeline = 'default'\n", 2)):
        s = settings_for(tmp_path, text)
        pipeline = s.build_pipeline()
        assert pipeline.info.name == "default_pipeline"
        assert names(pipeline) == names(default_pipeline(level))


def test_build_pipeline_named_and_string(tmp_path):
    s = settings_for(tmp_path, """
        pipeline = "fast,PrintIR"
        [pipelines]
        fast = "InferType,seq(Identity)"
    """)
    pipeline = s.build_pipeline()
    assert names(pipeline) == ["fast", "PrintIR"]
    assert names(pipeline.passes[0]) == ["InferType", "seq"]
    s = settings_for(tmp_path, cli={"pipeline": "Identity,InferType"})
    assert names(s.build_pipeline()) == ["Identity", "InferType"]


# -- pass_context ----------------------------------------------------------------------------


def test_pass_context_values(tmp_path):
    s = settings_for(tmp_path, """
        opt_level = 3
        required_pass = ["InferType"]
        disabled_pass = ["PrintIR"]
        [config]
        testing.immutable_module = true
        [instruments.timing]
        [instruments.dump-ir]
        dump_dir = "dumps"
    """, cli={"instruments": ["print-after"], "disabled_pass": ["Identity"]})
    ctx = s.pass_context()
    assert isinstance(ctx, PassContext)
    assert ctx.opt_level == 3
    assert list(ctx.required_pass) == ["InferType"]
    assert list(ctx.disabled_pass) == ["PrintIR", "Identity"]
    assert ctx.config["testing.immutable_module"] is True
    kinds = [type(i) for i in ctx.instruments]
    assert kinds == [PassTimingInstrument, DumpIR, PrintAfterAll]
    assert ctx.instruments[1].dump_dir == Path("dumps")
    # a new context (and new instruments) each time
    again = s.pass_context()
    assert again is not ctx and again.instruments[0] is not ctx.instruments[0]


def test_pass_context_defaults(tmp_path):
    ctx = settings_for(tmp_path).pass_context()
    assert (ctx.opt_level, list(ctx.required_pass), ctx.instruments) == (2, [], ())
    assert dict(ctx.config.explicit) == {}


def test_pass_context_instrument_args_from_the_cli(tmp_path):
    ctx = settings_for(tmp_path, cli={"instruments": ["dump-ir:out/ir"]}).pass_context()
    assert ctx.instruments[0].dump_dir == Path("out/ir")


def test_pass_context_wraps_a_failing_instrument_factory(tmp_path):
    def broken(**kwargs):
        raise ValueError("no good")

    register_instrument("zz-broken", broken, owner="zzpack")
    s = settings_for(tmp_path, "[instruments.zz-broken]\nlevel = 1\n")
    with pytest.raises(ConfigError) as info:
        s.pass_context()
    assert str(info.value) == (
        "irpass.toml: [instruments.zz-broken]: cannot create instrument 'zz-broken': "
        "ValueError: no good"
    )
    assert isinstance(info.value.__cause__, ValueError)


def test_pass_context_instrument_factory_returning_garbage(tmp_path):
    register_instrument("zz-garbage", lambda: object(), owner="zzpack")
    s = settings_for(tmp_path, cli={"instruments": ["zz-garbage"]})
    with pytest.raises(ConfigError) as info:
        s.pass_context()
    assert str(info.value).startswith(
        "command line: --instrument zz-garbage: cannot create instrument 'zz-garbage': TypeError:"
    )
    assert "not a PassInstrument" in str(info.value)


def test_pass_context_checks_names_first(tmp_path):
    s = settings_for(tmp_path, "required_pass = ['Nope']\n")
    with pytest.raises(ConfigError, match="irpass.toml: required_pass: no pass named 'Nope'"):
        s.pass_context()


def test_pass_context_runs_with_a_hook_style_instrument(tmp_path):
    seen = []

    class Recorder(PassInstrument):
        def __init__(self, tag: str = "x") -> None:
            self.tag = tag

        def run_before_pass(self, mod, info):
            seen.append((self.tag, info.name))

    register_instrument("zz-recorder", Recorder, owner="zzpack")
    s = settings_for(tmp_path, "[instruments.zz-recorder]\ntag = 't'\n")
    from irpass.testing.models import mlp

    with s.pass_context():
        s.build_pipeline()(mlp())
    assert ("t", "InferType") in seen
