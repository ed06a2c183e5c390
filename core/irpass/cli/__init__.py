"""The ``irpass`` command (also ``python -m irpass``).

``irpass [GLOBAL OPTIONS] COMMAND [ARGS]`` with the commands ``optimize``,
``passes``, ``plugins``, ``pipeline`` and ``config``; see
:func:`irpass.cli.main.main` and ``irpass --help``. Exit codes: 0 success,
1 a pass or ``--check`` failed, 2 bad usage or input, 130 interrupted.
"""

from __future__ import annotations

from .errors import CommandFailed, UsageError
from .main import main

__all__ = ["CommandFailed", "UsageError", "main"]
