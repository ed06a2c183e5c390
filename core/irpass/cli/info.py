"""The listing commands: ``irpass passes``, ``rewrites``, ``plugins``, ``pipeline`` and ``config``.

Each prints plain aligned text on stdout (:func:`format_table`), and never
fails because one registered thing misbehaves: a pass factory that needs
arguments or raises is listed with what is known about it.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..plugins import get_plugin_manager
from ..transform import (
    FunctionPass,
    ModulePass,
    Pass,
    Sequential,
    close_pass_names,
    get_pass,
    get_pass_entry,
    list_config_options,
    list_passes,
    registry,
)
from .common import validate
from .doctext import first_paragraph, markdown_code_blocks, markdown_to_text, rst_to_text
from .errors import UsageError
from .pipeline_view import PipelineEntry, flatten, option_value, pipeline_entries, pipeline_string

if TYPE_CHECKING:
    from ..plugins import PluginRecord
    from ..settings import Settings
    from ..transform import PassEntry
    from ..transform.config import ConfigOption

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


def _pass_docstring(entry: PassEntry, made: Pass | None) -> str:
    """The factory's docstring, else the pass function's or class's ("" if none says
    more than the core's pass classes)."""
    generic = _generic_docs()
    candidates = [getattr(entry.factory, "__doc__", None)]
    if made is not None:
        candidates += [
            getattr(getattr(made, "pass_func", None), "__doc__", None),
            type(made).__doc__,
        ]
    for doc in candidates:
        if doc not in generic:
            return doc or ""
    return ""


@dataclass
class PassDoc:
    """What ``irpass passes`` knows about one registered pass (the ``--json`` objects)."""

    name: str
    plugin: str
    distribution: str | None = None
    version: str | None = None
    kind: str | None = None  # "function pass", "module pass", "sequential"...
    opt_level: int | None = None
    required: list[str] = field(default_factory=list)
    # "module.qualname(signature)"; a lazily declared pass's "package.module:attr" in the list
    factory: str = ""
    options: list[dict[str, Any]] = field(default_factory=list)
    config: list[dict[str, Any]] = field(default_factory=list)
    summary: str = ""
    description: str = ""
    example: str | None = None
    docs_page: str | None = None
    error: str | None = None  # why the pass cannot be made without arguments


def describe_pass(entry: PassEntry, *, whole: bool = False) -> PassDoc:
    """The :class:`PassDoc` of ``entry``, whatever its factory does; with ``whole``, also
    its documentation page, example, config keys and distribution."""
    doc = PassDoc(name=entry.name, plugin=entry.owner)
    # a pass its plugin declares lazily (the registry's LazyPass) is listed from its
    # declaration, so that listing imports no pass module (and no numpy)
    lazy = getattr(entry, "lazy", None)
    if lazy is not None and not whole:
        doc.opt_level, doc.required = lazy.info.opt_level, list(lazy.info.required)
        doc.factory = lazy.target
        doc.description = rst_to_text(lazy.description)
        doc.summary = first_paragraph(doc.description).split(". ")[0].rstrip(".")
        return doc
    made: Pass | None = None
    try:
        made = get_pass(entry.name)
    except TypeError:
        doc.error = "needs arguments"
    except Exception as exc:  # a broken factory is described, not fatal
        doc.error = f"cannot be created: {type(exc).__name__}: {exc}"
    if made is not None:
        doc.kind = _kind(made)
        doc.opt_level = made.info.opt_level
        doc.required = list(made.info.required)
    elif lazy is not None:
        # a pass that needs arguments: its declaration still says these
        doc.opt_level, doc.required = lazy.info.opt_level, list(lazy.info.required)
    doc.options, signature = _factory_options(entry)
    doc.factory = f"{entry.origin}{signature}"
    doc.description = rst_to_text(_pass_docstring(entry, made))
    doc.summary = first_paragraph(doc.description).split(". ")[0].rstrip(".")
    if not whole:
        return doc
    doc.distribution, doc.version = _distribution(entry.owner)
    page = _docs_page(entry)
    if page is not None:
        doc.docs_page = str(page)
        text = page.read_text(encoding="utf-8")
        blocks = markdown_code_blocks(text)
        doc.example = blocks[0] if blocks else None
        prose = markdown_to_text(_drop_title(text, entry.name))
        doc.description = "\n\n".join(p for p in (doc.description, prose) if p)
    if doc.example is None:
        doc.example = _docstring_example(_pass_docstring(entry, made))
    doc.config = _config_keys(entry.name, page.read_text(encoding="utf-8") if page else "")
    return doc


def _kind(made: Pass) -> str:
    for cls in (Sequential, FunctionPass, ModulePass):
        if isinstance(made, cls):
            return {"Sequential": "sequential", "FunctionPass": "function pass"}.get(
                cls.__name__, "module pass"
            )
    return type(made).__name__


def _factory_options(entry: PassEntry) -> tuple[list[dict[str, Any]], str]:
    """The factory's parameters as ``{"name", "type", "default", "required"}`` (the options a
    pipeline string gives it: ``FuseOps{fuse_opt_level=2}``), and its signature text."""
    try:
        signature = inspect.signature(entry.factory)
    except (TypeError, ValueError):
        return [], "(...)"
    options = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = param.annotation
        if annotation is param.empty:
            type_text = None
        elif isinstance(annotation, str):
            type_text = annotation
        else:
            type_text = getattr(annotation, "__name__", None) or str(annotation)
        required = param.default is param.empty
        options.append(
            {
                "name": param.name,
                "type": type_text,
                "default": None if required else _jsonable(param.default),
                "required": required,
            }
        )
    # written from the options: a module with postponed annotations would quote the types
    parts = []
    for o in options:
        text = o["name"] + (f": {o['type']}" if o["type"] else "")
        if not o["required"]:
            text += f" = {option_value(o['default'])}"
        parts.append(text)
    return options, f"({', '.join(parts)})"


def _distribution(plugin: str) -> tuple[str | None, str | None]:
    """The distribution (name, version) that installed ``plugin``, from its record."""
    try:
        record = get_plugin_manager().record(plugin)
    except KeyError:
        return None, None
    return record.dist, record.version


def _docs_page(entry: PassEntry) -> Path | None:
    """``docs/<Pass>.md`` in the package of the module that defines the pass's factory
    (e.g. ``irpass_std/docs/FoldConstant.md``): where a pack keeps a pass's page."""
    lazy = getattr(entry, "lazy", None)
    top = (lazy.target if lazy is not None else entry.origin).split(".", 1)[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or ()) if spec else ():
        page = Path(location) / "docs" / f"{entry.name}.md"
        if page.is_file():
            return page
    return None


def _drop_title(page: str, name: str) -> str:
    """A pass page without its heading (the pass's name) and the one-line emphasized
    summary under it (kind, opt level, requirements: shown as fields already)."""
    lines = page.splitlines()
    if lines and lines[0].lstrip("#").strip() == name:
        lines = lines[1:]
    while lines and not lines[0].strip():
        lines = lines[1:]
    if lines and re.fullmatch(r"\*[^*].*\*|_[^_].*_", lines[0].strip()):
        lines = lines[1:]
    return "\n".join(lines)


def _docstring_example(docstring: str) -> str | None:
    """A docstring's example: the literal block after a line ending in ``::``, or its
    ``>>>`` lines."""
    lines = inspect.cleandoc(docstring or "").splitlines()
    for i, line in enumerate(lines):
        if line.rstrip().endswith("::") and not line.lstrip().startswith(".."):
            base = len(line) - len(line.lstrip())
            block = []
            for body in lines[i + 1 :]:
                if body.strip() and len(body) - len(body.lstrip()) <= base:
                    break
                block.append(body)
            text = inspect.cleandoc("\n".join(block))
            if text:
                return text
    doctest = [line.strip() for line in lines if line.strip().startswith((">>>", "..."))]
    return "\n".join(doctest) or None


def _config_keys(name: str, page: str) -> list[dict[str, Any]]:
    """The registered config options of pass ``name``: keys with the pass's name as a
    component (``std.FoldConstant.max_elements``), and those its page names."""
    found = []
    for key, option in list_config_options().items():
        if name in key.split(".") or re.search(rf"`{re.escape(key)}`|\b{re.escape(key)}\b", page):
            found.append(_option_json(option))
    return found


def _option_json(option: ConfigOption) -> dict[str, Any]:
    return {
        "key": option.key,
        "type": _type_text(option.value_type),
        "default": _jsonable(option.default),
        "owner": option.owner,
        "description": rst_to_text(option.description),
    }


def _type_text(value_type: type | tuple[type, ...]) -> str:
    types = value_type if isinstance(value_type, tuple) else (value_type,)
    return " or ".join(t.__name__ for t in types)


def _jsonable(value: Any) -> Any:
    """``value`` as JSON can hold it: tuples and sets become lists, mappings objects,
    anything else not a JSON scalar its ``repr``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (set, frozenset)):
        return [_jsonable(v) for v in sorted(value, key=str)]
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return repr(value)


def _print_json(value: Any) -> None:
    _out(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _list_row(doc: PassDoc) -> tuple[str, str, str, str, str]:
    if doc.error == "needs arguments":
        needs = f"needs arguments: {doc.name}{doc.factory[doc.factory.index('(') :]}"
        text = f"{doc.summary} [{needs}]" if doc.summary else needs
        return doc.name, "-", "-", doc.plugin, text
    if doc.error is not None:
        return doc.name, "?", "-", doc.plugin, _first_line(doc.error)
    required = ", ".join(doc.required) or "-"
    return doc.name, str(doc.opt_level), required, doc.plugin, _first_line(doc.summary) or "-"


def run_passes(args: argparse.Namespace, settings: Settings) -> int:
    """``irpass passes``: name, opt_level, required, plugin and description of every pass;
    ``irpass passes NAME``: the whole documentation of one."""
    name = getattr(args, "name", None)
    as_json = getattr(args, "json", False)
    if name is not None:
        try:
            entry = get_pass_entry(name)
        except KeyError:
            close = close_pass_names(name)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UsageError(f"no pass named {name!r}{hint} ('irpass passes' lists them)") from None
        doc = describe_pass(entry, whole=True)
        if as_json:
            _print_json(asdict(doc))
        else:
            _out(format_pass_doc(doc))
        return 0
    docs = [describe_pass(get_pass_entry(n)) for n in list_passes()]
    if as_json:
        _print_json([asdict(d) for d in docs])
        return 0
    rows = [_list_row(d) for d in docs]
    _out(format_table(("pass", "opt_level", "required", "plugin", "description"), rows))
    return 0


def format_pass_doc(doc: PassDoc) -> str:
    """The text of ``irpass passes NAME``."""
    origin = f"{doc.distribution} {doc.version or ''}".strip() if doc.distribution else "-"
    fields = [
        ("plugin", f"{doc.plugin} (distribution {origin})"),
        ("kind", doc.kind or "-"),
        ("opt_level", "-" if doc.opt_level is None else str(doc.opt_level)),
        ("required", ", ".join(doc.required) or "-"),
        ("factory", doc.factory),
    ]
    if doc.error is not None:
        fields.append(("note", doc.error))
    if doc.docs_page:
        fields.append(("docs", doc.docs_page))
    width = max(len(k) for k, _ in fields) + 1
    out = [doc.name, ""] + [f"  {k + ':':<{width}} {v}" for k, v in fields]
    out += ["", "Options (pipeline string: " + _options_example(doc) + "):"]
    if doc.options:
        for o in doc.options:
            default = "required" if o["required"] else f"default {option_value(o['default'])}"
            out.append(f"  {o['name']}: {o['type'] or 'any'}, {default}")
    else:
        out.append("  none")
    out += ["", "Config keys (PassContext config, [config] in irpass.toml):"]
    if doc.config:
        for c in doc.config:
            default = "unset" if c["default"] is None else option_value(c["default"])
            out.append(f"  {c['key']}: {c['type']}, default {default} ({c['owner']})")
            out.extend(_wrap(first_paragraph(c["description"]), "      "))
    else:
        out.append("  none")
    if doc.description:
        out += ["", "Description:", *_indent(doc.description, "  ")]
    if doc.example:
        out += ["", "Example:", *_indent(doc.example, "    ")]
    return "\n".join(line.rstrip() for line in out) + "\n"


def _options_example(doc: PassDoc) -> str:
    if not doc.options:
        return doc.name
    first = doc.options[0]
    value = first["default"] if not first["required"] else "..."
    return f"{doc.name}{{{first['name']}={option_value(value)}}}"


def _wrap(text: str, prefix: str) -> list[str]:
    return textwrap.wrap(text, width=88, initial_indent=prefix, subsequent_indent=prefix)


def run_rewrites(args: argparse.Namespace, settings: Settings) -> int:
    """``irpass rewrites``: every rewrite rule (``<ruleset>.<rule>``) of the plugins' rule
    sets, with its plugin, whether the settings' ``[rewrites] disable`` leaves it out,
    and its description."""
    # here, not at the top: the rule-set machinery imports numpy, which listing passes
    # must not
    from ..transform.rewrites import list_rule_sets

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
    if getattr(args, "json", False):
        _print_json([_plugin_json(r) for r in records])
        validate(settings)
        return 0
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


def _plugin_json(record: PluginRecord) -> dict[str, Any]:
    return {
        "name": record.name,
        "status": record.status,
        "source": record.source,
        "distribution": record.dist,
        "version": record.version,
        "module": record.module,
        "reason": record.reason or None,
        "contributions": [{"kind": c.kind, "name": c.name} for c in record.contributions],
    }


# -- pipeline -----------------------------------------------------------------------------


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
        entry = None if is_seq else registry.lookup(info.name)
        owner = entry.owner if entry is not None else "-"
        rows.append((label, str(info.opt_level), ", ".join(info.required) or "-", owner))
        if is_seq:
            stack.extend((c, depth + 1) for c in reversed(p.passes))
    return rows


def run_pipeline(args: argparse.Namespace, settings: Settings) -> int:
    """``irpass pipeline``: the default pipeline's plan, or the configured pipeline's tree,
    as the settings' ``opt_level``, ``required_pass`` and ``disabled_pass`` run it; with
    ``--as-string`` the passes that run as one pipeline string, with ``--json`` all of it."""
    entries = pipeline_entries(settings)
    flat = flatten(entries)
    default = settings.pipeline is None or settings.pipeline.strip() == "default"
    plan = settings.default_plan() if default else None
    if getattr(args, "as_string", False) and not getattr(args, "json", False):
        _out(pipeline_string(entries) + "\n")
        return 0
    if getattr(args, "json", False):
        _print_json(
            {
                "pipeline": settings.pipeline or "default",
                "opt_level": settings.opt_level,
                "required_pass": list(settings.required_pass),
                "disabled_pass": list(settings.disabled_pass),
                "passes": [e.as_json() for e in flat],
                "left_out": [
                    {
                        "name": d.pass_name,
                        "plugin": d.owner,
                        "placed": d.insertion.anchor_text,
                        "why": d.reason,
                    }
                    for d in (plan.dropped if plan is not None else ())
                ],
                "string": pipeline_string(entries),
            }
        )
        return 0
    if plan is None:
        _out(f"pipeline {settings.pipeline!r}\n")
        _out(
            format_table(
                ("pass", "opt_level", "required", "plugin"),
                pipeline_tree(settings.build_pipeline()),
            )
        )
    else:
        running = [e for e in flat if e.runs]
        n = len(running)
        _out(
            f"default pipeline at opt_level {settings.opt_level}: "
            f"{n} pass{'es' if n != 1 else ''}\n"
        )
        if running:
            rows = [
                (str(i), e.name, e.phase or "-", e.placed or "-", str(e.opt_level), e.plugin)
                for i, e in enumerate(running, 1)
            ]
            _out(
                format_table(
                    ("#", "pass", "phase", "placed", "opt_level", "plugin"), rows, align="><<<><"
                )
            )
    _not_run_section(flat, settings)
    if plan is not None and plan.dropped:
        _out("\nleft out:\n")
        for d in plan.dropped:
            _out(f"  {d.pass_name} ({d.owner}, {d.insertion.anchor_text}): {d.reason}\n")
    return 0


def _not_run_section(flat: list[PipelineEntry], settings: Settings) -> None:
    """The passes of the pipeline the context skips, and those it runs only because
    ``required_pass`` names them."""
    skipped = [e for e in flat if not e.runs]
    forced = [e for e in flat if e.runs and e.why == "required_pass"]
    if skipped:
        _out("\nnot run:\n")
        for e in skipped:
            reason = (
                f"disabled ({settings.source('disabled_pass')})"
                if e.why == "disabled_pass"
                else f"{e.why} (run at -O {e.opt_level} or name it in --required-pass)"
            )
            _out(f"  {e.name}: {reason}\n")
    if forced:
        names = ", ".join(e.name for e in forced)
        _out(
            f"\nrun although above opt_level {settings.opt_level} (required_pass, "
            f"{settings.source('required_pass')}): {names}\n"
        )


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
    (the first row, ``config_file``, is the file used and how it was found);
    ``--options``: every registered config option instead.

    Validated after printing, so a wrong config file is shown, then reported.
    """
    if getattr(args, "options", False):
        return _run_config_options(args)
    described = settings.describe()
    if getattr(args, "json", False):
        _print_json(
            [{"key": str(k), "value": _jsonable(v), "source": str(s)} for k, v, s in described]
        )
        validate(settings)
        return 0
    rows = [(str(k), format_value(v), str(s)) for k, v, s in described]
    if rows:
        key_width = max(len(k) for k, _, _ in rows)
        value_width = max(len(v) for _, v, _ in rows)
        for key, value, source in rows:
            _out(f"{key:<{key_width}} = {value:<{value_width}}  [{source}]\n")
    validate(settings)
    return 0


def _run_config_options(args: argparse.Namespace) -> int:
    """``irpass config --options``: key, type, default, owner and description of every
    registered config option (the core's, owner ``irpass``, and the plugins')."""
    options = [_option_json(o) for o in list_config_options().values()]
    if getattr(args, "json", False):
        _print_json(options)
        return 0
    rows = [
        (
            o["key"],
            o["type"],
            "(unset)" if o["default"] is None else format_value(o["default"]),
            o["owner"] + (" (core)" if o["owner"] == "irpass" else ""),
            first_paragraph(o["description"]) or "-",
        )
        for o in options
    ]
    table = format_table(("option", "type", "default", "owner", "description"), rows)
    _out(table)
    return 0
