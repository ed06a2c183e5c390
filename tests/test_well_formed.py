"""The well-formedness check (irpass.ir.well_formed)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from irpass import WellFormedError
from irpass.ir import (
    Call,
    Function,
    FuncType,
    GlobalVar,
    If,
    IRModule,
    Let,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    const,
    infer_type,
    var,
    well_formed,
)
from irpass.ir.op import OpPattern, register_op
from irpass.ir.well_formed import WellFormedReport

F32_3 = TensorType((3,), "float32")

NEG = register_op("test_wf.neg", num_inputs=1, type_rel=lambda ts, at: ts[0],
                  kernel=lambda a, at: -a[0], pattern=OpPattern.ELEMWISE,
                  owner="tests", override=True)
ADD = register_op("test_wf.add", num_inputs=2, type_rel=lambda ts, at: ts[0],
                  kernel=lambda a, at: a[0] + a[1], pattern=OpPattern.BROADCAST,
                  owner="tests", override=True)


def neg(a):
    return Call(NEG, [a])


def add(a, b):
    return Call(ADD, [a, b])


def c3():
    return const(np.ones(3, "float32"))


def test_a_good_module():
    x = var("x", shape=(3,))
    y = Var("y")
    p = var("p", shape=(3,))
    f = Var("f")
    body = Let(y, neg(x), Let(f, Function([p], add(p, y)), Call(f, [y])))
    mod = IRModule({"main": Function([x], Call(GlobalVar("helper"), [body])),
                    "helper": Function([q := var("q", shape=(3,))], neg(q))})
    report = well_formed(mod)
    assert report
    assert report.problems == [] and report.free_vars == []
    assert str(report) == "well formed"
    report.raise_if_ill_formed()


def test_var_bound_by_two_lets():
    x = var("x", shape=(3,))
    e = Function([], Let(x, c3(), Let(x, neg(x), x)))
    report = well_formed(IRModule({"main": e}))
    assert not report
    [problem] = report.problems
    assert "%x is bound more than once" in problem
    assert "let %x = const<float32 (3,)>" in problem and "let %x = <test_wf.neg(...)>" in problem


def test_var_bound_as_params_of_two_functions():
    x = var("x", shape=(3,))
    mod = IRModule({"f": Function([x], neg(x)), "g": Function([x], x)})
    report = well_formed(mod)
    [problem] = report.problems
    assert "%x is bound more than once" in problem
    assert "in @f" in problem and "in @g" in problem


def test_var_bound_as_param_and_by_let():
    x = var("x", shape=(3,))
    report = well_formed(IRModule({"main": Function([x], Let(x, c3(), x))}))
    assert any("%x is bound more than once" in p for p in report.problems)


def test_let_var_used_after_its_let():
    x = var("x", shape=(3,))
    y = var("y", shape=(3,))
    inner = Let(y, neg(x), y)
    mod = IRModule({"main": Function([x], Tuple([inner, add(y, x)]))})
    report = well_formed(mod)
    [problem] = report.problems
    assert "%y is used outside the scope of its binding" in problem
    assert "test_wf.add(%y, %x)" in problem  # where it is used
    assert "let %y = <test_wf.neg(...)>" in problem  # where it is bound
    assert "@main" in problem
    assert report.free_vars == []  # it is bound, just not there


def test_let_var_used_in_its_own_value():
    y = var("y", shape=(3,))
    report = well_formed(Let(y, neg(y), y))
    assert any("%y is used outside the scope" in p for p in report.problems)


def test_param_used_in_another_function():
    p = var("p", shape=(3,))
    q = var("q", shape=(3,))
    mod = IRModule({"f": Function([p], neg(p)), "g": Function([q], add(q, p))})
    report = well_formed(mod)
    [problem] = report.problems
    assert "%p is used outside the scope of its binding" in problem
    assert "in @g" in problem and "bound by its function" in problem and "in @f" in problem


def test_free_vars_in_a_module_are_problems():
    x = var("x", shape=(3,))
    z = var("z", shape=(3,))
    mod = IRModule({"main": Function([x], add(x, add(z, z)))})
    report = well_formed(mod)
    assert report.free_vars == [z]
    [problem] = report.problems
    assert "free variable %z in @main" in problem and "test_wf.add(%z, %z)" in problem


def test_free_vars_of_a_bare_expression_are_only_listed():
    a, b = var("a", shape=(3,)), var("b", shape=(3,))
    report = well_formed(add(neg(b), add(a, b)))
    assert report
    assert report.free_vars == [b, a]  # order of first use


def test_global_var_missing_from_the_module():
    x = var("x", shape=(3,))
    mod = IRModule({"main": Function([x], Call(GlobalVar("nowhere"), [x]))})
    report = well_formed(mod)
    [problem] = report.problems
    assert "@nowhere" in problem and "@main" in problem and "defines no function" in problem
    helper = IRModule({"h": Function([q := var("q", shape=(3,))], q)})
    assert well_formed(Call(GlobalVar("h"), [x]), mod=helper)
    assert not well_formed(Call(GlobalVar("g"), [x]), mod=helper)


def test_let_annotation_against_checked_type():
    x = var("x", shape=(3,))
    value = neg(x)
    infer_type(value)  # the value now has checked_type Tensor[(3,), float32]
    y = var("y", shape=(4,))
    report = well_formed(Function([x], Let(y, value, y)))
    [problem] = report.problems
    assert "%y" in problem and "annotated Tensor[(4,), float32]" in problem
    assert "checked type Tensor[(3,), float32]" in problem
    # Without a checked type there is nothing to compare.
    assert well_formed(Function([x], Let(var("w", shape=(4,)), neg(x), x)))


def test_ret_type_against_checked_type():
    x = var("x", shape=(3,))
    body = neg(x)
    infer_type(body)
    mod = IRModule({"f": Function([x], body, ret_type=TensorType((3,), "int8"))})
    [problem] = well_formed(mod).problems
    assert "@f is annotated to return Tensor[(3,), int8]" in problem
    assert "Tensor[(3,), float32]" in problem


def test_raise_if_ill_formed_lists_every_problem():
    x = var("x", shape=(3,))
    z = var("z", shape=(3,))
    mod = IRModule({"f": Function([x], add(x, z)), "g": Function([x], x)})
    report = well_formed(mod)
    assert len(report.problems) == 2
    with pytest.raises(WellFormedError) as info:
        report.raise_if_ill_formed()
    msg = str(info.value)
    assert "2 problems" in msg and "free variable %z" in msg and "bound more than once" in msg


def test_let_bound_function_may_call_itself():
    n = var("n", shape=())
    f = Var("f", FuncType([TensorType((), "float32")], TensorType((), "float32")))
    e = Let(f, Function([n], Call(f, [n])), Call(f, [const(1.0)]))
    assert well_formed(e)
    assert well_formed(e).free_vars == []


def test_nested_function_captures_are_in_scope():
    x = var("x", shape=(3,))
    p = var("p", shape=(3,))
    g = Function([p], add(p, x))
    assert well_formed(IRModule({"main": Function([x], Call(g, [x]))}))
    # ... but a closure's param is not in scope outside it.
    report = well_formed(IRModule({"main": Function([x], Tuple([Call(g, [x]), p]))}))
    assert any("%p is used outside the scope" in p for p in report.problems)


def test_bad_argument():
    with pytest.raises(TypeError, match="Expr or an IRModule"):
        well_formed("main")
    assert isinstance(well_formed(const(1.0)), WellFormedReport)


# -- DAGs ------------------------------------------------------------------------------------


def test_shared_node_in_scope_everywhere_is_fine():
    x = var("x", shape=(3,))
    y = var("y", shape=(3,))
    shared = neg(y)
    body = Let(y, neg(x), Tuple([shared, add(shared, shared), If(var("c", shape=(), dtype="bool"),
                                                                  shared, shared)]))
    report = well_formed(body)
    assert report and [v.name_hint for v in report.free_vars] == ["x", "c"]


@pytest.mark.parametrize("inside_first", [True, False])
def test_shared_node_also_used_outside_the_scope_is_caught(inside_first):
    x = var("x", shape=(3,))
    shared = neg(x)  # uses the let var x
    scoped = Let(x, c3(), shared)
    fields = [scoped, shared] if inside_first else [shared, scoped]
    report = well_formed(Function([], Tuple(fields)))
    assert any("%x is used outside the scope" in p for p in report.problems)


def test_shared_binder_node_is_not_a_double_binding():
    x = var("x", shape=(3,))
    shared_let = Let(x, c3(), neg(x))
    assert well_formed(Function([], Tuple([shared_let, add(shared_let, shared_let)])))


def test_shared_subgraph_in_two_functions():
    k = const(np.ones(3, "float32"))
    shared = k
    for _ in range(2000):
        shared = add(shared, k)
    a, b = var("a", shape=(3,)), var("b", shape=(3,))
    mod = IRModule({"f": Function([a], add(a, shared)), "g": Function([b], add(shared, b))})
    assert well_formed(mod)


def test_nested_sharing_across_branches_is_checked_in_linear_time(monkeypatch):
    # X_k = if c then (let a = 1; a + X_{k-1}) else (let b = 1; b + X_{k-1}) shares X_{k-1}
    # between two different scopes at every level: 2**40 paths, so only a check that does
    # not re-walk a shared node for each scope can finish. The reads of Call.args count
    # the visits (3 calls per level); a check that re-walks stops at the cap, not at 2**40.
    c = var("c", shape=(), dtype="bool")
    e = neg(c3())
    for i in range(40):
        a, b = Var(f"a{i}"), Var(f"b{i}")
        e = If(c, Let(a, c3(), add(a, e)), Let(b, c3(), add(b, e)))
    reads = _count_reads(monkeypatch, Call, "args", cap=20 * 3 * 40)
    report = well_formed(Function([c], e))
    monkeypatch.undo()
    assert report, reads[0]


def _count_reads(monkeypatch, cls, field, cap=None):
    """Count reads of a node field (a slot): a measure of how often nodes are visited.
    With ``cap``, the read after ``cap`` reads fails the test at once."""
    slot = cls.__dict__[field]
    count = [0]

    def get(node):
        count[0] += 1
        if cap is not None and count[0] > cap:
            pytest.fail(f"{cls.__name__}.{field} read more than {cap} times")
        return slot.__get__(node, cls)

    monkeypatch.setattr(cls, field, property(get, slot.__set__))
    return count


def test_shared_chain_reached_from_many_scopes_is_checked_in_linear_time(monkeypatch):
    # Field i of the tuple is `let v = x; v + n_i` where n_i = neg(n_{i-1}) is a chain
    # shared by all fields: each field reaches the chain in a new scope. Finding the free
    # vars of each n_i by walking it reads Call.args about k**2 / 2 times.
    for k in (200, 400):
        x = var("x", shape=(3,))
        chain = [x]
        for _ in range(k):
            chain.append(neg(chain[-1]))
        fields = []
        for i in range(k, 0, -1):
            v = Var("v")
            fields.append(Let(v, x, add(v, chain[i])))
        func = Function([x], Tuple(fields))
        reads = _count_reads(monkeypatch, Call, "args")
        assert well_formed(func)
        monkeypatch.undo()
        assert reads[0] <= 12 * k, (k, reads[0])
        # ... and a misplaced use inside the shared chain is still caught.
        w = Var("w")
        nw = neg(neg(w))
        bad = Function([x], Tuple([Let(w, x, add(w, nw)), fields[0], add(nw, x)]))
        [problem] = well_formed(bad).problems
        assert "%w is used outside the scope of its binding" in problem


def _deeply_nested(depth, leaf):
    """fn(x) { (fn(p0) { (fn(p1) { ... leaf ... })(x) })(x) } as @main."""
    x = var("x", shape=(3,))
    body = leaf(x)
    for i in range(depth):
        body = Call(Function([var(f"p{i}", shape=(3,))], body), [x])
    return IRModule({"main": Function([x], body)})


def test_messages_name_deeply_nested_functions_briefly():
    stray = Var("stray")
    report = well_formed(_deeply_nested(1000, lambda x: add(x, stray)))
    [problem] = report.problems
    assert problem.startswith(
        "free variable %stray in a local function in a local function in a local function in "
        "a local function in 996 more enclosing functions in @main: used at "
    )
    assert len(problem) < 300
    # Shallow nesting is named in full.
    q = Var("q")
    shallow = Function([x := var("x", shape=(3,))], Call(Function([q], add(q, stray)), [x]))
    [problem] = well_formed(IRModule({"main": shallow})).problems
    assert problem.startswith("free variable %stray in a local function in @main:")
    [problem] = well_formed(IRModule({"main": _deeply_nested(6, lambda x: add(x, stray))[
        "main"]})).problems
    assert "a local function in 2 more enclosing functions in @main" in problem
    # A bare expression's functions are in the top-level expression.
    report = well_formed(Function([q], Let(q, c3(), q)))
    assert "in a local function in the top-level expression" in report.problems[0]


def test_deep_nesting_costs_constant_memory_per_function():
    import tracemalloc

    mod = _deeply_nested(3000, lambda x: x)
    tracemalloc.start()
    try:
        assert well_formed(mod)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Labels spelled out as text would take depth**2 / 2 * 19 bytes (about 85 MB).
    assert peak < 8_000_000, peak


# -- deep programs ---------------------------------------------------------------------------


def _let_chain(n):
    x = var("x", shape=(3,))
    vs = [Var(f"v{i}") for i in range(n)]
    body = add(vs[-1], x)
    for i in reversed(range(n)):
        body = Let(vs[i], vs[i - 1] if i else x, body)
    return x, body


def test_deep_let_chain_and_call_chain():
    x, body = _let_chain(100_000)
    assert well_formed(Function([x], body))
    e = x
    for _ in range(100_000):
        e = neg(e)
    report = well_formed(e)
    assert report and report.free_vars == [x]


def test_deep_let_chain_with_a_misplaced_use():
    x, body = _let_chain(50_000)
    # Use the innermost var after the whole chain.
    inner = body
    while type(inner) is Let:
        inner = inner.body
    last_var = inner.args[0]
    report = well_formed(Function([x], Tuple([body, last_var])))
    [problem] = report.problems
    assert f"%{last_var.name_hint} is used outside the scope" in problem


@pytest.mark.slow
def test_million_deep_let_chain():
    x, body = _let_chain(1_000_000)
    assert well_formed(Function([x], body))


# -- a property: programs that respect scoping are well formed, misplaced uses are caught -----


@st.composite
def _scoped_program(draw):
    """A random nest of lets and tuples whose uses only name vars in scope.

    Returns the program, the vars it binds, and a var bound in it that is *not*
    in scope at the top level (or None).
    """
    params = [var(f"p{i}", shape=(3,)) for i in range(draw(st.integers(1, 3)))]
    counter = [0]

    def build(scope, depth):
        kind = draw(st.sampled_from(["use", "neg", "tuple", "let"] if depth < 5 else ["use"]))
        if kind == "use":
            return draw(st.sampled_from(scope)), []
        if kind == "neg":
            e, bound = build(scope, depth + 1)
            return neg(e), bound
        if kind == "tuple":
            parts = [build(scope, depth + 1) for _ in range(draw(st.integers(1, 3)))]
            return Tuple([e for e, _ in parts]), [v for _, b in parts for v in b]
        counter[0] += 1
        v = var(f"l{counter[0]}", shape=(3,))
        value, b1 = build(scope, depth + 1)
        body, b2 = build(scope + [v], depth + 1)
        return Let(v, value, body), [*b1, v, *b2]

    body, bound = build(params, 0)
    return params, body, bound


@settings(max_examples=80, deadline=None)
@given(_scoped_program(), st.data())
def test_scoped_programs_are_well_formed_and_misplaced_uses_are_caught(program, data):
    params, body, bound = program
    assert well_formed(IRModule({"main": Function(params, body)}))
    if bound:
        v = data.draw(st.sampled_from(bound))
        bad = IRModule({"main": Function(params, Tuple([body, neg(v)]))})
        report = well_formed(bad)
        assert any(f"%{v.name_hint} is used outside the scope" in p for p in report.problems)


def test_tuple_getitem_and_if_children_are_checked():
    c = var("c", shape=(), dtype="bool")
    y = var("y", shape=(3,))
    scoped = Let(y, c3(), Tuple([y]))
    report = well_formed(Function([c], If(c, TupleGetItem(scoped, 0), y)))
    assert any("%y is used outside the scope" in p for p in report.problems)
