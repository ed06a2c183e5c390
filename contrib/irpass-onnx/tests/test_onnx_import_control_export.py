"""Writing control flow back to ONNX: unrolled loops and scans are plain dataflow and export;
a Loop converted at run time exports as a Loop node (the enclosing values its body reads passed
in as loop-carried values); an IR ``If`` exports as an If node and a loop in the recursive form
as a Loop node (more in ``test_onnx_export_control.py``)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from irpass.transform import PassContext, default_pipeline
from irpass_onnx import from_onnx, to_onnx
from irpass_onnx.testing import run_onnxruntime
from onnx import TensorProto
from onnx_cases import rand
from test_onnx_import_control import graph, loop_body, model, node, vi

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def scan_body() -> onnx.GraphProto:
    """State: the running sum of the rows; scan outputs: the sums and the rows times 3."""
    return graph([node("Add", ["s_in", "row"], ["s_out"]), node("Identity", ["s_out"], ["acc"]),
                  node("Mul", ["row", "three"], ["r3"])],
                 [vi("s_in", F, [3]), vi("row", F, [3])],
                 [vi("s_out", F, [3]), vi("acc", F, [3]), vi("r3", F, [3])],
                 {"three": np.float32(3)}, name="scan_body")


def exported(m: onnx.ModelProto, optimize: bool) -> onnx.ModelProto:
    mod = from_onnx(m)
    if optimize:
        with PassContext(opt_level=3):
            mod = default_pipeline(3)(mod)
    out = to_onnx(mod)
    onnx.checker.check_model(out, full_check=True)
    return out


def same_in_onnxruntime(original: onnx.ModelProto, out: onnx.ModelProto, feeds) -> None:
    want = run_onnxruntime(original, feeds)
    got = run_onnxruntime(out, {i.name: feeds[i.name] for i in out.graph.input})
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("optimize", [False, True])
def test_an_unrolled_loop_and_scan_export_as_dataflow(optimize):
    m = model([node("Loop", ["M", "", "v0"], ["v", "rows"], body=loop_body()),
               node("Scan", ["v", "rows"], ["s", "acc", "r3"], body=scan_body(),
                    num_scan_inputs=1, scan_input_directions=[1])],
              [vi("x", F, [3]), vi("v0", F, [3])], [vi("s"), vi("acc"), vi("r3")],
              {"M": np.int64(4)})
    feeds = {"x": rand(3, seed=1), "v0": rand(3, seed=2)}
    out = exported(m, optimize)
    assert not {"Loop", "Scan"} & {n.op_type for n in out.graph.node}
    same_in_onnxruntime(m, out, feeds)


def test_a_loop_converted_at_run_time_exports_as_a_loop_node():
    m = model([node("Loop", ["M", "", "v0"], ["v", "scan"], body=loop_body(outer="x"))],
              [vi("M", I64, []), vi("x", F, [3]), vi("v0", F, [3])],
              [vi("v", F, [3]), vi("scan", F, [5, 3])])
    feeds = {"M": np.array(5, np.int64), "x": rand(3, seed=3), "v0": rand(3, seed=4)}
    out = exported(m, optimize=True)
    assert [n.op_type for n in out.graph.node if n.op_type == "Loop"] == ["Loop"]
    same_in_onnxruntime(m, out, feeds)


def test_an_if_exports_as_an_if_node():
    then = graph([node("Neg", ["x"], ["t"])], [], [vi("t", F, [3])], name="then")
    other = graph([node("Abs", ["x"], ["e"])], [], [vi("e", F, [3])], name="else")
    m = model([node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
              [vi("c", B, []), vi("x", F, [3])], [vi("y")])
    out = exported(m, optimize=True)
    assert [n.op_type for n in out.graph.node] == ["If"]
    for c in (True, False):
        same_in_onnxruntime(m, out, {"c": np.array(c), "x": rand(3, seed=5)})


def test_a_loop_in_the_recursive_form_exports_as_a_loop_node():
    m = model([node("Loop", ["M", "", "v0"], ["v"], body=loop_body(scan=False))],
              [vi("M", I64, []), vi("x", F, [3]), vi("v0", F, [3])], [vi("v")])
    out = exported(m, optimize=True)
    assert [n.op_type for n in out.graph.node].count("Loop") == 1
    for trip in (0, 1, 300):
        same_in_onnxruntime(m, out, {"M": np.array(trip, np.int64), "x": rand(3, seed=6),
                                     "v0": rand(3, seed=7)})
