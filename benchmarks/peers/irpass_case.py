"""irpass: the builders of bench_std_passes.py / bench_pass_overhead.py, passes run
as users run them (inside a Sequential, so CSE's required InferType runs; on W2 it
finds the types the build gave, see :func:`build`, and on the untyped variant it
walks everything)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from bench_pass_overhead import trivial, w4_module
from bench_std_passes import count_ops, fresh, w1, w2, w3
from irpass.instrument import PassTimingInstrument
from irpass.ir import Call, Constant, infer_type, post_order_visit
from irpass.transform import PassContext, Sequential, get_pass, module_pass

NAME = "irpass"
DIST = "irpass"

_BUILD = {"W1": w1, "W2": w2, "W3": w3}
_PASS = {"W1": "FoldConstant", "W2": "EliminateCommonSubexpr", "W3": "DeadCodeElimination"}


def build(workload: str, n: int) -> Any:
    """The workload as bench_std_passes.py builds it, W2 typed: the module the pass gets
    in a pipeline, where the pass before it or the importer typed it (TVM Relax's
    BlockBuilder, whose module TVM's W2 gets, types each binding as it is built)."""
    mod = _BUILD[workload](n)
    return infer_type(mod) if workload == "W2" else mod


#: Other builds timed alongside, by workload: W2 as the op builders make it, untyped, so
#: that the pass's required InferType walks every node.
VARIANTS: dict[str, dict[str, Callable[[int], Any]]] = {"W2": {"untyped": w2}}


def run(workload: str, mod: Any) -> Any:
    """The workload's std pass in a Sequential (with its requirements) at opt_level 3."""
    with PassContext(opt_level=3):
        # a fresh module object: type inference remembers the modules it typed
        return Sequential([get_pass(_PASS[workload])])(fresh(mod))


def counts(workload: str, mod: Any) -> Counter[str]:
    """Op calls by op name (``exp``, ``tanh``, ``add``, ``multiply``, ...)."""
    found = count_ops(mod)
    if workload == "W1":
        muls: list[Call] = []
        for func in mod.functions.values():
            post_order_visit(
                func,
                lambda node: (
                    muls.append(node)
                    if isinstance(node, Call) and getattr(node.op, "name", "") == "multiply"
                    else None
                ),
            )
        found["multiply by a constant"] = sum(
            any(isinstance(a, Constant) for a in m.args) for m in muls
        )
    return found


def w4(n_passes: int, instrumented: bool) -> Callable[[], object] | None:
    """One run of a Sequential of ``n_passes`` trivial module passes."""
    mod = w4_module()
    seq = Sequential(
        [module_pass(trivial, opt_level=0, name=f"trivial{i}") for i in range(n_passes)]
    )
    ctx = PassContext(instruments=[PassTimingInstrument()] if instrumented else [])

    def once() -> object:
        with ctx:
            return seq(mod)

    return once
