"""Literal values of the text format: scalar constants, tensor elements, attributes.

The printer and the parser share these helpers so that what one writes the
other reads back bit for bit. Numbers are spelled as Python spells them
(``1.5``, ``1e-05``, ``-0.0``, ``inf``, ``-inf``, ``nan``); a constant scalar
carries a dtype suffix (``1.5f32``, ``-3i64``, ``2u8``), see :data:`DTYPE_SUFFIX`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from .dims import DimExpr
from .types import DTYPE_KINDS, numpy_dtype

__all__ = [
    "DTYPE_SUFFIX",
    "SUFFIX_DTYPE",
    "format_attr_value",
    "same_attr_value",
    "format_elements",
    "format_scalar",
    "parse_number",
    "array_from_values",
    "quote",
]

#: The suffix a scalar constant of each dtype carries (``1.5f32``, ``2u8``).
DTYPE_SUFFIX: dict[str, str] = {
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
}
#: The dtype each suffix stands for.
SUFFIX_DTYPE: dict[str, str] = {s: d for d, s in DTYPE_SUFFIX.items()}

_NUMBER = re.compile(
    r"(-?)(?:(\d+)(\.\d+)?([eE][+-]?\d+)?|(inf|nan))([fiu]\d+)?", re.ASCII
)


def quote(text: str) -> str:
    """``text`` as a double-quoted string literal (JSON escapes)."""
    return json.dumps(text, ensure_ascii=False)


# -- floats -----------------------------------------------------------------------


def _float_text(value: Any) -> str:
    """The shortest text that reads back as exactly ``value`` in its own precision."""
    if isinstance(value, float):
        text = repr(value)
    else:
        # numpy's str() of a float16/float32 scalar is the shortest text that
        # round-trips in that precision (repr would add "np.float32(...)").
        text = str(value)
    if text in ("inf", "-inf", "nan"):
        return text
    if "." not in text and "e" not in text:
        text += ".0"
    return text


# -- attribute values ---------------------------------------------------------------


def format_attr_value(value: Any) -> str:
    """The text of an attribute value: ``3``, ``0.5``, ``True``, ``"NCHW"``, ``None``, ``[1]``."""
    if value is None:
        return "None"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(format_attr_value(v) for v in value) + "]"
    if isinstance(value, DimExpr):
        return str(value)
    raise TypeError(f"cannot print attribute value {value!r}")


def same_attr_value(a: Any, b: Any) -> bool:
    """Exact equality of attribute values: ``1 != True``, ``0.0 != -0.0``, ``nan == nan``.

    The printer leaves out an attribute when this says it equals the op's
    default, and the parser fills the default back in; so it must only say
    "same" when the default reads back bit for bit. That is why it tells
    ``-0.0`` from ``0.0``, unlike ``structural_equal`` (which, like ``==``,
    treats them as equal): an attribute set to ``-0.0`` whose default is
    ``0.0`` is printed, so it reads back as ``-0.0``, not as the default.
    """
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if a != a:
            return b != b
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_attr_value(x, y) for x, y in zip(a, b, strict=True))
    return a == b


# -- constants ------------------------------------------------------------------------


def format_elements(data: np.ndarray) -> list[str] | None:
    """The text of each element of ``data`` (flat, C order), without dtype suffix.

    Returns ``None`` when some value would not read back bit for bit (e.g. a
    NaN with a payload or a negative NaN); such constants go to the metadata
    section instead.
    """
    flat = data.reshape(-1)
    # ml_dtypes' types (bfloat16, float8, int4, ...) are numpy kind "V": ask the IR's table
    kind = DTYPE_KINDS.get(data.dtype.name, data.dtype.kind)
    if kind == "b":
        return ["True" if v else "False" for v in flat.tolist()]
    if kind in "iu":
        return [str(v) for v in flat.tolist()]
    if data.dtype.itemsize == 8:
        texts = [_float_text(v) for v in flat.tolist()]
    else:
        texts = [_float_text(v) for v in flat]
    back = array_from_values([float(t) for t in texts], data.dtype.name)
    native = np.ascontiguousarray(flat, dtype=data.dtype.newbyteorder("="))
    if back.tobytes() != native.tobytes():
        return None
    return texts


def format_scalar(data: np.ndarray) -> str | None:
    """A 0-d constant as a literal with dtype suffix (``1.5f32``, ``True``), or ``None``."""
    texts = format_elements(data)
    if texts is None:
        return None
    if data.dtype.kind == "b":
        return texts[0]
    suffix = DTYPE_SUFFIX.get(data.dtype.name)
    # the ml_dtypes types have no suffix: their scalars go to the metadata section
    return None if suffix is None else texts[0] + suffix


def parse_number(text: str) -> tuple[int | float, str | None]:
    """Split a number token into its Python value and dtype (``None`` without suffix).

    Raises ``ValueError`` with a readable message for an unknown suffix or a
    fractional value with an integer suffix.
    """
    m = _NUMBER.fullmatch(text)
    if m is None:
        raise ValueError(f"malformed number {text!r}")
    sign, digits, frac, exp, special, suffix = m.groups()
    dtype = None
    if suffix is not None:
        dtype = SUFFIX_DTYPE.get(suffix)
        if dtype is None:
            raise ValueError(
                f"unknown dtype suffix {suffix!r} in {text!r}; expected one of "
                f"{', '.join(SUFFIX_DTYPE)}"
            )
    is_float = special is not None or frac is not None or exp is not None
    if is_float:
        if dtype is not None and not dtype.startswith("float"):
            raise ValueError(f"{text!r}: {dtype} literals must be integers")
        return float(text[: len(text) - len(suffix or "")]), dtype
    return int(sign + digits), dtype


def array_from_values(
    values: Sequence[Any], dtype: str, shape: Sequence[int] | None = None
) -> np.ndarray:
    """A read-only-ready array of ``dtype`` from Python values (``ValueError`` if out of range)."""
    try:
        with np.errstate(over="raise"):
            arr = np.array(values, dtype=numpy_dtype(dtype))
    except (OverflowError, FloatingPointError):
        bad = _first_out_of_range(values, dtype)
        raise ValueError(f"value {bad!r} is out of range for {dtype}") from None
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cannot make a {dtype} array from these values: {exc}") from None
    if shape is not None:
        arr = arr.reshape(tuple(shape))
    return arr


def _first_out_of_range(values: Sequence[Any], dtype: str) -> Any:
    for v in values:
        try:
            with np.errstate(over="raise"):
                np.array([v], dtype=numpy_dtype(dtype))
        except (OverflowError, FloatingPointError):
            return v
    return values[0] if values else None
