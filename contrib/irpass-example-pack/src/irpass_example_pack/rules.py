"""The pack's rewrite rules: ``FoldAddZero`` again, as a rule of a few lines.

``passes.FoldAddZero`` is the hand-written pass (an ``ExprMutator``, a budget, both
operand orders); the rule below says the ``x + 0`` part with a pattern. The plugin
registers the rule set ``example`` through ``irpass_register_rewrites``: std's
``Canonicalize`` applies it with every other plugin's rules, and
``EXAMPLE_RULES.as_pass()`` makes it a pass of its own.
"""

from __future__ import annotations

import numpy as np
from irpass.ir.dataflow_pattern import DFPatternCallback, is_constant, is_op, wildcard
from irpass.transform import Rule, RuleSet

__all__ = ["EXAMPLE_RULES", "AddZero"]


class AddZero(DFPatternCallback):
    """x + 0 -> x, when the zero does not broadcast x to a bigger shape."""

    def __init__(self) -> None:
        super().__init__()
        self.x, self.zero = wildcard(), is_constant()
        self.pattern = is_op("add")(self.x, self.zero) | is_op("add")(self.zero, self.x)

    def callback(self, pre, post, node_map):
        x, zero = node_map[self.x][0], node_map[self.zero][0]
        # x may be new in this round (untyped): read types on pre, typed by the driver;
        # a replacement of another type is refused, so keep an add that broadcasts x
        x_pre = pre.args[1] if pre.args[0] is zero else pre.args[0]
        same = x_pre.checked_type == pre.checked_type
        return x if same and not np.any(zero.data) else post


#: The rule set the plugin registers: rules ``example.fold_add_zero``.
EXAMPLE_RULES = RuleSet("example", [Rule("fold_add_zero", AddZero())],
                        doc="the example pack's rewrite rules")
