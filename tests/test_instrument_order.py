"""Pass instruments: exact call order and exception behaviour (TVM's PassContext rules).

Every test records calls as ``(instrument name, point, pass name)`` in one list
(the pass bodies record ``("pass", "body", name)``) and asserts the whole list.
Points: ``enter`` / ``exit`` (pass name ``None``), ``should_run``, ``before``,
``after``. Ported from TVM's tests/python/relay/test_pass_instrument.py and
tests/python/ir/test_pass_instrument.py, plus the rules of the PassContext docs.
"""

from __future__ import annotations

import threading

import irpass
import pytest
from irpass.instrument import PassInstrument, pass_instrument
from irpass.transform import PassContext, Sequential, function_pass, module_pass, register_pass


class Boom(RuntimeError):
    """The error the recording instruments and passes raise on request."""


@pass_instrument
class Recorder:
    """Records every call; raises ``Boom`` at ``raise_in``: a point (``"enter"``) or
    a ``(point, pass name)`` pair. ``should_run`` is the answer: a value, or a
    callable ``pass name -> value``."""

    def __init__(self, name, log, raise_in=None, should_run=True):
        self.name = name
        self.log = log
        self.raise_in = raise_in
        self.answer = should_run

    def _hit(self, point, pass_name=None):
        self.log.append((self.name, point, pass_name))
        if self.raise_in == point or self.raise_in == (point, pass_name):
            raise Boom(f"{self.name} failed in {point} of {pass_name}")

    def enter_pass_ctx(self):
        self._hit("enter")

    def exit_pass_ctx(self):
        self._hit("exit")

    def should_run(self, mod, info):
        self._hit("should_run", info.name)
        return self.answer(info.name) if callable(self.answer) else self.answer

    def run_before_pass(self, mod, info):
        self._hit("before", info.name)

    def run_after_pass(self, mod, info):
        self._hit("after", info.name)


def make(name, log, raise_in=None, should_run=True):
    return Recorder(name, log, raise_in=raise_in, should_run=should_run)


def mpass(name, log, opt_level=0, raises=False, required=()):
    """A module pass recording its body in ``log`` (and raising ``Boom`` if asked)."""

    def body(mod, ctx):
        log.append(("pass", "body", name))
        if raises:
            raise Boom(f"body of {name} failed")
        return mod

    return module_pass(body, opt_level=opt_level, name=name, required=required)


def make_mod():
    x = irpass.var("x", shape=(4, 4))
    return irpass.IRModule.from_expr(irpass.Function([x], irpass.op.add(x, x)))


def runs(names, pass_name):
    """The calls of one pass execution that runs, for instruments ``names`` in order."""
    out = [(n, "should_run", pass_name) for n in names]
    out += [(n, "before", pass_name) for n in names]
    out.append(("pass", "body", pass_name))
    out += [(n, "after", pass_name) for n in names]
    return out


def enters(names):
    return [(n, "enter", None) for n in names]


def exits(names):
    return [(n, "exit", None) for n in names]


@pytest.fixture(autouse=True)
def _clean_default_context():
    """Every test starts and ends outside any scope, with no instrument on the default."""
    default = PassContext.current()
    assert default.instruments == ()
    yield
    assert PassContext.current() is default
    if default.instruments:  # a failing test must not leak instruments into others
        default.override_instruments([])
        pytest.fail("test left instruments on the default context")


# -- call order ---------------------------------------------------------------------


def test_single_instrument_around_one_pass():
    log = []
    mod = make_mod()
    with PassContext(instruments=[make("I", log)]):
        assert log == enters(["I"])
        out = mpass("A", log)(mod)
        assert log == enters(["I"]) + runs(["I"], "A")
    assert out is mod
    assert log == enters(["I"]) + runs(["I"], "A") + exits(["I"])


def test_two_instruments_two_passes_call_sequence():
    log = []
    mod = make_mod()
    with PassContext(instruments=[make("%1", log), make("%2", log)]):
        mod = mpass("transform1", log)(mod)
        mod = mpass("transform2", log)(mod)
    assert log == [
        ("%1", "enter", None),
        ("%2", "enter", None),
        ("%1", "should_run", "transform1"),
        ("%2", "should_run", "transform1"),
        ("%1", "before", "transform1"),
        ("%2", "before", "transform1"),
        ("pass", "body", "transform1"),
        ("%1", "after", "transform1"),
        ("%2", "after", "transform1"),
        ("%1", "should_run", "transform2"),
        ("%2", "should_run", "transform2"),
        ("%1", "before", "transform2"),
        ("%2", "before", "transform2"),
        ("pass", "body", "transform2"),
        ("%1", "after", "transform2"),
        ("%2", "after", "transform2"),
        ("%1", "exit", None),
        ("%2", "exit", None),
    ]


@pytest.mark.parametrize("names", [["A"], ["A", "B"], ["A", "B", "C"]])
def test_sequential_is_itself_an_instrumented_pass(names):
    log = []
    seq = Sequential([mpass("P1", log), mpass("P2", log)], name="Seq")
    with PassContext(instruments=[make(n, log) for n in names]):
        seq(make_mod())
        inside = list(log)
    sr = [(n, "should_run", "Seq") for n in names]
    before = [(n, "before", "Seq") for n in names]
    after = [(n, "after", "Seq") for n in names]
    expected = enters(names) + sr + before + runs(names, "P1") + runs(names, "P2") + after
    assert inside == expected
    assert log == expected + exits(names)


def test_nested_sequentials_bracket_their_passes():
    log = []
    inner = Sequential([mpass("P", log)], name="Inner")
    outer = Sequential([inner, mpass("Q", log)], name="Outer")
    with PassContext(instruments=[make("I", log)]):
        outer(make_mod())
    assert log == [
        ("I", "enter", None),
        ("I", "should_run", "Outer"),
        ("I", "before", "Outer"),
        ("I", "should_run", "Inner"),
        ("I", "before", "Inner"),
        *runs(["I"], "P"),
        ("I", "after", "Inner"),
        *runs(["I"], "Q"),
        ("I", "after", "Outer"),
        ("I", "exit", None),
    ]


def test_instruments_see_input_module_before_and_output_module_after():
    mod = make_mod()
    y = irpass.var("y", shape=(2,))
    other = irpass.IRModule.from_expr(irpass.Function([y], irpass.op.add(y, y)))
    seen = []

    @pass_instrument
    class Watch:
        def should_run(self, m, info):
            seen.append(("should_run", m, info))
            return True

        def run_before_pass(self, m, info):
            seen.append(("before", m, info))

        def run_after_pass(self, m, info):
            seen.append(("after", m, info))

    p = module_pass(lambda m, c: other, opt_level=1, name="Swap")
    with PassContext(instruments=[Watch()]):
        out = p(mod)
    assert out is other
    assert [(point, m, info) for point, m, info in seen] == [
        ("should_run", mod, p.info),
        ("before", mod, p.info),
        ("after", other, p.info),
    ]
    assert all(info.name == "Swap" and info.opt_level == 1 for _, _, info in seen)


def test_function_pass_is_one_instrumented_execution_whatever_the_function_count():
    log = []
    x = irpass.var("x", shape=(2,))
    y = irpass.var("y", shape=(2,))
    mod = irpass.IRModule(
        {
            "main": irpass.Function([x], irpass.op.add(x, x)),
            "g": irpass.Function([y], irpass.op.add(y, y)),
        }
    )

    def body(func, m, ctx):
        log.append(("pass", "body", "F"))
        return func

    with PassContext(instruments=[make("I", log)]):
        assert function_pass(body, name="F")(mod) is mod
    assert log == enters(["I"]) + [
        ("I", "should_run", "F"),
        ("I", "before", "F"),
        ("pass", "body", "F"),
        ("pass", "body", "F"),
        ("I", "after", "F"),
    ] + exits(["I"])


def test_instrument_pass_counts_reset_on_enter_and_exit():
    @pass_instrument
    class PassesCounter:
        def __init__(self):
            self.before = self.after = 0

        def enter_pass_ctx(self):
            self.before = self.after = 0

        def exit_pass_ctx(self):
            self.before = self.after = 0

        def run_before_pass(self, mod, info):
            self.before += 1

        def run_after_pass(self, mod, info):
            self.after += 1

    counter = PassesCounter()
    counter.before = 7  # reset by enter_pass_ctx
    seq = Sequential([mpass("A", []), mpass("B", [])], name="S")
    with PassContext(instruments=[counter]):
        seq(make_mod())
        assert (counter.before, counter.after) == (3, 3)
    assert (counter.before, counter.after) == (0, 0)


# -- should_run and the enabling rules ------------------------------------------------


@pytest.mark.parametrize(
    "answers",
    [(False, True), (True, False), (False, False), (False, True, True), (True, True, False)],
)
def test_should_run_false_from_any_instrument_skips_the_pass(answers):
    log = []
    names = [f"I{i}" for i in range(len(answers))]
    mod = make_mod()
    instruments = [
        make(n, log, should_run=(lambda p, a=a: a if p == "A" else True))
        for n, a in zip(names, answers, strict=True)
    ]
    with PassContext(instruments=instruments):
        out = mpass("A", log)(mod)
        assert out is mod
        mpass("B", log)(mod)
    # every instrument is asked, even after one said False; nobody gets before/after
    assert log == (
        enters(names)
        + [(n, "should_run", "A") for n in names]
        + runs(names, "B")
        + exits(names)
    )


def test_should_run_false_on_a_sequential_skips_all_its_passes():
    log = []
    mod = make_mod()
    seq = Sequential([mpass("A", log), mpass("B", log)], name="S")
    with PassContext(instruments=[make("I", log, should_run=lambda p: p != "S")]):
        assert seq(mod) is mod
    assert log == enters(["I"]) + [("I", "should_run", "S")] + exits(["I"])


def test_should_run_false_on_one_child_skips_only_that_child():
    log = []
    seq = Sequential([mpass("A", log), mpass("B", log), mpass("C", log)], name="S")
    skip_b = make("I", log, should_run=lambda p: p != "B")
    with PassContext(instruments=[skip_b]):
        seq(make_mod())
    assert log == (
        enters(["I"])
        + [("I", "should_run", "S"), ("I", "before", "S")]
        + runs(["I"], "A")
        + [("I", "should_run", "B")]
        + runs(["I"], "C")
        + [("I", "after", "S")]
        + exits(["I"])
    )


def test_disable_pass_by_name_and_multiple_skipping_instruments():
    # TVM's test_disable_pass / test_multiple_instrument
    log = []

    @pass_instrument
    class SkipPass:
        def __init__(self, skip):
            self.skip = skip

        def should_run(self, mod, info):
            return self.skip not in info.name

    @pass_instrument
    class PrintPassName:
        def run_before_pass(self, mod, info):
            log.append(("print", "before", info.name))

    body = []
    mod = make_mod()
    with PassContext(instruments=[SkipPass("Annotate"), SkipPass("ToANF"), PrintPassName()]):
        mod = mpass("AnnotateSpans", body)(mod)
        mod = mpass("ToANF", body)(mod)
        mod = mpass("InferType", body)(mod)
    assert log == [("print", "before", "InferType")]
    assert body == [("pass", "body", "InferType")]


def test_required_pass_is_not_asked_should_run_but_gets_before_and_after():
    log = []
    mod = make_mod()
    never = make("I1", log, should_run=False)
    other = make("I2", log)
    with PassContext(instruments=[never, other], required_pass=["A"]):
        mod = mpass("A", log)(mod)
        mod = mpass("B", log)(mod)
    assert log == (
        enters(["I1", "I2"])
        + [("I1", "before", "A"), ("I2", "before", "A")]
        + [("pass", "body", "A")]
        + [("I1", "after", "A"), ("I2", "after", "A")]
        + [("I1", "should_run", "B"), ("I2", "should_run", "B")]
        + exits(["I1", "I2"])
    )


def test_required_pass_above_opt_level_runs_in_sequential_without_should_run():
    log = []
    seq = Sequential([mpass("Hi", log, opt_level=3), mpass("Lo", log, opt_level=0)], name="S")
    with PassContext(opt_level=1, required_pass=["Hi"], instruments=[make("I", log)]):
        seq(make_mod())
    assert log == (
        enters(["I"])
        + [("I", "should_run", "S"), ("I", "before", "S")]
        + [("I", "before", "Hi"), ("pass", "body", "Hi"), ("I", "after", "Hi")]
        + runs(["I"], "Lo")
        + [("I", "after", "S")]
        + exits(["I"])
    )


@pytest.mark.parametrize(
    "ctx_kwargs",
    [
        {"disabled_pass": ["X"]},
        {"opt_level": 1},
        {"disabled_pass": ["X"], "required_pass": ["X"]},  # disabled wins over required
        {"opt_level": 1, "disabled_pass": ["X"]},
    ],
)
def test_pass_not_enabled_in_sequential_gets_no_instrument_calls(ctx_kwargs):
    log = []
    seq = Sequential([mpass("X", log, opt_level=2), mpass("Y", log)], name="S")
    with PassContext(instruments=[make("I", log)], **ctx_kwargs):
        seq(make_mod())
    assert log == (
        enters(["I"])
        + [("I", "should_run", "S"), ("I", "before", "S")]
        + runs(["I"], "Y")
        + [("I", "after", "S")]
        + exits(["I"])
    )


@pytest.mark.parametrize("answer", [None, 1, 0, "yes", [True]])
def test_should_run_returning_non_bool_is_a_type_error_naming_the_instrument(answer):
    log = []
    mod = make_mod()
    with pytest.raises(TypeError) as info:
        with PassContext(instruments=[make("Good", log), make("Sloppy", log, should_run=answer)]):
            mpass("A", log)(mod)
    message = str(info.value)
    assert "'Sloppy'" in message and "should_run" in message
    assert repr(answer) in message and "'A'" in message
    assert not isinstance(info.value, irpass.PassError)
    assert log == (
        enters(["Good", "Sloppy"])
        + [("Good", "should_run", "A"), ("Sloppy", "should_run", "A")]
        + exits(["Good", "Sloppy"])
    )


# -- enter_pass_ctx / exit_pass_ctx raising ------------------------------------------------


def test_enter_raising_exits_the_entered_and_skips_the_rest():
    log = []
    ctx = PassContext(instruments=[make("A", log), make("B", log, "enter"), make("C", log)])
    with PassContext() as outer:
        with pytest.raises(Boom, match="B failed in enter"):
            with ctx:
                log.append(("with", "body", None))  # never reached
        assert log == [("A", "enter", None), ("B", "enter", None), ("A", "exit", None)]
        assert PassContext.current() is outer
        assert ctx.instruments == ()
        # the outer scope is untouched and the instruments are gone for good
        mpass("P", log)(make_mod())
        with ctx:
            assert PassContext.current() is ctx
            mpass("Q", log)(make_mod())
        assert PassContext.current() is outer
    assert log[3:] == [("pass", "body", "P"), ("pass", "body", "Q")]


def test_enter_raising_exits_the_entered_in_reverse_order():
    # TVM exits the instruments already entered last-entered first, as a with-stack would
    log = []
    pis = [make("A", log), make("B", log), make("C", log, "enter")]
    ctx = PassContext(instruments=pis)
    with pytest.raises(Boom, match="C failed in enter"):
        with ctx:
            pass
    assert log == enters(["A", "B", "C"]) + exits(["B", "A"])
    assert ctx.instruments == ()


def test_override_with_an_enter_that_raises_exits_the_entered_in_reverse_order():
    log = []
    ctx = PassContext.current()
    try:
        with pytest.raises(Boom, match="N3 failed in enter"):
            ctx.override_instruments([make("N1", log), make("N2", log), make("N3", log, "enter")])
        assert ctx.instruments == ()
    finally:
        ctx.override_instruments([])
    assert log == enters(["N1", "N2", "N3"]) + exits(["N2", "N1"])


def test_enter_raising_in_first_instrument_exits_nobody():
    log = []
    outer = PassContext.current()
    ctx = PassContext(instruments=[make("A", log, "enter"), make("B", log)])
    with pytest.raises(Boom):
        with ctx:
            pass
    assert log == [("A", "enter", None)]
    assert PassContext.current() is outer and ctx.instruments == ()


def test_enter_raising_in_inner_scope_keeps_outer_instruments():
    log = []
    with PassContext(instruments=[make("O", log)]) as outer:
        with pytest.raises(Boom):
            with PassContext(instruments=[make("X", log, "enter")]):
                pass
        assert PassContext.current() is outer
        assert [pi.name for pi in outer.instruments] == ["O"]
        mpass("P", log)(make_mod())
    assert log == (
        enters(["O"]) + [("X", "enter", None)] + runs(["O"], "P") + exits(["O"])
    )


def test_exit_raising_stops_at_the_raiser_and_still_pops_the_context():
    log = []
    ctx = PassContext(instruments=[make("A", log), make("B", log, "exit"), make("C", log)])
    with PassContext() as outer:
        with pytest.raises(Boom, match="B failed in exit"):
            with ctx:
                assert PassContext.current() is ctx
                mpass("P", log)(make_mod())
        assert PassContext.current() is outer
    assert ctx.instruments == ()
    assert log == (
        enters(["A", "B", "C"])
        + runs(["A", "B", "C"], "P")
        + [("A", "exit", None), ("B", "exit", None)]
    )


def test_exit_raising_outside_any_enclosing_scope_returns_to_default():
    log = []
    default = PassContext.current()
    ctx = PassContext(instruments=[make("A", log, "exit")])
    with pytest.raises(Boom):
        with ctx:
            pass
    assert PassContext.current() is default and default.instruments == ()
    assert ctx.instruments == ()
    assert log == [("A", "enter", None), ("A", "exit", None)]


def test_error_in_with_body_still_exits_every_instrument():
    log = []
    outer = PassContext.current()
    with pytest.raises(ValueError, match="user code"):
        with PassContext(instruments=[make("A", log), make("B", log)]):
            raise ValueError("user code")
    assert log == enters(["A", "B"]) + exits(["A", "B"])
    assert PassContext.current() is outer


# -- should_run / run_before / run_after / pass body raising -------------------------------


def _run_failing(instruments, p):
    """Run ``p`` in a context of ``instruments``, inside an enclosing scope; returns the error."""
    with PassContext() as outer:
        with pytest.raises(Exception) as info:
            with PassContext(instruments=instruments):
                p(make_mod())
        assert PassContext.current() is outer
    return info.value


@pytest.mark.parametrize("raiser", ["%1", "%2"])
def test_should_run_raising(raiser):
    log = []
    pis = [make(n, log, "should_run" if n == raiser else None) for n in ("%1", "%2")]
    err = _run_failing(pis, mpass("transform", log))
    assert type(err) is Boom and str(err) == f"{raiser} failed in should_run of transform"
    asked = [("%1", "should_run", "transform")]
    if raiser == "%2":
        asked.append(("%2", "should_run", "transform"))
    assert log == enters(["%1", "%2"]) + asked + exits(["%1", "%2"])


def test_run_before_raising():
    log = []
    pis = [make("%1", log, "before"), make("%2", log)]
    err = _run_failing(pis, mpass("transform", log))
    assert type(err) is Boom and "%1 failed in before of transform" in str(err)
    assert log == [
        ("%1", "enter", None),
        ("%2", "enter", None),
        ("%1", "should_run", "transform"),
        ("%2", "should_run", "transform"),
        ("%1", "before", "transform"),
        ("%1", "exit", None),
        ("%2", "exit", None),
    ]


def test_run_after_raising():
    log = []
    pis = [make("%1", log, "after"), make("%2", log)]
    err = _run_failing(pis, mpass("transform", log))
    assert type(err) is Boom and "%1 failed in after of transform" in str(err)
    assert log == [
        ("%1", "enter", None),
        ("%2", "enter", None),
        ("%1", "should_run", "transform"),
        ("%2", "should_run", "transform"),
        ("%1", "before", "transform"),
        ("%2", "before", "transform"),
        ("pass", "body", "transform"),
        ("%1", "after", "transform"),
        ("%1", "exit", None),
        ("%2", "exit", None),
    ]


def test_pass_body_raising_is_wrapped_and_every_instrument_exits():
    log = []
    err = _run_failing([make("%1", log), make("%2", log)], mpass("transform", log, raises=True))
    assert isinstance(err, irpass.PassError) and err.pass_name == "transform"
    assert type(err.__cause__) is Boom and str(err.__cause__) == "body of transform failed"
    assert "transform" in str(err) and "body of transform failed" in str(err)
    assert log == (
        enters(["%1", "%2"])
        + [("%1", "should_run", "transform"), ("%2", "should_run", "transform")]
        + [("%1", "before", "transform"), ("%2", "before", "transform")]
        + [("pass", "body", "transform")]
        + exits(["%1", "%2"])
    )


@pytest.mark.parametrize("point", ["should_run", "before", "after"])
def test_instrument_error_inside_a_sequential_propagates_unwrapped(point):
    log = []
    seq = Sequential([mpass("A", log), mpass("B", log)], name="S")
    err = _run_failing([make("I", log, (point, "A"))], seq)
    assert type(err) is Boom, f"instrument error came out as {type(err).__name__}: {err}"
    assert str(err) == f"I failed in {point} of A"
    partial = {
        "should_run": [("I", "should_run", "A")],
        "before": [("I", "should_run", "A"), ("I", "before", "A")],
        "after": runs(["I"], "A"),
    }[point]
    assert log == (
        enters(["I"])
        + [("I", "should_run", "S"), ("I", "before", "S")]
        + partial
        + exits(["I"])
    )


def test_non_bool_should_run_inside_a_sequential_is_a_type_error():
    log = []
    seq = Sequential([mpass("A", log)], name="S")
    err = _run_failing([make("I", log, should_run=lambda p: None if p == "A" else True)], seq)
    assert type(err) is TypeError, f"came out as {type(err).__name__}: {err}"
    assert "'I'" in str(err) and "should_run" in str(err) and "None" in str(err)


def test_pass_body_error_inside_a_sequential_names_the_failing_pass():
    log = []
    seq = Sequential([mpass("A", log), mpass("B", log, raises=True), mpass("C", log)], name="S")
    err = _run_failing([make("I", log)], seq)
    assert isinstance(err, irpass.PassError)
    assert err.pass_name == "B" and err.path == ["S[1]", "B"]
    assert type(err.__cause__) is Boom
    assert log == (
        enters(["I"])
        + [("I", "should_run", "S"), ("I", "before", "S")]
        + runs(["I"], "A")
        + [("I", "should_run", "B"), ("I", "before", "B"), ("pass", "body", "B")]
        + exits(["I"])
    )


@pytest.mark.parametrize("point", ["should_run", "before", "after", "body"])
def test_error_caught_inside_the_with_leaves_the_context_usable(point):
    log = []
    raise_in = None if point == "body" else (point, "A")
    pi = make("I", log, raise_in)
    with PassContext(instruments=[pi]) as ctx:
        with pytest.raises((Boom, irpass.PassError)) as info:
            mpass("A", log, raises=point == "body")(make_mod())
        assert PassContext.current() is ctx
        assert ctx.instruments == (pi,)
        cut = len(log)
        mpass("B", log)(make_mod())
        assert log[cut:] == runs(["I"], "B")
    if point == "body":
        assert isinstance(info.value, irpass.PassError) and type(info.value.__cause__) is Boom
    else:
        assert type(info.value) is Boom
    assert log[-1] == ("I", "exit", None)
    assert log.count(("I", "exit", None)) == 1 and log.count(("I", "enter", None)) == 1


def test_error_caught_inside_the_with_after_a_failing_sequential_child():
    log = []
    seq = Sequential([mpass("A", log), mpass("B", log)], name="S")
    with PassContext(instruments=[make("I", log, ("before", "B"))]) as ctx:
        with pytest.raises((Boom, irpass.PassError), match="I failed in before of B"):
            seq(make_mod())
        assert PassContext.current() is ctx and ctx.pass_position() == ""
        cut = len(log)
        Sequential([mpass("C", log)], name="T")(make_mod())
    assert log[cut:] == (
        [("I", "should_run", "T"), ("I", "before", "T")]
        + runs(["I"], "C")
        + [("I", "after", "T")]
        + exits(["I"])
    )


# -- override_instruments ---------------------------------------------------------------


def test_override_exits_old_then_enters_new_in_order():
    log = []
    c, d = make("C", log), make("D", log)
    with PassContext(instruments=[make("A", log), make("B", log)]) as ctx:
        mpass("P", log)(make_mod())
        ctx.override_instruments([c, d])
        assert ctx.instruments == (c, d)
        mpass("Q", log)(make_mod())
    assert log == (
        enters(["A", "B"])
        + runs(["A", "B"], "P")
        + exits(["A", "B"])
        + enters(["C", "D"])
        + runs(["C", "D"], "Q")
        + exits(["C", "D"])
    )


def test_override_on_the_default_context_outside_any_scope():
    log = []
    pi = make("G", log)
    ctx = PassContext.current()
    try:
        ctx.override_instruments([pi])
        assert PassContext.current() is ctx and ctx.instruments == (pi,)
        mpass("A", log)(make_mod())
        Sequential([mpass("B", log)], name="S")(make_mod())
    finally:
        ctx.override_instruments([])
    assert ctx.instruments == ()
    assert log == (
        enters(["G"])
        + runs(["G"], "A")
        + [("G", "should_run", "S"), ("G", "before", "S")]
        + runs(["G"], "B")
        + [("G", "after", "S")]
        + exits(["G"])
    )
    mpass("C", log)(make_mod())
    assert log[-1] == ("pass", "body", "C")


def test_override_with_none_removes_the_instruments():
    log = []
    with PassContext(instruments=[make("A", log)]) as ctx:
        ctx.override_instruments(None)
        assert ctx.instruments == ()
        mpass("P", log)(make_mod())
    assert log == enters(["A"]) + exits(["A"]) + [("pass", "body", "P")]


def test_override_with_an_enter_that_raises_clears_the_list():
    log = []
    ctx = PassContext.current()
    try:
        ctx.override_instruments([make("Old", log)])
        with pytest.raises(Boom, match="N2 failed in enter"):
            ctx.override_instruments([make("N1", log), make("N2", log, "enter"), make("N3", log)])
        assert ctx.instruments == ()
        assert PassContext.current() is ctx
        mpass("P", log)(make_mod())
    finally:
        ctx.override_instruments([])
    assert log == [
        ("Old", "enter", None),
        ("Old", "exit", None),
        ("N1", "enter", None),
        ("N2", "enter", None),
        ("N1", "exit", None),
        ("pass", "body", "P"),
    ]


def test_override_with_an_exit_that_raises_clears_the_list_and_enters_nobody():
    log = []
    ctx = PassContext.current()
    try:
        ctx.override_instruments([make("Broken", log, "exit")])
        with pytest.raises(Boom, match="Broken failed in exit"):
            ctx.override_instruments([make("New", log)])
        assert ctx.instruments == ()
        mpass("P", log)(make_mod())
    finally:
        ctx.override_instruments([])
    assert log == [("Broken", "enter", None), ("Broken", "exit", None), ("pass", "body", "P")]


def test_override_with_invalid_instruments_leaves_the_old_ones_in_place():
    log = []
    old = make("Old", log)
    with PassContext(instruments=[old]) as ctx:
        with pytest.raises(TypeError, match=r"instruments\[1\] is not a PassInstrument"):
            ctx.override_instruments([make("N", log), Recorder])
        assert ctx.instruments == (old,)
        mpass("P", log)(make_mod())
    assert log == enters(["Old"]) + runs(["Old"], "P") + exits(["Old"])


# -- nesting and requirements --------------------------------------------------------------


def test_inner_scope_uses_only_its_own_instruments():
    log = []
    with PassContext(instruments=[make("A", log)]) as outer:
        mpass("P1", log)(make_mod())
        with PassContext(instruments=[make("B", log)]) as inner:
            assert PassContext.current() is inner
            mpass("P2", log)(make_mod())
        assert PassContext.current() is outer
        mpass("P3", log)(make_mod())
    assert log == (
        enters(["A"])
        + runs(["A"], "P1")
        + enters(["B"])
        + runs(["B"], "P2")
        + exits(["B"])
        + runs(["A"], "P3")
        + exits(["A"])
    )


def test_inner_scope_without_instruments_silences_the_outer_ones():
    log = []
    with PassContext(instruments=[make("A", log)]):
        with PassContext():
            mpass("P", log)(make_mod())
    assert log == enters(["A"]) + [("pass", "body", "P")] + exits(["A"])


def test_requirements_are_instrumented_executions_before_the_pass_in_a_sequential():
    log = []
    register_pass(mpass("R1", log))
    register_pass(mpass("R2", log, required=["R1"]))
    p = mpass("P", log, required=["R2"])
    with PassContext(instruments=[make("I", log)]):
        Sequential([p], name="S")(make_mod())
    assert log == enters(["I"]) + [("I", "should_run", "S"), ("I", "before", "S")] + runs(
        ["I"], "R1"
    ) + runs(["I"], "R2") + runs(["I"], "P") + [("I", "after", "S")] + exits(["I"])


def test_a_pass_called_directly_runs_alone_under_the_instruments():
    # TVM: Pass::operator() never runs info.required; only Sequential does
    log = []
    register_pass(mpass("R1", log))
    register_pass(mpass("R2", log, required=["R1"]))
    p = mpass("P", log, required=["R2"])
    with PassContext(instruments=[make("I", log)]):
        p(make_mod())
    assert log == enters(["I"]) + runs(["I"], "P") + exits(["I"])


def test_a_direct_call_skipped_by_should_run_runs_nothing():
    log = []
    register_pass(mpass("R", log))
    p = mpass("P", log, required=["R"])
    with PassContext(instruments=[make("I", log, should_run=lambda n: n != "P")]):
        p(make_mod())
    assert log == enters(["I"]) + [("I", "should_run", "P")] + exits(["I"])


def test_requirements_run_in_a_sequential_even_when_should_run_skips_the_pass():
    log = []
    register_pass(mpass("R", log))
    p = mpass("P", log, required=["R"])
    with PassContext(instruments=[make("I", log, should_run=lambda n: n != "P")]):
        Sequential([p], name="S")(make_mod())
    # as in TVM, the Sequential runs R, then asks about P
    assert log == enters(["I"]) + [("I", "should_run", "S"), ("I", "before", "S")] + runs(
        ["I"], "R"
    ) + [("I", "should_run", "P"), ("I", "after", "S")] + exits(["I"])


def test_requirements_inside_a_sequential_follow_required_and_disabled():
    log = []
    register_pass(mpass("R", log))
    register_pass(mpass("D", log))
    seq = Sequential([mpass("P", log, required=["D", "R"])], name="S")
    pis = [make("I", log, should_run=False)]
    with PassContext(instruments=pis, required_pass=["S", "R", "P"], disabled_pass=["D"]):
        seq(make_mod())
    # D is disabled: no calls at all; S, R and P are required: no should_run
    assert log == enters(["I"]) + [
        ("I", "before", "S"),
        ("I", "before", "R"),
        ("pass", "body", "R"),
        ("I", "after", "R"),
        ("I", "before", "P"),
        ("pass", "body", "P"),
        ("I", "after", "P"),
        ("I", "after", "S"),
    ] + exits(["I"])


# -- @pass_instrument and instrument validation ----------------------------------------


def test_pass_instrument_on_a_class_with_some_methods():
    log = []

    @pass_instrument
    class OnlyBefore:
        def __init__(self, tag):
            self.tag = tag

        def run_before_pass(self, mod, info):
            log.append((self.tag, "before", info.name))

    @pass_instrument()
    class OnlyEnterExit:
        def enter_pass_ctx(self):
            log.append(("EE", "enter", None))

        def exit_pass_ctx(self):
            log.append(("EE", "exit", None))

    @pass_instrument
    class Nothing:
        pass

    ob, ee, nothing = OnlyBefore("OB"), OnlyEnterExit(), Nothing()
    for pi in (ob, ee, nothing):
        assert isinstance(pi, PassInstrument)
    assert ob.tag == "OB"
    assert (ob.name, ee.name, nothing.name) == ("OnlyBefore", "OnlyEnterExit", "Nothing")
    assert nothing.should_run(make_mod(), mpass("X", []).info) is True
    with PassContext(instruments=[ob, ee, nothing]):
        mpass("A", log)(make_mod())
    assert log == [("EE", "enter", None), ("OB", "before", "A"), ("pass", "body", "A")] + [
        ("EE", "exit", None)
    ]


def test_pass_instrument_on_a_subclass_of_a_decorated_class():
    # TVM's PIBroken(PI) pattern: decorate a subclass of an instrument class
    log = []

    @pass_instrument
    class PI:
        def __init__(self, id):
            self.id = id

        def enter_pass_ctx(self):
            log.append((self.id, "enter", None))

        def exit_pass_ctx(self):
            log.append((self.id, "exit", None))

    @pass_instrument
    class PIBroken(PI):
        def enter_pass_ctx(self):
            log.append((self.id, "enter", None))
            raise Boom("Just a dummy error")

    assert isinstance(PIBroken("x"), PassInstrument) and PIBroken("x").name == "PIBroken"
    with pytest.raises(Boom, match="dummy"):
        with PassContext(instruments=[PI("%1"), PIBroken("%2"), PI("%3")]):
            pass
    assert log == [("%1", "enter", None), ("%2", "enter", None), ("%1", "exit", None)]


def test_pass_instrument_refuses_a_non_class():
    with pytest.raises(TypeError, match="pass_instrument decorates a class"):
        pass_instrument(lambda: None)


def test_context_refuses_an_instrument_class():
    with pytest.raises(TypeError) as info:
        PassContext(instruments=[Recorder])
    message = str(info.value)
    assert "instruments[0]" in message and "not a PassInstrument" in message
    assert "pass an instance" in message


@pytest.mark.parametrize("bad", [object(), "PrintIR", 3, None])
def test_context_refuses_non_instruments(bad):
    class Plain:  # has the methods but is neither a subclass nor decorated
        def run_before_pass(self, mod, info):
            pass

    with pytest.raises(TypeError) as info:
        PassContext(instruments=[make("ok", []), bad, Plain()])
    message = str(info.value)
    assert "instruments[1] is not a PassInstrument" in message
    assert "pass_instrument" in message
    with pytest.raises(TypeError, match=r"instruments\[0\] is not a PassInstrument"):
        PassContext(instruments=[Plain()])


def test_context_refuses_a_single_instrument_not_in_a_list():
    with pytest.raises(TypeError, match="instruments must be a list"):
        PassContext(instruments=make("I", []))


# -- threads ----------------------------------------------------------------------------


def _run_in_threads(barrier, *targets):
    """Run each target in its own thread; re-raise the first error (a failing thread
    aborts the barrier so the others do not wait for it)."""
    errors = []

    def guarded(fn):
        def run():
            try:
                fn()
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
                barrier.abort()

        return run

    threads = [threading.Thread(target=guarded(fn)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_instruments_of_one_thread_are_not_called_by_another():
    log = []
    barrier = threading.Barrier(2, timeout=10)

    def one():
        with PassContext(instruments=[make("T1", log)]):
            barrier.wait()  # 1: thread 1 is inside its scope
            barrier.wait()  # 2: thread 2 ran its passes
            mpass("P1", log)(make_mod())

    def two():
        barrier.wait()  # 1
        assert PassContext.current().instruments == ()
        mpass("P2", log)(make_mod())
        with PassContext(instruments=[make("T2", log)]):
            mpass("P3", log)(make_mod())
        barrier.wait()  # 2

    _run_in_threads(barrier, one, two)
    assert log == (
        enters(["T1"])
        + [("pass", "body", "P2")]
        + enters(["T2"])
        + runs(["T2"], "P3")
        + exits(["T2"])
        + runs(["T1"], "P1")
        + exits(["T1"])
    )


def test_override_of_the_default_context_is_per_thread():
    log = []
    barrier = threading.Barrier(2, timeout=10)

    def one():
        ctx = PassContext.current()
        try:
            ctx.override_instruments([make("G1", log)])
            barrier.wait()  # 1: thread 1's default context has an instrument
            barrier.wait()  # 2: thread 2 ran its pass
        finally:
            ctx.override_instruments([])

    def two():
        barrier.wait()  # 1
        assert PassContext.current().instruments == ()
        mpass("P", log)(make_mod())
        barrier.wait()  # 2

    _run_in_threads(barrier, one, two)
    assert log == [("G1", "enter", None), ("pass", "body", "P"), ("G1", "exit", None)]
