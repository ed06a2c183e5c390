"""The example pass pack (contrib/irpass-example-pack), loaded in-process from its source tree.

The pack is registered with ``irpass.plugins.register`` exactly as its entry
point would be, under the plugin name ``example``; the pip-installed path is
covered by tests/test_integration_venv.py.
"""

from __future__ import annotations

import importlib
import io
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import irpass
import irpass.plugins
import numpy as np
import pytest
from irpass import Function, IRModule, PassError, const, op, var
from irpass.instrument import get_instrument, list_instruments
from irpass.testing import models, random_inputs
from irpass.transform import (
    PassContext,
    Sequential,
    get_pass,
    get_pass_entry,
    pipeline_plan,
    register_pass,
)
from irpass.transform.pipeline import PipelineInsertion, add_pipeline_insertion

PACK = Path(__file__).resolve().parents[1] / "contrib" / "irpass-example-pack"


@pytest.fixture
def pack(monkeypatch):
    """The pack's modules, with its plugin registered as ``example`` for the test."""
    monkeypatch.syspath_prepend(str(PACK / "src"))
    plugin = importlib.import_module("irpass_example_pack.plugin")
    passes = importlib.import_module("irpass_example_pack.passes")
    instrument = importlib.import_module("irpass_example_pack.instrument")
    manager = irpass.plugins.get_plugin_manager()
    mine = manager.plugin("example") is None  # else the pack is pip-installed here: use that
    if mine:
        record = irpass.plugins.register(plugin, name="example")
        assert record.status == "loaded", record.reason
    yield type("Pack", (), {"plugin": plugin, "passes": passes, "instrument": instrument})
    if mine:
        manager.unregister("example")


def zeros(*shape: int):
    return const(np.zeros(shape, dtype="float32"))


def ones(*shape: int):
    return const(np.ones(shape, dtype="float32"))


def run(p, mod: IRModule, **config) -> IRModule:
    with PassContext(opt_level=3, config=config):
        return p(mod)


def op_count(mod: IRModule, name: str) -> int:
    return sum(counts.get(name, 0) for counts in _count(mod).values())


def _count(mod: IRModule) -> dict[str, dict[str, int]]:
    return importlib.import_module("irpass_example_pack.passes").count_ops(mod)


def assert_same_outputs(before: IRModule, after: IRModule, seeds=(0, 1, 2)) -> None:
    for seed in seeds:
        inputs = random_inputs(before, seed)
        expected = irpass.evaluate(before, **inputs)
        got = irpass.evaluate(after, **inputs)
        np.testing.assert_array_equal(got, expected, err_msg=f"seed {seed}")


def neutral_chain() -> IRModule:
    """relu(1 * ((x * 1) + 0) + 0) + b, with a (4,) zero that must survive (it broadcasts b)."""
    x = var("x", shape=(3, 4))
    b = var("b", shape=(4,))
    y = op.add(op.multiply(x, ones(3, 4)), zeros(3, 4))
    y = op.add(op.multiply(ones(), y), zeros(1, 4))
    y = op.nn.relu(y)
    bias = op.add(b, zeros(3, 4))  # (4,) + (3, 4) -> (3, 4): not b's type, stays
    return IRModule.from_expr(Function([x, b], op.add(y, bias)))


# -- FoldAddZero -------------------------------------------------------------------------


@pytest.mark.parametrize("build", [
    lambda x: op.add(x, zeros(2, 3)),
    lambda x: op.add(zeros(2, 3), x),
    lambda x: op.multiply(x, ones(2, 3)),
    lambda x: op.multiply(ones(2, 3), x),
    lambda x: op.add(x, zeros()),        # a scalar zero broadcasts to x: still x's type
    lambda x: op.multiply(ones(1, 3), x),
], ids=["x+0", "0+x", "x*1", "1*x", "x+scalar0", "1row*x"])
def test_fold_add_zero_reduces_to_x(pack, build):
    x = var("x", shape=(2, 3))
    mod = IRModule.from_expr(Function([x], op.nn.relu(build(x))))
    out = run(pack.passes.FoldAddZero(), mod)
    # typed like the pass's output (the pass infers types; InferType fills the annotations)
    expected = irpass.transform.InferType()(IRModule.from_expr(Function([x], op.nn.relu(x))))
    irpass.assert_structural_equal(out, expected)
    assert_same_outputs(mod, out)


@pytest.mark.parametrize("build", [
    lambda x: op.add(x, zeros(4, 2, 3)),      # broadcasts x to (4, 2, 3)
    lambda x: op.multiply(ones(5, 1, 1), x),  # broadcasts x to (5, 2, 3)
    lambda x: op.add(x, const(np.array([[0, 0, 1]] * 2, dtype="float32"))),  # not all zero
    lambda x: op.multiply(x, zeros(2, 3)),    # x * 0 is not x
    lambda x: op.subtract(x, zeros(2, 3)),    # not an op the pass knows
    lambda x: op.add(x, const(np.full((2, 3), np.nan, dtype="float32"))),
], ids=["broadcast-add", "broadcast-mul", "not-all-zero", "times-zero", "subtract", "nan"])
def test_fold_add_zero_leaves_other_calls(pack, build):
    x = var("x", shape=(2, 3))
    mod = IRModule.from_expr(Function([x], build(x)))
    out = run(pack.passes.FoldAddZero(), mod)
    assert out is mod  # nothing rewritten: the very same module comes back


def test_fold_add_zero_keeps_broadcasting_operand_and_semantics(pack):
    mod = neutral_chain()
    out = run(pack.passes.FoldAddZero(), mod)
    # 2 multiplies and 2 adds were neutral; the bias add and the final add remain
    assert _count(out)["main"] == {"add": 2, "nn.relu": 1}
    assert_same_outputs(mod, out)
    irpass.ir.infer_type(out)
    assert out["main"].body.checked_type == mod["main"].body.checked_type


def test_fold_add_zero_across_functions(pack):
    x = var("x", shape=(2, 2))
    helper = Function([x], op.add(x, zeros(2, 2)))
    y = var("y", shape=(2, 2))
    mod = IRModule({"helper": helper})
    gv = mod.get_global_var("helper")
    mod = mod.with_function("main", Function([y], op.multiply(irpass.Call(gv, [y]), ones(2, 2))))
    out = run(pack.passes.FoldAddZero(), mod)
    assert _count(out) == {"helper": {}, "main": {}}
    assert_same_outputs(mod, out)
    assert _count(mod) == {"helper": {"add": 1}, "main": {"multiply": 1}}  # input untouched


@pytest.mark.parametrize("model", ["mlp", "resnet", "mobilenet", "transformer_encoder"])
def test_fold_add_zero_on_models_with_injected_neutral_ops(pack, model):
    mod = getattr(models, model)()
    main = mod["main"]
    body = main.body
    irpass.ir.infer_type(mod)
    ty = body.checked_type
    # wrap the output in neutral ops of the output's own type
    z = const(np.zeros(ty.shape, dtype=ty.dtype))
    o = const(np.ones(ty.shape, dtype=ty.dtype))
    wrapped = mod.with_function("main", Function(main.params, op.multiply(o, op.add(body, z))))
    out = run(pack.passes.FoldAddZero(), wrapped)
    assert op_count(out, "multiply") <= op_count(wrapped, "multiply") - 1
    assert op_count(out, "add") <= op_count(wrapped, "add") - 1
    assert_same_outputs(wrapped, out, seeds=(0,))


def test_fold_add_zero_under_immutable_module_check(pack):
    mod = neutral_chain()
    out = run(pack.passes.FoldAddZero(), mod, **{"testing.immutable_module": True})
    assert op_count(out, "multiply") == 0


def test_fold_add_zero_ill_typed_program_is_a_pass_error(pack):
    x = var("x", shape=(2, 3))
    mod = IRModule.from_expr(Function([x], op.add(x, zeros(4, 5))))
    with pytest.raises(PassError, match="FoldAddZero"):
        run(pack.passes.FoldAddZero(), mod)


# -- the config option -----------------------------------------------------------------


@pytest.mark.parametrize("limit, left", [(0, 4), (1, 3), (3, 1), (4, 0), (100, 0)])
def test_max_rewrites_bounds_the_rewrites(pack, limit, left):
    mod = neutral_chain()  # 4 neutral calls: 2 multiply by one, 2 add of zero
    out = run(pack.passes.FoldAddZero(), mod, **{"example.max_rewrites": limit})
    neutral = op_count(out, "multiply") + op_count(out, "add") - 2  # 2 adds are real
    assert neutral == left
    assert_same_outputs(mod, out, seeds=(0,))
    if limit == 0:
        assert out is mod


def test_max_rewrites_counts_per_function(pack):
    def func():
        x = var("x", shape=(2,))
        return Function([x], op.add(op.add(x, zeros(2)), zeros(2)))

    mod = IRModule({"main": func(), "other": func()})
    out = run(pack.passes.FoldAddZero(), mod, **{"example.max_rewrites": 1})
    assert _count(out) == {"main": {"add": 1}, "other": {"add": 1}}


def test_max_rewrites_is_a_registered_int_option(pack):
    from irpass.transform import list_config_options

    option = list_config_options()["example.max_rewrites"]
    assert (option.value_type, option.default, option.owner) == (int, None, "example")
    with pytest.raises(TypeError, match="example.max_rewrites"):
        PassContext(config={"example.max_rewrites": "3"})
    with pytest.raises(PassError, match="must be >= 0"):
        run(pack.passes.FoldAddZero(), neutral_chain(), **{"example.max_rewrites": -1})


# -- OpStatistics ----------------------------------------------------------------------


def test_op_statistics_counts_per_function_and_returns_the_module(pack, caplog):
    x, y = var("x", shape=(2,)), var("y", shape=(2,))
    shared = op.exp(x)
    mod = IRModule({
        "main": Function([x], op.add(shared, shared)),  # the shared exp counts once
        "aux": Function([y], op.nn.relu(op.nn.relu(y))),
    })
    stats = pack.passes.OpStatistics()
    with caplog.at_level(logging.INFO, logger="irpass_example_pack"):
        out = run(stats, mod)
    assert out is mod
    assert stats.counts == {"aux": {"nn.relu": 2}, "main": {"add": 1, "exp": 1}}
    assert stats.info.opt_level == 0 and stats.info.name == "OpStatistics"
    [message] = [r.getMessage() for r in caplog.records]
    assert message == "OpStatistics: 4 op call(s) in 2 function(s): nn.relu 2, add 1, exp 1"


def test_op_statistics_instances_keep_their_own_counts(pack):
    a, b = get_pass("OpStatistics"), get_pass("OpStatistics")
    run(a, neutral_chain())
    assert a.counts["main"]["add"] == 4 and b.counts == {}


# -- the op-stats instrument -----------------------------------------------------------


def test_op_stats_instrument_reports_deltas(pack):
    stream = io.StringIO()
    inst = get_instrument("op-stats", stream)
    assert isinstance(inst, pack.instrument.OpStatsInstrument)
    seq = Sequential([pack.passes.FoldAddZero(), get_pass("Identity")], name="seq")
    with PassContext(opt_level=3, instruments=[inst]):
        seq(neutral_chain())
    lines = stream.getvalue().splitlines()
    assert lines == [
        "op-stats: FoldAddZero: add -2, multiply -2",
        "op-stats: seq: add -2, multiply -2",
        "op-stats: 3 pass(es) ran; op calls 7 -> 3 (add -2, multiply -2)",
    ]
    assert inst.deltas == [("FoldAddZero", {"add": -2, "multiply": -2}),
                           ("seq", {"add": -2, "multiply": -2})]


def test_op_stats_instrument_all_passes_and_file_output(pack, tmp_path):
    path = tmp_path / "stats.txt"
    inst = get_instrument("op-stats", str(path), all_passes=True)
    with PassContext(instruments=[inst]):
        get_pass("Identity")(neutral_chain())
    assert path.read_text().splitlines() == [
        "op-stats: Identity: no change",
        "op-stats: 1 pass(es) ran; op calls 7 -> 7 (no change)",
    ]


def test_op_stats_instrument_defaults_to_stderr(pack, capsys):
    with PassContext(opt_level=3, instruments=[get_instrument("op-stats")]):
        pack.passes.FoldAddZero()(neutral_chain())
    err = capsys.readouterr().err
    assert "op-stats: FoldAddZero: add -2, multiply -2" in err


def test_op_stats_instrument_survives_a_failing_pass(pack):
    """A nested pass that raised (caught by the pass around it) does not skew the outer delta."""
    stream = io.StringIO()
    inst = pack.instrument.OpStatsInstrument(stream)
    x = var("x", shape=(2,))
    other = IRModule.from_expr(Function([x], op.exp(x)))

    @irpass.transform.module_pass
    def Boom(mod, ctx):
        raise RuntimeError("boom")

    @irpass.transform.module_pass
    def Outer(mod, ctx):
        with pytest.raises(PassError):
            Boom(other)  # its run_before_pass saw `other`; no run_after_pass follows
        return pack.passes.FoldAddZero()(mod)

    with PassContext(opt_level=3, instruments=[inst]):
        Outer(neutral_chain())
    assert inst.deltas == [("FoldAddZero", {"add": -2, "multiply": -2}),
                           ("Outer", {"add": -2, "multiply": -2})]


def test_op_stats_instrument_rejects_a_bad_output(pack):
    with pytest.raises(TypeError, match="op-stats: output"):
        pack.instrument.OpStatsInstrument(42)


# -- the plugin ------------------------------------------------------------------------


def test_plugin_contributions_are_recorded(pack):
    record = irpass.plugins.get_plugin_manager().record("example")
    assert record.status == "loaded"
    got = {(c.kind, c.name) for c in record.contributions}
    assert {("pass", "FoldAddZero"), ("pass", "OpStatistics"), ("instrument", "op-stats"),
            ("config option", "example.max_rewrites")} <= got
    assert any(kind == "pipeline" and name.startswith("FoldAddZero") for kind, name in got)
    assert get_pass_entry("FoldAddZero").owner == "example"
    assert "op-stats" in list_instruments()
    assert get_pass("FoldAddZero").info.opt_level == 1


def test_unregistering_the_plugin_removes_everything(pack):
    manager = irpass.plugins.get_plugin_manager()
    if manager.record("example").source != "code":
        pytest.skip("the pack is pip-installed in this environment")
    manager.unregister("example")
    try:
        from irpass.transform import list_config_options, list_passes

        assert "FoldAddZero" not in list_passes()
        assert "op-stats" not in list_instruments()
        assert "example.max_rewrites" not in list_config_options()
        assert "FoldAddZero" not in pipeline_plan(3).names
    finally:
        irpass.plugins.register(pack.plugin, name="example")


def test_pipeline_falls_back_to_the_simplify_phase_without_simplify_expr(pack):
    # as if std were blocked or too old to have SimplifyExpr (registries are restored after)
    irpass.transform.registry.unregister_pass("SimplifyExpr")
    assert "SimplifyExpr" not in irpass.transform.list_passes()
    [row] = [r for r in pipeline_plan(3).rows if r.pass_name == "FoldAddZero"]
    assert (row.owner, row.phase) == ("example", "simplify")
    assert "FoldAddZero" not in pipeline_plan(0).names  # opt_level 1 pass


def test_pipeline_puts_fold_add_zero_right_after_simplify_expr(pack):
    if "SimplifyExpr" not in irpass.transform.list_passes():
        register_pass(irpass.transform.module_pass(lambda mod, ctx: mod, name="SimplifyExpr"))
        add_pipeline_insertion(PipelineInsertion("SimplifyExpr", phase="simplify"),
                               owner="zz-test")
    try:
        names = pipeline_plan(3).names
        assert names[names.index("SimplifyExpr") + 1] == "FoldAddZero"
        [row] = [r for r in pipeline_plan(3).rows if r.pass_name == "FoldAddZero"]
        assert row.owner == "example" and "after SimplifyExpr" in row.anchor
    finally:
        from irpass.transform.pipeline import remove_pipeline_insertions

        remove_pipeline_insertions("zz-test")


def test_default_pipeline_runs_with_the_pack(pack):
    mod = neutral_chain()
    with PassContext(opt_level=3):
        out = irpass.transform.default_pipeline(3)(mod)
    assert op_count(out, "multiply") == 0
    assert_same_outputs(mod, out)


# -- the pack's own test suite and README ----------------------------------------------


def test_pack_readme_python_blocks_run(pack):
    text = (PACK / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 5, "the pack README lost its examples"
    namespace: dict = {"__name__": "pack_readme"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"contrib/irpass-example-pack/README.md[{i}]", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert tests, "the README's testing section has no test function"
    for test in tests:
        test()


def test_pack_own_tests_pass():
    """The pack's tests/ (what a pack author runs with pytest) pass from a source checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "IRPASS_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=PACK, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(r"\b\d+ passed\b", proc.stdout), proc.stdout[-2000:]


# -- the rewrite rule ----------------------------------------------------------------------


def test_rule_set_is_registered_and_canonicalize_applies_it(pack):
    entry = irpass.transform.list_rule_sets()["example"]
    assert entry.owner == "example" and entry.ruleset.rule_names() == ["example.fold_add_zero"]
    mod = neutral_chain()
    with PassContext(opt_level=3) as ctx:
        out = Sequential([irpass.transform.Canonicalize()])(mod)
    assert op_count(out, "add") == 2  # the two x + 0 go; y + bias and the broadcasting b + 0 stay
    assert ctx.diag.notes[-1].data == {"example.fold_add_zero": 2}
    assert_same_outputs(mod, out)


def test_rule_set_as_a_pass_and_disabled(pack):
    rules = importlib.import_module("irpass_example_pack.rules")
    fold = rules.EXAMPLE_RULES.as_pass(opt_level=1, name="ExampleRules")
    mod = neutral_chain()
    out = run(Sequential([fold]), mod)
    assert op_count(out, "add") == 2
    assert_same_outputs(mod, out)
    out = run(Sequential([irpass.transform.Canonicalize()]), mod,
              **{"rewrites.disable": ["example"]})
    assert op_count(out, "add") == 4
