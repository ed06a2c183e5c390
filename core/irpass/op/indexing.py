"""Indexing ops: ``take`` (gather along an axis), ``strided_slice``, ``gather`` (element
by element along an axis: ONNX GatherElements) and ``gather_nd``.

``take`` follows ``numpy.take`` with Relay's modes for indices out of range:
``"clip"`` clamps them into ``[0, n - 1]`` (a negative index becomes 0),
``"wrap"`` takes them modulo ``n`` (so ``-1`` is the last element: ONNX
Gather), and ``"fast"`` assumes they are in ``[-n, n)`` (negative ones count
from the end) and fails at run time otherwise.

``strided_slice`` slices with static ``begin``/``end``/``strides`` as ONNX
Slice does: negative values count from the end, out of range values are
clamped, a negative stride walks backwards. That is Python's slicing except
for a negative stride with ``begin < -dim``, where Python's slice is empty and
ONNX's clamps ``begin`` to 0. ``axes`` names
the sliced axes (default: the first ``len(begin)``); other axes are kept whole.

``gather`` and ``gather_nd`` take indices in ``[-n, n)`` for an axis of size ``n``
(negative ones count from the end, as ONNX's GatherElements and GatherND do; TVM leaves
them undefined); an index outside that range is a run-time error naming it.
``gather_nd`` keeps TVM's layout: the index tuples run along the *first* axis of
``indices`` (ONNX puts them on the last).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.dims import Dim, dim_max, dim_min, prove_ge, prove_lt
from ..ir.nodes import Call
from ..ir.op import (
    AttrField,
    OpPattern,
    attr_choice,
    attr_dims,
    attr_int,
    attr_optional_int,
    attr_optional_ints,
)
from ..ir.types import TensorType, Type
from ._common import (
    INT_DTYPES,
    UNSIGNED_DTYPES,
    check_dtype,
    known_gt,
    make_call,
    normalize_axes,
    normalize_axis,
    register,
    shape_size,
    shapes_may_agree,
    static_dim,
    tensor_arg,
)

__all__ = ["take", "strided_slice", "slice_bounds", "gather", "gather_nd", "checked_indices",
           "nd_shape", "nd_positions"]

# -- take --------------------------------------------------------------------------------------


def _take_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "take", "data")
    indices = tensor_arg(arg_types[1], "take", "indices")
    check_dtype(indices, INT_DTYPES, "take", "indices")
    axis = attrs["axis"]
    if axis is None:
        size = shape_size(data.shape)
        shape = indices.shape
    else:
        if data.ndim == 0:
            raise ValueError(f"take: data must have at least one dimension with axis={axis}")
        a = normalize_axis(axis, data.ndim, "take")
        size = data.shape[a]
        shape = data.shape[:a] + indices.shape + data.shape[a + 1 :]
    if size == 0 and 0 not in indices.shape:
        raise ValueError(
            f"take: cannot take {indices} indices from an empty axis of data {data} (axis={axis})"
        )
    return TensorType(shape, data.dtype)


def _take_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, indices = args
    axis, mode = attrs["axis"], attrs["mode"]
    size = data.size if axis is None else data.shape[axis]
    if indices.size == 0 or size == 0:
        return np.take(data, indices.astype(np.intp), axis=axis)
    if indices.dtype.name in UNSIGNED_DTYPES:
        # reduce in the unsigned dtype first: values above 2**63 would turn
        # negative in the intp cast numpy makes
        bound = np.asarray(size, dtype=indices.dtype)
        indices = indices % bound if mode == "wrap" else np.minimum(indices, bound)
    indices = indices.astype(np.int64, copy=False)
    if mode == "fast":
        bad = (indices < -size) | (indices >= size)
        if bad.any():
            first = int(indices[bad].flat[0])
            raise ValueError(
                f"take: index {first} is out of range for an axis of size {size} (mode 'fast'; "
                "use mode 'clip' or 'wrap' for indices outside [-size, size))"
            )
        return np.take(data, indices, axis=axis)
    return np.take(data, indices, axis=axis, mode=mode)


register(
    "take",
    num_inputs=2,
    type_rel=_take_rel,
    kernel=_take_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(
        AttrField("axis", attr_optional_int, None, doc="The axis to gather on; None: flattened."),
        AttrField(
            "mode",
            attr_choice("clip", "wrap", "fast"),
            "clip",
            doc='Out-of-range indices: "clip" clamps, "wrap" wraps, "fast" requires [-n, n).',
        ),
    ),
    doc="Gather the elements (or slices along ``axis``) of ``data`` at integer ``indices``.",
)


def take(data: Any, indices: Any, axis: int | None = None, mode: str = "clip") -> Call:
    """The elements of ``data`` at ``indices`` along ``axis`` (None: of the flattened data).

    The result's shape is ``data.shape[:axis] + indices.shape + data.shape[axis + 1:]``.
    ``mode`` says what an index outside ``[0, n)`` means: ``"clip"`` (Relay's default)
    clamps it, ``"wrap"`` takes it modulo ``n`` (ONNX Gather's negative indices), and
    ``"fast"`` accepts ``[-n, n)`` only.
    """
    return make_call("take", [data, indices], ["data", "indices"], axis=axis, mode=mode)


# -- strided_slice -----------------------------------------------------------------------------


def slice_bounds(
    shape: tuple[int, ...],
    begin: tuple[int, ...],
    end: tuple[int, ...],
    strides: tuple[int, ...] | None,
    axes: tuple[int, ...] | None,
    op: str = "strided_slice",
) -> tuple[slice, ...]:
    """One ``slice`` per axis of ``shape`` (clamped as ONNX Slice does), checking the attributes."""
    ndim = len(shape)
    if len(end) != len(begin):
        raise ValueError(
            f"{op}: begin {begin} and end {end} must have the same length "
            f"({len(begin)} vs {len(end)})"
        )
    if strides is None:
        strides = (1,) * len(begin)
    elif len(strides) != len(begin):
        raise ValueError(
            f"{op}: strides {strides} must have one value per sliced axis ({len(begin)}, "
            f"as begin {begin})"
        )
    if axes is None:
        if len(begin) > ndim:
            raise ValueError(
                f"{op}: begin {begin} slices {len(begin)} axes but data has only {ndim}"
            )
        axes = tuple(range(len(begin)))
    else:
        if len(axes) != len(begin):
            raise ValueError(f"{op}: axes {axes} must name one axis per value of begin {begin}")
        axes = normalize_axes(axes, ndim, op, "axes")
    index = [slice(None)] * ndim
    for a, b, e, s in zip(axes, begin, end, strides, strict=True):
        if s == 0:
            raise ValueError(f"{op}: strides {strides} must not contain 0 (axis {a})")
        index[a] = _clamped(b, e, s, shape[a])
    return tuple(index)


def _clamped(begin: int, end: int, stride: int, dim: int) -> slice:
    """ONNX Slice's clamping of one axis, as a slice numpy applies literally.

    It matches Python's except for a negative stride with ``begin < -dim``:
    Python's slice is empty there, ONNX starts at element 0.
    """
    begin = begin + dim if begin < 0 else begin
    end = end + dim if end < 0 else end
    if stride > 0:
        begin, end = min(max(begin, 0), dim), min(max(end, 0), dim)
    else:
        begin, end = min(max(begin, 0), dim - 1), min(max(end, -1), dim - 1)
    # a stop of -1 means "past element 0" here, but "the last element" to numpy
    return slice(begin, None if end < 0 else end, stride)


def _slice_len(s: slice, dim: int) -> int:
    if s.start is None:  # an axis that is not sliced
        return dim
    stop = -1 if s.stop is None else s.stop
    return len(range(s.start, stop, s.step))


# An int bound at least this large is past the end of any axis ("to the end"), and at
# most its negative before the start: what exporters write for an open slice (INT64_MAX,
# -INT64_MAX); a symbolic axis is never that long, so no min() with it is needed.
_OPEN_BOUND = 2**62


def _sym_index(v: Dim, dim: Dim, what: str, axis: int) -> Dim:
    """A begin/end value counted from the start: a negative one counts from the end.

    A symbolic value must be provably >= 0 or < 0 (which one decides the formula)."""
    if type(v) is int:
        return v + dim if v < 0 else v
    if prove_ge(v, 0):
        return v
    if prove_lt(v, 0):
        return v + dim
    raise ValueError(
        f"strided_slice: {what} {v} of axis {axis} must be provably >= 0 or < 0 (a negative "
        "index counts from the end), and its sign depends on the size variables"
    )


def _clamp(v: Dim, lo: Dim, hi: Dim) -> Dim:
    """``min(max(v, lo), hi)``, with the steps that are provably no-ops left out."""
    if type(v) is int and type(lo) is int and type(hi) is int:
        return min(max(v, lo), hi)
    if not prove_ge(v, lo):
        v = dim_max(v, lo)
    if not prove_ge(hi, v):
        v = dim_min(v, hi)
    return v


def _sym_slice_len(begin: Dim, end: Dim, stride: int, dim: Dim, axis: int) -> Dim:
    """The length of one sliced axis when the dim or a bound is symbolic: ONNX Slice's
    clamping (see :func:`_clamped`) with ``dim_min``/``dim_max`` where it is needed."""
    if stride > 0:
        # the common open slices first: [0:] and [0:end] of a symbolic axis
        b = 0 if type(begin) is int and begin <= -_OPEN_BOUND else begin
        e = dim if type(end) is int and end >= _OPEN_BOUND else end
        b = _clamp(_sym_index(b, dim, "begin", axis), 0, dim)
        e = e if e is dim else _clamp(_sym_index(e, dim, "end", axis), 0, dim)
        diff = e - b
        length = diff if stride == 1 else (diff + stride - 1) // stride
    else:
        b = dim - 1 if type(begin) is int and begin >= _OPEN_BOUND else begin
        b = _clamp(_sym_index(b, dim, "begin", axis), 0, dim - 1)
        if type(end) is int and end <= -_OPEN_BOUND:
            e: Dim = -1  # past element 0
        else:
            e = _clamp(_sym_index(end, dim, "end", axis), -1, dim - 1)
        step = -stride
        diff = b - e
        length = diff if step == 1 else (diff + step - 1) // step
    return length if prove_ge(length, 0) else dim_max(length, 0)


def _strided_slice_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "strided_slice", "data")
    try:
        index = slice_bounds(data.shape, attrs["begin"], attrs["end"], attrs["strides"],
                             attrs["axes"])
        shape = tuple(_slice_len(s, d) for s, d in zip(index, data.shape, strict=True))
    except TypeError:
        # a symbolic dim or bound of a sliced axis: the static path compares it (and
        # DimExpr refuses to be ordered) before it computes anything with it; the
        # attributes' own kinds were checked by their converters
        shape = _sym_slice_shape(data.shape, attrs)
    return TensorType(shape, data.dtype)


def _sym_slice_shape(shape: tuple[Dim, ...], attrs: Attrs) -> tuple[Dim, ...]:
    """The sliced shape when a dim or a bound is symbolic (the attributes checked as
    :func:`slice_bounds` checks them)."""
    begin, end, strides = attrs["begin"], attrs["end"], attrs["strides"]
    # slice_bounds checks the lengths and axes; the bounds it is given here are stand-ins
    slice_bounds((1,) * len(shape), (0,) * len(begin), (0,) * len(end), strides, attrs["axes"])
    out = list(shape)
    axes = attrs["axes"]
    if axes is None:
        order = list(range(len(begin)))
    else:
        order = [a + len(shape) if a < 0 else a for a in axes]
    steps = strides if strides is not None else (1,) * len(begin)
    for a, b, e, st in zip(order, begin, end, steps, strict=True):
        d = shape[a]
        if type(d) is int and type(b) is int and type(e) is int:
            out[a] = _slice_len(_clamped(b, e, st, d), d)
        else:
            out[a] = _sym_slice_len(b, e, st, d, a)
    return tuple(out)


def _strided_slice_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    x = args[0]
    index = slice_bounds(x.shape, attrs["begin"], attrs["end"], attrs["strides"], attrs["axes"])
    return x[index]


register(
    "strided_slice",
    num_inputs=1,
    type_rel=_strided_slice_rel,
    kernel=_strided_slice_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(
        AttrField(
            "begin", attr_dims, doc="First index per sliced axis (negative: from the end)."
        ),
        AttrField("end", attr_dims, doc="Stop index per sliced axis (exclusive, clamped)."),
        AttrField("strides", attr_optional_ints, None, doc="Step per sliced axis; None: all 1."),
        AttrField("axes", attr_optional_ints, None, doc="The sliced axes; None: the first ones."),
    ),
    doc="Slice ``data`` with begin/end/strides per axis (Python/ONNX Slice semantics; begin "
    "and end may be symbolic dims).",
)


def strided_slice(data: Any, begin: Any, end: Any, strides: Any = None, axes: Any = None) -> Call:
    """``data`` sliced as ``data[begin:end:strides]`` on each of ``axes``.

    Values follow ONNX Slice (Python's slices but for a negative stride with
    ``begin < -dim``, which starts at 0): negative ``begin``/``end`` count
    from the end, out-of-range ones are clamped (so ``end`` may be ``2**63 - 1`` for
    "to the end", or ``-2**63`` with a negative stride for "to the start"), and a
    negative stride walks backwards. ``axes`` defaults to the first ``len(begin)``
    axes; ``strides`` defaults to 1 everywhere.
    """
    return make_call(
        "strided_slice", [data], ["data"], begin=begin, end=end, strides=strides, axes=axes
    )



# -- gather and gather_nd ----------------------------------------------------------------------


def checked_indices(indices: np.ndarray, size: int, op: str, what: str = "axis") -> np.ndarray:
    """``indices`` as int64 in ``[0, size)``: negative ones count from the end, any outside
    ``[-size, size)`` is a ``ValueError`` naming it, the size and ``what`` (the axis)."""
    if indices.dtype.name in UNSIGNED_DTYPES:
        # compare in the unsigned dtype: values above 2**63 would turn negative as int64
        bad = indices >= np.asarray(size, dtype=indices.dtype)
        wide = np.where(bad, 0, indices).astype(np.int64)
    else:
        wide = indices.astype(np.int64, copy=False)
        bad = (wide < -size) | (wide >= size)
    if bad.any():
        first = indices[bad].reshape(-1)[0]
        raise ValueError(
            f"{op}: index {int(first)} is out of range for {what} of size {size} "
            f"(valid: [{-size}, {size}))"
        )
    return np.where(wide < 0, wide + size, wide)


def _gather_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "gather", "data")
    indices = tensor_arg(arg_types[1], "gather", "indices")
    check_dtype(indices, INT_DTYPES, "gather", "indices")
    if data.ndim == 0:
        raise ValueError(f"gather: data must have at least one dimension, got {data}")
    if indices.ndim != data.ndim:
        raise ValueError(
            f"gather: indices {indices} must have the rank of data {data} ({data.ndim})"
        )
    axis = normalize_axis(attrs["axis"], data.ndim, "gather")
    for d, (n, m) in enumerate(zip(indices.shape, data.shape, strict=True)):
        if d != axis and known_gt(n, m):
            raise ValueError(
                f"gather: indices {indices} is longer than data {data} on axis {d} "
                f"({n} > {m}); only axis {axis} may differ freely"
            )
    if data.shape[axis] == 0 and 0 not in indices.shape:
        raise ValueError(f"gather: cannot gather {indices} from the empty axis {axis} of {data}")
    return TensorType(indices.shape, data.dtype)


def _gather_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, indices = args
    axis = normalize_axis(attrs["axis"], data.ndim, "gather")
    if indices.size == 0:
        return np.empty(indices.shape, dtype=data.dtype)
    idx = checked_indices(indices, data.shape[axis], "gather", f"axis {axis}")
    # the other axes of indices may be shorter than data's: gather from that corner
    corner = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(idx.shape))
    return np.take_along_axis(data[corner], idx, axis=axis)


register(
    "gather",
    num_inputs=2,
    type_rel=_gather_rel,
    kernel=_gather_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(AttrField("axis", attr_int, 0, doc="The axis the indices index."),),
    doc="Gather elements of ``data`` along ``axis`` at ``indices`` (ONNX GatherElements).",
)


def gather(data: Any, axis: int, indices: Any) -> Call:
    """``out[i][j][k] = data[indices[i][j][k]][j][k]`` for ``axis=0``, and so on.

    ``indices`` has the rank of ``data``; on every axis but ``axis`` it is at most as long as
    ``data``. The result has the shape of ``indices``. Indices in ``[-n, n)`` are valid
    (negative ones count from the end); others fail at run time.
    """
    return make_call("gather", [data, indices], ["data", "indices"], axis=axis)


def nd_shape(
    data: TensorType, indices: TensorType, batch: int, op: str
) -> tuple[int, tuple[int, ...]]:
    """(tuple length M, result shape) of a gather_nd (for scatter_nd: the shape of its
    updates); ``ValueError`` when the shapes do not fit."""
    if indices.ndim == 0:
        raise ValueError(f"{op}: indices must have at least one dimension, got {indices}")
    depth = static_dim(op, "the length of the index tuples (indices.shape[0])", indices.shape[0])
    if batch < 0:
        raise ValueError(f"{op}: batch_dims must be >= 0, got {batch}")
    if batch > indices.ndim - 1:
        raise ValueError(
            f"{op}: batch_dims {batch} exceeds the {indices.ndim - 1} index dimensions of "
            f"indices {indices} (the first dimension holds the index tuples)"
        )
    if batch + depth > data.ndim:
        raise ValueError(
            f"{op}: index tuples of length {depth} (indices.shape[0]) with batch_dims {batch} "
            f"need data of rank >= {batch + depth}, got {data}"
        )
    if not shapes_may_agree(indices.shape[1 : 1 + batch], data.shape[:batch]):
        raise ValueError(
            f"{op}: the batch dimensions of indices {indices.shape[1 : 1 + batch]} and data "
            f"{data.shape[:batch]} must be equal (batch_dims {batch})"
        )
    return depth, data.shape[:batch] + indices.shape[1 + batch :] + data.shape[batch + depth :]


def _gather_nd_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "gather_nd", "data")
    indices = tensor_arg(arg_types[1], "gather_nd", "indices")
    check_dtype(indices, INT_DTYPES, "gather_nd", "indices")
    batch = attrs["batch_dims"]
    depth, shape = nd_shape(data, indices, batch, "gather_nd")
    rank = attrs["index_rank"]
    if rank is not None and rank != depth:
        raise ValueError(
            f"gather_nd: index_rank {rank} differs from the length {depth} of the index tuples "
            f"(indices.shape[0] of {indices})"
        )
    for j in range(depth):
        if data.shape[batch + j] == 0 and 0 not in indices.shape:
            raise ValueError(f"gather_nd: cannot index the empty axis {batch + j} of {data}")
    return TensorType(shape, data.dtype)


def nd_positions(data_shape: tuple[int, ...], indices: np.ndarray, batch: int, op: str) -> tuple:
    """The numpy index (a tuple of int64 arrays) of the gather_nd / scatter_nd index tuples
    ``indices`` (tuples along axis 0), over ``data`` flattened to (prod(batch dims), rest...):
    each array has shape (prod(batch dims), tuples per batch)."""
    depth = indices.shape[0]
    nbatch = int(np.prod(data_shape[:batch], dtype=np.int64))
    per_batch = int(np.prod(indices.shape[1 + batch :], dtype=np.int64))
    tuples = indices.reshape(depth, nbatch, per_batch)
    # broadcast: with depth 0 the batch index alone must still have one entry per tuple
    pos = [np.broadcast_to(np.arange(nbatch, dtype=np.int64)[:, None], tuples.shape[1:])]
    for j in range(depth):
        pos.append(checked_indices(tuples[j], data_shape[batch + j], op, f"axis {batch + j}"))
    return tuple(pos)


def _gather_nd_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, indices = args
    batch = attrs["batch_dims"]
    depth = indices.shape[0]
    shape = data.shape[:batch] + indices.shape[1 + batch :] + data.shape[batch + depth :]
    if 0 in shape:
        return np.empty(shape, dtype=data.dtype)
    flat = data.reshape((int(np.prod(data.shape[:batch], dtype=np.int64)), *data.shape[batch:]))
    return flat[nd_positions(data.shape, indices, batch, "gather_nd")].reshape(shape)


register(
    "gather_nd",
    num_inputs=2,
    type_rel=_gather_nd_rel,
    kernel=_gather_nd_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(
        AttrField("batch_dims", attr_int, 0, doc="Leading axes shared by data and indices."),
        AttrField(
            "index_rank", attr_optional_int, None, doc="indices.shape[0] if given (checked)."
        ),
    ),
    doc="Gather slices of ``data`` at the index tuples along the first axis of ``indices``.",
)


def gather_nd(data: Any, indices: Any, batch_dims: int = 0, index_rank: int | None = None) -> Call:
    """Slices of ``data`` at index tuples (TVM's layout: the tuples run along axis 0).

    With ``data`` of shape ``(X_0, ..., X_{N-1})``, ``indices`` of shape
    ``(M, Y_0, ..., Y_{K-1})`` and ``B = batch_dims`` (``Y_b == X_b`` for ``b < B``), the
    result has shape ``(X_0..X_{B-1}, Y_B..Y_{K-1}, X_{B+M}..X_{N-1})``:
    ``out[b, y, rest] = data[b, indices[:, b, y], rest]``. Indices in ``[-n, n)`` are valid
    (negative ones count from the end). ``index_rank``, if given, must equal ``M``.
    ONNX's GatherND is this op with the last axis of its indices moved first.
    """
    return make_call(
        "gather_nd", [data, indices], ["data", "indices"],
        batch_dims=batch_dims, index_rank=index_rank,
    )
