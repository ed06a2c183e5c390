"""Scatter ops: ``scatter_elements`` (ONNX ScatterElements / Scatter) and ``scatter_nd``
(ONNX ScatterND), with TVM Relay's names, layouts and reduction modes.

Both return a copy of ``data`` with ``updates`` written at the given indices; the reduction
says how: ``"update"`` replaces the element, ``"add"``, ``"mul"``, ``"min"`` and ``"max"``
combine it with every update aimed at it. Indices in ``[-n, n)`` are valid for an axis of size
``n`` (negative ones count from the end, as ONNX allows); others fail at run time. Where
several updates hit one element with ``"update"`` (ONNX leaves that undefined), the last one
in row-major order of the updates wins, as in ONNX's reference implementation.

``scatter_nd`` keeps TVM's layout: the index tuples run along the *first* axis of
``indices`` (ONNX puts them on the last). TVM gives both ops the OPAQUE fusion pattern.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.nodes import Call
from ..ir.op import AttrField, OpPattern, attr_choice, attr_int
from ..ir.types import TensorType, Type
from ._common import (
    INT_DTYPES,
    check_dtype,
    known_gt,
    make_call,
    normalize_axis,
    register,
    shapes_may_agree,
    tensor_arg,
)
from .indexing import checked_indices, nd_positions, nd_shape

__all__ = ["scatter_elements", "scatter_nd", "REDUCTIONS"]

#: The reductions both ops take (TVM's names).
REDUCTIONS = ("update", "add", "mul", "min", "max")
_UFUNCS = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _scatter_into(out: np.ndarray, pos: tuple, values: np.ndarray, reduction: str) -> None:
    """Write ``values`` into ``out`` (a fresh C-contiguous array) at the leading-axes
    positions ``pos`` (int arrays of one shape P; ``values`` has shape P + the rest of
    ``out``'s axes)."""
    lead = out.shape[: len(pos)]
    rest = out.shape[len(pos) :]
    arrays = np.broadcast_arrays(*pos)
    lin = np.ravel_multi_index(arrays, lead).reshape(-1)
    vals = values.reshape((lin.size, *rest))
    target = out.reshape((int(np.prod(lead, dtype=np.int64)), *rest))
    if reduction == "update":
        # the last update of each position wins: the first one seen from the end
        _, first_from_end = np.unique(lin[::-1], return_index=True)
        keep = lin.size - 1 - first_from_end
        target[lin[keep]] = vals[keep]
    else:
        _UFUNCS[reduction].at(target, lin, vals)


def _check_updates(data: TensorType, updates: TensorType, shape: tuple, op: str, why: str) -> None:
    if updates.dtype != data.dtype:
        raise TypeError(f"{op}: updates {updates} must have the dtype of data {data}")
    if not shapes_may_agree(updates.shape, shape):
        raise ValueError(f"{op}: updates {updates} must have shape {shape} ({why})")


# -- scatter_elements --------------------------------------------------------------------------


def _scatter_elements_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    op = "scatter_elements"
    data = tensor_arg(arg_types[0], op, "data")
    indices = tensor_arg(arg_types[1], op, "indices")
    updates = tensor_arg(arg_types[2], op, "updates")
    check_dtype(indices, INT_DTYPES, op, "indices")
    if data.ndim == 0:
        raise ValueError(f"{op}: data must have at least one dimension, got {data}")
    if indices.ndim != data.ndim:
        raise ValueError(f"{op}: indices {indices} must have the rank of data {data}")
    axis = normalize_axis(attrs["axis"], data.ndim, op)
    for d, (n, m) in enumerate(zip(indices.shape, data.shape, strict=True)):
        if d != axis and known_gt(n, m):
            raise ValueError(
                f"{op}: indices {indices} is longer than data {data} on axis {d} "
                f"({n} > {m}); only axis {axis} may differ freely"
            )
    _check_updates(data, updates, indices.shape, op, "the shape of indices")
    if data.shape[axis] == 0 and 0 not in indices.shape:
        raise ValueError(f"{op}: cannot scatter {indices} into the empty axis {axis} of {data}")
    return data


def _scatter_elements_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, indices, updates = args
    out = np.array(data, order="C")  # a copy: the inputs are read-only
    if indices.size == 0:
        return out
    axis = normalize_axis(attrs["axis"], data.ndim, "scatter_elements")
    pos = list(np.indices(indices.shape, sparse=True))
    pos[axis] = checked_indices(indices, data.shape[axis], "scatter_elements", f"axis {axis}")
    _scatter_into(out, tuple(pos), updates, attrs["reduction"])
    return out


register(
    "scatter_elements",
    num_inputs=3,
    type_rel=_scatter_elements_rel,
    kernel=_scatter_elements_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(
        AttrField("axis", attr_int, 0, doc="The axis the indices index."),
        AttrField(
            "reduction",
            attr_choice(*REDUCTIONS),
            "update",
            doc="update (replace), add, mul, min or max.",
        ),
    ),
    doc="``data`` with ``updates`` scattered along ``axis`` at ``indices`` (ONNX "
    "ScatterElements).",
)


def scatter_elements(
    data: Any, indices: Any, updates: Any, axis: int = 0, reduction: str = "update"
) -> Call:
    """A copy of ``data`` where, for ``axis=0``, ``out[indices[i][j]][j] = updates[i][j]``
    (and so on for other axes and ranks), combined by ``reduction`` ("update", "add",
    "mul", "min", "max").

    ``indices`` and ``updates`` have one shape, of the rank of ``data`` and at most as long
    on every axis but ``axis``. Indices in ``[-n, n)`` are valid.
    """
    return make_call(
        "scatter_elements", [data, indices, updates], ["data", "indices", "updates"],
        axis=axis, reduction=reduction,
    )


# -- scatter_nd --------------------------------------------------------------------------------


def _scatter_nd_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    op = "scatter_nd"
    data = tensor_arg(arg_types[0], op, "data")
    indices = tensor_arg(arg_types[1], op, "indices")
    updates = tensor_arg(arg_types[2], op, "updates")
    check_dtype(indices, INT_DTYPES, op, "indices")
    depth, shape = nd_shape(data, indices, 0, op)
    _check_updates(
        data, updates, shape, op, f"indices.shape[1:] + data.shape[{depth}:] for index tuples "
        f"of length {depth}"
    )
    for j in range(depth):
        if data.shape[j] == 0 and 0 not in indices.shape:
            raise ValueError(f"{op}: cannot scatter into the empty axis {j} of {data}")
    return data


def _scatter_nd_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, indices, updates = args
    out = np.array(data, order="C")
    if updates.size == 0:
        return out
    # over data seen as (1, X_0, ...): position arrays of shape (1, number of tuples)
    pos = nd_positions(data.shape, indices, 0, "scatter_nd")
    _scatter_into(out.reshape((1, *data.shape)), pos, updates, attrs["mode"])
    return out


register(
    "scatter_nd",
    num_inputs=3,
    type_rel=_scatter_nd_rel,
    kernel=_scatter_nd_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(
        AttrField(
            "mode",
            attr_choice(*REDUCTIONS),
            "update",
            doc="update (replace), add, mul, min or max.",
        ),
    ),
    doc="``data`` with slices ``updates`` written at the index tuples along the first axis of "
    "``indices`` (ONNX ScatterND with the tuples moved first).",
)


def scatter_nd(data: Any, indices: Any, updates: Any, mode: str = "update") -> Call:
    """A copy of ``data`` with ``updates`` written at index tuples (TVM's layout).

    With ``data`` of shape ``(X_0, ..., X_{N-1})`` and ``indices`` of shape
    ``(M, Y_0, ..., Y_{K-1})``, ``updates`` has shape ``(Y_0..Y_{K-1}, X_M..X_{N-1})`` and
    ``out[indices[:, y]] = updates[y]``, combined by ``mode`` ("update", "add", "mul",
    "min", "max"). Indices in ``[-n, n)`` are valid.
    """
    return make_call(
        "scatter_nd", [data, indices, updates], ["data", "indices", "updates"], mode=mode
    )
