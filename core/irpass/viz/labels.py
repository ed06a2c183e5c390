"""The text a picture shows: types on edges, constants and attributes in boxes.

Everything here is short on purpose: a box is read at a glance, so floats keep four
significant digits and a constant shows its dtype, shape and a few values (all of them
up to ``elide_constants`` elements, the idea of the printer's elision).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.expr import Expr
from ..ir.literals import format_attr_value, same_attr_value
from ..ir.nodes import Call, Constant, Var
from ..ir.op import REQUIRED
from ..ir.types import FuncType, TensorType, TupleType, Type

__all__ = ["attr_lines", "constant_text", "short_constant", "type_label", "value_type"]

_MAX_ATTRS = 5  # attribute lines on a box; more end in "..."
_MAX_ATTR_TEXT = 40
_FEW_VALUES = 4  # values shown of a constant larger than elide_constants
_VALUES_PER_LINE = 8


def type_label(ty: Type | None) -> str:
    """A value's type as an edge label: ``(1, 64, 56, 56) float32``, ``(n, 128) int64``."""
    if ty is None:
        return ""
    if isinstance(ty, TensorType):
        dims = ", ".join(str(d) for d in ty.shape)
        return f"({dims}{',' if len(ty.shape) == 1 else ''}) {ty.dtype}"
    if isinstance(ty, TupleType):
        if len(ty.fields) <= 1:
            return "(" + "".join(type_label(f) + "," for f in ty.fields) + ")"
        # a tuple's first field is what a reader follows (batch_norm's result)
        return f"{len(ty.fields)}-tuple ({type_label(ty.fields[0])}, ...)"
    if isinstance(ty, FuncType):
        return "fn"
    return str(ty)


def value_type(e: Expr) -> Type | None:
    t = e._checked_type
    if t is None and type(e) is Var:
        return e.type_annotation
    if t is None and type(e) is Constant:
        return TensorType(e.data.shape, e.data.dtype.name)
    return t


def _number(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _values(data: np.ndarray, n: int) -> list[str]:
    """The first ``n`` values of ``data`` as short texts, ``...`` after them if there are
    more; none for a dtype numpy cannot list."""
    try:
        flat = data.reshape(-1)[:n].tolist()
    except (TypeError, ValueError):
        return []
    texts = [_number(v) for v in flat]
    if n < data.size:
        texts.append("...")
    return texts


def constant_text(data: np.ndarray, elide: int) -> list[str]:
    """A constant's summary: ``float32 (64, 3, 7, 7)`` and a line or two of its values
    (all of them for at most ``elide`` elements, else the first few and ``...``)."""
    shape = ", ".join(str(d) for d in data.shape)
    head = f"{data.dtype.name} ({shape}{',' if data.ndim == 1 else ''})"
    if elide == 0 or data.size == 0:
        return [head]
    if data.ndim == 0:
        return [f"{data.dtype.name} {_number(data.item())}"]
    texts = _values(data, data.size if data.size <= elide else min(_FEW_VALUES, elide))
    lines = [head]
    for i in range(0, len(texts), _VALUES_PER_LINE):
        last = i + _VALUES_PER_LINE >= len(texts)
        chunk = ", ".join(texts[i : i + _VALUES_PER_LINE])
        lines.append(("[" if i == 0 else " ") + chunk + ("]" if last else ","))
    return lines


def short_constant(data: np.ndarray, elide: int) -> str:
    """A constant on one line: ``float32 (16,) [1.472, 1.171, 1.031, ...]`` (no values
    with ``elide`` 0)."""
    if data.ndim == 0:
        return constant_text(data, min(elide, 1))[0]
    head = constant_text(data, 0)[0]
    if elide == 0:
        return head
    values = _values(data, min(data.size, _FEW_VALUES - 1, elide))
    return f"{head} [{', '.join(values)}]" if values else head


def attr_lines(call: Call) -> list[str]:
    op = call.op
    attrs = call.attrs
    if not attrs:
        return []
    lines: list[str] = []
    for key, value in attrs.items():
        try:
            default = op.attr_default(key)
        except KeyError:
            default = REQUIRED
        if default is not REQUIRED and same_attr_value(value, default):
            continue
        if len(lines) == _MAX_ATTRS:
            lines.append("...")
            break
        try:
            # a picture shows 1e-12, not the digits that read back exactly
            text = _number(value) if isinstance(value, float) else format_attr_value(value)
        except TypeError:
            text = repr(value)
        line = f"{key}={text}"
        if len(line) > _MAX_ATTR_TEXT:
            line = line[: _MAX_ATTR_TEXT - 3] + "..."
        lines.append(line)
    return lines
