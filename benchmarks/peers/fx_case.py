"""torch.fx: a ``torch.fx.Graph`` of ``torch`` calls on a (4, 4) float32 input.
W1 with ``torch.fx.experimental.const_fold.split_const_subgraphs`` (fx's constant
folding: the subgraphs that read only constants become attributes computed by
``run_folding``; both are timed), W2 with
``torch.fx.passes.dialect.common.cse_pass.CSEPass``, W3 with
``Graph.eliminate_dead_code``; W4 a ``torch.fx.passes.infra.pass_manager.PassManager``
of trivial passes (fx has no pass instrument)."""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.const_fold import split_const_subgraphs
from torch.fx.passes.dialect.common.cse_pass import CSEPass
from torch.fx.passes.infra.pass_base import PassResult
from torch.fx.passes.infra.pass_manager import PassManager

NAME = "torch.fx"
DIST = "torch"

SHAPE = (4, 4)


def build(workload: str, n: int) -> torch.fx.GraphModule:
    """W1-W3 as a GraphModule; W1's constants are attributes read with ``get_attr``."""
    gen = torch.Generator().manual_seed(1)
    root = torch.nn.Module()
    graph = torch.fx.Graph()
    cur = graph.placeholder("x")
    for i in range(n):
        if workload == "W1":
            root.register_buffer(f"a{i}", torch.rand(SHAPE, generator=gen) * 0.5 + 0.5)
            root.register_buffer(f"b{i}", torch.rand(SHAPE, generator=gen) * 0.5)
            c = graph.call_function(torch.add, (graph.get_attr(f"a{i}"), graph.get_attr(f"b{i}")))
            cur = graph.call_function(torch.mul, (cur, c))
        elif workload == "W2":
            a = graph.call_function(torch.exp, (cur,))
            b = graph.call_function(torch.exp, (cur,))
            cur = graph.call_function(torch.add, (a, b))
        else:
            graph.call_function(torch.tanh, (cur,))  # never used
            cur = graph.call_function(torch.relu, (graph.call_function(torch.add, (cur, cur)),))
    graph.output(cur)
    return torch.fx.GraphModule(root, graph)


def run(workload: str, gm: torch.fx.GraphModule) -> Any:
    """The workload's pass; W3 in place."""
    if workload == "W1":
        folded = split_const_subgraphs(gm)
        folded.run_folding()
        return folded
    if workload == "W2":
        return CSEPass()(gm).graph_module
    gm.graph.eliminate_dead_code()
    return gm


_NAMES = {
    torch.add: "add",
    torch.mul: "multiply",
    torch.exp: "exp",
    torch.tanh: "tanh",
    torch.relu: "relu",
}


def counts(workload: str, gm: Any) -> Counter[str]:
    """Calls by the workload's op names in the graph that runs on the input (for W1,
    the folded module's graph, whose constant subgraphs are folded away)."""
    found: Counter[str] = Counter()
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in _NAMES:
            found[_NAMES[node.target]] += 1
    if workload == "W1":
        found["multiply by a constant"] = sum(
            1
            for node in gm.graph.nodes
            if node.op == "call_function"
            and node.target is torch.mul
            and any(_constant(a) for a in node.args)
        )
    return found


def _constant(arg: Any) -> bool:
    """An attribute, or an item of one (how run_folding's results are read)."""
    if getattr(arg, "op", None) == "get_attr":
        return True
    return (
        getattr(arg, "op", None) == "call_function"
        and arg.target is operator.getitem
        and getattr(arg.args[0], "op", None) == "get_attr"
    )


def w4(n_passes: int, instrumented: bool) -> Callable[[], object] | None:
    """One run of a PassManager of ``n_passes`` trivial passes (``None`` instrumented)."""
    if instrumented:
        return None
    gm = build("W2", 1)

    def trivial(m: torch.fx.GraphModule) -> PassResult:
        return PassResult(m, False)

    manager = PassManager(passes=[trivial] * n_passes)

    def once() -> object:
        return manager(gm)

    return once
