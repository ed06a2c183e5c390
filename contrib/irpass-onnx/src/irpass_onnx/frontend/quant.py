"""Converters of the ONNX cast and quantization ops: Cast, CastLike, BitCast, QuantizeLinear,
DequantizeLinear, DynamicQuantizeLinear, QLinearConv, QLinearMatMul, MatMulInteger, ConvInteger.

Cast is the core ``cast`` (numpy's and ml_dtypes' conversions, which do not saturate); ONNX's
``saturate=1`` (the default) for a float8 target clips to the format's largest finite value
first; a FLOAT8E8M0 target (a bare exponent) is computed from the float32 bits with
``round_mode``. BitCast is ``reinterpret``. QuantizeLinear and DequantizeLinear are
``qnn.quantize`` and ``qnn.dequantize``, a block-quantized scale repeated to one value per
element. The integer ops
are decomposed: operands widened to int32 less their zero points, ``matmul`` or ``nn.convNd``
in int32, and for the QLinear ops the int32 result rescaled in float64 and quantized again.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from irpass.ir import Call, Constant, Expr, Op
from irpass.ir.types import DTYPE_BITS, TensorType, numpy_dtype
from onnx import TensorProto

from ..dtypes import dtype_of
from .context import NodeContext
from .nn import _ints, _spatial_pads, _spatial_rank
from .registry import converter

__all__ = ["cast_to"]

_FLOAT8 = frozenset({"float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"})
#: The largest finite value of each float8 format (what a saturating cast clips to).
_FLOAT8_MAX = {"float8_e4m3fn": 448.0, "float8_e4m3fnuz": 240.0, "float8_e5m2": 57344.0,
               "float8_e5m2fnuz": 57344.0}
#: The dtypes the core's arithmetic (clip, divide, ...) takes.
_ARITH = frozenset({"float16", "bfloat16", "float32", "float64", "int8", "int16", "int32",
                    "int64", "uint8", "uint16", "uint32", "uint64"})
_QUANT_INTS = frozenset({"int8", "uint8", "int16", "uint16", "int4", "uint4", "int2", "uint2"})
_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})


def _call(op: str, *args: Expr, **attrs: Any) -> Call:
    return Call(Op.get(op), list(args), attrs or None)


def _const(value: Any, dtype: str) -> Constant:
    return Constant(np.asarray(value, dtype=numpy_dtype(dtype)))


# -- casts -------------------------------------------------------------------------------------


def cast_to(ctx: NodeContext, x: Expr, src: str, dst: str, saturate: bool = True) -> Expr:
    """``x`` (of dtype ``src``) cast to ``dst`` as ONNX's Cast does: a float8 target with
    ``saturate`` clips out-of-range values (and infinities) to its largest finite value; a
    FLOAT8E8M0 target takes the exponent rounded as the node's ``round_mode`` says."""
    if src == dst:
        return x
    if dst == "float8_e8m0fnu":
        return _to_e8m0(ctx, x, src, saturate, ctx.attr("round_mode", "up"))
    if saturate and dst in _FLOAT8 and src != "bool":
        if src not in _ARITH:  # another small format: every value is exact in float32
            x, src = _call("cast", x, dtype="float32"), "float32"
        big = _FLOAT8_MAX[dst]
        x = _call("clip", x, a_min=-big, a_max=big)
    return _call("cast", x, dtype=dst)


def _to_e8m0(ctx: NodeContext, x: Expr, src: str, saturate: bool, mode: str) -> Expr:
    """``x`` as FLOAT8E8M0, a bare power-of-two exponent, as ONNX computes it: the float32
    exponent field (sign ignored), rounded up (``up``: any mantissa bit), to nearest even
    (``nearest``) or down; the largest exponent stays when ``saturate``, NaN and infinity
    become NaN."""
    def u32(v: int) -> Constant:
        return _const(v, "uint32")

    def bit_set(bits: Expr, mask: int) -> Expr:
        return _call("not_equal", _call("bitwise_and", bits, u32(mask)), u32(0))

    f = x if src == "float32" else _call("cast", x, dtype="float32")
    bits = _call("reinterpret", f, dtype="uint32")
    e = _call("bitwise_and", _call("right_shift", bits, u32(23)), u32(0xFF))
    if mode == "up":
        inc = bit_set(bits, 0x7FFFFF)
    elif mode == "nearest":
        rest = _call("logical_or", bit_set(bits, 0x200000), bit_set(bits, 0x1FFFFF))
        odd = _call("greater", e, u32(0))  # ONNX's "lsb"
        inc = _call("logical_and", bit_set(bits, 0x400000), _call("logical_or", rest, odd))
    else:
        inc = None
    if inc is not None:
        if saturate:
            inc = _call("logical_and", inc, _call("not_equal", e, u32(0xFE)))
        bumped = _call("add", e, _call("cast", inc, dtype="uint32"))
        e = _call("where", _call("equal", e, u32(0xFF)), e, bumped)
    return _call("reinterpret", _call("cast", e, dtype="uint8"), dtype="float8_e8m0fnu")


def _to_attr(ctx: NodeContext, name: str = "to") -> str:
    to = ctx.attr(name)
    if isinstance(to, str):  # opset 1: the type's name
        try:
            to = TensorProto.DataType.Value(to.upper())
        except ValueError:
            ctx.fail(f"{name!r} names no ONNX type: {to!r}")
    try:
        return dtype_of(int(to), f"attribute {name!r}")
    except ValueError as err:
        ctx.fail(str(err))


def _dtype(ctx: NodeContext, elem_type: int, name: str) -> str:
    try:
        return dtype_of(elem_type, f"attribute {name!r}")
    except ValueError as err:
        ctx.fail(str(err))


def _saturate(ctx: NodeContext) -> bool:
    return bool(ctx.attr("saturate", 1)) if ctx.opset >= 19 else True


def _check_round_mode(ctx: NodeContext) -> None:
    mode = ctx.attr("round_mode", "up")
    if mode not in ("up", "down", "nearest"):
        ctx.fail(f"round_mode {mode!r} is not one of up, down, nearest")


@converter("Cast", since=1)
def _cast(ctx: NodeContext) -> Expr:
    _check_round_mode(ctx)  # it matters for FLOAT8E8M0 targets only
    return cast_to(ctx, ctx.input(0), ctx.type_of(0).dtype, _to_attr(ctx), _saturate(ctx))


@converter("CastLike", since=15)
def _cast_like(ctx: NodeContext) -> Expr:
    _check_round_mode(ctx)
    return cast_to(ctx, ctx.input(0), ctx.type_of(0).dtype, ctx.type_of(1).dtype,
                   _saturate(ctx))


@converter("BitCast", since=26)
def _bitcast(ctx: NodeContext) -> Expr:
    src, dst = ctx.type_of(0).dtype, _to_attr(ctx)
    if DTYPE_BITS[src] != DTYPE_BITS[dst]:
        ctx.fail(f"cannot bit-cast {src} ({DTYPE_BITS[src]} bits) to {dst} "
                 f"({DTYPE_BITS[dst]} bits): the widths must be equal")
    return ctx.input(0) if src == dst else _call("reinterpret", ctx.input(0), dtype=dst)


# -- QuantizeLinear / DequantizeLinear ---------------------------------------------------------


def _axis(ctx: NodeContext, rank: int, block: int) -> int:
    """The quantization axis, in ``[0, rank)``; it matters (and must be in range) only for a
    per-axis or block-quantized scale."""
    axis = int(ctx.attr("axis", 1)) if ctx.opset >= 13 else 1
    if block <= 0 and ctx.type_of(1).size == 1:
        return 0
    if not -rank <= axis < rank:
        ctx.fail(f"axis {axis} is out of range for a {rank}-D input")
    return axis + rank if axis < 0 else axis


def _param(ctx: NodeContext, i: int, name: str, xt: TensorType, axis: int,
           block: int) -> tuple[Expr, TensorType]:
    """Input ``i`` (a scale or zero point) in a form ``qnn.*`` takes: a block-quantized one
    repeated along ``axis`` to one value per element."""
    e, ty = ctx.input(i), ctx.type_of(i)
    if block <= 0 or ty.ndim == 0 or ty.size == 1:
        if ty.ndim > 1 and ty.size != 1:
            ctx.fail(f"{name} {ty} must be a scalar or 1-D (block_size is not set)")
        if ty.ndim == 1 and ty.size != 1 and (xt.ndim == 0 or ty.shape[0] != xt.shape[axis]):
            ctx.fail(f"{name} {ty} does not match axis {axis} of the input {xt}")
        return e, ty
    if ty.ndim != xt.ndim or any(ty.shape[k] != xt.shape[k] for k in range(xt.ndim)
                                 if k != axis):
        ctx.fail(f"{name} {ty} must have the input's shape {xt.shape} but along axis {axis}")
    need = -(-xt.shape[axis] // block)
    if ty.shape[axis] != need:
        ctx.fail(f"{name} {ty} has {ty.shape[axis]} blocks along axis {axis}; block_size "
                 f"{block} over {xt.shape[axis]} elements makes {need}")
    index = np.arange(xt.shape[axis], dtype=np.int64) // block
    known = ctx.known(i)
    if known is not None:
        return Constant(np.ascontiguousarray(np.take(known, index, axis=axis))), \
            TensorType(xt.shape, ty.dtype)
    return _call("take", e, Constant(index), axis=axis, mode="clip"), \
        TensorType(xt.shape, ty.dtype)


def _zero_point(ctx: NodeContext, i: int, dtype: str, xt: TensorType, axis: int,
                block: int) -> Expr:
    if ctx.has_input(i):
        return _param(ctx, i, "zero point", xt, axis, block)[0]
    return _const(0, dtype)


def _float_scale(ctx: NodeContext, e: Expr, ty: TensorType, want: str) -> Expr:
    """A FLOAT8E8M0 scale (opset 24) as float ``want`` (exact: it is a power of two)."""
    if ty.dtype in _FLOATS:
        return e
    if ty.dtype != "float8_e8m0fnu":
        ctx.fail(f"the scale has dtype {ty.dtype}; a float scale is expected")
    return _call("cast", e, dtype=want)


@converter("QuantizeLinear", since=10)
def _quantize_linear(ctx: NodeContext) -> Expr:
    x, xt = ctx.input(0), ctx.type_of(0)
    if xt.dtype not in _FLOATS | {"int32"}:
        ctx.fail(f"input has dtype {xt.dtype}; QuantizeLinear takes float or int32 input")
    block = int(ctx.attr("block_size", 0)) if ctx.opset >= 21 else 0
    if block < 0:
        ctx.fail(f"block_size must be >= 0, got {block}")
    axis = _axis(ctx, xt.ndim, block)
    out = None
    if ctx.has_input(2):
        out = ctx.type_of(2).dtype
    attr_out = int(ctx.attr("output_dtype", 0)) if ctx.opset >= 21 else 0
    if attr_out:
        want = _dtype(ctx, attr_out, "output_dtype")
        if out is not None and out != want:
            ctx.fail(f"output_dtype {want} differs from the zero point's dtype {out}")
        out = want
    out = out or "uint8"
    if out not in _QUANT_INTS | _FLOAT8 | {"float4_e2m1fn"}:
        ctx.fail(f"cannot quantize to {out}")
    scale, st = _param(ctx, 1, "scale", xt, axis, block)
    scale = _float_scale(ctx, scale, st, xt.dtype if xt.dtype in _FLOATS else "float32")
    sdt = st.dtype if st.dtype in _FLOATS else (xt.dtype if xt.dtype in _FLOATS else "float32")
    precision = int(ctx.attr("precision", 0)) if ctx.opset >= 23 else 0
    if precision:
        pdt = _dtype(ctx, precision, "precision")
        if pdt not in _FLOATS:
            ctx.fail(f"precision {pdt} is not a floating-point type")
        x = x if xt.dtype == pdt else _call("cast", x, dtype=pdt)
        scale = scale if sdt == pdt else _call("cast", scale, dtype=pdt)
    zero = _zero_point(ctx, 2, out, xt, axis, block)
    if out in _FLOAT8 and not _saturate(ctx):
        # no saturation: the quotient converted as it is (out-of-range values become NaN
        # or infinity, as the format has them)
        dt = np.result_type(numpy_dtype(xt.dtype if not precision else pdt),
                            numpy_dtype(sdt if not precision else pdt)).name
        q = _call("divide", _call("cast", x, dtype=dt), _call("cast", scale, dtype=dt))
        return _call("cast", q, dtype=out)
    return _call("qnn.quantize", x, scale, zero, axis=axis, out_dtype=out)


@converter("DequantizeLinear", since=10)
def _dequantize_linear(ctx: NodeContext) -> Expr:
    x, xt = ctx.input(0), ctx.type_of(0)
    if xt.dtype not in _QUANT_INTS | _FLOAT8 | {"float4_e2m1fn", "int32"}:
        ctx.fail(f"input has dtype {xt.dtype}; DequantizeLinear takes a quantized type")
    block = int(ctx.attr("block_size", 0)) if ctx.opset >= 21 else 0
    if block < 0:
        ctx.fail(f"block_size must be >= 0, got {block}")
    axis = _axis(ctx, xt.ndim, block)
    scale, st = _param(ctx, 1, "scale", xt, axis, block)
    out = st.dtype
    attr_out = int(ctx.attr("output_dtype", 0)) if ctx.opset >= 23 else 0
    if attr_out:
        out = _dtype(ctx, attr_out, "output_dtype")
    if out not in _FLOATS:
        ctx.fail(f"the output dtype {out} is not a floating-point type (set output_dtype)")
    scale = _float_scale(ctx, scale, st, "float32")
    if ctx.has_input(2) and ctx.type_of(2).dtype != xt.dtype:
        ctx.fail(f"the zero point's dtype {ctx.type_of(2).dtype} differs from the input's "
                 f"{xt.dtype}")
    zero = _zero_point(ctx, 2, xt.dtype, xt, axis, block)
    return _call("qnn.dequantize", x, scale, zero, axis=axis, out_dtype=out)


@converter("DynamicQuantizeLinear", since=11)
def _dynamic_quantize_linear(ctx: NodeContext) -> list[Expr]:
    x, xt = ctx.input(0), ctx.type_of(0)
    if xt.dtype != "float32":
        ctx.fail(f"input has dtype {xt.dtype}; DynamicQuantizeLinear takes float32")
    zero = _const(0.0, "float32")
    hi = _call("maximum", zero, _call("max", x, axis=None, keepdims=False, exclude=False))
    lo = _call("minimum", zero, _call("min", x, axis=None, keepdims=False, exclude=False))
    span = _call("subtract", hi, lo)
    # an all-zero input has max == min: the scale is then 1/255, as ONNX defines it
    span = _call("where", _call("equal", span, zero), _const(1.0, "float32"), span)
    scale = _call("divide", span, _const(255.0, "float32"))
    zp = _call("subtract", zero, _call("divide", lo, scale))
    zp = _call("round", _call("clip", zp, a_min=0.0, a_max=255.0))
    zp = _call("cast", zp, dtype="uint8")
    y = _call("qnn.quantize", x, scale, zp, axis=0, out_dtype="uint8")
    return [y, scale, zp]


# -- integer matmul and convolution ------------------------------------------------------------


def _int32(ctx: NodeContext, i: int) -> Expr:
    ty = ctx.type_of(i)
    if ty.dtype not in ("int8", "uint8"):
        ctx.fail(f"input {i} has dtype {ty.dtype}; {ctx.node.op_type} takes int8 or uint8")
    return _call("cast", ctx.input(i), dtype="int32")


def _minus_zero(ctx: NodeContext, v: Expr, vt: TensorType, i: int, axis_of_1d: int,
                what: str) -> Expr:
    """``v`` (int32) less the zero point at input ``i``: a scalar, or 1-D along
    ``axis_of_1d`` of ``v``'s type ``vt``."""
    if not ctx.has_input(i):
        return v
    zt = ctx.type_of(i)
    if zt.dtype != ctx.type_of(_DATA_OF[ctx.node.op_type][i]).dtype:
        ctx.fail(f"{what} has dtype {zt.dtype}, not its operand's")
    z = _call("cast", ctx.input(i), dtype="int32")
    return _call("subtract", v, _along(ctx, z, zt, vt, axis_of_1d, what))


def _along(ctx: NodeContext, z: Expr, zt: TensorType, vt: TensorType, axis: int,
           what: str) -> Expr:
    """A scalar or 1-D parameter shaped to broadcast along ``axis`` of ``vt``."""
    if zt.size == 1:
        return _call("reshape", z, newshape=[]) if zt.ndim else z
    if zt.ndim != 1 or vt.ndim == 0 or zt.shape[0] != vt.shape[axis]:
        ctx.fail(f"{what} {zt} must be a scalar or 1-D of {vt.shape[axis] if vt.ndim else 1} "
                 f"elements (axis {axis} of {vt})")
    shape = [1] * vt.ndim
    shape[axis] = zt.shape[0]
    return _call("reshape", z, newshape=shape)


# op type -> {zero point input: the data input it belongs to}
_DATA_OF = {
    "MatMulInteger": {2: 0, 3: 1},
    "ConvInteger": {2: 0, 3: 1},
    "QLinearMatMul": {2: 0, 5: 3},
    "QLinearConv": {2: 0, 5: 3},
}


def _int_matmul(ctx: NodeContext, a_i: int, b_i: int, az_i: int, bz_i: int) -> Expr:
    at, bt = ctx.type_of(a_i), ctx.type_of(b_i)
    if at.ndim == 0 or bt.ndim == 0:
        ctx.fail("the operands must have at least one dimension")
    a = _minus_zero(ctx, _int32(ctx, a_i), at, az_i, max(at.ndim - 2, 0), "a's zero point")
    b = _minus_zero(ctx, _int32(ctx, b_i), bt, bz_i, bt.ndim - 1, "b's zero point")
    return _call("matmul", a, b)


def _int_conv(ctx: NodeContext, x_i: int, w_i: int, xz_i: int, wz_i: int) -> tuple[Expr, int]:
    xt, wt = ctx.type_of(x_i), ctx.type_of(w_i)
    n = _spatial_rank(ctx, xt.ndim, "convolution")
    if wt.ndim != n + 2:
        ctx.fail(f"weight {wt} does not match a {n}-D convolution of {xt}")
    kernel = list(wt.shape[2:])
    if ctx.has_attr("kernel_shape") and list(ctx.attr("kernel_shape")) != kernel:
        ctx.fail(f"kernel_shape {ctx.attr('kernel_shape')} does not match the weight {wt}")
    strides, dilations = _ints(ctx, "strides", n, 1), _ints(ctx, "dilations", n, 1)
    pads = _spatial_pads(ctx, xt.shape[2:], kernel, strides, dilations)
    x = _minus_zero(ctx, _int32(ctx, x_i), xt, xz_i, 1, "x's zero point")
    w = _minus_zero(ctx, _int32(ctx, w_i), wt, wz_i, 0, "w's zero point")
    y = _call(f"nn.conv{n}d", x, w, strides=tuple(strides), padding=tuple(pads),
              dilation=tuple(dilations), groups=ctx.attr("group", 1), channels=wt.shape[0],
              kernel_size=tuple(kernel))
    return y, wt.shape[0]


@converter("MatMulInteger", since=10)
def _matmul_integer(ctx: NodeContext) -> Expr:
    return _int_matmul(ctx, 0, 1, 2, 3)


@converter("ConvInteger", since=10)
def _conv_integer(ctx: NodeContext) -> Expr:
    return _int_conv(ctx, 0, 1, 2, 3)[0]


def _requantize(ctx: NodeContext, acc: Expr, acc_t: TensorType, scales: list[tuple[int, int]],
                y_scale_i: int, y_zero_i: int, out: str) -> Expr:
    """The int32 ``acc`` times the product of the input scales over the output scale, plus
    the output zero point, rounded (half to even) and clipped to ``out``, as ONNX's reference
    computes it: the multiplier in the scales' dtype, the rest in float64. ``scales`` pairs
    each scale input with the axis of ``acc`` a 1-D one runs along."""
    dtypes = {ctx.type_of(i).dtype for i, _ in scales} | {ctx.type_of(y_scale_i).dtype}
    if len(dtypes) != 1 or not dtypes <= _FLOATS:
        ctx.fail(f"the scales must have one float dtype, got {sorted(dtypes)}")
    m = None
    for i, axis in scales:
        s = _along(ctx, ctx.input(i), ctx.type_of(i), acc_t, axis, f"input {i}")
        m = s if m is None else _call("multiply", m, s)
    ys = _along(ctx, ctx.input(y_scale_i), ctx.type_of(y_scale_i), acc_t, 0, "y_scale")
    m = _call("cast", _call("divide", m, ys), dtype="float64")
    d = _call("multiply", _call("cast", acc, dtype="float64"), m)
    if ctx.has_input(y_zero_i):
        yz = _call("cast", ctx.input(y_zero_i), dtype="float64")
        d = _call("add", d, _along(ctx, yz, ctx.type_of(y_zero_i), acc_t, 0, "y_zero_point"))
    return _call("qnn.quantize", d, _const(1.0, "float64"), _const(0, out), axis=0,
                 out_dtype=out)


def _out_dtype(ctx: NodeContext, zero_i: int, data_i: int) -> str:
    out = ctx.type_of(zero_i if ctx.has_input(zero_i) else data_i).dtype
    if out not in ("int8", "uint8"):
        ctx.fail(f"the output dtype {out} is not int8 or uint8")
    return out


@converter("QLinearMatMul", since=10)
def _qlinear_matmul(ctx: NodeContext) -> Expr:
    acc = _int_matmul(ctx, 0, 3, 2, 5)
    acc_t = ctx.type_of_expr(acc)
    at = ctx.type_of(0)
    a_axis = max(acc_t.ndim - 2, 0) if at.ndim >= 2 else 0
    return _requantize(ctx, acc, acc_t, [(1, a_axis), (4, acc_t.ndim - 1)], 6, 7,
                       _out_dtype(ctx, 7, 0))


@converter("QLinearConv", since=10)
def _qlinear_conv(ctx: NodeContext) -> Expr:
    acc, _ = _int_conv(ctx, 0, 3, 2, 5)
    if ctx.has_input(8):
        bt = ctx.type_of(8)
        if bt.dtype != "int32":
            ctx.fail(f"the bias has dtype {bt.dtype}; QLinearConv takes an int32 bias")
        acc = _call("nn.bias_add", acc, ctx.input(8), axis=1)
    acc_t = ctx.type_of_expr(acc)
    return _requantize(ctx, acc, acc_t, [(1, 1), (4, 1)], 6, 7, _out_dtype(ctx, 7, 0))
