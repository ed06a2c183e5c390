"""qnn.quantize / qnn.dequantize and reinterpret: type relations, and kernels checked against
references written here (round half to even, clip to the quantized range, per tensor, per axis
and per element; float8 saturation; bit patterns)."""

from __future__ import annotations

import irpass
import numpy as np
import pytest
from irpass import op
from irpass.ir import Function, IRModule, TensorType, var
from op_checks import type_of

ml_dtypes = pytest.importorskip("ml_dtypes")

RNG = np.random.default_rng(11)


def run(build, *values):
    """Evaluate ``build(*vars)`` on ``values`` (one var per value, typed from it)."""
    vs = [var(f"v{i}", type_of(v)) for i, v in enumerate(values)]
    mod = IRModule.from_expr(Function(vs, build(*vs)))
    return irpass.evaluate(mod, *values)


def ref_quantize(x, scale, zero, lo, hi, dtype):
    """round-half-even(x / scale) + zero, clipped to [lo, hi]: in Python floats."""
    out = np.empty(np.broadcast(x, scale, zero).shape, dtype=dtype)
    for idx in np.ndindex(out.shape):
        xi = float(np.broadcast_to(x, out.shape)[idx])
        si = float(np.broadcast_to(scale, out.shape)[idx])
        zi = int(np.broadcast_to(zero, out.shape)[idx])
        q = xi / si
        r = round(q)  # Python's round is half to even
        out[idx] = min(max(r + zi, lo), hi)
    return out


@pytest.mark.parametrize("out_dtype, lo, hi", [("int8", -128, 127), ("uint8", 0, 255),
                                               ("int16", -32768, 32767),
                                               ("uint16", 0, 65535), ("int4", -8, 7),
                                               ("uint4", 0, 15), ("int2", -2, 1),
                                               ("uint2", 0, 3)])
def test_quantize_per_tensor_rounds_half_to_even_and_clips(out_dtype, lo, hi):
    np_out = getattr(ml_dtypes, out_dtype, None) or np.dtype(out_dtype)
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 3.7, -3.7, 1e6, -1e6, 0.0], np.float32)
    scale = np.array(0.5, np.float32)
    zero = np.array(1, np_out)
    got = run(lambda a, s, z: op.qnn.quantize(a, s, z, out_dtype=out_dtype), x, scale, zero)
    want = ref_quantize(x, scale, zero.astype(np.int64), lo, hi, np_out)
    assert got.dtype == np.dtype(np_out)
    np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64))


def test_quantize_per_axis_and_per_element():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32) * 10
    scale = np.array([0.5, 0.25, 2.0], np.float32)
    zero = np.array([0, 10, -5], np.int8)
    got = run(lambda a, s, z: op.qnn.quantize(a, s, z, axis=1), x, scale, zero)
    want = ref_quantize(x, scale.reshape(1, 3, 1), zero.reshape(1, 3, 1), -128, 127, np.int8)
    np.testing.assert_array_equal(got, want)
    # one scale per element (what an importer makes of block quantization)
    full = (RNG.random((2, 3, 4)) + 0.1).astype(np.float32)
    fz = RNG.integers(0, 255, (2, 3, 4)).astype(np.uint8)
    got = run(lambda a, s, z: op.qnn.quantize(a, s, z, axis=1, out_dtype="uint8"), x, full, fz)
    np.testing.assert_array_equal(got, ref_quantize(x, full, fz, 0, 255, np.uint8))


@pytest.mark.parametrize("fmt, big", [("float8_e4m3fn", 448.0), ("float8_e4m3fnuz", 240.0),
                                      ("float8_e5m2", 57344.0), ("float8_e5m2fnuz", 57344.0)])
def test_quantize_to_float8_saturates(fmt, big):
    t = getattr(ml_dtypes, fmt)
    x = np.array([1e9, -1e9, np.inf, -np.inf, 3.0, -0.3], np.float32)
    got = run(lambda a, s, z: op.qnn.quantize(a, s, z, out_dtype=fmt), x,
              np.array(1.0, np.float32), np.zeros((), t))
    assert got.dtype == np.dtype(t)
    np.testing.assert_array_equal(got.astype(np.float32),
                                  np.array([big, -big, big, -big, 3.0, -0.3], np.float32)
                                  .astype(t).astype(np.float32))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int4", "uint4", "int2", "int32"])
def test_dequantize_is_float32_arithmetic(dtype):
    np_dtype = getattr(ml_dtypes, dtype, None) or np.dtype(dtype)
    q = np.array([-2, -1, 0, 1], np.int64).clip(0 if dtype.startswith("u") else -2)
    q = q.astype(np_dtype)
    zero = np.array([1, 0, 1, 0], np_dtype)
    scale = np.array([0.5, 0.25, 3.0, 0.1], np.float32)
    for out in ("float32", "float16", "float64"):
        got = run(lambda a, s, z, out=out: op.qnn.dequantize(a, s, z, axis=0, out_dtype=out),
                  q, scale, zero)
        want = ((q.astype(np.float64) - zero.astype(np.float64)) * scale.astype(np.float64))
        assert got.dtype == np.dtype(out)
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-3)


def test_dequantize_float8_needs_a_zero_zero_point():
    t = ml_dtypes.float8_e4m3fn
    x = np.array([1.5, -448.0], t)
    got = run(lambda a, s, z: op.qnn.dequantize(a, s, z), x, np.array(2.0, np.float32),
              np.zeros((), t))
    np.testing.assert_array_equal(got, np.array([3.0, -896.0], np.float32))
    with pytest.raises(irpass.IRPassError, match="zero point of float8_e4m3fn data must be 0"):
        run(lambda a, s, z: op.qnn.dequantize(a, s, z), x, np.array(2.0, np.float32),
            np.ones((), t))


@pytest.mark.parametrize("build, types, match", [
    (lambda a, s, z: op.qnn.quantize(a, s, z), [((2,), "int8"), ((), "float32"), ((), "int8")],
     TypeError),
    (lambda a, s, z: op.qnn.quantize(a, s, z), [((2,), "float32"), ((), "int32"),
                                                ((), "int8")], TypeError),
    (lambda a, s, z: op.qnn.quantize(a, s, z, out_dtype="uint8"),
     [((2,), "float32"), ((), "float32"), ((), "int8")], TypeError),
    (lambda a, s, z: op.qnn.quantize(a, s, z, axis=0),
     [((2, 3), "float32"), ((3,), "float32"), ((), "int8")], ValueError),
    (lambda a, s, z: op.qnn.quantize(a, s, z, out_dtype="float32"),
     [((2,), "float32"), ((), "float32"), ((), "float32")], ValueError),
    (lambda a, s, z: op.qnn.dequantize(a, s, z), [((2,), "float32"), ((), "float32"),
                                                  ((), "float32")], TypeError),
    (lambda a, s, z: op.qnn.dequantize(a, s, z, out_dtype="int32"),
     [((2,), "int8"), ((), "float32"), ((), "int8")], ValueError),
    (lambda a, s, z: op.qnn.dequantize(a, s, z), [((2, 3), "int8"), ((2, 2), "float32"),
                                                  ((), "int8")], ValueError),
])
def test_type_relation_errors_name_the_argument(build, types, match):
    vs = [var(f"v{i}", TensorType(shape, dtype)) for i, (shape, dtype) in enumerate(types)]
    call = build(*vs)
    with pytest.raises(match, match="qnn"):
        call.op.type_rel(tuple(v.type_annotation for v in vs), call.attrs)


# -- reinterpret ---------------------------------------------------------------------------------


@pytest.mark.parametrize("src, dst", [("float32", "int32"), ("int64", "float64"),
                                      ("uint16", "float16"), ("bool", "uint8"),
                                      ("float16", "bfloat16"), ("int4", "uint4"),
                                      ("uint8", "float8_e5m2"), ("int2", "uint2")])
def test_reinterpret_keeps_the_bits(src, dst):
    np_src = getattr(ml_dtypes, src, None) or np.dtype(src)
    np_dst = getattr(ml_dtypes, dst, None) or np.dtype(dst)
    bits = {"int4": 4, "uint4": 4, "int2": 2, "uint2": 2, "bool": 1}.get(src)
    if bits is not None:
        raw = RNG.integers(0, 2**bits, 7).astype(np.uint8)
    else:
        raw = RNG.integers(0, 255, 7 * np.dtype(np_src).itemsize).astype(np.uint8)
    x = raw.view(np_src).reshape(-1)
    got = run(lambda a: op.reinterpret(a, dst), x)
    assert got.dtype == np.dtype(np_dst) and got.shape == x.shape
    # the same bytes, read back
    np.testing.assert_array_equal(got.view(np.uint8), x.view(np.uint8))
    scalar = run(lambda a: op.reinterpret(a, dst), x[0].reshape(()))
    assert scalar.shape == ()


def test_reinterpret_needs_equal_widths():
    x = var("x", TensorType((2,), "float32"))
    call = op.reinterpret(x, "int64")
    with pytest.raises(TypeError, match="32-bit elements but int64 has 64"):
        call.op.type_rel((x.type_annotation,), call.attrs)
    call = op.reinterpret(var("y", TensorType((2,), "int4")), "int8")
    with pytest.raises(TypeError, match="4-bit elements but int8 has 8"):
        call.op.type_rel((TensorType((2,), "int4"),), call.attrs)


# -- cast between the extension dtypes -----------------------------------------------------------


@pytest.mark.parametrize("dst", ["bfloat16", "float8_e4m3fn", "float8_e5m2fnuz", "float4_e2m1fn",
                                 "int4", "uint2"])
def test_cast_to_and_from_extension_dtypes(dst):
    t = getattr(ml_dtypes, dst)
    x = np.array([0.0, 1.0, -2.0, 3.0, 0.5], np.float32)
    if dst.startswith("u"):
        x = np.abs(x).clip(0, 3)
    got = run(lambda a: op.cast(a, dst), x)
    assert got.dtype == np.dtype(t)
    np.testing.assert_array_equal(got.view(np.uint8), x.astype(t).view(np.uint8))
    back = run(lambda a: op.cast(a, "float32"), got)
    np.testing.assert_array_equal(back, x.astype(t).astype(np.float32))


def test_qnn_ops_and_reinterpret_round_trip_through_the_text_format():
    x = var("x", TensorType((2, 3), "float32"))
    s = irpass.ir.const(np.array([0.5, 0.25, 1.0], np.float32))
    z = irpass.ir.const(np.array([1, 2, 3], np.uint8))
    q = op.qnn.quantize(x, s, z, axis=1, out_dtype="uint8")
    body = op.reinterpret(op.qnn.dequantize(q, s, z, axis=-1, out_dtype="float16"), "int16")
    mod = IRModule.from_expr(Function([x], body))
    text = mod.astext()
    assert 'out_dtype="uint8"' in text and "reinterpret(" in text
    back = irpass.parse(text)
    assert back.astext() == text
    xv = RNG.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(irpass.evaluate(back, xv), irpass.evaluate(mod, xv))
