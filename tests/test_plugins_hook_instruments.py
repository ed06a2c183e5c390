"""Hook-based instruments: a plugin's ``irpass_*_pass*`` hooks as one instrument per plugin.

The main check is generic: each scenario (success, an instrument raising at
each point, should_run saying no, a pass raising, required passes, nested and
overridden contexts) is run once with class instruments and once with plugins
implementing the same points as hooks; the call logs and the errors must be
identical. Logs hold ``(instrument name, point, pass name)`` tuples as in
tests/test_instrument_order.py; pass bodies log ``("pass", "body", name)``.
"""

from __future__ import annotations

import types
from dataclasses import dataclass

import irpass
import irpass.plugins
import pytest
from irpass.instrument import (
    PassInstrument,
    get_instrument,
    get_instrument_entry,
    list_instruments,
)
from irpass.plugins import Contribution, HookInstrument, hookimpl
from irpass.transform import PassContext, Sequential, module_pass


class Boom(RuntimeError):
    """What the recording instruments and passes raise when asked to."""


class _Behaviour:
    """Logs every call; raises Boom at ``raise_in`` (a point or a (point, pass) pair);
    ``should_run`` is the answer, or a callable ``pass name -> answer``."""

    def __init__(self, name, log, raise_in=None, should_run=True):
        self.name = name
        self.log = log
        self.raise_in = raise_in
        self.answer = should_run

    def _hit(self, point, pass_name=None):
        self.log.append((self.name, point, pass_name))
        if self.raise_in == point or self.raise_in == (point, pass_name):
            raise Boom(f"{self.name} failed in {point} of {pass_name}")

    def _should_run(self, info):
        self._hit("should_run", info.name)
        return self.answer(info.name) if callable(self.answer) else self.answer


class Recorder(_Behaviour, PassInstrument):
    """The behaviour as a class instrument."""

    def enter_pass_ctx(self):
        self._hit("enter")

    def exit_pass_ctx(self):
        self._hit("exit")

    def should_run(self, mod, info):
        return self._should_run(info)

    def run_before_pass(self, mod, info):
        self._hit("before", info.name)

    def run_after_pass(self, mod, info):
        self._hit("after", info.name)


class HookRecorder(_Behaviour):
    """The same behaviour as a plugin implementing the instrument hooks."""

    @hookimpl
    def irpass_enter_pass_ctx(self):
        self._hit("enter")

    @hookimpl
    def irpass_exit_pass_ctx(self):
        self._hit("exit")

    @hookimpl
    def irpass_should_run(self, mod, info):
        return self._should_run(info)

    @hookimpl
    def irpass_run_before_pass(self, mod, info):
        self._hit("before", info.name)

    @hookimpl
    def irpass_run_after_pass(self, mod, info):
        self._hit("after", info.name)


def class_instruments(specs, log):
    return [Recorder(name, log, *rest) for name, *rest in specs]


def hook_instruments(specs, log):
    made = []
    for name, *rest in specs:
        record = irpass.plugins.register(HookRecorder(name, log, *rest), name)
        assert record.status == "loaded", record.reason
        made.append(get_instrument(name))
    return made


def mpass(name, log, raises=False):
    def body(mod, ctx):
        log.append(("pass", "body", name))
        if raises:
            raise Boom(f"body of {name} failed")
        return mod

    return module_pass(body, opt_level=0, name=name)


def make_mod():
    x = irpass.var("x", shape=(4,))
    return irpass.IRModule.from_expr(irpass.Function([x], irpass.op.add(x, x)))


@pytest.fixture(autouse=True)
def _clean_default_context():
    default = PassContext.current()
    assert default.instruments == ()
    yield
    assert PassContext.current() is default
    if default.instruments:
        default.override_instruments([])
        pytest.fail("test left instruments on the default context")


# -- the same scenario with class and hook instruments ----------------------------------------


@dataclass
class Scenario:
    specs: list
    body: object
    raises: type | None = None


def _seq_body(passes):
    def body(insts, log, ctx_kwargs=None):
        seq = Sequential([mpass(p, log, raises=r) for p, r in passes], name="S")
        with PassContext(instruments=insts, **(ctx_kwargs or {})):
            seq(make_mod())

    return body


def _two_passes(insts, log):
    _seq_body([("P1", False), ("P2", False)])(insts, log)


def _second_pass_raises(insts, log):
    _seq_body([("P1", False), ("P2", True)])(insts, log)


def _single_pass(insts, log):
    with PassContext(instruments=insts):
        mpass("P1", log)(make_mod())


def _required_p1(insts, log):
    _seq_body([("P1", False), ("P2", False)])(insts, log, {"required_pass": ["P1"]})


def _disabled_p2(insts, log):
    _seq_body([("P1", False), ("P2", False)])(insts, log, {"disabled_pass": ["P2"]})


def _override(insts, log):
    ctx = PassContext()
    with ctx:
        mpass("P0", log)(make_mod())
        ctx.override_instruments(insts)
        mpass("P1", log)(make_mod())
        ctx.override_instruments([])
        mpass("P2", log)(make_mod())


def _nested(insts, log):
    with PassContext(instruments=insts[:1]):
        mpass("P1", log)(make_mod())
        with PassContext(instruments=insts[1:]):
            mpass("P2", log)(make_mod())
        with PassContext():
            mpass("P3", log)(make_mod())
        mpass("P4", log)(make_mod())


def _caught_inside(insts, log):
    with PassContext(instruments=insts):
        with pytest.raises(Boom):
            mpass("P1", log)(make_mod())
        mpass("P2", log)(make_mod())


def _skip(pass_name):
    return lambda p: p != pass_name


SCENARIOS = {
    "success": Scenario([("ia",), ("ib",)], _two_passes),
    "reversed order": Scenario([("ib",), ("ia",)], _two_passes),
    "enter raises": Scenario([("ia",), ("ib", "enter"), ("ic",)], _single_pass, Boom),
    "first enter raises": Scenario([("ia", "enter"), ("ib",)], _single_pass, Boom),
    "exit raises": Scenario([("ia",), ("ib", "exit"), ("ic",)], _single_pass, Boom),
    "should_run false": Scenario([("ia",), ("ib", None, _skip("P1")), ("ic",)], _two_passes),
    "should_run false on the sequential": Scenario(
        [("ia", None, _skip("S")), ("ib",)], _two_passes),
    "should_run raises": Scenario([("ia",), ("ib", ("should_run", "P2"))], _two_passes, Boom),
    "before raises": Scenario([("ia",), ("ib", ("before", "P1")), ("ic",)], _two_passes, Boom),
    "pass raises": Scenario([("ia",), ("ib",)], _second_pass_raises, irpass.PassError),
    "after raises": Scenario([("ia",), ("ib", ("after", "P1")), ("ic",)], _two_passes, Boom),
    "after raises on the sequential": Scenario([("ia", ("after", "S")), ("ib",)], _two_passes,
                                               Boom),
    "required pass is not asked should_run": Scenario(
        [("ia", None, False), ("ib",)], _required_p1),
    "disabled pass": Scenario([("ia",), ("ib",)], _disabled_p2),
    "override_instruments": Scenario([("ia",), ("ib",)], _override),
    "nested contexts": Scenario([("ia",), ("ib",)], _nested),
    "error caught inside the with": Scenario([("ia",), ("ib", ("after", "P1"))], _caught_inside),
}


def run_scenario(scenario, make):
    log = []
    insts = make(scenario.specs, log)
    try:
        scenario.body(insts, log)
    except Exception as exc:  # compared between the two runs
        return log, (type(exc), str(exc), type(exc.__cause__))
    return log, None


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_hook_instruments_follow_the_class_instrument_rules(manager, name):
    scenario = SCENARIOS[name]
    class_log, class_error = run_scenario(scenario, class_instruments)
    hook_log, hook_error = run_scenario(scenario, hook_instruments)
    # the scenario exercises what it says
    assert class_log, "the scenario made no call"
    if scenario.raises is None:
        assert class_error is None
    else:
        assert class_error is not None and issubclass(class_error[0], scenario.raises)
    assert hook_log == class_log
    assert hook_error == class_error


def test_the_comparison_sees_a_difference(manager):
    """Sanity check of the harness: different behaviours give different logs."""
    a = run_scenario(Scenario([("ia",), ("ib",)], _two_passes), class_instruments)
    b = run_scenario(Scenario([("ib",), ("ia",)], _two_passes), hook_instruments)
    assert a != b


# -- switching on ---------------------------------------------------------------------------


def test_a_hook_plugin_gets_an_instrument_named_after_it(manager):
    record = irpass.plugins.register(HookRecorder("watch", []), "watch")
    assert "watch" in list_instruments()
    entry = get_instrument_entry("watch")
    assert entry.owner == "watch"
    assert "hooks" in entry.description
    assert Contribution("instrument", "watch (hooks)") in record.contributions
    first, second = get_instrument("watch"), get_instrument("watch")
    assert isinstance(first, PassInstrument) and isinstance(first, HookInstrument)
    assert first is not second
    assert first.name == "watch" and "watch" in repr(first)


def test_a_plugin_without_instrument_hooks_gets_no_instrument(manager):
    plain = types.ModuleType("plain")
    plain.irpass_register_passes = hookimpl(lambda: [])
    record = irpass.plugins.register(plain)
    assert record.status == "loaded"
    assert "plain" not in list_instruments()
    assert record.contributions == ()


def test_hooks_are_not_called_unless_the_instrument_is_switched_on(manager):
    log = []
    irpass.plugins.register(HookRecorder("quiet", log), "quiet")
    other = Recorder("other", log)
    seq = Sequential([mpass("P1", log), mpass("P2", log)], name="S")
    with PassContext():
        seq(make_mod())
    with PassContext(instruments=[other]):
        seq(make_mod())
    seq(make_mod())
    assert [entry for entry in log if entry[0] == "quiet"] == []
    assert ("other", "before", "P1") in log
    assert PassContext.current().instruments == ()


def test_switched_on_hook_instrument_is_called(manager):
    log = []
    irpass.plugins.register(HookRecorder("loud", log), "loud")
    with PassContext(instruments=[get_instrument("loud")]):
        mpass("P1", log)(make_mod())
    assert log == [
        ("loud", "enter", None),
        ("loud", "should_run", "P1"),
        ("loud", "before", "P1"),
        ("pass", "body", "P1"),
        ("loud", "after", "P1"),
        ("loud", "exit", None),
    ]


def test_two_hook_plugins_run_in_the_order_of_the_instruments_list(manager):
    log = []
    for name in ("ha", "hb"):
        irpass.plugins.register(HookRecorder(name, log), name)
    mod = make_mod()
    for order in (["hb", "ha"], ["ha", "hb"]):
        log.clear()
        with PassContext(instruments=[get_instrument(n) for n in order]):
            mpass("P", log)(mod)
        assert [(who, point) for who, point, _ in log if point != "body"] == [
            (who, point)
            for point in ("enter", "should_run", "before", "after", "exit")
            for who in order
        ]


def test_hook_and_class_instruments_mix_in_list_order(manager):
    log = []
    irpass.plugins.register(HookRecorder("hook", log), "hook")
    with PassContext(instruments=[Recorder("cls1", log), get_instrument("hook"),
                                  Recorder("cls2", log)]):
        mpass("P", log)(make_mod())
    assert [who for who, point, _ in log if point == "before"] == ["cls1", "hook", "cls2"]
    assert [who for who, point, _ in log if point == "exit"] == ["cls1", "hook", "cls2"]


def test_hooks_may_take_fewer_arguments(manager):
    log = []
    plugin = types.ModuleType("few")

    @hookimpl
    def irpass_should_run(info):
        log.append(("should_run", info.name))
        return info.name != "Skipped"

    @hookimpl
    def irpass_run_before_pass(mod):
        log.append(("before", type(mod).__name__))

    @hookimpl
    def irpass_run_after_pass(info):
        log.append(("after", info.name))

    @hookimpl
    def irpass_exit_pass_ctx():
        log.append(("exit",))

    for fn in (irpass_should_run, irpass_run_before_pass, irpass_run_after_pass,
               irpass_exit_pass_ctx):
        setattr(plugin, fn.__name__, fn)
    record = irpass.plugins.register(plugin)
    assert record.status == "loaded", record.reason
    with PassContext(instruments=[get_instrument("few")]):
        mpass("Ran", [])(make_mod())
        mpass("Skipped", [])(make_mod())
    assert log == [
        ("should_run", "Ran"),
        ("before", "IRModule"),
        ("after", "Ran"),
        ("should_run", "Skipped"),
        ("exit",),
    ]


@pytest.mark.parametrize("answer", [None, True])
def test_should_run_hook_returning_none_or_true_lets_the_pass_run(manager, answer):
    log = []
    plugin = types.ModuleType("lenient")
    plugin.irpass_should_run = hookimpl(lambda mod, info: answer)
    irpass.plugins.register(plugin)
    with PassContext(instruments=[get_instrument("lenient")]):
        mpass("P", log)(make_mod())
    assert log == [("pass", "body", "P")]


def test_hook_instruments_see_the_modules_and_infos(manager):
    seen = []
    plugin = types.ModuleType("seer")
    plugin.irpass_run_before_pass = hookimpl(lambda mod, info: seen.append(("b", mod, info)))
    plugin.irpass_run_after_pass = hookimpl(lambda mod, info: seen.append(("a", mod, info)))
    irpass.plugins.register(plugin)
    mod_in = make_mod()
    mod_out = make_mod()
    p = module_pass(lambda m, ctx: mod_out, opt_level=0, name="Swap")
    with PassContext(instruments=[get_instrument("seer")]):
        assert p(mod_in) is mod_out
    assert [(k, m) for k, m, _ in seen] == [("b", mod_in), ("a", mod_out)]
    assert all(info is p.info for _, _, info in seen)


def test_unregistering_the_plugin_removes_its_instrument(manager):
    irpass.plugins.register(HookRecorder("gone", []), "gone")
    assert "gone" in list_instruments()
    manager.unregister("gone")
    assert "gone" not in list_instruments()
    with pytest.raises(KeyError, match="gone"):
        get_instrument("gone")


def test_hook_instrument_made_directly():
    calls = []
    inst = HookInstrument("direct", {
        "run_before_pass": (lambda info: calls.append(info.name), ("info",)),
        "should_run": (lambda: False, ()),
    })
    assert inst.name == "direct"
    with PassContext(instruments=[inst]):
        mpass("P", calls)(make_mod())
    assert calls == []  # should_run said no: neither before nor the body ran
    inst2 = HookInstrument("direct", {"run_before_pass": (lambda info: calls.append(info.name),
                                                          ("info",))})
    with PassContext(instruments=[inst2]):
        mpass("P", calls)(make_mod())
    assert calls == ["P", ("pass", "body", "P")]


@pytest.mark.parametrize("answer", [0, "no"])
def test_should_run_hook_returning_a_non_bool_is_an_error_like_a_class_instrument(
        manager, answer):
    plugin = types.ModuleType("sloppy")
    plugin.irpass_should_run = hookimpl(lambda mod, info: answer)
    irpass.plugins.register(plugin)
    log = []
    with pytest.raises(TypeError) as info:
        with PassContext(instruments=[get_instrument("sloppy")]):
            mpass("P", log)(make_mod())
    assert "'sloppy'" in str(info.value) and repr(answer) in str(info.value)
    assert log == []
