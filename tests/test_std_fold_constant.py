"""FoldConstant (plugins/irpass_std/fold_constant.py): one expected-IR test per rule and per
case where nothing may fold, every node kind, the config option, failing kernels, deep
chains, and meaning on the example networks and random programs."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import irpass
import numpy as np
import pytest
from hypothesis import given, settings
from irpass import Function, GlobalVar, IRModule, PassError, const, op, var
from irpass.ir import (
    Call,
    Constant,
    If,
    Let,
    Op,
    OpPattern,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    assert_structural_equal,
    infer_type,
    parse,
    post_order_visit,
    register_op,
    structural_hash,
    well_formed,
)
from irpass.testing import check_semantics, models
from irpass.testing import strategies as sts
from irpass.transform import PassContext, Sequential, get_pass, list_config_options, list_passes
from irpass_std import fold_constant

MAX = "std.FoldConstant.max_elements"
DOC = Path(__file__).resolve().parents[1] / "plugins" / "irpass_std" / "docs" / "FoldConstant.md"


def fold_module(mod: IRModule, **config) -> IRModule:
    with PassContext(opt_level=3, config=config):
        return irpass.transform.FoldConstant()(mod)


def fold(func: Function, **config) -> Function:
    """``func`` as ``@main`` of a module, through FoldConstant; the new ``@main``."""
    return fold_module(IRModule.from_expr(func), **config)["main"]


def check(before: Function, expected: Function, **config) -> None:
    assert_structural_equal(fold(before, **config), expected)


def check_unchanged(before: Function, **config) -> None:
    mod = IRModule.from_expr(before)
    out = fold_module(mod, **config)
    assert out is mod
    assert out["main"] is before


def arr(*shape: int, dtype: str = "float32", start: float = 1.0) -> np.ndarray:
    n = int(np.prod(shape)) if shape else 1
    return (np.arange(n) + start).astype(dtype).reshape(shape)


def c(*shape: int, dtype: str = "float32", start: float = 1.0) -> Constant:
    return const(arr(*shape, dtype=dtype, start=start))


def op_names(expr) -> list[str]:
    names: list[str] = []
    post_order_visit(
        expr, lambda n: names.append(n.op.name) if type(n) is Call and type(n.op) is Op else None
    )
    return names


# -- registration ------------------------------------------------------------------------------


def test_registered_with_its_info_and_option():
    p = irpass.transform.FoldConstant()
    assert p.info.name == "FoldConstant"
    assert p.info.opt_level == 2
    assert list(p.info.required) == []
    assert "FoldConstant" in list_passes()
    assert get_pass("FoldConstant").info.name == "FoldConstant"
    option = list_config_options()[MAX]
    assert option.value_type is int and option.default is None
    with pytest.raises(TypeError, match="max_elements"):
        PassContext(config={MAX: "big"})


def test_negative_max_elements_is_an_error_naming_the_option():
    x = var("x", shape=(2,))
    mod = IRModule.from_expr(Function([x], op.add(x, op.add(c(2), c(2)))))
    before = structural_hash(mod)
    with pytest.raises(PassError, match=re.escape(MAX)):
        fold_module(mod, **{MAX: -1})
    assert structural_hash(mod) == before


# -- the rules ---------------------------------------------------------------------------------


def test_tvm_pass_infra_example():
    # TVM's pass-infra doc: y = add(x, (c+c)*2) -> add(x, const((c+c)*2)).
    x = var("x", shape=(2, 3))
    cc = c(2, 3)
    two = const(np.full((2, 3), 2, "float32"))
    y = op.add(x, op.multiply(op.add(cc, cc), two))
    expected = Function([x], op.add(x, const((arr(2, 3) + arr(2, 3)) * 2)))
    check(Function([x], y), expected)


def test_nested_calls_fold_to_one_constant():
    x = var("x", shape=(3,))
    folded = np.exp(arr(3) * np.float32(0.5)).astype("float32")
    before = Function([x], op.multiply(x, op.exp(op.multiply(c(3), const(np.float32(0.5))))))
    check(before, Function([x], op.multiply(x, const(folded))))


def test_whole_body_folds():
    x = var("x", shape=(2,))
    before = Function([x], op.negative(op.add(c(2), c(2))))
    check(before, Function([x], const(-(arr(2) + arr(2)))))


def test_folded_constants_keep_the_exact_dtype():
    x = var("x", shape=(2,), dtype="float16")
    half = c(2, dtype="float16")
    ints = c(3, dtype="int32", start=-1)
    before = Function(
        [x],
        Tuple(
            [
                op.add(x, op.exp(half)),  # float16 math runs widened, the result is float16
                op.divide(ints, const(np.array([2, 2, 2], "int32"))),  # truncating division
                op.greater(ints, const(np.int32(0))),  # bool
                op.cast(ints, "float64"),
                op.sum(ints, axis=[0]),
            ]
        ),
    )
    out = fold(before)
    fields = out.body.fields
    assert fields[0].args[1].data.dtype == np.float16
    assert fields[0].args[1].data.tolist() == np.exp(arr(2, dtype="float16")).tolist()
    assert fields[1].data.dtype == np.int32 and fields[1].data.tolist() == [0, 0, 0]
    assert fields[2].data.dtype == np.bool_ and fields[2].data.tolist() == [False, False, True]
    assert fields[3].data.dtype == np.float64 and fields[3].data.tolist() == [-1.0, 0.0, 1.0]
    assert fields[4].data.dtype == np.int32 and fields[4].data.shape == ()
    assert infer_type(IRModule.from_expr(out))["main"].checked_type == infer_type(
        IRModule.from_expr(before)
    )["main"].checked_type


def test_op_on_a_tuple_of_constants_folds():
    x = var("x", shape=(4,))
    before = Function([x], op.add(x, op.concatenate([c(2), c(2, start=5)], axis=0)))
    expected = Function([x], op.add(x, const(np.array([1, 2, 5, 6], "float32"))))
    check(before, expected)


def test_tuple_result_becomes_a_tuple_of_constants():
    x = var("x", shape=(2,))
    parts = op.split(c(4), indices_or_sections=2)
    before = Function([x], Tuple([op.add(x, TupleGetItem(parts, 0)), parts]))
    lo, hi = const(np.array([1, 2], "float32")), const(np.array([3, 4], "float32"))
    expected = Function([x], Tuple([op.add(x, lo), Tuple([lo, hi])]))
    check(before, expected)


def test_folded_tuple_results_fold_on():
    x = var("x", shape=(4,))
    t = Var("t")
    parts = op.split(c(4), indices_or_sections=2)
    before = Function(
        [x],
        Let(t, parts, op.add(x, op.concatenate(Tuple([TupleGetItem(t, 1), TupleGetItem(t, 0)])))),
    )
    check(before, Function([x], op.add(x, const(np.array([3, 4, 1, 2], "float32")))))
    before = Function([x], op.add(x, op.concatenate(op.split(c(4), indices_or_sections=2))))
    check(before, Function([x], op.add(x, c(4))))


def test_projection_of_a_constant_tuple():
    x = var("x", shape=(2,))
    before = Function([x], op.add(x, TupleGetItem(Tuple([c(2), c(2, start=7)]), 1)))
    check(before, Function([x], op.add(x, c(2, start=7))))


def test_projection_dropping_only_vars_and_constants():
    x = var("x", shape=(2,))
    before = Function([x], op.exp(TupleGetItem(Tuple([x, op.add(c(2), c(2))]), 1)))
    check(before, Function([x], const(np.exp(arr(2) * 2))))


def test_projection_keeps_a_tuple_whose_other_fields_compute():
    # Dropping exp(x) is DeadCodeElimination's job (it checks effects); not folded here.
    x = var("x", shape=(2,))
    check_unchanged(Function([x], TupleGetItem(Tuple([op.exp(x), c(2)]), 1)))


def test_let_bound_constant_is_substituted():
    x = var("x", shape=(2,))
    v = Var("v")
    before = Function([x], Let(v, c(2), op.add(x, op.add(v, v))))
    check(before, Function([x], op.add(x, const(arr(2) * 2))))


def test_let_bound_folded_value_is_substituted():
    x = var("x", shape=(2,))
    v, w = Var("v"), Var("w")
    before = Function(
        [x], Let(v, op.add(c(2), c(2)), Let(w, op.multiply(x, v), op.add(w, v)))
    )
    doubled = const(arr(2) * 2)
    w2 = Var("w")
    expected = Function([x], Let(w2, op.multiply(x, doubled), op.add(w2, doubled)))
    check(before, expected)


def test_let_bound_constant_tuple_is_substituted():
    x = var("x", shape=(2,))
    t = Var("t")
    pair = Tuple([c(2), c(2, start=3)])
    before = Function([x], Let(t, pair, op.add(x, op.add(TupleGetItem(t, 0), TupleGetItem(t, 1)))))
    check(before, Function([x], op.add(x, const(arr(2) + arr(2, start=3)))))


def test_let_bound_non_constant_stays():
    x = var("x", shape=(2,))
    v = Var("v")
    check_unchanged(Function([x], Let(v, op.exp(x), op.add(v, c(2)))))


def test_shape_of_a_statically_shaped_var():
    x = var("x", shape=(2, 3))
    before = Function([x], op.cast(op.shape_of(x), "float32"))
    check(before, Function([x], const(np.array([2.0, 3.0], "float32"))))


def test_shape_of_keeps_its_dtype_and_works_on_inner_expressions():
    x = var("x", shape=(2, 3))
    v = Var("v")
    before = Function(
        [x], Let(v, op.transpose(op.exp(x), axes=(1, 0)), Tuple([v, op.shape_of(v, "int64")]))
    )
    v2 = Var("v")
    expected = Function(
        [x],
        Let(
            v2,
            op.transpose(op.exp(x), axes=(1, 0)),
            Tuple([v2, const(np.array([3, 2], "int64"))]),
        ),
    )
    check(before, expected)


def test_shape_of_after_infer_type_and_in_a_closure():
    x = var("x", shape=(4,))
    y = var("y", shape=(1, 5))
    inner = Function([y], op.add(op.cast(op.shape_of(y), "float32"), const(np.float32(0))))
    before = Function([x], Call(inner, [const(np.zeros((1, 5), "float32"))]))
    mod = irpass.transform.InferType()(IRModule.from_expr(before))
    out = fold_module(mod)
    y2 = var("y", shape=(1, 5))
    expected_inner = Function([y2], const(np.array([1.0, 5.0], "float32")))
    expected = Function([x], Call(expected_inner, [const(np.zeros((1, 5), "float32"))]))
    # typed like the input, which InferType annotated (ret_type of both functions)
    assert_structural_equal(out["main"], infer_type(expected))


def test_shape_of_folding_keeps_the_functions_annotations():
    # Types are inferred for shape_of only; a function without ret_type keeps none (as
    # when nothing needs a type), one with a ret_type keeps it, and both fold.
    x = var("x", shape=(2, 3))
    for ret_type in (None, TensorType((2,), "float32")):
        before = Function([x], op.shape_of(x, "float32"), ret_type)
        out = fold(before)
        assert out.ret_type == ret_type
        assert_structural_equal(out.body, const(np.array([2.0, 3.0], "float32")))


def test_shape_of_when_type_inference_returns_a_copy():
    # The call of @f is shared by two modules whose @f return different shapes; typing
    # the second module hands back a retyped copy, and folding must use its types.
    x = var("x", shape=(2,))
    call = Call(GlobalVar("f"), [x])
    fa, fb = var("a", shape=(2,)), var("b", shape=(2,))
    f1 = Function([fa], op.exp(fa))
    f2 = Function([fb], op.concatenate([fb, fb]))
    mod1 = IRModule({"main": Function([x], op.shape_of(call)), "f": f1})
    mod2 = IRModule({"main": Function([x], op.shape_of(call)), "f": f2})
    infer_type(mod1)
    out = fold_module(mod2)
    assert_structural_equal(out["main"].body, const(np.array([4], "int32")))
    assert fold_module(mod1)["main"].body.data.tolist() == [2]


def test_if_with_a_constant_condition_takes_its_branch():
    x = var("x", shape=(2,))
    cond = op.greater(const(np.float32(1)), const(np.float32(0)))
    before = Function([x], If(cond, op.add(x, op.add(c(2), c(2))), op.exp(x)))
    check(before, Function([x], op.add(x, const(arr(2) * 2))))
    before = Function([x], If(op.less(const(1.0), const(0.0)), op.exp(x), op.negative(x)))
    check(before, Function([x], op.negative(x)))


def test_if_with_a_variable_condition_folds_inside_its_branches():
    x = var("x", shape=(2,))
    cond = op.greater(op.sum(x), const(np.float32(0)))
    before = Function([x], If(cond, op.add(x, op.add(c(2), c(2))), op.subtract(x, op.exp(c(2)))))
    expected = Function(
        [x], If(cond, op.add(x, const(arr(2) * 2)), op.subtract(x, const(np.exp(arr(2)))))
    )
    check(before, expected)


def test_nested_closures_fold_and_see_captured_constants():
    x = var("x", shape=(2,))
    v, y, z, g = Var("v"), var("y", shape=(2,)), var("z", shape=(2,)), Var("g")
    innermost = Function([z], op.add(z, op.multiply(v, c(2))))
    inner = Function([y], Call(innermost, [op.add(y, v)]))
    before = Function([x], Let(v, op.add(c(2), c(2)), Let(g, inner, Call(g, [x]))))
    doubled = const(arr(2) * 2)
    y2, z2, g2 = var("y", shape=(2,)), var("z", shape=(2,)), Var("g")
    expected_innermost = Function([z2], op.add(z2, const(arr(2) * 2 * arr(2))))
    expected = Function(
        [x],
        Let(g2, Function([y2], Call(expected_innermost, [op.add(y2, doubled)])), Call(g2, [x])),
    )
    check(before, expected)


def test_primitive_functions_are_not_folded_inside():
    x = var("x", shape=(2,))
    p = var("p", shape=(2,))
    prim = Function([p], op.add(p, op.add(c(2), c(2))), attrs={"Primitive": 1})
    before = Function([x], Call(prim, [op.add(c(2), c(2))]))
    expected = Function([x], Call(prim, [const(arr(2) * 2)]))
    out = fold(before)
    assert_structural_equal(out, expected)
    assert out.body.op is prim  # the primitive function itself is untouched
    # A Primitive global function is skipped by the function pass.
    mod = IRModule({"main": Function([x], x), "prim": prim})
    assert fold_module(mod) is mod


def test_let_bound_constant_captured_by_a_primitive_function_is_substituted():
    x = var("x", shape=(2,))
    v, p = Var("v"), var("p", shape=(2,))
    prim = Function([p], op.add(p, op.multiply(v, v)), attrs={"Primitive": 1})
    before = Function([x], Let(v, c(2), Call(prim, [x])))
    out = fold(before)
    p2 = var("p", shape=(2,))
    expected = Function(
        [x], Call(Function([p2], op.add(p2, op.multiply(c(2), c(2))), attrs={"Primitive": 1}), [x])
    )
    assert_structural_equal(out, expected)
    assert well_formed(IRModule.from_expr(out))


def test_calls_of_global_functions_and_closures_are_not_evaluated():
    x = var("x", shape=(2,))
    a = var("a", shape=(2,))
    helper = Function([a], op.exp(a))
    gv = GlobalVar("helper")
    b = var("b", shape=(2,))
    closure = Function([b], op.negative(b))
    main = Function([x], op.add(Call(gv, [c(2)]), Call(closure, [c(2)])))
    mod = IRModule({"main": main, "helper": helper})
    assert fold_module(mod) is mod


def test_every_global_function_is_folded():
    x = var("x", shape=(2,))
    a = var("a", shape=(2,))
    gv = GlobalVar("helper")
    mod = IRModule(
        {
            "main": Function([x], Call(gv, [op.add(x, op.add(c(2), c(2)))])),
            "helper": Function([a], op.multiply(a, op.exp(c(2)))),
        }
    )
    out = fold_module(mod)
    a2 = var("a", shape=(2,))
    helper = out.get_global_var("helper")
    assert_structural_equal(
        out["main"], Function([x], Call(helper, [op.add(x, const(arr(2) * 2))]))
    )
    assert_structural_equal(out["helper"], Function([a2], op.multiply(a2, const(np.exp(arr(2))))))


def test_function_without_anything_to_fold_keeps_its_identity():
    x = var("x", shape=(2,))
    a = var("a", shape=(2,))
    folds = Function([a], op.add(a, op.add(c(2), c(2))))
    same = Function([x], op.add(x, c(2)))
    mod = IRModule({"main": same, "g": folds})
    out = fold_module(mod)
    assert out is not mod
    assert out["main"] is same
    assert out["g"] is not folds


# -- what never folds --------------------------------------------------------------------------


def test_non_constant_arguments_do_not_fold():
    x = var("x", shape=(2,))
    check_unchanged(Function([x], op.add(op.exp(x), c(2))))


def test_stateful_op_is_never_folded(stateful_op):
    x = var("x", shape=(2,))
    before = Function([x], op.add(x, Call(stateful_op, [op.add(c(2), c(2))])))
    expected = Function([x], op.add(x, Call(stateful_op, [const(arr(2) * 2)])))
    check(before, expected)


@pytest.mark.parametrize(
    "make",
    [
        lambda: op.zeros((3,), "float32"),
        lambda: op.ones((3,), "float32"),
        lambda: op.full(const(np.float32(2)), shape=(3,)),
        lambda: op.zeros_like(c(3)),
        lambda: op.ones_like(c(3)),
    ],
    ids=["zeros", "ones", "full", "zeros_like", "ones_like"],
)
def test_creation_ops_are_not_folded(make):
    x = var("x", shape=(3,))
    created = make()
    check_unchanged(Function([x], op.add(x, created)))
    # ... and neither are their users: a creation call is not a constant.
    check_unchanged(Function([x], op.add(x, op.exp(created))))


def test_zero_argument_ops_are_not_folded():
    register_op(
        "test.fold_seed",
        num_inputs=0,
        type_rel=lambda args, attrs: TensorType((2,), "float32"),
        kernel=lambda args, attrs: np.zeros(2, "float32"),
        pattern=OpPattern.OPAQUE,
    )
    x = var("x", shape=(2,))
    check_unchanged(Function([x], op.add(x, Call(Op.get("test.fold_seed"), []))))


def test_max_elements_bounds_the_folded_constant():
    x = var("x", shape=(4, 4))
    before = Function([x], op.add(x, op.add(c(4, 4), c(4, 4))))
    check_unchanged(before, **{MAX: 15})
    check(before, Function([x], op.add(x, const(arr(4, 4) * 2))), **{MAX: 16})
    check(before, Function([x], op.add(x, const(arr(4, 4) * 2))))  # default: unbounded


def test_max_elements_applies_per_call_and_to_tuple_results():
    x = var("x", shape=(4,))
    small = op.sum(op.add(c(4), c(4)), axis=[0])  # add: 4 elements, then sum: 1
    parts = op.split(c(4), indices_or_sections=2)  # a tuple of 2 + 2 elements
    before = Function([x], Tuple([op.add(x, small), TupleGetItem(parts, 0)]))
    out = fold(before, **{MAX: 3})
    assert sorted(op_names(out)) == ["add", "add", "split", "sum"]
    expected = Function(
        [x], Tuple([op.add(x, const(np.float32(20))), const(np.array([1, 2], "float32"))])
    )
    check(before, expected, **{MAX: 4})


def test_shape_of_respects_max_elements():
    x = var("x", shape=(2, 3, 4))
    check_unchanged(Function([x], op.shape_of(x)), **{MAX: 2})
    check(Function([x], op.shape_of(x)), Function([x], const(np.array([2, 3, 4], "int32"))))


# -- shared weights are not copied ---------------------------------------------------------------

COPY = "std.FoldConstant.copy_shared_weights"
BIG_ROWS = 1024  # a (1024, 256) float32 weight: exactly 1 MiB


def test_the_transpose_of_a_tied_embedding_is_not_folded():
    # GPT-2's shape: the embedding table is read by take (the lookup) and, transposed, by
    # the output projection; folding the transpose would keep both copies.
    ids = var("ids", shape=(3,), dtype="int64")
    x = var("x", shape=(2, 256))
    table = arr(BIG_ROWS, 256) % 7  # small integers: every sum below is exact in float32
    w = const(table)
    assert w.data.nbytes == fold_constant.SHARED_WEIGHT_BYTES
    before = Function(
        [ids, x], Tuple([op.take(w, ids, axis=0), op.matmul(x, op.transpose(w, axes=[1, 0]))])
    )
    check_unchanged(before)
    inputs = [{"ids": np.array([0, 5, 1023]),
               "x": np.random.default_rng(seed).integers(-3, 4, (2, 256)).astype("float32")}
              for seed in (0, 1)]
    out = check_semantics(
        irpass.transform.FoldConstant(), IRModule.from_expr(before), inputs=inputs,
        config={COPY: True},
    )["main"]
    assert sorted(op_names(out)) == ["matmul", "take"]
    folded = out.body.fields[1].args[1]
    assert type(folded) is Constant and np.array_equal(folded.data, table.T)


def test_a_weight_with_one_user_is_folded_into_its_copy():
    x = var("x", shape=(2, 256))
    before = Function([x], op.matmul(x, op.transpose(c(BIG_ROWS, 256), axes=[1, 0])))
    check(before, Function([x], op.matmul(x, const(np.ascontiguousarray(arr(BIG_ROWS, 256).T)))))


def test_small_shared_constants_and_small_results_still_fold():
    x = var("x", shape=(2, 256))
    ids = var("ids", shape=(3,), dtype="int64")
    small = c(BIG_ROWS - 1, 256)  # one row under 1 MiB
    before = Function(
        [ids, x],
        Tuple([op.take(small, ids, axis=0), op.matmul(x, op.transpose(small, axes=[1, 0]))]),
    )
    assert op_names(fold(before)) == ["take", "matmul"]
    # a result under 1 MiB (a slice of a shared weight) is no copy of it
    w = c(BIG_ROWS, 256)
    row = op.strided_slice(w, begin=[0], end=[1], axes=[0])
    before = Function([ids, x], Tuple([op.take(w, ids, axis=0), op.add(x, row)]))
    out = fold(before)
    assert op_names(out) == ["take", "add"]
    assert np.array_equal(out.body.fields[1].args[1].data, arr(BIG_ROWS, 256)[:1])


def test_copy_shared_weights_is_a_registered_bool_option():
    option = list_config_options()[COPY]
    assert option.value_type is bool and option.default is False
    with pytest.raises(TypeError, match="copy_shared_weights"):
        PassContext(config={COPY: 1})


# -- failures are warnings, the call stays -----------------------------------------------------


def test_a_kernel_that_raises_leaves_the_call_with_a_warning(caplog):
    def boom(args, attrs):
        raise RuntimeError("no luck")

    bad = register_op(
        "test.fold_boom",
        num_inputs=1,
        type_rel=lambda args, attrs: args[0],
        kernel=boom,
        pattern=OpPattern.ELEMWISE,
    )
    x = var("x", shape=(2,))
    before = Function([x], op.add(x, Call(bad, [op.add(c(2), c(2))])))
    expected = Function([x], op.add(x, Call(bad, [const(arr(2) * 2)])))
    mod = IRModule.from_expr(before)
    with caplog.at_level(logging.WARNING, logger="irpass.diag"), PassContext() as ctx:
        out = irpass.transform.FoldConstant()(mod)
    assert_structural_equal(out["main"], expected)
    (warning,) = ctx.diag.warnings
    assert warning.pass_name == "FoldConstant"
    assert "test.fold_boom" in warning.message and "no luck" in warning.message
    assert warning.expr is before.body.args[1]
    assert not ctx.diag.errors


def test_a_kernel_returning_the_wrong_dtype_leaves_the_call():
    sloppy = register_op(
        "test.fold_sloppy",
        num_inputs=1,
        type_rel=lambda args, attrs: args[0],
        kernel=lambda args, attrs: args[0].astype("float64"),
        pattern=OpPattern.ELEMWISE,
    )
    x = var("x", shape=(2,))
    before = Function([x], op.add(x, Call(sloppy, [c(2)])))
    with PassContext() as ctx:
        out = irpass.transform.FoldConstant()(IRModule.from_expr(before))
    assert out["main"] is before
    (warning,) = ctx.diag.warnings
    assert "float64" in warning.message and "Tensor[(2,), float32]" in warning.message


@pytest.mark.parametrize(
    ("type_rel", "result"),
    [
        # a tuple type, but the kernel returns one float64 array (np.dtype(None) is float64)
        (lambda args, attrs: TupleType([args[0], args[0]]), lambda a: a.astype("float64")),
        # a tensor type, but the kernel returns a tuple
        (lambda args, attrs: args[0], lambda a: (a, a)),
        # the right dtype, the wrong shape
        (lambda args, attrs: args[0], lambda a: a.reshape(-1)[:1]),
    ],
    ids=["array_for_tuple", "tuple_for_array", "wrong_shape"],
)
def test_kernel_results_that_do_not_fit_the_type_leave_the_call(type_rel, result):
    odd = register_op(
        "test.fold_odd",
        num_inputs=1,
        type_rel=type_rel,
        kernel=lambda args, attrs: result(args[0]),
        pattern=OpPattern.OPAQUE,
    )
    x = var("x", shape=(2,))
    before = Function([x], Tuple([x, Call(odd, [c(2)])]))
    with PassContext() as ctx:
        out = irpass.transform.FoldConstant()(IRModule.from_expr(before))
    assert out["main"] is before
    (warning,) = ctx.diag.warnings
    assert "test.fold_odd" in warning.message and "type relation says" in warning.message


def test_ill_typed_constant_arguments_leave_the_call():
    x = var("x", shape=(2,))
    before = Function([x], op.add(x, op.add(c(2), c(3))))  # shapes do not broadcast
    with PassContext() as ctx:
        out = irpass.transform.FoldConstant()(IRModule.from_expr(before))
    assert out["main"] is before
    assert "broadcast" in ctx.diag.warnings[0].message


# -- input untouched, meaning kept ---------------------------------------------------------------


def test_input_module_is_unchanged():
    mod = models.resnet()
    before = structural_hash(mod)
    funcs = dict(mod.functions)
    fold_module(mod)
    assert structural_hash(mod) == before
    assert dict(mod.functions) == funcs


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_models_keep_their_meaning(name):
    check_semantics(irpass.transform.FoldConstant(), models.MODELS[name]())


# documented as never folded: they would only turn a tiny call into a big constant
CREATION_OPS = {"zeros", "ones", "full", "zeros_like", "ones_like", "full_like"}


def assert_no_constant_calls(mod: IRModule) -> None:
    """No op call with arguments left whose arguments are all constants, creation ops
    aside."""

    def visit(node):
        if type(node) is Call and type(node.op) is Op and node.args:
            if node.op.name not in CREATION_OPS:
                assert not all(type(a) is Constant for a in node.args), node

    for _gv, func in mod.items():
        post_order_visit(func, visit)


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_models_lose_their_constant_calls(name):
    assert_no_constant_calls(fold_module(models.MODELS[name]()))


@settings(max_examples=60, deadline=None)
@given(sts.modules())
def test_random_programs_keep_their_meaning(mod):
    check_semantics(irpass.transform.FoldConstant(), mod)


@settings(max_examples=40, deadline=None)
@given(sts.modules(max_nodes=16, globals=False, closures=False))
def test_random_programs_lose_their_constant_calls(mod):
    assert_no_constant_calls(check_semantics(irpass.transform.FoldConstant(), mod))


def test_parsed_program():
    mod = parse(
        """
        #[version = "irpass 0.1"]
        def @main(%x: Tensor[(2,), float32]) {
          let %c = add(const(float32, (2,), [1.0, 2.0]), const(float32, (2,), [3.0, 4.0]));
          multiply(%x, %c)
        }
        """
    )
    expected = parse(
        """
        #[version = "irpass 0.1"]
        def @main(%x: Tensor[(2,), float32]) {
          multiply(%x, const(float32, (2,), [4.0, 6.0]))
        }
        """
    )
    assert_structural_equal(fold_module(mod), expected)


# -- depth -------------------------------------------------------------------------------------


def test_deep_dataflow_chain_w1():
    n = 30_000
    x = var("x", shape=(2,))
    cur = x
    for i in range(n):
        cur = op.multiply(cur, op.add(c(2, start=i), c(2)))
    out = fold(Function([x], cur))
    names = op_names(out)
    assert names.count("multiply") == n and "add" not in names
    last = out.body.args[1]
    assert last.data.tolist() == (arr(2, start=n - 1) + arr(2)).tolist()


def test_deep_let_chain_of_constants():
    n = 30_000
    x = var("x", shape=(2,))
    vars_ = [Var(f"v{i}") for i in range(n)]
    body = op.add(x, vars_[-1])
    for i in reversed(range(n)):
        value = c(2) if i == 0 else op.add(vars_[i - 1], c(2))
        body = Let(vars_[i], value, body)
    out = fold(Function([x], body))
    assert_structural_equal(out, Function([x], op.add(x, const(arr(2) * n))))


def test_deep_let_chain_without_constants_is_returned_as_is():
    n = 30_000
    x = var("x", shape=(2,))
    vars_ = [Var(f"v{i}") for i in range(n)]
    body = vars_[-1]
    for i in reversed(range(n)):
        body = Let(vars_[i], op.exp(vars_[i - 1] if i else x), body)
    check_unchanged(Function([x], body))


@pytest.mark.parametrize("constant", [False, True], ids=["with_vars", "all_constant"])
def test_deeply_nested_tuples_and_projections(constant):
    n = 30_000
    x = var("x", shape=(2,))
    leaf = c(2)
    nested = leaf
    for _ in range(n):
        nested = Tuple([nested, c(2, start=5) if constant else x])
    proj = nested
    for _ in range(n):
        proj = TupleGetItem(proj, 0)
    out = fold(Function([x], Tuple([op.add(x, proj), nested])))
    assert out.body.fields[0].args[1] is leaf
    assert out.body.fields[1] is nested


# -- in a pipeline, documented -----------------------------------------------------------------


def test_in_a_sequential_at_its_opt_level():
    x = var("x", shape=(2,))
    mod = IRModule.from_expr(Function([x], op.add(x, op.add(c(2), c(2)))))
    seq = Sequential([irpass.transform.FoldConstant()])
    with PassContext(opt_level=1):
        assert seq(mod) is mod
    with PassContext(opt_level=2):
        assert seq(mod) is not mod


def test_doc_example_runs():
    text = DOC.read_text()
    assert text.startswith("### FoldConstant")
    assert "*function pass, opt level 2; requires nothing; config: " in text
    assert f"config: {MAX}, {COPY}*" in text
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})
