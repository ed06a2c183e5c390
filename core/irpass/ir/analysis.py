"""Small analyses over expressions: free and bound variables."""

from __future__ import annotations

from .expr import Expr
from .functor import post_order_visit
from .nodes import Function, Let, Var

__all__ = ["free_vars", "bound_vars", "all_vars"]


def all_vars(expr: Expr) -> list[Var]:
    """Every :class:`Var` reachable from ``expr``, in post-order of first appearance."""
    out: list[Var] = []
    post_order_visit(expr, lambda n: out.append(n) if type(n) is Var else None)
    return out


def bound_vars(expr: Expr) -> list[Var]:
    """The vars bound inside ``expr`` (function params and let vars), in post-order."""
    out: list[Var] = []

    def collect(node: Expr) -> None:
        if type(node) is Let:
            out.append(node.var)
        elif type(node) is Function:
            out.extend(node.params)

    post_order_visit(expr, collect)
    return out


def free_vars(expr: Expr) -> list[Var]:
    """The vars used in ``expr`` but not bound in it, in post-order of first appearance."""
    bound = set(bound_vars(expr))
    return [v for v in all_vars(expr) if v not in bound]
