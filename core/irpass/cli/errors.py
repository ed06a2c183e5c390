"""The two ways a command ends badly, each with its exit code."""

from __future__ import annotations

__all__ = ["CommandFailed", "UsageError"]


class UsageError(Exception):
    """The command line is wrong: reported as one error line plus ``hint``; exit code 2."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


class CommandFailed(Exception):
    """The command ran and failed (a pass raised, ``--check`` found a difference): exit code 1.

    The message is what the user reads; the exception that caused the
    failure, if any, is chained as ``__cause__`` (shown with ``--traceback``).
    """
