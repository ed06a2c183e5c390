"""Converters of the ONNX elementwise math, comparison, logic, bitwise, reduction and scan ops,
``Einsum`` and ``Det``.

From opset 7 ONNX broadcasts binary ops numpy-style, as the irpass ops do. Before it, a binary
op broadcasts only with ``broadcast=1``, aligning the second operand at ``axis``; that is
rewritten into numpy broadcasting (a reshape of the second operand) or rejected naming the node.
Variadic ops become chains of binary calls: ``Sum(a, b, c) -> add(add(a, b), c)``.

Most ops map to one core op. The reductions ONNX has and Relay lacks are decomposed:
``ReduceL1`` = sum(|x|), ``ReduceL2`` = sqrt(sum(x*x)), ``ReduceSumSquare`` = sum(x*x),
``ReduceLogSum`` = log(sum(x)), ``ReduceLogSumExp`` = m + log(sum(exp(x - m))) with ``m`` the
finite maximum (0 where it is infinite); the ones with a sqrt/log take integers through float64.
``LpNormalization`` divides by the norm (a zero norm gives 0), ``MeanVarianceNormalization`` is
(x - mean) / (std + 1e-9), ``IsInf`` with one sign tests that sign too, and a reversed
``CumSum``/``CumProd`` scans the reversed axis.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from irpass.evaluator import evaluate
from irpass.ir import Expr, Tuple, const

from ..dtypes import FLOAT_DTYPES
from .context import NodeContext
from .registry import converter
from .tensor import call, ints_of, norm_axes, norm_axis

__all__: list[str] = []



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
    if et in FLOAT_DTYPES:
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
    return call("logical_not", [ctx.input(0)])


def _logical(op: str) -> Callable[[NodeContext], Expr]:
    def convert(ctx: NodeContext) -> Expr:
        _check_bool(ctx, 0, 1)
        return call(op, [ctx.input(0), _legacy_rhs(ctx, ctx.input(1))])

    convert.__name__ = f"_convert_{op}"
    return convert


for _onnx, _op in (("And", "logical_and"), ("Or", "logical_or"), ("Xor", "logical_xor")):
    converter(_onnx, since=1)(_logical(_op))


# -- integer remainders and bits ----------------------------------------------------------------


def _check_int(ctx: NodeContext, *inputs: int) -> None:
    for i in inputs:
        dtype = ctx.type_of(i).dtype
        if np.dtype(dtype).kind not in "iu":
            ctx.fail(f"input {i} must have an integer dtype, got {dtype}")


@converter("Mod", since=10)
def _mod(ctx: NodeContext) -> Expr:
    fmod = ctx.attr("fmod", 0)
    if fmod not in (0, 1):
        ctx.fail(f"fmod must be 0 or 1, got {fmod}")
    # fmod=0 rounds the quotient down (the sign of B), fmod=1 toward zero (the sign of A); the
    # spec asked floats to set fmod=1 before opset 28, but both are well defined for them
    return call("trunc_mod" if fmod else "floor_mod", [ctx.input(0), ctx.input(1)])


@converter("BitShift", since=11)
def _bit_shift(ctx: NodeContext) -> Expr:
    _check_int(ctx, 0, 1)
    direction = ctx.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        ctx.fail(f"direction must be 'LEFT' or 'RIGHT', got {direction!r}")
    op = "left_shift" if direction == "LEFT" else "right_shift"
    return call(op, [ctx.input(0), ctx.input(1)])


def _bitwise(op: str) -> Callable[[NodeContext], Expr]:
    def convert(ctx: NodeContext) -> Expr:
        _check_int(ctx, *range(ctx.num_inputs))
        return call(op, [ctx.input(i) for i in range(ctx.num_inputs)])

    convert.__name__ = f"_convert_{op}"
    return convert


for _onnx, _op in (("BitwiseAnd", "bitwise_and"), ("BitwiseOr", "bitwise_or"),
                   ("BitwiseXor", "bitwise_xor"), ("BitwiseNot", "bitwise_not")):
    converter(_onnx, since=18)(_bitwise(_op))


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
    ("Sin", "sin", 7),
    ("Cos", "cos", 7),
    ("Tan", "tan", 7),
    ("Asin", "asin", 7),
    ("Acos", "acos", 7),
    ("Atan", "atan", 7),
    ("Sinh", "sinh", 9),
    ("Cosh", "cosh", 9),
    ("Asinh", "asinh", 9),
    ("Acosh", "acosh", 9),
    ("Atanh", "atanh", 9),
    ("Floor", "floor", 1),
    ("Ceil", "ceil", 1),
    ("Round", "round", 11),
    ("Sign", "sign", 9),
    ("IsNaN", "isnan", 9),
):

    def _unary(ctx: NodeContext, _op: str = _op) -> Expr:
        return call(_op, [ctx.input(0)])

    _unary.__name__ = f"_convert_{_op}"
    converter(_onnx, since=_since)(_unary)


@converter("Reciprocal", since=1)
def _reciprocal(ctx: NodeContext) -> Expr:
    dtype = ctx.type_of(0).dtype
    return call("divide", [const(np.array(1, dtype=dtype)), ctx.input(0)])


@converter("IsInf", since=10)
def _isinf(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    ty = ctx.type_of(0)
    positive, negative = ctx.attr("detect_positive", 1), ctx.attr("detect_negative", 1)
    found = call("isinf", [x])
    if positive and negative:
        return found
    if not positive and not negative:
        return const(np.broadcast_to(np.array(False), ty.shape))
    zero = const(np.array(0, dtype=ty.dtype))
    side = call("greater" if positive else "less", [x, zero])
    return call("logical_and", [found, side])


# -- reductions --------------------------------------------------------------------------------


def _reduce_axes(ctx: NodeContext, axes_input_since: int) -> list[int] | None:
    """The sorted axes a Reduce* node reduces: None for every axis, [] for none
    (``noop_with_empty_axes`` with no axes)."""
    rank = len(ctx.type_of(0).shape)
    if ctx.opset >= axes_input_since:
        known = ctx.const_input(1, "axes", optional=True)
        axes = None if known is None else ints_of(ctx, known, "axes")
        if not axes:
            return [] if ctx.attr("noop_with_empty_axes", 0) else None
    else:
        axes = ctx.attr("axes", None)
    if not axes:
        return None  # every axis
    return sorted(norm_axes(ctx, axes, rank))


def _reduce_call(op: str, x: Expr, axes: list[int] | None, keepdims: bool) -> Expr:
    """``op`` over ``axes`` (None: all); [] reduces nothing (the input itself)."""
    if axes == []:
        return x
    return call(op, [x], axis=axes, keepdims=keepdims, exclude=False)


def _as_float64(ctx: NodeContext, build: Callable[[Expr], Expr], x: Expr) -> Expr:
    """``build(x)`` for a float ``x``; an integer one goes through float64 and back (the
    result truncated, as ONNX's reference casts it)."""
    dtype = ctx.type_of(0).dtype
    if dtype in FLOAT_DTYPES:
        return build(x)
    return call("cast", [build(call("cast", [x], dtype="float64"))], dtype=dtype)


def _log_sum_exp(ctx: NodeContext, x: Expr, axes: list[int] | None, keepdims: bool) -> Expr:
    if axes == []:
        return x  # log(exp(x))
    dtype = ctx.type_of_expr(x).dtype
    m = call("max", [x], axis=axes, keepdims=True, exclude=False)
    # an infinite max (or the -inf of an empty set) would make x - m NaN: shift by 0 there
    m = call("where", [call("isinf", [m]), const(np.array(0, dtype=dtype)), m])
    total = call("sum", [call("exp", [call("subtract", [x, m])])], axis=axes, keepdims=True,
                 exclude=False)
    out = call("add", [call("log", [total]), m])
    if keepdims:
        return out
    shape = ctx.type_of_expr(out).shape
    dropped = range(len(shape)) if axes is None else axes
    return call("reshape", [out], newshape=[d for i, d in enumerate(shape) if i not in dropped])


def _reduce(onnx_op: str, axes_input_since: int) -> Callable[[NodeContext], Expr]:
    def convert(ctx: NodeContext) -> Expr:
        keepdims = bool(ctx.attr("keepdims", 1))
        axes = _reduce_axes(ctx, axes_input_since)
        ty = ctx.type_of(0)
        reduced = range(len(ty.shape)) if axes is None else axes
        if axes != [] and any(ty.shape[a] == 0 for a in reduced):
            # over no elements the result is the reduction's identity whatever the input
            # holds: a constant (onnxruntime refuses some of these, e.g. ReduceMax of bool)
            empty = build(ctx, const(np.zeros(ty.shape, ty.dtype)), axes, keepdims)
            return const(np.asarray(evaluate(empty)))
        return build(ctx, ctx.input(0), axes, keepdims)

    def build(ctx: NodeContext, x: Expr, axes: list[int] | None, keepdims: bool) -> Expr:
        if onnx_op in _SIMPLE_REDUCE:
            return _reduce_call(_SIMPLE_REDUCE[onnx_op], x, axes, keepdims)
        if onnx_op == "ReduceL1":
            return _reduce_call("sum", call("abs", [x]), axes, keepdims)
        squares = call("multiply", [x, x])
        if onnx_op == "ReduceSumSquare":
            return _reduce_call("sum", squares, axes, keepdims)
        if onnx_op == "ReduceL2":
            return _as_float64(
                ctx, lambda v: call("sqrt", [_reduce_call("sum", call("multiply", [v, v]), axes,
                                                          keepdims)]), x)
        if onnx_op == "ReduceLogSum":
            return _as_float64(
                ctx, lambda v: call("log", [_reduce_call("sum", v, axes, keepdims)]), x)
        return _as_float64(ctx, lambda v: _log_sum_exp(ctx, v, axes, keepdims), x)

    convert.__name__ = f"_convert_{onnx_op}"
    return convert


_SIMPLE_REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max",
                  "ReduceMin": "min", "ReduceProd": "prod"}

for _onnx, _since in (
    ("ReduceSum", 13),
    ("ReduceMean", 18),
    ("ReduceMax", 18),
    ("ReduceMin", 18),
    ("ReduceProd", 18),
    ("ReduceL1", 18),
    ("ReduceL2", 18),
    ("ReduceSumSquare", 18),
    ("ReduceLogSum", 18),
    ("ReduceLogSumExp", 18),
):
    converter(_onnx, since=1)(_reduce(_onnx, _since))


def _arg_reduce(op: str) -> Callable[[NodeContext], Expr]:
    def convert(ctx: NodeContext) -> Expr:
        rank = len(ctx.type_of(0).shape)
        if rank == 0:
            ctx.fail("input must have at least one dimension")
        axis = norm_axis(ctx, int(ctx.attr("axis", 0)), rank)
        last = bool(ctx.attr("select_last_index", 0)) if ctx.opset >= 12 else False
        return call(op, [ctx.input(0)], axis=[axis], keepdims=bool(ctx.attr("keepdims", 1)),
                    exclude=False, select_last_index=last)

    convert.__name__ = f"_convert_{op}"
    return convert


converter("ArgMax", since=1)(_arg_reduce("argmax"))
converter("ArgMin", since=1)(_arg_reduce("argmin"))


# -- scans ---------------------------------------------------------------------------------------


def _reverse(x: Expr, axis: int, size: int) -> Expr:
    return call("strided_slice", [x], begin=[-1], end=[-size - 1], strides=[-1], axes=[axis])


def _scan(op: str) -> Callable[[NodeContext], Expr]:
    def convert(ctx: NodeContext) -> Expr:
        x = ctx.input(0)
        shape = ctx.type_of(0).shape
        known = ctx.const_input(1, "axis")
        if known.size != 1 or known.dtype.kind not in "iu":
            ctx.fail(f"axis must be one integer, got {known.dtype.name} of shape {known.shape}")
        axis = norm_axis(ctx, int(known.reshape(())), len(shape))
        exclusive = bool(ctx.attr("exclusive", 0))
        if not ctx.attr("reverse", 0) or shape[axis] < 2:
            return call(op, [x], axis=axis, exclusive=exclusive)
        n = shape[axis]
        scanned = call(op, [_reverse(x, axis, n)], axis=axis, exclusive=exclusive)
        return _reverse(scanned, axis, n)

    convert.__name__ = f"_convert_{op}"
    return convert


converter("CumSum", since=11)(_scan("cumsum"))
converter("CumProd", since=26)(_scan("cumprod"))


# -- normalizations --------------------------------------------------------------------------


@converter("LpNormalization", since=1)
def _lp_normalization(ctx: NodeContext) -> Expr:
    ty = ctx.type_of(0)
    if ty.dtype not in FLOAT_DTYPES:
        ctx.fail(f"input must be a float tensor, got {ty.dtype}")
    axis = norm_axis(ctx, int(ctx.attr("axis", -1)), len(ty.shape))
    p = ctx.attr("p", 2)
    x = ctx.input(0)
    if p == 1:
        norm = call("sum", [call("abs", [x])], axis=[axis], keepdims=True, exclude=False)
    elif p == 2:
        norm = call("sqrt", [call("sum", [call("multiply", [x, x])], axis=[axis], keepdims=True,
                                     exclude=False)])
    else:
        ctx.fail(f"p must be 1 or 2, got {p}")
    # a zero norm means a zero x: dividing by 1 there gives the 0 the spec asks for
    zero, one = const(np.array(0, dtype=ty.dtype)), const(np.array(1, dtype=ty.dtype))
    safe = call("where", [call("equal", [norm, zero]), one, norm])
    return call("divide", [x, safe])


@converter("MeanVarianceNormalization", since=9)
def _mvn(ctx: NodeContext) -> Expr:
    ty = ctx.type_of(0)
    if ty.dtype not in FLOAT_DTYPES:
        ctx.fail(f"input must be a float tensor, got {ty.dtype}")
    axes = sorted(norm_axes(ctx, ctx.attr("axes", [0, 2, 3]), len(ty.shape)))
    x = ctx.input(0)
    mean = call("mean", [x], axis=axes, keepdims=True, exclude=False)
    centered = call("subtract", [x, mean])
    var = call("mean", [call("multiply", [centered, centered])], axis=axes, keepdims=True,
               exclude=False)
    std = call("sqrt", [var])
    return call("divide", [centered, call("add", [std, const(np.array(1e-9, dtype=ty.dtype))])])


# -- einsum and det ------------------------------------------------------------------------------


@converter("Einsum", since=12)
def _einsum(ctx: NodeContext) -> Expr:
    xs = [ctx.input(i) for i in range(ctx.num_inputs)]
    if not xs:
        ctx.fail("needs at least one input")
    return call("einsum", [Tuple(xs)], equation=str(ctx.attr("equation")))


@converter("Det", since=11)
def _det(ctx: NodeContext) -> Expr:
    return call("linalg.det", [ctx.input(0)])
