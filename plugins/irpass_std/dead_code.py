"""DeadCodeElimination: drop the bindings and tuple fields nothing uses.

Follows TVM Relay's ``DeadCodeElimination`` (a function pass at opt level 1,
without its optional inlining): a ``let`` binding whose variable is not used
is removed, and so is a binding that only dead bindings use (transitively).
A projection of a tuple literal, ``TupleGetItem(Tuple(f0, f1, ...), i)``,
becomes ``fi``, dropping the other fields. Both removals only happen when
what is dropped has no effect: a binding whose value calls a ``stateful`` op
stays, even unused, and so does a tuple field that does.

**Algorithm.** One iterative post-order rebuild of the function, memoized by
node identity (a shared node is rebuilt once and stays shared). It visits
the *body* of a ``let`` before its binding: when the binding is reached, every
use of its variable -- all inside the body -- has been seen, so an unused
variable is known at once, and its value is then never visited. Uses inside
that dead value are therefore never recorded, which is what makes the
removal transitive: ``let %a = f(%x); let %b = g(%a); body`` with ``%b``
unused drops ``%b``, after which ``%a`` has no use either and is dropped in
the same walk. A node is visited once, so the pass is linear in the size of
the function; let chains and dataflow chains are walked with an explicit
stack, so a chain a million bindings long needs no recursion. A function
with no ``let`` and no projection has nothing that can be dead: a read-only
scan finds that and returns it without building the memo.

**Effects.** What would be dropped must not run a ``stateful`` op: this is
asked of the shared analysis of :mod:`.effects` with ``Callees.KNOWN`` (it
looks into the bodies of function literals, of vars ``let``-bound to them and
of the module's global functions; a call of any other function value, or a
call that reaches itself, counts as effectful). It is asked on demand, only
for what would be dropped (the values of unused bindings, the other fields of
a projected tuple), and memoized per module, so it adds at most one more
linear walk; when no registered op is stateful at all, everything is pure and
the analysis is not even made. As in TVM, non-termination is not treated as
an effect.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from irpass.ir import (
    Call,
    Constant,
    Expr,
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
from irpass.transform import ConfigOption, PassContext, function_pass
from irpass.transform.context import RewriteCounter

from .effects import Callees, EffectAnalysis, World, any_stateful_op
from .scan import reaches_kind

__all__ = ["CONFIG_OPTIONS", "DeadCodeElimination", "eliminate_dead_code", "is_pure"]

CONFIG_OPTIONS: list[ConfigOption] = []


@function_pass(opt_level=1, name="DeadCodeElimination")
def DeadCodeElimination(func: Function, mod: IRModule, ctx: PassContext) -> Function:  # noqa: N802
    """Remove the unused ``let`` bindings and tuple fields of ``func`` (see the module doc)."""
    return eliminate_dead_code(func, mod, counter=ctx.rewrite_counter())


def eliminate_dead_code(
    func: Function, mod: IRModule | None = None, *, counter: RewriteCounter | None = None
) -> Function:
    """``func`` without its dead bindings and dead tuple fields; ``func`` itself if it has none.

    ``mod`` is the module ``func`` belongs to: calls of its global functions
    are pure when those functions are. Without it they count as impure (when
    some registered op is stateful; otherwise everything is pure).
    ``counter(site)``, if given, is asked before each removal (a binding, or the
    other fields of a projected tuple) and the removal skipped when it says
    ``False`` (the debug counter).
    """
    if not reaches_kind(func.body, (Let, TupleGetItem)):
        return func  # no binding and no projection: nothing can be dead
    effects = _effects_of(mod) if any_stateful_op() else None
    with gc_paused():
        body = _Eliminator(effects, counter).run(func.body)
    if body is func.body:
        return func
    return Function(func.params, body, func.ret_type, func.attrs)


def is_pure(expr: Expr, mod: IRModule | None = None) -> bool:
    """Whether evaluating ``expr`` runs no stateful op (see the module docstring)."""
    if not any_stateful_op():
        return True
    return not _effects_of(mod).may_have_effects(expr)


# One effect analysis per module, shared by the runs on its functions: the effects of a
# node depend only on the node and on the module's global functions (both immutable),
# so a helper called from many functions is analysed once, not once per caller.
_EFFECTS: weakref.WeakKeyDictionary[IRModule, EffectAnalysis] = weakref.WeakKeyDictionary()


def _effects_of(mod: IRModule | None) -> EffectAnalysis:
    """The analysis DCE asks (made only when some registered op is stateful)."""
    if mod is None:
        return EffectAnalysis(None, Callees.KNOWN, World.REGISTRY)
    effects = _EFFECTS.get(mod)
    if effects is None:
        effects = _EFFECTS[mod] = EffectAnalysis(mod, Callees.KNOWN, World.REGISTRY)
    return effects


def _no_effects(expr: Expr) -> bool:
    return False


# Work-item states of the rebuild (pushed after their node: ``node, state``).
_ENTER = 0  # first visit: push the children
_EXIT = 1  # children rebuilt: rebuild the node
_DECIDE = 2  # a let's body is rebuilt: keep or drop the binding
_BUILD = 3  # a kept binding's value is rebuilt: rebuild the let
_ALIAS = 4  # a projection of a tuple literal: it is its field's rebuilt form

_LEAVES = frozenset({Var, Constant, GlobalVar, Op})


class _Eliminator:
    """One run of the rebuild (see the module docstring)."""

    def __init__(
        self, effects: EffectAnalysis | None, counter: RewriteCounter | None = None
    ) -> None:
        # Without an effect analysis (no op is stateful) nothing has effects.
        self.effectful: Callable[[Expr], bool] = (
            effects.may_have_effects if effects else _no_effects
        )
        # Let vars bound to function literals, for the effects of calls through them.
        self.functions = effects.let_functions if effects else None
        # Old node -> rebuilt node, for every live node visited. A let var is a key
        # exactly when something live uses it.
        self.memo: dict[Expr, Expr] = {}
        # Projection -> what it reduces to (itself when it does not reduce).
        self.projected: dict[TupleGetItem, Expr] = {}
        # Asked before each removal (None: no debug counter on the pass).
        self.counter = counter

    def run(self, root: Expr) -> Expr:
        memo = self.memo
        effectful = self.effectful
        effects = effectful is not _no_effects  # else every value is pure: skip the call
        functions = self.functions
        counter = self.counter
        lookup = memo.__getitem__
        stack: list = [root, _ENTER]
        push = stack.append
        pop = stack.pop
        while stack:
            state = pop()
            node = pop()
            if state == _ENTER:
                if node in memo:
                    continue
                t = type(node)
                if t is Call and type(node.op) is Op:
                    # Op calls, the bulk, inline: one of one or two arguments whose
                    # arguments are done is rebuilt at once; else it waits under _EXIT
                    # and the loop goes straight down into its last argument not done
                    # when that is an op call too (no push and pop of it). The order
                    # of the work is the one the generic branch below gives.
                    # W3 at 10^4: -24% instructions for the pass (callgrind).
                    while True:
                        args = node.args
                        nargs = len(args)
                        if nargs == 1:
                            a = args[0]
                            na = memo.get(a)
                            if na is not None:
                                memo[node] = (
                                    node if na is a else _unchecked_call(node.op, (na,), node.attrs)
                                )
                                break
                            push(node)
                            push(_EXIT)
                        elif nargs == 2:
                            b, a = args
                            nb = memo.get(b)
                            na = memo.get(a)
                            if na is not None and nb is not None:
                                memo[node] = (
                                    node
                                    if na is a and nb is b
                                    else _unchecked_call(node.op, (nb, na), node.attrs)
                                )
                                break
                            push(node)
                            push(_EXIT)
                            if nb is None and b is not a:
                                push(b)
                                push(_ENTER)
                            if na is not None:
                                break
                        else:
                            push(node)
                            push(_EXIT)
                            for a in args:
                                if a not in memo:
                                    push(a)
                                    push(_ENTER)
                            break
                        # ``a``: the last argument, not done
                        if type(a) is Call and type(a.op) is Op:
                            node = a
                            continue
                        push(a)
                        push(_ENTER)
                        break
                elif t is Call:
                    push(node)
                    push(_EXIT)
                    for a in node.args:
                        if a not in memo:
                            push(a)
                            push(_ENTER)
                    op = node.op
                    if type(op) is not Op and op not in memo:
                        push(op)
                        push(_ENTER)
                elif t in _LEAVES:
                    memo[node] = node  # for a var: it is used
                elif t is Let:
                    # The whole chain: decide the bindings innermost first, after the body.
                    while True:
                        push(node)
                        push(_DECIDE)
                        if functions is not None and type(node.value) is Function:
                            functions[node.var] = node.value
                        body = node.body
                        if type(body) is not Let or body in memo:
                            break
                        node = body
                    push(body)
                    push(_ENTER)
                elif t is Tuple:
                    push(node)
                    push(_EXIT)
                    for f in node.fields:
                        if f not in memo:
                            push(f)
                            push(_ENTER)
                elif t is TupleGetItem:
                    target = self._projection(node)
                    push(node)
                    if target is node or (
                        counter is not None and not counter("reduce a projection of a tuple")
                    ):
                        push(_EXIT)
                        target = node.tuple_value
                    else:
                        push(_ALIAS)
                    if target not in memo:
                        push(target)
                        push(_ENTER)
                elif t is If:
                    push(node)
                    push(_EXIT)
                    for child in (node.false_branch, node.true_branch, node.cond):
                        if child not in memo:
                            push(child)
                            push(_ENTER)
                elif t is Function:
                    push(node)
                    push(_EXIT)
                    if node.body not in memo:
                        push(node.body)
                        push(_ENTER)
                else:
                    raise TypeError(f"DeadCodeElimination cannot visit {t.__name__} {node!r}")
            elif state == _EXIT:
                if type(node) is Call:  # the common case, inlined
                    args = node.args
                    op = node.op
                    if type(op) is Op and len(args) == 1:
                        (a,) = args
                        na = memo[a]
                        memo[node] = node if na is a else _unchecked_call(op, (na,), node.attrs)
                        continue
                    new_args = tuple(map(lookup, args))
                    new_op = op if type(op) is Op else memo[op]
                    if new_op is op and new_args == args:
                        memo[node] = node
                    elif new_op is op:  # same op and attrs: nothing to check again
                        memo[node] = _unchecked_call(op, new_args, node.attrs)
                    else:
                        attrs = node.attrs
                        memo[node] = Call(new_op, new_args, attrs if attrs else None)
                else:
                    memo[node] = _rebuild(node, memo)
            elif state == _DECIDE:
                if (
                    node.var in memo
                    or (effects and effectful(node.value))
                    or (counter is not None and not counter(f"remove let %{node.var.name_hint}"))
                ):
                    push(node)
                    push(_BUILD)
                    value = node.value
                    if value not in memo:
                        push(value)
                        push(_ENTER)
                else:
                    memo[node] = memo[node.body]  # dead: the let is its body
            elif state == _BUILD:
                value = memo[node.value]
                body = memo[node.body]
                if value is node.value and body is node.body:
                    memo[node] = node
                else:
                    memo[node] = Let(node.var, value, body)
            else:  # _ALIAS
                memo[node] = memo[self.projected[node]]
        return memo[root]

    def _projection(self, item: TupleGetItem) -> Expr:
        """What ``item`` reduces to: a field of a tuple literal whose other fields are
        pure, through nested projections (``((a, b), c).0.1`` is ``b``); else ``item``."""
        projected = self.projected
        if item in projected:
            return projected[item]
        effectful = self.effectful
        work = [item]
        while work:
            node = work[-1]
            value = node.tuple_value
            if type(value) is TupleGetItem:
                if value not in projected:
                    work.append(value)
                    continue
                value = projected[value]
            target: Expr = node
            if type(value) is Tuple and node.index < len(value.fields):
                fields = value.fields
                index = node.index
                if not any(effectful(f) for i, f in enumerate(fields) if i != index):
                    target = fields[index]
                    if type(target) is TupleGetItem:
                        # The field may itself reduce: resolve it first.
                        if target not in projected:
                            work.append(target)
                            continue
                        target = projected[target]
            projected[node] = target
            work.pop()
        return projected[item]


_unchecked_call = Call._unchecked


def _rebuild(node: Expr, memo: dict[Expr, Expr]) -> Expr:
    """``node`` over the rebuilt forms of its children (itself when none changed)."""
    t = type(node)
    if t is Call:
        args = node.args
        new_args = tuple([memo[a] for a in args])
        op = node.op
        new_op = op if type(op) is Op else memo[op]
        if new_op is op:
            return node if new_args == args else _unchecked_call(op, new_args, node.attrs)
        attrs = node.attrs
        return Call(new_op, new_args, attrs if attrs else None)
    if t is Tuple:
        fields = node.fields
        new_fields = tuple([memo[f] for f in fields])
        return node if new_fields == fields else Tuple(new_fields)
    if t is TupleGetItem:
        value = memo[node.tuple_value]
        return node if value is node.tuple_value else TupleGetItem(value, node.index)
    if t is If:
        cond = memo[node.cond]
        true_branch = memo[node.true_branch]
        false_branch = memo[node.false_branch]
        if (
            cond is node.cond
            and true_branch is node.true_branch
            and false_branch is node.false_branch
        ):
            return node
        return If(cond, true_branch, false_branch)
    # Function
    body = memo[node.body]
    if body is node.body:
        return node
    return Function(node.params, body, node.ret_type, node.attrs)
