"""The data the plugin manager works with: settings, records, contributions, op specs, errors."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import IRPassError
from ..ir.op import AttrField, Kernel, OpPattern, TypeRelation

__all__ = [
    "Contribution",
    "OpSpec",
    "PluginError",
    "PluginRecord",
    "PluginSettings",
    "PluginWarning",
    "env_autoload",
    "env_modules",
]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


class PluginError(IRPassError):
    """A plugin could not be loaded or used, and plugins are strict (``--strict-plugins``);
    or, strict or not, a plugin's failure left the default pipeline empty."""


class PluginWarning(UserWarning):
    """A plugin was skipped: its name, distribution and the cause are in the message."""


@dataclass(frozen=True)
class PluginSettings:
    """Which plugins to load.

    - ``autoload``: load the plugins of the ``irpass`` entry-point group
      (``IRPASS_DISABLE_PLUGIN_AUTOLOAD=1`` turns it off);
    - ``modules``: more plugins to load, each a module path or the name of an
      entry point (``-p mod``, ``IRPASS_PLUGINS=mod1,mod2``, ``[plugins] modules``);
      they load after the entry points, also when autoload is off;
    - ``block``: names never imported (``-p no:NAME``, ``[plugins] disable``);
    - ``only``: when set, the only entry-point plugins loaded (``[plugins] only``);
    - ``strict``: a broken plugin is a :class:`PluginError` instead of a warning.
    """

    autoload: bool = True
    modules: tuple[str, ...] = ()
    block: frozenset[str] = frozenset()
    only: tuple[str, ...] | None = None
    strict: bool = False

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> PluginSettings:
        """The settings the environment asks for (``IRPASS_PLUGINS``,
        ``IRPASS_DISABLE_PLUGIN_AUTOLOAD``); everything else at its default.
        A value irpass cannot read is a ``ValueError`` naming the variable."""
        env = os.environ if environ is None else environ
        try:
            modules = env_modules(env.get("IRPASS_PLUGINS", ""))
        except ValueError as exc:
            raise ValueError(f"IRPASS_PLUGINS: {exc}") from None
        try:
            autoload = env_autoload(env.get("IRPASS_DISABLE_PLUGIN_AUTOLOAD", ""))
        except ValueError as exc:
            raise ValueError(f"IRPASS_DISABLE_PLUGIN_AUTOLOAD: {exc}") from None
        return cls(autoload=autoload, modules=modules)


def env_modules(value: str) -> tuple[str, ...]:
    """The plugin modules an ``IRPASS_PLUGINS`` value names (comma-separated).

    A ``no:NAME`` entry is a ``ValueError``: the variable only adds plugins.
    """
    names = tuple(m.strip() for m in value.split(",") if m.strip())
    for name in names:
        if name.startswith("no:"):
            raise ValueError(
                f"{name!r}: IRPASS_PLUGINS lists modules to load; block a plugin with "
                "-p no:NAME or [plugins] disable"
            )
    return names


def env_autoload(value: str) -> bool:
    """Whether autoload stays on for an ``IRPASS_DISABLE_PLUGIN_AUTOLOAD`` value
    (``1/true/yes/on`` turn it off, ``0/false/no/off`` or nothing leave it on)."""
    flag = value.strip().lower()
    if flag in _TRUE:
        return False
    if flag in _FALSE:
        return True
    raise ValueError(f"expected 1/true/yes or 0/false/no, got {value!r}")


@dataclass(frozen=True)
class Contribution:
    """One thing a plugin added: ``kind`` (``"pass"``, ``"instrument"``, ``"op"``,
    ``"config option"``, ``"format"``, ``"pipeline"``) and its name."""

    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class PluginRecord:
    """What irpass knows about one plugin: where it came from, whether it loaded, what it added.

    ``status`` is ``"loaded"``, ``"blocked"`` (never imported), ``"failed"``
    (skipped; ``reason`` says why) or ``"core"`` (irpass itself). ``source``
    says how it was found: ``"entry point"``, ``"-p"`` (``-p``,
    ``IRPASS_PLUGINS``, ``[plugins] modules``), ``"code"``
    (:func:`irpass.plugins.register`) or ``"core"``.
    """

    name: str
    status: str
    source: str
    dist: str | None = None
    version: str | None = None
    module: str | None = None
    reason: str = ""
    contributions: tuple[Contribution, ...] = ()

    @property
    def origin(self) -> str:
        """``"dist version"`` or a description of where the plugin came from."""
        if self.dist:
            return f"{self.dist} {self.version or ''}".strip()
        if self.source == "code":
            return "registered in code"
        return f"module {self.module}" if self.module else "unknown distribution"


@dataclass(frozen=True)
class OpSpec:
    """An op a plugin adds (the ``irpass_register_ops`` hook): the arguments of
    :func:`irpass.ir.register_op`, which the plugin manager calls with the
    plugin's name as ``owner``."""

    name: str
    num_inputs: int
    type_rel: TypeRelation
    kernel: Kernel
    pattern: OpPattern
    attrs: Sequence[AttrField] = ()
    stateful: bool = False
    doc: str = ""


# The instrument points a plugin may implement as hooks, with the PassInstrument
# method each one stands for.
INSTRUMENT_HOOKS: dict[str, str] = {
    "irpass_enter_pass_ctx": "enter_pass_ctx",
    "irpass_exit_pass_ctx": "exit_pass_ctx",
    "irpass_should_run": "should_run",
    "irpass_run_before_pass": "run_before_pass",
    "irpass_run_after_pass": "run_after_pass",
}

