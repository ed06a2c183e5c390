"""Normalization: ``nn.batch_norm`` (inference mode) and ``nn.layer_norm``.

``nn.batch_norm`` returns a 3-field tuple (output, moving_mean, moving_var)
as Relay's does; the kernel normalizes with the moving statistics (there is
no training mode) and hands the statistics back unchanged. Users take
``bn[0]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.attrs import Attrs
from ...ir.nodes import Call
from ...ir.op import AttrField, OpPattern, attr_bool, attr_float, attr_int
from ...ir.types import TensorType, TupleType, Type
from .._common import (
    FLOAT_DTYPES,
    accumulate_dtype,
    check_dtype,
    make_call,
    normalize_axis,
    register,
    result,
    tensor_arg,
)

__all__ = ["batch_norm", "layer_norm"]


def _attr_epsilon(value: Any, where: str) -> float:
    eps = attr_float(value, where)
    if eps < 0:
        raise ValueError(f"{where} must be >= 0, got {eps}")
    return eps


def _check_params(
    op: str, data: TensorType, axis: int, params: list[tuple[str, Type]]
) -> tuple[int, int]:
    """Check the per-channel parameter vectors; returns (axis, channels)."""
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
            raise ValueError(
                f"{op}: {name} must have shape ({channels},) to match axis {axis} of data "
                f"{data.shape}, got {t.shape}"
            )
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
