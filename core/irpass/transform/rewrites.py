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

The driver (:func:`apply_rules`) runs one of the two walks of
:mod:`irpass.ir.dataflow_pattern`: TVM's rounds (:func:`~irpass.ir.dataflow_pattern.rewrite`,
outermost match first; Canonicalize and, by default, rule-set passes) or the greedy
walk (:func:`~irpass.ir.dataflow_pattern.rewrite_greedy`, innermost first, to a fixed
point in one walk; ``greedy=True``, as std's SimplifyExpr runs its rule set). The
program is typed (before each round, or once and kept typed by the greedy walk), so
callbacks may read ``checked_type``, and every replacement is checked: a callback that
returns something that is not an expression, or an expression that does not type-check
or whose type differs from the matched expression's, stops the rewrite of the function
with an error naming the rule and its plugin (the module is left unchanged). Rules
that are still firing after ``max_rounds`` rounds (greedy: rewrites at one node) are
reported by name and left out, and the others are applied without them. The bound is
the config option ``rewrites.max_rounds`` for every rule-set pass.

A rule set that a pass of its own applies names it (``RuleSet(..., pass_name=...)``):
Canonicalize leaves it out, ``[rewrites] disable`` still reaches its rules.
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import IRPassError
from ..ir.dataflow_pattern import (
    DEFAULT_MAX_ROUNDS,
    DFPatternCallback,
    RewriteLimitError,
    RewriteTypeError,
    prepare,
    rewrite,
    rewrite_greedy,
)
from ..ir.dataflow_pattern.index import RuleIndex
from ..ir.expr import Expr, set_checked_type
from ..ir.nodes import Function
from ..ir.structural import structural_equal
from ..ir.type_infer import type_built
from .context import REWRITES_DISABLE, REWRITES_MAX_ROUNDS, PassContext
from .lazy_rules import LazyRuleSet, RuleSetEntry

if TYPE_CHECKING:
    from ..ir.module import IRModule
    from .passes import Pass

__all__ = [
    "DISABLE_OPTION",
    "MAX_ROUNDS_OPTION",
    "RewriteResult",
    "Rule",
    "RuleFailure",
    "RuleSet",
    "LazyRuleSet",
    "RuleSetEntry",
    "apply_rules",
    "enabled_rules",
    "list_rule_sets",
    "run_rule_set",
]

# The options of rule-set passes, declared with the core's others in transform/context.py
# (this module is imported on first use; a context must know the keys before that).
#: The PassContext option that the config file's ``[rewrites] disable`` fills in.
DISABLE_OPTION = REWRITES_DISABLE
#: The PassContext option bounding the rewrites of every rule-set pass.
MAX_ROUNDS_OPTION = REWRITES_MAX_ROUNDS

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

    def __init__(self, name: str, rules: Iterable[Rule | DFPatternCallback], doc: str = "",
                 pass_name: str | None = None) -> None:
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
        if pass_name is not None and not isinstance(pass_name, str):
            raise TypeError(f"RuleSet {name!r}: pass_name must be a pass name or None, "
                            f"got {pass_name!r}")
        self.name = name
        self.rules: tuple[Rule, ...] = tuple(made)
        self.doc = doc
        #: The pass that applies this rule set by itself, if one does (Canonicalize
        #: then leaves it out).
        self.pass_name = pass_name
        # run_rule_set's rule lists, by (plugin, disabled names)
        self._enabled: dict[tuple[str, tuple[str, ...]], list[tuple[str, str, Rule]]] = {}

    def rule_names(self) -> list[str]:
        """The full names of the rules, ``<ruleset>.<rule>``."""
        return [f"{self.name}.{r.name}" for r in self.rules]

    def as_pass(self, opt_level: int = 0, name: str | None = None,
                max_rounds: int = DEFAULT_MAX_ROUNDS, greedy: bool = False) -> Pass:
        """This rule set as a function pass of its own (default name: ``Rewrite_<name>``).

        The pass applies the rules the context does not disable (``rewrites.disable``)
        with :func:`run_rule_set`: TVM's rounds, or the greedy walk when ``greedy``; at
        most ``max_rounds`` of them unless the option ``rewrites.max_rounds`` says
        otherwise. It requires ``InferType``. Its plugin in messages is the rule set's
        registered owner, else ``"code"``.
        """
        from .decorators import function_pass

        ruleset = self

        def transform(func: Function, mod: IRModule, ctx: PassContext) -> Function:
            return run_rule_set(ruleset, func, mod, ctx, max_rounds=max_rounds, greedy=greedy)

        transform.__doc__ = f"apply the rewrite rules of rule set {self.name!r}"
        return function_pass(transform, opt_level=opt_level,
                             name=name or f"Rewrite_{self.name}", required=["InferType"])

    def __repr__(self) -> str:
        return f"RuleSet({self.name!r}, [{', '.join(r.name for r in self.rules)}])"


def list_rule_sets() -> dict[str, RuleSetEntry]:
    """Every registered rule set by name, sorted (loads the plugins first)."""
    from ..plugins import get_plugin_manager

    return get_plugin_manager().rule_sets()


def _owner_of(ruleset: RuleSet) -> str:
    entry = list_rule_sets().get(ruleset.name)
    return entry.owner if entry is not None and entry.ruleset is ruleset else "code"


def enabled_rules(disable: Iterable[str] = ()) -> list[tuple[str, str, Rule]]:
    """``(full name, plugin, rule)`` of every registered rule not disabled by name
    (a rule set's name or a rule's full name), rule sets by name, rules in order;
    rule sets that a pass of their own applies (``pass_name``) are left out."""
    rules = [(full, entry.owner, rule)
             for entry in list_rule_sets().values() if entry.pass_name is None
             for full, rule in zip(entry.ruleset.rule_names(), entry.ruleset.rules, strict=True)]
    return _filter(rules, disable)


def max_rounds_of(ctx: PassContext, default: int = DEFAULT_MAX_ROUNDS) -> int | None:
    """The bound on rewrites from ``ctx`` (``rewrites.max_rounds``, else ``default``);
    None after reporting an error on ``ctx.diag`` when it is below 1."""
    value = ctx.config.get(MAX_ROUNDS_OPTION)
    bound = default if value is None else value
    if bound < 1:
        ctx.diag.error(f"{MAX_ROUNDS_OPTION} must be at least 1, got {bound}")
        return None
    return bound


def run_rule_set(ruleset: RuleSet, func: Function, mod: IRModule, ctx: PassContext, *,
                 max_rounds: int = DEFAULT_MAX_ROUNDS, greedy: bool = False,
                 options: Mapping[str, Any] | None = None, owner: str | None = None) -> Function:
    """The body of a pass that applies one rule set: the rules of ``ruleset`` that
    ``ctx`` does not disable, applied to ``func`` by :func:`run_rules_in_pass`.

    ``max_rounds`` is the bound unless ``ctx`` sets ``rewrites.max_rounds``;
    ``options`` reach the callbacks as ``rewrite_context().options``; ``owner``
    names the plugin in messages (default: the rule set's registered owner, else
    ``"code"``).
    """
    disable = ctx.config.get(DISABLE_OPTION) or ()
    bound = max_rounds_of(ctx, max_rounds)
    if bound is None:
        return func
    who = owner if owner is not None else _owner_of(ruleset)
    key = (who, tuple(disable))
    rules = ruleset._enabled.get(key)
    if rules is None:
        rules = ruleset._enabled[key] = _filter(
            [(full, who, rule) for full, rule in zip(ruleset.rule_names(), ruleset.rules,
                                                    strict=True)], disable)
        # found by identity: run_rule_set never changes the list
        _BY_LIST[(id(rules), not greedy)] = (rules, _prepared(rules, not greedy))
    return run_rules_in_pass(func, mod, ctx, rules, bound, greedy=greedy, options=options)


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


class _Run:
    """What one :func:`apply_rules` call collects from its rules' callbacks."""

    __slots__ = ("hits", "deferred")

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.deferred: _Deferred = []


# The apply_rules call in progress (its callbacks are shared between calls: see _prepared).
_RUN: ContextVar[_Run] = ContextVar("irpass_apply_rules_run")


class _Counted(DFPatternCallback):
    """A rule's callback, counted and checked (subclassed per rule, named after it, so
    the messages of the drivers name the rule). ``checks`` is false for the greedy
    walk, which types and checks replacements itself. The hits and the replacements
    to check later go to the :class:`_Run` of the apply_rules call in progress."""

    def __init__(self, full: str, owner: str, rule: Rule, checks: bool) -> None:
        inner = rule.callback
        # Typed rounds always: replacements are checked against the type of what they
        # replace, and callbacks may read checked_type on ``pre`` in every round.
        super().__init__(require_type=True, rewrite_once=inner.rewrite_once)
        self.pattern = inner.pattern
        self.full, self.owner, self.inner, self.checks = full, owner, inner, checks

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
        # each replacement is one rewrite of the pass for its debug counter (irpass bisect)
        if not PassContext.current().debug_counter(self.full):
            return post
        run = _RUN.get()
        if self.checks and pre._checked_type is not None:
            if out._checked_type is None:
                # The nodes the rule built, typed from the program's types below them
                # (not a walk of the program: a chain would make that quadratic), so the
                # round's rebuild keeps the types above them (carry_type) and the next
                # typing walks nothing. Where that cannot type it, the next round's
                # typing (or the final one) does, and apply_rules compares then.
                type_built(out)
            if out._checked_type is not None:
                _compare(self.full, self.owner, pre, out, out._checked_type)
            else:
                run.deferred.append((self.full, self.owner, pre, out))
        run.hits[self.full] += 1
        return out


# The wrappers of recent rule lists and their rule index, so a pass run on many
# functions builds them once: (checks, ((full, owner, id(rule)), ...)) -> (the rules,
# kept alive so their ids stay theirs; the wrappers' index). A rule list run_rule_set
# keeps is also found by its identity, without the key.
_WRAPPERS: OrderedDict[tuple, tuple[list[Rule], RuleIndex]] = OrderedDict()
_BY_LIST: dict[tuple[int, bool], tuple[Sequence[Any], RuleIndex]] = {}
_WRAPPERS_KEPT = 32


def _prepared(rules: Sequence[tuple[str, str, Rule]], checks: bool) -> RuleIndex:
    """The prepared (:func:`~irpass.ir.dataflow_pattern.prepare`) wrappers of ``rules``."""
    known = _BY_LIST.get((id(rules), checks))
    if known is not None and known[0] is rules:
        return known[1]
    key = (checks, tuple((full, owner, id(rule)) for full, owner, rule in rules))
    found = _WRAPPERS.get(key)
    if found is not None:
        _WRAPPERS.move_to_end(key)
        return found[1]
    index = prepare([_counted(full)(full, owner, rule, checks) for full, owner, rule in rules])
    _WRAPPERS[key] = ([rule for _, _, rule in rules], index)
    if len(_WRAPPERS) > _WRAPPERS_KEPT:
        _WRAPPERS.popitem(last=False)
    return index


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


# One _Counted subclass per rule name, made once: its __qualname__ names the rule.
_COUNTED_CLASSES: dict[str, type[_Counted]] = {}


def _counted(full: str) -> type[_Counted]:
    cls = _COUNTED_CLASSES.get(full)
    if cls is None:
        cls = _COUNTED_CLASSES[full] = type(full, (_Counted,), {"__qualname__": full})
    return cls


def apply_rules(func: Function, rules: Sequence[tuple[str, str, Rule]],
                mod: IRModule | None = None,
                max_rounds: int = DEFAULT_MAX_ROUNDS, *, greedy: bool = False,
                options: Mapping[str, Any] | None = None) -> RewriteResult:
    """Rewrite ``func``'s body with ``rules`` (``(full name, plugin, rule)`` each), all
    rules in one walk: :func:`~irpass.ir.dataflow_pattern.rewrite`'s rounds to a fixed
    point, or with ``greedy`` one :func:`~irpass.ir.dataflow_pattern.rewrite_greedy`
    walk (``options`` reach the callbacks as ``rewrite_context().options``).

    The program is typed before each round (greedy: kept typed). Raises
    :class:`RuleFailure` for a bad replacement (not an expression, ill-typed, of
    another type than what it replaced). Rules still firing after ``max_rounds``
    rounds (greedy: rewrites at one node) are left out and the walk runs again
    without them (their names are in ``non_converging``). ``func`` should be typed
    (InferType) so that the first round's replacements are checked too.
    """

    token = _RUN.set(_Run())
    try:
        return _apply_rules(func, rules, mod, max_rounds, greedy, options)
    finally:
        _RUN.reset(token)


def _apply_rules(func: Function, active: Sequence[tuple[str, str, Rule]], mod: IRModule | None,
                 max_rounds: int, greedy: bool, options: Mapping[str, Any] | None
                 ) -> RewriteResult:
    from ..ir.type_infer import infer_type

    result = RewriteResult(func)
    while active:
        run = _RUN.get()
        run.hits = hits = Counter()
        run.deferred = deferred = []
        callbacks = _prepared(active, not greedy)
        try:
            if greedy:
                body = rewrite_greedy(callbacks, func.body, mod, max_rounds, options)
            else:
                body = rewrite(callbacks, func.body, mod, max_rounds=max_rounds, options=options)
        except RewriteTypeError as exc:
            cb = exc.callback
            assert isinstance(cb, _Counted)
            if exc.kind == "ill-typed":
                message = f"{_who(cb.full, cb.owner)} built an ill-typed replacement: {exc.detail}"
            else:
                message = (f"{_who(cb.full, cb.owner)} changed the type of the matched "
                           f"expression {exc.detail}")
            raise RuleFailure(message, cb.full, exc.expr) from exc
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
        if greedy:
            if body is not func.body:
                result.func = _typed_function(func, body, mod)
            return result
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


def _typed_function(func: Function, body: Expr, mod: IRModule | None) -> Function:
    """``func`` with ``body``, a body the greedy walk typed, typed as ``func`` is (the
    walk keeps types); typed by ``infer_type`` if some node of it is not."""
    from ..ir.type_infer import infer_type

    new = Function._unchecked(func.params, body, func.ret_type, func.attrs)
    if body._checked_type is None or func._checked_type is None:
        return infer_type(new, mod)
    set_checked_type(new, func._checked_type)
    return new


def run_rules_in_pass(func: Function, mod: IRModule, ctx: PassContext,
                      rules: Sequence[tuple[str, str, Rule]], max_rounds: int, *,
                      greedy: bool = False, options: Mapping[str, Any] | None = None
                      ) -> Function:
    """The body of Canonicalize and of rule-set passes: apply ``rules`` to ``func``
    (:func:`apply_rules`) and report to ``ctx.diag`` (an error for a bad rule: the pass
    fails and the module is left unchanged; a warning naming the rules that never
    reached a fixed point) and the per-rule hits (:func:`report_hits`)."""
    from ..ir.type_infer import infer_type

    if not rules:
        return func
    typed = func
    if func.body._checked_type is None or func._checked_type is None or func.ret_type is None:
        typed = infer_type(func, mod)
    try:
        result = apply_rules(typed, rules, mod, max_rounds, greedy=greedy, options=options)
    except RuleFailure as exc:
        ctx.diag.error(str(exc), expr=exc.expr)
        return func
    if result.non_converging:
        owners = {full: owner for full, owner, _ in rules}
        named = ", ".join(f"{n} (plugin {owners.get(n, '?')!r})" for n in result.non_converging)
        bound = f"{max_rounds} rewrites at one node" if greedy else f"{max_rounds} rounds"
        ctx.diag.warning(f"rewrite rules still firing after {bound}, left out: "
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
