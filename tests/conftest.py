"""Shared fixtures: every test starts and ends with the same registries and plugins."""

import os

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run and machine, so the suite's verdict
# never depends on luck: `--hypothesis-profile=explore` draws new ones (a failure found
# that way becomes a fixed regression test). The soak (python -m irpass.testing.soak)
# is where new programs are explored at scale.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("repeatable")

# The suite runs against irpass's own plugins (std, instruments), whatever the
# developer's shell says and whatever other packs are installed: discovery sees
# no other entry point, here and in the `irpass` commands the tests run
# in-process. Tests that need another plugin register it themselves; tests of
# discovery replace it with fake entry points.
for _var in ("IRPASS_PLUGINS", "IRPASS_DISABLE_PLUGIN_AUTOLOAD", "IRPASS_CONFIG"):
    os.environ.pop(_var, None)

import irpass.plugins  # noqa: E402
from irpass.plugins import PluginSettings  # noqa: E402
from irpass.testing.plugins import (  # noqa: E402
    OWN_PLUGINS,
    RegistrySnapshot,
    show_only_entry_points,
)
from std_fixtures import counting_stateful_op, register_stateful_op  # noqa: E402

show_only_entry_points(OWN_PLUGINS)
if irpass.plugins._manager is not None:  # loaded by another suite's conftest: start over
    RegistrySnapshot.take().core_only().restore()
irpass.plugins.load()


@pytest.fixture(autouse=True)
def _restore_registries():
    """Passes, ops, options, instruments, formats, pipeline insertions and the plugin
    manager a test changes are put back after it."""
    saved = RegistrySnapshot.take()
    yield
    saved.restore()


@pytest.fixture
def fresh_plugins():
    """Plugins not loaded yet, registries holding the core's own entries only: the test
    calls ``irpass.plugins.load(settings)`` (or triggers the lazy load) itself."""
    RegistrySnapshot.take().core_only().restore()
    yield


@pytest.fixture
def manager(fresh_plugins):
    """A plugin manager of the test's own, with no plugin loaded (autoload off)."""
    return irpass.plugins.load(PluginSettings(autoload=False))


@pytest.fixture
def stateful_op():
    """``test.counter(x)``: a stateful op returning ``x + 1`` (registered for one test)."""
    return register_stateful_op("test.counter")


@pytest.fixture
def counter_op():
    """``(test.tick, calls)``: a stateful op returning ``x`` that counts its runs in
    ``calls`` (registered for one test)."""
    return counting_stateful_op("test.tick")
