"""Emitters of the indexing, scatter, ordering and repetition ops: ``take``, ``gather``,
``gather_nd``, ``scatter_elements``, ``scatter_nd``, ``topk``, ``strided_slice``, ``reverse``,
``reverse_sequence``, ``trilu``, ``one_hot``, ``arange``, ``broadcast_to``, ``tile``,
``nn.depth_to_space`` and ``nn.space_to_depth``.

TVM's ``gather_nd``/``scatter_nd`` hold their index tuples along the first axis of the
indices, ONNX's GatherND/ScatterND along the last: the indices are transposed (in numpy when
they are a constant). ``arange`` is static, so it is a constant; ``one_hot`` is an ``Equal``
with a constant range and a ``Where`` (ONNX's OneHot counts negative indices from the end,
the core gives them a row of ``off_value``, and onnxruntime has few of its type pairs)."""

from __future__ import annotations

import numpy as np
from irpass.ir.dims import DimExpr, dim_prod
from irpass.op.indexing import slice_bounds

from .builder import EmitContext, emitter

__all__: list[str] = []


@emitter("take")
def _take(ctx: EmitContext) -> str:
    data_ty = ctx.type_of(0)
    axis = ctx.attrs["axis"]
    mode = ctx.attrs["mode"]
    data = ctx.input(0)
    if axis is None:
        size = dim_prod(data_ty.shape)
        data = ctx.reshape(data, (size,)) if len(data_ty.shape) != 1 else data
        axis = 0
    else:
        axis %= len(data_ty.shape)
        size = data_ty.shape[axis]
    known = ctx.const(1)
    if known is not None:
        idx = known.astype(np.int64) if known.dtype.kind == "i" else \
            np.minimum(known, np.iinfo(np.int64).max).astype(np.int64)
        if mode == "clip":
            idx = np.clip(idx, 0, max(size - 1, 0))
        elif mode == "wrap" and size:
            idx = idx % size
        return ctx.emit("Gather", [data, ctx.constant(idx, hint="indices")], axis=axis)
    idx = ctx.input(1)
    idx_dtype = ctx.type_of(1).dtype
    if idx_dtype not in ("int32", "int64"):
        idx = ctx.cast(idx, "int64")
        idx_dtype = "int64"
    if mode == "clip":
        if ctx.opset < 12:
            raise ctx.fail("take(mode='clip') with computed indices needs opset >= 12")
        idx = ctx.emit("Clip", [idx, ctx.constant(np.array(0, idx_dtype)),
                                ctx.constant(np.array(max(size - 1, 0), idx_dtype))])
    elif mode == "wrap" or ctx.opset < 11:
        # Gather takes negative indices from opset 11 on (there, mode 'fast' -- an index in
        # [-n, n) -- is exactly Gather), Mod exists from 10 on
        if ctx.opset < 10:
            raise ctx.fail(f"take(mode={mode!r}) of computed indices needs opset >= 10")
        idx = ctx.emit("Mod", [idx, ctx.constant(np.array(size, idx_dtype))], fmod=0)
    return ctx.emit("Gather", [data, idx], axis=axis)


@emitter("strided_slice")
def _strided_slice(ctx: EmitContext) -> str:
    a = ctx.attrs
    shape = tuple(ctx.type_of(0).shape)
    begin, end = list(a["begin"]), list(a["end"])
    static = all(type(v) is int for v in (*shape, *begin, *end))
    if static and tuple(ctx.out_type.shape) == shape and _is_whole(shape, a):
        return ctx.input(0)
    axes = list(a["axes"]) if a["axes"] is not None else list(range(len(begin)))
    strides = list(a["strides"]) if a["strides"] is not None else [1] * len(begin)
    if ctx.opset >= 10:
        return ctx.emit("Slice", [ctx.input(0), ctx.dims(begin, "starts"),
                                  ctx.dims(end, "ends"), ctx.int64s(axes, "axes"),
                                  ctx.int64s(strides, "steps")])
    if not static:
        raise ctx.fail("a slice of a symbolic size needs opset >= 10")
    if all(s == 1 for s in strides):
        return ctx.emit("Slice", [ctx.input(0)], starts=begin, ends=end, axes=axes)
    # opset 9 Slice has no steps: gather the (static) positions of each strided axis
    index = slice_bounds(shape, a["begin"], a["end"], a["strides"], a["axes"])
    x = ctx.input(0)
    for axis, s in enumerate(index):
        if s.start is None:
            continue
        stop = -1 if s.stop is None else s.stop
        positions = np.arange(s.start, stop, s.step, dtype=np.int64)
        if len(positions) == shape[axis] and (positions == np.arange(shape[axis])).all():
            continue
        x = ctx.emit("Gather", [x, ctx.constant(positions, hint="indices")], axis=axis)
    return x


def _is_whole(shape: tuple[int, ...], a: object) -> bool:
    index = slice_bounds(shape, a["begin"], a["end"], a["strides"], a["axes"])  # type: ignore[index]
    return all(s.start is None or (s.step == 1 and s.start == 0) for s in index)


@emitter("broadcast_to")
def _broadcast_to(ctx: EmitContext) -> str:
    shape = tuple(ctx.out_type.shape)
    ishape = tuple(ctx.type_of(0).shape)
    if ishape == shape:
        return ctx.input(0)
    # Expand broadcasts both ways: a 1 keeps the input's dim, so only new sizes are computed
    lead = len(shape) - len(ishape)
    target = [1 if k >= lead and type(d) is not int and ishape[k - lead] == d else d
              for k, d in enumerate(shape)]
    return ctx.emit("Expand", [ctx.input(0), ctx.dims(target)])


@emitter("tile")
def _tile(ctx: EmitContext) -> str:
    shape = tuple(ctx.type_of(0).shape)
    reps = tuple(ctx.attrs["reps"])
    x = ctx.input(0)
    if len(reps) > len(shape):  # numpy promotes the data with leading 1s
        shape = (1,) * (len(reps) - len(shape)) + shape
        x = ctx.reshape(x, shape)
    reps = (1,) * (len(shape) - len(reps)) + reps
    if all(r == 1 for r in reps):
        return x
    return ctx.emit("Tile", [x, ctx.dims(reps, "repeats")])


_INDEX_DTYPES = ("int32", "int64")
# The ScatterElements/ScatterND reductions and the opset that added each.
_REDUCTION_OPSET = {"update": 11, "add": 16, "mul": 16, "min": 18, "max": 18}


def _index_input(ctx: EmitContext, i: int, dtypes: tuple[str, ...] = _INDEX_DTYPES) -> str:
    """Input ``i`` (indices) in one of ``dtypes`` (int64 if it is in none)."""
    if ctx.type_of(i).dtype in dtypes:
        return ctx.input(i)
    known = ctx.const(i)
    if known is not None:
        return ctx.constant(known.astype(np.int64), hint="indices")
    return ctx.cast(ctx.input(i), "int64")


def _tuples_last(ctx: EmitContext, i: int) -> str:
    """Index tuples along axis 0 (TVM) moved to the last axis (ONNX), as int64."""
    rank = len(ctx.type_of(i).shape)
    perm = list(range(1, rank)) + [0]
    known = ctx.const(i)
    if known is not None:
        return ctx.constant(np.transpose(known.astype(np.int64), perm), hint="indices")
    return ctx.transpose(_index_input(ctx, i, ("int64",)), perm)


@emitter("gather")
def _gather(ctx: EmitContext) -> str:
    ctx.need_opset(11, "GatherElements")
    return ctx.emit("GatherElements", [ctx.input(0), _index_input(ctx, 1)],
                    axis=ctx.attrs["axis"] % len(ctx.type_of(0).shape))


@emitter("gather_nd")
def _gather_nd(ctx: EmitContext) -> str:
    ctx.need_opset(11, "GatherND")
    batch = ctx.attrs["batch_dims"]
    if batch:
        ctx.need_opset(12, "GatherND(batch_dims > 0)")
    return ctx.emit("GatherND", [ctx.input(0), _tuples_last(ctx, 1)], batch_dims=batch or None)


def _reduction(ctx: EmitContext, op_type: str, mode: str) -> str | None:
    since = _REDUCTION_OPSET[mode]
    ctx.need_opset(since, op_type if mode == "update" else f"{op_type}(reduction={mode!r})")
    return None if mode == "update" else mode


@emitter("scatter_elements")
def _scatter_elements(ctx: EmitContext) -> str:
    if ctx.opset < 11 and ctx.attrs["reduction"] == "update":
        # ScatterElements was called Scatter before opset 11
        return ctx.emit("Scatter", [ctx.input(0), _index_input(ctx, 1), ctx.input(2)],
                        axis=ctx.attrs["axis"] % len(ctx.type_of(0).shape))
    reduction = _reduction(ctx, "ScatterElements", ctx.attrs["reduction"])
    return ctx.emit("ScatterElements", [ctx.input(0), _index_input(ctx, 1), ctx.input(2)],
                    axis=ctx.attrs["axis"] % len(ctx.type_of(0).shape), reduction=reduction)


@emitter("scatter_nd")
def _scatter_nd(ctx: EmitContext) -> str:
    reduction = _reduction(ctx, "ScatterND", ctx.attrs["mode"])
    return ctx.emit("ScatterND", [ctx.input(0), _tuples_last(ctx, 1), ctx.input(2)],
                    reduction=reduction)


@emitter("topk")
def _topk(ctx: EmitContext) -> str | list[str]:
    a = ctx.attrs
    shape = ctx.type_of(0).shape
    axis = a["axis"] % len(shape)
    k = a["k"] if a["k"] >= 1 else shape[axis]
    k = min(k, shape[axis])
    if a["is_ascend"]:
        ctx.need_opset(11, "TopK(largest=0)")
    if ctx.opset >= 10:
        values, indices = ctx.emit("TopK", [ctx.input(0), ctx.int64s([k], "k")], outputs=2,
                                   axis=axis, largest=0 if a["is_ascend"] else None)
    else:
        values, indices = ctx.emit("TopK", [ctx.input(0)], outputs=2, axis=axis, k=k)
    if a["dtype"] != "int64":
        indices = ctx.cast(indices, a["dtype"])
    ret = a["ret_type"]
    if ret == "both":
        return [values, indices]
    return values if ret == "values" else indices


@emitter("reverse")
def _reverse(ctx: EmitContext) -> str:
    shape = ctx.type_of(0).shape
    axis = ctx.attrs["axis"] % len(shape)
    if shape[axis] < 2:
        return ctx.input(0)
    if ctx.opset >= 10:
        return ctx.emit("Slice", [ctx.input(0), ctx.int64s([-1], "starts"),
                                  ctx.int64s([np.iinfo(np.int64).min], "ends"),
                                  ctx.int64s([axis], "axes"), ctx.int64s([-1], "steps")])
    positions = np.arange(shape[axis] - 1, -1, -1, dtype=np.int64)
    return ctx.emit("Gather", [ctx.input(0), ctx.constant(positions, hint="indices")], axis=axis)


@emitter("reverse_sequence")
def _reverse_sequence(ctx: EmitContext) -> str:
    ctx.need_opset(10, "ReverseSequence")
    shape = ctx.type_of(0).shape
    rank = len(shape)
    seq, batch = ctx.attrs["seq_axis"] % rank, ctx.attrs["batch_axis"] % rank
    size = shape[seq]
    # the core counts lengths above the axis as its size and below 1 as 1; ONNX refuses them
    known = ctx.const(1)
    if known is not None:
        lengths = ctx.constant(np.clip(known.astype(np.int64), 1, max(size, 1)), hint="lengths")
    else:
        if ctx.opset < 12:
            raise ctx.fail("reverse_sequence with computed lengths needs opset >= 12 (Clip of "
                           "int64)")
        lengths = ctx.emit("Clip", [_index_input(ctx, 1, ("int64",)),
                                    ctx.constant(np.array(1, np.int64)),
                                    ctx.constant(np.array(max(size, 1), np.int64))])
    x, dtype = ctx.input(0), ctx.type_of(0).dtype
    # bfloat16 came to ReverseSequence in opset 22; moving float32 copies is exact
    widen = dtype in ("float16", "bfloat16") and ctx.lacks_type("ReverseSequence", dtype)
    if widen:
        x = ctx.cast(x, "float32")
    if {seq, batch} == {0, 1}:
        y = ctx.emit("ReverseSequence", [x, lengths], batch_axis=batch, time_axis=seq)
    else:
        # ONNX's axes are 0 and 1: bring the batch and sequence axes there and back
        perm = [batch, seq] + [a for a in range(rank) if a not in (batch, seq)]
        y = ctx.emit("ReverseSequence", [ctx.transpose(x, perm), lengths], batch_axis=0,
                     time_axis=1)
        y = ctx.transpose(y, [perm.index(a) for a in range(rank)])
    return ctx.cast(y, dtype) if widen else y


@emitter("trilu")
def _trilu(ctx: EmitContext) -> str:
    upper = bool(ctx.attrs["upper"])
    known = ctx.const(1)
    if ctx.opset >= 14:
        return ctx.emit("Trilu", [ctx.input(0), _index_input(ctx, 1, ("int64",))],
                        upper=None if upper else 0)
    if known is None:
        raise ctx.fail("trilu with a computed k is written as ONNX Trilu, which needs "
                       "opset >= 14")
    # a constant k: a constant mask
    rows, cols = ctx.type_of(0).shape[-2:]
    k = int(np.clip(known.astype(np.float64), -rows - 1, cols + 1))
    keep = np.triu(np.ones((rows, cols), bool), k) if upper else \
        np.tril(np.ones((rows, cols), bool), k)
    zero = ctx.constant(np.zeros((), ctx.type_of(0).dtype))
    return ctx.emit("Where", [ctx.constant(keep, hint="mask"), ctx.input(0), zero])


@emitter("one_hot")
def _one_hot(ctx: EmitContext) -> str:
    a = ctx.attrs
    depth, dtype = a["depth"], a["dtype"]
    rank = len(ctx.type_of(0).shape)
    axis = a["axis"] + rank + 1 if a["axis"] < 0 else a["axis"]
    out_shape = list(ctx.out_type.shape)
    # the indices with a 1 where the new axis goes, against positions along that axis
    idx = ctx.reshape(_index_input(ctx, 0, ("int64",)),
                      out_shape[:axis] + [1] + out_shape[axis + 1:])
    positions = np.arange(depth, dtype=np.int64).reshape((depth,) + (1,) * (rank - axis))
    hit = ctx.emit("Equal", [idx, ctx.constant(positions, hint="positions")])
    on, off = (_scalar_as(ctx, i, dtype) for i in (1, 2))
    return ctx.emit("Where", [hit, on, off])


def _scalar_as(ctx: EmitContext, i: int, dtype: str) -> str:
    """Scalar input ``i`` in ``dtype``."""
    known = ctx.const(i)
    if known is not None:
        with np.errstate(all="ignore"):
            return ctx.constant(np.asarray(known).astype(dtype))
    return ctx.input(i) if ctx.type_of(i).dtype == dtype else ctx.cast(ctx.input(i), dtype)


#: The most elements of a range with known bounds that the export writes as an initializer;
#: a longer one is a ``Range`` node (from opset 11), which the file holds in a few bytes.
RANGE_CONSTANT_MAX = 1 << 16


@emitter("arange")
def _arange(ctx: EmitContext) -> str:
    a = ctx.attrs
    bounds = [a["start"], a["stop"], a["step"]]
    if not any(isinstance(v, DimExpr) for v in bounds) and (
            ctx.opset < 11 or ctx.out_type.size <= RANGE_CONSTANT_MAX):
        # the bounds are attributes, so the result is known
        return ctx.constant(ctx.node.expr.op.kernel((), a), hint="range")
    start, stop = (0, a["start"]) if a["stop"] is None else (a["start"], a["stop"])
    dtype = ctx.out_type.dtype
    scalars = []
    for v in (start, stop, a["step"]):
        if not isinstance(v, DimExpr):
            scalars.append(ctx.constant(np.array(v, dtype=dtype)))
            continue
        scalar = ctx.emit("Reshape", [ctx.dims([v]), ctx.int64s([], "scalar")])
        scalars.append(scalar if dtype == "int64" else ctx.cast(scalar, dtype))
    ctx.need_opset(11, "Range")
    return ctx.emit("Range", scalars)


@emitter("nn.depth_to_space", "nn.space_to_depth")
def _depth_space(ctx: EmitContext) -> str:
    a = ctx.attrs
    to_space = ctx.node.op == "nn.depth_to_space"
    x = ctx.input(0)
    nhwc = a["layout"] == "NHWC"
    if nhwc:
        x = ctx.transpose(x, [0, 3, 1, 2])
    if a["mode"] == "DCR":
        y = ctx.emit("DepthToSpace" if to_space else "SpaceToDepth", [x],
                     blocksize=a["block_size"])
    elif to_space and ctx.opset >= 11:
        y = ctx.emit("DepthToSpace", [x], blocksize=a["block_size"], mode="CRD")
    else:
        # DepthToSpace has mode from opset 11, SpaceToDepth from 28: the CRD order is a
        # Reshape, a Transpose and a Reshape
        y = _depth_space_by_reshape(ctx, x, to_space, a["block_size"])
    return ctx.transpose(y, [0, 2, 3, 1]) if nhwc else y


def _depth_space_by_reshape(ctx: EmitContext, x: str, to_space: bool, b: int) -> str:
    n, c, h, w = ctx.type_of(0).shape if ctx.attrs["layout"] == "NCHW" else \
        [ctx.type_of(0).shape[i] for i in (0, 3, 1, 2)]
    if to_space:  # CRD: channel (c, row, column)
        x = ctx.reshape(x, [n, c // (b * b), b, b, h, w])
        x = ctx.transpose(x, [0, 1, 4, 2, 5, 3])
        return ctx.reshape(x, [n, c // (b * b), h * b, w * b])
    x = ctx.reshape(x, [n, c, h // b, b, w // b, b])
    x = ctx.transpose(x, [0, 1, 3, 5, 2, 4])  # (c, row, column) order: CRD
    return ctx.reshape(x, [n, c * b * b, h // b, w // b])
