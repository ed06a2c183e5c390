"""Instructions per workload step of every std pass, counted by valgrind: the scaling
check that machine load cannot move.

``bench_std_passes.py`` times the passes; on a shared VM its 10^5/10^3 ratios move by
0.1-0.5 from run to run, and part of what they show is the memory hierarchy (a 10^3
program sits in the CPU caches, a 10^5 one does not). This script counts instead:
each workload and size runs in one process under ``valgrind --tool=callgrind``, which
executes the pass on a simulated CPU and counts the machine instructions it retires.
Whatever else the machine does, the count does not change (hash seeds are fixed, no
clock is read; what the process did before a pass moves it by 1.5% at most), so a
ratio of instructions per step between two sizes says whether the *work* per node grows
with the program: 1.00 is linear.

How: the child process builds the workload, types it (uncounted, so every pass meets a
typed program at every size), warms each pass up on a tiny program
(imports, lazy tables), freezes what is alive out of the collector (as the timing
script does), then runs each pass over its copies inside ``functools.reduce``.
Callgrind counts only inside that C function (``--toggle-collect``) and writes one
profile each time it returns (``--dump-after``), so every pass gets its own count;
garbage collections the pass triggers are inside and counted. A small N runs on as
many copies as make up the largest N's steps, like the timing script.

Optionally (``--cache-sim``) callgrind also simulates a cache hierarchy with this
machine's 32 MiB last-level cache and reports last-level misses per step: the memory
traffic that instruction counts leave out. (Simulation has no hardware prefetcher,
so it overstates the cost of streaming through memory in order.)

    python benchmarks/bench_instruction_counts.py                       # every std pass
    python benchmarks/bench_instruction_counts.py --workloads W3 --passes InferType
    python benchmarks/bench_instruction_counts.py --cache-sim --passes InferType

Needs ``valgrind`` on the PATH. Under valgrind Python runs about 50 times slower:
the full table takes about half an hour with two jobs.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_std_passes as bench  # noqa: E402  (the workloads and the pass set)
from irpass.transform import PassContext, Sequential  # noqa: E402

#: The C function the child runs each pass inside; no pass may call it itself.
WRAPPER = "functools_reduce"

#: Last-level cache simulated with --cache-sim: size, associativity, line (this VM's L3).
LL_CACHE = "33554432,16,64"


def child(workload: str, n: int, copies: int, passes: list[str]) -> None:
    """Build ``workload`` at ``n`` and run each pass over ``copies`` copies under the wrapper."""
    wl = bench.workload(workload)
    # Typed once before anything is counted: the first typing of a program writes a
    # type into every node, a later one compares, so without this the first pass that
    # types it would count the one path at 10^5 and mostly the other over the copies
    # of 10^3. (In the timing script, too, only the first round meets an untyped one.)
    mod = bench.typed(wl.build(n))
    tiny = wl.build(4)
    for name in passes:
        # in a Sequential, as users run it: the pass's requirements (InferType) run too
        p = Sequential([bench.make_pass(name)], name="count")
        with PassContext(opt_level=3):
            p(bench.fresh(tiny))  # warm up outside the counted region
            inputs = [bench.fresh(mod) for _ in range(copies)]
            gc.collect()
            gc.freeze()
            try:
                _, results = functools.reduce(_run_into, inputs, (p, []))
            finally:
                gc.unfreeze()
        if name == wl.pass_name and not wl.done(results[-1], n):
            raise SystemExit(f"{name} did not do its job on {workload} at N={n}")
        del inputs, results


def _run_into(acc: tuple, mod: object) -> tuple:
    p, results = acc
    results.append(p(mod))  # kept until the count stops, as the timing script does
    return acc


def _totals(path: Path) -> dict[str, int]:
    """The event totals of one callgrind dump, by event name (``Ir``, ``DLmr``, ...)."""
    events: list[str] = []
    for line in path.read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("totals:"):
            values = [int(x) for x in line.split()[1:]]
            return dict(zip(events, values + [0] * (len(events) - len(values)), strict=True))
    raise ValueError(f"{path}: no totals line")


def count(
    workload: str, n: int, copies: int, passes: list[str], cache_sim: bool
) -> list[dict[str, int]]:
    """Per pass, the callgrind event totals of running it over the copies."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg"
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            f"--toggle-collect={WRAPPER}",
            f"--dump-after={WRAPPER}",
            f"--callgrind-out-file={out}",
        ]
        if cache_sim:
            cmd += ["--cache-sim=yes", f"--LL={LL_CACHE}"]
        cmd += [sys.executable, __file__, "--child", workload, str(n), str(copies), *passes]
        env = dict(os.environ, PYTHONHASHSEED="0")
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{workload} N={n}: child failed:\n{done.stderr[-2000:]}")
        dumps = sorted(Path(tmp).glob("cg.*"), key=lambda p: int(p.suffix[1:]))
        # Imports may call the wrapper too; the passes' runs are the last dumps.
        if len(dumps) < len(passes):
            raise RuntimeError(f"{workload} N={n}: {len(dumps)} dumps for {len(passes)} passes")
        return [_totals(d) for d in dumps[-len(passes):]]


def main() -> None:
    """Parse the options, run the children, print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--workloads", nargs="+", choices=[w.name for w in bench.WORKLOADS])
    parser.add_argument("--passes", nargs="+", help="std passes to count (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="valgrind processes at once")
    parser.add_argument(
        "--cache-sim", action="store_true", help="also simulated last-level misses per step"
    )
    args = parser.parse_args()
    if args.child:
        workload, n, copies, *passes = args.child
        child(workload, int(n), int(copies), passes)
        return
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not on the PATH")
    try:
        passes = bench.pick_passes(args.passes)
    except ValueError as err:
        parser.error(str(err))
    workloads = args.workloads or [w.name for w in bench.WORKLOADS]
    sizes = sorted(set(args.sizes))
    copies = {n: -(-sizes[-1] // n) for n in sizes}  # each size covers the largest's steps
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {
            (w, n): pool.submit(count, w, n, copies[n], passes, args.cache_sim)
            for w in workloads
            for n in sizes
        }
        results = {key: f.result() for key, f in futures.items()}
    steps = {n: n * copies[n] for n in sizes}
    lo, hi = sizes[0], sizes[-1]
    print(f"Python {sys.version.split()[0]}, instructions per step (callgrind)")
    cols = " ".join(f"{'N=' + str(n):>10}" for n in sizes)
    extra = f" {'LL miss/step':>14}" if args.cache_sim else ""
    header = f"{'workload':8} {'pass':26} {cols} {'ratio':>6}{extra}"
    print(header)
    print("-" * len(header))
    for w in workloads:
        for i, name in enumerate(passes):
            per = {n: results[w, n][i]["Ir"] / steps[n] for n in sizes}
            cells = " ".join(f"{per[n]:10,.0f}" for n in sizes)
            # a pass with nothing to do (Inline without Inline=1 functions) has no ratio
            ratio = f"{per[hi] / per[lo]:6.2f}" if per[lo] >= 100 else "     -"
            line = f"{w:8} {name:26} {cells} {ratio}"
            if args.cache_sim:
                ll = {
                    n: sum(results[w, n][i].get(e, 0) for e in ("ILmr", "DLmr", "DLmw")) / steps[n]
                    for n in sizes
                }
                line += f" {ll[lo]:6.1f} ->{ll[hi]:6.1f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
