"""Emitters of the image and detection ops (``image.*``, ``vision.*``)."""

from __future__ import annotations

__all__: list[str] = []
