"""The instrument registry: names, factories, specs from the command line, the built-in names."""

from __future__ import annotations

import io

import irpass
import irpass.plugins
import pytest
from irpass.instrument import (
    DumpIR,
    InstrumentEntry,
    PassInstrument,
    PassPrintingInstrument,
    PassTimingInstrument,
    PrintAfterAll,
    PrintBeforeAll,
    get_instrument,
    get_instrument_entry,
    list_instruments,
    parse_instrument_spec,
    register_instrument,
    registry,
)
from irpass.plugins import PluginSettings
from irpass.transform import PassContext, Sequential, module_pass


class Counting(PassInstrument):
    """Counts the passes it saw run.

    More text that is not part of the description.
    """

    def __init__(self, start=0, *, step=1):
        self.count = start
        self.step = step

    def run_after_pass(self, mod, info):
        self.count += self.step


def make_mod():
    x = irpass.var("x", shape=(4,))
    return irpass.IRModule.from_expr(irpass.Function([x], irpass.op.add(x, x)))


def noop(name):
    return module_pass(lambda mod, ctx: mod, opt_level=0, name=name)


# -- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["op-stats", "timer", "a.b", "my_inst", "x1", "dump-ir2"])
def test_valid_names(name):
    entry = register_instrument(name, Counting, owner="tests")
    assert entry == InstrumentEntry(name, Counting, "tests", "Counts the passes it saw run.")
    assert get_instrument_entry(name) is entry


@pytest.mark.parametrize("name", ["", "Op-Stats", "op stats", "9lives", "-x", "x-", "a--b",
                                  "op:stats", None, 3])
def test_invalid_names_are_refused(name):
    before = dict(registry._INSTRUMENTS)
    with pytest.raises(ValueError, match="lowercase"):
        register_instrument(name, Counting, owner="tests")
    assert registry._INSTRUMENTS == before


def test_a_factory_must_be_callable():
    with pytest.raises(TypeError, match="'bad'.*not callable"):
        register_instrument("bad", Counting(), owner="tests")
    assert "bad" not in registry._INSTRUMENTS


def test_registering_the_same_factory_again_is_a_no_op():
    first = register_instrument("counting", Counting, owner="tests")
    assert register_instrument("counting", Counting, owner="tests") is first


@pytest.mark.parametrize("other", [("tests", PrintBeforeAll), ("others", Counting)])
def test_a_taken_name_is_refused_naming_both_owners(other):
    register_instrument("counting", Counting, owner="tests")
    owner, factory = other
    with pytest.raises(ValueError, match="'counting'") as info:
        register_instrument("counting", factory, owner=owner)
    assert "'tests'" in str(info.value) and f"'{owner}'" in str(info.value)
    assert get_instrument_entry("counting").factory is Counting


def test_a_builtin_name_is_taken_by_the_instruments_plugin():
    with pytest.raises(ValueError, match="'instruments'.*'tests'"):
        register_instrument("timing", Counting, owner="tests")


def test_description_is_given_or_the_first_docstring_line():
    assert register_instrument("c1", Counting).description == "Counts the passes it saw run."
    assert register_instrument("c2", Counting, description="mine").description == "mine"
    assert register_instrument("c3", lambda: Counting()).description == ""
    assert get_instrument_entry("c1").owner == "irpass"


def test_unregister_instrument():
    register_instrument("counting", Counting, owner="tests")
    registry.unregister_instrument("counting")
    assert "counting" not in list_instruments()
    registry.unregister_instrument("counting")  # absent: nothing happens


def test_list_instruments_is_sorted_and_holds_the_builtins():
    register_instrument("aaa", Counting, owner="tests")
    names = list_instruments()
    assert names == sorted(names)
    assert {"aaa", "timing", "print-before", "print-after", "print-ir", "dump-ir"} <= set(names)


# -- get_instrument ---------------------------------------------------------------------------


def test_get_instrument_makes_a_new_instrument_with_the_arguments():
    register_instrument("counting", Counting, owner="tests")
    a = get_instrument("counting")
    b = get_instrument("counting", 5, step=2)
    assert isinstance(a, Counting) and a is not get_instrument("counting")
    assert (a.count, a.step) == (0, 1)
    assert (b.count, b.step) == (5, 2)
    with PassContext(instruments=[b]):
        Sequential([noop("P1"), noop("P2")], name="S")(make_mod())
    assert b.count == 5 + 2 * 3  # P1, P2 and the Sequential


def test_wrong_arguments_are_a_type_error_naming_the_instrument():
    register_instrument("counting", Counting, owner="tests")
    with pytest.raises(TypeError, match="cannot create instrument 'counting'.*'tests'"):
        get_instrument("counting", 1, 2, 3)
    with pytest.raises(TypeError, match="cannot create instrument 'timing'.*'instruments'"):
        get_instrument("timing", bogus=1)


@pytest.mark.parametrize("made", [None, "timing", Counting, 42])
def test_a_factory_returning_a_non_instrument_is_a_type_error_naming_it(made):
    register_instrument("sloppy", lambda: made, owner="tests")
    with pytest.raises(TypeError) as info:
        get_instrument("sloppy")
    message = str(info.value)
    assert "'sloppy'" in message and "'tests'" in message
    assert type(made).__name__ in message and "PassInstrument" in message


def test_an_unknown_name_suggests_close_matches():
    with pytest.raises(KeyError) as info:
        get_instrument("timng")
    message = str(info.value)
    assert "'timng'" in message and "did you mean 'timing'" in message
    with pytest.raises(KeyError, match="'print-before'"):
        get_instrument_entry("print-befor")


def test_an_unknown_name_lists_the_registered_ones_without_close_matches():
    with pytest.raises(KeyError) as info:
        get_instrument("zzzzzzzz")
    message = str(info.value)
    assert "did you mean" not in message and "timing" in message


def test_an_unknown_name_with_no_instrument_registered(fresh_plugins):
    irpass.plugins.load(PluginSettings(autoload=False))
    assert list_instruments() == []
    with pytest.raises(KeyError, match="none"):
        get_instrument("timing")


# -- parse_instrument_spec ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("timing", ("timing", ())),
        (" timing ", ("timing", ())),
        ("dump-ir:out/dir", ("dump-ir", ("out/dir",))),
        ("dump-ir:C:/x", ("dump-ir", ("C:/x",))),
        ("dump-ir:C:\\ir dumps\\run:1", ("dump-ir", ("C:\\ir dumps\\run:1",))),
        ("print-ir:InferType,FoldConstant", ("print-ir", ("InferType,FoldConstant",))),
        ("dump-ir:", ("dump-ir", ("",))),
    ],
)
def test_parse_instrument_spec(text, expected):
    assert parse_instrument_spec(text) == expected


@pytest.mark.parametrize("text", ["", ":out", "  :x", " "])
def test_parse_instrument_spec_needs_a_name(text):
    with pytest.raises(ValueError, match="no name"):
        parse_instrument_spec(text)


def test_a_spec_turns_into_an_instrument(tmp_path):
    name, args = parse_instrument_spec(f"dump-ir:{tmp_path / 'a:b'}")
    inst = get_instrument(name, *args)
    assert isinstance(inst, DumpIR) and inst.dump_dir == tmp_path / "a:b"


# -- the built-in names -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args", "cls"),
    [
        ("timing", (), PassTimingInstrument),
        ("print-before", (), PrintBeforeAll),
        ("print-after", (), PrintAfterAll),
        ("print-ir", (), PassPrintingInstrument),
        ("dump-ir", ("some/dir",), DumpIR),
    ],
)
def test_builtin_names_make_the_right_classes(name, args, cls):
    inst = get_instrument(name, *args)
    assert type(inst) is cls
    entry = get_instrument_entry(name)
    assert entry.owner == "instruments" and entry.description


def test_registry_entries_of_the_builtins_are_the_classes():
    for name, cls in [("timing", PassTimingInstrument), ("print-before", PrintBeforeAll),
                      ("print-after", PrintAfterAll), ("dump-ir", DumpIR)]:
        assert get_instrument_entry(name).factory is cls


@pytest.mark.parametrize(
    ("args", "kwargs", "before", "after"),
    [
        (("A,B",), {}, {"A", "B"}, set()),
        (("A", "B,C"), {}, {"A"}, {"B", "C"}),
        ((), {"print_after_pass_names": ["X"]}, set(), {"X"}),
        ((), {"print_before_pass_names": "Y"}, {"Y"}, set()),
        ((), {}, set(), set()),
    ],
)
def test_print_ir_takes_comma_separated_pass_names(args, kwargs, before, after):
    inst = get_instrument("print-ir", *args, **kwargs)
    assert inst.print_before_pass_names == before
    assert inst.print_after_pass_names == after


def test_dump_ir_with_a_directory_writes_a_file_per_pass(tmp_path):
    out = tmp_path / "dumps"
    with PassContext(instruments=[get_instrument("dump-ir", str(out))]):
        Sequential([noop("P1"), noop("P2")], name="S")(make_mod())
    files = sorted(p.name for p in out.iterdir() if p.suffix == ".txt")
    assert files == ["000_P1.txt", "001_P2.txt", "002_S.txt"]
    assert "add(%x, %x)" in (out / "000_P1.txt").read_text()


def test_dump_ir_without_a_directory_is_a_type_error():
    with pytest.raises(TypeError, match="'dump-ir'"):
        get_instrument("dump-ir")


def test_timing_by_name_times_the_passes():
    timing = get_instrument("timing")
    with PassContext(instruments=[timing]):
        Sequential([noop("P1")], name="S")(make_mod())
        table = timing.render()
    assert "P1" in table and "S" in table


def test_print_before_by_name_prints():
    stream = io.StringIO()
    with PassContext(instruments=[get_instrument("print-before", stream)]):
        noop("P1")(make_mod())
    assert "P1" in stream.getvalue() and "add(%x, %x)" in stream.getvalue()
