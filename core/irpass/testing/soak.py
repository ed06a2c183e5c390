"""The soak: every standard pass, and the default pipeline, on many random programs.

Run it from a shell::

    python -m irpass.testing.soak --programs 200 --seed 0
    nice python -m irpass.testing.soak --programs 5000 --seed 1 --jobs 2

Program ``k`` of a run is :func:`irpass.testing.programs.random_module` of seed
``S + k`` (``S`` is ``--seed``), so ``--seed S+k --programs 1`` runs it alone. On each
program every configuration (:func:`std_configs`, ``--list-configs`` prints them) runs
as users run passes, ``Sequential([InferType(), P])`` inside a ``PassContext`` with
``testing.immutable_module`` set, and the soak checks that

* the pass raised nothing (every exception counts: a valid program is never an error),
  within ``--timeout`` seconds;
* its input is unchanged: the same function objects, the same structural hash;
* the result is well formed (:func:`irpass.ir.well_formed`) and well typed
  (:func:`irpass.ir.infer_type` succeeds), still has ``@main`` with the same params;
* the result prints and parses back to itself (the text format's promise);
* ``@main`` computes the same results as before on seeded random inputs (floats in
  [-1, 1], ``--inputs`` sets), within a tolerance: ``rtol=1e-4`` and an absolute
  ``1e-5`` times the largest magnitude of the output (at least 1), so a pass that
  only reorders float arithmetic passes and a wrong result does not.

Each failure is shrunk (:func:`shrink`: the program's outputs, bindings and
sub-expressions are removed or replaced by fresh params while the same kind of failure
persists) and printed as a reproducer: the seed, the configuration, the error and the
smallest program in the text format. The run ends with a line of counts and time and a
table of failures by *signature* (configuration, kind and the error with numbers and
names blanked); the exit status is 1 when anything failed, 0 otherwise. ``--ignore
REGEX`` counts the failures whose signature matches as ignored (to look past known
bugs), ``--config NAME`` runs only some configurations, ``--jobs K`` runs programs in
``K`` processes (default 1), ``--max-nodes`` sets the size of ``@main``, and
``--memory-limit GB`` (default 4) caps each process's address space, so a pass whose
output explodes fails with ``MemoryError`` instead of starving the machine. A program
the generator got wrong (it does not run to finite results before any pass) is
reported under the configuration ``generator``.

From Python, :func:`run_soak` returns a :class:`SoakReport`; :func:`check_program`
checks one module under one configuration, :func:`shrink` reduces a failing module.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import multiprocessing
import re
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from ..evaluator import evaluate
from ..ir import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    infer_type,
    parse,
    post_order_visit,
    structural_equal,
    structural_hash,
    well_formed,
)
from ..ir.expr import Expr
from ..transform import Pass, PassContext, Sequential, default_pipeline, get_pass
from ..transform.registry import get_pass_entry, list_passes
from .programs import random_args, random_module

__all__ = [
    "SoakConfig",
    "Failure",
    "SoakReport",
    "std_configs",
    "check_program",
    "shrink",
    "run_soak",
    "main",
]

#: The layouts ConvertLayout and AlterOpLayout are asked for.
NHWC_LAYOUTS: dict[str, list[str]] = {
    "nn.conv2d": ["NHWC", "default"],
    "nn.max_pool2d": ["NHWC"],
    "nn.avg_pool2d": ["NHWC"],
    "nn.global_avg_pool2d": ["NHWC"],
}
NCHW_LAYOUTS: dict[str, list[str]] = {
    "nn.conv2d": ["NCHW", "default"],
    "nn.max_pool2d": ["NCHW"],
    "nn.avg_pool2d": ["NCHW"],
    "nn.global_avg_pool2d": ["NCHW"],
}
_ALTER_NHWC = ("nn.conv2d=NHWC,default; nn.max_pool2d=NHWC; nn.avg_pool2d=NHWC; "
               "nn.global_avg_pool2d=NHWC")
RTOL = 1e-4
ATOL = 1e-5
#: The configuration name of a failure of the generator itself (a program that does not
#: run to finite results before any pass).
GENERATOR = "generator"


# -- configurations --------------------------------------------------------------------------


@dataclass(frozen=True)
class SoakConfig:
    """One way of running passes: a name, a factory of the pass to run, the context's
    opt level and config options.

    :meth:`for_pass` makes the usual one, a registered pass behind InferType.
    """

    name: str
    make: Callable[[], Pass]
    opt_level: int = 3
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def for_pass(cls, pass_name: str, *args: Any, label: str | None = None,
                 options: Mapping[str, Any] | None = None, **kwargs: Any) -> SoakConfig:
        """The registered pass ``pass_name`` (built with ``args``/``kwargs``) as users run
        it: ``Sequential([InferType(), P])``, so its requirements run too."""

        def make() -> Pass:
            return Sequential([get_pass("InferType"), get_pass(pass_name, *args, **kwargs)],
                              name=f"soak:{pass_name}")

        return cls(label or pass_name, make, 3, dict(options or {}))


def _pipeline(level: int) -> Callable[[], Pass]:
    return lambda: default_pipeline(level)


def std_configs() -> list[SoakConfig]:
    """Every pass of the ``std`` plugin (``ConvertLayout`` to NHWC and to NCHW,
    ``AlterOpLayout`` without and with ``std.AlterOpLayout.desired_layouts``, some passes
    also with their config options or arguments), then ``default_pipeline(1..3)`` (3 also
    with desired layouts), each run at the pipeline's own opt level."""
    special: dict[str, list[SoakConfig]] = {
        "ConvertLayout": [
            SoakConfig.for_pass("ConvertLayout", NHWC_LAYOUTS, label="ConvertLayout[NHWC]"),
            SoakConfig.for_pass("ConvertLayout", NCHW_LAYOUTS, label="ConvertLayout[NCHW]"),
        ],
        "AlterOpLayout": [
            SoakConfig.for_pass("AlterOpLayout"),
            SoakConfig.for_pass("AlterOpLayout", label="AlterOpLayout[NHWC]",
                                options={"std.AlterOpLayout.desired_layouts": _ALTER_NHWC}),
        ],
        "SimplifyExpr": [
            SoakConfig.for_pass("SimplifyExpr"),
            SoakConfig.for_pass("SimplifyExpr", label="SimplifyExpr[finite_math]",
                                options={"std.SimplifyExpr.finite_math": True}),
        ],
        "SimplifyInference": [
            SoakConfig.for_pass("SimplifyInference"),
            SoakConfig.for_pass(
                "SimplifyInference", label="SimplifyInference[decompose_layer_norm]",
                options={"std.SimplifyInference.decompose_layer_norm": True}),
        ],
        "FuseOps": [
            SoakConfig.for_pass("FuseOps"),
            SoakConfig.for_pass("FuseOps", label="FuseOps[max_depth=3]",
                                options={"std.FuseOps.max_depth": 3}),
        ],
    }
    configs: list[SoakConfig] = []
    for name in list_passes():
        if get_pass_entry(name).owner != "std":
            continue
        configs.extend(special.get(name, [SoakConfig.for_pass(name)]))
    for level in (1, 2, 3):
        configs.append(SoakConfig(f"default_pipeline({level})", _pipeline(level), level))
    configs.append(SoakConfig("default_pipeline(3)[NHWC]", _pipeline(3), 3,
                              {"std.AlterOpLayout.desired_layouts": _ALTER_NHWC}))
    return configs


# -- one check -------------------------------------------------------------------------------


class _Timeout(BaseException):
    """Raised in the pass by the alarm: a BaseException, so ``except Exception`` in a pass
    does not swallow it."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def ring(signum: int, frame: Any) -> None:
        raise _Timeout()

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass(frozen=True)
class Problem:
    """What went wrong in one check: its ``kind`` and a message."""

    kind: str  # raises, timeout, changed-input, not-a-module, ill-formed, ill-typed,
    #            signature, text-roundtrip, evaluation-error, wrong-result
    message: str
    error_type: str = ""


def _error_text(err: BaseException) -> tuple[str, str]:
    """``(type name, message)`` of ``err``, with its cause's (a PassError wraps the
    pass's own exception)."""
    text = str(err) or type(err).__name__
    name = type(err).__name__
    cause = err.__cause__
    if cause is not None:
        text += f"\n  caused by {type(cause).__name__}: {cause}"
        name += f"<{type(cause).__name__}>"
    return name, text


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def compare_outputs(got: Any, expected: Any) -> str | None:
    """None when ``got`` matches ``expected`` (the soak's tolerance), else what differs."""
    g, e = _leaves(got), _leaves(expected)
    if len(g) != len(e):
        return f"{len(e)} outputs before, {len(g)} after"
    for k, (a, b) in enumerate(zip(g, e, strict=True)):
        if not isinstance(b, np.ndarray):
            continue  # a closure: nothing to compare by value
        if not isinstance(a, np.ndarray) or a.shape != b.shape or a.dtype != b.dtype:
            what = f"{a.dtype}{list(a.shape)}" if isinstance(a, np.ndarray) else type(a).__name__
            return f"output {k} was {b.dtype}{list(b.shape)}, now {what}"
        if b.dtype.kind not in "fc":
            bad = a != b
        else:
            finite = np.abs(b[np.isfinite(b)]).astype(np.float64)
            scale = max(1.0, float(finite.max())) if finite.size else 1.0
            bad = ~np.isclose(a, b, rtol=RTOL, atol=ATOL * scale, equal_nan=True)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            return (f"output {k} differs at {int(bad.sum())} of {b.size} element(s), first "
                    f"at {idx}: {a[idx]!r} after, {b[idx]!r} before")
    return None


def check_program(mod: IRModule, config: SoakConfig, arg_sets: Sequence[Mapping[str, Any]],
                  expected: Sequence[Any] | None = None, timeout: float = 0.0,
                  ) -> Problem | None:
    """Run ``config`` on ``mod`` and check the result (see the module docs); ``expected``
    are ``@main``'s results on ``arg_sets`` (computed when not given). None when all is
    well."""
    if expected is None:
        expected = [evaluate(mod, **args) for args in arg_sets]
    functions = dict(mod.functions)
    before_hash = structural_hash(mod)
    options = {"testing.immutable_module": True, **config.options}
    try:
        with _time_limit(timeout), PassContext(opt_level=config.opt_level, config=options):
            out = config.make()(mod)
    except _Timeout:
        return Problem("timeout", f"no result after {timeout:g} s", "timeout")
    except Exception as err:  # every exception is a finding: the program is valid
        name, text = _error_text(err)
        return Problem("raises", text, name)
    if dict(mod.functions) != functions or any(
        mod.functions[gv] is not f for gv, f in functions.items()
    ) or structural_hash(mod) != before_hash:
        return Problem("changed-input", "the pass changed its input module")
    if not isinstance(out, IRModule):
        return Problem("not-a-module", f"the pass returned {type(out).__name__}")
    if out is mod:
        return None
    report = well_formed(out)
    if not report:
        return Problem("ill-formed", str(report))
    try:
        typed = infer_type(out)
    except Exception as err:
        name, text = _error_text(err)
        return Problem("ill-typed", text, name)
    if "main" not in typed:
        return Problem("signature", "@main is gone")
    old = [(p.name_hint, p.type_annotation) for p in mod["main"].params]
    new = [(p.name_hint, p.type_annotation) for p in typed["main"].params]
    if old != new:
        return Problem("signature", f"@main's params changed: {old} -> {new}")
    try:
        # the text format's promise: every module reads back as itself
        same = structural_equal(parse(str(out)), out)
    except Exception as err:
        name, text = _error_text(err)
        return Problem("text-roundtrip", text, name)
    if not same:
        return Problem("text-roundtrip", "the printed result parses back to another module")
    for args, want in zip(arg_sets, expected, strict=True):
        try:
            got = evaluate(out, **args)
        except Exception as err:
            name, text = _error_text(err)
            return Problem("evaluation-error", text, name)
        diff = compare_outputs(got, want)
        if diff is not None:
            return Problem("wrong-result", diff)
    return None


# -- shrinking -------------------------------------------------------------------------------


def _children(node: Expr) -> list[Expr]:
    if isinstance(node, Call):
        return ([] if isinstance(node.op, Op) else [node.op]) + list(node.args)
    if isinstance(node, Tuple):
        return list(node.fields)
    if isinstance(node, TupleGetItem):
        return [node.tuple_value]
    if isinstance(node, Let):
        return [node.value, node.body]
    if isinstance(node, If):
        return [node.cond, node.true_branch, node.false_branch]
    if isinstance(node, Function):
        return [node.body]
    return []


def _substitute(root: Expr, mapping: Mapping[Expr, Expr]) -> Expr:
    """``root`` rebuilt with the nodes of ``mapping`` replaced (by identity; what a node
    is replaced by is rebuilt too). Iterative, so deep programs are fine."""
    done: dict[Expr, Expr] = {}
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if node in done:
            continue
        target = mapping.get(node)
        kids = [target] if target is not None else _children(node)
        if not ready:
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(kids) if k not in done)
            continue
        new = [done[k] for k in kids]
        if target is not None:
            done[node] = new[0]
        elif all(n is k for n, k in zip(new, kids, strict=True)):
            done[node] = node
        elif isinstance(node, Call):
            callee = node.op if isinstance(node.op, Op) else new.pop(0)
            attrs = node.attrs if isinstance(callee, Op) and callee.attr_fields else None
            done[node] = Call(callee, new, attrs)
        elif isinstance(node, Tuple):
            done[node] = Tuple(new)
        elif isinstance(node, TupleGetItem):
            done[node] = TupleGetItem(new[0], node.index)
        elif isinstance(node, Let):
            done[node] = Let(node.var, new[0], new[1])
        elif isinstance(node, If):
            done[node] = If(new[0], new[1], new[2])
        else:
            assert isinstance(node, Function)
            done[node] = Function(node.params, new[0], node.ret_type, node.attrs)
    return done[root]


def _replace_in(func: Function, mapping: Mapping[Expr, Expr]) -> Function:
    return Function(func.params, _substitute(func.body, mapping), None, func.attrs)


def _nodes_of(expr: Expr) -> set[Expr]:
    out: set[Expr] = set()
    post_order_visit(expr, out.add)
    return out


def _nodes(func: Function) -> list[Expr]:
    """The nodes of ``func``'s body, roots first (so big replacements are tried first)."""
    out: list[Expr] = []
    post_order_visit(func.body, out.append)
    out.reverse()
    return out


def _fresh_name(func: Function) -> str:
    taken = {p.name_hint for p in func.params}
    k = 0
    while f"s{k}" in taken:
        k += 1
    return f"s{k}"


def _used_vars(func: Function) -> set[Var]:
    used: set[Var] = set()
    post_order_visit(func.body, lambda n: used.add(n) if isinstance(n, Var) else None)
    return used


def _candidates(mod: IRModule) -> Iterator[IRModule]:
    """Smaller variants of a typed ``mod``, the likely biggest cuts first."""
    main_gv = mod.get_global_var("main")
    main = mod[main_gv]
    # 1. one output of a tuple result
    if isinstance(main.body, Tuple) and len(main.body.fields) > 1:
        for f in main.body.fields:
            yield mod.with_function(main_gv, Function(main.params, f, None, main.attrs))
    # 2. global functions nothing calls any more
    for gv, _func in mod.items():
        if gv.name_hint != "main" and not any(
            gv in _global_refs(f) for g, f in mod.items() if g is not gv
        ):
            yield mod.without_function(gv)
    for gv, func in mod.items():
        in_main = gv is main_gv
        for node in _nodes(func):
            ty = _type_of(node)
            # 3. an If by a branch, a let by its body (the var replaced by its value)
            if isinstance(node, If):
                for branch in (node.true_branch, node.false_branch):
                    yield mod.with_function(gv, _replace_in(func, {node: branch}))
            if isinstance(node, Let) and node.var not in _nodes_of(node.value):
                # (not a recursive binding: its value would be substituted into itself)
                yield mod.with_function(gv, _replace_in(func, {node: node.body,
                                                               node.var: node.value}))
            if not isinstance(ty, TensorType) or isinstance(node, (Var, Constant)):
                continue
            # 4. a sub-expression by a fresh param of @main (a constant in other functions);
            # in @main also the sub-expression as the result, dropping what it feeds (an op
            # that changes the type, which no other cut can remove)
            if in_main:
                if isinstance(node, Call) and node is not func.body:
                    yield mod.with_function(gv, Function(func.params, node, None, func.attrs))
                p = Var(_fresh_name(func), ty)
                new = _replace_in(func, {node: p})
                yield mod.with_function(gv, Function(list(func.params) + [p], new.body, None,
                                                     func.attrs))
            else:
                yield mod.with_function(gv, _replace_in(func, {node: Constant(_data(ty))}))
            # a call of a global function by its body (the params replaced by the args);
            # not of a recursive one: its body calls it again, so each inlining would grow
            # the program (doubling it inside the function itself) without end
            if isinstance(node, Call) and isinstance(node.op, GlobalVar) and \
                    node.op not in _global_refs(mod[node.op]):
                callee = mod[node.op]
                body = _substitute(callee.body, dict(zip(callee.params, node.args,
                                                         strict=True)))
                yield mod.with_function(gv, _replace_in(func, {node: body}))
            # 5. a call (or a projection of one) by one of its arguments of the same type
            inner = node.tuple_value if isinstance(node, TupleGetItem) else node
            if isinstance(inner, (Call, Tuple)):
                for a in inner.args if isinstance(inner, Call) else inner.fields:
                    if _type_of(a) == ty:
                        yield mod.with_function(gv, _replace_in(func, {node: a}))
    # 6. params of @main nothing reads
    used = _used_vars(main)
    if any(p not in used for p in main.params):
        kept = [p for p in main.params if p in used]
        yield mod.with_function(main_gv, Function(kept, main.body, None, main.attrs))


def _data(ty: TensorType) -> np.ndarray:
    """Data for a constant standing in for a sub-expression: in [-1, 1] for floats."""
    if np.dtype(ty.dtype).kind == "f":
        return np.random.default_rng(0).uniform(-1, 1, ty.shape).astype(ty.dtype)
    return np.zeros(ty.shape, ty.dtype)


def _type_of(node: Expr) -> Any:
    try:
        return node.checked_type
    except Exception:
        return None


def _global_refs(func: Function) -> set[Any]:
    refs: set[Any] = set()
    post_order_visit(func.body, lambda n: refs.add(n) if isinstance(n, GlobalVar) else None)
    return refs


def _size(mod: IRModule) -> int:
    nodes: list[Expr] = []
    for _gv, func in mod.items():
        post_order_visit(func, nodes.append)
    return len(nodes)


def _valid(mod: IRModule, args_seed: int) -> tuple[list[dict[str, Any]], list[Any]] | None:
    """Inputs and results of a candidate program, or None if it is not a valid one (ill
    formed, ill typed, failing or non-finite on its inputs)."""
    try:
        if not well_formed(mod):
            return None
        infer_type(mod)
        args = random_args(mod, args_seed)
        out = evaluate(mod, **args)
    except Exception:
        return None
    for leaf in _leaves(out):
        if isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f" and not np.isfinite(
                leaf).all():
            return None
    return [args], [out]


def shrink(mod: IRModule, fails: Callable[[IRModule], bool], *, budget: float = 60.0,
           max_tries: int = 2000) -> IRModule:
    """A smaller module for which ``fails`` still holds: greedy delta debugging over the
    IR. Tries (biggest cuts first) dropping outputs of a tuple result, unused global
    functions and params, replacing an ``if`` by a branch, a ``let`` by its body, a
    sub-expression by a fresh param of ``@main`` (a zero constant elsewhere) or a call
    by an argument of the same type, ``@main``'s result by a call it computes, a call of
    a (non-recursive) global function by its body; keeps the first variant that still fails
    and starts over, until none does or ``budget`` seconds / ``max_tries`` attempts are spent.
    ``fails`` gets typed, well-formed candidates only."""
    deadline = time.monotonic() + budget
    tries = 0
    current = infer_type(mod)
    progress = True
    while progress and time.monotonic() < deadline and tries < max_tries:
        progress = False
        for cand in _candidates(current):
            if time.monotonic() >= deadline or tries >= max_tries:
                break
            tries += 1
            try:
                if not well_formed(cand):
                    continue
                typed = infer_type(cand)
            except Exception:
                continue
            if fails(typed):
                current = typed
                progress = True
                break
    return current


# -- a run -----------------------------------------------------------------------------------


_NUMBER = re.compile(r"-?\d+(\.\d+)?(e-?\d+)?")
_NAME = re.compile(r"%[\w.]+|@\w+")
_QUOTED = re.compile(r"`[^`]*`")  # a quoted expression: where, not what went wrong


def signature_of(config: str, problem: Problem) -> str:
    """What failures of one cause share: the configuration, the kind, the exception type
    and the first line of the message with numbers, names and quoted code blanked."""
    lines = [line.strip(" -") for line in problem.message.splitlines() if line.strip(" -")]
    first = lines[0] if lines else ""
    if first.endswith(":") and len(lines) > 1:
        first = lines[1]  # a header ("ill-formed program (2 problems):"): its first item
    first = _NUMBER.sub("#", _NAME.sub("%_", _QUOTED.sub("`_`", first)))[:200]
    kind = problem.kind + (f" {problem.error_type}" if problem.error_type else "")
    return f"{config}: {kind}: {first}"


@dataclass
class Failure:
    """One program failing one configuration, with its shrunk reproducer."""

    seed: int
    config: str
    problem: Problem
    program: str  # the reproducer in the text format (shrunk unless shrinking was off)
    nodes: int  # nodes of the reproducer
    original_nodes: int
    max_nodes: int = 24  # the generator's size setting, to reproduce it

    @property
    def signature(self) -> str:
        """See :func:`signature_of`."""
        return signature_of(self.config, self.problem)

    def render(self) -> str:
        """The report printed for this failure."""
        only = f" --config '{self.config}'" if self.config != GENERATOR else ""
        if self.max_nodes != 24:
            only += f" --max-nodes {self.max_nodes}"
        lines = [
            f"FAIL seed={self.seed} config={self.config} kind={self.problem.kind}",
            f"  reproduce: python -m irpass.testing.soak --seed {self.seed} --programs 1"
            + only,
            "  error: " + self.problem.message.replace("\n", "\n  "),
            f"  program ({self.nodes} nodes, shrunk from {self.original_nodes}):",
        ]
        lines += ["    " + line for line in self.program.splitlines()]
        return "\n".join(lines)


@dataclass
class SoakReport:
    """What a soak run found."""

    programs: int = 0
    runs: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)
    ignored: list[Failure] = field(default_factory=list)
    configs: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No failure (ignored ones aside)."""
        return not self.failures

    def by_signature(self) -> Counter[str]:
        """Failures counted by signature."""
        return Counter(f.signature for f in self.failures)

    def summary(self) -> str:
        """The last line of a run."""
        sigs = len(self.by_signature())
        return (f"soak: {self.programs} programs x {len(self.configs)} configs = {self.runs} "
                f"runs in {self.seconds:.1f} s: {len(self.failures)} failures "
                f"({sigs} signatures), {len(self.ignored)} ignored")


_WORKER_CONFIGS: list[SoakConfig] = []
_WORKER_OPTIONS: dict[str, Any] = {}


def soak_program(seed: int, configs: Sequence[SoakConfig], *, max_nodes: int = 24,
                 inputs: int = 1, shrink_budget: float = 60.0, timeout: float = 60.0,
                 ignore: Sequence[re.Pattern[str]] = ()) -> tuple[list[Failure], list[Failure]]:
    """``(failures, ignored)`` of the program of ``seed`` under every configuration."""
    mod = random_module(seed, max_nodes=max_nodes)
    arg_sets = [random_args(mod, k) for k in range(inputs)]
    failures: list[Failure] = []
    ignored: list[Failure] = []
    try:
        expected = [evaluate(mod, **args) for args in arg_sets]
        invalid = _valid(mod, 0) is None
        problem = Problem("invalid-program", "the generator made a program that does not "
                          "run to finite results") if invalid else None
    except Exception as err:
        name, text = _error_text(err)
        problem = Problem("invalid-program", text, name)
    if problem is not None:
        small = mod
        # only an error shrinks: fresh params make any program non-finite somewhere
        if shrink_budget > 0 and problem.error_type:
            small = shrink(mod, _same_invalidity(problem), budget=shrink_budget)
        failures.append(Failure(seed, GENERATOR, problem, _text(small), _size(small),
                                _size(mod), max_nodes))
        return failures, ignored
    for config in configs:
        problem = check_program(mod, config, arg_sets, expected, timeout)
        if problem is None:
            continue
        sig = signature_of(config.name, problem)
        if any(p.search(sig) for p in ignore):
            ignored.append(Failure(seed, config.name, problem, "", 0, _size(mod), max_nodes))
            continue
        small = mod
        if shrink_budget > 0 and problem.kind != "timeout":
            small = shrink(mod, _same_failure(config, problem, timeout), budget=shrink_budget)
            if small is not mod:
                again = check_program(small, config, [random_args(small, 0)], timeout=timeout)
                problem = again or problem
        failures.append(Failure(seed, config.name, problem, _text(small), _size(small),
                                _size(mod), max_nodes))
    return failures, ignored


def _text(mod: IRModule) -> str:
    """``mod`` in the text format, without the types inference put in comments."""
    return str(parse(str(mod)))


def _same_invalidity(problem: Problem) -> Callable[[IRModule], bool]:
    """For a program the generator got wrong: the candidate fails to run the same way."""

    def fails(cand: IRModule) -> bool:
        try:
            evaluate(cand, **random_args(cand, 0))
        except Exception as err:
            return _error_text(err)[0] == problem.error_type
        return False

    return fails


def _same_failure(config: SoakConfig, problem: Problem, timeout: float,
                  ) -> Callable[[IRModule], bool]:
    def fails(cand: IRModule) -> bool:
        valid = _valid(cand, 0)
        if valid is None:
            return False
        args, expected = valid
        got = check_program(cand, config, args, expected, timeout)
        return got is not None and got.kind == problem.kind and (
            got.error_type == problem.error_type)

    return fails


def _work(seed: int) -> tuple[int, list[Failure], list[Failure]]:
    failures, ignored = soak_program(seed, _WORKER_CONFIGS, **_WORKER_OPTIONS)
    return seed, failures, ignored


def run_soak(programs: int, seed: int = 0, *, configs: Sequence[SoakConfig] | None = None,
             jobs: int = 1, max_nodes: int = 24, inputs: int = 1, shrink_budget: float = 60.0,
             timeout: float = 60.0, ignore: Iterable[str] = (), stream: TextIO | None = None,
             progress: bool = False, live: bool = False) -> SoakReport:
    """Run the soak over programs ``seed .. seed + programs - 1``; each failure is printed
    on ``stream`` (if given) as it is found. ``jobs`` > 1 runs programs in that many
    processes (forked: the configurations are inherited, lambdas and all). ``progress``
    prints a line every 50 programs on ``stream`` (for logs); ``live`` keeps a progress
    line on standard error when that is a terminal (``irpass.cli.progress``)."""
    from ..cli.progress import Progress  # the command line's one progress line

    configs = list(configs if configs is not None else std_configs())
    patterns = [re.compile(p) for p in ignore]
    options = {"max_nodes": max_nodes, "inputs": inputs, "shrink_budget": shrink_budget,
               "timeout": timeout, "ignore": patterns}
    report = SoakReport(configs=[c.name for c in configs])
    start = time.monotonic()
    seeds = range(seed, seed + programs)
    _WORKER_CONFIGS[:] = configs
    _WORKER_OPTIONS.clear()
    _WORKER_OPTIONS.update(options)
    # passes' warnings (ctx.diag, logged to irpass.diag) are documented behaviour, not
    # findings: keep them off the terminal for the run
    diag_log = logging.getLogger("irpass.diag")
    was_disabled, diag_log.disabled = diag_log.disabled, True
    pool = None
    if jobs > 1:
        pool = multiprocessing.get_context("fork").Pool(jobs)
        results: Iterable[tuple[int, list[Failure], list[Failure]]] = pool.imap(_work, seeds)
    else:
        results = map(_work, seeds)
    with Progress(enabled=None if live else False) as line:
        try:
            line.step(f"soak: {programs} programs x {len(configs)} configurations")
            for done, (s, failures, ignored) in enumerate(results, 1):
                report.programs += 1
                report.runs += len(configs)
                report.failures += failures
                report.ignored += ignored
                line.step(f"soak: {done} of {programs} programs, {len(report.failures)} "
                          f"failures", frequent=True)
                if stream is not None:
                    if failures or (progress and done % 50 == 0):
                        line.clear()  # stream may be the terminal the line is on
                    for f in failures:
                        print(f.render(), file=stream, flush=True)
                    if progress and done % 50 == 0:
                        elapsed = time.monotonic() - start
                        print(f"... {done} programs (seed {s}), {len(report.failures)} failures, "
                              f"{elapsed:.0f} s", file=stream, flush=True)
        finally:
            diag_log.disabled = was_disabled
            if pool is not None:
                pool.terminate()
    report.seconds = time.monotonic() - start
    return report


@contextlib.contextmanager
def _memory_limit(nbytes: int) -> Iterator[None]:
    """Cap the address space at ``nbytes`` inside the block (no cap where the platform has
    none); the old limit is back afterwards, so ``main`` called in-process (as the tests
    do) leaves its caller's limit alone."""
    try:
        import resource
    except ImportError:
        yield
        return
    old = resource.getrlimit(resource.RLIMIT_AS)
    soft, hard = old
    if hard != resource.RLIM_INFINITY:
        nbytes = min(nbytes, hard)
    if nbytes <= 0 or (soft != resource.RLIM_INFINITY and soft <= nbytes):
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, old)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (``python -m irpass.testing.soak --help``); returns the exit
    status: 1 if anything failed."""
    parser = argparse.ArgumentParser(
        prog="python -m irpass.testing.soak",
        description="Run every std pass and the default pipeline on random programs and "
        "check meaning, well-formedness, types and that the input is unchanged.")
    parser.add_argument("--programs", type=int, default=100, help="how many programs")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first program")
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--config", action="append", default=[], metavar="NAME",
                        help="run only this configuration (repeatable)")
    parser.add_argument("--list-configs", action="store_true", help="print them and exit")
    parser.add_argument("--ignore", action="append", default=[], metavar="REGEX",
                        help="count failures whose signature matches as ignored")
    parser.add_argument("--max-nodes", type=int, default=24, help="size of @main")
    parser.add_argument("--inputs", type=int, default=1, help="input sets per program")
    parser.add_argument("--shrink-budget", type=float, default=60.0, metavar="SECONDS",
                        help="time to shrink each failure (0: print it as generated)")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                        help="time limit of one pass run (0: none)")
    parser.add_argument("--progress", action="store_true",
                        help="print a line every 50 programs (for logs; on a terminal a "
                        "progress line is shown anyway)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress line on the terminal")
    parser.add_argument("--memory-limit", type=float, default=4.0, metavar="GB",
                        help="address-space limit of each process, so a pass that blows "
                        "up fails with MemoryError instead of starving the machine (0: none)")
    args = parser.parse_args(argv)
    with _memory_limit(int(args.memory_limit * 2**30)):
        return _run(parser, args)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    configs = std_configs()
    if args.list_configs:
        for c in configs:
            print(c.name)
        return 0
    if args.config:
        known = {c.name: c for c in configs}
        missing = [n for n in args.config if n not in known]
        if missing:
            parser.error(f"unknown config {missing[0]!r}; see --list-configs")
        configs = [known[n] for n in args.config]
    if args.programs < 0 or args.jobs < 1:
        parser.error("--programs must be >= 0 and --jobs >= 1")
    report = run_soak(args.programs, args.seed, configs=configs, jobs=args.jobs,
                      max_nodes=args.max_nodes, inputs=args.inputs,
                      shrink_budget=args.shrink_budget, timeout=args.timeout,
                      ignore=args.ignore, stream=sys.stdout, progress=args.progress,
                      live=not args.quiet)
    counts = report.by_signature()
    if counts:
        print("failures by signature:")
        for sig, n in counts.most_common():
            print(f"  {n:5d}  {sig}")
    if report.ignored:
        print("ignored by signature:")
        for sig, n in Counter(f.signature for f in report.ignored).most_common():
            print(f"  {n:5d}  {sig}")
    print(report.summary())
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
