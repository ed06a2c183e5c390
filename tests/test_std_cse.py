"""EliminateCommonSubexpr (plugins/irpass_std/cse.py): expected-IR tests per rule and per
case that must not merge (attrs, stateful ops, fskip, scopes of If branches and closures,
calls of functions), let-bound and tuple cases, several globals, TVM's pass-infra example,
deep programs, and meaning on the example networks and random programs."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import irpass
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from irpass import Function, GlobalVar, IRModule, PassError, const, op, var
from irpass.ir import (
    AttrField,
    Call,
    Constant,
    ExprMutator,
    If,
    Let,
    Op,
    OpPattern,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    assert_structural_equal,
    infer_type,
    post_order_visit,
    register_op,
    structural_equal,
    well_formed,
)
from irpass.testing import check_semantics, models
from irpass.testing import strategies as sts
from irpass.transform import PassContext, Sequential, get_pass, list_passes
from irpass_std import cse as cse_module_impl
from irpass_std.cse import MAX_CONSTANT_ELEMENTS, EliminateCommonSubexpr

DOC = (
    Path(__file__).resolve().parents[1] / "plugins" / "irpass_std" / "docs"
    / "EliminateCommonSubexpr.md"
)
F32 = TensorType((4, 4), "float32")


def cse_module(mod: IRModule, fskip=None) -> IRModule:
    """``mod`` typed, then through the pass (a pass called alone runs no requirement)."""
    with PassContext(opt_level=3):
        return EliminateCommonSubexpr(fskip)(infer_type(mod))


def cse(func: Function, fskip=None) -> Function:
    """``func`` as ``@main`` of a module, through the pass; the new ``@main``."""
    return cse_module(IRModule.from_expr(func), fskip)["main"]


def typed(expected: Function) -> Function:
    """A hand-written expected ``@main`` as InferType leaves it (return type filled in)."""
    return infer_type(IRModule.from_expr(expected))["main"]


def with_infer_type() -> list:
    """The pass after InferType, for check_semantics."""
    return [get_pass("InferType"), EliminateCommonSubexpr()]


def check(before: Function, expected: Function, fskip=None) -> Function:
    out = cse(before, fskip)
    assert_structural_equal(out, typed(expected))
    assert well_formed(IRModule.from_expr(out))
    return out


def check_unchanged(before: Function, fskip=None) -> None:
    mod = infer_type(IRModule.from_expr(before))
    with PassContext(opt_level=3):
        out = EliminateCommonSubexpr(fskip)(mod)
    assert out is mod
    assert out["main"] is mod["main"]


def op_calls(expr, name: str) -> list[Call]:
    """The distinct call nodes of op ``name`` reachable from ``expr``."""
    found: list[Call] = []
    post_order_visit(
        expr,
        lambda n: found.append(n) if type(n) is Call and type(n.op) is Op
        and n.op.name == name else None,
    )
    return found


def cond_of(x: Var):
    return op.greater(op.sum(x), const(0.0))


# -- registration ------------------------------------------------------------------------------


def test_registered_with_tvm_name_level_and_requirement():
    assert "EliminateCommonSubexpr" in list_passes()
    p = get_pass("EliminateCommonSubexpr")
    assert p.info.opt_level == 3
    assert tuple(p.info.required) == ("InferType",)
    assert type(irpass.transform.EliminateCommonSubexpr()).__name__ == "EliminateCommonSubexpr"


def test_fskip_must_be_callable():
    with pytest.raises(TypeError, match="fskip must be callable"):
        EliminateCommonSubexpr(fskip=3)


# -- op calls ----------------------------------------------------------------------------------


def test_simple_duplicate_call_is_merged():
    x = var("x", F32)
    before = Function([x], op.add(op.exp(x), op.exp(x)))
    e = op.exp(x)
    out = check(before, Function([x], op.add(e, e)))
    assert out.body.args[0] is out.body.args[1]
    # the call met first is kept (the walk takes a call's last argument first)
    assert out.body.args[0] is before.body.args[1]


def test_merging_cascades_up_chains():
    x, y = var("x", F32), var("y", F32)
    a1, a2 = op.add(x, y), op.add(x, y)
    b1, b2 = op.multiply(a1, y), op.multiply(a2, y)
    c1, c2 = op.tanh(b1), op.tanh(b2)
    before = Function([x, y], op.subtract(c1, c2))
    a = op.add(x, y)
    c = op.tanh(op.multiply(a, y))
    out = check(before, Function([x, y], op.subtract(c, c)))
    assert len(op_calls(out, "add")) == len(op_calls(out, "multiply")) == 1


def test_w2_steps_keep_one_exp_per_step():
    x = var("x", F32)
    cur = x
    for _ in range(5):
        cur = op.add(op.exp(cur), op.exp(cur))
    out = cse(Function([x], cur))
    assert len(op_calls(out, "exp")) == 5 and len(op_calls(out, "add")) == 5
    expected = x
    for _ in range(5):
        e = op.exp(expected)
        expected = op.add(e, e)
    assert_structural_equal(out, typed(Function([x], expected)))


def test_argument_order_matters():
    x, y = var("x", F32), var("y", F32)
    check_unchanged(Function([x, y], op.multiply(op.subtract(x, y), op.subtract(y, x))))


def test_different_ops_are_not_merged():
    x = var("x", F32)
    check_unchanged(Function([x], op.add(op.exp(x), op.tanh(x))))


def test_structurally_equal_but_different_args_are_not_merged():
    # two params that look alike are different variables
    x, y = var("x", F32), var("x", F32)
    check_unchanged(Function([x, y], op.add(op.exp(x), op.exp(y))))


def test_equal_attrs_are_merged():
    x = var("x", F32)
    before = Function([x], op.add(op.sum(x, axis=0), op.sum(x, axis=[0])))
    s = op.sum(x, axis=0)
    check(before, Function([x], op.add(s, s)))


def test_different_attrs_are_not_merged():
    x = var("x", F32)
    check_unchanged(Function([x], op.add(op.sum(x, axis=0), op.sum(x, axis=1))))
    check_unchanged(
        Function([x], op.add(op.sum(x, axis=0, keepdims=True), op.sum(x, axis=0)))
    )
    check_unchanged(Function([x], op.add(op.clip(x, 0.0, 1.0), op.clip(x, 0.0, 2.0))))


def test_attr_values_compare_exactly():
    # a test op whose attribute takes any plain value, so kinds can differ
    scale = register_op(
        "test.cse_scale",
        num_inputs=1,
        attrs=[AttrField("alpha", lambda value, where: value, 1.0)],
        type_rel=lambda args, attrs: args[0],
        kernel=lambda args, attrs: args[0] * np.float32(float(attrs.alpha)),
        pattern=OpPattern.ELEMWISE,
    )
    x = var("x", F32)

    def pair(a, b):
        calls = [Call(scale, [x], {"alpha": a}), Call(scale, [x], {"alpha": b})]
        return Function([x], Tuple(calls))

    # equal under Python's ==, but different values or kinds: not merged
    for a, b in [(0.0, -0.0), (1, 1.0), (True, 1), ((1, 2), (1.0, 2))]:
        check_unchanged(pair(a, b))
    # nan equals nan (the same computation); equal tuples merge
    for a, b in [(float("nan"), float("nan")), ((1, 2), [1, 2]), (-0.0, -0.0)]:
        out = cse(pair(a, b))
        assert out.body.fields[0] is out.body.fields[1], (a, b)


def test_stateful_calls_are_not_merged_but_their_arguments_are(stateful_op):
    tick = stateful_op
    x = var("x", F32)
    before = Function([x], op.add(Call(tick, [op.exp(x)]), Call(tick, [op.exp(x)])))
    e = op.exp(x)
    out = check(before, Function([x], op.add(Call(tick, [e]), Call(tick, [e]))))
    assert out.body.args[0] is not out.body.args[1]
    assert out.body.args[0].args[0] is out.body.args[1].args[0]


def test_calls_without_arguments_are_not_merged():
    # as in TVM: a call with no inputs is left alone
    x = var("x", F32)
    check_unchanged(Function([x], op.add(op.add(x, op.zeros((4, 4))), op.zeros((4, 4)))))


def test_calls_of_global_functions_are_not_merged():
    x = var("x", F32)
    p = var("p", F32)
    helper = GlobalVar("helper")
    main = Function([x], op.add(Call(helper, [op.exp(x)]), Call(helper, [op.exp(x)])))
    mod = IRModule({"main": main, helper: Function([p], op.tanh(p))})
    out = cse_module(mod)["main"]
    e = op.exp(x)
    assert_structural_equal(out.body, op.add(Call(helper, [e]), Call(helper, [e])))
    assert out.body.args[0] is not out.body.args[1]


def test_calls_of_closures_and_vars_are_not_merged():
    x, p = var("x", F32), var("p", F32)
    f = var("f")
    closure = Function([p], op.tanh(p))
    before = Function([x], Let(f, closure, op.add(Call(f, [x]), Call(f, [x]))))
    check_unchanged(before)
    direct = Function([x], op.add(Call(closure, [x]), Call(closure, [x])))
    check_unchanged(direct)


# -- fskip -------------------------------------------------------------------------------------


def test_fskip_keeps_skipped_calls_apart():
    x = var("x", F32)
    a = op.add(op.exp(x), op.exp(x))
    b = op.add(op.exp(x), op.exp(x))
    before = Function([x], op.multiply(a, b))

    def skip_add(expr):
        return isinstance(expr, Call) and expr.op.name == "add"

    e = op.exp(x)
    out = check(before, Function([x], op.multiply(op.add(e, e), op.add(e, e))), skip_add)
    assert out.body.args[0] is not out.body.args[1]
    # without fskip both adds merge
    merged = cse(before)
    assert merged.body.args[0] is merged.body.args[1]


def test_fskip_node_is_not_a_canonical_either():
    x = var("x", F32)
    first, second, third = op.exp(x), op.exp(x), op.exp(x)
    before = Function([x], Tuple([first, second, third]))
    out = cse(before, fskip=lambda e: e is first)
    # the skipped first call stays alone; the two others merge with each other
    assert out.body.fields[0] is first
    assert out.body.fields[1] is out.body.fields[2] is third
    out = cse(before, fskip=lambda e: e is third)
    assert out.body.fields[2] is third
    assert out.body.fields[0] is out.body.fields[1] is second


def test_fskip_sees_typed_input_nodes():
    x = var("x", F32)
    seen = []

    def fskip(expr):
        seen.append((expr, expr.checked_type))
        return False

    before = Function([x], op.add(op.exp(x), op.exp(x)))
    cse(before, fskip)
    assert {id(e) for e, _ in seen} >= {id(before.body), id(before.body.args[1])}
    assert all(ty == F32 for _, ty in seen)


def test_fskip_applies_to_tuples_and_projections():
    x = var("x", F32)
    t1, t2 = Tuple([x, x]), Tuple([x, x])
    before = Function([x], Tuple([TupleGetItem(t1, 0), TupleGetItem(t2, 0)]))
    check_unchanged(before, fskip=lambda e: isinstance(e, (Tuple, TupleGetItem)))
    out = cse(before, fskip=lambda e: isinstance(e, TupleGetItem))
    assert out.body.fields[0] is not out.body.fields[1]
    assert out.body.fields[0].tuple_value is out.body.fields[1].tuple_value


# -- tuples, projections, constants ------------------------------------------------------------


def test_tuple_get_item_of_the_same_tuple_and_index_is_merged():
    x = var("x", F32)
    s = op.split(x, 2)
    before = Function([x], op.add(op.exp(s[0]), op.exp(s[0])))
    item = s[0]
    e = op.exp(item)
    out = check(before, Function([x], op.add(e, e)))
    assert out.body.args[0] is out.body.args[1]
    # different indices stay apart
    check_unchanged(Function([x], op.concatenate([s[0], s[1]], axis=0)))


def test_projections_of_merged_tuples_are_merged():
    x = var("x", F32)
    s1, s2 = op.split(x, 2), op.split(x, 2)
    before = Function([x], op.concatenate([s1[1], s2[1]], axis=0))
    s = op.split(x, 2)
    check(before, Function([x], op.concatenate([s[1], s[1]], axis=0)))


def test_tuples_with_identical_fields_are_merged():
    x, y = var("x", F32), var("y", F32)
    before = Function([x, y], Tuple([Tuple([x, op.exp(y)]), Tuple([x, op.exp(y)])]))
    inner = Tuple([x, op.exp(y)])
    out = check(before, Function([x, y], Tuple([inner, inner])))
    assert out.body.fields[0] is out.body.fields[1]
    check_unchanged(Function([x, y], Tuple([Tuple([x, y]), Tuple([y, x])])))


def test_small_equal_constants_are_merged_by_value():
    x = var("x", F32)
    before = Function([x], op.add(op.multiply(x, const(2.0)), op.multiply(x, const(2.0))))
    m = op.multiply(x, const(2.0))
    out = check(before, Function([x], op.add(m, m)))
    assert out.body.args[0] is out.body.args[1]


def test_constants_that_differ_are_not_merged():
    x = var("x", F32)
    check_unchanged(Function([x], Tuple([op.add(x, const(0.0)), op.add(x, const(-0.0))])))
    for a, b in [
        (const(1.0), const(1.0, "float64")),
        (const(np.ones((2,), "float32")), const(np.ones((1, 2), "float32"))),
    ]:
        check_unchanged(Function([x], Tuple([a, b])))


def test_constants_whose_value_hashes_collide_merge_only_when_equal(monkeypatch):
    # the table is keyed by the hash of the value: with every hash equal, equal values
    # must still merge and different ones stay apart
    monkeypatch.setattr(cse_module_impl, "_constant_hash", lambda value: 0)
    x = var("x", F32)
    values = [np.float32(1.0), np.float32(2.0), np.float32(1.0), np.float32(2.0), np.float32(3.0)]
    before = Function([x], Tuple([op.multiply(x, const(v)) for v in values]))
    out = cse(before)
    f = out.body.fields
    assert f[0] is f[2] and f[1] is f[3]
    assert len({id(f[0]), id(f[1]), id(f[4])}) == 3
    check_semantics(with_infer_type(), IRModule.from_expr(before))


def test_big_constants_are_not_compared():
    x = var("x", F32)
    big = np.ones((MAX_CONSTANT_ELEMENTS + 1,), "float32")
    check_unchanged(Function([x], Tuple([op.exp(const(big)), op.exp(const(big))])))
    small = np.ones((MAX_CONSTANT_ELEMENTS,), "float32")
    out = cse(Function([x], Tuple([op.exp(const(small)), op.exp(const(small))])))
    assert out.body.fields[0] is out.body.fields[1]


def test_constant_nodes_merge_outside_calls_too():
    x = var("x", F32)
    before = Function([x], Tuple([const(1.0), const(1.0)]))
    out = cse(before)
    assert isinstance(out.body.fields[0], Constant)
    assert out.body.fields[0] is out.body.fields[1]


# -- let ---------------------------------------------------------------------------------------


def test_let_bound_duplicate_is_merged_into_the_enclosing_let():
    x = var("x", F32)
    a, b = var("a"), var("b")
    before = Function([x], Let(a, op.exp(x), Let(b, op.exp(x), op.add(a, b))))
    a2 = var("a")
    check(before, Function([x], Let(a2, op.exp(x), op.add(a2, a2))))


def test_a_normal_form_chain_is_merged():
    x = var("x", F32)
    a, b, c, d = (var(n) for n in "abcd")
    before = Function([x], Let(a, op.exp(x), Let(b, op.exp(x), Let(
        c, op.add(a, x), Let(d, op.add(b, x), op.multiply(c, d))))))
    a2, c2 = var("a"), var("c")
    check(before, Function([x], Let(a2, op.exp(x), Let(c2, op.add(a2, x), op.multiply(c2, c2)))))


def test_let_var_is_not_used_outside_its_let():
    x = var("x", F32)
    a = var("a")
    # (let a = exp(x); tanh(a), exp(x)): the second exp may share the node, never use %a
    before = Function([x], Tuple([Let(a, op.exp(x), op.tanh(a)), op.exp(x)]))
    e = op.exp(x)
    out = check(before, Function([x], Tuple([Let(a, e, op.tanh(a)), e])))
    assert well_formed(IRModule.from_expr(out))
    assert out.body.fields[1] is out.body.fields[0].value


def test_let_inside_let_value_does_not_leak():
    x = var("x", F32)
    a, b = var("a"), var("b")
    # let b = (let a = exp(x); a); let c = exp(x) -> c may not become %a (out of scope)
    c = var("c")
    before = Function([x], Let(b, Let(a, op.exp(x), a), Let(c, op.exp(x), op.add(b, c))))
    out = cse(before)
    assert well_formed(IRModule.from_expr(out))
    assert len(op_calls(out, "exp")) == 1
    check_semantics(with_infer_type(), IRModule.from_expr(before))


def test_let_of_var_is_left_alone():
    x = var("x", F32)
    a, b = var("a"), var("b")
    check_unchanged(Function([x], Let(a, x, Let(b, x, op.add(a, b)))))


# -- a let var merged into an enclosing one stays inside that let -------------------------------

_X23 = "def @main(%x: Tensor[(2, 3), float32]) {\n"
_COND23 = "%9 = greater(sum(%x), 0f32);\n"
# In each program the block {let %v = abs(%x); ...} is met first inside the body of a let
# binding the same value (%t), where %v may become %t, and is also used outside that body.
ESCAPING_LET_VARS = {
    "issue": "%0 = { let %v = abs(%x); %v };\n%1 = tanh(%0);\n"
    "%2 = { let %t = abs(%x); negative(%1) };\n(%1, %2)",
    "chain_in_the_block": "%0 = { let %v = abs(%x); let %w = exp(%v); %w };\n%1 = tanh(%0);\n"
    "%2 = { let %t = abs(%x); let %u = exp(%t); negative(%1) };\n(%1, %2)",
    "block_is_the_let_body": "%0 = { let %v = abs(%x); tanh(%v) };\n"
    "%1 = { let %t = abs(%x); %0 };\n(%0, %1)",
    "if_branch": _COND23 + "%0 = { let %v = abs(%x); %v };\n%1 = tanh(%0);\n"
    "%2 = { let %t = abs(%x); if (%9) { negative(%1) } else { %x } };\n(%1, %2)",
    "if_branch_with_the_let": _COND23 + "%0 = { let %v = abs(%x); %v };\n%1 = tanh(%0);\n"
    "%2 = if (%9) { let %t = abs(%x); negative(%1) } else { %x };\n(%1, %2)",
    "closure_in_the_let": "%0 = { let %v = abs(%x); %v };\n%1 = tanh(%0);\n"
    "%2 = { let %t = abs(%x); fn () { negative(%1) } };\n%3 = fn () { %1 };\n"
    "(%3(), %1, %2())",
    "closure_shared": "%0 = fn () { let %v = abs(%x); %v };\n"
    "%1 = { let %t = abs(%x); %0 };\n(%0(), %1())",
    "outer_let_not_innermost": "%0 = { let %v = abs(%x); %v };\n%1 = tanh(%0);\n"
    "%2 = { let %t = abs(%x); let %a = exp(%x); let %b = sigmoid(%a); add(%1, %b) };\n(%1, %2)",
}


def _escaping(name: str) -> IRModule:
    return irpass.parse(_X23 + ESCAPING_LET_VARS[name] + "\n}")


def test_let_var_merged_inside_a_let_does_not_escape_it():
    out = cse_module(_escaping("issue"))["main"]
    (x,) = out.params
    a, v, t = op.abs(x), var("v"), var("t")
    # the block is used outside %t's body too: its %v stays, and tanh of it stays shared
    shared = op.tanh(Let(v, a, v))
    expected = Function([x], Tuple([shared, Let(t, a, op.negative(shared))]))
    assert_structural_equal(out, typed(expected))
    assert out.body.fields[0] is out.body.fields[1].body.args[0]


@pytest.mark.parametrize("name", sorted(ESCAPING_LET_VARS))
def test_let_var_merges_stay_in_scope_through_the_pass(name):
    mod = _escaping(name)
    # check_semantics checks well_formed and compares outputs on random inputs
    check_semantics(with_infer_type(), mod)


@pytest.mark.parametrize("name", ["issue", "if_branch", "closure_shared"])
def test_let_var_merges_stay_in_scope_through_the_default_pipeline(name):
    from irpass.transform import default_pipeline

    check_semantics(default_pipeline(3), _escaping(name))


def test_block_shared_inside_and_outside_a_let_stays_one_node():
    # the block is met inside %t's body under the lets %a and %b and used outside %t
    # too: its %v stays, so every use, inside or out, is the same node. A block used
    # only there, once, still has its %w merged into %t
    x = var("x", F32)
    t, a, b, v, w = var("t"), var("a"), var("b"), var("v"), var("w")
    block = Let(v, op.abs(x), op.tanh(v))
    own = Let(w, op.abs(x), op.exp(w))
    body = Let(a, op.exp(x), Let(b, op.add(block, a), Tuple([b, op.negative(block)])))
    scope = Let(t, op.abs(x), Tuple([body, op.sigmoid(block), own]))
    out = cse(Function([x], Tuple([block, scope])))  # the walk meets the last field first
    assert well_formed(IRModule.from_expr(out))
    outside, inside = out.body.fields
    in_a, in_sigmoid, in_own = inside.body.fields
    uses = [in_a.body.value.args[0], in_a.body.body.fields[1].args[0], in_sigmoid.args[0]]
    assert all(u is outside for u in uses)
    assert_structural_equal(outside, Let(v, op.abs(x), op.tanh(v)))
    assert_structural_equal(in_own, op.exp(inside.var))


@st.composite
def let_block_programs(draw, max_steps=12):
    """Programs over one (2, 3) input with let blocks used as values, lets around later
    values, ifs and closures; a few unary ops make the same values recur."""
    x = var("x", shape=(2, 3))
    pool: list = [x]
    unary = st.sampled_from([op.abs, op.tanh, op.negative, op.sigmoid])
    block_values: list = []  # (op, argument) of the blocks' values, for lets to repeat

    def pick():
        k = draw(st.integers(0, len(pool) - 1))
        return pool[-1 - k % 3] if draw(st.booleans()) else pool[k]

    for i in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(["unary", "binary", "block", "let", "if", "closure"]))
        if kind == "unary":
            pool.append(draw(unary)(pick()))
        elif kind == "binary":
            pool.append(op.add(pick(), pick()))
        elif kind == "block":
            v = Var(f"v{i}")
            body = draw(st.sampled_from(["var", "unary", "binary"]))
            tail = v if body == "var" else draw(unary)(v) if body == "unary" else op.add(v, pick())
            fn, arg = draw(unary), pick()
            block_values.append((fn, arg))
            pool.append(Let(v, fn(arg), tail))
        elif kind == "let":
            t = Var(f"t{i}")
            if block_values and draw(st.booleans()):
                fn, arg = draw(st.sampled_from(block_values))  # a block's value again
            else:
                fn, arg = draw(unary), pick()
            value = fn(arg)
            tail = draw(unary)(pick()) if draw(st.booleans()) else op.add(pick(), t)
            pool.append(Let(t, value, tail))
        elif kind == "if":
            cond = op.greater(op.sum(pick()), const(np.float32(0)))
            pool.append(If(cond, draw(unary)(pick()), pick()))
        else:
            pool.append(Call(Function([], draw(unary)(pick())), []))
    # the walk meets the last field first: the newest value, then the older ones
    fields = [pick() for _ in range(draw(st.integers(0, 3)))] + [pool[-1]]
    return IRModule.from_expr(Function([x], Tuple(fields) if len(fields) > 1 else fields[0]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(let_block_programs())
def test_meaning_on_random_programs_with_let_blocks(mod):
    out = check_semantics(with_infer_type(), mod, seeds=(0,))
    assert cse_module(out) is out  # a second run finds nothing more


# -- If scoping --------------------------------------------------------------------------------


def test_equal_calls_in_the_two_branches_stay_in_their_branch():
    x = var("x", F32)
    c = const(np.full((4, 4), 0.5, "float32"))
    # even with constant-only arguments: one branch's call may not stand in for the other's
    check_unchanged(Function([x], If(cond_of(x), op.exp(c), op.exp(c))))
    check_unchanged(Function([x], If(cond_of(x), op.exp(x), op.tanh(op.exp(x)))))


def test_duplicates_inside_one_branch_are_merged():
    x = var("x", F32)
    before = Function([x], If(cond_of(x), op.add(op.exp(x), op.exp(x)), x))
    e = op.exp(x)
    check(before, Function([x], If(cond_of(x), op.add(e, e), x)))


def test_branch_call_merges_into_a_dominating_outer_call():
    x = var("x", F32)
    outer = op.exp(x)
    # the walk meets the unconditional exp(x) first (last argument first)
    before = Function([x], op.add(If(cond_of(x), op.exp(x), x), outer))
    out = check(before, Function([x], op.add(If(cond_of(x), outer, x), outer)))
    assert out.body.args[0].true_branch is out.body.args[1]


def test_branch_call_merges_into_the_condition():
    x = var("x", F32)
    cond = op.greater(op.sum(op.exp(x)), const(0.0))
    before = Function([x], If(cond, op.exp(x), x))
    out = cse(before)
    assert out.body.true_branch is out.body.cond.args[0].args[0]


def test_outer_call_does_not_merge_into_a_branch_call():
    x = var("x", F32)
    # the branch is visited first: its exp(x) may not replace the unconditional one
    before = Function([x], op.add(op.exp(x), If(cond_of(x), op.exp(x), x)))
    out = cse(before)
    assert out.body.args[0] is not out.body.args[1].true_branch
    assert len(op_calls(out, "exp")) == 2


def test_nested_if_sees_the_enclosing_branch_only():
    x = var("x", F32)
    inner = If(cond_of(x), op.exp(x), x)
    before = Function([x], If(cond_of(x), op.add(inner, op.exp(x)), op.exp(x)))
    out = cse(before)
    assert well_formed(IRModule.from_expr(out))
    true_branch = out.body.true_branch
    # the inner if's exp merges with its enclosing branch's, the else branch keeps its own
    assert true_branch.args[0].true_branch is true_branch.args[1]
    assert out.body.false_branch is not true_branch.args[1]
    assert len(op_calls(out, "exp")) == 2
    # the inner condition merged into the outer one (it runs inside the then branch)
    assert out.body.cond is true_branch.args[0].cond


def test_node_shared_by_both_branches_stays_shared():
    x = var("x", F32)
    shared = op.tanh(x)
    before = Function([x], If(cond_of(x), op.exp(shared), op.negative(shared)))
    check_unchanged(before)


# -- closures ----------------------------------------------------------------------------------


def test_closures_with_different_params_are_not_merged():
    x, p, q = var("x", F32), var("p", F32), var("q", F32)
    f, g = var("f"), var("g")
    body = Let(f, Function([p], op.exp(p)), Let(g, Function([q], op.exp(q)),
                                                 op.add(Call(f, [x]), Call(g, [x]))))
    check_unchanged(Function([x], body))


def test_equal_calls_in_sibling_closures_stay_apart():
    x, p, q = var("x", F32), var("p", F32), var("q", F32)
    c = const(np.full((4, 4), 0.5, "float32"))
    f, g = var("f"), var("g")
    body = Let(f, Function([p], op.add(p, op.exp(c))),
               Let(g, Function([q], op.add(q, op.exp(c))), op.add(Call(f, [x]), Call(g, [x]))))
    check_unchanged(Function([x], body))


def test_duplicates_inside_a_closure_are_merged():
    x, p = var("x", F32), var("p", F32)
    f = var("f")
    before = Function([x], Let(f, Function([p], op.add(op.exp(p), op.exp(p))), Call(f, [x])))
    e = op.exp(p)
    f2 = var("f")
    check(before, Function([x], Let(f2, Function([p], op.add(e, e)), Call(f2, [x]))))


def test_closure_body_merges_into_a_dominating_outer_call():
    x, p = var("x", F32), var("p", F32)
    outer = op.exp(x)
    f = var("f")
    closure = Function([p], op.add(p, op.exp(x)))  # captures x
    before = Function([x], Let(f, closure, op.add(outer, Call(f, [outer]))))
    out = cse(before)
    assert well_formed(IRModule.from_expr(out))
    # the closure was visited before the outer exp: it keeps its own call
    assert len(op_calls(out, "exp")) == 2
    before2 = Function([x], Let(var("e"), outer, Let(f, closure, Call(f, [outer]))))
    out2 = cse(before2)
    assert out2.body.body.value.body.args[1] is out2.body.value
    check_semantics(with_infer_type(), IRModule.from_expr(before2))


def test_primitive_closures_are_left_alone():
    x, p = var("x", F32), var("p", F32)
    f = var("f")
    prim = Function([p], op.add(op.exp(p), op.exp(p))).with_attr("Primitive", 1)
    before = Function([x], Let(f, prim, Call(f, [x])))
    check_unchanged(before)


# -- modules -----------------------------------------------------------------------------------


def test_every_global_function_is_merged_on_its_own():
    x, p = var("x", F32), var("p", F32)
    helper = GlobalVar("helper")
    main = Function([x], op.add(Call(helper, [op.exp(x)]), op.exp(x)))
    mod = IRModule({"main": main, helper: Function([p], op.add(op.tanh(p), op.tanh(p)))})
    out = cse_module(mod)
    e = op.exp(x)
    assert_structural_equal(out["main"].body, op.add(Call(helper, [e]), e))
    t = op.tanh(p)
    assert_structural_equal(out["helper"], typed(Function([p], op.add(t, t))))
    check_semantics(with_infer_type(), mod)


def test_unchanged_function_keeps_its_identity_in_a_changed_module():
    x, p = var("x", F32), var("p", F32)
    helper = GlobalVar("helper")
    helper_fn = Function([p], op.tanh(p))
    mod = IRModule({"main": Function([x], op.add(op.exp(x), op.exp(x))), helper: helper_fn})
    mod = infer_type(mod)  # typed first: InferType may rebuild a function to annotate it
    out = cse_module(mod)
    assert out is not mod
    assert out["helper"] is mod["helper"]


def test_nothing_to_merge_returns_the_same_function_and_module():
    x, y = var("x", F32), var("y", F32)
    e = op.exp(x)
    check_unchanged(Function([x, y], op.add(e, op.multiply(e, y))))


def test_second_run_changes_nothing():
    mod = models.resnet()
    once = cse_module(mod)
    assert cse_module(once) is once


def test_primitive_global_function_is_skipped():
    x = var("x", F32)
    prim = Function([x], op.add(op.exp(x), op.exp(x))).with_attr("Primitive", 1)
    mod = infer_type(IRModule.from_expr(prim))
    assert cse_module(mod) is mod


def test_ill_typed_module_is_a_pass_error_and_input_is_untouched():
    x = var("x", TensorType((4, 4), "float32"))
    y = var("y", TensorType((3,), "float32"))
    mod = IRModule.from_expr(Function([x, y], op.add(op.exp(x), op.exp(y))))
    text = str(mod)
    with pytest.raises(PassError, match="InferType"), PassContext(opt_level=3):
        Sequential(with_infer_type())(mod)
    assert str(mod) == text


# -- the example of TVM's pass-infrastructure documentation ------------------------------------


def _doc_example():
    x = var("x", F32)
    data = np.random.default_rng(0).standard_normal((4, 4)).astype("float32")
    c = const(data)
    y = op.add(x, op.multiply(op.add(c, c), const(np.float32(2))))
    z, z1 = op.add(y, c), op.add(y, c)
    return IRModule.from_expr(Function([x], op.add(z, z1))), data, x, c


def test_tvm_doc_example_merges_z_and_z1():
    mod, _, x, c = _doc_example()
    out = cse_module(mod)
    y = op.add(x, op.multiply(op.add(c, c), const(np.float32(2))))
    z = op.add(y, c)
    assert_structural_equal(out["main"], typed(Function([x], op.add(z, z))))
    assert out["main"].body.args[0] is out["main"].body.args[1]


def test_tvm_doc_example_pipeline_at_opt_level_3():
    mod, data, x, c = _doc_example()
    seq = Sequential([get_pass(n) for n in (
        "InferType", "FoldConstant", "EliminateCommonSubexpr", "AlterOpLayout")])
    with PassContext(opt_level=3):
        out = seq(mod)
    y = op.add(x, const((data + data) * np.float32(2)))  # folded by numpy, not by a pass
    z = op.add(y, c)
    assert_structural_equal(out["main"], typed(Function([x], op.add(z, z))))


# -- deep programs -----------------------------------------------------------------------------


def test_deep_dataflow_chain():
    n = 30_000
    x = var("x", F32)
    cur = x
    for _ in range(n):
        cur = op.add(op.exp(cur), op.exp(cur))
    mod = IRModule.from_expr(Function([x], cur))
    out = cse_module(mod)["main"]
    assert len(op_calls(out, "exp")) == n
    node = out.body
    for _ in range(n):  # every step is add(e, e) with one shared exp
        assert node.args[0] is node.args[1]
        node = node.args[0].args[0]
    assert node is x


def test_deep_let_chain_in_a_normal_form():
    n = 30_000
    x = var("x", F32)
    bindings = []
    cur = x
    for i in range(n):
        a, b, s = var(f"a{i}"), var(f"b{i}"), var(f"s{i}")
        bindings += [(a, op.exp(cur)), (b, op.exp(cur)), (s, op.add(a, b))]
        cur = s
    body = cur
    for v, value in reversed(bindings):
        body = Let(v, value, body)
    out = cse_module(IRModule.from_expr(Function([x], body)))["main"]
    node, lets = out.body, 0
    while type(node) is Let:
        lets += 1
        if node.value.op.name == "add":
            assert node.value.args[0] is node.value.args[1]
        node = node.body
    assert lets == 2 * n


def test_deep_let_chain_whose_duplicates_come_later():
    # let a_i = multiply(x, c_i) for all i, then let b_i = multiply(x, c_i): each b_i merges
    # into a_i, n lets up; which lets enclose which is found in one walk, not one per b_i
    n = 30_000
    x = var("x", F32)
    scales = [const(np.full((4, 4), i, "float32")) for i in range(n)]
    a = [var(f"a{i}") for i in range(n)]
    b = [var(f"b{i}") for i in range(n)]
    body = op.add(a[0], b[0])
    for i in reversed(range(n)):
        body = Let(b[i], op.multiply(x, scales[i]), body)
    for i in reversed(range(n)):
        body = Let(a[i], op.multiply(x, scales[i]), body)
    out = cse(Function([x], body))
    node, names = out.body, []
    while type(node) is Let:
        names.append(node.var.name_hint)
        node = node.body
    assert names == [f"a{i}" for i in range(n)]
    assert node.args[0] is node.args[1] is out.body.var


def test_deep_nesting_of_ifs():
    n = 2_000
    x = var("x", F32)
    body = op.add(op.exp(x), op.exp(x))
    for _ in range(n):
        body = If(cond_of(x), body, op.exp(x))
    out = cse(Function([x], body))
    assert well_formed(IRModule.from_expr(out))
    # one exp per else branch, one in the innermost then branch (the conditions share theirs)
    assert len(op_calls(out, "exp")) == n + 1
    assert len(op_calls(out, "sum")) == 1



def test_deep_nesting_of_closures():
    n = 1_000
    x = var("x", F32)
    # level i: (fn(p_i) { add(p_i, <level i-1>) })(exp(x)); the innermost body is x
    body = x
    for i in range(n):
        p = var(f"p{i}", F32)
        body = Call(Function([p], op.add(p, body)), [op.exp(x)])
    mod = IRModule.from_expr(Function([x], body))
    out = cse_module(mod)["main"]
    assert well_formed(IRModule.from_expr(out))
    # each argument is met before the closure it is passed to, in an enclosing scope:
    # every exp(x) merges into the outermost one
    assert len(op_calls(out, "exp")) == 1
    check_semantics(with_infer_type(), mod)

# -- meaning -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_meaning_on_example_networks(name):
    check_semantics(with_infer_type(), models.MODELS[name]())


def test_meaning_on_nhwc_resnet():
    check_semantics(with_infer_type(), models.resnet(layout="NHWC"))


class _Unshare(ExprMutator):
    """Give every use of an op call, tuple or projection its own (equal) node: duplicates."""

    def _fresh(self, expr):
        expr = self.visit(expr)
        t = type(expr)
        if t is Call and type(expr.op) is Op and expr.args and not expr.op.stateful:
            # (calls the pass never merges, as those without arguments, stay shared)
            return Call(expr.op, expr.args, expr.attrs)
        if t is Tuple:
            return Tuple(expr.fields)
        if t is TupleGetItem:
            return TupleGetItem(expr.tuple_value, expr.index)
        return expr

    def visit_call(self, call):
        callee = call.op if type(call.op) is Op else self.visit(call.op)
        return Call(callee, [self._fresh(a) for a in call.args], call.attrs)

    def visit_tuple(self, tup):
        return Tuple([self._fresh(f) for f in tup.fields])


def unshare(mod: IRModule) -> IRModule:
    return IRModule({gv: _Unshare().visit(func) for gv, func in mod.items()})


def duplicates(func: Function) -> list[tuple[Call, Call]]:
    """Pairs of distinct op calls of ``func`` with the same op, the same argument nodes and
    structurally equal attrs (an independent check; only meaningful without scopes)."""
    groups: dict[tuple, list[Call]] = defaultdict(list)

    def collect(node):
        if type(node) is Call and type(node.op) is Op and node.args and not node.op.stateful:
            groups[(node.op, tuple(map(id, node.args)))].append(node)

    post_order_visit(func, collect)
    return [
        (a, b)
        for calls in groups.values()
        for i, a in enumerate(calls)
        for b in calls[i + 1:]
        if structural_equal(a.attrs, b.attrs)
    ]


def count_nodes(func: Function) -> int:
    n = [0]
    post_order_visit(func, lambda _: n.__setitem__(0, n[0] + 1))
    return n[0]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sts.modules())
def test_meaning_on_random_programs(mod):
    check_semantics(with_infer_type(), mod)
    dup = unshare(mod)
    out = check_semantics(with_infer_type(), dup)
    assert cse_module(out) is out  # a second run finds nothing more


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sts.modules(ifs=False, closures=False))
def test_no_duplicates_left_in_programs_with_one_scope(mod):
    out = check_semantics(with_infer_type(), unshare(mod))
    for gv, func in out.items():
        assert not duplicates(func), gv.name_hint
        assert count_nodes(func) <= count_nodes(mod[gv.name_hint])


def test_unshare_helper_makes_duplicates():
    # the helper the property tests rely on really creates work for the pass
    x = var("x", F32)
    e = op.exp(x)
    mod = infer_type(IRModule.from_expr(Function([x], op.add(e, op.tanh(e)))))
    dup = unshare(mod)["main"]
    assert dup.body.args[0] is not dup.body.args[1].args[0]
    assert duplicates(dup) and not duplicates(cse(dup))


# -- documentation -----------------------------------------------------------------------------


def test_doc_paragraph_and_example():
    text = DOC.read_text()
    assert text.startswith("### EliminateCommonSubexpr")
    assert "*function pass, opt level 3; requires InferType; no config options*" in text
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})

