"""Tensor creation: ``zeros``, ``ones``, ``full``, ``zeros_like``,
``ones_like`` and ``shape_of``.

``zeros`` and ``ones`` take no inputs (shape and dtype are attributes);
``full`` takes its fill value as a scalar input expression, as in Relay, and
its ``dtype`` defaults to the fill value's. ``shape_of`` gives the shape in
any dtype the IR knows, as TVM's does (``shape_of(x, "float32")`` is a float
tensor); :func:`shape_value` computes it, for the kernel and for FoldConstant.

``arange`` takes its ``start``/``stop``/``step`` as attributes (Relay takes expressions;
they decide the shape; ``start`` and ``stop`` may be symbolic dims: ``arange(seq)``).
``one_hot`` follows Relay: an index
outside ``[0, depth)`` (a negative one too) selects no position, so its row is all
``off_value``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.dims import Dim, DimExpr, dim_max
from ..ir.nodes import Call
from ..ir.op import (
    AttrField,
    Op,
    OpPattern,
    attr_dim,
    attr_dims,
    attr_dtype,
    attr_int,
    attr_optional_dtype,
)
from ..ir.types import NUMPY_DTYPES, TensorType, Type
from ._common import (
    FLOAT_DTYPES,
    INT_DTYPES,
    NUMERIC_DTYPES,
    check_dtype,
    make_call,
    register,
    tensor_arg,
)

__all__ = ["zeros", "ones", "full", "zeros_like", "ones_like", "shape_of", "dims_tensor",
           "arange", "one_hot", "arange_length"]


def _attr_shape(value: Any, where: str) -> tuple[Dim, ...]:
    """A shape: non-negative ints or symbolic dims."""
    dims = attr_dims(value, where)
    for i, d in enumerate(dims):
        if type(d) is int and d < 0:
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


# -- dims as a tensor --------------------------------------------------------------------------


def _dims_tensor_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    return TensorType((len(attrs["dims"]),), attrs["dtype"])


def _dims_tensor_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    # the evaluator has put the sizes in: the dims are ints here
    return shape_value(tuple(attrs["dims"]), attrs["dtype"])


register(
    "dims_tensor",
    num_inputs=0,
    type_rel=_dims_tensor_rel,
    kernel=_dims_tensor_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=(
        AttrField("dims", attr_dims, doc="The values: ints and symbolic dims."),
        AttrField("dtype", attr_dtype, "int64", doc="The dtype of the result (any)."),
    ),
    doc="The values of ``dims`` (symbolic sizes too) as a 1-D tensor of ``dtype``, as "
    "Relax's ``shape_to_tensor`` of a ``ShapeExpr``: what a computation on ``shape_of`` of "
    "a tensor with symbolic dims folds to (``take(shape_of(x), 1)`` of ``x: (n, seq)`` is "
    "``dims_tensor(dims=[seq])``).",
)


def dims_tensor(dims: Any, dtype: Any = "int64") -> Call:
    """``dims`` (ints and symbolic dims) as a 1-D tensor of ``dtype``, computed at run time
    from the sizes the inputs give."""
    return make_call("dims_tensor", [], [], dims=dims, dtype=dtype)



# -- arange ------------------------------------------------------------------------------------


def _attr_number(value: Any, where: str) -> int | float:
    """An int (kept exact: int64 ranges beyond 2**53) or a float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{where} must be a number, got {value!r}")
    return int(value) if isinstance(value, (int, np.integer)) else float(value)


def _attr_bound(value: Any, where: str) -> int | float | DimExpr:
    """A number or a symbolic dim (an arange bound: ``arange(seq)``)."""
    if isinstance(value, DimExpr):
        return value
    return _attr_number(value, where)


def _attr_optional_bound(value: Any, where: str) -> int | float | DimExpr | None:
    return None if value is None else _attr_bound(value, where)


def _attr_optional_number(value: Any, where: str) -> int | float | None:
    return None if value is None else _attr_number(value, where)


def _arange_bounds(attrs: Attrs) -> tuple[Any, Any, int | float]:
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    if stop is None:  # arange(n): 0 .. n
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be 0")
    if isinstance(start, DimExpr) or isinstance(stop, DimExpr):
        # symbolic bounds are integers; the length is symbolic too (see arange_length)
        for name, v in (("start", start), ("stop", stop), ("step", step)):
            if isinstance(v, float) and v != int(v):
                raise ValueError(
                    f"arange: {name} {v} is not an integer (the other bound is symbolic)"
                )
        return (
            start if isinstance(start, DimExpr) else int(start),
            stop if isinstance(stop, DimExpr) else int(stop),
            int(step),
        )
    if attrs["dtype"] in INT_DTYPES:
        for name, v in (("start", start), ("stop", stop), ("step", step)):
            if v != int(v):
                raise ValueError(f"arange: {name} {v} is not an integer (dtype {attrs['dtype']})")
        return int(start), int(stop), int(step)
    return start, stop, step


def arange_length(start: Any, stop: Any, step: int | float) -> Dim:
    """How many elements ``arange`` gives: ``max(ceil((stop - start) / step), 0)``, exact for
    ints (and symbolic for symbolic bounds: ``arange(seq)`` has ``seq``), in float64
    otherwise."""
    if all(isinstance(v, int) for v in (start, stop, step)):
        return max(-((start - stop) // step), 0)
    if isinstance(start, DimExpr) or isinstance(stop, DimExpr):
        # the dims module divides by positive constants only: flip a negative step
        diff = stop - start if step > 0 else start - stop
        k = abs(int(step))
        return dim_max((diff + (k - 1)) // k, 0)
    n = math.ceil((float(stop) - float(start)) / float(step))
    return max(n, 0)


def _arange_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    dtype = attrs["dtype"]
    if dtype not in NUMERIC_DTYPES:
        raise TypeError(f"arange: dtype must be a numeric (non-bool) dtype, got {dtype!r}")
    return TensorType((arange_length(*_arange_bounds(attrs)),), dtype)


def _arange_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    start, stop, step = _arange_bounds(attrs)
    n = arange_length(start, stop, step)
    dtype = attrs["dtype"]
    if dtype in FLOAT_DTYPES:
        # element i is start + i * step, rounded once into the dtype
        return (float(start) + np.arange(n, dtype=np.float64) * float(step)).astype(dtype)
    with np.errstate(over="ignore"):
        values = np.int64(start) + np.arange(n, dtype=np.int64) * np.int64(step)
    return values.astype(dtype)


register(
    "arange",
    num_inputs=0,
    type_rel=_arange_rel,
    kernel=_arange_kernel,
    pattern=OpPattern.INJECTIVE,
    attrs=(
        AttrField("start", _attr_bound, doc="The first value (the stop if stop is None)."),
        AttrField("stop", _attr_optional_bound, None, doc="The bound (excluded); None: start."),
        AttrField("step", _attr_number, 1, doc="The increment (not 0; negative counts down)."),
        AttrField("dtype", attr_dtype, "float32", doc="The dtype of the result."),
    ),
    doc="``start, start + step, ...`` up to ``stop`` (excluded): ONNX Range, numpy.arange.",
)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = "float32") -> Call:
    """A 1-D tensor ``start + i * step`` for ``i`` in ``0 .. ceil((stop - start) / step) - 1``
    (``arange(n)``: ``0 .. n - 1``), as ``numpy.arange`` and ONNX Range.

    The bounds are numbers (attributes: they decide the shape); an integer ``dtype`` needs
    integral bounds, which it keeps exact.
    """
    return Call(Op.get("arange"), [], {"start": start, "stop": stop, "step": step,
                                       "dtype": dtype})


# -- one_hot -----------------------------------------------------------------------------------


def _one_hot_axis(axis: int, rank: int) -> int:
    if not -rank - 1 <= axis <= rank:
        raise ValueError(
            f"one_hot: axis {axis} is out of range [{-rank - 1}, {rank}] for {rank}-D indices"
        )
    return axis + rank + 1 if axis < 0 else axis


def _one_hot_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    indices = tensor_arg(arg_types[0], "one_hot", "indices")
    check_dtype(indices, INT_DTYPES, "one_hot", "indices")
    for i, name in ((1, "on_value"), (2, "off_value")):
        value = tensor_arg(arg_types[i], "one_hot", name)
        if value.ndim != 0:
            raise ValueError(f"one_hot: {name} must be a scalar (0-D tensor), got {value}")
    depth = attrs["depth"]
    if type(depth) is int and depth < 0:
        raise ValueError(f"one_hot: depth must be >= 0, got {depth}")
    axis = _one_hot_axis(attrs["axis"], indices.ndim)
    return TensorType(indices.shape[:axis] + (depth,) + indices.shape[axis:], attrs["dtype"])


def _one_hot_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    indices, on, off = args
    depth = attrs["depth"]
    axis = _one_hot_axis(attrs["axis"], indices.ndim)
    where = np.arange(depth).reshape((depth,) + (1,) * (indices.ndim - axis))
    hit = np.expand_dims(indices, axis) == where
    dtype = attrs["dtype"]
    return np.where(hit, np.asarray(on).astype(dtype), np.asarray(off).astype(dtype))


register(
    "one_hot",
    num_inputs=3,
    type_rel=_one_hot_rel,
    kernel=_one_hot_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    attrs=(
        AttrField("depth", attr_dim, doc="The length of the new axis (may be symbolic)."),
        AttrField("axis", attr_int, -1, doc="Where the new axis goes (-1: last)."),
        AttrField("dtype", attr_dtype, "float32", doc="The dtype of the result."),
    ),
    doc="``on_value`` where the new axis's position equals the index, ``off_value`` elsewhere.",
)


def one_hot(
    indices: Any, on_value: Any, off_value: Any, depth: int, axis: int = -1,
    dtype: Any = "float32",
) -> Call:
    """A tensor with a new axis of length ``depth`` at ``axis``: ``on_value`` (a scalar) at
    the position each index names, ``off_value`` elsewhere, cast to ``dtype``. An index
    outside ``[0, depth)`` gives a row of ``off_value``."""
    return make_call(
        "one_hot", [indices, on_value, off_value], ["indices", "on_value", "off_value"],
        depth=depth, axis=axis, dtype=dtype,
    )
