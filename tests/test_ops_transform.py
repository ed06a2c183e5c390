"""Shape-changing ops: reshape (special values), reverse_reshape, transpose,
concatenate, split, squeeze, expand_dims, layout_transform, nn.pad,
broadcast_to, tile, and the indexing ops take and strided_slice."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from irpass import op
from irpass.ir import Call, Op, TensorType, Tuple, TupleType, var
from op_checks import infer, run, t

X, Y = var("x"), var("y")
RNG_T = np.random.default_rng(7)


# -- reshape -----------------------------------------------------------------------------------

# Expected shapes worked out by hand from the rules in Relay's documentation.
RESHAPE_CASES = [
    ((2, 3, 4), (6, 4), (6, 4)),
    ((2, 3, 4), (4, 0, 2), (4, 3, 2)),
    ((2, 3, 4), (2, 0, 0), (2, 3, 4)),
    ((2, 3, 4), (6, 1, -1), (6, 1, 4)),
    ((2, 3, 4), (3, -1, 8), (3, 1, 8)),
    ((2, 3, 4), (-1,), (24,)),
    ((2, 3, 4), (-2,), (2, 3, 4)),
    ((2, 3, 4), (2, -2), (2, 3, 4)),
    ((2, 3, 4), (-2, 1, 1), (2, 3, 4, 1, 1)),
    ((2, 3, 4), (-3, 4), (6, 4)),
    ((2, 3, 4, 5), (-3, -3), (6, 20)),
    ((2, 3, 4), (0, -3), (2, 12)),
    ((2, 3, 4), (-3, -2), (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)),
    ((2, 3, 4), (2, -4, -1, 3, -2), (2, 1, 3, 4)),
    ((6, 4), (-4, 2, -1, 0), (2, 3, 4)),
    ((6, 4), (-1, 0), (6, 4)),
    ((1,), (), None),  # reshape to a scalar: handled below
]


@pytest.mark.parametrize("ishape,newshape,expected", [c for c in RESHAPE_CASES if c[2]])
def test_reshape_special_values(ishape, newshape, expected) -> None:
    call = op.reshape(X, newshape)
    assert infer(call, TensorType(ishape, "int32")) == TensorType(expected, "int32")
    x = np.arange(int(np.prod(ishape)), dtype="int32").reshape(ishape)
    out = run(call, x)
    assert out.shape == expected
    assert out.ravel().tolist() == x.ravel().tolist()


def test_reshape_to_scalar_and_allowzero() -> None:
    assert infer(op.reshape(X, ()), t(1, 1)) == t()
    assert infer(op.reshape(X, (0, 3), allowzero=True), t(3, 0)) == t(0, 3)
    assert infer(op.reshape(X, (0, 3)), t(2, 3)) == t(2, 3)


@pytest.mark.parametrize(
    "ishape,newshape,message",
    [
        (
            (2, 3, 4),
            (5, -1),
            r"cannot infer the -1 in newshape \(5, -1\) for input shape \(2, 3, 4\)",
        ),
        ((2, 3, 4), (-1, -1), "more than one -1"),
        ((2, 3), (0, 0, 0), "value 0 at position 2 needs input dimension 2"),
        ((2, 3), (7,), r"cannot reshape \(2, 3\) \(6 elements\) to newshape \(7,\)"),
        ((2, 3), (-5, 6), "unsupported value -5 at position 0"),
        ((6, 4), (-4, 4, -1, 0), r"cannot split input dimension 0 of size 6 into \(4, -1\)"),
        ((6, 4), (-4, -1, -1, 0), "cannot both be -1"),
        ((6, 4), (0, -4, 2), "-4 at position 1 must be followed"),
        ((6,), (-3,), "needs input dimension 1"),
    ],
)
def test_reshape_errors(ishape, newshape, message) -> None:
    with pytest.raises(ValueError, match=rf"reshape: .*{message}"):
        infer(op.reshape(X, newshape), TensorType(ishape, "float32"))


def test_reshape_newshape_is_required_and_checked() -> None:
    with pytest.raises(ValueError, match="op 'reshape' requires attribute 'newshape'"):
        Call(Op.get("reshape"), [X])
    with pytest.raises(TypeError, match=r"reshape.newshape\[1\] must be an int"):
        op.reshape(X, (2, "3"))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_reshape_minus_one_matches_numpy(shape, data) -> None:
    # move one dimension to a -1 and the rest in a random order: numpy infers the same size
    target = data.draw(st.permutations(shape))
    k = data.draw(st.integers(0, len(target) - 1))
    newshape = list(target)
    newshape[k] = -1
    x = np.arange(int(np.prod(shape)), dtype="float32").reshape(shape)
    out = run(op.reshape(X, newshape), x)
    np.testing.assert_array_equal(out, np.reshape(x, newshape))


REVERSE_CASES = [
    ((10, 5, 4), (-1, 0), (50, 4)),  # Relay's documented example
    ((2, 3, 4, 5), (0, -1), (4, 30)),
    ((2, 3, 4), (-1,), (24,)),
    ((2, 3, 4), (0, 0, -1), (2, 3, 4)),
    ((2, 3, 4), (-2, 6, 2), (2, 6, 2)),
    ((2, 3, 4), (-1, -3), (2, 12)),
    ((2, 3, 4), (-1, -4, 1, -1), (6, 1, 4)),  # reshape would give (8, 1, 3)
]


@pytest.mark.parametrize("ishape,newshape,expected", REVERSE_CASES)
def test_reverse_reshape(ishape, newshape, expected) -> None:
    call = op.reverse_reshape(X, newshape)
    assert infer(call, TensorType(ishape, "float32")) == TensorType(expected, "float32")
    x = np.arange(int(np.prod(ishape)), dtype="float32").reshape(ishape)
    np.testing.assert_array_equal(run(call, x), x.reshape(expected))


def test_reverse_reshape_differs_from_reshape_and_reports_errors() -> None:
    assert infer(op.reshape(X, (-1, 0)), t(10, 5, 4)) == t(40, 5)
    assert infer(op.reshape(X, (-1, -4, 1, -1)), t(2, 3, 4)) == t(8, 1, 3)
    with pytest.raises(ValueError, match="reverse_reshape: .*right to left"):
        infer(op.reverse_reshape(X, (7, -1)), t(2, 3))


# -- transpose ---------------------------------------------------------------------------------


def test_transpose() -> None:
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    assert infer(op.transpose(X), t(2, 3, 4)) == t(4, 3, 2)
    assert infer(op.transpose(X, (1, -1, 0)), t(2, 3, 4)) == t(3, 4, 2)
    out = run(op.transpose(X, (1, 2, 0)), x)
    assert out[2, 3, 1] == x[1, 2, 3]
    np.testing.assert_array_equal(run(op.transpose(X), x), x.T)


@pytest.mark.parametrize(
    "axes,message",
    [
        ((0, 1), r"axes \(0, 1\) must list each of the 3 axes"),
        ((0, 1, 1), r"axes \(0, 1, 1\) names an axis twice"),
        ((0, 1, 3), "axes 3 is out of range for a 3-D tensor"),
    ],
)
def test_transpose_errors(axes, message) -> None:
    with pytest.raises(ValueError, match=f"transpose: {message}"):
        infer(op.transpose(X, axes), t(2, 3, 4))


# -- concatenate and split ---------------------------------------------------------------------


def test_concatenate() -> None:
    a = np.ones((2, 3), "float32")
    b = np.zeros((2, 1), "float32")
    call = op.concatenate([X, Y], axis=-1)
    assert isinstance(call.args[0], Tuple) and len(call.args) == 1
    assert infer(call, TupleType((t(2, 3), t(2, 1)))) == t(2, 4)
    out = run(call, (a, b))
    assert out.tolist() == [[1, 1, 1, 0], [1, 1, 1, 0]]
    tup = Tuple([X, Y])
    assert op.concatenate(tup).args[0] is tup
    assert infer(op.concatenate(tup), TupleType((t(2, 3), t(5, 3)))) == t(7, 3)


@pytest.mark.parametrize(
    "fields,error,message",
    [
        ((t(2, 3), t(2, 3, dtype="int32")), TypeError, "data.1. has dtype int32 but data.0. has"),
        (
            (t(2, 3), t(3, 3)),
            ValueError,
            r"data\[1\] has shape \(3, 3\) but data\[0\] has \(2, 3\)",
        ),
        ((t(2, 3), t(2, 3, 1)), ValueError, "ranks differ"),
        ((), ValueError, "at least one tensor"),
        ((t(),), ValueError, "cannot concatenate scalars"),
    ],
)
def test_concatenate_errors(fields, error, message) -> None:
    with pytest.raises(error, match=f"concatenate: .*{message}"):
        infer(op.concatenate(Tuple([X, Y]), axis=1), TupleType(fields))


def test_concatenate_needs_tuple_argument() -> None:
    with pytest.raises(TypeError, match="concatenate: data must be a tuple of tensors"):
        infer(op.concatenate(X), t(2, 3))


def test_split_sections_and_indices() -> None:
    x = np.arange(24, dtype="int32").reshape(6, 4)
    call = op.split(X, 3)
    assert infer(call, t(6, 4)) == TupleType((t(2, 4),) * 3)
    pieces = run(call, x)
    assert [p.tolist() for p in pieces] == [x[0:2].tolist(), x[2:4].tolist(), x[4:6].tolist()]

    call = op.split(X, (1, 3), axis=-1)
    assert call.attrs["indices_or_sections"] == (1, 3)
    assert infer(call, t(6, 4)) == TupleType((t(6, 1), t(6, 2), t(6, 1)))
    pieces = run(call, x)
    np.testing.assert_array_equal(pieces[1], x[:, 1:3])
    # a single index is a list of indices, not a section count
    assert infer(op.split(X, [2]), t(6, 4)) == TupleType((t(2, 4), t(4, 4)))


@pytest.mark.parametrize(
    "spec,message",
    [
        (4, "axis 0 of size 6 cannot be split into 4 equal sections"),
        (0, "must be >= 1 sections"),
        ((3, 1), "index 1 at position 1 must be non-decreasing"),
        ((7,), r"within \[0, 6\]"),
    ],
)
def test_split_errors(spec, message) -> None:
    with pytest.raises(ValueError, match=f"split: .*{message}"):
        infer(op.split(X, spec), t(6, 4))


def test_split_attr_type_error() -> None:
    with pytest.raises(TypeError, match="split.indices_or_sections must be an int"):
        op.split(X, 1.5)


# -- squeeze and expand_dims -------------------------------------------------------------------


def test_squeeze() -> None:
    assert infer(op.squeeze(X), t(1, 3, 1, 2)) == t(3, 2)
    assert infer(op.squeeze(X, axis=[-2]), t(1, 3, 1, 2)) == t(1, 3, 2)
    assert infer(op.squeeze(X, axis=0), t(1, 3)) == t(3)
    x = np.arange(6, dtype="float32").reshape(1, 3, 1, 2)
    np.testing.assert_array_equal(run(op.squeeze(X, [0]), x), x[0])
    with pytest.raises(
        ValueError, match=r"squeeze: axis 1 has size 3 in shape \(1, 3, 1, 2\), not 1"
    ):
        infer(op.squeeze(X, axis=1), t(1, 3, 1, 2))


def test_expand_dims() -> None:
    assert infer(op.expand_dims(X, 1), t(2, 3)) == t(2, 1, 3)
    assert infer(op.expand_dims(X, -1, num_newaxis=2), t(2, 3)) == t(2, 3, 1, 1)
    assert infer(op.expand_dims(X, 0, num_newaxis=0), t(2, 3)) == t(2, 3)
    assert infer(op.expand_dims(X, -3), t(2, 3)) == t(1, 2, 3)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(run(op.expand_dims(X, 2), x), x[:, :, None])
    with pytest.raises(ValueError, match=r"expand_dims: axis 3 is out of range \[-3, 2\]"):
        infer(op.expand_dims(X, 3), t(2, 3))
    with pytest.raises(ValueError, match="num_newaxis must be >= 0"):
        infer(op.expand_dims(X, 0, num_newaxis=-1), t(2, 3))


# -- layout_transform --------------------------------------------------------------------------


def test_layout_transform() -> None:
    x = np.arange(2 * 3 * 4 * 5, dtype="float32").reshape(2, 3, 4, 5)
    call = op.layout_transform(X, "NCHW", "NHWC")
    assert infer(call, t(2, 3, 4, 5)) == t(2, 4, 5, 3)
    out = run(call, x)
    assert out[1, 2, 3, 0] == x[1, 0, 2, 3]
    w = np.arange(4 * 3 * 2 * 2, dtype="float32").reshape(4, 3, 2, 2)  # OIHW
    hwio = run(op.layout_transform(X, "OIHW", "HWIO"), w)
    assert hwio.shape == (2, 2, 3, 4) and hwio[1, 0, 2, 3] == w[3, 2, 1, 0]


def test_layout_transform_errors() -> None:
    with pytest.raises(
        ValueError, match="layout_transform.dst_layout: unsupported layout 'NCHW16c'"
    ):
        op.layout_transform(X, "NCHW", "NCHW16c")
    with pytest.raises(ValueError, match="distinct upper-case"):
        op.layout_transform(X, "NCCW", "NCHW")
    with pytest.raises(ValueError, match="must have the same axis letters"):
        infer(op.layout_transform(X, "NCHW", "NCDW"), t(1, 2, 3, 4))
    with pytest.raises(ValueError, match="src_layout 'NCHW' has 4 axes but data is"):
        infer(op.layout_transform(X, "NCHW", "NHWC"), t(1, 2, 3))


# -- nn.pad ------------------------------------------------------------------------------------


def test_pad_constant() -> None:
    x = np.array([[1, 2], [3, 4]], dtype="int32")
    call = op.nn.pad(X, ((1, 0), (0, 2)), pad_value=9)
    assert infer(call, t(2, 2, dtype="int32")) == t(3, 4, dtype="int32")
    assert run(call, x).tolist() == [[9, 9, 9, 9], [1, 2, 9, 9], [3, 4, 9, 9]]


def test_pad_edge_and_reflect() -> None:
    x = np.array([1.0, 2.0, 3.0], dtype="float32")
    assert run(op.nn.pad(X, [(2, 1)], pad_mode="edge"), x).tolist() == [1, 1, 1, 2, 3, 3]
    assert run(op.nn.pad(X, [(2, 1)], pad_mode="reflect"), x).tolist() == [3, 2, 1, 2, 3, 2]


def test_pad_value_from_scalar_constant() -> None:
    from irpass import const

    call = op.nn.pad(X, [(1, 1)], pad_value=const(2.5))
    assert call.attrs["pad_value"] == 2.5
    with pytest.raises(TypeError, match="nn.pad: pad_value must be a number or a scalar constant"):
        op.nn.pad(X, [(1, 1)], pad_value=Y)


@pytest.mark.parametrize(
    "pad_width,mode,message",
    [
        ([(1, 1)], "constant", r"pad_width has 1 \(before, after\) pairs but data is"),
        ([(1, 1), (0, 3)], "reflect", r"reflect padding \(0, 3\) on axis 1 must be smaller"),
    ],
)
def test_pad_errors(pad_width, mode, message) -> None:
    with pytest.raises(ValueError, match=f"nn.pad: {message}"):
        infer(op.nn.pad(X, pad_width, pad_mode=mode), t(3, 3))


def test_pad_attr_errors() -> None:
    with pytest.raises(ValueError, match=r"nn.pad.pad_width\[0\] must be non-negative"):
        op.nn.pad(X, [(-1, 0)])
    with pytest.raises(ValueError, match=r"nn.pad.pad_width\[0\] must be a \(before, after\) pair"):
        op.nn.pad(X, [1, 2])
    with pytest.raises(ValueError, match="nn.pad.pad_mode must be one of"):
        op.nn.pad(X, [(1, 1)], pad_mode="wrap")


# -- broadcast_to ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape,target",
    [((3,), (2, 3)), ((2, 1), (2, 4)), ((), (2, 2)), ((1, 3, 1), (5, 2, 3, 4)), ((1,), (0,))],
)
def test_broadcast_to(shape, target) -> None:
    x = np.arange(int(np.prod(shape)), dtype="int32").reshape(shape)
    out = run(op.broadcast_to(X, target), x)
    assert out.shape == target and out.flags.writeable and out.flags.c_contiguous
    for index in np.ndindex(*target):
        # each element comes from the matching index, 0 on the broadcast axes
        src = tuple(
            0 if d == 1 else i
            for i, d in zip(index[len(target) - len(shape) :], shape, strict=True)
        )
        assert out[index] == x[src]


@pytest.mark.parametrize(
    "shape,target,message",
    [
        ((3,), (4,), r"broadcast_to: shapes are not broadcastable: data \(3,\) and shape \(4,\)"),
        ((2, 3), (3,), r"broadcast_to: data .* cannot be broadcast to shape \(3,\).*\(2, 3\)"),
        ((3,), (1,), r"broadcast_to: data .* cannot be broadcast to shape \(1,\)"),
    ],
)
def test_broadcast_to_errors(shape, target, message) -> None:
    with pytest.raises(ValueError, match=message):
        infer(op.broadcast_to(X, target), t(*shape))


def test_broadcast_to_rejects_negative_sizes() -> None:
    with pytest.raises(ValueError, match=r"broadcast_to.shape values must be >= 0"):
        op.broadcast_to(X, (2, -1))


# -- tile --------------------------------------------------------------------------------------


def tile_ref(x: np.ndarray, reps: tuple[int, ...]) -> np.ndarray:
    """Tiling by explicit index arithmetic: out[i] = x[i mod shape]."""
    rank = max(x.ndim, len(reps))
    x = x.reshape((1,) * (rank - x.ndim) + x.shape)
    reps = (1,) * (rank - len(reps)) + tuple(reps)
    out = np.empty(tuple(d * r for d, r in zip(x.shape, reps, strict=True)), x.dtype)
    for index in np.ndindex(*out.shape):
        out[index] = x[tuple(i % d for i, d in zip(index, x.shape, strict=True))]
    return out


@pytest.mark.parametrize(
    "shape,reps",
    [((2, 3), (2, 3)), ((2, 3), (1, 1)), ((3,), (2, 2)), ((2, 1, 2), (2,)), ((2, 2), (0, 3))],
)
def test_tile(shape, reps) -> None:
    x = np.arange(int(np.prod(shape)), dtype="float32").reshape(shape)
    call = op.tile(X, reps)
    expected = tile_ref(x, reps)
    assert infer(call, t(*shape)) == TensorType(expected.shape, "float32")
    np.testing.assert_array_equal(run(call, x), expected)


def test_tile_rejects_negative_reps() -> None:
    with pytest.raises(ValueError, match=r"tile.reps values must be >= 0"):
        op.tile(X, (2, -1))


# -- take --------------------------------------------------------------------------------------


def take_ref(data: np.ndarray, indices: np.ndarray, axis, mode: str) -> np.ndarray:
    """Gather by loops over the output positions."""
    if axis is None:
        data, axis = data.reshape(-1), 0
    axis = axis % data.ndim
    n = data.shape[axis]
    out_shape = data.shape[:axis] + indices.shape + data.shape[axis + 1 :]
    out = np.empty(out_shape, data.dtype)
    k = indices.ndim
    for index in np.ndindex(*out_shape):
        i = int(indices[index[axis : axis + k]])
        if mode == "clip":
            i = min(max(i, 0), n - 1)
        elif mode == "wrap":
            i = i % n
        else:
            assert -n <= i < n
            i = i + n if i < 0 else i
        out[index] = data[index[:axis] + (i,) + index[axis + k :]]
    return out


@pytest.mark.parametrize("mode", ["clip", "wrap", "fast"])
@pytest.mark.parametrize(
    "shape,ishape,axis",
    [
        ((5,), (3,), 0),
        ((3, 4), (2, 2), 1),
        ((3, 4), (2,), 0),
        ((2, 3, 4), (), -1),
        ((3, 4), (5,), None),
    ],
)
@pytest.mark.parametrize("idtype", ["int64", "int32", "uint8"])
def test_take_matches_loops(mode, shape, ishape, axis, idtype) -> None:
    data = RNG_T.normal(size=shape).astype("float32")
    n = data.size if axis is None else shape[axis]
    lo = 0 if idtype == "uint8" else (-n if mode == "fast" else -2 * n)
    hi = n if mode == "fast" else 2 * n + 1
    indices = RNG_T.integers(lo, hi, ishape).astype(idtype)
    call = op.take(X, Y, axis=axis, mode=mode)
    out = run(call, data, indices)
    np.testing.assert_array_equal(out, take_ref(data, indices, axis, mode))


def test_take_onnx_gather_negative_indices_wrap() -> None:
    data = np.arange(12, dtype="int64").reshape(3, 4)
    out = run(op.take(X, Y, axis=1, mode="wrap"), data, np.array([[-1, 0], [-4, 3]]))
    assert out.tolist() == [[[3, 0], [0, 3]], [[7, 4], [4, 7]], [[11, 8], [8, 11]]]
    # "clip" (Relay's default) clamps -1 to 0 instead
    assert run(op.take(X, Y, axis=0), data, np.array([-1, 7])).tolist() == [
        [0, 1, 2, 3],
        [8, 9, 10, 11],
    ]


def test_take_huge_unsigned_indices_clip_and_wrap() -> None:
    data = np.arange(5, dtype="float32")
    idx = np.array([2**64 - 1, 2**63, 3], dtype="uint64")
    assert run(op.take(X, Y, mode="clip"), data, idx).tolist() == [4, 4, 3]
    assert run(op.take(X, Y, mode="wrap"), data, idx).tolist() == [
        (2**64 - 1) % 5,
        2**63 % 5,
        3,
    ]


def test_take_fast_out_of_range_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"take: index 5 is out of range for an axis of size 3"):
        run(op.take(X, Y, axis=0, mode="fast"), np.zeros(3, "float32"), np.array([1, 5]))


def test_take_empty() -> None:
    out = run(op.take(X, Y, axis=0), np.zeros((0, 2), "float32"), np.zeros((0,), "int64"))
    assert out.shape == (0, 2)


@pytest.mark.parametrize(
    "dshape,itype,axis,error,message",
    [
        ((3,), TensorType((2,), "float32"), 0, TypeError, r"take: indices must have an integer"),
        ((3,), TensorType((2,), "bool"), 0, TypeError, r"take: indices must have an integer"),
        ((3, 4), TensorType((2,), "int64"), 2, ValueError, r"take: axis 2 is out of range"),
        ((), TensorType((2,), "int64"), 0, ValueError, r"take: data must have at least one"),
        ((0, 2), TensorType((1,), "int64"), 0, ValueError, r"take: cannot take .* empty axis"),
    ],
)
def test_take_errors(dshape, itype, axis, error, message) -> None:
    with pytest.raises(error, match=message):
        infer(op.take(X, Y, axis=axis), t(*dshape), itype)


def test_take_mode_is_checked() -> None:
    with pytest.raises(ValueError, match=r"take.mode must be one of \['clip', 'wrap', 'fast'\]"):
        op.take(X, Y, mode="raise")


# -- strided_slice -----------------------------------------------------------------------------

BIG = 2**63 - 1


def onnx_slice_ref(x, starts, ends, axes, steps):
    """ONNX Slice as its specification words it: clamp, then walk the indices."""
    out = x
    for a, s, e, st_ in zip(axes, starts, ends, steps, strict=True):
        a = a % x.ndim
        d = x.shape[a]
        s = s + d if s < 0 else s
        e = e + d if e < 0 else e
        if st_ > 0:
            s, e = min(max(s, 0), d), min(max(e, 0), d)
        else:
            s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
        idx = []
        i = s
        while (st_ > 0 and i < e) or (st_ < 0 and i > e):
            idx.append(i)
            i += st_
        out = np.take(out, np.array(idx, dtype=np.int64), axis=a)
    return out


SLICE_CASES = [
    # shape, begin, end, strides, axes
    ((5,), (1,), (4,), None, None),
    ((5,), (-2,), (BIG,), None, None),
    ((5,), (-1,), (-BIG - 1,), (-1,), None),
    ((5,), (BIG,), (-BIG - 1,), (-2,), None),
    ((5,), (10,), (20,), None, None),
    ((5,), (3,), (1,), None, None),
    ((5,), (-10,), (2,), None, None),
    ((5,), (4,), (-10,), (-1,), None),
    ((4, 6), (1, -1), (3, 0), (1, -2), None),
    ((4, 6), (0,), (BIG,), (3,), (1,)),
    ((3, 4, 5), (1, 0), (-1, 3), (1, 2), (2, 0)),
    ((3, 4, 5), (2,), (0,), (-1,), (-2,)),
    ((3, 4, 5), (0, 0, 0), (3, 4, 5), (1, 1, 1), None),
    ((0, 3), (0,), (5,), None, (1,)),
    ((3,), (-5,), (-10,), (-1,), None),  # ONNX starts at 0 here; Python would be empty
    ((0, 2), (-1,), (-BIG - 1,), (-1,), None),
]


@pytest.mark.parametrize("shape,begin,end,strides,axes", SLICE_CASES)
def test_strided_slice_matches_onnx_slice(shape, begin, end, strides, axes) -> None:
    x = np.arange(int(np.prod(shape)), dtype="int32").reshape(shape)
    call = op.strided_slice(X, begin, end, strides, axes)
    expected = onnx_slice_ref(
        x,
        begin,
        end,
        axes if axes is not None else range(len(begin)),
        strides if strides is not None else [1] * len(begin),
    )
    assert infer(call, t(*shape, dtype="int32")) == TensorType(expected.shape, "int32")
    np.testing.assert_array_equal(run(call, x), expected)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 6),
    st.integers(-9, 9),
    st.integers(-9, 9),
    st.integers(-4, 4).filter(bool),
)
def test_strided_slice_any_bounds_match_onnx_slice(size, begin, end, stride) -> None:
    x = np.arange(size * 2, dtype="float32").reshape(2, size)
    call = op.strided_slice(X, [begin], [end], [stride], axes=[-1])
    expected = onnx_slice_ref(x, [begin], [end], [-1], [stride])
    np.testing.assert_array_equal(run(call, x), expected)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"begin": [0, 1], "end": [2]}, r"strided_slice: begin \(0, 1\) and end \(2,\) must"),
        ({"begin": [0], "end": [2], "strides": [0]}, r"strided_slice: strides \(0,\) must not"),
        ({"begin": [0], "end": [2], "strides": [1, 1]}, r"strided_slice: strides \(1, 1\) must"),
        ({"begin": [0, 0, 0], "end": [1, 1, 1]}, r"strided_slice: begin .* 3 axes but data has"),
        ({"begin": [0], "end": [1], "axes": [2]}, r"strided_slice: axes 2 is out of range"),
        ({"begin": [0, 0], "end": [1, 1], "axes": [1, -1]}, r"strided_slice: axes .* twice"),
        ({"begin": [0], "end": [1], "axes": [0, 1]}, r"strided_slice: axes \(0, 1\) must name"),
    ],
)
def test_strided_slice_errors(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        infer(op.strided_slice(X, **kwargs), t(3, 4))
