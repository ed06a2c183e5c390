"""irpass: compiler passes over a tensor-program IR, with plugins for everything else.

The common names of :mod:`irpass.ir` are re-exported here, along with the
op builders (:mod:`irpass.op`), the evaluator, :func:`load`/:func:`save` (model
files by suffix) and the plugin markers :data:`hookimpl` / :data:`hookspec`.
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from . import instrument, op, transform
from .errors import (
    EvaluationError,
    IRPassError,
    ParseError,
    PassDependencyError,
    PassError,
    PassReturnTypeError,
    PipelineSyntaxError,
    TypeInferenceError,
    WellFormedError,
)
from .evaluator import evaluate
from .formats import load, save
from .ir import (
    Call,
    Constant,
    Expr,
    Function,
    FuncType,
    GlobalVar,
    If,
    IRModule,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Type,
    Var,
    assert_structural_equal,
    const,
    parse,
    structural_equal,
    structural_hash,
    var,
)
from .plugins import hookimpl
from .plugins.hookspec import hookspec

try:
    __version__ = _version("irpass")
except _PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

__all__ = [
    "Call",
    "Constant",
    "EvaluationError",
    "Expr",
    "FuncType",
    "Function",
    "GlobalVar",
    "IRModule",
    "IRPassError",
    "If",
    "Let",
    "Op",
    "ParseError",
    "PassDependencyError",
    "PassError",
    "PassReturnTypeError",
    "PipelineSyntaxError",
    "TensorType",
    "Tuple",
    "TupleGetItem",
    "TupleType",
    "Type",
    "TypeInferenceError",
    "Var",
    "WellFormedError",
    "assert_structural_equal",
    "const",
    "evaluate",
    "hookimpl",
    "hookspec",
    "instrument",
    "load",
    "op",
    "parse",
    "save",
    "structural_equal",
    "structural_hash",
    "transform",
    "var",
]
