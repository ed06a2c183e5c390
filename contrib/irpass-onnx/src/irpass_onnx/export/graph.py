"""Lowering a typed module to a flat dataflow graph: the first step of the export.

``@main`` is walked from its body with one explicit work stack (no recursion, so a chain of
any depth lowers). Calls of functions -- fused ``Primitive`` functions, other functions of the
module, function literals and let-bound functions -- are inlined: their params are bound to the
argument values in a fresh scope and the body is lowered there, so the ONNX graph is flat
(ONNX functions would need a domain and a version per fused group, and no runtime would run
them faster). ``Let`` binds, ``Tuple``/``TupleGetItem`` become Python tuples and
:class:`Item` values.

Control flow lowers to nodes holding subgraphs (each a :class:`Lowered` of its own, whose
nodes read values of the enclosing graphs directly, as ONNX subgraphs read outer names):

- an ``If`` is a node of op ``"if"`` with the two branches in ``extra["branches"]``;
- a call of a function in the *loop form* -- its body (under any ``let`` bindings) is
  ``if (go) { f(next...) } else { result }`` with ``f`` the function itself, which is what
  the importer makes of an ONNX Loop or Scan it does not unroll -- is a node of op ``"loop"``,
  a while loop over the params: ``go`` of the arguments is its first input, the body
  (``extra["body"]``) maps the params to ``go`` and ``next`` of them, and ``result`` is
  lowered after it, of the loop's final values.

A control node's inputs are its condition (and the loop's initial values) followed by the
values of the enclosing graph its subgraphs read (``extra["captured"]`` of them), so that
whatever walks inputs (the writer, the peepholes' use counts) sees those reads. A branch or a
loop body is lowered in a scope of its own: nothing computed inside it is used outside.

What ONNX has no form for (recursion of another shape, a function used as a value) is an
:class:`~irpass_onnx.errors.OnnxExportError` naming the expression or the function.
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

__all__ = ["Input", "Param", "Const", "Node", "Item", "Value", "Lowered", "lower",
           "all_graphs", "MAX_NESTING"]


class Input:
    """A parameter of ``@main``: an ONNX graph input."""

    __slots__ = ("name", "type")

    def __init__(self, name: str, type_: TensorType) -> None:
        self.name = name
        self.type = type_


class Param:
    """A param of a loop body (a loop-carried value): an input of the body's subgraph, named
    when the subgraph is written."""

    __slots__ = ("hint", "type")

    def __init__(self, hint: str, type_: TensorType) -> None:
        self.hint = hint
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
Value = Input | Param | Const | Node | Item | tuple


class _Func:
    """A function value: the function and the scope its free vars resolve in."""

    __slots__ = ("func", "scope", "name")

    def __init__(self, func: Function, scope: _Scope | None, name: str) -> None:
        self.func = func
        self.scope = scope
        self.name = name


class _Scope:
    """Bindings of vars (params of an inlined call, let vars), the functions being inlined
    on the way here (to report recursion), the node list of the graph being built (the main
    graph, a branch or a loop body), and ``phase``: ``(id of a loop's If, what to lower of
    it, id of its recursive call)`` in a scope lowering a loop function's body, else None;
    ``depth``: how many subgraphs enclose that graph."""

    __slots__ = ("parent", "env", "active", "graph", "phase", "depth")

    def __init__(self, parent: _Scope | None, env: dict, active: frozenset, graph: list,
                 phase: tuple[int, int, int] | None = None, depth: int = 0) -> None:
        self.parent = parent
        self.env = env
        self.active = active
        self.graph = graph
        self.phase = phase
        self.depth = depth

    def lookup(self, var: Var) -> Any:
        scope: _Scope | None = self
        while scope is not None:
            if var in scope.env:
                return scope.env[var]
            scope = scope.parent
        raise OnnxExportError(f"%{var.name_hint} is used but not bound (a free variable)")


@dataclass
class Lowered:
    """The flat graph: graph inputs, nodes in dependency order, and the output values. For a
    branch, ``inputs`` is empty; for a loop body, its :class:`Param` values."""

    inputs: list[Any]
    nodes: list[Node]
    outputs: list[Any]
    items: dict = field(default_factory=dict)


#: The most subgraphs nested in one another that the export writes: deeper, the model would
#: pass protobuf's limit of 100 nested messages (three per level: a node, its attribute, the
#: graph), past which onnx and onnxruntime cannot read it.
MAX_NESTING = 31

# states of a work-stack entry
_ENTER, _ARGS_DONE, _BODY_DONE = 0, 1, 2
# further states of a call of a loop function: its phases, lowered one after the other
_LOOP_BODY, _LOOP_COND, _LOOP_DONE, _LOOP_RESULT = 3, 4, 5, 6
# what a loop-phase scope lowers of the loop's If: the condition, the recursive call's
# arguments (the next round's values), the result
_COND, _NEXT, _RESULT = 0, 1, 2


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
    walker = _Walker(mod)
    root = _Scope(None, env, frozenset({id(main)}), walker.nodes)
    out = walker.run(main.body, root)
    outputs: list[Any] = []
    _flatten_outputs(out, outputs, walker)
    return Lowered(inputs, walker.nodes, outputs, walker.items)


def all_graphs(lowered: Lowered) -> list[Lowered]:
    """``lowered`` and every branch and loop body nested in it."""
    out, stack = [], [lowered]
    while stack:
        g = stack.pop()
        out.append(g)
        for n in g.nodes:
            stack.extend(n.extra.get("branches", ()))
            if "body" in n.extra:
                stack.append(n.extra["body"])
    return out


def _captured(graphs: list[tuple[list, list, list]]) -> list[Any]:
    """The values of enclosing graphs that the subgraphs ``(params, nodes, outputs)`` read
    (nodes and tuple fields; graph inputs and constants are visible everywhere), once each,
    in order of first use."""
    out: list[Any] = []
    seen: set[int] = set()
    for params, nodes, outputs in graphs:
        made = {id(n) for n in nodes} | {id(p) for p in params}
        reads: list[Any] = [a for n in nodes for a in n.inputs]
        reads.extend(outputs)
        while reads:
            v = reads.pop()
            t = type(v)
            if t is tuple:
                reads.extend(v)
            elif (t is Node and id(v) not in made) or (t is Item and id(v.node) not in made) \
                    or (t is Param and id(v) not in made):
                if id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
    return out


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


def _rebuild(ty: Type, leaves: Any) -> Any:
    """A value of type ``ty`` from the iterator ``leaves`` of its tensors (tuples as Python
    tuples)."""
    if type(ty) is TupleType:
        return tuple(_rebuild(f, leaves) for f in ty.fields)
    return next(leaves)


def _tail(expr: Any) -> Any:
    """What ``expr`` evaluates to last: the body of its ``let`` bindings, and the value of
    ``let %v = value; %v`` (A-normal form binds an If and a call so)."""
    while type(expr) is Let:
        expr = expr.value if expr.body is expr.var else expr.body
    return expr


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
        # (if, scope) -> the scopes its branches are lowered in
        self.branching: dict[tuple[int, int], tuple[_Scope, _Scope]] = {}
        # (call, scope) -> the state of a loop being lowered (see _loop_step)
        self.loops: dict[tuple[int, int], dict[str, Any]] = {}

    def scope(self, *args: Any) -> _Scope:
        """A new scope (kept alive so that its id, part of the memo keys, stays unique)."""
        got = _Scope(*args)
        self.scopes.append(got)
        return got

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
                    value = memo[(id(e.value), id(s))]
                    if type(value) is _Func and value.name == "a function literal":
                        value = _Func(value.func, value.scope, f"%{e.var.name_hint}")
                    s.env[e.var] = value
                    stack.append((e, s, _BODY_DONE))
                    stack.append((e.body, s, _ENTER))
                else:
                    memo[key] = memo[(id(e.body), id(s))]
            elif t is Function:
                memo[key] = _Func(e, s, "a function literal")
            elif t is GlobalVar:
                memo[key] = self._global(e)
            elif t is If:
                if s.phase is not None and s.phase[0] == id(e):
                    self._loop_if(e, s, state, key, stack)
                else:
                    self._if(e, s, state, key, stack)
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
            s.graph.append(node)
            memo[key] = node
            return
        if state == _ENTER:
            stack.append((e, s, _ARGS_DONE))
            stack.extend((a, s, _ENTER) for a in reversed(e.args))
            stack.append((op, s, _ENTER))
            return
        if state >= _LOOP_BODY:
            self._loop_step(e, s, state, key, stack)
            return
        if state == _ARGS_DONE:
            if s.phase is not None and s.phase[2] == id(e):
                # the loop's recursive call, in the phase lowering the next round's values
                memo[key] = tuple(memo[(id(a), id(s))] for a in e.args)
                return
            callee = memo[(id(op), id(s))]
            if type(callee) is not _Func:
                raise OnnxExportError(f"{describe(e)}: the callee is not a function")
            func = callee.func
            form = None if id(func) in s.active else self._loop_form(callee)
            if form is not None:
                self._loop_start(e, s, key, callee, form, stack)
                return
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
            child = self.scope(callee.scope, env, s.active | {id(func)}, s.graph, None,
                               s.depth)
            self.inlining[key] = (child, func.body)
            stack.append((e, s, _BODY_DONE))
            stack.append((func.body, child, _ENTER))
            return
        child, body = self.inlining.pop(key)
        memo[key] = memo[(id(body), id(child))]

    def nested(self, e: Any, s: _Scope) -> int:
        """The depth of a subgraph of ``e`` lowered in ``s``; an error past
        :data:`MAX_NESTING`."""
        depth = s.depth + 1
        if depth > MAX_NESTING:
            raise OnnxExportError(
                f"{describe(e)}: control flow nested {depth} deep; an ONNX model holds at "
                f"most {MAX_NESTING} subgraphs in one another (protobuf reads messages up to "
                "100 deep)")
        return depth

    # -- If -----------------------------------------------------------------------------------

    def _if(self, e: If, s: _Scope, state: int, key: tuple, stack: list) -> None:
        memo = self.memo
        if state == _ENTER:
            stack.append((e, s, _ARGS_DONE))
            stack.append((e.cond, s, _ENTER))
            return
        if state == _ARGS_DONE:
            # each branch in a scope (and node list) of its own: a value computed in a branch
            # is not visible in the enclosing graph, nor in the other branch
            depth = self.nested(e, s)
            then = self.scope(s, {}, s.active, [], None, depth)
            other = self.scope(s, {}, s.active, [], None, depth)
            self.branching[key] = (then, other)
            stack.append((e, s, _BODY_DONE))
            stack.append((e.false_branch, other, _ENTER))
            stack.append((e.true_branch, then, _ENTER))
            return
        then, other = self.branching.pop(key)
        cond = self.tensor_arg(memo[(id(e.cond), id(s))], e)
        if cond.type != TensorType((), "bool"):
            raise OnnxExportError(f"{describe(e)}: the condition is {cond.type}, not a bool "
                                  "scalar")
        branches, types = [], []
        for sc, body in ((then, e.true_branch), (other, e.false_branch)):
            value = memo[(id(body), id(sc))]
            leaves: list[Any] = []
            _flatten_outputs(value, leaves, self)
            branches.append(Lowered([], sc.graph, leaves, self.items))
            types.append(type_of(value))
        if types[0] != types[1]:
            raise OnnxExportError(f"{describe(e)}: the branches give {types[0]} and {types[1]}")
        outs = branches[0].outputs
        if not outs:
            memo[key] = _rebuild(types[0], iter(()))
            return
        captured = _captured([([], b.nodes, b.outputs) for b in branches])
        single = len(outs) == 1 and type(types[0]) is TensorType
        ty = types[0] if single else TupleType(tuple(type_of(v) for v in outs))
        node = Node("if", None, [cond, *captured], ty, e)  # type: ignore[arg-type]
        node.extra["branches"] = branches
        node.extra["captured"] = len(captured)
        s.graph.append(node)
        if single:
            memo[key] = node
        else:
            items = iter([self.item(node, k, e) for k in range(len(outs))])
            memo[key] = _rebuild(types[0], items)

    # -- loops --------------------------------------------------------------------------------

    def _loop_form(self, callee: _Func) -> tuple[If, Call] | None:
        """The If of ``callee``'s body and its recursive call when the function is in the
        loop form (see the module docstring; ``let`` bindings may come before the If and
        before the call, see :func:`_tail`), else None."""
        func = callee.func
        body = _tail(func.body)
        if type(body) is not If:
            return None
        rec = _tail(body.true_branch)
        if type(rec) is not Call or len(rec.args) != len(func.params):
            return None
        target: Any = None
        if type(rec.op) is Var and callee.scope is not None:
            try:
                target = callee.scope.lookup(rec.op)
            except OnnxExportError:
                return None
        elif type(rec.op) is GlobalVar:
            target = self._global(rec.op)
        if type(target) is not _Func or target.func is not func:
            return None
        return body, rec

    def _loop_if(self, e: If, s: _Scope, state: int, key: tuple, stack: list) -> None:
        """The loop's own If, in a scope of one of the loop's phases: its condition, the next
        round's values (the recursive call's arguments, as a tuple) or its result."""
        mode = s.phase[1]  # type: ignore[index]
        # for the next round's values, the then branch: its recursive call gives the tuple of
        # its arguments (see _call)
        part = e.cond if mode == _COND else e.true_branch if mode == _NEXT else e.false_branch
        if state == _ENTER:
            stack.append((e, s, _ARGS_DONE))
            stack.append((part, s, _ENTER))
            return
        self.memo[key] = self.memo[(id(part), id(s))]

    def _loop_start(self, e: Call, s: _Scope, key: tuple, callee: _Func,
                    form: tuple[If, Call], stack: list) -> None:
        func = callee.func
        init = [self.memo[(id(a), id(s))] for a in e.args]
        name = callee.name
        if len(init) != len(func.params):
            raise OnnxExportError(
                f"{describe(e)}: {len(init)} argument(s) for {len(func.params)} params")
        for p, v in zip(func.params, init, strict=True):
            if type(v) is tuple or type(v) is _Func or not isinstance(v.type, TensorType):
                raise OnnxExportError(
                    f"{describe(e)}: the loop {name} carries %{p.name_hint}, which is not a "
                    "tensor; ONNX Loop carries tensors")
        active = s.active | {id(func)}
        state = {"form": form, "init": init, "active": active, "callee": callee}
        self.loops[key] = state
        # phase 1, in the enclosing graph: the condition of the initial values
        self.nested(e, s)
        first = self.scope(callee.scope, dict(zip(func.params, init, strict=True)), active,
                           s.graph, (id(form[0]), _COND, id(form[1])), s.depth)
        state["first"] = first
        stack.append((e, s, _LOOP_BODY))
        stack.append((func.body, first, _ENTER))

    def _loop_step(self, e: Call, s: _Scope, state: int, key: tuple, stack: list) -> None:
        memo = self.memo
        st = self.loops[key]
        callee: _Func = st["callee"]
        func = callee.func
        body = func.body
        form_id, rec_id = id(st["form"][0]), id(st["form"][1])
        if state == _LOOP_BODY:
            # phase 2, in the body: the next round's values of the params
            st["cond0"] = memo[(id(body), id(st["first"]))]
            params = [Param(p.name_hint, v.type)
                      for p, v in zip(func.params, st["init"], strict=True)]
            st["params"] = params
            st["nodes"] = []
            nxt = self.scope(callee.scope, dict(zip(func.params, params, strict=True)),
                             st["active"], st["nodes"], (form_id, _NEXT, rec_id), s.depth + 1)
            st["next"] = nxt
            stack.append((e, s, _LOOP_COND))
            stack.append((body, nxt, _ENTER))
        elif state == _LOOP_COND:
            # phase 3, in the body: the condition of the next round's values
            values = memo[(id(body), id(st["next"]))]
            for p, param, v in zip(func.params, st["params"], values, strict=True):
                if type(v) is tuple or type(v) is _Func or v.type != param.type:
                    got = type_of(v) if type(v) is not _Func else "a function"
                    raise OnnxExportError(
                        f"{describe(e)}: the loop {callee.name} passes {got} to %{p.name_hint} "
                        f"of type {param.type}; ONNX Loop carries values of one type")
            st["values"] = values
            again = self.scope(callee.scope, dict(zip(func.params, values, strict=True)),
                               st["active"], st["nodes"], (form_id, _COND, rec_id), s.depth + 1)
            st["again"] = again
            stack.append((e, s, _LOOP_DONE))
            stack.append((body, again, _ENTER))
        elif state == _LOOP_DONE:
            cond_out = memo[(id(body), id(st["again"]))]
            cond0 = st["cond0"]
            for c in (cond0, cond_out):
                if type(c) is tuple or type(c) is _Func or c.type != TensorType((), "bool"):
                    raise OnnxExportError(
                        f"{describe(e)}: the condition of the loop {callee.name} is not a "
                        "bool scalar")
            params, values = st["params"], st["values"]
            outputs = [cond_out, *values]
            sub = Lowered(params, st["nodes"], outputs, self.items)
            captured = _captured([(params, sub.nodes, outputs)])
            ty = TupleType(tuple(p.type for p in params))
            node = Node("loop", None, [cond0, *st["init"], *captured], ty, e)
            node.extra["body"] = sub
            node.extra["captured"] = len(captured)
            s.graph.append(node)
            finals = [self.item(node, k, e) for k in range(len(params))]
            # phase 4, in the enclosing graph: the result, of the final values
            last = self.scope(callee.scope, dict(zip(func.params, finals, strict=True)),
                              st["active"], s.graph, (form_id, _RESULT, rec_id), s.depth)
            st["last"] = last
            stack.append((e, s, _LOOP_RESULT))
            stack.append((body, last, _ENTER))
        else:
            memo[key] = memo[(id(body), id(st["last"]))]
            del self.loops[key]
