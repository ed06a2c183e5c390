"""The pipeline a command would run, pass by pass, and as a pipeline string (``irpass
pipeline``, ``--json``, ``--as-string``).

:func:`pipeline_entries` walks the pipeline the settings build (the default one, or
``-P``/``pipeline``) the way a :class:`~irpass.transform.PassContext` of those settings
will run it: a pass named in ``disabled_pass`` does not run, a pass above ``opt_level``
runs only if ``required_pass`` names it. :func:`pipeline_string` writes the passes that
run as one pipeline string which ``-P`` accepts: given back with the same ``-O`` (and
``--required-pass``, for required passes above it), it runs the same passes in the same
order with the same options. Options come from the text they were written in (the
``-P`` string, a ``[pipelines]`` entry) or, for the default pipeline's passes, from
the plugin's insertion; ``default`` and named pipelines are written out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..transform import Pass, Sequential, list_pipeline_insertions, registry
from ..transform.pipeline_text import split_pipeline

if TYPE_CHECKING:
    from ..settings import Settings
    from ..transform.pipeline import PlanRow

__all__ = ["PipelineEntry", "option_value", "pipeline_entries", "pipeline_string"]

# a pipeline string's Sequentials that are not passes of their own: 'default', 'seq(...)'
_DEFAULT, _SEQ = "default_pipeline", "seq"
# words a pipeline string reads as something other than a string
_WORDS = {"true", "True", "false", "False", "none", "None", "default", "seq"}
_BARE = re.compile(r"[^\s,(){}\[\]=\"']+")


@dataclass
class PipelineEntry:
    """One pass (or nested Sequential) of the pipeline, in running order.

    ``depth`` is its nesting (0: a top-level item); ``runs`` says whether the context
    will run it and ``why`` why not (or ``"required_pass"`` for a required pass above
    ``opt_level``); ``text`` is the pass as a pipeline string item (leaves only);
    ``phase`` and ``placed`` are set for the default pipeline's passes.
    """

    name: str
    depth: int
    sequential: bool
    opt_level: int
    required: list[str]
    plugin: str
    runs: bool = True
    why: str | None = None
    options: dict[str, Any] | None = None
    phase: str | None = None
    placed: str | None = None
    text: str = ""
    children: list[PipelineEntry] = field(default_factory=list, repr=False)

    def as_json(self) -> dict[str, Any]:
        """The entry as ``irpass pipeline --json`` shows it (without its children,
        which follow it in the flat list)."""
        return {
            "name": self.name,
            "depth": self.depth,
            "sequential": self.sequential,
            "opt_level": self.opt_level,
            "required": self.required,
            "plugin": self.plugin,
            "runs": self.runs,
            "why": self.why,
            "options": self.options,
            "phase": self.phase,
            "placed": self.placed,
        }


def option_value(value: Any) -> str:
    """``value`` written the way a pipeline string reads it back."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if _BARE.fullmatch(value) and value not in _WORDS and not _is_number(value):
            return value
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(option_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        items = (f"{option_value(str(k))}={option_value(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    return repr(value)


def _is_number(text: str) -> bool:
    try:
        float(text.replace("_", ""))
    except ValueError:
        return False
    return True


def pipeline_entries(settings: Settings) -> list[PipelineEntry]:
    """The top-level entries of the pipeline ``settings`` build (children nested)."""
    walker = _Walker(settings)
    if settings.pipeline is None or settings.pipeline.strip() == "default":
        return [walker.plan_row(row, 0) for row in settings.default_plan().rows]
    root = settings.build_pipeline()
    return walker.items(list(root.passes), split_pipeline(settings.pipeline), 0)


def flatten(entries: list[PipelineEntry]) -> list[PipelineEntry]:
    """``entries`` and their children, depth first, in running order."""
    out: list[PipelineEntry] = []
    stack = list(reversed(entries))
    while stack:
        entry = stack.pop()
        out.append(entry)
        stack.extend(reversed(entry.children))
    return out


def pipeline_string(entries: list[PipelineEntry]) -> str:
    """The entries that run as one pipeline string (see the module docs)."""
    return ",".join(_pieces(entries))


def _pieces(entries: list[PipelineEntry]) -> list[str]:
    # recursion as deep as the string's seq(...) nesting, which the parser bounds (MAX_DEPTH)
    out: list[str] = []
    for entry in entries:
        if entry.sequential and not entry.text:  # 'default', 'seq(...)', a named pipeline
            inner = _pieces(entry.children)
            if entry.name == _DEFAULT:
                out.extend(inner)  # 'default' is written out in place
            elif inner:
                out.append(f"seq({','.join(inner)})")
        elif entry.runs:
            out.append(entry.text)
    return out


class _Walker:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.level = settings.opt_level
        self.required = set(settings.required_pass)
        self.disabled = set(settings.disabled_pass)
        # the options the default pipeline creates each pass with: its first insertion's
        # (the planner keeps the first of a pass inserted twice)
        self.insertions: dict[str, Any] = {}
        for _, ins in list_pipeline_insertions():
            self.insertions.setdefault(ins.pass_name, ins)

    def _entry(self, p: Pass, depth: int, *, sequential: bool, text: str) -> PipelineEntry:
        info = p.info
        entry = PipelineEntry(
            name=info.name,
            depth=depth,
            sequential=sequential,
            opt_level=info.opt_level,
            required=list(info.required),
            plugin="-" if sequential else _owner(info.name),
            text=text,
        )
        if sequential:
            return entry
        if info.name in self.disabled:
            entry.runs, entry.why = False, "disabled_pass"
        elif info.opt_level > self.level:
            if info.name in self.required:
                entry.why = "required_pass"
            else:
                entry.runs, entry.why = False, f"needs opt_level {info.opt_level}"
        return entry

    def plan_row(self, row: PlanRow, depth: int) -> PipelineEntry:
        options = dict(row.insertion.options)
        entry = self._entry(row.pass_, depth, sequential=False, text=_item(row.pass_name, options))
        entry.options, entry.phase, entry.placed = options, row.phase, row.anchor
        return entry

    def items(self, passes: list[Pass], texts: list[str], depth: int) -> list[PipelineEntry]:
        """Entries of ``passes``, the Sequential made of the items ``texts``."""
        out = []
        for p, text in zip(passes, texts, strict=True):
            name = p.info.name
            if isinstance(p, Sequential) and name == _DEFAULT and text.startswith("default"):
                entry = self._entry(p, depth, sequential=True, text="")
                entry.children = [self._default_child(c, depth + 1) for c in p.passes]
            elif isinstance(p, Sequential) and name == _SEQ and text.startswith("seq"):
                entry = self._entry(p, depth, sequential=True, text="")
                entry.children = self.items(list(p.passes), split_pipeline(_inner(text)), depth + 1)
            elif isinstance(p, Sequential) and text == name and name in self.settings.pipelines:
                entry = self._entry(p, depth, sequential=True, text="")
                named = split_pipeline(self.settings.pipelines[name])
                entry.children = self.items(list(p.passes), named, depth + 1)
            else:  # a registered pass, written as it was, options and all
                entry = self._entry(p, depth, sequential=False, text=text)
            out.append(entry)
        return out

    def _default_child(self, p: Pass, depth: int) -> PipelineEntry:
        ins = self.insertions.get(p.info.name)
        options = dict(ins.options) if ins is not None else {}
        entry = self._entry(p, depth, sequential=False, text=_item(p.info.name, options))
        entry.options = options
        return entry


def _item(name: str, options: Mapping[str, Any]) -> str:
    if not options:
        return name
    return name + "{" + ",".join(f"{k}={option_value(v)}" for k, v in options.items()) + "}"


def _owner(name: str) -> str:
    entry = registry.lookup(name)
    return entry.owner if entry is not None else "-"


def _inner(item: str) -> str:
    """The pipeline inside ``seq( ... )``."""
    return item[item.index("(") + 1 : item.rindex(")")]
