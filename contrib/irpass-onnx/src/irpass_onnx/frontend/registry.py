"""The table of ONNX op converters and its opset dispatch.

A converter turns one ONNX node into irpass expressions::

    @converter("Unsqueeze", since=13)
    def _unsqueeze_13(ctx: NodeContext) -> Expr | Sequence[Expr]: ...

Several versions of one op are registered with different ``since`` opsets; a model of opset
``n`` uses the one with the highest ``since <= n``. An op type with no such version is
unsupported at that opset.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from irpass.ir import Expr

    from .context import NodeContext

__all__ = ["Converter", "converter", "lookup", "supported_op_types", "registered_op_types",
           "first_opset"]

#: ``converter(ctx) -> Expr`` (one ONNX output) or a sequence of Expr, one per ONNX output.
Converter: TypeAlias = "Callable[[NodeContext], Expr | Sequence[Expr]]"

# op_type -> [(since, converter)], sorted by since.
_TABLE: dict[str, list[tuple[int, Converter]]] = {}
# opset -> the op types supported there (a set over the ~200 op types costs ~0.5 ms an import):
# emptied when a converter is registered, and kept with the table's size, which a test that
# removes its converter again changes.
_SUPPORTED: dict[int, tuple[int, frozenset[str]]] = {}


def converter(*op_types: str, since: int = 1) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of ``op_types`` from opset ``since``.

    Registering the same (op type, since) twice is an error naming both functions.
    """
    if not op_types or not all(isinstance(t, str) and t for t in op_types):
        raise TypeError(f"converter: expected op type names, got {op_types!r}")
    if isinstance(since, bool) or not isinstance(since, int) or since < 1:
        raise ValueError(f"converter: since must be an int >= 1, got {since!r}")

    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            versions = _TABLE.setdefault(op_type, [])
            for s, old in versions:
                if s == since and old is not fn:
                    raise ValueError(
                        f"converter {op_type} since opset {since} is registered twice: "
                        f"{old.__module__}.{old.__qualname__} and "
                        f"{fn.__module__}.{fn.__qualname__}"
                    )
            if (since, fn) not in versions:
                bisect.insort(versions, (since, fn), key=lambda v: v[0])
        _SUPPORTED.clear()
        return fn

    return register


def lookup(op_type: str, opset: int) -> Converter | None:
    """The converter of ``op_type`` for a model of ``opset`` (``None`` if there is none)."""
    versions = _TABLE.get(op_type)
    if not versions:
        return None
    chosen = None
    for since, fn in versions:
        if since > opset:
            break
        chosen = fn
    return chosen


def supported_op_types(opset: int) -> frozenset[str]:
    """The op types (default domain) that have a converter at ``opset``."""
    size, found = _SUPPORTED.get(opset, (-1, frozenset()))
    if size != len(_TABLE):
        found = frozenset(t for t, versions in _TABLE.items() if versions[0][0] <= opset)
        _SUPPORTED[opset] = (len(_TABLE), found)
    return found


def first_opset(op_type: str) -> int | None:
    """The oldest opset ``op_type`` has a converter at (``None``: none at any opset)."""
    versions = _TABLE.get(op_type)
    return versions[0][0] if versions else None


def registered_op_types() -> Iterable[str]:
    """Every op type with a converter at some opset, sorted."""
    return sorted(_TABLE)
