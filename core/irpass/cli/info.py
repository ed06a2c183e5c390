"""The listing commands: ``irpass passes``, ``rewrites``, ``plugins``, ``pipeline`` and ``config``.

Each prints plain aligned text on stdout (:func:`format_table`), and never
fails because one registered thing misbehaves: a pass factory that needs
arguments or raises is listed with what is known about it.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..plugins import get_plugin_manager
from ..transform import (
    FunctionPass,
    ModulePass,
    Pass,
    Sequential,
    get_pass,
    get_pass_entry,
    list_passes,
    list_rule_sets,
    pipeline_plan,
    registry,
)
from .common import validate

if TYPE_CHECKING:
    from ..plugins import PluginRecord
    from ..settings import Settings
    from ..transform import PassEntry

__all__ = [
    "format_table",
    "format_value",
    "run_config",
    "run_passes",
    "run_rewrites",
    "run_pipeline",
    "run_plugins",
]

_DOC_WIDTH = 72  # longest one-line description before it is cut


def format_table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], align: str | None = None
) -> str:
    """``headers`` and ``rows`` as columns separated by two spaces, one line each.

    ``align`` has one character per column, ``<`` (left, the default) or ``>``
    (right). The last column is not padded, so no line ends in spaces.
    """
    table = [list(map(str, headers)), *(list(map(str, r)) for r in rows)]
    ncols = len(headers)
    align = align or "<" * ncols
    widths = [max(len(r[i]) for r in table) for i in range(ncols)]
    lines = []
    for row in table:
        cells = [
            cell.rjust(widths[i]) if align[i] == ">" else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        if align[-1] != ">":
            cells[-1] = row[-1]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def _out(text: str) -> None:
    sys.stdout.write(text)


def _first_line(text: str | None) -> str:
    line = (text or "").strip().split("\n", 1)[0].strip()
    return line if len(line) <= _DOC_WIDTH else line[: _DOC_WIDTH - 3] + "..."


# -- arguments ----------------------------------------------------------------------------


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print JSON instead of text (the schema is in the README)",
    )


def add_passes_arguments(parser: argparse.ArgumentParser) -> None:
    """``irpass passes [NAME] [--json]``."""
    parser.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="show this pass's whole documentation instead of the list",
    )
    _add_json(parser)


def add_plugins_arguments(parser: argparse.ArgumentParser) -> None:
    """``irpass plugins [-v] [--json]``."""
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="list every contribution of each plugin"
    )
    _add_json(parser)


def add_pipeline_arguments(parser: argparse.ArgumentParser) -> None:
    """``irpass pipeline [--as-string] [--json]`` (-O, -P and the pass filters come from
    :mod:`.main`)."""
    parser.add_argument(
        "--as-string",
        action="store_true",
        help="print the passes that would run as one pipeline string, which -P accepts",
    )
    _add_json(parser)


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """``irpass config [--options] [--json]`` (the pass options come from :mod:`.main`)."""
    parser.add_argument(
        "--options",
        action="store_true",
        help="list every registered config option: type, default, owner and description",
    )
    _add_json(parser)


# -- passes -------------------------------------------------------------------------------


def _generic_docs() -> set[str | None]:
    """Docstrings of the core's pass classes: they describe the class, not the pass."""
    return {c.__doc__ for c in (Pass, ModulePass, FunctionPass, Sequential)} | {None, ""}


def _pass_doc(entry: PassEntry, made: Pass | None) -> str:
    """The first line of the factory's docstring, else the pass function's or class's."""
    generic = _generic_docs()
    candidates = [getattr(entry.factory, "__doc__", None)]
    if made is not None:
        candidates += [
            getattr(getattr(made, "pass_func", None), "__doc__", None),
            type(made).__doc__,
        ]
    for doc in candidates:
        if doc not in generic:
            return _first_line(doc)
    return "-"


def _describe_pass(entry: PassEntry) -> tuple[str, str, str]:
    """``(opt_level, required, description)`` of a registered pass, whatever its factory does."""
    try:
        made = get_pass(entry.name)
    except TypeError:
        try:
            signature = str(inspect.signature(entry.factory))
        except (TypeError, ValueError):
            signature = "(...)"
        doc = _pass_doc(entry, None)
        needs = f"needs arguments: {entry.name}{signature}"
        return "-", "-", needs if doc == "-" else f"{doc} [{needs}]"
    except Exception as exc:  # a broken factory is listed, not fatal
        return "?", "-", _first_line(f"cannot be created: {type(exc).__name__}: {exc}")
    info = made.info
    return str(info.opt_level), ", ".join(info.required) or "-", _pass_doc(entry, made)


def run_passes(args: argparse.Namespace, settings: Settings) -> int:
    """``irpass passes``: name, opt_level, required, plugin and description of every pass."""
    rows = []
    for name in list_passes():
        entry = get_pass_entry(name)
        opt_level, required, doc = _describe_pass(entry)
        rows.append((name, opt_level, required, entry.owner, doc))
    _out(format_table(("pass", "opt_level", "required", "plugin", "description"), rows))
    return 0


def run_rewrites(args: argparse.Namespace, settings: Settings) -> int:
    """``irpass rewrites``: every rewrite rule (``<ruleset>.<rule>``) of the plugins' rule
    sets, with its plugin, whether the settings' ``[rewrites] disable`` leaves it out,
    and its description."""
    off = set(settings.rewrites_disable)
    rows = []
    for name, entry in list_rule_sets().items():
        for full, rule in zip(entry.ruleset.rule_names(), entry.ruleset.rules, strict=True):
            enabled = "no" if name in off or full in off else "yes"
            rows.append((full, entry.owner, enabled, rule.doc or "-"))
    _out(format_table(("rule", "plugin", "enabled", "description"), rows))
    return 0


# -- plugins ------------------------------------------------------------------------------

_KINDS = ("pass", "instrument", "op", "config option", "format", "pipeline", "rewrite")
_PLURAL = {"pass": "passes", "pipeline": "pipeline insertions", "rewrite": "rule sets"}
_SINGULAR = {"pipeline": "pipeline insertion", "rewrite": "rule set"}


def summarize_contributions(record: PluginRecord) -> str:
    """``"3 passes, 1 instrument, 2 pipeline insertions"`` (``"-"`` for nothing)."""
    counts = Counter(c.kind for c in record.contributions)
    kinds = [k for k in _KINDS if k in counts] + sorted(k for k in counts if k not in _KINDS)
    parts = []
    for kind in kinds:
        n = counts[kind]
        word = _SINGULAR.get(kind, kind) if n == 1 else _PLURAL.get(kind, kind + "s")
        parts.append(f"{n} {word}")
    return ", ".join(parts) or "-"


def _indent(text: str, prefix: str = "    ") -> list[str]:
    return [prefix + line for line in text.splitlines() or [""]]


def run_plugins(args: argparse.Namespace, settings: Settings) -> int:
    """``irpass plugins``: every plugin with its status, origin and contributions.

    The settings are validated after the listing, so a config that names a
    pass of a broken plugin still shows the plugin and why it broke.
    """
    records = get_plugin_manager().records()
    rows = [
        (
            r.name,
            r.status,
            f"{r.dist} {r.version or ''}".strip() if r.dist else "-",
            r.source,
            summarize_contributions(r),
        )
        for r in records
    ]
    lines = format_table(
        ("plugin", "status", "distribution", "source", "contributes"), rows
    ).splitlines()
    out = [lines[0]]
    for record, line in zip(records, lines[1:], strict=True):
        out.append(line)
        if record.reason and record.status in ("failed", "blocked"):
            out.extend(_indent(record.reason))
        if args.verbose:
            for c in record.contributions:
                out.append(f"    {c.kind}: {c.name}")
    _out("\n".join(out) + "\n")
    validate(settings)
    return 0


# -- pipeline -----------------------------------------------------------------------------


def _owner(name: str) -> str:
    entry = registry._PASSES.get(name)
    return entry.owner if entry is not None else "-"


def pipeline_tree(root: Pass) -> list[tuple[str, str, str, str]]:
    """Rows ``(pass, opt_level, required, plugin)`` of a pass tree, Sequentials'
    children indented under them."""
    rows: list[tuple[str, str, str, str]] = []
    stack: list[tuple[Pass, int]] = [(root, 0)]
    while stack:
        p, depth = stack.pop()
        info = p.info
        is_seq = isinstance(p, Sequential)
        label = "  " * depth + info.name + (" (Sequential)" if is_seq else "")
        owner = "-" if is_seq else _owner(info.name)
        rows.append((label, str(info.opt_level), ", ".join(info.required) or "-", owner))
        if is_seq:
            stack.extend((c, depth + 1) for c in reversed(p.passes))
    return rows


def run_pipeline(args: argparse.Namespace, settings: Settings) -> int:
    """``irpass pipeline``: the default pipeline's plan, or the configured pipeline's tree."""
    if settings.pipeline not in (None, "default"):
        root = settings.build_pipeline()
        _out(f"pipeline {settings.pipeline!r}\n")
        _out(format_table(("pass", "opt_level", "required", "plugin"), pipeline_tree(root)))
        return 0
    plan = pipeline_plan(settings.opt_level)
    n = len(plan.rows)
    _out(f"default pipeline at opt_level {plan.opt_level}: {n} pass{'es' if n != 1 else ''}\n")
    if plan.rows:
        rows = [
            (str(i), r.pass_name, r.phase, r.anchor, str(r.opt_level), r.owner)
            for i, r in enumerate(plan.rows, 1)
        ]
        _out(
            format_table(
                ("#", "pass", "phase", "placed", "opt_level", "plugin"), rows, align="><<<><"
            )
        )
    if plan.dropped:
        _out("\nleft out:\n")
        for d in plan.dropped:
            _out(f"  {d.pass_name} ({d.owner}, {d.insertion.anchor_text}): {d.reason}\n")
    return 0


# -- config -------------------------------------------------------------------------------


def format_value(value: Any) -> str:
    """A setting's value the way a TOML file would spell it (``None`` as ``(unset)``)."""
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (set, frozenset)):
        value = sorted(value, key=str)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {format_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def run_config(args: argparse.Namespace, settings: Settings) -> int:
    """``irpass config``: every effective setting, its value and where it came from
    (the first row, ``config_file``, is the file used and how it was found).

    Validated after printing, so a wrong config file is shown, then reported.
    """
    described = [(str(k), format_value(v), str(s)) for k, v, s in settings.describe()]
    if described:
        key_width = max(len(k) for k, _, _ in described)
        value_width = max(len(v) for _, v, _ in described)
        for key, value, source in described:
            _out(f"{key:<{key_width}} = {value:<{value_width}}  [{source}]\n")
    validate(settings)
    return 0
