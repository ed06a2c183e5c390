"""Free and bound variables (irpass.ir.analysis)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from irpass.ir import Call, Function, If, Let, TensorType, Tuple, TupleGetItem, Var, const
from irpass.ir.analysis import FreeVarTable, all_vars, bound_vars, free_vars
from irpass.ir.op import OpPattern, register_op

T = TensorType((), "float32")

ADD = register_op("test_an.add", num_inputs=2, type_rel=lambda ts, at: ts[0],
                  kernel=lambda a, at: a[0] + a[1], pattern=OpPattern.BROADCAST,
                  owner="tests", override=True)


def add(a, b):
    return Call(ADD, [a, b])


def one():
    return const(np.float32(1))


def count_reads(monkeypatch, cls, field):
    """Count reads of a node field (a slot) while the test runs: a measure of node visits."""
    slot = cls.__dict__[field]
    count = [0]

    def get(node):
        count[0] += 1
        return slot.__get__(node, cls)

    monkeypatch.setattr(cls, field, property(get, slot.__set__))
    return count


def nested_functions(depth):
    """fn(x) { (fn(p0) { (fn(p1) { ... x ... })(x) })(x) }: every function captures x."""
    x = Var("x", T)
    body = x
    funcs = []
    for i in range(depth):
        f = Function([Var(f"p{i}", T)], body)
        funcs.append(f)
        body = Call(f, [x])
    return x, Function([x], body), funcs


# -- free_vars ---------------------------------------------------------------------------


def test_free_vars_in_order_of_first_use():
    x, y, z, v = (Var(n, T) for n in "xyzv")
    # let v = x + y; (v + z, y)
    e = Let(v, add(x, y), Tuple([add(v, z), y]))
    assert free_vars(e) == [x, y, z]
    assert free_vars(Function([y], e)) == [x, z]
    assert free_vars(Function([x, y, z], e)) == []
    assert free_vars(one()) == []
    assert free_vars(x) == [x]


def test_free_vars_through_every_node_kind():
    c, x, y, f = Var("c", TensorType((), "bool")), Var("x", T), Var("y", T), Var("f")
    e = If(c, TupleGetItem(Tuple([x, one()]), 0), Call(f, [y]))
    assert free_vars(e) == [c, x, f, y]


def test_a_var_used_outside_its_let_is_free():
    x, v = Var("x", T), Var("v", T)
    inner = Let(v, x, add(v, one()))
    # The second use of v is outside the scope of its let: v is free there.
    assert free_vars(Tuple([inner, v])) == [x, v]
    assert free_vars(Tuple([v, inner])) == [v, x]
    assert free_vars(inner) == [x]


def test_a_param_used_outside_its_function_is_free():
    p = Var("p", T)
    f = Function([p], add(p, one()))
    assert free_vars(Tuple([f, p])) == [p]
    assert free_vars(f) == []


def test_let_bound_function_may_call_itself():
    f, y, z = Var("f"), Var("y", T), Var("z", T)
    rec = Function([y], Call(f, [add(y, z)]))
    assert free_vars(rec) == [f, z]
    assert free_vars(Let(f, rec, Call(f, [one()]))) == [z]
    # A plain value does not see its own var.
    v = Var("v", T)
    assert free_vars(Let(v, add(v, one()), v)) == [v]


def test_shared_node_used_inside_and_outside_a_scope():
    x, v = Var("x", T), Var("v", T)
    shared = add(v, x)  # v is in scope in the let body, not in the tuple's second field
    e = Tuple([Let(v, one(), shared), shared])
    assert free_vars(e) == [v, x]
    assert free_vars(Let(v, one(), Tuple([shared, shared]))) == [x]


def test_bound_and_all_vars():
    x, v, p = Var("x", T), Var("v", T), Var("p", T)
    e = Let(v, x, Function([p], add(p, v)))
    assert bound_vars(e) == [p, v]  # post-order: the function before its let
    assert all_vars(e) == [v, x, p]


def test_deep_let_chain_and_dataflow_chain():
    x = Var("x", T)
    body = x
    vs = [Var(f"v{i}", T) for i in range(100_000)]
    for i in reversed(range(len(vs))):
        body = Let(vs[i], vs[i - 1] if i else x, body)
    assert free_vars(body) == [x]
    e = x
    for _ in range(100_000):
        e = add(e, one())
    assert free_vars(e) == [x]


# -- FreeVarTable --------------------------------------------------------------------------


def test_table_answers_for_functions_and_shared_nodes():
    x, y, p, v = Var("x", T), Var("y", T), Var("p", T), Var("v", T)
    shared = add(x, y)
    inner = Function([p], add(p, shared))
    root = Let(v, inner, Tuple([Call(v, [shared]), shared]))
    table = FreeVarTable(root)
    assert inner in table and shared in table and root in table
    assert table[inner] == {x, y}
    assert table[shared] == {x, y}
    assert table[root] == {x, y}
    # A node that was neither shared nor a function is computed on demand.
    assert table[inner.body] == {p, x, y}
    assert table[one()] == frozenset()


def test_equal_sets_along_nested_functions_are_one_object():
    x, f, funcs = nested_functions(50)
    table = FreeVarTable(f)
    sets = {id(table[g]) for g in funcs}
    assert len(sets) == 1 and table[funcs[0]] == {x}
    assert table[f] == frozenset()


def test_table_on_nested_functions_visits_each_node_a_bounded_number_of_times(monkeypatch):
    # Asking about every function of a deeply nested program must not re-walk each body
    # (which reads Function.body about depth**2 / 2 times).
    for depth in (200, 400):
        x, f, funcs = nested_functions(depth)
        reads = count_reads(monkeypatch, Function, "body")
        table = FreeVarTable(f)
        for g in funcs:
            assert table[g] == {x}
        assert reads[0] <= 4 * depth, (depth, reads[0])
        monkeypatch.undo()


def test_free_vars_reads_each_node_a_bounded_number_of_times(monkeypatch):
    _, f, funcs = nested_functions(300)
    reads = count_reads(monkeypatch, Function, "body")
    assert free_vars(f) == []
    assert free_vars(funcs[-1]) == [funcs[0].body]
    assert reads[0] <= 2 * 4 * 300


def test_many_distinct_free_vars_along_a_chain_stay_linear(monkeypatch):
    # let a_i = a_{i-1} + w_i; ... with a distinct free w_i per link: a table keeping a set
    # per link would hold n**2 / 2 vars; only what is asked for is kept.
    n = 3000
    ws = [Var(f"w{i}", T) for i in range(n)]
    a = [Var(f"a{i}", T) for i in range(n)]
    body = a[-1]
    for i in reversed(range(n)):
        body = Let(a[i], add(a[i - 1] if i else one(), ws[i]), body)
    table = FreeVarTable(body)
    assert table[body] == set(ws)
    assert len(table) == 1


# -- against a reference: a direct recursive definition on small random programs ----------


def _reference_free(e, scope=frozenset()):
    t = type(e)
    if t is Var:
        return set() if e in scope else {e}
    if t is Let:
        inner = scope | {e.var}
        value_scope = inner if type(e.value) is Function else scope
        return _reference_free(e.value, value_scope) | _reference_free(e.body, inner)
    if t is Function:
        return _reference_free(e.body, scope | set(e.params))
    out = set()
    for c in e.children():
        if isinstance(c, (Var, Let, Function, Call, Tuple, TupleGetItem, If)):
            out |= _reference_free(c, scope)
    return out


@st.composite
def _program(draw):
    pool = [Var(f"x{i}", T) for i in range(4)]
    made = []

    def build(depth):
        kinds = ["var", "const", "add", "tuple", "let", "fn", "reuse"] if depth < 6 else ["var"]
        kind = draw(st.sampled_from(kinds))
        if kind == "var":
            e = draw(st.sampled_from(pool))
        elif kind == "const":
            e = one()
        elif kind == "reuse" and made:
            e = draw(st.sampled_from(made))
        elif kind == "add":
            e = add(build(depth + 1), build(depth + 1))
        elif kind == "tuple":
            e = TupleGetItem(Tuple([build(depth + 1), build(depth + 1)]), 0)
        elif kind == "let":
            v = draw(st.sampled_from(pool))
            e = Let(v, build(depth + 1), build(depth + 1))
        elif kind == "fn":
            p = draw(st.sampled_from(pool))
            e = Function([p], build(depth + 1))
        else:
            e = draw(st.sampled_from(pool))
        made.append(e)
        return e

    return build(0)


@settings(max_examples=150, deadline=None)
@given(_program())
def test_free_vars_match_a_recursive_reference(e):
    expected = _reference_free(e)
    assert set(free_vars(e)) == expected
    assert len(free_vars(e)) == len(expected)
    table = FreeVarTable(e)
    assert table[e] == expected
    for node in list(table):
        assert table[node] == _reference_free(node)
