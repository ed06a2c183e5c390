"""Type inference of calls of functions with symbolic param types (issue 20): a call binds
the callee's lone size variables from the argument dims (as Relax does), checks its other
symbolic dims (provably different: a TypeInferenceError naming the param, the dim and the
symbol; undecidable: assumed, the evaluator checks), and substitutes the bindings into the
callee's return type. A local function keeps the sizes bound where it was made."""

import re

import numpy as np
import pytest
from irpass import EvaluationError, TypeInferenceError, evaluate
from irpass import op as O
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
    infer_type,
    var,
)
from irpass.ir.dims import SizeVar

RNG = np.random.default_rng(2020)
I64 = TensorType((), "int64")
N, M, J, K = SizeVar("n"), SizeVar("m"), SizeVar("j"), SizeVar("k")


def f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


def i64(v):
    return const(np.int64(v))


def _doubler() -> Function:
    """fn (%y: Tensor[(k,)]) -> Tensor[(k * 2,)] { concatenate(y, y) }"""
    y = var("y", TensorType((K,), "float32"))
    return Function([y], O.concatenate([y, y], axis=0), TensorType((K * 2,), "float32"))


def test_a_global_call_binds_the_callee_size_variable_and_substitutes_the_return_type():
    gv = GlobalVar("double")
    x = var("x", TensorType((N, 3), "float32"))
    flat = O.reshape(x, newshape=[N * 3])
    mod = infer_type(IRModule({"double": _doubler(),
                               "main": Function([x], Call(gv, [flat]))}))
    assert mod["main"].ret_type == TensorType((N * 6,), "float32")
    for n in (1, 4):
        v = f32(n, 3)
        np.testing.assert_array_equal(evaluate(mod, v),
                                      np.concatenate([v.reshape(-1), v.reshape(-1)]))


def test_a_static_argument_instantiates_a_symbolic_callee():
    gv = GlobalVar("double")
    x = var("x", shape=(5,))
    mod = infer_type(IRModule({"double": _doubler(), "main": Function([x], Call(gv, [x]))}))
    assert mod["main"].ret_type == TensorType((10,), "float32")


def test_a_compound_param_dim_is_checked_against_the_bound_variable():
    # fn (%a: (k,), %b: (k * 2,)): passing (n,) and (n * 2 + 1,) cannot ever agree
    a = var("a", TensorType((K,), "float32"))
    b = var("b", TensorType((K * 2,), "float32"))
    callee = Function([a, b], O.sum(b), TensorType((), "float32"))
    x = var("x", TensorType((N,), "float32"))
    grown = O.concatenate([x, x, O.expand_dims(O.sum(x), axis=0)], axis=0)  # n * 2 + 1
    gv = GlobalVar("g")
    mod = IRModule({"g": callee, "main": Function([x], Call(gv, [x, grown]))})
    with pytest.raises(TypeInferenceError, match=re.escape(
            "argument 1 (%b) of the call has dim 0 = n * 2 + 1, but the callee's parameter "
            "type Tensor[(k * 2,), float32] says k * 2 with k = n, which is n * 2")):
        infer_type(mod)


def test_an_undecidable_compound_dim_is_assumed_and_checked_at_run_time():
    # fn (%a: (k,), %b: (k * 2,)) called with (n,) and (m,): m == 2n is possible
    a = var("a", TensorType((K,), "float32"))
    b = var("b", TensorType((K * 2,), "float32"))
    callee = Function([a, b], O.sum(b), TensorType((), "float32"))
    x = var("x", TensorType((N,), "float32"))
    y = var("y", TensorType((M,), "float32"))
    gv = GlobalVar("g")
    mod = infer_type(IRModule({"g": callee, "main": Function([x, y], Call(gv, [x, y]))}))
    assert mod["main"].ret_type == TensorType((), "float32")
    np.testing.assert_allclose(evaluate(mod, np.ones(2, "float32"), np.ones(4, "float32")), 4.0)
    with pytest.raises(EvaluationError, match="dim 0 is k \\* 2 = 6 with k = 3"):
        evaluate(mod, np.ones(3, "float32"), np.ones(4, "float32"))


def test_a_size_variable_twice_in_the_callee_params_binds_once():
    # fn (%a: (k,), %b: (k,)) called with (n,) and (3,): assumed (n may be 3)
    a = var("a", TensorType((K,), "float32"))
    b = var("b", TensorType((K,), "float32"))
    callee = Function([a, b], O.add(a, b), TensorType((K,), "float32"))
    x = var("x", TensorType((N,), "float32"))
    c = var("c", shape=(3,))
    gv = GlobalVar("g")
    mod = infer_type(IRModule({"g": callee, "main": Function([x, c], Call(gv, [x, c]))}))
    assert mod["main"].ret_type == TensorType((N,), "float32")
    # (n,) and (n + 1,): never equal
    grown = O.concatenate([x, O.expand_dims(O.sum(x), axis=0)], axis=0)
    bad = IRModule({"g": callee, "main": Function([x], Call(gv, [x, grown]))})
    with pytest.raises(TypeInferenceError, match=re.escape(
            "argument 1 (%b) of the call has dim 0 = n + 1, but the callee's parameter type "
            "Tensor[(k,), float32] says k with k = n, which is n")):
        infer_type(bad)


def test_tuple_params_bind_field_by_field():
    pair = TupleType([TensorType((K, 2), "float32"), TensorType((K,), "float32")])
    p = var("p", pair)
    callee = Function([p], O.add(O.sum(Tuple([p]).fields[0][0], axis=[1]), p[1]),
                      TensorType((K,), "float32"))
    x = var("x", TensorType((N, 2), "float32"))
    gv = GlobalVar("g")
    main = Function([x], Call(gv, [Tuple([x, O.sum(x, axis=[1])])]))
    mod = infer_type(IRModule({"g": callee, "main": main}))
    assert mod["main"].ret_type == TensorType((N,), "float32")
    v = f32(3, 2)
    np.testing.assert_allclose(evaluate(mod, v), 2 * v.sum(axis=1), rtol=1e-6)


def test_a_dtype_or_rank_mismatch_is_still_an_error():
    gv = GlobalVar("double")
    x = var("x", TensorType((N,), "int32"))
    mod = IRModule({"double": _doubler(), "main": Function([x], Call(gv, [x]))})
    with pytest.raises(TypeInferenceError, match=re.escape(
            "argument 0 (%y) of the call has type Tensor[(n,), int32] but the callee expects "
            "Tensor[(k,), float32] (the tensor: dtype int32, not float32)")):
        infer_type(mod)
    x2 = var("x", TensorType((N, 2), "float32"))
    mod = IRModule({"double": _doubler(), "main": Function([x2], Call(gv, [x2]))})
    with pytest.raises(TypeInferenceError, match="rank 2, not 1"):
        infer_type(mod)


def test_static_mismatches_keep_their_error():
    y = var("y", shape=(4,))
    callee = Function([y], O.negative(y))
    x = var("x", shape=(5,))
    with pytest.raises(TypeInferenceError, match=re.escape(
            "argument 0 (%y) of the call has type Tensor[(5,), float32] but the callee "
            "expects Tensor[(4,), float32]")):
        infer_type(Function([x], Call(callee, [x])))


def _growing_loop(carried_var: SizeVar, rounds: int) -> Function:
    """A loop (a letrec closure) whose carried tensor gains one element per round; its
    params use ``carried_var``, the outer function's use k."""
    ret = TensorType((), "float32")
    carried = TensorType((carried_var,), "float32")
    f = Var("f", FuncType([I64, carried], ret))
    i, acc = var("i", I64), var("acc", carried)
    grown = O.concatenate([acc, O.expand_dims(O.sum(acc), axis=0)], axis=0)
    fn = Function([i, acc], If(O.less(i, i64(rounds)),
                               Call(f, [O.add(i, i64(1)), grown]),
                               O.sum(acc)), ret)
    x = var("x", TensorType((K,), "float32"))
    return Function([x], Let(f, fn, Call(f, [i64(0), x])))


def test_a_loop_whose_carried_tensor_grows_every_round_type_checks_and_runs():
    loop = _growing_loop(J, 50)
    typed = infer_type(loop)
    assert typed.ret_type == TensorType((), "float32")
    x = np.full(2, 1e-3, "float32")
    want = x.astype("float64")
    for _ in range(50):
        want = np.concatenate([want, [want.sum()]])
    np.testing.assert_allclose(evaluate(loop, x), want.sum(), rtol=1e-5)


def test_a_local_function_checks_the_sizes_it_inherits():
    # The same loop with the outer function's k in the closure's params: k is bound where
    # the closure was made, so (k + 1,) can never be passed (the evaluator says the same)
    with pytest.raises(TypeInferenceError, match=re.escape(
            "argument 1 (%acc) of the call has dim 0 = k + 1, but the callee's parameter "
            "type Tensor[(k,), float32] says k (k bound by the function where the callee "
            "was made, which its calls cannot change), which is k: they differ for every "
            "size")):
        infer_type(_growing_loop(K, 3))


def test_a_closure_called_with_its_inherited_size_type_checks():
    # fn (%y: (n,)) made inside main (%x: (n, 2)) and called with a (n,) tensor
    x = var("x", TensorType((N, 2), "float32"))
    y = var("y", TensorType((N,), "float32"))
    inner = Function([y], O.add(y, O.ones(shape=(N,), dtype="float32")))
    g = var("g")
    main = Function([x], Let(g, inner, Call(g, [O.sum(x, axis=[1])])))
    assert infer_type(main).ret_type == TensorType((N,), "float32")
    v = f32(3, 2)
    np.testing.assert_allclose(evaluate(main, v), v.sum(axis=1) + 1, rtol=1e-6)


def test_a_return_annotation_may_differ_from_the_body_where_only_the_run_time_can_tell():
    c = SizeVar("c")
    x = var("x", TensorType((N, c), "float32"))
    body = O.multiply(x, const(np.ones(3, "float32")))  # (n, 3): the relation assumed c == 3
    f = infer_type(Function([x], body, TensorType((N, c), "float32")))
    assert f.checked_type.ret_type == TensorType((N, c), "float32")
    with pytest.raises(TypeInferenceError, match="is annotated to return"):
        infer_type(Function([x], O.negative(x), TensorType((N + 1, c), "float32")))
    with pytest.raises(TypeInferenceError, match="is annotated to return"):
        infer_type(Function([x], body, TensorType((N, c), "int32")))
