"""Reduction: the smallest module that still shows a problem (``llvm-reduce``, ``mlir-reduce``).

:func:`reduce` shrinks ``@main`` of a module while an :class:`~irpass.debug.oracle.Oracle`
still says it is bad, by delta debugging (Zeller's ddmin, in chunks that halve when a
whole chunk cannot go) over a few kinds of cut, tried in turn until none makes progress:

- **outputs**: keep a subset of the outputs of a tuple-returning ``@main``, then return
  an inner node instead of the output (the earliest one, in operands-first order,
  that is still bad: a binary search, as a miscompile shows in everything computed
  after it);
- **cut**: replace subexpressions by fresh parameters of their type (everything below
  them that nothing else uses goes away);
- **bypass**: replace a call by one of its operands of the same type (``relu(x) -> x``);
- **scalars**: replace a tensor constant by a scalar of its first element where that
  keeps every type (``add(x, c)``);
- **params**: drop parameters nothing uses any more;
- **functions**: drop functions other than ``@main`` that nothing calls.

Every candidate is type-checked before the oracle sees it (an ill-typed candidate is
not bad, just not a reduction). The oracle decides what "still bad" means: a pass
still changes the outputs (``--check``), a pass still raises (``--failing-pass``), a
user's command still fails (``--test``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import IRPassError
from ..ir.expr import Expr
from ..ir.functor import ExprMutator, post_order_visit
from ..ir.module import IRModule
from ..ir.nodes import Call, Constant, Function, GlobalVar, Tuple, Var
from ..ir.op import Op
from ..ir.type_infer import infer_type
from ..ir.types import TensorType
from .oracle import Oracle

__all__ = ["ReduceError", "ReduceResult", "reduce", "count_calls"]


class ReduceError(IRPassError):
    """Nothing to reduce: the oracle does not find the module bad to begin with."""


@dataclass
class ReduceResult:
    """The reduced module and how the reduction went."""

    module: IRModule
    calls_before: int
    calls_after: int
    questions: int
    accepted: dict[str, int]

    def render(self) -> str:
        """The summary ``irpass reduce`` prints."""
        done = ", ".join(f"{k} {v}" for k, v in self.accepted.items() if v) or "nothing"
        return (f"reduced @main from {self.calls_before} to {self.calls_after} op calls "
                f"({self.questions} candidates tested; accepted: {done})\n")


def count_calls(mod: IRModule) -> int:
    """The op calls of ``mod``'s functions (each distinct node once)."""
    n = 0

    def visit(node: Expr) -> None:
        nonlocal n
        if type(node) is Call and type(node.op) is Op:
            n += 1

    for _gv, func in mod.items():
        post_order_visit(func, visit)
    return n


class _Replace(ExprMutator):
    """Rebuilds an expression with some nodes replaced (the memo starts with them)."""

    def __init__(self, mapping: dict[Expr, Expr]) -> None:
        super().__init__()
        self.memo.update(mapping)


def _nodes(func: Function) -> list[Expr]:
    """The nodes of ``func``'s body, operands first."""
    out: list[Expr] = []
    post_order_visit(func.body, out.append)
    return out


def _with_main(mod: IRModule, main: Function) -> IRModule:
    funcs = {gv: f for gv, f in mod.items()}
    funcs[mod.get_global_var("main")] = main
    return IRModule(funcs)


def _rebuild(mod: IRModule, mapping: dict[Expr, Expr], params: list[Var]) -> IRModule:
    main = mod["main"]
    body = _Replace(mapping).visit(main.body)
    return _with_main(mod, Function([*main.params, *params], body, None, main.attrs))


class _Reducer:
    def __init__(self, oracle: Oracle, budget: int) -> None:
        self.oracle = oracle
        self.budget = budget
        self.questions = 0
        self.accepted: dict[str, int] = {}
        self.fresh = 0

    def try_candidate(self, candidate: IRModule, kind: str) -> IRModule | None:
        """The typed candidate if it is still bad, else None."""
        if self.questions >= self.budget:
            return None
        try:
            candidate = infer_type(candidate)
        except IRPassError:
            return None
        self.questions += 1
        if self.oracle.is_bad(candidate):
            self.accepted[kind] = self.accepted.get(kind, 0) + 1
            return candidate
        return None

    def param(self, ty: TensorType) -> Var:
        self.fresh += 1
        return Var(f"cut{self.fresh}", ty)

    # -- the chunked search ------------------------------------------------------------
    def chunks(self, mod: IRModule, kind: str,
               candidates: Callable[[IRModule], list[Expr]],
               apply: Callable[[IRModule, list[Expr]], IRModule | None]) -> IRModule:
        """ddmin over ``candidates(mod)``: apply to chunks, halving the chunk size when no
        chunk of a size is accepted; candidates are recomputed after each acceptance."""
        items = candidates(mod)
        size = max(1, len(items) // 2)
        while items and self.questions < self.budget:
            progress = False
            for start in range(0, len(items), size):
                chunk = items[start:start + size]
                made = apply(mod, chunk)
                if made is None:
                    continue
                kept = self.try_candidate(made, kind)
                if kept is not None:
                    mod = kept
                    progress = True
                    break
            if progress:
                items = candidates(mod)
                size = min(size, max(1, len(items) // 2))
            elif size == 1:
                break
            else:
                size = max(1, size // 2)
        return mod

    # -- the kinds of cut ------------------------------------------------------------
    def outputs(self, mod: IRModule) -> IRModule:
        mod = self.output_subsets(mod)
        return self.inner_output(mod)

    def inner_output(self, mod: IRModule) -> IRModule:
        f = mod["main"]
        nodes = [n for n in _nodes(f) if type(n) is Call and n is not f.body
                 and isinstance(n.checked_type, TensorType)]

        def returning(i: int) -> IRModule:
            return _with_main(mod, Function(f.params, nodes[i], None, f.attrs))

        lo, hi = -1, len(nodes)  # hi: known bad (len: the output itself)
        found: IRModule | None = None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            kept = self.try_candidate(returning(mid), "outputs")
            if kept is not None:
                hi, found = mid, kept
            else:
                lo = mid
        return found if found is not None else mod

    def output_subsets(self, mod: IRModule) -> IRModule:
        main = mod["main"]
        if type(main.body) is not Tuple:
            return mod

        def candidates(m: IRModule) -> list[Expr]:
            body = m["main"].body
            return list(body.fields) if type(body) is Tuple and len(body.fields) > 1 else []

        def apply(m: IRModule, chunk: list[Expr]) -> IRModule | None:
            f = m["main"]
            keep = [x for x in f.body.fields if x not in chunk]
            if not keep:
                return None
            body = keep[0] if len(keep) == 1 else Tuple(keep)
            return _with_main(m, Function(f.params, body, None, f.attrs))

        return self.chunks(mod, "outputs", candidates, apply)

    def cut(self, mod: IRModule) -> IRModule:
        def candidates(m: IRModule) -> list[Expr]:
            nodes = _nodes(m["main"])
            root = m["main"].body
            # the deepest first: cutting low keeps the most of what the problem needs
            return [n for n in nodes if type(n) is Call and n is not root
                    and isinstance(n.checked_type, TensorType)]

        def apply(m: IRModule, chunk: list[Expr]) -> IRModule:
            params = [self.param(n.checked_type) for n in chunk]
            return _rebuild(m, dict(zip(chunk, params, strict=True)), params)

        return self.chunks(mod, "cut", candidates, apply)

    def bypass(self, mod: IRModule) -> IRModule:
        def candidates(m: IRModule) -> list[Expr]:
            return [n for n in _nodes(m["main"]) if type(n) is Call and type(n.op) is Op
                    and any(a.checked_type == n.checked_type for a in n.args)]

        def apply(m: IRModule, chunk: list[Expr]) -> IRModule:
            mapping = {n: next(a for a in n.args if a.checked_type == n.checked_type)
                       for n in chunk}
            return _rebuild(m, mapping, [])

        return self.chunks(mod, "bypass", candidates, apply)

    def scalars(self, mod: IRModule) -> IRModule:
        def candidates(m: IRModule) -> list[Expr]:
            return [n for n in _nodes(m["main"]) if type(n) is Constant and n.data.ndim > 0
                    and n.data.size > 0]

        def apply(m: IRModule, chunk: list[Expr]) -> IRModule:
            mapping: dict[Expr, Expr] = {
                n: Constant(np.asarray(n.data.reshape(-1)[0])) for n in chunk}
            return _rebuild(m, mapping, [])

        return self.chunks(mod, "scalars", candidates, apply)

    def params(self, mod: IRModule) -> IRModule:
        main = mod["main"]
        used: set[Var] = set()
        post_order_visit(main.body, lambda n: used.add(n) if type(n) is Var else None)
        keep = [p for p in main.params if p in used]
        if len(keep) == len(main.params):
            return mod
        made = self.try_candidate(
            _with_main(mod, Function(keep, main.body, None, main.attrs)), "params")
        return made if made is not None else mod

    def functions(self, mod: IRModule) -> IRModule:
        if len(mod) == 1:
            return mod
        called: set[str] = set()
        for _gv, func in mod.items():
            post_order_visit(func, lambda n: called.add(n.name_hint)
                             if type(n) is GlobalVar else None)
        keep = {gv: f for gv, f in mod.items() if gv.name_hint == "main" or
                gv.name_hint in called}
        if len(keep) == len(mod):
            return mod
        made = self.try_candidate(IRModule(keep), "functions")
        return made if made is not None else mod


def reduce(mod: IRModule, oracle: Oracle, *, budget: int = 2000) -> ReduceResult:
    """Shrink ``mod`` while ``oracle`` still finds it bad (see the module docs); at most
    ``budget`` candidates are tested. :class:`ReduceError` when ``mod`` is not bad."""
    mod = infer_type(mod)
    if "main" not in mod:
        raise ReduceError("reduce needs a module with a @main function")
    if not oracle.is_bad(mod):
        raise ReduceError(f"the model is not bad ({oracle.describe()} is false on it): "
                          "nothing to reduce")
    before = count_calls(mod)
    r = _Reducer(oracle, budget)
    while True:
        start = mod
        for step in (r.functions, r.outputs, r.cut, r.bypass, r.scalars, r.params):
            mod = step(mod)
        if mod is start or r.questions >= budget:
            break
    return ReduceResult(mod, before, count_calls(mod), r.questions, r.accepted)
