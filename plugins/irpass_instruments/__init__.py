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
from typing import TYPE_CHECKING

from irpass.instrument.registry import LazyInstrument
from irpass.plugins import hookimpl

if TYPE_CHECKING:
    from irpass.instrument import PassInstrument, PassPrintingInstrument


def _print_ir(
    print_before_pass_names: str | list[str] = (), print_after_pass_names: str | list[str] = ()
) -> PassPrintingInstrument:
    """Print the module before/after the named passes (comma-separated on the command line)."""
    from irpass.instrument import PassPrintingInstrument

    def names(value: str | list[str]) -> list[str]:
        return [n for n in value.split(",") if n] if isinstance(value, str) else list(value)

    return PassPrintingInstrument(names(print_before_pass_names), names(print_after_pass_names))


def _lazy(target: str, description: str) -> LazyInstrument:
    return LazyInstrument(f"irpass.instrument.{target}", description)


@hookimpl
def irpass_register_instruments() -> dict[str, Callable[..., PassInstrument]]:
    """The built-in instruments by name (declared: each module is imported when its
    instrument is first asked for, not when the plugin loads)."""
    return {
        "timing": _lazy(
            "timing:PassTimingInstrument",
            "Times every pass execution (``time.perf_counter_ns``), nested and aggregated.",
        ),
        "print-before": _lazy(
            "printing:PrintBeforeAll",
            "Prints the module before every pass runs (to ``stream``, default standard error).",
        ),
        "print-after": _lazy(
            "printing:PrintAfterAll",
            "Prints the module after every pass ran (to ``stream``, default standard error).",
        ),
        "print-ir": _print_ir,
        "dump-ir": _lazy(
            "dump:DumpIR",
            "Writes ``NNN_<PassName>.txt`` into ``dump_dir`` after each pass execution.",
        ),
        "print-changed": _lazy(
            "printing:PrintChanged",
            "Prints the module (or a diff) after each pass that changed it.",
        ),
        "verify-each": _lazy(
            "verify:VerifyEach",
            "Check well-formedness and types after every pass; blame the pass that broke them.",
        ),
        "check-each": _lazy(
            "check:CheckEach",
            "Evaluate after every pass; stop at the first pass that changed the outputs.",
        ),
        "report": _lazy(
            "report:ReportInstrument",
            "Records a pipeline run for an HTML report (see the module documentation).",
        ),
    }
