"""Emitters of the core tensor ops: elementwise math, comparisons, shape changes, reductions
and tensor creation. Shapes are static, so every reshape-like op is one ``Reshape`` to the
output shape (no ``Squeeze``/``Unsqueeze``, whose signature changed across opsets)."""

from __future__ import annotations

import math

import numpy as np
from irpass.op.create import shape_value
from irpass.op.reduce import reduce_axes
from onnx import helper

from .builder import EmitContext, emitter

__all__: list[str] = []

_FLOATS = ("float16", "float32", "float64")

_UNARY = {
    "abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "tanh": "Tanh",
    "sigmoid": "Sigmoid", "negative": "Neg", "nn.relu": "Relu", "erf": "Erf",
}
_BINARY = {
    "add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "power": "Pow",
    "equal": "Equal", "less": "Less", "greater": "Greater",
}


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


@emitter(*_BINARY)
def _binary(ctx: EmitContext) -> str:
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
    return ctx.reshape(ctx.input(0), shape)


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
    op = _REDUCE[ctx.node.op]
    keep = int(ctx.attrs["keepdims"])
    axes_as_input = ctx.opset >= (13 if op == "ReduceSum" else 18)
    if axes_as_input:
        return ctx.emit(op, [ctx.input(0), ctx.int64s(axes, "axes")], keepdims=keep)
    return ctx.emit(op, [ctx.input(0)], axes=list(axes), keepdims=keep)


# -- creation ---------------------------------------------------------------------------------


def _filled(ctx: EmitContext, value: object, dtype: str) -> str:
    shape = ctx.out_type.shape
    tensor = helper.make_tensor("value", ctx.onnx_type(dtype), [1],
                                np.array([value], dtype=dtype).tolist())
    return ctx.emit("ConstantOfShape", [ctx.int64s(shape)], value=tensor)


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
    return ctx.emit("Expand", [value, ctx.int64s(ctx.out_type.shape)])


@emitter("shape_of")
def _shape_of(ctx: EmitContext) -> str:
    # shapes are static: the result is a constant
    return ctx.constant(shape_value(ctx.type_of(0).shape, ctx.attrs["dtype"]), hint="shape")
