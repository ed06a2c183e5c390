"""Make the pack's plugin available to its tests, installed or not, and no other pack's.

The tests run against irpass's own plugins and this one only: plugin discovery
is limited to those entry points before anything loads the plugins, so a pack
installed next to this one cannot change the results. Installed (``pip install
-e ".[test]"``), irpass loads the plugin through its entry point like in any
other program. Run from a source checkout without installing, the package is
put on ``sys.path`` and the plugin registered in-process under the same name,
``example``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import irpass.plugins
import pytest
from irpass.testing.plugins import OWN_PLUGINS, show_only_entry_points

SRC = Path(__file__).resolve().parents[1] / "src"

# at import time: the test modules import the pack when they are collected
if importlib.util.find_spec("irpass_example_pack") is None:
    sys.path.insert(0, str(SRC))

show_only_entry_points(OWN_PLUGINS + ("example",))


@pytest.fixture(scope="session", autouse=True)
def example_plugin():
    """The ``example`` plugin's record, once it is loaded."""
    manager = irpass.plugins.get_plugin_manager()
    if manager.plugin("example") is None:
        import irpass_example_pack.plugin

        irpass.plugins.register(irpass_example_pack.plugin, name="example")
    record = manager.record("example")
    assert record.status == "loaded", record.reason
    return record
