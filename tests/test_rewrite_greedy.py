"""The greedy rewrite driver (irpass.ir.dataflow_pattern.greedy), the rule index's quick
tests (index.py) and the rewrite context (context.py).

Every rewrite that changes a program is checked by evaluating before and after on
random inputs.
"""

from __future__ import annotations

import irpass
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from irpass import op
from irpass.ir import (
    Call,
    Function,
    Op,
    TensorType,
    Tuple,
    const,
    free_vars,
    structural_equal,
    var,
)
from irpass.ir.dataflow_pattern import (
    DFPatternCallback,
    RewriteLimitError,
    RewriteTypeError,
    dominates,
    is_constant,
    is_op,
    is_var,
    match,
    rewrite,
    rewrite_context,
    rewrite_greedy,
    wildcard,
)
from irpass.ir.dataflow_pattern.index import RuleIndex, quick_test
from irpass.ir.dataflow_pattern.matcher import Matcher, compiled_pattern
from work_counts import calls_made

S = (2, 3)


class Callback(DFPatternCallback):
    """A callback from a pattern and a function of (pre, post, node_map)."""

    def __init__(self, pattern, fn, **kwargs):
        super().__init__(**kwargs)
        self.pattern = pattern
        self.fn = fn

    def callback(self, pre, post, node_map):
        return self.fn(pre, post, node_map)


def assert_same(before, after):
    params = free_vars(before)
    assert not [v for v in free_vars(after) if v not in params]
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(p.type_annotation.shape).astype("float32") for p in params]
    want = irpass.evaluate(Function(params, before), *inputs)
    got = irpass.evaluate(Function(params, after), *inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def c(value):
    return const(np.float32(value))


def add_zero():
    x, z = wildcard(), is_constant()

    def fn(pre, post, m):
        return m[x][0] if not np.any(m[z][0].data) else post

    return Callback(is_op("add")(x, z), fn)


def merge_adds():
    """(x + c1) + c2 -> x + (c1 + c2), only when the inner add has no other user."""
    x, c1, c2 = wildcard(), is_constant(), is_constant()
    inner = is_op("add")(x, c1)

    def fn(pre, post, m):
        if not rewrite_context().single_use(m[inner][0]):
            return post
        return op.add(m[x][0], const(m[c1][0].data + m[c2][0].data))

    return Callback(is_op("add")(inner, c2), fn)


def double_negative():
    x = wildcard()
    return Callback(is_op("negative")(is_op("negative")(x)), lambda pre, post, m: m[x][0])


def all_nodes(expr):
    found = []
    irpass.ir.post_order_visit(expr, found.append)
    return found


# -- the walk ----------------------------------------------------------------------------


def test_fixed_point_in_one_walk_with_new_nodes_simplified_first():
    # ((x + 1) + 2) + 0: the merge builds x + 3, whose parent then loses its + 0
    x = var("x", shape=S)
    before = op.add(op.add(op.add(x, c(1)), c(2)), c(0))
    out = rewrite_greedy([add_zero(), merge_adds()], before)
    assert out.op is Op.get("add") and out.args[0] is x and float(out.args[1].data) == 3
    assert_same(before, out)


def test_a_rule_sees_its_inputs_simplified_and_retries_at_the_same_spot():
    # negative^5(x): bottom-up, every pair goes as soon as it forms
    x = var("x", shape=S)
    body = x
    for _ in range(5):
        body = op.negative(body)
    out = rewrite_greedy(double_negative(), body)
    assert out.op is Op.get("negative") and out.args[0] is x


def test_innermost_match_first_unlike_rewrite():
    # outer: exp(exp(x)) -> tanh(x); inner: exp(x) -> sigmoid(x). TVM's rounds claim the
    # outer match first; the greedy walk rewrites the inner exp before the outer is seen.
    x = var("x", shape=S)
    xo, xi = wildcard(), wildcard()
    outer = Callback(is_op("exp")(is_op("exp")(xo)), lambda pre, post, m: op.tanh(m[xo][0]))
    inner = Callback(is_op("exp")(xi), lambda pre, post, m: op.sigmoid(m[xi][0]))
    before = op.exp(op.exp(x))
    assert rewrite([outer, inner], before).op is Op.get("tanh")
    greedy = rewrite_greedy([outer, inner], before)
    assert greedy.op is Op.get("sigmoid") and greedy.args[0].op is Op.get("sigmoid")


def test_shared_nodes_stay_shared_and_the_input_is_not_changed():
    x = var("x", shape=S)
    s = op.exp(op.add(x, c(0)))
    before = op.multiply(s, op.negative(op.negative(s)))
    digest = irpass.structural_hash(before)
    out = rewrite_greedy([add_zero(), double_negative()], before)
    assert out.args[0] is out.args[1] and out.args[0].args[0] is x
    assert irpass.structural_hash(before) == digest
    assert before.args[0].args[0].op is Op.get("add")
    assert_same(before, out)


def test_nothing_to_do_returns_the_input_itself():
    x = var("x", shape=S)
    body = op.add(op.exp(x), op.exp(x))  # no constant operand: the quick tests fail
    assert rewrite_greedy([add_zero(), merge_adds()], body) is body
    # a match whose callback declines rebuilds nothing either
    body = op.add(x, c(1))
    assert rewrite_greedy(add_zero(), body) is body


def test_every_node_of_the_result_is_typed():
    x = var("x", shape=S)
    y = var("y", shape=S)
    before = op.multiply(op.add(op.add(op.add(x, c(1)), c(2)), c(0)), op.negative(y))
    out = rewrite_greedy([add_zero(), merge_adds()], before)
    assert all(n._checked_type is not None for n in all_nodes(out) if type(n) is not Op)
    assert out.checked_type == TensorType(S, "float32")


def test_rewrite_once_fires_on_input_nodes_only():
    x = var("x", shape=S)
    w = wildcard()
    # every negative gets one more around it: only the input's own negative is wrapped
    wrap = Callback(is_op("negative")(w), lambda pre, post, m: op.negative(op.negative(post)),
                    rewrite_once=True)
    out = rewrite_greedy(wrap, op.negative(x))
    depth, node = 0, out
    while type(node) is Call:
        depth, node = depth + 1, node.args[0]
    assert depth == 3


# -- use counts ----------------------------------------------------------------------------


def test_single_use_is_counted_in_the_current_program():
    x = var("x", shape=S)
    inner = op.add(x, c(1))
    # inner has a second user: no merge
    shared = Tuple([op.add(inner, c(2)), op.exp(inner)])
    assert rewrite_greedy(merge_adds(), shared) is shared
    # the second user is itself rewritten away before the merge is tried: the merge fires
    gone = Tuple([op.negative(op.negative(op.add(op.multiply(inner, c(0)), c(0)))),
                  op.add(inner, c(2))])
    dropped = Callback(is_op("multiply")(wildcard(), is_constant()),
                       lambda pre, post, m: const(np.zeros(S, "float32")))
    out = rewrite_greedy([dropped, add_zero(), double_negative(), merge_adds()], gone)
    merged = out.fields[1]
    assert merged.args[0] is x and float(merged.args[1].data) == 3


def test_uses_of_the_context():
    x = var("x", shape=S)
    seen = {}

    def fn(pre, post, m):
        ctx = rewrite_context()
        seen[post] = (ctx.uses(post.args[0]), ctx.single_use(post.args[0]))
        return post

    e = op.exp(x)
    body = Tuple([op.negative(e), e, op.add(e, e)])
    rewrite_greedy(Callback(is_op("negative")(wildcard()), fn), body)
    assert list(seen.values()) == [(4, False)]  # negative, the tuple, the add twice
    assert rewrite_context() is None


def test_options_and_caches_reach_the_callbacks():
    x = var("x", shape=S)
    got = []

    def fn(pre, post, m):
        ctx = rewrite_context()
        got.append((ctx.options, ctx.cache("memo", list) is ctx.cache("memo", list)))
        return post

    rewrite_greedy(Callback(is_op("exp")(wildcard()), fn), op.exp(x), options={"k": 7})
    [(options, same)] = got
    assert options["k"] == 7 and same
    with pytest.raises(TypeError):
        options["k"] = 1  # read-only


# -- bad rules -------------------------------------------------------------------------------


def test_a_replacement_of_another_type_is_an_error_naming_the_callback():
    x = var("x", shape=S)
    w = wildcard()
    summed = Callback(is_op("exp")(w), lambda pre, post, m: op.sum(m[w][0], axis=[1]))
    with pytest.raises(RewriteTypeError, match="Callback changed the type") as info:
        rewrite_greedy(summed, op.negative(op.exp(x)))
    assert info.value.kind == "changed" and info.value.callback is summed


def test_an_ill_typed_replacement_is_an_error():
    x = var("x", shape=S)
    w = wildcard()
    bad = Callback(is_op("exp")(w),
                   lambda pre, post, m: op.add(m[w][0], const(np.zeros(4, "float32"))))
    with pytest.raises(RewriteTypeError, match="ill-typed replacement: add of") as info:
        rewrite_greedy(bad, op.exp(x))
    assert info.value.kind == "ill-typed"


def test_not_an_expression_is_a_type_error():
    x = var("x", shape=S)
    with pytest.raises(TypeError, match="returned int 42, not an Expr"):
        rewrite_greedy(Callback(is_op("exp")(wildcard()), lambda pre, post, m: 42), op.exp(x))


def test_rules_that_never_settle_stop_at_the_bound():
    x = var("x", shape=S)
    a, b = wildcard(), wildcard()
    to_log = Callback(is_op("exp")(a), lambda pre, post, m: op.log(m[a][0]))
    to_exp = Callback(is_op("log")(b), lambda pre, post, m: op.exp(m[b][0]))
    with pytest.raises(RewriteLimitError, match="after 7 rewrites at one node") as info:
        rewrite_greedy([to_log, to_exp], op.exp(x), max_rounds=7)
    assert set(info.value.callbacks) == {to_log, to_exp}


def test_dominator_patterns_are_refused():
    d = dominates(wildcard(), wildcard(), is_op("add")(wildcard(), wildcard()))
    with pytest.raises(TypeError, match="dominator pattern"):
        rewrite_greedy(Callback(d, lambda pre, post, m: post), op.exp(var("x", shape=S)))


# -- size --------------------------------------------------------------------------------------


def _chain(n):
    x = var("x", shape=S)
    body = x
    for i in range(n):
        body = op.add(body, c(1)) if i % 2 else op.tanh(op.add(body, c(0)))
    return body


def test_deep_chain_is_linear_and_iterative():
    def rewrite(n):
        out = rewrite_greedy([add_zero(), merge_adds()], _chain(n))
        tanhs, node = 0, out
        while type(node) is Call:
            tanhs += node.op is Op.get("tanh")
            node = node.args[0]
        assert tanhs == n // 2

    calls = [calls_made(lambda n=n: rewrite(n))[1] for n in (1_000, 4_000)]
    assert calls[1] < 5 * calls[0]  # 4x the nodes: about 4x the calls, not 16x
    rewrite(80_000)  # deep: iterative, no RecursionError (not counted: counting is slow)


# -- quick tests ------------------------------------------------------------------------------

_OPS = ("add", "multiply", "subtract", "negative", "exp")


@st.composite
def patterns(draw, depth=2):
    leaves = ["wild", "const", "var", "named"]
    kind = draw(st.sampled_from([*leaves, "call", "alt", "dtype", "any"] if depth else leaves))
    if kind == "wild":
        return wildcard()
    if kind == "const":
        return is_constant()
    if kind == "var":
        return is_var()
    if kind == "named":
        return is_var(draw(st.sampled_from(["x", "y"])))
    if kind == "alt":
        return draw(patterns(depth=depth - 1)) | draw(patterns(depth=depth - 1))
    if kind == "dtype":
        return draw(patterns(depth=depth - 1)).has_dtype(draw(st.sampled_from(["float32",
                                                                              "int32"])))
    name = draw(st.sampled_from(_OPS))
    if kind == "any":
        return is_op(name)(None)
    arity = 1 if name in ("negative", "exp") else 2
    return is_op(name)(*[draw(patterns(depth=depth - 1)) for _ in range(arity)])


_LEAVES = [var("x", shape=S), var("y", shape=S), c(1), c(0)]


@st.composite
def exprs(draw, depth=3):
    if not depth or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(_LEAVES))
    name = draw(st.sampled_from(_OPS))
    arity = 1 if name in ("negative", "exp") else 2
    return getattr(op, name)(*[draw(exprs(depth=depth - 1)) for _ in range(arity)])


@settings(max_examples=300, deadline=None)
@given(patterns(), exprs())
def test_a_failed_quick_test_means_no_match(pattern, expr):
    for name in [None, *(expr.op.name,)] if type(expr) is Call else [None]:
        test = quick_test(pattern, name)
        if test is not None and not test(expr):
            assert not match(pattern, expr)
    index = RuleIndex([Callback(pattern, lambda pre, post, m: post)])
    if type(expr) is Call and type(expr.op) is Op:
        gate = index.gate(expr.op.name)
        if gate is not None and not gate(expr):
            assert not match(pattern, expr)
    if not index.may_fire(expr):
        assert not any(match(pattern, n) for n in all_nodes(expr) if type(n) is not Op)


@st.composite
def instances(draw, pattern):
    """An expression built to match ``pattern`` (mostly), add/multiply arguments swapped
    at random."""
    from irpass.ir.dataflow_pattern import (
        AltPattern,
        CallPattern,
        ConstantPattern,
        DataTypePattern,
        VarPattern,
    )

    t = type(pattern)
    if t is ConstantPattern:
        return draw(st.sampled_from(_LEAVES[2:]))
    if t is VarPattern:
        names = [pattern.name] if pattern.name else ["x", "y"]
        return draw(st.sampled_from([v for v in _LEAVES[:2] if v.name_hint in names]))
    if t is AltPattern:
        return draw(instances(draw(st.sampled_from([pattern.left, pattern.right]))))
    if t is DataTypePattern:
        return draw(instances(pattern.pattern))
    if t is CallPattern:
        name = pattern.op.expr.name
        if pattern.args is None:
            return draw(exprs(depth=1)) if name not in _OPS else getattr(op, name)(
                *[draw(exprs(depth=1)) for _ in range(1 if name in ("negative", "exp") else 2)])
        args = [draw(instances(a)) for a in pattern.args]
        if len(args) == 2 and name in ("add", "multiply") and draw(st.booleans()):
            args.reverse()
        return getattr(op, name)(*args)
    return draw(exprs(depth=2))


@st.composite
def pattern_and_expr(draw):
    pattern = draw(patterns())
    expr = draw(st.one_of(exprs(), instances(pattern)))
    return pattern, expr


@settings(max_examples=400, deadline=None)
@given(pattern_and_expr())
def test_compiled_patterns_match_as_the_generic_matcher(case):
    pattern, expr = case
    fast = compiled_pattern(pattern)
    assume(fast is not None)
    generic = Matcher(None)
    generic.memoize = True
    want = generic.visit(pattern, expr)
    found = []
    assert fast(expr, found) == want
    if want:
        assert {p: [e] for p, e in found} == generic.memo
    else:
        assert found == []


def test_quick_tests_look_at_argument_kinds_in_both_orders():
    test = quick_test(is_op("add")(wildcard(), is_constant()), "add")
    x = var("x", shape=S)
    assert test(op.add(x, c(1))) and test(op.add(c(1), x))
    assert not test(op.add(x, x))
    test = quick_test(is_op("subtract")(wildcard(), is_constant()), "subtract")
    assert not test(op.subtract(c(1), x))


def test_the_scan_finds_the_one_node_that_may_fire():
    x = var("x", shape=S)
    body = x
    for _ in range(10_000):
        body = op.add(op.exp(body), body)
    index = RuleIndex([add_zero(), merge_adds()])
    assert not index.may_fire(body)
    assert index.may_fire(op.add(op.exp(op.add(body, c(0))), body))


def test_prepared_callbacks_serve_both_drivers_many_times():
    from irpass.ir.dataflow_pattern import prepare

    x = var("x", shape=S)
    before = op.add(op.add(op.add(x, c(1)), c(2)), c(0))
    prepared = prepare([add_zero(), merge_adds()])
    assert prepare(prepared.callbacks) is prepared  # the same callbacks: the same index
    for _ in range(2):
        greedy = rewrite_greedy(prepared, before)
        assert greedy.args[0] is x and float(greedy.args[1].data) == 3
        # the rounds: add_zero matches (and declines) at (x + 1) + 2 first, claiming it
        assert structural_equal(rewrite(prepared, before),
                                rewrite([add_zero(), merge_adds()], before))
    with pytest.raises(TypeError, match=r"callbacks\[1\] must be a DFPatternCallback"):
        prepare([add_zero(), 42])
