"""``irpass`` with broken or greedy packs installed (issue 18), run in-process.

Each test starts with no plugin loaded and "installs" packs as fake entry points
next to irpass's own (the plugin manager's discovery is replaced), with their
modules written into a temporary directory: a pack whose entry point sorts
before ``std`` and claims ``FoldConstant``, one calling ``sys.exit`` at import,
one registering callables that make no pass, one inserting a pass with options
the pass does not take.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import sys
import textwrap
import uuid

import pytest
from irpass.cli.main import main
from irpass.plugins import manager as manager_module
from irpass.testing.plugins import OWN_PLUGINS

REAL_EPS = sorted((ep for ep in metadata.entry_points(group="irpass") if ep.name in OWN_PLUGINS),
                  key=lambda ep: ep.name)

THIEF = """
from irpass.plugins import hookimpl
from irpass.transform import module_pass


@module_pass(opt_level=0, name="FoldConstant")
def FoldConstant(mod, ctx):
    return mod


@hookimpl
def irpass_register_passes():
    return [FoldConstant]
"""

QUITTER = "import sys\nsys.exit(3)\n"

NOT_FACTORIES = """
from irpass.plugins import hookimpl


@hookimpl
def irpass_register_passes():
    return [len]
"""

BAD_OPTIONS = """
from irpass.plugins import hookimpl
from irpass.transform import PipelineInsertion, module_pass


def Scaled(factor: float):
    return module_pass(lambda mod, ctx: mod, opt_level=0, name="Scaled")


@hookimpl
def irpass_register_passes():
    return [Scaled]


@hookimpl
def irpass_pipeline_passes():
    return [PipelineInsertion("Scaled", phase="end", options={"factr": 2})]
"""

BROKEN = "raise ImportError('no module named numpyy')\n"


class Packs:
    """Fake installed packs: each a module on ``sys.path`` and an entry point."""

    def __init__(self, root, monkeypatch):
        self.root = root
        self.tag = uuid.uuid4().hex[:8]
        self.modules: list[str] = []
        self.entry_points: list[metadata.EntryPoint] = list(REAL_EPS)
        monkeypatch.syspath_prepend(str(root))
        monkeypatch.setattr(manager_module, "entry_points", lambda: list(self.entry_points))

    def install(self, name: str, source: str, *, own: bool = True) -> str:
        """A pack whose plugin ``name`` runs ``source``; ``own=False`` drops irpass's plugins."""
        module = f"{name}_{self.tag}"
        (self.root / f"{module}.py").write_text(textwrap.dedent(source))
        importlib.invalidate_caches()
        self.modules.append(module)
        if not own:
            self.entry_points = []
        self.entry_points.append(metadata.EntryPoint(name, module, "irpass"))
        return module


@pytest.fixture
def packs(fresh_plugins, monkeypatch, tmp_path):
    for var in ("IRPASS_PLUGINS", "IRPASS_DISABLE_PLUGIN_AUTOLOAD", "IRPASS_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "work").mkdir()
    (tmp_path / "site").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    made = Packs(tmp_path / "site", monkeypatch)
    yield made
    for module in made.modules:
        sys.modules.pop(module, None)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def warning_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("irpass: warning:")]


def test_a_pack_sorting_before_std_leaves_the_default_pipeline_whole(packs, capsys):
    packs.install("aaa", THIEF)
    code, out, err = run(capsys, "pipeline", "-O", "3")
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith("default pipeline at opt_level 3: ") and " 0 passes" not in first
    assert "FoldConstant" in out
    [warning] = warning_lines(err)
    assert "'aaa'" in warning and "'FoldConstant'" in warning and "'std'" in warning
    code, out, _ = run(capsys, "passes")
    fold = next(line for line in out.splitlines() if line.startswith("FoldConstant "))
    assert fold.split()[3] == "std"  # pass, opt_level, required, plugin, description


@pytest.mark.parametrize("command", [["pipeline", "-O", "3"],
                                     ["optimize", "--example", "mlp", "-q"]])
def test_a_failure_that_empties_the_default_pipeline_exits_2(packs, capsys, command):
    packs.install("broken", BROKEN, own=False)
    code, out, err = run(capsys, *command)
    assert code == 2, (out, err)
    error = [line for line in err.splitlines() if line.startswith("irpass: error:")]
    assert len(error) == 1 and "Traceback" not in err
    assert "default pipeline is empty" in error[0]
    assert "'broken'" in error[0] and "numpyy" in error[0]


def test_a_plugin_calling_sys_exit_at_import_is_reported(packs, capsys):
    module = packs.install("quitter", QUITTER)
    code, out, err = run(capsys, "plugins")
    assert code == 0, err
    [warning] = warning_lines(err)
    for fragment in ("'quitter'", f"entry point quitter = {module}", "SystemExit",
                     "exit code 3"):
        assert fragment in warning
    line = next(ln for ln in out.splitlines() if ln.startswith("quitter "))
    assert "failed" in line
    assert any(ln.startswith("std ") and "loaded" in ln for ln in out.splitlines())


@pytest.mark.parametrize("source, fragments", [
    (QUITTER, ("'quitter'", "exit code 3")),
    (NOT_FACTORIES, ("'quitter'", "'len'", "built-in function")),
    (BAD_OPTIONS, ("'quitter'", "'Scaled'", "{'factr': 2}", "TypeError")),
], ids=["sys.exit", "len as a pass", "bad insertion options"])
def test_strict_plugins_make_each_kind_of_broken_pack_an_error(packs, capsys, source, fragments):
    packs.install("quitter", source)
    code, out, err = run(capsys, "--strict-plugins", "pipeline")
    assert code == 2, (out, err)
    assert err.startswith("irpass: error: ") and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err
    assert out == ""
