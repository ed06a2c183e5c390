"""Putting the settings together: command line > environment > config file > defaults.

- Scalars (``opt_level``, ``pipeline``, ``plugins.autoload``,
  ``plugins.strict``) take the value of the strongest source that gives one.
- Lists (``required_pass``, ``disabled_pass``, ``plugins.disable``,
  ``plugins.modules``, ``instruments``) from the environment and the command
  line *extend* the file's: file items first, then the environment's, then the
  command line's, duplicates dropped (the first one kept).
- Instruments are de-duplicated by name: a later entry *with arguments*
  replaces an earlier one of the same name (``--instrument dump-ir:other``
  redirects the file's ``[instruments.dump-ir]``), one without arguments
  only switches the instrument on if it is not on already (so
  ``--instrument dump-ir`` keeps the file's ``dump_dir``).
- ``plugins.only``, ``config`` and ``pipelines`` come from the file only.

The environment: ``IRPASS_CONFIG`` (the file), ``IRPASS_PLUGINS`` (comma-separated
modules, added to ``plugins.modules``), ``IRPASS_DISABLE_PLUGIN_AUTOLOAD``
(``1``/``true``/``yes``/``on``: ``plugins.autoload = false``;
``0``/``false``/``no``/``off`` or empty: not set, the file decides; anything
else is an error).

The command line (the ``cli`` mapping; ``None`` or absent means "not given"):
``config`` (path), ``opt_level`` (int), ``pipeline`` (str), ``required_pass`` /
``disabled_pass`` (lists of names; a value may hold several, comma-separated),
``instruments`` (``"name"`` or ``"name:arg"`` strings), ``plugins`` (``-p``
values: ``"no:NAME"`` blocks plugin NAME, anything else is a module to load),
``strict`` (only ``True`` counts: the flag switches strict mode on).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..instrument import parse_instrument_spec
from ..plugins.specs import env_autoload, env_modules
from .errors import Origin
from .files import ConfigFile, find_config_file
from .model import InstrumentSpec, Settings
from .schema import check_file, check_opt_level

__all__ = ["CLI_FLAGS", "load_settings"]

#: The command-line flag of each ``cli`` key, as shown in sources and messages.
CLI_FLAGS: Mapping[str, str] = MappingProxyType({
    "config": "--config",
    "opt_level": "--opt-level",
    "pipeline": "--pipeline",
    "required_pass": "--required-pass",
    "disabled_pass": "--disable-pass",
    "instruments": "--instrument",
    "plugins": "-p",
    "strict": "--strict-plugins",
})

_LIST_KEYS = ("required_pass", "disabled_pass", "rewrites.disable", "plugins.disable",
              "plugins.only", "plugins.modules")


def load_settings(
    *,
    cli: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
) -> Settings:
    """The effective settings: the config file found from ``cwd`` (see
    :mod:`irpass.settings.files`), the environment and the command line.

    ``environ`` defaults to ``os.environ`` and ``cwd`` to the working directory.
    Only the file's structure and types are checked here; no plugin is
    imported. Call :meth:`Settings.validate` once the plugins are loaded to
    check names. Raises :class:`ConfigError` naming the file and key.
    """
    cli = dict(cli or {})
    unknown = sorted(set(cli) - set(CLI_FLAGS))
    if unknown:
        raise TypeError(
            f"load_settings: unknown cli key(s) {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(CLI_FLAGS)})"
        )
    environ = os.environ if environ is None else environ
    base = Path(cwd) if cwd is not None else Path.cwd()
    base = base.absolute()
    config_file = find_config_file(cli.get("config"), environ, base)
    layers = [_file_layer(config_file), _env_layer(environ), _cli_layer(cli)]
    return _merge(layers, config_file)


Layer = dict[str, tuple[Any, Origin]]


def _file_layer(config_file: ConfigFile | None) -> Layer:
    if config_file is None:
        return {}
    origin = config_file.origin
    return {key: (value, origin) for key, value in check_file(config_file.data, origin).items()}


def _env_layer(environ: Mapping[str, str]) -> Layer:
    layer: Layer = {}
    modules_origin = Origin("env", "IRPASS_PLUGINS")
    try:
        names = env_modules(environ.get("IRPASS_PLUGINS", ""))
    except ValueError as exc:
        raise modules_origin.error(None, None, str(exc)) from None
    for name in names:
        if not _is_module_name(name):
            raise modules_origin.error(None, None, f"{name!r} is not a module or plugin name")
    if names:
        layer["plugins.modules"] = (names, modules_origin)
    autoload_origin = Origin("env", "IRPASS_DISABLE_PLUGIN_AUTOLOAD")
    try:
        autoload = env_autoload(environ.get("IRPASS_DISABLE_PLUGIN_AUTOLOAD", ""))
    except ValueError as exc:
        raise autoload_origin.error(None, None, str(exc)) from None
    if not autoload:
        layer["plugins.autoload"] = (False, autoload_origin)
    return layer


def _cli_layer(cli: Mapping[str, Any]) -> Layer:
    layer: Layer = {}

    def origin(key: str) -> Origin:
        return Origin("cli", CLI_FLAGS[key])

    if cli.get("opt_level") is not None:
        try:
            layer["opt_level"] = (check_opt_level(cli["opt_level"]), origin("opt_level"))
        except ValueError as exc:
            raise origin("opt_level").error(None, None, str(exc)) from None
    pipeline = cli.get("pipeline")
    if pipeline is not None:
        if not isinstance(pipeline, str) or not pipeline.strip():
            raise origin("pipeline").error(None, None, f"expected a pipeline, got {pipeline!r}")
        layer["pipeline"] = (pipeline, origin("pipeline"))
    for key in ("required_pass", "disabled_pass"):
        values = _strings(cli.get(key), key)
        names = tuple(n.strip() for v in values for n in v.split(",") if n.strip())
        if names:
            layer[key] = (names, origin(key))
    given = _strings(cli.get("instruments"), "instruments")
    specs = _instrument_specs(given, origin("instruments"))
    if specs:
        layer["instruments"] = (specs, origin("instruments"))
    modules, blocked = _plugin_values(_strings(cli.get("plugins"), "plugins"), origin("plugins"))
    if modules:
        layer["plugins.modules"] = (modules, origin("plugins"))
    if blocked:
        layer["plugins.disable"] = (blocked, origin("plugins"))
    if cli.get("strict") is True:
        layer["plugins.strict"] = (True, origin("strict"))
    return layer


def _strings(value: Any, key: str) -> tuple[str, ...]:
    """A cli list value as a tuple of str (a lone str counts as one value)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, Iterable) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"load_settings: cli[{key!r}] must be a list of str, got {value!r}")
    return tuple(value)


def _instrument_specs(values: tuple[str, ...], origin: Origin) -> tuple[InstrumentSpec, ...]:
    specs = []
    for text in values:
        try:
            name, args = parse_instrument_spec(text)
        except ValueError as exc:
            raise origin.error(None, None, str(exc), value=text) from None
        specs.append((name, tuple(args), MappingProxyType({})))
    return tuple(specs)


def _plugin_values(values: tuple[str, ...], origin: Origin) -> tuple[tuple[str, ...], ...]:
    modules: list[str] = []
    blocked: list[str] = []
    for text in values:
        text = text.strip()
        if text.startswith("no:"):
            name = text[3:].strip()
            if not name:
                raise origin.error(None, None, "missing plugin name after 'no:'", value=text)
            blocked.append(name)
        elif _is_module_name(text):
            modules.append(text)
        else:
            raise origin.error(None, None, "expected a module (or plugin name) to load, "
                               "or no:NAME to block a plugin", value=text)
    return tuple(dict.fromkeys(modules)), tuple(dict.fromkeys(blocked))


def _is_module_name(text: str) -> bool:
    """A module path or an entry-point name (which may hold ``-``): no spaces, no ``:``."""
    return bool(text) and not any(c.isspace() or c in ":,/\\" for c in text)


def _merge(layers: list[Layer], config_file: ConfigFile | None) -> Settings:
    """Fold the layers (weakest first) into a :class:`Settings`."""
    values: dict[str, Any] = {}
    origins: dict[str, tuple[Origin, ...]] = {}
    for layer in layers:
        for key, (value, origin) in layer.items():
            if key in _LIST_KEYS:
                _extend(values, origins, key, value, origin)
            elif key == "instruments":
                _add_instruments(values, origins, value, origin)
            elif key in ("config", "pipelines"):
                for name in value:
                    origins[f"{key}.{name}"] = (origin,)
                values[key] = dict(value)
            else:
                values[key] = value
                origins[key] = (origin,)
    instruments = tuple(
        (name, args, MappingProxyType(dict(kwargs)))
        for name, args, kwargs in values.get("instruments", ())
    )
    if config_file is not None:
        origins["config_file"] = (Origin("file", config_file.shown, config_file.table),)
    return Settings(
        opt_level=values.get("opt_level", 2),
        pipeline=values.get("pipeline"),
        required_pass=values.get("required_pass", ()),
        disabled_pass=values.get("disabled_pass", ()),
        rewrites_disable=values.get("rewrites.disable", ()),
        instruments=instruments,
        config=MappingProxyType(values.get("config", {})),
        pipelines=MappingProxyType(values.get("pipelines", {})),
        plugins_disable=values.get("plugins.disable", ()),
        plugins_only=values.get("plugins.only"),
        plugins_modules=values.get("plugins.modules", ()),
        plugins_autoload=values.get("plugins.autoload", True),
        plugins_strict=values.get("plugins.strict", False),
        path=config_file.path if config_file is not None else None,
        found_by=config_file.found_by if config_file is not None else None,
        origins=MappingProxyType(origins),
    )


def _extend(
    values: dict[str, Any],
    origins: dict[str, tuple[Origin, ...]],
    key: str,
    items: tuple[str, ...],
    origin: Origin,
) -> None:
    old = values.get(key, ())
    old_origins = origins.get(key, ())
    new = [i for i in dict.fromkeys(items) if i not in old]
    values[key] = tuple(old) + tuple(new)
    origins[key] = tuple(old_origins) + (origin,) * len(new)


def _add_instruments(
    values: dict[str, Any],
    origins: dict[str, tuple[Origin, ...]],
    specs: tuple[InstrumentSpec, ...],
    origin: Origin,
) -> None:
    current = list(values.get("instruments", ()))
    where = list(origins.get("instruments", ()))
    for spec in specs:
        names = [s[0] for s in current]
        if spec[0] not in names:
            current.append(spec)
            where.append(origin)
        elif spec[1] or spec[2]:
            i = names.index(spec[0])
            current[i] = spec
            where[i] = origin
    values["instruments"] = tuple(current)
    origins["instruments"] = tuple(where)

