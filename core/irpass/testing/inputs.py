"""Random inputs for a function or module: what tests and benchmarks feed the evaluator."""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from types import ModuleType

import numpy as np

from ..ir import Function, IRModule, TensorType, TupleType, Type

__all__ = ["random_inputs", "random_value", "generators_for_test"]


def random_value(ty: Type, rng: np.random.Generator) -> object:
    """A random value of type ``ty``: an array for a tensor, a tuple for a tuple type."""
    if isinstance(ty, TupleType):
        return tuple(random_value(f, rng) for f in ty.fields)
    if not isinstance(ty, TensorType):
        raise TypeError(f"random_value: cannot make a random value of type {ty}")
    if ty.dtype == "bool":
        return rng.integers(0, 2, size=ty.shape).astype(bool)
    if ty.dtype.startswith(("int", "uint")):
        return rng.integers(0, 10, size=ty.shape).astype(ty.dtype)
    return rng.standard_normal(size=ty.shape).astype(ty.dtype)


def random_inputs(
    func_or_mod: Function | IRModule,
    seed: int = 0,
    draw: Callable[[Type, np.random.Generator], object] = random_value,
) -> dict[str, object]:
    """Random arguments for every parameter of ``func_or_mod`` (a module's ``main``),
    keyed by parameter name, each made by ``draw(type, rng)`` (default
    :func:`random_value`); parameters must have type annotations."""
    func = func_or_mod["main"] if isinstance(func_or_mod, IRModule) else func_or_mod
    rng = np.random.default_rng(seed)
    out: dict[str, object] = {}
    for p in func.params:
        if p.type_annotation is None:
            raise ValueError(f"random_inputs: parameter %{p.name_hint} has no type annotation")
        out[p.name_hint] = draw(p.type_annotation, rng)
    return out


def generators_for_test(module: ModuleType, test_name: str) -> dict[str, np.random.Generator]:
    """For each numpy ``Generator`` bound at the top level of ``module``, a new one seeded
    from that generator's own seed, ``test_name`` and ``$IRPASS_TEST_SEED`` (default 0),
    keyed by the name it is bound to.

    A module-level ``RNG = np.random.default_rng(7)`` is shared by the module's tests, so
    what one test draws depends on which tests drew before it in the same process: under
    pytest-xdist, on how the scheduler spread the tests over the workers, which depends on
    timing. Rebinding each of them for every test to this function's result (the
    ``irpass_seeded_generators`` fixture of irpass's pytest plugin) makes a test's inputs a
    function of the test alone. Another ``IRPASS_TEST_SEED`` draws other inputs
    for every test: the way to look for tests that pass on their seeds only.
    """
    salt = int(os.environ.get("IRPASS_TEST_SEED", "0"))
    key = zlib.crc32(test_name.encode())
    fresh = {}
    for name, value in vars(module).items():
        if isinstance(value, np.random.Generator):
            entropy = value.bit_generator.seed_seq.entropy  # the seed it was made with
            fresh[name] = np.random.default_rng([entropy or 0, key, salt])
    return fresh
