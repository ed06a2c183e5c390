"""Transformer blocks as single ops: ``nn.attention`` (scaled dot-product attention)
and ``nn.rotary_embedding`` (rotary position embedding).

``nn.attention`` works in the (batch, heads, seq, head_dim) layout of ONNX
Attention-23's 4-D form: query (B, H, Sq, D), key (B, Hkv, Skv, D), value
(B, Hkv, Skv, Dv), result (B, H, Sq, Dv). H is a multiple of Hkv (grouped-query
attention: query head h reads kv head ``h // (H // Hkv)``).

**The optional mask is an optional argument.** The op takes a variable number of
arguments (registered with ``num_inputs=-1``): three (query, key, value) when there is
no mask, four (query, key, value, mask) when there is. The type relation accepts
exactly those two arities and says so otherwise; the builder leaves the mask out when
it is ``None``. So a pattern or pass reads "has a mask" as ``len(call.args) == 4``,
and no placeholder value (an all-True mask, a zero bias) stands for "none", which a
rewrite would have to recognise.

The mask is either boolean (True: the query may attend to the key) or an additive
float mask of the query's dtype, broadcastable to (B, H, Sq, Skv) without growing it.
``is_causal`` masks key j for query i when ``j > i`` (upper-left aligned, as ONNX and
torch without a kv cache); with a mask too, both apply. A query row with no key left
to attend to (every position of its additive bias is -inf, the bool mask false, or the
causal mask closing it) gives zeros, as ONNX's reference implementation does; a row
masked by very negative finite values (torch's ``finfo.min``) is an ordinary softmax.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ir.attrs import Attrs
from ...ir.dims import Dim
from ...ir.nodes import Call
from ...ir.op import AttrField, OpPattern, attr_bool, attr_float
from ...ir.types import TensorType, Type
from .._common import (
    FLOAT_DTYPES,
    accumulate_dtype,
    check_dtype,
    dims_may_agree,
    make_call,
    match_dims,
    register,
    result,
    tensor_arg,
)

__all__ = ["attention", "rotary_embedding"]


def _fit_to(op: str, name: str, shape: tuple[Dim, ...], target: tuple[Dim, ...],
            target_name: str) -> tuple[Dim, ...]:
    """``target`` refined by ``shape``, which must broadcast to it without growing it.

    Each dim of ``shape`` (aligned at the end) is 1 or ``target``'s; a symbolic dim is
    assumed to fit unless it provably cannot (the run time checks it), and a static
    dim of ``shape`` replaces a symbolic one of ``target``.
    """
    if len(shape) > len(target):
        raise ValueError(
            f"{op}: {name} {shape} has more dimensions than {target_name} {target}"
        )
    out = list(target)
    lead = len(target) - len(shape)
    for k, d in enumerate(shape):
        t = target[lead + k]
        if d == 1 or d == t:
            continue
        if (type(d) is int and type(t) is int) or not (
            dims_may_agree(d, t) or dims_may_agree(d, 1)
        ):
            raise ValueError(
                f"{op}: {name} {shape} does not broadcast to {target_name} {target} "
                "(each dim must be 1 or the target's)"
            )
        if type(d) is int and type(t) is not int:
            out[lead + k] = d
    return tuple(out)


# -- attention ---------------------------------------------------------------------------------


def _attr_optional_scale(value: Any, where: str) -> float | None:
    if value is None:
        return None
    scale = attr_float(value, where)
    if not math.isfinite(scale):
        raise ValueError(f"{where} must be a finite number or None, got {scale}")
    return scale


_ATTN = "nn.attention"


def _attention_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    op = _ATTN
    if len(arg_types) not in (3, 4):
        raise ValueError(
            f"{op}: takes 3 arguments (query, key, value) or 4 (query, key, value, mask), "
            f"got {len(arg_types)}"
        )
    q = tensor_arg(arg_types[0], op, "query")
    k = tensor_arg(arg_types[1], op, "key")
    v = tensor_arg(arg_types[2], op, "value")
    check_dtype(q, FLOAT_DTYPES, op, "query")
    for name, t in (("query", q), ("key", k), ("value", v)):
        if t.ndim != 4:
            raise ValueError(f"{op}: {name} must be 4-D (batch, heads, seq, head_dim), got {t}")
    for name, t in (("key", k), ("value", v)):
        if t.dtype != q.dtype:
            raise TypeError(f"{op}: {name} has dtype {t.dtype} but query has {q.dtype}")
    batch = match_dims(op, "the batch sizes of query and key", q.shape[0], k.shape[0])
    batch = match_dims(op, "the batch sizes of query and value", batch, v.shape[0])
    kv_heads = match_dims(op, "the head counts of key and value", k.shape[1], v.shape[1])
    heads = q.shape[1]
    if type(heads) is int and type(kv_heads) is int and (kv_heads == 0 or heads % kv_heads):
        raise ValueError(
            f"{op}: the query's {heads} heads must be a multiple of the key's and value's "
            f"{kv_heads} (grouped-query attention)"
        )
    match_dims(op, "the head sizes of query and key", q.shape[3], k.shape[3])
    kv_seq = match_dims(op, "the sequence lengths of key and value", k.shape[2], v.shape[2])
    q_seq = q.shape[2]
    if len(arg_types) == 4:
        mask = tensor_arg(arg_types[3], op, "mask")
        if mask.dtype != "bool" and mask.dtype != q.dtype:
            raise TypeError(
                f"{op}: mask must be bool or have the query's dtype {q.dtype}, got {mask}"
            )
        batch, heads, q_seq, _ = _fit_to(op, "mask", mask.shape,
                                          (batch, heads, q_seq, kv_seq),
                                          "the scores (batch, heads, q_seq, kv_seq)")
    return TensorType((batch, heads, q_seq, v.shape[3]), q.dtype)


def _causal_bias(q_seq: int, kv_seq: int, dtype: np.dtype) -> np.ndarray:
    """0 where key j may be attended from query i (j <= i), -inf elsewhere."""
    allowed = np.arange(kv_seq)[None, :] <= np.arange(q_seq)[:, None]
    return np.where(allowed, dtype.type(0), dtype.type(-np.inf))


def _attention_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    q, k, v = args[:3]
    mask = args[3] if len(args) == 4 else None
    batch, heads, q_seq, head_dim = q.shape
    kv_heads, kv_seq = k.shape[1], k.shape[2]
    if kv_heads == 0 or heads % kv_heads:
        raise ValueError(
            f"{_ATTN}: the query's {heads} heads must be a multiple of the key's {kv_heads}"
        )
    wide = np.dtype(accumulate_dtype(q.dtype.name))
    out_shape = (batch, heads, q_seq, v.shape[3])
    if kv_seq == 0:
        return np.zeros(out_shape, q.dtype)  # nothing to attend to: an empty weighted sum
    group = heads // kv_heads
    kw = k.astype(wide, copy=False)
    vw = v.astype(wide, copy=False)
    if group > 1:
        kw = np.repeat(kw, group, axis=1)
        vw = np.repeat(vw, group, axis=1)
    scale = attrs["scale"]
    if scale is None:
        scale = 1.0 / math.sqrt(head_dim) if head_dim else 1.0
    scores = np.matmul(q.astype(wide, copy=False), kw.swapaxes(-1, -2)) * wide.type(scale)
    bias = None
    if mask is not None:
        if mask.dtype == np.bool_:
            bias = np.where(mask, wide.type(0), wide.type(-np.inf))
        else:
            bias = mask.astype(wide, copy=False)
    if attrs["is_causal"]:
        causal = _causal_bias(q_seq, kv_seq, wide)
        bias = causal if bias is None else bias + causal
    if bias is not None:
        scores = scores + bias
    top = np.max(scores, axis=-1, keepdims=True)
    # A row that is -inf throughout has no key to attend to: exp(-inf - -inf) would be
    # nan; shifting it by 0 gives exp(-inf) = 0, a zero sum, and so zeros.
    e = np.exp(scores - np.where(np.isneginf(top), wide.type(0), top))
    total = np.sum(e, axis=-1, keepdims=True)
    probs = e / np.where(total == 0, wide.type(1), total)
    if bias is not None:
        # ONNX decides "fully masked" on the bias, not the scores: such rows are zeros
        dead = np.isneginf(np.max(bias, axis=-1, keepdims=True))
        probs = np.where(dead, wide.type(0), probs)
    return result(np.matmul(probs, vw), q.dtype)


register(
    _ATTN,
    num_inputs=-1,
    type_rel=_attention_rel,
    kernel=_attention_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(
        AttrField("scale", _attr_optional_scale, None,
                  doc="Multiplies query @ key^T; None is 1 / sqrt(head_dim)."),
        AttrField("is_causal", attr_bool, False,
                  doc="Mask key j for query i when j > i (upper-left aligned)."),
    ),
    doc="Scaled dot-product attention in the (batch, heads, seq, head_dim) layout (ONNX "
    "Attention-23's 4-D form): softmax(query @ key^T * scale + mask) @ value, with "
    "grouped-query attention when the query has more heads than key and value. "
    "Arguments: (query, key, value) or (query, key, value, mask); the mask is bool (True "
    "attends) or additive of the query's dtype. A row with nothing to attend to is zeros.",
)


def attention(
    query: Any,
    key: Any,
    value: Any,
    mask: Any = None,
    scale: float | None = None,
    is_causal: bool = False,
) -> Call:
    """Scaled dot-product attention ``softmax(query @ key^T * scale + mask) @ value``.

    ``query`` is (batch, heads, q_seq, head_dim), ``key`` (batch, kv_heads, kv_seq,
    head_dim) and ``value`` (batch, kv_heads, kv_seq, v_head_dim), with ``heads`` a
    multiple of ``kv_heads`` (query head ``h`` reads kv head ``h // (heads //
    kv_heads)``); the result is (batch, heads, q_seq, v_head_dim). ``mask`` is
    optional: a bool tensor (True where a query may attend to a key) or an additive
    float mask of the query's dtype, broadcastable to (batch, heads, q_seq, kv_seq);
    without one the call has three arguments. ``scale`` None means ``1 / sqrt(head_dim)``.
    ``is_causal`` masks key ``j`` for query ``i`` when ``j > i``. A query row left with
    no key to attend to gives zeros (as ONNX's reference implementation). Float16 and
    bfloat16 inputs are computed in float32.
    """
    args = [query, key, value]
    names = ["query", "key", "value"]
    if mask is not None:
        args.append(mask)
        names.append("mask")
    return make_call(_ATTN, args, names, scale=scale, is_causal=is_causal)


# -- rotary_embedding --------------------------------------------------------------------------

_ROPE = "nn.rotary_embedding"


def _rotary_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    op = _ROPE
    data = tensor_arg(arg_types[0], op, "data")
    check_dtype(data, FLOAT_DTYPES, op, "data")
    if data.ndim == 0:
        raise ValueError(f"{op}: data must have at least one dimension, got {data}")
    width = data.shape[-1]
    if type(width) is int and width % 2:
        raise ValueError(f"{op}: data's last dimension must be even, got {data}")
    shape = data.shape
    for name, ty in (("cos", arg_types[1]), ("sin", arg_types[2])):
        t = tensor_arg(ty, op, name)
        if t.dtype != data.dtype:
            raise TypeError(f"{op}: {name} has dtype {t.dtype} but data has {data.dtype}")
        shape = _fit_to(op, name, t.shape, shape, "data")
    return data if shape == data.shape else TensorType(shape, data.dtype)


def _rotate(x: np.ndarray, interleaved: bool) -> np.ndarray:
    """The rotation of each pair by 90 degrees: (a, b) -> (-b, a)."""
    if interleaved:
        pairs = x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
        return np.stack((-pairs[..., 1], pairs[..., 0]), axis=-1).reshape(x.shape)
    half = x.shape[-1] // 2
    return np.concatenate((-x[..., half:], x[..., :half]), axis=-1)


def _rotary_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, cos, sin = args
    if data.shape[-1] % 2:
        raise ValueError(f"{_ROPE}: data's last dimension must be even, got {data.shape}")
    wide = accumulate_dtype(data.dtype.name)
    x = data.astype(wide, copy=False)
    out = x * cos.astype(wide, copy=False) + _rotate(x, attrs["interleaved"]) * sin.astype(
        wide, copy=False
    )
    return result(out, data.dtype)


register(
    _ROPE,
    num_inputs=3,
    type_rel=_rotary_rel,
    kernel=_rotary_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(
        AttrField("interleaved", attr_bool, False,
                  doc="Rotate pairs (x[2i], x[2i+1]) instead of the two halves."),
    ),
    doc="Rotary position embedding, full width: data * cos + rotate(data) * sin, where "
    "rotate(x) = concat(-x[..., D/2:], x[..., :D/2]) (the halves, as Hugging Face models), "
    "or with interleaved=True (-x[2i+1], x[2i]) at (2i, 2i+1); cos and sin broadcast to "
    "data's shape.",
)


def rotary_embedding(data: Any, cos: Any, sin: Any, interleaved: bool = False) -> Call:
    """Rotary position embedding of ``data`` (..., D), D even: ``data * cos +
    rotate(data) * sin``.

    ``rotate(x)`` is ``concat(-x[..., D/2:], x[..., :D/2])`` (the rotate-half convention
    of Hugging Face models), or with ``interleaved=True`` the pairs ``(x[2i], x[2i+1])``
    rotated to ``(-x[2i+1], x[2i])``. ``cos`` and ``sin`` are full width (D on their last
    axis, each angle written twice: in both halves, or in both places of its pair) and
    broadcast to ``data``'s shape. The result has ``data``'s type.
    """
    return make_call(_ROPE, [data, cos, sin], ["data", "cos", "sin"], interleaved=interleaved)
