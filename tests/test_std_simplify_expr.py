"""SimplifyExpr (plugins/irpass_std/simplify_expr.py): one test per rule, the cases where
a rule must not fire, fixed points, every node kind, deep chains and meaning on the
example networks and random programs."""

from __future__ import annotations

import re
from pathlib import Path

import irpass
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from irpass import Function, GlobalVar, IRModule, PassError, const, op, var
from irpass.ir import (
    Call,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    assert_structural_equal,
    infer_type,
    parse,
    post_order_visit,
)
from irpass.testing import check_semantics, models
from irpass.testing import strategies as sts
from irpass.transform import PassContext, Sequential, list_config_options, list_passes

FINITE = "std.SimplifyExpr.finite_math"
DOC = Path(__file__).resolve().parents[1] / "plugins" / "irpass_std" / "docs" / "SimplifyExpr.md"


def simplify(func: Function, **config) -> Function:
    """``func`` as ``main`` of a module, through SimplifyExpr; the new ``main``."""
    mod = IRModule.from_expr(func)
    with PassContext(opt_level=3, config=config):
        return irpass.transform.SimplifyExpr()(mod)["main"]


def check(before: Function, expected: Function, **config) -> None:
    # typed, as the pass's output is: InferType fills in the return types it lacks
    assert_structural_equal(simplify(before, **config), infer_type(expected))


def check_unchanged(before: Function, **config) -> None:
    mod = IRModule.from_expr(before)
    with PassContext(opt_level=3, config=config):
        out = irpass.transform.SimplifyExpr()(mod)
    assert out is mod
    assert out["main"] is before


def zeros(*shape: int, dtype: str = "float32"):
    return const(np.zeros(shape, dtype=dtype))


def ones(*shape: int, dtype: str = "float32"):
    return const(np.ones(shape, dtype=dtype))


def identity(shape=(2, 3), dtype="float32") -> Function:
    x = var("x", shape=shape, dtype=dtype)
    return Function([x], x)


# -- registration ------------------------------------------------------------------------------


def test_registered_with_its_info_and_option():
    p = irpass.transform.SimplifyExpr()
    assert p.info.name == "SimplifyExpr"
    assert p.info.opt_level == 0
    assert list(p.info.required) == ["InferType"]
    assert "SimplifyExpr" in list_passes()
    option = list_config_options()[FINITE]
    assert option.value_type is bool and option.default is False
    with pytest.raises(TypeError, match="finite_math"):
        PassContext(config={FINITE: "yes"})


# -- arithmetic identities ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda x: op.add(x, zeros(2, 3)),
        lambda x: op.add(zeros(2, 3), x),
        lambda x: op.add(x, zeros(3)),  # broadcasts into x: still x
        lambda x: op.add(x, const(0.0)),
        lambda x: op.add(x, const(np.float32(-0.0))),
        lambda x: op.subtract(x, zeros(1, 3)),
        lambda x: op.multiply(x, ones(2, 3)),
        lambda x: op.multiply(ones(3), x),
        lambda x: op.multiply(x, const(1.0)),
        lambda x: op.divide(x, ones(2, 1)),
    ],
    ids=["x+0", "0+x", "x+0(bcast)", "x+scalar0", "x+-0", "x-0", "x*1", "1*x", "x*scalar1", "x/1"],
)
def test_arithmetic_identity(build):
    x = var("x", shape=(2, 3))
    check(
        Function([x], op.exp(build(x))),
        (lambda y: Function([y], op.exp(y)))(var("x", shape=(2, 3))),
    )


@pytest.mark.parametrize(
    "build",
    [
        lambda x: op.add(x, zeros(2, 2, 3)),  # the constant broadcasts x to a bigger shape
        lambda x: op.multiply(ones(4, 1, 1), x),
        lambda x: op.subtract(x, ones(2, 3)),
        lambda x: op.add(x, const(np.array([0.0, 1.0, 0.0], "float32"))),  # not all zeros
        lambda x: op.multiply(x, const(np.array([1.0, 1.0, np.nan], "float32"))),
        lambda x: op.divide(ones(2, 3), x),  # 1 / x is no identity
        lambda x: op.multiply(x, zeros(2, 3)),  # finite_math is off
        lambda x: op.multiply(zeros(3), x),
    ],
    ids=["bcast-add", "bcast-mul", "x-1", "mixed", "nan", "1/x", "x*0", "0*x"],
)
def test_arithmetic_does_not_fire(build):
    x = var("x", shape=(2, 3))
    check_unchanged(Function([x], build(x)))


def test_zero_minus_x_is_negative():
    x = var("x", shape=(2, 3))
    y = var("x", shape=(2, 3))
    check(Function([x], op.subtract(zeros(3), x)), Function([y], op.negative(y)))


def test_integer_identities():
    x = var("x", shape=(4,), dtype="int32")
    before = Function([x], op.divide(op.add(x, zeros(4, dtype="int32")), ones(1, dtype="int32")))
    check(before, identity((4,), "int32"))


def test_creation_ops_count_as_constants():
    x = var("x", shape=(2, 3))
    body = op.add(op.multiply(x, op.ones((2, 3))), op.zeros((3,)))
    body = op.multiply(body, op.full(const(1.0), shape=(1,)))
    body = op.subtract(body, op.zeros_like(x))
    body = op.divide(body, op.ones_like(x))
    check(Function([x], body), identity())


def test_full_value_is_taken_in_the_result_dtype():
    # full(0.5) as int32 holds zeros: x + full(0.5, int32) is x.
    x = var("x", shape=(3,), dtype="int32")
    check(
        Function([x], op.add(x, op.full(const(0.5), shape=(3,), dtype="int32"))),
        identity((3,), "int32"),
    )
    # full(0.5) as float32 holds 0.5: nothing to do.
    y = var("y", shape=(3,))
    check_unchanged(Function([y], op.add(y, op.full(const(0.5), shape=(3,)))))


# -- x * 0 under finite_math ---------------------------------------------------------------------


def test_times_zero_needs_finite_math():
    x = var("x", shape=(2, 3))
    check_unchanged(Function([x], op.multiply(x, zeros(2, 3))))
    check_unchanged(Function([x], op.multiply(x, zeros(2, 3))), **{FINITE: False})


def test_times_zero_with_finite_math_keeps_a_zero_operand_of_the_result_type():
    x = var("x", shape=(2, 3))
    z = zeros(2, 3)
    y = var("x", shape=(2, 3))
    check(Function([x], op.exp(op.multiply(x, z))), Function([y], op.exp(z)), **{FINITE: True})


def test_times_zero_with_finite_math_builds_zeros_of_the_result_type():
    x = var("x", shape=(2, 3))
    y = var("x", shape=(2, 3))
    expected = Function([y], op.zeros((2, 3), "float32"))
    check(Function([x], op.multiply(zeros(3), x)), expected, **{FINITE: True})
    # the zero broadcasts x to a bigger shape: zeros of that bigger shape
    expected = Function([y], op.zeros((4, 2, 3), "float32"))
    check(Function([x], op.multiply(x, zeros(4, 1, 1))), expected, **{FINITE: True})


def test_times_zero_then_plus_is_a_fixed_point():
    x = var("x", shape=(2, 3))
    w = var("w", shape=(2, 3))
    x2, w2 = var("x", shape=(2, 3)), var("w", shape=(2, 3))
    before = Function([x, w], op.add(op.multiply(x, zeros(1)), w))
    check(before, Function([x2, w2], w2), **{FINITE: True})


def test_times_zero_never_drops_side_effects(stateful_op):
    x = var("x", shape=(2, 3))
    check_unchanged(
        Function([x], op.multiply(Call(stateful_op, [x]), zeros(2, 3))), **{FINITE: True}
    )
    # a call of a global function might have effects too
    gv = GlobalVar("f")
    p = var("p", shape=(2, 3))
    mod = IRModule(
        {"main": Function([x], op.multiply(Call(gv, [x]), zeros(2, 3))), "f": Function([p], p)}
    )
    with PassContext(config={FINITE: True}):
        assert irpass.transform.SimplifyExpr()(mod) is mod


def test_times_zero_of_a_pure_closure_call_folds():
    x = var("x", shape=(2, 3))
    p = var("p", shape=(2, 3))
    before = Function([x], op.multiply(Call(Function([p], op.exp(p)), [x]), zeros(2, 3)))
    z = before.body.args[1]
    y = var("x", shape=(2, 3))
    check(before, Function([y], z), **{FINITE: True})


def test_zeros_like_of_an_effect_is_not_dropped(stateful_op):
    x = var("x", shape=(2, 3))
    check_unchanged(Function([x], op.add(x, op.zeros_like(Call(stateful_op, [x])))))


# -- negation --------------------------------------------------------------------------------------


def test_double_negation():
    x = var("x", shape=(2, 3))
    check(Function([x], op.negative(op.negative(x))), identity())
    y = var("x", shape=(2, 3))
    check(Function([x], op.negative(op.negative(op.negative(x)))), Function([y], op.negative(y)))


def test_zero_minus_negative_is_x():
    x = var("x", shape=(2, 3))
    check(Function([x], op.subtract(zeros(2, 3), op.negative(x))), identity())


# -- reshape-like ops ----------------------------------------------------------------------------


def test_reshape_to_same_shape_is_removed():
    x = var("x", shape=(2, 3))
    check(Function([x], op.reshape(x, (2, 3))), identity())
    check(Function([x], op.reshape(x, (0, -1))), identity())
    check(Function([x], op.reshape(x, (-2,))), identity())
    check(Function([x], op.reverse_reshape(x, (-1, 0))), identity())


def test_reshape_of_reshape_is_one_reshape():
    x = var("x", shape=(2, 3, 4))
    y = var("x", shape=(2, 3, 4))
    before = Function([x], op.reshape(op.reshape(x, (6, 4)), (-1, 2, 2)))
    check(before, Function([y], op.reshape(y, (6, 2, 2))))
    before = Function([x], op.reshape(op.reverse_reshape(x, (-1, 0)), (-3,)))
    check(before, Function([y], op.reshape(y, (24,))))


def test_reshape_chain_back_to_the_input_shape_is_x():
    x = var("x", shape=(2, 3, 4))
    body = op.reshape(op.reshape(op.reshape(x, (24,)), (4, 6)), (2, 3, 4))
    check(Function([x], body), identity((2, 3, 4)))


def test_reshape_to_a_shape_with_zero_sized_dims():
    x = var("x", shape=(2, 0, 3))
    y = var("x", shape=(2, 0, 3))
    before = Function([x], op.reshape(op.reshape(x, (0, -1)), (0, 3), allowzero=True))
    check(before, Function([y], op.reshape(y, (0, 3), allowzero=True)))


def test_expand_dims_then_squeeze_of_those_axes():
    x = var("x", shape=(2, 3))
    check(Function([x], op.squeeze(op.expand_dims(x, 1, 2), axis=[1, 2])), identity())
    check(Function([x], op.squeeze(op.expand_dims(x, -1), axis=[-1])), identity())
    check(Function([x], op.squeeze(op.expand_dims(x, 0))), identity())


def test_squeeze_then_expand_dims_back():
    x = var("x", shape=(2, 1, 3))
    check(Function([x], op.expand_dims(op.squeeze(x, axis=[1]), 1)), identity((2, 1, 3)))


def test_squeeze_expand_dims_pairs_that_are_no_identity_become_one_reshape():
    x = var("x", shape=(2, 1, 3))
    y = var("x", shape=(2, 1, 3))
    # squeeze(axis=None) drops the added axis *and* x's own size-1 axis
    check(Function([x], op.squeeze(op.expand_dims(x, 0))), Function([y], op.reshape(y, (2, 3))))
    check(
        Function([x], op.expand_dims(op.squeeze(x, axis=[1]), 0)),
        Function([y], op.reshape(y, (1, 2, 3))),
    )
    check(
        Function([x], op.squeeze(op.reshape(x, (1, 6, 1)), axis=[0])),
        Function([y], op.reshape(y, (6, 1))),
    )


def test_single_shape_ops_that_change_the_shape_stay():
    x = var("x", shape=(2, 1, 3))
    check_unchanged(Function([x], op.reshape(x, (6,))))
    check_unchanged(Function([x], op.squeeze(x)))
    check_unchanged(Function([x], op.expand_dims(x, 0)))


def test_squeeze_and_expand_dims_that_change_nothing_are_removed():
    x = var("x", shape=(2, 3))
    check(Function([x], op.squeeze(x)), identity())  # no size-1 axis
    check(Function([x], op.expand_dims(x, 0, num_newaxis=0)), identity())


# -- transpose ------------------------------------------------------------------------------------


def test_transpose_of_transpose_is_composed():
    x = var("x", shape=(2, 3, 4))
    y = var("x", shape=(2, 3, 4))
    before = Function([x], op.transpose(op.transpose(x, (1, 2, 0)), (1, 2, 0)))
    # out[i] = x[p[q[i]]] with p = q = (1, 2, 0): (2, 0, 1)
    check(before, Function([y], op.transpose(y, (2, 0, 1))))


def test_transpose_of_transpose_that_composes_to_the_identity_is_removed():
    x = var("x", shape=(2, 3, 4))
    check(Function([x], op.transpose(op.transpose(x, (1, 2, 0)), (2, 0, 1))), identity((2, 3, 4)))
    check(Function([x], op.transpose(op.transpose(x))), identity((2, 3, 4)))  # None twice
    check(Function([x], op.transpose(op.transpose(x, (2, 1, 0)), None)), identity((2, 3, 4)))
    check(Function([x], op.transpose(op.transpose(x, (-1, 0, 1)), (1, 2, 0))), identity((2, 3, 4)))


def test_transpose_with_axes_none_composes_as_a_reversal():
    x = var("x", shape=(2, 3, 4))
    y = var("x", shape=(2, 3, 4))
    # reverse, then (1, 0, 2): out[i] = x[rev[q[i]]] = x[(1, 2, 0)[i]]
    check(
        Function([x], op.transpose(op.transpose(x), (1, 0, 2))),
        Function([y], op.transpose(y, (1, 2, 0))),
    )


def test_identity_transpose_is_removed():
    x = var("x", shape=(2, 3))
    check(Function([x], op.transpose(x, (0, 1))), identity())
    check(Function([x], op.transpose(x, (-2, -1))), identity())
    v = var("v", shape=(5,))
    check(Function([v], op.transpose(v)), identity((5,)))  # reversing one axis


def test_non_identity_transposes_stay():
    x = var("x", shape=(2, 3))
    check_unchanged(Function([x], op.transpose(x)))
    check_unchanged(Function([x], op.transpose(x, (1, 0))))
    y = var("y", shape=(2, 3, 4))
    check_unchanged(Function([y], op.transpose(op.exp(op.transpose(y, (1, 0, 2))), (1, 0, 2))))


def test_layout_transform_pairs():
    x = var("x", shape=(1, 3, 4, 5))
    y = var("x", shape=(1, 3, 4, 5))
    there = op.layout_transform
    back = Function([x], there(there(x, "NCHW", "NHWC"), "NHWC", "NCHW"))
    check(back, identity((1, 3, 4, 5)))
    hop = Function([x], there(there(x, "NCHW", "NHWC"), "NHWC", "HWCN"))
    check(hop, Function([y], there(y, "NCHW", "HWCN")))
    check(Function([x], there(x, "NCHW", "NCHW")), identity((1, 3, 4, 5)))
    check_unchanged(Function([x], there(there(x, "NCHW", "NHWC"), "NCWH", "NCHW")))


# -- cast and concatenate -----------------------------------------------------------------------


def test_cast_to_the_same_dtype():
    x = var("x", shape=(2, 3))
    check(Function([x], op.cast(x, "float32")), identity())


def test_cast_to_another_dtype_stays():
    x = var("x", shape=(2, 3))
    check_unchanged(Function([x], op.cast(x, "float16")))
    check_unchanged(Function([x], op.cast(op.cast(x, "int32"), "float32")))


def test_concatenate_of_one_tensor():
    x = var("x", shape=(2, 3))
    check(Function([x], op.concatenate([x], axis=1)), identity())


def test_concatenate_of_a_one_field_tuple_value():
    x = var("x", shape=(2, 3))
    t = Var("t")
    y, t2 = var("x", shape=(2, 3)), Var("t")
    before = Function([x], Let(t, Tuple([x]), op.concatenate(t)))
    check(before, Function([y], Let(t2, Tuple([y]), TupleGetItem(t2, 0))))


def test_concatenate_of_two_tensors_stays():
    x = var("x", shape=(2, 3))
    check_unchanged(Function([x], op.concatenate([x, x], axis=0)))


# -- fixed point, sharing, node kinds -----------------------------------------------------------


def test_fixed_point_in_one_run():
    x = var("x", shape=(2, 3))
    check(Function([x], op.add(op.multiply(x, ones(1)), zeros(3))), identity())
    body = op.transpose(op.reshape(op.negative(op.negative(op.reshape(x, (3, 2)))), (2, 3)), (0, 1))
    body = op.cast(op.concatenate([op.divide(body, const(1.0))], axis=0), "float32")
    check(Function([x], body), identity())


def test_parsed_expected_ir():
    before = parse(
        """
        def @main(%x: Tensor[(2, 3), float32]) {
          %0 = reshape(%x, newshape=[3, 2]);
          %1 = reshape(%0, newshape=[6]);
          %2 = transpose(%x, axes=[1, 0]);
          %3 = transpose(%2, axes=[1, 0]);
          add(%1, reshape(%3, newshape=[-1]))
        }
        """
    )
    expected = parse(
        """
        def @main(%x: Tensor[(2, 3), float32]) -> Tensor[(6,), float32] {
          %0 = reshape(%x, newshape=[6]);
          add(%0, reshape(%x, newshape=[-1]))
        }
        """
    )
    assert_structural_equal(irpass.transform.SimplifyExpr()(before)["main"], expected["main"])


def test_shared_nodes_stay_shared():
    x = var("x", shape=(2, 3))
    s = op.exp(op.add(x, zeros(3)))
    out = simplify(Function([x], op.add(s, op.negative(op.negative(s)))))
    lhs, rhs = out.body.args
    assert lhs is rhs
    assert lhs.op is Op.get("exp") and lhs.args[0] is out.params[0]


def test_unchanged_module_and_function_keep_their_identity():
    mod = models.mlp()
    assert irpass.transform.SimplifyExpr()(mod) is mod


def test_rules_fire_in_lets_ifs_closures_and_every_global():
    x = var("x", shape=(2, 3))
    v = Var("v")
    p = var("p", shape=(2, 3))
    closure = Function([p], op.negative(op.negative(p)))
    cond = op.greater(op.sum(x), const(0.0))
    body = Let(
        v,
        op.add(x, zeros(2, 3)),
        If(cond, Call(closure, [op.multiply(v, ones(3))]), op.reshape(op.reshape(v, (6,)), (2, 3))),
    )
    h = var("h", shape=(4,))
    helper = Function([h], op.transpose(op.transpose(h)))
    gv = GlobalVar("helper")
    mod = IRModule({"main": Function([x], op.add(body, zeros(1))), "helper": helper})
    out = irpass.transform.SimplifyExpr()(mod)

    x2, v2, p2, h2 = var("x", shape=(2, 3)), Var("v"), var("p", shape=(2, 3)), var("h", shape=(4,))
    cond2 = op.greater(op.sum(x2), const(0.0))
    expected_main = Function([x2], Let(v2, x2, If(cond2, Call(Function([p2], p2), [v2]), v2)))
    assert_structural_equal(out["main"], infer_type(expected_main))
    assert_structural_equal(out["helper"], infer_type(Function([h2], h2)))
    assert gv.name_hint in out


def test_rules_do_not_look_through_let_bound_vars():
    x = var("x", shape=(2, 3))
    v = Var("v")
    check_unchanged(Function([x], Let(v, op.negative(x), op.negative(v))))


def test_skips_primitive_functions():
    x = var("x", shape=(2, 3))
    prim = Function([x], op.add(x, zeros(2, 3)), attrs={"Primitive": 1})
    mod = IRModule({"main": prim})
    assert irpass.transform.SimplifyExpr()(mod) is mod


def test_tuple_results_and_projections():
    x = var("x", shape=(2, 3))
    t = Tuple([op.add(x, zeros(2, 3)), op.negative(x)])
    before = Function([x], Tuple([TupleGetItem(t, 0), op.negative(TupleGetItem(t, 1))]))
    y = var("x", shape=(2, 3))
    t2 = Tuple([y, op.negative(y)])
    expected = Function([y], Tuple([TupleGetItem(t2, 0), op.negative(TupleGetItem(t2, 1))]))
    check(before, expected)


def test_input_module_is_untouched():
    x = var("x", shape=(2, 3))
    func = Function([x], op.reshape(op.reshape(x, (6,)), (2, 3)))
    mod = IRModule.from_expr(func)
    before = irpass.structural_hash(mod)
    out = check_semantics(irpass.transform.SimplifyExpr(), mod)
    assert out["main"].body is out["main"].params[0]
    assert mod["main"] is func and irpass.structural_hash(mod) == before
    assert func.body.args[0].op is Op.get("reshape")


def test_ill_typed_module_is_a_pass_error_naming_the_expression():
    x = var("x", shape=(2, 3))
    y = var("y", shape=(4,))
    mod = IRModule.from_expr(Function([x, y], op.add(x, y)))
    with pytest.raises(PassError) as info:
        Sequential([irpass.transform.SimplifyExpr()])(mod)
    assert "SimplifyExpr" in str(info.value) and "add(%x, %y)" in str(info.value)


def test_works_without_a_preceding_infer_type_in_the_context():
    # InferType disabled: the pass types the function itself.
    x = var("x", shape=(2, 3))
    mod = IRModule.from_expr(Function([x], op.add(x, zeros(2, 3))))
    with PassContext(disabled_pass=["InferType"]):
        out = irpass.transform.SimplifyExpr()(mod)
    assert out["main"].body is out["main"].params[0]


# -- deep programs ---------------------------------------------------------------------------------

DEPTH = 30_000


def test_deep_chain_of_identities():
    x = var("x", shape=(2, 3))
    body = x
    for i in range(DEPTH):
        body = op.add(body, zeros(3)) if i % 2 else op.exp(op.multiply(body, ones(1)))
    out = simplify(Function([x], body))
    node, n = out.body, 0
    while node is not out.params[0]:
        assert node.op is Op.get("exp")
        node, n = node.args[0], n + 1
    assert n == DEPTH // 2


def test_deep_chain_of_shape_ops_collapses():
    x = var("x", shape=(2, 3))
    body = x
    for i in range(DEPTH):
        body = op.reshape(body, (6,) if i % 2 == 0 else (2, 3))
    check(Function([x], body), identity())
    for _ in range(DEPTH):
        body = op.transpose(body)
    check(Function([x], body), identity())


def test_deep_let_chain():
    x = var("x", shape=(2, 3))
    vs = [Var(f"v{i}") for i in range(DEPTH)]
    body = vs[-1]
    for i in reversed(range(DEPTH)):
        prev = vs[i - 1] if i else x
        body = Let(vs[i], op.negative(op.negative(op.add(prev, zeros(2, 3)))), body)
    out = simplify(Function([x], body))
    node = out.body
    for _ in range(DEPTH):
        assert type(node) is Let and type(node.value) is Var
        node = node.body


def test_deep_negation_chain_is_linear_and_exact():
    x = var("x", shape=(2, 3))
    body = x
    for _ in range(DEPTH + 1):
        body = op.negative(body)
    out = simplify(Function([x], body))
    assert out.body.op is Op.get("negative") and out.body.args[0] is out.params[0]


# -- meaning ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_keeps_the_meaning_of_the_example_networks(name):
    check_semantics(irpass.transform.SimplifyExpr(), models.MODELS[name]())
    check_semantics(irpass.transform.SimplifyExpr(), models.MODELS[name](), config={FINITE: True})


def test_keeps_the_meaning_of_nhwc_resnet_after_simplify_inference():
    mod = models.resnet(layout="NHWC")
    check_semantics([irpass.transform.SimplifyInference(), irpass.transform.SimplifyExpr()], mod)


@settings(max_examples=60, deadline=None)
@given(sts.modules())
def test_keeps_the_meaning_of_random_programs(mod):
    check_semantics(irpass.transform.SimplifyExpr(), mod)


@settings(max_examples=30, deadline=None)
@given(sts.modules())
def test_keeps_the_meaning_of_random_programs_with_finite_math(mod):
    # the programs hold only finite values, where x * 0 is 0
    check_semantics(irpass.transform.SimplifyExpr(), mod, config={FINITE: True})


@settings(max_examples=30, deadline=None)
@given(sts.modules(lets=False, ifs=False, closures=False, globals=False, tuples=False))
def test_random_shape_programs_are_a_fixed_point(mod):
    # running the pass again changes nothing: the first run reached the fixed point
    once = irpass.transform.SimplifyExpr()(mod)
    assert irpass.transform.SimplifyExpr()(once) is once


# -- documentation ------------------------------------------------------------------------------


def test_doc_example_runs():
    text = DOC.read_text()
    assert text.startswith("### SimplifyExpr")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})


# -- random chains of the patterns the rules look for --------------------------------------------


@st.composite
def pattern_chains(draw):
    """``@main(x)``: a random chain of shape ops and neutral arithmetic over one input."""
    shape = draw(st.sampled_from([(2, 3), (1, 6), (2, 1, 3), (4,), (2, 2, 1), (2, 3, 4)]))
    x = var("x", shape=shape)
    body, cur = x, shape
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(
            st.sampled_from(
                [
                    "reshape",
                    "transpose",
                    "transpose",
                    "expand",
                    "squeeze",
                    "neg",
                    "add0",
                    "mul1",
                    "sub0",
                    "div1",
                    "mul0",
                    "cast",
                    "concat",
                    "exp",
                ]
            )
        )
        size = int(np.prod(cur))
        if kind == "reshape":
            options = [
                s
                for s in [(size,), (1, size), (size, 1), shape, cur, (2, size // 2)]
                if int(np.prod(s)) == size
            ]
            cur = draw(st.sampled_from(options))
            body = op.reshape(body, cur)
        elif kind == "transpose" and len(cur) >= 1:
            axes = draw(st.one_of(st.none(), st.permutations(range(len(cur)))))
            perm = tuple(reversed(range(len(cur)))) if axes is None else tuple(axes)
            body = op.transpose(body, None if axes is None else perm)
            cur = tuple(cur[p] for p in perm)
        elif kind == "expand":
            axis = draw(st.integers(-len(cur) - 1, len(cur)))
            n = draw(st.integers(0, 2))
            body = op.expand_dims(body, axis, n)
            pos = axis + len(cur) + 1 if axis < 0 else axis
            cur = cur[:pos] + (1,) * n + cur[pos:]
        elif kind == "squeeze":
            ones_at = [i for i, d in enumerate(cur) if d == 1]
            axes = draw(
                st.one_of(
                    st.none(),
                    st.lists(st.sampled_from(ones_at), unique=True) if ones_at else st.none(),
                )
            )
            body = op.squeeze(body, axes)
            drop = set(ones_at if axes is None else axes)
            cur = tuple(d for i, d in enumerate(cur) if i not in drop)
        elif kind in ("add0", "mul1", "sub0", "div1", "mul0"):
            value = 1.0 if kind in ("mul1", "div1") else 0.0
            # a neutral constant of a shape that broadcasts into cur, or a bigger one
            cshape = draw(st.sampled_from([(), cur[-1:], (1,) * len(cur), (2,) + cur]))
            c = const(np.full(cshape, value, "float32"))
            builder = {
                "add0": op.add,
                "mul1": op.multiply,
                "sub0": op.subtract,
                "div1": op.divide,
                "mul0": op.multiply,
            }[kind]
            body = (
                builder(c, body)
                if kind in ("add0", "mul1") and draw(st.booleans())
                else builder(body, c)
            )
            cur = tuple(np.broadcast_shapes(cur, cshape))
        elif kind == "cast":
            body = op.cast(op.cast(body, draw(st.sampled_from(["float32", "float64"]))), "float32")
        elif kind == "concat":
            body = op.concatenate([body], axis=0) if cur else body
        elif kind == "neg":
            body = op.negative(body)
        else:
            body = op.exp(op.tanh(body))
    return IRModule.from_expr(Function([x], body))


@settings(max_examples=150, deadline=None)
@given(pattern_chains())
def test_random_pattern_chains_keep_their_meaning_and_reach_a_fixed_point(mod):
    for config in ({}, {FINITE: True}):
        out = check_semantics(irpass.transform.SimplifyExpr(), mod, config=config)
        with PassContext(config=config):
            assert irpass.transform.SimplifyExpr()(out) is out


# -- chains of affine ops with constants ---------------------------------------------------------

XA = (1, 4, 3, 3)


def _cv(*values, shape=None, dtype="float32"):
    """A constant of ``values`` (small binary fractions: every sum and product is exact)."""
    data = np.asarray(values, dtype=dtype)
    return const(data.reshape(shape) if shape is not None else data)


C1 = (0.5, -1.25, 2.0, 0.75)
C2 = (1.5, 0.25, -0.5, 4.0)


def _ch(values, dtype="float32"):
    """A per-channel (C, 1, 1) constant against XA."""
    return _cv(*values, shape=(4, 1, 1), dtype=dtype)


def _np(values, shape=(4, 1, 1)):
    return np.asarray(values, "float32").reshape(shape)


def _affine_fn(build, shape=XA, dtype="float32"):
    x = var("x", shape=shape, dtype=dtype)
    return Function([x], build(x))


def _check_affine(build, expected, shape=XA, dtype="float32"):
    before = _affine_fn(build, shape, dtype)
    check_semantics(irpass.transform.SimplifyExpr(), IRModule.from_expr(before))
    check(before, _affine_fn(expected, shape, dtype))


def test_add_of_add_of_constants_is_one_add():
    _check_affine(
        lambda x: op.add(op.add(x, _ch(C1)), _ch(C2)),
        lambda x: op.add(x, const(_np(C1) + _np(C2))),
    )


def test_constant_on_the_left_and_subtract_merge_too():
    _check_affine(
        lambda x: op.subtract(op.add(_ch(C1), x), _ch(C2)),
        lambda x: op.add(x, const(_np(C1) - _np(C2))),
    )
    _check_affine(
        lambda x: op.add(op.subtract(x, _ch(C1)), const(np.float32(0.5))),
        lambda x: op.add(x, const(0.5 - _np(C1))),
    )


def test_multiply_of_multiply_of_constants_is_one_multiply():
    _check_affine(
        lambda x: op.multiply(_ch(C2), op.multiply(x, _ch(C1))),
        lambda x: op.multiply(x, const(_np(C1) * _np(C2))),
    )


def test_multiply_of_add_distributes_the_scale():
    # (x + c1) * c2 -> x * c2 + c1 * c2: the multiply moves next to x
    _check_affine(
        lambda x: op.multiply(op.add(x, _ch(C1)), _ch(C2)),
        lambda x: op.add(op.multiply(x, _ch(C2)), const(_np(C1) * _np(C2))),
    )


def test_multiply_then_add_is_the_normal_form():
    check_unchanged(_affine_fn(lambda x: op.add(op.multiply(x, _ch(C1)), _ch(C2))))


def test_batch_norm_then_scale_and_shift_become_one_multiply_and_one_add():
    # the caffe2-style ONNX models: BatchNormalization, then Mul and Add of unsqueezed vectors
    s, t, w, b = (_np(v) for v in (C1, C2, (2.0, 0.5, 1.0, -1.0), (0.25, 0.5, -0.75, 1.0)))

    def build(x):
        y = op.add(op.multiply(x, const(s)), const(t))
        y = op.multiply(y, op.expand_dims(const(w.reshape(4)), axis=1, num_newaxis=2))
        return op.add(y, op.expand_dims(const(b.reshape(4)), axis=1, num_newaxis=2))

    _check_affine(build, lambda x: op.add(op.multiply(x, const(s * w)), const(t * w + b)))


def test_whole_chains_merge_in_one_run():
    def build(x):
        y = x
        for i in range(6):
            y = op.add(y, _ch(C1)) if i % 2 else op.multiply(y, _ch(C2))
        return y

    c1, c2 = _np(C1), _np(C2)
    scale = c2**3
    shift = ((c1 * c2 + c1) * c2) + c1
    _check_affine(build, lambda x: op.add(op.multiply(x, const(scale)), const(shift)))


def test_bias_add_chains():
    b1 = _cv(*C1)
    b2 = _cv(*C2)
    v1, v2 = np.asarray(C1, "float32"), np.asarray(C2, "float32")
    # two bias_adds along the same axis stay a bias_add
    _check_affine(
        lambda x: op.nn.bias_add(op.nn.bias_add(x, b1), b2),
        lambda x: op.nn.bias_add(x, const(v1 + v2)),
    )
    # a per-channel add after a bias_add joins it
    _check_affine(
        lambda x: op.add(op.nn.bias_add(x, b1), _ch(C2)),
        lambda x: op.nn.bias_add(x, const(v1 + v2)),
    )
    # conv -> bias -> scale: the scale moves before the bias, which is scaled
    _check_affine(
        lambda x: op.multiply(op.nn.bias_add(x, b1), _ch(C2)),
        lambda x: op.nn.bias_add(op.multiply(x, _ch(C2)), const(v1 * v2)),
    )
    # a bias along the last axis of a dense output
    x2 = (2, 4)
    _check_affine(
        lambda x: op.add(op.nn.bias_add(x, b1, axis=-1), b2),
        lambda x: op.nn.bias_add(x, const(v1 + v2), axis=1),
        shape=x2,
    )


def test_bias_add_of_zeros_is_removed():
    _check_affine(lambda x: op.exp(op.nn.bias_add(x, _cv(0, 0, 0, 0))), op.exp)


def test_an_add_that_is_not_per_channel_after_a_bias_add_is_an_add():
    full = np.arange(36, dtype="float32").reshape(4, 3, 3) / 4
    _check_affine(
        lambda x: op.add(op.nn.bias_add(x, _cv(*C1)), const(full)),
        lambda x: op.add(x, const(_np(C1) + full)),
    )


def test_integer_chains_wrap_as_the_ops_do():
    big = np.int32(2**30)
    _check_affine(
        lambda x: op.multiply(op.add(x, const(big)), const(np.int32(4))),
        # 2**30 * 4 wraps to 0: the add of zeros goes too
        lambda x: op.multiply(x, const(np.int32(4))),
        shape=(2, 3),
        dtype="int32",
    )


def test_reshape_like_ops_of_constants_are_constants():
    data = np.asarray(C1, "float32")
    check(
        _affine_fn(lambda x: op.add(x, op.expand_dims(const(data), axis=1, num_newaxis=2))),
        _affine_fn(lambda x: op.add(x, const(data.reshape(4, 1, 1)))),
    )
    check(
        _affine_fn(
            lambda x: op.add(x, op.reshape(op.squeeze(const(_np(C1, (1, 4))), [0]), (4, 1, 1)))
        ),
        _affine_fn(lambda x: op.add(x, const(_np(C1)))),
    )


@pytest.mark.parametrize(
    "build",
    [
        # the merged constant would be bigger than either operand
        lambda x: op.add(op.add(x, _cv(1, 2, 3, shape=(3, 1))), _cv(1, 2, 3, shape=(1, 3))),
        # not finite
        lambda x: op.multiply(op.multiply(x, const(np.float32(np.inf))), const(np.float32(0))),
        lambda x: op.add(op.add(x, const(np.float32(np.nan))), const(np.float32(1))),
        # c - x is no x + c
        lambda x: op.add(op.subtract(const(np.float32(1)), x), const(np.float32(2))),
        # division is not merged (1 / c is inexact)
        lambda x: op.multiply(op.divide(x, const(np.float32(3))), const(np.float32(3))),
        # both sides constant: FoldConstant's job
        lambda x: op.add(x, op.add(const(np.float32(1)), const(np.float32(2)))),
    ],
    ids=["grows", "inf", "nan", "c-x", "divide", "constants"],
)
def test_affine_chains_do_not_merge(build):
    x = var("x", shape=(3, 3))
    check_unchanged(Function([x], build(x)))


def test_shared_inner_op_is_not_merged():
    x = var("x", shape=XA)
    inner = op.add(x, _ch(C1))
    for outer in (op.add(inner, _ch(C2)), op.multiply(inner, _ch(C2))):
        check_unchanged(Function([x], op.add(outer, op.exp(inner))))
        check_unchanged(Function([x], Tuple([outer, inner])))


def test_a_use_left_by_an_earlier_rule_does_not_count():
    # transpose by the identity is removed; its one reference to the add goes with it
    _check_affine(
        lambda x: op.multiply(op.transpose(op.add(x, _ch(C1)), (0, 1, 2, 3)), _ch(C2)),
        lambda x: op.add(op.multiply(x, _ch(C2)), const(_np(C1) * _np(C2))),
    )
    _check_affine(
        lambda x: op.add(op.negative(op.negative(op.add(x, _ch(C1)))), _ch(C2)),
        lambda x: op.add(x, const(_np(C1) + _np(C2))),
    )


def test_affine_chains_keep_side_effects(stateful_op):
    x = var("x", shape=XA)
    effect = Call(stateful_op, [x])
    out = simplify(Function([x], op.add(op.add(effect, _ch(C1)), _ch(C2))))
    assert out.body.op is Op.get("add") and out.body.args[0].op is stateful_op
    np.testing.assert_array_equal(out.body.args[1].data, _np(C1) + _np(C2))


def test_deep_affine_chain_merges_into_one_op():
    # per round: ((x * 0.5 + 1 + 1 + 1) * 2) = x + 6; the scales cancel, the shifts add up
    x = var("x", shape=(2, 3))
    body = x
    half, one, two = (const(np.float32(v)) for v in (0.5, 1.0, 2.0))
    rounds = DEPTH // 4
    for _ in range(rounds):
        body = op.multiply(body, half)
        for _ in range(3):
            body = op.add(body, one)
        body = op.multiply(body, two)
    expected = _affine_fn(lambda y: op.add(y, const(np.float32(6 * rounds))), shape=(2, 3))
    check(Function([x], body), expected)


@st.composite
def affine_chains(draw):
    """``@main(x)``: random chains of add/subtract/multiply/bias_add by constants, with shape
    ops and unary ops between them and some nodes shared by two users."""
    dtype = draw(st.sampled_from(["float32", "float32", "int32"]))
    shape = draw(st.sampled_from([(2, 3), (1, 3, 2, 2), (4,)]))
    x = var("x", shape=shape, dtype=dtype)
    nodes = [x]
    body = x
    for _ in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(["add", "sub", "rsub", "mul", "bias", "neg", "exp", "share"]))
        cur = shape
        channel = cur[:1] + (1,) * (len(cur) - 1)
        cshape = draw(st.sampled_from([(), cur[-1:], (1,) * len(cur), channel]))
        size = int(np.prod(cshape))
        values = draw(
            st.lists(
                st.sampled_from([-2.0, -0.5, 0.0, 0.25, 1.0, 3.0]), min_size=size, max_size=size
            )
        )
        c = const(np.asarray(values, dtype=dtype).reshape(cshape))
        if kind == "add":
            body = op.add(body, c) if draw(st.booleans()) else op.add(c, body)
        elif kind == "sub":
            body = op.subtract(body, c)
        elif kind == "rsub":
            body = op.subtract(c, body)
        elif kind == "mul":
            body = op.multiply(body, c) if draw(st.booleans()) else op.multiply(c, body)
        elif kind == "bias":
            axis = draw(st.integers(0, len(cur) - 1))
            n = cur[axis]
            vec = np.asarray(
                draw(st.lists(st.sampled_from([-1.0, 0.5, 2.0]), min_size=n, max_size=n)),
                dtype=dtype,
            )
            body = op.nn.bias_add(body, const(vec), axis=axis)
        elif kind == "neg":
            body = op.negative(body)
        elif kind == "exp" and dtype == "float32":
            body = op.tanh(body)
        elif kind == "share":
            body = op.add(body, draw(st.sampled_from(nodes)))
        nodes.append(body)
    return IRModule.from_expr(Function([x], body))


@settings(max_examples=150, deadline=None)
@given(affine_chains())
def test_random_affine_chains_keep_their_meaning_and_reach_a_fixed_point(mod):
    out = check_semantics(irpass.transform.SimplifyExpr(), mod)
    assert irpass.transform.SimplifyExpr()(out) is out
    # no rule adds an op call: a merge never duplicates an op that has other users
    assert _op_calls(out["main"]) <= _op_calls(mod["main"])


def _op_calls(func):
    """The number of distinct op calls in ``func``."""
    found = set()
    post_order_visit(func, lambda n: found.add(n) if type(n) is Call else None)
    return len(found)


def test_a_node_built_by_a_rule_keeps_the_users_of_the_node_it_replaced():
    # (x + 0.5) * 0 -> x * 0 + 0 -> x * 0, which has the two users of the original multiply:
    # the multiply by 3 must not swallow it
    def build(x, first):
        t = op.multiply(first(x), const(np.float32(0)))
        return Tuple([op.multiply(t, const(np.float32(3))), t])

    x = var("x", shape=(2, 3))
    before = Function([x], build(x, lambda v: op.add(v, const(np.float32(0.5)))))
    check_semantics(irpass.transform.SimplifyExpr(), IRModule.from_expr(before))
    y = var("x", shape=(2, 3))
    check(before, Function([y], build(y, lambda v: v)))
