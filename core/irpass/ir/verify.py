"""The verifier behind ``verify_each``: well-formedness and types of a module, checked
again after every pass at the cost of what the pass changed.

:class:`Verifier` remembers every node it has checked, with its type. Nodes are
immutable, so a checked node stays correct wherever a later module reuses it: a pass
that changed three calls of a 10,000-node function leaves three new calls (and the
nodes above them) to check, not 10,000. For one module it

* skips a function that is a checked function itself (passes keep the functions they
  leave alone);
* walks a changed function from its root down to the checked nodes, collecting the
  new ones, and checks their scoping: no variable bound twice among them, every
  variable they use bound around the use. A checked node stands for no free
  variable, which holds while the function keeps its params; a function whose params
  changed is checked whole by :func:`~irpass.ir.well_formed`;
* takes the types of a module that type inference made (``InferType``'s result, a
  module an importer marked typed with :func:`~irpass.ir.type_infer.mark_typed`) as
  they are; otherwise
* infers the types of the new nodes from the checked types of the nodes they use
  (the type inference of :func:`~irpass.ir.infer_type`, which stops at the checked
  nodes), and compares them with the ``checked_type`` a pass may have put on a node
  it built: a node that carries a type it does not have is reported;
* when a function's type differs from the type the module's previous version of it
  had (a pass changed a signature), checks the whole module again, callers included.

Like :func:`~irpass.ir.infer_type` it writes the types it inferred onto the new nodes
that carry none (types are caches; nothing else of the module changes), and a module
whose functions all carry their return types it marks as typed, so the ``InferType``
that the next pass requires returns it at once: checking after each pass then replaces
type inference rather than adding to it. Problems raise :class:`irpass.TypeInferenceError` or
:class:`irpass.WellFormedError` naming the function and the expression.
"""

from __future__ import annotations

from ..errors import TypeInferenceError, WellFormedError
from .describe import describe
from .expr import Expr
from .module import IRModule
from .nodes import Call, Function, Let, Var
from .op import Op
from .type_infer import _TYPED_MODULES, _Inferrer, _set_checked_type
from .types import Type
from .well_formed import well_formed

__all__ = ["Verifier"]


class Verifier:
    """Checks modules one after another, each at the cost of what is new in it."""

    def __init__(self) -> None:
        # every checked node -> its type (a strong reference: ids must stay unique)
        self._types: dict[Expr, Type] = {}
        self._last: IRModule | None = None
        # the function types of the last module checked, by global name
        self._signatures: dict[str, Type] = {}
        self._params: dict[str, tuple[Var, ...]] = {}
        # the inference's memo of op-call types, kept from one module to the next: a pass
        # that rebuilds a region (FuseOps, a rewrite near the inputs) makes new nodes
        # with the types of old ones, which then cost a lookup each
        self._memo = _Inferrer(None)

    def clear(self) -> None:
        """Forget every checked node (the next module is checked whole)."""
        self._types.clear()
        self._last = None
        self._signatures.clear()
        self._params.clear()
        self._memo = _Inferrer(None)

    def check(self, mod: IRModule) -> None:
        """Check ``mod``; raise ``TypeInferenceError``/``WellFormedError`` if it is
        ill-formed or ill-typed."""
        if mod is self._last:
            return
        types = self._types
        changed = [(gv, f) for gv, f in mod.items() if f not in types]
        if not changed and len(mod) == len(self._signatures):
            self._last = mod
            return
        complete = self._check_functions(mod, changed)
        signatures = {gv.name_hint: types[f] for gv, f in mod.items()}
        if self._signatures and any(
            self._signatures.get(name, ty) != ty for name, ty in signatures.items()
        ):
            complete = False
            # a signature changed: its callers, unchanged as they may be, must agree
            report = well_formed(mod)
            if not report:
                raise WellFormedError(str(report))
            inferrer = _Inferrer(mod, keep=False)
            for _gv, func in mod.items():
                inferrer.run(func)
        if complete and all(
            gv._checked_type is None or gv._checked_type == types[f] for gv, f in mod.items()
        ):
            for gv, f in mod.items():
                _set_checked_type(gv, types[f])
            _TYPED_MODULES.add(mod)
        self._signatures = signatures
        self._params = {gv.name_hint: f.params for gv, f in mod.items()}
        self._last = mod

    def _check_functions(self, mod: IRModule, changed: list) -> bool:
        """Check the changed functions; return whether every function met carries its
        return type (so the module is typed as InferType would leave it)."""
        types = self._types
        inferrer = _Inferrer(mod, keep=False)
        memo = self._memo
        # the ids in rel_hits stay valid: the checked nodes hold their ops and attrs
        inferrer.rel_hits, inferrer.rel_keep = memo.rel_hits, memo.rel_keep
        inferrer.rel_results, inferrer.attr_kinds = memo.rel_results, memo.attr_kinds
        inferrer.const_types = memo.const_types
        seeded = inferrer.types
        new_nodes: list[tuple[str, Expr]] = []
        complete = True
        for gv, func in changed:
            fresh, annotated = self._new_nodes(func, seeded)
            complete = complete and annotated
            if self._params.get(gv.name_hint, func.params) != func.params:
                # checked nodes may use the params the function had before
                report = well_formed(func, mod)
                if report.problems:
                    raise WellFormedError(str(report))
            else:
                _check_scopes(gv.name_hint, func, fresh)
            new_nodes.extend((gv.name_hint, node) for node in fresh)
        if mod in _TYPED_MODULES and all(n._checked_type is not None for _, n in new_nodes):
            # typed by type inference (InferType's result, an importer's mark_typed): the
            # types on the nodes are the inferred ones
            hits = memo.rel_hits
            for _name, node in new_nodes:
                ty = types[node] = node._checked_type
                if type(node) is Call and type(node.op) is Op:
                    # the inference's memo by identity, as if it had typed the call: a
                    # later pass's copy of it (FuseOps copies every call into its
                    # functions) then costs a lookup
                    key = (id(node.op), id(node.attrs),
                           *[id(a._checked_type) for a in node.args])
                    if key not in hits:
                        memo.remember(key, tuple(a._checked_type for a in node.args), ty)
            return complete
        for _gv, func in changed:
            inferrer.run(func)
        for name, node in new_nodes:
            ty = seeded[node]
            old = node._checked_type
            if old is not None and old is not ty and old != ty:
                err = TypeInferenceError(
                    f"a node carries the type {old} but its type is {ty}\n"
                    f"  at: {describe(node)}\n  in @{name}")
                err.expr, err.function = node, f"@{name}"
                raise err
            if old is None:
                _set_checked_type(node, ty)
            types[node] = ty
        for node, ty in seeded.items():
            # what the inference reached besides the new nodes: functions it inferred
            # on demand through a GlobalVar, their nodes
            if node not in types:
                types[node] = ty
        return complete and not inferrer.unannotated

    def _new_nodes(self, root: Function, seeded: dict) -> tuple[list[Expr], bool]:
        """The nodes under ``root`` not checked before (children first), and whether the
        checked functions met all carry a return type; seeds ``seeded`` with the checked
        nodes met."""
        types = self._types
        out: list[Expr] = []
        seen = {root}
        annotated = True
        # a node is pushed once, when first met; ``_DONE`` above it means its children
        # are out already
        stack: list = [root]
        push, pop = stack.append, stack.pop
        while stack:
            node = pop()
            if node is _DONE:
                out.append(pop())
                continue
            push(node)
            push(_DONE)
            for child in node.children():
                if child in seen:
                    continue
                seen.add(child)
                t = type(child)
                if t is Op:
                    continue
                # a var is never trusted from before: where it may be used depends on the
                # function it sits in now
                if t is not Var:
                    ty = types.get(child)
                    if ty is not None:
                        seeded[child] = ty
                        if t is Function and child.ret_type is None:
                            annotated = False
                        continue
                push(child)
        return out, annotated


_DONE = object()


_NONE: frozenset = frozenset()


def _check_scopes(name: str, func: Function, fresh: list[Expr]) -> None:
    """Scoping of the new nodes of ``func`` (children first, ``func`` last): no var bound
    twice among them, and every var they use bound around the use. A checked node stands
    for no free var: it was checked where the same params were in scope."""
    free: dict[Expr, frozenset] = {}
    bound: set[Var] = set()

    def union(nodes: tuple) -> frozenset:
        out = _NONE
        for n in nodes:
            f = free.get(n, _NONE)
            if f and f is not out:
                out = f if not out else out | f
        return out

    def bind(var: Var, node: Expr) -> None:
        if var in bound:
            raise WellFormedError(
                f"ill-formed program: variable %{var.name_hint} is bound twice in @{name}\n"
                f"  at: {describe(node)}")
        bound.add(var)

    for node in fresh:
        t = type(node)
        if t is Var:
            free[node] = frozenset((node,))
        elif t is Function:
            for p in node.params:
                bind(p, node)
            f = free.get(node.body, _NONE)
            free[node] = f - set(node.params) if f else _NONE
        elif t is Let:
            bind(node.var, node)
            body = free.get(node.body, _NONE)
            value = free.get(node.value, _NONE)
            if type(node.value) is Function:  # a let-bound function may call itself
                value = value - {node.var}
            free[node] = value | (body - {node.var})
        else:
            free[node] = union(node.children())
    left = free.get(func, _NONE)
    if left:
        var = next(iter(left))
        raise WellFormedError(
            f"ill-formed program: variable %{var.name_hint} is used in @{name} outside the "
            f"scope of any binding of it (no enclosing let or function parameter binds it)\n"
            f"  at: {describe(var)}")
