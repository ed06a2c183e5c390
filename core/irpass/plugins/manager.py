"""The plugin manager: finds plugins, loads them, and commits what they contribute.

Everything a plugin adds goes through here, so everything has an owner: the
plugin's name, which ``irpass plugins`` shows and error messages quote. A
plugin is committed all or nothing: its registration hooks are called one by
one, every registration is logged with its undo, and the first failure (an
import error, a hook raising or returning the wrong kind of thing, a name
another plugin owns) undoes what the plugin already added, records it as
*failed* and warns once -- or raises :class:`PluginError` when strict.

Plugins are taken in a fixed order -- irpass's own entry points (those of the
``irpass`` distribution: ``instruments``, ``std``), then the other entry
points by name, then the ``-p`` modules in the order given -- so which plugin
wins a clash never depends on the order ``pip`` installed them in, and a pack
can never take a name from irpass's own plugins: the plugin that claims a name
an earlier plugin (or the core) owns is the one refused.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from .. import formats
from ..instrument import registry as instruments
from ..ir import op as ops
from ..transform import config as options
from ..transform import pipeline
from ..transform import registry as passes
from ..transform.config import ConfigOption
from ..transform.passes import Pass
from . import hookspec
from .bridge import HookInstrument
from .specs import (
    INSTRUMENT_HOOKS,
    Contribution,
    OpSpec,
    PluginError,
    PluginRecord,
    PluginSettings,
    PluginWarning,
)

if TYPE_CHECKING:
    # imported where a plugin registers a rule set: the pattern machinery behind it (and
    # numpy) is not needed to load plugins that register none
    from ..transform.rewrites import RuleSetEntry

__all__ = ["PluginManager", "entry_points"]

ENTRY_POINT_GROUP = "irpass"
CORE = "irpass"

_STRICT_HINT = "use --strict-plugins or [plugins] strict = true to make this an error"


class _Broken(Exception):
    """Internal: the plugin being committed is broken; the message says why."""


class PluginManager:
    """Loads the plugins ``settings`` ask for and keeps a :class:`PluginRecord` for each.

    Most code uses the process's manager through :func:`irpass.plugins.load`
    and :func:`irpass.plugins.get_plugin_manager`; a manager of its own
    (tests) writes into the same global registries.
    """

    def __init__(self, settings: PluginSettings | None = None) -> None:
        self.settings = settings if settings is not None else PluginSettings()
        self._pm = pluggy.PluginManager(hookspec.PROJECT)
        self._pm.add_hookspecs(hookspec)
        self._records: dict[str, PluginRecord] = {}
        self._undo: dict[str, list[Callable[[], None]]] = {}
        self._objects: dict[str, object] = {}
        # the rule sets of irpass_register_rewrites, by name (kept here, with the
        # records, so a test's registry snapshot saves and restores them too)
        self._rewrites: dict[str, RuleSetEntry] = {}

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> None:
        """Load the entry-point plugins (unless autoload is off) and the ``-p`` modules."""
        # the scan of installed distributions is the costly part of loading: skip it
        # when nothing could use it (autoload off, no -p names to resolve)
        wanted = self.settings.autoload or self.settings.modules
        found = sorted(entry_points(), key=_load_order) if wanted else []
        names = {ep.name for ep in found}
        requested = {spec for spec in self.settings.modules if spec in names}
        taken: set[str] = set()
        for ep in found:
            if self.settings.autoload:
                self._load_entry_point(ep, requested=False)
            elif ep.name in requested and ep.name not in taken:
                # -p NAME with autoload off: the first entry point of that name
                taken.add(ep.name)
                self._load_entry_point(ep, requested=True)
        for spec in self.settings.modules:
            if spec not in names:
                self._load_module(spec)
        self._check_pipeline_passes()

    def _load_entry_point(self, ep: metadata.EntryPoint, requested: bool) -> None:
        name = ep.name
        dist = getattr(ep, "dist", None)
        base = dict(
            name=name,
            source="entry point",
            module=ep.value,
            dist=dist.metadata["Name"] if dist else None,
            version=dist.version if dist else None,
        )
        if name in self._records:
            old = self._records[name]
            if old.status == "blocked" or (old.source == "entry point" and old.module == ep.value):
                return  # the name is blocked, or the same plugin declared twice
            self._fail(
                PluginRecord(status="failed", **base),
                f"the plugin name {name!r} is already taken by {old.origin}",
            )
            return
        blocked = self._blocked_reason(name, entry_point=not requested)
        if blocked:
            self._records[name] = PluginRecord(status="blocked", reason=blocked, **base)
            return
        try:
            obj = ep.load()
        except (Exception, SystemExit) as exc:  # a plugin failing at import is failed, not fatal
            self._fail(
                PluginRecord(status="failed", **base),
                f"failed to load (entry point {name} = {ep.value}): "
                f"{_import_failure(exc, ep.module)}",
            )
            return
        self._commit(obj, PluginRecord(status="loaded", **base))

    def _load_module(self, spec: str) -> None:
        base = dict(name=spec, source="-p", module=spec)
        if spec in self._records or any(
            r.module == spec and r.status == "loaded" for r in self._records.values()
        ):
            return  # already loaded, e.g. as the entry point of an installed pack
        blocked = self._blocked_reason(spec, entry_point=False)
        if blocked:
            self._records[spec] = PluginRecord(status="blocked", reason=blocked, **base)
            return
        try:
            obj = _import_from_cwd(spec)
        except (Exception, SystemExit) as exc:  # as for entry points
            self._fail(
                PluginRecord(status="failed", **base),
                f"failed to load: {_import_failure(exc, spec)}",
            )
            return
        dist, version = _distribution_of(spec)
        self._commit(obj, PluginRecord(status="loaded", dist=dist, version=version, **base))

    def _blocked_reason(self, name: str, entry_point: bool) -> str:
        if name in self.settings.block:
            return "blocked (-p no:NAME or [plugins] disable)"
        if entry_point and self.settings.only is not None and name not in self.settings.only:
            return "not in the allow-list ([plugins] only)"
        return ""

    def register(self, obj: object, name: str | None = None, source: str = "code") -> PluginRecord:
        """Register ``obj`` (a module or any object with hook implementations) as a plugin.

        ``name`` defaults to the module's ``__name__`` (or the object's class
        name, lowercased). Returns its record; a broken plugin warns (or raises when strict).
        """
        if name is None:
            name = obj.__name__ if isinstance(obj, ModuleType) else type(obj).__name__.lower()
        if name == CORE:
            raise ValueError(f"the plugin name {CORE!r} is the core's; pass another name=")
        if name in self._records and self._records[name].status in ("loaded", "core"):
            if self._objects.get(name) is obj:
                return self._records[name]
            raise ValueError(
                f"a plugin named {name!r} is already registered "
                f"({self._records[name].origin}); pass another name="
            )
        module = obj.__name__ if isinstance(obj, ModuleType) else type(obj).__module__
        return self._commit(
            obj, PluginRecord(name=name, status="loaded", source=source, module=module)
        )

    def unregister(self, name: str) -> None:
        """Remove plugin ``name`` and everything it contributed."""
        for undo in reversed(self._undo.pop(name, [])):
            undo()
        pipeline.remove_pipeline_insertions(name)
        obj = self._objects.pop(name, None)
        if obj is not None:
            self._pm.unregister(obj)
        self._records.pop(name, None)

    def unload(self) -> None:
        """Unregister every plugin this manager loaded, undoing all they contributed."""
        for name in list(self._objects):
            self.unregister(name)
        self._records.clear()

    def _state(self) -> tuple[dict, dict, dict, dict]:
        """Copies of the manager's bookkeeping, for :meth:`_restore_state` (tests' snapshots)."""
        return (
            dict(self._records),
            dict(self._objects),
            {k: list(v) for k, v in self._undo.items()},
            dict(self._rewrites),
        )

    def _restore_state(self, state: tuple[dict, dict, dict, dict]) -> None:
        records, objects, undo, rewrites = state
        for name, obj in list(self._objects.items()):
            if objects.get(name) is not obj:
                self._pm.unregister(obj)
        for name, obj in objects.items():
            if self._objects.get(name) is not obj:
                self._pm.register(obj, name=name)
        self._records, self._objects, self._undo = dict(records), dict(objects), dict(undo)
        self._rewrites = dict(rewrites)

    # -- committing contributions ------------------------------------------------------------

    def _commit(self, obj: object, record: PluginRecord) -> PluginRecord:
        name = record.name
        try:
            self._pm.register(obj, name=name)
        except Exception as exc:  # pluggy's validation: wrong hook arguments, twice registered
            return self._fail(record, f"invalid hook implementation: {_describe(exc)}")
        self._objects[name] = obj
        self._undo[name] = []
        made: list[Contribution] = []
        try:
            self._check_hook_names(obj)
            for kind, hook, add in self._registrations():
                result = self._call_own(hook, obj, name)
                for item in _items(hook, result):
                    made.append(Contribution(kind, add(name, item)))
            made.extend(self._add_hook_instrument(obj, name))
        except _Broken as exc:
            self.unregister(name)
            return self._fail(record, str(exc))
        done = PluginRecord(**{**record.__dict__, "contributions": tuple(made)})
        self._records[name] = done
        return done

    def _registrations(self) -> list[tuple[str, str, Callable[[str, Any], str]]]:
        # options first (passes read them), ops before passes (passes may build them)
        return [
            ("config option", "irpass_register_config_options", self._add_option),
            ("op", "irpass_register_ops", self._add_op),
            ("format", "irpass_register_formats", self._add_format),
            ("pass", "irpass_register_passes", self._add_pass),
            ("instrument", "irpass_register_instruments", self._add_instrument),
            ("rewrite", "irpass_register_rewrites", self._add_rewrites),
            ("pipeline", "irpass_pipeline_passes", self._add_insertion),
        ]

    def _call_own(self, hook: str, obj: object, name: str) -> Any:
        impl = self._impl(hook, obj)
        if impl is None:
            return None
        try:
            return impl.function()
        except (Exception, SystemExit) as exc:  # a raising hook makes its plugin failed
            raise _Broken(f"{hook}() raised {_describe(exc)}") from exc

    def _impl(self, hook: str, obj: object) -> Any:
        for impl in getattr(self._pm.hook, hook).get_hookimpls():
            if impl.plugin is obj:
                return impl
        return None

    def _check_hook_names(self, obj: object) -> None:
        known = {n for n in dir(hookspec) if n.startswith("irpass_")}
        for attr in dir(obj):
            if attr.startswith("irpass_") and attr not in known and callable(getattr(obj, attr)):
                close = _close(attr, known)
                raise _Broken(f"defines {attr}(), which is not an irpass hook{close}")

    def _guard(
        self,
        name: str,
        what: str,
        register: Callable[[], Any],
        undo: Callable[[], None],
        existed: bool,
    ) -> None:
        try:
            register()
        except (ValueError, TypeError) as exc:
            raise _Broken(f"cannot register {what}: {exc}") from exc
        if not existed:
            self._undo[name].append(undo)

    def _add_option(self, name: str, item: Any) -> str:
        if not isinstance(item, ConfigOption):
            raise _Broken(_garbage("irpass_register_config_options", item, "a ConfigOption"))
        key = item.key
        _check_owner(f"config option {key!r}", options._OPTIONS.get(key), name)
        self._guard(
            name,
            f"config option {key!r}",
            lambda: options.register_config_option(
                key, item.value_type, item.default, item.description, owner=name
            ),
            lambda: options.unregister_config_option(key),
            existed=key in options._OPTIONS,
        )
        return key

    def _add_op(self, name: str, item: Any) -> str:
        if not isinstance(item, OpSpec):
            raise _Broken(_garbage("irpass_register_ops", item, "an irpass.plugins.OpSpec"))
        self._guard(
            name,
            f"op {item.name!r}",
            lambda: ops.register_op(
                item.name,
                num_inputs=item.num_inputs,
                type_rel=item.type_rel,
                kernel=item.kernel,
                pattern=item.pattern,
                attrs=item.attrs,
                stateful=item.stateful,
                doc=item.doc,
                owner=name,
            ),
            lambda: ops.unregister_op(item.name),
            existed=False,
        )
        return item.name

    def _add_format(self, name: str, item: Any) -> str:
        if not isinstance(item, formats.FileFormat):
            raise _Broken(_garbage("irpass_register_formats", item, "an irpass.formats.FileFormat"))
        self._guard(
            name,
            f"file format {item.name!r}",
            lambda: formats.register_format(item, owner=name),
            lambda: formats.unregister_format(item),
            existed=False,
        )
        return f"{item.name} ({', '.join(item.suffixes)})"

    def _add_pass(self, name: str, item: Any) -> str:
        if not (isinstance(item, Pass) or callable(item)):
            raise _Broken(_garbage("irpass_register_passes", item, "a pass factory or a Pass"))
        try:
            # the plugin is imported by now: a factory that takes no argument and has
            # no Pass annotation is called once to see that it makes a Pass
            passes.check_pass_factory(item, call=True)
        except TypeError as exc:
            raise _Broken(f"irpass_register_passes: {exc}") from exc
        try:
            entry = passes._make_entry(item, None, name)
        except TypeError as exc:
            raise _Broken(f"irpass_register_passes: {exc}") from exc
        _check_owner(f"pass {entry.name!r}", passes._PASSES.get(entry.name), name)
        self._guard(
            name,
            f"pass {entry.name!r}",
            lambda: passes.register_pass(item, owner=name),
            lambda: passes.unregister_pass(entry.name),
            existed=entry.name in passes._PASSES,
        )
        return entry.name

    def _add_instrument(self, name: str, item: Any) -> str:
        key, factory = item
        if not isinstance(key, str):
            raise _Broken(_garbage("irpass_register_instruments", key, "instrument names (str)"))
        self._guard(
            name,
            f"instrument {key!r}",
            lambda: instruments.register_instrument(key, factory, owner=name),
            lambda: instruments.unregister_instrument(key),
            existed=key in instruments._INSTRUMENTS,
        )
        return key

    def _add_rewrites(self, name: str, item: Any) -> str:
        from ..transform.lazy_rules import LazyRuleSet, RuleSetEntry

        if not isinstance(item, LazyRuleSet):
            # a built rule set has imported the rule machinery already; a declaration must not
            from ..transform.rewrites import RuleSet

            if not isinstance(item, RuleSet):
                raise _Broken(_garbage("irpass_register_rewrites", item,
                                       "an irpass.transform.RuleSet or LazyRuleSet"))
        old = self._rewrites.get(item.name)
        if old is not None:
            # the rule set's name is the prefix of its rules' names: whoever owns it owns them
            rules = (f"declared at {item.target}" if isinstance(item, LazyRuleSet)
                     else ", ".join(item.rule_names()) or "none")
            raise _Broken(
                f"cannot register rule set {item.name!r} (rules {rules}): it is already "
                f"registered by {old.owner!r}"
            )
        self._rewrites[item.name] = RuleSetEntry(item, name)
        self._undo[name].append(lambda: self._rewrites.pop(item.name, None))
        if isinstance(item, LazyRuleSet):
            return f"{item.name} (declared at {item.target}; imported when first used)"
        rules = ", ".join(r.name for r in item.rules)
        return f"{item.name} ({len(item.rules)} rule{'s' if len(item.rules) != 1 else ''}: {rules})"

    def rule_sets(self) -> dict[str, RuleSetEntry]:
        """The registered rule sets (``irpass_register_rewrites``) by name, sorted."""
        return {n: self._rewrites[n] for n in sorted(self._rewrites)}

    def _add_insertion(self, name: str, item: Any) -> str:
        if not isinstance(item, pipeline.PipelineInsertion):
            raise _Broken(
                _garbage("irpass_pipeline_passes", item, "an irpass.transform.PipelineInsertion")
            )
        pipeline.add_pipeline_insertion(item, owner=name)  # unregister() removes them by owner
        return f"{item.pass_name} ({_where(item)})"

    def _add_hook_instrument(self, obj: object, name: str) -> list[Contribution]:
        hooks: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {}
        for hook, point in INSTRUMENT_HOOKS.items():
            impl = self._impl(hook, obj)
            if impl is not None:
                hooks[point] = (impl.function, tuple(impl.argnames))
        if not hooks:
            return []

        def factory() -> HookInstrument:
            return HookInstrument(name, hooks)

        factory.__doc__ = f"the instrument hooks of plugin {name!r} ({', '.join(sorted(hooks))})"
        self._add_instrument(name, (name, factory))
        return [Contribution("instrument", f"{name} (hooks)")]

    def _check_pipeline_passes(self) -> None:
        """Drop, warning, the insertions of passes nobody registered (e.g. their plugin
        is blocked) and those whose options cannot make the pass."""
        for owner, ins in pipeline.list_pipeline_insertions():
            problem = _insertion_problem(ins)
            if problem:
                self._warn_or_raise(
                    f"plugin {owner!r} ({self._origin(owner)}) puts pass {ins.pass_name!r} into "
                    f"the default pipeline, but {problem}; the insertion is left out"
                )
                _remove_insertion(owner, ins)
                record = self._records.get(owner)
                if record is not None:
                    dropped = f"{ins.pass_name} ({_where(ins)})"
                    kept = tuple(
                        c
                        for c in record.contributions
                        if not (c.kind == "pipeline" and c.name == dropped)
                    )
                    self._records[owner] = PluginRecord(
                        **{**record.__dict__, "contributions": kept}
                    )

    # -- failures -----------------------------------------------------------------------

    def _fail(self, record: PluginRecord, reason: str) -> PluginRecord:
        failed = PluginRecord(
            **{**record.__dict__, "status": "failed", "reason": reason, "contributions": ()}
        )
        if record.name not in self._records or self._records[record.name].status != "loaded":
            self._records[record.name] = failed
        # a -p module's origin ("module mymod") only repeats its name
        origin = "" if record.origin == f"module {record.name}" else f" ({record.origin})"
        self._warn_or_raise(f"plugin {record.name!r}{origin} {reason}", skipped=True)
        return failed

    def _warn_or_raise(self, message: str, skipped: bool = False) -> None:
        if self.settings.strict:
            raise PluginError(message)
        what = "; skipped" if skipped else ""
        warnings.warn(PluginWarning(f"{message}{what} ({_STRICT_HINT})"), stacklevel=2)

    def _origin(self, name: str) -> str:
        record = self._records.get(name)
        return record.origin if record else "registered in code"

    # -- queries ------------------------------------------------------------------------

    def records(self) -> list[PluginRecord]:
        """Every plugin seen, by name, with the core first."""
        return [self._core_record()] + [self._records[n] for n in sorted(self._records)]

    def failures(self) -> list[PluginRecord]:
        """The records of the plugins that failed, by name."""
        return [
            self._records[n] for n in sorted(self._records) if self._records[n].status == "failed"
        ]

    def record(self, name: str) -> PluginRecord:
        """The record of plugin ``name``; a ``KeyError`` with close names if unknown."""
        if name == CORE:
            return self._core_record()
        try:
            return self._records[name]
        except KeyError:
            raise KeyError(f"no plugin named {name!r}{_close(name, self._records)}") from None

    def plugin(self, name: str) -> object | None:
        """The module or object registered as plugin ``name`` (None if not loaded)."""
        return self._objects.get(name)

    @property
    def hook(self) -> Any:
        """pluggy's hook relay, for calling a hook on every loaded plugin."""
        return self._pm.hook

    def _core_record(self) -> PluginRecord:
        made = [
            Contribution("pass", n) for n, e in sorted(passes._PASSES.items()) if e.owner == CORE
        ]
        made += [
            Contribution("instrument", n)
            for n, e in sorted(instruments._INSTRUMENTS.items())
            if e.owner == CORE
        ]
        made += [
            Contribution("config option", k)
            for k, o in sorted(options._OPTIONS.items())
            if o.owner == CORE
        ]
        made += [
            Contribution("format", f"{f.name} ({', '.join(f.suffixes)})")
            for f, owner in formats.list_formats()
            if owner == CORE
        ]
        try:
            version = metadata.version("irpass")
        except metadata.PackageNotFoundError:
            version = None
        return PluginRecord(
            name=CORE,
            status="core",
            source="core",
            dist="irpass",
            version=version,
            module="irpass",
            contributions=tuple(made),
        )


def _remove_insertion(owner: str, ins: Any) -> None:
    keep = [i for o, i in pipeline.list_pipeline_insertions() if o == owner and i != ins]
    pipeline.remove_pipeline_insertions(owner)
    for i in keep:
        pipeline.add_pipeline_insertion(i, owner=owner)


def _insertion_problem(ins: Any) -> str:
    """Why ``ins`` cannot be part of the default pipeline ("" if its pass can be made, or
    is declared lazily and will be checked when the pipeline is planned)."""
    entry = passes._PASSES.get(ins.pass_name)
    if entry is None:
        close = _close(ins.pass_name, passes._PASSES)
        return f"no pass of that name is registered{close}"
    if getattr(entry, "lazy", None) is not None:
        # a pass declared lazily is imported when first made, not while plugins load:
        # the pipeline's planner makes it, and leaves it out naming what is wrong
        return ""
    try:
        passes.get_pass(ins.pass_name, **ins.options)
    except Exception as exc:  # the plugin's options (or factory) are wrong: say how
        options = f"options {dict(ins.options)!r}" if ins.options else "no options"
        return f"the pass cannot be created with {options}: {_describe(exc)}"
    return ""


def _load_order(ep: metadata.EntryPoint) -> tuple[bool, str, str, str]:
    """irpass's own entry points first, then by name (then distribution and module, for
    a name two distributions declare: the first one loaded owns it)."""
    dist = getattr(ep, "dist", None)
    dist_name = dist.metadata["Name"] if dist else ""
    return (dist_name != CORE, ep.name, dist_name or "", ep.value)


def _check_owner(what: str, existing: Any, plugin: str) -> None:
    """A name registered by someone else is a clash, even for the very same object:
    only one plugin can own (and, by failing or being unregistered, remove) it."""
    if existing is not None and existing.owner != plugin:
        raise _Broken(f"cannot register {what}: it is already registered by {existing.owner!r}")


def _items(hook: str, result: Any) -> list[Any]:
    """The registrations a hook returned, as a list; garbage is :class:`_Broken`."""
    if result is None:
        return []
    if hook == "irpass_register_instruments":
        if not isinstance(result, Mapping):
            raise _Broken(_garbage(hook, result, "a mapping of instrument names to factories"))
        return list(result.items())
    if isinstance(result, (str, bytes)) or not isinstance(result, (Sequence, set, frozenset)):
        raise _Broken(_garbage(hook, result, "a list"))
    return list(result)


def _garbage(hook: str, value: Any, expected: str) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{hook}() returned {type(value).__name__} {text}, expected {expected}"


def _where(ins: Any) -> str:
    if ins.before:
        return f"before {ins.before}"
    if ins.after:
        return f"after {ins.after}"
    return f"phase {ins.phase}"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        # sys.exit(3) / exit("message") / sys.exit(): as the process would have ended
        code = exc.code
        if code is None or isinstance(code, int):
            return f"SystemExit: it called sys.exit() with exit code {code or 0}"
        return f"SystemExit: it called sys.exit({code!r}) (exit code 1)"
    return f"{type(exc).__name__}: {exc}"


def _import_from_cwd(spec: str) -> ModuleType:
    """``import spec`` with the working directory first on ``sys.path`` while it imports,
    as pytest's ``-p`` finds a ``conftest``-side module: ``-p mymod`` loads ``./mymod.py``."""
    cwd = os.getcwd()
    sys.path.insert(0, cwd)
    try:
        return importlib.import_module(spec)
    finally:
        # the import may have changed sys.path: remove our entry, not whatever is first
        for i, entry in enumerate(sys.path):
            if entry is cwd:
                del sys.path[i]
                break


def _import_failure(exc: BaseException, module: str) -> str:
    """Why importing ``module`` failed, starting with the file and line where it did
    (``mymod.py:3: NameError: name 'x' is not defined``); a path under the working
    directory is shown relative to it."""
    if (
        isinstance(exc, ModuleNotFoundError)
        and exc.name
        and (module == exc.name or module.startswith(exc.name + "."))
    ):
        return (
            f"{_describe(exc)} (no such module on sys.path nor {exc.name}.py in the "
            "working directory; -p loads a plugin, -P is the pipeline)"
        )
    if isinstance(exc, SyntaxError) and exc.filename:
        where = (
            f"{_show_path(exc.filename)}:{exc.lineno}: "
            if exc.lineno
            else f"{_show_path(exc.filename)}: "
        )
        return f"{where}{type(exc).__name__}: {exc.msg}"
    frame = _failing_frame(exc)
    where = f"{_show_path(frame.filename)}:{frame.lineno}: " if frame is not None else ""
    return where + _describe(exc)


def _failing_frame(exc: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame of ``exc``'s traceback in a file of the plugin's (or of what it
    imports), not in the import machinery or this module."""
    skip = (os.path.dirname(importlib.__file__), __file__)
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        name = frame.filename
        if name.startswith("<") or name == skip[1] or name.startswith(skip[0] + os.sep):
            continue
        found = frame
    return found


def _show_path(path: str) -> str:
    try:
        return os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path
    except ValueError:  # another drive (Windows)
        return path


def _close(name: str, known: Any) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=2)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def entry_points() -> list[metadata.EntryPoint]:
    """The installed plugins of the ``irpass`` entry-point group."""
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def _distribution_of(module: str) -> tuple[str | None, str | None]:
    """The distribution that installed ``module``'s top-level package, if any."""
    top = module.split(".")[0]
    dists = metadata.packages_distributions().get(top, [])
    if not dists:
        return None, None
    try:
        return dists[0], metadata.version(dists[0])
    except metadata.PackageNotFoundError:
        return dists[0], None
