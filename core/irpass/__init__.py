"""irpass: compiler passes over a tensor-program IR, with plugins for everything else.

The common names of :mod:`irpass.ir` are re-exported here, along with the
op builders (:mod:`irpass.op`), the evaluator, :func:`load`/:func:`save` (model
files by suffix) and the plugin markers :data:`hookimpl` / :data:`hookspec`.

Every name here is imported on first use (PEP 562), so ``import irpass`` costs
a few milliseconds and imports neither numpy nor the op set: what a command
line tool that only lists passes, or a plugin that only declares them, needs.
``from irpass import X`` works for every name in ``__all__``.
"""

from __future__ import annotations

from . import _lazy
from ._version import __version__ as __version__
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

__getattr__, __dir__ = _lazy.attach(
    __name__,
    globals(),
    {
        ".ir": [
            "Call",
            "Constant",
            "Expr",
            "Function",
            "FuncType",
            "GlobalVar",
            "If",
            "IRModule",
            "Let",
            "Op",
            "TensorType",
            "Tuple",
            "TupleGetItem",
            "TupleType",
            "Type",
            "Var",
            "assert_structural_equal",
            "const",
            "parse",
            "structural_equal",
            "structural_hash",
            "var",
        ],
        ".evaluator": ["evaluate"],
        ".formats": ["load", "save"],
        ".plugins": ["hookimpl"],
        ".plugins.hookspec": ["hookspec"],
    },
    # ir, evaluator, formats and plugins are not in __all__, but were attributes
    # since the eager imports of old: irpass.ir.X keeps working after `import irpass`
    submodules=["instrument", "op", "transform", "ir", "evaluator", "formats", "plugins"],
)

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
