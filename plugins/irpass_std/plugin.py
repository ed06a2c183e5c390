"""The hook implementations of the ``std`` plugin."""

from __future__ import annotations

from irpass.plugins import hookimpl
from irpass.transform import PipelineInsertion

from .infer_type import InferType


@hookimpl
def irpass_register_passes() -> list:
    """The standard passes."""
    return [InferType]


@hookimpl
def irpass_pipeline_passes() -> list[PipelineInsertion]:
    """Where the standard passes go in the default pipeline."""
    return [PipelineInsertion("InferType", phase="start")]
