"""Reductions (sum, mean, max, min, prod) and creation ops (zeros, ones, full,
zeros_like, ones_like, shape_of)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from irpass import const, op
from irpass.ir import Call, Op, var
from op_checks import infer, run, t

X = var("x")
RNG = np.random.default_rng(1)





# -- shapes ------------------------------------------------------------------------------------

SHAPE_CASES = [
    # (axis, keepdims, exclude, expected) for input (2, 3, 4)
    (None, False, False, ()),
    (None, True, False, (1, 1, 1)),
    (1, False, False, (2, 4)),
    (-1, True, False, (2, 3, 1)),
    ((0, 2), False, False, (3,)),
    ((0, 2), True, False, (1, 3, 1)),
    ((0, 2), False, True, (2, 4)),
    (1, True, True, (1, 3, 1)),
    # an empty axis list reduces every axis, with or without exclude (Relay)
    ((), False, False, ()),
    ([], True, False, (1, 1, 1)),
    ((), False, True, ()),
    (None, False, True, ()),  # Relay ignores exclude without an axis
]


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("axis,keepdims,exclude,expected", SHAPE_CASES)
def test_reduce_shapes(name, axis, keepdims, exclude, expected) -> None:
    call = getattr(op, name)(X, axis=axis, keepdims=keepdims, exclude=exclude)
    assert infer(call, t(2, 3, 4)) == t(*expected)


REFS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


@pytest.mark.parametrize("name", sorted(REFS))
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
def test_reduce_kernels_match_numpy(name, axis) -> None:
    x = (RNG.random((2, 3, 4)) + 0.5).astype("float32")
    out = run(getattr(op, name)(X, axis=axis, keepdims=True), x)
    expected = REFS[name](x.astype("float64"), axis=axis, keepdims=True)
    np.testing.assert_allclose(out, expected, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(REFS))
@pytest.mark.parametrize("exclude", [False, True])
def test_empty_axis_list_reduces_every_axis(name, exclude) -> None:
    x = (RNG.random((2, 3)) + 0.5).astype("float64")
    out = run(getattr(op, name)(X, axis=[], exclude=exclude), x)
    assert out.shape == ()
    np.testing.assert_allclose(out, REFS[name](x))


def test_exclude_reduces_the_other_axes() -> None:
    x = RNG.random((2, 3, 4)).astype("float64")
    out = run(op.sum(X, axis=1, exclude=True), x)
    np.testing.assert_allclose(out, x.sum(axis=(0, 2)))


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.integers(1, 3), min_size=1, max_size=4),
    st.data(),
    st.booleans(),
)
def test_sum_shape_matches_numpy(shape, data, keepdims) -> None:
    axes = data.draw(
        st.lists(st.integers(-len(shape), len(shape) - 1), unique_by=lambda a: a % len(shape))
    )
    x = np.ones(shape, dtype="float32")
    out = run(op.sum(X, axis=tuple(axes), keepdims=keepdims), x)
    # numpy reduces nothing over axis=(); Relay (and irpass) reduce everything
    assert out.shape == np.sum(x, axis=tuple(axes) or None, keepdims=keepdims).shape


def test_integer_sum_keeps_dtype_and_wraps() -> None:
    x = np.array([100, 100], dtype="int8")
    out = run(op.sum(X), x)
    assert out.dtype == np.int8 and int(out) == 200 - 256
    assert run(op.prod(X), np.array([16, 16], dtype="int8")).item() == 0  # 256 wraps to 0
    assert run(op.sum(X, axis=0), np.ones((3, 2), "uint16")).tolist() == [3, 3]


def test_integer_mean_truncates_toward_zero() -> None:
    x = np.array([[-3, -4], [3, 4], [-1, 0]], dtype="int32")
    assert run(op.mean(X, axis=1), x).tolist() == [-3, 3, 0]
    assert run(op.mean(X), np.array([250, 250], "uint8")).item() == 250  # no overflow


def test_float16_reductions_keep_dtype() -> None:
    x = np.full((1000,), 1.0, dtype="float16")
    out = run(op.mean(X), x)
    assert out.dtype == np.float16 and out.item() == 1.0
    assert run(op.sum(X), np.full((3000,), 1.0, "float16")).item() == 3000.0


def test_max_min_on_bool() -> None:
    x = np.array([[True, False], [False, False]])
    assert run(op.max(X, axis=1), x).tolist() == [True, False]
    assert run(op.min(X, axis=0), x).tolist() == [False, False]


@pytest.mark.parametrize(
    "call,ty,error,message",
    [
        (op.sum(X, axis=3), t(2, 3, 4), ValueError, "sum: axis 3 is out of range for a 3-D tensor"),
        (
            op.mean(X, axis=(0, -3)),
            t(2, 3, 4),
            ValueError,
            r"mean: axis \(0, -3\) names an axis twice",
        ),
        (
            op.mean(X, axis=1),
            t(2, 0, dtype="int32"),
            ValueError,
            "mean: cannot reduce over axis 1 of size 0",
        ),
        (op.sum(X), t(2, dtype="bool"), TypeError, "sum: data must have a numeric"),
    ],
)
def test_reduce_errors(call, ty, error, message) -> None:
    with pytest.raises(error, match=message):
        infer(call, ty)


def test_reduce_attr_errors() -> None:
    with pytest.raises(TypeError, match="sum.keepdims must be a bool"):
        op.sum(X, keepdims="yes")
    with pytest.raises(ValueError, match="op 'sum' has no attribute 'axes'; did you mean axis"):
        Call(Op.get("sum"), [X], {"axes": 1})


def test_empty_sum_and_prod_are_identities() -> None:
    x = np.zeros((2, 0), dtype="float32")
    assert run(op.sum(X, axis=1), x).tolist() == [0.0, 0.0]
    assert run(op.prod(X, axis=1), x).tolist() == [1.0, 1.0]


@pytest.mark.parametrize(
    "dtype,lowest,highest",
    [
        ("float32", -math.inf, math.inf),
        ("float16", -math.inf, math.inf),
        ("int8", -128, 127),
        ("uint16", 0, 65535),
        ("int64", -(2**63), 2**63 - 1),
        ("bool", False, True),
    ],
)
def test_empty_max_and_min_are_their_identities(dtype, lowest, highest) -> None:
    # Relay's initial values (ONNX ReduceMax/ReduceMin over an empty set): max of nothing
    # is the lowest value, min the highest
    x = np.zeros((2, 0, 3), dtype=dtype)
    out = run(op.max(X, axis=1, keepdims=True), x)
    assert out.shape == (2, 1, 3) and out.dtype == np.dtype(dtype)
    assert out.tolist() == [[[lowest] * 3]] * 2
    assert run(op.min(X, axis=(0, 1)), x).tolist() == [highest] * 3


def test_empty_float_mean_is_nan() -> None:
    out = run(op.mean(X, axis=1), np.zeros((3, 0), dtype="float16"))
    assert out.dtype == np.float16 and np.isnan(out).all() and out.shape == (3,)


# -- creation ----------------------------------------------------------------------------------


def test_zeros_ones() -> None:
    call = op.zeros((2, 3), "int32")
    assert call.args == () and infer(call) == t(2, 3, dtype="int32")
    assert call.op.kernel((), call.attrs).tolist() == [[0, 0, 0], [0, 0, 0]]
    ones = op.ones((2,))
    assert infer(ones) == t(2)
    out = ones.op.kernel((), ones.attrs)
    assert out.tolist() == [1.0, 1.0] and out.dtype == np.float32
    assert infer(op.zeros(())) == t()


def test_zeros_rejects_negative_shape() -> None:
    with pytest.raises(ValueError, match=r"zeros.shape\[1\] must be >= 0, got -2"):
        op.zeros((2, -2))


def test_full() -> None:
    call = op.full(const(3, "int8"), (2, 2))
    assert infer(call, t(dtype="int8")) == t(2, 2, dtype="int8")
    assert run(call, np.array(3, "int8")).tolist() == [[3, 3], [3, 3]]
    call = op.full(2.5, shape=(3,), dtype="float64")
    out = run(call, np.array(2.5, "float32"))
    assert out.tolist() == [2.5, 2.5, 2.5] and out.dtype == np.float64
    with pytest.raises(ValueError, match=r"full: fill_value must be a scalar \(0-D tensor\)"):
        infer(call, t(1))
    with pytest.raises(ValueError, match="op 'full' requires attribute 'shape'"):
        op.full(1.0)


def test_like_ops() -> None:
    x = np.array([[1.5, -2.0]], dtype="float64")
    z = run(op.zeros_like(X), x)
    o = run(op.ones_like(X), x)
    assert z.tolist() == [[0.0, 0.0]] and o.tolist() == [[1.0, 1.0]]
    assert x.tolist() == [[1.5, -2.0]]


def test_shape_of() -> None:
    call = op.shape_of(X)
    assert infer(call, t(2, 3, 4)) == t(3, dtype="int32")
    assert run(call, np.zeros((2, 3, 4))).tolist() == [2, 3, 4]
    scalar = run(op.shape_of(X, dtype="int64"), np.zeros(()))
    assert scalar.shape == (0,) and scalar.dtype == np.int64
    # any dtype the IR knows (tests/test_ops_create_shape_of.py), nothing else
    with pytest.raises(ValueError, match="shape_of.dtype: unsupported dtype 'complex64'"):
        op.shape_of(X, dtype="complex64")
