"""Pooling over 1, 2 or 3 spatial axes, one N-d implementation: ``nn.max_pool1d``,
``nn.max_pool2d``, ``nn.max_pool3d``, ``nn.avg_pool1d``, ``nn.avg_pool2d``,
``nn.avg_pool3d``, and ``nn.global_avg_pool2d``.

Layouts ``NCW``/``NWC``, ``NCHW``/``NHWC`` and ``NCDHW``/``NDHWC``; ``padding``
as in the convolutions (every leading pad then every trailing one: top,
left, bottom, right in 2-D). With ``ceil_mode`` the output size rounds up,
but a last window starting in the trailing padding (past the input and its
leading padding) is dropped, as in PyTorch and ONNX; the part of the last
window that sticks out of the padded input is ignored. This differs from
TVM, which drops no window: a 5x5 input with pool size 1 and stride 3 in
ceil mode pools to 2x2 here but to 3x3 in TVM (see
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
from ._window import (
    AXIS_NAMES,
    SPATIAL,
    attr_padding,
    attr_spatial,
    data_layouts,
    out_sizes,
    reduce_taps,
)

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "global_avg_pool2d",
]


def _pool_data(arg_types: tuple[Type, ...], op: str, layout: str) -> TensorType:
    data = tensor_arg(arg_types[0], op, "data")
    check_dtype(data, NUMERIC_DTYPES, op, "data")
    check_rank(data, len(layout), op, "data", layout)
    return data


def _out(op: str, sizes: tuple[int, ...], attrs: Attrs) -> tuple[int, ...]:
    return out_sizes(op, sizes, attrs["pool_size"], attrs["strides"], attrs["dilation"],
                     attrs["padding"], attrs["ceil_mode"])


def _pool_rel(op: str, ndim: int):
    sp = SPATIAL[ndim]

    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        layout = attrs["layout"]
        data = _pool_data(arg_types, op, layout)
        d = layout_dims(data.shape, layout)
        spatial = _out(op, tuple(d[a] for a in sp), attrs)
        out = {"N": d["N"], "C": d["C"], **dict(zip(sp, spatial, strict=True))}
        return TensorType(tuple(out[c] for c in attrs["out_layout"] or layout), data.dtype)

    return rel


def _padded(x: np.ndarray, attrs: Attrs, out: tuple[int, ...], fill: Any) -> np.ndarray:
    """``x`` (N, C, spatial...) padded as the attributes say, plus whatever the ceil-mode
    windows need beyond that (filled with ``fill`` too)."""
    ndim = x.ndim - 2
    pad = attrs["padding"]
    widths = [(0, 0), (0, 0)]
    for i in range(ndim):
        need = (out[i] - 1) * attrs["strides"][i] + (attrs["pool_size"][i] - 1) \
            * attrs["dilation"][i] + 1
        widths.append((pad[i], max(pad[ndim + i], need - x.shape[2 + i] - pad[i])))
    return np.pad(x, widths, constant_values=fill)


def _geometry(attrs: Attrs, out: tuple[int, ...]) -> tuple:
    return attrs["pool_size"], attrs["strides"], attrs["dilation"], out


def _max_pool_kernel(op: str, ndim: int):
    canonical = "NC" + SPATIAL[ndim]

    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        data = args[0]
        x = to_layout(data, attrs["layout"], canonical)
        out = _out(op, x.shape[2:], attrs)
        dtype = data.dtype
        lowest = -np.inf if dtype.name in FLOAT_DTYPES else np.iinfo(dtype).min
        y = reduce_taps(_padded(x, attrs, out, lowest), *_geometry(attrs, out), np.maximum)
        return result(to_layout(y, canonical, attrs["out_layout"] or attrs["layout"]),
                      dtype.name)

    return kernel


def _avg_pool_kernel(op: str, ndim: int):
    canonical = "NC" + SPATIAL[ndim]

    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        data = args[0]
        x = to_layout(data, attrs["layout"], canonical)
        sizes = x.shape[2:]
        out = _out(op, sizes, attrs)
        # padded before widening: np.pad would fill an object array with numpy
        # ints, which overflow where Python ints would not
        xp = _padded(x, attrs, out, 0).astype(_sum_dtype(data.dtype.name), copy=False)
        pad = attrs["padding"]
        # 1 where an element counts toward the divisor, 0 elsewhere
        mask = np.zeros((1, 1) + xp.shape[2:], dtype=np.int64)
        if attrs["count_include_pad"]:
            inside = tuple(slice(0, pad[i] + sizes[i] + pad[ndim + i]) for i in range(ndim))
        else:
            inside = tuple(slice(pad[i], pad[i] + sizes[i]) for i in range(ndim))
        mask[(slice(None), slice(None), *inside)] = 1
        total = reduce_taps(xp, *_geometry(attrs, out), np.add)
        count = reduce_taps(mask, *_geometry(attrs, out), np.add)
        y = _average(total, count)
        return result(to_layout(y, canonical, attrs["out_layout"] or attrs["layout"]),
                      data.dtype)

    return kernel


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


def _pool_attrs(ndim: int, extra: tuple[AttrField, ...] = ()) -> tuple[AttrField, ...]:
    sp = SPATIAL[ndim]
    axes = ", ".join(AXIS_NAMES[a] for a in sp)
    first, last = data_layouts(ndim)
    if ndim == 2:  # the 2-D ops keep the converters their attributes always had
        spatial: Any = attr_pair
        padding: Any = attr_padding2d
    else:
        spatial, padding = (lambda m: attr_spatial(ndim, m)), attr_padding(ndim)
    return (
        AttrField("pool_size", spatial(1), (1,) * ndim, doc=f"({axes}) of the window."),
        AttrField("strides", spatial(1), (1,) * ndim, doc=f"({axes}) strides."),
        AttrField("dilation", spatial(1), (1,) * ndim, doc=f"({axes}) dilation."),
        AttrField("padding", padding, (0,) * (2 * ndim),
                  doc="Leading pads then trailing pads, one per axis."),
        AttrField("layout", attr_layout(first, last), first, doc="Data layout."),
        AttrField("out_layout", attr_layout("", first, last), "", doc='"": same as layout.'),
        AttrField("ceil_mode", attr_bool, False, doc="Round the output size up."),
        *extra,
    )


_COUNT_INCLUDE_PAD = AttrField("count_include_pad", attr_bool, False,
                               doc="Count padding in the divisor.")

for _ndim in (1, 2, 3):
    _max, _avg = f"nn.max_pool{_ndim}d", f"nn.avg_pool{_ndim}d"
    register(
        _max,
        num_inputs=1,
        type_rel=_pool_rel(_max, _ndim),
        kernel=_max_pool_kernel(_max, _ndim),
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
        attrs=_pool_attrs(_ndim),
        doc=f"{_ndim}-D max pooling (padding never wins the max).",
    )
    register(
        _avg,
        num_inputs=1,
        type_rel=_pool_rel(_avg, _ndim),
        kernel=_avg_pool_kernel(_avg, _ndim),
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
        attrs=_pool_attrs(_ndim, (_COUNT_INCLUDE_PAD,)),
        doc=f"{_ndim}-D average pooling.",
    )


def max_pool1d(
    data: Any,
    pool_size: Any = (1,),
    strides: Any = (1,),
    dilation: Any = (1,),
    padding: Any = (0,),
    layout: str = "NCW",
    out_layout: str = "",
    ceil_mode: bool = False,
) -> Call:
    """1-D max pooling of ``data`` (Relay's signature and attributes)."""
    return make_call("nn.max_pool1d", [data], ["data"], pool_size=pool_size, strides=strides,
                     dilation=dilation, padding=padding, layout=layout, out_layout=out_layout,
                     ceil_mode=ceil_mode)


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
    return make_call("nn.max_pool2d", [data], ["data"], pool_size=pool_size, strides=strides,
                     dilation=dilation, padding=padding, layout=layout, out_layout=out_layout,
                     ceil_mode=ceil_mode)


def max_pool3d(
    data: Any,
    pool_size: Any = (1, 1, 1),
    strides: Any = (1, 1, 1),
    dilation: Any = (1, 1, 1),
    padding: Any = (0, 0, 0),
    layout: str = "NCDHW",
    out_layout: str = "",
    ceil_mode: bool = False,
) -> Call:
    """3-D max pooling of ``data`` (Relay's signature and attributes)."""
    return make_call("nn.max_pool3d", [data], ["data"], pool_size=pool_size, strides=strides,
                     dilation=dilation, padding=padding, layout=layout, out_layout=out_layout,
                     ceil_mode=ceil_mode)


def avg_pool1d(
    data: Any,
    pool_size: Any = (1,),
    strides: Any = (1,),
    dilation: Any = (1,),
    padding: Any = (0,),
    layout: str = "NCW",
    out_layout: str = "",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> Call:
    """1-D average pooling of ``data`` (Relay's signature and attributes)."""
    return make_call("nn.avg_pool1d", [data], ["data"], pool_size=pool_size, strides=strides,
                     dilation=dilation, padding=padding, layout=layout, out_layout=out_layout,
                     ceil_mode=ceil_mode, count_include_pad=count_include_pad)


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
    return make_call("nn.avg_pool2d", [data], ["data"], pool_size=pool_size, strides=strides,
                     dilation=dilation, padding=padding, layout=layout, out_layout=out_layout,
                     ceil_mode=ceil_mode, count_include_pad=count_include_pad)


def avg_pool3d(
    data: Any,
    pool_size: Any = (1, 1, 1),
    strides: Any = (1, 1, 1),
    dilation: Any = (1, 1, 1),
    padding: Any = (0, 0, 0),
    layout: str = "NCDHW",
    out_layout: str = "",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> Call:
    """3-D average pooling of ``data`` (Relay's signature and attributes)."""
    return make_call("nn.avg_pool3d", [data], ["data"], pool_size=pool_size, strides=strides,
                     dilation=dilation, padding=padding, layout=layout, out_layout=out_layout,
                     ceil_mode=ceil_mode, count_include_pad=count_include_pad)


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
