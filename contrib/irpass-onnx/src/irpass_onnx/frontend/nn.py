"""Converters of the neural-network ONNX ops: convolution, pooling, dense products,
normalization, dropout and activations.

Shapes are static, so spatial padding (``auto_pad``) is resolved here; 1-D, 2-D and 3-D
convolution and pooling map to the core ops of that rank.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from irpass.ir import Call, Constant, Expr, Op, TensorType, Tuple, TupleGetItem
from irpass.op.nn._window import out_sizes

from ..dtypes import FLOAT_DTYPES
from .context import NodeContext
from .registry import converter

__all__: list[str] = []


# -- helpers -----------------------------------------------------------------------------------


def call(op: str, *args: Expr, **attrs: Any) -> Call:
    """A call of core op ``op`` (looked up by name: some ops are newer than their builders)."""
    return Call(Op.get(op), list(args), attrs or None)


def scalar(value: float, dtype: str) -> Constant:
    """A 0-d constant of ``dtype`` (decompositions must not mix float widths)."""
    return Constant(np.array(value, dtype=dtype))


def _float_type(ctx: NodeContext, i: int = 0) -> TensorType:
    ty = ctx.type_of(i)
    if ty.dtype not in FLOAT_DTYPES:
        ctx.fail(f"input {i} has dtype {ty.dtype}; irpass imports {ctx.node.op_type} for float "
                 "tensors only")
    return ty


def _ints(ctx: NodeContext, name: str, n: int, default: int) -> list[int]:
    """An INTS attribute of ``n`` values per spatial axis (``default`` each if absent)."""
    value = ctx.attr(name, None)
    if value is None:
        return [default] * n
    if len(value) != n:
        ctx.fail(f"attribute {name!r} has {len(value)} values for {n} spatial axes")
    return list(value)


def _spatial_pads(
    ctx: NodeContext,
    in_sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> list[int]:
    """ONNX ``pads`` (begins then ends) with ``auto_pad`` resolved for the static sizes."""
    n = len(in_sizes)
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        pads = ctx.attr("pads", None)
        if pads is None:
            return [0] * (2 * n)
        if len(pads) != 2 * n:
            ctx.fail(f"attribute 'pads' has {len(pads)} values for {n} spatial axes "
                     f"(expected {2 * n})")
        if any(p < 0 for p in pads):
            ctx.fail(f"negative pads {pads} are not supported")
        return list(pads)
    if auto_pad == "VALID":
        return [0] * (2 * n)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        ctx.fail(f"auto_pad {auto_pad!r} is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    begins, ends = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations, strict=True):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else big)
        ends.append(big if auto_pad == "SAME_UPPER" else small)
    return begins + ends


def _spatial_rank(ctx: NodeContext, rank: int, what: str) -> int:
    """The number of spatial axes of a rank-``rank`` NC... input; 1, 2 or 3, else an error."""
    n = rank - 2
    if n not in (1, 2, 3):
        ctx.fail(f"{what} of an input of rank {rank} ({n} spatial axes) is not supported; "
                 f"irpass has 1-D, 2-D and 3-D {what}")
    return n


# -- convolution -------------------------------------------------------------------------------


def _conv_geometry(
    ctx: NodeContext, what: str
) -> tuple[TensorType, TensorType, int, list[int], list[int], list[int]]:
    """Data and weight types, spatial rank, kernel, strides and dilations of a Conv or
    ConvTranspose node, checked against each other."""
    xt = _float_type(ctx, 0)
    wt = ctx.type_of(1)
    n = _spatial_rank(ctx, len(xt.shape), what)
    if len(wt.shape) != n + 2:
        ctx.fail(f"weight {wt} does not match a {n}-D {what} of {xt}")
    kernel = list(wt.shape[2:])
    if ctx.has_attr("kernel_shape") and list(ctx.attr("kernel_shape")) != kernel:
        ctx.fail(f"kernel_shape {ctx.attr('kernel_shape')} does not match the weight {wt}")
    return xt, wt, n, kernel, _ints(ctx, "strides", n, 1), _ints(ctx, "dilations", n, 1)


def _add_bias(ctx: NodeContext, y: Expr) -> Expr:
    b = ctx.input(2, optional=True)
    return y if b is None else call("nn.bias_add", y, b, axis=1)


@converter("Conv", since=1)
def _conv(ctx: NodeContext) -> Expr:
    xt, wt, n, kernel, strides, dilations = _conv_geometry(ctx, "convolution")
    pads = _spatial_pads(ctx, xt.shape[2:], kernel, strides, dilations)
    y = call(
        f"nn.conv{n}d",
        ctx.input(0),
        ctx.input(1),
        strides=tuple(strides),
        padding=tuple(pads),
        dilation=tuple(dilations),
        groups=ctx.attr("group", 1),
        channels=wt.shape[0],
        kernel_size=tuple(kernel),
    )
    return _add_bias(ctx, y)


@converter("ConvTranspose", since=1)
def _conv_transpose(ctx: NodeContext) -> Expr:
    xt, wt, n, kernel, strides, dilations = _conv_geometry(ctx, "transposed convolution")
    out_pad = _ints(ctx, "output_padding", n, 0)
    groups = ctx.attr("group", 1)
    in_sizes = xt.shape[2:]
    # The full (unpadded) output size along each axis; pads cut it down.
    full = [(i - 1) * s + (k - 1) * d + 1 + op
            for i, s, k, d, op in zip(in_sizes, strides, kernel, dilations, out_pad, strict=True)]
    output_shape = ctx.attr("output_shape", None)
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if output_shape is None:
            target = [i * s for i, s in zip(in_sizes, strides, strict=True)]
        else:
            target = list(output_shape[-n:])
        begins, ends = [], []
        for f, t in zip(full, target, strict=True):
            total = f - t
            # The odd pad goes to the end for SAME_UPPER, to the begin otherwise (as
            # ONNX's reference and onnxruntime do).
            small, big = total // 2, total - total // 2
            begins.append(small if auto_pad == "SAME_UPPER" else big)
            ends.append(big if auto_pad == "SAME_UPPER" else small)
        if any(b < 0 for b in begins):
            ctx.fail(f"output_shape {target} needs the full output {full} extended at the "
                     "start; not supported")
        # a negative trailing pad extends the output with zeros: more output_padding
        out_pad = [p - min(e, 0) for p, e in zip(out_pad, ends, strict=True)]
        pads = begins + [max(e, 0) for e in ends]
    elif auto_pad in ("NOTSET", "VALID"):
        pads = _ints(ctx, "pads", 2 * n, 0) if auto_pad == "NOTSET" else [0] * (2 * n)
    else:
        ctx.fail(f"auto_pad {auto_pad!r} is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    if any(p < 0 for p in pads):
        ctx.fail(f"negative pads {pads} are not supported")
    y = call(
        f"nn.conv{n}d_transpose",
        ctx.input(0),
        ctx.input(1),
        strides=tuple(strides),
        padding=tuple(pads),
        output_padding=tuple(out_pad),
        dilation=tuple(dilations),
        groups=groups,
        channels=wt.shape[1] * groups,
        kernel_size=tuple(kernel),
    )
    return _add_bias(ctx, y)


# -- dense products ----------------------------------------------------------------------------


@converter("Gemm", since=1)
def _gemm(ctx: NodeContext) -> Expr:
    at = _float_type(ctx, 0)
    bt = ctx.type_of(1)
    if len(at.shape) != 2 or len(bt.shape) != 2:
        ctx.fail(f"Gemm needs 2-D A and B, got {at} and {bt}")
    a, b = ctx.input(0), ctx.input(1)
    if ctx.attr("transA", 0):
        a = call("transpose", a, axes=[1, 0])
    if not ctx.attr("transB", 0):
        b = call("transpose", b, axes=[1, 0])
    y = call("nn.dense", a, b)
    alpha = float(ctx.attr("alpha", 1.0))
    if alpha != 1.0:
        y = call("multiply", y, scalar(alpha, at.dtype))
    c = ctx.input(2, optional=True)
    if c is None:
        return y
    beta = float(ctx.attr("beta", 1.0))
    if beta != 1.0:
        c = call("multiply", c, scalar(beta, at.dtype))
    yt = ctx.type_of_expr(y)
    ct = ctx.type_of(2)
    if len(ct.shape) == 1 and ct.shape[0] == yt.shape[1]:
        return call("nn.bias_add", y, c, axis=1)
    return call("add", y, c)


@converter("MatMul", since=1)
def _matmul(ctx: NodeContext) -> Expr:
    # core matmul has numpy.matmul semantics (1-D operands, batch broadcasting), as ONNX
    return call("matmul", ctx.input(0), ctx.input(1))


# -- normalization -----------------------------------------------------------------------------

#: ONNX ``stash_type`` values (a TensorProto element type) and the irpass dtypes they name.
_STASH_DTYPES = {1: "float32", 10: "float16", 11: "float64"}
_FLOAT_WIDTH = {"float16": 16, "float32": 32, "float64": 64}


def stash_dtype(ctx: NodeContext, dtype: str) -> tuple[str, str]:
    """``(stash, compute)`` dtypes of a normalization with a ``stash_type`` attribute on
    ``dtype`` data: the statistics' dtype (ONNX's ``U``) and the dtype stage one computes in,
    the wider of the stash and the data's dtype (a narrower one would only lose precision)."""
    code = int(ctx.attr("stash_type", 1))
    stash = _STASH_DTYPES.get(code)
    if stash is None:
        ctx.fail(f"stash_type {code} is not supported (supported: "
                 f"{', '.join(f'{k} ({v})' for k, v in _STASH_DTYPES.items())})")
    wide = stash if _FLOAT_WIDTH[stash] > _FLOAT_WIDTH.get(dtype, 0) else dtype
    return stash, wide


def _cast_to(x: Expr, have: str, want: str) -> Expr:
    return x if have == want else call("cast", x, dtype=want)


def _per_channel(ctx: NodeContext, i: int, dtype: str) -> Expr:
    """1-D input ``i`` (a per-channel parameter) in ``dtype`` (ONNX lets it differ)."""
    return _cast_to(ctx.input(i), ctx.type_of(i).dtype, dtype)


@converter("BatchNormalization", since=1)
def _batch_norm(ctx: NodeContext) -> Expr | list[Expr]:
    xt = _float_type(ctx, 0)
    if ctx.opset < 9 and ctx.attr("spatial", 1) == 0:
        ctx.fail("spatial=0 is not supported")
    if len(xt.shape) < 2:
        ctx.fail(f"input {xt} must have rank >= 2 (N, C, ...)")
    x = ctx.input(0)
    scale, bias, mean, var = (_per_channel(ctx, i, xt.dtype) for i in range(1, 5))
    eps = float(ctx.attr("epsilon", 1e-5))
    training = ctx.opset >= 14 and bool(ctx.attr("training_mode", 0))
    if not training:
        return TupleGetItem(call("nn.batch_norm", x, scale, bias, mean, var, axis=1,
                                 epsilon=eps), 0)
    # training_mode=1 (deterministic): normalize with the batch's statistics (over every
    # axis but the channel's, the variance biased) and return the updated running ones
    axes = [0] + list(range(2, len(xt.shape)))
    batch_mean = call("mean", x, axis=axes)
    centered = call("subtract", x, call("expand_dims", batch_mean, axis=1,
                                         num_newaxis=len(xt.shape) - 2))
    batch_var = call("mean", call("multiply", centered, centered), axis=axes)
    y = TupleGetItem(call("nn.batch_norm", x, scale, bias, batch_mean, batch_var, axis=1,
                          epsilon=eps), 0)
    momentum = float(ctx.attr("momentum", 0.9))
    keep, take = scalar(momentum, xt.dtype), scalar(1.0 - momentum, xt.dtype)

    def running(old: Expr, new: Expr, i: int) -> Expr:
        out = call("add", call("multiply", old, keep), call("multiply", new, take))
        return _cast_to(out, xt.dtype, ctx.type_of(i).dtype)

    # the running statistics are optional outputs: only those the node names
    return [y, running(mean, batch_mean, 3), running(var, batch_var, 4)][:ctx.num_outputs]


@converter("InstanceNormalization", since=1)
def _instance_norm(ctx: NodeContext) -> Expr:
    xt = _float_type(ctx, 0)
    if len(xt.shape) < 3:
        ctx.fail(f"input {xt} must have rank >= 3 (N, C, spatial...)")
    return call("nn.instance_norm", ctx.input(0), _per_channel(ctx, 1, xt.dtype),
                _per_channel(ctx, 2, xt.dtype), axis=1,
                epsilon=float(ctx.attr("epsilon", 1e-5)))


def _norm_axis(ctx: NodeContext, rank: int) -> int:
    axis = int(ctx.attr("axis", -1))
    if not -rank <= axis < rank:
        ctx.fail(f"axis {axis} is out of range for a {rank}-D input")
    return axis % rank


@converter("LayerNormalization", since=17)
def _layer_norm(ctx: NodeContext) -> Expr | list[Expr]:
    xt = _float_type(ctx, 0)
    rank = len(xt.shape)
    axis = _norm_axis(ctx, rank)
    eps = float(ctx.attr("epsilon", 1e-5))
    stash, wide = stash_dtype(ctx, xt.dtype)
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2, optional=True)
    st = ctx.type_of(1)
    bt = ctx.type_of(2) if bias is not None else None
    last = xt.shape[-1]
    stats_used = ctx.output_used(1) or ctx.output_used(2)
    if (axis == rank - 1 and st.shape == (last,) and (bt is None or bt.shape == (last,))
            and st.dtype == xt.dtype and (bt is None or bt.dtype == xt.dtype)
            and not stats_used):
        # the core op computes float16 in float32, as the default stash_type asks
        beta = bias if bias is not None else Constant(np.zeros((last,), dtype=xt.dtype))
        return call("nn.layer_norm", x, scale, beta, axis=-1, epsilon=eps,
                    center=bias is not None)
    axes = list(range(axis, rank))
    xw = _cast_to(x, xt.dtype, wide)
    mean = call("mean", xw, axis=axes, keepdims=True)
    centered = call("subtract", xw, mean)
    var = call("mean", call("multiply", centered, centered), axis=axes, keepdims=True)
    std = call("sqrt", call("add", var, scalar(eps, wide)))
    normed = _cast_to(call("divide", centered, std), wide, xt.dtype)
    y = call("multiply", normed, _cast_to(scale, st.dtype, xt.dtype))
    if bias is not None:
        y = call("add", y, _cast_to(bias, bt.dtype, xt.dtype))
    if not stats_used:
        return y
    inv_std = call("divide", scalar(1.0, wide), std)
    return [y, _cast_to(mean, wide, stash), _cast_to(inv_std, wide, stash)]


# -- dropout -----------------------------------------------------------------------------------


@converter("Dropout", since=1)
def _dropout(ctx: NodeContext) -> Expr:
    if ctx.opset >= 12:
        ratio = ctx.const_input(1, "ratio", optional=True)
        rate = 0.5 if ratio is None else float(ratio)
        training = ctx.const_input(2, "training_mode", optional=True)
        if training is not None and bool(training):
            ctx.fail("training_mode=True is not supported (irpass imports inference graphs)")
    else:
        # Before opset 7, is_test=0 meant training; exporters left it unset for inference
        # graphs too, so it is ignored: irpass has inference semantics only.
        rate = float(ctx.attr("ratio", 0.5))
    if ctx.output_used(1):
        ctx.fail(f"the mask output {ctx.node.output[1]!r} is used; irpass's dropout has none")
    return call("nn.dropout", ctx.input(0), rate=min(max(rate, 0.0), 0.999999))


# -- pooling -----------------------------------------------------------------------------------


def _pool_geometry(ctx: NodeContext, what: str) -> tuple[TensorType, int, dict[str, Any]]:
    """Input type, spatial rank and the core pooling attributes of a pooling node."""
    xt = ctx.type_of(0)
    n = _spatial_rank(ctx, len(xt.shape), what)
    kernel = ctx.attr("kernel_shape")
    if len(kernel) != n:
        ctx.fail(f"kernel_shape {kernel} does not match a {n}-D {what} of {xt}")
    strides = _ints(ctx, "strides", n, 1)
    dilations = _ints(ctx, "dilations", n, 1)
    pads = _spatial_pads(ctx, xt.shape[2:], kernel, strides, dilations)
    attrs: dict[str, Any] = dict(
        pool_size=tuple(kernel),
        strides=tuple(strides),
        dilation=tuple(dilations),
        padding=tuple(pads),
        ceil_mode=bool(ctx.attr("ceil_mode", 0)),
    )
    return xt, n, attrs


@converter("MaxPool", since=1)
def _max_pool(ctx: NodeContext) -> Expr:
    xt, n, attrs = _pool_geometry(ctx, "pooling")
    if xt.dtype not in ("float16", "float32", "float64", "int8", "uint8"):
        ctx.fail(f"input 0 has dtype {xt.dtype}; MaxPool takes float and 8-bit int tensors")
    if ctx.output_used(1):
        return _max_pool_with_indices(ctx, xt, attrs)
    return call(f"nn.max_pool{n}d", ctx.input(0), **attrs)


def _max_pool_with_indices(ctx: NodeContext, xt: TensorType, attrs: dict[str, Any]) -> list[Expr]:
    """MaxPool with its Indices output: every window's elements gathered by a constant
    table of flat positions (padding reads a -inf slot past the end), then max and argmax
    over the window; the argmax picks the window's flat index (row-major, or column-major
    over the spatial axes with storage_order=1), as onnxruntime numbers them."""
    if xt.dtype not in ("float16", "float32", "float64"):
        ctx.fail("the Indices output is supported for float inputs")
    shape = xt.shape
    n = len(shape) - 2
    spatial = shape[2:]
    out = out_sizes("MaxPool", spatial, attrs["pool_size"], attrs["strides"],
                    attrs["dilation"], attrs["padding"], attrs["ceil_mode"])
    total = math.prod(shape)
    plane = math.prod(spatial)
    grids = np.meshgrid(*(np.arange(o) for o in out), indexing="ij")
    taps = np.meshgrid(*(np.arange(k) for k in attrs["pool_size"]), indexing="ij")
    pos = [g.reshape(*g.shape, *([1] * n)) * attrs["strides"][i] - attrs["padding"][i]
           + t.reshape(*([1] * n), *t.shape) * attrs["dilation"][i]
           for i, (g, t) in enumerate(zip(grids, taps, strict=True))]
    inside = np.logical_and.reduce([(p >= 0) & (p < spatial[i]) for i, p in enumerate(pos)])
    clipped = [np.clip(p, 0, spatial[i] - 1) for i, p in enumerate(pos)]
    row = np.ravel_multi_index(clipped, spatial)
    col = np.ravel_multi_index(clipped[::-1], spatial[::-1])
    base = np.arange(shape[0] * shape[1]).reshape(shape[0], shape[1], *([1] * 2 * n)) * plane
    k = math.prod(attrs["pool_size"])
    lead = (shape[0], shape[1], *out, k)
    table = np.where(inside, row, -1)  # (out..., kernel...)
    reads = np.where(table >= 0, base + table, total).reshape(lead)
    numbers = (base + (col if ctx.attr("storage_order", 0) else row)).reshape(lead)
    lowest = Constant(np.full((1,), -np.inf, dtype=xt.dtype))
    flat = call("concatenate", Tuple([call("reshape", ctx.input(0), newshape=[-1]), lowest]),
                axis=0)
    windows = call("take", flat, Constant(reads.astype(np.int64)), axis=0)
    y = call("max", windows, axis=[-1])
    best = call("expand_dims", call("argmax", windows, axis=[-1]), axis=n + 2, num_newaxis=1)
    index = call("gather", Constant(numbers.astype(np.int64)), best, axis=n + 2)
    return [y, call("squeeze", index, axis=[n + 2])]


@converter("AveragePool", since=1)
def _avg_pool(ctx: NodeContext) -> Expr:
    _float_type(ctx, 0)
    _, n, attrs = _pool_geometry(ctx, "pooling")
    attrs["count_include_pad"] = bool(ctx.attr("count_include_pad", 0))
    return call(f"nn.avg_pool{n}d", ctx.input(0), **attrs)


@converter("LpPool", since=1)
def _lp_pool(ctx: NodeContext) -> Expr:
    # (sum over the window of |x|^p)^(1/p): the window sums are a depthwise convolution
    # with a kernel of ones (zero padding adds nothing); ceil mode's extra windows get
    # trailing zero padding of their own.
    xt = _float_type(ctx, 0)
    _, n, attrs = _pool_geometry(ctx, "Lp pooling")
    p = float(ctx.attr("p", 2))
    if p <= 0:
        ctx.fail(f"p must be > 0, got {p}")
    sizes = xt.shape[2:]
    pads = list(attrs["padding"])
    if attrs["ceil_mode"]:
        out = out_sizes("LpPool", sizes, attrs["pool_size"], attrs["strides"],
                        attrs["dilation"], pads, True)
        for i in range(n):
            need = (out[i] - 1) * attrs["strides"][i] \
                + (attrs["pool_size"][i] - 1) * attrs["dilation"][i] + 1
            pads[n + i] = max(pads[n + i], need - sizes[i] - pads[i])
    channels = xt.shape[1]
    ones = Constant(np.ones((channels, 1, *attrs["pool_size"]), dtype=xt.dtype))
    powered = _lp_power(call("abs", ctx.input(0)), p, xt.dtype)
    total = call(f"nn.conv{n}d", powered, ones, strides=attrs["strides"],
                 padding=tuple(pads), dilation=attrs["dilation"], groups=channels)
    return _lp_root(total, p, xt.dtype)


def _lp_power(x: Expr, p: float, dtype: str) -> Expr:
    if p == 1:
        return x
    if p == 2:
        return call("multiply", x, x)
    return call("power", x, scalar(p, dtype))


def _lp_root(x: Expr, p: float, dtype: str) -> Expr:
    if p == 1:
        return x
    if p == 2:
        return call("sqrt", x)
    return call("power", x, scalar(1.0 / p, dtype))


@converter("GlobalLpPool", since=1)
def _global_lp_pool(ctx: NodeContext) -> Expr:
    xt = _float_type(ctx, 0)
    if len(xt.shape) < 3:
        ctx.fail(f"input {xt} must have rank >= 3 (N, C, spatial...)")
    p = float(ctx.attr("p", 2))
    if p <= 0:
        ctx.fail(f"p must be > 0, got {p}")
    powered = _lp_power(call("abs", ctx.input(0)), p, xt.dtype)
    total = call("sum", powered, axis=list(range(2, len(xt.shape))), keepdims=True)
    return _lp_root(total, p, xt.dtype)


@converter("GlobalAveragePool", since=1)
def _global_avg_pool(ctx: NodeContext) -> Expr:
    xt = _float_type(ctx, 0)
    if len(xt.shape) == 4:
        return call("nn.global_avg_pool2d", ctx.input(0))
    if len(xt.shape) < 3:
        ctx.fail(f"input {xt} must have rank >= 3 (N, C, spatial...)")
    return call("mean", ctx.input(0), axis=list(range(2, len(xt.shape))), keepdims=True)


@converter("GlobalMaxPool", since=1)
def _global_max_pool(ctx: NodeContext) -> Expr:
    xt = _float_type(ctx, 0)
    if len(xt.shape) < 3:
        ctx.fail(f"input {xt} must have rank >= 3 (N, C, spatial...)")
    return call("max", ctx.input(0), axis=list(range(2, len(xt.shape))), keepdims=True)


@converter("LRN", since=1)
def _lrn(ctx: NodeContext) -> Expr:
    _float_type(ctx, 0)
    return call("nn.lrn", ctx.input(0), size=int(ctx.attr("size")), axis=1,
                bias=float(ctx.attr("bias", 1.0)), alpha=float(ctx.attr("alpha", 1e-4)),
                beta=float(ctx.attr("beta", 0.75)))


# -- softmax -----------------------------------------------------------------------------------


def _softmax(ctx: NodeContext, op: str) -> Expr:
    xt = ctx.type_of(0)
    rank = len(xt.shape)
    x = ctx.input(0)
    if ctx.opset >= 13:
        axis = ctx.attr("axis", -1)
        if not -max(rank, 1) <= axis < max(rank, 1):
            ctx.fail(f"axis {axis} is out of range for input {xt}")
        return call(op, x, axis=axis)
    # Before opset 13 the input is coerced to 2-D: (prod(shape[:axis]), prod(shape[axis:])).
    axis = ctx.attr("axis", 1)
    if not -rank <= axis < rank:
        ctx.fail(f"axis {axis} is out of range for input {xt}")
    axis = axis + rank if axis < 0 else axis
    if axis == rank - 1:
        return call(op, x, axis=-1)
    flat = (math.prod(xt.shape[:axis]), math.prod(xt.shape[axis:]))
    y = call(op, call("reshape", x, newshape=list(flat)), axis=1)
    return call("reshape", y, newshape=list(xt.shape))


@converter("Softmax", since=1)
def _softmax_op(ctx: NodeContext) -> Expr:
    return _softmax(ctx, "nn.softmax")


@converter("LogSoftmax", since=1)
def _log_softmax_op(ctx: NodeContext) -> Expr:
    return _softmax(ctx, "nn.log_softmax")


# -- activations -------------------------------------------------------------------------------


_UNARY: dict[str, str] = {"Relu": "nn.relu", "Sigmoid": "sigmoid", "Tanh": "tanh"}


@converter(*_UNARY, since=1)
def _unary(ctx: NodeContext) -> Expr:
    return call(_UNARY[ctx.node.op_type], ctx.input(0))


@converter("LeakyRelu", since=1)
def _leaky_relu(ctx: NodeContext) -> Expr:
    return call("nn.leaky_relu", ctx.input(0), alpha=float(ctx.attr("alpha", 0.01)))


@converter("PRelu", since=1)
def _prelu(ctx: NodeContext) -> Expr:
    xt = _float_type(ctx, 0)
    x, slope = ctx.input(0), ctx.input(1)
    st = ctx.type_of(1)
    rank = len(xt.shape)
    if ctx.opset < 7 and rank > 2 and st.shape == (xt.shape[1],):
        # PRelu-6 applies a 1-D slope per channel; opset 7 made it numpy broadcasting.
        slope = call("expand_dims", slope, axis=1, num_newaxis=rank - 2)
    zero = scalar(0.0, xt.dtype)
    return call("where", call("less", x, zero), call("multiply", x, slope), x)


def _pos_neg(x: Expr, dtype: str) -> tuple[Expr, Expr]:
    """max(x, 0) and min(x, 0): exp of the negative part never overflows."""
    zero = scalar(0.0, dtype)
    return call("maximum", x, zero), call("minimum", x, zero)


@converter("Elu", since=1)
def _elu(ctx: NodeContext) -> Expr:
    dtype = _float_type(ctx, 0).dtype
    pos, neg = _pos_neg(ctx.input(0), dtype)
    alpha = scalar(float(ctx.attr("alpha", 1.0)), dtype)
    expm1 = call("subtract", call("exp", neg), scalar(1.0, dtype))
    return call("add", pos, call("multiply", alpha, expm1))


@converter("Selu", since=1)
def _selu(ctx: NodeContext) -> Expr:
    dtype = _float_type(ctx, 0).dtype
    pos, neg = _pos_neg(ctx.input(0), dtype)
    alpha = scalar(float(ctx.attr("alpha", 1.67326319217681884765625)), dtype)
    gamma = scalar(float(ctx.attr("gamma", 1.05070102214813232421875)), dtype)
    expm1 = call("subtract", call("exp", neg), scalar(1.0, dtype))
    return call("multiply", gamma, call("add", pos, call("multiply", alpha, expm1)))


@converter("Softplus", since=1)
def _softplus(ctx: NodeContext) -> Expr:
    # log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)), which cannot overflow.
    dtype = _float_type(ctx, 0).dtype
    x = ctx.input(0)
    pos, _ = _pos_neg(x, dtype)
    minus_abs = call("negative", call("abs", x))
    return call("add", pos, call("log", call("add", scalar(1.0, dtype), call("exp", minus_abs))))


@converter("Gelu", since=20)
def _gelu(ctx: NodeContext) -> Expr:
    _float_type(ctx, 0)
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        ctx.fail(f"approximate={approximate!r} is not 'none' or 'tanh'")
    return call("nn.gelu", ctx.input(0), approximate=approximate)
