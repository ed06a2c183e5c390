"""Shape-changing (injective) ops: ``reshape``, ``reverse_reshape``,
``transpose``, ``concatenate``, ``split``, ``squeeze``, ``expand_dims``,
``layout_transform``, ``broadcast_to``, ``tile``, and the reordering ops ``reverse``,
``reverse_sequence`` and ``trilu``.

``reshape`` understands Relay's special values in ``newshape``:

* ``0`` copies the matching input dimension (with ``allowzero`` it is a literal 0);
* ``-1`` is inferred from the remaining size (at most one);
* ``-2`` copies all remaining input dimensions;
* ``-3`` merges the next two input dimensions into one;
* ``-4`` splits the next input dimension into the two values that follow it
  (one of which may be ``-1``).

"Matching" is positional: every value except ``-2``/``-3``/``-4`` consumes
one input dimension. ``reverse_reshape`` applies the same rules from the
right (Relay's ``reverse_reshape``): ``(10, 5, 4)`` with ``(-1, 0)`` gives
``(50, 4)`` where ``reshape`` gives ``(40, 5)``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.dims import Dim, divide_exact
from ..ir.nodes import Call
from ..ir.op import (
    AttrField,
    Op,
    OpPattern,
    attr_bool,
    attr_dims,
    attr_int,
    attr_optional_ints,
)
from ..ir.types import TensorType, TupleType, Type
from ._common import (
    INT_DTYPES,
    as_tuple_expr,
    attr_int_or_ints,
    broadcast_shapes,
    check_dtype,
    dims_may_agree,
    known_gt,
    make_call,
    match_dims,
    normalize_axes,
    normalize_axis,
    register,
    shapes_may_agree,
    static_dim,
    tensor_arg,
    tuple_fields,
)

__all__ = [
    "reshape",
    "reverse_reshape",
    "transpose",
    "concatenate",
    "split",
    "squeeze",
    "expand_dims",
    "layout_transform",
    "broadcast_to",
    "tile",
    "infer_reshape",
    "reverse",
    "reverse_sequence",
    "trilu",
]


def _prod(dims: Sequence[Dim]) -> Dim:
    n: Dim = 1
    for d in dims:
        n *= d
    return n


# -- reshape -----------------------------------------------------------------------------------


def infer_reshape(
    ishape: tuple[Dim, ...], newshape: Sequence[Dim], allowzero: bool = False, op: str = "reshape"
) -> tuple[Dim, ...]:
    """The output shape of reshaping ``ishape`` to ``newshape`` (Relay's special values).

    Symbolic dims work in both: a symbolic value of ``newshape`` is a size (never a
    special value), a ``-1`` is the exact quotient of the sizes (``divide_exact``;
    ``ValueError`` when it cannot be found), and element counts that cannot be
    compared statically are assumed equal (the run time checks them).
    """
    out: list[Dim] = []
    infer_at = -1
    src = 0  # the next input dimension a value consumes
    i = 0

    def need(count: int, value: int) -> None:
        if src + count > len(ishape):
            raise ValueError(
                f"{op}: newshape {tuple(newshape)}: value {value} at position {i} needs "
                f"input dimension {src + count - 1} but the input {ishape} has only "
                f"{len(ishape)} dimensions"
            )

    while i < len(newshape):
        v = newshape[i]
        if type(v) is not int or v > 0 or (v == 0 and allowzero):
            out.append(v)
            src += 1
        elif v == 0:
            need(1, v)
            out.append(ishape[src])
            src += 1
        elif v == -1:
            if infer_at >= 0:
                raise ValueError(f"{op}: newshape {tuple(newshape)} has more than one -1")
            infer_at = len(out)
            out.append(1)
            src += 1
        elif v == -2:
            out.extend(ishape[src:])
            src = len(ishape)
        elif v == -3:
            need(2, v)
            out.append(ishape[src] * ishape[src + 1])
            src += 2
        elif v == -4:
            if i + 2 >= len(newshape):
                raise ValueError(
                    f"{op}: newshape {tuple(newshape)}: -4 at position {i} must be followed "
                    "by the two dimensions to split into"
                )
            need(1, v)
            whole = ishape[src]
            d1, d2 = newshape[i + 1], newshape[i + 2]
            if d1 == -1 and d2 == -1:
                raise ValueError(
                    f"{op}: newshape {tuple(newshape)}: -4 split dims cannot both be -1"
                )
            if any(type(d) is int and (d < -1 or d == 0) for d in (d1, d2)):
                raise ValueError(
                    f"{op}: newshape {tuple(newshape)}: -4 split dims must be positive or -1, "
                    f"got ({d1}, {d2})"
                )
            known = d2 if d1 == -1 else d1
            part = divide_exact(whole, known) if d1 == -1 or d2 == -1 else known
            if part is None:
                raise ValueError(
                    f"{op}: newshape {tuple(newshape)}: cannot split input dimension {src} of "
                    f"size {whole} into ({d1}, {d2})"
                )
            d1 = part if d1 == -1 else d1
            d2 = part if d2 == -1 else d2
            if not dims_may_agree(d1 * d2, whole):
                raise ValueError(
                    f"{op}: newshape {tuple(newshape)}: cannot split input dimension {src} of "
                    f"size {whole} into ({d1}, {d2})"
                )
            out.extend((d1, d2))
            src += 1
            i += 2
        else:
            raise ValueError(
                f"{op}: newshape {tuple(newshape)} has unsupported value {v} at position {i} "
                "(allowed: positive sizes, 0, -1, -2, -3, -4)"
            )
        i += 1

    total = _prod(ishape)
    if infer_at >= 0:
        rest = _prod(out[:infer_at] + out[infer_at + 1 :])
        if type(total) is int and type(rest) is int:
            if rest == 0 or total % rest:
                raise ValueError(
                    f"{op}: cannot infer the -1 in newshape {tuple(newshape)} for input shape "
                    f"{ishape} ({total} elements)"
                )
            out[infer_at] = total // rest
        else:
            quotient = divide_exact(total, rest)
            if quotient is None:
                raise ValueError(
                    f"{op}: cannot infer the -1 in newshape {tuple(newshape)} for input shape "
                    f"{ishape}: {total} elements are not a multiple of {rest} for every value "
                    "of the size variables (give the size instead of -1)"
                )
            out[infer_at] = quotient
    count = _prod(out)
    if count != total and not dims_may_agree(count, total):
        raise ValueError(
            f"{op}: cannot reshape {ishape} ({total} elements) to newshape {tuple(newshape)} "
            f"= {tuple(out)} ({_prod(out)} elements)"
        )
    return tuple(out)


def _reverse_newshape(newshape: Sequence[int]) -> list[int]:
    """``newshape`` read right to left; a ``-4, a, b`` group becomes ``-4, b, a``."""
    groups: list[tuple[int, ...]] = []
    i = 0
    while i < len(newshape):
        if newshape[i] == -4:
            if i + 2 >= len(newshape):
                raise ValueError(
                    f"reverse_reshape: newshape {tuple(newshape)}: -4 at position {i} must be "
                    "followed by the two dimensions to split into"
                )
            a, b = newshape[i + 1 : i + 3]
            groups.append((-4, b, a))
            i += 3
        else:
            groups.append((newshape[i],))
            i += 1
    return [v for g in reversed(groups) for v in g]


def _reshape_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "reshape", "data")
    return TensorType(infer_reshape(data.shape, attrs["newshape"], attrs["allowzero"]), data.dtype)


def _reverse_reshape_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "reverse_reshape", "data")
    newshape = attrs["newshape"]
    try:
        shape = infer_reshape(data.shape[::-1], _reverse_newshape(newshape), op="reverse_reshape")
    except ValueError as err:
        raise ValueError(f"{err} (applied right to left to {newshape})") from None
    return TensorType(shape[::-1], data.dtype)


def _reshape_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    out = infer_reshape(args[0].shape, attrs["newshape"], attrs["allowzero"])
    return np.reshape(args[0], out)


def _reverse_reshape_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    x = args[0]
    out = infer_reshape(x.shape[::-1], _reverse_newshape(attrs["newshape"]), op="reverse_reshape")
    return np.reshape(x, out[::-1])


register(
    "reshape",
    num_inputs=1,
    type_rel=_reshape_rel,
    kernel=_reshape_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(
        AttrField("newshape", attr_dims, doc="The new shape, with Relay's special values."),
        AttrField("allowzero", attr_bool, False, doc="Treat 0 as a literal size."),
    ),
    doc="Reshape to ``newshape`` (special values 0, -1, -2, -3, -4 as in Relay).",
)
register(
    "reverse_reshape",
    num_inputs=1,
    type_rel=_reverse_reshape_rel,
    kernel=_reverse_reshape_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(AttrField("newshape", attr_dims, doc="The new shape, read right to left."),),
    doc="Reshape with the special values of ``newshape`` applied right to left.",
)


def reshape(data: Any, newshape: Any, allowzero: bool = False) -> Call:
    """``data`` reshaped to ``newshape`` (Relay's special values 0, -1, -2, -3, -4)."""
    return make_call("reshape", [data], ["data"], newshape=newshape, allowzero=allowzero)


def reverse_reshape(data: Any, newshape: Any) -> Call:
    """Like :func:`reshape` with the special values inferred from right to left."""
    return make_call("reverse_reshape", [data], ["data"], newshape=newshape)


# -- transpose ---------------------------------------------------------------------------------


def _perm(ndim: int, axes: tuple[int, ...] | None) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(ndim - 1, -1, -1))
    if len(axes) != ndim:
        raise ValueError(f"transpose: axes {axes} must list each of the {ndim} axes once")
    return normalize_axes(axes, ndim, "transpose", "axes")


def _transpose_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "transpose", "data")
    perm = _perm(data.ndim, attrs["axes"])
    return TensorType(tuple(data.shape[p] for p in perm), data.dtype)


def _transpose_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    return np.transpose(args[0], _perm(args[0].ndim, attrs["axes"]))


register(
    "transpose",
    num_inputs=1,
    type_rel=_transpose_rel,
    kernel=_transpose_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(AttrField("axes", attr_optional_ints, None, doc="The permutation; None reverses."),),
    doc="Permute the axes (``axes=None`` reverses them).",
)


def transpose(data: Any, axes: Any = None) -> Call:
    """``data`` with its axes permuted by ``axes`` (None: reversed)."""
    return make_call("transpose", [data], ["data"], axes=axes)


# -- concatenate and split ---------------------------------------------------------------------


def _concatenate_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    fields = tuple_fields(arg_types[0], "concatenate", "data")
    if not fields:
        raise ValueError("concatenate: data must hold at least one tensor, got an empty tuple")
    first = fields[0]
    axis = normalize_axis(attrs["axis"], first.ndim, "concatenate") if first.ndim else None
    if axis is None:
        raise ValueError(f"concatenate: data[0] is a scalar ({first}); cannot concatenate scalars")
    total: Dim = 0
    shape = list(first.shape)
    for i, f in enumerate(fields):
        if f.dtype != first.dtype:
            raise TypeError(
                f"concatenate: data[{i}] has dtype {f.dtype} but data[0] has {first.dtype}"
            )
        if f.ndim != first.ndim:
            raise ValueError(f"concatenate: data[{i}] is {f} but data[0] is {first}: ranks differ")
        for d in range(first.ndim):
            if d != axis and f.shape[d] != shape[d]:
                if not dims_may_agree(f.shape[d], shape[d]):
                    raise ValueError(
                        f"concatenate: data[{i}] has shape {f.shape} but data[0] has "
                        f"{first.shape}; they must agree except on axis {axis}"
                    )
                # undecidable: a static size is kept, the run time checks the rest
                shape[d] = match_dims("concatenate", f"dimension {d}", shape[d], f.shape[d])
        total = total + f.shape[axis]
    shape[axis] = total
    return TensorType(tuple(shape), first.dtype)


def _concatenate_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    return np.concatenate(tuple(args[0]), axis=attrs["axis"])


register(
    "concatenate",
    num_inputs=1,
    type_rel=_concatenate_rel,
    kernel=_concatenate_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(AttrField("axis", attr_int, 0, doc="The axis to join along."),),
    doc="Join the tensors of a tuple along ``axis``.",
)


def concatenate(data: Any, axis: int = 0) -> Call:
    """Join a list (or tuple expression) of tensors along ``axis``."""
    return Call(Op.get("concatenate"), [as_tuple_expr(data, "concatenate")], {"axis": axis})


def _split_bounds(size: Dim, spec: int | tuple[int, ...]) -> list[Dim]:
    """Start offsets of the pieces, plus ``size`` at the end."""
    if isinstance(spec, int):
        if type(size) is not int:
            # the relation checked that spec divides size
            part = divide_exact(size, spec)
            return [part * k for k in range(spec + 1)]  # type: ignore[operator]
        return [size * k // spec for k in range(spec + 1)]
    return [0, *spec, size]


def _split_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "split", "data")
    if data.ndim == 0:
        raise ValueError(f"split: data must have at least one dimension, got {data}")
    axis = normalize_axis(attrs["axis"], data.ndim, "split")
    size = data.shape[axis]
    spec = attrs["indices_or_sections"]
    if isinstance(spec, int):
        if spec < 1:
            raise ValueError(f"split: indices_or_sections must be >= 1 sections, got {spec}")
        if type(size) is not int:
            if divide_exact(size, spec) is None:
                raise ValueError(
                    f"split: axis {axis} has the symbolic size {size}, which is not a multiple "
                    f"of {spec} for every value of its size variables: cannot split it into "
                    f"{spec} equal sections"
                )
        elif size % spec:
            raise ValueError(
                f"split: axis {axis} of size {size} cannot be split into {spec} equal sections"
            )
    else:
        prev = 0
        for k, idx in enumerate(spec):
            # a symbolic size: an index that provably exceeds it is an error, the run
            # time checks the others
            if idx < prev or known_gt(idx, size):
                raise ValueError(
                    f"split: indices_or_sections {spec}: index {idx} at position {k} must be "
                    f"non-decreasing and within [0, {size}] (axis {axis})"
                )
            prev = idx
    bounds = _split_bounds(size, spec)
    fields = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        shape = list(data.shape)
        shape[axis] = hi - lo
        fields.append(TensorType(tuple(shape), data.dtype))
    return TupleType(tuple(fields))


def _split_kernel(args: tuple, attrs: Attrs) -> tuple[np.ndarray, ...]:
    x = args[0]
    axis = normalize_axis(attrs["axis"], x.ndim, "split")
    bounds = _split_bounds(x.shape[axis], attrs["indices_or_sections"])
    index: list[Any] = [slice(None)] * x.ndim
    pieces = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        index[axis] = slice(lo, hi)
        pieces.append(x[tuple(index)])
    return tuple(pieces)


register(
    "split",
    num_inputs=1,
    type_rel=_split_rel,
    kernel=_split_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(
        AttrField(
            "indices_or_sections",
            attr_int_or_ints,
            doc="An int: that many equal sections; a tuple: the indices to split at.",
        ),
        AttrField("axis", attr_int, 0, doc="The axis to split."),
    ),
    doc="Split along ``axis`` into equal sections or at given indices (a tuple result).",
)


def split(data: Any, indices_or_sections: Any, axis: int = 0) -> Call:
    """Split ``data`` along ``axis``; the call has a tuple type (index it with ``[i]``)."""
    return make_call("split", [data], ["data"], indices_or_sections=indices_or_sections, axis=axis)


# -- squeeze and expand_dims -------------------------------------------------------------------


def _squeeze_axes(shape: tuple[Dim, ...], axis: tuple[int, ...] | None) -> tuple[int, ...]:
    """The axes squeeze drops.

    As in Relax: without ``axis`` the rank of the result depends on which dims are 1,
    so a symbolic dim is an error naming it; a symbolic dim named in ``axis`` is taken
    to be 1 (the kernel checks it at run time) unless it provably is not.
    """
    if axis is None:
        for d in shape:
            if type(d) is not int:
                static_dim("squeeze", "with axis=None (give axis), each dim", d)
        return tuple(i for i, d in enumerate(shape) if d == 1)
    axes = normalize_axes(axis, len(shape), "squeeze")
    for a in axes:
        d = shape[a]
        if d != 1 and (type(d) is int or not dims_may_agree(d, 1)):
            raise ValueError(f"squeeze: axis {a} has size {d} in shape {shape}, not 1")
    return axes


def _squeeze_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "squeeze", "data")
    drop = set(_squeeze_axes(data.shape, attrs["axis"]))
    return TensorType(tuple(d for i, d in enumerate(data.shape) if i not in drop), data.dtype)


def _squeeze_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    return np.squeeze(args[0], axis=_squeeze_axes(args[0].shape, attrs["axis"]))


register(
    "squeeze",
    num_inputs=1,
    type_rel=_squeeze_rel,
    kernel=_squeeze_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(AttrField("axis", attr_optional_ints, None, doc="Axes to drop; None: all of size 1."),),
    doc="Remove axes of size 1 (the given ones, or all).",
)


def squeeze(data: Any, axis: Any = None) -> Call:
    """``data`` without the size-1 axes ``axis`` (None: every size-1 axis)."""
    return make_call("squeeze", [data], ["data"], axis=axis)


def _expand_shape(shape: tuple[int, ...], axis: int, num_newaxis: int) -> tuple[int, ...]:
    ndim = len(shape)
    if not -ndim - 1 <= axis <= ndim:
        raise ValueError(
            f"expand_dims: axis {axis} is out of range [{-ndim - 1}, {ndim}] for a {ndim}-D tensor"
        )
    if num_newaxis < 0:
        raise ValueError(f"expand_dims: num_newaxis must be >= 0, got {num_newaxis}")
    pos = axis + ndim + 1 if axis < 0 else axis
    return shape[:pos] + (1,) * num_newaxis + shape[pos:]


def _expand_dims_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "expand_dims", "data")
    return TensorType(_expand_shape(data.shape, attrs["axis"], attrs["num_newaxis"]), data.dtype)


def _expand_dims_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    x = args[0]
    return np.reshape(x, _expand_shape(x.shape, attrs["axis"], attrs["num_newaxis"]))


register(
    "expand_dims",
    num_inputs=1,
    type_rel=_expand_dims_rel,
    kernel=_expand_dims_kernel,
    pattern=OpPattern.BROADCAST,
    attrs=(
        AttrField("axis", attr_int, doc="Where the new axes go (negative: from the end)."),
        AttrField("num_newaxis", attr_int, 1, doc="How many size-1 axes to insert."),
    ),
    doc="Insert ``num_newaxis`` axes of size 1 at ``axis``.",
)


def expand_dims(data: Any, axis: int, num_newaxis: int = 1) -> Call:
    """``data`` with ``num_newaxis`` size-1 axes inserted at ``axis``."""
    return make_call("expand_dims", [data], ["data"], axis=axis, num_newaxis=num_newaxis)


# -- layout_transform --------------------------------------------------------------------------

_PRIMAL_LAYOUT = re.compile(r"[A-Z]+")


def _attr_primal_layout(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{where} must be a layout string, got {value!r}")
    if not _PRIMAL_LAYOUT.fullmatch(value) or len(set(value)) != len(value):
        raise ValueError(
            f"{where}: unsupported layout {value!r}; only layouts made of distinct upper-case "
            "axis letters are supported (e.g. NCHW, NHWC, OIHW, HWIO), not split axes "
            "such as NCHW16c"
        )
    return value


def _layout_transform_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "layout_transform", "data")
    src, dst = attrs["src_layout"], attrs["dst_layout"]
    if sorted(src) != sorted(dst):
        raise ValueError(
            f"layout_transform: src_layout {src!r} and dst_layout {dst!r} must have the "
            "same axis letters"
        )
    if len(src) != data.ndim:
        raise ValueError(
            f"layout_transform: src_layout {src!r} has {len(src)} axes but data is {data}"
        )
    return TensorType(tuple(data.shape[src.index(c)] for c in dst), data.dtype)


def _layout_transform_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    src, dst = attrs["src_layout"], attrs["dst_layout"]
    return np.transpose(args[0], [src.index(c) for c in dst])


register(
    "layout_transform",
    num_inputs=1,
    type_rel=_layout_transform_rel,
    kernel=_layout_transform_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(
        AttrField("src_layout", _attr_primal_layout, doc="The layout of the input."),
        AttrField("dst_layout", _attr_primal_layout, doc="The layout of the output."),
    ),
    doc="Reorder axes from ``src_layout`` to ``dst_layout`` (e.g. NCHW to NHWC).",
)


def layout_transform(data: Any, src_layout: str, dst_layout: str) -> Call:
    """``data`` with its axes reordered from ``src_layout`` to ``dst_layout``."""
    return make_call(
        "layout_transform", [data], ["data"], src_layout=src_layout, dst_layout=dst_layout
    )


# -- broadcast_to and tile ---------------------------------------------------------------------


def _attr_sizes(value: Any, where: str) -> tuple[Dim, ...]:
    """Sizes: ints >= 0 or symbolic dims."""
    vals = attr_dims(value, where)
    for v in vals:
        if type(v) is int and v < 0:
            raise ValueError(f"{where} values must be >= 0, got {value!r}")
    return vals


_INT = {int}


def _broadcast_to_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "broadcast_to", "data")
    shape = attrs["shape"]
    # broadcast_shapes takes symbolic dims too: equal to the target is the common case
    got = broadcast_shapes("broadcast_to", ("data", data.shape), ("shape", shape))
    if got == shape:
        return TensorType(shape, data.dtype)
    if {*map(type, data.shape), *map(type, shape)} <= _INT:
        raise ValueError(
            f"broadcast_to: data {data} cannot be broadcast to shape {shape}: numpy's "
            f"broadcast of the two is {got} (broadcast_to never grows the target shape)"
        )
    lead = len(shape) - data.ndim
    if lead < 0:
        raise ValueError(
            f"broadcast_to: data {data} has more dimensions than the target shape {shape}"
        )
    out = list(shape)
    for k, d in enumerate(data.shape):
        # each dim of data is 1 or the target's (numpy's broadcast_to never grows the
        # target); a symbolic dim against another dim is assumed to fit (the run time
        # checks it) unless it provably cannot, and a static size is kept
        target = shape[lead + k]
        if d == 1 or d == target:
            continue
        if (type(d) is int and type(target) is int) or not (
            dims_may_agree(d, target) or dims_may_agree(d, 1)
        ):
            raise ValueError(
                f"broadcast_to: data {data} cannot be broadcast to shape {shape} "
                "(each dim of data must be 1 or the target's; broadcast_to never grows the "
                "target shape)"
            )
        if type(d) is int and type(target) is not int:
            out[lead + k] = d  # the symbolic target must be d at run time
    return TensorType(tuple(out), data.dtype)


def _broadcast_to_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    # a real copy: np.broadcast_to's read-only view with zero strides would
    # leak into every later kernel
    return np.array(np.broadcast_to(args[0], attrs["shape"]), order="C")


register(
    "broadcast_to",
    num_inputs=1,
    type_rel=_broadcast_to_rel,
    kernel=_broadcast_to_kernel,
    pattern=OpPattern.BROADCAST,
    attrs=(AttrField("shape", _attr_sizes, doc="The shape of the result."),),
    doc="Broadcast ``data`` to ``shape`` with numpy's rules (the result has exactly ``shape``).",
)


def broadcast_to(data: Any, shape: Any) -> Call:
    """``data`` broadcast to ``shape`` (numpy's ``broadcast_to``).

    ``shape`` is the exact result shape; ONNX Expand's two-way broadcast is
    ``broadcast_to(data, broadcast(data.shape, shape))``.
    """
    return make_call("broadcast_to", [data], ["data"], shape=shape)


def _tile_shape(shape: tuple[Dim, ...], reps: tuple[Dim, ...]) -> tuple[Dim, ...]:
    rank = max(len(shape), len(reps))
    shape = (1,) * (rank - len(shape)) + shape
    reps = (1,) * (rank - len(reps)) + reps
    return tuple(d * r for d, r in zip(shape, reps, strict=True))


def _tile_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "tile", "data")
    return TensorType(_tile_shape(data.shape, attrs["reps"]), data.dtype)


def _tile_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    return np.tile(args[0], attrs["reps"])


register(
    "tile",
    num_inputs=1,
    type_rel=_tile_rel,
    kernel=_tile_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(AttrField("reps", _attr_sizes, doc="Repetitions per axis (numpy.tile's reps)."),),
    doc="Repeat ``data`` ``reps[i]`` times along each axis i (numpy.tile semantics).",
)


def tile(data: Any, reps: Any) -> Call:
    """``data`` repeated ``reps[i]`` times along axis ``i`` (numpy's ``tile``).

    A shorter ``reps`` is padded with 1s in front, a shorter shape gets leading
    axes of size 1 (ONNX Tile: one repetition per axis).
    """
    return make_call("tile", [data], ["data"], reps=reps)



# -- reverse and reverse_sequence --------------------------------------------------------------


def _reverse_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "reverse", "data")
    if data.ndim == 0:
        raise ValueError(f"reverse: data must have at least one dimension, got {data}")
    normalize_axis(attrs["axis"], data.ndim, "reverse")
    return data


def _reverse_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    return np.flip(args[0], attrs["axis"]).copy()


register(
    "reverse",
    num_inputs=1,
    type_rel=_reverse_rel,
    kernel=_reverse_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(AttrField("axis", attr_int, doc="The axis to reverse."),),
    doc="``data`` with the order of the elements along ``axis`` reversed.",
)


def reverse(data: Any, axis: int) -> Call:
    """``data`` with its elements along ``axis`` in reverse order (``numpy.flip``)."""
    return make_call("reverse", [data], ["data"], axis=axis)


def _reverse_sequence_axes(ndim: int, attrs: Attrs) -> tuple[int, int]:
    seq = normalize_axis(attrs["seq_axis"], ndim, "reverse_sequence", "seq_axis")
    batch = normalize_axis(attrs["batch_axis"], ndim, "reverse_sequence", "batch_axis")
    if seq == batch:
        raise ValueError(f"reverse_sequence: seq_axis and batch_axis are both axis {seq}")
    return seq, batch


def _reverse_sequence_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "reverse_sequence", "data")
    lengths = tensor_arg(arg_types[1], "reverse_sequence", "seq_lengths")
    check_dtype(lengths, INT_DTYPES, "reverse_sequence", "seq_lengths")
    if data.ndim < 2:
        raise ValueError(f"reverse_sequence: data must have at least 2 dimensions, got {data}")
    _, batch = _reverse_sequence_axes(data.ndim, attrs)
    if not shapes_may_agree(lengths.shape, (data.shape[batch],)):
        raise ValueError(
            f"reverse_sequence: seq_lengths {lengths} must be 1-D with one length per element "
            f"of batch_axis {batch} ({data.shape[batch]}) of data {data}"
        )
    return data


def _reverse_sequence_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, lengths = args
    seq, batch = _reverse_sequence_axes(data.ndim, attrs)
    n = data.shape[seq]
    # as in TVM, lengths are clamped into [1, n] (0 and 1 both leave a row alone)
    limit = np.asarray(n, dtype=lengths.dtype)
    length = np.minimum(lengths, limit).astype(np.int64)
    shape = [1] * data.ndim
    shape[batch] = data.shape[batch]
    length = length.reshape(shape)
    shape = [1] * data.ndim
    shape[seq] = n
    pos = np.arange(n, dtype=np.int64).reshape(shape)
    src = np.where(pos < length, length - 1 - pos, pos)
    return np.take_along_axis(data, np.broadcast_to(src, data.shape), axis=seq)


register(
    "reverse_sequence",
    num_inputs=2,
    type_rel=_reverse_sequence_rel,
    kernel=_reverse_sequence_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(
        AttrField("seq_axis", attr_int, 1, doc="The axis the sequences run along."),
        AttrField("batch_axis", attr_int, 0, doc="The axis seq_lengths runs along."),
    ),
    doc="Reverse the first ``seq_lengths[b]`` elements along ``seq_axis`` of each batch b.",
)


def reverse_sequence(data: Any, seq_lengths: Any, seq_axis: int = 1, batch_axis: int = 0) -> Call:
    """``data`` with, for each index ``b`` of ``batch_axis``, the first ``seq_lengths[b]``
    elements along ``seq_axis`` reversed and the rest kept (ONNX ReverseSequence).

    Lengths above the axis size count as the size, lengths below 1 as 1 (as in TVM).
    """
    return make_call(
        "reverse_sequence", [data, seq_lengths], ["data", "seq_lengths"],
        seq_axis=seq_axis, batch_axis=batch_axis,
    )


# -- trilu -------------------------------------------------------------------------------------


def _trilu_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "trilu", "data")
    k = tensor_arg(arg_types[1], "trilu", "k")
    if data.ndim < 2:
        raise ValueError(f"trilu: data must have at least 2 dimensions (matrices), got {data}")
    check_dtype(k, INT_DTYPES, "trilu", "k")
    if k.ndim != 0:
        raise ValueError(f"trilu: k must be a scalar (0-D tensor), got {k}")
    return data


def _trilu_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    data, k = args
    rows, cols = data.shape[-2:]
    # clamp: any diagonal beyond the matrix acts like its last one (and keeps numpy's
    # index arithmetic away from int64 overflow)
    k = int(np.clip(np.asarray(k).astype(np.float64), -rows - 1, cols + 1))
    return np.triu(data, k) if attrs["upper"] else np.tril(data, k)


register(
    "trilu",
    num_inputs=2,
    type_rel=_trilu_rel,
    kernel=_trilu_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(AttrField("upper", attr_bool, True, doc="Keep the upper (else the lower) triangle."),),
    doc="The upper or lower triangle (from diagonal k) of the matrices in the last two axes.",
)


def trilu(data: Any, k: Any, upper: bool = True) -> Call:
    """The matrices of the last two axes of ``data`` with the elements outside the upper
    (``upper``) or lower triangle zeroed; ``k`` (a scalar integer tensor or int) shifts the
    diagonal: ``upper`` keeps ``j - i >= k``, else ``j - i <= k``."""
    return make_call("trilu", [data, k], ["data", "k"], upper=upper)
