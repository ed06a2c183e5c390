"""Emitters of the cast and quantization ops (``cast``, ``reinterpret``, ``qnn.*``).

A dtype an opset cannot spell (bfloat16 before 13, float8 before 19, int4 before 21, float4,
float8_e8m0fnu and the 2-bit integers after 21) is a clean export error naming the node.
``qnn.quantize``/``qnn.dequantize`` are QuantizeLinear/DequantizeLinear where ONNX's op
computes the same (a per-tensor or per-axis scale of the data's dtype); otherwise, e.g. for a
scale with one value per element (block quantization), they are written out as the same
arithmetic (Div, Round, Add, Clip, Cast; opset 11 for Round).
"""

from __future__ import annotations

import numpy as np
from irpass.ir.types import numpy_dtype

from ..dtypes import onnx_type_of
from .builder import EmitContext, emitter

__all__: list[str] = []

_FLOAT8 = frozenset({"float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"})
_SMALL_FLOATS = _FLOAT8 | {"float4_e2m1fn", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn"}
#: The opset from which QuantizeLinear writes (and DequantizeLinear reads) each dtype.
_QUANT_MIN_OPSET = {"int8": 10, "uint8": 10, "int16": 21, "uint16": 21, "int4": 21,
                    "uint4": 21, **{d: 19 for d in _FLOAT8}}
_INT_RANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
              "uint16": (0, 65535), "int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1),
              "uint2": (0, 3)}
_INTS = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                   "int4", "uint4", "int2", "uint2"})
_FLOAT8_MAX = {"float8_e4m3fn": 448.0, "float8_e4m3fnuz": 240.0, "float8_e5m2": 57344.0,
               "float8_e5m2fnuz": 57344.0}


def _check_dtypes(ctx: EmitContext, *dtypes: str) -> None:
    """An export error if the opset has no ONNX type for one of ``dtypes``."""
    for d in dtypes:
        try:
            onnx_type_of(d, "a dtype", ctx.opset)
        except ValueError as err:
            raise ctx.fail(str(err)) from None


@emitter("cast")
def _cast(ctx: EmitContext) -> str:
    src, dst = ctx.type_of(0).dtype, ctx.attrs["dtype"]
    if src == dst:
        return ctx.input(0)
    _check_dtypes(ctx, src, dst)
    if dst in _FLOAT8:
        # the core's cast does not saturate; ONNX's does unless told not to
        return ctx.emit("Cast", [ctx.input(0)], to=ctx.onnx_type(dst), saturate=0)
    return ctx.cast(ctx.input(0), dst)


@emitter("reinterpret")
def _reinterpret(ctx: EmitContext) -> str:
    src, dst = ctx.type_of(0).dtype, ctx.attrs["dtype"]
    if src == dst:
        return ctx.input(0)
    _check_dtypes(ctx, src, dst)
    if dst in _INTS and (src in _INTS or src == "bool"):
        # between integers of one width (or from bool) the bits are the value modulo 2**n,
        # which is what Cast keeps
        return ctx.cast(ctx.input(0), dst)
    if ctx.opset < 26:
        raise ctx.fail("reinterpret between these dtypes is ONNX's BitCast, which needs "
                       "opset >= 26")
    return ctx.emit("BitCast", [ctx.input(0)], to=ctx.onnx_type(dst))


def _linear_params(ctx: EmitContext, data_ndim: int) -> list[str] | None:
    """The scale (input 1) and zero point (input 2) as QuantizeLinear/DequantizeLinear take
    them -- both scalars, or both 1-D along the axis (from opset 13) -- or None. A constant
    scalar zero point is repeated to a 1-D scale's shape."""
    s, z = ctx.type_of(1), ctx.type_of(2)
    if s.ndim > 1:
        return None
    if s.ndim == 1 and s.shape[0] != 1 and (ctx.opset < 13 or data_ndim == 0):
        return None  # per-axis from opset 13
    if z.shape == s.shape:
        return [ctx.input(1), ctx.input(2)]
    data = ctx.const(2)
    if data is None or data.size != 1:
        return None
    return [ctx.input(1), ctx.constant(np.broadcast_to(data.reshape(()), s.shape).copy(),
                                       hint="zero_point")]


def _axis_attr(ctx: EmitContext, ndim: int) -> int | None:
    if ctx.opset < 13 or ctx.type_of(1).ndim == 0 or ndim == 0:
        return None
    axis = ctx.attrs["axis"]
    return axis + ndim if axis < 0 else axis


def _param(ctx: EmitContext, i: int, ndim: int, dtype: str) -> str:
    """Scale or zero point ``i`` cast to ``dtype`` and shaped to broadcast against data of
    rank ``ndim`` (what the core op's 1-D form means)."""
    ty = ctx.type_of(i)
    name = ctx.input(i) if ty.dtype == dtype else ctx.cast(ctx.input(i), dtype)
    if ty.ndim == 1 and ndim > 1:
        axis = ctx.attrs["axis"]
        axis = axis + ndim if axis < 0 else axis
        shape = [1] * ndim
        shape[axis] = ty.shape[0]
        return ctx.reshape(name, shape)
    return name


@emitter("qnn.quantize")
def _quantize(ctx: EmitContext) -> str:
    xt, st = ctx.type_of(0), ctx.type_of(1)
    out = ctx.attrs["out_dtype"]
    _check_dtypes(ctx, xt.dtype, st.dtype, out)
    params = _linear_params(ctx, xt.ndim)
    if (params is not None and _onnx_scale_ok(ctx, xt.dtype, st.dtype)
            and ctx.opset >= _QUANT_MIN_OPSET.get(out, 10**9)):
        return ctx.emit("QuantizeLinear", [ctx.input(0), *params],
                        axis=_axis_attr(ctx, xt.ndim))
    # the quotient in numpy's dtype for data and scale, as the core computes it
    wide = np.result_type(numpy_dtype(xt.dtype), numpy_dtype(st.dtype)).name
    if wide not in ("float16", "float32", "float64"):
        wide = "float32"
    x = ctx.input(0) if xt.dtype == wide else ctx.cast(ctx.input(0), wide)
    q = ctx.emit("Div", [x, _param(ctx, 1, xt.ndim, wide)])
    if out in _FLOAT8:
        big = _FLOAT8_MAX[out]
        q = ctx.emit("Clip", [q, ctx.constant(np.array(-big, wide)),
                              ctx.constant(np.array(big, wide))])
        return ctx.emit("Cast", [q], to=ctx.onnx_type(out), saturate=0)
    if out in _SMALL_FLOATS:
        return ctx.cast(ctx.emit("Add", [q, _param(ctx, 2, xt.ndim, wide)]), out)
    # through float64, as the core does: the zero point and the range are exact there
    q = _round_half_even(ctx, ctx.cast(q, "float64") if wide != "float64" else q)
    q = ctx.emit("Add", [q, _param(ctx, 2, xt.ndim, "float64")])
    lo, hi = _INT_RANGE[out]
    lo_c, hi_c = ctx.constant(np.array(lo, np.float64)), ctx.constant(np.array(hi, np.float64))
    if ctx.opset >= 11:
        q = ctx.emit("Clip", [q, lo_c, hi_c])
    else:  # onnxruntime's Clip-6 has no float64 kernel; Max and Min do
        q = ctx.emit("Max", [ctx.emit("Min", [q, hi_c]), lo_c])
    return ctx.cast(q, out)


#: 1.5 * 2**52: adding and subtracting it rounds a float64 of magnitude below 2**51 to an
#: integer, halves to even (IEEE addition's rounding).
_ROUNDER = 6755399441055744.0


def _round_half_even(ctx: EmitContext, x: str) -> str:
    """float64 ``x`` rounded half to even: Round from opset 11, arithmetic before it (exact
    for magnitudes below 2**51; larger ones are clipped to a quantized range after it, which
    a value off by less than one cannot cross)."""
    if ctx.opset >= 11:
        return ctx.emit("Round", [x])
    big = ctx.constant(np.array(_ROUNDER, np.float64))
    return ctx.emit("Sub", [ctx.emit("Add", [x, big]), big])


def _onnx_scale_ok(ctx: EmitContext, x: str, scale: str) -> bool:
    """Whether QuantizeLinear/DequantizeLinear at this opset take ``x`` (the float side) and
    ``scale`` and compute in their dtype as the core does: float32, or float16/bfloat16
    from opset 19 (an int32 ``x`` is divided in float64 by the core)."""
    if x != scale:
        return False
    return x == "float32" or (x in ("float16", "bfloat16") and ctx.opset >= 19)


@emitter("qnn.dequantize")
def _dequantize(ctx: EmitContext) -> str:
    xt, st = ctx.type_of(0), ctx.type_of(1)
    out = ctx.attrs["out_dtype"]
    _check_dtypes(ctx, xt.dtype, st.dtype, out)
    min_opset = 10 if xt.dtype == "int32" else _QUANT_MIN_OPSET.get(xt.dtype, 10**9)
    # ONNX's result has the scale's dtype (before opset 23's output_dtype): the same value
    # as the core's when that is out_dtype
    params = _linear_params(ctx, xt.ndim)
    if params is not None and _onnx_scale_ok(ctx, out, st.dtype) and ctx.opset >= min_opset:
        return ctx.emit("DequantizeLinear", [ctx.input(0), *params],
                        axis=_axis_attr(ctx, xt.ndim))
    x = ctx.cast(ctx.input(0), "float32")
    if xt.dtype not in _SMALL_FLOATS:
        x = ctx.emit("Sub", [x, _param(ctx, 2, xt.ndim, "float32")])
    wide = np.result_type(np.float32, numpy_dtype(st.dtype)).name
    if wide not in ("float32", "float64"):
        wide = "float32"
    x = x if wide == "float32" else ctx.cast(x, wide)
    y = ctx.emit("Mul", [x, _param(ctx, 1, xt.ndim, wide)])
    return y if wide == out else ctx.cast(y, out)
