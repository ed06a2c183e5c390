"""xDSL: ``arith``/``math`` ops on f32 scalars in a ``func.func`` (its folders fold
scalars only), the passes ``canonicalize`` (folds W1's constant adds),
``cse`` and ``dce``; W4 a ``PassPipeline`` of trivial module passes, whose callback
(called between passes) serves as its instrument, reading the clock there."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter_ns
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass, PassPipeline
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

NAME = "xDSL"
DIST = "xdsl"

_CTX = Context()
for _dialect in (arith.Arith, builtin.Builtin, func.Func, math.Math):
    _CTX.load_dialect(_dialect)


def _const(value: float) -> arith.ConstantOp:
    return arith.ConstantOp(builtin.FloatAttr(value, builtin.f32))


def build(workload: str, n: int) -> builtin.ModuleOp:
    """W1-W3 in one block of ``@main(%x: f32) -> f32``."""
    rng = np.random.default_rng(1)
    block = Block(arg_types=[builtin.f32])
    ops: list[Any] = []
    cur: Any = block.args[0]
    zero = _const(0.0)
    if workload == "W3":
        ops.append(zero)
    for _ in range(n):
        if workload == "W1":
            a = _const(float(rng.uniform(0.5, 1.0)))
            b = _const(float(rng.uniform(0.0, 0.5)))
            c = arith.AddfOp(a, b)
            m = arith.MulfOp(cur, c)
            ops += [a, b, c, m]
        elif workload == "W2":
            a = math.ExpOp(cur)
            b = math.ExpOp(cur)
            m = arith.AddfOp(a, b)
            ops += [a, b, m]
        else:
            d = math.TanhOp(cur)  # never used
            s = arith.AddfOp(cur, cur)
            m = arith.MaximumfOp(s, zero)  # relu
            ops += [d, s, m]
        cur = m.result
    ops.append(func.ReturnOp(cur))
    block.add_ops(ops)
    main = func.FuncOp("main", ((builtin.f32,), (builtin.f32,)), Region(block))
    return builtin.ModuleOp([main])


_PASSES = {"W1": CanonicalizePass, "W2": CommonSubexpressionElimination, "W3": DeadCodeElimination}


def run(workload: str, module: builtin.ModuleOp) -> builtin.ModuleOp:
    """The workload's pass, in place."""
    _PASSES[workload]().apply(_CTX, module)
    return module


_NAMES = {
    arith.AddfOp: "add",
    arith.MulfOp: "multiply",
    math.ExpOp: "exp",
    math.TanhOp: "tanh",
    arith.MaximumfOp: "relu",
}


def counts(workload: str, module: builtin.ModuleOp) -> Counter[str]:
    """Ops by the workload's op names (``arith.addf`` is ``add``, ``maximumf`` ``relu``)."""
    found: Counter[str] = Counter()
    for op in module.walk():
        name = _NAMES.get(type(op))
        if name is not None:
            found[name] += 1
        elif workload == "W1" and type(op) is arith.MulfOp:
            found["multiply"] += 1
    if workload == "W1":
        # after folding, each multiply's other operand must be a constant
        muls = [op for op in module.walk() if type(op) is arith.MulfOp]
        found["multiply by a constant"] = sum(
            any(isinstance(o.owner, arith.ConstantOp) for o in m.operands) for m in muls
        )
    return found


@dataclass(frozen=True)
class _Trivial(ModulePass):
    """A module pass that does nothing."""

    name = "trivial"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        pass


def w4(n_passes: int, instrumented: bool) -> Callable[[], object] | None:
    """One run of a ``PassPipeline`` of ``n_passes`` trivial passes (with a callback
    that reads the clock and records it when ``instrumented``)."""
    module = build("W2", 1)
    passes = tuple(_Trivial() for _ in range(n_passes))
    records: list[tuple[Any, int]] = []

    def callback(prev: Any, op: Any, nxt: Any) -> None:
        records.append((prev, perf_counter_ns()))

    pipeline = PassPipeline(passes, callback if instrumented else None)

    def once() -> object:
        records.clear()
        pipeline.apply(_CTX, module)
        return module

    return once
