"""Matrix products and bias: ``nn.dense``, ``nn.batch_matmul`` and ``nn.bias_add``.

``nn.dense`` computes ``data @ weight.T`` with ``weight`` of shape
(units, in_features), as in Relay. ``nn.batch_matmul`` defaults to
``x @ y^T`` (``transpose_b=True``), Relay's convention; a batch of 1 on
either side broadcasts. ``out_dtype`` "" means the input dtype; a wider
one (e.g. int8 inputs, int32 output) is where the products are summed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.attrs import Attrs
from ...ir.nodes import Call
from ...ir.op import AttrField, OpPattern, attr_bool, attr_int, attr_optional_dtype
from ...ir.types import TensorType, Type
from .._common import (
    NUMERIC_DTYPES,
    attr_optional_positive_int,
    broadcast_shapes,
    check_dtype,
    check_rank,
    check_same_dtype,
    dims_may_agree,
    make_call,
    normalize_axis,
    register,
    result,
    shapes_may_agree,
    tensor_arg,
)

__all__ = ["dense", "batch_matmul", "bias_add", "compute_dtype"]


def compute_dtype(in_dtype: str, out_dtype: str) -> str:
    """The dtype products are accumulated in: wide enough for input and output."""
    wide = np.result_type(in_dtype, out_dtype).name
    return "float32" if wide == "float16" else wide


def _dense_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "nn.dense", "data")
    weight = tensor_arg(arg_types[1], "nn.dense", "weight")
    dtype = check_same_dtype("nn.dense", ("data", data), ("weight", weight))
    check_dtype(data, NUMERIC_DTYPES, "nn.dense", "data")
    if data.ndim < 1:
        raise ValueError(f"nn.dense: data must have at least 1 dimension, got {data}")
    check_rank(weight, 2, "nn.dense", "weight (units, in_features)")
    units, in_features = weight.shape
    if data.shape[-1] != in_features and not dims_may_agree(data.shape[-1], in_features):
        raise ValueError(
            f"nn.dense: data has {data.shape[-1]} features (last axis of {data.shape}) but "
            f"weight {weight.shape} expects {in_features} (weight is (units, in_features))"
        )
    if attrs["units"] is not None and attrs["units"] != units and type(units) is int:
        raise ValueError(f"nn.dense: units={attrs['units']} but weight {weight.shape} has {units}")
    return TensorType(data.shape[:-1] + (units,), attrs["out_dtype"] or dtype)


def _dense_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, weight = args
    out = attrs["out_dtype"] or data.dtype.name
    wide = compute_dtype(data.dtype.name, out)
    return result(np.matmul(data.astype(wide, copy=False), weight.astype(wide, copy=False).T), out)


register(
    "nn.dense",
    num_inputs=2,
    type_rel=_dense_rel,
    kernel=_dense_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    attrs=(
        AttrField("units", attr_optional_positive_int, None, doc="Output features (checked)."),
        AttrField("out_dtype", attr_optional_dtype, "", doc='Output dtype; "": the input\'s.'),
    ),
    doc="Fully connected layer: data @ weight.T, weight of shape (units, in_features).",
)


def dense(data: Any, weight: Any, units: int | None = None, out_dtype: Any = "") -> Call:
    """``data @ weight.T`` (weight of shape (units, in_features))."""
    return make_call(
        "nn.dense", [data, weight], ["data", "weight"], units=units, out_dtype=out_dtype
    )


def _batch_matmul_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    op = "nn.batch_matmul"
    x = tensor_arg(arg_types[0], op, "x")
    y = tensor_arg(arg_types[1], op, "y")
    dtype = check_same_dtype(op, ("x", x), ("y", y))
    check_dtype(x, NUMERIC_DTYPES, op, "x")
    check_rank(x, 3, op, "x (batch, M, K)")
    check_rank(y, 3, op, "y (batch, N, K)" if attrs["transpose_b"] else "y (batch, K, N)")
    bx, m, kx = x.shape if not attrs["transpose_a"] else (x.shape[0], x.shape[2], x.shape[1])
    by, ky, n = (y.shape[0], y.shape[2], y.shape[1]) if attrs["transpose_b"] else y.shape
    if not dims_may_agree(kx, ky):
        raise ValueError(
            f"nn.batch_matmul: reduction dims differ: x {x.shape} gives K={kx} "
            f"(transpose_a={attrs['transpose_a']}), y {y.shape} gives K={ky} "
            f"(transpose_b={attrs['transpose_b']})"
        )
    if type(bx) is not int or type(by) is not int:
        # symbolic batch sizes broadcast by the common rules (n vs 1 -> n, n vs m -> n)
        (batch,) = broadcast_shapes(op, ("x batch", (bx,)), ("y batch", (by,)))
        return TensorType((batch, m, n), attrs["out_dtype"] or dtype)
    if bx != by and 1 not in (bx, by):
        raise ValueError(
            f"nn.batch_matmul: batch sizes {bx} (x) and {by} (y) differ and neither is 1"
        )
    batch = by if bx == 1 else bx
    return TensorType((batch, m, n), attrs["out_dtype"] or dtype)


def _batch_matmul_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    x, y = args
    out = attrs["out_dtype"] or x.dtype.name
    wide = compute_dtype(x.dtype.name, out)
    x = x.astype(wide, copy=False)
    y = y.astype(wide, copy=False)
    if attrs["transpose_a"]:
        x = x.transpose(0, 2, 1)
    if attrs["transpose_b"]:
        y = y.transpose(0, 2, 1)
    return result(np.matmul(x, y), out)


register(
    "nn.batch_matmul",
    num_inputs=2,
    type_rel=_batch_matmul_rel,
    kernel=_batch_matmul_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    attrs=(
        AttrField("out_dtype", attr_optional_dtype, "", doc='Output dtype; "": the input\'s.'),
        AttrField("transpose_a", attr_bool, False, doc="Use x as (batch, K, M)."),
        AttrField("transpose_b", attr_bool, True, doc="Use y as (batch, N, K) (the default)."),
    ),
    doc="Batched matrix product; by default x @ y^T. A batch of 1 broadcasts.",
)


def batch_matmul(
    x: Any, y: Any, out_dtype: Any = "", transpose_a: bool = False, transpose_b: bool = True
) -> Call:
    """Batched ``x @ y`` with optional transposes (default: ``x @ y^T``, as in Relay)."""
    return make_call(
        "nn.batch_matmul",
        [x, y],
        ["x", "y"],
        out_dtype=out_dtype,
        transpose_a=transpose_a,
        transpose_b=transpose_b,
    )


def _bias_add_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "nn.bias_add", "data")
    bias = tensor_arg(arg_types[1], "nn.bias_add", "bias")
    check_same_dtype("nn.bias_add", ("data", data), ("bias", bias))
    check_dtype(data, NUMERIC_DTYPES, "nn.bias_add", "data")
    if data.ndim == 0:
        raise ValueError(f"nn.bias_add: data must have at least one dimension, got {data}")
    axis = normalize_axis(attrs["axis"], data.ndim, "nn.bias_add")
    if not shapes_may_agree(bias.shape, (data.shape[axis],)):
        raise ValueError(
            f"nn.bias_add: bias must have shape ({data.shape[axis]},) to match axis {axis} of "
            f"data {data.shape}, got {bias.shape}"
        )
    return data


def _bias_add_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, bias = args
    axis = normalize_axis(attrs["axis"], data.ndim, "nn.bias_add")
    shape = [1] * data.ndim
    shape[axis] = bias.shape[0]
    return result(data + bias.reshape(shape), data.dtype)


register(
    "nn.bias_add",
    num_inputs=2,
    type_rel=_bias_add_rel,
    kernel=_bias_add_kernel,
    pattern=OpPattern.BROADCAST,
    attrs=(AttrField("axis", attr_int, 1, doc="The axis of data the bias runs along."),),
    doc="Add a 1-D bias along ``axis`` of data.",
)


def bias_add(data: Any, bias: Any, axis: int = 1) -> Call:
    """``data`` plus the 1-D ``bias`` broadcast along ``axis``."""
    return make_call("nn.bias_add", [data, bias], ["data", "bias"], axis=axis)
