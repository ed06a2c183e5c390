"""Emitters of the transformer-era ops: ``nn.attention`` and ``nn.rotary_embedding``.

From opset 23 ``nn.attention`` is one ``Attention`` node (its 4-D form: the same layout,
mask kinds, scale and causal mask) and ``nn.rotary_embedding`` one ``RotaryEmbedding`` where
ONNX's form fits. That op takes half-width caches: the first half of each cos/sin (every
other value when interleaved), which stands for the full width only when the two halves are
equal. The emitter proves that -- a constant is compared; a computed value must come from a
``concatenate`` of one value with itself on the last axis through ops that keep each row
(``cos``, ``sin``, casts, scalings, reshapes keeping the last axis, ``take`` on another axis),
which is how models build them -- and otherwise writes the decomposition. The half is sliced
once per cos/sin value (every layer shares them): a memo per export remembers it. Caches of
shape (B, S, D/2) go as they are; a cache shared by the batch, (S, D/2), goes with
``position_ids`` ``0..S-1`` (a constant, so static sizes only).

Before those opsets they are decomposed into the fewest older nodes: attention as MatMul,
scale, bias (a constant where the mask and causal mask are known), Softmax, and a guard that
zeroes the rows a mask leaves nothing to attend to (as the core op and ONNX's reference),
with grouped query heads folded into the query's rows by reshapes instead of repeated keys
and values; the rotation as ``x * cos + roll(x) * (sin * sign)`` with the roll a Split and
a Concat and the sign folded into a constant sin.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
from onnx import numpy_helper

from .builder import EmitContext, GraphBuilder, emitter
from .graph import Const, Node

__all__: list[str] = []


# -- a memo of values computed once per export --------------------------------------------------

_MEMOS: weakref.WeakKeyDictionary[GraphBuilder, dict[Any, tuple[list, str]]] = (
    weakref.WeakKeyDictionary())


def _memo(ctx: EmitContext, key: Any, make: Callable[[], str]) -> str:
    """``make()``'s result, once per ``key`` and graph: a value made in one subgraph is not
    visible in another, so a hit must come from the node list being written now."""
    table = _MEMOS.setdefault(ctx.builder, {})
    got = table.get(key)
    if got is not None and got[0] is ctx.builder.nodes:
        return got[1]
    name = make()
    table[key] = (ctx.builder.nodes, name)
    return name


def _resolve(v: Any) -> Any:
    while getattr(v, "alias", None) is not None:
        v = v.alias
    return v


def _reduce(ctx: EmitContext, op: str, x: str, axes: list[int]) -> str:
    if ctx.opset >= 18:
        return ctx.emit(op, [x, ctx.int64s(axes, "axes")], keepdims=1)
    return ctx.emit(op, [x], axes=axes, keepdims=1)


# -- attention ----------------------------------------------------------------------------------


@emitter("nn.attention")
def _attention(ctx: EmitContext) -> str:
    n = len(ctx.node.inputs)
    scale, causal = ctx.attrs["scale"], ctx.attrs["is_causal"]
    # a mask of rank 0 or 1 is left to the decomposition: Attention wants rank 2 to 4, and
    # onnxruntime 1.32 gives other values for such a mask reshaped to (1, kv)
    if ctx.opset >= 23 and (n == 3 or ctx.type_of(3).ndim >= 2):
        return ctx.emit("Attention", [ctx.input(i) for i in range(n)], scale=scale,
                        is_causal=1 if causal else None)
    b, h, sq, d = ctx.type_of(0).shape
    hkv, skv = ctx.type_of(1).shape[1], ctx.type_of(1).shape[2]
    dv = ctx.type_of(2).shape[3]
    dtype = ctx.type_of(0).dtype
    if h == hkv:
        group = 1
    elif type(h) is int and type(hkv) is int:
        group = h // hkv
    else:
        raise ctx.fail(f"grouped-query attention with symbolic head counts ({h}, {hkv}) "
                       "needs opset >= 23 (Attention)")
    if scale is None:
        if type(d) is not int:
            raise ctx.fail(f"the default scale of a symbolic head size {d} needs opset >= 23")
        scale = 1 / math.sqrt(d) if d else 1.0
    q = ctx.input(0)
    if scale != 1:
        q = ctx.emit("Mul", [q, ctx.constant(np.array(scale, dtype))])
    kdata = ctx.const(1)
    kt = (ctx.constant(np.ascontiguousarray(np.swapaxes(kdata, -1, -2)), hint="key")
          if kdata is not None else ctx.transpose(ctx.input(1), [0, 1, 3, 2]))
    if group > 1:  # query head h reads kv head h // group: the group's rows share one matmul
        q = ctx.reshape(q, [b, hkv, group * sq, d])
    scores = ctx.emit("MatMul", [q, kt])
    if group > 1:
        scores = ctx.reshape(scores, [b, h, sq, skv])
    bias, dead = _attention_bias(ctx, n == 4, causal, sq, skv, dtype)
    if bias is not None:
        scores = ctx.emit("Add", [scores, bias])
    probs = ctx.emit("Softmax", [scores], axis=-1)
    if dead is not None:
        probs = ctx.emit("Where", [dead, ctx.constant(np.zeros((), dtype)), probs])
    if group > 1:
        probs = ctx.reshape(probs, [b, hkv, group * sq, skv])
    y = ctx.emit("MatMul", [probs, ctx.input(2)])
    return ctx.reshape(y, [b, h, sq, dv]) if group > 1 else y


def _attention_bias(ctx: EmitContext, has_mask: bool, causal: bool, sq: Any, skv: Any,
                    dtype: str) -> tuple[str | None, str | None]:
    """The additive bias of the mask and the causal mask, and where a row is -inf throughout
    (None when no row can be): constants when both are known."""
    mask = ctx.const(3) if has_mask else None
    static = type(sq) is int and type(skv) is int
    if has_mask and (mask is None or (causal and not static)):  # computed at run time
        m = ctx.input(3)
        if ctx.type_of(3).dtype == "bool":
            m = ctx.emit("Where", [m, ctx.constant(np.zeros((), dtype)),
                                   ctx.constant(np.array(-np.inf, dtype))])
        if causal:
            m = ctx.emit("Add", [m, _causal_bias(ctx, sq, skv, dtype)])
        # a row with nothing to attend to: its bias is -inf throughout (below the lowest float)
        top = _reduce(ctx, "ReduceMax", m, [-1])
        dead = ctx.emit("Less", [top, ctx.constant(np.array(np.finfo(dtype).min, dtype))])
        return m, dead
    if not has_mask:
        return (_causal_bias(ctx, sq, skv, dtype) if causal else None), None
    with np.errstate(all="ignore"):
        bias = (np.where(mask, 0, -np.inf) if mask.dtype == bool else mask).astype(dtype)
        if bias.ndim < 2:  # a scalar or a row: the same broadcast as (1, kv)
            bias = bias.reshape((1,) * (2 - bias.ndim) + bias.shape)
        if causal:
            bias = bias + _causal_array(sq, skv, dtype)
    rows = np.isneginf(np.max(bias, axis=-1, keepdims=True)) if bias.shape[-1] else None
    dead = ctx.constant(rows, hint="dead") if rows is not None and rows.any() else None
    return ctx.constant(bias, hint="bias"), dead


def _causal_array(sq: int, skv: int, dtype: str) -> np.ndarray:
    j, i = np.arange(skv)[None, :], np.arange(sq)[:, None]
    return np.where(j <= i, 0, -np.inf).astype(dtype)


def _causal_bias(ctx: EmitContext, sq: Any, skv: Any, dtype: str) -> str:
    """0 where key j <= query i, -inf above: a constant for static sizes, else the upper
    triangle (above the diagonal) of a -inf matrix (Trilu, opset 14)."""
    if type(sq) is int and type(skv) is int:
        return ctx.constant(_causal_array(sq, skv, dtype), hint="causal")
    ctx.need_opset(14, "Trilu (a causal mask of symbolic size)")
    fill = ctx.emit("ConstantOfShape", [ctx.dims([sq, skv])],
                    value=numpy_helper.from_array(np.array([-np.inf], dtype), "value"))
    return ctx.emit("Trilu", [fill, ctx.constant(np.array(1, np.int64))], upper=1)


# -- rotary embedding ---------------------------------------------------------------------------

#: Ops through which a tensor whose rows (last axis) have equal halves keeps them: elementwise
#: functions of one tensor, and (below) scalings by a constant constant along the last axis.
_ROW_KEEPING = frozenset({"cos", "sin", "cast", "negative", "exp", "tanh", "sigmoid", "sqrt",
                          "abs", "erf", "nn.relu"})
_SCALINGS = frozenset({"multiply", "divide", "add", "subtract"})


def _halves_equal(v: Any, interleaved: bool) -> bool:
    """Whether value ``v``'s last axis provably holds each value twice: its two halves equal
    (or, interleaved, each pair)."""
    while True:
        v = _resolve(v)
        if type(v) is Const:
            data = v.data
            if data.ndim == 0 or data.shape[-1] % 2:
                return False
            if interleaved:
                a, b = data[..., 0::2], data[..., 1::2]
            else:
                half = data.shape[-1] // 2
                a, b = data[..., :half], data[..., half:]
            return bool(np.array_equal(a, b, equal_nan=data.dtype.kind == "f"))
        if type(v) is not Node:
            return False
        op, ins = v.op, v.inputs
        rank = len(v.type.shape)
        if op in _ROW_KEEPING:
            v = ins[0]
        elif op in _SCALINGS:
            consts = [k for k, a in enumerate(ins) if type(_resolve(a)) is Const
                      and (_resolve(a).data.ndim == 0 or _resolve(a).data.shape[-1] == 1)]
            if not consts:
                return False
            v = ins[1 - consts[0]]
        elif op in ("reshape", "expand_dims", "squeeze"):
            src = ins[0]
            if not getattr(src, "type", None) or not src.type.shape or not rank \
                    or src.type.shape[-1] != v.type.shape[-1]:
                return False  # rows of one length map to rows only when the length stays
            v = src
        elif op == "take" and v.attrs["axis"] is not None and rank and \
                v.attrs["axis"] % len(ins[0].type.shape) != len(ins[0].type.shape) - 1:
            v = ins[0]
        elif op == "concatenate" and not interleaved:
            fields = ins[0] if type(ins[0]) is tuple else (ins[0],)
            axis = v.attrs["axis"] % rank
            return (axis == rank - 1 and len(fields) == 2
                    and _resolve(fields[0]) is _resolve(fields[1]))
        else:
            return False


def _half_cache(ctx: EmitContext, i: int, lead: list[Any], half: int, interleaved: bool) -> str:
    """Input ``i`` (cos or sin, full width) as ONNX's half-width cache of shape ``lead +
    [half]``, made once per value."""
    data = ctx.const(i)

    def make() -> str:
        if data is not None:
            cut = data[..., 0::2] if interleaved else data[..., :half]
            return ctx.constant(np.ascontiguousarray(cut).reshape([*lead, half]), hint="cache")
        ins = [ctx.input(i), ctx.int64s([0]), ctx.int64s([2 * half if interleaved else half]),
               ctx.int64s([-1])]
        if interleaved:
            ins.append(ctx.int64s([2]))
        cut = ctx.emit("Slice", ins)
        shape = [*ctx.type_of(i).shape[:-1], half]
        return cut if shape == [*lead, half] else ctx.reshape(cut, [*lead, half], shape)

    return _memo(ctx, ("rope_cache", ctx.input(i), interleaved, tuple(map(str, lead))), make)


def _onnx_rotary(ctx: EmitContext, interleaved: bool) -> str | None:
    """One ``RotaryEmbedding`` node where ONNX's form fits (see the module docstring)."""
    xs = list(ctx.type_of(0).shape)
    rank = len(xs)
    width = xs[-1] if xs else None
    if rank not in (3, 4) or type(width) is not int or width % 2:
        return None
    batch, seq = xs[0], xs[-2]
    shapes = []
    for i in (1, 2):
        s = list(ctx.type_of(i).shape)
        s = [1] * (rank - len(s)) + s
        # (batch or 1, [1,] seq, width): broadcast over the heads only
        if s[-2:] != [seq, width] or (rank == 4 and s[1] != 1) or s[0] not in (1, batch):
            return None
        shapes.append(s)
    if shapes[0][0] != shapes[1][0]:
        return None
    if not all(_halves_equal(ctx.node.inputs[i], interleaved) for i in (1, 2)):
        return None
    half = width // 2
    per_batch = shapes[0][0] == batch
    if not per_batch and (type(batch) is not int or type(seq) is not int):
        return None  # the position_ids constant needs the sizes
    lead = [batch, seq] if per_batch else [seq]
    ins = [ctx.input(0)] + [_half_cache(ctx, i, lead, half, interleaved) for i in (1, 2)]
    if not per_batch:
        ins.append(_memo(ctx, ("rope_positions", batch, seq), lambda: ctx.constant(
            np.broadcast_to(np.arange(seq, dtype=np.int64), (batch, seq)), hint="positions")))
    return ctx.emit("RotaryEmbedding", ins, interleaved=1 if interleaved else None,
                    num_heads=1 if rank == 3 else None)


@emitter("nn.rotary_embedding")
def _rotary_embedding(ctx: EmitContext) -> str:
    interleaved = bool(ctx.attrs["interleaved"])
    if ctx.opset >= 23:
        y = _onnx_rotary(ctx, interleaved)
        if y is not None:
            return y
    # x * cos + roll(x) * (sin * sign): roll swaps the halves (or each pair), the sign
    # negates where the rotation does, (-b, a)
    xs = list(ctx.type_of(0).shape)
    dtype = ctx.type_of(0).dtype
    x = ctx.input(0)
    width = xs[-1]
    split = {"num_outputs": 2} if ctx.opset >= 18 else {}
    if interleaved:
        if type(width) is not int:
            raise ctx.fail(f"an interleaved rotation of symbolic width {width} needs opset "
                           ">= 23 (RotaryEmbedding)")
        pairs = ctx.reshape(x, [*xs[:-1], width // 2, 2], xs)
        a, b = ctx.emit("Split", [pairs], outputs=2, axis=-1, **split)
        rolled = ctx.reshape(ctx.emit("Concat", [b, a], axis=-1), xs)
    else:
        a, b = ctx.emit("Split", [x], outputs=2, axis=-1, **split)
        if type(width) is not int:  # no constant sign: negate the half that needs it
            b = ctx.emit("Neg", [b])
        rolled = ctx.emit("Concat", [b, a], axis=-1)
    sin = ctx.input(2)
    if type(width) is int:
        sign = (np.tile([-1, 1], width // 2) if interleaved
                else np.repeat([-1, 1], width // 2)).astype(dtype)
        data = ctx.const(2)
        sin = (_memo(ctx, ("rope_signed", sin, interleaved),
                     lambda: ctx.constant(data * sign, hint="sin"))
               if data is not None else
               _memo(ctx, ("rope_signed", sin, interleaved),
                     lambda: ctx.emit("Mul", [ctx.input(2), ctx.constant(sign)])))
    return ctx.emit("Add", [ctx.emit("Mul", [x, ctx.input(1)]), ctx.emit("Mul", [rolled, sin])])
