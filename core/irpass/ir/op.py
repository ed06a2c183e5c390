"""Primitive operators and their registry.

An :class:`Op` is a named primitive with everything passes need to know about
it: how many inputs it takes, the schema of its attributes (names, converters,
defaults), a type relation that infers the output type from the input types,
a numpy kernel that computes it, whether it is ``stateful`` (never folded or
removed), and its fusion pattern. Ops are registered once under a unique
name with :func:`register_op`; ``Op.get(name)`` returns the registered op.

The core registers the standard op set (see :mod:`irpass.op`); plugins add
their own through the same function.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .attrs import EMPTY_ATTRS, Attrs, normalize_attr_value
from .expr import Expr, _set
from .types import Type, normalize_dtype

__all__ = [
    "Op",
    "OpPattern",
    "AttrField",
    "REQUIRED",
    "register_op",
    "list_ops",
    "TypeRelation",
    "Kernel",
    "attr_int",
    "attr_float",
    "attr_bool",
    "attr_str",
    "attr_ints",
    "attr_optional_ints",
    "attr_optional_int",
    "attr_dtype",
    "attr_optional_dtype",
    "attr_choice",
]

#: ``type_rel(arg_types, attrs) -> Type``; raises TypeError/ValueError with a
#: plain message when the arguments do not fit (type inference adds the context).
TypeRelation = Callable[[tuple[Type, ...], Attrs], Type]
#: ``kernel(args, attrs) -> ndarray | tuple``: computes the op on numpy values.
Kernel = Callable[[tuple[Any, ...], Attrs], Any]


class OpPattern(enum.IntEnum):
    """How an op may be fused with its neighbours (TVM's ``OpPatternKind``)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: Default of an attribute that has none: the builder must pass it.
REQUIRED: Any = _Required()


@dataclass(frozen=True)
class AttrField:
    """One attribute of an op: its name, a converter and a default.

    ``convert(value, where)`` returns the canonical value or raises
    ``TypeError``/``ValueError``; ``where`` names the attribute in messages.
    """

    name: str
    convert: Callable[[Any, str], Any]
    default: Any = REQUIRED
    doc: str = ""


# -- attribute converters --------------------------------------------------------


def attr_int(value: Any, where: str) -> int:
    """An integer attribute."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{where} must be an int, got {value!r}")
    return int(value)


def attr_optional_int(value: Any, where: str) -> int | None:
    """An integer attribute that may be None."""
    return None if value is None else attr_int(value, where)


def attr_float(value: Any, where: str) -> float:
    """A float attribute (ints are accepted and converted)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{where} must be a number, got {value!r}")
    return float(value)


def attr_bool(value: Any, where: str) -> bool:
    """A boolean attribute (0/1 accepted)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    raise TypeError(f"{where} must be a bool, got {value!r}")


def attr_str(value: Any, where: str) -> str:
    """A string attribute."""
    if not isinstance(value, str):
        raise TypeError(f"{where} must be a string, got {value!r}")
    return value


def attr_ints(value: Any, where: str) -> tuple[int, ...]:
    """A tuple of ints (a single int is accepted as a 1-tuple)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{where} must be a sequence of ints, got {value!r}")
    return tuple(attr_int(v, f"{where}[{i}]") for i, v in enumerate(value))


def attr_optional_ints(value: Any, where: str) -> tuple[int, ...] | None:
    """A tuple of ints, or None."""
    return None if value is None else attr_ints(value, where)


def attr_dtype(value: Any, where: str) -> str:
    """A dtype name."""
    return normalize_dtype(value, where)


def attr_optional_dtype(value: Any, where: str) -> str:
    """A dtype name, or "" meaning 'same as the input'."""
    if value is None or value == "":
        return ""
    return normalize_dtype(value, where)


def attr_choice(*choices: str) -> Callable[[Any, str], str]:
    """A string attribute restricted to ``choices``."""

    def convert(value: Any, where: str) -> str:
        if value not in choices:
            raise ValueError(f"{where} must be one of {list(choices)}, got {value!r}")
        return value

    convert.__name__ = f"attr_choice{choices}"
    return convert


# -- the op node and its registry ---------------------------------------------------

_REGISTRY: dict[str, Op] = {}


class Op(Expr):
    """A registered primitive operator (an expression usable as a call's ``op``).

    There is exactly one ``Op`` object per name; compare ops with ``is``.
    """

    __slots__ = (
        "name",
        "num_inputs",
        "attr_fields",
        "type_rel",
        "kernel",
        "pattern",
        "stateful",
        "doc",
        "owner",
        "_field_map",
    )

    name: str
    num_inputs: int
    attr_fields: tuple[AttrField, ...]
    type_rel: TypeRelation
    kernel: Kernel
    pattern: OpPattern
    stateful: bool
    doc: str
    owner: str

    def __init__(
        self,
        name: str,
        *,
        num_inputs: int,
        attr_fields: Sequence[AttrField],
        type_rel: TypeRelation,
        kernel: Kernel,
        pattern: OpPattern,
        stateful: bool,
        doc: str,
        owner: str,
    ) -> None:
        super().__init__()
        _set(self, "name", name)
        _set(self, "num_inputs", num_inputs)
        _set(self, "attr_fields", tuple(attr_fields))
        _set(self, "type_rel", type_rel)
        _set(self, "kernel", kernel)
        _set(self, "pattern", pattern)
        _set(self, "stateful", stateful)
        _set(self, "doc", doc)
        _set(self, "owner", owner)
        _set(self, "_field_map", {f.name: f for f in attr_fields})

    @staticmethod
    def get(name: str) -> Op:
        """Return the op registered as ``name``; ``ValueError`` with close matches otherwise."""
        try:
            return _REGISTRY[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(_REGISTRY), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ValueError(f"unknown op {name!r}{hint}") from None

    def make_attrs(self, attrs: Mapping[str, Any] | None) -> Attrs:
        """Check ``attrs`` against this op's schema and fill in defaults.

        Unknown names, missing required attributes and values of the wrong
        kind raise ``ValueError``/``TypeError`` naming the op and attribute.
        """
        if isinstance(attrs, Attrs) and attrs._schema_key is self:
            return attrs
        given = dict(attrs) if attrs is not None else {}
        if not self.attr_fields:
            if given:
                raise ValueError(f"op {self.name!r} takes no attributes, got {sorted(given)}")
            return EMPTY_ATTRS
        values: dict[str, Any] = {}
        for f in self.attr_fields:
            where = f"{self.name}.{f.name}"
            if f.name in given:
                values[f.name] = f.convert(given.pop(f.name), where)
            elif f.default is REQUIRED:
                raise ValueError(f"op {self.name!r} requires attribute {f.name!r}")
            else:
                values[f.name] = f.default
        if given:
            unknown = sorted(given)
            close = difflib.get_close_matches(unknown[0], list(self._field_map), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ValueError(
                f"op {self.name!r} has no attribute {unknown[0]!r}{hint} "
                f"(attributes: {[f.name for f in self.attr_fields]})"
            )
        out = Attrs(values)
        _set(out, "_schema_key", self)
        return out

    def attr_default(self, name: str) -> Any:
        """The default value of attribute ``name`` (``REQUIRED`` if it has none)."""
        return self._field_map[name].default

    def __repr__(self) -> str:
        return f"Op({self.name})"


def register_op(
    name: str,
    *,
    num_inputs: int,
    type_rel: TypeRelation,
    kernel: Kernel,
    pattern: OpPattern,
    attrs: Sequence[AttrField] = (),
    stateful: bool = False,
    doc: str = "",
    owner: str = "irpass",
    override: bool = False,
) -> Op:
    """Register a new op and return it.

    ``num_inputs`` is the number of arguments (-1: any number). ``attrs`` is
    the attribute schema, ``type_rel`` and ``kernel`` are described at
    :data:`TypeRelation` and :data:`Kernel`. ``owner`` names who registered it
    (the core or a plugin) for error messages. Registering a name twice is an
    error naming both owners unless ``override=True``.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"op name must be a non-empty string, got {name!r}")
    if not isinstance(num_inputs, int) or num_inputs < -1:
        raise ValueError(f"op {name!r}: num_inputs must be an int >= -1, got {num_inputs!r}")
    if not callable(type_rel) or not callable(kernel):
        raise TypeError(f"op {name!r}: type_rel and kernel must be callables")
    pattern = OpPattern(pattern)
    for f in attrs:
        if not isinstance(f, AttrField):
            raise TypeError(f"op {name!r}: attrs must be AttrField instances, got {f!r}")
    if name in _REGISTRY and not override:
        raise ValueError(
            f"op {name!r} is already registered by {_REGISTRY[name].owner!r}; "
            f"{owner!r} cannot register it again (pass override=True to replace it)"
        )
    op = Op(
        name,
        num_inputs=num_inputs,
        attr_fields=attrs,
        type_rel=type_rel,
        kernel=kernel,
        pattern=pattern,
        stateful=stateful,
        doc=doc,
        owner=owner,
    )
    # Defaults are checked once here so a bad schema fails at registration.
    for f in attrs:
        if f.default is not REQUIRED and f.default is not None:
            _set(
                f, "default", normalize_attr_value(f.convert(f.default, f"{name}.{f.name}"), f.name)
            )
    _REGISTRY[name] = op
    return op


def list_ops() -> list[str]:
    """The names of all registered ops, sorted."""
    return sorted(_REGISTRY)
