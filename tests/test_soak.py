"""The soak (irpass.testing.soak): a bounded slice of it finds nothing on today's passes,
it reports a planted miscompile (and a crash, a broken and an ill-typed result, a pass
that edits its input, one that hangs) with a shrunk reproducer, and the generator gives
every pass the issue names something to change."""

from __future__ import annotations

import io
import re
import time

import irpass
import numpy as np
import pytest
from irpass import op
from irpass.ir import (
    Call,
    ExprMutator,
    Function,
    IRModule,
    Let,
    Op,
    Var,
    parse,
    structural_equal,
    var,
)
from irpass.ir.expr import _set
from irpass.testing import soak
from irpass.testing.programs import random_args, random_module
from irpass.testing.soak import SoakConfig, check_program, run_soak, shrink
from irpass.transform import PassContext, function_pass, get_pass, module_pass, register_pass

# -- the slice CI runs -------------------------------------------------------------------------

SLICE_SEED = 20240
SLICE_PROGRAMS = 400  # about 60 s of CPU (29 configurations each): the budget CI gives it
# in chunks, so that pytest-xdist's workers share the slice instead of one running it last
SLICE_CHUNKS = 4


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(SLICE_CHUNKS))
def test_soak_slice_finds_nothing(chunk):
    programs = SLICE_PROGRAMS // SLICE_CHUNKS
    out = io.StringIO()
    report = run_soak(programs, SLICE_SEED + chunk * programs, stream=out, shrink_budget=20)
    assert report.programs == programs
    assert report.runs == programs * len(soak.std_configs())
    assert report.ok, out.getvalue() + "\n" + report.summary()


def test_std_configs_cover_every_std_pass_and_the_pipelines():
    names = [c.name for c in soak.std_configs()]
    assert len(names) == len(set(names)) >= 26
    std = [n for n in irpass.transform.list_passes()
           if irpass.transform.registry.get_pass_entry(n).owner == "std"]
    for name in std:
        assert any(c == name or c.startswith(name + "[") for c in names), name
    assert {"ConvertLayout[NHWC]", "ConvertLayout[NCHW]", "AlterOpLayout",
            "AlterOpLayout[NHWC]"} <= set(names)
    assert {f"default_pipeline({k})" for k in (1, 2, 3)} <= set(names)


# -- planted bugs ---------------------------------------------------------------------------


class _AddToSubtract(ExprMutator):
    def visit_call(self, call):
        new = super().visit_call(call)
        if new.op is Op.get("add"):
            return Call(Op.get("subtract"), new.args)
        return new


@pytest.fixture
def planted():
    """``PlantedMiscompile``: turns every ``add`` into ``subtract`` (registered for the test)."""

    @function_pass(opt_level=0, name="PlantedMiscompile")
    def miscompile(func, mod, ctx):
        return _AddToSubtract().visit(func)

    register_pass(miscompile)
    return SoakConfig.for_pass("PlantedMiscompile")


def test_a_planted_miscompile_is_reported_with_a_shrunk_reproducer(planted):
    out = io.StringIO()
    report = run_soak(8, 0, configs=[planted], stream=out, shrink_budget=30)
    assert not report.ok and report.programs == 8 and report.runs == 8
    failure = report.failures[0]
    assert failure.config == "PlantedMiscompile" and failure.problem.kind == "wrong-result"
    assert failure.signature.startswith("PlantedMiscompile: wrong-result: output")
    # the reproducer is a program in the text format, smaller than the generated one,
    # that still fails the same way
    small = parse(failure.program)
    assert failure.nodes < failure.original_nodes
    assert "add(" in failure.program
    again = check_program(small, planted, [random_args(small, 0)])
    assert again is not None and again.kind == "wrong-result"
    text = out.getvalue()
    assert f"FAIL seed={failure.seed} config=PlantedMiscompile kind=wrong-result" in text
    assert f"--seed {failure.seed} --programs 1 --config 'PlantedMiscompile'" in text
    assert "differs at" in text
    assert report.summary().startswith("soak: 8 programs x 1 configs = 8 runs in ")
    assert f"{len(report.failures)} failures" in report.summary()


def test_the_reproducer_of_a_planted_miscompile_is_small(planted):
    report = run_soak(8, 0, configs=[planted], shrink_budget=30)
    sizes = [f.nodes for f in report.failures]
    # a call of add and its operands, in a function: a handful of nodes
    assert min(sizes) <= 8, [f.program for f in report.failures]


def test_the_failing_seed_alone_reproduces_it(planted):
    report = run_soak(8, 0, configs=[planted], shrink_budget=0)
    seed = report.failures[0].seed
    again = run_soak(1, seed, configs=[planted], shrink_budget=0)
    assert [f.signature for f in again.failures] == [report.failures[0].signature]
    # without shrinking, the reproducer is the generated program itself
    assert structural_equal(parse(again.failures[0].program), random_module(seed))


def _first_program_with(text: str) -> int:
    return next(s for s in range(100) if text in str(random_module(s)))


def test_a_pass_that_raises_is_reported():
    @module_pass(opt_level=0, name="PlantedCrash")
    def crash(mod, ctx):
        if "tanh(" in str(mod):
            raise KeyError("planted")
        return mod

    register_pass(crash)
    seed = _first_program_with("tanh(")
    report = run_soak(1, seed, configs=[SoakConfig.for_pass("PlantedCrash")], shrink_budget=10)
    (failure,) = report.failures
    assert failure.problem.kind == "raises"
    assert failure.problem.error_type == "PassError<KeyError>"
    assert "planted" in failure.problem.message
    assert "tanh(" in failure.program


def test_an_ill_formed_result_is_reported():
    @module_pass(opt_level=0, name="PlantedDoubleBinding")
    def double(mod, ctx):
        main = mod["main"]
        v = Var("dup")
        body = Let(v, main.body, Let(v, v, v))  # %dup bound twice
        return mod.with_function("main", Function(main.params, body))

    register_pass(double)
    report = run_soak(1, 0, configs=[SoakConfig.for_pass("PlantedDoubleBinding")],
                      shrink_budget=5)
    (failure,) = report.failures
    assert failure.problem.kind == "ill-formed"
    assert "bound more than once" in failure.problem.message


def test_an_ill_typed_result_is_reported():
    @module_pass(opt_level=0, name="PlantedIllTyped")
    def ill_typed(mod, ctx):
        main = mod["main"]
        bad = op.add(irpass.const(np.zeros((2, 3), "float32")),
                     irpass.const(np.zeros((4,), "float32")))
        return mod.with_function("main", Function(main.params, irpass.Tuple([main.body, bad])))

    register_pass(ill_typed)
    report = run_soak(1, 0, configs=[SoakConfig.for_pass("PlantedIllTyped")],
                      shrink_budget=5)
    (failure,) = report.failures
    assert failure.problem.kind == "ill-typed"
    assert "broadcast" in failure.problem.message


def test_a_pass_that_edits_its_input_is_reported():
    @module_pass(opt_level=0, name="PlantedEdit")
    def edit(mod, ctx):
        main = mod["main"]
        _set(main, "body", op.negative(main.body))  # behind the IR's back
        return mod

    register_pass(edit)
    mod = random_module(0)
    args = [random_args(mod, 0)]
    problem = check_program(mod, SoakConfig.for_pass("PlantedEdit"), args)
    # immutable_module catches it in the pass (or the soak's own check does)
    assert problem is not None and (
        problem.kind == "changed-input" or "changed its input" in problem.message)


def test_a_pass_that_hangs_is_reported_as_a_timeout():
    finished = []

    @module_pass(opt_level=0, name="PlantedHang")
    def hang(mod, ctx):
        try:
            time.sleep(30)
        except Exception:  # noqa: S110 - a pass swallowing exceptions must not hide the hang
            pass
        finished.append(True)
        return mod

    register_pass(hang)
    report = run_soak(1, 0, configs=[SoakConfig.for_pass("PlantedHang")], timeout=0.3)
    (failure,) = report.failures
    assert failure.problem.kind == "timeout"
    # interrupted in its sleep, not waited for: the rest of the pass never ran
    assert not finished


def test_ignored_signatures_are_counted_apart(planted):
    report = run_soak(4, 0, configs=[planted], ignore=[r"PlantedMiscompile: wrong-result"])
    assert report.ok and report.ignored
    assert "0 failures" in report.summary() and f"{len(report.ignored)} ignored" in \
        report.summary()


def test_jobs_find_the_same_failures(planted):
    one = run_soak(6, 0, configs=[planted], shrink_budget=0)
    two = run_soak(6, 0, configs=[planted], shrink_budget=0, jobs=2)
    assert [(f.seed, f.signature) for f in two.failures] == [
        (f.seed, f.signature) for f in one.failures]


# -- the command line -----------------------------------------------------------------------


def test_main_exit_status_and_summary(capsys, planted, monkeypatch):
    assert soak.main(["--programs", "3", "--seed", "5", "--config", "FoldConstant"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert re.fullmatch(r"soak: 3 programs x 1 configs = 3 runs in [\d.]+ s: 0 failures "
                        r"\(0 signatures\), 0 ignored", last)
    monkeypatch.setattr(soak, "std_configs", lambda: [planted])
    assert soak.main(["--programs", "4", "--shrink-budget", "0"]) == 1
    text = capsys.readouterr().out
    assert "FAIL seed=" in text and "failures by signature:" in text


def test_main_caps_memory_while_it_runs_and_gives_the_old_limit_back(monkeypatch):
    # main in-process (as here) once left a 4 GB cap on the whole test session
    resource = pytest.importorskip("resource")
    before = resource.getrlimit(resource.RLIMIT_AS)
    seen = []

    def fake_run_soak(*args, **kwargs):
        seen.append(resource.getrlimit(resource.RLIMIT_AS)[0])
        return soak.SoakReport()

    monkeypatch.setattr(soak, "run_soak", fake_run_soak)
    assert soak.main(["--programs", "1", "--memory-limit", "3"]) == 0
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    if before[0] == resource.RLIM_INFINITY or before[0] > 3 * 2**30:
        assert seen == [3 * 2**30]
    with pytest.raises(SystemExit):  # a usage error on the way out restores it too
        soak.main(["--config", "NoSuchPass"])
    assert resource.getrlimit(resource.RLIMIT_AS) == before


def test_main_lists_configs_and_refuses_unknown_ones(capsys):
    assert soak.main(["--list-configs"]) == 0
    listed = capsys.readouterr().out.split()
    assert listed == [c.name for c in soak.std_configs()]
    with pytest.raises(SystemExit) as exc:
        soak.main(["--config", "NoSuchPass"])
    assert exc.value.code == 2
    assert "unknown config 'NoSuchPass'" in capsys.readouterr().err


# -- pieces -------------------------------------------------------------------------------


def test_compare_outputs_tolerates_rounding_not_errors():
    a = np.linspace(-3, 3, 12, dtype="float32").reshape(3, 4)
    assert soak.compare_outputs(a * (1 + 3e-7), a) is None
    assert soak.compare_outputs((a, np.int32(3) * np.ones(2, "int32")),
                                (a, 3 * np.ones(2, "int32"))) is None
    bad = a.copy()
    bad[1, 2] += 0.01
    assert "differs at 1 of 12" in soak.compare_outputs(bad, a)
    assert "was float32[3, 4], now float64" in soak.compare_outputs(a.astype("float64"), a)
    assert soak.compare_outputs(np.ones(2, "int32"), np.array([1, 2], "int32")) is not None


def test_shrink_keeps_the_property_and_cuts_the_rest():
    seed = next(s for s in range(100) if "nn.conv2d(" in str(random_module(s)["main"]))
    mod = random_module(seed)

    def has_conv(m):
        return "nn.conv2d(" in str(m["main"])

    small = shrink(mod, has_conv, budget=30)
    assert has_conv(small) and irpass.ir.well_formed(small)
    assert len(str(small)) < len(str(mod))
    # nothing left but the convolution and what it needs
    names = set(re.findall(r"\b([a-z_.0-9]+)\(", str(small).split("#[metadata]")[0]))
    assert names & set(irpass.ir.list_ops()) == {"nn.conv2d"}, str(small)


def test_signature_blanks_numbers_and_names():
    p1 = soak.Problem("ill-formed", "ill-formed program (1 problem):\n"
                      "  - %y_1 is bound more than once: by `let %y_1 = ...` in @main")
    p2 = soak.Problem("ill-formed", "ill-formed program (2 problems):\n"
                      "  - %x is bound more than once: by `let %x = ...` in @helper")
    assert soak.signature_of("C", p1) == soak.signature_of("C", p2)
    assert "is bound more than once" in soak.signature_of("C", p1)
    # where it happened (quoted code) is not what happened
    p3 = soak.Problem("ill-formed", "%t is used outside the scope of its binding: used at "
                      "`tanh(%t)` in @main, but bound by its let `let %t = <abs(...)>; %t`")
    p4 = soak.Problem("ill-formed", "%v is used outside the scope of its binding: used at "
                      "`(%v, %w)` in @main, but bound by its let `let %v = <exp(...)>; %v`")
    assert soak.signature_of("C", p3) == soak.signature_of("C", p4)
    assert soak.signature_of("C", p3) != soak.signature_of("D", p3)


# -- the generator gives each pass work ---------------------------------------------------------

CHANGED_BY = [
    ("SimplifyInference", {}),
    ("FoldScaleAxis", {}),
    ("Inline", {}),
    ("ConvertLayout", {"desired_layouts": soak.NHWC_LAYOUTS}),
    ("AlterOpLayout", {"config": {"std.AlterOpLayout.desired_layouts": "nn.conv2d=NHWC"}}),
    ("FuseOps", {}),
    ("EliminateCommonSubexpr", {}),
    ("DeadCodeElimination", {}),
    ("FoldConstant", {}),
    ("SimplifyExpr", {}),
]


@pytest.fixture(scope="module")
def typed_programs():
    """200 seeded programs, each with its InferType'd version (what the pass starts from)."""
    out = []
    for seed in range(200):
        mod = random_module(seed)
        with PassContext(opt_level=3):
            out.append((mod, get_pass("InferType")(mod)))
    return out


@pytest.mark.parametrize(("name", "how"), CHANGED_BY, ids=[n for n, _ in CHANGED_BY])
def test_each_pass_changes_some_generated_program(name, how, typed_programs):
    args = (how["desired_layouts"],) if "desired_layouts" in how else ()
    changed = 0
    with PassContext(opt_level=3, config=how.get("config", {})):
        p = irpass.transform.Sequential([get_pass("InferType"), get_pass(name, *args)])
        for mod, typed in typed_programs:
            out = p(mod)
            changed += not structural_equal(out, typed)
    assert changed >= 1, f"{name} changed none of 200 generated programs"


def test_shrink_handles_a_recursive_let():
    # replacing a let by its body substitutes the var by its value: never for a function
    # that calls itself through that var (the substitution would not end)
    mod = parse(
        """
        #[version = "irpass 0.1"]
        def @main(%x: Tensor[(2,), float32]) {
          let %f: fn (Tensor[(), int32], Tensor[(2,), float32]) -> Tensor[(2,), float32] =
            fn (%n: Tensor[(), int32], %y: Tensor[(2,), float32]) -> Tensor[(2,), float32] {
              if (greater(%n, 0i32)) { %f(subtract(%n, 1i32), tanh(%y)) } else { %y }
            };
          negative(%f(2i32, %x))
        }
        """
    )
    small = shrink(mod, lambda m: "negative(" in str(m["main"]), budget=20)
    assert "negative(" in str(small["main"])
    assert "greater(" not in str(small["main"])  # the loop went, the negative stayed


def test_generated_pooling_windows_always_read_data():
    from irpass.testing.programs import _windows_touch_data

    x = var("x", shape=(1, 2, 1, 5))
    # dilation 2 over one row padded by 1 on each side: the window rows are -1 and 1
    bad = op.nn.max_pool2d(x, pool_size=(2, 1), dilation=(2, 1), padding=(1, 0, 1, 0))
    ok = op.nn.max_pool2d(x, pool_size=(2, 1), padding=(1, 0, 0, 0))
    typed_bad = irpass.ir.infer_type(IRModule.from_expr(Function([x], bad)))["main"].body
    typed_ok = irpass.ir.infer_type(IRModule.from_expr(Function([x], ok)))["main"].body
    assert not _windows_touch_data(x.type_annotation.shape, typed_bad.checked_type.shape,
                                   bad.attrs)
    assert _windows_touch_data(x.type_annotation.shape, typed_ok.checked_type.shape, ok.attrs)
    out = irpass.evaluate(IRModule.from_expr(Function([x], bad)), np.ones((1, 2, 1, 5), "f4"))
    assert np.isneginf(out).any()  # what the generator must not build


def test_a_result_that_does_not_read_back_is_reported(monkeypatch):
    # stands in for a printer or parser bug on what a pass produced
    mod = random_module(_first_program_with("tanh("))

    def broken_parse(text):
        raise irpass.ParseError("planted", 1, 1)

    monkeypatch.setattr(soak, "parse", broken_parse)
    problem = check_program(mod, SoakConfig.for_pass("SimplifyExpr"), [random_args(mod, 0)])
    if problem is None:  # SimplifyExpr had nothing to do: another pass that always rewrites
        problem = check_program(mod, SoakConfig.for_pass("ToANormalForm"),
                                [random_args(mod, 0)])
    assert problem is not None and problem.kind == "text-roundtrip"
    assert problem.error_type == "ParseError" and "planted" in problem.message
