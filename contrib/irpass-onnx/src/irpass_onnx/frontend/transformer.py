"""Converters of the ONNX transformer-era ops: Attention, RotaryEmbedding, RMSNormalization,
GroupNormalization, LinearAttention, SwiGLU and CausalConvWithState.

Each is decomposed into core ops, as TVM's ONNX frontend does (``nn.group_norm`` is the one
core op among them): masks that depend only on shapes (causal, sliding windows, padding of a
short mask) are computed at import as constants.
"""

from __future__ import annotations

from irpass.ir import Expr

from .context import NodeContext
from .nn import _cast_to, _float_type, _norm_axis, call, scalar, stash_dtype
from .registry import converter

__all__: list[str] = []


# -- normalization -----------------------------------------------------------------------------


@converter("GroupNormalization", since=18)
def _group_norm(ctx: NodeContext) -> Expr:
    xt = _float_type(ctx, 0)
    if len(xt.shape) < 2:
        ctx.fail(f"input {xt} must have rank >= 2 (N, C, ...)")
    channels = xt.shape[1]
    groups = int(ctx.attr("num_groups"))
    if groups < 1 or channels % groups:
        ctx.fail(f"num_groups {groups} does not divide the {channels} channels of input {xt}")
    params = []
    for i, name in ((1, "scale"), (2, "bias")):
        p = _cast_to(ctx.input(i), ctx.type_of(i).dtype, xt.dtype)
        want = channels if ctx.opset >= 21 else groups
        if ctx.type_of(i).shape != (want,):
            ctx.fail(f"{name} must have shape ({want},), got {ctx.type_of(i).shape}")
        if ctx.opset < 21 and groups != channels:
            # GroupNormalization-18 scales per group: repeat each value for its channels
            per = channels // groups
            p = call("reshape", call("broadcast_to", call("expand_dims", p, axis=1),
                                     shape=[groups, per]), newshape=[channels])
        params.append(p)
    if ctx.opset >= 21:
        stash_dtype(ctx, xt.dtype)  # the core op computes float16 in float32 already
    return call("nn.group_norm", ctx.input(0), *params, num_groups=groups, axis=1,
                epsilon=float(ctx.attr("epsilon", 1e-5)))


@converter("RMSNormalization", since=23)
def _rms_norm(ctx: NodeContext) -> Expr:
    xt = _float_type(ctx, 0)
    rank = len(xt.shape)
    axis = _norm_axis(ctx, rank)
    _, wide = stash_dtype(ctx, xt.dtype)
    x = _cast_to(ctx.input(0), xt.dtype, wide)
    mean_sq = call("mean", call("multiply", x, x), axis=list(range(axis, rank)), keepdims=True)
    rms = call("sqrt", call("add", mean_sq, scalar(float(ctx.attr("epsilon", 1e-5)), wide)))
    normed = _cast_to(call("divide", x, rms), wide, xt.dtype)
    return call("multiply", normed, _cast_to(ctx.input(1), ctx.type_of(1).dtype, xt.dtype))
