"""Passes: PassInfo, the decorators, module/function passes, Sequential, errors, PrintIR.

The behaviour a TVM user expects from ``tvm.transform`` (in the style of TVM's
tests/python/relay/test_pass_manager.py), on real IR.
"""

import io

import irpass
import numpy as np
import pytest
from irpass import op as O
from irpass.ir import ExprMutator
from irpass.testing import models, random_inputs
from irpass.transform import (
    FunctionPass,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    Sequential,
    function_pass,
    module_pass,
)

SHAPE = (3, 4)


def _mul_module():
    """@main(x, y) = exp(x * y) + y."""
    x = irpass.var("x", shape=SHAPE)
    y = irpass.var("y", shape=SHAPE)
    return irpass.IRModule.from_expr(irpass.Function([x, y], O.add(O.exp(O.multiply(x, y)), y)))


def _unary(name, body, attrs=None):
    x = irpass.var("x", shape=SHAPE)
    return irpass.Function([x], body(x), attrs=attrs)


def _multi_module():
    """A module with an ordinary @main, @helper and functions carrying skip attributes."""
    mod = _mul_module()
    mod = mod.with_function("helper", _unary("helper", lambda x: O.multiply(x, x)))
    mod = mod.with_function(
        "prim", _unary("prim", lambda x: O.multiply(x, x), attrs={"Primitive": 1})
    )
    mod = mod.with_function(
        "skip", _unary("skip", lambda x: O.multiply(x, x), attrs={"SkipOptimization": 1})
    )
    mod = mod.with_function(
        "zero", _unary("zero", lambda x: O.multiply(x, x), attrs={"Primitive": 0})
    )
    return mod


class MulToAdd(ExprMutator):
    def visit_call(self, call):
        new = super().visit_call(call)
        if new.op is irpass.Op.get("multiply"):
            return O.add(*new.args)
        return new


@function_pass(opt_level=1, name="MulToAdd")
def mul_to_add(func, mod, ctx):
    return MulToAdd().visit(func)


def _recorder(name, log, opt_level=0, required=()):
    """A module pass that appends its name to ``log`` and returns its input."""

    def body(mod, ctx):
        log.append(name)
        return mod

    return module_pass(body, opt_level=opt_level, name=name, required=required)


def _snapshot(mod):
    return (
        irpass.structural_hash(mod),
        mod.astext(),
        [gv.name_hint for gv in mod.get_global_vars()],
        {gv.name_hint: f for gv, f in mod.items()},
    )


def _assert_unchanged(mod, snap):
    h, text, names, funcs = snap
    assert irpass.structural_hash(mod) == h
    assert mod.astext() == text
    assert [gv.name_hint for gv in mod.get_global_vars()] == names
    for name, func in funcs.items():
        assert mod[name] is func


# -- PassInfo -------------------------------------------------------------------------------


def test_pass_info_fields():
    info = PassInfo(3, "Fold", required=["InferType", "Identity"])
    assert info.opt_level == 3
    assert info.name == "Fold"
    assert info.required == ("InferType", "Identity")
    assert PassInfo(1, "A").required == ()
    assert PassInfo(1, "A", required="B").required == ("B",)


def test_pass_info_is_immutable_and_compares_by_value():
    info = PassInfo(2, "A", ["B"])
    for field, value in (("name", "X"), ("opt_level", 0), ("required", ())):
        with pytest.raises(AttributeError):
            setattr(info, field, value)
    assert (info.name, info.opt_level, info.required) == ("A", 2, ("B",))
    assert info == PassInfo(2, "A", ("B",))
    assert hash(info) == hash(PassInfo(2, "A", ("B",)))
    assert info != PassInfo(3, "A", ("B",))
    assert "A" in str(info)


@pytest.mark.parametrize(
    "args, words",
    [
        (("2", "A"), ["opt_level", "'2'"]),
        ((True, "A"), ["opt_level"]),
        ((2.0, "A"), ["opt_level"]),
        ((2, ""), ["name"]),
        ((2, None), ["name"]),
        ((2, "A", [1]), ["required", "1"]),
        ((2, "A", ["B", ""]), ["required"]),
    ],
)
def test_pass_info_validation(args, words):
    with pytest.raises(TypeError) as exc:
        PassInfo(*args)
    for w in words:
        assert w in str(exc.value)


def test_str_of_passes_contains_the_name():
    log = []
    mp = _recorder("MyModulePass", log)
    fp = function_pass(lambda f, m, c: f, name="MyFunctionPass")
    seq = Sequential([mp, fp], name="MyPipeline")
    assert "MyModulePass" in str(mp)
    assert "MyFunctionPass" in str(fp)
    assert "MyPipeline" in str(seq)
    assert isinstance(mp.info, PassInfo) and mp.info.name == "MyModulePass"


# -- decorators -------------------------------------------------------------------------------


def test_module_pass_decorator_without_arguments():
    @module_pass
    def drop_helper(mod, ctx):
        return mod.without_function("helper")

    assert isinstance(drop_helper, ModulePass) and isinstance(drop_helper, Pass)
    assert drop_helper.info == PassInfo(0, "drop_helper")
    mod = _multi_module()
    out = drop_helper(mod)
    assert "helper" not in out and "helper" in mod


def test_module_pass_decorator_with_arguments():
    @module_pass(opt_level=2, name="Renamed", required=["Identity"])
    def f(mod, ctx):
        return mod

    assert isinstance(f, ModulePass)
    assert f.info == PassInfo(2, "Renamed", ("Identity",))


def test_module_pass_called_directly():
    def body(mod, ctx):
        return mod

    p = module_pass(body, opt_level=3)
    assert isinstance(p, ModulePass)
    assert p.info.name == "body" and p.info.opt_level == 3
    q = module_pass(body, opt_level=1, name="Other")
    assert q.info.name == "Other"
    mod = _mul_module()
    assert p(mod) is mod


def test_function_pass_decorator_forms():
    @function_pass
    def bare(func, mod, ctx):
        return func

    @function_pass(opt_level=2)
    def leveled(func, mod, ctx):
        return func

    direct = function_pass(lambda func, mod, ctx: MulToAdd().visit(func), opt_level=3, name="D")
    assert all(isinstance(p, FunctionPass) for p in (bare, leveled, direct))
    assert bare.info == PassInfo(0, "bare")
    assert leveled.info == PassInfo(2, "leveled")
    assert direct.info == PassInfo(3, "D")
    mod = _mul_module()
    assert "multiply" not in direct(mod).astext()


def test_module_pass_on_a_class_takes_constructor_args_and_exposes_attributes():
    @module_pass(opt_level=1)
    class AddFunction:
        """Adds @<name> = x * k."""

        def __init__(self, name, k=2.0):
            self.name = name
            self.k = k
            self.calls = 0

        def transform_module(self, mod, ctx):
            self.calls += 1
            x = irpass.var("x", shape=SHAPE)
            func = irpass.Function([x], O.multiply(x, irpass.const(self.k, "float32")))
            return mod.with_function(self.name, func)

    p = AddFunction("triple", k=3.0)
    q = AddFunction("double")
    assert isinstance(p, ModulePass)
    assert p.info == PassInfo(1, "AddFunction")
    assert p.name == "triple" and p.k == 3.0 and q.k == 2.0
    mod = _mul_module()
    out = p(mod)
    assert p.calls == 1 and q.calls == 0
    assert "triple" in out and "triple" not in mod
    a = np.arange(12, dtype="float32").reshape(SHAPE)
    np.testing.assert_allclose(irpass.evaluate(out["triple"], a), a * 3.0)
    with pytest.raises(AttributeError):
        p.no_such_attribute  # noqa: B018


def test_function_pass_on_a_class_bare_and_named():
    @function_pass
    class Rewrite:
        def transform_function(self, func, mod, ctx):
            return MulToAdd().visit(func)

    @function_pass(name="Named", opt_level=2)
    class Other:
        def __init__(self, tag):
            self.tag = tag

        def transform_function(self, func, mod, ctx):
            return func

    p = Rewrite()
    assert isinstance(p, FunctionPass) and p.info == PassInfo(0, "Rewrite")
    assert "multiply" not in p(_mul_module()).astext()
    o = Other("t")
    assert o.info == PassInfo(2, "Named") and o.tag == "t"


def test_decorator_refuses_wrong_arity():
    def one_arg(mod):
        return mod

    with pytest.raises(TypeError) as exc:
        module_pass(one_arg)
    assert "one_arg" in str(exc.value) and "mod, ctx" in str(exc.value)

    with pytest.raises(TypeError) as exc:

        @function_pass(opt_level=1)
        def two_args(func, mod):
            return func

    assert "two_args" in str(exc.value) and "func, mod, ctx" in str(exc.value)


def test_decorator_refuses_class_without_transform_method():
    with pytest.raises(TypeError) as exc:

        @module_pass
        class NoMethod:
            def transform_function(self, func, mod, ctx):
                return func

    assert "NoMethod" in str(exc.value) and "transform_module" in str(exc.value)

    with pytest.raises(TypeError) as exc:
        function_pass(type("NoMethod2", (), {}))
    assert "NoMethod2" in str(exc.value) and "transform_function" in str(exc.value)

    with pytest.raises(TypeError) as exc:

        @module_pass
        class BadArity:
            def transform_module(self, mod):
                return mod

    assert "transform_module" in str(exc.value)


def test_decorator_refuses_non_callables():
    with pytest.raises(TypeError) as exc:
        module_pass(3)
    assert "opt_level=3" in str(exc.value)
    with pytest.raises(TypeError) as exc:
        function_pass("x")
    assert "function_pass" in str(exc.value)


# -- semantics on real IR ------------------------------------------------------------------------


def test_function_pass_rewrite_changes_what_the_program_computes():
    mod = _mul_module()
    inputs = random_inputs(mod, seed=1)
    x, y = inputs["x"], inputs["y"]
    np.testing.assert_allclose(irpass.evaluate(mod, **inputs), np.exp(x * y) + y, rtol=1e-5)
    out = mul_to_add(mod)
    assert "multiply" not in out.astext() and "multiply" in mod.astext()
    np.testing.assert_allclose(irpass.evaluate(out, **inputs), np.exp(x + y) + y, rtol=1e-5)
    # the input still computes the original program
    np.testing.assert_allclose(irpass.evaluate(mod, **inputs), np.exp(x * y) + y, rtol=1e-5)


def test_function_pass_skips_primitive_and_skip_optimization_functions():
    seen = []

    @function_pass
    def record(func, mod, ctx):
        seen.append(next(gv.name_hint for gv, f in mod.items() if f is func))
        return MulToAdd().visit(func)

    mod = _multi_module()
    out = record(mod)
    assert sorted(seen) == ["helper", "main", "zero"]  # attr value 0 does not skip
    assert out["prim"] is mod["prim"] and out["skip"] is mod["skip"]
    for name in ("prim", "skip"):
        assert irpass.structural_equal(out[name], mod[name])
    for name in ("main", "helper", "zero"):
        assert not irpass.structural_equal(out[name], mod[name])
    assert out["zero"].attrs.get("Primitive") == 0


def test_function_pass_keeps_identity_of_untouched_functions():
    @function_pass
    def only_helper(func, mod, ctx):
        if func is mod["helper"]:
            return MulToAdd().visit(func)
        return func

    mod = _multi_module()
    out = only_helper(mod)
    assert out is not mod
    assert out["helper"] is not mod["helper"]
    for name in ("main", "prim", "skip", "zero"):
        assert out[name] is mod[name]


def test_unchanged_module_is_returned_as_the_same_object():
    mod = models.mlp(in_features=8, hidden=(4,), num_classes=3)
    assert mul_to_add(mod) is mod  # mlp has no multiply: nothing to rewrite
    ident = function_pass(lambda func, mod, ctx: func, name="Same")
    assert ident(mod) is mod
    assert Sequential([ident, mul_to_add, irpass.transform.Identity()])(mod) is mod


def test_function_pass_receives_the_input_module():
    received = []

    @function_pass
    def rewrite(func, mod, ctx):
        received.append(mod)
        return MulToAdd().visit(func)

    mod = _multi_module()
    out = rewrite(mod)
    assert len(received) == 3
    assert all(m is mod for m in received)  # not a partially rewritten module
    assert out is not mod


def test_pass_receives_the_current_context():
    got = []

    @module_pass
    def probe(mod, ctx):
        got.append((ctx, PassContext.current()))
        return mod

    with PassContext(opt_level=3) as ctx:
        probe(_mul_module())
    assert got == [(ctx, ctx)]


def test_pass_must_be_called_on_a_module():
    x = irpass.var("x", shape=SHAPE)
    with pytest.raises(TypeError) as exc:
        mul_to_add(irpass.Function([x], x))
    assert "MulToAdd" in str(exc.value) and "IRModule" in str(exc.value)


# -- immutability -------------------------------------------------------------------------------


def _adds_function(mod, ctx):
    return mod.with_function("extra", _unary("extra", O.exp))


def _builds_then_raises(mod, ctx):
    mod.with_function("extra", _unary("extra", O.exp))
    MulToAdd().visit(mod["main"])
    raise ValueError("boom")


def _function_raises_late(func, mod, ctx):
    new = MulToAdd().visit(func)
    if func is mod["zero"]:
        raise RuntimeError("late failure")
    return new


SUCCEEDING = {
    "function_pass": lambda: mul_to_add,
    "module_pass": lambda: module_pass(_adds_function),
    "sequential": lambda: Sequential([mul_to_add, module_pass(_adds_function)]),
}
RAISING = {
    "module_pass": lambda: module_pass(_builds_then_raises),
    "function_pass": lambda: function_pass(_function_raises_late),
    "sequential": lambda: Sequential([mul_to_add, module_pass(_builds_then_raises)]),
    "return_type": lambda: module_pass(lambda mod, ctx: None, name="ReturnsNone"),
}


@pytest.mark.parametrize("kind", sorted(SUCCEEDING))
def test_input_module_unchanged_after_a_pass_that_succeeds(kind):
    mod = _multi_module()
    snap = _snapshot(mod)
    out = SUCCEEDING[kind]()(mod)
    assert out is not mod
    assert irpass.structural_hash(out) != snap[0]
    _assert_unchanged(mod, snap)


@pytest.mark.parametrize("kind", sorted(RAISING))
def test_input_module_unchanged_after_a_pass_that_raises(kind):
    mod = _multi_module()
    snap = _snapshot(mod)
    with pytest.raises(irpass.PassError):
        RAISING[kind]()(mod)
    _assert_unchanged(mod, snap)


# -- return types -------------------------------------------------------------------------------


def test_module_pass_returning_none_is_a_type_error_naming_the_pass():
    @module_pass
    def forgets_return(mod, ctx):
        mod.with_function("f", _unary("f", O.exp))

    with pytest.raises(TypeError) as exc:
        forgets_return(_mul_module())
    assert isinstance(exc.value, irpass.PassReturnTypeError)
    assert isinstance(exc.value, irpass.PassError)
    assert exc.value.pass_name == "forgets_return"
    assert "forgets_return" in str(exc.value)
    assert "None" in str(exc.value) and "IRModule" in str(exc.value)


def test_module_pass_returning_a_function_is_a_type_error():
    @module_pass(name="ReturnsMain")
    def returns_main(mod, ctx):
        return mod["main"]

    with pytest.raises(irpass.PassReturnTypeError) as exc:
        returns_main(_mul_module())
    assert isinstance(exc.value, TypeError)
    assert "ReturnsMain" in str(exc.value)
    assert "Function" in str(exc.value) and "IRModule" in str(exc.value)


def test_function_pass_returning_a_module_is_a_type_error():
    @function_pass
    def returns_module(func, mod, ctx):
        return mod

    with pytest.raises(TypeError) as exc:
        returns_module(_mul_module())
    assert isinstance(exc.value, irpass.PassReturnTypeError)
    msg = str(exc.value)
    assert "returns_module" in msg and "IRModule" in msg and "Function" in msg


def test_return_type_error_inside_sequential_names_the_position():
    bad = module_pass(lambda mod, ctx: 42, name="ReturnsInt")
    seq = Sequential([irpass.transform.Identity(), bad], name="pipe")
    with pytest.raises(irpass.PassReturnTypeError) as exc:
        seq(_mul_module())
    assert exc.value.path == ["pipe[1]", "ReturnsInt"]
    assert "pipe[1] > ReturnsInt" in str(exc.value) and "int" in str(exc.value)


# -- PassError wrapping ---------------------------------------------------------------------------


def _bad_pass(name="Bad", exc=None):
    error = exc if exc is not None else ValueError("shape mismatch in %x")

    def body(mod, ctx):
        raise error

    return module_pass(body, name=name), error


def test_exception_in_pass_body_becomes_pass_error():
    bad, original = _bad_pass()
    with pytest.raises(irpass.PassError) as exc:
        bad(_mul_module())
    err = exc.value
    assert err.pass_name == "Bad"
    assert err.__cause__ is original
    assert err.path == ["Bad"]
    msg = str(err)
    assert "'Bad'" in msg and "ValueError" in msg and "shape mismatch in %x" in msg


def test_pass_error_path_in_nested_sequentials():
    bad, original = _bad_pass()
    log = []
    inner = Sequential([bad, _recorder("After", log)], name="inner")
    outer = Sequential([_recorder("First", log), inner], name="outer")
    with pytest.raises(irpass.PassError) as exc:
        outer(_mul_module())
    err = exc.value
    assert log == ["First"]  # nothing ran after the failure
    assert err.path == ["outer[1]", "inner[0]", "Bad"]
    assert "outer[1] > inner[0] > Bad" in str(err)
    # not wrapped again by the Sequentials it passed through
    assert err.pass_name == "Bad"
    assert err.__cause__ is original
    assert not isinstance(err.__cause__, irpass.PassError)


def test_pass_error_position_counts_skipped_passes():
    bad, _ = _bad_pass()
    seq = Sequential(
        [_recorder("High", [], opt_level=9), irpass.transform.Identity(), bad], name="opt"
    )
    with pytest.raises(irpass.PassError) as exc:
        seq(_mul_module())
    assert exc.value.path == ["opt[2]", "Bad"]


def test_pass_error_raised_by_a_pass_is_not_wrapped():
    own = irpass.PassError("Custom", "gave up")
    bad, _ = _bad_pass(name="Raiser", exc=own)
    with pytest.raises(irpass.PassError) as exc:
        Sequential([bad], name="s")(_mul_module())
    assert exc.value is own


def test_pass_error_not_double_wrapped_when_a_pass_runs_a_pass():
    bad, original = _bad_pass()

    @module_pass
    def Driver(mod, ctx):
        return bad(mod)

    with pytest.raises(irpass.PassError) as exc:
        Driver(_mul_module())
    assert exc.value.pass_name == "Bad"
    assert exc.value.__cause__ is original


# -- Sequential ---------------------------------------------------------------------------------


def test_sequential_runs_passes_in_order():
    log = []
    seq = Sequential([_recorder(n, log) for n in "CAB"])
    mod = _mul_module()
    assert seq(mod) is mod
    assert log == ["C", "A", "B"]
    assert seq.info == PassInfo(0, "sequential")


def test_sequential_threads_the_module_through_its_passes():
    got = []

    @module_pass
    def check(mod, ctx):
        got.append(mod)
        return mod

    mod = _mul_module()
    seq = Sequential([mul_to_add, check, module_pass(_adds_function), check])
    out = seq(mod)
    assert got[0] is not mod and "multiply" not in got[0].astext()
    assert "extra" in got[1] and got[1] is out
    inputs = random_inputs(mod, seed=3)
    x, y = inputs["x"], inputs["y"]
    np.testing.assert_allclose(irpass.evaluate(out, **inputs), np.exp(x + y) + y, rtol=1e-5)


def test_nested_sequentials():
    log = []
    inner = Sequential([_recorder("B", log), _recorder("C", log)], name="inner")
    outer = Sequential([_recorder("A", log), inner, _recorder("D", log)], name="outer")
    outer(_mul_module())
    assert log == ["A", "B", "C", "D"]


def test_sequential_own_opt_level_and_name():
    log = []
    inner = Sequential([_recorder("B", log)], opt_level=3, name="inner")
    assert inner.info == PassInfo(3, "inner")
    outer = Sequential([_recorder("A", log), inner])
    with PassContext(opt_level=2):
        outer(_mul_module())
    assert log == ["A"]
    log.clear()
    with PassContext(opt_level=3):
        outer(_mul_module())
    assert log == ["A", "B"]
    log.clear()
    with PassContext(opt_level=3, disabled_pass=["inner"]):
        outer(_mul_module())
    assert log == ["A"]
    log.clear()
    with PassContext(opt_level=0, required_pass=["inner"]):
        outer(_mul_module())
    assert log == ["A", "B"]


def test_sequential_required_runs_before_it_inside_another_sequential():
    log = []
    irpass.transform.register_pass(lambda: _recorder("Prep", log), "Prep")
    seq = Sequential([_recorder("A", log)], name="withreq", required=["Prep"])
    assert seq.info.required == ("Prep",)
    seq(_mul_module())  # called directly: like any pass, alone (TVM)
    assert log == ["A"]
    log.clear()
    Sequential([seq], name="outer")(_mul_module())
    assert log == ["Prep", "A"]


def test_sequential_of_nothing_returns_its_input():
    mod = _mul_module()
    assert Sequential()(mod) is mod
    assert Sequential([])(mod) is mod


@pytest.mark.parametrize("pass_level", [0, 2, 3])
@pytest.mark.parametrize("ctx_level", [0, 2, 3])
@pytest.mark.parametrize("required", [False, True])
@pytest.mark.parametrize("disabled", [False, True])
def test_enabling_rules(pass_level, ctx_level, required, disabled):
    log = []
    target = _recorder("Target", log, opt_level=pass_level)
    seq = Sequential([_recorder("Before", log), target, _recorder("After", log)])
    ctx = PassContext(
        opt_level=ctx_level,
        required_pass=["Target"] if required else [],
        disabled_pass=["Target"] if disabled else [],
    )
    expected = (not disabled) and (required or pass_level <= ctx_level)
    with ctx:
        seq(_mul_module())
    assert log == (["Before", "Target", "After"] if expected else ["Before", "After"])
    assert ctx.pass_enabled(target.info) is expected


@pytest.mark.parametrize("ctx_level", [0, 1])
def test_directly_called_pass_runs_regardless_of_opt_level(ctx_level):
    log = []
    high = _recorder("High", log, opt_level=4)
    with PassContext(opt_level=ctx_level):
        high(_mul_module())
        Sequential([high], opt_level=4)(_mul_module())  # the Sequential itself is called
    assert log == ["High"]  # directly: runs; inside the Sequential: opt_level 4 > ctx


def test_sequential_refuses_items_that_are_not_passes():
    with pytest.raises(TypeError) as exc:
        Sequential([irpass.transform.Identity(), irpass.transform.Identity], name="pipe")
    msg = str(exc.value)
    assert "pipe" in msg and "passes[1]" in msg and "call it" in msg
    with pytest.raises(TypeError) as exc:
        Sequential([3])
    assert "passes[0]" in str(exc.value) and "3" in str(exc.value)


def test_sequential_exposes_its_passes():
    a, b = irpass.transform.Identity(), mul_to_add
    seq = Sequential([a, b], opt_level=1, name="s", required=["Identity"])
    assert seq.passes == (a, b)
    assert seq.info == PassInfo(1, "s", ("Identity",))
    assert isinstance(seq, Pass)


# -- PrintIR ----------------------------------------------------------------------------------


def test_print_ir_header_names_position_and_previous_pass():
    stream = io.StringIO()
    mod = _multi_module()
    seq = Sequential(
        [irpass.transform.Identity(), irpass.transform.PrintIR("x", stream=stream)], name="opt"
    )
    assert seq(mod) is mod
    text = stream.getvalue()
    header = text.splitlines()[0]
    assert "opt[1]" in header and "Identity" in header and "'x'" in header
    assert irpass.structural_equal(irpass.parse(text), mod)


def test_print_ir_nested_position():
    stream = io.StringIO()
    inner = Sequential(
        [mul_to_add, irpass.transform.PrintIR(stream=stream)], name="inner"
    )
    seq = Sequential([irpass.transform.Identity(), inner], name="outer")
    mod = _mul_module()
    out = seq(mod)
    header = stream.getvalue().splitlines()[0]
    assert "outer[1] > inner[1]" in header and "MulToAdd" in header
    assert irpass.structural_equal(irpass.parse(stream.getvalue()), out)


def test_print_ir_shows_large_constants_with_meta_data():
    x = irpass.var("x", shape=(16, 16))
    data = np.arange(256, dtype="float32").reshape(16, 16)
    mod = irpass.IRModule.from_expr(irpass.Function([x], O.add(x, irpass.const(data))))
    stream = io.StringIO()
    irpass.transform.PrintIR(show_meta_data=True, stream=stream)(mod)
    assert irpass.structural_equal(irpass.parse(stream.getvalue()), mod)


def test_print_ir_defaults_to_stderr(capsys):
    mod = _mul_module()
    assert irpass.transform.PrintIR("here")(mod) is mod
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "here" in captured.err.splitlines()[0]
    assert irpass.structural_equal(irpass.parse(captured.err), mod)
