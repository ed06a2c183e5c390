"""FuseOps: group op calls into primitive functions by their fusion patterns.

Semantics follow TVM Relay's ``FuseOps``. Each group of op calls becomes a
local function with the attribute ``Primitive=1``, called in place::

    %0 = fn (%p0: Tensor[...], %p1: Tensor[...], Primitive=1) -> Tensor[...] {
      nn.relu(add(nn.conv2d(%p0, %p1), 1.0f32))
    };
    %0(%data, meta[Constant][0])

Every op call ends up in exactly one primitive function; an op that fuses
with nothing (an ``OPAQUE`` op such as ``nn.softmax``, or everything when
fusion is off) gets a primitive function of its own, as in TVM. A group's
inputs from outside become the function's params (``%p0``, ``%p1``, ... in
order of first use), including non-scalar constants such as weights, which
TVM passes as arguments too; scalar constants (0-d) are inlined in the body.
A ``Tuple`` or ``TupleGetItem`` that fused with no op call is left as it is.

Which ops fuse (the op registry's ``Op.pattern``; stateful ops count as
``OPAQUE``), exactly TVM's rules:

* an ``ELEMWISE``/``BROADCAST`` op fuses into its post-dominator when every
  op on the way is at most ``INJECTIVE`` and the post-dominator is
  elementwise, broadcast, injective, a reduction (``COMM_REDUCE``) or a group
  anchored by an ``OUT_ELEMWISE_FUSABLE`` op;
* an ``OUT_ELEMWISE_FUSABLE`` op (``nn.conv2d``, ``nn.dense``, pooling,
  ``nn.batch_matmul``) fuses with the elementwise/broadcast ops after it when
  every edge on the way is elementwise (same shape as the result) and every
  op is at most ``BROADCAST``: conv2d + bias_add + relu is one group;
* an ``INJECTIVE`` op (reshape, transpose, concatenate, ...) or a ``Tuple``
  fuses into its post-dominator when everything on the way, the
  post-dominator included, is at most ``INJECTIVE`` -- so, as in TVM, an
  injective op does not fuse into a following reduction, an elementwise one
  does; this runs after the conv2d groups are complete;
* a ``COMM_REDUCE`` op ends its group (nothing after it joins), an
  ``OPAQUE`` op joins nothing;
* the fields of a ``Tuple`` that fused into an injective consumer
  (``concatenate((relu(a), exp(b)))``) join that group last; a tuple that is
  the output of a region never takes its fields.

A node joins a group only if the group post-dominates it -- every path from
it leads into the group -- so a value with two consumers in different groups
is computed once, by its own group, and never duplicated. ``max_depth``
(config ``std.FuseOps.max_depth``, default 256 as TVM's) bounds the nodes of
one group (op calls, tuples and projections).

Boundaries: ``let`` values and bodies, ``if`` conditions and branches,
function bodies and non-op calls (of global functions, closures, vars) break
groups, as in TVM: a value used across such a boundary, or used in two of
these regions, is the output of its group. Functions marked ``Primitive``
(already fused) or ``SkipOptimization``, global or nested, are left alone, so
running the pass twice changes nothing the second time. Fusion happens at
``fuse_opt_level >= 1`` (``-1``: the ``PassContext`` opt level); at 0 every
op call is wrapped alone.

Algorithm (TVM's, on an explicit stack, no recursion along the program):

1. one post-order walk indexes the dataflow nodes (calls, tuples,
   projections) of a global function and records each use as an edge with a
   pattern (the consumer's op pattern; ``ELEMWISE`` for a broadcast op's
   operand of the result's shape); uses across a boundary mark the node as
   a region output (``extern``);
2. the post-dominator tree, built in reverse topological order: a node's
   immediate post-dominator is the least common ancestor of its consumers
   in the tree, found with Myers' jump pointers in O(log n) per query (TVM
   walks parent links, which can be quadratic), together with the strongest
   pattern on the paths to it;
3. three sweeps over the nodes (OUT_ELEMWISE_FUSABLE and elementwise; then
   injective; then tuple fields) try to fuse each node into its
   post-dominator's group: check every path between them, then merge all
   nodes on those paths (union-find). The path walks stop at the target
   group and at ``max_depth`` counted nodes, so each costs O(max_depth);
4. one loop over the nodes of step 1 in post-order (the walk also lists
   the lets, ifs and functions) rebuilds each from its rebuilt children and
   builds each group's function when it reaches the group's output node.

The whole pass is O(n log n) for n nodes (O(n) for chains), with a constant
bounded by ``max_depth``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from irpass.ir import (
    Attrs,
    Call,
    Constant,
    Expr,
    Function,
    If,
    IRModule,
    Let,
    Op,
    OpPattern,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
)
from irpass.ir.attrs import EMPTY_ATTRS
from irpass.ir.gcpause import gc_paused
from irpass.transform import ConfigOption, module_pass
from irpass.transform.context import RewriteCounter

from .options import options_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from irpass.transform import PassContext

__all__ = ["FuseOps", "MAX_DEPTH", "CONFIG_OPTIONS", "fuse_function"]

#: The config key bounding the number of nodes in one fused group.
MAX_DEPTH = "std.FuseOps.max_depth"

# declared in options.py (registered with the plugin, before any pass is imported)
CONFIG_OPTIONS: list[ConfigOption] = options_of("FuseOps")

# The attributes of every fused function (one shared, immutable object).
_PRIMITIVE = Attrs({"Primitive": 1})

# The constructors without checks, for nodes built from parts valid by construction.
_unchecked_call = Call._unchecked
_unchecked_function = Function._unchecked

# Function attributes that make the pass leave a function (global or nested) alone.
_SKIP_ATTRS = ("Primitive", "SkipOptimization")

# Pattern kinds as plain ints (compared in the hot loops).
_ELEMWISE = int(OpPattern.ELEMWISE)
_BROADCAST = int(OpPattern.BROADCAST)
_INJECTIVE = int(OpPattern.INJECTIVE)
_COMM_REDUCE = int(OpPattern.COMM_REDUCE)
_OUT_EWISE = int(OpPattern.OUT_ELEMWISE_FUSABLE)
_TUPLE = int(OpPattern.TUPLE)
_OPAQUE = int(OpPattern.OPAQUE)

# The dataflow node kinds the fusion graph is made of.
_DATAFLOW = (Call, Tuple, TupleGetItem)


@module_pass(opt_level=1, name="FuseOps", required=["InferType"])
class FuseOps:
    """Fuse op calls into functions marked ``Primitive=1`` (TVM's ``FuseOps``).

    ``fuse_opt_level``: ``-1`` (default) takes the opt level of the current
    :class:`~irpass.transform.PassContext`; at level 0 nothing is fused
    (each op call is wrapped alone), at 1 and above ops fuse by their
    patterns. See the module docstring for the rules.
    """

    def __init__(self, fuse_opt_level: int = -1) -> None:
        if isinstance(fuse_opt_level, bool) or not isinstance(fuse_opt_level, int):
            raise TypeError(f"FuseOps: fuse_opt_level must be an int, got {fuse_opt_level!r}")
        if fuse_opt_level < -1:
            raise ValueError(
                f"FuseOps: fuse_opt_level must be -1 (the PassContext's) or >= 0, "
                f"got {fuse_opt_level}"
            )
        self.fuse_opt_level = fuse_opt_level

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Fuse every global function not marked ``Primitive``/``SkipOptimization``.

        Returns ``mod`` itself when no function changed.
        """
        max_depth = ctx.config.get(MAX_DEPTH)
        if max_depth is None:
            max_depth = 256
        if max_depth < 1:
            raise ValueError(f"config option {MAX_DEPTH!r} must be >= 1, got {max_depth}")
        level = ctx.opt_level if self.fuse_opt_level == -1 else self.fuse_opt_level
        counter = ctx.rewrite_counter()
        changed = False
        new_funcs = {}
        for gv, func in mod.items():
            if not _skipped(func):
                new = fuse_function(func, fuse=level > 0, max_depth=max_depth, counter=counter)
                changed = changed or new is not func
                func = new
            new_funcs[gv] = func
        return IRModule(new_funcs) if changed else mod


def fuse_function(
    func: Function, *, fuse: bool = True, max_depth: int = 256,
    counter: RewriteCounter | None = None,
) -> Function:
    """``func`` with its op calls grouped into primitive functions.

    ``func`` must be typed (``checked_type`` on every node, as after
    ``InferType``). ``fuse=False`` wraps each op call alone. Returns ``func``
    itself when it has no op call to wrap, or when it is marked ``Primitive``
    or ``SkipOptimization``. ``counter(site)``, if given, is asked before each
    fusion of a node into its post-dominator's group (the debug counter); a
    fusion it refuses is not made, as if ``max_depth`` forbade it.
    """
    if _skipped(func):
        return func
    # The IR is acyclic: the collector would only rescan the many live nodes.
    with gc_paused():
        graph = _Graph(func)
        if not graph.op_calls:
            return func
        if fuse:
            roots = _Partitioner(graph, max_depth, counter).run()
        else:
            roots = list(range(len(graph.pattern)))
        out = _rewrite(func, graph, roots)
        # Free the graph while the collector is off: the collection that follows
        # turning it back on then scans only the new nodes, not the graph's lists.
        del graph, roots
    return out


def _skipped(func: Function) -> bool:
    attrs = func.attrs
    return bool(attrs) and any(attrs.get(key) for key in _SKIP_ATTRS)


# -- 1. the dataflow graph ------------------------------------------------------------

# The node kinds that start regions of their own (walked once each, by identity).
_SCOPES = (Let, If, Function)


class _Graph:
    """The dataflow nodes of one global function, in post-order (producers first).

    Node ``i`` is the ``i``-th dataflow node (call, tuple, projection) in
    post-order. ``index`` maps each node the rewrite rebuilds to its number
    (``None`` for the lets, ifs and functions not left alone), in post-order:
    its keys list children before parents. ``outs[i]``/``out_pats[i]``: the
    consumers of node ``i`` and the pattern of each use; ``extern[i]``: node
    ``i`` is used where it cannot fuse (across a boundary, or in two regions),
    so it is the output of its group.
    """

    __slots__ = ("index", "pattern", "outs", "out_pats", "extern", "op_calls")

    def __init__(self, func: Function) -> None:
        index: dict[Expr, int | None] = {}
        pattern: list[int] = []
        outs: list[list[int]] = []
        out_pats: list[list[int]] = []
        op_calls: list[int] = []
        extern: set[Expr] = set()
        # The region (let value/body, if part, function body) each dataflow node is
        # evaluated in; a use from another region makes the node extern.
        region: list[int] = []
        kinds: dict[Op, int] = {}  # pattern per op, looked up once
        # Work items (expr, region); a negative region -r marks a node of region r
        # whose operands are all done. A node is in `index` once done, and a node
        # is never looked at between its expansion and its being done: only its
        # operands (and theirs) are walked in between, and the IR is acyclic.
        # So a dataflow operand is pushed only if not done yet, and a use of a
        # done one from another region marks it extern on the spot.
        stack: list[tuple[Expr, int]] = []
        push = stack.append
        pop = stack.pop
        dataflow = _DATAFLOW
        scopes = _SCOPES
        tensor_type = TensorType

        regions = 1
        body = func.body
        if type(body) in dataflow:
            extern.add(body)  # the function's result leaves its region
            push((body, regions))
        elif type(body) in scopes:
            push((body, regions))
        while stack:
            node, r = pop()
            t = type(node)
            if r < 0:  # done: index the node and record its uses
                if t is Call:
                    i = len(pattern)
                    index[node] = i
                    region.append(-r)
                    outs.append([])
                    out_pats.append([])
                    op = node.op
                    if type(op) is Op:
                        op_calls.append(i)
                        kind = kinds.get(op)
                        if kind is None:
                            kind = kinds[op] = _OPAQUE if op.stateful else int(op.pattern)
                    else:
                        kind = _OPAQUE  # a call of a global function, closure or var
                    pattern.append(kind)
                    if kind == _BROADCAST:
                        # A broadcast op's operand that already has the result's shape
                        # is used elementwise (lets conv2d fuse with bias_add).
                        rtype = node.checked_type
                        shape = rtype.shape if type(rtype) is tensor_type else None
                        for a in node.args:
                            j = index.get(a)
                            if j is not None:
                                edge = _BROADCAST
                                if shape is not None:
                                    at = a.checked_type
                                    if type(at) is tensor_type and at.shape == shape:
                                        edge = _ELEMWISE
                                outs[j].append(i)
                                out_pats[j].append(edge)
                    else:
                        for a in node.args:
                            j = index.get(a)
                            if j is not None:
                                outs[j].append(i)
                                out_pats[j].append(kind)
                elif t is Tuple:
                    i = len(pattern)
                    index[node] = i
                    region.append(-r)
                    outs.append([])
                    out_pats.append([])
                    pattern.append(_TUPLE)
                    for f in node.fields:
                        if type(f) in dataflow:
                            if type(f.checked_type) is tensor_type:
                                j = index[f]
                                outs[j].append(i)
                                out_pats[j].append(_INJECTIVE)
                            else:
                                extern.add(f)  # a nested tuple or closure: never fused through
                elif t is TupleGetItem:
                    i = len(pattern)
                    index[node] = i
                    region.append(-r)
                    outs.append([])
                    out_pats.append([])
                    value = node.tuple_value
                    ty = value.checked_type
                    if type(ty) is TupleType and all(type(f) is tensor_type for f in ty.fields):
                        pattern.append(_INJECTIVE)
                        if type(value) in dataflow:
                            j = index[value]
                            outs[j].append(i)
                            out_pats[j].append(_INJECTIVE)
                    else:
                        pattern.append(_OPAQUE)
                        if type(value) in dataflow:
                            extern.add(value)
                else:
                    index[node] = None  # a let, if or function, rebuilt in its turn
                continue
            if t is Call or t is Tuple or t is TupleGetItem:
                j = index.get(node)
                if j is not None:  # done already (pushed twice)
                    if region[j] != r:
                        extern.add(node)
                    continue
                push((node, -r))
                if t is TupleGetItem:
                    operands: tuple[Expr, ...] = (node.tuple_value,)
                else:
                    operands = node.args if t is Call else node.fields
                for a in reversed(operands):
                    ta = type(a)
                    if ta in dataflow:
                        j = index.get(a)
                        if j is None:
                            push((a, r))
                        elif region[j] != r:
                            extern.add(a)
                    elif ta in scopes:
                        push((a, r))
                    # (vars, constants and global vars are leaves)
                if t is Call:
                    callee = node.op
                    tc = type(callee)
                    if tc is Op:
                        continue
                    # The callee computes a function value: it cannot fuse into the call.
                    if tc in dataflow:
                        extern.add(callee)
                        if callee not in index:
                            push((callee, r))
                    elif tc in scopes:
                        push((callee, r))
            elif node not in index:  # a let, if or function: its parts are regions
                if t is Let:
                    parts: tuple[Expr, ...] = (node.body, node.value)
                elif t is If:
                    parts = (node.false_branch, node.true_branch, node.cond)
                elif _skipped(node):
                    continue  # fused already (or not to be touched): left as it is
                else:
                    parts = (node.body,)
                push((node, -r))
                for part in parts:
                    # Each part is a region of its own: its value leaves it.
                    regions += 1
                    tp = type(part)
                    if tp in dataflow:
                        extern.add(part)
                        push((part, regions))
                    elif tp in scopes:
                        push((part, regions))

        n = len(pattern)
        flags = [False] * n
        for node in extern:
            flags[index[node]] = True
        self.index = index
        self.pattern = pattern
        self.outs = outs
        self.out_pats = out_pats
        self.extern = flags
        self.op_calls = op_calls


# -- 2./3. post-dominator tree and partition ----------------------------------------


class _Partitioner:
    """TVM's GraphPartitioner over a :class:`_Graph`: returns each node's group root.

    Groups are a union-find forest over node indices; a group's root is its
    output node (the last one in post-order), and ``gpat[r]``/``size[r]`` are
    the pattern and node count of the group rooted at ``r``. As in TVM,
    ``gpat[i]`` of a non-root ``i`` keeps the pattern its group had when it
    was merged away, and the sweeps look at the node's own entry.
    """

    def __init__(self, graph: _Graph, max_depth: int,
                 counter: RewriteCounter | None = None) -> None:
        self.graph = graph
        self.max_depth = max_depth
        self.counter = counter  # asked before each fusion (None: no debug counter)
        self._names: list[str] | None = None  # per node, for the counter's sites
        n = len(graph.pattern)
        self.uf = list(range(n))
        self.size = [1] * n
        self.gpat = list(graph.pattern)
        self.anchor = [p == _OUT_EWISE for p in graph.pattern]

    def run(self) -> list[int]:
        """Fuse; the group root of every node."""
        parent, dom_pat = self._post_dominators()
        n = len(self.uf)
        gpat = self.gpat
        uf = self.uf
        find = self._find
        fuse = self._try_fuse
        # The nodes that may fuse: not OPAQUE (a pattern no merge gives or takes away)
        # and with a post-dominator; the sweeps visit them in post-order.
        candidates = [i for i in range(n) if parent[i] != n and gpat[i] != _OPAQUE]
        for phase in (0, 1, 2):
            for i in candidates:
                own = gpat[i]
                p = parent[i]
                target = p if uf[p] == p else find(p)
                if phase == 2:
                    # Fields of a tuple that fused into an injective consumer join it
                    # (a tuple that heads its own group keeps its fields apart).
                    if own <= _INJECTIVE and gpat[p] == _TUPLE and gpat[target] <= _INJECTIVE:
                        fuse(i, p, target, _INJECTIVE, _INJECTIVE)
                    continue
                if gpat[p] == _TUPLE:
                    continue  # tuples take their fields in phase 2 only
                if (i if uf[i] == i else find(i)) == target:
                    continue  # fused already
                if own == _OUT_EWISE:
                    # conv2d-like: only elementwise edges and ops up to broadcast after it
                    if phase == 0 and dom_pat[i] == _ELEMWISE:
                        fuse(i, p, target, _BROADCAST, _BROADCAST)
                elif own <= _BROADCAST:
                    d = dom_pat[i]
                    if d <= _INJECTIVE or d == _COMM_REDUCE:
                        fuse(i, p, target, _INJECTIVE, _OUT_EWISE)
                elif own == _INJECTIVE or own == _TUPLE:
                    # after phase 0, so conv2d groups are complete first
                    if phase == 1:
                        fuse(i, p, target, _INJECTIVE, _INJECTIVE)
                # COMM_REDUCE: a reduction ends its group
        roots = [r if uf[r] == r else find(i) for i, r in enumerate(uf)]
        # Each group's root is its output node, the last of its nodes in post-order
        # (the rewrite builds the group there); anything else is a bug.
        if any(map(int.__lt__, roots, range(n))):
            bad = next(i for i in range(n) if roots[i] < i)
            raise AssertionError(
                f"FuseOps: internal error: node {bad} fused into a group that ends at "
                f"node {roots[bad]}, before it"
            )
        return roots

    def _try_fuse(self, src: int, sink: int, target: int, inner_max: int, sink_max: int) -> None:
        """Fuse ``src`` into its post-dominator ``sink`` (in group ``target``) if allowed:
        the group stays within max_depth, and every path between them passes groups
        of pattern at most ``inner_max`` and ends in a group of at most ``sink_max``."""
        if len(self.graph.outs[src]) == 1:
            # Fast path: src feeds the sink directly, only src's own group moves.
            rs = self._find(src)
            size = self.size
            if (
                rs != target
                and size[target] + size[rs] <= self.max_depth
                and self.gpat[target] <= sink_max
                and (self.counter is None or self._allowed(src, sink))
            ):
                self._merge(rs, target)
            return
        if (
            self._fits(src, sink, target)
            and self._check_path(src, sink, target, inner_max, sink_max)
            and (self.counter is None or self._allowed(src, sink))
        ):
            self._commit(src, sink, target)

    def _allowed(self, src: int, sink: int) -> bool:
        """Whether the debug counter (set) lets ``src`` fuse into the group of ``sink``."""
        assert self.counter is not None
        names = self._names
        if names is None:
            # index lists the dataflow nodes in the order of their numbers
            names = self._names = [
                _describe(node) for node, i in self.graph.index.items() if i is not None
            ]
        return self.counter(f"fuse {names[src]} into the group of {names[sink]}")

    def _post_dominators(self) -> tuple[list[int], list[int]]:
        """Each node's immediate post-dominator (``n``: none) and the pattern on the way.

        Nodes are added to the tree in reverse post-order, so a node's consumers
        are in the tree before it. Node ``n`` is a virtual root above every
        region output; ``jump``/``jmax`` are Myers' skew-binary jump pointers
        (and the strongest pattern on each jump) for O(log n) ancestor walks.
        """
        g = self.graph
        n = len(g.pattern)
        outs = g.outs
        out_pats = g.out_pats
        extern = g.extern
        root = n
        parent = [root] * (n + 1)
        # A node without a post-dominator hangs from the root with the defaults below.
        depth = [1] * (n + 1)
        depth[root] = 0
        tpat = [_OPAQUE] * (n + 1)
        jump = [root] * (n + 1)
        jmax = [_OPAQUE] * (n + 1)

        def lca(u: int, w: int, pat: int) -> tuple[int, int]:
            # Climb the deeper node first, then both, keeping the strongest
            # pattern of the tree nodes left behind (TVM's LeastCommonAncestor).
            du = depth[u]
            dw = depth[w]
            while du > dw:
                j = jump[u]
                if depth[j] >= dw:
                    if jmax[u] > pat:
                        pat = jmax[u]
                    u = j
                else:
                    if tpat[u] > pat:
                        pat = tpat[u]
                    u = parent[u]
                du = depth[u]
            while dw > du:
                j = jump[w]
                if depth[j] >= du:
                    if jmax[w] > pat:
                        pat = jmax[w]
                    w = j
                else:
                    if tpat[w] > pat:
                        pat = tpat[w]
                    w = parent[w]
                dw = depth[w]
            while u != w:
                ju = jump[u]
                jw = jump[w]
                if ju != jw:
                    pat = max(pat, jmax[u], jmax[w])
                    u = ju
                    w = jw
                else:
                    pat = max(pat, tpat[u], tpat[w])
                    u = parent[u]
                    w = parent[w]
            return u, pat

        for i in range(n - 1, -1, -1):
            consumers = outs[i]
            if extern[i] or not consumers:
                continue  # no post-dominator: parent, depth and patterns as set above
            pats = out_pats[i]
            p = consumers[0]
            pat = pats[0]
            for k in range(1, len(consumers)):
                c = consumers[k]
                if c != p:
                    p, pat = lca(p, c, pat)
                    if p == root:
                        break
                if pats[k] > pat:
                    pat = pats[k]
            parent[i] = p
            depth[i] = depth[p] + 1
            tpat[i] = pat
            if p == root:
                jump[i] = root
                jmax[i] = pat
            else:
                j = jump[p]
                if depth[p] - depth[j] == depth[j] - depth[jump[j]]:
                    jump[i] = jump[j]
                    jmax[i] = max(pat, jmax[p], jmax[j])
                else:
                    jump[i] = p
                    jmax[i] = pat
        return parent, tpat

    def _find(self, i: int) -> int:
        uf = self.uf
        r = uf[i]
        if uf[r] == r:
            return r
        while uf[r] != r:
            r = uf[r]
        while uf[i] != r:  # path compression
            nxt = uf[i]
            uf[i] = r
            i = nxt
        return r

    def _merge(self, child: int, target: int) -> None:
        """Merge group ``child`` into group ``target`` (both roots)."""
        self.size[target] += self.size[child]
        self.uf[child] = target
        if self.anchor[child]:
            # the target group now holds a conv2d-like anchor: it takes its pattern
            self.anchor[target] = True
            gpat = self.gpat
            if gpat[child] > gpat[target]:
                gpat[target] = gpat[child]

    def _fits(self, src: int, sink: int, target: int) -> bool:
        """Whether fusing ``src`` and every node up to ``sink`` keeps the group within max_depth."""
        find = self._find
        size = self.size
        outs = self.graph.outs
        limit = self.max_depth
        total = size[target]
        counted = {target}
        visited = set()
        stack = [src]
        while stack:
            x = stack.pop()
            if x == sink or x in visited:
                continue
            visited.add(x)
            rx = find(x)
            if rx in counted:
                if rx == target:
                    continue  # inside the target group: every path from here stays in it
            else:
                counted.add(rx)
                total += size[rx]
                if total > limit:
                    return False
            stack.extend(outs[x])
        return True

    def _check_path(self, src: int, sink: int, target: int, inner_max: int, sink_max: int) -> bool:
        """Whether every path from ``src`` to ``sink`` passes nodes whose group pattern is at
        most ``inner_max`` and ends in a ``sink`` whose group pattern is at most ``sink_max``."""
        find = self._find
        gpat = self.gpat
        outs = self.graph.outs
        visited = set()
        stack = list(outs[src])
        while stack:
            x = stack.pop()
            if x in visited:
                continue
            visited.add(x)
            rx = find(x)
            if x == sink:
                if gpat[rx] > sink_max:
                    return False
                continue
            if gpat[rx] > inner_max:
                return False
            if rx != target:
                # (a node of the target group passes, and so would the rest of the
                # way: all of it is in the target group and sink_max >= inner_max)
                stack.extend(outs[x])
        return True

    def _commit(self, src: int, sink: int, target: int) -> None:
        """Merge ``src`` and every node on a path from it to ``sink`` into group ``target``.

        Every node on the way is expanded, also one whose group has just been
        merged (its group's output may lead on to nodes still outside). All of
        them end up in the target group, which :meth:`_fits` bounded.
        """
        find = self._find
        merge = self._merge
        outs = self.graph.outs
        visited = set()
        stack = [src]
        while stack:
            x = stack.pop()
            if x == sink or x in visited:
                continue
            visited.add(x)
            rx = find(x)
            if rx != target:
                merge(rx, target)
            stack.extend(outs[x])


def _describe(node: Expr) -> str:
    """A dataflow node in a few words: its op's name, "call", "tuple" or "projection"."""
    if type(node) is Call:
        op = node.op
        return op.name if type(op) is Op else "call"
    return "tuple" if type(node) is Tuple else "projection"


# -- 4. the rewrite ---------------------------------------------------------------------

# Fresh params are built unchecked too; the names of the first ones, shared by every group.
_PARAM_NAMES = tuple(f"p{k}" for k in range(64))
_unchecked_var = Var._unchecked


def _rewrite(func: Function, graph: _Graph, roots: list[int]) -> Function:
    """``func`` rebuilt with each wrapped group as a call of a primitive function.

    One loop over ``graph.index`` (children before parents) rebuilds each node
    from the rebuilt forms of its children, kept in ``new`` for the nodes that
    changed, the same functional update as :class:`~irpass.ir.ExprMutator`
    (an unchanged node stays the same object). A group is built when its
    output node comes up; its other nodes are used only inside the group, so
    they get no entry of their own.
    """
    index = graph.index
    wrapped = [False] * len(roots)
    for i in graph.op_calls:
        wrapped[roots[i]] = True
    new: dict[Expr, Expr] = {}
    get = new.get
    for node, i in index.items():
        if i is not None:  # a dataflow node
            group = roots[i]
            if wrapped[group]:
                if group == i:
                    new[node] = _build(node, group, index, roots, get)
                continue
            t = type(node)
            if t is Call:
                op = node.op
                new_op = get(op, op)
                args = node.args
                new_args = tuple([get(a, a) for a in args])
                if new_op is not op or new_args != args:
                    new[node] = Call(new_op, new_args, node.attrs)
            elif t is Tuple:
                fields = node.fields
                new_fields = tuple([get(f, f) for f in fields])
                if new_fields != fields:
                    new[node] = Tuple(new_fields)
            else:
                value = node.tuple_value
                new_value = get(value, value)
                if new_value is not value:
                    new[node] = TupleGetItem(new_value, node.index)
            continue
        t = type(node)
        if t is Let:
            value = node.value
            body = node.body
            new_value = get(value, value)
            new_body = get(body, body)
            if new_value is not value or new_body is not body:
                new[node] = Let(node.var, new_value, new_body)
        elif t is If:
            cond = node.cond
            then = node.true_branch
            other = node.false_branch
            new_cond = get(cond, cond)
            new_then = get(then, then)
            new_other = get(other, other)
            if new_cond is not cond or new_then is not then or new_other is not other:
                new[node] = If(new_cond, new_then, new_other)
        else:  # a nested Function (one left alone is not in the order)
            body = node.body
            new_body = get(body, body)
            if new_body is not body:
                new[node] = Function(node.params, new_body, node.ret_type, node.attrs)
    body = func.body
    new_body = get(body, body)
    if new_body is body:
        return func
    return Function(func.params, new_body, func.ret_type, func.attrs)


def _build(
    output: Expr,
    group: int,
    index: dict[Expr, int | None],
    roots: list[int],
    outer: Callable[[Expr, Expr], Expr],
) -> Call:
    """``Call(fn, args)`` for the group whose output node is ``output``.

    Walks the group from its output, operands left to right, with an
    explicit stack; an operand from outside becomes a param when it is
    first reached, so params come in reading order as in TVM. ``outer(a, a)``
    is the rebuilt form of an operand from outside the group.
    """
    params: list[Var] = []
    args: list[Expr] = []
    by_arg: dict[Expr, Var] = {}  # outer expression -> its param
    inner: dict[Expr, Expr] = {}  # member node -> its copy in the function body
    names = _PARAM_NAMES
    # The member being rebuilt, its operands, the next one and the new ones so far;
    # `stack` holds the same for the members waiting for an operand member.
    stack: list[tuple[Expr, tuple[Expr, ...], int, list[Expr]]] = []
    node = output
    operands = _operands(output)
    start = 0
    new_operands: list[Expr] = []
    while True:
        member = None
        for k in range(start, len(operands)):
            a = operands[k]
            j = index.get(a)
            if j is not None and roots[j] == group:
                b = inner.get(a)
                if b is None:  # a member not built yet: build it first
                    member = a
                    break
                new_operands.append(b)
            elif type(a) is Constant and a.data.ndim == 0:
                new_operands.append(a)  # scalars are inlined
            else:
                arg = outer(a, a)
                param = by_arg.get(arg)
                if param is None:
                    # A fresh Var, as Var(name, type) would build it: %p<count>, of the
                    # operand's type (the name is a string, the type a checked type).
                    ty = a._checked_type
                    if ty is None:
                        ty = a.checked_type  # untyped: raises the usual error
                    count = len(params)
                    param = _unchecked_var(names[count] if count < len(names) else f"p{count}", ty)
                    params.append(param)
                    args.append(arg)
                    by_arg[arg] = param
                new_operands.append(param)
        if member is not None:
            stack.append((node, operands, k, new_operands))
            node = member
            operands = _operands(member)
            start = 0
            new_operands = []
            continue
        # A copy of the member on its new operands (an op call keeps its op, arity and
        # valid attrs: no check needed).
        if type(node) is Call and type(node.op) is Op:
            copy = _unchecked_call(node.op, tuple(new_operands), node.attrs)
        else:
            copy = _rebuild(node, new_operands)
        if not stack:
            break
        inner[node] = copy
        node, operands, start, new_operands = stack.pop()
        new_operands.append(copy)
        start += 1
    # Fresh distinct params, a built body, its type and the Primitive attrs: all
    # valid by construction, so the unchecked constructors build them.
    ret_type = output._checked_type
    if ret_type is None:
        ret_type = output.checked_type  # untyped: raises the usual error
    fn = _unchecked_function(tuple(params), copy, ret_type, _PRIMITIVE)
    return _unchecked_call(fn, tuple(args), EMPTY_ATTRS)


def _operands(node: Expr) -> tuple[Expr, ...]:
    """The dataflow operands of a call, tuple or projection."""
    t = type(node)
    if t is Call:
        return node.args
    if t is Tuple:
        return node.fields
    return (node.tuple_value,)


def _rebuild(node: Expr, operands: list[Expr]) -> Expr:
    """A copy of ``node`` on new ``operands``."""
    t = type(node)
    if t is Call:
        op = node.op
        if type(op) is Op:  # same op, same arity, the call's own attrs: no check needed
            return _unchecked_call(op, tuple(operands), node.attrs)
        return Call(op, operands, node.attrs or None)
    if t is Tuple:
        return Tuple(operands)
    return TupleGetItem(operands[0], node.index)
