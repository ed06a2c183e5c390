"""The plugin ``instruments``: irpass's built-in instruments under the names config files use.

Registered through irpass's own entry points, like any plugin. The classes
live in :mod:`irpass.instrument`; this plugin only names them:

========================  =================================================
``timing``                :class:`~irpass.instrument.PassTimingInstrument`
``print-before``          :class:`~irpass.instrument.PrintBeforeAll`
``print-after``           :class:`~irpass.instrument.PrintAfterAll`
``print-ir``              :class:`~irpass.instrument.PassPrintingInstrument`
                          (``print_before_pass_names``, ``print_after_pass_names``)
``dump-ir``               :class:`~irpass.instrument.DumpIR` (``dump_dir``)
``print-changed``         :class:`~irpass.instrument.PrintChanged` (``diff``:
                          ``print-changed:diff`` prints unified diffs)
``verify-each``           :class:`~irpass.instrument.VerifyEach`
``check-each``            :class:`~irpass.instrument.CheckEach` (``seed``, ``rtol``,
                          ``atol``; ``check-each:SEED`` on the command line)
``report``                :class:`~irpass.instrument.ReportInstrument` (``path``;
                          ``report:run.html`` on the command line)
========================  =================================================
"""

from __future__ import annotations

from collections.abc import Callable

from irpass.instrument import (
    CheckEach,
    DumpIR,
    PassInstrument,
    PassPrintingInstrument,
    PassTimingInstrument,
    PrintAfterAll,
    PrintBeforeAll,
    PrintChanged,
    VerifyEach,
)
from irpass.instrument.report import ReportInstrument
from irpass.plugins import hookimpl


def _print_ir(print_before_pass_names: str | list[str] = (),
              print_after_pass_names: str | list[str] = ()) -> PassPrintingInstrument:
    """Print the module before/after the named passes (comma-separated on the command line)."""

    def names(value: str | list[str]) -> list[str]:
        return [n for n in value.split(",") if n] if isinstance(value, str) else list(value)

    return PassPrintingInstrument(names(print_before_pass_names), names(print_after_pass_names))


@hookimpl
def irpass_register_instruments() -> dict[str, Callable[..., PassInstrument]]:
    """The built-in instruments by name."""
    return {
        "timing": PassTimingInstrument,
        "print-before": PrintBeforeAll,
        "print-after": PrintAfterAll,
        "print-ir": _print_ir,
        "dump-ir": DumpIR,
        "print-changed": PrintChanged,
        "verify-each": VerifyEach,
        "check-each": CheckEach,
        "report": ReportInstrument,
    }
