"""irpass-example-pack: an example of a third-party irpass pass pack.

- :class:`FoldAddZero` (function pass, opt_level 1): ``x + 0`` / ``x * 1`` -> ``x``;
  put into the default pipeline after ``SimplifyExpr``; bounded by the config
  option ``example.max_rewrites``;
- :class:`OpStatistics` (module pass, opt_level 0): counts op calls per function;
- :class:`OpStatsInstrument`, registered as the instrument ``op-stats``.

Importing this package does not register anything; irpass loads the plugin
module :mod:`irpass_example_pack.plugin` through the ``irpass`` entry point.
"""

from .instrument import OpStatsInstrument
from .passes import MAX_REWRITES, FoldAddZero, OpStatistics, count_ops, total_ops

__version__ = "0.1.0"

__all__ = [
    "MAX_REWRITES",
    "FoldAddZero",
    "OpStatistics",
    "OpStatsInstrument",
    "count_ops",
    "total_ops",
]
