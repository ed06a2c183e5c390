"""The emitter of ``onnx.node``: an ONNX node imported with run-time shape operands (see
:mod:`irpass_onnx.frontend.dynamic`) is written back as it was imported; a *region* (the
nodes computing values without a static type, held by one ``Region`` node) is written back as
the nodes of its body, their inner values under fresh names.

When the export opset's schema of the op lacks a 16-bit float type the node has (bfloat16
came to many ops only in opset 22+), an op that only moves or selects elements runs in
float32 between two casts: float16 and bfloat16 values are all exact float32 values, so the
result is the same; so does Range, whose float16 arithmetic the core does in float32 rounded
once. Other ops are left as they are: the final type check of the export then names what is
missing. A bool ReduceMax/ReduceMin runs on uint8 (0 and
1): onnxruntime has no bool kernel for an empty reduction, and uint8's identities 0 and 255
read back as False and True, the bool identities."""

from __future__ import annotations

from functools import cache
from typing import Any

from irpass.ir.types import TensorType
from onnx import NodeProto, defs, helper

from ..frontend.dynamic import OP_NAME, REGION_DOMAIN, node_of
from .builder import EmitContext, emitter, type_constraints

__all__: list[str] = []

# ops whose result is made of their input elements (moved, selected or compared), so running
# them on float32 copies of float16/bfloat16 data changes nothing; and Range, whose
# start + i * delta the core computes as its float16 math always is, in float32 rounded once
_RUN_IN_FLOAT32 = frozenset({
    "Compress", "Unique", "OneHot", "ReverseSequence", "GatherND", "GatherElements", "Gather",
    "ScatterND", "ScatterElements", "Tile", "Expand", "Slice", "Pad", "TopK", "Reshape",
    "Transpose", "Squeeze", "Unsqueeze", "Split", "Concat", "Flatten", "CenterCropPad",
    "NonZero", "Where", "Range",
})
_WIDENED = ("float16", "bfloat16")
_BOOL_AS_UINT8 = frozenset({"ReduceMax", "ReduceMin"})


@emitter(OP_NAME)
def _node(ctx: EmitContext) -> Any:
    node = node_of(ctx.attrs)
    if node.domain == REGION_DOMAIN:
        return _region(ctx, node)
    if not _exists(node.op_type, ctx.opset):
        raise ctx.fail(f"{node.op_type} has run-time shape operands, so it is written as it "
                       f"was imported (at opset {ctx.attrs['opset']}), and opset {ctx.opset} "
                       f"has no {node.op_type}")
    inputs = [""] * len(node.input)
    dtypes: list[str | None] = [None] * len(node.input)
    for k, slot in enumerate(ctx.attrs["input_slots"]):
        inputs[slot] = ctx.input(k)
        dtypes[slot] = ctx.type_of(k).dtype
    while inputs and not inputs[-1]:
        inputs.pop()
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    widened, wide = _widened_params(node, ctx.opset, dtypes)
    if widened:
        formal_in, _ = _formal_params(node.op_type, ctx.opset)
        slot_type = {slot: ctx.type_of(k) for k, slot in enumerate(ctx.attrs["input_slots"])}
        for i, name in enumerate(inputs):
            if name and _param(formal_in, i) in widened:
                # declared: reading the model back, a dynamic node's operands need types
                inputs[i] = ctx.declare(ctx.cast(name, wide),
                                        TensorType(slot_type[i].shape, wide))
    outs = ctx.emit(node.op_type, inputs, outputs=len(node.output), **attrs)
    if not widened:
        return outs
    _, formal_out = _formal_params(node.op_type, ctx.opset)
    out_list = [outs] if len(node.output) == 1 else list(outs)
    declared = ctx.attrs["out_types"]
    for j, name in enumerate(out_list):
        if _param(formal_out, j) in widened and declared[j][0] != wide:
            ctx.declare(name, TensorType(tuple(declared[j][1]), wide))
            out_list[j] = ctx.cast(name, declared[j][0])
    return out_list[0] if len(node.output) == 1 else out_list


def _region(ctx: EmitContext, region: NodeProto) -> list[str]:
    """The body's nodes, reading the region's inputs; one name per region output."""
    names = {x: ctx.input(k) for k, x in enumerate(region.input)}
    body = helper.get_attribute_value(next(a for a in region.attribute if a.name == "body"))
    for member in body.node:
        if not _exists(member.op_type, ctx.opset):
            raise ctx.fail(f"{member.op_type} (node {member.name!r}) has run-time shape "
                           f"operands, so it is written as it was imported (at opset "
                           f"{ctx.attrs['opset']}), and opset {ctx.opset} has no "
                           f"{member.op_type}")
        inputs = [names[x] if x else "" for x in member.input]
        attrs = {a.name: helper.get_attribute_value(a) for a in member.attribute}
        outs = ctx.emit(member.op_type, inputs, outputs=len(member.output), **attrs)
        for name, out in zip(member.output, [outs] if len(member.output) == 1 else outs,
                             strict=True):
            if name:
                names[name] = out
    return [names[x] for x in region.output]


def _widened_params(node: NodeProto, opset: int,
                    dtypes: list[str | None]) -> tuple[set[str], str]:
    """The type params of ``node`` to run in another dtype, and that dtype: float32 for those
    bound to a float16/bfloat16 input the schema does not take at ``opset`` but whose float32
    it does (element-moving ops only); uint8 for a bool reduction by max or min."""
    formal_in, _ = _formal_params(node.op_type, opset)
    if node.op_type in _BOOL_AS_UINT8 and dtypes and dtypes[0] == "bool":
        return {_param(formal_in, 0)}, "uint8"
    if node.op_type not in _RUN_IN_FLOAT32:
        return set(), ""
    allowed = type_constraints(node.op_type, opset)
    out: set[str] = set()
    for i, dtype in enumerate(dtypes):
        param = _param(formal_in, i)
        if (dtype in _WIDENED and param in allowed and f"tensor({dtype})" not in allowed[param]
                and "tensor(float)" in allowed[param]):
            out.add(param)
    return out, "float32"


def _param(formal: tuple[str, ...], i: int) -> str:
    # a variadic formal parameter is the schema's last
    return formal[min(i, len(formal) - 1)] if formal else ""


@cache
def _formal_params(op_type: str, opset: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    schema = defs.get_schema(op_type, opset)
    return (tuple(f.type_str for f in schema.inputs), tuple(f.type_str for f in schema.outputs))


def _exists(op_type: str, opset: int) -> bool:
    try:
        defs.get_schema(op_type, opset)
    except defs.SchemaError:
        return False
    return True
