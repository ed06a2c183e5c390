"""verify_each: the module is checked after every pass, and the pass that broke it is blamed."""

from __future__ import annotations

import numpy as np
import pytest
from irpass import op
from irpass.instrument import PassInstrument, VerifyEach, VerifyError
from irpass.ir import (
    ExprMutator,
    Function,
    GlobalVar,
    IRModule,
    TensorType,
    const,
    structural_equal,
    var,
)
from irpass.ir.nodes import Call
from irpass.ir.type_infer import _set_checked_type
from irpass.testing import models
from irpass.transform import (
    PassContext,
    Sequential,
    default_pipeline,
    function_pass,
    get_pass,
    module_pass,
)


def _mod() -> IRModule:
    x = var("x", shape=(2, 8))
    y = op.nn.relu(op.add(op.multiply(x, const(np.full((8,), 2.0, np.float32))), x))
    return IRModule.from_expr(Function([x], op.exp(y)))


class _ReplaceFirst(ExprMutator):
    """Replaces the first call of ``name`` it rebuilds by ``make(call)``."""

    def __init__(self, name, make):
        super().__init__()
        self.name, self.make, self.done = name, make, False

    def visit_call(self, call):
        new = super().visit_call(call)
        if not self.done and getattr(call.op, "name", None) == self.name:
            self.done = True
            return self.make(new)
        return new


def _planted(name, make, target="add"):
    @function_pass(opt_level=0, name=name)
    def planted(func, mod, ctx):
        return _ReplaceFirst(target, make).visit(func)

    return planted


# a pass that makes an ill-typed call: (2, 8) + (7,) does not broadcast
IllTyped = _planted("PlantedIllTyped", lambda c: op.add(c.args[0], const(np.ones(7, np.float32))))
# a pass that uses a variable no binding covers
_stray = var("stray", shape=(2, 8))
StrayVar = _planted("PlantedStrayVar", lambda c: op.add(c, _stray))


def _wrongly_typed(call):
    new = op.negative(call)
    _set_checked_type(new, TensorType((3, 3), "float32"))  # what the pass claims
    return new


WrongType = _planted("PlantedWrongType", _wrongly_typed)


def _run(passes, mod=None, verify=True):
    with PassContext(opt_level=3, config={"verify_each": verify}):
        return Sequential(passes, name="pipe")(mod or _mod())


@pytest.mark.parametrize("planted, words", [
    (IllTyped, ["add", "(7,)"]),
    (StrayVar, ["stray", "scope"]),
    (WrongType, ["carries the type", "(3, 3)"]),
])
def test_the_pass_that_broke_the_module_is_blamed(planted, words):
    infer, fold = get_pass("InferType"), get_pass("FoldConstant")
    with pytest.raises(VerifyError) as info:
        _run([infer, planted, fold])
    err = info.value
    assert err.pass_name == planted.info.name
    assert err.path == ["pipe[1]", planted.info.name]
    text = str(err)
    assert "returned an ill-formed module" in text
    for word in words:
        assert word in text


def test_without_verify_each_the_next_pass_takes_the_blame():
    # the failure the issue reports: the pass after the broken one is named
    from irpass.errors import PassError

    with pytest.raises(PassError) as info:
        _run([get_pass("InferType"), IllTyped, get_pass("SimplifyExpr")], verify=False)
    assert info.value.pass_name == "InferType"


def test_an_ill_formed_input_is_reported_as_the_input():
    x = var("x", shape=(2, 8))
    bad = IRModule.from_expr(Function([x], op.add(x, const(np.ones(5, np.float32)))))
    with pytest.raises(VerifyError) as info:
        _run([get_pass("FoldConstant")], mod=bad)
    assert "was given an ill-formed module" in str(info.value)
    assert "(5,)" in str(info.value)


def test_a_changed_signature_is_checked_against_unchanged_callers():
    x = var("x", shape=(4,))
    fx = var("a", shape=(4,))
    f = Function([fx], op.negative(fx))
    gv = GlobalVar("f")
    main = Function([x], Call(gv, [x]))
    mod = IRModule({gv: f, GlobalVar("main"): main})

    @module_pass(opt_level=0, name="PlantedSignature")
    def planted(mod, ctx):
        a = var("a", shape=(5,))
        funcs = {g: fn for g, fn in mod.items()}
        funcs[mod.get_global_var("f")] = Function([a], op.negative(a))
        return IRModule(funcs)

    with pytest.raises(VerifyError) as info:
        _run([get_pass("InferType"), planted], mod=mod)
    assert info.value.pass_name == "PlantedSignature"


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_no_false_alarm_and_the_same_result_on_the_example_networks(name):
    mod = models.MODELS[name]()
    with PassContext(opt_level=3):
        plain = default_pipeline(3)(mod)
    with PassContext(opt_level=3, config={"verify_each": True}):
        checked = default_pipeline(3)(mod)
    assert structural_equal(plain, checked)


def test_no_false_alarm_on_let_form_programs():
    # a rewrite of a let-form function makes new lets: their scoping is checked
    mod = models.MODELS["transformer"]()
    names = ["InferType", "ToANormalForm", "SimplifyExpr", "FoldConstant",
             "EliminateCommonSubexpr", "DeadCodeElimination", "ToGraphNormalForm", "FuseOps"]
    passes = [get_pass(n) for n in names]
    with PassContext(opt_level=3):
        plain = Sequential(passes)(mod)
    with PassContext(opt_level=3, config={"verify_each": True}):
        checked = Sequential(passes)(mod)
    assert structural_equal(plain, checked)


def test_the_instrument_is_added_once_and_after_the_users():
    class Mine(PassInstrument):
        pass

    ctx = PassContext(instruments=[Mine()], config={"verify_each": True})
    assert [type(pi) for pi in ctx.instruments] == [Mine, VerifyEach]
    own = VerifyEach()
    ctx = PassContext(instruments=[own], config={"verify_each": True})
    assert ctx.instruments == (own,)
    assert PassContext().instruments == ()
