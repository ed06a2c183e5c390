"""Diagnostics: warnings and errors that passes report through ``ctx.diag``.

A pass that finds something wrong with its input reports it instead of
raising at the first problem, so a user sees every problem of one run::

    for call in suspicious_calls:
        ctx.diag.error("cannot fold a stateful op", expr=call)

Each diagnostic records the pass that was running. When a pass returns
after reporting errors, the executor raises :class:`irpass.PassError` listing
them; warnings are kept on ``ctx.diag`` (and logged to the ``irpass.diag``
logger) for the caller to show. Notes are facts, not problems (the rewrite
hits of Canonicalize): kept on ``ctx.diag`` with their ``data`` and logged at
INFO.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..ir.describe import describe
from ..ir.expr import Expr

__all__ = ["Diagnostic", "DiagnosticContext"]

_LOG = logging.getLogger("irpass.diag")


@dataclass(frozen=True)
class Diagnostic:
    """One reported problem: ``severity`` (``"error"`` / ``"warning"`` /
    ``"note"``), the message, the name of the pass that reported it, the
    offending expression (or ``None``) and, for notes, their ``data``."""

    severity: str
    message: str
    pass_name: str | None
    expr: Any = None
    data: Any = None

    def __str__(self) -> str:
        where = f"[{self.pass_name}] " if self.pass_name else ""
        text = f"{self.severity}: {where}{self.message}"
        if isinstance(self.expr, Expr):
            text += f"\n    at: {describe(self.expr)}"
        return text


class DiagnosticContext:
    """The diagnostics collected in one :class:`PassContext` (its ``diag``).

    ``pass_name`` is the pass currently running; the executor sets it so that
    passes need not name themselves.
    """

    __slots__ = ("diagnostics", "pass_name")

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.pass_name: str | None = None

    def error(self, message: str, expr: Any = None) -> Diagnostic:
        """Report an error; the running pass fails with :class:`PassError` when it returns."""
        return self._emit("error", message, expr)

    def warning(self, message: str, expr: Any = None) -> Diagnostic:
        """Report a warning; the pipeline goes on."""
        diag = self._emit("warning", message, expr)
        _LOG.warning("%s", diag)
        return diag

    def note(self, message: str, data: Any = None) -> Diagnostic:
        """Report a fact (not a problem) with its ``data``, e.g. per-rule hit counts."""
        diag = self._emit("note", message, None, data)
        _LOG.info("%s", diag)
        return diag

    @property
    def notes(self) -> list[Diagnostic]:
        """The notes, in the order they were reported."""
        return [d for d in self.diagnostics if d.severity == "note"]

    @property
    def errors(self) -> list[Diagnostic]:
        """The error diagnostics, in the order they were reported."""
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        """The warning diagnostics, in the order they were reported."""
        return [d for d in self.diagnostics if d.severity == "warning"]

    def render(self) -> str:
        """Every diagnostic, one per paragraph, in the order they were reported."""
        return "\n".join(str(d) for d in self.diagnostics)

    def clear(self) -> None:
        """Forget every collected diagnostic."""
        self.diagnostics.clear()

    def _emit(self, severity: str, message: str, expr: Any, data: Any = None) -> Diagnostic:
        if not isinstance(message, str):
            raise TypeError(f"ctx.diag.{severity}: message must be a str, got {message!r}")
        diag = Diagnostic(severity, message, self.pass_name, expr, data)
        self.diagnostics.append(diag)
        return diag
