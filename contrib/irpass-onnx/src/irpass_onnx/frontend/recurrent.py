"""Converters of the ONNX recurrent ops: RNN, GRU and LSTM."""

from __future__ import annotations

__all__: list[str] = []
