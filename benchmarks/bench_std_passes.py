"""Workloads W1, W2, W3 and W5: the cost of the standard passes per program step.

Builds the workloads of ``../shared/WORKLOADS.md`` (float32 (4, 4) tensors,
one input ``x``, N steps):

- W1 fold: ``c = add(const_a_i, const_b_i)``; ``x = multiply(x, c)`` (fresh
  constants per step) -- timed with FoldConstant, which must leave N
  multiplies by N constants and no add;
- W2 cse: ``a = exp(x)``; ``b = exp(x)`` (a second, separate node);
  ``x = add(a, b)`` -- timed with EliminateCommonSubexpr, which must leave one
  exp per step. Two rows: the pass as users run it (its required InferType
  runs first and is included), and the pass body alone on a module typed
  beforehand (InferType disabled in the PassContext, so the requirement is
  skipped);
- W3 dce: ``let d = tanh(x)`` never used, around the dataflow step
  ``x = relu(add(x, x))`` -- timed with DeadCodeElimination, which must leave
  no tanh.

For each workload (each in a fresh process of this script) and N (``--sizes``,
default 10^3 10^4 10^5) the graph is built once (build time printed
separately), then timed in ``--repeat``
interleaved rounds over the sizes (median; before each sample the garbage
collector is run and what is alive frozen out of its scans; a sample at a
small N runs the pass on enough fresh copies to cover as many steps as the
largest N). The table
shows the pass time, microseconds per step, the op calls before and after
(by op name, plus let bindings), whether the pass did its job (``FAIL`` if not:
such a figure does not count), the target in us/step, and the scaling ratio
us/step at the largest N over us/step at the smallest (1.0 is linear; the
target is at most 1.3).

``--all-passes`` also times every std pass on W1, W2 and W3 at every size
(us/step and the scaling ratio), each row in a fresh process (``--passes``
picks some; ``--typed`` times pass bodies on typed modules; ``--reference``
adds two rows that are not passes: a walk that remembers every node, and the
same walk keeping a hash-consing table, whose difference is what such a table
costs per step at each size). ``--w5`` runs every std pass once on W3 at
N = 10^6 (``--w5-n``): build time, pass time, no ``RecursionError``.

    python benchmarks/bench_std_passes.py
    python benchmarks/bench_std_passes.py --sizes 1000 10000 100000 --repeat 5
    python benchmarks/bench_std_passes.py --all-passes --repeat 3
    python benchmarks/bench_std_passes.py --no-main --all-passes --reference --passes InferType
    python benchmarks/bench_std_passes.py --w5
    python benchmarks/bench_std_passes.py --clock cpu   # on a busy machine
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import irpass
import numpy as np
from irpass import op
from irpass.errors import PassError
from irpass.ir import Call, Constant, Expr, Function, IRModule, Let, Op, Var, post_order_visit, var
from irpass.ir.gcpause import gc_paused
from irpass.ir.nodes import const
from irpass.transform import (
    Pass,
    PassContext,
    Sequential,
    function_pass,
    get_pass,
    get_pass_entry,
    list_passes,
)

SHAPE = (4, 4)

#: The clock the figures are read from: wall time, or (``--clock cpu``) this
#: process's CPU time, which leaves out the time other processes held the CPU.
CLOCK: Callable[[], float] = time.perf_counter


# --- the workloads -----------------------------------------------------------------


def w1(n: int) -> IRModule:
    """W1 fold: ``c = add(const_a_i, const_b_i)``; ``x = multiply(x, c)``, n times."""
    rng = np.random.default_rng(1)
    x = var("x", shape=SHAPE)
    cur: Expr = x
    for _ in range(n):
        a = const(rng.uniform(0.5, 1.0, SHAPE).astype(np.float32))
        b = const(rng.uniform(0.0, 0.5, SHAPE).astype(np.float32))
        cur = op.multiply(cur, op.add(a, b))
    return IRModule.from_expr(Function([x], cur))


def w2(n: int) -> IRModule:
    """W2 cse: ``a = exp(x)``; ``b = exp(x)`` (separate nodes); ``x = add(a, b)``, n times."""
    x = var("x", shape=SHAPE)
    cur: Expr = x
    for _ in range(n):
        cur = op.add(op.exp(cur), op.exp(cur))
    return IRModule.from_expr(Function([x], cur))


def w3(n: int) -> IRModule:
    """W3 dce: ``let d_i = tanh(x_i)`` (never used) around ``x_{i+1} = relu(add(x_i, x_i))``.

    The dataflow chain is the body; the n lets wrap it, outermost first (a let
    chain n deep whose values point into a dataflow chain 2n deep).
    """
    x = var("x", shape=SHAPE)
    cur: Expr = x
    dead: list[Expr] = []
    for _ in range(n):
        dead.append(op.tanh(cur))
        cur = op.nn.relu(op.add(cur, cur))
    body = cur
    for value in reversed(dead):
        body = Let(Var("d"), value, body)
    return IRModule.from_expr(Function([x], body))


def count_ops(mod: IRModule) -> Counter[str]:
    """Op calls by op name over every function of ``mod``, plus ``let`` bindings."""
    counts: Counter[str] = Counter()

    def count(node: Expr) -> None:
        if isinstance(node, Call):
            counts[node.op.name if isinstance(node.op, Op) else "call"] += 1
        elif isinstance(node, Let):
            counts["let"] += 1

    for func in mod.functions.values():
        post_order_visit(func, count)
    return counts


def _w1_done(mod: IRModule, n: int) -> bool:
    """N multiplies, each by a constant, and no add."""
    muls: list[Call] = []

    def collect(node: Expr) -> None:
        if isinstance(node, Call) and isinstance(node.op, Op):
            if node.op.name == "multiply":
                muls.append(node)

    for func in mod.functions.values():
        post_order_visit(func, collect)
    counts = count_ops(mod)
    return (
        counts["add"] == 0
        and len(muls) == n
        and all(any(isinstance(a, Constant) for a in m.args) for m in muls)
    )


@dataclass(frozen=True)
class Workload:
    """A workload: its builder, the pass it is timed with, its after-condition and target."""

    name: str
    build: Callable[[int], IRModule]
    pass_name: str
    done: Callable[[IRModule, int], bool]
    target_us: float


WORKLOADS = [
    Workload("W1", w1, "FoldConstant", _w1_done, 10.0),
    Workload("W2", w2, "EliminateCommonSubexpr", lambda m, n: count_ops(m)["exp"] == n, 4.0),
    Workload("W3", w3, "DeadCodeElimination", lambda m, n: count_ops(m)["tanh"] == 0, 3.0),
]


# --- reference walks ----------------------------------------------------------------
# Not passes: one walk timed like a pass, with and without a hash-consing table, so that
# what keeping such a table costs at each size is the difference of two rows.


def _walk(func: Function, hash_cons: bool) -> dict[Expr, Expr]:
    """Walk ``func`` in post-order, mapping every node to itself in a dict (a memo, as
    passes keep to meet shared nodes once); with ``hash_cons``, also map every
    op call to its canonical call in a table per op keyed by its merged args (what
    EliminateCommonSubexpr keeps besides its memo). Nothing else: no attrs, lets,
    scopes or rebuilding. Returns the memo (node -> canonical node)."""
    memo: dict[Expr, Expr] = {}
    tables: dict[Expr, dict[Any, Expr]] = {}
    stack: list[Expr | None] = [func.body]
    while stack:
        node = stack.pop()
        if node is None:  # the node under the marker has its children done
            node = stack.pop()
            canon = node
            if hash_cons and type(node) is Call and type(node.op) is Op:
                args = tuple(map(memo.__getitem__, node.args))
                if args == node.args:
                    args = node.args  # an unchanged call's own tuple is the key, as in CSE
                canon = tables.setdefault(node.op, {}).setdefault(args, node)
            memo[node] = canon
        elif node not in memo:
            stack.append(node)
            stack.append(None)
            stack.extend(node.children())
    return memo


# The passes below run the walk as the std passes run theirs: with the collector paused,
# and with every table freed inside the pause (see irpass.ir.gcpause).


@function_pass(opt_level=0, name="(walk)")
def walk_reference(func: Function, mod: IRModule, ctx: PassContext) -> Function:
    """Every node visited once and remembered in a dict; returns ``func``."""
    with gc_paused():
        _walk(func, hash_cons=False)
    return func


@function_pass(opt_level=0, name="(walk + hash-cons)")
def hash_cons_reference(func: Function, mod: IRModule, ctx: PassContext) -> Function:
    """The walk plus one hash-consing table entry per distinct op call; returns ``func``."""
    with gc_paused():
        _walk(func, hash_cons=True)
    return func


#: The reference walks by row name (``--reference``).
REFERENCE_WALKS: dict[str, Pass] = {
    p.info.name: p for p in (walk_reference, hash_cons_reference)
}

# --- timing ------------------------------------------------------------------------


def fresh(mod: IRModule) -> IRModule:
    """A new module object holding the same functions.

    Type inference remembers the modules it typed and returns them at once;
    every timed run gets a module it has not seen, so a pass's required
    InferType does its full walk, as it does on the new module the previous
    pass of a pipeline returns.
    """
    return IRModule(dict(mod.functions))


def time_batch(p: Pass, mod: IRModule, copies: int, **ctx: object) -> tuple[float, IRModule]:
    """Seconds per run of ``p`` over ``copies`` fresh copies of ``mod``, and one result.

    ``p`` runs as users run it, inside a ``Sequential``: only a Sequential runs
    the passes a pass requires (its InferType), unless ``ctx`` disables them.
    The results are kept until the clock has stopped, so freeing them is not
    timed (as it is not for a single run). Everything alive before the sample
    (the workload graphs, earlier samples' leftovers) is frozen out of the
    garbage collector's reach (``gc.freeze``) during it: a collection the
    pass's allocations trigger then scans what the pass made, not the inputs,
    whose construction is timed separately.
    """
    inputs = [fresh(mod) for _ in range(copies)]
    run = Sequential([p], name="bench")
    results = []
    gc.collect()
    gc.freeze()
    try:
        with PassContext(**ctx):
            start = CLOCK()
            for m in inputs:
                results.append(run(m))
            seconds = CLOCK() - start
    finally:
        gc.unfreeze()
    return seconds / copies, results[-1]


def typed(mod: IRModule) -> IRModule:
    """A fresh copy of ``mod`` with every node typed (what a pass body meets in a pipeline)."""
    with PassContext(opt_level=3):
        return get_pass("InferType")(fresh(mod))


def workload(name: str) -> Workload:
    """The workload called ``name``."""
    return next(wl for wl in WORKLOADS if wl.name == name)


def timed_build(build: Callable[[int], IRModule], n: int) -> tuple[IRModule, float]:
    """The workload at size ``n`` and the seconds it took to build."""
    gc.collect()
    start = CLOCK()
    mod = build(n)
    return mod, CLOCK() - start


def _short(counts: Counter[str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(counts.items()))


def std_passes() -> list[str]:
    """Every pass the ``std`` plugin registers."""
    return [name for name in list_passes() if get_pass_entry(name).owner == "std"]


def pick_passes(names: list[str] | None) -> list[str]:
    """``names`` (every std pass when None), checked to be std passes."""
    known = std_passes()
    unknown = sorted(set(names or ()) - set(known))
    if unknown:
        raise ValueError(f"not std passes: {', '.join(unknown)}")
    return names or known


def make_pass(name: str) -> Pass:
    """A std pass with the arguments the benchmark runs it with, or a reference walk."""
    if name in REFERENCE_WALKS:
        return REFERENCE_WALKS[name]
    if name == "ConvertLayout":
        return get_pass(name, desired_layouts={"nn.conv2d": ["NHWC", "default"]})
    return get_pass(name)


# --- the three modes ---------------------------------------------------------------


def main_table(sizes: list[int], repeat: int, clock: str) -> None:
    """The W1/W2/W3 table: each workload with its own pass, each in a fresh process.

    The sizes of a workload are timed in interleaved rounds (each round runs
    every size once), so a change of machine load during the measurement
    hits every size alike instead of skewing the scaling ratio. One sample
    at a smaller N runs the pass on enough fresh copies to cover as many
    steps as the largest N, so every sample is long enough for the clock.
    Each workload runs in a process of its own for the reason given in
    :func:`all_passes_table`.
    """
    header = (
        f"{'workload':8} {'pass':36} {'N':>7} {'build s':>8} {'pass ms':>9} {'us/step':>8} "
        f"{'target':>6} {'ok':4}  nodes before -> after"
    )
    print(header)
    print("-" * len(header), flush=True)
    for wl in WORKLOADS:
        _in_fresh_process(["--main-rows", wl.name], sizes, repeat, clock)


def main_rows(wl: Workload, sizes: list[int], repeat: int) -> None:
    """The rows of :func:`main_table` for one workload, and its scaling ratios."""
    p = get_pass(wl.pass_name)
    cases = []  # (label, n, module, context, build seconds, counts before)
    for n in sizes:
        mod, build_s = timed_build(wl.build, n)
        before = count_ops(mod)
        if "InferType" in p.info.required:
            cases.append((f"{wl.pass_name} (+InferType)", n, mod, {}, build_s, before))
            cases.append(
                (
                    f"{wl.pass_name} (body, typed)",
                    n,
                    typed(mod),
                    {"disabled_pass": ["InferType"]},
                    build_s,
                    before,
                )
            )
        else:
            cases.append((wl.pass_name, n, mod, {}, build_s, before))
    largest = max(sizes)
    samples: list[list[float]] = [[] for _ in cases]
    outs: list[IRModule | None] = [None] * len(cases)
    for _ in range(repeat):
        for i, (_, n, mod, ctx, _, _) in enumerate(cases):
            seconds, outs[i] = time_batch(p, mod, -(-largest // n), opt_level=3, **ctx)
            samples[i].append(seconds / n)
    rows: dict[str, dict[int, float]] = {}
    for (label, n, _, _, build_s, before), times, out in zip(cases, samples, outs, strict=True):
        per_run = statistics.median(times)
        us = per_run * 1e6
        rows.setdefault(label, {})[n] = us
        ok = "ok" if wl.done(out, n) else "FAIL"
        print(
            f"{wl.name:8} {label:36} {n:>7} {build_s:8.3f} {per_run * n * 1e3:9.1f} "
            f"{us:8.2f} {wl.target_us:6.1f} {ok:4}  "
            f"{_short(before)} -> {_short(count_ops(out))}",
            flush=True,
        )
    for label, by_n in rows.items():
        lo, hi = min(by_n), max(by_n)
        if hi > lo:
            ratio = by_n[hi] / by_n[lo]
            verdict = "ok" if ratio <= 1.3 else "ABOVE TARGET"
            print(
                f"  {wl.name} {label}: us/step at N={hi} / at N={lo} = {ratio:.2f} "
                f"(linear: 1.0, target <= 1.3) {verdict}",
                flush=True,
            )


def _in_fresh_process(args: list[str], sizes: list[int], repeat: int, clock: str) -> None:
    """Run this script with ``args`` (a child mode) in a new process; it prints to our stdout."""
    cmd = [sys.executable, __file__, *args, "--repeat", str(repeat), "--clock", clock]
    subprocess.run([*cmd, "--sizes", *map(str, sizes)], check=True)


def all_passes_table(
    sizes: list[int], repeat: int, clock: str, passes: list[str], body: bool
) -> None:
    """us/step of each of ``passes`` on each workload at every size, and the scaling ratio.

    With ``body`` the modules are typed beforehand and a pass's InferType requirement
    is skipped, so a row times the pass body alone (InferType's own row then re-types).

    Timed like the main table: the sizes in interleaved rounds, a small N batched to
    the largest N's steps. Each row (a workload and a pass) is timed in a fresh process
    of this script, as pyperf runs each benchmark: what earlier rows built and freed
    (W1's 10^5 program alone is 132 MB) decides where this row's 10^5 program lands in
    memory, and that moved a ratio by up to 0.5 when all rows shared one process.
    """
    size_cols = " ".join(f"{'N=' + str(n):>10}" for n in sizes)
    what = "typed modules, InferType requirement skipped" if body else "as users run them"
    print(f"\nstd passes ({what}), us/step (median of {repeat}, one process per row)")
    header = f"{'workload':8} {'pass':26} {size_cols} {'ratio':>6}"
    print(header)
    print("-" * len(header), flush=True)
    for wl in WORKLOADS:
        for name in passes:
            args = ["--all-passes-row", wl.name, name] + (["--typed"] if body else [])
            _in_fresh_process(args, sizes, repeat, clock)


def all_passes_row(wl: Workload, name: str, sizes: list[int], repeat: int, body: bool) -> None:
    """One row of :func:`all_passes_table`: pass ``name`` on ``wl`` at every size."""
    lo, hi = min(sizes), max(sizes)
    mods = {n: timed_build(wl.build, n)[0] for n in sizes}
    ctx: dict[str, object] = {}
    if body:
        mods = {n: typed(m) for n, m in mods.items()}
        if name != "InferType":
            ctx["disabled_pass"] = ["InferType"]
    p = make_pass(name)
    samples: dict[int, list[float]] = {n: [] for n in sizes}
    failed: dict[int, str] = {}
    for _ in range(repeat):
        for n, mod in mods.items():
            if n in failed:
                continue
            try:
                seconds, _ = time_batch(p, mod, -(-hi // n), opt_level=3, **ctx)
            except PassError as err:
                failed[n] = _failure(err)
                continue
            samples[n].append(seconds / n * 1e6)
    by_n = {n: statistics.median(v) for n, v in samples.items() if v}
    cells = " ".join(f"{failed[n] if n in failed else f'{by_n[n]:.2f}':>10}" for n in sizes)
    both = lo in by_n and hi in by_n and hi > lo
    ratio = f"{by_n[hi] / by_n[lo]:6.2f}" if both else "     -"
    print(f"{wl.name:8} {name:26} {cells} {ratio}", flush=True)


def w5(n: int) -> None:
    """Every std pass once on W3 at size ``n``: build time, pass time, no RecursionError."""
    print(f"\nW5: W3 at N={n:,}, every std pass once (recursion limit {sys.getrecursionlimit()})")
    mod, build_s = timed_build(w3, n)
    print(f"build: {build_s:.1f} s, {_short(count_ops(mod))}")
    print(f"{'pass':26} {'seconds':>8} {'us/step':>8}  result")
    for name in std_passes():
        start = CLOCK()
        try:
            seconds, out = time_batch(make_pass(name), mod, 1, opt_level=3)
        except PassError as err:
            print(f"{name:26} {CLOCK() - start:8.1f} {'':8}  {_failure(err)}")
            continue
        extra = ""
        if name == "DeadCodeElimination":
            extra = " (no tanh: ok)" if count_ops(out)["tanh"] == 0 else " (tanh left: FAIL)"
        print(f"{name:26} {seconds:8.1f} {seconds / n * 1e6:8.2f}  ok{extra}", flush=True)
        del out


def _failure(err: PassError) -> str:
    cause = err.__cause__
    if isinstance(cause, RecursionError):
        return "RecursionError"
    return f"FAILED: {str(err).splitlines()[0][:60]}"


def main() -> None:
    """Parse the options and print the tables."""
    global CLOCK, WORKLOADS
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000], help="values of N"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument(
        "--all-passes", action="store_true", help="also every std pass on W1/W2/W3 at every size"
    )
    parser.add_argument("--w5", action="store_true", help="every std pass once on W3 at --w5-n")
    parser.add_argument("--w5-n", type=int, default=1_000_000, help="N for --w5 (default 10^6)")
    parser.add_argument("--no-main", action="store_true", help="skip the W1/W2/W3 table")
    parser.add_argument(
        "--passes", nargs="+", metavar="PASS", help="with --all-passes: only these std passes"
    )
    parser.add_argument(
        "--reference",
        action="store_true",
        help="with --all-passes: also the two reference walks, first on each workload",
    )
    parser.add_argument(
        "--typed",
        action="store_true",
        help="with --all-passes: typed modules, InferType requirements skipped (pass bodies)",
    )
    parser.add_argument("--all-passes-row", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--main-rows", help=argparse.SUPPRESS)
    parser.add_argument(
        "--workloads", nargs="+", choices=[wl.name for wl in WORKLOADS], help="only these"
    )
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="wall time (default) or this process's CPU time (for a busy machine)",
    )
    args = parser.parse_args()
    if args.workloads:
        WORKLOADS = [wl for wl in WORKLOADS if wl.name in args.workloads]
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.repeat < 1 or any(n < 1 for n in args.sizes):
        parser.error("--repeat and --sizes must be positive")
    sizes = sorted(set(args.sizes))
    if args.main_rows:  # a child of main_table
        main_rows(workload(args.main_rows), sizes, args.repeat)
        return
    if args.all_passes_row:  # a child of all_passes_table
        wl_name, name = args.all_passes_row
        all_passes_row(workload(wl_name), name, sizes, args.repeat, args.typed)
        return
    try:
        passes = pick_passes(args.passes)
    except ValueError as err:
        parser.error(str(err))
    if args.reference:
        if not args.all_passes:
            parser.error("--reference goes with --all-passes")
        passes = [*REFERENCE_WALKS, *passes]
    print(f"irpass {irpass.__version__}, Python {sys.version.split()[0]}, {args.clock} clock")
    if not args.no_main:
        print(f"W1/W2/W3, median of {args.repeat} runs, build timed separately\n")
        main_table(sizes, args.repeat, args.clock)
    if args.all_passes:
        all_passes_table(sizes, args.repeat, args.clock, passes, args.typed)
    if args.w5:
        w5(args.w5_n)


if __name__ == "__main__":
    main()
