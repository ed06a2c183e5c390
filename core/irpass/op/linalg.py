"""``matmul``: numpy's (and ONNX MatMul's) matrix product for tensors of rank >= 1.

Unlike ``nn.dense`` and ``nn.batch_matmul`` (Relay's fixed-rank products with a
transposed weight), ``matmul`` multiplies the last two axes of ``a`` and ``b``
and broadcasts the leading (batch) axes; a 1-D ``a`` is a row vector and a 1-D
``b`` a column vector, and that axis is dropped from the result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.nodes import Call
from ..ir.op import OpPattern
from ..ir.types import TensorType, Type
from ._common import (
    NUMERIC_DTYPES,
    accumulate_dtype,
    broadcast_shapes,
    check_dtype,
    check_same_dtype,
    make_call,
    register,
    result,
    tensor_arg,
)

__all__ = ["matmul"]


def _matmul_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    a = tensor_arg(arg_types[0], "matmul", "a")
    b = tensor_arg(arg_types[1], "matmul", "b")
    dtype = check_same_dtype("matmul", ("a", a), ("b", b))
    check_dtype(a, NUMERIC_DTYPES, "matmul", "a")
    for name, ty in (("a", a), ("b", b)):
        if ty.ndim == 0:
            raise ValueError(f"matmul: {name} must have at least 1 dimension, got {ty}")
    a_shape = a.shape if a.ndim > 1 else (1, *a.shape)
    b_shape = b.shape if b.ndim > 1 else (*b.shape, 1)
    if a_shape[-1] != b_shape[-2]:
        raise ValueError(
            f"matmul: the inner dimensions differ: a {a} has {a_shape[-1]} columns but "
            f"b {b} has {b_shape[-2]} rows"
        )
    batch = broadcast_shapes("matmul", ("a batch", a_shape[:-2]), ("b batch", b_shape[:-2]))
    rows = (a_shape[-2],) if a.ndim > 1 else ()
    cols = (b_shape[-1],) if b.ndim > 1 else ()
    return TensorType(batch + rows + cols, dtype)


def _matmul_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    a, b = args
    wide = accumulate_dtype(a.dtype.name)
    out = np.matmul(a.astype(wide, copy=False), b.astype(wide, copy=False))
    return result(out, a.dtype)


register(
    "matmul",
    num_inputs=2,
    type_rel=_matmul_rel,
    kernel=_matmul_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Matrix product of the last two axes with broadcast batch axes (numpy.matmul).",
)


def matmul(a: Any, b: Any) -> Call:
    """``a @ b`` with numpy's rules (ONNX MatMul): batch axes broadcast, 1-D operands
    are promoted to a matrix and the added axis is dropped again."""
    return make_call("matmul", [a, b], ["a", "b"])
