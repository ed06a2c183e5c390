"""The ``op-stats`` instrument: how each pass changed the module's op counts.

Switched on by name, like any registered instrument::

    irpass optimize --instrument op-stats              # lines on stderr
    irpass optimize --instrument op-stats:stats.txt    # ... into a file

or in ``irpass.toml``::

    [instruments.op-stats]
    all_passes = true       # also list passes that changed nothing
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from typing import IO, TYPE_CHECKING

from irpass.instrument import PassInstrument

from .passes import total_ops

if TYPE_CHECKING:
    from irpass.ir import IRModule
    from irpass.transform import PassInfo

__all__ = ["OpStatsInstrument", "format_delta"]


class OpStatsInstrument(PassInstrument):
    """Print per-pass op count changes (``op-stats: FoldAddZero: add -2``) to stderr or a file.

    ``output`` is a path (written afresh each time the context is entered), an
    open text stream, or ``None`` for standard error (looked up at each write,
    so redirections apply). Passes that left the counts alone are listed only
    with ``all_passes``. Leaving the context prints one closing line with the
    totals. Each change is also kept in ``deltas`` as ``(pass name, {op: change})``.
    """

    def __init__(
        self, output: str | os.PathLike[str] | IO[str] | None = None, all_passes: bool = False
    ) -> None:
        is_path = isinstance(output, (str, os.PathLike))
        if not (output is None or is_path or hasattr(output, "write")):
            raise TypeError(
                f"op-stats: output must be a path, a text stream or None, got {output!r}"
            )
        self.output = output
        self.all_passes = bool(all_passes)
        self.deltas: list[tuple[str, dict[str, int]]] = []
        self._stack: list[tuple[PassInfo, Counter[str]]] = []
        self._file: IO[str] | None = None
        self._first: Counter[str] | None = None
        self._last: Counter[str] | None = None
        self._passes = 0

    def enter_pass_ctx(self) -> None:
        """Start afresh (and open the output file, if one was named)."""
        self.deltas = []
        self._stack = []
        self._first = self._last = None
        self._passes = 0
        if isinstance(self.output, (str, os.PathLike)):
            self._file = open(self.output, "w", encoding="utf-8")  # closed in exit_pass_ctx

    def exit_pass_ctx(self) -> None:
        """Write the closing totals line and close the output file."""
        try:
            if self._first is not None and self._last is not None:
                before, after = sum(self._first.values()), sum(self._last.values())
                change = format_delta(_delta(self._first, self._last)) or "no change"
                self._write(
                    f"op-stats: {self._passes} pass(es) ran; op calls {before} -> {after} "
                    f"({change})"
                )
        finally:
            if self._file is not None:
                self._file.close()
                self._file = None

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Count the ops of the pass's input."""
        counts = total_ops(mod)
        if self._first is None:
            self._first = counts
        self._stack.append((info, counts))

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Count the ops of the pass's output and report the difference."""
        before = None
        # A pass that raised never reaches run_after_pass: drop its entry (and those
        # of passes nested in it) if the caller caught the error and went on.
        while self._stack:
            entry_info, counts = self._stack.pop()
            if entry_info is info:
                before = counts
                break
        after = total_ops(mod)
        self._last = after
        self._passes += 1
        if before is None:
            return
        delta = _delta(before, after)
        if delta:
            self.deltas.append((info.name, delta))
        if delta or self.all_passes:
            self._write(f"op-stats: {info.name}: {format_delta(delta) or 'no change'}")

    def _write(self, line: str) -> None:
        out = self._file or self.output
        if out is None or isinstance(out, (str, os.PathLike)):
            out = sys.stderr
        out.write(line + "\n")


def _delta(before: Counter[str], after: Counter[str]) -> dict[str, int]:
    ops = sorted(set(before) | set(after))
    return {op: after[op] - before[op] for op in ops if after[op] != before[op]}


def format_delta(delta: dict[str, int]) -> str:
    """``{"add": -2, "relu": 1}`` as ``"add -2, relu +1"``."""
    return ", ".join(f"{op} {n:+d}" for op, n in sorted(delta.items()))
