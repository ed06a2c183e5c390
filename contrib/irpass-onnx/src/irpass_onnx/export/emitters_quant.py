"""Emitters of the cast and quantization ops (``cast``, ``qnn.*``)."""

from __future__ import annotations

__all__: list[str] = []
