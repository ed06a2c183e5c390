"""The example pack's own tests: passes, semantics, the config option, the instrument, wiring.

Run with ``pytest`` from the pack's directory. A template for pack authors:
test a pass on small programs, compare results before and after on random
inputs (the ``check_semantics`` fixture of irpass's pytest plugin), and check
the plugin registered what it promised.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from irpass import Function, IRModule, const, op, var
from irpass.instrument import get_instrument
from irpass.transform import PassContext, get_pass, get_pass_entry, pipeline_plan
from irpass_example_pack import FoldAddZero, OpStatistics, count_ops


def program() -> IRModule:
    """tanh((x * 1) + 0) + (b + zeros): two neutral calls, one broadcasting add."""
    x = var("x", shape=(2, 3))
    b = var("b", shape=(3,))
    zeros = const(np.zeros((2, 3), dtype="float32"))
    ones = const(np.ones((2, 3), dtype="float32"))
    y = op.tanh(op.add(op.multiply(x, ones), zeros))
    return IRModule.from_expr(Function([x, b], op.add(y, op.add(b, zeros))))


def test_fold_add_zero_removes_neutral_calls_only(check_semantics):
    out = check_semantics(FoldAddZero(), program(), opt_level=1, seeds=(0, 1, 2))
    assert count_ops(out) == {"main": {"add": 2, "tanh": 1}}  # b + zeros broadcasts b: kept


def test_fold_add_zero_respects_max_rewrites(check_semantics):
    out = check_semantics(FoldAddZero(), program(), opt_level=1,
                          config={"example.max_rewrites": 1})
    assert count_ops(out) == {"main": {"add": 3, "tanh": 1}}


def test_op_statistics_counts():
    stats = OpStatistics()
    assert stats(program()) is not None
    assert stats.counts == {"main": {"add": 3, "multiply": 1, "tanh": 1}}


def test_op_stats_instrument():
    stream = io.StringIO()
    with PassContext(opt_level=1, instruments=[get_instrument("op-stats", stream)]):
        FoldAddZero()(program())
    assert "op-stats: FoldAddZero: add -1, multiply -1" in stream.getvalue()


def test_plugin_wiring(example_plugin):
    assert get_pass_entry("FoldAddZero").owner == "example"
    assert get_pass("OpStatistics").info.opt_level == 0
    kinds = {c.kind for c in example_plugin.contributions}
    assert kinds == {"pass", "instrument", "config option", "pipeline", "rewrite"}
    assert "FoldAddZero" in pipeline_plan(1).names
    assert "FoldAddZero" not in pipeline_plan(0).names
    with pytest.raises(TypeError, match="example.max_rewrites"):
        PassContext(config={"example.max_rewrites": 1.5})
