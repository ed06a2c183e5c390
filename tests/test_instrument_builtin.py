"""The built-in instruments: PassTimingInstrument, the printing ones and DumpIR."""

from __future__ import annotations

import contextlib
import io
import re

import irpass
import pytest
from irpass.instrument import (
    DumpIR,
    PassInstrument,
    PassPrintingInstrument,
    PassTimingInstrument,
    PrintAfterAll,
    PrintBeforeAll,
    TimingRow,
)
from irpass.instrument import timing as timing_module
from irpass.transform import PassContext, Sequential, module_pass, register_pass

# -- helpers ---------------------------------------------------------------------------


def make_mod(op=irpass.op.add) -> irpass.IRModule:
    x = irpass.var("x", shape=(4, 4))
    return irpass.IRModule.from_expr(irpass.Function([x], op(x, x)))


def rewrite_to(op, name: str):
    """A pass that replaces the module by ``op(x, x)``, so each step has a distinct output."""
    return module_pass(lambda mod, ctx: make_mod(op), name=name)


def noop(name: str):
    return module_pass(lambda mod, ctx: mod, name=name)


def failing(name: str = "boom"):
    def body(mod, ctx):
        raise ValueError("boom")

    return module_pass(body, name=name)


class FakeClock:
    """Stands in for perf_counter_ns: time moves only when a pass body advances it."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def ticking(self, name: str, ns: int):
        """A pass named ``name`` that takes exactly ``ns`` nanoseconds."""

        def body(mod, ctx):
            self.now += ns
            return mod

        return module_pass(body, name=name)


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(timing_module, "perf_counter_ns", fake)
    return fake


class Recorder(PassInstrument):
    """Keeps (pass name, output module) of every run_after_pass."""

    def __init__(self) -> None:
        self.after: list[tuple[str, irpass.IRModule]] = []

    def run_after_pass(self, mod, info) -> None:
        self.after.append((info.name, mod))


def shape(rows: list[TimingRow]) -> list[tuple[str, int, int]]:
    return [(r.name, r.depth, r.calls) for r in rows]


def render_rows(text: str) -> list[str]:
    """The data lines of a rendered table (the header dropped)."""
    lines = text.splitlines()
    assert lines, "render() gave no header"
    return lines[1:]


# -- PassTimingInstrument --------------------------------------------------------------


def nested_pipeline(clock: FakeClock) -> Sequential:
    inner = Sequential([clock.ticking("a", 10), clock.ticking("b", 20)], name="inner")
    return Sequential([clock.ticking("a", 1), inner, clock.ticking("c", 40)], name="outer")


def test_timing_nests_a_sequential_in_a_sequential(clock):
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        nested_pipeline(clock)(make_mod())
        rows = timing.timings()
    assert rows == [
        TimingRow("outer", 0, 71, 0, 1),
        TimingRow("a", 1, 1, 1, 1),
        TimingRow("inner", 1, 30, 0, 1),
        TimingRow("a", 2, 10, 10, 1),
        TimingRow("b", 2, 20, 20, 1),
        TimingRow("c", 1, 40, 40, 1),
    ]


def test_timing_self_time_excludes_children_with_a_real_clock():
    timing = PassTimingInstrument()
    inner = Sequential([noop("a"), noop("b")], name="inner")
    with PassContext(instruments=[timing]):
        Sequential([noop("a"), inner], name="outer")(make_mod())
        rows = timing.timings()
    assert shape(rows) == [("outer", 0, 1), ("a", 1, 1), ("inner", 1, 1), ("a", 2, 1),
                           ("b", 2, 1)]
    for row in rows:
        assert 0 <= row.self_ns <= row.total_ns
    outer, a, inner_row = rows[0], rows[1], rows[2]
    assert outer.self_ns == outer.total_ns - a.total_ns - inner_row.total_ns


def test_timing_aggregates_a_sequential_run_twice(clock):
    timing = PassTimingInstrument()
    pipeline = nested_pipeline(clock)
    with PassContext(instruments=[timing]):
        pipeline(make_mod())
        pipeline(make_mod())
        rows = timing.timings()
    assert shape(rows) == [("outer", 0, 2), ("a", 1, 2), ("inner", 1, 2), ("a", 2, 2),
                           ("b", 2, 2), ("c", 1, 2)]
    assert rows[0].total_ns == 142
    assert rows[3].total_ns == 20


def test_timing_rows_follow_first_start_order_under_their_parent(clock):
    # "late" first runs inside the second call of "p", after "q" ran: it is still
    # listed under "p", not after "q".
    calls = []

    def body(mod, ctx):
        calls.append(1)
        if len(calls) == 2:
            clock.ticking("late", 5)(mod)
        return mod

    p = module_pass(body, name="p")
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        p(make_mod())
        clock.ticking("q", 3)(make_mod())
        p(make_mod())
        rows = timing.timings()
    assert shape(rows) == [("p", 0, 2), ("late", 1, 1), ("q", 0, 1)]


def test_timing_render_table(clock):
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        nested_pipeline(clock)(make_mod())
        text = timing.render()
    header, *lines = text.splitlines()
    for column in ("Pass", "Total", "Self", "Calls", "Percent"):
        assert column in header
    labels = [re.match(r"^( *\S+)", line).group(1) for line in lines]
    assert labels == ["outer", "  a", "  inner", "    a", "    b", "  c"]
    percents = [float(line.rsplit(None, 1)[1].rstrip("%")) for line in lines]
    assert percents == [100.0, pytest.approx(1.4), pytest.approx(42.3), pytest.approx(14.1),
                        pytest.approx(28.2), pytest.approx(56.3)]
    calls = [int(line.split()[-2]) for line in lines]
    assert calls == [1] * 6
    # total 71 ns = 0.071 us is shown as 0.1
    assert lines[0].split()[1:3] == ["0.1", "0.0"]


def test_timing_percentages_of_top_level_rows_add_up(clock):
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        clock.ticking("first", 25)(make_mod())
        nested_pipeline(clock)(make_mod())
        text = timing.render()
    top = [line for line in render_rows(text) if not line.startswith(" ")]
    total = sum(float(line.rsplit(None, 1)[1].rstrip("%")) for line in top)
    assert total == pytest.approx(100.0, abs=0.2)


def test_timing_render_is_empty_string_when_nothing_ran():
    timing = PassTimingInstrument()
    assert timing.render() == ""
    assert timing.timings() == []
    with PassContext(instruments=[timing]):
        assert timing.render() == ""


def test_timing_render_is_empty_after_the_context_exits(clock):
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        nested_pipeline(clock)(make_mod())
        assert timing.render() != ""
    assert timing.render() == ""
    assert timing.timings() == []


def test_timing_render_is_empty_after_override_instruments(clock):
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]) as ctx:
        nested_pipeline(clock)(make_mod())
        assert timing.timings() != []
        ctx.override_instruments([])
        assert timing.render() == ""
        noop("later")(make_mod())
        assert timing.timings() == []


def test_timing_starts_fresh_in_a_new_context(clock):
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        clock.ticking("first", 1)(make_mod())
    with PassContext(instruments=[timing]):
        clock.ticking("second", 2)(make_mod())
        assert timing.timings() == [TimingRow("second", 0, 2, 2, 1)]


def test_timing_after_a_pass_raised_in_a_sequential(clock):
    timing = PassTimingInstrument()
    inner = Sequential([clock.ticking("a", 1), failing()], name="inner")
    with PassContext(instruments=[timing]):
        with pytest.raises(irpass.PassError):
            Sequential([inner], name="outer")(make_mod())
        clock.ticking("after", 7)(make_mod())
        rows = timing.timings()
    assert shape(rows) == [("outer", 0, 0), ("inner", 1, 0), ("a", 2, 1), ("boom", 2, 0),
                           ("after", 0, 1)]
    assert rows[-1] == TimingRow("after", 0, 7, 7, 1)


def test_timing_after_a_top_level_pass_raised(clock):
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        with pytest.raises(irpass.PassError):
            failing()(make_mod())
        clock.ticking("after", 7)(make_mod())
        nested_pipeline(clock)(make_mod())
        rows = timing.timings()
    assert shape(rows)[:2] == [("boom", 0, 0), ("after", 0, 1)]
    assert shape(rows)[2:] == [("outer", 0, 1), ("a", 1, 1), ("inner", 1, 1), ("a", 2, 1),
                               ("b", 2, 1), ("c", 1, 1)]
    assert rows[2].total_ns == 71


def test_timing_pass_body_that_catches_an_inner_failure(clock):
    # The caller keeps running after the inner pass raised: what it runs next is
    # its own child, not a child of the pass that raised.
    def body(mod, ctx):
        with pytest.raises(irpass.PassError):
            failing()(mod)
        return clock.ticking("retry", 4)(mod)

    caller = module_pass(body, name="caller")
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        Sequential([caller, clock.ticking("next", 2)], name="seq")(make_mod())
        rows = timing.timings()
    assert shape(rows) == [("seq", 0, 1), ("caller", 1, 1), ("boom", 2, 0), ("retry", 2, 1),
                           ("next", 1, 1)]
    assert rows[0].total_ns == 6
    assert rows[1] == TimingRow("caller", 1, 4, 0, 1)


def test_timing_requirements_run_before_the_pass_as_siblings(clock):
    register_pass(clock.ticking("Req", 3), "Req")
    needs = module_pass(lambda mod, ctx: mod, name="Needs", required=["Req"])
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        Sequential([needs], name="seq")(make_mod())
        rows = timing.timings()
    assert shape(rows) == [("seq", 0, 1), ("Req", 1, 1), ("Needs", 1, 1)]


def test_timing_ignores_an_end_without_a_start(clock):
    # Installed while a pass runs, the instrument sees that pass end but never start.
    timing = PassTimingInstrument()

    def body(mod, ctx):
        ctx.override_instruments([timing])
        clock.ticking("inside", 2)(mod)
        return mod

    with PassContext(instruments=[Recorder()]):
        module_pass(body, name="installer")(make_mod())
        clock.ticking("then", 1)(make_mod())
        rows = timing.timings()
    assert shape(rows) == [("inside", 0, 1), ("then", 0, 1)]


# -- printing instruments ----------------------------------------------------------------


def two_step_pipeline() -> Sequential:
    return Sequential([rewrite_to(irpass.op.multiply, "ToMul"),
                       rewrite_to(irpass.op.subtract, "ToSub")], name="pipe")


def test_print_before_all_shows_each_input_module():
    out = io.StringIO()
    with PassContext(instruments=[PrintBeforeAll(stream=out)]):
        two_step_pipeline()(make_mod())
    text = out.getvalue()
    heads = re.findall(r"^Before Running Pass: .*$", text, flags=re.M)
    assert len(heads) == 3
    assert [re.search(r"name='(\w+)'", h).group(1) for h in heads] == ["pipe", "ToMul", "ToSub"]
    assert "After Running Pass" not in text
    # ToSub's input is ToMul's output
    sections = text.split("Before Running Pass: ")
    assert str(make_mod(irpass.op.multiply)) in sections[3]
    assert str(make_mod()) in sections[2]


def test_print_after_all_shows_each_output_module():
    out = io.StringIO()
    with PassContext(instruments=[PrintAfterAll(stream=out)]):
        two_step_pipeline()(make_mod())
    text = out.getvalue()
    sections = text.split("After Running Pass: ")[1:]
    assert [re.match(r".*name='(\w+)'", s).group(1) for s in sections] == [
        "ToMul", "ToSub", "pipe"]
    assert str(make_mod(irpass.op.multiply)) in sections[0]
    assert str(make_mod(irpass.op.subtract)) in sections[1]
    assert "Before Running Pass" not in text


def test_print_instruments_default_to_stderr(capsys):
    with PassContext(instruments=[PrintBeforeAll(), PrintAfterAll()]):
        noop("Quiet")(make_mod())
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Before Running Pass: " in captured.err
    assert "After Running Pass: " in captured.err
    assert "Quiet" in captured.err
    assert str(make_mod()) in captured.err


def test_print_instruments_look_up_stderr_at_each_print():
    instrument = PrintAfterAll()  # made before the redirection
    redirected = io.StringIO()
    with contextlib.redirect_stderr(redirected):
        with PassContext(instruments=[instrument]):
            noop("Late")(make_mod())
    assert "After Running Pass: " in redirected.getvalue()
    assert "Late" in redirected.getvalue()


def test_pass_printing_instrument_prints_only_named_passes():
    out = io.StringIO()
    printer = PassPrintingInstrument(["ToSub"], ["ToMul"], stream=out)
    with PassContext(instruments=[printer]):
        two_step_pipeline()(make_mod())
    text = out.getvalue()
    heads = re.findall(r"^(Before|After) Running Pass: .*name='(\w+)'", text, flags=re.M)
    assert heads == [("After", "ToMul"), ("Before", "ToSub")]
    assert "pipe" not in text
    # both printouts show ToMul's output (ToSub's input)
    assert text.count(str(make_mod(irpass.op.multiply))) == 2


def test_pass_printing_instrument_with_no_names_prints_nothing():
    out = io.StringIO()
    with PassContext(instruments=[PassPrintingInstrument([], [], stream=out)]):
        two_step_pipeline()(make_mod())
    assert out.getvalue() == ""


def test_pass_printing_instrument_refuses_a_bare_string():
    with pytest.raises(TypeError, match=r"\['ToMul'\]"):
        PassPrintingInstrument("ToMul", [])
    with pytest.raises(TypeError, match="pass names"):
        PassPrintingInstrument([], [3])


# -- DumpIR -------------------------------------------------------------------------------


def dumped(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name != ".irpass-dump")


def manifest_names(directory) -> list[str]:
    lines = (directory / ".irpass-dump").read_text().splitlines()
    return lines[1:]


def test_dump_ir_writes_one_parseable_file_per_pass(tmp_path):
    out = tmp_path / "dump"
    recorder = Recorder()
    inner = Sequential([rewrite_to(irpass.op.subtract, "ToSub")], name="inner")
    pipeline = Sequential([rewrite_to(irpass.op.multiply, "ToMul"), inner], name="pipe")
    with PassContext(instruments=[DumpIR(out), recorder]):
        pipeline(make_mod())
    expected = ["000_ToMul.txt", "001_ToSub.txt", "002_inner.txt", "003_pipe.txt"]
    assert dumped(out) == expected
    assert manifest_names(out) == expected
    assert [name for name, _ in recorder.after] == ["ToMul", "ToSub", "inner", "pipe"]
    for file_name, (_, mod) in zip(expected, recorder.after, strict=True):
        parsed = irpass.parse((out / file_name).read_text())
        assert irpass.structural_equal(parsed, mod), file_name
    assert not irpass.structural_equal(irpass.parse((out / expected[0]).read_text()),
                                       recorder.after[1][1])


def test_dump_ir_keeps_every_value_in_the_metadata_section_when_asked(tmp_path):
    import numpy as np

    def add_const(mod, ctx):
        x = irpass.var("x", shape=(4, 4))
        body = irpass.op.add(x, irpass.const(np.arange(16, dtype="float32").reshape(4, 4)))
        return irpass.IRModule.from_expr(irpass.Function([x], body))

    recorder = Recorder()
    with PassContext(instruments=[DumpIR(tmp_path, elide_constants=-1), recorder]):
        module_pass(add_const, name="AddConst")(make_mod())
    text = (tmp_path / "000_AddConst.txt").read_text()
    assert "metadata" in text
    assert irpass.structural_equal(irpass.parse(text), recorder.after[0][1])


def test_dump_ir_creates_a_missing_directory(tmp_path):
    out = tmp_path / "a" / "b"
    with PassContext(instruments=[DumpIR(out)]):
        noop("P")(make_mod())
    assert dumped(out) == ["000_P.txt"]


def test_dump_ir_sanitizes_pass_names(tmp_path):
    with PassContext(instruments=[DumpIR(tmp_path)]):
        noop("my pass/v2:*ok.x-y")(make_mod())
    assert dumped(tmp_path) == ["000_my_pass_v2__ok.x-y.txt"]


def test_dump_ir_refuses_a_foreign_directory(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    ctx = PassContext(instruments=[DumpIR(tmp_path)])
    with pytest.raises(FileExistsError) as info:
        with ctx:
            pass
    message = str(info.value)
    assert str(tmp_path) in message
    assert "notes.txt" in message
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert PassContext.current() is not ctx


def test_dump_ir_error_names_a_few_foreign_files(tmp_path):
    for i in range(8):
        (tmp_path / f"f{i}.txt").write_text("x")
    with pytest.raises(FileExistsError, match=r"'f0.txt'.*'f4.txt' and 3 more"):
        with PassContext(instruments=[DumpIR(tmp_path)]):
            pass


def test_dump_ir_refuses_a_path_that_is_a_file(tmp_path):
    target = tmp_path / "file"
    target.write_text("keep")
    with pytest.raises(FileExistsError, match="not a directory"):
        with PassContext(instruments=[DumpIR(target)]):
            pass
    assert target.read_text() == "keep"


def test_dump_ir_reuses_its_own_directory(tmp_path):
    with PassContext(instruments=[DumpIR(tmp_path)]):
        two_step_pipeline()(make_mod())
    assert dumped(tmp_path) == ["000_ToMul.txt", "001_ToSub.txt", "002_pipe.txt"]
    with PassContext(instruments=[DumpIR(tmp_path)]):
        noop("Only")(make_mod())
    assert dumped(tmp_path) == ["000_Only.txt"]
    assert manifest_names(tmp_path) == ["000_Only.txt"]


def test_dump_ir_refuses_its_directory_once_a_foreign_file_is_added(tmp_path):
    with PassContext(instruments=[DumpIR(tmp_path)]):
        noop("P")(make_mod())
    (tmp_path / "README").write_text("hands off")
    with pytest.raises(FileExistsError, match="README"):
        with PassContext(instruments=[DumpIR(tmp_path)]):
            pass
    assert dumped(tmp_path) == ["000_P.txt", "README"]
    assert (tmp_path / "README").read_text() == "hands off"


def test_dump_ir_directory_stays_reusable_after_a_pass_raised(tmp_path):
    pipeline = Sequential([noop("Good"), failing("Bad")], name="pipe")
    with pytest.raises(irpass.PassError):
        with PassContext(instruments=[DumpIR(tmp_path)]):
            pipeline(make_mod())
    assert dumped(tmp_path) == ["000_Good.txt"]
    assert manifest_names(tmp_path) == ["000_Good.txt"]
    with PassContext(instruments=[DumpIR(tmp_path)]):
        noop("Again")(make_mod())
    assert dumped(tmp_path) == ["000_Again.txt"]


def test_dump_ir_never_overwrites_a_file_that_appears_mid_run(tmp_path):
    def intruder(mod, ctx):
        (tmp_path / "001_Next.txt").write_text("not yours")
        return mod

    # top-level passes: inside a Sequential the error would come wrapped in a PassError
    with pytest.raises(FileExistsError, match="001_Next.txt"):
        with PassContext(instruments=[DumpIR(tmp_path)]):
            module_pass(intruder, name="Intruder")(make_mod())
            noop("Next")(make_mod())
    assert (tmp_path / "001_Next.txt").read_text() == "not yours"
    assert "001_Next.txt" not in manifest_names(tmp_path)


def test_dump_ir_ignores_manifest_entries_outside_its_naming(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "dump"
    out.mkdir()
    manifest = out / ".irpass-dump"
    with PassContext(instruments=[DumpIR(out)]):
        pass
    manifest.write_text(manifest.read_text() + "../victim.txt\n")
    with PassContext(instruments=[DumpIR(out)]):
        noop("P")(make_mod())
    assert victim.read_text() == "precious"
    assert dumped(out) == ["000_P.txt"]


def test_dump_ir_refuses_an_unrecognized_manifest(tmp_path):
    (tmp_path / ".irpass-dump").write_text("something else\n")
    with pytest.raises(FileExistsError, match="manifest"):
        with PassContext(instruments=[DumpIR(tmp_path)]):
            pass
    assert (tmp_path / ".irpass-dump").read_text() == "something else\n"


# -- exports ------------------------------------------------------------------------------


def test_builtins_are_exported():
    for name in ("PassTimingInstrument", "PrintBeforeAll", "PrintAfterAll",
                 "PassPrintingInstrument", "DumpIR"):
        assert name in irpass.instrument.__all__
        assert issubclass(getattr(irpass.instrument, name), PassInstrument)
