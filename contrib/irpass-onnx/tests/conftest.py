"""Shared set-up of the pack's tests: the ``onnx`` plugin loaded, installed or not.

The tests run against irpass's own plugins and ``onnx`` only, whatever other packs are
installed: plugin discovery is limited to those entry points before anything loads the
plugins. Installed (``pip install -e "./contrib/irpass-onnx[test]"``, as ``.ci/run``
does), irpass loads the plugin through its entry point like in any other program. Run
from a source checkout without installing, or after irpass's own suite loaded its plugin
set in the same session, the plugin is registered in-process under the same name, ``onnx``,
for each test module.

The real-network data (onnx's ``backend/test/data``) is found through
:mod:`irpass_onnx.testing`; the tests that use it share their expensive steps through
module-scoped fixtures of their own.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

# the plugins the tests run against do not depend on the developer's shell
for _var in ("IRPASS_PLUGINS", "IRPASS_DISABLE_PLUGIN_AUTOLOAD", "IRPASS_CONFIG"):
    os.environ.pop(_var, None)

SRC = Path(__file__).resolve().parents[1] / "src"

# at import time: the test modules import the pack when they are collected
if importlib.util.find_spec("irpass_onnx") is None:
    sys.path.insert(0, str(SRC))

import irpass.plugins  # noqa: E402
from irpass.testing.plugins import OWN_PLUGINS, show_only_entry_points  # noqa: E402

if irpass.plugins._manager is None:  # alone; with the core's suite, its conftest did this
    show_only_entry_points(OWN_PLUGINS + ("onnx",))


@pytest.fixture(scope="module", autouse=True)
def onnx_plugin():
    """The ``onnx`` plugin's record, once it is loaded; registered for the module's tests
    when discovery did not load it (and unregistered after them, so that tests run later
    in the same session see the plugin set they chose)."""
    manager = irpass.plugins.get_plugin_manager()
    mine = manager.plugin("onnx") is None
    if mine:
        import irpass_onnx.plugin

        irpass.plugins.register(irpass_onnx.plugin, name="onnx")
    record = manager.record("onnx")
    assert record.status == "loaded", record.reason
    yield record
    if mine:
        manager.unregister("onnx")
