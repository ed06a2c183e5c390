"""Stateful test ops shared by the std pass tests (the fixtures are in conftest.py).

A stateful op is the only source of effects in the IR, so every pass that may
drop, merge, move or fold code is tested against one. Registering it in a test
is safe: conftest restores the op registry after each test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from irpass.ir import Op, OpPattern, register_op


def _plus_one(args: list[Any], attrs: Any) -> Any:
    return args[0] + 1


def register_stateful_op(
    name: str, kernel: Callable[[list[Any], Any], Any] = _plus_one, **options: Any
) -> Op:
    """Register ``name(x)``: a stateful, opaque op of ``x``'s type (``x + 1`` by default).

    ``options`` go to :func:`register_op` (``owner``, ``override``).
    """
    return register_op(
        name,
        num_inputs=1,
        type_rel=lambda types, attrs: types[0],
        kernel=kernel,
        pattern=OpPattern.OPAQUE,
        stateful=True,
        **options,
    )


def counting_stateful_op(name: str = "test.tick") -> tuple[Op, list[int]]:
    """Register ``name(x)``: a stateful op returning ``x`` that appends to ``calls`` each
    time it runs; returns ``(op, calls)``."""
    calls: list[int] = []

    def kernel(args: list[Any], attrs: Any) -> Any:
        calls.append(1)
        return args[0]

    return register_stateful_op(name, kernel, owner="test"), calls
