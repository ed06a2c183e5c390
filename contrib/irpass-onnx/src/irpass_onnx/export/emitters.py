"""Emitters of the core tensor ops: elementwise math, comparisons, logic and bits, shape
changes, reductions and tensor creation. Every reshape-like op is one ``Reshape`` to the output
shape (no ``Squeeze``/``Unsqueeze``, whose signature changed across opsets), a symbolic one with
the least run-time shape computation (see :meth:`EmitContext.reshape`).

The 1:1 elementwise ops are tables (op -> ONNX op type, and the opset that introduced it when
newer than 9); an op ONNX lacks at the export opset is written as an equivalent of older ops
where that is cheap (``trunc``, ``isinf``, ``floor_mod`` of floats, shifts of signed ints),
else it is an :class:`~irpass_onnx.OnnxExportError` naming the op and the opset it needs."""

from __future__ import annotations

import math

import numpy as np
from irpass.ir.dims import dim_prod
from irpass.op.create import shape_value
from irpass.op.linalg import einsum_terms
from irpass.op.reduce import reduce_axes
from onnx import helper

from .builder import EmitContext, emitter
from .graph import type_of

__all__: list[str] = []

_FLOATS = ("float16", "float32", "float64")

_UNARY = {
    "abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "tanh": "Tanh",
    "sigmoid": "Sigmoid", "negative": "Neg", "nn.relu": "Relu", "erf": "Erf",
    "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan",
    "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh",
    "sign": "Sign", "isnan": "IsNaN", "logical_not": "Not",
}
_BINARY = {
    "add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "power": "Pow",
    "equal": "Equal", "less": "Less", "greater": "Greater",
}
#: Elementwise ops written as one ONNX node of the same inputs, with the opset it needs.
_ONE_TO_ONE = {
    "logical_and": ("And", 9), "logical_or": ("Or", 9), "logical_xor": ("Xor", 9),
    "bitwise_and": ("BitwiseAnd", 18), "bitwise_or": ("BitwiseOr", 18),
    "bitwise_xor": ("BitwiseXor", 18), "bitwise_not": ("BitwiseNot", 18),
}
# The rounding ops, which leave integers as they are (Round is new in opset 11).
_ROUNDING = {"floor": "Floor", "ceil": "Ceil", "round": "Round"}


def _needs_opset12_for_ints(ctx: EmitContext, what: str) -> None:
    # Max, Min and Pow take integer tensors from opset 12 on
    if ctx.type_of(0).dtype not in _FLOATS and ctx.opset < 12:
        raise ctx.fail(f"{what} of {ctx.type_of(0).dtype} tensors needs opset >= 12")


@emitter(*_UNARY)
def _unary(ctx: EmitContext) -> str:
    if ctx.node.op == "nn.relu" and ctx.type_of(0).dtype not in _FLOATS and ctx.opset < 14:
        _needs_opset12_for_ints(ctx, "relu")
        zero = ctx.constant(np.zeros((), ctx.type_of(0).dtype))
        return ctx.emit("Max", [ctx.input(0), zero])
    return sink_transpose(ctx, _UNARY[ctx.node.op], [ctx.input(0)])


def sink_transpose(ctx: EmitContext, op_type: str, inputs: list[str], **attrs: object) -> str:
    """An elementwise op whose (same-shaped) inputs all come out of the same Transpose is
    applied before it: Relu(Transpose(x)) is Transpose(Relu(x)), and the Transpose moved
    down can cancel against the next op's (NHWC ops between NCHW ONNX ops)."""
    sources = [ctx.transposed_source(n) for n in inputs]
    shapes = {tuple(ctx.type_of(i).shape) for i in range(len(inputs))}
    if (all(s is not None for s in sources) and len(shapes) == 1
            and len({tuple(s[1]) for s in sources}) == 1):  # type: ignore[index]
        y = ctx.emit(op_type, [s[0] for s in sources], **attrs)  # type: ignore[index]
        return ctx.transpose(y, sources[0][1])  # type: ignore[index]
    return ctx.emit(op_type, inputs, **attrs)


@emitter(*_ONE_TO_ONE)
def _one_to_one(ctx: EmitContext) -> str:
    op_type, since = _ONE_TO_ONE[ctx.node.op]
    ctx.need_opset(since, op_type)
    return ctx.emit(op_type, [ctx.input(i) for i in range(len(ctx.node.inputs))])


@emitter(*_ROUNDING)
def _rounding(ctx: EmitContext) -> str:
    if ctx.type_of(0).dtype not in _FLOATS:
        return ctx.input(0)
    op_type = _ROUNDING[ctx.node.op]
    if op_type == "Round":
        ctx.need_opset(11, op_type)
    return sink_transpose(ctx, op_type, [ctx.input(0)])


@emitter("trunc")
def _trunc(ctx: EmitContext) -> str:
    # ONNX has no Trunc: Ceil below zero, Floor elsewhere (NaN, infinities and -0.0 kept)
    x = ctx.input(0)
    if ctx.type_of(0).dtype not in _FLOATS:
        return x
    negative = ctx.emit("Less", [x, ctx.constant(np.zeros((), ctx.type_of(0).dtype))])
    return ctx.emit("Where", [negative, ctx.emit("Ceil", [x]), ctx.emit("Floor", [x])])


@emitter("isinf")
def _isinf(ctx: EmitContext) -> str:
    x = ctx.input(0)
    if ctx.opset >= 10:
        return ctx.emit("IsInf", [x])
    # |x| above the largest finite value: only the infinities (NaN compares false)
    dtype = ctx.type_of(0).dtype
    return ctx.emit("Greater", [ctx.emit("Abs", [x]),
                                ctx.constant(np.array(np.finfo(dtype).max, dtype))])


@emitter("floor_mod", "trunc_mod")
def _mod(ctx: EmitContext) -> str:
    ctx.need_opset(10, "Mod")
    a, b = ctx.input(0), ctx.input(1)
    dtype = ctx.type_of(0).dtype
    if dtype not in _FLOATS:
        return ctx.emit("Mod", [a, b], fmod=int(ctx.node.op == "trunc_mod"))
    # float Mod is C's fmod only; floor_mod adds the divisor to a remainder whose sign
    # differs from the divisor's
    r = ctx.emit("Mod", [a, b], fmod=1)
    if ctx.node.op == "trunc_mod":
        return r
    zero = ctx.constant(np.zeros((), dtype))
    wrong_sign = ctx.emit("Less", [ctx.emit("Mul", [r, b]), zero])
    return ctx.emit("Where", [wrong_sign, ctx.emit("Add", [r, b]), r])


@emitter("left_shift", "right_shift")
def _shift(ctx: EmitContext) -> str:
    ctx.need_opset(11, "BitShift")
    direction = "LEFT" if ctx.node.op == "left_shift" else "RIGHT"
    dtype = ctx.type_of(0).dtype
    a, b = ctx.input(0), ctx.input(1)
    if dtype.startswith("uint"):
        return ctx.emit("BitShift", [a, b], direction=direction)
    # BitShift takes unsigned ints: shift the bits as the unsigned type of the same width,
    # after mapping a negative x to ~x = -1 - x for an arithmetic right shift
    # (x >> s == ~(~x >> s)); a negative shift count wraps to a huge one, which gives 0
    if direction == "LEFT":
        unsigned = "u" + dtype
        return ctx.cast(ctx.emit("BitShift", [ctx.cast(a, unsigned), ctx.cast(b, unsigned)],
                                 direction=direction), dtype)
    # onnxruntime's Where has no int16 kernel: narrow ints shift as int32 (sign-extended, the
    # same bits after the cast back)
    work = "int32" if dtype in ("int8", "int16") else dtype
    if work != dtype:
        a = ctx.cast(a, work)
    unsigned = "u" + work
    count = ctx.cast(b, unsigned)
    minus_one = ctx.constant(np.array(-1, work))
    negative = ctx.emit("Less", [a, ctx.constant(np.zeros((), work))])
    flipped = ctx.emit("Where", [negative, ctx.emit("Sub", [minus_one, a]), a])
    shifted = ctx.cast(ctx.emit("BitShift", [ctx.cast(flipped, unsigned), count],
                                direction=direction), work)
    out = ctx.emit("Where", [negative, ctx.emit("Sub", [minus_one, shifted]), shifted])
    return out if work == dtype else ctx.cast(out, dtype)


@emitter(*_BINARY)
def _binary(ctx: EmitContext) -> str:
    if ctx.node.extra.get("hard_swish"):  # see fusion.py
        return ctx.emit("HardSwish", [ctx.input(0)])
    a, b = ctx.input(0), ctx.input(1)
    if ctx.node.op in ("add", "subtract", "multiply"):
        return sink_transpose(ctx, _BINARY[ctx.node.op], [a, b])
    if ctx.node.op == "power":
        _needs_opset12_for_ints(ctx, "power")
    if ctx.node.op == "equal" and ctx.type_of(0).dtype in _FLOATS and ctx.opset < 11:
        # Equal takes floats from opset 11 on
        return ctx.emit("Not", [ctx.emit("Or", [ctx.emit("Less", [a, b]),
                                                ctx.emit("Greater", [a, b])])])
    return ctx.emit(_BINARY[ctx.node.op], [a, b])


@emitter("not_equal")
def _not_equal(ctx: EmitContext) -> str:
    a, b = ctx.input(0), ctx.input(1)
    if ctx.type_of(0).dtype in _FLOATS and ctx.opset < 11:
        return ctx.emit("Or", [ctx.emit("Less", [a, b]), ctx.emit("Greater", [a, b])])
    return ctx.emit("Not", [ctx.emit("Equal", [a, b])])


@emitter("less_equal", "greater_equal")
def _compare_or_equal(ctx: EmitContext) -> str:
    a, b = ctx.input(0), ctx.input(1)
    if ctx.opset >= 12:
        op = "LessOrEqual" if ctx.node.op == "less_equal" else "GreaterOrEqual"
        return ctx.emit(op, [a, b])
    # a <= b is not (a > b) (differs only for NaN)
    op = "Greater" if ctx.node.op == "less_equal" else "Less"
    return ctx.emit("Not", [ctx.emit(op, [a, b])])


@emitter("maximum", "minimum")
def _extremum(ctx: EmitContext) -> str:
    a, b = ctx.input(0), ctx.input(1)
    if ctx.type_of(0).dtype == "bool":
        return ctx.emit("Or" if ctx.node.op == "maximum" else "And", [a, b])
    _needs_opset12_for_ints(ctx, ctx.node.op)
    return ctx.emit("Max" if ctx.node.op == "maximum" else "Min", [a, b])


@emitter("where")
def _where(ctx: EmitContext) -> str:
    return ctx.emit("Where", [ctx.input(0), ctx.input(1), ctx.input(2)])


@emitter("cast")
def _cast(ctx: EmitContext) -> str:
    if ctx.attrs["dtype"] == ctx.type_of(0).dtype:
        return ctx.input(0)
    return ctx.cast(ctx.input(0), ctx.attrs["dtype"])


def _int_bounds(lo: float, hi: float, dtype: str) -> tuple[int, int]:
    # the core's rule: bounds rounded inward, limited to the dtype's range
    info = np.iinfo(dtype)
    a = int(info.min) if lo == -math.inf else math.ceil(min(lo, info.max))
    b = int(info.max) if hi == math.inf else math.floor(max(hi, info.min))
    if a > b:
        a = b = math.trunc(lo)
    return min(max(a, int(info.min)), int(info.max)), min(max(b, int(info.min)), int(info.max))


@emitter("clip")
def _clip(ctx: EmitContext) -> str:
    hard_sigmoid = ctx.node.extra.get("hard_sigmoid")  # see fusion.py
    if hard_sigmoid is not None:
        alpha, beta = hard_sigmoid
        return ctx.emit("HardSigmoid", [ctx.input(0)], alpha=alpha, beta=beta)
    x, dtype = ctx.input(0), ctx.type_of(0).dtype
    lo, hi = ctx.attrs["a_min"], ctx.attrs["a_max"]
    if dtype in _FLOATS:
        if ctx.opset < 11:
            return ctx.emit("Clip", [x], min=None if lo == -math.inf else lo,
                            max=None if hi == math.inf else hi)
        ins = [x, "" if lo == -math.inf else ctx.constant(np.array(lo, dtype)),
               "" if hi == math.inf else ctx.constant(np.array(hi, dtype))]
        while ins[-1] == "":
            ins.pop()
        return ctx.emit("Clip", ins)
    if ctx.opset < 12:
        raise ctx.fail("clip of an integer tensor needs opset >= 12")
    a, b = _int_bounds(lo, hi, dtype)
    return ctx.emit("Clip", [x, ctx.constant(np.array(a, dtype)), ctx.constant(np.array(b, dtype))])


# -- shapes -----------------------------------------------------------------------------------


@emitter("reshape", "reverse_reshape", "squeeze", "expand_dims")
def _reshape(ctx: EmitContext) -> str:
    shape = ctx.out_type.shape
    if tuple(ctx.type_of(0).shape) == tuple(shape):
        return ctx.input(0)
    return ctx.reshape(ctx.input(0), shape, ctx.type_of(0).shape)


@emitter("transpose")
def _transpose(ctx: EmitContext) -> str:
    ndim = len(ctx.type_of(0).shape)
    axes = ctx.attrs["axes"]
    perm = list(range(ndim - 1, -1, -1)) if axes is None else [a % ndim for a in axes]
    return ctx.transpose(ctx.input(0), perm)


@emitter("layout_transform")
def _layout_transform(ctx: EmitContext) -> str:
    src, dst = ctx.attrs["src_layout"], ctx.attrs["dst_layout"]
    return ctx.transpose(ctx.input(0), [src.index(c) for c in dst])


@emitter("concatenate")
def _concatenate(ctx: EmitContext) -> str:
    names = ctx.inputs_of(0)
    if len(names) == 1:
        return names[0]
    return ctx.emit("Concat", names, axis=ctx.attrs["axis"])


@emitter("split")
def _split(ctx: EmitContext) -> list[str]:
    fields = ctx.out_type.fields
    ndim = len(ctx.type_of(0).shape)
    axis = ctx.attrs["axis"] % ndim
    sizes = [f.shape[axis] for f in fields]
    if len(sizes) == 1:
        return [ctx.input(0)]
    if ctx.opset < 13:
        return ctx.emit("Split", [ctx.input(0)], outputs=len(sizes), axis=axis, split=sizes)
    return ctx.emit("Split", [ctx.input(0), ctx.int64s(sizes, "split")], outputs=len(sizes),
                    axis=axis)


# -- reductions -------------------------------------------------------------------------------

_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
           "prod": "ReduceProd"}


@emitter(*_REDUCE)
def _reduce(ctx: EmitContext) -> str:
    ndim = len(ctx.type_of(0).shape)
    axes = reduce_axes(ndim, ctx.attrs["axis"], ctx.attrs["exclude"])
    if not axes:
        return ctx.input(0)
    in_type = ctx.type_of(0)
    if 0 in in_type.shape:
        # over no elements the result is the reduction's identity, known from the types
        empty = np.zeros(in_type.shape, in_type.dtype)
        with np.errstate(all="ignore"):
            return ctx.constant(ctx.node.expr.op.kernel((empty,), ctx.attrs), hint="identity")
    op = _REDUCE[ctx.node.op]
    keep = int(ctx.attrs["keepdims"])
    x = ctx.input(0)
    if in_type.dtype == "bool":
        # onnxruntime's bool reductions are partial: any/all on 0/1 (uint8 from opset 12)
        x = ctx.cast(x, "uint8" if ctx.opset >= 12 else "int32")
    axes_as_input = ctx.opset >= (13 if op == "ReduceSum" else 18)
    if axes_as_input:
        y = ctx.emit(op, [x, ctx.int64s(axes, "axes")], keepdims=keep)
    else:
        y = ctx.emit(op, [x], axes=list(axes), keepdims=keep)
    return ctx.cast(y, "bool") if in_type.dtype == "bool" else y


# -- creation ---------------------------------------------------------------------------------


def _filled(ctx: EmitContext, value: object, dtype: str) -> str:
    shape = ctx.out_type.shape
    tensor = helper.make_tensor("value", ctx.onnx_type(dtype), [1],
                                np.array([value], dtype=dtype).tolist())
    return ctx.emit("ConstantOfShape", [ctx.dims(shape)], value=tensor)


@emitter("zeros", "ones", "zeros_like", "ones_like")
def _zeros_ones(ctx: EmitContext) -> str:
    return _filled(ctx, 1 if ctx.node.op.startswith("ones") else 0, ctx.out_type.dtype)


@emitter("full")
def _full(ctx: EmitContext) -> str:
    dtype = ctx.out_type.dtype
    fill = ctx.const(0)
    if fill is not None:
        with np.errstate(all="ignore"):
            return _filled(ctx, np.asarray(fill).astype(dtype).item(), dtype)
    value = ctx.input(0)
    if ctx.type_of(0).dtype != dtype:
        value = ctx.cast(value, dtype)
    return ctx.emit("Expand", [value, ctx.dims(ctx.out_type.shape)])


@emitter("shape_of")
def _shape_of(ctx: EmitContext) -> str:
    shape = ctx.type_of(0).shape
    if all(type(d) is int for d in shape):  # a static shape is a constant
        return ctx.constant(shape_value(shape, ctx.attrs["dtype"]), hint="shape")
    out = ctx.emit("Shape", [ctx.input(0)])
    return out if ctx.attrs["dtype"] == "int64" else ctx.cast(out, ctx.attrs["dtype"])


@emitter("dims_tensor")
def _dims_tensor(ctx: EmitContext) -> str:
    dims = list(ctx.attrs["dims"])
    if all(type(d) is int for d in dims):
        return ctx.constant(shape_value(tuple(dims), ctx.attrs["dtype"]), hint="dims")
    out = ctx.dims(dims, "dims")
    return out if ctx.attrs["dtype"] == "int64" else ctx.cast(out, ctx.attrs["dtype"])


@emitter("argmax", "argmin")
def _arg_extreme(ctx: EmitContext) -> str:
    shape = tuple(ctx.type_of(0).shape)
    axes = reduce_axes(len(shape), ctx.attrs["axis"], ctx.attrs["exclude"])
    out_shape = tuple(ctx.out_type.shape)
    if not axes:  # the index into no axis at all
        return ctx.constant(np.zeros(out_shape, np.int64), hint="index")
    op_type = "ArgMax" if ctx.node.op == "argmax" else "ArgMin"
    last = bool(ctx.attrs["select_last_index"])
    if last:
        ctx.need_opset(12, f"{op_type}(select_last_index=1)")
    x = ctx.input(0)
    if len(axes) == 1:
        return ctx.emit(op_type, [x], axis=axes[0], keepdims=int(ctx.attrs["keepdims"]),
                        select_last_index=1 if last else None)
    # over several axes the index counts in their row-major order: move them last, as one
    kept = [a for a in range(len(shape)) if a not in axes]
    x = ctx.transpose(x, kept + list(axes))
    x = ctx.reshape(x, [shape[a] for a in kept] + [dim_prod(shape[a] for a in axes)])
    y = ctx.emit(op_type, [x], axis=len(kept), keepdims=0,
                 select_last_index=1 if last else None)
    return y if tuple(shape[a] for a in kept) == out_shape else ctx.reshape(y, out_shape)


# -- scans ------------------------------------------------------------------------------------


def _scan_input(ctx: EmitContext) -> tuple[str, int]:
    """The data (cast to the result dtype, flattened for ``axis=None``) and the scanned axis."""
    x = ctx.input(0)
    if ctx.type_of(0).dtype != ctx.out_type.dtype:
        x = ctx.cast(x, ctx.out_type.dtype)
    if ctx.attrs["axis"] is None:
        if len(ctx.type_of(0).shape) != 1:
            x = ctx.reshape(x, ctx.out_type.shape)
        return x, 0
    return x, ctx.attrs["axis"] % len(ctx.out_type.shape)


@emitter("cumsum")
def _cumsum(ctx: EmitContext) -> str:
    ctx.need_opset(11, "CumSum")
    x, axis = _scan_input(ctx)
    return ctx.emit("CumSum", [x, ctx.constant(np.array(axis, np.int64), hint="axis")],
                    exclusive=1 if ctx.attrs["exclusive"] else None)


@emitter("cumprod")
def _cumprod(ctx: EmitContext) -> str:
    # ONNX has CumProd only from opset 26: each output element is the product over a row of
    # a triangle, y[..., i] = prod_j where(j <= i, x[..., j], 1) (j < i when exclusive)
    x, axis = _scan_input(ctx)
    shape = list(ctx.out_type.shape)
    n = shape[axis]
    rank = len(shape)
    perm = [a for a in range(rank) if a != axis] + [axis]
    x = ctx.transpose(x, perm)
    moved = [shape[a] for a in perm]
    x = ctx.reshape(x, moved[:-1] + [1, n])
    j, i = np.arange(n), np.arange(n)[:, None]
    mask = (j < i) if ctx.attrs["exclusive"] else (j <= i)
    one = ctx.constant(np.ones((), ctx.out_type.dtype))
    rows = ctx.emit("Where", [ctx.constant(mask, hint="mask"), x, one])
    if ctx.opset >= 18:
        y = ctx.emit("ReduceProd", [rows, ctx.int64s([rank], "axes")], keepdims=0)
    else:
        y = ctx.emit("ReduceProd", [rows], axes=[rank], keepdims=0)
    return ctx.transpose(y, [perm.index(a) for a in range(rank)])


# -- linear algebra ---------------------------------------------------------------------------


@emitter("einsum")
def _einsum(ctx: EmitContext) -> str:
    ctx.need_opset(12, "Einsum")
    names = ctx.inputs_of(0)
    field_types = type_of(ctx.node.inputs[0]).fields
    # the explicit form (no implicit output, ellipses spelled out): one reading for any runtime
    equation, _ = einsum_terms(ctx.attrs["equation"], tuple(tuple(t.shape) for t in field_types))
    dtype = ctx.out_type.dtype
    if dtype == "bfloat16" and ctx.lacks_type("Einsum", dtype):
        # no bfloat16 Einsum before opset 22: products and sums in float32, rounded once
        return ctx.cast(ctx.emit("Einsum", [ctx.cast(n, "float32") for n in names],
                                 equation=equation), dtype)
    return ctx.emit("Einsum", names, equation=equation)


@emitter("linalg.det")
def _det(ctx: EmitContext) -> str:
    ctx.need_opset(11, "Det")
    return ctx.emit("Det", [ctx.input(0)])
