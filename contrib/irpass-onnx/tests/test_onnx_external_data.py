"""Models whose weights live in side files (external data, as every model over 2 GB has them)
load by path, with the files left byte for byte as they were."""

from __future__ import annotations

import irpass
import numpy as np
import onnx
import pytest
from irpass_onnx import OnnxImportError, load_onnx, load_weights
from irpass_onnx.frontend import external_data_files
from onnx import TensorProto, helper, numpy_helper
from onnx_cases import rand

F, B = TensorProto.FLOAT, TensorProto.BOOL
node = helper.make_node


def weighted_model() -> onnx.ModelProto:
    """Gemm + a Loop whose body holds an initializer of its own (a subgraph's tensor)."""
    body = helper.make_graph(
        [node("MatMul", ["v_in", "R"], ["v_out"]), node("Identity", ["c_in"], ["c_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c_in", B, []),
                 helper.make_tensor_value_info("v_in", F, [2, 16])],
        [helper.make_tensor_value_info("c_out", B, []),
         helper.make_tensor_value_info("v_out", F, [2, 16])],
        [numpy_helper.from_array(rand(16, 16, seed=3) / 4, "R")])
    g = helper.make_graph(
        [node("Gemm", ["x", "W", "b"], ["h"]), node("Loop", ["M", "", "h"], ["y"], body=body)],
        "g", [helper.make_tensor_value_info("x", F, [2, 8])],
        [helper.make_tensor_value_info("y", F, None)],
        [numpy_helper.from_array(rand(8, 16, seed=1), "W"),
         numpy_helper.from_array(rand(16, seed=2), "b"),
         numpy_helper.from_array(np.int64(3), "M")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def save_external(model: onnx.ModelProto, path, location="weights.bin") -> None:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)  # saving moves the copy's tensors to the side file
    onnx.save(copy, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
              location=location, size_threshold=0)


def reference(x: np.ndarray, model: onnx.ModelProto) -> np.ndarray:
    w = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    r = numpy_helper.to_array(model.graph.node[1].attribute[0].g.initializer[0])
    v = x @ w["W"] + w["b"]
    for _ in range(3):
        v = v @ r
    return v


def test_a_model_with_external_data_loads_by_path_and_leaves_its_files_unchanged(tmp_path):
    model = weighted_model()
    path = tmp_path / "model.onnx"
    save_external(model, path)
    side = tmp_path / "weights.bin"
    assert side.stat().st_size > 8 * 16 * 4  # the weights really are in the side file
    assert external_data_files(path) == [side]
    before = {p: p.read_bytes() for p in (path, side)}
    x = rand(2, 8, seed=4)
    mod = load_onnx(path)
    np.testing.assert_allclose(irpass.evaluate(mod, x=x), reference(x, model), rtol=1e-5,
                               atol=1e-5)
    assert {p: p.read_bytes() for p in (path, side)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx", "weights.bin"]


def test_external_weights_as_params_and_load_weights(tmp_path):
    model = weighted_model()
    path = tmp_path / "model.onnx"
    save_external(model, path, location="sub.data")
    mod = load_onnx(path, weights="params")
    weights = load_weights(path)
    assert sorted(weights) == ["W", "b"]
    x = rand(2, 8, seed=5)
    np.testing.assert_allclose(irpass.evaluate(mod, x=x, **weights), reference(x, model),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_a_missing_or_truncated_side_file_is_an_import_error_naming_the_model(tmp_path, damage):
    path = tmp_path / "model.onnx"
    save_external(weighted_model(), path)
    side = tmp_path / "weights.bin"
    if damage == "missing":
        side.unlink()
    else:
        side.write_bytes(side.read_bytes()[:100])
    with pytest.raises(OnnxImportError, match=str(path).replace("\\", "\\\\")):
        load_onnx(path)
