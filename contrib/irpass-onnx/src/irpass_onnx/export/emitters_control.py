"""Emitters of the control-flow constructs."""

from __future__ import annotations

__all__: list[str] = []
