"""Small networks with real shapes, for examples, tests and benchmarks.

Each builder returns an :class:`~irpass.ir.IRModule` whose ``main`` takes the
network input ``data`` and holds its weights as constants drawn from a seeded
random generator, so the same arguments always give the same module.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import op
from ..ir import Expr, Function, IRModule, TensorType, var
from ..ir.nodes import const

__all__ = ["mlp", "resnet", "mobilenet", "transformer_encoder", "MODELS", "input_type"]


class _Weights:
    """Draws named weights from one seeded generator, in call order."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def normal(self, *shape: int, scale: float | None = None, fan_in: int | None = None) -> Expr:
        """Normal weights of standard deviation ``scale``, or He's ``sqrt(2 / fan_in)``.

        ``fan_in`` defaults to the product of all but the first dimension,
        right for (out, in, ...) layouts such as OI and OIHW only; pass it
        for any other layout (HWIO's is kh * kw * in).
        """
        if fan_in is None:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        std = scale if scale is not None else float(np.sqrt(2.0 / max(fan_in, 1)))
        return const(self.rng.normal(0.0, std, size=shape).astype(np.float32))

    def uniform(self, *shape: int, low: float, high: float) -> Expr:
        """Weights drawn uniformly from ``[low, high)``."""
        return const(self.rng.uniform(low, high, size=shape).astype(np.float32))


def _conv_bn_relu(
    x: Expr,
    w: _Weights,
    in_ch: int,
    out_ch: int,
    kernel: int,
    *,
    strides: int = 1,
    groups: int = 1,
    relu: bool = True,
    layout: str = "NCHW",
) -> Expr:
    fan_in = in_ch // groups * kernel * kernel
    if layout == "NCHW":
        weight = w.normal(out_ch, in_ch // groups, kernel, kernel, fan_in=fan_in)
        kernel_layout, axis = "OIHW", 1
    else:
        weight = w.normal(kernel, kernel, in_ch // groups, out_ch, fan_in=fan_in)
        kernel_layout, axis = "HWIO", 3
    pad = kernel // 2
    y = op.nn.conv2d(
        x,
        weight,
        strides=(strides, strides),
        padding=(pad, pad),
        groups=groups,
        channels=out_ch,
        kernel_size=(kernel, kernel),
        data_layout=layout,
        kernel_layout=kernel_layout,
    )
    bn = op.nn.batch_norm(
        y,
        w.uniform(out_ch, low=0.5, high=1.5),  # gamma
        w.normal(out_ch, scale=0.1),  # beta
        w.normal(out_ch, scale=0.1),  # moving mean
        w.uniform(out_ch, low=0.5, high=1.5),  # moving var
        axis=axis,
    )
    y = bn[0]
    return op.nn.relu(y) if relu else y


def mlp(
    batch: int = 1,
    in_features: int = 64,
    hidden: tuple[int, ...] = (128, 64),
    num_classes: int = 10,
    seed: int = 0,
) -> IRModule:
    """A multi-layer perceptron: dense, bias_add and relu per hidden layer, then dense, softmax."""
    w = _Weights(seed)
    data = var("data", shape=(batch, in_features))
    x: Expr = data
    width = in_features
    for units in (*hidden, num_classes):
        x = op.nn.dense(x, w.normal(units, width), units=units)
        x = op.nn.bias_add(x, w.normal(units, scale=0.1))
        if units != num_classes:
            x = op.nn.relu(x)
        width = units
    return IRModule.from_expr(Function([data], op.nn.softmax(x, axis=-1)))


def resnet(
    batch: int = 1,
    image_size: int = 32,
    channels: int = 16,
    num_blocks: int = 2,
    num_classes: int = 10,
    seed: int = 0,
    layout: str = "NCHW",
) -> IRModule:
    """A ResNet-style CNN: a conv-bn-relu stem and max pooling, ``num_blocks`` residual
    blocks (conv-bn-relu, conv-bn, add, relu), global average pooling, dropout, dense.
    """
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"resnet: layout must be 'NCHW' or 'NHWC', got {layout!r}")
    w = _Weights(seed)
    shape = (
        (batch, 3, image_size, image_size)
        if layout == "NCHW"
        else (batch, image_size, image_size, 3)
    )
    data = var("data", shape=shape)
    x = _conv_bn_relu(data, w, 3, channels, 3, layout=layout)
    x = op.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2), layout=layout)
    for _ in range(num_blocks):
        y = _conv_bn_relu(x, w, channels, channels, 3, layout=layout)
        y = _conv_bn_relu(y, w, channels, channels, 3, relu=False, layout=layout)
        x = op.nn.relu(op.add(x, y))
    x = op.nn.global_avg_pool2d(x, layout=layout)
    x = op.reshape(x, newshape=(batch, channels))
    x = op.nn.dropout(x, rate=0.25)
    x = op.nn.dense(x, w.normal(num_classes, channels), units=num_classes)
    x = op.nn.bias_add(x, w.normal(num_classes, scale=0.1))
    return IRModule.from_expr(Function([data], op.nn.softmax(x)))


def mobilenet(
    batch: int = 1,
    image_size: int = 32,
    channels: tuple[int, ...] = (16, 32, 64),
    num_classes: int = 10,
    seed: int = 0,
) -> IRModule:
    """A MobileNet-style CNN: a strided stem, then per stage a depthwise 3x3 conv
    (groups == channels) and a pointwise 1x1 conv, each with batch_norm and relu;
    average pooling and a dense classifier.
    """
    w = _Weights(seed)
    data = var("data", shape=(batch, 3, image_size, image_size))
    x = _conv_bn_relu(data, w, 3, channels[0], 3, strides=2)
    width = channels[0]
    for i, out_ch in enumerate(channels[1:]):
        stride = 2 if i % 2 == 0 else 1
        x = _conv_bn_relu(x, w, width, width, 3, strides=stride, groups=width)
        x = _conv_bn_relu(x, w, width, out_ch, 1)
        width = out_ch
    x = op.nn.avg_pool2d(x, pool_size=(2, 2), strides=(2, 2))
    x = op.nn.global_avg_pool2d(x)
    x = op.reshape(x, newshape=(batch, -1))
    x = op.nn.dense(x, w.normal(num_classes, width), units=num_classes)
    return IRModule.from_expr(Function([data], op.nn.softmax(x)))


def transformer_encoder(
    batch: int = 1,
    seq_len: int = 8,
    d_model: int = 32,
    num_heads: int = 4,
    d_ff: int = 64,
    seed: int = 0,
) -> IRModule:
    """One post-norm transformer encoder layer: multi-head self-attention (dense
    projections, reshape/transpose into heads, batch_matmul, softmax), residual
    add and layer_norm, then a relu feed-forward block with its own residual and
    layer_norm.
    """
    if d_model % num_heads:
        raise ValueError(
            f"transformer_encoder: d_model {d_model} is not divisible by {num_heads} heads"
        )
    w = _Weights(seed)
    head = d_model // num_heads
    data = var("data", shape=(batch, seq_len, d_model))

    def project(x: Expr, units: int, width: int) -> Expr:
        y = op.nn.dense(x, w.normal(units, width), units=units)
        return op.add(y, w.normal(units, scale=0.1))

    def split_heads(x: Expr) -> Expr:
        x = op.reshape(x, newshape=(batch, seq_len, num_heads, head))
        x = op.transpose(x, axes=(0, 2, 1, 3))
        return op.reshape(x, newshape=(batch * num_heads, seq_len, head))

    q = split_heads(project(data, d_model, d_model))
    k = split_heads(project(data, d_model, d_model))
    v = split_heads(project(data, d_model, d_model))
    scores = op.nn.batch_matmul(q, k)  # q @ k^T (Relay's default transpose_b=True)
    scores = op.multiply(scores, const(np.float32(1.0 / np.sqrt(head))))
    attn = op.nn.batch_matmul(op.nn.softmax(scores, axis=-1), v, transpose_b=False)
    attn = op.reshape(attn, newshape=(batch, num_heads, seq_len, head))
    attn = op.transpose(attn, axes=(0, 2, 1, 3))
    attn = op.reshape(attn, newshape=(batch, seq_len, d_model))
    x = op.add(data, project(attn, d_model, d_model))
    x = op.nn.layer_norm(x, w.uniform(d_model, low=0.5, high=1.5), w.normal(d_model, scale=0.1))
    ff = op.nn.relu(project(x, d_ff, d_model))
    x = op.add(x, project(ff, d_model, d_ff))
    x = op.nn.layer_norm(x, w.uniform(d_model, low=0.5, high=1.5), w.normal(d_model, scale=0.1))
    return IRModule.from_expr(Function([data], x))


#: Every example network by name, built with its default (small) sizes.
MODELS: dict[str, Callable[..., IRModule]] = {
    "mlp": mlp,
    "resnet": resnet,
    "mobilenet": mobilenet,
    "transformer": transformer_encoder,
}


def input_type(mod: IRModule) -> TensorType:
    """The tensor type of the (single) input of ``mod['main']``."""
    (param,) = mod["main"].params
    assert isinstance(param.type_annotation, TensorType)
    return param.type_annotation
