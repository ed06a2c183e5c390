"""ONNX activations without a core op of their own, decomposed into core ops: HardSigmoid,
Mish, Celu, ThresholdedRelu, Shrink, Softsign, Swish (but with alpha 1, ``nn.silu``), SwiGLU
and Hardmax; and HardSwish, which is ``nn.hard_swish``.

Every opset version of each is covered; the versions differ in the dtypes they allow (which
the core ops check) except Hardmax, whose versions before 13 coerce the input to 2-D at
``axis`` (default 1) and pick one maximum of each flattened row, where 13 picks one along
``axis`` (default -1). Exponentials only ever see non-positive arguments, so no
intermediate value overflows where the result is finite; float16 and bfloat16 inputs are
computed in float32 and rounded once.
"""

from __future__ import annotations

import math

import numpy as np
from irpass.ir import Expr

from .context import NodeContext
from .nn import _float_type, _pos_neg, call, scalar
from .registry import converter

__all__: list[str] = []


def _widened(ctx: NodeContext, i: int = 0) -> tuple[Expr, str, str]:
    """Input ``i`` (a float tensor), the dtype to compute in and its own dtype: float16 and
    bfloat16 are computed in float32 and rounded once at the end (as onnxruntime does;
    rounding each step would lose, e.g., all of log(1 + exp(-8)))."""
    dtype = _float_type(ctx, i).dtype
    x = ctx.input(i)
    if dtype in ("float16", "bfloat16"):
        return call("cast", x, dtype="float32"), "float32", dtype
    return x, dtype, dtype


def _narrowed(y: Expr, work: str, dtype: str) -> Expr:
    return y if work == dtype else call("cast", y, dtype=dtype)


def _clip01(x: Expr) -> Expr:
    return call("clip", x, a_min=0.0, a_max=1.0)


def _affine(x: Expr, alpha: float, beta: float, dtype: str) -> Expr:
    return call("add", call("multiply", x, scalar(alpha, dtype)), scalar(beta, dtype))


def _float_attr(ctx: NodeContext, name: str, default: float) -> float:
    value = ctx.attr(name, default)
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        ctx.fail(f"attribute {name}={value!r} is not a finite number")
    return float(value)


@converter("HardSigmoid", since=1)
def _hard_sigmoid(ctx: NodeContext) -> Expr:
    # max(0, min(1, alpha * x + beta))
    x, work, dtype = _widened(ctx)
    # (attributes are float32: the default alpha is float32(0.2), as given in a model)
    alpha = _float_attr(ctx, "alpha", float(np.float32(0.2)))
    beta = _float_attr(ctx, "beta", 0.5)
    return _narrowed(_clip01(_affine(x, alpha, beta, work)), work, dtype)


@converter("HardSwish", since=14)
def _hard_swish(ctx: NodeContext) -> Expr:
    _float_type(ctx, 0)
    return call("nn.hard_swish", ctx.input(0))


def _softplus(x: Expr, dtype: str) -> Expr:
    """log(1 + exp(x)) as max(x, 0) + log(1 + exp(-|x|)), which cannot overflow."""
    pos, _ = _pos_neg(x, dtype)
    minus_abs = call("negative", call("abs", x))
    return call("add", pos, call("log", call("add", scalar(1.0, dtype), call("exp", minus_abs))))


@converter("Mish", since=18)
def _mish(ctx: NodeContext) -> Expr:
    # x * tanh(softplus(x))
    x, work, dtype = _widened(ctx)
    return _narrowed(call("multiply", x, call("tanh", _softplus(x, work))), work, dtype)


@converter("Celu", since=12)
def _celu(ctx: NodeContext) -> Expr:
    # max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); the second term is 0 for x >= 0
    # whatever the sign of alpha, so it only needs min(x, 0) (exp cannot overflow for
    # alpha > 0)
    x, work, dtype = _widened(ctx)
    alpha = _float_attr(ctx, "alpha", 1.0)
    if alpha == 0:
        ctx.fail("attribute alpha=0: Celu divides by alpha")
    pos, neg = _pos_neg(x, work)
    expm1 = call("subtract", call("exp", call("divide", neg, scalar(alpha, work))),
                 scalar(1.0, work))
    term = call("minimum", call("multiply", scalar(alpha, work), expm1), scalar(0.0, work))
    return _narrowed(call("add", pos, term), work, dtype)


@converter("ThresholdedRelu", since=10)
def _thresholded_relu(ctx: NodeContext) -> Expr:
    # x where x > alpha, else 0
    dtype = _float_type(ctx, 0).dtype
    x = ctx.input(0)
    alpha = _float_attr(ctx, "alpha", 1.0)
    return call("where", call("greater", x, scalar(alpha, dtype)), x, scalar(0.0, dtype))


_SHRINK_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                  "uint16", "uint32", "uint64")


@converter("Shrink", since=9)
def _shrink(ctx: NodeContext) -> Expr:
    # x + bias where x < -lambd, x - bias where x > lambd, else 0. Integers are compared and
    # shifted in float64 and the result converted back, as onnxruntime does in float.
    dtype = ctx.type_of(0).dtype
    if dtype not in _SHRINK_DTYPES:
        ctx.fail(f"input 0 has dtype {dtype}; Shrink takes {', '.join(_SHRINK_DTYPES)}")
    lambd = _float_attr(ctx, "lambd", 0.5)
    bias = _float_attr(ctx, "bias", 0.0)
    x = ctx.input(0)
    work = dtype if dtype.startswith("float") else "float64"
    if work != dtype:
        x = call("cast", x, dtype=work)
    low = call("less", x, scalar(-lambd, work))
    high = call("greater", x, scalar(lambd, work))
    zero = scalar(0.0, work)
    y = call("where", low, call("add", x, scalar(bias, work)),
             call("where", high, call("subtract", x, scalar(bias, work)), zero))
    return y if work == dtype else call("cast", y, dtype=dtype)


@converter("Softsign", since=1)
def _softsign(ctx: NodeContext) -> Expr:
    # x / (1 + |x|)
    x, work, dtype = _widened(ctx)
    y = call("divide", x, call("add", scalar(1.0, work), call("abs", x)))
    return _narrowed(y, work, dtype)


def _swish(x: Expr, alpha: float, dtype: str) -> Expr:
    """x * sigmoid(alpha * x)."""
    scaled = x if alpha == 1.0 else call("multiply", x, scalar(alpha, dtype))
    return call("multiply", x, call("sigmoid", scaled))


@converter("Swish", since=24)
def _swish_op(ctx: NodeContext) -> Expr:
    alpha = _float_attr(ctx, "alpha", 1.0)
    if alpha == 1.0:  # SiLU
        _float_type(ctx, 0)
        return call("nn.silu", ctx.input(0))
    x, work, dtype = _widened(ctx)
    return _narrowed(_swish(x, alpha, work), work, dtype)


@converter("SwiGLU", since=28)
def _swiglu(ctx: NodeContext) -> Expr:
    # Swish_alpha(A) * B; A and B have one shape (no broadcasting)
    at, bt = _float_type(ctx, 0), ctx.type_of(1)
    if bt.dtype != at.dtype or bt.shape != at.shape:
        ctx.fail(f"inputs A {at} and B {bt} must have the same shape and dtype")
    a, work, dtype = _widened(ctx, 0)
    b = ctx.input(1) if work == dtype else call("cast", ctx.input(1), dtype=work)
    gate = _swish(a, _float_attr(ctx, "alpha", 1.0), work)
    return _narrowed(call("multiply", gate, b), work, dtype)


@converter("Hardmax", since=1)
def _hardmax(ctx: NodeContext) -> Expr:
    # 1 at the first maximum along the axis, 0 elsewhere: one_hot of argmax. Before opset
    # 13 the input counts as 2-D, (prod(shape[:axis]), prod(shape[axis:])), one maximum
    # per row of that.
    xt = _float_type(ctx, 0)
    rank = len(xt.shape)
    legacy = ctx.opset < 13
    axis = ctx.attr("axis", 1 if legacy else -1)
    if rank == 0:
        ctx.fail(f"input {xt} is a scalar; Hardmax needs at least one axis")
    if not -rank <= axis < rank:
        ctx.fail(f"axis {axis} is out of range [{-rank}, {rank - 1}] for input {xt}")
    axis = axis + rank if axis < 0 else axis
    x = ctx.input(0)
    if legacy:
        flat = [math.prod(xt.shape[:axis]), math.prod(xt.shape[axis:])]
        x, axis = call("reshape", x, newshape=flat), 1
        depth = flat[1]
    else:
        depth = xt.shape[axis]
    if depth == 0:
        return call("zeros_like", ctx.input(0))  # nothing to pick from
    idx = call("argmax", x, axis=[axis])
    on, off = scalar(1.0, xt.dtype), scalar(0.0, xt.dtype)
    out = call("one_hot", idx, on, off, depth=depth, axis=axis, dtype=xt.dtype)
    return call("reshape", out, newshape=list(xt.shape)) if legacy else out
