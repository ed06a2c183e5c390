"""ExprFunctor / ExprVisitor / ExprMutator / post_order_visit, including million-node programs."""

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from irpass.ir import (
    Call,
    Constant,
    ExprFunctor,
    ExprMutator,
    ExprVisitor,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    const,
    post_order_visit,
    var,
)
from irpass.ir.op import OpPattern, register_op
from irpass.testing import strategies as sts


def _same(types, attrs):
    return types[0]


ADD = register_op(
    "test.functor.add",
    num_inputs=2,
    type_rel=_same,
    kernel=lambda a, at: a[0] + a[1],
    pattern=OpPattern.BROADCAST,
    owner="tests",
)
NEG = register_op(
    "test.functor.neg",
    num_inputs=1,
    type_rel=_same,
    kernel=lambda a, at: -a[0],
    pattern=OpPattern.ELEMWISE,
    owner="tests",
)
TANH = register_op(
    "test.functor.tanh",
    num_inputs=1,
    type_rel=_same,
    kernel=lambda a, at: np.tanh(a[0]),
    pattern=OpPattern.ELEMWISE,
    owner="tests",
)


def add(a, b):
    return Call(ADD, [a, b])


def neg(a):
    return Call(NEG, [a])


def chain(n, x):
    e = x
    for _ in range(n):
        e = add(e, e)
    return e


def let_chain(n, x):
    """W3's shape: unused `let d_i = tanh(x_i)` around a dataflow chain x_{i+1} = add(x_i, x_i)."""
    values, cur = [], x
    for _ in range(n):
        values.append(Call(TANH, [cur]))
        cur = add(cur, cur)
    body = cur
    for i in reversed(range(n)):
        body = Let(Var(f"d{i}"), values[i], body)
    return body


class Counter(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.seen = []

    def visit_call(self, call):
        self.calls += 1
        self.seen.append(call)
        super().visit_call(call)


def test_visitor_visits_every_node_of_a_dag_once():
    x = var("x")
    a = neg(x)
    b = add(a, a)  # a shared
    c = add(b, a)
    v = Counter()
    v.visit(c)
    assert v.calls == 3
    assert v.seen == [c, b, a]  # parents before children, as TVM's ExprVisitor


def test_visitor_reaches_every_kind_of_node():
    x, y, f_param = var("x"), var("y"), var("p")
    gv = GlobalVar("g")
    k = const(1.0)
    inner = Function([f_param], neg(f_param))
    expr = Let(
        y,
        Tuple([x, k]),
        If(TupleGetItem(y, 0), Call(inner, [TupleGetItem(y, 1)]), Call(gv, [x])),
    )
    kinds = []

    class Kinds(ExprVisitor):
        pass

    for name in [
        "var",
        "global_var",
        "constant",
        "tuple",
        "tuple_getitem",
        "call",
        "let",
        "if",
        "function",
        "op",
    ]:

        base = getattr(ExprVisitor, f"visit_{name}")

        def method(self, node, _name=name, _base=base):
            kinds.append(_name)
            _base(self, node)

        setattr(Kinds, f"visit_{name}", method)
    # Methods set after class creation are not seen by the cached vtable: rebuild it.
    Kinds.__init_subclass__()
    Kinds().visit(expr)
    assert set(kinds) == {
        "var",
        "global_var",
        "constant",
        "tuple",
        "tuple_getitem",
        "call",
        "let",
        "if",
        "function",
        "op",
    }


def test_identity_mutator_returns_the_same_objects():
    x, y = var("x"), var("y")
    f = Function([x, y], Let(Var("t"), Tuple([x, const(2.0)]), If(x, add(x, y), neg(y))))
    assert ExprMutator().visit(f) is f


def test_mutator_rebuilds_only_the_path_to_a_change_and_keeps_sharing():
    x = var("x")
    a = neg(x)
    b = add(a, a)
    untouched = neg(const(1.0))
    root = Tuple([b, untouched])

    class NegToAdd(ExprMutator):
        def visit_call(self, call):
            new = super().visit_call(call)
            if new.op is NEG and new.args[0] is x:
                return add(x, x)
            return new

    out = NegToAdd().visit(root)
    assert out is not root
    assert out.fields[1] is untouched  # untouched subtree kept as is
    new_b = out.fields[0]
    assert new_b.args[0] is new_b.args[1]  # the shared node is rewritten once, still shared
    assert new_b.args[0].op is ADD
    assert root.fields[0] is b and b.args[0] is a  # input unchanged


def test_mutator_let_binding_hook_can_drop_and_substitute():
    x = var("x")
    t = Var("t")
    u = Var("u")
    expr = Let(t, const(3.0), Let(u, neg(x), add(t, u)))

    class Propagate(ExprMutator):
        def visit_let_binding(self, let):
            value = self.visit(let.value)
            if isinstance(value, Constant):
                self.memo[let.var] = value
                return None
            return self.visit(let.var), value

    out = Propagate().visit(expr)
    assert isinstance(out, Let) and out.var is u
    assert isinstance(out.body.args[0], Constant) and out.body.args[1] is u


def test_functor_dispatches_and_reports_unhandled_nodes():
    class Kind(ExprFunctor):
        def visit_var(self, v):
            return "var:" + v.name_hint

    assert Kind().visit(var("x")) == "var:x"
    with pytest.raises(NotImplementedError, match="Kind does not handle Constant"):
        Kind().visit(const(1.0))
    with pytest.raises(TypeError, match="cannot visit int"):
        Kind().visit(3)


def test_visitor_without_super_init_still_works():
    class NoInit(ExprVisitor):
        def __init__(self):
            self.n = 0

        def visit_var(self, v):
            self.n += 1

    v = NoInit()
    x = var("x")
    v.visit(add(x, neg(x)))
    assert v.n == 1


def test_post_order_visit_children_first_once_each():
    x = var("x")
    a = neg(x)
    b = add(a, a)
    order = []
    post_order_visit(b, order.append)
    assert order == [ADD, NEG, x, a, b]
    assert len(order) == len(set(order))


def test_post_order_visit_covers_let_and_function():
    x, t = var("x"), Var("t")
    f = Function([x], Let(t, neg(x), t))
    order = []
    post_order_visit(f, order.append)
    assert order.index(x) < order.index(f.body) < order.index(f)
    assert t in order and NEG in order


@pytest.mark.parametrize("n", [100_000])
def test_deep_chains_do_not_recurse(n):
    limit = sys.getrecursionlimit()
    x = var("x")
    deep = chain(n, x)
    v = Counter()
    v.visit(deep)
    assert v.calls == n
    assert ExprMutator().visit(deep) is deep
    lets = let_chain(n, x)
    assert ExprMutator().visit(lets) is lets
    seen = []
    post_order_visit(lets, lambda node: seen.append(node) if isinstance(node, Let) else None)
    assert len(seen) == n
    assert sys.getrecursionlimit() == limit


def test_mutator_rewrites_inside_a_deep_let_chain():
    x = var("x")
    lets = let_chain(20_000, x)

    class TanhToNeg(ExprMutator):
        def visit_call(self, call):
            new = super().visit_call(call)
            return neg(new.args[0]) if new.op is TANH else new

    out = TanhToNeg().visit(lets)
    ops = []
    post_order_visit(out, lambda node: ops.append(node.op) if isinstance(node, Call) else None)
    assert TANH not in ops and ops.count(NEG) == 20_000
    # The original chain is untouched.
    assert lets.value.op is TANH


@pytest.mark.slow
def test_million_node_chain_and_let_chain():
    x = var("x")
    deep = chain(1_000_000, x)
    v = Counter()
    v.visit(deep)
    assert v.calls == 1_000_000
    assert ExprMutator().visit(deep) is deep
    lets = let_chain(1_000_000, x)
    assert ExprMutator().visit(lets) is lets
    n = [0]
    post_order_visit(lets, lambda node: n.__setitem__(0, n[0] + 1))
    # lets, tanh calls, d vars and the add chain (N each), plus x and the two ops
    assert n[0] == 4_000_000 + 3


def _if_chain(n, x):
    """Dataflow through If nodes: e = add(if (c) {e} else {neg(e)}, e)."""
    c = var("c", shape=(), dtype="bool")
    e = x
    for _ in range(n):
        e = add(If(c, e, neg(e)), e)
    return e


def _let_in_value(n, x):
    """let v0 = (let v1 = (let v2 = ... in v2) in v1) in v0: lets nested in value position."""
    e = neg(x)
    for i in range(n):
        v = Var(f"v{i}")
        e = Let(v, e, neg(v))
    return e


def _else_if_ladder(n, x):
    c = var("c", shape=(), dtype="bool")
    e = neg(x)
    for _ in range(n):
        e = If(c, neg(x), e)
    return e


@pytest.mark.parametrize("build", [_if_chain, _let_in_value, _else_if_ladder])
def test_if_and_let_nesting_do_not_recurse(build):
    x = var("x")
    expr = build(20_000, x)
    v = Counter()
    v.visit(expr)
    assert v.calls > 20_000
    assert ExprMutator().visit(expr) is expr

    class NegToTanh(ExprMutator):
        def visit_call(self, call):
            new = super().visit_call(call)
            return Call(TANH, new.args) if new.op is NEG else new

    out = NegToTanh().visit(expr)
    ops = []
    post_order_visit(out, lambda n: ops.append(n.op) if isinstance(n, Call) else None)
    assert NEG not in ops and TANH in ops


def test_overriding_visit_sees_inner_nodes_of_a_mutator():
    x = var("x")
    a = neg(x)
    root = add(add(a, x), x)

    class ReplaceNeg(ExprMutator):
        def __init__(self):
            super().__init__()
            self.seen = []

        def visit(self, expr):
            self.seen.append(expr)
            if expr is a:
                return Call(TANH, [x])
            return super().visit(expr)

    m = ReplaceNeg()
    out = m.visit(root)
    assert out.args[0].args[0].op is TANH  # the inner node was replaced
    assert a in m.seen and root.args[0] in m.seen
    assert root.args[0].args[0] is a  # input untouched


def test_overriding_visit_applies_once_to_the_root():
    x = var("x")
    root = neg(neg(x))

    class WrapInAdd(ExprMutator):
        def visit(self, expr):
            res = super().visit(expr)
            return add(res, x) if isinstance(expr, Call) else res

    out = WrapInAdd().visit(root)
    # Every call is wrapped exactly once: add(neg(add(neg(x), x)), x).
    assert out.op is ADD and out.args[1] is x
    inner = out.args[0]
    assert inner.op is NEG and inner.args[0].op is ADD and inner.args[0].args[0].op is NEG
    assert inner.args[0].args[0].args[0] is x


def test_overriding_visit_sees_inner_nodes_of_a_visitor():
    x = var("x")
    a = neg(x)
    root = add(add(a, x), a)
    seen = []

    class Record(ExprVisitor):
        def visit(self, expr):
            seen.append(expr)
            super().visit(expr)

    Record().visit(root)
    assert a in seen and root.args[0] in seen
    assert {s for s in seen if isinstance(s, Call)} == {a, root.args[0], root}


# -- parent first, and pruning (TVM's Python ExprVisitor) ------------------------------------


def _tvm_order(root, prune=lambda node: False):
    """The order in which TVM's recursive ExprVisitor enters the visit_* methods.

    A reference written out here (recursive, for small programs): memoized by
    identity, parent first, children in field order; ``prune(node)`` true means
    the node's method does not visit its children.
    """
    order, seen = [], set()

    def visit(node):
        if node in seen:
            return
        seen.add(node)
        order.append(node)
        if prune(node):
            return
        if isinstance(node, Call):
            children = [node.op, *node.args]
        elif isinstance(node, Tuple):
            children = node.fields
        elif isinstance(node, TupleGetItem):
            children = [node.tuple_value]
        elif isinstance(node, Let):
            children = [node.var, node.value, node.body]
        elif isinstance(node, If):
            children = [node.cond, node.true_branch, node.false_branch]
        elif isinstance(node, Function):
            children = [*node.params, node.body]
        else:
            children = []
        for child in children:
            visit(child)

    visit(root)
    return order


class Recorder(ExprVisitor):
    """Records every node whose visit_* method runs; prunes where ``prune(node)``."""

    def __init__(self, prune=lambda node: False):
        super().__init__()
        self.order = []
        self.prune = prune

    def _record(self, node, base):
        self.order.append(node)
        if not self.prune(node):
            base(self, node)

    def visit_var(self, node):
        self._record(node, ExprVisitor.visit_var)

    def visit_global_var(self, node):
        self._record(node, ExprVisitor.visit_global_var)

    def visit_constant(self, node):
        self._record(node, ExprVisitor.visit_constant)

    def visit_op(self, node):
        self._record(node, ExprVisitor.visit_op)

    def visit_tuple(self, node):
        self._record(node, ExprVisitor.visit_tuple)

    def visit_tuple_getitem(self, node):
        self._record(node, ExprVisitor.visit_tuple_getitem)

    def visit_call(self, node):
        self._record(node, ExprVisitor.visit_call)

    def visit_let(self, node):
        self._record(node, ExprVisitor.visit_let)

    def visit_if(self, node):
        self._record(node, ExprVisitor.visit_if)

    def visit_function(self, node):
        self._record(node, ExprVisitor.visit_function)


def _sample_program():
    x, y, p = var("x"), var("y"), var("p")
    shared = neg(x)
    inner = Function([p], add(p, shared))
    t = Tuple([shared, const(2.0), GlobalVar("g")])
    only_here = TupleGetItem(Tuple([Call(TANH, [x])]), 0)
    return Function(
        [x],
        Let(y, t, If(TupleGetItem(y, 0), Call(inner, [TupleGetItem(y, 1)]),
                     add(shared, only_here))),
    )


def test_children_are_visited_after_their_parent_in_tvms_order():
    root = _sample_program()
    rec = Recorder()
    rec.visit(root)
    assert rec.order == _tvm_order(root)
    assert rec.order[0] is root
    assert len(rec.order) == len(set(rec.order))  # each node once


@pytest.mark.parametrize(
    "kind", [Call, Tuple, TupleGetItem, Let, If, Function], ids=lambda k: k.__name__
)
def test_a_method_that_does_not_call_super_prunes_the_children(kind):
    root = _sample_program()

    def prune(node):
        return type(node) is kind

    rec = Recorder(prune)
    rec.visit(root)
    assert rec.order == _tvm_order(root, prune)
    # something below a pruned node is missing (its children are not visited)
    assert len(rec.order) < len(_tvm_order(root))


def test_pruning_a_call_skips_its_arguments_but_not_other_uses_of_them():
    x, y = var("x"), var("y")
    shared = neg(y)
    root = Tuple([Call(TANH, [add(x, shared)]), shared])
    seen = []

    class NoTanh(ExprVisitor):
        def visit_call(self, call):
            seen.append(call)
            if call.op is not TANH:
                super().visit_call(call)

        def visit_var(self, v):
            seen.append(v)

    NoTanh().visit(root)
    assert root.fields[0] in seen
    assert root.fields[0].args[0] not in seen and x not in seen  # below tanh: pruned
    assert shared in seen and y in seen  # reached again through the tuple


def test_let_binding_override_prunes_the_binding_and_keeps_the_body():
    x, t, u = var("x"), Var("t"), Var("u")
    value = neg(x)
    body = add(u, u)
    expr = Let(t, value, Let(u, Call(TANH, [x]), body))
    lets, calls = [], []

    class SkipBindings(ExprVisitor):
        def visit_let(self, let):
            lets.append(let)
            super().visit_let(let)

        def visit_let_binding(self, let):
            pass

        def visit_call(self, call):
            calls.append(call)
            super().visit_call(call)

    SkipBindings().visit(expr)
    assert lets == [expr, expr.body]  # every let of a chain gets its own visit_let
    assert calls == [body]  # the values were pruned, the body visited


def test_code_after_super_runs_before_the_children_are_visited():
    x = var("x")
    inner = neg(x)
    root = add(inner, x)
    events = []

    class Trace(ExprVisitor):
        def visit_call(self, call):
            events.append(("enter", call))
            super().visit_call(call)
            events.append(("after super", call))

    Trace().visit(root)
    assert events == [("enter", root), ("after super", root),
                      ("enter", inner), ("after super", inner)]


def test_self_visit_inside_a_method_asks_for_the_node_in_order():
    x, y = var("x"), var("y")
    a, b = neg(x), neg(y)
    root = add(a, b)
    order = []

    class Reverse(ExprVisitor):
        def visit_call(self, call):
            order.append(call)
            for arg in reversed(call.args):  # no super(): only the args, last first
                self.visit(arg)

        def visit_var(self, v):
            order.append(v)

    Reverse().visit(root)
    assert order == [root, b, y, a, x]


def test_overriding_visit_can_prune_too():
    x, y = var("x"), var("y")
    skipped = neg(x)
    root = add(skipped, neg(y))
    seen = []

    class NoNeg(ExprVisitor):
        def visit(self, expr):
            seen.append(expr)
            if expr is not skipped:
                super().visit(expr)

    NoNeg().visit(root)
    assert skipped in seen and x not in seen
    assert y in seen and root.args[1] in seen


def test_a_visitor_is_reusable_after_a_method_raised():
    x = var("x")
    calls = []

    class Fails(ExprVisitor):
        def visit_call(self, call):
            calls.append(call)
            if call.op is TANH:
                raise ValueError("boom")
            super().visit_call(call)

    v = Fails()
    with pytest.raises(ValueError, match="boom"):
        v.visit(Call(TANH, [x]))
    other = neg(neg(x))
    v.visit(other)  # a new traversal: the failed one left nothing behind
    assert calls[-2:] == [other, other.args[0]]


def test_deeply_nested_functions_do_not_recurse():
    x = var("x")
    body = neg(x)
    depth = 20_000
    for i in range(depth):
        body = Call(Function([var(f"p{i}")], body), [x])
    rec = Counter()
    rec.visit(Function([x], body))
    assert rec.calls == depth + 1  # the calls of the functions and the neg


def test_pruning_visitor_on_a_deep_chain_does_not_recurse():
    x = var("x")
    deep = chain(100_000, x)
    n = [0]

    class Half(ExprVisitor):
        def visit_call(self, call):
            n[0] += 1
            if n[0] < 50_000:  # the 50,000th call prunes the rest of the chain
                super().visit_call(call)

    Half().visit(deep)
    assert n[0] == 50_000


@settings(max_examples=60, deadline=None)
@given(sts.modules(max_nodes=30), st.integers(0, 10))
def test_random_programs_are_visited_in_tvms_order_with_and_without_pruning(mod, k):
    main = mod["main"]
    sizes = []

    def prune(node):  # prune every call whose op name's length is k mod 11
        return type(node) is Call and len(getattr(node.op, "name", "")) % 11 == k

    for p in (lambda node: False, prune):
        rec = Recorder(p)
        rec.visit(main)
        assert rec.order == _tvm_order(main, p)
        sizes.append(len(rec.order))
    assert sizes[1] <= sizes[0]
