"""The fused transformer ops through ONNX (issue 21): import and export.

Import: ``Gelu``, ``HardSwish``, ``Swish`` (alpha 1), ``RMSNormalization``, ``Attention`` (4-D,
no cache) and ``RotaryEmbedding`` (full rotation) become ``nn.gelu``, ``nn.hard_swish``,
``nn.silu``, ``nn.rms_norm``, ``nn.attention`` and ``nn.rotary_embedding``, and the imported
module computes what onnxruntime computes for the node; forms the ops have no place for keep
their decomposition. Export: each op at an old opset (its decomposition) and at the one that
has the ONNX op (one node), valid under the full checker, run in onnxruntime against
``irpass.evaluate``.
"""

from __future__ import annotations

from collections import Counter

import irpass
import numpy as np
import onnx
import pytest
from irpass import op
from irpass.ir import Call, Function, IRModule, Op, post_order_visit, var
from irpass.ir.dims import SizeVar
from irpass_onnx import from_onnx
from irpass_onnx.export import to_onnx
from irpass_onnx.testing import assert_outputs_close
from irpass_onnx.testing import run_onnxruntime as run_ort
from onnx import helper
from onnx.reference import ReferenceEvaluator

pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(2121)
FUSED = {"nn.gelu", "nn.silu", "nn.hard_swish", "nn.rms_norm", "nn.attention",
         "nn.rotary_embedding"}


def normal(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def op_counts(mod: IRModule) -> Counter:
    counts: Counter = Counter()
    post_order_visit(mod["main"], lambda n: counts.update([n.op.name])
                     if isinstance(n, Call) and isinstance(n.op, Op) else None)
    return counts


# -- import ------------------------------------------------------------------------------------


def one_node_model(op_type: str, inputs: dict[str, np.ndarray | None], opset: int,
                   n_outputs: int = 1, **attrs) -> onnx.ModelProto:
    names = [n if v is not None else "" for n, v in inputs.items()]
    given = {n: v for n, v in inputs.items() if v is not None}
    outs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, outs, **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for n, v in given.items()],
        # every output here has the dtype of the first input
        [helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(
            next(iter(given.values())).dtype), None) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def check_import(model: onnx.ModelProto, inputs: dict[str, np.ndarray], fused: str | None,
                 rtol: float = 1e-5, atol: float = 1e-6, reference: bool = False) -> IRModule:
    """Import ``model``: the fused op ``fused`` appears (or, with None, none of them does),
    and the module computes what onnxruntime does (ONNX's reference implementation with
    ``reference``, for what onnxruntime does not take)."""
    mod = from_onnx(model)
    found = set(op_counts(mod)) & FUSED
    assert found == ({fused} if fused else set()), found
    given = {k: v for k, v in inputs.items() if v is not None}
    got = irpass.evaluate(mod, **given)
    got = list(got) if isinstance(got, tuple) else [got]
    want = (ReferenceEvaluator(model).run(None, given) if reference
            else run_ort(model, given))
    assert_outputs_close(got, want, rtol=rtol, atol=atol, scaled_atol=atol)
    return mod


@pytest.mark.parametrize(("op_type", "opset", "attrs", "fused"), [
    ("Gelu", 20, {}, "nn.gelu"),
    ("Gelu", 20, {"approximate": "tanh"}, "nn.gelu"),
    ("HardSwish", 14, {}, "nn.hard_swish"),
    ("Swish", 24, {}, "nn.silu"),
    ("Swish", 24, {"alpha": 0.5}, None),  # another alpha: x * sigmoid(0.5 x), decomposed
])
def test_activation_imports_as_the_fused_op(op_type, opset, attrs, fused) -> None:
    x = np.concatenate([np.linspace(-7, 7, 57), normal(43) * 3]).astype("float32")
    mod = check_import(one_node_model(op_type, {"x": x}, opset, **attrs), {"x": x}, fused)
    if op_type == "Gelu":
        (call,) = [n for n in [mod["main"].body] if isinstance(n, Call)]
        assert call.attrs["approximate"] == attrs.get("approximate", "none")


@pytest.mark.parametrize(("axis", "scale_shape", "stash", "fused"), [
    (-1, (8,), 1, True),
    (-2, (8,), 1, True),  # a scale broadcasting to the normalized (5, 8)
    (1, (1, 5, 8), 1, True),  # leading 1s beyond the normalized rank
    (-1, (8,), 11, False),  # float64 statistics for float32 data: the op computes in float32
])
def test_rms_normalization_imports_as_rms_norm(axis, scale_shape, stash, fused) -> None:
    x, w = normal(2, 5, 8), normal(*scale_shape)
    model = one_node_model("RMSNormalization", {"x": x, "w": w}, 23, axis=axis, epsilon=1e-3,
                           stash_type=stash)
    mod = check_import(model, {"x": x, "w": w}, "nn.rms_norm" if fused else None)
    if fused:
        (call,) = [n for n in [mod["main"].body] if isinstance(n, Call)]
        assert call.attrs["axes"] == tuple(range(axis % 3, 3))
        assert call.attrs["epsilon"] == pytest.approx(1e-3)


def _qkv(hkv: int = 2, dtype: str = "float32"):
    return normal(2, 4, 3, 8, dtype=dtype), normal(2, hkv, 5, 8, dtype=dtype), \
        normal(2, hkv, 5, 6, dtype=dtype)


@pytest.mark.parametrize("case", ["plain", "gqa_bool_mask_causal", "short_float_mask_scale",
                                  "present_outputs", "fp16"])
def test_attention_4d_imports_as_nn_attention(case: str) -> None:
    q, k, v = _qkv(dtype="float16" if case == "fp16" else "float32")
    inputs: dict = {"q": q, "k": k, "v": v}
    attrs: dict = {}
    outputs = 1
    if case == "gqa_bool_mask_causal":
        inputs["m"] = RNG.random((2, 1, 3, 5)) < 0.7
        inputs["m"][..., 0] = True
        attrs["is_causal"] = 1
    elif case == "short_float_mask_scale":
        # 4 of the 5 keys: padded with -inf (onnxruntime refuses a short mask)
        inputs["m"] = normal(3, 4)
        attrs["scale"] = 0.2
    elif case == "present_outputs":
        outputs = 3
    model = one_node_model("Attention", inputs, 23, outputs, **attrs)
    tol = 2e-3 if case == "fp16" else 1e-5
    mod = check_import(model, inputs, "nn.attention", rtol=tol, atol=tol,
                       reference=case.startswith("short"))
    assert op_counts(mod)["nn.attention"] == 1 and op_counts(mod)["nn.softmax"] == 0


@pytest.mark.parametrize("case", ["3d", "softcap", "past", "qk_output"])
def test_attention_forms_without_a_fused_op_keep_the_decomposition(case: str) -> None:
    q, k, v = _qkv()
    inputs: dict = {"q": q, "k": k, "v": v}
    attrs: dict = {}
    outputs = 1
    if case == "3d":
        inputs = {"q": normal(2, 3, 32), "k": normal(2, 5, 16), "v": normal(2, 5, 12)}
        attrs = {"q_num_heads": 4, "kv_num_heads": 2}
    elif case == "softcap":
        attrs["softcap"] = 2.0
    elif case == "past":
        inputs.update(m=None, pk=normal(2, 2, 2, 8), pv=normal(2, 2, 2, 6))
        outputs = 3
    else:
        outputs = 4
    model = one_node_model("Attention", inputs, 23, outputs, **attrs)
    check_import(model, inputs, None)


def _caches(positions: int, half: int) -> tuple[np.ndarray, np.ndarray]:
    theta = RNG.uniform(-3, 3, (positions, half))
    return np.cos(theta).astype("float32"), np.sin(theta).astype("float32")


@pytest.mark.parametrize(("rank", "interleaved", "position_ids"), [
    (4, 0, True), (4, 1, True), (3, 0, True), (4, 0, False), (3, 1, False)])
def test_rotary_embedding_imports_as_the_fused_op(rank, interleaved, position_ids) -> None:
    x = normal(2, 4, 3, 8) if rank == 4 else normal(2, 3, 16)
    attrs = {"interleaved": interleaved}
    if rank == 3:
        attrs["num_heads"] = 2
    if position_ids:
        cos, sin = _caches(10, 4)
        pos = np.array([[0, 1, 2], [5, 9, 3]], "int64")
    else:
        cos, sin = (c.reshape(2, 3, 4) for c in _caches(6, 4))
        pos = None
    inputs = {"x": x, "c": cos, "s": sin, "p": pos}
    check_import(one_node_model("RotaryEmbedding", inputs, 23, **attrs), inputs,
                 "nn.rotary_embedding")


def test_partial_rotary_embedding_keeps_the_decomposition() -> None:
    x = normal(2, 4, 3, 8)
    cos, sin = _caches(10, 2)
    inputs = {"x": x, "c": cos, "s": sin, "p": np.array([[0, 1, 2], [3, 4, 5]], "int64")}
    check_import(one_node_model("RotaryEmbedding", inputs, 23, rotary_embedding_dim=4),
                 inputs, None)


# -- export ------------------------------------------------------------------------------------


def fn(params, body) -> IRModule:
    return IRModule.from_expr(Function(params, body))


def export(mod: IRModule, opset: int, inputs: dict[str, np.ndarray],
           tol: float = 1e-5) -> list[str]:
    """Export at ``opset``, check it fully, run it in onnxruntime against irpass.evaluate;
    the op types of the graph's nodes."""
    model = to_onnx(mod, opset=opset)
    onnx.checker.check_model(model, full_check=True)
    expected = irpass.evaluate(mod, **inputs)
    got = run_ort(model, inputs)
    assert_outputs_close(got, [expected], rtol=tol, atol=tol, scaled_atol=tol)
    return [n.op_type for n in model.graph.node]


X = var("x", shape=(2, 3, 8))
XIN = {"x": np.concatenate([np.linspace(-6, 6, 24), normal(24) * 2]).astype("float32")
       .reshape(2, 3, 8)}


@pytest.mark.parametrize(("build", "old", "new", "old_types", "new_type"), [
    (lambda: op.nn.gelu(X), 17, 20, {"Mul", "Erf", "Add"}, "Gelu"),
    (lambda: op.nn.gelu(X, approximate="tanh"), 17, 20, {"Mul", "Add", "Sigmoid"}, "Gelu"),
    (lambda: op.nn.hard_swish(X), 13, 17, {"Mul", "HardSigmoid"}, "HardSwish"),
])
def test_activation_exports_as_one_node_or_its_decomposition(build, old, new, old_types,
                                                             new_type) -> None:
    mod = fn([X], build())
    types = export(mod, old, XIN)
    assert set(types) == old_types and len(types) <= 6, types
    assert export(mod, new, XIN) == [new_type]


def test_silu_exports_as_x_times_sigmoid_at_every_opset() -> None:
    # not Swish (opset 24): onnxruntime 1.32 has no Swish kernel in models of opset 25 or 26
    for opset in (17, 24, 26):
        assert sorted(export(fn([X], op.nn.silu(X)), opset, XIN)) == ["Mul", "Sigmoid"]


def test_gelu_decompositions_are_short() -> None:
    assert len(export(fn([X], op.nn.gelu(X)), 17, XIN)) == 5
    assert len(export(fn([X], op.nn.gelu(X, approximate="tanh")), 17, XIN)) == 6


def test_float16_gelu_decomposition_computes_in_float32() -> None:
    x = var("x", shape=(50,), dtype="float16")
    data = {"x": np.linspace(-6, 6, 50).astype("float16")}
    types = export(fn([x], op.nn.gelu(x)), 17, data, tol=1e-3)
    assert types.count("Cast") == 2 and "Erf" in types


@pytest.mark.parametrize(("axes", "w_shape", "trailing"), [
    ((-1,), (8,), True), ((1, 2), (3, 8), True), ((2, 1), (8, 3), True), ((1,), (3,), False)])
def test_rms_norm_exports(axes, w_shape, trailing) -> None:
    w = irpass.const(normal(*w_shape))
    mod = fn([X], op.nn.rms_norm(X, w, axes=axes, epsilon=1e-4))
    old = export(mod, 17, XIN)
    assert "RMSNormalization" not in old and len(old) <= 6, old
    new = export(mod, 23, XIN)
    assert new == (["RMSNormalization"] if trailing else old), new


def test_rms_norm_of_a_runtime_weight_and_of_float16() -> None:
    w = var("w", shape=(8,))
    mod = fn([X, w], op.nn.rms_norm(X, w))
    inputs = {**XIN, "w": normal(8)}
    assert export(mod, 23, inputs) == ["RMSNormalization"]
    export(mod, 17, inputs)
    xh, wh = var("x", shape=(2, 3, 8), dtype="float16"), var("w", shape=(8,), dtype="float16")
    half = {"x": (XIN["x"] * 100).astype("float16"), "w": normal(8, dtype="float16")}
    mod = fn([xh, wh], op.nn.rms_norm(xh, wh))
    for opset in (17, 23):  # squares of 600 overflow float16: computed in float32
        export(mod, opset, half, tol=2e-3)


def _attention_module(hkv: int, mask: str, causal: bool, scale=None):
    q, k, v = var("q", shape=(2, 4, 3, 8)), var("k", shape=(2, hkv, 5, 8)), \
        var("v", shape=(2, hkv, 5, 6))
    params = [q, k, v]
    inputs = dict(zip(["q", "k", "v"], _qkv(hkv), strict=True))
    m = None
    if mask == "bool_input":
        m = var("m", shape=(2, 1, 3, 5), dtype="bool")
        params.append(m)
        inputs["m"] = RNG.random((2, 1, 3, 5)) < 0.6
        inputs["m"][0, 0, 1] = False  # a row with nothing to attend to: zeros
    elif mask == "float_input":
        m = var("m", shape=(3, 5))
        params.append(m)
        inputs["m"] = normal(3, 5)
        inputs["m"][2] = -np.inf
    elif mask == "bool_const":
        data = RNG.random((3, 5)) < 0.6
        data[1] = False
        m = irpass.const(data)
    return fn(params, op.nn.attention(*params[:3], m, scale=scale, is_causal=causal)), inputs


@pytest.mark.parametrize(("hkv", "mask", "causal", "scale"), [
    (4, "none", False, None), (2, "none", True, 0.3), (1, "bool_input", True, None),
    (2, "float_input", False, None), (4, "bool_const", True, None)])
def test_attention_exports(hkv, mask, causal, scale) -> None:
    mod, inputs = _attention_module(hkv, mask, causal, scale)
    old = export(mod, 17, inputs)
    assert "Softmax" in old and "Attention" not in old
    # the group's query rows share one matmul: no key or value is repeated
    assert "Expand" not in old and old.count("MatMul") == 2, old
    if mask in ("bool_input", "float_input"):
        assert "Where" in old  # the guard that zeroes rows with nothing to attend to
    assert export(mod, 23, inputs) == ["Attention"]


def _stacked_attention(masks) -> IRModule:
    """Attention layers one after the other, layer i with constant mask ``masks[i]``."""
    q, k, v = (var(n, shape=(1, 2, 12, 4)) for n in "qkv")
    y = q
    for m in masks:
        y = op.nn.attention(y, k, v, m, is_causal=True)
    return fn([q, k, v], y)


def _bias_initializers(mod: IRModule) -> int:
    """The 12x12 initializers of ``mod`` exported at opset 17 (after checking the export)."""
    export(mod, 17, {n: normal(1, 2, 12, 4) for n in "qkv"})
    return sum(list(t.dims) == [12, 12] for t in to_onnx(mod, opset=17).graph.initializer)


def test_layers_sharing_a_mask_write_its_bias_once() -> None:
    # each layer's decomposition computes the same bias array from the shared mask; it is one
    # initializer (a SmolLM-shaped Llama wrote 30 copies of its 128x128 causal bias)
    mask = irpass.const(RNG.random((12, 12)) < 0.8)
    assert _bias_initializers(_stacked_attention([mask] * 3)) == 1


def test_layers_with_their_own_masks_keep_them_even_when_the_hashes_collide(monkeypatch):
    from irpass_onnx.export import builder

    monkeypatch.setattr(builder.zlib, "crc32", lambda data: 0)  # every array: one hash
    masks = [irpass.const(RNG.random((12, 12)) < 0.8) for _ in range(2)]
    assert _bias_initializers(_stacked_attention(masks)) == 2  # each layer its own bias


def test_attention_decomposition_with_symbolic_sizes() -> None:
    b, s = SizeVar("b"), SizeVar("s")
    q, k, v = (var(n, shape=(b, 2, s, 4)) for n in "qkv")
    mod = fn([q, k, v], op.nn.attention(q, k, v, is_causal=True))
    for bs, ss in ((1, 1), (3, 4)):
        inputs = {n: normal(bs, 2, ss, 4) for n in "qkv"}
        assert "Trilu" in export(mod, 17, inputs)
        assert export(mod, 23, inputs) == ["Attention"]


def _rope_module(cos_kind: str, interleaved: bool, layers: int = 1):
    x = var("x", shape=(2, 4, 3, 8))
    params = [x]
    theta = RNG.uniform(-3, 3, (2, 1, 3, 4))
    wide = (lambda t: np.repeat(t, 2, -1)) if interleaved else (lambda t: np.concatenate(
        [t, t], -1))
    if cos_kind == "const":
        cos, sin = irpass.const(wide(np.cos(theta)).astype("float32")), \
            irpass.const(wide(np.sin(theta)).astype("float32"))
        inputs = {}
    elif cos_kind == "computed":  # as Hugging Face models compute them
        f = var("f", shape=(2, 1, 3, 4))
        params.append(f)
        emb = op.concatenate([f, f], axis=-1)
        cos, sin = op.cos(emb), op.sin(emb)
        inputs = {"f": theta.astype("float32")}
    else:  # any tensors: the halves may differ
        cos, sin = var("c", shape=(2, 1, 3, 8)), var("s", shape=(2, 1, 3, 8))
        params += [cos, sin]
        inputs = {"c": normal(2, 1, 3, 8), "s": normal(2, 1, 3, 8)}
    y = x
    for _ in range(layers):
        y = op.nn.rotary_embedding(y, cos, sin, interleaved=interleaved)
    inputs["x"] = normal(2, 4, 3, 8)
    return fn(params, y), inputs


@pytest.mark.parametrize("interleaved", [False, True])
def test_rotary_embedding_exports(interleaved: bool) -> None:
    mod, inputs = _rope_module("const", interleaved)
    old = export(mod, 17, inputs)
    assert "RotaryEmbedding" not in old and len(old) <= (7 if interleaved else 5), old
    assert export(mod, 23, inputs) == ["RotaryEmbedding"]


def test_rotary_embedding_slices_computed_caches_once_for_every_layer() -> None:
    mod, inputs = _rope_module("computed", False, layers=3)
    types = export(mod, 23, inputs)
    assert types.count("RotaryEmbedding") == 3
    assert types.count("Slice") == 2, types  # one for cos, one for sin
    assert types.count("Concat") == 1  # the model's own concatenate only


def test_rotary_embedding_with_caches_of_unknown_halves_is_decomposed() -> None:
    mod, inputs = _rope_module("runtime", False, layers=2)
    types = export(mod, 23, inputs)
    assert "RotaryEmbedding" not in types
    assert types.count("Mul") == 2 * 2 + 1, types  # the signed sin once, shared


def test_rotary_embedding_of_3d_data_and_a_batch_shared_cache() -> None:
    x = var("x", shape=(2, 3, 8))
    theta = RNG.uniform(-3, 3, (3, 4))
    cos = irpass.const(np.concatenate([np.cos(theta)] * 2, -1).astype("float32"))
    sin = irpass.const(np.concatenate([np.sin(theta)] * 2, -1).astype("float32"))
    mod = fn([x], op.nn.rotary_embedding(x, cos, sin))
    model = to_onnx(mod, opset=23)
    (node,) = model.graph.node
    assert node.op_type == "RotaryEmbedding" and len(node.input) == 4  # with position_ids
    export(mod, 23, {"x": normal(2, 3, 8)})
