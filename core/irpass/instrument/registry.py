"""The instrument registry: instruments by name, so config files and the CLI can switch them on.

An entry maps a short name (``"timing"``, ``"dump-ir"``) to a *factory*: a
:class:`PassInstrument` subclass or any callable returning an instrument.
Plugins fill the registry through the ``irpass_register_instruments`` hook;
``--instrument dump-ir:build/ir`` on the command line becomes
``get_instrument("dump-ir", "build/ir")``.

The registry holds only names: nothing is created, and no instrument joins a
:class:`~irpass.transform.PassContext`, until someone asks for it by name. A
plugin may even register a :class:`LazyInstrument` -- where the factory lives
(``"package.module:attr"``) and its one-line description -- so that loading the
plugin imports none of its instruments' code: the factory is imported when the
entry is first asked for (:func:`get_instrument_entry`, :func:`get_instrument`).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._lazy import check_target, import_target
from .._lazy_plugins import ensure_plugins
from .base import PassInstrument

__all__ = [
    "InstrumentEntry",
    "LazyInstrument",
    "get_instrument",
    "get_instrument_entry",
    "list_instruments",
    "parse_instrument_spec",
    "register_instrument",
    "unregister_instrument",
]

InstrumentFactory = Callable[..., PassInstrument]

_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_.][a-z0-9]+)*\Z")


class LazyInstrument:
    """An instrument factory declared by where it lives (``target``,
    ``"package.module:attr"``) and what it does (``description``, one line): the
    registry imports it when the instrument is first asked for by name."""

    def __init__(self, target: str, description: str) -> None:
        self.target = check_target(target, "LazyInstrument")
        self.__doc__ = description  # what register_instrument describes the entry by

    def load(self) -> InstrumentFactory:
        """The factory, imported; ``ImportError`` naming the target if it cannot be."""
        factory = import_target(
            self.target, f"instrument factory {self.target!r} cannot be imported"
        )
        if not callable(factory):
            raise TypeError(f"instrument factory {self.target!r} is not callable: {factory!r}")
        return factory

    def __call__(self, *args: Any, **kwargs: Any) -> PassInstrument:
        return self.load()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"LazyInstrument({self.target!r})"


@dataclass(frozen=True)
class InstrumentEntry:
    """A registered instrument: its name, factory, who registered it and a one-line
    description; ``declared`` is the :class:`LazyInstrument` it was registered as, if
    it was (``factory`` is then that declaration until first asked for, the imported
    factory after)."""

    name: str
    factory: InstrumentFactory
    owner: str
    description: str
    declared: LazyInstrument | None = None


_INSTRUMENTS: dict[str, InstrumentEntry] = {}


def register_instrument(
    name: str, factory: InstrumentFactory, *, owner: str = "irpass", description: str = ""
) -> InstrumentEntry:
    """Make ``factory`` available as the instrument ``name``.

    Names are lowercase words joined by ``-`` (also ``_`` or ``.``), e.g.
    ``"op-stats"``. ``description`` defaults to the first line of the
    factory's docstring. Registering a name another owner holds is a
    ``ValueError`` naming both owners; the same factory again is a no-op.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"instrument name {name!r} (from {owner!r}) must be lowercase words joined by '-', "
            "e.g. 'op-stats'"
        )
    if not callable(factory):
        raise TypeError(
            f"instrument {name!r} (from {owner!r}): factory {factory!r} is not callable"
        )
    old = _INSTRUMENTS.get(name)
    if old is not None:
        same = old.factory is factory or (factory is not None and old.declared is factory)
        if same and old.owner == owner:
            return old
        raise ValueError(
            f"instrument {name!r} is already registered by {old.owner!r}; "
            f"{owner!r} cannot register it again"
        )
    if not description:
        description = (getattr(factory, "__doc__", None) or "").strip().split("\n")[0]
    declared = factory if isinstance(factory, LazyInstrument) else None
    entry = InstrumentEntry(name, factory, owner, description, declared)
    _INSTRUMENTS[name] = entry
    return entry


def unregister_instrument(name: str) -> None:
    """Forget instrument ``name`` (the plugin manager's undo when a plugin fails half-way)."""
    _INSTRUMENTS.pop(name, None)


def get_instrument_entry(name: str) -> InstrumentEntry:
    """The registry entry of ``name``; a ``KeyError`` naming close matches if absent."""
    entry = _INSTRUMENTS.get(name)
    if entry is None:
        ensure_plugins()
        entry = _INSTRUMENTS.get(name)
    if entry is None:
        close = difflib.get_close_matches(str(name), list(_INSTRUMENTS), n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        known = ", ".join(sorted(_INSTRUMENTS)) or "none"
        raise KeyError(f"no instrument named {name!r} is registered{hint} (registered: {known})")
    if entry.declared is not None and entry.factory is entry.declared:
        try:
            factory = entry.declared.load()
        except (ImportError, TypeError) as exc:
            raise type(exc)(f"instrument {name!r} (from {entry.owner!r}): {exc}") from exc
        entry = dataclasses.replace(entry, factory=factory)
        _INSTRUMENTS[name] = entry
    return entry


def get_instrument(name: str, *args: Any, **kwargs: Any) -> PassInstrument:
    """A new instrument ``name`` made with ``args`` / ``kwargs``."""
    entry = get_instrument_entry(name)
    try:
        made = entry.factory(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"cannot create instrument {name!r} (from {entry.owner!r}): {exc}") from exc
    if not isinstance(made, PassInstrument):
        raise TypeError(
            f"the factory of instrument {name!r} (from {entry.owner!r}) returned "
            f"{type(made).__name__}, not a PassInstrument"
        )
    return made


def list_instruments() -> list[str]:
    """The names of all registered instruments, sorted."""
    ensure_plugins()
    return sorted(_INSTRUMENTS)


def parse_instrument_spec(text: str) -> tuple[str, tuple[str, ...]]:
    """Split a command-line instrument spec: ``"dump-ir:out"`` -> ``("dump-ir", ("out",))``.

    Everything after the first ``:`` is one argument (so paths may contain
    ``:``); no ``:`` means no arguments.
    """
    name, sep, arg = text.partition(":")
    name = name.strip()
    if not name:
        raise ValueError(f"instrument spec {text!r} has no name (expected NAME or NAME:ARG)")
    return name, ((arg,) if sep else ())
