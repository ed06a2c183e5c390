"""Immutable attribute mappings for calls and functions.

``Attrs`` is a read-only mapping from names to plain values: ``None``, bools,
ints, floats, strings, symbolic dims (:class:`~irpass.ir.dims.DimExpr`, in
shape-like attributes such as ``reshape``'s ``newshape=[n, -1]``), and (nested)
tuples of those. Lists are stored as
tuples and numpy scalars as Python scalars, so two ``Attrs`` built from equal
values are equal and hash the same. Values are also readable as attributes
(``call.attrs.axis``), as in TVM.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .._lazy import LazyModule
from .dims import DimExpr

# numpy scalars and arrays are accepted (and made plain) once numpy is in use; the
# plain Python values are checked first, so building IR imports no numpy.
np: Any = LazyModule("numpy", globals(), "np")

__all__ = ["Attrs", "normalize_attr_value"]

# The types normalize_attr_value returns unchanged (bool is one: it is tested
# by exact type, not as an int).
_PLAIN_TYPES = frozenset({type(None), bool, int, float, str})

_new_attrs = object.__new__


def normalize_attr_value(value: Any, field: str) -> Any:
    """Return ``value`` in canonical immutable form, or raise ``TypeError`` naming ``field``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, (list, tuple)):
        return tuple(normalize_attr_value(v, f"{field}[{i}]") for i, v in enumerate(value))
    if isinstance(value, DimExpr):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray) and value.ndim <= 1:
        return normalize_attr_value(value.tolist(), field)
    raise TypeError(
        f"attribute {field} must be None, bool, int, float, str, a symbolic dim or a tuple of "
        "those, "
        f"got {type(value).__name__} {value!r}"
    )


def _is_plain_value(value: Any) -> bool:
    """Whether ``value`` is already canonical: a plain scalar or a flat tuple of them.

    A cheap test by exact type (a set of types, no string formatting), for
    values that came out of a converter: ``normalize_attr_value`` returns such a
    value unchanged, so it can be skipped. False only means "normalize it".
    """
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return True
    return kind is tuple and {*map(type, value)} <= _PLAIN_TYPES


class Attrs(Mapping[str, Any]):
    """A read-only, hashable mapping of attribute names to plain values."""

    __slots__ = ("_items", "_hash", "_schema_key")

    def __init__(self, values: Mapping[str, Any] | None = None, where: str = "attrs") -> None:
        items: dict[str, Any] = {}
        if values is not None:
            if not isinstance(values, Mapping):
                raise TypeError(f"{where} must be a mapping of names to values, got {values!r}")
            for key, value in values.items():
                if not isinstance(key, str):
                    raise TypeError(f"{where}: attribute names must be strings, got {key!r}")
                items[key] = normalize_attr_value(value, f"{where}[{key!r}]")
        object.__setattr__(self, "_items", items)
        object.__setattr__(self, "_hash", None)
        # Set by Op.make_attrs: the op whose schema these attrs were checked
        # against, so rebuilding a call with the same attrs skips the check.
        object.__setattr__(self, "_schema_key", None)

    @classmethod
    def _from_plain(cls, items: dict[str, Any], schema_key: Any) -> Attrs:
        """Attrs that take over ``items``, without normalizing them again.

        For ``Op.make_attrs`` only: the keys are strings and every value is one
        ``normalize_attr_value`` would return unchanged (a converter's result),
        and nobody else holds ``items``. The result equals ``Attrs(items)``,
        which would normalize every value again (a generator and a formatted
        field name per element; see ``Op.make_attrs`` for what that cost).
        ``schema_key`` is the op whose schema ``items`` was checked against.
        """
        out = _new_attrs(cls)
        object.__setattr__(out, "_items", items)
        object.__setattr__(out, "_hash", None)
        object.__setattr__(out, "_schema_key", schema_key)
        return out

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            # Private and dunder lookups (copy, pickle) must not reach _items,
            # which may not exist yet.
            raise AttributeError(name)
        try:
            return self._items[name]
        except KeyError:
            raise AttributeError(
                f"attrs have no field {name!r}; fields: {sorted(self._items)}"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Attrs are immutable; use attrs.replace(...) to build new ones")

    def __eq__(self, other: object) -> bool:
        # Python equality of the values: 1 == 1.0 == True here, while structural
        # equality (irpass.structural_equal) also compares the values' kinds.
        if isinstance(other, Attrs):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash(tuple(sorted(self._items.items())))
            object.__setattr__(self, "_hash", h)
        return h

    def __copy__(self) -> Attrs:
        return self

    def __deepcopy__(self, memo: dict) -> Attrs:
        return self

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._items.items())
        return f"Attrs({inner})"

    def replace(self, **updates: Any) -> Attrs:
        """Return new attrs with ``updates`` applied (the schema check runs again on use)."""
        merged = dict(self._items)
        merged.update(updates)
        return Attrs(merged)


EMPTY_ATTRS = Attrs()
