"""2-D pooling: ``nn.max_pool2d``, ``nn.avg_pool2d`` and ``nn.global_avg_pool2d``.

Layouts ``NCHW`` and ``NHWC``; ``padding`` as in ``nn.conv2d`` (1, 2 or 4
ints, stored as top, left, bottom, right). With ``ceil_mode`` the output
size rounds up, but a last window starting in the trailing padding (past
the input and its leading padding) is dropped, as in PyTorch and ONNX; the
part of the last window that sticks out of the padded input is ignored.
This differs from TVM, which drops no window: a 5x5 input with pool size 1
and stride 3 in ceil mode pools to 2x2 here but to 3x3 in TVM (see
:mod:`irpass.op.nn._window`).

Average pooling divides by the number of window elements that lie in the
input (``count_include_pad=False``) or in the padded input
(``count_include_pad=True``; the overhang of a ceil-mode window is never
counted), as PyTorch does. Integer averages are exact: window sums are
taken in int64 (in Python integers for int64 and uint64 data, which int64
could overflow) and divided with truncation toward zero. Float16 sums are
taken in float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.attrs import Attrs
from ...ir.nodes import Call
from ...ir.op import AttrField, OpPattern, attr_bool
from ...ir.types import TensorType, Type
from .._common import (
    FLOAT_DTYPES,
    NUMERIC_DTYPES,
    accumulate_dtype,
    attr_layout,
    attr_padding2d,
    attr_pair,
    check_dtype,
    check_rank,
    layout_dims,
    make_call,
    register,
    result,
    tensor_arg,
    to_layout,
)
from ._window import reduce_taps, window_out_size

__all__ = ["max_pool2d", "avg_pool2d", "global_avg_pool2d"]


def _pool_data(arg_types: tuple[Type, ...], op: str, layout: str) -> TensorType:
    data = tensor_arg(arg_types[0], op, "data")
    check_dtype(data, NUMERIC_DTYPES, op, "data")
    check_rank(data, 4, op, "data", layout)
    return data


def _out_hw(op: str, h: int, w: int, attrs: Attrs) -> tuple[int, int]:
    (kh, kw), (sh, sw), (dh, dw) = attrs["pool_size"], attrs["strides"], attrs["dilation"]
    pt, pl, pb, pr = attrs["padding"]
    ceil = attrs["ceil_mode"]
    return (
        window_out_size(op, "height", h, kh, sh, dh, pt, pb, ceil),
        window_out_size(op, "width", w, kw, sw, dw, pl, pr, ceil),
    )


def _pool_rel(op: str):
    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        layout = attrs["layout"]
        data = _pool_data(arg_types, op, layout)
        d = layout_dims(data.shape, layout)
        oh, ow = _out_hw(op, d["H"], d["W"], attrs)
        out = {"N": d["N"], "C": d["C"], "H": oh, "W": ow}
        return TensorType(tuple(out[c] for c in attrs["out_layout"] or layout), data.dtype)

    return rel


def _padded(x: np.ndarray, attrs: Attrs, out_hw: tuple[int, int], fill: Any) -> np.ndarray:
    """``x`` (NCHW) padded as the attributes say, plus whatever the ceil-mode
    windows need beyond that (filled with ``fill`` too)."""
    (kh, kw), (sh, sw), (dh, dw) = attrs["pool_size"], attrs["strides"], attrs["dilation"]
    pt, pl, pb, pr = attrs["padding"]
    h, w = x.shape[2:]
    need_h = (out_hw[0] - 1) * sh + (kh - 1) * dh + 1
    need_w = (out_hw[1] - 1) * sw + (kw - 1) * dw + 1
    bottom = max(pb, need_h - h - pt)
    right = max(pr, need_w - w - pl)
    return np.pad(x, ((0, 0), (0, 0), (pt, bottom), (pl, right)), constant_values=fill)


def _max_pool_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data = args[0]
    x = to_layout(data, attrs["layout"], "NCHW")
    out_hw = _out_hw("nn.max_pool2d", x.shape[2], x.shape[3], attrs)
    dtype = data.dtype
    lowest = -np.inf if dtype.name in FLOAT_DTYPES else np.iinfo(dtype).min
    xp = _padded(x, attrs, out_hw, lowest)
    geometry = (attrs["pool_size"], attrs["strides"], attrs["dilation"], out_hw)
    out = reduce_taps(xp, *geometry, np.maximum)
    return result(to_layout(out, "NCHW", attrs["out_layout"] or attrs["layout"]), dtype.name)


def _avg_pool_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data = args[0]
    x = to_layout(data, attrs["layout"], "NCHW")
    n, c, h, w = x.shape
    out_hw = _out_hw("nn.avg_pool2d", h, w, attrs)
    # padded before widening: np.pad would fill an object array with numpy
    # ints, which overflow where Python ints would not
    xp = _padded(x, attrs, out_hw, 0).astype(_sum_dtype(data.dtype.name), copy=False)
    pt, pl, pb, pr = attrs["padding"]
    # 1 where an element counts toward the divisor, 0 elsewhere
    mask = np.zeros((1, 1) + xp.shape[2:], dtype=np.int64)
    if attrs["count_include_pad"]:
        mask[:, :, : pt + h + pb, : pl + w + pr] = 1
    else:
        mask[:, :, pt : pt + h, pl : pl + w] = 1
    geometry = (attrs["pool_size"], attrs["strides"], attrs["dilation"], out_hw)
    total = reduce_taps(xp, *geometry, np.add)
    count = reduce_taps(mask, *geometry, np.add)
    out = _average(total, count)
    return result(to_layout(out, "NCHW", attrs["out_layout"] or attrs["layout"]), data.dtype)


def _sum_dtype(dtype: str) -> Any:
    """The dtype window sums of ``dtype`` data are exact in (or close, for floats)."""
    if dtype in FLOAT_DTYPES:
        return accumulate_dtype(dtype)
    # int64 holds any sum of < 2**31 values of 32 bits or less; wider data
    # needs Python's unbounded integers.
    return object if dtype in ("int64", "uint64") else np.int64


def _average(total: np.ndarray, count: np.ndarray | int) -> np.ndarray:
    """``total / count``, truncated toward zero for integer sums; 0 where ``count`` is 0
    (a window holding only padding)."""
    count = np.asarray(count)
    divisor = np.maximum(count, 1)
    if total.dtype.kind == "f":
        return np.where(count > 0, total / divisor, 0)
    if total.dtype == object:
        divisor = divisor.astype(object)  # Python ints: no int64 overflow in the division
    quotient = np.where(total < 0, -((-total) // divisor), total // divisor)
    return np.where(count > 0, quotient, 0)


def _pool_attrs(extra: tuple[AttrField, ...] = ()) -> tuple[AttrField, ...]:
    return (
        AttrField("pool_size", attr_pair(1), (1, 1), doc="(height, width) of the window."),
        AttrField("strides", attr_pair(1), (1, 1), doc="(height, width) strides."),
        AttrField("dilation", attr_pair(1), (1, 1), doc="(height, width) dilation."),
        AttrField("padding", attr_padding2d, (0, 0, 0, 0), doc="(top, left, bottom, right)."),
        AttrField("layout", attr_layout("NCHW", "NHWC"), "NCHW", doc="Data layout."),
        AttrField("out_layout", attr_layout("", "NCHW", "NHWC"), "", doc='"": same as layout.'),
        AttrField("ceil_mode", attr_bool, False, doc="Round the output size up."),
        *extra,
    )


register(
    "nn.max_pool2d",
    num_inputs=1,
    type_rel=_pool_rel("nn.max_pool2d"),
    kernel=_max_pool_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    attrs=_pool_attrs(),
    doc="2-D max pooling (padding never wins the max).",
)
register(
    "nn.avg_pool2d",
    num_inputs=1,
    type_rel=_pool_rel("nn.avg_pool2d"),
    kernel=_avg_pool_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    attrs=_pool_attrs(
        (AttrField("count_include_pad", attr_bool, False, doc="Count padding in the divisor."),)
    ),
    doc="2-D average pooling.",
)


def max_pool2d(
    data: Any,
    pool_size: Any = (1, 1),
    strides: Any = (1, 1),
    dilation: Any = (1, 1),
    padding: Any = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
) -> Call:
    """2-D max pooling of ``data`` (Relay's signature and attributes)."""
    return make_call(
        "nn.max_pool2d",
        [data],
        ["data"],
        pool_size=pool_size,
        strides=strides,
        dilation=dilation,
        padding=padding,
        layout=layout,
        out_layout=out_layout,
        ceil_mode=ceil_mode,
    )


def avg_pool2d(
    data: Any,
    pool_size: Any = (1, 1),
    strides: Any = (1, 1),
    dilation: Any = (1, 1),
    padding: Any = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> Call:
    """2-D average pooling of ``data`` (Relay's signature and attributes)."""
    return make_call(
        "nn.avg_pool2d",
        [data],
        ["data"],
        pool_size=pool_size,
        strides=strides,
        dilation=dilation,
        padding=padding,
        layout=layout,
        out_layout=out_layout,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
    )


def _global_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    layout = attrs["layout"]
    data = _pool_data(arg_types, "nn.global_avg_pool2d", layout)
    d = layout_dims(data.shape, layout)
    if d["H"] == 0 or d["W"] == 0:
        raise ValueError(f"nn.global_avg_pool2d: data {data} has an empty spatial axis")
    out = {"N": d["N"], "C": d["C"], "H": 1, "W": 1}
    return TensorType(tuple(out[c] for c in attrs["out_layout"] or layout), data.dtype)


def _global_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data = args[0]
    x = to_layout(data, attrs["layout"], "NCHW")
    total = np.sum(x, axis=(2, 3), keepdims=True, dtype=_sum_dtype(data.dtype.name))
    out = _average(total, x.shape[2] * x.shape[3])
    return result(to_layout(out, "NCHW", attrs["out_layout"] or attrs["layout"]), data.dtype)


register(
    "nn.global_avg_pool2d",
    num_inputs=1,
    type_rel=_global_rel,
    kernel=_global_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    attrs=(
        AttrField("layout", attr_layout("NCHW", "NHWC"), "NCHW", doc="Data layout."),
        AttrField("out_layout", attr_layout("", "NCHW", "NHWC"), "", doc='"": same as layout.'),
    ),
    doc="The mean over the whole height and width (output H = W = 1).",
)


def global_avg_pool2d(data: Any, layout: str = "NCHW", out_layout: str = "") -> Call:
    """The mean of ``data`` over its spatial axes, keeping them with size 1."""
    return make_call("nn.global_avg_pool2d", [data], ["data"], layout=layout, out_layout=out_layout)
