"""Lowering a typed module to a flat dataflow graph: the first step of the export.

``@main`` is walked from its body with one explicit work stack (no recursion, so a chain of
any depth lowers). Calls of functions -- fused ``Primitive`` functions, other functions of the
module, function literals and let-bound functions -- are inlined: their params are bound to the
argument values in a fresh scope and the body is lowered there, so the ONNX graph is flat
(ONNX functions would need a domain and a version per fused group, and no runtime would run
them faster). ``Let`` binds, ``Tuple``/``TupleGetItem`` become Python tuples and
:class:`Item` values. What ONNX has no dataflow form for (``If``, recursion, a function used as
a value) is an :class:`~irpass_onnx.errors.OnnxExportError` naming the expression.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from irpass.ir import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    describe,
)
from irpass.ir.types import TensorType, TupleType, Type

from ..errors import OnnxExportError

__all__ = ["Input", "Const", "Node", "Item", "Value", "Lowered", "lower"]


class Input:
    """A parameter of ``@main``: an ONNX graph input."""

    __slots__ = ("name", "type")

    def __init__(self, name: str, type_: TensorType) -> None:
        self.name = name
        self.type = type_


class Const:
    """A constant tensor; one per :class:`irpass.ir.Constant` object (so shared weights are
    one initializer)."""

    __slots__ = ("data", "type")

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.type = TensorType(data.shape, data.dtype.name)


class Node:
    """One op call after inlining. ``inputs`` hold values (tuples for tuple arguments);
    ``extra`` carries what the peepholes of :mod:`.fusion` attach (a folded bias, ...)."""

    __slots__ = ("op", "attrs", "inputs", "type", "expr", "alias", "extra")

    def __init__(self, op: str, attrs: Any, inputs: list, type_: Type, expr: Call) -> None:
        self.op = op
        self.attrs = attrs
        self.inputs = inputs
        self.type = type_
        self.expr = expr
        self.alias: Any = None  # set when a peephole makes this node another value
        self.extra: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"Node({self.op})"


class Item:
    """Field ``index`` of a tuple-typed node (``split``, ``nn.batch_norm``)."""

    __slots__ = ("node", "index", "type", "alias")

    def __init__(self, node: Node, index: int, type_: Type) -> None:
        self.alias: Any = None
        self.node = node
        self.index = index
        self.type = type_


#: A lowered value: a tensor value, or a Python tuple of values.
Value = Input | Const | Node | Item | tuple


class _Func:
    """A function value: the function and the scope its free vars resolve in."""

    __slots__ = ("func", "scope", "name")

    def __init__(self, func: Function, scope: _Scope | None, name: str) -> None:
        self.func = func
        self.scope = scope
        self.name = name


class _Scope:
    """Bindings of vars (params of an inlined call, let vars) and the functions being inlined
    on the way here (to report recursion)."""

    __slots__ = ("parent", "env", "active")

    def __init__(self, parent: _Scope | None, env: dict, active: frozenset) -> None:
        self.parent = parent
        self.env = env
        self.active = active

    def lookup(self, var: Var) -> Any:
        scope: _Scope | None = self
        while scope is not None:
            if var in scope.env:
                return scope.env[var]
            scope = scope.parent
        raise OnnxExportError(f"%{var.name_hint} is used but not bound (a free variable)")


@dataclass
class Lowered:
    """The flat graph: graph inputs, nodes in dependency order, and the output values."""

    inputs: list[Input]
    nodes: list[Node]
    outputs: list[Any]
    items: dict = field(default_factory=dict)


# states of a work-stack entry
_ENTER, _ARGS_DONE, _BODY_DONE = 0, 1, 2


def lower(mod: IRModule) -> Lowered:
    """Flatten ``mod['main']`` into a :class:`Lowered` graph.

    Types are computed here with the ops' type relations, on the lowered values, instead of
    with ``infer_type``: that would write ``checked_type`` into the caller's module (and
    change how it prints), and after inlining every value has one type anyway.
    """
    main = mod["main"]
    inputs = []
    env: dict = {}
    for p in main.params:
        ty = p.type_annotation
        if not isinstance(ty, TensorType):
            raise OnnxExportError(
                f"parameter %{p.name_hint} of @main has type {ty}: ONNX graph inputs are "
                "tensors"
            )
        inp = Input(p.name_hint, ty)
        inputs.append(inp)
        env[p] = inp
    root = _Scope(None, env, frozenset({id(main)}))
    walker = _Walker(mod)
    out = walker.run(main.body, root)
    outputs: list[Any] = []
    _flatten_outputs(out, outputs, walker)
    return Lowered(inputs, walker.nodes, outputs, walker.items)


def type_of(value: Any) -> Type:
    """The type of a lowered value (a tuple type for a Python tuple of values)."""
    if type(value) is tuple:
        return TupleType(tuple(type_of(f) for f in value))
    return value.type


def _flatten_outputs(value: Any, out: list, walker: _Walker) -> None:
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is tuple:
            stack.extend(reversed(v))
        elif type(v) is Node and isinstance(v.type, TupleType):
            # a tuple-typed call (topk, split) returned as it is: one output per field
            stack.extend(reversed([walker.item(v, i, v.expr) for i in range(len(v.type.fields))]))
        elif type(v) is _Func:
            raise OnnxExportError(
                f"the result of @main holds a function ({describe(v.func)}): ONNX outputs "
                "are tensors"
            )
        else:
            out.append(v)


class _Walker:
    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.nodes: list[Node] = []
        self.items: dict[tuple[int, int], Item] = {}
        self.consts: dict[int, Const] = {}
        self.memo: dict[tuple[int, int], Any] = {}
        self.scopes: list[_Scope] = []  # keeps scopes alive so their ids stay unique
        self.globals: dict[str, _Func] = {}
        # (call, scope) -> (the scope its callee's body is lowered in, that body)
        self.inlining: dict[tuple[int, int], tuple[_Scope, Any]] = {}

    def const(self, c: Constant) -> Const:
        got = self.consts.get(id(c))
        if got is None:
            got = self.consts[id(c)] = Const(c.data)
        return got

    def item(self, node: Node, index: int, where: Any) -> Item:
        key = (id(node), index)
        got = self.items.get(key)
        if got is None:
            ty = node.type
            if not isinstance(ty, TupleType) or index >= len(ty.fields):
                raise OnnxExportError(f"{describe(where)}: field {index} of a {ty}")
            got = self.items[key] = Item(node, index, ty.fields[index])
        return got

    def tensor_arg(self, v: Any, call: Call) -> Any:
        if type(v) is _Func:
            raise OnnxExportError(
                f"{describe(call)}: an argument is a function ({describe(v.func)}); closures "
                "and functions as values have no ONNX form"
            )
        return v

    def run(self, expr: Any, scope: _Scope) -> Any:
        memo = self.memo
        self.scopes.append(scope)
        stack: list[tuple[Any, _Scope, int]] = [(expr, scope, _ENTER)]
        while stack:
            e, s, state = stack.pop()
            key = (id(e), id(s))
            if state == _ENTER and key in memo:
                continue
            t = type(e)
            if t is Var:
                memo[key] = s.lookup(e)
            elif t is Constant:
                memo[key] = self.const(e)
            elif t is Call:
                self._call(e, s, state, key, stack)
            elif t is Tuple:
                if state == _ENTER:
                    stack.append((e, s, _ARGS_DONE))
                    stack.extend((f, s, _ENTER) for f in reversed(e.fields))
                else:
                    memo[key] = tuple(memo[(id(f), id(s))] for f in e.fields)
            elif t is TupleGetItem:
                if state == _ENTER:
                    stack.append((e, s, _ARGS_DONE))
                    stack.append((e.tuple_value, s, _ENTER))
                else:
                    v = memo[(id(e.tuple_value), id(s))]
                    if type(v) is tuple:
                        memo[key] = v[e.index]
                    elif type(v) is Node:
                        memo[key] = self.item(v, e.index, e)
                    else:
                        raise OnnxExportError(f"{describe(e)}: indexes a non-tuple value")
            elif t is Let:
                if state == _ENTER:
                    stack.append((e, s, _ARGS_DONE))
                    stack.append((e.value, s, _ENTER))
                elif state == _ARGS_DONE:
                    s.env[e.var] = memo[(id(e.value), id(s))]
                    stack.append((e, s, _BODY_DONE))
                    stack.append((e.body, s, _ENTER))
                else:
                    memo[key] = memo[(id(e.body), id(s))]
            elif t is Function:
                memo[key] = _Func(e, s, "a function literal")
            elif t is GlobalVar:
                memo[key] = self._global(e)
            elif t is If:
                raise OnnxExportError(
                    f"{describe(e)}: control flow (If) is not exported; ONNX graphs here are "
                    "dataflow only"
                )
            elif t is Op:
                raise OnnxExportError(f"op {e.name} used as a value, not called")
            else:
                raise OnnxExportError(f"{describe(e)}: cannot export a {t.__name__}")
        return memo[(id(expr), id(scope))]

    def _global(self, gv: GlobalVar) -> _Func:
        got = self.globals.get(gv.name_hint)
        if got is None:
            got = self.globals[gv.name_hint] = _Func(self.mod[gv], None, f"@{gv.name_hint}")
        return got

    def _call(self, e: Call, s: _Scope, state: int, key: tuple, stack: list) -> None:
        memo = self.memo
        op = e.op
        if type(op) is Op:
            if state == _ENTER:
                stack.append((e, s, _ARGS_DONE))
                stack.extend((a, s, _ENTER) for a in reversed(e.args))
                return
            args = [self.tensor_arg(memo[(id(a), id(s))], e) for a in e.args]
            try:
                ty = op.type_rel(tuple(type_of(a) for a in args), e.attrs)
            except (TypeError, ValueError) as err:
                raise OnnxExportError(f"{describe(e)}: ill-typed: {err}") from err
            node = Node(op.name, e.attrs, args, ty, e)
            self.nodes.append(node)
            memo[key] = node
            return
        if state == _ENTER:
            stack.append((e, s, _ARGS_DONE))
            stack.extend((a, s, _ENTER) for a in reversed(e.args))
            stack.append((op, s, _ENTER))
            return
        if state == _ARGS_DONE:
            callee = memo[(id(op), id(s))]
            if type(callee) is not _Func:
                raise OnnxExportError(f"{describe(e)}: the callee is not a function")
            func = callee.func
            if id(func) in s.active:
                raise OnnxExportError(
                    f"{describe(e)}: {callee.name} calls itself (recursion); ONNX graphs have "
                    "no recursion, so it cannot be inlined"
                )
            if len(func.params) != len(e.args):
                raise OnnxExportError(
                    f"{describe(e)}: {len(e.args)} argument(s) for {len(func.params)} params"
                )
            env = {p: memo[(id(a), id(s))] for p, a in zip(func.params, e.args, strict=True)}
            child = _Scope(callee.scope, env, s.active | {id(func)})
            self.scopes.append(child)
            self.inlining[key] = (child, func.body)
            stack.append((e, s, _BODY_DONE))
            stack.append((func.body, child, _ENTER))
            return
        child, body = self.inlining.pop(key)
        memo[key] = memo[(id(body), id(child))]
