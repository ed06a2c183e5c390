"""Normalization: ``nn.batch_norm`` (inference mode), ``nn.layer_norm``,
``nn.rms_norm``, ``nn.group_norm``, ``nn.instance_norm`` and ``nn.lrn`` (local
response normalization across channels).

``nn.batch_norm`` returns a 3-field tuple (output, moving_mean, moving_var)
as Relay's does; the kernel normalizes with the moving statistics (there is
no training mode) and hands the statistics back unchanged. Users take
``bn[0]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.attrs import Attrs
from ...ir.dims import Dim
from ...ir.nodes import Call
from ...ir.op import REQUIRED, AttrField, OpPattern, attr_bool, attr_float, attr_int, attr_ints
from ...ir.types import TensorType, TupleType, Type
from .._common import (
    FLOAT_DTYPES,
    accumulate_dtype,
    attr_positive_int,
    check_dtype,
    make_call,
    match_dims,
    match_shapes,
    normalize_axes,
    normalize_axis,
    register,
    result,
    shapes_may_agree,
    tensor_arg,
)

__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm", "lrn", "rms_norm"]


def _attr_epsilon(value: Any, where: str) -> float:
    eps = attr_float(value, where)
    if eps < 0:
        raise ValueError(f"{where} must be >= 0, got {eps}")
    return eps


def _check_params(
    op: str, data: TensorType, axis: int, params: list[tuple[str, Type]]
) -> tuple[int, Dim]:
    """Check the per-channel parameter vectors; returns (axis, channels).

    Symbolic sizes are assumed to agree unless they provably differ (the run time
    checks them), and a static size among them is the one returned."""
    check_dtype(data, FLOAT_DTYPES, op, "data")
    if data.ndim == 0:
        raise ValueError(f"{op}: data must have at least one dimension, got {data}")
    axis = normalize_axis(axis, data.ndim, op)
    channels = data.shape[axis]
    for name, ty in params:
        t = tensor_arg(ty, op, name)
        if t.dtype != data.dtype:
            raise TypeError(f"{op}: {name} has dtype {t.dtype} but data has {data.dtype}")
        if t.shape != (channels,):
            if not shapes_may_agree(t.shape, (channels,)):
                raise ValueError(
                    f"{op}: {name} must have shape ({channels},) to match axis {axis} of data "
                    f"{data.shape}, got {t.shape}"
                )
            channels = match_dims(op, f"{name} and axis {axis} of data", channels, t.shape[0])
    return axis, channels


def _along(vec: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """``vec`` shaped to broadcast along ``axis`` of an ``ndim``-D array."""
    shape = [1] * ndim
    shape[axis] = vec.shape[0]
    return vec.reshape(shape)


_BN_PARAMS = ("gamma", "beta", "moving_mean", "moving_var")


def _batch_norm_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    op = "nn.batch_norm"
    data = tensor_arg(arg_types[0], op, "data")
    params = list(zip(_BN_PARAMS, arg_types[1:], strict=True))
    _, channels = _check_params(op, data, attrs["axis"], params)
    stats = TensorType((channels,), data.dtype)
    return TupleType((data, stats, stats))


def _batch_norm_kernel(args: tuple, attrs: Attrs) -> tuple[np.ndarray, ...]:
    data, gamma, beta, mean, var = args
    wide = accumulate_dtype(data.dtype.name)
    axis = normalize_axis(attrs["axis"], data.ndim, "nn.batch_norm")

    def vec(v: np.ndarray) -> np.ndarray:
        return _along(v.astype(wide, copy=False), data.ndim, axis)

    out = (data.astype(wide, copy=False) - vec(mean)) / np.sqrt(vec(var) + attrs["epsilon"])
    if attrs["scale"]:
        out = out * vec(gamma)
    if attrs["center"]:
        out = out + vec(beta)
    return (result(out, data.dtype), mean.copy(), var.copy())


register(
    "nn.batch_norm",
    num_inputs=5,
    type_rel=_batch_norm_rel,
    kernel=_batch_norm_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(
        AttrField("axis", attr_int, 1, doc="The channel axis."),
        AttrField("epsilon", _attr_epsilon, 1e-5, doc="Added to the variance."),
        AttrField("center", attr_bool, True, doc="Add beta."),
        AttrField("scale", attr_bool, True, doc="Multiply by gamma."),
    ),
    doc="Batch normalization with the moving statistics; returns (out, moving_mean, moving_var).",
)


def batch_norm(
    data: Any,
    gamma: Any,
    beta: Any,
    moving_mean: Any,
    moving_var: Any,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Inference-mode batch normalization; a tuple-typed call (take ``[0]`` for the output)."""
    return make_call(
        "nn.batch_norm",
        [data, gamma, beta, moving_mean, moving_var],
        ["data", *_BN_PARAMS],
        axis=axis,
        epsilon=epsilon,
        center=center,
        scale=scale,
    )


def _layer_norm_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    op = "nn.layer_norm"
    data = tensor_arg(arg_types[0], op, "data")
    _check_params(op, data, attrs["axis"], [("gamma", arg_types[1]), ("beta", arg_types[2])])
    return data


def _layer_norm_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, gamma, beta = args
    wide = accumulate_dtype(data.dtype.name)
    axis = normalize_axis(attrs["axis"], data.ndim, "nn.layer_norm")
    x = data.astype(wide, copy=False)
    mean = np.mean(x, axis=axis, keepdims=True)
    var = np.mean(np.square(x - mean), axis=axis, keepdims=True)
    out = (x - mean) / np.sqrt(var + attrs["epsilon"])
    if attrs["scale"]:
        out = out * _along(gamma.astype(wide, copy=False), data.ndim, axis)
    if attrs["center"]:
        out = out + _along(beta.astype(wide, copy=False), data.ndim, axis)
    return result(out, data.dtype)


register(
    "nn.layer_norm",
    num_inputs=3,
    type_rel=_layer_norm_rel,
    kernel=_layer_norm_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(
        AttrField("axis", attr_int, -1, doc="The axis to normalize over."),
        AttrField("epsilon", _attr_epsilon, 1e-5, doc="Added to the variance."),
        AttrField("center", attr_bool, True, doc="Add beta."),
        AttrField("scale", attr_bool, True, doc="Multiply by gamma."),
    ),
    doc="Layer normalization over ``axis`` with per-element gamma and beta.",
)


def layer_norm(
    data: Any,
    gamma: Any,
    beta: Any,
    axis: int = -1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Normalize ``data`` over ``axis`` to zero mean and unit variance, then scale and shift."""
    return make_call(
        "nn.layer_norm",
        [data, gamma, beta],
        ["data", "gamma", "beta"],
        axis=axis,
        epsilon=epsilon,
        center=center,
        scale=scale,
    )


# -- rms_norm --------------------------------------------------------------------------------


def _attr_axes(value: Any, where: str) -> tuple[int, ...]:
    axes = attr_ints(value, where)
    if not axes:
        raise ValueError(f"{where} must name at least one axis, got {value!r}")
    return axes


def _rms_norm_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    op = "nn.rms_norm"
    data = tensor_arg(arg_types[0], op, "data")
    weight = tensor_arg(arg_types[1], op, "weight")
    check_dtype(data, FLOAT_DTYPES, op, "data")
    if weight.dtype != data.dtype:
        raise TypeError(f"{op}: weight has dtype {weight.dtype} but data has {data.dtype}")
    axes = normalize_axes(attrs["axes"], data.ndim, op, "axes")
    at_axes = tuple(data.shape[a] for a in axes)
    if weight.shape == at_axes:
        return data
    try:
        refined = match_shapes(op, "weight's shape and data's shape at axes", weight.shape, at_axes)
    except ValueError:
        raise ValueError(
            f"{op}: weight must have shape {at_axes} (data {data.shape} at axes "
            f"{attrs['axes']}), got {weight.shape}"
        ) from None
    shape = list(data.shape)
    for a, d in zip(axes, refined, strict=True):
        shape[a] = d
    return TensorType(tuple(shape), data.dtype)


def _rms_norm_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, weight = args
    wide = accumulate_dtype(data.dtype.name)
    axes = normalize_axes(attrs["axes"], data.ndim, "nn.rms_norm", "axes")
    x = data.astype(wide, copy=False)
    ms = np.mean(np.square(x), axis=axes, keepdims=True)
    # weight's dims follow ``axes`` as given: put them in data's order, then broadcast
    order = sorted(range(len(axes)), key=axes.__getitem__)
    w = weight.astype(wide, copy=False).transpose(order)
    shape = [1] * data.ndim
    for a in axes:
        shape[a] = data.shape[a]
    out = x / np.sqrt(ms + np.asarray(attrs["epsilon"], wide)) * w.reshape(shape)
    return result(out, data.dtype)


register(
    "nn.rms_norm",
    num_inputs=2,
    type_rel=_rms_norm_rel,
    kernel=_rms_norm_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(
        AttrField("axes", _attr_axes, (-1,), doc="The axes to normalize over."),
        AttrField("epsilon", _attr_epsilon, 1e-5, doc="Added to the mean square."),
    ),
    doc="Root-mean-square normalization (TVM Relax's rms_norm, ONNX RMSNormalization): "
    "data / sqrt(mean(data ** 2 over axes) + epsilon) * weight; weight has data's shape "
    "at axes.",
)


def rms_norm(data: Any, weight: Any, axes: Any = (-1,), epsilon: float = 1e-5) -> Call:
    """Root-mean-square normalization of ``data`` over ``axes``, scaled by ``weight``.

    ``data / sqrt(mean(data ** 2 over axes) + epsilon) * weight``. ``weight``'s shape is
    ``data``'s at ``axes``, in the order ``axes`` lists them (as TVM Relax requires);
    the result has ``data``'s type. Float16 and bfloat16 data are computed in float32.
    """
    return make_call("nn.rms_norm", [data, weight], ["data", "weight"], axes=axes,
                     epsilon=epsilon)


# -- group_norm and instance_norm -------------------------------------------------------------
#
# As in TVM: the statistics of both are taken per batch item and per channel group, over the
# group's channels and every axis other than the batch (0) and channel (``axis``) ones;
# instance_norm is group_norm with one channel per group.


def _grouped_rel(op: str, arg_types: tuple[Type, ...], attrs: Attrs, groups: int | None) -> Type:
    data = tensor_arg(arg_types[0], op, "data")
    min_rank = 2 if groups is not None else 3
    if data.ndim < min_rank:
        raise ValueError(f"{op}: data must have at least {min_rank} dimensions (batch, channel"
                         f"{'' if groups is not None else ', spatial...'}), got {data}")
    axis, channels = _check_params(op, data, attrs["axis"],
                                   [("gamma", arg_types[1]), ("beta", arg_types[2])])
    if axis == 0:
        raise ValueError(f"{op}: axis must name the channel axis, not the batch axis 0")
    if groups is not None and type(channels) is int and channels % groups:
        raise ValueError(f"{op}: num_groups {groups} does not divide the {channels} channels of "
                         f"axis {axis} of data {data.shape}")
    return data


def _grouped_kernel(op: str, args: tuple, attrs: Attrs, groups: int) -> np.ndarray:
    data, gamma, beta = args
    wide = accumulate_dtype(data.dtype.name)
    axis = normalize_axis(attrs["axis"], data.ndim, op)
    channels = data.shape[axis]
    # (..., C, ...) -> (..., G, C/G, ...): statistics over all but the batch and group axes
    split = data.shape[:axis] + (groups, channels // groups) + data.shape[axis + 1:]
    x = data.astype(wide, copy=False).reshape(split)
    reduce = tuple(d for d in range(1, len(split)) if d != axis)
    mean = np.mean(x, axis=reduce, keepdims=True)
    var = np.mean(np.square(x - mean), axis=reduce, keepdims=True)
    out = ((x - mean) / np.sqrt(var + attrs["epsilon"])).reshape(data.shape)
    if attrs["scale"]:
        out = out * _along(gamma.astype(wide, copy=False), data.ndim, axis)
    if attrs["center"]:
        out = out + _along(beta.astype(wide, copy=False), data.ndim, axis)
    return result(out, data.dtype)


def _group_norm_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    return _grouped_rel("nn.group_norm", arg_types, attrs, attrs["num_groups"])


def _group_norm_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    return _grouped_kernel("nn.group_norm", args, attrs, attrs["num_groups"])


register(
    "nn.group_norm",
    num_inputs=3,
    type_rel=_group_norm_rel,
    kernel=_group_norm_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(
        AttrField("num_groups", attr_positive_int, REQUIRED,
                  doc="Channel groups; divides the channels."),
        AttrField("axis", attr_int, 1, doc="The channel axis."),
        AttrField("epsilon", _attr_epsilon, 1e-5, doc="Added to the variance."),
        AttrField("center", attr_bool, True, doc="Add beta."),
        AttrField("scale", attr_bool, True, doc="Multiply by gamma."),
    ),
    doc="Group normalization: statistics per batch item and channel group (over the group's "
    "channels and all non-batch, non-channel axes), then per-channel gamma and beta.",
)


def group_norm(
    data: Any,
    gamma: Any,
    beta: Any,
    num_groups: int,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Normalize each group of ``num_groups`` channel groups of ``data`` (channels on
    ``axis``) to zero mean and unit variance, then scale and shift per channel."""
    return make_call(
        "nn.group_norm",
        [data, gamma, beta],
        ["data", "gamma", "beta"],
        num_groups=num_groups,
        axis=axis,
        epsilon=epsilon,
        center=center,
        scale=scale,
    )


def _instance_norm_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    return _grouped_rel("nn.instance_norm", arg_types, attrs, None)


def _instance_norm_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data = args[0]
    axis = normalize_axis(attrs["axis"], data.ndim, "nn.instance_norm")
    return _grouped_kernel("nn.instance_norm", args, attrs, data.shape[axis])


register(
    "nn.instance_norm",
    num_inputs=3,
    type_rel=_instance_norm_rel,
    kernel=_instance_norm_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(
        AttrField("axis", attr_int, 1, doc="The channel axis."),
        AttrField("epsilon", _attr_epsilon, 1e-5, doc="Added to the variance."),
        AttrField("center", attr_bool, True, doc="Add beta."),
        AttrField("scale", attr_bool, True, doc="Multiply by gamma."),
    ),
    doc="Instance normalization: statistics per batch item and channel over all other axes, "
    "then per-channel gamma and beta.",
)


def instance_norm(
    data: Any,
    gamma: Any,
    beta: Any,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Normalize each channel (on ``axis``) of each batch item of ``data`` over the remaining
    axes to zero mean and unit variance, then scale and shift per channel."""
    return make_call(
        "nn.instance_norm",
        [data, gamma, beta],
        ["data", "gamma", "beta"],
        axis=axis,
        epsilon=epsilon,
        center=center,
        scale=scale,
    )


# -- lrn ---------------------------------------------------------------------------------------


def _attr_finite(value: Any, where: str) -> float:
    v = attr_float(value, where)
    if not np.isfinite(v):
        raise ValueError(f"{where} must be a finite number, got {v}")
    return v


def _lrn_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "nn.lrn", "data")
    check_dtype(data, FLOAT_DTYPES, "nn.lrn", "data")
    if data.ndim == 0:
        raise ValueError(f"nn.lrn: data must have at least one dimension, got {data}")
    normalize_axis(attrs["axis"], data.ndim, "nn.lrn")
    return data


def _lrn_window(size: int) -> tuple[int, int]:
    """How many neighbours before and after a channel its window holds.

    ONNX LRN's window ``[c - floor((size - 1) / 2), c + ceil((size - 1) / 2)]``;
    for an odd ``size`` (TVM's case) both are ``size // 2``.
    """
    return (size - 1) // 2, size // 2


def _lrn_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data = args[0]
    wide = data.astype(accumulate_dtype(data.dtype.name), copy=False)
    axis = normalize_axis(attrs["axis"], data.ndim, "nn.lrn")
    size = attrs["size"]
    before, after = _lrn_window(size)
    channels = data.shape[axis]
    pad = [(0, 0)] * data.ndim
    pad[axis] = (before, after)
    sq = np.pad(np.square(wide), pad)
    # the window sum as ``size`` shifted slices of the zero-padded squares: no
    # cumulative sum, whose rounding would differ from a direct sum
    index: list[Any] = [slice(None)] * data.ndim
    total = np.zeros_like(wide)
    for k in range(size):
        index[axis] = slice(k, k + channels)
        total = total + sq[tuple(index)]
    base = attrs["bias"] + (attrs["alpha"] / size) * total
    return result(wide / np.power(base, attrs["beta"]), data.dtype)


register(
    "nn.lrn",
    num_inputs=1,
    type_rel=_lrn_rel,
    kernel=_lrn_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(
        AttrField("size", attr_positive_int, 5, doc="Channels in the window."),
        AttrField("axis", attr_int, 1, doc="The channel axis."),
        AttrField("bias", _attr_finite, 2.0, doc="Added to the scaled sum of squares."),
        AttrField("alpha", _attr_finite, 1e-4, doc="Scale of the sum of squares (over size)."),
        AttrField("beta", _attr_finite, 0.75, doc="Exponent."),
    ),
    doc="Local response normalization: data / (bias + alpha / size * sum of squares over a "
    "window of ``size`` channels along ``axis``) ** beta (ONNX LRN, TVM's nn.lrn).",
)


def lrn(
    data: Any,
    size: int = 5,
    axis: int = 1,
    bias: float = 2.0,
    alpha: float = 1e-4,
    beta: float = 0.75,
) -> Call:
    """Local response normalization of ``data`` across ``size`` neighbouring channels.

    ``out = data / (bias + alpha / size * sum(data[window] ** 2)) ** beta``, the window
    along ``axis`` being ``[c - (size - 1) // 2, c + size // 2]`` clipped to the tensor
    (ONNX LRN; the same as TVM for odd sizes).
    """
    return make_call(
        "nn.lrn", [data], ["data"], size=size, axis=axis, bias=bias, alpha=alpha, beta=beta
    )
