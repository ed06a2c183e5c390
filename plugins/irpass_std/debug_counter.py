"""How the std passes ask the debug counter (``PassContext.debug_counter``) before a rewrite."""

from __future__ import annotations

from collections.abc import Callable

from irpass.transform import PassContext
from irpass.transform.context import DEBUG_COUNTER

__all__ = ["Counter", "rewrite_counter"]

#: ``counter(site) -> bool``: whether the running pass may make its next rewrite.
Counter = Callable[[str], bool]


def rewrite_counter(ctx: PassContext) -> Counter | None:
    """``ctx.debug_counter`` when the ``debug_counter`` option names the running pass,
    else ``None``.

    A pass takes it once and asks ``counter is not None and not counter(site)``
    before each rewrite, skipping the rewrite on ``True``: without a counter on the
    pass that costs one test of a local, and the site (often a formatted string
    such as ``"fold add"``) is never built.
    """
    limits = ctx.config.get(DEBUG_COUNTER)
    if not limits or ctx.diag.pass_name not in limits:
        return None
    return ctx.debug_counter
