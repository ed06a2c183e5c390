"""Converters of the ONNX elementwise math, comparison, logic and reduction ops.

From opset 7 ONNX broadcasts binary ops numpy-style, as the irpass ops do. Before it, a binary
op broadcasts only with ``broadcast=1``, aligning the second operand at ``axis``; that is
rewritten into numpy broadcasting (a reshape of the second operand) or rejected naming the node.
Variadic ops become chains of binary calls: ``Sum(a, b, c) -> add(add(a, b), c)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from irpass.ir import Expr, const

from .context import NodeContext
from .registry import converter
from .tensor import call, ints_of, norm_axes

__all__: list[str] = []

_FLOAT_DTYPES = frozenset({"float16", "float32", "float64"})


def _legacy_rhs(ctx: NodeContext, rhs: Expr) -> Expr:
    """The second operand of a binary op rewritten for numpy broadcasting (opset < 7)."""
    if ctx.opset >= 7:
        return rhs
    a = ctx.type_of(0).shape
    b = ctx.type_of(1).shape
    if not ctx.attr("broadcast", 0):
        if a != b:
            ctx.fail(f"operands of shapes {a} and {b} differ and broadcast is not set "
                     f"(opset {ctx.opset} broadcasts only with broadcast=1)")
        return rhs
    if len(b) > len(a):
        ctx.fail(f"with broadcast=1 the second operand {b} must not have more axes than the "
                 f"first {a}")
    axis = ctx.attr("axis", None)
    axis = len(a) - len(b) if axis is None else int(axis)
    if axis < 0:
        axis += len(a)
    if not 0 <= axis <= len(a) - len(b):
        ctx.fail(f"axis {ctx.attr('axis', None)} does not fit a second operand of shape {b} "
                 f"into the first of shape {a}")
    for k, d in enumerate(b):
        if d not in (1, a[axis + k]):
            ctx.fail(f"second operand of shape {b} does not match shape {a} at axis {axis}")
    trailing = len(a) - axis - len(b)
    if trailing:
        rhs = call("reshape", [rhs], newshape=list(b) + [1] * trailing)
    return rhs


def _binary(op: str) -> Callable[[NodeContext], Expr]:
    def convert(ctx: NodeContext) -> Expr:
        return call(op, [ctx.input(0), _legacy_rhs(ctx, ctx.input(1))])

    convert.__name__ = f"_convert_{op}"
    return convert


for _onnx, _op, _since in (
    ("Add", "add", 1),
    ("Sub", "subtract", 1),
    ("Mul", "multiply", 1),
    # integer Div truncates toward zero in onnxruntime (C++ division); so does irpass's divide
    ("Div", "divide", 1),
    ("Equal", "equal", 1),
    ("Less", "less", 1),
    ("Greater", "greater", 1),
    ("LessOrEqual", "less_equal", 12),
    ("GreaterOrEqual", "greater_equal", 12),
):
    converter(_onnx, since=_since)(_binary(_op))


@converter("Pow", since=1)
def _pow(ctx: NodeContext) -> Expr:
    base, exponent = ctx.input(0), _legacy_rhs(ctx, ctx.input(1))
    bt, et = ctx.type_of(0).dtype, ctx.type_of(1).dtype
    if bt == et:
        return call("power", [base, exponent])
    # opset 12+: the exponent may have another type; the result has the base's.
    if et in _FLOAT_DTYPES:
        # computed in the exponent's float type, then converted back (onnxruntime does
        # std::pow on the promoted values)
        out = call("power", [call("cast", [base], dtype=et), exponent])
        return call("cast", [out], dtype=bt)
    return call("power", [base, call("cast", [exponent], dtype=bt)])


# -- logic: bool tensors only, built from comparisons ------------------------------------------


def _check_bool(ctx: NodeContext, *inputs: int) -> None:
    for i in inputs:
        dtype = ctx.type_of(i).dtype
        if dtype != "bool":
            ctx.fail(f"input {i} must be bool, got {dtype}")


@converter("Not", since=1)
def _not(ctx: NodeContext) -> Expr:
    _check_bool(ctx, 0)
    return call("equal", [ctx.input(0), const(np.array(False))])


@converter("And", since=1)
def _and(ctx: NodeContext) -> Expr:
    _check_bool(ctx, 0, 1)
    return call("minimum", [ctx.input(0), _legacy_rhs(ctx, ctx.input(1))])


@converter("Or", since=1)
def _or(ctx: NodeContext) -> Expr:
    _check_bool(ctx, 0, 1)
    return call("maximum", [ctx.input(0), _legacy_rhs(ctx, ctx.input(1))])


@converter("Xor", since=1)
def _xor(ctx: NodeContext) -> Expr:
    _check_bool(ctx, 0, 1)
    return call("not_equal", [ctx.input(0), _legacy_rhs(ctx, ctx.input(1))])


# -- variadic ----------------------------------------------------------------------------------


def _chain(ctx: NodeContext, op: str) -> Expr:
    xs = [ctx.input(i) for i in range(ctx.num_inputs)]
    if not xs:
        ctx.fail("needs at least one input")
    out = xs[0]
    for x in xs[1:]:
        out = call(op, [out, x])
    return out


@converter("Sum", since=1)
def _sum(ctx: NodeContext) -> Expr:
    return _chain(ctx, "add")


@converter("Max", since=1)
def _max(ctx: NodeContext) -> Expr:
    return _chain(ctx, "maximum")


@converter("Min", since=1)
def _min(ctx: NodeContext) -> Expr:
    return _chain(ctx, "minimum")


@converter("Mean", since=1)
def _mean(ctx: NodeContext) -> Expr:
    total = _chain(ctx, "add")
    if ctx.num_inputs == 1:
        return total
    dtype = ctx.type_of(0).dtype
    return call("divide", [total, const(np.array(ctx.num_inputs, dtype=dtype))])


# -- unary -------------------------------------------------------------------------------------

for _onnx, _op, _since in (
    ("Neg", "negative", 1),
    ("Abs", "abs", 1),
    ("Exp", "exp", 1),
    ("Log", "log", 1),
    ("Sqrt", "sqrt", 1),
    ("Erf", "erf", 9),
):

    def _unary(ctx: NodeContext, _op: str = _op) -> Expr:
        return call(_op, [ctx.input(0)])

    _unary.__name__ = f"_convert_{_op}"
    converter(_onnx, since=_since)(_unary)


@converter("Reciprocal", since=1)
def _reciprocal(ctx: NodeContext) -> Expr:
    dtype = ctx.type_of(0).dtype
    return call("divide", [const(np.array(1, dtype=dtype)), ctx.input(0)])


# -- reductions --------------------------------------------------------------------------------


def _reduce(op: str, axes_input_since: int) -> Callable[[NodeContext], Expr]:
    def convert(ctx: NodeContext) -> Expr:
        x = ctx.input(0)
        rank = len(ctx.type_of(0).shape)
        keepdims = bool(ctx.attr("keepdims", 1))
        if ctx.opset >= axes_input_since:
            known = ctx.const_input(1, "axes", optional=True)
            axes = None if known is None else ints_of(ctx, known, "axes")
            if not axes and ctx.attr("noop_with_empty_axes", 0):
                return x
        else:
            axes = ctx.attr("axes", None)
        if not axes:
            axis = None  # every axis
        else:
            axis = sorted(norm_axes(ctx, axes, rank))
        return call(op, [x], axis=axis, keepdims=keepdims, exclude=False)

    convert.__name__ = f"_convert_{op}"
    return convert


for _onnx, _op, _since in (
    ("ReduceSum", "sum", 13),
    ("ReduceMean", "mean", 18),
    ("ReduceMax", "max", 18),
    ("ReduceMin", "min", 18),
    ("ReduceProd", "prod", 18),
):
    converter(_onnx, since=1)(_reduce(_op, _since))
