"""The pack tested with the fixtures of irpass's pytest plugin (installed with irpass).

- ``assert_ir_matches``: FoldAddZero's output against ``expected/fold_add_zero.txt``
  (``pytest --irpass-update`` rewrites the file after an intended change; review the diff);
- ``check_semantics`` with ``irpass_example_model``: the pass keeps the meaning of every
  example network (one test per network);
- ``irpass_plugins`` and its marker: the plugin alone, and next to std, loaded afresh
  for one test and unloaded after it.
"""

from __future__ import annotations

import numpy as np
import pytest
from irpass import Function, IRModule, const, op, var
from irpass.transform import PassContext, list_passes, pipeline_plan
from irpass_example_pack import FoldAddZero

# by module path: the same plugin whether the pack is installed or run from a checkout
PLUGIN = "irpass_example_pack.plugin"


def program() -> IRModule:
    """tanh((x * 1) + 0) + (b + zeros): two neutral calls and an add that broadcasts b."""
    x = var("x", shape=(2, 2))
    b = var("b", shape=(2,))
    zeros = const(np.zeros((2, 2), dtype="float32"))
    ones = const(np.ones((2, 2), dtype="float32"))
    y = op.tanh(op.add(op.multiply(x, ones), zeros))
    return IRModule.from_expr(Function([x, b], op.add(y, op.add(b, zeros))))


def test_fold_add_zero_output(assert_ir_matches):
    with PassContext(opt_level=1):
        out = FoldAddZero()(program())
    assert_ir_matches(out, "expected/fold_add_zero.txt")


def test_fold_add_zero_keeps_the_meaning_of_each_example_network(
        check_semantics, irpass_example_model):
    check_semantics(FoldAddZero(), irpass_example_model)


@pytest.mark.irpass_plugins(PLUGIN)
def test_the_plugin_works_without_std():
    passes = list_passes()
    assert {"FoldAddZero", "OpStatistics"} <= set(passes) and "SimplifyExpr" not in passes
    # no SimplifyExpr to follow: FoldAddZero falls back to the end of phase simplify
    assert pipeline_plan(1).names == ("FoldAddZero",)


def test_the_plugin_goes_right_after_simplify_expr(irpass_plugins):
    manager = irpass_plugins("std", PLUGIN)
    assert manager.record(PLUGIN).status == "loaded"
    names = pipeline_plan(1).names
    assert names[names.index("SimplifyExpr") + 1] == "FoldAddZero"
