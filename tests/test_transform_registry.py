"""The pass registry (register_pass / get_pass / list_passes, ``irpass.transform.X``)
and the resolution of ``PassInfo.required`` through it."""

import irpass
import pytest
from irpass import op as O
from irpass.transform import (
    ModulePass,
    Pass,
    PassContext,
    Sequential,
    get_pass,
    list_passes,
    module_pass,
    register_pass,
)


def _mod():
    x = irpass.var("x", shape=(2, 3))
    return irpass.IRModule.from_expr(irpass.Function([x], O.exp(O.multiply(x, x))))


def _snapshot(mod):
    return irpass.structural_hash(mod), mod.astext(), {gv.name_hint: f for gv, f in mod.items()}


def _assert_unchanged(mod, snap):
    h, text, funcs = snap
    assert irpass.structural_hash(mod) == h
    assert mod.astext() == text
    assert {gv.name_hint: f for gv, f in mod.items()} == funcs
    for name, func in funcs.items():
        assert mod[name] is func


def get_pass_factory(name):
    return irpass.transform.get_pass_entry(name).factory


def _register_recorders(log, spec, levels=None):
    """Register a recording module pass per ``name -> required names`` in ``spec``."""
    levels = levels or {}
    for name, required in spec.items():

        def factory(name=name, required=tuple(required)):
            def body(mod, ctx):
                log.append(name)
                return mod

            return module_pass(body, opt_level=levels.get(name, 0), name=name, required=required)

        register_pass(factory, name)


# -- registering ----------------------------------------------------------------------------


def test_register_as_decorator_returns_the_factory_and_get_pass_makes_new_instances():
    @register_pass
    def MyPass():
        return module_pass(lambda mod, ctx: mod, name="MyPass")

    assert callable(MyPass) and not isinstance(MyPass, Pass)
    a, b = get_pass("MyPass"), get_pass("MyPass")
    assert isinstance(a, ModulePass) and a.info.name == "MyPass"
    assert a is not b
    assert "MyPass" in list_passes()


def test_register_with_name_as_decorator_and_as_call():
    @register_pass(name="Decorated")
    def make_a():
        return module_pass(lambda mod, ctx: mod, name="Decorated")

    def make_b():
        return module_pass(lambda mod, ctx: mod, name="Called")

    assert register_pass(make_b, "Called") is make_b
    assert get_pass("Decorated").info.name == "Decorated"
    assert get_pass("Called").info.name == "Called"
    assert "make_a" not in list_passes() and "make_b" not in list_passes()


def test_register_a_pass_instance():
    inst = module_pass(lambda mod, ctx: mod, name="Singleton", opt_level=2)
    assert register_pass(inst) is inst
    assert get_pass("Singleton") is inst
    assert irpass.transform.Singleton() is inst
    other = module_pass(lambda mod, ctx: mod, name="Whatever")
    register_pass(other, "Aliased")
    assert get_pass("Aliased") is other


def test_factory_arguments_reach_a_registered_class_pass():
    @register_pass
    @module_pass(opt_level=1)
    class Scale:
        def __init__(self, k, bias=0.0):
            self.k = k
            self.bias = bias

        def transform_module(self, mod, ctx):
            return mod

    p = get_pass("Scale", 3)
    assert isinstance(p, ModulePass) and p.info.name == "Scale" and p.info.opt_level == 1
    assert p.k == 3 and p.bias == 0.0
    q = get_pass("Scale", 5, bias=1.5)
    assert (q.k, q.bias) == (5, 1.5) and p.k == 3
    assert irpass.transform.Scale is Scale
    assert irpass.transform.Scale(7).k == 7
    with pytest.raises(TypeError) as exc:
        get_pass("Scale")  # k is missing
    assert "Scale" in str(exc.value)


def test_factory_not_returning_a_pass_is_refused_by_get_pass():
    register_pass(lambda: "not a pass", "Broken")
    with pytest.raises(TypeError) as exc:
        get_pass("Broken")
    assert "Broken" in str(exc.value) and "str" in str(exc.value)


def test_list_passes_is_sorted_and_includes_registrations():
    register_pass(lambda: module_pass(lambda m, c: m, name="Zeta"), "Zeta")
    register_pass(lambda: module_pass(lambda m, c: m, name="Alpha"), "Alpha")
    names = list_passes()
    assert names == sorted(names)
    assert {"Zeta", "Alpha", "PrintIR", "Identity"} <= set(names)


def test_duplicate_registration_of_a_different_factory_names_both_origins():
    def first_factory():
        return module_pass(lambda m, c: m, name="Dup")

    def second_factory():
        return module_pass(lambda m, c: m, name="Dup")

    register_pass(first_factory, "Dup")
    with pytest.raises(ValueError) as exc:
        register_pass(second_factory, "Dup")
    msg = str(exc.value)
    assert "'Dup'" in msg
    assert "first_factory" in msg and "second_factory" in msg
    assert "override=True" in msg
    assert get_pass_factory("Dup") is first_factory  # the first registration stays


def test_override_replaces_a_registration():
    def first():
        return module_pass(lambda m, c: m, name="Over", opt_level=1)

    def second():
        return module_pass(lambda m, c: m, name="Over", opt_level=2)

    register_pass(first, "Over")
    register_pass(second, "Over", override=True)
    assert get_pass("Over").info.opt_level == 2
    assert irpass.transform.Over is second


def test_registering_the_same_factory_again_is_fine():
    def same():
        return module_pass(lambda m, c: m, name="Same")

    register_pass(same, "Same")
    register_pass(same, "Same")
    register_pass(name="Same")(same)
    assert irpass.transform.Same is same
    inst = same()
    register_pass(inst, "SameInst")
    register_pass(inst, "SameInst")
    assert get_pass("SameInst") is inst


def test_registering_over_a_core_pass_is_refused():
    def Identity():  # noqa: N802
        return module_pass(lambda m, c: m, name="Identity")

    with pytest.raises(ValueError) as exc:
        register_pass(Identity)
    assert "Identity" in str(exc.value) and "irpass" in str(exc.value)


def test_module_getattr_returns_the_registered_factory():
    def FoldConstant():  # noqa: N802
        return module_pass(lambda m, c: m, name="FoldConstant")

    register_pass(FoldConstant, override=True)
    assert irpass.transform.FoldConstant is FoldConstant
    assert isinstance(irpass.transform.FoldConstant(), Pass)
    assert "FoldConstant" in dir(irpass.transform)


def test_unknown_attribute_lists_close_matches():
    def FoldConstant():  # noqa: N802
        return module_pass(lambda m, c: m, name="FoldConstant")

    register_pass(FoldConstant, override=True)
    with pytest.raises(AttributeError) as exc:
        irpass.transform.FoldConstnt  # noqa: B018
    msg = str(exc.value)
    assert "FoldConstnt" in msg and "'FoldConstant'" in msg
    with pytest.raises(AttributeError):
        irpass.transform._no_such_private_name  # noqa: B018
    assert not hasattr(irpass.transform, "NothingLikeThisExists")


def test_get_pass_unknown_name_suggests_close_names():
    with pytest.raises(KeyError) as exc:
        get_pass("Identiy")
    assert "Identiy" in str(exc.value) and "'Identity'" in str(exc.value)


def test_core_registers_print_ir_and_identity():
    assert {"PrintIR", "Identity"} <= set(list_passes())
    mod = _mod()
    ident = irpass.transform.Identity()
    assert isinstance(ident, Pass) and ident.info.name == "Identity"
    assert ident(mod) is mod
    assert get_pass("Identity")(mod) is mod
    assert get_pass("PrintIR").info.name == "PrintIR"
    assert irpass.transform.PrintIR is get_pass_factory("PrintIR")


def test_passes_registered_later_are_reachable_as_attributes():
    with pytest.raises(AttributeError):
        irpass.transform.LateComer  # noqa: B018
    register_pass(lambda: module_pass(lambda m, c: m, name="LateComer"), "LateComer")
    assert irpass.transform.LateComer().info.name == "LateComer"


# -- required resolution -------------------------------------------------------------------
# As in TVM, only a Sequential runs a pass's requirements; a pass called directly runs alone.


def test_required_chain_runs_in_dependency_order():
    log = []
    _register_recorders(log, {"A": ["B"], "B": ["C"], "C": []})
    Sequential([get_pass("A")])(_mod())
    assert log == ["C", "B", "A"]
    log.clear()
    with PassContext(opt_level=0):
        Sequential([get_pass("A"), get_pass("C")])(_mod())
    assert log == ["C", "B", "A", "C"]


def test_a_pass_called_directly_runs_alone():
    log = []
    _register_recorders(log, {"A": ["B"], "B": ["C"], "C": []})
    get_pass("A")(_mod())
    assert log == ["A"]
    log.clear()
    get_pass("B")(_mod())  # a requirement called directly: alone too
    assert log == ["B"]


def test_requirements_of_a_sequential_run_when_an_enclosing_sequential_runs_it():
    log = []
    _register_recorders(log, {"R": []})
    inner = Sequential([get_pass("R")], name="inner", required=["R"])
    inner(_mod())
    assert log == ["R"]  # called directly: its own passes only
    log.clear()
    Sequential([inner], name="outer")(_mod())
    assert log == ["R", "R"]


def test_required_diamond_runs_the_shared_requirement_once():
    log = []
    _register_recorders(log, {"P": ["B", "C"], "B": ["D"], "C": ["D"], "D": []})
    Sequential([get_pass("P")], name="s")(_mod())
    assert log == ["D", "B", "C", "P"]


def test_requirements_run_again_for_each_pass_that_needs_them():
    log = []
    _register_recorders(log, {"X": ["D"], "Y": ["D"], "D": []})
    Sequential([get_pass("X"), get_pass("Y")])(_mod())
    assert log == ["D", "X", "D", "Y"]


def test_required_passes_transform_the_module_before_the_pass():
    seen = []

    @register_pass
    def AddHelper():  # noqa: N802
        def body(mod, ctx):
            x = irpass.var("x", shape=(2, 3))
            return mod.with_function("helper", irpass.Function([x], O.negative(x)))

        return module_pass(body, name="AddHelper")

    @module_pass(required=["AddHelper"])
    def needs_helper(mod, ctx):
        seen.append("helper" in mod)
        return mod

    mod = _mod()
    out = Sequential([needs_helper])(mod)
    assert seen == [True]
    assert "helper" in out and "helper" not in mod
    assert "helper" not in needs_helper(mod) and seen == [True, False]


def test_disabled_requirement_is_skipped():
    log = []
    _register_recorders(log, {"A": ["B", "C"], "B": [], "C": []})
    with PassContext(disabled_pass=["B"]):
        Sequential([get_pass("A")])(_mod())
    assert log == ["C", "A"]


def test_requirement_opt_levels_are_ignored():
    log = []
    _register_recorders(log, {"A": ["B"], "B": []}, levels={"B": 7})
    with PassContext(opt_level=0):
        Sequential([get_pass("A")])(_mod())
    assert log == ["B", "A"]


def test_requirements_of_a_skipped_pass_do_not_run():
    log = []
    _register_recorders(log, {"A": ["B"], "B": []}, levels={"A": 3})
    with PassContext(opt_level=2):
        Sequential([get_pass("A")])(_mod())
    assert log == []


def _sequentials(p):
    """The ways a Sequential can run ``p``: behind another pass, nested in another."""
    return {
        "behind_a_pass": Sequential([irpass.transform.Identity(), p], name="s"),
        "nested": Sequential([Sequential([p], name="inner")], name="outer"),
    }


@pytest.mark.parametrize("runner", ["behind_a_pass", "nested"])
def test_requirement_cycle_is_a_dependency_error(runner):
    log = []
    _register_recorders(log, {"A": ["B"], "B": ["A"]})
    mod = _mod()
    snap = _snapshot(mod)
    with pytest.raises(irpass.PassDependencyError) as exc:
        _sequentials(get_pass("A"))[runner](mod)
    assert exc.value.chain == ["A", "B", "A"]
    assert "A -> B -> A" in str(exc.value)
    assert "cycle" in str(exc.value)
    assert log == []
    _assert_unchanged(mod, snap)


def test_a_direct_call_does_not_look_at_the_requirements():
    # TVM: the requirements are resolved by Sequential only, so a cycle or an
    # unknown name below a pass called directly is no error
    log = []
    _register_recorders(log, {"A": ["B"], "B": ["A"], "C": ["Nowhere"]})
    get_pass("A")(_mod())
    get_pass("C")(_mod())
    assert log == ["A", "C"]


def test_self_requirement_is_a_cycle():
    log = []
    _register_recorders(log, {"Selfish": ["Selfish"]})
    mod = _mod()
    snap = _snapshot(mod)
    with pytest.raises(irpass.PassDependencyError) as exc:
        Sequential([get_pass("Selfish")])(mod)
    assert "Selfish -> Selfish" in str(exc.value)
    assert log == []
    _assert_unchanged(mod, snap)


def test_longer_cycle_below_the_pass_names_the_chain():
    log = []
    _register_recorders(log, {"Top": ["X"], "X": ["Y"], "Y": ["Z"], "Z": ["X"]})
    with pytest.raises(irpass.PassDependencyError) as exc:
        Sequential([get_pass("Top")])(_mod())
    msg = str(exc.value)
    assert "X -> Y -> Z -> X" in msg and "Top" in msg
    assert exc.value.chain == ["Top", "X", "Y", "Z", "X"]
    assert log == []


@pytest.mark.parametrize("runner", ["behind_a_pass", "nested"])
def test_unknown_requirement_names_the_chain_and_close_matches(runner):
    log = []

    def FoldConstant():  # noqa: N802
        return module_pass(lambda m, c: m, name="FoldConstant")

    register_pass(FoldConstant, override=True)
    _register_recorders(log, {"A": ["B"], "B": ["FoldConstnt"]})
    mod = _mod()
    snap = _snapshot(mod)
    with pytest.raises(irpass.PassDependencyError) as exc:
        _sequentials(get_pass("A"))[runner](mod)
    msg = str(exc.value)
    assert "A -> B -> FoldConstnt" in msg
    assert "'FoldConstant'" in msg
    assert exc.value.chain == ["A", "B", "FoldConstnt"]
    assert log == []
    _assert_unchanged(mod, snap)


def test_unregistered_pass_with_unknown_requirement():
    p = module_pass(lambda m, c: m, name="Loose", required=["Nowhere"])
    with pytest.raises(irpass.PassDependencyError) as exc:
        Sequential([p])(_mod())
    assert "Loose -> Nowhere" in str(exc.value)


def test_requirement_whose_factory_needs_arguments_is_a_dependency_error():
    @register_pass
    @module_pass
    class NeedsArg:
        def __init__(self, k):
            self.k = k

        def transform_module(self, mod, ctx):
            return mod

    p = module_pass(lambda m, c: m, name="User", required=["NeedsArg"])
    with pytest.raises(irpass.PassDependencyError) as exc:
        Sequential([p])(_mod())
    assert "User -> NeedsArg" in str(exc.value)


def _needs_typed_input():
    """A pass requiring InferType that fails, as std passes do, on an untyped module."""

    def body(mod, ctx):
        mod["main"].body.checked_type  # noqa: B018 - raises without InferType
        return mod

    return module_pass(body, name="NeedsTypes", required=["InferType"])


def test_a_failing_direct_call_says_its_requirements_did_not_run():
    with pytest.raises(irpass.PassError) as exc:
        _needs_typed_input()(_mod())
    msg = str(exc.value)
    assert exc.value.pass_name == "NeedsTypes"
    assert "checked_type" in msg and "run irpass.ir.infer_type" in msg
    assert "'NeedsTypes' was called directly" in msg and "(InferType) did not run" in msg
    assert "Sequential" in msg
    assert msg.count("called directly") == 1


def test_the_same_pass_in_a_sequential_gets_its_requirement():
    out = Sequential([_needs_typed_input()])(_mod())
    assert out["main"].body.checked_type == irpass.TensorType((2, 3), "float32")


def test_a_failure_in_a_sequential_has_no_direct_call_note():
    @module_pass(required=["Identity"])
    def broken(mod, ctx):
        raise RuntimeError("boom")

    with pytest.raises(irpass.PassError) as exc:
        Sequential([broken], name="s")(_mod())
    assert "boom" in str(exc.value) and "called directly" not in str(exc.value)
    with pytest.raises(irpass.PassError) as exc:
        broken(_mod())
    assert "'broken' was called directly" in str(exc.value)


def test_failing_requirement_is_a_pass_error_naming_it():
    @register_pass
    def Breaks():  # noqa: N802
        def body(mod, ctx):
            raise RuntimeError("requirement failed")

        return module_pass(body, name="Breaks")

    p = module_pass(lambda m, c: m, name="Needy", required=["Breaks"])
    mod = _mod()
    snap = _snapshot(mod)
    with pytest.raises(irpass.PassError) as exc:
        Sequential([p], name="s")(mod)
    assert exc.value.pass_name == "Breaks"
    assert "Breaks" in exc.value.path[-1] and "s[0]" in str(exc.value)
    assert isinstance(exc.value.__cause__, RuntimeError)
    _assert_unchanged(mod, snap)
