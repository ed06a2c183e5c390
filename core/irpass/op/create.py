"""Tensor creation: ``zeros``, ``ones``, ``full``, ``zeros_like``,
``ones_like`` and ``shape_of``.

``zeros`` and ``ones`` take no inputs (shape and dtype are attributes);
``full`` takes its fill value as a scalar input expression, as in Relay, and
its ``dtype`` defaults to the fill value's. ``shape_of`` gives the shape in
any dtype the IR knows, as TVM's does (``shape_of(x, "float32")`` is a float
tensor); :func:`shape_value` computes it, for the kernel and for FoldConstant.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.nodes import Call
from ..ir.op import AttrField, Op, OpPattern, attr_dtype, attr_ints, attr_optional_dtype
from ..ir.types import NUMPY_DTYPES, TensorType, Type
from ._common import make_call, register, tensor_arg

__all__ = ["zeros", "ones", "full", "zeros_like", "ones_like", "shape_of"]


def _attr_shape(value: Any, where: str) -> tuple[int, ...]:
    """A static shape: non-negative ints."""
    dims = attr_ints(value, where)
    for i, d in enumerate(dims):
        if d < 0:
            raise ValueError(f"{where}[{i}] must be >= 0, got {d}")
    return dims


def _const_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    return TensorType(attrs["shape"], attrs["dtype"])


def _filled_kernel(value: int):
    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        return np.full(attrs["shape"], value, dtype=attrs["dtype"])

    return kernel


_SHAPE_DTYPE = (
    AttrField("shape", _attr_shape, doc="The shape of the result."),
    AttrField("dtype", attr_dtype, "float32", doc="The dtype of the result."),
)

for _name, _value in (("zeros", 0), ("ones", 1)):
    register(
        _name,
        num_inputs=0,
        type_rel=_const_rel,
        kernel=_filled_kernel(_value),
        pattern=OpPattern.ELEMWISE,
        attrs=_SHAPE_DTYPE,
        doc=f"A tensor of ``shape`` and ``dtype`` filled with {_value}.",
    )


def zeros(shape: Any, dtype: Any = "float32") -> Call:
    """A tensor of ``shape`` filled with zeros."""
    return Call(Op.get("zeros"), [], {"shape": shape, "dtype": dtype})


def ones(shape: Any, dtype: Any = "float32") -> Call:
    """A tensor of ``shape`` filled with ones."""
    return Call(Op.get("ones"), [], {"shape": shape, "dtype": dtype})


def _full_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    fill = tensor_arg(arg_types[0], "full", "fill_value")
    if fill.ndim != 0:
        raise ValueError(f"full: fill_value must be a scalar (0-D tensor), got {fill}")
    return TensorType(attrs["shape"], attrs["dtype"] or fill.dtype)


def _full_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    fill = args[0]
    return np.full(attrs["shape"], fill, dtype=attrs["dtype"] or fill.dtype.name)


register(
    "full",
    num_inputs=1,
    type_rel=_full_rel,
    kernel=_full_kernel,
    pattern=OpPattern.ELEMWISE,
    attrs=(
        AttrField("shape", _attr_shape, doc="The shape of the result."),
        AttrField("dtype", attr_optional_dtype, "", doc='The dtype; "" means fill_value\'s.'),
    ),
    doc="A tensor of ``shape`` filled with the scalar input ``fill_value``.",
)


def full(fill_value: Any, shape: Any = None, dtype: Any = "") -> Call:
    """A tensor of ``shape`` filled with the scalar ``fill_value`` (an expression or number)."""
    attrs = {"dtype": dtype}
    if shape is not None:  # leaving it out lets the schema report it as required
        attrs["shape"] = shape
    return make_call("full", [fill_value], ["fill_value"], **attrs)


def _like_rel(name: str):
    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        return tensor_arg(arg_types[0], name, "data")

    return rel


def _like_kernel(value: int):
    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        return np.full(args[0].shape, value, dtype=args[0].dtype)

    return kernel


for _name, _value in (("zeros_like", 0), ("ones_like", 1)):
    register(
        _name,
        num_inputs=1,
        type_rel=_like_rel(_name),
        kernel=_like_kernel(_value),
        pattern=OpPattern.ELEMWISE,
        doc=f"A tensor of the type of ``data`` filled with {_value}.",
    )


def zeros_like(data: Any) -> Call:
    """Zeros with the shape and dtype of ``data``."""
    return make_call("zeros_like", [data], ["data"])


def ones_like(data: Any) -> Call:
    """Ones with the shape and dtype of ``data``."""
    return make_call("ones_like", [data], ["data"])


def _shape_of_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "shape_of", "data")
    return TensorType((data.ndim,), attrs["dtype"])


def shape_value(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """What ``shape_of`` gives for a tensor of ``shape``: a 1-D array of ``dtype``.

    Each dim is converted as a cast from int64 converts it (TVM's kernel casts too):
    it wraps around in an integer dtype too narrow for it, becomes the nearest float
    (``inf`` beyond float16's range) and ``True`` in bool unless it is 0.
    """
    with np.errstate(over="ignore"):  # float16 overflow: inf, as a cast gives
        return np.array(shape, dtype=np.int64).reshape(len(shape)).astype(NUMPY_DTYPES[dtype])


def _shape_of_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    return shape_value(args[0].shape, attrs["dtype"])


register(
    "shape_of",
    num_inputs=1,
    type_rel=_shape_of_rel,
    kernel=_shape_of_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(AttrField("dtype", attr_dtype, "int32", doc="The dtype of the result (any)."),),
    doc="The shape of ``data`` as a 1-D tensor of ``dtype``.",
)


def shape_of(data: Any, dtype: Any = "int32") -> Call:
    """The shape of ``data`` as a 1-D tensor of ``dtype`` (any dtype, as in TVM: each dim
    converted as a cast converts it, see :func:`shape_value`)."""
    return make_call("shape_of", [data], ["data"], dtype=dtype)
