"""The main README's "Optimizing an ONNX model" example runs and says what it does."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import onnx
from irpass.cli.main import main
from irpass_onnx.testing import light_model, onnx_node_count

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
    claimed = int(re.search(r"(\d+) nodes, each batch norm", section).group(1))
    assert onnx_node_count(written) == claimed
    assert not any(n.op_type == "BatchNormalization" for n in written.graph.node)
    assert "check:   ok" in capsys.readouterr().err
