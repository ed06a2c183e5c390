"""SimplifyInference (plugins/irpass_std/simplify_inference.py): batch_norm into a
per-channel multiply-add, dropout into the identity, layer_norm decomposed on request;
expected IR per rule, every node kind, deep chains and meaning on the example networks."""

from __future__ import annotations

import re
from pathlib import Path

import irpass
import numpy as np
import pytest
from hypothesis import given, settings
from irpass import Function, GlobalVar, IRModule, const, op, var
from irpass.ir import (
    Call,
    Constant,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    assert_structural_equal,
    infer_type,
    post_order_visit,
    structural_equal,
)
from irpass.testing import check_semantics, models
from irpass.testing import strategies as sts
from irpass.transform import PassContext, list_config_options, list_passes
from std_fixtures import register_stateful_op

DECOMPOSE = "std.SimplifyInference.decompose_layer_norm"
DOC = (
    Path(__file__).resolve().parents[1] / "plugins" / "irpass_std" / "docs" / "SimplifyInference.md"
)
RNG = np.random.default_rng(7)


def run(mod_or_func, **config) -> IRModule:
    mod = mod_or_func if isinstance(mod_or_func, IRModule) else IRModule.from_expr(mod_or_func)
    with PassContext(opt_level=3, config=config):
        return irpass.transform.SimplifyInference()(mod)


def vec(c: int, low: float = 0.5, high: float = 1.5) -> np.ndarray:
    return RNG.uniform(low, high, size=c).astype("float32")


def op_names(expr) -> list[str]:
    names: list[str] = []
    post_order_visit(
        expr, lambda n: names.append(n.op.name) if type(n) is Call and type(n.op) is Op else None
    )
    return names


def expected_scale_shift(gamma, beta, mean, var_, eps, scale=True, center=True):
    """The per-channel scale and shift, written out here independently of the pass."""
    std = np.sqrt(var_.astype(np.float64) + eps)
    s = (gamma.astype(np.float64) if scale else 1.0) / std
    b = (beta.astype(np.float64) if center else 0.0) - mean.astype(np.float64) * s
    return s.astype("float32"), b.astype("float32")


# -- registration ------------------------------------------------------------------------------


def test_registered_with_its_info_and_option():
    p = irpass.transform.SimplifyInference()
    assert p.info.name == "SimplifyInference"
    assert p.info.opt_level == 0
    assert list(p.info.required) == ["InferType"]
    assert "SimplifyInference" in list_passes()
    option = list_config_options()[DECOMPOSE]
    assert option.value_type is bool and option.default is False


# -- batch_norm ----------------------------------------------------------------------------------


def test_batch_norm_nchw_with_constant_statistics():
    g, b, m, v = vec(4), vec(4, -1, 1), vec(4, -1, 1), vec(4)
    x = var("x", shape=(2, 4, 3, 3))
    bn = op.nn.batch_norm(x, const(g), const(b), const(m), const(v), axis=1, epsilon=1e-3)
    out = run(Function([x], op.nn.relu(bn[0])))

    s, t = expected_scale_shift(g, b, m, v, 1e-3)
    y = var("x", shape=(2, 4, 3, 3))
    scaled = op.multiply(y, const(s.reshape(4, 1, 1)))
    expected = Function([y], op.nn.relu(op.add(scaled, const(t.reshape(4, 1, 1)))))
    assert_structural_equal(out["main"], infer_type(expected))


@pytest.mark.parametrize("axis", [3, -1])
def test_batch_norm_nhwc_uses_the_vectors_as_they_are(axis):
    g, b, m, v = vec(4), vec(4, -1, 1), vec(4, -1, 1), vec(4)
    x = var("x", shape=(1, 3, 3, 4))
    bn = op.nn.batch_norm(x, const(g), const(b), const(m), const(v), axis=axis)
    out = run(Function([x], bn[0]))

    s, t = expected_scale_shift(g, b, m, v, 1e-5)
    y = var("x", shape=(1, 3, 3, 4))
    expected = Function([y], op.add(op.multiply(y, const(s)), const(t)))
    assert_structural_equal(out["main"], infer_type(expected))


def test_batch_norm_on_a_middle_axis_of_a_3d_tensor():
    g, b, m, v = vec(3), vec(3), vec(3), vec(3)
    x = var("x", shape=(2, 3, 5))
    out = run(
        Function([x], op.nn.batch_norm(x, const(g), const(b), const(m), const(v), axis=-2)[0])
    )
    s, t = expected_scale_shift(g, b, m, v, 1e-5)
    y = var("x", shape=(2, 3, 5))
    expected = Function([y], op.add(op.multiply(y, const(s.reshape(3, 1))), const(t.reshape(3, 1))))
    assert_structural_equal(out["main"], infer_type(expected))


@pytest.mark.parametrize("scale,center", [(False, True), (True, False), (False, False)])
def test_batch_norm_without_scale_or_center(scale, center):
    g, b, m, v = vec(4), vec(4, -1, 1), vec(4, -1, 1), vec(4)
    x = var("x", shape=(1, 4, 2, 2))
    bn = op.nn.batch_norm(x, const(g), const(b), const(m), const(v), scale=scale, center=center)
    mod = IRModule.from_expr(Function([x], bn[0]))
    out = check_semantics(irpass.transform.SimplifyInference(), mod)

    s, t = expected_scale_shift(g, b, m, v, 1e-5, scale=scale, center=center)
    y = var("x", shape=(1, 4, 2, 2))
    expected = Function(
        [y], op.add(op.multiply(y, const(s.reshape(4, 1, 1))), const(t.reshape(4, 1, 1)))
    )
    assert_structural_equal(out["main"], infer_type(expected))


def test_batch_norm_with_unused_gamma_beta_that_are_not_constants():
    # gamma/beta unused (scale=False, center=False): only mean and var need to be constant
    g = var("g", shape=(4,))
    m, v = vec(4, -1, 1), vec(4)
    x = var("x", shape=(1, 4, 2, 2))
    bn = op.nn.batch_norm(x, g, op.exp(g), const(m), const(v), scale=False, center=False)
    out = run(Function([x, g], bn[0]))
    assert op_names(out["main"]) == ["multiply", "add"]


def test_batch_norm_with_variable_statistics_builds_the_arithmetic():
    x = var("x", shape=(2, 4, 3, 3))
    g, b, m, v = (var(n, shape=(4,)) for n in ("g", "b", "m", "v"))
    bn = op.nn.batch_norm(x, g, b, m, v, epsilon=0.01)
    mod = IRModule.from_expr(Function([x, g, b, m, v], bn[0]))
    out = run(mod)

    x2, g2, b2, m2, v2 = var("x", shape=(2, 4, 3, 3)), *(var(n, shape=(4,)) for n in "gbmv")
    scale = op.divide(g2, op.sqrt(op.add(v2, const(np.float32(0.01)))))
    shift = op.subtract(b2, op.multiply(m2, scale))
    body = op.add(
        op.multiply(x2, op.expand_dims(scale, axis=1, num_newaxis=2)),
        op.expand_dims(shift, axis=1, num_newaxis=2),
    )
    assert_structural_equal(out["main"], infer_type(Function([x2, g2, b2, m2, v2], body)))
    # variances must be >= 0 for the comparison on random inputs
    inputs = [
        {
            "x": RNG.standard_normal((2, 4, 3, 3)).astype("float32"),
            "g": vec(4),
            "b": vec(4),
            "m": vec(4),
            "v": vec(4),
        }
        for _ in range(2)
    ]
    check_semantics(irpass.transform.SimplifyInference(), mod, inputs=inputs)


def test_batch_norm_with_variable_statistics_without_scale_and_center():
    x = var("x", shape=(3, 4))
    g, b, m, v = (var(n, shape=(4,)) for n in ("g", "b", "m", "v"))
    bn = op.nn.batch_norm(x, g, b, m, v, scale=False, center=False)
    out = run(Function([x, g, b, m, v], bn[0]))

    x2, g2, b2, m2, v2 = var("x", shape=(3, 4)), *(var(n, shape=(4,)) for n in "gbmv")
    scale = op.divide(const(np.float32(1.0)), op.sqrt(op.add(v2, const(np.float32(1e-5)))))
    shift = op.negative(op.multiply(m2, scale))
    # axis=1 is the last axis of a 2-D tensor: no expand_dims needed
    expected = Function([x2, g2, b2, m2, v2], op.add(op.multiply(x2, scale), shift))
    assert_structural_equal(out["main"], infer_type(expected))


def test_batch_norm_used_as_a_tuple_keeps_the_statistics_fields():
    g, b, m, v = vec(4), vec(4), vec(4), vec(4)
    x = var("x", shape=(1, 4, 2, 2))
    mc, vc = const(m), const(v)
    bn = op.nn.batch_norm(x, const(g), const(b), mc, vc)
    mod = IRModule.from_expr(Function([x], Tuple([bn[0], bn[1], bn[2]])))
    out = check_semantics(irpass.transform.SimplifyInference(), mod)

    s, t = expected_scale_shift(g, b, m, v, 1e-5)
    y = var("x", shape=(1, 4, 2, 2))
    norm = op.add(op.multiply(y, const(s.reshape(4, 1, 1))), const(t.reshape(4, 1, 1)))
    tup = Tuple([norm, mc, vc])
    expected = Function([y], Tuple([norm, TupleGetItem(tup, 1), TupleGetItem(tup, 2)]))
    assert_structural_equal(out["main"], infer_type(expected))
    assert "nn.batch_norm" not in op_names(out["main"])


def test_batch_norm_bound_by_a_let():
    g, b, m, v = vec(4), vec(4), vec(4), vec(4)
    x = var("x", shape=(1, 4))
    bnv = Var("bn")
    bn = op.nn.batch_norm(x, const(g), const(b), const(m), const(v))
    mod = IRModule.from_expr(Function([x], Let(bnv, bn, TupleGetItem(bnv, 0))))
    out = check_semantics(irpass.transform.SimplifyInference(), mod)
    body = out["main"].body
    assert type(body) is Let and type(body.value) is Tuple
    assert "nn.batch_norm" not in op_names(out["main"])


@pytest.fixture
def stateful_op():
    """``test.draw(x)``: a stateful op of x's type (the registry is restored afterwards)."""
    return register_stateful_op("test.draw")


def test_batch_norm_never_drops_a_stateful_argument(stateful_op):
    g = var("g", shape=(4,))
    x = var("x", shape=(1, 4))
    bn = op.nn.batch_norm(
        x, Call(stateful_op, [g]), const(vec(4)), const(vec(4)), const(vec(4)), scale=False
    )
    func = Function([x, g], bn[0])
    mod = IRModule.from_expr(func)
    assert run(mod) is mod
    # ... but rewrites it when the stateful argument is used
    bn = op.nn.batch_norm(x, Call(stateful_op, [g]), const(vec(4)), const(vec(4)), const(vec(4)))
    names = op_names(run(Function([x, g], bn[0]))["main"])
    assert "nn.batch_norm" not in names and names.count("test.draw") == 1


def test_float64_batch_norm_keeps_its_dtype():
    g, b, m, v = (RNG.uniform(0.5, 1.5, 3) for _ in range(4))
    x = var("x", shape=(2, 3), dtype="float64")
    bn = op.nn.batch_norm(x, const(g), const(b), const(m), const(v))
    out = check_semantics(
        irpass.transform.SimplifyInference(), IRModule.from_expr(Function([x], bn[0]))
    )
    consts = []
    post_order_visit(out["main"], lambda n: consts.append(n) if type(n) is Constant else None)
    assert {c.data.dtype.name for c in consts} == {"float64"}


# -- dropout -------------------------------------------------------------------------------------


def test_dropout_is_the_identity():
    x = var("x", shape=(2, 3))
    out = run(Function([x], op.exp(op.nn.dropout(op.nn.dropout(x, rate=0.3)))))
    y = var("x", shape=(2, 3))
    assert_structural_equal(out["main"], infer_type(Function([y], op.exp(y))))


def test_nothing_to_do_keeps_module_and_function_identity():
    for build in (models.mlp, models.transformer_encoder):
        mod = build()
        assert run(mod) is mod
    x = var("x", shape=(2, 3))
    func = Function([x], op.nn.layer_norm(x, const(vec(3)), const(vec(3))))
    mod = IRModule.from_expr(func)
    out = run(mod)
    assert out is mod and out["main"] is func  # layer_norm stays without the option


# -- layer_norm ----------------------------------------------------------------------------------


def expected_layer_norm(x, gamma, beta, axis, eps, gamma_shape=None):
    mean = op.mean(x, axis=[axis], keepdims=True)
    centered = op.subtract(x, mean)
    var_ = op.mean(op.multiply(centered, centered), axis=[axis], keepdims=True)
    out = op.divide(centered, op.sqrt(op.add(var_, const(np.float32(eps)))))
    if gamma is not None:
        out = op.multiply(out, gamma)
    if beta is not None:
        out = op.add(out, beta)
    return out


def test_layer_norm_decomposed_on_request():
    g, b = vec(8), vec(8, -1, 1)
    x = var("x", shape=(2, 5, 8))
    mod = IRModule.from_expr(Function([x], op.nn.layer_norm(x, const(g), const(b), epsilon=1e-6)))
    out = check_semantics(irpass.transform.SimplifyInference(), mod, config={DECOMPOSE: True})
    y = var("x", shape=(2, 5, 8))
    expected = Function([y], expected_layer_norm(y, const(g), const(b), 2, 1e-6))
    assert_structural_equal(out["main"], infer_type(expected))


def test_layer_norm_on_a_middle_axis_shapes_gamma_and_beta():
    g, b = vec(5), vec(5)
    x = var("x", shape=(2, 5, 8))
    mod = IRModule.from_expr(Function([x], op.nn.layer_norm(x, const(g), const(b), axis=1)))
    out = check_semantics(irpass.transform.SimplifyInference(), mod, config={DECOMPOSE: True})
    y = var("x", shape=(2, 5, 8))
    expected = Function(
        [y], expected_layer_norm(y, const(g.reshape(5, 1)), const(b.reshape(5, 1)), 1, 1e-5)
    )
    assert_structural_equal(out["main"], infer_type(expected))


def test_layer_norm_with_variable_gamma_and_without_center():
    x = var("x", shape=(2, 5, 8))
    g, b = var("g", shape=(5,)), var("b", shape=(5,))
    mod = IRModule.from_expr(Function([x, g, b], op.nn.layer_norm(x, g, b, axis=-2, center=False)))
    out = check_semantics(irpass.transform.SimplifyInference(), mod, config={DECOMPOSE: True})
    y, g2, b2 = var("x", shape=(2, 5, 8)), var("g", shape=(5,)), var("b", shape=(5,))
    gamma = op.expand_dims(g2, axis=1, num_newaxis=1)
    expected = Function([y, g2, b2], expected_layer_norm(y, gamma, None, 1, 1e-5))
    assert_structural_equal(out["main"], infer_type(expected))


def test_layer_norm_without_scale():
    x = var("x", shape=(3, 4))
    b = const(vec(4))
    mod = IRModule.from_expr(Function([x], op.nn.layer_norm(x, const(vec(4)), b, scale=False)))
    out = check_semantics(irpass.transform.SimplifyInference(), mod, config={DECOMPOSE: True})
    y = var("x", shape=(3, 4))
    expected = Function([y], expected_layer_norm(y, None, b, 1, 1e-5))
    assert_structural_equal(out["main"], infer_type(expected))


# -- node kinds, sharing, deep programs -----------------------------------------------------------


def test_rewrites_in_lets_ifs_closures_and_every_global():
    c = 4
    params = [const(vec(c)) for _ in range(4)]
    x = var("x", shape=(1, c))
    p = var("p", shape=(1, c))
    closure = Function([p], op.nn.batch_norm(p, *params)[0])
    v = Var("v")
    cond = op.greater(op.sum(x), const(0.0))
    body = Let(v, op.nn.dropout(x), If(cond, Call(closure, [v]), op.nn.dropout(op.exp(v))))
    h = var("h", shape=(1, c))
    helper = Function([h], op.nn.batch_norm(op.nn.dropout(h), *params)[0])
    gv = GlobalVar("helper")
    mod = IRModule({"main": Function([x], op.add(body, Call(gv, [x]))), "helper": helper})
    out = check_semantics(irpass.transform.SimplifyInference(), mod)
    for name in ("main", "helper"):
        names = op_names(out[name])
        assert "nn.batch_norm" not in names and "nn.dropout" not in names


def test_shared_batch_norm_is_rewritten_once():
    x = var("x", shape=(1, 4, 2, 2))
    bn = op.nn.batch_norm(x, *(const(vec(4)) for _ in range(4)))
    out = run(Function([x], op.add(bn[0], op.exp(bn[0]))))
    lhs, rhs = out["main"].body.args
    assert rhs.args[0] is lhs


DEPTH = 30_000


def test_deep_chain_of_dropouts():
    x = var("x", shape=(2, 3))
    body = x
    for i in range(DEPTH):
        body = op.nn.dropout(body) if i % 2 else op.tanh(body)
    out = run(Function([x], body))
    node, n = out["main"].body, 0
    while node is not out["main"].params[0]:
        assert node.op is Op.get("tanh")
        node, n = node.args[0], n + 1
    assert n == DEPTH // 2


def test_deep_chain_of_batch_norms():
    x = var("x", shape=(1, 2))
    params = [const(vec(2)) for _ in range(4)]
    body = x
    for _ in range(DEPTH // 3):
        body = op.nn.batch_norm(body, *params)[0]
    out = run(Function([x], body))
    names = op_names(out["main"])
    assert names.count("multiply") == DEPTH // 3 and "nn.batch_norm" not in names


# -- meaning ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(models.MODELS))
@pytest.mark.parametrize("decompose", [False, True])
def test_keeps_the_meaning_of_the_example_networks(name, decompose):
    out = check_semantics(
        irpass.transform.SimplifyInference(), models.MODELS[name](), config={DECOMPOSE: decompose}
    )
    names = op_names(out["main"])
    assert "nn.batch_norm" not in names and "nn.dropout" not in names
    assert ("nn.layer_norm" in names) == (name == "transformer" and not decompose)


def test_keeps_the_meaning_of_nhwc_resnet():
    out = check_semantics(irpass.transform.SimplifyInference(), models.resnet(layout="NHWC"))
    assert "nn.batch_norm" not in op_names(out["main"])


@settings(max_examples=30, deadline=None)
@given(sts.modules())
def test_random_programs_change_exactly_when_they_hold_these_ops(mod):
    # generated programs hold batch norms and dropouts now and then (layer norms stay)
    text = mod.astext(show_meta_data=False)
    has = "nn.batch_norm(" in text or "nn.dropout(" in text
    with PassContext(opt_level=3):
        out = irpass.transform.Sequential(
            [irpass.transform.InferType(), irpass.transform.SimplifyInference()])(mod)
        typed = irpass.transform.InferType()(mod)
    assert (out is typed or structural_equal(out, typed)) != has
    if has:
        out_text = out.astext(show_meta_data=False)
        assert "nn.batch_norm(" not in out_text and "nn.dropout(" not in out_text


# -- documentation ------------------------------------------------------------------------------


def test_doc_example_runs():
    text = DOC.read_text()
    assert text.startswith("### SimplifyInference")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})
