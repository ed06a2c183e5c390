"""The indexing and data-movement ops of issue 19: gather, gather_nd, scatter_elements,
scatter_nd, topk, arange, one_hot, reverse, reverse_sequence, trilu, nn.depth_to_space and
nn.space_to_depth. Each kernel is checked against a reference written here (plain loops over
the definition), and each type relation's errors name the op and the argument."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from irpass.ir import Op, OpPattern, TensorType, TupleType, var
from irpass.op.create import arange, one_hot
from irpass.op.indexing import gather, gather_nd
from irpass.op.nn.depth_space import depth_to_space, space_to_depth
from irpass.op.scatter import scatter_elements, scatter_nd
from irpass.op.sort import topk
from irpass.op.transform import reverse, reverse_sequence, trilu
from op_checks import infer, run, t

X, I, U = var("x"), var("i"), var("u")
RNG = np.random.default_rng(19)


def ints(low, high, shape, dtype="int64"):
    return RNG.integers(low, high, size=shape).astype(dtype)


# -- gather (GatherElements) -------------------------------------------------------------------


def ref_gather(data, axis, indices):
    out = np.empty(indices.shape, data.dtype)
    for pos in itertools.product(*map(range, indices.shape)):
        src = list(pos)
        i = int(indices[pos])
        src[axis] = i + data.shape[axis] if i < 0 else i
        out[pos] = data[tuple(src)]
    return out


@pytest.mark.parametrize(("dshape", "ishape", "axis"), [
    ((3, 4), (3, 4), 0), ((3, 4), (2, 6), 1), ((2, 3, 4), (2, 1, 4), -2), ((5,), (7,), 0),
    ((2, 3, 4), (1, 2, 3), 2),
])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_gather_matches_reference(dshape, ishape, axis, dtype):
    data = RNG.standard_normal(dshape).astype("float32")
    n = dshape[axis]
    low = 0 if dtype == "uint8" else -n
    indices = ints(low, n, ishape, dtype)
    call = gather(X, axis, I)
    assert infer(call, t(*dshape), t(*ishape, dtype=dtype)) == t(*ishape)
    np.testing.assert_array_equal(run(call, data, indices),
                                  ref_gather(data, axis % len(dshape), indices))


@pytest.mark.parametrize(("dshape", "ishape", "axis", "error", "message"), [
    ((3, 4), (3,), 0, ValueError, "must have the rank of data"),
    ((3, 4), (4, 4), 1, ValueError, "longer than data .* on axis 0"),
    ((3, 4), (3, 4), 2, ValueError, "axis 2 is out of range"),
    ((), (), 0, ValueError, "at least one dimension"),
])
def test_gather_errors(dshape, ishape, axis, error, message):
    with pytest.raises(error, match=f"gather: .*{message}"):
        infer(gather(X, axis, I), t(*dshape), t(*ishape, dtype="int64"))
    with pytest.raises(TypeError, match="gather: indices must have an integer dtype"):
        infer(gather(X, 0, I), t(3), t(3))


def test_gather_index_out_of_range_fails_at_run_time():
    with pytest.raises(ValueError, match=r"gather: index 3 is out of range for axis 0 of size 3"):
        run(gather(X, 0, I), np.zeros(3, "float32"), np.array([0, 3]))
    with pytest.raises(ValueError, match=r"index -4 is out of range"):
        run(gather(X, 0, I), np.zeros(3, "float32"), np.array([-4]))
    # a uint64 index above 2**63 is out of range, not negative
    with pytest.raises(ValueError, match="out of range"):
        run(gather(X, 0, I), np.zeros(3, "float32"), np.array([2**64 - 1], "uint64"))


# -- gather_nd ---------------------------------------------------------------------------------


def ref_gather_nd_onnx(data, indices, batch_dims):
    """ONNX's GatherND on indices with the tuples on the last axis."""
    bshape = data.shape[:batch_dims]
    out_rows = []
    for b in itertools.product(*map(range, bshape)):
        sub_idx = indices[b] if b else indices
        sub_data = data[b] if b else data
        rows = [sub_data[tuple(int(v) for v in tup)]
                for tup in sub_idx.reshape(-1, indices.shape[-1])]
        out_rows.append(np.stack(rows).reshape(sub_idx.shape[:-1] + rows[0].shape))
    return np.stack(out_rows).reshape(
        bshape + indices.shape[batch_dims:-1] + data.shape[batch_dims + indices.shape[-1]:])


@pytest.mark.parametrize(("dshape", "ishape", "batch"), [
    ((2, 3, 4), (5, 2), 0), ((2, 3, 4), (3,), 0), ((2, 3, 4), (2, 2, 3), 0),
    ((2, 3, 4), (2, 1), 1), ((2, 3, 4), (2, 5, 2), 1), ((2, 3, 4, 5), (2, 3, 2, 1), 2),
    ((4,), (6, 1), 0),
])
def test_gather_nd_matches_onnx_reference(dshape, ishape, batch):
    data = RNG.standard_normal(dshape).astype("float32")
    depth = ishape[-1]
    limits = np.array(dshape[batch:batch + depth])
    onnx_idx = (RNG.integers(0, 10**6, size=ishape) % limits) - (
        RNG.integers(0, 2, size=ishape) * limits)  # about half of them negative
    tvm_idx = np.moveaxis(onnx_idx, -1, 0).copy()
    call = gather_nd(X, I, batch_dims=batch)
    want = ref_gather_nd_onnx(data, onnx_idx, batch)
    assert infer(call, t(*dshape), t(*tvm_idx.shape, dtype="int64")) == t(*want.shape)
    np.testing.assert_array_equal(run(call, data, tvm_idx), want)


@pytest.mark.parametrize(("dshape", "ishape", "kwargs", "message"), [
    ((2, 3), (3, 4), {}, "index tuples of length 3 .* need data of rank >= 3"),
    ((2, 3), (), {}, "at least one dimension"),
    ((2, 3), (1, 3), {"batch_dims": 1}, r"batch dimensions of indices \(3,\) and data \(2,\)"),
    ((2, 3), (1, 2), {"batch_dims": 2}, "batch_dims 2 exceeds the 1 index dimensions"),
    ((2, 3), (1, 2), {"index_rank": 2}, "index_rank 2 differs"),
    ((2, 3), (1, 2), {"batch_dims": -1}, "batch_dims must be >= 0"),
])
def test_gather_nd_errors(dshape, ishape, kwargs, message):
    with pytest.raises(ValueError, match=f"gather_nd: .*{message}"):
        infer(gather_nd(X, I, **kwargs), t(*dshape), t(*ishape, dtype="int32"))


def test_gather_nd_out_of_range_names_axis():
    with pytest.raises(ValueError, match="gather_nd: index 2 is out of range for axis 1 of size 2"):
        run(gather_nd(X, I), np.zeros((3, 2), "float32"), np.array([[0], [2]]))


# -- scatter_elements and scatter_nd -----------------------------------------------------------

_REDUCE = {"update": lambda a, b: b, "add": lambda a, b: a + b, "mul": lambda a, b: a * b,
           "min": min, "max": max}


def ref_scatter_elements(data, indices, updates, axis, reduction):
    out = data.copy()
    for pos in itertools.product(*map(range, indices.shape)):
        dst = list(pos)
        i = int(indices[pos])
        dst[axis] = i + data.shape[axis] if i < 0 else i
        out[tuple(dst)] = _REDUCE[reduction](out[tuple(dst)], updates[pos])
    return out


@pytest.mark.parametrize("reduction", ["update", "add", "mul", "min", "max"])
@pytest.mark.parametrize(("dshape", "ishape", "axis"), [
    ((3, 4), (2, 4), 0), ((3, 4), (3, 6), 1), ((2, 3, 4), (2, 2, 1), -1), ((5,), (9,), 0),
])
def test_scatter_elements_matches_reference(reduction, dshape, ishape, axis):
    data = RNG.integers(-5, 5, size=dshape).astype("float32")
    n = dshape[axis]
    indices = ints(-n, n, ishape)  # duplicates included: 'update' keeps the last one
    updates = RNG.integers(-5, 5, size=ishape).astype("float32")
    call = scatter_elements(X, I, U, axis=axis, reduction=reduction)
    assert infer(call, t(*dshape), t(*ishape, dtype="int64"), t(*ishape)) == t(*dshape)
    before = data.copy()
    got = run(call, data, indices, updates)
    np.testing.assert_array_equal(
        got, ref_scatter_elements(data, indices, updates, axis % len(dshape), reduction))
    np.testing.assert_array_equal(data, before)  # the kernel wrote into a copy


@pytest.mark.parametrize(("dshape", "ishape", "ushape", "message", "error"), [
    ((3, 4), (3, 4), (3, 5), r"updates .* must have shape \(3, 4\)", ValueError),
    ((3, 4), (3, 5), (3, 5), "longer than data", ValueError),
    ((3, 4), (3,), (3,), "must have the rank of data", ValueError),
])
def test_scatter_elements_errors(dshape, ishape, ushape, message, error):
    with pytest.raises(error, match=f"scatter_elements: .*{message}"):
        infer(scatter_elements(X, I, U), t(*dshape), t(*ishape, dtype="int64"), t(*ushape))
    with pytest.raises(TypeError, match="scatter_elements: updates .* must have the dtype"):
        infer(scatter_elements(X, I, U), t(3), t(3, dtype="int64"), t(3, dtype="int32"))
    with pytest.raises(ValueError, match="reduction must be one of"):
        scatter_elements(X, I, U, reduction="mean")


def ref_scatter_nd_onnx(data, indices, updates, reduction):
    out = data.copy()
    for pos in itertools.product(*map(range, indices.shape[:-1])):
        dst = tuple(int(v) for v in indices[pos])
        out[dst] = _REDUCE[reduction](out[dst], updates[pos]) if reduction in (
            "update", "add", "mul") else getattr(np, {"min": "minimum", "max": "maximum"}[
                reduction])(out[dst], updates[pos])
    return out


@pytest.mark.parametrize("mode", ["update", "add", "mul", "min", "max"])
@pytest.mark.parametrize(("dshape", "ishape"), [
    ((4, 3), (5, 1)), ((4, 3), (2, 3, 2)), ((2, 3, 4), (3, 2)), ((6,), (4, 1)),
])
def test_scatter_nd_matches_onnx_reference(mode, dshape, ishape):
    data = RNG.integers(-5, 5, size=dshape).astype("float32")
    depth = ishape[-1]
    # repeated positions too: ONNX leaves them undefined with "update", irpass (and the
    # reference) keep the last
    onnx_idx = RNG.integers(0, 10**6, size=ishape) % np.array(dshape[:depth])
    ushape = ishape[:-1] + dshape[depth:]
    updates = RNG.integers(-5, 5, size=ushape).astype("float32")
    call = scatter_nd(X, I, U, mode=mode)
    tvm_idx = np.moveaxis(onnx_idx, -1, 0).copy()
    assert infer(call, t(*dshape), t(*tvm_idx.shape, dtype="int64"), t(*ushape)) == t(*dshape)
    np.testing.assert_array_equal(run(call, data, tvm_idx, updates),
                                  ref_scatter_nd_onnx(data, onnx_idx, updates, mode))


def test_scatter_nd_errors_and_negative_indices():
    with pytest.raises(ValueError, match=r"scatter_nd: updates .* must have shape \(2, 3\)"):
        infer(scatter_nd(X, I, U), t(4, 3), t(1, 2, dtype="int64"), t(2, 4))
    got = run(scatter_nd(X, I, U), np.zeros((3, 2), "float32"), np.array([[-1]]),
              np.ones((1, 2), "float32"))
    assert got.tolist() == [[0, 0], [0, 0], [1, 1]]
    with pytest.raises(ValueError, match="scatter_nd: index 3 is out of range for axis 0"):
        run(scatter_nd(X, I, U), np.zeros((3, 2), "float32"), np.array([[3]]),
            np.ones((1, 2), "float32"))


# -- topk --------------------------------------------------------------------------------------


def ref_topk(x, k, axis, largest):
    """Sort each line with the key (value, index) or (-value, index): ties in index order."""
    xs = np.moveaxis(x, axis, -1)
    vals = np.empty(xs.shape[:-1] + (k,), x.dtype)
    idx = np.empty(xs.shape[:-1] + (k,), np.int64)
    for pos in itertools.product(*map(range, xs.shape[:-1])):
        line = [(float(v), i) for i, v in enumerate(xs[pos])]
        line.sort(key=lambda p: ((-p[0] if largest else p[0]), p[1]))
        idx[pos] = [i for _, i in line[:k]]
        vals[pos] = [xs[pos][i] for _, i in line[:k]]
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


@pytest.mark.parametrize("is_ascend", [False, True])
@pytest.mark.parametrize(("shape", "k", "axis"), [((3, 7), 3, -1), ((6, 2, 3), 6, 0),
                                                  ((4, 5), 1, 0), ((5,), 0, 0)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_topk_matches_reference_with_ties(is_ascend, shape, k, axis, dtype):
    x = RNG.integers(0, 4, size=shape).astype(dtype)  # many ties
    call = topk(X, k=k, axis=axis, is_ascend=is_ascend, dtype="int64")
    kk = k if k >= 1 else shape[axis]
    oshape = list(shape)
    oshape[axis] = kk
    assert infer(call, t(*shape, dtype=dtype)) == TupleType(
        (t(*oshape, dtype=dtype), t(*oshape, dtype="int64")))
    values, indices = run(call, x)
    want_v, want_i = ref_topk(x, kk, axis, not is_ascend)
    np.testing.assert_array_equal(values, want_v)
    np.testing.assert_array_equal(indices, want_i)


def test_topk_ret_types_and_errors():
    x = np.array([[1.0, 3.0, 2.0]], "float32")
    assert run(topk(X, 2, ret_type="values"), x).tolist() == [[3.0, 2.0]]
    out = run(topk(X, 2, ret_type="indices"), x)
    assert out.tolist() == [[1, 2]] and out.dtype == np.int32
    assert topk(X).attrs["dtype"] == "int32"
    with pytest.raises(ValueError, match="topk: k=4 is more than the 3 elements of axis 1"):
        infer(topk(X, 4), t(1, 3))
    with pytest.raises(TypeError, match="topk: dtype .* must be an integer dtype"):
        infer(topk(X, 1, dtype="float32"), t(1, 3))
    with pytest.raises(ValueError, match="topk: data must have at least one dimension"):
        infer(topk(X, 1), t())
    assert Op.get("topk").pattern == OpPattern.OPAQUE


# -- arange ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("start", "stop", "step", "dtype", "want"), [
    (3, 9, 3, "int32", [3, 6]),
    (10, 4, -2, "int64", [10, 8, 6]),
    (0, 5, 1, "int16", [0, 1, 2, 3, 4]),
    (5, None, 1, "float32", [0, 1, 2, 3, 4]),
    (1, 1, 1, "int64", []),
    (1, 5, -1, "int64", []),
    (2**62, 2**62 + 3, 1, "int64", [2**62, 2**62 + 1, 2**62 + 2]),  # exact beyond 2**53
    (1.0, 2.0, 0.25, "float64", [1.0, 1.25, 1.5, 1.75]),
    (0.5, -1.0, -0.5, "float16", [0.5, 0.0, -0.5]),
])
def test_arange(start, stop, step, dtype, want):
    call = arange(start, stop, step, dtype)
    assert infer(call) == t(len(want), dtype=dtype)
    out = run(call)
    assert out.dtype == np.dtype(dtype)
    assert out.tolist() == want


def test_arange_float_length_is_ceil():
    # ceil((1 - 0) / 0.3) = 4: 0, 0.3, 0.6, 0.9
    out = run(arange(0.0, 1.0, 0.3, "float32"))
    np.testing.assert_allclose(out, [0.0, 0.3, 0.6, 0.9], rtol=1e-6)


@pytest.mark.parametrize(("args", "error", "message"), [
    ((0, 5, 0, "int64"), ValueError, "step must not be 0"),
    ((0.5, 5, 1, "int64"), ValueError, "start 0.5 is not an integer"),
    ((0, 5, 1, "bool"), TypeError, "dtype must be a numeric"),
])
def test_arange_errors(args, error, message):
    with pytest.raises(error, match=f"arange: {message}"):
        infer(arange(*args))
    with pytest.raises(TypeError, match="arange.start must be a number"):
        arange("a")


# -- one_hot -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("ishape", "axis"), [((4,), -1), ((2, 3), 0), ((2, 3), 1), ((2, 3), -1),
                                               ((), 0)])
def test_one_hot_matches_reference(ishape, axis):
    depth = 5
    indices = ints(-2, depth + 2, ishape)  # out of range ones give all-off rows
    call = one_hot(I, var("on"), var("off"), depth, axis, "int32")
    out = run(call, indices, np.array(7.0, "float32"), np.array(-1.0, "float32"))
    rank = len(ishape)
    a = axis + rank + 1 if axis < 0 else axis
    assert out.shape == ishape[:a] + (depth,) + ishape[a:]
    assert out.dtype == np.int32
    for pos in itertools.product(*map(range, out.shape)):
        d = pos[a]
        src = pos[:a] + pos[a + 1:]
        assert out[pos] == (7 if indices[src] == d else -1)


def test_one_hot_errors():
    with pytest.raises(ValueError, match=r"one_hot: axis 3 is out of range \[-3, 2\]"):
        infer(one_hot(I, X, U, 3, 3), t(2, 2, dtype="int64"), t(), t())
    with pytest.raises(ValueError, match="one_hot: on_value must be a scalar"):
        infer(one_hot(I, X, U, 3), t(2, dtype="int64"), t(1), t())
    with pytest.raises(TypeError, match="one_hot: indices must have an integer dtype"):
        infer(one_hot(I, X, U, 3), t(2), t(), t())
    with pytest.raises(ValueError, match="one_hot: depth must be >= 0"):
        infer(one_hot(I, X, U, -1), t(2, dtype="int64"), t(), t())


# -- reverse, reverse_sequence, trilu ----------------------------------------------------------


def test_reverse():
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    for axis in (0, 1, -1):
        np.testing.assert_array_equal(run(reverse(X, axis), x), np.flip(x, axis))
    with pytest.raises(ValueError, match="reverse: axis 3 is out of range"):
        infer(reverse(X, 3), t(2, 3, 4))


def ref_reverse_sequence(x, lengths, seq_axis, batch_axis):
    out = x.copy()
    n = x.shape[seq_axis]
    for b, length in enumerate(lengths):
        length = min(max(int(length), 1), n)
        for i in range(length):
            dst = [slice(None)] * x.ndim
            src = [slice(None)] * x.ndim
            dst[batch_axis] = src[batch_axis] = b
            dst[seq_axis], src[seq_axis] = i, length - 1 - i
            out[tuple(dst)] = x[tuple(src)]
    return out


@pytest.mark.parametrize(("shape", "seq_axis", "batch_axis"), [
    ((4, 3), 0, 1), ((3, 5), 1, 0), ((2, 4, 3), 1, 0), ((4, 2, 3), 0, 2), ((2, 3, 4), -1, 1),
])
def test_reverse_sequence_matches_reference(shape, seq_axis, batch_axis):
    x = RNG.standard_normal(shape).astype("float32")
    lengths = ints(0, shape[seq_axis] + 2, (shape[batch_axis],))
    call = reverse_sequence(X, I, seq_axis=seq_axis, batch_axis=batch_axis)
    np.testing.assert_array_equal(
        run(call, x, lengths), ref_reverse_sequence(x, lengths, seq_axis % len(shape),
                                                    batch_axis))


def test_reverse_sequence_errors():
    with pytest.raises(ValueError, match="reverse_sequence: seq_axis and batch_axis are both"):
        infer(reverse_sequence(X, I, 0, 0), t(2, 3), t(2, dtype="int64"))
    with pytest.raises(ValueError, match="seq_lengths .* must be 1-D with one length per"):
        infer(reverse_sequence(X, I, 1, 0), t(2, 3), t(3, dtype="int64"))
    with pytest.raises(TypeError, match="reverse_sequence: seq_lengths must have an integer"):
        infer(reverse_sequence(X, I, 1, 0), t(2, 3), t(2))


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("k", [0, 1, -1, 3, -5, 2**62, -(2**63)])
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3), (1, 5)])
def test_trilu_matches_definition(upper, k, shape):
    x = RNG.standard_normal(shape).astype("float32") + 10  # no zeros of its own
    out = run(trilu(X, I, upper), x, np.array(k, "int64"))
    for pos in itertools.product(*map(range, shape)):
        i, j = pos[-2:]
        keep = j - i >= k if upper else j - i <= k
        assert out[pos] == (x[pos] if keep else 0)


def test_trilu_errors():
    with pytest.raises(ValueError, match="trilu: data must have at least 2 dimensions"):
        infer(trilu(X, I), t(3), t(dtype="int64"))
    with pytest.raises(ValueError, match="trilu: k must be a scalar"):
        infer(trilu(X, I), t(3, 3), t(1, dtype="int64"))
    with pytest.raises(TypeError, match="trilu: k must have an integer dtype"):
        infer(trilu(X, I), t(3, 3), t())


# -- depth_to_space and space_to_depth ---------------------------------------------------------


def ref_depth_to_space(x, b, mode):
    n, c, h, w = x.shape
    out = np.empty((n, c // (b * b), h * b, w * b), x.dtype)
    cc = c // (b * b)
    for ni, ci, hi, wi in itertools.product(range(n), range(cc), range(h * b), range(w * b)):
        row, col = hi % b, wi % b
        src_c = (row * b + col) * cc + ci if mode == "DCR" else (ci * b + row) * b + col
        out[ni, ci, hi, wi] = x[ni, src_c, hi // b, wi // b]
    return out


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("b", [1, 2, 3])
def test_depth_to_space_and_back(mode, layout, b):
    x = RNG.standard_normal((2, 2 * b * b, 2, 3)).astype("float32")
    want = ref_depth_to_space(x, b, mode)
    perm = [0, 2, 3, 1] if layout == "NHWC" else [0, 1, 2, 3]
    xin = np.ascontiguousarray(x.transpose(perm))
    got = run(depth_to_space(X, b, layout, mode), xin)
    np.testing.assert_array_equal(got, want.transpose(perm))
    back = run(space_to_depth(X, b, layout, mode), got)
    np.testing.assert_array_equal(back, xin)


def test_depth_space_errors():
    with pytest.raises(ValueError, match="nn.depth_to_space: the 6 channels .* not a multiple"):
        infer(depth_to_space(X, 2), t(1, 6, 2, 2))
    with pytest.raises(ValueError, match="nn.space_to_depth: the height 3 and width 4"):
        infer(space_to_depth(X, 2), t(1, 1, 3, 4))
    with pytest.raises(ValueError, match="nn.depth_to_space: data must be 4-D"):
        infer(depth_to_space(X, 2), t(4, 2, 2))
    with pytest.raises(ValueError, match="block_size must be >= 1"):
        depth_to_space(X, 0)
    with pytest.raises(ValueError, match="mode must be one of"):
        space_to_depth(X, 2, mode="RDC")


def test_patterns_follow_tvm():
    patterns = {name: Op.get(name).pattern for name in (
        "gather", "gather_nd", "scatter_elements", "scatter_nd", "topk", "arange", "one_hot",
        "reverse", "reverse_sequence", "trilu", "nn.depth_to_space", "nn.space_to_depth")}
    assert patterns["scatter_elements"] == patterns["scatter_nd"] == OpPattern.OPAQUE
    assert patterns["one_hot"] == OpPattern.OUT_ELEMWISE_FUSABLE
    assert all(p == OpPattern.INJECTIVE for n, p in patterns.items()
               if n not in ("scatter_elements", "scatter_nd", "topk", "one_hot"))
    assert isinstance(infer(gather(X, 0, I), t(3), t(3, dtype="int32")), TensorType)


# -- the op-set checks of test_ops_registry, for these ops -------------------------------------

V = [var(f"a{i}") for i in range(3)]
CASES = {
    "gather": (lambda: gather(V[0], 1, V[1]), [RNG.random((2, 3)), np.array([[2, -1]])]),
    "gather_nd": (lambda: gather_nd(V[0], V[1], 1),
                  [RNG.random((2, 3, 2)), np.array([[[1], [0]]])]),
    "scatter_elements": (lambda: scatter_elements(V[0], V[1], V[2], 0, "add"),
                         [RNG.random((3, 2)), np.array([[0, 2], [0, 1]]), RNG.random((2, 2))]),
    "scatter_nd": (lambda: scatter_nd(V[0], V[1], V[2], "max"),
                   [RNG.random((3, 2)), np.array([[2, 0, 2]]), RNG.random((3, 2))]),
    "topk": (lambda: topk(V[0], 2, 0), [RNG.random((3, 2))]),
    "arange": (lambda: arange(1, 7, 2, "int32"), []),
    "one_hot": (lambda: one_hot(V[0], V[1], V[2], 3, 0, "float16"),
                [np.array([0, 2, 5]), np.array(2.0), np.array(0.5)]),
    "reverse": (lambda: reverse(V[0], 1), [RNG.random((2, 3))]),
    "reverse_sequence": (lambda: reverse_sequence(V[0], V[1], 0, 1),
                         [RNG.random((3, 2)), np.array([3, 2])]),
    "trilu": (lambda: trilu(V[0], V[1], False), [RNG.random((2, 3, 3)), np.array(1)]),
    "nn.depth_to_space": (lambda: depth_to_space(V[0], 2, "NHWC", "CRD"),
                          [RNG.random((1, 2, 2, 8))]),
    "nn.space_to_depth": (lambda: space_to_depth(V[0], 2), [RNG.random((1, 1, 4, 2))]),
}
ALL_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float16", "float32",
              "float64"]


def read_only(value):
    value = np.array(value)
    value.setflags(write=False)
    return value


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_matches_type_relation_for_every_dtype(name):
    """For every dtype of the data the relation accepts, the kernel returns exactly the type it
    gives, and leaves its (read-only) inputs alone."""
    build, inputs = CASES[name]
    call = build()
    assert call.op is Op.get(name)
    accepted = 0
    for dtype in ALL_DTYPES:
        values = [read_only(v.astype(dtype) if i == 0 else v) for i, v in enumerate(inputs)]
        if name == "scatter_elements" or name == "scatter_nd":
            values[2] = read_only(inputs[2].astype(dtype))
        if name == "one_hot":
            values = [read_only(inputs[0].astype(dtype))] + [read_only(v) for v in inputs[1:]]
        try:
            ty = infer(call, *(TensorType(v.shape, v.dtype.name) for v in values))
        except TypeError:
            continue
        accepted += 1
        assert type_of_value(run(call, *values)) == ty, dtype
    assert accepted >= (1 if name == "arange" else 4)


def type_of_value(value):
    if isinstance(value, tuple):
        return TupleType(tuple(type_of_value(v) for v in value))
    return TensorType(value.shape, value.dtype.name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_call_round_trips_through_the_text_format(name):
    import irpass

    build, inputs = CASES[name]
    call = build()
    params = [var(f"p{i}", type_of_value(v)) for i, v in enumerate(inputs)]
    mod = irpass.ir.IRModule({"main": irpass.ir.Function(params, type(call)(call.op, params,
                                                                              call.attrs))})
    back = irpass.ir.parse(str(mod))
    irpass.ir.assert_structural_equal(back, mod)
    want, got = irpass.evaluate(mod, *inputs), irpass.evaluate(back, *inputs)
    for a, b in zip(want if isinstance(want, tuple) else (want,),
                    got if isinstance(got, tuple) else (got,), strict=True):
        np.testing.assert_array_equal(a, b)
