"""Exceptions raised by irpass.

Constructors of IR nodes raise the built-in ``TypeError`` / ``ValueError``
(with a message naming the offending field); everything that reports a
problem *in a program* derives from :class:`IRPassError`.
"""

from __future__ import annotations

__all__ = [
    "IRPassError",
    "TypeInferenceError",
    "ParseError",
    "WellFormedError",
    "EvaluationError",
]


class IRPassError(Exception):
    """Base class of the errors irpass raises about programs and pipelines."""


class TypeInferenceError(IRPassError):
    """An ill-typed program: the message names the op, the argument types and the expression.

    ``expr`` is the offending node and ``function`` the name of the global
    function it sits in (``None`` when unknown).
    """

    expr: object = None
    function: str | None = None


class WellFormedError(IRPassError):
    """A program that breaks the scoping rules (a var bound twice, used out of scope, ...)."""


class EvaluationError(IRPassError, RuntimeError):
    """Running a program failed: a kernel raised or returned a value of the wrong type,
    or a value could not be computed. The message names the op and the node."""


class ParseError(IRPassError):
    """A syntax error in the text format.

    Attributes ``line`` and ``column`` are 1-based; ``source_line`` is the
    offending line of text and ``filename`` the file it came from, if any.
    ``str(err)`` shows all of it with a caret under the column.
    """

    def __init__(
        self,
        message: str,
        line: int,
        column: int,
        source_line: str = "",
        filename: str | None = None,
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.source_line = source_line
        self.filename = filename
        super().__init__(self._render())

    def _render(self) -> str:
        where = f"{self.filename or '<text>'}:{self.line}:{self.column}"
        text = f"{where}: error: {self.message}"
        if self.source_line:
            caret = " " * (self.column - 1) + "^"
            text += f"\n  {self.source_line}\n  {caret}"
        return text
