"""The debugging tools on real models, with planted faults: ResNet-50 (onnx's light model
with seeded random weights: its shipped weights make every output equal) and BERT (the
zoo's TorchScript export).

- a pass that flips a sign in one rewrite of many: ``bisect`` names the pass and the
  rewrite; ``reduce`` leaves at most 10 op calls;
- a pass that returns an ill-typed module: ``verify_each`` blames it;
- a pass that raises on one node: ``bisect`` names the pass and the rewrite after which
  it raises; the command line's reproducer reruns to the same failure;
- ``print-changed`` stays under a megabyte on ResNet-50.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import irpass
import numpy as np
import onnx
import pytest
from irpass import op
from irpass.debug import OutputsDiffer, PassChangesOutputs, bisect, count_calls, reduce
from irpass.instrument import PrintChanged, VerifyError
from irpass.ir import ExprMutator, const, structural_equal
from irpass.testing.plugins import OWN_PLUGINS, plugin_environ
from irpass.transform import PassContext, Sequential, default_pipeline, function_pass
from irpass_onnx import from_onnx
from irpass_onnx.testing import light_model, randomize_weights

MODELS = Path(__file__).resolve().parents[1] / "models"
BERT = MODELS / "hf_bert_sdpa_mask.torchscript17.onnx"
K = 3  # the planted rewrite that goes wrong


@pytest.fixture(scope="module")
def resnet50():
    try:
        path = light_model("resnet50").path
    except LookupError as err:  # the installed onnx ships its light models
        pytest.fail(str(err))
    return from_onnx(randomize_weights(onnx.load(path), seed=0))


@pytest.fixture(scope="module")
def bert():
    return irpass.load(BERT)


class _Planted(ExprMutator):
    """Rewrites every call of ``name`` (a counted rewrite each); the ``K``-th goes wrong."""

    def __init__(self, ctx, name, wrong):
        super().__init__()
        self.ctx, self.name, self.wrong, self.n = ctx, name, wrong, 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if getattr(call.op, "name", None) == self.name and self.ctx.debug_counter("planted"):
            self.n += 1
            if self.n == K:
                return self.wrong(new)
        return new


def _planted(kind: str, name: str):
    def flip(call):  # a sign flipped in the operand
        return type(call)(call.op, [op.negative(call.args[0]), *call.args[1:]], call.attrs)

    def ill_typed(call):
        return op.add(call, const(np.ones(7, call.checked_type.dtype)))

    def boom(call):
        raise RuntimeError("planted failure on one node")

    wrong = {"flip": flip, "ill_typed": ill_typed, "raise": boom}[kind]

    @function_pass(opt_level=0, name=f"Planted_{kind}")
    def planted(func, mod, ctx):
        return _Planted(ctx, name, wrong).visit(func)

    return planted


def _with(planted, at: int = 8) -> Sequential:
    """The -O3 default pipeline with ``planted`` run as its ``at``-th pass."""
    passes = list(default_pipeline(3).passes)
    return Sequential([*passes[:at], planted, *passes[at:]], name="planted")


CASES = [("resnet50", "nn.relu"), ("bert", "add")]


@pytest.mark.parametrize("model, target", CASES)
def test_bisect_names_the_planted_pass_and_rewrite(model, target, request):
    mod = request.getfixturevalue(model)
    planted = _planted("flip", target)
    found = bisect(mod, _with(planted), OutputsDiffer(mod, rtol=1e-4, atol=1e-5), opt_level=3)
    assert found.step.info.name == "Planted_flip"
    assert found.rewrite == K and found.site == "planted"
    assert found.after.startswith("negative(")
    text = found.render()
    assert "first bad pass: Planted_flip" in text and f"first bad rewrite: {K} of" in text


@pytest.mark.parametrize("model, target", CASES)
def test_bisect_finds_the_rewrite_after_which_a_pass_raises(model, target, request):
    mod = request.getfixturevalue(model)
    found = bisect(mod, _with(_planted("raise", target)), OutputsDiffer(mod), opt_level=3)
    assert found.step.info.name == "Planted_raise" and found.step.error is not None
    assert found.rewrite == K


@pytest.mark.parametrize("model, target", CASES)
def test_verify_each_blames_the_pass_that_returns_an_ill_typed_module(model, target, request):
    mod = request.getfixturevalue(model)
    with pytest.raises(VerifyError) as info:
        with PassContext(opt_level=3, config={"verify_each": True}):
            _with(_planted("ill_typed", target))(mod)
    assert info.value.pass_name == "Planted_ill_typed"


@pytest.mark.parametrize("model, target", CASES)
def test_reduce_leaves_at_most_ten_op_calls(model, target, request):
    mod = request.getfixturevalue(model)
    oracle = PassChangesOutputs(_with(_planted("flip", target)), rtol=1e-4, atol=1e-5)
    result = reduce(mod, oracle)
    assert result.calls_before > 50
    assert result.calls_after <= 10
    assert oracle.is_bad(result.module)  # the reduced module still shows it
    assert count_calls(result.module) == result.calls_after


def test_the_reproducer_reruns_to_the_same_failure(tmp_path):
    plugin = tmp_path / "planted_pack.py"
    plugin.write_text(
        "import numpy as np\n"
        "from irpass import op\n"
        "from irpass.ir import Function, const\n"
        "from irpass.plugins import hookimpl\n"
        "from irpass.transform import function_pass\n"
        "@function_pass(opt_level=0, name='Explode')\n"
        "def Explode(func, mod, ctx):\n"
        "    raise RuntimeError('planted failure')\n"
        "@hookimpl\n"
        "def irpass_register_passes():\n"
        "    return [Explode]\n")
    env = plugin_environ(OWN_PLUGINS + ("onnx",))
    env["PYTHONPATH"] = str(tmp_path)
    repro = tmp_path / "repro"

    def irpass_cli(*args):
        return subprocess.run([sys.executable, "-m", "irpass", "-p", "planted_pack", *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)

    first = irpass_cli("optimize", str(BERT), "-O", "3",
                       "-P", "default,Explode,DeadCodeElimination",
                       "--reproducer", str(repro), "-o", str(tmp_path / "out.onnx"))
    assert first.returncode == 1, first.stderr
    assert "pass 'Explode' failed: RuntimeError: planted failure" in first.stderr
    data = json.loads((repro / "reproducer.json").read_text())
    assert data["pipeline"] == "Explode,DeadCodeElimination"
    assert "planted_pack" in [p["name"] for p in data["plugins"]]
    again = irpass_cli("optimize", "--reproduce", str(repro), "-q")
    assert again.returncode == 1
    assert again.stderr.splitlines()[0] == first.stderr.splitlines()[0]
    assert not (tmp_path / "out.onnx").exists()


@pytest.mark.parametrize("diff", [False, True])
def test_print_changed_on_resnet50_stays_under_a_megabyte(resnet50, diff):
    out = io.StringIO()
    with PassContext(opt_level=3, instruments=[PrintChanged(diff=diff, stream=out)]):
        default_pipeline(3)(resnet50)
    text = out.getvalue()
    assert "*** IR Dump After SimplifyInference" in text  # it did print the passes' work
    assert len(text.encode()) < 1_000_000


def test_verify_each_finds_nothing_wrong_with_the_standard_pipeline(resnet50, bert):
    for mod in (resnet50, bert):
        with PassContext(opt_level=3):
            plain = default_pipeline(3)(mod)
        with PassContext(opt_level=3, config={"verify_each": True}):
            checked = default_pipeline(3)(mod)
        assert structural_equal(plain, checked)
