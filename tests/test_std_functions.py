"""LambdaLift, Inline and RemoveUnusedFunctions (plugins/irpass_std/functions.py): expected IR
for each rule (TVM style), the cases that must not fire, bad input, deep programs and meaning
on the example networks and on random programs."""

from __future__ import annotations

import re
from pathlib import Path

import irpass
import numpy as np
import pytest
from hypothesis import given, settings
from irpass import Function, GlobalVar, IRModule, PassError, const, op
from irpass.ir import (
    Call,
    FuncType,
    If,
    Let,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    assert_structural_equal,
    infer_type,
    well_formed,
)
from irpass.testing import check_semantics, models
from irpass.testing import strategies as sts
from irpass.transform import PassContext, get_pass

DOCS = Path(__file__).resolve().parents[1] / "plugins" / "irpass_std" / "docs"
T = TensorType((2, 3), "float32")
FT = FuncType([T], T)
DEPTH = 30_000


def tvar(name: str) -> Var:
    return Var(name, T)


def lets(*bindings, body):
    for v, value in reversed(bindings):
        body = Let(v, value, body)
    return body


def lift(mod: IRModule) -> IRModule:
    return irpass.transform.LambdaLift()(mod)


def inline(mod: IRModule) -> IRModule:
    return irpass.transform.Inline()(mod)


def assert_module_equal(out: IRModule, expected: IRModule) -> None:
    assert sorted(gv.name_hint for gv in out.get_global_vars()) == sorted(
        gv.name_hint for gv in expected.get_global_vars()
    )
    for gv, func in expected.items():
        assert_structural_equal(out[gv.name_hint], func)


def assert_lifted_equal(out: IRModule, expected: IRModule) -> None:
    """LambdaLift works on the typed module, whose functions InferType gave return types."""
    assert_module_equal(out, infer_type(expected))


def test_registered_with_tvm_names_and_levels():
    for name, level in (("LambdaLift", 0), ("Inline", 1), ("RemoveUnusedFunctions", 1)):
        p = get_pass(name)
        assert p.info.name == name
        assert p.info.opt_level == level
        assert tuple(p.info.required) == ()
    assert irpass.transform.RemoveUnusedFunctions(["f"]).entry_functions == ["f"]


# -- LambdaLift -------------------------------------------------------------------------------


def test_lift_closure_with_captured_var():
    # let %y = exp(%x); let %f = fn (%p) { %p * %y }; %f(%x) + %f(%y)
    x, p = tvar("x"), tvar("p")
    y, f = Var("y"), Var("f")
    closure = Function([p], op.multiply(p, y))
    main = Function([x], lets((y, op.exp(x)), (f, closure),
                              body=op.add(Call(f, [x]), Call(f, [y]))))
    out = check_semantics(irpass.transform.LambdaLift(), IRModule.from_expr(main))

    g = GlobalVar("lifted_main_0")
    y1, y2, p2 = Var("y"), tvar("y"), tvar("p")  # the captured var: a param with its type
    expected = IRModule({
        "main": Function([x], Let(y1, op.exp(x), op.add(Call(g, [y1, x]), Call(g, [y1, y1])))),
        "lifted_main_0": Function([y2, p2], op.multiply(p2, y2), T),
    })
    assert_lifted_equal(out, expected)


def test_lift_directly_called_function_literal():
    x, p = tvar("x"), tvar("p")
    main = Function([x], op.tanh(Call(Function([p], op.add(p, x)), [op.exp(x)])))
    out = check_semantics(irpass.transform.LambdaLift(), IRModule.from_expr(main))
    g = GlobalVar("lifted_main_0")
    x2, p2 = tvar("x"), tvar("p")
    expected = IRModule({
        "main": Function([x], op.tanh(Call(g, [x, op.exp(x)]))),
        "lifted_main_0": Function([x2, p2], op.add(p2, x2), T),
    })
    assert_lifted_equal(out, expected)


def test_lift_nested_closures_pass_on_captured_vars():
    # %g calls %f: @lifted(g) must capture what @lifted(f) needs (%y) to call it.
    x, p, q = tvar("x"), tvar("p"), tvar("q")
    y, f, g = Var("y"), Var("f"), Var("g")
    f_fn = Function([p], op.multiply(p, y))
    g_fn = Function([q], op.tanh(Call(f, [q])))
    main = Function([x], lets((y, op.exp(x)), (f, f_fn), (g, g_fn), body=Call(g, [x])))
    out = check_semantics(irpass.transform.LambdaLift(), IRModule.from_expr(main))

    gf, gg = GlobalVar("lifted_main_0"), GlobalVar("lifted_main_1")
    y1, yf, pf, yg, qg = Var("y"), tvar("y"), tvar("p"), tvar("y"), tvar("q")
    expected = IRModule({
        "main": Function([x], Let(y1, op.exp(x), Call(gg, [y1, x]))),
        "lifted_main_0": Function([yf, pf], op.multiply(pf, yf), T),
        "lifted_main_1": Function([yg, qg], op.tanh(Call(gf, [yg, qg])), T),
    })
    assert_lifted_equal(out, expected)


def test_lift_closure_defined_inside_a_closure():
    x, p, q = tvar("x"), tvar("p"), tvar("q")
    h = Var("h")
    inner = Function([q], op.add(q, p))  # captures the outer closure's param
    outer = Function([p], Let(h, inner, Call(h, [x])))
    main = Function([x], Call(outer, [op.exp(x)]))
    out = check_semantics(irpass.transform.LambdaLift(), IRModule.from_expr(main))

    g0, g1 = GlobalVar("lifted_main_0"), GlobalVar("lifted_main_1")
    x0, p0, p1, q1 = tvar("x"), tvar("p"), tvar("p"), tvar("q")
    expected = IRModule({
        "main": Function([x], Call(g0, [x, op.exp(x)])),
        "lifted_main_0": Function([x0, p0], Call(g1, [p0, x0]), T),
        "lifted_main_1": Function([p1, q1], op.add(q1, p1), T),
    })
    assert_lifted_equal(out, expected)


def test_lift_recursive_closure():
    # let %c = abs(%x); let %r = fn (%i) { if (sum(%i) > 10) { %i } else { %r(abs(%i) + %c) } }
    x, i = tvar("x"), tvar("i")
    c, r = Var("c"), Var("r", FT)
    rec = Function([i], If(op.greater(op.sum(i), const(10.0)), i,
                           Call(r, [op.add(op.abs(i), c)])))
    main = Function([x], lets((c, op.abs(x)), (r, rec), body=Call(r, [x])))
    out = check_semantics(irpass.transform.LambdaLift(), IRModule.from_expr(main))

    g = GlobalVar("lifted_main_0")
    c1, c2, i2 = Var("c"), tvar("c"), tvar("i")
    lifted = Function(
        [c2, i2],
        If(op.greater(op.sum(i2), const(10.0)), i2, Call(g, [c2, op.add(op.abs(i2), c2)])),
        T,
    )
    expected = IRModule({
        "main": Function([x], Let(c1, op.abs(x), Call(g, [c1, x]))),
        "lifted_main_0": lifted,
    })
    assert_lifted_equal(out, expected)


def test_lift_closures_in_branches_and_in_every_global():
    x, p, q = tvar("x"), tvar("p"), tvar("q")
    cond = op.greater(op.sum(x), const(0.0))
    main = Function([x], If(cond, Call(Function([p], op.tanh(p)), [x]), x))
    helper = Function([q], Call(Function([p2 := tvar("p")], op.exp(p2)), [q]), T)
    mod = IRModule({"main": main, "helper": helper})
    out = check_semantics(irpass.transform.LambdaLift(), mod)
    assert sorted(gv.name_hint for gv in out.get_global_vars()) == [
        "helper", "lifted_helper_0", "lifted_main_0", "main",
    ]
    assert_structural_equal(
        out["main"], Function([x], If(cond, Call(GlobalVar("lifted_main_0"), [x]), x), T)
    )


def test_lift_skips_taken_names():
    x, p = tvar("x"), tvar("p")
    y = tvar("y")
    main = Function([x], Call(Function([p], op.tanh(p)), [x]))
    taken = Function([y], op.exp(y), T)
    mod = IRModule({"main": main, "lifted_main_0": taken})
    out = check_semantics(irpass.transform.LambdaLift(), mod)
    assert out["lifted_main_0"] is taken
    assert_structural_equal(out["main"], Function([x], Call(GlobalVar("lifted_main_1"), [x]), T))


def test_lift_leaves_escaping_closures_in_place():
    x, p = tvar("x"), tvar("p")
    f, h = Var("f"), Var("h")
    escaping = [
        Let(f, Function([p], op.add(p, x)), Tuple([f, x])),  # stored in a tuple
        Let(f, Function([p], op.add(p, x)), f),  # returned
        Tuple([Function([p], op.add(p, x)), x]),  # a literal stored
        Let(f, Function([p], op.add(p, x)), Let(h, f, Call(h, [x]))),  # aliased
    ]
    for body in escaping:
        mod = IRModule.from_expr(Function([x], body))
        assert lift(mod) is mod
    # Passed as an argument of a closure that is lifted itself: the argument stays.
    body = Let(f, Function([p], op.add(p, x)),
               Call(Function([h := Var("h", FT)], Call(h, [x])), [f]))
    out = check_semantics(irpass.transform.LambdaLift(), IRModule.from_expr(Function([x], body)))
    assert isinstance(out["main"].body.value, Function)  # %f stays a closure
    assert "lifted_main_0" in out


def test_lift_lifts_closures_inside_an_escaping_one():
    x, p, q = tvar("x"), tvar("p"), tvar("q")
    f = Var("f")
    escaping = Function([p], Call(Function([q], op.multiply(q, p)), [x]))
    main = Function([x], Let(f, escaping, Tuple([f, Call(f, [x])])))
    out = lift(IRModule.from_expr(main))
    assert well_formed(out)
    g = GlobalVar("lifted_main_0")
    f2, p2, p3, q3 = Var("f"), tvar("p"), tvar("p"), tvar("q")
    expected = IRModule({
        "main": Function([x], Let(f2, Function([p2], Call(g, [p2, x])),
                                  Tuple([f2, Call(f2, [x])]))),
        "lifted_main_0": Function([p3, q3], op.multiply(q3, p3), T),
    })
    assert_lifted_equal(out, expected)
    args = {"x": np.ones((2, 3), "float32")}
    np.testing.assert_allclose(irpass.evaluate(out, **args)[1], irpass.evaluate(main, **args)[1])


def test_lift_does_not_lift_primitive_functions():
    x, p = tvar("x"), tvar("p")
    prim = Function([p], op.exp(p), attrs={"Primitive": 1})
    mod = IRModule.from_expr(Function([x], Call(prim, [x])))
    assert lift(mod) is mod


def test_lift_without_closures_returns_the_module():
    for build in models.MODELS.values():
        mod = build()
        assert lift(mod) is mod


def test_lift_is_idempotent():
    x, p = tvar("x"), tvar("p")
    f = Var("f")
    mod = IRModule.from_expr(Function([x], Let(f, Function([p], op.add(p, x)),
                                               Tuple([f, Call(Function([tvar("q")], x), [x])]))))
    once = lift(mod)
    assert once is not mod
    assert lift(once) is once


def test_lift_deep_let_chain():
    x = tvar("x")
    bindings = []
    cur = x
    for k in range(DEPTH):
        nxt = Var("x")
        bindings.append((nxt, op.nn.relu(op.add(cur, cur))))
        cur = nxt
        if k % 5000 == 0:
            p, f, c = tvar("p"), Var("f"), Var("c")
            bindings.append((f, Function([p], op.multiply(p, cur))))
            bindings.append((c, Call(f, [cur])))
            cur = c
    mod = IRModule.from_expr(Function([x], lets(*bindings, body=cur)))
    out = lift(mod)
    assert len(out) == 1 + DEPTH // 5000
    assert well_formed(out)
    args = {"x": np.full((2, 3), 0.5, "float32")}
    np.testing.assert_allclose(irpass.evaluate(out, **args), irpass.evaluate(mod, **args))


@settings(max_examples=60, deadline=None)
@given(sts.modules())
def test_lift_random_programs_keep_meaning(mod):
    out = check_semantics(irpass.transform.LambdaLift(), mod)
    assert lift(out) is out


# -- Inline -----------------------------------------------------------------------------------


def square_plus(name_a: str = "a") -> Function:
    a, b = tvar(name_a), tvar("b")
    v = Var("v")
    return Function([a, b], Let(v, op.multiply(a, b), op.add(v, a)), T, attrs={"Inline": 1})


def test_inline_function_and_remove_it():
    x = tvar("x")
    g = GlobalVar("sq")
    main = Function([x], op.add(Call(g, [x, op.exp(x)]), Call(g, [x, x])))
    mod = IRModule({"main": main, "sq": square_plus()})
    out = check_semantics(irpass.transform.Inline(), mod)

    v1, v2 = Var("v"), Var("v")  # each copy binds its own, fresh var
    e = op.exp(x)
    expected = IRModule({
        "main": Function([x], op.add(Let(v1, op.multiply(x, e), op.add(v1, x)),
                                     Let(v2, op.multiply(x, x), op.add(v2, x)))),
    })
    assert_module_equal(out, expected)


def test_inline_keeps_a_function_still_referenced():
    x = tvar("x")
    g = GlobalVar("sq")
    main = Function([x], Tuple([Call(g, [x, x]), g]))  # @sq also used as a value
    mod = IRModule({"main": main, "sq": square_plus()})
    out = inline(mod)
    assert "sq" in out
    v = Var("v")
    assert_structural_equal(
        out["main"], Function([x], Tuple([Let(v, op.multiply(x, x), op.add(v, x)), g]))
    )


def test_inline_transitively_and_inside_closures_and_branches():
    x, y, z, p = tvar("x"), tvar("y"), tvar("z"), tvar("p")
    inner, outer = GlobalVar("inner"), GlobalVar("outer")
    inner_fn = Function([y], op.tanh(y), T, attrs={"Inline": 1})
    outer_fn = Function([z], op.exp(Call(inner, [z])), T, attrs={"Inline": 1})
    cond = op.greater(op.sum(x), const(0.0))
    main = Function([x], If(cond, Call(Function([p], Call(outer, [p])), [x]), Call(inner, [x])))
    mod = IRModule({"main": main, "outer": outer_fn, "inner": inner_fn})
    out = check_semantics(irpass.transform.Inline(), mod)
    p2 = tvar("p")
    expected = IRModule({
        "main": Function([x], If(cond, Call(Function([p2], op.exp(op.tanh(p2))), [x]),
                                 op.tanh(x))),
    })
    assert_module_equal(out, expected)


def test_inline_copies_closures_and_lets_with_fresh_vars():
    x, a, q = tvar("x"), tvar("a"), tvar("q")
    f = Var("f", FT)
    body = Let(f, Function([q], op.add(q, a)), Call(f, [a]))
    g = GlobalVar("g")
    mod = IRModule({
        "main": Function([x], op.add(Call(g, [x]), Call(g, [op.exp(x)]))),
        "g": Function([a], body, T, attrs={"Inline": 1}),
    })
    out = check_semantics(irpass.transform.Inline(), mod)
    assert list(out.functions) == [out.get_global_var("main")]
    first, second = out["main"].body.args
    assert first.var is not second.var
    assert first.value.params[0] is not second.value.params[0]


def test_inline_binds_arguments_with_effects(counter_op):
    tick, calls = counter_op
    x, a, b = tvar("x"), tvar("a"), tvar("b")
    g = GlobalVar("second")
    second = Function([a, b], b, T, attrs={"Inline": 1})  # ignores its first argument
    mod = IRModule({"main": Function([x], Call(g, [Call(tick, [x]), op.exp(x)])), "second": second})
    out = check_semantics(irpass.transform.Inline(), mod)
    a2 = tvar("a")
    assert_structural_equal(out["main"], Function([x], Let(a2, Call(tick, [x]), op.exp(x))))
    args = {"x": np.ones((2, 3), "float32")}
    calls.clear()
    irpass.evaluate(mod, **args)
    assert len(calls) == 1
    irpass.evaluate(out, **args)
    assert len(calls) == 2  # the effect still happens once


def test_inline_leaves_recursive_functions_and_warns():
    x, a = tvar("x"), tvar("a")
    r = GlobalVar("r")
    step = op.add(op.abs(a), const(1.0))
    rec = Function([a], If(op.greater(op.sum(a), const(10.0)), a, Call(r, [step])), T,
                   attrs={"Inline": 1})
    mod = IRModule({"main": Function([x], Call(r, [x])), "r": rec})
    with PassContext() as ctx:
        out = inline(mod)
    assert out is mod
    assert any("@r" in d.message and d.severity == "warning" for d in ctx.diag.diagnostics)


def test_inline_mutual_recursion_is_left_but_others_inlined():
    x, a, b, c = tvar("x"), tvar("a"), tvar("b"), tvar("c")
    f, g, h = GlobalVar("f"), GlobalVar("g"), GlobalVar("h")
    cond = op.greater(op.sum(a), const(10.0))
    mod = IRModule({
        "main": Function([x], op.add(Call(f, [x]), Call(h, [x]))),
        "f": Function([a], If(cond, a, Call(g, [op.add(op.abs(a), const(1.0))])), T,
                      attrs={"Inline": 1}),
        "g": Function([b], Call(f, [b]), T, attrs={"Inline": 1}),
        "h": Function([c], op.tanh(c), T, attrs={"Inline": 1}),
    })
    check_semantics(irpass.transform.Inline(), mod)
    with PassContext() as ctx:
        out = inline(mod)
    assert sorted(gv.name_hint for gv in out.get_global_vars()) == ["f", "g", "main"]
    assert_structural_equal(out["main"], Function([x], op.add(Call(f, [x]), op.tanh(x))))
    assert any("@f, @g" in d.message for d in ctx.diag.warnings)


def test_inline_removes_unreferenced_inline_functions_but_never_main():
    x, y = tvar("x"), tvar("y")
    main = Function([x], op.exp(x), attrs={"Inline": 1})
    mod = IRModule({"main": main, "unused": Function([y], op.tanh(y), T, attrs={"Inline": 1})})
    out = inline(mod)
    assert list(gv.name_hint for gv in out.get_global_vars()) == ["main"]
    assert out["main"] is main


def test_inline_without_inline_functions_returns_the_module():
    for build in models.MODELS.values():
        mod = build()
        assert inline(mod) is mod
    x, y = tvar("x"), tvar("y")
    g = GlobalVar("g")
    mod = IRModule({"main": Function([x], Call(g, [x])), "g": Function([y], op.tanh(y), T)})
    assert inline(mod) is mod


def test_inline_deep_chain_of_calls():
    x, y = tvar("x"), tvar("y")
    g = GlobalVar("g")
    cur = x
    for _ in range(DEPTH):
        cur = Call(g, [cur])
    mod = IRModule({
        "main": Function([x], cur),
        "g": Function([y], op.multiply(y, const(0.5)), T, attrs={"Inline": 1}),
    })
    out = inline(mod)
    assert len(out) == 1
    expected = x
    for _ in range(DEPTH):
        expected = op.multiply(expected, const(0.5))
    assert_structural_equal(out["main"], Function([x], expected))


@settings(max_examples=60, deadline=None)
@given(sts.modules())
def test_inline_random_programs_keep_meaning(mod):
    if "helper" not in mod:
        assert inline(mod) is mod
        return
    marked = mod.with_function("helper", mod["helper"].with_attr("Inline", 1))
    out = check_semantics(irpass.transform.Inline(), marked)
    assert "helper" not in out


# -- RemoveUnusedFunctions --------------------------------------------------------------------


def functions_module() -> IRModule:
    """@main calls @a, @a refers to @b (as a value); @c calls @d; @e is alone."""
    x = tvar("x")
    names = ["a", "b", "c", "d", "e"]
    gv = {n: GlobalVar(n) for n in names}
    funcs = {n: Function([p := tvar("p")], op.tanh(p), T) for n in names}
    funcs["a"] = Function([p := tvar("p")], TupleGetItem(Tuple([op.exp(p), gv["b"]]), 0), T)
    funcs["c"] = Function([p := tvar("p")], Call(gv["d"], [p]), T)
    return IRModule({"main": Function([x], Call(gv["a"], [x])), **funcs})


def names(mod: IRModule) -> list[str]:
    return [gv.name_hint for gv in mod.get_global_vars()]


def test_remove_unused_functions_default_entry_is_main():
    mod = functions_module()
    out = check_semantics(irpass.transform.RemoveUnusedFunctions(), mod)
    assert names(out) == ["main", "a", "b"]
    for n in names(out):
        assert out[n] is mod[n]


def test_remove_unused_functions_custom_entries():
    mod = functions_module()
    out = irpass.transform.RemoveUnusedFunctions(["c", "e"])(mod)
    assert names(out) == ["c", "d", "e"]
    out = irpass.transform.RemoveUnusedFunctions([GlobalVar("main"), "c"])(mod)
    assert names(out) == ["main", "a", "b", "c", "d"]


def test_remove_unused_functions_keeps_the_module_when_all_are_used():
    mod = functions_module()
    out = irpass.transform.RemoveUnusedFunctions(["main", "c", "e"])(mod)
    assert out is mod
    for build in models.MODELS.values():
        m = build()
        assert irpass.transform.RemoveUnusedFunctions()(m) is m


def test_remove_unused_functions_recursion_and_cycles():
    x, p, q = tvar("x"), tvar("p"), tvar("q")
    f, g = GlobalVar("f"), GlobalVar("g")
    mod = IRModule({
        "main": Function([x], op.exp(x)),
        "f": Function([p], Call(g, [p]), T),
        "g": Function([q], Call(f, [q]), T),
    })
    assert names(irpass.transform.RemoveUnusedFunctions()(mod)) == ["main"]
    assert names(irpass.transform.RemoveUnusedFunctions(["f"])(mod)) == ["f", "g"]


def test_remove_unused_functions_unknown_entry_is_a_clear_error():
    mod = functions_module()
    with pytest.raises(PassError) as err:
        irpass.transform.RemoveUnusedFunctions(["main", "nope"])(mod)
    text = str(err.value)
    assert "@nope" in text and "@main, @a, @b, @c, @d, @e" in text
    assert "RemoveUnusedFunctions" in text
    x = tvar("x")
    no_main = IRModule({"f": Function([x], x)})
    with pytest.raises(PassError, match="@main"):
        irpass.transform.RemoveUnusedFunctions()(no_main)


def test_remove_unused_functions_bad_argument_types():
    with pytest.raises(TypeError, match=r"did you mean \['main'\]"):
        irpass.transform.RemoveUnusedFunctions("main")
    with pytest.raises(TypeError, match="function names"):
        irpass.transform.RemoveUnusedFunctions([1])


def test_remove_unused_functions_deep_program():
    x, y = tvar("x"), tvar("y")
    cur = x
    for _ in range(DEPTH):
        cur = op.tanh(cur)
    mod = IRModule({"main": Function([x], Call(GlobalVar("g"), [cur])),
                    "g": Function([y], y, T), "h": Function([tvar("z")], x, T)})
    assert names(irpass.transform.RemoveUnusedFunctions()(mod)) == ["main", "g"]


@settings(max_examples=40, deadline=None)
@given(sts.modules())
def test_remove_unused_functions_random_programs(mod):
    extra = mod.with_function("unused", Function([v := tvar("v")], op.tanh(v), T))
    out = check_semantics(irpass.transform.RemoveUnusedFunctions(), extra)
    # the helpers @main calls, and those they call
    used, todo = {"main"}, ["main"]
    while todo:
        text = mod[todo.pop()].astext(show_meta_data=False)
        for gv in mod.get_global_vars():
            if f"@{gv.name_hint}(" in text and gv.name_hint not in used:
                used.add(gv.name_hint)
                todo.append(gv.name_hint)
    assert sorted(names(out)) == sorted(used)


# -- all three together -----------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(sts.modules())
def test_random_programs_through_all_function_passes(mod):
    if "helper" in mod:
        mod = mod.with_function("helper", mod["helper"].with_attr("Inline", 1))
    t = irpass.transform
    check_semantics(
        [t.ToANormalForm(), t.LambdaLift(), t.Inline(), t.RemoveUnusedFunctions(),
         t.ToGraphNormalForm()],
        mod,
    )


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_models_keep_meaning(name):
    mod = models.MODELS[name]()
    t = irpass.transform
    for p in (t.LambdaLift(), t.Inline(), t.RemoveUnusedFunctions()):
        check_semantics(p, mod)


def test_input_module_is_untouched():
    mod = functions_module()
    text = mod.astext()
    with PassContext(config={"testing.immutable_module": True}):
        irpass.transform.RemoveUnusedFunctions()(mod)
        lift(mod)
        inline(mod)
    assert mod.astext() == text


# -- documentation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,kind",
    [("LambdaLift", "opt level 0"), ("Inline", "opt level 1"),
     ("RemoveUnusedFunctions", "opt level 1")],
)
def test_doc_example_runs(name, kind):
    doc = DOCS / f"{name}.md"
    text = doc.read_text()
    assert text.startswith(f"### {name}\n")
    assert f"*module pass, {kind}" in text
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(doc), "exec"), {})
