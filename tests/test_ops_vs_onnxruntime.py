"""The kernels of the ops that back the ONNX importer, against onnxruntime.

Each case runs one ONNX node in onnxruntime (graph optimizations off) and the
matching irpass op's kernel on the same inputs. Skipped without onnxruntime;
the main op tests (test_ops_*.py) never need onnx.
"""

from __future__ import annotations

import numpy as np
import pytest
from irpass import op
from irpass.ir import var
from op_checks import run

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
helper = onnx.helper

RNG = np.random.default_rng(11)
X, Y = var("x"), var("y")
BIG = 2**63 - 1


def elem(value: np.ndarray) -> int:
    """The ONNX element type of ``value``."""
    return helper.np_dtype_to_tensor_dtype(value.dtype)


def ort_run(op_type: str, inputs: dict[str, np.ndarray], opset: int = 17, **attrs) -> np.ndarray:
    """Run one ``op_type`` node on ``inputs`` (all graph inputs, in order) in onnxruntime."""
    names = list(inputs)
    node = helper.make_node(op_type, names, ["out"], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, elem(v), list(v.shape)) for n, v in inputs.items()],
        # every case's output has the dtype of its first input
        [helper.make_tensor_value_info("out", elem(next(iter(inputs.values()))), None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, inputs)[0]


def test_erf() -> None:
    x = np.concatenate([np.linspace(-6, 6, 4001), RNG.normal(size=1000) * 2]).astype("float32")
    np.testing.assert_allclose(run(op.erf(X), x), ort_run("Erf", {"x": x}), rtol=0, atol=1e-6)


@pytest.mark.parametrize("alpha", [0.01, 0.2, 1.5])
def test_leaky_relu(alpha: float) -> None:
    x = RNG.normal(size=(3, 5)).astype("float32")
    np.testing.assert_array_equal(
        run(op.nn.leaky_relu(X, alpha), x), ort_run("LeakyRelu", {"x": x}, alpha=alpha)
    )


@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
def test_log_softmax(axis: int) -> None:
    x = (RNG.normal(size=(2, 3, 4)) * 30).astype("float32")
    np.testing.assert_allclose(
        run(op.nn.log_softmax(X, axis), x),
        ort_run("LogSoftmax", {"x": x}, opset=13, axis=axis),
        rtol=1e-5,
        atol=1e-5,
    )


# onnxruntime implements odd sizes only; test_ops_nn checks even ones against the spec
@pytest.mark.parametrize("size", [1, 3, 5, 7])
def test_lrn(size: int) -> None:
    x = (RNG.normal(size=(2, 6, 3, 3)) * 3).astype("float32")
    kw = {"alpha": 0.3, "beta": 0.75, "bias": 1.5}
    np.testing.assert_allclose(
        run(op.nn.lrn(X, size=size, **kw), x),
        ort_run("LRN", {"x": x}, size=size, **kw),
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("ishape", [(), (4,), (2, 3)])
def test_gather_is_take_wrap(axis: int, ishape) -> None:
    data = RNG.normal(size=(3, 4, 5)).astype("float32")
    n = data.shape[axis]
    indices = RNG.integers(-n, n, ishape).astype("int64")
    np.testing.assert_array_equal(
        run(op.take(X, Y, axis=axis, mode="wrap"), data, indices),
        ort_run("Gather", {"x": data, "y": indices}, axis=axis),
    )


SLICES = [
    ([1], [4], [0], [1]),
    ([-2], [BIG], [1], [1]),
    ([-1], [-BIG - 1], [0], [-1]),
    ([BIG], [-BIG - 1], [2], [-2]),
    ([10], [20], [0], [1]),
    ([-10], [-7], [0], [-1]),
    ([-100], [-200], [1], [-1]),
    ([3], [1], [0], [1]),
    ([1, -1], [3, 0], [0, 1], [1, -2]),
    ([0, 4], [2, -BIG - 1], [-1, 1], [2, -3]),
]


@pytest.mark.parametrize("starts,ends,axes,steps", SLICES)
def test_slice_is_strided_slice(starts, ends, axes, steps) -> None:
    x = RNG.normal(size=(4, 6, 5)).astype("float32")
    feeds = {
        "x": x,
        "starts": np.array(starts, "int64"),
        "ends": np.array(ends, "int64"),
        "axes": np.array(axes, "int64"),
        "steps": np.array(steps, "int64"),
    }
    np.testing.assert_array_equal(
        run(op.strided_slice(X, starts, ends, steps, axes), x), ort_run("Slice", feeds)
    )


@pytest.mark.parametrize(
    "shape,target", [((3, 1), (2, 3, 4)), ((1,), (5,)), ((2, 1, 3), (1, 4, 1)), ((3,), (1,))]
)
def test_expand_is_broadcast_to_the_two_way_shape(shape, target) -> None:
    x = RNG.normal(size=shape).astype("float32")
    full = np.broadcast_shapes(shape, target)
    np.testing.assert_array_equal(
        run(op.broadcast_to(X, full), x),
        ort_run("Expand", {"x": x, "shape": np.array(target, "int64")}),
    )


@pytest.mark.parametrize("reps", [(1, 1), (2, 3), (3, 1), (0, 2)])
def test_tile(reps) -> None:
    x = RNG.normal(size=(2, 3)).astype("float32")
    np.testing.assert_array_equal(
        run(op.tile(X, reps), x), ort_run("Tile", {"x": x, "r": np.array(reps, "int64")})
    )


@pytest.mark.parametrize(
    "ashape,bshape",
    [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 6)), ((4,), (4,))],
)
def test_matmul(ashape, bshape) -> None:
    a = RNG.normal(size=ashape).astype("float32")
    b = RNG.normal(size=bshape).astype("float32")
    np.testing.assert_allclose(
        run(op.matmul(X, Y), a, b), ort_run("MatMul", {"a": a, "b": b}), rtol=1e-5, atol=1e-5
    )


CONV_T = [
    # (N, C, H, W), (C, M/g, kh, kw), strides, pads (t, l, b, r), output_padding, dilations, group
    ((1, 2, 3, 3), (2, 3, 3, 3), (1, 1), (0, 0, 0, 0), (0, 0), (1, 1), 1),
    ((2, 3, 4, 3), (3, 2, 3, 2), (2, 2), (1, 0, 1, 0), (1, 1), (1, 1), 1),
    ((1, 2, 3, 4), (2, 2, 2, 3), (3, 2), (0, 1, 2, 1), (2, 1), (1, 2), 1),
    ((1, 4, 3, 3), (4, 3, 3, 3), (2, 1), (1, 1, 1, 1), (1, 0), (2, 1), 2),
    ((1, 3, 4, 4), (3, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), 3),
    ((1, 8, 5, 5), (8, 2, 4, 4), (2, 2), (1, 1, 1, 1), (0, 0), (1, 1), 4),
]


@pytest.mark.parametrize("dshape,wshape,strides,pads,opad,dilations,group", CONV_T)
def test_conv_transpose(dshape, wshape, strides, pads, opad, dilations, group) -> None:
    x = RNG.normal(size=dshape).astype("float32")
    w = RNG.normal(size=wshape).astype("float32")
    call = op.nn.conv2d_transpose(
        X,
        Y,
        strides=strides,
        padding=pads,
        output_padding=opad,
        dilation=dilations,
        groups=group,
    )
    # ONNX pads are (x1_begin, x2_begin, x1_end, x2_end): the same order as ours
    expected = ort_run(
        "ConvTranspose",
        {"x": x, "w": w},
        strides=list(strides),
        pads=list(pads),
        output_padding=list(opad),
        dilations=list(dilations),
        group=group,
    )
    np.testing.assert_allclose(run(call, x, w), expected, rtol=1e-4, atol=1e-4)
