"""Instruments that print the module around passes: ``PrintBeforeAll``,
``PrintAfterAll`` and ``PassPrintingInstrument``.

Each printout is a line ``Before Running Pass: <info>`` or
``After Running Pass: <info>`` (``<info>`` is the pass's
:class:`~irpass.transform.PassInfo`, which shows its name) followed by the
module's text form. Output goes to ``stream``, or to ``sys.stderr`` looked up
at each print (so pytest's capture and ``contextlib.redirect_stderr`` apply).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from ..transform.info import pass_names
from .base import PassInstrument

if TYPE_CHECKING:
    from ..ir.module import IRModule
    from ..transform.info import PassInfo

__all__ = ["PrintBeforeAll", "PrintAfterAll", "PassPrintingInstrument"]


def _print_module(stream: TextIO | None, when: str, mod: IRModule, info: PassInfo) -> None:
    """Write the ``<when> Running Pass: <info>`` header and the module text."""
    out = stream if stream is not None else sys.stderr
    out.write(f"{when} Running Pass: {info}\n{mod}\n")


class PrintBeforeAll(PassInstrument):
    """Prints the module before every pass runs (to ``stream``, default standard error)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Print ``Before Running Pass: <info>`` and the input module."""
        _print_module(self.stream, "Before", mod, info)


class PrintAfterAll(PassInstrument):
    """Prints the module after every pass ran (to ``stream``, default standard error)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Print ``After Running Pass: <info>`` and the output module."""
        _print_module(self.stream, "After", mod, info)


class PassPrintingInstrument(PassInstrument):
    """Prints the module before the passes named in ``print_before_pass_names`` and
    after those named in ``print_after_pass_names`` (to ``stream``, default
    standard error)."""

    def __init__(
        self,
        print_before_pass_names: Iterable[str] = (),
        print_after_pass_names: Iterable[str] = (),
        stream: TextIO | None = None,
    ) -> None:
        owner = "PassPrintingInstrument"
        self.print_before_pass_names = frozenset(
            pass_names(owner, "print_before_pass_names", print_before_pass_names)
        )
        self.print_after_pass_names = frozenset(
            pass_names(owner, "print_after_pass_names", print_after_pass_names)
        )
        self.stream = stream

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Print the input module when the pass is named in ``print_before_pass_names``."""
        if info.name in self.print_before_pass_names:
            _print_module(self.stream, "Before", mod, info)

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Print the output module when the pass is named in ``print_after_pass_names``."""
        if info.name in self.print_after_pass_names:
            _print_module(self.stream, "After", mod, info)
