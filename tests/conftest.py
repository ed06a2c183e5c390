"""Shared fixtures: every test starts and ends with the same registries."""

import pytest
from irpass.transform import config, registry


@pytest.fixture(autouse=True)
def _restore_registries():
    """Passes and config options a test registers vanish after it."""
    passes = dict(registry._PASSES)
    options = dict(config._OPTIONS)
    yield
    registry._PASSES.clear()
    registry._PASSES.update(passes)
    config._OPTIONS.clear()
    config._OPTIONS.update(options)
