"""PassContext: scopes, per-thread stacks, config options and diagnostics."""

import io
import logging
import threading

import irpass
import numpy as np
import pytest
from irpass import op as O
from irpass.transform import (
    PassConfig,
    PassContext,
    Sequential,
    function_pass,
    module_pass,
    register_config_option,
)


def _mod():
    x = irpass.var("x", shape=(2, 3))
    y = irpass.var("y", shape=(2, 3))
    return irpass.IRModule.from_expr(irpass.Function([x, y], O.exp(O.multiply(x, y))))


# -- scopes -------------------------------------------------------------------------------


def test_with_scope_makes_the_context_current():
    outside = PassContext.current()
    ctx = PassContext(opt_level=3)
    assert PassContext.current() is outside
    with ctx as entered:
        assert entered is ctx
        assert PassContext.current() is ctx
        assert PassContext.current().opt_level == 3
    assert PassContext.current() is outside


def test_nested_scopes_innermost_wins_and_outer_comes_back():
    with PassContext(opt_level=1) as outer:
        with PassContext(opt_level=3) as inner:
            assert PassContext.current() is inner
            with PassContext(opt_level=0) as innermost:
                assert PassContext.current() is innermost
            assert PassContext.current() is inner
        assert PassContext.current() is outer


def test_scope_is_left_when_the_body_raises():
    outside = PassContext.current()
    with pytest.raises(KeyError):
        with PassContext(opt_level=1):
            raise KeyError("x")
    assert PassContext.current() is outside


def test_default_context_outside_any_scope():
    default = PassContext.current()
    assert default is PassContext.current()  # stable
    assert default.opt_level == 2
    assert default.required_pass == () and default.disabled_pass == ()
    assert default.instruments == ()
    with PassContext() as ctx:
        assert ctx is not default
    assert PassContext.current() is default


def test_default_context_is_per_thread():
    main_default = PassContext.current()
    found = []

    def worker():
        found.append((PassContext.current(), PassContext.current()))

    t = threading.Thread(target=worker)
    t.start()
    t.join(timeout=10)
    (a, b), = found
    assert a is b
    assert a is not main_default
    assert a.opt_level == 2


def test_scope_entered_in_one_thread_is_invisible_in_another():
    seen = []
    entered = threading.Event()
    checked = threading.Event()

    def worker():
        assert entered.wait(timeout=10)
        seen.append(PassContext.current())
        checked.set()

    t = threading.Thread(target=worker)
    t.start()
    with PassContext(opt_level=0) as ctx:
        entered.set()
        assert checked.wait(timeout=10)
    t.join(timeout=10)
    assert len(seen) == 1 and seen[0] is not ctx and seen[0].opt_level == 2


def test_threads_running_pipelines_see_only_their_own_context():
    barrier = threading.Barrier(2, timeout=10)
    results = {}
    errors = []

    def make_pipeline(log):
        def step(mod, ctx):
            barrier.wait()  # the other thread is inside its own scope, mid-pipeline
            log.append((PassContext.current().opt_level, ctx.opt_level))
            return mod

        return Sequential([module_pass(step, name=f"step{i}") for i in range(3)])

    def worker(level):
        log = []
        try:
            with PassContext(opt_level=level):
                barrier.wait()  # both scopes are entered before any pass runs
                make_pipeline(log)(_mod())
                log.append((PassContext.current().opt_level, None))
            log.append((PassContext.current().opt_level, "after"))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        results[level] = log

    threads = [threading.Thread(target=worker, args=(level,)) for level in (1, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    for level in (1, 3):
        assert results[level] == [(level, level)] * 3 + [(level, None), (2, "after")]


def test_leaving_scopes_out_of_order_is_an_error():
    a = PassContext(opt_level=1)
    b = PassContext(opt_level=2)
    a.__enter__()
    b.__enter__()
    try:
        with pytest.raises(RuntimeError):
            a.__exit__(None, None, None)
    finally:
        b.__exit__(None, None, None)
        a.__exit__(None, None, None)


# -- constructor validation ------------------------------------------------------------------


def test_context_fields():
    ctx = PassContext(opt_level=3, required_pass=["A", "B"], disabled_pass=("C",))
    assert ctx.opt_level == 3
    assert tuple(ctx.required_pass) == ("A", "B")
    assert tuple(ctx.disabled_pass) == ("C",)


@pytest.mark.parametrize("field", ["required_pass", "disabled_pass"])
def test_pass_name_list_given_as_a_str_is_refused(field):
    with pytest.raises(TypeError) as exc:
        PassContext(**{field: "Foo"})
    msg = str(exc.value)
    assert field in msg and "'Foo'" in msg and "['Foo']" in msg


@pytest.mark.parametrize("field", ["required_pass", "disabled_pass"])
def test_pass_name_list_of_non_str_is_refused(field):
    with pytest.raises(TypeError) as exc:
        PassContext(**{field: ["A", 3]})
    assert field in str(exc.value)


@pytest.mark.parametrize("level", ["2", 2.0, True, None])
def test_opt_level_must_be_an_int(level):
    with pytest.raises(TypeError) as exc:
        PassContext(opt_level=level)
    assert "opt_level" in str(exc.value)


# -- config ----------------------------------------------------------------------------------


def test_registered_option_is_accepted_and_read_by_passes():
    register_config_option("test.fold.max_elements", int, 64, "largest constant folded")
    got = []

    @module_pass
    def reader(mod, ctx):
        got.append(ctx.config.get("test.fold.max_elements", -1))
        return mod

    with PassContext(config={"test.fold.max_elements": 1024}) as ctx:
        assert ctx.config["test.fold.max_elements"] == 1024
        reader(_mod())
    reader(_mod())  # the default context: the registered default
    assert got == [1024, 64]


def test_int_is_converted_for_a_float_option():
    register_config_option("test.scale", float, 1.0)
    ctx = PassContext(config={"test.scale": 3})
    value = ctx.config["test.scale"]
    assert value == 3.0 and type(value) is float


def test_bool_is_refused_for_an_int_option():
    register_config_option("test.limit", int, 10)
    with pytest.raises(TypeError) as exc:
        PassContext(config={"test.limit": True})
    msg = str(exc.value)
    assert "'test.limit'" in msg and "int" in msg and "bool" in msg


def test_bool_option_accepts_bool():
    register_config_option("test.enable", bool, False)
    assert PassContext(config={"test.enable": True}).config["test.enable"] is True


def test_unknown_config_key_suggests_close_matches():
    register_config_option("test.fold.max_elements", int, 64)
    with pytest.raises(ValueError) as exc:
        PassContext(config={"test.fold.max_element": 10})
    msg = str(exc.value)
    assert "'test.fold.max_element'" in msg and "'test.fold.max_elements'" in msg


def test_wrong_config_type_names_the_key_and_the_expected_type():
    register_config_option("test.name", str, "x")
    with pytest.raises(TypeError) as exc:
        PassContext(config={"test.name": 5})
    msg = str(exc.value)
    assert "'test.name'" in msg and "str" in msg and "5" in msg


def test_option_with_several_types():
    register_config_option("test.size", (int, str), 1)
    assert PassContext(config={"test.size": "auto"}).config["test.size"] == "auto"
    assert PassContext(config={"test.size": 4}).config["test.size"] == 4
    with pytest.raises(TypeError) as exc:
        PassContext(config={"test.size": [1]})
    assert "int or str" in str(exc.value)


def test_config_must_be_a_mapping():
    with pytest.raises(TypeError) as exc:
        PassContext(config=[("a", 1)])
    assert "config" in str(exc.value)


def test_config_is_read_only():
    register_config_option("test.limit", int, 10)
    ctx = PassContext(config={"test.limit": 3})
    assert isinstance(ctx.config, PassConfig)
    with pytest.raises(TypeError):
        ctx.config["test.limit"] = 4
    with pytest.raises(TypeError):
        ctx.config["test.other"] = 4
    with pytest.raises((TypeError, AttributeError)):
        del ctx.config["test.limit"]
    assert ctx.config["test.limit"] == 3


def test_config_get_returns_registered_default_or_fallback():
    register_config_option("test.limit", int, 10)
    ctx = PassContext()
    assert ctx.config.get("test.limit", 99) == 10
    assert ctx.config["test.limit"] == 10
    assert ctx.config.get("test.unregistered", 99) == 99
    with pytest.raises(KeyError):
        ctx.config["test.unregistered"]  # noqa: B018
    assert PassContext(config={"test.limit": 0}).config.get("test.limit", 99) == 0


def test_config_get_falls_back_when_the_option_has_no_default():
    # A default of None means "not set" (ConfigOption docs): a pass's own fallback applies.
    register_config_option("test.max_elements", int, None, "not set unless given")
    ctx = PassContext()
    assert ctx.config.get("test.max_elements", 1024) == 1024
    assert PassContext(config={"test.max_elements": 8}).config.get("test.max_elements", 1) == 8


def test_config_option_registration_rules():
    register_config_option("test.same", int, 1, owner="pkg_a")
    register_config_option("test.same", int, 1, owner="pkg_a")  # same declaration: fine
    with pytest.raises(ValueError) as exc:
        register_config_option("test.same", str, "1", owner="pkg_b")
    msg = str(exc.value)
    assert "'test.same'" in msg and "pkg_a" in msg and "pkg_b" in msg
    assert PassContext(config={"test.same": 2}).config["test.same"] == 2  # still an int option


def test_config_option_default_must_match_its_type():
    with pytest.raises(TypeError) as exc:
        register_config_option("test.bad_default", int, "ten")
    assert "'test.bad_default'" in str(exc.value)


def test_config_option_type_must_be_a_type():
    with pytest.raises(TypeError) as exc:
        register_config_option("test.bad_type", "int", 1)
    assert "value_type" in str(exc.value)


# -- diagnostics -----------------------------------------------------------------------------


def _first_multiply(func):
    found = []
    irpass.ir.post_order_visit(
        func.body,
        lambda e: found.append(e)
        if isinstance(e, irpass.Call) and e.op is irpass.Op.get("multiply")
        else None,
    )
    return found[0]


def test_warning_is_collected_with_pass_name_and_expr_and_the_pass_continues(caplog):
    reached = []

    @function_pass(name="Warner")
    def warner(func, mod, ctx):
        node = _first_multiply(func)
        ctx.diag.warning("multiply could be fused", expr=node)
        reached.append(node)
        return irpass.Function(func.params, O.exp(func.body), attrs=func.attrs)

    mod = _mod()
    with caplog.at_level(logging.WARNING, logger="irpass.diag"):
        with PassContext() as ctx:
            out = warner(mod)
    a = np.full((2, 3), 0.5, dtype="float32")
    np.testing.assert_allclose(irpass.evaluate(out, a, a), np.exp(np.exp(a * a)), rtol=1e-5)
    (diag,) = ctx.diag.warnings
    assert ctx.diag.errors == []
    assert diag.severity == "warning"
    assert diag.pass_name == "Warner"
    assert diag.expr is reached[0]
    assert diag.message == "multiply could be fused"
    assert "multiply could be fused" in caplog.text


def test_error_diagnostic_fails_the_pass_after_it_returns():
    progress = []

    @module_pass(name="Checker")
    def checker(mod, ctx):
        node = _first_multiply(mod["main"])
        ctx.diag.error("cannot handle this multiply", expr=node)
        ctx.diag.error("second problem")
        progress.append("finished")
        return mod

    mod = _mod()
    with PassContext() as ctx:
        with pytest.raises(irpass.PassError) as exc:
            checker(mod)
    err = exc.value
    assert progress == ["finished"]  # reported, not raised at the first problem
    assert err.pass_name == "Checker"
    assert [d.message for d in err.diagnostics] == ["cannot handle this multiply", "second problem"]
    assert all(d.pass_name == "Checker" for d in err.diagnostics)
    msg = str(err)
    assert "Checker" in msg
    assert "cannot handle this multiply" in msg and "second problem" in msg
    assert "multiply(%x, %y)" in msg  # the description of the offending expression
    assert [d.message for d in ctx.diag.errors] == [d.message for d in err.diagnostics]


def test_error_diagnostic_inside_sequential_names_the_position():
    @module_pass(name="Checker")
    def checker(mod, ctx):
        ctx.diag.error("bad")
        return mod

    seq = Sequential([irpass.transform.Identity(), checker], name="opt")
    with PassContext():
        with pytest.raises(irpass.PassError) as exc:
            seq(_mod())
    assert exc.value.path == ["opt[1]", "Checker"]
    assert "opt[1] > Checker" in str(exc.value)


def test_earlier_errors_do_not_fail_later_passes_in_the_same_context():
    @module_pass(name="Reporter")
    def reporter(mod, ctx):
        ctx.diag.error("bad")
        return mod

    @module_pass(name="Clean")
    def clean(mod, ctx):
        ctx.diag.warning("just a note")
        return mod

    mod = _mod()
    with PassContext() as ctx:
        with pytest.raises(irpass.PassError):
            reporter(mod)
        assert clean(mod) is mod
    assert [d.pass_name for d in ctx.diag.diagnostics] == ["Reporter", "Clean"]


def test_diagnostics_of_nested_passes_name_the_inner_pass():
    @module_pass(name="Inner")
    def inner(mod, ctx):
        ctx.diag.warning("from inner")
        return mod

    @module_pass(name="Outer")
    def outer(mod, ctx):
        mod = inner(mod)
        ctx.diag.warning("from outer")
        return mod

    with PassContext() as ctx:
        outer(_mod())
    assert [(d.pass_name, d.message) for d in ctx.diag.warnings] == [
        ("Inner", "from inner"),
        ("Outer", "from outer"),
    ]


def test_context_state_is_clean_after_a_failing_pipeline():
    def body(mod, ctx):
        raise ValueError("boom")

    seq = Sequential(
        [irpass.transform.Identity(), Sequential([module_pass(body, name="Bad")], name="inner")],
        name="outer",
    )
    mod = _mod()
    with PassContext() as ctx:
        with pytest.raises(irpass.PassError):
            seq(mod)
        assert ctx.pass_position() == ""
        stream = io.StringIO()
        irpass.transform.PrintIR(stream=stream)(mod)
        ctx.diag.warning("outside any pass")
    header = stream.getvalue().splitlines()[0]
    assert "outer" not in header and "inner" not in header
    assert ctx.diag.warnings[-1].pass_name is None
