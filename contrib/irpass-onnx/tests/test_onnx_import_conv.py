"""1-D and 3-D Conv, ConvTranspose and pooling, LpPool and GlobalLpPool: imported, evaluated
and compared with onnxruntime; the core op each maps to."""

from __future__ import annotations

import irpass
import numpy as np
import onnx
import pytest
from irpass_onnx import from_onnx, to_onnx
from irpass_onnx.testing import run_onnxruntime
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from onnx_cases import check, elem_type, make_model, ops_in, rand


def single(op_type, x, inits=None, opset=19, **attrs):
    inits = inits or {}
    node = helper.make_node(op_type, ["x", *inits], ["y"], **attrs)
    return make_model([node], {"x": x}, {"y": elem_type(x)}, inits=inits, opset=opset), {"x": x}


@pytest.mark.parametrize("attrs", [
    {},
    {"strides": [1, 2, 2], "pads": [1, 0, 1, 0, 1, 2], "dilations": [1, 1, 2]},
    {"auto_pad": "SAME_LOWER", "strides": [2, 1, 2]},
    {"group": 2},
])
def test_conv_3d(attrs):
    x, b = rand(1, 4, 5, 6, 7), rand(6, seed=2)
    w = rand(6, 4 // attrs.get("group", 1), 2, 3, 3, seed=1)
    model, feeds = single("Conv", x, {"W": w, "B": b}, **attrs)
    mod = check(model, feeds)
    assert ops_in(mod)[:2] == ["nn.conv3d", "nn.bias_add"]


def test_conv_1d_is_conv1d():
    x, w = rand(2, 3, 11), rand(4, 3, 3, seed=1)
    model, feeds = single("Conv", x, {"W": w}, pads=[2, 1], strides=[2])
    assert ops_in(check(model, feeds)) == ["nn.conv1d"]


@pytest.mark.parametrize("attrs", [
    {"strides": [2, 1, 2], "pads": [1, 0, 0, 0, 1, 1], "output_padding": [1, 0, 1]},
    {"strides": [2, 2, 2], "output_shape": [6, 7, 8]},
    {"strides": [1, 2, 1], "auto_pad": "SAME_UPPER", "dilations": [2, 1, 1]},
])
def test_conv_transpose_3d(attrs):
    x, w = rand(1, 2, 3, 3, 4), rand(2, 3, 2, 3, 2, seed=1)
    model, feeds = single("ConvTranspose", x, {"W": w}, **attrs)
    assert ops_in(check(model, feeds)) == ["nn.conv3d_transpose"]


def test_conv_transpose_output_shape_past_the_full_output_extends_the_end():
    # ONNX's test_convtranspose_output_shape: the full output is 9x7, output_shape 10x8
    x, w = rand(1, 1, 3, 3), rand(1, 2, 3, 3, seed=1)
    model, feeds = single("ConvTranspose", x, {"W": w}, strides=[3, 2], output_shape=[10, 8])
    check(model, feeds)


_POOL3D = [
    {"kernel_shape": [2, 2, 2]},
    {"kernel_shape": [3, 2, 3], "strides": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 0], "ceil_mode": 1},
    {"kernel_shape": [2, 2, 2], "dilations": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 0]},
]


@pytest.mark.parametrize("op_type, attrs", [
    *[(op_type, attrs) for op_type in ("MaxPool", "AveragePool") for attrs in _POOL3D],
    # onnxruntime leaves dilation out of auto_pad's padding (a smaller output than the
    # spec's formula): ONNX's reference is the judge there
    ("MaxPool", {"kernel_shape": [2, 2, 2], "dilations": [2, 1, 2], "auto_pad": "SAME_UPPER"}),
])
def test_pool_3d(op_type, attrs):
    x = rand(1, 2, 6, 5, 7)
    model, feeds = single(op_type, x, **attrs)
    ref = ReferenceEvaluator(model).run(None, feeds) if "auto_pad" in attrs else None
    mod = check(model, feeds, ref=ref)
    assert ops_in(mod) == ["nn.max_pool3d" if op_type == "MaxPool" else "nn.avg_pool3d"]


def test_avg_pool_1d_count_include_pad_ceil():
    x = rand(2, 3, 10)
    model, feeds = single("AveragePool", x, kernel_shape=[3], strides=[2], pads=[1, 1],
                          count_include_pad=1, ceil_mode=1)
    assert ops_in(check(model, feeds)) == ["nn.avg_pool1d"]


def test_max_pool_int8():
    x = (rand(1, 2, 6, 6) * 40).astype("int8")
    model, feeds = single("MaxPool", x, kernel_shape=[2, 2], strides=[2, 2])
    check(model, feeds)


@pytest.mark.parametrize("shape, attrs", [
    ((1, 3, 9), {"kernel_shape": [3], "p": 3}),
    ((1, 2, 6, 7), {"kernel_shape": [2, 3], "strides": [2, 2], "pads": [1, 0, 0, 1]}),
    ((1, 2, 6, 7), {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "p": 1}),
    ((1, 2, 7, 7), {"kernel_shape": [2, 2], "dilations": [2, 2], "strides": [2, 2],
                    "ceil_mode": 1}),
    ((1, 2, 3, 4, 5), {"kernel_shape": [2, 2, 2]}),
])
def test_lp_pool(shape, attrs):
    model, feeds = single("LpPool", rand(*shape), **attrs)
    check(model, feeds)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_global_lp_pool(p):
    model, feeds = single("GlobalLpPool", rand(1, 3, 4, 5), p=p)
    check(model, feeds)


@pytest.mark.parametrize("zero_points", [None, "scalar", "per_channel"])
def test_integer_convolution_exports_as_conv_integer(zero_points):
    # ONNX's Conv takes floats only: the int32 convolution the importer makes of ConvInteger
    # (8-bit operands widened, less their zero points) is written back as ConvInteger
    rng = np.random.default_rng(4)
    x = rng.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)
    w = rng.integers(0, 255, (3, 2, 2, 2)).astype(np.uint8)
    names, inits = ["x", "w"], {"w": w}
    if zero_points:
        names += ["xz", "wz"]
        wz = np.array(200, np.uint8) if zero_points == "scalar" else \
            np.array([200, 3, 90], np.uint8)
        inits.update(xz=np.array(7, np.uint8), wz=wz)
    node = helper.make_node("ConvInteger", names, ["y"], pads=[1, 0, 0, 1])
    model = make_model([node], {"x": x}, {"y": TensorProto.INT32}, opset=10, inits=inits)
    mod = from_onnx(model)
    want = irpass.evaluate(mod, x=x)
    # onnxruntime cannot run a per-channel weight zero point itself: the reference judges
    run = ReferenceEvaluator(model).run if zero_points == "per_channel" else \
        (lambda _, feeds: run_onnxruntime(model, feeds))
    np.testing.assert_array_equal(want, run(None, {"x": x})[0])
    exported = to_onnx(mod, opset=13)
    onnx.checker.check_model(exported, full_check=True)
    ops = [n.op_type for n in exported.graph.node]
    # onnxruntime takes one weight zero point: per channel, it is applied to window sums
    assert ops.count("ConvInteger") == (2 if zero_points == "per_channel" else 1)
    np.testing.assert_array_equal(run_onnxruntime(exported, {"x": x})[0], want)
