"""Import, -O3 and export of the nine ``light`` networks onnx ships, timed and checked.

For each model (from the installed onnx, used in place) it prints: the ONNX node count before
and after -O3 (the exported model's), onnxsim's count where measured, the import time
(``irpass_onnx.load_onnx`` of the file) and the -O3 time (the default pipeline under
``PassContext(opt_level=3)``) of the first run, with the best of ``--repeat`` runs on fresh
imports in parentheses, the max abs error against the reference output before -O3, after it
and of the exported model in onnxruntime, and the max abs error against onnxruntime with
seeded random weights (irpass before and after -O3 and the exported model, the largest of the
three; onnxruntime with graph optimizations off).

    python contrib/irpass-onnx/benchmarks/bench_light_models.py              # all nine
    python contrib/irpass-onnx/benchmarks/bench_light_models.py resnet squeeze --repeat 5
    python contrib/irpass-onnx/benchmarks/bench_light_models.py --no-random  # faster

The table is Markdown, as pasted into the pack's README.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import onnx
from irpass_onnx import from_onnx, load_onnx, to_onnx
from irpass_onnx.testing import (
    ONNXSIM_NODE_COUNTS,
    RANDOM_RTOL,
    SCALED_ATOL,
    RealModel,
    evaluate_irpass,
    light_models,
    max_abs_error,
    max_error_ratio,
    onnx_node_count,
    optimize_o3,
    randomize_weights,
    run_onnxruntime,
)


@dataclass
class Row:
    """One model's measurements."""

    name: str
    nodes_before: int
    nodes_after: int
    onnxsim: int | None
    import_s: tuple[float, float]  # first run, best run
    optimize_s: tuple[float, float]
    err_before: float
    err_after: float
    err_exported: float
    rand_err: float | None = None
    rand_ok: bool | None = None


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def _import_and_optimize(
    path: str, repeat: int
) -> tuple[Any, Any, tuple[float, float], tuple[float, float]]:
    """The module, its -O3 result, and the import and -O3 times as (first, best) over
    ``repeat`` runs, each on a freshly imported module. The first run is what a user waits
    for: later ones hit caches the first filled (the typed-module cache of InferType, ...),
    so they measure less."""
    imports: list[float] = []
    optimizes: list[float] = []
    mod = optimized = None
    for _ in range(max(repeat, 1)):
        mod, import_s = _timed(lambda: load_onnx(path))
        optimized, optimize_s = _timed(lambda: optimize_o3(mod))  # noqa: B023 - called at once
        imports.append(import_s)
        optimizes.append(optimize_s)
    return mod, optimized, (imports[0], min(imports)), (optimizes[0], min(optimizes))


def measure(case: RealModel, repeat: int, random: bool, seed: int) -> Row:
    """Import, optimize, export and check one light model."""
    model = case.load()
    inputs = case.inputs(model)
    reference = case.reference_outputs()
    mod, optimized, import_s, optimize_s = _import_and_optimize(str(case.path), repeat)
    exported = to_onnx(optimized)
    row = Row(
        name=case.name,
        nodes_before=onnx_node_count(model),
        nodes_after=onnx_node_count(exported),
        onnxsim=ONNXSIM_NODE_COUNTS.get(case.name),
        import_s=import_s,
        optimize_s=optimize_s,
        err_before=max_abs_error(evaluate_irpass(mod, inputs), reference),
        err_after=max_abs_error(evaluate_irpass(optimized, inputs), reference),
        err_exported=max_abs_error(run_onnxruntime(exported, inputs), reference),
    )
    if random:
        rmodel = randomize_weights(model, seed, calibrate=inputs)
        expected = run_onnxruntime(rmodel, inputs)
        rmod = from_onnx(rmodel)
        ropt = optimize_o3(rmod)
        outs = [evaluate_irpass(rmod, inputs), evaluate_irpass(ropt, inputs),
                run_onnxruntime(to_onnx(ropt), inputs)]
        row.rand_err = max(max_abs_error(o, expected) for o in outs)
        row.rand_ok = all(max_error_ratio(o, expected, RANDOM_RTOL, 0.0, SCALED_ATOL) <= 1.0
                          for o in outs)
    return row


_HEADER = ("| model | nodes before | nodes after -O3 | onnxsim | import (s) | -O3 (s) "
           "| max err before | after | exported | random weights vs ORT |")


def _seconds(times: tuple[float, float]) -> str:
    first, best = (f"{t:.2f}" for t in times)
    return first if first == best else f"{first} ({best})"


def render(row: Row) -> str:
    """The row as a Markdown table line."""
    sim = "-" if row.onnxsim is None else str(row.onnxsim)
    if row.rand_err is None:
        rand = "-"
    else:
        rand = f"{row.rand_err:.2g} ({'ok' if row.rand_ok else 'FAIL'})"
    return (f"| {row.name} | {row.nodes_before} | {row.nodes_after} | {sim} "
            f"| {_seconds(row.import_s)} | {_seconds(row.optimize_s)} | {row.err_before:.2g} "
            f"| {row.err_after:.2g} | {row.err_exported:.2g} | {rand} |")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns 1 if a random-weights check failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*",
                        help="substrings of model names (default: all light models)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="time import and -O3 this many times, report the best")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    parser.add_argument("--no-random", action="store_true",
                        help="skip the random-weights comparison with onnxruntime")
    args = parser.parse_args(argv)

    cases = [c for c in light_models()
             if not args.models or any(s in c.name for s in args.models)]
    if not cases:
        print(f"no light model matches {args.models} in onnx {onnx.__version__}",
              file=sys.stderr)
        return 2
    print(f"onnx {onnx.__version__}; random-weights tolerance rtol={RANDOM_RTOL:g} "
          f"scaled_atol={SCALED_ATOL:g} (times max|expected|); "
          f"times: first run (best of {args.repeat})")
    print(_HEADER)
    print("|" + "---|" * 10)
    failed = False
    for case in cases:
        row = measure(case, args.repeat, not args.no_random, args.seed)
        print(render(row), flush=True)
        failed |= row.rand_ok is False
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
