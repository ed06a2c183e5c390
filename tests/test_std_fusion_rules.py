"""The fusion rule set ``fuse`` and its pass FusePatterns (plugins/irpass_std/fusion_rules.py).

Each rule: the decomposed forms it accepts (every operand order and variant), built with
``irpass.op``, become the fused op, and the program computes the same values before and
after on random inputs; then the near misses it must leave alone (a wrong constant, a
wrong axis, an intermediate value used elsewhere, ...). Last, the rule names (hits,
``[rewrites] disable``) and the pass's place in the default pipeline.
"""

from __future__ import annotations

import math
from collections import Counter

import irpass
import numpy as np
import pytest
from irpass import op
from irpass.ir import Call, Expr, Function, IRModule, Op, Tuple, const, post_order_visit, var
from irpass.transform import PassContext, Sequential, default_pipeline, get_pass

RTOL, ATOL = 1e-5, 1e-6
F32 = "float32"


def f32(value: float) -> Expr:
    return const(np.float32(value))


def rand(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


def counts(mod: IRModule) -> Counter:
    """Op calls by name."""
    found: Counter = Counter()
    post_order_visit(mod["main"], lambda n: found.update([n.op.name])
                     if type(n) is Call and type(n.op) is Op else None)
    return found


def fuse(mod: IRModule, disable: list[str] | None = None) -> tuple[IRModule, dict[str, int]]:
    """``mod`` through InferType and FusePatterns (input held immutable); the hits per rule."""
    config = {"testing.immutable_module": True}
    if disable is not None:
        config["rewrites.disable"] = disable
    with PassContext(opt_level=2, config=config) as ctx:
        out = Sequential([get_pass("InferType"), get_pass("FusePatterns")])(mod)
        notes = [n.data for n in ctx.diag.notes if isinstance(n.data, dict)]
    return out, (notes[-1] if notes else {})


def module(params: list, body: Expr) -> IRModule:
    return IRModule.from_expr(Function(params, body))


def inputs_for(params: list, seed: int = 1, **given: np.ndarray) -> dict[str, np.ndarray]:
    out = {}
    for k, p in enumerate(params):
        name = p.name_hint
        if name in given:
            out[name] = given[name]
        else:
            shape = tuple(int(d) for d in p.type_annotation.shape)
            out[name] = rand(shape, seed + k)
    return out


def flat(value) -> list[np.ndarray]:
    return [x for v in value for x in flat(v)] if isinstance(value, tuple) else [value]


def assert_same_values(before: IRModule, after: IRModule, args: dict[str, np.ndarray]) -> None:
    want = flat(irpass.evaluate(before, **args))
    got = flat(irpass.evaluate(after, **args))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def assert_fuses(params: list, body: Expr, fused: str, rule: str, gone: tuple[str, ...] = (),
                 **given: np.ndarray) -> IRModule:
    """The program becomes one ``fused`` call (rule ``rule`` fired once), none of ``gone``
    is left, and the values are the same on two random input sets."""
    before = module(params, body)
    after, hits = fuse(before)
    ops = counts(after)
    assert ops[fused] == 1, f"{fused} expected in\n{after}"
    assert hits == {f"fuse.{rule}": 1}
    for name in gone:
        assert ops[name] == 0, f"{name} left in\n{after}"
    for seed in (1, 2):
        assert_same_values(before, after, inputs_for(params, seed, **given))
    return after


def assert_unfused(params: list, body: Expr) -> None:
    """No rule fires: the module comes back as it was."""
    before = module(params, body)
    after, hits = fuse(before)
    assert hits == {}, hits
    assert irpass.structural_equal(after["main"].body, before["main"].body)


# -- LayerNorm ----------------------------------------------------------------------------------

X3 = (2, 5, 16)


def layer_norm_decomposed(x: Expr, *, square: str = "power", inv: str = "divide",
                          gamma: Expr | None = None, beta: Expr | None = None,
                          axis: int = -1, eps: float = 1e-5, two: float = 2.0) -> Expr:
    mean = op.mean(x, axis=[axis], keepdims=True)
    d = op.subtract(x, mean)
    sq = op.power(d, f32(two)) if square == "power" else op.multiply(d, d)
    var_ = op.mean(sq, axis=[axis], keepdims=True)
    std = op.sqrt(op.add(var_, f32(eps)))
    y = op.divide(d, std) if inv == "divide" else op.multiply(d, op.divide(f32(1.0), std))
    if gamma is not None:
        y = op.multiply(y, gamma)
    if beta is not None:
        y = op.add(y, beta)
    return y


@pytest.mark.parametrize("variant", [
    dict(gamma="vec", beta="vec"),
    dict(square="multiply", inv="reciprocal", gamma="row", beta="vec"),
    dict(),
    dict(gamma="param"),
    dict(beta="vec", axis=2),
    dict(gamma="vec", swap=True),
])
def test_layer_norm_forms(variant: dict) -> None:
    x = var("x", shape=X3)
    params = [x]
    extra: dict[str, Expr] = {}
    for part in ("gamma", "beta"):
        kind = variant.get(part)
        if kind == "vec":
            extra[part] = const(rand((16,), 7))
        elif kind == "row":
            extra[part] = const(rand((1, 1, 16), 8))
        elif kind == "param":
            extra[part] = var(part, shape=(16,))
            params.append(extra[part])
    body = layer_norm_decomposed(x, square=variant.get("square", "power"),
                                 inv=variant.get("inv", "divide"), axis=variant.get("axis", -1),
                                 **extra)
    if variant.get("swap"):  # gamma * norm instead of norm * gamma
        norm = body.args[0]
        body = op.multiply(extra["gamma"], norm)
    assert_fuses(params, body, "nn.layer_norm", "layer_norm",
                 gone=("mean", "sqrt", "subtract", "divide"))


def test_layer_norm_keeps_a_factor_along_another_axis_after_the_norm() -> None:
    x = var("x", shape=X3)
    full = const(rand(X3, 3))  # not a per-feature gamma: stays a multiply after the norm
    body = layer_norm_decomposed(x, gamma=full, beta=const(rand((16,), 4)))
    after = assert_fuses([x], body, "nn.layer_norm", "layer_norm", gone=("mean", "sqrt"))
    assert counts(after)["multiply"] == 1 and counts(after)["add"] == 1


def test_layer_norm_stays_decomposed_when_the_user_asked_for_it() -> None:
    """SimplifyInference decomposes nn.layer_norm under its option; -O3 must not fuse it
    back."""
    x = var("x", shape=X3)
    mod = module([x], op.nn.layer_norm(x, const(rand((16,), 1)), const(rand((16,), 2))))
    config = {"std.SimplifyInference.decompose_layer_norm": True}
    with PassContext(opt_level=3, disabled_pass=["FuseOps"], config=config):
        out = default_pipeline(3)(mod)
    assert counts(out)["nn.layer_norm"] == 0 and counts(out)["mean"] == 2
    with PassContext(opt_level=3, disabled_pass=["FuseOps"]):
        assert counts(default_pipeline(3)(mod))["nn.layer_norm"] == 1


@pytest.mark.parametrize("miss", ["eps_negative", "cube", "axis_1", "shared_var"])
def test_layer_norm_near_misses(miss: str) -> None:
    x = var("x", shape=X3)
    if miss == "eps_negative":
        body = layer_norm_decomposed(x, eps=-1e-5)
    elif miss == "cube":
        body = layer_norm_decomposed(x, two=3.0)
    elif miss == "axis_1":
        body = layer_norm_decomposed(x, axis=1)
    else:  # the variance used elsewhere too: fusing would compute it twice
        mean = op.mean(x, axis=[-1], keepdims=True)
        d = op.subtract(x, mean)
        var_ = op.mean(op.power(d, f32(2.0)), axis=[-1], keepdims=True)
        body = Tuple([op.divide(d, op.sqrt(op.add(var_, f32(1e-5)))), var_])
    assert_unfused([x], body)


# -- RMSNorm ------------------------------------------------------------------------------------


def rms_decomposed(x: Expr, *, form: str = "llama", weight: Expr | None = None,
                   axis: int = -1, two: float = 2.0) -> Expr:
    sq = op.power(x, f32(two)) if form != "square_mul" else op.multiply(x, x)
    std = op.sqrt(op.add(op.mean(sq, axis=[axis], keepdims=True), f32(1e-6)))
    if form == "llama":
        y = op.multiply(x, op.divide(f32(1.0), std))
    else:
        y = op.divide(x, std)
    return y if weight is None else op.multiply(weight, y)


@pytest.mark.parametrize("form,weight", [("llama", "vec"), ("divide", "row"),
                                         ("square_mul", None), ("llama", "param")])
def test_rms_norm_forms(form: str, weight: str | None) -> None:
    x = var("x", shape=X3)
    params = [x]
    w = None
    if weight == "vec":
        w = const(rand((16,), 5))
    elif weight == "row":
        w = const(rand((1, 1, 16), 5))
    elif weight == "param":
        w = var("w", shape=(16,))
        params.append(w)
    assert_fuses(params, rms_decomposed(x, form=form, weight=w), "nn.rms_norm", "rms_norm",
                 gone=("mean", "sqrt", "power"))


@pytest.mark.parametrize("miss", ["power", "axis", "shared_mean"])
def test_rms_norm_near_misses(miss: str) -> None:
    x = var("x", shape=X3)
    if miss == "power":
        body = rms_decomposed(x, two=2.5)
    elif miss == "axis":
        body = rms_decomposed(x, axis=0)
    else:
        ms = op.mean(op.power(x, f32(2.0)), axis=[-1], keepdims=True)
        body = Tuple([op.divide(x, op.sqrt(op.add(ms, f32(1e-6)))), ms])
    assert_unfused([x], body)


# -- GELU ---------------------------------------------------------------------------------------

X2 = (4, 24)


def gelu_erf(x: Expr, form: str, half: float = 0.5, root: float = math.sqrt(2)) -> Expr:
    scaled = (op.divide(x, f32(root)) if form != "hf" else
              op.multiply(x, f32(1 / root)))
    erf = op.erf(scaled)
    if form == "torchscript":    # x * (erf + 1) * 0.5
        return op.multiply(op.multiply(x, op.add(erf, f32(1.0))), f32(half))
    if form == "dynamo":         # x * (erf * 0.5 + 0.5), as SimplifyExpr leaves it
        return op.multiply(x, op.add(op.multiply(erf, f32(half)), f32(0.5)))
    if form == "hf":             # x * 0.5 * (1 + erf(x * (1 / sqrt 2)))
        return op.multiply(op.multiply(x, f32(half)), op.add(f32(1.0), erf))
    if form == "nested":         # 0.5 * (x * ((1 + erf) * 0.5)) reordered: x * ((erf + 1) * .5)
        return op.multiply(op.multiply(op.add(erf, f32(1.0)), f32(half)), x)
    return op.multiply(f32(half), op.multiply(op.add(f32(1.0), erf), x))  # "swapped"


@pytest.mark.parametrize("form", ["torchscript", "dynamo", "hf", "nested", "swapped"])
def test_gelu_erf_forms(form: str) -> None:
    x = var("x", shape=X2)
    after = assert_fuses([x], gelu_erf(x, form), "nn.gelu", "gelu_erf", gone=("erf",))
    call = next(n for n in _calls(after) if n.op.name == "nn.gelu")
    assert call.attrs["approximate"] == "none"


def _calls(mod: IRModule) -> list[Call]:
    found: list[Call] = []
    post_order_visit(mod["main"], lambda n: found.append(n)
                     if type(n) is Call and type(n.op) is Op else None)
    return found


@pytest.mark.parametrize("miss", ["half", "root", "shared_erf", "other_tensor"])
def test_gelu_erf_near_misses(miss: str) -> None:
    x = var("x", shape=X2)
    params = [x]
    if miss == "half":
        body = gelu_erf(x, "torchscript", half=0.6)
    elif miss == "root":
        body = gelu_erf(x, "dynamo", root=1.5)
    elif miss == "shared_erf":
        erf = op.erf(op.divide(x, f32(math.sqrt(2))))
        body = Tuple([op.multiply(op.multiply(x, op.add(erf, f32(1.0))), f32(0.5)), erf])
    else:  # y * 0.5 * (1 + erf(x / sqrt 2)): not one tensor
        y = var("y", shape=X2)
        params.append(y)
        erf = op.erf(op.divide(x, f32(math.sqrt(2))))
        body = op.multiply(op.multiply(y, op.add(erf, f32(1.0))), f32(0.5))
    assert_unfused(params, body)


def gelu_tanh(x: Expr, form: str, k: float = 0.044715) -> Expr:
    cube = op.power(x, f32(3.0)) if form != "cube_mul" else op.multiply(op.multiply(x, x), x)
    inner = op.multiply(op.add(x, op.multiply(cube, f32(k))), f32(math.sqrt(2 / math.pi)))
    t = op.tanh(inner)
    if form == "distributed":
        return op.multiply(x, op.add(op.multiply(t, f32(0.5)), f32(0.5)))
    return op.multiply(op.multiply(x, f32(0.5)), op.add(t, f32(1.0)))  # GPT-2's, as exported


@pytest.mark.parametrize("form", ["gpt2", "cube_mul", "distributed"])
def test_gelu_tanh_forms(form: str) -> None:
    x = var("x", shape=X2)
    after = assert_fuses([x], gelu_tanh(x, form), "nn.gelu", "gelu_tanh", gone=("tanh",))
    call = next(n for n in _calls(after) if n.op.name == "nn.gelu")
    assert call.attrs["approximate"] == "tanh"


def test_gelu_tanh_wrong_coefficient() -> None:
    x = var("x", shape=X2)
    assert_unfused([x], gelu_tanh(x, "gpt2", k=0.05))


# -- SiLU and HardSwish -------------------------------------------------------------------------


@pytest.mark.parametrize("swap", [False, True])
def test_silu(swap: bool) -> None:
    x = var("x", shape=X2)
    s = op.sigmoid(x)
    body = op.multiply(s, x) if swap else op.multiply(x, s)
    assert_fuses([x], body, "nn.silu", "silu", gone=("sigmoid",))


def test_silu_near_misses() -> None:
    x, y = var("x", shape=X2), var("y", shape=X2)
    assert_unfused([x, y], op.multiply(x, op.sigmoid(y)))
    s = op.sigmoid(x)
    assert_unfused([x], Tuple([op.multiply(x, s), s]))


def hard_swish(x: Expr, form: str, lo: float = 0.0, hi: float = 1.0, alpha: float = 1 / 6
               ) -> Expr:
    if form == "hard_sigmoid":
        return op.multiply(x, op.clip(op.add(op.multiply(x, f32(alpha)), f32(0.5)), lo, hi))
    if form == "hard_sigmoid_div":
        return op.multiply(op.clip(op.add(op.divide(x, f32(6.0)), f32(0.5)), lo, hi), x)
    relu6 = op.clip(op.add(x, f32(3.0)), 0.0, 6.0)
    if form == "relu6_div":
        return op.divide(op.multiply(x, relu6), f32(6.0))
    if form == "relu6_mul":
        return op.multiply(op.multiply(x, relu6), f32(1 / 6))
    return op.multiply(x, op.divide(relu6, f32(6.0)))  # "relu6_inner"


@pytest.mark.parametrize("form", ["hard_sigmoid", "hard_sigmoid_div", "relu6_div", "relu6_mul",
                                  "relu6_inner"])
def test_hard_swish_forms(form: str) -> None:
    x = var("x", shape=X2)
    big = rand(X2, 3) * 5  # reach both clip bounds
    assert_fuses([x], hard_swish(x, form), "nn.hard_swish", "hard_swish", gone=("clip",), x=big)


@pytest.mark.parametrize("miss", [dict(hi=2.0), dict(alpha=0.2)])
def test_hard_swish_near_misses(miss: dict) -> None:
    x = var("x", shape=X2)
    assert_unfused([x], hard_swish(x, "hard_sigmoid", **miss))


# -- rotary embedding ---------------------------------------------------------------------------

B, H, S, D = 2, 2, 5, 8


def rope_tables(width: int = D) -> tuple[Expr, Expr]:
    pos = np.arange(S)[:, None] * (0.5 ** np.arange(width // 2))[None, :]
    angles = np.concatenate([pos, pos], axis=-1)[None, None]
    return const(np.cos(angles).astype(F32)), const(np.sin(angles).astype(F32))


def rotate_half(x: Expr, form: str, axis: int = 3) -> Expr:
    if form == "split":
        parts = op.split(x, 2, axis=-1)
        lo, hi = parts[0], parts[1]
    else:
        hi = op.strided_slice(x, begin=[D // 2], end=[D], strides=[1], axes=[axis])
        lo = op.strided_slice(x, begin=[0], end=[D // 2], strides=[1], axes=[axis])
    neg = op.multiply(hi, f32(-1.0)) if form == "mul_neg" else op.negative(hi)
    return op.concatenate([neg, lo], axis=3)


@pytest.mark.parametrize("form", ["slice", "split", "mul_neg", "swapped"])
def test_rotary_embedding_forms(form: str) -> None:
    x = var("x", shape=(B, H, S, D))
    cos, sin = rope_tables()
    rot = rotate_half(x, "slice" if form == "swapped" else form)
    if form == "swapped":
        body = op.add(op.multiply(sin, rot), op.multiply(cos, x))
    else:
        body = op.add(op.multiply(x, cos), op.multiply(rot, sin))
    assert_fuses([x], body, "nn.rotary_embedding", "rotary_embedding",
                 gone=("concatenate", "strided_slice", "split"))


def test_rotary_embedding_near_misses() -> None:
    x = var("x", shape=(B, H, S, D))
    cos, sin = rope_tables()
    hi = op.strided_slice(x, begin=[D // 2], end=[D], strides=[1], axes=[3])
    lo = op.strided_slice(x, begin=[0], end=[D // 2], strides=[1], axes=[3])
    wrong_half = op.concatenate([op.negative(lo), hi], axis=3)  # rotates the other way
    assert_unfused([x], op.add(op.multiply(x, cos), op.multiply(wrong_half, sin)))
    growing = const(rand((3, B, H, S, D), 4))  # would broadcast x to 5-D
    rot = rotate_half(x, "slice")
    assert_unfused([x], op.add(op.multiply(x, growing), op.multiply(rot, sin)))
    rot = rotate_half(x, "slice")
    assert_unfused([x], Tuple([op.add(op.multiply(x, cos), op.multiply(rot, sin)), rot]))


# -- attention ----------------------------------------------------------------------------------


def qkv(kv_heads: int = H) -> tuple[Expr, Expr, Expr]:
    return (var("q", shape=(B, H, S, D)), var("k", shape=(B, kv_heads, S, D)),
            var("v", shape=(B, kv_heads, S, D)))


def kt_of(k: Expr) -> Expr:
    return op.transpose(k, axes=[0, 1, 3, 2])


def sdpa(q: Expr, kt: Expr, v: Expr, *, scale: float | None = 1 / math.sqrt(D),
         mask: Expr | None = None, guard: bool = False, split_scale: bool = False,
         axis: int = -1) -> Expr:
    if split_scale:
        root = f32(math.sqrt(scale))
        scores = op.matmul(op.multiply(q, root), op.multiply(kt, root))
    else:
        scores = op.matmul(q, kt)
        if scale is not None:
            scores = op.multiply(scores, f32(scale))
    if mask is not None:
        scores = op.add(scores, mask)
    p = op.nn.softmax(scores, axis=axis)
    if guard:
        p = op.where(op.isnan(p), f32(0.0), p)
    return op.matmul(p, v)


def causal_bias(value: float) -> np.ndarray:
    upper = np.arange(S)[None, :] > np.arange(S)[:, None]
    return np.where(upper, np.float32(value), np.float32(0))[None, None].astype(F32)


def test_attention_eager_form() -> None:
    q, k, v = qkv()
    after = assert_fuses([q, k, v], sdpa(q, kt_of(k), v), "nn.attention", "attention",
                         gone=("nn.softmax", "matmul", "transpose"))
    call = next(n for n in _calls(after) if n.op.name == "nn.attention")
    assert call.attrs["scale"] is None and not call.attrs["is_causal"] and len(call.args) == 3


def test_attention_scale_on_q_and_k_with_nan_guard() -> None:
    q, k, v = qkv()
    assert_fuses([q, k, v], sdpa(q, kt_of(k), v, split_scale=True, guard=True), "nn.attention",
                 "attention", gone=("nn.softmax", "isnan", "multiply"))


def test_attention_other_scale_and_no_scale() -> None:
    q, k, v = qkv()
    for scale, want in ((0.3, 0.3), (None, 1.0)):
        after = assert_fuses([q, k, v], sdpa(q, kt_of(k), v, scale=scale), "nn.attention",
                             "attention")
        call = next(n for n in _calls(after) if n.op.name == "nn.attention")
        assert call.attrs["scale"] == pytest.approx(want)


def heads(x: Expr, perm: list[int]) -> Expr:
    """(B, S, H * D) -> heads, as exporters write it."""
    return op.transpose(op.reshape(x, newshape=[B, S, H, D]), axes=perm)


def test_attention_from_projections_torchscript_and_dynamo_key_forms() -> None:
    x = var("x", shape=(B, S, 3 * H * D))
    parts = op.split(x, 3, axis=2)
    q = op.multiply(heads(parts[0], [0, 2, 1, 3]), f32(0.5 * D ** -0.25 * 2))
    kt_ts = heads(parts[1], [0, 2, 3, 1])                       # TorchScript's k^T
    v = heads(parts[2], [0, 2, 1, 3])
    body = sdpa(q, op.multiply(kt_ts, f32(D ** -0.25)), v, scale=None)
    assert_fuses([x], body, "nn.attention", "attention", gone=("nn.softmax",))
    # dynamo: k^T as the batched matmul's reshape / transpose / reshape
    k = heads(parts[1], [0, 2, 1, 3])
    kt_dyn = op.reshape(op.transpose(op.reshape(k, newshape=[B * H, S, D]), axes=[0, 2, 1]),
                        newshape=[B, H, D, S])
    after = assert_fuses([x], sdpa(q, kt_dyn, v, scale=D ** -0.25), "nn.attention",
                         "attention", gone=("nn.softmax",))
    assert counts(after)["transpose"] == 3 and counts(after)["reshape"] == 3
    # whisper: q scaled before it is split into heads
    q_early = heads(op.multiply(parts[0], f32(D ** -0.5)), [0, 2, 1, 3])
    assert_fuses([x], sdpa(q_early, kt_ts, v, scale=None), "nn.attention", "attention",
                 gone=("nn.softmax", "multiply"))


def test_attention_grouped_query_repeat_is_read_un_repeated() -> None:
    q, k, v = qkv(kv_heads=1)

    def repeat(t: Expr) -> Expr:
        wide = op.broadcast_to(op.expand_dims(t, axis=2), shape=[B, 1, H, S, D])
        return op.reshape(wide, newshape=[B, H, S, D])

    after = assert_fuses([q, k, v], sdpa(q, kt_of(repeat(k)), v=repeat(v)), "nn.attention",
                         "attention", gone=("broadcast_to", "expand_dims", "reshape"))
    call = next(n for n in _calls(after) if n.op.name == "nn.attention")
    assert tuple(call.args[1].checked_type.shape) == (B, 1, S, D)


def test_attention_over_rotary_embeddings_fuses_each_once() -> None:
    """Llama's order: rotary embeddings of q and k, then q scaled, k transposed. Both fuse
    in the same round, and attention reads the fused embeddings (no copy of the
    decomposition is left behind for a second round to fuse again)."""
    q, k, v = qkv()
    cos, sin = rope_tables()

    def rope(x: Expr) -> Expr:
        return op.add(op.multiply(x, cos), op.multiply(rotate_half(x, "slice"), sin))

    q_scaled = op.multiply(rope(q), f32(D ** -0.25))
    kt = op.multiply(op.transpose(rope(k), axes=[0, 1, 3, 2]), f32(D ** -0.25))
    before = module([q, k, v], sdpa(q_scaled, kt, v, scale=None))
    after, hits = fuse(before)
    assert hits == {"fuse.attention": 1, "fuse.rotary_embedding": 2}
    assert counts(after) == Counter({"nn.attention": 1, "nn.rotary_embedding": 2})
    assert_same_values(before, after, inputs_for([q, k, v]))


def test_attention_masks() -> None:
    q, k, v = qkv()
    # an additive mask that may hold -inf: only with the isnan guard (a fully masked row
    # is NaN -> 0 before, zeros fused)
    m = var("m", shape=(B, 1, S, S))
    masked_row = np.zeros((B, 1, S, S), F32)
    masked_row[1, 0, 2, :] = -np.inf
    masked_row[0, 0, :, 3] = -np.inf
    assert_fuses([q, k, v, m], sdpa(q, kt_of(k), v, mask=m, guard=True), "nn.attention",
                 "attention", gone=("isnan",), m=masked_row)
    assert_unfused([q, k, v, m], sdpa(q, kt_of(k), v, mask=m))
    # a finite mask (where between finite constants) needs no guard
    keep = var("keep", shape=(B, 1, 1, S), dtype="bool")
    finite = op.where(keep, f32(0.0), f32(-3.4028235e38))
    keep_values = np.ones((B, 1, 1, S), bool)
    keep_values[1, ..., 3:] = False
    assert_fuses([q, k, v, keep], sdpa(q, kt_of(k), v, mask=finite), "nn.attention",
                 "attention", keep=keep_values)
    # where(keep, 0, -inf) with the guard is attention's bool mask
    inf_mask = op.where(keep, f32(0.0), f32(-np.inf))
    keep_values[0, ...] = False  # a fully masked row too
    after = assert_fuses([q, k, v, keep], sdpa(q, kt_of(k), v, mask=inf_mask, guard=True),
                         "nn.attention", "attention", gone=("where",), keep=keep_values)
    call = next(n for n in _calls(after) if n.op.name == "nn.attention")
    assert call.args[3].checked_type.dtype == "bool"


@pytest.mark.parametrize("value", [-np.inf, -3.4028235e38])
def test_attention_constant_causal_mask(value: float) -> None:
    q, k, v = qkv()
    after = assert_fuses([q, k, v], sdpa(q, kt_of(k), v, mask=const(causal_bias(value))),
                         "nn.attention", "attention")
    call = next(n for n in _calls(after) if n.op.name == "nn.attention")
    assert call.attrs["is_causal"] and len(call.args) == 3


def test_attention_bool_masks_written_as_where() -> None:
    q, k, v = qkv()
    tril = np.arange(S)[None, :] <= np.arange(S)[:, None]
    scores = op.multiply(op.matmul(q, kt_of(k)), f32(D ** -0.5))
    causal = op.matmul(op.nn.softmax(op.where(const(tril), scores, f32(-np.inf))), v)
    after = assert_fuses([q, k, v], causal, "nn.attention", "attention", gone=("where",))
    assert next(n for n in _calls(after) if n.op.name == "nn.attention").attrs["is_causal"]
    keep = var("keep", shape=(B, 1, S, S), dtype="bool")
    keep_values = np.random.default_rng(0).random((B, 1, S, S)) > 0.3
    keep_values[..., 0] = True
    for fill in (-3.4028235e38, -np.inf):
        scores = op.multiply(op.matmul(q, kt_of(k)), f32(D ** -0.5))
        p = op.nn.softmax(op.where(keep, scores, f32(fill)))
        body = op.matmul(op.where(op.isnan(p), f32(0.0), p), v)
        assert_fuses([q, k, v, keep], body, "nn.attention", "attention", keep=keep_values)
    # -inf without the guard: a fully masked row is NaN before, zeros fused
    scores = op.multiply(op.matmul(q, kt_of(k)), f32(D ** -0.5))
    assert_unfused([q, k, v, keep],
                   op.matmul(op.nn.softmax(op.where(keep, scores, f32(-np.inf))), v))


def test_attention_near_misses() -> None:
    q, k, v = qkv()
    assert_unfused([q, k, v], sdpa(q, kt_of(k), v, axis=2))            # softmax over queries
    p = op.nn.softmax(op.multiply(op.matmul(q, kt_of(k)), f32(0.5)))
    assert_unfused([q, k, v], Tuple([op.matmul(p, v), p]))             # probabilities used too
    scaled_v = op.multiply(v, f32(2.0))
    assert_unfused([q, k, v], sdpa(q, kt_of(k), scaled_v))             # a factor on v
    q3, k3, v3 = (var(n, shape=(B * H, S, D)) for n in "qkv")          # 3-D: not attention's
    assert_unfused([q3, k3, v3], sdpa(q3, op.transpose(k3, axes=[0, 2, 1]), v3))


# -- dense and bias -----------------------------------------------------------------------------


@pytest.mark.parametrize("bias", ["vec", "row", "param", "swapped"])
def test_dense_bias_add(bias: str) -> None:
    x = var("x", shape=(4, 6))
    dense = op.nn.dense(x, const(rand((5, 6), 2)))
    params = [x]
    if bias == "param":
        b = var("b", shape=(5,))
        params.append(b)
    else:
        b = const(rand((5,) if bias != "row" else (1, 5), 3))
    body = op.add(b, dense) if bias == "swapped" else op.add(dense, b)
    assert_fuses(params, body, "nn.bias_add", "dense_bias_add", gone=("add",))


def test_dense_bias_add_leaves_a_full_add() -> None:
    x, r = var("x", shape=(4, 6)), var("r", shape=(4, 5))
    assert_unfused([x, r], op.add(op.nn.dense(x, const(rand((5, 6), 2))), r))


def test_matmul_to_dense() -> None:
    x = var("x", shape=(4, 6))
    body = op.add(op.matmul(x, const(rand((6, 5), 2))), const(rand((5,), 3)))
    after = assert_fuses([x], body, "nn.dense", "matmul_dense", gone=("matmul", "add"))
    assert counts(after)["nn.bias_add"] == 1
    w = var("w", shape=(5, 6))  # a transposed weight needs no constant
    body = op.add(op.matmul(x, op.transpose(w, axes=[1, 0])), const(rand((5,), 3)))
    assert_fuses([x, w], body, "nn.dense", "matmul_dense", gone=("matmul", "transpose"))


def test_matmul_to_dense_near_misses() -> None:
    x3 = var("x", shape=(2, 4, 6))  # 3-D: no Gemm
    assert_unfused([x3], op.add(op.matmul(x3, const(rand((6, 5), 2))), const(rand((5,), 3))))
    x, w = var("x", shape=(4, 6)), var("w", shape=(6, 5))  # a weight that is no constant
    assert_unfused([x, w], op.add(op.matmul(x, w), const(rand((5,), 3))))


# -- names, config, pipeline --------------------------------------------------------------------


def test_rules_are_disabled_by_name() -> None:
    x = var("x", shape=X2)
    body = Tuple([gelu_erf(x, "torchscript"), op.multiply(x, op.sigmoid(x))])
    mod = module([x], body)
    _, hits = fuse(mod)
    assert hits == {"fuse.gelu_erf": 1, "fuse.silu": 1}
    out, hits = fuse(mod, disable=["fuse.gelu_erf"])
    assert hits == {"fuse.silu": 1} and counts(out)["erf"] == 1
    out, hits = fuse(mod, disable=["fuse"])
    assert hits == {} and counts(out)["nn.silu"] == 0


def test_pipeline_place() -> None:
    for level in (2, 3):
        names = [p.info.name for p in default_pipeline(level).passes]
        assert names.index("FoldConstant") + 1 == names.index("FusePatterns")
    assert names.index("FusePatterns") + 1 == names.index("EliminateCommonSubexpr")
    assert "FusePatterns" not in [p.info.name for p in default_pipeline(1).passes]


def test_folded_constants_are_seen_at_o2() -> None:
    """The cos/sin tables are computed from constants: FoldConstant makes them constants
    before FusePatterns reads the rotation, and the gelu's 1/sqrt(2) is a folded divide."""
    x = var("x", shape=(B, H, S, D))
    angles = op.multiply(const(np.arange(S, dtype=F32)[:, None]), const(np.ones((1, D), F32)))
    cos, sin = op.cos(angles), op.sin(angles)
    rope = op.add(op.multiply(x, cos), op.multiply(rotate_half(x, "slice"), sin))
    inv_root = op.divide(f32(1.0), op.sqrt(f32(2.0)))
    erf = op.erf(op.multiply(rope, inv_root))
    body = op.multiply(op.multiply(rope, op.add(erf, f32(1.0))), f32(0.5))
    mod = module([x], body)
    with PassContext(opt_level=2, disabled_pass=["FuseOps"]):
        out = default_pipeline(2)(mod)
    ops = counts(out)
    assert ops["nn.rotary_embedding"] == 1 and ops["nn.gelu"] == 1, out
    assert_same_values(mod, out, inputs_for([x]))


def test_deep_chain_is_fine() -> None:
    """Iterative all the way: a long chain of fusable activations."""
    x = var("x", shape=(3,))
    y: Expr = x
    for _ in range(3000):
        y = op.multiply(y, op.sigmoid(y))
    out, hits = fuse(module([x], y))
    assert hits == {"fuse.silu": 3000}
    assert counts(out) == Counter({"nn.silu": 3000})

