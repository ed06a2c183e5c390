"""ToANormalForm and ToGraphNormalForm: the two normal forms of the IR, and back.

**Graph normal form** (GNF) is the dataflow graph: an expression used twice is
one shared node, evaluated once per activation of its function, and ``let``
appears only where it must. **A-normal form** (ANF) names every intermediate
result: each non-atomic sub-expression (a call, a tuple, a projection, a
closure, an ``if``) and each constant is bound by a ``let`` to a fresh
variable, in evaluation order, and every operand is atomic (a var, a global
var, an op). ``if`` branches and function bodies are scopes with their own
``let`` chains, and every scope ends in an atom (``let %t = add(%x, %y);
%t``), as in TVM. Constants are bound because TVM binds them: its ANF
converter notes that constants must be let-bound although its atomicity test
accepts them. Each constant node is bound once, placed like any other shared
node (a constant used by one branch only is bound in that branch). The
condition of an ``if`` is an operand like any other: bound before the ``if``
when it is a call or a constant, left as it is when it is a var.

ToANormalForm follows TVM Relay's algorithm:

1. one iterative depth-first walk over the DAG of a function gives a
   post-order of its nodes (children before parents, a ``let``'s value
   before its body) and counts the uses of each node;
2. walking that order backwards (every parent before its children), each
   node's scope is the lowest common ancestor of the scopes of its uses (the
   scope of the using node; the branch's own scope for the branches of an
   ``if``, the body's scope for a function body). A node shared by both
   branches of an ``if`` is so bound once before the ``if``; one used in a
   branch only stays there. A node that uses a var bound inside a branch or a
   closure is only ever used inside it, so it is never hoisted out. Scopes
   carry skew-binary jump pointers, so each common-ancestor step is
   O(log depth) even for ``if``s nested thousands deep;
3. walking the post-order forwards, each node is rebuilt on the atoms of its
   children and appended to its scope's bindings. A node is reached in that
   walk only after the ``let`` vars it uses are bound, and before whatever
   contains its uses, so each scope's bindings come out in a valid order.

A ``let`` of the input keeps its var: its value is bound to it directly (no
extra fresh var) when the ``let`` is the value's only use. Lets used as values
are flattened into the enclosing scope. A function with attr ``Primitive=1``
is atomic (neither bound nor converted): TVM leaves its body alone too but
let-binds it; irpass keeps it as the callee, so a fused call stays a call of a
``Primitive`` function literal, as FuseOps wrote it. A ``let``-bound function
that calls itself (letrec) is converted on its own, because its body may only
see its var after the binding. Global functions with a true ``Primitive`` or
``SkipOptimization`` attr are left alone. Already-ANF code is returned as the
same objects, so the pass is idempotent and returns its input module then.
As in TVM, a node shared by the branches of two different ``if``s (or by a
closure and the code around it) is evaluated once where its scope begins,
even if no branch that uses it runs; only stateful ops can tell.

ToGraphNormalForm is the inverse: every ``let`` var is replaced by its
(converted) value, so the value becomes a node shared by all uses, and the
binding disappears (an unused pure value is dropped): a let-bound constant or
``if`` condition is used directly again. Two kinds of bindings
stay lets: a function that calls itself through its var (the var is its only
name), and, in a module that calls a stateful op anywhere, a value whose
evaluation may have effects (a stateful op call, or a call of a function or
closure, directly or inside it): substituting it could run the effect zero
times, several times, inside a branch, or out of order. ToGraphNormalForm of
ToANormalForm of a pure function in graph form (``if``s included) is
structurally equal to it.

Both passes are linear in the size of the program and never recurse along
its depth (only along the nesting of function definitions). Two helpers are
shared with :mod:`.functions`: :func:`effects_of` (which values may have
effects: the :mod:`.effects` analysis as these passes use it) and
:func:`closure_free_vars` (the free vars of every closure).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from irpass.ir import (
    Call,
    Constant,
    ExprMutator,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from irpass.ir.gcpause import gc_paused
from irpass.transform import ConfigOption, module_pass
from irpass.transform.context import RewriteCounter

from .effects import Callees, EffectAnalysis, World
from .scan import reaches_kind

if TYPE_CHECKING:
    from irpass.ir import Expr
    from irpass.transform import PassContext

__all__ = [
    "CONFIG_OPTIONS",
    "ToANormalForm",
    "ToGraphNormalForm",
    "to_a_normal_form",
    "to_graph_normal_form",
    "closure_free_vars",
    "effects_of",
]

CONFIG_OPTIONS: list[ConfigOption] = []

# Global functions these passes leave alone (as a FunctionPass would).
_SKIP_ATTRS = ("Primitive", "SkipOptimization")

# Node kinds that are atoms in ANF (a Function with Primitive=1 is one too). A constant
# is not: as in TVM, whose ANF let-binds constants although it calls them atomic.
_ATOM_TYPES = frozenset({Var, GlobalVar, Op})

# Name hint of the vars ToANormalForm invents.
_FRESH_NAME = "t"


def _is_primitive(func: Function) -> bool:
    return bool(func.attrs) and bool(func.attrs.get("Primitive"))


def _skipped(func: Function) -> bool:
    attrs = func.attrs
    return bool(attrs) and any(attrs.get(key) for key in _SKIP_ATTRS)


def _is_atom(expr: Expr) -> bool:
    t = type(expr)
    return t in _ATOM_TYPES or (t is Function and _is_primitive(expr))


def effects_of(mod: IRModule) -> EffectAnalysis:
    """Which values of ``mod`` may have effects, as ToGraphNormalForm and Inline see it.

    In a module that calls no stateful op anywhere nothing has effects;
    otherwise a value may have effects when it calls a stateful op or calls
    anything that is not an op (a global function, a closure: conservatively,
    its body might).
    """
    return EffectAnalysis(mod, Callees.NONE, World.MODULE)


def value_children(node: Expr) -> tuple[Expr, ...]:
    """The children whose evaluation is part of evaluating ``node``."""
    t = type(node)
    if t is Call:
        return (node.op, *node.args)
    if t is Tuple:
        return node.fields
    if t is TupleGetItem:
        return (node.tuple_value,)
    if t is Let:
        return (node.value, node.body)
    if t is If:
        return (node.cond, node.true_branch, node.false_branch)
    return ()


def closure_free_vars(root: Expr) -> dict[Function, frozenset[Var]]:
    """The free vars of every ``Function`` node reachable from ``root`` (``root`` too).

    A function's free vars are the vars used in its body (nested functions
    included) and bound outside it; a letrec function's own let var counts as
    free in it (its ``let`` binds it). Each function's *region* -- its body up
    to the nested functions -- is walked once, and nested functions' sets are
    combined innermost first, so the cost is the size of the program plus the
    sizes of the sets (unlike a free-var set per shared node, which can grow
    quadratic on long chains that use many vars).
    """
    regions: dict[Function, tuple[set[Var], set[Var], list[Function]]] = {}
    post: list[Function] = []  # innermost first
    roots = [root] if type(root) is Function else []
    if not roots:
        # A bare expression: its top-level region only matters for what it nests.
        roots = _region_functions(root)
    work: list[tuple[Function, bool]] = [(f, False) for f in reversed(roots)]
    while work:
        func, done = work.pop()
        if done:
            post.append(func)
            continue
        if func in regions:
            continue
        used: set[Var] = set()
        bound: set[Var] = set(func.params)
        nested: list[Function] = []
        seen: set[Expr] = set()
        stack: list[Expr] = [func.body]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            t = type(node)
            if t is Var:
                used.add(node)
            elif t is Function:
                nested.append(node)
            elif t is Let:
                bound.add(node.var)
                stack.append(node.value)
                stack.append(node.body)
            else:
                stack.extend(value_children(node))
        regions[func] = (used, bound, nested)
        work.append((func, True))
        work.extend((g, False) for g in nested if g not in regions)
    out: dict[Function, frozenset[Var]] = {}
    for func in post:
        used, bound, nested = regions[func]
        for g in nested:
            used |= out[g]
        out[func] = frozenset(used - bound)
    return out


def _region_functions(expr: Expr) -> list[Function]:
    """The outermost functions inside ``expr``."""
    found: list[Function] = []
    seen: set[Expr] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if type(node) is Function:
            found.append(node)
        else:
            stack.extend(value_children(node))
    return found


# -- A-normal form ---------------------------------------------------------------------


class _Scope:
    """A function body or an ``if`` branch: the bindings placed in it, in order.

    Scopes form a tree. ``jump`` is a skew-binary jump pointer (Myers' random
    access lists): an ancestor chosen from the depth alone, so that reaching
    any ancestor, or the common ancestor of two scopes, takes O(log depth)
    steps even when ``if``s nest thousands deep.
    """

    __slots__ = ("parent", "depth", "jump", "bindings")

    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        if parent is None:
            self.depth = 0
            self.jump = self
        else:
            self.depth = parent.depth + 1
            j = parent.jump
            if parent.depth - j.depth == j.depth - j.jump.depth:
                self.jump = j.jump
            else:
                self.jump = parent
        # Flat triples: var, value, the input Let it comes from or None (a tuple per
        # binding would add 64 bytes a node to what a large program's walk keeps).
        self.bindings: list[Var | Expr | Let | None] = []


def _ancestor(s: _Scope, depth: int) -> _Scope:
    """The ancestor of ``s`` at ``depth`` (``s.depth >= depth``)."""
    while s.depth > depth:
        s = s.jump if s.jump.depth >= depth else s.parent  # type: ignore[assignment]
    return s


def _lca(a: _Scope, b: _Scope) -> _Scope:
    """The innermost scope enclosing both ``a`` and ``b``."""
    if a.depth > b.depth:
        a = _ancestor(a, b.depth)
    elif b.depth > a.depth:
        b = _ancestor(b, a.depth)
    # Same depth, so the jumps of a and b land at the same depth too.
    while a is not b:
        if a.jump is not b.jump:
            a, b = a.jump, b.jump
        else:
            a, b = a.parent, b.parent  # type: ignore[assignment]
    return a


def _wrap(scope: _Scope, tail: Expr) -> Expr:
    """``let``-bind the bindings of ``scope`` around ``tail``, reusing unchanged input lets."""
    body = tail
    b = scope.bindings
    for i in range(len(b) - 3, -1, -3):
        var, value, origin = b[i], b[i + 1], b[i + 2]
        if origin is not None and origin.value is value and origin.body is body:
            body = origin
        else:
            body = _unchecked_let(var, value, body)
    return body


# States of the post-order walk (pushed after their node). _BIND is also a marker in
# the post-order: bind the let's var here (its value is done, its body not).
_ENTER = object()  # first visit: push the children
_DONE = object()  # children done: the node goes into the post-order
_BIND = object()


class _ANormalizer:
    """Converts functions to ANF (one instance per global function)."""

    def __init__(self, func: Function, fvs: dict[Function, frozenset[Var]] | None = None) -> None:
        self._fvs = fvs
        self._root = func

    def _free_vars(self, func: Function) -> frozenset[Var]:
        if self._fvs is None:
            self._fvs = closure_free_vars(self._root)
        return self._fvs[func]

    def function(self, func: Function) -> Function:
        """``func`` with its body in ANF (``func`` itself when it already is)."""
        root = func.body
        if _is_atom(root):
            return func
        order, uses, islands, direct, nested = self._walk(root)
        top = _Scope(None)
        if nested:
            scope, sub = self._place(order, root, top, islands)
        else:  # one scope (no if, no closure): every node is bound in the body's
            scope, sub = None, {}
        new_body = self._emit(order, uses, scope, sub, islands, direct, root, top)
        if new_body is root:
            return func
        return _unchecked_function(func.params, new_body, func.ret_type, func.attrs)

    # Step 1: post-order (with _BIND markers) and use counts; whether there is more than
    # one scope. The stack holds flat (node, state) pairs, the common cases are tested
    # first and the atom test is inlined: this loop runs once per node.
    #
    # The tables of the three steps are as large as the program, so on a large one they
    # decide how much memory the walk touches: ``uses`` holds, per node, twice its use
    # count plus 1 once the node is expanded (rather than a set of expanded nodes beside
    # it), and step 3 reuses it for the atoms.
    def _walk(self, root: Expr) -> tuple[list, dict, set, dict, bool]:
        order: list = []
        emit = order.append
        uses: dict[Expr, int] = {root: 0}
        count = uses.get
        islands: set[Function] = set()
        binds: list[Let] = []  # the lets, in the order of their _BIND markers
        scopes: list[Expr] = []  # the ifs and functions met: they may open scopes
        atoms = _ATOM_TYPES
        stack: list = [root, _ENTER]
        push = stack.append
        pop = stack.pop
        while stack:
            state = pop()
            node = pop()
            if state is _DONE:
                emit(node)
                continue
            if state is _BIND:
                emit((node,))
                binds.append(node)
                continue
            marks = uses[node]  # every pushed node has its entry
            if marks & 1:  # already expanded (pushed again by a later parent)
                continue
            uses[node] = marks + 1
            t = type(node)
            if t is Call:
                op = node.op
                kids = node.args if type(op) is Op or _is_atom(op) else (op, *node.args)
            elif t is Let:
                value = node.value
                body = node.body
                if type(value) is Function and not _is_primitive(value):
                    if node.var in self._free_vars(value):
                        islands.add(value)  # letrec: converted on its own
                # Popped in this order: the value, the _BIND marker, the body, the let.
                push(node)
                push(_DONE)
                for i, kid in enumerate((body, value)):
                    if i:
                        push(node)
                        push(_BIND)
                    if not _is_atom(kid):
                        marks = count(kid, 0) + 2
                        uses[kid] = marks
                        if not marks & 1:
                            push(kid)
                            push(_ENTER)
                continue
            elif t is Tuple:
                kids = node.fields
            elif t is TupleGetItem:
                kids = (node.tuple_value,)
            elif t is If:
                kids = (node.cond, node.true_branch, node.false_branch)
                scopes.append(node)
            elif t is Function:
                kids = () if node in islands else (node.body,)
                scopes.append(node)
            else:
                kids = ()
            push(node)
            push(_DONE)
            for kid in reversed(kids):
                tk = type(kid)
                if tk in atoms or (tk is Function and _is_primitive(kid)):
                    continue
                marks = count(kid, 0) + 2
                uses[kid] = marks
                if not marks & 1:
                    push(kid)
                    push(_ENTER)
        # A let's value used by that let only is bound to the let's own var. If the
        # value is itself a let (chain) used once, its final body is the one bound.
        # Keyed by that value and by the let itself (the let then binds nothing more).
        direct: dict[Expr, Let] = {}
        for let in binds:
            target = let.value
            while type(target) is Let and count(target, 0) >> 1 == 1:
                target = target.body
            if type(target) is not Let and count(target, 0) >> 1 == 1 and target not in direct:
                direct[target] = let
                direct[let] = let
        # Letrec functions are converted on their own: they open no scope here.
        nested = any(type(n) is If or n not in islands for n in scopes)
        return order, uses, islands, direct, nested

    # Step 2: the scope of every node, parents first.
    @staticmethod
    def _place(
        order: list, root: Expr, top: _Scope, islands: set[Function]
    ) -> tuple[dict[Expr, _Scope], dict[Expr, object]]:
        scope: dict[Expr, _Scope] = {root: top}
        sub: dict[Expr, object] = {}  # If -> (then scope, else scope); Function -> body scope
        get = scope.get
        atoms = _ATOM_TYPES
        for node in reversed(order):
            t = type(node)
            if t is Call:
                op = node.op
                kids = node.args if type(op) is Op else (*node.args, op)
            elif t is tuple:  # a _BIND marker
                continue
            elif t is Tuple:
                kids = node.fields
            elif t is TupleGetItem:
                kids = (node.tuple_value,)
            elif t is Let:
                kids = (node.value, node.body)
            elif t is If:
                s = scope[node]
                then_scope, else_scope = _Scope(s), _Scope(s)
                sub[node] = (then_scope, else_scope)
                _use(scope, node.cond, s)
                _use(scope, node.true_branch, then_scope)
                _use(scope, node.false_branch, else_scope)
                continue
            elif t is Function and node not in islands:
                body_scope = _Scope(scope[node])
                sub[node] = body_scope
                _use(scope, node.body, body_scope)
                continue
            else:
                continue
            # Every child is used in the node's own scope (the inlined form of _use).
            s = scope[node]
            for kid in kids:
                tk = type(kid)
                if tk in atoms or (tk is Function and _is_primitive(kid)):
                    continue
                prev = get(kid)
                if prev is None:
                    scope[kid] = s
                elif prev is not s:
                    scope[kid] = _lca(prev, s)
        return scope, sub

    # Step 3: rebuild and bind, in evaluation order.
    def _emit(
        self,
        order: list,
        atom: dict[Expr, object],
        scope: dict[Expr, _Scope] | None,
        sub: dict[Expr, object],
        islands: set[Function],
        direct: dict[Expr, Let],
        root: Expr,
        top: _Scope,
    ) -> Expr:
        """Rebuild the nodes of ``order`` on atoms and bind them (all in ``top``
        when ``scope`` is None).

        ``atom`` is step 1's ``uses``: its entry for a node is replaced by the node's
        atom when the node is emitted, before any parent reads it (post-order).
        """
        get = atom.get
        bound_to = direct.get
        flat = scope is None
        top_bindings = top.bindings
        for item in order:
            t = type(item)
            if t is tuple:
                let = item[0]
                if let not in direct:
                    bindings = top_bindings if flat else scope[let].bindings  # type: ignore[index]
                    bindings += (let.var, get(let.value, let.value), let)
                continue
            node = item
            if t is Call:
                op = node.op
                new_op = get(op, op)
                args = node.args
                new_args = tuple(map(get, args, args))
                # The same attrs, the same arity, a callee that is still a valid one
                # (an op, or an atom naming the same function): nothing to check again.
                new: Expr = node if new_op is op and new_args == args else _unchecked_call(
                    new_op, new_args, node.attrs
                )
            elif t is Let:
                atom[node] = get(node.body, node.body)
                continue
            elif t is Constant:
                new = node
            elif t is Tuple:
                fields = node.fields
                new_fields = tuple(map(get, fields, fields))
                new = node if new_fields == fields else Tuple(new_fields)
            elif t is TupleGetItem:
                tv = node.tuple_value
                new_tv = get(tv, tv)
                new = node if new_tv is tv else TupleGetItem(new_tv, node.index)
            elif t is If:
                then_scope, else_scope = sub[node]  # type: ignore[misc]
                cond = get(node.cond, node.cond)
                then = _wrap(then_scope, get(node.true_branch, node.true_branch))
                other = _wrap(else_scope, get(node.false_branch, node.false_branch))
                same = (
                    cond is node.cond
                    and then is node.true_branch
                    and other is node.false_branch
                )
                new = node if same else If(cond, then, other)
            elif node in islands:
                new = _ANormalizer(node, self._fvs).function(node)
            else:  # Function
                body = _wrap(sub[node], get(node.body, node.body))  # type: ignore[arg-type]
                new = node if body is node.body else _unchecked_function(
                    node.params, body, node.ret_type, node.attrs
                )
            bindings = top_bindings if flat else scope[node].bindings  # type: ignore[index]
            origin = bound_to(node)
            var = _unchecked_var(_FRESH_NAME) if origin is None else origin.var
            bindings += (var, new, origin)
            atom[node] = var
        return _wrap(top, get(root, root))


def _use(scope: dict[Expr, _Scope], kid: Expr, use: _Scope) -> None:
    """Record a use of ``kid`` in scope ``use``: its scope becomes the common ancestor."""
    if _is_atom(kid):
        return
    prev = scope.get(kid)
    if prev is None:
        scope[kid] = use
    elif prev is not use:
        scope[kid] = _lca(prev, use)


# Trusted rebuilds from the parts of valid nodes (see irpass.ir.nodes): no re-checks.
_unchecked_call = Call._unchecked
_unchecked_function = Function._unchecked
_unchecked_let = Let._unchecked
_unchecked_var = Var._unchecked


def to_a_normal_form(func: Function) -> Function:
    """``func`` in A-normal form (see the module docstring); ``func`` itself if it already is."""
    with gc_paused():
        return _ANormalizer(func).function(func)


@module_pass(opt_level=1, name="ToANormalForm")
def ToANormalForm(mod: IRModule, ctx: PassContext) -> IRModule:
    """Bind every non-atomic sub-expression and every constant to a ``let`` var, in
    evaluation order.

    Shared nodes are bound once, in the innermost scope that encloses all
    their uses; ``if`` branches and function bodies get their own ``let``
    chains. Returns ``mod`` itself when every function already is in ANF.
    """
    return _map_functions(mod, to_a_normal_form)


# -- graph normal form -----------------------------------------------------------------


class _ToGraph(ExprMutator):
    """Substitutes let-bound values into their uses, except the bindings that must stay."""

    def __init__(
        self, func: Function, effects: EffectAnalysis, counter: RewriteCounter | None = None
    ) -> None:
        self._func = func
        self._effects = effects
        self._counter = counter  # asked before each substitution (None: no debug counter)
        self._fvs: dict[Function, frozenset[Var]] | None = None

    def _recursive(self, let: Let) -> bool:
        value = let.value
        if type(value) is not Function:
            return False
        if self._fvs is None:
            self._fvs = closure_free_vars(self._func)
        return let.var in self._fvs[value]

    def visit_let_binding(self, let: Let) -> tuple[Var, Expr] | None:
        if (
            self._recursive(let)
            or self._effects.may_have_effects(let.value)
            or (self._counter is not None and not self._counter(f"substitute %{let.var.name_hint}"))
        ):
            return let.var, self.visit(let.value)
        # Every use of the var now reads the value itself: one shared node.
        self.memo[let.var] = self.visit(let.value)
        return None

    def visit_function(self, func: Function) -> Expr:
        if _is_primitive(func):
            return func
        return super().visit_function(func)


def to_graph_normal_form(
    func: Function, effects: EffectAnalysis | None = None, counter: RewriteCounter | None = None
) -> Function:
    """``func`` with its lets substituted into their uses (see the module docstring).

    ``effects`` tells which values may have effects (by default:
    :func:`effects_of` a module holding ``func`` alone); ``counter(site)``, if
    given, is asked before each substitution (the debug counter) and a binding
    it refuses stays a ``let``.
    """
    if effects is None:
        effects = effects_of(IRModule({"main": func}))
    with gc_paused():
        body = _ToGraph(func, effects, counter).visit(func.body)
    if body is func.body:
        return func
    return Function(func.params, body, func.ret_type, func.attrs)


@module_pass(opt_level=1, name="ToGraphNormalForm")
def ToGraphNormalForm(mod: IRModule, ctx: PassContext) -> IRModule:
    """Replace each ``let`` var by its value (a shared dataflow node), dropping the binding.

    Keeps letrec functions and, when the module calls a stateful op, the
    bindings whose value may have effects. Returns ``mod`` itself when there
    is nothing to substitute.
    """
    effects: list[EffectAnalysis] = []  # made on first need: most modules have no lets
    counter = ctx.rewrite_counter()

    def convert(func: Function) -> Function:
        if not reaches_kind(func.body, (Let,)):
            return func  # nothing bound: nothing to substitute
        if not effects:
            effects.append(effects_of(mod))
        return to_graph_normal_form(func, effects[0], counter)

    return _map_functions(mod, convert)


def _map_functions(mod: IRModule, convert) -> IRModule:  # noqa: ANN001
    """``mod`` with ``convert`` applied to each function not skipped; ``mod`` if none changed."""
    new_funcs = {}
    changed = False
    for gv, func in mod.items():
        new = func if _skipped(func) else convert(func)
        changed = changed or new is not func
        new_funcs[gv] = new
    return IRModule(new_funcs) if changed else mod
