"""Kernels leave numpy's floating-point error state to their callers.

The op kernels compute IEEE arithmetic (overflow gives inf, 0/0 gives nan)
without entering ``np.errstate`` themselves; the evaluator and FoldConstant
silence floating-point errors once around all the kernels they run. These
tests run both under ``np.errstate(all="raise")`` with warnings as errors, so
they fail if either caller stops managing the error state.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from irpass import Function, IRModule, const, evaluate, op, var
from irpass.ir import Constant
from irpass.transform import PassContext, get_pass

F32 = "float32"


@pytest.fixture
def strict_numpy():
    """Floating-point errors raise and warnings are errors inside the test."""
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def overflowing(x):
    """``exp(x) * 1e38 - exp(x) * 1e38`` plus ``x / 0``: inf, nan and a division by zero."""
    big = op.multiply(op.exp(x), const(np.float32(1e38)))
    return op.add(op.subtract(big, big), op.divide(x, const(np.float32(0.0))))


def test_evaluate_silences_floating_point_errors(strict_numpy):
    x = var("x", shape=(3,), dtype=F32)
    out = evaluate(Function([x], overflowing(x)), np.array([100.0, 1.0, -1.0], dtype=F32))
    # exp(100) * 1e38 is inf, inf - inf is nan; 1e38 * e - 1e38 * e is 0 (finite).
    assert np.isnan(out[0])
    assert out[1] == np.inf and out[2] == -np.inf


def test_fold_constant_silences_floating_point_errors(strict_numpy):
    x = var("x", shape=(3,), dtype=F32)
    folded_input = overflowing(const(np.array([100.0, 1.0, -1.0], dtype=F32)))
    func = Function([x], op.add(x, folded_input))
    with PassContext(opt_level=3):
        out = get_pass("FoldConstant")(IRModule({"main": func}))["main"]
    c = out.body.args[1]
    assert type(c) is Constant
    assert np.isnan(c.data[0]) and c.data[1] == np.inf and c.data[2] == -np.inf
