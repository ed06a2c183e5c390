"""``shape_of(x, dtype)`` in any dtype the IR knows, as in TVM (``irpass/op/create.py``):
type inference, evaluation, and FoldConstant folding it to a constant of that dtype."""

from __future__ import annotations

import irpass
import numpy as np
import pytest
from irpass import const, op
from irpass.ir import Constant, Function, IRModule, TensorType, infer_type, var
from irpass.ir.types import SUPPORTED_DTYPES
from irpass.transform import FoldConstant
from op_checks import run

X = var("x", shape=(2, 300, 5))


def _mod(body, *params):
    return IRModule.from_expr(Function(list(params), body))


@pytest.mark.parametrize("dtype", sorted(SUPPORTED_DTYPES))
def test_type_is_a_vector_of_the_dtype(dtype):
    body = infer_type(_mod(op.shape_of(X, dtype), X))["main"].body
    assert body.checked_type == TensorType((3,), dtype)
    assert op.shape_of(X, dtype).attrs["dtype"] == dtype


def test_evaluates_in_float32():
    mod = _mod(op.shape_of(X, "float32"), X)
    out = irpass.evaluate(mod, np.zeros((2, 300, 5), "float32"))
    assert out.dtype == np.float32 and out.tolist() == [2.0, 300.0, 5.0]


def test_dims_convert_as_a_cast_does():
    # the kernel's conversion is numpy's cast from int64: wrap-around, inf, nonzero
    data = np.zeros((0, 300, 70000), "float32")
    assert run(op.shape_of(var("x"), "int8"), data).tolist() == [0, 44, 112]
    assert run(op.shape_of(var("x"), "uint8"), data).tolist() == [0, 44, 112]
    assert run(op.shape_of(var("x"), "float16"), data).tolist() == [0.0, 300.0, np.inf]
    assert run(op.shape_of(var("x"), "bool"), data).tolist() == [False, True, True]
    assert run(op.shape_of(var("x"), "float64"), np.zeros(())).shape == (0,)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "bool", "uint64"])
def test_fold_constant_folds_to_a_constant_of_the_dtype(dtype):
    mod = _mod(op.shape_of(X, dtype), X)
    body = FoldConstant()(mod)["main"].body
    assert type(body) is Constant and body.data.dtype == np.dtype(dtype)
    # the folded value is what evaluating the call gives
    expected = irpass.evaluate(mod, np.zeros((2, 300, 5), "float32"))
    np.testing.assert_array_equal(body.data, expected)


def test_fold_constant_folds_float_shape_arithmetic():
    # TVM's case: shape_of(x, "float32") folds, and so does what only depends on it
    body = op.multiply(op.shape_of(X, "float32"), const(np.float32(0.5)))
    out = FoldConstant()(_mod(body, X))["main"].body
    assert type(out) is Constant and out.data.dtype == np.float32
    assert out.data.tolist() == [1.0, 150.0, 2.5]


def test_fold_constant_of_a_constant_argument_runs_the_kernel():
    body = op.shape_of(const(np.zeros((3, 4), "int32")), "float64")
    out = FoldConstant()(_mod(body))["main"].body
    assert type(out) is Constant and out.data.dtype == np.float64 and out.data.tolist() == [3, 4]


def test_other_dtypes_are_refused():
    with pytest.raises(ValueError, match="shape_of.dtype: unsupported dtype 'complex64'"):
        op.shape_of(X, "complex64")
    with pytest.raises(TypeError, match="shape_of.dtype must be a dtype name"):
        op.shape_of(X, 3)
