"""What ``irpass optimize`` reports about a run: the op counts a user counts, the times
of its phases, the sizes of its files, as text for people and as a JSON record.

A model's size is counted in op calls (``nn.conv2d(...)``, ``add(...)``), wherever they
are: outside fused functions and inside them (the ``Primitive`` functions FuseOps makes),
with how many of them are inside how many fused functions said separately, so that
fusing, which adds a function per group and moves calls into it, does not look like
growth. Variables, constants and tuples are not counted: they are not work.

The JSON record (``irpass optimize --json``; one per model in a list with
``--output-dir``) is :meth:`RunSummary.record`; its keys and units are documented
there and in the README.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..ir import Call, Function, IRModule, Op
from .info import format_table

__all__ = [
    "OpCounts",
    "RunSummary",
    "count_ops",
    "failure_record",
    "file_size",
    "human_bytes",
    "human_seconds",
]

_WIDTH = 100  # where the summary's pass list wraps


@dataclass
class OpCounts:
    """The op calls of a module: in all, inside fused functions, and by op name."""

    calls: int = 0
    fused_calls: int = 0  # of ``calls``, those inside Primitive (fused) functions
    fused_functions: int = 0
    ops: Counter[str] = field(default_factory=Counter)

    def text(self) -> str:
        """``"24"``, or ``"24 (20 in 8 fused functions)"``."""
        if not self.fused_functions:
            return str(self.calls)
        fns = "function" if self.fused_functions == 1 else "functions"
        return f"{self.calls} ({self.fused_calls} in {self.fused_functions} fused {fns})"


def count_ops(mod: IRModule) -> OpCounts:
    """Count every call of an op in ``mod``'s functions, inside fused functions too;
    a node shared by several users is counted once. Iterative: any depth."""
    seen: set[Any] = set()
    outside, fused = _op_calls([func for _, func in mod.items()], seen)
    counts = OpCounts(fused_functions=len(fused))
    inside: list[Op] = []
    while fused:  # a fused function's body, and any fused function inside it
        ops, nested = _op_calls([f.body for f in fused], seen)
        inside += ops
        counts.fused_functions += len(nested)
        fused = nested
    counts.calls = len(outside) + len(inside)
    counts.fused_calls = len(inside)
    for op, n in Counter(outside + inside).items():
        counts.ops[op.name] += n
    return counts


def _op_calls(roots: list[Any], seen: set[Any]) -> tuple[list[Op], list[Function]]:
    """The op of every op call reachable from ``roots`` outside fused functions, and the
    fused functions met; ``seen`` grows by the nodes visited."""
    # the hot loop of a summary of a big model: a tenth of the time of a generic walk
    # (no children() call for op calls, the counting left to Counter)
    ops: list[Op] = []
    fused: list[Function] = []
    stack = list(roots)
    pop, push, add, note = stack.pop, stack.extend, seen.add, ops.append
    while stack:
        node = pop()
        if node in seen:
            continue
        add(node)
        kind = type(node)
        if kind is Call:
            op = node.op
            if type(op) is Op:
                note(op)
                push(node.args)
                continue
        elif kind is Op:
            continue
        elif kind is Function and node.attrs.get("Primitive"):
            fused.append(node)
            continue
        push(node.children())
    return ops, fused


def file_size(files: list[Path]) -> int | None:
    """The bytes of the files that exist among ``files`` (a model and its side files);
    None when none does."""
    sizes = [f.stat().st_size for f in files if f.is_file()]
    return sum(sizes) if sizes else None


def human_bytes(n: int | None) -> str:
    """``"712 B"``, ``"1.4 KB"``, ``"136.2 MB"`` (powers of 1000, as ``ls --si``)."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


def human_seconds(s: float) -> str:
    """``"184.5 ms"`` below a second, ``"15.6 s"`` above."""
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.1f} s"


@dataclass
class RunSummary:
    """Everything ``optimize`` says about one run; filled in as the run goes."""

    model: str  # the MODEL argument, "-" for standard input, or "example NAME"
    pipeline: str  # the pipeline string ("default" for the default pipeline)
    opt_level: int
    output: str | None = None  # the -o path, "-" for standard output, None: not written
    ran: list[str] = field(default_factory=list)
    time: dict[str, float] = field(default_factory=dict)  # load, passes, check, save, total
    before: OpCounts | None = None
    after: OpCounts | None = None
    file_nodes: int | None = None  # nodes of the written file, as its format counts them
    size_in: int | None = None
    size_out: int | None = None
    check: str | None = None
    note: str | None = None  # e.g. why the result was not printed

    def record(self) -> dict[str, Any]:
        """The JSON record of the run (``--json``).

        Keys: ``model`` (str), ``output`` (str or null: not written), ``status``
        (``"ok"``), ``pipeline`` (pipeline string), ``opt_level`` (int), ``passes`` (the
        names of the passes that ran, in order), ``time`` (seconds: ``load``, ``passes``,
        ``save``, ``total``, and ``check`` with ``--check``), ``nodes`` (op calls:
        ``before``, ``after``), ``fused`` (``before``/``after``: ``calls`` inside fused
        functions and ``functions``), ``file_nodes`` (nodes of the written file as its
        format counts them, ONNX's main graph nodes; null when it does not count them),
        ``ops`` (``before``/``after``: op name -> calls), ``size`` (bytes: ``input``,
        ``output``; null when there is no file), ``check`` (the ``--check`` line or
        null), ``note`` (or null).
        """
        before, after = self.before or OpCounts(), self.after or OpCounts()
        return {
            "model": self.model,
            "output": self.output,
            "status": "ok",
            "pipeline": self.pipeline,
            "opt_level": self.opt_level,
            "passes": list(self.ran),
            "time": {k: round(v, 6) for k, v in self.time.items()},
            "nodes": {"before": before.calls, "after": after.calls},
            "fused": {
                "before": {"calls": before.fused_calls, "functions": before.fused_functions},
                "after": {"calls": after.fused_calls, "functions": after.fused_functions},
            },
            "file_nodes": self.file_nodes,
            "ops": {
                "before": dict(sorted(before.ops.items())),
                "after": dict(sorted(after.ops.items())),
            },
            "size": {"input": self.size_in, "output": self.size_out},
            "check": self.check,
            "note": self.note,
        }

    def report_summary(self) -> dict[str, Any]:
        """The summary :meth:`irpass.instrument.ReportInstrument.write` takes (same numbers)."""
        rec = self.record()
        keys = ("model", "output", "pipeline", "time", "nodes", "ops", "size", "check")
        return {k: rec[k] for k in keys}

    def render(self) -> str:
        """The summary text: header, passes, times, counts, sizes, check, op table."""
        shown = (
            "default_pipeline" if self.pipeline == "default" else (f"pipeline {self.pipeline!r}")
        )
        lines = [f"irpass optimize: {self.model}, {shown} at opt_level {self.opt_level}"]
        t = self.time
        phases = ", ".join(
            f"{k} {human_seconds(t[k])}" for k in ("load", "passes", "check", "save") if k in t
        )
        fields = [
            ("passes", _pass_list(self.ran)),
            ("time", f"{human_seconds(t.get('total', 0.0))} ({phases})"),
        ]
        if self.before is not None and self.after is not None:
            fields.append(("nodes", f"{self.before.text()} -> {self.after.text()} op calls"))
        if self.file_nodes is not None:
            fields.append(("file", f"{self.file_nodes} nodes in the written file"))
        if self.size_in is not None or self.size_out is not None:
            fields.append(("size", f"{human_bytes(self.size_in)} -> {human_bytes(self.size_out)}"))
        if self.check is not None:
            fields.append(("check", self.check))
        if self.output is not None:
            fields.append(("wrote", "standard output" if self.output == "-" else self.output))
        if self.note is not None:
            fields.append(("note", self.note))
        for key, value in fields:
            lines.append(_wrap(f"  {key + ':':<9}", value))
        if self.before is not None and self.after is not None:
            table = _op_table(self.before.ops, self.after.ops)
            if table:
                lines.append("")
                lines.extend("  " + row for row in table)
        return "\n".join(lines) + "\n"


def failure_record(model: str, exc: BaseException, seconds: float) -> dict[str, Any]:
    """The JSON record of a run that failed with ``exc`` after ``seconds``: ``status``
    ``"failed"``, ``exit`` (the code the command exits with) and ``error`` (its message)."""
    from .main import describe_error  # the one mapping of errors to codes and messages

    code, message = describe_error(exc)
    return {
        "model": model,
        "output": None,
        "status": "failed",
        "exit": code,
        "error": message,
        "time": {"total": round(seconds, 6)},
    }


def _pass_list(ran: list[str]) -> str:
    """``"5 run: InferType, FoldConstant x2, ..."``: names in first-run order with counts."""
    if not ran:
        return "none ran"
    counts = Counter(ran)
    names = [n if counts[n] == 1 else f"{n} x{counts[n]}" for n in dict.fromkeys(ran)]
    return f"{len(ran)} run: " + ", ".join(names)


def _wrap(prefix: str, text: str) -> str:
    """``prefix + text``, wrapped at :data:`_WIDTH` columns, aligned."""
    lines: list[str] = []
    line = prefix
    for word in text.split(" "):
        if len(line) + len(word) + 1 > _WIDTH and line.strip():
            lines.append(line.rstrip())
            line = " " * len(prefix)
        line += word + " "
    lines.append(line.rstrip())
    return "\n".join(lines)


def _op_table(before: Counter[str], after: Counter[str]) -> list[str]:
    names = sorted(set(before) | set(after))
    if not names:
        return []
    rows = []
    for name in names:
        b, a = before.get(name, 0), after.get(name, 0)
        change = "" if a == b else f"{a - b:+d}"
        rows.append((name, str(b), str(a), change))
    return format_table(("op", "before", "after", "change"), rows, align="<>>>").splitlines()
