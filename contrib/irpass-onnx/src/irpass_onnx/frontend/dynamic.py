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

Passes see an opaque op; FoldConstant evaluates one whose inputs all became constants.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from irpass.ir import Constant, Expr, TensorType, TupleType, Type
from irpass.ir.op import AttrField, OpPattern, attr_bool, attr_int, attr_ints, attr_str
from irpass.plugins import OpSpec
from onnx import NodeProto

from ..options import ImportOptions

if TYPE_CHECKING:
    from .context import NodeContext
    from .graph import GraphImporter

__all__ = ["RuntimeOperand", "OP_NAME", "op_spec", "dynamic_call", "node_of"]

#: The op of a node imported with runtime shape operands.
OP_NAME = "onnx.node"


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


def dynamic_call(importer: GraphImporter, ctx: NodeContext, cause: RuntimeOperand,
                 declared: dict[str, TensorType]) -> list[Expr]:
    """The outputs of ``ctx``'s node as one ``onnx.node`` call (see the module docstring)."""
    from irpass.ir import Call, Op, TupleGetItem

    node = ctx.node
    operand = f"input {cause.index} ({cause.name}, {node.input[cause.index]!r})"
    out_types: list[TensorType] = []
    for j, name in enumerate(node.output):
        if not name:
            ctx.fail(f"{operand} is a runtime value, and output {j} is unnamed; irpass imports "
                     "such a node only with every output named and typed")
        ty = declared.get(name) or importer.inferred_type(name)
        if ty is None:
            ctx.fail(f"{operand} is a runtime value (not a constant, nor computed from "
                     f"constants), and the model declares no static shape for output {j} "
                     f"{name!r}, which depends on it; irpass needs static shapes")
        out_types.append(ty)
    slots = tuple(i for i in range(len(node.input)) if node.input[i])
    args = [ctx.input(i) for i in slots]
    options = importer.options
    call = Call(Op.get(OP_NAME), args, {
        "node": base64.b64encode(node.SerializeToString()).decode("ascii"),
        "opset": ctx.opset,
        "input_slots": slots,
        "out_types": tuple(_encode_type(t) for t in out_types),
        "materialize_constant_of_shape": options.materialize_constant_of_shape,
    })
    if len(out_types) == 1:
        return [call]
    return [TupleGetItem(call, j) for j in range(len(out_types))]


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
    return outs[0] if len(outs) == 1 else TupleType(tuple(outs))


def _kernel(args: tuple, attrs: Any) -> Any:
    from irpass.evaluator import evaluate

    from .graph import GraphImporter

    node = node_of(attrs)
    values: list[np.ndarray | None] = [None] * len(node.input)
    for slot, value in zip(attrs["input_slots"], args, strict=True):
        values[slot] = np.asarray(value)
    options = ImportOptions(materialize_constant_of_shape=attrs["materialize_constant_of_shape"])
    # An OnnxImportError here (a value the converter refuses) is raised as it is: the import
    # of this node is finished at run time, and it is the same clean error it would have been.
    exprs = GraphImporter.convert_node_with_values(node, attrs["opset"], options, values)
    results = []
    for j, (expr, want) in enumerate(zip(exprs, _decode_types(attrs["out_types"]),
                                         strict=True)):
        got = expr.data if isinstance(expr, Constant) else evaluate(expr)
        got = np.asarray(got)
        if got.shape != want.shape or got.dtype.name != want.dtype:
            raise ValueError(
                f"{_where(node)}: output {j} {node.output[j]!r} is "
                f"{got.dtype.name}{list(got.shape)} for the values its inputs have at run "
                f"time, but the model declares "
                f"{want.dtype}{list(want.shape)}")
        results.append(got)
    return results[0] if len(results) == 1 else tuple(results)


def _where(node: NodeProto) -> str:
    return f"ONNX node {node.name!r} ({node.op_type})"


def op_spec() -> OpSpec:
    """The ``onnx.node`` op, registered by the pack's plugin."""
    return OpSpec(
        OP_NAME,
        num_inputs=-1,
        type_rel=_type_rel,
        kernel=_kernel,
        pattern=OpPattern.OPAQUE,
        attrs=(
            AttrField("node", attr_str),
            AttrField("opset", attr_int),
            AttrField("input_slots", attr_ints),
            AttrField("out_types", _attr_types),
            AttrField("materialize_constant_of_shape", attr_bool, True),
        ),
        doc="An ONNX node whose shape-determining operands are run-time values: evaluated "
            "by converting the node with the actual values, its output types the model's.",
    )
