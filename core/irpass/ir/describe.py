"""One-line descriptions of IR nodes, for error messages and diagnostics.

:func:`describe` names a node the way a person would point at it in a
program: ``nn.conv2d(%x, %w, padding=[1, 1, 1, 1])``, ``@f(%a, <add(...)>)``,
``let %y = <multiply(...)>; ...``. Operands that are not leaves are shown as
a short ``<...>`` summary instead of being printed out, so describing a node
costs O(its arity) even when it sits on top of a million-node graph.
"""

from __future__ import annotations

from typing import Any

from .expr import Expr
from .nodes import Call, Constant, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from .op import REQUIRED, Op

__all__ = ["describe", "summarize"]

_ELLIPSIS = "..."


def describe(expr: Expr, max_len: int = 120) -> str:
    """A one-line description of ``expr`` of at most ``max_len`` characters.

    The node itself is shown with its direct operands: variables as ``%name``,
    global functions as ``@name``, constants as ``const<float32 (3, 4)>`` and
    any other operand as a summary such as ``<nn.conv2d(...)>``, ``<tuple>``,
    ``<let %x>``. Calls of ops also show their attributes that differ from the
    op's defaults. Longer results are cut and end in ``...``.
    """
    if not isinstance(expr, Expr):
        return _clip(repr(expr), max_len)
    parts = _Parts(max_len)
    t = type(expr)
    if t is Call:
        _describe_call(expr, parts)
    elif t is Tuple:
        parts.add("(")
        _operands(expr.fields, parts)
        parts.add(",)" if len(expr.fields) == 1 else ")")
    elif t is TupleGetItem:
        parts.add(_operand(expr.tuple_value))
        parts.add(f".{expr.index}")
    elif t is Let:
        parts.add(f"let {_var_name(expr.var)} = ")
        parts.add(_operand(expr.value))
        parts.add("; ")
        parts.add(_operand(expr.body))
    elif t is If:
        parts.add("if (")
        parts.add(_operand(expr.cond))
        parts.add(") ")
        parts.add(_operand(expr.true_branch))
        parts.add(" else ")
        parts.add(_operand(expr.false_branch))
    elif t is Function:
        parts.add("fn (")
        _operands(expr.params, parts)
        parts.add(")")
        if expr.ret_type is not None:
            parts.add(f" -> {expr.ret_type}")
        parts.add(" { ")
        parts.add(_operand(expr.body))
        parts.add(" }")
    elif t is Var:
        parts.add(_var_name(expr))
        if expr.type_annotation is not None:
            parts.add(f": {expr.type_annotation}")
    else:
        parts.add(_operand(expr))
    return parts.text()


def summarize(expr: Expr) -> str:
    """A short summary of ``expr`` as it appears as an operand (O(1) in its size).

    Leaves are shown in full (``%x``, ``@f``, ``const<int32 ()>``, ``add``);
    anything else as ``<...>``: ``<add(...)>``, ``<tuple>``, ``<let %x>``,
    ``<if>``, ``<fn>``.
    """
    return _operand(expr)


class _Parts:
    """Collects pieces of a description and stops collecting once past ``max_len``."""

    __slots__ = ("pieces", "length", "max_len")

    def __init__(self, max_len: int) -> None:
        self.pieces: list[str] = []
        self.length = 0
        self.max_len = max(max_len, len(_ELLIPSIS) + 1)

    @property
    def full(self) -> bool:
        return self.length > self.max_len

    def add(self, piece: str) -> None:
        if self.length <= self.max_len:
            self.pieces.append(piece)
            self.length += len(piece)

    def text(self) -> str:
        return _clip("".join(self.pieces), self.max_len)


def _clip(text: str, max_len: int) -> str:
    max_len = max(max_len, len(_ELLIPSIS) + 1)
    if len(text) <= max_len:
        return text
    return text[: max_len - len(_ELLIPSIS)] + _ELLIPSIS


def _operands(exprs: tuple[Expr, ...], parts: _Parts) -> None:
    for i, e in enumerate(exprs):
        if parts.full:
            # A call with 100,000 arguments must not build 100,000 summaries.
            break
        if i:
            parts.add(", ")
        parts.add(_operand(e))


def _var_name(v: Var) -> str:
    return f"%{v.name_hint}" if v.name_hint else "%<unnamed>"


def _callee(op: Expr) -> str:
    t = type(op)
    if t is Op:
        return op.name
    if t is GlobalVar:
        return f"@{op.name_hint}"
    if t is Var:
        return _var_name(op)
    if t is Function:
        return "<fn>"
    return _operand(op)


def _operand(e: Expr) -> str:
    t = type(e)
    if t is Var:
        return _var_name(e)
    if t is GlobalVar:
        return f"@{e.name_hint}"
    if t is Constant:
        return _constant(e)
    if t is Op:
        return e.name
    if t is Call:
        return f"<{_callee(e.op)}(...)>"
    if t is Tuple:
        return "<tuple>" if e.fields else "()"
    if t is TupleGetItem:
        # Walk a chain of projections with a loop: it may be arbitrarily long.
        indices: list[int] = []
        while type(e) is TupleGetItem and len(indices) < 8:
            indices.append(e.index)
            e = e.tuple_value
        prefix = "<...>" if type(e) is TupleGetItem else _operand(e)
        return prefix + "".join(f".{i}" for i in reversed(indices))
    if t is Let:
        return f"<let {_var_name(e.var)}>"
    if t is If:
        return "<if>"
    if t is Function:
        return "<fn>"
    return f"<{type(e).__name__}>"


def _constant(c: Constant) -> str:
    data = c.data
    dtype = data.dtype.name
    if data.ndim == 0:
        # A scalar is short: show its value, which is what a reader looks for.
        return f"const<{dtype} () = {data.item()!r}>"
    return f"const<{dtype} {tuple(data.shape)}>"


def _describe_call(call: Call, parts: _Parts) -> None:
    parts.add(_callee(call.op))
    parts.add("(")
    _operands(call.args, parts)
    op = call.op
    if type(op) is Op and call.attrs:
        first = not call.args
        for name, value in call.attrs.items():
            if parts.full:
                break
            try:
                default = op.attr_default(name)
            except KeyError:
                default = REQUIRED
            if default is not REQUIRED and value == default:
                continue
            parts.add(f"{name}={_attr_value(value)}" if first else f", {name}={_attr_value(value)}")
            first = False
    parts.add(")")


def _attr_value(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(_attr_value(v) for v in value) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)
