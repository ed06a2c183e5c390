"""Emitters of the ``nn.*`` ops. ONNX wants channels-first data and OIHW weights: other
layouts get ``Transpose`` nodes around the op (constant weights are transposed here instead,
so they cost no node).

The fused activations and ``nn.rms_norm`` are one ONNX node from the opset that has it
(``HardSwish`` 14, ``Gelu`` 20, ``RMSNormalization`` 23 when the axes are a trailing run)
and the fewest older nodes before: ``x * HardSigmoid(x)``, ``x * Sigmoid(x)`` (also from
opset 24: onnxruntime 1.32 runs ``Swish`` only in opset-24 models),
the tanh GELU as ``x * Sigmoid(2z)`` (``(1 + tanh(z)) / 2`` is ``sigmoid(2z)``: 6 nodes, not
9). The decompositions that sum or call ``Erf`` compute float16 and bfloat16 in float32 as
the core ops do (the squares of an RMS norm would overflow float16 first)."""

from __future__ import annotations

import math

import numpy as np
from irpass.ir.dims import dim_prod

from .builder import EmitContext, emitter
from .graph import Const, Node

__all__: list[str] = []


def _canonical(layout: str) -> str:
    """The channels-first form of a data layout (``NHWC`` -> ``NCHW``, ``NWC`` -> ``NCW``)."""
    return "NC" + "".join(c for c in "DHW" if c in layout)


def _to_nchw(ctx: EmitContext, name: str, layout: str) -> str:
    return ctx.transpose(name, [layout.index(c) for c in _canonical(layout)])


def _from_nchw(ctx: EmitContext, name: str, layout: str) -> str:
    return ctx.transpose(name, [_canonical(layout).index(c) for c in layout])


def _weight(ctx: EmitContext, i: int, layout: str, target: str, override: object = None) -> str:
    """Input ``i`` as a ``target``-layout weight; constants are transposed here."""
    perm = [layout.index(c) for c in target]
    if override is None and perm == sorted(perm):
        return ctx.input(i)  # a constant keeps its own initializer (one, however many users)
    data = override if override is not None else ctx.const(i)
    if data is not None:
        return ctx.constant(np.ascontiguousarray(np.transpose(data, perm)), hint="weight")
    return ctx.transpose(ctx.input(i), perm)


def _cast_inputs(ctx: EmitContext, names: list[str], out_dtype: str) -> list[str]:
    if not out_dtype or out_dtype == ctx.type_of(0).dtype:
        return names
    return [ctx.cast(n, out_dtype) for n in names]


def _kernel_shape(ctx: EmitContext, layout: str) -> list[int]:
    shape = ctx.type_of(1).shape
    return [shape[layout.index(c)] for c in "DHW" if c in layout]


def _as_8bit(ctx: EmitContext, v: object) -> tuple[str, str] | None:
    """An integer value as an int8/uint8 ONNX value (name, dtype) holding the same numbers:
    the source of a widening cast, or a constant that fits; else None."""
    if isinstance(v, Const):
        for dtype in ("uint8", "int8"):
            info = np.iinfo(dtype)
            if v.data.size and info.min <= v.data.min() and v.data.max() <= info.max:
                return ctx.constant(v.data.astype(dtype), hint="weight"), dtype
        return None
    if isinstance(v, Node) and v.op == "cast" and v.alias is None:
        src = v.inputs[0]
        if getattr(src, "type", None) is not None and src.type.dtype in ("int8", "uint8"):
            return ctx.name_of(src), src.type.dtype
    return None


def _shifted_8bit(ctx: EmitContext, i: int, per_channel: bool
                  ) -> tuple[str, tuple[str, bool] | None, str] | None:
    """Input ``i`` as (8-bit value, zero point or None, the value's dtype): ``cast(q) -
    zero_point`` (the integer ops' decomposition) or an 8-bit value by itself. The zero
    point is (name, whether it holds one number per output channel); one number, or one
    per output channel when ``per_channel``."""
    v = ctx.node.inputs[i]
    if isinstance(v, Node) and v.op == "subtract" and v.alias is None:
        base = _as_8bit(ctx, v.inputs[0])
        if base is None:
            return None
        zp = _zero_point(ctx, v.inputs[1], base[1], per_channel)
        return None if zp is None else (base[0], zp, base[1])
    base = _as_8bit(ctx, v)
    return None if base is None else (base[0], None, base[1])


def _zero_point(ctx: EmitContext, v: object, dtype: str,
                per_channel: bool) -> tuple[str, bool] | None:
    """A zero point subtracted from a widened ``dtype`` value, as (an ONNX ``dtype`` value,
    whether it holds one number per output channel): a constant, or a widened (and maybe
    reshaped) ``dtype`` input."""
    channels = ctx.type_of(1).shape[0]
    if isinstance(v, Const):
        info, zp = np.iinfo(dtype), v.data
        if zp.size == 0 or zp.min() < info.min or zp.max() > info.max:
            return None
        flat = zp.reshape(-1)
        if (flat == flat[0]).all():
            return ctx.constant(np.asarray(flat[0], dtype), hint="zero_point"), False
        if per_channel and zp.ndim >= 1 and zp.size == zp.shape[0] == channels:
            return ctx.constant(flat.astype(dtype), hint="zero_point"), True
        return None
    if isinstance(v, Node) and v.op == "reshape" and v.alias is None:
        v = v.inputs[0]
    if isinstance(v, Node) and v.op == "cast" and v.alias is None:
        src = v.inputs[0]
        ty = getattr(src, "type", None)
        if ty is not None and ty.dtype == dtype:
            if ty.shape in ((), (1,)):
                return ctx.name_of(src), False
            if per_channel and ty.shape == (channels,):
                return ctx.name_of(src), True
    return None


def _conv_integer(ctx: EmitContext) -> str:
    """An integer convolution as ConvInteger: ONNX's Conv takes floats only, and its
    integer form reads 8-bit data (widened by a cast, less a zero point, or constants)."""
    a = ctx.attrs
    dl, kl = a["data_layout"], a["kernel_layout"]
    x = _shifted_8bit(ctx, 0, False)
    w = _shifted_8bit(ctx, 1, a["groups"] == 1)
    if x is None or w is None or ctx.opset < 10 or ctx.out_type.dtype not in ("int32", "int64") \
            or ctx.node.extra.get("bias") is not None:
        raise ctx.fail(f"an integer convolution of {ctx.type_of(0).dtype} data has no ONNX "
                       "form unless its inputs are 8-bit values widened (ConvInteger, opset "
                       ">= 10)")
    xs = _to_nchw(ctx, x[0], dl)
    spatial = _canonical(dl)[2:]
    ws = ctx.transpose(w[0], [kl.index(c) for c in "OI" + spatial])
    kernel = _kernel_shape(ctx, kl)
    geometry = dict(kernel_shape=kernel, strides=a["strides"], pads=a["padding"],
                    dilations=a["dilation"], group=a["groups"])
    x_zp = [x[1][0]] if x[1] else []
    per_channel = w[1] is not None and w[1][1]
    # onnxruntime's ConvInteger takes one weight zero point: with one per output channel,
    # conv(x, w - z) is conv(x, w) - z * (the window sums of x), those a ConvInteger too
    w_zp = [w[1][0]] if w[1] and not per_channel else []
    y = ctx.emit("ConvInteger", [xs, ws, *(x_zp or ([""] if w_zp else [])), *w_zp], **geometry)
    if per_channel:
        inputs = ctx.type_of(1).shape[kl.index("I")]
        ones = ctx.constant(np.ones((1, inputs, *kernel), w[2]), hint="ones")
        sums = ctx.emit("ConvInteger", [xs, ones, *x_zp], **geometry)
        zp = ctx.reshape(ctx.cast(w[1][0], "int32"), [-1] + [1] * len(spatial))
        y = ctx.emit("Sub", [y, ctx.emit("Mul", [zp, sums])])
    if ctx.out_type.dtype != "int32":
        y = ctx.cast(y, ctx.out_type.dtype)
    return _from_nchw(ctx, y, a["out_layout"] or dl)


@emitter("nn.conv1d", "nn.conv2d", "nn.conv3d")
def _conv(ctx: EmitContext) -> str:
    a = ctx.attrs
    if ctx.out_type.dtype not in ("float16", "float32", "float64", "bfloat16"):
        return _conv_integer(ctx)
    dl, kl = a["data_layout"], a["kernel_layout"]
    x = _to_nchw(ctx, ctx.input(0), dl)
    w = _weight(ctx, 1, kl, "OI" + _canonical(dl)[2:], ctx.node.extra.get("weight"))
    ins = _cast_inputs(ctx, [x, w], a["out_dtype"])
    bias = ctx.node.extra.get("bias")
    if bias is not None:
        ins.append(ctx.constant(bias, hint="bias"))
    y = ctx.emit("Conv", ins, kernel_shape=_kernel_shape(ctx, kl), strides=a["strides"],
                 pads=a["padding"], dilations=a["dilation"], group=a["groups"])
    return _from_nchw(ctx, y, a["out_layout"] or dl)


@emitter("nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose")
def _conv_transpose(ctx: EmitContext) -> str:
    a = ctx.attrs
    dl, kl = a["data_layout"], a["kernel_layout"]
    x = _to_nchw(ctx, ctx.input(0), dl)
    w = _weight(ctx, 1, kl, "IO" + _canonical(dl)[2:])
    ins = _cast_inputs(ctx, [x, w], a["out_dtype"])
    attrs: dict = {"kernel_shape": _kernel_shape(ctx, kl), "strides": a["strides"],
                   "dilations": a["dilation"], "group": a["groups"]}
    if all(e < s for e, s in zip(a["output_padding"], a["strides"], strict=True)):
        attrs.update(pads=a["padding"], output_padding=a["output_padding"])
    else:
        # onnxruntime wants output_padding < stride; output_shape says the same with
        # the pads put back at the start (begin pads then derived as the end's rest)
        ndim = len(a["strides"])
        out = ctx.out_type.shape
        layout = a["out_layout"] or dl
        sizes = [out[layout.index(c)] for c in _canonical(dl)[2:]]
        if any(a["padding"][ndim + i] for i in range(ndim)) or any(a["padding"][:ndim]):
            raise ctx.fail(f"output_padding {a['output_padding']} >= strides {a['strides']} "
                           "with padding has no ONNX ConvTranspose form")
        attrs.update(output_shape=sizes)
    y = ctx.emit("ConvTranspose", ins, **attrs)
    return _from_nchw(ctx, y, a["out_layout"] or dl)


def _pool_form(ctx: EmitContext, sizes: list[int], out: list[int]) -> tuple[list[int], bool]:
    """Pads and ceil_mode of an ONNX pooling node with the output sizes ``out``.

    A ceil-mode output equal to the floor-mode one needs no ceil_mode (ONNX's shape
    inference would not drop a last window that starts in the padding); where it
    differs along some axes and not others, or before opset 10, trailing pads extend
    the input far enough instead."""
    a = ctx.attrs
    pads = list(a["padding"])
    if not a["ceil_mode"]:
        return pads, False
    n = len(sizes)
    geometry = list(zip(a["pool_size"], a["strides"], a["dilation"], strict=True))
    floor = [(sizes[i] + pads[i] + pads[n + i] - (k - 1) * d - 1) // s + 1
             for i, (k, s, d) in enumerate(geometry)]
    if floor == out:
        return pads, False
    ceil = [-(-(sizes[i] + pads[i] + pads[n + i] - (k - 1) * d - 1) // s) + 1
            for i, (k, s, d) in enumerate(geometry)]
    if ceil == out and ctx.opset >= 10:
        return pads, True
    if a.get("count_include_pad"):
        raise ctx.fail("average pooling with ceil_mode and count_include_pad needs opset >= 10 "
                       "and a last window that does not start in the padding")
    for i, (k, s, d) in enumerate(geometry):
        pads[n + i] = max(pads[n + i], (out[i] - 1) * s + (k - 1) * d + 1 - sizes[i] - pads[i])
    return pads, False


@emitter("nn.max_pool1d", "nn.max_pool2d", "nn.max_pool3d",
         "nn.avg_pool1d", "nn.avg_pool2d", "nn.avg_pool3d")
def _pool(ctx: EmitContext) -> str:
    a = ctx.attrs
    layout = a["layout"]
    spatial = _canonical(layout)[2:]
    x = _to_nchw(ctx, ctx.input(0), layout)
    is_max = ctx.node.op.startswith("nn.max_pool")
    in_shape, out_shape = ctx.type_of(0).shape, ctx.out_type.shape
    out_layout = a["out_layout"] or layout
    sizes = [in_shape[layout.index(c)] for c in spatial]
    out = [out_shape[out_layout.index(c)] for c in spatial]
    pads, ceil = _pool_form(ctx, sizes, out)
    attrs: dict = {"kernel_shape": a["pool_size"], "strides": a["strides"], "pads": pads}
    if any(d != 1 for d in a["dilation"]):
        if ctx.opset < (10 if is_max else 19):
            raise ctx.fail(f"pooling with dilation {a['dilation']} needs opset "
                           f">= {10 if is_max else 19}")
        attrs["dilations"] = a["dilation"]
    if ceil:
        attrs["ceil_mode"] = 1
    if is_max:
        y = ctx.emit("MaxPool", [x], **attrs)
    else:
        y = ctx.emit("AveragePool", [x], count_include_pad=int(a["count_include_pad"]), **attrs)
    return _from_nchw(ctx, y, out_layout)


@emitter("nn.global_avg_pool2d")
def _global_avg_pool(ctx: EmitContext) -> str:
    layout = ctx.attrs["layout"]
    y = ctx.emit("GlobalAveragePool", [_to_nchw(ctx, ctx.input(0), layout)])
    return _from_nchw(ctx, y, ctx.attrs["out_layout"] or layout)


def _along(ctx: EmitContext, i: int, ndim: int, axis: int) -> str:
    """1-D input ``i`` shaped to broadcast along ``axis`` of an ``ndim``-D tensor."""
    shape = [1] * (ndim - axis)
    data = ctx.const(i)
    shape[0] = ctx.type_of(i).shape[0]
    if axis == ndim - 1:
        return ctx.input(i)
    if data is not None:
        return ctx.constant(np.reshape(data, shape), hint="bias")
    return ctx.reshape(ctx.input(i), shape)


@emitter("nn.bias_add")
def _bias_add(ctx: EmitContext) -> str:
    ndim = len(ctx.type_of(0).shape)
    axis = ctx.attrs["axis"] % ndim
    return ctx.emit("Add", [ctx.input(0), _along(ctx, 1, ndim, axis)])


@emitter("nn.dense")
def _dense(ctx: EmitContext) -> str:
    shape = ctx.type_of(0).shape
    out_dtype = ctx.attrs["out_dtype"]
    bias = ctx.node.extra.get("gemm_c")
    if len(ctx.node.inputs) == 3:  # a non-constant C attached by the Gemm peephole
        bias = ctx.node.inputs[2]
    if len(shape) == 2 and (bias is not None or ctx.opset >= 11 or ctx.const(1) is None):
        ins = _cast_inputs(ctx, [ctx.input(0), ctx.input(1)], out_dtype)
        if bias is not None:
            ins.append(ctx.constant(bias, hint="bias") if isinstance(bias, np.ndarray)
                       else ctx.name_of(bias))
        elif ctx.opset < 11:
            units = ctx.type_of(1).shape[0]
            ins.append(ctx.constant(np.zeros((units,), ctx.out_type.dtype), hint="bias"))
        return ctx.emit("Gemm", ins, transB=1)
    w = _weight(ctx, 1, "OI", "IO")
    y = ctx.emit("MatMul", _cast_inputs(ctx, [ctx.input(0), w], out_dtype))
    if bias is not None:
        b = ctx.constant(bias, hint="bias") if isinstance(bias, np.ndarray) \
            else ctx.name_of(bias)
        y = ctx.emit("Add", [y, b])
    return y


@emitter("nn.batch_matmul")
def _batch_matmul(ctx: EmitContext) -> str:
    a = ctx.attrs
    x = _weight(ctx, 0, "BKM", "BMK") if a["transpose_a"] else ctx.input(0)
    y = _weight(ctx, 1, "BNK", "BKN") if a["transpose_b"] else ctx.input(1)
    return ctx.emit("MatMul", _cast_inputs(ctx, [x, y], a["out_dtype"]))


@emitter("matmul")
def _matmul(ctx: EmitContext) -> str:
    return ctx.emit("MatMul", [ctx.input(0), ctx.input(1)])


@emitter("nn.dropout")
def _dropout(ctx: EmitContext) -> str:
    return ctx.input(0)  # inference: the identity, no node


def _channel_first(ctx: EmitContext, name: str, ndim: int, axis: int) -> tuple[str, list[int]]:
    """``name`` with ``axis`` moved to position 1; the permutation that undoes it."""
    if axis == 1:
        return name, list(range(ndim))
    rest = [d for d in range(ndim) if d != axis]
    perm = [rest[0], axis] + rest[1:]
    inverse = [perm.index(d) for d in range(ndim)]
    return ctx.transpose(name, perm), inverse


@emitter("nn.batch_norm")
def _batch_norm(ctx: EmitContext) -> list[str]:
    a = ctx.attrs
    shape = ctx.type_of(0).shape
    ndim = len(shape)
    axis = a["axis"] % ndim
    channels = shape[axis]
    dtype = ctx.type_of(0).dtype
    scale = ctx.input(1) if a["scale"] else ctx.constant(np.ones(channels, dtype))
    shift = ctx.input(2) if a["center"] else ctx.constant(np.zeros(channels, dtype))
    x = ctx.input(0)
    if ndim == 1:
        x = ctx.reshape(x, (1, channels))
        y = ctx.emit("BatchNormalization", [x, scale, shift, ctx.input(3), ctx.input(4)],
                     epsilon=a["epsilon"])
        y = ctx.reshape(y, shape)
    else:
        x, undo = _channel_first(ctx, x, ndim, axis)
        y = ctx.emit("BatchNormalization", [x, scale, shift, ctx.input(3), ctx.input(4)],
                     epsilon=a["epsilon"])
        y = ctx.transpose(y, undo)
    # fields 1 and 2 are the moving statistics, unchanged
    return [y, ctx.input(3), ctx.input(4)]


@emitter("nn.layer_norm")
def _layer_norm(ctx: EmitContext) -> str:
    a = ctx.attrs
    shape = ctx.type_of(0).shape
    ndim = len(shape)
    axis = a["axis"] % ndim
    dtype = ctx.type_of(0).dtype
    x = ctx.input(0)
    if ctx.opset >= 17 and axis == ndim - 1:
        scale = ctx.input(1) if a["scale"] else ctx.constant(np.ones(shape[axis], dtype))
        ins = [x, scale] + ([ctx.input(2)] if a["center"] else [])
        return ctx.emit("LayerNormalization", ins, axis=-1, epsilon=a["epsilon"])
    axes = [axis]
    if ctx.opset >= 18:
        mean = ctx.emit("ReduceMean", [x, ctx.int64s(axes, "axes")], keepdims=1)
    else:
        mean = ctx.emit("ReduceMean", [x], axes=axes, keepdims=1)
    d = ctx.emit("Sub", [x, mean])
    sq = ctx.emit("Mul", [d, d])
    if ctx.opset >= 18:
        var = ctx.emit("ReduceMean", [sq, ctx.int64s(axes, "axes")], keepdims=1)
    else:
        var = ctx.emit("ReduceMean", [sq], axes=axes, keepdims=1)
    eps = ctx.constant(np.array(a["epsilon"], dtype))
    y = ctx.emit("Div", [d, ctx.emit("Sqrt", [ctx.emit("Add", [var, eps])])])
    if a["scale"]:
        y = ctx.emit("Mul", [y, _along(ctx, 1, ndim, axis)])
    if a["center"]:
        y = ctx.emit("Add", [y, _along(ctx, 2, ndim, axis)])
    return y


@emitter("nn.instance_norm", "nn.group_norm")
def _grouped_norm(ctx: EmitContext) -> str:
    # ONNX's InstanceNormalization normalizes each (batch, channel) slice: group norm is that
    # op on the data reshaped to (batch, groups, rest) with unit scale and zero bias, the
    # per-channel scale and bias applied after (valid at every export opset)
    a = ctx.attrs
    shape = ctx.type_of(0).shape
    ndim = len(shape)
    axis = a["axis"] % ndim
    channels = shape[axis]
    dtype = ctx.type_of(0).dtype
    groups = a["num_groups"] if ctx.node.op == "nn.group_norm" else channels
    x, undo = _channel_first(ctx, ctx.input(0), ndim, axis)
    moved = [shape[d] for d in [0, axis] + [d for d in range(1, ndim) if d != axis]]
    if groups == channels and ndim >= 3:
        scale = ctx.input(1) if a["scale"] else ctx.constant(np.ones(channels, dtype))
        shift = ctx.input(2) if a["center"] else ctx.constant(np.zeros(channels, dtype))
        y = ctx.emit("InstanceNormalization", [x, scale, shift], epsilon=a["epsilon"])
        return ctx.transpose(y, undo)
    rest = dim_prod(moved[2:]) * (channels // groups)
    y = ctx.emit("InstanceNormalization",
                 [ctx.reshape(x, (moved[0], groups, rest)),
                  ctx.constant(np.ones(groups, dtype)), ctx.constant(np.zeros(groups, dtype))],
                 epsilon=a["epsilon"])
    y = ctx.reshape(y, moved)
    if a["scale"]:
        y = ctx.emit("Mul", [y, _along(ctx, 1, ndim, 1)])
    if a["center"]:
        y = ctx.emit("Add", [y, _along(ctx, 2, ndim, 1)])
    return ctx.transpose(y, undo)


@emitter("nn.softmax", "nn.log_softmax")
def _softmax(ctx: EmitContext) -> str:
    op = "Softmax" if ctx.node.op == "nn.softmax" else "LogSoftmax"
    ndim = len(ctx.type_of(0).shape)
    if "coerced_axis" in ctx.node.extra:  # the 2-D coercion of opset < 13 is what is meant
        return ctx.emit(op, [ctx.input(0)], axis=ctx.node.extra["coerced_axis"])
    axis = ctx.node.extra.get("axis", ctx.attrs["axis"]) % ndim
    if ctx.opset >= 13 or axis == ndim - 1:
        return ctx.emit(op, [ctx.input(0)], axis=axis)
    # before opset 13 the op flattens to 2-D at axis: move the axis last first
    perm = [d for d in range(ndim) if d != axis] + [axis]
    y = ctx.emit(op, [ctx.transpose(ctx.input(0), perm)], axis=ndim - 1)
    return ctx.transpose(y, [perm.index(d) for d in range(ndim)])


@emitter("nn.pad")
def _pad(ctx: EmitContext) -> str:
    a = ctx.attrs
    width = a["pad_width"]
    pads = [b for b, _ in width] + [e for _, e in width]
    if not any(pads):
        return ctx.input(0)
    mode = a["pad_mode"]
    dtype = ctx.type_of(0).dtype
    if ctx.opset < 11:
        return ctx.emit("Pad", [ctx.input(0)], pads=pads, mode=mode,
                        value=float(a["pad_value"]) if mode == "constant" else None)
    ins = [ctx.input(0), ctx.int64s(pads, "pads")]
    if mode == "constant" and a["pad_value"] != 0:
        with np.errstate(all="ignore"):
            ins.append(ctx.constant(np.array(a["pad_value"]).astype(dtype)))
    return ctx.emit("Pad", ins, mode=mode)


@emitter("nn.leaky_relu")
def _leaky_relu(ctx: EmitContext) -> str:
    return ctx.emit("LeakyRelu", [ctx.input(0)], alpha=float(ctx.attrs["alpha"]))


@emitter("nn.lrn")
def _lrn(ctx: EmitContext) -> str:
    a = ctx.attrs
    ndim = len(ctx.type_of(0).shape)
    x, undo = _channel_first(ctx, ctx.input(0), ndim, a["axis"] % ndim)
    y = ctx.emit("LRN", [x], size=int(a["size"]), alpha=float(a["alpha"]),
                 beta=float(a["beta"]), bias=float(a["bias"]))
    return ctx.transpose(y, undo)


# -- fused activations and RMS normalization ----------------------------------------------------

_WIDEN = {"float16": "float32", "bfloat16": "float32"}


def _reduce_mean(ctx: EmitContext, x: str, axes: list[int]) -> str:
    if ctx.opset >= 18:
        return ctx.emit("ReduceMean", [x, ctx.int64s(axes, "axes")], keepdims=1)
    return ctx.emit("ReduceMean", [x], axes=axes, keepdims=1)


@emitter("nn.gelu")
def _gelu(ctx: EmitContext) -> str:
    approximate = ctx.attrs["approximate"]
    x = ctx.input(0)
    if ctx.opset >= 20:
        return ctx.emit("Gelu", [x], approximate=None if approximate == "none" else approximate)
    dtype = ctx.type_of(0).dtype
    work = _WIDEN.get(dtype, dtype)
    if work != dtype:
        x = ctx.cast(x, work)

    def c(value: float) -> str:
        return ctx.constant(np.array(value, work))

    if approximate == "tanh":
        # 0.5 * x * (1 + tanh(k * (x + 0.044715 x^3))) = x * sigmoid(x * (2k + 2k * 0.044715 x^2))
        a = 2 * math.sqrt(2 / math.pi)
        poly = ctx.emit("Add", [ctx.emit("Mul", [ctx.emit("Mul", [x, x]), c(a * 0.044715)]),
                                c(a)])
        y = ctx.emit("Mul", [x, ctx.emit("Sigmoid", [ctx.emit("Mul", [x, poly])])])
    else:  # x/2 + x/2 * erf(x / sqrt(2))
        half = ctx.emit("Mul", [x, c(0.5)])
        erf = ctx.emit("Erf", [ctx.emit("Mul", [x, c(1 / math.sqrt(2))])])
        y = ctx.emit("Add", [half, ctx.emit("Mul", [half, erf])])
    return y if work == dtype else ctx.cast(y, dtype)


@emitter("nn.silu")
def _silu(ctx: EmitContext) -> str:
    # Always x * Sigmoid(x): Swish (opset 24) would save a node, but onnxruntime 1.32 runs
    # it only in models of opset 24 exactly (no kernel at 25 or 26)
    x = ctx.input(0)
    return ctx.emit("Mul", [x, ctx.emit("Sigmoid", [x])])


@emitter("nn.hard_swish")
def _hard_swish(ctx: EmitContext) -> str:
    x = ctx.input(0)
    if ctx.opset >= 14:
        return ctx.emit("HardSwish", [x])
    return ctx.emit("Mul", [x, ctx.emit("HardSigmoid", [x], alpha=1 / 6, beta=0.5)])


@emitter("nn.rms_norm")
def _rms_norm(ctx: EmitContext) -> str:
    shape = ctx.type_of(0).shape
    ndim = len(shape)
    dtype = ctx.type_of(0).dtype
    given = [a % ndim for a in ctx.attrs["axes"]]
    axes = sorted(given)
    eps = ctx.attrs["epsilon"]
    trailing = axes == list(range(ndim - len(axes), ndim))
    work = dtype if ctx.opset >= 23 and trailing else _WIDEN.get(dtype, dtype)
    # the weight's dims follow the axes as given: ONNX wants them in data order, broadcasting
    # along the other axes (a constant is rearranged here, costing no node)
    order = [given.index(a) for a in axes]
    wshape = [shape[a] if a in axes else 1 for a in range(axes[0], ndim)]
    wdata = ctx.const(1)
    if wdata is None:
        w = ctx.transpose(ctx.input(1), order)
        if not trailing:
            w = ctx.reshape(w, wshape)
        if work != dtype:
            w = ctx.cast(w, work)
    elif order == sorted(order) and trailing and work == dtype:
        w = ctx.input(1)
    else:
        w = ctx.constant(np.reshape(np.transpose(wdata, order), wshape).astype(work),
                         hint="weight")
    if ctx.opset >= 23 and trailing:
        return ctx.emit("RMSNormalization", [ctx.input(0), w], axis=axes[0], epsilon=eps,
                        stash_type=11 if dtype == "float64" else None)
    x = ctx.input(0) if work == dtype else ctx.cast(ctx.input(0), work)
    ms = _reduce_mean(ctx, ctx.emit("Mul", [x, x]), axes)
    rms = ctx.emit("Sqrt", [ctx.emit("Add", [ms, ctx.constant(np.array(eps, work))])])
    y = ctx.emit("Mul", [ctx.emit("Div", [x, rms]), w])
    return y if work == dtype else ctx.cast(y, dtype)
