"""The small layer models onnx ships under ``pytorch-converted`` and ``pytorch-operator``:
each one found is imported and evaluated against its reference output, optimized at -O3 and
checked again, then exported and run in onnxruntime -- or it is listed in
:data:`KNOWN_UNSUPPORTED` with the reason, and then the importer must refuse it with one clean
:class:`~irpass_onnx.OnnxImportError` naming the op. Nothing is skipped: a new model in a
newer onnx either passes or fails here until someone looks at it.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from irpass_onnx import OnnxExportError, OnnxImportError, from_onnx, to_onnx
from irpass_onnx.testing import (
    SCALED_ATOL,
    ModelRun,
    RealModel,
    assert_outputs_close,
    cached_step,
    evaluate_irpass,
    pytorch_models,
    run_onnxruntime,
)

_CONV3D = "Conv: 3-D convolution (rank-5 input); irpass has 2-D convolution (1-D runs as 2-D)"
_POOL3D = "{}: 3-D pooling (rank-5 input); irpass has 2-D pooling (1-D runs as 2-D)"
#: Models the importer refuses, by name, with why. The reason names the ONNX op type(s) the
#: importer must name in its error.
KNOWN_UNSUPPORTED: dict[str, str] = {
    "test_AvgPool3d": _POOL3D.format("AveragePool"),
    "test_AvgPool3d_stride": _POOL3D.format("AveragePool"),
    "test_AvgPool3d_stride1_pad0_gpu_input": _POOL3D.format("AveragePool"),
    "test_MaxPool3d": _POOL3D.format("MaxPool"),
    "test_MaxPool3d_stride": _POOL3D.format("MaxPool"),
    "test_MaxPool3d_stride_padding": _POOL3D.format("MaxPool"),
    "test_Conv3d": _CONV3D,
    "test_Conv3d_dilated": _CONV3D,
    "test_Conv3d_dilated_strided": _CONV3D,
    "test_Conv3d_groups": _CONV3D,
    "test_Conv3d_no_bias": _CONV3D,
    "test_Conv3d_stride": _CONV3D,
    "test_Conv3d_stride_padding": _CONV3D,
}

#: The lowest opset the exporter writes: by default, models of a lower opset (most here are
#: opset 6) go out at this one, the others at their own.
EXPORT_OPSET_MIN = 9
#: Models exported at a chosen, higher opset than the default, and why. At the default one
#: the exporter must refuse them cleanly (checked).
EXPORT_OPSET: dict[str, tuple[int, str]] = {
    "test_Embedding": (11, "Gather of computed indices, which may be negative: the exporter "
                           "writes take(mode='wrap') of those from opset 10 on"),
    "test_Embedding_sparse": (11, "as test_Embedding"),
}

MODELS = pytorch_models()
SUPPORTED = [m for m in MODELS if m.name not in KNOWN_UNSUPPORTED]
UNSUPPORTED = [m for m in MODELS if m.name in KNOWN_UNSUPPORTED]


def test_the_installed_onnx_ships_the_pytorch_models():
    kinds = {m.kind for m in MODELS}
    assert kinds == {"pytorch-converted", "pytorch-operator"} and len(MODELS) > 100


def test_every_known_unsupported_model_exists():
    # an entry left over after a model disappeared (or was renamed) would hide nothing, but
    # would claim something false
    assert set(KNOWN_UNSUPPORTED) <= {m.name for m in MODELS}


class PytorchRun(ModelRun):
    """The steps of one model, each run on first use and then shared by its tests."""

    @cached_step
    def exported(self) -> onnx.ModelProto:
        if self.case.name in EXPORT_OPSET:
            return to_onnx(self.optimized, opset=EXPORT_OPSET[self.case.name][0])
        exported = to_onnx(self.optimized)  # the default: the imported opset, at least 9
        assert exported.opset_import[0].version == max(EXPORT_OPSET_MIN, self.opset)
        return exported

    @property
    def opset(self) -> int:
        return next(o.version for o in self.model.opset_import if o.domain in ("", "ai.onnx"))


_RUNS: dict[str, PytorchRun] = {}


@pytest.fixture
def run(request) -> PytorchRun:
    # cached per model for the module: the -O3 and export tests reuse the import
    case: RealModel = request.param
    if case.id not in _RUNS:
        _RUNS[case.id] = PytorchRun(case)
    return _RUNS[case.id]


def _close(run: PytorchRun, actual: list[np.ndarray], what: str) -> None:
    assert_outputs_close(actual, run.reference, rtol=run.case.rtol, atol=run.case.atol,
                         scaled_atol=SCALED_ATOL, what=f"{run.case.id}: {what}")


_PARAMS = {"argnames": "run", "argvalues": SUPPORTED, "ids": [m.id for m in SUPPORTED],
           "indirect": True}


@pytest.mark.parametrize(**_PARAMS)
def test_evaluate_matches_the_reference(run):
    _close(run, evaluate_irpass(run.mod, run.inputs), "irpass.evaluate vs reference")


@pytest.mark.parametrize(**_PARAMS)
def test_o3_matches_the_reference(run):
    _close(run, evaluate_irpass(run.optimized, run.inputs), "-O3 vs reference")


@pytest.mark.parametrize(**_PARAMS)
def test_export_runs_in_onnxruntime_like_the_reference(run):
    onnx.checker.check_model(run.exported, full_check=True)
    _close(run, run_onnxruntime(run.exported, run.inputs), "exported, onnxruntime")


@pytest.mark.parametrize("case", UNSUPPORTED, ids=[m.id for m in UNSUPPORTED])
def test_unsupported_model_is_refused_with_one_clean_error(case):
    model = case.load()
    named = sorted({n.op_type for n in model.graph.node if n.op_type in
                    KNOWN_UNSUPPORTED[case.name]})
    assert named, f"the reason for {case.name} names none of its ops"
    with pytest.raises(OnnxImportError) as info:
        from_onnx(model)
    message = str(info.value)
    assert all(op in message for op in named), message


_NEEDS_HIGHER_OPSET = [m for m in SUPPORTED if m.name in EXPORT_OPSET]


@pytest.mark.parametrize("run", _NEEDS_HIGHER_OPSET, ids=[m.id for m in _NEEDS_HIGHER_OPSET],
                         indirect=True)
def test_export_at_the_default_opset_is_refused_cleanly(run):
    low = max(EXPORT_OPSET_MIN, run.opset)
    assert low < EXPORT_OPSET[run.case.name][0]
    with pytest.raises(OnnxExportError, match=f"opset {low}"):
        to_onnx(run.optimized)
