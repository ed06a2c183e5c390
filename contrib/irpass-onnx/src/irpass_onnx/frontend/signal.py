"""Converters of the ONNX signal ops: DFT, STFT, the window functions and MelWeightMatrix."""

from __future__ import annotations

__all__: list[str] = []
