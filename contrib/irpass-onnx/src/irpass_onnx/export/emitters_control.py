"""Emitters of the control nodes: an IR ``If`` as an ONNX ``If``, a loop in the recursive
form as an ONNX ``Loop``.

What the importer makes of ONNX control flow exports as follows. A Loop or Scan unrolled at
import, and a Loop with scan outputs converted at run time (an ``onnx.node`` call, see
:mod:`.emitters_dynamic`), are dataflow and export as such. The lowering (:mod:`.graph`)
turns the rest into control nodes holding subgraphs, written here:

- an IR ``If`` is an ``If`` node; each branch is a subgraph without inputs that reads the
  values of the enclosing graphs by their names (as ONNX subgraphs may at every opset);
- a call of a function in the loop form (``fn(p...) { if (go) { fn(next...) } else
  { result } }``, what the importer makes of a Loop or Scan it does not unroll) is a ``Loop``
  without trip count: its condition input is ``go`` of the initial values, its loop-carried
  values are the function's params, its body computes ``next`` and ``go`` of ``next``;
  ``result`` is computed after it from the final values. A scan output's buffer (what the
  importer makes of a Loop's or a forward Scan's scan output: a param starting as zeros, row
  ``i`` of it written in round ``i`` and read nowhere else, in a loop that runs while
  ``i < rows``) becomes a scan output of the ONNX Loop, whose trip count is then the number
  of rows: no copy of the buffer per round, and no ``ScatterND`` (so also at opsets 9 and
  10). Another buffer is carried and written with ``ScatterND``.

A recursive function of another form is an :class:`~irpass_onnx.errors.OnnxExportError` of
the lowering naming the function.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from irpass.ir.types import TensorType, TupleType

from .builder import EmitContext, control_emitter
from .fusion import RESHAPES
from .graph import Const, Lowered, Node, Param

__all__: list[str] = []

_I64 = TensorType((), "int64")
_BOOL = TensorType((), "bool")


@control_emitter("if")
def _if(ctx: EmitContext) -> str | list[str]:
    then, other = ctx.node.extra["branches"]
    then_graph = ctx.subgraph(then, "then")
    else_graph = ctx.subgraph(other, "else")
    n = len(then.outputs)
    outs = ctx.emit("If", [ctx.input(0)], outputs=n, then_branch=then_graph,
                    else_branch=else_graph)
    if isinstance(ctx.out_type, TupleType):
        return outs if isinstance(outs, list) else [outs]
    return outs


@control_emitter("loop")
def _loop(ctx: EmitContext) -> list[str]:
    body: Lowered = ctx.node.extra["body"]
    n = len(body.inputs)
    init = ctx.node.inputs[1:1 + n]
    found = _scan_outputs(body, init, ctx.node.inputs[0])
    trip, cond = "", ctx.input(0)
    carried, rows = list(range(n)), []
    if found is not None:
        rounds, scans = found
        # a for loop: the trip count alone decides the rounds (the condition was i < rounds)
        trip, cond = ctx.constant(np.int64(rounds), hint="trip"), ""
        carried = [k for k in range(n) if k not in scans]
        rows = [scans[k] for k in sorted(scans)]
        body = Lowered([body.inputs[k] for k in carried], body.nodes,
                       [Const(np.array(True)), *(body.outputs[1 + k] for k in carried), *rows],
                       body.items)
    graph = ctx.subgraph(body, "loop_body", [("iter", _I64), ("cond", _BOOL)])
    names = [ctx.name_of(init[k]) for k in carried]
    outs = ctx.emit("Loop", [trip, cond, *names], outputs=len(carried) + len(rows),
                    body=graph)
    outs = outs if isinstance(outs, list) else [outs]
    by_field = dict(zip([*carried, *sorted(set(range(n)) - set(carried))], outs, strict=True))
    return [by_field[k] for k in range(n)]


def _scan_outputs(body: Lowered, init: list[Any],
                  cond0: Any) -> tuple[int, dict[int, Any]] | None:
    """``(rounds, {param index: row value})`` when the loop runs exactly ``rounds`` times
    with a counter from 0 and some params are scan-output buffers of ``rounds`` rows (see
    the module docstring), else None."""
    params, cond_out, values = body.inputs, body.outputs[0], body.outputs[1:]
    index = {id(p): k for k, p in enumerate(params)}
    # the counter: starts at 0, goes up by 1, the loop runs while it is below a constant
    if not _is(cond_out, "less") or type(cond_out.inputs[1]) is not Const \
            or cond_out.inputs[1].data.size != 1:
        return None
    step = cond_out.inputs[0]
    if not _is(step, "add") or type(step.inputs[0]) is not Param \
            or not _const_is(step.inputs[1], 1):
        return None
    i = step.inputs[0]
    k_i = index.get(id(i))
    if k_i is None or values[k_i] is not step or not _const_is(init[k_i], 0):
        return None
    rounds = int(cond_out.inputs[1].data.reshape(()).item())
    if rounds < 1 or not (
            (_is(cond0, "less") and _const_is(cond0.inputs[0], 0)
             and _const_is(cond0.inputs[1], rounds)) or _const_is(cond0, True)):
        return None
    reads: dict[int, int] = {}
    for node in body.nodes:
        for a in node.inputs:
            for v in (a if type(a) is tuple else (a,)):
                reads[id(v)] = reads.get(id(v), 0) + 1
    for v in body.outputs:
        reads[id(v)] = reads.get(id(v), 0) + 1
    scans: dict[int, Any] = {}
    for k, (p, nxt) in enumerate(zip(params, values, strict=True)):
        if k == k_i or not _is(nxt, "scatter_nd") or nxt.attrs["mode"] != "update":
            continue
        buf, at, update = nxt.inputs
        shape = p.type.shape
        if buf is not p or reads.get(id(p)) != 1 or not shape or shape[0] != rounds \
                or not _zeros(init[k]):
            continue
        if not (_is(at, *RESHAPES) and at.inputs[0] is i and at.type.shape == (1, 1)):
            continue
        if not (_is(update, *RESHAPES) and update.inputs[0].type == TensorType(
                shape[1:], p.type.dtype)):
            continue
        scans[k] = update.inputs[0]
    return (rounds, scans) if scans else None


def _is(v: Any, *ops: str) -> bool:
    return type(v) is Node and v.alias is None and v.op in ops


def _const_is(v: Any, value: Any) -> bool:
    return type(v) is Const and v.data.size == 1 and v.data.reshape(()).item() == value


def _zeros(v: Any) -> bool:
    """Whether ``v`` is all zeros (a constant, or a ``zeros`` call)."""
    if type(v) is Const:
        return not np.any(v.data)
    return _is(v, "zeros")
