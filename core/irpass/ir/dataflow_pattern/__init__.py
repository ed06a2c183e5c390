"""A dataflow pattern language: TVM Relay's ``tvm.relay.dataflow_pattern`` for irpass.

Patterns describe pieces of dataflow (``is_op("multiply")(wildcard(), is_expr(one))``);
:meth:`DFPattern.match` tests one expression, :func:`rewrite` replaces every match by
what a :class:`DFPatternCallback` returns (to a fixed point), :meth:`DFPattern.partition`
turns every match into a call of a new function. Names and semantics follow TVM's (see
:mod:`.matcher` for matching, :mod:`.rewrite` for grouping, rewriting and partitioning).
:func:`rewrite_greedy` applies the same callbacks as MLIR's greedy driver does (one
bottom-up walk, innermost matches first, see :mod:`.greedy`); callbacks that need the
program around their match (use counts, options) ask :func:`rewrite_context`::

    from irpass.ir.dataflow_pattern import DFPatternCallback, is_constant, rewrite, wildcard

    class FoldMulOne(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.x = wildcard()
            self.pattern = self.x * is_expr(irpass.const(1.0))

        def callback(self, pre, post, node_map):
            return node_map[self.x][0]
"""

from .context import RewriteContext, rewrite_context
from .greedy import RewriteTypeError, rewrite_greedy
from .matcher import match
from .pattern import (
    AltPattern,
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DataTypePattern,
    DFPattern,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    IfPattern,
    LetPattern,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
    dominates,
    has_attr,
    has_dtype,
    has_shape,
    has_type,
    is_constant,
    is_expr,
    is_if,
    is_let,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    wildcard,
)
from .rewrite import (
    DEFAULT_MAX_ROUNDS,
    PARTITIONED_FROM_PATTERN,
    DFPatternCallback,
    RewriteLimitError,
    partition,
    prepare,
    rewrite,
)

__all__ = [
    "AltPattern",
    "AttrPattern",
    "CallPattern",
    "ConstantPattern",
    "DEFAULT_MAX_ROUNDS",
    "DFPattern",
    "DFPatternCallback",
    "DataTypePattern",
    "DominatorPattern",
    "ExprPattern",
    "FunctionPattern",
    "IfPattern",
    "LetPattern",
    "PARTITIONED_FROM_PATTERN",
    "RewriteContext",
    "RewriteLimitError",
    "RewriteTypeError",
    "ShapePattern",
    "TupleGetItemPattern",
    "TuplePattern",
    "TypePattern",
    "VarPattern",
    "WildcardPattern",
    "dominates",
    "has_attr",
    "has_dtype",
    "has_shape",
    "has_type",
    "is_constant",
    "is_expr",
    "is_if",
    "is_let",
    "is_op",
    "is_tuple",
    "is_tuple_get_item",
    "is_var",
    "match",
    "partition",
    "prepare",
    "rewrite",
    "rewrite_context",
    "rewrite_greedy",
    "wildcard",
]
