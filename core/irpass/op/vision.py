"""Detection ops (``vision.*``, TVM Relay's names and attributes): ``vision.roi_align`` and
``vision.roi_pool``.

``vision.roi_align`` pools each region of interest (a row ``[batch_index, x1, y1, x2, y2]``
of ``rois``, in input coordinates scaled by ``spatial_scale``) into ``pooled_size`` bins. Each
bin averages (``mode="avg"``) the bilinear interpolations at a regular grid of
``sample_ratio`` x ``sample_ratio`` points (when ``sample_ratio <= 0``: ``ceil`` of the bin's
size, per region), as Mask R-CNN, ONNX RoiAlign and TVM do; a point more than one element
outside the input reads 0, one less than that is clamped to the border. ``mode="max"`` takes
the largest of the weighted corner values instead (ONNX's and onnxruntime's definition).
``aligned`` (an irpass addition, torchvision's name for ONNX's ``half_pixel`` mode) shifts
the scaled region by half an element and lets it be smaller than 1x1; without it a region is
at least 1x1.

``vision.roi_pool`` (Fast R-CNN's RoIPool, ONNX MaxRoiPool) rounds the scaled region to whole
elements (at least 1x1), splits it into ``pooled_size`` bins (``floor`` of each bin's start,
``ceil`` of its end, clipped to the input) and takes each bin's maximum; an empty bin is 0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.nodes import Call
from ..ir.op import AttrField, OpPattern, attr_bool, attr_choice, attr_float, attr_int
from ..ir.types import TensorType, Type
from ._common import (
    FLOAT_DTYPES,
    attr_layout,
    attr_pair,
    check_dtype,
    check_rank,
    check_same_dtype,
    dims_may_agree,
    layout_dims,
    make_call,
    register,
    result,
    tensor_arg,
    to_layout,
)

__all__ = ["roi_align", "roi_pool"]

_OP = "vision.roi_align"


def _roi_align_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], _OP, "data")
    rois = tensor_arg(arg_types[1], _OP, "rois")
    check_dtype(data, FLOAT_DTYPES, _OP, "data")
    dtype = check_same_dtype(_OP, ("data", data), ("rois", rois))
    layout = attrs["layout"]
    check_rank(data, 4, _OP, "data", layout)
    if rois.ndim != 2 or not dims_may_agree(rois.shape[1], 5):
        raise ValueError(f"{_OP}: rois {rois} must be (num_rois, 5): batch index, x1, y1, x2, y2")
    d = layout_dims(data.shape, layout)
    if rois.shape[0] != 0 and (d["H"] == 0 or d["W"] == 0):
        raise ValueError(f"{_OP}: data {data} has no elements to pool")
    ph, pw = attrs["pooled_size"]
    out = {"N": rois.shape[0], "C": d["C"], "H": ph, "W": pw}
    return TensorType(tuple(out[c] for c in layout), dtype)


def _axis_samples(start: float, bin_size: float, pooled: int, grid: int,
                  size: int) -> tuple[np.ndarray, ...]:
    """Along one axis, for each (bin, sample): the low and high indices, their weights, and
    whether the sample lies within one element of the input."""
    pos = start + np.arange(pooled)[:, None] * bin_size \
        + (np.arange(grid)[None, :] + 0.5) * bin_size / grid
    inside = (pos >= -1.0) & (pos <= size)
    pos = np.maximum(pos, 0.0)
    low = np.floor(pos).astype(np.intp)
    at_end = low >= size - 1
    low = np.where(at_end, size - 1, low)
    high = np.where(at_end, size - 1, low + 1)
    pos = np.where(at_end, low, pos)
    frac = pos - low
    return low, high, 1.0 - frac, frac, inside


def _roi_align_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, rois = args
    x = to_layout(data, attrs["layout"], "NCHW").astype(np.float64)
    _, c, h, w = x.shape
    ph, pw = attrs["pooled_size"]
    scale, ratio = attrs["spatial_scale"], attrs["sample_ratio"]
    offset = 0.5 if attrs["aligned"] else 0.0
    out = np.zeros((rois.shape[0], c, ph, pw))
    for r, roi in enumerate(rois.astype(np.float64)):
        b = int(roi[0])
        if not 0 <= b < x.shape[0]:
            raise ValueError(f"{_OP}: roi {r} has batch index {float(roi[0])}, outside the "
                             f"{x.shape[0]} images of data")
        x1, y1, x2, y2 = roi[1:] * scale - offset
        rh, rw = y2 - y1, x2 - x1
        if not attrs["aligned"]:
            rh, rw = max(rh, 1.0), max(rw, 1.0)
        bin_h, bin_w = rh / ph, rw / pw
        gh = ratio if ratio > 0 else max(math.ceil(rh / ph), 0)
        gw = ratio if ratio > 0 else max(math.ceil(rw / pw), 0)
        if gh == 0 or gw == 0:
            continue  # no sample points: the bins stay 0
        ylo, yhi, wylo, wyhi, yin = _axis_samples(y1, bin_h, ph, gh, h)
        xlo, xhi, wxlo, wxhi, xin = _axis_samples(x1, bin_w, pw, gw, w)
        # (ph, gh, pw, gw): a sample off the input by more than one element reads nothing
        valid = yin[:, :, None, None] & xin[None, None, :, :]
        image = x[b]
        corners = []
        for yi, wy in ((ylo, wylo), (yhi, wyhi)):
            for xi, wx in ((xlo, wxlo), (xhi, wxhi)):
                weight = np.where(valid, wy[:, :, None, None] * wx[None, None, :, :], 0.0)
                values = image[:, yi[:, :, None, None], xi[None, None, :, :]]
                corners.append(weight * values)  # (c, ph, gh, pw, gw)
        if attrs["mode"] == "avg":
            out[r] = sum(corners).sum(axis=(2, 4)) / (gh * gw)
        else:
            out[r] = np.maximum.reduce(corners).max(axis=(2, 4))
    return result(to_layout(out, "NCHW", attrs["layout"]), data.dtype)


register(
    _OP,
    num_inputs=2,
    type_rel=_roi_align_rel,
    kernel=_roi_align_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    attrs=(
        AttrField("pooled_size", attr_pair(1), doc="(height, width) of each pooled region."),
        AttrField("spatial_scale", attr_float, doc="Scale from roi to data coordinates."),
        AttrField("sample_ratio", attr_int, -1,
                  doc="Sample points per bin and axis; <= 0: ceil of the bin size."),
        AttrField("layout", attr_layout("NCHW", "NHWC"), "NCHW", doc="Data layout."),
        AttrField("mode", attr_choice("avg", "max"), "avg", doc="How a bin's samples pool."),
        AttrField("aligned", attr_bool, False,
                  doc="Shift by half an element, no 1x1 minimum (irpass; ONNX half_pixel)."),
    ),
    doc="Region-of-interest align pooling (Mask R-CNN; ONNX RoiAlign).",
)


def roi_align(data: Any, rois: Any, pooled_size: Any, spatial_scale: float,
              sample_ratio: int = -1, layout: str = "NCHW", mode: str = "avg",
              aligned: bool = False) -> Call:
    """Pool each region of ``rois`` (num_rois, 5: batch index, x1, y1, x2, y2) of ``data``
    into ``pooled_size`` bins (Relay's signature, plus ``aligned``; see the module
    docstring)."""
    return make_call(_OP, [data, rois], ["data", "rois"], pooled_size=pooled_size,
                     spatial_scale=spatial_scale, sample_ratio=sample_ratio, layout=layout,
                     mode=mode, aligned=aligned)


def _roi_pool_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "vision.roi_pool", "data")
    rois = tensor_arg(arg_types[1], "vision.roi_pool", "rois")
    check_dtype(data, FLOAT_DTYPES, "vision.roi_pool", "data")
    dtype = check_same_dtype("vision.roi_pool", ("data", data), ("rois", rois))
    layout = attrs["layout"]
    check_rank(data, 4, "vision.roi_pool", "data", layout)
    if rois.ndim != 2 or not dims_may_agree(rois.shape[1], 5):
        raise ValueError(f"vision.roi_pool: rois {rois} must be (num_rois, 5): batch index, "
                         "x1, y1, x2, y2")
    d = layout_dims(data.shape, layout)
    ph, pw = attrs["pooled_size"]
    out = {"N": rois.shape[0], "C": d["C"], "H": ph, "W": pw}
    return TensorType(tuple(out[c] for c in layout), dtype)


def _round_half_away(v: float) -> int:
    return int(math.floor(v + 0.5)) if v >= 0 else -int(math.floor(-v + 0.5))


def _roi_pool_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, rois = args
    x = to_layout(data, attrs["layout"], "NCHW")
    _, c, h, w = x.shape
    ph, pw = attrs["pooled_size"]
    scale = attrs["spatial_scale"]
    out = np.zeros((rois.shape[0], c, ph, pw), dtype=np.float64)
    for r, roi in enumerate(rois.astype(np.float64)):
        b = int(roi[0])
        if not 0 <= b < x.shape[0]:
            raise ValueError(f"vision.roi_pool: roi {r} has batch index {float(roi[0])}, "
                             f"outside the {x.shape[0]} images of data")
        x1, y1, x2, y2 = (_round_half_away(v * scale) for v in roi[1:])
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for i in range(ph):
            top = min(max(math.floor(i * rh / ph) + y1, 0), h)
            bottom = min(max(math.ceil((i + 1) * rh / ph) + y1, 0), h)
            for j in range(pw):
                left = min(max(math.floor(j * rw / pw) + x1, 0), w)
                right = min(max(math.ceil((j + 1) * rw / pw) + x1, 0), w)
                if bottom > top and right > left:
                    out[r, :, i, j] = x[b, :, top:bottom, left:right].max(axis=(1, 2))
    return result(to_layout(out, "NCHW", attrs["layout"]), data.dtype)


register(
    "vision.roi_pool",
    num_inputs=2,
    type_rel=_roi_pool_rel,
    kernel=_roi_pool_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    attrs=(
        AttrField("pooled_size", attr_pair(1), doc="(height, width) of each pooled region."),
        AttrField("spatial_scale", attr_float, doc="Scale from roi to data coordinates."),
        AttrField("layout", attr_layout("NCHW", "NHWC"), "NCHW", doc="Data layout."),
    ),
    doc="Region-of-interest max pooling (Fast R-CNN; ONNX MaxRoiPool).",
)


def roi_pool(data: Any, rois: Any, pooled_size: Any, spatial_scale: float,
             layout: str = "NCHW") -> Call:
    """The maximum of each of ``pooled_size`` bins of each region of ``rois`` (num_rois, 5:
    batch index, x1, y1, x2, y2) of ``data`` (Relay's signature)."""
    return make_call("vision.roi_pool", [data, rois], ["data", "rois"],
                     pooled_size=pooled_size, spatial_scale=spatial_scale, layout=layout)
