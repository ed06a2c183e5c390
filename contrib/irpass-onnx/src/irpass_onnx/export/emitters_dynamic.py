"""The emitter of ``onnx.node``: an ONNX node imported with run-time shape operands (see
:mod:`irpass_onnx.frontend.dynamic`) is written back as it was imported."""

from __future__ import annotations

from typing import Any

from onnx import defs, helper

from ..frontend.dynamic import OP_NAME, node_of
from .builder import EmitContext, emitter

__all__: list[str] = []


@emitter(OP_NAME)
def _node(ctx: EmitContext) -> Any:
    node = node_of(ctx.attrs)
    if not _exists(node.op_type, ctx.opset):
        raise ctx.fail(f"{node.op_type} has run-time shape operands, so it is written as it "
                       f"was imported (at opset {ctx.attrs['opset']}), and opset {ctx.opset} "
                       f"has no {node.op_type}")
    inputs = [""] * len(node.input)
    for k, slot in enumerate(ctx.attrs["input_slots"]):
        inputs[slot] = ctx.input(k)
    while inputs and not inputs[-1]:
        inputs.pop()
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return ctx.emit(node.op_type, inputs, outputs=len(node.output), **attrs)


def _exists(op_type: str, opset: int) -> bool:
    try:
        defs.get_schema(op_type, opset)
    except defs.SchemaError:
        return False
    return True
