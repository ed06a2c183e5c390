"""PassTimingInstrument: how long each pass took, nested the way the passes ran.

A pass that starts while another pass's body is running (a
:class:`~irpass.transform.Sequential`'s children, or passes a pass body calls
itself) is recorded under it. Requirements (``PassInfo.required``) run before
the pass that needs them, not inside it, so they appear as its preceding
siblings, as in TVM.

Executions are aggregated by path: the same pass name at the same position in
the tree is one row, with the number of completed calls. A pass that applies
rewrite rules (SimplifyExpr, Canonicalize, a rule set's pass) reports how often
each rule fired (``record_rewrite_hits``, called by
:func:`irpass.transform.rewrites.report_hits`); the row adds them up over its
calls and :meth:`~PassTimingInstrument.render` lists them under it. Read the
result as text with :meth:`PassTimingInstrument.render` or as data with
:meth:`PassTimingInstrument.timings`; both are emptied when the context the
instrument served is left (``exit_pass_ctx``), so call them inside the
``with`` block::

    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        pipeline(mod)
        print(timing.render())
"""

from __future__ import annotations

from collections.abc import Mapping
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any, NamedTuple

from .base import PassInstrument

if TYPE_CHECKING:
    from ..ir.module import IRModule
    from ..transform.diagnostics import DiagnosticContext
    from ..transform.info import PassInfo

__all__ = ["PassTimingInstrument", "TimingRow"]

# Past this many unread records the log is folded into the rows, so that a context
# that runs passes for a long time keeps memory bounded by its distinct rows.
_FOLD_AT = 1 << 16


class TimingRow(NamedTuple):
    """One row of :meth:`PassTimingInstrument.timings`.

    - ``name``: the pass name;
    - ``depth``: nesting level, 0 for passes that ran outside any other pass;
    - ``total_ns``: summed wall time of its completed calls, in nanoseconds;
    - ``self_ns``: ``total_ns`` minus the time of the passes nested in those calls;
    - ``calls``: number of completed calls (0 when every call raised);
    - ``hits``: ``(rule, times it fired)`` pairs over those calls, by rule name, for a
      pass that reports rewrite hits (empty otherwise).
    """

    name: str
    depth: int
    total_ns: int
    self_ns: int
    calls: int
    hits: tuple[tuple[str, int], ...] = ()


class _Node:
    """The aggregate of every execution of one pass at one position in the tree."""

    __slots__ = ("name", "parent", "children", "total_ns", "child_ns", "calls", "hits")

    def __init__(self, name: str, parent: _Node | None) -> None:
        self.name = name
        self.parent = parent
        # dicts keep insertion order: children come out in first-start order
        self.children: dict[str, _Node] = {}
        self.total_ns = 0
        self.child_ns = 0
        self.calls = 0
        self.hits: dict[str, int] = {}


class PassTimingInstrument(PassInstrument):
    """Times every pass execution (``time.perf_counter_ns``), nested and aggregated.

    A pass that raised never gets ``run_after_pass``: its call is not counted
    (a row whose every call raised shows 0 calls and 0 time, with the passes
    that completed inside it still listed beneath it), and the passes that run
    afterwards are placed by what is actually running (the context's
    ``diag.pass_name``), not under the pass that raised.
    """

    def __init__(self) -> None:
        self._reset()

    # -- instrument points ----------------------------------------------------------
    # The points only append a record (the clock reading and who was running); the
    # rows are built when read (_fold). W4 (1,000 trivial passes): 1.35 us per pass
    # execution with this instrument when each point updated the tree, below 1 us
    # with records.
    def enter_pass_ctx(self) -> None:
        """Start from nothing: no rows, no passes in flight."""
        self._reset()

    def exit_pass_ctx(self) -> None:
        """Drop the records: :meth:`render` and :meth:`timings` are empty afterwards."""
        self._reset()

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Open an execution of ``info``'s pass under the pass whose body is running."""
        diag = self._diag
        if diag is None:
            # The context this instrument serves: the one running passes now. Its
            # diag names the pass whose body is running (see _fold).
            from ..transform.context import PassContext  # it imports this package

            diag = self._diag = PassContext.current().diag
        log = self._log
        # the clock is read last so the bookkeeping above is not charged to the pass
        log.append((info, diag.pass_name, perf_counter_ns()))
        if len(log) > _FOLD_AT:
            self._fold()

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Close the execution of ``info``'s pass and add its time to its row."""
        self._log.append((perf_counter_ns(), info))

    def record_rewrite_hits(self, pass_name: str, hits: Mapping[str, int]) -> None:
        """Add ``hits`` (rule name -> times it fired), reported by the running pass
        ``pass_name``, to that pass's row."""
        self._log.append((pass_name, dict(hits), None, None))

    def _fold(self) -> None:
        """Add the records to the rows and empty the log.

        Replays the executions in the order they happened, with a stack of the
        ones in flight: each ``[info, node, start_ns, child_ns]``.
        """
        log, self._log = self._log, []
        stack = self._stack
        for record in log:
            if len(record) == 3:  # a pass started: (info, running pass name, start)
                info, running, start = record
                if stack:
                    # Entries left by passes that raised sit above the pass that is
                    # really running; the executor named that one in diag.pass_name.
                    while stack and stack[-1][0].name != running:
                        stack.pop()
                parent = stack[-1][1] if stack else self._root
                name = info.name
                node = parent.children.get(name)
                if node is None:
                    node = parent.children[name] = _Node(name, parent)
                stack.append([info, node, start, 0])
            elif len(record) == 2:  # a pass ended: (end, info)
                end, info = record
                # Compare identities, not names: the same PassInfo object is handed to
                # run_before_pass and run_after_pass, and a nested pass may share a name.
                for i in range(len(stack) - 1, -1, -1):
                    if stack[i][0] is info:
                        break
                else:
                    continue  # its start was not seen (instrument installed mid-pass)
                _, node, start, child_ns = stack[i]
                del stack[i:]  # anything above it belongs to passes that raised
                elapsed = end - start
                node.total_ns += elapsed
                node.child_ns += child_ns
                node.calls += 1
                if stack:
                    stack[-1][3] += elapsed
            else:  # rewrite hits: (pass name, hits, None, None)
                pass_name, hits = record[0], record[1]
                for entry in reversed(stack):
                    if entry[0].name == pass_name:
                        row = entry[1].hits
                        for rule, n in hits.items():
                            row[rule] = row.get(rule, 0) + n
                        break

    # -- results ----------------------------------------------------------------------
    def timings(self) -> list[TimingRow]:
        """The rows, parents before their children, siblings in first-start order.

        The grand total is the sum of ``total_ns`` over the rows of depth 0.
        Empty when nothing was recorded (or after the context was left).
        """
        self._fold()
        rows: list[TimingRow] = []

        def visit(node: _Node, depth: int) -> None:
            for child in node.children.values():
                self_ns = child.total_ns - child.child_ns
                hits = tuple(sorted(child.hits.items()))
                rows.append(
                    TimingRow(child.name, depth, child.total_ns, self_ns, child.calls, hits)
                )
                visit(child, depth + 1)

        visit(self._root, 0)
        return rows

    def render(self) -> str:
        """A text table of :meth:`timings`, or ``""`` when nothing was recorded.

        A header line names the columns: the pass name (indented two spaces per
        nesting level), total and self time in microseconds, number of calls and
        the share of the grand total in percent. Under a pass that reported rewrite
        hits, one line per rule that fired: the rule's name (indented one level
        more), the times it fired in the Calls column and ``hits`` for a percentage.
        """
        rows = self.timings()
        if not rows:
            return ""
        grand = sum(r.total_ns for r in rows if r.depth == 0)
        names = ["  " * r.depth + r.name for r in rows]
        rules = ["  " * (r.depth + 1) + rule for r in rows for rule, _ in r.hits]
        width = max(len("Pass"), *(len(n) for n in names + rules))
        lines = [
            f"{'Pass':<{width}}  {'Total us':>12}  {'Self us':>12}  {'Calls':>6}  {'Percent':>7}"
        ]
        for label, r in zip(names, rows, strict=True):
            percent = 100.0 * r.total_ns / grand if grand else 0.0
            lines.append(
                f"{label:<{width}}  {r.total_ns / 1e3:>12.1f}  {r.self_ns / 1e3:>12.1f}  "
                f"{r.calls:>6}  {percent:>6.1f}%"
            )
            indent = "  " * (r.depth + 1)
            for rule, n in r.hits:
                lines.append(f"{indent + rule:<{width}}  {'':>12}  {'':>12}  {n:>6}  {'hits':>7}")
        return "\n".join(lines) + "\n"

    def _reset(self) -> None:
        self._root = _Node("", None)
        self._stack: list[list[Any]] = []
        self._log: list[tuple] = []
        self._diag: DiagnosticContext | None = None
