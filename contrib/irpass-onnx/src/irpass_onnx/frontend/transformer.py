"""Converters of the ONNX transformer-era ops: Attention, RotaryEmbedding, RMSNormalization,
GroupNormalization, LinearAttention, SwiGLU and CausalConvWithState.

Where the node maps onto a fused core op it becomes that op: GroupNormalization is
``nn.group_norm``; RMSNormalization ``nn.rms_norm`` (a scale broadcasting to the normalized
shape, the stash type the op computes in); Attention ``nn.attention`` in its 4-D form without
a key/value cache, ``nonpad_kv_seqlen``, softcap, sliding window or the ``qk_matmul_output``
output (a short mask is padded); RotaryEmbedding ``nn.rotary_embedding`` when it rotates the
whole head (the half-width caches, gathered at ``position_ids``, made full width). The rest
is decomposed into core ops, as TVM's ONNX frontend does: masks that depend only on shapes
(causal, sliding windows, padding of a short mask) are computed at import as constants; those
that depend on ``nonpad_kv_seqlen`` stay run-time expressions. The recurrences
(LinearAttention) are unrolled over their static number of steps, as TVM unrolls RNNs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from irpass.evaluator import evaluate
from irpass.ir import Constant, Expr, TensorType, Tuple
from irpass.ir.types import numpy_dtype

from .context import NodeContext
from .nn import _cast_to, _float_type, _norm_axis, call, scalar, stash_dtype
from .registry import converter

__all__: list[str] = []

#: The float dtypes the attention-family converters take (ONNX's T for them).
_FLOATS = ("float16", "float32", "float64", "bfloat16")
#: ``softmax_precision`` values (a TensorProto element type) and the dtypes they name.
_PRECISIONS = {1: "float32", 10: "float16", 11: "float64", 16: "bfloat16"}
#: The dtype the fused core ops (``nn.rms_norm``, ``nn.attention``) compute a dtype in.
_COMPUTED_IN = {"float16": "float32", "bfloat16": "float32"}


def _typed(value: object, dtype: str) -> Constant:
    """``value`` as a constant of ``dtype`` (bfloat16 included)."""
    return Constant(np.asarray(value).astype(numpy_dtype(dtype)))


def _float_input(ctx: NodeContext, i: int, what: str) -> TensorType:
    ty = ctx.type_of(i)
    if ty.dtype not in _FLOATS:
        ctx.fail(f"{what} (input {i}) has dtype {ty.dtype}; expected one of {', '.join(_FLOATS)}")
    return ty


def _outputs(ctx: NodeContext, *outs: Expr) -> list[Expr]:
    """The outputs the node names (its optional trailing outputs may be left off)."""
    return list(outs[: max(ctx.num_outputs, 1)])


def _concat(xs: Sequence[Expr], axis: int) -> Expr:
    return xs[0] if len(xs) == 1 else call("concatenate", Tuple(list(xs)), axis=axis)


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


def _to_shape(w: Expr, have: tuple, want: tuple) -> Expr | None:
    """``w`` (of shape ``have``) as a tensor of shape ``want`` if it broadcasts to it (leading
    1s beyond ``want``'s rank dropped), else None."""
    if have == want:
        return w
    extra = len(have) - len(want)
    if extra > 0:
        if any(d != 1 for d in have[:extra]):
            return None
        have = have[extra:]
        w = call("reshape", w, newshape=list(have))
    lead = len(want) - len(have)
    if any(d != 1 and d != want[lead + k] for k, d in enumerate(have)):
        return None
    return w if have == want else call("broadcast_to", w, shape=list(want))


@converter("RMSNormalization", since=23)
def _rms_norm(ctx: NodeContext) -> Expr:
    xt = _float_type(ctx, 0)
    rank = len(xt.shape)
    axis = _norm_axis(ctx, rank)
    _, wide = stash_dtype(ctx, xt.dtype)
    wt = ctx.type_of(1)
    eps = float(ctx.attr("epsilon", 1e-5))
    if wt.dtype == xt.dtype and wide == _COMPUTED_IN.get(xt.dtype, xt.dtype):
        w = _to_shape(ctx.input(1), tuple(wt.shape), tuple(xt.shape[axis:]))
        if w is not None:
            return call("nn.rms_norm", ctx.input(0), w, axes=list(range(axis, rank)),
                        epsilon=eps)
    x = _cast_to(ctx.input(0), xt.dtype, wide)
    mean_sq = call("mean", call("multiply", x, x), axis=list(range(axis, rank)), keepdims=True)
    rms = call("sqrt", call("add", mean_sq, scalar(eps, wide)))
    normed = _cast_to(call("divide", x, rms), wide, xt.dtype)
    return call("multiply", normed, _cast_to(ctx.input(1), ctx.type_of(1).dtype, xt.dtype))


# -- Attention ---------------------------------------------------------------------------------


def _split_heads(x: Expr, shape: tuple[int, ...], heads: int) -> Expr:
    """(batch, seq, heads * size) as (batch, heads, seq, size)."""
    b, n, hidden = shape
    x = call("reshape", x, newshape=[b, n, heads, hidden // heads])
    return call("transpose", x, axes=[0, 2, 1, 3])


def _repeat_heads(x: Expr, shape: tuple[int, ...], reps: int) -> Expr:
    """(batch, heads, seq, size) with each head repeated ``reps`` times in place
    (h0, h0, h1, h1, ...), as grouped-query attention shares a key/value head."""
    if reps == 1:
        return x
    b, h, n, d = shape
    x = call("broadcast_to", call("expand_dims", x, axis=2), shape=[b, h, reps, n, d])
    return call("reshape", x, newshape=[b, h * reps, n, d])


def _bias_from_allowed(allowed: Expr, dtype: str) -> Expr:
    """0 where ``allowed``, -inf elsewhere (select, not multiply: 0 * -inf is NaN)."""
    return call("where", allowed, _typed(0, dtype), _typed(-np.inf, dtype))


def _add(a: Expr | None, b: Expr) -> Expr:
    return b if a is None else call("add", a, b)


def _position_bias(
    q_len: int, kv_len: int, offset: int | Expr, batch: int, dtype: str,
    left: int | None, right: int | None,
) -> Expr:
    """The additive bias of a causal frontier (``left``/``right`` None) or a sliding window:
    query ``i`` at absolute position ``i + offset`` may see key ``j`` iff
    ``i + offset - left <= j <= i + offset + right`` (a None or -1 bound is open; causal is
    ``right = 0``). A static ``offset`` gives a (q, kv) constant, a per-batch one (an int64
    (batch,) expression) a (batch, 1, q, kv) expression."""
    diff = np.arange(q_len)[:, None] - np.arange(kv_len)[None, :]  # i - j
    if not isinstance(offset, Expr):
        d = diff + offset
        allowed = np.ones(d.shape, dtype=bool)
        if left is not None and left >= 0:
            allowed &= d <= left
        if right is not None and right >= 0:
            allowed &= -d <= right
        return _typed(np.where(allowed, 0, -np.inf), dtype)
    d = call("add", Constant(diff.astype(np.int64)[None]),
             call("reshape", offset, newshape=[batch, 1, 1]))
    conds = []
    if left is not None and left >= 0:
        conds.append(call("less_equal", d, Constant(np.array(left, dtype=np.int64))))
    if right is not None and right >= 0:
        conds.append(call("less_equal", call("negative", d),
                          Constant(np.array(right, dtype=np.int64))))
    allowed = conds[0] if len(conds) == 1 else call("logical_and", *conds)
    bias = _bias_from_allowed(allowed, dtype)
    return call("reshape", bias, newshape=[batch, 1, q_len, kv_len])


#: Up to this many keys, a bfloat16 softmax sums its row one addition at a time (see below).
_BF16_CHAIN_SUM = 16


def _softmax_last(x: Expr, dtype: str, n: int) -> Expr:
    """Softmax over the last axis (of size ``n``) computed in ``dtype``, as ONNX's function
    body of Attention does: for float16 and bfloat16 each step rounds to ``dtype`` (the core
    ``nn.softmax`` keeps float32 throughout, which differs from the reference by an ulp).
    numpy sums a float16 row in float32 but a bfloat16 row sequentially in bfloat16; a short
    bfloat16 row is summed the same way so that the results agree to the last bit."""
    if dtype not in ("float16", "bfloat16"):
        return call("nn.softmax", x, axis=-1)
    e = call("exp", call("subtract", x, call("max", x, axis=[-1], keepdims=True)))
    if dtype == "bfloat16" and n <= _BF16_CHAIN_SUM:
        cols = [call("strided_slice", e, begin=[j], end=[j + 1], axes=[-1]) for j in range(n)]
        total = cols[0]
        for col in cols[1:]:
            total = call("add", total, col)
    else:
        total = call("sum", e, axis=[-1], keepdims=True)
    return call("divide", e, total)


def _fused_attention(ctx: NodeContext, q: Expr, k: Expr, v: Expr, dtype: str,
                     kv_len: object) -> Expr | None:
    """The node as one ``nn.attention`` (4-D inputs, no cache), or None where the core op has
    no form for it: a softcap, a sliding window, the ``qk_matmul_output`` output, a softmax
    precision other than the one the op computes in, a mask of another rank or dtype. What
    is invalid is left to the decomposition to report."""
    if (ctx.num_outputs > 3 or float(ctx.attr("softcap", 0.0)) > 0
            or int(ctx.attr("qk_matmul_output_mode", 0)) not in (0, 1, 2, 3)):
        return None
    if ctx.opset >= 25 and (int(ctx.attr("left_window_size", -1)) != -1
                            or int(ctx.attr("right_window_size", -1)) != -1):
        return None
    computed_in = _COMPUTED_IN.get(dtype, dtype)
    if (ctx.has_attr("softmax_precision")
            and _PRECISIONS.get(int(ctx.attr("softmax_precision"))) != computed_in):
        return None
    scale = ctx.attr("scale", None)
    if scale is not None and (not math.isfinite(float(scale)) or float(scale) < 0):
        return None
    args = [q, k, v]
    if ctx.has_input(3):
        mask = ctx.input(3)
        mt = ctx.type_of(3)
        if not 1 <= len(mt.shape) <= 4 or (mt.dtype != "bool" and mt.dtype not in _FLOATS):
            return None
        if mt.dtype != "bool":
            mask = _cast_to(mask, mt.dtype, dtype)
        width = mt.shape[-1]
        if width != kv_len:
            if type(width) is not int or type(kv_len) is not int or width > kv_len:
                return None
            # a short mask is padded with masked-out keys
            fill = np.full(mt.shape[:-1] + (kv_len - width,),
                           False if mt.dtype == "bool" else -np.inf)
            mask = _concat([mask, Constant(fill) if mt.dtype == "bool" else _typed(fill, dtype)],
                           axis=len(mt.shape) - 1)
        args.append(mask)
    return call("nn.attention", *args, scale=None if scale is None else float(scale),
                is_causal=bool(ctx.attr("is_causal", 0)))


@converter("Attention", since=23)
def _attention(ctx: NodeContext) -> list[Expr]:
    qt = _float_input(ctx, 0, "Q")
    kt = _float_input(ctx, 1, "K")
    vt = _float_input(ctx, 2, "V")
    dtype = qt.dtype
    rank = len(qt.shape)
    if rank not in (3, 4) or len(kt.shape) != rank or len(vt.shape) != rank:
        ctx.fail(f"Q {qt}, K {kt} and V {vt} must all be 3-D or all 4-D")
    if kt.dtype != dtype:
        ctx.fail(f"K has dtype {kt.dtype} but Q has {dtype}")
    q_heads_attr = ctx.attr("q_num_heads", None)
    kv_heads_attr = ctx.attr("kv_num_heads", None)
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    batch = qt.shape[0]
    if kt.shape[0] != batch or vt.shape[0] != batch:
        ctx.fail(f"Q {qt}, K {kt} and V {vt} have different batch sizes")
    if rank == 3:
        if q_heads_attr is None or kv_heads_attr is None:
            ctx.fail("3-D inputs need the q_num_heads and kv_num_heads attributes")
        hq, hkv = int(q_heads_attr), int(kv_heads_attr)
        for name, ty, h in (("Q", qt, hq), ("K", kt, hkv), ("V", vt, hkv)):
            if h < 1 or ty.shape[2] % h:
                ctx.fail(f"{name} {ty}: its hidden size is not a multiple of {h} heads")
        if kt.shape[1] != vt.shape[1]:
            ctx.fail(f"K {kt} and V {vt} have different sequence lengths")
        q = _split_heads(q, qt.shape, hq)
        k = _split_heads(k, kt.shape, hkv)
        v = _split_heads(v, vt.shape, hkv)
        q_shape = (batch, hq, qt.shape[1], qt.shape[2] // hq)
        k_shape = (batch, hkv, kt.shape[1], kt.shape[2] // hkv)
        v_shape = (batch, hkv, vt.shape[1], vt.shape[2] // hkv)
    else:
        if ctx.opset >= 25 and (q_heads_attr is not None or kv_heads_attr is not None):
            ctx.fail("q_num_heads and kv_num_heads must not be set for 4-D inputs")
        q_shape, k_shape, v_shape = qt.shape, kt.shape, vt.shape
        hq, hkv = q_shape[1], k_shape[1]
        if v_shape[1] != hkv or v_shape[2] != k_shape[2]:
            ctx.fail(f"K {kt} and V {vt} differ in heads or sequence length")
    head = q_shape[3]
    if k_shape[3] != head:
        ctx.fail(f"Q and K have different head sizes ({head} and {k_shape[3]})")
    if hq % hkv:
        ctx.fail(f"{hq} query heads are not a multiple of {hkv} key/value heads")

    # the key/value cache: present = past ++ new along the sequence axis
    past_k, past_v = ctx.input(4, optional=True), ctx.input(5, optional=True)
    if (past_k is None) != (past_v is None):
        ctx.fail("past_key and past_value must be given together")
    nonpad = ctx.input(6, optional=True) if ctx.opset >= 24 else None
    if nonpad is not None and past_k is not None:
        ctx.fail("nonpad_kv_seqlen cannot be combined with past_key/past_value")
    past_len = 0
    if past_k is not None:
        pkt, pvt = ctx.type_of(4), ctx.type_of(5)
        past_len = pkt.shape[2] if len(pkt.shape) == 4 else -1
        if (pkt.shape != (batch, hkv, past_len, head) or pkt.dtype != dtype
                or pvt.shape != (batch, hkv, past_len, v_shape[3]) or pvt.dtype != vt.dtype):
            ctx.fail(f"past_key {pkt} / past_value {pvt} do not match K and V (expected "
                     f"({batch}, {hkv}, past, {head}) and ({batch}, {hkv}, past, {v_shape[3]}))")
        k = call("concatenate", Tuple([past_k, k]), axis=2)
        v = call("concatenate", Tuple([past_v, v]), axis=2)
    present_k, present_v = k, v
    q_len, kv_len = q_shape[2], k_shape[2] + past_len
    if nonpad is not None:
        nt = ctx.type_of(6)
        if nt.dtype != "int64" or nt.shape != (batch,):
            ctx.fail(f"nonpad_kv_seqlen {nt} must be int64 of shape ({batch},)")
    if rank == 4 and past_k is None and nonpad is None:
        fused = _fused_attention(ctx, q, k, _cast_to(v, vt.dtype, dtype), dtype, kv_len)
        if fused is not None:
            return _outputs(ctx, fused, present_k, present_v)

    # the additive bias: mask, causal frontier, sliding window and padding, composed
    bias: Expr | None = None
    mask = ctx.input(3, optional=True)
    if mask is not None:
        mt = ctx.type_of(3)
        if mt.dtype != "bool" and mt.dtype not in _FLOATS:
            ctx.fail(f"attn_mask has dtype {mt.dtype}; expected bool or a float type")
        if not mt.shape or len(mt.shape) > 4:
            ctx.fail(f"attn_mask {mt} must have rank 1 to 4")
        if mt.dtype == "bool":
            mask = _bias_from_allowed(mask, dtype)
        else:
            mask = _cast_to(mask, mt.dtype, dtype)
        short = kv_len - mt.shape[-1]
        if short < 0:
            ctx.fail(f"attn_mask {mt} is longer than the {kv_len} keys")
        if short:  # a short mask is padded with masked-out keys
            fill = _typed(np.full(mt.shape[:-1] + (short,), -np.inf), dtype)
            mask = _concat([mask, fill], axis=len(mt.shape) - 1)
        bias = mask
    offset: int | Expr = past_len
    if nonpad is not None:
        offset = call("subtract", nonpad, Constant(np.array(q_len, dtype=np.int64)))
    if ctx.attr("is_causal", 0):
        bias = _add(bias, _position_bias(q_len, kv_len, offset, batch, dtype, None, 0))
    left = int(ctx.attr("left_window_size", -1)) if ctx.opset >= 25 else -1
    right = int(ctx.attr("right_window_size", -1)) if ctx.opset >= 25 else -1
    if left < -1 or right < -1:
        ctx.fail(f"left_window_size {left} / right_window_size {right} must be -1 or >= 0")
    if left >= 0 or right >= 0:
        bias = _add(bias, _position_bias(q_len, kv_len, offset, batch, dtype, left, right))
    if nonpad is not None:
        keys = Constant(np.arange(kv_len, dtype=np.int64))
        allowed = call("less", keys, call("reshape", nonpad, newshape=[batch, 1]))
        pad = call("reshape", _bias_from_allowed(allowed, dtype), newshape=[batch, 1, 1, kv_len])
        bias = _add(bias, pad)

    # a query row that may see no key at all gives zeros, not the NaN of exp(-inf)/0: the
    # rows are known at import when the bias is (no run-time mask or nonpad_kv_seqlen)
    blocked: Expr | None = None
    if bias is not None and nonpad is None and (mask is None or ctx.known(3) is not None):
        value = evaluate(bias)
        bias = Constant(value)
        rows = np.isneginf(np.max(value, axis=-1, keepdims=True))
        if rows.any():
            blocked = Constant(rows)
    elif bias is not None:
        blocked = call("equal", call("max", bias, axis=[-1], keepdims=True),
                       _typed(-np.inf, dtype))

    # scores: Q and K are each scaled by sqrt(scale) (ONNX's guard against overflow)
    scale = ctx.attr("scale", None)
    scale = 1.0 / math.sqrt(head) if scale is None else float(scale)
    if scale < 0:
        ctx.fail(f"scale {scale} must not be negative (Q and K are each scaled by its root)")
    root = _typed(math.sqrt(scale), dtype)
    k = _repeat_heads(k, (batch, hkv, kv_len, head), hq // hkv)
    v = _repeat_heads(v, (batch, hkv, kv_len, v_shape[3]), hq // hkv)
    kt_scaled = call("transpose", call("multiply", k, root), axes=[0, 1, 3, 2])
    scores = call("matmul", call("multiply", q, root), kt_scaled)
    raw = scores
    softcap = float(ctx.attr("softcap", 0.0))
    if softcap > 0:
        cap = _typed(softcap, dtype)
        scores = call("multiply", call("tanh", call("divide", scores, cap)), cap)
    capped = scores
    if bias is not None:
        scores = call("add", scores, bias)
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        ctx.fail(f"qk_matmul_output_mode {mode} is not one of 0, 1, 2, 3")
    wide = dtype
    if ctx.has_attr("softmax_precision"):
        code = int(ctx.attr("softmax_precision"))
        if code not in _PRECISIONS:
            ctx.fail(f"softmax_precision {code} is not one of {sorted(_PRECISIONS)}")
        wide = _PRECISIONS[code]
    probs = _softmax_last(_cast_to(scores, dtype, wide), wide, kv_len)
    if blocked is not None:
        probs = call("where", blocked, _typed(0, wide), probs)
    probs = _cast_to(probs, wide, dtype)
    y = call("matmul", probs, _cast_to(v, vt.dtype, dtype))
    if rank == 3:
        y = call("transpose", y, axes=[0, 2, 1, 3])
        y = call("reshape", y, newshape=[batch, q_len, hq * v_shape[3]])
    qk_out = (raw, capped, scores, probs)[mode]
    return _outputs(ctx, y, present_k, present_v, qk_out)


# -- RotaryEmbedding ---------------------------------------------------------------------------


def _last_axis_slice(x: Expr, begin: int, end: int, stride: int = 1) -> Expr:
    return call("strided_slice", x, begin=[begin], end=[end], strides=[stride], axes=[3])


def _full_width(cache: Expr, shape: tuple, interleaved: bool) -> Expr:
    """A half-width cache (..., n) as the full width (..., 2n) ``nn.rotary_embedding`` takes:
    written twice, as the two halves or (interleaved) each value twice in a row."""
    if not interleaved:
        return call("concatenate", Tuple([cache, cache]), axis=-1)
    pairs = call("broadcast_to", call("expand_dims", cache, axis=len(shape)),
                 shape=[*shape, 2])
    return call("reshape", pairs, newshape=[*shape[:-1], 2 * shape[-1]])


@converter("RotaryEmbedding", since=23)
def _rotary_embedding(ctx: NodeContext) -> Expr:
    xt = _float_input(ctx, 0, "X")
    x = ctx.input(0)
    rank = len(xt.shape)
    if rank == 4:
        b, heads, seq, head = xt.shape
        x = call("transpose", x, axes=[0, 2, 1, 3])  # (batch, seq, heads, head)
    elif rank == 3:
        b, seq, hidden = xt.shape
        heads = int(ctx.attr("num_heads", 0))
        if heads < 1 or hidden % heads:
            ctx.fail(f"a 3-D input {xt} needs num_heads dividing its hidden size "
                     f"(num_heads={heads})")
        head = hidden // heads
        x = call("reshape", x, newshape=[b, seq, heads, head])
    else:
        ctx.fail(f"X {xt} must be 3-D or 4-D")
    rot = int(ctx.attr("rotary_embedding_dim", 0)) or head
    if rot % 2 or not 0 < rot <= head:
        ctx.fail(f"rotary_embedding_dim {rot} must be even and at most the head size {head}")
    half = rot // 2
    caches = []
    for i, name in ((1, "cos_cache"), (2, "sin_cache")):
        ct = ctx.type_of(i)
        if ct.dtype != xt.dtype:
            ctx.fail(f"{name} has dtype {ct.dtype} but X has {xt.dtype}")
        cache = ctx.input(i)
        if ctx.has_input(3):
            pt = ctx.type_of(3)
            if pt.dtype != "int64" or pt.shape != (b, seq):
                ctx.fail(f"position_ids {pt} must be int64 of shape ({b}, {seq})")
            if len(ct.shape) != 2 or ct.shape[1] != half:
                ctx.fail(f"{name} {ct} must have shape (max_position + 1, {half}) with "
                         "position_ids")
            cache = call("take", cache, ctx.input(3), axis=0)
        elif ct.shape != (b, seq, half):
            ctx.fail(f"{name} {ct} must have shape ({b}, {seq}, {half}) without position_ids")
        caches.append(cache)  # (batch, seq, rot / 2)
    interleaved = bool(ctx.attr("interleaved", 0))
    if rot == head:  # the whole head rotates: nn.rotary_embedding with full-width caches
        full = [_full_width(c, (b, seq, half), interleaved) for c in caches]
        if rank == 4:  # (batch, heads, seq, head) as given, the caches broadcast over heads
            cos, sin = (call("expand_dims", c, axis=1) for c in full)
            return call("nn.rotary_embedding", ctx.input(0), cos, sin, interleaved=interleaved)
        cos, sin = (call("expand_dims", c, axis=2) for c in full)
        y = call("nn.rotary_embedding", x, cos, sin, interleaved=interleaved)
        return call("reshape", y, newshape=list(xt.shape))
    cos, sin = (call("expand_dims", c, axis=2) for c in caches)  # (batch, seq, 1, rot / 2)
    if interleaved:  # pairs (x0, x1), (x2, x3), ... rotate together
        x1, x2 = _last_axis_slice(x, 0, rot, 2), _last_axis_slice(x, 1, rot, 2)
    else:  # the first half rotates with the second
        x1, x2 = _last_axis_slice(x, 0, half), _last_axis_slice(x, half, rot)
    real = call("subtract", call("multiply", cos, x1), call("multiply", sin, x2))
    imag = call("add", call("multiply", sin, x1), call("multiply", cos, x2))
    if interleaved:
        pairs = _concat([call("expand_dims", real, axis=4), call("expand_dims", imag, axis=4)],
                        axis=4)
        rotated = call("reshape", pairs, newshape=[b, seq, heads, rot])
    else:
        rotated = _concat([real, imag], axis=3)
    if rot < head:
        rotated = _concat([rotated, _last_axis_slice(x, rot, head)], axis=3)
    if rank == 4:
        return call("transpose", rotated, axes=[0, 2, 1, 3])
    return call("reshape", rotated, newshape=list(xt.shape))


# -- CausalConvWithState -----------------------------------------------------------------------


@converter("CausalConvWithState", since=27)
def _causal_conv_with_state(ctx: NodeContext) -> list[Expr]:
    xt = _float_input(ctx, 0, "input")
    wt = ctx.type_of(1)
    if len(xt.shape) != 3:
        ctx.fail(f"input {xt} must be 3-D (batch, channels, length)")
    b, channels, _ = xt.shape
    if len(wt.shape) != 3 or wt.shape[:2] != (channels, 1) or wt.dtype != xt.dtype:
        ctx.fail(f"weight {wt} must be {xt.dtype} of shape ({channels}, 1, k)")
    k = wt.shape[2]
    activation = ctx.attr("activation", "none")
    if activation not in ("none", "silu", "swish"):
        ctx.fail(f"activation {activation!r} is not one of 'none', 'silu', 'swish'")
    if ctx.has_input(3):
        st = ctx.type_of(3)
        if st.shape != (b, channels, k - 1) or st.dtype != xt.dtype:
            ctx.fail(f"past_state {st} must be {xt.dtype} of shape ({b}, {channels}, {k - 1})")
        state = ctx.input(3)
    else:
        state = _typed(np.zeros((b, channels, k - 1)), xt.dtype)
    # the state carries the k - 1 positions before the input: a valid depthwise convolution
    # of the two joined is the causal one
    padded = _concat([state, ctx.input(0)], axis=2) if k > 1 else ctx.input(0)
    y = call("nn.conv1d", padded, ctx.input(1), groups=channels, channels=channels,
             kernel_size=[k])
    if ctx.has_input(2):
        bt = ctx.type_of(2)
        if bt.shape != (channels,) or bt.dtype != xt.dtype:
            ctx.fail(f"bias {bt} must be {xt.dtype} of shape ({channels},)")
        y = call("nn.bias_add", y, ctx.input(2), axis=1)
    if activation != "none":  # SiLU, computed in float32 as the reference does
        y32 = _cast_to(y, xt.dtype, "float32")
        y = _cast_to(call("multiply", y32, call("sigmoid", y32)), "float32", xt.dtype)
    length = xt.shape[2] + k - 1
    present = call("strided_slice", padded, begin=[length - (k - 1)], end=[length], axes=[2])
    return _outputs(ctx, y, present)


# -- LinearAttention ---------------------------------------------------------------------------


def _steps(x: Expr, n: int) -> list[Expr]:
    """The ``n`` slices of ``x`` along axis 2 (time), that axis dropped."""
    return [call("squeeze", call("strided_slice", x, begin=[i], end=[i + 1], axes=[2]),
                 axis=[2]) for i in range(n)]


@converter("LinearAttention", since=27)
def _linear_attention(ctx: NodeContext) -> list[Expr]:
    qt = _float_input(ctx, 0, "query")
    kt, vt = _float_input(ctx, 1, "key"), _float_input(ctx, 2, "value")
    rule = ctx.attr("update_rule", "gated_delta")
    if rule not in ("linear", "gated", "delta", "gated_delta"):
        ctx.fail(f"update_rule {rule!r} is not one of 'linear', 'gated', 'delta', 'gated_delta'")
    hq, hkv = int(ctx.attr("q_num_heads")), int(ctx.attr("kv_num_heads"))
    if hq < 1 or hkv < 1 or hq % hkv:
        ctx.fail(f"q_num_heads {hq} must be a positive multiple of kv_num_heads {hkv}")
    if any(len(t.shape) != 3 for t in (qt, kt, vt)):
        ctx.fail(f"query {qt}, key {kt} and value {vt} must be 3-D (batch, time, heads * size)")
    b, steps, _ = qt.shape
    if kt.shape[:2] != (b, steps) or vt.shape[:2] != (b, steps):
        ctx.fail(f"query {qt}, key {kt} and value {vt} differ in batch or time")
    for name, ty, h in (("query", qt, hq), ("key", kt, hkv), ("value", vt, hkv)):
        if ty.shape[2] % h:
            ctx.fail(f"{name} {ty}: its last axis is not a multiple of {h} heads")
    if steps < 1:
        ctx.fail(f"query {qt} has no time steps")
    dk, dv = qt.shape[2] // hq, vt.shape[2] // hkv
    if kt.shape[2] // hkv != dk:
        ctx.fail(f"key {kt} and query {qt} have different head sizes")
    gating, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    for i, name, needed in ((4, "decay", gating), (5, "beta", delta)):
        if ctx.has_input(i) != needed:
            ctx.fail(f"update_rule {rule!r} {'requires' if needed else 'forbids'} the {name} "
                     "input")
    f32 = "float32"  # the recurrence runs in float32 whatever the input dtype

    def heads_first(i: int, ty: TensorType, heads: int) -> Expr:
        return _cast_to(_split_heads(ctx.input(i), ty.shape, heads), ty.dtype, f32)

    q4, k4, v4 = heads_first(0, qt, hq), heads_first(1, kt, hkv), heads_first(2, vt, hkv)
    decays = betas = None
    if gating:
        dt = ctx.type_of(4)
        if len(dt.shape) != 3 or dt.shape[:2] != (b, steps) or dt.shape[2] not in (hkv, hkv * dk):
            ctx.fail(f"decay {dt} must have shape ({b}, {steps}, {hkv}) or "
                     f"({b}, {steps}, {hkv * dk})")
        # per head: (b, t, h) -> (b, h, t, 1); per key dimension: (b, h, t, dk)
        per = 1 if dt.shape[2] == hkv else dk
        decay = call("reshape", ctx.input(4), newshape=[b, steps, hkv, per])
        decay = _cast_to(call("transpose", decay, axes=[0, 2, 1, 3]), dt.dtype, f32)
        decays = [call("expand_dims", call("exp", g), axis=3) for g in _steps(decay, steps)]
    if delta:
        bt = ctx.type_of(5)
        if len(bt.shape) != 3 or bt.shape[:2] != (b, steps) or bt.shape[2] not in (hkv, 1):
            ctx.fail(f"beta {bt} must have shape ({b}, {steps}, {hkv}) or ({b}, {steps}, 1)")
        beta = call("reshape", ctx.input(5), newshape=[b, steps, bt.shape[2], 1])
        betas = _steps(_cast_to(call("transpose", beta, axes=[0, 2, 1, 3]), bt.dtype, f32),
                       steps)
    state_shape = (b, hkv, dk, dv)
    if ctx.has_input(3):
        pt = ctx.type_of(3)
        if pt.shape != state_shape or pt.dtype not in _FLOATS:
            ctx.fail(f"past_state {pt} must be a float tensor of shape {state_shape}")
        state_dtype = pt.dtype
        state = _cast_to(ctx.input(3), pt.dtype, f32)
    else:
        state_dtype = qt.dtype
        state = _typed(np.zeros(state_shape), f32)
    scale = float(ctx.attr("scale", 0.0)) or 1.0 / math.sqrt(dk)
    scale_c = _typed(scale, f32)
    outs = []
    for i, (q_t, k_t, v_t) in enumerate(zip(_steps(q4, steps), _steps(k4, steps),
                                            _steps(v4, steps), strict=True)):
        if decays is not None:
            state = call("multiply", state, decays[i])
        if betas is not None:  # the delta rule writes only what the state does not recall
            recalled = call("matmul", call("expand_dims", k_t, axis=2), state)
            v_t = call("multiply", betas[i],
                       call("subtract", v_t, call("squeeze", recalled, axis=[2])))
        outer = call("multiply", call("expand_dims", k_t, axis=3),
                     call("expand_dims", v_t, axis=2))
        state = call("add", state, outer)
        read = _repeat_heads(state, state_shape, hq // hkv)
        o_t = call("matmul", call("expand_dims", q_t, axis=2), read)  # (b, hq, 1, dv)
        outs.append(call("multiply", o_t, scale_c))
    y = _concat(outs, axis=2)  # (b, hq, t, dv)
    y = call("reshape", call("transpose", y, axes=[0, 2, 1, 3]), newshape=[b, steps, hq * dv])
    return _outputs(ctx, _cast_to(y, f32, qt.dtype), _cast_to(state, f32, state_dtype))
