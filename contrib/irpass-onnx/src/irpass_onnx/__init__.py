"""irpass-onnx: ONNX models in and out of irpass.

``irpass.load("model.onnx")`` and ``irpass optimize model.onnx -o out.onnx`` work once this
distribution is installed (the plugin ``onnx``); the functions below are the same thing with
explicit options.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import OnnxExportError, OnnxImportError
from .options import ImportOptions

if TYPE_CHECKING:
    from .export import save_onnx, to_onnx
    from .frontend import from_onnx, load_onnx, load_weights

__all__ = ["from_onnx", "load_onnx", "load_weights", "to_onnx", "save_onnx", "ImportOptions",
           "OnnxImportError", "OnnxExportError"]

# The importer and exporter import onnx (and numpy); every irpass command loads this
# package's plugin, so they are imported when first used (PEP 562), not with the package.
_LAZY = {"save_onnx": ".export", "to_onnx": ".export", "from_onnx": ".frontend",
         "load_onnx": ".frontend", "load_weights": ".frontend"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later reads do not come here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
