"""SimplifyExpr's rule set ``simplify`` (plugins/irpass_std/simplify_rules.py): rules by
name (disabling, hits, listing in the docs), typed output, exact use counts, and the
driver options every rule-set pass shares (``rewrites.max_rounds``, ``pass_name``, hits in
the timing instrument)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import irpass
import irpass.plugins
import numpy as np
import pytest
from irpass import Function, IRModule, const, op, var
from irpass.instrument import PassTimingInstrument
from irpass.ir import Call, Op, Tuple, post_order_visit
from irpass.ir.dataflow_pattern import DFPatternCallback, is_op, wildcard
from irpass.testing import check_semantics
from irpass.transform import PassContext, Rule, RuleSet, Sequential
from irpass_std.simplify_rules import RULE_DOCS, SIMPLIFY

FINITE = "std.SimplifyExpr.finite_math"
DOC = Path(__file__).resolve().parents[1] / "plugins" / "irpass_std" / "docs" / "SimplifyExpr.md"
S = (2, 3)


def zeros(*shape):
    return const(np.zeros(shape, "float32"))


def run(mod, **config):
    with PassContext(opt_level=3, config=config) as ctx:
        out = irpass.transform.SimplifyExpr()(mod)
    return out, ctx


def hits(ctx):
    notes = [d for d in ctx.diag.notes if d.pass_name == "SimplifyExpr"]
    assert notes
    return notes[-1].data


def program():
    x = var("x", shape=S)
    body = op.negative(op.negative(op.add(x, zeros(3))))
    return IRModule.from_expr(Function([x], op.exp(op.transpose(op.transpose(body)))))


def test_rule_names_and_docs():
    names = [r.name for r in SIMPLIFY.rules]
    assert names == list(RULE_DOCS)
    assert SIMPLIFY.name == "simplify" and SIMPLIFY.pass_name == "SimplifyExpr"
    doc = DOC.read_text()
    listed = set(re.findall(r"`simplify\.([a-z_]+)`", doc))
    assert listed == set(names)


def test_hits_per_rule_are_reported():
    out, ctx = run(program())
    assert hits(ctx) == {"simplify.add_zero": 1, "simplify.double_negative": 1,
                         "simplify.transpose_transpose": 1}
    assert out["main"].body.args[0] is out["main"].params[0]


@pytest.mark.parametrize("off, kept", [
    ("simplify.double_negative", "negative"),
    ("simplify.transpose_transpose", "transpose"),
    ("simplify.add_zero", "add"),
])
def test_one_rule_disabled_by_name(off, kept):
    out, ctx = run(program(), **{"rewrites.disable": [off]})
    text = str(out["main"])
    assert kept in text and off not in hits(ctx)
    assert len(hits(ctx)) == 2
    check_semantics(irpass.transform.SimplifyExpr(), program(),
                    config={"rewrites.disable": [off]})


def test_whole_rule_set_disabled_returns_the_input():
    mod = irpass.transform.InferType()(program())
    out, _ = run(mod, **{"rewrites.disable": ["simplify"]})
    assert out is mod


def test_output_is_typed_without_another_inference():
    x = var("x", shape=(1, 4, 3, 3))
    ch = const(np.arange(4, dtype="float32").reshape(4, 1, 1))
    body = op.multiply(op.add(op.reshape(op.reshape(x, (4, 9)), (1, 4, 3, 3)), ch), ch)
    out, _ = run(IRModule.from_expr(Function([x], op.exp(body))))
    nodes = []
    post_order_visit(out["main"], nodes.append)
    assert [n for n in nodes if type(n) is not Op and n._checked_type is None] == []
    assert "multiply" in str(out["main"]) and "reshape" not in str(out["main"])


def test_a_merge_unblocked_by_a_user_dropped_deeper_down():
    # x * 0 (finite_math) drops exp(inner), the other user of inner = x + 1: the merge of
    # (x + 1) + 2 then fires in the same run (the use count follows the dropped subtree)
    x = var("x", shape=S)
    inner = op.add(x, const(np.float32(1)))
    body = Tuple([op.multiply(op.exp(inner), zeros(*S)), op.add(inner, const(np.float32(2)))])
    mod = IRModule.from_expr(Function([x], body))
    out, _ = run(mod, **{FINITE: True})
    merged = out["main"].body.fields[1]
    assert merged.op is Op.get("add") and merged.args[0] is out["main"].params[0]
    assert float(merged.args[1].data) == 3
    with PassContext(config={FINITE: True}):
        assert irpass.transform.SimplifyExpr()(out) is out  # a fixed point
    check_semantics(irpass.transform.SimplifyExpr(), mod, config={FINITE: True})


def test_canonicalize_leaves_out_a_rule_set_its_pass_applies():
    # std registers SIMPLIFY through its irpass_register_rewrites hook
    entry = irpass.transform.list_rule_sets()["simplify"]
    assert entry.ruleset is SIMPLIFY and entry.owner == "std"
    mod = irpass.transform.InferType()(program())
    with PassContext():
        assert irpass.transform.Canonicalize()(mod) is mod
    # and its names are known to [rewrites] disable
    _, ctx = run(program(), **{"rewrites.disable": ["simplify.add_zero"]})
    assert "simplify.add_zero" not in hits(ctx)


# -- what every rule-set pass shares ------------------------------------------------------------


class Flip(DFPatternCallback):
    """exp(x) <-> log(x): never reaches a fixed point."""

    def __init__(self, frm, to):
        super().__init__()
        self.to = to
        self.pattern = is_op(frm)(wildcard())

    def callback(self, pre, post, node_map):
        return getattr(op, self.to)(post.args[0])


def flip_set():
    return RuleSet("loop", [Rule("exp_to_log", Flip("exp", "log")),
                            Rule("log_to_exp", Flip("log", "exp"))])


def exp_program():
    x = var("x", shape=S)
    return IRModule.from_expr(Function([x], op.exp(x)))


@pytest.mark.parametrize("greedy, unit", [(False, "rounds"), (True, "rewrites at one node")])
def test_rule_set_passes_read_the_round_bound_option(greedy, unit):
    p = flip_set().as_pass(name="Flipper", greedy=greedy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with PassContext(config={"rewrites.max_rounds": 3}) as ctx:
            Sequential([p])(exp_program())
    [warning] = ctx.diag.warnings
    assert f"after 3 {unit}" in warning.message and "loop.exp_to_log" in warning.message


def test_round_bound_below_one_is_an_error():
    p = flip_set().as_pass(name="Flipper")
    with PassContext(config={"rewrites.max_rounds": 0}), \
            pytest.raises(irpass.PassError, match="rewrites.max_rounds must be at least 1"):
        Sequential([p])(exp_program())


def test_greedy_rule_set_pass_checks_replacements():
    class Summed(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = is_op("exp")(wildcard())

        def callback(self, pre, post, node_map):
            return op.sum(post.args[0], axis=[1])

    p = RuleSet("bad", [Rule("sum", Summed())]).as_pass(name="Bad", greedy=True)
    with PassContext(), pytest.raises(irpass.PassError,
                                      match=r"rewrite rule 'bad.sum' \(plugin 'code'\) changed "
                                            r"the type of the matched expression from"):
        Sequential([p])(exp_program())


def test_timing_instrument_lists_hits_under_the_pass():
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        Sequential([irpass.transform.SimplifyExpr()])(program())
        Sequential([irpass.transform.SimplifyExpr()])(program())
        rows = {r.name: r for r in timing.timings()}
        text = timing.render()
    assert dict(rows["SimplifyExpr"].hits) == {"simplify.add_zero": 2,
                                               "simplify.double_negative": 2,
                                               "simplify.transpose_transpose": 2}
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("SimplifyExpr"))
    below = lines[at + 1:at + 4]
    assert [line.split()[0] for line in below] == ["simplify.add_zero",
                                                    "simplify.double_negative",
                                                    "simplify.transpose_transpose"]
    assert all(line.split()[1:] == ["2", "hits"] for line in below)
    assert rows["InferType"].hits == ()


def test_rules_keep_meaning_on_a_mixed_program():
    x = var("x", shape=(1, 4, 3, 3))
    ch = const(np.linspace(0.5, 2, 4, dtype="float32").reshape(4, 1, 1))
    y = op.transpose(op.transpose(x, (0, 2, 3, 1)), (0, 3, 1, 2))
    y = op.add(op.multiply(op.add(y, ch), ch), zeros(1))
    y = op.cast(op.squeeze(op.expand_dims(op.negative(op.negative(y)), 0), [0]), "float32")
    mod = IRModule.from_expr(Function([x], op.concatenate([op.exp(y)], axis=1)))
    out = check_semantics(irpass.transform.SimplifyExpr(), mod)
    calls = []
    post_order_visit(out["main"], lambda n: calls.append(n.op.name) if type(n) is Call else None)
    assert sorted(calls) == ["add", "exp", "multiply"]


def test_config_file_disables_a_rule_of_a_registered_rule_set(tmp_path):
    from irpass.settings import load_settings

    # std registers the rule set, so the config file's name of one of its rules validates
    (tmp_path / "irpass.toml").write_text('[rewrites]\ndisable = ["simplify.add_zero"]\n')
    settings = load_settings(cwd=tmp_path, environ={})
    settings.validate()
    with settings.pass_context() as ctx:
        out = irpass.transform.SimplifyExpr()(program())
    assert "add" in str(out["main"]) and "simplify.add_zero" not in hits(ctx)
    assert "simplify.double_negative" in hits(ctx)
