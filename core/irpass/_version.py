"""irpass's version, the one source of it: ``pyproject.toml`` takes it from here
(``dynamic = ["version"]``), and ``irpass --version`` reads it here instead of asking
``importlib.metadata``, whose import and search of the installed distributions cost
more than the rest of the command."""

__version__ = "0.1.0"
