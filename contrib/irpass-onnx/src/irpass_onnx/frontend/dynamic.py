"""ONNX nodes whose shape-determining operands are known only at run time.

irpass's shapes are static, and a converter reads an operand that decides an output's shape
(Reshape's shape, a reduction's axes, Slice's starts, TopK's k, ...) or an input that decides
it through its data (NonZero, Unique) with :meth:`NodeContext.const_input`. When that operand
is a runtime value -- a graph input, or computed from one -- the converter cannot run at
import. The node is then imported as one call of the op ``onnx.node``:

- its arguments are the node's inputs; its attributes the node itself (serialized), the
  opset and the import options the converter depends on;
- its type is the node's output types as the model declares them (graph outputs,
  ``value_info``) or as ONNX's shape inference computes them; when an output that the
  operand shapes has no static type there, the import fails naming the node, the operand
  and the output;
- evaluating it runs the node's converter on the actual input values (all known now) and
  evaluates what it built; a result whose shape or dtype is not the declared one is an error
  naming the node: the declared types are a contract the run checks, as Relax's
  ``match_cast`` checks a shape;
- the exporter writes the node back as it was imported.

When an output the operand shapes has no static type in the model (an intermediate value of
an expanded function, say), the node starts a *region*: it and every later node that reads an
untyped value of the region, transitively, become one ``onnx.node`` call holding a ``Region``
node (domain ``ai.irpass``) whose ``body`` graph lists them. The region's outputs are the
values its nodes produce that have static types; its untyped values are bound to the call
itself, a placeholder: a node reading one raises :class:`RuntimeOperand` from
:meth:`NodeContext.input` and gets its outputs from the region. Evaluating the call converts
and evaluates the body's nodes in order with the actual values. A region that reaches a graph
output without a static type, or a node with subgraphs, is an error naming the node.

Passes see an opaque op; FoldConstant evaluates one whose inputs all became constants.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from irpass.ir import Call, Constant, Expr, Op, TensorType, TupleGetItem, TupleType, Type
from onnx import AttributeProto, NodeProto, checker, defs, helper, shape_inference

from ..dtypes import onnx_type_of
from ..node_op import OP_NAME  # the op of a node imported with runtime shape operands
from ..options import ImportOptions

if TYPE_CHECKING:
    from .context import NodeContext
    from .graph import GraphImporter

__all__ = ["RuntimeOperand", "OP_NAME", "REGION_OP_TYPE", "REGION_DOMAIN",
           "dynamic_call", "node_of", "is_region_value"]

#: The op type (in :data:`REGION_DOMAIN`) of the node an ``onnx.node`` call holds for a region
#: of nodes; its ``body`` attribute is the graph of the nodes.
REGION_OP_TYPE = "Region"
REGION_DOMAIN = "ai.irpass"


class RuntimeOperand(Exception):  # noqa: N818 - a signal to the importer, not an error
    """Raised by :meth:`NodeContext.const_input` when the operand it reads is a runtime
    value; the importer then imports the node as an ``onnx.node`` call."""

    def __init__(self, index: int, name: str) -> None:
        super().__init__(index, name)
        self.index = index
        self.name = name


def _encode_type(ty: TensorType) -> tuple[str, tuple[int, ...]]:
    return ty.dtype, tuple(ty.shape)


def _decode_types(encoded: Sequence[Any]) -> list[TensorType]:
    return [TensorType(tuple(shape), dtype) for dtype, shape in encoded]


def node_of(attrs: Any) -> NodeProto:
    """The ONNX node an ``onnx.node`` call stands for."""
    return NodeProto.FromString(base64.b64decode(attrs["node"]))


def is_region_value(expr: Expr) -> bool:
    """Whether ``expr`` is a region's placeholder: the value of an ONNX name computed inside a
    region without a static type (see the module docstring)."""
    return (isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == OP_NAME
            and bool(expr.attrs["region"]))


def dynamic_call(importer: GraphImporter, ctx: NodeContext, cause: RuntimeOperand,
                 declared: dict[str, TensorType]) -> list[Expr]:
    """The outputs of ``ctx``'s node as one ``onnx.node`` call, or as a region's outputs (see
    the module docstring)."""
    node = ctx.node
    for name in node.input:
        if name and is_region_value(importer.value(name)):
            return _region_member(ctx, importer.value(name))
    slots = tuple(i for i in range(len(node.input)) if node.input[i])
    args = [ctx.input(i) for i in slots]
    _check_with_onnx(ctx, slots, args)
    operand = f"input {cause.index} ({cause.name}, {node.input[cause.index]!r})"
    out_types: list[TensorType] = []
    for j, name in enumerate(node.output):
        if not name:
            ctx.fail(f"{operand} is a runtime value, and output {j} is unnamed; irpass imports "
                     "such a node only with every output named and typed")
        ty = declared.get(name) or importer.inferred_type(name)
        if ty is None:
            return _region(importer, ctx, operand, declared, f"output {j} {name!r}")
        out_types.append(ty)
    call = _call(importer, ctx, node, slots, args, out_types, region=False)
    if len(out_types) == 1:
        return [call]
    return [TupleGetItem(call, j) for j in range(len(out_types))]


def _check_with_onnx(ctx: NodeContext, slots: tuple[int, ...], args: list[Expr]) -> None:
    """Refuse ``ctx``'s node when ONNX's own inference of it, from the types of its inputs
    (``args``, in input ``slots``), finds them wrong for the op. The converter that would
    check them runs only when the model runs: a node whose shape operand is a float tensor or
    not 1-D, or that has too few inputs, is an error of the model, named here rather than at
    run time or export.
    (A node with subgraphs, whose inference needs the enclosing graphs' types, or with an
    input that is not a tensor, is left to its converter.)"""
    node = ctx.node
    if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute):
        return
    input_types = {}
    for i, arg in zip(slots, args, strict=True):
        ty = ctx.type_of_expr(arg)
        if not isinstance(ty, TensorType):
            return
        # float16 and bfloat16 are asked about as float32: an op that lacks them at some opset
        # computes them in float32, and the export writes it so or names what is missing
        # (export/emitters_dynamic.py); a symbolic dim is an unknown one to ONNX's inference
        dtype = "float32" if ty.dtype in ("float16", "bfloat16") else ty.dtype
        input_types[node.input[i]] = helper.make_tensor_type_proto(
            onnx_type_of(dtype, node.input[i]), [d if type(d) is int else None for d in ty.shape])
    try:
        schema = defs.get_schema(node.op_type, ctx.opset, node.domain)
    except defs.SchemaError:
        return  # not an ONNX op at this opset: the converter that took it checks it
    try:
        shape_inference.infer_node_outputs(schema, node, input_types)
    except (shape_inference.InferenceError, checker.ValidationError) as err:
        ctx.fail(f"not a valid {node.op_type} node: {' '.join(str(err).split())}")
    except Exception:  # noqa: BLE001, S110 - inference that cannot run decides nothing
        pass


def _call(importer: GraphImporter, ctx: NodeContext, node: NodeProto, slots: tuple[int, ...],
          args: list[Expr], out_types: list[TensorType], region: bool) -> Call:
    return Call(Op.get(OP_NAME), args, {
        "node": base64.b64encode(node.SerializeToString()).decode("ascii"),
        "opset": ctx.opset,
        "input_slots": slots,
        "out_types": tuple(_encode_type(t) for t in out_types),
        "materialize_constant_of_shape": importer.options.materialize_constant_of_shape,
        "region": region,
    })


def _region(importer: GraphImporter, ctx: NodeContext, operand: str,
            declared: dict[str, TensorType], untyped_output: str) -> list[Expr]:
    """``ctx``'s node, which has an output without a static type, and the later nodes that
    read such values, as one region call; the node's outputs (placeholders where untyped)."""
    from .graph import implicit_inputs, subgraphs

    nodes = importer.graph.node
    producer = {name: k for k in range(ctx.index, len(nodes)) for name in nodes[k].output if name}

    def reads(k: int) -> list[str]:
        names = [x for x in nodes[k].input if x]
        for _name, sub in subgraphs(nodes[k]):
            names.extend(implicit_inputs(sub))
        return names

    def typed(name: str) -> TensorType | None:
        return declared.get(name) or importer.inferred_type(name)

    # the node and every later one reading a value without a static type, transitively ...
    members = {ctx.index}
    untyped = {x for x in ctx.node.output if x and typed(x) is None}
    for k in range(ctx.index + 1, len(nodes)):
        if any(x in untyped for x in reads(k)):
            members.add(k)
            untyped.update(x for x in nodes[k].output if x and typed(x) is None)
    # ... and the later nodes computing what those read that is not defined yet (from the
    # region's typed outputs, say): a call's arguments must exist when it is made
    stack = list(members)
    while stack:
        for x in reads(stack.pop()):
            k = producer.get(x)
            if k is not None and k not in members and x not in importer.env:
                members.add(k)
                stack.append(k)
                untyped.update(y for y in nodes[k].output if y and typed(y) is None)
    produced: set[str] = set()
    inputs: list[str] = []
    outputs: list[tuple[str, TensorType]] = []
    for k in sorted(members):
        n = nodes[k]
        if any(True for _ in subgraphs(n)):
            ctx.fail(f"{operand} is a runtime value, and the model declares no static shape "
                     f"for {untyped_output}, which depends on it, nor for the values computed "
                     f"from it up to node {k} {n.name!r} ({n.op_type}), which has subgraphs; "
                     "irpass needs static shapes there")
        for x in reads(k):
            if x not in produced and x not in inputs:
                inputs.append(x)
        for name in n.output:
            if name:
                produced.add(name)
                ty = typed(name)
                if ty is not None:
                    outputs.append((name, ty))
    for j, out in enumerate(importer.graph.output):
        if out.name in untyped:
            further = "" if out.name in ctx.node.output else (
                f", nor for graph output {j} {out.name!r} computed from it")
            ctx.fail(f"{operand} is a runtime value (not a constant, nor computed from "
                     f"constants), and the model declares no static shape for {untyped_output}, "
                     f"which depends on it{further}; irpass needs static shapes")
    body = helper.make_graph([nodes[k] for k in sorted(members)], "region", [], [])
    region = helper.make_node(REGION_OP_TYPE, inputs, [name for name, _ in outputs],
                              name=ctx.node.name, domain=REGION_DOMAIN, body=body)
    args = [importer.value(x) for x in inputs]
    call = _call(importer, ctx, region, tuple(range(len(inputs))), args,
                 [ty for _, ty in outputs], region=True)
    return _region_member(ctx, call)


def _region_member(ctx: NodeContext, call: Call) -> list[Expr]:
    """The outputs of ``ctx``'s node, a node of the region ``call``: the region's output of
    that name, or the call itself (a placeholder) for a value without a static type."""
    region = node_of(call.attrs)
    body = helper.get_attribute_value(region.attribute[0])
    if not any(n.output == ctx.node.output for n in body.node):
        ctx.fail("it reads a value without a static shape computed by the region of node "
                 f"{region.name!r} but is not part of it; irpass needs static shapes")
    position = {name: j for j, name in enumerate(region.output)}
    return [TupleGetItem(call, position[name]) if name in position else call
            for name in ctx.node.output]


def _attr_types(value: Any, where: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """``((dtype, shape), ...)``: the declared output types."""
    try:
        return tuple((str(dtype), tuple(int(d) for d in shape)) for dtype, shape in value)
    except (TypeError, ValueError):
        raise TypeError(f"{where} must be a tuple of (dtype, shape) pairs, got {value!r}") \
            from None


def _type_rel(arg_types: tuple[Type, ...], attrs: Any) -> Type:
    slots = attrs["input_slots"]
    if len(arg_types) != len(slots):
        raise ValueError(f"{OP_NAME}: {len(arg_types)} arguments for {len(slots)} inputs")
    outs = _decode_types(attrs["out_types"])
    # a region is always a tuple: its bare call stands for its untyped values
    return outs[0] if len(outs) == 1 and not attrs["region"] else TupleType(tuple(outs))


def _value_of(expr: Expr) -> np.ndarray:
    from irpass.evaluator import evaluate

    return np.asarray(expr.data if isinstance(expr, Constant) else evaluate(expr))


def _kernel(args: tuple, attrs: Any) -> Any:
    from .graph import GraphImporter

    node = node_of(attrs)
    values: list[np.ndarray | None] = [None] * len(node.input)
    for slot, value in zip(attrs["input_slots"], args, strict=True):
        values[slot] = np.asarray(value)
    options = ImportOptions(materialize_constant_of_shape=attrs["materialize_constant_of_shape"])
    # An OnnxImportError here (a value the converter refuses) is raised as it is: the import
    # of this node is finished at run time, and it is the same clean error it would have been.
    if attrs["region"]:
        env = dict(zip(node.input, values, strict=True))
        body = helper.get_attribute_value(node.attribute[0])
        for member in body.node:
            exprs = GraphImporter.convert_node_with_values(
                member, attrs["opset"], options, [env[x] if x else None for x in member.input])
            for name, expr in zip([o for o in member.output if o], exprs, strict=True):
                env[name] = _value_of(expr)
        got_values = [env[name] for name in node.output]
        where = (f"the region of ONNX node {node.name!r} ({body.node[0].op_type}) and the "
                 f"{len(body.node) - 1} node(s) after it that depend on its output shapes")
    else:
        exprs = GraphImporter.convert_node_with_values(node, attrs["opset"], options, values)
        got_values = [_value_of(expr) for expr in exprs]
        where = _where(node)
    results = []
    for j, (got, want) in enumerate(zip(got_values, _decode_types(attrs["out_types"]),
                                        strict=True)):
        if got.shape != want.shape or got.dtype.name != want.dtype:
            raise ValueError(
                f"{where}: output {j} {node.output[j]!r} is "
                f"{got.dtype.name}{list(got.shape)} for the values its inputs have at run "
                f"time, but the model declares "
                f"{want.dtype}{list(want.shape)}")
        results.append(got)
    return results[0] if len(results) == 1 and not attrs["region"] else tuple(results)


def _where(node: NodeProto) -> str:
    return f"ONNX node {node.name!r} ({node.op_type})"
