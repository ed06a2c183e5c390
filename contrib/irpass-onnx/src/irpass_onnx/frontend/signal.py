"""Converters of the ONNX signal ops: DFT, STFT, the window functions and MelWeightMatrix.

The transform length is static (a constant ``dft_length``, ``frame_length`` or the axis
size), so a DFT is two products with constant cosine and sine matrices, computed in float64
(as numpy's FFT, ONNX's reference, computes) and rounded to the input's dtype once; a long
one (matrices over 2**20 values) takes one Cooley-Tukey step over two factors of its length,
so that its matrices stay small (a long prime length is refused). The
window functions and MelWeightMatrix depend only on their scalar operands: they import as
constants (a run-time operand makes the node a dynamic call, see :mod:`.dynamic`).
"""

from __future__ import annotations

import math

import numpy as np
from irpass.ir import Constant, Expr, Tuple
from irpass.ir.types import numpy_dtype

from ..dtypes import dtype_of
from .context import NodeContext
from .nn import call
from .registry import converter

__all__: list[str] = []

_FLOATS = ("float16", "float32", "float64", "bfloat16")
_WIDE = "float64"
#: A DFT whose matrices have at most this many values is one product (2**20: 8 MiB each);
#: a longer one is factored (:func:`_factored`).
_DIRECT_MAX = 1 << 20
#: The largest matrix a factored DFT may use: 2**24 float64 values, 128 MiB.
_MAX_MATRIX = 1 << 24


def _scalar_int(ctx: NodeContext, i: int, name: str, optional: bool = False) -> int | None:
    value = ctx.const_input(i, name, optional=optional)
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.size != 1 or arr.dtype.kind not in "iu":
        ctx.fail(f"{name} must be a single integer, got {arr.dtype.name} of shape {arr.shape}")
    return int(arr.reshape(()))


def _angles(rows: int, cols: int, n: int) -> np.ndarray:
    """2 pi (m k mod n) / n for m < rows, k < cols: reducing the product first keeps the
    angles (and the matrices) exact to float64 for long transforms."""
    mk = (np.arange(rows, dtype=np.int64)[:, None] * np.arange(cols, dtype=np.int64)[None, :])
    return 2.0 * np.pi * (mk % n) / n


def _wide(x: np.ndarray) -> Constant:
    return Constant(np.ascontiguousarray(x, dtype=np.float64))


def _dft(ctx: NodeContext, x: Expr, shape: tuple[int, ...], dtype: str, axis: int, n: int,
         inverse: bool, onesided: bool) -> Expr:
    """The DFT of ``x`` (``shape``, last axis 1 = real or 2 = complex) along ``axis`` with
    length ``n``: ``(..., bins, 2)``, or ``(..., n, 1)`` for the one-sided inverse."""
    rank = len(shape)
    complex_in = shape[-1] == 2
    length = shape[axis]
    # the signal axis last, the complex axis just before it: (..., c, length)
    perm = [a for a in range(rank - 1) if a != axis] + [rank - 1, axis]
    xt = call("transpose", x, axes=perm) if perm != list(range(rank)) else x
    xt = call("cast", xt, dtype=_WIDE) if dtype != _WIDE else xt
    irfft = inverse and onesided
    # how many input values the transform reads: numpy pads or truncates to this
    used = min(length, n // 2 + 1 if irfft else n)
    bins = n if irfft else n // 2 + 1 if onesided else n
    if used < length:
        xt = call("strided_slice", xt, begin=[0], end=[used], axes=[rank - 1])

    def part(j: int) -> Expr:
        sl = call("strided_slice", xt, begin=[j], end=[j + 1], axes=[rank - 2])
        return call("squeeze", sl, axis=[rank - 2])

    re = part(0)
    im = part(1) if complex_in else None
    others = [a for a in range(rank - 1) if a != axis]
    if used * bins <= _DIRECT_MAX:
        parts = _direct(re, im, used, n, bins, inverse, irfft)
    else:
        parts = _factored(ctx, re, im, [shape[a] for a in others], used, n, inverse, onesided)
    # (..., bins) each -> (..., bins, c) -> the bins back at ``axis``
    y = call("concatenate", Tuple([call("expand_dims", p, axis=rank - 1) for p in parts]),
             axis=rank - 1) if len(parts) > 1 else call("expand_dims", parts[0], axis=rank - 1)
    back = [0] * rank
    for pos, a in enumerate(others):
        back[a] = pos
    back[axis] = rank - 2
    back[rank - 1] = rank - 1
    if back != list(range(rank)):
        y = call("transpose", y, axes=back)
    return call("cast", y, dtype=dtype) if dtype != _WIDE else y


def _direct(re: Expr, im: Expr | None, used: int, n: int, bins: int, inverse: bool,
            irfft: bool) -> list[Expr]:
    """The transform of (..., used) parts as products with (used, bins) matrices: the real
    and imaginary parts of the result (the real part only for the one-sided inverse)."""
    if irfft:
        # a real signal from its one-sided spectrum: the bins 1..n/2-1 stand for their
        # conjugate mirror too (weight 2); DC and Nyquist count once, their imaginary parts
        # are ignored (numpy's irfft)
        theta = _angles(used, n, n)
        weight = np.full((used, 1), 2.0)
        weight[0] = 1.0
        nyquist = n % 2 == 0 and used == n // 2 + 1
        if nyquist:
            weight[-1] = 1.0
        cos, sin = weight * np.cos(theta) / n, weight * np.sin(theta) / n
        sin[0] = 0.0
        if nyquist:
            sin[-1] = 0.0
        y = call("matmul", re, _wide(cos))
        if im is not None:
            y = call("subtract", y, call("matmul", im, _wide(sin)))
        return [y]
    theta = _angles(used, bins, n)
    cos, sin = np.cos(theta), np.sin(theta)
    if inverse:
        cos, sin = cos / n, sin / n
    return _cmatmul(re, im, cos, sin if inverse else -sin)


def _cmatmul(re: Expr, im: Expr | None, m_re: np.ndarray, m_im: np.ndarray
             ) -> list[Expr]:
    """(re + i im) @ (m_re + i m_im), ``im`` None for a real left side."""
    y_re = call("matmul", re, _wide(m_re))
    y_im = call("matmul", re, _wide(m_im))
    if im is not None:
        y_re = call("subtract", y_re, call("matmul", im, _wide(m_im)))
        y_im = call("add", y_im, call("matmul", im, _wide(m_re)))
    return [y_re, y_im]


def _factored(ctx: NodeContext, re: Expr, im: Expr | None, lead: list[int], used: int, n: int,
              inverse: bool, onesided: bool) -> list[Expr]:
    """A long transform as one Cooley-Tukey step, n = n1 * n2: n2 transforms of length n1,
    a twiddle product, n1 transforms of length n2 (matrices of n1^2 and n2^2 values instead
    of n^2). Same parts as :func:`_direct`."""
    n1 = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    n2 = n // n1
    if n1 == 1 or n2 * n2 > _MAX_MATRIX:
        ctx.fail(f"a DFT of length {n} needs a {n2}x{n2} constant matrix (more than "
                 f"{_MAX_MATRIX} elements); irpass computes a DFT as matrix products over "
                 "the factors of its length")
    r = len(lead)

    def padded(x: Expr, size: int) -> Expr:
        if used >= size:
            return x
        zeros = Constant(np.zeros(lead + [size - used]))
        return call("concatenate", Tuple([x, zeros]), axis=r)

    if inverse and onesided:
        # the whole spectrum from its one-sided half: X[k] = conj(X[n - k]) above n / 2; the
        # imaginary parts of DC and Nyquist are ignored (numpy's irfft)
        half = n // 2 + 1
        index = Constant(np.concatenate([np.arange(half), n - np.arange(half, n)]))
        re = call("take", padded(re, half), index, axis=r)
        if im is not None:
            sign = np.where(np.arange(n) < half, 1.0, -1.0)
            sign[0] = 0.0
            if n % 2 == 0:
                sign[n // 2] = 0.0
            im = call("multiply", call("take", padded(im, half), index, axis=r), _wide(sign))
    else:
        re = padded(re, n)
        im = None if im is None else padded(im, n)
    s = 1.0 if inverse else -1.0  # e^{s i theta}

    def split(x: Expr) -> Expr:  # index n2 * m1 + m2 -> (..., m2, m1)
        x = call("reshape", x, newshape=lead + [n1, n2])
        return call("transpose", x, axes=list(range(r)) + [r + 1, r])

    t1 = _angles(n1, n1, n1)
    b_re, b_im = _cmatmul(split(re), None if im is None else split(im),
                          np.cos(t1), s * np.sin(t1))  # (..., m2, k1)
    tw = _angles(n2, n1, n)  # the twiddles e^{s i 2 pi m2 k1 / n}
    tw_re, tw_im = _wide(np.cos(tw)), _wide(s * np.sin(tw))
    c_re = call("subtract", call("multiply", b_re, tw_re), call("multiply", b_im, tw_im))
    c_im = call("add", call("multiply", b_re, tw_im), call("multiply", b_im, tw_re))
    swap = list(range(r)) + [r + 1, r]
    t2 = _angles(n2, n2, n2)
    scale = 1.0 / n if inverse else 1.0
    d = _cmatmul(call("transpose", c_re, axes=swap), call("transpose", c_im, axes=swap),
                 scale * np.cos(t2), scale * s * np.sin(t2))  # (..., k1, k2)
    # bin k1 + n1 * k2: (..., k2, k1) flattened
    out = [call("reshape", call("transpose", p, axes=swap), newshape=lead + [n]) for p in d]
    if inverse and onesided:
        return out[:1]
    if onesided:
        out = [call("strided_slice", p, begin=[0], end=[n // 2 + 1], axes=[r]) for p in out]
    return out


def _signal_type(ctx: NodeContext, i: int, what: str) -> tuple[tuple[int, ...], str]:
    ty = ctx.type_of(i)
    if ty.dtype not in _FLOATS:
        ctx.fail(f"{what} has dtype {ty.dtype}; expected one of {', '.join(_FLOATS)}")
    if len(ty.shape) < 2 or ty.shape[-1] not in (1, 2):
        ctx.fail(f"{what} {ty} must end in an axis of 1 (real) or 2 (complex) values")
    return ty.shape, ty.dtype


@converter("DFT", since=17)
def _dft_op(ctx: NodeContext) -> Expr:
    shape, dtype = _signal_type(ctx, 0, "input")
    rank = len(shape)
    if ctx.opset >= 20:
        axis = _scalar_int(ctx, 2, "axis", optional=True)
        axis = -2 if axis is None else axis
    else:
        axis = int(ctx.attr("axis", 1))
    if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        ctx.fail(f"axis {axis} is out of range for a rank-{rank} input (the last axis holds "
                 "the real and imaginary parts)")
    axis %= rank
    inverse = bool(ctx.attr("inverse", 0))
    onesided = bool(ctx.attr("onesided", 0))
    if onesided and not inverse and shape[-1] == 2:
        ctx.fail("onesided=1 with inverse=0 takes a real input (last axis 1)")
    n = _scalar_int(ctx, 1, "dft_length", optional=True)
    if n is None:
        n = 2 * (shape[axis] - 1) if inverse and onesided else shape[axis]
    if n < 1:
        ctx.fail(f"dft_length {n} must be positive")
    return _dft(ctx, ctx.input(0), shape, dtype, axis, n, inverse, onesided)


@converter("STFT", since=17)
def _stft(ctx: NodeContext) -> Expr:
    shape, dtype = _signal_type(ctx, 0, "signal")
    if len(shape) != 3:
        ctx.fail(f"signal of shape {shape} must be 3-D (batch, length, 1 or 2)")
    batch, length, parts = shape
    step = _scalar_int(ctx, 1, "frame_step")
    frame = _scalar_int(ctx, 3, "frame_length", optional=True)
    window = ctx.input(2, optional=True)
    if window is not None:
        wt = ctx.type_of(2)
        if len(wt.shape) != 1 or wt.dtype != dtype:
            ctx.fail(f"window {wt} must be a 1-D {dtype} tensor")
        if frame is not None and frame != wt.shape[0]:
            ctx.fail(f"frame_length {frame} differs from the window's length {wt.shape[0]}")
        frame = wt.shape[0]
    if frame is None:
        frame = length
    if step < 1 or not 1 <= frame <= length:
        ctx.fail(f"frame_step {step} must be positive and frame_length {frame} within the "
                 f"signal's {length} samples")
    onesided = bool(ctx.attr("onesided", 1))
    if onesided and parts == 2:
        ctx.fail("onesided=1 takes a real signal (last axis 1)")
    frames = 1 + (length - frame) // step
    index = (np.arange(frames)[:, None] * step + np.arange(frame)[None, :]).astype(np.int64)
    x = call("take", ctx.input(0), Constant(index), axis=1)  # (batch, frames, frame, parts)
    if window is not None:
        x = call("multiply", x, call("reshape", window, newshape=[1, 1, frame, 1]))
    return _dft(ctx, x, (batch, frames, frame, parts), dtype, 2, frame, False, onesided)


# -- windows and the mel filter bank (constants) ----------------------------------------------


def _output_dtype(ctx: NodeContext) -> np.dtype:
    try:
        return numpy_dtype(dtype_of(int(ctx.attr("output_datatype", 1)),
                                    "attribute 'output_datatype'"))
    except ValueError as err:
        ctx.fail(str(err))


def _window_points(ctx: NodeContext) -> tuple[np.ndarray, int]:
    """The sample indices (float64) of a window and its period: ``size`` for a periodic
    window, ``size - 1`` for a symmetric one."""
    size = _scalar_int(ctx, 0, "size")
    if size < 0:
        ctx.fail(f"size {size} must not be negative")
    return np.arange(size, dtype=np.float64), size if ctx.attr("periodic", 1) else size - 1


def _window_const(ctx: NodeContext, values: np.ndarray) -> Constant:
    return Constant(values.astype(_output_dtype(ctx)))


@converter("HannWindow", since=17)
def _hann(ctx: NodeContext) -> Expr:
    n, period = _window_points(ctx)
    return _window_const(ctx, np.sin(np.pi * n / period) ** 2)


@converter("HammingWindow", since=17)
def _hamming(ctx: NodeContext) -> Expr:
    n, period = _window_points(ctx)
    alpha = 25.0 / 46.0  # ONNX's (and torch's) exact alpha, not 0.54
    return _window_const(ctx, alpha - (1.0 - alpha) * np.cos(2.0 * np.pi * n / period))


@converter("BlackmanWindow", since=17)
def _blackman(ctx: NodeContext) -> Expr:
    n, period = _window_points(ctx)
    # the cosine terms summed before the constant, so that the ends are exactly 0
    cosines = -0.5 * np.cos(2.0 * np.pi * n / period) + 0.08 * np.cos(4.0 * np.pi * n / period)
    return _window_const(ctx, cosines + 0.42)


@converter("MelWeightMatrix", since=17)
def _mel_weight_matrix(ctx: NodeContext) -> Expr:
    mels = _scalar_int(ctx, 0, "num_mel_bins")
    n = _scalar_int(ctx, 1, "dft_length")
    rate = _scalar_int(ctx, 2, "sample_rate")
    edges = []
    for i, name in ((3, "lower_edge_hertz"), (4, "upper_edge_hertz")):
        v = np.asarray(ctx.const_input(i, name))
        if v.size != 1 or v.dtype.kind != "f":
            ctx.fail(f"{name} must be a single float, got {v.dtype.name} of shape {v.shape}")
        edges.append(v.reshape(()))
    if mels < 1 or n < 1 or rate < 1:
        ctx.fail(f"num_mel_bins {mels}, dft_length {n} and sample_rate {rate} must be positive")
    bins = n // 2 + 1

    def mel(hz: np.ndarray) -> np.ndarray:
        # 2595 log10(1 + f / 700), in the operand's dtype up to the division by ln 10 as
        # ONNX's reference computes it: the band edges are floored to bins, so the
        # rounding must agree
        return 2595 * np.log1p(hz / 700) / np.log(10)

    low, high = mel(edges[0]), mel(edges[1])
    # num_mel_bins + 2 points evenly spaced in mel, each mapped to its DFT bin
    points = np.arange(mels + 2) * ((high - low) / (mels + 2)) + low
    hz = 700 * np.expm1(points / 2595 * np.log(10))
    edge_bins = (((n + 1) * hz) // rate).astype(np.int64)
    if edge_bins.min() < 0:
        ctx.fail(f"the band edges {[float(e) for e in edges]} Hz give a negative bin")
    out = np.zeros((bins, mels))
    for i in range(mels):
        left, center, right = (int(v) for v in edge_bins[i:i + 3])
        if center == left:
            if center >= bins:
                ctx.fail(f"mel band {i} peaks at bin {center}, past the {bins} bins")
            out[center, i] = 1.0
        else:
            j = np.arange(left, center + 1)
            if j.max() >= bins:
                ctx.fail(f"mel band {i} reaches bin {j.max()}, past the {bins} bins")
            out[j, i] = (j - left) / (center - left)
        if right > center:
            j = np.arange(center, right)
            if j.max() >= bins:
                ctx.fail(f"mel band {i} reaches bin {j.max()}, past the {bins} bins")
            out[j, i] = (right - j) / (right - center)
    return Constant(out.astype(_output_dtype(ctx)))
