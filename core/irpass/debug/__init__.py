"""Finding what broke a pipeline: bisection to the pass and the rewrite, and reduction of
the failing module (``irpass bisect`` and ``irpass reduce`` on the command line).

- :func:`bisect`: the first pass, then the first rewrite in it, after which an oracle
  says the module is bad;
- :func:`reduce`: the smallest module an oracle still finds bad (delta debugging);
- the oracles: :class:`OutputsDiffer` (the default: outputs differ from the input
  model's), :class:`CommandFails` (a user's test command), :class:`PassFails`,
  :class:`PassChangesOutputs`.
"""

from .bisect import BisectError, BisectResult, Step, bisect
from .oracle import (
    CommandFails,
    Oracle,
    OracleError,
    OutputsDiffer,
    PassChangesOutputs,
    PassFails,
)
from .reduce import ReduceError, ReduceResult, count_calls, reduce

__all__ = [
    "BisectError",
    "BisectResult",
    "CommandFails",
    "Oracle",
    "OracleError",
    "OutputsDiffer",
    "PassChangesOutputs",
    "PassFails",
    "ReduceError",
    "ReduceResult",
    "Step",
    "bisect",
    "count_calls",
    "reduce",
]
