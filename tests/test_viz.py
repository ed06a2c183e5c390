"""irpass.viz: the graph a picture draws (boxes, clusters, edge labels, constants),
repeated blocks collapsed, the max_nodes cut, deep programs, and bad paths.

Rendering through Graphviz is in test_viz_render.py; the ``irpass show`` command in
test_viz_cli.py.
"""

from __future__ import annotations

import re

import irpass
import numpy as np
import pytest
from irpass import op, viz
from irpass.ir import Function, IRModule
from irpass.testing.models import resnet


def _clusters(dot: str) -> dict[str, str]:
    """Each cluster's label -> the DOT text inside it (nested clusters included)."""
    out = {}
    lines = dot.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("subgraph cluster_"):
            depth = 0
            body = []
            for inner in lines[i:]:
                depth += inner.count("{") - inner.count("}")
                body.append(inner)
                if depth == 0:
                    break
            label = re.search(r'label="([^"]*)"', lines[i + 1]).group(1)
            out[label] = "\n".join(body)
    return out


def _op_boxes(dot: str, name: str) -> int:
    return len(re.findall(rf"label=<<b>{re.escape(name)}</b>", dot))


def test_one_box_per_op_call_and_edges_labelled_with_types() -> None:
    x = irpass.var("x", shape=(1, 8), dtype="float32")
    y = op.nn.relu(op.add(x, x))
    mod = IRModule.from_expr(Function([x], op.multiply(y, op.exp(y))))
    dot = viz.to_dot(mod)
    for name in ("add", "nn.relu", "exp", "multiply"):
        assert _op_boxes(dot, name) == 1, name
    # relu's value feeds exp and multiply: two edges, each with its type
    assert dot.count('[label="(1, 8) float32"]') == 6  # x twice into add, add, relu x2, exp
    assert re.search(r"n\d+ \[label=<%x<br/>", dot)  # the param is drawn (an ellipse)
    assert "shape=ellipse" in dot


def test_symbolic_dims_in_edge_labels() -> None:
    mod = irpass.parse("def @main(%x: Tensor[(n, 128), float32]) { nn.relu(%x) }")
    assert 'label="(n, 128) float32"' in viz.to_dot(mod)


def test_let_and_if_are_clusters_and_a_value_used_in_both_branches_sits_outside() -> None:
    mod = irpass.parse(
        """def @main(%x: Tensor[(4,), float32], %c: Tensor[(), bool]) {
  let %y = nn.relu(%x);
  let %z = exp(%y);
  if (%c) { multiply(%z, %y) } else { subtract(%z, negative(%y)) }
}"""
    )
    dot = viz.to_dot(mod)
    clusters = _clusters(dot)
    assert set(clusters) >= {"@main", "let %y, %z", "if", "then", "else"}
    assert _op_boxes(clusters["then"], "multiply") == 1
    assert _op_boxes(clusters["else"], "subtract") == 1
    assert _op_boxes(clusters["else"], "negative") == 1
    assert _op_boxes(clusters["if"], "nn.relu") == 0  # used by both branches
    assert _op_boxes(clusters["let %y, %z"], "exp") == 1
    assert re.search(r'-> n\d+ \[label="cond \(\) bool"\]', dot)
    assert 'label="then (4,) float32"' in dot and 'label="else (4,) float32"' in dot


def test_fused_primitive_function_is_a_cluster_wired_to_its_call() -> None:
    mod = irpass.parse(
        """def @main(%x: Tensor[(2, 3), float32]) {
  %0 = fn (%p0: Tensor[(2, 3), float32], %p1: Tensor[(2, 3), float32], Primitive=1) {
    nn.relu(add(%p0, %p1))
  };
  %1 = %0(%x, %x);
  exp(%1)
}"""
    )
    dot = viz.to_dot(mod)
    clusters = _clusters(dot)
    fused = clusters["fused: add + nn.relu"]
    assert _op_boxes(fused, "add") == 1 and _op_boxes(fused, "nn.relu") == 1
    assert "%p0" in fused and "%p1" in fused  # the params inside
    # %x goes into both params; relu's value comes out to exp, outside the cluster
    ids = dict(re.findall(r"(n\d+) \[label=<(%\w+|<b>[\w.]+</b>)", dot))
    by_label = {v: k for k, v in ids.items()}
    assert f"{by_label['%x']} -> {by_label['%p0']} " in dot
    assert f"{by_label['%x']} -> {by_label['%p1']} " in dot
    assert f"{by_label['<b>nn.relu</b>']} -> {by_label['<b>exp</b>']} " in dot
    assert _op_boxes(clusters["@main"], "exp") == 1 and _op_boxes(fused, "exp") == 0


def test_several_functions_side_by_side_and_a_global_call() -> None:
    mod = irpass.parse(
        """def @f(%a: Tensor[(3,), float32]) { exp(%a) }
def @main(%x: Tensor[(3,), float32]) { @f(nn.relu(%x)) }"""
    )
    dot = viz.to_dot(mod)
    clusters = _clusters(dot)
    assert _op_boxes(clusters["@f"], "exp") == 1
    assert _op_boxes(clusters["@main"], "@f") == 1  # the call's box
    assert _op_boxes(clusters["@main"], "exp") == 0


def test_nested_function_value_is_a_cluster() -> None:
    mod = irpass.parse(
        """def @main(%x: Tensor[(3,), float32]) {
  let %g = fn (%y: Tensor[(3,), float32]) { exp(%y) };
  %g(%g(%x))
}"""
    )
    dot = viz.to_dot(mod)
    clusters = _clusters(dot)
    assert "fn" in clusters and _op_boxes(clusters["fn"], "exp") == 1
    assert dot.count("ltail=cluster_") == 2  # the closure into each of its two calls


def test_constants_summarized_inline_or_as_their_own_box() -> None:
    x = irpass.var("x", shape=(2, 3), dtype="float32")
    w = irpass.const(np.arange(6, dtype="float32").reshape(2, 3) / 4)
    shared = irpass.const(np.array([7, 8, 9], dtype="int64"))
    big = irpass.const(np.full((40, 3), 1.5, dtype="float32"))
    body = op.add(op.multiply(x, w), op.add(op.cast(shared, "float32"), op.cast(shared, "float32")))
    body = op.add(body, op.sum(big, axis=0))
    dot = viz.to_dot(IRModule.from_expr(Function([x], body)), elide_constants=3)
    # used once by multiply: a line of its box, dtype, shape and the first values
    assert re.search(
        r"<b>multiply</b><br/><font [^>]*>1: float32 \(2, 3\) \[0, 0.25, 0.5, ...\]", dot
    )
    # used twice: a box of its own with all its values (3 <= elide_constants)
    assert re.search(r"label=<const<br/><font [^>]*>int64 \(3,\)<br/>\[7, 8, 9\]</font>>", dot)
    assert "0: float32 (40, 3) [1.5, 1.5, 1.5, ...]" in dot
    assert "0: float32 (40, 3)</font>" in viz.to_dot(Function([x], body), elide_constants=0)


def test_expression_draws_the_graph_below_it_with_free_vars() -> None:
    a = irpass.var("a", shape=(4,), dtype="float32")
    b = irpass.var("b", shape=(4,), dtype="float32")
    region = op.nn.relu(op.add(a, b))
    dot = viz.to_dot(region)
    assert _op_boxes(dot, "add") == 1 and _op_boxes(dot, "nn.relu") == 1
    assert "label=<%a<br/>" in dot and "label=<%b<br/>" in dot
    assert "subgraph" not in dot  # an expression has no function frame


def test_repeated_blocks_collapse_to_one_block_and_a_box() -> None:
    mod = resnet(num_blocks=8)
    full = viz.build_graph(mod, collapse=False, max_nodes=None)
    small = viz.build_graph(mod, max_nodes=None)
    assert len(small.boxes) < len(full.boxes) // 3
    (box,) = [b for b in small.boxes if b.kind == "collapsed"]
    assert box.title == "\u00d7 7 more"
    assert "7 more copies of block 1" in box.lines[0] and "nn.conv2d" in box.lines[0]
    assert small.collapsed == ["8 \u00d7 a 9-node block"]
    dot = viz.to_dot(mod)
    assert "block 1 of 8" in dot and "repeated blocks collapsed: 8 \u00d7 a 9-node block" in dot
    # block 1 starts at its first conv: the stem's pooling is not in it
    block = _clusters(dot)["block 1 of 8"]
    assert _op_boxes(block, "nn.conv2d") == 2 and _op_boxes(block, "nn.max_pool2d") == 0
    # the picture still flows: the collapsed box feeds the classifier's pooling
    ids = {b.title: b.id for b in small.boxes}
    assert any(e.src == box.id and e.dst == ids["nn.global_avg_pool2d"] for e in small.edges)


def test_blocks_sharing_a_value_all_collapse_and_the_shared_value_stays_outside() -> None:
    # as BERT's layers share the attention mask, computed once (program order puts its
    # ops inside the first layer)
    x = irpass.var("x", shape=(4,), dtype="float32")
    m = irpass.var("m", shape=(4,), dtype="float32")
    mask = op.exp(op.negative(m))
    y = x
    for _ in range(4):
        y = op.multiply(op.add(op.nn.relu(y), mask), y)
    graph = viz.build_graph(IRModule.from_expr(Function([x, m], y)))
    assert graph.collapsed == ["4 \u00d7 a 3-node block"]
    clusters = {c.id: c.label for c in graph.clusters}
    where = {b.title: clusters.get(b.cluster) for b in graph.boxes}
    assert where["nn.relu"] == where["add"] == where["multiply"] == "block 1 of 4"
    assert where["exp"] == where["negative"] == "@main"


def test_copies_side_by_side_are_not_collapsed() -> None:
    x = irpass.var("x", shape=(4,), dtype="float32")

    def branch() -> irpass.Expr:
        return op.negative(op.exp(op.nn.relu(op.tanh(x))))

    mod = IRModule.from_expr(Function([x], op.add(op.add(branch(), branch()), branch())))
    graph = viz.build_graph(mod)
    assert graph.collapsed == [] and len(graph.boxes) == 15


def test_find_runs() -> None:
    from irpass.viz.repeats import find_runs

    assert find_runs([9, 1, 2, 3, 1, 2, 3, 1, 2, 3, 8]) == [(1, 3, 3)]
    assert find_runs([1, 2, 3, 4, 5]) == []
    # shifted right so the blocks end where the repeats end: 3 | 1 2 3 | 1 2 3 | 1 2 3 | 7
    assert find_runs([3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 7]) == [(1, 3, 3)]
    # a run hiding fewer than 4 nodes is not worth a box, unless its nodes weigh more
    assert find_runs([1, 2, 1, 2, 5]) == []
    assert find_runs([1, 2, 1, 2, 5], weights=[1, 3, 1, 3, 1]) == [(0, 2, 2)]


def test_max_nodes_keeps_the_boxes_nearest_the_result_and_notes_the_rest() -> None:
    mod = resnet(num_blocks=3)
    graph = viz.build_graph(mod, collapse=False, max_nodes=10)
    assert len(graph.boxes) == 10
    assert graph.cut == graph.wanted - 9 and graph.cut > 0
    titles = [b.title for b in graph.boxes]
    assert "nn.softmax" in titles and "%data" not in titles
    note = graph.boxes[-1]
    assert note.kind == "note" and note.title == f"{graph.cut:,} more boxes not drawn"
    assert "boxes not drawn (max_nodes)" in viz.to_dot(mod, collapse=False, max_nodes=10)


def test_a_long_chain_does_not_recurse() -> None:
    n = 100_000
    x = irpass.var("x", shape=(2,), dtype="float32")
    y = x
    for i in range(n):
        y = op.exp(y) if i % 2 else op.negative(y)
    mod = IRModule.from_expr(Function([x], y))
    dot = viz.to_dot(mod, collapse=False, max_nodes=None)
    assert _op_boxes(dot, "exp") == n // 2 and _op_boxes(dot, "negative") == n // 2
    graph = viz.build_graph(mod)
    assert len(graph.boxes) < 10 and graph.collapsed


def test_bad_arguments() -> None:
    mod = resnet()
    with pytest.raises(ValueError, match="max_nodes"):
        viz.to_dot(mod, max_nodes=0)
    with pytest.raises(ValueError, match="elide_constants"):
        viz.to_dot(mod, elide_constants=-1)
    with pytest.raises(TypeError, match="IRModule, a Function or an Expr"):
        viz.to_dot("main")  # type: ignore[arg-type]


def test_write_dot_and_bad_paths(tmp_path) -> None:
    mod = resnet()
    out = viz.write(mod, tmp_path / "m.dot")
    assert out.read_text().startswith('digraph "irpass"')
    with pytest.raises(ValueError, match=r"unknown picture format \('\.jpg'\); known: \.dot, "):
        viz.write(mod, tmp_path / "m.jpg")
    with pytest.raises(FileNotFoundError, match="no such folder"):
        viz.write(mod, tmp_path / "missing" / "m.dot")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.dot"]


def test_render_without_dot_says_how_to_get_it(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot program anywhere
    with pytest.raises(
        viz.GraphvizNotFound, match=r"pip install 'irpass\[viz\]'.*apt install graphviz"
    ):
        viz.render(viz.to_dot(resnet()), "svg")
    with pytest.raises(viz.GraphvizNotFound):
        viz.write(resnet(), tmp_path / "m.svg")
    assert not (tmp_path / "m.svg").exists()
    assert issubclass(viz.GraphvizNotFound, irpass.errors.IRPassError)
    with pytest.raises(ValueError, match="fmt"):
        viz.render("digraph {}", "pdf")


def test_a_scalar_used_by_several_calls_is_a_line_of_each() -> None:
    x = irpass.var("x", shape=(3,), dtype="float32")
    half = irpass.const(np.float32(0.5))
    mod = IRModule.from_expr(Function([x], op.multiply(op.exp(op.multiply(x, half)), half)))
    dot = viz.to_dot(mod)
    assert len(re.findall(r"<b>multiply</b><br/><font [^>]*>1: float32 0.5</font>", dot)) == 2
    assert "label=<const" not in dot


def test_a_let_bound_constant_used_once_is_a_line_of_its_user() -> None:
    mod = irpass.parse(
        """def @main(%x: Tensor[(3,), float32]) {
  let %c = const(float32, (3,), [1.0, 2.0, 3.0]);
  let %y = add(%x, %c);
  multiply(%y, %y)
}"""
    )
    dot = viz.to_dot(mod)
    assert re.search(r"<b>add</b><br/><font [^>]*>1: float32 \(3,\) \[1, 2, 3\]", dot)
    assert "label=<const" not in dot  # no box of its own


def test_an_ill_typed_module_is_still_drawn() -> None:
    a = irpass.var("a", shape=(2,), dtype="float32")
    b = irpass.var("b", shape=(3,), dtype="float32")
    dot = viz.to_dot(IRModule.from_expr(Function([a, b], op.add(a, b))))
    assert _op_boxes(dot, "add") == 1
    assert 'label="(2,) float32"' in dot and 'label="(3,) float32"' in dot  # the params'
