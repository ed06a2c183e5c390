"""Pausing Python's cyclic garbage collector while big acyclic graphs are built.

Parsing or printing a million-node program allocates millions of objects
that all stay alive; each time the collector runs it walks every one of them,
which made text round trips of big programs up to twice as slow. IR nodes
never form reference cycles, so pausing the collector loses nothing.

Whatever the block allocated and still holds when it ends is scanned by the
collection that turning the collector back on sets off, at a cost of a cache
miss or more per object on a program larger than the CPU caches. So let a
walk's tables die inside the block (a temporary walker object, or ``del``),
and only its result outlive it.

The switch is process-wide: when two threads pause at once, the first to
finish turns the collector back on while the other still runs. That only
costs the other thread speed, never correctness.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block; re-enable it after if it was on."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
