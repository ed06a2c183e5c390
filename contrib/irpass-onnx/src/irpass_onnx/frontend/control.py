"""Converters of the ONNX control-flow, sequence and optional ops: If, Loop, Scan, Sequence*,
Optional*."""

from __future__ import annotations

__all__: list[str] = []
