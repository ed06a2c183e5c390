"""The pack as users meet it: the ``onnx`` plugin in ``irpass plugins``, ``-p no:onnx``,
``irpass optimize model.onnx -O3 -o out.onnx`` end to end, and the ``[config.onnx]`` options of
a config file. The command runs in a subprocess, as users run it (the installed entry point,
a fresh plugin set); SqueezeNet is the light model used, being the smallest. Its shipped
weights make the softmax saturate (see ``irpass_onnx.testing``), so outputs are compared
before the softmax (``logits_model``), or with seeded random weights, never as probabilities
of those weights.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import irpass
import onnx
import pytest
from irpass.ir.serialize import metadata_path
from irpass.settings import load_settings
from irpass.testing.plugins import OWN_PLUGINS, plugin_environ
from irpass_onnx import load_weights
from irpass_onnx.testing import (
    RANDOM_RTOL,
    SCALED_ATOL,
    assert_outputs_close,
    evaluate_irpass,
    graph_inputs,
    light_model,
    logits_model,
    randomize_weights,
    run_onnxruntime,
)

SQUEEZENET = light_model("squeezenet")


def assert_same_logits(out: onnx.ModelProto, what: str) -> None:
    """``out`` computes SqueezeNet's logits in onnxruntime, both cut before their softmax."""
    inputs = SQUEEZENET.inputs()
    assert_outputs_close(run_onnxruntime(logits_model(out), inputs),
                         run_onnxruntime(logits_model(SQUEEZENET.load()), inputs),
                         rtol=SQUEEZENET.rtol, scaled_atol=SCALED_ATOL, what=what)


def _irpass(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``irpass ARGS`` in ``cwd``, with no plugin or config settings from the environment."""
    env = plugin_environ(OWN_PLUGINS + ("onnx",))  # whatever other packs are installed
    return subprocess.run([sys.executable, "-m", "irpass", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_pack_is_installed_with_its_entry_point():
    # the command-line tests below need the installed entry point, as users have it
    dist = importlib.metadata.distribution("irpass-onnx")
    points = [ep for ep in dist.entry_points if ep.group == "irpass"]
    assert [(ep.name, ep.value) for ep in points] == [("onnx", "irpass_onnx.plugin")]


def test_irpass_plugins_lists_the_onnx_plugin_and_its_format(tmp_path):
    proc = _irpass("plugins", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("onnx "))
    assert "loaded" in line and "irpass-onnx" in line and "1 format" in line, line
    assert "5 config options" in line, line


def test_blocking_the_plugin_removes_the_onnx_format(tmp_path):
    listed = _irpass("-p", "no:onnx", "plugins", cwd=tmp_path)
    line = next(ln for ln in listed.stdout.splitlines() if ln.startswith("onnx "))
    assert "blocked" in line, line
    proc = _irpass("-p", "no:onnx", "optimize", str(SQUEEZENET.path), "-O3", "-o", "out.onnx",
                   cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "no file format for suffix '.onnx'" in proc.stderr, proc.stderr
    assert not (tmp_path / "out.onnx").exists()


def test_irpass_optimize_an_onnx_file_end_to_end(tmp_path):
    proc = _irpass("optimize", str(SQUEEZENET.path), "-O3", "--check", "-o", "out.onnx",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ok" in proc.stderr  # the --check line
    out = onnx.load(str(tmp_path / "out.onnx"))
    onnx.checker.check_model(out, full_check=True)
    original = SQUEEZENET.load()
    assert len(out.graph.node) < len(original.graph.node)
    assert [vi.name for vi in graph_inputs(out)] == [vi.name for vi in graph_inputs(original)]
    assert [o.name for o in out.graph.output] == [o.name for o in original.graph.output]
    assert_same_logits(out, "irpass optimize -O3 output, onnxruntime")


def test_config_file_weights_params_makes_the_weights_parameters(tmp_path):
    (tmp_path / "irpass.toml").write_text('[config.onnx]\nweights = "params"\n')
    settings = load_settings(cwd=tmp_path, environ={})
    assert settings.validate() == []
    # seeded random weights, all of them initializers (the shipped ones are ConstantOfShape)
    feeds = SQUEEZENET.inputs()
    model = randomize_weights(SQUEEZENET.load(), seed=0, calibrate=feeds)
    path = str(tmp_path / "squeezenet_random.onnx")
    onnx.save(model, path)
    default = irpass.load(path)
    with settings.pass_context():
        mod = irpass.load(path)
    inputs = [vi.name for vi in graph_inputs(model)]
    assert [p.name_hint for p in default["main"].params] == inputs
    names = [p.name_hint for p in mod["main"].params]
    assert names[:len(inputs)] == inputs and len(names) > len(inputs)
    weights = load_weights(path)
    assert set(names[len(inputs):]) == set(weights)
    assert_outputs_close(evaluate_irpass(mod, feeds, weights), run_onnxruntime(model, feeds),
                         rtol=RANDOM_RTOL, scaled_atol=SCALED_ATOL, what="weights='params'")


def _constant_of_shape_bytes(model: onnx.ModelProto) -> int:
    """Bytes of the float32 tensors the model's ConstantOfShape nodes build."""
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    return 4 * sum(int(inits[n.input[0]].prod()) for n in model.graph.node
                   if n.op_type == "ConstantOfShape" and n.input[0] in inits)


@pytest.mark.parametrize("materialize", [True, False], ids=["materialize", "keep"])
def test_config_file_materialize_option_reaches_the_command(tmp_path, materialize):
    # materialized, the 0.02-filled weights are constants of the module: the text format's
    # .npz beside it holds megabytes; kept, the module builds them with full() (kilobytes).
    # The ONNX export writes either as ConstantOfShape again, so that file stays small.
    value = "true" if materialize else "false"
    (tmp_path / "irpass.toml").write_text(
        f"[config.onnx]\nmaterialize_constant_of_shape = {value}\n")
    weights = _constant_of_shape_bytes(SQUEEZENET.load())
    proc = _irpass("optimize", str(SQUEEZENET.path), "-O3", "-o", "out.ir", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    constants = metadata_path(tmp_path / "out.ir")
    size = constants.stat().st_size if constants.exists() else 0
    if materialize:
        assert size > weights
    else:
        assert size < weights / 20
    proc = _irpass("optimize", str(SQUEEZENET.path), "-O3", "-o", "out.onnx", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.onnx").stat().st_size < weights / 20
    assert_same_logits(onnx.load(str(tmp_path / "out.onnx")),
                       f"materialize={value}, onnxruntime")


def test_loading_the_plugin_imports_neither_onnx_nor_numpy():
    """Every irpass command loads the plugin: it declares the format and registers its op
    without importing onnx, numpy or the importer (they come with the first model)."""
    code = (
        "import sys, contextlib, io\n"
        "from irpass.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['passes']) == 0\n"
        "from irpass.formats import format_for\n"
        "assert format_for('m.onnx').name == 'onnx'\n"
        "print(sorted(m for m in ('onnx', 'numpy', 'irpass_onnx.frontend', 'irpass_onnx.export')"
        " if m in sys.modules))\n"
        f"m = __import__('irpass').load({str(SQUEEZENET.path)!r})\n"
        "print('onnx' in sys.modules, len(m['main'].params))\n"
    )
    env = plugin_environ([*OWN_PLUGINS, "onnx"])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "True 1"]
