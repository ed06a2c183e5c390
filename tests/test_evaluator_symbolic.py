"""The evaluator on symbolic programs (issue 20): each call of a function binds the size
variables of its params from the shapes of its arguments, symbolic attributes reach the
kernels as ints, and each op's result is checked against its type with those values (the
run-time check of what a type relation assumed)."""

import re

import irpass
import numpy as np
import pytest
from irpass import EvaluationError, evaluate
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
    TupleType,
    Var,
    const,
    var,
)
from irpass.ir.dims import SizeVar
from irpass.ir.op import AttrField, OpPattern, register_op

RNG = np.random.default_rng(20)
I64 = TensorType((), "int64")
N, M, K = SizeVar("n"), SizeVar("m"), SizeVar("k")


def f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


def i64(v):
    return const(np.int64(v))


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# An op whose attribute passes symbolic dims through as they are (whatever the converters
# of the core ops do), to see what its kernel gets: a tensor of ones of shape `shape`.
SEEN_ATTRS: list = []


def _fill_kernel(args, attrs):
    SEEN_ATTRS.append(attrs["shape"])
    return np.ones(attrs["shape"], "float32")


FILL = register_op(
    "test_evsym.fill",
    num_inputs=0,
    type_rel=lambda types, attrs: TensorType(attrs["shape"], "float32"),
    kernel=_fill_kernel,
    pattern=OpPattern.OPAQUE,
    attrs=[AttrField("shape", lambda v, where: tuple(v))],
    owner="tests",
    override=True,
)

# An op whose relation says "same type as the input" but whose kernel drops a row: a
# relation and a kernel that disagree, seen on a symbolic type.
DROP_ROW = register_op(
    "test_evsym.drop_row",
    num_inputs=1,
    type_rel=lambda types, attrs: types[0],
    kernel=lambda args, attrs: args[0][1:],
    pattern=OpPattern.OPAQUE,
    owner="tests",
    override=True,
)


# -- programs at several sizes against numpy ---------------------------------------------------


def test_dense_relu_runs_at_each_batch_size():
    mod = irpass.parse("""
        def @main(%x: Tensor[(n, 16), float32], %w: Tensor[(8, 16), float32]) {
          nn.relu(nn.dense(%x, %w))
        }""")
    w = f32(8, 16)
    for n in (1, 4, 9):
        x = f32(n, 16)
        out = evaluate(mod, x, w)
        assert out.shape == (n, 8)
        np.testing.assert_allclose(out, np.maximum(x @ w.T, 0), rtol=1e-5, atol=1e-6)


def test_two_symbolic_inputs_broadcast_against_each_other():
    mod = irpass.parse("""
        def @main(%a: Tensor[(n, 1), float32], %b: Tensor[(m,), float32]) {
          %0 = add(%a, %b);
          %1 = multiply(%0, %a);
          sum(nn.softmax(%1, axis=1), axis=[0])
        }""")
    for n, m in ((2, 3), (5, 1), (1, 4)):
        a, b = f32(n, 1), f32(m)
        out = evaluate(mod, a, b)
        assert out.shape == (m,)
        np.testing.assert_allclose(out, softmax((a + b) * a, axis=1).sum(axis=0), rtol=1e-5)


def test_attention_block_with_symbolic_batch_and_sequence():
    mod = irpass.parse("""
        def @main(%x: Tensor[(b, s, 8), float32], %w: Tensor[(8, 8), float32]) {
          %0 = nn.dense(%x, %w);
          %1 = reshape(%0, newshape=[b, s, 2, -1]);
          %2 = transpose(%1, axes=[0, 2, 1, 3]);
          %3 = reshape(%2, newshape=[-1, s, 4]);
          %4 = nn.batch_matmul(%3, %3);
          %5 = nn.softmax(%4, axis=-1);
          %6 = nn.batch_matmul(%5, %3, transpose_b=False);
          reshape(%6, newshape=[b, 2, s, 4])
        }""")
    w = f32(8, 8)
    for b, s in ((1, 1), (2, 5), (3, 16)):
        x = f32(b, s, 8)
        heads = (x @ w.T).reshape(b, s, 2, 4).transpose(0, 2, 1, 3).reshape(b * 2, s, 4)
        probs = softmax(heads @ heads.transpose(0, 2, 1))
        want = (probs @ heads).reshape(b, 2, s, 4)
        np.testing.assert_allclose(evaluate(mod, x, w), want, rtol=1e-4, atol=1e-6)


def test_symbolic_attributes_of_core_ops_get_the_bound_values():
    mod = irpass.parse("""
        def @main(%x: Tensor[(n, 4), float32]) {
          %0 = ones(shape=[n, 4], dtype="float32");
          %1 = add(%x, %0);
          %2 = strided_slice(%1, begin=[0, 1], end=[n, 3]);
          %3 = reshape(%x, newshape=[n, 2, 2]);
          concatenate((%2, reshape(%3, newshape=[n, -1])), axis=1)
        }""")
    for n in (1, 3, 6):
        x = f32(n, 4)
        want = np.concatenate([(x + 1)[:, 1:3], x.reshape(n, 2, 2).reshape(n, 4)], axis=1)
        np.testing.assert_allclose(evaluate(mod, x), want, rtol=1e-6)


def test_a_kernel_only_ever_sees_ints_in_its_attributes():
    x = var("x", shape=(N, 3))
    fn = Function([x], O.concatenate([x, Call(FILL, [], {"shape": (N * 2 - 4, 3)})], axis=0))
    SEEN_ATTRS.clear()
    out = evaluate(fn, np.zeros((4, 3), "float32"))
    np.testing.assert_array_equal(out, np.r_[np.zeros((4, 3)), np.ones((4, 3))])
    assert SEEN_ATTRS == [(4, 3)]
    assert all(type(d) is int for d in SEEN_ATTRS[0])


def test_symbolic_attributes_are_evaluated_in_each_activation():
    # @f is called from main at one size; each call of @f (a Closure called from
    # Python) binds n anew and its attributes follow
    n = SizeVar("n")
    x = var("x", shape=(n,))
    f = Function([x], O.add(x, Call(FILL, [], {"shape": (n,)})))
    mod = IRModule({"f": f, "main": Function([], GlobalVar("f"))})
    closure = evaluate(mod)
    assert isinstance(closure, Closure)
    for size in (2, 7, 3):
        np.testing.assert_array_equal(closure(np.zeros(size, "float32")), np.ones(size))


# -- binding the inputs ------------------------------------------------------------------------


def test_inconsistent_inputs_name_both_parameters_the_dim_and_the_symbol():
    mod = irpass.parse("""
        def @main(%x: Tensor[(n, 4), float32], %mask: Tensor[(n,), float32]) {
          %x
        }""")
    message = ("parameter %mask (position 1) of @main: dim 0 is n = 3, "
               "but parameter %x (position 0) set n = 2")
    with pytest.raises(ValueError, match=re.escape(message)):
        evaluate(mod, f32(2, 4), f32(3))
    # by name too, and agreeing inputs run
    with pytest.raises(ValueError, match=re.escape(message)):
        evaluate(mod, mask=f32(3), x=f32(2, 4))
    np.testing.assert_array_equal(evaluate(mod, np.ones((3, 4), "float32"), f32(3)),
                                  np.ones((3, 4)))


def test_a_variable_in_a_tuple_parameter_is_named_with_its_field():
    t = Var("t", TupleType([TensorType((N,), "float32"), TensorType((N, 2), "float32")]))
    fn = Function([t], t)
    with pytest.raises(ValueError, match=re.escape(
            "parameter %t (position 0) of the function field 1: dim 0 is n = 4, but "
            "parameter %t (position 0) field 0 set n = 3")):
        evaluate(fn, (f32(3), f32(4, 2)))


def test_wrong_rank_dtype_and_static_dim_are_the_errors_they_were():
    mod = irpass.parse("def @main(%x: Tensor[(n, 4), float32]) { %x }")
    with pytest.raises(ValueError, match=re.escape(
            "parameter %x (position 0) of @main: expected Tensor[(n, 4), float32], got an "
            "array of shape (3,) and dtype float32")):
        evaluate(mod, f32(3))
    with pytest.raises(ValueError, match=r"%x \(position 0\) of @main: expected .* shape "
                                         r"\(3, 5\) and dtype float32"):
        evaluate(mod, f32(3, 5))
    with pytest.raises(ValueError, match=r"%x \(position 0\) of @main: expected .* dtype int64"):
        evaluate(mod, np.zeros((3, 4), "int64"))
    # Python lists convert as before, and bind too
    out = evaluate(mod, [[1, 2, 3, 4], [5, 6, 7, 8]])
    assert out.shape == (2, 4) and out.dtype == np.float32
    with pytest.raises(ValueError, match=r"%x \(position 0\) of @main: expected .*got a list "
                                         r"of shape \(2, 3\)"):
        evaluate(mod, [[1, 2, 3], [4, 5, 6]])


def test_compound_dims_are_checked_once_the_variables_are_bound():
    mod = irpass.parse("""
        def @main(%x: Tensor[(n * 2, 4), float32], %y: Tensor[(n,), float32],
                  %z: Tensor[((n + 1) floordiv 2,), float32]) {
          %x
        }""")
    evaluate(mod, f32(6, 4), f32(3), f32(2))
    evaluate(mod, f32(0, 4), f32(0), f32(0))
    with pytest.raises(ValueError, match=re.escape(
            "parameter %x (position 0) of @main: dim 0 is n * 2 = 6 with n = 3, but the "
            "array has 5 there (shape (5, 4))")):
        evaluate(mod, f32(5, 4), f32(3), f32(2))
    with pytest.raises(ValueError, match=re.escape(
            "parameter %z (position 2) of @main: dim 0 is (n + 1) floordiv 2 = 3 with n = 5")):
        evaluate(mod, f32(10, 4), f32(5), f32(2))


def test_a_compound_dim_whose_variable_no_parameter_binds_alone_is_an_error():
    mod = irpass.parse("def @main(%x: Tensor[(n * 2, 4), float32]) { %x }")
    with pytest.raises(ValueError, match=r"parameter %x \(position 0\) of @main: dim 0 is "
                                         r"n \* 2, but no parameter has n as a dim of its own"):
        evaluate(mod, f32(4, 4))


# -- run-time checks ---------------------------------------------------------------------------


def test_a_broadcast_the_relation_assumed_fails_at_run_time_naming_the_symbols():
    mod = irpass.parse("""
        def @main(%a: Tensor[(n,), float32], %b: Tensor[(m,), float32]) {
          add(%a, %b)
        }""")
    assert irpass.ir.type_infer.infer_type(mod)["main"].ret_type == TensorType((N,), "float32")
    np.testing.assert_allclose(evaluate(mod, np.ones(3, "float32"), np.ones(3, "float32")),
                               np.full(3, 2.0))
    np.testing.assert_allclose(evaluate(mod, np.ones(3, "float32"), np.ones(1, "float32")),
                               np.full(3, 2.0))
    with pytest.raises(EvaluationError) as info:
        evaluate(mod, np.ones(1, "float32"), np.ones(3, "float32"))
    text = str(info.value)
    assert ("add(%a, %b) gave shape (3,) but its type is Tensor[(n,), float32] with n = 1"
            in text)
    assert "%b: Tensor[(m,), float32] has shape (3,)" in text
    assert "m = 3, n = 1" in text


def test_a_kernel_failing_on_an_assumed_shape_shows_the_arguments_and_symbols():
    # dense assumes the inner dims k and 16 agree; at k = 12 the kernel fails
    mod = irpass.parse("""
        def @main(%x: Tensor[(n, k), float32], %w: Tensor[(8, 16), float32]) {
          nn.dense(%x, %w)
        }""")
    assert evaluate(mod, f32(2, 16), f32(8, 16)).shape == (2, 8)
    with pytest.raises(EvaluationError, match=r"(?s)kernel of op 'nn.dense' failed.*"
                                              r"%x: Tensor\[\(n, k\), float32\] has shape "
                                              r"\(2, 12\).*k = 12, n = 2"):
        evaluate(mod, f32(2, 12), f32(8, 16))


def test_a_kernel_disagreeing_with_a_symbolic_type_is_caught():
    x = var("x", shape=(N, 3))
    fn = Function([x], Call(DROP_ROW, [x]))
    with pytest.raises(EvaluationError, match=re.escape(
            "test_evsym.drop_row(%x) gave shape (4, 3) but its type is Tensor[(n, 3), float32] "
            "with n = 5")):
        evaluate(fn, f32(5, 3))


def test_a_result_type_with_a_variable_no_parameter_binds_is_an_error():
    # the variable comes from an attribute only: nothing at run time gives it a value
    fn = Function([], Call(FILL, [], {"shape": (K, 2)}))
    with pytest.raises(EvaluationError, match=r"attribute shape = \[k, 2\] of the call of op "
                                              r"'test_evsym.fill' uses size variables"):
        evaluate(fn)
    x = var("x", shape=(N,))
    fn = Function([x], O.add(O.sum(x), Call(FILL, [], {"shape": (K, 2)})))
    with pytest.raises(EvaluationError, match=r"attribute shape = \[k, 2\] of the call of op "
                                              r"'test_evsym.fill' cannot be given a value: "
                                              r"size variable 'k'"):
        evaluate(fn, f32(3))


def test_static_programs_still_check_results_as_before():
    x = var("x", shape=(5, 3))
    with pytest.raises(EvaluationError, match=r"kernel of op 'test_evsym.drop_row' returned an "
                                              r"array of shape \(4, 3\)"):
        evaluate(Function([x], Call(DROP_ROW, [x])), f32(5, 3))


# -- functions, closures and loops -------------------------------------------------------------


def _count_loop(rounds: int, carried: TensorType):
    """``let f = fn (i, acc: carried) { if (i < rounds) { f(i + 1, acc * 0.5 + 1) } else
    { acc } }``, called on (0, %x): a tail-recursive loop, as the importer writes one."""
    f = Var("f", FuncType([I64, carried], carried))
    i, acc = var("i", I64), var("acc", carried)
    step = Call(f, [O.add(i, i64(1)),
                    O.add(O.multiply(acc, const(np.float32(0.5))), const(np.float32(1.0)))])
    fn = Function([i, acc], If(O.less(i, i64(rounds)), step, acc), carried)
    x = var("x", carried)
    return Function([x], Let(f, fn, Call(f, [i64(0), x])))


def test_a_ten_thousand_round_loop_over_a_symbolic_tensor_binds_each_round():
    loop = _count_loop(10_000, TensorType((N, 2), "float32"))
    for n in (1, 5):
        x = f32(n, 2)
        want = x.copy()
        for _ in range(10_000):
            want = want * np.float32(0.5) + np.float32(1.0)
        np.testing.assert_allclose(evaluate(loop, x), want, rtol=1e-6)


def test_a_loop_whose_carried_tensor_grows_every_round():
    # the loop function has its own size variable j, bound anew by each call (k + 1 elements
    # the next round); the outer x's k stays the input's
    rounds = 10_000
    j = SizeVar("j")
    carried = TensorType((j,), "float32")
    ret = TensorType((), "float32")
    f = Var("f", FuncType([I64, carried], ret))
    i, acc = var("i", I64), var("acc", carried)
    grown = O.concatenate([acc, O.expand_dims(O.min(acc), axis=0)], axis=0)  # j + 1 elements
    fn = Function([i, acc], If(O.less(i, i64(rounds)),
                               Call(f, [O.add(i, i64(1)), grown]),
                               O.sum(acc)), ret)
    x = var("x", TensorType((K,), "float32"))
    loop = Function([x], Let(f, fn, Call(f, [i64(0), x])))
    for k in (2, 3):
        start = np.full(k, 1e-4, "float32")
        out = evaluate(loop, start)
        assert out.shape == ()
        # each round appends the smallest element: k + rounds elements of 1e-4 in the end
        np.testing.assert_allclose(out, (k + rounds) * 1e-4, rtol=1e-3)


def test_a_recursive_global_function_binds_in_every_activation():
    # @sum_down(%i, %x: Tensor[(n,)]) adds x to itself i times, a non-tail call per round
    n_t = TensorType((N,), "float32")
    gv = GlobalVar("sum_down")
    i, x = var("i", I64), var("x", n_t)
    rec = O.add(Call(gv, [O.subtract(i, i64(1)), x]), x)
    sum_down = Function([i, x], If(O.greater(i, i64(0)), rec, O.multiply(x, const(np.float32(0)))),
                        n_t)
    y = var("y", n_t)
    mod = IRModule({"sum_down": sum_down, "main": Function([y], Call(gv, [i64(3_000), y]))})
    for n in (2, 6):
        x_val = np.ones(n, "float32")
        np.testing.assert_allclose(evaluate(mod, x_val), np.full(n, 3_000.0))


def test_a_local_function_sees_the_sizes_bound_where_it_was_made():
    # main returns fn (%y: Tensor[(n,)]) { y + ones(shape=[n]) }: calling it later checks
    # %y against main's n, and its attribute uses main's n
    x = var("x", shape=(N, 2))
    y = var("y", shape=(N,))
    inner = Function([y], O.add(y, O.ones(shape=(N,), dtype="float32")))
    outer = Function([x], Tuple([O.sum(x, axis=[1]), inner]))
    total, closure = evaluate(outer, np.ones((3, 2), "float32"))
    np.testing.assert_array_equal(total, np.full(3, 2.0))
    np.testing.assert_array_equal(closure(np.zeros(3, "float32")), np.ones(3))
    with pytest.raises(ValueError, match=re.escape(
            "parameter %y (position 0) of the function: dim 0 is n = 4, but the function "
            "where this one was created set n = 3")):
        closure(np.zeros(4, "float32"))


def test_a_closure_whose_own_variable_binds_per_call_from_python():
    k_t = TensorType((K,), "float32")
    y = var("y", k_t)
    fn = Function([y], O.concatenate([y, y], axis=0))
    closure = evaluate(Function([], fn))
    for k in (1, 4, 2):
        v = f32(k)
        np.testing.assert_array_equal(closure(v), np.concatenate([v, v]))


def test_a_closure_given_as_input_is_bound_by_its_own_params_inside_the_program():
    # main says %f takes (n,) and (m,); the closure it gets has k for both: its
    # activation finds k disagreeing, an EvaluationError at the call
    a, b = var("a", shape=(N,)), var("b", shape=(M,))
    f = Var("f", FuncType([a.type_annotation, b.type_annotation], a.type_annotation))
    main = Function([f, a, b], Call(f, [a, b]))
    p, q = var("p", TensorType((K,), "float32")), var("q", TensorType((K,), "float32"))
    given = evaluate(Function([], Function([p, q], O.add(p, q))))
    np.testing.assert_array_equal(evaluate(main, given, np.ones(2, "float32"),
                                           np.ones(2, "float32")), np.full(2, 2.0))
    with pytest.raises(EvaluationError, match=re.escape(
            "parameter %q (position 1) of a local function: dim 0 is k = 3, but parameter "
            "%p (position 0) set k = 2")):
        evaluate(main, given, np.ones(2, "float32"), np.ones(3, "float32"))


def test_one_function_activated_at_two_sizes_in_one_run():
    # the same closure is passed as %f (on n-sized tensors) and %g (on m-sized ones):
    # its variable k, its attribute and its result check take each call's value
    y = var("y", TensorType((K,), "float32"))
    body = O.add(y, Call(FILL, [], {"shape": (K,)}))
    given = evaluate(Function([], Function([y], body)))
    a, b = var("a", shape=(N,)), var("b", shape=(M,))
    f = Var("f", FuncType([a.type_annotation], a.type_annotation))
    g = Var("g", FuncType([b.type_annotation], b.type_annotation))
    main = Function([f, g, a, b], Tuple([Call(f, [a]), Call(g, [b]), Call(f, [a])]))
    for n, m in ((2, 5), (4, 1)):
        av, bv = f32(n), f32(m)
        out = evaluate(main, given, given, av, bv)
        np.testing.assert_allclose(out[0], av + 1)
        np.testing.assert_allclose(out[1], bv + 1)
        np.testing.assert_allclose(out[2], av + 1)


def test_a_variable_twice_in_one_parameter_must_agree_with_itself():
    mod = irpass.parse("def @main(%x: Tensor[(n, n), float32]) { %x }")
    np.testing.assert_array_equal(evaluate(mod, np.eye(3, dtype="float32")), np.eye(3))
    with pytest.raises(ValueError, match=re.escape(
            "parameter %x (position 0) of @main: dim 1 is n = 4, but its dim 0 set n = 3")):
        evaluate(mod, f32(3, 4))
