"""Converters of the ONNX image and detection ops: Resize, Upsample, GridSample, AffineGrid,
RoiAlign, NonMaxSuppression, MaxRoiPool, DeformConv, Col2Im."""

from __future__ import annotations

__all__: list[str] = []
