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
  values are the function's params (the counter and a scan output's buffer among them, the
  buffer written row by row with ``ScatterND`` as in the IR), its body computes ``next``
  and ``go`` of ``next``; ``result`` is computed after it from the final values.

A recursive function of another form is an :class:`~irpass_onnx.errors.OnnxExportError` of
the lowering naming the function.
"""

from __future__ import annotations

from irpass.ir.types import TensorType, TupleType

from .builder import EmitContext, control_emitter

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
    body = ctx.node.extra["body"]
    n = len(body.inputs)
    graph = ctx.subgraph(body, "loop_body", [("iter", _I64), ("cond", _BOOL)])
    init = [ctx.input(1 + k) for k in range(n)]
    outs = ctx.emit("Loop", ["", ctx.input(0), *init], outputs=n, body=graph)
    return outs if isinstance(outs, list) else [outs]
