"""Pass instruments (TVM's ``tvm.instrument`` API): code run around every pass.

:class:`PassInstrument` and the :func:`pass_instrument` decorator, plus the
built-ins:

- :class:`PassTimingInstrument`: nested per-pass timings (``render()`` /
  ``timings()``, emptied when its context is left);
- :class:`PrintBeforeAll`, :class:`PrintAfterAll`,
  :class:`PassPrintingInstrument`: print the module around all / named passes;
  :class:`PrintChanged`: print it (or a diff) after the passes that changed it;
- :class:`DumpIR`: write the module after each pass into numbered files;
- :class:`CheckEach`: evaluate after every pass and stop at the first that changed
  the outputs (:class:`CheckEachError`);
- :class:`VerifyEach`: check well-formedness and types after every pass, blaming
  the pass that broke them (:class:`VerifyError`);
- :class:`ReportInstrument`: record the run for an HTML report (timeline, per-pass
  diffs and pictures, findings).

Instruments have names in a registry (:func:`register_instrument`,
:func:`get_instrument`), which is how config files and the CLI switch them on.
"""

from .. import _lazy

# Imported on first use (see irpass._lazy): the pass context imports .base, and the
# instruments' modules import the pass context.
__getattr__, __dir__ = _lazy.attach(
    __name__,
    globals(),
    {
        ".base": ["PassInstrument", "pass_instrument"],
        ".check": ["CheckEach", "CheckEachError"],
        ".dump": ["DumpIR"],
        ".printing": [
            "PassPrintingInstrument",
            "PrintAfterAll",
            "PrintBeforeAll",
            "PrintChanged",
        ],
        ".report": ["ReportInstrument"],
        ".registry": [
            "InstrumentEntry",
            "LazyInstrument",
            "get_instrument",
            "get_instrument_entry",
            "list_instruments",
            "parse_instrument_spec",
            "register_instrument",
        ],
        ".timing": ["PassTimingInstrument", "TimingRow"],
        ".verify": ["VerifyEach", "VerifyError"],
    },
)

__all__ = [
    "CheckEach",
    "CheckEachError",
    "DumpIR",
    "InstrumentEntry",
    "LazyInstrument",
    "PassInstrument",
    "PassPrintingInstrument",
    "PassTimingInstrument",
    "PrintAfterAll",
    "PrintBeforeAll",
    "PrintChanged",
    "ReportInstrument",
    "TimingRow",
    "VerifyEach",
    "VerifyError",
    "get_instrument",
    "get_instrument_entry",
    "list_instruments",
    "parse_instrument_spec",
    "pass_instrument",
    "register_instrument",
]
