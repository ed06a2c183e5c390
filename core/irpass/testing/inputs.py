"""Random inputs for a function or module: what tests and benchmarks feed the evaluator."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir import Function, IRModule, TensorType, TupleType, Type

__all__ = ["random_inputs", "random_value"]


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
