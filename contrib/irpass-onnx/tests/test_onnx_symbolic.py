"""Symbolic shapes from import to export, on models with a dynamic batch and sequence length.

``models/dynamic/`` holds ten zoo architectures (BERT with SDPA and eager attention, DistilBERT,
GPT-2, Llama, Whisper's encoder, two ViTs, ResNet-18, MobileNetV3) exported by both PyTorch
exporters with dynamic batch and sequence dims (``make_models.py --size dynamic``). Each is
imported with no ``dim_values`` (its dims stay size variables), evaluated, optimized at -O3 and
exported; at batch 1, 2 and 7 and sequence length 1, 16 and 128 (where it has one) irpass
before and after -O3 and onnxruntime on the export equal onnxruntime on the original (rtol
1e-3 and the zoo's scaled atol). The export reads each size variable from the inputs once and
computes no more shapes than the original did, and its graph inputs and outputs keep the
symbolic dims as ``dim_param``\\ s.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import irpass
import numpy as np
import onnx
import pytest
from irpass.ir.dims import SizeVar
from irpass_onnx import OnnxImportError, from_onnx, load_onnx, to_onnx
from irpass_onnx.testing import (
    RANDOM_RTOL,
    SCALED_ATOL,
    check_outputs_close,
    evaluate_irpass,
    optimize_o3,
    run_onnxruntime,
    shape_computing_nodes,
)
from onnx import TensorProto, helper

DYNAMIC_DIR = Path(__file__).resolve().parents[1] / "models" / "dynamic"
ENTRIES: list[dict[str, Any]] = json.loads((DYNAMIC_DIR / "models.json").read_text())["models"]
#: (batch, sequence length) sizes each model runs at; the sequence applies to text inputs.
SIZES = [(1, 1), (2, 16), (7, 128)]


def _has_seq(entry: dict[str, Any]) -> bool:
    return any("seq" in i.get("dynamic", {}).values() for i in entry["inputs"])


def inputs_at(entry: dict[str, Any], batch: int, seq: int, seed: int) -> dict[str, np.ndarray]:
    """Seeded valid inputs with the dynamic dims set: ``float`` normal, ``ids`` in ``[0,
    high)``, ``mask`` a padding mask (the first row all ones, the others ending in up to three
    zeros, never empty)."""
    rng = np.random.default_rng(seed)
    sizes = {"batch": batch, "seq": seq}
    out = {}
    for spec in entry["inputs"]:
        dynamic = spec.get("dynamic", {})
        shape = tuple(sizes.get(dynamic.get(str(k)), d) for k, d in enumerate(spec["shape"]))
        if spec["kind"] == "float":
            value = rng.standard_normal(shape)
        elif spec["kind"] == "ids":
            value = rng.integers(0, spec["high"], size=shape)
        else:  # a padding mask
            length = shape[-1]
            rows = int(np.prod(shape[:-1]))
            lengths = rng.integers(max(1, length - 3), length + 1, size=rows)
            lengths[0] = length
            value = (np.arange(length)[None, :] < lengths[:, None]).reshape(shape)
        out[spec["name"]] = np.asarray(value).astype(spec["dtype"])
    return out


@cache
def _stages(file: str) -> dict[str, Any]:
    """The model, its import, -O3 and export (each computed once per test session)."""
    model = onnx.load(str(DYNAMIC_DIR / file))
    mod = load_onnx(DYNAMIC_DIR / file)
    o3 = optimize_o3(mod)
    exported = to_onnx(o3)
    return {"model": model, "mod": mod, "o3": o3, "exported": exported}


def _sizes(entry: dict[str, Any]) -> list[tuple[int, int]]:
    return SIZES if _has_seq(entry) else [(b, 8) for b, _ in SIZES]


def _close(got: list[np.ndarray], want: list[np.ndarray]) -> list[str]:
    return check_outputs_close(got, want, rtol=RANDOM_RTOL, scaled_atol=SCALED_ATOL)


@pytest.fixture(params=ENTRIES, ids=[e["file"] for e in ENTRIES])
def entry(request: pytest.FixtureRequest) -> dict[str, Any]:
    return request.param


def test_the_dynamic_models_cover_the_issue(entry: dict[str, Any]) -> None:
    names = {e["name"] for e in ENTRIES}
    assert {"hf_bert_sdpa_mask", "hf_distilbert_sdpa_mask", "hf_gpt2_sdpa_mask",
            "hf_llama_sdpa_mask", "hf_vit_sdpa", "hf_whisper_encoder_sdpa", "tv_resnet18",
            "tv_mobilenet_v3_small"} <= names
    assert len(ENTRIES) == 20  # both exporters each


def test_import_keeps_the_dynamic_dims_symbolic(entry: dict[str, Any]) -> None:
    mod = _stages(entry["file"])["mod"]
    params = {p.name_hint: p.type_annotation for p in mod["main"].params}
    for spec in entry["inputs"]:
        shape = params[spec["name"]].shape
        for k, name in spec.get("dynamic", {}).items():
            assert shape[int(k)] == SizeVar(name), (spec["name"], shape)
        static = [d for k, d in enumerate(shape) if str(k) not in spec.get("dynamic", {})]
        assert all(type(d) is int for d in static)


def test_evaluate_and_o3_equal_onnxruntime_at_every_size(entry: dict[str, Any]) -> None:
    stages = _stages(entry["file"])
    for batch, seq in _sizes(entry):
        feed = inputs_at(entry, batch, seq, seed=batch * 1000 + seq)
        want = run_onnxruntime(stages["model"], feed)
        assert not _close(evaluate_irpass(stages["mod"], feed), want), (batch, seq)
        assert not _close(evaluate_irpass(stages["o3"], feed), want), (batch, seq)


def test_the_export_runs_in_onnxruntime_at_every_size(entry: dict[str, Any]) -> None:
    stages = _stages(entry["file"])
    exported = stages["exported"]
    onnx.checker.check_model(exported, full_check=True)
    for batch, seq in _sizes(entry):
        feed = inputs_at(entry, batch, seq, seed=batch * 1000 + seq + 1)
        want = run_onnxruntime(stages["model"], feed)
        assert not _close(run_onnxruntime(exported, feed), want), (batch, seq)
    again = from_onnx(exported)  # and irpass reads its own export back
    assert [p.type_annotation for p in again["main"].params] == [
        p.type_annotation for p in stages["mod"]["main"].params]


def _shape_nodes(graph: onnx.GraphProto) -> tuple[int, int]:
    """``(Shape nodes, nodes computing only shapes)``."""
    nodes = shape_computing_nodes(graph)
    return sum(n.op_type == "Shape" for n in nodes), len(nodes)


def test_the_export_reads_each_size_once_and_computes_less_than_the_original(
        entry: dict[str, Any]) -> None:
    stages = _stages(entry["file"])
    graph = stages["exported"].graph
    shapes, count = _shape_nodes(graph)
    sizes = {name for spec in entry["inputs"] for name in spec.get("dynamic", {}).values()}
    assert shapes <= len(sizes), f"{shapes} Shape nodes for sizes {sorted(sizes)}"
    assert count <= _shape_nodes(stages["model"].graph)[1]
    declared = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
                for i in graph.input}
    for spec in entry["inputs"]:
        for k, name in spec.get("dynamic", {}).items():
            assert declared[spec["name"]][int(k)] == name


# -- bad input ---------------------------------------------------------------------------------


def _two_input_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])
    out = helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 4])
    graph = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "g", [x, y], [out])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_inputs_that_disagree_on_a_size_name_both_params_the_dim_and_the_symbol() -> None:
    mod = from_onnx(_two_input_model())
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(irpass.evaluate(mod, x, x), x + x)
    with pytest.raises(ValueError, match=r"parameter %y \(position 1\) of @main: dim 0 is "
                                         r"n = 3, but parameter %x \(position 0\) set n = 2"):
        irpass.evaluate(mod, x, np.ones((3, 4), np.float32))


def test_a_symbolic_number_of_conv_channels_is_an_error_naming_the_node_and_symbol() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "c", 8, 8])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, "c", 3, 3])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv1")],
                              "g", [x, w], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match=r"node 0 'conv1' \(Conv\).*must be a static "
                                              r"size, got the symbolic dim c"):
        from_onnx(model)


def test_dims_tensor_exports_as_computed_sizes() -> None:
    from irpass import op
    from irpass.ir import Function, IRModule, Tuple, var
    from irpass.ir.dims import dim_min, floordiv

    n = SizeVar("n")
    x = var("x", shape=(n, 3), dtype="float32")
    sizes = op.dims_tensor([n * 2 + 1, 3, floordiv(n, 2), dim_min(n, 4)], "int32")
    mod = IRModule({"main": Function([x], Tuple([sizes, op.nn.relu(x)]))})
    exported = to_onnx(mod, opset=17)
    onnx.checker.check_model(exported, full_check=True)
    assert [d.dim_param for d in exported.graph.input[0].type.tensor_type.shape.dim] == ["n", ""]
    for rows in (1, 5, 8):
        feed = {"x": np.random.default_rng(rows).standard_normal((rows, 3)).astype(np.float32)}
        want = np.array([rows * 2 + 1, 3, rows // 2, min(rows, 4)], np.int32)
        got = run_onnxruntime(exported, feed)[0]
        assert got.dtype == np.int32 and got.tolist() == want.tolist()
        np.testing.assert_array_equal(irpass.evaluate(mod, **feed)[0], want)


@pytest.mark.parametrize("opset", [11, 13])
def test_a_softmax_between_reshapes_of_a_symbolic_batch_exports(opset) -> None:
    # The export's peephole that runs a 2-D softmax between two reshapes on the full shape
    # compared products of dims with numpy, which a size variable breaks (a TypeError from
    # deep inside, found by fuzzing SqueezeNet's input dims)
    graph = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Reshape", ["x", "flat"], ["f"]),
         helper.make_node("Softmax", ["f"], ["p"], axis=1),
         helper.make_node("Reshape", ["p", "s"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, 4])],
        [onnx.numpy_helper.from_array(np.array([-1, 4], np.int64), "flat")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    out = to_onnx(optimize_o3(from_onnx(model)))
    onnx.checker.check_model(out, full_check=True)
    for n in (1, 5):
        x = np.random.default_rng(n).standard_normal((n, 3, 4)).astype(np.float32)
        assert not check_outputs_close(run_onnxruntime(out, {"x": x}),
                                       run_onnxruntime(model, {"x": x}),
                                       rtol=RANDOM_RTOL, scaled_atol=SCALED_ATOL)


def test_a_group_norm_over_symbolic_spatial_dims_exports() -> None:
    # its export flattens the spatial dims; their product was taken with numpy (a TypeError on
    # a size variable, as in the softmax peephole above)
    graph = helper.make_graph(
        [helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=2,
                          epsilon=1e-5)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, "H", "W"])],
        [onnx.numpy_helper.from_array(np.linspace(0.5, 2, 4, dtype=np.float32), "scale"),
         onnx.numpy_helper.from_array(np.linspace(-1, 1, 4, dtype=np.float32), "bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    out = to_onnx(from_onnx(model))
    onnx.checker.check_model(out, full_check=True)
    for shape in ((1, 4, 3, 5), (1, 4, 2, 2)):
        x = np.random.default_rng(shape[2]).standard_normal(shape).astype(np.float32)
        assert not check_outputs_close(run_onnxruntime(out, {"x": x}),
                                       run_onnxruntime(model, {"x": x}),
                                       rtol=RANDOM_RTOL, scaled_atol=SCALED_ATOL)


def test_an_argmax_over_axes_with_a_symbolic_dim_exports() -> None:
    # over several axes the export flattens them into one, of their product's size
    x = irpass.var("x", shape=(3, SizeVar("n"), 4))
    mod = irpass.IRModule.from_expr(irpass.Function([x], irpass.op.argmax(x, axis=[1, 2])))
    out = to_onnx(mod)
    onnx.checker.check_model(out, full_check=True)
    for n in (1, 2, 5):
        xs = np.random.default_rng(n).standard_normal((3, n, 4)).astype(np.float32)
        np.testing.assert_array_equal(run_onnxruntime(out, {"x": xs})[0],
                                      xs.reshape(3, -1).argmax(axis=1))
