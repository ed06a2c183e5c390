"""EliminateCommonSubexpr: merge repeated computations into one shared node.

Semantics follow TVM Relay's ``EliminateCommonSubexpr``: a call of an
:class:`~irpass.ir.Op` is replaced by another call of the same op with equal
attributes and identical arguments, where "identical" means the very same
node *after* merging, so merges cascade up a chain (``exp(x)`` twice makes
``add(exp(x), exp(x))`` and a second ``add(exp(x), exp(x))`` equal too). Of
equal nodes, the one the walk meets first is kept (the walk takes a call's
last argument first). Attributes compare exactly, by value and kind: ``1``,
``1.0`` and ``True`` differ, so do ``0.0`` and ``-0.0``; ``nan`` equals
``nan``. Besides op calls the pass merges

* ``TupleGetItem`` nodes of the same (merged) tuple and index, as TVM does;
* ``Tuple`` nodes with identical (merged) fields (TVM does not; a tuple is
  as pure as the fields it packs);
* small ``Constant`` nodes (at most :data:`MAX_CONSTANT_ELEMENTS` elements)
  of the same dtype, shape and bytes, so ``x * 2.0`` written twice with two
  ``const(2.0)`` nodes merges too (TVM compares scalar constant arguments by
  value for the same reason). Comparing bytes keeps ``-0.0`` and ``0.0``
  apart; bigger constants are left alone (hashing weights buys nothing);
* a ``let`` whose value merges with the value of an enclosing ``let`` that is
  still in scope and that it can only be reached through:
  ``let a = exp(x); ... let b = exp(x); body`` becomes
  ``let a = exp(x); ... body[b := a]`` (the binding of ``b`` is dropped), so
  programs in A-normal form, where every call is let-bound, benefit too. A let
  block that the graph also uses outside ``a``'s body (through a node with
  several uses) keeps its binding: there ``a`` is out of scope.

Never merged: calls of stateful ops (``op.stateful``), calls without
arguments (as in TVM), calls of global functions, closures or vars (not known
to be pure), ``Let``/``If``/``Function`` nodes, and any node for which the
optional callback ``fskip(expr)`` returns true. ``fskip`` is asked about
every call, tuple, projection and small constant that could merge, with the
node of the *input* program (so ``checked_type`` is available); a skipped
node is not replaced and is not used as the replacement of another, but its
arguments are still merged. Functions marked ``Primitive`` or
``SkipOptimization`` are left as they are, nested ones included.

Algorithm: hash-consing in one post-order walk, linear in the program size.
Each node's key is built from its op (or kind), its attributes and the
identities of its already-merged children; a dict from keys to the first
(canonical) node with that key answers "seen before?" in O(1), never by
pairwise comparison. Small constants are keyed by the hash of their value,
checked against the value on a hit, so the table keeps an int per constant
rather than a copy of its bytes. The walk uses an explicit stack, so program
depth is not limited by Python's recursion limit (a million-step chain is
fine).

Scoping: a canonical node must be computed whenever a node merged into it
would be. The dict is therefore scoped like a dominator tree: the body of
each ``If`` branch and of each nested function opens a scope whose entries
are forgotten when it closes (an undo log makes this O(1) per entry). Code in
a scope can merge into canonical nodes of enclosing scopes (computed before
it runs), never into nodes of a sibling branch or closure: ``exp(c)`` in
both branches of an ``if`` stays in both. (A node the input itself shares
between a branch and outer code is visited once, where the walk meets it
first; it stays shared, as it was.) Merging nodes never changes which
variables an expression uses, because merged nodes have identical children.
Merging a let's var into an enclosing let's var does, so it is done only when
the inner let can be reached only through the enclosing let's body: every node
on the way down to it, the inner let included, has a single use. (A node met
inside the body but shared with code outside it is visited once, so its one
rewritten form must hold there too, where the enclosing var is out of scope.)
The use counts come from one more walk over the function, made only when a
let's value first equals that of an open let. So the result is well scoped.

Types: a node rebuilt over merged children computes what the node it stands
for computed, so it takes that node's type (and ``_bound_by``): the InferType
that the next pass of a pipeline requires does not walk it again (see "Types
carried" in :mod:`irpass.ir.type_infer`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from irpass.ir import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from irpass.ir.attrs import EMPTY_ATTRS
from irpass.ir.gcpause import gc_paused
from irpass.ir.type_infer import carry_type
from irpass.transform import ConfigOption, function_pass
from irpass.transform.context import RewriteCounter

if TYPE_CHECKING:
    from irpass.ir import Attrs, IRModule
    from irpass.transform import PassContext

__all__ = ["EliminateCommonSubexpr", "MAX_CONSTANT_ELEMENTS", "CONFIG_OPTIONS"]

CONFIG_OPTIONS: list[ConfigOption] = []

#: Constants with at most this many elements are merged by value (dtype, shape, bytes).
MAX_CONSTANT_ELEMENTS = 64

# The function attributes that make the pass leave a (nested) function alone,
# as FunctionPass does for global ones.
_SKIP_ATTRS = ("Primitive", "SkipOptimization")

# Tags that start the keys of non-call nodes (call keys start with their Op).
_TUPLE = "tuple"
_GETITEM = "getitem"

# Work items on the stack besides expressions: tuples (kind, node).
_ENTER, _EXIT, _BIND, _LET, _IF, _FUNC = range(6)
_ENTER_TASK = (_ENTER, None)
_EXIT_TASK = (_EXIT, None)


class _OpTables(dict):  # type: ignore[type-arg]
    """op -> (args key -> canonical call), made on first use; None for a stateful op.

    A missing op is filled in by ``__missing__`` (in C for a hit), so the hot
    loop asks one subscript for both "may this op merge" and "where".
    """

    __slots__ = ()

    def __missing__(self, op: Op) -> dict[Any, Expr] | None:
        sub: dict[Any, Expr] | None = None if op.stateful else {}
        self[op] = sub
        return sub


@function_pass(opt_level=3, name="EliminateCommonSubexpr", required=["InferType"])
class EliminateCommonSubexpr:
    """Merge calls of the same op with equal attrs and identical arguments (hash-consing).

    ``fskip(expr) -> bool``, optional: a node for which it returns true is
    neither merged nor used as the replacement of another. See the module
    docstring for every rule and what is never merged.
    """

    def __init__(self, fskip: Callable[[Expr], bool] | None = None) -> None:
        if fskip is not None and not callable(fskip):
            raise TypeError(
                f"EliminateCommonSubexpr: fskip must be callable or None, got {fskip!r}"
            )
        self.fskip = fskip

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        """``func`` with its common subexpressions merged; ``func`` itself if there are none."""
        # The walk allocates keys and nodes that all stay alive until it ends: without
        # the pause, the cyclic collector would walk the whole program again and again.
        with gc_paused():
            return _Eliminator(self.fskip, ctx.rewrite_counter()).run(func)


class _Eliminator:
    """One walk over one global function (the state is per function)."""

    def __init__(
        self, fskip: Callable[[Expr], bool] | None, counter: RewriteCounter | None = None
    ) -> None:
        self.fskip = fskip
        # asked before each merge (None: no debug counter on the pass)
        self.counter = counter
        # input node -> output node, for every node visited (vars and globals map to
        # themselves, a let var merged into an enclosing one maps to that var)
        self.memo: dict[Expr, Expr] = {}
        # key -> canonical node. Inside a nested scope (marks not empty) the keys added
        # are logged, so closing the scope removes exactly the entries it added.
        self.table: dict[Any, Expr] = {}
        # op -> (args -> canonical call) for the calls without attrs, the bulk: keyed
        # by the merged args tuple the walk builds anyway (by the merged argument
        # itself for unary calls), so no key is allocated; None for stateful ops
        self.op_tables = _OpTables()
        # (table, key) added inside nested scopes, in order
        self.log: list[Any] = []
        self.marks: list[int] = []
        # constants are merged regardless of scope: they compute nothing. Keyed by
        # the hash of their value (an int, not a copy of the bytes: on a program of
        # small constants the keys would be as big as the program); the few values
        # whose hash another value took go by the value itself.
        self.constants: dict[int, Constant] = {}
        self.colliding_constants: dict[Any, Constant] = {}
        # canonical let value -> the enclosing, still open let (input node) that binds it
        self.let_vars: dict[Expr, Let] = {}
        # which lets enclose which, made when a let's value first meets an open one's
        self.enclosing: _Enclosing | None = None
        self.func: Function | None = None
        self.attr_keys: dict[int, Any] = {}
        self.stack: list[Any] = []

    def run(self, func: Function) -> Function:
        """``func`` with its body merged, or ``func`` itself when nothing changed."""
        self.func = func
        memo = self.memo
        for p in func.params:
            memo[p] = p
        body = self.rewrite(func.body)
        if body is func.body:
            return func
        return Function(func.params, body, func.ret_type, func.attrs)

    def rewrite(self, root: Expr) -> Expr:  # noqa: C901, PLR0912, PLR0915 - the hot loop, kept flat
        """The merged form of ``root``: an iterative post-order walk over all of it.

        Op calls, the bulk of every program, are handled inline: a call met
        for the first time is merged at once if its arguments are all done;
        otherwise it goes back on the stack under a ``None`` marker, with its
        arguments not visited yet above it; when the marker comes up, its
        arguments are done and it is merged. (It cannot have been visited
        meanwhile: that would need a path from an argument back to the call.)
        Every other node kind goes to :meth:`_visit` (lets are pushed inline),
        work items (tuples) to :meth:`_task`. Arguments are pushed in order, so
        the last argument is walked first; when that one is an op call it is
        not pushed at all but walked at once (the loop goes straight down a
        chain), which visits the nodes in the same order.

        Calls of one and two arguments, nearly all of them, take their own
        branches: their arguments are looked up one by one (no ``map``, no
        tuple for a call that is not ready), a unary call is keyed by its one
        merged argument itself, and "unchanged" is two identity tests.
        """
        memo = self.memo
        get = memo.get
        table = self.table
        op_tables = self.op_tables
        log = self.log
        marks = self.marks
        fskip = self.fskip
        counter = self.counter
        visit = self._visit
        task = self._task
        attrs_key = self._attrs_key
        unchecked_call = Call._unchecked
        empty_attrs = EMPTY_ATTRS
        stack = self.stack
        push = stack.append
        pop = stack.pop
        push(root)
        while stack:
            node = pop()
            if node is None:
                node = pop()  # under the marker: a call whose arguments are done
            elif type(node) is not Call or type(node.op) is not Op:
                t = type(node)
                if t is tuple:
                    task(node)
                elif t is Let:
                    # (as _visit does, one method call less per let of a long chain)
                    if node not in memo:
                        push((_LET, node))
                        push(node.body)
                        push((_BIND, node))
                        push(node.value)
                else:
                    visit(node)
                continue
            elif node in memo:
                continue
            # Merge the op call ``node``, or put it back under a marker and go straight
            # down into its last argument not done if that is an op call too (no push
            # and pop of that argument).
            while True:
                op = node.op
                args = node.args
                nargs = len(args)
                if nargs == 1:
                    (a,) = args
                    na = get(a)
                    if na is None:
                        push(node)
                        push(None)
                        if type(a) is Call and type(a.op) is Op:
                            node = a
                            continue
                        push(a)
                        break
                    sub = op_tables[op]
                    attrs = node.attrs
                    # Rebuilt calls keep the op, its arity and the call's own (valid)
                    # attrs: the unchecked constructor builds them without checking again.
                    # Merged args are the same computations as the old ones, so a rebuilt
                    # call takes the type and ``_bound_by`` of the call it stands for: the
                    # next InferType does not walk it (irpass.ir.type_infer.carry_type).
                    if sub is None or (fskip is not None and fskip(node)):
                        memo[node] = node if na is a else unchecked_call(
                            op, (na,), attrs, node._checked_type, node._bound_by)
                        break
                    if attrs is empty_attrs:
                        key = na  # the one merged argument is the key: no tuple to build
                    else:
                        sub = table
                        key = (op, (na,), attrs_key(attrs))
                    canon = sub.get(key)
                    if canon is None:
                        if na is a:
                            canon = node
                        else:
                            canon = unchecked_call(
                                op, (na,), attrs, node._checked_type, node._bound_by)
                        sub[key] = canon
                        if marks:
                            log.append((sub, key))
                    elif counter is not None and not counter(f"merge {op.name}"):
                        # not merged: the node stays (the first one stays canonical)
                        canon = node if na is a else unchecked_call(
                            op, (na,), attrs, node._checked_type, node._bound_by)
                    memo[node] = canon
                    break
                if nargs == 2:
                    a, b = args
                    na = get(a)
                    nb = get(b)
                    if na is None or nb is None:
                        # arguments to visit first; a call whose arguments are all done
                        # (the second of two users of a node) is merged at once
                        push(node)
                        push(None)
                        if nb is None:
                            if na is None and a is not b:
                                push(a)
                            a = b
                        if type(a) is Call and type(a.op) is Op:
                            node = a
                            continue
                        push(a)
                        break
                    same = na is a and nb is b
                    # an unchanged call's own args tuple serves as its key: no tuple
                    # made and kept per call
                    new_args = args if same else (na, nb)
                else:
                    new_args = tuple(map(get, args))
                    if None in new_args:
                        push(node)
                        push(None)
                        for a in args:
                            if a not in memo:
                                push(a)
                        break
                    if not nargs:  # calls without arguments are never merged (as in TVM)
                        memo[node] = node
                        break
                    same = new_args == args
                    if same:
                        new_args = args  # keep the input's tuple, let the new one go
                sub = op_tables[op]
                attrs = node.attrs
                if sub is None or (fskip is not None and fskip(node)):
                    memo[node] = node if same else unchecked_call(
                        op, new_args, attrs, node._checked_type, node._bound_by)
                    break
                if attrs is empty_attrs:
                    key = new_args  # one table per op keyed by the args tuple itself
                else:
                    sub = table
                    key = (op, new_args, attrs_key(attrs))
                canon = sub.get(key)
                if canon is None:
                    if same:
                        canon = node
                    else:
                        canon = unchecked_call(
                            op, new_args, attrs, node._checked_type, node._bound_by)
                    sub[key] = canon
                    if marks:
                        log.append((sub, key))
                elif counter is not None and not counter(f"merge {op.name}"):
                    canon = node if same else unchecked_call(
                        op, new_args, attrs, node._checked_type, node._bound_by)
                memo[node] = canon
                break
        return memo[root]

    def _merge(self, node: Expr, key: Any, build: Callable[[], Expr], site: str) -> None:
        """Map ``node`` to the canonical node of ``key``; ``build()`` makes it if there is none
        (and when the debug counter refuses the merge, asked with ``site``)."""
        table = self.table
        canon = table.get(key)
        if canon is None:
            canon = table[key] = build()
            if self.marks:
                self.log.append((table, key))
        elif self.counter is not None and not self.counter(site):
            canon = build()
        self.memo[node] = canon

    def _visit(self, node: Any) -> None:  # noqa: C901, PLR0912 - one branch per node kind
        """Visit any node but an op call: a leaf, a tuple, a projection, a call of a
        function, or the start of a Let, If or Function (which push their work items)."""
        memo = self.memo
        push = self.stack.append
        t = type(node)
        if t is tuple:
            self._task(node)
        elif node in memo:
            return
        elif t is Var or t is GlobalVar or t is Op:
            memo[node] = node
        elif t is Constant:
            memo[node] = self._constant(node)
        elif t is TupleGetItem:
            value = node.tuple_value
            new_value = memo.get(value)
            if new_value is None:
                push(node)
                push(value)
            else:
                # rebuilt projections and tuples keep their types too: a call carrying its
                # type over them is not walked, so neither would they be
                def item() -> Expr:
                    if new_value is value:
                        return node
                    return carry_type(node, TupleGetItem(new_value, node.index))

                if self.fskip is not None and self.fskip(node):
                    memo[node] = item()
                else:
                    self._merge(node, (_GETITEM, new_value, node.index), item,
                                "merge a tuple projection")
        elif t is Tuple:
            fields = node.fields
            new_fields = tuple(map(memo.get, fields))
            if None in new_fields:
                push(node)
                for f in fields:
                    if f not in memo:
                        push(f)
            else:

                def tup() -> Expr:
                    return node if new_fields == fields else carry_type(node, Tuple(new_fields))

                if self.fskip is not None and self.fskip(node):
                    memo[node] = tup()
                else:
                    self._merge(node, (_TUPLE, new_fields), tup, "merge a tuple")
        elif t is Call:
            # a call of a global function, closure or var: not merged (not known pure)
            children = (node.op, *node.args)
            new = tuple(map(memo.get, children))
            if None in new:
                push(node)
                for child in children:
                    if child not in memo:
                        push(child)
            elif new == children:
                memo[node] = node
            else:
                memo[node] = Call(new[0], new[1:])
        elif t is Let:
            # value, then the binding (may merge the var), then the body, then rebuild
            push((_LET, node))
            push(node.body)
            push((_BIND, node))
            push(node.value)
        elif t is If:
            # the condition runs in the current scope, each branch in a scope of its own
            push((_IF, node))
            push(_EXIT_TASK)
            push(node.false_branch)
            push(_ENTER_TASK)
            push(_EXIT_TASK)
            push(node.true_branch)
            push(_ENTER_TASK)
            push(node.cond)
        elif t is Function:
            attrs = node.attrs
            if attrs and any(attrs.get(k) for k in _SKIP_ATTRS):
                memo[node] = node
                return
            for p in node.params:
                memo[p] = p
            push((_FUNC, node))
            push(_EXIT_TASK)
            push(node.body)
            push(_ENTER_TASK)
        else:
            raise TypeError(f"EliminateCommonSubexpr: unexpected node {type(node).__name__}")

    def _task(self, task: tuple[int, Any]) -> None:
        """Run a work item: open/close a scope, bind a let var, rebuild a Let/If/Function."""
        kind, node = task
        memo = self.memo
        if kind == _ENTER:
            self.marks.append(len(self.log))
        elif kind == _EXIT:
            mark = self.marks.pop()
            log = self.log
            for table, key in log[mark:]:
                del table[key]
            del log[mark:]
        elif kind == _BIND:
            var = node.var
            if var in memo:  # used by its own value (a recursive closure): keep it
                return
            value = memo[node.value]
            outer = self.let_vars.get(value)
            if (
                outer is not None
                and self._encloses(outer, node)
                and (
                    self.counter is None
                    or self.counter(f"merge %{var.name_hint} into %{outer.var.name_hint}")
                )
            ):
                memo[var] = outer.var  # same value as an enclosing let: use its var
            else:
                memo[var] = var
                if outer is None and type(value) not in (Var, GlobalVar):
                    self.let_vars[value] = node
        elif kind == _LET:
            var = node.var
            value = memo[node.value]
            body = memo[node.body]
            if self.let_vars.get(value) is node:
                del self.let_vars[value]  # its body is done: out of scope
            new_var = memo[var]
            if new_var is not var:
                memo[node] = body  # the binding was merged into an enclosing let
            elif value is node.value and body is node.body:
                memo[node] = node
            else:
                memo[node] = Let(var, value, body)
        elif kind == _IF:
            cond = memo[node.cond]
            true_branch = memo[node.true_branch]
            false_branch = memo[node.false_branch]
            if (
                cond is node.cond
                and true_branch is node.true_branch
                and false_branch is node.false_branch
            ):
                memo[node] = node
            else:
                memo[node] = If(cond, true_branch, false_branch)
        else:  # _FUNC
            body = memo[node.body]
            if body is node.body:
                memo[node] = node
            else:
                memo[node] = Function(node.params, body, node.ret_type, node.attrs)

    def _encloses(self, outer: Let, inner: Let) -> bool:
        """Whether ``inner`` is met only inside the body of ``outer`` (see :class:`_Enclosing`)."""
        if self.enclosing is None:
            assert self.func is not None
            self.enclosing = _Enclosing(self.func)
        return self.enclosing.encloses(outer, inner)

    def _constant(self, const: Constant) -> Constant:
        data = const.data
        if data.size > MAX_CONSTANT_ELEMENTS or (self.fskip is not None and self.fskip(const)):
            return const
        value = _constant_value(data)
        canon = self.constants.setdefault(_constant_hash(value), const)
        if canon is not const and _constant_value(canon.data) != value:
            canon = self.colliding_constants.setdefault(value, const)
        if canon is not const and self.counter is not None and not self.counter("merge a constant"):
            return const
        return canon

    def _attrs_key(self, attrs: Attrs) -> Any:
        """A hashable key equal only for attrs with the same values of the same kinds.

        ``Attrs`` equality is Python's (``1 == 1.0 == True``, ``0.0 == -0.0``,
        ``nan != nan``); the key tells those apart and makes ``nan`` equal itself.
        Cached by identity: rebuilt calls share their input's attrs object.
        """
        key = self.attr_keys.get(id(attrs))
        if key is None:
            key = tuple(sorted((name, _value_key(v)) for name, v in attrs.items()))
            # keep attrs alive with its key so its id cannot be reused during the walk
            self.attr_keys[id(attrs)] = key = (attrs, key)
        return key[1]


# Nodes that are never on a way from one let to another: not walked by _Enclosing.
_LEAVES = frozenset({Var, GlobalVar, Constant, Op})


class _Enclosing:
    """Which lets a let encloses alone, for the let var merges (one walk, made on first need).

    A let ``inner`` met inside the body of an open let ``outer`` may also be reachable
    from outside that body, through a node of the graph that several parents share
    (a let block used as a value in two places): its var must not become ``outer``'s
    there. The walk met ``inner`` on a way down from ``outer``; ``inner`` can only be
    reached that way when each node on it below ``outer``, ``inner`` included, has a
    single use. Going up from a node through single uses (each such node has one
    parent) ends at the node's *top*, the first node with several uses (or none);
    on the way down from ``outer`` all uses are single exactly when ``inner`` and
    ``outer`` have the same top. One iterative walk counts the uses and notes a
    parent per node; each node's top is found once (remembered along the way up),
    so all queries together stay linear.
    """

    def __init__(self, func: Function) -> None:
        leaves = _LEAVES
        uses: dict[Expr, int] = {}
        uses_of = uses.get
        parent: dict[Expr, Expr] = {}  # the last parent seen: the only one of a single use
        stack: list[Expr] = [func]
        push = stack.append
        pop = stack.pop
        while stack:
            node = pop()
            for child in node.children():
                if type(child) in leaves:
                    continue
                n = uses_of(child, 0)
                uses[child] = n + 1
                parent[child] = node
                if not n:
                    push(child)  # met for the first time
        self.uses = uses
        self.parent = parent
        self.tops: dict[Expr, Expr] = {}

    def encloses(self, outer: Let, inner: Let) -> bool:
        """Whether ``inner``, met inside ``outer``'s body, is reachable only through it."""
        return self._top(inner) is self._top(outer)

    def _top(self, node: Expr) -> Expr:
        tops, uses, parent = self.tops, self.uses, self.parent
        path = []
        top = tops.get(node)
        while top is None:
            if uses.get(node, 0) != 1:
                top = node
                break
            path.append(node)
            node = parent[node]
            top = tops.get(node)
        for n in path:
            tops[n] = top
        tops[node] = top
        return top


def _constant_value(data: Any) -> tuple[str, tuple[int, ...], bytes]:
    """What makes two small constants equal: dtype (with byte order), shape and bytes."""
    return (data.dtype.str, data.shape, data.tobytes())


# (a module global so that tests can force collisions)
_constant_hash: Callable[[Any], int] = hash


def _value_key(value: Any) -> Any:
    t = type(value)
    if t is float:
        return (t, value.hex())  # exact: -0.0 != 0.0, nan == nan
    if t is tuple:
        return (t, tuple(map(_value_key, value)))
    return (t, value)
