"""The ONNX side of the export: unique names, nodes, initializers, and the context emitters get.

Nodes are kept as light records and become ``NodeProto`` only at the end, after the graph
outputs have been renamed to the names the user asked for; initializers are kept as
``(name, array)`` until the writer puts their bytes where they go (into the model, or into an
external data file).

Constant data is written as it is: a 0-d array is a scalar initializer (shape ``[]``), which
``Gather``, ``Size`` and the like need to keep their output rank. A *splat* constant (every
element the same) of more than :data:`SPLAT_MIN_BYTES` becomes one ``ConstantOfShape`` node
instead of an initializer: the importer materializes ``ConstantOfShape`` (and FoldConstant
makes splats of ``full``/``zeros``), so without this a 80 KB model of ``ConstantOfShape``
weights would come back as 100 MB of repeated numbers.

That costs a node per such constant, where onnxsim writes an initializer (light ResNet-50:
123 nodes and 102 MB from onnxsim; 123 computing nodes plus 70 ``ConstantOfShape`` and
0.7 MB here). A user wants both a small file and few nodes; a ``ConstantOfShape`` of a
constant shape holds data rather than computing (runtimes fold it when they load the model),
so the pack counts it with the weights, not with the nodes, when it compares node counts.

Symbolic dims (a model with a dynamic batch or sequence length) are computed at run time
where an operand needs them: :meth:`GraphBuilder.dim` reads a size variable from the shape of
a graph input that has it (``Shape`` with start/end, or ``Shape`` + ``Gather`` before opset 15)
and writes an expression over them as ONNX integer arithmetic, once per dim, at the start of
the main graph (subgraphs read it from there). :meth:`EmitContext.reshape` needs the least of
that: a ``0`` where the target dim is the input's at the same place, one ``-1``, and only the
rest computed; an ``Expand`` target writes ``1`` where the input keeps its dim.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np
import onnx
from irpass.ir import describe
from irpass.ir.dims import SizeVar, dim_terms
from irpass.ir.types import TensorType, Type
from onnx import AttributeProto, TensorProto, defs, helper, numpy_helper

from ..dtypes import onnx_type_of
from ..errors import OnnxExportError
from .graph import Const, Node

__all__ = ["GraphBuilder", "EmitContext", "Emitter", "EMITTERS", "emitter", "CONTROL_EMITTERS",
           "control_emitter", "SPLAT_MIN_BYTES", "splat_value", "elem_type", "type_constraints",
           "reads"]

#: An emitter writes the ONNX nodes for one lowered node; it returns the name of the result,
#: or one name per field for a tuple-typed op.
Emitter = Callable[["EmitContext"], "str | list[str]"]

#: irpass op name -> emitter. Filled by :mod:`.emitters` and :mod:`.emitters_nn`.
EMITTERS: dict[str, Emitter] = {}

#: Emitters of the control nodes the lowering makes (``"if"``, ``"loop"``; not irpass ops, so
#: apart from :data:`EMITTERS`): they write subgraphs with :meth:`EmitContext.subgraph`.
CONTROL_EMITTERS: dict[str, Emitter] = {}

#: A splat constant bigger than this (in bytes) is written as ``ConstantOfShape``; a smaller
#: one stays an initializer. A ``ConstantOfShape`` costs about 100 bytes (the node, its shape
#: initializer, its value attribute), so below 1 KiB the saving is at most a few hundred bytes
#: a constant, while an initializer keeps a Conv's bias or a norm's scale a constant that
#: tools reading weights (and onnxruntime before constant folding) see as such. Above it the
#: saving grows with the constant: a 3x3x512x512 conv weight is 9 MB as an initializer.
SPLAT_MIN_BYTES = 1024

# Scanning a splat candidate in blocks of this many elements: the bool temporary of one block
# is small, and a constant that is not a splat (every real weight) stops at its first block.
_SCAN_BLOCK = 1 << 16


def emitter(*names: str) -> Callable[[Emitter], Emitter]:
    """Register the decorated function as the emitter of the ops ``names``."""

    def deco(fn: Emitter) -> Emitter:
        for n in names:
            EMITTERS[n] = fn
        return fn

    return deco


def control_emitter(name: str) -> Callable[[Emitter], Emitter]:
    """Register the decorated function as the emitter of the control node ``name``."""

    def deco(fn: Emitter) -> Emitter:
        CONTROL_EMITTERS[name] = fn
        return fn

    return deco


def splat_value(data: np.ndarray) -> np.ndarray | None:
    """The one value of ``data`` as a 0-d array when every element has the same bits (a
    splat; NaN counts as equal to itself, -0.0 not to 0.0), else None (also for no element)."""
    if data.size == 0:
        return None
    first = np.asarray(data[(0,) * data.ndim], dtype=data.dtype)
    # a broadcast view (what the importer makes of ConstantOfShape) repeats the part along
    # its non-zero strides: only that part needs a look (none at all for a broadcast scalar)
    core = data[tuple(slice(None) if s else slice(0, 1) for s in data.strides)]
    if core.size == 1:
        return first
    bits = _bits(core)
    if bits is None:
        return None
    flat = bits.reshape(-1)  # a copy only for a non-contiguous core
    head = flat[0]
    if flat[-1] != head or flat[flat.size // 2] != head:
        return None
    for start in range(0, flat.size, _SCAN_BLOCK):
        if not (flat[start:start + _SCAN_BLOCK] == head).all():
            return None
    return first


def _bits(data: np.ndarray) -> np.ndarray | None:
    """``data`` viewed as unsigned ints of its item size (so equality is bitwise)."""
    kind = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}.get(data.dtype.itemsize)
    return None if kind is None else data.view(kind)


@cache
def elem_type(dtype: np.dtype) -> int:
    """The ONNX element type of numpy ``dtype`` (cached: ``dtype.name`` is slow, and an export
    asks once per constant)."""
    return onnx_type_of(dtype.name, "a constant")


@cache
def type_constraints(op_type: str, opset: int) -> dict[str, frozenset[str]]:
    """``type param -> allowed type strings`` of ``op_type``'s schema at ``opset``."""
    schema = defs.get_schema(op_type, opset)
    return {c.type_param_str: frozenset(c.allowed_type_strs) for c in schema.type_constraints}


@cache
def _constant_of_shape_types(opset: int) -> frozenset[int]:
    """The element types ``ConstantOfShape`` fills at ``opset`` (its schema's ``T2``)."""
    schema = defs.get_schema("ConstantOfShape", opset)
    allowed = next(c.allowed_type_strs for c in schema.type_constraints
                   if c.type_param_str == "T2")
    return frozenset(v for k, v in TensorProto.DataType.items()
                     if f"tensor({k.lower()})" in allowed)


class GraphBuilder:
    """Collects nodes and initializers under unique names."""

    def __init__(self, opset: int, reserved: Sequence[str]) -> None:
        self.opset = opset
        self.used: set[str] = set(reserved)
        self.nodes: list[list[Any]] = []  # [op_type, inputs, outputs, attrs]
        #: nodes of the main graph made for constants (``ConstantOfShape``), before all others:
        #: a constant is shared by every graph, a subgraph reading it too
        self.hoisted: list[list[Any]] = []
        #: ``(name, data)`` of every initializer, in order.
        self.initializers: list[tuple[str, np.ndarray]] = []
        self._by_key: dict[Any, str] = {}
        self.producer: dict[str, list[Any]] = {}
        #: ``name -> TensorType`` of values the graph declares in its ``value_info`` (what a
        #: reader cannot infer, e.g. the data-dependent shape of a dynamic node's output)
        self.value_info: dict[str, TensorType] = {}
        self._counter = 0
        #: size variable name -> ``(graph input, axis)`` whose size it is (see :meth:`dim`)
        self.dim_sources: dict[str, tuple[str, int]] = {}
        self._dims: dict[Any, str] = {}

    def fresh(self, hint: str) -> str:
        """A name not used yet, built from ``hint``."""
        hint = hint.replace("nn.", "")
        while True:
            self._counter += 1
            name = f"{hint}_{self._counter}"
            if name not in self.used:
                self.used.add(name)
                return name

    def node(self, op_type: str, inputs: Sequence[str], outputs: int = 1,
             hint: str | None = None, **attrs: Any) -> list[str]:
        """Append a node; returns its output names."""
        outs = [self.fresh(hint or op_type) for _ in range(outputs)]
        record = [op_type, list(inputs), outs, attrs]
        self.nodes.append(record)
        for o in outs:
            self.producer[o] = record
        return outs

    def constant(self, data: np.ndarray, hint: str = "const", key: Any = None) -> str:
        """The name of a value holding ``data``: an initializer (shared by ``key``, a constant
        object, when given, and else by value), or a ``ConstantOfShape`` node for a big splat
        (see :data:`SPLAT_MIN_BYTES`)."""
        data = np.asarray(data)
        if key is None and not data.dtype.hasobject:
            key = _value_key(data)
        if key is not None:
            got = self._by_key.get(key)
            if got is not None:
                return got
        name = self._splat(data, hint)
        if name is None:
            name = self.fresh(hint)
            self.initializers.append((name, data))
        if key is not None:
            self._by_key[key] = name
        return name

    # -- symbolic dims ------------------------------------------------------------------------
    def _hoist(self, op_type: str, inputs: Sequence[str], hint: str, **attrs: Any) -> str:
        """A node at the start of the main graph (it reads graph inputs and constants only)."""
        out = self.fresh(hint)
        record = [op_type, list(inputs), [out], attrs]
        self.hoisted.append(record)
        self.producer[out] = record
        return out

    def _int64(self, value: int) -> str:
        return self.constant(np.array([value], dtype=np.int64), "dim")

    def dim(self, d: Any) -> str:
        """A 1-element int64 tensor holding dim ``d`` at run time (see the module docstring);
        an :class:`OnnxExportError` if ``d`` uses a size variable no graph input has as a
        dim of its own."""
        if type(d) is int:
            return self._int64(d)
        got = self._dims.get(d)
        if got is not None:
            return got
        if isinstance(d, SizeVar):
            source = self.dim_sources.get(d.name)
            if source is None:
                raise OnnxExportError(
                    f"the size {d.name} is not a dim of any graph input, so the exported model "
                    "cannot compute it at run time (sizes: "
                    f"{', '.join(sorted(self.dim_sources)) or 'none'})")
            name, axis = source
            if self.opset >= 15:
                out = self._hoist("Shape", [name], d.name, start=axis, end=axis + 1)
            else:
                shape = self._hoist("Shape", [name], "shape")
                out = self._hoist("Gather", [shape, self._int64(axis)], d.name, axis=0)
        else:
            terms, const = dim_terms(d)
            parts = []
            for k, factors in terms:
                value = None
                for factor in factors:
                    f = self._factor(factor)
                    value = f if value is None else self._hoist("Mul", [value, f], "dim")
                if k != 1:
                    value = self._hoist("Mul", [value, self._int64(k)], "dim")
                parts.append(value)
            if const:
                parts.append(self._int64(const))
            out = parts[0]
            for part in parts[1:]:
                out = self._hoist("Add", [out, part], "dim")
        self._dims[d] = out
        return out

    def _factor(self, factor: Any) -> str:
        if isinstance(factor, SizeVar):
            return self.dim(factor)
        kind = factor[0]
        if kind in ("floordiv", "mod"):
            # the argument of a canonical floordiv/mod is >= 0 (see irpass.ir.dims), where
            # ONNX's truncating Div is floor division
            _, arg, c = factor
            op = "Div" if kind == "floordiv" else "Mod"
            return self._hoist(op, [self.dim(arg), self._int64(c)], "dim")
        if self.opset < 12:
            raise OnnxExportError(f"the size {kind}({', '.join(map(str, factor[1]))}) needs "
                                  "opset >= 12 (Min and Max of int64)")
        return self._hoist(kind.capitalize(), [self.dim(a) for a in factor[1]], "dim")

    def dims(self, values: Sequence[Any], hint: str = "shape") -> str:
        r"""A 1-D int64 tensor of ``values`` (ints and symbolic dims): a constant when all are
        static, else a ``Concat`` of constants and :meth:`dim`\ s."""
        if all(type(v) is int for v in values):
            return self.constant(np.asarray(list(values), dtype=np.int64).reshape(-1), hint)
        key = ("dims", tuple(values))
        got = self._dims.get(key)
        if got is not None:
            return got
        pieces: list[str] = []
        run: list[int] = []
        for v in values:
            if type(v) is int:
                run.append(v)
                continue
            if run:
                pieces.append(self.constant(np.asarray(run, dtype=np.int64), hint))
                run = []
            pieces.append(self.dim(v))
        if run:
            pieces.append(self.constant(np.asarray(run, dtype=np.int64), hint))
        out = pieces[0] if len(pieces) == 1 else self._hoist("Concat", pieces, hint, axis=0)
        self._dims[key] = out
        return out

    def _splat(self, data: np.ndarray, hint: str) -> str | None:
        """A ``ConstantOfShape`` node making ``data`` if it is a big splat the opset can fill."""
        if data.nbytes <= SPLAT_MIN_BYTES:
            return None
        elem = elem_type(data.dtype)
        if elem not in _constant_of_shape_types(self.opset):
            return None
        value = splat_value(data)
        if value is None:
            return None
        shape = self.constant(np.asarray(data.shape, dtype=np.int64), "shape")
        fill = numpy_helper.from_array(value.reshape(1), "value")
        out = self.fresh(hint)
        record = ["ConstantOfShape", [shape], [out], {"value": fill}]
        self.hoisted.append(record)
        self.producer[out] = record
        return out


class EmitContext:
    """What an emitter sees: its node's inputs (as ONNX names or constant data), types,
    attributes, the opset, and ways to add nodes and constants."""

    def __init__(self, builder: GraphBuilder, node: Node, names: Callable[[Any], str],
                 subgraph: Callable[..., onnx.GraphProto] | None = None) -> None:
        self.builder = builder
        self.node = node
        self.attrs = node.attrs
        self.opset = builder.opset
        self._names = names
        self._subgraph = subgraph

    # -- inputs ---------------------------------------------------------------------------

    def input(self, i: int) -> str:
        """The ONNX name of input ``i`` (a constant becomes an initializer)."""
        return self._names(self.node.inputs[i])

    def name_of(self, value: Any) -> str:
        """The ONNX name of a lowered value (one a peephole attached to the node)."""
        return self._names(value)

    def inputs_of(self, i: int) -> list[str]:
        """The names of the fields of tuple input ``i`` (``concatenate``)."""
        v = self.node.inputs[i]
        return [self._names(f) for f in v] if type(v) is tuple else [self._names(v)]

    def const(self, i: int) -> np.ndarray | None:
        """The data of input ``i`` if it is a constant, else None."""
        v = self.node.inputs[i]
        return v.data if type(v) is Const else None

    def type_of(self, i: int) -> TensorType:
        """The tensor type of input ``i``."""
        return self.node.inputs[i].type

    @property
    def out_type(self) -> Type:
        """The type of the node's result."""
        return self.node.type

    @property
    def where(self) -> str:
        """The node, for messages."""
        return describe(self.node.expr)

    def subgraph(self, sub: Any, hint: str,
                 leading: Sequence[tuple[str, TensorType]] = ()) -> onnx.GraphProto:
        """The lowered subgraph ``sub`` (a branch, a loop body) as a ``GraphProto`` whose
        inputs are ``leading`` (name hints and types) then ``sub``'s params."""
        if self._subgraph is None:  # pragma: no cover - the writer always passes it
            raise self.fail("subgraphs cannot be written here")
        return self._subgraph(sub, hint, leading)

    # -- output -----------------------------------------------------------------------------

    def emit(self, op_type: str, inputs: Sequence[str], outputs: int = 1, **attrs: Any) -> Any:
        """Add a node; its output name (a list when ``outputs`` > 1)."""
        hint = self.node.op.replace("nn.", "")
        outs = self.builder.node(op_type, inputs, outputs, hint=hint, **_clean(attrs))
        return outs[0] if outputs == 1 else outs

    def declare(self, name: str, ty: TensorType) -> str:
        """Declare the type of ``name`` in the graph's ``value_info``; ``name``."""
        self.builder.value_info[name] = ty
        return name

    def constant(self, data: Any, dtype: str | None = None, hint: str = "const") -> str:
        """An initializer holding ``data`` (converted to ``dtype``)."""
        arr = np.asarray(data, dtype=dtype) if dtype is not None else np.asarray(data)
        return self.builder.constant(arr, hint)

    def int64s(self, values: Sequence[int], hint: str = "shape") -> str:
        """A 1-D int64 initializer (shapes, axes, pads)."""
        return self.builder.constant(np.asarray(list(values), dtype=np.int64).reshape(-1), hint)

    def dims(self, values: Sequence[Any], hint: str = "shape") -> str:
        """A 1-D int64 tensor of ``values``, ints and symbolic dims (:meth:`GraphBuilder.dims`)."""
        return self.builder.dims(values, hint)

    def reshape(self, name: str, shape: Sequence[Any],
                from_shape: Sequence[Any] | None = None) -> str:
        """``name`` (of shape ``from_shape`` when known) reshaped to ``shape`` (a Reshape of a
        Reshape reads the first one's input: the one it bypasses is dropped if nothing else
        uses it). A symbolic target is written with the least run-time computation: a ``0``
        for a dim equal to ``from_shape``'s at the same place, one ``-1``, the rest from
        :meth:`GraphBuilder.dim`."""
        if any(type(d) is not int for d in shape):
            return self._symbolic_reshape(name, list(shape), from_shape)
        before = self.builder.producer.get(name)
        if before is not None and before[0] == "Reshape":
            name = before[1][0]
        # a 0 in the shape copies the input's dim unless allowzero (opset 14) says otherwise
        allowzero = 1 if 0 in shape and self.opset >= 14 else None
        return self.emit("Reshape", [name, self.int64s(shape)], allowzero=allowzero)

    def _symbolic_reshape(self, name: str, shape: list[Any],
                          from_shape: Sequence[Any] | None) -> str:
        target: list[Any] = list(shape)
        if 0 not in shape and from_shape is not None:  # (a literal 0 would read as "copy")
            for k, d in enumerate(shape):
                if type(d) is not int and k < len(from_shape) and from_shape[k] == d:
                    target[k] = 0
        open_ = [k for k, d in enumerate(target) if type(d) is not int]
        if open_:
            # the most complex open dim is left to -1, which Reshape infers
            last = max(open_, key=lambda k: len(str(target[k])))
            target[last] = -1
        return self.emit("Reshape", [name, self.dims(target)])

    def transpose(self, name: str, perm: Sequence[int]) -> str:
        """``name`` transposed by ``perm``: no node for the identity permutation, and one
        Transpose of another's input for a Transpose of a Transpose (e.g. NCHW -> NHWC -> NCHW
        between two ops in NHWC is nothing)."""
        perm = [int(p) for p in perm]
        before = self.builder.producer.get(name)
        if before is not None and before[0] == "Transpose":
            first = before[3]["perm"]
            perm = [first[p] for p in perm]
            name = before[1][0]
        if perm == list(range(len(perm))):
            return name
        return self.emit("Transpose", [name], perm=perm)

    def transposed_source(self, name: str) -> tuple[str, list[int]] | None:
        """``(input, perm)`` when ``name`` is the output of a Transpose node, else None."""
        before = self.builder.producer.get(name)
        if before is None or before[0] != "Transpose":
            return None
        return before[1][0], list(before[3]["perm"])

    def cast(self, name: str, dtype: str) -> str:
        """``name`` cast to irpass dtype ``dtype``."""
        return self.emit("Cast", [name], to=self.onnx_type(dtype))

    def onnx_type(self, dtype: str) -> int:
        """The ONNX element type of ``dtype``; an export error if there is none."""
        try:
            return onnx_type_of(dtype, self.where)
        except ValueError as err:
            raise OnnxExportError(str(err)) from None

    def lacks_type(self, op_type: str, dtype: str, param: str = "T") -> bool:
        """Whether ``op_type`` at the export opset does not take ``dtype`` for its type
        parameter ``param`` but takes float32 (a 16-bit float can then run as float32)."""
        allowed = type_constraints(op_type, self.opset).get(param, frozenset())
        return f"tensor({dtype})" not in allowed and "tensor(float)" in allowed

    def need_opset(self, since: int, op_type: str) -> None:
        """Fail unless the export opset has ``op_type``, which ONNX added in opset ``since``."""
        if self.opset < since:
            raise self.fail(f"{self.node.op} is written as ONNX {op_type}, which needs "
                            f"opset >= {since}")

    def fail(self, msg: str) -> OnnxExportError:
        """An export error naming the node and the opset (raise it)."""
        return OnnxExportError(f"{self.where}: {msg} (export opset {self.opset})")


def _clean(attrs: dict[str, Any]) -> dict[str, Any]:
    """Attribute values as the plain Python types ``onnx.helper`` expects; None dropped."""
    out = {}
    for k, v in attrs.items():
        if v is None:
            continue
        if isinstance(v, (tuple, list)):
            v = [_plain(x) for x in v]
        else:
            v = _plain(v)
        out[k] = v
    return out


def _plain(v: Any) -> Any:
    """A numpy number as the Python number ``onnx.helper`` takes; anything else as it is."""
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


# the ONNX ops with graph attributes
_WITH_SUBGRAPHS = frozenset({"If", "Loop", "Scan", "SequenceMap"})


def reads(rec: list[Any]) -> list[str]:
    """The names a node record reads: its inputs and, for a control node, every name its
    subgraphs read (values of the enclosing graphs among them)."""
    if rec[0] not in _WITH_SUBGRAPHS:
        return rec[1]
    names = list(rec[1])
    graphs = [v for v in rec[3].values() if isinstance(v, onnx.GraphProto)]
    while graphs:
        g = graphs.pop()
        names.extend(o.name for o in g.output)
        for n in g.node:
            names.extend(n.input)
            graphs.extend(a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH)
    return names


def live_nodes(nodes: list[list[Any]], outputs: Sequence[str]) -> list[list[Any]]:
    """The node records something the graph outputs need reads (in order); the others were
    bypassed by a peephole after they were emitted."""
    live = set(outputs)
    keep = []
    for rec in reversed(nodes):
        if any(o in live for o in rec[2]):
            keep.append(rec)
            live.update(reads(rec))
    keep.reverse()
    return keep


def add_node_protos(into: Any, nodes: list[list[Any]], rename: dict[str, str]) -> None:
    """Append the node records to ``into`` (a graph's ``node`` field) as the ``NodeProto``
    that ``helper.make_node(op_type, ins, outs, name=outs[0], **attrs)`` makes, with the
    names in ``rename`` replaced. They are built in place with the message constructors:
    ``make_node`` tests each attribute against a dozen abstract classes and
    ``make_graph``/``make_model`` copy every node twice more (together a sixth of the
    export's time on MobileNetV3, ``bench_import.py --profile-stage export``)."""
    get = rename.get
    add = into.add
    for op_type, inputs, outputs, attrs in nodes:
        outs = [get(n, n) for n in outputs]
        node = add(op_type=op_type, input=[get(n, n) for n in inputs], output=outs)
        if outs[0]:  # as make_node: an empty name is left unset
            node.name = outs[0]
        if attrs:
            into_attrs = node.attribute
            for k, v in sorted(attrs.items()):
                if v is not None:
                    _add_attribute(into_attrs, k, v)


_INT_TYPES = (int, bool, np.integer)
_FLOAT_TYPES = (float, np.floating)


def _add_attribute(into: Any, name: str, value: Any) -> None:
    """Append ``helper.make_attribute(name, value)`` to ``into``, built in place for the
    kinds emitters write most."""
    t = type(value)
    if t is int or t is bool:
        into.add(name=name, type=AttributeProto.INT, i=int(value))
    elif t is float:
        into.add(name=name, type=AttributeProto.FLOAT, f=value)
    elif t is str:
        into.add(name=name, type=AttributeProto.STRING, s=value.encode())
    elif (t is list or t is tuple) and value and all(isinstance(v, _INT_TYPES) for v in value):
        into.add(name=name, type=AttributeProto.INTS, ints=[int(v) for v in value])
    elif (t is list or t is tuple) and value and all(isinstance(v, _FLOAT_TYPES) for v in value):
        into.add(name=name, type=AttributeProto.FLOATS, floats=[float(v) for v in value])
    else:
        into.append(helper.make_attribute(name, value))


def _value_key(data: np.ndarray) -> Any:
    """The key :meth:`GraphBuilder.constant` shares an emitter-made array by: equal for two
    arrays of one dtype, shape and bytes. The bytes themselves for up to 64 elements (shapes,
    axes, scalars: 0.3 us to make, 0.9 us a lookup), a :class:`_Contents` above (a lookup that
    matches compares the arrays, about 8 us, small next to a big array's bytes)."""
    if data.size <= 64:
        return ("value", data.dtype.str, data.shape, data.tobytes())
    return _Contents(data)


class _Contents:
    """An array as a dict key, equal to another of the same dtype, shape and bytes: what
    :meth:`GraphBuilder.constant` shares emitter-made arrays by (an attention's mask bias is
    computed for each of a model's 30 layers; shared, it is written once). Hashed by a CRC-32
    of the bytes (5 GB/s here, a BLAKE2 digest 1 GB/s), the bytes compared in full on a
    match, so a collision costs a comparison, never a wrong constant."""

    __slots__ = ("data", "_hash")

    def __init__(self, data: np.ndarray) -> None:
        self.data = np.ascontiguousarray(data)
        crc = zlib.crc32(self.data.reshape(-1).view(np.uint8))  # any dtype, ml_dtypes' too
        self._hash = hash((self.data.dtype.str, self.data.shape, crc))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if type(other) is not _Contents:
            return NotImplemented
        a, b = self.data, other.data
        return (a.dtype.str == b.dtype.str and a.shape == b.shape
                and np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)))
