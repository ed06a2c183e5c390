"""The greedy rewrite driver: one bottom-up walk to a fixed point (MLIR's greedy driver).

:func:`rewrite_greedy` applies the same :class:`~.rewrite.DFPatternCallback` rules as
:func:`~.rewrite.rewrite`, in another order and without rounds:

* The program is walked once, children before parents; each node is rebuilt over its
  rewritten inputs (``post``) and the callbacks its op can match are tried on ``post``
  itself, so a pattern always sees inputs that are already in normal form.
* When a callback replaces the node, the rules are tried again on the replacement at
  the same spot, before the parent is visited; the nodes the callback built inside the
  replacement are walked the same way first (children first), as MLIR puts new ops on
  the worklist. So the walk ends at a fixed point: no rule matches anywhere (up to
  matches that only the use counts below unblock, e.g. a node whose other user a
  later rewrite removed, as in MLIR). At most ``max_rounds`` rewrites happen at one
  spot; one more raises :class:`~.rewrite.RewriteLimitError` naming the callbacks.
* Innermost matches go first: a rule whose pattern lies inside another rule's pattern
  fires before the bigger pattern is tried at the node above. :func:`~.rewrite.rewrite`
  (TVM's order: outermost match first, no overlaps, rounds) suits fusions of big
  patterns; this driver suits simplifications to a normal form.
* There is no grouping: a match whose inner nodes have other users is not refused. A
  rule that consumes an inner node asks ``rewrite_context().single_use(node)`` (exact
  here, see :class:`~.context.RewriteContext`).
* Types are kept, not re-inferred: the program is typed once at the start; a node
  rebuilt over rewritten inputs keeps its type (a replacement must have the type of
  what it replaces, checked at each rewrite: :class:`RewriteTypeError`), and each node a
  callback builds is typed from its op's type relation over its inputs' types (or
  keeps a type the callback gave it, ``RewriteContext.typed``). Nodes that cannot be
  typed that way (a new ``let`` or function) are typed with ``infer_type`` on their own.
* Dominator patterns need the whole graph around a match and are refused.

Before the walk, a scan over the program runs every candidate's quick test
(:class:`~.index.RuleIndex`); when no node passes one, the input is returned as it is
without rebuilding anything. The walk and every scan are loops (any depth); the work is
linear in the program plus the nodes the callbacks build.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import IRPassError
from ..expr import Expr, set_checked_type
from ..gcpause import gc_paused
from ..module import IRModule
from ..nodes import Call, Function, If, Let, Tuple, TupleGetItem
from ..op import Op
from ..type_infer import local_type, note_bound_by
from .context import RewriteContext, enter, leave
from .index import Candidate, RuleIndex, index_for
from .matcher import Graph, Matcher, inputs_of
from .rewrite import (
    DEFAULT_MAX_ROUNDS,
    DFPatternCallback,
    RewriteLimitError,
    _callback_name,
    _check_callbacks,
)

__all__ = ["RewriteTypeError", "rewrite_greedy"]

_unchecked_call = Call._unchecked


class RewriteTypeError(IRPassError, TypeError):
    """A callback's replacement does not type-check (``kind == "ill-typed"``) or has
    another type than the node it replaces (``kind == "changed"``).

    ``callback`` is the callback, ``expr`` the node it replaced, ``detail`` what is
    wrong (the type relation's message, or ``"from <old type> to <new type>"``).
    """

    def __init__(self, callback: DFPatternCallback, expr: Expr, kind: str, detail: str) -> None:
        what = ("built an ill-typed replacement" if kind == "ill-typed"
                else "changed the type of the matched expression")
        super().__init__(f"rewrite: {_callback_name(callback)} {what}: {detail}")
        self.callback = callback
        self.expr = expr
        self.kind = kind
        self.detail = detail


def rewrite_greedy(
    callbacks: DFPatternCallback | Sequence[DFPatternCallback] | RuleIndex,
    expr: Expr,
    mod: IRModule | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    options: Mapping[str, Any] | None = None,
) -> Expr:
    """Rewrite ``expr`` with ``callbacks`` in one bottom-up walk to a fixed point.

    See the module docstring for the order and the typing. Earlier callbacks win at a
    node (``callbacks`` may be what :func:`~.rewrite.prepare` made of them, to check
    and index them once for many calls). ``rewrite_once`` callbacks are tried only at
    the input's own nodes, once.
    ``options`` are handed to the callbacks as ``rewrite_context().options``.
    ``expr`` itself is never changed (the types the walk gives to the nodes it builds
    aside). Raises :class:`~.rewrite.RewriteLimitError` when more than ``max_rounds``
    rewrites happen at one node, :class:`RewriteTypeError` for a replacement of the
    wrong type, ``TypeError`` for a callback that returns something that is not an
    expression or has a dominator pattern.
    """
    from ..type_infer import infer_type

    cbs = _check_callbacks(callbacks)
    if not isinstance(expr, Expr):
        raise TypeError(f"rewrite_greedy: expr must be an Expr, got {type(expr).__name__}")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise ValueError(f"rewrite_greedy: max_rounds must be an int >= 1, got {max_rounds!r}")
    index = callbacks if isinstance(callbacks, RuleIndex) else index_for(cbs)
    if index.with_dominators:
        raise TypeError(f"rewrite_greedy: {_callback_name(index.with_dominators[0])} has a "
                        f"dominator pattern, which needs the whole graph: use rewrite()")
    if expr._checked_type is None and type(expr) is not Op:
        try:
            expr = infer_type(expr, mod)
        except (IRPassError, ValueError, TypeError):
            if any(cb.require_type for cb in cbs):
                raise
            # an untyped program: replacements are not typed or checked
    if not index.may_fire(expr):
        return expr
    # The walk's tables die inside the pause (see irpass.ir.gcpause).
    with gc_paused():
        walk = _Walk(index, mod, max_rounds, options)
        token = enter(walk.context)
        try:
            out = walk.run(expr)
        finally:
            leave(token)
        del walk
    return out


class _Walk:
    """One run of the greedy driver (its tables live as long as the run).

    ``refs`` counts, for each node of the current program, the references to it: from
    the input's nodes not yet visited (their rebuilt forms will hold them), from the
    nodes the walk built, and one for the root from its holder. A rebuilt node takes
    over its original's count; a replaced node hands the references of its spot to its
    replacement and, when none is left, dies: its own references are dropped (and so
    on down). ``dead`` holds the nodes that died, in case a callback brings one back.
    """

    def __init__(self, index: RuleIndex, mod: IRModule | None, max_rounds: int,
                 options: Mapping[str, Any] | None) -> None:
        self.index = index
        self.mod = mod
        self.max_rounds = max_rounds
        self.refs: dict[Expr, int] = {}
        self.dead: set[Expr] = set()
        self.matcher = Matcher(None)
        self.context = RewriteContext(self.uses, mod, options)

    def uses(self, expr: Expr) -> int:
        return self.refs.get(expr, 0)

    # -- the walk -----------------------------------------------------------------------
    def run(self, root: Expr) -> Expr:
        graph = Graph(root)
        refs = self.refs = graph.uses
        refs[root] = 1  # held by whatever holds the program
        index = self.index
        for_op = index.for_op
        gate = index.gate
        generic = index.generic_only
        settle = self.settle
        rebuilt = self.rebuilt
        memo: dict[Expr, Expr] = {}
        get = memo.get
        for node in graph.order:
            if type(node) is Call:
                op = node.op
                if type(op) is Op:
                    args = node.args
                    if memo:
                        new_args = tuple([get(a, a) for a in args])
                        post = node if new_args == args else \
                            self.rename(node, _unchecked_call(op, new_args, node.attrs))
                    else:
                        post = node
                    name = op.name
                    test = gate(name)
                    cands = for_op(name) if test is None or test(post) else None
                else:
                    post = rebuilt(node, get)
                    cands = generic
            else:
                post = rebuilt(node, get) if memo else node
                cands = generic
            if cands:
                post = settle(post, node, cands, refs.get(post, 0), True)
            if post is not node:
                memo[node] = post
        return get(root, root)

    def rebuilt(self, node: Expr, get: Any) -> Expr:
        """``node`` over the rewritten forms of its inputs (``get(child, child)``)."""
        t = type(node)
        if t is Call:
            op, args = node.op, node.args
            new_args = tuple([get(a, a) for a in args])
            if type(op) is Op:
                if new_args == args:
                    return node
                new: Expr = _unchecked_call(op, new_args, node.attrs)
            else:
                new_op = get(op, op)
                if new_op is op and new_args == args:
                    return node
                new = Call(new_op, new_args, node.attrs)
        elif t is Tuple:
            fields = node.fields
            new_fields = tuple([get(f, f) for f in fields])
            if new_fields == fields:
                return node
            new = Tuple(new_fields)
        elif t is TupleGetItem:
            value = get(node.tuple_value, node.tuple_value)
            if value is node.tuple_value:
                return node
            new = TupleGetItem(value, node.index)
        elif t is Let:
            parts = (node.var, node.value, node.body)
            new_parts = tuple([get(x, x) for x in parts])
            if new_parts == parts:
                return node
            new = Let(*new_parts)
        elif t is If:
            parts = (node.cond, node.true_branch, node.false_branch)
            new_parts = tuple([get(x, x) for x in parts])
            if new_parts == parts:
                return node
            new = If(*new_parts)
        elif t is Function:
            params = tuple([get(p, p) for p in node.params])
            body = get(node.body, node.body)
            if params == node.params:
                if body is node.body:
                    return node
                params = node.params  # it binds the types kept below (see carry_type)
            new = Function(params, body, node.ret_type, node.attrs)
        else:
            return node
        return self.rename(node, new)

    def rename(self, old: Expr, new: Expr) -> Expr:
        """``new``, ``old`` rebuilt over rewritten inputs, takes over its type and its
        references (``old``'s own references are ``new``'s now: nothing is dropped)."""
        set_checked_type(new, old._checked_type)
        note_bound_by(new)
        refs = self.refs
        refs[new] = refs.get(old, 0)
        refs[old] = 0
        self.dead.add(old)
        return new

    def settle(self, post: Expr, pre: Expr, cands: list[Candidate], k: int, first: bool) -> Expr:
        """``post`` with the rules applied at its spot until none fires; ``k`` references
        point at the spot. ``first``: ``pre`` is a node of the input (``rewrite_once``
        callbacks are tried there, on the first try only)."""
        matcher = self.matcher
        fired: list[DFPatternCallback] = []
        while True:
            for cb, test, fast in cands:
                if test is not None and not test(post):
                    continue
                if cb.rewrite_once and (fired or not first):
                    continue
                if fast is not None:
                    found: list = []
                    if not fast(post, found):
                        continue
                    node_map = {p: [e] for p, e in found}
                elif matcher.match(cb.pattern, post):
                    node_map = matcher.memo
                else:
                    continue
                out = cb.callback(pre, post, node_map)
                if out is post:
                    continue
                if not isinstance(out, Expr):
                    raise TypeError(
                        f"rewrite: {_callback_name(cb)}.callback returned {type(out).__name__} "
                        f"{out!r:.80}, not an Expr"
                    )
                break
            else:
                return post
            fired.append(cb)
            if len(fired) > self.max_rounds:
                firing = list(dict.fromkeys(fired))
                names = ", ".join(_callback_name(c) for c in firing)
                raise RewriteLimitError(
                    f"rewrite: no fixed point after {self.max_rounds} rewrites at one node; "
                    f"still firing: {names} (conflicting or ever-growing rewrites?)",
                    firing,
                )
            post = self.replace(cb, post, out, k)
            cands = self.index.candidates(post)
            if not cands:
                return post

    # -- taking a replacement in ----------------------------------------------------------
    def replace(self, cb: DFPatternCallback, post: Expr, out: Expr, k: int) -> Expr:
        """Put ``out`` in the place of ``post`` (``k`` references): type and count the nodes
        the callback built, drop ``post`` if nothing else uses it, and walk the new
        nodes below ``out`` (``out`` itself is the caller's to retry)."""
        refs = self.refs
        fresh = self.fresh(out)
        if fresh:
            self.type_fresh(cb, post, fresh)
            inc = self.inc
            for f in fresh:
                for c in inputs_of(f):
                    inc(c)
        want, got = post._checked_type, out._checked_type
        if want is not None and got is not None and got is not want and got != want:
            raise RewriteTypeError(cb, post, "changed", f"from {want} to {got}")
        if out in self.dead:
            self.revive(out)
        refs[out] = refs.get(out, 0) + k
        left = refs.get(post, 0) - k
        refs[post] = left
        if left <= 0:
            self.kill(post)
        if len(fresh) > 1:
            out = self.settle_fresh(fresh)
        return out

    def fresh(self, out: Expr) -> list[Expr]:
        """The nodes of ``out`` that are not in the program (built by a callback),
        children first; empty when ``out`` is a node of the program."""
        refs = self.refs
        if out in refs or type(out) is Op:
            return []
        order: list[Expr] = []
        seen = {out}
        stack: list[Any] = [out]
        while stack:
            node = stack.pop()
            if node is None:
                order.append(stack.pop())
                continue
            stack.append(node)
            stack.append(None)
            for child in inputs_of(node):
                if child not in refs and child not in seen and type(child) is not Op:
                    seen.add(child)
                    stack.append(child)
        return order

    def settle_fresh(self, fresh: list[Expr]) -> Expr:
        """Walk the nodes a callback built (children first, the replacement's root last)
        as the input's nodes are walked; return the root rebuilt over their forms."""
        memo: dict[Expr, Expr] = {}
        get = memo.get
        candidates = self.index.candidates
        for node in fresh[:-1]:
            post = self.rebuilt(node, get) if memo else node
            cands = candidates(post)
            if cands:
                post = self.settle(post, post, cands, self.refs.get(post, 0), False)
            if post is not node:
                memo[node] = post
        root = fresh[-1]
        return self.rebuilt(root, get) if memo else root

    def type_fresh(self, cb: DFPatternCallback, post: Expr, fresh: list[Expr]) -> None:
        """Give each node of ``fresh`` (children first) its type from its inputs' types,
        unless it has one; raise :class:`RewriteTypeError` when that fails."""
        from ..type_infer import infer_type

        for node in fresh:
            if node._checked_type is not None:
                continue
            t = type(node)
            try:
                ty = local_type(node)
            except ValueError as exc:
                raise RewriteTypeError(cb, post, "ill-typed", str(exc)) from exc
            if ty is None and (t is Call or t is Tuple or t is TupleGetItem) and any(
                    c._checked_type is None for c in _operands(node)):
                continue  # an untyped program
            if ty is None:
                # A let, an if, a function, a call of a function with symbolic sizes:
                # typed on its own (the nodes below it are typed: a walk of them).
                try:
                    infer_type(node, self.mod)
                except (IRPassError, ValueError, TypeError) as exc:
                    if node._checked_type is None:
                        raise RewriteTypeError(cb, post, "ill-typed", str(exc)) from exc
                continue
            set_checked_type(node, ty)
            note_bound_by(node)

    # -- reference counts -----------------------------------------------------------------
    def inc(self, node: Expr) -> None:
        refs = self.refs
        refs[node] = refs.get(node, 0) + 1
        if node in self.dead:
            self.revive(node)

    def revive(self, node: Expr) -> None:
        """``node`` died and is used again: its references count again (and so on down)."""
        refs, dead = self.refs, self.dead
        dead.discard(node)
        stack = [node]
        while stack:
            for child in inputs_of(stack.pop()):
                refs[child] = refs.get(child, 0) + 1
                if child in dead:
                    dead.discard(child)
                    stack.append(child)

    def kill(self, node: Expr) -> None:
        """``node`` has no user left: drop its references (and so on down)."""
        refs, dead = self.refs, self.dead
        dead.add(node)
        stack = [node]
        while stack:
            for child in inputs_of(stack.pop()):
                left = refs.get(child, 0) - 1
                refs[child] = left
                if left == 0:
                    dead.add(child)
                    stack.append(child)


def _operands(node: Call | Tuple | TupleGetItem) -> tuple[Expr, ...]:
    t = type(node)
    if t is Call:
        return node.args  # type: ignore[union-attr]
    return node.fields if t is Tuple else (node.tuple_value,)  # type: ignore[union-attr]
