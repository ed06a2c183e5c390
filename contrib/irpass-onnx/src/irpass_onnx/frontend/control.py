"""Converters of the ONNX control-flow, sequence and optional ops: If, Loop, Scan, Sequence*,
Optional*.

``If`` becomes an IR ``If`` whose branches are the two subgraphs, imported in the enclosing
scope (both must give every output the same type; with a condition known at import only the
branch taken is imported).

``Loop`` and ``Scan`` run a body subgraph round after round. Two forms:

- **unrolled**, when the number of rounds is known at import, the condition of every round
  folds to a constant and the rounds hold at most :data:`UNROLL_BUDGET` ONNX nodes: the body
  is imported once per round with the iteration number a constant. Shapes may then depend on
  the iteration number and loop-carried sequences may grow, and the result exports as a flat
  graph;
- otherwise, as TVM Relay's ONNX frontend does, a **local recursive function**: one round per
  call, the next round a tail call (which the evaluator runs in constant memory, so a loop of
  any length runs without deep recursion). Loop-carried values must keep their types. Scan
  outputs are written row by row into a buffer of the static number of rounds, so a Loop with
  scan outputs needs its trip count known and a condition that cannot end it early.

A ``Loop`` with scan outputs whose trip count or initial condition is a run-time value is
imported through :mod:`.dynamic` (converted again when the values are known) when its body
reads no value of the enclosing graphs.

Sequences are IR tuples, their length known at import; an optional is its value when present
and a marker (in the importer's ``absent`` set) when not.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from irpass.ir import (
    Call,
    Constant,
    Expr,
    Function,
    FuncType,
    If,
    Let,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    const,
)
from onnx import GraphProto, NodeProto, helper

from ..dtypes import onnx_type_of
from .context import NodeContext
from .dynamic import RuntimeOperand, dynamic_call
from .graph import implicit_inputs, subgraphs
from .registry import converter
from .tensor import call, ints_of, norm_axis

__all__ = ["UNROLL_BUDGET", "MAX_SCAN_ELEMENTS"]

#: The most ONNX nodes (body nodes times rounds) a loop is unrolled into.
UNROLL_BUDGET = 1024
#: The most elements a Loop's scan output (allocated for every round at once) may hold.
MAX_SCAN_ELEMENTS = 2**28

_I64 = TensorType((), "int64")
_BOOL = TensorType((), "bool")


# -- shared helpers --------------------------------------------------------------------------


def _node_count(graph: GraphProto) -> int:
    """The nodes of ``graph`` and of its nested subgraphs."""
    count, stack = 0, [graph]
    while stack:
        g = stack.pop()
        count += len(g.node)
        for node in g.node:
            stack.extend(sub for _name, sub in subgraphs(node))
    return count


def _graph_attr(ctx: NodeContext, name: str) -> GraphProto:
    """Graph attribute ``name`` of the node."""
    g = ctx.attr(name)
    if not isinstance(g, GraphProto):
        ctx.fail(f"attribute {name!r} must be a graph")
    return g


def _scalar(ctx: NodeContext, expr: Expr, dtype: str, what: str) -> Expr:
    """``expr``, a one-element tensor of ``dtype``, as a scalar."""
    ty = ctx.type_of_expr(expr)
    if not isinstance(ty, TensorType) or ty.dtype != dtype or int(np.prod(ty.shape)) != 1:
        ctx.fail(f"{what} must be a single {dtype} value, got {ty}")
    if ty.shape == ():
        return expr
    if isinstance(expr, Constant):
        return const(expr.data.reshape(()))
    return call("reshape", [expr], newshape=[])


def _known_scalar(expr: Expr) -> object | None:
    """The Python value of a constant one-element ``expr``, else None."""
    return expr.data.reshape(()).item() if isinstance(expr, Constant) else None


def _tensor_type(ctx: NodeContext, expr: Expr, what: str) -> TensorType:
    ty = ctx.type_of_expr(expr)
    if not isinstance(ty, TensorType):
        ctx.fail(f"{what} must be a tensor, got {ty}")
    return ty


def _check_present(ctx: NodeContext, exprs: Sequence[Expr], what: str) -> None:
    absent = ctx.importer.absent
    for k, e in enumerate(exprs):
        if e in absent:
            ctx.fail(f"{what} {k} is an optional without a value; irpass carries only values "
                     "known to be present through a loop it does not unroll")


def _outer_bindings(ctx: NodeContext, graph: GraphProto) -> tuple[dict[str, Expr], list]:
    """Let-bind the values of the enclosing graphs that ``graph`` reads and that are computed
    (not vars, constants or absent markers): a function body reading them directly would
    compute them again in every call. Returns the bindings for the subgraph's importer and
    the ``(var, value)`` pairs to wrap the result in."""
    imp = ctx.importer
    bindings: dict[str, Expr] = {}
    lets: list[tuple[Var, Expr]] = []
    for name in implicit_inputs(graph):
        expr = imp.env.get(name)
        if expr is None or isinstance(expr, (Var, Constant)) or expr in imp.absent:
            continue  # undefined: the subgraph's import names it
        v = Var(name, imp.type_of_expr(expr, ctx))
        bindings[name] = v
        lets.append((v, expr))
    return bindings, lets


def _wrap_lets(lets: Sequence[tuple[Var, Expr]], body: Expr) -> Expr:
    for v, value in reversed(lets):
        body = Let(v, value, body)
    return body


def _stack_rows(ctx: NodeContext, rows: Sequence[Expr], axis: int, what: str) -> Expr:
    """The tensors ``rows`` (equal types) stacked along a new ``axis``."""
    first = _tensor_type(ctx, rows[0], what)
    for k, r in enumerate(rows[1:], start=1):
        ty = _tensor_type(ctx, r, what)
        if ty != first:
            ctx.fail(f"{what} is {first} in round 0 but {ty} in round {k}; the rounds' values "
                     "must have one type to be stacked")
    axis = norm_axis(ctx, axis, len(first.shape) + 1, f"the axis of {what}")
    parts = [call("expand_dims", [r], axis=axis, num_newaxis=1) for r in rows]
    if len(parts) == 1:
        return parts[0]
    return call("concatenate", [Tuple(parts)], axis=axis)


def _write_row(buf: Expr, row: Expr, index: Expr) -> Expr:
    """``buf`` with its row ``index`` (along axis 0) replaced by ``row``: one copy of the
    buffer per round."""
    at = call("reshape", [index], newshape=[1, 1])
    return call("scatter_nd", [buf, at, call("expand_dims", [row], axis=0, num_newaxis=1)],
                mode="update")


def _empty_rows(ctx: NodeContext, row: Expr, what: str) -> Expr:
    """No rows of ``row``'s type: a tensor of shape ``(0, *row.shape)``."""
    ty = _tensor_type(ctx, row, what)
    return call("zeros", [], shape=[0, *ty.shape], dtype=ty.dtype)


def _from_axis0(buf: Expr, axis: int, rank: int) -> Expr:
    """``buf`` with its axis 0 moved to ``axis`` (of ``rank`` axes)."""
    if axis == 0:
        return buf
    order = list(range(1, rank))
    order.insert(axis, 0)
    return call("transpose", [buf], axes=order)


def _recursive(ctx: NodeContext, params: list[Var], state: list[Expr], go: Expr,
               body_outs: list[Expr], init: list[Expr]) -> list[Expr]:
    """The loop ``fn(params) { if (go) { fn(next) } else { state } }`` called on ``init``:
    ``params`` are the round's values (the counter first), ``state`` what it returns when
    done, ``body_outs`` the next round's arguments. Returns the fields of the result."""
    ret = TupleType(tuple(ctx.type_of_expr(s) for s in state))
    loop = Var(f"loop_{ctx.node.name or ctx.index}",
               FuncType([p.type_annotation for p in params], ret))
    fn = Function(params, If(go, Call(loop, body_outs), Tuple(state)), ret)
    result = Let(loop, fn, Call(loop, init))
    ctx.type_of_expr(result)
    return [TupleGetItem(result, k) for k in range(len(state))]


# -- If -----------------------------------------------------------------------------------------


@converter("If", since=1)
def _if(ctx: NodeContext) -> list[Expr]:
    imp = ctx.importer
    cond = _scalar(ctx, ctx.input(0), "bool", "the condition")
    known = _known_scalar(cond)
    if known is not None:
        branch = "then_branch" if known else "else_branch"
        outs = imp.import_subgraph(ctx, branch, [])
        if len(outs) != ctx.num_outputs:
            ctx.fail(f"{branch} has {len(outs)} output(s) but the node {ctx.num_outputs}")
        return outs
    then = imp.import_subgraph(ctx, "then_branch", [])
    other = imp.import_subgraph(ctx, "else_branch", [])
    if len(then) != len(other):
        ctx.fail(f"then_branch has {len(then)} output(s) and else_branch {len(other)}")
    if len(then) != ctx.num_outputs:
        ctx.fail(f"the branches have {len(then)} output(s) but the node {ctx.num_outputs}")
    outs: list[Expr | None] = []
    for k, (a, b) in enumerate(zip(then, other, strict=True)):
        a_absent, b_absent = a in imp.absent, b in imp.absent
        if a_absent and b_absent:
            outs.append(a)
            continue
        if a_absent or b_absent:
            ctx.fail(f"output {k} is an optional with a value in one branch and without in "
                     "the other; irpass needs to know at import whether it has one")
        ta, tb = ctx.type_of_expr(a), ctx.type_of_expr(b)
        if ta != tb:
            ctx.fail(f"output {k} is {ta} in then_branch but {tb} in else_branch; irpass "
                     "needs both branches to give it one type")
        outs.append(None)
    live = [k for k, o in enumerate(outs) if o is None]
    if len(live) == 1:
        k = live[0]
        outs[k] = If(cond, then[k], other[k])
    elif live:
        both = If(cond, Tuple([then[k] for k in live]), Tuple([other[k] for k in live]))
        for j, k in enumerate(live):
            outs[k] = TupleGetItem(both, j)
    return outs  # type: ignore[return-value]


# -- Loop -------------------------------------------------------------------------------------


@converter("Loop", since=1)
def _loop(ctx: NodeContext) -> list[Expr]:
    body = _graph_attr(ctx, "body")
    carried = [ctx.input(i) for i in range(2, ctx.num_inputs)]
    n = len(carried)
    n_scan = len(body.output) - 1 - n
    if len(body.input) != n + 2:
        ctx.fail(f"its body has {len(body.input)} inputs, expected {n + 2} (the iteration "
                 "number, the condition and the loop-carried values)")
    if n_scan < 0:
        ctx.fail(f"its body has {len(body.output)} outputs, expected at least {n + 1}")
    if ctx.num_outputs > n + n_scan:
        ctx.fail(f"the node has {ctx.num_outputs} outputs but the body gives {n + n_scan}")
    trip = _scalar(ctx, ctx.input(0), "int64", "the trip count") if ctx.has_input(0) else None
    cond = _scalar(ctx, ctx.input(1), "bool", "the condition") if ctx.has_input(1) else None
    if trip is None and cond is None:
        ctx.fail("it has neither a trip count nor a condition: the loop never ends")
    rounds = None if trip is None else _known_scalar(trip)
    first = None if cond is None else _known_scalar(cond)
    if (rounds is not None and (cond is None or first is not None)
            and 0 < rounds * max(_node_count(body), 1) <= UNROLL_BUDGET):
        unrolled = _unroll_loop(ctx, int(rounds), cond is not None, bool(first), carried, n)
        if unrolled is not None:
            return unrolled
    if n_scan and (rounds is None or (cond is not None and first is None)):
        return _runtime_loop_operands(ctx, body, carried)
    _check_present(ctx, carried, "loop-carried value")
    return _recursive_loop(ctx, body, trip, cond, carried, n, n_scan, rounds)


def _runtime_loop_operands(ctx: NodeContext, body: GraphProto, carried: list[Expr]) -> list[Expr]:
    """A Loop with scan outputs whose trip count or first condition is a run-time value:
    imported as an ``onnx.node`` call (see :mod:`.dynamic`), converted again when the values
    are known. A node converted on its own sees no enclosing graph, so the values of it that
    the body reads are passed in as extra loop-carried values first."""
    imp = ctx.importer
    outer = implicit_inputs(body)
    for what, exprs in (("loop-carried value", carried),
                        ("value of the enclosing graph", [imp.value(o) for o in outer])):
        for k, e in enumerate(exprs):
            if e in imp.absent or not isinstance(ctx.type_of_expr(e), TensorType):
                ctx.fail(f"it has scan outputs and a run-time trip count or condition, and "
                         f"the body's {what} {k} is not a tensor; irpass needs the trip count "
                         "known at import")
    cause = (RuntimeOperand(0, "trip count") if ctx.has_input(0) and ctx.known(0) is None
             else RuntimeOperand(1, "cond"))
    n = len(carried)
    # a loop-carried value the model gives no type keeps its initial one (checked at run time)
    types: dict[str, TensorType] = {}
    for name, e in zip(ctx.node.output[:n], carried, strict=False):
        if name and name not in imp.declared and imp.inferred_type(name) is None:
            types[name] = ctx.type_of_expr(e)
    node = ctx.node
    if outer:
        node, extra = _outer_as_carried(ctx, body, outer, n)
        types.update(extra)
    outs = dynamic_call(imp, NodeContext(imp, ctx.index, node), cause,
                        {**imp.declared, **types})
    return outs[:n] + outs[n + len(outer):]


def _outer_as_carried(ctx: NodeContext, body: GraphProto, outer: list[str],
                      n: int) -> tuple[NodeProto, dict[str, TensorType]]:
    """A copy of the Loop node whose body reads the enclosing values ``outer`` as extra
    loop-carried values (passed through unchanged), and the types of its extra outputs."""
    node = NodeProto()
    node.CopyFrom(ctx.node)
    sub = next(a for a in node.attribute if a.name == "body").g
    tag = f"{ctx.node.name or 'loop'}_{ctx.index}"
    renamed = {o: f"{o}__{tag}_in" for o in outer}
    for inner in _graphs_in(sub):
        for nd in inner.node:
            for j, name in enumerate(nd.input):
                if name in renamed:
                    nd.input[j] = renamed[name]
    passed = []
    extra: dict[str, TensorType] = {}
    for j, o in enumerate(outer):
        ty = ctx.type_of_expr(ctx.importer.value(o))
        proto = helper.make_tensor_type_proto(onnx_type_of(ty.dtype, o), ty.shape)
        sub.input.append(helper.make_value_info(renamed[o], proto))
        out = f"{o}__{tag}_out"
        sub.node.append(helper.make_node("Identity", [renamed[o]], [out]))
        passed.append(helper.make_value_info(out, proto))
        final = f"{o}__{tag}_final"
        node.input.append(o)
        node.output.insert(n + j, final)
        extra[final] = ty
    for g_out in sub.output:  # a body output that is an enclosing value read directly
        if g_out.name in renamed:
            g_out.name = renamed[g_out.name]
    for j, vi in enumerate(passed):
        sub.output.insert(1 + n + j, vi)
    return node, extra


def _graphs_in(graph: GraphProto) -> list[GraphProto]:
    """``graph`` and the subgraphs nested in it."""
    out, stack = [], [graph]
    while stack:
        g = stack.pop()
        out.append(g)
        for nd in g.node:
            stack.extend(sub for _name, sub in subgraphs(nd))
    return out


def _unroll_loop(ctx: NodeContext, rounds: int, has_cond: bool, first: bool,
                 carried: list[Expr], n: int) -> list[Expr] | None:
    """The Loop unrolled, or None when a round's condition is not known at import."""
    imp = ctx.importer
    values = list(carried)
    rows: list[list[Expr]] = []
    go = first if has_cond else True
    for r in range(rounds):
        if not go:
            break
        outs = imp.import_subgraph(ctx, "body", [const(np.int64(r)), const(np.bool_(go))]
                                   + values)
        if has_cond:
            cond_out = _scalar(ctx, outs[0], "bool", "the body's condition output")
            go = _known_scalar(cond_out)
            if go is None:
                return None
        values = outs[1:1 + n]
        rows.append(outs[1 + n:])
    n_scan = len(_graph_attr(ctx, "body").output) - 1 - n
    if n_scan and not rows:
        return None  # no rounds: the recursive form types the empty scan outputs
    scans = [_stack_rows(ctx, [row[k] for row in rows], 0, f"scan output {k}")
             for k in range(n_scan)]
    return values + scans


def _recursive_loop(ctx: NodeContext, body: GraphProto, trip: Expr | None, cond: Expr | None,
                    carried: list[Expr], n: int, n_scan: int, rounds: int | None) -> list[Expr]:
    imp = ctx.importer
    bindings, lets = _outer_bindings(ctx, body)
    # the params take the body's input names, so the printed IR reads like the model
    names = [inp.name for inp in body.input]
    i = Var(names[0] or "i", _I64)
    c = Var(names[1] or "cond", _BOOL)
    vs = [Var(names[2 + k] or f"v{k}", ctx.type_of_expr(e)) for k, e in enumerate(carried)]
    outs = imp.import_subgraph(ctx, "body", [i, c if cond is not None else const(True), *vs],
                               bindings)
    v_out = outs[1:1 + n]
    for k, (v, e) in enumerate(zip(vs, v_out, strict=True)):
        if e in imp.absent:
            ctx.fail(f"the body's loop-carried output {k} is an optional without a value")
        ty = ctx.type_of_expr(e)
        if ty != v.type_annotation:
            ctx.fail(f"loop-carried value {k} is {v.type_annotation} on entry but {ty} after a "
                     "round; irpass needs it to keep its type (or the loop unrolled: a trip "
                     f"count known at import and at most {UNROLL_BUDGET} nodes unrolled)")
    go: Expr | None = None if trip is None else call("less", [i, trip])
    params: list[Var] = [i]
    nxt: list[Expr] = [call("add", [i, const(np.int64(1))])]
    init: list[Expr] = [const(np.int64(0))]
    cond_out = None
    if cond is not None:
        cond_out = _scalar(ctx, outs[0], "bool", "the body's condition output")
        go = c if go is None else call("logical_and", [go, c])
        params.append(c)
        nxt.append(cond_out)
        init.append(cond)
    params += vs
    nxt += v_out
    init += carried
    bufs: list[Var] = []
    if n_scan:
        stops_early = cond is not None and not (
            _known_scalar(cond) is True
            and (cond_out is c or _known_scalar(cond_out) is True))
        if rounds is None or stops_early:
            ctx.fail("its scan outputs' length is the number of rounds, which its condition "
                     "decides at run time; irpass needs static shapes")
        if rounds == 0:  # nothing runs: the initial values and empty scan outputs
            return carried + [_empty_rows(ctx, row, f"scan output {k}")
                              for k, row in enumerate(outs[1 + n:])]
        for k, row in enumerate(outs[1 + n:]):
            rty = _tensor_type(ctx, row, f"scan output {k}")
            size = int(rounds) * int(np.prod(rty.shape))
            if size > MAX_SCAN_ELEMENTS:  # a "while" loop's huge trip count, say
                ctx.fail(f"scan output {k} would hold {size} elements ({rounds} rounds of "
                         f"{rty}); irpass allocates scan outputs whole, up to "
                         f"{MAX_SCAN_ELEMENTS}")
            buf = Var(f"scan{k}", TensorType((int(rounds), *rty.shape), rty.dtype))
            bufs.append(buf)
            nxt.append(_write_row(buf, row, i))
            init.append(call("zeros", [], shape=[int(rounds), *rty.shape], dtype=rty.dtype))
    assert go is not None  # the converter refused a loop without trip count and condition
    fields = _recursive(ctx, params + bufs, [*vs, *bufs], go, nxt, init)
    return _wrap_fields(lets, fields)


def _wrap_fields(lets: list[tuple[Var, Expr]], fields: list[Expr]) -> list[Expr]:
    if not lets:
        return fields
    result = fields[0].tuple_value  # every field indexes the one loop call
    wrapped = _wrap_lets(lets, result)
    return [TupleGetItem(wrapped, k) for k in range(len(fields))]


# -- Scan -------------------------------------------------------------------------------------


@converter("Scan", since=9)
def _scan_9(ctx: NodeContext) -> list[Expr]:
    m = int(ctx.attr("num_scan_inputs"))
    inputs = [ctx.input(i) for i in range(ctx.num_inputs)]
    if not 1 <= m <= len(inputs):
        ctx.fail(f"num_scan_inputs {m} is not between 1 and its {len(inputs)} inputs")
    states, xs = inputs[:len(inputs) - m], inputs[len(inputs) - m:]
    body = _graph_attr(ctx, "body")
    k = len(body.output) - len(states)
    in_axes = _per_value(ctx, "scan_input_axes", m, 0)
    in_dirs = _per_value(ctx, "scan_input_directions", m, 0)
    out_axes = _per_value(ctx, "scan_output_axes", k, 0)
    out_dirs = _per_value(ctx, "scan_output_directions", k, 0)
    return _scan(ctx, states, xs, in_axes, in_dirs, out_axes, out_dirs)


@converter("Scan", since=8)
def _scan_8(ctx: NodeContext) -> list[Expr]:
    # opset 8: axis 0 of every input is a batch axis, the scan runs along axis 1 of each
    # batch entry; done here as one opset-9 scan per batch entry, stacked
    if ctx.has_input(0):
        ctx.fail("sequence_lens (input 0) is not supported: irpass scans whole sequences")
    m = int(ctx.attr("num_scan_inputs"))
    inputs = [ctx.input(i) for i in range(1, ctx.num_inputs)]
    if not 1 <= m <= len(inputs):
        ctx.fail(f"num_scan_inputs {m} is not between 1 and its {len(inputs)} inputs")
    types = [_tensor_type(ctx, e, f"input {i + 1}") for i, e in enumerate(inputs)]
    if any(not t.shape for t in types) or len({t.shape[0] for t in types}) != 1:
        ctx.fail("every input needs the same batch size (axis 0): got shapes "
                 f"{[t.shape for t in types]}")
    batch = types[0].shape[0]
    body = _graph_attr(ctx, "body")
    n = len(inputs) - m
    k = len(body.output) - n
    in_dirs = _per_value(ctx, "directions", m, 0)
    per_batch = []
    for b in range(batch):
        entry = [call("take", [e, const(np.int64(b))], axis=0, mode="fast") for e in inputs]
        per_batch.append(_scan(ctx, entry[:n], entry[n:], [0] * m, in_dirs, [0] * k, [0] * k))
    return [_stack_rows(ctx, [outs[j] for outs in per_batch], 0, f"output {j}")
            for j in range(n + k)]


def _per_value(ctx: NodeContext, name: str, count: int, default: int) -> list[int]:
    """Attribute ``name``: one int per scan input or output (``default`` when not set)."""
    value = ctx.attr(name, None)
    if value is None:
        return [default] * count
    value = ints_of(ctx, value, name)
    if len(value) != count:
        ctx.fail(f"{name} has {len(value)} entries for {count} values")
    if name.endswith("directions") and any(v not in (0, 1) for v in value):
        ctx.fail(f"{name} {value}: a direction is 0 (forward) or 1 (reverse)")
    return value


def _scan(ctx: NodeContext, states: list[Expr], xs: list[Expr], in_axes: list[int],
          in_dirs: list[int], out_axes: list[int], out_dirs: list[int]) -> list[Expr]:
    """The outputs of a Scan (opset 9's semantics) over ``xs`` from ``states``."""
    body = _graph_attr(ctx, "body")
    n, k = len(states), len(out_axes)
    if len(body.input) != n + len(xs) or len(body.output) != n + k:
        ctx.fail(f"its body has {len(body.input)} inputs and {len(body.output)} outputs for "
                 f"{n} state and {len(xs)} scan inputs")
    if ctx.num_outputs > n + k:
        ctx.fail(f"the node has {ctx.num_outputs} outputs but the body gives {n + k}")
    _check_present(ctx, states + xs, "input")
    axes, lengths = [], []
    for j, (x, axis) in enumerate(zip(xs, in_axes, strict=True)):
        ty = _tensor_type(ctx, x, f"scan input {j}")
        a = norm_axis(ctx, axis, len(ty.shape), f"scan_input_axes[{j}]")
        axes.append(a)
        lengths.append(ty.shape[a])
    if len(set(lengths)) != 1:
        ctx.fail(f"the scan inputs have different lengths along their scan axes: {lengths}")
    rounds = lengths[0]
    if 0 < rounds * max(_node_count(body), 1) <= UNROLL_BUDGET:
        return _unroll_scan(ctx, states, xs, axes, in_dirs, out_axes, out_dirs, rounds)
    return _recursive_scan(ctx, states, xs, axes, in_dirs, out_axes, out_dirs, rounds)


def _slice_at(x: Expr, index: Expr, axis: int) -> Expr:
    return call("take", [x, index], axis=axis, mode="fast")


def _unroll_scan(ctx: NodeContext, states: list[Expr], xs: list[Expr], axes: list[int],
                 in_dirs: list[int], out_axes: list[int], out_dirs: list[int],
                 rounds: int) -> list[Expr]:
    imp = ctx.importer
    n = len(states)
    rows: list[list[Expr]] = []
    for r in range(rounds):
        slices = [_slice_at(x, const(np.int64(rounds - 1 - r if d else r)), a)
                  for x, a, d in zip(xs, axes, in_dirs, strict=True)]
        outs = imp.import_subgraph(ctx, "body", states + slices)
        states = outs[:n]
        rows.append(outs[n:])
    scans = []
    for j, (axis, d) in enumerate(zip(out_axes, out_dirs, strict=True)):
        column = [row[j] for row in rows]
        scans.append(_stack_rows(ctx, column[::-1] if d else column, axis,
                                 f"scan output {j}"))
    return states + scans


def _recursive_scan(ctx: NodeContext, states: list[Expr], xs: list[Expr], axes: list[int],
                    in_dirs: list[int], out_axes: list[int], out_dirs: list[int],
                    rounds: int) -> list[Expr]:
    imp = ctx.importer
    body = _graph_attr(ctx, "body")
    n = len(states)
    bindings, lets = _outer_bindings(ctx, body)
    i = Var("i", _I64)
    last = const(np.int64(rounds - 1))
    back = call("subtract", [last, i])
    vs = [Var(body.input[j].name or f"s{j}", ctx.type_of_expr(e))
          for j, e in enumerate(states)]
    if rounds:
        slices = [_slice_at(x, back if d else i, a)
                  for x, a, d in zip(xs, axes, in_dirs, strict=True)]
    else:  # no slice to take: the body is imported only for its outputs' types
        slices = []
        for j, (x, a) in enumerate(zip(xs, axes, strict=True)):
            ty = ctx.type_of_expr(x)
            slices.append(Var(f"x{j}", TensorType(ty.shape[:a] + ty.shape[a + 1:], ty.dtype)))
    outs = imp.import_subgraph(ctx, "body", [*vs, *slices], bindings)
    for j, (v, e) in enumerate(zip(vs, outs[:n], strict=True)):
        ty = ctx.type_of_expr(e)
        if ty != v.type_annotation:
            ctx.fail(f"state {j} is {v.type_annotation} on entry but {ty} after a round")
    if rounds == 0:  # nothing runs: the initial states and empty scan outputs
        return states + [
            _from_axis0(_empty_rows(ctx, row, f"scan output {j}"),
                        norm_axis(ctx, axis, len(ctx.type_of_expr(row).shape) + 1,
                                  f"scan_output_axes[{j}]"),
                        len(ctx.type_of_expr(row).shape) + 1)
            for j, (row, axis) in enumerate(zip(outs[n:], out_axes, strict=True))]
    bufs, writes, zeros, ranks = [], [], [], []
    for j, (row, d) in enumerate(zip(outs[n:], out_dirs, strict=True)):
        rty = _tensor_type(ctx, row, f"scan output {j}")
        buf = Var(f"scan{j}", TensorType((rounds, *rty.shape), rty.dtype))
        bufs.append(buf)
        writes.append(_write_row(buf, row, back if d else i))
        zeros.append(call("zeros", [], shape=[rounds, *rty.shape], dtype=rty.dtype))
        ranks.append(len(rty.shape) + 1)
    go = call("less", [i, const(np.int64(rounds))])
    fields = _recursive(ctx, [i, *vs, *bufs], [*vs, *bufs], go,
                        [call("add", [i, const(np.int64(1))]), *outs[:n], *writes],
                        [const(np.int64(0)), *states, *zeros])
    fields = _wrap_fields(lets, fields)
    scans = []
    for j, (axis, rank) in enumerate(zip(out_axes, ranks, strict=True)):
        a = norm_axis(ctx, axis, rank, f"scan_output_axes[{j}]")
        scans.append(_from_axis0(fields[n + j], a, rank))
    return fields[:n] + scans


# -- sequences (IR tuples of a length known at import) ----------------------------------------


def _items(ctx: NodeContext, i: int) -> list[Expr]:
    """The elements of input ``i``, a sequence."""
    expr = ctx.input(i)
    if expr in ctx.importer.absent:
        ctx.fail(f"input {i} is an optional without a value, not a sequence")
    ty = ctx.type_of_expr(expr)
    if not isinstance(ty, TupleType):
        ctx.fail(f"input {i} must be a sequence, got {ty}")
    if isinstance(expr, Tuple):
        return list(expr.fields)
    return [TupleGetItem(expr, j) for j in range(len(ty.fields))]


def _sequence(ctx: NodeContext, items: Sequence[Expr]) -> Tuple:
    """``items`` as a sequence: tensors of one dtype."""
    dtypes = set()
    for j, e in enumerate(items):
        dtypes.add(_tensor_type(ctx, e, f"sequence element {j}").dtype)
    if len(dtypes) > 1:
        ctx.fail(f"a sequence's elements must have one dtype, got {sorted(dtypes)}")
    return Tuple(list(items))


def _position(ctx: NodeContext, i: int, length: int, default: int | None,
              insert: bool = False) -> int:
    """Input ``i`` (a position in a sequence of ``length``) as an index; ``default`` when
    absent. Negative positions count from the end."""
    if not ctx.has_input(i):
        if default is None:
            ctx.fail(f"input {i} (position) is required but missing")
        return default
    _tensor_type(ctx, ctx.input(i), "the position")
    value = ctx.known(i)
    if value is None:
        ctx.fail("the position is a run-time value; irpass needs sequence positions known at "
                 "import (its sequences are tuples)")
    if value.dtype.kind not in "iu" or value.size != 1:
        ctx.fail(f"the position must be one integer, got {value.dtype.name}{list(value.shape)}")
    p = int(value.reshape(()))
    hi = length if insert else length - 1
    if not -length <= p <= hi:
        ctx.fail(f"position {p} is out of range for a sequence of length {length}")
    return p + length if p < 0 else p


@converter("SequenceConstruct", since=11)
def _sequence_construct(ctx: NodeContext) -> Expr:
    return _sequence(ctx, [ctx.input(i) for i in range(ctx.num_inputs)])


@converter("SequenceEmpty", since=11)
def _sequence_empty(ctx: NodeContext) -> Expr:
    return Tuple([])


@converter("SequenceAt", since=11)
def _sequence_at(ctx: NodeContext) -> Expr:
    items = _items(ctx, 0)
    return items[_position(ctx, 1, len(items), None)]


@converter("SequenceInsert", since=11)
def _sequence_insert(ctx: NodeContext) -> Expr:
    items = _items(ctx, 0)
    p = _position(ctx, 2, len(items), len(items), insert=True)
    return _sequence(ctx, items[:p] + [ctx.input(1)] + items[p:])


@converter("SequenceErase", since=11)
def _sequence_erase(ctx: NodeContext) -> Expr:
    items = _items(ctx, 0)
    if not items:
        ctx.fail("cannot erase from an empty sequence")
    p = _position(ctx, 1, len(items), len(items) - 1)
    return Tuple(items[:p] + items[p + 1:])


@converter("SequenceLength", since=11)
def _sequence_length(ctx: NodeContext) -> Expr:
    return const(np.int64(len(_items(ctx, 0))))


@converter("SplitToSequence", since=11)
def _split_to_sequence(ctx: NodeContext) -> Expr:
    x = ctx.input(0)
    shape = ctx.type_of(0).shape
    if not shape:
        ctx.fail("input must have at least one dimension")
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), len(shape))
    dim = shape[axis]
    split = ctx.const_input(1, "split", optional=True)
    squeeze = False
    if split is None:
        sizes = [1] * dim
        squeeze = not ctx.attr("keepdims", 1)
    elif split.ndim == 0:
        chunk = int(ints_of(ctx, split, "split")[0])
        if chunk < 1:
            ctx.fail(f"split {chunk} must be positive")
        sizes = [chunk] * (dim // chunk) + ([dim % chunk] if dim % chunk else [])
    else:
        sizes = ints_of(ctx, split, "split")
        if any(s < 0 for s in sizes) or sum(sizes) != dim:
            ctx.fail(f"split {sizes} does not add up to the size {dim} of axis {axis}")
    if len(sizes) == 1:
        parts: list[Expr] = [x]
    else:
        cuts = np.cumsum(sizes[:-1]).tolist()
        whole = call("split", [x], indices_or_sections=[int(v) for v in cuts], axis=axis)
        parts = [TupleGetItem(whole, j) for j in range(len(sizes))]
    if squeeze:
        parts = [call("squeeze", [p], axis=[axis]) for p in parts]
    return Tuple(parts)


@converter("ConcatFromSequence", since=11)
def _concat_from_sequence(ctx: NodeContext) -> Expr:
    items = _items(ctx, 0)
    if not items:
        ctx.fail("the sequence is empty: there is nothing to concatenate")
    first = _tensor_type(ctx, items[0], "sequence element 0")
    new_axis = int(ctx.attr("new_axis", 0))
    if new_axis not in (0, 1):
        ctx.fail(f"new_axis must be 0 or 1, got {new_axis}")
    axis = int(ctx.attr("axis"))
    if new_axis:
        return _stack_rows(ctx, items, axis, "the sequence's elements")
    axis = norm_axis(ctx, axis, len(first.shape))
    return items[0] if len(items) == 1 else call("concatenate", [Tuple(items)], axis=axis)


@converter("SequenceMap", since=17)
def _sequence_map(ctx: NodeContext) -> list[Expr]:
    imp = ctx.importer
    # per input: its elements (a sequence) or None (a tensor, the same in every round)
    seqs: list[list[Expr] | None] = [_items(ctx, 0)]
    for i in range(1, ctx.num_inputs):
        is_seq = isinstance(ctx.type_of_expr(ctx.input(i)), TupleType)
        seqs.append(_items(ctx, i) if is_seq else None)
    lengths = [len(s) for s in seqs if s is not None]
    if len(set(lengths)) != 1:
        ctx.fail(f"its sequences have different lengths: {lengths}")
    n_out = len(_graph_attr(ctx, "body").output)
    if n_out != ctx.num_outputs:
        ctx.fail(f"its body has {n_out} output(s) but the node {ctx.num_outputs}")
    rows = []
    for j in range(lengths[0]):
        args = [ctx.input(i) if s is None else s[j] for i, s in enumerate(seqs)]
        rows.append(imp.import_subgraph(ctx, "body", args))
    return [_sequence(ctx, [row[k] for row in rows]) for k in range(ctx.num_outputs)]


# -- optionals (known at import to have a value or not) ---------------------------------------


@converter("Optional", since=15)
def _optional(ctx: NodeContext) -> Expr:
    if ctx.has_input(0):
        return ctx.input(0)
    marker = Tuple([])
    ctx.importer.absent.add(marker)
    return marker


@converter("OptionalHasElement", since=15)
def _optional_has_element(ctx: NodeContext) -> Expr:
    if ctx.has_input(0) and ctx.input(0) in ctx.importer.optional_inputs:
        ctx.fail("its input is an optional graph input, which has a value or not at run time; "
                 "irpass imports optional graph inputs as present and cannot test them")
    present = ctx.has_input(0) and ctx.input(0) not in ctx.importer.absent
    return const(np.bool_(present))


@converter("OptionalGetElement", since=15)
def _optional_get_element(ctx: NodeContext) -> Expr:
    value = ctx.input(0)
    if value in ctx.importer.absent:
        ctx.fail("the optional has no value")
    return value
