"""The rule index leaves out the callbacks whose patterns need an op the program does not
call (``required_ops``, ``RuleIndex.for_program``), and rewriting gives the same result."""

from __future__ import annotations

from irpass import op
from irpass.ir import Function, structural_equal, var
from irpass.ir.dataflow_pattern import DFPatternCallback, is_op, rewrite, wildcard
from irpass.ir.dataflow_pattern.index import index_for, required_ops


def test_required_ops_follow_the_pattern():
    w = wildcard()
    assert required_ops(is_op("add")(is_op("erf")(w), w)) == {"add", "erf"}
    # alternatives: what both sides need
    alt = is_op("exp")(is_op("erf")(w)) | is_op("exp")(is_op("tanh")(w))
    assert required_ops(alt) == {"exp"}
    # TVM's re-association keeps the operand patterns: sqrt is needed either way
    p = is_op("divide")(is_op("multiply")(w, is_op("sqrt")(w)), w)
    assert required_ops(p) == {"divide", "multiply", "sqrt"}
    assert required_ops(w) == set()


class _ErfToTanh(DFPatternCallback):
    """erf(x) -> tanh(x) (a rule that makes the op the next one needs)."""

    def __init__(self):
        super().__init__()
        self.x = wildcard()
        self.pattern = is_op("erf")(self.x)

    def callback(self, pre, post, node_map):
        return op.tanh(node_map[self.x][0])


class _TanhOfExp(DFPatternCallback):
    """tanh(exp(x)) -> sigmoid(x) (not an identity; only the rewriting matters)."""

    def __init__(self):
        super().__init__()
        self.x = wildcard()
        self.pattern = is_op("tanh")(is_op("exp")(self.x))

    def callback(self, pre, post, node_map):
        return op.sigmoid(node_map[self.x][0])


def test_for_program_drops_what_cannot_match_and_keeps_the_result():
    rules = [_ErfToTanh(), _TanhOfExp()]
    index = index_for(rules)
    x = var("x", shape=(4,))
    plain = op.add(op.exp(x), x)
    assert index.for_program(plain).callbacks == []
    with_erf = op.erf(op.exp(x))
    assert index.for_program(with_erf).callbacks == [rules[0]]
    both = op.tanh(op.exp(op.erf(x)))
    assert index.for_program(both) is index
    # round 1 turns erf into tanh, which only then lets the second rule fire: the
    # index is asked again each round, on the program as it is
    got = rewrite(rules, Function([x], op.erf(op.exp(x))))
    assert structural_equal(got, Function([x], op.sigmoid(x)))
