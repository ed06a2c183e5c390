"""The small layer models onnx ships under ``pytorch-converted`` and ``pytorch-operator``:
each one found is imported and evaluated against its reference output, optimized at -O3 and
checked again, then exported and run in onnxruntime. Every one of them passes (the 3-D
convolutions and poolings too, since irpass has them). Nothing is skipped: a new model in a
newer onnx either passes or fails here until someone looks at it.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from irpass_onnx import OnnxExportError, to_onnx
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

#: The lowest opset the exporter writes: by default, models of a lower opset (most here are
#: opset 6) go out at this one, the others at their own.
EXPORT_OPSET_MIN = 9
#: Models exported at a chosen, higher opset than the default, and why. At the default one
#: the exporter must refuse them cleanly (checked).
EXPORT_OPSET: dict[str, tuple[int, str]] = {
    "test_Embedding": (11, "Gather of computed indices, which may be negative: the exporter "
                           "writes take(mode='fast') of those as Mod + Gather before opset 11"),
    "test_Embedding_sparse": (11, "as test_Embedding"),
}

MODELS = pytorch_models()
SUPPORTED = MODELS


def test_the_installed_onnx_ships_the_pytorch_models():
    kinds = {m.kind for m in MODELS}
    assert kinds == {"pytorch-converted", "pytorch-operator"} and len(MODELS) > 100


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


_NEEDS_HIGHER_OPSET = [m for m in SUPPORTED if m.name in EXPORT_OPSET]


@pytest.mark.parametrize("run", _NEEDS_HIGHER_OPSET, ids=[m.id for m in _NEEDS_HIGHER_OPSET],
                         indirect=True)
def test_export_at_the_default_opset_is_refused_cleanly(run):
    low = max(EXPORT_OPSET_MIN, run.opset)
    assert low < EXPORT_OPSET[run.case.name][0]
    with pytest.raises(OnnxExportError, match=f"opset {low}"):
        to_onnx(run.optimized)
