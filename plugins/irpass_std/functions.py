"""LambdaLift, Inline and RemoveUnusedFunctions: passes over a module's functions.

**LambdaLift** (TVM's ``LambdaLift``) turns closures into global functions. A
closure is a ``Function`` inside another function's body without
``Primitive=1``. Our IR has no partial application (TVM builds a closure
object of the lifted global and its captured values), so a closure is lifted
when every use of it is a direct call: ``fn(...){...}(args)``, or
``let %f = fn(...){...}; ... %f(args)`` with ``%f`` used only as the callee
of calls (also inside its own body: recursion). It becomes
``@lifted_<outer>_<k>`` whose leading params are the vars it captures (fresh
copies of them, annotated with their types) followed by its own params; the
binding disappears and each call becomes ``@lifted_<outer>_<k>(captured...,
args)``. The captured vars of a closure are its free vars, except the vars of
lifted closures, which are replaced by the captured vars of the closures they
name (calling ``@lifted`` needs those at the call site). A closure that
escapes (returned, stored in a tuple, passed as an argument, bound to a var
used as a value) stays where it is; closures nested in it are still lifted.
A lifted global gets a ``ret_type`` annotation (its body's type), so
recursive ones type check. Types come from running type inference on the
module first.

**Inline** (TVM's ``Inline``) replaces each call ``@f(args)`` of a global
function whose ``Function`` has attr ``Inline=1`` by a copy of ``@f``'s body
with the arguments substituted for the params (beta reduction). Every var
bound in the copy (lets, closure params) is fresh, so vars stay unique. When
the module calls a stateful op anywhere, an argument whose evaluation may
have effects is bound with a ``let`` before the body instead of substituted,
which keeps call-by-value evaluation (once, before the body). Inline
functions calling Inline functions are inlined bottom-up; Inline functions
that are recursive (directly or through other Inline functions) are left as
they are and reported with a warning on ``ctx.diag``. Afterwards, an Inline
function that nothing references any more is removed (``@main`` never is).
An Inline function with symbolic param types (``%y: Tensor[(k, 4), float32]``)
is instantiated at each call as type inference does (the module is typed
first, only then): each size variable that is a dim of its own takes the
argument's dim, and the copy has it replaced in its attributes
(``reshape(newshape=[k * 4])``) and type annotations. A call whose other
symbolic dims do not come out structurally equal to the argument's (``k * 2``
given ``m``, ``k`` twice given ``n`` and ``m``) is left as a call with a
warning: the call checks those at run time, the inlined copy would not.

**RemoveUnusedFunctions(entry_functions=None)** keeps the functions reachable
from the entry functions (default ``["main"]``) through ``GlobalVar``
references (calls or values), and removes the rest.

All three walk each function once with explicit stacks or the iterative
``ExprMutator`` (linear, any depth), and return the input module when they
change nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from irpass.ir import (
    Call,
    Constant,
    ExprMutator,
    Function,
    FuncType,
    GlobalVar,
    IRModule,
    Let,
    Op,
    TensorType,
    TupleType,
    Var,
    infer_type,
)
from irpass.ir.dims import Dim, DimExpr, SizeVar, free_vars, substitute
from irpass.ir.gcpause import gc_paused
from irpass.ir.types import substitute_sizes
from irpass.transform import ConfigOption, module_pass
from irpass.transform.context import RewriteCounter

from .effects import EffectAnalysis
from .normal_form import closure_free_vars, effects_of, value_children

if TYPE_CHECKING:
    from irpass.ir import Expr, Type
    from irpass.transform import PassContext

__all__ = ["CONFIG_OPTIONS", "LambdaLift", "Inline", "RemoveUnusedFunctions"]

CONFIG_OPTIONS: list[ConfigOption] = []

_LEAVES = frozenset({Var, GlobalVar, Constant, Op})


def _attr(func: Function, key: str) -> bool:
    attrs = func.attrs
    return bool(attrs) and bool(attrs.get(key))


def _children(node: Expr) -> tuple[Expr, ...]:
    """The sub-expressions of ``node`` that are uses (binders excluded), in evaluation
    order, a closure's body included."""
    return (node.body,) if type(node) is Function else value_children(node)


def _global_refs(func: Function) -> dict[str, None]:
    """The names of the global functions ``func`` refers to, in order of first reference."""
    refs: dict[str, None] = {}
    seen: set[Expr] = set()
    stack: list[Expr] = [func.body]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if type(node) is GlobalVar:
            refs[node.name_hint] = None
        else:
            stack.extend(_children(node))
    return refs


# -- LambdaLift --------------------------------------------------------------------------


class _LiftAnalysis:
    """Which closures of one global function can be lifted, and what each captures."""

    def __init__(self, func: Function, counter: RewriteCounter | None = None) -> None:
        self.funcs: list[Function] = []  # nested closures, definitions before uses
        self.escapes: set[Function] = set()
        self.var_escapes: set[Var] = set()
        self.let_vars: dict[Function, list[Var]] = {}
        self.order: dict[Var, int] = {p: i for i, p in enumerate(func.params)}
        self._walk(func)
        self.liftable: list[Function] = [
            f
            for f in self.funcs
            if f not in self.escapes
            and not any(v in self.var_escapes for v in self.let_vars.get(f, ()))
            and not _sizes_from_outside(f)
        ]
        if counter is not None:
            # a closure the debug counter refuses stays in place, like an escaping one
            self.liftable = [f for f in self.liftable if counter(self._site(f))]
        lifted = set(self.liftable)
        #: the lifted closure each let var names
        self.closure_of: dict[Var, Function] = {
            v: f for f in self.liftable for v in self.let_vars.get(f, ())
        }
        self.captured: dict[Function, list[Var]] = {}
        if not lifted:
            return
        table = closure_free_vars(func)
        order = self.order
        for f in self.liftable:  # definitions first: closures f calls are done already
            own = self.let_vars.get(f, ())
            needed: set[Var] = set()
            for v in table[f]:
                if v in own:
                    continue
                callee = self.closure_of.get(v)
                if callee is None:
                    needed.add(v)
                else:
                    needed.update(self.captured[callee])
            self.captured[f] = sorted(needed, key=lambda v: (order.get(v, len(order)), v.name_hint))

    def _site(self, closure: Function) -> str:
        names = self.let_vars.get(closure)
        return f"lift the closure %{names[0].name_hint}" if names else "lift a closure"

    def _walk(self, func: Function) -> None:
        # Pre-order, a let's value before its body, so a closure is met before the
        # closures that call it through its let var.
        order = self.order
        seen: set[Expr] = set()
        stack: list[Expr] = [func.body]
        self._note_value(func.body)
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            t = type(node)
            if t is Call:
                op = node.op
                # The callee position is the one use that does not make a closure escape.
                for a in node.args:
                    self._note_value(a)
                kids = (op, *node.args)
            elif t is Let:
                order.setdefault(node.var, len(order))
                value = node.value
                if type(value) is Function:
                    self.let_vars.setdefault(value, []).append(node.var)
                else:
                    self._note_value(value)
                self._note_value(node.body)
                kids = (value, node.body)
            elif t is Function:
                if _attr(node, "Primitive"):
                    continue  # never lifted, never entered (as in TVM)
                self.funcs.append(node)
                for p in node.params:
                    order.setdefault(p, len(order))
                self._note_value(node.body)
                kids = (node.body,)
            else:
                kids = _children(node)
                for k in kids:
                    self._note_value(k)
            for k in reversed(kids):
                if type(k) not in _LEAVES and k not in seen:
                    stack.append(k)

    def _note_value(self, expr: Expr) -> None:
        """``expr`` is used as a value (not as a callee, not as a let's bound function)."""
        t = type(expr)
        if t is Function:
            self.escapes.add(expr)
        elif t is Var:
            self.var_escapes.add(expr)


class _LiftRewriter(ExprMutator):
    """Rewrites calls of lifted closures into calls of their globals and drops their lets.

    For the body of a lifted closure (``fresh=True``) every var bound inside it
    is renamed too: a node of the closure can also be shared with the function
    it was lifted from, and a var must stay bound in one place only.
    """

    def __init__(self, analysis: _LiftAnalysis, globals_: dict[Function, GlobalVar],
                 subst: dict[Var, Var], fresh: bool) -> None:
        self.a = analysis
        self.globals = globals_
        self.fresh = fresh
        self.memo.update(subst)  # captured vars -> the lifted function's params

    def _lifted(self, callee: Expr) -> Function | None:
        if type(callee) is Var:
            return self.a.closure_of.get(callee)
        if type(callee) is Function and callee in self.globals:
            return callee
        return None

    def _rename(self, v: Var) -> Var:
        new = Var(v.name_hint, v.type_annotation)
        self.memo[v] = new
        return new

    def visit_call(self, call: Call) -> Expr:
        target = self._lifted(call.op)
        if target is None:
            return super().visit_call(call)
        visit = self.visit
        captured = [visit(v) for v in self.a.captured[target]]
        return Call(self.globals[target], captured + [visit(a) for a in call.args])

    def visit_let_binding(self, let: Let) -> tuple[Var, Expr] | None:
        if let.var in self.a.closure_of:
            return None  # every use became a call of the global
        if self.fresh:
            var = self._rename(let.var)  # before the value: a letrec function uses it
            return var, self.visit(let.value)
        return super().visit_let_binding(let)

    def visit_function(self, func: Function) -> Expr:
        if _attr(func, "Primitive") or func in self.globals:
            return func
        if self.fresh:
            params = [self._rename(p) for p in func.params]
            return Function(params, self.visit(func.body), func.ret_type, func.attrs)
        return super().visit_function(func)


def _lift_function(
    name: str, func: Function, taken: set[str], counter: RewriteCounter | None = None
) -> tuple[Function, list[tuple[GlobalVar, Function]]]:
    """``func`` with its liftable closures lifted, and the new globals ``(name, function)``;
    ``counter(site)`` (the debug counter), if given, is asked before each closure is lifted."""
    analysis = _LiftAnalysis(func, counter)
    if not analysis.liftable:
        return func, []
    globals_: dict[Function, GlobalVar] = {}
    k = 0
    for f in analysis.liftable:
        while f"lifted_{name}_{k}" in taken:
            k += 1
        gname = f"lifted_{name}_{k}"
        taken.add(gname)
        globals_[f] = GlobalVar(gname)
    lifted: list[tuple[GlobalVar, Function]] = []
    for f in analysis.liftable:
        captured = {v: Var(v.name_hint, _type_of(v)) for v in analysis.captured[f]}
        own = {p: Var(p.name_hint, p.type_annotation) for p in f.params}
        body = _LiftRewriter(analysis, globals_, {**captured, **own}, fresh=True).visit(f.body)
        ret = f.ret_type if f.ret_type is not None else f.checked_type.ret_type
        params = list(captured.values()) + list(own.values())
        lifted.append((globals_[f], Function(params, body, ret, f.attrs)))
    body = _LiftRewriter(analysis, globals_, {}, fresh=False).visit(func.body)
    return Function(func.params, body, func.ret_type, func.attrs), lifted


def _type_of(v: Var) -> Type:
    return v.type_annotation if v.type_annotation is not None else v.checked_type


def _type_size_vars(ty: Type | None, lone: set[str] | None, used: set[str]) -> None:
    """Add the size variables of ``ty`` to ``used`` (and those that are a dim of their own
    to ``lone``, if given)."""
    stack = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TensorType):
            if t.is_static:
                continue
            for d in t.shape:
                if isinstance(d, DimExpr):
                    used.update(free_vars(d))
                    if lone is not None and type(d) is SizeVar:
                        lone.add(d.name)
        elif isinstance(t, TupleType):
            stack.extend(t.fields)
        elif isinstance(t, FuncType):
            stack.extend((*t.arg_types, t.ret_type))


def _attr_size_vars(value: Any, used: set[str]) -> None:
    if isinstance(value, DimExpr):
        used.update(free_vars(value))
    elif isinstance(value, (tuple, list)):
        for v in value:
            _attr_size_vars(v, used)


def _sizes_from_outside(closure: Function) -> bool:
    """Whether ``closure`` uses a size variable (in an attribute or a type annotation) that
    no param of its own has as a dim of its own: one bound where the closure was made,
    which a lifted global function would have nothing to bind with. Such a closure stays.
    (One its params do bind is fine: the lifted function binds it from them.)"""
    lone: set[str] = set()
    used: set[str] = set()
    for p in closure.params:
        _type_size_vars(p.type_annotation, lone, used)
    _type_size_vars(closure.ret_type, None, used)
    seen: set[Expr] = set()
    stack: list[Expr] = [closure.body]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        t = type(node)
        if t is Call and type(node.op) is Op and node.attrs:
            for value in node.attrs.values():
                _attr_size_vars(value, used)
        elif t is Let:
            _type_size_vars(node.var.type_annotation, None, used)
        elif t is Function:
            for p in node.params:
                _type_size_vars(p.type_annotation, None, used)
            _type_size_vars(node.ret_type, None, used)
        stack.extend(_children(node))
    return not used <= lone


def _has_closure(func: Function) -> bool:
    """Whether ``func`` contains a non-primitive function (a candidate for lifting)."""
    seen: set[Expr] = set()
    stack: list[Expr] = [func.body]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if type(node) is Function:
            if not _attr(node, "Primitive"):
                return True
            continue
        stack.extend(_children(node))
    return False


@module_pass(opt_level=0, name="LambdaLift")
def LambdaLift(mod: IRModule, ctx: PassContext) -> IRModule:
    """Lift every closure that is only called directly into a new global function.

    See the module docstring for the rules; escaping closures stay in place.
    Returns ``mod`` itself when there is nothing to lift.
    """
    todo = [gv for gv, f in mod.items() if not _attr(f, "Primitive") and _has_closure(f)]
    if not todo:
        return mod
    counter = ctx.rewrite_counter()
    with gc_paused():
        typed = infer_type(mod)  # captured vars need their types as param annotations
        taken = {gv.name_hint for gv in mod.get_global_vars()}
        out: dict[GlobalVar, Function] = {}
        changed = False
        for gv, func in mod.items():
            out[gv] = func
            if gv in todo:
                new, lifted = _lift_function(gv.name_hint, typed[gv.name_hint], taken, counter)
                if lifted:
                    changed = True
                    out[gv] = new
                    out.update(lifted)
    return IRModule(out) if changed else mod


# -- Inline ----------------------------------------------------------------------------


class _Copier(ExprMutator):
    """A copy of a function body with params replaced and every bound var fresh; with
    ``sizes``, the callee's size variables replaced by the call's dims in the attrs and
    type annotations of the copy."""

    def __init__(self, subst: dict[Var, Expr], sizes: dict[str, Dim] | None = None) -> None:
        self.memo.update(subst)
        self.sizes = sizes

    def _fresh(self, v: Var) -> Var:
        ann = v.type_annotation
        if self.sizes and ann is not None:
            ann = substitute_sizes(ann, self.sizes)
        new = Var(v.name_hint, ann)
        self.memo[v] = new
        return new

    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        sizes = self.sizes
        if not sizes or type(call.op) is not Op or not call.attrs:
            return new
        attrs = {k: _substitute_attr(v, sizes) for k, v in call.attrs.items()}
        if all(attrs[k] is v for k, v in call.attrs.items()):
            return new
        return Call(new.op, new.args, attrs)

    def visit_let_binding(self, let: Let) -> tuple[Var, Expr] | None:
        var = self._fresh(let.var)  # before the value: a letrec function calls itself
        return var, self.visit(let.value)

    def visit_function(self, func: Function) -> Expr:
        params = [self._fresh(p) for p in func.params]
        ret = func.ret_type
        if self.sizes and ret is not None:
            ret = substitute_sizes(ret, self.sizes)
        return Function(params, self.visit(func.body), ret, func.attrs)


def _substitute_attr(value: Any, sizes: dict[str, Dim]) -> Any:
    """An attr value with size variables replaced (itself when it has none)."""
    if isinstance(value, DimExpr):
        return substitute(value, sizes)
    if isinstance(value, (tuple, list)) and value:
        new = [_substitute_attr(v, sizes) for v in value]
        if any(n is not v for n, v in zip(new, value, strict=True)):
            return type(value)(new)
    return value


def _symbolic_params(func: Function) -> bool:
    """Whether a param type of ``func`` has a symbolic dim."""
    stack: list = [p.type_annotation for p in func.params]
    while stack:
        t = stack.pop()
        if isinstance(t, TensorType):
            if not t.is_static:
                return True
        elif isinstance(t, TupleType):
            stack.extend(t.fields)
        elif isinstance(t, FuncType):
            stack.extend((*t.arg_types, t.ret_type))
    return False


def _instantiation(callee: Function, arg_types: list[Type]) -> dict[str, Dim] | None:
    """The callee's size variables as the call's argument types give them (each lone
    size variable from its first dim), or None when some other dim would need the run-time
    check the call boundary makes (a compound or repeated dim, a static param dim, that is
    not structurally the argument's): the inlined copy would lose that check."""
    sizes: dict[str, Dim] = {}
    pending: list[tuple[Dim, Dim]] = []
    stack = list(zip([p.type_annotation for p in callee.params], arg_types, strict=True))
    while stack:
        want, got = stack.pop()
        if isinstance(want, TensorType) and isinstance(got, TensorType):
            if len(want.shape) != len(got.shape):
                return None
            for w, g in zip(want.shape, got.shape, strict=True):
                if type(w) is SizeVar and w.name not in sizes:
                    sizes[w.name] = g
                else:
                    pending.append((w, g))
        elif isinstance(want, TupleType) and isinstance(got, TupleType):
            if len(want.fields) != len(got.fields):
                return None
            stack.extend(zip(want.fields, got.fields, strict=True))
        elif want != got:
            return None  # a function-typed param: only as it is
    for w, g in pending:
        if substitute(w, sizes) != g:
            return None
    return sizes


class _Inliner(ExprMutator):
    """Replaces calls of the functions in ``bodies`` by copies of their bodies."""

    def __init__(self, bodies: dict[str, Function], effects: EffectAnalysis,
                 symbolic: set[str] | None = None, counter: RewriteCounter | None = None) -> None:
        self.bodies = bodies
        self.effects = effects
        self.counter = counter  # asked before each call is inlined (None: no debug counter)
        self.count = 0
        # The Inline functions with symbolic param types (their calls carry types then)
        # and the calls left as they are because inlining would drop a run-time check.
        self.symbolic = symbolic or set()
        self.kept: list[str] = []

    def visit_call(self, call: Call) -> Expr:
        op = call.op
        callee = self.bodies.get(op.name_hint) if type(op) is GlobalVar else None
        if callee is None or len(callee.params) != len(call.args):
            return super().visit_call(call)
        sizes = None
        if op.name_hint in self.symbolic:
            arg_types = [a._checked_type for a in call.args]
            if None not in arg_types:
                sizes = _instantiation(callee, arg_types)
            if sizes is None:
                self.kept.append(op.name_hint)
                return super().visit_call(call)
        if self.counter is not None and not self.counter(f"inline @{op.name_hint}"):
            return super().visit_call(call)
        self.count += 1
        subst: dict[Var, Expr] = {}
        lets: list[tuple[Var, Expr]] = []
        for p, arg in zip(callee.params, call.args, strict=True):
            new_arg = self.visit(arg)
            if self.effects.may_have_effects(arg):
                # Call by value: evaluate it once, before the body, as the call did.
                fresh = Var(p.name_hint, p.type_annotation)
                lets.append((fresh, new_arg))
                subst[p] = fresh
            else:
                subst[p] = new_arg
        body = _Copier(subst, sizes).visit(callee.body)
        for var, value in reversed(lets):
            body = Let(var, value, body)
        return body

    def visit_function(self, func: Function) -> Expr:
        if _attr(func, "Primitive"):
            return func
        return super().visit_function(func)


def _inline_order(mod: IRModule, inline: set[str]) -> tuple[list[str], list[str]]:
    """The Inline functions callees first, and those on a cycle of Inline calls.

    Edges go from an Inline function to the Inline functions it refers to.
    Tarjan's strongly connected components, with an explicit stack.
    """
    edges = {n: [m for m in _global_refs(mod[n]) if m in inline] for n in inline}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    scc_stack: list[str] = []
    order: list[str] = []
    recursive: list[str] = []
    for start in sorted(inline):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                scc_stack.append(node)
                on_stack.add(node)
            succ = edges[node]
            if i < len(succ):
                work.append((node, i + 1))
                nxt = succ[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = scc_stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1 or node in edges[node]:
                    recursive.extend(sorted(comp))
                else:
                    order.append(node)
    return order, recursive


@module_pass(opt_level=1, name="Inline")
def Inline(mod: IRModule, ctx: PassContext) -> IRModule:
    """Inline the calls of global functions marked ``Inline=1``; drop the ones left unused.

    See the module docstring. Returns ``mod`` itself when there is nothing to
    inline or remove.
    """
    inline = {gv.name_hint for gv, f in mod.items() if _attr(f, "Inline")}
    if not inline:
        return mod
    order, recursive = _inline_order(mod, inline)
    if recursive:
        ctx.diag.warning(
            "not inlining recursive functions marked Inline=1 (left as calls): "
            + ", ".join("@" + n for n in recursive)
        )
    # An Inline function with symbolic param types is instantiated at each call from the
    # argument types: the module is typed for those (only then).
    symbolic = {n for n in inline if _symbolic_params(mod[n])}
    if symbolic:
        mod = infer_type(mod)
    effects = effects_of(mod)
    counter = ctx.rewrite_counter()
    bodies: dict[str, Function] = {}  # the Inline functions, their own calls inlined
    new_funcs: dict[str, Function] = {}
    changed = False
    kept: list[str] = []
    with gc_paused():
        for name in order:  # callees first: their bodies are final when copied
            func = mod[name]
            inliner = _Inliner(bodies, effects, symbolic, counter)
            body = inliner.visit(func.body)
            kept += inliner.kept
            if body is not func.body:
                func = Function(func.params, body, func.ret_type, func.attrs)
                changed = True
            bodies[name] = func
        for gv, func in mod.items():
            name = gv.name_hint
            if name in bodies:
                new_funcs[name] = bodies[name]
                continue
            if not _attr(func, "Primitive"):
                inliner = _Inliner(bodies, effects, symbolic, counter)
                body = inliner.visit(func.body)
                kept += inliner.kept
                if body is not func.body:
                    func = Function(func.params, body, func.ret_type, func.attrs)
                    changed = True
            new_funcs[name] = func
    if kept:
        ctx.diag.warning(
            "not inlining calls whose arguments do not instantiate the symbolic param types "
            "structurally (the call checks them at run time; left as calls): "
            + ", ".join(sorted({"@" + n for n in kept}))
        )
    # Remove the inlined functions nothing refers to any more: keep what the
    # other functions reach.
    candidates = {n for n in bodies if n != "main"}
    reached = _kept_functions(new_funcs, [n for n in new_funcs if n not in candidates], counter)
    if not changed and len(reached) == len(new_funcs):
        return mod
    return IRModule({mod.get_global_var(n): f for n, f in new_funcs.items() if n in reached})


def _kept_functions(
    funcs: dict[str, Function], roots: Sequence[str], counter: RewriteCounter | None
) -> set[str]:
    """The names of the functions of ``funcs`` to keep: those ``roots`` reach through
    ``GlobalVar`` references, and those whose removal ``counter`` refuses (with what they
    reach). The counter is asked about the others referrers first, so a function kept
    that way keeps the ones it refers to before they are asked about."""
    reached = set(roots)
    todo = list(roots)

    def spread() -> None:
        while todo:
            for ref in _global_refs(funcs[todo.pop()]):
                if ref not in reached and ref in funcs:
                    reached.add(ref)
                    todo.append(ref)

    spread()
    if counter is not None:
        for name in _referrers_first(funcs, [n for n in funcs if n not in reached]):
            if name not in reached and not counter(f"remove @{name}"):
                reached.add(name)
                todo.append(name)
                spread()
    return reached


def _referrers_first(funcs: dict[str, Function], names: list[str]) -> list[str]:
    """``names`` ordered so that a function comes before those it refers to (but along a
    cycle of references); deterministic: a reversed depth-first post-order, iterative."""
    among = set(names)
    post: list[str] = []
    seen: set[str] = set()
    for start in names:
        if start in seen:
            continue
        seen.add(start)
        work = [(start, iter([r for r in _global_refs(funcs[start]) if r in among]))]
        while work:
            name, refs = work[-1]
            nxt = next((r for r in refs if r not in seen), None)
            if nxt is None:
                work.pop()
                post.append(name)
                continue
            seen.add(nxt)
            work.append((nxt, iter([r for r in _global_refs(funcs[nxt]) if r in among])))
    return post[::-1]


# -- RemoveUnusedFunctions ---------------------------------------------------------------


@module_pass(opt_level=1, name="RemoveUnusedFunctions")
class RemoveUnusedFunctions:
    """Remove the global functions not reachable from ``entry_functions``.

    ``entry_functions`` is a list of function names (or ``GlobalVar``), by
    default ``["main"]``. A function is reachable when an entry function
    refers to it, directly or through reachable functions (by a call or as a
    value). A name that is not a function of the module is an error listing
    the module's functions.
    """

    def __init__(self, entry_functions: Sequence[str | GlobalVar] | None = None) -> None:
        if entry_functions is None:
            names = ["main"]
        elif isinstance(entry_functions, (str, GlobalVar)):
            raise TypeError(
                "RemoveUnusedFunctions: entry_functions must be a list of function names, "
                f"got {entry_functions!r} (did you mean [{entry_functions!r}]?)"
            )
        else:
            names = []
            for e in entry_functions:
                if isinstance(e, GlobalVar):
                    e = e.name_hint
                if not isinstance(e, str):
                    raise TypeError(
                        "RemoveUnusedFunctions: entry_functions must hold function names, "
                        f"got {type(e).__name__} {e!r}"
                    )
                names.append(e)
        self.entry_functions: list[str] = names

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """``mod`` without its unreachable functions (``mod`` itself if all are reachable)."""
        missing = [n for n in self.entry_functions if n not in mod]
        if missing:
            have = ", ".join("@" + gv.name_hint for gv in mod.get_global_vars()) or "none"
            raise ValueError(
                "RemoveUnusedFunctions: entry function(s) "
                + ", ".join("@" + n for n in missing)
                + f" not in the module; its functions are: {have}"
            )
        if len(set(self.entry_functions)) == len(mod):  # every function is an entry
            return mod
        funcs = {gv.name_hint: f for gv, f in mod.items()}
        reached = _kept_functions(funcs, self.entry_functions, ctx.rewrite_counter())
        if len(reached) == len(mod):
            return mod
        return IRModule({gv: f for gv, f in mod.items() if gv.name_hint in reached})
