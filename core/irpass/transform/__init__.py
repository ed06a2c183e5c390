"""Passes and the machinery that runs them (TVM's ``tvm.transform`` API).

- :class:`PassInfo`, :class:`Pass`, :class:`ModulePass`, :class:`FunctionPass`,
  :class:`Sequential` and the decorators :func:`module_pass` /
  :func:`function_pass`;
- :class:`PassContext` (opt level, required/disabled passes, config,
  instruments, diagnostics) and :func:`register_config_option`;
- the registry: :func:`register_pass`, :func:`get_pass`, :func:`list_passes`, and
  :class:`LazyPass` (a pass declared by where it lives, imported when first made);
- the default pipeline that plugins extend (:func:`default_pipeline`,
  :class:`PipelineInsertion`, :func:`pipeline_plan`) and textual pipelines
  (:func:`parse_pipeline`);
- rewrite rules as plugins: :class:`Rule`, :class:`RuleSet`, :func:`list_rule_sets`
  (see :mod:`irpass.transform.rewrites`).

Registered passes are attributes of this module: ``irpass.transform.FoldConstant()``
calls the factory registered as ``"FoldConstant"``, wherever it came from.
"""

from __future__ import annotations

import difflib
from typing import Any

from .. import _lazy

__all__ = [
    "ConfigOption",
    "Diagnostic",
    "DiagnosticContext",
    "FunctionPass",
    "Identity",
    "LazyPass",
    "ModulePass",
    "PIPELINE_PHASES",
    "Pass",
    "PassConfig",
    "PassContext",
    "PassEntry",
    "PassInfo",
    "PipelineInsertion",
    "PipelineSyntaxError",
    "PrintIR",
    "Sequential",
    "add_pipeline_insertion",
    "close_pass_names",
    "default_pipeline",
    "function_pass",
    "get_pass",
    "get_pass_entry",
    "list_config_options",
    "list_passes",
    "list_pipeline_insertions",
    "module_pass",
    "parse_pipeline",
    "pipeline_plan",
    "register_config_option",
    "register_pass",
    "Rule",
    "RuleSet",
    "list_rule_sets",
    "remove_pipeline_insertions",
]


def _registered_pass(name: str) -> Any:
    """``irpass.transform.X`` for a pass registered as ``"X"`` (by the core or a plugin)."""
    from . import registry

    if not name.startswith("_"):
        entry = registry.lookup(name)
        if entry is not None:
            return registry.load_factory(name)
        close = registry.close_pass_names(name)
        close += [n for n in difflib.get_close_matches(name, __all__, n=2) if n not in close]
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise AttributeError(
            f"module 'irpass.transform' has no attribute {name!r} and no pass of that name "
            f"is registered{hint} (registered passes: irpass.transform.list_passes())"
        )
    raise AttributeError(f"module 'irpass.transform' has no attribute {name!r}")


# Imported on first use (see irpass._lazy): the plugin manager imports .registry and
# .config, which then run neither the rewrite machinery nor the pipeline parser.
__getattr__, _dir = _lazy.attach(
    __name__,
    globals(),
    {
        ".builtin": ["Identity", "PrintIR"],
        ".config": [
            "ConfigOption",
            "PassConfig",
            "list_config_options",
            "register_config_option",
        ],
        ".context": ["PassContext"],
        ".decorators": ["function_pass", "module_pass"],
        ".diagnostics": ["Diagnostic", "DiagnosticContext"],
        ".info": ["PassInfo"],
        ".passes": ["FunctionPass", "ModulePass", "Pass", "Sequential"],
        ".pipeline": [
            "PIPELINE_PHASES",
            "PipelineInsertion",
            "add_pipeline_insertion",
            "default_pipeline",
            "list_pipeline_insertions",
            "pipeline_plan",
            "remove_pipeline_insertions",
        ],
        ".pipeline_text": ["PipelineSyntaxError", "parse_pipeline"],
        ".registry": [
            "LazyPass",
            "PassEntry",
            "close_pass_names",
            "get_pass",
            "get_pass_entry",
            "list_passes",
            "register_pass",
        ],
        ".rewrites": ["Rule", "RuleSet", "list_rule_sets"],
    },
    # every submodule: `from . import builtin` asks for the attribute first, which must
    # not go looking for a pass of that name (and load the plugins)
    submodules=[
        "builtin",
        "config",
        "context",
        "decorators",
        "diagnostics",
        "info",
        "passes",
        "pipeline",
        "pipeline_text",
        "registry",
        "rewrites",
    ],
    fallback=_registered_pass,
)


def __dir__() -> list[str]:
    from .registry import list_passes

    return sorted(set(_dir()) | set(list_passes()))
