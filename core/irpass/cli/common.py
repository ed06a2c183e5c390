"""What the ``irpass`` start-up and the commands share: the program name and
validating the settings with irpass's warnings printed as ``irpass: warning:`` lines."""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["PROG", "validate", "warnings_as_lines"]

PROG = "irpass"


def validate(settings: Settings) -> list[str]:
    """``settings.validate()``, with its warnings printed as ``irpass: warning:`` lines;
    returns its notes (settings ignored on purpose, e.g. a disabled plugin's section)."""
    with warnings_as_lines():
        return list(settings.validate() or ())


class warnings_as_lines:
    """Collects the warnings irpass itself issues and prints each as ``irpass: warning: ...``;
    anyone else's warnings go on to the normal warning machinery."""

    def __enter__(self) -> None:
        self._catcher = warnings.catch_warnings(record=True)
        self._caught = self._catcher.__enter__()
        # every occurrence: the plugin manager reports each broken plugin once itself
        warnings.simplefilter("always")

    def __exit__(self, *exc_info: object) -> None:
        self._catcher.__exit__(*exc_info)
        for w in self._caught:
            category = w.category
            if issubclass(category, UserWarning) and category.__module__.startswith("irpass"):
                print(f"{PROG}: warning: {w.message}", file=sys.stderr)
            else:
                warnings.warn_explicit(w.message, category, w.filename, w.lineno)
