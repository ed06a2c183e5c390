"""Which expressions may have effects: the one effect analysis of the std passes.

**What "may have effects" means.** The only effects in the IR are the calls
of ops registered ``stateful`` (non-termination is not an effect, as in
TVM). Evaluating an expression *may have effects* when it may run such a
call: a call of an op runs it when the op is stateful, and runs its
arguments; a call of a function runs its callee, its arguments and then the
function's body; a tuple runs its fields, a projection its tuple, a ``let``
its value and its body, an ``if`` its condition and (either may run) both
branches. Vars, constants, global vars and ops run nothing, and neither does
a function literal: making a closure does not enter its body.

**What is known about a callee** decides the calls of functions. Each pass
chooses how far the analysis looks (:class:`Callees`):

- ``KNOWN`` looks into every callee it can name: a function literal, a var
  ``let``-bound to a function literal, a global function of the module. A
  call of any other function value (a parameter, a call's result) may have
  effects, and so does a call that reaches itself (recursion): safe answers
  when the body is unknown. The most precise choice (DeadCodeElimination).
- ``LITERALS`` looks into function literals only.
- ``NONE`` looks into nothing: every call of a non-op may have effects.

**When nothing has effects** (:class:`World`): under ``REGISTRY`` the
analysis answers "no effects" for everything when no registered op is
stateful; under ``MODULE`` also when the module calls no stateful op
anywhere (a closed world: code that calls none cannot reach one, and
function values passed in from outside are assumed not to); under ``OPEN``
it always looks.

**Cost.** Answers are memoized per node and computed bottom-up with an
explicit stack (no Python recursion, any depth); a walk stops at nodes
already known and at function literals, so any number of queries over one
program costs one linear walk in total (each callee body is walked once, not
once per call).
"""

from __future__ import annotations

import enum
import weakref
from typing import TYPE_CHECKING

from irpass.ir import Call, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var, list_ops

if TYPE_CHECKING:
    from irpass.ir import Expr, IRModule

__all__ = ["Callees", "EffectAnalysis", "World", "any_stateful_op", "calls_stateful_op"]


class Callees(enum.Enum):
    """Which function bodies a call is looked into (see the module docstring)."""

    KNOWN = "known"
    LITERALS = "literals"
    NONE = "none"


class World(enum.Enum):
    """When the analysis knows without looking that nothing has effects."""

    REGISTRY = "registry"
    MODULE = "module"
    OPEN = "open"


def any_stateful_op() -> bool:
    """Whether some registered op is ``stateful`` (if none is, nothing has effects)."""
    return any(Op.get(name).stateful for name in list_ops())


def calls_stateful_op(mod: IRModule) -> bool:
    """Whether some function of ``mod`` calls a stateful op (closures included)."""
    if not any_stateful_op():
        return False
    seen: set[Expr] = set()
    for _gv, func in mod.items():
        stack: list[Expr] = [func]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if type(node) is Call and type(node.op) is Op and node.op.stateful:
                return True
            stack.extend(node.children())
    return False


class EffectAnalysis:
    """Which expressions of a module may have effects (see the module docstring).

    ``mod`` holds the global functions a ``KNOWN`` analysis looks into (without
    it, calls of global functions may have effects) and the code a ``MODULE``
    world scans; it is held weakly, so a cache keyed by the module may hold
    the analysis. One analysis serves any number of queries on that module.
    """

    def __init__(
        self,
        mod: IRModule | None = None,
        callees: Callees = Callees.KNOWN,
        world: World = World.REGISTRY,
    ) -> None:
        if world is World.OPEN:
            nothing = False
        elif world is World.MODULE and mod is not None:
            nothing = not calls_stateful_op(mod)
        else:
            nothing = not any_stateful_op()
        #: True when nothing may have effects (``may_have_effects`` is always false).
        self.pure = nothing
        self.callees = callees
        self._mod = weakref.ref(mod) if mod is not None and callees is Callees.KNOWN else None
        #: Node -> whether it may have effects, for every node answered so far.
        self.memo: dict[Expr, bool] = {}
        #: Let vars bound to function literals (``KNOWN``): calls through them look
        #: into the literal. Filled as lets are met; a caller walking the program
        #: top-down may record its lets here first.
        self.let_functions: dict[Var, Function] = {}

    def may_have_effects(self, root: Expr) -> bool:
        """Whether evaluating ``root`` may run a stateful op."""
        if self.pure:
            return False
        memo = self.memo
        known = memo.get(root)
        if known is not None:
            return known
        dependencies = self._dependencies
        # Nodes whose dependencies are being answered. Meeting one again is a cycle
        # (a recursive call), which may have effects.
        pending: dict[Expr, tuple[Expr, ...]] = {}
        stack = [root]
        while stack:
            node = stack[-1]
            if node in memo:
                stack.pop()
                continue
            deps = pending.get(node)
            if deps is None:
                own, deps = dependencies(node)
                if own or not deps:
                    memo[node] = own
                    stack.pop()
                    continue
                pending[node] = deps
                for d in deps:
                    if d not in memo and d not in pending:
                        stack.append(d)
                continue
            stack.pop()
            del pending[node]
            # A dependency still pending is on a cycle: no answer yet, so effects.
            memo[node] = any(memo.get(d, True) for d in deps)
        return memo[root]

    def _dependencies(self, node: Expr) -> tuple[bool, tuple[Expr, ...]]:
        """``(own, deps)``: ``node`` may have effects iff ``own`` or one of ``deps`` may."""
        t = type(node)
        if t is Call:
            op = node.op
            args = node.args
            top = type(op)
            if top is Op:
                return op.stateful, args
            callees = self.callees
            if top is Function and callees is not Callees.NONE:
                return False, (*args, op.body)
            if callees is Callees.KNOWN:
                if top is GlobalVar:
                    mod = self._mod() if self._mod is not None else None
                    if mod is not None and op.name_hint in mod:
                        return False, (*args, mod[op.name_hint].body)
                elif top is Var and op in self.let_functions:
                    return False, (*args, self.let_functions[op].body)
            return True, ()  # an unknown function value
        if t is Tuple:
            return False, node.fields
        if t is TupleGetItem:
            return False, (node.tuple_value,)
        if t is Let:
            if type(node.value) is Function:
                self.let_functions[node.var] = node.value
            return False, (node.value, node.body)
        if t is If:
            return False, (node.cond, node.true_branch, node.false_branch)
        return False, ()  # vars, constants, global vars, ops, function literals
