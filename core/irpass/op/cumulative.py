"""Cumulative (scan) ops: ``cumsum`` and ``cumprod``, with Relay's signature
``cumsum(data, axis=None, dtype=None, exclusive=False)``.

``axis`` None scans the flattened tensor (the result is 1-D). ``dtype`` is the
dtype of the result and of the running total (the data is converted to it
first); None keeps the input's. ``exclusive`` leaves each element out of its
own total: element ``i`` is the sum (product) of the ones before it, so the
first is 0 (1). Integers wrap around in their dtype; float16 totals are kept
in float32 and rounded once at the end, as the reductions do. A reversed scan
(ONNX's ``reverse``) is a scan of the reversed axis, reversed back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.nodes import Call
from ..ir.op import AttrField, OpPattern, attr_bool, attr_optional_dtype, attr_optional_int
from ..ir.types import TensorType, Type
from ._common import (
    NUMERIC_DTYPES,
    accumulate_dtype,
    check_dtype,
    make_call,
    normalize_axis,
    register,
    result,
    shape_size,
    tensor_arg,
)

__all__ = ["cumsum", "cumprod"]


def _scan_rel(name: str):
    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types[0], name, "data")
        dtype = attrs["dtype"] or data.dtype
        check_dtype(data, NUMERIC_DTYPES, name, "data")
        check_dtype(TensorType((), dtype), NUMERIC_DTYPES, name, "dtype")
        if attrs["axis"] is None:
            return TensorType((shape_size(data.shape),), dtype)
        normalize_axis(attrs["axis"], data.ndim, name)
        return TensorType(data.shape, dtype)

    return rel


def _scan_kernel(fn: Any, identity: int):
    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        x = args[0]
        dtype = attrs["dtype"] or x.dtype.name
        axis = attrs["axis"]
        if axis is None:
            x, axis = x.reshape(-1), 0
        wide = accumulate_dtype(dtype)
        # dtype= keeps numpy from widening small integers (they must wrap in their dtype)
        out = fn(x.astype(wide, copy=False), axis=axis, dtype=wide)
        if attrs["exclusive"] and out.shape[axis]:
            shifted = np.full_like(out, identity)
            n = out.shape[axis]
            dst = [slice(None)] * out.ndim
            src = [slice(None)] * out.ndim
            dst[axis], src[axis] = slice(1, n), slice(0, n - 1)
            shifted[tuple(dst)] = out[tuple(src)]
            out = shifted
        return result(out, dtype)

    return kernel


_ATTRS = (
    AttrField("axis", attr_optional_int, None, doc="The axis to scan; None: the flattened data."),
    AttrField("dtype", attr_optional_dtype, "", doc='The result dtype; "" (None): the input\'s.'),
    AttrField("exclusive", attr_bool, False, doc="Leave each element out of its own total."),
)

for _name, _fn, _identity, _words in (
    ("cumsum", np.cumsum, 0, "sum"),
    ("cumprod", np.cumprod, 1, "product"),
):
    register(
        _name,
        num_inputs=1,
        type_rel=_scan_rel(_name),
        kernel=_scan_kernel(_fn, _identity),
        pattern=OpPattern.OPAQUE,
        attrs=_ATTRS,
        doc=f"Running {_words} along ``axis`` (None: of the flattened data).",
    )


def cumsum(data: Any, axis: int | None = None, dtype: Any = None, exclusive: bool = False) -> Call:
    """The running sum of ``data`` along ``axis`` (None: flattened), in ``dtype`` (None: the
    input's); ``exclusive`` leaves each element out of its own sum."""
    return make_call("cumsum", [data], ["data"], axis=axis, dtype=dtype, exclusive=exclusive)


def cumprod(
    data: Any, axis: int | None = None, dtype: Any = None, exclusive: bool = False
) -> Call:
    """The running product of ``data`` along ``axis`` (None: flattened), in ``dtype`` (None:
    the input's); ``exclusive`` leaves each element out of its own product."""
    return make_call("cumprod", [data], ["data"], axis=axis, dtype=dtype, exclusive=exclusive)
