"""DeadCodeElimination (plugins/irpass_std/dead_code.py): one expected-IR test per rule and
per case where nothing may be removed (effects!), every node kind, sharing, deep chains,
and meaning on the example networks and random programs."""

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
    FuncType,
    If,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    assert_structural_equal,
    parse,
    post_order_visit,
    structural_hash,
)
from irpass.testing import check_semantics, models
from irpass.testing import strategies as sts
from irpass.transform import PassContext, Sequential, get_pass, list_passes
from irpass_std.dead_code import eliminate_dead_code, is_pure
from std_fixtures import register_stateful_op

DOC = (
    Path(__file__).resolve().parents[1] / "plugins" / "irpass_std" / "docs"
    / "DeadCodeElimination.md"
)
T = TensorType((2,), "float32")


def dce_module(mod: IRModule) -> IRModule:
    with PassContext(opt_level=3):
        return irpass.transform.DeadCodeElimination()(mod)


def dce(func: Function) -> Function:
    return dce_module(IRModule.from_expr(func))["main"]


def check(before: Function, expected: Function) -> None:
    assert_structural_equal(dce(before), expected)


def check_unchanged(before: Function) -> None:
    mod = IRModule.from_expr(before)
    out = dce_module(mod)
    assert out is mod
    assert out["main"] is before


def x2(name: str = "x") -> Var:
    return var(name, shape=(2,))


def op_names(expr) -> list[str]:
    names: list[str] = []
    post_order_visit(
        expr, lambda n: names.append(n.op.name) if type(n) is Call and type(n.op) is Op else None
    )
    return names


# -- registration ------------------------------------------------------------------------------


def test_registered_with_its_info():
    p = irpass.transform.DeadCodeElimination()
    assert p.info.name == "DeadCodeElimination"
    assert p.info.opt_level == 1
    assert list(p.info.required) == []
    assert "DeadCodeElimination" in list_passes()
    assert get_pass("DeadCodeElimination").info.opt_level == 1


# -- let bindings ------------------------------------------------------------------------------


def test_unused_binding_is_removed():
    x = x2()
    d = Var("d")
    check(Function([x], Let(d, op.tanh(x), op.nn.relu(x))), Function([x], op.nn.relu(x)))


def test_used_binding_is_kept():
    x = x2()
    d = Var("d")
    check_unchanged(Function([x], Let(d, op.tanh(x), op.nn.relu(d))))


def test_binding_used_only_by_dead_bindings_is_dead():
    x = x2()
    a, b, c, keep = Var("a"), Var("b"), Var("c"), Var("keep")
    before = Function(
        [x],
        Let(a, op.exp(x),
            Let(keep, op.negative(x),
                Let(b, op.tanh(a),
                    Let(c, op.add(a, b), op.add(keep, x))))),
    )
    keep2 = Var("keep")
    check(before, Function([x], Let(keep2, op.negative(x), op.add(keep2, x))))


def test_only_the_dead_bindings_of_a_chain_go():
    x = x2()
    a, b, c = Var("a"), Var("b"), Var("c")
    before = Function([x], Let(a, op.exp(x), Let(b, op.tanh(x), Let(c, op.negative(a), c))))
    a2, c2 = Var("a"), Var("c")
    check(before, Function([x], Let(a2, op.exp(x), Let(c2, op.negative(a2), c2))))


def test_unused_closure_binding_and_its_call_are_removed():
    x = x2()
    f, r, y = Var("f"), Var("r"), x2("y")
    before = Function([x], Let(f, Function([y], op.exp(y)), Let(r, Call(f, [x]), x)))
    check(before, Function([x], x))


def test_recursive_closure_used_only_by_itself_is_removed():
    x = x2()
    f = Var("f", FuncType([T], T))
    y = x2("y")
    loop = Function([y], Call(f, [op.negative(y)]))
    check(Function([x], Let(f, loop, op.exp(x))), Function([x], op.exp(x)))


def test_binding_in_a_let_value():
    x = x2()
    a, b, d = Var("a"), Var("b"), Var("d")
    inner = Let(d, op.tanh(x), op.exp(x))  # d dead inside the value of a
    before = Function([x], Let(a, inner, Let(b, op.sigmoid(x), a)))
    a2 = Var("a")
    check(before, Function([x], Let(a2, op.exp(x), a2)))


def test_bindings_inside_if_branches_and_closures():
    x = x2()
    d, e, g, y, h = Var("d"), Var("e"), Var("g"), x2("y"), Var("h")
    cond = op.greater(op.sum(x), const(np.float32(0)))
    closure = Function([y], Let(h, op.tanh(y), op.negative(y)))
    before = Function(
        [x],
        Let(g, closure,
            If(cond, Let(d, op.exp(x), Call(g, [x])), Let(e, op.sigmoid(x), op.abs(x)))),
    )
    g2, y2 = Var("g"), x2("y")
    expected = Function(
        [x], Let(g2, Function([y2], op.negative(y2)), If(cond, Call(g2, [x]), op.abs(x)))
    )
    check(before, expected)


def test_every_global_function_is_cleaned():
    x = x2()
    a = x2("a")
    d, e = Var("d"), Var("e")
    helper = GlobalVar("helper")
    mod = IRModule(
        {
            "main": Function([x], Let(d, op.exp(x), Call(helper, [x]))),
            "helper": Function([a], Let(e, op.tanh(a), a)),
        }
    )
    out = dce_module(mod)
    a2 = x2("a")
    assert_structural_equal(out["main"], Function([x], Call(out.get_global_var("helper"), [x])))
    assert_structural_equal(out["helper"], Function([a2], a2))


# -- effects -----------------------------------------------------------------------------------


def test_unused_stateful_call_is_kept(stateful_op):
    x = x2()
    a, s = Var("a"), Var("s")
    # %a feeds the stateful call, so it stays too.
    check_unchanged(Function([x], Let(a, op.exp(x), Let(s, Call(stateful_op, [a]), x))))


def test_unused_binding_that_contains_a_stateful_call_is_kept(stateful_op):
    x = x2()
    s, d = Var("s"), Var("d")
    before = Function([x], Let(s, op.add(Call(stateful_op, [x]), x), Let(d, op.tanh(x), x)))
    s2 = Var("s")
    check(before, Function([x], Let(s2, op.add(Call(stateful_op, [x]), x), x)))


def test_pure_code_is_removed_when_stateful_ops_exist(stateful_op):
    x = x2()
    d = Var("d")
    check(Function([x], Let(d, op.tanh(x), op.nn.relu(x))), Function([x], op.nn.relu(x)))


def test_calls_of_global_functions_follow_their_bodies(stateful_op):
    x, a, b = x2(), x2("a"), x2("b")
    pure, noisy = GlobalVar("pure"), GlobalVar("noisy")
    r, s = Var("r"), Var("s")
    mod = IRModule(
        {
            "main": Function([x], Let(r, Call(pure, [x]), Let(s, Call(noisy, [x]), x))),
            "pure": Function([a], op.exp(a)),
            "noisy": Function([b], op.negative(Call(stateful_op, [b]))),
        }
    )
    out = dce_module(mod)
    s2 = Var("s")
    assert_structural_equal(
        out["main"], Function([x], Let(s2, Call(out.get_global_var("noisy"), [x]), x))
    )


def test_recursive_global_calls_are_kept_when_ops_may_have_effects(stateful_op):
    x, a = x2(), x2("a")
    loop = GlobalVar("loop")
    r = Var("r")
    body = If(op.greater(op.sum(a), const(np.float32(0))),
              Call(loop, [op.subtract(a, const(np.float32(1)))]), a)
    mod = IRModule(
        {
            "main": Function([x], Let(r, Call(loop, [x]), x)),
            "loop": Function([a], body, ret_type=T),
        }
    )
    assert dce_module(mod) is mod


def test_recursive_global_calls_are_pure_without_stateful_ops():
    x, a = x2(), x2("a")
    loop = GlobalVar("loop")
    r = Var("r")
    body = If(op.greater(op.sum(a), const(np.float32(0))),
              Call(loop, [op.subtract(a, const(np.float32(1)))]), a)
    mod = IRModule(
        {
            "main": Function([x], Let(r, Call(loop, [x]), x)),
            "loop": Function([a], body, ret_type=T),
        }
    )
    assert_structural_equal(dce_module(mod)["main"], Function([x], x))


def test_calls_of_closures_follow_their_bodies(stateful_op):
    x, y, z = x2(), x2("y"), x2("z")
    f, g, r, s = Var("f"), Var("g"), Var("r"), Var("s")
    before = Function(
        [x],
        Let(f, Function([y], op.exp(y)),
            Let(g, Function([z], Call(stateful_op, [z])),
                Let(r, Call(f, [x]),
                    Let(s, Call(g, [x]), x)))),
    )
    g2, s2, z2 = Var("g"), Var("s"), x2("z")
    expected = Function(
        [x], Let(g2, Function([z2], Call(stateful_op, [z2])), Let(s2, Call(g2, [x]), x))
    )
    check(before, expected)
    # A function literal called directly.
    lit = Function([z], Call(stateful_op, [z]))
    check_unchanged(Function([x], Let(s, Call(lit, [x]), x)))


def test_calls_of_unknown_function_values(stateful_op):
    x = x2()
    k = Var("k", FuncType([T], T))
    r = Var("r")
    check_unchanged(Function([x, k], Let(r, Call(k, [x]), x)))


def test_calls_of_unknown_function_values_without_stateful_ops():
    x = x2()
    k = Var("k", FuncType([T], T))
    r = Var("r")
    check(Function([x, k], Let(r, Call(k, [x]), x)), Function([x, k], x))


def test_is_pure(stateful_op):
    x = x2()
    assert is_pure(op.exp(x))
    assert not is_pure(op.exp(Call(stateful_op, [x])))
    assert is_pure(Function([x], Call(stateful_op, [x])))  # making a closure runs nothing
    assert not is_pure(Call(Function([x], Call(stateful_op, [x])), [x]))


# -- tuple fields ------------------------------------------------------------------------------


def test_projection_of_a_tuple_literal_keeps_only_its_field():
    x = x2()
    before = Function([x], TupleGetItem(Tuple([op.exp(x), op.tanh(x), x]), 1))
    check(before, Function([x], op.tanh(x)))


def test_nested_projections():
    x = x2()
    inner = Tuple([op.exp(x), op.tanh(x)])
    before = Function([x], TupleGetItem(TupleGetItem(Tuple([inner, op.sigmoid(x)]), 0), 1))
    check(before, Function([x], op.tanh(x)))
    # the selected field is itself a projection of a tuple literal
    before = Function(
        [x], TupleGetItem(Tuple([TupleGetItem(inner, 0), op.abs(x)]), 0)
    )
    check(before, Function([x], op.exp(x)))


def test_dropped_field_frees_its_bindings():
    x = x2()
    a = Var("a")
    before = Function([x], Let(a, op.exp(x), TupleGetItem(Tuple([a, op.negative(x)]), 1)))
    check(before, Function([x], op.negative(x)))


def test_projection_keeps_a_stateful_field(stateful_op):
    x = x2()
    check_unchanged(Function([x], TupleGetItem(Tuple([Call(stateful_op, [x]), op.tanh(x)]), 1)))
    # the selected field may have effects: the others are still dropped
    before = Function([x], TupleGetItem(Tuple([Call(stateful_op, [x]), op.tanh(x)]), 0))
    check(before, Function([x], Call(stateful_op, [x])))


def test_projection_of_a_non_literal_tuple_stays():
    x = x2()
    t = Var("t")
    pair = Tuple([op.exp(x), op.tanh(x)])
    check_unchanged(Function([x], Let(t, pair, TupleGetItem(t, 1))))
    check_unchanged(Function([x], TupleGetItem(op.split(x, indices_or_sections=2), 0)))


# -- sharing, identity, input untouched ------------------------------------------------------


def test_a_let_or_projection_deep_below_other_nodes_is_found():
    # A function with no let and no projection is returned at once after a scan: the
    # scan must see through calls, ifs and tuples to the one let or projection inside.
    x = x2()
    d = Var("d")
    cond = op.greater(op.sum(x), const(np.float32(0)))
    deep_let = If(cond, Let(d, op.tanh(x), op.exp(x)), op.abs(x))
    check(
        Function([x], op.nn.relu(op.add(deep_let, x))),
        Function([x], op.nn.relu(op.add(If(cond, op.exp(x), op.abs(x)), x))),
    )
    deep_projection = TupleGetItem(Tuple([op.exp(x), op.tanh(x)]), 1)
    check(
        Function([x], Tuple([op.negative(op.multiply(x, deep_projection)), x])),
        Function([x], Tuple([op.negative(op.multiply(x, op.tanh(x))), x])),
    )


def test_a_function_without_lets_or_projections_is_returned_as_is():
    x = x2()
    chain = x
    for _ in range(50):
        chain = op.nn.relu(op.add(chain, chain))
    check_unchanged(Function([x], Tuple([chain, op.exp(x)])))


def test_shared_nodes_stay_shared():
    x = x2()
    d = Var("d")
    shared = op.exp(x)
    out = dce(Function([x], Let(d, op.tanh(x), op.add(shared, op.negative(shared)))))
    assert out.body.args[0] is out.body.args[1].args[0]
    assert out.body.args[0] is shared  # unchanged subtrees are not rebuilt


def test_function_with_nothing_dead_keeps_its_identity():
    x, a = x2(), x2("a")
    d = Var("d")
    same = Function([x], op.exp(x))
    cleaned = Function([a], Let(d, op.exp(a), a))
    mod = IRModule({"main": same, "g": cleaned})
    out = dce_module(mod)
    assert out["main"] is same
    assert out["g"] is not cleaned


def test_input_module_is_unchanged():
    x = x2()
    d = Var("d")
    mod = IRModule.from_expr(Function([x], Let(d, op.tanh(x), op.nn.relu(x))))
    before = structural_hash(mod)
    main = mod["main"]
    dce_module(mod)
    assert structural_hash(mod) == before and mod["main"] is main


def test_eliminate_dead_code_helper_without_a_module(stateful_op):
    x, a = x2(), x2("a")
    helper = GlobalVar("helper")
    r = Var("r")
    func = Function([x], Let(r, Call(helper, [x]), x))
    assert eliminate_dead_code(func) is func  # unknown callee: kept
    mod = IRModule({"main": func, "helper": Function([a], a)})
    assert_structural_equal(eliminate_dead_code(func, mod), Function([x], x))


def test_parsed_program():
    mod = parse(
        """
        #[version = "irpass 0.1"]
        def @main(%x: Tensor[(2,), float32]) {
          let %a = exp(%x);
          let %b = tanh(%a);
          let %c = negative(%x);
          (%c, %a).0
        }
        """
    )
    expected = parse(
        """
        #[version = "irpass 0.1"]
        def @main(%x: Tensor[(2,), float32]) {
          let %c = negative(%x);
          %c
        }
        """
    )
    assert_structural_equal(dce_module(mod), expected)


# -- meaning -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_models_keep_their_meaning(name):
    mod = models.MODELS[name]()
    out = check_semantics(irpass.transform.DeadCodeElimination(), mod)
    assert out is mod  # the example networks have no dead code


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_models_with_a_dead_binding_keep_their_meaning(name):
    # One dead binding in front of the network: it goes, the network stays as it was.
    mod = models.MODELS[name]()
    main = mod["main"]
    dead = Var("dead")
    mod = mod.with_function("main", Function(
        main.params, Let(dead, op.negative(main.params[0]), main.body), main.ret_type, main.attrs
    ))
    out = check_semantics(irpass.transform.DeadCodeElimination(), mod)
    assert_structural_equal(out["main"].body, main.body)


@settings(max_examples=60, deadline=None)
@given(sts.modules())
def test_random_programs_keep_their_meaning(mod):
    check_semantics(irpass.transform.DeadCodeElimination(), mod)


@settings(max_examples=30, deadline=None)
@given(sts.modules())
def test_random_programs_keep_their_stateful_calls(mod):
    counter = register_stateful_op("test.dce_counter_h", override=True)
    main = mod["main"]
    s = Var("s")
    body = Let(s, Call(counter, [main.params[0]]), main.body)
    mod = mod.with_function("main", Function(main.params, body, main.ret_type, main.attrs))
    out = check_semantics(irpass.transform.DeadCodeElimination(), mod)
    assert op_names(out["main"]).count("test.dce_counter_h") == 1


# -- depth -------------------------------------------------------------------------------------


def w3(n: int) -> tuple[Function, object]:
    """The W3 workload: ``let d_i = tanh(x_i); ...`` with x_{i+1} = relu(add(x_i, x_i))."""
    x = var("x", shape=(4, 4))
    xs = [x]
    for _ in range(n):
        xs.append(op.nn.relu(op.add(xs[-1], xs[-1])))
    body = xs[n]
    for i in reversed(range(n)):
        body = Let(Var(f"d{i}"), op.tanh(xs[i]), body)
    return Function([x], body), xs[n]


def test_deep_let_chain_w3():
    n = 30_000
    func, dataflow = w3(n)
    out = dce(func)
    assert out.body is dataflow  # no let left, the dataflow chain untouched
    assert "tanh" not in op_names(out)


def test_deep_chain_of_transitively_dead_bindings():
    n = 30_000
    x = x2()
    vs = [Var(f"v{i}") for i in range(n)]
    body = op.exp(x)
    for i in reversed(range(n)):
        body = Let(vs[i], op.negative(vs[i - 1] if i else x), body)
    check(Function([x], body), Function([x], op.exp(x)))


def test_deep_live_let_chain_is_returned_as_is(stateful_op):
    n = 30_000
    x = x2()
    vs = [Var(f"v{i}") for i in range(n)]
    body = vs[-1]
    for i in reversed(range(n)):
        value = op.negative(vs[i - 1] if i else x)
        if i % 1000 == 0:
            value = Call(stateful_op, [value])
        body = Let(vs[i], value, body)
    check_unchanged(Function([x], body))


def test_deep_dataflow_chain_of_projections():
    n = 30_000
    x = x2()
    cur = x
    for _ in range(n):
        cur = TupleGetItem(Tuple([op.exp(x), op.negative(cur)]), 1)
    out = dce(Function([x], cur))
    assert op_names(out) == ["negative"] * n


def test_deeply_nested_projections():
    n = 30_000
    x = x2()
    nested = op.exp(x)
    for _ in range(n):
        nested = Tuple([nested, op.negative(x)])
    proj = nested
    for _ in range(n):
        proj = TupleGetItem(proj, 0)
    out = dce(Function([x], op.add(x, proj)))
    assert_structural_equal(out, Function([x], op.add(x, op.exp(x))))


# -- in a pipeline, documented -----------------------------------------------------------------


def test_in_a_sequential_at_its_opt_level():
    x = x2()
    d = Var("d")
    mod = IRModule.from_expr(Function([x], Let(d, op.tanh(x), x)))
    seq = Sequential([irpass.transform.DeadCodeElimination()])
    with PassContext(opt_level=0):
        assert seq(mod) is mod
    with PassContext(opt_level=1):
        assert seq(mod) is not mod


def test_doc_example_runs():
    text = DOC.read_text()
    assert text.startswith("### DeadCodeElimination")
    assert "*function pass, opt level 1; requires nothing; no config options*" in text
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})
