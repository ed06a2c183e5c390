"""Shared helpers of the op tests: run a call's type relation and kernel directly."""

from __future__ import annotations

import numpy as np
from irpass.ir import Call, TensorType, TupleType, Type


def type_of(value) -> Type:
    """The IR type of a numpy array or a tuple of them."""
    if isinstance(value, tuple):
        return TupleType(tuple(type_of(v) for v in value))
    return TensorType(value.shape, value.dtype.name)


def infer(call: Call, *types: Type) -> Type:
    """The call's type relation applied to ``types``."""
    return call.op.type_rel(tuple(types), call.attrs)


def run(call: Call, *values):
    """Run the call's kernel on ``values``; its result must have the type the relation gives.

    The kernel runs under the error state the evaluator gives kernels (floating-point
    warnings silenced; see ``irpass.ir.op.Kernel``).
    """
    ty = infer(call, *(type_of(v) for v in values))
    with np.errstate(all="ignore"):
        out = call.op.kernel(tuple(values), call.attrs)
    assert isinstance(out, (np.ndarray, tuple))
    assert type_of(out) == ty
    return out


def t(*shape: int, dtype: str = "float32") -> TensorType:
    """Shorthand for a tensor type."""
    return TensorType(shape, dtype)
