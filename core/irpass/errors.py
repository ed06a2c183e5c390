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
    "PassError",
    "PassDependencyError",
    "PassReturnTypeError",
    "PipelineSyntaxError",
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


class PassError(IRPassError):
    """A pass failed: it raised, or reported errors through ``ctx.diag``.

    ``pass_name`` is the pass that failed and ``path`` where it sat in the
    pipeline, outermost first: ``["opt[2]", "FoldConstant"]`` is the third pass of
    the Sequential ``opt``. The exception
    the pass raised, if any, is chained as ``__cause__``; ``diagnostics`` holds
    the errors it reported.
    """

    def __init__(self, pass_name: str, reason: str, diagnostics: tuple = ()) -> None:
        self.pass_name = pass_name
        self.reason = reason
        self.diagnostics = tuple(diagnostics)
        self.path: list[str] = [pass_name]
        super().__init__()

    def __str__(self) -> str:
        where = " > ".join(self.path)
        text = f"pass {self.pass_name!r} failed: {self.reason}"
        if len(self.path) > 1:
            text += f"\n  in pipeline: {where}"
        for diag in self.diagnostics:
            text += f"\n  {diag}"
        return text


class PassReturnTypeError(PassError, TypeError):
    """A pass returned something other than an ``IRModule`` (a function pass:
    other than a ``Function``). Also a ``TypeError``."""


class PassDependencyError(IRPassError):
    """A pass's ``required`` names cannot be satisfied: a cycle or an unknown pass.

    ``chain`` is the list of pass names from the pass that was run to the one
    that closes the cycle or is unknown.
    """

    def __init__(self, message: str, chain: list[str]) -> None:
        self.chain = list(chain)
        super().__init__(message)


class PipelineSyntaxError(IRPassError, ValueError):
    """A textual pipeline that cannot be turned into passes (also a ``ValueError``).

    Raised by :func:`irpass.transform.parse_pipeline` for bad syntax and for
    what the text names: an unknown pass, an unknown or ill-typed option, a
    cycle among named pipelines. ``text`` is the pipeline text the error is in
    (for a named pipeline: its own text), ``column`` the 1-based character
    offset in it, and ``message`` the bare reason; ``str(err)`` shows the
    offending line with a caret under the column.
    """

    def __init__(self, message: str, text: str, column: int) -> None:
        self.message = message
        self.text = text
        self.column = column
        super().__init__(self._render())

    def _render(self) -> str:
        offset = min(max(self.column - 1, 0), len(self.text))
        start = self.text.rfind("\n", 0, offset) + 1
        end = self.text.find("\n", offset)
        line = self.text[start:] if end < 0 else self.text[start:end]
        # copy tabs so the caret lines up under tab-indented text
        pad = "".join("\t" if c == "\t" else " " for c in line[: offset - start])
        return f"pipeline, column {self.column}: {self.message}\n  {line}\n  {pad}^"
