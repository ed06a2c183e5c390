"""std's fusion rules (FusePatterns, in -O2/-O3) on real transformer exports of the zoo.

For one model of each architecture (BERT, GPT-2, Llama, ViT, Whisper's encoder), from both
of torch's exporters: -O3 turns the decompositions into the fused ops (counted per op), the
optimized module computes what onnxruntime computes on the original model, and so do its
exports: at the opset it was imported with (the fused ops written decomposed again) and at
opset 24 (one node each: LayerNormalization, Gelu, RMSNormalization, Attention,
RotaryEmbedding; SiLU as x * Sigmoid(x)), which also has fewer nodes than the original.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import onnx
import pytest
from irpass.ir import Call, Op, post_order_visit
from irpass_onnx import load_onnx, to_onnx
from irpass_onnx.testing import (
    RANDOM_RTOL,
    SCALED_ATOL,
    check_outputs_close,
    evaluate_irpass,
    optimize_o3,
    run_onnxruntime,
)
from test_onnx_zoo import ENTRIES, MODELS_DIR, sample_inputs

#: model file -> the fused ops -O3 leaves in it (each block of these tiny configurations is
#: there twice: two layers).
FUSED: dict[str, dict[str, int]] = {
    "hf_bert_sdpa_mask.torchscript17.onnx": {
        "nn.layer_norm": 5, "nn.attention": 2, "nn.gelu": 2},
    "hf_bert_eager_mask.dynamo18.onnx": {
        "nn.layer_norm": 5, "nn.attention": 2, "nn.gelu": 2},
    "hf_gpt2_eager_mask.torchscript17.onnx": {
        "nn.layer_norm": 5, "nn.attention": 2, "nn.gelu": 2},
    "hf_gpt2_sdpa_nomask.dynamo18.onnx": {
        "nn.layer_norm": 5, "nn.attention": 2, "nn.gelu": 2},
    "hf_llama_sdpa_mask.dynamo18.onnx": {
        "nn.rms_norm": 5, "nn.rotary_embedding": 4, "nn.attention": 2, "nn.silu": 2},
    "hf_llama_eager_nomask.torchscript17.onnx": {
        "nn.rms_norm": 5, "nn.rotary_embedding": 4, "nn.attention": 2, "nn.silu": 2},
    "hf_vit_sdpa.torchscript17.onnx": {
        "nn.layer_norm": 5, "nn.attention": 2, "nn.gelu": 2},
    "hf_whisper_encoder_eager.dynamo18.onnx": {
        "nn.layer_norm": 5, "nn.attention": 2, "nn.gelu": 4},
}
FUSED_OPS = ("nn.layer_norm", "nn.rms_norm", "nn.gelu", "nn.silu", "nn.attention",
             "nn.rotary_embedding")
#: What is left of the decompositions when every one of them is fused.
DECOMPOSED = ("nn.softmax", "erf", "sigmoid", "sqrt", "mean", "isnan", "power", "strided_slice")
#: The ONNX node each fused op becomes at opset 24 (nn.silu: x * Sigmoid(x), as onnxruntime
#: 1.32 runs Swish only in opset-24 models).
ONNX_NODE = {"nn.layer_norm": "LayerNormalization", "nn.rms_norm": "RMSNormalization",
             "nn.gelu": "Gelu", "nn.silu": "Sigmoid", "nn.attention": "Attention",
             "nn.rotary_embedding": "RotaryEmbedding"}
NEW_OPSET = 24
BY_FILE = {e["file"]: e for e in ENTRIES}


def _ops(mod: Any) -> Counter:
    found: Counter = Counter()
    post_order_visit(mod["main"], lambda n: found.update([n.op.name])
                     if type(n) is Call and type(n.op) is Op else None)
    return found


class _Run:
    """One model's shared steps, each made once."""

    cache: dict[str, _Run] = {}

    def __init__(self, file: str) -> None:
        entry = BY_FILE[file]
        self.path = MODELS_DIR / file
        self.original = onnx.load(str(self.path))
        self.inputs = sample_inputs(entry)
        self.reference = run_onnxruntime(self.original, self.inputs)
        self.optimized = optimize_o3(load_onnx(self.path, weights="constants"))

    @classmethod
    def of(cls, file: str) -> _Run:
        if file not in cls.cache:
            cls.cache[file] = cls(file)
        return cls.cache[file]

    def check(self, outputs: list) -> None:
        problems = check_outputs_close(outputs, self.reference, rtol=RANDOM_RTOL,
                                       scaled_atol=SCALED_ATOL)
        assert not problems, "; ".join(problems)


def _count_fused(mod: Any) -> dict[str, int]:
    ops = _ops(mod)
    return {name: ops[name] for name in FUSED_OPS if ops[name]}


@pytest.mark.parametrize("file", sorted(FUSED))
def test_o3_fuses_and_keeps_the_outputs(file: str) -> None:
    run = _Run.of(file)
    assert _count_fused(run.optimized) == FUSED[file]
    left = {name: n for name, n in _ops(run.optimized).items() if name in DECOMPOSED}
    assert not left, f"decompositions left after -O3: {left}"
    run.check(evaluate_irpass(run.optimized, run.inputs))


@pytest.mark.parametrize("file", sorted(FUSED))
def test_exports_keep_the_outputs(file: str) -> None:
    run = _Run.of(file)
    own = to_onnx(run.optimized)  # the imported opset (17/18): fused ops decomposed again
    onnx.checker.check_model(own, full_check=True)
    run.check(run_onnxruntime(own, run.inputs))
    new = to_onnx(run.optimized, opset=NEW_OPSET)
    onnx.checker.check_model(new, full_check=True)
    run.check(run_onnxruntime(new, run.inputs))
    written = Counter(n.op_type for n in new.graph.node)
    for op_name, count in FUSED[file].items():
        assert written[ONNX_NODE[op_name]] == count, (op_name, dict(written))
    assert len(new.graph.node) < len(own.graph.node) <= len(run.original.graph.node)
