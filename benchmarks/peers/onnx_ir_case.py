"""onnx_ir: an ONNX ``ModelProto`` (opset 21, made with ``onnx.helper``) read into an
``onnx_ir.Model`` (the build), W1 with onnxscript's constant folder
(``onnxscript.optimizer.fold_constants``), W2 with
``onnx_ir.passes.common.CommonSubexpressionEliminationPass``, W3 with
``RemoveUnusedNodesPass``; W4 an ``onnx_ir.passes.Sequential`` of trivial passes
(onnx_ir has no pass instrument)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import onnx
import onnx_ir as ir
from onnx import TensorProto, helper, numpy_helper
from onnx_ir.passes.common import CommonSubexpressionEliminationPass, RemoveUnusedNodesPass

NAME = "onnx_ir"
DIST = "onnx-ir"

SHAPE = [4, 4]


def build(workload: str, n: int) -> ir.Model:
    """W1-W3 as a ModelProto, deserialized into an onnx_ir Model. W1's constants
    are ``Constant`` nodes; W3's tanh is an extra node whose output nobody reads."""
    rng = np.random.default_rng(1)
    nodes: list[onnx.NodeProto] = []
    cur = "x"
    for i in range(n):
        if workload == "W1":
            for name, lo in ((f"a{i}", 0.5), (f"b{i}", 0.0)):
                value = rng.uniform(lo, lo + 0.5, SHAPE).astype(np.float32)
                nodes.append(
                    helper.make_node(
                        "Constant", [], [name], value=numpy_helper.from_array(value, name)
                    )
                )
            nodes.append(helper.make_node("Add", [f"a{i}", f"b{i}"], [f"c{i}"]))
            nodes.append(helper.make_node("Mul", [cur, f"c{i}"], [f"m{i}"]))
            cur = f"m{i}"
        elif workload == "W2":
            nodes.append(helper.make_node("Exp", [cur], [f"e{i}"]))
            nodes.append(helper.make_node("Exp", [cur], [f"f{i}"]))
            nodes.append(helper.make_node("Add", [f"e{i}", f"f{i}"], [f"s{i}"]))
            cur = f"s{i}"
        else:
            nodes.append(helper.make_node("Tanh", [cur], [f"d{i}"]))  # never used
            nodes.append(helper.make_node("Add", [cur, cur], [f"s{i}"]))
            nodes.append(helper.make_node("Relu", [f"s{i}"], [f"r{i}"]))
            cur = f"r{i}"
    graph = helper.make_graph(
        nodes,
        workload,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info(cur, TensorProto.FLOAT, SHAPE)],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    return ir.serde.deserialize_model(proto)


def run(workload: str, model: ir.Model) -> ir.Model:
    """The workload's pass (in place for the onnx_ir passes)."""
    if workload == "W1":
        from onnxscript.optimizer import fold_constants

        fold_constants(model)
        return model
    if workload == "W2":
        return CommonSubexpressionEliminationPass()(model).model
    return RemoveUnusedNodesPass()(model).model


_NAMES = {"Add": "add", "Mul": "multiply", "Exp": "exp", "Tanh": "tanh", "Relu": "relu"}


def counts(workload: str, model: ir.Model) -> Counter[str]:
    """Nodes of the main graph by the workload's op names."""
    found: Counter[str] = Counter()
    for node in model.graph:
        if node.op_type in _NAMES:
            found[_NAMES[node.op_type]] += 1
    if workload == "W1":
        found["multiply by a constant"] = sum(
            1
            for node in model.graph
            if node.op_type == "Mul"
            and any(
                v is not None
                and (
                    v.const_value is not None
                    or (v.producer() is not None and v.producer().op_type == "Constant")
                )
                for v in node.inputs
            )
        )
    return found


def w4(n_passes: int, instrumented: bool) -> Callable[[], object] | None:
    """One run of an ``onnx_ir.passes.Sequential`` of ``n_passes`` trivial passes."""
    if instrumented:
        return None
    model = build("W2", 1)

    class Trivial(ir.passes.InPlacePass):
        def call(self, model: ir.Model) -> ir.passes.PassResult:
            return ir.passes.PassResult(model, modified=False)

    pipeline = ir.passes.Sequential(*[Trivial() for _ in range(n_passes)])

    def once() -> object:
        return pipeline(model)

    return once
