"""A Sequential works out once which passes run under a context, and calls each
pass's body itself; instruments are called only at the points they override.
These pin what that must not change: the plan follows the context's settings,
instruments installed while a Sequential runs see the passes after that, and an
instrument's point set on the instance (not the class) is called."""

from __future__ import annotations

import irpass
import pytest
from irpass import IRModule
from irpass.errors import PassError
from irpass.instrument import PassInstrument, PassTimingInstrument
from irpass.transform import PassContext, Sequential, module_pass


def _mod() -> IRModule:
    x = irpass.var("x", shape=(2,))
    return IRModule.from_expr(irpass.Function([x], irpass.op.add(x, x)))


def _recording(name: str, log: list[str], opt_level: int = 0):
    def body(mod: IRModule, ctx: PassContext) -> IRModule:
        log.append(name)
        return mod

    return module_pass(body, opt_level=opt_level, name=name)


def test_plan_follows_the_context_of_each_run() -> None:
    log: list[str] = []
    seq = Sequential([_recording("low", log, 0), _recording("high", log, 3)])
    with PassContext(opt_level=0):
        seq(_mod())
    with PassContext(opt_level=3):
        seq(_mod())
    with PassContext(opt_level=3, disabled_pass=["low"]):
        seq(_mod())
    with PassContext(opt_level=0, required_pass=["high"]):
        seq(_mod())
    ctx = PassContext(opt_level=0)
    with ctx:
        seq(_mod())
        ctx.opt_level = 3  # a setting changed on the same context
        seq(_mod())
    assert log == ["low", "low", "high", "high", "low", "high", "low", "low", "high"]


def test_instrument_installed_by_a_pass_sees_the_passes_after_it() -> None:
    seen: list[str] = []

    class Recorder(PassInstrument):
        def run_before_pass(self, mod, info):
            seen.append(info.name)

    def install(mod: IRModule, ctx: PassContext) -> IRModule:
        ctx.override_instruments([Recorder()])
        return mod

    log: list[str] = []
    seq = Sequential([module_pass(install, opt_level=0, name="install"), _recording("b", log)])
    with PassContext():
        seq(_mod())
    assert seen == ["b"]
    assert log == ["b"]


def test_point_set_on_the_instance_is_called() -> None:
    seen: list[str] = []
    pi = PassInstrument()
    pi.run_after_pass = lambda mod, info: seen.append(info.name)  # type: ignore[method-assign]
    log: list[str] = []
    with PassContext(instruments=[pi]):
        Sequential([_recording("a", log)], name="s")(_mod())
    assert seen == ["a", "s"]


def test_bad_should_run_answer_names_the_instrument() -> None:
    class Bad(PassInstrument):
        name = "bad-answer"

        def should_run(self, mod, info):
            return 1

    with PassContext(instruments=[Bad()]), pytest.raises(TypeError, match="bad-answer"):
        Sequential([_recording("a", [])])(_mod())


def test_error_reported_by_a_pass_in_a_sequential_names_it() -> None:
    def report(mod: IRModule, ctx: PassContext) -> IRModule:
        ctx.diag.warning("just a warning")
        ctx.diag.error("broken")
        return mod

    log: list[str] = []
    seq = Sequential([module_pass(report, opt_level=0, name="reporter"), _recording("b", log)])
    with PassContext(), pytest.raises(PassError, match="reporter") as info:
        seq(_mod())
    assert [d.message for d in info.value.diagnostics] == ["broken"]
    assert log == []


def test_timing_rows_read_inside_the_context_after_many_passes() -> None:
    timing = PassTimingInstrument()
    seq = Sequential([_recording(f"p{i}", []) for i in range(3)], name="s")
    with PassContext(instruments=[timing]):
        for _ in range(5):
            seq(_mod())
        rows = timing.timings()
        assert [(r.name, r.depth, r.calls) for r in rows] == [
            ("s", 0, 5),
            ("p0", 1, 5),
            ("p1", 1, 5),
            ("p2", 1, 5),
        ]
        seq(_mod())  # rows keep adding up after a read
        assert timing.timings()[0].calls == 6
    assert timing.timings() == []


def test_timing_rows_are_the_same_when_records_are_folded_while_passes_run(monkeypatch) -> None:
    import irpass.instrument.timing as timing_module

    def rows(fold_at: int) -> list[tuple[str, int, int]]:
        monkeypatch.setattr(timing_module, "_FOLD_AT", fold_at)
        timing = PassTimingInstrument()
        inner = Sequential([_recording(f"p{i}", []) for i in range(3)], name="inner")
        seq = Sequential([inner, _recording("last", [])], name="outer")
        with PassContext(instruments=[timing]):
            for _ in range(4):
                seq(_mod())
            return [(r.name, r.depth, r.calls) for r in timing.timings()]

    expected = [
        ("outer", 0, 4),
        ("inner", 1, 4),
        ("p0", 2, 4),
        ("p1", 2, 4),
        ("p2", 2, 4),
        ("last", 1, 4),
    ]
    assert rows(1 << 16) == expected
    assert rows(3) == expected  # folded every few records, passes still in flight
