"""``nn.pad``: pad a tensor with a constant, its edge values or a reflection.

``pad_value`` is an attribute (a number) here; Relay takes it as an input
expression. The builder accepts a scalar constant expression too and reads
its value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.attrs import Attrs
from ...ir.nodes import Call, Constant
from ...ir.op import AttrField, OpPattern, attr_choice, attr_float
from ...ir.types import TensorType, Type
from .._common import attr_pad_width, known_ge, make_call, register, tensor_arg

__all__ = ["pad"]


def _pad_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "nn.pad", "data")
    width = attrs["pad_width"]
    if len(width) != data.ndim:
        raise ValueError(
            f"nn.pad: pad_width has {len(width)} (before, after) pairs but data is {data}; "
            "give one pair per axis"
        )
    mode = attrs["pad_mode"]
    for axis, ((before, after), size) in enumerate(zip(width, data.shape, strict=True)):
        # a symbolic size: only a provable error is one (the kernel checks at run time)
        if mode == "reflect" and (known_ge(before, size) or known_ge(after, size)) and (
            before or after
        ):
            raise ValueError(
                f"nn.pad: reflect padding {(before, after)} on axis {axis} must be smaller "
                f"than the axis size {size}"
            )
        if mode == "edge" and size == 0 and (before or after):
            raise ValueError(f"nn.pad: edge padding needs a non-empty axis {axis} to copy from")
    shape = tuple(size + b + a for size, (b, a) in zip(data.shape, width, strict=True))
    return TensorType(shape, data.dtype)


def _pad_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    x = args[0]
    mode = attrs["pad_mode"]
    if mode == "constant":
        value = np.array(attrs["pad_value"]).astype(x.dtype)
        return np.pad(x, attrs["pad_width"], mode="constant", constant_values=value)
    return np.pad(x, attrs["pad_width"], mode=mode)


register(
    "nn.pad",
    num_inputs=1,
    type_rel=_pad_rel,
    kernel=_pad_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(
        AttrField("pad_width", attr_pad_width, doc="One (before, after) pair per axis."),
        AttrField("pad_value", attr_float, 0.0, doc="The fill value for constant mode."),
        AttrField(
            "pad_mode",
            attr_choice("constant", "edge", "reflect"),
            "constant",
            doc="constant, edge (repeat the border) or reflect (mirror without the border).",
        ),
    ),
    doc="Pad each axis by (before, after) elements.",
)


def pad(data: Any, pad_width: Any, pad_value: Any = 0.0, pad_mode: str = "constant") -> Call:
    """``data`` padded by ``pad_width`` ((before, after) per axis).

    ``pad_value`` is a number or a scalar constant expression (stored as an
    attribute; Relay keeps it as an input).
    """
    if isinstance(pad_value, Constant):
        if pad_value.data.size != 1:
            raise ValueError(f"nn.pad: pad_value must be a scalar, got {pad_value.data.shape}")
        pad_value = pad_value.data.reshape(()).item()
    elif not isinstance(pad_value, (int, float, np.integer, np.floating)) or isinstance(
        pad_value, bool
    ):
        raise TypeError(
            f"nn.pad: pad_value must be a number or a scalar constant, got {pad_value!r} "
            "(non-constant pad values are not supported: it is an attribute here)"
        )
    return make_call(
        "nn.pad", [data], ["data"], pad_width=pad_width, pad_value=pad_value, pad_mode=pad_mode
    )
