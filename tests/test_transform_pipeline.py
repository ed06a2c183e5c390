"""The default pipeline: phases, plugin insertions and their order, the plan, running it.

Insertions are made in memory with fake passes registered under plugin-like
owners; the module's fixture starts every test with no insertions at all.
"""

import itertools

import irpass
import numpy as np
import pytest
from irpass import op as O
from irpass.ir import ExprMutator, post_order_visit
from irpass.testing import models, random_inputs
from irpass.transform import (
    PIPELINE_PHASES,
    PassContext,
    PipelineInsertion,
    Sequential,
    add_pipeline_insertion,
    default_pipeline,
    function_pass,
    list_pipeline_insertions,
    module_pass,
    pipeline_plan,
    register_pass,
    remove_pipeline_insertions,
)
from irpass.transform import pipeline as pipeline_mod


@pytest.fixture(autouse=True)
def _no_insertions():
    """Each test sees only the insertions it adds (the plugins' are put back after)."""
    saved = list(pipeline_mod._INSERTIONS)
    pipeline_mod._INSERTIONS.clear()
    yield
    pipeline_mod._INSERTIONS[:] = saved


def fake(name, opt_level=0, owner="plugA", log=None):
    """Register pass ``name``: a module pass that logs ``name`` (plus its ``tag`` option)."""

    def factory(tag: str = ""):
        def body(mod, ctx):
            if log is not None:
                log.append(name + tag)
            return mod

        return module_pass(body, opt_level=opt_level, name=name)

    register_pass(factory, name, owner=owner, override=True)


def insert(owner, name, **where):
    add_pipeline_insertion(PipelineInsertion(name, **where), owner=owner)


def names(opt_level=2):
    return list(pipeline_plan(opt_level).names)


def dropped(opt_level=2):
    return {(d.owner, d.pass_name): d.reason for d in pipeline_plan(opt_level).dropped}


# -- PipelineInsertion ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"phase": "optimise"}, ValueError, ["unknown phase 'optimise'", "did you mean 'optimize'",
                                             "start, simplify"]),
        ({}, ValueError, ["phase=", "before=", "after="]),
        ({"before": "A", "after": "B"}, ValueError, ["not both"]),
        ({"after": "P"}, ValueError, ["after='P'", "itself"]),
        ({"phase": "end", "priority": True}, TypeError, ["priority"]),
        ({"phase": "end", "priority": 1.5}, TypeError, ["priority"]),
        ({"phase": "end", "options": [("a", 1)]}, TypeError, ["options must be a mapping"]),
        ({"phase": "end", "options": {"not-a-name": 1}}, TypeError, ["'not-a-name'"]),
        ({"before": ""}, TypeError, ["before"]),
        ({"phase": 3}, TypeError, ["phase"]),
    ],
)
def test_insertion_validation_names_the_field(kwargs, error, words):
    with pytest.raises(error) as info:
        PipelineInsertion("P", **kwargs)
    for word in words:
        assert word in str(info.value)
    assert "PipelineInsertion('P')" in str(info.value)


def test_insertion_needs_a_pass_name():
    with pytest.raises(TypeError, match="pass_name"):
        PipelineInsertion("", phase="end")


def test_insertion_phase_may_come_with_an_anchor_as_fallback():
    ins = PipelineInsertion("P", after="Q", phase="fuse")
    assert (ins.after, ins.phase, ins.anchor_pass) == ("Q", "fuse", "Q")
    assert ins.anchor_text == "after Q (else phase fuse)"
    assert PipelineInsertion("P", phase="end").anchor_text == "phase end"


def test_insertion_options_are_a_read_only_copy():
    opts = {"tag": "x"}
    ins = PipelineInsertion("P", phase="end", options=opts)
    opts["tag"] = "changed"
    assert ins.options == {"tag": "x"}
    with pytest.raises(TypeError):
        ins.options["tag"] = "y"
    # frozen, hashable and equal by value
    assert ins == PipelineInsertion("P", phase="end", options={"tag": "x"})
    assert len({ins, PipelineInsertion("P", phase="end", options={"tag": "x"})}) == 1
    assert repr(ins) == "PipelineInsertion('P', phase='end', options={'tag': 'x'})"


# -- the insertion registry ----------------------------------------------------------------


def test_add_list_remove_insertions():
    a = PipelineInsertion("A", phase="end")
    b = PipelineInsertion("B", phase="start", priority=3)
    add_pipeline_insertion(a, owner="plugZ")
    add_pipeline_insertion(a, owner="plugZ")  # the same again: no change
    add_pipeline_insertion(b, owner="plugY")
    add_pipeline_insertion(a, owner="plugY")
    # sorted as the plan sorts: priority first, then owner
    assert list_pipeline_insertions() == [("plugY", b), ("plugY", a), ("plugZ", a)]
    remove_pipeline_insertions("plugY")
    assert list_pipeline_insertions() == [("plugZ", a)]
    remove_pipeline_insertions("nobody")
    assert list_pipeline_insertions() == [("plugZ", a)]


def test_add_insertion_checks_its_arguments():
    with pytest.raises(TypeError, match="expected a PipelineInsertion"):
        add_pipeline_insertion(("A", "end"), owner="plugA")
    with pytest.raises(TypeError, match="owner"):
        add_pipeline_insertion(PipelineInsertion("A", phase="end"), owner="")


# -- ordering --------------------------------------------------------------------------------


def test_phases_run_in_order():
    assert PIPELINE_PHASES == ("start", "simplify", "optimize", "layout", "fuse", "end")
    for phase in reversed(PIPELINE_PHASES):
        fake(f"P_{phase}")
        insert("plugA", f"P_{phase}", phase=phase)
    assert names() == [f"P_{phase}" for phase in PIPELINE_PHASES]
    assert [row.phase for row in pipeline_plan().rows] == list(PIPELINE_PHASES)


def test_priority_then_owner_then_name_order_a_phase():
    for name in ("Low", "High", "A2", "A1", "B0", "Neg"):
        fake(name)
    insert("plugB", "B0", phase="optimize")
    insert("plugA", "A2", phase="optimize")
    insert("plugZ", "Neg", phase="optimize", priority=-1)
    insert("plugA", "A1", phase="optimize")
    insert("plugC", "High", phase="optimize", priority=5)
    insert("plugC", "Low", phase="optimize", priority=1)
    assert names() == ["High", "Low", "A1", "A2", "B0", "Neg"]


def test_owner_decides_a_tie_before_the_pass_name():
    fake("Aaa")
    fake("Zzz")
    insert("plugB", "Aaa", phase="end")
    insert("plugA", "Zzz", phase="end")
    assert names() == ["Zzz", "Aaa"]


def test_before_and_after_chains():
    for name in ("X", "A", "B", "C", "D", "E", "P1", "P0"):
        fake(name)
    insert("plugA", "X", phase="optimize")
    insert("plugA", "A", after="X")
    insert("plugB", "B", after="A")  # a chain: anchored to an insertion
    insert("plugA", "C", before="X")
    insert("plugA", "D", before="C")
    insert("plugB", "E", after="X", priority=2)  # outranks A: nearer X
    insert("plugA", "P1", before="X", priority=1)
    insert("plugA", "P0", before="X")
    assert names() == ["P1", "D", "C", "P0", "X", "E", "A", "B"]
    rows = {row.pass_name: row for row in pipeline_plan().rows}
    assert rows["B"].anchor == "after A"
    assert rows["D"].anchor == "before C"
    assert rows["X"].anchor == "phase optimize"
    assert {row.phase for row in rows.values()} == {"optimize"}
    assert rows["B"].owner == "plugB"


def test_anchored_passes_run_in_their_anchors_phase():
    for name in ("S", "F", "AfterS", "BeforeF"):
        fake(name)
    insert("plugA", "S", phase="start")
    insert("plugA", "F", phase="fuse")
    insert("plugB", "BeforeF", before="F")
    insert("plugB", "AfterS", after="S")
    plan = pipeline_plan()
    assert plan.names == ("S", "AfterS", "BeforeF", "F")
    assert [row.phase for row in plan.rows] == ["start", "start", "fuse", "fuse"]


def test_a_long_anchor_chain_is_fine():
    n = 1500  # deeper than Python's recursion limit
    for i in range(n):
        fake(f"C{i}")
    insert("plugA", "C0", phase="start")
    for i in range(1, n):
        insert("plugA", f"C{i}", after=f"C{i - 1}")
    assert names() == [f"C{i}" for i in range(n)]


def test_fallback_to_phase_when_the_anchor_is_missing():
    fake("A")
    fake("Z")
    insert("plugA", "Z", phase="end")
    insert("plugB", "A", after="Missing", phase="start")
    plan = pipeline_plan()
    assert plan.names == ("A", "Z")
    row = plan.rows[0]
    assert row.phase == "start"
    assert row.anchor.startswith("phase start (fallback: after Missing:")
    assert "'Missing' is not in the pipeline" in row.anchor
    assert plan.dropped == ()


def test_dropped_when_the_anchor_is_missing_and_dependents_follow():
    for name in ("A", "B", "C", "K"):
        fake(name)
    insert("plugA", "K", phase="optimize")
    insert("plugA", "A", after="Missing")
    insert("plugB", "B", before="A")  # A goes: so does B (no fallback) ...
    insert("plugC", "C", after="A", phase="end")  # ... while C falls back
    plan = pipeline_plan()
    assert plan.names == ("K", "C")
    gone = {(d.owner, d.pass_name): d.reason for d in plan.dropped}
    assert set(gone) == {("plugA", "A"), ("plugB", "B")}
    assert "after Missing" in gone[("plugA", "A")]
    assert "'Missing' is not in the pipeline" in gone[("plugA", "A")]
    assert "before A" in gone[("plugB", "B")] and "'A' is not in the pipeline" in gone[
        ("plugB", "B")]
    assert "after A" in plan.rows[1].anchor
    assert all(d.insertion.pass_name == d.pass_name for d in plan.dropped)


def test_duplicate_pass_names_keep_the_first_in_sort_order():
    fake("Dup")
    insert("plugB", "Dup", phase="start")
    insert("plugA", "Dup", phase="end")
    plan = pipeline_plan()
    assert [(r.pass_name, r.owner, r.phase) for r in plan.rows] == [("Dup", "plugA", "end")]
    (d,) = plan.dropped
    assert (d.owner, d.pass_name) == ("plugB", "Dup")
    assert "duplicate, also contributed by 'plugA'" in d.reason
    # a higher priority ranks first whoever the owner
    insert("plugC", "Dup", phase="simplify", priority=1)
    plan = pipeline_plan()
    assert [(r.owner, r.phase) for r in plan.rows] == [("plugC", "simplify")]
    assert {d.owner for d in plan.dropped} == {"plugA", "plugB"}


def test_anchor_cycle_is_an_error_naming_owners_and_passes():
    for name in ("A", "B", "C", "K"):
        fake(name)
    insert("plugK", "K", phase="start")
    insert("plugA", "A", after="B")
    insert("plugB", "B", before="A", phase="end")  # a fallback does not break a cycle
    insert("plugC", "C", after="A")  # hangs from the cycle
    with pytest.raises(ValueError) as info:
        pipeline_plan()
    text = str(info.value)
    assert "cycle" in text
    assert "'A' (plugA: after B)" in text
    assert "'B' (plugB: before A)" in text
    assert "plugK" not in text and "'C'" not in text


def test_opt_level_filtering():
    for level in range(5):
        fake(f"L{level}", opt_level=level)
        insert("plugA", f"L{level}", phase="optimize")
    assert names(0) == ["L0"]
    assert names(2) == ["L0", "L1", "L2"]
    assert names(4) == ["L0", "L1", "L2", "L3", "L4"]
    gone = dropped(2)
    assert set(gone) == {("plugA", "L3"), ("plugA", "L4")}
    assert "needs opt_level 3" in gone[("plugA", "L3")]
    assert [row.opt_level for row in pipeline_plan(4).rows] == [0, 1, 2, 3, 4]


def test_anchor_left_out_by_opt_level():
    fake("Heavy", opt_level=3)
    fake("Tail")
    fake("Strict")
    insert("plugA", "Heavy", phase="optimize")
    insert("plugB", "Tail", after="Heavy", phase="end")
    insert("plugB", "Strict", before="Heavy")
    assert names(3) == ["Strict", "Heavy", "Tail"]
    plan = pipeline_plan(2)
    assert plan.names == ("Tail",)
    assert "needs opt_level 3" in plan.rows[0].anchor
    assert "needs opt_level 3" in {d.pass_name: d.reason for d in plan.dropped}["Strict"]


@pytest.mark.parametrize("bad, error", [(True, TypeError), ("2", TypeError), (2.0, TypeError),
                                        (-1, ValueError), (5, ValueError)])
def test_opt_level_is_an_int_from_0_to_4(bad, error):
    with pytest.raises(error, match="opt_level"):
        pipeline_plan(bad)
    with pytest.raises(error, match="opt_level"):
        default_pipeline(bad)


def test_unregistered_or_uncreatable_passes_are_dropped_with_why():
    fake("Folder")
    fake("Fine")
    insert("plugA", "Foldr", phase="start")
    insert("plugB", "Fine", phase="end", options={"nope": 1})
    insert("plugC", "Folder", phase="end", options={"tag": "!"})
    plan = pipeline_plan()
    assert plan.names == ("Folder",)
    gone = {d.pass_name: d.reason for d in plan.dropped}
    assert "no pass named 'Foldr'" in gone["Foldr"] and "'Folder'" in gone["Foldr"]
    assert "cannot create the pass" in gone["Fine"] and "nope" in gone["Fine"]


def test_order_is_independent_of_registration_order():
    for name in ("Infer", "Simp", "Fold", "Cse", "Fuse", "Stats", "Dup", "Pre", "Post", "Lay",
                 "Gone"):
        fake(name)
    fake("Slow", opt_level=3)
    plugins = {
        "std": [
            PipelineInsertion("Infer", phase="start"),
            PipelineInsertion("Simp", phase="simplify"),
            PipelineInsertion("Fold", phase="simplify", priority=1),
            PipelineInsertion("Fuse", phase="fuse"),
            PipelineInsertion("Slow", phase="optimize"),
        ],
        "pack": [
            PipelineInsertion("Cse", after="Simp"),
            PipelineInsertion("Dup", phase="end"),
            PipelineInsertion("Post", after="Slow", phase="optimize"),
        ],
        "stats": [
            PipelineInsertion("Stats", phase="end", priority=-5),
            PipelineInsertion("Pre", before="Cse"),
            PipelineInsertion("Dup", phase="start"),
        ],
        "layout": [
            PipelineInsertion("Lay", phase="layout"),
            PipelineInsertion("Gone", after="Nowhere"),
        ],
    }
    expected = ["Infer", "Fold", "Simp", "Pre", "Cse", "Post", "Lay", "Fuse", "Dup", "Stats"]
    expected_dropped = [("layout", "Gone"), ("stats", "Dup"), ("std", "Slow")]
    seen = set()
    for order in itertools.permutations(plugins):
        for flip in (False, True):
            pipeline_mod._INSERTIONS.clear()
            for owner in order:
                for ins in (reversed(plugins[owner]) if flip else plugins[owner]):
                    add_pipeline_insertion(ins, owner=owner)
            plan = pipeline_plan(2)
            assert list(plan.names) == expected, order
            assert [(d.owner, d.pass_name) for d in plan.dropped] == expected_dropped
            seen.add((plan.rows, plan.dropped))
    assert len(seen) == 1


# -- the Sequential ----------------------------------------------------------------------------


def test_default_pipeline_is_the_plans_sequential():
    log = []
    fake("A", log=log)
    fake("B", log=log)
    insert("plugA", "B", phase="end")
    insert("plugA", "A", phase="start", options={"tag": "+opt"})
    seq = default_pipeline()
    assert isinstance(seq, Sequential)
    assert (seq.info.name, seq.info.opt_level) == ("default_pipeline", 0)
    assert [p.info.name for p in seq.passes] == list(pipeline_plan().names) == ["A", "B"]
    with PassContext(opt_level=2):
        seq(_small_module())
    assert log == ["A+opt", "B"]  # the insertion's options reached the factory


def test_empty_default_pipeline_returns_its_input():
    seq = default_pipeline(0)
    assert seq.passes == ()
    mod = _small_module()
    assert seq(mod) is mod


def test_pass_context_still_gates_at_run_time():
    log = []
    fake("Cheap", log=log)
    fake("Costly", opt_level=3, log=log)
    insert("plugA", "Cheap", phase="start")
    insert("plugA", "Costly", phase="end")
    seq = default_pipeline(3)
    assert [p.info.name for p in seq.passes] == ["Cheap", "Costly"]
    with PassContext(opt_level=2):
        seq(_small_module())
    assert log == ["Cheap"]
    with PassContext(opt_level=2, disabled_pass=["Cheap"], required_pass=["Costly"]):
        seq(_small_module())
    assert log == ["Cheap", "Costly"]


def test_default_pipeline_loads_the_plugins_first(monkeypatch):
    calls = []
    monkeypatch.setattr(irpass.plugins, "ensure_loaded", lambda: calls.append(1))
    default_pipeline()
    pipeline_plan(1)
    assert len(calls) == 2


class _BiasAddToAdd(ExprMutator):
    def visit_call(self, call):
        new = super().visit_call(call)
        if new.op is irpass.Op.get("nn.bias_add") and new.attrs["axis"] in (1, -1):
            return O.add(*new.args)
        return new


class _ReluToMaximum(ExprMutator):
    def visit_call(self, call):
        new = super().visit_call(call)
        if new.op is irpass.Op.get("nn.relu"):
            return O.maximum(new.args[0], irpass.const(np.float32(0.0)))
        return new


class _SoftmaxToRelu(ExprMutator):  # changes the result: must not run at opt_level 2
    def visit_call(self, call):
        new = super().visit_call(call)
        if new.op is irpass.Op.get("nn.softmax"):
            return O.nn.relu(new.args[0])
        return new


def _rewrite(name, mutator, opt_level=1):
    @function_pass(opt_level=opt_level, name=name)
    def rewrite(func, mod, ctx):
        return mutator().visit(func)

    register_pass(rewrite, name, owner="plugR")


def _op_names(mod):
    out = set()
    post_order_visit(mod["main"],
                     lambda e: out.add(e.op.name) if isinstance(e, irpass.Call) else None)
    return out


def test_default_pipeline_runs_and_preserves_semantics():
    _rewrite("BiasAddToAdd", _BiasAddToAdd)
    _rewrite("ReluToMaximum", _ReluToMaximum)
    _rewrite("SoftmaxToRelu", _SoftmaxToRelu, opt_level=3)
    insert("plugR", "ReluToMaximum", after="BiasAddToAdd")
    insert("plugR", "BiasAddToAdd", phase="simplify")
    insert("plugR", "SoftmaxToRelu", phase="end")
    mod = models.mlp(in_features=16, hidden=(12, 8), num_classes=5)
    inputs = random_inputs(mod, seed=3)
    expected = irpass.evaluate(mod, **inputs)
    seq = default_pipeline(2)
    assert [p.info.name for p in seq.passes] == ["BiasAddToAdd", "ReluToMaximum"]
    with PassContext(opt_level=2):
        out = seq(mod)
    assert {"nn.bias_add", "nn.relu"} <= _op_names(mod)
    ops = _op_names(out)
    assert "nn.bias_add" not in ops and "nn.relu" not in ops
    assert {"add", "maximum", "nn.softmax"} <= ops
    np.testing.assert_allclose(irpass.evaluate(out, **inputs), expected, rtol=1e-5, atol=1e-6)


def _small_module():
    x = irpass.var("x", shape=(2, 3))
    return irpass.IRModule.from_expr(irpass.Function([x], O.exp(x)))
