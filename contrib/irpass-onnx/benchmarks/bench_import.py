"""Per-stage times of irpass on the model zoo: onnx.load, import, -O3 and export.

For every model of ``contrib/irpass-onnx/models/`` (or the ones whose file name contains one
of the given words) the stages run in one process, warm (one untimed run of every model
first), ``--repeat`` times each, and the median is shown (wall-clock time, or with ``--clock
cpu`` the process's CPU time, which a busy machine moves less):

- ``load``: ``onnx.load`` of the file (for scale: every tool pays it);
- ``import``: ``irpass_onnx.from_onnx`` of the loaded model (weights as constants);
- ``O3``: ``default_pipeline(3)`` under ``PassContext(opt_level=3)``;
- ``export``: ``irpass_onnx.to_onnx`` and ``SerializeToString``.

The table also gives the import's cost per ONNX node (main graph), and the totals over the
zoo. ``--profile`` runs the import (or, with ``--profile-stage O3``/``export``, that stage)
of every selected model under cProfile once and prints the top functions by own time and by
cumulative time; ``--passes`` prints where -O3's time goes, pass by pass, summed over the
models (``PassTimingInstrument``)::

    python contrib/irpass-onnx/benchmarks/bench_import.py                 # every model
    python contrib/irpass-onnx/benchmarks/bench_import.py resnet18 bert --repeat 9
    python contrib/irpass-onnx/benchmarks/bench_import.py --profile --top 30
    python contrib/irpass-onnx/benchmarks/bench_import.py --passes

Figures from a shared machine move with its load: compare figures taken in one run.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
STAGES = ("load", "import", "O3", "export")


def _select(words: Sequence[str]) -> list[Path]:
    files = sorted(MODELS_DIR.glob("*.onnx"))
    if words:
        files = [f for f in files if any(w in f.name for w in words)]
    return files


def _stages(path: Path) -> tuple[dict[str, Callable[[Any], Any]], Any]:
    """The stage functions, each taking the previous stage's result."""
    import onnx
    from irpass.transform import PassContext, default_pipeline
    from irpass_onnx import from_onnx, to_onnx

    def o3(mod: Any) -> Any:
        with PassContext(opt_level=3):
            return default_pipeline(3)(mod)

    stages = {
        "load": lambda _: onnx.load(str(path)),
        "import": lambda model: from_onnx(model, weights="constants", source=str(path)),
        "O3": o3,
        "export": lambda mod: to_onnx(mod).SerializeToString(),
    }
    return stages, None


def run_once(path: Path, clock: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """Each stage's seconds for one run on ``path``."""
    stages, value = _stages(path)
    times: dict[str, float] = {}
    for name in STAGES:
        t0 = clock()
        value = stages[name](value)
        times[name] = clock() - t0
    return times


def _node_count(path: Path) -> int:
    import onnx

    return len(onnx.load(str(path), load_external_data=False).graph.node)


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def measure(files: Sequence[Path], repeat: int, clock: Callable[[], float] = time.perf_counter,
            ) -> list[dict[str, Any]]:
    """The median time of every stage per model (a warm-up round first); a model that fails
    has its error instead."""
    rows: list[dict[str, Any]] = [{"file": f, "nodes": _node_count(f), "times": []}
                                  for f in files]
    for round_ in range(repeat + 1):
        for row in rows:
            if "error" in row:
                continue
            gc.collect()
            try:
                times = run_once(row["file"], clock)
            except Exception as exc:  # noqa: BLE001 - shown in the table
                row["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
                continue
            if round_:  # round 0 warms the caches up
                row["times"].append(times)
    for row in rows:
        times = row.pop("times")
        if times:
            row["median"] = {s: statistics.median(t[s] for t in times) for s in STAGES}
    return rows


def render(rows: Sequence[dict[str, Any]]) -> str:
    """The table: ms per stage, us per node for the import, and the totals."""
    header = (f"| model | nodes | {' | '.join(s + ' ms' for s in STAGES)} | import us/node "
              "| import+O3+export ms |")
    lines = [header, "|" + "---|" * (len(STAGES) + 4)]
    total: dict[str, float] = defaultdict(float)
    nodes = 0
    for row in rows:
        name = row["file"].name.removesuffix(".onnx")
        if "median" not in row:
            lines.append(f"| {name} | {row['nodes']} | fail: {row.get('error', '?')} |")
            continue
        m = row["median"]
        nodes += row["nodes"]
        for s in STAGES:
            total[s] += m[s]
        e2e = m["import"] + m["O3"] + m["export"]
        per_node = 1e6 * m["import"] / max(row["nodes"], 1)
        lines.append(f"| {name} | {row['nodes']} | "
                     + " | ".join(f"{1e3 * m[s]:.1f}" for s in STAGES)
                     + f" | {per_node:.0f} | {1e3 * e2e:.1f} |")
    if nodes:
        e2e = total["import"] + total["O3"] + total["export"]
        lines.append(f"| **total** | {nodes} | "
                     + " | ".join(f"{1e3 * total[s]:.0f}" for s in STAGES)
                     + f" | {1e6 * total['import'] / nodes:.0f} | {1e3 * e2e:.0f} |")
        lines.append("")
        lines.append("per ONNX node over the zoo (us): "
                     + ", ".join(f"{s} {1e6 * total[s] / nodes:.1f}" for s in STAGES))
    return "\n".join(lines)


def profile(files: Sequence[Path], stage: str, top: int) -> str:
    """cProfile of ``stage`` over every file (the earlier stages run unprofiled)."""
    prof = cProfile.Profile()
    for path in files:
        try:
            run_once(path)  # warm
        except Exception:  # noqa: BLE001 - the table shows the failures
            continue
        stages, value = _stages(path)
        for name in STAGES:
            if name == stage:
                prof.enable()
                stages[name](value)
                prof.disable()
                break
            value = stages[name](value)
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def passes(files: Sequence[Path], repeat: int) -> str:
    """-O3's time per pass (``PassTimingInstrument``'s self time, nested passes indented
    under their parent), the median over ``repeat`` runs of every model, summed over the
    models, with the number of calls per model summed too."""
    import onnx
    from irpass.instrument import PassTimingInstrument
    from irpass.transform import PassContext, default_pipeline
    from irpass_onnx import from_onnx

    self_ms: dict[tuple[str, ...], float] = defaultdict(float)
    calls: dict[tuple[str, ...], int] = defaultdict(int)
    order: dict[tuple[str, ...], int] = {}
    for path in files:
        try:
            mod = from_onnx(onnx.load(str(path)), weights="constants")
        except Exception:  # noqa: BLE001 - the table shows the import's failures
            continue
        runs: dict[tuple[str, ...], list[float]] = defaultdict(list)
        for _ in range(repeat + 1):  # the first run warms up
            timing = PassTimingInstrument()
            with PassContext(opt_level=3, instruments=[timing]):
                default_pipeline(3)(mod)
                rows = timing.timings()
            parents: list[str] = []
            for r in rows:
                del parents[r.depth:]
                parents.append(r.name)
                key = tuple(parents)
                order.setdefault(key, len(order))
                runs[key].append(r.self_ns / 1e6)
                if len(runs[key]) == 1:
                    calls[key] += r.calls
        for key, values in runs.items():
            self_ms[key] += statistics.median(values[1:] or values)
    grand = sum(self_ms.values()) or 1.0
    lines = [f"{'pass':<40} {'self ms':>9} {'%':>6} {'calls':>7}"]
    for key in sorted(self_ms, key=order.__getitem__):
        lines.append(f"{'  ' * (len(key) - 1) + key[-1]:<40} {self_ms[key]:9.1f} "
                     f"{100 * self_ms[key] / grand:6.1f} {calls[key]:7d}")
    lines.append(f"{'total':<40} {grand:9.1f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring); prints the tables, returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("words", nargs="*", help="only models whose file name has one of these")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per model (median)")
    parser.add_argument("--clock", choices=CLOCKS, default="wall",
                        help="wall-clock time, or the process's CPU time (moves less with the "
                             "machine's load)")
    parser.add_argument("--profile", action="store_true", help="cProfile one stage")
    parser.add_argument("--profile-stage", default="import", choices=STAGES)
    parser.add_argument("--top", type=int, default=25, help="functions the profile lists")
    parser.add_argument("--passes", action="store_true", help="-O3's time per pass")
    args = parser.parse_args(argv)
    files = _select(args.words)
    if not files:
        print(f"no model in {MODELS_DIR} matches {args.words}", file=sys.stderr)
        return 1
    if args.profile:
        print(profile(files, args.profile_stage, args.top))
    elif args.passes:
        print(passes(files, args.repeat))
    else:
        print(render(measure(files, args.repeat, CLOCKS[args.clock])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
