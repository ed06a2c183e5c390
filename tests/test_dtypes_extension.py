"""The ml_dtypes element types (bfloat16, float8/float6/float4, int4/uint4, int2/uint2): the IR
types, the text format, data movement and evaluation (tests/test_dtypes_lazy.py: without
ml_dtypes)."""

from __future__ import annotations

import textwrap

import irpass
import numpy as np
import pytest
from irpass import op
from irpass.ir import Function, IRModule, TensorType, const, var
from irpass.ir.types import DTYPE_BITS, DTYPE_KINDS, EXTENSION_DTYPES, SUPPORTED_DTYPES

ml_dtypes = pytest.importorskip("ml_dtypes")

EXT = sorted(EXTENSION_DTYPES)


def sample(dtype: str, shape=(2, 3)) -> np.ndarray:
    """Values every format holds exactly (small integers, halves for the floats)."""
    base = np.array([0, 1, -1, 2, 0.5, -2, 1, 0, 3, -0.5, 1.5, 2], np.float32)
    if DTYPE_KINDS[dtype] != "f":
        base = np.trunc(base)
    if DTYPE_KINDS[dtype] == "u" or dtype == "float8_e8m0fnu":
        base = np.abs(base) + (dtype == "float8_e8m0fnu")
    lo, hi = {"int2": (-2, 1), "uint2": (0, 3), "int4": (-8, 7), "uint4": (0, 15)}.get(
        dtype, (-6, 6))
    base = base.clip(lo, hi)
    n = int(np.prod(shape))
    return np.resize(base, n).reshape(shape).astype(getattr(ml_dtypes, dtype))


def test_tables_cover_every_dtype():
    assert set(DTYPE_KINDS) == set(SUPPORTED_DTYPES) == set(DTYPE_BITS)
    assert {DTYPE_KINDS[d] for d in ("bfloat16", "float8_e5m2", "float4_e2m1fn")} == {"f"}
    assert (DTYPE_KINDS["int4"], DTYPE_KINDS["uint2"]) == ("i", "u")


@pytest.mark.parametrize("dtype", EXT)
@pytest.mark.parametrize("shape", [(), (3,), (5, 9)])
def test_text_format_round_trips_constants(dtype, shape):
    data = sample(dtype, (45,))[: int(np.prod(shape))].reshape(shape)
    x = var("x", TensorType(shape, dtype))
    body = op.concatenate([op.reshape(x, [-1]), op.reshape(const(data), [-1])], axis=0)
    mod = IRModule.from_expr(Function([x], body))
    text = mod.astext()
    back = irpass.parse(text)
    assert back.astext() == text
    xv = sample(dtype, shape)
    got = irpass.evaluate(back, xv)
    assert got.dtype == np.dtype(getattr(ml_dtypes, dtype))
    np.testing.assert_array_equal(got.view(np.uint8),
                                  np.concatenate([xv.reshape(-1), data.reshape(-1)])
                                  .view(np.uint8))


def test_inline_const_of_an_extension_dtype_parses():
    text = textwrap.dedent("""\
        #[version = "irpass 0.1"]
        def @main(%x: Tensor[(2,), int4]) {
          concatenate((%x, const(int4, (2,), [-8, 7])))
        }
        """)
    mod = irpass.parse(text)
    got = irpass.evaluate(mod, np.array([1, 2], ml_dtypes.int4))
    np.testing.assert_array_equal(got.astype(np.int8), [1, 2, -8, 7])
    with pytest.raises(irpass.ParseError, match="integer"):
        irpass.parse(text.replace("-8, 7", "-8, 0.5"))


@pytest.mark.parametrize("dtype", EXT)
def test_data_movement_ops_take_every_dtype(dtype):
    x = var("x", TensorType((2, 3), dtype))
    body = op.transpose(op.reshape(op.concatenate([x, x], axis=0), [3, 4]), [1, 0])
    body = op.take(op.strided_slice(body, [0], [3], axes=[0]), const(np.array([2, 0])), axis=1)
    mod = irpass.transform.InferType()(IRModule.from_expr(Function([x], body)))
    assert mod["main"].ret_type == TensorType((3, 2), dtype)
    xv = sample(dtype)
    want = np.concatenate([xv, xv]).reshape(3, 4).T[:3][:, [2, 0]]
    got = irpass.evaluate(mod, xv)
    assert got.dtype == xv.dtype
    np.testing.assert_array_equal(_bytes(got), _bytes(want))


def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def test_arithmetic_refuses_the_storage_formats_by_name():
    x = var("x", TensorType((2,), "float8_e4m3fn"))
    mod = IRModule.from_expr(Function([x], op.add(x, x)))
    with pytest.raises(irpass.IRPassError, match="float8_e4m3fn"):
        irpass.transform.InferType()(mod)


def test_bfloat16_computes_like_the_other_floats():
    x = var("x", TensorType((4,), "bfloat16"))
    mod = IRModule.from_expr(Function([x], op.sum(op.multiply(x, x))))
    xv = np.array([1.0, 2.0, 0.5, -3.0], ml_dtypes.bfloat16)
    got = irpass.evaluate(mod, xv)
    assert got.dtype == np.dtype(ml_dtypes.bfloat16) and float(got) == 14.25
