"""The config file and the effective settings of the ``irpass`` command.

:func:`load_settings` finds the config file (``--config``, ``IRPASS_CONFIG``,
``irpass.toml`` in the working directory, or the nearest ``pyproject.toml``
with ``[tool.irpass]``), checks its structure and types, and applies the
environment and the command line on top (CLI > environment > file >
defaults). The :class:`Settings` it returns knows where every value came
from (:meth:`Settings.describe`), checks names once plugins are loaded
(:meth:`Settings.validate`) and builds the
:class:`~irpass.transform.PassContext` and the pipeline.

Modules: :mod:`.files` (finding and reading TOML), :mod:`.schema` (the keys
and the structural check, with a full example file), :mod:`.resolve`
(precedence), :mod:`.model` (:class:`Settings`), :mod:`.validate` (checks
against the registries), :mod:`.build` (PassContext and pipeline),
:mod:`.errors` (:class:`ConfigError`).
"""

from .errors import ConfigError, Origin
from .files import ConfigFile, find_config_file
from .model import InstrumentSpec, Settings
from .resolve import CLI_FLAGS, load_settings

__all__ = [
    "CLI_FLAGS",
    "ConfigError",
    "ConfigFile",
    "InstrumentSpec",
    "Origin",
    "Settings",
    "find_config_file",
    "load_settings",
]
