"""``irpass show``: the picture of a model, through the real command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import irpass
from irpass.testing.models import resnet


def _show(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "irpass", "show", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _model(tmp_path: Path, blocks: int = 4) -> Path:
    path = tmp_path / "model.txt"
    irpass.save(resnet(num_blocks=blocks), path)
    return path


def test_show_writes_dot_with_repeats_collapsed(tmp_path) -> None:
    model = _model(tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.iterdir()}
    r = _show(str(model), "-o", "out.dot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    dot = (tmp_path / "out.dot").read_text()
    assert dot.startswith('digraph "irpass"') and "\u00d7 3 more" in dot
    assert r.stderr == "irpass show: out.dot: repeated blocks collapsed: 4 \u00d7 a 9-node block\n"
    assert {p: p.read_bytes() for p in before} == before  # the input is untouched
    r = _show(str(model), "-o", "all.dot", "--no-collapse", cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == ""
    assert (tmp_path / "all.dot").read_text().count("<b>nn.conv2d</b>") == 9


def test_show_without_graphviz_writes_dot_and_says_how_to_get_svg(tmp_path) -> None:
    env = {**os.environ, "PATH": str(tmp_path / "empty")}  # no dot program
    r = _show("--example", "resnet", "-o", "pic.svg", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "pic.svg").exists()
    assert (tmp_path / "pic.dot").read_text().startswith('digraph "irpass"')
    (line,) = r.stderr.splitlines()
    assert line.startswith("irpass show: wrote the DOT text pic.dot instead of pic.svg: for SVG, ")
    assert "pip install 'irpass[viz]'" in line and "apt install graphviz" in line


def test_show_bad_input_one_line_each(tmp_path) -> None:
    model = _model(tmp_path, blocks=2)
    cases = [
        (
            ["-o", "missing/out.svg"],
            "irpass: error: cannot write 'missing/out.svg': no such folder 'missing'",
        ),
        (
            ["-o", "out.jpg"],
            "irpass: error: 'out.jpg': unknown picture format ('.jpg'); "
            "known: .dot, .svg, .png, .html",
        ),
        (
            ["-o", "out.dot", "--function", "nope"],
            f"irpass: error: {model} has no function 'nope' (functions: main)",
        ),
        (
            ["-o", "out.dot", "--max-nodes", "5"],
            f"irpass: error: {model} is too large for one picture: ",
        ),
    ]
    for extra, expected in cases:
        r = _show(str(model), *extra, cwd=tmp_path)
        assert r.returncode == 2, (extra, r.stderr)
        assert r.stderr.splitlines()[0].startswith(expected), (extra, r.stderr)
        assert "Traceback" not in r.stderr
    r = _show(str(model), "-o", "out.dot", "--max-nodes", "5", cwd=tmp_path)
    assert "boxes after collapsing 2 \u00d7 a 9-node block, over --max-nodes 5" in r.stderr
    r = _show(str(model), "-o", "out.dot", "--max-nodes", "5", "--no-collapse", cwd=tmp_path)
    assert "boxes with --no-collapse, over --max-nodes 5" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz", "model.txt"]  # no picture
