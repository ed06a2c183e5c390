"""Time irpass.ir.dataflow_pattern's rewrite on chains of 10^3 .. 10^5 nodes.

Prints, per workload and size, the median of several runs in microseconds per node
(about constant when the cost is linear) and the matches made. Workloads:

* ``mul1``: ``x * 1 -> x`` on a chain alternating ``relu`` and ``multiply(., 1)``
  (every other node matches);
* ``3op``: ``relu(add(multiply(a, b), c)) -> clip(a * b + c)`` on a chain of such
  triples (the pattern matches at every relu), with a second callback rooted at
  ``tanh`` that never matches (the index keeps it from being tried);
* ``nomatch``: the ``3op`` callbacks on a chain of ``exp`` calls (no candidate at all).

Asserts nothing.

    python benchmarks/bench_dataflow_pattern.py
    python benchmarks/bench_dataflow_pattern.py --max 10000 --repeat 5
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable

import numpy as np
from irpass import op
from irpass.ir import Expr, const, var
from irpass.ir.dataflow_pattern import DFPatternCallback, is_expr, is_op, rewrite, wildcard

ONE = const(np.float32(1.0))


class MulOne(DFPatternCallback):
    """``x * 1 -> x``."""

    def __init__(self) -> None:
        super().__init__()
        self.x = wildcard()
        self.pattern = self.x * is_expr(ONE)

    def callback(self, pre, post, node_map):  # type: ignore[no-untyped-def]
        return node_map[self.x][0]


class ReluAddMul(DFPatternCallback):
    """``relu(a * b + c) -> clip(a * b + c, 0, inf)``."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = wildcard(), wildcard(), wildcard()
        self.pattern = is_op("nn.relu")(is_op("add")(is_op("multiply")(self.a, self.b), self.c))

    def callback(self, pre, post, node_map):  # type: ignore[no-untyped-def]
        return op.clip(post.args[0], 0.0, float("inf"))


class NeverTanh(DFPatternCallback):
    """Rooted at tanh: never a candidate on these chains."""

    def __init__(self) -> None:
        super().__init__()
        self.pattern = is_op("tanh")(is_op("exp")(wildcard()))

    def callback(self, pre, post, node_map):  # type: ignore[no-untyped-def]
        return post


def mul1_chain(n: int) -> Expr:
    x: Expr = var("x", shape=(4,))
    for i in range(n):
        x = op.nn.relu(x) if i % 2 else op.multiply(x, ONE)
    return x


def three_op_chain(n: int) -> Expr:
    x: Expr = var("x", shape=(4,))
    w = const(np.ones(4, "float32"))
    for _ in range(n // 3):
        x = op.nn.relu(op.add(op.multiply(x, w), w))
    return x


def exp_chain(n: int) -> Expr:
    x: Expr = var("x", shape=(4,))
    for _ in range(n):
        x = op.exp(x)
    return x


WORKLOADS: dict[str, tuple[Callable[[int], Expr], Callable[[], list[DFPatternCallback]]]] = {
    "mul1": (mul1_chain, lambda: [MulOne()]),
    "3op": (three_op_chain, lambda: [NeverTanh(), ReluAddMul()]),
    "nomatch": (exp_chain, lambda: [NeverTanh(), ReluAddMul()]),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=100_000, help="largest chain (nodes)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per point (median)")
    args = parser.parse_args()
    sizes = [n for n in (1_000, 10_000, 100_000) if n <= args.max]
    print(f"{'workload':<9} {'nodes':>8} {'us/node':>9} {'total s':>9}")
    for name, (build, callbacks) in WORKLOADS.items():
        for n in sizes:
            expr = build(n)
            times = []
            for _ in range(args.repeat):
                cbs = callbacks()
                gc.collect()
                start = time.perf_counter()
                rewrite(cbs, expr)
                times.append(time.perf_counter() - start)
            t = statistics.median(times)
            print(f"{name:<9} {n:>8} {t / n * 1e6:>9.2f} {t:>9.3f}")


if __name__ == "__main__":
    main()
