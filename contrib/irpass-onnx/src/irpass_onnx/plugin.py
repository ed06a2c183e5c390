"""The plugin module the ``onnx`` entry point names: the ``.onnx`` format and the ``onnx.*``
config options."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from irpass.formats import FileFormat
from irpass.plugins import OpSpec, hookimpl
from irpass.transform import ConfigOption

from .options import CONFIG_OPTIONS


@hookimpl
def irpass_register_formats() -> Sequence[FileFormat]:
    """``.onnx``: ``irpass.load``/``irpass.save`` and ``irpass optimize model.onnx -o out.onnx``."""
    return [FileFormat("onnx", (".onnx",), load=_load, save=_save,
                       description="ONNX models (irpass-onnx)", side_files=_side_files,
                       node_count=_node_count)]


# The format's functions import the importer or exporter (and onnx) when first called:
# loading the plugin, which every irpass command does, imports neither.
def _load(path: Path, **options: Any) -> Any:
    from .frontend import load_onnx

    return load_onnx(path, **options)


def _save(mod: Any, path: Path, **options: Any) -> None:
    from .export import save_onnx

    save_onnx(mod, path, **options)


def _node_count(path: Path) -> int:
    """The nodes of the main graph of the ONNX file at ``path`` (its weights not read)."""
    import onnx

    return len(onnx.load(str(path), load_external_data=False).graph.node)


def _side_files(path: Path, for_: str) -> list[Path]:
    """Loading reads the model's external data files; saving may write ``<path>.data``."""
    if for_ == "save":
        from .export import external_data_path

        return [external_data_path(path)]
    from .frontend import external_data_files

    return external_data_files(path)


@hookimpl
def irpass_register_config_options() -> Sequence[ConfigOption]:
    """``onnx.weights``, ``onnx.materialize_constant_of_shape``, ``onnx.dim_values``,
    ``onnx.export_opset``, ``onnx.external_data``."""
    return list(CONFIG_OPTIONS)


@hookimpl
def irpass_register_ops() -> Sequence[OpSpec]:
    """``onnx.node``: an ONNX node imported with run-time shape operands (see
    :mod:`irpass_onnx.frontend.dynamic`)."""
    from .node_op import op_spec

    return [op_spec()]
