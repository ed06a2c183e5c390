"""Elementwise and broadcasting ops: unary math (including ``erf``, the
trigonometric and hyperbolic functions and their inverses), rounding
(``floor``, ``ceil``, ``trunc``, ``round``), ``sign``, ``isnan``/``isinf``,
binary arithmetic (with ``floor_mod``/``trunc_mod``), comparisons, logical
and bitwise ops, shifts, ``where``, ``clip``, ``cast`` and
``reinterpret``.

Binary ops need both operands to have the same dtype (there is no implicit
promotion, as in Relay) and broadcast their shapes with numpy's rules.
Integer ``divide`` truncates toward zero, as Relay does (numpy's ``//``
floors); an integer division by zero gives 0, numpy's convention.
``clip`` clips an integer tensor in its own dtype (exact for int64 and
uint64) to its bounds rounded inward. The builders ``abs`` etc. shadow
Python builtins inside this module only.

The remainders follow numpy: ``floor_mod`` is ``numpy.remainder`` (the sign of
the divisor, Python's ``%``), ``trunc_mod`` is ``numpy.fmod`` (the sign of the
dividend, C's ``%``); an integer remainder by zero is 0, a float one NaN.
``round`` rounds halves to even. The rounding ops leave integers as they are.
Shifts by a negative amount or by at least the bit width give 0 (-1 for a
right shift of a negative number), as numpy and ONNX BitShift define them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.nodes import Call
from ..ir.op import AttrField, OpPattern, attr_dtype, attr_float
from ..ir.types import DTYPE_BITS, TensorType, Type, numpy_dtype
from ._common import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    NUMERIC_DTYPES,
    accumulate_dtype,
    broadcast_shapes,
    check_dtype,
    check_same_dtype,
    make_call,
    register,
    result,
    tensor_arg,
)
from ._erf import erf as _erf

__all__ = [
    "abs",
    "log",
    "exp",
    "sqrt",
    "tanh",
    "sigmoid",
    "erf",
    "negative",
    "add",
    "subtract",
    "multiply",
    "divide",
    "maximum",
    "minimum",
    "power",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "where",
    "clip",
    "cast",
    "reinterpret",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "floor",
    "ceil",
    "trunc",
    "round",
    "sign",
    "isnan",
    "isinf",
    "floor_mod",
    "trunc_mod",
    "logical_not",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_not",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "left_shift",
    "right_shift",
]

# -- unary elementwise -------------------------------------------------------------------------


def _unary_rel(name: str, allowed: frozenset[str]) -> Callable[[tuple[Type, ...], Attrs], Type]:
    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types[0], name, "data")
        check_dtype(data, allowed, name, "data")
        return data

    return rel


def _float_kernel(fn: Callable[[np.ndarray], Any]) -> Callable[[tuple, Attrs], np.ndarray]:
    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        x = args[0]
        # float16 math is done in float32, then rounded back: numpy's float16
        # loops are already widened internally, this just makes it explicit.
        return result(fn(x.astype(accumulate_dtype(x.dtype.name), copy=False)), x.dtype)

    return kernel


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp of -|x| never overflows; the two branches are the same function.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _same_dtype_kernel(fn: Callable[[np.ndarray], Any]) -> Callable[[tuple, Attrs], np.ndarray]:
    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        return result(fn(args[0]), args[0].dtype)

    return kernel


_UNARY_DOCS = {
    "abs": "Elementwise absolute value.",
    "log": "Elementwise natural logarithm (float dtypes only).",
    "exp": "Elementwise exponential (float dtypes only).",
    "sqrt": "Elementwise square root (float dtypes only).",
    "tanh": "Elementwise hyperbolic tangent (float dtypes only).",
    "sigmoid": "Elementwise logistic function 1 / (1 + exp(-x)) (float dtypes only).",
    "erf": "Elementwise Gauss error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt "
    "(float dtypes only).",
    "negative": "Elementwise negation.",
}

for _name, _fn in (
    ("log", np.log),
    ("exp", np.exp),
    ("sqrt", np.sqrt),
    ("tanh", np.tanh),
    ("sigmoid", _sigmoid),
    ("erf", _erf),
):
    register(
        _name,
        num_inputs=1,
        type_rel=_unary_rel(_name, FLOAT_DTYPES),
        kernel=_float_kernel(_fn),
        pattern=OpPattern.ELEMWISE,
        doc=_UNARY_DOCS[_name],
    )
for _name, _fn in (("abs", np.abs), ("negative", np.negative)):
    register(
        _name,
        num_inputs=1,
        type_rel=_unary_rel(_name, NUMERIC_DTYPES),
        kernel=_same_dtype_kernel(_fn),
        pattern=OpPattern.ELEMWISE,
        doc=_UNARY_DOCS[_name],
    )


def abs(data: Any) -> Call:  # noqa: A001 - Relay's name
    """Elementwise absolute value of ``data``."""
    return make_call("abs", [data], ["data"])


def log(data: Any) -> Call:
    """Elementwise natural logarithm of ``data`` (a float tensor)."""
    return make_call("log", [data], ["data"])


def exp(data: Any) -> Call:
    """Elementwise exponential of ``data`` (a float tensor)."""
    return make_call("exp", [data], ["data"])


def sqrt(data: Any) -> Call:
    """Elementwise square root of ``data`` (a float tensor)."""
    return make_call("sqrt", [data], ["data"])


def tanh(data: Any) -> Call:
    """Elementwise hyperbolic tangent of ``data`` (a float tensor)."""
    return make_call("tanh", [data], ["data"])


def sigmoid(data: Any) -> Call:
    """Elementwise logistic sigmoid of ``data`` (a float tensor)."""
    return make_call("sigmoid", [data], ["data"])


def erf(data: Any) -> Call:
    """Elementwise Gauss error function of ``data`` (a float tensor).

    Computed in float64 with W. J. Cody's rational approximations (about 1e-16
    relative error), then rounded to the input dtype.
    """
    return make_call("erf", [data], ["data"])


def negative(data: Any) -> Call:
    """Elementwise ``-data``."""
    return make_call("negative", [data], ["data"])


# -- trigonometric, rounding, sign and classification ------------------------------------------

_TRIG = {
    "sin": (np.sin, "sine"),
    "cos": (np.cos, "cosine"),
    "tan": (np.tan, "tangent"),
    "asin": (np.arcsin, "arcsine"),
    "acos": (np.arccos, "arccosine"),
    "atan": (np.arctan, "arctangent"),
    "sinh": (np.sinh, "hyperbolic sine"),
    "cosh": (np.cosh, "hyperbolic cosine"),
    "asinh": (np.arcsinh, "inverse hyperbolic sine"),
    "acosh": (np.arccosh, "inverse hyperbolic cosine"),
    "atanh": (np.arctanh, "inverse hyperbolic tangent"),
}
for _name, (_fn, _words) in _TRIG.items():
    register(
        _name,
        num_inputs=1,
        type_rel=_unary_rel(_name, FLOAT_DTYPES),
        kernel=_float_kernel(_fn),
        pattern=OpPattern.ELEMWISE,
        doc=f"Elementwise {_words} (float dtypes only; NaN outside the domain).",
    )


def _rounding_kernel(fn: Callable[[np.ndarray], Any]) -> Callable[[tuple, Attrs], np.ndarray]:
    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        x = args[0]
        # integers are already whole (numpy's floor of an int array would be float64)
        return x.copy() if x.dtype.kind in "iu" else result(fn(x), x.dtype)

    return kernel


_ROUNDING = {
    "floor": (np.floor, "the largest integer <= x"),
    "ceil": (np.ceil, "the smallest integer >= x"),
    "trunc": (np.trunc, "x rounded toward zero"),
    "round": (np.rint, "x rounded to the nearest integer, halves to even"),
}
for _name, (_fn, _words) in _ROUNDING.items():
    register(
        _name,
        num_inputs=1,
        type_rel=_unary_rel(_name, NUMERIC_DTYPES),
        kernel=_rounding_kernel(_fn),
        pattern=OpPattern.ELEMWISE,
        doc=f"Elementwise {_words} (integers are returned unchanged).",
    )
register(
    "sign",
    num_inputs=1,
    type_rel=_unary_rel("sign", NUMERIC_DTYPES),
    kernel=_same_dtype_kernel(np.sign),
    pattern=OpPattern.ELEMWISE,
    doc="Elementwise sign: -1, 0 or 1 in the input's dtype (NaN stays NaN).",
)


def _classify_rel(name: str) -> Callable[[tuple[Type, ...], Attrs], Type]:
    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types[0], name, "data")
        check_dtype(data, FLOAT_DTYPES, name, "data")
        return TensorType(data.shape, "bool")

    return rel


def _classify_kernel(fn: Callable[[np.ndarray], Any]) -> Callable[[tuple, Attrs], np.ndarray]:
    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        return result(fn(args[0]), "bool")

    return kernel


for _name, _fn, _doc in (
    ("isnan", np.isnan, "Elementwise test for NaN (bool result; float dtypes only)."),
    ("isinf", np.isinf, "Elementwise test for +inf or -inf (bool result; float dtypes only)."),
):
    register(
        _name,
        num_inputs=1,
        type_rel=_classify_rel(_name),
        kernel=_classify_kernel(_fn),
        pattern=OpPattern.ELEMWISE,
        doc=_doc,
    )


def sin(data: Any) -> Call:
    """Elementwise sine of ``data`` (a float tensor, radians)."""
    return make_call("sin", [data], ["data"])


def cos(data: Any) -> Call:
    """Elementwise cosine of ``data`` (a float tensor, radians)."""
    return make_call("cos", [data], ["data"])


def tan(data: Any) -> Call:
    """Elementwise tangent of ``data`` (a float tensor, radians)."""
    return make_call("tan", [data], ["data"])


def asin(data: Any) -> Call:
    """Elementwise arcsine of ``data`` (a float tensor; NaN outside [-1, 1])."""
    return make_call("asin", [data], ["data"])


def acos(data: Any) -> Call:
    """Elementwise arccosine of ``data`` (a float tensor; NaN outside [-1, 1])."""
    return make_call("acos", [data], ["data"])


def atan(data: Any) -> Call:
    """Elementwise arctangent of ``data`` (a float tensor)."""
    return make_call("atan", [data], ["data"])


def sinh(data: Any) -> Call:
    """Elementwise hyperbolic sine of ``data`` (a float tensor)."""
    return make_call("sinh", [data], ["data"])


def cosh(data: Any) -> Call:
    """Elementwise hyperbolic cosine of ``data`` (a float tensor)."""
    return make_call("cosh", [data], ["data"])


def asinh(data: Any) -> Call:
    """Elementwise inverse hyperbolic sine of ``data`` (a float tensor)."""
    return make_call("asinh", [data], ["data"])


def acosh(data: Any) -> Call:
    """Elementwise inverse hyperbolic cosine of ``data`` (a float tensor; NaN below 1)."""
    return make_call("acosh", [data], ["data"])


def atanh(data: Any) -> Call:
    """Elementwise inverse hyperbolic tangent of ``data`` (a float tensor; NaN outside
    [-1, 1], +-inf at +-1)."""
    return make_call("atanh", [data], ["data"])


def floor(data: Any) -> Call:
    """The largest integer <= each element of ``data`` (integers unchanged)."""
    return make_call("floor", [data], ["data"])


def ceil(data: Any) -> Call:
    """The smallest integer >= each element of ``data`` (integers unchanged)."""
    return make_call("ceil", [data], ["data"])


def trunc(data: Any) -> Call:
    """Each element of ``data`` rounded toward zero (integers unchanged)."""
    return make_call("trunc", [data], ["data"])


def round(data: Any) -> Call:  # noqa: A001 - Relay's name
    """Each element of ``data`` rounded to the nearest integer, halves to even
    (integers unchanged)."""
    return make_call("round", [data], ["data"])


def sign(data: Any) -> Call:
    """The sign of each element of ``data``: -1, 0 or 1 in its dtype."""
    return make_call("sign", [data], ["data"])


def isnan(data: Any) -> Call:
    """Whether each element of ``data`` (a float tensor) is NaN, as a bool tensor."""
    return make_call("isnan", [data], ["data"])


def isinf(data: Any) -> Call:
    """Whether each element of ``data`` (a float tensor) is +inf or -inf, as a bool tensor."""
    return make_call("isinf", [data], ["data"])


# -- binary broadcasting -----------------------------------------------------------------------


def _binary_rel(
    name: str, allowed: frozenset[str], out_dtype: str | None = None
) -> Callable[[tuple[Type, ...], Attrs], Type]:
    def rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
        lhs = tensor_arg(arg_types[0], name, "lhs")
        rhs = tensor_arg(arg_types[1], name, "rhs")
        dtype = check_same_dtype(name, ("lhs", lhs), ("rhs", rhs))
        check_dtype(lhs, allowed, name, "lhs")
        shape = broadcast_shapes(name, ("lhs", lhs.shape), ("rhs", rhs.shape))
        return TensorType(shape, out_dtype or dtype)

    return rel


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.name in INT_DTYPES:
        q = np.floor_divide(a, b)
        # floor and truncation differ when the division is inexact and the
        # operands have opposite signs: step the quotient back toward zero.
        inexact = np.remainder(a, b) != 0
        return q + (inexact & ((a < 0) != (b < 0))).astype(q.dtype)
    return np.true_divide(a, b)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    try:
        return np.power(a, b)
    except ValueError as err:  # numpy refuses negative integer exponents
        raise ValueError(f"power: {err}") from None


def _binary_kernel(fn: Callable[[np.ndarray, np.ndarray], Any], bool_out: bool = False):
    def kernel(args: tuple, attrs: Attrs) -> np.ndarray:
        a, b = args
        return result(fn(a, b), "bool" if bool_out else a.dtype)

    return kernel


_BINARY = {
    "add": (np.add, NUMERIC_DTYPES, "Elementwise ``lhs + rhs`` with broadcasting."),
    "subtract": (np.subtract, NUMERIC_DTYPES, "Elementwise ``lhs - rhs`` with broadcasting."),
    "multiply": (np.multiply, NUMERIC_DTYPES, "Elementwise ``lhs * rhs`` with broadcasting."),
    "divide": (
        _divide,
        NUMERIC_DTYPES,
        "Elementwise ``lhs / rhs`` with broadcasting; integers truncate toward zero "
        "(x / 0 is 0 for integers).",
    ),
    "power": (_power, NUMERIC_DTYPES, "Elementwise ``lhs ** rhs`` with broadcasting."),
    "maximum": (np.maximum, ALL_DTYPES, "Elementwise maximum with broadcasting."),
    "minimum": (np.minimum, ALL_DTYPES, "Elementwise minimum with broadcasting."),
}
_COMPARE = {
    "equal": (np.equal, "Elementwise ``lhs == rhs`` (bool result) with broadcasting."),
    "not_equal": (np.not_equal, "Elementwise ``lhs != rhs`` (bool result) with broadcasting."),
    "less": (np.less, "Elementwise ``lhs < rhs`` (bool result) with broadcasting."),
    "less_equal": (np.less_equal, "Elementwise ``lhs <= rhs`` (bool result) with broadcasting."),
    "greater": (np.greater, "Elementwise ``lhs > rhs`` (bool result) with broadcasting."),
    "greater_equal": (
        np.greater_equal,
        "Elementwise ``lhs >= rhs`` (bool result) with broadcasting.",
    ),
}

for _name, (_fn, _allowed, _doc) in _BINARY.items():
    register(
        _name,
        num_inputs=2,
        type_rel=_binary_rel(_name, _allowed),
        kernel=_binary_kernel(_fn),
        pattern=OpPattern.BROADCAST,
        doc=_doc,
    )
for _name, (_fn, _doc) in _COMPARE.items():
    register(
        _name,
        num_inputs=2,
        type_rel=_binary_rel(_name, ALL_DTYPES, out_dtype="bool"),
        kernel=_binary_kernel(_fn, bool_out=True),
        pattern=OpPattern.BROADCAST,
        doc=_doc,
    )


def add(lhs: Any, rhs: Any) -> Call:
    """``lhs + rhs`` elementwise, with numpy broadcasting."""
    return make_call("add", [lhs, rhs], ["lhs", "rhs"])


def subtract(lhs: Any, rhs: Any) -> Call:
    """``lhs - rhs`` elementwise, with numpy broadcasting."""
    return make_call("subtract", [lhs, rhs], ["lhs", "rhs"])


def multiply(lhs: Any, rhs: Any) -> Call:
    """``lhs * rhs`` elementwise, with numpy broadcasting."""
    return make_call("multiply", [lhs, rhs], ["lhs", "rhs"])


def divide(lhs: Any, rhs: Any) -> Call:
    """``lhs / rhs`` elementwise; integer division truncates toward zero."""
    return make_call("divide", [lhs, rhs], ["lhs", "rhs"])


def power(lhs: Any, rhs: Any) -> Call:
    """``lhs ** rhs`` elementwise, with numpy broadcasting."""
    return make_call("power", [lhs, rhs], ["lhs", "rhs"])


def maximum(lhs: Any, rhs: Any) -> Call:
    """The elementwise maximum of ``lhs`` and ``rhs``."""
    return make_call("maximum", [lhs, rhs], ["lhs", "rhs"])


def minimum(lhs: Any, rhs: Any) -> Call:
    """The elementwise minimum of ``lhs`` and ``rhs``."""
    return make_call("minimum", [lhs, rhs], ["lhs", "rhs"])


def equal(lhs: Any, rhs: Any) -> Call:
    """``lhs == rhs`` elementwise, as a bool tensor."""
    return make_call("equal", [lhs, rhs], ["lhs", "rhs"])


def not_equal(lhs: Any, rhs: Any) -> Call:
    """``lhs != rhs`` elementwise, as a bool tensor."""
    return make_call("not_equal", [lhs, rhs], ["lhs", "rhs"])


def less(lhs: Any, rhs: Any) -> Call:
    """``lhs < rhs`` elementwise, as a bool tensor."""
    return make_call("less", [lhs, rhs], ["lhs", "rhs"])


def less_equal(lhs: Any, rhs: Any) -> Call:
    """``lhs <= rhs`` elementwise, as a bool tensor."""
    return make_call("less_equal", [lhs, rhs], ["lhs", "rhs"])


def greater(lhs: Any, rhs: Any) -> Call:
    """``lhs > rhs`` elementwise, as a bool tensor."""
    return make_call("greater", [lhs, rhs], ["lhs", "rhs"])


def greater_equal(lhs: Any, rhs: Any) -> Call:
    """``lhs >= rhs`` elementwise, as a bool tensor."""
    return make_call("greater_equal", [lhs, rhs], ["lhs", "rhs"])


# -- remainders, logic, bits ------------------------------------------------------------------

_BOOL = frozenset({"bool"})

_BITWISE = {
    "floor_mod": (
        np.remainder,
        NUMERIC_DTYPES,
        "Elementwise remainder of ``lhs / rhs`` rounded toward -inf (the sign of ``rhs``, "
        "numpy.remainder); x mod 0 is 0 for integers, NaN for floats.",
    ),
    "trunc_mod": (
        np.fmod,
        NUMERIC_DTYPES,
        "Elementwise remainder of ``lhs / rhs`` rounded toward zero (the sign of ``lhs``, "
        "numpy.fmod); x mod 0 is 0 for integers, NaN for floats.",
    ),
    "logical_and": (np.logical_and, _BOOL, "Elementwise ``lhs and rhs`` of bool tensors."),
    "logical_or": (np.logical_or, _BOOL, "Elementwise ``lhs or rhs`` of bool tensors."),
    "logical_xor": (np.logical_xor, _BOOL, "Elementwise ``lhs xor rhs`` of bool tensors."),
    "bitwise_and": (np.bitwise_and, INT_DTYPES, "Elementwise bitwise AND of integer tensors."),
    "bitwise_or": (np.bitwise_or, INT_DTYPES, "Elementwise bitwise OR of integer tensors."),
    "bitwise_xor": (np.bitwise_xor, INT_DTYPES, "Elementwise bitwise XOR of integer tensors."),
    "left_shift": (
        np.left_shift,
        INT_DTYPES,
        "Elementwise ``lhs << rhs`` of integer tensors (bits past the width are dropped; a "
        "shift < 0 or >= the width gives 0).",
    ),
    "right_shift": (
        np.right_shift,
        INT_DTYPES,
        "Elementwise ``lhs >> rhs`` of integer tensors, arithmetic for signed ones (a shift "
        "< 0 or >= the width gives 0, or -1 for a negative ``lhs``).",
    ),
}
for _name, (_fn, _allowed, _doc) in _BITWISE.items():
    register(
        _name,
        num_inputs=2,
        type_rel=_binary_rel(_name, _allowed),
        kernel=_binary_kernel(_fn),
        pattern=OpPattern.BROADCAST,
        doc=_doc,
    )
for _name, _fn, _allowed, _doc in (
    ("logical_not", np.logical_not, _BOOL, "Elementwise ``not data`` of a bool tensor."),
    ("bitwise_not", np.invert, INT_DTYPES, "Elementwise bitwise NOT of an integer tensor."),
):
    register(
        _name,
        num_inputs=1,
        type_rel=_unary_rel(_name, _allowed),
        kernel=_same_dtype_kernel(_fn),
        pattern=OpPattern.ELEMWISE,
        doc=_doc,
    )


def floor_mod(lhs: Any, rhs: Any) -> Call:
    """The remainder of ``lhs / rhs`` with the sign of ``rhs`` (Python's ``%``)."""
    return make_call("floor_mod", [lhs, rhs], ["lhs", "rhs"])


def trunc_mod(lhs: Any, rhs: Any) -> Call:
    """The remainder of ``lhs / rhs`` with the sign of ``lhs`` (C's ``%``, ``fmod``)."""
    return make_call("trunc_mod", [lhs, rhs], ["lhs", "rhs"])


def logical_not(data: Any) -> Call:
    """``not data`` elementwise (a bool tensor)."""
    return make_call("logical_not", [data], ["data"])


def logical_and(lhs: Any, rhs: Any) -> Call:
    """``lhs and rhs`` elementwise (bool tensors, broadcast)."""
    return make_call("logical_and", [lhs, rhs], ["lhs", "rhs"])


def logical_or(lhs: Any, rhs: Any) -> Call:
    """``lhs or rhs`` elementwise (bool tensors, broadcast)."""
    return make_call("logical_or", [lhs, rhs], ["lhs", "rhs"])


def logical_xor(lhs: Any, rhs: Any) -> Call:
    """``lhs != rhs`` elementwise (bool tensors, broadcast)."""
    return make_call("logical_xor", [lhs, rhs], ["lhs", "rhs"])


def bitwise_not(data: Any) -> Call:
    """``~data`` elementwise (an integer tensor)."""
    return make_call("bitwise_not", [data], ["data"])


def bitwise_and(lhs: Any, rhs: Any) -> Call:
    """``lhs & rhs`` elementwise (integer tensors, broadcast)."""
    return make_call("bitwise_and", [lhs, rhs], ["lhs", "rhs"])


def bitwise_or(lhs: Any, rhs: Any) -> Call:
    """``lhs | rhs`` elementwise (integer tensors, broadcast)."""
    return make_call("bitwise_or", [lhs, rhs], ["lhs", "rhs"])


def bitwise_xor(lhs: Any, rhs: Any) -> Call:
    """``lhs ^ rhs`` elementwise (integer tensors, broadcast)."""
    return make_call("bitwise_xor", [lhs, rhs], ["lhs", "rhs"])


def left_shift(lhs: Any, rhs: Any) -> Call:
    """``lhs << rhs`` elementwise (integer tensors; shifts outside [0, width) give 0)."""
    return make_call("left_shift", [lhs, rhs], ["lhs", "rhs"])


def right_shift(lhs: Any, rhs: Any) -> Call:
    """``lhs >> rhs`` elementwise, arithmetic for signed integers (shifts outside
    [0, width) give 0, or -1 for a negative ``lhs``)."""
    return make_call("right_shift", [lhs, rhs], ["lhs", "rhs"])


# -- where, clip, cast -------------------------------------------------------------------------


def _where_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    cond = tensor_arg(arg_types[0], "where", "condition")
    x = tensor_arg(arg_types[1], "where", "x")
    y = tensor_arg(arg_types[2], "where", "y")
    if cond.dtype != "bool":
        raise TypeError(f"where: condition must have dtype bool, got {cond}")
    dtype = check_same_dtype("where", ("x", x), ("y", y))
    shape = broadcast_shapes("where", ("condition", cond.shape), ("x", x.shape), ("y", y.shape))
    return TensorType(shape, dtype)


def _where_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    cond, x, y = args
    return result(np.where(cond, x, y), x.dtype)


register(
    "where",
    num_inputs=3,
    type_rel=_where_rel,
    kernel=_where_kernel,
    pattern=OpPattern.BROADCAST,
    doc="Pick ``x`` where ``condition`` (bool) is true, else ``y``; all three broadcast.",
)


def where(condition: Any, x: Any, y: Any) -> Call:
    """Elements of ``x`` where ``condition`` is true, else of ``y`` (3-way broadcast)."""
    return make_call("where", [condition, x, y], ["condition", "x", "y"])


def _clip_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "clip", "a")
    check_dtype(data, NUMERIC_DTYPES, "clip", "a")
    for bound in ("a_min", "a_max"):
        if math.isnan(attrs[bound]):
            raise ValueError(f"clip: {bound} must be a number, got nan")
    if attrs["a_min"] > attrs["a_max"]:
        raise ValueError(
            f"clip: a_min ({attrs['a_min']}) must not be greater than a_max ({attrs['a_max']})"
        )
    return data


def _int_clip_bounds(a_min: float, a_max: float, dtype: str) -> tuple[int, int]:
    """The integer bounds that clip a ``dtype`` tensor as ``[a_min, a_max]`` does.

    The bounds are rounded inward (the smallest integer >= ``a_min``, the
    largest <= ``a_max``) and limited to the range of ``dtype``. When no integer
    lies in ``[a_min, a_max]`` both become that interval truncated toward zero,
    what clipping in float and casting back would give.
    """
    info = np.iinfo(dtype)
    lo = info.min if a_min == -math.inf else math.ceil(min(a_min, info.max))
    hi = info.max if a_max == math.inf else math.floor(max(a_max, info.min))
    if lo > hi:
        lo = hi = math.trunc(a_min)
    lo = min(max(lo, int(info.min)), int(info.max))
    hi = min(max(hi, int(info.min)), int(info.max))
    return lo, hi


def _clip_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    x = args[0]
    dtype = x.dtype.name
    if dtype not in INT_DTYPES:
        return result(np.clip(x, attrs["a_min"], attrs["a_max"]), dtype)
    # Integers are clipped in their own dtype: float64 would round int64
    # values beyond 2**53.
    lo, hi = _int_clip_bounds(attrs["a_min"], attrs["a_max"], dtype)
    return result(np.clip(x, np.array(lo, dtype), np.array(hi, dtype)), dtype)


register(
    "clip",
    num_inputs=1,
    type_rel=_clip_rel,
    kernel=_clip_kernel,
    pattern=OpPattern.ELEMWISE,
    attrs=(
        AttrField("a_min", attr_float, doc="Lower bound."),
        AttrField("a_max", attr_float, doc="Upper bound."),
    ),
    doc="Clamp every element into ``[a_min, a_max]`` (integers: bounds rounded inward).",
)


def clip(a: Any, a_min: float, a_max: float) -> Call:
    """Clamp every element of ``a`` into ``[a_min, a_max]``.

    An integer tensor is clipped in its own dtype to the integers in
    ``[a_min, a_max]`` (bounds rounded inward, limited to the dtype's range).
    """
    return make_call("clip", [a], ["a"], a_min=a_min, a_max=a_max)


def _cast_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "cast", "data")
    return TensorType(data.shape, attrs["dtype"])


def _cast_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    return result(args[0], attrs["dtype"])


register(
    "cast",
    num_inputs=1,
    type_rel=_cast_rel,
    kernel=_cast_kernel,
    pattern=OpPattern.ELEMWISE,
    attrs=(AttrField("dtype", attr_dtype, doc="The target dtype."),),
    doc="Convert every element to ``dtype`` (numpy's conversion rules).",
)


def cast(data: Any, dtype: Any) -> Call:
    """``data`` converted to ``dtype``."""
    return make_call("cast", [data], ["data"], dtype=dtype)


def _reinterpret_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "reinterpret", "data")
    dtype = attrs["dtype"]
    if DTYPE_BITS[data.dtype] != DTYPE_BITS[dtype]:
        raise TypeError(
            f"reinterpret: data {data} has {DTYPE_BITS[data.dtype]}-bit elements but "
            f"{dtype} has {DTYPE_BITS[dtype]} bits (the widths must be equal)"
        )
    return TensorType(data.shape, dtype)


def _reinterpret_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    # ml_dtypes keeps a sub-byte value's bits in the low bits of its byte, so a byte view
    # between two types of the same width keeps exactly those bits
    return np.array(args[0], order="C").view(numpy_dtype(attrs["dtype"]))


register(
    "reinterpret",
    num_inputs=1,
    type_rel=_reinterpret_rel,
    kernel=_reinterpret_kernel,
    pattern=OpPattern.ELEMWISE,
    attrs=(AttrField("dtype", attr_dtype, doc="The target dtype (same bit width)."),),
    doc="The bits of every element read as ``dtype``, a dtype of the same bit width.",
)


def reinterpret(data: Any, dtype: Any) -> Call:
    """``data``'s bits read as ``dtype`` (the same width in bits as ``data``'s dtype)."""
    return make_call("reinterpret", [data], ["data"], dtype=dtype)
