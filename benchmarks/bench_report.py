"""What the HTML report of an -O3 run costs: time and size, ResNet-50 and BERT.

Per model: the pipeline alone, the pipeline with a :class:`ReportInstrument` recording
(its overhead: diffs and op counts after each pass), then ``write()`` (the page, with
the pictures of each changed region when Graphviz is installed), as medians over
``--repeat`` runs; the report's cost is the overhead plus the write; and the file's
size. Loading the model is outside the timing. The targets (issue 23): under 5 s and
under 5 MB per report. Asserts nothing.

Models: ResNet-50 from the ``onnx`` package's test data (``light_resnet50.onnx``) and
BERT from ``--bert`` (default: the full-size export in /work/full/zoo if present, else
the pack's tiny one), or any ``.onnx``/``.ir`` files given as arguments.

    python benchmarks/bench_report.py
    python benchmarks/bench_report.py --repeat 5 --no-pictures model.onnx
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import irpass
from irpass.instrument.report import ReportInstrument
from irpass.transform import PassContext, default_pipeline

ROOT = Path(__file__).resolve().parents[1]
FULL_BERT = Path("/work/full/zoo/hf_bert_sdpa_mask.dynamo18.onnx")
TINY_BERT = ROOT / "contrib" / "irpass-onnx" / "models" / "hf_bert_sdpa_mask.dynamo18.onnx"


def _default_models(bert: Path | None) -> list[Path]:
    import onnx

    resnet = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"
    if bert is None:
        bert = FULL_BERT if FULL_BERT.exists() else TINY_BERT
    return [resnet, bert]


def _median(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path)
    parser.add_argument("--bert", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--opt-level", type=int, default=3)
    parser.add_argument("--no-pictures", action="store_true")
    args = parser.parse_args()
    import irpass_onnx  # noqa: F401 - registers the .onnx format

    paths = args.models or _default_models(args.bert)
    level = args.opt_level
    print(
        f"{'model':<40} {'passes':>8} {'+record':>8} {'write':>8} {'report':>8} "
        f"{'size':>9} {'changed':>7}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.html"
        for path in paths:
            mod = irpass.load(path)
            pipeline = default_pipeline(level)

            def plain(mod=mod, pipeline=pipeline) -> None:
                with PassContext(opt_level=level):
                    pipeline(mod)

            report = ReportInstrument(pictures=not args.no_pictures, pipeline=pipeline)

            def recorded(mod=mod, pipeline=pipeline, report=report) -> None:
                with PassContext(opt_level=level, instruments=[report]):
                    pipeline(mod)

            base = _median(plain, args.repeat)
            with_report = _median(recorded, args.repeat)
            summary = {"model": path.name, "pipeline": "default"}
            write = _median(lambda r=report, s=summary: r.write(out, summary=s), args.repeat)
            cost = max(with_report - base, 0.0) + write
            size = out.stat().st_size
            print(
                f"{path.name[:40]:<40} {base:>7.2f}s {with_report - base:>7.2f}s "
                f"{write:>7.2f}s {cost:>7.2f}s {size / 2**20:>7.2f}MB "
                f"{len(report.changes):>7}"
            )


if __name__ == "__main__":
    main()
