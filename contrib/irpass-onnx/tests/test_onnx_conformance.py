"""ONNX's backend node tests (see :mod:`irpass_onnx.conformance`): every case gives the
result ``conformance_expected.txt`` records for it, so a case that newly fails, or newly
passes without the file being updated, fails here. Rewrite the file with
``python -m irpass_onnx.conformance --write contrib/irpass-onnx/tests/conformance_expected.txt``
and review its diff."""

from __future__ import annotations

from pathlib import Path

import pytest
from irpass_onnx.conformance import node_cases, read_expectations, run_case

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
