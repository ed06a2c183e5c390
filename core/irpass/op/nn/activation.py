"""Activations and inference-mode regularizers: ``nn.relu``,
``nn.leaky_relu``, ``nn.gelu``, ``nn.silu``, ``nn.hard_swish``, ``nn.softmax``,
``nn.log_softmax`` and ``nn.dropout``.

``nn.gelu``, ``nn.silu`` and ``nn.hard_swish`` are the fused forms of the
activations transformers and modern CNNs write as chains of elementwise ops
(ONNX ``Gelu``-20, ``Swish`` with alpha 1 and ``HardSwish``); they compute in
float32 for float16 and bfloat16 data, as the normalizations do.

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
from ...ir.op import AttrField, OpPattern, attr_choice, attr_float, attr_int
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
from .._erf import erf as _erf
from ..tensor import _sigmoid

__all__ = ["relu", "leaky_relu", "gelu", "silu", "hard_swish", "softmax", "log_softmax",
           "dropout"]


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


def _float_unary_rel(name: str) -> Callable[[tuple[Type, ...], Attrs], Type]:
    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types[0], name, "data")
        check_dtype(data, FLOAT_DTYPES, name, "data")
        return data

    return rel


def _widened(fn: Callable[[np.ndarray, Attrs], np.ndarray]) -> Callable[[tuple, Attrs], np.ndarray]:
    """A kernel applying ``fn`` to its input in the accumulate dtype, rounded back."""

    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        x = args[0]
        return result(fn(x.astype(accumulate_dtype(x.dtype.name), copy=False), attrs), x.dtype)

    return kernel


_SQRT_HALF = 0.70710678118654752440
_SQRT_2_OVER_PI = 0.79788456080286535588


def _gelu(x: np.ndarray, attrs: Attrs) -> np.ndarray:
    one = np.ones((), x.dtype)
    half = np.asarray(0.5, x.dtype)
    if attrs["approximate"] == "tanh":
        inner = np.asarray(_SQRT_2_OVER_PI, x.dtype) * (x + np.asarray(0.044715, x.dtype) * x**3)
        return half * x * (one + np.tanh(inner))
    # erf in float64 (the helper's precision), then back to x's computation dtype
    cdf = (one + _erf(x * np.asarray(_SQRT_HALF, x.dtype)).astype(x.dtype, copy=False))
    return half * x * cdf


register(
    "nn.gelu",
    num_inputs=1,
    type_rel=_float_unary_rel("nn.gelu"),
    kernel=_widened(_gelu),
    pattern=OpPattern.ELEMWISE,
    attrs=(
        AttrField("approximate", attr_choice("none", "tanh"), "none",
                  doc='"none": the exact form with erf; "tanh": the tanh approximation.'),
    ),
    doc="Gaussian error linear unit (ONNX Gelu-20): 0.5 * x * (1 + erf(x / sqrt(2))), or "
    'with approximate="tanh" 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3))).',
)


def gelu(data: Any, approximate: str = "none") -> Call:
    """The Gaussian error linear unit of ``data`` (a float tensor), elementwise.

    ``approximate="none"`` is the exact ``0.5 * x * (1 + erf(x / sqrt(2)))``;
    ``"tanh"`` is ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``
    (ONNX ``Gelu``-20 and torch's ``gelu`` with the same attribute).
    """
    return make_call("nn.gelu", [data], ["data"], approximate=approximate)


def _silu(x: np.ndarray, attrs: Attrs) -> np.ndarray:
    return x * _sigmoid(x)


register(
    "nn.silu",
    num_inputs=1,
    type_rel=_float_unary_rel("nn.silu"),
    kernel=_widened(_silu),
    pattern=OpPattern.ELEMWISE,
    doc="Sigmoid linear unit (Swish with alpha 1): x * sigmoid(x).",
)


def silu(data: Any) -> Call:
    """``data * sigmoid(data)`` elementwise (a float tensor): SiLU, ONNX ``Swish`` with alpha 1."""
    return make_call("nn.silu", [data], ["data"])


def _hard_swish(x: np.ndarray, attrs: Attrs) -> np.ndarray:
    gate = np.clip(x * np.asarray(1 / 6, x.dtype) + np.asarray(0.5, x.dtype), 0, 1)
    return x * gate.astype(x.dtype, copy=False)


register(
    "nn.hard_swish",
    num_inputs=1,
    type_rel=_float_unary_rel("nn.hard_swish"),
    kernel=_widened(_hard_swish),
    pattern=OpPattern.ELEMWISE,
    doc="Hard swish (ONNX HardSwish): x * clip(x / 6 + 1 / 2, 0, 1).",
)


def hard_swish(data: Any) -> Call:
    """``data * clip(data / 6 + 1 / 2, 0, 1)`` elementwise (a float tensor; ONNX ``HardSwish``)."""
    return make_call("nn.hard_swish", [data], ["data"])


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
