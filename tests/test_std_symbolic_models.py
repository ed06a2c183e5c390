"""The standard passes on the dynamic ONNX models (issue 20): BERT, DistilBERT, GPT-2, a
Llama-style model, ViT, Whisper's encoder, ResNet and MobileNetV3 with a symbolic batch (and
sequence) dim, from ``contrib/irpass-onnx/models/dynamic``. Each model is imported once; each
pass (and the -O3 pipeline) runs on it and the result is evaluated against the imported
program at three sizes on random inputs, within float tolerance."""

import json
from collections import Counter
from pathlib import Path

import irpass
import numpy as np
import pytest
from irpass import transform as T
from irpass.ir import Call, Op, post_order_visit
from irpass.transform import PassContext, default_pipeline
from irpass_onnx import load_onnx

MODELS = Path(__file__).resolve().parents[1] / "contrib" / "irpass-onnx" / "models" / "dynamic"
ENTRIES = {e["file"]: e for e in json.loads((MODELS / "models.json").read_text())["models"]}
FILES = sorted(ENTRIES)
# batch and sequence sizes: 1 (where broadcasting rules change), a small and a longer one
SIZES = [{"batch": 1, "seq": 1}, {"batch": 2, "seq": 5}, {"batch": 3, "seq": 12}]

_IMPORTED: dict[str, irpass.ir.IRModule] = {}
_REFERENCE: dict[tuple[str, int], list[np.ndarray]] = {}


def imported(file: str) -> irpass.ir.IRModule:
    """The model imported with its symbolic dims, once per test module."""
    mod = _IMPORTED.get(file)
    if mod is None:
        mod = _IMPORTED[file] = load_onnx(MODELS / file)
    return mod


def model_inputs(file: str, sizes: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """Random valid inputs of the model at ``sizes`` (ids in range, padding masks)."""
    rng = np.random.default_rng(seed)
    out = {}
    for spec in ENTRIES[file]["inputs"]:
        shape = list(spec["shape"])
        for axis, name in spec["dynamic"].items():
            shape[int(axis)] = sizes[name]
        if spec["kind"] == "float":
            value = rng.standard_normal(shape)
        elif spec["kind"] == "ids":
            value = rng.integers(0, spec["high"], size=shape)
        else:  # a padding mask: each row ones then zeros, the first row all ones
            length = shape[-1]
            rows = int(np.prod(shape[:-1]))
            lengths = rng.integers(max(1, length - 3), length + 1, size=rows)
            lengths[0] = length
            value = (np.arange(length)[None, :] < lengths[:, None]).reshape(shape)
        out[spec["name"]] = np.asarray(value).astype(spec["dtype"])
    return out


def flat(value) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [a for v in value for a in flat(v)]
    return [np.asarray(value)]


def reference(file: str, i: int) -> list[np.ndarray]:
    key = (file, i)
    if key not in _REFERENCE:
        _REFERENCE[key] = flat(irpass.evaluate(imported(file), **model_inputs(file, SIZES[i], i)))
    return _REFERENCE[key]


def assert_same_as_imported(file: str, mod: irpass.ir.IRModule) -> None:
    for i, sizes in enumerate(SIZES):
        got = flat(irpass.evaluate(mod, **model_inputs(file, sizes, i)))
        want = reference(file, i)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype, (sizes, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(w).max()),
                                       err_msg=f"{file} at {sizes}")


def op_counts(mod: irpass.ir.IRModule) -> Counter:
    found: Counter = Counter()
    for _, func in mod.items():
        post_order_visit(func, lambda n: found.update(
            [n.op.name if type(n.op) is Op else "call"]) if type(n) is Call else None)
    return found


PASSES = {
    "FoldConstant": T.FoldConstant,
    "SimplifyExpr": T.SimplifyExpr,
    "SimplifyInference": T.SimplifyInference,
    "FoldScaleAxis": T.FoldScaleAxis,
    "EliminateCommonSubexpr": T.EliminateCommonSubexpr,
    "DeadCodeElimination": T.DeadCodeElimination,
    "ConvertLayout": lambda: T.ConvertLayout({"nn.conv2d": ["NHWC", "default"]}),
    "AlterOpLayout": T.AlterOpLayout,
    "FuseOps": T.FuseOps,
    "ToANormalForm": T.ToANormalForm,
    "ToGraphNormalForm": lambda: T.Sequential([T.ToANormalForm(), T.ToGraphNormalForm()]),
    "LambdaLift": T.LambdaLift,
    "Inline": T.Inline,
}


def test_the_dynamic_models_are_symbolic():
    assert len(FILES) == 20
    for file in FILES:
        params = imported(file)["main"].params
        assert any(not p.type_annotation.is_static for p in params), file


@pytest.mark.parametrize("name", sorted(PASSES))
@pytest.mark.parametrize("file", FILES)
def test_each_pass_keeps_what_the_model_computes(file, name):
    with PassContext(opt_level=3) as ctx:
        out = T.Sequential([PASSES[name]()])(imported(file))
    assert not ctx.diag.warnings, [w.message for w in ctx.diag.warnings]
    assert_same_as_imported(file, out)


@pytest.mark.parametrize("file", FILES)
def test_o3_runs_on_every_dynamic_model_without_warnings(file):
    mod = imported(file)
    with PassContext(opt_level=3) as ctx:
        out = default_pipeline(3)(mod)
    assert not ctx.diag.warnings, [w.message for w in ctx.diag.warnings]
    assert_same_as_imported(file, out)
    # the signature stays symbolic: the same size variables as the import
    assert [p.type_annotation for p in out["main"].params] == \
        [p.type_annotation for p in mod["main"].params]
    # shape scaffolding: none left (a symbolic value is one dims_tensor call)
    assert op_counts(out)["shape_of"] == 0

