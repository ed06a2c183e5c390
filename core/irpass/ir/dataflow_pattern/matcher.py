"""Matching a pattern against an expression (TVM's ``DFPatternMatcher`` semantics).

* A pattern node that appears twice in a pattern must match the same expression both
  times: the matcher remembers what each pattern node matched (its *memo*) and a
  pattern node met again only compares identities. A failed branch forgets what it
  recorded, so ``|`` alternatives and the commutative retry start clean.
* ``add``/``multiply`` call patterns also match with the two arguments swapped;
  ``(a * b) / c`` also matches ``a * (b / c)`` and ``b * (a / c)``, and
  ``a * (b / c)`` also matches ``(a * b) / c`` (TVM's associative cases).
* ``has_type``/``has_dtype``/``has_shape`` read the expression's ``checked_type``;
  a node without one is typed on demand (``infer_type`` of the sub-expression, which
  caches the types on its nodes), and a node that cannot be typed does not match.
  Run ``infer_type`` first on large programs to pay for typing once.
* A :class:`~.pattern.DominatorPattern` needs the graph around the match: the users
  of each node and its post-dominator, computed once per graph and only when a
  dominator pattern is tried.

Matching recurses over the pattern (bounded by its size) and never along the
expression, but for the path of a dominator pattern, walked with an explicit stack.

Tree patterns (no pattern node used twice, no function, ``if``, ``let`` or dominator
pattern, no divide/multiply re-association) are compiled once into nested closures
(:func:`compiled_pattern`) that match with the same results and bindings without the memo
bookkeeping: the common case of rewrite rules, tried at many nodes.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from ..._lazy import LazyModule
from ...errors import TypeInferenceError
from ..expr import Expr
from ..nodes import Call, Constant, Function, If, Let, Tuple, TupleGetItem, Var
from ..op import Op
from ..types import TensorType, Type
from .pattern import (
    AltPattern,
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DataTypePattern,
    DFPattern,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    IfPattern,
    LetPattern,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
)

# only constant patterns compare arrays; listing rule sets must not import numpy
np: Any = LazyModule("numpy", globals(), "np")

__all__ = ["compiled_pattern", "match"]


def match(pattern: DFPattern, expr: Expr) -> bool:
    """Whether ``pattern`` matches ``expr`` (``expr`` is the whole graph for dominators)."""
    if not isinstance(pattern, DFPattern):
        raise TypeError(f"match: pattern must be a DFPattern, got {type(pattern).__name__}")
    if not isinstance(expr, Expr):
        raise TypeError(f"match: expr must be an Expr, got {type(expr).__name__}")
    return Matcher(Graph(expr)).match(pattern, expr)


# -- the graph around an expression ------------------------------------------------------


def inputs_of(node: Expr) -> tuple[Expr, ...]:
    """The children of ``node`` that are graph nodes (ops are global, not part of it)."""
    t = type(node)
    if t is Call:
        op = node.op
        return node.args if type(op) is Op else (op, *node.args)
    if t is Tuple:
        return node.fields
    if t is TupleGetItem:
        return (node.tuple_value,)
    if t in (Let, If, Function):
        return node.children()
    return ()


class Graph:
    """An expression's nodes in post-order (children first, the root last), how many
    times each is used, and on demand its users and post-dominator tree."""

    __slots__ = ("root", "order", "uses", "_users", "_index", "_idom", "_depth")

    def __init__(self, root: Expr) -> None:
        self.root = root
        order: list[Expr] = []
        uses: dict[Expr, int] = {}
        seen: set[Expr] = set()
        # A None on the stack marks the node under it as ready (its children are done).
        stack: list[Any] = [root]
        push = stack.append
        pop = stack.pop
        append = order.append
        get = uses.get
        while stack:
            node = pop()
            if node is None:
                append(pop())
                continue
            if node in seen:
                continue
            seen.add(node)
            push(node)
            push(None)
            kids = inputs_of(node)
            for child in reversed(kids) if len(kids) > 1 else kids:
                uses[child] = get(child, 0) + 1
                if child not in seen:
                    push(child)
        self.order = order
        self.uses = uses
        self._users: dict[Expr, list[Expr]] | None = None
        self._index: dict[Expr, int] | None = None
        self._idom: list[int] | None = None
        self._depth: list[int] | None = None

    def users(self, node: Expr) -> list[Expr]:
        """The nodes that use ``node`` (one entry per use)."""
        if self._users is None:
            users: dict[Expr, list[Expr]] = {}
            for parent in self.order:
                for child in inputs_of(parent):
                    users.setdefault(child, []).append(parent)
            self._users = users
        return self._users.get(node, [])

    def _dominators(self) -> None:
        # Post-dominator tree as TVM's IndexedGraph builds it: a node's immediate
        # post-dominator is the least common ancestor of its users, computed root first.
        order = self.order
        index = {n: i for i, n in enumerate(order)}
        self.users(self.root)
        users = self._users or {}
        idom = [-1] * len(order)
        depth = [0] * len(order)
        for i in range(len(order) - 1, -1, -1):
            us = users.get(order[i])
            if not us:
                continue
            a = index[us[0]]
            for u in us[1:]:
                b = index[u]
                while a != b:
                    if depth[a] > depth[b]:
                        a = idom[a]
                    elif depth[b] > depth[a]:
                        b = idom[b]
                    else:
                        a, b = idom[a], idom[b]
            idom[i] = a
            depth[i] = depth[a] + 1
        self._index, self._idom, self._depth = index, idom, depth

    def post_dominates(self, a: Expr, b: Expr) -> bool:
        """Whether every path from ``b`` to the root goes through ``a`` (``a`` is ``b`` too)."""
        if self._idom is None:
            self._dominators()
        index, idom, depth = self._index, self._idom, self._depth
        assert index is not None and idom is not None and depth is not None
        ia, ib = index.get(a), index.get(b)
        if ia is None or ib is None:
            return False
        while ib != -1 and depth[ib] > depth[ia]:
            ib = idom[ib]
        return ib == ia


# -- helpers ------------------------------------------------------------------------------


def type_of(expr: Expr) -> Type | None:
    """``expr``'s type, inferred on demand; None when it has none (an op, an ill-typed node)."""
    t = expr._checked_type
    if t is not None:
        return t
    if type(expr) is Op:
        return None
    from ..type_infer import infer_type

    try:
        typed = infer_type(expr)
    except (TypeInferenceError, ValueError, TypeError):
        return None
    return typed._checked_type


def _same_expr(a: Expr, b: Expr) -> bool:
    """TVM's structural equality of an :class:`ExprPattern`'s expression and a node."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b) or ta is Op:
        return False
    if ta is Constant:
        # The common case (is_expr(const(1))): dtype, shape and values, no full walk.
        da, db = a.data, b.data
        return da.dtype == db.dtype and da.shape == db.shape and bool(np.array_equal(da, db))
    from ..structural import structural_equal

    return structural_equal(a, b)


def pattern_op_name(p: DFPattern) -> str | None:
    """The op name of a call pattern whose callee is ``is_op(name)``, else None."""
    if type(p) is CallPattern:
        callee = p.op
        if type(callee) is ExprPattern and type(callee.expr) is Op:
            return callee.expr.name
    return None


def _expr_op_name(e: Expr) -> str | None:
    if type(e) is Call and type(e.op) is Op:
        return e.op.name
    return None


def _op_property(op: Op, key: str) -> Any:
    """The registry property ``key`` of ``op`` as TVM names op attributes (None: none)."""
    if key == "TOpPattern":
        return int(op.pattern)
    if key == "TOpIsStateful":
        return bool(op.stateful)
    return None


_MISSING = object()


# -- the matcher --------------------------------------------------------------------------


class Matcher:
    """Matches patterns against nodes of one graph; ``memo`` holds the last match's
    bindings: each pattern node -> the expressions it matched, in match order."""

    __slots__ = ("graph", "memo", "matched", "memoize")

    def __init__(self, graph: Graph | None = None) -> None:
        self.graph = graph
        self.memo: dict[DFPattern, list[Expr]] = {}
        self.matched: list[DFPattern] = []
        self.memoize = True

    def match(self, pattern: DFPattern, expr: Expr) -> bool:
        """Whether ``pattern`` matches ``expr``; fills a fresh :attr:`memo`."""
        fast = compiled_pattern(pattern)
        if fast is not None:
            found: list[tuple[DFPattern, Expr]] = []
            if fast(expr, found):
                self.memo = {p: [e] for p, e in found}
                return True
            self.memo = {}
            return False
        self.memo = {}
        self.matched = []
        self.memoize = True
        return self.visit(pattern, expr)

    def visit(self, p: DFPattern, e: Expr) -> bool:
        memo = self.memo
        if self.memoize:
            seen = memo.get(p)
            if seen is not None:
                return seen[0] is e
        mark = len(self.matched)
        if _DISPATCH[type(p)](self, p, e):
            seen = memo.get(p)
            if seen is None:
                memo[p] = [e]
            else:
                seen.append(e)
            self.matched.append(p)
            return True
        self.clear(mark)
        return False

    def clear(self, mark: int) -> None:
        """Forget what was recorded since ``len(self.matched)`` was ``mark``."""
        matched = self.matched
        memo = self.memo
        while len(matched) > mark:
            p = matched.pop()
            seen = memo[p]
            seen.pop()
            if not seen:
                del memo[p]

    # -- one method per pattern kind --------------------------------------------------

    def _wildcard(self, p: WildcardPattern, e: Expr) -> bool:
        return True

    def _expr(self, p: ExprPattern, e: Expr) -> bool:
        return _same_expr(p.expr, e)

    def _var(self, p: VarPattern, e: Expr) -> bool:
        return type(e) is Var and (not p.name or p.name == e.name_hint)

    def _constant(self, p: ConstantPattern, e: Expr) -> bool:
        return type(e) is Constant

    def _alt(self, p: AltPattern, e: Expr) -> bool:
        return self.visit(p.left, e) or self.visit(p.right, e)

    def _args(self, pats: tuple[DFPattern, ...], args: tuple[Expr, ...]) -> bool:
        if len(pats) != len(args):
            return False
        visit = self.visit
        for q, a in zip(pats, args, strict=True):
            if not visit(q, a):
                return False
        return True

    def _call(self, p: CallPattern, e: Expr) -> bool:
        if type(e) is not Call:
            return False
        mark = len(self.matched)
        if self.visit(p.op, e.op):
            pats = p.args
            if pats is None:
                return True
            mark2 = len(self.matched)
            if self._args(pats, e.args):
                return True
            self.clear(mark2)
            if len(pats) == 2 and pattern_op_name(p) in ("add", "multiply"):
                if self._args((pats[1], pats[0]), e.args):
                    return True
                self.clear(mark2)
            return False
        self.clear(mark)
        return self._associate(p, e, mark)

    def _associate(self, p: CallPattern, e: Call, mark: int) -> bool:
        """TVM's divide/multiply re-association, tried when the callee did not match."""
        name = pattern_op_name(p)
        pats = p.args
        if pats is None or len(pats) != 2 or len(e.args) != 2:
            return False
        if name == "divide":
            inner = pats[0]
            if (
                pattern_op_name(inner) == "multiply"
                and inner.args is not None  # type: ignore[attr-defined]
                and len(inner.args) == 2  # type: ignore[attr-defined]
                and _expr_op_name(e) == "multiply"
                and "divide" in (_expr_op_name(e.args[0]), _expr_op_name(e.args[1]))
            ):
                for i in (0, 1):
                    div = CallPattern(p.op, (inner.args[i], pats[1]))  # type: ignore[attr-defined]
                    mul = CallPattern(inner.op, (inner.args[1 - i], div))  # type: ignore[attr-defined]
                    if self.visit(mul, e):
                        return True
                    self.clear(mark)
            return False
        if name == "multiply":
            for i in (0, 1):
                inner = pats[i]
                if (
                    pattern_op_name(inner) == "divide"
                    and inner.args is not None  # type: ignore[attr-defined]
                    and len(inner.args) == 2  # type: ignore[attr-defined]
                    and _expr_op_name(e) == "divide"
                    and "multiply" in (_expr_op_name(e.args[0]), _expr_op_name(e.args[1]))
                ):
                    mul = CallPattern(p.op, (inner.args[0], pats[1 - i]))  # type: ignore[attr-defined]
                    div = CallPattern(inner.op, (mul, inner.args[1]))  # type: ignore[attr-defined]
                    return self.visit(div, e)
        return False

    def _function(self, p: FunctionPattern, e: Expr) -> bool:
        if type(e) is not Function:
            return False
        if p.params is not None and not self._args(p.params, e.params):
            return False
        return self.visit(p.body, e.body)

    def _tuple(self, p: TuplePattern, e: Expr) -> bool:
        if type(e) is not Tuple:
            return False
        return p.fields is None or self._args(p.fields, e.fields)

    def _tuple_get_item(self, p: TupleGetItemPattern, e: Expr) -> bool:
        if type(e) is not TupleGetItem or (p.index != -1 and p.index != e.index):
            return False
        return self.visit(p.tuple, e.tuple_value)

    def _if(self, p: IfPattern, e: Expr) -> bool:
        return (
            type(e) is If
            and self.visit(p.cond, e.cond)
            and self.visit(p.true_branch, e.true_branch)
            and self.visit(p.false_branch, e.false_branch)
        )

    def _let(self, p: LetPattern, e: Expr) -> bool:
        return (
            type(e) is Let
            and self.visit(p.var, e.var)
            and self.visit(p.value, e.value)
            and self.visit(p.body, e.body)
        )

    # The structural part first: typing on demand is the expensive part. The conditions
    # themselves are the compiled patterns' (the *_holds functions below).
    def _attr(self, p: AttrPattern, e: Expr) -> bool:
        return self.visit(p.pattern, e) and _attr_holds(p, e)

    def _type(self, p: TypePattern, e: Expr) -> bool:
        return self.visit(p.pattern, e) and _type_holds(p, e)

    def _dtype(self, p: DataTypePattern, e: Expr) -> bool:
        return self.visit(p.pattern, e) and _dtype_holds(p, e)

    def _shape(self, p: ShapePattern, e: Expr) -> bool:
        return self.visit(p.pattern, e) and _shape_holds(p, e)

    def _dominator(self, p: DominatorPattern, e: Expr) -> bool:
        if not self.visit(p.child, e):
            return False
        graph = self.graph
        if graph is None:
            graph = self.graph = Graph(e)
        ok = self._matches_path(p, e)
        self.memoize = True
        if not ok:
            return False
        parents = self.memo.get(p.parent)
        return bool(parents) and graph.post_dominates(e, parents[0])

    def _matches_path(self, p: DominatorPattern, e: Expr) -> bool:
        """Every input of ``e`` is the parent (one node for all) or a path node whose
        own inputs are, recursively. Iterative; each path node is checked once."""
        checked = {e}
        stack = [e]
        while stack:
            node = stack.pop()
            for child in inputs_of(node):
                if type(node) is Call and child is node.op:
                    continue  # TVM's path runs through arguments, not callees
                self.memoize = True
                if self.visit(p.parent, child):
                    continue
                if child in checked:
                    continue
                # Path nodes are many: they are not held to one match.
                self.memoize = False
                if not self.visit(p.path, child):
                    self.memoize = True
                    return False
                checked.add(child)
                stack.append(child)
        self.memoize = True
        return True


_DISPATCH: dict[type, Callable[[Matcher, Any, Expr], bool]] = {
    WildcardPattern: Matcher._wildcard,
    ExprPattern: Matcher._expr,
    VarPattern: Matcher._var,
    ConstantPattern: Matcher._constant,
    AltPattern: Matcher._alt,
    CallPattern: Matcher._call,
    FunctionPattern: Matcher._function,
    TuplePattern: Matcher._tuple,
    TupleGetItemPattern: Matcher._tuple_get_item,
    IfPattern: Matcher._if,
    LetPattern: Matcher._let,
    AttrPattern: Matcher._attr,
    TypePattern: Matcher._type,
    DataTypePattern: Matcher._dtype,
    ShapePattern: Matcher._shape,
    DominatorPattern: Matcher._dominator,
}


# -- compiled tree patterns ---------------------------------------------------------------

#: A compiled pattern: ``m(expr, found)`` is whether it matches ``expr``; on success the
#: ``(pattern node, expression)`` bindings are appended to ``found`` (children first), on
#: failure ``found`` is as it was.
_Compiled = Callable[[Expr, list], bool]

_COMPILED: weakref.WeakKeyDictionary[DFPattern, Any] = weakref.WeakKeyDictionary()
_NOT_COMPILED = object()


def compiled_pattern(pattern: DFPattern) -> _Compiled | None:
    """``pattern`` compiled (see the module docstring): ``m(expr, found)`` is whether it
    matches ``expr``, appending the ``(pattern node, expression)`` bindings to ``found``
    (one per node of the pattern that took part); None when it is not a tree pattern of
    the kinds compiled here. Computed once per pattern."""
    found = _COMPILED.get(pattern)
    if found is None:
        found = _COMPILED[pattern] = _compile_tree(pattern)
    return found if found is not _NOT_COMPILED else None


def _compile_tree(pattern: DFPattern) -> Any:
    seen: set[int] = set()
    stack = [pattern]
    while stack:
        p = stack.pop()
        if id(p) in seen:
            return _NOT_COMPILED  # a pattern node used twice: the memo's identity rule
        seen.add(id(p))
        stack.extend(p.children())
    try:
        return _compile(pattern)
    except _Unsupported:
        return _NOT_COMPILED


class _Unsupported(Exception):
    """A pattern kind the compiler leaves to the generic matcher."""


def _compile(p: DFPattern) -> _Compiled:
    t = type(p)
    if t is WildcardPattern:
        def wildcard(e: Expr, found: list) -> bool:
            found.append((p, e))
            return True
        return wildcard
    if t is ConstantPattern or (t is VarPattern and not p.name):
        kind = Constant if t is ConstantPattern else Var

        def leaf(e: Expr, found: list) -> bool:
            if type(e) is kind:
                found.append((p, e))
                return True
            return False
        return leaf
    if t is VarPattern:
        name = p.name

        def named_var(e: Expr, found: list) -> bool:
            if type(e) is Var and e.name_hint == name:
                found.append((p, e))
                return True
            return False
        return named_var
    if t is ExprPattern:
        target = p.expr
        if type(target) is Op:
            def op_is(e: Expr, found: list) -> bool:
                if e is target:
                    found.append((p, e))
                    return True
                return False
            return op_is

        def same(e: Expr, found: list) -> bool:
            if _same_expr(target, e):
                found.append((p, e))
                return True
            return False
        return same
    if t is AltPattern:
        left, right = _compile(p.left), _compile(p.right)

        def alt(e: Expr, found: list) -> bool:
            if left(e, found) or right(e, found):
                found.append((p, e))
                return True
            return False
        return alt
    if t is CallPattern:
        return _compile_call(p)
    if t is TuplePattern:
        return _compile_tuple(p)
    if t is TupleGetItemPattern:
        inner = _compile(p.tuple)
        index = p.index

        def getitem(e: Expr, found: list) -> bool:
            if type(e) is not TupleGetItem or (index != -1 and index != e.index):
                return False
            if inner(e.tuple_value, found):
                found.append((p, e))
                return True
            return False
        return getitem
    if t in _CONDITIONS:
        inner = _compile(p.pattern)
        check = _CONDITIONS[t]

        def conditioned(e: Expr, found: list) -> bool:
            mark = len(found)
            if not inner(e, found):
                return False
            if check(p, e):
                found.append((p, e))
                return True
            del found[mark:]
            return False
        return conditioned
    raise _Unsupported


def _compile_call(p: CallPattern) -> _Compiled:
    name = pattern_op_name(p)
    pats = p.args
    if name == "divide" and pats and pattern_op_name(pats[0]) == "multiply":
        raise _Unsupported  # TVM's re-association: the generic matcher's job
    if name == "multiply" and pats and any(pattern_op_name(a) == "divide" for a in pats):
        raise _Unsupported
    callee_pattern = p.op
    callee = _compile(callee_pattern)
    if type(callee_pattern) is ExprPattern and type(callee_pattern.expr) is Op:
        callee = None  # compared inline: the common is_op(name)(...)
        op = callee_pattern.expr
    if pats is None:
        if callee is None:
            def op_any_args(e: Expr, found: list) -> bool:
                if type(e) is Call and e.op is op:
                    found.append((callee_pattern, op))
                    found.append((p, e))
                    return True
                return False
            return op_any_args

        def any_args(e: Expr, found: list) -> bool:
            if type(e) is not Call:
                return False
            if callee(e.op, found):
                found.append((p, e))
                return True
            return False
        return any_args
    # a wildcard argument is bound without a call (None)
    specs = [(a, None if type(a) is WildcardPattern else _compile(a)) for a in pats]
    n = len(specs)
    swapped = list(reversed(specs)) if n == 2 and name in ("add", "multiply") else None

    def bind(specs: list, values: tuple, found: list) -> bool:
        for (q, m), a in zip(specs, values):  # noqa: B905 (lengths checked)
            if m is None:
                found.append((q, a))
            elif not m(a, found):
                return False
        return True

    def call(e: Expr, found: list) -> bool:
        if type(e) is not Call:
            return False
        values = e.args
        mark = len(found)
        if callee is None:
            if e.op is not op:
                return False
            found.append((callee_pattern, op))
        elif not callee(e.op, found):
            return False
        if len(values) == n:
            inner = len(found)
            if bind(specs, values, found):
                found.append((p, e))
                return True
            del found[inner:]
            if swapped is not None:
                # the second pattern against the first argument, as the generic matcher
                if bind(swapped, values, found):
                    found.append((p, e))
                    return True
                del found[inner:]
        del found[mark:]
        return False
    return call


def _compile_tuple(p: TuplePattern) -> _Compiled:
    if p.fields is None:
        def any_tuple(e: Expr, found: list) -> bool:
            if type(e) is Tuple:
                found.append((p, e))
                return True
            return False
        return any_tuple
    fields = [_compile(f) for f in p.fields]
    n = len(fields)

    def tuple_(e: Expr, found: list) -> bool:
        if type(e) is not Tuple or len(e.fields) != n:
            return False
        mark = len(found)
        for m, f in zip(fields, e.fields):  # noqa: B905 (lengths checked)
            if not m(f, found):
                del found[mark:]
                return False
        found.append((p, e))
        return True
    return tuple_


def _attr_holds(p: AttrPattern, e: Expr) -> bool:
    t = type(e)
    if t is Op:
        for key, want in p.attrs.items():
            got = _op_property(e, key)
            if got is None or got != want:
                return False
        return True
    if t is Call or t is Function:
        have = e.attrs
        for key, want in p.attrs.items():
            got = have.get(key, _MISSING)
            if got is _MISSING or got != want:
                return False
        return True
    return False


def _type_holds(p: TypePattern, e: Expr) -> bool:
    return type_of(e) == p.type


def _dtype_holds(p: DataTypePattern, e: Expr) -> bool:
    t = type_of(e)
    return type(t) is TensorType and t.dtype == p.dtype


def _shape_holds(p: ShapePattern, e: Expr) -> bool:
    t = type_of(e)
    if type(t) is not TensorType or len(t.shape) != len(p.shape):
        return False
    return all(w is None or w == d for w, d in zip(p.shape, t.shape, strict=True))


# The patterns that add a condition on the node their inner pattern matched.
_CONDITIONS: dict[type, Callable[[Any, Expr], bool]] = {
    AttrPattern: _attr_holds,
    TypePattern: _type_holds,
    DataTypePattern: _dtype_holds,
    ShapePattern: _shape_holds,
}
