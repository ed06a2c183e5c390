"""Nodes whose shape-determining operands are run-time values (irpass_onnx.frontend.dynamic):
imported as one ``onnx.node`` call typed by the model's declared (or inferred) types, converted
again with the actual values when evaluated, checked against the declared types, written back
as they were."""

from __future__ import annotations

import irpass
import numpy as np
import onnx
import pytest
from irpass import EvaluationError
from irpass.ir import Call, post_order_visit
from irpass.transform import PassContext, default_pipeline
from irpass_onnx import OnnxImportError, from_onnx, to_onnx
from irpass_onnx.testing import run_onnxruntime
from onnx import TensorProto, helper

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, value_info=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, value_info=list(value_info))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _reshape_model(out_shape=(3, 4)):
    return _model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="r")],
        [helper.make_tensor_value_info("x", F32, [2, 6]),
         helper.make_tensor_value_info("shape", I64, [2])],
        [helper.make_tensor_value_info("y", F32, list(out_shape))])


def _ops(mod):
    names = []
    post_order_visit(mod["main"], lambda e: names.append(e.op.name)
                     if isinstance(e, Call) and hasattr(e.op, "name") else None)
    return names


def test_a_graph_input_shape_is_read_when_the_model_runs():
    mod = from_onnx(_reshape_model())
    assert _ops(mod) == ["onnx.node"]
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    y = irpass.evaluate(mod, x=x, shape=np.array([3, 4], np.int64))
    np.testing.assert_array_equal(y, x.reshape(3, 4))
    # -1 is resolved with the run-time value too
    y = irpass.evaluate(mod, x=x, shape=np.array([-1, 4], np.int64))
    np.testing.assert_array_equal(y, x.reshape(3, 4))


def test_a_run_time_value_giving_another_shape_than_declared_is_a_clear_error():
    mod = from_onnx(_reshape_model())
    x = np.zeros((2, 6), np.float32)
    with pytest.raises(EvaluationError, match=r"Reshape.*output 0 'y' is float32\[2, 6\].*"
                                              r"declares float32\[3, 4\]"):
        irpass.evaluate(mod, x=x, shape=np.array([2, 6], np.int64))


def test_a_value_the_converter_refuses_is_an_import_error_when_it_runs():
    mod = from_onnx(_reshape_model())
    with pytest.raises(EvaluationError) as info:
        irpass.evaluate(mod, x=np.zeros((2, 6), np.float32),
                        shape=np.array([-1, -1], np.int64))
    assert isinstance(info.value.__cause__, OnnxImportError)
    assert "Reshape" in str(info.value.__cause__)


def test_without_a_static_declared_shape_the_import_names_node_operand_and_output():
    model = _model(
        [helper.make_node("Reshape", ["x", "shape"], ["t"], name="r"),
         helper.make_node("Relu", ["t"], ["y"])],
        [helper.make_tensor_value_info("x", F32, [2, 6]),
         helper.make_tensor_value_info("shape", I64, [2])],
        [helper.make_tensor_value_info("y", F32, None)])
    with pytest.raises(OnnxImportError) as info:
        from_onnx(model)
    msg = str(info.value)
    assert "node 0 'r' (Reshape)" in msg and "input 1 (shape, 'shape')" in msg
    assert "output 0 't'" in msg and "static shape" in msg


@pytest.mark.parametrize("shape_type, shape_dims, slice_inputs, expected", [
    # a float shape operand: Reshape takes int64 only
    (F32, [2], None, r"not a valid Reshape node: .*float"),
    # a 2-D shape operand
    (I64, [1, 2], None, r"not a valid Reshape node: "),
    # Slice's ends as a float run-time value
    (I64, [2], ["x", "starts", "fends"], r"not a valid Slice node: .*tensor\(float\)"),
    # Slice with two inputs, one of them run-time
    (I64, [2], ["x", "starts"], r"not a valid Slice node: "),
])
def test_a_node_whose_run_time_operands_break_its_schema_is_refused_at_import(
        shape_type, shape_dims, slice_inputs, expected):
    # Deferred to run time, the node is still checked at import by ONNX's own inference
    # from its inputs' types, so the model's error names the node now, not when it runs
    # or is exported. (What follows the colon is ONNX's wording.)
    inputs = [helper.make_tensor_value_info("x", F32, [2, 6])]
    if slice_inputs is None:
        nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="r")]
        inputs.append(helper.make_tensor_value_info("shape", shape_type, shape_dims))
        out = [3, 4]
    else:
        nodes = [helper.make_node("Slice", slice_inputs, ["y"], name="s")]
        inputs += [helper.make_tensor_value_info("starts", I64, [2]),
                   helper.make_tensor_value_info("fends", F32, [2])]
        out = [1, 3]
    model = _model(nodes, inputs[:1] + [i for i in inputs[1:] if i.name in nodes[0].input],
                   [helper.make_tensor_value_info("y", F32, out)])
    with pytest.raises(OnnxImportError, match=expected) as info:
        from_onnx(model)
    assert f"node 0 {nodes[0].name!r} ({nodes[0].op_type})" in str(info.value)
    assert "\n" not in str(info.value)


def test_value_info_or_shape_inference_types_an_intermediate_node():
    # Dropout's ratio is a graph input; nothing declares the Dropout's output, but its shape
    # does not depend on the ratio, so ONNX's shape inference gives it
    model = _model(
        [helper.make_node("Dropout", ["x", "ratio"], ["t"], name="d"),
         helper.make_node("Relu", ["t"], ["y"])],
        [helper.make_tensor_value_info("x", F32, [2, 3]),
         helper.make_tensor_value_info("ratio", F32, [])],
        [helper.make_tensor_value_info("y", F32, [2, 3])])
    mod = from_onnx(model)
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    np.testing.assert_array_equal(irpass.evaluate(mod, x=x, ratio=np.float32(0.5)),
                                  np.maximum(x, 0))


def test_the_node_survives_o3_text_and_export():
    mod = from_onnx(_reshape_model())
    with PassContext(opt_level=3):
        opt = default_pipeline(3)(mod)
    again = irpass.parse(str(opt))
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    shape = np.array([3, 4], np.int64)
    for m in (opt, again):
        np.testing.assert_array_equal(irpass.evaluate(m, x=x, shape=shape), x.reshape(3, 4))
    exported = to_onnx(opt)
    onnx.checker.check_model(exported, full_check=True)
    assert [n.op_type for n in exported.graph.node] == ["Reshape"]
    (got,) = run_onnxruntime(exported, {"x": x, "shape": shape})
    np.testing.assert_array_equal(got, x.reshape(3, 4))
    np.testing.assert_array_equal(irpass.evaluate(from_onnx(exported), x=x, shape=shape),
                                  x.reshape(3, 4))


def test_fold_constant_evaluates_it_once_its_operands_are_constants():
    mod = from_onnx(_reshape_model())
    main = mod["main"]
    x, shape = main.params
    # bind both params to constants: the call's inputs are constants now
    bound = irpass.ir.Function(
        [], irpass.ir.Let(x, irpass.const(np.ones((2, 6), np.float32)),
                          irpass.ir.Let(shape, irpass.const(np.array([3, 4], np.int64)),
                                        main.body)))
    folded = irpass.transform.FoldConstant()(irpass.IRModule.from_expr(bound))
    assert "onnx.node" not in _ops(folded)
    np.testing.assert_array_equal(irpass.evaluate(folded), np.ones((3, 4), np.float32))
