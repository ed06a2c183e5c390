"""``nn.conv1d``, ``nn.conv2d``, ``nn.conv3d``: convolution (cross-correlation, as in
every DL framework) over 1, 2 or 3 spatial axes, one N-d implementation.

Layouts: data ``NCW``/``NWC``, ``NCHW``/``NHWC`` or ``NCDHW``/``NDHWC``; weight any
ordering of ``O`` (output channels), ``I`` (input channels per group) and the
spatial letters, such as ``OIHW``, ``HWIO`` or ``OHWI``. The letters mean the
same thing for every ``groups`` value, so a depthwise 2-D weight in ``HWOI``
is (kh, kw, channels * multiplier, 1); TVM's own depthwise ``HWOI``
convention (kh, kw, channels, multiplier) only agrees with this when the
multiplier is 1.

``padding`` is stored as every leading pad then every trailing one ((top,
left, bottom, right) in 2-D), ``strides`` and ``dilation`` one per spatial
axis: the builders accept Relay's shorter forms (see :mod:`._window`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ir.attrs import Attrs
from ...ir.dims import Dim
from ...ir.nodes import Call
from ...ir.op import AttrField, OpPattern, attr_optional_dtype
from ...ir.types import TensorType, Type
from .._common import (
    NUMERIC_DTYPES,
    attr_kernel_layout,
    attr_layout,
    attr_optional_pair,
    attr_optional_positive_int,
    attr_padding2d,
    attr_pair,
    attr_positive_int,
    check_dtype,
    check_rank,
    check_same_dtype,
    layout_dims,
    make_call,
    match_dims,
    register,
    result,
    tensor_arg,
    to_layout,
)
from ._window import (
    SPATIAL,
    attr_optional_spatial,
    attr_padding,
    attr_spatial,
    attr_weight_layout,
    data_layouts,
    exact_sum_dtype,
    out_sizes,
    static_window_shape,
    tap_slices,
    taps,
)
from .dense import compute_dtype

__all__ = ["conv1d", "conv2d", "conv3d"]

_OPS = {1: "nn.conv1d", 2: "nn.conv2d", 3: "nn.conv3d"}
# The largest column matrix (im2col) a convolution builds; past it, the kernel
# accumulates one product per kernel tap instead (slower, no extra memory).
_IM2COL_BYTES = 64 << 20


_INT = {int}


def check_groups(op: str, channels: Dim, w: dict[str, int], groups: int, where: str) -> None:
    """``ValueError`` unless ``channels`` data channels and an OI... weight fit ``groups``.

    Symbolic data channels are assumed to be the weight's (the run time checks them);
    the weight's own dims must be static (:func:`static_window_shape`)."""
    if type(channels) is not int:
        match_dims(op, f"data channels and weight input channels x groups {where}",
                   channels, w["I"] * groups)
        channels = w["I"] * groups
    if channels % groups:
        raise ValueError(
            f"{op}: data has {channels} channels, not divisible by groups {groups} {where}"
        )
    if w["O"] % groups:
        raise ValueError(
            f"{op}: weight has {w['O']} output channels, not divisible by groups {groups} {where}"
        )
    if w["I"] * groups != channels:
        raise ValueError(
            f"{op}: weight has {w['I']} input channels per group but data has {channels} "
            f"channels {where}; expected {channels // groups} per group"
        )


def _conv_rel(ndim: int):
    op, sp = _OPS[ndim], SPATIAL[ndim]

    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types[0], op, "data")
        weight = tensor_arg(arg_types[1], op, "weight")
        dtype = check_same_dtype(op, ("data", data), ("weight", weight))
        check_dtype(data, NUMERIC_DTYPES, op, "data")
        dl, kl = attrs["data_layout"], attrs["kernel_layout"]
        check_rank(data, ndim + 2, op, "data", dl)
        check_rank(weight, ndim + 2, op, "weight", kl)
        if not {*map(type, weight.shape)} <= _INT:
            static_window_shape(op, "weight", weight.shape, kl)
        d = layout_dims(data.shape, dl)
        w = layout_dims(weight.shape, kl)
        groups = attrs["groups"]
        check_groups(op, d["C"], w, groups,
                     f"(data_layout {dl}, kernel_layout {kl}, groups {groups})")
        if attrs["channels"] is not None and attrs["channels"] != w["O"]:
            raise ValueError(
                f"{op}: channels={attrs['channels']} but weight {weight.shape} ({kl}) has "
                f"{w['O']} output channels"
            )
        kernel = tuple(w[a] for a in sp)
        if attrs["kernel_size"] is not None and attrs["kernel_size"] != kernel:
            raise ValueError(
                f"{op}: kernel_size={attrs['kernel_size']} but weight {weight.shape} ({kl}) has "
                f"a {'x'.join(map(str, kernel))} kernel"
            )
        spatial = out_sizes(op, [d[a] for a in sp], kernel, attrs["strides"],
                            attrs["dilation"], attrs["padding"])
        out = {"N": d["N"], "C": w["O"], **dict(zip(sp, spatial, strict=True))}
        out_layout = attrs["out_layout"] or dl
        return TensorType(tuple(out[c] for c in out_layout), attrs["out_dtype"] or dtype)

    return rel


def conv_nd(
    x: np.ndarray,
    w: np.ndarray,
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
) -> np.ndarray:
    """The convolution of ``x`` (N, C, spatial...) with ``w`` (O, C / groups, kernel...),
    computed in their (common) dtype."""
    ndim = x.ndim - 2
    if any(padding):
        x = np.pad(x, ((0, 0), (0, 0), *zip(padding[:ndim], padding[ndim:], strict=True)))
    n, c, *padded = x.shape
    o, cg, *kernel = w.shape
    og = o // groups
    out = [(p - (k - 1) * d - 1) // s + 1
           for p, k, d, s in zip(padded, kernel, dilation, strides, strict=True)]
    size = math.prod(out)
    xg = x.reshape(n, groups, cg, *padded)
    lead = (slice(None),) * 3
    k = math.prod(kernel)
    if n * c * k * size * x.itemsize <= _IM2COL_BYTES:
        # im2col: each tap's strided slice of the input is copied into one column
        # block, then a single matrix product per group; (groups, og, cg * k) @
        # (n, groups, cg * k, positions) covers grouped and depthwise weights alike.
        cols = np.empty((n, groups, cg, k, *out), dtype=x.dtype)
        for t, tap in enumerate(taps(kernel)):
            cols[:, :, :, t] = xg[lead + tap_slices(tap, strides, dilation, out)]
        acc = w.reshape(groups, og, cg * k) @ cols.reshape(n, groups, cg * k, size)
        return acc.reshape(n, o, *out)
    # Too large for one column matrix: one product per kernel tap, accumulated.
    wg = w.reshape(groups, og, cg, *kernel)
    acc = np.zeros((n, groups, og, size), dtype=x.dtype)
    for tap in taps(kernel):
        patch = xg[lead + tap_slices(tap, strides, dilation, out)].reshape(n, groups, cg, size)
        acc += wg[lead + tap] @ patch
    return acc.reshape(n, o, *out)


def _conv_kernel(ndim: int):
    sp = SPATIAL[ndim]
    canonical_data, canonical_weight = "NC" + sp, "OI" + sp

    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        data, weight = args
        out_dtype = attrs["out_dtype"] or data.dtype.name
        wide = exact_sum_dtype(compute_dtype(data.dtype.name, out_dtype))
        x = to_layout(data, attrs["data_layout"], canonical_data).astype(wide, copy=False)
        w = to_layout(weight, attrs["kernel_layout"], canonical_weight).astype(wide, copy=False)
        out = conv_nd(x, w, attrs["strides"], attrs["padding"], attrs["dilation"],
                      attrs["groups"])
        out = to_layout(out, canonical_data, attrs["out_layout"] or attrs["data_layout"])
        return result(out, out_dtype)

    return kernel


def _conv_attrs(ndim: int) -> tuple[AttrField, ...]:
    if ndim == 2:  # nn.conv2d keeps the converters its attributes always had
        pair, optional_pair, padding = attr_pair, attr_optional_pair, attr_padding2d
        weight_layout: Any = attr_kernel_layout
    else:
        pair, optional_pair = (lambda m: attr_spatial(ndim, m)), attr_optional_spatial(ndim)
        padding, weight_layout = attr_padding(ndim), attr_weight_layout(ndim)
    sp = SPATIAL[ndim]
    axes = ", ".join({"D": "depth", "H": "height", "W": "width"}[a] for a in sp)
    first, last = data_layouts(ndim)
    return (
        AttrField("strides", pair(1), (1,) * ndim, doc=f"({axes}) strides."),
        AttrField("padding", padding, (0,) * (2 * ndim),
                  doc="Leading pads then trailing pads, one per axis."),
        AttrField("dilation", pair(1), (1,) * ndim, doc=f"({axes}) dilation."),
        AttrField("groups", attr_positive_int, 1, doc="Number of channel groups."),
        AttrField("channels", attr_optional_positive_int, None, doc="Output channels (checked)."),
        AttrField("kernel_size", optional_pair, None, doc=f"({axes}) kernel size (checked)."),
        AttrField("data_layout", attr_layout(first, last), first, doc="Data layout."),
        AttrField("kernel_layout", weight_layout, "OI" + sp, doc="Weight layout."),
        AttrField(
            "out_layout", attr_layout("", first, last), "", doc='"": same as data_layout.'
        ),
        AttrField("out_dtype", attr_optional_dtype, "", doc='"": the input dtype.'),
    )


for _ndim in (1, 2, 3):
    register(
        _OPS[_ndim],
        num_inputs=2,
        type_rel=_conv_rel(_ndim),
        kernel=_conv_kernel(_ndim),
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
        attrs=_conv_attrs(_ndim),
        doc=f"{_ndim}-D convolution with strides, padding, dilation and groups.",
    )


def _make(ndim: int, data: Any, weight: Any, **attrs: Any) -> Call:
    return make_call(_OPS[ndim], [data, weight], ["data", "weight"], **attrs)


def conv1d(
    data: Any,
    weight: Any,
    strides: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCW",
    kernel_layout: str = "OIW",
    out_layout: str = "",
    out_dtype: Any = "",
) -> Call:
    """1-D convolution of ``data`` (N, C, W) with ``weight`` (O, C / groups, KW) (Relay's
    signature and attributes).

    ``padding`` is 1 int (both sides) or 2 (left, right); ``channels`` and
    ``kernel_size``, when given, must agree with the weight.
    """
    return _make(1, data, weight, strides=strides, padding=padding, dilation=dilation,
                 groups=groups, channels=channels, kernel_size=kernel_size,
                 data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
                 out_dtype=out_dtype)


def conv2d(
    data: Any,
    weight: Any,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str = "",
    out_dtype: Any = "",
) -> Call:
    """2-D convolution of ``data`` with ``weight`` (Relay's signature and attributes).

    ``padding`` is 1, 2 (height, width) or 4 (top, left, bottom, right) ints;
    ``channels`` and ``kernel_size``, when given, must agree with the weight.
    """
    return _make(2, data, weight, strides=strides, padding=padding, dilation=dilation,
                 groups=groups, channels=channels, kernel_size=kernel_size,
                 data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
                 out_dtype=out_dtype)


def conv3d(
    data: Any,
    weight: Any,
    strides: Any = (1, 1, 1),
    padding: Any = (0, 0, 0),
    dilation: Any = (1, 1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCDHW",
    kernel_layout: str = "OIDHW",
    out_layout: str = "",
    out_dtype: Any = "",
) -> Call:
    """3-D convolution of ``data`` (N, C, D, H, W) with ``weight`` (O, C / groups, KD, KH,
    KW) (Relay's signature and attributes).

    ``padding`` is 1, 3 (depth, height, width) or 6 (front, top, left, back, bottom,
    right) ints; ``channels`` and ``kernel_size``, when given, must agree with the weight.
    """
    return _make(3, data, weight, strides=strides, padding=padding, dilation=dilation,
                 groups=groups, channels=channels, kernel_size=kernel_size,
                 data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
                 out_dtype=out_dtype)
