"""The importer hands over a typed module: the types it computed while importing are the
ones type inference gives, so ``InferType`` returns the module as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from irpass.ir import infer_type
from irpass.ir.type_infer import _Inferrer
from irpass.transform import PassContext, default_pipeline
from irpass_onnx import load_onnx

MODELS = Path(__file__).resolve().parents[1] / "models"
FILES = sorted(MODELS.glob("*.onnx")) + sorted((MODELS / "dynamic").glob("*.onnx"))


def test_there_are_models():
    assert len(FILES) > 50


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_imported_types_are_the_inferred_ones(path):
    mod = load_onnx(path)
    main = mod["main"]
    assert main.ret_type is not None
    assert infer_type(mod) is mod  # no walk, no copy: the module is typed already
    # a fresh inference over the same nodes (every one walked, none of the types taken)
    # computes the types the importer put on them
    inferrer = _Inferrer(mod, keep=False)
    inferrer.run(main)
    assert len(inferrer.types) >= len(main.params) + 1
    differ = [(n, t) for n, t in inferrer.types.items() if n._checked_type != t]
    assert not differ, differ[:3]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_types_the_passes_carry_over_are_the_inferred_ones(path):
    # The passes of -O3 give the nodes they rebuild over operands of unchanged types the
    # types of the nodes they replace (irpass.ir.type_infer.carry_type), and InferType
    # then takes them without a walk. A fresh inference of the result, walking every node,
    # must compute the same types, and every node must have one.
    mod = load_onnx(path)
    with PassContext(opt_level=3, disabled_pass=["FuseOps"]):  # FuseOps's output is untyped
        out = infer_type(default_pipeline(3)(mod))
    main = out["main"]
    inferrer = _Inferrer(out, keep=False)
    inferrer.run(main)
    differ = [(n, t) for n, t in inferrer.types.items() if n._checked_type != t]
    assert not differ, differ[:3]
