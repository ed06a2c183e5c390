"""Shape-changing ops: reshape (special values), reverse_reshape, transpose,
concatenate, split, squeeze, expand_dims, layout_transform and nn.pad."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from irpass import op
from irpass.ir import Call, Op, TensorType, Tuple, TupleType, var
from op_checks import infer, run, t

X, Y = var("x"), var("y")






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
