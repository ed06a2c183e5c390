"""The fused transformer ops of issue 21: ``nn.gelu``, ``nn.silu``, ``nn.hard_swish``,
``nn.rms_norm``, ``nn.attention`` and ``nn.rotary_embedding``.

Each kernel is checked against a formula written here (loops, complex numbers, the
math module's erf: not the kernel's own code) over float16/32/64, and against
onnxruntime running the ONNX op it stands for (Gelu-20, Swish-24, HardSwish-14,
RMSNormalization-23, Attention-23, RotaryEmbedding-23); then the type relations on
symbolic shapes, the errors for bad input, the text form and ``irpass.evaluate``.
"""

from __future__ import annotations

import math

import irpass
import numpy as np
import pytest
from irpass import op
from irpass.ir import Call, Function, IRModule, Op, TensorType, parse, structural_equal, var
from irpass.ir.dims import SizeVar
from irpass.ir.type_infer import infer_type
from op_checks import infer, run, t

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
helper = onnx.helper

RNG = np.random.default_rng(21)
X, W, Q, K, V, M = (var(n) for n in ("x", "w", "q", "k", "v", "m"))
FLOATS = ["float16", "float32", "float64"]
# what each dtype's result may differ from the float64 formula by (relative to ~1 values)
TOL = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}


def normal(*shape: int, dtype: str = "float32", scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def close(got: np.ndarray, want: np.ndarray, dtype: str, factor: float = 1.0) -> None:
    assert got.dtype == np.dtype(dtype)
    tol = TOL[dtype] * factor
    np.testing.assert_allclose(got.astype("float64"), want, rtol=tol, atol=tol)


# -- onnxruntime -------------------------------------------------------------------------------


def ort_run(op_type: str, inputs: dict[str, np.ndarray | None], opset: int, **attrs) -> np.ndarray:
    """One ``op_type`` node in onnxruntime (optimizations off); ``None`` inputs are left
    out (an empty name), the output has the first input's dtype."""
    names = [n if v is not None else "" for n, v in inputs.items()]
    given = {n: v for n, v in inputs.items() if v is not None}
    node = helper.make_node(op_type, names, ["out"], **attrs)
    first = next(iter(given.values()))
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for n, v in given.items()],
        [helper.make_tensor_value_info("out", helper.np_dtype_to_tensor_dtype(first.dtype), None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, given)[0]


# -- the activations ---------------------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=["float64"])


def gelu_formula(x: np.ndarray, approximate: str) -> np.ndarray:
    x = x.astype("float64")
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return x * 0.5 * (1 + _erf(x / math.sqrt(2)))


ACTIVATIONS = {
    "gelu": (lambda x: op.nn.gelu(x), lambda x: gelu_formula(x, "none")),
    "gelu_tanh": (lambda x: op.nn.gelu(x, approximate="tanh"), lambda x: gelu_formula(x, "tanh")),
    "silu": (op.nn.silu, lambda x: x.astype("float64") / (1 + np.exp(-x.astype("float64")))),
    # relu6(x + 3) / 6 * x: another way to write hard swish
    "hard_swish": (op.nn.hard_swish,
                   lambda x: x * np.minimum(np.maximum(x.astype("float64") + 3, 0), 6) / 6),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_matches_its_formula(name: str, dtype: str) -> None:
    build, formula = ACTIVATIONS[name]
    x = np.concatenate([np.linspace(-8, 8, 161), normal(200, scale=3, dtype="float64"),
                        [-3.0, 3.0, 0.0, -0.0, 40.0, -40.0]]).astype(dtype)
    close(run(build(X), x), formula(x), dtype)


@pytest.mark.parametrize(("build", "onnx_op", "opset", "attrs"), [
    (lambda x: op.nn.gelu(x), "Gelu", 20, {}),
    (lambda x: op.nn.gelu(x, approximate="tanh"), "Gelu", 20, {"approximate": "tanh"}),
    (op.nn.silu, "Swish", 24, {}),
    (op.nn.hard_swish, "HardSwish", 14, {}),
])
def test_activation_matches_onnxruntime(build, onnx_op: str, opset: int, attrs: dict) -> None:
    x = np.concatenate([np.linspace(-6, 6, 241), normal(300, scale=3)]).astype("float32")
    np.testing.assert_allclose(run(build(X), x), ort_run(onnx_op, {"x": x}, opset, **attrs),
                               rtol=1e-6, atol=1e-6)


def test_activations_are_elementwise_float_ops() -> None:
    for name in ("nn.gelu", "nn.silu", "nn.hard_swish"):
        assert Op.get(name).pattern == irpass.ir.OpPattern.ELEMWISE
        with pytest.raises(TypeError, match=rf"^{name}: data must have a floating-point dtype"):
            infer(Call(Op.get(name), [X]), t(2, dtype="int32"))


def test_gelu_approximate_must_be_none_or_tanh() -> None:
    with pytest.raises(ValueError, match=r"nn\.gelu\.approximate must be one of \['none', "
                                         r"'tanh'\], got 'fast'"):
        op.nn.gelu(X, approximate="fast")


# -- rms_norm ----------------------------------------------------------------------------------


def rms_formula(x: np.ndarray, w: np.ndarray, axes: tuple[int, ...], eps: float) -> np.ndarray:
    """A loop over the positions outside ``axes``, each normalized on its own."""
    x = x.astype("float64")
    axes = tuple(sorted(a % x.ndim for a in axes))
    w = w.astype("float64")
    out = np.empty_like(x)
    outer = [d for d in range(x.ndim) if d not in axes]
    for idx in np.ndindex(*(x.shape[d] for d in outer)):
        sel: list = [slice(None)] * x.ndim
        for d, i in zip(outer, idx, strict=True):
            sel[d] = i
        block = x[tuple(sel)]
        out[tuple(sel)] = block / math.sqrt(float((block**2).sum()) / block.size + eps)
    return out * w


@pytest.mark.parametrize("dtype", FLOATS)
def test_rms_norm_matches_its_formula(dtype: str) -> None:
    x, w = normal(2, 3, 8, dtype=dtype), normal(8, dtype=dtype)
    close(run(op.nn.rms_norm(X, W), x, w), rms_formula(x, w, (-1,), 1e-5), dtype, 4)
    # two axes; weight's dims in the order axes lists them
    w2 = normal(8, 3, dtype=dtype)
    close(run(op.nn.rms_norm(X, W, axes=(2, 1), epsilon=0.5), x, w2),
          rms_formula(x, w2.T, (1, 2), 0.5), dtype, 4)


def test_rms_norm_matches_onnxruntime() -> None:
    x, w = normal(2, 3, 4, 5), normal(4, 5)
    want = ort_run("RMSNormalization", {"x": x, "w": w}, 23, axis=-2, epsilon=1e-3)
    np.testing.assert_allclose(run(op.nn.rms_norm(X, W, axes=(-2, -1), epsilon=1e-3), x, w),
                               want, rtol=1e-5, atol=1e-5)


def test_rms_norm_errors_name_the_op_and_operand() -> None:
    call = op.nn.rms_norm(X, W, axes=(1,))
    with pytest.raises(ValueError, match=r"^nn\.rms_norm: weight must have shape \(3,\) "
                                         r"\(data \(2, 3\) at axes \(1,\)\), got \(2,\)"):
        infer(call, t(2, 3), t(2))
    with pytest.raises(TypeError, match=r"^nn\.rms_norm: weight has dtype float16 but data "
                                        "has float32"):
        infer(call, t(2, 3), t(3, dtype="float16"))
    with pytest.raises(ValueError, match=r"^nn\.rms_norm: axes 2 is out of range"):
        infer(op.nn.rms_norm(X, W, axes=(2,)), t(2, 3), t(3))
    with pytest.raises(ValueError, match=r"nn\.rms_norm\.axes must name at least one axis"):
        op.nn.rms_norm(X, W, axes=())
    with pytest.raises(ValueError, match=r"nn\.rms_norm\.epsilon must be >= 0"):
        op.nn.rms_norm(X, W, epsilon=-1.0)


# -- attention ---------------------------------------------------------------------------------


def attention_formula(q, k, v, mask=None, scale=None, is_causal=False) -> np.ndarray:
    """A loop over batch, head and query: each row's softmax written out."""
    q, k, v = (a.astype("float64") for a in (q, k, v))
    b_, h_, sq, d = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    scale = 1 / math.sqrt(d) if scale is None else scale
    if mask is not None:
        mask = np.broadcast_to(mask, (b_, h_, sq, skv))
    out = np.zeros((b_, h_, sq, v.shape[3]))
    for b in range(b_):
        for h in range(h_):
            g = h // (h_ // hkv)
            for i in range(sq):
                logits, allowed = [], []
                for j in range(skv):
                    s = float(q[b, h, i] @ k[b, g, j]) * scale
                    ok = not (is_causal and j > i)
                    if mask is not None:
                        m = mask[b, h, i, j]
                        if m.dtype == bool:
                            ok = ok and bool(m)
                        else:
                            s += float(m)
                            ok = ok and m != -np.inf
                    logits.append(s)
                    allowed.append(ok)
                if not any(allowed):
                    continue  # nothing to attend to: zeros (ONNX's reference)
                top = max(s for s, ok in zip(logits, allowed, strict=True) if ok)
                e = [math.exp(s - top) if ok else 0.0
                     for s, ok in zip(logits, allowed, strict=True)]
                total = sum(e)
                for j in range(skv):
                    out[b, h, i] += e[j] / total * v[b, g, j]
    return out


def qkv(b=2, h=4, sq=3, hkv=2, skv=5, d=8, dv=6, dtype="float32"):
    return normal(b, h, sq, d, dtype=dtype), normal(b, hkv, skv, d, dtype=dtype), \
        normal(b, hkv, skv, dv, dtype=dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", ["plain", "gqa_causal", "bool_mask", "float_mask_scale",
                                  "mqa_causal_mask"])
def test_attention_matches_its_formula(case: str, dtype: str) -> None:
    q, k, v = qkv(dtype=dtype, hkv={"plain": 4, "mqa_causal_mask": 1}.get(case, 2))
    mask, kw = None, {}
    if case == "gqa_causal":
        kw["is_causal"] = True
    elif case == "bool_mask":
        mask = RNG.random((2, 1, 3, 5)) < 0.7
    elif case == "float_mask_scale":
        mask = normal(3, 5, dtype=dtype)
        mask[1, 2] = -np.inf
        kw["scale"] = 0.3
    elif case == "mqa_causal_mask":
        mask = RNG.random((5,)) < 0.6
        mask[0] = True  # query 0's only causal key
        kw["is_causal"] = True
    call = op.nn.attention(Q, K, V, mask, **kw)
    args = (q, k, v) if mask is None else (q, k, v, mask)
    close(run(call, *args), attention_formula(*args, **kw), dtype, 4)


def test_attention_fully_masked_rows_are_zeros_as_in_onnx() -> None:
    q, k, v = qkv(hkv=4)
    mask = RNG.random((2, 4, 3, 5)) < 0.5
    mask[0, 1, 2] = False
    mask[1, :, 0] = False
    out = run(op.nn.attention(Q, K, V, M), q, k, v, mask)
    assert not out[0, 1, 2].any() and not out[1, :, 0].any()
    assert np.isfinite(out).all()
    # an additive mask of -inf throughout a row too; torch's finfo.min is a plain softmax
    fmask = np.where(mask, 0.0, -np.inf).astype("float32")
    np.testing.assert_allclose(run(op.nn.attention(Q, K, V, M), q, k, v, fmask), out, atol=1e-6)
    lowest = np.where(mask, 0.0, np.finfo("float32").min).astype("float32")
    uniform = run(op.nn.attention(Q, K, V, M), q, k, v, lowest)[1, 0, 0]
    np.testing.assert_allclose(uniform, v[1, 0].mean(axis=0), rtol=1e-5, atol=1e-6)
    want = ort_run("Attention", {"q": q, "k": k, "v": v, "m": mask}, 23)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("kv_heads", "mask_kind", "mask_shape", "attrs"), [
    (4, "none", None, {}),
    (2, "none", None, {"is_causal": 1}),
    (1, "bool", (3, 5), {"scale": 0.25}),
    (1, "float", (3, 5), {"scale": 0.25}),
    (2, "bool", (2, 1, 3, 5), {"is_causal": 1}),
    (2, "float", (2, 4, 3, 5), {"is_causal": 1}),
])
def test_attention_matches_onnxruntime(kv_heads, mask_kind, mask_shape, attrs) -> None:
    q, k, v = qkv(hkv=kv_heads)
    mask = None
    if mask_kind == "bool":
        mask = RNG.random(mask_shape) < 0.7
        mask[..., 0] = True  # ONNX Runtime and the reference agree on rows with a key
    elif mask_kind == "float":
        mask = normal(*mask_shape)
    call = op.nn.attention(Q, K, V, mask, scale=attrs.get("scale"),
                           is_causal=bool(attrs.get("is_causal", 0)))
    args = (q, k, v) if mask is None else (q, k, v, mask)
    want = ort_run("Attention", {"q": q, "k": k, "v": v, "m": mask}, 23, **attrs)
    np.testing.assert_allclose(run(call, *args), want, rtol=1e-5, atol=1e-5)


def test_attention_mask_is_an_optional_fourth_argument() -> None:
    assert len(op.nn.attention(Q, K, V).args) == 3
    assert len(op.nn.attention(Q, K, V, M).args) == 4
    assert Op.get("nn.attention").num_inputs == -1
    with pytest.raises(ValueError, match=r"^nn\.attention: takes 3 arguments \(query, key, "
                                         r"value\) or 4 \(query, key, value, mask\), got 2"):
        infer(Call(Op.get("nn.attention"), [Q, K]), t(1, 1, 2, 4), t(1, 1, 2, 4))


def test_attention_errors_name_the_op_and_operand() -> None:
    call = op.nn.attention(Q, K, V, M)
    qt, kt, vt = t(2, 4, 3, 8), t(2, 2, 5, 8), t(2, 2, 5, 6)
    bad = [
        ((t(2, 4, 8), kt, vt, t(3, 5)), ValueError,
         r"query must be 4-D \(batch, heads, seq, head_dim\)"),
        ((qt, t(2, 3, 5, 8), t(2, 3, 5, 6), t(3, 5)), ValueError,
         "the query's 4 heads must be a multiple of the key's and value's 3"),
        ((qt, t(2, 2, 5, 7), vt, t(3, 5)), ValueError,
         "the head sizes of query and key must be equal, got 8 and 7"),
        ((qt, kt, t(2, 2, 4, 6), t(3, 5)), ValueError,
         "the sequence lengths of key and value must be equal"),
        ((qt, kt, vt, t(4, 5)), ValueError, r"mask \(4, 5\) does not broadcast to the scores"),
        ((qt, kt, vt, t(3, 5, dtype="int32")), TypeError,
         "mask must be bool or have the query's dtype float32"),
        ((qt, kt, t(2, 2, 5, 6, dtype="float16"), t(3, 5)), TypeError,
         "value has dtype float16 but query has float32"),
        ((t(2, 4, 3, 8, dtype="int32"), kt, vt, t(3, 5)), TypeError,
         "query must have a floating-point dtype"),
    ]
    for types, exc, message in bad:
        with pytest.raises(exc, match=r"^nn\.attention: " + message):
            infer(call, *types)
    with pytest.raises(ValueError, match=r"nn\.attention\.scale must be a finite number"):
        op.nn.attention(Q, K, V, scale=float("inf"))


# -- rotary_embedding --------------------------------------------------------------------------


def rope_formula(x, cos_half, sin_half, interleaved) -> np.ndarray:
    """Rotation as complex multiplication: pair (a, b) is a + ib, turned by the angle whose
    cosine and sine the half-width caches hold."""
    x = x.astype("float64")
    d = x.shape[-1]
    if interleaved:
        z = x[..., 0::2] + 1j * x[..., 1::2]
    else:
        z = x[..., : d // 2] + 1j * x[..., d // 2:]
    r = z * (cos_half + 1j * sin_half)
    out = np.empty_like(x)
    if interleaved:
        out[..., 0::2], out[..., 1::2] = r.real, r.imag
    else:
        out[..., : d // 2], out[..., d // 2:] = r.real, r.imag
    return out


def full_width(half: np.ndarray, interleaved: bool) -> np.ndarray:
    return np.repeat(half, 2, axis=-1) if interleaved else np.concatenate([half, half], -1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("interleaved", [False, True])
def test_rotary_embedding_matches_its_formula(interleaved: bool, dtype: str) -> None:
    x = normal(2, 4, 3, 8, dtype=dtype)  # (batch, heads, seq, head_dim)
    theta = RNG.uniform(-4, 4, (2, 1, 3, 4))
    cos = full_width(np.cos(theta), interleaved).astype(dtype)
    sin = full_width(np.sin(theta), interleaved).astype(dtype)
    want = rope_formula(x, np.cos(theta), np.sin(theta), interleaved)
    close(run(op.nn.rotary_embedding(X, V, W, interleaved=interleaved), x, cos, sin), want,
          dtype, 4)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_matches_onnxruntime(interleaved: int) -> None:
    x = normal(2, 4, 3, 8)
    theta = RNG.uniform(-4, 4, (10, 4))
    cos_cache, sin_cache = np.cos(theta).astype("float32"), np.sin(theta).astype("float32")
    pos = np.array([[0, 1, 2], [7, 3, 9]], "int64")
    want = ort_run("RotaryEmbedding", {"x": x, "c": cos_cache, "s": sin_cache, "p": pos}, 23,
                   interleaved=interleaved)
    # the caches gathered at the positions, full width, broadcast over the heads
    cos = full_width(cos_cache[pos], bool(interleaved))[:, None]
    sin = full_width(sin_cache[pos], bool(interleaved))[:, None]
    got = run(op.nn.rotary_embedding(X, V, W, interleaved=bool(interleaved)), x, cos, sin)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_rotary_embedding_errors_name_the_op_and_operand() -> None:
    call = op.nn.rotary_embedding(X, V, W)
    with pytest.raises(ValueError, match=r"^nn\.rotary_embedding: data's last dimension must "
                                         "be even"):
        infer(call, t(2, 7), t(7), t(7))
    with pytest.raises(ValueError, match=r"^nn\.rotary_embedding: sin \(3, 8\) does not "
                                         r"broadcast to data \(2, 4, 8\)"):
        infer(call, t(2, 4, 8), t(4, 8), t(3, 8))
    with pytest.raises(ValueError, match=r"^nn\.rotary_embedding: cos \(1, 2, 4, 8\) has "
                                         "more dimensions than data"):
        infer(call, t(2, 4, 8), t(1, 2, 4, 8), t(4, 8))
    with pytest.raises(TypeError, match=r"^nn\.rotary_embedding: cos has dtype float16"):
        infer(call, t(2, 4, 8), t(4, 8, dtype="float16"), t(4, 8))


# -- symbolic shapes ---------------------------------------------------------------------------

B, S, S2, H, D = (SizeVar(n) for n in ("b", "s", "s2", "h", "d"))


def test_symbolic_attention_keeps_the_sizes_and_takes_static_ones() -> None:
    call = op.nn.attention(Q, K, V, M, is_causal=True)
    got = infer(call, t(B, 8, S, 16), t(B, 2, S2, 16), t(B, 2, S2, 32),
                TensorType((1, 1, S, S2), "bool"))
    assert got == t(B, 8, S, 32)
    # a static size on one side fixes the symbolic one of the other
    assert infer(op.nn.attention(Q, K, V), t(B, H, S, D), t(2, 2, S2, 16),
                 t(2, 2, S2, 16)) == t(2, H, S, 16)
    # a symbolic head count with a static kv head count: the run time checks the multiple
    assert infer(op.nn.attention(Q, K, V), t(1, H, S, 4), t(1, 2, S, 4),
                 t(1, 2, S, 4)) == t(1, H, S, 4)
    with pytest.raises(ValueError, match=r"^nn\.attention: the sequence lengths of key and "
                                         r"value must be equal, got s2 and s2 \+ 1"):
        infer(op.nn.attention(Q, K, V), t(1, 2, S, 4), t(1, 2, S2, 4), t(1, 2, S2 + 1, 4))


def test_symbolic_rms_norm_and_rotary_embedding() -> None:
    assert infer(op.nn.rms_norm(X, W), t(B, S, D), t(64)) == t(B, S, 64)
    assert infer(op.nn.rms_norm(X, W, axes=(1, 2)), t(B, S, 8), t(S, 8)) == t(B, S, 8)
    with pytest.raises(ValueError, match=r"^nn\.rms_norm: weight must have shape \(s, 8\)"):
        infer(op.nn.rms_norm(X, W, axes=(1, 2)), t(B, S, 8), t(S + 1, 8))
    assert infer(op.nn.rotary_embedding(X, V, W), t(B, H, S, D), t(B, 1, S, 64),
                 t(1, 1, S, 64)) == t(B, H, S, 64)
    # an odd symbolic width cannot be known: the kernel says so at run time
    assert infer(op.nn.rotary_embedding(X, V, W), t(S, D), t(D), t(D)) == t(S, D)


def test_symbolic_program_runs_at_several_sizes() -> None:
    q, k, v = var("q", shape=(B, 4, S, 8)), var("k", shape=(B, 2, S, 8)), \
        var("v", shape=(B, 2, S, 8))
    cos, sin = var("cos", shape=(B, 1, S, 8)), var("sin", shape=(B, 1, S, 8))
    w = var("w", shape=(8,))
    roped = op.nn.rotary_embedding(q, cos, sin)
    body = op.nn.silu(op.nn.rms_norm(op.nn.attention(roped, k, v, is_causal=True), w))
    mod = infer_type(IRModule.from_expr(Function([q, k, v, cos, sin, w], body)))
    assert mod["main"].ret_type == t(B, 4, S, 8)
    for b, s in ((1, 1), (3, 5)):
        theta = RNG.uniform(-3, 3, (b, 1, s, 4))
        args = [normal(b, 4, s, 8), normal(b, 2, s, 8), normal(b, 2, s, 8),
                full_width(np.cos(theta), False).astype("float32"),
                full_width(np.sin(theta), False).astype("float32"), normal(8)]
        out = irpass.evaluate(mod, *args)
        a = attention_formula(rope_formula(args[0], np.cos(theta), np.sin(theta), False),
                              args[1], args[2], is_causal=True)
        r = rms_formula(a, args[5], (-1,), 1e-5)
        np.testing.assert_allclose(out, r / (1 + np.exp(-r)), rtol=1e-4, atol=1e-5)


# -- text form and evaluation ------------------------------------------------------------------


def test_text_form_round_trips_every_fused_op() -> None:
    q, k, v = var("q", shape=(1, 2, 3, 4)), var("k", shape=(1, 1, 3, 4)), \
        var("v", shape=(1, 1, 3, 4))
    m = var("m", shape=(3, 3), dtype="bool")
    x, w = var("x", shape=(1, 2, 3, 4)), var("w", shape=(3, 4))
    body = op.nn.gelu(op.nn.hard_swish(op.nn.silu(op.nn.attention(q, k, v, m, scale=0.5))),
                      approximate="tanh")
    body = op.add(body, op.nn.attention(q, k, v, is_causal=True))
    body = op.add(body, op.nn.rotary_embedding(x, x, x, interleaved=True))
    body = op.nn.rms_norm(body, w, axes=(-2, -1), epsilon=1e-6)
    mod = infer_type(IRModule.from_expr(Function([q, k, v, m, x, w], body)))
    text = str(mod)
    for piece in ("nn.attention(%q, %k, %v, %m, scale=0.5)", "nn.attention(%q, %k, %v, "
                  "is_causal=True)", "interleaved=True", 'approximate="tanh"', "axes=[-2, -1]"):
        assert piece in text, (piece, text)
    back = parse(text)
    assert structural_equal(back, mod)
    args = [normal(1, 2, 3, 4), normal(1, 1, 3, 4), normal(1, 1, 3, 4),
            RNG.random((3, 3)) < 0.8, normal(1, 2, 3, 4), normal(3, 4)]
    np.testing.assert_array_equal(irpass.evaluate(back, *args), irpass.evaluate(mod, *args))
