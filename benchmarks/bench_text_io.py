"""Time the text printer and parser on modules of 10^3 .. 10^6 nodes.

Prints, per workload and size, the median of ``--repeat`` runs of ``str(mod)``
(print) and ``irpass.parse(text)`` (parse) in nodes per second, and the
trend: each size's time per node over the smallest size's (1.0 when cost is
linear). Nodes are the IR nodes of each function (calls, lets, tuples,
projections, ifs, functions, vars, constants), ops not counted. Workloads:

- ``W1``: the W1 chain of ``bench_std_passes`` (``multiply(%x, add(c1, c2))`` with two
  4x4 constants a step): a ``#[metadata]`` line per constant;
- ``W3``: the W3 chain of ``bench_std_passes`` (``let %d = tanh(%x);`` around
  ``add``/``nn.relu``), untyped: short lines, no types;
- ``W3 typed``: the same after ``InferType``: a ``/* ty=... */`` comment on every line;
- ``zoo``: BERT from the irpass-onnx zoo (``hf_bert_sdpa_mask``, torchscript
  export) after -O3, as a module of K copies of its ``@main`` sharing its
  weights (``meta[Constant][k]``): fused functions with typed params and
  attributes, calls of them, tuple projections. Needs irpass-onnx; skipped
  without it.

After each size the parsed module must be structurally equal to the printed
one (the round trip is checked; nothing is asserted about time).

    python benchmarks/bench_text_io.py                       # all sizes
    python benchmarks/bench_text_io.py --max 100000 --repeat 5 --clock cpu
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import irpass
from irpass.ir import IRModule, Op, post_order_visit, structural_equal
from irpass.ir.type_infer import infer_type

sys.path.insert(0, str(Path(__file__).parent))
from bench_std_passes import w1, w3  # noqa: E402  (the builders, one definition)

ZOO_MODEL = "hf_bert_sdpa_mask.torchscript17.onnx"
SIZES = (10**3, 10**4, 10**5, 10**6)

#: The clock: wall time, or (``--clock cpu``) this process's CPU time.
CLOCK: Callable[[], float] = time.perf_counter


def count_nodes(mod: IRModule) -> int:
    """The nodes of every function of ``mod`` (each function's own count; ops left out)."""
    n = 0

    def count(node: object) -> None:
        nonlocal n
        if type(node) is not Op:
            n += 1

    for func in mod.functions.values():
        post_order_visit(func, count)
    return n


def w1_module(nodes: int) -> IRModule:
    """W1 with about ``nodes`` nodes (4 a step: two constants, add, multiply)."""
    return w1(max(1, nodes // 4))


def w3_module(nodes: int) -> IRModule:
    """W3 with about ``nodes`` nodes (5 a step: tanh, add, relu, a let and its var)."""
    return w3(max(1, nodes // 5))


def w3_typed_module(nodes: int) -> IRModule:
    """W3 after InferType."""
    return infer_type(w3_module(nodes))


_ZOO_TEXT: list[str] = []


def _zoo_main_text() -> str:
    """The text of the zoo model after -O3 (imported once)."""
    if not _ZOO_TEXT:
        import onnx
        from irpass.transform import PassContext, default_pipeline
        from irpass_onnx import from_onnx

        root = Path(__file__).resolve().parents[1]
        path = root / "contrib" / "irpass-onnx" / "models" / ZOO_MODEL
        mod = from_onnx(onnx.load(str(path)))
        with PassContext(opt_level=3):
            mod = default_pipeline(3)(mod)
        _ZOO_TEXT.append(str(mod))
    return _ZOO_TEXT[0]


def zoo_module(nodes: int) -> IRModule:
    """K copies of the zoo model's ``@main`` (``@main``, ``@main_1``, ...), about ``nodes``
    nodes, sharing its metadata constants."""
    text = _zoo_main_text()
    meta_at = text.index("\n#[metadata]")
    header, _, main = text[:meta_at].partition("\ndef @main")
    per_copy = count_nodes(irpass.parse(text))
    copies = max(1, round(nodes / per_copy))
    defs = [f"def @main{'' if k == 0 else f'_{k}'}{main}" for k in range(copies)]
    return irpass.parse(header + "\n" + "\n".join(defs) + text[meta_at:])


def zoo_available() -> bool:
    """Whether irpass-onnx and onnx are installed."""
    try:
        import irpass_onnx  # noqa: F401
        import onnx  # noqa: F401
    except ImportError:
        return False
    return True


def _timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """The median time of ``repeat`` calls of ``fn`` and the last result."""
    times = []
    out: object = None
    for _ in range(repeat):
        out = None  # the previous result dies before the next run
        gc.collect()
        start = CLOCK()
        out = fn()
        times.append(CLOCK() - start)
    return statistics.median(times), out


def run(name: str, build: Callable[[int], IRModule], sizes: list[int], repeat: int) -> None:
    """Print one workload's rows."""
    print(f"\n{name}")
    print(
        f"{'nodes':>10} {'text MB':>8} {'print s':>8} {'print n/s':>10} {'trend':>6} "
        f"{'parse s':>8} {'parse n/s':>10} {'trend':>6}"
    )
    first: tuple[float, float] | None = None
    for size in sizes:
        mod = build(size)
        n = count_nodes(mod)
        t_print, text = _timed(lambda mod=mod: str(mod), repeat)
        assert isinstance(text, str)
        t_parse, parsed = _timed(lambda text=text: irpass.parse(text), repeat)
        same = structural_equal(parsed, mod)
        del parsed, mod
        per = (t_print / n, t_parse / n)
        if first is None:
            first = per
        print(
            f"{n:>10,} {len(text) / 1e6:>8.1f} {t_print:>8.3f} {n / t_print:>10,.0f} "
            f"{per[0] / first[0]:>6.2f} {t_parse:>8.3f} {n / t_parse:>10,.0f} "
            f"{per[1] / first[1]:>6.2f}{'' if same else '  ROUND TRIP DIFFERS'}"
        )


def main() -> None:
    global CLOCK
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=SIZES[-1], help="largest size (nodes)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument(
        "--workloads", default="W1,W3,W3 typed,zoo", help="comma-separated: W1, W3, W3 typed, zoo"
    )
    args = parser.parse_args()
    if args.clock == "cpu":
        CLOCK = time.process_time
    sizes = [s for s in SIZES if s <= args.max]
    print(
        f"Python {sys.version.split()[0]}, clock {args.clock}, median of {args.repeat}; "
        "trend = time per node / the first row's"
    )
    builders = {"W1": w1_module, "W3": w3_module, "W3 typed": w3_typed_module, "zoo": zoo_module}
    # The op set loads on first use: not in the first row's time.
    irpass.parse("def @main(%x: float32) { tanh(%x) }")
    for name in args.workloads.split(","):
        name = name.strip()
        if name == "zoo" and not zoo_available():
            print("\nzoo: skipped (needs irpass-onnx and onnx)")
            continue
        label = f"zoo: {ZOO_MODEL} -O3, K copies of @main" if name == "zoo" else name
        run(label, builders[name], sizes, args.repeat)


if __name__ == "__main__":
    main()
