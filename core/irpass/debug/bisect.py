"""Bisection: the first pass, then the first rewrite inside it, that makes a module bad.

:func:`bisect` runs the pipeline once and keeps the module after every pass that did
work (a pass inside which no other pass ran), then binary-searches that list with an
:class:`~irpass.debug.oracle.Oracle` for the first bad one: O(log n) questions for n
passes. Inside that pass it binary-searches the number of rewrites the pass may make
(:meth:`irpass.transform.PassContext.debug_counter`, the config option
``debug_counter``), rerunning the pass alone on the module it was given: the first
rewrite that makes the result bad, with the rewrite's site and a diff of the module
before and after it. A pass that asks no debug counter is bisected to the pass only.

A pass that raises is the culprit as it is; the search inside it then looks for the
first rewrite after which it raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import IRPassError
from ..instrument.base import PassInstrument
from ..ir.describe import describe
from ..ir.expr import Expr
from ..ir.module import IRModule
from ..ir.nodes import Call, Constant, Function, If, Let, Tuple, TupleGetItem
from ..ir.op import Op
from ..ir.structural import structural_equal
from ..transform import Pass, PassContext, PassInfo, Sequential
from ..transform.context import DEBUG_COUNTER
from ..transform.registry import get_pass
from .oracle import Oracle

__all__ = ["BisectError", "BisectResult", "Step", "bisect"]


class BisectError(IRPassError):
    """Nothing to bisect (the input is bad already, or the result is not bad), or a pass
    that cannot be rerun."""


@dataclass
class Step:
    """One pass that ran: where, and the modules before and after it."""

    info: PassInfo
    position: str
    before: IRModule
    after: IRModule | None  # None: the pass raised
    error: IRPassError | None = None


@dataclass
class BisectResult:
    """What :func:`bisect` found."""

    step: Step
    index: int  # of the step among the passes that ran (0-based)
    passes_run: int
    oracle: str
    why: list[str]
    rewrites: int | None = None  # counted rewrites of the pass; None: it counts none
    rewrite: int | None = None  # the first bad one (1-based)
    site: str | None = None
    before: str = ""  # the subexpression the rewrite replaced, and what it became
    after: str = ""
    questions: dict[str, int] = field(default_factory=dict)

    def render(self) -> str:
        """The report ``irpass bisect`` prints."""
        s = self.step
        lines = [f"first bad pass: {s.info.name} (pass {self.index + 1} of {self.passes_run}"
                 f" that ran, at {s.position or 'the top'})"]
        if s.error is not None:
            lines.append(f"  it raised: {str(s.error).splitlines()[0]}")
        else:
            lines.append(f"  after it: {self.oracle}")
            lines.extend(f"    {w}" for w in self.why[:3])
        if self.rewrites is None:
            lines.append(f"  {s.info.name} asks no debug counter: bisected to the pass only "
                         "(call ctx.debug_counter() before each rewrite to bisect inside it)")
        elif self.rewrite is not None:
            lines.append(f"first bad rewrite: {self.rewrite} of {self.rewrites} in "
                         f"{s.info.name}, at {self.site}")
            if self.before:
                lines.append(f"  before: {self.before}")
                lines.append(f"  after:  {self.after}")
        q = ", ".join(f"{k} {v}" for k, v in self.questions.items())
        lines.append(f"questions asked: {q}")
        return "\n".join(lines) + "\n"


class _Steps(PassInstrument):
    """Records every pass that did work: a pass inside which no other pass ran."""

    name = "irpass-bisect-steps"

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self._stack: list[list] = []

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        if self._stack:
            self._stack[-1][2] = True
        ctx = PassContext.current()
        self._stack.append([mod, ctx.pass_position(), False, info])

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        before, position, had_inner, _ = self._stack.pop()
        if not had_inner and mod is not before:
            self.steps.append(Step(info, position, before, mod))

    def failed(self, error: IRPassError) -> None:
        """The innermost running pass raised ``error``: it is the last step."""
        if self._stack:
            before, position, _, info = self._stack[-1]
            self.steps.append(Step(info, position, before, None, error))


def _passes_by_info(pipeline: Pass) -> dict[int, Pass]:
    out: dict[int, Pass] = {}
    stack = [pipeline]
    while stack:
        p = stack.pop()
        out[id(p.info)] = p
        if isinstance(p, Sequential):
            stack.extend(p.passes)
    return out


def bisect(mod: IRModule, pipeline: Pass, oracle: Oracle, *, opt_level: int = 2,
           required_pass: tuple[str, ...] = (), disabled_pass: tuple[str, ...] = (),
           config: Mapping[str, Any] | None = None) -> BisectResult:
    """Find the first pass of ``pipeline`` (run on ``mod``), then the first rewrite in
    it, after which ``oracle`` says the module is bad. :class:`BisectError` when the
    input is bad already or the pipeline's result is not."""
    config = {k: v for k, v in (config or {}).items() if k != DEBUG_COUNTER}

    def context(extra: Mapping[str, Any] | None = None, instruments: list | None = None
                ) -> PassContext:
        return PassContext(opt_level=opt_level, required_pass=required_pass,
                           disabled_pass=disabled_pass, instruments=instruments,
                           config={**config, **(extra or {})})

    asked: dict[str, int] = {}

    def bad(m: IRModule, phase: str) -> bool:
        asked[phase] = asked.get(phase, 0) + 1
        return oracle.is_bad(m)

    if bad(mod, "input"):
        raise BisectError(f"the input model is bad already ({oracle.describe()}): nothing to "
                          "bisect; check the test on the unmodified model")
    recorder = _Steps()
    try:
        with context(instruments=[recorder]):
            result = pipeline(mod)
    except IRPassError as exc:
        recorder.failed(exc)
        result = None
    steps = recorder.steps
    if not steps:
        raise BisectError("no pass of the pipeline changed the model: nothing to bisect")
    last = steps[-1]
    if last.error is not None:
        index = len(steps) - 1
        why = [str(last.error).splitlines()[0]]
    else:
        assert result is not None
        if not bad(result, "passes"):
            raise BisectError(f"the optimized model is not bad ({oracle.describe()} is "
                              "false after the whole pipeline): nothing to bisect")
        # the first step whose result is bad: step i's result is bad, i-1's is not
        lo, hi = -1, len(steps) - 1  # lo: known good (-1: the input), hi: known bad
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if bad(steps[mid].after, "passes"):
                hi = mid
            else:
                lo = mid
        index = hi
        bad(steps[index].after, "passes")  # the oracle's explanation of this step
        why = list(getattr(oracle, "last", []))
    step = steps[index]
    found = BisectResult(step, index, len(steps), oracle.describe(), why, questions=asked)
    _bisect_rewrites(found, _passes_by_info(pipeline), context, bad)
    return found


def _bisect_rewrites(found: BisectResult, passes: dict[int, Pass], context: Any,
                     bad: Any) -> None:
    """Binary-search the first bad rewrite of ``found.step``'s pass."""
    step = found.step
    name = step.info.name
    p = passes.get(id(step.info))
    if p is None:  # a requirement the executor made: the registered pass of that name
        try:
            p = get_pass(name)
        except KeyError:
            return

    def run(limit: int) -> tuple[IRModule | None, PassContext]:
        ctx = context({DEBUG_COUNTER: {name: limit}})
        try:
            with ctx:
                return p(step.before), ctx
        except IRPassError:
            return None, ctx

    def is_bad(out: IRModule | None) -> bool:
        return out is None if step.error is not None else (out is None or bad(out, "rewrites"))

    full, ctx = run(-1)
    total = ctx.debug_counts.get(name, 0)
    if total == 0:
        return
    found.rewrites = total
    lo, hi = 0, total  # lo: known good, hi: known bad
    if not is_bad(full):
        return  # the pass alone, rerun, does not show it: leave the report at the pass
    while hi - lo > 1:
        mid = (lo + hi) // 2
        out, _ = run(mid)
        if is_bad(out):
            hi = mid
        else:
            lo = mid
    good_out, _ = run(hi - 1)
    bad_out, ctx = run(hi)
    found.rewrite = hi
    found.site = ctx.debug_site(name) or "(no site recorded)"
    if good_out is not None and bad_out is not None:
        where = first_difference(good_out, bad_out)
        if where is not None:
            label, a, b = where
            found.before = f"{describe(a)}  (in {label})"
            found.after = describe(b)


def first_difference(a_mod: IRModule, b_mod: IRModule) -> tuple[str, Expr, Expr] | None:
    """The innermost pair of subexpressions where two modules differ, in the first
    function that differs: descending from the roots while the nodes agree and one
    child differs (the first such, in a DAG). One rewrite usually shows as that pair: ``x`` and
    ``negative(x)``, ``nn.batch_norm(...)`` and ``add(...)``. ``None``: equal modules."""
    for gv, fb in b_mod.items():
        if gv.name_hint not in a_mod:
            return f"@{gv.name_hint}", fb, fb
        a: Expr = a_mod[gv.name_hint]
        b: Expr = fb
        if structural_equal(a, b, map_free_vars=True):
            continue
        where = f"@{gv.name_hint}"
        while True:
            kids_a, kids_b = a.children(), b.children()
            if (type(a) is not type(b) or len(kids_a) != len(kids_b) or not _same_head(a, b)):
                break
            # in a DAG a changed node shows under every user of it: follow the first
            pair = next(((i, x, y) for i, (x, y) in enumerate(zip(kids_a, kids_b, strict=True))
                         if not structural_equal(x, y, map_free_vars=True)), None)
            if pair is None:
                break
            i, a_next, b = pair
            where = f"operand {i} of {describe(a, 60)} in @{gv.name_hint}"
            a = a_next
        return where, a, b
    return None


def _same_head(a: Expr, b: Expr) -> bool:
    """Whether two nodes of one kind agree but for their children."""
    t = type(a)
    if t is Call:
        if type(a.op) is Op or type(b.op) is Op:
            return a.op is b.op and structural_equal(a.attrs, b.attrs)
        return structural_equal(a.attrs, b.attrs)
    if t is TupleGetItem:
        return a.index == b.index
    if t is Constant:
        return False  # a leaf: equal constants never get here
    if t is Function:
        return len(a.params) == len(b.params)
    return t in (Tuple, Let, If)
