"""Rewrite rules as plugins: :class:`Rule`, :class:`RuleSet` and the driver that applies them.

A rule is a named :class:`~irpass.ir.dataflow_pattern.DFPatternCallback` (a pattern
and what a match becomes); a rule set is a named list of rules. Plugins contribute
rule sets through the ``irpass_register_rewrites`` hook; std's ``Canonicalize``
pass applies every enabled rule of every registered rule set in one greedy walk, and
:meth:`RuleSet.as_pass` makes one rule set a pass of its own.

Names: a rule set's name is global, like a pass name, and belongs to the plugin that
registered it first (``example``); a rule is ``<ruleset>.<rule>``
(``example.fold_add_zero``). Both kinds of names may be listed in the config file's
``[rewrites] disable`` (the PassContext option ``rewrites.disable``).

The driver (:func:`apply_rules`) types the program before each round (as
``require_type=True`` callbacks do), so callbacks may read ``checked_type``, and checks
every replacement: a callback that returns
something that is not an expression, or an expression that does not type-check or
whose type differs from the matched expression's, stops the rewrite of the function
with an error naming the rule and its plugin (the module is left unchanged). Rules
that are still firing after ``max_rounds`` rounds are reported by name and left out,
and the others are applied without them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import IRPassError
from ..ir.dataflow_pattern import DEFAULT_MAX_ROUNDS, DFPatternCallback, RewriteLimitError, rewrite
from ..ir.expr import Expr
from ..ir.nodes import Function
from ..ir.structural import structural_equal
from .config import register_config_option

if TYPE_CHECKING:
    from ..ir.module import IRModule
    from .context import PassContext
    from .passes import Pass

__all__ = [
    "DISABLE_OPTION",
    "RewriteResult",
    "Rule",
    "RuleFailure",
    "RuleSet",
    "RuleSetEntry",
    "apply_rules",
    "enabled_rules",
    "list_rule_sets",
]

#: The PassContext option that the config file's ``[rewrites] disable`` fills in.
DISABLE_OPTION = "rewrites.disable"

register_config_option(
    DISABLE_OPTION, (list, tuple), None,
    "rule sets and rules (<ruleset>.<rule>) Canonicalize and rule-set passes leave out",
)

# a rule set or rule name: no dots (a dot separates the two), no spaces
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


@dataclass(frozen=True)
class Rule:
    """A named rewrite rule: ``callback`` is a :class:`DFPatternCallback` with its
    ``pattern`` set. ``name`` is unique within its rule set (no dots); ``doc`` is
    a line for listings (default: the first line of the callback's docstring)."""

    name: str
    callback: DFPatternCallback
    doc: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"Rule: name must be a word of letters, digits, _ or - "
                             f"(no dots), got {self.name!r}")
        if not isinstance(self.callback, DFPatternCallback):
            raise TypeError(f"Rule {self.name!r}: callback must be a DFPatternCallback, "
                            f"got {type(self.callback).__name__}")
        if self.callback.pattern is None:
            raise TypeError(f"Rule {self.name!r}: the callback has no pattern "
                            f"(set self.pattern in its __init__)")
        if not self.doc:
            doc = (type(self.callback).__doc__ or "").strip().splitlines()
            object.__setattr__(self, "doc", doc[0] if doc else "")


class RuleSet:
    """A named list of :class:`Rule`, as a plugin's ``irpass_register_rewrites`` returns.

    ``rules`` holds :class:`Rule` objects, or callbacks with a ``name`` attribute
    (wrapped into rules). Earlier rules win when two match at the same node::

        RuleSet("example", [Rule("fold_add_zero", FoldAddZero())], doc="toy rules")
    """

    def __init__(self, name: str, rules: Iterable[Rule | DFPatternCallback], doc: str = "") -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"RuleSet: name must be a word of letters, digits, _ or - "
                             f"(no dots), got {name!r}")
        made: list[Rule] = []
        for item in rules:
            if isinstance(item, DFPatternCallback) and isinstance(getattr(item, "name", None), str):
                item = Rule(item.name, item)  # type: ignore[attr-defined]
            if not isinstance(item, Rule):
                raise TypeError(f"RuleSet {name!r}: expected Rule objects (or callbacks with "
                                f"a name attribute), got {type(item).__name__} {item!r:.60}")
            made.append(item)
        names = [r.name for r in made]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"RuleSet {name!r}: rule names must be unique, repeated: "
                             f"{', '.join(dup)}")
        self.name = name
        self.rules: tuple[Rule, ...] = tuple(made)
        self.doc = doc

    def rule_names(self) -> list[str]:
        """The full names of the rules, ``<ruleset>.<rule>``."""
        return [f"{self.name}.{r.name}" for r in self.rules]

    def as_pass(self, opt_level: int = 0, name: str | None = None,
                max_rounds: int = DEFAULT_MAX_ROUNDS) -> Pass:
        """This rule set as a function pass of its own (default name: ``Rewrite_<name>``).

        The pass applies the rules the context does not disable (``rewrites.disable``)
        as :func:`apply_rules` does; it requires ``InferType``. Its plugin in messages
        is the rule set's registered owner, else ``"code"``.
        """
        from .decorators import function_pass

        ruleset = self

        def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
            owner = _owner_of(ruleset)
            rules = [(full, owner, rule) for full, rule in zip(ruleset.rule_names(),
                                                             ruleset.rules, strict=True)]
            rules = _filter(rules, ctx.config.get(DISABLE_OPTION) or ())
            return run_rules_in_pass(func, mod, ctx, rules, max_rounds)

        transform.__doc__ = f"apply the rewrite rules of rule set {self.name!r}"
        return function_pass(transform, opt_level=opt_level,
                             name=name or f"Rewrite_{self.name}", required=["InferType"])

    def __repr__(self) -> str:
        return f"RuleSet({self.name!r}, [{', '.join(r.name for r in self.rules)}])"


@dataclass(frozen=True)
class RuleSetEntry:
    """A registered rule set and the plugin that owns it."""

    ruleset: RuleSet
    owner: str


def list_rule_sets() -> dict[str, RuleSetEntry]:
    """Every registered rule set by name, sorted (loads the plugins first)."""
    from ..plugins import get_plugin_manager

    return get_plugin_manager().rule_sets()


def _owner_of(ruleset: RuleSet) -> str:
    entry = list_rule_sets().get(ruleset.name)
    return entry.owner if entry is not None and entry.ruleset is ruleset else "code"


def enabled_rules(disable: Iterable[str] = ()) -> list[tuple[str, str, Rule]]:
    """``(full name, plugin, rule)`` of every registered rule not disabled by name
    (a rule set's name or a rule's full name), rule sets by name, rules in order."""
    rules = [(full, entry.owner, rule)
             for entry in list_rule_sets().values()
             for full, rule in zip(entry.ruleset.rule_names(), entry.ruleset.rules, strict=True)]
    return _filter(rules, disable)


_Rules = list[tuple[str, str, Rule]]


def _filter(rules: _Rules, disable: Iterable[str]) -> _Rules:
    off = set(disable)
    return [r for r in rules if r[0] not in off and r[0].split(".", 1)[0] not in off]


class RuleFailure(IRPassError):
    """A rule failed: its callback raised, or its replacement was wrong (not an
    expression, ill-typed, of another type than the matched expression)."""

    def __init__(self, message: str, rule: str, expr: Any = None) -> None:
        super().__init__(message)
        self.rule = rule
        self.expr = expr


@dataclass
class RewriteResult:
    """What :func:`apply_rules` did: the function, the hits per rule (full names) and
    the rules left out because they never reached a fixed point (with the message)."""

    func: Function
    hits: Counter[str] = field(default_factory=Counter)
    non_converging: list[str] = field(default_factory=list)
    limit_message: str = ""


# A replacement whose type is not known when it is made: (rule, plugin, pre, out).
_Deferred = list[tuple[str, str, Expr, Expr]]


class _Counted(DFPatternCallback):
    """A rule's callback, counted and checked (subclassed per rule, named after it, so
    the messages of :func:`rewrite` name the rule)."""

    def __init__(self, full: str, owner: str, rule: Rule, hits: Counter[str],
                 deferred: _Deferred) -> None:
        inner = rule.callback
        # Typed rounds always: replacements are checked against the type of what they
        # replace, and callbacks may read checked_type on ``pre`` in every round.
        super().__init__(require_type=True, rewrite_once=inner.rewrite_once)
        self.pattern = inner.pattern
        self.full, self.owner, self.inner = full, owner, inner
        self.hits, self.deferred = hits, deferred

    def callback(self, pre: Expr, post: Expr, node_map: Any) -> Expr:
        try:
            out = self.inner.callback(pre, post, node_map)
        except Exception as exc:  # a bug in a plugin's rule: name the rule and the plugin
            raise RuleFailure(f"{_who(self.full, self.owner)} raised {type(exc).__name__}: "
                              f"{exc}", self.full, pre) from exc
        if out is post:
            return out
        if not isinstance(out, Expr):
            raise RuleFailure(f"{_who(self.full, self.owner)} returned {type(out).__name__} "
                              f"{out!r:.60}, not an expression", self.full, pre)
        if pre._checked_type is not None:
            if out._checked_type is not None:
                _compare(self.full, self.owner, pre, out, out._checked_type)
            else:
                # Built in this round: typing it here would walk everything below it
                # (quadratic on a chain); the next round's typing (or the final one) types
                # it, and apply_rules compares then.
                self.deferred.append((self.full, self.owner, pre, out))
        self.hits[self.full] += 1
        return out


def _who(full: str, owner: str) -> str:
    return f"rewrite rule {full!r} (plugin {owner!r})"


def _compare(full: str, owner: str, pre: Expr, out: Expr, got: Any) -> None:
    want = pre._checked_type
    if want is not None and not structural_equal(got, want):
        raise RuleFailure(f"{_who(full, owner)} changed the type of the matched expression "
                          f"from {want} to {got}", full, pre)


def _check_alone(full: str, owner: str, pre: Expr, out: Expr) -> None:
    """Type ``out`` on its own (slow: only to find the culprit of a failure)."""
    from ..ir.type_infer import infer_type

    try:
        got = infer_type(out).checked_type
    except (IRPassError, ValueError, TypeError) as exc:
        raise RuleFailure(f"{_who(full, owner)} built an ill-typed replacement: {exc}",
                          full, pre) from exc
    _compare(full, owner, pre, out, got)


def _blame(deferred: _Deferred, exc: Exception) -> RuleFailure:
    """The rule whose replacement made the program ill-typed."""
    for full, owner, pre, out in deferred:
        try:
            _check_alone(full, owner, pre, out)
        except RuleFailure as failure:
            return failure
    rules = ", ".join(dict.fromkeys(f"{f!r} (plugin {o!r})" for f, o, _, _ in deferred))
    return RuleFailure(f"the rewrites of rule(s) {rules or '?'} left an ill-typed program: "
                       f"{exc}", deferred[0][0] if deferred else "?")


def apply_rules(func: Function, rules: Sequence[tuple[str, str, Rule]],
                mod: IRModule | None = None,
                max_rounds: int = DEFAULT_MAX_ROUNDS) -> RewriteResult:
    """Rewrite ``func``'s body with ``rules`` (``(full name, plugin, rule)`` each) in one
    greedy :func:`~irpass.ir.dataflow_pattern.rewrite` walk per round, to a fixed point.

    The program is typed before each round. Raises :class:`RuleFailure` for a bad
    replacement (not an expression, ill-typed, of another type than what it replaced).
    Rules still firing after ``max_rounds`` rounds are left out and the walk runs again
    without them (their names are in ``non_converging``). ``func`` should be typed
    (InferType) so that the first round's replacements are checked too.
    """
    from ..ir.type_infer import infer_type

    active = list(rules)
    result = RewriteResult(func)
    while active:
        hits: Counter[str] = Counter()
        deferred: _Deferred = []
        callbacks = [type(full, (_Counted,), {"__qualname__": full})(
            full, owner, rule, hits, deferred) for full, owner, rule in active]
        try:
            body = rewrite(callbacks, func.body, mod, max_rounds=max_rounds)
        except RewriteLimitError as exc:
            stuck = [cb.full for cb in exc.callbacks if isinstance(cb, _Counted)]
            if not stuck:  # cannot tell which: leave out every rule that fired
                stuck = [r[0] for r in active if hits[r[0]]] or [r[0] for r in active]
            result.non_converging += stuck
            result.limit_message = str(exc)
            active = [r for r in active if r[0] not in stuck]
            continue
        except (IRPassError, ValueError, TypeError) as exc:
            if isinstance(exc, RuleFailure) or not deferred:
                raise
            raise _blame(deferred, exc) from exc  # a round's typing failed
        result.hits = hits
        # a round that changed nothing still rebuilds: keep func itself when no rule fired
        if hits and body is not func.body:
            new = Function(func.params, body, func.ret_type, func.attrs)
            try:
                new = infer_type(new, mod)  # also types the last round's replacements
            except (IRPassError, ValueError, TypeError) as exc:
                raise _blame(deferred, exc) from exc
            for full, owner, pre, out in deferred:
                if out._checked_type is None:
                    _check_alone(full, owner, pre, out)  # not typed by the rounds: a copy
                else:
                    _compare(full, owner, pre, out, out._checked_type)
            result.func = new
        return result
    return result


def run_rules_in_pass(func: Function, mod: IRModule, ctx: PassContext,
                      rules: Sequence[tuple[str, str, Rule]], max_rounds: int) -> Function:
    """The body of Canonicalize and of rule-set passes: apply ``rules`` to ``func`` and
    report to ``ctx.diag`` (an error for a bad rule: the pass fails and the module is
    left unchanged; a warning naming the rules that never reached a fixed point) and
    the per-rule hits (:func:`report_hits`)."""
    from ..ir.type_infer import infer_type

    if not rules:
        return func
    typed = func
    if func.body._checked_type is None:
        typed = infer_type(func, mod)
    try:
        result = apply_rules(typed, rules, mod, max_rounds)
    except RuleFailure as exc:
        ctx.diag.error(str(exc), expr=exc.expr)
        return func
    if result.non_converging:
        owners = {full: owner for full, owner, _ in rules}
        named = ", ".join(f"{n} (plugin {owners.get(n, '?')!r})" for n in result.non_converging)
        ctx.diag.warning(f"rewrite rules still firing after {max_rounds} rounds, left out: "
                         f"{named}; the other rules were applied")
    report_hits(ctx, result.hits)
    return func if result.func is typed else result.func


def report_hits(ctx: PassContext, hits: Counter[str]) -> None:
    """Report the per-rule hit counts: a note on ``ctx.diag`` (``data``: ``{rule: hits}``)
    and every instrument of ``ctx`` with a ``record_rewrite_hits(pass_name, hits)``."""
    counts = dict(sorted(hits.items()))
    name = ctx.diag.pass_name or "?"
    text = ", ".join(f"{rule}={n}" for rule, n in counts.items()) or "no rule fired"
    ctx.diag.note(f"rewrite hits: {text}", data=counts)
    for inst in ctx.instruments:
        record: Callable[[str, dict[str, int]], None] | None = getattr(
            inst, "record_rewrite_hits", None)
        if record is not None:
            record(name, counts)
