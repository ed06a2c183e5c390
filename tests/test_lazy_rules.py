"""LazyRuleSet: a plugin's rule set declared by where it lives, imported when first used."""

import sys
import textwrap

import pytest
from irpass.plugins import hookimpl
from irpass.testing.plugins import isolated_plugins
from irpass.transform import list_rule_sets
from irpass.transform.lazy_rules import LazyRuleSet


def _write_pack(tmp_path, monkeypatch, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))


RULES = """
    from irpass.ir.dataflow_pattern import DFPatternCallback, is_op, wildcard
    from irpass.transform import Rule, RuleSet

    class AddZero(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = is_op("add")(wildcard(), wildcard())

        def callback(self, pre, post, node_map):
            return post

    EXAMPLE = RuleSet("lazyex", [Rule("add_noop", AddZero())])
    WRONG_PASS = RuleSet("lazyex", [Rule("add_noop", AddZero())], pass_name="Other")
    NOT_A_SET = 3
"""


def _plugin(decl):
    class Plugin:
        @hookimpl
        def irpass_register_rewrites(self):
            return [decl]

    return Plugin()


def _load(decl):
    from irpass.plugins import get_plugin_manager

    get_plugin_manager().register(_plugin(decl), "lazyexpack")


def test_declared_rule_set_is_imported_only_when_its_rules_are_needed(tmp_path, monkeypatch):
    _write_pack(tmp_path, monkeypatch, "lazyex_rules", RULES)
    with isolated_plugins():
        _load(LazyRuleSet("lazyex_rules:EXAMPLE", name="lazyex"))
        entry = list_rule_sets()["lazyex"]
        assert entry.owner == "lazyexpack" and entry.pass_name is None
        assert "lazyex_rules" not in sys.modules
        assert entry.ruleset.rule_names() == ["lazyex.add_noop"]
        assert "lazyex_rules" in sys.modules
    sys.modules.pop("lazyex_rules", None)


@pytest.mark.parametrize(("target", "error", "words"), [
    ("lazyex_rules2:WRONG_PASS", TypeError, "pass_name='Other'"),
    ("lazyex_rules2:NOT_A_SET", TypeError, "not a RuleSet"),
    ("lazyex_rules2:MISSING", ImportError, "cannot be imported"),
])
def test_a_wrong_declaration_names_the_rule_set_and_target(tmp_path, monkeypatch, target,
                                                           error, words):
    _write_pack(tmp_path, monkeypatch, "lazyex_rules2", RULES)
    decl = LazyRuleSet(target, name="lazyex")
    with pytest.raises(error) as info:
        decl.load()
    assert "'lazyex'" in str(info.value) and target in str(info.value) and words in str(info.value)
    sys.modules.pop("lazyex_rules2", None)


def test_target_must_name_module_and_attribute():
    with pytest.raises(ValueError, match="package.module:attr"):
        LazyRuleSet("no_colon", name="x")
