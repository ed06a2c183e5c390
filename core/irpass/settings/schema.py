"""The keys of the config file, their types, and the structural check of a file.

A full file (``irpass.toml``; in ``pyproject.toml`` the same under ``[tool.irpass]``)::

    opt_level = 3                      # integer 0..4 (default 2)
    pipeline = "fast"                  # "default", a [pipelines] name, or a pipeline string
    required_pass = ["FoldConstant"]   # run whatever their opt_level
    disabled_pass = ["AlterOpLayout"]  # never run (wins over required_pass)

    [plugins]
    disable = ["example"]              # blocked: never imported
    only = ["std", "instruments"]      # allow-list of entry-point plugins
    modules = ["my_project.passes"]    # imported and registered like -p (or entry-point names)
    autoload = true                    # false: no entry-point plugins at all
    strict = false                     # true: a broken plugin is an error, not a warning

    [instruments.timing]               # one table per instrument switched on
    [instruments.dump-ir]              # keys are the factory's keyword arguments
    dump_dir = "build/ir"

    [config]                           # PassContext config; tables make dotted keys
    testing.immutable_module = true
    [config.example]                   # = example.max_depth, checked against the
    max_depth = 4                      #   options plugin 'example' registered

    [pipelines]                        # named pipelines, usable in pipeline strings
    fast = "InferType,FoldConstant"

    [rewrites]                         # rewrite rules of the plugins (Canonicalize)
    disable = ["example.fold_add_zero"]  # rule sets or rules (<ruleset>.<rule>) left out

``instruments.NAME = true`` is the same as an empty ``[instruments.NAME]``
table and ``false`` leaves the instrument off. Relative paths among instrument
arguments are relative to the working directory, as on the command line.
Config values are scalars or arrays: a table under ``[config]`` always makes
dotted keys.

:func:`check_file` checks a file's structure and types only (no plugin is
imported); names are checked against the registries by
:meth:`irpass.settings.Settings.validate` once the plugins are loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .errors import ConfigError, Origin, close_hint, toml_type

__all__ = [
    "OPT_LEVELS",
    "PLUGIN_KEYS",
    "REWRITE_KEYS",
    "RESERVED_PIPELINE_NAMES",
    "TOP_KEYS",
    "check_file",
    "check_opt_level",
    "flatten_config",
]

OPT_LEVELS = range(0, 5)
RESERVED_PIPELINE_NAMES = frozenset({"default", "seq"})

# key -> what it holds (the text used in "expected ..." messages)
TOP_KEYS: dict[str, str] = {
    "opt_level": "an integer from 0 to 4",
    "pipeline": "a non-empty string",
    "required_pass": "an array of pass names",
    "disabled_pass": "an array of pass names",
    "plugins": "a table",
    "instruments": "a table",
    "config": "a table",
    "pipelines": "a table",
    "rewrites": "a table",
}
REWRITE_KEYS: dict[str, str] = {
    "disable": "an array of rule set or rule names",
}
PLUGIN_KEYS: dict[str, str] = {
    "disable": "an array of plugin names",
    "only": "an array of plugin names",
    "modules": "an array of module names",
    "autoload": "a boolean",
    "strict": "a boolean",
}

Checker = Callable[[Any], Any]


class _Bad(Exception):
    """A value of the wrong shape; the text says what it is instead."""


def check_opt_level(value: Any) -> int:
    """``value`` if it is an int in 0..4 (not a bool), else ``ValueError`` with the reason."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected {TOP_KEYS['opt_level']}, got {toml_type(value)}")
    if value not in OPT_LEVELS:
        raise ValueError(f"expected {TOP_KEYS['opt_level']}, got {value}")
    return value


def _opt_level(value: Any) -> int:
    try:
        return check_opt_level(value)
    except ValueError as exc:
        raise _Bad(str(exc)) from None


def _string(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Bad(f"expected a non-empty string, got {toml_type(value)}")
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"expected a boolean (true or false), got {toml_type(value)}")
    return value


def _names(what: str, check: Callable[[str], bool] = lambda s: True) -> Checker:
    def names(value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            raise _Bad(f"expected an array of {what}, got {toml_type(value)}; write [{value!r}]")
        if not isinstance(value, list):
            raise _Bad(f"expected an array of {what}, got {toml_type(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise _Bad(f"item {i}: expected a non-empty string, got {toml_type(item)}")
            if not check(item):
                raise _Bad(f"item {i}: {item!r} is not a valid {what[:-1]}")
        return tuple(dict.fromkeys(value))  # duplicates are harmless: keep the first

    return names


def _is_module_name(text: str) -> bool:
    """A module path or an entry-point name (which may hold ``-``): no spaces, no ``:``."""
    return not any(c.isspace() or c in ":,/\\" for c in text)


_TOP_CHECKS: dict[str, Checker] = {
    "opt_level": _opt_level,
    "pipeline": _string,
    "required_pass": _names("pass names"),
    "disabled_pass": _names("pass names"),
}
_PLUGIN_CHECKS: dict[str, Checker] = {
    "disable": _names("plugin names"),
    "only": _names("plugin names"),
    "modules": _names("module names", _is_module_name),
    "autoload": _boolean,
    "strict": _boolean,
}


def check_file(data: Mapping[str, Any], origin: Origin) -> dict[str, Any]:
    """The settings of a config file's table, checked for structure and types.

    Returns a dict with any of the keys ``opt_level``, ``pipeline``,
    ``required_pass``, ``disabled_pass`` (tuples), ``plugins.disable``,
    ``plugins.only``, ``plugins.modules`` (tuples), ``plugins.autoload``,
    ``plugins.strict``, ``instruments`` (a tuple of ``(name, (), kwargs)``),
    ``config`` (flat dotted keys), ``pipelines`` and ``rewrites.disable`` (a
    tuple) -- only those the file sets.
    Raises one :class:`ConfigError` listing every problem found.
    """
    errors: list[ConfigError] = []
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in _TOP_CHECKS:
            _check_into(out, key, _TOP_CHECKS[key], value, origin, None, key, errors)
        elif key == "plugins":
            _check_plugins(value, origin, out, errors)
        elif key == "instruments":
            _check_instruments(value, origin, out, errors)
        elif key == "config":
            if _is_table(value, origin, None, key, errors):
                out["config"] = flatten_config(value)
        elif key == "pipelines":
            _check_pipelines(value, origin, out, errors)
        elif key == "rewrites":
            _check_rewrites(value, origin, out, errors)
        else:
            errors.append(origin.error(None, key, "unknown key" + _unknown_top_hint(key, origin)))
    if errors:
        raise ConfigError.combine(errors)
    return out


def flatten_config(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}, "c": 2}`` -> ``{"a.b": 1, "c": 2}`` (tables become dotted keys)."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten_config(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


def _check_into(
    out: dict[str, Any],
    name: str,
    check: Checker,
    value: Any,
    origin: Origin,
    section: str | None,
    key: str,
    errors: list[ConfigError],
) -> None:
    try:
        out[name] = check(value)
    except _Bad as exc:
        errors.append(origin.error(section, key, str(exc)))


def _is_table(
    value: Any, origin: Origin, section: str | None, key: str, errors: list[ConfigError]
) -> bool:
    if isinstance(value, dict):
        return True
    errors.append(origin.error(section, key, f"expected a table, got {toml_type(value)}"))
    return False


def _check_plugins(
    value: Any, origin: Origin, out: dict[str, Any], errors: list[ConfigError]
) -> None:
    if not _is_table(value, origin, None, "plugins", errors):
        return
    for key, item in value.items():
        check = _PLUGIN_CHECKS.get(key)
        if check is None:
            hint = close_hint(key, PLUGIN_KEYS)
            if not hint and key in TOP_KEYS:
                hint = f"; {key!r} is a top-level key, not part of [plugins]"
            errors.append(origin.error("plugins", key, f"unknown key{hint}"))
        else:
            _check_into(out, f"plugins.{key}", check, item, origin, "plugins", key, errors)


def _check_rewrites(
    value: Any, origin: Origin, out: dict[str, Any], errors: list[ConfigError]
) -> None:
    if not _is_table(value, origin, None, "rewrites", errors):
        return
    for key, item in value.items():
        if key == "disable":
            _check_into(out, "rewrites.disable", _names("rule set or rule names"), item,
                        origin, "rewrites", key, errors)
        else:
            hint = close_hint(key, REWRITE_KEYS) or f" (known keys: {', '.join(REWRITE_KEYS)})"
            errors.append(origin.error("rewrites", key, "unknown key" + hint))


def _check_instruments(
    value: Any, origin: Origin, out: dict[str, Any], errors: list[ConfigError]
) -> None:
    if not _is_table(value, origin, None, "instruments", errors):
        return
    specs = []
    for name, item in value.items():
        if item is False:
            continue
        if item is True:
            item = {}
        if not isinstance(item, dict):
            errors.append(origin.error(
                "instruments", name,
                f"expected a table of keyword arguments (or true/false), got {toml_type(item)}",
            ))
            continue
        bad = [k for k in item if not k.isidentifier()]
        if bad:
            errors.append(origin.error(
                f"instruments.{name}", bad[0], "not a keyword argument name (letters, digits, _)"
            ))
            continue
        specs.append((name, (), dict(item)))
    out["instruments"] = tuple(specs)


def _check_pipelines(
    value: Any, origin: Origin, out: dict[str, Any], errors: list[ConfigError]
) -> None:
    if not _is_table(value, origin, None, "pipelines", errors):
        return
    named: dict[str, str] = {}
    for name, text in value.items():
        if name in RESERVED_PIPELINE_NAMES:
            errors.append(origin.error(
                "pipelines", name, f"{name!r} is reserved in pipeline strings; pick another name"
            ))
        elif isinstance(text, dict):
            errors.append(origin.error(
                "pipelines", name, "expected a pipeline string, got a table"
            ))
        else:
            try:
                named[name] = _string(text)
            except _Bad as exc:
                errors.append(origin.error("pipelines", name, str(exc)))
    out["pipelines"] = named


def _unknown_top_hint(key: str, origin: Origin) -> str:
    if key in PLUGIN_KEYS:
        return f"; did you mean [plugins] {key}?"
    hint = close_hint(key, TOP_KEYS)
    if hint:
        return hint
    if key == "tool" and not origin.table:
        return (
            f"; {origin.name} holds the settings at top level "
            "([tool.irpass] is for pyproject.toml)"
        )
    return f" (known keys: {', '.join(TOP_KEYS)})"
