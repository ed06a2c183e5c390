"""ONNX tensor element types and irpass dtypes, both ways."""

from __future__ import annotations

from onnx import TensorProto

__all__ = ["ONNX_TO_DTYPE", "DTYPE_TO_ONNX", "dtype_of", "onnx_type_of"]

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
}
#: irpass dtype name -> ONNX ``TensorProto.DataType``.
DTYPE_TO_ONNX: dict[str, int] = {v: k for k, v in ONNX_TO_DTYPE.items()}


def dtype_of(elem_type: int, where: str) -> str:
    """The irpass dtype of ONNX element type ``elem_type``; ``ValueError`` naming ``where``."""
    try:
        return ONNX_TO_DTYPE[elem_type]
    except KeyError:
        name = TensorProto.DataType.Name(elem_type) if elem_type in TensorProto.DataType.values() \
            else str(elem_type)
        raise ValueError(
            f"{where}: ONNX element type {name} has no irpass dtype "
            f"(supported: {', '.join(sorted(DTYPE_TO_ONNX))})"
        ) from None


def onnx_type_of(dtype: str, where: str) -> int:
    """The ONNX element type of irpass dtype ``dtype``; ``ValueError`` naming ``where``."""
    try:
        return DTYPE_TO_ONNX[dtype]
    except KeyError:
        raise ValueError(f"{where}: dtype {dtype!r} has no ONNX element type") from None
