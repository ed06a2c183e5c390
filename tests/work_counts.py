"""A deterministic measure of work for the scaling tests (imported by the test modules).

``calls_made(fn)`` counts the Python and C function calls ``fn()`` makes (``sys.setprofile``
events). Unlike a time, no load on the machine moves it, so "4x the nodes makes about 4x the
calls" is a check that passes or fails the same way everywhere. It does not see work inside
one C call (a ``list.index`` scanning a long list), only how many calls there are.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def calls_made(fn: Callable[[], Any]) -> tuple[Any, int]:
    """``(fn(), the number of function calls it made)``."""
    count = 0

    def profile(frame, event, arg):  # noqa: ARG001 - sys.setprofile's signature
        nonlocal count
        if event == "call" or event == "c_call":
            count += 1

    sys.setprofile(profile)
    try:
        result = fn()
    finally:
        sys.setprofile(None)
    return result, count
