"""Make the pack's plugin available to its tests, installed or not.

Installed (``pip install -e ".[test]"``), irpass loads the plugin through its
entry point like in any other program. Run from a source checkout without
installing, the package is put on ``sys.path`` and the plugin registered
in-process under the same name, ``example``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import irpass.plugins
import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# at import time: the test modules import the pack when they are collected
if importlib.util.find_spec("irpass_example_pack") is None:
    sys.path.insert(0, str(SRC))


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
