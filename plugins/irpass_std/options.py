"""The ``std.*`` config options of the standard passes, declared apart from the passes.

Loading the ``std`` plugin registers these options (``irpass config`` lists them, a
config file is checked against them) without importing the passes, their numpy and
their rule sets: that happens when a pass is first made. Each option is described here
only; a pass module lists its own as ``CONFIG_OPTIONS = options_of("ThePass")`` and reads
them by key.
"""

from __future__ import annotations

from irpass.transform.config import ConfigOption

__all__ = ["CONFIG_OPTIONS", "options_of"]

CONFIG_OPTIONS: list[ConfigOption] = [
    ConfigOption(
        "std.Canonicalize.max_rounds",
        int,
        100,  # irpass.ir.dataflow_pattern.DEFAULT_MAX_ROUNDS
        "Canonicalize: rewrite rounds per function before the rules still firing are left out",
    ),
    ConfigOption(
        "std.CombineParallelDense.min_num_branches",
        int,
        3,
        "CombineParallelDense: the fewest dense/matmul calls sharing one input that are "
        "combined into one call and a split (at least 2)",
    ),
    ConfigOption(
        "std.FoldConstant.max_elements",
        int,
        None,
        "FoldConstant leaves alone a call whose folded result would have more elements "
        "than this (unset: no limit)",
    ),
    ConfigOption(
        "std.FoldConstant.copy_shared_weights",
        bool,
        False,
        "FoldConstant also folds a call that would copy a shared weight (a constant of at "
        "least 1 MiB that other nodes use too, such as a tied embedding) into a new constant "
        "of at least 1 MiB; by default it leaves the call, so the program holds one copy",
    ),
    ConfigOption(
        "std.FuseOps.max_depth",
        int,
        256,
        "FuseOps: the most nodes (op calls, tuples, projections) in one fused group",
    ),
    ConfigOption(
        "std.AlterOpLayout.desired_layouts",
        str,
        "",
        "Layouts AlterOpLayout converts ops to, as 'op=layout[,kernel_layout]' entries "
        "separated by ';' (e.g. 'nn.conv2d=NHWC,default; nn.max_pool2d=NHWC'); empty: "
        "no conversion",
    ),
    ConfigOption(
        "std.SimplifyExpr.finite_math",
        bool,
        False,
        "SimplifyExpr: assume no inf/nan values and rewrite x * 0 to zeros",
    ),
    ConfigOption(
        "std.SimplifyInference.decompose_layer_norm",
        bool,
        False,
        "SimplifyInference: decompose nn.layer_norm into mean/subtract/sqrt/divide ops",
    ),
]


def options_of(pass_name: str) -> list[ConfigOption]:
    """The options of the standard pass ``pass_name`` (the keys ``std.<pass_name>.*``)."""
    prefix = f"std.{pass_name}."
    return [option for option in CONFIG_OPTIONS if option.key.startswith(prefix)]
