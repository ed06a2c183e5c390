"""CombineParallelDense: merge parallel dense/matmul calls on one input into one call.

Follows TVM Relay's ``CombineParallelDense`` in its concatenate-and-split form
(TVM's ``to_batch=False``): in each function, at least ``min_num_branches``
calls ``nn.dense(x, W_i)`` (or ``matmul(x, W_i)``) that read the very same data
node ``x``, whose weights are constants of one dtype and the same shape but
along the output axis, with equal attributes, become::

    %w = concatenate((W_1, ..., W_k), axis=0)          # axis=1 for matmul's (K, N_i)
    %y = nn.dense(x, %w)                                # one call, N_1 + ... + N_k units
    %s = split(%y, indices_or_sections=[N_1, N_1 + N_2, ...], axis=-1)
    ... %s.0, %s.1, ... in place of the original calls

``FoldConstant`` (after this pass in the default pipeline) turns the
``concatenate`` of constants into one constant. Like TVM's pass it also moves
into the combined call what follows every branch in the same way, level by
level, while each branch's current end has a single use whose user is

* a unary elementwise op (``OpPattern.ELEMWISE``, e.g. ``nn.relu``) with the
  same attributes in every branch, or
* a binary broadcast op (``add``, ``multiply``, ...) of the branch and a
  constant that varies along the last axis only -- shape ``(N_i,)`` or
  ``(1, ..., 1, N_i)``, one rank in all branches, no bigger than the branch's
  -- on the same side in every branch (the bias ``add`` after the q/k/v
  projections of a transformer); the constants are concatenated along their
  last axis. Constants of one element that are equal in every branch (the
  same scale everywhere) are used as they are;
* ``nn.bias_add`` along the last axis of a 1-D constant bias,

and the split then comes after the last follower folded.

What is combined: only calls with a single use each (a branch whose dense
result is read twice stays as it is), weights that are ``Constant`` nodes
(dense: 2-D ``(N_i, K)``; matmul: the second operand, 2-D ``(K, N_i)``; other
ranks are skipped), equal ``out_dtype`` for dense (``units`` only restates
the weight's rows: the combined call states the sum when every branch states
its own), and calls in the same region -- the same function body or the same
branch of an ``if`` -- so no branch computes what only another one needs.
Calls inside ``Primitive`` or ``SkipOptimization`` functions are never
touched. Branches with the same data input are grouped by what makes them
combinable (op, weight dtype and reduction size, attributes), and each group
of at least ``min_num_branches`` is combined on its own.

Symbolic shapes: the data's dims may be symbolic (batch, sequence); the
weights are constants, so every ``N_i`` and the split indices are static.

Algorithm: one iterative post-order walk over the function (explicit stack,
no recursion) counts the uses of every node, notes each node's region and
(for single-use nodes) its only user, and lists the nodes children first.
Candidate calls are appended to their group in that order, so branch order
is program order and the result is deterministic. The followers of a group
are found by walking up single uses, once per branch and level. The rebuild
is one more pass over the same list, rebuilding a node only when a child
changed: linear in the size of the function. A function with nothing to
combine is returned as the same object; the input is never modified.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from irpass.ir import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    OpPattern,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
)
from irpass.ir.type_infer import carry_type, type_built
from irpass.transform import ConfigOption, function_pass
from irpass.transform.context import RewriteCounter

from .options import options_of

if TYPE_CHECKING:
    from irpass.ir import IRModule
    from irpass.transform import PassContext

__all__ = ["CONFIG_OPTIONS", "MIN_NUM_BRANCHES", "CombineParallelDense"]

#: Config key: the fewest parallel calls on one input that are combined.
MIN_NUM_BRANCHES = "std.CombineParallelDense.min_num_branches"

# declared in options.py (registered with the plugin, before any pass is imported)
CONFIG_OPTIONS: list[ConfigOption] = options_of("CombineParallelDense")

_SKIP_ATTRS = ("Primitive", "SkipOptimization")

# Leaves: nothing below them, and their uses do not matter to the pass.
_LEAVES = frozenset({Var, GlobalVar, Constant, Op})

# Elementwise ops of one argument whose result does not have the argument's shape
# (their single input is a fill value): never folded as followers.
_NOT_ELEMENTWISE = frozenset({"full", "ones", "zeros"})


@function_pass(opt_level=3, name="CombineParallelDense", required=["InferType"])
class CombineParallelDense:
    """Combine at least ``min_num_branches`` parallel ``nn.dense``/``matmul`` calls on one
    input, with constant weights, into one call on the concatenated weight and a ``split``.

    ``min_num_branches``: None reads ``std.CombineParallelDense.min_num_branches``
    (default 3, as TVM's); it must be at least 2. See the module docstring for
    what is combined and what is folded into the combined call.
    """

    def __init__(self, min_num_branches: int | None = None) -> None:
        if min_num_branches is not None:
            _check_min(min_num_branches, "min_num_branches")
        self.min_num_branches = min_num_branches

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        """``func`` with its parallel dense/matmul groups combined; ``func`` itself if none."""
        minimum = self.min_num_branches
        if minimum is None:
            minimum = _check_min(ctx.config.get(MIN_NUM_BRANCHES, 3), MIN_NUM_BRANCHES)
        return _Combiner(func, minimum, ctx.rewrite_counter()).run()


def _check_min(value: Any, where: str) -> int:
    if type(value) is not int or value < 2:
        raise ValueError(f"CombineParallelDense: {where} must be an int >= 2, got {value!r}")
    return value


@dataclass
class _Follower:
    """One folded level: the op and attrs to apply to the combined value, and the
    constant operand (None for a unary op) with the side it goes on."""

    op: Op
    attrs: Any
    constant: Expr | None = None
    constant_first: bool = False


@dataclass
class _Group:
    """Parallel calls to combine, in program order, with what they become."""

    calls: list[Call]
    widths: list[int] = field(default_factory=list)
    followers: list[_Follower] = field(default_factory=list)
    ends: list[Expr] = field(default_factory=list)
    split: Expr | None = None


class _Combiner:
    """The analysis and the rebuild of one global function."""

    def __init__(self, func: Function, minimum: int, counter: RewriteCounter | None = None) -> None:
        self.func = func
        self.minimum = minimum
        self.counter = counter  # asked before each group is combined (None: no debug counter)
        self.order: list[Expr] = []  # every non-leaf node, children first
        self.uses: dict[Expr, int] = {}
        self.user: dict[Expr, Expr] = {}  # the last user seen: the only one of a single use
        self.region: dict[Expr, Any] = {}

    def run(self) -> Function:
        func = self.func
        self._walk()
        groups = self._groups()
        if not groups:
            return func
        body = self._rebuild(groups)
        if body is func.body:
            return func
        return Function(func.params, body, func.ret_type, func.attrs)

    # -- analysis --------------------------------------------------------------------------

    def _walk(self) -> None:
        """Post-order list, use counts, single users and regions, with an explicit stack."""
        order, uses, user, region = self.order, self.uses, self.user, self.region
        leaves = _LEAVES
        root = self.func.body
        stack: list[tuple[Expr, Any, bool]] = [(root, None, False)]
        uses[root] = 1
        user[root] = self.func
        push = stack.append
        while stack:
            node, reg, done = stack.pop()
            if done:
                order.append(node)
                continue
            if node in region:
                continue
            region[node] = reg
            push((node, reg, True))
            t = type(node)
            if t is Function:
                attrs = node.attrs
                if attrs and any(attrs.get(k) for k in _SKIP_ATTRS):
                    continue  # left alone: nothing inside is looked at or rewritten
                children: Sequence[tuple[Expr, Any]] = [(node.body, node)]
            elif t is If:
                children = [
                    (node.cond, reg),
                    (node.true_branch, (node, 0)),
                    (node.false_branch, (node, 1)),
                ]
            else:
                children = [(c, reg) for c in node.children()]
            # pushed in reverse, so children are listed in field order (as printed)
            for child, child_reg in reversed(children):
                if type(child) in leaves:
                    continue
                uses[child] = uses.get(child, 0) + 1
                user[child] = node
                push((child, child_reg, False))

    def _groups(self) -> list[_Group]:
        """The groups to combine, each with its followers worked out, in program order."""
        dense = Op.get("nn.dense")
        matmul = Op.get("matmul")
        uses = self.uses
        region = self.region
        found: dict[Any, list[Call]] = {}
        for node in self.order:
            if type(node) is not Call:
                continue
            op = node.op
            if op is not dense and op is not matmul:
                continue
            if uses.get(node) != 1:
                continue
            x, w = node.args
            if type(w) is not Constant or w.data.ndim != 2:
                continue
            if op is dense:
                key: Any = (op, x, region[node], w.data.dtype.str, w.data.shape[1],
                            node.attrs.get("out_dtype"))
            else:
                key = (op, x, region[node], w.data.dtype.str, w.data.shape[0])
            found.setdefault(key, []).append(node)
        groups = []
        for calls in found.values():
            if len(calls) < self.minimum:
                continue
            group = self._group(calls)
            if group is not None and (
                self.counter is None
                or self.counter(f"combine {len(calls)} parallel {calls[0].op.name} calls")
            ):
                groups.append(group)
        return groups

    def _group(self, calls: list[Call]) -> _Group | None:
        """A group of ``calls`` with its output widths and followers, or None if their
        types do not allow it (a result that is not a tensor ending in the weight's width)."""
        axis = 0 if calls[0].op is Op.get("nn.dense") else 1
        widths = []
        for call in calls:
            n = call.args[1].data.shape[axis]
            ty = call.checked_type
            if type(ty) is not TensorType or not ty.shape or ty.shape[-1] != n:
                return None
            widths.append(n)
        group = _Group(calls, widths)
        ends: list[Expr] = list(calls)
        while True:
            follower = self._next_follower(ends, widths)
            if follower is None:
                break
            group.followers.append(follower[0])
            ends = follower[1]
        group.ends = ends
        return group

    def _next_follower(
        self, ends: list[Expr], widths: list[int]
    ) -> tuple[_Follower, list[Expr]] | None:
        """The op that follows every branch end alike, and the new ends; None if none does."""
        users = []
        for end in ends:
            if self.uses.get(end) != 1:
                return None
            u = self.user[end]
            if type(u) is not Call or type(u.op) is not Op:
                return None
            users.append(u)
        first = users[0]
        op = first.op
        if op.stateful or any(u.op is not op or u.attrs != first.attrs for u in users):
            return None
        for end, u in zip(ends, users, strict=True):
            if not _same_shape(end, u):
                return None
        if len(first.args) == 1 and op.pattern == OpPattern.ELEMWISE:
            if op.name in _NOT_ELEMENTWISE:
                return None
            return _Follower(op, first.attrs), users
        if len(first.args) != 2 or op.pattern != OpPattern.BROADCAST:
            return None
        side = 0 if first.args[1] is ends[0] else 1  # the constant's argument position
        constants = []
        for end, u in zip(ends, users, strict=True):
            c = u.args[side]
            if u.args[1 - side] is not end or type(c) is not Constant:
                return None
            constants.append(c)
        if any(c.data.dtype != constants[0].data.dtype for c in constants):
            return None
        if op.name == "nn.bias_add":
            if side != 1 or not _is_last_axis(first.attrs.get("axis"), ends[0]):
                return None
            if any(c.data.shape != (n,) for c, n in zip(constants, widths, strict=True)):
                return None
            return _Follower(op, first.attrs, _concat(constants, 0), False), users
        combined = _combined_constant(constants, widths, ends[0])
        if combined is None:
            return None
        return _Follower(op, first.attrs, combined, side == 0), users

    # -- rebuild ---------------------------------------------------------------------------

    def _rebuild(self, groups: list[_Group]) -> Expr:
        """The function body with every group combined (one pass over the post-order list)."""
        end_of: dict[Expr, tuple[_Group, int]] = {}
        absorbed: set[Expr] = set()
        for group in groups:
            for i, end in enumerate(group.ends):
                end_of[end] = (group, i)
            # the calls and followers below each end: replaced with it, never rebuilt
            for call in group.calls:
                node: Expr = call
                while node not in end_of:
                    absorbed.add(node)
                    node = self.user[node]
        memo: dict[Expr, Expr] = {}
        get = memo.get
        for node in self.order:
            hit = end_of.get(node)
            if hit is not None:
                group, i = hit
                if group.split is None:
                    group.split = _typed(_combine(group, get))
                memo[node] = _typed(TupleGetItem(group.split, i))
                continue
            if node in absorbed:
                continue
            new = _rebuilt(node, get)
            if new is not node:
                memo[node] = new
        body = self.func.body
        return get(body, body)


def _rebuilt(node: Expr, get: Any) -> Expr:
    """``node`` with its rewritten children, or ``node`` itself when none changed."""
    t = type(node)
    if t is Call:
        op = get(node.op, node.op)
        args = tuple(get(a, a) for a in node.args)
        if op is node.op and all(a is b for a, b in zip(args, node.args, strict=True)):
            return node
        return carry_type(node, Call._unchecked(op, args, node.attrs))
    if t is Tuple:
        fields = tuple(get(f, f) for f in node.fields)
        if all(a is b for a, b in zip(fields, node.fields, strict=True)):
            return node
        return carry_type(node, Tuple(fields))
    if t is TupleGetItem:
        value = get(node.tuple_value, node.tuple_value)
        if value is node.tuple_value:
            return node
        return carry_type(node, TupleGetItem(value, node.index))
    if t is Let:
        value = get(node.value, node.value)
        body = get(node.body, node.body)
        if value is node.value and body is node.body:
            return node
        return Let(node.var, value, body)
    if t is If:
        cond = get(node.cond, node.cond)
        true_branch = get(node.true_branch, node.true_branch)
        false_branch = get(node.false_branch, node.false_branch)
        if cond is node.cond and true_branch is node.true_branch and (
            false_branch is node.false_branch
        ):
            return node
        return If(cond, true_branch, false_branch)
    if t is Function:
        body = get(node.body, node.body)
        if body is node.body:
            return node
        return Function(node.params, body, node.ret_type, node.attrs)
    return node


def _combine(group: _Group, get: Any) -> Expr:
    """The combined call, its folded followers and the split of a group."""
    first = group.calls[0]
    op = first.op
    x = get(first.args[0], first.args[0])
    weights = [c.args[1] for c in group.calls]
    total = sum(group.widths)
    if op is Op.get("nn.dense"):
        units = [c.attrs.get("units") for c in group.calls]
        attrs = {
            "units": total if all(u is not None for u in units) else None,
            "out_dtype": first.attrs.get("out_dtype"),
        }
        value: Expr = Call(op, [x, _concat(weights, 0)], attrs)
    else:
        value = Call(op, [x, _concat(weights, 1)])
    for f in group.followers:
        if f.constant is None:
            value = Call(f.op, [value], f.attrs)
        elif f.constant_first:
            value = Call(f.op, [f.constant, value], f.attrs)
        else:
            value = Call(f.op, [value, f.constant], f.attrs)
    indices = tuple(int(i) for i in np.cumsum(group.widths[:-1]))
    axis = len(group.calls[0].checked_type.shape) - 1
    return Call(Op.get("split"), [value], {"indices_or_sections": indices, "axis": axis})


def _typed(expr: Expr) -> Expr:
    """``expr``, new nodes over typed ones (the pass requires InferType), with their types
    (``type_built``), so that the nodes above the split keep theirs (``carry_type`` in
    ``_rebuilt``); in an untyped program it stays untyped, for inference to type."""
    type_built(expr)
    return expr


def _concat(parts: list[Expr], axis: int) -> Expr:
    """``concatenate(parts, axis)``: FoldConstant makes one constant of it."""
    return Call(Op.get("concatenate"), [Tuple(parts)], {"axis": axis})


def _same_shape(end: Expr, user: Call) -> bool:
    """Whether ``user`` has the shape of ``end`` (it broadcasts nothing bigger)."""
    a, b = end.checked_type, user.checked_type
    return type(a) is TensorType and type(b) is TensorType and a.shape == b.shape


def _is_last_axis(axis: Any, end: Expr) -> bool:
    ndim = len(end.checked_type.shape)
    return type(axis) is int and axis in (ndim - 1, -1)


def _combined_constant(constants: list[Constant], widths: list[int], end: Expr) -> Expr | None:
    """The operand of the combined follower: the constants concatenated along their last
    axis when each varies along it only, with that width; the constant itself when they are
    one equal single value; None otherwise."""
    ndim = len(end.checked_type.shape)
    shapes = [c.data.shape for c in constants]
    rank = len(shapes[0])
    if rank > ndim or any(len(s) != rank for s in shapes):
        return None
    if all(c.data.size == 1 for c in constants):
        data = constants[0].data
        if all(
            c.data.dtype == data.dtype and c.data.shape == data.shape
            and c.data.tobytes() == data.tobytes()
            for c in constants
        ):
            return constants[0]
    if rank == 0:
        return None
    for s, n in zip(shapes, widths, strict=True):
        if s[-1] != n or any(d != 1 for d in s[:-1]):
            return None
    return _concat(list(constants), rank - 1)
