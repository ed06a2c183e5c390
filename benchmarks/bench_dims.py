"""Time the shape arithmetic of symbolic type inference: irpass.ir.dims against sympy.

Prints microseconds per operation (best of --repeat runs of --number calls each) for the
dim arithmetic that type relations do: broadcasting two rank-4 shapes, reshape with a
``-1`` dim, a conv2d output size ``(h + 2*p - k) // s + 1`` per spatial dim, a
concatenate of four inputs along a symbolic axis, and the primitive operations (``n * 4``,
``n + 1``, ``==``, ``hash``). Each workload runs on plain ints (the static baseline, which
does not touch irpass.ir.dims), on irpass.ir.dims, and on sympy when it is installed
(symbols ``integer=True, nonnegative=True``; ``//`` is sympy's ``floor``).

"same" repeats the operation on the same size variables, as type inference over repeated
layers does (sympy then mostly hits its cache); "fresh" takes new variable names for each
call, so neither library can reuse an earlier result. Asserts nothing.

    python benchmarks/bench_dims.py
    python benchmarks/bench_dims.py --number 2000 --repeat 5
    /work/venv-dims/bin/python benchmarks/bench_dims.py   # a venv that has sympy
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

from irpass.ir import dims

try:
    import sympy
except ImportError:  # sympy is only measured against, never a dependency
    sympy = None


class Ops:
    """The dim operations a type relation uses, for one implementation."""

    name = ""

    def var(self, name: str) -> Any:
        raise NotImplementedError

    def floordiv(self, a: Any, c: int) -> Any:
        return a // c

    def is_one(self, d: Any) -> bool:
        return d == 1

    def exact_div(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def total(self, items: list[Any]) -> Any:
        result = 0
        for d in items:
            result = result + d
        return result

    def product(self, items: list[Any]) -> Any:
        result = 1
        for d in items:
            result = result * d
        return result


class IntOps(Ops):
    name = "int (static)"

    def var(self, name: str) -> Any:
        return 7 + len(name)

    def exact_div(self, a: Any, b: Any) -> Any:
        return a // b if a % b == 0 else None


class DimOps(Ops):
    name = "irpass.ir.dims"

    def var(self, name: str) -> Any:
        return dims.SizeVar(name)

    def exact_div(self, a: Any, b: Any) -> Any:
        return dims.divide_exact(a, b)

    def total(self, items: list[Any]) -> Any:
        return dims.dim_sum(items)


class SympyOps(Ops):
    name = "sympy"

    def var(self, name: str) -> Any:
        return sympy.Symbol(name, integer=True, nonnegative=True)

    def is_one(self, d: Any) -> bool:
        return d == 1

    def exact_div(self, a: Any, b: Any) -> Any:
        q = a / b  # sympy cancels common factors of products on construction
        return q if q.is_integer else None

    def total(self, items: list[Any]) -> Any:
        return sympy.Add(*items)


# -- the workloads: each takes the ops and a variable maker and does one relation -------


def broadcast(ops: Ops, v: Callable[[str], Any]) -> Any:
    """numpy broadcasting of (n, seq, 1, 64) against (1, seq, 12, 64)."""
    n, seq = v("n"), v("seq")
    a = (n, seq, 1, 64)
    b = (1, seq, 12, 64)
    out = []
    for x, y in zip(a, b, strict=True):
        if x == y or ops.is_one(y):
            out.append(x)
        elif ops.is_one(x):
            out.append(y)
        else:
            out.append(None)  # a runtime check in the real relation
    return tuple(out)


def reshape(ops: Ops, v: Callable[[str], Any]) -> Any:
    """reshape (n, seq, 768) to (n, seq, 12, -1): the -1 is size / known size."""
    n, seq = v("n"), v("seq")
    shape = (n, seq, 768)
    known = ops.product([n, seq, 12])
    return ops.exact_div(ops.product(list(shape)), known)


def conv(ops: Ops, v: Callable[[str], Any]) -> Any:
    """conv2d output spatial size, kernel 3, padding 1, stride 2, for h and w."""
    h, w = v("h"), v("w")
    p, k, s = 1, 3, 2
    return (ops.floordiv(h + 2 * p - k, s) + 1, ops.floordiv(w + 2 * p - k, s) + 1)


def concat(ops: Ops, v: Callable[[str], Any]) -> Any:
    """concatenate four inputs along an axis of sizes seq, seq, m, 16."""
    seq, m = v("seq"), v("m")
    return ops.total([seq, seq, m, 16])


def mul_const(ops: Ops, v: Callable[[str], Any]) -> Any:
    return v("n") * 4


def add_const(ops: Ops, v: Callable[[str], Any]) -> Any:
    return v("n") + 1


def eq_hash(ops: Ops, v: Callable[[str], Any]) -> Any:
    """== of two equal dims built apart, and a hash of one (a dict lookup)."""
    n, m = v("n"), v("m")
    a = n * m + 4
    b = 4 + m * n
    return a == b, hash(a)


WORKLOADS = [broadcast, reshape, conv, concat, mul_const, add_const, eq_hash]


def _time(fn: Callable[[], Any], number: int, repeat: int) -> float:
    """Best microseconds per call over ``repeat`` runs of ``number`` calls."""
    best = float("inf")
    gc.collect()
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / number * 1e6


def measure(ops: Ops, workload: Callable[..., Any], fresh: bool, number: int, repeat: int) -> float:
    if not fresh:
        cache: dict[str, Any] = {}

        def same(name: str) -> Any:
            var = cache.get(name)
            if var is None:
                var = cache[name] = ops.var(name)
            return var

        return _time(lambda: workload(ops, same), number, repeat)
    # New names for every call: the variables are made beforehand (outside the timing)
    # so only the arithmetic on never-seen expressions is timed.
    total = number * repeat
    pools: list[dict[str, Any]] = [
        {name: ops.var(f"{name}_{i}") for name in ("n", "m", "seq", "h", "w")} for i in range(total)
    ]
    it = iter(pools)

    def run() -> Any:
        pool = next(it)
        return workload(ops, pool.__getitem__)

    return _time(run, number, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=1000, help="calls per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs; the best is printed")
    args = parser.parse_args()

    impls: list[Ops] = [IntOps(), DimOps()]
    if sympy is not None:
        impls.append(SympyOps())
    print(f"us per operation, best of {args.repeat} x {args.number} calls")
    if sympy is None:
        print("(sympy is not installed: only the static ints and irpass.ir.dims are timed)")
    else:
        print(f"(sympy {sympy.__version__})")
    header = f"{'workload':<12} {'mode':<6}" + "".join(f"{o.name:>16}" for o in impls)
    if sympy is not None:
        header += f"{'sympy/dims':>12}"
    print(header)
    for workload in WORKLOADS:
        for fresh in (False, True):
            figures = []
            for ops in impls:
                if fresh and isinstance(ops, IntOps):
                    figures.append(float("nan"))
                    continue
                figures.append(measure(ops, workload, fresh, args.number, args.repeat))
            row = f"{workload.__name__:<12} {'fresh' if fresh else 'same':<6}"
            row += "".join(f"{'-':>16}" if f != f else f"{f:>16.2f}" for f in figures)
            if sympy is not None:
                row += f"{figures[2] / figures[1]:>11.1f}x"
            print(row)


if __name__ == "__main__":
    main()
