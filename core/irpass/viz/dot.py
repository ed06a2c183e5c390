"""DOT text of a :class:`~irpass.viz.graph.Graph` (Graphviz's input language).

Boxes use HTML-like labels (the op's name in bold, attributes and constants in a
smaller font below); clusters nest as ``subgraph cluster_...`` blocks, written
with an explicit stack so a deeply nested program needs no recursion.
"""

from __future__ import annotations

from html import escape

from .graph import Box, Graph

__all__ = ["graph_to_dot"]

# Fill colours by OpPattern (irpass.ir.op): heavy ops (conv, dense) blue, elementwise
# and broadcast yellow, layout changes grey, reductions green, the rest red.
_PATTERN_FILL = {
    0: "#fff2cc",
    1: "#fff2cc",
    2: "#eeeeee",
    3: "#d9ead3",
    4: "#cfe2f3",
    7: "#eeeeee",
    8: "#f4cccc",
}
_KIND_STYLE = {
    "op": 'shape=box, style="rounded,filled"',
    "call": 'shape=box, style="filled", fillcolor="#e6d7f0"',
    "var": 'shape=ellipse, style="filled", fillcolor="#ffffff"',
    "const": 'shape=note, style="filled", fillcolor="#f7f7f7", fontsize=9',
    "global": 'shape=ellipse, style="filled,dashed", fillcolor="#ffffff"',
    "tuple": 'shape=box, style="filled", fillcolor="#eeeeee", fontsize=9, height=0.25',
    "getitem": 'shape=circle, style="filled", fillcolor="#eeeeee", fontsize=9, '
    "width=0.3, fixedsize=false",
    "if": 'shape=diamond, style="filled", fillcolor="#fce5cd"',
    "collapsed": 'shape=box3d, style="filled", fillcolor="#d0e0e3"',
    "note": 'shape=note, style="filled", fillcolor="#fff9c4"',
}
_CLUSTER_STYLE = {
    "function": 'style="rounded"; color="#666666"',
    "primitive": 'style="rounded,filled"; fillcolor="#f3f8fc"; color="#6fa8dc"',
    "let": 'style="dashed"; color="#999999"',
    "if": 'style="rounded"; color="#e69138"',
    "then": 'style="dotted"; color="#e69138"',
    "else": 'style="dotted"; color="#e69138"',
    "repeat": 'style="rounded,filled"; fillcolor="#f0f7f8"; color="#45818e"',
}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _label(box: Box) -> str:
    title = escape(box.title)
    if box.kind in ("op", "call", "if", "collapsed", "note"):
        title = f"<b>{title}</b>"
    if not box.lines:
        return f"<{title}>"
    small = "<br/>".join(escape(line) for line in box.lines)
    return f'<{title}<br/><font point-size="9">{small}</font>>'


def _box_line(box: Box) -> str:
    style = _KIND_STYLE.get(box.kind, "shape=box")
    if box.kind == "op":
        style += f', fillcolor="{_PATTERN_FILL.get(box.pattern or 0, "#ffffff")}"'
    return f"{box.id} [label={_label(box)}, {style}];"


def graph_to_dot(graph: Graph, name: str = "irpass") -> str:
    """The DOT text of ``graph``: a ``digraph`` laid out top to bottom."""
    out = [
        f"digraph {_quote(name)} {{",
        '  graph [rankdir=TB, compound=true, fontname="Helvetica", fontsize=11, '
        "nodesep=0.25, ranksep=0.35, newrank=true];",
        '  node [fontname="Helvetica", fontsize=11, margin="0.08,0.04"];',
        '  edge [fontname="Helvetica", fontsize=8, color="#555555", fontcolor="#444444", '
        "arrowsize=0.6];",
    ]
    if graph.collapsed or graph.cut:
        out.append(f"  label={_quote(graph.summary())}; labelloc=t;")
    children: dict[str | None, list[str]] = {}
    labels = {}
    for c in graph.clusters:
        children.setdefault(c.parent, []).append(c.id)
        labels[c.id] = c
    boxes: dict[str | None, list[Box]] = {}
    for b in graph.boxes:
        boxes.setdefault(b.cluster if b.cluster in labels else None, []).append(b)
    nonempty = _nonempty(children, boxes)
    # explicit stack: ("open", cluster) writes its header, its boxes, then its children,
    # and ("close", depth) its closing brace
    stack: list[tuple[str, str | None, int]] = [("open", None, 0)]
    while stack:
        what, cid, depth = stack.pop()
        pad = "  " * (depth + 1)
        if what == "close":
            out.append("  " * depth + "}")
            continue
        if cid is not None:
            c = labels[cid]
            out.append("  " * depth + f"subgraph cluster_{cid} {{")
            out.append(f"{pad}label={_quote(c.label)}; {_CLUSTER_STYLE.get(c.kind, '')};")
            stack.append(("close", cid, depth))
        for b in boxes.get(cid, ()):
            out.append(pad + _box_line(b))
        for child in reversed(children.get(cid, ())):
            if child in nonempty:
                stack.append(("open", child, depth + 1))
    for e in graph.edges:
        attrs = []
        if e.label:
            attrs.append(f"label={_quote(e.label)}")
        if e.tail_cluster is not None and e.tail_cluster in labels:
            attrs.append(f"ltail=cluster_{e.tail_cluster}")
        if e.dashed:
            attrs.append("style=dashed")
        tail = f" [{', '.join(attrs)}]" if attrs else ""
        out.append(f"  {e.src} -> {e.dst}{tail};")
    out.append("}")
    return "\n".join(out) + "\n"


def _nonempty(children: dict[str | None, list[str]], boxes: dict) -> set[str]:
    """The clusters that hold a box somewhere inside (empty frames are not drawn)."""
    order: list[str] = []
    stack = list(children.get(None, ()))
    while stack:
        c = stack.pop()
        order.append(c)
        stack.extend(children.get(c, ()))
    full: set[str] = set()
    for c in reversed(order):  # children before parents
        if boxes.get(c) or any(k in full for k in children.get(c, ())):
            full.add(c)
    return full
