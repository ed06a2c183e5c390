"""Shape values: integer tensors whose elements are known dims, computed ahead of run time.

``shape_of`` of a tensor of type ``Tensor[(n, 128), float32]`` is no constant, but its value
is known all the same: ``[n, 128]``. Exported models compute reshape targets, expand shapes
and ranges from such values (``Shape -> Gather -> Concat -> Reshape``); computed on known
dims, that scaffolding folds away, and a reshape whose target came from ``shape_of`` becomes a
reshape to a symbolic shape. The ONNX importer and FoldConstant both compute shape values
with :func:`eval_shape_call`, and a value that stays symbolic is written as one
``dims_tensor`` call (:func:`as_call`) in place of the scaffolding that computed it.

A shape value is a numpy array of ``dtype=object`` holding ``int``\\ s and
:class:`~irpass.ir.dims.DimExpr`\\ s (an integer constant is an ordinary int array). An op
computes on them only if it is in :data:`SHAPE_KERNELS`: the ops whose kernels move or
combine elements without comparing them (take, concatenate, add, ...) run their own kernel on
the object arrays; the others have a rule of their own here. A comparison answers only what
the prover decides for every value of the size variables (``n == 1`` stays unknown), so a
value is never folded into something the run time might contradict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.dims import (
    DimExpr,
    dim_max,
    dim_min,
    floordiv,
    prove_eq,
    prove_ge,
    prove_gt,
    prove_le,
    prove_lt,
    prove_ne,
)
from ..ir.nodes import Call
from ..ir.op import Op

__all__ = ["SHAPE_KERNELS", "eval_shape_call", "is_shape_value", "as_dims", "as_call"]

#: A rule computing an op on shape values: ``(args, attrs) -> array``, ``None`` when the
#: value cannot be known ahead of run time.
ShapeKernel = Callable[[Sequence[np.ndarray], Attrs], "np.ndarray | None"]


def _own_kernel(name: str) -> ShapeKernel:
    """The op's own kernel, for ops that only move, pick or combine elements with ``+ - *``."""

    def run(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray | None:
        return Op.get(name).kernel(tuple(args), attrs)

    return run


def _elementwise(fn: Callable[[Any, Any], Any]) -> ShapeKernel:
    """A binary op applied element by element after numpy broadcasting; ``fn`` returns
    ``None`` when it cannot know an element."""

    def run(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray | None:
        a, b = np.broadcast_arrays(np.asarray(args[0], dtype=object),
                                   np.asarray(args[1], dtype=object))
        out = np.empty(a.shape, dtype=object)
        for index in np.ndindex(a.shape):
            value = fn(a[index], b[index])
            if value is None:
                return None
            out[index] = value
        return out

    return run


def _divide(a: Any, b: Any) -> Any:
    # integer division truncates toward zero (ONNX's Div, C's /); dims are >= 0, so for a
    # positive divisor that is floor division -- anything else is left to the run time
    if type(b) is not int or b <= 0:
        return None
    if type(a) is int:
        return int(np.trunc(a / b)) if a < 0 else a // b
    return floordiv(a, b)


def _decided(prove: Callable[[Any, Any], bool], disprove: Callable[[Any, Any], bool]
             ) -> Callable[[Any, Any], bool | None]:
    def compare(a: Any, b: Any) -> bool | None:
        if prove(a, b):
            return True
        if disprove(a, b):
            return False
        return None

    return compare


def _cast(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray | None:
    # between integer types a dim keeps its value (sizes fit every integer type used for
    # shapes); a cast to float or bool would need the number itself
    if np.dtype(attrs["dtype"]).kind not in "iu":
        return None
    return np.asarray(args[0], dtype=object).copy()


def _dims_tensor(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    return np.array(list(attrs["dims"]) + [None], dtype=object)[:-1]  # 1-D, objects


def _where(args: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray | None:
    cond = np.asarray(args[0])
    if cond.dtype == object:  # an undecided comparison never gets here: see _elementwise
        return None
    return np.where(cond, np.asarray(args[1], dtype=object), np.asarray(args[2], dtype=object))


#: The ops computed on shape values, by name.
SHAPE_KERNELS: dict[str, ShapeKernel] = {
    **{name: _own_kernel(name) for name in (
        "take", "concatenate", "expand_dims", "squeeze", "strided_slice", "reshape",
        "transpose", "broadcast_to", "tile", "reverse", "add", "subtract", "multiply",
        "negative", "floor_mod", "prod", "sum")},
    "divide": _elementwise(_divide),
    "minimum": _elementwise(lambda a, b: dim_min(a, b)),
    "maximum": _elementwise(lambda a, b: dim_max(a, b)),
    "equal": _elementwise(_decided(prove_eq, prove_ne)),
    "not_equal": _elementwise(_decided(prove_ne, prove_eq)),
    "less": _elementwise(_decided(prove_lt, prove_ge)),
    "less_equal": _elementwise(_decided(prove_le, prove_gt)),
    "greater": _elementwise(_decided(prove_gt, prove_le)),
    "greater_equal": _elementwise(_decided(prove_ge, prove_lt)),
    "cast": _cast,
    "where": _where,
    "dims_tensor": _dims_tensor,
}


def is_shape_value(value: Any) -> bool:
    """Whether ``value`` is a shape value with at least one symbolic element."""
    return (isinstance(value, np.ndarray) and value.dtype == object
            and any(isinstance(d, DimExpr) for d in value.reshape(-1)))


def as_dims(value: np.ndarray) -> list[Any]:
    """The elements of a shape value or of an integer array, as ints and DimExprs."""
    return [d if isinstance(d, DimExpr) else int(d) for d in np.asarray(value).reshape(-1)]


def as_call(value: np.ndarray, dtype: str) -> Call:
    """A shape value as an expression computing it: ``dims_tensor`` of its elements (and a
    ``reshape`` for a value that is not 1-D)."""
    from . import dims_tensor, reshape

    flat = dims_tensor(as_dims(value), dtype)
    return flat if value.ndim == 1 else reshape(flat, tuple(value.shape))


def eval_shape_call(op: Op, args: Sequence[np.ndarray], attrs: Attrs,
                    dtype: str) -> np.ndarray | None:
    """The value of ``op(*args)`` when every arg is a shape value or an integer constant:
    a shape value, an ordinary array of ``dtype`` when every element came out static, or
    ``None`` when the op is not computed on shape values or an element cannot be known."""
    rule = SHAPE_KERNELS.get(op.name)
    if rule is None:
        return None
    try:
        out = rule(args, attrs)
    except (TypeError, ValueError, ArithmeticError):  # e.g. an order the prover cannot tell
        return None
    if out is None:
        return None
    out = np.asarray(out)
    if out.dtype != object:
        return out.astype(dtype, copy=False)
    if any(isinstance(d, DimExpr) for d in out.reshape(-1)):
        return out
    return out.astype(dtype)
