"""ReportInstrument: an HTML report of a pipeline run, one self-contained file.

The instrument records every pass that runs (its time, whether it changed the module,
the node count after it), the passes a :class:`~irpass.transform.Sequential` or an
instrument skipped and why, and for each pass that changed the module the modules
around it and the unified diff of their text. :meth:`ReportInstrument.write` turns that
into the page :mod:`irpass.viz.report` builds: the run's summary, a timeline of the
passes, one section per pass that changed the module (its diff, and pictures of the
changed region when Graphviz is installed) and the findings of ``CheckEach`` and
``irpass bisect``.

Change detection and diffs are :class:`~irpass.instrument.PrintChanged`'s (with
``diff=True``): a pass changed the module when its text, constants elided, differs.

A report made with a ``path`` writes itself when the context it serves is left, also
when a pass failed (the failure, e.g. :class:`~irpass.instrument.CheckEachError` from a
``CheckEach`` in the same context, is then one of its findings). The records stay
after the context is left, so the CLI can add what it learns afterwards (the save's
time, the file sizes) and call :meth:`~ReportInstrument.write` itself.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING, Any, Union

from ..errors import IRPassError, PassError
from .base import PassInstrument
from .printing import PrintChanged

if TYPE_CHECKING:
    from ..debug.bisect import BisectResult
    from ..ir.module import IRModule
    from ..transform.context import PassContext
    from ..transform.info import PassInfo
    from ..transform.passes import Pass

__all__ = ["Finding", "PassChange", "PassRecord", "ReportInstrument", "check_report_path"]

#: What the report lists as findings: a pass's failure (``CheckEachError`` names the
#: pass that changed the outputs), ``irpass bisect``'s result, or a line of text.
Finding = Union[PassError, "BisectResult", str]

_SUFFIXES = (".html", ".htm")


@dataclass
class PassRecord:
    """One row of the timeline: a pass that ran, failed or was skipped.

    ``depth`` is the nesting level (0 outside any pass); ``seconds`` the wall time
    (``None``: it did not finish); ``calls`` the op calls after it (inside fused
    functions too) when it changed the module, ``delta`` the change of that count;
    ``group``: other passes ran inside it; ``skipped``: why it did not run (``None``: it
    ran); ``failed``: its error's first line; ``change``: the index of its
    :class:`PassChange`.
    """

    name: str
    depth: int
    seconds: float | None = None
    changed: bool = False
    calls: int | None = None
    delta: int = 0
    group: bool = False
    skipped: str | None = None
    failed: str | None = None
    change: int | None = None


@dataclass
class PassChange:
    """A pass that changed the module: the modules around it and the diff of their text."""

    name: str
    before: IRModule
    after: IRModule
    diff: str
    record: int | None = None  # its row in the timeline
    note: str = ""  # why it is shown (a finding's culprit)


@dataclass
class _Running:
    info: PassInfo
    before: IRModule
    start: float
    record: int
    inner: bool = False


@dataclass
class _Run:
    """What one context's run recorded."""

    records: list[PassRecord] = field(default_factory=list)
    changes: list[PassChange] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    first: IRModule | None = None
    last: IRModule | None = None
    ctx: PassContext | None = None


class ReportInstrument(PassInstrument):
    """Records a pipeline run for an HTML report (see the module documentation).

    ``path``: where the report goes (``.html``); given, the report writes itself when
    the context is left. ``pictures``: draw the changed region of each pass that
    changed the module (needs the ``viz`` extra and Graphviz's ``dot``; without
    them the page says so in one line);
    ``elide_constants``: constants of more elements show without data, in the diffs
    and the pictures; ``max_nodes``: the most nodes of a changed region drawn per
    picture; ``pipeline``: the pipeline that runs (a pass, or its text), from which
    the report lists the passes its Sequentials skip and why (the instrument sees
    only the passes that start). Without it, ``write``'s ``summary["pipeline"]``
    serves.
    """

    name = "report"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        pictures: bool = True,
        elide_constants: int = 16,
        max_nodes: int = 40,
        pipeline: Pass | str | None = None,
    ) -> None:
        self.path = check_report_path(path) if path is not None else None
        self.pictures = bool(pictures)
        self.elide_constants = int(elide_constants)
        if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
            raise ValueError(f"report: max_nodes must be a positive int, got {max_nodes!r}")
        self.max_nodes = max_nodes
        self.pipeline = pipeline
        self._run = _Run()
        self._counted: list[tuple[IRModule, int]] = []
        self._stack: list[_Running] = []
        self._asked: PassInfo | None = None
        self._printer = self._new_printer()
        self._buffer: io.StringIO = self._printer.stream  # type: ignore[assignment]

    # -- instrument points ----------------------------------------------------------
    def enter_pass_ctx(self) -> None:
        """Start a new run: forget the records of the last one."""
        self._run = _Run()
        self._counted = []
        self._stack = []
        self._asked = None
        self._printer = self._new_printer()
        self._buffer = self._printer.stream  # type: ignore[assignment]

    def exit_pass_ctx(self) -> None:
        """Note the pass failure that ends the run, if any; write the report if it has a
        path. The records stay for :meth:`write`."""
        self._note_skip(None)
        # The context leaves while the exception that ends its `with` is being handled:
        # that is how a failure raised past this instrument (CheckEach's) is seen.
        exc = sys.exc_info()[1]
        if isinstance(exc, IRPassError):
            self._note_failure(exc)
        self._stack = []
        if self.path is not None:
            self.write()

    def should_run(self, mod: IRModule, info: PassInfo) -> bool:
        """Note the question: a pass asked about that then does not start was skipped
        by an instrument."""
        self._note_skip(info)
        self._asked = info
        return True

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Open the pass's row."""
        if self._asked is not info:
            self._note_skip(info)
        self._asked = None
        run = self._run
        if run.ctx is None:
            from ..transform.context import PassContext  # the context imports this package

            run.ctx = PassContext.current()
            run.first = mod
        if self._stack:
            self._stack[-1].inner = True
            run.records[self._stack[-1].record].group = True
        run.records.append(PassRecord(info.name, len(self._stack)))
        self._printer.run_before_pass(mod, info)
        self._buffer.seek(0)
        self._buffer.truncate()
        self._stack.append(_Running(info, mod, perf_counter(), len(run.records) - 1))

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Close the pass's row: its time, and its diff if it changed the module."""
        end = perf_counter()
        self._note_skip(None)  # the last pass asked about inside this one did not start
        stack = self._stack
        for i in range(len(stack) - 1, -1, -1):
            if stack[i].info is info:
                break
        else:
            return  # its start was not seen
        entry = stack[i]
        del stack[i:]  # anything above it belongs to passes that raised
        run = self._run
        record = run.records[entry.record]
        record.seconds = end - entry.start
        record.group = entry.inner
        run.last = mod
        self._printer.run_after_pass(mod, info)
        diff = self._take_diff()
        if diff is None:
            return
        calls = self._calls(mod)
        record.changed = True
        record.calls = calls
        record.delta = calls - self._calls(entry.before)
        record.change = len(run.changes)
        run.changes.append(PassChange(info.name, entry.before, mod, diff, entry.record))

    # -- results ----------------------------------------------------------------------
    @property
    def records(self) -> list[PassRecord]:
        """The timeline of the last run: passes in start order, skipped ones included
        where the pipeline is known."""
        return _with_skipped(self._run, self._pipeline_pass(None))

    @property
    def changes(self) -> list[PassChange]:
        """The passes of the last run that changed the module, in order."""
        return list(self._run.changes)

    def write(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        summary: Mapping[str, Any] | None = None,
        findings: Sequence[Finding] = (),
    ) -> Path:
        """Write the report of the last run to ``path`` (default: the instrument's own)
        and return where it went.

        ``summary`` adds what the instrument cannot know (all keys optional): ``model``,
        ``output``, ``pipeline`` (its text), ``time`` (``load``, ``passes``, ``save``,
        ``total`` in seconds), ``nodes`` (op calls, as the CLI counts them: ``before``,
        ``after``), ``check`` (a line saying how ``--check`` went), ``ops`` (``before``,
        ``after``: ``{op: calls}``), ``size`` (``input``, ``output`` in bytes). What it
        leaves out the report fills from the run (pass time, node counts) or omits.
        ``findings`` adds a ``CheckEachError``, a ``BisectResult`` or lines of text.
        A missing folder is a ``FileNotFoundError``, another suffix than ``.html`` a
        ``ValueError``.
        """
        from ..ir.serialize import atomic_path
        from ..viz.report import ReportData, render_report

        if path is None:
            if self.path is None:
                raise ValueError(
                    "report: no path to write to (give write() a path, or ReportInstrument one)"
                )
            target = self.path
        else:
            target = check_report_path(path)
        summary = dict(summary or {})
        run = self._run
        known = list(run.findings)
        for finding in findings:
            if not any(finding is f for f in known):
                known.append(finding)
                self._add_culprit(finding)
        pipeline = self._pipeline_pass(summary.get("pipeline"))
        records = _with_skipped(run, pipeline)
        passes = sum(r.seconds or 0.0 for r in run.records if r.depth == 0)
        time = dict(summary.get("time") or {})
        time.setdefault("passes", passes)
        summary["time"] = time
        if run.first is not None and "nodes" not in summary:
            last = run.last if run.last is not None else run.first
            summary["nodes"] = {"before": self._calls(run.first), "after": self._calls(last)}
        if "pipeline" not in summary and isinstance(self.pipeline, str):
            summary["pipeline"] = self.pipeline
        if run.ctx is not None:
            summary.setdefault("opt_level", run.ctx.opt_level)
        data = ReportData(
            summary=summary,
            records=records,
            changes=list(run.changes),
            findings=known,
            pictures=self.pictures,
            elide_constants=self.elide_constants,
            max_nodes=self.max_nodes,
            skips_known=pipeline is not None,
        )
        html = render_report(data)
        with atomic_path(target) as tmp:
            Path(tmp).write_text(html, encoding="utf-8")
        return target

    # -- internals --------------------------------------------------------------------
    def _new_printer(self) -> PrintChanged:
        return PrintChanged(diff=True, stream=io.StringIO(), elide_constants=self.elide_constants)

    def _take_diff(self) -> str | None:
        """What the printer wrote for the pass that just ended: its diff, or ``None``."""
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        if not text.startswith("*** IR Dump After"):
            return None
        return text.partition("\n")[2]

    def _calls(self, mod: IRModule) -> int:
        """:func:`_count_calls` of ``mod``, remembering the last two modules counted
        (a pass's input is usually the last pass's output)."""
        for known, n in self._counted:
            if known is mod:
                return n
        n = _count_calls(mod)
        self._counted = [(mod, n), *self._counted[:1]]
        return n

    def _note_skip(self, next_info: PassInfo | None) -> None:
        """A pass asked about (``should_run``) that did not start was skipped."""
        asked = self._asked
        if asked is not None and asked is not next_info:
            self._run.records.append(
                PassRecord(
                    asked.name, len(self._stack), skipped="an instrument's should_run said no"
                )
            )
        self._asked = None

    def _note_failure(self, exc: IRPassError) -> None:
        """Record ``exc``, which ended the run, as a finding and mark its pass failed."""
        run = self._run
        if any(exc is f for f in run.findings):
            return
        name = getattr(exc, "pass_name", None)
        if name is None or not any(r.name == name for r in run.records):
            return  # not raised by this run's passes (a handled error around the context)
        for record in reversed(run.records):
            if record.name == name and record.skipped is None:
                first = str(exc).splitlines()[0]
                record.failed = first if len(first) <= 160 else first[:157] + "..."
                break
        run.findings.append(exc)
        self._add_culprit(exc)

    def _add_culprit(self, finding: Finding) -> None:
        """Give a finding's culprit pass a change section of its own, if it has none."""
        from ..instrument.check import CheckEachError

        before = after = None
        if isinstance(finding, CheckEachError):
            name, before, after = finding.pass_name, finding.before, finding.after
            note = "check-each: this pass changed the outputs"
        elif type(finding).__name__ == "BisectResult":
            step = finding.step  # type: ignore[union-attr]
            name, before, after = step.info.name, step.before, step.after
            note = "bisect: the first bad pass"
        if before is None or after is None:
            return
        run = self._run
        for change in run.changes:
            if change.before is before and change.after is after:
                change.note = note
                return
        diff = _diff(before, after, name, self.elide_constants)
        record = None
        for i in range(len(run.records) - 1, -1, -1):
            if run.records[i].name == name and run.records[i].change is None:
                record = i
                run.records[i].change = len(run.changes)
                break
        run.changes.append(PassChange(name, before, after, diff or "", record, note))

    def _pipeline_pass(self, text: object) -> Pass | None:
        """The pipeline as a pass: the instrument's own, else ``text`` parsed."""
        from ..transform.passes import Pass

        pipeline = self.pipeline if self.pipeline is not None else text
        if isinstance(pipeline, Pass):
            return pipeline
        if not isinstance(pipeline, str) or self._run.ctx is None:
            return None
        from ..transform.pipeline import default_pipeline
        from ..transform.pipeline_text import parse_pipeline

        ctx = self._run.ctx
        if pipeline.strip() in ("default", "default_pipeline"):
            return default_pipeline(ctx.opt_level)
        try:
            return parse_pipeline(pipeline)
        except (IRPassError, ValueError, KeyError, TypeError):
            return None  # the summary's text is informative only


def check_report_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`~pathlib.Path` if a report can be written there: a
    ``ValueError`` for a suffix other than ``.html``/``.htm``, a ``FileNotFoundError``
    naming a missing folder."""
    p = Path(path)
    if p.suffix.lower() not in _SUFFIXES:
        raise ValueError(f"report: {str(path)!r} must end in .html (an HTML report is written)")
    parent = p.parent
    if not parent.is_dir():
        raise FileNotFoundError(2, "report: no such folder to write the report into", str(parent))
    return p


def _diff(before: IRModule, after: IRModule, name: str, elide: int) -> str | None:
    """PrintChanged's diff of ``before`` -> ``after`` for the pass ``name``."""
    from ..transform.info import PassInfo

    printer = PrintChanged(diff=True, stream=io.StringIO(), elide_constants=elide)
    info = PassInfo(0, name)
    printer.run_before_pass(before, info)
    stream = printer.stream
    assert isinstance(stream, io.StringIO)
    stream.seek(0)
    stream.truncate()
    printer.run_after_pass(after, info)
    text = stream.getvalue()
    return text.partition("\n")[2] if text else None


def _count_calls(mod: IRModule) -> int:
    # op calls, inside fused functions too: the measure of work the CLI's summary uses
    # (variables, constants and tuples are not work)
    from ..debug.reduce import count_calls

    return count_calls(mod)


def _with_skipped(run: _Run, pipeline: Pass | None) -> list[PassRecord]:
    """The run's records with the passes the pipeline's Sequentials skipped inserted
    where they would have run (needs the pipeline and the context it ran in)."""
    records = run.records
    ctx = run.ctx
    if pipeline is None or ctx is None:
        return list(records)
    from ..transform.passes import Sequential

    out: list[PassRecord] = []
    pos = 0  # the next record not yet placed
    # (pass, depth) in pipeline order: a Sequential's children follow it
    stack: list[tuple[Any, int]] = [(pipeline, 0)]
    while stack:
        p, depth = stack.pop()
        info = p.info
        reason = _skip_reason(ctx, info) if depth > 0 else None
        if reason is not None:
            out.append(PassRecord(info.name, depth, skipped=reason))
            continue
        # place every record up to the one of this pass (requirements run before it)
        for j in range(pos, len(records)):
            if records[j].name == info.name and records[j].skipped is None:
                out.extend(records[pos : j + 1])
                pos = j + 1
                break
        if isinstance(p, Sequential):
            stack.extend((q, depth + 1) for q in reversed(p.passes))
    out.extend(records[pos:])
    return out


def _skip_reason(ctx: PassContext, info: PassInfo) -> str | None:
    """Why a Sequential under ``ctx`` does not run a pass, or ``None`` if it does."""
    if info.name in ctx.disabled_pass:
        return "disabled (disabled_pass)"
    if info.name in ctx.required_pass:
        return None
    if info.opt_level > ctx.opt_level:
        return f"opt_level {info.opt_level} > {ctx.opt_level}"
    return None
