"""Image ops (``image.*``, TVM Relay's names and attributes): ``image.resize1d``,
``image.resize2d`` and ``image.resize3d`` (nearest, linear and cubic interpolation of the
spatial axes) and ``image.grid_sample`` (sampling at given normalized coordinates).

Resizing maps each output position ``x`` along a spatial axis to a source coordinate
``x_ori`` by ``coordinate_transformation_mode`` (ONNX's and TVM's names):

- ``half_pixel``: ``(x + 0.5) / scale - 0.5``; ``pytorch_half_pixel`` the same but ``-0.5``
  for an output of length 1; ``half_pixel_symmetric`` centres the sampled region when the
  output size was rounded;
- ``align_corners``: ``x * (in - 1) / (out - 1)``; ``asymmetric``: ``x / scale``;
  ``tf_half_pixel_for_nn``: ``(x + 0.5) / scale``;
- ``tf_crop_and_resize``: the region ``roi`` (start then end of every spatial axis, as
  fractions of ``in - 1``) stretched over the output; a position whose source falls outside
  the input reads ``extrapolation_value``.

``scale`` is ``out / in`` unless the ``scales`` attribute (one per spatial axis, an irpass
addition for ONNX's ``scales`` operand, whose output size was rounded down) gives it.
Interpolation is separable: ``nearest_neighbor`` picks one element by
``rounding_method``; ``linear`` and ``cubic`` (Keys' kernel with ``cubic_alpha``) weigh
2 and 4 neighbours, indices clamped into the input; ``cubic_exclude`` drops the neighbours
outside the input and renormalizes; ``antialias`` (an irpass addition, ONNX's) widens the
linear or cubic kernel by ``1 / scale`` when downsampling. Weights are computed in float64,
the result cast to ``out_dtype`` (integers rounded half to even and clipped).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.nodes import Call
from ..ir.op import (
    AttrField,
    OpPattern,
    attr_bool,
    attr_choice,
    attr_dims,
    attr_float,
    attr_optional_dtype,
)
from ..ir.types import TensorType, Type
from ._common import (
    FLOAT_DTYPES,
    NUMERIC_DTYPES,
    attr_layout,
    check_dtype,
    check_rank,
    dims_may_agree,
    layout_dims,
    make_call,
    match_dims,
    register,
    result,
    tensor_arg,
    to_layout,
)
from .nn._window import AXIS_NAMES, SPATIAL, data_layouts

__all__ = ["resize1d", "resize2d", "resize3d", "grid_sample"]

_RESIZE = {1: "image.resize1d", 2: "image.resize2d", 3: "image.resize3d"}
METHODS = ("nearest_neighbor", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                    "tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric")
ROUNDING = ("", "round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _attr_floats(count: int, optional: bool) -> Callable[[Any, str], Any]:
    def convert(value: Any, where: str) -> Any:
        if value is None and optional:
            return None
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if not isinstance(value, (list, tuple)) or len(value) != count:
            raise ValueError(f"{where} must be {count} numbers, got {value!r}")
        vals = tuple(attr_float(v, f"{where}[{i}]") for i, v in enumerate(value))
        if not all(math.isfinite(v) for v in vals):
            raise ValueError(f"{where} must be finite, got {value!r}")
        return vals

    convert.__name__ = f"attr_floats{count}"
    return convert


def _attr_out_sizes(ndim: int) -> Callable[[Any, str], Any]:
    """The output sizes of a resize: ``ndim`` sizes (one is used for all), ints >= 0 or
    symbolic dims (a resize of a dynamic image, ``(h * 2, w * 2)``)."""
    names = ", ".join(AXIS_NAMES[a] for a in SPATIAL[ndim])

    def convert(value: Any, where: str) -> Any:
        vals = attr_dims(value, where)
        if len(vals) == 1:
            vals = vals * ndim
        if len(vals) != ndim:
            raise ValueError(f"{where} must be 1 or {ndim} sizes ({names}), got {value!r}")
        for v in vals:
            if type(v) is int and v < 0:
                raise ValueError(f"{where} values must be >= 0, got {value!r}")
        return vals

    convert.__name__ = f"attr_out_sizes{ndim}d"
    return convert


def _attr_scales(count: int) -> Callable[[Any, str], Any]:
    floats = _attr_floats(count, True)

    def convert(value: Any, where: str) -> Any:
        vals = floats(value, where)
        if vals is not None and any(v <= 0 for v in vals):
            raise ValueError(f"{where} must be > 0, got {value!r}")
        return vals

    convert.__name__ = f"attr_scales{count}"
    return convert


# -- resize ------------------------------------------------------------------------------------


def _resize_rel(ndim: int):
    op, sp = _RESIZE[ndim], SPATIAL[ndim]

    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types[0], op, "data")
        check_dtype(data, NUMERIC_DTYPES, op, "data")
        layout = attrs["layout"]
        check_rank(data, ndim + 2, op, "data", layout)
        d = layout_dims(data.shape, layout)
        if attrs["method"] != "nearest_neighbor" or attrs["coordinate_transformation_mode"] \
                == "tf_crop_and_resize":
            for a in sp:
                if d[a] == 0:
                    raise ValueError(f"{op}: data {data} is empty along {AXIS_NAMES[a]}; "
                                     "there is nothing to interpolate from")
        if attrs["antialias"] and attrs["method"] == "nearest_neighbor":
            raise ValueError(f"{op}: antialias applies to linear and cubic resizing, not "
                             "nearest_neighbor")
        out = dict(d)
        out.update(zip(sp, attrs["size"], strict=True))
        return TensorType(tuple(out[c] for c in layout), attrs["out_dtype"] or data.dtype)

    return rel


def source_coords(mode: str, size_in: int, size_out: int, scale: float,
                  roi: tuple[float, float]) -> tuple[np.ndarray, np.ndarray | None]:
    """The source coordinate of each output position along one axis, and (for
    ``tf_crop_and_resize``) which of them fall outside the input."""
    y = np.arange(size_out, dtype=np.float64)
    outside = None
    length = scale * size_in  # the output length before rounding
    if mode == "align_corners":
        x = np.zeros(size_out) if length == 1 else y * (size_in - 1) / (length - 1)
    elif mode == "asymmetric":
        x = y / scale
    elif mode == "tf_half_pixel_for_nn":
        x = (y + 0.5) / scale
    elif mode == "tf_crop_and_resize":
        start, end = roi
        if length == 1:
            x = np.full(size_out, (end - start) * (size_in - 1) / 2)
        else:
            x = y * (end - start) * (size_in - 1) / (length - 1)
        x = x + start * (size_in - 1)
        outside = (x < 0) | (x > size_in - 1)
    elif mode == "pytorch_half_pixel":
        x = np.full(size_out, -0.5) if length == 1 else (y + 0.5) / scale - 0.5
    elif mode == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    else:  # half_pixel_symmetric
        offset = size_in / 2 * (1 - size_out / length)
        x = offset + (y + 0.5) / scale - 0.5
    return x, outside


def _nearest_index(x: np.ndarray, rounding: str, size_in: int) -> np.ndarray:
    if rounding == "round_prefer_floor":
        idx = np.ceil(x - 0.5)
    elif rounding in ("round_prefer_ceil", "round"):
        idx = np.floor(x + 0.5)
    elif rounding == "floor":
        idx = np.floor(x)
    else:
        idx = np.ceil(x)
    return np.clip(idx, 0, size_in - 1).astype(np.intp)


def _keys(t: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel at distances ``t``."""
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _weights(x: np.ndarray, method: str, scale: float, alpha: float, antialias: bool,
             exclude: bool, size_in: int) -> np.ndarray:
    """The (out, in) interpolation matrix of a linear or cubic resize along one axis."""
    base = np.floor(x)
    # the left neighbour is preferred: an integer coordinate has fraction 1 from base - 1
    ratio = np.where(x == base, 1.0, x - base)
    support = 1 if method == "linear" else 2
    # Taps at (x - ratio) + k: 2 (linear) or 4 (cubic) of them, more when antialiasing
    # stretches the kernel by 1 / scale; tap k lies at distance k - ratio from x.
    stretch = min(scale, 1.0) if antialias else 1.0
    start = math.floor(-support / stretch) + 1
    offsets = np.arange(start, 2 - start)
    dist = (offsets[None, :] - ratio[:, None]) * stretch
    if method == "linear":
        coeffs = np.clip(1 - np.abs(dist), 0, 1)
    else:
        coeffs = _keys(dist, alpha)
    if antialias:
        coeffs = coeffs / coeffs.sum(axis=1, keepdims=True)
    idx = (x - ratio).astype(np.int64)[:, None] + offsets[None, :]
    if exclude:
        coeffs = np.where((idx < 0) | (idx >= size_in), 0.0, coeffs)
        total = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    matrix = np.zeros((len(x), size_in))
    rows = np.broadcast_to(np.arange(len(x))[:, None], idx.shape)
    np.add.at(matrix, (rows, np.clip(idx, 0, size_in - 1)), coeffs)
    return matrix


def axis_plan(attrs: Attrs, k: int, ndim: int, size_in: int,
              size_out: int) -> tuple[str, np.ndarray | None, np.ndarray | None]:
    """How spatial axis ``k`` (of ``ndim``) of a resize goes from ``size_in`` to
    ``size_out``: ``("identity", None, None)``, ``("gather", indices, outside)`` or
    ``("matrix", weights (out, in), outside)``; ``outside`` (or None) flags the output
    positions that read ``extrapolation_value``. The exporter writes the same plan as ONNX
    nodes where Resize has no equivalent form."""
    scales = attrs["scales"]
    scale = scales[k] if scales is not None else (size_out / size_in if size_in else 1.0)
    roi = attrs["roi"]
    mode = attrs["coordinate_transformation_mode"]
    if (size_out == size_in and math.isclose(scale, 1.0)
            and (mode != "tf_crop_and_resize" or (roi[k], roi[ndim + k]) == (0.0, 1.0))):
        return "identity", None, None  # whatever the mode
    x, outside = source_coords(mode, size_in, size_out, scale, (roi[k], roi[ndim + k]))
    if outside is not None and not outside.any():
        outside = None
    method = attrs["method"]
    if method == "nearest_neighbor":
        rounding = attrs["rounding_method"] or (
            "round" if mode in ("align_corners", "tf_half_pixel_for_nn") else "floor")
        return "gather", _nearest_index(x, rounding, size_in), outside
    matrix = _weights(x, method, scale, attrs["cubic_alpha"], attrs["antialias"],
                      attrs["cubic_exclude"], size_in)
    return "matrix", matrix, outside


def resize_axis(data: np.ndarray, axis: int, size_out: int, attrs: Attrs, k: int,
                ndim: int) -> np.ndarray:
    """``data`` resized along ``axis`` (spatial axis ``k`` of ``ndim``) to ``size_out``."""
    kind, plan, outside = axis_plan(attrs, k, ndim, data.shape[axis], size_out)
    if kind == "identity":
        return data
    if kind == "gather":
        out = np.take(data, plan, axis=axis)
    else:
        out = np.moveaxis(np.tensordot(plan, data, axes=([1], [axis])), 0, axis)
    if outside is not None:
        shape = [1] * data.ndim
        shape[axis] = size_out
        out = np.where(outside.reshape(shape), attrs["extrapolation_value"], out)
    return out


def _resize_kernel(ndim: int):
    canonical = "NC" + SPATIAL[ndim]

    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        data = args[0]
        x = to_layout(data, attrs["layout"], canonical)
        if attrs["method"] != "nearest_neighbor":
            x = x.astype(np.float64)
        for k in range(ndim):
            x = resize_axis(x, 2 + k, attrs["size"][k], attrs, k, ndim)
        out_dtype = np.dtype(attrs["out_dtype"] or data.dtype.name)
        if out_dtype.kind in "iu" and x.dtype.kind == "f":
            info = np.iinfo(out_dtype)
            x = np.clip(np.rint(x), info.min, info.max)
        return result(to_layout(np.asarray(x), canonical, attrs["layout"]), out_dtype)

    return kernel


def _resize_attrs(ndim: int) -> tuple[AttrField, ...]:
    first, last = data_layouts(ndim)
    axes = ", ".join(AXIS_NAMES[a] for a in SPATIAL[ndim])
    return (
        AttrField("size", _attr_out_sizes(ndim), doc=f"Output ({axes}); may be symbolic."),
        AttrField("roi", _attr_floats(2 * ndim, False), (0.0,) * ndim + (1.0,) * ndim,
                  doc="tf_crop_and_resize's region: every start, then every end."),
        AttrField("layout", attr_layout(first, last), first, doc="Data layout."),
        AttrField("method", attr_choice(*METHODS), "linear", doc="Interpolation method."),
        AttrField("coordinate_transformation_mode", attr_choice(*COORDINATE_MODES),
                  "half_pixel", doc="How output positions map to input coordinates."),
        AttrField("rounding_method", attr_choice(*ROUNDING), "",
                  doc='nearest_neighbor\'s rounding; "": round for align_corners and '
                  "tf_half_pixel_for_nn, floor otherwise (TVM's rule)."),
        AttrField("cubic_alpha", attr_float, -0.5, doc="The cubic kernel's a."),
        AttrField("cubic_exclude", attr_bool, False,
                  doc="Drop the neighbours outside the input and renormalize."),
        AttrField("extrapolation_value", attr_float, 0.0,
                  doc="tf_crop_and_resize's value outside the input."),
        AttrField("out_dtype", attr_optional_dtype, "", doc='"": the input dtype.'),
        AttrField("scales", _attr_scales(ndim), None,
                  doc=f"({axes}) scale factors (irpass); None: size / input size."),
        AttrField("antialias", attr_bool, False,
                  doc="Widen the linear/cubic kernel when downsampling (irpass, ONNX's)."),
    )


for _ndim in (1, 2, 3):
    register(
        _RESIZE[_ndim],
        num_inputs=1,
        type_rel=_resize_rel(_ndim),
        kernel=_resize_kernel(_ndim),
        pattern=OpPattern.INJECTIVE,
        attrs=_resize_attrs(_ndim),
        doc=f"Resize the {_ndim} spatial axes of an image by interpolation (ONNX Resize).",
    )


def _resize(ndim: int, data: Any, size: Any, roi: Any, layout: str, method: str,
            coordinate_transformation_mode: str, rounding_method: str, cubic_alpha: float,
            cubic_exclude: int, extrapolation_value: float, out_dtype: Any, scales: Any,
            antialias: bool) -> Call:
    if roi is None:
        roi = (0.0,) * ndim + (1.0,) * ndim
    return make_call(_RESIZE[ndim], [data], ["data"], size=size, roi=roi, layout=layout,
                     method=method,
                     coordinate_transformation_mode=coordinate_transformation_mode,
                     rounding_method=rounding_method, cubic_alpha=cubic_alpha,
                     cubic_exclude=bool(cubic_exclude),
                     extrapolation_value=extrapolation_value, out_dtype=out_dtype,
                     scales=scales, antialias=antialias)


def resize1d(data: Any, size: Any, roi: Any = None, layout: str = "NCW",
             method: str = "linear", coordinate_transformation_mode: str = "half_pixel",
             rounding_method: str = "", cubic_alpha: float = -0.5, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, out_dtype: Any = "", scales: Any = None,
             antialias: bool = False) -> Call:
    """Resize the width of ``data`` to ``size`` (Relay's signature, plus ``scales`` and
    ``antialias``; see the module docstring)."""
    return _resize(1, data, size, roi, layout, method, coordinate_transformation_mode,
                   rounding_method, cubic_alpha, cubic_exclude, extrapolation_value,
                   out_dtype, scales, antialias)


def resize2d(data: Any, size: Any, roi: Any = None, layout: str = "NCHW",
             method: str = "linear", coordinate_transformation_mode: str = "half_pixel",
             rounding_method: str = "", cubic_alpha: float = -0.5, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, out_dtype: Any = "", scales: Any = None,
             antialias: bool = False) -> Call:
    """Resize the height and width of ``data`` to ``size`` (Relay's signature, plus
    ``scales`` and ``antialias``; see the module docstring)."""
    return _resize(2, data, size, roi, layout, method, coordinate_transformation_mode,
                   rounding_method, cubic_alpha, cubic_exclude, extrapolation_value,
                   out_dtype, scales, antialias)


def resize3d(data: Any, size: Any, roi: Any = None, layout: str = "NCDHW",
             method: str = "linear", coordinate_transformation_mode: str = "half_pixel",
             rounding_method: str = "", cubic_alpha: float = -0.5, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, out_dtype: Any = "", scales: Any = None,
             antialias: bool = False) -> Call:
    """Resize the depth, height and width of ``data`` to ``size`` (Relay's signature,
    plus ``scales`` and ``antialias``; see the module docstring)."""
    return _resize(3, data, size, roi, layout, method, coordinate_transformation_mode,
                   rounding_method, cubic_alpha, cubic_exclude, extrapolation_value,
                   out_dtype, scales, antialias)


# -- grid_sample -------------------------------------------------------------------------------

_GRID_LAYOUTS = {"NCHW": 2, "NCDHW": 3}


def _grid_sample_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    op = "image.grid_sample"
    data = tensor_arg(arg_types[0], op, "data")
    grid = tensor_arg(arg_types[1], op, "grid")
    check_dtype(data, NUMERIC_DTYPES, op, "data")
    check_dtype(grid, FLOAT_DTYPES, op, "grid")
    ndim = _GRID_LAYOUTS[attrs["layout"]]
    check_rank(data, ndim + 2, op, "data", attrs["layout"])
    if (
        grid.ndim != ndim + 2
        or not dims_may_agree(grid.shape[1], ndim)
        or not dims_may_agree(grid.shape[0], data.shape[0])
    ):
        raise ValueError(
            f"{op}: grid {grid} must be (N, {ndim}, out...) with N = {data.shape[0]} (the "
            f"batch of data {data}) and {ndim} coordinates (x, y{', z' if ndim == 3 else ''})"
        )
    if attrs["method"] != "nearest" or attrs["padding_mode"] != "zeros":
        for size in data.shape[2:]:
            if size == 0:
                raise ValueError(f"{op}: data {data} has an empty spatial axis")
    batch = match_dims(op, "the batch of grid and data", data.shape[0], grid.shape[0])
    return TensorType((batch, data.shape[1]) + grid.shape[2:], data.dtype)


def _reflect(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """``x`` reflected at ``low`` and ``high`` until it lies between them."""
    span = high - low
    if span <= 0:
        return np.full_like(x, low)
    below = x < low
    dist = np.where(below, low - x, x - high)
    count = np.floor(dist / span)
    rest = dist - count * span
    even = count % 2 == 0
    inside = np.where(below, np.where(even, low + rest, high - rest),
                      np.where(even, high - rest, low + rest))
    return np.where((x < low) | (x > high), inside, x)


def _grid_taps(x: np.ndarray, method: str, size: int, padding: str, align: bool):
    """For one axis: the (indices, weights, valid) of every tap, each (taps, *points)."""
    low, high = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
    if method == "nearest":
        x = np.rint(x)
    if padding == "border":
        x = np.where((x < low) | (x > high), np.clip(x, 0, size - 1), x)
    elif padding == "reflection":
        x = _reflect(x, low, high)
    if method == "nearest":
        idx = np.trunc(x)[None]
        weights = np.ones_like(idx)
    else:
        base = np.floor(x)
        t = x - base
        if method == "bilinear":
            idx = np.stack([base, base + 1])
            weights = np.stack([1 - t, t])
        else:
            idx = np.stack([base - 1, base, base + 1, base + 2])
            weights = _keys(idx - x[None], -0.75)
    if padding == "zeros":
        valid = (idx >= 0) & (idx < size)
    else:
        valid = np.ones(idx.shape, dtype=bool)
        if padding == "border":
            idx = np.clip(idx, 0, size - 1)
        else:
            idx = np.trunc(_reflect(idx, low, high))
    return np.clip(idx, 0, max(size - 1, 0)).astype(np.intp), weights, valid


def _grid_sample_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, grid = args
    n, c, *sizes = data.shape
    ndim = len(sizes)
    align = attrs["align_corners"]
    # coordinates computed in the grid's precision (at least float32), as ONNX's reference
    work = np.result_type(grid.dtype, np.float32)
    g = grid.astype(work)
    out_shape = g.shape[2:]
    taps = []
    for axis, size in enumerate(sizes):
        v = g[:, ndim - 1 - axis]  # the grid lists x (width) first
        one, two = work.type(1), work.type(2)
        x = (v + one) / two * work.type(size - 1) if align else \
            ((v + one) * work.type(size) - one) / two
        taps.append(_grid_taps(x.astype(np.float64), attrs["method"], size,
                               attrs["padding_mode"], align))
    batch = np.arange(n).reshape((n,) + (1,) * len(out_shape))
    values = data.astype(np.float64)
    total = np.zeros((n, c) + out_shape)
    for combo in np.ndindex(*(len(t[0]) for t in taps)):
        index = [batch]
        weight = np.ones((n,) + out_shape)
        valid = np.ones((n,) + out_shape, dtype=bool)
        for (idx, w, ok), k in zip(taps, combo, strict=True):
            index.append(idx[k])
            weight = weight * w[k]
            valid &= ok[k]
        picked = values.transpose(0, *range(2, 2 + ndim), 1)[tuple(index)]  # (n, out..., c)
        picked = np.moveaxis(picked, -1, 1)
        total += np.where(valid[:, None], weight[:, None] * picked, 0.0)
    if data.dtype.kind in "iu":
        info = np.iinfo(data.dtype)
        total = np.clip(np.rint(total), info.min, info.max)
    return result(total, data.dtype)


register(
    "image.grid_sample",
    num_inputs=2,
    type_rel=_grid_sample_rel,
    kernel=_grid_sample_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(
        AttrField("method", attr_choice("nearest", "bilinear", "bicubic"), "bilinear",
                  doc="Interpolation (bicubic: Keys' kernel with a = -0.75)."),
        AttrField("layout", attr_choice(*_GRID_LAYOUTS), "NCHW",
                  doc="Data layout: NCHW (2-D) or NCDHW (3-D)."),
        AttrField("padding_mode", attr_choice("zeros", "border", "reflection"), "zeros",
                  doc="What a tap outside the input reads."),
        AttrField("align_corners", attr_bool, True,
                  doc="-1 and 1 are the centres (True) or outer edges of the corner elements."),
    ),
    doc="Sample data at the normalized coordinates of grid (N, 2 or 3, out...) (ONNX "
    "GridSample).",
)


def grid_sample(data: Any, grid: Any, method: str = "bilinear", layout: str = "NCHW",
                padding_mode: str = "zeros", align_corners: bool = True) -> Call:
    """Sample ``data`` (N, C, H, W) or (N, C, D, H, W) at ``grid`` (N, 2, H_out, W_out) or
    (N, 3, D_out, H_out, W_out), whose channel axis holds the normalized x (width), y
    (height)[, z (depth)] coordinates in [-1, 1] (Relay's signature)."""
    return make_call("image.grid_sample", [data, grid], ["data", "grid"], method=method,
                     layout=layout, padding_mode=padding_mode, align_corners=align_corners)
