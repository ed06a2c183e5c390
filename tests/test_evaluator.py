"""The numpy evaluator (irpass.evaluate)."""

import math

import irpass
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from irpass import TypeInferenceError, evaluate
from irpass import op as O
from irpass.evaluator import Closure
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
    TupleType,
    Var,
    const,
    var,
)
from irpass.ir.op import OpPattern, register_op

KERNEL_CALLS = {"n": 0}


def _counting_add(args, attrs):
    KERNEL_CALLS["n"] += 1
    return args[0] + args[1]


def _same(types, attrs):
    return types[0]


CADD = register_op("test_ev.counting_add", num_inputs=2, type_rel=_same, kernel=_counting_add,
                   pattern=OpPattern.BROADCAST, owner="tests", override=True)
NEG = register_op("test_ev.neg", num_inputs=1, type_rel=_same, kernel=lambda a, at: -a[0],
                  pattern=OpPattern.ELEMWISE, owner="tests", override=True)
WRONG_DTYPE = register_op("test_ev.wrong_dtype", num_inputs=1, type_rel=_same,
                          kernel=lambda a, at: a[0].astype("float64"),
                          pattern=OpPattern.OPAQUE, owner="tests", override=True)
WRONG_SHAPE = register_op("test_ev.wrong_shape", num_inputs=1, type_rel=_same,
                          kernel=lambda a, at: a[0][:1], pattern=OpPattern.OPAQUE,
                          owner="tests", override=True)
WRONG_TUPLE = register_op("test_ev.wrong_tuple", num_inputs=1,
                          type_rel=lambda ts, at: TupleType([ts[0], ts[0]]),
                          kernel=lambda a, at: (a[0],), pattern=OpPattern.OPAQUE,
                          owner="tests", override=True)
CRASH = register_op("test_ev.crash", num_inputs=1, type_rel=_same,
                    kernel=lambda a, at: 1 // 0, pattern=OpPattern.OPAQUE,
                    owner="tests", override=True)

I64 = TensorType((), "int64")
RNG = np.random.default_rng(0)


def f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


def i64(v):
    return const(v, "int64")


# -- node kinds --------------------------------------------------------------------------


def test_ops_lets_tuples_and_projections():
    x = var("x", shape=(2, 3))
    y = var("y", shape=(3,))
    t = Var("t")
    body = Let(t, Tuple([O.add(x, y), O.multiply(x, const(2.0))]),
               Tuple([TupleGetItem(t, 1), O.nn.relu(TupleGetItem(t, 0))]))
    a, b = f32(2, 3), f32(3)
    out = evaluate(Function([x, y], body), a, b)
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_allclose(out[0], a * 2)
    np.testing.assert_allclose(out[1], np.maximum(a + b, 0))
    assert out[1].dtype == np.float32


def test_nested_tuple_result():
    x = var("x", shape=(2,))
    out = evaluate(Function([x], Tuple([x, Tuple([O.negative(x), Tuple([])])])), [1.0, 2.0])
    assert isinstance(out[1], tuple) and out[1][1] == ()
    np.testing.assert_array_equal(out[1][0], np.array([-1.0, -2.0], "float32"))


def test_if_runs_only_the_taken_branch():
    c = var("c", shape=(), dtype="bool")
    x = var("x", shape=(3,))
    f = Function([c, x], If(c, O.negative(x), Call(CADD, [x, x])))
    a = f32(3)
    KERNEL_CALLS["n"] = 0
    np.testing.assert_array_equal(evaluate(f, True, a), -a)
    assert KERNEL_CALLS["n"] == 0
    np.testing.assert_array_equal(evaluate(f, np.array(False), a), a + a)
    assert KERNEL_CALLS["n"] == 1


def test_closed_expression_and_constants():
    out = evaluate(O.add(const([1.0, 2.0]), const(0.5)))
    np.testing.assert_array_equal(out, np.array([1.5, 2.5], "float32"))
    assert evaluate(const(7, "int64")) == 7


def test_global_function_calls():
    p = var("p", shape=(3,))
    x = var("x", shape=(3,))
    mod = IRModule({
        "main": Function([x], O.add(Call(GlobalVar("double"), [x]), const(1.0))),
        "double": Function([p], O.multiply(p, const(2.0))),
    })
    a = f32(3)
    np.testing.assert_allclose(evaluate(mod, a), a * 2 + 1)


# -- closures ------------------------------------------------------------------------------


def test_closure_captures_its_environment():
    x = var("x", shape=(3,))
    p = var("p", shape=(3,))
    f = Var("f")
    # let f = fn (p) { p * x }; f(f(x))
    body = Let(f, Function([p], O.multiply(p, x)), Call(f, [Call(f, [x])]))
    a = f32(3)
    np.testing.assert_allclose(evaluate(Function([x], body), a), a * a * a, rtol=1e-6)


def test_closures_made_by_a_function_keep_their_own_captures():
    # let mk = fn (a) { fn (b) { a + b } }; let f1 = mk(1); let f10 = mk(10); (f1(x), f10(x))
    s = TensorType((), "float32")
    a = var("a", s)
    b = var("b", s)
    mk, f1, f10 = Var("mk"), Var("f1"), Var("f10")
    x = var("x", s)
    body = Let(mk, Function([a], Function([b], O.add(a, b))),
               Let(f1, Call(mk, [const(1.0)]),
                   Let(f10, Call(mk, [const(10.0)]),
                       Tuple([Call(f1, [x]), Call(f10, [x])]))))
    out = evaluate(Function([x], body), 5.0)
    assert float(out[0]) == 6.0 and float(out[1]) == 15.0


def test_function_result_is_a_callable_closure():
    s = TensorType((), "float32")
    a, b = var("a", s), var("b", s)
    mk = Function([a], Function([b], O.multiply(a, b)))
    closure = evaluate(mk, 3.0)
    assert isinstance(closure, Closure)
    assert float(closure(4.0)) == 12.0
    assert float(closure(b=0.5)) == 1.5
    with pytest.raises(ValueError, match=r"missing input for parameter %b \(position 0\)"):
        closure()


def test_closure_as_an_input():
    s = TensorType((), "float32")
    a, b = var("a", s), var("b", s)
    times_three = evaluate(Function([a], Function([b], O.multiply(a, b))), 3.0)
    f = var("f", FuncType([s], s))
    x = var("x", s)
    apply_twice = Function([f, x], Call(f, [Call(f, [x])]))
    assert float(evaluate(apply_twice, times_three, 2.0)) == 18.0
    with pytest.raises(ValueError, match=r"parameter %f \(position 0\).*expected a function"):
        evaluate(apply_twice, 1.0, 2.0)


def test_let_bound_recursive_closure():
    f = Var("f", FuncType([I64], I64))
    n = var("n", I64)
    acc = Var("acc")
    # let f = fn (n) { if (n < 1) 0 else n + f(n - 1) }; f(100)
    rec = Function([n], If(O.less(n, i64(1)), i64(0),
                           Let(acc, Call(f, [O.subtract(n, i64(1))]), O.add(n, acc))))
    out = evaluate(Let(f, rec, Call(f, [i64(100)])))
    assert int(out) == sum(range(101))


# -- recursion between global functions -----------------------------------------------------


def _factorial_module():
    n = var("n", I64)
    fact = Function(
        [n],
        If(O.less(n, i64(1)), i64(1),
           O.multiply(n, Call(GlobalVar("fact"), [O.subtract(n, i64(1))]))),
        ret_type=I64,
    )
    m = var("m", I64)
    return IRModule({"main": Function([m], Call(GlobalVar("fact"), [m])), "fact": fact})


@pytest.mark.parametrize("k", [0, 1, 5, 20])
def test_factorial(k):
    assert int(evaluate(_factorial_module(), k)) == math.factorial(k)


def test_deep_recursion_does_not_use_the_python_stack():
    k = var("k", I64)
    count = Function([k], If(O.less(k, i64(1)), k,
                             Call(GlobalVar("count"), [O.subtract(k, i64(1))])), ret_type=I64)
    x = var("x", I64)
    mod = IRModule({"main": Function([x], Call(GlobalVar("count"), [x])), "count": count})
    assert int(evaluate(mod, 20_000)) == 0  # 20,000 nested IR calls


def test_mutual_recursion():
    def parity(other, base):
        n = var("n", I64)
        return Function([n], If(O.less(n, i64(1)), const(base),
                                Call(GlobalVar(other), [O.subtract(n, i64(1))])),
                        ret_type=TensorType((), "bool"))

    x = var("x", I64)
    mod = IRModule({"main": Function([x], Call(GlobalVar("even"), [x])),
                    "even": parity("odd", True), "odd": parity("even", False)})
    for k in range(6):
        assert bool(evaluate(mod, k)) == (k % 2 == 0)


# -- inputs --------------------------------------------------------------------------------


def _two_inputs():
    x = var("x", shape=(2, 2))
    y = var("y", shape=(2,), dtype="int32")
    return Function([x, y], Tuple([x, y]))


def test_inputs_by_position_name_and_both():
    f = _two_inputs()
    a = f32(2, 2)
    b = np.array([1, 2], "int32")
    for out in (evaluate(f, a, b), evaluate(f, y=b, x=a), evaluate(f, a, y=b)):
        np.testing.assert_array_equal(out[0], a)
        np.testing.assert_array_equal(out[1], b)


def test_python_values_are_converted_to_the_param_dtype():
    out = evaluate(_two_inputs(), [[1, 2], [3, 4]], [5, 6])
    assert out[0].dtype == np.float32 and out[1].dtype == np.int32
    np.testing.assert_array_equal(out[0], [[1.0, 2.0], [3.0, 4.0]])


def test_tuple_params_take_python_tuples():
    t = var("t", TupleType([TensorType((2,)), TensorType((), "int64")]))
    f = Function([t], TupleGetItem(t, 0))
    np.testing.assert_array_equal(evaluate(f, ([1.0, 2.0], 3)), np.array([1.0, 2.0], "float32"))
    with pytest.raises(ValueError, match=r"%t \(position 0\).*expected a tuple of 2 field"):
        evaluate(f, ([1.0, 2.0],))
    with pytest.raises(ValueError, match=r"%t \(position 0\).*expected a tuple"):
        evaluate(f, [1.0, 2.0])
    with pytest.raises(ValueError, match=r"%t \(position 0\).* field 1: expected "
                                         r"Tensor\[\(\), int64\]"):
        evaluate(f, ([1.0, 2.0], np.int32(3)))


def test_missing_input():
    with pytest.raises(ValueError, match=r"missing input for parameter %y \(position 1\) of the "
                                         r"function, of type Tensor\[\(2,\), int32\]"):
        evaluate(_two_inputs(), f32(2, 2))


def test_extra_positional_input():
    with pytest.raises(ValueError, match=r"takes 2 input\(s\) \(%x, %y\), got 3 positional"):
        evaluate(_two_inputs(), f32(2, 2), [1, 2], [3])


def test_unknown_input_name():
    with pytest.raises(ValueError, match=r"no parameter named 'z' \(parameters: %x, %y\)"):
        evaluate(_two_inputs(), f32(2, 2), [1, 2], z=1)


def test_input_given_twice():
    with pytest.raises(ValueError, match=r"parameter %x \(position 0\).* given twice"):
        evaluate(_two_inputs(), f32(2, 2), [1, 2], x=f32(2, 2))


def test_wrong_shape_and_dtype():
    f = _two_inputs()
    with pytest.raises(ValueError, match=r"parameter %x \(position 0\) of the function: expected "
                                         r"Tensor\[\(2, 2\), float32\], got an array of shape "
                                         r"\(3, 2\) and dtype float32"):
        evaluate(f, f32(3, 2), [1, 2])
    with pytest.raises(ValueError, match=r"parameter %x \(position 0\).*got an array of shape "
                                         r"\(2, 2\) and dtype float64"):
        evaluate(f, np.zeros((2, 2)), [1, 2])
    with pytest.raises(ValueError, match=r"parameter %y \(position 1\).*Tensor\[\(2,\), int32\], "
                                         r"got a list of shape \(3,\)"):
        evaluate(f, f32(2, 2), [1, 2, 3])
    with pytest.raises(ValueError, match=r"parameter %y \(position 1\).*\[1.5, 2\] does not fit "
                                         r"Tensor\[\(2,\), int32\]"):
        evaluate(f, f32(2, 2), [1.5, 2])
    with pytest.raises(ValueError, match=r"parameter %y \(position 1\).*got str"):
        evaluate(f, f32(2, 2), "12")


def test_a_float_that_overflows_its_dtype_is_refused():
    z = var("z", shape=(), dtype="float16")
    with pytest.raises(ValueError, match=r"parameter %z \(position 0\) of the function: "
                                         r"10000000000.0 is out of the range of float16 "
                                         r"\(it would become inf\)"):
        evaluate(Function([z], z), 1e10)
    w = var("w", shape=(3,), dtype="float32")
    with pytest.raises(ValueError, match=r"parameter %w .*-1e\+300 is out of the range of "
                                         r"float32 \(it would become -inf\)"):
        evaluate(Function([w], w), [1.0, -1e300, 2.0])
    # Rounding, infinities and NaN given as such are not value changes the check refuses.
    assert evaluate(Function([z], z), 65504.0) == np.float16(65504.0)
    assert evaluate(Function([z], z), math.inf) == np.inf
    assert np.isnan(evaluate(Function([w], w), [0.1, math.nan, 1 / 3])[1])


# -- results are fresh arrays ---------------------------------------------------------------

MUTATE = register_op("test_ev.mutate", num_inputs=1, type_rel=_same,
                     kernel=lambda a, at: np.negative(a[0], out=a[0]),
                     pattern=OpPattern.OPAQUE, owner="tests", override=True)
VIEW = register_op("test_ev.view", num_inputs=1, type_rel=_same, kernel=lambda a, at: a[0][...],
                   pattern=OpPattern.OPAQUE, owner="tests", override=True)


def _writable_and_separate(out, *others):
    assert out.flags.writeable
    for o in others:
        assert not np.shares_memory(out, o)


def test_results_never_alias_inputs():
    x = var("x", shape=(2, 3))
    a = f32(2, 3)
    keep = a.copy()
    for body in (x, O.reshape(x, (6,)), Call(VIEW, [x]), TupleGetItem(Tuple([x, x]), 1)):
        out = evaluate(Function([x], body), a)
        _writable_and_separate(out, a)
        np.testing.assert_array_equal(out.reshape(2, 3), keep)
        out[...] = 42.0
        np.testing.assert_array_equal(a, keep)
    # Also for a view the caller passes, for tuple inputs and for inputs by name.
    big = f32(4, 3)
    out = evaluate(Function([x], Call(VIEW, [x])), x=big[:2])
    _writable_and_separate(out, big)
    t = var("t", TupleType([TensorType((2,)), TensorType((2,))]))
    pair = (f32(2), f32(2))
    out = evaluate(Function([t], Tuple([TupleGetItem(t, 1), TupleGetItem(t, 0)])), pair)
    _writable_and_separate(out[0], *pair)
    _writable_and_separate(out[1], *pair)


def test_results_never_alias_constants_or_each_other():
    data = np.arange(3, dtype="float32")
    c = const(data)
    out = evaluate(c)
    _writable_and_separate(out, c.data)
    out[0] = 7.0
    np.testing.assert_array_equal(c.data, data)
    x = var("x", shape=(3,))
    y = O.negative(x)
    out = evaluate(Function([x], Tuple([y, y, Call(VIEW, [y]), c])), data)
    for i, o in enumerate(out):
        _writable_and_separate(o, *out[:i], c.data)
    np.testing.assert_array_equal(out[1], -data)


def test_closure_results_are_fresh_too():
    x, p = var("x", shape=(2,)), var("p", shape=(2,))
    a = f32(2)
    # fn(x) { fn(p) { x } }: the closure's result is the captured input
    clo = evaluate(Function([x], Function([p], x)), a)
    out = clo(f32(2))
    _writable_and_separate(out, a)
    np.testing.assert_array_equal(out, a)
    b = f32(2)
    out = Closure(Function([p], p), {})(b)
    _writable_and_separate(out, b)


def test_kernels_cannot_change_the_inputs():
    x = var("x", shape=(2,))
    a = f32(2)
    keep = a.copy()
    with pytest.raises(irpass.EvaluationError, match=r"test_ev.mutate.*read-only"):
        evaluate(Function([x], Call(MUTATE, [x])), a)
    np.testing.assert_array_equal(a, keep)


def test_module_inputs_name_main():
    x = var("x", shape=(1,))
    with pytest.raises(ValueError, match=r"parameter %x \(position 0\) of @main"):
        evaluate(IRModule({"main": Function([x], x)}), [1.0, 2.0])


def test_expressions_take_no_inputs_and_must_be_closed():
    with pytest.raises(ValueError, match=r"takes no inputs"):
        evaluate(const(1.0), 2.0)
    z = var("z", shape=(1,))
    with pytest.raises(ValueError, match=r"free variables \(%z\)"):
        evaluate(O.negative(z))


def test_module_without_main():
    x = var("x", shape=(1,))
    with pytest.raises(ValueError, match=r"no @main .*@other"):
        evaluate(IRModule({"other": Function([x], x)}))


def test_ill_typed_program_fails_before_running():
    x = var("x", shape=(3,))
    y = var("y", shape=(4,))
    KERNEL_CALLS["n"] = 0
    f = Function([x, y], Tuple([Call(CADD, [x, x]), O.add(x, y)]))
    with pytest.raises(TypeInferenceError, match=r"'add'"):
        evaluate(f, f32(3), f32(4))
    assert KERNEL_CALLS["n"] == 0


# -- misbehaving kernels ---------------------------------------------------------------------


@pytest.mark.parametrize("bad_op, message", [
    (WRONG_DTYPE, r"kernel of op 'test_ev.wrong_dtype' returned an array of shape \(3,\) and "
                  r"dtype float64, but the op's type relation says Tensor\[\(3,\), float32\]"),
    (WRONG_SHAPE, r"kernel of op 'test_ev.wrong_shape' returned an array of shape \(1,\)"),
    (WRONG_TUPLE, r"kernel of op 'test_ev.wrong_tuple' returned tuple .* type relation says "
                  r"\(Tensor\[\(3,\), float32\], Tensor\[\(3,\), float32\]\)"),
])
def test_kernel_result_is_checked(bad_op, message):
    x = var("x", shape=(3,))
    with pytest.raises(irpass.EvaluationError, match=message):
        evaluate(Function([x], Call(bad_op, [x])), f32(3))


def test_kernel_exception_names_the_op():
    x = var("x", shape=(3,))
    with pytest.raises(irpass.EvaluationError, match=r"kernel of op 'test_ev.crash' failed with "
                                           r"ZeroDivisionError") as info:
        evaluate(Function([x], Call(CRASH, [x])), f32(3))
    assert isinstance(info.value.__cause__, ZeroDivisionError)


# -- sharing and depth ---------------------------------------------------------------------


def test_shared_nodes_run_once_per_activation():
    p = var("p", shape=(2,))
    e = p
    for _ in range(50):  # 2**50 paths through the DAG
        e = Call(CADD, [e, e])
    x = var("x", shape=(2,))
    mod = IRModule({"main": Function([x], Tuple([Call(GlobalVar("f"), [x]),
                                                 Call(GlobalVar("f"), [x])])),
                    "f": Function([p], e)})
    KERNEL_CALLS["n"] = 0
    out = evaluate(mod, np.array([1.0, -1.0], "float32"))
    assert KERNEL_CALLS["n"] == 100  # 50 per call of @f
    np.testing.assert_array_equal(out[0], np.array([2.0**50, -(2.0**50)], "float32"))


def _chain(n):
    x = var("x", shape=(2,))
    e = x
    for _ in range(n):
        e = Call(NEG, [e])
    return Function([x], e)


def _let_chain(n):
    x = var("x", shape=(2,))
    vs = [Var(f"v{i}") for i in range(n)]
    body = vs[-1]
    for i in reversed(range(n)):
        body = Let(vs[i], Call(NEG, [vs[i - 1] if i else x]), body)
    return Function([x], body)


def test_long_chains():
    a = np.array([1.0, -2.0], "float32")
    np.testing.assert_array_equal(evaluate(_chain(100_001), a), -a)
    np.testing.assert_array_equal(evaluate(_let_chain(100_000), a), a)


@pytest.mark.slow
def test_million_node_chain():
    a = np.array([1.0, -2.0], "float32")
    np.testing.assert_array_equal(evaluate(_chain(1_000_000), a), a)


def test_nested_closures_visit_each_node_a_bounded_number_of_times(monkeypatch):
    # fn(x) { (fn(p0) { (fn(p1) { ... x ... })(x) })(x) }: every call makes a closure that
    # captures x. Finding its captures by walking each body again reads Function.body about
    # depth**2 / 2 times; the interpreter must stay linear in the depth.
    for depth in (200, 400):
        x = Var("x", TensorType((), "float32"))
        body = x
        for i in range(depth):
            body = Call(Function([Var(f"p{i}", TensorType((), "float32"))], body), [x])
        main = Function([x], body)
        irpass.ir.infer_type(main)
        slot = Function.__dict__["body"]
        reads = [0]

        def counted(node, slot=slot, reads=reads):
            reads[0] += 1
            return slot.__get__(node, Function)

        monkeypatch.setattr(Function, "body", property(counted, slot.__set__))
        assert Closure(main, {})(np.float32(2.5)) == np.float32(2.5)
        monkeypatch.undo()
        assert reads[0] <= 6 * depth, (depth, reads[0])


# -- real ops against numpy references -----------------------------------------------------


def test_mlp_against_numpy():
    x = var("x", shape=(4, 8))
    w1, b1 = f32(16, 8), f32(16)
    w2, b2 = f32(3, 16), f32(3)
    h = O.nn.relu(O.nn.bias_add(O.nn.dense(x, const(w1)), const(b1)))
    out = O.nn.softmax(O.nn.bias_add(O.nn.dense(h, const(w2)), const(b2)))
    data = f32(4, 8)
    got = evaluate(IRModule.from_expr(out), data)
    hidden = np.maximum(data @ w1.T + b1, 0)
    logits = hidden @ w2.T + b2
    expected = np.exp(logits - logits.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


_BINARY = {"add": (O.add, np.add), "multiply": (O.multiply, np.multiply),
           "subtract": (O.subtract, np.subtract), "maximum": (O.maximum, np.maximum)}
_UNARY = {"negative": (O.negative, np.negative), "tanh": (O.tanh, np.tanh)}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(_BINARY) + sorted(_UNARY)),
                          st.integers(0, 10**6), st.integers(0, 10**6)),
                min_size=1, max_size=25))
def test_random_dataflow_graphs_match_numpy(steps):
    # Build the same DAG twice: as IR and as a plain numpy computation.
    x = var("x", shape=(2, 3))
    y = var("y", shape=(3,))
    data = {"x": f32(2, 3), "y": f32(3)}
    nodes = [x, y]
    values = [data["x"], data["y"]]
    for name, i, j in steps:
        a, b = i % len(nodes), j % len(nodes)
        if name in _BINARY:
            build, ref = _BINARY[name]
            nodes.append(build(nodes[a], nodes[b]))
            values.append(ref(values[a], values[b]))
        else:
            build, ref = _UNARY[name]
            nodes.append(build(nodes[a]))
            values.append(ref(values[a]))
    out = evaluate(Function([x, y], Tuple(nodes[2:])), **data)
    for got, want in zip(out, values[2:], strict=True):
        np.testing.assert_allclose(got, want.astype("float32"), rtol=1e-5, atol=1e-5)


def test_evaluate_is_reexported():
    assert irpass.evaluate is evaluate
