"""Converters of the ONNX tensor-manipulation ops: shapes, indexing and scatters, creation,
joins, padding, selection, clipping, sorting and block rearrangements.

Every shape-like input (Reshape's shape, Slice's starts, Pad's pads, ...) must be known at
import: a constant, computed from constants (the importer folds integer shape arithmetic such
as Shape -> Gather -> Concat before the consumer sees it), or, where a model has symbolic dims,
a shape value whose elements are known dims (``Shape`` of a tensor of type ``(n, 8)`` is
``[n, 8]``; see :attr:`GraphImporter.shape_values`): Reshape, Expand, ConstantOfShape, Range
and Slice read theirs with :meth:`NodeContext.dims_input` and take symbolic sizes. The
converters compute result shapes themselves where ONNX and the core op disagree on conventions
(Reshape's special values, Expand's bidirectional broadcast), so the IR carries plain
attributes (with symbolic dims where the model has them).

A symbolic Slice bound is taken as in range (not clamped to the axis): ``x[:seq]`` of a
position table keeps ``seq`` as its length, and the evaluator checks that at run time.

Ops whose output shape depends on the data (NonZero, Compress's condition, Unique) are
computed from the input's import-time value; a runtime one goes through the dynamic import
(:mod:`.dynamic`). ONNX's GatherND/ScatterND keep index tuples on the last axis of their
indices, the core ops (TVM's) on the first: the converters move that axis. Col2Im is a
scatter-add of the columns into the padded image at positions computed at import.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from irpass.ir import Call, Constant, Expr, Op, Tuple, TupleGetItem, const
from irpass.ir.dims import dim_prod
from irpass.ir.types import SUPPORTED_DTYPES
from irpass.op.transform import infer_reshape

from ..dtypes import dtype_name, dtype_of
from .context import NodeContext
from .registry import converter

__all__ = ["call", "as_const", "norm_axis", "norm_axes", "ints_of"]


# -- helpers shared with math.py ---------------------------------------------------------------


def call(op: str, args: Sequence[Expr], **attrs: Any) -> Call:
    """A call of core op ``op``; looked up when converting (the op set may grow later)."""
    return Call(Op.get(op), list(args), attrs)


def as_const(ctx: NodeContext, value: Any) -> Constant:
    """``value`` (an array) as a Constant; an unsupported dtype is an error naming the node."""
    arr = np.asarray(value)
    if dtype_name(arr.dtype) in SUPPORTED_DTYPES:
        return Constant(arr)  # what const() makes of it, without its uncached dtype.name (3 us)
    try:
        return const(arr)
    except ValueError as err:
        ctx.fail(str(err))


def norm_axis(ctx: NodeContext, axis: int, ndim: int, what: str = "axis") -> int:
    """``axis`` in ``[0, ndim)`` (negatives count from the end); an error naming the node."""
    if not -ndim <= axis < ndim:
        ctx.fail(f"{what} {axis} is out of range for a {ndim}-D input")
    return axis + ndim if axis < 0 else axis


def norm_axes(ctx: NodeContext, axes: Sequence[int], ndim: int, what: str = "axes") -> list[int]:
    """Each axis normalized; a repeated axis is an error naming the node."""
    out = [norm_axis(ctx, int(a), ndim, what) for a in axes]
    if len(set(out)) != len(out):
        ctx.fail(f"{what} {list(axes)} names an axis twice")
    return out


def ints_of(ctx: NodeContext, value: Any, what: str) -> list[int]:
    """A known integer tensor (or list) as a list of Python ints; an error otherwise."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        ctx.fail(f"{what} must be integers, got dtype {arr.dtype.name}")
    return [int(v) for v in arr.reshape(-1)]


def _scalar_of(ctx: NodeContext, value: np.ndarray, what: str) -> Any:
    arr = np.asarray(value)
    if arr.size != 1:
        ctx.fail(f"{what} must be a single value, got shape {arr.shape}")
    return arr.reshape(()).item()


def _ints_input_or_attr(ctx: NodeContext, i: int, attr: str, from_opset: int) -> list[int] | None:
    """A list of ints that is attribute ``attr`` before ``from_opset`` and input ``i`` from it
    (``None`` when absent)."""
    if ctx.opset >= from_opset:
        known = ctx.const_input(i, attr, optional=True)
        return None if known is None else ints_of(ctx, known, attr)
    value = ctx.attr(attr, None)
    return None if value is None else [int(v) for v in value]


def _strided_slice(
    x: Expr, begin: list[int], end: list[int], strides: list[int], axes: list[int]
) -> Call:
    return call("strided_slice", [x], begin=begin, end=end, strides=strides, axes=axes)


# -- shapes ------------------------------------------------------------------------------------


def _reshape(ctx: NodeContext, shape: list[Any]) -> Expr:
    x = ctx.input(0)
    ty = ctx.type_of(0)
    allowzero = bool(ctx.attr("allowzero", 0)) if ctx.opset >= 14 else False
    # Relay's -2/-3/-4 mean something else to the core op: ONNX allows only -1.
    bad = [v for v in shape if type(v) is int and v < -1]
    if bad:
        ctx.fail(f"shape {shape} has invalid value {bad[0]} (allowed: sizes >= 0 and one -1)")
    if allowzero and 0 in shape and -1 in shape:
        ctx.fail(f"shape {shape} has both 0 and -1 with allowzero=1")
    try:
        out = infer_reshape(ty.shape, shape, allowzero)
    except ValueError as err:
        ctx.fail(f"cannot reshape input of shape {ty.shape}: {err}")
    if out == ty.shape:
        return x
    # the shape is concrete now: a 0 in it is a literal size
    return call("reshape", [x], newshape=list(out), allowzero=0 in out)


@converter("Reshape", since=1)
def _reshape_1(ctx: NodeContext) -> Expr:
    return _reshape(ctx, [int(v) for v in ctx.attr("shape")])


@converter("Reshape", since=5)
def _reshape_5(ctx: NodeContext) -> Expr:
    return _reshape(ctx, ctx.dims_input(1, "shape"))


@converter("Flatten", since=1)
def _flatten(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    shape = ctx.type_of(0).shape
    axis = int(ctx.attr("axis", 1))
    rank = len(shape)
    if not -rank <= axis <= rank:
        ctx.fail(f"axis {axis} is out of range [{-rank}, {rank}] for a {rank}-D input")
    if axis < 0:
        axis += rank
    outer = dim_prod(shape[:axis])
    inner = dim_prod(shape[axis:])
    if (outer, inner) == shape:
        return x
    return call("reshape", [x], newshape=[outer, inner])


@converter("Transpose", since=1)
def _transpose(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    rank = len(ctx.type_of(0).shape)
    perm = ctx.attr("perm", None)
    if perm is None:
        perm = list(range(rank - 1, -1, -1))
    if sorted(perm) != list(range(rank)):
        ctx.fail(f"perm {perm} is not a permutation of the {rank} axes")
    if perm == list(range(rank)):
        return x
    return call("transpose", [x], axes=list(perm))


def _squeeze(ctx: NodeContext, axes: list[int] | None) -> Expr:
    x = ctx.input(0)
    shape = ctx.type_of(0).shape
    if axes is None or not axes:
        drop = [i for i, d in enumerate(shape) if d == 1]
    else:
        drop = norm_axes(ctx, axes, len(shape))
        for a in drop:
            if shape[a] != 1:
                ctx.fail(f"cannot squeeze axis {a} of size {shape[a]} (input shape {shape})")
    if not drop:
        return x
    return call("squeeze", [x], axis=sorted(drop))


@converter("Squeeze", since=1)
def _squeeze_1(ctx: NodeContext) -> Expr:
    return _squeeze(ctx, _ints_input_or_attr(ctx, 1, "axes", 13))


def _unsqueeze(ctx: NodeContext, axes: list[int] | None) -> Expr:
    x = ctx.input(0)
    if axes is None:
        ctx.fail("axes is required")
    out_rank = len(ctx.type_of(0).shape) + len(axes)
    pos = sorted(norm_axes(ctx, axes, out_rank))
    # Inserting at the sorted output positions left to right is exact; runs of adjacent
    # positions become one expand_dims.
    k = 0
    while k < len(pos):
        run = 1
        while k + run < len(pos) and pos[k + run] == pos[k] + run:
            run += 1
        x = call("expand_dims", [x], axis=pos[k], num_newaxis=run)
        k += run
    return x


@converter("Unsqueeze", since=1)
def _unsqueeze_1(ctx: NodeContext) -> Expr:
    return _unsqueeze(ctx, _ints_input_or_attr(ctx, 1, "axes", 13))


@converter("Shape", since=1)
def _shape(ctx: NodeContext) -> Expr:
    shape = ctx.type_of(0).shape
    start, end = 0, len(shape)
    if ctx.opset >= 15:
        start = int(ctx.attr("start", 0))
        end = ctx.attr("end", None)
        end = len(shape) if end is None else int(end)
    # python slicing clamps as ONNX does
    dims = shape[start:end]
    if all(type(d) is int for d in dims):
        return const(np.array(dims, dtype=np.int64).reshape(-1))
    # symbolic: the importer records the value (its dims) of this shape_of
    whole = call("shape_of", [ctx.input(0)], dtype="int64")
    if len(dims) == len(shape):
        return whole
    begin = range(len(shape))[start:end].start if dims else 0
    return _strided_slice(whole, [begin], [begin + len(dims)], [1], [0])


@converter("Size", since=1)
def _size(ctx: NodeContext) -> Expr:
    size = dim_prod(ctx.type_of(0).shape)
    if type(size) is int:
        return const(np.array(size, dtype=np.int64))
    return call("prod", [call("shape_of", [ctx.input(0)], dtype="int64")])


# -- indexing ----------------------------------------------------------------------------------


@converter("Gather", since=1)
def _gather(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    ty = ctx.type_of(0)
    if not ty.shape:
        ctx.fail("data must have at least one dimension")
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), len(ty.shape))
    idx_ty = ctx.type_of(1)
    if idx_ty.dtype not in ("int32", "int64"):
        ctx.fail(f"indices must be int32 or int64, got {idx_ty.dtype}")
    known = ctx.known(1)
    indices = ctx.input(1)
    if known is not None and type(ty.shape[axis]) is int:
        dim = ty.shape[axis]
        wide = known.astype(np.int64)
        bad = wide[(wide < -dim) | (wide >= dim)]
        if bad.size:
            ctx.fail(f"index {int(bad.reshape(-1)[0])} is out of range for axis {axis} "
                     f"of size {dim}")
        indices = const(np.where(wide < 0, wide + dim, wide).astype(known.dtype))
    # fast is ONNX Gather's meaning: an index in [-n, n) (negative ones count from the end),
    # any other an error; the export writes it back as one Gather
    return call("take", [data, indices], axis=axis, mode="fast")


#: A Slice bound at least this big means "to the end" (exporters write INT64_MAX or INT32_MAX).
_TO_THE_END = 2**31 - 1


def _symbolic_bound(v: Any, dim: Any) -> Any:
    """A Slice bound on an axis of symbolic size ``dim``, taken as in range (see the module
    docstring): negatives count from the end, a to-the-end sentinel is ``dim``."""
    if type(v) is not int:
        return v
    if v >= _TO_THE_END:
        return dim
    return dim + v if v < 0 else v


def _slice(
    ctx: NodeContext,
    starts: list[Any],
    ends: list[Any],
    axes: list[int] | None,
    steps: list[int] | None,
) -> Expr:
    x = ctx.input(0)
    shape = ctx.type_of(0).shape
    n = len(starts)
    if len(ends) != n:
        ctx.fail(f"starts {starts} and ends {ends} differ in length")
    axes = list(range(n)) if axes is None else axes
    steps = [1] * n if steps is None else steps
    if len(axes) != n or len(steps) != n:
        ctx.fail(f"starts, ends, axes, steps must have the same length, got {n}, {n}, "
                 f"{len(axes)}, {len(steps)}")
    axes = norm_axes(ctx, axes, len(shape))
    begin: list[int] = []
    end: list[int] = []
    trivial = True
    for a, s, e, st in zip(axes, starts, ends, steps, strict=True):
        if st == 0:
            ctx.fail(f"step of axis {a} is 0")
        dim = shape[a]
        if type(dim) is not int or type(s) is not int or type(e) is not int:
            if st < 0:
                ctx.fail(f"a negative step on axis {a} needs static bounds and size, got "
                         f"start {s}, end {e} on an axis of size {dim}")
            s, e = _symbolic_bound(s, dim), _symbolic_bound(e, dim)
            begin.append(s)
            end.append(e)
            if not (s == 0 and e == dim and st == 1):
                trivial = False
            continue
        # Beyond [-(dim+1), dim] every value slices like its bound (numpy == ONNX clamping);
        # clamping keeps INT64_MAX-style sentinels out of the attributes.
        s = min(max(s, -dim - 1), dim)
        e = min(max(e, -dim - 1), dim)
        begin.append(s)
        end.append(e)
        if range(*slice(s, e, st).indices(dim)) != range(dim):
            trivial = False
    if trivial:
        return x
    return _strided_slice(x, begin, end, list(steps), axes)


@converter("Slice", since=1)
def _slice_1(ctx: NodeContext) -> Expr:
    axes = ctx.attr("axes", None)
    return _slice(ctx, [int(v) for v in ctx.attr("starts")], [int(v) for v in ctx.attr("ends")],
                  None if axes is None else [int(v) for v in axes], None)


@converter("Slice", since=10)
def _slice_10(ctx: NodeContext) -> Expr:
    starts = ctx.dims_input(1, "starts")
    ends = ctx.dims_input(2, "ends")
    axes = ctx.const_input(3, "axes", optional=True)
    steps = ctx.const_input(4, "steps", optional=True)
    return _slice(ctx, starts, ends,
                  None if axes is None else ints_of(ctx, axes, "axes"),
                  None if steps is None else ints_of(ctx, steps, "steps"))


# -- creation ----------------------------------------------------------------------------------


@converter("Constant", since=1)
def _constant(ctx: NodeContext) -> Expr:
    given = [a.name for a in ctx.node.attribute]
    if len(given) != 1:
        ctx.fail(f"expected exactly one value attribute, got {given or 'none'}")
    name = given[0]
    value = ctx.attr(name)
    if name == "value":
        return as_const(ctx, value)
    if name == "value_float":
        return const(np.array(value, dtype=np.float32))
    if name == "value_floats":
        return const(np.array(value, dtype=np.float32).reshape(-1))
    if name == "value_int":
        return const(np.array(value, dtype=np.int64))
    if name == "value_ints":
        return const(np.array(value, dtype=np.int64).reshape(-1))
    ctx.fail(f"attribute {name!r} is not supported (irpass tensors are numeric: use 'value', "
             "'value_float(s)' or 'value_int(s)')")


@converter("ConstantOfShape", since=9)
def _constant_of_shape(ctx: NodeContext) -> Expr:
    shape = ctx.dims_input(0, "shape")
    if any(type(d) is int and d < 0 for d in shape):
        ctx.fail(f"shape {shape} has a negative dimension")
    value = ctx.attr("value", None)
    if value is None:
        fill = np.zeros((), dtype=np.float32)
    else:
        value = np.asarray(value)
        if value.size != 1:
            ctx.fail(f"value must hold one element, got shape {value.shape}")
        fill = value.reshape(())
    if ctx.options.materialize_constant_of_shape and all(type(d) is int for d in shape):
        # a Constant keeps a broadcast scalar as one element: the light models' weights
        # (all this op) cost no memory until a pass or the exporter computes with them
        return as_const(ctx, np.broadcast_to(fill, shape))
    return call("full", [as_const(ctx, fill)], shape=shape, dtype=fill.dtype.name)


# -- identity ----------------------------------------------------------------------------------


@converter("Identity", since=1)
def _identity(ctx: NodeContext) -> Expr:
    return ctx.input(0)


# -- joins and splits --------------------------------------------------------------------------


@converter("Concat", since=1)
def _concat(ctx: NodeContext) -> Expr:
    xs = [ctx.input(i) for i in range(ctx.num_inputs)]
    if not xs:
        ctx.fail("needs at least one input")
    rank = len(ctx.type_of(0).shape)
    # opset 1 defaulted axis to 1; it is required from opset 4
    axis = norm_axis(ctx, int(ctx.attr("axis", 1) if ctx.opset < 4 else ctx.attr("axis")), rank)
    if len(xs) == 1:
        return xs[0]
    return call("concatenate", [Tuple(xs)], axis=axis)


def _split(ctx: NodeContext, sizes: list[int] | None) -> list[Expr]:
    x = ctx.input(0)
    shape = ctx.type_of(0).shape
    if not shape:
        ctx.fail("input must have at least one dimension")
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), len(shape))
    dim = shape[axis]
    n = ctx.num_outputs
    if sizes is None:
        parts = ctx.attr("num_outputs", None) if ctx.opset >= 18 else None
        if parts is not None:
            if parts != n:
                ctx.fail(f"num_outputs is {parts} but the node has {n} outputs")
            chunk = -(-dim // n)  # the last piece is smaller when dim does not divide
            sizes = [chunk] * (n - 1) + [dim - chunk * (n - 1)]
            if sizes[-1] < 1 <= dim:  # onnxruntime refuses an empty last piece too
                ctx.fail(f"cannot split axis {axis} of size {dim} into {n} pieces of {chunk}")
        else:
            if dim % n:
                ctx.fail(f"axis {axis} of size {dim} does not split into {n} equal pieces")
            sizes = [dim // n] * n
    if len(sizes) != n:
        ctx.fail(f"split {sizes} has {len(sizes)} sizes but the node has {n} outputs")
    if any(s < 0 for s in sizes) or sum(sizes) != dim:
        ctx.fail(f"split {sizes} does not add up to the size {dim} of axis {axis}")
    if n == 1:
        return [x]
    indices = np.cumsum(sizes[:-1]).tolist()
    parts_expr = call("split", [x], indices_or_sections=[int(v) for v in indices], axis=axis)
    return [TupleGetItem(parts_expr, k) for k in range(n)]


@converter("Split", since=1)
def _split_1(ctx: NodeContext) -> list[Expr]:
    if ctx.opset >= 13:
        known = ctx.const_input(1, "split", optional=True)
        sizes = None if known is None else ints_of(ctx, known, "split")
    else:
        sizes = ctx.attr("split", None)
        if sizes is None and ctx.opset < 2 and ctx.has_input(1):  # opset 1: input or attr
            sizes = ints_of(ctx, ctx.const_input(1, "split"), "split")
    return _split(ctx, None if sizes is None else [int(v) for v in sizes])


# -- broadcasting and tiling -------------------------------------------------------------------


@converter("Expand", since=8)
def _expand(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    ishape = ctx.type_of(0).shape
    target = ctx.dims_input(1, "shape")
    rank = max(len(ishape), len(target))
    a = (1,) * (rank - len(ishape)) + tuple(ishape)
    b = (1,) * (rank - len(target)) + tuple(target)
    out = []
    for k, (da, db) in enumerate(zip(a, b, strict=True)):
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        elif type(da) is int and type(db) is int:
            ctx.fail(f"input shape {tuple(ishape)} does not broadcast with shape "
                     f"{tuple(target)} (dimension {k}: {da} vs {db})")
        else:  # undecidable: a static size wins, else the input's (checked at run time)
            out.append(db if type(db) is int else da)
    if tuple(out) == tuple(ishape):
        return x
    return call("broadcast_to", [x], shape=out)


@converter("Tile", since=6)
def _tile(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    rank = len(ctx.type_of(0).shape)
    reps = ints_of(ctx, ctx.const_input(1, "repeats"), "repeats")
    if len(reps) != rank:
        ctx.fail(f"repeats {reps} must have one value per axis of the {rank}-D input")
    if any(r < 0 for r in reps):
        ctx.fail(f"repeats {reps} must be >= 0")
    if all(r == 1 for r in reps):
        return x
    return call("tile", [x], reps=reps)


# -- padding -----------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _pad(ctx: NodeContext, pads: list[int], value: float | Expr, axes: list[int] | None) -> Expr:
    """``x`` padded; ``value`` (constant mode) is a number or a runtime scalar expression."""
    x = ctx.input(0)
    shape = ctx.type_of(0).shape
    rank = len(shape)
    mode = ctx.attr("mode", "constant")
    if mode not in _PAD_MODES:
        ctx.fail(f"mode {mode!r} is not supported (supported: {', '.join(_PAD_MODES)})")
    axes = list(range(rank)) if axes is None else norm_axes(ctx, axes, rank)
    if len(pads) != 2 * len(axes):
        ctx.fail(f"pads {pads} must have 2 values per padded axis ({2 * len(axes)})")
    width = [[0, 0] for _ in range(rank)]
    for k, a in enumerate(axes):
        width[a] = [pads[k], pads[k + len(axes)]]
    if all(b == 0 and e == 0 for b, e in width):
        return x
    # negative pads crop: pad the positive parts, then slice the negative ones off
    grow = [[max(b, 0), max(e, 0)] for b, e in width]
    out: Expr = x
    if mode == "wrap":
        # the padded axis reads the input at (position - before) modulo its size
        for a, (b, e) in enumerate(grow):
            if b or e:
                if shape[a] == 0:
                    ctx.fail(f"cannot wrap-pad the empty axis {a}")
                where = np.arange(-b, shape[a] + e, dtype=np.int64) % shape[a]
                out = call("take", [out, const(where)], axis=a, mode="fast")
    elif any(b or e for b, e in grow):
        runtime = isinstance(value, Expr)
        out = call("nn.pad", [x], pad_width=grow, pad_value=0.0 if runtime else value,
                   pad_mode=mode)
        if runtime and mode == "constant":
            # nn.pad's value is an attribute: a runtime one fills the border afterwards
            border = np.ones([d + b + e for d, (b, e) in zip(shape, grow, strict=True)], bool)
            border[tuple(slice(b, b + d) for d, (b, _) in zip(shape, grow, strict=True))] = False
            out = call("where", [const(border), value, out])
    crop = [a for a, (b, e) in enumerate(width) if b < 0 or e < 0]
    if crop:
        padded = [d + b + e for d, (b, e) in zip(shape, grow, strict=True)]
        begin = [max(-width[a][0], 0) for a in crop]
        end = [padded[a] - max(-width[a][1], 0) for a in crop]
        if any(e < b for b, e in zip(begin, end, strict=True)):
            ctx.fail(f"pads {pads} crop more than the input shape {tuple(shape)} holds")
        out = _strided_slice(out, begin, end, [1] * len(crop), crop)
    return out


@converter("Pad", since=1)
def _pad_1(ctx: NodeContext) -> Expr:
    pads = ctx.attr("paddings") if ctx.opset < 2 else ctx.attr("pads")
    return _pad(ctx, [int(v) for v in pads], float(ctx.attr("value", 0.0)), None)


@converter("Pad", since=11)
def _pad_11(ctx: NodeContext) -> Expr:
    pads = ints_of(ctx, ctx.const_input(1, "pads"), "pads")
    # the fill value does not shape the output: a runtime one stays an input
    value: float | Expr = 0.0
    if ctx.has_input(2):
        known = ctx.known(2)
        if known is not None:
            value = _scalar_of(ctx, known, "constant_value")
        else:
            value_shape = ctx.type_of(2).shape
            if int(np.prod(value_shape, dtype=np.int64)) != 1:
                ctx.fail(f"constant_value must be a single value, got shape {value_shape}")
            value = ctx.input(2)
            if value_shape != ():
                value = call("reshape", [value], newshape=[])
    axes = ctx.const_input(3, "axes", optional=True) if ctx.opset >= 18 else None
    return _pad(ctx, pads, value, None if axes is None else ints_of(ctx, axes, "axes"))


# -- selection and clipping --------------------------------------------------------------------


@converter("Where", since=9)
def _where(ctx: NodeContext) -> Expr:
    return call("where", [ctx.input(0), ctx.input(1), ctx.input(2)])


def _clip(ctx: NodeContext, x: Expr, lo: Any, hi: Any) -> Expr:
    """``x`` clipped to ``lo``/``hi``: each a number, an Expr, or None (unbounded)."""
    if lo is None and hi is None:
        return x
    numbers = all(v is None or not isinstance(v, Expr) for v in (lo, hi))
    if numbers:
        a_min = -np.inf if lo is None else float(lo)
        a_max = np.inf if hi is None else float(hi)
        dtype = ctx.type_of(0).dtype
        exact = np.dtype(dtype).kind == "f" or all(
            v is None or float(v) == v for v in (lo, hi))
        # clip refuses min > max; ONNX then gives max everywhere, as minimum(maximum()) does
        if a_min <= a_max and exact:
            return call("clip", [x], a_min=a_min, a_max=a_max)
        lo = None if lo is None else const(np.array(lo, dtype=dtype))
        hi = None if hi is None else const(np.array(hi, dtype=dtype))
    if lo is not None:
        x = call("maximum", [x, lo])
    if hi is not None:
        x = call("minimum", [x, hi])
    return x


@converter("Clip", since=1)
def _clip_1(ctx: NodeContext) -> Expr:
    return _clip(ctx, ctx.input(0), ctx.attr("min", None), ctx.attr("max", None))


@converter("Clip", since=11)
def _clip_11(ctx: NodeContext) -> Expr:
    bounds: list[Any] = []
    for i, name in ((1, "min"), (2, "max")):
        if not ctx.has_input(i):
            bounds.append(None)
            continue
        known = ctx.known(i)
        if known is None:
            bounds.append(ctx.input(i))
        else:
            bounds.append(_scalar_of(ctx, known, name))
    return _clip(ctx, ctx.input(0), bounds[0], bounds[1])


# -- element and tuple indexing ----------------------------------------------------------------


@converter("GatherElements", since=11)
def _gather_elements(ctx: NodeContext) -> Expr:
    rank = len(ctx.type_of(0).shape)
    if rank == 0:
        ctx.fail("data must have at least one dimension")
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), rank)
    return call("gather", [ctx.input(0), ctx.input(1)], axis=axis)


def _tuples_first(ctx: NodeContext, i: int) -> Expr:
    """ONNX's index tuples (the last axis of input ``i``) moved to the first axis, where the
    core's gather_nd / scatter_nd read them (TVM's layout)."""
    rank = len(ctx.type_of(i).shape)
    if rank == 0:
        ctx.fail(f"input {i} (indices) must have at least one dimension")
    if rank == 1:
        return ctx.input(i)
    known = ctx.known(i)
    if known is not None:  # (the importer folds whole nodes only)
        return const(np.ascontiguousarray(np.moveaxis(known, -1, 0)))
    return call("transpose", [ctx.input(i)], axes=[rank - 1, *range(rank - 1)])


@converter("GatherND", since=11)
def _gather_nd(ctx: NodeContext) -> Expr:
    batch = int(ctx.attr("batch_dims", 0)) if ctx.opset >= 12 else 0
    return call("gather_nd", [ctx.input(0), _tuples_first(ctx, 1)], batch_dims=batch)


# ONNX's reduction names -> the core's (TVM's)
_SCATTER_REDUCTIONS = {"none": "update", "add": "add", "mul": "mul", "max": "max", "min": "min"}


def _scatter_reduction(ctx: NodeContext) -> str:
    reduction = ctx.attr("reduction", "none")
    if reduction not in _SCATTER_REDUCTIONS:
        ctx.fail(f"reduction {reduction!r} is not one of {', '.join(_SCATTER_REDUCTIONS)}")
    return _SCATTER_REDUCTIONS[reduction]


@converter("ScatterElements", since=11)
@converter("Scatter", since=9)
def _scatter_elements(ctx: NodeContext) -> Expr:
    rank = len(ctx.type_of(0).shape)
    if rank == 0:
        ctx.fail("data must have at least one dimension")
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), rank)
    return call("scatter_elements", [ctx.input(0), ctx.input(1), ctx.input(2)], axis=axis,
                reduction=_scatter_reduction(ctx))


@converter("ScatterND", since=11)
def _scatter_nd(ctx: NodeContext) -> Expr:
    return call("scatter_nd", [ctx.input(0), _tuples_first(ctx, 1), ctx.input(2)],
                mode=_scatter_reduction(ctx))


@converter("TensorScatter", since=24)
def _tensor_scatter(ctx: NodeContext) -> Expr:
    # each (prefix, s) of update goes to cache position write_indices[batch] + s on `axis`
    # (modulo its length when circular): one scatter_elements with those positions
    cache, update = ctx.type_of(0), ctx.type_of(1)
    rank = len(cache.shape)
    mode = ctx.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        ctx.fail(f"mode must be 'linear' or 'circular', got {mode!r}")
    if rank < 2:
        ctx.fail("past_cache must have at least two dimensions (batch and sequence)")
    axis = norm_axis(ctx, int(ctx.attr("axis", -2)), rank)
    if axis == 0:
        ctx.fail("axis must not be the batch axis 0")
    if len(update.shape) != rank or any(
            u != c for k, (u, c) in enumerate(zip(update.shape, cache.shape, strict=True))
            if k != axis) or update.shape[axis] > cache.shape[axis]:
        ctx.fail(f"update of shape {update.shape} does not fit past_cache of shape "
                 f"{cache.shape} (equal but on axis {axis}, where it may be shorter)")
    steps = np.arange(update.shape[axis], dtype=np.int64).reshape(
        [1] * axis + [-1] + [1] * (rank - axis - 1))
    positions: Expr = const(steps)
    if ctx.has_input(2):
        start = call("reshape", [ctx.input(2)], newshape=[cache.shape[0]] + [1] * (rank - 1))
        positions = call("add", [start, positions])
    if mode == "circular":
        positions = call("floor_mod", [positions, const(np.array(cache.shape[axis], np.int64))])
    positions = call("broadcast_to", [positions], shape=list(update.shape))
    return call("scatter_elements", [ctx.input(0), positions, ctx.input(1)], axis=axis,
                reduction="update")


@converter("Trilu", since=14)
def _trilu(ctx: NodeContext) -> Expr:
    if len(ctx.type_of(0).shape) < 2:
        ctx.fail("input must have at least two dimensions")
    if ctx.has_input(1):
        k = ctx.input(1)
        if ctx.type_of(1).shape != ():
            if ctx.type_of(1).shape != (1,):
                ctx.fail(f"k must hold one value, got shape {ctx.type_of(1).shape}")
            k = call("reshape", [k], newshape=[])
    else:
        k = const(np.array(0, np.int64))
    return call("trilu", [ctx.input(0), k], upper=bool(ctx.attr("upper", 1)))


@converter("ReverseSequence", since=10)
def _reverse_sequence(ctx: NodeContext) -> Expr:
    rank = len(ctx.type_of(0).shape)
    if rank < 2:
        ctx.fail("input must have at least two dimensions")
    time_axis, batch_axis = int(ctx.attr("time_axis", 0)), int(ctx.attr("batch_axis", 1))
    if {time_axis, batch_axis} != {0, 1}:
        ctx.fail(f"time_axis {time_axis} and batch_axis {batch_axis} must be 0 and 1, one each")
    return call("reverse_sequence", [ctx.input(0), ctx.input(1)], seq_axis=time_axis,
                batch_axis=batch_axis)


# -- sorting and selection ---------------------------------------------------------------------


@converter("TopK", since=1)
def _top_k(ctx: NodeContext) -> list[Expr]:
    ty = ctx.type_of(0)
    if not ty.shape:
        ctx.fail("X must have at least one dimension")
    axis = norm_axis(ctx, int(ctx.attr("axis", -1)), len(ty.shape))
    if ctx.opset >= 10:
        k = _scalar_of(ctx, ctx.const_input(1, "K"), "K")
        if not isinstance(k, int):
            ctx.fail(f"K must be an integer, got {k!r}")
    else:
        k = int(ctx.attr("k"))
    largest = bool(ctx.attr("largest", 1)) if ctx.opset >= 11 else True
    size = ty.shape[axis]
    if not 0 <= k <= size:
        ctx.fail(f"K {k} is out of range [0, {size}] for axis {axis} of shape {ty.shape}")
    shape = ty.shape[:axis] + (k,) + ty.shape[axis + 1:]
    if k == 0:  # the core's k < 1 means all of the axis
        return [const(np.zeros(shape, ty.dtype)), const(np.zeros(shape, np.int64))]
    # sorted=0 lets the order be any: the core's sorted order is one of them
    both = call("topk", [ctx.input(0)], k=k, axis=axis, ret_type="both", is_ascend=not largest,
                dtype="int64")
    return [TupleGetItem(both, 0), TupleGetItem(both, 1)]


# -- data-dependent shapes: computed from the input's import-time value ------------------------


@converter("NonZero", since=9)
def _non_zero(ctx: NodeContext) -> Expr:
    x = ctx.const_input(0, "X")
    if x.ndim == 0:
        ctx.fail("X must have at least one dimension")
    return const(np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1))


@converter("Compress", since=9)
def _compress(ctx: NodeContext) -> Expr:
    condition = ctx.const_input(1, "condition")
    if condition.dtype != np.bool_ or condition.ndim != 1:
        ctx.fail(f"condition must be a 1-D bool tensor, got {condition.dtype.name} of shape "
                 f"{condition.shape}")
    data = ctx.input(0)
    shape = ctx.type_of(0).shape
    axis = ctx.attr("axis", None)
    if axis is None:
        size = int(np.prod(shape, dtype=np.int64))
        if len(shape) != 1:
            data = call("reshape", [data], newshape=[size])
        axis = 0
    else:
        axis = norm_axis(ctx, int(axis), len(shape))
        size = shape[axis]
    if condition.size > size:
        ctx.fail(f"condition has {condition.size} entries, more than the {size} of the "
                 f"compressed axis")
    picked = np.flatnonzero(condition).astype(np.int64)
    return call("take", [data, const(picked)], axis=axis, mode="fast")


@converter("Unique", since=11)
def _unique(ctx: NodeContext) -> list[Expr]:
    x = ctx.const_input(0, "X")
    axis = ctx.attr("axis", None)
    if axis is not None:
        axis = norm_axis(ctx, int(axis), x.ndim)
    elif x.ndim != 1:
        x = x.reshape(-1)
    y, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                          return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not ctx.attr("sorted", 1):
        # the order of first occurrence: renumber the sorted uniques by where they appear
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y = np.take(y, order, axis=0 if axis is None else axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    outs = [y, first, inverse, counts]
    return [as_const(ctx, v if k == 0 else np.asarray(v, np.int64))
            for k, v in enumerate(outs[:ctx.num_outputs])]


# -- creation ----------------------------------------------------------------------------------


@converter("Range", since=11)
def _range(ctx: NodeContext) -> Expr:
    dtype = ctx.type_of(0).dtype
    bounds = []
    for i, name in enumerate(("start", "limit", "delta")):
        if ctx.type_of(i).dtype != dtype:
            ctx.fail(f"{name} is {ctx.type_of(i).dtype}, start is {dtype}: they must agree")
        if np.dtype(dtype).kind in "iu":  # an integer bound may be a symbolic size
            value = ctx.dims_input(i, name)
            if len(value) != 1:
                ctx.fail(f"{name} must be a single value, got {len(value)}")
            bounds.append(value[0])
            continue
        bounds.append(_scalar_of(ctx, ctx.const_input(i, name), name))
    if dtype == "bool":
        ctx.fail("start, limit and delta must be numbers, got bool")
    start, limit, delta = bounds
    if delta == 0:
        ctx.fail("delta must not be 0")
    return call("arange", [], start=start, stop=limit, step=delta, dtype=dtype)


@converter("OneHot", since=9)
def _one_hot(ctx: NodeContext) -> Expr:
    depth = _scalar_of(ctx, ctx.const_input(1, "depth"), "depth")
    if depth != int(depth) or depth < 0:
        ctx.fail(f"depth must be a non-negative integer, got {depth}")
    depth = int(depth)
    values_ty = ctx.type_of(2)
    if values_ty.shape not in ((2,),):
        ctx.fail(f"values must hold two elements [off_value, on_value], got shape "
                 f"{values_ty.shape}")
    rank = len(ctx.type_of(0).shape)
    axis = int(ctx.attr("axis", -1))
    if not -rank - 1 <= axis <= rank:
        ctx.fail(f"axis {axis} is out of range [{-rank - 1}, {rank}] for {rank}-D indices")
    indices = ctx.input(0)
    idx_dtype = ctx.type_of(0).dtype
    if np.dtype(idx_dtype).kind not in "iu":
        indices = call("cast", [indices], dtype="int64")  # float indices truncate
        idx_dtype = "int64"
    if np.dtype(idx_dtype).kind == "i" and ctx.opset >= 11:
        # negative indices count from depth's end (opset 9 leaves them off, out of range)
        shifted = call("add", [indices, const(np.array(depth, idx_dtype))])
        negative = call("less", [indices, const(np.array(0, idx_dtype))])
        indices = call("where", [negative, shifted, indices])
    values = ctx.input(2)
    off = call("take", [values, const(np.array(0, np.int64))], axis=0)
    on = call("take", [values, const(np.array(1, np.int64))], axis=0)
    return call("one_hot", [indices, on, off], depth=depth, axis=axis, dtype=values_ty.dtype)


@converter("EyeLike", since=9)
def _eye_like(ctx: NodeContext) -> Expr:
    ty = ctx.type_of(0)
    if len(ty.shape) != 2:
        ctx.fail(f"input must be 2-D, got shape {ty.shape}")
    dtype = ty.dtype
    if ctx.has_attr("dtype"):
        try:
            dtype = dtype_of(int(ctx.attr("dtype")), "attribute 'dtype'")
        except ValueError as err:
            ctx.fail(str(err))
    # the shape is static: the result is a constant whatever the input holds
    return as_const(ctx, np.eye(*ty.shape, k=int(ctx.attr("k", 0)), dtype=dtype))


# -- blocks and windows ------------------------------------------------------------------------


def _depth_space(op: str, since_mode: int) -> Any:
    def convert(ctx: NodeContext) -> Expr:
        if len(ctx.type_of(0).shape) != 4:
            ctx.fail(f"input must be 4-D (NCHW), got shape {ctx.type_of(0).shape}")
        block = int(ctx.attr("blocksize"))
        if block < 1:
            ctx.fail(f"blocksize must be >= 1, got {block}")
        mode = ctx.attr("mode", "DCR") if ctx.opset >= since_mode else "DCR"
        if mode not in ("DCR", "CRD"):
            ctx.fail(f"mode must be 'DCR' or 'CRD', got {mode!r}")
        return call(op, [ctx.input(0)], block_size=block, layout="NCHW", mode=mode)

    convert.__name__ = f"_convert_{op}"
    return convert


converter("DepthToSpace", since=1)(_depth_space("nn.depth_to_space", 11))
converter("SpaceToDepth", since=1)(_depth_space("nn.space_to_depth", 28))


@converter("CenterCropPad", since=18)
def _center_crop_pad(ctx: NodeContext) -> Expr:
    shape = ctx.type_of(0).shape
    rank = len(shape)
    target = ints_of(ctx, ctx.const_input(1, "shape"), "shape")
    axes = ctx.attr("axes", None)
    axes = list(range(rank)) if axes is None else norm_axes(ctx, axes, rank)
    if len(target) != len(axes):
        ctx.fail(f"shape {target} must have one size per axis of {axes}")
    if any(t < 0 for t in target):
        ctx.fail(f"shape {target} has a negative size")
    out: Expr = ctx.input(0)
    crop = [(a, t) for a, t in zip(axes, target, strict=True) if t < shape[a]]
    if crop:
        begin = [(shape[a] - t) // 2 for a, t in crop]
        out = _strided_slice(out, begin, [b + t for b, (_, t) in zip(begin, crop, strict=True)],
                             [1] * len(crop), [a for a, _ in crop])
    width = [[0, 0] for _ in range(rank)]
    for a, t in zip(axes, target, strict=True):
        if t > shape[a]:
            before = (t - shape[a]) // 2
            width[a] = [before, t - shape[a] - before]
    if any(b or e for b, e in width):
        out = call("nn.pad", [out], pad_width=width, pad_value=0.0, pad_mode="constant")
    return out


@converter("Col2Im", since=18)
def _col2im(ctx: NodeContext) -> Expr:
    # a scatter-add of every column entry into its (padded) image position, the pads cut off
    ty = ctx.type_of(0)
    image = ints_of(ctx, ctx.const_input(1, "image_shape"), "image_shape")
    block = ints_of(ctx, ctx.const_input(2, "block_shape"), "block_shape")
    n = len(image)
    if len(block) != n or n == 0:
        ctx.fail(f"image_shape {image} and block_shape {block} must have one size per "
                 "spatial axis")
    dilations = [int(v) for v in ctx.attr("dilations", [1] * n)]
    strides = [int(v) for v in ctx.attr("strides", [1] * n)]
    pads = [int(v) for v in ctx.attr("pads", [0] * 2 * n)]
    if len(dilations) != n or len(strides) != n or len(pads) != 2 * n:
        ctx.fail(f"dilations {dilations}, strides {strides} and pads {pads} must have {n}, {n} "
                 f"and {2 * n} values")
    if min(dilations + strides + block + image) < 1 or min(pads) < 0:
        ctx.fail("sizes, dilations and strides must be >= 1, pads >= 0")
    if len(ty.shape) != 3:
        ctx.fail(f"input must be 3-D (N, C * prod(block_shape), L), got shape {ty.shape}")
    batch, channels_k, length = ty.shape
    kernel = int(np.prod(block))
    if channels_k % kernel:
        ctx.fail(f"input's dimension 1 ({channels_k}) is not a multiple of the block size "
                 f"{kernel}")
    padded = [image[i] + pads[i] + pads[i + n] for i in range(n)]
    counts = [(padded[i] - dilations[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(n)]
    if min(counts) < 1 or int(np.prod(counts)) != length:
        ctx.fail(f"input's dimension 2 ({length}) is not the number of blocks "
                 f"{' * '.join(map(str, counts))} that fit the padded image {padded}")
    # the padded position of (kernel offset, block): block * stride + offset * dilation
    pos = np.zeros((kernel, length), np.int64)
    offsets = np.indices(block).reshape(n, kernel)
    starts = np.indices(counts).reshape(n, length)
    for i in range(n):
        coord = starts[i][None, :] * strides[i] + offsets[i][:, None] * dilations[i]
        pos = pos * padded[i] + coord
    channels = channels_k // kernel
    flat = int(np.prod(padded))
    cols = call("reshape", [ctx.input(0)], newshape=[batch, channels, kernel * length])
    zeros = const(np.broadcast_to(np.zeros((), ty.dtype), (batch, channels, flat)))
    where = const(np.broadcast_to(pos.reshape(-1), (batch, channels, kernel * length)))
    out = call("scatter_elements", [zeros, where, cols], axis=2, reduction="add")
    out = call("reshape", [out], newshape=[batch, channels, *padded])
    if any(pads):
        out = _strided_slice(out, [pads[i] for i in range(n)],
                             [pads[i] + image[i] for i in range(n)], [1] * n,
                             list(range(2, 2 + n)))
    return out
