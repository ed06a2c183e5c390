"""Discovery from the command line (issue 24): ``irpass passes NAME``, ``config --options``,
``pipeline`` as the settings run it and ``--as-string``, ``--json`` of the info commands.

Each test runs the installed ``irpass`` script in a subprocess, in an empty working
directory, with only irpass's own plugins (``plugin_environ``) plus, where a test needs
one, a plugin module written into that directory (``-p``).
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import irpass_std
import pytest
from irpass.testing.plugins import OWN_PLUGINS, plugin_environ

IRPASS = str(Path(sys.executable).with_name("irpass"))

# a plugin with a documented pass taking options, a config option, and a level-3 pass in
# the default pipeline that leaves a file behind when it runs
DOCUMENTED = '''
from pathlib import Path

from irpass.plugins import hookimpl
from irpass.transform import ConfigOption, PipelineInsertion, module_pass


def Scale(factor: float = 2.0, axes: list[int] | None = None, label: str = "s"):
    """Scale every output by ``factor`` (a :class:`~irpass.transform.Pass` for tests).

    Reads :data:`docmod.Scale.limit` from the context; see
    :func:`irpass.transform.get_pass` and `the guide <https://example.org/guide>`_.

    .. note::
       Nothing is *really* scaled.

    .. autofunction:: docmod.Scale

    Example::

        get_pass("Scale", factor=3.0)(mod)
    """
    return module_pass(lambda mod, ctx: mod, opt_level=1, name="Scale")


def Needs(k: float):
    """A pass that cannot be made without its argument."""
    return module_pass(lambda mod, ctx: mod, opt_level=0, name="Needs")


@module_pass(opt_level=3, name="Marker")
def Marker(mod, ctx):
    """Leaves marker.txt in the working directory."""
    Path("marker.txt").write_text("ran")
    return mod


@hookimpl
def irpass_register_config_options():
    return [ConfigOption("docmod.Scale.limit", int, 7, "largest ``factor`` Scale accepts")]


@hookimpl
def irpass_register_passes():
    return [Scale, Marker, Needs]


@hookimpl
def irpass_pipeline_passes():
    return [PipelineInsertion("Marker", phase="end")]
'''


def irpass(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    """Run ``irpass ARGV`` in ``cwd``; the result has ``returncode``, ``stdout``, ``stderr``."""
    return subprocess.run(
        [IRPASS, *argv],
        cwd=cwd,
        env=plugin_environ(OWN_PLUGINS),
        capture_output=True,
        text=True,
        timeout=300,
    )


def ok(cwd: Path, *argv: str) -> str:
    proc = irpass(cwd, *argv)
    assert proc.returncode == 0, proc.stderr
    assert "irpass: warning" not in proc.stderr, proc.stderr
    return proc.stdout


@pytest.fixture
def work(tmp_path):
    (tmp_path / "docmod.py").write_text(DOCUMENTED)
    return tmp_path


# -- passes NAME -------------------------------------------------------------------------


def section(text: str, title: str) -> list[str]:
    """The lines under ``title:`` up to the next blank line followed by a title."""
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = next(
        (i for i in range(start, len(lines)) if lines[i] and not lines[i][0].isspace()), len(lines)
    )
    return [line for line in lines[start:end] if line.strip()]


def test_passes_name_shows_the_whole_documentation_of_a_std_pass(tmp_path):
    out = ok(tmp_path, "passes", "FoldConstant")
    assert out.splitlines()[0] == "FoldConstant"
    fields = dict(re.findall(r"^  (\w+):\s+(.*)$", out, flags=re.M))
    version = metadata.version("irpass")
    assert fields["plugin"] == f"std (distribution irpass {version})"
    assert (fields["opt_level"], fields["required"]) == ("2", "-")
    assert fields["kind"] == "function pass"
    page = Path(irpass_std.__file__).parent / "docs" / "FoldConstant.md"
    assert Path(fields["docs"]) == page
    config = section(out, "Config keys (PassContext config, [config] in irpass.toml):")
    assert "  std.FoldConstant.max_elements: int, default unset (std)" in config
    description = "\n".join(section(out, "Description:"))
    assert "Fold the constant subexpressions of func" in description
    assert "``" not in description and ":class:" not in description
    # the example is the page's first python block, indented
    first_block = re.search(r"```python\n(.*?)```", page.read_text(), flags=re.S).group(1)
    example = out.split("\nExample:\n", 1)[1]
    assert example == "".join(
        f"    {line}\n" if line else "\n" for line in first_block.splitlines()
    )


def test_passes_name_of_a_plugin_pass_renders_its_rest_docstring(work):
    out = ok(work, "-p", "docmod", "passes", "Scale")
    assert re.search(r"^  plugin:\s+docmod \(distribution -\)$", out, flags=re.M)
    assert re.search(r"^  factory:\s+docmod\.Scale\(factor: float = 2\.0, ", out, flags=re.M)
    assert section(out, "Options (pipeline string: Scale{factor=2.0}):") == [
        "  factor: float, default 2.0",
        "  axes: list[int] | None, default none",
        "  label: str, default s",
    ]
    assert section(out, "Config keys (PassContext config, [config] in irpass.toml):") == [
        "  docmod.Scale.limit: int, default 7 (docmod)",
        "      largest factor Scale accepts",
    ]
    description = section(out, "Description:")
    assert description[0] == "  Scale every output by factor (a Pass for tests)."
    text = "\n".join(description)
    assert (
        "Reads docmod.Scale.limit from the context; see\n  irpass.transform.get_pass and "
        "the guide (https://example.org/guide)." in text
    )
    assert "  Note: Nothing is really scaled." in description
    assert "autofunction" not in out and "::" not in text
    assert out.split("\nExample:\n", 1)[1] == '    get_pass("Scale", factor=3.0)(mod)\n'


def test_passes_name_json_is_one_object(work):
    doc = json.loads(ok(work, "-p", "docmod", "passes", "Scale", "--json"))
    assert doc["name"] == "Scale" and doc["plugin"] == "docmod"
    assert (doc["kind"], doc["opt_level"], doc["required"]) == ("module pass", 1, [])
    assert doc["options"][0] == {
        "name": "factor",
        "type": "float",
        "default": 2.0,
        "required": False,
    }
    assert doc["config"] == [
        {
            "key": "docmod.Scale.limit",
            "type": "int",
            "default": 7,
            "owner": "docmod",
            "description": "largest factor Scale accepts",
        }
    ]
    assert doc["example"] == 'get_pass("Scale", factor=3.0)(mod)'
    assert doc["error"] is None and doc["docs_page"] is None


def test_a_declared_pass_that_needs_arguments_shows_its_declared_level(tmp_path):
    doc = json.loads(irpass(tmp_path, "passes", "ConvertLayout", "--json").stdout)
    assert doc["error"] == "needs arguments"
    assert (doc["opt_level"], doc["required"]) == (3, ["InferType"])


def test_an_unknown_pass_name_is_one_line_with_close_matches(tmp_path):
    proc = irpass(tmp_path, "passes", "FoldConstnt")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        "irpass: error: no pass named 'FoldConstnt'; did you mean "
        "FoldConstant? ('irpass passes' lists them)\n"
    )


def test_passes_json_lists_every_pass(work):
    docs = json.loads(ok(work, "-p", "docmod", "passes", "--json"))
    by_name = {d["name"]: d for d in docs}
    text = ok(work, "-p", "docmod", "passes")
    assert sorted(by_name) == sorted(line.split()[0] for line in text.splitlines()[1:])
    assert (by_name["InferType"]["plugin"], by_name["InferType"]["opt_level"]) == ("std", 0)
    assert by_name["Needs"]["error"] == "needs arguments"
    assert by_name["Needs"]["options"] == [
        {"name": "k", "type": "float", "default": None, "required": True}
    ]
    assert by_name["Scale"]["summary"] == "Scale every output by factor (a Pass for tests)"


# -- plugins, config ---------------------------------------------------------------------


def test_plugins_json(work):
    (work / "brokenmod.py").write_text("x = 1\nimport irpass_no_such_dependency\n")
    proc = irpass(work, "-p", "docmod", "-p", "brokenmod", "plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    plugins = {p["name"]: p for p in json.loads(proc.stdout)}
    assert plugins["irpass"]["status"] == "core"
    std = plugins["std"]
    assert (std["status"], std["source"], std["distribution"]) == (
        "loaded",
        "entry point",
        "irpass",
    )
    assert {"kind": "pass", "name": "FoldConstant"} in std["contributions"]
    assert plugins["docmod"]["contributions"] == [
        {"kind": "config option", "name": "docmod.Scale.limit"},
        {"kind": "pass", "name": "Scale"},
        {"kind": "pass", "name": "Marker"},
        {"kind": "pass", "name": "Needs"},
        {"kind": "pipeline", "name": "Marker (phase end)"},
    ]
    broken = plugins["brokenmod"]
    assert broken["status"] == "failed" and broken["contributions"] == []
    assert broken["reason"].startswith("failed to load: brokenmod.py:2: ModuleNotFoundError")


def test_config_options_lists_every_option_with_owner(work):
    out = ok(work, "-p", "docmod", "config", "--options")
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert out.splitlines()[0].split() == ["option", "type", "default", "owner", "description"]
    assert rows["docmod.Scale.limit"].split()[1:4] == ["int", "7", "docmod"]
    assert rows["docmod.Scale.limit"].endswith("largest factor Scale accepts")
    assert rows["std.FuseOps.max_depth"].split()[1:4] == ["int", "256", "std"]
    assert rows["verify_each"].split()[1:5] == ["bool", "false", "irpass", "(core)"]
    options = {
        o["key"]: o for o in json.loads(ok(work, "-p", "docmod", "config", "--options", "--json"))
    }
    assert sorted(options) == sorted(rows)
    assert options["std.FoldConstant.max_elements"]["default"] is None
    assert options["verify_each"]["owner"] == "irpass"


def test_config_json_has_values_and_sources(tmp_path):
    rows = json.loads(ok(tmp_path, "config", "-O", "3", "--disable-pass", "FoldConstant", "--json"))
    by_key = {r["key"]: r for r in rows}
    assert by_key["opt_level"] == {"key": "opt_level", "value": 3, "source": "cli --opt-level"}
    assert by_key["disabled_pass"]["value"] == ["FoldConstant"]
    assert by_key["config_file"]["value"] is None


# -- pipeline ----------------------------------------------------------------------------


def running(cwd: Path, *argv: str) -> list[str]:
    """The names of the passes ``irpass pipeline ARGV --json`` says will run, in order
    (leaves only: Sequentials are containers)."""
    view = json.loads(ok(cwd, "pipeline", *argv, "--json"))
    return [p["name"] for p in view["passes"] if p["runs"] and not p["sequential"]]


def test_pipeline_honours_disabled_pass(tmp_path):
    out = ok(tmp_path, "pipeline", "-O", "3", "--disable-pass", "FoldConstant")
    table, rest = out.split("\n\n", 1)
    assert "FoldConstant" not in table
    assert "not run:\n  FoldConstant: disabled (cli --disable-pass)\n" in rest
    assert "FoldConstant" not in running(tmp_path, "-O", "3", "--disable-pass", "FoldConstant")
    assert "FoldConstant" in running(tmp_path, "-O", "3")


def test_pipeline_honours_a_disabled_pass_from_the_config_file(tmp_path):
    (tmp_path / "irpass.toml").write_text('disabled_pass = ["FuseOps"]\n')
    out = ok(tmp_path, "pipeline")
    assert "  FuseOps: disabled (file irpass.toml)" in out
    assert "FuseOps" not in ok(tmp_path, "pipeline", "--as-string").strip().split(",")


def test_a_required_pass_above_the_opt_level_is_in_the_pipeline_and_runs(work):
    assert "Marker" not in running(work, "-p", "docmod", "-O", "2")
    names = running(work, "-p", "docmod", "-O", "2", "--required-pass", "Marker")
    assert names[-1] == "Marker"
    out = ok(work, "-p", "docmod", "pipeline", "-O", "2", "--required-pass", "Marker")
    assert "above opt_level 2 (required_pass, cli --required-pass): Marker" in out
    # and optimize runs it: the pass leaves its file behind
    ok(work, "-p", "docmod", "optimize", "--example", "mlp", "-q", "-O", "2", "-o", "a.txt")
    assert not (work / "marker.txt").exists()
    ok(
        work,
        "-p",
        "docmod",
        "optimize",
        "--example",
        "mlp",
        "-q",
        "-O",
        "2",
        "--required-pass",
        "Marker",
        "-o",
        "b.txt",
    )
    assert (work / "marker.txt").read_text() == "ran"


@pytest.mark.parametrize(
    "argv",
    [
        ["-O", "3", "--disable-pass", "FoldConstant,Inline"],
        ["-O", "1"],
        [
            "-P",
            "InferType,seq(FoldConstant, FuseOps{fuse_opt_level=0}),default{opt_level=1}",
            "--disable-pass",
            "Inline",
        ],
        ["-P", "checked,AlterOpLayout", "-O", "2"],
    ],
    ids=[
        "default -O3 with disabled passes",
        "default -O1",
        "seq and default{...}",
        "named pipeline",
    ],
)
def test_as_string_round_trips_through_P(tmp_path, argv):
    (tmp_path / "irpass.toml").write_text('[pipelines]\nchecked = "InferType,default"\n')
    level = argv[argv.index("-O") + 1] if "-O" in argv else "2"
    text = ok(tmp_path, "pipeline", *argv, "--as-string").strip()
    assert "\n" not in text and "default" not in text and "checked" not in text
    assert running(tmp_path, "-P", text, "-O", level) == running(tmp_path, *argv)
    # and it is a fixed point: the string of the string is the string
    assert ok(tmp_path, "pipeline", "-P", text, "-O", level, "--as-string").strip() == text


def test_as_string_keeps_options_and_drops_what_does_not_run(tmp_path):
    text = ok(
        tmp_path,
        "pipeline",
        "-O",
        "1",
        "-P",
        "InferType,seq(FuseOps{fuse_opt_level=0},FoldConstant),AlterOpLayout",
        "--disable-pass",
        "InferType",
        "--as-string",
    ).strip()
    # InferType disabled, FoldConstant (2) and AlterOpLayout (3) above -O 1
    assert text == "seq(FuseOps{fuse_opt_level=0})"


def test_pipeline_json_schema(tmp_path):
    view = json.loads(ok(tmp_path, "pipeline", "-O", "2", "--disable-pass", "Inline", "--json"))
    assert set(view) == {
        "pipeline",
        "opt_level",
        "required_pass",
        "disabled_pass",
        "passes",
        "left_out",
        "string",
    }
    assert (view["pipeline"], view["opt_level"], view["disabled_pass"]) == (
        "default",
        2,
        ["Inline"],
    )
    inline = next(p for p in view["passes"] if p["name"] == "Inline")
    assert (inline["runs"], inline["why"], inline["plugin"]) == (False, "disabled_pass", "std")
    assert inline["phase"] == "start" and inline["placed"] == "phase start"
    assert {d["name"] for d in view["left_out"]} >= {"AlterOpLayout", "FoldScaleAxis"}
    assert all(d["why"].startswith("needs opt_level 3") for d in view["left_out"])
    assert (
        view["string"]
        == ok(tmp_path, "pipeline", "-O", "2", "--disable-pass", "Inline", "--as-string").strip()
    )


# -- start-up ----------------------------------------------------------------------------


def test_version_imports_no_command_and_no_plugin(tmp_path):
    code = (
        "import sys\n"
        "from irpass.cli.main import main\n"
        "code = main(['--version'])\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('irpass.cli.', "
        "'irpass.plugins', 'irpass_std')))\n"
        "print(code, loaded)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=plugin_environ(OWN_PLUGINS),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    version_line, result = proc.stdout.splitlines()
    assert version_line.startswith(f"irpass {metadata.version('irpass')} from ")
    assert result == "0 ['irpass.cli.common', 'irpass.cli.errors', 'irpass.cli.main']"
