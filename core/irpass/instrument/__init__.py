"""Pass instruments (TVM's ``tvm.instrument`` API): code run around every pass.

:class:`PassInstrument` and the :func:`pass_instrument` decorator, plus the
built-ins:

- :class:`PassTimingInstrument`: nested per-pass timings (``render()`` /
  ``timings()``, emptied when its context is left);
- :class:`PrintBeforeAll`, :class:`PrintAfterAll`,
  :class:`PassPrintingInstrument`: print the module around all / named passes;
- :class:`DumpIR`: write the module after each pass into numbered files.
"""

from .base import PassInstrument, pass_instrument
from .dump import DumpIR
from .printing import PassPrintingInstrument, PrintAfterAll, PrintBeforeAll
from .timing import PassTimingInstrument, TimingRow

__all__ = [
    "DumpIR",
    "PassInstrument",
    "PassPrintingInstrument",
    "PassTimingInstrument",
    "PrintAfterAll",
    "PrintBeforeAll",
    "TimingRow",
    "pass_instrument",
]
