"""What a Python tool pays before it optimizes anything, next to onnxsim and irpass.

Issue 19 asks for import + -O3 + export at 3x onnxsim on every model. On the small
convolution nets onnxsim takes 15-100 ms, so 3x leaves 5-30 ms. This script puts
beside that budget the least any tool written against protobuf's Python API pays
for the same model, in memory (ModelProto to ModelProto):

- ``protobuf``: every node's op type, inputs, outputs and attributes read into Python
  values (``onnx.helper.get_attribute_value``) and every initializer's ``raw_data``
  read; then a new ModelProto written with the same nodes (each made in place in
  the graph, attributes through ``onnx.helper.make_attribute``), the same
  initializers and the graph's inputs and outputs. No IR, no type inference, no pass;

and irpass's import + -O3 + export and onnxsim's ``simplify``, measured by
``bench_zoo.py``'s workers. Each tool runs in a fresh process of its own, one
warm-up run, then ``--repeat`` rounds over the models, median, CPU time.

    python contrib/irpass-onnx/benchmarks/bench_floor.py --models-dir /work/full/zoo \\
        'tv_(mobilenet_v3_small|squeezenet|efficientnet)'
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_zoo  # noqa: E402


def round_trip(model: Any) -> Any:
    """``model`` read into Python values and written back into a new ModelProto."""
    import onnx
    from onnx import helper

    graph = model.graph
    nodes = [(n.op_type, n.domain, list(n.input), list(n.output),
              {a.name: helper.get_attribute_value(a) for a in n.attribute}) for n in graph.node]
    tensors = [(t.name, list(t.dims), t.data_type, t.raw_data) for t in graph.initializer]
    out = onnx.ModelProto()
    out.ir_version = model.ir_version
    out.opset_import.extend(model.opset_import)
    g = out.graph
    for op_type, domain, inputs, outputs, attrs in nodes:
        node = g.node.add()
        node.op_type, node.domain = op_type, domain
        node.input.extend(inputs)
        node.output.extend(outputs)
        node.attribute.extend(helper.make_attribute(k, v) for k, v in attrs.items())
    for name, dims, data_type, raw in tensors:
        tensor = g.initializer.add()
        tensor.name, tensor.data_type = name, data_type
        tensor.dims.extend(dims)
        tensor.raw_data = raw
    g.input.extend(graph.input)
    g.output.extend(graph.output)
    return out


def worker(files: Sequence[str], repeat: int, models_dir: Path) -> None:
    """Time :func:`round_trip` on ``files`` (rounds, after a warm-up); one JSON line each."""
    import onnx

    round_trip(onnx.load(str(bench_zoo.MODELS_DIR / bench_zoo.WARMUP)))
    times: dict[str, list[float]] = {f: [] for f in files}
    for _ in range(repeat):
        for file in files:
            model = onnx.load(str(models_dir / file))
            start = time.process_time()
            out = round_trip(model)
            times[file].append(time.process_time() - start)
            del model, out
    for file in files:
        print(json.dumps({"file": file, "seconds": statistics.median(times[file])}), flush=True)


def main() -> None:
    """Run the three workers and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help="regexes of model file names (default: all)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--models-dir", type=Path, default=bench_zoo.MODELS_DIR)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    models_dir = args.models_dir.resolve()
    if args.worker:
        worker(args.models, args.repeat, models_dir)
        return
    import re

    entries = json.loads((models_dir / "models.json").read_text())["models"]
    patterns = [re.compile(p) for p in args.models]
    files = [e["file"] for e in entries
             if not patterns or any(p.search(e["file"]) for p in patterns)]
    if not files:
        parser.error("no model matches")
    nodes = {e["file"]: e["nodes"] for e in entries}
    ours = {t: bench_zoo._measure(t, files, args.repeat, "cpu", models_dir)
            for t in ("irpass", "onnxsim")}
    done = subprocess.run([sys.executable, __file__, "--worker", "--repeat", str(args.repeat),
                           "--models-dir", str(models_dir), *files],
                          capture_output=True, text=True, check=True)
    floor = {r["file"]: r["seconds"] for r in map(json.loads, done.stdout.splitlines())}
    print("Versions: " + ", ".join(bench_zoo.versions()))
    print(f"CPU ms, median of {args.repeat}, in memory (ModelProto to ModelProto)")
    print("| model | nodes | onnxsim | its third (3x) | protobuf round trip | irpass "
          "(import + -O3 + export) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for file in files:
        sim = ours["onnxsim"][file].get("seconds", {}).get("memory")
        ir = ours["irpass"][file].get("seconds")
        sim_s = "fail" if sim is None else f"{1e3 * sim:.1f}"
        third = "-" if sim is None else f"{1e3 * sim / 3:.1f}"
        ir_s = "fail" if ir is None else (f"{1e3 * ir['memory']:.1f} ({1e3 * ir['import']:.1f} + "
                                         f"{1e3 * ir['o3']:.1f} + {1e3 * ir['export']:.1f})")
        print(f"| {file.removesuffix('.onnx')} | {nodes[file]} | {sim_s} | {third} | "
              f"{1e3 * floor[file]:.1f} | {ir_s} |")


if __name__ == "__main__":
    main()
