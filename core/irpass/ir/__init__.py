"""The IR: types, expression nodes, ops, modules, traversal, analyses and text format."""

from .analysis import all_vars, bound_vars, free_vars
from .attrs import Attrs
from .describe import describe
from .expr import Expr
from .functor import ExprFunctor, ExprMutator, ExprVisitor, post_order_visit
from .module import IRModule
from .nodes import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    const,
    var,
)
from .op import AttrField, Op, OpPattern, list_ops, register_op
from .parser import parse, parse_expr
from .structural import assert_structural_equal, structural_equal, structural_hash
from .type_infer import infer_type
from .types import FuncType, TensorType, TupleType, Type
from .well_formed import WellFormedReport, well_formed

__all__ = [
    "Attrs",
    "AttrField",
    "Call",
    "Constant",
    "Expr",
    "ExprFunctor",
    "ExprMutator",
    "ExprVisitor",
    "FuncType",
    "Function",
    "GlobalVar",
    "IRModule",
    "If",
    "Let",
    "Op",
    "OpPattern",
    "TensorType",
    "Tuple",
    "TupleGetItem",
    "TupleType",
    "Type",
    "Var",
    "WellFormedReport",
    "all_vars",
    "assert_structural_equal",
    "bound_vars",
    "describe",
    "const",
    "free_vars",
    "infer_type",
    "list_ops",
    "parse",
    "parse_expr",
    "post_order_visit",
    "register_op",
    "structural_equal",
    "structural_hash",
    "var",
    "well_formed",
]
