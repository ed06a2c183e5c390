"""Sliding-window arithmetic shared by convolution and pooling.

Sizes follow the usual formula: a kernel of size ``k`` with dilation ``d``
spans ``d * (k - 1) + 1`` input elements, and with stride ``s`` over
``size + before + after`` padded elements it fits
``(padded - span) // s + 1`` times.

In ceil mode the division rounds up, except that a last window starting
past the input and the leading padding (entirely in the trailing padding)
is dropped. That is PyTorch's and ONNX's rule, kept because ONNX import
relies on it. TVM's topi differs: it drops no window, so its ceil-mode
output can be one larger along an axis. Example: a 5x5 input, pool size 1,
stride 3, no padding, ceil mode gives 2x2 here (windows at 0 and 3) but
3x3 in TVM (a third window at 6, past the input).
"""

from __future__ import annotations

import numpy as np


def window_out_size(
    op: str,
    axis: str,
    size: int,
    kernel: int,
    stride: int,
    dilation: int,
    before: int,
    after: int,
    ceil_mode: bool = False,
) -> int:
    """The number of window positions along one spatial axis (``axis`` names it in errors).

    With ``ceil_mode``, a last window starting in the trailing padding is
    dropped (PyTorch/ONNX; TVM keeps it, see the module docstring).
    """
    span = dilation * (kernel - 1) + 1
    room = size + before + after - span
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


def tap_slices(
    tap: tuple[int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    out_hw: tuple[int, int],
) -> tuple[slice, slice]:
    """The rows and columns of the padded input that kernel tap ``(i, j)`` reads,
    one element per output position."""
    (i, j), (sh, sw), (dh, dw), (oh, ow) = tap, strides, dilation, out_hw
    rows = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
    cols = slice(j * dw, j * dw + (ow - 1) * sw + 1, sw)
    return rows, cols


def reduce_taps(
    x: np.ndarray,
    kernel: tuple[int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    out_hw: tuple[int, int],
    combine: np.ufunc,
) -> np.ndarray:
    """Combine (e.g. ``np.maximum``, ``np.add``) the windows of ``x`` (N, C, H, W) into
    an (N, C, OH, OW) array, one kernel tap at a time.

    Each tap is a strided slice of ``x``, so no window array is ever built.
    ``x`` must already be padded far enough for ``out_hw`` windows.
    """
    acc: np.ndarray | None = None
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            rows, cols = tap_slices((i, j), strides, dilation, out_hw)
            tap = x[:, :, rows, cols]
            if acc is None:
                acc = np.array(tap)
            else:
                combine(acc, tap, out=acc)
    assert acc is not None  # kernel sizes are >= 1
    return acc
