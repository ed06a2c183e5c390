"""Activations and inference-mode regularizers: ``nn.relu``, ``nn.softmax``
and ``nn.dropout``.

``nn.dropout`` is the identity (inference semantics). Relay's op returns a
(output, mask) tuple and its builder hands users element 0; this op *is*
that element 0, so it has the input's type.
"""

from __future__ import annotations

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

__all__ = ["relu", "softmax", "dropout"]


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


def _softmax_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "nn.softmax", "data")
    check_dtype(data, FLOAT_DTYPES, "nn.softmax", "data")
    if data.ndim == 0:
        raise ValueError(f"nn.softmax: data must have at least one dimension, got {data}")
    normalize_axis(attrs["axis"], data.ndim, "nn.softmax")
    return data


def _softmax_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    x = args[0]
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
