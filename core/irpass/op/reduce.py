"""Reductions: ``sum``, ``mean``, ``max``, ``min`` and ``prod``.

All take Relay's attributes: ``axis`` (None or an empty list: every axis;
an int or a tuple, negatives counted from the end), ``keepdims`` (keep
reduced axes with size 1) and ``exclude`` (reduce over the axes *not*
listed; ignored when ``axis`` is None or empty, as in Relay).

The result keeps the input dtype. numpy upcasts integer sums and products;
here they wrap around in the input dtype as Relay's would. An integer
``mean`` is the sum divided by the count, truncated toward zero. ``max``,
``min`` and ``mean`` refuse to reduce over zero elements (there is no value
to return); ``sum`` and ``prod`` give 0 and 1.

The builders ``sum``, ``max`` and ``min`` shadow Python builtins inside this
module only, as in Relay.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.nodes import Call
from ..ir.op import AttrField, OpPattern, attr_bool, attr_optional_ints
from ..ir.types import TensorType, Type
from ._common import (
    ALL_DTYPES,
    INT_DTYPES,
    NUMERIC_DTYPES,
    accumulate_dtype,
    check_dtype,
    make_call,
    normalize_axes,
    register,
    result,
    tensor_arg,
)

__all__ = ["sum", "mean", "max", "min", "prod", "reduce_axes"]


def reduce_axes(
    ndim: int, axis: tuple[int, ...] | None, exclude: bool, op: str = "reduce"
) -> tuple[int, ...]:
    """The sorted, non-negative axes a reduction with these attributes reduces over.

    ``axis`` None or empty means every axis (also with ``exclude``), as in Relay.
    """
    if not axis:
        return tuple(range(ndim))
    axes = normalize_axes(axis, ndim, op)
    if exclude:
        return tuple(a for a in range(ndim) if a not in axes)
    return tuple(sorted(axes))


def _reduce_rel(name: str, allowed: frozenset[str], needs_elements: bool):
    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types[0], name, "data")
        check_dtype(data, allowed, name, "data")
        axes = reduce_axes(data.ndim, attrs["axis"], attrs["exclude"], name)
        if needs_elements:
            for a in axes:
                if data.shape[a] == 0:
                    raise ValueError(
                        f"{name}: cannot reduce over axis {a} of size 0 in {data} "
                        "(the result would have no value)"
                    )
        if attrs["keepdims"]:
            shape = tuple(1 if i in axes else d for i, d in enumerate(data.shape))
        else:
            shape = tuple(d for i, d in enumerate(data.shape) if i not in axes)
        return TensorType(shape, data.dtype)

    return rel


def _reduce_kernel(fn: Callable[[np.ndarray, tuple[int, ...], bool], Any]):
    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        x = args[0]
        axes = reduce_axes(x.ndim, attrs["axis"], attrs["exclude"])
        return result(fn(x, axes, attrs["keepdims"]), x.dtype)

    return kernel


def _sum(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> Any:
    return np.sum(x, axis=axes, keepdims=keepdims, dtype=accumulate_dtype(x.dtype.name))


def _prod(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> Any:
    return np.prod(x, axis=axes, keepdims=keepdims, dtype=accumulate_dtype(x.dtype.name))


def _max(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> Any:
    return np.max(x, axis=axes, keepdims=keepdims)


def _min(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> Any:
    return np.min(x, axis=axes, keepdims=keepdims)


def _mean(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> Any:
    if x.dtype.name not in INT_DTYPES:
        return np.mean(x, axis=axes, keepdims=keepdims, dtype=accumulate_dtype(x.dtype.name))
    count = 1
    for a in axes:
        count *= x.shape[a]
    wide = np.uint64 if x.dtype.kind == "u" else np.int64
    total = np.sum(x, axis=axes, keepdims=keepdims, dtype=wide)
    # floor division of the magnitude, sign restored: truncation toward zero
    return np.sign(total) * (np.abs(total) // count)


_ATTRS = (
    AttrField("axis", attr_optional_ints, None, doc="Axes to reduce; None: all."),
    AttrField("keepdims", attr_bool, False, doc="Keep reduced axes with size 1."),
    AttrField("exclude", attr_bool, False, doc="Reduce over the axes not in ``axis``."),
)

_REDUCTIONS = {
    "sum": (_sum, NUMERIC_DTYPES, False, "Sum over the given axes."),
    "prod": (_prod, NUMERIC_DTYPES, False, "Product over the given axes."),
    "mean": (_mean, NUMERIC_DTYPES, True, "Arithmetic mean over the given axes."),
    "max": (_max, ALL_DTYPES, True, "Maximum over the given axes."),
    "min": (_min, ALL_DTYPES, True, "Minimum over the given axes."),
}

for _name, (_fn, _allowed, _needs, _doc) in _REDUCTIONS.items():
    register(
        _name,
        num_inputs=1,
        type_rel=_reduce_rel(_name, _allowed, _needs),
        kernel=_reduce_kernel(_fn),
        pattern=OpPattern.COMM_REDUCE,
        attrs=_ATTRS,
        doc=_doc,
    )


def _reduce_call(name: str, data: Any, axis: Any, keepdims: bool, exclude: bool) -> Call:
    return make_call(name, [data], ["data"], axis=axis, keepdims=keepdims, exclude=exclude)


def sum(data: Any, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> Call:  # noqa: A001
    """The sum of ``data`` over ``axis`` (None: all axes)."""
    return _reduce_call("sum", data, axis, keepdims, exclude)


def mean(data: Any, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> Call:
    """The mean of ``data`` over ``axis`` (None: all axes)."""
    return _reduce_call("mean", data, axis, keepdims, exclude)


def max(data: Any, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> Call:  # noqa: A001
    """The maximum of ``data`` over ``axis`` (None: all axes)."""
    return _reduce_call("max", data, axis, keepdims, exclude)


def min(data: Any, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> Call:  # noqa: A001
    """The minimum of ``data`` over ``axis`` (None: all axes)."""
    return _reduce_call("min", data, axis, keepdims, exclude)


def prod(data: Any, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> Call:
    """The product of ``data`` over ``axis`` (None: all axes)."""
    return _reduce_call("prod", data, axis, keepdims, exclude)
