"""Helpers for tests, examples and benchmarks: example networks and random inputs.

``irpass.testing.check_semantics`` runs a pass and compares outputs before and
after on random inputs; ``irpass.testing.models`` builds small networks with real shapes;
``irpass.testing.programs`` generates seeded random programs over the whole op set and IR
(``random_module(seed)``), ``irpass.testing.strategies`` (needs the ``test`` extra) draws
them with hypothesis, and ``python -m irpass.testing.soak --programs N --seed S`` runs every
std pass and the default pipeline on N of them, checking meaning, well-formedness, types and
that the input is unchanged, and printing a shrunk text reproducer for each failure.
"""

from __future__ import annotations

from .inputs import random_inputs, random_value
from .semantics import assert_outputs_close, check_semantics

__all__ = ["random_inputs", "random_value", "check_semantics", "assert_outputs_close"]
