"""Sliding-window arithmetic shared by convolution and pooling.

Sizes follow the usual formula: a kernel of size ``k`` with dilation ``d``
spans ``d * (k - 1) + 1`` input elements, and with stride ``s`` over
``size + before + after`` padded elements it fits
``(padded - span) // s + 1`` times. In ceil mode the division rounds up,
except that a last window starting past the input and the leading padding
(entirely in the trailing padding) is dropped, as in TVM and PyTorch.
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
    """The number of window positions along one spatial axis (``axis`` names it in errors)."""
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
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilation
    oh, ow = out_hw
    acc: np.ndarray | None = None
    for i in range(kh):
        rows = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
        for j in range(kw):
            cols = slice(j * dw, j * dw + (ow - 1) * sw + 1, sw)
            tap = x[:, :, rows, cols]
            if acc is None:
                acc = np.array(tap)
            else:
                combine(acc, tap, out=acc)
    assert acc is not None  # kernel sizes are >= 1
    return acc
