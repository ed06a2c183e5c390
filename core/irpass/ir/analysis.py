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
    node asked about, so later questions about those are lookups. Equal
    answers of a node and its child are one object, so a long chain of
    functions or shared nodes with the same free vars costs one set. Any
    depth: the walk keeps its own stack.

    Linear in the size of the walked expressions, also when a chain of shared
    nodes each adds a var (where keeping one set per node would hold n**2 / 2
    vars): sets are kept as prefixes of shared append-only logs (see
    :class:`_View`) and made into frozensets only when asked for. What stays
    more than linear: asking for the answers themselves (their total size can
    be quadratic), and nodes whose sets cannot be prefixes of one log, for
    example two users of one shared set each adding a different var, or a var
    bound deep inside a shared set's log (each costs a copy of that set).
    """

    __slots__ = ("_sets", "_vars", "_frozen")

    def __init__(self, *roots: Expr) -> None:
        self._sets: dict[Expr, _View] = {}
        self._vars: dict[Var, _View] = {}
        self._frozen: dict[tuple[_Log, int], frozenset[Var]] = {}
        self.add(*roots)

    def add(self, *roots: Expr) -> None:
        """Walk ``roots`` together (nodes shared between them are kept too)."""
        if roots:
            self._compute(roots, None)

    def __getitem__(self, expr: Expr) -> frozenset[Var]:
        """The free vars of ``expr``."""
        view = self._sets.get(expr)
        if view is None:
            view = self._compute((expr,), None)
        return self._frozenset(view)

    def __contains__(self, expr: object) -> bool:
        """Whether the free vars of ``expr`` are known without another walk."""
        return expr in self._sets

    def __len__(self) -> int:
        return len(self._sets)

    def __iter__(self) -> Iterator[Expr]:
        return iter(self._sets)

    def _frozenset(self, view: _View) -> frozenset[Var]:
        """The vars of a kept (frozen) view; one object per distinct view."""
        if view.n == 0:
            return _EMPTY
        key = (view.log, view.n)
        fs = self._frozen.get(key)
        if fs is None:
            fs = self._frozen[key] = frozenset(view.log.vars[: view.n])
        return fs

    def _leaf(self, v: Var) -> _View:
        view = self._vars.get(v)
        if view is None:
            view = self._vars[v] = _View(_Log([v], 1), 1)  # frozen: every use of v reads it
        return view

    def _compute(self, roots: tuple[Expr, ...], order: list[Var] | None) -> _View:
        """Walk ``roots``; keep the sets of roots, functions and shared nodes; return the last's.

        A node's set is made from its children's (see :func:`_union` and
        :func:`_without`): a node used once hands its set to its parent, which
        may change it in place; kept sets are frozen, and a parent extends or
        shrinks them as longer or shorter prefixes of their log, copying only
        when that cannot be done.
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
        pending: dict[Expr, _View] = {}
        leaf = self._leaf
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
            sets = []
            for c in children:  # inlined _take: this loop is the walk's hot path
                cs = known.get(c)
                if cs is None:
                    cs = leaf(c) if type(c) is Var else pending.pop(c, _NONE)
                sets.append(cs)
            if t is Let:
                value_set, body_set = sets
                var = node.var
                if type(node.value) is Function:  # letrec: var in scope in the value too
                    s = _drop(_union2(value_set, body_set), var)
                else:
                    s = _union2(value_set, _drop(body_set, var))
            elif t is Function:
                params = node.params
                s = _drop(sets[0], params[0]) if len(params) == 1 else _without(sets[0], params)
            else:
                s = sets[0] if len(sets) == 1 else _union(sets)
            if t is Function or count[node] > 1:
                if s.log.frozen < s.n:  # from now on its users only read it
                    s.log.frozen = s.n
                known[node] = s
            else:
                pending[node] = s
        return known.get(roots[-1], _NONE)


class _Log:
    """A list of distinct vars, each with its position, that grows at its end.

    Positions below ``frozen`` belong to views that other nodes read and
    never change; the rest belong to the one view that owns the log's end
    (see :func:`_owned`), which may also remove vars there in place.
    """

    __slots__ = ("vars", "pos", "frozen")

    def __init__(self, vars_: list[Var], frozen: int = 0) -> None:
        self.vars = vars_
        if len(vars_) == 1:  # a var's own log: the most made
            self.pos = {vars_[0]: 0}
        else:
            self.pos = dict(zip(vars_, range(len(vars_)), strict=True))
        self.frozen = frozen


class _View:
    """A set of vars: the first ``n`` vars of ``log``.

    Sets along a chain of nodes usually differ by a var added or removed at
    the end, so they are prefixes of one log: a node that adds a var to its
    child's set extends the log (when the child's view ends where the log
    ends), a node that drops the var bound last takes a shorter prefix, and a
    node with its child's set takes the same view. Membership is a lookup.
    """

    __slots__ = ("log", "n")

    def __init__(self, log: _Log, n: int) -> None:
        self.log = log
        self.n = n

    def __contains__(self, v: object) -> bool:
        p = self.log.pos.get(v)  # type: ignore[call-overload]
        return p is not None and p < self.n

    def vars(self) -> list[Var]:
        return self.log.vars[: self.n]


_NONE = _View(_Log([]), 0)  # no free vars; never extended in place (n == 0 always copies)

# Extending a frozen view this short copies it instead of growing its log: as cheap,
# and the copy's vars stay removable in place (a var's own one-var view is frozen).
_SMALL = 8


def _owned(view: _View) -> bool:
    """Whether ``view`` alone reaches past the frozen part, up to its log's end.

    Such a view has one holder (the node computing its parent), which may
    change it and its log's end in place.
    """
    log = view.log
    return view.n > log.frozen and view.n == len(log.vars)


def _extend(view: _View, new: list[Var]) -> _View:
    """``view`` plus ``new`` (vars not in it), in place when it owns its log's end."""
    if not new:
        return view
    log, n = view.log, view.n
    if n != len(log.vars) or (n <= log.frozen and n <= _SMALL):
        log = _Log(log.vars[:n])  # another view grew this log past n, or too short to share
    elif n > log.frozen:  # owned: grow it in place
        _append(log, new)
        view.n = len(log.vars)
        return view
    _append(log, new)
    return _View(log, len(log.vars))


def _append(log: _Log, new: list[Var]) -> None:
    pos, vars_ = log.pos, log.vars
    for v in new:
        pos[v] = len(vars_)
        vars_.append(v)


def _union2(a: _View, b: _View) -> _View:
    """``a | b``, grown in the larger set (an owned one on a tie: no copy)."""
    if b.n > a.n or (b.n == a.n and not _owned(a)):
        a, b = b, a
    if not b.n or (b.log is a.log and b.n <= a.n):
        return a  # b is empty, or a prefix of the same log: a subset
    pos, n = a.log.pos, a.n
    return _extend(a, [v for v in b.vars() if (p := pos.get(v)) is None or p >= n])


def _union(views: list[_View]) -> _View:
    """The union (of none: the empty set)."""
    if not views:
        return _NONE  # an empty tuple
    base = views[0]
    for s in views[1:]:
        base = _union2(base, s)
    return base


def _drop(view: _View, v: Var) -> _View:
    """``view`` without ``v``: the bound var of a let or of a one-param function."""
    log, n = view.log, view.n
    p = log.pos.get(v)
    if p is None or p >= n:
        return view
    if p != n - 1:
        return _without(view, (v,))
    # Bound last, used last (the usual order of scopes): a shorter prefix.
    if not _owned(view):
        return _View(log, p)
    log.vars.pop()
    del log.pos[v]
    view.n = p
    return view


def _without(view: _View, drop: tuple[Var, ...] | list[Var]) -> _View:
    """``view`` without the vars of ``drop``.

    Vars at the end of the prefix are dropped by shortening it; vars the view
    owns (past ``frozen``, at the log's end) are removed in place by moving the
    last var into their place; anything else copies the set once.
    """
    log, n = view.log, view.n
    pos = log.pos
    gone = {v for v in drop if v in view}
    if not gone:
        return view
    vars_ = log.vars
    owned = _owned(view)
    while n and vars_[n - 1] in gone:
        n -= 1
        v = vars_[n]
        gone.discard(v)
        if owned and n >= log.frozen:
            vars_.pop()
            del pos[v]
    owned = owned and n == len(vars_) and n > log.frozen
    if gone:
        if owned and all(pos[v] >= log.frozen for v in gone):
            for v in gone:
                p = pos.pop(v)
                last = vars_.pop()
                if last is not v:
                    vars_[p] = last
                    pos[last] = p
            view.n = len(vars_)
            return view
        return _extend(_NONE, [v for v in vars_[:n] if v not in gone])
    if owned:
        view.n = n
        return view
    return view if n == view.n else _View(log, n)
