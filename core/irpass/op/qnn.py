"""Quantization: ``qnn.quantize`` and ``qnn.dequantize`` (TVM Relay's names and attributes).

``qnn.quantize(data, output_scale, output_zero_point, axis, out_dtype)`` maps a float (or
int32) tensor to a quantized dtype::

    q = data / output_scale                      (numpy's dtype for the two, e.g. float32)
    integer out_dtype: clip(round_half_even(q) + zero_point, out_dtype's range)
    float8 out_dtype:  q clipped to the format's largest finite value, then converted
    float4 out_dtype:  q + zero_point converted (the format saturates by itself)

``qnn.dequantize(data, input_scale, input_zero_point, axis, out_dtype)`` is the inverse,
``(float32(data) - zero_point) * input_scale`` converted to ``out_dtype`` (a float8 or float4
``data`` has no zero point: it must be zero). These are ONNX's QuantizeLinear and
DequantizeLinear, which compute the same way.

The scale and the zero point are a scalar (or one element: per tensor), a 1-D tensor of
``data.shape[axis]`` elements (per axis), or a tensor of ``data``'s rank that broadcasts to it
(one value per element, what an importer makes of ONNX's block quantization). The zero point
has the quantized dtype; the scale a float dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.nodes import Call
from ..ir.op import AttrField, OpPattern, attr_dtype, attr_int
from ..ir.types import TensorType, Type, numpy_dtype
from ._common import (
    FLOAT_DTYPES,
    QUANTIZED_DTYPES,
    SMALL_FLOAT_DTYPES,
    broadcast_shapes,
    check_dtype,
    dims_may_agree,
    make_call,
    normalize_axis,
    register,
    result,
    shapes_may_agree,
    tensor_arg,
)

__all__ = ["quantize", "dequantize"]

#: What ``qnn.dequantize`` reads: the quantized dtypes and int32 (an accumulator).
_DEQUANTIZE_IN: frozenset[str] = QUANTIZED_DTYPES | {"int32"}
#: What ``qnn.quantize`` reads.
_QUANTIZE_IN: frozenset[str] = FLOAT_DTYPES | {"int32"}
_FLOAT8 = frozenset(d for d in SMALL_FLOAT_DTYPES if d.startswith("float8"))


def _param_shape(op: str, name: str, data: TensorType, param: TensorType, axis: int) -> tuple:
    """The shape ``param`` (a scale or zero point) broadcasts as against ``data``; a
    ``ValueError`` naming it when it fits none of the three forms."""
    if param.ndim == 0 or param.shape == (1,):
        return ()
    if param.ndim == 1 and data.ndim >= 1:
        ax = normalize_axis(axis, data.ndim, op)
        if not dims_may_agree(param.shape[0], data.shape[ax]):
            raise ValueError(f"{op}: {name} {param} has {param.shape[0]} elements but axis "
                             f"{axis} of data {data} has {data.shape[ax]}")
        return tuple(param.shape[0] if i == ax else 1 for i in range(data.ndim))
    if param.ndim == data.ndim:
        got = broadcast_shapes(op, ("data", data.shape), (name, param.shape))
        if not shapes_may_agree(got, data.shape):
            raise ValueError(f"{op}: {name} {param} does not broadcast to data {data}")
        return param.shape
    raise ValueError(f"{op}: {name} must be a scalar, a 1-D tensor along axis {axis} or a "
                     f"tensor of data's rank, got {param} for data {data}")


def _check_params(op: str, arg_types: tuple[Type, ...], axis: int,
                  zp_dtype: str) -> tuple[TensorType, TensorType, TensorType]:
    data = tensor_arg(arg_types[0], op, "data")
    scale = tensor_arg(arg_types[1], op, "scale")
    zero = tensor_arg(arg_types[2], op, "zero_point")
    check_dtype(scale, FLOAT_DTYPES, op, "scale")
    if zero.dtype != zp_dtype:
        raise TypeError(f"{op}: zero_point must have dtype {zp_dtype}, got {zero}")
    _param_shape(op, "scale", data, scale, axis)
    _param_shape(op, "zero_point", data, zero, axis)
    return data, scale, zero


def _as_param(value: np.ndarray, data: np.ndarray, axis: int) -> np.ndarray:
    """A scale or zero point reshaped to broadcast against ``data``."""
    if value.ndim == 0 or value.shape == (1,):
        return value.reshape(())
    if value.ndim == 1 and data.ndim >= 1:
        ax = axis + data.ndim if axis < 0 else axis
        return value.reshape(tuple(value.shape[0] if i == ax else 1 for i in range(data.ndim)))
    return value


# -- qnn.quantize ----------------------------------------------------------------------------


def _quantize_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    out_dtype = attrs["out_dtype"]
    if out_dtype not in QUANTIZED_DTYPES:
        raise ValueError(f"qnn.quantize: out_dtype must be a quantized dtype, got {out_dtype!r}")
    data, _, _ = _check_params("qnn.quantize", arg_types, attrs["axis"], out_dtype)
    check_dtype(data, _QUANTIZE_IN, "qnn.quantize", "data")
    return TensorType(data.shape, out_dtype)


def _quantize_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, scale, zero = (np.asarray(a) for a in args)
    axis, out_dtype = attrs["axis"], attrs["out_dtype"]
    q = data / _as_param(scale, data, axis)
    zero = _as_param(zero, data, axis)
    target = numpy_dtype(out_dtype)
    if out_dtype in _FLOAT8:
        big = float(_finfo_max(target))
        return result(np.clip(q, -big, big), target)
    if out_dtype in SMALL_FLOAT_DTYPES:
        return result(q + zero.astype(np.float32), target)
    bounds = _int_range(out_dtype)
    with np.errstate(invalid="ignore"):
        # through float64: every value of a 16-bit or smaller zero point is exact there, and
        # an out-of-range quotient clips instead of wrapping in an integer conversion
        rounded = np.rint(q).astype(np.float64) + zero.astype(np.float64)
    return result(np.clip(rounded, *bounds), target)


def _int_range(dtype: str) -> tuple[int, int]:
    bits = {"int2": 2, "uint2": 2, "int4": 4, "uint4": 4}.get(dtype)
    if bits is None:
        info = np.iinfo(dtype)
        return int(info.min), int(info.max)
    if dtype.startswith("u"):
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def _finfo_max(dtype: np.dtype) -> Any:
    import ml_dtypes  # numpy_dtype imported it already for this dtype

    return ml_dtypes.finfo(dtype).max


register(
    "qnn.quantize",
    num_inputs=3,
    type_rel=_quantize_rel,
    kernel=_quantize_kernel,
    pattern=OpPattern.BROADCAST,
    attrs=(
        AttrField("axis", attr_int, -1, doc="The axis of a 1-D (per-axis) scale."),
        AttrField("out_dtype", attr_dtype, "int8", doc="The quantized dtype."),
    ),
    doc="``data`` quantized: ``round(data / scale) + zero_point`` clipped to ``out_dtype``.",
)


def quantize(data: Any, output_scale: Any, output_zero_point: Any, axis: int = -1,
             out_dtype: str = "int8") -> Call:
    """``data`` quantized to ``out_dtype`` with ``output_scale`` and ``output_zero_point``
    (scalars, 1-D along ``axis``, or of ``data``'s rank)."""
    return make_call("qnn.quantize", [data, output_scale, output_zero_point],
                     ["data", "output_scale", "output_zero_point"], axis=axis,
                     out_dtype=out_dtype)


# -- qnn.dequantize --------------------------------------------------------------------------


def _dequantize_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "qnn.dequantize", "data")
    if data.dtype not in _DEQUANTIZE_IN:
        raise TypeError(f"qnn.dequantize: data must have a quantized dtype or int32, got {data}")
    _check_params("qnn.dequantize", arg_types, attrs["axis"], data.dtype)
    if attrs["out_dtype"] not in FLOAT_DTYPES:
        raise ValueError(f"qnn.dequantize: out_dtype must be a floating-point dtype, got "
                         f"{attrs['out_dtype']!r}")
    return TensorType(data.shape, attrs["out_dtype"])


def _dequantize_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, scale, zero = (np.asarray(a) for a in args)
    axis = attrs["axis"]
    x = data.astype(np.float32)
    if data.dtype.name not in SMALL_FLOAT_DTYPES:
        x = x - _as_param(zero, data, axis).astype(np.float32)
    elif np.any(zero.astype(np.float32) != 0):
        # the small float formats have no zero point; ONNX requires it to be zero
        raise ValueError(f"qnn.dequantize: the zero point of {data.dtype.name} data must be 0")
    return result(x * _as_param(scale, data, axis), attrs["out_dtype"])


register(
    "qnn.dequantize",
    num_inputs=3,
    type_rel=_dequantize_rel,
    kernel=_dequantize_kernel,
    pattern=OpPattern.BROADCAST,
    attrs=(
        AttrField("axis", attr_int, -1, doc="The axis of a 1-D (per-axis) scale."),
        AttrField("out_dtype", attr_dtype, "float32", doc="The float dtype of the result."),
    ),
    doc="``(data - zero_point) * scale`` computed in float32, converted to ``out_dtype``.",
)


def dequantize(data: Any, input_scale: Any, input_zero_point: Any, axis: int = -1,
               out_dtype: str = "float32") -> Call:
    """``data`` (quantized) back to float: ``(data - input_zero_point) * input_scale``."""
    return make_call("qnn.dequantize", [data, input_scale, input_zero_point],
                     ["data", "input_scale", "input_zero_point"], axis=axis,
                     out_dtype=out_dtype)
