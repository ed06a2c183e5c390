"""Rule-set passes count each rule's replacement on the debug counter (site: the rule)."""

from __future__ import annotations

import numpy as np
from irpass import op
from irpass.ir import Function, IRModule, const, var
from irpass.testing import random_inputs
from irpass.transform import PassContext, Sequential, get_pass


def _mod() -> IRModule:
    x = var("x", shape=(4,))
    body = x
    for _ in range(6):
        body = op.add(op.nn.relu(body), const(np.zeros(4, np.float32)))
    return IRModule.from_expr(Function([x], body))


def _run(cap: int):
    ctx = PassContext(opt_level=3, config={"debug_counter": {"SimplifyExpr": cap}})
    with ctx:
        out = Sequential([get_pass("SimplifyExpr")])(_mod())
    return out, ctx


def test_each_rule_replacement_is_one_counted_rewrite():
    out, ctx = _run(-1)
    assert ctx.debug_counts == {"SimplifyExpr": 6} and "add(" not in str(out)
    for cap in range(7):
        out, ctx = _run(cap)
        assert str(out).count("add(") == 6 - cap
        if cap:
            assert ctx.debug_site("SimplifyExpr") == "simplify.add_zero"
        import irpass

        inputs = random_inputs(out, 0)
        np.testing.assert_array_equal(irpass.evaluate(out, **inputs),
                                      irpass.evaluate(_mod(), **inputs))
