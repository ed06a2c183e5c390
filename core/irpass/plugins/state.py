"""Process-wide registries that plugins keep themselves.

The core's registries (passes, ops, instruments, config options, formats,
pipeline slots) are known to :class:`irpass.testing.RegistrySnapshot`. A
plugin that keeps a registry of its own (a ``dict`` or a ``list`` at module
level, such as std's alter-layout rules) hands it to :func:`register_registry`
once, at import; snapshots then copy and restore it with the core's, so a test
that adds to it does not leak into later tests, and the core never imports
the plugin to find it.
"""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["register_registry"]

_R = TypeVar("_R", dict, list)

# (registry, its contents when registered), for every registry handed in.
_EXTRA_REGISTRIES: list[tuple[Any, Any]] = []


def register_registry(registry: _R) -> _R:
    """Have every test-registry snapshot copy and restore ``registry``; returns it.

    For a plugin's own process-wide registry (a ``dict`` or a ``list``, restored in
    place, so the plugin keeps its one object)::

        _HOOKS: dict[str, Hook] = register_registry({})

    Registering the same object again does nothing. A snapshot taken before
    ``registry`` was registered puts it back to its contents when registered.
    """
    if not isinstance(registry, (dict, list)):
        raise TypeError(f"register_registry: expected a dict or a list, got {registry!r}")
    if not any(r is registry for r, _ in _EXTRA_REGISTRIES):
        _EXTRA_REGISTRIES.append((registry, registry.copy()))
    return registry
