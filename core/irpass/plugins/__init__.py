"""Plugins: passes, instruments, ops, config options, file formats and pipeline slots from packages.

irpass's core holds the IR, :class:`~irpass.transform.PassContext` and the
:class:`~irpass.transform.Sequential` executor; the rest arrives through
pluggy plugins. A plugin is a module with functions marked
:data:`hookimpl` and named after the hooks of :mod:`irpass.plugins.hookspec`.
A distribution ships one by declaring it in the ``irpass`` entry-point group::

    [project.entry-points.irpass]
    example = "irpass_example_pack.plugin"

Plugins are loaded once per process, on first use (listing or looking up a
pass, an instrument, a format, an op or a config option irpass does not
know), or explicitly with :func:`load`; threads that need them while another
thread loads them wait until the load is complete. Which ones:

- every entry point of the group, unless ``IRPASS_DISABLE_PLUGIN_AUTOLOAD=1``
  (or ``[plugins] autoload = false``);
- modules named by ``-p MODULE``, ``IRPASS_PLUGINS=mod1,mod2`` or
  ``[plugins] modules`` (an entry-point name works too, to load one plugin
  while autoload is off);
- not those blocked by name (``-p no:NAME``, ``[plugins] disable``): they are
  never imported; and with ``[plugins] only = [...]``, no entry point but those.

irpass's own plugins (``instruments``, ``std``) load first, then the other
entry points by name, then the ``-p`` modules: a name (of a pass, an op, an
option...) belongs to the first plugin that registers it, so no pack can take
one from irpass's own plugins, whatever its name sorts as.

:func:`register` adds a plugin from code. A broken plugin (one that fails to
import -- ``sys.exit()`` included --, whose hooks raise or return what is not
expected, or that claims a name another plugin owns) is reported once as a
:class:`PluginWarning` (naming it, its distribution and the cause) and
skipped; with ``strict`` it is a :class:`PluginError`. When no plugin
contributes to the default pipeline and one failed, building the pipeline is a
:class:`PluginError` (see :mod:`irpass.transform.pipeline`).
"""

from __future__ import annotations

import threading

import pluggy

from .bridge import HookInstrument
from .hookspec import PROJECT
from .manager import PluginManager
from .specs import (
    Contribution,
    OpSpec,
    PluginError,
    PluginRecord,
    PluginSettings,
    PluginWarning,
)
from .state import register_registry

__all__ = [
    "Contribution",
    "HookInstrument",
    "OpSpec",
    "PluginError",
    "PluginManager",
    "PluginRecord",
    "PluginSettings",
    "PluginWarning",
    "ensure_loaded",
    "get_plugin_manager",
    "hookimpl",
    "load",
    "register",
    "register_registry",
]

#: Marks a plugin's function as the implementation of the hook it is named after
#: (also ``irpass.hookimpl``). The specifications are in :mod:`irpass.plugins.hookspec`.
hookimpl = pluggy.HookimplMarker(PROJECT)

_manager: PluginManager | None = None  # set only once its plugins are all loaded
# Loading imports plugins, which may look up passes (and so call ensure_loaded)
# while we are still loading. One lock serializes loading: another thread that
# needs the plugins waits on it until the load is complete, while the loading
# thread itself re-enters it (an RLock) and finds the manager being loaded in
# _loading, so its nested calls return at once instead of loading again.
_lock = threading.RLock()
_loading: PluginManager | None = None


def load(settings: PluginSettings | None = None) -> PluginManager:
    """Load the process's plugins as ``settings`` ask (default: what the environment says).

    Plugins load once per process; asking again with the same settings (or
    none) returns the same manager. Asking for other settings after they were
    loaded is a ``RuntimeError``: plugins cannot be unimported. Safe to call
    from several threads: one loads, the others wait until it is done.
    """
    global _manager, _loading
    with _lock:
        current = _manager if _manager is not None else _loading
        if current is not None:
            if settings is not None and settings != current.settings:
                raise RuntimeError(
                    "irpass plugins were already loaded with other settings "
                    f"({current.settings}); load(settings) must come before the first use "
                    "of passes, instruments or formats"
                )
            return current  # loaded, or being loaded by this very thread
        manager = PluginManager(settings if settings is not None else PluginSettings.from_environ())
        _loading = manager
        try:
            manager.load()
        except BaseException:
            # strict mode: nothing of this attempt may stay behind for the next one
            manager.unload()
            raise
        finally:
            _loading = None
        _manager = manager
        return manager


def ensure_loaded() -> None:
    """Load the plugins (as :func:`load` with no settings) unless that happened already.

    A thread that finds another one loading waits until the plugins are all
    registered; a call made while this thread itself is loading returns at once.
    """
    if _manager is not None:  # published only after a complete load: no lock needed
        return
    with _lock:
        if _manager is None and _loading is None:
            load()


def get_plugin_manager() -> PluginManager:
    """The process's plugin manager, loading the plugins first if needed (while they
    load, the loading thread gets the manager being loaded)."""
    ensure_loaded()
    manager = _current()
    assert manager is not None
    return manager


def _current() -> PluginManager | None:
    """The manager loaded, or being loaded by this thread; None before loading (no load)."""
    return _manager if _manager is not None else _loading


def register(plugin: object, name: str | None = None) -> PluginRecord:
    """Register ``plugin`` (a module or object with hook implementations) and commit
    what it contributes; returns its record (``status == "failed"`` if it was broken
    and skipped, with a :class:`PluginWarning`)."""
    with _lock:  # never half-way through another thread's load or registration
        return get_plugin_manager().register(plugin, name)
