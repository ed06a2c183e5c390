"""The errors the ONNX pack raises; both are :class:`irpass.errors.IRPassError`, so
``irpass optimize`` reports them as one clean line."""

from __future__ import annotations

from irpass.errors import IRPassError

__all__ = ["OnnxImportError", "OnnxExportError"]


class OnnxImportError(IRPassError, ValueError):
    """An ONNX model irpass cannot import; the message names the file, the node or input
    (index, name, op type) and what is wrong, on one line (line breaks of a wrapped message,
    e.g. a core error's, become spaces)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class OnnxExportError(IRPassError, ValueError):
    """A module irpass cannot write as ONNX; the message names the expression or op and the
    opset."""
