"""The plugin manager: discovery, settings, records, lazy loading, broken plugins, clashes.

Plugins here are in-memory objects (``irpass.plugins.register``) or modules
written into a temporary directory and announced as fake entry points (the
manager's ``entry_points`` is monkeypatched). A fake entry point that should
report a distribution comes from a ``*.dist-info`` directory read with
``importlib.metadata.PathDistribution``, so ``ep.dist`` is real. Every plugin
module can append to ``events.log`` (a module of its own per test) to show when
it was imported and which hooks ran.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import sys
import textwrap
import types
import uuid
import warnings

import irpass
import irpass.plugins
import pytest
from irpass import formats
from irpass.instrument import PassInstrument, list_instruments
from irpass.instrument import registry as instruments
from irpass.ir import OpPattern
from irpass.ir import op as ops
from irpass.plugins import (
    Contribution,
    OpSpec,
    PluginError,
    PluginManager,
    PluginSettings,
    PluginWarning,
    hookimpl,
)
from irpass.plugins import manager as manager_module
from irpass.testing.plugins import RegistrySnapshot
from irpass.transform import (
    ConfigOption,
    PassContext,
    PipelineInsertion,
    Sequential,
    get_pass,
    get_pass_entry,
    list_config_options,
    list_passes,
    module_pass,
    pipeline,
)
from irpass.transform import config as options
from irpass.transform import registry as passes

# the plugins shipped with irpass (other packs installed in the venv are left out)
REAL_EPS = sorted(
    (ep for ep in metadata.entry_points(group="irpass") if ep.name in ("std", "instruments")),
    key=lambda ep: ep.name,
)
CORE_PASSES = ["Identity", "PrintIR"]


# -- helpers ---------------------------------------------------------------------------------


class FakeSite:
    """A directory on ``sys.path`` for plugin modules, and the entry points the manager sees.

    Module names get a per-test tag so that tests never share a cached import;
    ``EVENTS`` in a module's source is replaced by the name of this test's
    events module, whose ``log`` list the plugins append to.
    """

    def __init__(self, root, monkeypatch):
        self.root = root / "site"
        self.dists = root / "dists"  # not on sys.path: real discovery never sees them
        self.root.mkdir()
        self.dists.mkdir()
        self.tag = uuid.uuid4().hex[:8]
        self.entry_points: list[metadata.EntryPoint] = []
        self.created: list[str] = []
        monkeypatch.syspath_prepend(str(self.root))
        monkeypatch.setattr(manager_module, "entry_points", lambda: list(self.entry_points))
        self.events_name = self.module("events", "log = []\n")
        self.events = importlib.import_module(self.events_name)

    @property
    def log(self) -> list:
        return self.events.log

    def module(self, stem: str, source: str) -> str:
        name = f"{stem}_{self.tag}"
        text = textwrap.dedent(source).replace("EVENTS", getattr(self, "events_name", ""))
        (self.root / f"{name}.py").write_text(text)
        importlib.invalidate_caches()
        self.created.append(name)
        return name

    def entry_point(
        self, name: str, module: str, dist: str | None = None, version: str = "1.0"
    ) -> metadata.EntryPoint:
        if dist is None:
            ep = metadata.EntryPoint(name, module, "irpass")
        else:
            info = self.dists / f"{dist}-{version}.dist-info"
            info.mkdir()
            (info / "METADATA").write_text(
                f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
            )
            (info / "entry_points.txt").write_text(f"[irpass]\n{name} = {module}\n")
            (ep,) = metadata.PathDistribution(info).entry_points.select(group="irpass")
            assert ep.dist is not None
        self.entry_points.append(ep)
        return ep

    def plugin(self, name: str, source: str, dist: str | None = None, version: str = "1.0") -> str:
        """A module made from ``source`` announced as entry point ``name``; returns the module."""
        module = self.module(name, source)
        self.entry_point(name, module, dist, version)
        return module

    def cleanup(self) -> None:
        for name in self.created:
            sys.modules.pop(name, None)


@pytest.fixture
def site(tmp_path, monkeypatch, fresh_plugins):
    """No plugin loaded, core registries only, and a place to put fake plugins."""
    s = FakeSite(tmp_path, monkeypatch)
    yield s
    s.cleanup()


def plugin_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]


def load_recording(settings: PluginSettings | None = None):
    """Load the plugins; returns the manager and the PluginWarning messages."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manager = irpass.plugins.load(settings)
    return manager, plugin_warnings(caught)


def register_recording(obj, name=None):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record = irpass.plugins.register(obj, name)
    return record, plugin_warnings(caught)


def owned_by(owner: str) -> list[tuple[str, str]]:
    """Everything in any registry that ``owner`` registered."""
    found = [("pass", n) for n, e in passes._PASSES.items() if e.owner == owner]
    found += [("config option", k) for k, o in options._OPTIONS.items() if o.owner == owner]
    found += [("op", n) for n, o in ops._REGISTRY.items() if o.owner == owner]
    found += [("instrument", n) for n, e in instruments._INSTRUMENTS.items() if e.owner == owner]
    found += [("format", s) for s, e in formats._BY_SUFFIX.items() if e.owner == owner]
    found += [("pipeline", i.pass_name) for o, i in pipeline._INSERTIONS if o == owner]
    return sorted(found)


def registries() -> tuple:
    """The registries' contents, comparable with ``==``."""
    snap = RegistrySnapshot.take()
    return (
        snap.passes,
        snap.options,
        snap.ops,
        snap.instruments,
        snap.formats,
        sorted(snap.insertions, key=repr),
    )


def make_mod():
    x = irpass.var("x", shape=(4,))
    return irpass.IRModule.from_expr(irpass.Function([x], irpass.op.add(x, x)))


def same_type(types_, attrs):
    return types_[0]


def first_arg(args, attrs):
    return args[0]


class Inst(PassInstrument):
    """An instrument that does nothing."""


PASS_SOURCE = """
from irpass.transform import module_pass

@module_pass(opt_level=0, name="{name}")
def {name}(mod, ctx):
    return mod
"""


def pass_plugin(pass_name: str, prelude: str = "") -> str:
    return (
        textwrap.dedent(prelude)
        + PASS_SOURCE.format(name=pass_name)
        + textwrap.dedent(f"""
        from irpass.plugins import hookimpl

        @hookimpl
        def irpass_register_passes():
            return [{pass_name}]
        """)
    )


# -- records ---------------------------------------------------------------------------------


def test_core_record_lists_the_core_passes_and_the_text_format():
    records = irpass.plugins.get_plugin_manager().records()
    core = records[0]
    assert (core.name, core.status, core.source, core.dist) == ("irpass", "core", "core", "irpass")
    assert core.version == metadata.version("irpass")
    assert core.reason == ""
    made = set(core.contributions)
    assert {Contribution("pass", "PrintIR"), Contribution("pass", "Identity")} <= made
    assert Contribution("format", "text (.txt, .ir)") in made
    # the core contributes no plugin's pass
    assert Contribution("pass", "InferType") not in made
    assert irpass.plugins.get_plugin_manager().record("irpass") == core


def test_shipped_plugins_come_from_the_irpass_distribution_with_their_contributions():
    manager = irpass.plugins.get_plugin_manager()
    version = metadata.version("irpass")
    std = manager.record("std")
    assert (std.status, std.source, std.dist, std.version) == (
        "loaded",
        "entry point",
        "irpass",
        version,
    )
    assert std.module == "irpass_std.plugin"
    assert std.origin == f"irpass {version}"
    assert Contribution("pass", "InferType") in std.contributions
    assert "InferType (phase start)" in [c.name for c in std.contributions if c.kind == "pipeline"]
    inst = manager.record("instruments")
    assert (inst.status, inst.dist, inst.version) == ("loaded", "irpass", version)
    assert {c for c in inst.contributions if c.kind == "instrument"} == {
        Contribution("instrument", n)
        for n in (
            "timing",
            "print-before",
            "print-after",
            "print-ir",
            "dump-ir",
            "print-changed",
            "verify-each",
            "check-each",
            "report",
        )
    }
    assert get_pass_entry("InferType").owner == "std"
    assert instruments.get_instrument_entry("timing").owner == "instruments"


def test_records_are_sorted_by_name_after_the_core(site):
    for name in ("zeta", "alpha", "mid"):
        site.plugin(name, "")
    manager, warned = load_recording(PluginSettings())
    assert warned == []
    assert [r.name for r in manager.records()] == ["irpass", "alpha", "mid", "zeta"]
    assert all(r.status == "loaded" and r.contributions == () for r in manager.records()[1:])


def test_record_of_an_unknown_plugin_suggests_close_names():
    with pytest.raises(KeyError, match="did you mean std"):
        irpass.plugins.get_plugin_manager().record("sdt")


def test_entry_point_record_names_its_distribution_and_version(site):
    module = site.plugin("packed", pass_plugin("PackedPass"), dist="fake-pack", version="2.5")
    manager, warned = load_recording(PluginSettings())
    assert warned == []
    rec = manager.record("packed")
    assert (rec.dist, rec.version, rec.module, rec.source) == (
        "fake-pack",
        "2.5",
        module,
        "entry point",
    )
    assert rec.origin == "fake-pack 2.5"
    assert rec.contributions == (Contribution("pass", "PackedPass"),)
    assert get_pass_entry("PackedPass").owner == "packed"


def test_every_kind_of_contribution_is_listed_under_its_plugin(fresh_plugins):
    irpass.plugins.load(PluginSettings(autoload=False))
    record, warned = register_recording(FullPlugin(), "full")
    assert warned == []
    assert record.status == "loaded" and record.source == "code"
    kinds = {}
    for c in record.contributions:
        kinds.setdefault(c.kind, []).append(c.name)
    assert kinds["config option"] == ["full.level"]
    assert kinds["op"] == ["full.op"]
    assert kinds["pass"] == ["FullPass"]
    assert sorted(kinds["instrument"]) == ["full (hooks)", "full-inst"]
    assert len(kinds["format"]) == 1 and kinds["format"][0].startswith("full")
    assert ".full" in kinds["format"][0]
    assert len(kinds["pipeline"]) == 1 and kinds["pipeline"][0].startswith("FullPass")
    assert set(kinds) == {"config option", "op", "pass", "instrument", "format", "pipeline"}
    assert irpass.plugins.get_plugin_manager().record("full") == record


FullPass = module_pass(lambda mod, ctx: mod, opt_level=0, name="FullPass")


def _full_load(path, **options):
    return make_mod()


class FullPlugin:
    """A plugin using every registration hook and one instrument hook."""

    def __init__(self, prefix="full"):
        self.prefix = prefix

    @hookimpl
    def irpass_register_config_options(self):
        return [ConfigOption(f"{self.prefix}.level", int, 0, "a level")]

    @hookimpl
    def irpass_register_ops(self):
        return [OpSpec(f"{self.prefix}.op", 1, same_type, first_arg, OpPattern.ELEMWISE)]

    @hookimpl
    def irpass_register_formats(self):
        return [formats.FileFormat(self.prefix, (f".{self.prefix}",), load=_full_load)]

    @hookimpl
    def irpass_register_passes(self):
        return [FullPass]

    @hookimpl
    def irpass_register_instruments(self):
        return {f"{self.prefix}-inst": Inst}

    @hookimpl
    def irpass_pipeline_passes(self):
        return [PipelineInsertion("FullPass", phase="end")]

    @hookimpl
    def irpass_run_after_pass(self, info):
        pass


# -- settings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "autoload", "modules"),
    [
        ({}, True, ()),
        ({"IRPASS_DISABLE_PLUGIN_AUTOLOAD": "1"}, False, ()),
        ({"IRPASS_DISABLE_PLUGIN_AUTOLOAD": "true"}, False, ()),
        ({"IRPASS_DISABLE_PLUGIN_AUTOLOAD": " Yes "}, False, ()),
        ({"IRPASS_DISABLE_PLUGIN_AUTOLOAD": "0"}, True, ()),
        ({"IRPASS_DISABLE_PLUGIN_AUTOLOAD": ""}, True, ()),
        ({"IRPASS_PLUGINS": "a"}, True, ("a",)),
        ({"IRPASS_PLUGINS": " a, b.c ,,d ,"}, True, ("a", "b.c", "d")),
        ({"IRPASS_PLUGINS": ""}, True, ()),
    ],
)
def test_settings_from_environ(environ, autoload, modules):
    settings = PluginSettings.from_environ(environ)
    assert settings == PluginSettings(autoload=autoload, modules=modules)


def test_settings_from_environ_reads_os_environ_by_default(monkeypatch):
    monkeypatch.setenv("IRPASS_PLUGINS", "x.y")
    monkeypatch.setenv("IRPASS_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert PluginSettings.from_environ() == PluginSettings(autoload=False, modules=("x.y",))


def test_autoload_off_imports_no_entry_point(site):
    site.plugin(
        "auto",
        """
        import EVENTS as events
        events.log.append("imported")
        """,
    )
    settings = PluginSettings.from_environ({"IRPASS_DISABLE_PLUGIN_AUTOLOAD": "1"})
    manager, warned = load_recording(settings)
    assert warned == []
    assert site.log == []
    assert f"auto_{site.tag}" not in sys.modules
    assert [r.name for r in manager.records()] == ["irpass"]
    assert list_passes() == CORE_PASSES


def test_autoload_loads_every_entry_point(site):
    site.plugin(
        "auto",
        """
        import EVENTS as events
        events.log.append("imported")
        """,
    )
    manager, warned = load_recording(PluginSettings())
    assert warned == [] and site.log == ["imported"]
    assert manager.record("auto").status == "loaded"


def test_dash_p_module_is_loaded_and_owns_its_passes(site):
    module = site.module("dashp", pass_plugin("DashPPass"))
    manager, warned = load_recording(PluginSettings(autoload=False, modules=(module,)))
    assert warned == []
    rec = manager.record(module)
    assert (rec.status, rec.source, rec.module) == ("loaded", "-p", module)
    assert rec.dist is None and rec.origin == f"module {module}"
    assert list_passes() == sorted(CORE_PASSES + ["DashPPass"])
    assert get_pass_entry("DashPPass").owner == module


def test_dash_p_naming_an_entry_point_loads_it_while_autoload_is_off(site):
    site.plugin("wanted", pass_plugin("WantedPass"))
    site.plugin("unwanted", pass_plugin("UnwantedPass"))
    manager, warned = load_recording(PluginSettings(autoload=False, modules=("wanted",)))
    assert warned == []
    assert manager.record("wanted").status == "loaded"
    assert manager.record("wanted").source == "entry point"
    assert "WantedPass" in list_passes() and "UnwantedPass" not in list_passes()
    assert f"unwanted_{site.tag}" not in sys.modules
    assert "unwanted" not in [r.name for r in manager.records()]


def test_dash_p_naming_an_autoloaded_entry_point_loads_it_once(site):
    site.plugin(
        "twice",
        """
        import EVENTS as events
        from irpass.plugins import hookimpl

        @hookimpl
        def irpass_register_passes():
            events.log.append("hook")
            return []
        """,
    )
    manager, warned = load_recording(PluginSettings(modules=("twice",)))
    assert warned == [] and site.log == ["hook"]
    assert manager.record("twice").status == "loaded"


BOMB = """
import EVENTS as events
events.log.append("imported")
raise RuntimeError("this plugin must never be imported")
"""


def test_blocking_an_entry_point_prevents_its_import(site):
    module = site.plugin("bomb", BOMB)
    manager, warned = load_recording(PluginSettings(block=frozenset({"bomb"})))
    assert warned == []
    assert site.log == [] and module not in sys.modules
    rec = manager.record("bomb")
    assert rec.status == "blocked" and rec.reason and rec.contributions == ()


def test_blocking_wins_over_dash_p_of_a_module(site):
    module = site.module("bombmod", BOMB)
    settings = PluginSettings(modules=(module,), block=frozenset({module}))
    manager, warned = load_recording(settings)
    assert warned == [] and site.log == [] and module not in sys.modules
    assert manager.record(module).status == "blocked"


@pytest.mark.parametrize(
    "autoload",
    [
        False,
        True,
    ],
)
def test_blocking_wins_over_dash_p_of_an_entry_point(site, autoload):
    module = site.plugin("bomb", BOMB)
    settings = PluginSettings(autoload=autoload, modules=("bomb",), block=frozenset({"bomb"}))
    manager, warned = load_recording(settings)
    assert site.log == [] and module not in sys.modules
    assert warned == []
    assert manager.record("bomb").status == "blocked"


def test_only_is_an_allow_list_of_entry_points(site):
    site.plugin("kept", pass_plugin("KeptPass"))
    left = site.plugin("left", BOMB)
    manager, warned = load_recording(PluginSettings(only=("kept",)))
    assert warned == [] and site.log == [] and left not in sys.modules
    assert manager.record("kept").status == "loaded"
    rec = manager.record("left")
    assert rec.status == "blocked" and "only" in rec.reason
    assert list_passes() == sorted(CORE_PASSES + ["KeptPass"])


def test_only_with_the_real_plugins(site):
    site.entry_points[:] = REAL_EPS
    manager, warned = load_recording(PluginSettings(only=("std",)))
    assert warned == []
    assert "InferType" in list_passes()
    assert list_instruments() == []
    assert manager.record("instruments").status == "blocked"


def _pipeline_names(opt_level=2):
    return [p.info.name for p in irpass.transform.default_pipeline(opt_level).passes]


def test_blocking_std_removes_its_passes_and_its_pipeline_insertion(site):
    site.entry_points[:] = REAL_EPS
    manager, warned = load_recording(PluginSettings(block=frozenset({"std"})))
    assert warned == []
    assert manager.record("std").status == "blocked"
    assert "InferType" not in list_passes()
    assert [i.pass_name for _, i in pipeline.list_pipeline_insertions()] == []
    assert "InferType" not in _pipeline_names()
    with pytest.raises(AttributeError, match="InferType"):
        irpass.transform.InferType  # noqa: B018
    # the instruments plugin is unaffected
    assert "timing" in list_instruments()


def test_unblocked_std_puts_infer_type_first_in_the_pipeline(site):
    site.entry_points[:] = REAL_EPS
    load_recording(PluginSettings())
    assert ("std", "InferType", "start") in [
        (owner, ins.pass_name, ins.phase) for owner, ins in pipeline.list_pipeline_insertions()
    ]
    assert _pipeline_names()[0] == "InferType"


def test_core_works_with_zero_plugins(site):
    site.entry_points[:] = REAL_EPS
    manager, warned = load_recording(PluginSettings(autoload=False))
    assert warned == []
    assert [r.name for r in manager.records()] == ["irpass"]
    assert list_passes() == CORE_PASSES
    assert list_instruments() == []
    assert [f.name for f, _ in formats.list_formats()] == ["text"]
    mod = make_mod()
    seq = Sequential([get_pass("Identity"), irpass.transform.Identity()], name="core_only")
    with PassContext(opt_level=3):
        out = seq(mod)
        assert irpass.transform.default_pipeline(3)(mod) is mod
    irpass.assert_structural_equal(out, mod)
    assert _pipeline_names() == []


def test_plugin_manager_used_directly(site):
    module = site.module("direct", pass_plugin("DirectPass"))
    manager = PluginManager(PluginSettings(autoload=False, modules=(module,)))
    manager.load()
    assert manager.record(module).status == "loaded"
    assert passes._PASSES["DirectPass"].owner == module
    assert PluginManager().settings == PluginSettings()


# -- load() once -----------------------------------------------------------------------------


def test_load_twice_with_the_same_settings_returns_the_same_manager(fresh_plugins):
    settings = PluginSettings(autoload=False)
    first = irpass.plugins.load(settings)
    assert irpass.plugins.load(PluginSettings(autoload=False)) is first
    assert irpass.plugins.load() is first
    assert irpass.plugins.get_plugin_manager() is first
    assert first.settings == settings


def test_load_with_other_settings_after_loading_is_an_error(fresh_plugins):
    first = irpass.plugins.load(PluginSettings(autoload=False))
    with pytest.raises(RuntimeError, match="already loaded"):
        irpass.plugins.load(PluginSettings(autoload=False, strict=True))
    assert irpass.plugins.get_plugin_manager() is first


def test_first_use_loads_with_the_environment_settings(site, monkeypatch):
    module = site.module("envmod", pass_plugin("EnvPass"))
    site.plugin("auto", pass_plugin("AutoPass"))
    monkeypatch.setenv("IRPASS_PLUGINS", module)
    monkeypatch.setenv("IRPASS_DISABLE_PLUGIN_AUTOLOAD", "yes")
    assert list_passes() == sorted(CORE_PASSES + ["EnvPass"])
    manager = irpass.plugins.get_plugin_manager()
    assert manager.settings == PluginSettings(autoload=False, modules=(module,))


# -- lazy loading ----------------------------------------------------------------------------

COUNTED = """
import EVENTS as events
events.log.append("import")

import irpass
from irpass.formats import FileFormat
from irpass.instrument import PassInstrument
from irpass.ir import OpPattern
from irpass.plugins import OpSpec, hookimpl
from irpass.transform import ConfigOption, module_pass


@module_pass(opt_level=0, name="CountedPass")
def CountedPass(mod, ctx):
    return mod


class CountedInstrument(PassInstrument):
    pass


def _load(path, **options):
    x = irpass.var("x", shape=(2,))
    return irpass.IRModule.from_expr(irpass.Function([x], irpass.op.add(x, x)))


@hookimpl
def irpass_register_config_options():
    return [ConfigOption("counted.level", int, 0, "a level")]


@hookimpl
def irpass_register_ops():
    return [OpSpec("counted.op", 1, lambda t, a: t[0], lambda v, a: v[0], OpPattern.ELEMWISE)]


@hookimpl
def irpass_register_formats():
    return [FileFormat("counted", (".counted",), load=_load)]


@hookimpl
def irpass_register_passes():
    events.log.append("register_passes")
    return [CountedPass]


@hookimpl
def irpass_register_instruments():
    return {"counted-inst": CountedInstrument}
"""

TEXT_WITH_PLUGIN_OP = """#[version = "irpass 0.1"]
def @main(%x: Tensor[(4,), float32]) {
  counted.op(%x)
}
"""


def _trigger_attribute(tmp_path):
    assert irpass.transform.CountedPass().info.name == "CountedPass"


def _trigger_get_pass(tmp_path):
    assert get_pass("CountedPass").info.name == "CountedPass"


def _trigger_list_passes(tmp_path):
    assert "CountedPass" in list_passes()


def _trigger_list_instruments(tmp_path):
    assert "counted-inst" in list_instruments()


def _trigger_get_instrument(tmp_path):
    assert isinstance(instruments.get_instrument("counted-inst"), PassInstrument)


def _trigger_load_plugin_format(tmp_path):
    path = tmp_path / "model.counted"
    path.write_text("")
    assert isinstance(irpass.load(path), irpass.IRModule)


def _trigger_load_text_with_plugin_op(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text(TEXT_WITH_PLUGIN_OP)
    mod = irpass.load(path)
    assert "counted.op" in mod.astext()


def _trigger_op_get(tmp_path):
    assert irpass.Op.get("counted.op").name == "counted.op"


def _trigger_pass_context_config(tmp_path):
    assert PassContext(config={"counted.level": 3}).config["counted.level"] == 3


def _trigger_default_pipeline(tmp_path):
    irpass.transform.default_pipeline()


LAZY_TRIGGERS = [
    _trigger_attribute,
    _trigger_get_pass,
    _trigger_list_passes,
    _trigger_list_instruments,
    _trigger_get_instrument,
    _trigger_load_plugin_format,
    _trigger_load_text_with_plugin_op,
    _trigger_op_get,
    _trigger_pass_context_config,
    _trigger_default_pipeline,
]


@pytest.mark.parametrize("trigger", LAZY_TRIGGERS, ids=lambda f: f.__name__[len("_trigger_") :])
def test_first_use_loads_the_plugins_exactly_once(site, tmp_path, trigger):
    site.plugin("counted", COUNTED)
    assert irpass.plugins._manager is None
    assert site.log == []
    trigger(tmp_path)
    assert site.log == ["import", "register_passes"]
    assert irpass.plugins._manager is not None
    # any further use, of the same or another kind, loads nothing again
    trigger(tmp_path)
    for other in LAZY_TRIGGERS:
        other(tmp_path)
    assert site.log == ["import", "register_passes"]
    assert irpass.plugins.get_plugin_manager().record("counted").status == "loaded"


def test_known_names_do_not_load_the_plugins(site):
    site.plugin("counted", COUNTED)
    assert get_pass("Identity").info.name == "Identity"
    assert irpass.Op.get("add").name == "add"
    formats.format_for("m.txt")
    PassContext(config={"testing.immutable_module": True})
    assert site.log == [] and irpass.plugins._manager is None


def test_unknown_names_after_loading_do_not_load_again(site):
    site.plugin("counted", COUNTED)
    with pytest.raises(KeyError):
        get_pass("NoSuchPass")
    assert site.log == ["import", "register_passes"]
    with pytest.raises(KeyError):
        get_pass("NoSuchPass")
    with pytest.raises(KeyError):
        instruments.get_instrument("no-such")
    with pytest.raises(ValueError):
        irpass.Op.get("no.such")
    assert site.log == ["import", "register_passes"]


# -- broken plugins ---------------------------------------------------------------------------

# A prelude that registers things before the broken hook fails: none of it may remain.
PRELUDE = """
from irpass.formats import FileFormat
from irpass.ir import OpPattern
from irpass.plugins import OpSpec, hookimpl
from irpass.transform import ConfigOption, module_pass

@hookimpl
def irpass_register_config_options():
    return [ConfigOption("broken.level", int, 0, "a level")]

@hookimpl
def irpass_register_ops():
    return [OpSpec("broken.op", 1, lambda t, a: t[0], lambda v, a: v[0], OpPattern.ELEMWISE)]

@hookimpl
def irpass_register_formats():
    return [FileFormat("broken", (".broken",), load=lambda path: None)]

@module_pass(opt_level=0, name="BrokenGood")
def BrokenGood(mod, ctx):
    return mod

@module_pass(opt_level=0, name="PrintIR")
def NotTheCorePrintIR(mod, ctx):
    return mod
"""

BROKEN = {
    "import error": (
        "raise ImportError('no module named numpyy')\n",
        # the file and line where the import failed, as the traceback would show them
        ("failed to load", ".py:1: ImportError", "no module named numpyy"),
    ),
    "hook raises": (
        PRELUDE + "@hookimpl\ndef irpass_register_passes():\n    raise RuntimeError('kaput')\n",
        ("irpass_register_passes", "RuntimeError", "kaput"),
    ),
    "returns a str": (
        PRELUDE + "@hookimpl\ndef irpass_register_passes():\n    return 'InferType'\n",
        ("irpass_register_passes", "str", "'InferType'"),
    ),
    "returns an int": (
        PRELUDE + "@hookimpl\ndef irpass_register_passes():\n    return 7\n",
        ("irpass_register_passes", "int", "7"),
    ),
    "a list with a non-pass": (
        PRELUDE + "@hookimpl\ndef irpass_register_passes():\n    return [BrokenGood, 42]\n",
        ("irpass_register_passes", "42"),
    ),
    "instruments not a mapping": (
        PRELUDE + "@hookimpl\ndef irpass_register_instruments():\n    return ['timing']\n",
        ("irpass_register_instruments", "list", "mapping"),
    ),
    "an op spec that is not one": (
        "from irpass.plugins import hookimpl\n"
        "@hookimpl\ndef irpass_register_config_options():\n"
        "    from irpass.transform import ConfigOption\n"
        "    return [ConfigOption('broken.level', int, 0)]\n"
        "@hookimpl\ndef irpass_register_ops():\n    return ['relu']\n",
        ("irpass_register_ops", "str", "'relu'"),
    ),
    "a core pass name": (
        PRELUDE + "@hookimpl\ndef irpass_register_passes():\n"
        "    return [BrokenGood, NotTheCorePrintIR]\n",
        ("'PrintIR'", "'irpass'", "'broken'"),
    ),
    "a misspelt hook": (
        PRELUDE + "@hookimpl\ndef irpass_register_pass():\n    return [BrokenGood]\n",
        ("irpass_register_pass", "did you mean irpass_register_passes"),
    ),
    "an insertion that is not one": (
        PRELUDE + "@hookimpl\ndef irpass_register_passes():\n    return [BrokenGood]\n"
        "@hookimpl\ndef irpass_pipeline_passes():\n    return [('BrokenGood', 'end')]\n",
        ("irpass_pipeline_passes", "tuple", "PipelineInsertion"),
    ),
    "a hook with an unknown argument": (
        PRELUDE + "@hookimpl\ndef irpass_run_before_pass(mod, info, extra):\n    pass\n",
        ("irpass_run_before_pass", "extra"),
    ),
    "a hook calling sys.exit": (
        PRELUDE + "@hookimpl\ndef irpass_register_passes():\n    import sys\n    sys.exit(4)\n",
        ("irpass_register_passes", "SystemExit", "exit code 4"),
    ),
    # callables that are not pass factories
    "a built-in function": (
        PRELUDE + "@hookimpl\ndef irpass_register_passes():\n    return [BrokenGood, len]\n",
        ("irpass_register_passes", "'len'", "built-in function"),
    ),
    "a lambda returning an int": (
        PRELUDE + "@hookimpl\ndef irpass_register_passes():\n    return [BrokenGood, lambda: 42]\n",
        ("irpass_register_passes", "<lambda>", "int 42", "not a Pass"),
    ),
    "a class that is not a pass": (
        PRELUDE + "@hookimpl\ndef irpass_register_passes():\n    return [BrokenGood, dict]\n",
        ("irpass_register_passes", "'dict'", "not a Pass"),
    ),
    "a factory annotated to return something else": (
        "from __future__ import annotations\n"
        + PRELUDE
        + "def Counter(start: int) -> int:\n    return start\n"
        "@hookimpl\ndef irpass_register_passes():\n    return [BrokenGood, Counter]\n",
        ("irpass_register_passes", "Counter", "return int", "not a Pass"),
    ),
}


def _broken_site(site, source):
    site.plugin("good", pass_plugin("GoodPass"))
    return site.plugin("broken", source, dist="broken-dist", version="0.1")


@pytest.mark.parametrize("kind", list(BROKEN))
def test_broken_plugin_is_reported_once_and_skipped_without_a_trace(site, kind):
    source, causes = BROKEN[kind]
    _broken_site(site, source)
    manager, warned = load_recording(PluginSettings())
    assert len(warned) == 1, warned
    message = warned[0]
    assert "'broken'" in message and "broken-dist 0.1" in message
    for cause in causes:
        assert cause in message
    rec = manager.record("broken")
    assert rec.status == "failed" and rec.contributions == ()
    assert (rec.dist, rec.version) == ("broken-dist", "0.1")
    for cause in causes:
        if cause != "'broken'":
            assert cause in rec.reason
    assert owned_by("broken") == []
    assert "BrokenGood" not in list_passes()
    assert "broken.level" not in list_config_options()
    assert formats._BY_SUFFIX.get(".broken") is None
    assert get_pass_entry("PrintIR").owner == "irpass"
    # the good plugin is unaffected, and later uses do not warn again
    assert manager.record("good").status == "loaded"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert "GoodPass" in list_passes()
        irpass.plugins.get_plugin_manager()
        with pytest.raises(KeyError):
            get_pass("BrokenGood")
    assert plugin_warnings(caught) == []


@pytest.mark.parametrize("kind", list(BROKEN))
def test_strict_turns_a_broken_plugin_into_an_error_with_the_same_information(site, kind):
    source, causes = BROKEN[kind]
    _broken_site(site, source)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(PluginError) as info:
            irpass.plugins.load(PluginSettings(strict=True))
    assert plugin_warnings(caught) == []
    assert isinstance(info.value, irpass.errors.IRPassError)
    message = str(info.value)
    assert "'broken'" in message and "broken-dist 0.1" in message
    for cause in causes:
        assert cause in message
    assert owned_by("broken") == []
    assert get_pass_entry("PrintIR").owner == "irpass"
    assert irpass.plugins._manager is None


def test_a_broken_entry_point_without_a_distribution_is_named_by_its_module(site):
    module = site.plugin("nodist", "raise RuntimeError('half-installed')\n")
    manager, warned = load_recording(PluginSettings())
    assert len(warned) == 1
    assert "'nodist'" in warned[0] and f"module {module}" in warned[0]
    assert "half-installed" in warned[0]
    assert manager.record("nodist").dist is None


def test_an_entry_point_with_instrument_hooks_gets_an_instrument_of_its_name(site):
    site.plugin(
        "tracer",
        """
        import EVENTS as events
        from irpass.plugins import hookimpl

        @hookimpl
        def irpass_run_before_pass(info):
            events.log.append(info.name)
        """,
    )
    load_recording(PluginSettings())
    assert "tracer" in list_instruments()
    assert instruments.get_instrument_entry("tracer").owner == "tracer"
    module_pass(lambda mod, ctx: mod, opt_level=0, name="Quiet")(make_mod())
    assert site.log == []
    with PassContext(instruments=[instruments.get_instrument("tracer")]):
        module_pass(lambda mod, ctx: mod, opt_level=0, name="Traced")(make_mod())
    assert site.log == ["Traced"]


def test_a_missing_dash_p_module_is_reported_with_its_name(site):
    missing = f"no_such_module_{site.tag}"
    manager, warned = load_recording(PluginSettings(autoload=False, modules=(missing,)))
    assert len(warned) == 1
    assert f"'{missing}'" in warned[0] and "ModuleNotFoundError" in warned[0]
    assert manager.record(missing).status == "failed"


def test_an_insertion_of_an_unregistered_pass_is_dropped_with_one_warning(site):
    site.plugin(
        "needsstd",
        """
        from irpass.plugins import hookimpl
        from irpass.transform import PipelineInsertion

        @hookimpl
        def irpass_pipeline_passes():
            return [PipelineInsertion("InferTyp", phase="end")]
        """,
    )
    _, warned = load_recording(PluginSettings())
    assert len(warned) == 1
    assert "'needsstd'" in warned[0] and "'InferTyp'" in warned[0]
    assert pipeline.list_pipeline_insertions() == []


STAGES = ["config option", "op", "format", "pass", "instrument", "pipeline"]


class PartialPlugin:
    """Registers one thing per registration hook; the hook of stage ``fail_at`` fails
    (raises, or returns garbage), after noting what its plugin had registered so far."""

    def __init__(self, fail_at, mode):
        self.fail_at = fail_at
        self.mode = mode
        self.seen = None

    def _stage(self, stage, value):
        if stage != self.fail_at:
            return value
        self.seen = owned_by("partial")
        if self.mode == "raise":
            raise RuntimeError(f"{stage} hook failed")
        return [object()] if stage != "instrument" else ["not a mapping"]

    @hookimpl
    def irpass_register_config_options(self):
        return self._stage("config option", [ConfigOption("partial.level", int, 0)])

    @hookimpl
    def irpass_register_ops(self):
        return self._stage(
            "op", [OpSpec("partial.op", 1, same_type, first_arg, OpPattern.ELEMWISE)]
        )

    @hookimpl
    def irpass_register_formats(self):
        return self._stage(
            "format", [formats.FileFormat("partial", (".partial",), load=_full_load)]
        )

    @hookimpl
    def irpass_register_passes(self):
        return self._stage("pass", [FullPass])

    @hookimpl
    def irpass_register_instruments(self):
        return self._stage("instrument", {"partial-inst": Inst})

    @hookimpl
    def irpass_pipeline_passes(self):
        return self._stage("pipeline", [PipelineInsertion("FullPass", phase="end")])

    @hookimpl
    def irpass_run_before_pass(self, mod, info):
        pass


EXPECTED_BEFORE = {
    "config option": [],
    "op": [("config option", "partial.level")],
    "format": [("config option", "partial.level"), ("op", "partial.op")],
    "pass": [("config option", "partial.level"), ("format", ".partial"), ("op", "partial.op")],
    "instrument": [
        ("config option", "partial.level"),
        ("format", ".partial"),
        ("op", "partial.op"),
        ("pass", "FullPass"),
    ],
    "pipeline": [
        ("config option", "partial.level"),
        ("format", ".partial"),
        ("instrument", "partial-inst"),
        ("op", "partial.op"),
        ("pass", "FullPass"),
    ],
}


@pytest.mark.parametrize("mode", ["raise", "garbage"])
@pytest.mark.parametrize("fail_at", STAGES)
def test_a_plugin_failing_half_way_leaves_nothing_behind(fresh_plugins, fail_at, mode):
    irpass.plugins.load(PluginSettings(autoload=False))
    before = registries()
    plugin = PartialPlugin(fail_at, mode)
    record, warned = register_recording(plugin, "partial")
    assert plugin.seen == EXPECTED_BEFORE[fail_at]  # the earlier stages had been committed
    assert len(warned) == 1 and "'partial'" in warned[0]
    assert record.status == "failed" and record.contributions == ()
    assert irpass.plugins.get_plugin_manager().record("partial") == record
    assert owned_by("partial") == []
    assert registries() == before
    assert irpass.plugins.get_plugin_manager().plugin("partial") is None


@pytest.mark.parametrize("fail_at", STAGES)
def test_strict_plugin_failing_half_way_raises_and_leaves_nothing_behind(fresh_plugins, fail_at):
    irpass.plugins.load(PluginSettings(autoload=False, strict=True))
    before = registries()
    with pytest.raises(PluginError, match=f"'partial'.*{fail_at} hook failed"):
        irpass.plugins.register(PartialPlugin(fail_at, "raise"), "partial")
    assert registries() == before


def test_a_plugin_failing_at_its_hook_instrument_leaves_nothing_behind(fresh_plugins):
    irpass.plugins.load(PluginSettings(autoload=False))
    instruments.register_instrument("partial", Inst, owner="someone-else")
    before = registries()
    record, warned = register_recording(PartialPlugin(None, "raise"), "partial")
    assert len(warned) == 1
    assert "'partial'" in warned[0] and "'someone-else'" in warned[0]
    assert record.status == "failed"
    assert registries() == before
    assert instruments.get_instrument_entry("partial").owner == "someone-else"


def test_a_failed_plugin_can_be_registered_again_once_fixed(fresh_plugins):
    irpass.plugins.load(PluginSettings(autoload=False))
    failed, warned = register_recording(PartialPlugin("pass", "raise"), "partial")
    assert failed.status == "failed" and len(warned) == 1
    fixed, warned = register_recording(PartialPlugin(None, "raise"), "partial")
    assert warned == [] and fixed.status == "loaded"
    assert ("pass", "FullPass") in owned_by("partial")


# -- clashes between plugins ------------------------------------------------------------------

CLASH_SOURCES = {
    "pass": """
        from irpass.plugins import hookimpl
        from irpass.transform import module_pass

        @module_pass(opt_level=0, name="Clash")
        def Clash(mod, ctx):
            return mod

        @hookimpl
        def irpass_register_passes():
            return [Clash]
        """,
    "op": """
        from irpass.ir import OpPattern
        from irpass.plugins import OpSpec, hookimpl

        @hookimpl
        def irpass_register_ops():
            return [OpSpec("clash.op", 1, lambda t, a: t[0], lambda v, a: v[0],
                           OpPattern.ELEMWISE)]
        """,
    "instrument": """
        from irpass.instrument import PassInstrument
        from irpass.plugins import hookimpl

        class Mine(PassInstrument):
            pass

        @hookimpl
        def irpass_register_instruments():
            return {"clash-inst": Mine}
        """,
    "format": """
        from irpass.formats import FileFormat
        from irpass.plugins import hookimpl

        @hookimpl
        def irpass_register_formats():
            return [FileFormat("WHO", (".clash",), load=lambda path: None)]
        """,
    "config option": """
        from irpass.plugins import hookimpl
        from irpass.transform import ConfigOption

        @hookimpl
        def irpass_register_config_options():
            return [ConfigOption("clash.value", TYPE, None)]
        """,
}


def _winner_of(kind):
    if kind == "pass":
        return passes._PASSES["Clash"].owner
    if kind == "op":
        return ops._REGISTRY["clash.op"].owner
    if kind == "instrument":
        return instruments._INSTRUMENTS["clash-inst"].owner
    if kind == "format":
        return formats._BY_SUFFIX[".clash"].owner
    return options._OPTIONS["clash.value"].owner


@pytest.mark.parametrize("order", ["alpha first", "beta first"])
@pytest.mark.parametrize("kind", list(CLASH_SOURCES))
def test_a_clash_between_two_plugins_has_the_same_winner_in_any_order(site, kind, order):
    types_ = {"alpha": "int", "beta": "str"}
    for who in ("alpha", "beta"):
        source = CLASH_SOURCES[kind].replace("WHO", who).replace("TYPE", types_[who])
        site.plugin(who, source, dist=f"{who}-dist", version="1.0")
    if order == "beta first":
        site.entry_points.reverse()
    assert [ep.name for ep in site.entry_points][0] == order.split()[0]
    manager, warned = load_recording(PluginSettings())
    assert manager.record("alpha").status == "loaded"
    beta = manager.record("beta")
    assert beta.status == "failed"
    assert _winner_of(kind) == "alpha"
    assert owned_by("beta") == []
    assert len(warned) == 1
    assert "'alpha'" in warned[0] and "'beta'" in warned[0] and "beta-dist 1.0" in warned[0]
    assert "'alpha'" in beta.reason


# -- register() in code -----------------------------------------------------------------------


def _module_plugin(name="codeplug"):
    mod = types.ModuleType(name)
    mod.irpass_register_passes = hookimpl(lambda: [FullPass])
    mod.irpass_register_config_options = hookimpl(lambda: [ConfigOption("codeplug.level", int, 1)])
    return mod


def test_register_a_module_in_code(fresh_plugins):
    irpass.plugins.load(PluginSettings(autoload=False))
    record, warned = register_recording(_module_plugin())
    assert warned == []
    assert (record.name, record.status, record.source, record.module) == (
        "codeplug",
        "loaded",
        "code",
        "codeplug",
    )
    assert record.origin == "registered in code"
    assert set(record.contributions) == {
        Contribution("pass", "FullPass"),
        Contribution("config option", "codeplug.level"),
    }
    assert get_pass_entry("FullPass").owner == "codeplug"
    assert list_config_options()["codeplug.level"].owner == "codeplug"


def test_register_loads_the_plugins_first(site):
    site.plugin("auto", pass_plugin("AutoPass"))
    irpass.plugins.register(_module_plugin())
    assert "AutoPass" in passes._PASSES
    names = [r.name for r in irpass.plugins.get_plugin_manager().records()]
    assert names == ["irpass", "auto", "codeplug"]


def test_register_an_object_names_it_after_its_class_lowercased(fresh_plugins):
    """Lowercased, so the name also works as the name of the plugin's hook instrument."""
    irpass.plugins.load(PluginSettings(autoload=False))

    class Options:
        @hookimpl
        def irpass_register_config_options(self):
            return [ConfigOption("objplug.level", int, 1)]

    record = irpass.plugins.register(Options())
    assert record.name == "options" and record.status == "loaded"
    assert list_config_options()["objplug.level"].owner == "options"


def test_register_the_same_object_twice_changes_nothing(fresh_plugins):
    irpass.plugins.load(PluginSettings(autoload=False))
    plugin = _module_plugin()
    first = irpass.plugins.register(plugin)
    state = registries()
    again, warned = register_recording(plugin)
    assert warned == [] and again == first
    assert registries() == state


def test_register_another_object_under_a_taken_name_is_an_error(fresh_plugins):
    irpass.plugins.load(PluginSettings(autoload=False))
    irpass.plugins.register(_module_plugin())
    state = registries()
    with pytest.raises(ValueError, match="'codeplug'"):
        irpass.plugins.register(_module_plugin())
    assert registries() == state


def test_register_a_name_taken_by_an_entry_point_is_an_error():
    with pytest.raises(ValueError, match="'std'"):
        irpass.plugins.register(_module_plugin(), "std")
    assert get_pass_entry("InferType").owner == "std"


def test_unregister_removes_everything_a_plugin_contributed(fresh_plugins):
    manager = irpass.plugins.load(PluginSettings(autoload=False))
    before = registries()
    plugin = FullPlugin()
    irpass.plugins.register(plugin, "full")
    assert len(owned_by("full")) == 7
    manager.unregister("full")
    assert owned_by("full") == []
    assert registries() == before
    assert "full" not in [r.name for r in manager.records()]
    assert manager.plugin("full") is None
    assert all(
        impl.plugin is not plugin for impl in manager.hook.irpass_register_passes.get_hookimpls()
    )
    # and it can come back
    assert irpass.plugins.register(plugin, "full").status == "loaded"


# -- bugs -------------------------------------------------------------------------------------


def test_registering_the_same_pass_object_as_another_plugin_is_a_clash(fresh_plugins):
    irpass.plugins.load(PluginSettings(autoload=False))
    first = types.ModuleType("first")
    first.irpass_register_passes = hookimpl(lambda: [FullPass])
    second = types.ModuleType("second")
    second.irpass_register_passes = hookimpl(lambda: [FullPass])
    irpass.plugins.register(first)
    record, warned = register_recording(second)
    assert record.status == "failed"
    assert len(warned) == 1 and "'first'" in warned[0] and "'second'" in warned[0]


def test_declaring_another_plugins_config_option_is_a_clash(fresh_plugins):
    manager = irpass.plugins.load(PluginSettings(autoload=False))
    first = types.ModuleType("first")
    first.irpass_register_config_options = hookimpl(lambda: [ConfigOption("shared.k", int, 1)])
    second = types.ModuleType("second")
    second.irpass_register_config_options = hookimpl(lambda: [ConfigOption("shared.k", int, 1)])
    irpass.plugins.register(first)
    record, warned = register_recording(second)
    manager.unregister("first")
    # either the clash is reported, or what 'second' lists as its own survives
    assert record.status == "failed" or "shared.k" in list_config_options()


def test_dash_p_module_of_an_autoloaded_entry_point_is_not_broken(site):
    site.entry_points[:] = REAL_EPS
    manager, warned = load_recording(PluginSettings(modules=("irpass_std.plugin",)))
    assert warned == []
    assert get_pass_entry("InferType").owner == "std"


def test_registry_snapshot_restores_the_plugin_managers_records(fresh_plugins):
    manager = irpass.plugins.load(PluginSettings(autoload=False))
    saved = RegistrySnapshot.take()
    irpass.plugins.register(_module_plugin())
    saved.restore()
    assert irpass.plugins.get_plugin_manager() is manager
    names = [r.name for r in irpass.plugins.get_plugin_manager().records()]
    assert names == ["irpass"]


def test_the_core_name_cannot_be_taken_by_a_plugin(fresh_plugins):
    manager = irpass.plugins.load(PluginSettings(autoload=False))
    impostor = types.ModuleType("impostor")
    impostor.irpass_register_config_options = hookimpl(lambda: [ConfigOption("impostor.k", int, 1)])
    try:
        register_recording(impostor, "irpass")
    except ValueError:
        pass
    assert [r.name for r in manager.records()].count("irpass") == 1
    assert "impostor.k" not in list_config_options()


def test_after_a_strict_failure_loading_again_works(site):
    site.plugin("alpha", CLASH_SOURCES["op"], dist="alpha-dist")
    site.plugin("beta", BROKEN["hook raises"][0], dist="beta-dist")
    with pytest.raises(PluginError, match="'beta'"):
        irpass.plugins.load(PluginSettings(strict=True))
    manager, warned = load_recording(PluginSettings(block=frozenset({"beta"})))
    assert warned == []
    assert manager.record("alpha").status == "loaded"


@pytest.mark.parametrize(
    "environ, words",
    [
        ({"IRPASS_DISABLE_PLUGIN_AUTOLOAD": "maybe"}, ["IRPASS_DISABLE_PLUGIN_AUTOLOAD", "maybe"]),
        ({"IRPASS_PLUGINS": "a,no:std"}, ["IRPASS_PLUGINS", "'no:std'", "-p no:NAME"]),
    ],
)
def test_environment_values_irpass_cannot_read_are_errors(environ, words):
    """The library's lazy load reads the environment as strictly as the CLI does."""
    with pytest.raises(ValueError) as info:
        PluginSettings.from_environ(environ)
    for word in words:
        assert word in str(info.value)


def test_a_dropped_pipeline_insertion_leaves_the_plugins_record(fresh_plugins):
    """An insertion of a pass nobody registered is warned about and no longer listed."""
    manager = irpass.plugins.load(PluginSettings(autoload=False))

    class Dangling:
        @hookimpl
        def irpass_pipeline_passes(self):
            return [PipelineInsertion("NoSuchPass", phase="end")]

    record = irpass.plugins.register(Dangling(), name="dangling")
    assert [c.kind for c in record.contributions] == ["pipeline"]
    with pytest.warns(PluginWarning, match="NoSuchPass"):
        manager._check_pipeline_passes()
    assert manager.record("dangling").contributions == ()
    assert pipeline.list_pipeline_insertions() == []


# -- irpass's own plugins load first (issue 18) -----------------------------------------------


@pytest.mark.parametrize("how", ["autoload", "autoload, found reversed", "-p, pack first"])
def test_a_pack_sorting_before_std_cannot_take_its_pass_names(site, how):
    site.entry_points[:] = REAL_EPS
    site.plugin("aaa", pass_plugin("FoldConstant"), dist="aaa-pack", version="1.0")
    settings = PluginSettings()
    if how == "autoload, found reversed":
        site.entry_points.reverse()
    elif how == "-p, pack first":
        settings = PluginSettings(autoload=False, modules=("aaa", "std", "instruments"))
    manager, warned = load_recording(settings)
    assert manager.record("std").status == "loaded"
    assert get_pass_entry("FoldConstant").owner == "std"
    aaa = manager.record("aaa")
    assert aaa.status == "failed" and owned_by("aaa") == []
    assert "'FoldConstant'" in aaa.reason and "'std'" in aaa.reason
    assert len(warned) == 1
    assert "'aaa'" in warned[0] and "aaa-pack 1.0" in warned[0] and "'std'" in warned[0]
    assert "FoldConstant" in pipeline.pipeline_plan(3).names


def test_a_pack_declaring_a_plugin_named_like_irpass_own_is_refused(site):
    site.entry_points[:] = REAL_EPS
    site.plugin("std", pass_plugin("Impostor"), dist="impostor-pack", version="3.0")
    manager, warned = load_recording(PluginSettings())
    std = manager.record("std")
    assert (std.status, std.dist, std.module) == ("loaded", "irpass", "irpass_std.plugin")
    assert "Impostor" not in list_passes() and "InferType" in list_passes()
    assert len(warned) == 1
    assert "'std'" in warned[0] and "impostor-pack 3.0" in warned[0]
    assert "already taken" in warned[0]


def test_a_failure_that_empties_the_default_pipeline_is_an_error(site):
    site.plugin(
        "broken", "raise ImportError('no module named numpyy')\n", dist="broken-dist", version="0.1"
    )
    manager, warned = load_recording(PluginSettings())
    assert len(warned) == 1  # loading itself only warns
    for build in (irpass.transform.default_pipeline, pipeline.pipeline_plan):
        with pytest.raises(PluginError) as info:
            build(3)
        message = str(info.value)
        assert "default pipeline is empty" in message
        assert "'broken'" in message and "broken-dist 0.1" in message and "numpyy" in message
    # a failure that leaves passes in the pipeline stays a warning
    irpass.plugins.register(_inserting_plugin("KeptPass"), name="kept")
    assert _pipeline_names(3) == ["KeptPass"]


def _inserting_plugin(pass_name: str) -> object:
    made = module_pass(lambda mod, ctx: mod, opt_level=0, name=pass_name)

    class Inserting:
        @hookimpl
        def irpass_register_passes(self):
            return [made]

        @hookimpl
        def irpass_pipeline_passes(self):
            return [PipelineInsertion(pass_name, phase="end")]

    return Inserting()


# -- a plugin calling sys.exit (issue 18) -----------------------------------------------------


@pytest.mark.parametrize(
    "code, shown",
    [("3", "exit code 3"), ("", "exit code 0"), ("'bye'", "sys.exit('bye') (exit code 1)")],
)
def test_a_plugin_exiting_at_import_is_reported_like_any_broken_plugin(site, code, shown):
    module = site.plugin(
        "quitter", f"import sys\nsys.exit({code})\n", dist="quit-dist", version="0.2"
    )
    site.plugin("zgood", pass_plugin("GoodPass"))
    manager, warned = load_recording(PluginSettings())
    assert len(warned) == 1
    for fragment in (
        "'quitter'",
        "quit-dist 0.2",
        f"entry point quitter = {module}",
        "SystemExit",
        shown,
    ):
        assert fragment in warned[0]
    assert manager.record("quitter").status == "failed"
    assert manager.record("zgood").status == "loaded" and "GoodPass" in list_passes()


def test_strict_turns_a_plugin_exiting_at_import_into_a_plugin_error(site):
    module = site.plugin("quitter", "import sys\nsys.exit(3)\n")
    with pytest.raises(PluginError) as info:
        irpass.plugins.load(PluginSettings(strict=True))
    for fragment in ("'quitter'", f"entry point quitter = {module}", "exit code 3"):
        assert fragment in str(info.value)


def test_a_dash_p_module_exiting_at_import_is_reported(site):
    module = site.module("quitmod", "raise SystemExit(5)\n")
    _, warned = load_recording(PluginSettings(autoload=False, modules=(module,)))
    assert len(warned) == 1 and f"'{module}'" in warned[0] and "exit code 5" in warned[0]


# -- what a plugin hands over as passes (issue 18) --------------------------------------------


FACTORIES = """
import EVENTS as events
from irpass.plugins import hookimpl
from irpass.transform import Pass, module_pass


def _made(name):
    return module_pass(lambda mod, ctx: mod, opt_level=0, name=name)


def Plain():
    events.log.append("Plain called")
    return _made("Plain")


def Annotated() -> Pass:
    events.log.append("Annotated called")
    return _made("Annotated")


def NeedsArgs(factor):
    events.log.append("NeedsArgs called")
    return _made("NeedsArgs")


def NeedsContext():
    events.log.append("NeedsContext called")
    raise RuntimeError("only inside a PassContext")


@hookimpl
def irpass_register_passes():
    return [Plain, Annotated, NeedsArgs, NeedsContext]
"""


def test_pass_factories_are_checked_without_calling_those_that_need_arguments(site):
    site.plugin("factories", FACTORIES)
    manager, warned = load_recording(PluginSettings())
    assert warned == []
    assert manager.record("factories").status == "loaded"
    assert {"Plain", "Annotated", "NeedsArgs", "NeedsContext"} <= set(list_passes())
    # only the factories without arguments and without a Pass annotation were tried, once
    assert sorted(site.log) == ["NeedsContext called", "Plain called"]


def _returns_nothing() -> None:
    """Annotated to return no pass."""


@pytest.mark.parametrize("obj", [len, dict, _returns_nothing])
def test_register_pass_refuses_what_cannot_be_a_pass_factory(obj):
    with pytest.raises(TypeError, match="register_pass: .*(built-in function|not a Pass)"):
        passes.register_pass(obj, "NotAPass")
    assert "NotAPass" not in passes._PASSES


# -- pipeline insertions whose options cannot make the pass (issue 18) ------------------------


OPTIONS_PLUGIN = """
from irpass.plugins import hookimpl
from irpass.transform import PipelineInsertion, module_pass


def Scaled(factor: float):
    if factor <= 0:
        raise ValueError(f"factor must be positive, got {factor}")
    return module_pass(lambda mod, ctx: mod, opt_level=0, name="Scaled")


@hookimpl
def irpass_register_passes():
    return [Scaled]


@hookimpl
def irpass_pipeline_passes():
    return [PipelineInsertion("Scaled", phase="end", options=OPTIONS)]
"""

BAD_OPTIONS = {
    "unknown option": ({"factr": 2.0}, ("{'factr': 2.0}", "TypeError", "factr")),
    "missing option": ({}, ("no options", "TypeError", "factor")),
    "bad value": ({"factor": -1.0}, ("{'factor': -1.0}", "ValueError", "must be positive")),
}


@pytest.mark.parametrize("kind", list(BAD_OPTIONS))
def test_an_insertion_whose_options_cannot_make_the_pass_is_dropped_with_a_warning(site, kind):
    options_, causes = BAD_OPTIONS[kind]
    site.plugin(
        "opts", OPTIONS_PLUGIN.replace("OPTIONS", repr(options_)), dist="opts-dist", version="1.1"
    )
    manager, warned = load_recording(PluginSettings())
    assert len(warned) == 1
    for fragment in ("'opts'", "opts-dist 1.1", "'Scaled'", *causes):
        assert fragment in warned[0]
    assert pipeline.list_pipeline_insertions() == []
    record = manager.record("opts")
    assert record.status == "loaded"  # its pass is fine; only the insertion is left out
    assert [c.kind for c in record.contributions] == ["pass"]


@pytest.mark.parametrize("kind", list(BAD_OPTIONS))
def test_strict_turns_an_insertion_with_bad_options_into_an_error(site, kind):
    options_, causes = BAD_OPTIONS[kind]
    site.plugin("opts", OPTIONS_PLUGIN.replace("OPTIONS", repr(options_)))
    with pytest.raises(PluginError) as info:
        irpass.plugins.load(PluginSettings(strict=True))
    for fragment in ("'opts'", "'Scaled'", *causes):
        assert fragment in str(info.value)
