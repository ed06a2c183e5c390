"""irpass-onnx: ONNX models in and out of irpass.

``irpass.load("model.onnx")`` and ``irpass optimize model.onnx -o out.onnx`` work once this
distribution is installed (the plugin ``onnx``); the functions below are the same thing with
explicit options.
"""

from __future__ import annotations

from .errors import OnnxExportError, OnnxImportError
from .export import save_onnx, to_onnx
from .frontend import from_onnx, load_onnx, load_weights
from .options import ImportOptions

__all__ = ["from_onnx", "load_onnx", "load_weights", "to_onnx", "save_onnx", "ImportOptions",
           "OnnxImportError", "OnnxExportError"]
