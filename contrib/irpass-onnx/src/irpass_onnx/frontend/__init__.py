"""ONNX -> irpass: :func:`from_onnx`, :func:`load_onnx` and :func:`load_weights`.

The converters live in :mod:`.nn`, :mod:`.tensor` and :mod:`.math`; importing this package
registers them (see :mod:`.registry` for how to add one).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping

import numpy as np
import onnx
from irpass.ir import IRModule
from onnx import numpy_helper

from ..errors import OnnxImportError
from ..options import ImportOptions
from . import nn  # noqa: F401  (registers the converters)
from .graph import GraphImporter

__all__ = ["from_onnx", "load_onnx", "load_weights"]

# The converter modules written separately; a missing one must not break the others.
for _name in ("tensor", "math"):
    try:
        importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _err:
        if _err.name != f"{__name__}.{_name}":
            raise
del _name

_FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16)


def from_onnx(
    model: onnx.ModelProto,
    *,
    weights: str | None = None,
    materialize_constant_of_shape: bool | None = None,
    dim_values: str | Mapping[str, int] | None = None,
    source: str | None = None,
) -> IRModule:
    """The irpass module of an ONNX model (its ``@main`` is the main graph).

    Options (``None``: the current PassContext's ``onnx.*`` config, else the default):
    ``weights`` "constants" | "params", ``materialize_constant_of_shape``, ``dim_values``
    ("N=1,seq=128" or a mapping). ``source`` names the model in error messages (the file).
    The model is not modified. Raises :class:`OnnxImportError`.
    """
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"from_onnx needs an onnx.ModelProto, got {type(model).__name__}")
    try:
        options = ImportOptions.resolve(weights=weights,
                                        materialize_constant_of_shape=materialize_constant_of_shape,
                                        dim_values=dim_values)
    except (TypeError, ValueError) as err:
        raise OnnxImportError(f"{source or 'ONNX model'}: {err}") from err
    return GraphImporter(model, options, source).run()


def _read(path: str | os.PathLike) -> onnx.ModelProto:
    try:
        return onnx.load(os.fspath(path))
    except FileNotFoundError:
        raise OnnxImportError(f"{os.fspath(path)}: no such file") from None
    except Exception as err:  # noqa: BLE001 - protobuf/onnx raise many kinds here
        raise OnnxImportError(f"{os.fspath(path)}: not a readable ONNX model: {err}") from err


def load_onnx(
    path: str | os.PathLike,
    *,
    weights: str | None = None,
    materialize_constant_of_shape: bool | None = None,
    dim_values: str | Mapping[str, int] | None = None,
) -> IRModule:
    """:func:`from_onnx` of the model in file ``path`` (errors name the file)."""
    return from_onnx(_read(path), weights=weights,
                     materialize_constant_of_shape=materialize_constant_of_shape,
                     dim_values=dim_values, source=os.fspath(path))


def load_weights(path: str | os.PathLike | onnx.ModelProto) -> dict[str, np.ndarray]:
    """The float initializers of the model in ``path`` (or of a ModelProto) by name: the
    values of the extra ``@main`` params of ``load_onnx(path, weights="params")``."""
    model = path if isinstance(path, onnx.ModelProto) else _read(path)
    out: dict[str, np.ndarray] = {}
    for t in model.graph.initializer:
        if t.data_type in _FLOAT_TYPES:
            out[t.name] = numpy_helper.to_array(t).copy()
    return out
