"""The plugin module the ``onnx`` entry point names: the ``.onnx`` format and the ``onnx.*``
config options."""

from __future__ import annotations

from collections.abc import Sequence

from irpass.formats import FileFormat
from irpass.plugins import hookimpl
from irpass.transform import ConfigOption

from .options import CONFIG_OPTIONS


@hookimpl
def irpass_register_formats() -> Sequence[FileFormat]:
    """``.onnx``: ``irpass.load``/``irpass.save`` and ``irpass optimize model.onnx -o out.onnx``."""
    from . import load_onnx, save_onnx

    return [FileFormat("onnx", (".onnx",), load=load_onnx, save=save_onnx,
                       description="ONNX models (irpass-onnx)")]


@hookimpl
def irpass_register_config_options() -> Sequence[ConfigOption]:
    """``onnx.weights``, ``onnx.materialize_constant_of_shape``, ``onnx.dim_values``,
    ``onnx.export_opset``."""
    return list(CONFIG_OPTIONS)
