"""DFT (opsets 17 and 20), STFT, the Hann/Hamming/Blackman windows and MelWeightMatrix
against numpy's FFT (float64) and onnxruntime: real and complex input, every axis, forward,
inverse, one-sided (RFFT and IRFFT), dft_length padding and truncating, frames with and
without a window, periodic and symmetric windows, output dtypes, and the errors."""

from __future__ import annotations

import itertools

import irpass
import numpy as np
import onnx_cases
import pytest
from irpass_onnx import OnnxImportError, from_onnx
from irpass_onnx.frontend import signal as signal_frontend
from irpass_onnx.testing import assert_outputs_close
from irpass_onnx.testing import run_onnxruntime as run_ort
from onnx import TensorProto, helper
from onnx_cases import rand


def build(op, inputs, consts, opset, out_type=TensorProto.FLOAT, **attrs):
    """A one-node model: ``inputs`` are graph inputs, ``consts`` initializers (in order of
    the node's input list; a None value leaves that slot empty)."""
    names, feeds, inits = [], {}, {}
    for name, value in {**inputs, **consts}.items():
        if value is None:
            names.append("")
            continue
        names.append(name)
        (feeds if name in inputs else inits)[name] = value
    order = list(inputs) + list(consts)
    names = [names[order.index(n)] for n in order]
    while names and not names[-1]:
        names.pop()
    node = helper.make_node(op, names, ["y"], **attrs)
    return onnx_cases.make_model([node], feeds, {"y": out_type}, opset, inits), feeds


def evaluate(model, feeds):
    return irpass.evaluate(from_onnx(model), **feeds)


def close(got, want, rtol=1e-5, scaled_atol=1e-5, atol=0.0):
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert_outputs_close([got], [want], rtol=rtol, atol=atol, scaled_atol=scaled_atol)


def as_pairs(z: np.ndarray, dtype="float32") -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1).astype(dtype)


# -- DFT ---------------------------------------------------------------------------------------


def dft_ref(x, axis, n, inverse, onesided):
    """numpy's float64 FFT of the (..., 1 or 2) ONNX layout."""
    z = x[..., 0].astype(np.float64)
    if x.shape[-1] == 2:
        z = z + 1j * x[..., 1]
    if inverse and onesided:
        return np.fft.irfft(z, n=n, axis=axis)[..., None].astype(x.dtype)
    y = np.fft.ifft(z, n=n, axis=axis) if inverse else np.fft.fft(z, n=n, axis=axis)
    if onesided:
        y = np.take(y, np.arange(n // 2 + 1), axis=axis)
    return as_pairs(y, x.dtype)


def _dft_length(size: int, inverse: int, onesided: int, length: str | None) -> int:
    """The transform length a case asks for, along an axis of ``size``."""
    if length is None:
        return 2 * (size - 1) if inverse and onesided else size
    return max(size - 2, 1) if length == "short" else size + 3


_DFT_CASES = [
    (opset, shape, axis, inverse, onesided, length)
    for opset, (shape, axis), (inverse, onesided), length in itertools.product(
        [17, 20],
        [((2, 6, 1), 1), ((3, 5, 4, 2), 1), ((3, 5, 4, 2), 2), ((3, 5, 4, 2), -2),
         ((2, 7, 2), -3), ((8, 1), 0)],
        [(0, 0), (1, 0), (0, 1), (1, 1)],
        [None, "short", "long"])
    # a negative axis is an input, so opset 20 only; a one-sided inverse needs 2 points
    if not (opset < 20 and axis < 0)
    and not (inverse and onesided and _dft_length(shape[axis], inverse, onesided, length) < 2)
]


@pytest.mark.parametrize("opset, shape, axis, inverse, onesided, length", _DFT_CASES)
def test_dft(opset, shape, axis, inverse, onesided, length) -> None:
    x = rand(*shape)
    if onesided and not inverse and shape[-1] == 2:
        x = x[..., :1].copy()  # RFFT takes a real signal
    if onesided and inverse and shape[-1] == 1:
        x = np.concatenate([x, x], axis=-1)  # IRFFT a complex spectrum
    n = _dft_length(x.shape[axis], inverse, onesided, length)
    consts = {"dft_length": None if length is None else np.array(n, dtype=np.int64)}
    attrs = {"inverse": inverse, "onesided": onesided}
    if opset >= 20:
        consts["axis"] = np.array(axis, dtype=np.int64)
    else:
        attrs["axis"] = axis
    model, feeds = build("DFT", {"x": x}, consts, opset, **attrs)
    close(evaluate(model, feeds), dft_ref(x, axis % x.ndim, n, inverse, onesided))


def test_dft_default_axis_and_against_onnxruntime() -> None:
    x = rand(2, 8, 3, 2)
    model, feeds = build("DFT", {"x": x}, {}, 20)  # axis -2 by default at opset 20
    close(evaluate(model, feeds), dft_ref(x, 2, 3, 0, 0))
    model, feeds = build("DFT", {"x": x}, {}, 17)  # axis 1 at opset 17
    got = evaluate(model, feeds)
    close(got, dft_ref(x, 1, 8, 0, 0))
    close(got, run_ort(model, feeds)[0], rtol=1e-4, scaled_atol=1e-5)


def test_dft_float64_and_float16() -> None:
    x = rand(4, 6, 1, dtype="float64")
    model, feeds = build("DFT", {"x": x}, {}, 17, out_type=TensorProto.DOUBLE)
    close(evaluate(model, feeds), dft_ref(x, 1, 6, 0, 0), rtol=1e-12, scaled_atol=1e-12)
    x16 = x.astype("float16")
    model, feeds = build("DFT", {"x": x16}, {}, 17, out_type=TensorProto.FLOAT16, inverse=1)
    close(evaluate(model, feeds), dft_ref(x16, 1, 6, 1, 0), rtol=1e-3, scaled_atol=1e-3)


@pytest.mark.parametrize("n", [12, 9, 10, 16])
@pytest.mark.parametrize("inverse, onesided", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("parts", [1, 2])
@pytest.mark.parametrize("delta", [0, -3, 2])  # the axis as long as n, longer, shorter
def test_dft_factored(monkeypatch, n, inverse, onesided, parts, delta) -> None:
    # every length takes the factored path (one Cooley-Tukey step) here
    monkeypatch.setattr(signal_frontend, "_DIRECT_MAX", 0)
    if onesided and not inverse:
        parts = 1
    if onesided and inverse:
        parts, size = 2, n // 2 + 1 - delta
    else:
        size = n - delta
    x = rand(2, size, 3, parts)
    model, feeds = build("DFT", {"x": x}, {"dft_length": np.array(n, np.int64)}, 17,
                         inverse=inverse, onesided=onesided)
    close(evaluate(model, feeds), dft_ref(x, 1, n, inverse, onesided), rtol=1e-5,
          scaled_atol=1e-6)


def test_dft_long() -> None:
    x = rand(1, 6000, 1)  # 6000 x 6000 matrices would be 275 MiB; factored as 75 x 80
    model, feeds = build("DFT", {"x": x}, {}, 17, onesided=1)
    close(evaluate(model, feeds), dft_ref(x, 1, 6000, 0, 1), rtol=1e-5, scaled_atol=1e-6)


# -- STFT --------------------------------------------------------------------------------------


def stft_ref(x, step, window, frame, onesided):
    frames = 1 + (x.shape[1] - frame) // step
    win = np.ones(frame) if window is None else window.astype(np.float64)
    z = x[..., 0].astype(np.float64) + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
    out = np.stack([np.fft.fft(z[:, f * step:f * step + frame] * win, axis=-1)
                    for f in range(frames)], axis=1)
    if onesided:
        out = out[..., : frame // 2 + 1]
    return as_pairs(out, x.dtype)


@pytest.mark.parametrize("step, frame, windowed", [(2, 5, True), (3, 4, False), (4, None, False),
                                                   (1, 8, True)])
# a one-sided STFT takes a real signal (one part)
@pytest.mark.parametrize("onesided, parts", [(0, 1), (0, 2), (1, 1)])
def test_stft(step, frame, windowed, onesided, parts) -> None:
    x = rand(2, 12, parts)
    window = np.hanning(frame).astype("float32") if windowed else None
    consts = {"frame_step": np.array(step, dtype=np.int64), "window": window,
              "frame_length": None if frame is None or windowed else np.array(frame, np.int64)}
    model, feeds = build("STFT", {"signal": x}, consts, 17, onesided=onesided)
    want = stft_ref(x, step, window, frame or 12, onesided)
    got = evaluate(model, feeds)
    close(got, want)
    if parts == 1 and frame is not None:  # onnxruntime needs a frame length
        close(got, run_ort(model, feeds)[0], rtol=1e-4, scaled_atol=1e-5)


def test_stft_window_at_run_time() -> None:
    x, window = rand(1, 10, 1), rand(4, seed=3)
    model, feeds = build("STFT", {"signal": x, "window": window},
                         {"frame_step": np.array(3, dtype=np.int64)}, 17)
    # the node's inputs are in the order signal, window, frame_step: rebuild it in order
    node = model.graph.node[0]
    del node.input[:]
    node.input.extend(["signal", "frame_step", "window"])
    close(evaluate(model, feeds), stft_ref(x, 3, window, 4, 1))


# -- windows and MelWeightMatrix ---------------------------------------------------------------


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
# a symmetric window of one point divides by zero
@pytest.mark.parametrize("periodic, size", [(1, 1), (0, 2), (1, 2), (0, 10), (1, 10)])
@pytest.mark.parametrize("out", [TensorProto.FLOAT, TensorProto.DOUBLE])
def test_windows(op, periodic, size, out) -> None:
    model, feeds = build(op, {}, {"size": np.array(size, dtype=np.int64)}, 17, out_type=out,
                         periodic=periodic, output_datatype=out)
    got = evaluate(model, feeds)
    # numpy's windows are the symmetric ones; a periodic window is the start of a longer one
    n = size + 1 if periodic else size
    ref = {"HannWindow": np.hanning, "HammingWindow": None,
           "BlackmanWindow": np.blackman}[op]
    if ref is None:  # ONNX's alpha is 25/46, numpy's 0.54
        k = np.arange(n)
        full = 25 / 46 - 21 / 46 * np.cos(2 * np.pi * k / (n - 1)) if n > 1 else np.ones(1)
    else:
        full = ref(n)
    close(got, full[:size].astype(got.dtype), rtol=1e-6, atol=1e-12)
    close(got, run_ort(model, feeds)[0], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mels, n, rate, low, high", [(8, 16, 8192, 0.0, 4096.0),
                                                      (5, 64, 16000, 100.0, 7000.0),
                                                      (10, 512, 22050, 30.0, 8000.0)])
def test_mel_weight_matrix(mels, n, rate, low, high) -> None:
    consts = {"num_mel_bins": np.array(mels, np.int64), "dft_length": np.array(n, np.int64),
              "sample_rate": np.array(rate, np.int64),
              "lower_edge_hertz": np.array(low, np.float32),
              "upper_edge_hertz": np.array(high, np.float32)}
    model, feeds = build("MelWeightMatrix", {}, consts, 17)
    got = evaluate(model, feeds)
    assert got.shape == (n // 2 + 1, mels) and got.dtype == np.float32
    close(got, run_ort(model, feeds)[0], rtol=1e-6, scaled_atol=1e-7)


def test_signal_errors() -> None:
    def fails(model, match):
        with pytest.raises(OnnxImportError, match=match):
            from_onnx(model)

    fails(build("DFT", {"x": rand(2, 4, 3)}, {}, 17)[0], "must end in an axis of 1")
    fails(build("DFT", {"x": rand(2, 4, 1)}, {}, 17, axis=2)[0], "axis 2 is out of range")
    fails(build("DFT", {"x": rand(2, 4, 2)}, {}, 17, onesided=1)[0], "takes a real input")
    fails(build("DFT", {"x": rand(2, 4, 1)}, {"dft_length": np.array(0, np.int64)}, 17)[0],
          "dft_length 0 must be positive")
    fails(build("DFT", {"x": rand(1, 5003, 1)}, {}, 17)[0],  # a prime length
          "a DFT of length 5003 needs a 5003x5003 constant matrix")
    fails(build("STFT", {"signal": rand(1, 8, 1)}, {"frame_step": np.array(2, np.int64),
                                                    "window": rand(3),
                                                    "frame_length": np.array(4, np.int64)},
                17)[0], "frame_length 4 differs from the window's length 3")
    fails(build("STFT", {"signal": rand(1, 8, 1)}, {"frame_step": np.array(0, np.int64)}, 17)[0],
          "frame_step 0 must be positive")
    fails(build("HannWindow", {}, {"size": np.array(2.0, np.float32)}, 17)[0],
          "size must be a single integer")
