"""The HTML page of a pipeline run (what :class:`irpass.instrument.ReportInstrument` writes).

One self-contained file: inline CSS and inline SVG, no script, font or picture fetched
from anywhere, so it opens the same offline, attached to a bug report or in CI's
artifacts. Sections fold with ``<details>`` (no script needed):

- the summary of the run: model, output, pipeline, opt level, times, op calls and
  nodes before and after, file sizes, op counts;
- the findings (``CheckEach``'s failure, ``irpass bisect``'s result), each linking to
  the pass it blames;
- the timeline: every pass in the order it started, nested, with its time, the change
  of op calls, changed or not, skipped and why;
- one ``<section class="pass-change" data-pass="NAME">`` per pass that changed the
  module: the unified diff of its text (constants elided) and, with Graphviz, pictures
  of the changed region before and after.

The changed region of a function is what the pass made and what it dropped: its
dataflow nodes (calls, tuples, projections, lets, ifs) that compute nothing the other side
computed. Nodes are immutable, so rewriting one node rebuilds all its consumers up to the
result; such a copy (same op and attributes, reading the same variables and constants,
at the same place when the two sides' nodes are lined up in dataflow order) is left out.
:func:`changed_region` cuts the rest out as a subgraph (what feeds it becomes a parameter
named after its producer), the first nodes in dataflow order that fit in ``max_nodes``
boxes, and :func:`irpass.viz.to_dot` draws it.
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import IRPassError
from ..ir.expr import Expr
from ..ir.functor import ExprMutator
from ..ir.nodes import Call, Constant, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from ..ir.op import Op
from ..ir.types import TensorType, TupleType

if TYPE_CHECKING:
    from ..instrument.report import Finding, PassChange, PassRecord
    from ..ir.module import IRModule

__all__ = ["Region", "ReportData", "changed_region", "changed_regions", "render_report"]

#: Diff lines shown per pass; the rest is left out with a note (a pass that rewrites
#: all of BERT would otherwise put megabytes of diff in the page).
MAX_DIFF_LINES = 4000
#: Diffs of at most this many changed lines start unfolded.
OPEN_DIFF_LINES = 400
#: Functions drawn per pass (the first ones that changed).
MAX_FUNCTIONS = 2

_DATAFLOW = (Call, Tuple, TupleGetItem, Let, If)
_LEAVES = (Var, Constant, GlobalVar)
_DONE = object()
#: Rebuilt nodes are lined up (a sequence match, quadratic at worst: 0.4 s for 2,500 nodes a
#: side of one repeated token) only up to this many new nodes on both sides together;
#: above it every new node counts as changed.
MAX_ALIGNED = 4000


@dataclass
class ReportData:
    """Everything the page shows (see :meth:`irpass.instrument.ReportInstrument.write`)."""

    summary: Mapping[str, Any] = field(default_factory=dict)
    records: Sequence[PassRecord] = ()
    changes: Sequence[PassChange] = ()
    findings: Sequence[Finding] = ()
    pictures: bool = True
    elide_constants: int = 16
    max_nodes: int = 40
    skips_known: bool = True  # the pipeline was known: the passes it skipped are listed


@dataclass
class Region:
    """The changed part of one function: ``before``/``after`` are expressions drawing it
    (``None``: nothing of that side changed, or the function is absent), ``shown`` and
    ``total`` count the changed nodes drawn and found on each side."""

    function: str
    before: Expr | None
    after: Expr | None
    shown: tuple[int, int]
    total: tuple[int, int]


# -- the changed region ---------------------------------------------------------------
def _dataflow_nodes(func: Function) -> list[Expr]:
    """The nodes of ``func``'s body in post order (inputs first), not entering nested
    functions (a fused function is drawn whole, inside the call that uses it)."""
    order: list[Expr] = []
    seen: set[Expr] = set()
    # a node is pushed under a marker: popping the marker means its children are done
    stack: list[Any] = [func.body]
    push, pop = stack.append, stack.pop
    while stack:
        node = pop()
        if node is _DONE:
            order.append(pop())
            continue
        if node in seen:
            continue
        seen.add(node)
        push(node)
        push(_DONE)
        if type(node) is not Function:
            stack.extend(reversed(node.children()))
    return order


def _token(node: Expr) -> tuple:
    """What a node computes, for lining up the two sides: its kind, a call's op and
    attributes (the same object: a pass that rebuilds a call over new arguments keeps
    them), a projection's index, and the variables and constants it reads."""
    leaves = tuple(id(c) for c in node.children() if type(c) in _LEAVES)
    if type(node) is Call:
        op = node.op
        head: object = op.name if type(op) is Op else id(op)
        return (Call, head, id(node.attrs), leaves)
    if type(node) is TupleGetItem:
        return (TupleGetItem, node.index, leaves)
    return (type(node), leaves)


def _unchanged(nodes_b: list[Expr], nodes_a: list[Expr]) -> dict[Expr, Expr]:
    """The nodes of ``nodes_a`` (post order) that are not part of what the pass changed,
    each with its counterpart in ``nodes_b``: the same node, or a consumer the pass
    rebuilt because an input changed (nodes are immutable, so a rewrite rebuilds every
    node above it up to the result). The rebuilt ones are found by lining up the two
    post orders (:class:`difflib.SequenceMatcher` over :func:`_token` of each node):
    what lines up computes the same thing from the same place."""
    set_b, set_a = set(nodes_b), set(nodes_a)
    same = {n: n for n in nodes_a if n in set_b}
    rest_b = [n for n in nodes_b if n not in set_a]
    rest_a = [n for n in nodes_a if n not in set_b]
    if not rest_a or not rest_b or len(rest_a) + len(rest_b) > MAX_ALIGNED:
        return same
    matcher = difflib.SequenceMatcher(
        None, [_token(n) for n in rest_b], [_token(n) for n in rest_a], autojunk=False
    )
    for i, j, size in matcher.get_matching_blocks():
        for k in range(size):
            same[rest_a[j + k]] = rest_b[i + k]
    return same


def changed_region(
    before: Function | None,
    after: Function | None,
    max_nodes: int,
    name: str = "main",
    modules: tuple[IRModule | None, IRModule | None] = (None, None),
) -> Region:
    """What a pass changed in a function: the dataflow nodes of ``after`` that compute
    nothing ``before`` computed (see :func:`_unchanged`) and those of ``before`` that
    ``after`` no longer computes, each side cut out as an expression of the first (in
    dataflow order) that fit in ``max_nodes`` boxes (see :func:`_first`). ``modules``
    (before, after) resolve calls of global functions when the cut-out parts are typed."""
    nodes_b = _dataflow_nodes(before) if before is not None else []
    nodes_a = _dataflow_nodes(after) if after is not None else []
    same = _unchanged(nodes_b, nodes_a)
    kept = set(same.values())
    new_b = [n for n in nodes_b if n not in kept and isinstance(n, _DATAFLOW)]
    new_a = [n for n in nodes_a if n not in same and isinstance(n, _DATAFLOW)]
    shown_b, shown_a = _first(new_b, max_nodes), _first(new_a, max_nodes)
    return Region(
        name,
        _cut(shown_b, modules[0]) if shown_b else None,
        _cut(shown_a, modules[1]) if shown_a else None,
        (len(shown_b), len(shown_a)),
        (len(new_b), len(new_a)),
    )


def _first(nodes: list[Expr], budget: int) -> list[Expr]:
    """The first of ``nodes`` that fit in ``budget`` boxes (at least one): a call of a
    fused function is drawn with the function's calls inside, and counts them too."""
    taken: list[Expr] = []
    used = 0
    for node in nodes:
        size = 1
        if type(node) is Call and type(node.op) is Function:
            size += sum(isinstance(n, _DATAFLOW) for n in _dataflow_nodes(node.op))
        if taken and used + size > budget:
            break
        taken.append(node)
        used += size
    return taken


def changed_regions(
    before: IRModule, after: IRModule, max_nodes: int, max_functions: int = MAX_FUNCTIONS
) -> tuple[list[Region], int]:
    """The :func:`changed_region` of each function that differs (added and removed ones
    too), the first ``max_functions`` with a changed node, and how many differ in all."""
    names_a = [gv.name_hint for gv, _ in after.items()]
    names_b = [gv.name_hint for gv, _ in before.items()]
    funcs_a = {gv.name_hint: f for gv, f in after.items()}
    funcs_b = {gv.name_hint: f for gv, f in before.items()}
    differ = [n for n in names_a if funcs_b.get(n) is not funcs_a[n]]
    differ += [n for n in names_b if n not in funcs_a]
    regions = []
    for name in differ:
        if len(regions) == max_functions:
            break
        fb, fa = funcs_b.get(name), funcs_a.get(name)
        region = changed_region(fb, fa, max_nodes, name, (before, after))
        if region.total != (0, 0):
            regions.append(region)
    return regions, len(differ)


def _cut(region: list[Expr], mod: IRModule | None) -> Expr:
    """The subgraph ``region`` as an expression: its nodes not used inside it are the
    result (a tuple of them if several), what feeds it from outside becomes a var."""
    inside = set(region)
    used: set[Expr] = set()
    inputs: dict[Expr, Var] = {}
    for node in region:
        children = node.children()
        if type(node) is Call and type(node.op) is not Op:
            children = children[1:]  # a called function is drawn with its call
        for child in children:
            if child in inside:
                used.add(child)
            elif isinstance(child, _DATAFLOW) and child not in inputs:
                inputs[child] = Var(f"{_label(child)}_{len(inputs)}", _type_of(child))
    outputs = [n for n in region if n not in used]
    root = outputs[0] if len(outputs) == 1 else Tuple(outputs)
    mutator = ExprMutator()
    mutator.memo.update(inputs)
    cut = mutator.visit(root)
    from ..ir.type_infer import infer_type

    try:
        return infer_type(cut, mod)
    except (IRPassError, ValueError, TypeError):  # e.g. a let-bound var of unknown type
        return cut  # types only label the edges: draw it without them


def _label(node: Expr) -> str:
    if type(node) is Call and type(node.op) is Op:
        return re.sub(r"\W", "_", node.op.name.rpartition(".")[2])
    return type(node).__name__.lower()


def _type_of(node: Expr) -> Any:
    t = node._checked_type
    return t if isinstance(t, (TensorType, TupleType)) else None


# -- pictures -----------------------------------------------------------------------------
class _Pictures:
    """Draws regions with :mod:`irpass.viz` and Graphviz; remembers why it cannot."""

    def __init__(self, enabled: bool, elide: int, max_nodes: int) -> None:
        self.missing: str | None = None if enabled else "pictures are off"
        self.elide = elide
        self.max_nodes = max_nodes
        self.count = 0

    def svg(self, expr: Expr) -> str:
        """Inline SVG of ``expr``, or ``""`` when pictures cannot be drawn (see ``missing``)."""
        if self.missing is not None:
            return ""
        try:
            from . import GraphvizNotFound, render, to_dot
        except ImportError as exc:
            self.missing = f"pictures need irpass.viz ({exc})"
            return ""
        try:
            dot = to_dot(expr, max_nodes=self.max_nodes * 2, elide_constants=self.elide)
            data = render(dot, "svg")
        except GraphvizNotFound as exc:  # its message says what is missing and how to get it
            self.missing = str(exc).rstrip(".")
            return ""
        except Exception as exc:  # noqa: BLE001 - the report is written when a run failed
            # too; a picture that cannot be drawn must not lose the rest of it
            return f'<p class="failed">picture failed: {_e(f"{type(exc).__name__}: {exc}")}</p>'
        self.count += 1
        return _inline_svg(data.decode("utf-8"), f"p{self.count}-")


def _inline_svg(svg: str, prefix: str) -> str:
    """``svg`` (a file Graphviz wrote) ready to sit in the page: no XML prolog, doctype or
    comments, ids made unique in the page with ``prefix``."""
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r'\bid="', f'id="{prefix}', svg)
    return re.sub(r'href="#', f'href="#{prefix}', svg)


# -- the page -------------------------------------------------------------------------------
_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1400px;
padding:16px 24px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 12px}h2{font-size:18px;margin:24px 0 8px}h3{font-size:15px}
table{border-collapse:collapse;margin:6px 0}td,th{padding:2px 10px;text-align:left;
border-bottom:1px solid #e3e6eb;vertical-align:top}th{background:#f3f5f8}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.bar{display:inline-block;height:10px;background:#5b8def;border-radius:2px}
.changed{color:#0a6b2d;font-weight:600}.skipped{color:#8a8f98}.failed{color:#b3261e;
font-weight:600}.plus{color:#0a6b2d}.minus{color:#b3261e}
pre{background:#f6f8fa;padding:8px;overflow:auto;font:12px/1.35 ui-monospace,Menlo,Consolas,
monospace;max-height:60vh}
pre.diff .add{background:#e6ffec;display:block}pre.diff .del{background:#ffebe9;display:block}
pre.diff .hunk{color:#6f42c1;display:block}
.finding{border-left:4px solid #b3261e;padding:4px 12px;margin:8px 0;background:#fff8f7}
.pair{display:flex;gap:16px;flex-wrap:wrap}.pair figure{flex:1 1 45%;margin:0;min-width:300px;
border:1px solid #e3e6eb;padding:6px;overflow:auto}figcaption{font-weight:600;margin-bottom:4px}
svg{max-width:100%;height:auto}.note{color:#5f6673}section.pass-change{border-top:2px solid
#e3e6eb;margin-top:16px}
"""


def render_report(data: ReportData) -> str:
    """The report's HTML text."""
    pictures = _Pictures(data.pictures, data.elide_constants, data.max_nodes)
    changes = [_change_section(i, c, data, pictures) for i, c in enumerate(data.changes)]
    summary = data.summary
    title = f"irpass report: {summary['model']}" if summary.get("model") else "irpass report"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        _summary_section(data, pictures),
        _findings_section(data),
        _timeline_section(data),
        '<section id="changes"><h2>Passes that changed the module</h2>',
    ]
    if not changes:
        parts.append('<p class="note">No pass changed the module.</p>')
    parts.extend(changes)
    parts.append("</section></body></html>\n")
    return "\n".join(p for p in parts if p)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _seconds(s: object) -> str:
    if not isinstance(s, (int, float)):
        return _e(s)
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def _bytes(n: object) -> str:
    if not isinstance(n, int):
        return _e(n)
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _before_after(pair: object, fmt: Any = str) -> str:
    if not isinstance(pair, Mapping):
        return _e(pair)
    b, a = pair.get("before"), pair.get("after")
    text = f"{fmt(b)} &rarr; {fmt(a)}"
    if isinstance(b, int) and isinstance(a, int) and not isinstance(b, bool):
        text += f" ({_delta(a - b)})"
    return text


def _delta(d: int) -> str:
    if d > 0:
        return f'<span class="plus">+{d}</span>'
    if d < 0:
        return f'<span class="minus">&minus;{-d}</span>'
    return "0"


def _summary_section(data: ReportData, pictures: _Pictures) -> str:
    s = data.summary
    rows: list[tuple[str, str]] = []
    for key, label in (
        ("model", "Model"),
        ("output", "Output"),
        ("pipeline", "Pipeline"),
        ("opt_level", "Opt level"),
    ):
        if s.get(key) is not None:
            rows.append((label, f"<code>{_e(s[key])}</code>"))
    time = s.get("time")
    if isinstance(time, Mapping):
        shown = [
            f"{k} {_seconds(time[k])}"
            for k in ("load", "passes", "check", "save", "total")
            if time.get(k) is not None
        ]
        if shown:
            rows.append(("Time", ", ".join(shown)))
    if s.get("nodes") is not None:
        rows.append(("Op calls", _before_after(s["nodes"])))
    if s.get("check") is not None:
        rows.append(("Check", _e(s["check"])))
    size = s.get("size")
    if isinstance(size, Mapping):
        rows.append(("Size", f"{_bytes(size.get('input'))} &rarr; {_bytes(size.get('output'))}"))
    ran = [r for r in data.records if r.skipped is None and not r.group]
    rows.append(
        (
            "Passes",
            f"{len(ran)} ran, {len(data.changes)} changed the module, "
            f"{sum(r.skipped is not None for r in data.records)} skipped",
        )
    )
    out = ['<section id="summary"><h2>Summary</h2><table>']
    out += [f"<tr><th>{label}</th><td>{value}</td></tr>" for label, value in rows]
    out.append("</table>")
    if data.changes and pictures.missing is not None and data.pictures:
        out.append(f'<p class="note" id="pictures-note">No pictures: {_e(pictures.missing)}.</p>')
    ops = s.get("ops")
    if isinstance(ops, Mapping):
        out.append(_ops_table(ops.get("before") or {}, ops.get("after") or {}))
    out.append("</section>")
    return "\n".join(out)


def _ops_table(before: Mapping[str, int], after: Mapping[str, int]) -> str:
    names = sorted(
        set(before) | set(after),
        key=lambda n: (-(before.get(n, 0) != after.get(n, 0)), -before.get(n, 0), n),
    )
    rows = "".join(
        f'<tr><td><code>{_e(n)}</code></td><td class="n">{before.get(n, 0)}</td>'
        f'<td class="n">{after.get(n, 0)}</td>'
        f'<td class="n">{_delta(after.get(n, 0) - before.get(n, 0))}</td></tr>'
        for n in names
    )
    return (
        f"<details><summary>Op counts ({len(names)} ops)</summary><table><tr><th>Op</th>"
        f"<th>Before</th><th>After</th><th>&Delta;</th></tr>{rows}</table></details>"
    )


def _findings_section(data: ReportData) -> str:
    if not data.findings:
        return ""
    out = ['<section id="findings"><h2>Findings</h2>']
    for finding in data.findings:
        out.append(_finding(finding, data))
    out.append("</section>")
    return "\n".join(out)


def _finding(finding: Any, data: ReportData) -> str:
    if isinstance(finding, str):
        return f'<div class="finding"><pre>{_e(finding)}</pre></div>'
    culprit = None
    if type(finding).__name__ == "BisectResult":
        title, text = "irpass bisect", finding.render()
        culprit = finding.step.info.name
        modules = (finding.step.before, finding.step.after)
    else:
        culprit = getattr(finding, "pass_name", None)
        title = type(finding).__name__ + (f" in pass {culprit}" if culprit else "")
        text = str(finding)
        modules = (getattr(finding, "before", None), getattr(finding, "after", None))
    link = ""
    for i, change in enumerate(data.changes):
        if change.before is modules[0] and change.after is modules[1]:
            link = f' <a href="#change-{i}">see the change of {_e(change.name)}</a>'
            break
    return (
        f'<div class="finding" data-pass="{_e(culprit or "")}"><h3>{_e(title)}{link}</h3>'
        f"<pre>{_e(text)}</pre></div>"
    )


def _timeline_section(data: ReportData) -> str:
    records = data.records
    longest = max((r.seconds or 0.0 for r in records if not r.group), default=0.0) or 1.0
    out = [
        '<section id="timeline"><h2>Timeline</h2>',
        "<table><tr><th>#</th><th>Pass</th>"
        "<th>Time</th><th></th><th>Op calls &Delta;</th><th>Result</th></tr>",
    ]
    for i, r in enumerate(records):
        indent = "&nbsp;" * (4 * r.depth)
        name = f"{indent}<code>{_e(r.name)}</code>"
        if r.skipped is not None:
            out.append(
                f'<tr class="skipped"><td class="n">{i + 1}</td><td>{name}</td><td></td>'
                f"<td></td><td></td><td>skipped: {_e(r.skipped)}</td></tr>"
            )
            continue
        time = _seconds(r.seconds) if r.seconds is not None else ""
        bar = ""
        if r.seconds is not None and not r.group:
            width = max(1, round(120 * r.seconds / longest))
            bar = f'<span class="bar" style="width:{width}px"></span>'
        if r.failed is not None:
            result = f'<span class="failed">failed: {_e(r.failed)}</span>'
        elif r.seconds is None:
            result = '<span class="failed">did not finish</span>'
        elif r.group:
            result = '<span class="note">(its passes)</span>'
        elif r.changed:
            result = '<span class="changed">changed</span>'
        else:
            result = "unchanged"
        if r.change is not None:
            result += f' <a href="#change-{r.change}">diff</a>'
        delta = _delta(r.delta) if r.changed else ""
        out.append(
            f'<tr><td class="n">{i + 1}</td><td>{name}</td><td class="n">{time}</td>'
            f'<td>{bar}</td><td class="n">{delta}</td><td>{result}</td></tr>'
        )
    out.append("</table>")
    if not data.skips_known:
        out.append(
            '<p class="note">Passes a Sequential skipped (opt level, disabled_pass) are not '
            "listed: the report was not given the pipeline.</p>"
        )
    out.append("</section>")
    return "\n".join(out)


def _diff_html(diff: str) -> tuple[str, int, int]:
    lines = diff.splitlines()
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    out = []
    for line in lines[:MAX_DIFF_LINES]:
        cls = (
            "hunk"
            if line.startswith("@@")
            else "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else ""
        )
        text = _e(line)
        out.append(f'<span class="{cls}">{text}</span>' if cls else text + "\n")
    if len(lines) > MAX_DIFF_LINES:
        out.append(
            f"\n... {len(lines) - MAX_DIFF_LINES} more lines (the whole diff: "
            "--instrument print-changed:diff)\n"
        )
    return "".join(out), added, removed


def _change_section(i: int, change: PassChange, data: ReportData, pictures: _Pictures) -> str:
    record = (
        data.records[change.record]
        if change.record is not None and change.record < len(data.records)
        else None
    )
    diff, added, removed = _diff_html(change.diff)
    facts = [f"+{added} &minus;{removed} lines"]
    if record is not None and record.seconds is not None:
        facts.append(_seconds(record.seconds))
    if record is not None and record.changed:
        facts.append(f"op calls {_delta(record.delta)}")
    out = [
        f'<section class="pass-change" id="change-{i}" data-pass="{_e(change.name)}">',
        f"<h2>{i + 1}. <code>{_e(change.name)}</code></h2>",
        f'<p class="note">{" &middot; ".join(facts)}'
        + (f" &middot; <b>{_e(change.note)}</b>" if change.note else "")
        + "</p>",
        # long diffs start folded: the page opens on the timeline, not on one diff
        f"<details{' open' if added + removed <= OPEN_DIFF_LINES else ''}><summary>Diff"
        f'</summary><pre class="diff">{diff}</pre></details>',
    ]
    out.append(_pictures_html(change, data, pictures))
    out.append("</section>")
    return "\n".join(out)


def _pictures_html(change: PassChange, data: ReportData, pictures: _Pictures) -> str:
    if pictures.missing is not None:
        return ""
    regions, differ = changed_regions(change.before, change.after, data.max_nodes)
    if not regions:
        return (
            '<p class="note">No dataflow node changed (types or function attributes '
            "only): nothing to draw.</p>"
        )
    out = ["<details open><summary>The changed region, before and after</summary>"]
    for region in regions:
        sides = (
            ("before", region.before, region.shown[0], region.total[0]),
            ("after", region.after, region.shown[1], region.total[1]),
        )
        svgs = [pictures.svg(expr) if expr is not None else "" for _, expr, _, _ in sides]
        if pictures.missing is not None:
            return ""
        figures = []
        for (side, _, shown, total), svg in zip(sides, svgs, strict=True):
            count = f"{total} changed nodes" + (
                f", the first {shown} drawn" if shown < total else ""
            )
            body = svg or '<p class="note">nothing</p>'
            figures.append(
                f'<figure class="{side}"><figcaption>{side.capitalize()}: '
                f"{count}</figcaption>{body}</figure>"
            )
        out.append(f'<h3>@{_e(region.function)}</h3><div class="pair">{"".join(figures)}</div>')
    if differ > len(regions):
        out.append(
            f'<p class="note">{differ - len(regions)} more functions changed (see the diff).</p>'
        )
    out.append("</details>")
    return "\n".join(out)
