"""Attention (opsets 23-25), RotaryEmbedding (23), LinearAttention and CausalConvWithState
(27) against onnxruntime, or against ONNX's reference implementation where onnxruntime lacks a
feature: 3-D and 4-D inputs, grouped-query heads, bool and float masks (short ones padded,
given at run time or as constants), is_causal with and without a cache, scale, softcap,
softmax_precision, past/present key and value, every qk_matmul_output_mode, nonpad_kv_seqlen,
sliding windows; rotary interleaving, partial rotation and position ids; every linear-attention
update rule; and the errors."""

from __future__ import annotations

import irpass
import numpy as np
import onnx_cases
import pytest
from irpass_onnx import OnnxImportError, from_onnx
from irpass_onnx.testing import assert_outputs_close
from irpass_onnx.testing import run_onnxruntime as run_ort
from onnx import helper
from onnx.reference import ReferenceEvaluator
from onnx_cases import rand

_ATTN_INPUTS = ("Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen")
_ATTN_OUTPUTS = ("Y", "present_key", "present_value", "qk")


def _run(op, inputs, input_names, output_names, opset, ref="ort", rtol=1e-4, atol=1e-5,
         consts=(), **attrs):
    """Import a one-node model, evaluate it and compare every output with ``ref``; the
    inputs named in ``consts`` are initializers (known at import)."""
    names = [n if n in inputs else "" for n in input_names]
    while names and not names[-1]:
        names.pop()
    node = helper.make_node(op, names, list(output_names), **attrs)
    feeds = {n: inputs[n] for n in names if n and n not in consts}
    dtype = helper.np_dtype_to_tensor_dtype(inputs[input_names[0]].dtype)
    model = onnx_cases.make_model(
        [node], feeds, {n: dtype for n in output_names if n}, opset,
        {n: inputs[n] for n in consts})
    got = irpass.evaluate(from_onnx(model), **feeds)
    got = list(got) if isinstance(got, tuple) else [got]
    if ref == "ort":
        want = run_ort(model, feeds)
    else:
        want = ReferenceEvaluator(model).run(None, feeds)
    assert len(got) == len(want) == len([n for n in output_names if n])
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        assert_outputs_close([g], [w], rtol=rtol, atol=atol, scaled_atol=atol)


def attention(inputs, outputs=("Y",), opset=23, ref="ort", consts=(), **attrs):
    _run("Attention", inputs, _ATTN_INPUTS, outputs, opset, ref, consts=consts, **attrs)


def qkv(b=2, hq=4, hkv=4, sq=3, skv=5, d=8, dv=None, rank=4, seed=0, dtype="float32"):
    dv = d if dv is None else dv
    if rank == 4:
        return {"Q": rand(b, hq, sq, d, seed=seed, dtype=dtype),
                "K": rand(b, hkv, skv, d, seed=seed + 1, dtype=dtype),
                "V": rand(b, hkv, skv, dv, seed=seed + 2, dtype=dtype)}
    return {"Q": rand(b, sq, hq * d, seed=seed, dtype=dtype),
            "K": rand(b, skv, hkv * d, seed=seed + 1, dtype=dtype),
            "V": rand(b, skv, hkv * dv, seed=seed + 2, dtype=dtype)}


def _heads(rank, hq, hkv):
    return {"q_num_heads": hq, "kv_num_heads": hkv} if rank == 3 else {}


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("hq, hkv, dv", [(4, 4, 8), (4, 2, 8), (4, 1, 6), (2, 2, 3)])
def test_attention_heads_and_scale(rank, hq, hkv, dv) -> None:
    inputs = qkv(hq=hq, hkv=hkv, dv=dv, rank=rank)
    attention(inputs, **_heads(rank, hq, hkv))
    attention(inputs, scale=0.3, **_heads(rank, hq, hkv))


# ONNX's reference cannot compose a 1-D mask with is_causal
@pytest.mark.parametrize("mask_shape, causal", [
    (shape, causal) for shape in [(3, 5), (2, 1, 3, 5), (4, 3, 5), (5,), (3, 4)]
    for causal in (0, 1) if not (len(shape) == 1 and causal)])
@pytest.mark.parametrize("kind", ["float", "bool"])
def test_attention_masks(mask_shape, kind, causal) -> None:
    inputs = qkv()
    rng = np.random.default_rng(3)
    if kind == "bool":
        mask = rng.random(mask_shape) < 0.7
        mask[..., 0] = True  # every row sees a key (rows that see none are tested below)
    else:
        mask = rng.standard_normal(mask_shape).astype("float32")
    inputs["attn_mask"] = mask
    # a mask shorter than the keys, (3, 4), is padded with masked-out keys
    # (onnxruntime takes neither a short nor a 1-D mask)
    short = mask_shape[-1] < 5 or len(mask_shape) == 1
    attention(inputs, is_causal=causal, ref="onnx" if short else "ort")


def test_attention_fully_masked_rows_are_zero() -> None:
    inputs = qkv(sq=3, skv=3)
    inputs["attn_mask"] = np.array([[True, False, False], [False, False, False],
                                    [True, True, True]])
    for causal in (0, 1):
        for consts in ((), ("attn_mask",)):  # a constant mask's rows are found at import
            attention(inputs, outputs=("Y", "", "", "qk"), is_causal=causal, ref="onnx",
                      qk_matmul_output_mode=3, consts=consts)
    attention(dict(qkv(sq=4, skv=3)), is_causal=1)  # more queries than keys: row 0 sees one


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_past_and_present(rank, causal) -> None:
    inputs = qkv(hq=4, hkv=2, sq=2, skv=2, rank=rank)
    inputs["past_key"] = rand(2, 2, 3, 8, seed=7)
    inputs["past_value"] = rand(2, 2, 3, 8, seed=8)
    inputs["attn_mask"] = rand(2, 5, seed=9)
    attention(inputs, outputs=_ATTN_OUTPUTS, is_causal=causal, **_heads(rank, 4, 2))


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("softcap", [0.0, 2.0])
def test_attention_qk_matmul_output_modes(mode, softcap) -> None:
    inputs = qkv()
    inputs["attn_mask"] = rand(3, 5, seed=4)
    # onnxruntime reports the raw product in mode 0 also with a softcap, as the spec says;
    # ONNX's reference reports the capped one there
    attention(inputs, outputs=("Y", "", "", "qk"), qk_matmul_output_mode=mode, softcap=softcap)


def test_attention_softmax_precision_and_float16() -> None:
    inputs = qkv(dtype="float16")
    attention(inputs, is_causal=1, rtol=1e-3, atol=1e-3)
    attention(inputs, softmax_precision=1, rtol=1e-3, atol=1e-3)
    attention(qkv(dtype="float64"), is_causal=1)


@pytest.mark.parametrize("causal", [0, 1])
def test_attention_nonpad_kv_seqlen(causal) -> None:
    inputs = qkv(hq=4, hkv=2, sq=2, skv=6)
    inputs["nonpad_kv_seqlen"] = np.array([6, 3], dtype=np.int64)
    attention(inputs, opset=24, is_causal=causal, ref="onnx")
    inputs["attn_mask"] = rand(2, 4, seed=5)  # padded to the 6 keys
    attention(inputs, opset=24, is_causal=causal, ref="onnx")


@pytest.mark.parametrize("left, right, causal", [(1, -1, 0), (2, 1, 0), (-1, 0, 0), (1, 0, 1),
                                                 (0, 2, 0)])
@pytest.mark.parametrize("cache", ["none", "past", "nonpad"])
def test_attention_sliding_window(left, right, causal, cache) -> None:
    inputs = qkv(sq=3, skv=4)
    if cache == "past":
        inputs["past_key"] = rand(2, 4, 2, 8, seed=7)
        inputs["past_value"] = rand(2, 4, 2, 8, seed=8)
    elif cache == "nonpad":
        inputs["nonpad_kv_seqlen"] = np.array([4, 3], dtype=np.int64)
    attention(inputs, opset=25, ref="onnx", left_window_size=left, right_window_size=right,
              is_causal=causal)


def _fails(inputs, match, opset=23, **attrs):
    names = [n if n in inputs else "" for n in _ATTN_INPUTS]
    while not names[-1]:
        names.pop()
    node = helper.make_node("Attention", names, ["Y"], **attrs)
    model = onnx_cases.make_model([node], {n: inputs[n] for n in names if n},
                                  {"Y": 1}, opset)
    with pytest.raises(OnnxImportError, match=match):
        from_onnx(model)


def test_attention_errors() -> None:
    _fails(qkv(rank=3), "q_num_heads and kv_num_heads")
    _fails(qkv(hq=3, hkv=2), "not a multiple of 2 key/value heads")
    _fails(qkv(rank=3, hq=4, hkv=2), "not a multiple of 3 heads", q_num_heads=3, kv_num_heads=2)
    _fails(qkv(), "must not be set for 4-D", opset=25, q_num_heads=4, kv_num_heads=4)
    _fails(dict(qkv(), attn_mask=rand(3, 7)), "longer than the 5 keys")
    inputs = qkv()
    inputs["past_key"] = rand(2, 4, 3, 8)
    _fails(inputs, "past_key and past_value must be given together")
    _fails(dict(qkv(), attn_mask=np.zeros((3, 5), "int32")), "attn_mask has dtype int32")
    ints = {k: v.astype("int32") for k, v in qkv().items()}
    _fails(ints, "Q .input 0. has dtype int32")
    _fails(qkv(), "qk_matmul_output_mode 4", qk_matmul_output_mode=4)
    _fails(qkv(), "scale -1.0 must not be negative", scale=-1.0)


# -- RotaryEmbedding ---------------------------------------------------------------------------

_ROPE_INPUTS = ("X", "cos_cache", "sin_cache", "position_ids")


def rope_inputs(rank, rot, positions, b=2, heads=3, seq=4, head=8, dtype="float32"):
    x = rand(b, heads, seq, head, dtype=dtype)
    if rank == 3:
        x = x.transpose(0, 2, 1, 3).reshape(b, seq, heads * head).copy()
    half = (rot or head) // 2
    if positions:
        angles = rand(10, half, seed=1)
        pos = np.random.default_rng(2).integers(0, 10, size=(b, seq)).astype(np.int64)
        return {"X": x, "cos_cache": np.cos(angles).astype(dtype),
                "sin_cache": np.sin(angles).astype(dtype), "position_ids": pos}
    angles = rand(b, seq, half, seed=1)
    return {"X": x, "cos_cache": np.cos(angles).astype(dtype),
            "sin_cache": np.sin(angles).astype(dtype)}


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rot", [0, 4])
@pytest.mark.parametrize("positions", [True, False])
def test_rotary_embedding(rank, interleaved, rot, positions) -> None:
    attrs = {"interleaved": interleaved}
    if rot:
        attrs["rotary_embedding_dim"] = rot
    if rank == 3:
        attrs["num_heads"] = 3
    _run("RotaryEmbedding", rope_inputs(rank, rot, positions), _ROPE_INPUTS, ["Y"], 23, **attrs)


def test_rotary_embedding_float16() -> None:
    _run("RotaryEmbedding", rope_inputs(4, 0, True, dtype="float16"), _ROPE_INPUTS, ["Y"], 23,
         rtol=1e-3, atol=1e-3)


def test_rotary_embedding_errors() -> None:
    def fails(inputs, match, **attrs):
        node = helper.make_node("RotaryEmbedding", list(inputs), ["Y"], **attrs)
        model = onnx_cases.make_model([node], inputs, {"Y": 1}, 23)
        with pytest.raises(OnnxImportError, match=match):
            from_onnx(model)

    fails(rope_inputs(3, 0, True), "needs num_heads")
    fails(rope_inputs(4, 0, True), "rotary_embedding_dim 3 must be even", rotary_embedding_dim=3)
    fails(rope_inputs(4, 4, True), r"must have shape \(max_position \+ 1, 4\)")
    fails(rope_inputs(4, 0, False, seq=4), r"must have shape \(2, 4, 2\)", rotary_embedding_dim=4)


# -- LinearAttention and CausalConvWithState (opset 27; onnxruntime lacks them) ----------------

_LA_INPUTS = ("query", "key", "value", "past_state", "decay", "beta")


@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
@pytest.mark.parametrize("hq, hkv", [(2, 2), (4, 2), (3, 1)])
@pytest.mark.parametrize("past", [False, True])
def test_linear_attention(rule, hq, hkv, past) -> None:
    b, t, dk, dv = 2, 3, 4, 5
    inputs = {"query": rand(b, t, hq * dk, seed=1), "key": rand(b, t, hkv * dk, seed=2) / 2,
              "value": rand(b, t, hkv * dv, seed=3)}
    if past:
        inputs["past_state"] = rand(b, hkv, dk, dv, seed=4)
    if rule in ("gated", "gated_delta"):  # per key dimension for 2 heads, else per head
        width = hkv * dk if hkv == 2 else hkv
        inputs["decay"] = -np.abs(rand(b, t, width, seed=5))
    if rule in ("delta", "gated_delta"):
        inputs["beta"] = 1 / (1 + np.exp(-rand(b, t, 1 if hq == 3 else hkv, seed=6)))
    _run("LinearAttention", inputs, _LA_INPUTS, ["y", "state"], 27, ref="onnx",
         update_rule=rule, q_num_heads=hq, kv_num_heads=hkv)
    _run("LinearAttention", inputs, _LA_INPUTS, ["y"], 27, ref="onnx", scale=0.7,
         update_rule=rule, q_num_heads=hq, kv_num_heads=hkv)


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("activation", ["none", "silu"])
@pytest.mark.parametrize("bias, past", [(False, False), (True, False), (True, True)])
def test_causal_conv_with_state(k, activation, bias, past) -> None:
    b, c, n = 2, 3, 5
    inputs = {"input": rand(b, c, n), "weight": rand(c, 1, k, seed=1)}
    if bias:
        inputs["bias"] = rand(c, seed=2)
    if past:
        inputs["past_state"] = rand(b, c, k - 1, seed=3)
    _run("CausalConvWithState", inputs, ("input", "weight", "bias", "past_state"),
         ["y", "state"], 27, ref="onnx", activation=activation)


def test_linear_attention_and_causal_conv_errors() -> None:
    def fails(op, inputs, match, **attrs):
        node = helper.make_node(op, list(inputs), ["y"], **attrs)
        model = onnx_cases.make_model([node], inputs, {"y": 1}, 27)
        with pytest.raises(OnnxImportError, match=match):
            from_onnx(model)

    x = rand(1, 2, 4)
    fails("LinearAttention", {"query": x, "key": x, "value": x}, "requires the decay input",
          q_num_heads=1, kv_num_heads=1)
    fails("LinearAttention", {"query": x, "key": x, "value": x}, "positive multiple",
          q_num_heads=1, kv_num_heads=2, update_rule="linear")
    fails("CausalConvWithState", {"input": rand(1, 3, 4), "weight": rand(3, 2, 2)},
          r"weight .* must be float32 of shape \(3, 1, k\)")
    fails("CausalConvWithState", {"input": rand(1, 3, 4), "weight": rand(3, 1, 2)},
          "activation 'relu'", activation="relu")
