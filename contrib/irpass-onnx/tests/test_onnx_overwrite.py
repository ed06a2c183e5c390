"""``irpass optimize`` never writes over its ONNX input or the input's external data files, and
a failed export leaves an existing output file as it was."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import irpass
import numpy as np
import onnx
import pytest
from irpass.testing.plugins import OWN_PLUGINS, plugin_environ
from irpass_onnx import save_onnx
from irpass_onnx.frontend import external_data_files
from onnx import TensorProto, helper, numpy_helper

WEIGHT = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 4096  # 16 KB: external


def _model() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64])],
        [numpy_helper.from_array(WEIGHT, "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _irpass(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = plugin_environ(OWN_PLUGINS + ("onnx",))  # whatever other packs are installed
    return subprocess.run([sys.executable, "-m", "irpass", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _assert_loads(path: Path) -> None:
    x = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
    np.testing.assert_allclose(irpass.evaluate(irpass.load(path), x), x @ WEIGHT,
                               rtol=1e-5, atol=1e-5 * float(np.abs(x @ WEIGHT).max()))


@pytest.fixture
def external(tmp_path) -> Path:
    """``model.onnx`` keeping its weight in the external data file ``weights.onnx``."""
    onnx.save_model(_model(), str(tmp_path / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.onnx", size_threshold=0)
    assert sorted(_files(tmp_path)) == ["model.onnx", "weights.onnx"]
    return tmp_path / "model.onnx"


def test_external_data_files_lists_what_loading_reads(external, tmp_path):
    assert external_data_files(external) == [tmp_path / "weights.onnx"]
    onnx.save_model(_model(), str(tmp_path / "single.onnx"))
    assert external_data_files(tmp_path / "single.onnx") == []
    assert external_data_files(tmp_path / "missing.onnx") == []
    assert irpass.formats.model_files(external) == [external, tmp_path / "weights.onnx"]


@pytest.mark.parametrize("output, clash", [
    ("model.onnx", "is the input 'model.onnx'"),
    ("weights.onnx", "is a file of the input 'model.onnx'"),
])
def test_optimize_refuses_to_write_over_the_input_or_its_external_data(external, output, clash):
    directory = external.parent
    files = _files(directory)
    proc = _irpass("optimize", "model.onnx", "-O3", "-o", output, cwd=directory)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"irpass: error: the output {output!r} {clash}"), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert _files(directory) == files
    _assert_loads(external)


def test_a_failed_onnx_write_leaves_the_existing_file(tmp_path, monkeypatch):
    out = tmp_path / "out.onnx"
    onnx.save_model(_model(), str(out))
    before = _files(tmp_path)
    mod = irpass.load(out)

    def write_half_then_fail(model, path, *args, **kwargs):
        Path(path).write_bytes(model.SerializeToString()[:100])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(onnx, "save_model", write_half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        save_onnx(mod, out)
    monkeypatch.undo()
    assert _files(tmp_path) == before
    _assert_loads(out)
