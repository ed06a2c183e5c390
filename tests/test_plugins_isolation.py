"""The suite's plugin set does not depend on the packs installed next to irpass (issue 18).

tests/conftest.py limits plugin discovery to irpass's own entry points
(``show_only_entry_points(OWN_PLUGINS)``) before anything loads the plugins,
so the suite gives the same results with any other pack installed. These
tests check that mechanism with a fake "installed" pack that must never be
imported, in-process and in a child ``irpass`` process.
"""

from __future__ import annotations

import importlib.metadata as metadata
import subprocess
import sys

import irpass.plugins
import pytest
from irpass.cli.main import main
from irpass.plugins import PluginSettings
from irpass.plugins import manager as manager_module
from irpass.testing.plugins import (
    OWN_PLUGINS,
    plugin_environ,
    show_only_entry_points,
    visible_entry_points,
)

REAL_EPS = [ep for ep in metadata.entry_points(group="irpass") if ep.name in OWN_PLUGINS]
# a pack "installed" next to irpass, whose plugin module fails the test if imported
EXTRA = metadata.EntryPoint("zz_extra", "irpass_test_extra_pack_never_imported", "irpass")


@pytest.fixture
def extra_pack_installed(monkeypatch, fresh_plugins):
    """Discovery (below any filter) finds irpass's own entry points and EXTRA."""
    monkeypatch.setattr(manager_module, "entry_points", lambda: [*REAL_EPS, EXTRA])


def test_the_suite_runs_against_irpass_own_plugins_only():
    manager = irpass.plugins.get_plugin_manager()
    assert [r.name for r in manager.records()] == ["irpass", "instruments", "std"]
    assert {ep.name for ep in manager_module.entry_points()} <= set(OWN_PLUGINS)


def test_own_plugins_are_the_entry_points_of_the_irpass_distribution():
    declared = {ep.name for ep in metadata.distribution("irpass").entry_points
                if ep.group == "irpass"}
    assert declared == set(OWN_PLUGINS)


def test_hidden_entry_points_are_never_imported(extra_pack_installed):
    with visible_entry_points(OWN_PLUGINS):
        assert [ep.name for ep in manager_module.entry_points()] == sorted(OWN_PLUGINS)
        manager = irpass.plugins.load(PluginSettings())
    assert [r.name for r in manager.records()] == ["irpass", "instruments", "std"]
    assert "irpass_test_extra_pack_never_imported" not in sys.modules
    # the block is over: discovery finds the pack again
    assert "zz_extra" in [ep.name for ep in manager_module.entry_points()]


def test_show_only_entry_points_returns_its_undo(extra_pack_installed):
    undo = show_only_entry_points(["std"])
    try:
        assert [ep.name for ep in manager_module.entry_points()] == ["std"]
    finally:
        undo()
    assert len(manager_module.entry_points()) == len(REAL_EPS) + 1
    with pytest.raises(TypeError, match="plugin names"):
        show_only_entry_points("std")


def test_the_command_in_process_sees_only_the_visible_plugins(extra_pack_installed, capsys,
                                                              monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with visible_entry_points(OWN_PLUGINS):
        code = main(["plugins"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["irpass", "instruments", "std"]
    assert "zz_extra" not in out + err


def test_a_child_irpass_process_loads_the_plugins_plugin_environ_names(tmp_path):
    env = plugin_environ(["std"])
    proc = subprocess.run([sys.executable, "-m", "irpass", "plugins"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[0] for line in proc.stdout.splitlines()[1:]] == ["irpass", "std"]
    assert (env["IRPASS_DISABLE_PLUGIN_AUTOLOAD"], env["IRPASS_PLUGINS"]) == ("1", "std")
    assert "IRPASS_CONFIG" not in plugin_environ(OWN_PLUGINS, {"IRPASS_CONFIG": "x.toml"})
