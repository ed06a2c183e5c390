"""Reductions: ``sum``, ``mean``, ``max``, ``min``, ``prod``, and the index
reductions ``argmax`` and ``argmin``.

All take Relay's attributes: ``axis`` (None or an empty list: every axis;
an int or a tuple, negatives counted from the end), ``keepdims`` (keep
reduced axes with size 1) and ``exclude`` (reduce over the axes *not*
listed; ignored when ``axis`` is None or empty, as in Relay).

The result keeps the input dtype. numpy upcasts integer sums and products;
here they wrap around in the input dtype as Relay's would. An integer
``mean`` is the sum divided by the count, truncated toward zero. Over zero
elements each reduction gives its identity, as Relay's initial values do:
``sum`` 0, ``prod`` 1, ``max`` -inf (the dtype's minimum for integers, False
for bool), ``min`` +inf (the maximum, True); a float ``mean`` gives NaN and an
integer one is refused (there is no value to return).

``argmax``/``argmin`` give the index of the first (``select_last_index``: the
last) extreme element, as int64 (Relay's are int32; int64 is what ONNX and
numpy use, and it never overflows). Over several axes the index counts in
the row-major order of the reduced axes. NaN counts as the extreme, as in
numpy. They refuse to reduce over zero elements.

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

__all__ = ["sum", "mean", "max", "min", "prod", "argmax", "argmin", "reduce_axes"]


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


def _reduced_shape(data: TensorType, axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(data.shape))
    return tuple(d for i, d in enumerate(data.shape) if i not in axes)


def _check_elements(name: str, data: TensorType, axes: tuple[int, ...]) -> None:
    for a in axes:
        if data.shape[a] == 0:
            raise ValueError(
                f"{name}: cannot reduce over axis {a} of size 0 in {data} "
                "(the result would have no value)"
            )


def _reduce_rel(name: str, allowed: frozenset[str], needs_elements: frozenset[str]):
    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types[0], name, "data")
        check_dtype(data, allowed, name, "data")
        axes = reduce_axes(data.ndim, attrs["axis"], attrs["exclude"], name)
        if data.dtype in needs_elements:
            _check_elements(name, data, axes)
        return TensorType(_reduced_shape(data, axes, attrs["keepdims"]), data.dtype)

    return rel


def _reduce_kernel(fn: Callable[[np.ndarray, tuple[int, ...], bool], Any]):
    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        x = args[0]
        axes = reduce_axes(x.ndim, attrs["axis"], attrs["exclude"])
        return result(fn(x, axes, attrs["keepdims"]), x.dtype)

    return kernel


def _empty(x: np.ndarray, axes: tuple[int, ...]) -> bool:
    return any(x.shape[a] == 0 for a in axes)


def _lowest(dtype: np.dtype) -> Any:
    """The identity of ``max``: -inf, or the dtype's minimum (False for bool)."""
    if dtype.kind == "f":
        return -np.inf
    return False if dtype.kind == "b" else np.iinfo(dtype).min


def _highest(dtype: np.dtype) -> Any:
    """The identity of ``min``: +inf, or the dtype's maximum (True for bool)."""
    if dtype.kind == "f":
        return np.inf
    return True if dtype.kind == "b" else np.iinfo(dtype).max


def _sum(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> Any:
    return np.sum(x, axis=axes, keepdims=keepdims, dtype=accumulate_dtype(x.dtype.name))


def _prod(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> Any:
    return np.prod(x, axis=axes, keepdims=keepdims, dtype=accumulate_dtype(x.dtype.name))


def _max(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> Any:
    if _empty(x, axes):
        return np.max(x, axis=axes, keepdims=keepdims, initial=_lowest(x.dtype))
    return np.max(x, axis=axes, keepdims=keepdims)


def _min(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> Any:
    if _empty(x, axes):
        return np.min(x, axis=axes, keepdims=keepdims, initial=_highest(x.dtype))
    return np.min(x, axis=axes, keepdims=keepdims)


def _mean(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> Any:
    if _empty(x, axes):  # float only (the relation refuses integers): 0 / 0
        return np.full(np.sum(x, axis=axes, keepdims=keepdims).shape, np.nan)
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

_NONE: frozenset[str] = frozenset()
_REDUCTIONS = {
    "sum": (_sum, NUMERIC_DTYPES, _NONE, "Sum over the given axes (0 over no elements)."),
    "prod": (_prod, NUMERIC_DTYPES, _NONE, "Product over the given axes (1 over no elements)."),
    "mean": (
        _mean,
        NUMERIC_DTYPES,
        INT_DTYPES,
        "Arithmetic mean over the given axes (NaN over no elements; integers refuse that).",
    ),
    "max": (
        _max,
        ALL_DTYPES,
        _NONE,
        "Maximum over the given axes (-inf or the dtype's minimum over no elements).",
    ),
    "min": (
        _min,
        ALL_DTYPES,
        _NONE,
        "Minimum over the given axes (+inf or the dtype's maximum over no elements).",
    ),
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


# -- argmax, argmin ----------------------------------------------------------------------------


def _arg_rel(name: str):
    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types[0], name, "data")
        check_dtype(data, ALL_DTYPES, name, "data")
        axes = reduce_axes(data.ndim, attrs["axis"], attrs["exclude"], name)
        _check_elements(name, data, axes)
        return TensorType(_reduced_shape(data, axes, attrs["keepdims"]), "int64")

    return rel


def _arg_kernel(fn: Callable[..., np.ndarray]):
    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        x = args[0]
        axes = reduce_axes(x.ndim, attrs["axis"], attrs["exclude"])
        kept = [a for a in range(x.ndim) if a not in axes]
        # the reduced axes last, flattened into one: the index counts in their row-major order
        flat = np.transpose(x, kept + list(axes)).reshape(
            tuple(x.shape[a] for a in kept) + (-1,)
        )
        if attrs["select_last_index"]:
            n = flat.shape[-1]
            idx = (n - 1) - fn(flat[..., ::-1], axis=-1)
        else:
            idx = fn(flat, axis=-1)
        shape = tuple(1 if a in axes else d for a, d in enumerate(x.shape))
        return result(idx.reshape(shape) if attrs["keepdims"] else idx, "int64")

    return kernel


_ARG_ATTRS = (
    *_ATTRS,
    AttrField(
        "select_last_index",
        attr_bool,
        False,
        doc="On ties, the index of the last extreme element instead of the first.",
    ),
)

for _name, _fn, _doc in (
    ("argmax", np.argmax, "Index (int64) of the maximum over the given axes."),
    ("argmin", np.argmin, "Index (int64) of the minimum over the given axes."),
):
    register(
        _name,
        num_inputs=1,
        type_rel=_arg_rel(_name),
        kernel=_arg_kernel(_fn),
        pattern=OpPattern.COMM_REDUCE,
        attrs=_ARG_ATTRS,
        doc=_doc,
    )


def argmax(
    data: Any,
    axis: Any = None,
    keepdims: bool = False,
    exclude: bool = False,
    select_last_index: bool = False,
) -> Call:
    """The index (int64) of the maximum of ``data`` over ``axis`` (None: all axes, the
    index into the flattened tensor)."""
    return make_call(
        "argmax", [data], ["data"], axis=axis, keepdims=keepdims, exclude=exclude,
        select_last_index=select_last_index,
    )


def argmin(
    data: Any,
    axis: Any = None,
    keepdims: bool = False,
    exclude: bool = False,
    select_last_index: bool = False,
) -> Call:
    """The index (int64) of the minimum of ``data`` over ``axis`` (None: all axes, the
    index into the flattened tensor)."""
    return make_call(
        "argmin", [data], ["data"], axis=axis, keepdims=keepdims, exclude=exclude,
        select_last_index=select_last_index,
    )
