"""Emitters of the transformer-era, recurrent and signal ops."""

from __future__ import annotations

__all__: list[str] = []
