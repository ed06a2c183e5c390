"""Converters of the ONNX cast and quantization ops: Cast, CastLike, BitCast, QuantizeLinear,
DequantizeLinear, DynamicQuantizeLinear, QLinearConv, QLinearMatMul, MatMulInteger, ConvInteger."""

from __future__ import annotations

__all__: list[str] = []
