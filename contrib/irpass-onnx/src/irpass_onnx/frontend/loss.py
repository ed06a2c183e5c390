"""Converters of the ONNX loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

Both are decomposed into core ops. The value at each sample's target class is picked with a
one-hot mask (``target == class index``) and a sum over the class axis, so a target outside
``[0, C)`` (an ``ignore_index`` such as -100) picks nothing instead of reading out of bounds;
the class weights are picked the same way.
"""

from __future__ import annotations

import numpy as np
from irpass.ir import Constant, Expr

from .context import NodeContext
from .nn import _float_type, call, scalar
from .registry import converter

__all__: list[str] = []

_REDUCTIONS = ("none", "sum", "mean")


def _nll(ctx: NodeContext, log_prob: Expr, dtype: str) -> Expr:
    """The loss of log-probabilities ``log_prob`` (N, C, d1...) against input 1, the targets
    (N, d1...), weighted by the optional input 2 and reduced as the node says."""
    shape = ctx.type_of_expr(log_prob).shape
    reduction = ctx.attr("reduction", "mean")
    if reduction not in _REDUCTIONS:
        ctx.fail(f"reduction {reduction!r} is not one of {', '.join(_REDUCTIONS)}")
    if len(shape) < 2:
        ctx.fail(f"input 0 must have shape (N, C, d1, ...), got {shape}")
    tt = ctx.type_of(1)
    if tt.dtype not in ("int32", "int64"):
        ctx.fail(f"the target (input 1) must be int32 or int64, got {tt.dtype}")
    if tt.shape != (shape[0],) + tuple(shape[2:]):
        ctx.fail(f"the target (input 1) has shape {tt.shape}; input 0 of shape {shape} needs "
                 f"{(shape[0],) + tuple(shape[2:])}")
    classes = shape[1]
    along_c = (1, classes) + (1,) * (len(shape) - 2)
    target = ctx.input(1)
    index = Constant(np.arange(classes, dtype=tt.dtype).reshape(along_c))
    mask = call("equal", call("expand_dims", target, axis=1), index)
    zero = scalar(0.0, dtype)
    loss = call("negative", call("sum", call("where", mask, log_prob, zero), axis=[1]))
    weight = None
    if ctx.has_input(2):
        wt = ctx.type_of(2)
        if wt.shape != (classes,):
            ctx.fail(f"the weight (input 2) must have shape ({classes},), got {wt.shape}")
        w = ctx.input(2)
        if wt.dtype != dtype:
            w = call("cast", w, dtype=dtype)
        weight = call("sum", call("where", mask, call("reshape", w, newshape=list(along_c)),
                                  zero), axis=[1])
    ignore = ctx.attr("ignore_index", None)
    if ignore is not None:
        keep = call("not_equal", target, Constant(np.array(ignore, dtype=tt.dtype)))
        weight = (call("cast", keep, dtype=dtype) if weight is None
                  else call("where", keep, weight, zero))
    if weight is not None:
        loss = call("multiply", loss, weight)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return call("sum", loss)
    if weight is None:
        return call("mean", loss)
    # the weighted mean divides by the weights of the samples counted
    return call("divide", call("sum", loss), call("sum", weight))


@converter("NegativeLogLikelihoodLoss", since=12)
def _negative_log_likelihood_loss(ctx: NodeContext) -> Expr:
    dtype = _float_type(ctx, 0).dtype
    return _nll(ctx, ctx.input(0), dtype)


@converter("SoftmaxCrossEntropyLoss", since=12)
def _softmax_cross_entropy_loss(ctx: NodeContext) -> list[Expr]:
    xt = _float_type(ctx, 0)
    if len(xt.shape) < 2:
        ctx.fail(f"scores (input 0) must have shape (N, C, d1, ...), got {xt.shape}")
    log_prob = call("nn.log_softmax", ctx.input(0), axis=1)
    loss = _nll(ctx, log_prob, xt.dtype)
    return [loss, log_prob] if ctx.num_outputs > 1 else [loss]
