"""Sorting ops: ``topk`` (TVM Relay's signature; ONNX TopK).

``topk`` selects the ``k`` largest (or, with ``is_ascend``, smallest) elements along an axis,
sorted, with their indices. Equal elements come out in the order of their indices (the lower
index first) in both directions, as ONNX's TopK specifies. ``k < 1`` selects every element,
as in TVM. ``ret_type`` picks the result: ``"both"`` (a tuple of values and indices),
``"values"`` or ``"indices"``. TVM gives it the OPAQUE fusion pattern.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.nodes import Call
from ..ir.op import AttrField, OpPattern, attr_bool, attr_choice, attr_dtype, attr_int
from ..ir.types import TensorType, TupleType, Type
from ._common import INT_DTYPES, known_gt, make_call, normalize_axis, register, tensor_arg

__all__ = ["topk"]


def _count(k: int, size: int) -> int:
    return size if k < 1 else k


def _topk_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "topk", "data")
    if data.ndim == 0:
        raise ValueError(f"topk: data must have at least one dimension, got {data}")
    axis = normalize_axis(attrs["axis"], data.ndim, "topk")
    if attrs["dtype"] not in INT_DTYPES:
        raise TypeError(f"topk: dtype (of the indices) must be an integer dtype, got "
                        f"{attrs['dtype']!r}")
    size = data.shape[axis]
    k = _count(attrs["k"], size)
    if known_gt(k, size):  # a symbolic axis: the run time checks k fits
        raise ValueError(f"topk: k={k} is more than the {size} elements of axis {axis} of {data}")
    shape = data.shape[:axis] + (k,) + data.shape[axis + 1 :]
    values = TensorType(shape, data.dtype)
    indices = TensorType(shape, attrs["dtype"])
    ret = attrs["ret_type"]
    if ret == "both":
        return TupleType((values, indices))
    return values if ret == "values" else indices


def _topk_kernel(args: tuple, attrs: Attrs) -> Any:
    x = args[0]
    axis = normalize_axis(attrs["axis"], x.ndim, "topk")
    size = x.shape[axis]
    k = _count(attrs["k"], size)
    if attrs["is_ascend"]:
        order = np.argsort(x, axis=axis, kind="stable")
    else:
        # descending with ties in index order: sort the reversed axis stably, read it
        # backwards and map the positions back
        order = size - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    order = np.take(order, np.arange(k), axis=axis)
    ret = attrs["ret_type"]
    indices = order.astype(attrs["dtype"])
    if ret == "indices":
        return indices
    values = np.take_along_axis(x, order, axis=axis)
    return (values, indices) if ret == "both" else values


register(
    "topk",
    num_inputs=1,
    type_rel=_topk_rel,
    kernel=_topk_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(
        AttrField("k", attr_int, 1, doc="How many elements; < 1 means all of the axis."),
        AttrField("axis", attr_int, -1, doc="The axis to select along."),
        AttrField(
            "ret_type",
            attr_choice("both", "values", "indices"),
            "both",
            doc='"both" (a (values, indices) tuple), "values" or "indices".',
        ),
        AttrField("is_ascend", attr_bool, False, doc="Select the smallest instead."),
        AttrField("dtype", attr_dtype, "int32", doc="The dtype of the indices."),
    ),
    doc="The k largest (or smallest) elements along ``axis``, sorted, and their indices.",
)


def topk(
    data: Any,
    k: int = 1,
    axis: int = -1,
    ret_type: str = "both",
    is_ascend: bool = False,
    dtype: Any = "int32",
) -> Call:
    """The ``k`` largest elements of ``data`` along ``axis`` (the smallest with
    ``is_ascend``), sorted, and/or their indices (``ret_type`` "both", "values", "indices").

    ``k < 1`` selects all. Equal elements come in index order. With ``ret_type="both"`` the
    call is a (values, indices) tuple; index it with ``[0]`` and ``[1]``.
    """
    return make_call(
        "topk", [data], ["data"], k=k, axis=axis, ret_type=ret_type, is_ascend=is_ascend,
        dtype=dtype,
    )
