"""Elementwise and broadcasting ops: type relations, kernels vs numpy, errors."""

from __future__ import annotations

import math
import warnings

import irpass
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from irpass import op
from irpass.ir import Call, Constant, TensorType, var
from op_checks import infer, run

RNG = np.random.default_rng(0)


X, Y, Z = var("x"), var("y"), var("z")
F32 = TensorType((2, 3), "float32")


# -- unary -------------------------------------------------------------------------------------

UNARY_REFS = {
    "log": lambda x: np.log(x),
    "exp": lambda x: np.exp(x),
    "sqrt": lambda x: np.sqrt(x),
    "tanh": lambda x: np.tanh(x),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x.astype("float64"))),
    "abs": lambda x: np.where(x < 0, -x, x),
    "negative": lambda x: 0 - x,
}


@pytest.mark.parametrize("name", sorted(UNARY_REFS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_unary_float_kernels_match_numpy(name: str, dtype: str) -> None:
    x = (RNG.random((3, 4)) * 4 + 0.1).astype(dtype)
    call = getattr(op, name)(X)
    assert infer(call, TensorType((3, 4), dtype)) == TensorType((3, 4), dtype)
    out = run(call, x)
    tol = 1e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(out, UNARY_REFS[name](x).astype(dtype), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["log", "exp", "sqrt", "tanh", "sigmoid", "erf"])
def test_float_only_unary_rejects_ints(name: str) -> None:
    call = getattr(op, name)(X)
    with pytest.raises(TypeError, match=rf"{name}: data must have a floating-point dtype.*int32"):
        infer(call, TensorType((2,), "int32"))


@pytest.mark.parametrize("name", ["abs", "negative"])
def test_abs_negative_keep_integer_dtype(name: str) -> None:
    x = np.array([-3, 0, 5], dtype="int16")
    out = run(getattr(op, name)(X), x)
    assert out.tolist() == ([3, 0, 5] if name == "abs" else [3, 0, -5])


def test_sigmoid_is_stable_at_extremes() -> None:
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype="float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = run(op.sigmoid(X), x)
    assert out[0] == 0.0 and out[2] == 0.5 and out[4] == 1.0
    # 1/(1+e^50) is about 1.9e-22: representable, must not round to 0 via 1 - 1
    np.testing.assert_allclose(out[1], 1.9287498e-22, rtol=1e-5)


def test_unary_on_scalar_returns_0d_array() -> None:
    out = run(op.exp(X), np.array(0.0, dtype="float32"))
    assert out.shape == () and out == 1.0


def test_arithmetic_rejects_bool() -> None:
    with pytest.raises(TypeError, match="abs: data must have a numeric"):
        infer(op.abs(X), TensorType((2,), "bool"))


# -- binary ------------------------------------------------------------------------------------

BROADCAST_CASES = [
    ((2, 3), (3,), (2, 3)),
    ((4, 1, 3), (2, 1), (4, 2, 3)),
    ((), (5,), (5,)),
    ((1,), (0,), (0,)),
    ((2, 1, 4), (1, 3, 1), (2, 3, 4)),
]


@pytest.mark.parametrize("lhs,rhs,expected", BROADCAST_CASES)
def test_binary_broadcast_shapes(lhs, rhs, expected) -> None:
    ty = infer(op.add(X, Y), TensorType(lhs, "float32"), TensorType(rhs, "float32"))
    assert ty == TensorType(expected, "float32")
    cmp = infer(op.less(X, Y), TensorType(lhs, "int8"), TensorType(rhs, "int8"))
    assert cmp == TensorType(expected, "bool")


BINARY_REFS = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
    "maximum": lambda a, b: np.where(a > b, a, b),
    "minimum": lambda a, b: np.where(a < b, a, b),
    "power": lambda a, b: np.exp(b * np.log(a)),
    "equal": lambda a, b: a == b,
    "not_equal": lambda a, b: a != b,
    "less": lambda a, b: a < b,
    "less_equal": lambda a, b: a <= b,
    "greater": lambda a, b: a > b,
    "greater_equal": lambda a, b: a >= b,
}


@pytest.mark.parametrize("name", sorted(BINARY_REFS))
def test_binary_kernels_match_reference(name: str) -> None:
    a = RNG.integers(1, 5, size=(4, 1, 3)).astype("float32")
    b = RNG.integers(1, 5, size=(2, 1)).astype("float32")
    out = run(getattr(op, name)(X, Y), a, b)
    expected = BINARY_REFS[name](a.astype("float64"), b.astype("float64"))
    np.testing.assert_allclose(out, expected, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "float16", "float64"])
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "maximum", "power"])
def test_binary_keeps_dtype(name: str, dtype: str) -> None:
    a = np.array([[1, 2, 3]], dtype=dtype)
    b = np.array([[2], [1]], dtype=dtype)
    out = run(getattr(op, name)(X, Y), a, b)
    assert out.dtype == np.dtype(dtype) and out.shape == (2, 3)


def test_integer_divide_truncates_toward_zero() -> None:
    a = np.array([-7, 7, -7, 7, 6, -6, 0], dtype="int32")
    b = np.array([2, 2, -2, -2, 3, 3, -5], dtype="int32")
    assert run(op.divide(X, Y), a, b).tolist() == [-3, 3, 3, -3, 2, -2, 0]


def test_integer_divide_by_zero_is_zero() -> None:
    x, y = var("x", shape=(2,), dtype="int8"), var("y", shape=(2,), dtype="int8")
    divide = irpass.Function([x, y], op.divide(x, y))
    # Evaluated as a program (not the bare kernel): no warning reaches the user either.
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        out = irpass.evaluate(divide, np.array([5, -5], "int8"), np.array([0, 0], "int8"))
    assert out.tolist() == [0, 0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-1000, 1000), st.integers(-50, 50)), min_size=1, max_size=20))
def test_integer_divide_matches_python_truncation(pairs) -> None:
    pairs = [(a, b) for a, b in pairs if b != 0] or [(1, 1)]
    a = np.array([p[0] for p in pairs], dtype="int32")
    b = np.array([p[1] for p in pairs], dtype="int32")
    # float division is exact enough here to truncate by hand
    expected = [int(x / y) for x, y in pairs]
    assert run(op.divide(X, Y), a, b).tolist() == expected


def test_float_divide_by_zero_is_ieee() -> None:
    out = run(op.divide(X, Y), np.array([1.0, -1.0], "float32"), np.array([0.0, 0.0], "float32"))
    assert out.tolist() == [np.inf, -np.inf]


def test_power_negative_integer_exponent_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="power: .*negative"):
        run(op.power(X, Y), np.array([2], "int32"), np.array([-1], "int32"))


def test_binary_dtype_mismatch_names_both() -> None:
    with pytest.raises(TypeError, match=r"add: .*same dtype.*lhs .*float32.*rhs .*int32"):
        infer(op.add(X, Y), F32, TensorType((2, 3), "int32"))


def test_binary_not_broadcastable_names_shapes() -> None:
    with pytest.raises(
        ValueError,
        match=r"multiply: shapes are not broadcastable: lhs \(2, 3\) "
        r"and rhs \(4,\)",
    ):
        infer(op.multiply(X, Y), F32, TensorType((4,), "float32"))


def test_binary_rejects_tuple_argument() -> None:
    from irpass.ir import TupleType

    with pytest.raises(TypeError, match="subtract: rhs must be a tensor"):
        infer(op.subtract(X, Y), F32, TupleType((F32,)))


def test_comparison_returns_bool_and_accepts_bool() -> None:
    a = np.array([True, False])
    out = run(op.equal(X, Y), a, np.array([True, True]))
    assert out.tolist() == [True, False]


def test_builders_turn_numbers_into_constants() -> None:
    call = op.add(X, 1.0)
    assert isinstance(call.args[1], Constant) and call.args[1].data.dtype == np.float32
    assert call.op is irpass.Op.get("add")


# -- where, clip, cast -------------------------------------------------------------------------


def test_where_broadcasts_three_ways() -> None:
    ty = infer(
        op.where(X, Y, Z),
        TensorType((2, 1, 1), "bool"),
        TensorType((3, 1), "float32"),
        TensorType((4,), "float32"),
    )
    assert ty == TensorType((2, 3, 4), "float32")
    cond = np.array([[[True]], [[False]]])
    x = np.arange(3, dtype="float32").reshape(3, 1)
    y = -np.arange(4, dtype="float32")
    out = run(op.where(X, Y, Z), cond, x, y)
    assert out[0].tolist() == [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2]]
    assert out[1].tolist() == [[0, -1, -2, -3]] * 3


def test_where_requires_bool_condition() -> None:
    with pytest.raises(TypeError, match="where: condition must have dtype bool"):
        infer(op.where(X, Y, Z), TensorType((2,), "int32"), F32, F32)


def test_where_requires_same_branch_dtypes() -> None:
    with pytest.raises(TypeError, match="where: .*same dtype.*x .*float32.*y .*float64"):
        infer(op.where(X, Y, Z), TensorType((), "bool"), F32, TensorType((2, 3), "float64"))


def test_clip() -> None:
    x = np.array([-2.0, -0.5, 0.25, 3.0], dtype="float32")
    out = run(op.clip(X, -1.0, 1.0), x)
    assert out.tolist() == [-1.0, -0.5, 0.25, 1.0]
    ints = run(op.clip(X, 0, 10), np.array([-5, 5, 50], dtype="int8"))
    assert ints.tolist() == [0, 5, 10] and ints.dtype == np.int8


def test_clip_keeps_64_bit_integers_exact() -> None:
    big = np.array([2**60 + 1, -(2**62) - 3, 7], dtype="int64")
    assert run(op.clip(X, -1.0e30, 1.0e30), big).tolist() == big.tolist()
    assert run(op.clip(X, -1.0, 1e30), big).tolist() == [2**60 + 1, -1, 7]
    top = np.array([2**64 - 1, 2**64 - 3, 0], dtype="uint64")
    out = run(op.clip(X, 1.0, float("inf")), top)
    assert out.dtype == np.uint64 and out.tolist() == [2**64 - 1, 2**64 - 3, 1]


@pytest.mark.parametrize(
    "dtype,a_min,a_max,expected",
    [
        ("int32", -1.5, 1.5, [-1, -1, -1, 0, 1, 1, 1]),  # bounds rounded inward
        ("int32", 0.5, 2.5, [1, 1, 1, 1, 1, 2, 2]),
        ("int8", -1e9, 1e9, [-3, -2, -1, 0, 1, 2, 3]),  # beyond the dtype: no bound
        ("int8", 200.0, 300.0, [127] * 7),  # the whole interval above the dtype
        ("int8", float("-inf"), -0.5, [-3, -2, -1, -1, -1, -1, -1]),
        ("int8", 0.2, 0.8, [0] * 7),  # no integer inside: float clip truncated
        ("int8", -2.8, -2.2, [-2] * 7),
    ],
)
def test_clip_integer_bounds(dtype, a_min, a_max, expected) -> None:
    x = np.arange(-3, 4).astype(dtype)
    out = run(op.clip(X, a_min, a_max), x)
    assert out.dtype == np.dtype(dtype) and out.tolist() == expected


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=5),
    st.floats(-1e19, 1e19),
    st.floats(-1e19, 1e19),
)
def test_clip_int64_is_the_nearest_integer_in_bounds(values, lo, hi) -> None:
    lo, hi = min(lo, hi), max(lo, hi)
    if math.ceil(lo) > math.floor(hi):
        return
    out = run(op.clip(X, lo, hi), np.array(values, dtype="int64"))
    # Python compares ints with floats exactly
    imin, imax = -(2**63), 2**63 - 1
    expected = [
        v
        if lo <= v <= hi
        else min(max(math.ceil(lo), imin), imax)
        if v < lo
        else max(min(math.floor(hi), imax), imin)
        for v in values
    ]
    assert out.tolist() == expected


def test_clip_rejects_nan_bounds() -> None:
    with pytest.raises(ValueError, match="clip: a_max must be a number, got nan"):
        infer(op.clip(X, 0.0, float("nan")), F32)


def test_clip_rejects_inverted_bounds() -> None:
    with pytest.raises(ValueError, match=r"clip: a_min \(2.0\) must not be greater than a_max"):
        infer(op.clip(X, 2.0, 1.0), F32)


def test_clip_requires_bounds() -> None:
    with pytest.raises(ValueError, match="op 'clip' requires attribute 'a_max'"):
        Call(irpass.Op.get("clip"), [X], {"a_min": 0.0})


def test_cast() -> None:
    call = op.cast(X, "int32")
    assert infer(call, F32) == TensorType((2, 3), "int32")
    out = run(call, np.array([1.7, -1.7, 0.0], dtype="float32"))
    assert out.tolist() == [1, -1, 0]
    assert run(op.cast(X, np.float16), np.array([1, 2], "int8")).dtype == np.float16


def test_cast_rejects_unknown_dtype() -> None:
    with pytest.raises(ValueError, match="cast.dtype: unsupported dtype 'complex64'"):
        op.cast(X, "complex64")


# -- erf ---------------------------------------------------------------------------------------

_ERF = np.frompyfunc(math.erf, 1, 1)


def erf_ref(x: np.ndarray) -> np.ndarray:
    """math.erf on every element, in float64 (the slow, independent reference)."""
    return _ERF(x.astype("float64")).astype("float64")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_erf_matches_math_erf_on_a_dense_grid(dtype: str) -> None:
    # every branch of the rational approximations, their borders, and the tails
    x = np.concatenate(
        [
            np.linspace(-7.0, 7.0, 20001),
            np.array([0.46875, 0.46876, 4.0, 4.0001, 5.9, 26.0, 27.0, 1e-30, -1e-30]),
        ]
    ).astype(dtype)
    out = run(op.erf(X), x)
    ref = erf_ref(x)
    if dtype == "float32":
        # correctly rounded float32 almost everywhere: at most one ulp, 1e-7 absolute
        np.testing.assert_allclose(out, ref.astype("float32"), rtol=1.2e-7, atol=1e-7)
    else:
        np.testing.assert_allclose(out, ref, rtol=1e-15, atol=1e-16)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_erf_special_values(dtype: str) -> None:
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e4, -1e4], dtype=dtype)
    out = run(op.erf(X), x)
    assert out[:4].tolist() == [0.0, 0.0, 1.0, -1.0] and np.signbit(out[1])
    assert np.isnan(out[4]) and out[5] == 1.0 and out[6] == -1.0


@settings(max_examples=200, deadline=None)
@given(st.floats(-30, 30, allow_nan=False, allow_subnormal=False))
def test_erf_of_any_float64_is_within_two_ulp(value: float) -> None:
    out = run(op.erf(X), np.array(value))
    assert math.isclose(float(out), math.erf(value), rel_tol=5e-16, abs_tol=1e-300)


def test_erf_is_odd() -> None:
    x = RNG.normal(size=1000) * 3
    np.testing.assert_array_equal(run(op.erf(X), x), -run(op.erf(X), -x))


# -- matmul ------------------------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3, 4), (4, 5), (3, 5)),
    ((4,), (4,), ()),
    ((4,), (4, 5), (5,)),
    ((3, 4), (4,), (3,)),
    ((2, 3, 4), (4, 5), (2, 3, 5)),
    ((4,), (2, 4, 5), (2, 5)),
    ((2, 3, 4), (4,), (2, 3)),
    ((2, 1, 3, 4), (5, 4, 6), (2, 5, 3, 6)),
    ((1, 3, 4), (7, 1, 4, 2), (7, 1, 3, 2)),
    ((0, 3, 4), (4, 2), (0, 3, 2)),
    ((3, 0), (0, 2), (3, 2)),
]


def matmul_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """matmul by explicit promotion, broadcast and an einsum over the inner axis."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a3 = np.broadcast_to(a2, batch + a2.shape[-2:]).astype("float64")
    b3 = np.broadcast_to(b2, batch + b2.shape[-2:]).astype("float64")
    out = np.einsum("...ij,...jk->...ik", a3, b3)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


@pytest.mark.parametrize("ashape,bshape,expected", MATMUL_SHAPES)
def test_matmul_shapes_and_values(ashape, bshape, expected) -> None:
    a, b = RNG.normal(size=ashape), RNG.normal(size=bshape)
    call = op.matmul(X, Y)
    assert infer(call, TensorType(ashape, "float32"), TensorType(bshape, "float32")) == (
        TensorType(expected, "float32")
    )
    out = run(call, a.astype("float32"), b.astype("float32"))
    np.testing.assert_allclose(out, matmul_ref(a, b), rtol=1e-5, atol=1e-5)


def test_matmul_integers_and_float16() -> None:
    a = RNG.integers(-5, 5, (2, 3)).astype("int32")
    b = RNG.integers(-5, 5, (3, 4)).astype("int32")
    np.testing.assert_array_equal(run(op.matmul(X, Y), a, b), a.astype(int) @ b.astype(int))
    h = RNG.normal(size=(2, 64)).astype("float16")
    g = RNG.normal(size=(64, 3)).astype("float16")
    # accumulated in float32, rounded once
    expected = (h.astype("float32") @ g.astype("float32")).astype("float16")
    np.testing.assert_array_equal(run(op.matmul(X, Y), h, g), expected)


@pytest.mark.parametrize(
    "ashape,bshape,adtype,bdtype,error,message",
    [
        ((3, 4), (5, 2), "float32", "float32", ValueError, r"matmul: the inner dimensions.*a "),
        ((), (2,), "float32", "float32", ValueError, r"matmul: a must have at least 1 dim"),
        ((2,), (), "float32", "float32", ValueError, r"matmul: b must have at least 1 dim"),
        ((2, 3, 4), (3, 4, 2), "float32", "float32", ValueError, r"matmul: shapes are not br"),
        ((2, 2), (2, 2), "float32", "int32", TypeError, r"matmul: arguments must have the same"),
        ((2, 2), (2, 2), "bool", "bool", TypeError, r"matmul: a must have a numeric"),
    ],
)
def test_matmul_errors(ashape, bshape, adtype, bdtype, error, message) -> None:
    with pytest.raises(error, match=message):
        infer(op.matmul(X, Y), TensorType(ashape, adtype), TensorType(bshape, bdtype))
