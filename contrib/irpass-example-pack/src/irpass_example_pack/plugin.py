"""The plugin module: what the ``example`` entry point names.

irpass imports this module when it loads plugins and calls the hooks below
once each. The module only *returns* what the pack contributes; irpass does
the registering, records every contribution under the plugin's name
(``irpass plugins``) and undoes them all if one fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from irpass.plugins import hookimpl
from irpass.transform import ConfigOption, PipelineInsertion, RuleSet

from .instrument import OpStatsInstrument
from .passes import MAX_REWRITES, FoldAddZero, OpStatistics
from .rules import EXAMPLE_RULES


@hookimpl
def irpass_register_config_options() -> Sequence[ConfigOption]:
    """``example.max_rewrites``: the most rewrites FoldAddZero makes in one function."""
    return [
        ConfigOption(
            MAX_REWRITES,
            int,
            None,
            "the most rewrites FoldAddZero makes in one function (unset: no limit)",
        )
    ]


@hookimpl
def irpass_register_passes() -> Sequence[Any]:
    """The pass classes; ``irpass.transform.get_pass("FoldAddZero")`` makes one."""
    return [FoldAddZero, OpStatistics]


@hookimpl
def irpass_register_rewrites() -> Sequence[RuleSet]:
    """The rule set ``example`` (rule ``example.fold_add_zero``), applied by Canonicalize."""
    return [EXAMPLE_RULES]


@hookimpl
def irpass_register_instruments() -> Mapping[str, Any]:
    """``--instrument op-stats[:FILE]`` / ``[instruments.op-stats]``."""
    return {"op-stats": OpStatsInstrument}


@hookimpl
def irpass_pipeline_passes() -> Sequence[PipelineInsertion]:
    """FoldAddZero goes right after SimplifyExpr, or at the end of the simplify
    phase when the pipeline has no SimplifyExpr (std blocked, or an older std)."""
    return [PipelineInsertion("FoldAddZero", after="SimplifyExpr", phase="simplify")]
