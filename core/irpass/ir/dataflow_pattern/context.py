"""What a rewrite callback may ask about the program being rewritten.

A callback sees its match (``pre``, ``post``, ``node_map``); some rules also need
context around it: whether an intermediate node has other users (a merge that
consumes it would otherwise duplicate it), the type of a node, options the pass was
given, a table computed once per program (a side-effect analysis, a memo). While a
driver runs callbacks, :func:`rewrite_context` returns its :class:`RewriteContext`::

    def callback(self, pre, post, node_map):
        inner = node_map[self.inner][0]
        if not rewrite_context().single_use(inner):
            return post  # folding it in would leave a copy for its other users
        ...

Outside a driver's callbacks :func:`rewrite_context` returns None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

from ..expr import Expr, set_checked_type
from ..module import IRModule
from ..type_infer import note_bound_by
from ..types import Type

__all__ = ["RewriteContext", "rewrite_context"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})

_CURRENT: ContextVar[RewriteContext | None] = ContextVar("irpass_rewrite_context", default=None)


class RewriteContext:
    """The program a driver is rewriting, as its callbacks may query it.

    - :meth:`uses`: how many references the current program holds to a node.
      :func:`~.greedy.rewrite_greedy` keeps this count up to date as rewrites replace
      nodes (a node's users move to its replacement; a node nobody uses any more
      drops its own references), so it is exact for every node of ``post`` and
      ``node_map``. :func:`~.rewrite.rewrite` counts the round's input (ask about
      ``pre`` and its inputs).
    - :meth:`type_of`: a node's type (every node of the current program has one in
      the greedy driver, which types what callbacks build as it takes it in).
    - :attr:`options`: what the pass handed to the driver (read-only).
    - :meth:`cache`: one object per rewrite and key, built on first use.
    - :attr:`mod`: the module global vars resolve in, if any.
    """

    __slots__ = ("mod", "options", "_uses", "_caches")

    def __init__(self, uses: Callable[[Expr], int], mod: IRModule | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        self.mod = mod
        self.options: Mapping[str, Any] = MappingProxyType(dict(options)) if options else _EMPTY
        self._uses = uses
        self._caches: dict[str, Any] = {}

    def uses(self, expr: Expr) -> int:
        """How many references the current program holds to ``expr`` (one per use: a
        node used twice by one call counts twice; 0 for the root and for nodes not in
        the program)."""
        return self._uses(expr)

    def single_use(self, expr: Expr) -> bool:
        """Whether at most one reference to ``expr`` remains, so a rewrite of its one
        user may consume it without leaving a copy behind."""
        return self._uses(expr) <= 1

    def type_of(self, expr: Expr) -> Type | None:
        """The type of ``expr``, or None when it has none (an untyped program)."""
        return expr._checked_type

    def typed(self, expr: Expr, ty: Type) -> Expr:
        """``expr``, a node the callback just built, with its type given as ``ty``.

        The greedy driver types the nodes a callback returns from their ops' type
        relations; a node typed this way is taken as it is (the driver still checks
        that the replacement as a whole has the type of what it replaces). For
        callbacks that know the type anyway and build many nodes.
        """
        set_checked_type(expr, ty)
        note_bound_by(expr)  # its inputs' vars bind it: the next inference keeps the type
        return expr

    def cache(self, key: str, factory: Callable[[], Any]) -> Any:
        """The object stored under ``key`` for this rewrite, made by ``factory()`` the
        first time it is asked for (e.g. a memo the callbacks share, or an analysis of
        the whole program computed once)."""
        caches = self._caches
        if key in caches:
            return caches[key]
        value = caches[key] = factory()
        return value


def rewrite_context() -> RewriteContext | None:
    """The :class:`RewriteContext` of the rewrite whose callback is running, else None."""
    return _CURRENT.get()


def enter(ctx: RewriteContext) -> Any:
    """Make ``ctx`` current (for drivers); returns the token :func:`leave` takes."""
    return _CURRENT.set(ctx)


def leave(token: Any) -> None:
    """Restore the context that was current before :func:`enter`."""
    _CURRENT.reset(token)
