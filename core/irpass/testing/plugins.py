"""Testing plugins: run code against a plugin set of its own, and put everything back after.

irpass's registries (passes, ops, config options, instruments, file formats,
pipeline insertions) and its plugin manager are process-wide. A pass pack's
tests use :func:`isolated_plugins` to load exactly the plugins they mean to
test, without the ones installed in the environment::

    from irpass.plugins import PluginSettings
    from irpass.testing.plugins import isolated_plugins

    def test_my_pass_is_registered():
        with isolated_plugins(PluginSettings(autoload=False, modules=("my_pack.plugin",))):
            assert "MyPass" in irpass.transform.list_passes()

A test suite whose results must not depend on which other packs happen to be
installed hides them from discovery for the whole session, in its
``conftest.py``, before anything loads the plugins (irpass's own suite does
this; a pack adds its own plugin name)::

    from irpass.testing.plugins import OWN_PLUGINS, show_only_entry_points

    show_only_entry_points(OWN_PLUGINS + ("my_pack",))

and gives a child process the same plugin set with :func:`plugin_environ`::

    subprocess.run([sys.executable, "-m", "irpass", ...], env=plugin_environ(OWN_PLUGINS))

Snapshots also copy and restore the registries plugins keep themselves and
hand to :func:`irpass.plugins.register_registry`. :meth:`RegistrySnapshot.core_only`
keeps those registries' contents: they belong to a module, which is imported
once, not to the plugins a test loads.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .. import formats, plugins
from ..instrument import registry as instruments
from ..ir import op as ops
from ..plugins import manager as manager_module
from ..plugins.manager import CORE, PluginManager
from ..plugins.specs import PluginSettings
from ..plugins.state import _EXTRA_REGISTRIES
from ..transform import config as options
from ..transform import pipeline
from ..transform import registry as passes

__all__ = [
    "OWN_PLUGINS",
    "RegistrySnapshot",
    "isolated_plugins",
    "plugin_environ",
    "show_only_entry_points",
    "visible_entry_points",
]

#: The plugins irpass's own distribution declares as entry points.
OWN_PLUGINS: tuple[str, ...] = ("instruments", "std")


def _copy_extras() -> list[tuple[Any, Any]]:
    """``(registry, copy of its contents)`` for every registry plugins registered."""
    return [(r, r.copy()) for r, _ in _EXTRA_REGISTRIES]


def _put_back(registry: dict[Any, Any] | list[Any], contents: dict[Any, Any] | list[Any]) -> None:
    """Make ``registry`` (the same object) hold ``contents`` again."""
    if isinstance(registry, dict):
        registry.clear()
        registry.update(contents)
    else:
        registry[:] = contents


@dataclass
class RegistrySnapshot:
    """A copy of every registry and of the plugin manager, to restore later."""

    passes: dict[str, Any]
    options: dict[str, Any]
    ops: dict[str, Any]
    instruments: dict[str, Any]
    formats: dict[str, Any]
    insertions: list[Any]
    manager: PluginManager | None
    manager_state: Any = None
    # (registry, contents) of the registries plugins keep themselves (register_registry).
    extras: list[tuple[Any, Any]] = field(default_factory=list)

    @classmethod
    def take(cls) -> RegistrySnapshot:
        """Copy the current state."""
        return cls(dict(passes._PASSES), dict(options._OPTIONS), dict(ops._REGISTRY),
                   dict(instruments._INSTRUMENTS), dict(formats._BY_SUFFIX),
                   list(pipeline._INSERTIONS), plugins._manager,
                   plugins._manager._state() if plugins._manager is not None else None,
                   _copy_extras())

    def restore(self) -> None:
        """Put the copied state back (the registries are updated in place)."""
        for live, saved in ((passes._PASSES, self.passes), (options._OPTIONS, self.options),
                            (ops._REGISTRY, self.ops), (instruments._INSTRUMENTS, self.instruments),
                            (formats._BY_SUFFIX, self.formats)):
            live.clear()
            live.update(saved)
        pipeline._INSERTIONS[:] = self.insertions
        saved_extras = {id(r): c for r, c in self.extras}
        for registry, initial in _EXTRA_REGISTRIES:
            # Registered after this snapshot: back to its contents when registered.
            _put_back(registry, saved_extras.get(id(registry), initial))
        plugins._manager = self.manager
        if self.manager is not None:
            self.manager._restore_state(self.manager_state)

    def core_only(self) -> RegistrySnapshot:
        """This state without anything a plugin (or a test) contributed: what the core registers."""

        def own(d: dict[str, Any], owner: Any) -> dict[str, Any]:
            return {k: v for k, v in d.items() if owner(v) == CORE}

        return RegistrySnapshot(
            own(self.passes, lambda e: e.owner), own(self.options, lambda o: o.owner),
            own(self.ops, lambda o: o.owner), own(self.instruments, lambda e: e.owner),
            own(self.formats, lambda e: e.owner),
            [(o, i) for o, i in self.insertions if o == CORE], None,
            extras=[(r, c.copy()) for r, c in self.extras])


@contextmanager
def isolated_plugins(settings: PluginSettings | None = None) -> Iterator[PluginManager]:
    """Within the block, only the core's registrations plus the plugins ``settings``
    load (default ``PluginSettings()``: the installed entry points); afterwards,
    everything as it was. Yields the block's plugin manager."""
    saved = RegistrySnapshot.take()
    saved.core_only().restore()
    try:
        yield plugins.load(settings if settings is not None else PluginSettings())
    finally:
        saved.restore()


def show_only_entry_points(names: Iterable[str]) -> Callable[[], None]:
    """From now on, plugin discovery finds only the installed entry points named in
    ``names`` (``irpass plugins``, autoload, ``-p NAME`` and config checks alike);
    returns the function that undoes it.

    For a test session that must not depend on the packs installed next to
    irpass: call it before the plugins are loaded. Entry points that are not
    installed are not invented; tests of discovery itself replace the
    discovery function (``irpass.plugins.manager.entry_points``) with fakes,
    which this does not filter.
    """
    keep = frozenset(() if isinstance(names, str) else names)
    if isinstance(names, str) or not all(isinstance(n, str) for n in keep):
        raise TypeError(f"show_only_entry_points: expected plugin names, got {names!r}")
    previous = manager_module.entry_points

    def visible() -> list[metadata.EntryPoint]:
        return [ep for ep in previous() if ep.name in keep]

    visible.__doc__ = f"the installed entry points named {sorted(keep)}"
    manager_module.entry_points = visible

    def undo() -> None:
        manager_module.entry_points = previous

    return undo


@contextmanager
def visible_entry_points(names: Iterable[str]) -> Iterator[None]:
    """:func:`show_only_entry_points` for the duration of a ``with`` block."""
    undo = show_only_entry_points(names)
    try:
        yield
    finally:
        undo()


def plugin_environ(names: Iterable[str],
                   environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``environ`` (default ``os.environ``) under which a child ``irpass``
    process loads exactly the entry-point plugins ``names``: autoload off and
    ``IRPASS_PLUGINS`` naming them; no ``IRPASS_CONFIG``."""
    env = {k: v for k, v in (os.environ if environ is None else environ).items()
           if k not in ("IRPASS_PLUGINS", "IRPASS_DISABLE_PLUGIN_AUTOLOAD", "IRPASS_CONFIG")}
    env["IRPASS_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["IRPASS_PLUGINS"] = ",".join(names)
    return env
