"""Model file formats: the text format, suffix dispatch, and formats from plugins."""

from __future__ import annotations

import types
import warnings
from pathlib import Path

import irpass
import irpass.plugins
import pytest
from irpass import formats
from irpass.formats import FileFormat, format_for, list_formats, register_format
from irpass.plugins import PluginWarning, hookimpl


def make_mod():
    x = irpass.var("x", shape=(4,))
    return irpass.IRModule.from_expr(irpass.Function([x], irpass.op.add(x, x)))


def format_plugin(name, *fmts):
    module = types.ModuleType(name)
    module.irpass_register_formats = hookimpl(lambda: list(fmts))
    return module


def register(plugin):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record = irpass.plugins.register(plugin)
    return record, [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]


class Recording:
    """A format whose load/save record their calls."""

    def __init__(self, result=None):
        self.calls = []
        self.result = result

    def load(self, path, **options):
        self.calls.append(("load", path, options))
        return self.result if self.result is not None else make_mod()

    def save(self, mod, path, **options):
        self.calls.append(("save", mod, path, options))


# -- the text format --------------------------------------------------------------------------


def test_irpass_load_and_save_are_the_format_functions():
    assert irpass.load is formats.load and irpass.save is formats.save


@pytest.mark.parametrize("path", ["m.txt", "m.ir", "M.TXT", "dir.v1/model.Ir", Path("a/b.txt")])
@pytest.mark.parametrize("for_", ["load", "save"])
def test_text_format_by_suffix(path, for_):
    fmt = format_for(path, for_=for_)
    assert fmt is formats.TEXT_FORMAT
    assert fmt.name == "text" and fmt.suffixes == (".txt", ".ir")


def test_text_format_is_the_cores():
    assert (formats.TEXT_FORMAT, "irpass") in list_formats()


@pytest.mark.parametrize("suffix", [".txt", ".ir"])
def test_text_round_trip(tmp_path, suffix):
    mod = make_mod()
    path = tmp_path / f"model{suffix}"
    irpass.save(mod, path)
    assert "add(%x, %x)" in path.read_text()
    irpass.assert_structural_equal(irpass.load(path), mod)
    irpass.assert_structural_equal(irpass.load(str(path)), mod)


@pytest.mark.parametrize("path", ["model.tflite", "model.txt.gz", "dir.ir/model.bin"])
def test_unknown_suffix_lists_the_known_ones(path):
    with pytest.raises(ValueError) as info:
        format_for(path)
    message = str(info.value)
    suffix = Path(path).suffix
    assert repr(path) in message and repr(suffix) in message
    assert ".ir" in message and ".txt" in message
    assert "irpass_register_formats" in message
    with pytest.raises(ValueError, match="no file format"):
        irpass.load(path)
    with pytest.raises(ValueError, match="no file format"):
        irpass.save(make_mod(), path)


def test_no_suffix_means_the_text_format(tmp_path):
    assert format_for("model") is formats.TEXT_FORMAT
    assert format_for("dir/model", for_="save") is formats.TEXT_FORMAT
    mod = make_mod()
    irpass.save(mod, tmp_path / "model")
    irpass.assert_structural_equal(irpass.load(tmp_path / "model"), mod)


def test_unknown_suffix_lists_plugin_suffixes_too(manager):
    irpass.plugins.register(format_plugin("extra", FileFormat("x", (".xfmt",), load=len)))
    with pytest.raises(ValueError, match=r"known: \.ir, \.txt, \.xfmt"):
        format_for("m.nope")


# -- FileFormat ---------------------------------------------------------------------------


def test_file_format_normalizes_its_suffixes():
    fmt = FileFormat("onnx", ".ONNX", load=len)
    assert fmt.suffixes == (".onnx",)
    assert FileFormat("two", [".A", ".b"], save=print).suffixes == (".a", ".b")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"name": "", "suffixes": (".a",), "load": len}, ValueError, "name"),
        ({"name": 3, "suffixes": (".a",), "load": len}, ValueError, "name"),
        ({"name": "f", "suffixes": ("a",), "load": len}, ValueError, "'a'"),
        ({"name": "f", "suffixes": (".",), "load": len}, ValueError, "'.'"),
        ({"name": "f", "suffixes": (), "load": len}, ValueError, "no suffixes"),
        ({"name": "f", "suffixes": (".a", 1), "load": len}, ValueError, "1"),
        ({"name": "f", "suffixes": (".a",)}, ValueError, "neither load nor save"),
        ({"name": "f", "suffixes": (".a",), "load": "module.load"}, TypeError, "load"),
        ({"name": "f", "suffixes": (".a",), "save": 3}, TypeError, "save"),
        ({"name": "f", "suffixes": (".a",), "load": len, "node_count": 3}, TypeError, "node_count"),
    ],
)
def test_file_format_validation(kwargs, error, match):
    with pytest.raises(error, match=match) as info:
        FileFormat(**kwargs)
    if isinstance(kwargs["name"], str) and kwargs["name"]:
        assert repr(kwargs["name"]) in str(info.value)


def test_register_format_refuses_other_objects():
    with pytest.raises(TypeError, match="FileFormat"):
        register_format(("x", (".x",)), owner="tests")


def test_register_the_same_format_twice_is_a_no_op():
    fmt = FileFormat("x", (".x",), load=len)
    register_format(fmt, owner="tests")
    assert register_format(fmt, owner="tests") is fmt
    assert format_for("m.x") is fmt


def test_a_taken_suffix_is_refused_naming_both_formats_and_owners():
    register_format(FileFormat("first", (".x",), load=len), owner="one")
    with pytest.raises(ValueError) as info:
        register_format(FileFormat("second", (".y", ".x"), load=len), owner="two")
    message = str(info.value)
    for part in ("'.x'", "'first'", "'one'", "'second'", "'two'"):
        assert part in message
    # nothing of the refused format was registered, not even its free suffix
    assert ".y" not in formats._BY_SUFFIX
    assert format_for("m.x").name == "first"


def test_unregister_format_removes_only_its_own_suffixes():
    mine = FileFormat("mine", (".m1", ".m2"), load=len)
    register_format(mine, owner="tests")
    formats.unregister_format(FileFormat("other", (".m1",), load=len))
    assert format_for("a.m1") is mine
    formats.unregister_format(mine)
    assert ".m1" not in formats._BY_SUFFIX and ".m2" not in formats._BY_SUFFIX
    assert format_for("a.txt") is formats.TEXT_FORMAT


# -- formats from plugins -------------------------------------------------------------------


def test_a_plugin_format_is_used_by_load_and_save(manager, tmp_path):
    rec = Recording()
    fmt = FileFormat("rec", (".rec", ".REC2"), load=rec.load, save=rec.save,
                     description="recorded")
    record, warned = register(format_plugin("recplug", fmt))
    assert warned == [] and record.status == "loaded"
    assert (fmt, "recplug") in list_formats()
    assert [c.name for c in record.contributions if c.kind == "format"] == [
        "rec (.rec, .rec2)"]

    path = tmp_path / "model.rec"
    mod = irpass.load(path, flavour=1)
    assert isinstance(mod, irpass.IRModule)
    assert rec.calls == [("load", path, {"flavour": 1})]
    irpass.save(mod, str(tmp_path / "out.REC2"), level=3)
    assert rec.calls[1] == ("save", mod, str(tmp_path / "out.REC2"), {"level": 3})
    assert len(rec.calls) == 2
    # the text format is untouched
    assert format_for("m.txt") is formats.TEXT_FORMAT


def test_the_summary_counts_a_written_file_with_its_formats_node_count(manager, tmp_path):
    from irpass.cli.optimize import written_nodes

    counted = []

    def node_count(path):
        counted.append(path)
        return 7

    rec = Recording()
    register(format_plugin("countplug", FileFormat("cnt", (".cnt",), save=rec.save,
                                                   node_count=node_count)))
    assert written_nodes(tmp_path / "m.cnt") == 7 and counted == [tmp_path / "m.cnt"]
    # the text format does not count nodes
    assert written_nodes(tmp_path / "m.txt") is None


def test_list_formats_is_sorted_by_name_with_owners(manager):
    irpass.plugins.register(format_plugin(
        "many", FileFormat("zzz", (".zzz",), load=len), FileFormat("aaa", (".aaa",), save=print)))
    listed = list_formats()
    assert [f.name for f, _ in listed] == ["aaa", "text", "zzz"]
    assert [owner for _, owner in listed] == ["many", "irpass", "many"]


def test_a_suffix_clash_between_two_plugins_fails_the_second_naming_both(manager):
    first = FileFormat("alpha-fmt", (".clash",), load=len)
    second = FileFormat("beta-fmt", (".beta", ".clash"), load=len)
    assert register(format_plugin("alpha", first))[0].status == "loaded"
    record, warned = register(format_plugin("beta", second))
    assert record.status == "failed"
    assert len(warned) == 1
    for part in ("'alpha'", "'beta'", "'.clash'", "'alpha-fmt'", "'beta-fmt'"):
        assert part in warned[0]
        assert part in record.reason or part == "'beta'"
    assert format_for("m.clash") is first
    assert ".beta" not in formats._BY_SUFFIX
    assert all(owner != "beta" for _, owner in list_formats())


def test_a_plugin_cannot_take_the_text_suffixes(manager):
    record, warned = register(format_plugin("greedy", FileFormat("mytext", (".txt",), load=len)))
    assert record.status == "failed"
    assert len(warned) == 1 and "'greedy'" in warned[0] and "'irpass'" in warned[0]
    assert format_for("m.txt") is formats.TEXT_FORMAT


@pytest.mark.parametrize("result", ["a string", 42, [1, 2], {"main": None}])
def test_a_loader_returning_a_non_module_is_a_type_error_naming_the_format(manager, result):
    rec = Recording(result)
    irpass.plugins.register(format_plugin("bad", FileFormat("badfmt", (".bad",), load=rec.load)))
    with pytest.raises(TypeError) as info:
        irpass.load("model.bad")
    message = str(info.value)
    assert "'badfmt'" in message and "'model.bad'" in message
    assert type(result).__name__ in message and "IRModule" in message


def test_a_save_only_format_refuses_to_load(manager, tmp_path):
    rec = Recording()
    irpass.plugins.register(format_plugin("exp", FileFormat("exporter", (".exp",),
                                                             save=rec.save)))
    irpass.save(make_mod(), tmp_path / "m.exp")
    assert len(rec.calls) == 1
    with pytest.raises(ValueError) as info:
        irpass.load(tmp_path / "m.exp")
    message = str(info.value)
    assert "'exporter'" in message and "'exp'" in message and "cannot load" in message
    assert str(tmp_path / "m.exp") in message
    with pytest.raises(ValueError, match="cannot load"):
        format_for("m.exp", for_="load")
    assert len(rec.calls) == 1


def test_a_load_only_format_refuses_to_save(manager, tmp_path):
    rec = Recording()
    irpass.plugins.register(format_plugin("imp", FileFormat("importer", (".imp",),
                                                            load=rec.load)))
    with pytest.raises(ValueError, match="'importer'.*cannot save"):
        irpass.save(make_mod(), tmp_path / "m.imp")
    assert rec.calls == [] and not (tmp_path / "m.imp").exists()


def test_a_format_hook_returning_garbage_fails_the_plugin(manager):
    record, warned = register(format_plugin("junk", ".junk"))
    assert record.status == "failed"
    assert len(warned) == 1 and "irpass_register_formats" in warned[0]
    assert "FileFormat" in warned[0]


def test_unregistering_a_plugin_removes_its_formats(manager):
    fmt = FileFormat("gone", (".gone",), load=len)
    irpass.plugins.register(format_plugin("goner", fmt))
    assert format_for("m.gone") is fmt
    manager.unregister("goner")
    with pytest.raises(ValueError, match="no file format"):
        format_for("m.gone")
