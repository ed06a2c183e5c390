"""Small analyses over expressions: free and bound variables.

Free variables respect scopes: a var is free in an expression when some use
of it is not inside the scope of a binding of it *within that expression*
(the body of its ``let``, the body of its function; a let-bound function is
also in the scope of its own var, as in Relay). On ill-formed input that
means a var used after its ``let`` counts as free, although it is bound
somewhere.

:class:`FreeVarTable` computes the free vars of every function and shared
sub-expression bottom-up in one walk, for passes that ask about many nodes
(the evaluator for each closure it creates, the well-formedness check for
each shared node): asking about every function of a deeply nested program
stays linear instead of walking each function's body again.
"""

from __future__ import annotations

from collections.abc import Iterator

from .expr import Expr
from .functor import post_order_visit
from .nodes import Call, Function, If, Let, Tuple, TupleGetItem, Var

__all__ = ["free_vars", "bound_vars", "all_vars", "FreeVarTable"]

_EMPTY: frozenset[Var] = frozenset()


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
    """The vars used in ``expr`` outside the scope of any binding of them in ``expr``.

    In post-order of first use. A var used both inside and outside its
    binding's scope (an ill-formed program) is free.
    """
    table = FreeVarTable()
    order: list[Var] = []
    fvs = table._compute((expr,), order)
    return [v for v in order if v in fvs]


def _uses(node: Expr) -> tuple[Expr, ...]:
    """The children of ``node`` that are uses (binders excluded), in field order."""
    t = type(node)
    if t is Call:
        op = node.op
        return (op, *node.args) if isinstance(op, _VALUE_KINDS) else node.args
    if t is Tuple:
        return node.fields
    if t is TupleGetItem:
        return (node.tuple_value,)
    if t is Let:
        return (node.value, node.body)
    if t is If:
        return (node.cond, node.true_branch, node.false_branch)
    if t is Function:
        return (node.body,)
    return ()


# Node kinds that can carry free vars (others are leaves without any: constants,
# global vars, ops).
_VALUE_KINDS = (Var, Call, Tuple, TupleGetItem, Let, If, Function)


class FreeVarTable:
    """The free vars (as frozensets) of expressions, computed bottom-up and memoized.

    ``table[expr]`` is the set of vars free in ``expr`` (see the module
    docstring for the scoping rule). The first question about a node not
    known yet walks the sub-expression under it once; that walk keeps the
    answer for every function, every node reached more than once and the
    node asked about, so later questions about those are lookups. Equal sets
    of a node and its child are one object, so a long chain of functions or
    shared nodes with the same free vars costs one set. Any depth: the walk
    keeps its own stack.
    """

    __slots__ = ("_sets", "_vars")

    def __init__(self, *roots: Expr) -> None:
        self._sets: dict[Expr, frozenset[Var]] = {}
        self._vars: dict[Var, frozenset[Var]] = {}
        self.add(*roots)

    def add(self, *roots: Expr) -> None:
        """Walk ``roots`` together (nodes shared between them are kept too)."""
        if roots:
            self._compute(roots, None)

    def __getitem__(self, expr: Expr) -> frozenset[Var]:
        """The free vars of ``expr``."""
        fvs = self._sets.get(expr)
        if fvs is None:
            fvs = self._compute((expr,), None)
        return fvs

    def __contains__(self, expr: object) -> bool:
        """Whether the free vars of ``expr`` are known without another walk."""
        return expr in self._sets

    def __len__(self) -> int:
        return len(self._sets)

    def __iter__(self) -> Iterator[Expr]:
        return iter(self._sets)

    def _leaf(self, v: Var) -> frozenset[Var]:
        s = self._vars.get(v)
        if s is None:
            s = self._vars[v] = frozenset((v,))
        return s

    def _compute(self, roots: tuple[Expr, ...], order: list[Var] | None) -> frozenset[Var]:
        """Walk ``roots``; keep the sets of roots, functions and shared nodes; return the last's.

        Sets of nodes used once are handed to their parent, which may grow or
        shrink them in place (a ``set``); kept sets are ``frozenset`` and are
        copied before a change. So a chain of single-use nodes costs time in
        proportion to the vars it adds and removes, not to its length times
        the size of its sets.
        """
        known = self._sets
        # Pass 1: count the uses of each node inside this walk.
        count: dict[Expr, int] = {}
        stack: list[Expr] = list(roots)
        while stack:
            node = stack.pop()
            n = count.get(node)
            if n is not None:
                count[node] = n + 1
                continue
            count[node] = 1
            if node in known:
                continue
            for c in _uses(node):
                if type(c) is not Var and isinstance(c, _VALUE_KINDS):
                    stack.append(c)
        for r in roots:
            count[r] = 2  # keep the answers asked for
        # Pass 2: post-order, children in field order; a node's set is made from its
        # children's: kept ones are looked up, others taken over from `pending`.
        pending: dict[Expr, set[Var] | frozenset[Var]] = {}
        seen_vars: set[Var] = set()
        work: list = []
        for r in reversed(roots):
            work += (r, False)
        while work:
            ready = work.pop()
            node = work.pop()
            if node in known or node in pending:
                continue
            t = type(node)
            if t is Var:
                if order is not None and node not in seen_vars:
                    seen_vars.add(node)
                    order.append(node)
                if count.get(node, 0) > 1:
                    known[node] = self._leaf(node)
                continue
            if not isinstance(node, _VALUE_KINDS):
                continue
            children = _uses(node)
            if not ready:
                work += (node, True)
                for c in reversed(children):
                    if c not in known and c not in pending:
                        work += (c, False)
                continue
            sets = [self._take(c, known, pending) for c in children]
            if t is Let:
                value_set, body_set = sets
                var = node.var
                if type(node.value) is Function:  # letrec: var in scope in the value too
                    s = _remove(_union([value_set, body_set]), (var,))
                else:
                    s = _union([value_set, _remove(body_set, (var,))])
            elif t is Function:
                s = _remove(sets[0], node.params)
            else:
                s = _union(sets)
            if t is Function or count[node] > 1:
                known[node] = s if type(s) is frozenset else frozenset(s)
            else:
                pending[node] = s
        return known.get(roots[-1], _EMPTY)

    def _take(
        self, child: Expr, known: dict[Expr, frozenset[Var]], pending: dict
    ) -> set[Var] | frozenset[Var]:
        s = known.get(child)
        if s is not None:
            return s
        if type(child) is Var:
            return self._leaf(child)
        s = pending.pop(child, None)
        return _EMPTY if s is None else s  # constants, global vars, ops: no free vars


def _union(sets: list[set[Var] | frozenset[Var]]) -> set[Var] | frozenset[Var]:
    """The union, grown in the largest set (copied first if it is a frozenset)."""
    if len(sets) == 1:
        return sets[0]
    base = max(sets, key=len)
    for s in sets:
        if s is base or not s or s <= base:
            continue
        if type(base) is frozenset:
            base = set(base)
        base |= s
    return base


def _remove(s: set[Var] | frozenset[Var], drop: tuple[Var, ...]) -> set[Var] | frozenset[Var]:
    """``s`` without ``drop`` (changed in place unless it is a frozenset)."""
    for v in drop:
        if v in s:
            if type(s) is frozenset:
                s = set(s)
            s.discard(v)
    return s
