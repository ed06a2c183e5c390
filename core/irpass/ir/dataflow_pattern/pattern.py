"""The pattern nodes and their builders (TVM's ``tvm.relay.dataflow_pattern`` names).

A pattern is a small graph of :class:`DFPattern` nodes describing a piece of dataflow:
``is_op("add")(wildcard(), is_constant())`` is "an ``add`` of anything and a constant".
Pattern nodes compare and hash by identity: a node used twice in a pattern must match
the same expression both times (see :mod:`.matcher`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..attrs import normalize_attr_value
from ..dims import DimExpr
from ..expr import Expr
from ..op import Op
from ..types import Type, normalize_dtype

if TYPE_CHECKING:
    from .rewrite import DFPatternCallback  # noqa: F401

__all__ = [
    "DFPattern",
    "ExprPattern",
    "VarPattern",
    "ConstantPattern",
    "WildcardPattern",
    "CallPattern",
    "FunctionPattern",
    "TuplePattern",
    "TupleGetItemPattern",
    "IfPattern",
    "LetPattern",
    "AltPattern",
    "AttrPattern",
    "TypePattern",
    "DataTypePattern",
    "ShapePattern",
    "DominatorPattern",
    "wildcard",
    "is_op",
    "is_expr",
    "is_var",
    "is_constant",
    "is_tuple",
    "is_tuple_get_item",
    "is_if",
    "is_let",
    "has_attr",
    "has_type",
    "has_dtype",
    "has_shape",
    "dominates",
]


def _as_pattern(value: Any, where: str) -> DFPattern:
    """A pattern from a pattern or an expression (an expression becomes :class:`ExprPattern`)."""
    if isinstance(value, DFPattern):
        return value
    if isinstance(value, Expr):
        return ExprPattern(value)
    raise TypeError(f"{where} must be a DFPattern or an Expr, got {type(value).__name__} {value!r}")


def _as_patterns(values: Sequence[Any] | None, where: str) -> tuple[DFPattern, ...] | None:
    if values is None:
        return None
    if isinstance(values, (DFPattern, Expr, str)) or not isinstance(values, Sequence):
        raise TypeError(f"{where} must be a sequence of patterns or None, got {values!r}")
    return tuple(_as_pattern(v, f"{where}[{i}]") for i, v in enumerate(values))


class DFPattern:
    """Base class of dataflow patterns.

    Calling a pattern builds a :class:`CallPattern` with it as the callee
    (``is_op("add")(x, y)``; a single ``None`` argument means "any arguments");
    ``|`` builds an :class:`AltPattern`; ``+ - * /`` build ``add``/``subtract``/
    ``multiply``/``divide`` call patterns.
    """

    __slots__ = ("__weakref__",)

    def __call__(self, *args: Any) -> CallPattern:
        """A :class:`CallPattern` calling this pattern; ``p(None)`` matches any arguments."""
        if len(args) == 1 and args[0] is None:
            return CallPattern(self, None)
        return CallPattern(self, list(args))

    def __or__(self, other: DFPattern) -> AltPattern:
        return AltPattern(self, other)

    def __add__(self, other: Any) -> CallPattern:
        return is_op("add")(self, other)

    def __sub__(self, other: Any) -> CallPattern:
        return is_op("subtract")(self, other)

    def __mul__(self, other: Any) -> CallPattern:
        return is_op("multiply")(self, other)

    def __truediv__(self, other: Any) -> CallPattern:
        return is_op("divide")(self, other)

    def has_attr(self, attrs: Mapping[str, Any]) -> AttrPattern:
        """This pattern, further requiring the matched node's attributes to include ``attrs``."""
        return AttrPattern(self, attrs)

    def has_type(self, ttype: Type) -> TypePattern:
        """This pattern, further requiring the matched node's type to equal ``ttype``."""
        return TypePattern(self, ttype)

    def has_dtype(self, dtype: str) -> DataTypePattern:
        """This pattern, further requiring a tensor of element type ``dtype``."""
        return DataTypePattern(self, dtype)

    def has_shape(self, shape: Sequence[int | DimExpr | None]) -> ShapePattern:
        """This pattern, further requiring a tensor of ``shape`` (``None`` dims match any)."""
        return ShapePattern(self, shape)

    def optional(self, option_constructor: Callable[[DFPattern], DFPattern]) -> AltPattern:
        """``self | option_constructor(self)``: this pattern, or it wrapped by the option."""
        return self | option_constructor(self)

    def dominates(self, parent: DFPattern, path: DFPattern | None = None) -> DominatorPattern:
        """A :class:`DominatorPattern` with this pattern as the child."""
        return DominatorPattern(parent, path if path is not None else wildcard(), self)

    def match(self, expr: Expr) -> bool:
        """Whether this pattern matches ``expr`` (see :func:`~.matcher.match`)."""
        from .matcher import match

        return match(self, expr)

    def partition(
        self,
        expr: Expr,
        attrs: Mapping[str, Any] | None = None,
        check: Callable[[Expr], bool] | None = None,
    ) -> Expr:
        """Each match in ``expr`` becomes a call of a new function (:func:`~.rewrite.partition`)."""
        from .rewrite import partition

        return partition(self, expr, attrs, check)

    def children(self) -> tuple[DFPattern, ...]:
        """The sub-patterns, in the order the matcher visits them."""
        return ()


class ExprPattern(DFPattern):
    """Matches an expression structurally equal to ``expr`` (an op: that very op)."""

    __slots__ = ("expr",)

    def __init__(self, expr: Expr) -> None:
        if not isinstance(expr, Expr):
            raise TypeError(f"ExprPattern.expr must be an Expr, got {expr!r}")
        self.expr = expr

    def __repr__(self) -> str:
        return f"is_op({self.expr.name!r})" if type(self.expr) is Op else f"is_expr({self.expr!r})"


class VarPattern(DFPattern):
    """Matches a :class:`~irpass.ir.Var`, named ``name`` unless ``name`` is empty."""

    __slots__ = ("name",)

    def __init__(self, name: str = "") -> None:
        if not isinstance(name, str):
            raise TypeError(f"VarPattern.name must be a string, got {name!r}")
        self.name = name

    def __repr__(self) -> str:
        return f"is_var({self.name!r})"


class ConstantPattern(DFPattern):
    """Matches any :class:`~irpass.ir.Constant`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "is_constant()"


class WildcardPattern(DFPattern):
    """Matches any expression."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "wildcard()"


class CallPattern(DFPattern):
    """Matches a call whose callee matches ``op`` and whose args match ``args`` in order.

    ``args=None`` matches any number of arguments. As in TVM, an ``add``/``multiply``
    pattern also matches the call with its two arguments swapped, and a
    ``divide``-of-``multiply`` (``multiply``-with-a-``divide``) pattern also matches the
    re-associated ``multiply``-of-``divide`` (``divide``-of-``multiply``) expression.
    """

    __slots__ = ("op", "args")

    def __init__(self, op: DFPattern, args: Sequence[Any] | None) -> None:
        self.op = _as_pattern(op, "CallPattern.op")
        self.args = _as_patterns(args, "CallPattern.args")

    def children(self) -> tuple[DFPattern, ...]:
        return (self.op, *(self.args or ()))

    def __repr__(self) -> str:
        args = "None" if self.args is None else ", ".join(map(repr, self.args))
        return f"{self.op!r}({args})"


class FunctionPattern(DFPattern):
    """Matches a function whose params match ``params`` (None: any) and body ``body``."""

    __slots__ = ("params", "body")

    def __init__(self, params: Sequence[Any] | None, body: DFPattern) -> None:
        self.params = _as_patterns(params, "FunctionPattern.params")
        self.body = _as_pattern(body, "FunctionPattern.body")

    def children(self) -> tuple[DFPattern, ...]:
        return (*(self.params or ()), self.body)

    def __repr__(self) -> str:
        return f"FunctionPattern({self.params!r}, {self.body!r})"


class TuplePattern(DFPattern):
    """Matches a tuple whose fields match ``fields`` in order (None: any tuple)."""

    __slots__ = ("fields",)

    def __init__(self, fields: Sequence[Any] | None) -> None:
        self.fields = _as_patterns(fields, "TuplePattern.fields")

    def children(self) -> tuple[DFPattern, ...]:
        return self.fields or ()

    def __getitem__(self, index: int) -> TupleGetItemPattern:
        return TupleGetItemPattern(self, index)

    def __repr__(self) -> str:
        return f"is_tuple({self.fields!r})"


class TupleGetItemPattern(DFPattern):
    """Matches field ``index`` (None or -1: any field) of a tuple matching ``tuple``."""

    __slots__ = ("tuple", "index")

    def __init__(self, tuple_value: DFPattern, index: int | None = None) -> None:
        self.tuple = _as_pattern(tuple_value, "TupleGetItemPattern.tuple")
        if index is None:
            index = -1
        if isinstance(index, bool) or not isinstance(index, int) or index < -1:
            raise TypeError(f"TupleGetItemPattern.index must be an int >= 0 or None, got {index!r}")
        self.index = index

    def children(self) -> tuple[DFPattern, ...]:
        return (self.tuple,)

    def __repr__(self) -> str:
        return f"is_tuple_get_item({self.tuple!r}, {self.index})"


class IfPattern(DFPattern):
    """Matches ``if (cond) true_branch else false_branch`` part by part."""

    __slots__ = ("cond", "true_branch", "false_branch")

    def __init__(self, cond: DFPattern, true_branch: DFPattern, false_branch: DFPattern) -> None:
        self.cond = _as_pattern(cond, "IfPattern.cond")
        self.true_branch = _as_pattern(true_branch, "IfPattern.true_branch")
        self.false_branch = _as_pattern(false_branch, "IfPattern.false_branch")

    def children(self) -> tuple[DFPattern, ...]:
        return (self.cond, self.true_branch, self.false_branch)


class LetPattern(DFPattern):
    """Matches ``let var = value; body`` part by part."""

    __slots__ = ("var", "value", "body")

    def __init__(self, var: DFPattern, value: DFPattern, body: DFPattern) -> None:
        self.var = _as_pattern(var, "LetPattern.var")
        self.value = _as_pattern(value, "LetPattern.value")
        self.body = _as_pattern(body, "LetPattern.body")

    def children(self) -> tuple[DFPattern, ...]:
        return (self.var, self.value, self.body)


class AltPattern(DFPattern):
    """Matches what ``left`` matches, else what ``right`` matches."""

    __slots__ = ("left", "right")

    def __init__(self, left: DFPattern, right: DFPattern) -> None:
        self.left = _as_pattern(left, "AltPattern.left")
        self.right = _as_pattern(right, "AltPattern.right")

    def children(self) -> tuple[DFPattern, ...]:
        return (self.left, self.right)

    def __repr__(self) -> str:
        return f"({self.left!r} | {self.right!r})"


class AttrPattern(DFPattern):
    """Matches what ``pattern`` matches when the node's attributes include ``attrs``.

    An op call compares its call attributes, a function its function attributes, an
    :class:`~irpass.ir.Op` its registry properties (``TOpPattern``: the fusion pattern
    as an int, TVM's ``OpPatternKind``; ``TOpIsStateful``). Values compare after
    normalisation (lists as tuples). Empty ``attrs`` match any node.
    """

    __slots__ = ("pattern", "attrs")

    def __init__(self, pattern: DFPattern, attrs: Mapping[str, Any]) -> None:
        self.pattern = _as_pattern(pattern, "AttrPattern.pattern")
        if not isinstance(attrs, Mapping):
            raise TypeError(f"AttrPattern.attrs must be a mapping, got {attrs!r}")
        self.attrs = {
            str(k): normalize_attr_value(v, f"AttrPattern.attrs[{k!r}]") for k, v in attrs.items()
        }

    def children(self) -> tuple[DFPattern, ...]:
        return (self.pattern,)


class TypePattern(DFPattern):
    """Matches what ``pattern`` matches when the node's type equals ``type``."""

    __slots__ = ("pattern", "type")

    def __init__(self, pattern: DFPattern, ttype: Type) -> None:
        self.pattern = _as_pattern(pattern, "TypePattern.pattern")
        if not isinstance(ttype, Type):
            raise TypeError(f"TypePattern.type must be a Type, got {ttype!r}")
        self.type = ttype

    def children(self) -> tuple[DFPattern, ...]:
        return (self.pattern,)


class DataTypePattern(DFPattern):
    """Matches what ``pattern`` matches when the node is a tensor of element type ``dtype``."""

    __slots__ = ("pattern", "dtype")

    def __init__(self, pattern: DFPattern, dtype: str) -> None:
        self.pattern = _as_pattern(pattern, "DataTypePattern.pattern")
        self.dtype = normalize_dtype(dtype, "DataTypePattern.dtype")

    def children(self) -> tuple[DFPattern, ...]:
        return (self.pattern,)


class ShapePattern(DFPattern):
    """Matches what ``pattern`` matches when the node is a tensor of shape ``shape``.

    Dims compare with ``==`` (symbolic dims are canonical, so ``n * 2`` equals
    ``n + n``); a ``None`` dim matches any dim.
    """

    __slots__ = ("pattern", "shape")

    def __init__(self, pattern: DFPattern, shape: Sequence[int | DimExpr | None]) -> None:
        self.pattern = _as_pattern(pattern, "ShapePattern.pattern")
        if isinstance(shape, (int, str)) or not isinstance(shape, Sequence):
            raise TypeError(f"ShapePattern.shape must be a sequence of dims, got {shape!r}")
        dims: list[int | DimExpr | None] = []
        for i, d in enumerate(shape):
            if d is None or isinstance(d, DimExpr):
                dims.append(d)
            elif isinstance(d, int) and not isinstance(d, bool):
                dims.append(int(d))
            else:
                raise TypeError(f"ShapePattern.shape[{i}] must be an int, a dim or None, got {d!r}")
        self.shape = tuple(dims)

    def children(self) -> tuple[DFPattern, ...]:
        return (self.pattern,)


class DominatorPattern(DFPattern):
    """Matches a node matching ``child`` whose inputs lead, through nodes matching
    ``path`` only, to one node matching ``parent`` that the child post-dominates
    (every use of the parent flows into the child): TVM's diamond pattern."""

    __slots__ = ("parent", "path", "child")

    def __init__(self, parent: DFPattern, path: DFPattern, child: DFPattern) -> None:
        self.parent = _as_pattern(parent, "DominatorPattern.parent")
        self.path = _as_pattern(path, "DominatorPattern.path")
        self.child = _as_pattern(child, "DominatorPattern.child")

    def children(self) -> tuple[DFPattern, ...]:
        return (self.parent, self.path, self.child)


# -- builders (TVM's names) -------------------------------------------------------------


def wildcard() -> WildcardPattern:
    """A pattern matching any expression."""
    return WildcardPattern()


def is_op(op_name: str) -> ExprPattern:
    """A pattern matching the op ``op_name``; call it to match calls of the op."""
    return ExprPattern(Op.get(op_name))


def is_expr(expr: Expr) -> ExprPattern:
    """A pattern matching expressions structurally equal to ``expr``."""
    return ExprPattern(expr)


def is_var(name: str = "") -> VarPattern:
    """A pattern matching a var (named ``name`` unless empty)."""
    return VarPattern(name)


def is_constant() -> ConstantPattern:
    """A pattern matching any constant."""
    return ConstantPattern()


def is_tuple(fields: Sequence[Any] | None) -> TuplePattern:
    """A pattern matching a tuple of ``fields`` (``None``: any tuple)."""
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value: DFPattern, index: int | None = None) -> TupleGetItemPattern:
    """A pattern matching field ``index`` (``None``: any) of a tuple matching ``tuple_value``."""
    return TupleGetItemPattern(tuple_value, index)


def is_if(cond: DFPattern, true_branch: DFPattern, false_branch: DFPattern) -> IfPattern:
    """A pattern matching an ``if`` part by part."""
    return IfPattern(cond, true_branch, false_branch)


def is_let(var: DFPattern, value: DFPattern, body: DFPattern) -> LetPattern:
    """A pattern matching a ``let`` part by part."""
    return LetPattern(var, value, body)


def has_attr(attrs: Mapping[str, Any], pattern: DFPattern | None = None) -> AttrPattern:
    """``pattern`` (default: a wildcard) with the attributes ``attrs``."""
    return AttrPattern(pattern if pattern is not None else wildcard(), attrs)


def has_type(ttype: Type, pattern: DFPattern | None = None) -> TypePattern:
    """``pattern`` (default: a wildcard) of type ``ttype``."""
    return TypePattern(pattern if pattern is not None else wildcard(), ttype)


def has_dtype(dtype: str, pattern: DFPattern | None = None) -> DataTypePattern:
    """``pattern`` (default: a wildcard) with element type ``dtype``."""
    return DataTypePattern(pattern if pattern is not None else wildcard(), dtype)


def has_shape(
    shape: Sequence[int | DimExpr | None], pattern: DFPattern | None = None
) -> ShapePattern:
    """``pattern`` (default: a wildcard) of shape ``shape`` (``None`` dims: any)."""
    return ShapePattern(pattern if pattern is not None else wildcard(), shape)


def dominates(parent: DFPattern, path: DFPattern, child: DFPattern) -> DominatorPattern:
    """A :class:`DominatorPattern`: ``child`` reached from ``parent`` through ``path`` nodes."""
    return DominatorPattern(parent, path, child)
