"""IRModule: lookups, immutability and functional updates."""

import pytest
from irpass.ir import Function, GlobalVar, IRModule, Var, free_vars, var
from irpass.ir.op import OpPattern, register_op

NEG = register_op(
    "test.module.neg",
    num_inputs=1,
    type_rel=lambda types, attrs: types[0],
    kernel=lambda args, attrs: -args[0],
    pattern=OpPattern.ELEMWISE,
    owner="tests",
)


def _fn():
    x = var("x", shape=(2,))
    from irpass.ir import Call

    return Function([x], Call(NEG, [x]))


def test_lookup_by_name_and_global_var():
    f = _fn()
    gv = GlobalVar("main")
    mod = IRModule({gv: f, "g": _fn()})
    assert mod["main"] is f and mod[gv] is f and mod[GlobalVar("main")] is f
    assert mod.get_global_var("main") is gv
    assert [g.name_hint for g in mod.get_global_vars()] == ["main", "g"]
    assert list(mod.functions) == mod.get_global_vars() and mod.functions[gv] is f
    assert "g" in mod and gv in mod and "h" not in mod and 3 not in mod
    assert len(mod) == 2
    with pytest.raises(KeyError, match=r"no function @h in the module \(has: \['g', 'main'\]\)"):
        mod["h"]
    with pytest.raises(TypeError, match="functions are looked up by GlobalVar or name"):
        mod[1]


def test_constructor_errors_name_the_problem():
    with pytest.raises(TypeError, match="@main must map to a Function"):
        IRModule({"main": var("x")})
    with pytest.raises(ValueError, match="'main' given twice"):
        IRModule({"main": _fn(), GlobalVar("main"): _fn()})
    with pytest.raises(TypeError, match="local Var %x"):
        IRModule({var("x"): _fn()})
    with pytest.raises(TypeError, match="mapping"):
        IRModule([_fn()])


def test_module_is_immutable_and_updates_return_new_modules():
    f, g = _fn(), _fn()
    mod = IRModule({"main": f})
    with pytest.raises(AttributeError, match="immutable"):
        mod._funcs = {}
    with pytest.raises(TypeError):
        mod.functions[GlobalVar("x")] = g  # read-only view

    mod2 = mod.with_function("main", g)
    assert mod["main"] is f and mod2["main"] is g
    assert mod2.get_global_var("main") is mod.get_global_var("main")

    mod3 = mod.update(IRModule({"helper": g}))
    assert list(mod3.functions.values()) == [f, g] and "helper" not in mod

    mod4 = mod3.without_function("helper")
    assert "helper" in mod3 and "helper" not in mod4
    with pytest.raises(KeyError):
        mod4.without_function("helper")
    assert mod.same_as(mod) and not mod.same_as(mod2)
    with pytest.raises(TypeError, match="expected a Function"):
        mod.with_function("main", var("x"))


def test_from_expr_wraps_free_vars_as_params():
    from irpass.ir import Call

    x, y = var("x", shape=(2,)), var("y", shape=(2,))
    body = Call(NEG, [Call(NEG, [x])])
    mod = IRModule.from_expr(body)
    main = mod["main"]
    assert main.params == (x,) and main.body is body
    f = Function([y], y)
    assert IRModule.from_expr(f)["main"] is f
    with pytest.raises(TypeError, match="needs an Expr"):
        IRModule.from_expr(3)


def test_free_vars_in_order_of_appearance():
    from irpass.ir import Let, Tuple

    a, b, c, t = (Var(n) for n in "abct")
    expr = Tuple([b, Let(t, a, Tuple([t, c])), Function([c], c)])
    # c is used in the let body outside the function that binds it: free there.
    assert free_vars(expr) == [b, a, c]
    assert free_vars(Tuple([b, Let(t, a, t), Function([c], c)])) == [b, a]


def test_modules_copy_as_themselves():
    import copy

    mod = IRModule({"main": _fn()})
    assert copy.copy(mod) is mod and copy.deepcopy(mod) is mod
