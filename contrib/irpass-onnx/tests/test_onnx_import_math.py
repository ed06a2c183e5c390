"""Import of the ONNX math, comparison, logic and reduction ops (frontend/math.py): small models
at the opsets where the ops changed, run by irpass.evaluate and compared with onnxruntime
(graph optimizations off) or numpy where onnxruntime has no kernel for the opset."""

from __future__ import annotations

import math

import numpy as np
import pytest
from irpass.ir import Constant
from irpass_onnx import OnnxImportError, from_onnx
from onnx import TensorProto as TP
from onnx import helper
from onnx_cases import check, elem_type, make_model, ops_in, rand

F32 = TP.FLOAT
I64 = TP.INT64
BOOL = TP.BOOL


# -- helpers -----------------------------------------------------------------------------------


def binary_model(op, a, b, opset, out=F32, **attrs):
    return make_model([helper.make_node(op, ["a", "b"], ["y"], **attrs)], {"a": a, "b": b},
                      {"y": out}, opset)


# -- binary arithmetic -------------------------------------------------------------------------

SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 4)), ((), (2, 3)),
          ((2, 1, 4), (3, 1))]


@pytest.mark.parametrize("opset", [7, 13, 14])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize(("sa", "sb"), SHAPES)
def test_arith_broadcast(opset, op, sa, sb):
    a, b = rand(*sa, seed=1), rand(*sb, seed=2)
    if op == "Div":
        b = np.where(np.abs(b) < 0.1, 1.0, b).astype(np.float32)
    check(binary_model(op, a, b, opset), {"a": a, "b": b})


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
def test_arith_int(op, dtype):
    rng = np.random.default_rng(3)
    a = rng.integers(-20, 20, (3, 4)).astype(dtype)
    b = rng.integers(1, 7, (4,)).astype(dtype) * np.array([1, -1, 1, -1], dtype)
    # integer Div truncates toward zero in onnxruntime: -7 / 2 == -3
    check(binary_model(op, a, b, 13, out=elem_type(a)), {"a": a, "b": b})


def test_int_div_truncates():
    a, b = np.array([-7, 7, -7, 7], np.int64), np.array([2, 2, -2, -2], np.int64)
    check(binary_model("Div", a, b, 13, out=I64), {"a": a, "b": b},
          ref=[np.array([-3, 3, 3, -3], np.int64)])
    check(binary_model("Div", a, b, 13, out=I64), {"a": a, "b": b})


@pytest.mark.parametrize("opset", [1, 6])
@pytest.mark.parametrize(("sa", "sb", "axis"), [
    ((2, 3, 4), (2, 3, 4), None), ((2, 3, 4), (4,), None), ((2, 3, 4), (3,), 1),
    ((2, 3, 4), (2, 3), 0), ((2, 3, 4), (3, 4), -2), ((2, 3, 4), (), None),
])
def test_legacy_broadcast(opset, sa, sb, axis):
    a, b = rand(*sa, seed=1), rand(*sb, seed=2)
    attrs = {} if sa == sb else {"broadcast": 1}
    if axis is not None:
        attrs["axis"] = axis
    rb = b
    if axis is not None:  # b is aligned with a's axes from `axis` on
        start = axis + len(sa) if axis < 0 else axis
        rb = b.reshape(sb + (1,) * (len(sa) - start - len(sb)))
    check(binary_model("Mul", a, b, opset, **attrs), {"a": a, "b": b}, ref=[a * rb])


def test_legacy_broadcast_unset_names_node():
    a, b = rand(2, 3), rand(3)
    model = make_model([helper.make_node("Add", ["a", "b"], ["y"], name="add0")],
                       {"a": a, "b": b}, {"y": F32}, 6)
    with pytest.raises(OnnxImportError, match=r"'add0' \(Add\).*broadcast is not set"):
        from_onnx(model)


def test_legacy_broadcast_mismatch():
    a, b = rand(2, 3), rand(2)
    with pytest.raises(OnnxImportError, match=r"\(Sub\).*does not match"):
        from_onnx(binary_model("Sub", a, b, 6, broadcast=1))


def test_mixed_dtypes_rejected():
    a, b = rand(2, 3), np.ones((2, 3), np.int64)
    with pytest.raises(OnnxImportError, match=r"\(Add\).*type error"):
        from_onnx(binary_model("Add", a, b, 13))


# -- Pow ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [7, 12, 13, 15])
def test_pow_float(opset):
    a = np.abs(rand(3, 4, seed=1)) + 0.1
    b = rand(4, seed=2)
    check(binary_model("Pow", a, b, opset), {"a": a, "b": b})


@pytest.mark.parametrize(("a", "b"), [
    (np.abs(rand(3, 4)) + 0.5, np.array([2, 3, 0, 1], np.int64)),
    (np.abs(rand(3, 4)) + 0.5, np.array([2, 3, 0, 1], np.int32)),
    (np.array([[1, 2, 3, 4]], np.int32), np.array([0.5, 2.0, 1.5, 0.0], np.float32)),
    (np.array([[1, 2, 3, 4]], np.int64), np.array([3, 2, 1, 0], np.int64)),
])
def test_pow_mixed_types(a, b):
    check(binary_model("Pow", a, b, 13, out=elem_type(a)), {"a": a, "b": b})


# -- variadic ----------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [8, 13])
@pytest.mark.parametrize("op", ["Sum", "Max", "Min", "Mean"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_variadic(opset, op, n):
    shapes = [(2, 3, 4), (3, 1), (4,)][:n]
    xs = {f"x{i}": rand(*s, seed=i) for i, s in enumerate(shapes)}
    model = make_model([helper.make_node(op, list(xs), ["y"])], xs, {"y": F32}, opset)
    mod = check(model, xs)
    if op == "Sum" and n == 3:
        assert ops_in(mod) == ["add", "add"]


def test_variadic_int():
    # ONNX Sum and Mean are float-only; Max and Min take integers from opset 12
    xs = {f"x{i}": np.arange(6, dtype=np.int64).reshape(2, 3) * (i - 1) for i in range(3)}
    for op in ("Max", "Min"):
        model = make_model([helper.make_node(op, list(xs), ["y"])], xs, {"y": I64}, 13)
        check(model, xs)


# -- unary -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("op", "opset"), [
    ("Neg", 6), ("Neg", 13), ("Abs", 13), ("Exp", 13), ("Log", 13), ("Sqrt", 13),
    ("Erf", 9), ("Erf", 13), ("Reciprocal", 13),
])
def test_unary_float(op, opset):
    x = rand(3, 4, 5) * 2
    if op in ("Log", "Sqrt"):
        x = np.abs(x) + 0.01
    if op == "Reciprocal":
        x = np.where(np.abs(x) < 0.1, 0.5, x).astype(np.float32)
    check(make_model([helper.make_node(op, ["x"], ["y"])], {"x": x}, {"y": F32}, opset),
          {"x": x})


@pytest.mark.parametrize("op", ["Neg", "Abs"])
def test_unary_int(op):
    x = np.arange(-5, 7, dtype=np.int64).reshape(3, 4)
    check(make_model([helper.make_node(op, ["x"], ["y"])], {"x": x}, {"y": I64}, 13), {"x": x})


def test_erf_float64():
    # onnxruntime has no float64 Erf kernel: compare with Python's math.erf
    x = np.linspace(-4, 4, 101)
    want = np.array([math.erf(v) for v in x])
    check(make_model([helper.make_node("Erf", ["x"], ["y"])], {"x": x}, {"y": TP.DOUBLE}, 13),
          {"x": x}, ref=[want])


# -- comparisons and logic ---------------------------------------------------------------------


@pytest.mark.parametrize(("op", "opset"), [
    ("Equal", 11), ("Equal", 13), ("Less", 9), ("Less", 13), ("Greater", 13),
    ("LessOrEqual", 12), ("GreaterOrEqual", 16),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_compare(op, opset, dtype):
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 3, (3, 4)).astype(dtype)
    b = rng.integers(-3, 3, (4,)).astype(dtype)
    check(binary_model(op, a, b, opset, out=BOOL), {"a": a, "b": b})


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic_binary(op):
    a = rand(3, 4, seed=1) > 0
    b = rand(4, seed=2) > 0
    check(binary_model(op, a, b, 7, out=BOOL), {"a": a, "b": b})


def test_not():
    x = rand(3, 4) > 0
    check(make_model([helper.make_node("Not", ["x"], ["y"])], {"x": x}, {"y": BOOL}, 13),
          {"x": x})


def test_logic_needs_bool():
    model = make_model([helper.make_node("Not", ["x"], ["y"])], {"x": rand(2)}, {"y": BOOL}, 13)
    with pytest.raises(OnnxImportError, match=r"\(Not\): input 0 must be bool"):
        from_onnx(model)


# -- reductions --------------------------------------------------------------------------------

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"]
AXES_INPUT_SINCE = {"ReduceSum": 13}


def reduce_model(op, x, opset, axes, keepdims=None, noop=None):
    attrs = {}
    if keepdims is not None:
        attrs["keepdims"] = keepdims
    if noop is not None:
        attrs["noop_with_empty_axes"] = noop
    ins, inits = ["x"], {}
    if opset >= AXES_INPUT_SINCE.get(op, 18):
        if axes is not None:
            ins.append("axes")
            inits["axes"] = np.array(axes, np.int64)
    elif axes is not None:
        attrs["axes"] = axes
    return make_model([helper.make_node(op, ins, ["y"], **attrs)], {"x": x}, {"y": F32}, opset,
                      inits)


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("opset", [11, 13, 18])
@pytest.mark.parametrize(("axes", "keepdims"), [
    (None, None), ([1], 0), ([-1, 0], 1), ([0, 1, 2], 0), ([2], None),
])
def test_reduce(op, opset, axes, keepdims):
    x = rand(2, 3, 4) + 0.5
    check(reduce_model(op, x, opset, axes, keepdims), {"x": x})


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("noop", [0, 1])
def test_reduce_empty_axes(op, noop):
    x = rand(2, 3) + 0.5
    opset = AXES_INPUT_SINCE.get(op, 18)
    model = make_model([helper.make_node(op, ["x", "axes"], ["y"], noop_with_empty_axes=noop)],
                       {"x": x}, {"y": F32}, opset, {"axes": np.zeros((0,), np.int64)})
    mod = check(model, {"x": x})
    assert (ops_in(mod) == []) == bool(noop)


def test_reduce_runtime_axes_names_node():
    x = rand(2, 3)
    model = make_model([helper.make_node("ReduceSum", ["x", "a"], ["y"], name="rs")],
                       {"x": x, "a": np.array([1], np.int64)}, {"y": F32}, 13)
    with pytest.raises(OnnxImportError, match=r"'rs' \(ReduceSum\): input 1 \(axes"):
        from_onnx(model)


def test_reduce_axis_out_of_range():
    with pytest.raises(OnnxImportError, match=r"\(ReduceMean\).*out of range"):
        from_onnx(reduce_model("ReduceMean", rand(2, 3), 13, [2]))


# -- integer arithmetic on shapes is folded ----------------------------------------------------


def test_int_math_on_shapes_is_folded():
    # y = x.reshape(x.shape // [1, 2] * [2, 1]) built by Div/Mul/Sub on a Shape
    x = rand(4, 6)
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Div", ["s", "two_one"], ["q"]),
        helper.make_node("Mul", ["q", "one_two"], ["m"]),
        helper.make_node("Sub", ["m", "zero"], ["ns"]),
        helper.make_node("ReduceProd", ["ns"], ["n"], keepdims=1),
        helper.make_node("Div", ["n", "n"], ["one"]),
        helper.make_node("Mul", ["ns", "one"], ["shape"]),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    inits = {"two_one": np.array([1, 2], np.int64), "one_two": np.array([2, 1], np.int64),
             "zero": np.array(0, np.int64)}
    mod = check(make_model(nodes, {"x": x}, {"y": F32}, 13, inits), {"x": x})
    assert ops_in(mod) == ["reshape"]
    assert tuple(mod["main"].body.attrs["newshape"]) == (8, 3)


def test_float_math_on_constants_stays():
    x = rand(2, 3)
    nodes = [helper.make_node("Mul", ["w", "w"], ["w2"]),
             helper.make_node("Add", ["x", "w2"], ["y"])]
    mod = check(make_model(nodes, {"x": x}, {"y": F32}, 13, {"w": rand(3, seed=5)}), {"x": x})
    assert ops_in(mod) == ["multiply", "add"]
    assert not isinstance(mod["main"].body, Constant)
