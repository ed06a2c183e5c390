"""Finding and reading the config file.

Which file is used, first match wins:

1. ``--config PATH`` (the CLI's ``config`` key);
2. the ``IRPASS_CONFIG`` environment variable (empty means unset);
3. ``irpass.toml`` in the working directory (only there: one in a parent
   directory is not used);
4. the nearest ``pyproject.toml`` with a ``[tool.irpass]`` table, from the
   working directory up to the file-system root; a ``pyproject.toml`` without
   that table is skipped and the search goes on.

No file: the defaults. A file given by ``--config`` / ``IRPASS_CONFIG`` that is
called ``pyproject.toml`` is read from its ``[tool.irpass]`` table (which must
exist); any other file holds the settings at top level.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, Origin, toml_type

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["ConfigFile", "find_config_file", "read_config_file", "CONFIG_NAME", "PYPROJECT"]

CONFIG_NAME = "irpass.toml"
PYPROJECT = "pyproject.toml"
PYPROJECT_TABLE = ("tool", "irpass")


@dataclass(frozen=True)
class ConfigFile:
    """A config file that was read.

    ``path`` is absolute; ``shown`` is how messages and sources name it (as
    given to ``--config`` / ``IRPASS_CONFIG``, else relative to the working
    directory); ``found_by`` says how it was chosen (``"cli --config"``,
    ``"env IRPASS_CONFIG"``, ``"irpass.toml in the working directory"``,
    ``"nearest pyproject.toml with [tool.irpass]"``); ``data`` is its settings
    table; ``table`` the TOML prefix of that table (``"tool.irpass"`` or ``""``).
    """

    path: Path
    shown: str
    found_by: str
    data: Mapping[str, Any] = field(repr=False)
    table: str = ""

    @property
    def origin(self) -> Origin:
        """The :class:`Origin` of the values read from this file."""
        return Origin("file", self.shown, self.table)


def find_config_file(
    explicit: str | os.PathLike[str] | None,
    environ: Mapping[str, str],
    cwd: Path,
) -> ConfigFile | None:
    """The config file to use (see the module documentation), read; ``None`` if there is none.

    Raises :class:`ConfigError` for a file that cannot be read or is not valid
    TOML, and for an explicit ``pyproject.toml`` without ``[tool.irpass]``.
    """
    if explicit is not None and str(explicit) != "":
        return _read_explicit(Path(explicit), cwd, "cli --config")
    from_env = environ.get("IRPASS_CONFIG", "")
    if from_env:
        return _read_explicit(Path(from_env), cwd, "env IRPASS_CONFIG")
    local = cwd / CONFIG_NAME
    if _is_file(local):
        return read_config_file(local, CONFIG_NAME, f"{CONFIG_NAME} in the working directory")
    for directory in (cwd, *cwd.parents):
        candidate = directory / PYPROJECT
        if not _is_file(candidate):
            continue
        found = read_config_file(
            candidate, _shown(candidate, cwd), "nearest pyproject.toml with [tool.irpass]",
            required=False,
        )
        if found is not None:
            return found
    return None


def read_config_file(
    path: Path, shown: str, found_by: str, *, required: bool = True
) -> ConfigFile | None:
    """Read ``path`` (shown in messages as ``shown``). A ``pyproject.toml`` yields its
    ``[tool.irpass]`` table; without one, ``None`` unless ``required`` (then an error)."""
    document = _load_toml(path, shown, found_by)
    if path.name != PYPROJECT:
        return ConfigFile(path, shown, found_by, document, "")
    table: Any = document
    for depth, part in enumerate(PYPROJECT_TABLE):
        if part not in table:
            if required:
                raise ConfigError(
                    f"{shown}: has no [tool.irpass] table (the file was chosen by {found_by})",
                    path=shown,
                )
            return None
        table = table[part]
        if not isinstance(table, dict):
            where = ".".join(PYPROJECT_TABLE[:depth])
            prefix = f"[{where}] " if where else ""
            raise ConfigError(
                f"{shown}: {prefix}{part}: expected a table, got {toml_type(table)}",
                path=shown,
                key=f"{prefix}{part}",
            )
    return ConfigFile(path, shown, found_by, table, ".".join(PYPROJECT_TABLE))


def _read_explicit(given: Path, cwd: Path, found_by: str) -> ConfigFile:
    path = given if given.is_absolute() else cwd / given
    found = read_config_file(path, str(given), found_by)
    assert found is not None  # required=True never returns None
    return found


def _is_file(path: Path) -> bool:
    # an unreadable parent directory must not stop the search with a traceback
    try:
        return path.is_file()
    except OSError:
        return False


def _shown(path: Path, cwd: Path) -> str:
    try:
        return os.path.relpath(path, cwd)
    except ValueError:  # another drive on Windows
        return str(path)


_AT_LINE = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_AT_END = re.compile(r"\s*\(at end of document\)\s*$")


def _load_toml(path: Path, shown: str, found_by: str) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(
            f"{shown}: cannot read the config file ({reason}; it was chosen by {found_by})",
            path=shown,
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{shown}: the config file is not UTF-8 text (byte {raw[exc.start]:#04x} at "
            f"offset {exc.start})",
            path=shown,
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(exc, text, shown) from None


def _syntax_error(exc: Exception, text: str, shown: str) -> ConfigError:
    """``shown:LINE:COLUMN: invalid TOML: reason`` plus the line and a caret."""
    message = str(exc)
    line = column = None
    match = _AT_LINE.search(message)
    if match:
        line, column = int(match.group(1)), int(match.group(2))
        message = message[: match.start()]
    else:
        match = _AT_END.search(message)
        if match:
            message = message[: match.start()] + " at the end of the file"
            lines = text.split("\n")
            # a trailing newline leaves an empty last element; point at the last real line
            if len(lines) > 1 and lines[-1] == "":
                lines.pop()
            line, column = len(lines), len(lines[-1]) + 1
    # newer tomli/tomllib versions also expose the position as attributes
    line = getattr(exc, "lineno", None) or line
    column = getattr(exc, "colno", None) or column
    where = f"{shown}:{line}:{column}" if line else shown
    rendered = f"{where}: invalid TOML: {message}"
    if line:
        source = text.split("\n")[line - 1] if line - 1 < len(text.split("\n")) else ""
        if source.strip():
            rendered += f"\n  {source}\n  {' ' * ((column or 1) - 1)}^"
    return ConfigError(rendered, path=shown, line=line, column=column)
