"""Which callbacks a node can match: the index by root op and each pattern's quick test.

Both rewrite drivers (:func:`~.rewrite.rewrite` and :func:`~.greedy.rewrite_greedy`)
ask a :class:`RuleIndex` for the callbacks to try at a node, so a node tries only the
callbacks whose pattern can match a call of its op (plus those whose pattern's root is
not an op call). Each callback also gets a *quick test* derived from its pattern: for a
call pattern with fixed arguments, the node's arity and, for each argument, the kind of
node the argument pattern needs (a constant, a call of some ops, a tuple, ...),
arguments swapped for ``add``/``multiply`` as the matcher swaps them. A quick test that
fails means the pattern cannot match, so the matcher is not run; most calls of an op
with rules (``add(exp(x), exp(y))`` against ``x + 0``) stop there. Per op, one weaker
test covers all its callbacks (:meth:`RuleIndex.gate`: "some argument is of a kind one
of them needs"; a constant rather than a call where a pattern names both): the greedy
walk runs it before the callbacks' own tests, and the scan a driver makes first
(:meth:`RuleIndex.may_fire`) runs only it, returning the program untouched when no node
passes.

Each callback also knows the ops its pattern needs (:func:`required_ops`: ops every
match contains, in every alternative). :meth:`RuleIndex.for_program` leaves out the
callbacks needing an op the program does not call, so a rule set of big patterns
(std's ``fuse``: GELU needs ``erf`` or ``tanh``, LayerNorm ``mean`` and ``sqrt``) costs
one walk on a program that has none of them, instead of digging into every
``multiply`` there. The rounds driver asks it each round, on the program as it is then.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..expr import Expr
from ..nodes import Call, Constant, Function, If, Let, Tuple, TupleGetItem, Var
from ..op import Op
from .matcher import compiled_pattern, pattern_op_name
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
)

__all__ = ["RuleIndex", "index_for", "ops_called", "quick_test", "required_ops", "root_ops"]

# Patterns that only add a condition to the pattern they wrap.
_WRAPPERS = (AttrPattern, TypePattern, DataTypePattern, ShapePattern)

# A node kind, what _node_kind returns: (the node classes allowed, for calls the op
# names allowed or None for any callee), or None for any node at all.

_NODE_KINDS: dict[type, type] = {
    ConstantPattern: Constant,
    VarPattern: Var,
    TuplePattern: Tuple,
    TupleGetItemPattern: TupleGetItem,
    IfPattern: If,
    LetPattern: Let,
    FunctionPattern: Function,
}


def root_ops(p: DFPattern) -> frozenset[str] | None:
    """The op names a call matched by ``p`` at its root can have; None when ``p`` can
    match other nodes (or calls of anything), so it must be tried everywhere."""
    t = type(p)
    if t is CallPattern:
        name = pattern_op_name(p)
        if name is None:
            return _callee_ops(p.op)
        names = {name}
        args = p.args or ()
        # TVM's re-association lets divide/multiply patterns match the other op.
        if name == "divide" and args and pattern_op_name(args[0]) == "multiply":
            names.add("multiply")
        if name == "multiply" and any(pattern_op_name(a) == "divide" for a in args):
            names.add("divide")
        return frozenset(names)
    if t is AltPattern:
        left, right = root_ops(p.left), root_ops(p.right)
        if left is None or right is None:
            return None
        return left | right
    if t in _WRAPPERS:
        return root_ops(p.pattern)
    if t is DominatorPattern:
        return root_ops(p.child)
    return None


_NONE: frozenset[str] = frozenset()


def required_ops(p: DFPattern) -> frozenset[str]:
    """Op names every expression ``p`` matches calls somewhere in it (a necessary
    condition: a program calling none of them has no match of ``p``)."""
    t = type(p)
    if t is CallPattern:
        name = pattern_op_name(p)
        out = {name} if name is not None else set()
        reassociates = name in ("divide", "multiply") and root_ops(p) != {name}
        for a in p.args or ():
            if reassociates and type(a) is CallPattern and \
                    pattern_op_name(a) in ("divide", "multiply"):
                # TVM's re-association regroups a * (b / c) as (a * b) / c: the same
                # operand patterns, under a divide and a multiply in another order
                for b in a.args or ():
                    out |= required_ops(b)
                out |= {"divide", "multiply"}
            else:
                out |= required_ops(a)
        return frozenset(out)
    if t is AltPattern:
        return required_ops(p.left) & required_ops(p.right)
    if t in _WRAPPERS:
        return required_ops(p.pattern)
    if t is DominatorPattern:
        return required_ops(p.parent) | required_ops(p.child)
    if t is TuplePattern:
        return frozenset().union(*(required_ops(f) for f in p.fields or ()))
    if t is TupleGetItemPattern:
        return required_ops(p.tuple)
    return _NONE


def _op_calls(root: Expr) -> Iterator[Call]:
    """Every call of an op under ``root``, each once (iterative, linear)."""
    seen: set[Expr] = set()
    mark = seen.add
    stack = [root]
    push = stack.append
    pop = stack.pop
    while stack:
        node = pop()
        t = type(node)
        if t is Call:
            callee = node.op
            if type(callee) is Op:
                yield node
                children: tuple[Expr, ...] = node.args
            else:
                children = (callee, *node.args)
        elif t is Tuple:
            children = node.fields
        elif t is TupleGetItem:
            children = (node.tuple_value,)
        elif t is Let:
            children = (node.value, node.body)
        elif t is If:
            children = (node.cond, node.true_branch, node.false_branch)
        elif t is Function:
            children = (node.body,)
        else:
            continue
        for child in children:
            if child not in seen:
                mark(child)
                push(child)


def ops_called(root: Expr) -> frozenset[str]:
    """The names of the ops called anywhere under ``root``."""
    return frozenset(call.op.name for call in _op_calls(root))


def _callee_ops(callee: DFPattern) -> frozenset[str] | None:
    t = type(callee)
    if t is ExprPattern and type(callee.expr) is Op:
        return frozenset({callee.expr.name})
    if t is AttrPattern:
        return _callee_ops(callee.pattern)
    if t is AltPattern:
        left, right = _callee_ops(callee.left), _callee_ops(callee.right)
        return None if left is None or right is None else left | right
    return None


def _node_kind(p: DFPattern) -> Any:
    """What a node must be for ``p`` to match it (a node kind, see above)."""
    t = type(p)
    kind = _NODE_KINDS.get(t)
    if kind is not None:
        return frozenset({kind}), None
    if t is CallPattern:
        return frozenset({Call}), root_ops(p)
    if t is ExprPattern:
        return frozenset({type(p.expr)}), None
    if t is AltPattern:
        left, right = _node_kind(p.left), _node_kind(p.right)
        if left is None or right is None:
            return None
        any_call = (Call in left[0] and left[1] is None) or (Call in right[0] and right[1] is None)
        ops = None if any_call else (left[1] or frozenset()) | (right[1] or frozenset())
        return left[0] | right[0], ops
    if t in _WRAPPERS:
        return _node_kind(p.pattern)
    if t is DominatorPattern:
        return _node_kind(p.child)
    return None  # a wildcard


def _predicate(kind: Any) -> Callable[[Expr], bool]:
    """A fast test of one node against the node kind ``kind``."""
    kinds, ops = kind
    if ops is None or Call not in kinds:
        if len(kinds) == 1:
            (only,) = kinds
            return lambda e: type(e) is only
        return lambda e: type(e) in kinds
    if kinds == {Call}:
        return lambda e: type(e) is Call and type(e.op) is Op and e.op.name in ops
    others = kinds - {Call}

    def test(e: Expr) -> bool:
        t = type(e)
        if t is Call:
            return type(e.op) is Op and e.op.name in ops
        return t in others

    return test


def quick_test(p: DFPattern, op_name: str | None = None) -> Callable[[Expr], bool] | None:
    """A cheap necessary condition for ``p`` to match a node (false: ``p`` cannot match
    it), or None when there is none worth testing. With ``op_name``, only for calls of
    that op (the alternatives that cannot match one are left out).

    Derived from a call pattern with fixed arguments: the arity, and the kind of each
    argument node (:func:`_node_kind`), both orders for two-argument ``add`` and
    ``multiply`` patterns (the matcher tries both). Alternatives test each side.
    """
    t = type(p)
    if t is AltPattern:
        sides = [p.left, p.right]
        if op_name is not None:
            sides = [q for q in sides if (root_ops(q) is None or op_name in root_ops(q))]
        tests = [quick_test(q, op_name) for q in sides]
        if not tests or any(test is None for test in tests):
            return None if tests else (lambda e: False)
        if len(tests) == 1:
            return tests[0]
        left, right = tests
        return lambda e: left(e) or right(e)
    if t in _WRAPPERS:
        return quick_test(p.pattern, op_name)
    if t is DominatorPattern:
        return quick_test(p.child, op_name)
    if t is not CallPattern or p.args is None:
        return None
    name = pattern_op_name(p)
    if name in ("divide", "multiply") and root_ops(p) != {name}:
        return None  # re-associated matches have other arguments
    n = len(p.args)
    kinds = [(i, _predicate(k)) for i, k in enumerate(map(_node_kind, p.args)) if k is not None]
    if n == 2 and name in ("add", "multiply") and kinds:
        return _commutative_test(kinds)
    if len(kinds) == 1:
        (index, fits), = kinds

        def test_one(e: Expr) -> bool:
            if type(e) is not Call:
                return False
            args = e.args
            return len(args) == n and fits(args[index])

        return test_one

    def test(e: Expr) -> bool:
        if type(e) is not Call:
            return False
        args = e.args
        if len(args) != n:
            return False
        for i, fits in kinds:
            if not fits(args[i]):
                return False
        return True

    return test


def _commutative_test(kinds: list[tuple[int, Callable[[Expr], bool]]]
                      ) -> Callable[[Expr], bool]:
    """The quick test of a two-argument add/multiply pattern, in either argument order."""
    if len(kinds) == 1:
        fits = kinds[0][1]

        def test_either(e: Expr) -> bool:
            if type(e) is not Call:
                return False
            args = e.args
            return len(args) == 2 and (fits(args[0]) or fits(args[1]))

        return test_either
    f0, f1 = kinds[0][1], kinds[1][1]

    def test(e: Expr) -> bool:
        if type(e) is not Call:
            return False
        args = e.args
        if len(args) != 2:
            return False
        a, b = args
        return (f0(a) and f1(b)) or (f0(b) and f1(a))

    return test


#: A callback, its quick test (None: none) and its compiled pattern (None: the generic
#: matcher's), as :meth:`RuleIndex.candidates` lists them.
Candidate = tuple[Any, "Callable[[Expr], bool] | None", Any]


# Per pattern: its root ops, its quick tests and its argument kinds by op name.
_ANALYSES: weakref.WeakKeyDictionary[DFPattern, tuple[Any, dict[Any, Any], dict[Any, Any]]] = \
    weakref.WeakKeyDictionary()


def _analysis(p: DFPattern) -> tuple[frozenset[str] | None, dict[Any, Any], dict[Any, Any]]:
    """``(root_ops(p), {op: quick_test(p, op)}, {op: _argument_kinds(p, op)})`` (op None
    when ``p`` has no root ops), computed once per pattern (patterns are immutable)."""
    found = _ANALYSES.get(p)
    if found is None:
        names = root_ops(p)
        keys = [None] if names is None else sorted(names)
        found = _ANALYSES[p] = (names, {k: quick_test(p, k) for k in keys},
                                {k: _argument_kinds(p, k) for k in keys})
    return found


def _argument_kinds(p: DFPattern, op_name: str | None) -> list[Any] | None:
    """Kinds such that a call ``p`` matches has an argument of one of them (one per
    alternative of ``p``); None when there is no such list."""
    t = type(p)
    if t is AltPattern:
        out: list[Any] = []
        for q in (p.left, p.right):
            names = root_ops(q)
            if op_name is not None and names is not None and op_name not in names:
                continue
            kinds = _argument_kinds(q, op_name)
            if kinds is None:
                return None
            out += kinds
        return out
    if t in _WRAPPERS:
        return _argument_kinds(p.pattern, op_name)
    if t is DominatorPattern:
        return _argument_kinds(p.child, op_name)
    if t is not CallPattern or p.args is None:
        return None
    name = pattern_op_name(p)
    if name in ("divide", "multiply") and root_ops(p) != {name}:
        return None
    kinds = [k for k in map(_node_kind, p.args) if k is not None]
    # the most selective: calls are everywhere, constants and vars are leaves
    leaves = [k for k in kinds if Call not in k[0]]
    return (leaves or kinds)[:1] or None


def _some_argument(kind_lists: list[list[Any] | None]) -> Callable[[Expr], bool] | None:
    """A test "some argument of the call is of one of these kinds" for the union of
    ``kind_lists`` (None: one of them is None, so any call may match)."""
    if any(kinds is None for kinds in kind_lists):
        return None
    node_kinds: set[type] = set()
    ops: set[str] | None = set()
    for kinds in kind_lists:
        for k_types, k_ops in kinds:  # type: ignore[union-attr]
            node_kinds |= k_types
            if Call in k_types:
                ops = None if k_ops is None or ops is None else ops | k_ops
    fits = _predicate((frozenset(node_kinds), None if ops is None else frozenset(ops)))

    def test(e: Expr) -> bool:
        for a in e.args:
            if fits(a):
                return True
        return False

    return test


# Recent indexes by the identities of their callbacks (kept alive with the index, so the
# ids stay theirs): a pass that runs on many functions builds its index once.
_INDEXES: OrderedDict[tuple[int, ...], RuleIndex] = OrderedDict()
_INDEXES_KEPT = 32


def index_for(callbacks: Sequence[Any]) -> RuleIndex:
    """The :class:`RuleIndex` of ``callbacks`` (a recent one for the same callbacks)."""
    key = tuple(x for cb in callbacks for x in (id(cb), id(cb.pattern)))
    index = _INDEXES.get(key)
    if index is not None:
        _INDEXES.move_to_end(key)
        return index
    index = _INDEXES[key] = RuleIndex(callbacks)
    if len(_INDEXES) > _INDEXES_KEPT:
        _INDEXES.popitem(last=False)
    return index


class RuleIndex:
    """The callbacks by the op at their pattern's root, in their given order, each with
    its :func:`quick_test` for that op. ``with_dominators`` lists the callbacks whose
    pattern holds a dominator pattern."""

    def __init__(self, callbacks: Sequence[Any]) -> None:
        self.callbacks = list(callbacks)
        self.patterns = [cb.pattern for cb in self.callbacks]  # what index_for's key names
        self.with_dominators = [cb for cb in self.callbacks if _has_dominator(cb.pattern)]
        self.by_op: dict[str, list[tuple[int, Candidate]]] = {}
        self.generic: list[tuple[int, Candidate]] = []
        for i, cb in enumerate(callbacks):
            names, tests, _ = _analysis(cb.pattern)
            fast = compiled_pattern(cb.pattern)
            if names is None:
                self.generic.append((i, (cb, tests[None], fast)))
            else:
                for name in names:
                    self.by_op.setdefault(name, []).append((i, (cb, tests[name], fast)))
        self.generic_only: list[Candidate] = [c for _, c in self.generic]
        self._merged: dict[str, list[Candidate]] = {}
        self.required = [required_ops(cb.pattern) for cb in self.callbacks]
        # the sub-indexes for_program made, by the callbacks they keep
        self._subsets: dict[tuple[int, ...], RuleIndex] = {}
        # Per op: one cheaper, weaker test for the scan: "some argument is of a kind
        # one of the callbacks needs an argument to be".
        self._any: dict[str, Callable[[Expr], bool] | None] = {
            name: _some_argument([_analysis(cb.pattern)[2].get(name) for _, (cb, _, _) in entries])
            for name, entries in self.by_op.items()}

    def for_program(self, root: Expr) -> RuleIndex:
        """This index without the callbacks that need an op ``root`` does not call
        (:func:`required_ops`); ``self`` when every callback may match."""
        if not any(self.required):
            return self
        called = ops_called(root)
        keep = tuple(i for i, need in enumerate(self.required) if need <= called)
        if len(keep) == len(self.callbacks):
            return self
        sub = self._subsets.get(keep)
        if sub is None:
            sub = self._subsets[keep] = RuleIndex([self.callbacks[i] for i in keep])
        return sub

    def for_op(self, name: str) -> list[Candidate]:
        """The candidates for a call of op ``name``, in the callbacks' order."""
        merged = self._merged.get(name)
        if merged is None:
            pairs = sorted(self.by_op.get(name, []) + self.generic, key=lambda pair: pair[0])
            merged = self._merged[name] = [c for _, c in pairs]
        return merged

    def gate(self, name: str) -> Callable[[Expr], bool] | None:
        """A test a call of op ``name`` passes whenever one of its candidates' quick tests
        does (weaker and cheaper than trying them all); None: no such test."""
        return None if self.generic else self._any.get(name)

    def candidates(self, node: Expr) -> list[Candidate]:
        """The candidates for ``node``: by its op for an op call, else the generic ones."""
        if type(node) is Call and type(node.op) is Op:
            return self.for_op(node.op.name)
        return self.generic_only

    def may_fire(self, root: Expr) -> bool:
        """Whether some node reachable from ``root`` passes the quick test of one of its
        candidates (every node does when a pattern's root is not an op call): when not,
        no callback can match anywhere. Iterative, linear, stops at the first such node."""
        if self.generic:
            return True
        tests = self._any
        for call in _op_calls(root):
            name = call.op.name
            if name in tests:
                test = tests[name]
                if test is None or test(call):
                    return True
        return False


def _has_dominator(p: DFPattern) -> bool:
    seen: set[int] = set()
    stack = [p]
    while stack:
        q = stack.pop()
        if type(q) is DominatorPattern:
            return True
        if id(q) not in seen:
            seen.add(id(q))
            stack.extend(q.children())
    return False
