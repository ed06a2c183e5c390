"""ONNX's backend node tests (see :mod:`irpass_onnx.conformance`): every case gives the
result ``conformance_expected.txt`` records for it, so a case that newly fails, or newly
passes without the file being updated, fails here. Rewrite the file with
``python -m irpass_onnx.conformance --write contrib/irpass-onnx/tests/conformance_expected.txt``
and review its diff."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from irpass_onnx.conformance import (
    STAGE_FUNCS,
    Case,
    compare_outputs,
    node_cases,
    read_expectations,
    run_case,
)
from onnx import TensorProto, helper

EXPECTED_FILE = Path(__file__).with_name("conformance_expected.txt")
CASES = node_cases()
EXPECTED = read_expectations(EXPECTED_FILE)
HINT = ("; if that is intended, rewrite the expectations with `python -m "
        "irpass_onnx.conformance --write contrib/irpass-onnx/tests/conformance_expected.txt`")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_case_gives_the_recorded_result(case):
    got = run_case(case)
    want = EXPECTED.get(case.name)
    if want is None:
        assert got.passed, f"{case.name} used to pass every stage, now: {got.line()}" + HINT
    else:
        assert not got.passed, (f"{case.name} now passes every stage; the file records "
                                f"{want.stage} {want.outcome}" + HINT)
        assert (got.stage, got.outcome) == (want.stage, want.outcome), (
            f"{case.name}: now {got.stage} {got.outcome} ({got.reason}), recorded "
            f"{want.stage} {want.outcome} ({want.reason})" + HINT)


def test_expectations_name_only_cases_of_the_installed_onnx():
    stale = sorted(set(EXPECTED) - {c.name for c in CASES})
    assert not stale, f"{EXPECTED_FILE.name} lists cases onnx does not have: {stale[:10]}"


# -- the harness's comparisons ------------------------------------------------------------------


def test_float16_outputs_allow_a_few_ulps_and_no_more():
    one = np.array([1.0], np.float16)
    two_ulps = np.array([1.0 + 2 * 2.0**-10], np.float16)
    eight_ulps = np.array([1.0 + 8 * 2.0**-10], np.float16)
    assert compare_outputs([two_ulps], [one], rtol=1e-3, atol=0.0) is None
    assert compare_outputs([eight_ulps], [one], rtol=1e-3, atol=0.0) is not None
    # float32 keeps the case's rtol
    assert compare_outputs([two_ulps.astype(np.float32)], [one.astype(np.float32)],
                           rtol=1e-3, atol=0.0) is not None


def test_a_near_zero_element_carries_the_rounding_of_the_largest():
    want = np.array([10.0, 0.0], np.float32)
    assert compare_outputs([np.array([10.0, 1.9e-7], np.float32)], [want], 1e-3, 1e-7) is None
    assert compare_outputs([np.array([10.0, 1e-4], np.float32)], [want], 1e-3, 1e-7) is not None


def _one_op_model(op_type: str) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    graph = helper.make_graph([helper.make_node(op_type, ["x", "x"], ["y"])], "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(("expected_is_right", "export_op", "passes"), [
    (True, "Add", True),
    (True, "Mul", False),
    # onnxruntime misses the expected output on the original too: the export is held to
    # what onnxruntime computes for the original
    (False, "Add", True),
    (False, "Mul", False),
])
def test_the_onnxruntime_stage_holds_the_export_to_the_original(expected_is_right, export_op,
                                                                passes):
    pytest.importorskip("onnxruntime")
    x = np.array([1.0, 2.0, 3.0], np.float32)
    expected = x + x if expected_is_right else x + x + 1
    case = Case("t", _one_op_model("Add"), [([x], [expected])], 1e-3, 1e-7)
    problem = STAGE_FUNCS["onnxruntime"](case, {"exported": _one_op_model(export_op)})
    assert (problem is None) == passes, problem
