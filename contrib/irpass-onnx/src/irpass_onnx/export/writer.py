"""From the lowered (and peephole-rewritten) graph to a ``ModelProto``.

Only what the outputs need is emitted: the walk starts at the outputs and goes up through the
node inputs with an explicit stack, so a node that a peephole made dead never reaches ONNX.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import onnx
from onnx import helper

from ..dtypes import onnx_type_of
from ..errors import OnnxExportError
from .builder import EMITTERS, EmitContext, GraphBuilder, live_nodes, make_node_protos
from .graph import Const, Input, Item, Lowered, Node

__all__ = ["check_supported", "write_model"]

PRODUCER = "irpass-onnx"


def check_supported(lowered: Lowered, opset: int) -> None:
    """One error listing every op without an emitter, with counts."""
    missing = Counter(n.op for n in lowered.nodes if n.op not in EMITTERS)
    if missing:
        listing = ", ".join(f"{op} ({k})" for op, k in sorted(missing.items()))
        raise OnnxExportError(
            f"cannot export to ONNX (opset {opset}): no exporter for {len(missing)} op(s): "
            f"{listing}"
        )


def resolve(v: Any) -> Any:
    """``v`` with peephole aliases followed."""
    while (type(v) is Node or type(v) is Item) and v.alias is not None:
        v = v.alias
    return v


def write_model(lowered: Lowered, opset: int, output_names: list[str] | None,
                graph_name: str) -> onnx.ModelProto:
    """Emit every node the outputs need and assemble the model."""
    n_out = len(lowered.outputs)
    input_names = [i.name for i in lowered.inputs]
    if len(set(input_names)) != len(input_names):
        dup = sorted({n for n in input_names if input_names.count(n) > 1})
        raise OnnxExportError(f"@main has several parameters named {', '.join(dup)}; ONNX "
                              "graph inputs need unique names")
    wanted = _output_names(output_names, n_out, set(input_names))
    builder = GraphBuilder(opset, input_names + wanted)
    names: dict[int, str] = {}
    keep: list[Any] = []  # values named in ``names`` stay alive so their ids stay unique

    def name_of(v: Any) -> str:
        v = resolve(v)
        got = names.get(id(v))
        if got is not None:
            return got
        t = type(v)
        if t is Const:
            got = builder.constant(v.data, "const", key=id(v))
        elif t is Input:
            got = v.name
        else:  # pragma: no cover - the walk emits producers first
            raise AssertionError(f"value {v!r} used before it was emitted")
        names[id(v)] = got
        keep.append(v)
        return got

    _emit_all(lowered, builder, names, keep, name_of)
    out_values = [name_of(v) if type(resolve(v)) in (Const, Input) else names[id(resolve(v))]
                  for v in lowered.outputs]
    return _assemble(lowered, builder, out_values, wanted, graph_name)


def _output_names(given: list[str] | None, n: int, taken: set[str]) -> list[str]:
    names: list[str] = []
    ok = (given is not None and len(given) == n and all(isinstance(g, str) and g for g in given)
          and len(set(given)) == n)
    for i in range(n):
        name = given[i] if ok and given is not None else f"output_{i}"
        if name in taken or name in names:
            name = f"output_{i}"
            k = 0
            while name in taken or name in names:
                k += 1
                name = f"output_{i}_{k}"
        names.append(name)
    return names


def _emit_all(lowered: Lowered, builder: GraphBuilder, names: dict[int, str], keep: list,
              name_of: Any) -> None:
    done: set[int] = set()
    seen: set[int] = set()
    tuple_outs: dict[int, list[str]] = {}
    stack: list[tuple[Any, bool]] = [(v, False) for v in reversed(lowered.outputs)]
    while stack:
        v, ready = stack.pop()
        v = resolve(v)
        t = type(v)
        if t is Item:
            if ready:
                names[id(v)] = tuple_outs[id(v.node)][v.index]
                keep.append(v)
            elif id(v) not in names:
                stack.append((v, True))
                stack.append((v.node, False))
            continue
        if t is tuple:
            stack.extend((f, False) for f in v)
            continue
        if t is not Node or id(v) in done:
            continue
        if not ready:
            if id(v) in seen:  # in progress below on the stack: a DAG has no cycle back
                continue
            seen.add(id(v))
            stack.append((v, True))
            for a in v.inputs:
                if type(a) is tuple:
                    stack.extend((f, False) for f in a)
                else:
                    stack.append((a, False))
            continue
        if id(v) in done:
            continue
        done.add(id(v))
        out = EMITTERS[v.op](EmitContext(builder, v, name_of))
        if isinstance(out, list):
            tuple_outs[id(v)] = out
        else:
            names[id(v)] = out
        keep.append(v)


def _assemble(lowered: Lowered, builder: GraphBuilder, produced: list[str], wanted: list[str],
              graph_name: str) -> onnx.ModelProto:
    builder.nodes = live_nodes(builder.nodes, produced)
    used = {n for rec in builder.nodes for n in rec[1]} | set(produced)
    builder.initializers = [t for t in builder.initializers if t.name in used]
    rename: dict[str, str] = {}
    node_made = {o for rec in builder.nodes for o in rec[2]}
    graph_inputs = set(i.name for i in lowered.inputs)
    for src, dst in zip(produced, wanted, strict=True):
        if src in node_made and src not in rename and src not in graph_inputs:
            rename[src] = dst
        else:
            # an input, an initializer or a value already given another output name
            builder.nodes.append(["Identity", [src], [dst], {}])
    outputs = []
    for v, name in zip(lowered.outputs, wanted, strict=True):
        ty = resolve(v).type
        outputs.append(helper.make_tensor_value_info(
            name, onnx_type_of(ty.dtype, f"output {name}"), list(ty.shape)))
    inputs = [helper.make_tensor_value_info(i.name, onnx_type_of(i.type.dtype, i.name),
                                            list(i.type.shape)) for i in lowered.inputs]
    graph = helper.make_graph(make_node_protos(builder.nodes, rename), graph_name, inputs,
                              outputs, initializer=builder.initializers)
    opsets = [helper.make_opsetid("", builder.opset)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name=PRODUCER,
                              ir_version=helper.find_min_ir_version_for(opsets))
    return model
