"""Converters of the ONNX transformer-era ops: Attention, RotaryEmbedding, RMSNormalization,
GroupNormalization, LinearAttention, FlexAttention, SwiGLU, CausalConvWithState."""

from __future__ import annotations

__all__: list[str] = []
