"""Indexing ops: ``take`` (gather along an axis) and ``strided_slice``.

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
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.nodes import Call
from ..ir.op import (
    AttrField,
    OpPattern,
    attr_choice,
    attr_ints,
    attr_optional_int,
    attr_optional_ints,
)
from ..ir.types import TensorType, Type
from ._common import (
    INT_DTYPES,
    UNSIGNED_DTYPES,
    check_dtype,
    make_call,
    normalize_axes,
    normalize_axis,
    register,
    tensor_arg,
)

__all__ = ["take", "strided_slice", "slice_bounds"]

# -- take --------------------------------------------------------------------------------------


def _take_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "take", "data")
    indices = tensor_arg(arg_types[1], "take", "indices")
    check_dtype(indices, INT_DTYPES, "take", "indices")
    axis = attrs["axis"]
    if axis is None:
        size = int(np.prod(data.shape, dtype=np.int64))
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


def _strided_slice_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "strided_slice", "data")
    index = slice_bounds(data.shape, attrs["begin"], attrs["end"], attrs["strides"], attrs["axes"])
    shape = tuple(_slice_len(s, d) for s, d in zip(index, data.shape, strict=True))
    return TensorType(shape, data.dtype)


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
        AttrField("begin", attr_ints, doc="First index per sliced axis (negative: from the end)."),
        AttrField("end", attr_ints, doc="Stop index per sliced axis (exclusive, clamped)."),
        AttrField("strides", attr_optional_ints, None, doc="Step per sliced axis; None: all 1."),
        AttrField("axes", attr_optional_ints, None, doc="The sliced axes; None: the first ones."),
    ),
    doc="Slice ``data`` with static begin/end/strides per axis (Python/ONNX Slice semantics).",
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
