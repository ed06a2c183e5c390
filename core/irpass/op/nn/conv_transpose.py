"""``nn.conv1d_transpose``, ``nn.conv2d_transpose``, ``nn.conv3d_transpose``: the
transposed convolution (ONNX ConvTranspose) over 1, 2 or 3 spatial axes.

Each input element scatters a copy of the kernel, scaled by its value, into the
output at ``stride`` spacing; overlapping copies add up. It is the gradient of
the convolution with respect to its input, and the usual upsampling layer.

Layouts: data ``NCW``/``NWC``, ``NCHW``/``NHWC`` or ``NCDHW``/``NDHWC``; weight any
ordering of ``I`` (input channels, all of them), ``O`` (output channels per
group) and the spatial letters; the defaults ``IOW``, ``IOHW``, ``IODHW`` are
ONNX's and PyTorch's (C, M / groups, k...).

Along each spatial axis the output size is
``stride * (in - 1) + output_padding + dilation * (k - 1) + 1 - pad_before - pad_after``:
``padding`` (every leading pad, then every trailing one) crops the full result and
``output_padding`` adds elements at the end of each axis, as in ONNX.
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
    dims_may_agree,
    known_gt,
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
    attr_optional_spatial,
    attr_padding,
    attr_spatial,
    attr_weight_layout,
    data_layouts,
    exact_sum_dtype,
    static_window_shape,
    taps,
)
from .dense import compute_dtype

__all__ = ["conv1d_transpose", "conv2d_transpose", "conv3d_transpose"]

_OPS = {1: "nn.conv1d_transpose", 2: "nn.conv2d_transpose", 3: "nn.conv3d_transpose"}
# The largest column matrix the kernel builds; past it, one product per kernel tap.
_COL_BYTES = 64 << 20


_INT = {int}


def _out_size(
    op: str, axis: str, size: Dim, kernel: int, stride: int, dilation: int, extra: int,
    crop: int,
) -> Dim:
    full = stride * (size - 1) + dilation * (kernel - 1) + 1 + extra
    # a symbolic size: only a provably empty output is an error (the run time checks it)
    if known_gt(1, full - crop):
        raise ValueError(
            f"{op}: the output would have {full - crop} elements along {axis}: the full "
            f"result has {full} (input {size}, kernel {kernel}, stride {stride}, dilation "
            f"{dilation}, output_padding {extra}) but padding removes {crop}"
        )
    return full - crop


def _conv_transpose_rel(ndim: int):
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
        where = f"(data_layout {dl}, kernel_layout {kl}, groups {groups})"
        if type(d["C"]) is not int and dims_may_agree(d["C"], w["I"]):
            d["C"] = w["I"]  # symbolic data channels: the weight's, checked at run time
        if w["I"] != d["C"]:
            raise ValueError(
                f"{op}: weight {weight.shape} has {w['I']} input channels (I) but data has "
                f"{d['C']} channels {where}"
            )
        if d["C"] % groups:
            raise ValueError(
                f"{op}: data has {d['C']} channels, not divisible by groups {groups} {where}"
            )
        channels = w["O"] * groups
        if attrs["channels"] is not None and attrs["channels"] != channels:
            raise ValueError(
                f"{op}: channels={attrs['channels']} but weight {weight.shape} ({kl}) gives "
                f"{channels} output channels ({w['O']} per group x groups {groups})"
            )
        kernel = tuple(w[a] for a in sp)
        if attrs["kernel_size"] is not None and attrs["kernel_size"] != kernel:
            raise ValueError(
                f"{op}: kernel_size={attrs['kernel_size']} but weight {weight.shape} ({kl}) has "
                f"a {'x'.join(map(str, kernel))} kernel"
            )
        strides, dilation = attrs["strides"], attrs["dilation"]
        extra, pad = attrs["output_padding"], attrs["padding"]
        out = {"N": d["N"], "C": channels}
        for i, a in enumerate(sp):
            out[a] = _out_size(op, AXIS_NAMES[a], d[a], kernel[i], strides[i], dilation[i],
                               extra[i], pad[i] + pad[ndim + i])
        out_layout = attrs["out_layout"] or dl
        return TensorType(tuple(out[c] for c in out_layout), attrs["out_dtype"] or dtype)

    return rel


def conv_transpose_nd(
    x: np.ndarray,
    w: np.ndarray,
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    output_padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
) -> np.ndarray:
    """The transposed convolution of ``x`` (N, C, spatial...) with ``w`` (C, O / groups,
    kernel...), computed in their (common) dtype."""
    ndim = x.ndim - 2
    n, c, *size = x.shape
    _, og, *kernel = w.shape
    cg = c // groups
    k, positions = math.prod(kernel), math.prod(size)
    full = [s * (i - 1) + d * (kk - 1) + 1 + e
            for s, i, d, kk, e in zip(strides, size, dilation, kernel, output_padding,
                                      strict=True)]
    xg = x.reshape(n, groups, cg, positions)
    wg = w.reshape(groups, cg, og, k)
    out = np.zeros((n, groups, og, *full), dtype=x.dtype)
    lead = (slice(None),) * 3

    def scatter(tap: tuple[int, ...], values: np.ndarray) -> None:
        # the input positions of tap ``tap`` land at stride spacing from its offset
        where = tuple(slice(t * d, t * d + s * (i - 1) + 1, s)
                      for t, d, s, i in zip(tap, dilation, strides, size, strict=True))
        out[lead + where] += values.reshape(n, groups, og, *size)

    if n * groups * og * k * positions * x.itemsize <= _COL_BYTES:
        # One product gives every tap's contribution: (groups, og * k, cg) @
        # (n, groups, cg, positions); grouped and depthwise weights take the same path.
        cols = wg.transpose(0, 2, 3, 1).reshape(groups, og * k, cg) @ xg
        cols = cols.reshape(n, groups, og, k, positions)
        for t, tap in enumerate(taps(kernel)):
            scatter(tap, cols[:, :, :, t])
    else:
        for t, tap in enumerate(taps(kernel)):
            scatter(tap, np.swapaxes(wg[:, :, :, t], 1, 2) @ xg)
    crop = tuple(slice(padding[i], full[i] - padding[ndim + i]) for i in range(ndim))
    return out.reshape(n, groups * og, *full)[(slice(None), slice(None), *crop)]


def _conv_transpose_kernel(ndim: int):
    sp = SPATIAL[ndim]
    canonical_data, canonical_weight = "NC" + sp, "IO" + sp

    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        data, weight = args
        out_dtype = attrs["out_dtype"] or data.dtype.name
        wide = exact_sum_dtype(compute_dtype(data.dtype.name, out_dtype))
        x = to_layout(data, attrs["data_layout"], canonical_data).astype(wide, copy=False)
        w = to_layout(weight, attrs["kernel_layout"], canonical_weight).astype(wide, copy=False)
        out = conv_transpose_nd(x, w, attrs["strides"], attrs["padding"],
                                attrs["output_padding"], attrs["dilation"], attrs["groups"])
        out = to_layout(out, canonical_data, attrs["out_layout"] or attrs["data_layout"])
        return result(out, out_dtype)

    return kernel


def _conv_transpose_attrs(ndim: int) -> tuple[AttrField, ...]:
    sp = SPATIAL[ndim]
    first, last = data_layouts(ndim)
    axes = ", ".join(AXIS_NAMES[a] for a in sp)
    if ndim == 2:  # nn.conv2d_transpose keeps the converters its attributes always had
        return (
            AttrField("strides", attr_pair(1), (1, 1), doc="(height, width) strides."),
            AttrField(
                "padding", attr_padding2d, (0, 0, 0, 0), doc="(top, left, bottom, right) cropped."
            ),
            AttrField("output_padding", attr_pair(0), (0, 0),
                      doc="(height, width) added at the end."),
            AttrField("dilation", attr_pair(1), (1, 1), doc="(height, width) dilation."),
            AttrField("groups", attr_positive_int, 1, doc="Number of channel groups."),
            AttrField("channels", attr_optional_positive_int, None,
                      doc="Output channels (checked)."),
            AttrField("kernel_size", attr_optional_pair, None, doc="(kh, kw) (checked)."),
            AttrField("data_layout", attr_layout("NCHW", "NHWC"), "NCHW", doc="Data layout."),
            AttrField(
                "kernel_layout", attr_kernel_layout, "IOHW",
                doc="Weight layout (I: input channels).",
            ),
            AttrField(
                "out_layout", attr_layout("", "NCHW", "NHWC"), "", doc='"": same as data_layout.'
            ),
            AttrField("out_dtype", attr_optional_dtype, "", doc='"": the input dtype.'),
        )
    return (
        AttrField("strides", attr_spatial(ndim, 1), (1,) * ndim, doc=f"({axes}) strides."),
        AttrField("padding", attr_padding(ndim), (0,) * (2 * ndim),
                  doc="Leading pads then trailing pads, cropped."),
        AttrField("output_padding", attr_spatial(ndim, 0), (0,) * ndim,
                  doc=f"({axes}) added at the end."),
        AttrField("dilation", attr_spatial(ndim, 1), (1,) * ndim, doc=f"({axes}) dilation."),
        AttrField("groups", attr_positive_int, 1, doc="Number of channel groups."),
        AttrField("channels", attr_optional_positive_int, None, doc="Output channels (checked)."),
        AttrField("kernel_size", attr_optional_spatial(ndim), None,
                  doc=f"({axes}) kernel size (checked)."),
        AttrField("data_layout", attr_layout(first, last), first, doc="Data layout."),
        AttrField("kernel_layout", attr_weight_layout(ndim), "IO" + sp,
                  doc="Weight layout (I: input channels)."),
        AttrField("out_layout", attr_layout("", first, last), "", doc='"": same as data_layout.'),
        AttrField("out_dtype", attr_optional_dtype, "", doc='"": the input dtype.'),
    )


for _ndim in (1, 2, 3):
    register(
        _OPS[_ndim],
        num_inputs=2,
        type_rel=_conv_transpose_rel(_ndim),
        kernel=_conv_transpose_kernel(_ndim),
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
        attrs=_conv_transpose_attrs(_ndim),
        doc=f"Transposed {_ndim}-D convolution with strides, padding, output_padding, "
        "dilation and groups (ONNX ConvTranspose).",
    )


def _make(ndim: int, data: Any, weight: Any, **attrs: Any) -> Call:
    return make_call(_OPS[ndim], [data, weight], ["data", "weight"], **attrs)


def conv1d_transpose(
    data: Any,
    weight: Any,
    strides: Any = (1,),
    padding: Any = (0,),
    dilation: Any = (1,),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCW",
    kernel_layout: str = "IOW",
    out_layout: str = "",
    output_padding: Any = (0,),
    out_dtype: Any = "",
) -> Call:
    """Transposed 1-D convolution of ``data`` (N, C, W) with ``weight`` (C, O / groups, KW)
    (Relay's signature: ``output_padding`` comes after ``out_layout``).

    ``padding`` (1 or 2 ints, stored as left, right) is cropped from the full result and
    ``output_padding`` extends it at the end.
    """
    return _make(1, data, weight, strides=strides, padding=padding, output_padding=output_padding,
                 dilation=dilation, groups=groups, channels=channels, kernel_size=kernel_size,
                 data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
                 out_dtype=out_dtype)


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
    return _make(2, data, weight, strides=strides, padding=padding, output_padding=output_padding,
                 dilation=dilation, groups=groups, channels=channels, kernel_size=kernel_size,
                 data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
                 out_dtype=out_dtype)


def conv3d_transpose(
    data: Any,
    weight: Any,
    strides: Any = (1, 1, 1),
    padding: Any = (0, 0, 0),
    dilation: Any = (1, 1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCDHW",
    kernel_layout: str = "IODHW",
    out_layout: str = "",
    output_padding: Any = (0, 0, 0),
    out_dtype: Any = "",
) -> Call:
    """Transposed 3-D convolution of ``data`` (N, C, D, H, W) with ``weight`` (C, O /
    groups, KD, KH, KW) (Relay's signature: ``output_padding`` comes after
    ``out_layout``).

    ``padding`` (1, 3 or 6 ints, stored as front, top, left, back, bottom, right) is
    cropped from the full result and ``output_padding`` extends it at the end.
    """
    return _make(3, data, weight, strides=strides, padding=padding, output_padding=output_padding,
                 dilation=dilation, groups=groups, channels=channels, kernel_size=kernel_size,
                 data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
                 out_dtype=out_dtype)
