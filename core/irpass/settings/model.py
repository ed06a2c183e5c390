"""Settings: the effective configuration, with where each value came from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..plugins import PluginSettings, load
from ..transform import list_config_options
from . import build, validate
from .errors import DEFAULT, Origin

if TYPE_CHECKING:
    from ..plugins import PluginManager
    from ..transform import PassContext, Sequential
    from ..transform.pipeline import PipelinePlan

__all__ = ["InstrumentSpec", "Settings"]

#: An instrument switched on: its name, positional and keyword arguments.
InstrumentSpec = tuple[str, tuple[Any, ...], Mapping[str, Any]]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class Settings:
    """The effective settings (made by :func:`irpass.settings.load_settings`).

    Pass-context values: ``opt_level``, ``required_pass``, ``disabled_pass``,
    ``instruments`` (``(name, args, kwargs)`` each, in order), ``config``
    (flat dotted keys), ``rewrites_disable`` (rule sets and rules the config
    file's ``[rewrites] disable`` names; the PassContext option
    ``rewrites.disable``). Pipelines: ``pipeline`` (``None`` or ``"default"``: the
    default pipeline; else a ``pipelines`` name or a pipeline string) and
    ``pipelines`` (named pipeline strings). Plugins: ``plugins_disable``,
    ``plugins_only`` (``None``: no allow-list), ``plugins_modules``,
    ``plugins_autoload``, ``plugins_strict`` -- also as
    :attr:`plugin_settings`. ``path`` is the config file used (``None``: none),
    ``found_by`` how it was found; ``origins`` maps each key to where its
    value (for lists: each item) came from; :meth:`source` and
    :meth:`describe` show it.

    Typical use (what ``irpass optimize`` does)::

        settings = load_settings(cli={"opt_level": 3})
        settings.load_plugins()
        settings.validate()
        with settings.pass_context():
            mod = settings.build_pipeline()(mod)
    """

    opt_level: int = 2
    pipeline: str | None = None
    required_pass: tuple[str, ...] = ()
    disabled_pass: tuple[str, ...] = ()
    rewrites_disable: tuple[str, ...] = ()
    instruments: tuple[InstrumentSpec, ...] = ()
    config: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    pipelines: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    plugins_disable: tuple[str, ...] = ()
    plugins_only: tuple[str, ...] | None = None
    plugins_modules: tuple[str, ...] = ()
    plugins_autoload: bool = True
    plugins_strict: bool = False
    path: Path | None = None
    found_by: str | None = None
    origins: Mapping[str, tuple[Origin, ...]] = field(
        default_factory=lambda: _EMPTY, repr=False, compare=False
    )
    # notes by key from the last validate(); a dict inside the frozen object on purpose
    _notes: dict[str, list[str]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    # -- where values came from ---------------------------------------------------------
    def origin_of(self, key: str, index: int = 0) -> Origin:
        """Where ``key`` (item ``index`` of a list key) came from; ``DEFAULT`` if not set."""
        found = self.origins.get(key, ())
        return found[index] if index < len(found) else DEFAULT

    def source(self, key: str) -> str:
        """The source string of ``key``: ``"default"``, ``"file irpass.toml"``,
        ``"env IRPASS_PLUGINS"``, ``"cli --opt-level"``; a list extended from
        several sources joins them: ``"file irpass.toml + cli --disable-pass"``."""
        found = self.origins.get(key, ())
        return " + ".join(dict.fromkeys(o.source for o in found)) or "default"

    # -- plugins --------------------------------------------------------------------------
    @property
    def plugin_settings(self) -> PluginSettings:
        """The plugin part, for :func:`irpass.plugins.load`."""
        return PluginSettings(
            autoload=self.plugins_autoload,
            modules=self.plugins_modules,
            block=frozenset(self.plugins_disable),
            only=self.plugins_only,
            strict=self.plugins_strict,
        )

    def load_plugins(self) -> PluginManager:
        """Load the process's plugins with :attr:`plugin_settings` (``irpass.plugins.load``)."""
        return load(self.plugin_settings)

    # -- checks and construction ------------------------------------------------------------
    def validate(self) -> list[str]:
        """Check every name against the registries (call after the plugins are loaded).

        Pass names, instrument names and arguments, config keys and their
        types, rule set and rule names in ``[rewrites] disable``, plugin
        names in ``disable``/``only``, named pipelines and the pipeline string.
        Raises one :class:`ConfigError` listing every problem, each naming the
        file (or flag) and key, with close matches.
        Returns the notes: things ignored or suspicious but not wrong, e.g.
        ``"config.example.max_depth: ignored: plugin 'example' is disabled"``;
        :meth:`describe` shows them too.
        """
        return validate.validate(self)

    @property
    def notes(self) -> list[str]:
        """The notes of the last :meth:`validate` (``"key: text"`` each)."""
        return [f"{key}: {text}" for key, texts in self._notes.items() for text in texts]

    def pass_context(self) -> PassContext:
        """A new :class:`~irpass.transform.PassContext` with these settings.

        Validates the pass-context part first (pass names, instruments,
        config), then creates the instruments with their arguments. Config
        keys of disabled or failed plugins are left out (see :meth:`validate`).
        Raises :class:`ConfigError` naming the key of whatever is wrong.
        """
        return build.pass_context(self)

    def build_pipeline(self) -> Sequential:
        """The pipeline to run: the default pipeline (:meth:`default_plan`'s passes) when
        ``pipeline`` is ``None`` or ``"default"``, else ``pipeline`` parsed (names from
        ``pipelines`` expand). A pipeline that does not parse is a :class:`ConfigError`."""
        return build.build_pipeline(self)

    def default_plan(self) -> PipelinePlan:
        """The default pipeline's plan: ``pipeline_plan(opt_level)``, plus the passes of
        ``required_pass`` above ``opt_level`` (see :func:`irpass.settings.build.default_plan`)."""
        return build.default_plan(self)

    # -- display -----------------------------------------------------------------------------
    def describe(self, *, include_defaults: bool = False) -> list[tuple[str, Any, str]]:
        """Rows ``(key, value, source)`` of the effective settings (``irpass config``).

        Keys: ``config_file`` (value: the path or ``None``; source: how it was
        found), ``opt_level``, ``pipeline``, ``required_pass``,
        ``disabled_pass``, ``rewrites.disable``, ``instruments.NAME`` per instrument (value: its
        keyword arguments, ``{"dump_dir": "out"}``, or from the command line
        its positional ones, ``("out",)``; just ``instruments`` when none),
        ``plugins.disable``/``only``/``modules``/``autoload``/``strict``,
        ``config.KEY`` per config value, ``pipelines.NAME`` per named pipeline.
        With ``include_defaults``, also every registered config option not set
        (source ``"default (owner)"``). Notes from :meth:`validate` follow the
        source: ``"file irpass.toml; ignored: plugin 'example' is not loaded
        (disabled)"``.
        """
        rows: list[tuple[str, Any, str]] = [
            ("config_file", str(self.path) if self.path else None, self.found_by or "default"),
            ("opt_level", self.opt_level, self.source("opt_level")),
            ("pipeline", self.pipeline, self.source("pipeline")),
            ("required_pass", self.required_pass, self.source("required_pass")),
            ("disabled_pass", self.disabled_pass, self.source("disabled_pass")),
        ]
        if self.instruments:
            for i, (name, args, kwargs) in enumerate(self.instruments):
                # a spec holds keyword arguments (file) or positional ones (command line)
                value: Any = tuple(args) if args and not kwargs else dict(kwargs)
                if args and kwargs:
                    value = (tuple(args), dict(kwargs))
                rows.append((f"instruments.{name}", value, self.origin_of("instruments", i).source))
        else:
            rows.append(("instruments", (), "default"))
        rows.append(("rewrites.disable", self.rewrites_disable, self.source("rewrites.disable")))
        rows += [
            ("plugins.disable", self.plugins_disable, self.source("plugins.disable")),
            ("plugins.only", self.plugins_only, self.source("plugins.only")),
            ("plugins.modules", self.plugins_modules, self.source("plugins.modules")),
            ("plugins.autoload", self.plugins_autoload, self.source("plugins.autoload")),
            ("plugins.strict", self.plugins_strict, self.source("plugins.strict")),
        ]
        rows += [(f"config.{k}", v, self.source(f"config.{k}")) for k, v in self.config.items()]
        if include_defaults:
            rows += self._default_config_rows()
        if not any(key.startswith("config.") for key, _, _ in rows):
            rows.append(("config", {}, "default"))
        if self.pipelines:
            rows += [
                (f"pipelines.{k}", v, self.source(f"pipelines.{k}"))
                for k, v in self.pipelines.items()
            ]
        else:
            rows.append(("pipelines", {}, "default"))
        return [(key, value, self._with_notes(key, source)) for key, value, source in rows]

    def _default_config_rows(self) -> list[tuple[str, Any, str]]:
        return [
            (f"config.{key}", option.default, f"default ({option.owner})")
            for key, option in list_config_options().items()
            if key not in self.config
        ]

    def _with_notes(self, key: str, source: str) -> str:
        notes = self._notes.get(key)
        return "; ".join([source, *notes]) if notes else source
