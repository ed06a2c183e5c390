"""The one way core registries ask for the plugins: load them on first need.

Registries (passes, ops, config options, instruments, formats) call
:func:`ensure_plugins` when asked for a name they do not hold or for a full
listing, so ``irpass.transform.InferType()`` works after a bare ``import
irpass``. The plugin manager imports those registries, hence the late import.
"""

from __future__ import annotations

import importlib
import sys


def ensure_plugins() -> None:
    """Load the process's plugins unless they are loaded, being loaded by this thread, or
    ``irpass.plugins`` is itself being imported; when another thread is loading them,
    wait until it is done (see :func:`irpass.plugins.ensure_loaded`)."""
    plugins = sys.modules.get("irpass.plugins")
    if plugins is None:
        plugins = importlib.import_module("irpass.plugins")
    ensure = getattr(plugins, "ensure_loaded", None)
    if ensure is not None:  # None while irpass.plugins itself is still being imported
        ensure()
