"""Emitters of the image and detection ops (``image.*``, ``vision.*``)."""

from __future__ import annotations

import math

import numpy as np
from irpass.op.image import axis_plan

from ..errors import OnnxExportError
from .builder import EmitContext, emitter

__all__: list[str] = []


def _canonical(layout: str) -> str:
    return "NC" + "".join(c for c in "DHW" if c in layout)


_MODES = {"nearest_neighbor": "nearest", "linear": "linear", "cubic": "cubic"}


def _rounds_to(scale: float, size: int, out: int) -> bool:
    """Whether a float32 ``scale`` gives ``out`` from ``size`` however it is multiplied
    (float32 as onnxruntime, float64 as ONNX's shape inference)."""
    f = np.float32(scale)
    return math.floor(f * np.float32(size)) == out == math.floor(float(f) * size)


@emitter("image.resize1d", "image.resize2d", "image.resize3d")
def _resize(ctx: EmitContext) -> str:
    a = ctx.attrs
    layout = a["layout"]
    canonical = _canonical(layout)
    x = ctx.transpose(ctx.input(0), [layout.index(c) for c in canonical])
    shape = ctx.type_of(0).shape
    sizes_in = [shape[layout.index(c)] for c in canonical[2:]]
    n = len(sizes_in)
    out = list(a["size"])
    mode = a["coordinate_transformation_mode"]
    method = a["method"]
    rounding = a["rounding_method"] or (
        "round" if mode in ("align_corners", "tf_half_pixel_for_nn") else "floor")
    scales = a["scales"]
    roi = list(a["roi"])
    try:
        if scales is not None and mode == "align_corners" and any(
                not math.isclose(s * i, o) for s, i, o in zip(scales, sizes_in, out,
                                                              strict=True)):
            # align_corners stretches over the unrounded output length, onnxruntime over
            # the rounded one: the same affine map is tf_crop_and_resize's with the region
            # ending at (out - 1) / (length - 1) (at 0 for a length-1 side: source 0)
            mode = "tf_crop_and_resize"
            roi = [0.0] * n + [(o - 1) / (s * i - 1) if o > 1 and i > 1 else 0.0
                               for o, s, i in zip(out, scales, sizes_in, strict=True)]
            scales = None
        if scales is not None and not all(_rounds_to(s, i, o)
                                          for s, i, o in zip(scales, sizes_in, out, strict=True)):
            raise ctx.fail(f"scale factors {scales} do not give the output size {out} as "
                           "ONNX's Resize rounds")
        if method == "cubic" and n != 2:
            # onnxruntime interpolates cubically over exactly two axes
            raise ctx.fail("cubic resizing of 1 or 3 axes")
        # onnxruntime departs from the spec (ONNX's reference) for a length-1 output (source
        # 0 for pytorch_half_pixel, ...), for tf_crop_and_resize and for nearest
        # half_pixel_symmetric: those go element by element, as the kernel computes them
        if any(o == 1 and i != 1 for o, i in zip(out, sizes_in, strict=True)):
            raise ctx.fail("resizing an axis to length 1")
        if mode == "tf_crop_and_resize" or (method == "nearest_neighbor"
                                             and mode == "half_pixel_symmetric"):
            raise ctx.fail(f"{mode} coordinates")
        x2, sizes2, out2 = x, sizes_in, out
        if n == 1:
            # onnxruntime resizes (N, C, H, W) tensors: width only with a height of 1, which
            # every coordinate mode maps to source row 0
            x2 = ctx.reshape(x, [*_lead(ctx), 1, sizes_in[0]])
            sizes2, out2 = [1, *sizes_in], [1, *out]
            scales = None if scales is None else (1.0, *scales)
            roi = [0.0, roi[0], 1.0, roi[1]]
        if ctx.opset < 11:
            y = _resize_legacy(ctx, x2, sizes2, out2, scales, mode, method, rounding)
        else:
            y = _resize_11(ctx, x2, sizes2, out2, scales, roi, mode, method, rounding)
        if n == 1:
            y = ctx.reshape(y, [*_lead(ctx), out[0]])
    except OnnxExportError:
        y = _resize_by_plan(ctx, x, sizes_in, out)
    return ctx.transpose(y, [canonical.index(c) for c in layout])


def _resize_11(ctx: EmitContext, x: str, sizes_in: list[int], out: list[int],
               scales: tuple | None, roi: list[float], mode: str, method: str,
               rounding: str) -> str:
    a = ctx.attrs
    n = len(sizes_in)
    if mode == "half_pixel_symmetric":
        ctx.need_opset(19, "Resize with half_pixel_symmetric coordinates")
    if mode == "tf_half_pixel_for_nn" and ctx.opset >= 13:
        raise ctx.fail("tf_half_pixel_for_nn coordinates exist in ONNX Resize 11 only")
    if a["antialias"]:
        ctx.need_opset(18, "Resize with antialias")
    attrs: dict = {"mode": _MODES[method], "coordinate_transformation_mode": mode}
    if method == "nearest_neighbor":
        attrs["nearest_mode"] = "round_prefer_ceil" if rounding == "round" else rounding
    if method == "cubic":
        attrs["cubic_coeff_a"] = a["cubic_alpha"]
    if a["cubic_exclude"]:
        attrs["exclude_outside"] = 1
    if mode == "tf_crop_and_resize":
        attrs["extrapolation_value"] = a["extrapolation_value"]
    if a["antialias"]:
        attrs["antialias"] = 1
    empty = ctx.constant(np.zeros((0,), np.float32), hint="empty")
    if mode == "tf_crop_and_resize":
        roi_name = ctx.constant(np.array([0.0, 0.0, *roi[:n], 1.0, 1.0, *roi[n:]],
                                         np.float32), hint="roi")
    else:
        roi_name = empty if ctx.opset < 13 else ""
    if scales is not None:
        ins = [x, roi_name, ctx.constant(np.array([1, 1, *scales], np.float32), hint="scales")]
    else:
        ins = [x, roi_name, empty if ctx.opset < 13 else "",
               ctx.int64s([*_lead(ctx), *out], hint="sizes")]
    while ins and ins[-1] == "":
        ins.pop()
    return ctx.emit("Resize", ins, **attrs)


def _lead(ctx: EmitContext) -> list[int]:
    """The batch and channel sizes of the resized input."""
    layout, shape = ctx.attrs["layout"], ctx.type_of(0).shape
    return [shape[layout.index("N")], shape[layout.index("C")]]


def _resize_legacy(ctx: EmitContext, x: str, sizes_in: list[int], out: list[int],
                   scales: tuple | None, mode: str, method: str, rounding: str) -> str:
    """Upsample (opset 9) or Resize-10: asymmetric coordinates, scales only."""
    a = ctx.attrs
    if scales is None:
        scales = tuple(float(np.float32(o / i)) for o, i in zip(out, sizes_in, strict=True))
        if not all(_rounds_to(s, i, o) for s, i, o in zip(scales, sizes_in, out, strict=True)):
            raise ctx.fail(f"resizing to {out} needs opset >= 11 (Resize with sizes)")
    simple = mode == "asymmetric" and not a["antialias"] and not a["cubic_exclude"] and (
        method == "linear" or (method == "nearest_neighbor" and rounding == "floor"
                               and all(s >= 1 for s in scales)))
    if not simple:
        raise ctx.fail(f"{ctx.node.op} with method {method}, coordinate_transformation_mode "
                       f"{mode} needs opset >= 11")
    op_type = "Upsample" if ctx.opset < 10 else "Resize"
    if op_type == "Upsample" and any(s < 1 for s in scales):
        raise ctx.fail("Upsample (opset 9) cannot shrink an axis")
    if method == "linear" and len(sizes_in) > 2 and ctx.opset < 10:
        raise ctx.fail("linear upsampling of 3 spatial axes needs opset >= 10")
    name = ctx.constant(np.array([1, 1, *scales], np.float32), hint="scales")
    return ctx.emit(op_type, [x, name], mode=_MODES[method])


def _resize_by_plan(ctx: EmitContext, x: str, sizes_in: list[int], out: list[int]) -> str:
    """The resize as the kernel computes it, one spatial axis at a time: a Gather of the
    nearest indices or a MatMul by the interpolation weights, then the extrapolated
    positions set (for scale factors and sizes Resize cannot express together)."""
    dtype = ctx.type_of(0).dtype
    n = len(sizes_in)
    rank = n + 2
    y = x
    for k in range(n):
        kind, plan, outside = axis_plan(ctx.attrs, k, n, sizes_in[k], out[k])
        axis = 2 + k
        if kind == "gather":
            y = ctx.emit("Gather", [y, ctx.constant(plan.astype(np.int64), hint="indices")],
                         axis=axis)
        elif kind == "matrix":
            if dtype not in ("float16", "float32", "float64"):
                raise ctx.fail(f"{ctx.node.op} of {dtype} data with method "
                               f"{ctx.attrs['method']} has no ONNX form")
            weights = ctx.constant(plan.astype(dtype), hint="weights")
            swap = list(range(rank))
            swap[axis], swap[rank - 2] = rank - 2, axis
            y = ctx.transpose(y, swap)
            y = ctx.transpose(ctx.emit("MatMul", [weights, y]), swap)
        if outside is not None:
            shape = [1] * rank
            shape[axis] = out[k]
            mask = ctx.constant(outside.reshape(shape), hint="outside")
            fill = ctx.constant(np.array(ctx.attrs["extrapolation_value"], dtype), hint="fill")
            y = ctx.emit("Where", [mask, fill, y])
    return y


_GRID_MODES = {16: {"bilinear": "bilinear", "nearest": "nearest", "bicubic": "bicubic"},
               20: {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}}


@emitter("image.grid_sample")
def _grid_sample(ctx: EmitContext) -> str:
    a = ctx.attrs
    n = 2 if a["layout"] == "NCHW" else 3
    ctx.need_opset(16 if n == 2 else 20, "GridSample" if n == 2 else "GridSample of 3-D data")
    grid = ctx.transpose(ctx.input(1), [0, *range(2, n + 2), 1])
    modes = _GRID_MODES[20 if ctx.opset >= 20 else 16]
    return ctx.emit("GridSample", [ctx.input(0), grid], mode=modes[a["method"]],
                    padding_mode=a["padding_mode"], align_corners=int(a["align_corners"]))


@emitter("vision.roi_align")
def _roi_align(ctx: EmitContext) -> str:
    a = ctx.attrs
    ctx.need_opset(10, "RoiAlign")
    if a["aligned"]:
        ctx.need_opset(16, "RoiAlign with half_pixel coordinates")
    layout = a["layout"]
    x = ctx.transpose(ctx.input(0), [layout.index(c) for c in "NCHW"])
    rois = ctx.const(1)
    if rois is not None:
        boxes = ctx.constant(np.ascontiguousarray(rois[:, 1:]), hint="rois")
        index = ctx.constant(rois[:, 0].astype(np.int64), hint="batch_indices")
    else:
        name = ctx.input(1)
        boxes = ctx.emit("Slice", [name, ctx.int64s([1]), ctx.int64s([5]), ctx.int64s([1])])
        first = ctx.emit("Gather", [name, ctx.constant(np.array(0, np.int64))], axis=1)
        index = ctx.cast(first, "int64")
    attrs: dict = {"mode": a["mode"], "output_height": a["pooled_size"][0],
                   "output_width": a["pooled_size"][1], "sampling_ratio": max(a["sample_ratio"], 0),
                   "spatial_scale": a["spatial_scale"]}
    if ctx.opset >= 16:
        attrs["coordinate_transformation_mode"] = "half_pixel" if a["aligned"] \
            else "output_half_pixel"
    y = ctx.emit("RoiAlign", [x, boxes, index], **attrs)
    return ctx.transpose(y, ["NCHW".index(c) for c in layout])


@emitter("vision.roi_pool")
def _roi_pool(ctx: EmitContext) -> str:
    a = ctx.attrs
    layout = a["layout"]
    x = ctx.transpose(ctx.input(0), [layout.index(c) for c in "NCHW"])
    y = ctx.emit("MaxRoiPool", [x, ctx.input(1)], pooled_shape=list(a["pooled_size"]),
                 spatial_scale=a["spatial_scale"])
    return ctx.transpose(y, ["NCHW".index(c) for c in layout])
