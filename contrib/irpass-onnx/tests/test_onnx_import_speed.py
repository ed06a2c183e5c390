"""The importer's fast paths give what the general ones give: integer shape arithmetic is
folded with the ops' kernels (not the evaluator), raw tensors are read as onnx reads them,
and a model whose text check, op type check and conversion share one read of the nodes
still reports the first bad string where it is."""

from __future__ import annotations

import irpass
import numpy as np
import pytest
from irpass.ir import Constant
from irpass_onnx import OnnxImportError, from_onnx
from irpass_onnx.frontend import graph as graph_module
from irpass_onnx.frontend.context import read_tensor
from onnx import TensorProto, helper, numpy_helper
from onnx_cases import make_model, ops_in, rand


def _shape_arithmetic_model():
    # Shape -> Gather -> Unsqueeze -> Concat -> Reshape: the reshape's shape is folded at
    # import, through a take, an expand_dims and a concatenate over constants
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus_one"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    inits = {"zero": np.array(0, np.int64), "axes": np.array([0], np.int64),
             "minus_one": np.array([-1], np.int64)}
    return make_model(nodes, {"x": rand(2, 3, 4)}, {"y": TensorProto.FLOAT}, 13, inits)


def test_integer_shape_arithmetic_is_folded_without_the_evaluator(monkeypatch):
    def no_evaluator(*args, **kwargs):
        raise AssertionError("the import ran the evaluator for an integer fold")

    monkeypatch.setattr(graph_module, "evaluate", no_evaluator)
    mod = from_onnx(_shape_arithmetic_model())
    assert ops_in(mod) == ["reshape"]
    x = rand(2, 3, 4, seed=1)
    np.testing.assert_array_equal(irpass.evaluate(mod, x), x.reshape(2, 12))


def test_a_fold_whose_kernel_fails_is_an_error_naming_the_node_and_the_op():
    # the kernels' failure is reported as the evaluator words it
    nodes = [helper.make_node("Pow", ["base", "exponent"], ["p"], name="pow"),
             helper.make_node("Reshape", ["x", "p"], ["y"])]
    model = make_model(nodes, {"x": rand(2, 3)}, {"y": TensorProto.FLOAT}, 13,
                       {"base": np.array([2, 3], np.int64), "exponent": np.array([-1, 1])})
    with pytest.raises(OnnxImportError, match=r"node 0 'pow' \(Pow\): evaluating it at import "
                                              r"failed: .*power"):
        from_onnx(model)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bool", "int8", "int16",
                                   "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3, 4)])
def test_raw_tensors_read_as_onnx_reads_them(dtype, shape):
    data = (rand(*shape, seed=3) * 50).astype(dtype)
    tensor = numpy_helper.from_array(data, "t")
    assert tensor.HasField("raw_data")
    got = read_tensor(tensor)
    want = numpy_helper.to_array(tensor)
    assert got.dtype == want.dtype and got.shape == want.shape == shape
    np.testing.assert_array_equal(got, want)


def test_raw_data_that_does_not_fit_the_dims_is_an_error_naming_the_initializer():
    model = make_model([helper.make_node("Add", ["x", "w"], ["y"])], {"x": rand(3)},
                       {"y": TensorProto.FLOAT}, 13, {"w": rand(3)})
    model.graph.initializer[0].raw_data = b"\0" * 8  # two floats for three
    with pytest.raises(OnnxImportError, match="initializer 'w': cannot read its data"):
        from_onnx(model)


def test_tensors_in_typed_fields_still_read():
    # not raw_data: the general reader takes it
    tensor = helper.make_tensor("v", TensorProto.INT64, [2], [5, -7])
    assert not tensor.HasField("raw_data")
    model = make_model([helper.make_node("Constant", [], ["c"], value=tensor),
                        helper.make_node("Reshape", ["x", "c"], ["y"])],
                       {"x": rand(5, 7)}, {"y": TensorProto.FLOAT}, 13)
    with pytest.raises(OnnxImportError, match="invalid value -7"):
        from_onnx(model)
    tensor = helper.make_tensor("v", TensorProto.INT64, [2], [7, 5])
    model.graph.node[0].attribute[0].t.CopyFrom(tensor)
    mod = from_onnx(model)
    x = rand(5, 7, seed=4)
    np.testing.assert_array_equal(irpass.evaluate(mod, x), x.reshape(7, 5))
    assert not any(isinstance(p, Constant) for p in mod["main"].params)


def test_a_node_string_that_is_not_utf8_is_found_after_every_other_node_field():
    model = make_model([helper.make_node("Relu", ["x"], ["r"], name="first"),
                        helper.make_node("Neg", ["r"], ["y"], name="second")],
                       {"x": rand(3)}, {"y": TensorProto.FLOAT}, 13)
    data = model.SerializeToString().replace(b"second", b"sec\xffnd")
    bad = type(model).FromString(data)
    with pytest.raises(OnnxImportError, match=r"node 1: its name is not valid UTF-8"):
        from_onnx(bad)


def test_weights_pass_from_the_read_model_to_the_export_without_copies():
    """A weight the passes leave alone stays a view of the loaded model's bytes from import
    to export; one they change (here negated by FoldConstant) is written from its new data."""
    from irpass.transform import PassContext, default_pipeline
    from irpass_onnx import to_onnx
    from irpass_onnx.export.writer import _raw_data

    w = rand(4, 3)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Neg", ["v"], ["nv"]),
             helper.make_node("Add", ["h", "nv"], ["y"])]
    # x is 3-D: a 2-D MatMul + Add would fuse into one dense op (a Gemm), whose weight
    # is the transpose, a new array
    model = make_model(nodes, {"x": rand(1, 2, 4)}, {"y": TensorProto.FLOAT}, 17,
                       {"w": w, "v": rand(3)})
    mod = from_onnx(model)
    weight = next(c for c in _constants(mod) if c.data.shape == (4, 3))
    raw = model.graph.initializer[0].raw_data
    assert weight.data.tobytes() == raw
    root = weight.data.base
    while isinstance(root, np.ndarray):
        root = root.base
    assert type(root) is bytes  # a view of the bytes read from the model, not a copy
    assert _raw_data(weight.data, TensorProto.FLOAT) is root  # and written back as they are
    part = weight.data[1:]
    assert _raw_data(part, TensorProto.FLOAT) == part.tobytes()  # a part of them is copied
    with PassContext(opt_level=3):
        out = to_onnx(default_pipeline(3)(mod))
    written = [numpy_helper.to_array(t) for t in out.graph.initializer]
    v = numpy_helper.to_array(model.graph.initializer[1])
    assert any(a.shape == (3,) and np.array_equal(a, -v) for a in written)
    assert any(a.shape == (4, 3) and np.array_equal(a, w) for a in written)


def _constants(mod):
    from irpass.ir import post_order_visit

    found: list[Constant] = []
    post_order_visit(mod["main"], lambda n: found.append(n) if isinstance(n, Constant) else None)
    return found
