"""Checking settings against the registries, once the plugins are loaded.

What is an error (each names the file or flag, the key and close matches):

- a pass in ``required_pass`` / ``disabled_pass`` that is not registered;
- an instrument that is not registered, or arguments its factory does not take;
- a ``[config]`` key that is not a registered option, or a value of the wrong type;
- a name in ``[rewrites] disable`` that is no registered rule set or rule;
- a name in ``[plugins] only`` that no installed plugin has (a typo there
  would silently drop every other plugin), or ``"irpass"`` (the core) in
  ``[plugins] disable``;
- a ``[pipelines]`` entry or the ``pipeline`` string that does not parse, or a
  ``[pipelines]`` name that is also a pass name.

What is only a note (returned by :meth:`Settings.validate`, shown by ``describe()``):

- config keys under the prefix of a plugin that is disabled, left out by
  ``only``, not autoloaded or failed to load (``[config.example]`` while
  ``example`` is disabled): ignored, since the plugin that would declare them
  is not there;
- an instrument named like such a plugin (its hook-based instrument): ignored;
- a name in ``[rewrites] disable`` whose rule set is named like such a plugin;
- a name in ``[plugins] disable`` that no installed plugin has: disabling a pack
  that is not installed on this machine is normal for a shared config file.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..instrument import get_instrument_entry, list_instruments
from ..plugins import get_plugin_manager
from ..plugins import manager as plugin_manager
from ..transform import (
    PipelineSyntaxError,
    close_pass_names,
    list_config_options,
    list_passes,
    parse_pipeline,
)
from .errors import ConfigError, close_hint, close_names, did_you_mean, toml_type

if TYPE_CHECKING:
    from .model import InstrumentSpec, Settings

__all__ = ["validate", "ContextParts", "context_parts", "pipeline_problem"]


def validate(settings: Settings) -> list[str]:
    """Check ``settings`` against the registries; raise one :class:`ConfigError` listing
    every problem, else record and return the notes."""
    check = _Checker(settings)
    check.plugins()
    check.passes()
    check.rewrites()
    check.instruments()
    check.config()
    check.pipelines()
    return check.finish()


class ContextParts:
    """What a PassContext is made of, after checking: the instruments to create
    (with their index in ``settings.instruments``) and the converted config."""

    def __init__(self, instruments: list[tuple[int, InstrumentSpec]], config: dict[str, Any]):
        self.instruments = instruments
        self.config = config


def context_parts(settings: Settings) -> ContextParts:
    """Check the pass-context part of ``settings`` (passes, instruments, config) and
    return what to build it from; raises :class:`ConfigError`."""
    check = _Checker(settings)
    check.passes()
    check.rewrites()
    instruments = check.instruments()
    config = check.config()
    if settings.rewrites_disable:
        # imported only here and in rewrites(): the rule-set machinery imports numpy
        from ..transform.rewrites import DISABLE_OPTION

        # [rewrites] disable extends whatever [config] rewrites.disable holds
        config[DISABLE_OPTION] = (*config.get(DISABLE_OPTION, ()), *settings.rewrites_disable)
    check.finish(record=False)  # a partial check must not replace validate()'s notes
    return ContextParts(instruments, config)


class _Checker:
    """Accumulates errors and notes over the checks of one :class:`Settings`."""

    def __init__(self, settings: Settings) -> None:
        self.s = settings
        self.errors: list[ConfigError] = []
        self.notes: dict[str, list[str]] = {}
        self.known_plugins, self.inactive = _plugin_state(settings)

    def finish(self, record: bool = True) -> list[str]:
        if self.errors:
            raise ConfigError.combine(self.errors)
        if not record:
            return [f"{k}: {t}" for k, texts in self.notes.items() for t in texts]
        self.s._notes.clear()
        self.s._notes.update(self.notes)
        return self.s.notes

    def note(self, key: str, text: str) -> None:
        self.notes.setdefault(key, []).append(text)

    def error(self, key: str, index: int, what: str, *, section: str | None = None,
              label: str | None = None, value: str | None = None) -> None:
        origin = self.s.origin_of(key, index)
        self.errors.append(origin.error(section, label, what, value=value))

    def _inactive_hint(self) -> str:
        if not self.inactive:
            return ""
        listed = ", ".join(f"{n} ({why})" for n, why in sorted(self.inactive.items()))
        return f" (plugins not loaded: {listed}; it may come from one of them)"

    # -- the checks ---------------------------------------------------------------------------
    def plugins(self) -> None:
        known = self.known_plugins
        for i, name in enumerate(self.s.plugins_disable):
            if name == "irpass":
                self.error("plugins.disable", i, "'irpass' is the core and cannot be disabled",
                           section="plugins", label="disable", value=f"no:{name}")
            elif name not in known:
                self.note("plugins.disable",
                          f"no installed plugin is named {name!r}; nothing to disable"
                          + close_hint(name, known))
        for i, name in enumerate(self.s.plugins_only or ()):
            if name not in known:
                self.error("plugins.only", i,
                           f"no installed plugin is named {name!r}" + close_hint(name, known)
                           + f" (installed: {', '.join(sorted(known)) or 'none'})",
                           section="plugins", label="only")

    def passes(self) -> None:
        registered = set(list_passes())
        for key in ("required_pass", "disabled_pass"):
            for i, name in enumerate(getattr(self.s, key)):
                if name in registered:
                    continue
                # a close match is the likely fix; else the pass may belong to a plugin
                # that is not loaded
                hint = did_you_mean(close_pass_names(name)) or self._inactive_hint()
                self.error(key, i, f"no pass named {name!r} is registered{hint}",
                           label=key, value=name)

    def rewrites(self) -> None:
        if not self.s.rewrites_disable:
            return
        from ..transform.rewrites import list_rule_sets

        known: list[str] = []
        for name, entry in list_rule_sets().items():
            known += [name, *entry.ruleset.rule_names()]
        for i, name in enumerate(self.s.rewrites_disable):
            if name in known:
                continue
            prefix = name.partition(".")[0]
            if prefix in self.inactive:
                # as for [config.example]: a rule set named after a plugin not loaded here
                self.note("rewrites.disable",
                          f"{name}: ignored: plugin {prefix!r} is not loaded "
                          f"({self.inactive[prefix]})")
                continue
            hint = close_hint(name, known) or self._inactive_hint()
            self.error("rewrites.disable", i,
                       f"no rule set or rule named {name!r} is registered{hint} "
                       f"(known: {', '.join(known) or 'none'})",
                       section="rewrites", label="disable")

    def instruments(self) -> list[tuple[int, InstrumentSpec]]:
        registered = list_instruments()
        keep: list[tuple[int, InstrumentSpec]] = []
        for i, (name, args, kwargs) in enumerate(self.s.instruments):
            where = {"section": f"instruments.{name}", "value": _cli_spec(name, args)}
            if name not in registered:
                if name in self.inactive:
                    self.note(f"instruments.{name}",
                              f"ignored: plugin {name!r} is not loaded ({self.inactive[name]})")
                    continue
                self.error("instruments", i,
                           f"no instrument named {name!r} is registered"
                           + (close_hint(name, registered) or self._inactive_hint())
                           + f" (registered: {', '.join(registered) or 'none'})", **where)
                continue
            problem = _bind_problem(get_instrument_entry(name).factory, args, kwargs)
            if problem:
                self.error("instruments", i, f"cannot create instrument {name!r}: {problem}",
                           **where)
                continue
            keep.append((i, (name, args, kwargs)))
        return keep

    def config(self) -> dict[str, Any]:
        options = list_config_options()
        values: dict[str, Any] = {}
        for key, value in self.s.config.items():
            section, _, last = f"config.{key}".rpartition(".")
            option = options.get(key)
            if option is None:
                prefix = key.partition(".")[0]
                if prefix in self.inactive:
                    self.note(f"config.{key}",
                              f"ignored: plugin {prefix!r} is not loaded ({self.inactive[prefix]})")
                else:
                    self.error(f"config.{key}", 0, _unknown_option(key, options),
                               section=section, label=last)
                continue
            try:
                values[key] = _convert(option, value)
            except TypeError:
                self.error(f"config.{key}", 0,
                           f"expected {_expected(option.value_type)}, got {toml_type(value)}",
                           section=section, label=last)
        return values

    def pipelines(self) -> None:
        registered = set(list_passes())
        named = dict(self.s.pipelines)
        for name, text in named.items():
            if name in registered:
                self.error(f"pipelines.{name}", 0,
                           f"{name!r} is also a registered pass; pick another name",
                           section="pipelines", label=name)
                continue
            problem = _parse_problem(parse_pipeline, text, named)
            if problem:
                self.error(f"pipelines.{name}", 0, problem, section="pipelines", label=name)
        pipeline = self.s.pipeline
        if pipeline is not None and pipeline != "default":
            problem = _parse_problem(parse_pipeline, pipeline, named)
            if problem:
                self.error("pipeline", 0, problem, label="pipeline")


def _plugin_state(settings: Settings) -> tuple[set[str], dict[str, str]]:
    """The names of installed plugins (records and entry points), and the plugins that
    are not active, with why ("disabled", "failed to load", ...)."""
    records = _records()
    entry_points = _entry_point_names()
    known = {r.name for r in records} | entry_points
    inactive: dict[str, str] = {}
    for record in records:
        if record.status == "blocked":
            inactive[record.name] = record.reason or "blocked"
        elif record.status == "failed":
            inactive[record.name] = "failed to load"
    for name in settings.plugins_disable:
        inactive[name] = "disabled"
    loaded = {r.name for r in records if r.status in ("loaded", "core")}
    if settings.plugins_only is not None:
        for name in entry_points - set(settings.plugins_only) - loaded:
            inactive.setdefault(name, "not in [plugins] only")
    if not settings.plugins_autoload:
        for name in entry_points - loaded:
            inactive.setdefault(name, "plugin autoload is off")
    return known, inactive


def _records() -> list[Any]:
    return list(get_plugin_manager().records())


def _entry_point_names() -> set[str]:
    return {ep.name for ep in plugin_manager.entry_points()}


def _cli_spec(name: str, args: tuple[Any, ...]) -> str:
    return ":".join([name, *map(str, args)])


def _bind_problem(factory: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    """Why ``factory(*args, **kwargs)`` cannot be called, without calling it ("" if it can)."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins and odd callables: leave it to the call
        return ""
    params = signature.parameters
    named = [n for n, p in params.items()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    takes = f" (it takes: {', '.join(named) or 'no arguments'})"
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        for key in kwargs:
            if key not in named:
                return f"unexpected argument {key!r}{close_hint(key, named)}{takes}"
    try:
        signature.bind(*args, **kwargs)
    except TypeError as exc:
        return f"{exc}{takes}"
    return ""


def _unknown_option(key: str, options: Mapping[str, Any]) -> str:
    text = f"unknown option {key!r}"
    prefix, _, last = key.rpartition(".")
    siblings = {k.rpartition(".")[2]: k for k in options if k.rpartition(".")[0] == prefix}
    if siblings:
        # compare within the section: every key of it shares the prefix, which would
        # make any of them look "close" to any misspelling
        close = [siblings[short] for short in close_names(last, siblings)]
        if close:
            return text + did_you_mean(close)
        return text + f" (options under {prefix!r}: {', '.join(siblings.values())})"
    hint = close_hint(key, options)
    if hint:
        return text + hint
    return text + f" (registered options: {', '.join(options) or 'none'})"


def _convert(option: Any, value: Any) -> Any:
    """``value`` checked by ``option.check``; TOML arrays also fit tuple-typed options."""
    types = option.value_type if isinstance(option.value_type, tuple) else (option.value_type,)
    if isinstance(value, list) and list not in types and tuple in types:
        value = tuple(value)
    return option.check(value)


_TYPE_TEXT = {bool: "a boolean", int: "an integer", float: "a float", str: "a string",
              list: "an array", tuple: "an array", dict: "a table"}


def _expected(value_type: type | tuple[type, ...]) -> str:
    types = value_type if isinstance(value_type, tuple) else (value_type,)
    texts = [_TYPE_TEXT.get(t, t.__name__) for t in types]
    if float in types and int not in types:
        texts.append("an integer")
    return " or ".join(dict.fromkeys(texts))


def _parse_problem(parse: Any, text: str, named: Mapping[str, str]) -> str:
    try:
        parse(text, named=named)
    except PipelineSyntaxError as exc:
        return pipeline_problem(exc)
    except KeyError as exc:
        return str(exc.args[0]) if exc.args else repr(exc)
    except (TypeError, ValueError) as exc:
        return str(exc)
    return ""


def pipeline_problem(exc: Exception) -> str:
    """The message of a pipeline error, without the ``"pipeline, "`` its text starts with
    (messages already say which key the pipeline came from)."""
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return text[len("pipeline, "):] if text.startswith("pipeline, column") else text

