"""Instruments that print the module around passes: ``PrintBeforeAll``,
``PrintAfterAll``, ``PassPrintingInstrument`` and ``PrintChanged``.

Each printout of the first three is a line ``Before Running Pass: <info>`` or
``After Running Pass: <info>`` (``<info>`` is the pass's
:class:`~irpass.transform.PassInfo`, which shows its name) followed by the
module's text form. ``PrintChanged`` prints only after the passes that changed the
module (LLVM's ``-print-changed``, MLIR's ``-mlir-print-ir-after-change``), whole or as
a unified diff. Output goes to ``stream``, or to ``sys.stderr`` looked up at each print
(so pytest's capture and ``contextlib.redirect_stderr`` apply).

Constants of more than ``print.elide_constants`` elements (a config option, 16 by
default) print without their data, as ``const(float32, (64, 3, 7, 7), ...)``: a
module's weights would otherwise fill the output (ResNet-50 prints 100 MB of them
per pass). Each instrument also takes ``elide_constants``: ``None`` (the default) reads
the option, ``-1`` prints every value, ``N`` elides above ``N`` elements.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from ..transform.info import pass_names
from .base import PassInstrument

if TYPE_CHECKING:
    from ..ir.module import IRModule
    from ..transform.info import PassInfo

__all__ = [
    "ELIDE_OPTION",
    "PassPrintingInstrument",
    "PrintAfterAll",
    "PrintBeforeAll",
    "PrintChanged",
    "module_text",
]

#: The config option (declared with the core's options in :mod:`irpass.transform.context`):
#: constants of more elements print without their data.
ELIDE_OPTION = "print.elide_constants"


def module_text(mod: IRModule, elide_constants: int | None = None) -> str:
    """``mod``'s text as the printing instruments show it: constants of more than
    ``elide_constants`` elements without data (``None``: the config option
    ``print.elide_constants`` of the current context; a negative value: every value)."""
    if elide_constants is None:
        from ..transform.context import PassContext  # the context imports this package

        elide_constants = PassContext.current().config[ELIDE_OPTION]
    limit = None if elide_constants < 0 else elide_constants
    return mod.astext(elide_constants=limit)


def _print_module(
    stream: TextIO | None, when: str, mod: IRModule, info: PassInfo, elide: int | None
) -> None:
    """Write the ``<when> Running Pass: <info>`` header and the module text."""
    out = stream if stream is not None else sys.stderr
    out.write(f"{when} Running Pass: {info}\n{module_text(mod, elide)}\n")


class PrintBeforeAll(PassInstrument):
    """Prints the module before every pass runs (to ``stream``, default standard error)."""

    def __init__(self, stream: TextIO | None = None, elide_constants: int | None = None) -> None:
        self.stream = stream
        self.elide_constants = elide_constants

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Print ``Before Running Pass: <info>`` and the input module."""
        _print_module(self.stream, "Before", mod, info, self.elide_constants)


class PrintAfterAll(PassInstrument):
    """Prints the module after every pass ran (to ``stream``, default standard error)."""

    def __init__(self, stream: TextIO | None = None, elide_constants: int | None = None) -> None:
        self.stream = stream
        self.elide_constants = elide_constants

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Print ``After Running Pass: <info>`` and the output module."""
        _print_module(self.stream, "After", mod, info, self.elide_constants)


class PassPrintingInstrument(PassInstrument):
    """Prints the module before the passes named in ``print_before_pass_names`` and
    after those named in ``print_after_pass_names`` (to ``stream``, default
    standard error)."""

    def __init__(
        self,
        print_before_pass_names: Iterable[str] = (),
        print_after_pass_names: Iterable[str] = (),
        stream: TextIO | None = None,
        elide_constants: int | None = None,
    ) -> None:
        owner = "PassPrintingInstrument"
        self.print_before_pass_names = frozenset(
            pass_names(owner, "print_before_pass_names", print_before_pass_names)
        )
        self.print_after_pass_names = frozenset(
            pass_names(owner, "print_after_pass_names", print_after_pass_names)
        )
        self.stream = stream
        self.elide_constants = elide_constants

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Print the input module when the pass is named in ``print_before_pass_names``."""
        if info.name in self.print_before_pass_names:
            _print_module(self.stream, "Before", mod, info, self.elide_constants)

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Print the output module when the pass is named in ``print_after_pass_names``."""
        if info.name in self.print_after_pass_names:
            _print_module(self.stream, "After", mod, info, self.elide_constants)


class PrintChanged(PassInstrument):
    """Prints the module after each pass that changed it: the module once at the start
    (``*** IR Dump At Start ***``), then ``*** IR Dump After <pass> ***`` and the module,
    or with ``diff=True`` a unified diff of its text against the text before the pass.

    A pass changed the module when the text differs (constants elided as configured, so
    a pass that only changes the data of a large constant counts as a change only when
    its dtype or shape changes). Only the passes that do the work print: a pass inside
    which other passes ran (a ``Sequential``) does not.
    """

    name = "print-changed"

    def __init__(
        self, diff: bool | str = False, stream: TextIO | None = None,
        elide_constants: int | None = None,
    ) -> None:
        if isinstance(diff, str):  # --instrument print-changed:diff
            if diff not in ("diff", ""):
                raise ValueError(f"print-changed: the argument must be 'diff', got {diff!r}")
            diff = diff == "diff"
        self.diff = bool(diff)
        self.stream = stream
        self.elide_constants = elide_constants
        self._stack: list[list] = []  # per running pass: [input module, a pass ran inside]
        self._text: tuple[IRModule, str] | None = None  # the last module printed, its text

    def enter_pass_ctx(self) -> None:
        """Start afresh: the next pass's input is printed as the start."""
        self._stack.clear()
        self._text = None

    exit_pass_ctx = enter_pass_ctx

    def _text_of(self, mod: IRModule) -> str:
        if self._text is not None and self._text[0] is mod:
            return self._text[1]
        return module_text(mod, self.elide_constants)

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Print the module at the start; note the pass's input."""
        if self._stack:
            self._stack[-1][1] = True
        elif self._text is None:
            text = self._text_of(mod)
            self._write(f"*** IR Dump At Start ***\n{text}")
            self._text = (mod, text)
        self._stack.append([mod, False])

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Print the module (or the diff) if the pass changed it."""
        before, had_inner = self._stack.pop()
        if had_inner or mod is before:
            return
        old = self._text_of(before)
        new = self._text_of(mod)
        self._text = (mod, new)
        if new == old:
            return
        if self.diff:
            lines = difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True),
                fromfile=f"before {info.name}", tofile=f"after {info.name}", n=2,
            )
            self._write(f"*** IR Dump After {info.name} (diff) ***\n{''.join(lines)}")
        else:
            self._write(f"*** IR Dump After {info.name} ***\n{new}")

    def _write(self, text: str) -> None:
        out = self.stream if self.stream is not None else sys.stderr
        out.write(text if text.endswith("\n") else text + "\n")
