"""Shared set-up of the pack's tests: the ``onnx`` plugin loaded, installed or not.

Installed (``pip install -e "./contrib/irpass-onnx[test]"``, as ``.ci/run`` does), irpass
loads the plugin through its entry point like in any other program. Run from a source
checkout without installing, the package is put on ``sys.path`` and the plugin registered
in-process under the same name, ``onnx``.

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

# the tests run against the installed plugins, whatever the developer's shell says
for _var in ("IRPASS_PLUGINS", "IRPASS_DISABLE_PLUGIN_AUTOLOAD", "IRPASS_CONFIG"):
    os.environ.pop(_var, None)

SRC = Path(__file__).resolve().parents[1] / "src"

# at import time: the test modules import the pack when they are collected
if importlib.util.find_spec("irpass_onnx") is None:
    sys.path.insert(0, str(SRC))

import irpass.plugins  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def onnx_plugin():
    """The ``onnx`` plugin's record, once it is loaded."""
    manager = irpass.plugins.get_plugin_manager()
    if manager.plugin("onnx") is None:
        import irpass_onnx.plugin

        irpass.plugins.register(irpass_onnx.plugin, name="onnx")
    record = manager.record("onnx")
    assert record.status == "loaded", record.reason
    return record
