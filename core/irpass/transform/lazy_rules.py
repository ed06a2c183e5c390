"""Rule sets declared by where they live, imported when their rules are first needed.

A plugin's ``irpass_register_rewrites`` returns :class:`~irpass.transform.RuleSet`
objects, which means importing the rules (their patterns, callbacks and whatever those
import, numpy and the op set among them) just to load the plugin. A
:class:`LazyRuleSet` is the declaration instead: the rule set's name, the pass that
applies it, and ``"package.module:attr"``. Listing passes or plugins, validating the
settings and running passes that use no rule set never import it; ``irpass rewrites``,
``[rewrites] disable`` and the passes that apply rules do, once::

    @hookimpl
    def irpass_register_rewrites():
        return [LazyRuleSet("my_pack.rules:EXAMPLE", name="example")]

This module imports nothing heavy, so a plugin module can import it at its top.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import check_target, import_target

if TYPE_CHECKING:
    from .rewrites import RuleSet

__all__ = ["LazyRuleSet", "RuleSetEntry"]


class LazyRuleSet:
    """A rule set declared by ``target`` (``"package.module:attr"``, a
    :class:`~irpass.transform.RuleSet`), its ``name`` and the ``pass_name`` of the pass
    that applies it (``None``: Canonicalize applies it), all checked against the rule set
    when it is imported."""

    def __init__(self, target: str, *, name: str, pass_name: str | None = None) -> None:
        self.target = check_target(target, "LazyRuleSet")
        self.name = name
        self.pass_name = pass_name
        self._ruleset: RuleSet | None = None

    def load(self) -> RuleSet:
        """Import the rule set (once); ``ImportError``/``TypeError`` naming it and the target."""
        if self._ruleset is None:
            from .rewrites import RuleSet

            obj = import_target(
                self.target,
                f"rule set {self.name!r} is declared at {self.target!r}, which cannot be imported",
            )
            if not isinstance(obj, RuleSet):
                raise TypeError(f"rule set {self.name!r} declared at {self.target!r} is a "
                                f"{type(obj).__name__}, not a RuleSet")
            if (obj.name, obj.pass_name) != (self.name, self.pass_name):
                raise TypeError(
                    f"rule set {self.name!r} is declared with pass_name={self.pass_name!r} "
                    f"(LazyRuleSet {self.target!r}), but the rule set is {obj.name!r} with "
                    f"pass_name={obj.pass_name!r}: correct the declaration")
            self._ruleset = obj
        return self._ruleset

    def __repr__(self) -> str:
        return f"LazyRuleSet({self.target!r}, name={self.name!r})"


class RuleSetEntry:
    """A registered rule set (or its declaration) and the plugin that owns it."""

    __slots__ = ("declared", "owner")

    def __init__(self, declared: RuleSet | LazyRuleSet, owner: str) -> None:
        self.declared = declared
        self.owner = owner

    @property
    def name(self) -> str:
        """The rule set's name."""
        return self.declared.name

    @property
    def pass_name(self) -> str | None:
        """The pass that applies the rule set (``None``: Canonicalize), known without
        importing a declared one."""
        return self.declared.pass_name

    @property
    def ruleset(self) -> RuleSet:
        """The rule set (a declared one is imported now, once)."""
        declared = self.declared
        return declared.load() if isinstance(declared, LazyRuleSet) else declared

    def __repr__(self) -> str:
        return f"RuleSetEntry({self.declared!r}, owner={self.owner!r})"
