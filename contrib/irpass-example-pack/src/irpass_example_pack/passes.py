"""The pack's passes: ``FoldAddZero`` (an algebraic rewrite) and ``OpStatistics`` (a census).

Both are ordinary irpass passes, made with the ``function_pass`` /
``module_pass`` decorators; nothing here knows about plugins. The plugin
module (:mod:`irpass_example_pack.plugin`) is what hands them to irpass.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING

import numpy as np
from irpass.ir import Call, Constant, ExprMutator, Function, Op, infer_type, post_order_visit
from irpass.transform import function_pass, module_pass

if TYPE_CHECKING:
    from irpass.ir import Expr, IRModule
    from irpass.transform import PassContext

__all__ = ["MAX_REWRITES", "FoldAddZero", "OpStatistics", "count_ops", "total_ops"]

_LOG = logging.getLogger("irpass_example_pack")

#: The PassContext config key that bounds the rewrites of :class:`FoldAddZero`.
MAX_REWRITES = "example.max_rewrites"

# op name -> the constant value that makes the op return its other operand
_NEUTRAL = {"add": 0, "multiply": 1}


@function_pass(opt_level=1)
class FoldAddZero:
    """Fold ``x + 0``, ``0 + x``, ``x * 1`` and ``1 * x`` to ``x`` (constant zeros/ones).

    A call is rewritten only when the constant holds nothing but the neutral
    value and the call's type equals ``x``'s type, so a constant that would
    broadcast ``x`` to a bigger shape keeps its call. Types are inferred on
    each function first, so the pass works with or without a preceding
    ``InferType``.

    The config option ``example.max_rewrites`` (an int; unset means no limit)
    caps the number of rewrites in each function, in post-order (inner calls
    first) -- handy for bisecting a miscompile. Where ``x`` holds ``-0.0``,
    ``x + 0`` computed ``+0.0`` and the folded program returns ``-0.0``; the
    two compare equal.
    """

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        """Fold the neutral operations of ``func``; ``func`` itself when there are none."""
        limit = ctx.config.get(MAX_REWRITES)
        if limit is not None and limit < 0:
            raise ValueError(f"config option {MAX_REWRITES!r} must be >= 0, got {limit}")
        if limit == 0:
            return func
        # inference may hand back a retyped copy; the rewrite works on that copy
        typed = infer_type(func, mod)
        folder = _Folder(limit)
        out = folder.visit(typed)
        if not folder.rewrites:
            return func  # keep the function's identity: FunctionPass then keeps the module
        _LOG.debug("FoldAddZero: %d rewrite(s)", folder.rewrites)
        return out


class _Folder(ExprMutator):
    """Replaces neutral add/multiply calls by their kept operand, up to ``limit`` times."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.rewrites = 0

    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        if self.limit is not None and self.rewrites >= self.limit:
            return new
        keep = _kept_operand(call)
        if keep is None:
            return new
        self.rewrites += 1
        # decided on the typed original; a rewrite never changes a type, so the
        # decision holds for the rebuilt call as well
        return new.args[keep]


def _kept_operand(call: Call) -> int | None:
    """The index of the operand ``call`` reduces to, or ``None`` if it is not neutral."""
    op = call.op
    if type(op) is not Op or len(call.args) != 2:
        return None
    neutral = _NEUTRAL.get(op.name)
    if neutral is None:
        return None
    for keep, other in ((0, 1), (1, 0)):
        const = call.args[other]
        if (
            type(const) is Constant
            and bool(np.all(const.data == neutral))
            and call.args[keep].checked_type == call.checked_type
        ):
            return keep
    return None


@module_pass(opt_level=0)
class OpStatistics:
    """Count the op calls of every function; the module passes through unchanged.

    After a run, ``counts`` maps each function name to ``{op name: calls}``
    (a call shared by several users counts once) and a one-line summary is
    logged to the ``irpass_example_pack`` logger at INFO level.
    """

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Record the op counts of ``mod`` in ``self.counts`` and return ``mod``."""
        self.counts = count_ops(mod)
        total: Counter[str] = Counter()
        for per_func in self.counts.values():
            total.update(per_func)
        # most frequent first, ties by name: the same line for the same module
        common = sorted(total.items(), key=lambda item: (-item[1], item[0]))[:5]
        top = ", ".join(f"{name} {n}" for name, n in common)
        _LOG.info(
            "OpStatistics: %d op call(s) in %d function(s)%s",
            sum(total.values()), len(self.counts), f": {top}" if top else "",
        )
        return mod


def count_ops(mod: IRModule) -> dict[str, dict[str, int]]:
    """``{function name: {op name: number of calls}}`` for every function of ``mod``, sorted."""
    out: dict[str, dict[str, int]] = {}
    for gv, func in sorted(mod.items(), key=lambda item: item[0].name_hint):
        counter: Counter[str] = Counter()

        def count(node: Expr, counter: Counter[str] = counter) -> None:
            if type(node) is Call and type(node.op) is Op:
                counter[node.op.name] += 1

        post_order_visit(func, count)
        out[gv.name_hint] = dict(sorted(counter.items()))
    return out


def total_ops(mod: IRModule) -> Counter[str]:
    """The op call counts of all functions of ``mod`` added up."""
    total: Counter[str] = Counter()
    for per_func in count_ops(mod).values():
        total.update(per_func)
    return total
