"""``nn.conv2d_transpose``: the transposed 2-D convolution (ONNX ConvTranspose).

Each input pixel scatters a copy of the kernel, scaled by its value, into the
output at ``stride`` spacing; overlapping copies add up. It is the gradient of
``nn.conv2d`` with respect to its input, and the usual upsampling layer.

Layouts: data ``NCHW`` or ``NHWC``; weight any ordering of ``I`` (input
channels, all of them), ``O`` (output channels per group), ``H``, ``W``; the
default ``IOHW`` is ONNX's and PyTorch's (C, M / groups, kH, kW).

Along each spatial axis the output size is
``stride * (in - 1) + output_padding + dilation * (k - 1) + 1 - pad_before - pad_after``:
``padding`` (top, left, bottom, right) crops the full result and
``output_padding`` adds rows/columns at the bottom/right, as in ONNX.
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
from .dense import compute_dtype

__all__ = ["conv2d_transpose"]

_OP = "nn.conv2d_transpose"


def _out_size(
    axis: str, size: int, kernel: int, stride: int, dilation: int, extra: int, crop: int
) -> int:
    full = stride * (size - 1) + dilation * (kernel - 1) + 1 + extra
    if full - crop < 1:
        raise ValueError(
            f"{_OP}: the output would have {full - crop} elements along {axis}: the full "
            f"result has {full} (input {size}, kernel {kernel}, stride {stride}, dilation "
            f"{dilation}, output_padding {extra}) but padding removes {crop}"
        )
    return full - crop


def _conv2d_transpose_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
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
    if w["I"] != d["C"]:
        raise ValueError(
            f"{_OP}: weight {weight.shape} has {w['I']} input channels (I) but data has "
            f"{d['C']} channels {where}"
        )
    if d["C"] % groups:
        raise ValueError(
            f"{_OP}: data has {d['C']} channels, not divisible by groups {groups} {where}"
        )
    channels = w["O"] * groups
    if attrs["channels"] is not None and attrs["channels"] != channels:
        raise ValueError(
            f"{_OP}: channels={attrs['channels']} but weight {weight.shape} ({kl}) gives "
            f"{channels} output channels ({w['O']} per group x groups {groups})"
        )
    if attrs["kernel_size"] is not None and attrs["kernel_size"] != (w["H"], w["W"]):
        raise ValueError(
            f"{_OP}: kernel_size={attrs['kernel_size']} but weight {weight.shape} ({kl}) has "
            f"a {w['H']}x{w['W']} kernel"
        )
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilation"]
    oph, opw = attrs["output_padding"]
    pt, pl, pb, pr = attrs["padding"]
    oh = _out_size("height", d["H"], w["H"], sh, dh, oph, pt + pb)
    ow = _out_size("width", d["W"], w["W"], sw, dw, opw, pl + pr)
    out = {"N": d["N"], "C": channels, "H": oh, "W": ow}
    out_layout = attrs["out_layout"] or dl
    return TensorType(tuple(out[c] for c in out_layout), attrs["out_dtype"] or dtype)


def _conv2d_transpose_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, weight = args
    out_dtype = attrs["out_dtype"] or data.dtype.name
    wide = compute_dtype(data.dtype.name, out_dtype)
    x = to_layout(data, attrs["data_layout"], "NCHW").astype(wide, copy=False)
    w = to_layout(weight, attrs["kernel_layout"], "IOHW").astype(wide, copy=False)
    (sh, sw), (dh, dw), groups = attrs["strides"], attrs["dilation"], attrs["groups"]
    oph, opw = attrs["output_padding"]
    pt, pl, pb, pr = attrs["padding"]
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = c // groups
    full_h = sh * (h - 1) + dh * (kh - 1) + 1 + oph
    full_w = sw * (wd - 1) + dw * (kw - 1) + 1 + opw
    # One matrix product per kernel tap, scattered into a strided slice of the
    # uncropped output: (groups, og, cg) @ (n, groups, cg, h*w) covers grouped
    # and depthwise weights alike.
    xg = x.reshape(n, groups, cg, h * wd)
    wg = w.reshape(groups, cg, og, kh, kw)
    full = np.zeros((n, groups, og, full_h, full_w), dtype=wide)
    for i in range(kh):
        rows = slice(i * dh, i * dh + sh * (h - 1) + 1, sh)
        for j in range(kw):
            cols = slice(j * dw, j * dw + sw * (wd - 1) + 1, sw)
            tap = np.swapaxes(wg[:, :, :, i, j], 1, 2) @ xg
            full[:, :, :, rows, cols] += tap.reshape(n, groups, og, h, wd)
    out = full.reshape(n, groups * og, full_h, full_w)[:, :, pt : full_h - pb, pl : full_w - pr]
    out = to_layout(out, "NCHW", attrs["out_layout"] or attrs["data_layout"])
    return result(out, out_dtype)


register(
    _OP,
    num_inputs=2,
    type_rel=_conv2d_transpose_rel,
    kernel=_conv2d_transpose_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    attrs=(
        AttrField("strides", attr_pair(1), (1, 1), doc="(height, width) strides."),
        AttrField(
            "padding", attr_padding2d, (0, 0, 0, 0), doc="(top, left, bottom, right) cropped."
        ),
        AttrField("output_padding", attr_pair(0), (0, 0), doc="(height, width) added at the end."),
        AttrField("dilation", attr_pair(1), (1, 1), doc="(height, width) dilation."),
        AttrField("groups", attr_positive_int, 1, doc="Number of channel groups."),
        AttrField("channels", attr_optional_positive_int, None, doc="Output channels (checked)."),
        AttrField("kernel_size", attr_optional_pair, None, doc="(kh, kw) (checked)."),
        AttrField("data_layout", attr_layout("NCHW", "NHWC"), "NCHW", doc="Data layout."),
        AttrField(
            "kernel_layout", attr_kernel_layout, "IOHW", doc="Weight layout (I: input channels)."
        ),
        AttrField(
            "out_layout", attr_layout("", "NCHW", "NHWC"), "", doc='"": same as data_layout.'
        ),
        AttrField("out_dtype", attr_optional_dtype, "", doc='"": the input dtype.'),
    ),
    doc="Transposed 2-D convolution with strides, padding, output_padding, dilation and "
    "groups (ONNX ConvTranspose).",
)


def conv2d_transpose(
    data: Any,
    weight: Any,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    output_padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "IOHW",
    out_layout: str = "",
    out_dtype: Any = "",
) -> Call:
    """Transposed 2-D convolution of ``data`` with ``weight`` (Relay's signature).

    The weight is (in_channels, out_channels / groups, kh, kw) in the default ``IOHW``
    layout. ``padding`` (1, 2 or 4 ints, stored as top, left, bottom, right) is cropped
    from the full result and ``output_padding`` (height, width) extends it at the
    bottom/right, so each output side is
    ``stride * (in - 1) + output_padding + dilation * (k - 1) + 1 - pad_before - pad_after``.
    """
    return make_call(
        _OP,
        [data, weight],
        ["data", "weight"],
        strides=strides,
        padding=padding,
        output_padding=output_padding,
        dilation=dilation,
        groups=groups,
        channels=channels,
        kernel_size=kernel_size,
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_layout=out_layout,
        out_dtype=out_dtype,
    )
