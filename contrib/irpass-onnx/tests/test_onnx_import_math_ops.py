"""Import of the ONNX trigonometric, rounding, remainder, bitwise, arg-reduction, scan, Einsum,
Det, norm-reduction and normalization ops (frontend/math.py), compared with onnxruntime on
random inputs; errors name the node."""

from __future__ import annotations

import irpass
import numpy as np
import pytest
from irpass_onnx import OnnxImportError, from_onnx
from onnx import TensorProto as TP
from onnx import helper
from onnx_cases import check, elem_type, make_model, ops_in, rand

F32 = TP.FLOAT
I64 = TP.INT64
BOOL = TP.BOOL


def unary_model(op, x, opset, out=F32, **attrs):
    return make_model([helper.make_node(op, ["x"], ["y"], name="n0", **attrs)], {"x": x},
                      {"y": out}, opset)


def binary_model(op, a, b, opset, out=F32, **attrs):
    return make_model([helper.make_node(op, ["a", "b"], ["y"], name="n0", **attrs)],
                      {"a": a, "b": b}, {"y": out}, opset)


# -- elementwise unary -------------------------------------------------------------------------


@pytest.mark.parametrize(("op", "lo", "hi"), [
    ("Sin", -4, 4), ("Cos", -4, 4), ("Tan", -1.4, 1.4), ("Asin", -0.99, 0.99),
    ("Acos", -0.99, 0.99), ("Atan", -5, 5), ("Sinh", -3, 3), ("Cosh", -3, 3),
    ("Asinh", -5, 5), ("Acosh", 1.01, 5), ("Atanh", -0.99, 0.99),
    ("Floor", -5, 5), ("Ceil", -5, 5), ("Round", -5, 5), ("Sign", -5, 5),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_float(op, lo, hi, dtype):
    x = np.random.default_rng(1).uniform(lo, hi, (3, 4, 5)).astype(dtype)
    if op == "Round":  # halves round to even
        x[0, 0, :] = np.array([-2.5, -1.5, -0.5, 0.5, 2.5], dtype)
    if op == "Sign":
        x[0, 0, 0] = 0
    # onnxruntime has float64 kernels of a few of them only: numpy is the reference there
    ref = None if dtype == np.float32 or op not in NUMPY else [NUMPY[op](x)]
    check(unary_model(op, x, 13, out=elem_type(x)), {"x": x}, ref=ref)


NUMPY = {"Tan": np.tan, "Asin": np.arcsin, "Acos": np.arccos, "Atan": np.arctan,
         "Sinh": np.sinh, "Cosh": np.cosh, "Asinh": np.arcsinh, "Acosh": np.arccosh,
         "Atanh": np.arctanh}


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_sign_int(dtype):
    x = np.arange(-5, 7, dtype=dtype).reshape(3, 4)
    check(unary_model("Sign", x, 13, out=elem_type(x)), {"x": x})


def special_values():
    return np.array([np.inf, -np.inf, np.nan, 0.0, -1.5, 3.0], np.float32)


def test_isnan():
    x = special_values()
    check(unary_model("IsNaN", x, 13, out=BOOL), {"x": x})


@pytest.mark.parametrize(("pos", "neg"), [(1, 1), (1, 0), (0, 1), (0, 0)])
def test_isinf(pos, neg):
    x = special_values()
    check(unary_model("IsInf", x, 10, out=BOOL, detect_positive=pos, detect_negative=neg),
          {"x": x})


# -- remainders and bits -----------------------------------------------------------------------


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_mod_int(fmod, dtype):
    rng = np.random.default_rng(2)
    a = rng.integers(-20, 20, (3, 4)).astype(dtype)
    b = (rng.integers(1, 6, (4,)) * np.array([1, -1, 1, -1])).astype(dtype)
    check(binary_model("Mod", a, b, 13, out=elem_type(a), fmod=fmod), {"a": a, "b": b})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mod_float_fmod(dtype):
    a = rand(3, 4, seed=3, dtype=dtype) * 5
    b = np.array([1.5, -2.0, 0.7, -3.1], dtype)
    check(binary_model("Mod", a, b, 13, out=elem_type(a), fmod=1), {"a": a, "b": b})


def test_mod_bad_fmod():
    a = np.ones((2,), np.int64)
    with pytest.raises(OnnxImportError, match=r"'n0' \(Mod\): fmod must be 0 or 1"):
        from_onnx(binary_model("Mod", a, a, 13, out=I64, fmod=2))


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64])
def test_bit_shift(direction, dtype):
    rng = np.random.default_rng(4)
    a = rng.integers(0, 200, (3, 4)).astype(dtype)
    b = rng.integers(0, 7, (4,)).astype(dtype)
    check(binary_model("BitShift", a, b, 11, out=elem_type(a), direction=direction),
          {"a": a, "b": b})


def test_bit_shift_bad_direction():
    a = np.ones((2,), np.uint8)
    with pytest.raises(OnnxImportError, match=r"'n0' \(BitShift\): direction must be"):
        from_onnx(binary_model("BitShift", a, a, 11, out=TP.UINT8, direction="UP"))


@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint16])
def test_bitwise_binary(op, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(5)
    a = rng.integers(info.min, info.max, (3, 4), dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, (4,), dtype=dtype, endpoint=True)
    check(binary_model(op, a, b, 18, out=elem_type(a)), {"a": a, "b": b})


@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_bitwise_not(dtype):
    info = np.iinfo(dtype)
    x = np.random.default_rng(6).integers(info.min, info.max, (3, 4), dtype=dtype)
    check(unary_model("BitwiseNot", x, 18, out=elem_type(x)), {"x": x})


def test_bitwise_needs_int():
    a = rand(2)
    with pytest.raises(OnnxImportError, match=r"'n0' \(BitwiseAnd\): input 0 must have an "
                                              r"integer dtype"):
        from_onnx(binary_model("BitwiseAnd", a, a, 18))


# -- arg reductions ----------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("opset", [11, 12, 13])
@pytest.mark.parametrize(("axis", "keepdims"), [(0, 1), (1, 0), (-1, 1), (2, 0)])
def test_arg_reduce(op, opset, axis, keepdims):
    x = rand(3, 4, 5, seed=7)
    check(unary_model(op, x, opset, out=I64, axis=axis, keepdims=keepdims), {"x": x})


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reduce_ties(op, last):
    # many ties: select_last_index picks the last of them
    x = np.random.default_rng(8).integers(0, 3, (4, 6)).astype(np.float32)
    check(unary_model(op, x, 13, out=I64, axis=1, select_last_index=last), {"x": x})


def test_arg_reduce_scalar_rejected():
    with pytest.raises(OnnxImportError, match=r"'n0' \(ArgMax\): input must have at least"):
        from_onnx(unary_model("ArgMax", np.array(1.0, np.float32), 13, out=I64))


# -- CumSum ------------------------------------------------------------------------------------


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_cumsum(exclusive, reverse, axis, dtype):
    x = (rand(3, 4, seed=9) * 10).astype(dtype)
    model = make_model(
        [helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
        {"x": x}, {"y": elem_type(x)}, 14, {"axis": np.array(axis, np.int32)})
    check(model, {"x": x})


def test_cumsum_bad_axis():
    x = rand(3, 4)
    model = make_model([helper.make_node("CumSum", ["x", "axis"], ["y"], name="n0")],
                       {"x": x}, {"y": F32}, 14, {"axis": np.array([0, 1], np.int64)})
    with pytest.raises(OnnxImportError, match=r"'n0' \(CumSum\): axis must be one integer"):
        from_onnx(model)


# -- Einsum and Det ----------------------------------------------------------------------------


@pytest.mark.parametrize(("equation", "shapes"), [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ii->i", [(4, 4)]),
    ("i,i", [(5,), (5,)]),
    ("...ij,...jk", [(2, 3, 4), (2, 4, 2)]),
    ("ijk->", [(2, 3, 4)]),
])
def test_einsum(equation, shapes):
    xs = {f"x{k}": rand(*s, seed=k) for k, s in enumerate(shapes)}
    model = make_model([helper.make_node("Einsum", list(xs), ["y"], equation=equation)], xs,
                       {"y": F32}, 12)
    check(model, xs)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (5, 5)])
def test_det(shape):
    x = rand(*shape, seed=10)
    check(unary_model("Det", x, 11), {"x": x})


# -- norm reductions ---------------------------------------------------------------------------

NORM_REDUCE = ["ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]


def reduce_model(op, x, opset, axes, keepdims=1, out=F32):
    ins, inits = ["x"], {}
    attrs = {"keepdims": keepdims}
    if opset >= 18:
        if axes is not None:
            ins.append("axes")
            inits["axes"] = np.array(axes, np.int64)
    elif axes is not None:
        attrs["axes"] = axes
    return make_model([helper.make_node(op, ins, ["y"], **attrs)], {"x": x}, {"y": out}, opset,
                      inits)


@pytest.mark.parametrize("op", NORM_REDUCE)
@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize(("axes", "keepdims"), [(None, 1), (None, 0), ([1], 0), ([-1, 0], 1)])
def test_norm_reduce(op, opset, axes, keepdims):
    x = rand(2, 3, 4, seed=11)
    if op == "ReduceLogSum":
        x = np.abs(x) + 0.1
    check(reduce_model(op, x, opset, axes, keepdims), {"x": x})


@pytest.mark.parametrize("op", ["ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"])
def test_norm_reduce_int(op):
    x = np.random.default_rng(12).integers(-3, 4, (3, 4)).astype(np.int64)
    check(reduce_model(op, x, 18, [1], 0, out=I64), {"x": x})


def test_log_sum_exp_large_values():
    # a naive log(sum(exp(x))) overflows to inf for these
    x = np.array([[1000.0, 1000.0, 999.0], [-np.inf, -np.inf, -np.inf]], np.float32)
    want = np.log(np.exp(x[0] - 1000).sum()) + 1000
    check(reduce_model("ReduceLogSumExp", x, 18, [1], 0), {"x": x},
          ref=[np.array([want, -np.inf], np.float32)])


# -- normalizations ----------------------------------------------------------------------------


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, -1, 1])
def test_lp_normalization(p, axis):
    x = rand(3, 4, 5, seed=13)
    x[0, 0, :] = 0  # a zero norm along the last axis gives 0
    check(unary_model("LpNormalization", x, 1, p=p, axis=axis), {"x": x})


def test_lp_normalization_bad_p():
    with pytest.raises(OnnxImportError, match=r"'n0' \(LpNormalization\): p must be 1 or 2"):
        from_onnx(unary_model("LpNormalization", rand(2, 3), 1, p=3))


@pytest.mark.parametrize("axes", [None, [0, 2, 3], [1], [-1, 0]])
def test_mean_variance_normalization(axes):
    x = rand(2, 3, 4, 5, seed=14)
    attrs = {} if axes is None else {"axes": axes}
    check(unary_model("MeanVarianceNormalization", x, 13, **attrs), {"x": x})


def test_mvn_needs_float():
    x = np.ones((2, 3, 4, 5), np.int64)
    with pytest.raises(OnnxImportError, match=r"'n0' \(MeanVarianceNormalization\): input "
                                              r"must be a float"):
        from_onnx(unary_model("MeanVarianceNormalization", x, 13, out=I64))


@pytest.mark.parametrize(("op", "dtype", "want"), [
    ("ReduceMax", np.bool_, False), ("ReduceMin", np.int32, np.iinfo(np.int32).max),
    ("ReduceSum", np.float32, 0.0), ("ReduceProd", np.int64, 1),
    ("ReduceLogSumExp", np.float32, -np.inf), ("ReduceL2", np.float32, 0.0),
])
def test_reduce_over_no_elements_is_a_constant(op, dtype, want):
    # the identity whatever the input holds (onnxruntime refuses ReduceMax of bool here)
    x = np.zeros((2, 0, 3), dtype)
    mod = from_onnx(reduce_model(op, x, 18, [1], 1, out=elem_type(x)))
    assert ops_in(mod) == []
    got = irpass.evaluate(mod, x=x)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, np.full((2, 1, 3), want, dtype))
