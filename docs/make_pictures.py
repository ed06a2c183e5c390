"""Write the README's pictures: docs/*.png, drawn by irpass.viz.

    python docs/make_pictures.py

Needs Graphviz (``pip install 'irpass[viz]'`` and the ``dot`` program) and, for the
transformer, the ONNX pack (``contrib/irpass-onnx``). Each model is drawn as loaded
and after the -O3 pipeline:

* ``resnet.png`` / ``resnet_O3.png``: the ResNet-style example
  (``irpass.testing.models.resnet``, ``irpass show --example resnet``);
* ``bert_block.png`` / ``bert_block_O3.png``: a tiny BERT export
  (``contrib/irpass-onnx/models/hf_bert_eager_nomask.dynamo18.onnx``, 2 layers): the
  second layer repeats the first, so the picture is one transformer block and a box
  for the other.
"""

from __future__ import annotations

from pathlib import Path

import irpass
from irpass import viz
from irpass.ir import IRModule
from irpass.testing.models import resnet
from irpass.transform import PassContext, default_pipeline

DOCS = Path(__file__).resolve().parent
BERT = DOCS.parent / "contrib" / "irpass-onnx" / "models" / "hf_bert_eager_nomask.dynamo18.onnx"


def optimized(mod: IRModule) -> IRModule:
    """``mod`` after the default pipeline at -O3."""
    with PassContext(opt_level=3):
        return default_pipeline(3)(mod)


def main() -> None:
    """Draw each model before and after -O3 into docs/."""
    models = {"resnet": resnet(), "bert_block": irpass.load(BERT)}
    for name, mod in models.items():
        for suffix, version in (("", mod), ("_O3", optimized(mod))):
            path = viz.write(version, DOCS / f"{name}{suffix}.png")
            print(f"wrote {path.relative_to(DOCS.parent)} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
