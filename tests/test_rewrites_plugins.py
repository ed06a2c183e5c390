"""Rewrite rules as plugins: the ``irpass_register_rewrites`` hook, ``[rewrites]`` in the
config file, std's ``Canonicalize`` pass and ``RuleSet.as_pass``.

Plugins here are in-memory objects registered with ``irpass.plugins.register``;
the autouse fixture of ``conftest.py`` puts the registries back after each test.
"""

from __future__ import annotations

import types
import warnings

import irpass
import irpass.plugins
import numpy as np
import pytest
from irpass import op
from irpass.ir import Function, IRModule, TensorType, const, var
from irpass.ir.dataflow_pattern import DFPatternCallback, is_constant, is_op, wildcard
from irpass.plugins import PluginWarning, hookimpl
from irpass.testing.semantics import check_semantics
from irpass.transform import PassContext, Rule, RuleSet, list_rule_sets
from work_counts import calls_made

T = TensorType((2, 3), "float32")


class AddZero(DFPatternCallback):
    """x + 0 -> x (for an all-zero constant of at most x's shape)."""

    def __init__(self) -> None:
        super().__init__()
        self.x = wildcard()
        self.c = is_constant()
        self.pattern = is_op("add")(self.x, self.c)

    def callback(self, pre, post, node_map):
        c = node_map[self.c][0]
        if np.any(c.data) or c.data.ndim > len(T.shape):
            return post
        return node_map[self.x][0]


class MulOne(DFPatternCallback):
    """x * 1 -> x."""

    def __init__(self) -> None:
        super().__init__()
        self.x = wildcard()
        self.c = is_constant()
        self.pattern = is_op("multiply")(self.x, self.c)

    def callback(self, pre, post, node_map):
        c = node_map[self.c][0]
        return node_map[self.x][0] if np.all(c.data == 1) and c.data.ndim == 0 else post


class _Returns(DFPatternCallback):
    """negative(x) -> whatever ``make(x)`` gives."""

    def __init__(self, make) -> None:
        super().__init__()
        self.x = wildcard()
        self.pattern = is_op("negative")(self.x)
        self.make = make

    def callback(self, pre, post, node_map):
        return self.make(node_map[self.x][0])


class Flip(DFPatternCallback):
    """exp(x) <-> log(x): never reaches a fixed point."""

    def __init__(self, frm: str, to: str) -> None:
        super().__init__()
        self.to = to
        self.pattern = is_op(frm)(wildcard())

    def callback(self, pre, post, node_map):
        return getattr(op, self.to)(post.args[0])


def plugin(*rulesets, name="rw"):
    obj = types.SimpleNamespace()

    @hookimpl
    def irpass_register_rewrites():
        return list(rulesets)

    obj.irpass_register_rewrites = irpass_register_rewrites
    irpass.plugins.register(obj, name=name)
    return obj


def example_set() -> RuleSet:
    return RuleSet("example", [Rule("fold_add_zero", AddZero()), Rule("fold_mul_one", MulOne())],
                   doc="toy rules")


def program() -> IRModule:
    x = var("x", T)
    body = op.exp(op.multiply(op.add(op.add(x, const(np.zeros((3,), "float32"))),
                                     const(np.float32(0))), const(np.float32(1))))
    return IRModule.from_expr(Function([x], body))


def canonicalize(mod, **config):
    with PassContext(opt_level=2, config=config) as ctx:
        out = irpass.transform.Canonicalize()(irpass.transform.InferType()(mod))
    return out, ctx


def hits_of(ctx) -> dict[str, int]:
    notes = [d for d in ctx.diag.notes if d.pass_name == "Canonicalize"]
    assert notes, ctx.diag.render()
    return notes[-1].data


# -- registration and listing ------------------------------------------------------------


def test_register_and_list():
    plugin(example_set())
    sets = list_rule_sets()
    assert sets["example"].owner == "rw"
    assert sets["example"].ruleset.rule_names() == ["example.fold_add_zero", "example.fold_mul_one"]
    record = irpass.plugins.get_plugin_manager().record("rw")
    assert [(c.kind, c.name) for c in record.contributions] == [
        ("rewrite", "example (2 rules: fold_add_zero, fold_mul_one)")]
    assert sets["example"].ruleset.rules[0].doc.startswith("x + 0 -> x")


def test_rule_from_callback_with_a_name_and_bad_names():
    cb = MulOne()
    cb.name = "mul_one"
    assert RuleSet("s", [cb]).rule_names() == ["s.mul_one"]
    with pytest.raises(ValueError, match="no dots"):
        RuleSet("a.b", [])
    with pytest.raises(ValueError, match="repeated: x"):
        RuleSet("s", [Rule("x", MulOne()), Rule("x", AddZero())])
    with pytest.raises(TypeError, match="expected Rule"):
        RuleSet("s", [MulOne()])


def test_name_clash_fails_the_second_plugin_naming_the_rules():
    plugin(example_set(), name="first")
    with pytest.warns(PluginWarning, match=r"rule set 'example' \(rules example.fold_add_zero"):
        plugin(RuleSet("example", [Rule("fold_add_zero", AddZero())]), name="second")
    assert irpass.plugins.get_plugin_manager().record("second").status == "failed"
    assert list_rule_sets()["example"].owner == "first"


def test_garbage_fails_the_plugin():
    with pytest.warns(PluginWarning, match="expected an irpass.transform.RuleSet"):
        plugin(AddZero(), name="bad")
    assert "bad" not in {e.owner for e in list_rule_sets().values()}


def test_cli_lists_rewrites(capsys):
    from irpass.cli.main import main

    plugin(example_set())
    assert main(["rewrites"]) == 0
    out = capsys.readouterr().out
    assert "example.fold_add_zero" in out and "rw" in out and "x + 0 -> x" in out


# -- Canonicalize ----------------------------------------------------------------------------


def test_canonicalize_reaches_fixed_point_and_counts_hits():
    plugin(example_set())
    out, ctx = canonicalize(program())
    assert str(out["main"].body).count("add") == 0 and "multiply" not in str(out["main"].body)
    assert hits_of(ctx) == {"example.fold_add_zero": 2, "example.fold_mul_one": 1}
    again, ctx = canonicalize(out)
    assert again["main"] is out["main"] and hits_of(ctx) == {}


def test_canonicalize_without_rules_returns_its_input():
    mod = irpass.transform.InferType()(program())
    with PassContext():
        assert irpass.transform.Canonicalize()(mod) is mod


def test_disable_a_rule_set_and_a_rule():
    plugin(example_set())
    out, ctx = canonicalize(program(), **{"rewrites.disable": ["example.fold_mul_one"]})
    assert "multiply" in str(out["main"].body) and "add" not in str(out["main"].body)
    assert hits_of(ctx) == {"example.fold_add_zero": 2}
    out, _ = canonicalize(program(), **{"rewrites.disable": ["example"]})
    assert str(out["main"].body) == str(irpass.transform.InferType()(program())["main"].body)


def test_semantics_by_evaluation():
    plugin(example_set())
    out = check_semantics("InferType,Canonicalize", program(), seeds=(0, 1, 2))
    assert "add" not in str(out["main"].body)


def test_default_pipeline_runs_canonicalize_after_simplify_expr():
    names = [p.info.name for p in irpass.transform.default_pipeline(1).passes]
    assert names.index("Canonicalize") == names.index("SimplifyExpr") + 1
    assert "Canonicalize" not in [p.info.name for p in irpass.transform.default_pipeline(0).passes]


def test_round_bound_names_the_rule_and_applies_the_others():
    plugin(example_set(), RuleSet("loop", [Rule("exp_to_log", Flip("exp", "log")),
                                           Rule("log_to_exp", Flip("log", "exp"))]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, ctx = canonicalize(program(), **{"std.Canonicalize.max_rounds": 5})
    [warning] = ctx.diag.warnings
    assert "after 5 rounds" in warning.message and "loop.exp_to_log" in warning.message
    assert "plugin 'rw'" in warning.message
    assert "add" not in str(out["main"].body)           # the other rules were applied
    assert hits_of(ctx)["example.fold_add_zero"] == 2


# -- bad replacements ----------------------------------------------------------------------


@pytest.mark.parametrize("make, message", [
    (lambda x: 42, "returned int 42, not an expression"),
    (lambda x: op.add(x, const(np.zeros((4,), "float32"))), "ill-typed replacement"),
    (lambda x: op.sum(x, axis=[1]), "changed the type of the matched expression"),
])
def test_bad_replacement_is_reported_and_module_unchanged(make, message):
    plugin(RuleSet("bad", [Rule("neg", _Returns(make))]), name="badpack")
    x = var("x", T)
    mod = irpass.transform.InferType()(IRModule.from_expr(Function([x], op.exp(op.negative(x)))))
    text = str(mod)
    with PassContext(), pytest.raises(irpass.PassError) as info:
        irpass.transform.Canonicalize()(mod)
    assert message in str(info.value)
    assert "rule 'bad.neg' (plugin 'badpack')" in str(info.value)
    assert str(mod) == text


# -- a rule set as a pass ------------------------------------------------------------------


def test_rule_set_as_a_pass_of_its_own():
    rules = example_set()
    p = rules.as_pass(opt_level=1, name="FoldExample")
    assert p.info.name == "FoldExample" and p.info.opt_level == 1
    assert p.info.required == ("InferType",) or list(p.info.required) == ["InferType"]
    out = check_semantics(p, program())
    assert "add" not in str(out["main"].body)
    with PassContext(config={"rewrites.disable": ["example.fold_add_zero"]}) as ctx:
        out = irpass.transform.Sequential([p])(program())
    assert "add" in str(out["main"].body) and "multiply" not in str(out["main"].body)
    assert ctx.diag.notes[-1].data == {"example.fold_mul_one": 1}


# -- config file -------------------------------------------------------------------------------


def _settings(tmp_path, text):
    from irpass.settings import load_settings

    (tmp_path / "irpass.toml").write_text(text)
    return load_settings(cwd=tmp_path, environ={})


def test_config_file_disables_rules(tmp_path):
    plugin(example_set())
    s = _settings(tmp_path, '[rewrites]\ndisable = ["example.fold_mul_one"]\n')
    s.validate()
    with s.pass_context() as ctx:
        out = irpass.transform.Canonicalize()(irpass.transform.InferType()(program()))
    assert "multiply" in str(out["main"].body)
    assert hits_of(ctx) == {"example.fold_add_zero": 2}
    assert ("rewrites.disable", ("example.fold_mul_one",)) in [r[:2] for r in s.describe()]


def test_config_file_unknown_rule_is_an_error(tmp_path):
    from irpass.settings import ConfigError

    plugin(example_set())
    s = _settings(tmp_path, '[rewrites]\ndisable = ["example.fold_add_zer"]\n')
    with pytest.raises(ConfigError) as info:
        s.validate()
    text = str(info.value)
    assert "rewrites" in text and "disable" in text and "example.fold_add_zer" in text
    assert "example.fold_add_zero" in text


def test_config_file_rewrites_table_is_checked(tmp_path):
    from irpass.settings import ConfigError

    with pytest.raises(ConfigError, match="expected an array"):
        _settings(tmp_path, '[rewrites]\ndisable = "example"\n')
    with pytest.raises(ConfigError, match="unknown key"):
        _settings(tmp_path, '[rewrites]\nenable = ["example"]\n')


def test_raising_rule_is_reported_naming_it():
    def boom(x):
        raise KeyError("oops")

    plugin(RuleSet("bad", [Rule("neg", _Returns(boom))]), name="badpack")
    x = var("x", T)
    mod = IRModule.from_expr(Function([x], op.negative(x)))
    with PassContext(), pytest.raises(irpass.PassError, match=r"'bad.neg' \(plugin 'badpack'\) "
                                                              r"raised KeyError"):
        irpass.transform.Sequential([irpass.transform.Canonicalize()])(mod)


def test_linear_on_a_long_chain():
    plugin(example_set())
    calls = []
    for n in (500, 2000):
        x = var("x", T)
        y = x
        for _ in range(n):
            y = op.tanh(op.add(y, const(np.zeros((3,), "float32"))))
        mod = irpass.transform.InferType()(IRModule.from_expr(Function([x], y)))
        (out, ctx), made = calls_made(lambda mod=mod: canonicalize(mod))
        calls.append(made)
        assert hits_of(ctx) == {"example.fold_add_zero": n}
    assert calls[1] < 5 * calls[0]  # 4x the nodes: about 4x the calls, not 16x (quadratic)
