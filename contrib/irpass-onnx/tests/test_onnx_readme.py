"""The main README's "Optimizing an ONNX model" example runs and says what it does."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import onnx
from irpass.cli.main import main
from irpass.testing import random_inputs
from irpass_onnx import from_onnx
from irpass_onnx.testing import (
    SCALED_ATOL,
    assert_outputs_close,
    light_model,
    logits_model,
    onnx_node_count,
    run_onnxruntime,
)

README = Path(__file__).resolve().parents[3] / "README.md"


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:] if end < 0 else text[start:end]


def test_readme_onnx_example_writes_the_model_it_describes(tmp_path, monkeypatch, capsys):
    section = _section(README.read_text(), "## Optimizing an ONNX model")
    block = re.search(r"```sh\n(.*?)```", section, flags=re.S).group(1)
    commands = [line for line in block.splitlines() if line.startswith("irpass ")]
    assert len(commands) == 1, "the ONNX example lost its irpass command"
    # $M is the light ResNet-50 of the installed onnx package, as the README's M= line says
    assert "light_resnet50.onnx" in block
    argv = shlex.split(commands[0].replace('"$M"', shlex.quote(str(light_model(
        "resnet50").path))))[1:]
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 0, capsys.readouterr().err
    written = onnx.load(str(tmp_path / "resnet50.opt.onnx"))
    onnx.checker.check_model(written, full_check=True)
    claimed = int(re.search(r"(\d+) computing nodes,\s+each\s+batch\s+norm", section).group(1))
    # the claim counts the nodes that compute: the export also writes one ConstantOfShape per
    # constant-filled weight, which keeps the file small (onnxsim expands them to 102 MB)
    inits = {t.name for t in written.graph.initializer}
    fills = sum(1 for n in written.graph.node
                if n.op_type == "ConstantOfShape" and n.input[0] in inits)
    assert onnx_node_count(written) - fills == claimed
    assert not any(n.op_type == "BatchNormalization" for n in written.graph.node)
    # what --check would say, asked where it is well conditioned: the logits, before the
    # softmax that the light weights saturate, against onnxruntime on the input model
    original = onnx.load(str(light_model("resnet50").path))
    inputs = random_inputs(from_onnx(original), seed=0)
    expected = run_onnxruntime(logits_model(original), inputs)
    assert_outputs_close(run_onnxruntime(logits_model(written), inputs), expected,
                         rtol=0.0, scaled_atol=SCALED_ATOL, what="logits")
