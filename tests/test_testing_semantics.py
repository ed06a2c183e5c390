"""irpass.testing.check_semantics: it passes meaning-preserving passes and catches the rest."""

from __future__ import annotations

import numpy as np
import pytest
from irpass import op
from irpass.ir import Call, ExprMutator, Function, IRModule, Op, TensorType, Tuple, const, var
from irpass.testing import assert_outputs_close, check_semantics, models
from irpass.transform import Identity, function_pass, module_pass

F32 = TensorType((2, 3), "float32")


def _mod() -> IRModule:
    x, y = var("x", F32), var("y", F32)
    return IRModule.from_expr(Function([x, y], op.add(op.multiply(x, y), const(np.float32(1)))))


class _Swap(ExprMutator):
    """add -> subtract: changes the meaning."""

    def visit_call(self, call: Call):  # type: ignore[no-untyped-def]
        new = super().visit_call(call)
        if call.op is Op.get("add"):
            return Call(Op.get("subtract"), new.args, new.attrs)
        return new


@function_pass(opt_level=0)
def add_to_subtract(func, mod, ctx):  # noqa: ANN001, ANN201
    return _Swap().visit(func)


def test_identity_passes_and_returns_the_module():
    mod = _mod()
    assert check_semantics(Identity(), mod) is mod


def test_a_pass_that_changes_the_result_is_named_with_the_worst_element():
    with pytest.raises(AssertionError, match=r"pass 'add_to_subtract', input set 0 \(seed 0\).*"
                                             r"differs at 6 of 6 element"):
        check_semantics(add_to_subtract, _mod())


def test_pipelines_as_text_and_as_lists():
    check_semantics("InferType,Identity", _mod())
    with pytest.raises(AssertionError, match="passes Identity,add_to_subtract"):
        check_semantics([Identity(), add_to_subtract], _mod())


def test_changing_main_parameters_is_caught():
    @module_pass(opt_level=0)
    def drop_param(mod, ctx):  # noqa: ANN001, ANN202
        x = var("x", F32)
        return IRModule.from_expr(Function([x], op.add(x, x)))

    with pytest.raises(AssertionError, match="changed @main's parameters"):
        check_semantics(drop_param, _mod())


def test_an_ill_typed_result_is_caught():
    @module_pass(opt_level=0)
    def bad(mod, ctx):  # noqa: ANN001, ANN202
        x, y = mod["main"].params
        return IRModule.from_expr(Function([x, y], op.add(x, const(np.zeros((4, 5), "float32")))))

    with pytest.raises(AssertionError, match="ill-typed"):
        check_semantics(bad, _mod())


def test_explicit_inputs_and_tolerances():
    mod = _mod()
    inputs = [{"x": np.ones((2, 3), "float32"), "y": np.full((2, 3), 2, "float32")}]
    check_semantics(Identity(), mod, inputs=inputs)
    with pytest.raises(AssertionError, match="input set 0:"):
        check_semantics(add_to_subtract, mod, inputs=inputs)


def test_outputs_compare_through_tuples_shapes_and_dtypes():
    a = np.arange(6, dtype="float32").reshape(2, 3)
    assert_outputs_close((a, (a,)), (a.copy(), (a.copy(),)))
    with pytest.raises(AssertionError, match=r"result\.1\.0 differs at 1 of 6.*index \(1, 2\)"):
        b = a.copy()
        b[1, 2] += 1
        assert_outputs_close((a, (b,)), (a, (a,)))
    with pytest.raises(AssertionError, match="was float32"):
        assert_outputs_close(a.astype("float64"), a)
    nan = np.array([np.nan], "float32")
    assert_outputs_close(nan, nan.copy())


def test_tuple_results_of_a_model():
    x = var("x", F32)
    mod = IRModule.from_expr(Function([x], Tuple([op.exp(x), op.negative(x)])))
    check_semantics(Identity(), mod)
    check_semantics(Identity(), models.mlp())


def test_bad_arguments():
    with pytest.raises(TypeError, match="must be an IRModule"):
        check_semantics(Identity(), _mod()["main"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Pass, a list of passes or a pipeline string"):
        check_semantics(42, _mod())  # type: ignore[arg-type]
