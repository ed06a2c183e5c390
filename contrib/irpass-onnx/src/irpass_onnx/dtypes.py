"""ONNX tensor element types and irpass dtypes, both ways.

Every ONNX element type but STRING and the complex ones has an irpass dtype. The names of the
types numpy lacks (bfloat16, the float8/float6/float4 formats, the 4- and 2-bit integers) are
ml_dtypes' (a dependency of onnx), which is also what ``onnx.numpy_helper.to_array`` returns
for them.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

__all__ = ["ONNX_TO_DTYPE", "DTYPE_TO_ONNX", "DTYPE_MIN_OPSET", "FLOAT_DTYPES", "dtype_of",
           "dtype_name", "onnx_type_of", "onnx_type_name"]

#: The floating-point dtypes irpass's ops compute with: float computations on them stay in the
#: IR for the passes (and such initializers may become parameters), while integer, bool and
#: the 8-bit-and-narrower storage formats are folded at import.
FLOAT_DTYPES: frozenset[str] = frozenset({"float16", "bfloat16", "float32", "float64"})

#: ONNX ``TensorProto.DataType`` -> irpass dtype name, for the types irpass has.
ONNX_TO_DTYPE: dict[int, str] = {
    TensorProto.FLOAT: "float32",
    TensorProto.DOUBLE: "float64",
    TensorProto.FLOAT16: "float16",
    TensorProto.INT8: "int8",
    TensorProto.INT16: "int16",
    TensorProto.INT32: "int32",
    TensorProto.INT64: "int64",
    TensorProto.UINT8: "uint8",
    TensorProto.UINT16: "uint16",
    TensorProto.UINT32: "uint32",
    TensorProto.UINT64: "uint64",
    TensorProto.BOOL: "bool",
    TensorProto.BFLOAT16: "bfloat16",
    TensorProto.FLOAT8E4M3FN: "float8_e4m3fn",
    TensorProto.FLOAT8E4M3FNUZ: "float8_e4m3fnuz",
    TensorProto.FLOAT8E5M2: "float8_e5m2",
    TensorProto.FLOAT8E5M2FNUZ: "float8_e5m2fnuz",
    TensorProto.FLOAT8E8M0: "float8_e8m0fnu",
    TensorProto.FLOAT4E2M1: "float4_e2m1fn",
    TensorProto.INT4: "int4",
    TensorProto.UINT4: "uint4",
    TensorProto.INT2: "int2",
    TensorProto.UINT2: "uint2",
    TensorProto.FLOAT6E2M3: "float6_e2m3fn",
    TensorProto.FLOAT6E3M2: "float6_e3m2fn",
}
#: irpass dtype name -> ONNX ``TensorProto.DataType``.
DTYPE_TO_ONNX: dict[str, int] = {v: k for k, v in ONNX_TO_DTYPE.items()}

#: The first opset whose ``Cast`` (and so any op) takes each dtype that not every opset has;
#: an exporter writing an older opset has no way to spell the type. float6 is in no opset's
#: op schemas yet (a storage type only).
DTYPE_MIN_OPSET: dict[str, int] = {
    "bfloat16": 13,
    "float8_e4m3fn": 19,
    "float8_e4m3fnuz": 19,
    "float8_e5m2": 19,
    "float8_e5m2fnuz": 19,
    "int4": 21,
    "uint4": 21,
    "float4_e2m1fn": 23,
    "float8_e8m0fnu": 24,
    "int2": 25,
    "uint2": 25,
    "float6_e2m3fn": 10**9,
    "float6_e3m2fn": 10**9,
}


def onnx_type_name(elem_type: int) -> str:
    """The name of ONNX element type ``elem_type`` (``FLOAT``), or the number if it has none."""
    if elem_type in TensorProto.DataType.values():
        return TensorProto.DataType.Name(elem_type)
    return str(elem_type)


def dtype_of(elem_type: int, where: str) -> str:
    """The irpass dtype of ONNX element type ``elem_type``; ``ValueError`` naming ``where``."""
    try:
        return ONNX_TO_DTYPE[elem_type]
    except KeyError:
        raise ValueError(
            f"{where}: ONNX element type {onnx_type_name(elem_type)} has no irpass dtype "
            "(irpass has every ONNX element type but STRING and the complex ones)"
        ) from None


#: numpy dtype -> its name, filled as dtypes are met.
_NAMES: dict[np.dtype, str] = {}


def dtype_name(dtype: np.dtype) -> str:
    """``dtype.name``, remembered: numpy 2 computes the name in Python (about 3 us, a dict
    lookup 0.04 us), and the importer asks for it for every constant it types."""
    name = _NAMES.get(dtype)
    if name is None:
        name = _NAMES[dtype] = dtype.name
    return name


def onnx_type_of(dtype: str, where: str, opset: int | None = None) -> int:
    """The ONNX element type of irpass dtype ``dtype``; ``ValueError`` naming ``where`` (also
    when ``opset`` is given and has no such type yet, see :data:`DTYPE_MIN_OPSET`)."""
    try:
        elem = DTYPE_TO_ONNX[dtype]
    except KeyError:
        raise ValueError(f"{where}: dtype {dtype!r} has no ONNX element type") from None
    if opset is not None and DTYPE_MIN_OPSET.get(dtype, 0) > opset:
        need = DTYPE_MIN_OPSET[dtype]
        when = f"opset >= {need}" if need < 10**9 else "an opset no ONNX release has yet"
        raise ValueError(f"{where}: ONNX element type {onnx_type_name(elem)} ({dtype}) needs "
                         f"{when} (exporting opset {opset})")
    return elem
