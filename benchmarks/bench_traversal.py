"""Time the traversals on chains and DAGs of 10^3 .. 10^6 nodes.

Prints, per workload and size, the median of several runs of an ExprVisitor
that counts nodes, an identity ExprMutator and structural_hash, in nodes per
second, and the time ratio N=10^6 / N=10^5 (about 10 when cost is linear).

    python benchmarks/bench_traversal.py            # all sizes
    python benchmarks/bench_traversal.py --max 100000 --repeat 5
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable

from irpass import op
from irpass.ir import Expr, ExprMutator, ExprVisitor, structural_hash, var


class _CountCalls(ExprVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def visit_call(self, call):  # type: ignore[no-untyped-def]
        self.n += 1
        super().visit_call(call)


def chain(n: int) -> Expr:
    """``x = add(x, x)`` n times: n call nodes, n deep."""
    x: Expr = var("x", shape=(4, 4))
    for _ in range(n):
        x = op.add(x, x)
    return x


def dag(n: int) -> Expr:
    """A diamond ladder of n call nodes: per level ``add(negative(x), tanh(x))``."""
    x: Expr = var("x", shape=(4, 4))
    for _ in range(n // 3):
        x = op.add(op.negative(x), op.tanh(x))
    return x


def _median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _visit(expr: Expr) -> None:
    _CountCalls().visit(expr)


def _mutate(expr: Expr) -> None:
    out = ExprMutator().visit(expr)
    assert out is expr, "an identity mutator must return its input"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--max", type=int, default=1_000_000, help="largest N (default 10^6)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    args = parser.parse_args()
    sizes = [n for n in (1_000, 10_000, 100_000, 1_000_000) if n <= args.max]
    tasks = {
        "ExprVisitor": _visit,
        "ExprMutator(identity)": _mutate,
        "structural_hash": structural_hash,
    }
    print(f"{'graph':6} {'task':22} {'N':>9} {'median s':>9} {'nodes/s':>12}")
    for shape, build in (("chain", chain), ("dag", dag)):
        seconds: dict[tuple[str, int], float] = {}
        for n in sizes:
            start = time.perf_counter()
            expr = build(n)
            print(f"{shape:6} {'(build)':22} {n:>9,} {time.perf_counter() - start:9.4f}")
            for task, fn in tasks.items():
                t = seconds[task, n] = _median_time(lambda f=fn, e=expr: f(e), args.repeat)
                print(f"{shape:6} {task:22} {n:>9,} {t:9.4f} {n / t:12,.0f}")
            del expr
        for task in tasks:
            if (task, 100_000) in seconds and (task, 1_000_000) in seconds:
                ratio = seconds[task, 1_000_000] / seconds[task, 100_000]
                print(f"{shape:6} {task:22} time ratio N=10^6 / N=10^5 = {ratio:.1f} (linear: 10)")


if __name__ == "__main__":
    main()
