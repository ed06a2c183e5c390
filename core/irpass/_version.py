"""irpass's version, as ``pyproject.toml`` declares it (``tests/test_startup.py`` checks
that the two agree): ``irpass --version`` reads it here instead of asking
``importlib.metadata``, whose import and search of the installed distributions cost
more than the rest of the command."""

__version__ = "0.1.0"
