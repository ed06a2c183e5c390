"""The base class of all IR expressions.

Nodes are immutable: a pass builds new nodes and never edits old ones, so a
module held by someone else can never be corrupted. Nodes hash and compare by
identity (``is``), which makes them cheap dictionary keys for memo tables;
use :func:`irpass.structural_equal` to compare programs by value.

``checked_type`` is the one exception to immutability: it is a cache that
type inference fills. It is derived from the node itself (the type of a node
is determined by its sub-expressions and annotations), is not part of the
node's structure, and is never read by structural equality or hashing.

``_bound_by`` is a second cache of the same kind, which type inference keeps so
that it can take the type of a sub-expression it typed before rather than walk
it again (see :mod:`irpass.ir.type_infer`). It says, for a pure dataflow
sub-expression (calls of ops, tuples, projections, constants and vars, nothing
else), which function's ``params`` tuple binds every var it uses: a constant's
is ``()`` (it uses none), a param's is its function's ``params``, an op call's
is its arguments' when they agree (a constant argument agrees with any). It is
``None`` where that is unknown or false: lets, ifs, functions, calls of
anything but an op, references to global functions (whose types depend on the
module), let-bound vars, and any expression over those or over the params of
two different functions. It is a fact about the node's structure, true
whenever it is not ``None``, never a guess.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from .types import Type

__all__ = ["Expr"]

_set = object.__setattr__


class Expr:
    """Base class of expressions; see the subclasses in :mod:`irpass.ir.nodes`."""

    __slots__ = ("_checked_type", "_bound_by")

    def __init__(self) -> None:
        _set(self, "_checked_type", None)
        _set(self, "_bound_by", None)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(
            f"{type(self).__name__} nodes are immutable (tried to set {name!r}); build a new node"
        )

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(
            f"{type(self).__name__} nodes are immutable (tried to delete {name!r})"
        )

    def __copy__(self) -> Expr:
        return self

    def __deepcopy__(self, memo: dict) -> Expr:
        return self

    def __reduce__(self) -> NoReturn:
        raise TypeError("IR nodes are not picklable; save modules with irpass.save / mod.astext()")

    @property
    def checked_type(self) -> Type:
        """The type inferred for this node; an error before type inference ran."""
        t = self._checked_type
        if t is None:
            from .describe import describe

            raise ValueError(
                f"checked_type of {describe(self)} is not available: run "
                "irpass.ir.infer_type (or the InferType pass) on the module first"
            )
        return t

    def children(self) -> tuple[Expr, ...]:
        """The direct sub-expressions, in field order."""
        return ()

    # -- conveniences --------------------------------------------------------
    def __str__(self) -> str:
        from .printer import print_expr

        return print_expr(self)

    def astext(self, show_meta_data: bool = True) -> str:
        """The text form of this expression (see :mod:`irpass.ir.printer`)."""
        from .printer import print_expr

        return print_expr(self, show_meta_data=show_meta_data)

    def __getitem__(self, index: int) -> Expr:
        from .nodes import TupleGetItem

        return TupleGetItem(self, index)

    def __iter__(self) -> NoReturn:
        # Without this, __getitem__ would make every expression an endless iterable.
        raise TypeError(f"{type(self).__name__} is not iterable; index it with expr[i]")

    def _binary(self, op_name: str, lhs: Any, rhs: Any) -> Expr:
        call, const, get_op = _builders()
        lhs = lhs if isinstance(lhs, Expr) else const(lhs)
        rhs = rhs if isinstance(rhs, Expr) else const(rhs)
        return call(get_op(op_name), (lhs, rhs))

    def __add__(self, other: Any) -> Expr:
        return self._binary("add", self, other)

    def __radd__(self, other: Any) -> Expr:
        return self._binary("add", other, self)

    def __sub__(self, other: Any) -> Expr:
        return self._binary("subtract", self, other)

    def __rsub__(self, other: Any) -> Expr:
        return self._binary("subtract", other, self)

    def __mul__(self, other: Any) -> Expr:
        return self._binary("multiply", self, other)

    def __rmul__(self, other: Any) -> Expr:
        return self._binary("multiply", other, self)

    def __truediv__(self, other: Any) -> Expr:
        return self._binary("divide", self, other)

    def __rtruediv__(self, other: Any) -> Expr:
        return self._binary("divide", other, self)

    def __neg__(self) -> Expr:
        call, _, get_op = _builders()
        return call(get_op("negative"), (self,))


_BUILDERS: tuple[Any, Any, Any] | None = None


def _builders() -> tuple[Any, Any, Any]:
    """``(Call, const, Op.get)``, imported once: those modules import this one."""
    global _BUILDERS
    if _BUILDERS is None:
        from .nodes import Call, const
        from .op import Op

        _BUILDERS = (Call, const, Op.get)
    return _BUILDERS


def set_checked_type(expr: Expr, ty: Type) -> None:
    """Record the inferred type of ``expr`` (used by type inference only).

    Type inference will check it again: it also forgets ``_bound_by``, which the
    producer restores with :func:`irpass.ir.type_infer.note_bound_by` when ``ty`` is
    what inference would give.
    """
    _set(expr, "_checked_type", ty)
    _set(expr, "_bound_by", None)
