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

import dataclasses
import difflib
import enum
import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._lazy import LazyModule
from .._lazy_plugins import ensure_plugins
from .attrs import EMPTY_ATTRS, Attrs, _is_plain_value, normalize_attr_value
from .core_op_names import CORE_OP_NAMES
from .dims import DimExpr
from .expr import Expr, _set
from .types import SUPPORTED_DTYPES, Type, normalize_dtype

# The converters take numpy scalars and arrays too, tested after the Python values
# (the usual ones), so that registering and building ops imports no numpy.
np: Any = LazyModule("numpy", globals(), "np")

__all__ = [
    "Op",
    "OpPattern",
    "AttrField",
    "REQUIRED",
    "register_op",
    "unregister_op",
    "list_ops",
    "check_op_name",
    "RESERVED_NAMES",
    "TypeRelation",
    "Kernel",
    "attr_int",
    "attr_float",
    "attr_bool",
    "attr_str",
    "attr_ints",
    "attr_optional_ints",
    "attr_optional_int",
    "attr_dim",
    "attr_dims",
    "attr_optional_dims",
    "attr_dtype",
    "attr_optional_dtype",
    "attr_choice",
]

#: ``type_rel(arg_types, attrs) -> Type``; raises TypeError/ValueError with a
#: plain message when the arguments do not fit (type inference adds the context).
#: It must be a pure function of its arguments: one inference run may reuse the
#: result for every call of the op with equal argument types and attrs.
TypeRelation = Callable[[tuple[Type, ...], Attrs], Type]
#: ``kernel(args, attrs) -> ndarray | tuple``: computes the op on numpy values.
#: Op arithmetic is IEEE's (overflow gives inf, an invalid operation nan), so a
#: kernel does not manage numpy's floating-point error state: its caller does,
#: once for many calls. :func:`irpass.evaluate` and ``FoldConstant`` run
#: kernels inside ``np.errstate(all="ignore")``; code that calls a kernel
#: directly should do the same if it wants no ``RuntimeWarning``.
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


_INT_ONLY = {int}


def attr_int(value: Any, where: str) -> int:
    """An integer attribute."""
    if type(value) is int:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{where} must be an int, got {value!r}")
    return int(value)


def attr_optional_int(value: Any, where: str) -> int | None:
    """An integer attribute that may be None."""
    return None if value is None else attr_int(value, where)


def attr_float(value: Any, where: str) -> float:
    """A float attribute (ints are accepted and converted)."""
    if type(value) is float or type(value) is int:
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{where} must be a number, got {value!r}")
    return float(value)


def attr_bool(value: Any, where: str) -> bool:
    """A boolean attribute (0/1 accepted)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) or not isinstance(value, (np.bool_, np.integer)):
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise TypeError(f"{where} must be a bool, got {value!r}")
    if isinstance(value, np.bool_) or value in (0, 1):
        return bool(value)
    raise TypeError(f"{where} must be a bool, got {value!r}")


def attr_str(value: Any, where: str) -> str:
    """A string attribute."""
    if not isinstance(value, str):
        raise TypeError(f"{where} must be a string, got {value!r}")
    return value


def attr_ints(value: Any, where: str) -> tuple[int, ...]:
    """A tuple of ints (a single int is accepted as a 1-tuple)."""
    if type(value) is int:
        return (value,)
    if type(value) is list or type(value) is tuple:
        pass
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    elif isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{where} must be an int or a sequence of ints, got {value!r}")
    # Python ints (the usual case) are taken as they are: formatting each
    # element's place for attr_int cost 0.35 us an element, for an error that
    # cannot happen (a strided_slice call: 7.6 -> 4.7 us, CPU time).
    if {*map(type, value)} <= _INT_ONLY:
        return tuple(value)
    return tuple(attr_int(v, f"{where}[{i}]") for i, v in enumerate(value))


def attr_optional_ints(value: Any, where: str) -> tuple[int, ...] | None:
    """A tuple of ints, or None."""
    return None if value is None else attr_ints(value, where)


def attr_dim(value: Any, where: str) -> int | DimExpr:
    """A size or index that may be symbolic: an int or a :class:`~irpass.ir.dims.DimExpr`."""
    if isinstance(value, DimExpr):
        return value
    return attr_int(value, where)


def attr_dims(value: Any, where: str) -> tuple[int | DimExpr, ...]:
    """A tuple of ints and symbolic dims (``newshape=[n, -1]``); a single one is a 1-tuple.

    Shape-like attributes (reshape's ``newshape``, a creation op's ``shape``, a slice's
    ``begin``/``end``) take these, as Relax's shape-taking ops take ``ShapeExpr``s; kernels
    only ever see ints (the evaluator substitutes the bound sizes first).
    """
    if type(value) is tuple or type(value) is list:
        # Plain ints (the usual case) are taken as they are, as in attr_ints.
        if {*map(type, value)} <= _INT_ONLY:
            return tuple(value)
    elif isinstance(value, DimExpr):
        return (value,)
    elif type(value) is int:
        return (value,)
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    elif isinstance(value, np.ndarray):
        value = value.tolist()
    else:
        raise TypeError(
            f"{where} must be an int, a symbolic dim or a sequence of those, got {value!r}"
        )
    if not isinstance(value, (list, tuple)):
        raise TypeError(
            f"{where} must be an int, a symbolic dim or a sequence of those, got {value!r}"
        )
    return tuple(attr_dim(v, f"{where}[{i}]") for i, v in enumerate(value))


def attr_optional_dims(value: Any, where: str) -> tuple[int | DimExpr, ...] | None:
    """A tuple of ints and symbolic dims, or None."""
    return None if value is None else attr_dims(value, where)


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


# The converters above whose results are plain values (what normalize_attr_value
# returns unchanged): Op.make_attrs keeps them as they are. Other converters'
# results (and defaults) get a cheap type test first, see _is_plain_value.
_PLAIN_CONVERTERS = (
    attr_int,
    attr_optional_int,
    attr_float,
    attr_bool,
    attr_str,
    attr_ints,
    attr_optional_ints,
    # A tuple of ints and DimExprs is what normalize_attr_value would return for it.
    attr_dim,
    attr_dims,
    attr_optional_dims,
    attr_dtype,
    attr_optional_dtype,
)


# -- the op node and its registry ---------------------------------------------------

_REGISTRY: dict[str, Op] = {}

# An op name must read back from the text format as one identifier token:
# dot-separated ASCII words (the lexer's identifier rule, ``nn.conv2d``).
_OP_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z", re.ASCII)
# The text format's keywords, as the parser lists them (a test checks this
# list covers the parser's).
_KEYWORDS = {"def", "fn", "let", "if", "else", "meta", "const", "Tensor", "True", "False", "None"}
#: Words the text format reads as something other than an op (keywords,
#: literals, dtypes); no op may be named like one.
RESERVED_NAMES: frozenset[str] = frozenset(_KEYWORDS) | SUPPORTED_DTYPES
# ``inf``/``nan`` with an optional dtype suffix are float literals (``inff32``).
_SPECIAL_FLOAT = re.compile(r"(?:inf|nan)(?:[fiu]\d+)?\Z", re.ASCII)


def check_op_name(name: Any) -> str:
    """``name`` if the text format can read it back as an op name.

    ``TypeError`` for a non-string, ``ValueError`` naming the op for a name
    that is not a dotted identifier or is a reserved word of the text format.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"op name must be a non-empty string, got {name!r}")
    if not _OP_NAME.match(name):
        raise ValueError(
            f"op name {name!r} is not a dotted identifier (letters, digits and '_', "
            "parts separated by '.', each starting with a letter or '_', e.g. "
            "'contrib.my_op'); the text format could not read it back"
        )
    if name in RESERVED_NAMES or _SPECIAL_FLOAT.match(name):
        raise ValueError(
            f"op name {name!r} is a reserved word of the text format (a keyword, literal "
            "or dtype); choose another name, e.g. with a namespace such as 'contrib.'"
        )
    return name


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
        "_attr_plan",
        "_str_names",
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
        # What make_attrs needs of each field: the converter's ``where`` is
        # formatted once here rather than on every call (only a converter that
        # raises reads it; 0.2 us a strided_slice call, 0.4 us a conv2d), and
        # whether the converter's result and the default are plain already
        # (compared by identity: a converter need not be hashable).
        _set(
            self,
            "_attr_plan",
            tuple(
                (
                    f.name,
                    f.convert,
                    f.default,
                    f"{name}.{f.name}",
                    any(f.convert is c for c in _PLAIN_CONVERTERS),
                    _is_plain_value(f.default),
                )
                for f in self.attr_fields
            ),
        )
        # Attrs check that names are strings; an odd schema takes that path.
        _set(self, "_str_names", all(isinstance(f.name, str) for f in self.attr_fields))

    @staticmethod
    def get(name: str) -> Op:
        """Return the op registered as ``name``; ``ValueError`` with close matches otherwise."""
        try:
            return _REGISTRY[name]
        except KeyError:
            pass
        _load_core_ops()
        op = _REGISTRY.get(name)
        if op is not None:
            return op
        ensure_plugins()  # a plugin's op: load the plugins once, then look again
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
        # The fields whose values are not plain yet: normalized (with Attrs'
        # errors) after every other check, in the order Attrs(values) did it.
        unplain: list[str] = []
        for name, convert, default, where, plain_result, plain_default in self._attr_plan:
            if name in given:
                value = values[name] = convert(given.pop(name), where)
                if not plain_result and not _is_plain_value(value):
                    unplain.append(name)
            elif default is REQUIRED:
                raise ValueError(f"op {self.name!r} requires attribute {name!r}")
            else:
                values[name] = default
                if not plain_default:
                    unplain.append(name)
        if given:
            unknown = sorted(given)
            close = difflib.get_close_matches(unknown[0], list(self._field_map), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ValueError(
                f"op {self.name!r} has no attribute {unknown[0]!r}{hint} "
                f"(attributes: {[f.name for f in self.attr_fields]})"
            )
        if not self._str_names:
            out = Attrs(values)
            _set(out, "_schema_key", self)
            return out
        for name in unplain:
            values[name] = normalize_attr_value(values[name], f"attrs[{name!r}]")
        # The values are plain now: normalizing them again in Attrs(values)
        # was about half the cost of building a call (a strided_slice: 14.4 ->
        # 7.6 us, CPU time, with the where strings formatted once).
        return Attrs._from_plain(values, self)

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
    check_op_name(name)
    if owner != "irpass" and name in CORE_OP_NAMES and not override:
        # the core's names are known without loading the op set (numpy, every kernel)
        raise ValueError(
            f"op {name!r} is already registered by 'irpass'; {owner!r} cannot register it "
            f"again (pass override=True to replace it)"
        )
    if owner != "irpass" and override:
        _load_core_ops()  # replacing a core op: the op set first, or it would put it back
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
    # Defaults are checked once here so a bad schema fails at registration.
    # The op gets converted copies: the caller's fields (possibly shared with
    # other ops) stay as they were, also when a later default fails.
    fields = tuple(_checked_field(name, f) for f in attrs)
    op = Op(
        name,
        num_inputs=num_inputs,
        attr_fields=fields,
        type_rel=type_rel,
        kernel=kernel,
        pattern=pattern,
        stateful=stateful,
        doc=doc,
        owner=owner,
    )
    _REGISTRY[name] = op
    return op


def _checked_field(op: str, f: AttrField) -> AttrField:
    """A copy of ``f`` with its default converted and normalized as a value would be."""
    if f.default is REQUIRED or f.default is None:
        return f
    default = normalize_attr_value(f.convert(f.default, f"{op}.{f.name}"), f.name)
    return dataclasses.replace(f, default=default)


def unregister_op(name: str) -> None:
    """Forget op ``name`` (the plugin manager's undo when a plugin fails half-way)."""
    _REGISTRY.pop(name, None)


def list_ops() -> list[str]:
    """The names of all registered ops, sorted."""
    _load_core_ops()
    return sorted(_REGISTRY)


# The ops of the standard op set, as irpass.op registered them (see _load_core_ops).
_CORE_OPS: dict[str, Op] = {}


def _record_core_ops() -> None:
    """Remember the ops registered so far as the standard op set (``irpass.op`` calls
    this once it has registered them all)."""
    _CORE_OPS.update((name, op) for name, op in _REGISTRY.items() if op.owner == "irpass")


def _load_core_ops() -> None:
    """Import the standard op set (:mod:`irpass.op`, which registers its ops) unless it
    is imported, and put back any of its ops the registry lost.

    The op set brings numpy (its kernels): it is loaded when an op is first looked up
    by name, listed or registered by someone else, not when this module is imported.
    While another thread imports it, this waits until it is done (the import lock);
    within the op set's own import (its modules register ops), it returns at once.
    A registry snapshot taken before the op set was imported (``isolated_plugins``)
    drops its ops when restored; they are the core's, so they come back here.
    """
    importlib.import_module("irpass.op")
    for name, op in _CORE_OPS.items():
        if name not in _REGISTRY:
            _REGISTRY[name] = op
