"""Helpers for tests, examples and benchmarks: example networks and random inputs.

``irpass.testing.check_semantics`` runs a pass and compares outputs before and
after on random inputs; ``irpass.testing.models`` builds small networks with real shapes;
``irpass.testing.strategies`` (needs the ``test`` extra) generates random
programs with hypothesis.
"""

from __future__ import annotations

from .inputs import random_inputs, random_value
from .semantics import assert_outputs_close, check_semantics

__all__ = ["random_inputs", "random_value", "check_semantics", "assert_outputs_close"]
