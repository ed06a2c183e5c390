"""Rewriting and partitioning with patterns: ``rewrite``, ``DFPatternCallback``, ``partition``.

Both work as TVM's ``PatternRewriter``/``PatternPartitioner`` do, in two sweeps over the
program's graph per round:

1. *Grouping*, from the root down (reverse post-order): at each node not yet inside a
   match, the candidate patterns are tried; a match becomes a *group*: its interior (the
   matched nodes between the root and the inputs) is claimed, so matches never overlap
   and the outermost match wins. A match is refused when an interior node overlaps an
   earlier group, or is used outside the group by a node the group's root does not
   post-dominate (fusing it would duplicate or break the dataflow).
2. *Rebuilding*, bottom-up: every node is rebuilt over its rewritten children; at a
   group root the callback (or the partition function call) replaces it.

``rewrite`` indexes the callbacks by the op at their pattern's root, so a node tries
only the callbacks that can match it (and those whose root is not an op call), after
their quick tests (:mod:`.index`): a round costs O(nodes x pattern size). Both sweeps
are loops over a post-order list: any depth. The greedy driver of :mod:`.greedy` applies
the same callbacks innermost first, in one walk.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...errors import IRPassError
from ..expr import Expr
from ..gcpause import gc_paused
from ..module import IRModule
from ..nodes import Call, Constant, Function, If, Let, Tuple, TupleGetItem, Var
from ..op import Op
from ..type_infer import carry_type
from .context import RewriteContext, enter, leave
from .index import RuleIndex, index_for
from .matcher import Graph, Matcher, inputs_of, type_of
from .pattern import (
    AltPattern,
    CallPattern,
    ConstantPattern,
    DataTypePattern,
    DFPattern,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    ShapePattern,
    TuplePattern,
    TypePattern,
)

__all__ = [
    "DFPatternCallback",
    "RewriteLimitError",
    "rewrite",
    "partition",
    "prepare",
    "DEFAULT_MAX_ROUNDS",
    "PARTITIONED_FROM_PATTERN",
]

#: How many rounds :func:`rewrite` runs at most before it gives up (TVM's bound is 100).
DEFAULT_MAX_ROUNDS = 100

#: The function attribute :func:`partition` sets to the matched ops' names (as TVM).
PARTITIONED_FROM_PATTERN = "PartitionedFromPattern"

_unchecked_call = Call._unchecked


class RewriteLimitError(IRPassError, RuntimeError):
    """:func:`rewrite` did not reach a fixed point within its bound on rounds.

    ``callbacks`` are the callbacks that still fired in the last round, in the order
    they first did (the message names them too).
    """

    def __init__(self, message: str, callbacks: Sequence[DFPatternCallback] = ()) -> None:
        super().__init__(message)
        self.callbacks: list[DFPatternCallback] = list(callbacks)


class DFPatternCallback:
    """A rewrite rule: set ``self.pattern`` and override :meth:`callback`.

    ``require_type``: the program is type-inferred before each round, so the callback
    can read ``checked_type``. ``rewrite_once``: the callback runs in the first round
    only; the others run until the program stops changing.
    """

    def __init__(self, require_type: bool = False, rewrite_once: bool = False) -> None:
        self.pattern: DFPattern | None = None
        self.require_type = require_type
        self.rewrite_once = rewrite_once

    def callback(self, pre: Expr, post: Expr, node_map: dict[DFPattern, list[Expr]]) -> Expr:
        """The replacement of a match.

        ``pre`` is the matched node as it was in the input of the round, ``post`` the
        same node rebuilt over its rewritten inputs, ``node_map`` maps each pattern node
        to the expressions it matched (rewritten forms), in match order. Return ``post``
        to keep the node.
        """
        raise NotImplementedError(f"{type(self).__name__} does not define callback()")

    def rewrite(self, expr: Expr, mod: IRModule | None = None) -> Expr:
        """:func:`rewrite` with this callback alone."""
        return rewrite(self, expr, mod)

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(pattern={self.pattern!r})"


def _callback_name(cb: DFPatternCallback) -> str:
    return type(cb).__qualname__


# -- pattern analyses (cached per pattern) ----------------------------------------------

_ORDER_CACHE: weakref.WeakKeyDictionary[DFPattern, list[DFPattern]] = weakref.WeakKeyDictionary()


def pattern_order(pattern: DFPattern) -> list[DFPattern]:
    """The nodes of ``pattern``'s graph in post-order (children first), each once."""
    cached = _ORDER_CACHE.get(pattern)
    if cached is not None:
        return cached
    order: list[DFPattern] = []
    seen: set[int] = set()
    stack: list[tuple[DFPattern, bool]] = [(pattern, False)]
    while stack:
        node, ready = stack.pop()
        if ready:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for child in reversed(node.children()):
            if id(child) not in seen:
                stack.append((child, False))
    _ORDER_CACHE[pattern] = order
    return order


def _reads_types(pattern: DFPattern) -> bool:
    return any(type(p) in (TypePattern, DataTypePattern, ShapePattern)
               for p in pattern_order(pattern))


# -- grouping -----------------------------------------------------------------------------


def _embed_const(matcher: Matcher, expr: Expr, p: DFPattern) -> bool:
    """Whether a constant matched by leaf ``p`` stays inside the group (TVM's EmbedConst)."""
    if type(expr) is not Constant:
        return False
    t = type(p)
    if t is ConstantPattern:
        return True
    if t is ExprPattern:
        return type(p.expr) is Constant
    if t is AltPattern:
        side = p.left if Matcher(matcher.graph).match(p.left, expr) else p.right
        return _embed_const(matcher, expr, side)
    return False


class _Group:
    __slots__ = ("root", "node_map", "inputs", "interior", "owner")

    def __init__(self, root: Expr, node_map: dict[DFPattern, list[Expr]], inputs: list[Expr],
                 interior: dict[Expr, None], owner: Any) -> None:
        self.root = root
        self.node_map = node_map
        self.inputs = inputs
        self.interior = interior
        self.owner = owner


def _make_group(
    matcher: Matcher, pattern: DFPattern, root: Expr, graph: Graph, claimed: dict[Expr, Expr],
    owner: Any,
) -> _Group | None:
    """The group of the match ``matcher`` just found at ``root``, or None if it is refused."""
    memo = matcher.memo
    order = pattern_order(pattern)
    fuzzy: set[Expr] = set()
    for pn in order:
        t = type(pn)
        if t is DominatorPattern:
            # Nodes on a dominator's path and its parent are inside the group.
            for q in (pn.parent, pn.path):
                fuzzy.update(memo.get(q, ()))
        elif t is FunctionPattern:
            for func in memo.get(pn, ()):
                fuzzy.update(func.params)
                body_nodes = Graph(func.body).order
                fuzzy.update(body_nodes)
    inputs: dict[Expr, None] = {}

    def make_input(x: Expr, pn: DFPattern) -> None:
        if x in inputs or x in fuzzy or type(x) in (Op, Function) or _embed_const(matcher, x, pn):
            return
        inputs[x] = None

    for pn in order:
        t = type(pn)
        if t is TuplePattern and pn.fields is None:
            for m in memo.get(pn, ()):
                for f in m.fields:
                    make_input(f, pn)
        elif t is CallPattern and pn.args is None:
            for m in memo.get(pn, ()):
                for a in m.args:
                    make_input(a, pn)
        elif not pn.children():
            for m in memo.get(pn, ()):
                make_input(m, pn)
    # The interior: what the root reaches before the inputs (functions are opaque).
    interior: dict[Expr, None] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if node in interior or node in inputs:
            continue
        interior[node] = None
        if type(node) is not Function:
            stack.extend(inputs_of(node))
    if len(interior) > 1:
        internal: dict[Expr, int] = {}
        for node in interior:
            if type(node) is not Function:
                for child in inputs_of(node):
                    if child in interior:
                        internal[child] = internal.get(child, 0) + 1
        uses = graph.uses
        for node in interior:
            if type(node) in (Constant, Function, Var):
                continue  # shareable leaves: copying them into the group is harmless
            if node in claimed:
                return None  # overlaps an earlier (outer) group
            if node is not root and uses.get(node, 0) > internal.get(node, 0):
                for user in graph.users(node):
                    if user not in interior and not graph.post_dominates(root, user):
                        return None  # an outside use the root does not collect
    elif root in claimed:
        return None
    return _Group(root, memo, list(inputs), interior, owner)


def _pre_partitioned(node: Expr, skip: set[Expr]) -> bool:
    """Skip functions partition made (and their bodies) as match roots, as TVM does."""
    if node in skip:
        return True
    if type(node) is Function and PARTITIONED_FROM_PATTERN in node.attrs:
        skip.add(node)
        skip.update(Graph(node.body).order)
        return True
    return False


# -- rebuilding ---------------------------------------------------------------------------


def _rebuild(graph: Graph, groups: dict[Expr, _Group],
             at_root: Callable[[_Group, Expr, dict[Expr, Expr]], Expr]) -> Expr:
    """Rebuild ``graph`` bottom-up; at a group root the node becomes ``at_root(group, post,
    memo)``. ``memo`` maps each changed node to its new form (unchanged ones are absent)."""
    memo: dict[Expr, Expr] = {}
    get = memo.get
    for node in graph.order:
        t = type(node)
        post: Expr = node
        if t is Call:
            args = node.args
            new_args = tuple([get(a, a) for a in args])
            op = node.op
            if type(op) is Op:
                if new_args != args:
                    # over replacements of the same types (see type_built), the type holds
                    post = carry_type(node, _unchecked_call(op, new_args, node.attrs))
            else:
                new_op = get(op, op)
                if new_op is not op or new_args != args:
                    post = Call(new_op, new_args, node.attrs)
        elif t is Tuple:
            fields = node.fields
            new_fields = tuple([get(f, f) for f in fields])
            if new_fields != fields:
                post = carry_type(node, Tuple(new_fields))
        elif t is TupleGetItem:
            value = get(node.tuple_value, node.tuple_value)
            if value is not node.tuple_value:
                post = carry_type(node, TupleGetItem(value, node.index))
        elif t is If:
            parts = (node.cond, node.true_branch, node.false_branch)
            new_parts = tuple([get(x, x) for x in parts])
            if new_parts != parts:
                post = If(*new_parts)
        elif t is Let:
            parts = (node.var, node.value, node.body)
            new_parts = tuple([get(x, x) for x in parts])
            if new_parts != parts:
                post = Let(*new_parts)
        elif t is Function:
            params = tuple([get(p, p) for p in node.params])
            body = get(node.body, node.body)
            if params == node.params:
                params = node.params  # it binds the types kept below (see carry_type)
            if params is not node.params or body is not node.body:
                post = Function(params, body, node.ret_type, node.attrs)
        group = groups.get(node)
        if group is not None:
            post = at_root(group, post, memo)
        if post is not node:
            memo[node] = post
    root = graph.root
    return get(root, root)


# -- rewrite ------------------------------------------------------------------------------


def _check_callbacks(callbacks: Any) -> list[DFPatternCallback]:
    if isinstance(callbacks, RuleIndex):
        return callbacks.callbacks  # checked when the index was made
    if isinstance(callbacks, DFPatternCallback):
        callbacks = [callbacks]
    if not isinstance(callbacks, Sequence):
        raise TypeError(f"rewrite: callbacks must be a DFPatternCallback or a list of them, "
                        f"got {type(callbacks).__name__}")
    out = list(callbacks)
    for i, cb in enumerate(out):
        if not isinstance(cb, DFPatternCallback):
            raise TypeError(f"rewrite: callbacks[{i}] must be a DFPatternCallback, "
                            f"got {type(cb).__name__}")
        if not isinstance(cb.pattern, DFPattern):
            raise TypeError(f"rewrite: {_callback_name(cb)}.pattern must be a DFPattern, "
                            f"got {cb.pattern!r}")
    return out


def prepare(callbacks: DFPatternCallback | Sequence[DFPatternCallback]) -> RuleIndex:
    """``callbacks`` checked and indexed once, for many :func:`rewrite` or
    :func:`~.greedy.rewrite_greedy` calls (a pass that runs on every function of a
    module): both accept the result in place of the callbacks."""
    return index_for(_check_callbacks(callbacks))


def rewrite(
    callbacks: DFPatternCallback | Sequence[DFPatternCallback] | RuleIndex,
    expr: Expr,
    mod: IRModule | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    options: Mapping[str, Any] | None = None,
) -> Expr:
    """Rewrite ``expr`` with ``callbacks`` until it stops changing; return the result.

    Each round groups the matches of every active callback (earlier callbacks win at a
    node, outer matches over inner ones, see the module docstring) and rebuilds the
    program bottom-up, calling each match's callback. Rounds repeat until one leaves
    the program structurally unchanged; ``rewrite_once`` callbacks take part in the
    first round only. ``mod`` resolves global vars when a callback requires types.
    Unlike TVM, which runs one pass per callback (so a later callback sees an earlier
    one's output in the same round), all callbacks share one walk per round: a node
    tries only the callbacks its op can match. A match that only an earlier
    callback's replacement creates is found in the next round, which for
    ``rewrite_once`` callbacks means not at all. Patterns with type constraints get
    the program typed once per round (errors ignored: untyped nodes do not match).
    A round in which no node passes a candidate's quick test (:mod:`.index`) returns
    the program as it is, without building anything. ``options`` are handed to the
    callbacks as ``rewrite_context().options`` (:mod:`.context`).
    ``expr`` itself is never changed. Raises :class:`RewriteLimitError` naming the
    callbacks still firing after ``max_rounds`` rounds, and ``TypeError`` naming the
    callback when one returns something that is not an expression.
    """
    from ..structural import structural_equal
    from ..type_infer import infer_type

    cbs = _check_callbacks(callbacks)
    if not isinstance(expr, Expr):
        raise TypeError(f"rewrite: expr must be an Expr, got {type(expr).__name__}")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise ValueError(f"rewrite: max_rounds must be an int >= 1, got {max_rounds!r}")
    current = expr
    rounds = 0
    index = callbacks if isinstance(callbacks, RuleIndex) else index_for(cbs)
    while True:
        active = [cb for cb in cbs if rounds == 0 or not cb.rewrite_once]
        if not active:
            return current
        if rounds == 1 and len(active) < len(cbs):
            index = index_for(active)
        if any(cb.require_type for cb in active):
            current = infer_type(current, mod)
        elif current._checked_type is None and any(_reads_types(cb.pattern) for cb in active):
            # Type the program once per round: typing node by node on demand would
            # walk the program below each node again (quadratic on a chain).
            try:
                current = infer_type(current, mod)
            except (IRPassError, ValueError, TypeError):
                pass  # untyped programs: the type patterns just do not match
        # The round's tables (graph, memo, groups) die inside the pause, so the
        # collection that ends it scans only what the round keeps (irpass.ir.gcpause).
        # the callbacks whose patterns need ops the program calls (see the index)
        round_index = index.for_program(current)
        if not round_index.may_fire(current):
            return current
        with gc_paused():
            new, fired = _rewrite_round(current, round_index, mod, options)
        rounds += 1
        if new is current or structural_equal(new, current):
            return new
        current = new
        if rounds >= max_rounds:
            firing = list(dict.fromkeys(fired))
            names = ", ".join(_callback_name(cb) for cb in firing) or "?"
            raise RewriteLimitError(
                f"rewrite: no fixed point after {max_rounds} rounds; still firing in the "
                f"last round: {names} (conflicting or ever-growing rewrites?)",
                firing,
            )


def _claim_groups(graph: Graph, candidates: Callable[[Expr], Sequence[Any]]
                  ) -> dict[Expr, _Group]:
    """The matches of one round (of rewrite or partition), by root: each node, outputs
    first, that no earlier match holds inside it, claims as its group the first of its
    ``candidates(node)`` (``(callback, quick test or None, _)``, as a
    :class:`RuleIndex` lists them) whose pattern matches there and makes a group."""
    matcher = Matcher(graph)
    claimed: dict[Expr, Expr] = {}
    groups: dict[Expr, _Group] = {}
    skip: set[Expr] = set()
    order = graph.order
    for i in range(len(order) - 1, -1, -1):
        node = order[i]
        if node in claimed or _pre_partitioned(node, skip):
            continue
        for cb, test, _ in candidates(node):
            if test is not None and not test(node):
                continue
            if matcher.match(cb.pattern, node):
                group = _make_group(matcher, cb.pattern, node, graph, claimed, cb)
                if group is not None:
                    groups[node] = group
                    for n in group.interior:
                        claimed[n] = node
                    break
    return groups


def _rewrite_round(expr: Expr, index: RuleIndex, mod: IRModule | None,
                   options: Mapping[str, Any] | None) -> tuple[Expr, list[DFPatternCallback]]:
    graph = Graph(expr)
    groups = _claim_groups(graph, index.candidates)
    fired: list[DFPatternCallback] = []

    def at_root(group: _Group, post: Expr, memo: dict[Expr, Expr]) -> Expr:
        cb = group.owner
        get = memo.get
        node_map = {p: [get(e, e) for e in es] for p, es in group.node_map.items()}
        out = cb.callback(group.root, post, node_map)
        if not isinstance(out, Expr):
            raise TypeError(
                f"rewrite: {_callback_name(cb)}.callback returned {type(out).__name__} "
                f"{out!r:.80}, not an Expr"
            )
        if out is not post:
            fired.append(cb)
        return out

    if not groups:
        return expr, fired
    uses = graph.uses
    token = enter(RewriteContext(lambda e: uses.get(e, 0), mod, options))
    try:
        return _rebuild(graph, groups, at_root), fired
    finally:
        leave(token)


# -- partition ----------------------------------------------------------------------------


def _label(node: Expr) -> str:
    t = type(node)
    if t is Call:
        return f"{node.op.name}_" if type(node.op) is Op else "Call_"
    if t is Tuple:
        return "Tuple_"
    if t is Function:
        return "Function"
    if t is TupleGetItem:
        return f"TupleGetItem{node.index}_"
    if t is Let:
        return "Let_"
    if t is If:
        return "If_"
    return ""


def _group_name(root: Expr, inputs: dict[Expr, Var]) -> str:
    """TVM's ``PartitionedFromPattern`` value: the group's node labels in post-order."""
    parts: list[str] = []
    seen: set[Expr] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if ready:
            parts.append(_label(node))
            continue
        if node in seen or node in inputs:
            continue
        seen.add(node)
        stack.append((node, True))
        for child in reversed(node.children()):
            if type(child) is not Op and child not in seen and child not in inputs:
                stack.append((child, False))
    return "".join(parts)


def partition(
    pattern: DFPattern,
    expr: Expr,
    attrs: Mapping[str, Any] | None = None,
    check: Callable[[Expr], bool] | None = None,
) -> Expr:
    """Replace each match of ``pattern`` in ``expr`` by a call of a new function.

    Matches are grouped as by :func:`rewrite` (no overlaps, the outermost wins). The
    function's params stand for the match's inputs (the expressions its leaf patterns
    matched, in the pattern's post-order; each param is annotated with its input's
    type when the program can be typed; constants matched by ``is_constant()`` or
    ``is_expr(constant)`` stay inside), its body is the matched subgraph and its attrs
    are ``PartitionedFromPattern`` (the matched nodes' ops, TVM's spelling) then
    ``attrs``; the call passes the inputs. ``check(pre)``, when given, must return true
    for a match to be replaced. ``expr`` itself is never changed.
    """
    if not isinstance(pattern, DFPattern):
        raise TypeError(f"partition: pattern must be a DFPattern, got {type(pattern).__name__}")
    if not isinstance(expr, Expr):
        raise TypeError(f"partition: expr must be an Expr, got {type(expr).__name__}")
    if type(pattern) is FunctionPattern:
        warnings.warn("partition: a function that is not called cannot be partitioned; "
                      "expression returned unchanged", stacklevel=2)
        return expr
    with gc_paused():
        return _partition(pattern, expr, attrs, check)


def _partition(
    pattern: DFPattern,
    expr: Expr,
    attrs: Mapping[str, Any] | None = None,
    check: Callable[[Expr], bool] | None = None,
) -> Expr:
    from ..nodes import Var as _Var

    extra = dict(attrs or {})
    if expr._checked_type is None:
        # Type the program once (caches on its nodes) for the params' annotations,
        # rather than each input on its own (quadratic on a chain).
        from ..type_infer import infer_type

        try:
            infer_type(expr)
        except (IRPassError, ValueError, TypeError):
            pass  # an untyped program: params stay unannotated, as TVM's
    graph = Graph(expr)
    owner = DFPatternCallback()
    owner.pattern = pattern
    only = [(owner, None, None)]
    groups = _claim_groups(graph, lambda node: only)
    if not groups:
        return expr
    from ..functor import ExprMutator

    number = [0]

    def at_root(group: _Group, post: Expr, memo: dict[Expr, Expr]) -> Expr:
        if check is not None and not check(group.root):
            return post
        k = number[0]
        number[0] += 1
        # irpass functions need typed params to be typed and run: a param takes its
        # input's type when the input has (or can be given) one, else none (as TVM).
        params = {
            x: _Var(f"FunctionVar_{k}_{j}", type_of(x)) for j, x in enumerate(group.inputs)
        }
        extractor = ExprMutator()
        extractor.memo.update(params)
        body = extractor.visit(group.root)
        fattrs = {PARTITIONED_FROM_PATTERN: _group_name(group.root, params), **extra}
        func = Function(list(params.values()), body, None, fattrs)
        get = memo.get
        return Call(func, [get(x, x) for x in group.inputs])

    return _rebuild(graph, groups, at_root)
