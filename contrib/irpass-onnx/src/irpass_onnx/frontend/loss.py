"""Converters of the ONNX loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss."""

from __future__ import annotations

__all__: list[str] = []
