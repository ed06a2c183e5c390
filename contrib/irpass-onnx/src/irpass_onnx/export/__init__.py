"""irpass -> ONNX: :func:`to_onnx` and :func:`save_onnx`.

The export lowers ``@main`` to a graph (every function call inlined: fused ``Primitive``
functions become their ops, not ONNX functions; an ``if`` becomes an ONNX ``If`` with a
subgraph per branch, and the tail-recursive loop form the importer makes of ``Loop``/``Scan``
an ONNX ``Loop``, see :mod:`.emitters_control`), applies node-saving peepholes
(:mod:`.fusion`), then writes one or a few ONNX nodes per op (:mod:`.emitters` and the
other ``emitters_*`` modules, one per family of ops). All shapes are static, so the result needs no
shape arithmetic (``squeeze``/``expand_dims``/``reshape`` are one ``Reshape``). The model's
IR version is the lowest that its opset allows, which onnxruntime 1.31 loads.
Scalars stay scalars (0-d initializers); constants of one repeated value are written as
``ConstantOfShape`` (see :mod:`.builder`); :func:`save_onnx` puts big tensors in an external
data file when the model would not fit in one (see :mod:`.writer`).
The module is never changed: types are computed on the lowered graph (with the ops' type
relations), so not even the ``checked_type`` cache of its nodes is written.
"""

from __future__ import annotations

import os
from typing import Any

import onnx
from irpass.ir import IRModule
from irpass.ir.gcpause import gc_paused

from ..errors import OnnxExportError
from ..options import EXPORT_OPSET, EXTERNAL_DATA, config_value
from . import (  # noqa: F401 - importing them registers the emitters
    emitters,
    emitters_control,
    emitters_dynamic,
    emitters_index,
    emitters_nn,
    emitters_quant,
    emitters_transformer,
    emitters_vision,
)
from .builder import EMITTERS
from .fusion import fuse
from .graph import lower
from .writer import Exported, check_supported, external_data_path, write_model

__all__ = ["to_onnx", "save_onnx", "resolve_opset", "MIN_OPSET", "MAX_OPSET", "DEFAULT_OPSET",
           "supported_ops", "external_data_path"]

#: The opsets the exporter writes: 9 (the oldest in common use) to 26, the newest whose
#: operators onnxruntime 1.32 runs (27 and 28 revise Range, Cast, Mod, ... again; a model of
#: those opsets exports at 26).
MIN_OPSET = 9
MAX_OPSET = 26
#: The opset of a module that records none (``@main`` attr ``onnx.opset``).
DEFAULT_OPSET = 17


def supported_ops() -> list[str]:
    """The irpass ops the exporter writes."""
    return sorted(EMITTERS)


def resolve_opset(mod: IRModule, opset: int | None = None) -> int:
    """The export opset: ``opset``, else the config key ``onnx.export_opset``, else the
    opset recorded at import (``@main`` attr ``onnx.opset``, moved into 9..26), else 17.
    An explicit opset outside 9..26 is an :class:`OnnxExportError`."""
    value: Any = config_value(EXPORT_OPSET, opset)
    if value is None and "main" in mod:
        recorded = mod["main"].attrs.get("onnx.opset") if mod["main"].attrs else None
        if isinstance(recorded, int) and not isinstance(recorded, bool):
            # the IR holds the semantics, not the opset's: a model imported at an opset the
            # exporter does not write (e.g. 6) goes out at the nearest one it does
            value = min(max(recorded, MIN_OPSET), MAX_OPSET)
    if value is None:
        value = DEFAULT_OPSET
    if isinstance(value, bool) or not isinstance(value, int):
        raise OnnxExportError(f"export opset must be an int, got {value!r}")
    if not MIN_OPSET <= value <= MAX_OPSET:
        raise OnnxExportError(
            f"export opset {value} is not supported (supported: {MIN_OPSET}..{MAX_OPSET})"
        )
    return value


def to_onnx(mod: IRModule, *, opset: int | None = None) -> onnx.ModelProto:
    """``mod`` (its ``@main``) as an ONNX model at ``opset`` (see :func:`resolve_opset`).

    Graph inputs are ``@main``'s params (names kept); outputs are named from the attr
    ``onnx.output_names`` when it has one name per output, else ``output_<i>``.
    Raises :class:`~irpass_onnx.OnnxExportError` for what ONNX cannot hold (recursion other
    than the loop form, closures, control flow nested deeper than 31) and, in one error, for
    every op without an exporter.
    """
    return _export(mod, opset).model_proto()


def save_onnx(mod: IRModule, path: str | os.PathLike[str], *, opset: int | None = None,
              external_data: int | None = None) -> None:
    """Write ``to_onnx(mod, opset=opset)`` to ``path``.

    When the model in one file would be bigger than ``external_data`` bytes (else the config
    key ``onnx.external_data``; by default protobuf's 2 GiB limit, past which one file cannot
    hold it; 0 always), its tensors of 1 KiB or more go to the external data file
    ``<path>.data`` (:func:`external_data_path`) beside it, each at an offset that is a
    multiple of 4096. Each file is written to a temporary file beside it and renamed over its
    path when complete: a failed export or write leaves existing files as they were.
    """
    threshold: Any = config_value(EXTERNAL_DATA, external_data)
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int)
                                  or threshold < 0):
        raise OnnxExportError(f"{EXTERNAL_DATA}: expected a size in bytes (an int >= 0), got "
                              f"{threshold!r}")
    _export(mod, opset).save(path, threshold)


def _export(mod: IRModule, opset: int | None) -> Exported:
    if not isinstance(mod, IRModule):
        raise TypeError(f"to_onnx needs an IRModule, got {type(mod).__name__}")
    if "main" not in mod:
        raise OnnxExportError("the module has no @main function to export")
    level = resolve_opset(mod, opset)
    attrs = mod["main"].attrs
    names = attrs.get("onnx.output_names") if attrs else None
    graph_name = (attrs.get("onnx.graph_name") if attrs else None) or "main"
    # the export allocates a few objects per node and frees none until the end: the cyclic
    # collector would walk them all again and again on a big graph (they hold no cycles)
    with gc_paused():
        lowered = lower(mod)
        check_supported(lowered, level)
        fuse(lowered, level)
        return write_model(lowered, level, list(names) if names is not None else None,
                           str(graph_name))
