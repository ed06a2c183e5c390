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
4. a memoized rewrite builds each group's function when it reaches the
   group's output node.

The whole pass is O(n log n) for n nodes (O(n) for chains), with a constant
bounded by ``max_depth``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from irpass.ir import (
    Attrs,
    Call,
    Constant,
    ExprMutator,
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

if TYPE_CHECKING:
    from irpass.ir import Expr, Type
    from irpass.transform import PassContext

__all__ = ["FuseOps", "MAX_DEPTH", "CONFIG_OPTIONS", "fuse_function"]

#: The config key bounding the number of nodes in one fused group.
MAX_DEPTH = "std.FuseOps.max_depth"

CONFIG_OPTIONS: list[ConfigOption] = [
    ConfigOption(
        MAX_DEPTH,
        int,
        256,
        "FuseOps: the most nodes (op calls, tuples, projections) in one fused group",
    )
]

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
        changed = False
        new_funcs = {}
        for gv, func in mod.items():
            if not _skipped(func):
                new = fuse_function(func, fuse=level > 0, max_depth=max_depth)
                changed = changed or new is not func
                func = new
            new_funcs[gv] = func
        return IRModule(new_funcs) if changed else mod


def fuse_function(func: Function, *, fuse: bool = True, max_depth: int = 256) -> Function:
    """``func`` with its op calls grouped into primitive functions.

    ``func`` must be typed (``checked_type`` on every node, as after
    ``InferType``). ``fuse=False`` wraps each op call alone. Returns ``func``
    itself when it has no op call to wrap.
    """
    # The IR is acyclic: the collector would only rescan the many live nodes.
    with gc_paused():
        graph = _Graph(func)
        if not graph.op_calls:
            return func
        n = len(graph.nodes)
        roots = _Partitioner(graph, max_depth).run() if fuse else list(range(n))
        wrapped = {roots[i] for i in graph.op_calls}
        return _Fuser(graph.index, roots, wrapped).visit(func)


def _skipped(func: Function) -> bool:
    attrs = func.attrs
    return bool(attrs) and any(attrs.get(key) for key in _SKIP_ATTRS)


# -- 1. the dataflow graph ------------------------------------------------------------


class _Graph:
    """The dataflow nodes of one global function, in post-order (producers first).

    ``outs[i]``/``out_pats[i]``: the consumers of node ``i`` and the pattern of
    each use; ``extern[i]``: node ``i`` is used where it cannot fuse (across a
    boundary, or in two regions), so it is the output of its group.
    """

    __slots__ = ("nodes", "index", "pattern", "outs", "out_pats", "extern", "op_calls")

    def __init__(self, func: Function) -> None:
        nodes: list[Expr] = []
        index: dict[Expr, int] = {}
        pattern: list[int] = []
        outs: list[list[int]] = []
        out_pats: list[list[int]] = []
        op_calls: list[int] = []
        extern: set[Expr] = set()
        # The region (let value/body, if part, function body) each dataflow node is
        # evaluated in, which also marks it as seen; a use from another region
        # makes the node extern. `seen` holds the other nodes walked into.
        region: dict[Expr, int] = {}
        seen: set[Expr] = set()
        regions = 1
        kinds: dict[Op, int] = {}  # pattern per op, looked up once
        # Work items: (expr, region, ready); `ready` items build a node whose
        # operands are all indexed.
        stack: list[tuple[Expr, int, bool]] = []
        push = stack.append
        dataflow = _DATAFLOW

        def use(child: Expr, r: int) -> None:
            """Record a use of ``child`` from region ``r`` and schedule its visit."""
            t = type(child)
            if t in dataflow:
                rc = region.get(child)
                if rc is None:
                    push((child, r, False))
                elif rc != r:
                    extern.add(child)
            elif (t is Let or t is If or t is Function) and child not in seen:
                push((child, r, False))

        def boundary(child: Expr) -> None:
            """``child`` starts a region of its own: its value leaves it."""
            nonlocal regions
            if type(child) in dataflow:
                extern.add(child)
            use(child, regions)
            regions += 1

        boundary(func.body)
        pop = stack.pop
        while stack:
            node, r, ready = pop()
            t = type(node)
            if ready:
                i = len(nodes)
                index[node] = i
                nodes.append(node)
                outs.append([])
                out_pats.append([])
                if t is Call:
                    op = node.op
                    if type(op) is Op:
                        op_calls.append(i)
                        kind = kinds.get(op)
                        if kind is None:
                            kind = kinds[op] = _OPAQUE if op.stateful else int(op.pattern)
                    else:
                        kind = _OPAQUE  # a call of a global function, closure or var
                    pattern.append(kind)
                    shape = None
                    if kind == _BROADCAST:
                        rtype = node.checked_type
                        if type(rtype) is TensorType:
                            shape = rtype.shape
                    for a in node.args:
                        j = index.get(a)
                        if j is not None:
                            edge = kind
                            if shape is not None:
                                # A broadcast op's operand that already has the result's
                                # shape is used elementwise (lets conv2d fuse with bias_add).
                                at = a.checked_type
                                if type(at) is TensorType and at.shape == shape:
                                    edge = _ELEMWISE
                            outs[j].append(i)
                            out_pats[j].append(edge)
                elif t is Tuple:
                    pattern.append(_TUPLE)
                    for f in node.fields:
                        if type(f) in dataflow:
                            if type(f.checked_type) is TensorType:
                                j = index[f]
                                outs[j].append(i)
                                out_pats[j].append(_INJECTIVE)
                            else:
                                extern.add(f)  # a nested tuple or closure: never fused through
                else:  # TupleGetItem
                    value = node.tuple_value
                    ty = value.checked_type
                    if type(ty) is TupleType and all(type(f) is TensorType for f in ty.fields):
                        pattern.append(_INJECTIVE)
                        if type(value) in dataflow:
                            j = index[value]
                            outs[j].append(i)
                            out_pats[j].append(_INJECTIVE)
                    else:
                        pattern.append(_OPAQUE)
                        if type(value) in dataflow:
                            extern.add(value)
                continue
            if t is Call:
                rn = region.get(node)
                if rn is not None:  # visited already (pushed twice)
                    if rn != r:
                        extern.add(node)
                    continue
                region[node] = r
                push((node, r, True))
                for a in reversed(node.args):
                    ta = type(a)
                    if ta is Var or ta is Constant:
                        continue  # the common leaves, skipped early
                    use(a, r)
                callee = node.op
                if type(callee) is not Op:
                    # The callee computes a function value: it cannot fuse into the call.
                    if type(callee) in dataflow:
                        extern.add(callee)
                    use(callee, r)
            elif t is Tuple or t is TupleGetItem:
                rn = region.get(node)
                if rn is not None:
                    if rn != r:
                        extern.add(node)
                    continue
                region[node] = r
                push((node, r, True))
                if t is Tuple:
                    for f in reversed(node.fields):
                        use(f, r)
                else:
                    use(node.tuple_value, r)
            elif node not in seen:
                seen.add(node)
                if t is Let:
                    boundary(node.body)
                    boundary(node.value)
                elif t is If:
                    boundary(node.false_branch)
                    boundary(node.true_branch)
                    boundary(node.cond)
                elif not _skipped(node):  # Function: its body is a region of its own
                    boundary(node.body)

        self.nodes = nodes
        self.index = index
        self.pattern = pattern
        self.outs = outs
        self.out_pats = out_pats
        self.extern = [n in extern for n in nodes]
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

    def __init__(self, graph: _Graph, max_depth: int) -> None:
        self.graph = graph
        self.max_depth = max_depth
        n = len(graph.nodes)
        self.uf = list(range(n))
        self.size = [1] * n
        self.gpat = list(graph.pattern)
        self.anchor = [p == _OUT_EWISE for p in graph.pattern]

    def run(self) -> list[int]:
        """Fuse; the group root of every node."""
        parent, dom_pat = self._post_dominators()
        n = len(self.uf)
        gpat = self.gpat
        find = self._find
        fuse = self._try_fuse
        for phase in (0, 1, 2):
            for i in range(n):
                own = gpat[i]
                if own == _OPAQUE:
                    continue
                p = parent[i]
                if p == n:  # no post-dominator
                    continue
                target = find(p)
                if phase == 2:
                    # Fields of a tuple that fused into an injective consumer join it
                    # (a tuple that heads its own group keeps its fields apart).
                    if own <= _INJECTIVE and gpat[p] == _TUPLE and gpat[target] <= _INJECTIVE:
                        fuse(i, p, target, _INJECTIVE, _INJECTIVE)
                    continue
                if gpat[p] == _TUPLE or find(i) == target:
                    continue  # tuples take their fields in phase 2 only / fused already
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
        roots = [find(i) for i in range(n)]
        # Each group's root is its output node, the last of its nodes in post-order
        # (the rewrite builds the group there); anything else is a bug.
        bad = next((i for i in range(n) if roots[i] < i), None)
        if bad is not None:
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
            ):
                self._merge(rs, target)
            return
        if self._fits(src, sink, target) and self._check_path(
            src, sink, target, inner_max, sink_max
        ):
            self._commit(src, sink, target)

    def _post_dominators(self) -> tuple[list[int], list[int]]:
        """Each node's immediate post-dominator (``n``: none) and the pattern on the way.

        Nodes are added to the tree in reverse post-order, so a node's consumers
        are in the tree before it. Node ``n`` is a virtual root above every
        region output; ``jump``/``jmax`` are Myers' skew-binary jump pointers
        (and the strongest pattern on each jump) for O(log n) ancestor walks.
        """
        g = self.graph
        n = len(g.nodes)
        outs = g.outs
        out_pats = g.out_pats
        extern = g.extern
        root = n
        parent = [root] * (n + 1)
        depth = [0] * (n + 1)
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
                p = root
                pat = _OPAQUE
            else:
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


# -- 4. the rewrite ---------------------------------------------------------------------


class _GroupParams:
    """The params of one group's function and the arguments its call passes."""

    __slots__ = ("params", "args", "by_arg")

    def __init__(self) -> None:
        self.params: list[Var] = []
        self.args: list[Expr] = []
        self.by_arg: dict[Expr, Var] = {}

    def param_for(self, arg: Expr, ty: Type) -> Var:
        """The param standing for the outer expression ``arg`` (one per distinct arg)."""
        p = self.by_arg.get(arg)
        if p is None:
            p = Var(f"p{len(self.params)}", ty)
            self.params.append(p)
            self.args.append(arg)
            self.by_arg[arg] = p
        return p


class _Fuser(ExprMutator):
    """Rebuilds a function with each fused group as a call of a primitive function.

    The walk is the usual memoized post-order; a group is built when its
    output node is reached. Its other nodes are only used inside the group,
    so the walk leaves them as they are (their memo entry is never read
    outside the group) and :meth:`_build` rebuilds them in the function body.
    """

    def __init__(self, index: dict[Expr, int], roots: list[int], wrapped: set[int]) -> None:
        self.index = index
        self.roots = roots
        self.wrapped = wrapped

    def _group(self, node: Expr) -> int | None:
        """The group of ``node`` when it is the output of a group to wrap; ``-1`` for
        another node of such a group; ``None`` for a node left as it is."""
        i = self.index.get(node)
        if i is None:
            return None
        group = self.roots[i]
        if group not in self.wrapped:
            return None
        return group if group == i else -1

    def _build(self, output: Expr, group: int) -> Expr:
        """``Call(fn, args)`` for the group whose output node is ``output``.

        Walks the group from its output, operands left to right, with an
        explicit stack; an operand from outside becomes a param when it is
        first reached, so params come in reading order as in TVM.
        """
        index = self.index
        roots = self.roots
        memo = self.memo
        params = _GroupParams()
        inner: dict[Expr, Expr] = {}  # group node -> its copy in the function body
        # frames: [node, its operands, next operand, new operands so far]
        stack: list[list] = [[output, _operands(output), 0, []]]
        while stack:
            frame = stack[-1]
            node, operands, k, new_operands = frame
            member = None
            while k < len(operands):
                a = operands[k]
                j = index.get(a)
                if j is not None and roots[j] == group:
                    b = inner.get(a)
                    if b is None:
                        member = a  # build this operand first
                        break
                    new_operands.append(b)
                elif type(a) is Constant and a.data.ndim == 0:
                    new_operands.append(a)  # scalars are inlined
                else:
                    outer = memo.get(a) or self.visit(a)
                    new_operands.append(params.param_for(outer, a.checked_type))
                k += 1
            frame[2] = k
            if member is not None:
                stack.append([member, _operands(member), 0, []])
                continue
            stack.pop()
            inner[node] = _rebuild(node, new_operands)
        # Fresh distinct params, a built body, its type and the Primitive attrs: all
        # valid by construction, so the unchecked constructors build them.
        fn = _unchecked_function(
            tuple(params.params), inner[output], output.checked_type, _PRIMITIVE
        )
        return _unchecked_call(fn, tuple(params.args), EMPTY_ATTRS)

    def visit_call(self, call: Call) -> Expr:
        group = self._group(call)
        if group is None:
            return super().visit_call(call)
        return call if group < 0 else self._build(call, group)

    def visit_tuple(self, tup: Tuple) -> Expr:
        group = self._group(tup)
        if group is None:
            return super().visit_tuple(tup)
        return tup if group < 0 else self._build(tup, group)

    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        group = self._group(item)
        if group is None:
            return super().visit_tuple_getitem(item)
        return item if group < 0 else self._build(item, group)

    def visit_function(self, func: Function) -> Expr:
        if _skipped(func):
            return func  # fused already (or not to be touched): never re-fused
        return super().visit_function(func)


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
