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
know), or explicitly with :func:`load`. Which ones:

- every entry point of the group, unless ``IRPASS_DISABLE_PLUGIN_AUTOLOAD=1``
  (or ``[plugins] autoload = false``);
- modules named by ``-p MODULE``, ``IRPASS_PLUGINS=mod1,mod2`` or
  ``[plugins] modules`` (an entry-point name works too, to load one plugin
  while autoload is off);
- not those blocked by name (``-p no:NAME``, ``[plugins] disable``): they are
  never imported; and with ``[plugins] only = [...]``, no entry point but those.

:func:`register` adds a plugin from code. A broken plugin is reported once as
a :class:`PluginWarning` (naming it, its distribution and the cause) and
skipped; with ``strict`` it is a :class:`PluginError`.
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

_manager: PluginManager | None = None
# Loading imports plugins, which may look up passes (and so call ensure_loaded)
# while we are still loading: the RLock lets that thread through, and the
# _loading flag makes the nested call return at once.
_lock = threading.RLock()
_loading = False


def load(settings: PluginSettings | None = None) -> PluginManager:
    """Load the process's plugins as ``settings`` ask (default: what the environment says).

    Plugins load once per process; asking again with the same settings (or
    none) returns the same manager. Asking for other settings after they were
    loaded is a ``RuntimeError``: plugins cannot be unimported.
    """
    global _manager, _loading
    with _lock:
        if _manager is not None:
            if settings is not None and settings != _manager.settings:
                raise RuntimeError(
                    "irpass plugins were already loaded with other settings "
                    f"({_manager.settings}); load(settings) must come before the first use "
                    "of passes, instruments or formats"
                )
            return _manager
        manager = PluginManager(settings if settings is not None else PluginSettings.from_environ())
        _manager = manager
        _loading = True
        try:
            manager.load()
        except BaseException:
            # strict mode: nothing of this attempt may stay behind for the next one
            manager.unload()
            _manager = None
            raise
        finally:
            _loading = False
        return manager


def ensure_loaded() -> None:
    """Load the plugins (as :func:`load` with no settings) unless that happened already."""
    if _manager is None and not _loading:
        load()


def get_plugin_manager() -> PluginManager:
    """The process's plugin manager, loading the plugins first if needed."""
    ensure_loaded()
    assert _manager is not None
    return _manager


def register(plugin: object, name: str | None = None) -> PluginRecord:
    """Register ``plugin`` (a module or object with hook implementations) and commit
    what it contributes; returns its record (``status == "failed"`` if it was broken
    and skipped, with a :class:`PluginWarning`)."""
    return get_plugin_manager().register(plugin, name)
