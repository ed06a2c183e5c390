"""Apache TVM Relax: BlockBuilder programs in one dataflow block, the C++ passes
``relax.transform.FoldConstant`` / ``EliminateCommonSubexpr`` /
``DeadCodeElimination``; W4 a ``tvm.transform.Sequential`` of Python module passes,
with ``tvm.ir.instrument.PassTimingInstrument`` as the instrument."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import tvm
from tvm import relax
from tvm.script import relax as R

NAME = "TVM Relax"
DIST = "apache-tvm"

SHAPE = (4, 4)


def build(workload: str, n: int) -> Any:
    """W1-W3 with a BlockBuilder; each step's calls are bindings of the dataflow block."""
    rng = np.random.default_rng(1)
    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor(SHAPE, "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            cur: Any = x
            for _ in range(n):
                if workload == "W1":
                    a = relax.const(rng.uniform(0.5, 1.0, SHAPE).astype("float32"))
                    b = relax.const(rng.uniform(0.0, 0.5, SHAPE).astype("float32"))
                    c = bb.emit(relax.op.add(a, b))
                    cur = bb.emit(relax.op.multiply(cur, c))
                elif workload == "W2":
                    a = bb.emit(relax.op.exp(cur))
                    b = bb.emit(relax.op.exp(cur))
                    cur = bb.emit(relax.op.add(a, b))
                else:
                    bb.emit(relax.op.tanh(cur))  # bound, never used
                    cur = bb.emit(relax.op.nn.relu(relax.op.add(cur, cur)))
            out = bb.emit_output(cur)
        bb.emit_func_output(out)
    return bb.get()


_PASSES = {
    "W1": relax.transform.FoldConstant,
    "W2": relax.transform.EliminateCommonSubexpr,
    "W3": relax.transform.DeadCodeElimination,
}


def run(workload: str, mod: Any) -> Any:
    """The workload's Relax pass at opt_level 3."""
    with tvm.transform.PassContext(opt_level=3):
        return _PASSES[workload]()(mod)


def counts(workload: str, mod: Any) -> Counter[str]:
    """Op calls of ``main`` by op name without the ``relax.`` prefix."""
    found: Counter[str] = Counter()

    def visit(node: Any) -> None:
        if isinstance(node, relax.Call) and isinstance(node.op, tvm.ir.Op):
            found[node.op.name.removeprefix("relax.").removeprefix("nn.")] += 1

    relax.analysis.post_order_visit(mod["main"], visit)
    if workload == "W1":
        muls: list[Any] = []
        relax.analysis.post_order_visit(
            mod["main"],
            lambda node: (
                muls.append(node)
                if isinstance(node, relax.Call) and getattr(node.op, "name", "") == "relax.multiply"
                else None
            ),
        )
        found["multiply by a constant"] = sum(
            any(isinstance(a, tvm.ir.expr.Constant) for a in m.args) for m in muls
        )
    return found


def w4(n_passes: int, instrumented: bool) -> Callable[[], object] | None:
    """One run of a ``tvm.transform.Sequential`` of ``n_passes`` trivial module passes."""
    x = relax.Var("x", R.Tensor(SHAPE, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        out = bb.emit(relax.op.add(x, x))
        bb.emit_func_output(out)
    mod = bb.get()

    def trivial(m: Any, ctx: Any) -> Any:
        return m

    seq = tvm.transform.Sequential(
        [tvm.transform.module_pass(trivial, opt_level=0, name=f"t{i}") for i in range(n_passes)]
    )
    instruments = [tvm.ir.instrument.PassTimingInstrument()] if instrumented else []

    def once() -> object:
        with tvm.transform.PassContext(opt_level=0, instruments=instruments):
            return seq(mod)

    return once
