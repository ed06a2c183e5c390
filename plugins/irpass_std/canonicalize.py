"""Canonicalize: every enabled rewrite rule of every plugin, in one greedy walk.

Plugins contribute rule sets through ``irpass_register_rewrites``
(:class:`irpass.transform.RuleSet`); this pass (named after MLIR's) applies the
rules the context does not disable (the config file's ``[rewrites] disable``, the
option ``rewrites.disable``) with :func:`irpass.transform.rewrites.apply_rules`: one
:func:`~irpass.ir.dataflow_pattern.rewrite` walk per round, all rules at once (a node
tries only the rules its op can match), rounds to a fixed point, at most
``std.Canonicalize.max_rounds`` of them (when unset: the option all rule-set passes
read, ``rewrites.max_rounds``, default 100). Rule sets that a pass of their own
applies (``RuleSet(..., pass_name=...)``, as SimplifyExpr's ``simplify``) are left out.

Reports: a note on ``ctx.diag`` with the hits per rule (``data``: ``{rule: hits}``),
also handed to instruments with a ``record_rewrite_hits(pass_name, hits)`` method; an
error naming the rule and its plugin when a replacement is not an expression, does not
type-check or changes the matched expression's type (the pass fails, the module is
left unchanged); a warning naming the rules still firing at the round bound (they are
left out and the others applied).

With no rule set registered the pass returns its input at once.
"""

from __future__ import annotations

from irpass.ir import Function, IRModule
from irpass.ir.dataflow_pattern import DEFAULT_MAX_ROUNDS
from irpass.transform import ConfigOption, PassContext, function_pass
from irpass.transform.rewrites import (
    DISABLE_OPTION,
    MAX_ROUNDS_OPTION,
    enabled_rules,
    run_rules_in_pass,
)

from .options import options_of

__all__ = ["CONFIG_OPTIONS", "MAX_ROUNDS", "Canonicalize"]

#: Config key: the bound on rewrite rounds per function.
MAX_ROUNDS = "std.Canonicalize.max_rounds"

# declared in options.py (registered with the plugin, before any pass is imported)
CONFIG_OPTIONS: list[ConfigOption] = options_of("Canonicalize")


@function_pass(opt_level=1, name="Canonicalize", required=["InferType"])
def Canonicalize(func: Function, mod: IRModule, ctx: PassContext) -> Function:
    """Apply every enabled rewrite rule of the plugins' rule sets, to a fixed point."""
    rules = enabled_rules(ctx.config.get(DISABLE_OPTION) or ())
    if not rules:
        return func
    # its own option when given, else the one every rule-set pass reads
    key = MAX_ROUNDS if MAX_ROUNDS in ctx.config.explicit else MAX_ROUNDS_OPTION
    max_rounds = ctx.config.get(key)
    if max_rounds is None:
        max_rounds = DEFAULT_MAX_ROUNDS
    if max_rounds < 1:
        ctx.diag.error(f"{key} must be at least 1, got {max_rounds}")
        return func
    return run_rules_in_pass(func, mod, ctx, rules, max_rounds)
