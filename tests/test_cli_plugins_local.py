"""``-p`` means a plugin everywhere, and ``-p mymod`` finds ``./mymod.py`` (issue 24).

Each test runs the installed ``irpass`` script in a subprocess (its ``sys.path[0]`` is the
script's directory, not the working directory, as for a user), in an empty working
directory, with only irpass's own plugins (``plugin_environ``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from irpass.testing.plugins import OWN_PLUGINS, plugin_environ

IRPASS = str(Path(sys.executable).with_name("irpass"))

GOOD = '''
from irpass.plugins import hookimpl
from irpass.transform import module_pass


@module_pass(opt_level=0, name="LocalPass")
def LocalPass(mod, ctx):
    """A pass from a module in the working directory."""
    return mod


@hookimpl
def irpass_register_passes():
    return [LocalPass]
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


def lines(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


@pytest.mark.parametrize(
    "argv",
    [
        ["-p", "localmod", "passes"],
        ["passes", "-p", "localmod"],
        ["passes", "--plugin", "localmod"],
    ],
    ids=["before", "after", "long form after"],
)
def test_p_loads_a_module_of_the_working_directory_before_or_after_the_command(tmp_path, argv):
    (tmp_path / "localmod.py").write_text(GOOD)
    proc = irpass(tmp_path, *argv)
    assert proc.returncode == 0, proc.stderr
    assert lines(proc.stderr, "irpass: warning:") == []
    [row] = lines(proc.stdout, "LocalPass ")
    assert row.split()[3] == "localmod"  # pass, opt_level, required, plugin
    assert (tmp_path / "localmod.py").read_text() == GOOD


@pytest.mark.parametrize(
    "source, where",
    [
        (
            "import os\n\nx = undefined_name + 1\n",
            "localmod.py:3: NameError: name 'undefined_name' is not defined",
        ),
        ("def f(:\n    pass\n", "localmod.py:1: SyntaxError: "),
        (
            "import os\nimport irpass_no_such_dependency\n",
            "localmod.py:2: ModuleNotFoundError: No module named 'irpass_no_such_dependency'",
        ),
        ("import localhelper\n", "localhelper.py:2: RuntimeError: helper is broken"),
    ],
    ids=["NameError", "SyntaxError", "missing dependency", "raised in a module it imports"],
)
def test_a_plugin_failing_at_import_is_one_warning_naming_file_and_line(tmp_path, source, where):
    (tmp_path / "localmod.py").write_text(source)
    (tmp_path / "localhelper.py").write_text("x = 1\nraise RuntimeError('helper is broken')\n")
    proc = irpass(tmp_path, "-p", "localmod", "passes")
    assert proc.returncode == 0, proc.stderr
    [warning] = lines(proc.stderr, "irpass: warning:")
    assert warning.startswith(f"irpass: warning: plugin 'localmod' failed to load: {where}")
    assert "Traceback" not in proc.stderr
    assert lines(proc.stdout, "InferType ")  # the other plugins still work


def test_strict_plugins_makes_the_same_report_an_error(tmp_path):
    (tmp_path / "localmod.py").write_text("import os\n\nx = undefined_name + 1\n")
    proc = irpass(tmp_path, "--strict-plugins", "-p", "localmod", "passes")
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        "irpass: error: plugin 'localmod' failed to load: localmod.py:3: NameError"
    )
    assert proc.stdout == ""


@pytest.mark.parametrize(
    "value", ["FoldConstant,DeadCodeElimination", "FoldConstant", "seq(InferType)", "default"]
)
def test_a_pipeline_given_to_p_is_one_error_pointing_to_P(tmp_path, value):
    proc = irpass(tmp_path, "optimize", "--example", "mlp", "-q", "-p", value)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"irpass: error: -p loads a plugin; for a pipeline use -P/--pipeline (got -p '{value}')\n"
    )


def test_p_no_name_after_the_command_blocks_the_plugin(tmp_path):
    proc = irpass(tmp_path, "passes", "-p", "no:std")
    assert proc.returncode == 0, proc.stderr
    names = [line.split()[0] for line in proc.stdout.splitlines()[1:]]
    assert "Identity" in names and "InferType" not in names
    proc = irpass(
        tmp_path,
        "optimize",
        "--example",
        "mlp",
        "-q",
        "-p",
        "no:std",
        "-P",
        "Identity",
        "-o",
        "out.txt",
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.txt").exists()


@pytest.mark.parametrize(
    "value, message",
    [
        ("no:std", "-P/--pipeline is the pipeline; to block a plugin use -p no:std"),
        ("localmod", "-P/--pipeline is the pipeline; to load plugin 'localmod' use -p localmod"),
    ],
)
def test_a_plugin_given_to_P_is_one_error_pointing_to_p(tmp_path, value, message):
    (tmp_path / "localmod.py").write_text(GOOD)
    proc = irpass(tmp_path, "optimize", "--example", "mlp", "-q", "-P", value)
    assert proc.returncode == 2
    assert proc.stderr == f"irpass: error: {message}\n"


def test_irpass_plugins_and_the_config_file_find_working_directory_modules_too(tmp_path):
    (tmp_path / "localmod.py").write_text(GOOD)
    env = plugin_environ(OWN_PLUGINS)
    env["IRPASS_PLUGINS"] += ",localmod"
    proc = subprocess.run(
        [IRPASS, "passes"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert lines(proc.stdout, "LocalPass ")
    (tmp_path / "irpass.toml").write_text('[plugins]\nmodules = ["localmod"]\n')
    proc = irpass(tmp_path, "passes")
    assert proc.returncode == 0, proc.stderr
    assert lines(proc.stdout, "LocalPass ")
