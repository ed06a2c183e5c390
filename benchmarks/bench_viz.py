"""Pictures of large models: irpass.viz on ResNet-50 and BERT-base, as loaded and at -O3.

For each model: its expression nodes, the boxes drawn (repeated blocks collapsed),
what was collapsed, the median wall time of ``to_dot`` (``--repeat`` runs) and of
Graphviz's layout to SVG and to PNG (``render``). Needs irpass-onnx and Graphviz.
ResNet-50 is onnx's light model (shipped with the onnx package); BERT is the tiny
export in contrib/irpass-onnx/models unless ``--bert`` names a full-size one.

Asserts nothing.

    python benchmarks/bench_viz.py [--repeat 5] [--bert PATH] [--no-O3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import irpass
from irpass import viz
from irpass.ir import IRModule
from irpass.transform import PassContext, default_pipeline
from irpass_onnx.testing import light_model

_TINY_BERT = (
    Path(__file__).resolve().parent.parent
    / "contrib/irpass-onnx/models/hf_bert_eager_mask.dynamo18.onnx"
)


def _median(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times = []
    out: object = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _row(name: str, mod: IRModule, repeat: int) -> None:
    graph = viz.build_graph(mod, max_nodes=None)
    t_dot, dot = _median(lambda: viz.to_dot(mod, max_nodes=None), repeat)
    assert isinstance(dot, str)
    t_svg, svg = _median(lambda: viz.render(dot, "svg"), max(1, repeat // 2))
    t_png, png = _median(lambda: viz.render(dot, "png"), max(1, repeat // 2))
    print(
        f"{name:<18} {graph.ir_nodes:>8,} {len(graph.boxes):>6,} {t_dot:>9.3f} {t_svg:>8.2f} "
        f"{t_png:>8.2f} {len(svg):>10,} {len(png):>10,}  {graph.summary()}"  # type: ignore[arg-type]
    )


def main() -> None:
    """Print one row per model (and per model at -O3)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--bert", default=str(_TINY_BERT), help="the BERT ONNX file")
    parser.add_argument("--no-O3", dest="o3", action="store_false")
    args = parser.parse_args()
    models = {"resnet50": str(light_model("resnet50").path), "bert": args.bert}
    print(
        f"{'model':<18} {'IR nodes':>8} {'boxes':>6} {'to_dot s':>9} {'svg s':>8} "
        f"{'png s':>8} {'svg bytes':>10} {'png bytes':>10}  collapsed"
    )
    for name, path in models.items():
        mod = irpass.load(path)
        _row(name, mod, args.repeat)
        if args.o3:
            with PassContext(opt_level=3):
                mod = default_pipeline(3)(mod)
            _row(name + " -O3", mod, args.repeat)


if __name__ == "__main__":
    main()
