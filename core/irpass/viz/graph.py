"""A program as a picture's graph: boxes, edges and clusters (no drawing here).

:func:`build_graph` turns an :class:`~irpass.ir.IRModule`, a function or an
expression into a :class:`Graph` that :mod:`irpass.viz.dot` writes as DOT:

* one box per op call (the op's name and its attributes that differ from the
  op's defaults), per call of a global function or closure, per ``if``, per
  tuple and tuple projection (small ones); vars and params are ellipses;
* an edge per use of a value, labelled with the value's type (shape, symbolic
  dims included, and dtype);
* a constant used once by an op call is a line of that call's box (dtype,
  shape, a few values), a scalar a line of each of its users' boxes, another
  constant used more often a box of its own (a fused call's constant argument
  is a line of its param's ellipse);
* clusters: each global function, each nested function (a fused ``Primitive``
  function with its ops inside, its params wired to the call's arguments),
  each chain of ``let`` bindings, each ``if`` with its two branches.

A node is drawn in the innermost cluster that holds every use of it (as
``ToANormalForm`` places bindings), so a value computed before an ``if`` and
used in both branches is drawn outside the ``if``.

Readability of large models: with ``collapse`` the repeated blocks of a
program (the bottlenecks of a ResNet, the layers of a BERT) are drawn once,
framed "block 1 of k", and every copy after the first becomes one box
"× k-1 more". Each cluster's nodes are put in order of depth (program order
among equals); a run is a stretch of that order whose nodes' ops and
attributes repeat back to back (:func:`find_runs`), whose copies are wired
alike, each using the copy before (:func:`copies_alike`; copies side by side
are not a run). A first copy with shared values' ops mixed into it (BERT's
attention mask) is found too (:func:`copy_before`). With ``max_nodes`` the
picture keeps the boxes nearest the result (breadth first, against the data
flow) and one note box says how many were left out.

Everything is iterative and linear in the program's size, apart from the
structural hash of nested functions, ``let`` chains and ``if`` nodes, which
costs their size once per level of nesting.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

from ..errors import IRPassError
from ..ir import IRModule
from ..ir.expr import Expr
from ..ir.nodes import Call, Constant, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from ..ir.op import Op
from ..ir.structural import structural_hash
from ..ir.type_infer import infer_type
from .labels import attr_lines, constant_text, short_constant, type_label, value_type
from .repeats import copies_alike, copy_before, find_runs

__all__ = ["Box", "Cluster", "Edge", "Graph", "build_graph", "DEFAULT_MAX_NODES"]

#: The default cap on the boxes of one picture: about what ``dot`` lays out in a few
#: seconds and a person can still follow.
DEFAULT_MAX_NODES = 500


@dataclass(slots=True)
class Box:
    """One drawn node: ``kind`` is op, call, var, const, tuple, getitem, if, global,
    collapsed or note; ``title`` its first line, ``lines`` the smaller ones below."""

    id: str
    kind: str
    title: str
    lines: list[str] = field(default_factory=list)
    cluster: str | None = None
    pattern: int | None = None  # the op's OpPattern, for the box's colour


@dataclass(slots=True)
class Edge:
    """A use of a value: from the box that computes it to the box that uses it.

    ``tail_cluster`` names the cluster the edge leaves (a function used as a value);
    ``dashed`` marks a use that is not data (a closure called, a collapsed input).
    """

    src: str
    dst: str
    label: str = ""
    tail_cluster: str | None = None
    dashed: bool = False


@dataclass(slots=True)
class Cluster:
    """A group of boxes drawn inside a frame: ``kind`` is function, primitive, let, if,
    then, else or repeat; ``parent`` the enclosing cluster (None: the top level)."""

    id: str
    kind: str
    label: str
    parent: str | None


@dataclass
class Graph:
    """The picture's content: boxes, edges, clusters, and what was left out.

    ``ir_nodes`` counts the program's expression nodes that the picture stands for;
    ``collapsed`` describes each collapsed run of repeated blocks ("3 × a 13-node
    block") and ``cut`` how many boxes ``max_nodes`` left out (0: none).
    """

    boxes: list[Box] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    ir_nodes: int = 0
    collapsed: list[str] = field(default_factory=list)
    cut: int = 0
    wanted: int = 0  # boxes there were to draw before max_nodes cut any
    title: str = ""

    def summary(self) -> str:
        """One line: what was collapsed and cut (empty when nothing was)."""
        parts = []
        if self.collapsed:
            parts.append("repeated blocks collapsed: " + ", ".join(self.collapsed))
        if self.cut:
            parts.append(f"{self.cut:,} of {self.wanted:,} boxes not drawn (max_nodes)")
        return ", ".join(parts)


def build_graph(
    obj: IRModule | Expr,
    *,
    max_nodes: int | None = DEFAULT_MAX_NODES,
    collapse: bool = True,
    elide_constants: int = 16,
) -> Graph:
    """The graph of ``obj``: every function of a module side by side, a function, or the
    dataflow graph below an expression (its free vars as ellipses).

    ``max_nodes=None`` draws every box; ``elide_constants=N`` shows all values of a
    constant of at most N elements and the first few of a larger one.
    """
    if max_nodes is not None and (
        isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1
    ):
        raise ValueError(f"max_nodes must be None or an int >= 1, got {max_nodes!r}")
    if (
        isinstance(elide_constants, bool)
        or not isinstance(elide_constants, int)
        or elide_constants < 0
    ):
        raise ValueError(f"elide_constants must be an int >= 0, got {elide_constants!r}")
    if isinstance(obj, IRModule):
        roots: list[tuple[str | None, Expr]] = [
            (gv.name_hint, func) for gv, func in _typed_module(obj).items()
        ]
        title = "module"
    elif isinstance(obj, Expr):
        roots = [(None, _typed_expr(obj))]
        title = "function" if isinstance(obj, Function) else "expression"
    else:
        raise TypeError(
            f"irpass.viz draws an IRModule, a Function or an Expr, got {type(obj).__name__}"
        )
    builder = _Builder(elide_constants, collapse)
    for name, root in roots:
        builder.add_root(name, root)
    graph = builder.finish()
    graph.title = title
    if max_nodes is not None and len(graph.boxes) > max_nodes:
        _cut(graph, builder.root_boxes, max_nodes)
    return graph


def _typed_module(mod: IRModule) -> IRModule:
    """``mod`` with types where inference succeeds (edge labels need them), else as is."""
    if all(f.body._checked_type is not None for _, f in mod.items()):
        return mod
    try:
        return infer_type(mod)
    except (IRPassError, ValueError, TypeError):  # ill-typed: drawn without edge types
        return mod


def _typed_expr(expr: Expr) -> Expr:
    if expr._checked_type is not None:
        return expr
    try:
        return infer_type(expr)
    except (IRPassError, ValueError, TypeError):  # free vars of no type, say: no edge types
        return expr


# -- text of boxes and edges ------------------------------------------------------------


def _attr_key(call: Call) -> tuple:
    """The call's attributes as a hashable key for repeat signatures."""
    out = []
    for key, value in call.attrs.items():
        try:
            out.append((key, hash(value)))
        except TypeError:
            out.append((key, repr(value)))
    return tuple(out)


# -- the builder ------------------------------------------------------------------------


def _children(e: Expr) -> tuple[Expr, ...]:
    """The sub-expressions a picture draws edges from (a let's var is its value's name)."""
    t = type(e)
    if t is Call:
        op = e.op
        if type(op) is Function or type(op) is Var:
            return (op, *e.args)
        return e.args
    if t is Let:
        return (e.value, e.body)
    if t is Function:
        return (*e.params, e.body)
    if t is Var or t is Constant or t is GlobalVar or t is Op:
        return ()
    return e.children()


@dataclass
class _Program:
    """One function or expression being drawn, and what the builder learns of it."""

    name: str | None
    root: Expr
    order: list[Expr]  # its nodes, post-order
    uses: dict[Expr, int]
    alias: dict[Var, Expr]  # a let's var -> its value
    inline_fn: set[Function]  # functions drawn as a cluster wired to their one call
    scope: dict[Expr, int | None] = field(default_factory=dict)  # node -> cluster
    owned: dict[Expr, list[int]] = field(default_factory=dict)  # clusters a node brings
    fn_cluster: dict[Function, int] = field(default_factory=dict)
    branch: dict[If, tuple[int, int, int]] = field(default_factory=dict)  # if, then, else
    box_of: dict[Expr, Box] = field(default_factory=dict)
    inline_const: dict[Expr, Constant] = field(default_factory=dict)  # as its user sees it
    op_names: dict[int, list[str]] = field(default_factory=dict)  # cluster -> its ops
    port: dict[Expr, tuple[Box, str | None]] = field(default_factory=dict)


class _Builder:
    def __init__(self, elide: int, collapse: bool) -> None:
        self.elide = elide
        self.collapse = collapse
        self.graph = Graph()
        self.cluster_parent: list[int | None] = []  # by cluster index
        self.cluster_depth: list[int] = []
        self.root_boxes: list[str] = []
        self._ids = 0

    # clusters are ints while building, "cN" in the graph
    def _new_cluster(self, kind: str, label: str, parent: int | None) -> int:
        idx = len(self.cluster_parent)
        self.cluster_parent.append(parent)
        self.cluster_depth.append(0 if parent is None else self.cluster_depth[parent] + 1)
        self.graph.clusters.append(
            Cluster(f"c{idx}", kind, label, None if parent is None else f"c{parent}")
        )
        return idx

    def _lca(self, a: int | None, b: int | None) -> int | None:
        parent, depth = self.cluster_parent, self.cluster_depth
        while a != b:
            if a is None or b is None:
                return None
            if depth[a] >= depth[b]:
                a = parent[a]
            else:
                b = parent[b]
        return a

    def _box(self, kind: str, title: str, lines: list[str] | None = None) -> Box:
        box = Box(f"n{self._ids}", kind, title, lines or [])
        self._ids += 1
        self.graph.boxes.append(box)
        return box

    def add_root(self, name: str | None, root: Expr) -> None:
        """Add one global function (``name``) or the expression ``root`` (``name`` None)."""
        p = self._program(name, root)
        self._place(p)
        self._draw(p)
        uses = self._uses(p)
        hidden_by = self._collapse(p) if self.collapse else {}
        self._emit(p, uses, hidden_by)

    def _program(self, name: str | None, root: Expr) -> _Program:
        """``root``'s nodes in post-order, how often each is used, what each let's var
        names, and the functions drawn inline with their one call."""
        order = self._post_order(root)
        uses: dict[Expr, int] = {}
        alias: dict[Var, Expr] = {}
        inline_fn: set[Function] = set()
        for n in order:
            t = type(n)
            for c in _children(n):
                uses[c] = uses.get(c, 0) + 1
            if t is Let:
                alias[n.var] = n.value
        for n in order:
            if type(n) is Call and type(n.op) is Function and uses[n.op] == 1:
                inline_fn.add(n.op)
        return _Program(name, root, order, uses, alias, inline_fn)

    def _place(self, p: _Program) -> None:
        """The cluster of every node: the innermost one that holds all its uses (users are
        placed before the values they use: reverse post-order); the clusters of
        functions, ifs and let chains."""
        name, root, order, uses = p.name, p.root, p.order, p.uses
        scope, owned, fn_cluster, branch = p.scope, p.owned, p.fn_cluster, p.branch
        # the top level: a root function's own cluster is made below, as any function's
        scope[root] = None
        fixed: set[Expr] = set()
        let_names: dict[int, list[str]] = {}
        chain: dict[Let, int] = {}
        lca = self._lca

        def use(child: Expr, s: int | None) -> None:
            if child in fixed:
                return
            if child in scope:
                scope[child] = lca(scope[child], s)
            else:
                scope[child] = s

        for n in reversed(order):
            s = scope[n]
            t = type(n)
            if t is Function:
                if n is root and name is not None:
                    label = f"@{name}"
                else:
                    label = "fn"
                kind = "primitive" if n.attrs and n.attrs.get("Primitive") else "function"
                c = self._new_cluster(kind, label, s)
                fn_cluster[n] = c
                owned[n] = [c]
                for param in n.params:
                    scope[param] = c
                    fixed.add(param)
                use(n.body, c)
            elif t is If:
                ci = self._new_cluster("if", "if", s)
                ct = self._new_cluster("then", "then", ci)
                ce = self._new_cluster("else", "else", ci)
                branch[n] = (ci, ct, ce)
                owned[n] = [ci]
                use(n.cond, s)
                use(n.true_branch, ct)
                use(n.false_branch, ce)
            elif t is Let:
                c = chain.get(n)
                if c is None:
                    c = self._new_cluster("let", "let", s)
                    owned[n] = [c]
                    let_names[c] = []
                let_names[c].append(n.var.name_hint)
                use(n.value, c)
                if type(n.body) is Let and uses.get(n.body) == 1:
                    chain[n.body] = c
                    scope[n.body] = c
                    fixed.add(n.body)
                else:
                    use(n.body, c)
            else:
                for ch in _children(n):
                    use(ch, s)
        for c, names in let_names.items():
            distinct = list(dict.fromkeys(names))  # ANF names every binding %t, say
            label = "let " + ", ".join("%" + v for v in distinct[:4])
            label += " ..." if len(distinct) > 4 else ""
            if len(names) > 4 or len(distinct) < len(names):
                label += f" ({len(names)} bindings)"
            self.graph.clusters[c].label = label

    def _draw(self, p: _Program) -> None:
        """A box for every node drawn as one, constants as lines of their users' boxes
        where they fit, the fused functions' labels."""
        order, root, scope, alias, inline_fn = p.order, p.root, p.scope, p.alias, p.inline_fn
        box_of, inline_const, op_names = p.box_of, p.inline_const, p.op_names
        consumers: dict[Expr, list[Expr]] = {}
        for n in order:
            for c in _children(n):
                consumers.setdefault(c, []).append(n)
        for n in order:
            t = type(n)
            s = scope.get(n)
            box: Box | None = None
            if t is Var:
                if n in alias:
                    continue
                box = self._box(
                    "var",
                    "%" + n.name_hint,
                    [type_label(n.type_annotation)] if n.type_annotation is not None else [],
                )
            elif t is Constant:
                # the constant as its user sees it: itself, or the var a let binds it to
                # (A-normal form binds every constant)
                seen_as: Expr = n
                users = consumers.get(n, [])
                if len(users) == 1 and type(users[0]) is Let and users[0].value is n:
                    seen_as = users[0].var
                    users = consumers.get(seen_as, [])
                # a scalar is repeated in each user's box rather than drawn with long edges
                # to every use (BERT's 0.5, 1 and sqrt(2) in each layer's GELU)
                if (
                    users
                    and (len(users) == 1 or n.data.size <= 1)
                    and n is not root
                    and all(self._shows_constants(u, inline_fn) for u in users)
                ):
                    inline_const[seen_as] = n
                    continue
                box = self._box("const", "const", constant_text(n.data, self.elide))
            elif t is GlobalVar:
                box = self._box("global", "@" + n.name_hint)
            elif t is Call:
                op = n.op
                if type(op) is Op:
                    box = self._box("op", op.name, attr_lines(n))
                    box.pattern = int(op.pattern)
                    if s is not None:
                        op_names.setdefault(s, []).append(op.name)
                elif op in inline_fn:
                    continue
                elif type(op) is GlobalVar:
                    box = self._box("call", "@" + op.name_hint)
                else:
                    box = self._box("call", "call")
            elif t is Tuple:
                box = self._box("tuple", "tuple")
            elif t is TupleGetItem:
                box = self._box("getitem", f".{n.index}")
            elif t is If:
                box = self._box("if", "if")
                box.cluster = f"c{p.branch[n][0]}"
                box_of[n] = box
                continue
            else:
                continue
            if s is not None:
                box.cluster = f"c{s}"
            box_of[n] = box
        # constants shown inside their user's box (a call) or param's ellipse (a fused call)
        for n in order:
            if type(n) is Call:
                if n.op in inline_fn:
                    for param, a in zip(n.op.params, n.args, strict=False):
                        if a in inline_const:
                            # the constant's line says the param's type too
                            text = short_constant(inline_const[a].data, self.elide)
                            box_of[param].lines = ["= const " + text]
                elif n in box_of:
                    for i, a in enumerate(n.args):
                        if a in inline_const:
                            text = short_constant(inline_const[a].data, self.elide)
                            box_of[n].lines.append(f"{i}: {text}")
        for fn, c in p.fn_cluster.items():
            cl = self.graph.clusters[c]
            if cl.kind == "primitive" and fn is not root:
                names = op_names.get(c, [])
                seen = list(dict.fromkeys(names))
                cl.label = "fused: " + " + ".join(seen[:4]) + (" ..." if len(seen) > 4 else "")

    def _port_of(self, p: _Program, e: Expr) -> tuple[Box, str | None] | None:
        """The box that stands for the value ``e`` (a let's var: its value's; a let, a
        function or a fused call: its result's) and the cluster an edge from it leaves
        (a function used as a value)."""
        port, box_of, alias, inline_fn = p.port, p.box_of, p.alias, p.inline_fn
        got = port.get(e)
        if got is not None:
            return got
        path: list[Expr] = []
        tail: str | None = None
        cur: Expr | None = e
        result: tuple[Box, str | None] | None = None
        while cur is not None:
            if cur in port:
                result = port[cur]
                break
            path.append(cur)
            t = type(cur)
            if cur in box_of:
                result = (box_of[cur], None)
                break
            if t is Var and cur in alias:
                cur = alias[cur]
            elif t is Let:
                cur = cur.body
            elif t is Call and cur.op in inline_fn:
                cur = cur.op.body
            elif t is Function:
                if tail is None:
                    tail = f"c{p.fn_cluster[cur]}"
                cur = cur.body
            else:
                cur = None
        if result is None:
            return None
        if tail is not None and result[1] is None:
            result = (result[0], tail)
        for q in path:
            port[q] = result
        return result

    def _uses(self, p: _Program) -> list[tuple[Expr, str, str, bool]]:
        """Every use to draw as an edge: (value, the box using it, label prefix, dashed)."""
        order, box_of, inline_const, inline_fn = p.order, p.box_of, p.inline_const, p.inline_fn
        edges: list[tuple[Expr, str, str, bool]] = []

        for n in order:
            t = type(n)
            if t is Call:
                if n.op in inline_fn:
                    for param, a in zip(n.op.params, n.args, strict=False):
                        if a not in inline_const:
                            edges.append((a, box_of[param].id, "", False))
                    continue
                box = box_of[n]
                if type(n.op) is Var or type(n.op) is Function:
                    edges.append((n.op, box.id, "", True))
                for a in n.args:
                    if a not in inline_const:
                        edges.append((a, box.id, "", False))
            elif t is Tuple:
                for a in n.fields:
                    edges.append((a, box_of[n].id, "", False))
            elif t is TupleGetItem:
                edges.append((n.tuple_value, box_of[n].id, "", False))
            elif t is If:
                box = box_of[n]
                edges.append((n.cond, box.id, "cond ", False))
                edges.append((n.true_branch, box.id, "then ", False))
                edges.append((n.false_branch, box.id, "else ", False))
        return edges

    def _emit(
        self,
        p: _Program,
        uses: list[tuple[Expr, str, str, bool]],
        hidden_by: dict[str, Box],
    ) -> None:
        """The edges of ``uses``, those of hidden boxes going to their collapsed box."""
        root, order = p.root, p.order
        seen_edges: set[tuple[str, str, str]] = set()
        for value, dst, prefix, dashed in uses:
            got = self._port_of(p, value)
            if got is None:
                continue
            src_box, tail = got
            src = src_box.id
            src_hidden = hidden_by.get(src)
            dst_hidden = hidden_by.get(dst)
            if src_hidden is not None:
                src, tail = src_hidden.id, None
            if dst_hidden is not None:
                dst = dst_hidden.id
            if src == dst:
                continue
            label = prefix + type_label(value_type(value))
            key = (src, dst, label)
            if (src_hidden is not None or dst_hidden is not None) and key in seen_edges:
                continue
            seen_edges.add(key)
            self.graph.edges.append(Edge(src, dst, label.strip(), tail, dashed))
        if hidden_by:
            # a constant or global used only by hidden boxes goes with them
            used = {e.src for e in self.graph.edges}
            self.graph.boxes = [
                b
                for b in self.graph.boxes
                if b.id not in hidden_by and (b.kind not in ("const", "global") or b.id in used)
            ]
        self.graph.ir_nodes += sum(1 for n in order if type(n) is not Op)
        got = self._port_of(p, root)
        if got is not None:
            rid = got[0].id
            self.root_boxes.append(hidden_by[rid].id if rid in hidden_by else rid)

    @staticmethod
    def _shows_constants(user: Expr | None, inline_fn: set[Function]) -> bool:
        """Whether a constant that ``user`` uses can be shown inside ``user``'s drawing:
        a line of a call's box, or of a fused function's param."""
        if type(user) is not Call:
            return False
        op = user.op
        return type(op) is Op or type(op) is GlobalVar or op in inline_fn

    @staticmethod
    def _post_order(root: Expr) -> list[Expr]:
        order: list[Expr] = []
        visited: set[Expr] = set()
        stack: list[tuple[Expr, bool]] = [(root, False)]
        push = stack.append
        pop = stack.pop
        while stack:
            node, ready = pop()
            if node in visited:
                continue
            if ready:
                visited.add(node)
                order.append(node)
                continue
            push((node, True))
            for child in reversed(_children(node)):
                if child not in visited:
                    push((child, False))
        return order

    def _collapse(self, p: _Program) -> dict[str, Box]:
        """Find runs of repeated blocks in each cluster (its nodes in order of depth) and
        hide every copy after the first behind one box. Returns hidden box id ->
        collapsed box."""
        order, scope, box_of, owned = p.order, p.scope, p.box_of, p.owned
        inline_fn, root, op_names, alias = p.inline_fn, p.root, p.op_names, p.alias
        seqs: dict[int | None, list[Expr]] = {}
        for n in order:
            t = type(n)
            if t is Var or t is Constant or t is GlobalVar or t is Op or n is root:
                continue
            if t is Function and n in inline_fn:
                continue
            if t is Let and n not in owned:
                continue  # inside a let chain: its head stands for it
            if t is Call and n.op in inline_fn:
                owned[n] = owned.get(n.op, [])
            seqs.setdefault(scope.get(n), []).append(n)
        # Each cluster's elements in order of their depth (the longest path from a leaf),
        # program order among equals: a value that copies share (the attention mask of
        # BERT's layers) then comes before the copies instead of inside the first one,
        # where the post-order puts it; the copies, each deeper than the one before,
        # stay back to back.
        level: dict[Expr, int] = {}
        for n in order:
            t = type(n)
            if t is Var:
                value = alias.get(n)
                level[n] = 0 if value is None else level.get(value, 0)
            elif t is Constant or t is GlobalVar:
                level[n] = 0
            else:
                level[n] = 1 + max((level.get(c, 0) for c in _children(n)), default=0)
        index = {n: i for i, n in enumerate(order)}
        for seq in seqs.values():
            seq.sort(key=lambda n: (level[n], index[n]))
        # clusters brought along by each element: the clusters it owns and their insides
        children_of: dict[int, list[int]] = {}
        for c, parent in enumerate(self.cluster_parent):
            if parent is not None:
                children_of.setdefault(parent, []).append(c)
        hidden_clusters: dict[int, Box] = {}
        hidden_nodes: dict[Expr, Box] = {}
        # what each element stands for: itself and the nodes and op calls inside the
        # clusters it brings along (a fused call, an if, a let chain)
        own_nodes: dict[int, int] = {}
        for n in order:
            c = scope.get(n)
            if c is not None and type(n) is not Op:
                own_nodes[c] = own_nodes.get(c, 0) + 1
        total = [own_nodes.get(c, 0) for c in range(len(self.cluster_parent))]
        for c in range(len(self.cluster_parent) - 1, -1, -1):  # children after parents
            parent = self.cluster_parent[c]
            if parent is not None:
                total[parent] += total[c]

        def inside_ops(n: Expr) -> list[str]:
            names = [n.op.name] if type(n) is Call and type(n.op) is Op else []
            stack = list(owned.get(n, ()))
            while stack:
                c = stack.pop()
                names.extend(op_names.get(c, ()))
                stack.extend(children_of.get(c, ()))
            return names

        def operands(n: Expr) -> list[Expr]:
            """``n``'s operands, a let's var as the value it names."""
            out = []
            for c in _children(n):
                while type(c) is Var and c in alias:
                    c = alias[c]
                out.append(c)
            return out

        for s, seq in seqs.items():
            pos = {n: i for i, n in enumerate(seq)}
            ops_of = [operands(n) for n in seq]
            tokens = self._tokens(seq, ops_of, pos)
            weights = [1 + sum(total[c] for c in owned.get(n, ())) for n in seq]

            alike = partial(copies_alike, ops_of, pos)
            floor = 0  # where the last run ended
            for start, length, count in find_runs(tokens, weights, alike):
                first_at: Sequence[int] = range(start, start + length)
                rest_at = range(start + length, start + length * count)
                earlier = copy_before(tokens, ops_of, pos, start, length, floor)
                if earlier is not None:
                    first_at, rest_at = earlier, range(start, start + length * count)
                    count += 1
                floor = start + length * count
                first = [seq[j] for j in first_at]
                size = sum(weights[j] for j in first_at)
                box = self._box("collapsed", f"\u00d7 {count - 1} more", [])
                for j in rest_at:
                    n = seq[j]
                    hidden_nodes[n] = box
                    stack = list(owned.get(n, ()))
                    while stack:
                        c = stack.pop()
                        hidden_clusters[c] = box
                        stack.extend(children_of.get(c, ()))
                if s is not None:
                    box.cluster = f"c{s}"
                rep = self._new_cluster("repeat", f"block 1 of {count}", s)
                for n in first:
                    b = box_of.get(n)
                    if b is not None and b.cluster == (None if s is None else f"c{s}"):
                        b.cluster = f"c{rep}"
                    for c in owned.get(n, ()):
                        self.cluster_parent[c] = rep
                        self.graph.clusters[c].parent = f"c{rep}"
                ops = _op_list([name for n in first for name in inside_ops(n)])
                copies = "copy" if count == 2 else "copies"
                what = f"{count - 1} more {copies} of block 1 ({size} nodes" + (
                    f": {ops})" if ops else ")"
                )
                box.lines = ["collapsed: " + what]
                self.graph.collapsed.append(f"{count} \u00d7 a {size}-node block")
        if not hidden_nodes:
            return {}
        out: dict[str, Box] = {}
        for n, b in hidden_nodes.items():
            if n in box_of:
                out[box_of[n].id] = b
        for box in self.graph.boxes:
            if box.cluster is not None and box.id not in out:
                c = int(box.cluster[1:])
                if c in hidden_clusters:
                    out[box.id] = hidden_clusters[c]
        gone = {int(c.id[1:]) for c in self.graph.clusters if int(c.id[1:]) in hidden_clusters}
        self.graph.clusters = [c for c in self.graph.clusters if int(c.id[1:]) not in gone]
        return out

    @staticmethod
    def _tokens(seq: list[Expr], ops_of: list[list[Expr]], pos: dict[Expr, int]) -> list[int]:
        """Each element's kind as a small int: its op and attributes (or the structural
        hash of what it holds) and, per operand, whether it is a constant. The wiring is
        compared by :func:`_wiring` once a run is found."""
        intern: dict[tuple, int] = {}
        out = []
        for n, operands in zip(seq, ops_of, strict=True):
            t = type(n)
            if t is Call:
                op = n.op
                if type(op) is Op:
                    head: tuple = ("op", op.name, _attr_key(n))
                elif type(op) is Function:
                    head = ("fn", structural_hash(op))
                elif type(op) is GlobalVar:
                    head = ("call", op.name_hint)
                else:
                    head = ("call",)
            elif t is TupleGetItem:
                head = ("get", n.index)
            elif t is Tuple:
                head = ("tuple", len(n.fields))
            else:
                head = (t.__name__, structural_hash(n))
            # a param and a computed value alike: the first copy of a block takes a
            # param where the others take the copy before's result
            kinds = tuple("c" if type(c) is Constant else "v" for c in operands)
            out.append(intern.setdefault((head, kinds), len(intern) + 1))
        return out

    def finish(self) -> Graph:
        """The graph built so far."""
        return self.graph


def _op_list(names: list[str]) -> str:
    if not names:
        return ""
    distinct = list(dict.fromkeys(names))
    text = ", ".join(distinct[:5]) + (", ..." if len(distinct) > 5 else "")
    return f"{len(names)} op calls: {text}"


def _cut(graph: Graph, roots: list[str], max_nodes: int) -> None:
    """Keep the ``max_nodes - 1`` boxes nearest the results and one note for the rest."""
    into: dict[str, list[str]] = {}
    for e in graph.edges:
        into.setdefault(e.dst, []).append(e.src)
    keep: dict[str, None] = {}
    queue = deque(r for r in roots)
    budget = max_nodes - 1
    while queue and len(keep) < budget:
        b = queue.popleft()
        if b in keep:
            continue
        keep[b] = None
        queue.extend(into.get(b, ()))
    for box in graph.boxes:  # boxes no result depends on, in program order
        if len(keep) >= budget:
            break
        keep.setdefault(box.id, None)
    graph.wanted = len(graph.boxes)
    graph.cut = graph.wanted - len(keep)
    note = Box(
        "cut",
        "note",
        f"{graph.cut:,} more boxes not drawn",
        [f"max_nodes={max_nodes}: the {len(keep):,} nearest the result are drawn"],
    )
    graph.boxes = [b for b in graph.boxes if b.id in keep] + [note]
    edges: list[Edge] = []
    seen: set[tuple[str, str]] = set()
    for e in graph.edges:
        if e.dst not in keep:
            continue
        if e.src not in keep:
            if (note.id, e.dst) in seen:
                continue
            seen.add((note.id, e.dst))
            edges.append(Edge(note.id, e.dst, "", None, True))
        else:
            edges.append(e)
    graph.edges = edges
