"""Traversal of expressions: ExprFunctor, ExprVisitor, ExprMutator, post_order_visit.

Programs can be a million nodes deep, far past Python's recursion limit, so
the traversals never recurse along the ways a program grows deep:

* :class:`ExprVisitor` visits parent first, as TVM's Python ``ExprVisitor``
  does: a node's ``visit_*`` method runs, and the children it asks for
  (through ``super().visit_*`` or ``self.visit``) are visited once it has
  returned, from an explicit stack. A method that does not ask for its
  children prunes them. No part of a program recurses, nested functions
  included.
* :class:`ExprMutator` rebuilds bottom-up: dataflow nodes (``Call``,
  ``Tuple``, ``TupleGetItem``), ``If`` (its condition and branches) and the
  value of a ``Let`` are walked with an explicit stack in post-order before
  the node's own ``visit_*`` method runs, so when ``visit_call`` asks for
  ``self.visit(arg)`` the answer is already memoized (TVM's
  ``MixedModeVisitor`` works the same way for dataflow nodes); ``let`` chains
  (a let whose body is a let ...) are walked with a loop in the default
  ``visit_let``; override :meth:`ExprMutator.visit_let_binding` to act on
  each binding of a chain, for instance to substitute a var before the body
  is visited. Only function bodies recurse (a closure inside a closure ...),
  which is bounded by how deeply the program nests functions, not by its
  size. Because children are rewritten before the parent's method runs,
  override ``visit_*`` to change how a node is rebuilt, not to skip some of
  its children.

Overriding ``visit`` itself works in both (TVM's Python idiom): it is called
for every node, inner ones included; in a mutator, what it returns is what the
parent sees.

Every sub-expression of a DAG is visited once: both classes memoize by node
identity.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from typing import Any

from .expr import Expr
from .nodes import Call, Constant, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from .op import Op
from .type_infer import carry_type

__all__ = ["ExprFunctor", "ExprVisitor", "ExprMutator", "post_order_visit"]

_unchecked_call = Call._unchecked
_ALWAYS_EXPR = repeat(Expr)  # endless: map(isinstance, xs, _ALWAYS_EXPR) stops with xs

_METHOD_OF: dict[type, str] = {
    Var: "visit_var",
    GlobalVar: "visit_global_var",
    Constant: "visit_constant",
    Tuple: "visit_tuple",
    TupleGetItem: "visit_tuple_getitem",
    Call: "visit_call",
    Let: "visit_let",
    If: "visit_if",
    Function: "visit_function",
    Op: "visit_op",
}

# Node kinds whose children ExprMutator walks with the explicit stack (for Let: its value
# only, so visit_let_binding still runs before the body is visited).
_EXPANDED = frozenset({Call, Tuple, TupleGetItem, If, Let})


def _post_order(root: Expr, done: set[Expr] | dict[Expr, Expr]) -> Any:
    """Yield ``root`` and the expanded nodes below it that are not ``done``, children first.

    The consumer marks each yielded node done before asking for the next one.
    """
    # A None on the stack marks the node under it as ready: its children are done.
    stack: list[Expr | None] = [root]
    push = stack.append
    pop = stack.pop
    while stack:
        node = pop()
        if node is None:
            node = pop()
            if node not in done:
                yield node
            continue
        if node in done:
            continue
        push(node)
        push(None)
        t = type(node)
        if t is Call:
            for child in reversed(node.args):
                if type(child) in _EXPANDED and child not in done:
                    push(child)
            child = node.op
        elif t is Tuple:
            for child in reversed(node.fields):
                if type(child) in _EXPANDED and child not in done:
                    push(child)
            continue
        elif t is TupleGetItem:
            child = node.tuple_value
        elif t is If:
            for child in (node.false_branch, node.true_branch):
                if type(child) in _EXPANDED and child not in done:
                    push(child)
            child = node.cond
        else:  # Let
            child = node.value
        if type(child) in _EXPANDED and child not in done:
            push(child)


class ExprFunctor:
    """Dispatches ``visit(expr)`` to ``visit_<kind>(expr)`` by node type.

    Subclass it for a traversal that controls its own recursion; most passes
    want :class:`ExprVisitor` or :class:`ExprMutator` instead.
    """

    _vtable: dict[type, Callable[[Any, Expr], Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Resolve the visit_* methods once per class, not once per node.
        cls._vtable = {node: getattr(cls, name) for node, name in _METHOD_OF.items()}

    def visit(self, expr: Expr) -> Any:
        """Dispatch on the type of ``expr``."""
        try:
            method = self._vtable[type(expr)]
        except KeyError:
            raise TypeError(
                f"{type(self).__name__} cannot visit {type(expr).__name__} {expr!r}"
            ) from None
        return method(self, expr)

    def _unhandled(self, expr: Expr) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not handle {type(expr).__name__}")

    visit_var = visit_global_var = visit_constant = visit_tuple = _unhandled
    visit_tuple_getitem = visit_call = visit_let = visit_if = visit_function = visit_op = _unhandled


ExprFunctor._vtable = {node: getattr(ExprFunctor, name) for node, name in _METHOD_OF.items()}


class ExprVisitor(ExprFunctor):
    """Visits sub-expressions once each, parent first; override ``visit_*`` to collect.

    As in TVM's Python ``ExprVisitor``, the default ``visit_<kind>`` method of
    a node is what visits its children, so an override decides whether they
    are visited: one that calls the base method (``super().visit_call(call)``)
    or ``self.visit(child)`` gets them visited, one that does not prunes them.
    Every ``visit_*`` method prunes that way:

    * ``visit_call``: the op, then the args;
    * ``visit_tuple``: the fields; ``visit_tuple_getitem``: the tuple;
    * ``visit_let``: :meth:`visit_let_binding` (the var, then the value), then
      the body; override ``visit_let_binding`` to prune or act on a binding
      alone;
    * ``visit_if``: the condition, then the true and the false branch;
    * ``visit_function``: the params, then the body;
    * ``visit_var``, ``visit_global_var``, ``visit_constant``, ``visit_op``:
      no children.

    Order: a node's ``visit_*`` method runs before any of its children's;
    the children it asks for are visited in the order asked, each with its
    whole subtree (depth first), before the node's later siblings. The
    ``visit_*`` methods are entered in the order TVM's recursive visitor
    enters them. What differs, so that no program depth can exhaust Python's
    stack: inside a traversal, ``self.visit(e)`` (hence ``super().visit_*``)
    does not visit ``e`` at once but asks for it, and the children are visited
    *after* the method returns. So code placed after ``super().visit_call(call)``
    runs before the args are visited. For work that needs the children done
    first, use :func:`post_order_visit` or an :class:`ExprMutator`.

    A node reached again (a DAG's shared sub-expression) is not visited
    again; a node pruned below one parent is still visited when another
    parent asks for it. An overriding ``visit`` (TVM's idiom) is called for
    every node a method asks for, when it asks, and for the root; what it
    passes on to ``super().visit`` is visited.
    """

    _custom_visit = False
    # Node kinds whose visit_* is the base one (and visit is not overridden): the
    # traversal pushes their children itself, without a method call per node.
    _inline: frozenset[type] = frozenset()
    # Leaf kinds whose visit_* is the base one (which does nothing): never pushed.
    _skip: frozenset[type] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._custom_visit = cls.visit is not ExprVisitor.visit
        cls._inline, cls._skip = _defaults(cls)

    def __new__(cls, *args: Any, **kwargs: Any) -> ExprVisitor:
        self = super().__new__(cls)
        # In __new__ so a subclass that forgets super().__init__() still works.
        self._visited = set()
        self._asked = None  # while a traversal runs: what the current method asks for
        return self

    def visit(self, expr: Expr) -> None:
        """Visit ``expr`` and everything below it that the ``visit_*`` methods ask for.

        Called while a traversal runs (from a ``visit_*`` method), it asks for
        ``expr`` instead: ``expr`` is visited after that method returns.
        """
        asked = self._asked
        if asked is not None:
            if expr not in self._visited:
                asked.append(expr)
            return
        if expr not in self._visited:
            self._traverse(expr)

    def _traverse(self, root: Expr) -> None:
        visited = self._visited
        vtable = self._vtable
        inline = self._inline
        skip = self._skip
        # Nodes to visit, the next one last; a method's asks are pushed reversed, so
        # they come off in the order asked, each with its subtree before the next.
        stack: list[Expr] = [root]
        push = stack.append
        pop = stack.pop
        asked: list[Expr] = []
        self._asked = asked
        try:
            while stack:
                node = pop()
                if node in visited:
                    continue
                t = type(node)
                if t in inline:
                    visited.add(node)
                    if t is Call:
                        args = node.args
                        for child in reversed(args) if len(args) > 1 else args:
                            if type(child) not in skip and child not in visited:
                                push(child)
                        child = node.op
                    elif t is Let:
                        for child in (node.body, node.value):
                            if type(child) not in skip and child not in visited:
                                push(child)
                        child = node.var
                    elif t is Tuple:
                        for child in reversed(node.fields):
                            if type(child) not in skip and child not in visited:
                                push(child)
                        continue
                    elif t is TupleGetItem:
                        child = node.tuple_value
                    elif t is If:
                        for child in (node.false_branch, node.true_branch):
                            if type(child) not in skip and child not in visited:
                                push(child)
                        child = node.cond
                    else:  # Function
                        child = node.body
                        if type(child) not in skip and child not in visited:
                            push(child)
                        for child in reversed(node.params):
                            if type(child) not in skip and child not in visited:
                                push(child)
                        continue
                    if type(child) not in skip and child not in visited:
                        push(child)
                    continue
                try:
                    method = vtable[t]
                except KeyError:
                    raise TypeError(
                        f"{type(self).__name__} cannot visit {t.__name__} {node!r}"
                    ) from None
                visited.add(node)
                method(self, node)
                if asked:
                    asked.reverse()
                    stack += asked
                    asked.clear()
        finally:
            self._asked = None

    def visit_var(self, var: Var) -> None:
        """A var: no children."""

    def visit_global_var(self, gv: GlobalVar) -> None:
        """A global var: no children (the function it names is not visited)."""

    def visit_constant(self, const: Constant) -> None:
        """A constant: no children."""

    def visit_op(self, op: Op) -> None:
        """An op: no children."""

    def visit_tuple(self, tup: Tuple) -> None:
        """Ask for the fields."""
        visit = self.visit
        for f in tup.fields:
            visit(f)

    def visit_tuple_getitem(self, item: TupleGetItem) -> None:
        """Ask for the tuple."""
        self.visit(item.tuple_value)

    def visit_call(self, call: Call) -> None:
        """Ask for the op, then the args."""
        visit = self.visit
        visit(call.op)
        for a in call.args:
            visit(a)

    def visit_let(self, let: Let) -> None:
        """Ask for the binding (:meth:`visit_let_binding`), then the body.

        Each ``Let`` of a chain (a let whose body is a let ...) gets its own
        call, as the traversal reaches it through the body of the one above.
        """
        self.visit_let_binding(let)
        self.visit(let.body)

    def visit_let_binding(self, let: Let) -> None:
        """Ask for the var, then the value of one binding."""
        self.visit(let.var)
        self.visit(let.value)

    def visit_if(self, node: If) -> None:
        """Ask for the condition, then the true and the false branch."""
        self.visit(node.cond)
        self.visit(node.true_branch)
        self.visit(node.false_branch)

    def visit_function(self, func: Function) -> None:
        """Ask for the params, then the body."""
        visit = self.visit
        for p in func.params:
            visit(p)
        visit(func.body)


def _defaults(cls: type[ExprVisitor]) -> tuple[frozenset[type], frozenset[type]]:
    """The node kinds ``cls`` visits with the base methods: (with children, leaves)."""
    if cls._custom_visit:
        return frozenset(), frozenset()  # the overriding visit must see every node
    own = {t for t, name in _METHOD_OF.items() if getattr(cls, name) is getattr(ExprVisitor, name)}
    if cls.visit_let_binding is not ExprVisitor.visit_let_binding:
        own.discard(Let)
    leaves = {Var, GlobalVar, Constant, Op}
    return frozenset(own - leaves), frozenset(own & leaves)


ExprVisitor._inline, ExprVisitor._skip = _defaults(ExprVisitor)


class ExprMutator(ExprFunctor):
    """Rebuilds an expression bottom-up; override ``visit_*`` to rewrite nodes.

    Results are memoized by node identity (``self.memo``), so a shared
    sub-expression is rewritten once and stays shared. The default methods do
    a functional update: a node whose children all come back unchanged is
    returned as is, so an identity mutator returns its input object. A call,
    tuple or projection rebuilt over children of the types the old ones had
    keeps the old node's type (:func:`~irpass.ir.type_infer.carry_type`), and a
    function over the same params keeps its params tuple, so the next InferType
    walks only what the mutator really changed.
    """

    memo: dict[Expr, Expr]

    _custom_visit = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._custom_visit = cls.visit is not ExprMutator.visit

    def __new__(cls, *args: Any, **kwargs: Any) -> ExprMutator:
        self = super().__new__(cls)
        self.memo = {}
        self._direct = None
        return self

    def visit(self, expr: Expr) -> Expr:
        """The rewritten form of ``expr`` (memoized)."""
        memo = self.memo
        result = memo.get(expr)
        if result is not None:
            return result
        t = type(expr)
        if t in _EXPANDED and expr is not self._direct:
            return self._visit_expanded(expr)
        self._direct = None
        try:
            method = self._vtable[t]
        except KeyError:
            raise TypeError(f"{type(self).__name__} cannot visit {t.__name__} {expr!r}") from None
        result = method(self, expr)
        memo[expr] = result
        return result

    def _visit_expanded(self, root: Expr) -> Expr:
        memo = self.memo
        vtable = self._vtable
        custom = self._custom_visit
        for node in _post_order(root, memo):
            if custom and node is not root:
                # Let an overriding visit() rewrite inner nodes too; what it returns
                # is what the parents see. `_direct` tells the base visit() that this
                # node's children are done.
                self._direct = node
                memo[node] = self.visit(node)
            else:
                memo[node] = vtable[type(node)](self, node)
        return memo[root]

    def _visit_all(self, exprs: tuple[Expr, ...]) -> tuple[Expr, ...]:
        # Fast path: children of dataflow nodes are usually memoized already, and
        # map(dict.get) runs in C. Expressions are always truthy, so `or` is a
        # memo miss test.
        get = self.memo.get
        out = tuple(map(get, exprs))
        if None in out:
            visit = self.visit
            out = tuple([get(e) or visit(e) for e in exprs])
        return out

    def visit_var(self, var: Var) -> Expr:
        return var

    def visit_global_var(self, gv: GlobalVar) -> Expr:
        return gv

    def visit_constant(self, const: Constant) -> Expr:
        return const

    def visit_op(self, op: Op) -> Expr:
        return op

    def visit_tuple(self, tup: Tuple) -> Expr:
        fields = tup.fields
        new_fields = self._visit_all(fields)
        # Tuple equality compares items by identity first: no rebuild when unchanged.
        if new_fields == fields:
            return tup
        return carry_type(tup, Tuple(new_fields))

    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        value = self.visit(item.tuple_value)
        if value is item.tuple_value:
            return item
        return carry_type(item, TupleGetItem(value, item.index))

    def visit_call(self, call: Call) -> Expr:
        get = self.memo.get
        op = call.op
        new_op = get(op) or self.visit(op)
        args = call.args
        # Inlined fast path of _visit_all: this is the hottest method of every pass.
        new_args = tuple(map(get, args))
        if None in new_args:
            new_args = self._visit_all(args)
        if new_op is op:
            if new_args == args:
                return call
            if type(op) is Op and all(map(isinstance, new_args, _ALWAYS_EXPR)):
                # Same op and arity and the call's own (already valid) attrs: only the
                # new args needed checking (an overriding visit_* may return anything).
                # Args of unchanged types leave the call's type as it was: it is kept,
                # so the pass's successor does not infer it again.
                return carry_type(call, _unchecked_call(op, new_args, call.attrs))
        return Call(new_op, new_args, call.attrs)

    def visit_let(self, let: Let) -> Expr:
        """Rewrite a whole chain of lets iteratively (see :meth:`visit_let_binding`)."""
        memo = self.memo
        chain: list[tuple[Let, tuple[Var, Expr] | None]] = []
        node = let
        while True:
            chain.append((node, self.visit_let_binding(node)))
            body = node.body
            if type(body) is not Let or body in memo:
                break
            node = body
        new_body = self.visit(body)
        for node, binding in reversed(chain):
            if binding is not None:
                var, value = binding
                if var is not node.var or value is not node.value or new_body is not node.body:
                    new_body = Let(var, value, new_body)
                else:
                    new_body = node
            memo[node] = new_body
        return new_body

    def visit_let_binding(self, let: Let) -> tuple[Var, Expr] | None:
        """Rewrite one binding of a let chain: return ``(var, value)``, or ``None`` to drop it.

        A subclass that drops a binding must make uses of the var resolve to
        something else, e.g. ``self.memo[let.var] = replacement``.
        """
        return self.visit(let.var), self.visit(let.value)

    def visit_if(self, node: If) -> Expr:
        cond = self.visit(node.cond)
        true_branch = self.visit(node.true_branch)
        false_branch = self.visit(node.false_branch)
        if (
            cond is node.cond
            and true_branch is node.true_branch
            and false_branch is node.false_branch
        ):
            return node
        return If(cond, true_branch, false_branch)

    def visit_function(self, func: Function) -> Expr:
        params = tuple(map(self.visit, func.params))
        body = self.visit(func.body)
        if params == func.params:
            if body is func.body:
                return func
            # the same tuple: the types kept below it are bound by it (see "Types kept" in
            # irpass.ir.type_infer), so inference takes them instead of walking the body
            params = func.params
        return Function(params, body, func.ret_type, func.attrs)


def post_order_visit(expr: Expr, fn: Callable[[Expr], None]) -> None:
    """Call ``fn(node)`` on every node reachable from ``expr`` once, children first.

    Children are taken in field order (a call's op, then its args; a let's
    var, value, body; a function's params, then its body). Iterative: any depth.
    """
    visited: set[Expr] = set()
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    push = stack.append
    pop = stack.pop
    while stack:
        node, ready = pop()
        if node in visited:
            continue
        if ready:
            visited.add(node)
            fn(node)
            continue
        push((node, True))
        for child in reversed(node.children()):
            if child not in visited:
                push((child, False))
