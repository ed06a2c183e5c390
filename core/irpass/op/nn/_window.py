"""Sliding-window arithmetic and attributes shared by convolution and pooling
in 1, 2 and 3 spatial dimensions.

Sizes follow the usual formula: a kernel of size ``k`` with dilation ``d``
spans ``d * (k - 1) + 1`` input elements, and with stride ``s`` over
``size + before + after`` padded elements it fits
``(padded - span) // s + 1`` times.

In ceil mode the division rounds up, except that a last window starting
past the input and the leading padding (entirely in the trailing padding)
is dropped. That is PyTorch's and ONNX's rule, kept because ONNX import
relies on it. TVM's topi differs: it drops no window, so its ceil-mode
output can be one larger along an axis. Example: a 5x5 input, pool size 1,
stride 3, no padding, ceil mode gives 2x2 here but 3x3 in TVM (a third
window at 6, past the input).

Layouts name each axis with a letter: ``N`` batch, ``C`` channels and the
spatial axes ``W`` (1-D), ``HW`` (2-D) or ``DHW`` (3-D). Per-axis attributes
(strides, dilation, pool and kernel sizes) are stored in spatial order
(depth, height, width) and padding as all the leading pads then all the
trailing ones, as TVM stores them: (left, right) in 1-D, (top, left, bottom,
right) in 2-D, (front, top, left, back, bottom, right) in 3-D.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...ir.dims import Dim, dim_min
from ...ir.op import attr_ints
from .._common import known_gt, static_dim

#: The spatial axis letters of an op with 1, 2 or 3 spatial dimensions.
SPATIAL: dict[int, str] = {1: "W", 2: "HW", 3: "DHW"}
#: How messages name each spatial axis.
AXIS_NAMES: dict[str, str] = {"D": "depth", "H": "height", "W": "width"}


def exact_sum_dtype(dtype: str) -> str:
    """The dtype a convolution sums its products in: float64 for float16/float32, so the
    result is the correctly rounded one whatever order the products sum in, and rewrites
    (folding a scale into the weight, im2col or not) do not move it by more than their own
    rounding."""
    return "float64" if dtype in ("float16", "float32") else dtype


def data_layouts(ndim: int) -> tuple[str, str]:
    """The channels-first and channels-last data layouts of an ``ndim``-D op
    (``NCHW`` and ``NHWC`` for 2-D)."""
    sp = SPATIAL[ndim]
    return "NC" + sp, "N" + sp + "C"


def window_out_size(
    op: str,
    axis: str,
    size: Dim,
    kernel: int,
    stride: int,
    dilation: int,
    before: int,
    after: int,
    ceil_mode: bool = False,
) -> Dim:
    """The number of window positions along one spatial axis (``axis`` names it in errors).

    With ``ceil_mode``, a last window starting in the trailing padding is
    dropped (PyTorch/ONNX; TVM keeps it, see the module docstring). A symbolic
    ``size`` gives a symbolic count (the window itself must be static).
    """
    span = dilation * (kernel - 1) + 1
    room = size + before + after - span
    if type(room) is not int:
        return _symbolic_out_size(room, size, stride, before, ceil_mode, op, axis, span)
    if room < 0:
        raise ValueError(
            f"{op}: the window spans {span} elements along {axis} (size {kernel}, dilation "
            f"{dilation}) but the padded input has only {size + before + after} "
            f"({size} + padding {before} + {after})"
        )
    if not ceil_mode:
        return room // stride + 1
    out = -(-room // stride) + 1
    if (out - 1) * stride >= size + before:
        out -= 1
    return out


def _symbolic_out_size(
    room: Dim, size: Dim, stride: int, before: int, ceil_mode: bool, op: str, axis: str,
    span: int,
) -> Dim:
    """:func:`window_out_size` for a symbolic size: the same formula, the ceil-mode drop
    of a window starting in the trailing padding written as a ``min`` with the number of
    window starts before it (``ceil((size + before) / stride)``)."""
    if known_gt(0, room):
        raise ValueError(
            f"{op}: the window spans {span} elements along {axis} but the padded input "
            f"has only {room + span} ({size} + padding)"
        )
    if not ceil_mode:
        return room // stride + 1
    out = (room + stride - 1) // stride + 1
    return dim_min(out, (size + before + stride - 1) // stride)


def static_window_shape(op: str, name: str, shape: tuple[Dim, ...], layout: str) -> None:
    """``ValueError`` naming the op, the axis and the symbol when a dim of ``shape`` (a
    weight's, whose channels and kernel size the op needs as numbers) is symbolic."""
    for letter, d in zip(layout, shape, strict=True):
        if type(d) is not int:
            what = {"O": "output channels (O)", "I": "input channels (I)"}.get(
                letter, f"kernel {AXIS_NAMES.get(letter, letter)} ({letter})"
            )
            static_dim(op, f"the {what} of {name} {shape}", d)


def out_sizes(
    op: str,
    sizes: Sequence[Dim],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
    ceil_mode: bool = False,
) -> tuple[Dim, ...]:
    """:func:`window_out_size` along every spatial axis (``padding`` as befores then
    afters)."""
    n = len(sizes)
    names = SPATIAL[n] if n in SPATIAL else "?" * n
    return tuple(
        window_out_size(
            op, AXIS_NAMES.get(names[i], f"axis {i}"), sizes[i], kernel[i], strides[i],
            dilation[i], padding[i], padding[n + i], ceil_mode,
        )
        for i in range(n)
    )


def tap_slices(
    tap: Sequence[int],
    strides: Sequence[int],
    dilation: Sequence[int],
    out: Sequence[int],
) -> tuple[slice, ...]:
    """The positions, along each spatial axis of the padded input, that kernel tap
    ``tap`` reads: one element per output position."""
    return tuple(
        slice(i * d, i * d + (o - 1) * s + 1, s)
        for i, s, d, o in zip(tap, strides, dilation, out, strict=True)
    )


def taps(kernel: Sequence[int]) -> Any:
    """Every kernel tap (a tuple of per-axis offsets), in row-major order."""
    return itertools.product(*(range(k) for k in kernel))


def reduce_taps(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilation: Sequence[int],
    out: Sequence[int],
    combine: np.ufunc,
) -> np.ndarray:
    """Combine (e.g. ``np.maximum``, ``np.add``) the windows of ``x`` (N, C, spatial...)
    into an (N, C, out...) array, one kernel tap at a time.

    Each tap is a strided slice of ``x``, so no window array is ever built.
    ``x`` must already be padded far enough for ``out`` windows.
    """
    acc: np.ndarray | None = None
    lead = (slice(None), slice(None))
    for tap in taps(kernel):
        view = x[lead + tap_slices(tap, strides, dilation, out)]
        if acc is None:
            acc = np.array(view)
        else:
            combine(acc, view, out=acc)
    assert acc is not None  # kernel sizes are >= 1
    return acc


# -- attribute converters ----------------------------------------------------------------------


def attr_spatial(ndim: int, minimum: int) -> Callable[[Any, str], tuple[int, ...]]:
    """``ndim`` ints (one per spatial axis), each >= ``minimum``; one int is used for all."""
    names = ", ".join(AXIS_NAMES[a] for a in SPATIAL[ndim])

    def convert(value: Any, where: str) -> tuple[int, ...]:
        vals = attr_ints(value, where)
        if len(vals) == 1:
            vals = vals * ndim
        if len(vals) != ndim:
            raise ValueError(f"{where} must be 1 or {ndim} ints ({names}), got {value!r}")
        for v in vals:
            if v < minimum:
                raise ValueError(f"{where} values must be >= {minimum}, got {value!r}")
        return tuple(vals)

    convert.__name__ = f"attr_spatial{ndim}d_min{minimum}"
    return convert


def attr_optional_spatial(ndim: int) -> Callable[[Any, str], tuple[int, ...] | None]:
    """Like ``attr_spatial(ndim, 1)``, or None."""
    inner = attr_spatial(ndim, 1)

    def convert(value: Any, where: str) -> tuple[int, ...] | None:
        return None if value is None else inner(value, where)

    convert.__name__ = f"attr_optional_spatial{ndim}d"
    return convert


def attr_padding(ndim: int) -> Callable[[Any, str], tuple[int, ...]]:
    """Padding of an ``ndim``-D op as ``2 * ndim`` ints: every leading pad, then every
    trailing one. One int pads all sides; ``ndim`` ints pad both ends of each axis."""
    sp = SPATIAL[ndim]
    sides = ", ".join([f"{AXIS_NAMES[a]} before" for a in sp] + [f"{AXIS_NAMES[a]} after"
                                                               for a in sp])

    def convert(value: Any, where: str) -> tuple[int, ...]:
        vals = attr_ints(value, where)
        if len(vals) == 1:
            vals = vals * (2 * ndim)
        elif len(vals) == ndim:
            vals = vals + vals
        elif len(vals) != 2 * ndim:
            raise ValueError(
                f"{where} must be 1, {ndim} (one per axis) or {2 * ndim} ({sides}) ints, "
                f"got {value!r}"
            )
        for v in vals:
            if v < 0:
                raise ValueError(f"{where} values must be >= 0, got {value!r}")
        return tuple(vals)

    convert.__name__ = f"attr_padding{ndim}d"
    return convert


def attr_weight_layout(ndim: int) -> Callable[[Any, str], str]:
    """A weight layout of an ``ndim``-D convolution: any ordering of ``O``, ``I`` and the
    spatial letters (``OIW``, ``WIO``; ``OIDHW``, ``DHWIO``, ...)."""
    letters = "OI" + SPATIAL[ndim]

    def convert(value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise TypeError(f"{where} must be a layout string, got {value!r}")
        if len(value) != len(letters) or sorted(value) != sorted(letters):
            raise ValueError(
                f"{where}: unsupported layout {value!r}; expected an ordering of "
                f"{', '.join(letters)} such as {letters} or {SPATIAL[ndim]}IO"
            )
        return value

    convert.__name__ = f"attr_weight_layout{ndim}d"
    return convert
