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

The switch is process-wide, so pauses are counted across threads (under a
lock): the collector goes off when the first of overlapping pauses begins
and, when the last one ends, back on if it was on when the first began;
otherwise it is left as it is. A pause never turns on a collector that was
off before it. What a program does to the collector while some pause is
active is not tracked: a ``gc.enable()`` then takes effect at once (the
pauses only lose speed) and stays, a ``gc.disable()`` then is undone when the
last pause ends if the collector was on before the first. To keep the
collector off, switch it off while no thread is parsing, printing or running
a pass, e.g. before starting them.
"""

from __future__ import annotations

import gc
import threading
from contextlib import AbstractContextManager
from types import TracebackType

__all__ = ["gc_paused"]

_lock = threading.Lock()
_active = 0  # pauses begun and not yet ended, in all threads
_was_enabled = False  # the collector's state when the first of them began


class _Pause:
    """The context manager :func:`gc_paused` returns (stateless: the count is global)."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _active, _was_enabled
        with _lock:
            if not _active:
                _was_enabled = gc.isenabled()
                gc.disable()
            _active += 1

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        global _active
        with _lock:
            _active -= 1
            if not _active and _was_enabled:
                gc.enable()


_PAUSE = _Pause()


def gc_paused() -> AbstractContextManager[None]:
    """Disable the cyclic collector inside the block (thread-safe, nestable).

    When the last active pause ends the collector is on again if it was on
    when the first began (see the module docstring for the exact rule).
    """
    return _PAUSE
