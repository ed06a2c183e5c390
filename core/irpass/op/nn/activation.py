"""Activations and inference-mode regularizers: ``nn.relu``,
``nn.leaky_relu``, ``nn.softmax``, ``nn.log_softmax`` and ``nn.dropout``.

``nn.dropout`` is the identity (inference semantics). Relay's op returns a
(output, mask) tuple and its builder hands users element 0; this op *is*
that element 0, so it has the input's type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir.attrs import Attrs
from ...ir.nodes import Call
from ...ir.op import AttrField, OpPattern, attr_float, attr_int
from ...ir.types import Type
from .._common import (
    FLOAT_DTYPES,
    NUMERIC_DTYPES,
    accumulate_dtype,
    check_dtype,
    make_call,
    normalize_axis,
    register,
    result,
    tensor_arg,
)

__all__ = ["relu", "leaky_relu", "softmax", "log_softmax", "dropout"]


def _relu_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "nn.relu", "data")
    check_dtype(data, NUMERIC_DTYPES, "nn.relu", "data")
    return data


def _relu_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    x = args[0]
    return result(np.maximum(x, np.zeros((), dtype=x.dtype)), x.dtype)


register(
    "nn.relu",
    num_inputs=1,
    type_rel=_relu_rel,
    kernel=_relu_kernel,
    pattern=OpPattern.ELEMWISE,
    doc="Rectified linear unit: max(data, 0) elementwise.",
)


def relu(data: Any) -> Call:
    """``max(data, 0)`` elementwise."""
    return make_call("nn.relu", [data], ["data"])


def _leaky_relu_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "nn.leaky_relu", "data")
    check_dtype(data, FLOAT_DTYPES, "nn.leaky_relu", "data")
    return data


def _leaky_relu_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    x = args[0]
    wide = x.astype(accumulate_dtype(x.dtype.name), copy=False)
    # alpha in the computation dtype, as ONNX runtimes multiply (float * float).
    alpha = np.asarray(attrs["alpha"], dtype=wide.dtype)
    return result(np.where(wide >= 0, wide, wide * alpha), x.dtype)


register(
    "nn.leaky_relu",
    num_inputs=1,
    type_rel=_leaky_relu_rel,
    kernel=_leaky_relu_kernel,
    pattern=OpPattern.ELEMWISE,
    attrs=(AttrField("alpha", attr_float, 0.01, doc="The slope for negative inputs."),),
    doc="Leaky rectified linear unit: data where data >= 0, else alpha * data.",
)


def leaky_relu(data: Any, alpha: float = 0.01) -> Call:
    """``data`` where it is >= 0, else ``alpha * data`` (a float tensor)."""
    return make_call("nn.leaky_relu", [data], ["data"], alpha=alpha)


def _axis_rel(name: str) -> Callable[[tuple[Type, ...], Attrs], Type]:
    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types[0], name, "data")
        check_dtype(data, FLOAT_DTYPES, name, "data")
        if data.ndim == 0:
            raise ValueError(f"{name}: data must have at least one dimension, got {data}")
        normalize_axis(attrs["axis"], data.ndim, name)
        return data

    return rel


_softmax_rel = _axis_rel("nn.softmax")


def _softmax_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    x = args[0]
    if x.size == 0:
        # Nothing to normalize (and an empty axis has no max): empty in, empty out.
        return np.empty(x.shape, x.dtype)
    wide = x.astype(accumulate_dtype(x.dtype.name), copy=False)
    axis = attrs["axis"]
    # Subtracting the max keeps exp() from overflowing; the ratio is unchanged.
    shifted = wide - np.max(wide, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return result(e / np.sum(e, axis=axis, keepdims=True), x.dtype)


register(
    "nn.softmax",
    num_inputs=1,
    type_rel=_softmax_rel,
    kernel=_softmax_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(AttrField("axis", attr_int, -1, doc="The axis to normalize over."),),
    doc="exp(x) / sum(exp(x)) along ``axis`` (computed stably).",
)


def softmax(data: Any, axis: int = -1) -> Call:
    """Softmax of ``data`` along ``axis``."""
    return make_call("nn.softmax", [data], ["data"], axis=axis)


def _log_softmax_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    x = args[0]
    if x.size == 0:
        # As in softmax; log(sum over an empty axis) would also warn of log(0).
        return np.empty(x.shape, x.dtype)
    wide = x.astype(accumulate_dtype(x.dtype.name), copy=False)
    axis = attrs["axis"]
    # log(sum(exp(x - max))) never overflows and is >= 0, so the result keeps
    # its precision where softmax itself would underflow to 0 (log of 0).
    shifted = wide - np.max(wide, axis=axis, keepdims=True)
    out = shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    return result(out, x.dtype)


register(
    "nn.log_softmax",
    num_inputs=1,
    type_rel=_axis_rel("nn.log_softmax"),
    kernel=_log_softmax_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(AttrField("axis", attr_int, -1, doc="The axis to normalize over."),),
    doc="log(softmax(x)) along ``axis``: x - max - log(sum(exp(x - max))) (computed stably).",
)


def log_softmax(data: Any, axis: int = -1) -> Call:
    """The logarithm of the softmax of ``data`` along ``axis``, computed stably."""
    return make_call("nn.log_softmax", [data], ["data"], axis=axis)


def _attr_rate(value: Any, where: str) -> float:
    rate = attr_float(value, where)
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"{where} must be in [0, 1), got {rate}")
    return rate


def _dropout_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    return tensor_arg(arg_types[0], "nn.dropout", "data")


def _dropout_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    # A copy, so the result never aliases the caller's input array.
    return np.array(args[0], copy=True)


register(
    "nn.dropout",
    num_inputs=1,
    type_rel=_dropout_rel,
    kernel=_dropout_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(AttrField("rate", _attr_rate, 0.5, doc="Drop probability (training only)."),),
    doc="Dropout in inference mode: the identity. Relay's op returns (output, mask); "
    "this is its output.",
)


def dropout(data: Any, rate: float = 0.5) -> Call:
    """Dropout with probability ``rate``; at inference this is the identity."""
    return make_call("nn.dropout", [data], ["data"], rate=rate)
