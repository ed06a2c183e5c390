"""Regions of dynamic nodes (frontend/dynamic.py): a node whose shape operand is a run-time
value and whose output has no static type in the model imports together with the later nodes
that read such values, as one ``onnx.node`` call evaluated node by node; checked against
onnxruntime on several run-time values, and the errors where no static type closes the
region."""

from __future__ import annotations

import irpass
import numpy as np
import pytest
from irpass.errors import EvaluationError
from irpass_onnx import OnnxImportError, from_onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx_cases import check, ops_in

F32 = TP.FLOAT
I64 = TP.INT64


def model(nodes, inputs, outputs, inits=None, opset=18):
    """``inputs``/``outputs``: name -> (elem type, shape or None); ``inits``: name -> array."""
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def reduce_l2():
    # ReduceL2's expansion with the axes a graph input: the sum's shape depends on them and
    # nothing declares it; the graph output is declared
    return model(
        [helper.make_node("Mul", ["x", "x"], ["sq"]),
         helper.make_node("ReduceSum", ["sq", "axes"], ["s"], keepdims=0, name="rs"),
         helper.make_node("Sqrt", ["s"], ["y"])],
        {"x": (F32, [3, 3]), "axes": (I64, [1])}, {"y": (F32, [3])})


@pytest.mark.parametrize("axes", [[0], [1], [-1]])
def test_reduce_with_runtime_axes_and_untyped_sum(axes):
    x = np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32)
    feeds = {"x": x, "axes": np.array(axes, np.int64)}
    mod = check(reduce_l2(), feeds)
    # the ReduceSum and the Sqrt are one region call; the Mul before it stays an op
    assert ops_in(mod) == ["multiply", "onnx.node"]


def crop_after_pad():
    # Pad by run-time pads (an untyped result), then the 3x3 window at its end: the slice
    # bounds come from the padded shape, a typed output of the region, through nodes outside it
    return model(
        [helper.make_node("Pad", ["x", "pads"], ["p"], name="pad"),
         helper.make_node("Shape", ["p"], ["s"]),
         helper.make_node("Sub", ["s", "size"], ["start"]),
         helper.make_node("Slice", ["p", "start", "s"], ["y"])],
        {"x": (F32, [4, 5]), "pads": (I64, [4])}, {"y": (F32, [3, 3])},
        {"size": np.array([3, 3], np.int64)})


@pytest.mark.parametrize("pads", [[0, 0, 0, 0], [1, 2, 0, 0], [0, 0, 2, 1], [1, 1, 1, 1]])
def test_region_reads_values_computed_from_its_typed_outputs(pads):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    check(crop_after_pad(), {"x": x, "pads": np.array(pads, np.int64)})


def test_window_from_runtime_range():
    # a Hann-like window: Range with a run-time limit, then elementwise math to the output
    nodes = [helper.make_node("Cast", ["n"], ["nf"], to=F32),
             helper.make_node("Range", ["zero", "nf", "one"], ["r"], name="range"),
             helper.make_node("Mul", ["r", "step"], ["a"]),
             helper.make_node("Cos", ["a"], ["c"]),
             helper.make_node("Sub", ["half", "c"], ["y"])]
    inits = {"zero": np.array(0, np.float32), "one": np.array(1, np.float32),
             "step": np.array(0.7, np.float32), "half": np.array(0.5, np.float32)}
    m = model(nodes, {"n": (I64, [])}, {"y": (F32, [6])}, inits)
    mod = check(m, {"n": np.array(6, np.int64)})
    assert ops_in(mod).count("onnx.node") == 1
    with pytest.raises(EvaluationError, match=r"region of ONNX node 'range' \(Range\).*'y' is "
                                        r"float32\[5\].*declares float32\[6\]"):
        irpass.evaluate(mod, n=np.array(5, np.int64))


def test_region_ending_in_an_untyped_graph_output_names_it():
    m = model(
        [helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=0, name="rs"),
         helper.make_node("Neg", ["s"], ["y"])],
        {"x": (F32, [3, 3]), "axes": (I64, [1])}, {"y": (F32, None)})
    with pytest.raises(OnnxImportError, match=r"node 0 'rs' \(ReduceSum\): input 1 \(axes, "
                                              r"'axes'\).*output 0 's'.*graph output 0 'y'"):
        from_onnx(m)


def test_region_through_a_node_with_subgraphs_names_it():
    branch = helper.make_graph([helper.make_node("Neg", ["s"], ["o"])], "b", [],
                               [helper.make_tensor_value_info("o", F32, None)])
    m = model(
        [helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=0, name="rs"),
         helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch,
                          name="if")],
        {"x": (F32, [3, 3]), "axes": (I64, [1]), "c": (TP.BOOL, [])}, {"y": (F32, [3])})
    with pytest.raises(OnnxImportError, match=r"'rs' \(ReduceSum\).*node 1 'if' \(If\), which "
                                              r"has subgraphs"):
        from_onnx(m)


def test_region_leaves_the_model_unchanged_and_folds_with_constant_inputs():
    m = reduce_l2()
    before = m.SerializeToString()
    mod = from_onnx(m)
    assert m.SerializeToString() == before
    folded = irpass.transform.FoldConstant()(irpass.transform.InferType()(mod))
    assert "onnx.node" in ops_in(folded)  # x is still a run-time input
