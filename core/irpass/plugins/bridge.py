"""Hook-based instruments: a plugin's instrument hooks, seen by PassContext as one PassInstrument.

A plugin that implements ``irpass_run_before_pass`` (or any other instrument
hook) gets an instrument named after the plugin. Only when it is switched on
does a :class:`HookInstrument` join a context; it then calls the plugin's own
functions directly -- bound once, when the instrument is made -- so the
context applies exactly the call-order and exception rules of class
instruments, and a context without it pays nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..instrument.base import PassInstrument

__all__ = ["HookInstrument"]

_POINT_ARGS = {
    "enter_pass_ctx": (),
    "exit_pass_ctx": (),
    "should_run": ("mod", "info"),
    "run_before_pass": ("mod", "info"),
    "run_after_pass": ("mod", "info"),
}


def _adapt(point: str, fn: Callable[..., Any], argnames: tuple[str, ...]) -> Callable[..., Any]:
    """``fn`` as the method ``point``: called with the arguments it names, in its order."""
    unknown = set(argnames) - set(_POINT_ARGS[point])
    if unknown:
        raise TypeError(f"hook for {point} takes unknown arguments {sorted(unknown)}")
    if point == "should_run":
        # None (no opinion) lets the pass run; any other non-bool reaches the
        # context, which rejects it as it does a class instrument's
        def should_run(mod: Any, info: Any) -> Any:
            answer = fn(*[{"mod": mod, "info": info}[a] for a in argnames])
            return True if answer is None else answer

        return should_run
    if argnames == _POINT_ARGS[point]:
        return fn
    if not _POINT_ARGS[point]:
        return lambda: fn()
    return lambda mod, info: fn(*[{"mod": mod, "info": info}[a] for a in argnames])


class HookInstrument(PassInstrument):
    """The instrument of plugin ``plugin_name``, built from its instrument hooks.

    ``hooks`` maps a point (``"run_before_pass"``) to ``(function, argnames)``:
    the plugin's implementation and the arguments it takes (a hook may take
    fewer than the specification names). Points the plugin does not implement
    do nothing.
    """

    def __init__(
        self, plugin_name: str, hooks: Mapping[str, tuple[Callable[..., Any], tuple[str, ...]]]
    ) -> None:
        self.name = plugin_name
        self.points = tuple(sorted(hooks))
        for point, (fn, argnames) in hooks.items():
            # instance attributes shadow the base class's no-op methods
            setattr(self, point, _adapt(point, fn, tuple(argnames)))

    def __repr__(self) -> str:
        return f"<instrument {self.name} (hooks: {', '.join(self.points)})>"
