"""The math, logic, scan and linear-algebra ops of issue 19: the trigonometric and
hyperbolic functions, rounding, sign, isnan/isinf, floor_mod/trunc_mod, the logical and
bitwise ops and shifts, argmax/argmin, cumsum/cumprod, einsum and linalg.det. Each kernel
is checked against a reference written here, element by element (Python's math module and
int arithmetic, plain loops), and the type relations' errors name the op."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from irpass import op
from irpass.ir import TensorType, var
from irpass.op.linalg import det
from op_checks import infer, run, t

X, Y = var("x"), var("y")
RNG = np.random.default_rng(1919)


def elementwise(fn, *arrays, dtype):
    """``fn`` applied to the broadcast elements of ``arrays`` one at a time (Python scalars)."""
    parts = np.broadcast_arrays(*arrays)
    out = np.empty(parts[0].shape, dtype)
    for pos in itertools.product(*map(range, out.shape)):
        out[pos] = fn(*(p[pos].item() for p in parts))
    return out


# -- trigonometric and hyperbolic functions ----------------------------------------------------

_DOMAIN = {"asin": (-1, 1), "acos": (-1, 1), "atanh": (-0.99, 0.99), "acosh": (1, 4)}
_MATH = {"sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin,
         "acos": math.acos, "atan": math.atan, "sinh": math.sinh, "cosh": math.cosh,
         "asinh": math.asinh, "acosh": math.acosh, "atanh": math.atanh}


@pytest.mark.parametrize("name", sorted(_MATH))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_trigonometric_ops_match_math(name, dtype):
    lo, hi = _DOMAIN.get(name, (-3, 3))
    x = RNG.uniform(lo, hi, size=(3, 4)).astype(dtype)
    got = run(getattr(op, name)(X), x)
    want = elementwise(_MATH[name], x, dtype="float64")
    tol = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(got.astype("float64"), want, rtol=tol, atol=tol)


@pytest.mark.parametrize(("name", "x"), [("asin", 1.5), ("acos", -1.01), ("acosh", 0.5),
                                         ("atanh", 2.0)])
def test_outside_the_domain_is_nan_and_atanh_of_one_infinite(name, x):
    assert np.isnan(run(getattr(op, name)(X), np.array([x], "float32")))[0]
    assert run(op.atanh(X), np.array([1.0, -1.0], "float32")).tolist() == [math.inf, -math.inf]


@pytest.mark.parametrize("name", ["sin", "acosh", "isnan", "isinf"])
def test_float_only_ops_refuse_integers(name):
    with pytest.raises(TypeError, match=f"{name}.*data"):
        infer(getattr(op, name)(X), t(2, dtype="int32"))


# -- rounding, sign, isnan/isinf -------------------------------------------------------------

def _round_half_even(v: float) -> float:
    return float(round(v))  # Python's round: halves to even


_ROUNDING = {"floor": math.floor, "ceil": math.ceil, "trunc": math.trunc,
             "round": _round_half_even,
             "sign": lambda v: v if math.isnan(v) else float((v > 0) - (v < 0))}


@pytest.mark.parametrize("name", sorted(_ROUNDING))
def test_rounding_and_sign_match_their_definitions(name):
    x = np.array([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], [-1.7, -0.2, 0.0, 0.3, 1.2, 7.9]],
                 "float32")
    got = run(getattr(op, name)(X), x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, elementwise(_ROUNDING[name], x, dtype="float32"))


@pytest.mark.parametrize("name", sorted(_ROUNDING))
def test_rounding_keeps_integers_and_sign_gives_their_sign(name):
    x = np.array([-7, -1, 0, 3, 127], "int8")
    got = run(getattr(op, name)(X), x)
    assert got.dtype == np.int8
    want = [-1, -1, 0, 1, 1] if name == "sign" else x.tolist()
    assert got.tolist() == want


def test_isnan_and_isinf():
    x = np.array([0.0, math.nan, math.inf, -math.inf, -1.0], "float64")
    assert run(op.isnan(X), x).tolist() == [False, True, False, False, False]
    assert run(op.isinf(X), x).tolist() == [False, False, True, True, False]
    assert infer(op.isnan(X), t(2, 3, dtype="float16")) == t(2, 3, dtype="bool")


# -- remainders --------------------------------------------------------------------------------


def _int_mod(a: int, b: int, floor: bool) -> int:
    if b == 0:
        return 0
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # truncated quotient
    r = a - q * b
    if floor and r and (r < 0) != (b < 0):
        r += b
    return r


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_remainders_follow_python_and_c(dtype):
    a = np.array([[-7, -6, -1, 0, 1, 6, 7]], dtype).T
    b = np.array([-3, 2, 3, 0], dtype)
    floor = run(op.floor_mod(X, Y), a, b)
    trunc = run(op.trunc_mod(X, Y), a, b)
    np.testing.assert_array_equal(floor, elementwise(lambda p, q: _int_mod(p, q, True), a, b,
                                                     dtype=dtype))
    np.testing.assert_array_equal(trunc, elementwise(lambda p, q: _int_mod(p, q, False), a, b,
                                                     dtype=dtype))
    # the signs: of the divisor for floor_mod, of the dividend for trunc_mod
    assert floor[0, 1] == 1 and trunc[0, 1] == -1  # -7 mod 2


def test_float_remainders():
    a = RNG.uniform(-5, 5, size=(4, 3)).astype("float64")
    b = np.array([1.5, -0.75, 2.0])
    np.testing.assert_allclose(run(op.floor_mod(X, Y), a, b),
                               elementwise(lambda p, q: p - q * math.floor(p / q), a, b,
                                           dtype="float64"), atol=1e-12)
    np.testing.assert_array_equal(run(op.trunc_mod(X, Y), a, b),
                                  elementwise(math.fmod, a, b, dtype="float64"))
    assert np.isnan(run(op.floor_mod(X, Y), np.array([1.0]), np.array([0.0]))).all()


def test_remainders_need_one_dtype():
    with pytest.raises(TypeError, match="floor_mod"):
        infer(op.floor_mod(X, Y), t(2, dtype="int32"), t(2, dtype="int64"))


# -- logic and bits ----------------------------------------------------------------------------


def test_logical_ops_match_truth_tables():
    a = np.array([[False], [True]])
    b = np.array([False, True])
    assert run(op.logical_and(X, Y), a, b).tolist() == [[False, False], [False, True]]
    assert run(op.logical_or(X, Y), a, b).tolist() == [[False, True], [True, True]]
    assert run(op.logical_xor(X, Y), a, b).tolist() == [[False, True], [True, False]]
    assert run(op.logical_not(X), b).tolist() == [True, False]
    with pytest.raises(TypeError, match="logical_and"):
        infer(op.logical_and(X, Y), t(2, dtype="int32"), t(2, dtype="int32"))


def _wrap(v: int, dtype: str) -> int:
    """``v`` reduced to the two's complement range of ``dtype``."""
    info = np.iinfo(dtype)
    span = info.max - info.min + 1
    return (v - info.min) % span + info.min


def _shift(a: int, s: int, left: bool, dtype: str) -> int:
    bits = np.iinfo(dtype).bits
    if s < 0 or s >= bits:
        return -1 if (not left and a < 0) else 0
    return _wrap(a << s, dtype) if left else a >> s  # Python's >> is arithmetic


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "uint64"])
def test_bitwise_ops_and_shifts_match_python_ints(dtype):
    info = np.iinfo(dtype)
    a = RNG.integers(max(info.min, -200), min(info.max, 200), size=(5, 1)).astype(dtype)
    b = RNG.integers(0 if info.min == 0 else -50, 50, size=(4,)).astype(dtype)
    for name, fn in (("bitwise_and", lambda p, q: p & q), ("bitwise_or", lambda p, q: p | q),
                     ("bitwise_xor", lambda p, q: p ^ q)):
        want = elementwise(lambda p, q, fn=fn: _wrap(fn(p, q), dtype), a, b, dtype=dtype)
        np.testing.assert_array_equal(run(getattr(op, name)(X, Y), a, b), want, err_msg=name)
    np.testing.assert_array_equal(run(op.bitwise_not(X), a),
                                  elementwise(lambda p: _wrap(~p, dtype), a, dtype=dtype))
    shifts = np.array([0, 1, 3, info.bits - 1, info.bits, info.bits + 5], dtype)
    for name, left in (("left_shift", True), ("right_shift", False)):
        want = elementwise(lambda p, s, left=left: _shift(p, s, left, dtype), a, shifts,
                           dtype=dtype)
        np.testing.assert_array_equal(run(getattr(op, name)(X, Y), a, shifts), want,
                                      err_msg=name)


def test_negative_shifts_give_zero_or_minus_one():
    a = np.array([-8, 8], "int32")
    s = np.array([-1, -1], "int32")
    assert run(op.left_shift(X, Y), a, s).tolist() == [0, 0]
    assert run(op.right_shift(X, Y), a, s).tolist() == [-1, 0]


def test_bitwise_ops_refuse_floats():
    with pytest.raises(TypeError, match="bitwise_and"):
        infer(op.bitwise_and(X, Y), t(2), t(2))


# -- argmax, argmin ----------------------------------------------------------------------------


def ref_arg(x, axes, keepdims, last, better):
    """Index of the extreme over ``axes`` in their row-major order, a loop per output."""
    kept = [a for a in range(x.ndim) if a not in axes]
    out_shape = tuple(1 if a in axes else d for a, d in enumerate(x.shape))
    out = np.zeros(out_shape, "int64")
    for pos in itertools.product(*(range(x.shape[a]) for a in kept)):
        best, best_i = None, 0
        for i, red in enumerate(itertools.product(*(range(x.shape[a]) for a in axes))):
            full = [0] * x.ndim
            for a, p in zip(kept, pos, strict=True):
                full[a] = p
            for a, p in zip(axes, red, strict=True):
                full[a] = p
            v = x[tuple(full)]
            if best is None or better(v, best) or (last and v == best):
                best, best_i = v, i
        where = list(out_shape)
        for a, p in zip(kept, pos, strict=True):
            where[a] = p
        out[tuple(0 if a in axes else where[a] for a in range(x.ndim))] = best_i
    return out if keepdims else out.reshape(tuple(x.shape[a] for a in kept))


@pytest.mark.parametrize(("axis", "axes"), [(None, (0, 1, 2)), (1, (1,)), ((0, -1), (0, 2)),
                                            (-2, (1,))])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("last", [False, True])
def test_argmax_and_argmin_match_reference_with_ties(axis, axes, keepdims, last):
    x = RNG.integers(0, 3, size=(2, 3, 4)).astype("float32")  # many ties
    for name, better in (("argmax", lambda v, b: v > b), ("argmin", lambda v, b: v < b)):
        call = getattr(op, name)(X, axis=axis, keepdims=keepdims, select_last_index=last)
        np.testing.assert_array_equal(run(call, x), ref_arg(x, axes, keepdims, last, better),
                                      err_msg=name)


def test_argmax_errors():
    with pytest.raises(ValueError, match="argmax: cannot reduce over axis 1 of size 0"):
        infer(op.argmax(X, axis=1), t(2, 0))
    assert infer(op.argmin(X, axis=0), t(3, 2, dtype="bool")) == t(2, dtype="int64")


# -- cumsum, cumprod ---------------------------------------------------------------------------


def ref_scan(x, axis, exclusive, prod):
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis %= x.ndim
    out = np.empty(x.shape, "float64")
    for pos in itertools.product(*(range(d) for i, d in enumerate(x.shape) if i != axis)):
        acc = 1.0 if prod else 0.0
        for k in range(x.shape[axis]):
            full = list(pos)
            full.insert(axis, k)
            v = float(x[tuple(full)])
            if not exclusive:
                acc = acc * v if prod else acc + v
            out[tuple(full)] = acc
            if exclusive:
                acc = acc * v if prod else acc + v
    return out


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans_match_reference(axis, exclusive, name):
    x = RNG.uniform(0.5, 1.5, size=(3, 4)).astype("float32")
    got = run(getattr(op, name)(X, axis=axis, exclusive=exclusive), x)
    np.testing.assert_allclose(got, ref_scan(x, axis, exclusive, name == "cumprod"),
                               rtol=1e-6)


def test_integer_scans_wrap_in_their_dtype_and_dtype_attribute():
    x = np.array([100, 100, 100], "int8")
    assert run(op.cumsum(X), x).tolist() == [100, _wrap(200, "int8"), _wrap(300, "int8")]
    assert run(op.cumsum(X, dtype="int32"), x).tolist() == [100, 200, 300]
    assert infer(op.cumprod(X, axis=0, dtype="float64"), t(2, 3)) == t(2, 3, dtype="float64")
    with pytest.raises(ValueError, match="cumsum"):
        infer(op.cumsum(X, axis=2), t(2, 3))


# -- einsum ----------------------------------------------------------------------------------


def test_einsum_matches_loops():
    a = RNG.standard_normal((2, 3, 4)).astype("float32")
    b = RNG.standard_normal((4, 5)).astype("float32")
    got = run(op.einsum([X, Y], "bij,jk->bki"), (a, b))
    want = np.zeros((2, 5, 3))
    for bb, i, j, k in itertools.product(range(2), range(3), range(4), range(5)):
        want[bb, k, i] += float(a[bb, i, j]) * float(b[j, k])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_einsum_implicit_output_trace_and_ellipsis():
    m = RNG.standard_normal((3, 3))
    assert run(op.einsum([X], "ii"), (m,)).item() == pytest.approx(m[0, 0] + m[1, 1] + m[2, 2])
    assert run(op.einsum([X], "ii->i"), (m,)).tolist() == [m[0, 0], m[1, 1], m[2, 2]]
    # implicit output: the letters seen once, in alphabetical order
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4))
    got = run(op.einsum([X, Y], "ca,ab"), (a, b))  # "ca,ab->bc": the product transposed
    want = [[sum(a[i, j] * b[j, k] for j in range(3)) for i in range(2)] for k in range(4)]
    np.testing.assert_allclose(got, np.array(want), rtol=1e-12)
    c = RNG.standard_normal((2, 2, 3))
    got = run(op.einsum([X], "...ij->...ji"), (c,))
    assert got.shape == (2, 3, 2) and got[1, 2, 0] == c[1, 0, 2]


@pytest.mark.parametrize(("eq", "shapes", "message"), [
    ("ij,jk", [(2, 3), (4, 5)], "subscript 'j' has size 3 and 4"),
    ("ij->k", [(2, 3)], "output subscript 'k' is in no input"),
    ("ij", [(2, 3, 4)], "names 2 axes but operand 0 has shape"),
    ("i,j", [(2,)], "2 input terms for 1 operands"),
])
def test_einsum_errors(eq, shapes, message):
    xs = [var(f"v{i}") for i in range(len(shapes))]
    with pytest.raises(ValueError, match=message):
        infer(op.einsum(xs, eq), __import__("irpass").ir.TupleType([t(*s) for s in shapes]))


# -- linalg.det ------------------------------------------------------------------------------


def ref_det(m) -> float:
    """Laplace expansion along the first row."""
    n = len(m)
    if n == 0:
        return 1.0
    return sum((-1) ** j * m[0][j] * ref_det([row[:j] + row[j + 1:] for row in m[1:]])
               for j in range(n))


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (2, 3, 4, 4)])
def test_det_matches_laplace_expansion(shape):
    x = RNG.standard_normal(shape).astype("float32")
    got = run(det(X), x)
    assert got.shape == shape[:-2]
    flat = x.reshape((-1, *shape[-2:]))
    want = [ref_det(m.astype("float64").tolist()) for m in flat]
    np.testing.assert_allclose(got.reshape(-1), want, rtol=1e-5, atol=1e-6)


def test_det_errors():
    with pytest.raises(ValueError, match="linalg.det: data must be square matrices"):
        infer(det(X), t(2, 3))
    with pytest.raises(TypeError, match="linalg.det"):
        infer(det(X), TensorType((2, 2), "int32"))
