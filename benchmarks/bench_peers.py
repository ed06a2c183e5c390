"""irpass side by side with the systems users would pick instead, in one run.

Workloads W1-W4 of ``../shared/WORKLOADS.md`` (W5 for irpass alone), each
system building them in its own idiom (``benchmarks/peers/``: irpass's builders
from bench_std_passes.py; TVM Relax's BlockBuilder; xDSL's ``arith``/``math`` on
f32 scalars, since its folders fold scalars only; a ``torch.fx.Graph``; an ONNX
``ModelProto`` read into ``onnx_ir``) and running its own passes:

- W1 fold: irpass ``FoldConstant``; TVM ``relax.transform.FoldConstant``; xDSL
  ``canonicalize``; fx ``split_const_subgraphs`` + ``run_folding``; onnxscript's
  ``fold_constants``;
- W2 cse: irpass ``EliminateCommonSubexpr`` with its required ``InferType``, on the
  module typed as it is built (as TVM's BlockBuilder types each binding; the build
  time, not the pass, pays it) and, printed below the table, on the untyped module
  the op builders make (InferType then walks every node); TVM ``EliminateCommonSubexpr``;
  xDSL ``cse``; fx ``CSEPass``; onnx_ir ``CommonSubexpressionEliminationPass``;
- W3 dce: irpass and TVM ``DeadCodeElimination``; xDSL ``dce``; fx
  ``Graph.eliminate_dead_code``; onnx_ir ``RemoveUnusedNodesPass``;
- W4 overhead: irpass ``Sequential`` (and with ``PassTimingInstrument``); TVM
  ``tvm.transform.Sequential`` (and with its ``PassTimingInstrument``); xDSL
  ``PassPipeline`` (and with a callback reading the clock between passes, its
  instrument); fx ``PassManager``; onnx_ir ``passes.Sequential``.

Every case (a workload, a system and an N) runs in a fresh process of this
script: the graph is built (not timed), the pass timed alone, ``--repeat``
times on a fresh graph each (the passes of xDSL, fx and onnx_ir change their
input), and the median kept. After each run the op counts are checked: a pass
that did not do its job (W1: no add left and N multiplies by a constant; W2: N
exps; W3: no tanh) is reported as such, not timed. W1-W3 figures are
microseconds per step (pass time / N); W4 figures are microseconds per pass
execution of a pipeline of ``--w4-passes`` trivial passes (median of
``--repeat`` runs after one warm-up). The ratio columns are irpass's lead:
the peer's figure over irpass's. A peer not installed (the ``bench`` extra:
``pip install -e '.[bench]'``) is shown as such; a case that raised or took
longer than ``--timeout`` says so.

    python benchmarks/bench_peers.py
    python benchmarks/bench_peers.py --sizes 1000 10000 --repeat 5 --peers irpass tvm
    python benchmarks/bench_peers.py --workloads W4 --w4-passes 1000
    python benchmarks/bench_peers.py --w5          # also W5: irpass on W3 at N = 10^6
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.metadata
import json
import statistics
import subprocess
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the peers package and the irpass builders

#: System key -> module of benchmarks/peers, in column order.
PEERS = {
    "irpass": "peers.irpass_case",
    "tvm": "peers.tvm_case",
    "xdsl": "peers.xdsl_case",
    "fx": "peers.fx_case",
    "onnx_ir": "peers.onnx_ir_case",
}
WORKLOADS = ["W1", "W2", "W3", "W4"]


# --- a case, in its own process --------------------------------------------------------


def done(workload: str, counts: dict[str, int], n: int) -> bool:
    """Whether the pass did its job on a workload of ``n`` steps (WORKLOADS.md)."""
    if workload == "W1":
        return (
            counts.get("add", 0) == 0
            and counts.get("multiply", 0) == n
            and counts.get("multiply by a constant", 0) == n
        )
    if workload == "W2":
        return counts.get("exp", 0) == n
    return counts.get("tanh", 0) == 0


def run_case(system: str, workload: str, n: int, repeat: int) -> dict[str, Any]:
    """Time ``system`` on ``workload`` at ``n`` (W4: ``n`` trivial passes)."""
    peer = importlib.import_module(PEERS[system])
    if workload == "W4":
        out: dict[str, Any] = {}
        for instrumented in (False, True):
            once = peer.w4(n, instrumented)
            if once is None:
                continue
            once()  # warm-up
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                once()
                times.append(time.perf_counter() - start)
            out["instr" if instrumented else "plain"] = statistics.median(times) / n * 1e6
        return out
    out = _time_pass(peer, workload, n, repeat, peer.build)
    for label, build in getattr(peer, "VARIANTS", {}).get(workload, {}).items():
        variant = _time_pass(peer, workload, n, repeat, lambda _, k, b=build: b(k))
        if "us" in variant:
            out[f"us_{label}"] = variant["us"]
    return out


def _time_pass(peer: Any, workload: str, n: int, repeat: int,
               build: Callable[[str, int], Any]) -> dict[str, Any]:
    """The pass of ``peer`` on ``build(workload, n)``: median µs per step and the counts."""
    peer.run(workload, build(workload, 2))  # warm-up: first-call costs are not timed
    times, build_s = [], []
    before = after = None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        graph = build(workload, n)
        build_s.append(time.perf_counter() - start)
        before = dict(peer.counts(workload, graph))
        # What is alive (the graph) is frozen out of the collector's scans for the
        # run, as in bench_std_passes.py: a collection the pass's allocations trigger
        # then scans what the pass made, not the input, whose build is not timed.
        gc.collect()
        gc.freeze()
        # for the parent, should this run outlast the timeout: when the pass started
        print(f"start {time.time()}", flush=True)
        try:
            start = time.perf_counter()
            result = peer.run(workload, graph)
            times.append(time.perf_counter() - start)
            print("end", flush=True)
        finally:
            gc.unfreeze()
        after = dict(peer.counts(workload, result))
        if not done(workload, after, n):
            return {"error": "did not do its job", "before": before, "after": after}
        del graph, result
    return {
        "us": statistics.median(times) / n * 1e6,
        "build_s": statistics.median(build_s),
        "before": before,
        "after": after,
    }


def w5(n: int) -> None:
    """irpass's DeadCodeElimination on W3 at ``n`` (10^6): build and pass time."""
    peer = importlib.import_module(PEERS["irpass"])
    start = time.perf_counter()
    mod = peer.build("W3", n)
    build_s = time.perf_counter() - start
    start = time.perf_counter()
    out = peer.run("W3", mod)
    pass_s = time.perf_counter() - start
    ok = "ok" if done("W3", peer.counts("W3", out), n) else "did not do its job"
    print(
        f"W5 irpass: W3 at N={n:,}, recursion limit {sys.getrecursionlimit()}: build "
        f"{build_s:.1f} s, DeadCodeElimination {pass_s:.1f} s "
        f"({pass_s / n * 1e6:.2f} us/step), {ok}"
    )


# --- the table ---------------------------------------------------------------------------


def version(system: str) -> str | None:
    """The installed version of ``system``'s distribution, or None."""
    dist = {
        "irpass": "irpass",
        "tvm": "apache-tvm",
        "xdsl": "xdsl",
        "fx": "torch",
        "onnx_ir": "onnx-ir",
    }[system]
    try:
        v = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
    if system == "onnx_ir":
        try:
            v += f" + onnxscript {importlib.metadata.version('onnxscript')}"
        except importlib.metadata.PackageNotFoundError:
            pass
    return v


def in_child(system: str, workload: str, n: int, repeat: int, timeout: float) -> dict:
    """:func:`run_case` in a fresh process of this script."""
    cmd = [sys.executable, __file__, "--case", system, workload, str(n), "--repeat", str(repeat)]
    try:
        done_ = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""
        out = out.decode() if isinstance(out, bytes) else out
        lines = out.splitlines()
        if not lines or not lines[-1].startswith("start "):
            return {"error": f"over {timeout:.0f} s"}
        # a pass run had started and not ended: a lower bound of its time
        started = float(lines[-1].split()[1])
        return {"error": f"over {timeout:.0f} s", "at_least": (time.time() - started) / n * 1e6}
    lines = done_.stdout.strip().splitlines()
    if done_.returncode != 0 or not lines:
        last = (done_.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"failed: {last[:70]}"}
    return json.loads(lines[-1])


def cell(result: dict | None, key: str = "us") -> str:
    """A figure, or why there is none."""
    if result is None:
        return "not installed"
    if "error" in result:
        return result["error"]
    value = result.get(key)
    return "-" if value is None else f"{value:.2f}"


def ratio(irpass: dict | None, peer: dict | None, key: str = "us") -> str:
    """The peer's figure over irpass's (irpass's lead), at least the bound a peer's
    timeout gives (``>``), or ``-``."""
    if not irpass or not peer or key not in irpass:
        return "-"
    if key in peer:
        return f"{peer[key] / irpass[key]:.1f}x"
    if "at_least" in peer:
        return f">{peer['at_least'] / irpass[key]:.0f}x"
    return "-"


def main() -> None:
    """Parse the options, run the cases and print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--peers", nargs="+", choices=list(PEERS), default=list(PEERS))
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=WORKLOADS)
    parser.add_argument("--w4-passes", type=int, default=1000, help="passes in W4's pipeline")
    parser.add_argument(
        "--timeout",
        type=float,
        default=300,
        help="seconds per case; a case that the previous N's figure says would take "
        "longer is not run",
    )
    parser.add_argument("--w5", action="store_true", help="also W5 (irpass, W3 at --w5-n)")
    parser.add_argument("--w5-n", type=int, default=1_000_000)
    parser.add_argument("--case", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.repeat < 1 or any(n < 1 for n in args.sizes) or args.w4_passes < 1:
        parser.error("--repeat, --sizes and --w4-passes must be positive")
    if args.case:  # a child: one case, its result as one JSON line
        warnings.simplefilter("ignore")  # fx's const_fold warns for every folded attribute
        system, workload, n = args.case
        print(json.dumps(run_case(system, workload, int(n), args.repeat)))
        return
    systems = ["irpass", *[s for s in args.peers if s != "irpass"]]
    versions = {s: version(s) for s in systems}
    print(f"Python {sys.version.split()[0]}; median of {args.repeat}; each case in a fresh process")
    for s in systems:
        print(f"  {s:8} {versions[s] or 'not installed'}")
    peers = systems[1:]
    sizes = sorted(set(args.sizes))
    if any(w != "W4" for w in args.workloads):
        header = f"{'':4} {'N':>7} {'irpass':>9}" + "".join(f" {p:>20} {'lead':>6}" for p in peers)
        print("\nW1-W3: us per step (pass time / N)")
        print(header)
        print("-" * len(header), flush=True)
    variants: dict[str, dict[int, dict[str, float]]] = defaultdict(dict)
    for workload in [w for w in args.workloads if w != "W4"]:
        last_us: dict[str, float] = {}  # us/step at the previous size, to foresee a timeout
        for n in sizes:
            res: dict[str, dict | None] = {}
            for s in systems:
                if not versions[s]:
                    res[s] = None
                elif last_us.get(s, 0) * 1e-6 * n * (args.repeat + 1) > args.timeout:
                    res[s] = {"error": f"over {args.timeout:.0f} s (est.)", "at_least": last_us[s]}
                else:
                    res[s] = in_child(s, workload, n, args.repeat, args.timeout)
                    if "us" in res[s]:
                        last_us[s] = res[s]["us"]
                    elif "at_least" in res[s]:
                        last_us[s] = res[s]["at_least"]
            line = f"{workload:4} {n:>7} {cell(res['irpass']):>9}"
            for p in peers:
                line += f" {cell(res[p]):>20} {ratio(res['irpass'], res[p]):>6}"
            print(line, flush=True)
            variants[workload][n] = {k[3:]: v for k, v in (res["irpass"] or {}).items()
                                     if k.startswith("us_")}
    for workload, by_n in variants.items():
        for label in sorted({k for figures in by_n.values() for k in figures}):
            figures = ", ".join(f"{by_n[n][label]:.2f} at {n:,}" for n in by_n if label in by_n[n])
            print(f"{workload} irpass, {label}: {figures} (us per step)", flush=True)
    if "W4" in args.workloads:
        n = args.w4_passes
        print(f"\nW4: us per pass execution, a pipeline of {n:,} trivial passes")
        header = f"{'':28} {'irpass':>9}" + "".join(f" {p:>13} {'lead':>6}" for p in peers)
        print(header)
        print("-" * len(header), flush=True)
        res = {
            s: in_child(s, "W4", n, args.repeat, args.timeout) if versions[s] else None
            for s in systems
        }
        for key, label in (("plain", "no instruments"), ("instr", "with a timing instrument")):
            line = f"{label:28} {cell(res['irpass'], key):>9}"
            for p in peers:
                line += f" {cell(res[p], key):>13} {ratio(res['irpass'], res[p], key):>6}"
            print(line, flush=True)
    if args.w5:
        print()
        w5(args.w5_n)


if __name__ == "__main__":
    main()
