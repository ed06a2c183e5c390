"""Emitters of the indexing and repetition ops: ``take``, ``strided_slice``, ``broadcast_to``
and ``tile``."""

from __future__ import annotations

import numpy as np
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
        size = int(np.prod(data_ty.shape, dtype=np.int64))
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
    elif mode == "wrap":
        # Gather takes negative indices from opset 11 on, Mod exists from 10 on
        if ctx.opset < 10:
            raise ctx.fail("take(mode='wrap') of computed indices needs opset >= 10")
        idx = ctx.emit("Mod", [idx, ctx.constant(np.array(size, idx_dtype))], fmod=0)
    return ctx.emit("Gather", [data, idx], axis=axis)


@emitter("strided_slice")
def _strided_slice(ctx: EmitContext) -> str:
    a = ctx.attrs
    shape = tuple(ctx.type_of(0).shape)
    if tuple(ctx.out_type.shape) == shape and _is_whole(shape, a):
        return ctx.input(0)
    begin, end = list(a["begin"]), list(a["end"])
    axes = list(a["axes"]) if a["axes"] is not None else list(range(len(begin)))
    strides = list(a["strides"]) if a["strides"] is not None else [1] * len(begin)
    if ctx.opset >= 10:
        return ctx.emit("Slice", [ctx.input(0), ctx.int64s(begin, "starts"),
                                  ctx.int64s(end, "ends"), ctx.int64s(axes, "axes"),
                                  ctx.int64s(strides, "steps")])
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
    if tuple(ctx.type_of(0).shape) == shape:
        return ctx.input(0)
    return ctx.emit("Expand", [ctx.input(0), ctx.int64s(shape)])


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
    return ctx.emit("Tile", [x, ctx.int64s(reps, "repeats")])
