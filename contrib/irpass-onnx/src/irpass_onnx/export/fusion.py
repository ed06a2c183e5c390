"""Peepholes on the lowered graph that save ONNX nodes.

- ``nn.conv2d`` (no dtype change) followed by a chain of single-use per-channel constant ops
  -- ``nn.bias_add`` on the channel axis, ``add``/``subtract`` of a constant broadcasting
  along it only ((1, C, 1, 1) in NCHW, (C,) in NHWC), ``multiply`` by one (constant
  weights), inference ``nn.batch_norm`` with constant parameters -- becomes one ``Conv``:
  adds are summed into its ``B``, scales folded into its ``W``. After ``-O3`` every
  batch-norm shift is such an add, so each lands in a Conv.
- 2-D ``nn.dense`` followed by a single-use bias (``nn.bias_add`` or an ``add`` that does not
  broadcast the result) becomes ``Gemm(transB=1)`` with ``C``.
- ``reshape`` to 2-D, softmax over the last axis, ``reshape`` back: that is what an importer
  makes of an ONNX Softmax before opset 13 (which coerces its input to 2-D at ``axis``); it
  is written back as one Softmax (before opset 13 at that axis; from 13 on when the flattened
  tail has one axis that is not 1).
- A reshape-like op (``reshape``, ``reverse_reshape``, ``squeeze``, ``expand_dims``) of another
  one reads that one's input: the chain is one ``Reshape``.
- ``clip(x * alpha + beta, 0, 1)`` (single-use steps, scalar constants) is ONNX's
  ``HardSigmoid(x, alpha, beta)``, and ``x * HardSigmoid(x, 1/6, 1/2)`` its ``HardSwish(x)``
  (opset 14): what the importer decomposes those into is written back as one node each.

A folded op is not removed; it becomes an alias of the node it was folded into, and the
emission (which walks from the outputs) never reaches what nothing uses any more.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from irpass.ir.dims import dim_prod

from .graph import Const, Item, Lowered, Node

__all__ = ["fuse", "RESHAPES"]

#: Ops that are a Reshape to their (static) output shape.
RESHAPES = frozenset({"reshape", "reverse_reshape", "squeeze", "expand_dims"})


def fuse(lowered: Lowered, opset: int) -> None:
    """Apply the peepholes in place on ``lowered`` (the exporter's own graph, not the IR)."""
    uses, consumers = _uses(lowered)
    for node in lowered.nodes:
        if node.alias is not None:
            continue
        if node.op == "nn.conv2d":
            _fuse_conv(node, uses, consumers, lowered)
        elif node.op == "nn.dense":
            _fuse_dense(node, uses, consumers)
        elif node.op in ("nn.softmax", "nn.log_softmax"):
            _fuse_coerced_softmax(node, uses, consumers, opset)
        elif node.op == "clip":
            _fuse_hard_sigmoid(node, uses, consumers)
    for node in lowered.nodes:
        if node.op == "multiply" and node.alias is None and opset >= 14:
            _fuse_hard_swish(node, uses, consumers)
    for node in lowered.nodes:
        if node.op in RESHAPES:
            src = node.inputs[0]
            if type(src) is Node and src.alias is None and src.op in RESHAPES:
                node.inputs = [src.inputs[0]]


def _uses(lowered: Lowered) -> tuple[dict[int, int], dict[int, list[tuple[Node, int]]]]:
    uses: dict[int, int] = defaultdict(int)
    consumers: dict[int, list[tuple[Node, int]]] = defaultdict(list)
    for node in lowered.nodes:
        for i, a in enumerate(node.inputs):
            for v in (a if type(a) is tuple else (a,)):
                uses[id(v)] += 1
                consumers[id(v)].append((node, i))
    for item in lowered.items.values():
        uses[id(item.node)] += 1
    for v in lowered.outputs:
        uses[id(v)] += 1
    return uses, consumers


def _next(value: Any, uses: dict, consumers: dict) -> tuple[Node, int] | None:
    """The only consumer of ``value`` (and which input it is), if it has exactly one use."""
    if uses.get(id(value), 0) != 1 or len(consumers.get(id(value), ())) != 1:
        return None
    return consumers[id(value)][0]


def _channel_vector(c: Any, channels: int, axis: int, dtype: str) -> np.ndarray | None:
    """A constant that broadcasts along axis ``axis`` of a 4-D tensor only, e.g. (1, C, 1, 1)
    for NCHW (or a scalar), as a (C,) vector."""
    if type(c) is not Const or c.type.dtype != dtype or c.data.ndim > 4:
        return None
    padded = (1,) * (4 - c.data.ndim) + tuple(c.data.shape)
    if any(d != 1 for k, d in enumerate(padded) if k != axis) or padded[axis] not in (
            1, channels):
        return None
    vec = c.data.reshape(-1)
    return np.broadcast_to(vec, (channels,)).astype(dtype)


def _fuse_conv(conv: Node, uses: dict, consumers: dict, lowered: Lowered) -> None:
    a = conv.attrs
    ty = conv.type
    if ty.dtype not in ("float16", "float32", "float64") or (
            a["out_dtype"] or ty.dtype) != conv.inputs[0].type.dtype:
        return
    axis = (a["out_layout"] or a["data_layout"]).index("C")
    channels = ty.shape[axis]
    kl = a["kernel_layout"]
    w = conv.inputs[1]
    weight = w.data if type(w) is Const else None
    bias: np.ndarray | None = None
    cur: Any = conv
    while True:
        nxt = _next(cur, uses, consumers)
        if nxt is None:
            break
        node, idx = nxt
        if node.type != ty and node.op != "nn.batch_norm":
            break
        scale = shift = None
        if node.op == "nn.bias_add" and idx == 0 and node.attrs["axis"] % 4 == axis:
            b = node.inputs[1]
            if type(b) is Const and b.type.dtype == ty.dtype:
                shift = np.asarray(b.data)
        elif node.op in ("add", "multiply") or (node.op == "subtract" and idx == 0):
            vec = _channel_vector(node.inputs[1 - idx], channels, axis, ty.dtype)
            if vec is not None and node.op == "multiply":
                scale = vec
            elif vec is not None:
                shift = -vec if node.op == "subtract" else vec
        elif node.op == "nn.batch_norm" and idx == 0:
            node_item = _bn_output(node, lowered, uses, axis)
            if node_item is None:
                break
            found = _bn_scale_shift(node, channels)
            if found is None or weight is None:
                break
            scale, shift = found
            weight = _scale_out(weight, kl, scale)
            bias = shift if bias is None else bias * scale + shift
            node_item.alias = conv
            cur = node_item
            continue
        if scale is not None:
            if weight is None:
                break
            weight = _scale_out(weight, kl, scale)
            bias = None if bias is None else bias * scale
        elif shift is not None:
            bias = shift if bias is None else bias + shift
        else:
            break
        node.alias = conv
        cur = node
    if bias is not None:
        conv.extra["bias"] = bias.astype(ty.dtype)
    if weight is not None and type(w) is Const and weight is not w.data:
        conv.extra["weight"] = weight.astype(ty.dtype)


def _scale_out(weight: np.ndarray, layout: str, scale: np.ndarray) -> np.ndarray:
    shape = [1] * 4
    shape[layout.index("O")] = scale.shape[0]
    return weight * scale.reshape(shape)


def _bn_output(bn: Node, lowered: Lowered, uses: dict, axis: int) -> Item | None:
    """Field 0 of a batch norm over ``axis`` whose only use is that field."""
    item = lowered.items.get((id(bn), 0))
    if item is None or uses.get(id(bn), 0) != 1 or bn.attrs["axis"] % 4 != axis:
        return None
    return item


def _bn_scale_shift(bn: Node, channels: int) -> tuple[np.ndarray, np.ndarray] | None:
    params = bn.inputs[1:]
    if any(type(p) is not Const for p in params):
        return None
    gamma, beta, mean, var = (p.data.astype(np.float64) for p in params)
    a = bn.attrs
    scale = 1.0 / np.sqrt(var + a["epsilon"])
    if a["scale"]:
        scale = scale * gamma
    shift = -mean * scale
    if a["center"]:
        shift = shift + beta
    dtype = bn.type.fields[0].dtype
    return scale.astype(dtype), shift.astype(dtype)


def _fuse_dense(dense: Node, uses: dict, consumers: dict) -> None:
    ty = dense.type
    data = dense.inputs[0].type
    if len(data.shape) != 2 or (dense.attrs["out_dtype"] or ty.dtype) != data.dtype:
        return
    nxt = _next(dense, uses, consumers)
    if nxt is None:
        return
    node, idx = nxt
    if node.type != ty:
        return
    if node.op == "nn.bias_add" and idx == 0 and node.attrs["axis"] % 2 == 1:
        c = node.inputs[1]
    elif node.op == "add":
        c = node.inputs[1 - idx]
    else:
        return
    if c is dense or c.type.dtype != ty.dtype:
        return
    if type(c) is Const:
        dense.extra["gemm_c"] = np.asarray(c.data)
    else:
        dense.inputs = [*dense.inputs, c]
    node.alias = dense


_FLOATS = ("float16", "float32", "float64")


def _scalar_operand(node: Node) -> tuple[Any, float] | None:
    """``(other input, value)`` when one input of the binary ``node`` is a one-element
    constant of its dtype."""
    for k in (1, 0):
        c = node.inputs[k]
        if type(c) is Const and c.data.size == 1 and c.type.dtype == node.type.dtype:
            return node.inputs[1 - k], float(c.data.reshape(-1)[0])
    return None


def _fuse_hard_sigmoid(clip: Node, uses: dict, consumers: dict) -> None:
    """``clip(x * alpha + beta, 0, 1)`` -> ``HardSigmoid(x, alpha, beta)``."""
    if clip.attrs["a_min"] != 0 or clip.attrs["a_max"] != 1 or clip.type.dtype not in _FLOATS:
        return
    add = clip.inputs[0]
    if type(add) is not Node or add.op != "add" or add.type != clip.type or _next(
            add, uses, consumers) is None:
        return
    found = _scalar_operand(add)
    if found is None:
        return
    mul, beta = found
    if type(mul) is not Node or mul.op != "multiply" or mul.type != clip.type or _next(
            mul, uses, consumers) is None:
        return
    found = _scalar_operand(mul)
    if found is None or found[0].type != clip.type:
        return
    clip.inputs = [found[0]]
    clip.extra["hard_sigmoid"] = (found[1], beta)


def _fuse_hard_swish(mul: Node, uses: dict, consumers: dict) -> None:
    """``x * HardSigmoid(x, 1/6, 1/2)`` -> ``HardSwish(x)``."""
    a, b = mul.inputs
    for x, hs in ((a, b), (b, a)):
        if (type(hs) is Node and hs.op == "clip" and hs.inputs[0] is x
                and _next(hs, uses, consumers) is not None):
            params = hs.extra.get("hard_sigmoid")
            dtype = np.dtype(mul.type.dtype)
            if params == (float(dtype.type(1 / 6)), 0.5):
                mul.inputs = [x]
                mul.extra["hard_swish"] = True
                return


def _fuse_coerced_softmax(node: Node, uses: dict, consumers: dict, opset: int) -> None:
    shape2 = node.type.shape
    if len(shape2) != 2 or node.attrs["axis"] % 2 != 1:
        return
    src = node.inputs[0]
    if type(src) is not Node or src.op not in RESHAPES or _next(src, uses, consumers) is None:
        return
    nxt = _next(node, uses, consumers)
    if nxt is None or nxt[0].op not in RESHAPES:
        return
    x = src.inputs[0]
    back = nxt[0]
    full = tuple(x.type.shape)
    if tuple(back.type.shape) != full:
        return
    # dims may be symbolic (a batch size): their products compare as polynomials
    axis = next((k for k in range(len(full) + 1)
                 if dim_prod(full[:k]) == shape2[0] and dim_prod(full[k:]) == shape2[1]), None)
    if axis is None or axis == len(full):
        return
    if opset >= 13:
        wide = [k for k in range(axis, len(full)) if full[k] != 1]
        if len(wide) > 1:
            return
        axis = wide[0] if wide else axis
        node.extra["axis"] = axis
    else:
        node.extra["coerced_axis"] = axis
    node.inputs = [x]
    node.type = x.type
    back.alias = node
