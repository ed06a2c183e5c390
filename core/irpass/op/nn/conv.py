"""``nn.conv2d``: 2-D convolution (cross-correlation, as in every DL framework).

Layouts: data ``NCHW`` or ``NHWC``; weight any ordering of ``O`` (output
channels), ``I`` (input channels per group), ``H``, ``W`` such as ``OIHW``,
``HWIO`` or ``OHWI``. The letters mean the same thing for every ``groups``
value, so a depthwise weight in ``HWOI`` is (kh, kw, channels * multiplier,
1); TVM's own depthwise ``HWOI`` convention (kh, kw, channels, multiplier)
only agrees with this when the multiplier is 1.

``padding`` is stored as (top, left, bottom, right), ``strides`` and
``dilation`` as (height, width): the builder accepts Relay's shorter forms.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.attrs import Attrs
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
    register,
    result,
    tensor_arg,
    to_layout,
)
from ._window import tap_slices, window_out_size
from .dense import compute_dtype

__all__ = ["conv2d"]

_OP = "nn.conv2d"


def _conv2d_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], _OP, "data")
    weight = tensor_arg(arg_types[1], _OP, "weight")
    dtype = check_same_dtype(_OP, ("data", data), ("weight", weight))
    check_dtype(data, NUMERIC_DTYPES, _OP, "data")
    dl, kl = attrs["data_layout"], attrs["kernel_layout"]
    check_rank(data, 4, _OP, "data", dl)
    check_rank(weight, 4, _OP, "weight", kl)
    d = layout_dims(data.shape, dl)
    w = layout_dims(weight.shape, kl)
    groups = attrs["groups"]
    where = f"(data_layout {dl}, kernel_layout {kl}, groups {groups})"
    if d["C"] % groups:
        raise ValueError(
            f"{_OP}: data has {d['C']} channels, not divisible by groups {groups} {where}"
        )
    if w["O"] % groups:
        raise ValueError(
            f"{_OP}: weight has {w['O']} output channels, not divisible by groups {groups} {where}"
        )
    if w["I"] * groups != d["C"]:
        raise ValueError(
            f"{_OP}: weight has {w['I']} input channels per group but data has {d['C']} "
            f"channels {where}; expected {d['C'] // groups} per group"
        )
    if attrs["channels"] is not None and attrs["channels"] != w["O"]:
        raise ValueError(
            f"{_OP}: channels={attrs['channels']} but weight {weight.shape} ({kl}) has "
            f"{w['O']} output channels"
        )
    if attrs["kernel_size"] is not None and attrs["kernel_size"] != (w["H"], w["W"]):
        raise ValueError(
            f"{_OP}: kernel_size={attrs['kernel_size']} but weight {weight.shape} ({kl}) has "
            f"a {w['H']}x{w['W']} kernel"
        )
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilation"]
    pt, pl, pb, pr = attrs["padding"]
    oh = window_out_size(_OP, "height", d["H"], w["H"], sh, dh, pt, pb)
    ow = window_out_size(_OP, "width", d["W"], w["W"], sw, dw, pl, pr)
    out = {"N": d["N"], "C": w["O"], "H": oh, "W": ow}
    out_layout = attrs["out_layout"] or dl
    return TensorType(tuple(out[c] for c in out_layout), attrs["out_dtype"] or dtype)


def _conv2d_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, weight = args
    out_dtype = attrs["out_dtype"] or data.dtype.name
    wide = compute_dtype(data.dtype.name, out_dtype)
    x = to_layout(data, attrs["data_layout"], "NCHW").astype(wide, copy=False)
    w = to_layout(weight, attrs["kernel_layout"], "OIHW").astype(wide, copy=False)
    pt, pl, pb, pr = attrs["padding"]
    if pt or pl or pb or pr:
        x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    (sh, sw), (dh, dw), groups = attrs["strides"], attrs["dilation"], attrs["groups"]
    n, c, hp, wp = x.shape
    o, cg, kh, kw = w.shape
    og = o // groups
    oh = (hp - (kh - 1) * dh - 1) // sh + 1
    ow = (wp - (kw - 1) * dw - 1) // sw + 1
    # One matrix product per kernel tap, accumulated: each tap reads a strided
    # slice of the input, which is much cheaper than materializing im2col.
    # matmul broadcasts (groups, og, cg) @ (n, groups, cg, oh*ow), so grouped
    # and depthwise convolutions take the same path.
    xg = x.reshape(n, groups, cg, hp, wp)
    wg = w.reshape(groups, og, cg, kh, kw)
    acc = np.zeros((n, groups, og, oh * ow), dtype=wide)
    for i in range(kh):
        for j in range(kw):
            rows, cols = tap_slices((i, j), (sh, sw), (dh, dw), (oh, ow))
            patch = xg[:, :, :, rows, cols].reshape(n, groups, cg, oh * ow)
            acc += wg[:, :, :, i, j] @ patch
    out = acc.reshape(n, o, oh, ow)
    out = to_layout(out, "NCHW", attrs["out_layout"] or attrs["data_layout"])
    return result(out, out_dtype)


register(
    _OP,
    num_inputs=2,
    type_rel=_conv2d_rel,
    kernel=_conv2d_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    attrs=(
        AttrField("strides", attr_pair(1), (1, 1), doc="(height, width) strides."),
        AttrField("padding", attr_padding2d, (0, 0, 0, 0), doc="(top, left, bottom, right)."),
        AttrField("dilation", attr_pair(1), (1, 1), doc="(height, width) dilation."),
        AttrField("groups", attr_positive_int, 1, doc="Number of channel groups."),
        AttrField("channels", attr_optional_positive_int, None, doc="Output channels (checked)."),
        AttrField("kernel_size", attr_optional_pair, None, doc="(kh, kw) (checked)."),
        AttrField("data_layout", attr_layout("NCHW", "NHWC"), "NCHW", doc="Data layout."),
        AttrField("kernel_layout", attr_kernel_layout, "OIHW", doc="Weight layout."),
        AttrField(
            "out_layout", attr_layout("", "NCHW", "NHWC"), "", doc='"": same as data_layout.'
        ),
        AttrField("out_dtype", attr_optional_dtype, "", doc='"": the input dtype.'),
    ),
    doc="2-D convolution with strides, padding, dilation and groups.",
)


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
    return make_call(
        _OP,
        [data, weight],
        ["data", "weight"],
        strides=strides,
        padding=padding,
        dilation=dilation,
        groups=groups,
        channels=channels,
        kernel_size=kernel_size,
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_layout=out_layout,
        out_dtype=out_dtype,
    )
