"""irpass's pytest plugin: fixtures for pass-pack authors.

Installed with irpass (the ``pytest11`` entry point ``irpass``), so every pytest run in an
environment with irpass has it; a test suite that uses none of its fixtures, its marker or
its option sees no difference (no autouse fixture, nothing printed). ``pytest -p
no:irpass`` switches it off; with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` set, ``-p irpass``
switches it on.

Fixtures:

- ``irpass_plugins``: a function ``irpass_plugins(*plugins, autoload=False, block=(),
  only=None, strict=True)`` that makes the test run against exactly the named plugins
  (module paths or entry-point names), with only the core's registrations besides; the
  registries and the plugin manager are put back after the test. Or mark the test
  ``@pytest.mark.irpass_plugins("my_pack.plugin")`` (same arguments): the set is in
  place when the test function runs, and for any fixture that requests ``irpass_plugins``.
  Broken plugins raise :class:`~irpass.plugins.PluginError` by default (``strict``).
- ``check_semantics``: :func:`irpass.testing.check_semantics` (session-scoped, so it
  also works in hypothesis tests).
- ``assert_ir_matches``: ``assert_ir_matches(mod, "expected/fold.txt")`` compares a
  module with an expected-IR file, a path relative to the test file's directory.
  ``pytest --irpass-update`` writes the files that are missing or differ instead of
  failing, and lists them at the end of the run.
- ``irpass_seeded_generators``: reseeds the test module's numpy generators for the test,
  from the test's name, so its random inputs do not depend on the tests run before it
  (use it for every test with ``usefixtures = ["irpass_seeded_generators"]``;
  ``IRPASS_TEST_SEED=n`` draws other inputs).
- ``irpass_example_model``: parametrized over :data:`irpass.testing.models.MODELS`
  (``mlp``, ``resnet``, ``mobilenet``, ``transformer``); each test gets a fresh module.

**Expected-IR files** hold a module's text form exactly as ``mod.astext()`` writes it,
constants included (big ones base64-encoded in the ``#[metadata]`` section), so the
file parses back. The check parses the file and compares the two modules with
:func:`irpass.ir.structural_equal`: formatting, ``//`` comments and the names of
variables do not count; the program's structure, its types, attributes and every
constant's value do. On a mismatch the ``AssertionError`` says where the first
difference is and shows a unified diff of the file against the module's text. A missing
file (or one that does not parse) fails with a message saying to run ``pytest
--irpass-update``; that writes the module's text, and leaves files that already match
untouched (so hand-added comments survive). Keep the files for small programs: a
network's weights make a big, unreadable file.

**Random programs.** For property tests, draw modules from
:mod:`irpass.testing.strategies` (needs hypothesis) and check them with the
``check_semantics`` fixture::

    from hypothesis import given, settings
    from irpass.testing import strategies as sts

    @settings(max_examples=50, deadline=None)
    @given(mod=sts.modules(max_nodes=16))
    def test_my_pass_keeps_meaning(check_semantics, mod):
        check_semantics(MyPass(), mod)

``sts.modules`` takes flags to switch features off (``ifs=False``, ``nn=False``, ...).
"""

from __future__ import annotations

import difflib
import inspect
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# pytest imports this module at start-up in every run: the rest of irpass is imported
# when a fixture is used, so a suite that uses none gets nothing more than its package
if TYPE_CHECKING:
    from ..ir import IRModule
    from ..plugins import PluginManager, PluginSettings

__all__ = [
    "assert_ir_matches",
    "check_semantics",
    "irpass_example_model",
    "irpass_plugins",
    "irpass_seeded_generators",
]

#: The command-line option that rewrites expected-IR files instead of failing.
UPDATE_OPTION = "--irpass-update"

# the expected-IR files written in this session, for the terminal summary
_WRITTEN = pytest.StashKey[list[Path]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--irpass-update``."""
    group = parser.getgroup("irpass", "irpass pass-pack testing")
    group.addoption(
        UPDATE_OPTION, action="store_true", default=False,
        help="write the expected-IR files of assert_ir_matches that are missing or differ "
             "from the module, instead of failing",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``irpass_plugins`` marker (for ``--strict-markers``)."""
    config.addinivalue_line(
        "markers",
        "irpass_plugins(*plugins, autoload=False, block=(), only=None, strict=True): run the "
        "test against exactly these irpass plugins (module paths or entry-point names)",
    )
    config.stash[_WRITTEN] = []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test marked ``irpass_plugins`` uses the fixture of that name."""
    for item in items:
        names = getattr(item, "fixturenames", None)
        # last: the test's other fixtures are set up as usual, the set is switched
        # just before the test runs (a fixture that needs it requests it)
        if names is not None and "irpass_plugins" not in names \
                and item.get_closest_marker("irpass_plugins") is not None:
            names.append("irpass_plugins")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """List the expected-IR files ``--irpass-update`` wrote (nothing when none)."""
    written = terminalreporter.config.stash.get(_WRITTEN, [])
    if not written:
        return
    terminalreporter.write_sep("-", f"irpass: {len(written)} expected-IR file(s) written")
    for path in written:
        terminalreporter.write_line(f"  {_shown(terminalreporter.config, path)}")


# -- isolated plugin sets ------------------------------------------------------------------


def _names(value: Iterable[str] | None, what: str) -> tuple[str, ...] | None:
    """``value`` as a tuple of plugin names; a bare string or a non-string is a TypeError."""
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(n, str) for n in value):
        raise TypeError(f"irpass_plugins: {what} must be a list of plugin names, got {value!r}")
    return tuple(value)


def _settings(*plugins: str, autoload: bool = False, block: Iterable[str] = (),
              only: Iterable[str] | None = None, strict: bool = True) -> PluginSettings:
    """The :class:`PluginSettings` for one ``irpass_plugins(...)`` call."""
    for name in plugins:
        if not isinstance(name, str):
            raise TypeError("irpass_plugins: plugins are named by module path or entry-point "
                            f"name (a str), got {name!r}; register an object with "
                            "irpass.plugins.register(obj, name=...) inside the test")
    if not isinstance(autoload, bool) or not isinstance(strict, bool):
        raise TypeError(f"irpass_plugins: autoload and strict must be bools, got "
                        f"autoload={autoload!r}, strict={strict!r}")
    from ..plugins import PluginSettings

    return PluginSettings(autoload=autoload, modules=tuple(plugins),
                          block=frozenset(_names(block, "block") or ()),
                          only=_names(only, "only"), strict=strict)


@pytest.fixture
def irpass_plugins(request: pytest.FixtureRequest) -> Iterator[Callable[..., PluginManager]]:
    """Run the test against a plugin set of its own; everything is put back after it.

    The value is a function: ``irpass_plugins(*plugins, autoload=False, block=(),
    only=None, strict=True)`` unloads every plugin, loads exactly ``plugins`` (module
    paths or entry-point names, in that order; plus all installed entry points with
    ``autoload=True``) and returns the new :class:`~irpass.plugins.PluginManager`. Only
    the core's registrations stay. ``block``, ``only`` and ``strict`` are those of
    :class:`~irpass.plugins.PluginSettings`; ``strict`` defaults to on here, so a broken
    plugin is a :class:`~irpass.plugins.PluginError` rather than a warning. Calling it
    again replaces the set. Whatever the test registers besides (say with
    :func:`irpass.plugins.register`) is removed after it as well.

    A test marked ``@pytest.mark.irpass_plugins(...)`` (the same arguments) starts with
    that set already loaded.
    """
    from .plugins import RegistrySnapshot, isolated_plugins

    with ExitStack() as stack:
        # first in, so last out: the state before the test, whatever the test registered
        stack.callback(RegistrySnapshot.take().restore)
        current = stack.enter_context(ExitStack())

        def load(*plugins: str, autoload: bool = False, block: Iterable[str] = (),
                 only: Iterable[str] | None = None, strict: bool = True) -> PluginManager:
            settings = _settings(*plugins, autoload=autoload, block=block, only=only,
                                 strict=strict)
            current.close()  # back to the state before the test, then the new set
            return current.enter_context(isolated_plugins(settings))

        marker = request.node.get_closest_marker("irpass_plugins")
        if marker is not None:
            try:
                inspect.signature(load).bind(*marker.args, **marker.kwargs)
                _settings(*marker.args, **marker.kwargs)
            except TypeError as exc:
                raise TypeError(f"@pytest.mark.irpass_plugins on {request.node.nodeid}: "
                                f"{exc}") from None
            load(*marker.args, **marker.kwargs)
        yield load


# -- check_semantics -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def check_semantics() -> Callable[..., IRModule]:
    """:func:`irpass.testing.check_semantics`: run a pass (a list of passes, a pipeline
    string) on a module and check, on random inputs, that the result computes the same;
    returns the result. Session-scoped, so hypothesis's ``@given`` tests can use it."""
    from .semantics import check_semantics as check

    return check


# -- random inputs -------------------------------------------------------------------------


@pytest.fixture
def irpass_seeded_generators(request: pytest.FixtureRequest,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Every numpy ``Generator`` bound at the top level of the test's module (``RNG =
    np.random.default_rng(7)``) is rebound, for this test, to one seeded from its own seed
    and the test's name (:func:`irpass.testing.inputs.generators_for_test`), so what the
    test draws does not depend on which tests ran before it in its pytest-xdist worker.
    For every test of a suite: ``usefixtures = ["irpass_seeded_generators"]`` in the pytest
    configuration (irpass's own suites have it)."""
    from .inputs import generators_for_test

    module = request.module
    if module is None:
        return
    name = request.node.nodeid.partition("::")[2]  # not the file's path: any rootdir
    for attr, rng in generators_for_test(module, name).items():
        monkeypatch.setattr(module, attr, rng)


# -- example networks ----------------------------------------------------------------------


def _parametrizes(metafunc: pytest.Metafunc, name: str) -> bool:
    """Whether the test's own ``@pytest.mark.parametrize`` marks name ``name``."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if name in names:
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize the tests that use ``irpass_example_model`` over the example networks
    (unless the test picks them itself)."""
    name = "irpass_example_model"
    if name in metafunc.fixturenames and not _parametrizes(metafunc, name):
        from .models import MODELS

        metafunc.parametrize(name, sorted(MODELS), indirect=True)


@pytest.fixture
def irpass_example_model(request: pytest.FixtureRequest) -> IRModule:
    """Each example network of :data:`irpass.testing.models.MODELS` in turn (the test id
    names it), built afresh for every test with its default sizes and seeded weights.

    A test picks some with ``@pytest.mark.parametrize("irpass_example_model",
    ["resnet"], indirect=True)``.
    """
    from .models import MODELS

    return MODELS[request.param]()


# -- expected-IR files ---------------------------------------------------------------------


def _shown(config: pytest.Config, path: Path) -> str:
    """``path`` relative to the rootdir when it is under it, else as given."""
    try:
        return str(path.relative_to(config.rootpath))
    except ValueError:
        return str(path)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def _text_of(mod: IRModule) -> str:
    text = mod.astext()
    return text if text.endswith("\n") else text + "\n"


def _match_file(mod: IRModule, path: Path, shown: str, update: bool) -> bool:
    """Check ``mod`` against the expected-IR file ``path``; True if it wrote the file."""
    __tracebackhide__ = True
    from ..errors import ParseError
    from ..ir import IRModule, assert_structural_equal, parse, structural_equal

    if not isinstance(mod, IRModule):
        raise TypeError(f"assert_ir_matches: expected an IRModule, got {type(mod).__name__}")
    actual = _text_of(mod)
    try:
        expected_text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if update:
            _write_checked(mod, path, shown, actual)
            return True
        raise AssertionError(
            f"expected-IR file {shown} does not exist; run pytest with {UPDATE_OPTION} to "
            "write it from the module") from None
    try:
        expected = parse(expected_text, filename=shown)
    except ParseError as exc:
        if update:
            _write_checked(mod, path, shown, actual)
            return True
        raise AssertionError(
            f"expected-IR file {shown} does not parse: {exc}\n"
            f"run pytest with {UPDATE_OPTION} to rewrite it from the module") from None
    if structural_equal(mod, expected):
        return False
    if update:
        _write_checked(mod, path, shown, actual)
        return True
    try:
        assert_structural_equal(mod, expected)
        where = ""
    except AssertionError as exc:
        # structural_equal's words: the module was its lhs, the file's module its rhs
        first = str(exc)
        for word, side in (("lhs has", "the module has"), ("rhs has", "the file has"),
                           ("with rhs", "with the file's"), ("with lhs", "with the module's")):
            first = first.replace(word, side)
        where = f"\nfirst difference: {first}"
    diff = "".join(difflib.unified_diff(
        expected_text.splitlines(keepends=True), actual.splitlines(keepends=True),
        fromfile=shown, tofile="module"))
    raise AssertionError(
        f"the module does not match expected-IR file {shown}{where}\n{diff}"
        f"run pytest with {UPDATE_OPTION} to rewrite the file if the change is intended")


def _write_checked(mod: IRModule, path: Path, shown: str, text: str) -> None:
    """Write ``text``, the module's text, after checking that it reads back as ``mod``
    (otherwise the file could never match)."""
    __tracebackhide__ = True
    from ..errors import ParseError
    from ..ir import assert_structural_equal, parse

    try:
        back = parse(text, filename=shown)
    except ParseError as exc:
        raise AssertionError(f"cannot write expected-IR file {shown}: the module's text does "
                             f"not parse back ({exc})") from None
    try:
        assert_structural_equal(mod, back)
    except AssertionError as exc:
        raise AssertionError(f"cannot write expected-IR file {shown}: the module's text reads "
                             f"back as another module ({exc})") from None
    _write(path, text)


@pytest.fixture
def assert_ir_matches(request: pytest.FixtureRequest) -> Callable[[IRModule, str], None]:
    """``assert_ir_matches(mod, "expected/fold.txt")``: fail unless ``mod`` is
    structurally equal to the module in that file (a path relative to the test file's
    directory).

    The file holds the module's text form (``mod.astext()``, constants included) and is
    parsed and compared with :func:`irpass.ir.structural_equal`, so formatting, comments
    and variable names do not count. A mismatch fails with the first difference and a
    unified diff; a missing or unreadable file fails with a message to run
    ``pytest --irpass-update``, which writes the files that are missing or differ (the
    test then passes) and lists them at the end of the run.
    """
    config = request.config
    base = request.path.parent
    update = bool(config.getoption(UPDATE_OPTION))

    def check(mod: IRModule, path: str | os.PathLike[str]) -> None:
        __tracebackhide__ = True
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"assert_ir_matches: path must be a str or a path, got {path!r}")
        full = base / path
        if _match_file(mod, full, _shown(config, full), update):
            config.stash.setdefault(_WRITTEN, []).append(full)

    return check
