"""Helpers shared by the op modules: argument checks, broadcasting, axes,
attribute converters and the small glue between builders and the registry.

Type relations raise ``TypeError`` (wrong kind or dtype of an argument) or
``ValueError`` (shapes or attribute values that do not fit) with a message
that starts with the op name and names the argument; type inference adds
where in the program the call is.

Symbolic dims (:mod:`irpass.ir.dims`): a dim in a shape is an ``int`` or a
``DimExpr`` such as ``n`` or ``seq * 4``, and relations compute with them by
ordinary arithmetic (``+ - * //`` canonicalise). Comparisons are the part to
take care of: ``==`` between dims is structural, ``<`` raises. The rules all
relations follow, through the helpers below:

* Two dims that must agree (:func:`match_dims`, :func:`broadcast_shapes`):
  equal expressions agree; different ints are an error; otherwise the relation
  cannot decide statically, so it assumes they agree (a static dim is kept
  over a symbolic one, else the first) and the run time checks it: the
  evaluator checks every op's result against its type with the size variables
  bound (as Relax's ``match_cast``), naming the dims and the symbols.
* A dim the op needs as a number (a conv's channels, a split point, a
  loop bound): :func:`static_dim` gives the int or a ``ValueError`` naming
  the op, what it needed and the symbol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..ir.dims import Dim, DimExpr, prove_ge, prove_lt, prove_ne
from ..ir.expr import Expr
from ..ir.nodes import Call, Tuple, const
from ..ir.op import (
    AttrField,
    Kernel,
    Op,
    OpPattern,
    TypeRelation,
    attr_int,
    attr_ints,
    register_op,
)
from ..ir.types import (
    DTYPE_KINDS,
    EXTENSION_DTYPES,
    SUPPORTED_DTYPES,
    TensorType,
    TupleType,
    Type,
    numpy_dtype,
)

#: The floating-point dtypes ops compute with (bfloat16 through ml_dtypes' ufuncs, which
#: cover numpy's arithmetic and math; kernels widen float16 and bfloat16 with
#: :func:`accumulate_dtype` where a sum or product would lose precision).
FLOAT_DTYPES: frozenset[str] = frozenset({"float16", "bfloat16", "float32", "float64"})
SIGNED_DTYPES: frozenset[str] = frozenset({"int8", "int16", "int32", "int64"})
UNSIGNED_DTYPES: frozenset[str] = frozenset({"uint8", "uint16", "uint32", "uint64"})
INT_DTYPES: frozenset[str] = SIGNED_DTYPES | UNSIGNED_DTYPES
#: Every dtype but bool and the storage formats below: what arithmetic accepts.
NUMERIC_DTYPES: frozenset[str] = FLOAT_DTYPES | INT_DTYPES
#: The numeric dtypes and bool: what comparisons, ``maximum`` and ``max`` accept.
ALL_DTYPES: frozenset[str] = NUMERIC_DTYPES | {"bool"}
#: The 8-, 6- and 4-bit float formats (ml_dtypes): storage and quantization formats, which
#: ONNX (and so irpass) only casts, quantizes and moves around, never computes with.
SMALL_FLOAT_DTYPES: frozenset[str] = (
    frozenset(n for n in EXTENSION_DTYPES if DTYPE_KINDS[n] == "f") - FLOAT_DTYPES
)
#: The 4- and 2-bit integers (ml_dtypes): storage and quantization formats, like the above.
SMALL_INT_DTYPES: frozenset[str] = frozenset(n for n in EXTENSION_DTYPES if DTYPE_KINDS[n] != "f")
#: Every dtype a tensor may have: what casts and data movement (reshape, transpose,
#: concatenate, ...) accept.
ANY_DTYPES: frozenset[str] = SUPPORTED_DTYPES
#: What ``qnn.quantize`` produces and ``qnn.dequantize`` reads: the integers up to 16 bits,
#: the 4- and 2-bit ones and the small floats (float8_e8m0fnu is a scale format only).
QUANTIZED_DTYPES: frozenset[str] = (
    frozenset({"int8", "uint8", "int16", "uint16"})
    | SMALL_INT_DTYPES
    | (SMALL_FLOAT_DTYPES - {"float8_e8m0fnu"})
)

_DTYPE_WORDS = {
    FLOAT_DTYPES: "a floating-point dtype",
    INT_DTYPES: "an integer dtype",
    NUMERIC_DTYPES: "a numeric (non-bool) dtype",
    QUANTIZED_DTYPES: "a quantized dtype (8- or 16-bit integer, int4, uint4, int2, uint2, "
    "float8, float6 or float4)",
}


# -- registration and builders -----------------------------------------------------------------


def register(
    name: str,
    *,
    num_inputs: int,
    type_rel: TypeRelation,
    kernel: Kernel,
    pattern: OpPattern,
    attrs: Sequence[AttrField] = (),
    doc: str = "",
) -> Op:
    """Register a core op (owner ``"irpass"``)."""
    return register_op(
        name,
        num_inputs=num_inputs,
        type_rel=type_rel,
        kernel=kernel,
        pattern=pattern,
        attrs=attrs,
        doc=doc,
        owner="irpass",
    )


def as_expr(value: Any, op: str, name: str) -> Expr:
    """``value`` as an expression: numbers and arrays become constants.

    Relay's builders take expressions only; accepting plain numbers too is a
    convenience that matches the operator overloads (``x + 1``).
    """
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, int, float, np.generic, np.ndarray, list)):
        return const(value)
    raise TypeError(f"{op}: {name} must be an expression, got {type(value).__name__} {value!r}")


def make_call(name: str, args: Sequence[Any], arg_names: Sequence[str], **attrs: Any) -> Call:
    """``Call(Op.get(name), args, attrs)`` after turning plain values into constants."""
    exprs = [as_expr(a, name, n) for a, n in zip(args, arg_names, strict=True)]
    # No attributes given: None lets Call skip the schema check of an op without any.
    return Call(Op.get(name), exprs, attrs or None)


def as_tuple_expr(data: Any, op: str) -> Expr:
    """A list of tensors as one ``Tuple`` expression (an expression passes through)."""
    if isinstance(data, Expr):
        return data
    if isinstance(data, (list, tuple)):
        return Tuple([as_expr(d, op, f"data[{i}]") for i, d in enumerate(data)])
    raise TypeError(f"{op}: data must be a list of expressions or a tuple expression, got {data!r}")


# -- argument checks ---------------------------------------------------------------------------


def tensor_arg(ty: Type, op: str, name: str) -> TensorType:
    """``ty`` if it is a tensor type, else ``TypeError`` naming the argument."""
    if not isinstance(ty, TensorType):
        raise TypeError(f"{op}: {name} must be a tensor, got {ty}")
    return ty


def check_dtype(ty: TensorType, allowed: frozenset[str], op: str, name: str) -> None:
    """``TypeError`` unless ``ty.dtype`` is in ``allowed``."""
    if ty.dtype not in allowed:
        words = _DTYPE_WORDS.get(allowed, f"one of {sorted(allowed)}")
        raise TypeError(f"{op}: {name} must have {words}, got {ty}")


def check_rank(ty: TensorType, rank: int, op: str, name: str, layout: str = "") -> None:
    """``ValueError`` unless ``ty`` has ``rank`` dimensions."""
    if ty.ndim != rank:
        hint = f" (layout {layout})" if layout else ""
        raise ValueError(f"{op}: {name} must be {rank}-D{hint}, got {ty}")


def check_same_dtype(op: str, *named: tuple[str, TensorType]) -> str:
    """The common dtype of the named tensors; ``TypeError`` listing them otherwise."""
    dtype = named[0][1].dtype
    if any(t.dtype != dtype for _, t in named[1:]):
        listing = ", ".join(f"{n} {t}" for n, t in named)
        raise TypeError(f"{op}: arguments must have the same dtype, got {listing}")
    return dtype


def broadcast_shapes(op: str, *named: tuple[str, tuple[Dim, ...]]) -> tuple[Dim, ...]:
    """numpy's broadcast of the named shapes; ``ValueError`` naming the clash.

    With symbolic dims: ``n`` against ``1`` is ``n``, ``n`` against ``4`` is ``4``
    (``n`` must be 1 or 4 at run time), ``n`` against ``m`` is ``n`` (``m`` must be
    ``n`` or 1); the evaluator checks those at run time (see the module docstring).
    """
    rank = max(len(s) for _, s in named)
    out = []
    for k in range(1, rank + 1):
        dim: Dim = 1
        for _, s in named:
            if k <= len(s):
                d = s[-k]
                if d != 1 and d != dim:
                    if dim == 1:
                        dim = d
                    elif type(d) is int and type(dim) is int:
                        shapes = " and ".join(f"{n} {s}" for n, s in named)
                        raise ValueError(
                            f"{op}: shapes are not broadcastable: {shapes} "
                            f"(dimension {rank - k} of the result: {dim} vs {d})"
                        )
                    elif type(d) is int:
                        dim = d  # a static size wins: the symbolic one must be 1 or it
        out.append(dim)
    return tuple(reversed(out))


def match_dims(op: str, what: str, a: Dim, b: Dim) -> Dim:
    """The dim two dims that must be equal stand for (``what`` names them in the error).

    Equal dims give themselves; different ints, or dims provably different (``n``
    and ``n + 1``), a ``ValueError``; otherwise the static one (else ``a``), which
    the run time checks (see the module docstring).
    """
    if a is b or a == b:
        return a
    if (type(a) is int and type(b) is int) or prove_ne(a, b):
        raise ValueError(f"{op}: {what} must be equal, got {a} and {b}")
    return a if type(a) is int or type(b) is not int else b


def static_dim(op: str, what: str, d: Dim) -> int:
    """``d`` as an int; ``ValueError`` naming ``what`` and the symbol when it is symbolic."""
    if type(d) is int:
        return d
    if isinstance(d, DimExpr):
        raise ValueError(f"{op}: {what} must be a static size, got the symbolic dim {d}")
    return int(d)


def dims_may_agree(a: Dim, b: Dim) -> bool:
    """Whether ``a`` and ``b`` may be equal at run time: equal, or neither two
    different ints nor provably different (the run time checks the rest)."""
    if a is b or a == b:
        return True
    if type(a) is int and type(b) is int:
        return False
    return not prove_ne(a, b)


def shapes_may_agree(s: Sequence[Dim], t: Sequence[Dim]) -> bool:
    """Whether two shapes may be equal at run time (same rank, each dim :func:`dims_may_agree`)."""
    if s == t:
        return True
    return len(s) == len(t) and all(dims_may_agree(a, b) for a, b in zip(s, t, strict=True))


def match_shapes(op: str, what: str, s: Sequence[Dim], t: Sequence[Dim]) -> tuple[Dim, ...]:
    """The shape two shapes that must be equal stand for, dim by dim as :func:`match_dims`."""
    if s == t:
        return tuple(s)
    if len(s) != len(t):
        raise ValueError(f"{op}: {what} must be equal, got {tuple(s)} and {tuple(t)}")
    out = []
    for a, b in zip(s, t, strict=True):
        if a is b or a == b:
            out.append(a)
        elif not dims_may_agree(a, b):
            raise ValueError(f"{op}: {what} must be equal, got {tuple(s)} and {tuple(t)}")
        else:
            out.append(a if type(a) is int or type(b) is not int else b)
    return tuple(out)


def known_gt(a: Dim, b: Dim) -> bool:
    """Whether ``a > b`` holds for sure (ints compared, symbolic dims proven)."""
    if type(a) is int and type(b) is int:
        return a > b
    return prove_lt(b, a)


def known_ge(a: Dim, b: Dim) -> bool:
    """Whether ``a >= b`` holds for sure (ints compared, symbolic dims proven)."""
    if type(a) is int and type(b) is int:
        return a >= b
    return prove_ge(a, b)


def shape_size(shape: Sequence[Dim]) -> Dim:
    """The number of elements of ``shape`` (an int for a static shape)."""
    n: Dim = 1
    for d in shape:
        n = n * d
    return n


def static_shape(op: str, what: str, shape: Sequence[Dim]) -> tuple[int, ...]:
    """``shape`` as ints; ``ValueError`` naming ``what`` and the first symbolic dim."""
    for d in shape:
        if type(d) is not int:
            static_dim(op, what, d)
    return tuple(shape)  # type: ignore[arg-type]


def normalize_axis(axis: int, ndim: int, op: str, what: str = "axis") -> int:
    """``axis`` in ``[0, ndim)``, counting negatives from the end."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"{op}: {what} {axis} is out of range for a {ndim}-D tensor")
    return axis + ndim if axis < 0 else axis


def normalize_axes(axes: Sequence[int], ndim: int, op: str, what: str = "axis") -> tuple[int, ...]:
    """Each axis normalized; ``ValueError`` on a repeated axis."""
    out = tuple(normalize_axis(a, ndim, op, what) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: {what} {tuple(axes)} names an axis twice")
    return out


def result(value: Any, dtype: str | np.dtype) -> np.ndarray:
    """``value`` as an ndarray of ``dtype``.

    numpy returns scalars from ufuncs on 0-d arrays and upcasts in places;
    every kernel funnels its output through here so it matches the type.
    """
    if type(dtype) is str:
        dtype = numpy_dtype(dtype)
    return np.asarray(value).astype(dtype, copy=False)


def accumulate_dtype(dtype: str) -> str:
    """The dtype to compute in: float16 and bfloat16 are widened to float32, others kept."""
    return "float32" if dtype in ("float16", "bfloat16") else dtype


# -- layouts -----------------------------------------------------------------------------------


def layout_dims(shape: tuple[int, ...], layout: str) -> dict[str, int]:
    """Map each layout letter to its extent: ``{"N": 1, "C": 3, ...}``."""
    return dict(zip(layout, shape, strict=True))


def to_layout(array: np.ndarray, src: str, dst: str) -> np.ndarray:
    """Transpose ``array`` from layout ``src`` to ``dst`` (same letters)."""
    if src == dst:
        return array
    return array.transpose([src.index(ch) for ch in dst])


# -- attribute converters ----------------------------------------------------------------------


def attr_int_or_ints(value: Any, where: str) -> int | tuple[int, ...]:
    """An int, or a tuple of ints (a list is never collapsed to an int)."""
    if isinstance(value, (list, tuple, np.ndarray)):
        seq = value.tolist() if isinstance(value, np.ndarray) else value
        return tuple(attr_int(v, f"{where}[{i}]") for i, v in enumerate(seq))
    return attr_int(value, where)


def attr_positive_int(value: Any, where: str) -> int:
    """An int >= 1."""
    v = attr_int(value, where)
    if v < 1:
        raise ValueError(f"{where} must be >= 1, got {v}")
    return v


def attr_optional_positive_int(value: Any, where: str) -> int | None:
    """An int >= 1, or None."""
    return None if value is None else attr_positive_int(value, where)


def attr_pair(minimum: int) -> Callable[[Any, str], tuple[int, int]]:
    """Two ints (height, width), each >= ``minimum``; one int is used for both."""

    def convert(value: Any, where: str) -> tuple[int, int]:
        vals = attr_ints(value, where)
        if len(vals) == 1:
            vals = vals * 2
        if len(vals) != 2:
            raise ValueError(f"{where} must be 1 or 2 ints (height, width), got {value!r}")
        for v in vals:
            if v < minimum:
                raise ValueError(f"{where} values must be >= {minimum}, got {value!r}")
        return (vals[0], vals[1])

    convert.__name__ = f"attr_pair_min{minimum}"
    return convert


def attr_optional_pair(value: Any, where: str) -> tuple[int, int] | None:
    """Like ``attr_pair(1)``, or None."""
    return None if value is None else attr_pair(1)(value, where)


def attr_padding2d(value: Any, where: str) -> tuple[int, int, int, int]:
    """2-D padding as (top, left, bottom, right).

    As in Relay: one int pads all sides, two ints are (height, width) and pad
    both ends of each, four ints are (top, left, bottom, right).
    """
    vals = attr_ints(value, where)
    if len(vals) == 1:
        vals = vals * 4
    elif len(vals) == 2:
        vals = (vals[0], vals[1], vals[0], vals[1])
    elif len(vals) != 4:
        raise ValueError(
            f"{where} must be 1, 2 (height, width) or 4 (top, left, bottom, right) ints, "
            f"got {value!r}"
        )
    for v in vals:
        if v < 0:
            raise ValueError(f"{where} values must be >= 0, got {value!r}")
    return (vals[0], vals[1], vals[2], vals[3])


def attr_pad_width(value: Any, where: str) -> tuple[tuple[int, int], ...]:
    """One (before, after) pair of non-negative ints per axis."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{where} must be a sequence of (before, after) pairs, got {value!r}")
    pairs = []
    for i, pair in enumerate(value):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"{where}[{i}] must be a (before, after) pair, got {pair!r}")
        before = attr_int(pair[0], f"{where}[{i}][0]")
        after = attr_int(pair[1], f"{where}[{i}][1]")
        if before < 0 or after < 0:
            raise ValueError(f"{where}[{i}] must be non-negative, got {tuple(pair)!r}")
        pairs.append((before, after))
    return tuple(pairs)


def attr_layout(*choices: str) -> Callable[[Any, str], str]:
    """A layout name among ``choices`` ("" allowed if listed)."""

    def convert(value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise TypeError(f"{where} must be a layout string, got {value!r}")
        if value not in choices:
            shown = [c or '""' for c in choices]
            raise ValueError(f"{where}: unsupported layout {value!r}; expected one of {shown}")
        return value

    convert.__name__ = f"attr_layout{choices}"
    return convert


def attr_kernel_layout(value: Any, where: str) -> str:
    """A 2-D convolution weight layout: any ordering of the letters O, I, H, W."""
    if not isinstance(value, str):
        raise TypeError(f"{where} must be a layout string, got {value!r}")
    if len(value) != 4 or sorted(value) != sorted("OIHW"):
        raise ValueError(
            f"{where}: unsupported layout {value!r}; expected an ordering of O, I, H, W "
            "such as OIHW, HWIO or OHWI"
        )
    return value


def tuple_fields(ty: Type, op: str, name: str) -> tuple[TensorType, ...]:
    """The tensor fields of a tuple-typed argument."""
    if not isinstance(ty, TupleType):
        raise TypeError(f"{op}: {name} must be a tuple of tensors, got {ty}")
    for i, f in enumerate(ty.fields):
        if not isinstance(f, TensorType):
            raise TypeError(f"{op}: {name}[{i}] must be a tensor, got {f}")
    return ty.fields  # type: ignore[return-value]
