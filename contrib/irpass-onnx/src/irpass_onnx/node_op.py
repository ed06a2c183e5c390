"""The op ``onnx.node`` as the plugin registers it, without importing onnx.

The op's type relation, kernel and ``out_types`` converter live with the dynamic import
(:mod:`irpass_onnx.frontend.dynamic`), which imports onnx and numpy; this module hands
them over on first call, so registering the op at plugin load (every irpass command)
costs neither import. The op is only called on models the importer made, by which time
that module is imported anyway.
"""

from __future__ import annotations

import importlib
from typing import Any

from irpass.ir.op import AttrField, OpPattern, attr_bool, attr_int, attr_ints, attr_str
from irpass.plugins import OpSpec

__all__ = ["OP_NAME", "op_spec"]

#: The op's name (also :data:`irpass_onnx.frontend.dynamic.OP_NAME`).
OP_NAME = "onnx.node"


def _dynamic() -> Any:
    return importlib.import_module("irpass_onnx.frontend.dynamic")


def _type_rel(arg_types: tuple, attrs: Any) -> Any:
    return _dynamic()._type_rel(arg_types, attrs)


def _kernel(args: tuple, attrs: Any) -> Any:
    return _dynamic()._kernel(args, attrs)


def _attr_types(value: Any, where: str) -> Any:
    return _dynamic()._attr_types(value, where)


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
            AttrField("region", attr_bool, False),
        ),
        doc="An ONNX node whose shape-determining operands are run-time values (or a region "
            "of such nodes): evaluated by converting the node with the actual values, its "
            "output types the model's.",
    )
