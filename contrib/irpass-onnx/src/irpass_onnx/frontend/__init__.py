"""ONNX -> irpass: :func:`from_onnx`, :func:`load_onnx` and :func:`load_weights`.

The converters live in one module per family of ops (:mod:`.math`, :mod:`.tensor`,
:mod:`.nn`, :mod:`.activation`, :mod:`.vision`, :mod:`.transformer`, :mod:`.recurrent`,
:mod:`.loss`, :mod:`.signal`, :mod:`.quant`, :mod:`.control`); importing this package
registers them (see :mod:`.registry` for how to add one).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import onnx
from irpass.ir import IRModule
from onnx import AttributeProto, GraphProto, TensorProto, numpy_helper
from onnx.external_data_helper import ExternalDataInfo, uses_external_data

from ..errors import OnnxImportError
from ..options import ImportOptions
from . import (  # noqa: F401  (importing them registers the converters)
    activation,
    control,
    loss,
    math,
    nn,
    quant,
    recurrent,
    signal,
    tensor,
    transformer,
    vision,
)
from .graph import GraphImporter

__all__ = ["from_onnx", "load_onnx", "load_weights", "external_data_files"]

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


def _tensors(model: onnx.ModelProto) -> Iterator[TensorProto]:
    """Every tensor of the model: initializers and attribute tensors, subgraphs and
    functions included (iteratively)."""
    graphs: list[GraphProto] = [model.graph]
    node_lists = [f.node for f in model.functions]
    while graphs or node_lists:
        if graphs:
            g = graphs.pop()
            yield from g.initializer
            for sparse in g.sparse_initializer:
                yield sparse.values
                yield sparse.indices
            node_lists.append(g.node)
            continue
        for node in node_lists.pop():
            for a in node.attribute:
                if a.type == AttributeProto.TENSOR:
                    yield a.t
                elif a.type == AttributeProto.TENSORS:
                    yield from a.tensors
                elif a.type == AttributeProto.GRAPH:
                    graphs.append(a.g)
                elif a.type == AttributeProto.GRAPHS:
                    graphs.extend(a.graphs)


def external_data_files(path: str | os.PathLike) -> list[Path]:
    """The external data files the ONNX model in ``path`` keeps tensors in (what loading it
    reads besides ``path``), in the model's directory; none for a model in one file or a
    file that is not a readable model (the loader reports that)."""
    try:
        model = onnx.load(os.fspath(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - the loader reports an unreadable model
        return []
    base = Path(path).parent
    found: list[Path] = []
    for t in _tensors(model):
        if uses_external_data(t):
            location = ExternalDataInfo(t).location
            if location and base / location not in found:
                found.append(base / location)
    return found
