"""The hook implementations of the ``std`` plugin: the passes, their config
options, their places in the default pipeline and the rule sets of the passes
written as rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from irpass.plugins import hookimpl
from irpass.transform import ConfigOption, LazyPass, PipelineInsertion
from irpass.transform.lazy_rules import LazyRuleSet

from . import options


def _std(target: str, opt_level: int, description: str, required: Sequence[str] = ()) -> LazyPass:
    return LazyPass(
        f"irpass_std.{target}", opt_level=opt_level, required=required, description=description
    )


_INFER = ("InferType",)

#: The standard passes, declared: each module is imported when its pass is first made
#: (``irpass passes`` and plugin loading import none of them, nor numpy).
PASSES: list[LazyPass] = [
    _std(
        "infer_type:InferType",
        0,
        "Infer the type of every expression (the core's type inference as a pass).",
    ),
    _std(
        "fold_constant:FoldConstant",
        2,
        "Fold the constant subexpressions: evaluate calls whose arguments are all constants.",
    ),
    _std(
        "dead_code:DeadCodeElimination", 1, "Remove the unused ``let`` bindings and tuple fields."
    ),
    _std(
        "cse:EliminateCommonSubexpr",
        3,
        "Merge calls of the same op with equal attrs and identical arguments (hash-consing).",
        _INFER,
    ),
    _std(
        "simplify_expr:SimplifyExpr",
        0,
        "Simplify algebraic and shape identities (the ``simplify`` rule set).",
        _INFER,
    ),
    _std(
        "canonicalize:Canonicalize",
        1,
        "Apply every enabled rewrite rule of the plugins' rule sets, to a fixed point.",
        _INFER,
    ),
    _std(
        "simplify_inference:SimplifyInference",
        0,
        "Lower ``nn.batch_norm``, ``nn.dropout`` (and optionally ``nn.layer_norm``) for inference.",
        _INFER,
    ),
    _std(
        "fold_scale_axis:BackwardFoldScaleAxis",
        3,
        "Fold ``multiply(conv2d/dense(...), s)`` "
        "with a per-channel constant ``s`` into the weights.",
        _INFER,
    ),
    _std(
        "fold_scale_axis:ForwardFoldScaleAxis",
        3,
        "Fold a per-channel scale of conv2d/dense's input (through relu) into the weights.",
        _INFER,
    ),
    _std(
        "fold_scale_axis:FoldScaleAxis",
        3,
        "TVM's ``FoldScaleAxis``: BackwardFoldScaleAxis then ForwardFoldScaleAxis.",
    ),
    _std(
        "combine_parallel:CombineParallelDense",
        3,
        "Combine parallel ``nn.dense``/``matmul`` calls on one input into one call and a split.",
        _INFER,
    ),
    _std(
        "fusion_rules:FusePatterns",
        2,
        "Fuse LayerNorm, GELU, attention, ... patterns into fused ops (the ``fuse`` rule set).",
        _INFER,
    ),
    _std(
        "layout:AlterOpLayout",
        3,
        "Replace op calls by what their alter-layout hooks return, carrying layouts.",
        _INFER,
    ),
    _std(
        "layout:ConvertLayout",
        3,
        "Convert ``nn.conv2d`` and the pooling ops to the layouts in ``desired_layouts``.",
        _INFER,
    ),
    _std(
        "fuse_ops:FuseOps",
        1,
        "Fuse op calls into functions marked ``Primitive=1`` (TVM's ``FuseOps``).",
        _INFER,
    ),
    _std(
        "normal_form:ToANormalForm",
        1,
        "Bind every non-atomic sub-expression and every constant to a ``let`` var.",
    ),
    _std(
        "normal_form:ToGraphNormalForm",
        1,
        "Replace each ``let`` var by its value (a shared dataflow node).",
    ),
    _std(
        "functions:LambdaLift",
        0,
        "Lift every closure that is only called directly into a new global function.",
    ),
    _std(
        "functions:Inline",
        1,
        "Inline the calls of global functions marked ``Inline=1``; drop the ones left unused.",
    ),
    _std(
        "functions:RemoveUnusedFunctions",
        1,
        "Remove the global functions not reachable from ``entry_functions``.",
    ),
]


@hookimpl
def irpass_register_passes() -> Sequence[Any]:
    """The standard passes, under their TVM names (declared: imported when first made)."""
    return PASSES


#: SimplifyExpr's and FusePatterns' rule sets, declared: imported when first applied or
#: listed (they import numpy and the op set, which loading the plugin must not).
RULE_SETS = [
    LazyRuleSet("irpass_std.simplify_rules:SIMPLIFY", name="simplify", pass_name="SimplifyExpr"),
    LazyRuleSet("irpass_std.fusion_rules:FUSE", name="fuse", pass_name="FusePatterns"),
]


@hookimpl
def irpass_register_rewrites() -> Sequence[Any]:
    """SimplifyExpr's and FusePatterns' rule sets (``simplify``, ``fuse``): listed by
    ``irpass rewrites`` and disabled by name in ``[rewrites] disable``. Each names the
    pass that applies it (``pass_name``), so Canonicalize leaves them to it."""
    return RULE_SETS


@hookimpl
def irpass_register_config_options() -> Sequence[ConfigOption]:
    """The ``std.*`` options of the passes (declared in :mod:`irpass_std.options`)."""
    return options.CONFIG_OPTIONS


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
