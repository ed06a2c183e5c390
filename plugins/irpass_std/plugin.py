"""The hook implementations of the ``std`` plugin: the passes, their config
options, their places in the default pipeline and the rule sets of the passes
written as rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from irpass.plugins import hookimpl
from irpass.transform import ConfigOption, PipelineInsertion

from . import (
    canonicalize,
    combine_parallel,
    cse,
    dead_code,
    fold_constant,
    fold_scale_axis,
    functions,
    fuse_ops,
    layout,
    normal_form,
    simplify_expr,
    simplify_inference,
)
from .canonicalize import Canonicalize
from .combine_parallel import CombineParallelDense
from .cse import EliminateCommonSubexpr
from .dead_code import DeadCodeElimination
from .fold_constant import FoldConstant
from .fold_scale_axis import BackwardFoldScaleAxis, FoldScaleAxis, ForwardFoldScaleAxis
from .functions import Inline, LambdaLift, RemoveUnusedFunctions
from .fuse_ops import FuseOps
from .fusion_rules import FUSE, FusePatterns
from .infer_type import InferType
from .layout import AlterOpLayout, ConvertLayout
from .normal_form import ToANormalForm, ToGraphNormalForm
from .simplify_expr import SimplifyExpr
from .simplify_inference import SimplifyInference
from .simplify_rules import SIMPLIFY

_MODULES = (
    canonicalize,
    combine_parallel,
    cse,
    dead_code,
    fold_constant,
    fold_scale_axis,
    functions,
    fuse_ops,
    layout,
    normal_form,
    simplify_expr,
    simplify_inference,
)


@hookimpl
def irpass_register_passes() -> Sequence[Any]:
    """The standard passes, under their TVM names."""
    return [
        InferType,
        FoldConstant,
        DeadCodeElimination,
        EliminateCommonSubexpr,
        SimplifyExpr,
        Canonicalize,
        SimplifyInference,
        BackwardFoldScaleAxis,
        ForwardFoldScaleAxis,
        FoldScaleAxis,
        CombineParallelDense,
        FusePatterns,
        AlterOpLayout,
        ConvertLayout,
        FuseOps,
        ToANormalForm,
        ToGraphNormalForm,
        LambdaLift,
        Inline,
        RemoveUnusedFunctions,
    ]


@hookimpl
def irpass_register_rewrites() -> Sequence[Any]:
    """SimplifyExpr's and FusePatterns' rule sets (``simplify``, ``fuse``): listed by
    ``irpass rewrites`` and disabled by name in ``[rewrites] disable``. Each names the
    pass that applies it (``pass_name``), so Canonicalize leaves them to it."""
    return [SIMPLIFY, FUSE]


@hookimpl
def irpass_register_config_options() -> Sequence[ConfigOption]:
    """The ``std.*`` options each pass module declares in its ``CONFIG_OPTIONS``."""
    return [option for module in _MODULES for option in module.CONFIG_OPTIONS]


@hookimpl
def irpass_pipeline_passes() -> Sequence[PipelineInsertion]:
    """Where the standard passes go in the default pipeline.

    Within a phase a higher priority runs first. The order follows TVM's
    build pipeline: inference simplification before algebra, scale folding
    before constant folding (it leaves ``weight * scale`` for FoldConstant),
    CombineParallelDense between the two (the scales are in the constant
    weights by then, so it combines what a per-branch scale would have
    kept apart, and FoldConstant then concatenates the weights), CSE and DCE
    after folding, layouts, then fusion last. Canonicalize (the plugins' rewrite
    rules) runs after SimplifyExpr, on the program the built-in rules cleaned up.
    FusePatterns (the ``fuse`` rule set: LayerNorm, GELU, attention, ... as fused ops)
    runs right after FoldConstant, whose constants its patterns read, and before CSE.
    """
    return [
        PipelineInsertion("InferType", phase="start", priority=100),
        PipelineInsertion("Inline", phase="start", priority=20),
        PipelineInsertion("RemoveUnusedFunctions", phase="start", priority=10),
        PipelineInsertion("SimplifyInference", phase="simplify", priority=20),
        PipelineInsertion("SimplifyExpr", phase="simplify", priority=10),
        PipelineInsertion("Canonicalize", phase="simplify", priority=5),
        PipelineInsertion("FoldScaleAxis", phase="optimize", priority=30),
        PipelineInsertion("CombineParallelDense", phase="optimize", priority=25),
        PipelineInsertion("FoldConstant", phase="optimize", priority=20),
        PipelineInsertion("FusePatterns", phase="optimize", priority=15),
        PipelineInsertion("EliminateCommonSubexpr", phase="optimize", priority=10),
        PipelineInsertion("DeadCodeElimination", phase="optimize", priority=0),
        PipelineInsertion("AlterOpLayout", phase="layout"),
        PipelineInsertion("FuseOps", phase="fuse"),
    ]
