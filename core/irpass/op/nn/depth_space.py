"""``nn.depth_to_space`` and ``nn.space_to_depth``: move blocks of ``block_size`` x
``block_size`` pixels between the channel axis and the spatial axes (ONNX DepthToSpace /
SpaceToDepth), in layout NCHW or NHWC.

``mode`` orders the channels of a block: ``"DCR"`` (depth, column, row: the channel index
is ``(row * b + column) * C + c``) or ``"CRD"`` (``(c * b + row) * b + column``). TVM has
``mode`` on ``depth_to_space`` only; ONNX added it to SpaceToDepth in opset 28, so both have
it here (default ``"DCR"``, TVM's and ONNX's).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.attrs import Attrs
from ...ir.nodes import Call
from ...ir.op import AttrField, OpPattern, attr_choice
from ...ir.types import TensorType, Type
from .._common import (
    attr_layout,
    attr_positive_int,
    check_rank,
    make_call,
    register,
    tensor_arg,
    to_layout,
)

__all__ = ["depth_to_space", "space_to_depth"]

_ATTRS = (
    AttrField("block_size", attr_positive_int, doc="The side of the moved blocks."),
    AttrField("layout", attr_layout("NCHW", "NHWC"), "NCHW", doc="NCHW or NHWC."),
    AttrField("mode", attr_choice("DCR", "CRD"), "DCR", doc="Channel order in a block."),
)


def _nchw_shape(op: str, arg_types: tuple[Type, ...], attrs: Attrs) -> tuple[TensorType, tuple]:
    data = tensor_arg(arg_types[0], op, "data")
    check_rank(data, 4, op, "data", attrs["layout"])
    shape = tuple(data.shape[attrs["layout"].index(c)] for c in "NCHW")
    return data, shape


def _from_nchw(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    return tuple(shape["NCHW".index(c)] for c in layout)


def _depth_to_space_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data, (n, c, h, w) = _nchw_shape("nn.depth_to_space", arg_types, attrs)
    b = attrs["block_size"]
    # a symbolic channel count is assumed to be a multiple (the kernel checks it)
    if type(c) is int and c % (b * b):
        raise ValueError(
            f"nn.depth_to_space: the {c} channels of data {data} are not a multiple of "
            f"block_size**2 = {b * b}"
        )
    out = (n, c // (b * b), h * b, w * b)
    return TensorType(_from_nchw(out, attrs["layout"]), data.dtype)


def _depth_to_space_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    layout, b = attrs["layout"], attrs["block_size"]
    x = to_layout(args[0], layout, "NCHW")
    n, c, h, w = x.shape
    if attrs["mode"] == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    y = y.reshape(n, c // (b * b), h * b, w * b)
    return np.ascontiguousarray(to_layout(y, "NCHW", layout))


def _space_to_depth_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data, (n, c, h, w) = _nchw_shape("nn.space_to_depth", arg_types, attrs)
    b = attrs["block_size"]
    # symbolic sizes are assumed to be multiples (the kernel checks them)
    if (type(h) is int and h % b) or (type(w) is int and w % b):
        raise ValueError(
            f"nn.space_to_depth: the height {h} and width {w} of data {data} must be "
            f"multiples of block_size {b}"
        )
    out = (n, c * b * b, h // b, w // b)
    return TensorType(_from_nchw(out, attrs["layout"]), data.dtype)


def _space_to_depth_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    layout, b = attrs["layout"], attrs["block_size"]
    x = to_layout(args[0], layout, "NCHW")
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b)
    perm = (0, 3, 5, 1, 2, 4) if attrs["mode"] == "DCR" else (0, 1, 3, 5, 2, 4)
    y = y.transpose(perm).reshape(n, c * b * b, h // b, w // b)
    return np.ascontiguousarray(to_layout(y, "NCHW", layout))


register(
    "nn.depth_to_space",
    num_inputs=1,
    type_rel=_depth_to_space_rel,
    kernel=_depth_to_space_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=_ATTRS,
    doc="Move channels into block_size x block_size blocks of pixels (ONNX DepthToSpace).",
)
register(
    "nn.space_to_depth",
    num_inputs=1,
    type_rel=_space_to_depth_rel,
    kernel=_space_to_depth_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=_ATTRS,
    doc="Move block_size x block_size blocks of pixels into channels (ONNX SpaceToDepth).",
)


def depth_to_space(data: Any, block_size: int, layout: str = "NCHW", mode: str = "DCR") -> Call:
    """``data`` (4-D, ``layout``) with its channels spread over blocks of ``block_size`` x
    ``block_size`` pixels: C / b**2 channels, H * b rows, W * b columns; ``mode`` "DCR" or
    "CRD" orders the channels of a block (see the module docstring)."""
    return make_call(
        "nn.depth_to_space", [data], ["data"], block_size=block_size, layout=layout, mode=mode
    )


def space_to_depth(data: Any, block_size: int, layout: str = "NCHW", mode: str = "DCR") -> Call:
    """The inverse of :func:`depth_to_space`: blocks of ``block_size`` x ``block_size`` pixels
    become C * b**2 channels, H / b rows, W / b columns."""
    return make_call(
        "nn.space_to_depth", [data], ["data"], block_size=block_size, layout=layout, mode=mode
    )
