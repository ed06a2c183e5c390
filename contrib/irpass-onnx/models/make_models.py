"""Build the small real-architecture test models of irpass-onnx and export them to ONNX.

Each model is a real torchvision or Hugging Face transformers architecture in a tiny
configuration (hidden sizes 8-64, two layers or stages, vocabulary 256) with seeded random
weights, exported by today's two PyTorch exporters with static input shapes:

- ``torchscript``: ``torch.onnx.export(..., dynamo=False, opset_version=17)``;
- ``dynamo``: ``torch.onnx.export(..., dynamo=True, opset_version=18)`` (needs onnxscript).

Transformers models come with SDPA attention (the library's default) and with eager attention
(``attn_implementation="eager"``), and, where the model takes one, with and without an
attention-mask input. Every exported file is checked in onnxruntime against the PyTorch
output before it is kept, and must stay under 1 MB. ``models.json`` (beside this script)
lists each file with its source architecture, configuration, exporter, opset, inputs (name,
shape, dtype, and how to draw valid values: ``ids`` in ``[0, high)``, ``mask`` as 0/1
padding masks, ``float`` normal) and outputs, the ONNX ops it uses, and every export that
failed with the error.

The TorchScript exporter has no ``aten::diff``, which transformers' mask code calls when a
decoder gets no attention mask (GPT-2, Llama and Whisper's decoder without one); the script
registers a symbolic for it (:func:`_diff_symbolic`: ``Concat`` of the prepended values,
then the difference of two ``Slice``s), and one for ``aten::cumsum`` that casts a bool input
to int64 first as torch does (the exporter's own writes ``CumSum`` of bools, which ONNX
refuses; the same mask code sums a bool tensor). An export that still fails is kept in the
manifest's ``failed`` list with the exporter's reason (e.g. the dynamo exporter on T5 with SDPA
attention).

Only this script needs ``torch``, ``torchvision``, ``transformers``, ``onnxscript`` and
``onnxruntime``; none is a dependency of irpass or of the pack. Run it in a venv that has them
(the committed files were made with the versions ``models.json`` records; exports are seeded,
so a rerun with those versions gives the same weights and graphs)::

    python -m venv /work/venv-models
    /work/venv-models/bin/pip install torch torchvision transformers onnxscript onnxruntime
    /work/venv-models/bin/python contrib/irpass-onnx/models/make_models.py   # every model
    python contrib/irpass-onnx/models/make_models.py --only bert  # names matching a regex

With ``--only``, the other entries of ``models.json`` are kept as they are.

``--size full --out DIR`` exports the same architectures at their real sizes instead
(torchvision's default constructors at 224x224, BERT-base, DistilBERT-base, GPT-2 small, a
SmolLM-135M-shaped Llama, T5-small, Whisper-tiny and ViT-B/16 at batch 1 and sequence length
128, random weights) into ``DIR`` with its own ``models.json``: the models users wait on,
for ``benchmarks/bench_zoo.py --models-dir DIR``. They are tens to hundreds of megabytes, so
they are never committed and the 1 MB limit does not apply.

``--size dynamic`` exports a subset (:data:`DYNAMIC`) in the small configurations with a
dynamic batch dim, and a dynamic sequence length for text inputs (``dynamic_axes`` for the
TorchScript exporter, ``dynamic_shapes`` for dynamo; position tables 256 long so that
sequences up to 128 fit) into ``models/dynamic/``, each checked in onnxruntime against torch
at the export size and at batch 3 (and length 16): the symbolic-shape test models.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "models.json"
MAX_BYTES = 1 << 20
#: (exporter, opset) pairs: the TorchScript exporter at opset 17, the dynamo one at 18.
EXPORTERS: tuple[tuple[str, int], ...] = (("torchscript", 17), ("dynamo", 18))
#: Vocabulary size: the embeddings (twice where an exporter unties the LM head) are most of a
#: transformers model's bytes.
VOCAB = 256
IMAGE = 64


@dataclass(frozen=True)
class Sizes:
    """The input sizes of one run: batch, text length, image side, and the bound of the token
    ids drawn (at most every exported vocabulary's size)."""

    batch: int
    seq: int
    image: int
    ids: int


SMALL = Sizes(batch=2, seq=8, image=IMAGE, ids=VOCAB)
FULL = Sizes(batch=1, seq=128, image=224, ids=1000)

#: The models ``--size dynamic`` exports (names of :func:`all_specs`), and the sizes at which
#: each export is checked against torch besides the export size: (batch, sequence length).
DYNAMIC = ("tv_resnet18", "tv_mobilenet_v3_small", "tv_vit", "hf_bert_sdpa_mask",
           "hf_bert_eager_mask", "hf_distilbert_sdpa_mask", "hf_gpt2_sdpa_mask",
           "hf_llama_sdpa_mask", "hf_vit_sdpa", "hf_whisper_encoder_sdpa")
DYNAMIC_CHECK = (3, 16)
#: Config changes of the dynamic exports: position tables long enough for 128 tokens.
DYNAMIC_CONFIGS: dict[str, dict[str, Any]] = {
    "hf_bert": {"max_position_embeddings": 256}, "hf_distilbert":
    {"max_position_embeddings": 256}, "hf_gpt2": {"n_positions": 256},
    "hf_llama": {"max_position_embeddings": 256},
}


@dataclass
class InputSpec:
    """One graph input: its name, static shape, dtype and how tests draw valid values."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # numpy dtype name
    kind: str  # "float", "ids" (integers in [0, high)) or "mask" (0/1 padding mask)
    high: int | None = None
    #: the dynamic dims of a --size dynamic export: index -> size variable name
    dynamic: dict[int, str] = field(default_factory=dict)

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """Seeded valid values (the same rules the tests use, see models.json)."""
        return sample_input(self.as_json(), rng)

    def as_json(self) -> dict[str, Any]:
        """The input as the manifest records it (name, shape, dtype, kind, and the bound of ids)."""
        out: dict[str, Any] = {"name": self.name, "shape": list(self.shape), "dtype": self.dtype,
                               "kind": self.kind}
        if self.high is not None:
            out["high"] = self.high
        if self.dynamic:
            out["dynamic"] = {str(k): v for k, v in self.dynamic.items()}
        return out


def sample_input(spec: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    """Values for an input described as in models.json: ``float`` standard normal, ``ids``
    uniform in ``[0, high)``, ``mask`` a padding mask (each row ones then zeros, a random
    length of at least 1, the first row full)."""
    shape = tuple(spec["shape"])
    dtype = np.dtype(spec["dtype"])
    if spec["kind"] == "float":
        return rng.standard_normal(shape).astype(dtype)
    if spec["kind"] == "ids":
        return rng.integers(0, spec["high"], size=shape).astype(dtype)
    if spec["kind"] == "mask":
        rows = int(np.prod(shape[:-1]))
        length = shape[-1]
        lengths = rng.integers(1, length + 1, size=rows)
        lengths[0] = length
        mask = (np.arange(length)[None, :] < lengths[:, None]).reshape(shape)
        return mask.astype(dtype)
    raise ValueError(f"input {spec['name']!r}: unknown kind {spec['kind']!r}")


@dataclass
class ModelSpec:
    """A model to export: ``build()`` gives the module (eval mode) and its inputs."""

    name: str
    source: str  # "torchvision" or "transformers"
    arch: str
    build: Callable[[], torch.nn.Module]
    inputs: list[InputSpec]
    outputs: list[str]
    config: dict[str, Any] = field(default_factory=dict)
    attention: str | None = None  # "sdpa" / "eager" for transformers models
    note: str = ""


# -- weights ---------------------------------------------------------------------------------


def randomize_norms(module: torch.nn.Module, seed: int) -> None:
    """Give every normalization layer random (seeded) scales, shifts and running statistics,
    so that a norm dropped or misapplied by an importer changes the outputs (freshly built
    ones are the identity: scale 1, shift 0, mean 0, variance 1)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for sub in module.modules():
            if "norm" not in type(sub).__name__.lower():
                continue
            for pname, tensor in list(sub.named_parameters(recurse=False)) + list(
                sub.named_buffers(recurse=False)
            ):
                if not tensor.is_floating_point():
                    continue
                if pname in ("weight", "running_var"):
                    tensor.copy_(0.5 + torch.rand(tensor.shape, generator=gen))
                elif pname in ("bias", "running_mean"):
                    tensor.copy_(0.1 * torch.randn(tensor.shape, generator=gen))


def _seeded(build: Callable[[], torch.nn.Module], seed: int = 0) -> Callable[[], torch.nn.Module]:
    def make() -> torch.nn.Module:
        torch.manual_seed(seed)
        model = build()
        randomize_norms(model, seed + 1)
        return model.eval()

    return make


# -- torchvision -----------------------------------------------------------------------------


def _resnet18_like() -> torch.nn.Module:
    """ResNet-18's layout (BasicBlock, [2, 2, 2, 2]) with widths 4, 8, 16, 32."""
    from torch import nn
    from torchvision.models.resnet import BasicBlock, ResNet

    model = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10)
    model.inplanes = 4
    model.conv1 = nn.Conv2d(3, 4, kernel_size=7, stride=2, padding=3, bias=False)
    model.bn1 = nn.BatchNorm2d(4)
    model.layer1 = model._make_layer(BasicBlock, 4, 2)
    model.layer2 = model._make_layer(BasicBlock, 8, 2, stride=2)
    model.layer3 = model._make_layer(BasicBlock, 16, 2, stride=2)
    model.layer4 = model._make_layer(BasicBlock, 32, 2, stride=2)
    model.fc = nn.Linear(32, 10)
    return model


def _mobilenet_v3_small() -> torch.nn.Module:
    from torchvision.models.mobilenetv3 import MobileNetV3, _mobilenet_v3_conf

    setting, _ = _mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.25)
    return MobileNetV3(setting, last_channel=64, num_classes=10)


def _narrow_head(model: torch.nn.Module, width: int) -> torch.nn.Module:
    """``model`` (MobileNetV2, MNASNet) with its last 1x1 conv and classifier ``width`` wide
    instead of 1280 (most of the weights at width 0.25)."""
    from torch import nn

    last = model.layers if hasattr(model, "layers") else model.features
    conv = next(m for m in reversed(list(last.modules())) if isinstance(m, nn.Conv2d))
    bn = next(m for m in reversed(list(last.modules())) if isinstance(m, nn.BatchNorm2d))
    parent = {id(c): (p, n) for p in last.modules() for n, c in p.named_children()}
    owner, name = parent[id(conv)]
    setattr(owner, name, nn.Conv2d(conv.in_channels, width, 1, bias=False))
    owner, name = parent[id(bn)]
    setattr(owner, name, nn.BatchNorm2d(width))
    model.classifier[-1] = nn.Linear(width, 10)
    return model


def _mobilenet_v2() -> torch.nn.Module:
    from torchvision.models import MobileNetV2

    return _narrow_head(MobileNetV2(num_classes=10, width_mult=0.25), 64)


def _vit_tv() -> torch.nn.Module:
    from torchvision.models import VisionTransformer

    return VisionTransformer(image_size=IMAGE, patch_size=16, num_layers=2, num_heads=2,
                             hidden_dim=32, mlp_dim=64, num_classes=10)


def _swin() -> torch.nn.Module:
    from torchvision.models import SwinTransformer

    return SwinTransformer(patch_size=[4, 4], embed_dim=8, depths=[2, 2, 2],
                           num_heads=[1, 2, 4], window_size=[4, 4], num_classes=10)


def _swin_v2() -> torch.nn.Module:
    from torchvision.models.swin_transformer import (
        PatchMergingV2,
        SwinTransformer,
        SwinTransformerBlockV2,
    )

    return SwinTransformer(patch_size=[4, 4], embed_dim=8, depths=[2, 2], num_heads=[1, 2],
                           window_size=[4, 4], num_classes=10, block=SwinTransformerBlockV2,
                           downsample_layer=PatchMergingV2)


def _efficientnet() -> torch.nn.Module:
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf

    setting, last = _efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.25)
    return EfficientNet(setting, dropout=0.2, num_classes=10, last_channel=64)


def _convnext() -> torch.nn.Module:
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    # layer_scale 0.5 rather than 1e-6, so the blocks' outputs count
    stages = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), CNBlockConfig(64, None, 1)]
    return ConvNeXt(stages, layer_scale=0.5, num_classes=10)


def _regnet() -> torch.nn.Module:
    from torchvision.models.regnet import BlockParams, RegNet

    params = BlockParams.from_init_params(depth=4, w_0=8, w_a=8.0, w_m=2.0, group_width=8,
                                          se_ratio=0.25)
    return RegNet(params, num_classes=10, stem_width=8)


def _shufflenet() -> torch.nn.Module:
    from torchvision.models import ShuffleNetV2

    return ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=10)


def _densenet() -> torch.nn.Module:
    from torchvision.models import DenseNet

    return DenseNet(growth_rate=8, block_config=(2, 2, 2), num_init_features=16, bn_size=2,
                    num_classes=10)


def _squeezenet() -> torch.nn.Module:
    from torch import nn
    from torchvision.models import SqueezeNet
    from torchvision.models.squeezenet import Fire

    model = SqueezeNet("1_1", num_classes=10)
    # the same layers, 8x narrower
    model.features = nn.Sequential(
        nn.Conv2d(3, 8, kernel_size=3, stride=2), nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(8, 2, 8, 8), Fire(16, 2, 8, 8),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(16, 4, 16, 16), Fire(32, 4, 16, 16),
    )
    model.classifier = nn.Sequential(nn.Dropout(p=0.5), nn.Conv2d(32, 10, kernel_size=1),
                                     nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))
    return model


def _mnasnet() -> torch.nn.Module:
    from torchvision.models import MNASNet

    return _narrow_head(MNASNet(0.1, num_classes=10), 64)


def _image(sizes: Sizes, name: str = "pixel_values") -> list[InputSpec]:
    return [InputSpec(name, (sizes.batch, 3, sizes.image, sizes.image), "float32", "float")]


TORCHVISION: list[tuple[str, str, Callable[[], torch.nn.Module]]] = [
    ("tv_resnet18", "ResNet(BasicBlock, [2, 2, 2, 2]), widths 4-32", _resnet18_like),
    ("tv_mobilenet_v3_small", "MobileNetV3 small, width 0.25", _mobilenet_v3_small),
    ("tv_mobilenet_v2", "MobileNetV2, width 0.25, last conv 64 wide", _mobilenet_v2),
    ("tv_vit", "VisionTransformer, 2 layers, hidden 32, patch 16", _vit_tv),
    ("tv_swin", "SwinTransformer (Swin-T blocks), embed 8, depths [2, 2, 2]", _swin),
    ("tv_swin_v2", "SwinTransformer V2 blocks, embed 8, depths [2, 2]", _swin_v2),
    ("tv_efficientnet", "EfficientNet-B0 layout, width 0.25, depth 0.25", _efficientnet),
    ("tv_convnext", "ConvNeXt, widths 16-64, one block per stage", _convnext),
    ("tv_regnet", "RegNet (Y-style, SE), depth 4, w_0 8", _regnet),
    ("tv_shufflenet_v2", "ShuffleNetV2, widths 8-128", _shufflenet),
    ("tv_densenet", "DenseNet, growth 8, blocks (2, 2, 2)", _densenet),
    ("tv_squeezenet", "SqueezeNet 1.1 layout, 8x narrower", _squeezenet),
    ("tv_mnasnet", "MNASNet, width 0.1, last conv 64 wide", _mnasnet),
]


# -- transformers ----------------------------------------------------------------------------


class _Outputs(torch.nn.Module):
    """A transformers model returning a tuple of the named output tensors (the exporters
    want tensors, not ModelOutput dicts), called with keyword inputs in a fixed order."""

    def __init__(self, model: torch.nn.Module, inputs: list[str], outputs: list[str],
                 fixed: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.model = model
        self.input_names = inputs
        self.output_names = outputs
        self.fixed = fixed or {}

    def forward(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        kwargs = dict(zip(self.input_names, args, strict=True))
        out = self.model(**kwargs, **self.fixed)
        return tuple(out[name] for name in self.output_names)


class _WhisperDecoderStep(torch.nn.Module):
    """One decoder pass of Whisper (no cache): token ids and the encoder's states to logits."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, decoder_input_ids: torch.Tensor,
                encoder_hidden_states: torch.Tensor) -> torch.Tensor:
        states = self.model.model.decoder(input_ids=decoder_input_ids,
                                          encoder_hidden_states=encoder_hidden_states,
                                          use_cache=False, return_dict=True).last_hidden_state
        return self.model.proj_out(states)


def _hf(cls_name: str, config_name: str, config: dict[str, Any], attention: str) -> torch.nn.Module:
    import transformers

    cfg = getattr(transformers, config_name)(**config)
    model = getattr(transformers, cls_name)._from_config(cfg, attn_implementation=attention)
    if model.config._attn_implementation != attention:
        raise RuntimeError(f"{cls_name}: asked for {attention} attention, got "
                           f"{model.config._attn_implementation}")
    return model


def _text(mask: bool, sizes: Sizes) -> list[InputSpec]:
    shape = (sizes.batch, sizes.seq)
    specs = [InputSpec("input_ids", shape, "int64", "ids", sizes.ids)]
    if mask:
        specs.append(InputSpec("attention_mask", shape, "int64", "mask"))
    return specs


#: name, model class, config class, config, outputs, takes a mask, extra fixed kwargs
_TEXT_MODELS: list[tuple[str, str, str, dict[str, Any], list[str], dict[str, Any]]] = [
    ("hf_bert", "BertModel", "BertConfig",
     {"vocab_size": VOCAB, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
      "intermediate_size": 64, "max_position_embeddings": 64, "initializer_range": 0.2},
     ["last_hidden_state", "pooler_output"], {}),
    ("hf_distilbert", "DistilBertModel", "DistilBertConfig",
     {"vocab_size": VOCAB, "dim": 32, "n_layers": 2, "n_heads": 2, "hidden_dim": 64,
      "max_position_embeddings": 64, "initializer_range": 0.2},
     ["last_hidden_state"], {}),
    ("hf_gpt2", "GPT2LMHeadModel", "GPT2Config",
     {"vocab_size": VOCAB, "n_embd": 32, "n_layer": 2, "n_head": 2, "n_positions": 64,
      "initializer_range": 0.2, "bos_token_id": 1, "eos_token_id": 2},
     ["logits"], {"use_cache": False}),
    ("hf_llama", "LlamaForCausalLM", "LlamaConfig",
     {"vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
      "initializer_range": 0.2},
     ["logits"], {"use_cache": False}),
]

_T5_CONFIG = {"vocab_size": VOCAB, "d_model": 32, "d_kv": 8, "d_ff": 64, "num_layers": 2,
              "num_decoder_layers": 2, "num_heads": 4, "relative_attention_num_buckets": 8,
              "relative_attention_max_distance": 16, "decoder_start_token_id": 0}
_WHISPER_CONFIG = {"vocab_size": VOCAB, "num_mel_bins": 16, "d_model": 32, "encoder_layers": 2,
                   "decoder_layers": 2, "encoder_attention_heads": 2,
                   "decoder_attention_heads": 2, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64,
                   "max_source_positions": 16, "max_target_positions": 32,
                   "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
                   "decoder_start_token_id": 1, "init_std": 0.2}
_VIT_CONFIG = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
               "intermediate_size": 64, "image_size": IMAGE, "patch_size": 16, "num_labels": 10,
               "initializer_range": 0.2}
T5_DECODER_SEQ = 5
WHISPER_DECODER_SEQ = 6

#: The real sizes (``--size full``): the library's default configurations, which are
#: BERT-base, DistilBERT-base, GPT-2 small, T5-small, Whisper-tiny and ViT-B/16; Llama's
#: default is 7B parameters, so it takes SmolLM-135M's shape instead.
FULL_CONFIGS: dict[str, dict[str, Any]] = {
    "hf_bert": {}, "hf_distilbert": {}, "hf_gpt2": {}, "hf_t5": {}, "hf_whisper": {},
    "hf_vit": {},
    "hf_llama": {"vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536,
                 "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
                 "max_position_embeddings": 2048, "tie_word_embeddings": True},
}
FULL_TORCHVISION: dict[str, tuple[str, str]] = {
    "tv_resnet18": ("resnet18", "ResNet-18"),
    "tv_mobilenet_v3_small": ("mobilenet_v3_small", "MobileNetV3 small"),
    "tv_mobilenet_v2": ("mobilenet_v2", "MobileNetV2"),
    "tv_vit": ("vit_b_16", "ViT-B/16"),
    "tv_swin": ("swin_t", "Swin-T"),
    "tv_swin_v2": ("swin_v2_t", "Swin V2-T"),
    "tv_efficientnet": ("efficientnet_b0", "EfficientNet-B0"),
    "tv_convnext": ("convnext_tiny", "ConvNeXt-T"),
    "tv_regnet": ("regnet_y_400mf", "RegNetY-400MF"),
    "tv_shufflenet_v2": ("shufflenet_v2_x1_0", "ShuffleNetV2 x1.0"),
    "tv_densenet": ("densenet121", "DenseNet-121"),
    "tv_squeezenet": ("squeezenet1_1", "SqueezeNet 1.1"),
    "tv_mnasnet": ("mnasnet1_0", "MNASNet 1.0"),
}


def transformers_specs(sizes: Sizes = SMALL, full: bool = False,
                       dynamic: bool = False) -> list[ModelSpec]:
    """Every transformers model: each text model with SDPA and eager attention, with and
    without a mask input; T5's full seq2seq forward; Whisper's encoder and a decoder step;
    ViT. ``full``: in the real sizes of :data:`FULL_CONFIGS`; ``dynamic``: with the changes
    of :data:`DYNAMIC_CONFIGS`."""
    import transformers

    def config(name: str, tiny: dict[str, Any]) -> dict[str, Any]:
        if full:
            return FULL_CONFIGS[name]
        return {**tiny, **DYNAMIC_CONFIGS.get(name, {})} if dynamic else tiny

    t5_config = config("hf_t5", _T5_CONFIG)
    whisper_config = config("hf_whisper", _WHISPER_CONFIG)
    whisper = transformers.WhisperConfig(**whisper_config)
    vit_config = config("hf_vit", _VIT_CONFIG)
    specs: list[ModelSpec] = []
    for attention in ("sdpa", "eager"):
        for name, cls, cfg_name, tiny, outs, fixed in _TEXT_MODELS:
            cfg = config(name, tiny)
            for mask in (True, False):
                inputs = _text(mask, sizes)
                names = [i.name for i in inputs]

                def build(cls=cls, cfg_name=cfg_name, cfg=cfg, attention=attention,
                          names=names, outs=outs, fixed=fixed) -> torch.nn.Module:
                    return _Outputs(_hf(cls, cfg_name, cfg, attention), names, outs, fixed)

                specs.append(ModelSpec(f"{name}_{attention}_{'mask' if mask else 'nomask'}",
                                       "transformers", cls, _seeded(build), inputs, outs,
                                       cfg, attention))
        for mask in (True, False):
            inputs = _text(mask, sizes) + [InputSpec(
                "decoder_input_ids", (sizes.batch, T5_DECODER_SEQ), "int64", "ids", sizes.ids)]
            names = [i.name for i in inputs]

            def build_t5(attention=attention, names=names) -> torch.nn.Module:
                return _Outputs(_hf("T5ForConditionalGeneration", "T5Config", t5_config,
                                    attention), names, ["logits"], {"use_cache": False})

            specs.append(ModelSpec(f"hf_t5_{attention}_{'mask' if mask else 'nomask'}",
                                   "transformers", "T5ForConditionalGeneration",
                                   _seeded(build_t5), inputs, ["logits"], t5_config, attention,
                                   "full seq2seq forward, fixed encoder and decoder lengths"))

        def build_whisper_encoder(attention=attention) -> torch.nn.Module:
            model = _hf("WhisperForConditionalGeneration", "WhisperConfig", whisper_config,
                        attention)
            return _Outputs(model.model.encoder, ["input_features"], ["last_hidden_state"])

        frames = 2 * whisper.max_source_positions
        specs.append(ModelSpec(
            f"hf_whisper_encoder_{attention}", "transformers",
            "WhisperForConditionalGeneration.model.encoder", _seeded(build_whisper_encoder),
            [InputSpec("input_features", (sizes.batch, whisper.num_mel_bins, frames),
                       "float32", "float")],
            ["last_hidden_state"], whisper_config, attention))

        def build_whisper_decoder(attention=attention) -> torch.nn.Module:
            return _WhisperDecoderStep(_hf("WhisperForConditionalGeneration", "WhisperConfig",
                                           whisper_config, attention))

        specs.append(ModelSpec(
            f"hf_whisper_decoder_{attention}", "transformers",
            "WhisperForConditionalGeneration decoder + proj_out", _seeded(build_whisper_decoder),
            [InputSpec("decoder_input_ids", (sizes.batch, WHISPER_DECODER_SEQ), "int64", "ids",
                       sizes.ids),
             InputSpec("encoder_hidden_states",
                       (sizes.batch, whisper.max_source_positions, whisper.d_model), "float32",
                       "float")],
            ["logits"], whisper_config, attention, "one decoder pass without a cache"))

        def build_vit(attention=attention) -> torch.nn.Module:
            return _Outputs(_hf("ViTForImageClassification", "ViTConfig", vit_config, attention),
                            ["pixel_values"], ["logits"])

        specs.append(ModelSpec(f"hf_vit_{attention}", "transformers",
                               "ViTForImageClassification", _seeded(build_vit), _image(sizes),
                               ["logits"], vit_config, attention))
    return specs


def _full_torchvision(name: str) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        import torchvision

        return getattr(torchvision.models, FULL_TORCHVISION[name][0])(weights=None)

    return build


def all_specs(full: bool = False) -> list[ModelSpec]:
    """Every model the script exports, torchvision ones first; ``full``: at real sizes."""
    sizes = FULL if full else SMALL
    specs = []
    for name, arch, build in TORCHVISION:
        if full:
            arch, build = FULL_TORCHVISION[name][1], _full_torchvision(name)
        specs.append(ModelSpec(name, "torchvision", arch, _seeded(build), _image(sizes, "input"),
                               ["logits"]))
    return specs + transformers_specs(sizes, full)


#: The dynamic dims of each input name a model of :data:`DYNAMIC` takes.
_DYNAMIC_DIMS: dict[str, dict[int, str]] = {
    "input": {0: "batch"}, "pixel_values": {0: "batch"}, "input_features": {0: "batch"},
    "input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
}


def dynamic_specs() -> list[ModelSpec]:
    """The models of :data:`DYNAMIC`, small, with dynamic batch and sequence dims."""
    specs = [s for s in all_specs()[:len(TORCHVISION)] + transformers_specs(SMALL, dynamic=True)
             if s.name in DYNAMIC]
    for spec in specs:
        for i in spec.inputs:
            i.dynamic = dict(_DYNAMIC_DIMS[i.name])
    return specs


# -- export and check ------------------------------------------------------------------------


def _torch_inputs(spec: ModelSpec, seed: int, sizes: dict[str, int] | None = None,
                  ) -> tuple[list[np.ndarray], tuple[torch.Tensor, ...]]:
    """Seeded inputs at the export size, or with the dynamic dims set by ``sizes``."""
    rng = np.random.default_rng(seed)
    specs = spec.inputs
    if sizes:
        specs = [InputSpec(i.name, tuple(sizes.get(i.dynamic.get(k, ""), d)
                                         for k, d in enumerate(i.shape)),
                           i.dtype, i.kind, i.high) for i in specs]
    arrays = [i.sample(rng) for i in specs]
    return arrays, tuple(torch.from_numpy(a) for a in arrays)


def _diff_symbolic(g: Any, self: Any, n: Any, dim: Any, prepend: Any, append: Any) -> Any:
    """``torch.diff`` for the TorchScript exporter: first differences along ``dim`` of
    ``prepend`` and ``self`` concatenated (``n`` 1, no ``append``: what transformers uses)."""
    from torch.onnx import symbolic_helper as sh

    order = sh._get_const(n, "i", "n")
    axis = sh._get_const(dim, "i", "dim")
    if order != 1 or not sh._is_none(append):
        return sh._unimplemented("aten::diff", "n != 1 or append given")
    x = self if sh._is_none(prepend) else g.op("Concat", prepend, self, axis_i=axis)

    def piece(start: int, end: int) -> Any:
        def const(v: int) -> Any:
            return g.op("Constant", value_t=torch.tensor([v], dtype=torch.int64))

        return g.op("Slice", x, const(start), const(end), const(axis))

    return g.op("Sub", piece(1, sys.maxsize), piece(0, -1))


def _cumsum_symbolic(g: Any, self: Any, dim: Any, dtype: Any) -> Any:
    """``torch.cumsum`` for the TorchScript exporter, which writes ``CumSum`` of a bool tensor
    as it is (ONNX's CumSum takes numbers only; torch sums bools as int64)."""
    from torch.onnx import symbolic_helper as sh
    from torch.onnx._internal.torchscript_exporter import _type_utils

    axis = g.op("Constant", value_t=torch.tensor(sh._get_const(dim, "i", "dim")))
    if not sh._is_none(dtype):
        to = _type_utils.JitScalarType(sh._get_const(dtype, "i", "dtype")).onnx_type()
        self = g.op("Cast", self, to_i=to)
    elif sh._is_bool(self):
        self = g.op("Cast", self, to_i=onnx.TensorProto.INT64)
    return g.op("CumSum", self, axis)


def export(model: torch.nn.Module, args: tuple[torch.Tensor, ...], spec: ModelSpec,
           exporter: str, opset: int, path: Path) -> None:
    """Export ``model`` called on ``args`` to ``path``, with the inputs' dynamic dims."""
    names = [i.name for i in spec.inputs]
    dynamic = any(i.dynamic for i in spec.inputs)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            axes = {i.name: i.dynamic for i in spec.inputs if i.dynamic} if dynamic else None
            torch.onnx.export(model, args, str(path), dynamo=False, opset_version=opset,
                              input_names=names, output_names=spec.outputs,
                              do_constant_folding=True, dynamic_axes=axes)
        else:
            shapes = None
            if dynamic:
                from torch.export import Dim

                made: dict[str, Any] = {}
                shapes = tuple({k: made.setdefault(v, Dim(v, min=1, max=256))
                                for k, v in i.dynamic.items()} or None for i in spec.inputs)
                import inspect

                params = inspect.signature(model.forward).parameters.values()
                if any(p.kind is p.VAR_POSITIONAL for p in params):
                    shapes = (shapes,)  # forward(*args): one argument, the tuple
            torch.onnx.export(model, args, str(path), dynamo=True, opset_version=opset,
                              input_names=names, output_names=spec.outputs,
                              external_data=False, verbose=False, optimize=True,
                              dynamic_shapes=shapes)


def _strip(path: Path) -> onnx.ModelProto:
    """The exported model without doc strings and metadata (the dynamo exporter writes each
    node's source location and module path, which differ between machines and make up most
    of a small file)."""
    model = onnx.load(str(path))
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        graph.doc_string = ""
        del graph.metadata_props[:]
        for item in list(graph.initializer) + list(graph.value_info) + list(graph.input) \
                + list(graph.output):
            del item.metadata_props[:]
        for node in graph.node:
            node.doc_string = ""
            del node.metadata_props[:]
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    graphs.append(attr.g)
                graphs.extend(attr.graphs)
    for fn in model.functions:
        for node in fn.node:
            node.doc_string = ""
            del node.metadata_props[:]
    model.doc_string = ""
    del model.metadata_props[:]
    onnx.save(model, str(path))
    return model


def _ops(model: onnx.ModelProto) -> list[str]:
    ops: set[str] = set()
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            default = node.domain in ("", "ai.onnx")
            ops.add(node.op_type if default else f"{node.domain}.{node.op_type}")
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    graphs.append(attr.g)
                graphs.extend(attr.graphs)
    for fn in model.functions:
        ops.update(n.op_type for n in fn.node)
    return sorted(ops)


def _onnxruntime(path: Path, names: list[str], arrays: list[np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(names, arrays, strict=True)))


def _short(exc: BaseException) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", f"{type(exc).__name__}: {exc}").strip()
    # the dynamo exporter's message is pages of advice; the cause follows its summary heading
    _, summary, cause = text.partition("## Exception summary")
    if summary:
        text = f"{type(exc).__name__}: {cause.strip()}"
    # the first lines say what failed
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[:3])[:500]


def make(spec: ModelSpec, exporter: str, opset: int, out: Path = HERE,
         max_bytes: int | None = MAX_BYTES) -> dict[str, Any]:
    """Export one model with one exporter into ``out``; the manifest entry (``error`` set on
    failure, or when the file has ``max_bytes`` or more)."""
    file = f"{spec.name}.{exporter}{opset}.onnx"
    path = out / file
    entry: dict[str, Any] = {
        "file": file, "name": spec.name, "source": spec.source, "arch": spec.arch,
        "exporter": exporter, "opset": opset, "attention": spec.attention,
        "inputs": [i.as_json() for i in spec.inputs], "outputs": spec.outputs,
    }
    if spec.config:
        entry["config"] = spec.config
    if spec.note:
        entry["note"] = spec.note
    start = time.perf_counter()
    try:
        model = spec.build()
        arrays, args = _torch_inputs(spec, seed=0)
        with torch.no_grad():
            expected = model(*args)
        expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
        export(model, args, spec, exporter, opset, path)
        proto = _strip(path)
        got = _onnxruntime(path, [i.name for i in spec.inputs], arrays)
        if any(i.dynamic for i in spec.inputs):  # and at another size
            batch, seq = DYNAMIC_CHECK
            arrays, args = _torch_inputs(spec, seed=1, sizes={"batch": batch, "seq": seq})
            with torch.no_grad():
                more = model(*args)
            expected += [more] if isinstance(more, torch.Tensor) else list(more)
            got += _onnxruntime(path, [i.name for i in spec.inputs], arrays)
        errors = [float(np.max(np.abs(g - e.numpy()))) for g, e in zip(got, expected, strict=True)]
        scales = [float(np.max(np.abs(e.numpy()))) for e in expected]
    except Exception as exc:  # noqa: BLE001 - a failing export is recorded, not fatal
        path.unlink(missing_ok=True)
        entry["error"] = _short(exc)
        if "--traceback" in sys.argv:
            traceback.print_exc()
        return entry
    size = path.stat().st_size
    entry.update({
        "bytes": size, "nodes": len(proto.graph.node), "ops": _ops(proto),
        "ort_vs_torch_max_abs_error": max(errors), "output_max_abs": max(scales),
        "seconds": round(time.perf_counter() - start, 2),
    })
    if max_bytes is not None and size >= max_bytes:
        path.unlink()
        entry["error"] = f"file of {size} bytes, over the 1 MB limit: make the config smaller"
    elif max(e / max(s, 1e-6) for e, s in zip(errors, scales, strict=True)) > 1e-3:
        entry["error"] = (f"onnxruntime differs from torch by {max(errors):.3g} (outputs up to "
                          f"{max(scales):.3g}): the export is wrong")
        path.unlink()
    return entry


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {}
    for dist in ("torch", "torchvision", "transformers", "onnxscript", "onnx", "onnxruntime"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def main(argv: list[str] | None = None) -> int:
    """The command line: export the models (or those ``--only`` matches), write the manifest."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="regex: export only the models it matches")
    parser.add_argument("--traceback", action="store_true",
                        help="print failing exports' tracebacks")
    parser.add_argument("--size", choices=("small", "full", "dynamic"), default="small",
                        help="small: the committed test models; full: real sizes (needs "
                             "--out); dynamic: the models of DYNAMIC with dynamic batch and "
                             "sequence dims, into models/dynamic/")
    parser.add_argument("--out", type=Path, help="folder for --size full (never the repo's)")
    args = parser.parse_args(argv)
    full = args.size == "full"
    if full and args.out is None:
        parser.error("--size full needs --out DIR: full-size models are not committed")
    out = args.out.resolve() if full else HERE / "dynamic" if args.size == "dynamic" else HERE
    specs = dynamic_specs() if args.size == "dynamic" else all_specs(full)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST.name
    torch.set_num_threads(1)
    torch.onnx.register_custom_op_symbolic("aten::diff", _diff_symbolic, 9)
    torch.onnx.register_custom_op_symbolic("aten::cumsum", _cumsum_symbolic, 11)
    pattern = re.compile(args.only) if args.only else None
    old: dict[str, Any] = (json.loads(manifest_path.read_text()) if manifest_path.is_file()
                           else {})
    entries = {(e["name"], e["exporter"]): e for e in old.get("models", []) + old.get("failed", [])}
    made = 0
    for spec in specs:
        if pattern is not None and not pattern.search(spec.name):
            continue
        for exporter, opset in EXPORTERS:
            entry = make(spec, exporter, opset, out, None if full else MAX_BYTES)
            entries[(spec.name, exporter)] = entry
            made += 1
            status = entry.get("error") or f"{entry['bytes']} bytes, {entry['nodes']} nodes"
            print(f"{entry['file']}: {status}", flush=True)
    order = {(s.name, e): i for i, (s, e) in enumerate((s, e) for s in specs
                                                        for e, _ in EXPORTERS)}
    ordered = sorted(entries.values(), key=lambda e: order.get((e["name"], e["exporter"]), 1 << 30))
    manifest = {
        "about": f"Test models of irpass-onnx, made by make_models.py --size {args.size}; "
                 "see its docstring.",
        "versions": _versions(),
        "models": [e for e in ordered if "error" not in e],
        "failed": [e for e in ordered if "error" in e],
    }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{made} export(s); {len(manifest['models'])} model(s) in {manifest_path}, "
          f"{len(manifest['failed'])} failed export(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
