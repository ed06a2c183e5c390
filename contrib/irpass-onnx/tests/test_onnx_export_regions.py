"""A region of dynamic nodes (ONNX nodes computing values without a static type from a
run-time shape operand, imported as one ``onnx.node`` call holding a ``Region``) is exported
as the nodes of its body: the result passes the full check, runs in onnxruntime and is
imported back by irpass, with the original's outputs."""

from __future__ import annotations

import irpass
import numpy as np
import onnx
from irpass_onnx import from_onnx, to_onnx
from irpass_onnx.testing import run_onnxruntime
from onnx import TensorProto, helper


def _model() -> onnx.ModelProto:
    # r = Range(0, n, 1) has no static shape (n is a graph input): Range and the Mul and
    # ReduceSum reading it form a region whose one typed output is the graph output s
    nodes = [
        helper.make_node("Range", ["zero", "n", "one"], ["r"]),
        helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["rf", "w"], ["rw"]),
        helper.make_node("ReduceSum", ["rw"], ["s"], keepdims=0),
        helper.make_node("Add", ["s", "x"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "region",
        [helper.make_tensor_value_info("n", TensorProto.INT64, []),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        initializer=[helper.make_tensor("zero", TensorProto.INT64, [], [0]),
                     helper.make_tensor("one", TensorProto.INT64, [], [1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_region_is_exported_as_the_nodes_of_its_body():
    original = _model()
    mod = from_onnx(original)
    assert "region=True" in str(mod)  # the import made the region this test is about
    model = to_onnx(mod)
    onnx.checker.check_model(model, full_check=True)
    assert [n.op_type for n in model.graph.node] == ["Range", "Cast", "Mul", "ReduceSum", "Add"]
    inputs = {"n": np.array(5, np.int64), "w": np.array(0.5, np.float32),
              "x": np.array([1.0, -2.0, 3.5], np.float32)}
    expected = np.array([1.0, -2.0, 3.5], np.float32) + 0.5 * 10
    np.testing.assert_allclose(run_onnxruntime(model, inputs)[0], expected, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(irpass.evaluate(from_onnx(model), **inputs)),
                               expected, rtol=1e-6)
