"""CheckEach: the first pass that changed what the module computes is named."""

from __future__ import annotations

import numpy as np
import pytest
from irpass import op
from irpass.errors import PassError
from irpass.instrument import CheckEach, CheckEachError
from irpass.ir import ExprMutator, structural_equal
from irpass.testing import models, random_inputs
from irpass.transform import PassContext, Sequential, default_pipeline, function_pass, get_pass


class _NegateFirst(ExprMutator):
    """Negates the result of the first call of ``name`` (one wrong rewrite of many)."""

    def __init__(self, name):
        super().__init__()
        self.name, self.done = name, False

    def visit_call(self, call):
        new = super().visit_call(call)
        if not self.done and getattr(call.op, "name", None) == self.name:
            self.done = True
            return op.negative(new)
        return new


@function_pass(opt_level=0, name="PlantedSignFlip")
def SignFlip(func, mod, ctx):
    return _NegateFirst("nn.relu").visit(func)


@function_pass(opt_level=0, name="PlantedOutOfRange")
def Unrunnable(func, mod, ctx):
    # well typed, but index 99 of an axis of 10 is out of range when it runs
    from irpass.ir import Function, const

    return Function(func.params, op.take(func.body, const(np.int64(99)), axis=1, mode="fast"),
                    None, func.attrs)


def _passes(*middle):
    names_before = ["InferType", "SimplifyInference", "FoldConstant"]
    names_after = ["SimplifyExpr", "FoldConstant", "EliminateCommonSubexpr"]
    return Sequential([*(get_pass(n) for n in names_before), *middle,
                       *(get_pass(n) for n in names_after)], name="pipe")


def test_the_pass_that_changed_the_outputs_is_named_with_the_modules_around_it():
    mod = models.resnet()
    with pytest.raises(CheckEachError) as info:
        with PassContext(opt_level=3, instruments=[CheckEach(seed=3)]):
            _passes(SignFlip)(mod)
    err = info.value
    assert err.pass_name == "PlantedSignFlip"
    assert err.path == ["pipe[3]", "PlantedSignFlip"]
    assert err.problems and "max abs error" in err.problems[0]
    # the modules around the pass: running them reproduces the difference
    inputs = random_inputs(mod, 3)
    from irpass import evaluate

    assert not np.allclose(evaluate(err.before, **inputs), evaluate(err.after, **inputs))
    assert "negative" in str(err.after) and "negative" not in str(err.before)


def test_a_correct_pipeline_passes_and_gives_the_same_result():
    mod = models.mobilenet()
    with PassContext(opt_level=3):
        plain = default_pipeline(3)(mod)
    with PassContext(opt_level=3, instruments=[CheckEach(rtol=1e-4, atol=1e-5)]):
        checked = default_pipeline(3)(mod)
    assert structural_equal(plain, checked)


def test_a_module_that_stops_running_is_reported():
    with pytest.raises(CheckEachError, match="fails to run") as info:
        with PassContext(opt_level=3, instruments=[CheckEach()]):
            _passes(Unrunnable)(models.mlp())
    assert info.value.pass_name == "PlantedOutOfRange"
    assert info.value.problems == []


def test_given_inputs_are_used_and_a_bad_input_module_is_reported():
    mod = models.mlp()
    inputs = random_inputs(mod, 7)
    with pytest.raises(CheckEachError):
        with PassContext(instruments=[CheckEach(inputs=inputs)]):
            _passes(SignFlip)(mod)
    with pytest.raises(PassError, match="cannot run the module the pipeline starts from"):
        with PassContext(instruments=[CheckEach(inputs={"nope": 1})]):
            _passes()(mod)
