"""The importer on corrupted models with subgraphs (If branches, Loop and Scan bodies,
SequenceMap) and sequences: every failure is one :class:`OnnxImportError` naming the file and
where (for a subgraph: the node holding it and the attribute), never another exception; a
corrupted model that still imports gives a well-formed module that type-checks.

The corruptions are those of ``test_onnx_import_fuzz.py``, applied to the main graph or to a
subgraph picked at random, plus changes of the subgraphs' own interface (inputs, outputs, the
graph attribute itself). ``python test_onnx_import_control_fuzz.py N [SEED]`` runs N models per
base model.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import test_onnx_import_fuzz as fuzz
from irpass_onnx import OnnxImportError, load_onnx
from onnx import AttributeProto, ModelProto, TensorProto, helper, numpy_helper
from test_onnx_import_fuzz import Corrupter, _write, check_import

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
#: Corrupted models per base model in the test.
CASES = fuzz.CASES  # corruption_outcomes runs that many seeds
node = helper.make_node


def _vi(name, elem=F, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes, inputs, outputs, inits, opset=17) -> ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs,
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _loop_body(scan: bool) -> onnx.GraphProto:
    nodes = [node("Cast", ["i"], ["fi"], to=F, name="cast"),
             node("Mul", ["x", "fi"], ["d"], name="mul"),
             node("Add", ["v_in", "d"], ["v_out"], name="add"),
             node("ReduceMax", ["v_out"], ["top"], keepdims=0, name="max"),
             # a scan output needs a loop its condition cannot end early
             node("Identity", ["c_in"], ["c_out"], name="pass") if scan else
             node("Less", ["top", "limit"], ["c_out"], name="less")]
    outs = [_vi("c_out", B, []), _vi("v_out", F, [3])]
    if scan:
        nodes.append(node("Neg", ["v_out"], ["row"], name="neg"))
        outs.append(_vi("row", F, [3]))
    return helper.make_graph(nodes, "body", [_vi("i", I64, []), _vi("c_in", B, []),
                                             _vi("v_in", F, [3])], outs,
                             [numpy_helper.from_array(np.float32(1e9), "limit")])


def control_net() -> ModelProto:
    """If reading the enclosing graph, a short Loop with a scan output (unrolled), a long
    while-Loop (a recursive function), a Scan."""
    then = helper.make_graph([node("Relu", ["x"], ["t"], name="relu")], "then", [],
                             [_vi("t", F, [3])])
    other = helper.make_graph([node("Neg", ["x"], ["e"], name="neg")], "else", [],
                              [_vi("e", F, [3])])
    scan_body = helper.make_graph(
        [node("Add", ["s_in", "r"], ["s_out"], name="acc"), node("Identity", ["s_out"], ["o"])],
        "scan_body", [_vi("s_in", F, [3]), _vi("r", F, [3])],
        [_vi("s_out", F, [3]), _vi("o", F, [3])])
    nodes = [
        node("If", ["c"], ["picked"], then_branch=then, else_branch=other, name="if"),
        node("Loop", ["three", "yes", "picked"], ["v", "rows"], body=_loop_body(True),
             name="short"),
        node("Loop", ["many", "yes", "v"], ["w"], body=_loop_body(False), name="long"),
        node("Scan", ["w", "rows"], ["s", "acc"], body=scan_body, num_scan_inputs=1,
             name="scan"),
        node("Add", ["s", "w"], ["y"], name="sum"),
    ]
    inits = {"three": np.int64(3), "many": np.int64(500), "yes": np.array(True)}
    return _model(nodes, [_vi("c", B, []), _vi("x", F, [3])], [_vi("y", F, [3]),
                                                                 _vi("acc", F, [3, 3])], inits)


def sequence_net() -> ModelProto:
    """SplitToSequence, SequenceInsert/Erase/At/Length, SequenceMap, ConcatFromSequence and
    optionals."""
    body = helper.make_graph([node("ReduceSum", ["t"], ["r"], keepdims=1, name="sum")], "map",
                             [_vi("t", F, None)], [_vi("r", F, None)])
    nodes = [
        node("SplitToSequence", ["x", "split"], ["parts"], axis=0, name="split"),
        node("SequenceInsert", ["parts", "x", "zero"], ["more"], name="insert"),
        node("SequenceErase", ["more", "one"], ["fewer"], name="erase"),
        node("SequenceMap", ["fewer"], ["sums"], body=body, name="map"),
        node("ConcatFromSequence", ["sums"], ["cat"], axis=0, name="concat"),
        node("SequenceAt", ["fewer", "one"], ["second"], name="at"),
        node("SequenceLength", ["fewer"], ["n"], name="length"),
        node("Optional", ["second"], ["opt"], name="optional"),
        node("OptionalGetElement", ["opt"], ["got"], name="get"),
    ]
    inits = {"split": np.array([1, 3], np.int64), "zero": np.int64(0), "one": np.int64(1)}
    return _model(nodes, [_vi("x", F, [4, 2])], [_vi("cat", F, None), _vi("got", F, None),
                                                 _vi("n", I64, None)], inits, opset=18)


BASES = {"control_net": control_net, "sequence_net": sequence_net}


def _graphs(model: ModelProto) -> list[onnx.GraphProto]:
    """The main graph and every subgraph nested in it."""
    out, stack = [], [model.graph]
    while stack:
        g = stack.pop()
        out.append(g)
        for nd in g.node:
            for a in nd.attribute:
                if a.type == AttributeProto.GRAPH:
                    stack.append(a.g)
    return out


class SubgraphCorrupter(Corrupter):
    """:class:`Corrupter`'s changes applied to a random graph of the model, and changes of the
    subgraphs' interfaces."""

    def subgraph_io(self) -> None:
        subs = _graphs(self.model)[1:]
        g = self.pick(subs)
        if g is None:
            return
        choice = self.rng.random()
        if choice < 0.25 and len(g.input):
            g.input.pop()
        elif choice < 0.45:
            g.input.add().CopyFrom(_vi("extra", F, [3]))
        elif choice < 0.65 and len(g.output):
            g.output.pop()
        elif choice < 0.8 and len(g.output):
            g.output[0].name = "undefined_value"
        else:
            g.output.add().CopyFrom(g.output[0] if len(g.output) else _vi("z"))

    def graph_attribute(self) -> None:
        holders = [(nd, a) for g in _graphs(self.model) for nd in g.node for a in nd.attribute
                   if a.type == AttributeProto.GRAPH]
        if not holders:
            return
        nd, a = holders[int(self.rng.integers(len(holders)))]
        choice = self.rng.random()
        if choice < 0.4:
            nd.attribute.remove(a)
        elif choice < 0.7:
            a.type = AttributeProto.INT
        else:
            del a.g.node[:]

    KINDS = Corrupter.KINDS + ("subgraph_io", "graph_attribute")

    def corrupt(self, count: int) -> list[str]:
        done = []
        for _ in range(count):
            kind = self.pick(self.KINDS)
            self.graph = self.pick(_graphs(self.model))
            getattr(self, kind)()
            done.append(kind)
        return done


def corrupted(base: ModelProto, seed: int) -> tuple[bytes, list[str]]:
    """The serialized bytes of a seeded corruption of ``base`` reaching into its subgraphs."""
    return fuzz.corrupted(base, seed, SubgraphCorrupter)


@pytest.mark.parametrize("name", list(BASES))
def test_corrupted_models_with_subgraphs_fail_with_one_import_error(name, tmp_path):
    outcomes = fuzz.corruption_outcomes(name, BASES[name](), tmp_path, SubgraphCorrupter)
    assert outcomes["refused"] >= CASES // 2, outcomes


def test_an_error_inside_a_subgraph_names_the_node_holding_it(tmp_path):
    model = control_net()
    body = model.graph.node[2].attribute[0].g  # the long loop's body
    body.node[1].input[0] = "nowhere"
    path = _write(tmp_path / "bad.onnx", model.SerializeToString())
    with pytest.raises(OnnxImportError) as info:
        load_onnx(path)
    message = str(info.value)
    assert message.startswith(f"{path}: node 2 'long' (Loop): body: node 1 'mul' (Mul): "
                              "input 0 'nowhere' is not defined"), message


if __name__ == "__main__":  # a longer run: python test_onnx_import_control_fuzz.py N [SEED]
    import tempfile
    from collections import Counter

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in BASES.items():
            base = make()
            results: Counter[str] = Counter()
            for seed in range(first, first + count):
                data, kinds = corrupted(base, seed)
                path = _write(Path(tmp) / f"{name}_{seed}.onnx", data)
                try:
                    results[check_import(path)] += 1
                except Exception as exc:  # noqa: BLE001
                    print(f"--- {name} seed {seed} {kinds}: {type(exc).__name__}: "
                          f"{str(exc)[:300]}")
                    results["escaped"] += 1
            print(name, dict(results))
