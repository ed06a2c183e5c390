"""Saving with external data: a model over the size limit (``save_onnx(external_data=N)``,
config key ``onnx.external_data``; by default protobuf's 2 GiB) keeps its tensors of 1 KiB
or more in ``<file>.data`` beside it, page-aligned. Each saved model is checked with
``onnx.checker.check_model(path, full_check=True)``, run from its path in onnxruntime and
loaded back by irpass, against ``irpass.evaluate`` of the module."""

from __future__ import annotations

import irpass
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from irpass import op
from irpass.ir import Function, IRModule, var
from irpass.transform import PassContext
from irpass_onnx import OnnxExportError, save_onnx
from irpass_onnx.export import external_data_path
from onnx.external_data_helper import uses_external_data

rng = np.random.default_rng(0)
W1 = rng.standard_normal((64, 32)).astype(np.float32)  # 8 KB: external
W2 = rng.standard_normal((16, 64)).astype(np.float32)  # 4 KB: external
B = rng.standard_normal(16).astype(np.float32)  # 64 bytes: stays in the model
SIZE = W1.nbytes + W2.nbytes + B.nbytes


def _mlp() -> IRModule:
    x = var("x", shape=(3, 32), dtype="float32")
    h = op.nn.relu(op.nn.dense(x, irpass.const(W1)))
    return IRModule.from_expr(Function([x], op.add(op.nn.dense(h, irpass.const(W2)),
                                                   irpass.const(B))))


def _check_saved(mod: IRModule, path) -> onnx.ModelProto:
    """The saved model passes the full check, runs in onnxruntime from its path and loads
    back into irpass, all with irpass's own result."""
    onnx.checker.check_model(str(path), full_check=True)
    x = rng.standard_normal((3, 32)).astype(np.float32)
    expected = np.asarray(irpass.evaluate(mod, x=x))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    # outputs up to ~100, sums of 64 products: float32 rounding in another summation order
    # reaches 2e-5 (onnxruntime's kernels sum in their own order), so atol is 1e-4
    np.testing.assert_allclose(session.run(None, {"x": x})[0], expected, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(irpass.evaluate(irpass.load(str(path)), x=x)),
                               expected, rtol=1e-5, atol=1e-4)
    return onnx.load(str(path), load_external_data=False)


def _external(model: onnx.ModelProto) -> dict[str, dict[str, str]]:
    return {t.name: {e.key: e.value for e in t.external_data}
            for t in model.graph.initializer if uses_external_data(t)}


def test_a_model_over_the_threshold_keeps_its_big_tensors_beside_it(tmp_path):
    mod, path = _mlp(), tmp_path / "mlp.onnx"
    save_onnx(mod, path, external_data=SIZE // 2)
    model = _check_saved(mod, path)
    refs = _external(model)
    shapes = {t.name: tuple(t.dims) for t in model.graph.initializer}
    assert sorted(shapes[n] for n in refs) == [(16, 64), (64, 32)]  # the bias stays inside
    assert {r["location"] for r in refs.values()} == {external_data_path(path).name}
    assert all(int(r["offset"]) % 4096 == 0 for r in refs.values())
    assert path.stat().st_size < 2048
    assert external_data_path(path).stat().st_size >= W1.nbytes + W2.nbytes


def test_a_model_under_the_threshold_is_one_file(tmp_path):
    mod, path = _mlp(), tmp_path / "mlp.onnx"
    save_onnx(mod, path, external_data=SIZE * 2)
    assert _external(_check_saved(mod, path)) == {}
    assert not external_data_path(path).exists()


def test_the_config_key_sets_the_threshold_for_irpass_save(tmp_path):
    mod, path = _mlp(), tmp_path / "mlp.onnx"
    with PassContext(config={"onnx.external_data": 0}):
        irpass.save(mod, str(path))
    assert len(_external(_check_saved(mod, path))) == 2


@pytest.mark.parametrize("bad", [-1, 1.5, "big", True])
def test_a_bad_threshold_is_an_export_error_naming_the_key(tmp_path, bad):
    with pytest.raises(OnnxExportError, match=r"onnx\.external_data: expected a size in bytes"):
        save_onnx(_mlp(), tmp_path / "mlp.onnx", external_data=bad)
    assert not (tmp_path / "mlp.onnx").exists()
