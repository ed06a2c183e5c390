"""Converters of the ONNX image and detection ops: Resize, Upsample, GridSample, AffineGrid,
RoiAlign, MaxRoiPool, NonMaxSuppression, MaxUnpool, DeformConv.

Resize's ``scales``/``sizes``/``roi`` operands fix the output shape, so they are read at import
(:meth:`NodeContext.const_input`); the batch and channel axes must keep their size.
NonMaxSuppression's output length depends on the data: its result is computed at import from
the (constant, or at run time re-imported) inputs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from irpass.ir import Expr, Tuple

from .context import NodeContext
from .registry import converter
from .tensor import as_const, call, norm_axes

__all__: list[str] = []

_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic",
            "bilinear": "linear", "trilinear": "linear"}


def _floats(value: np.ndarray | None) -> list[float] | None:
    """A float operand as a list; an empty one (ONNX's way to leave it out) as None."""
    if value is None or value.size == 0:
        return None
    return [float(v) for v in value.reshape(-1)]


def _spatial(ctx: NodeContext, rank: int) -> int:
    n = rank - 2
    if n not in (1, 2, 3):
        ctx.fail(f"resizing a rank-{rank} input is not supported; irpass resizes the 1, 2 or "
                 "3 spatial axes of an (N, C, spatial...) tensor")
    return n


def _resize(ctx: NodeContext, scales: list[float] | None, sizes: list[int] | None,
            roi: list[float] | None, axes: list[int] | None, **attrs: Any) -> Expr:
    """An image.resizeNd call for ONNX's full-rank (or ``axes``-wise) scales or sizes,
    following the reference's rules for the output size and the scale factors."""
    shape = ctx.type_of(0).shape
    r = len(shape)
    n = _spatial(ctx, r)
    given = axes if axes is not None else list(range(r))
    count = len(scales if scales is not None else sizes)  # type: ignore[arg-type]
    if count != len(given):
        ctx.fail(f"{'scales' if scales is not None else 'sizes'} has {count} values for "
                 f"{len(given)} axes")
    full_roi = [0.0] * r + [1.0] * r
    if roi is not None:
        if len(roi) != 2 * len(given):
            ctx.fail(f"roi has {len(roi)} values; expected {2 * len(given)} (starts, ends)")
        for i, a in enumerate(given):
            full_roi[a], full_roi[r + a] = roi[i], roi[len(given) + i]
    if scales is not None:
        factor = [1.0] * r
        for a, s in zip(given, scales, strict=True):
            if not s > 0:
                ctx.fail(f"scales must be > 0, got {scales}")
            factor[a] = s
        out = [int(math.floor(s * d)) for s, d in zip(factor, shape, strict=True)]
        explicit = True
    else:
        out = list(shape)
        for a, s in zip(given, sizes, strict=True):  # type: ignore[arg-type]
            if s < 0:
                ctx.fail(f"sizes must be >= 0, got {sizes}")
            out[a] = int(s)
        factor = [o / d if d else 1.0 for o, d in zip(out, shape, strict=True)]
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        explicit = policy != "stretch"
        if policy in ("not_larger", "not_smaller"):
            pick = min if policy == "not_larger" else max
            scale = pick(factor[a] for a in given)
            factor = [scale if a in given else 1.0 for a in range(r)]
            out = [int(scale * shape[a] + 0.5) if a in given else shape[a] for a in range(r)]
        elif policy != "stretch":
            ctx.fail(f"keep_aspect_ratio_policy {policy!r} is not one of stretch, not_larger, "
                     "not_smaller")
    for a in (0, 1):
        if out[a] != shape[a] or not math.isclose(factor[a], 1.0) or (
                attrs["coordinate_transformation_mode"] == "tf_crop_and_resize"
                and (full_roi[a], full_roi[r + a]) != (0.0, 1.0)):
            ctx.fail(f"resizing axis {a} ({'batch' if a == 0 else 'channels'}) is not "
                     "supported; irpass resizes the spatial axes only")
    spatial = list(range(2, r))
    return call(
        f"image.resize{n}d", [ctx.input(0)],
        size=tuple(out[a] for a in spatial),
        roi=tuple(full_roi[a] for a in spatial) + tuple(full_roi[r + a] for a in spatial),
        scales=tuple(factor[a] for a in spatial) if explicit else None,
        **attrs,
    )


@converter("Resize", since=10)
def _resize_10(ctx: NodeContext) -> Expr:
    scales = _floats(ctx.const_input(1, "scales"))
    if scales is None:
        ctx.fail("input 1 (scales) is empty")
    return _resize(ctx, scales, None, None, None, **_legacy_attrs(ctx, scales))


def _legacy_attrs(ctx: NodeContext, scales: list[float]) -> dict[str, Any]:
    """Upsample's and Resize-10's fixed geometry: asymmetric coordinates; nearest rounds
    down when upsampling and up when downsampling (as onnxruntime does)."""
    mode = ctx.attr("mode", "nearest")
    if mode not in ("nearest", "linear", "bilinear"):
        ctx.fail(f"mode {mode!r} is not one of nearest, linear")
    spatial = scales[2:]
    rounding = "floor"
    if mode == "nearest" and any(s < 1 for s in spatial):
        if not all(s < 1 for s in spatial):
            ctx.fail(f"nearest resizing that upsamples some axes and downsamples others "
                     f"(scales {scales}) is not supported at this opset")
        rounding = "ceil"
    return dict(method=_METHODS[mode], coordinate_transformation_mode="asymmetric",
                rounding_method=rounding)


@converter("Upsample", since=7)
def _upsample_7(ctx: NodeContext) -> Expr:
    scales = [float(s) for s in ctx.attr("scales")]
    return _resize(ctx, scales, None, None, None, **_legacy_attrs(ctx, scales))


@converter("Upsample", since=9)
def _upsample_9(ctx: NodeContext) -> Expr:
    scales = _floats(ctx.const_input(1, "scales"))
    if scales is None:
        ctx.fail("input 1 (scales) is empty")
    return _resize(ctx, scales, None, None, None, **_legacy_attrs(ctx, scales))


@converter("Resize", since=11)
def _resize_11(ctx: NodeContext) -> Expr:
    xt = ctx.type_of(0)
    mode = ctx.attr("mode", "nearest")
    if mode not in ("nearest", "linear", "cubic"):
        ctx.fail(f"mode {mode!r} is not one of nearest, linear, cubic")
    coords = ctx.attr("coordinate_transformation_mode", "half_pixel")
    known = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
             "tf_crop_and_resize", "half_pixel_symmetric", "tf_half_pixel_for_nn")
    if coords not in known:
        ctx.fail(f"coordinate_transformation_mode {coords!r} is not one of {', '.join(known)}")
    nearest = ctx.attr("nearest_mode", "round_prefer_floor")
    if nearest not in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
        ctx.fail(f"nearest_mode {nearest!r} is not one of round_prefer_floor, "
                 "round_prefer_ceil, floor, ceil")
    antialias = bool(ctx.attr("antialias", 0))
    if antialias and mode == "nearest":
        ctx.fail("antialias applies to linear and cubic modes, not nearest")
    axes = ctx.attr("axes", None)
    if axes is not None:
        axes = norm_axes(ctx, axes, len(xt.shape))
    roi = None
    if coords == "tf_crop_and_resize":
        roi = _floats(ctx.const_input(1, "roi", optional=True))
    scales = _floats(ctx.const_input(2, "scales", optional=True))
    sizes = ctx.const_input(3, "sizes", optional=True)
    sizes_list = None if sizes is None or sizes.size == 0 else [int(s) for s in sizes]
    if (scales is None) == (sizes_list is None):
        ctx.fail("exactly one of scales and sizes must be given")
    return _resize(
        ctx, scales, sizes_list, roi, axes,
        method=_METHODS[mode], coordinate_transformation_mode=coords,
        rounding_method=nearest if mode == "nearest" else "",
        cubic_alpha=float(ctx.attr("cubic_coeff_a", -0.75)),
        cubic_exclude=bool(ctx.attr("exclude_outside", 0)),
        extrapolation_value=float(ctx.attr("extrapolation_value", 0.0)),
        antialias=antialias,
    )


# -- grid sampling ------------------------------------------------------------------------------

_GRID_METHODS = {"bilinear": "bilinear", "linear": "bilinear", "nearest": "nearest",
                 "bicubic": "bicubic", "cubic": "bicubic"}


@converter("GridSample", since=16)
def _grid_sample(ctx: NodeContext) -> Expr:
    xt, gt = ctx.type_of(0), ctx.type_of(1)
    n = len(xt.shape) - 2
    if n not in (2, 3):
        ctx.fail(f"GridSample of a rank-{len(xt.shape)} input is not supported; irpass samples "
                 "(N, C, H, W) and (N, C, D, H, W) tensors")
    if len(gt.shape) != n + 2 or gt.shape[-1] != n:
        ctx.fail(f"grid {gt} must be (N, out..., {n}) for a {n}-D input {xt}")
    if gt.dtype not in ("float16", "float32", "float64"):
        ctx.fail(f"grid has dtype {gt.dtype}; a float dtype is expected")
    mode = ctx.attr("mode", "bilinear" if ctx.opset < 20 else "linear")
    if mode not in _GRID_METHODS:
        ctx.fail(f"mode {mode!r} is not one of {', '.join(_GRID_METHODS)}")
    padding = ctx.attr("padding_mode", "zeros")
    if padding not in ("zeros", "border", "reflection"):
        ctx.fail(f"padding_mode {padding!r} is not one of zeros, border, reflection")
    # ONNX's grid is channels-last, (N, out..., n); TVM's (and irpass's) channels-first
    grid = call("transpose", [ctx.input(1)], axes=[0, n + 1, *range(1, n + 1)])
    return call("image.grid_sample", [ctx.input(0), grid], method=_GRID_METHODS[mode],
                layout="NCHW" if n == 2 else "NCDHW", padding_mode=padding,
                align_corners=bool(ctx.attr("align_corners", 0)))


@converter("AffineGrid", since=20)
def _affine_grid(ctx: NodeContext) -> Expr:
    # the base grid of homogeneous (x, y[, z], 1) coordinates is a constant; each batch's
    # grid is it times theta transposed: (P, k + 1) @ (N, k + 1, k) -> (N, P, k)
    tt = ctx.type_of(0)
    size = [int(v) for v in ctx.const_input(1, "size").reshape(-1)]
    k = len(size) - 2
    if k not in (2, 3) or len(tt.shape) != 3 or tuple(tt.shape[1:]) != (k, k + 1):
        ctx.fail(f"theta {tt} and size {size} must be (N, 2, 3) and [N, C, H, W], or "
                 "(N, 3, 4) and [N, C, D, H, W]")
    if size[0] != tt.shape[0]:
        ctx.fail(f"size {size} has batch {size[0]} but theta {tt} has {tt.shape[0]}")
    if tt.dtype not in ("float16", "float32", "float64"):
        ctx.fail(f"theta has dtype {tt.dtype}; a float dtype is expected")
    align = bool(ctx.attr("align_corners", 0))
    axes = []
    for length in size[2:]:
        if align:
            axes.append(np.linspace(-1.0, 1.0, length) if length > 1 else np.array([-1.0]))
        else:
            axes.append((np.arange(length) * 2 + 1) / length - 1)
    mesh = np.meshgrid(*axes, indexing="ij")  # depth, height, width
    base = np.stack([*mesh[::-1], np.ones_like(mesh[0])], axis=-1).reshape(-1, k + 1)
    theta_t = call("transpose", [ctx.input(0)], axes=[0, 2, 1])
    grid = call("matmul", [as_const(ctx, base.astype(tt.dtype)), theta_t])
    return call("reshape", [grid], newshape=[size[0], *size[2:], k])


# -- region pooling -----------------------------------------------------------------------------


def _rois_with_batch(ctx: NodeContext, dtype: str) -> Expr:
    """ONNX's rois (num_rois, 4) and batch_indices (num_rois,) as TVM's (num_rois, 5) rows
    [batch_index, x1, y1, x2, y2]."""
    rt, bt = ctx.type_of(1), ctx.type_of(2)
    if len(rt.shape) != 2 or rt.shape[1] != 4 or tuple(bt.shape) != (rt.shape[0],):
        ctx.fail(f"rois {rt} and batch_indices {bt} must be (num_rois, 4) and (num_rois,)")
    index = call("expand_dims", [call("cast", [ctx.input(2)], dtype=dtype)], axis=1,
                 num_newaxis=1)
    rois = ctx.input(1)
    if rt.dtype != dtype:
        rois = call("cast", [rois], dtype=dtype)
    return call("concatenate", [Tuple([index, rois])], axis=1)


@converter("RoiAlign", since=10)
def _roi_align(ctx: NodeContext) -> Expr:
    xt = ctx.type_of(0)
    if len(xt.shape) != 4:
        ctx.fail(f"input {xt} must be (N, C, H, W)")
    if xt.dtype not in ("float16", "float32", "float64"):
        ctx.fail(f"input 0 has dtype {xt.dtype}; a float dtype is expected")
    mode = ctx.attr("mode", "avg")
    if mode not in ("avg", "max"):
        ctx.fail(f"mode {mode!r} is not one of avg, max")
    coords = ctx.attr("coordinate_transformation_mode",
                      "half_pixel" if ctx.opset >= 16 else "output_half_pixel")
    if coords not in ("half_pixel", "output_half_pixel"):
        ctx.fail(f"coordinate_transformation_mode {coords!r} is not one of half_pixel, "
                 "output_half_pixel")
    size = (int(ctx.attr("output_height", 1)), int(ctx.attr("output_width", 1)))
    if min(size) < 1:
        ctx.fail(f"output_height and output_width must be >= 1, got {size}")
    return call("vision.roi_align", [ctx.input(0), _rois_with_batch(ctx, xt.dtype)],
                pooled_size=size, spatial_scale=float(ctx.attr("spatial_scale", 1.0)),
                sample_ratio=int(ctx.attr("sampling_ratio", 0)), mode=mode,
                aligned=coords == "half_pixel")


@converter("MaxRoiPool", since=1)
def _max_roi_pool(ctx: NodeContext) -> Expr:
    xt, rt = ctx.type_of(0), ctx.type_of(1)
    if len(xt.shape) != 4 or xt.dtype not in ("float16", "float32", "float64"):
        ctx.fail(f"input {xt} must be a float (N, C, H, W) tensor")
    if len(rt.shape) != 2 or rt.shape[1] != 5:
        ctx.fail(f"rois {rt} must be (num_rois, 5): batch index, x1, y1, x2, y2")
    rois = ctx.input(1) if rt.dtype == xt.dtype else call("cast", [ctx.input(1)],
                                                          dtype=xt.dtype)
    size = tuple(int(v) for v in ctx.attr("pooled_shape"))
    if len(size) != 2 or min(size) < 1:
        ctx.fail(f"pooled_shape {list(size)} must be two sizes >= 1")
    return call("vision.roi_pool", [ctx.input(0), rois], pooled_size=size,
                spatial_scale=float(ctx.attr("spatial_scale", 1.0)))


@converter("MaxUnpool", since=9)
def _max_unpool(ctx: NodeContext) -> Expr:
    # zeros, with X's values scattered at their flat indices (over the whole output, as
    # MaxPool's Indices count them), then padded with zeros to output_shape
    xt, it = ctx.type_of(0), ctx.type_of(1)
    n = len(xt.shape) - 2
    if n not in (1, 2, 3) or tuple(it.shape) != tuple(xt.shape):
        ctx.fail(f"X {xt} must be (N, C, spatial...) with 1 to 3 spatial axes, and the "
                 f"indices {it} of its shape")
    kernel = [int(k) for k in ctx.attr("kernel_shape")]
    if len(kernel) != n:
        ctx.fail(f"kernel_shape {kernel} does not match a {n}-D input {xt}")
    strides = _list(ctx, "strides", n, 1)
    pads = _list(ctx, "pads", 2 * n, 0)
    inferred = list(xt.shape[:2]) + [
        (xt.shape[2 + i] - 1) * strides[i] - pads[i] - pads[n + i] + kernel[i]
        for i in range(n)]
    shape = ctx.const_input(2, "output_shape", optional=True) if ctx.opset >= 11 else None
    target = inferred if shape is None or shape.size == 0 else [int(v) for v in shape]
    if len(target) != len(inferred) or any(t < i for t, i in zip(target, inferred,
                                                                    strict=True)):
        ctx.fail(f"output_shape {target} is smaller than the unpooled shape {inferred}")
    total = math.prod(inferred)
    flat = call("scatter_elements", [
        call("zeros", [], shape=(total,), dtype=xt.dtype),
        call("reshape", [ctx.input(1)], newshape=[-1]),
        call("reshape", [ctx.input(0)], newshape=[-1]),
    ], axis=0)
    y = call("reshape", [flat], newshape=inferred)
    if target != inferred:
        y = call("nn.pad", [y], pad_width=[(0, t - i) for t, i in zip(target, inferred,
                                                                     strict=True)])
    return y


def _list(ctx: NodeContext, name: str, count: int, default: int) -> list[int]:
    value = ctx.attr(name, None)
    if value is None:
        return [default] * count
    if len(value) != count:
        ctx.fail(f"attribute {name!r} has {len(value)} values; expected {count}")
    return [int(v) for v in value]


@converter("DeformConv", since=19)
def _deform_conv(ctx: NodeContext) -> Expr:
    # As ONNX's reference defines it: every kernel tap samples the input bilinearly (zeros
    # outside) at its offset position, which is image.grid_sample with align_corners over the
    # positions normalized to [-1, 1]; the samples, times the mask, are the columns of a
    # grouped matrix product with the weight.
    xt, wt, ot = ctx.type_of(0), ctx.type_of(1), ctx.type_of(2)
    if len(xt.shape) != 4:
        ctx.fail(f"input {xt} must be (N, C, H, W): irpass has 2-D deformable convolution")
    if xt.dtype not in ("float16", "float32", "float64"):
        ctx.fail(f"input 0 has dtype {xt.dtype}; a float dtype is expected")
    n, c, h, w = xt.shape
    if h < 2 or w < 2:
        ctx.fail(f"input {xt} must be at least 2x2 (positions are normalized by H - 1, W - 1)")
    o, cg, kh, kw = wt.shape
    groups = int(ctx.attr("group", 1))
    og = int(ctx.attr("offset_group", 1))
    k = kh * kw
    if c != cg * groups or o % groups or c % og:
        ctx.fail(f"weight {wt}, group {groups} and offset_group {og} do not fit input {xt}")
    if len(ot.shape) != 4 or ot.shape[:2] != (n, og * k * 2):
        ctx.fail(f"offset {ot} must be (N, offset_group * kH * kW * 2, oH, oW)")
    oh, ow = ot.shape[2:]
    strides = _list(ctx, "strides", 2, 1)
    dil = _list(ctx, "dilations", 2, 1)
    pads = _list(ctx, "pads", 4, 0)
    if ctx.has_attr("kernel_shape") and list(ctx.attr("kernel_shape")) != [kh, kw]:
        ctx.fail(f"kernel_shape {ctx.attr('kernel_shape')} does not match the weight {wt}")
    rows = np.arange(oh)[:, None] * strides[0] - pads[0]
    cols = np.arange(ow)[None, :] * strides[1] - pads[1]
    ti, tj = np.meshgrid(np.arange(kh) * dil[0], np.arange(kw) * dil[1], indexing="ij")
    base = np.stack([ti.reshape(-1, 1, 1) + rows + 0 * cols,
                     tj.reshape(-1, 1, 1) + cols + 0 * rows], axis=1)  # (k, 2, oH, oW)
    dtype = xt.dtype
    scale = np.array([2.0 / (h - 1), 2.0 / (w - 1)]).reshape(1, 1, 1, 2, 1, 1)
    pos = call("add", [call("reshape", [ctx.input(2)], newshape=[n, og, k, 2, oh, ow]),
                       as_const(ctx, base.astype(dtype))])
    norm = call("subtract", [call("multiply", [pos, as_const(ctx, scale.astype(dtype))]),
                             as_const(ctx, np.array(1.0, dtype))])
    # (N, og, 2 as (x, y), k, oH, oW)
    grid = call("transpose", [call("reverse", [norm], axis=3)], axes=[0, 1, 3, 2, 4, 5])
    mask = ctx.input(4, optional=True) if ctx.num_inputs > 4 else None
    if mask is not None:
        mask = call("reshape", [mask], newshape=[n, og, 1, k, oh, ow])
    per = c // og
    parts = []
    for g in range(og):
        pick = as_const(ctx, np.array(g, np.int64))
        grid_g = call("reshape", [call("take", [grid, pick], axis=1)],
                      newshape=[n, 2, k * oh, ow])
        data_g = call("take", [ctx.input(0), as_const(ctx, np.arange(g * per, (g + 1) * per))],
                      axis=1)
        sampled = call("reshape", [call("image.grid_sample", [data_g, grid_g],
                                        method="bilinear", padding_mode="zeros",
                                        align_corners=True)],
                       newshape=[n, per, k, oh, ow])
        if mask is not None:
            sampled = call("multiply", [sampled, call("take", [mask, pick], axis=1)])
        parts.append(sampled)
    columns = parts[0] if og == 1 else call("concatenate", [Tuple(parts)], axis=1)
    columns = call("reshape", [columns], newshape=[n, groups, cg * k, oh * ow])
    weight = call("reshape", [ctx.input(1)], newshape=[groups, o // groups, cg * k])
    y = call("reshape", [call("matmul", [weight, columns])], newshape=[n, o, oh, ow])
    bias = ctx.input(3, optional=True) if ctx.num_inputs > 3 else None
    if bias is not None:
        y = call("nn.bias_add", [y, bias], axis=1)
    return y


# -- non-maximum suppression --------------------------------------------------------------------


def nms_reference(boxes: np.ndarray, scores: np.ndarray, max_out: int, iou_threshold: float,
                  score_threshold: float | None, center_point_box: int) -> np.ndarray:
    """ONNX NonMaxSuppression's selected (batch, class, box) triples, in ONNX's order: for
    each batch and class, boxes by decreasing score, each kept unless it overlaps a kept one
    by more than ``iou_threshold`` (IoU), at most ``max_out`` per class."""
    if center_point_box:
        cx, cy, w, h = (boxes[..., i] for i in range(4))
        y1, x1, y2, x2 = cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2
    else:
        y1, x1, y2, x2 = (boxes[..., i] for i in range(4))
        y1, y2 = np.minimum(y1, y2), np.maximum(y1, y2)
        x1, x2 = np.minimum(x1, x2), np.maximum(x1, x2)
    area = (y2 - y1) * (x2 - x1)
    selected: list[tuple[int, int, int]] = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c]
            # a stable sort of -score: equal scores keep their box order
            order = [int(i) for i in np.argsort(-s, kind="stable")
                     if score_threshold is None or s[i] > score_threshold]
            kept: list[int] = []
            for i in order:
                if len(kept) >= max_out:
                    break
                ok = True
                for j in kept:
                    ih = min(y2[b, i], y2[b, j]) - max(y1[b, i], y1[b, j])
                    iw = min(x2[b, i], x2[b, j]) - max(x1[b, i], x1[b, j])
                    inter = max(ih, 0.0) * max(iw, 0.0)
                    union = area[b, i] + area[b, j] - inter
                    if inter > 0 and min(area[b, i], area[b, j], union) > 0 \
                            and inter / union > iou_threshold:
                        ok = False
                        break
                if ok:
                    kept.append(i)
            selected.extend((b, c, i) for i in kept)
    return np.array(selected, dtype=np.int64).reshape(-1, 3)


@converter("NonMaxSuppression", since=10)
def _nms(ctx: NodeContext) -> Expr:
    boxes = ctx.const_input(0, "boxes")
    scores = ctx.const_input(1, "scores")
    if boxes.ndim != 3 or boxes.shape[2] != 4:
        ctx.fail(f"boxes must be (batches, boxes, 4), got shape {list(boxes.shape)}")
    if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or \
            scores.shape[2] != boxes.shape[1]:
        ctx.fail(f"scores {list(scores.shape)} do not match boxes {list(boxes.shape)} "
                 "(expected (batches, classes, boxes))")
    max_out = ctx.const_input(2, "max_output_boxes_per_class", optional=True)
    iou = ctx.const_input(3, "iou_threshold", optional=True)
    score = ctx.const_input(4, "score_threshold", optional=True)
    limit = 0 if max_out is None or max_out.size == 0 else int(max_out.reshape(-1)[0])
    center = int(ctx.attr("center_point_box", 0))
    if center not in (0, 1):
        ctx.fail(f"center_point_box must be 0 or 1, got {center}")
    result = nms_reference(
        boxes, scores, max(limit, 0),
        0.0 if iou is None or iou.size == 0 else float(iou.reshape(-1)[0]),
        None if score is None or score.size == 0 else float(score.reshape(-1)[0]), center)
    return as_const(ctx, result)
