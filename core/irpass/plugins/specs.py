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
]

# the same words irpass.settings accepts for the variable
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


class PluginError(IRPassError):
    """A plugin could not be loaded or used, and plugins are strict (``--strict-plugins``)."""


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
        modules = tuple(m.strip() for m in env.get("IRPASS_PLUGINS", "").split(",") if m.strip())
        for m in modules:
            if m.startswith("no:"):
                raise ValueError(
                    f"IRPASS_PLUGINS={env['IRPASS_PLUGINS']!r}: {m!r}: IRPASS_PLUGINS lists "
                    "modules to load; block a plugin with -p no:NAME or [plugins] disable"
                )
        flag = env.get("IRPASS_DISABLE_PLUGIN_AUTOLOAD", "").strip().lower()
        if flag not in _TRUE and flag not in _FALSE:
            raise ValueError(
                f"IRPASS_DISABLE_PLUGIN_AUTOLOAD={flag!r}: expected 1/true/yes/on or "
                "0/false/no/off"
            )
        return cls(autoload=flag not in _TRUE, modules=modules)


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

