"""The default pipeline: named phases that plugins fill with passes.

The core contributes no pass of its own to the default pipeline; plugins add
:class:`PipelineInsertion` objects (from the ``irpass_pipeline_passes`` hook,
or :func:`add_pipeline_insertion` in code), each putting one registered pass

- at a phase of :data:`PIPELINE_PHASES` (``start``, ``simplify``,
  ``optimize``, ``layout``, ``fuse``, ``end``, run in that order), or
- right before or after another pass of the pipeline (an *anchor*), with a
  phase as the fallback for when the anchor is not in the pipeline.

:func:`pipeline_plan` puts them in order, the same order whatever order the
plugins were loaded in:

1. all insertions are sorted by ``(-priority, owner, pass_name)`` (then by
   where they go and their options, so that the sort is total); a pass name
   contributed more than once keeps the first and drops the others;
2. each pass is created with its options; a pass that cannot be created, or
   whose ``info.opt_level`` is above the pipeline's ``opt_level``, is left out;
3. an insertion anchored to a pass that is not in the pipeline goes to its
   ``phase`` if it gave one and is dropped otherwise (and so, in turn, are
   the insertions anchored to it, unless they have a fallback);
4. each phase lists its passes in sort order; every pass is preceded by the
   passes inserted before it and followed by those inserted after it, both
   in sort order (the highest priority nearest the front), recursively. An
   anchor cycle (A after B, B after A) is a ``ValueError``.

Everything left out is in :attr:`PipelinePlan.dropped` with the reason;
``irpass pipeline`` prints the plan.

A pipeline no plugin contributes to is empty, which is what blocking ``std``
gives. But when, in addition, a plugin failed to load, the failure is the
likely reason, so :func:`pipeline_plan` and :func:`default_pipeline` raise
:class:`irpass.plugins.PluginError` naming the failed plugins and why, rather
than run nothing (``irpass`` exits with status 2).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .passes import Pass, Sequential
from .registry import get_pass, get_pass_entry

__all__ = [
    "PIPELINE_PHASES",
    "PipelineInsertion",
    "PlanRow",
    "DroppedInsertion",
    "PipelinePlan",
    "add_pipeline_insertion",
    "remove_pipeline_insertions",
    "list_pipeline_insertions",
    "pipeline_plan",
    "default_pipeline",
]

#: The phases of the default pipeline, in the order they run.
PIPELINE_PHASES: tuple[str, ...] = ("start", "simplify", "optimize", "layout", "fuse", "end")

#: The highest opt_level the default pipeline can be built for.
MAX_OPT_LEVEL = 4


@dataclass(frozen=True, repr=False)
class PipelineInsertion:
    """Where a plugin puts one registered pass in the default pipeline.

    ``pass_name`` names a registered pass, created with ``options`` as keyword
    arguments (kept as a read-only mapping). Give exactly one of ``phase``
    (one of :data:`PIPELINE_PHASES`), ``before`` or ``after`` (the name of
    another pass of the pipeline); ``phase`` may also come with ``before`` /
    ``after``, as where the pass goes when that anchor is not in the
    pipeline. Among insertions at the same place, a higher ``priority`` comes
    first, then the owner's name and the pass name decide::

        PipelineInsertion("FoldAddZero", after="SimplifyExpr", phase="simplify")
        PipelineInsertion("OpStats", phase="end", priority=-10)
    """

    pass_name: str
    phase: str | None = None
    before: str | None = None
    after: str | None = None
    priority: int = 0
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        name = self.pass_name
        if not isinstance(name, str) or not name:
            raise TypeError(f"PipelineInsertion: pass_name must be a non-empty str, got {name!r}")
        where = f"PipelineInsertion({name!r})"
        for key in ("phase", "before", "after"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, str) or not value):
                raise TypeError(f"{where}: {key} must be a non-empty str or None, got {value!r}")
        if self.phase is not None and self.phase not in PIPELINE_PHASES:
            close = difflib.get_close_matches(self.phase, PIPELINE_PHASES, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(
                f"{where}: unknown phase {self.phase!r}; {hint}"
                f"(phases: {', '.join(PIPELINE_PHASES)})"
            )
        if self.before is not None and self.after is not None:
            raise ValueError(
                f"{where}: give before= or after=, not both "
                f"(before={self.before!r}, after={self.after!r})"
            )
        if self.phase is None and self.before is None and self.after is None:
            raise ValueError(
                f"{where}: say where the pass goes: phase= (one of "
                f"{', '.join(PIPELINE_PHASES)}), before= or after= a pass"
            )
        if self.anchor_pass == name:
            raise ValueError(f"{where}: {self._anchor_kind}={name!r} anchors the pass to itself")
        if isinstance(self.priority, bool) or not isinstance(self.priority, int):
            raise TypeError(f"{where}: priority must be an int, got {self.priority!r}")
        options = self.options
        if not isinstance(options, Mapping):
            raise TypeError(
                f"{where}: options must be a mapping of keyword arguments, got {options!r}"
            )
        for key in options:
            if not isinstance(key, str) or not key.isidentifier():
                raise TypeError(f"{where}: option names must be identifiers, got {key!r}")
        # a copy, so the caller's dict cannot change the insertion afterwards
        object.__setattr__(self, "options", MappingProxyType(dict(options)))

    @property
    def anchor_pass(self) -> str | None:
        """The pass this insertion is anchored to (``before`` or ``after``), if any."""
        return self.before if self.before is not None else self.after

    @property
    def _anchor_kind(self) -> str:
        return "before" if self.before is not None else "after"

    @property
    def anchor_text(self) -> str:
        """Where the insertion asks to go: ``"phase optimize"``, ``"after SimplifyExpr"``."""
        if self.anchor_pass is None:
            return f"phase {self.phase}"
        text = f"{self._anchor_kind} {self.anchor_pass}"
        return text + (f" (else phase {self.phase})" if self.phase else "")

    def __repr__(self) -> str:
        parts = [repr(self.pass_name)]
        for key in ("phase", "before", "after"):
            if getattr(self, key) is not None:
                parts.append(f"{key}={getattr(self, key)!r}")
        if self.priority:
            parts.append(f"priority={self.priority}")
        if self.options:
            parts.append(f"options={dict(self.options)!r}")
        return f"PipelineInsertion({', '.join(parts)})"


@dataclass(frozen=True)
class PlanRow:
    """One pass of the default pipeline, in running order.

    ``phase`` is the phase the pass runs in (for an anchored pass, its
    anchor's); ``owner`` the plugin that inserted it; ``anchor`` how it got
    there, e.g. ``"phase optimize"``, ``"after SimplifyExpr"`` or
    ``"phase fuse (fallback: after X: 'X' is not in the pipeline ...)"``;
    ``opt_level`` the created pass's ``info.opt_level``. ``pass_`` is the
    pass instance :func:`default_pipeline` runs.
    """

    pass_name: str
    phase: str
    owner: str
    anchor: str
    opt_level: int
    priority: int
    insertion: PipelineInsertion
    pass_: Pass = field(compare=False, repr=False)


@dataclass(frozen=True)
class DroppedInsertion:
    """An insertion left out of the default pipeline, and why (``reason``)."""

    pass_name: str
    owner: str
    reason: str
    insertion: PipelineInsertion


@dataclass(frozen=True)
class PipelinePlan:
    """The default pipeline for one ``opt_level``: its passes in order (``rows``)
    and the insertions left out (``dropped``, sorted like the insertions)."""

    opt_level: int
    rows: tuple[PlanRow, ...]
    dropped: tuple[DroppedInsertion, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The pass names of the pipeline, in running order."""
        return tuple(row.pass_name for row in self.rows)

    def sequential(self) -> Sequential:
        """The pipeline as a :class:`Sequential` named ``"default_pipeline"`` (opt_level 0)."""
        return Sequential([row.pass_ for row in self.rows], opt_level=0, name="default_pipeline")


# (owner, insertion) pairs, in the order they were added (which never matters)
_INSERTIONS: list[tuple[str, PipelineInsertion]] = []


def add_pipeline_insertion(ins: PipelineInsertion, *, owner: str) -> None:
    """Add ``ins`` to the default pipeline on behalf of ``owner`` (a plugin name).

    Adding the same insertion for the same owner again changes nothing.
    """
    if not isinstance(ins, PipelineInsertion):
        raise TypeError(
            f"add_pipeline_insertion: expected a PipelineInsertion, got {type(ins).__name__} "
            f"{ins!r}"
        )
    if not isinstance(owner, str) or not owner:
        raise TypeError(f"add_pipeline_insertion: owner must be a non-empty str, got {owner!r}")
    if (owner, ins) not in _INSERTIONS:
        _INSERTIONS.append((owner, ins))


def remove_pipeline_insertions(owner: str) -> None:
    """Remove every insertion ``owner`` added (nothing if it added none)."""
    _INSERTIONS[:] = [(o, ins) for o, ins in _INSERTIONS if o != owner]


def list_pipeline_insertions() -> list[tuple[str, PipelineInsertion]]:
    """All insertions as ``(owner, insertion)`` pairs, sorted like :func:`pipeline_plan` sorts.

    Only what is already registered: this does not load plugins.
    """
    return sorted(_INSERTIONS, key=_sort_key)


def default_pipeline(opt_level: int = 2) -> Sequential:
    """The default pipeline for ``opt_level``: a :class:`Sequential` named ``"default_pipeline"``.

    Loads the plugins first (if not loaded yet), then builds the passes of
    :func:`pipeline_plan` (the two always agree; both raise
    :class:`irpass.plugins.PluginError` when no plugin contributes a pass and a
    plugin failed to load, see the module docs). Passes whose
    ``info.opt_level`` is above ``opt_level`` are left out; the Sequential
    itself has opt_level 0. The :class:`PassContext` still decides at run time
    which passes run (its ``opt_level``, ``required_pass`` and
    ``disabled_pass``), so run the pipeline under a context of the same level::

        with PassContext(opt_level=3):
            mod = default_pipeline(3)(mod)
    """
    return pipeline_plan(opt_level).sequential()


def pipeline_plan(opt_level: int = 2) -> PipelinePlan:
    """The passes of the default pipeline for ``opt_level`` in order, who put each
    there and how, and the insertions left out with why (see the module docs).

    ``opt_level`` is an int from 0 to 4. Loads the plugins first. A cycle of
    before/after anchors is a ``ValueError`` naming the passes and their owners;
    no insertion at all while a plugin failed to load is an
    :class:`irpass.plugins.PluginError` naming that plugin.
    """
    _check_opt_level(opt_level)
    _load_plugins()
    if not _INSERTIONS:
        _check_not_emptied_by_a_failure()
    return _Planner(opt_level).plan(sorted(_INSERTIONS, key=_sort_key))


def _check_not_emptied_by_a_failure() -> None:
    """Raise :class:`PluginError` if a plugin failed to load: with no insertion left,
    the default pipeline would silently run nothing."""
    from ..plugins import PluginError, _current

    manager = _current()  # loaded by now, unless loading is switched off (tests)
    failed = manager.failures() if manager is not None else []
    if failed:
        why = "; ".join(f"plugin {r.name!r} ({r.origin}) {r.reason}" for r in failed)
        raise PluginError(
            f"the default pipeline is empty: no loaded plugin contributes a pass to it, and "
            f"{why}. Fix or uninstall the failed plugin ('irpass plugins' lists them), or "
            f"name a pipeline of your own"
        )


def _load_plugins() -> None:
    """Load the process's plugins (``irpass.plugins.ensure_loaded``), whose insertions
    are part of the pipeline; the shared helper skips it while the plugin manager,
    which imports this module, is itself being imported."""
    from .._lazy_plugins import ensure_plugins

    ensure_plugins()


def _check_opt_level(opt_level: Any) -> None:
    if isinstance(opt_level, bool) or not isinstance(opt_level, int):
        raise TypeError(f"default_pipeline: opt_level must be an int, got {opt_level!r}")
    if not 0 <= opt_level <= MAX_OPT_LEVEL:
        raise ValueError(
            f"default_pipeline: opt_level must be between 0 and {MAX_OPT_LEVEL}, got {opt_level}"
        )


def _sort_key(item: tuple[str, PipelineInsertion]) -> tuple:
    owner, ins = item
    # the tail makes the order total, so equal-ranked duplicates never depend on load order
    where = (ins.phase or "", ins.before or "", ins.after or "")
    options = sorted((k, repr(v)) for k, v in ins.options.items())
    return (-ins.priority, owner, ins.pass_name, where, options)


@dataclass
class _Node:
    """An insertion whose pass is created and within the opt level."""

    owner: str
    ins: PipelineInsertion
    pass_: Pass
    fallback: str = ""  # why the insertion went to its phase instead of its anchor


class _Planner:
    """One run of the ordering algorithm (see the module docs)."""

    def __init__(self, opt_level: int) -> None:
        self.opt_level = opt_level
        self.order: dict[tuple[str, PipelineInsertion], int] = {}
        self.dropped: list[tuple[str, PipelineInsertion, str]] = []
        self.gone: dict[str, str] = {}  # pass name -> why it is not in the pipeline

    def plan(self, items: list[tuple[str, PipelineInsertion]]) -> PipelinePlan:
        self.order = {item: i for i, item in enumerate(items)}
        nodes = self._create(items)
        self._resolve_anchors(nodes)
        rows = self._arrange(nodes)
        self.dropped.sort(key=lambda d: self.order[(d[0], d[1])])
        dropped = tuple(
            DroppedInsertion(ins.pass_name, owner, reason, ins)
            for owner, ins, reason in self.dropped
        )
        return PipelinePlan(self.opt_level, tuple(rows), dropped)

    def _drop(self, owner: str, ins: PipelineInsertion, reason: str) -> None:
        self.dropped.append((owner, ins, reason))

    def _create(self, items: list[tuple[str, PipelineInsertion]]) -> dict[str, _Node]:
        """Steps 1-2: one node per pass name, in sort order."""
        first: dict[str, tuple[str, PipelineInsertion]] = {}
        nodes: dict[str, _Node] = {}
        for owner, ins in items:
            name = ins.pass_name
            if name in first:
                kept_owner, kept = first[name]
                self._drop(owner, ins, f"duplicate, also contributed by {kept_owner!r} "
                                       f"({kept.anchor_text}), which ranks first")
                continue
            first[name] = (owner, ins)
            try:
                get_pass_entry(name)
            except KeyError as exc:
                self._gone(owner, ins, exc.args[0] if exc.args else f"no pass {name!r}",
                           "not a registered pass")
                continue
            try:
                made = get_pass(name, **ins.options)
            except Exception as exc:  # a plugin's bad options must not break the pipeline
                self._gone(owner, ins, f"cannot create the pass: {type(exc).__name__}: {exc}",
                           "its pass cannot be created")
                continue
            level = made.info.opt_level
            if level > self.opt_level:
                self._gone(owner, ins, f"needs opt_level {level} (pipeline built for "
                                       f"opt_level {self.opt_level})", f"needs opt_level {level}")
                continue
            nodes[name] = _Node(owner, ins, made)
        return nodes

    def _gone(self, owner: str, ins: PipelineInsertion, reason: str, short: str) -> None:
        self._drop(owner, ins, reason)
        self.gone[ins.pass_name] = short

    def _missing(self, name: str) -> str:
        why = self.gone.get(name, "no plugin inserts it")
        return f"{name!r} is not in the pipeline ({why})"

    def _resolve_anchors(self, nodes: dict[str, _Node]) -> None:
        """Step 3: insertions whose anchor is missing go to their phase or are dropped;
        a dropped one makes its own dependents' anchors missing in turn."""
        dependents: dict[str, list[str]] = {}
        for name, node in nodes.items():
            anchor = node.ins.anchor_pass
            if anchor is not None:
                dependents.setdefault(anchor, []).append(name)
        stack = [
            (name, self._missing(anchor))
            for anchor, names in dependents.items() if anchor not in nodes
            for name in names
        ]
        while stack:
            name, why = stack.pop()
            node = nodes[name]
            note = f"{node.ins._anchor_kind} {node.ins.anchor_pass}: {why}"
            if node.ins.phase is not None:
                node.fallback = note
                continue
            del nodes[name]
            self._drop(node.owner, node.ins, f"anchor {note}")
            self.gone[name] = "its own anchor is missing"
            stack.extend((dep, self._missing(name)) for dep in dependents.get(name, ()))

    def _arrange(self, nodes: dict[str, _Node]) -> list[PlanRow]:
        """Step 4: walk each phase's tree of anchored passes (nodes are in sort order)."""
        at_phase: dict[str, list[str]] = {phase: [] for phase in PIPELINE_PHASES}
        before: dict[str, list[str]] = {}
        after: dict[str, list[str]] = {}
        for name, node in nodes.items():
            ins = node.ins
            if ins.anchor_pass is None or node.fallback:
                at_phase[ins.phase].append(name)  # type: ignore[index]
            else:
                side = before if ins.before is not None else after
                side.setdefault(ins.anchor_pass, []).append(name)
        rows: list[PlanRow] = []
        for phase in PIPELINE_PHASES:
            # (emit?, name): expanding a name pushes its before-list, itself, its after-list
            stack = [(False, name) for name in reversed(at_phase[phase])]
            while stack:
                emit, name = stack.pop()
                if emit:
                    rows.append(self._row(nodes[name], phase))
                    continue
                stack.extend((False, n) for n in reversed(after.get(name, ())))
                stack.append((True, name))
                stack.extend((False, n) for n in reversed(before.get(name, ())))
        if len(rows) < len(nodes):
            placed = {row.pass_name for row in rows}
            raise ValueError(self._cycle_message(nodes, placed))
        return rows

    def _row(self, node: _Node, phase: str) -> PlanRow:
        ins = node.ins
        if node.fallback:
            anchor = f"phase {phase} (fallback: {node.fallback})"
        elif ins.anchor_pass is None:
            anchor = f"phase {phase}"
        else:
            anchor = f"{ins._anchor_kind} {ins.anchor_pass}"
        return PlanRow(ins.pass_name, phase, node.owner, anchor, node.pass_.info.opt_level,
                       ins.priority, ins, node.pass_)

    def _cycle_message(self, nodes: dict[str, _Node], placed: set[str]) -> str:
        # an unplaced node hangs from another unplaced one: following anchors must loop
        start = next(name for name in nodes if name not in placed)
        path: list[str] = []
        seen: dict[str, int] = {}
        name = start
        while name not in seen:
            seen[name] = len(path)
            path.append(name)
            name = nodes[name].ins.anchor_pass  # type: ignore[assignment]
        loop = path[seen[name]:] + [name]
        steps = " -> ".join(
            f"{n!r} ({nodes[n].owner}: {nodes[n].ins._anchor_kind} {nodes[n].ins.anchor_pass})"
            for n in loop[:-1]
        )
        return (
            f"default pipeline: the before/after anchors of these insertions form a cycle: "
            f"{steps} -> {loop[-1]!r}; change one plugin's anchor"
        )
