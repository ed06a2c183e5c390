"""Hypothesis strategies for random, well-typed programs and inputs to run them on.

Property tests of passes draw a module, run the pass, and compare::

    from hypothesis import given
    from irpass.testing import strategies as sts

    @given(sts.modules_and_inputs())
    def test_fold_constant_keeps_meaning(mod_and_args):
        mod, args = mod_and_args
        assert_allclose(evaluate(FoldConstant()(mod), *args), evaluate(mod, *args))

The programs come from the generator of :mod:`irpass.testing.programs` (the one the
soak, ``python -m irpass.testing.soak``, runs from seeds): every decision it makes is
drawn from hypothesis here, so a failing example shrinks towards small programs with
the first options of each choice. Its docstring lists what a program may hold: every
op of the core, ``let`` blocks used as values, ``if``, tuples, closures, ``@helper``
functions (some ``Inline=1``), constants small and big, shared sub-expressions, the
scale/bias chains FoldScaleAxis and SimplifyInference rewrite, size-0 dimensions.
Every program is well typed and well formed by construction and its results are finite
for inputs in [-1, 1]; ``@main``'s params are float32 tensors.

:func:`inputs_for` draws matching arguments (floats in [-1, 1]),
:func:`modules_and_inputs` both.

Hypothesis is only a test dependency: import this module from tests only (the
generator itself, :mod:`irpass.testing.programs`, needs numpy alone).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ..ir.module import IRModule
from ..ir.nodes import Function
from ..ir.types import TensorType, TupleType, Type
from .programs import FEATURES, SHAPES, Choices, generate

__all__ = ["modules", "inputs_for", "modules_and_inputs", "SHAPES", "FEATURES"]

Draw = Callable[[st.SearchStrategy[Any]], Any]


class _DrawnChoices(Choices):
    """The generator's decisions, drawn from hypothesis (so they shrink).

    Hypothesis favours small integers, which would make nearly every decision its first
    option; a draw is spread over the range by a multiplicative hash instead, and still
    shrinks to 0, the first option.
    """

    def __init__(self, draw: Draw) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        spread = (self.draw(st.integers(0, 2**32 - 1)) * 0x9E3779B1) % 2**32
        return lo + spread % (hi - lo + 1)

    def seed(self) -> int:
        return self.draw(st.integers(0, 2**32 - 1))


@st.composite
def _modules(draw: Draw, max_nodes: int, features: frozenset[str]) -> IRModule:
    return generate(_DrawnChoices(draw), max_nodes, features)


def modules(
    max_nodes: int = 24,
    *,
    lets: bool = True,
    ifs: bool = True,
    closures: bool = True,
    globals: bool = True,  # noqa: A002 - the feature's name
    tuples: bool = True,
    constants: bool = True,
    layout: bool = True,
    nn: bool = True,
    dtypes: bool = True,
    empty: bool = True,
) -> st.SearchStrategy[IRModule]:
    """Random well-typed modules with ``@main`` of about ``max_nodes`` nodes or fewer.

    The keyword flags switch features off (:data:`irpass.testing.programs.FEATURES`
    says what each covers): ``lets`` (let chains, lets used as values), ``ifs``,
    ``closures``, ``globals`` (``@helper`` functions called from ``@main``), ``tuples``
    (also the tuple-typed ops), ``constants`` (without it, weights are params of the
    function and other constants ``zeros``/``ones`` calls), ``layout`` (reshape,
    transpose and the other shape-changing ops), ``nn`` (convolution, pooling,
    normalization, dense, ...), ``dtypes`` (int, bool, float64, float16 values) and
    ``empty`` (size-0 dimensions). With all off, programs are DAGs of elementwise and
    broadcasting float32 ops over the params.
    """
    if max_nodes < 1:
        raise ValueError(f"modules: max_nodes must be >= 1, got {max_nodes}")
    flags = {
        "lets": lets,
        "ifs": ifs,
        "closures": closures,
        "globals": globals,
        "tuples": tuples,
        "constants": constants,
        "layout": layout,
        "nn": nn,
        "dtypes": dtypes,
        "empty": empty,
    }
    assert set(flags) == FEATURES
    return _modules(max_nodes, frozenset(name for name, on in flags.items() if on))


def _value_strategy(ty: Type) -> st.SearchStrategy[Any]:
    if isinstance(ty, TensorType):
        dtype = np.dtype(ty.dtype)
        if dtype.kind == "f":
            elements = st.floats(-1, 1, width=min(64, dtype.itemsize * 8))
        elif dtype.kind == "b":
            elements = st.booleans()
        else:
            elements = st.integers(0 if dtype.kind == "u" else -8, 8)
        return hnp.arrays(dtype, ty.shape, elements=elements)
    if isinstance(ty, TupleType):
        return st.tuples(*(_value_strategy(f) for f in ty.fields))
    raise TypeError(f"inputs_for: cannot make a value of type {ty}")


def inputs_for(func_or_mod: IRModule | Function) -> st.SearchStrategy[tuple[Any, ...]]:
    """Arguments for ``@main`` of a module (or for a function), one per param.

    Floats are drawn from [-1, 1], ints from [-8, 8], with exactly the
    params' shapes and dtypes. Every param must have a type annotation.
    """
    func = func_or_mod["main"] if isinstance(func_or_mod, IRModule) else func_or_mod
    if not isinstance(func, Function):
        raise TypeError(f"inputs_for: expected an IRModule or a Function, got {func!r}")
    parts = []
    for p in func.params:
        if p.type_annotation is None:
            raise ValueError(f"inputs_for: param %{p.name_hint} has no type annotation")
        parts.append(_value_strategy(p.type_annotation))
    return st.tuples(*parts)


def modules_and_inputs(
    max_nodes: int = 24, **features: bool
) -> st.SearchStrategy[tuple[IRModule, tuple[Any, ...]]]:
    """``(module, args)``: a module from :func:`modules` and arguments for its ``@main``."""
    return modules(max_nodes, **features).flatmap(
        lambda mod: st.tuples(st.just(mod), inputs_for(mod))
    )
