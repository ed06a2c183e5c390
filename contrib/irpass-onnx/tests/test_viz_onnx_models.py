"""irpass.viz on real networks: ResNet-50 and a BERT export give pictures a person can read
(their repeated blocks collapsed), as loaded and after -O3."""

from __future__ import annotations

from pathlib import Path

import irpass
import pytest
from irpass import viz
from irpass.transform import PassContext, default_pipeline
from irpass_onnx.testing import light_model

BERT = Path(__file__).resolve().parents[1] / "models" / "hf_bert_eager_mask.dynamo18.onnx"


def _o3(mod):
    with PassContext(opt_level=3):
        return default_pipeline(3)(mod)


@pytest.fixture(scope="module")
def resnet50():
    try:
        return irpass.load(light_model("resnet50").path)
    except LookupError as err:  # the installed onnx ships its light models
        pytest.fail(str(err))


def test_resnet50_stages_collapse_to_one_bottleneck_each(resnet50) -> None:
    # stages of 3, 4, 6, 3 bottlenecks: a projection block, then 2, 3, 5, 2 alike
    for mod, size in ((resnet50, 13), (_o3(resnet50), 23)):
        graph = viz.build_graph(mod, max_nodes=None)
        assert graph.collapsed == [f"{k} \u00d7 a {size}-node block" for k in (2, 3, 5, 2)]
        assert len(graph.boxes) < graph.ir_nodes / 2
        labels = [c.label for c in graph.clusters]
        assert [x for x in labels if x.startswith("block 1")] == [
            "block 1 of 2",
            "block 1 of 3",
            "block 1 of 5",
            "block 1 of 2",
        ]


def test_bert_layers_collapse_and_the_mask_is_drawn_once_outside_them() -> None:
    mod = irpass.load(BERT)
    for version in (mod, _o3(mod)):
        graph = viz.build_graph(version, max_nodes=None)
        assert len(graph.collapsed) == 1 and graph.collapsed[0].startswith("2 \u00d7 a ")
    graph = viz.build_graph(mod, max_nodes=None)
    clusters = {c.id: c.label for c in graph.clusters}
    where = {b.title: clusters.get(b.cluster) for b in graph.boxes}
    assert where["logical_and"] == where["where"] == "@main"  # the mask: before the layers
    assert where["nn.softmax"] == "block 1 of 2"
