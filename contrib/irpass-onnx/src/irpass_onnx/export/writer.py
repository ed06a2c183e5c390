"""From the lowered (and peephole-rewritten) graph to a ``ModelProto`` and to files.

Only what the outputs need is emitted: the walk starts at the outputs and goes up through the
node inputs with an explicit stack, so a node that a peephole made dead never reaches ONNX.
A control node (see :mod:`.graph`) is written by its emitter (:mod:`.emitters_control`), which
has each of its subgraphs written the same way into a ``GraphProto`` of its own (after that
subgraph's peepholes): names are shared by all graphs, so a subgraph reads a value of an
enclosing graph by the name it was given there.

The result is an :class:`Exported`: the model without its tensor data, and the data as
arrays. :meth:`Exported.model_proto` puts the data into the model;
:meth:`Exported.save` writes the model to a file, with the big tensors in an external data
file beside it (``<file>.data``) when the model would exceed a size (by default protobuf's
2 GiB limit, which no single-file ONNX model can pass).

Before that, ONNX's type and shape inference runs once over the model without its data
(:func:`check_types`): a node taking a type its schema lacks at the export opset (a dynamic
node written as it was imported at a newer opset, say) is an ``OnnxExportError`` here rather
than a model that onnxruntime or the checker refuses later.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import onnx
from google.protobuf.message import EncodeError
from irpass.formats import atomic_path
from irpass.ir.dims import SizeVar
from irpass.ir.types import TensorType, TupleType, Type, numpy_dtype
from onnx import TensorProto, helper, numpy_helper

from ..dtypes import onnx_type_of
from ..errors import OnnxExportError
from .builder import (
    CONTROL_EMITTERS,
    EMITTERS,
    EmitContext,
    GraphBuilder,
    add_node_protos,
    elem_type,
    live_nodes,
    reads,
)
from .fusion import fuse
from .graph import Const, Input, Item, Lowered, Node, all_graphs

__all__ = ["check_supported", "write_model", "Exported", "external_data_path", "PROTOBUF_LIMIT",
           "EXTERNAL_MIN_BYTES"]

PRODUCER = "irpass-onnx"

#: The largest message protobuf serializes (2 GiB - 1): a bigger model needs external data.
PROTOBUF_LIMIT = 2**31 - 1
#: With external data, tensors smaller than this stay in the model (shapes, axes, scalars:
#: what tools read to understand the graph), as ``onnx``'s own converter does.
EXTERNAL_MIN_BYTES = 1024
# Offsets of external tensors are multiples of this (a page), so a runtime can map a tensor
# straight from the file.
_ALIGN = 4096
# Element types whose raw data packs several elements a byte (onnx's numpy_helper packs them).
_PACKED = frozenset({"INT4", "UINT4", "INT2", "UINT2", "FLOAT4E2M1", "FLOAT6E2M3",
                     "FLOAT6E3M2"})


def check_supported(lowered: Lowered, opset: int) -> None:
    """One error listing every op without an emitter, with counts (in branches and loop
    bodies too)."""
    missing = Counter(n.op for g in all_graphs(lowered) for n in g.nodes
                      if n.op not in EMITTERS and n.op not in CONTROL_EMITTERS)
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
                graph_name: str) -> Exported:
    """Emit every node the outputs need and assemble the model (its tensors apart)."""
    n_out = len(lowered.outputs)
    input_names = [i.name for i in lowered.inputs]
    if len(set(input_names)) != len(input_names):
        dup = sorted({n for n in input_names if input_names.count(n) > 1})
        raise OnnxExportError(f"@main has several parameters named {', '.join(dup)}; ONNX "
                              "graph inputs need unique names")
    wanted = _output_names(output_names, n_out, set(input_names))
    builder = GraphBuilder(opset, input_names + wanted)
    for i in lowered.inputs:  # where each size variable can be read at run time
        if isinstance(i.type, TensorType):
            for axis, d in enumerate(i.type.shape):
                if isinstance(d, SizeVar):
                    builder.dim_sources.setdefault(d.name, (i.name, axis))
    emission = _Emission(builder)
    emission.emit_all(lowered.outputs)
    out_values = [emission.value_name(v) for v in lowered.outputs]
    return _assemble(lowered, builder, out_values, wanted, graph_name)


def value_info_of(name: str, ty: TensorType, where: str | None = None) -> onnx.ValueInfoProto:
    """The ONNX value info of ``name`` of type ``ty``; a symbolic dim is written as a
    ``dim_param`` of its text (``batch``, ``seq * 2``)."""
    dims = [d if type(d) is int else str(d) for d in ty.shape]
    return helper.make_tensor_value_info(name, onnx_type_of(ty.dtype, where or name), dims)


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


class _Emission:
    """The names given to lowered values, shared by the main graph and its subgraphs: a
    subgraph reads a value of an enclosing graph by the name it got there (emitted first, as
    an input of the control node), and what a subgraph computes is never read outside it."""

    def __init__(self, builder: GraphBuilder) -> None:
        self.builder = builder
        self.names: dict[int, str] = {}
        self.keep: list[Any] = []  # named values stay alive so their ids stay unique
        self.done: set[int] = set()
        self.tuple_outs: dict[int, list[str]] = {}

    def name_of(self, v: Any) -> str:
        """The ONNX name of a lowered value (a constant becomes an initializer)."""
        v = resolve(v)
        names = self.names
        got = names.get(id(v))
        if got is not None:
            return got
        t = type(v)
        if t is Const:
            got = self.builder.constant(v.data, "const", key=id(v))
        elif t is Input:
            got = v.name
        else:  # pragma: no cover - the walk emits producers first
            raise AssertionError(f"value {v!r} used before it was emitted")
        names[id(v)] = got
        self.keep.append(v)
        return got

    def value_name(self, v: Any) -> str:
        """The name of an emitted value (or of a constant or graph input)."""
        r = resolve(v)
        if type(r) in (Const, Input):
            return self.name_of(r)
        return self.names[id(r)]

    def emit_all(self, outputs: list[Any]) -> None:
        """Emit (into ``builder.nodes``) every node ``outputs`` need that has no name yet."""
        builder, names, done, tuple_outs = self.builder, self.names, self.done, self.tuple_outs
        seen: set[int] = set()
        stack: list[tuple[Any, bool]] = [(v, False) for v in reversed(outputs)]
        while stack:
            v, ready = stack.pop()
            v = resolve(v)
            t = type(v)
            if t is Item:
                if ready:
                    names[id(v)] = tuple_outs[id(v.node)][v.index]
                    self.keep.append(v)
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
            done.add(id(v))
            empty = _empty_value(builder, v.type)
            if empty is not None:
                out = empty
            else:
                ctx = EmitContext(builder, v, self.name_of, self.subgraph)
                fn = EMITTERS.get(v.op) or CONTROL_EMITTERS[v.op]
                try:
                    out = fn(ctx)
                except (ValueError, TypeError, ArithmeticError, MemoryError) as err:
                    # what an emitter's numpy work raises (a value too big to compute, say)
                    # is an export error naming the node, as the emitters' own are
                    raise ctx.fail(f"{type(err).__name__}: {err}") from err
            if isinstance(out, list):
                tuple_outs[id(v)] = out
            else:
                names[id(v)] = out
            self.keep.append(v)

    def subgraph(self, sub: Lowered, hint: str,
                 leading: Sequence[tuple[str, TensorType]] = ()) -> onnx.GraphProto:
        """``sub`` (a branch or a loop body) as a ``GraphProto``: inputs ``leading`` (name
        hints and types, e.g. a Loop body's iteration number and condition) then ``sub``'s
        params, its outputs typed. Its peepholes run first, within it."""
        builder = self.builder
        fresh = builder.fresh
        inputs = [(fresh(h), t) for h, t in leading]
        for p in sub.inputs:
            name = fresh(p.hint)
            self.names[id(p)] = name
            self.keep.append(p)
            inputs.append((name, p.type))
        saved = builder.nodes, builder.value_info
        builder.nodes, builder.value_info = [], {}
        try:
            fuse(sub, builder.opset)
            self.emit_all(sub.outputs)
            produced = [self.value_name(v) for v in sub.outputs]
            nodes, declared = builder.nodes, builder.value_info
        finally:
            builder.nodes, builder.value_info = saved
        made = {o for rec in nodes for o in rec[2]}
        names: list[str] = []
        for name in produced:
            # an output computed outside the subgraph, or given twice, goes through an
            # Identity: a subgraph output names a value of the subgraph, once
            if name not in made or name in names:
                alias = fresh(hint + "_out")
                nodes.append(["Identity", [name], [alias], {}])
                name = alias
            names.append(name)
        nodes = live_nodes(nodes, names)
        used = {n for rec in nodes for n in rec[2]}
        graph_inputs = [value_info_of(n, t) for n, t in inputs]
        outputs = [value_info_of(n, resolve(v).type)
                   for n, v in zip(names, sub.outputs, strict=True)]
        value_info = [value_info_of(n, t) for n, t in declared.items()
                      if n in used and n not in names]
        graph = helper.make_graph([], fresh(hint), graph_inputs, outputs, value_info=value_info)
        add_node_protos(graph.node, nodes, {})
        return graph


def _empty_value(builder: GraphBuilder, ty: Type) -> str | list[str] | None:
    """A constant for a result without elements (every field empty for a tuple), else None.

    Such a result is known from its type alone, so it needs no node: this also spares each
    emitter its own corner cases of empty tensors (a ``0`` in a Reshape's shape copies the
    input's dim before opset 14; onnxruntime's kernels differ on empty inputs)."""
    if type(ty) is TensorType:
        if 0 not in ty.shape:
            return None
        return builder.constant(np.zeros(ty.shape, numpy_dtype(ty.dtype)), "empty")
    if type(ty) is TupleType and ty.fields and all(
            type(f) is TensorType and 0 in f.shape for f in ty.fields):
        return [builder.constant(np.zeros(f.shape, numpy_dtype(f.dtype)), "empty")
                for f in ty.fields]
    return None


def _assemble(lowered: Lowered, builder: GraphBuilder, produced: list[str], wanted: list[str],
              graph_name: str) -> Exported:
    builder.nodes = live_nodes(builder.hoisted + builder.nodes, produced)
    used = {n for rec in builder.nodes for n in reads(rec)} | set(produced)
    tensors = [(n, d) for n, d in builder.initializers if n in used]
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
        outputs.append(value_info_of(name, ty, f"output {name}"))
    inputs = [value_info_of(i.name, i.type) for i in lowered.inputs]
    # the graph goes into the model without its tensors: make_graph and make_model copy what
    # they are given, and copying the weights twice took longer than the rest of the export
    declared = {rename.get(n, n): t for n, t in builder.value_info.items() if n in used}
    value_info = [value_info_of(n, t) for n, t in declared.items()
                  if n not in graph_inputs and n not in wanted]
    graph = helper.make_graph([], graph_name, inputs, outputs, value_info=value_info)
    opsets = [helper.make_opsetid("", builder.opset)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name=PRODUCER,
                              ir_version=helper.find_min_ir_version_for(opsets))
    add_node_protos(model.graph.node, builder.nodes, rename)  # in place: no copy
    check_types(model, tensors, builder.opset)
    return Exported(model, tensors)


def check_types(model: onnx.ModelProto, tensors: list[tuple[str, np.ndarray]],
                opset: int) -> None:
    """An export error when a node of ``model`` takes or makes a type its schema at ``opset``
    does not allow, or an output's declared shape differs from the inferred one (an op
    written as it was imported at a newer opset, a dtype an ONNX op lacks).

    ONNX's type and shape inference runs once over the model without its tensor data (the
    initializers become typed graph inputs), so the check costs no copy of the weights."""
    skeleton = onnx.ModelProto()
    skeleton.CopyFrom(model)
    skeleton.graph.input.extend(
        helper.make_tensor_value_info(n, elem_type(d.dtype), d.shape) for n, d in tensors)
    try:
        onnx.shape_inference.infer_shapes(skeleton, check_type=True, strict_mode=True)
    except onnx.shape_inference.InferenceError as err:
        raise OnnxExportError(f"the exported model is not valid at opset {opset}: "
                              f"{str(err).strip()}") from None


def external_data_path(path: str | os.PathLike[str]) -> Path:
    """The external data file :meth:`Exported.save` writes for the model at ``path``."""
    p = Path(path)
    return p.with_name(p.name + ".data")


@dataclass
class Exported:
    """An exported model: ``model`` has every node, input and output but no initializer;
    ``tensors`` are the initializers' ``(name, data)``, in order."""

    model: onnx.ModelProto
    tensors: list[tuple[str, np.ndarray]]

    def model_proto(self) -> onnx.ModelProto:
        """The model with every tensor's data in it (the model object itself)."""
        for name, data in self.tensors:
            tensor = _add_tensor(self.model, name, data)
            tensor.raw_data = _raw_data(data, tensor.data_type)
        self.tensors = []
        return self.model

    def size_estimate(self) -> int:
        """An upper bound of the model's size in one file, in bytes."""
        # per tensor: its data, name and dims, and at most 40 bytes of tags and lengths
        return self.model.ByteSize() + sum(
            d.nbytes + len(n.encode()) + 11 * d.ndim + 40 for n, d in self.tensors)

    def save(self, path: str | os.PathLike[str], external_over: int | None = None) -> None:
        """Write the model to ``path``; its tensors of at least :data:`EXTERNAL_MIN_BYTES` go
        to :func:`external_data_path` when the model in one file would exceed
        ``external_over`` bytes (``None``: :data:`PROTOBUF_LIMIT`; 0: always). Each file is
        written to a temporary file and renamed over its path once both are complete."""
        limit = PROTOBUF_LIMIT if external_over is None else min(external_over, PROTOBUF_LIMIT)
        external = self.size_estimate() > limit
        if external and not any(d.nbytes >= EXTERNAL_MIN_BYTES for _, d in self.tensors):
            external = False  # nothing would go to the side file
        if not external:
            model = self.model_proto()
            with atomic_path(path) as tmp:
                _write_model_file(model, tmp, path)
            return
        data_path = external_data_path(path)
        with atomic_path(data_path) as data_tmp, atomic_path(path) as model_tmp:
            with open(data_tmp, "wb") as f:
                self._write_external(f, data_path.name)
            _write_model_file(self.model, model_tmp, path)

    def _write_external(self, f: BinaryIO, location: str) -> None:
        """Add the tensors to the model, the big ones as references into ``f``."""
        offset = 0
        for name, data in self.tensors:
            tensor = _add_tensor(self.model, name, data)
            raw = _raw_bytes(data, tensor.data_type)
            if raw.nbytes < EXTERNAL_MIN_BYTES:
                tensor.raw_data = _raw_data(data, tensor.data_type)
                continue
            pad = -offset % _ALIGN
            if pad:
                f.write(bytes(pad))
                offset += pad
            f.write(raw.data)  # the array's own buffer: no copy
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (("location", location), ("offset", str(offset)),
                               ("length", str(raw.nbytes))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            offset += raw.nbytes
        self.tensors = []


def _add_tensor(model: onnx.ModelProto, name: str, data: np.ndarray) -> TensorProto:
    """A new initializer of ``model`` with the name, shape and type of ``data`` (no data yet).
    It is made in place: appending a made TensorProto would copy its data."""
    tensor = model.graph.initializer.add()
    tensor.name = name
    tensor.dims.extend(data.shape)
    tensor.data_type = elem_type(data.dtype)
    return tensor


def _raw_data(data: np.ndarray, elem_type: int) -> bytes:
    """The ``raw_data`` of ``data`` as ``bytes``: the very bytes object ``data`` views when it
    is a whole little-endian weight read from a model file (a constant the passes left alone),
    which saves copying each such weight once more (a third of the export's time on BERT-base,
    measured with ``bench_zoo.py --models-dir``)."""
    root = data.base
    while isinstance(root, np.ndarray):
        root = root.base
    if (type(root) is bytes and len(root) == data.nbytes and data.flags.c_contiguous
            and data.dtype.byteorder in "<|" + ("=" if np.little_endian else "")
            and TensorProto.DataType.Name(elem_type) not in _PACKED):
        return root
    return _raw_bytes(data, elem_type).tobytes()


def _raw_bytes(data: np.ndarray, elem_type: int) -> np.ndarray:
    """The ``raw_data`` of ``data`` (little-endian, row-major; packed for the sub-byte types)
    as a 1-D uint8 array: a view of ``data`` itself when it is laid out that way already."""
    if TensorProto.DataType.Name(elem_type) in _PACKED:
        return np.frombuffer(numpy_helper.from_array(data).raw_data, dtype=np.uint8)
    if data.dtype.byteorder == ">" or (data.dtype.byteorder == "=" and not np.little_endian):
        data = data.astype(data.dtype.newbyteorder("<"))
    flat = np.ascontiguousarray(data).reshape(-1)
    return flat.view(np.uint8)


def _write_model_file(model: onnx.ModelProto, tmp: Path, path: str | os.PathLike[str]) -> None:
    """Serialize ``model`` into ``tmp`` (which becomes ``path``, named in errors)."""
    try:
        onnx.save_model(model, os.fspath(tmp))
    except (ValueError, EncodeError) as err:  # protobuf refuses messages over 2 GiB
        raise OnnxExportError(
            f"{os.fspath(path)}: the model does not fit in one file ({err}); save it with "
            "external data (config onnx.external_data)") from err
