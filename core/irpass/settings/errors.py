"""ConfigError, and :class:`Origin`: where a setting came from, for messages and sources.

Every message about a setting starts with where it was written, so the
user can go and fix it::

    irpass.toml: [plugins] disable: expected an array of strings, got string 'std'
    pyproject.toml: [tool.irpass] opt_level: expected an integer from 0 to 4, got 7
    irpass.toml:3:12: invalid TOML: Invalid value
    command line: --required-pass: no pass named 'FoldConstnt'; did you mean 'FoldConstant'?
    environment: IRPASS_DISABLE_PLUGIN_AUTOLOAD: expected 1/true/yes or 0/false/no, got 'maybe'
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import IRPassError

__all__ = ["ConfigError", "Origin", "close_hint", "close_names", "did_you_mean", "toml_type"]


class ConfigError(IRPassError, ValueError):
    """A setting is wrong: the message names the file (or the command line or
    environment), the key and what is wrong, with close matches for names.

    Attributes: ``path`` (the file as shown, ``"command line"`` or
    ``"environment"``), ``key`` (e.g. ``"[plugins] disable"``; ``None`` for a
    TOML syntax error), ``line`` / ``column`` (1-based, TOML syntax errors
    only), ``errors`` (when :meth:`Settings.validate` found several problems:
    each one; the message holds them all, one per line).
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        key: str | None = None,
        line: int | None = None,
        column: int | None = None,
        errors: Sequence[ConfigError] = (),
    ) -> None:
        super().__init__(message)
        self.path = path
        self.key = key
        self.line = line
        self.column = column
        self.errors = tuple(errors) or (self,)

    @classmethod
    def combine(cls, errors: Sequence[ConfigError]) -> ConfigError:
        """One error holding ``errors`` (the first's attributes, every message)."""
        if len(errors) == 1:
            return errors[0]
        first = errors[0]
        text = "\n".join(str(e) for e in errors)
        return cls(text, path=first.path, key=first.key, errors=errors)


@dataclass(frozen=True)
class Origin:
    """Where a value was given.

    ``kind`` is ``"default"``, ``"file"``, ``"env"`` or ``"cli"``; ``name`` the
    file as shown (``"irpass.toml"``), the variable (``"IRPASS_PLUGINS"``) or the
    flag (``"--disable-pass"``); ``table`` the TOML table prefix of the file's
    settings (``"tool.irpass"`` inside ``pyproject.toml``, else ``""``).
    """

    kind: str
    name: str = ""
    table: str = ""

    @property
    def source(self) -> str:
        """The source string shown by ``irpass config``: ``"file irpass.toml"``,
        ``"env IRPASS_PLUGINS"``, ``"cli --opt-level"`` or ``"default"``."""
        return f"{self.kind} {self.name}" if self.kind != "default" else "default"

    def where(self, section: str | None = None, key: str | None = None, *,
              value: str | None = None) -> str:
        """The start of a message about ``key`` of ``section`` (``None``: top level).

        For a file: ``"irpass.toml: [plugins] disable"``. Flags and variables
        have no sections: ``"command line: --disable-pass"``, or with ``value``
        (the flag's value) ``"command line: --instrument dump-ir:out"``;
        ``"environment: IRPASS_PLUGINS"``.
        """
        if self.kind == "cli":
            return f"command line: {self.name}" + (f" {value}" if value else "")
        if self.kind == "env":
            return f"environment: {self.name}"
        if self.kind == "default":
            return "defaults" + (f": {self.label(section, key)}" if section or key else "")
        return f"{self.name}: {self.label(section, key)}"

    def label(self, section: str | None, key: str | None) -> str:
        """``[section] key`` with the file's table prefix (``[tool.irpass.plugins] disable``)."""
        table = ".".join(p for p in (self.table, section) if p)
        parts = [f"[{table}]"] if table else []
        if key:
            parts.append(key)
        return " ".join(parts) or "(top level)"

    def error(self, section: str | None, key: str | None, what: str, *,
              value: str | None = None) -> ConfigError:
        """A :class:`ConfigError` ``"<where>: <what>"`` about ``key`` of ``section``
        (``value``: the flag's value, for the command line)."""
        return ConfigError(
            f"{self.where(section, key, value=value)}: {what}",
            path=self._path_text,
            key=self.label(section, key) if self.kind in ("file", "default") else self.name,
        )

    @property
    def _path_text(self) -> str:
        return {"cli": "command line", "env": "environment", "default": "defaults"}.get(
            self.kind, self.name
        )


DEFAULT = Origin("default")


def close_names(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """The candidates close to ``name``, case-insensitive equals first (``"infertype"``
    finds ``"InferType"``)."""
    pool = list(dict.fromkeys(candidates))
    folded = [c for c in pool if c.lower() == name.lower() and c != name]
    close = folded + [c for c in difflib.get_close_matches(name, pool, n=n) if c not in folded]
    return close[:n]


def close_hint(name: str, candidates: Iterable[str], n: int = 3) -> str:
    """``"; did you mean 'a', 'b'?"`` for the candidates close to ``name`` (else ``""``)."""
    return did_you_mean(close_names(name, candidates, n))


def did_you_mean(names: Sequence[str]) -> str:
    """``"; did you mean 'a', 'b'?"`` (``""`` for no names)."""
    return f"; did you mean {', '.join(map(repr, names))}?" if names else ""


_TOML_TYPES = {
    bool: "boolean",
    int: "integer",
    float: "float",
    str: "string",
    list: "array",
    tuple: "array",
    dict: "table",
}


def toml_type(value: Any) -> str:
    """The TOML name of ``value``'s type (``"string"``, ``"table"``...) followed by the value,
    for "expected X, got Y" messages: ``"string '3'"``, ``"table {...}"``."""
    kind = _TOML_TYPES.get(type(value), type(value).__name__)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{kind} {text}"
