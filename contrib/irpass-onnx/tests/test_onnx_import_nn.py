"""The nn converters of the ONNX importer, checked by running: each small model is imported,
evaluated with irpass on seeded random inputs and compared with onnxruntime (graph
optimizations off)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import irpass
import numpy as np
import onnx
import onnx_cases
import pytest
from irpass.ir import Call, TupleGetItem
from irpass_onnx import OnnxImportError, from_onnx
from irpass_onnx.testing import assert_outputs_close
from irpass_onnx.testing import run_onnxruntime as run_ort
from onnx import TensorProto, helper
from onnx_cases import ops_in, rand

RTOL, ATOL = 1e-4, 1e-5


# -- helpers -----------------------------------------------------------------------------------


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Mapping[str, np.ndarray],
    outputs: Sequence[str],
    inits: Mapping[str, np.ndarray] | None = None,
    opset: int = 13,
    out_type: int = TensorProto.FLOAT,
) -> onnx.ModelProto:
    """A model of ``nodes``; inputs typed from the given arrays, outputs ``out_type`` of any
    shape."""
    return onnx_cases.make_model(nodes, inputs, dict.fromkeys(outputs, out_type), opset, inits)


def check(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], rtol: float = RTOL,
          atol: float = ATOL, **options) -> irpass.IRModule:
    """Import ``model``, run it in irpass and onnxruntime, compare; returns the module."""
    mod = from_onnx(model, **options)
    assert irpass.ir.well_formed(mod)
    got = irpass.evaluate(mod, **feeds)
    got = list(got) if isinstance(got, tuple) else [got]
    want = run_ort(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        assert_outputs_close([g], [w], rtol=rtol, atol=atol, scaled_atol=atol)
    return mod


def single(nodes_op: str, x: np.ndarray, opset: int = 13, inits=None, extra_inputs=(),
           **attrs) -> tuple[onnx.ModelProto, dict]:
    """A one-node model ``y = op(x, *extra_inputs)``; the output has x's element type."""
    node = helper.make_node(nodes_op, ["x", *extra_inputs], ["y"], **attrs)
    out_type = helper.np_dtype_to_tensor_dtype(x.dtype)
    return make_model([node], {"x": x}, ["y"], inits, opset, out_type), {"x": x}


# -- convolution -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"pads": [1, 1, 1, 1]},
        {"pads": [0, 1, 2, 1], "strides": [2, 1]},
        {"dilations": [2, 2], "pads": [2, 2, 2, 2]},
        {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
        {"auto_pad": "SAME_LOWER", "strides": [2, 2]},
        {"auto_pad": "VALID", "strides": [2, 2]},
        {"kernel_shape": [3, 3], "strides": [3, 2]},
    ],
)
def test_conv_attributes(attrs):
    x, w, b = rand(2, 3, 9, 8), rand(4, 3, 3, 3, seed=1), rand(4, seed=2)
    model, feeds = single("Conv", x, inits={"W": w, "B": b}, extra_inputs=["W", "B"], **attrs)
    check(model, feeds)


def test_conv_with_bias_is_conv2d_then_bias_add():
    x, w, b = rand(1, 3, 6, 6), rand(4, 3, 3, 3, seed=1), rand(4, seed=2)
    model, _ = single("Conv", x, inits={"W": w, "B": b}, extra_inputs=["W", "B"])
    body = from_onnx(model)["main"].body
    assert isinstance(body, Call) and body.op.name == "nn.bias_add" and body.attrs["axis"] == 1
    assert body.args[0].op.name == "nn.conv2d"


def test_conv_groups_and_depthwise_without_bias():
    x = rand(1, 6, 7, 7)
    for group, w in ((2, rand(4, 3, 3, 3, seed=3)), (6, rand(6, 1, 3, 3, seed=4))):
        model, feeds = single("Conv", x, inits={"W": w}, extra_inputs=["W"], group=group,
                              pads=[1, 1, 1, 1])
        mod = check(model, feeds)
        assert "nn.bias_add" not in ops_in(mod)


def test_conv_weight_as_input_and_opset_9():
    x, w = rand(1, 2, 5, 5), rand(3, 2, 2, 2, seed=1)
    node = helper.make_node("Conv", ["x", "w"], ["y"], strides=[2, 2])
    check(make_model([node], {"x": x, "w": w}, ["y"], opset=9), {"x": x, "w": w})


@pytest.mark.parametrize("attrs", [{}, {"pads": [1, 2], "strides": [2]},
                                   {"auto_pad": "SAME_UPPER", "strides": [2]},
                                   {"dilations": [2], "pads": [2, 1]}])
def test_conv_1d(attrs):
    x, w, b = rand(2, 3, 11), rand(4, 3, 3, seed=1), rand(4, seed=2)
    model, feeds = single("Conv", x, inits={"W": w, "B": b}, extra_inputs=["W", "B"], **attrs)
    check(model, feeds)


def test_conv_3d():
    # 3-D convolutions import as nn.conv3d (they were an import error before it existed)
    x, w = rand(1, 2, 4, 4, 4), rand(3, 2, 2, 2, 2, seed=1)
    model, feeds = single("Conv", x, inits={"W": w}, extra_inputs=["W"], pads=[1, 0, 0, 0, 1, 1])
    mod = check(model, feeds)
    assert "nn.conv3d" in ops_in(mod)


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"strides": [2, 2]},
        {"strides": [2, 2], "pads": [1, 1, 1, 1]},
        {"strides": [2, 2], "pads": [0, 1, 1, 0], "output_padding": [1, 1]},
        {"strides": [2, 3], "dilations": [2, 1]},
        {"strides": [2, 2], "output_shape": [10, 10]},
        {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
        {"strides": [2, 2], "auto_pad": "SAME_LOWER"},
        {"group": 2},
    ],
)
def test_conv_transpose(attrs):
    x, b = rand(1, 4, 5, 5), rand(6, seed=2)
    w = rand(4, 6 // attrs.get("group", 1), 3, 3, seed=1)
    model, feeds = single("ConvTranspose", x, inits={"W": w, "B": b}, extra_inputs=["W", "B"],
                          **attrs)
    check(model, feeds)


def test_conv_transpose_1d():
    x, w = rand(1, 4, 5), rand(4, 2, 3, seed=1)
    model, feeds = single("ConvTranspose", x, inits={"W": w}, extra_inputs=["W"], strides=[2])
    check(model, feeds)


# -- dense products ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attrs, c_shape",
    [
        ({}, (5,)),
        ({"transB": 1}, (5,)),
        ({"transA": 1}, (3, 5)),
        ({"transA": 1, "transB": 0, "beta": 0.5}, (5,)),
        ({"alpha": 0.5, "beta": 2.0, "transB": 1}, (5,)),
        ({"beta": 0.25}, (1, 5)),
        ({}, (1,)),
        ({}, ()),
        ({"alpha": 2.0}, None),
    ],
)
def test_gemm(attrs, c_shape):
    if attrs.get("transA"):  # A is (K, M) = (4, 3): y is (3, 5)
        a, b = rand(4, 3), rand(4, 5, seed=1)
    else:  # A is (M, K) = (4, 3): y is (4, 5)
        a = rand(4, 3)
        b = rand(5, 3, seed=1) if attrs.get("transB") else rand(3, 5, seed=1)
    inits = {"B": b}
    inputs = ["B"]
    if c_shape is not None:
        inits["C"] = rand(*c_shape, seed=2)
        inputs.append("C")
    model, feeds = single("Gemm", a, inits=inits, extra_inputs=inputs, **attrs)
    check(model, feeds)


def test_gemm_ir_shape_dense_bias_add():
    a, b, c = rand(2, 3), rand(5, 3, seed=1), rand(5, seed=2)
    model, _ = single("Gemm", a, inits={"B": b, "C": c}, extra_inputs=["B", "C"], transB=1)
    body = from_onnx(model)["main"].body
    assert body.op.name == "nn.bias_add" and body.attrs["axis"] == 1
    dense = body.args[0]
    assert dense.op.name == "nn.dense"
    assert isinstance(dense.args[1], irpass.Constant)  # transB: the weight as is
    # without transB the weight is transposed in the IR (FoldConstant folds it)
    model, _ = single("Gemm", a, inits={"B": b.T.copy(), "C": c}, extra_inputs=["B", "C"])
    dense = from_onnx(model)["main"].body.args[0]
    assert dense.args[1].op.name == "transpose"


@pytest.mark.parametrize("sa, sb", [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
                                    ((2, 3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)),
                                    ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4,))])
def test_matmul(sa, sb):
    a, b = rand(*sa), rand(*sb, seed=1)
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    mod = check(make_model([node], {"a": a, "b": b}, ["y"]), {"a": a, "b": b})
    assert ops_in(mod) == ["matmul"]


# -- normalization -----------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [9, 15])
def test_batch_norm(opset):
    x = rand(2, 3, 4, 5)
    inits = {"s": rand(3, seed=1), "b": rand(3, seed=2), "m": rand(3, seed=3),
             "v": np.abs(rand(3, seed=4)) + 0.5}
    model, feeds = single("BatchNormalization", x, opset=opset, inits=inits,
                          extra_inputs=["s", "b", "m", "v"], epsilon=1e-3)
    mod = check(model, feeds)
    body = mod["main"].body
    assert isinstance(body, TupleGetItem) and body.index == 0
    assert body.tuple_value.op.name == "nn.batch_norm"
    assert body.tuple_value.attrs["axis"] == 1
    assert body.tuple_value.attrs["epsilon"] == pytest.approx(1e-3)


def test_batch_norm_training_mode_normalizes_by_the_batch_and_updates_the_statistics():
    # training_mode=1 normalizes by the batch's own mean and (population) variance, and the
    # running statistics move toward them by 1 - momentum
    x = rand(4, 3, 5, 2) * 1.5 + 0.5
    inits = {"s": rand(3, seed=1), "b": rand(3, seed=2), "m": rand(3, seed=3),
             "v": np.abs(rand(3, seed=4)) + 0.5}
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                            ["y", "running_mean", "running_var"], training_mode=1,
                            momentum=0.8, epsilon=1e-3)
    model = make_model([node], {"x": x}, ["y", "running_mean", "running_var"], inits, 15,
                       TensorProto.FLOAT)
    got = irpass.evaluate(from_onnx(model), x=x)
    x64 = x.astype(np.float64)
    mean, var = x64.mean(axis=(0, 2, 3)), x64.var(axis=(0, 2, 3))
    along = (slice(None), None, None)
    y = (x64 - mean[along]) / np.sqrt(var[along] + 1e-3) * inits["s"][along] + \
        inits["b"][along]
    expected = [y, inits["m"] * 0.8 + mean * 0.2, inits["v"] * 0.8 + var * 0.2]
    assert len(got) == 3
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == np.float32 and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_batch_norm_training_mode_with_only_the_output_y():
    # the running statistics are optional outputs; a node naming Y alone has one output
    x = rand(4, 3, 5, 2)
    inits = {"s": rand(3, seed=1), "b": rand(3, seed=2), "m": rand(3, seed=3),
             "v": np.abs(rand(3, seed=4)) + 0.5}
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
                            training_mode=1, epsilon=1e-3)
    model = make_model([node], {"x": x}, ["y"], inits, 15, TensorProto.FLOAT)
    got = irpass.evaluate(from_onnx(model), x=x)
    x64 = x.astype(np.float64)
    mean, var = x64.mean(axis=(0, 2, 3)), x64.var(axis=(0, 2, 3))
    along = (slice(None), None, None)
    want = (x64 - mean[along]) / np.sqrt(var[along] + 1e-3) * inits["s"][along] + \
        inits["b"][along]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_instance_norm():
    x = rand(2, 3, 4, 5)
    model, feeds = single("InstanceNormalization", x, inits={"s": rand(3, seed=1),
                          "b": rand(3, seed=2)}, extra_inputs=["s", "b"], epsilon=1e-4)
    check(model, feeds)


@pytest.mark.parametrize(
    "axis, s_shape, with_bias, fused",
    [(-1, (6,), True, True), (2, (6,), False, True), (1, (5, 6), True, False),
     (-2, (5, 6), False, False)],
)
def test_layer_norm(axis, s_shape, with_bias, fused):
    x = rand(2, 5, 6)
    inits = {"s": rand(*s_shape, seed=1)}
    if with_bias:
        inits["b"] = rand(*s_shape, seed=2)
    model, feeds = single("LayerNormalization", x, opset=17, inits=inits,
                          extra_inputs=list(inits), axis=axis, epsilon=1e-3)
    mod = check(model, feeds)
    assert ("nn.layer_norm" in ops_in(mod)) == fused


# -- dropout -----------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [7, 12, 13])
def test_dropout_is_identity(opset):
    x = rand(2, 3)
    if opset >= 12:
        node = helper.make_node("Dropout", ["x", "r"], ["y"])
        model = make_model([node], {"x": x}, ["y"], {"r": np.array(0.3, np.float32)}, opset)
    else:
        node = helper.make_node("Dropout", ["x"], ["y"], ratio=0.3)
        model = make_model([node], {"x": x}, ["y"], opset=opset)
    mod = check(model, {"x": x})
    body = mod["main"].body
    assert body.op.name == "nn.dropout" and body.attrs["rate"] == pytest.approx(0.3)


def test_dropout_unused_mask_is_fine_used_mask_is_an_error():
    x = rand(2, 3)
    node = helper.make_node("Dropout", ["x"], ["y", "mask"])
    check(make_model([node], {"x": x}, ["y"]), {"x": x})
    cast = helper.make_node("Cast", ["mask"], ["m"], to=TensorProto.FLOAT)
    model = make_model([node, cast], {"x": x}, ["y", "m"])
    with pytest.raises(OnnxImportError, match=r"node 0 .*Dropout.*mask"):
        from_onnx(model)


# -- pooling -----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel_shape": [2, 2]},
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
        {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 0, 1]},
        {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
        {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
        {"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_LOWER"},
        {"kernel_shape": [3, 3], "auto_pad": "VALID"},
    ],
)
def test_pool(op, attrs):
    x = rand(1, 2, 8, 7)
    model, feeds = single(op, x, opset=11, **attrs)
    check(model, feeds)


@pytest.mark.parametrize("ceil_mode", [0, 1])
def test_avg_pool_count_include_pad(ceil_mode):
    x = rand(1, 2, 7, 7)
    model, feeds = single("AveragePool", x, opset=11, kernel_shape=[3, 3], strides=[2, 2],
                          pads=[1, 1, 1, 1], count_include_pad=1, ceil_mode=ceil_mode)
    check(model, feeds)


def test_max_pool_dilations_opset_9_and_1d():
    x = rand(1, 2, 9, 9)
    model, feeds = single("MaxPool", x, opset=11, kernel_shape=[2, 2], dilations=[2, 2])
    check(model, feeds)
    model, feeds = single("MaxPool", x, opset=9, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    check(model, feeds)
    x1 = rand(2, 3, 10)
    model, feeds = single("MaxPool", x1, opset=11, kernel_shape=[3], strides=[2], pads=[1, 1])
    check(model, feeds)
    model, feeds = single("AveragePool", x1, opset=11, kernel_shape=[2], strides=[2])
    check(model, feeds)


def _max_pool_with_indices(x: np.ndarray, **attrs) -> onnx.ModelProto:
    node = helper.make_node("MaxPool", ["x"], ["y", "idx"], **attrs)
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        [node], "t", [helper.make_tensor_value_info("x", elem, x.shape)],
        [helper.make_tensor_value_info("y", elem, None),
         helper.make_tensor_value_info("idx", TensorProto.INT64, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 2], "storage_order": 1},
])
def test_max_pool_indices_output_numbers_the_window_maxima(attrs):
    # the flat index of each window's maximum, as onnxruntime numbers it
    x = rand(2, 3, 5, 5)
    check(_max_pool_with_indices(x, **attrs), {"x": x})


def test_max_pool_indices_of_int_data_is_an_error():
    model = _max_pool_with_indices(rand(1, 2, 4, 4).astype(np.int8), kernel_shape=[2, 2])
    with pytest.raises(OnnxImportError, match="Indices output"):
        from_onnx(model)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 7), (1, 2, 3, 2, 2)])
def test_global_pool(op, shape):
    model, feeds = single(op, rand(*shape))
    check(model, feeds)


@pytest.mark.parametrize("attrs", [{"size": 3}, {"size": 5, "alpha": 1e-3, "beta": 0.5,
                                                  "bias": 2.0}])
def test_lrn(attrs):
    model, feeds = single("LRN", rand(1, 7, 3, 3), **attrs)
    check(model, feeds)


def test_lrn_even_size_follows_the_spec_window():
    # onnxruntime rejects an even size and onnx's reference LRN loops over the batch axis
    # instead of the channels, so the spec's window [c - 1, c + 2] is spelled out here.
    x = rand(2, 6, 3, 3)
    model, _ = single("LRN", x, size=4, alpha=0.5, beta=0.75, bias=1.5)
    sq = np.pad(np.square(x), ((0, 0), (1, 2), (0, 0), (0, 0)))
    window = sum(sq[:, k:k + 6] for k in range(4))
    want = x / (1.5 + 0.5 / 4 * window) ** 0.75
    np.testing.assert_allclose(irpass.evaluate(from_onnx(model), x), want, rtol=1e-5)


# -- softmax -----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset, axis", [(9, None), (11, 1), (11, -1), (11, 3), (11, 0),
                                         (11, -3), (13, None), (13, 1), (13, -2)])
def test_softmax(op, opset, axis):
    x = rand(2, 3, 4, 5)
    attrs = {} if axis is None else {"axis": axis}
    model, feeds = single(op, x, opset=opset, **attrs)
    mod = check(model, feeds)
    coerced = opset < 13 and (1 if axis is None else axis % 4) != 3
    assert ("reshape" in ops_in(mod)) == coerced


# -- activations -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op, attrs",
    [
        ("Relu", {}), ("Sigmoid", {}), ("Tanh", {}),
        ("LeakyRelu", {}), ("LeakyRelu", {"alpha": 0.2}),
        ("Elu", {}), ("Elu", {"alpha": 0.5}),
        ("Selu", {}), ("Selu", {"alpha": 1.5, "gamma": 0.9}),
        ("Softplus", {}),
    ],
)
def test_activation(op, attrs):
    x = rand(2, 3, 4) * 4
    x[0, 0, :2] = [60.0, -60.0]  # exp overflow territory for a naive decomposition
    model, feeds = single(op, x, **attrs)
    check(model, feeds)


@pytest.mark.parametrize("slope_shape", [(3, 1, 1), (1,), (4,)])
def test_prelu(slope_shape):
    x = rand(2, 3, 5, 4)
    model, feeds = single("PRelu", x, inits={"s": rand(*slope_shape, seed=1)},
                          extra_inputs=["s"], opset=9)
    check(model, feeds)


def test_prelu_opset_6_slope_is_per_channel():
    # onnxruntime has no PRelu-6 kernel; the reference is the spec: a 1-D slope per channel
    x = rand(2, 3, 4, 5)
    slope = np.array([0.1, 0.2, 0.3], np.float32)
    model, _ = single("PRelu", x, inits={"s": slope}, extra_inputs=["s"], opset=6)
    want = np.where(x < 0, x * slope.reshape(3, 1, 1), x)
    np.testing.assert_allclose(irpass.evaluate(from_onnx(model), x), want, rtol=1e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    x = rand(3, 7) * 3
    model, feeds = single("Gelu", x, opset=20, approximate=approximate)
    check(model, feeds)


def test_float64_decompositions_keep_dtype():
    # onnxruntime has no float64 Elu/Selu: compare with numpy
    x = rand(2, 3, dtype="float64") * 3
    model, feeds = single("Elu", x, alpha=0.5)  # exact in float32 (attributes are)
    got = irpass.evaluate(from_onnx(model), x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.where(x > 0, x, 0.5 * np.expm1(x)), rtol=1e-12)
