"""Types of the IR: tensors, tuples and functions.

Types are plain values: two types with the same fields are equal and hash the
same, so they can be compared with ``==`` and used as dictionary keys.
Shapes are static (a tuple of non-negative ints).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Type",
    "TensorType",
    "TupleType",
    "FuncType",
    "SUPPORTED_DTYPES",
    "NUMPY_DTYPES",
    "normalize_dtype",
    "shape_text",
    "type_text",
]

#: The element types a tensor may have (numpy names).
SUPPORTED_DTYPES: frozenset[str] = frozenset(
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

#: The numpy dtype of each supported name. ``np.dtype(name)`` parses the name
#: and ``dtype.name`` is computed in Python by numpy 2 (microseconds each), so
#: hot paths look types up here instead.
NUMPY_DTYPES: dict[str, np.dtype] = {name: np.dtype(name) for name in SUPPORTED_DTYPES}


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
    """A tensor with a static ``shape`` and an element ``dtype``."""

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
        if isinstance(shape, (int, np.integer)):
            raise TypeError(f"TensorType.shape must be a sequence of ints, got {shape!r}")
        try:
            dims = tuple(shape)
        except TypeError:
            raise TypeError(f"TensorType.shape must be a sequence of ints, got {shape!r}") from None
        for i, d in enumerate(dims):
            if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
                raise TypeError(f"TensorType.shape[{i}] must be an int, got {d!r}")
            if d < 0:
                raise ValueError(f"TensorType.shape[{i}] must be >= 0, got {d}")
        object.__setattr__(self, "shape", tuple(int(d) for d in dims))
        object.__setattr__(self, "dtype", normalize_dtype(self.dtype, "TensorType.dtype"))

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
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
