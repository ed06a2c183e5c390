"""irpass next to onnxsim, onnxslim and onnxruntime's offline optimizer on the model zoo.

For every model of ``contrib/irpass-onnx/models/models.json`` (see ``make_models.py`` there),
or of the folder ``--models-dir`` names (``make_models.py --size full --out DIR`` writes the
same architectures at their real sizes there), each tool goes end to end, file to file, as a
user runs it, and each part is timed:

- ``irpass``: ``onnx.load``; ``from_onnx`` (weights as constants), the default pipeline at
  -O3 (as ``irpass optimize -O3`` runs it) and ``to_onnx``; ``onnx.save``;
- ``onnxsim``: ``onnx.load``; ``onnxsim.simplify`` (its defaults); ``onnx.save``;
- ``onnxslim``: ``onnx.load``; ``onnxslim.slim`` (its defaults); ``onnx.save``;
- ``ort``: an onnxruntime session at ``ORT_ENABLE_EXTENDED`` writing its optimized model
  (``optimized_model_filepath``); its node count is shown, its time only for reference (it
  also builds the session).

With ``--export-opset N`` the irpass worker also exports each -O3 module at opset ``N`` (as
the config key ``onnx.export_opset`` sets it; untimed) and the table gets a column with that
export's node count, next to irpass's own (which exports at the opset the model was
imported with). From opset 23 the exporter writes the fused ops of -O3 (attention, RMS norm,
rotary embedding; GELU from 20, SiLU as Swish from 24) as one node each.

Each tool runs in a fresh process of its own, one after the other (never two at once). The
process imports the tool and runs it once on a warm-up model, untimed, then runs every model
``--repeat`` times in rounds (model 1, model 2, ..., then again), each run on a fresh load of
the file, and the time shown is the median: wall-clock time by default, the process's CPU time
(all its threads) with ``--clock cpu``, which other load on the machine moves less. Node
counts are of the main graph of the file each tool writes. A tool that fails on a model shows
``fail`` and the reason is printed below the table. Below the table, a second one lists the
models whose output files (external data included) differ in size by more than 1% and 100 KB
between the tools, in MB, with the input's size.

Two times are shown per tool: **in memory**, ModelProto to ModelProto (the tool's own work:
irpass's import + -O3 + export, onnxsim's ``simplify``), and **file to file** (that plus
``onnx.load`` and ``onnx.save``, the same calls for every tool). On full-size models the
load and save of the weights are most of the file-to-file time and no tool can go below them.

    /work/venv-zoo/bin/python contrib/irpass-onnx/benchmarks/bench_zoo.py          # all
    /work/venv-zoo/bin/python contrib/irpass-onnx/benchmarks/bench_zoo.py bert vit --repeat 1
    nice -n 10 python contrib/irpass-onnx/benchmarks/bench_zoo.py --clock cpu  # a busy machine
    python contrib/irpass-onnx/benchmarks/bench_zoo.py --models-dir /tmp/full --tools irpass,onnxsim
    /work/venv-zoo/bin/python contrib/irpass-onnx/benchmarks/bench_zoo.py hf_ --export-opset 24

It needs the pack's ``[bench]`` extra (onnxsim, onnxslim) and onnxruntime. The output is the
Markdown table pasted into ``benchmarks/README.md``, the tools' versions first.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: The committed zoo; ``--models-dir`` (passed on to the workers) picks another folder.
MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
TOOLS = ("irpass", "onnxsim", "onnxslim", "ort")
WARMUP = "tv_squeezenet.torchscript17.onnx"
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
#: The clock the tools are timed with (the worker sets it from ``--clock``).
clock: Callable[[], float] = time.perf_counter
#: The extra export opset of the irpass worker (``--export-opset``; None: no extra export).
export_opset: int | None = None
#: The -O3 module of the irpass worker's last run (exported again at ``export_opset``).
_last_module: Any = None
DISTRIBUTIONS = ("irpass", "irpass-onnx", "onnx", "onnxsim", "onnxslim", "onnxruntime", "numpy")


# -- the tools, each file to file; each returns {part: seconds} -----------------------------


def _file_to_file(src: str, dst: str,
                  transform: Callable[[Any], tuple[Any, dict[str, float]]]) -> dict[str, float]:
    """``onnx.load``, ``transform`` (ModelProto to ModelProto, with the times of its own
    parts), ``onnx.save``: the times of each, ``memory`` (the transform) and ``total``."""
    import onnx

    t0 = clock()
    model = onnx.load(src)
    t1 = clock()
    model, parts = transform(model)
    t2 = clock()
    onnx.save(model, dst)
    t3 = clock()
    return {"total": t3 - t0, "load": t1 - t0, "memory": t2 - t1, "save": t3 - t2, **parts}


def _irpass(model: Any) -> tuple[Any, dict[str, float]]:
    from irpass.transform import PassContext, default_pipeline
    from irpass_onnx import from_onnx, to_onnx

    t0 = clock()
    mod = from_onnx(model, weights="constants")
    t1 = clock()
    with PassContext(opt_level=3):
        mod = default_pipeline(3)(mod)
    t2 = clock()
    out = to_onnx(mod)
    parts = {"import": t1 - t0, "o3": t2 - t1, "export": clock() - t2}
    global _last_module
    _last_module = mod
    return out, parts


def _nodes_at_opset(opset: int) -> int | None:
    """The node count of the last -O3 module exported at ``opset`` (as the config key
    ``onnx.export_opset`` sets it; untimed); None when that export fails."""
    from irpass.transform import PassContext
    from irpass_onnx import to_onnx

    try:
        with PassContext(config={"onnx.export_opset": opset}):
            return len(to_onnx(_last_module).graph.node)
    except Exception:  # noqa: BLE001 - shown as "fail" in its column
        return None


def _onnxsim(model: Any) -> tuple[Any, dict[str, float]]:
    import onnxsim

    model, ok = onnxsim.simplify(model)
    if not ok:
        raise RuntimeError("onnxsim's check of the simplified model failed")
    return model, {}


def _onnxslim(model: Any) -> tuple[Any, dict[str, float]]:
    import onnxslim

    return onnxslim.slim(model), {}


def _run_irpass(src: str, dst: str) -> dict[str, float]:
    return _file_to_file(src, dst, _irpass)


def _run_onnxsim(src: str, dst: str) -> dict[str, float]:
    return _file_to_file(src, dst, _onnxsim)


def _run_onnxslim(src: str, dst: str) -> dict[str, float]:
    return _file_to_file(src, dst, _onnxslim)


def _run_ort(src: str, dst: str) -> dict[str, float]:
    import onnxruntime as ort

    t0 = clock()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = dst
    options.log_severity_level = 3
    ort.InferenceSession(src, options, providers=["CPUExecutionProvider"])
    return {"total": clock() - t0}


RUNNERS: dict[str, Callable[[str, str], dict[str, float]]] = {
    "irpass": _run_irpass, "onnxsim": _run_onnxsim, "onnxslim": _run_onnxslim, "ort": _run_ort,
}


def _node_counts(path: str) -> tuple[int, int]:
    """The nodes of the main graph of the model in ``path``, and how many of them only
    compute shapes (``irpass_onnx.testing.shape_computing_nodes``)."""
    import onnx
    from irpass_onnx.testing import shape_computing_nodes

    graph = onnx.load(path, load_external_data=False).graph
    return len(graph.node), len(shape_computing_nodes(graph))


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def worker(tool: str, files: Sequence[str], repeat: int, clock_name: str,
           models_dir: Path = MODELS_DIR, opset: int | None = None) -> int:
    """Run ``tool`` on ``files`` of ``models_dir`` (``repeat`` rounds after one warm-up run on
    the committed zoo's :data:`WARMUP`); print one JSON line per model: its median times and
    output node count (irpass with ``opset``: also the node count of its export at that
    opset), or the error."""
    global clock, export_opset
    clock = CLOCKS[clock_name]
    export_opset = opset if tool == "irpass" else None
    run = RUNNERS[tool]
    results: dict[str, dict[str, Any]] = {f: {"times": []} for f in files}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.onnx")
        try:
            run(str(MODELS_DIR / WARMUP), out)
        except Exception:  # noqa: BLE001 - a tool that fails on the warm-up is still measured
            pass
        for _ in range(repeat):
            for file in files:
                result = results[file]
                if "error" in result:
                    continue
                try:
                    result["times"].append(run(str(models_dir / file), out))
                    result["nodes"], result["shape_nodes"] = _node_counts(out)
                    result["bytes"] = sum(f.stat().st_size for f in Path(tmp).iterdir())
                    if export_opset is not None:
                        result["nodes_at_opset"] = _nodes_at_opset(export_opset)
                except Exception as exc:  # noqa: BLE001 - recorded for the table
                    result["error"] = _one_line(f"{type(exc).__name__}: {exc}")
                finally:
                    for leftover in Path(tmp).iterdir():
                        leftover.unlink()
    for file in files:
        result = results[file]
        times = result.pop("times")
        if times and "error" not in result:
            result["seconds"] = {k: statistics.median(t[k] for t in times) for k in times[0]}
        print(json.dumps({"file": file, **result}), flush=True)
    return 0


def _measure(tool: str, files: Sequence[str], repeat: int, clock_name: str,
             models_dir: Path, opset: int | None = None) -> dict[str, dict[str, Any]]:
    """Run the worker of ``tool`` in a fresh process; its results by file."""
    cmd = [sys.executable, __file__, "--worker", tool, "--repeat", str(repeat), "--clock",
           clock_name, "--models-dir", str(models_dir),
           *(["--export-opset", str(opset)] if opset is not None else []), *files]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    results = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            item = json.loads(line)
            results[item.pop("file")] = item
    for file in files:
        results.setdefault(file, {"error": f"the {tool} worker died: "
                                           f"{_one_line(done.stderr[-400:])}"})
    return results


def versions() -> list[str]:
    """``name version`` of Python and every tool."""
    out = [f"python {platform.python_version()} ({platform.machine()}, {os.cpu_count()} cpus)"]
    for dist in DISTRIBUTIONS:
        try:
            out.append(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            out.append(f"{dist} not installed")
    return out


def _secs(result: dict[str, Any], part: str = "total") -> str:
    if "skipped" in result:
        return "-"
    return "fail" if "seconds" not in result else f"{result['seconds'][part]:.3f}"


def _ratio(irpass: dict[str, Any], other: dict[str, Any], part: str) -> float | None:
    if "seconds" not in irpass or "seconds" not in other:
        return None
    return other["seconds"][part] / max(irpass["seconds"][part], 1e-9)


def _nodes(result: dict[str, Any], shapes: bool = False) -> str:
    """The node count a tool left (with its shape-computing nodes in parentheses)."""
    if "skipped" in result:
        return "-"
    if "error" in result:
        return "fail"
    if shapes and "shape_nodes" in result:
        return f"{result['nodes']} ({result['shape_nodes']})"
    return str(result.get("nodes", "-"))


def render(entries: Sequence[dict[str, Any]], results: dict[str, dict[str, dict[str, Any]]],
           models_dir: Path = MODELS_DIR, opset: int | None = None) -> list[str]:
    """The Markdown table, a totals line and the failures. For models with dynamic inputs
    (``make_models.py --size dynamic``) the node counts show the nodes that only compute
    shapes in parentheses, and the summary compares both counts. With ``opset`` (the
    irpass worker's ``--export-opset``) a column shows the node count of irpass's export at
    that opset, and the summary compares it with the other tools'."""
    dynamic = any(i.get("dynamic") for e in entries for i in e["inputs"])
    lean = 0  # models where irpass leaves no more nodes and shape nodes than both others
    at_opset = f"irpass opset {opset} | " if opset is not None else ""
    lines = [
        f"| model | nodes | irpass | {at_opset}onnxsim | onnxslim | ORT extended | irpass in "
        "memory s (import + -O3 + export) | onnxsim in memory s | onnxslim in memory s | "
        "onnxsim / irpass in memory | irpass file to file s | onnxsim file to file s | "
        "onnxsim / irpass file to file |",
        "| --- | ---: | ---: | " + ("---: | " if opset is not None else "") + "---: | ---: "
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    # models where the export at ``opset`` has fewer nodes than onnxsim's and onnxslim's
    # and no more than ORT's extended optimizer's
    target = measured = 0
    failures: list[str] = []
    totals = {(tool, part): 0.0 for tool in ("irpass", "onnxsim") for part in ("memory", "total")}
    faster = {"memory": 0, "total": 0}
    low = {"memory": float("inf"), "total": float("inf")}
    fewer = both_ok = 0
    for entry in entries:
        file = entry["file"]
        r = {tool: results[tool][file] for tool in TOOLS}
        ir = r["irpass"]
        parts = (_secs(ir, "memory") if "seconds" not in ir else
                 f"{_secs(ir, 'memory')} ({_secs(ir, 'import')} + {_secs(ir, 'o3')} + "
                 f"{_secs(ir, 'export')})")
        ratios = {part: _ratio(ir, r["onnxsim"], part) for part in ("memory", "total")}
        if ratios["total"] is not None:
            both_ok += 1
            for part, ratio in ratios.items():
                totals["irpass", part] += ir["seconds"][part]
                totals["onnxsim", part] += r["onnxsim"]["seconds"][part]
                faster[part] += ratio >= 3
                low[part] = min(low[part], ratio)
            others = [r[t]["nodes"] for t in ("onnxsim", "onnxslim") if "nodes" in r[t]]
            fewer += all(ir["nodes"] < n for n in others)
            lean += all(ir["nodes"] <= r[t]["nodes"] and ir["shape_nodes"] <= r[t]["shape_nodes"]
                        for t in ("onnxsim", "onnxslim") if "nodes" in r[t])
        shown = {part: "-" if x is None else f"{x:.1f}x" for part, x in ratios.items()}
        exported = str(entry["nodes"])
        if dynamic:
            exported = "{} ({})".format(*_node_counts(str(models_dir / file)))
        extra = ""
        if opset is not None:
            count = ir.get("nodes_at_opset")
            extra = f"| {_nodes(ir) if 'nodes_at_opset' not in ir else count or 'fail'} "
            others = [r[t].get("nodes") for t in ("onnxsim", "onnxslim", "ort")]
            if count is not None and None not in others:
                measured += 1
                target += count < others[0] and count < others[1] and count <= others[2]
        lines.append(f"| {file.removesuffix('.onnx')} | {exported} | {_nodes(ir, dynamic)} "
                     f"{extra}| {_nodes(r['onnxsim'], dynamic)} "
                     f"| {_nodes(r['onnxslim'], dynamic)} "
                     f"| {_nodes(r['ort'], dynamic)} "
                     f"| {parts} | {_secs(r['onnxsim'], 'memory')} "
                     f"| {_secs(r['onnxslim'], 'memory')} | {shown['memory']} | {_secs(ir)} "
                     f"| {_secs(r['onnxsim'])} | {shown['total']} |")
        failures += [f"- {file} / {tool}: {r[tool]['error']}" for tool in TOOLS
                     if "error" in r[tool]]

    def overall(part: str, name: str) -> str:
        a, b = totals["irpass", part], totals["onnxsim", part]
        return (f"{name}: irpass {a:.2f} s in all, onnxsim {b:.2f} s ({b / max(a, 1e-9):.1f}x), "
                f"irpass at least 3x faster on {faster[part]}, lowest ratio "
                f"{low[part]:.1f}x")

    summary = [
        "",
        f"{len(entries)} models; irpass and onnxsim both finished {both_ok}. "
        f"{overall('memory', 'In memory')}. {overall('total', 'File to file')}. irpass leaves "
        f"fewer nodes than both onnxsim and onnxslim on {fewer}.",
    ]
    if opset is not None:
        summary.append(f"At export opset {opset} irpass leaves fewer nodes than onnxsim and "
                       f"onnxslim and no more than ORT extended on {target} of the {measured} "
                       f"models all four tools finished.")
    if dynamic:
        summary.append(f"Node counts: all nodes (those only computing shapes). irpass leaves no "
                       f"more nodes and no more shape nodes than onnxsim and onnxslim on {lean} "
                       f"of the {both_ok} models.")
    summary += _sizes(entries, results, models_dir)
    if failures:
        summary += ["", "Failures:", *failures]
    return lines + summary


def _apart(big: int, small: int) -> bool:
    """Whether file sizes ``big`` and ``small`` differ by more than 1% and 100 KB."""
    return big > 1.01 * small and big - small > 100_000


def _sizes(entries: Sequence[dict[str, Any]], results: dict[str, dict[str, dict[str, Any]]],
           models_dir: Path) -> list[str]:
    """The table of output sizes (MB) of the models where the tools' outputs differ by more
    than 1% and 100 KB, and how often irpass's is the smallest (within those bounds)."""
    tools = ("irpass", "onnxsim", "onnxslim")
    rows, smallest, compared = [], 0, 0
    for entry in entries:
        file = entry["file"]
        sizes = {t: results[t][file].get("bytes") for t in tools}
        known = [b for b in sizes.values() if b is not None]
        if sizes["irpass"] is None or len(known) < 2:
            continue
        compared += 1
        smallest += not _apart(sizes["irpass"], min(known))
        if _apart(max(known), min(known)):
            size_in = sum(p.stat().st_size for p in models_dir.glob(file + "*"))
            mb = ["-" if b is None else f"{b / 1e6:.1f}" for b in sizes.values()]
            rows.append(f"| {file.removesuffix('.onnx')} | {size_in / 1e6:.1f} | "
                        + " | ".join(mb) + " |")
    if not compared:
        return []
    out = ["", f"Output size: irpass's file is the smallest (or within 1% or 100 KB of it) on "
               f"{smallest} of the {compared} models written by irpass and another tool."]
    if rows:
        out += ["", "| model (outputs apart) | input MB | irpass MB | onnxsim MB | "
                    "onnxslim MB |", "| --- | ---: | ---: | ---: | ---: |", *rows]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every tool on the selected models and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*",
                        help="regexes of model file names (default: every model)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per model (median)")
    parser.add_argument("--tools", default=",".join(TOOLS),
                        help=f"comma-separated tools (default: {','.join(TOOLS)})")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="time with the wall clock (default) or the process's CPU time")
    parser.add_argument("--models-dir", type=Path, default=MODELS_DIR,
                        help="a folder with models.json, e.g. make_models.py --size full's "
                             "(default: the committed zoo)")
    parser.add_argument("--export-opset", type=int, default=None, metavar="N",
                        help="also export irpass's -O3 module at ONNX opset N (the config key "
                             "onnx.export_opset) and show that export's node count in a "
                             "column of its own")
    parser.add_argument("--worker", choices=TOOLS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    models_dir = args.models_dir.resolve()
    if args.worker:
        return worker(args.worker, args.models, args.repeat, args.clock, models_dir,
                      args.export_opset)
    try:
        manifest = json.loads((models_dir / "models.json").read_text())
    except (OSError, ValueError) as err:
        parser.error(f"--models-dir {models_dir}: no readable models.json ({err})")
    patterns = [re.compile(p) for p in args.models]
    entries = [e for e in manifest["models"]
               if not patterns or any(p.search(e["file"]) for p in patterns)]
    if not entries:
        parser.error("no model matches")
    tools = [t for t in args.tools.split(",") if t]
    unknown = sorted(set(tools) - set(TOOLS))
    if unknown:
        parser.error(f"unknown tool(s) {unknown} (tools: {', '.join(TOOLS)})")
    print("Versions: " + ", ".join(versions()), flush=True)
    print(f"Models: {models_dir}; clock: {args.clock}; median of {args.repeat} run(s) per "
          "model and tool", flush=True)
    files = [e["file"] for e in entries]
    results = {t: {f: {"skipped": True} for f in files} for t in TOOLS}
    for tool in tools:
        start = time.perf_counter()
        results[tool] = _measure(tool, files, args.repeat, args.clock, models_dir,
                                 args.export_opset if tool == "irpass" else None)
        print(f"{tool}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    print("\n".join(render(entries, results, models_dir, args.export_opset)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
