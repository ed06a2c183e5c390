"""What ``verify_each`` costs: the -O3 pipeline with and without it, model by model.

Models: the ONNX pack's committed zoo (``contrib/irpass-onnx/models/*.onnx``, real
architectures exported by torch at tiny sizes) when irpass-onnx is installed, else the
built-in example networks. Per model: the median over ``--repeat`` runs of the
pipeline alone (loading is outside the timing), without and with the option, and the
overhead in percent; then the total over all models and the median overhead.
Asserts nothing.

    python benchmarks/bench_verify_each.py
    python benchmarks/bench_verify_each.py --clock cpu --repeat 7 --models-dir DIR
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from irpass.ir import IRModule
from irpass.testing import models
from irpass.transform import PassContext, default_pipeline

ZOO = Path(__file__).resolve().parents[1] / "contrib" / "irpass-onnx" / "models"


def _models(models_dir: Path) -> list[tuple[str, Callable[[], IRModule]]]:
    try:
        import irpass
        import irpass_onnx  # noqa: F401 - registers the .onnx format
    except ImportError:
        return sorted(models.MODELS.items())
    return [(p.stem, lambda p=p: irpass.load(p)) for p in sorted(models_dir.glob("*.onnx"))]


def _median(fn: Callable[[], object], repeat: int, clock: Callable[[], float]) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--opt-level", type=int, default=3)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    parser.add_argument("--models-dir", type=Path, default=ZOO)
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    level = args.opt_level

    rows = []
    pipeline = default_pipeline(level)
    print(f"{'model':48s} {'-O' + str(level) + ' ms':>9s} {'+verify ms':>11s} {'overhead':>9s}")
    for name, build in _models(args.models_dir):
        mod = build()

        def plain(mod: IRModule = mod) -> None:
            with PassContext(opt_level=level):
                pipeline(mod)

        def verified(mod: IRModule = mod) -> None:
            with PassContext(opt_level=level, config={"verify_each": True}):
                pipeline(mod)

        plain()
        verified()  # warm up both (type relations' caches, imports)
        a = _median(plain, args.repeat, clock)
        b = _median(verified, args.repeat, clock)
        rows.append((a, b))
        print(f"{name:48s} {a * 1e3:9.2f} {b * 1e3:11.2f} {100 * (b - a) / a:8.0f}%")
    total_a = sum(a for a, _ in rows)
    total_b = sum(b for _, b in rows)
    median = statistics.median(100 * (b - a) / a for a, b in rows)
    print(f"\n{len(rows)} models, clock {args.clock}: -O{level} {total_a:.3f} s in all, with "
          f"verify_each {total_b:.3f} s: +{100 * (total_b - total_a) / total_a:.0f}% in all, "
          f"median +{median:.0f}% per model")


if __name__ == "__main__":
    main()
