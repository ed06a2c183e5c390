"""Types of the IR: tensors, tuples and functions.

Types are plain values: two types with the same fields are equal and hash the
same, so they can be compared with ``==`` and used as dictionary keys.
A shape is a tuple of dims: non-negative ints, or symbolic expressions over size
variables (:class:`~irpass.ir.dims.DimExpr`, e.g. ``n`` or ``seq * 4``) where a
size is only known at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._lazy import LazyModule
from .dims import Dim, DimExpr, substitute

# numpy dtypes and scalars are accepted once numpy is in use (tested after the plain
# Python values); the IR's types need no numpy, see NUMPY_DTYPES.
np: Any = LazyModule("numpy", globals(), "np")

__all__ = [
    "Type",
    "TensorType",
    "TupleType",
    "FuncType",
    "SUPPORTED_DTYPES",
    "NATIVE_DTYPES",
    "EXTENSION_DTYPES",
    "DTYPE_KINDS",
    "DTYPE_BITS",
    "NUMPY_DTYPES",
    "numpy_dtype",
    "is_float_dtype",
    "normalize_dtype",
    "shape_text",
    "type_text",
    "substitute_sizes",
]

#: The element types numpy has itself.
NATIVE_DTYPES: frozenset[str] = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
    }
)

#: The element types numpy gets from the ``ml_dtypes`` package (what JAX and onnx use):
#: bfloat16, the float8/float6/float4 formats and the 4- and 2-bit integers. The names are
#: ml_dtypes' own, which are also numpy's ``dtype.name`` of their arrays. The IR (types,
#: type inference, the text format) needs nothing of ml_dtypes; computing with such values
#: (constants, kernels) imports it on first use, see :func:`numpy_dtype`.
EXTENSION_DTYPES: frozenset[str] = frozenset(
    {
        "bfloat16",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float6_e2m3fn",
        "float6_e3m2fn",
        "float4_e2m1fn",
        "int4",
        "uint4",
        "int2",
        "uint2",
    }
)

#: The element types a tensor may have (numpy names).
SUPPORTED_DTYPES: frozenset[str] = NATIVE_DTYPES | EXTENSION_DTYPES

#: The kind of each dtype, as numpy spells kinds: ``b`` bool, ``i`` signed integer, ``u``
#: unsigned integer, ``f`` floating point. numpy's own ``dtype.kind`` is ``V`` for most
#: ml_dtypes types, so code that asks "is this a float" asks here.
DTYPE_KINDS: dict[str, str] = {
    "bool": "b",
    **{n: "i" for n in ("int2", "int4", "int8", "int16", "int32", "int64")},
    **{n: "u" for n in ("uint2", "uint4", "uint8", "uint16", "uint32", "uint64")},
    **{n: "f" for n in SUPPORTED_DTYPES if n.startswith(("float", "bfloat"))},
}

#: The width of each dtype in bits (what ``reinterpret`` keeps; ml_dtypes stores the 4-
#: and 2-bit types one per byte, so this is not ``itemsize * 8`` for them).
DTYPE_BITS: dict[str, int] = {
    "bool": 8,
    "int2": 2,
    "uint2": 2,
    "int4": 4,
    "uint4": 4,
    "float4_e2m1fn": 4,
    "float6_e2m3fn": 6,
    "float6_e3m2fn": 6,
    "int8": 8,
    "uint8": 8,
    "float8_e4m3fn": 8,
    "float8_e4m3fnuz": 8,
    "float8_e5m2": 8,
    "float8_e5m2fnuz": 8,
    "float8_e8m0fnu": 8,
    "int16": 16,
    "uint16": 16,
    "float16": 16,
    "bfloat16": 16,
    "int32": 32,
    "uint32": 32,
    "float32": 32,
    "int64": 64,
    "uint64": 64,
    "float64": 64,
}


class _NumpyDtypes(dict):  # type: ignore[type-arg]
    """The numpy dtype of each supported name, looked up (and numpy imported) the first
    time one is asked for; the ml_dtypes ones likewise (with ml_dtypes)."""

    def __missing__(self, name: str) -> np.dtype:
        if name in NATIVE_DTYPES:
            for native in NATIVE_DTYPES:
                self[native] = np.dtype(native)
            return self[name]
        if name not in EXTENSION_DTYPES:
            raise KeyError(name)
        try:
            import ml_dtypes
        except ImportError:
            raise ImportError(
                f"dtype {name!r} needs the ml_dtypes package, which is not installed "
                "(pip install ml_dtypes)"
            ) from None
        for ext in EXTENSION_DTYPES:
            self[ext] = np.dtype(getattr(ml_dtypes, ext))
        return self[name]


#: The numpy dtype of each supported name. ``np.dtype(name)`` parses the name
#: and ``dtype.name`` is computed in Python by numpy 2 (microseconds each), so
#: hot paths look types up here instead. It is filled in on first lookup (``[]``, not
#: ``.get``), which imports numpy (and ml_dtypes, for one of :data:`EXTENSION_DTYPES`):
#: the IR's types, type inference and the text format need neither.
NUMPY_DTYPES: dict[str, np.dtype] = _NumpyDtypes()


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of the supported dtype ``name``.

    ``ValueError`` for a name that is not one of :data:`SUPPORTED_DTYPES`; ``ImportError``
    saying what to install for one of :data:`EXTENSION_DTYPES` when ml_dtypes is missing.
    """
    try:
        return NUMPY_DTYPES[name]
    except KeyError:
        raise ValueError(
            f"unsupported dtype {name!r}; expected one of {sorted(SUPPORTED_DTYPES)}"
        ) from None


def is_float_dtype(dtype: np.dtype) -> bool:
    """Whether the numpy ``dtype`` is a floating-point one, ml_dtypes' included (whose
    ``kind`` is ``V``, or ``f`` for some)."""
    kind = dtype.kind
    if kind == "f" or kind == "c":
        return True
    return kind == "V" and DTYPE_KINDS.get(dtype.name) == "f"


def normalize_dtype(dtype: object, field: str = "dtype") -> str:
    """Return the canonical name of ``dtype`` (a string or numpy dtype).

    Raises ``TypeError`` / ``ValueError`` naming ``field`` for anything that
    is not one of :data:`SUPPORTED_DTYPES`.
    """
    if isinstance(dtype, str):
        name = dtype
    elif isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        name = np.dtype(dtype).name
    else:
        raise TypeError(f"{field} must be a dtype name such as 'float32', got {dtype!r}")
    if name not in SUPPORTED_DTYPES:
        raise ValueError(
            f"{field}: unsupported dtype {name!r}; expected one of {sorted(SUPPORTED_DTYPES)}"
        )
    return name


# The classes of the dims of a canonical shape (bool, an int subclass, is not one).
_INT_ONLY = {int}


class Type:
    """Base class of all types."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    """A tensor of ``shape`` with elements of ``dtype``.

    Each dim is a non-negative ``int`` or a symbolic
    :class:`~irpass.ir.dims.DimExpr` (``Tensor[(n, 128), float32]``): a size
    known only at run time, as TVM Relax's ``R.Tensor(("n", 128))``. Static
    shapes are plain ints throughout; :attr:`is_static` tells them apart.
    """

    shape: tuple[int, ...]
    dtype: str = "float32"

    def __post_init__(self) -> None:
        shape = self.shape
        dtype = self.dtype
        # Already canonical (a tuple of non-negative Python ints, a supported dtype
        # name), as type relations build them: nothing to check further or convert.
        if (
            type(shape) is tuple
            and type(dtype) is str
            and dtype in SUPPORTED_DTYPES
            and (not shape or ({*map(type, shape)} <= _INT_ONLY and min(shape) >= 0))
        ):
            return
        if type(shape) is not list and isinstance(shape, (int, np.integer)):
            raise TypeError(f"TensorType.shape must be a sequence of ints, got {shape!r}")
        try:
            dims = tuple(shape)
        except TypeError:
            raise TypeError(f"TensorType.shape must be a sequence of ints, got {shape!r}") from None
        for i, d in enumerate(dims):
            if isinstance(d, DimExpr):
                continue
            if type(d) is not int and (isinstance(d, bool) or not isinstance(d, (int, np.integer))):
                raise TypeError(
                    f"TensorType.shape[{i}] must be an int or a symbolic dim, got {d!r}"
                )
            if d < 0:
                raise ValueError(f"TensorType.shape[{i}] must be >= 0, got {d}")
        object.__setattr__(
            self, "shape", tuple(d if isinstance(d, DimExpr) else int(d) for d in dims)
        )
        object.__setattr__(self, "dtype", normalize_dtype(self.dtype, "TensorType.dtype"))

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        """Whether every dim is a plain int."""
        return all(type(d) is int for d in self.shape)

    @property
    def size(self) -> int | DimExpr:
        """Number of elements (symbolic when a dim is)."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __str__(self) -> str:
        return type_text(self)


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    """The type of a tuple: one type per field."""

    fields: tuple[Type, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.fields, Sequence):
            raise TypeError(f"TupleType.fields must be a sequence of types, got {self.fields!r}")
        fields = tuple(self.fields)
        for i, f in enumerate(fields):
            if not isinstance(f, Type):
                raise TypeError(f"TupleType.fields[{i}] must be a Type, got {f!r}")
        object.__setattr__(self, "fields", fields)

    def __str__(self) -> str:
        return type_text(self)


@dataclass(frozen=True, slots=True)
class FuncType(Type):
    """The type of a function from ``arg_types`` to ``ret_type``."""

    arg_types: tuple[Type, ...]
    ret_type: Type

    def __post_init__(self) -> None:
        if not isinstance(self.arg_types, Sequence):
            raise TypeError(
                f"FuncType.arg_types must be a sequence of types, got {self.arg_types!r}"
            )
        args = tuple(self.arg_types)
        for i, a in enumerate(args):
            if not isinstance(a, Type):
                raise TypeError(f"FuncType.arg_types[{i}] must be a Type, got {a!r}")
        if not isinstance(self.ret_type, Type):
            raise TypeError(f"FuncType.ret_type must be a Type, got {self.ret_type!r}")
        object.__setattr__(self, "arg_types", args)

    def __str__(self) -> str:
        return type_text(self)


def shape_text(shape: Sequence[int]) -> str:
    """A shape as the text format writes it: ``(1, 3)``, ``(3,)``, ``()``."""
    dims = ", ".join(str(d) for d in shape)
    if len(shape) == 1:
        dims += ","
    return f"({dims})"


def type_text(ty: Type) -> str:
    """The text of a type: ``Tensor[(1, 3), float32]``, ``(T1, T2)``, ``fn (T1) -> T2``.

    This is also what ``str(ty)`` returns, and what the parser reads back.
    """
    if isinstance(ty, TensorType):
        return f"Tensor[{shape_text(ty.shape)}, {ty.dtype}]"
    if isinstance(ty, TupleType):
        inner = ", ".join(type_text(f) for f in ty.fields)
        if len(ty.fields) == 1:
            inner += ","
        return f"({inner})"
    if isinstance(ty, FuncType):
        args = ", ".join(type_text(a) for a in ty.arg_types)
        return f"fn ({args}) -> {type_text(ty.ret_type)}"
    raise TypeError(f"cannot print type {ty!r}")


def substitute_sizes(ty: Type, sizes: dict[str, Dim]) -> Type:
    """``ty`` with the size variables named in ``sizes`` replaced by their dims in every
    tensor type it holds (tuple and function types rebuilt around them); ``ty`` itself when
    it has none to replace."""
    if isinstance(ty, TensorType):
        if ty.is_static:
            return ty
        return TensorType(tuple(substitute(d, sizes) for d in ty.shape), ty.dtype)
    if isinstance(ty, TupleType):
        return TupleType(tuple(substitute_sizes(f, sizes) for f in ty.fields))
    if isinstance(ty, FuncType):
        return FuncType(
            tuple(substitute_sizes(a, sizes) for a in ty.arg_types),
            substitute_sizes(ty.ret_type, sizes),
        )
    return ty
