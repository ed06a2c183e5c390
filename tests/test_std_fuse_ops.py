"""FuseOps (plugins/irpass_std/fuse_ops.py): expected-IR tests in the style of TVM's
test_pass_fuse_ops.py, boundaries, options, deep and wide programs, and meaning
preserved on every example model and on random programs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from irpass import op
from irpass.errors import PassError
from irpass.evaluator import evaluate
from irpass.ir import (
    Call,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    Op,
    OpPattern,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    assert_structural_equal,
    infer_type,
    parse,
    post_order_visit,
    register_op,
    structural_hash,
    var,
)
from irpass.ir.nodes import const
from irpass.testing import assert_outputs_close, check_semantics, models
from irpass.testing import strategies as sts
from irpass.transform import PassContext, Sequential, default_pipeline, get_pass
from irpass_std.fuse_ops import MAX_DEPTH, FuseOps

F32 = "float32"
S = (2, 3)


def fuse(mod: IRModule, *, opt_level: int = 3, config: dict | None = None, **kwargs) -> IRModule:
    # typed first: called directly, FuseOps runs without its requirement (InferType)
    with PassContext(opt_level=opt_level, config=config):
        return FuseOps(**kwargs)(infer_type(mod))


def assert_fused(got: Function, expected: Function) -> None:
    """``got`` equals ``expected`` once typed, as TVM's tests type their expected
    programs: InferType fills the ``ret_type`` they are written without."""
    assert_structural_equal(got, infer_type(expected))


def main_of(*params, body) -> IRModule:
    return IRModule.from_expr(Function(list(params), body))


def prim(params, body, shape, dtype: str = F32) -> Function:
    """A fused function as the pass writes it: typed params, return type, Primitive=1."""
    return Function(params, body, TensorType(shape, dtype), {"Primitive": 1})


def p(i: int, shape=S, dtype: str = F32):
    return var(f"p{i}", shape=shape, dtype=dtype)


def op_calls(expr) -> list[Call]:
    found: list[Call] = []

    def visit(node) -> None:
        if type(node) is Call and type(node.op) is Op:
            found.append(node)

    post_order_visit(expr, visit)
    return found


def primitive_functions(mod: IRModule) -> list[Function]:
    found: list[Function] = []
    for _gv, func in mod.items():
        post_order_visit(
            func,
            lambda n: found.append(n)
            if type(n) is Function and n.attrs and n.attrs.get("Primitive")
            else None,
        )
    return found


def assert_every_op_in_one_primitive_function(mod: IRModule) -> None:
    inside = [id(c) for f in primitive_functions(mod) for c in op_calls(f.body)]
    assert len(inside) == len(set(inside))
    everywhere = {id(c) for _gv, func in mod.items() for c in op_calls(func)}
    assert everywhere == set(inside), "an op call outside a primitive function"


# -- OUT_ELEMWISE_FUSABLE: conv2d with the elementwise ops after it ---------------------------


def _conv(x, w):
    return op.nn.conv2d(x, w, padding=(1, 1), channels=4, kernel_size=(3, 3))


XS, WS, YS = (1, 3, 8, 8), (4, 3, 3, 3), (1, 4, 8, 8)


def test_conv2d_bias_add_relu_is_one_group():
    x, w, b = var("x", shape=XS), var("w", shape=WS), var("b", shape=(4,))
    mod = main_of(x, w, b, body=op.nn.relu(op.nn.bias_add(_conv(x, w), b)))

    p0, p1, p2 = p(0, XS), p(1, WS), p(2, (4,))
    f = prim([p0, p1, p2], op.nn.relu(op.nn.bias_add(_conv(p0, p1), p2)), YS)
    assert_fused(fuse(mod)["main"], Function([x, w, b], Call(f, [x, w, b])))


def test_elementwise_op_before_conv2d_is_not_fused_into_it():
    # TVM's test_conv2d_fuse: the add feeds the conv (an OUT_ELEMWISE_FUSABLE edge)
    x, w = var("x", shape=XS), var("w", shape=WS)
    mod = main_of(x, w, body=op.nn.relu(_conv(op.add(x, const(1.0)), w)))

    p0 = p(0, XS)
    f_add = prim([p0], op.add(p0, const(1.0)), XS)
    q0, q1 = p(0, XS), p(1, WS)
    f_conv = prim([q0, q1], op.nn.relu(_conv(q0, q1)), YS)
    expected = Function([x, w], Call(f_conv, [Call(f_add, [x]), w]))
    assert_fused(fuse(mod)["main"], expected)


def test_conv2d_diamond_fuses_into_its_post_dominator():
    # conv2d has two consumers that rejoin in an elementwise add: one group
    x, w = var("x", shape=XS), var("w", shape=WS)
    y = _conv(x, w)
    mod = main_of(x, w, body=op.add(op.add(y, const(1.0)), op.multiply(y, const(2.0))))

    p0, p1 = p(0, XS), p(1, WS)
    y0 = _conv(p0, p1)
    f = prim([p0, p1], op.add(op.add(y0, const(1.0)), op.multiply(y0, const(2.0))), YS)
    assert_fused(fuse(mod)["main"], Function([x, w], Call(f, [x, w])))


def test_conv2d_does_not_take_an_op_that_changes_the_shape():
    # the edge into a broadcast op whose result is bigger is not elementwise
    x, w = var("x", shape=XS), var("w", shape=WS)
    big = var("big", shape=(2, 4, 8, 8))
    mod = main_of(x, w, big, body=op.add(_conv(x, w), big))
    out = fuse(mod)
    assert len(primitive_functions(out)) == 2
    check_semantics(FuseOps(), mod)


def test_dense_bias_add_and_batch_matmul_scale_fuse():
    x, w, b = var("x", shape=(2, 8)), var("w", shape=(4, 8)), var("b", shape=(4,))
    mod = main_of(x, w, b, body=op.nn.bias_add(op.nn.dense(x, w, units=4), b))
    p0, p1, p2 = p(0, (2, 8)), p(1, (4, 8)), p(2, (4,))
    f = prim([p0, p1, p2], op.nn.bias_add(op.nn.dense(p0, p1, units=4), p2), (2, 4))
    assert_fused(fuse(mod)["main"], Function([x, w, b], Call(f, [x, w, b])))

    a, c = var("a", shape=(2, 3, 4)), var("c", shape=(2, 5, 4))
    mod = main_of(a, c, body=op.multiply(op.nn.batch_matmul(a, c), const(0.5)))
    q0, q1 = p(0, (2, 3, 4)), p(1, (2, 5, 4))
    g = prim([q0, q1], op.multiply(op.nn.batch_matmul(q0, q1), const(0.5)), (2, 3, 5))
    assert_fused(fuse(mod)["main"], Function([a, c], Call(g, [a, c])))


# -- elementwise chains, diamonds, fan-out -------------------------------------------------


def test_two_elementwise_chains_become_two_groups():
    x, y = var("x", shape=S), var("y", shape=S)
    mod = main_of(x, y, body=Tuple([op.exp(op.add(x, const(1.0))), op.tanh(op.nn.relu(y))]))

    p0 = p(0)
    f1 = prim([p0], op.exp(op.add(p0, const(1.0))), S)
    q0 = p(0)
    f2 = prim([q0], op.tanh(op.nn.relu(q0)), S)
    expected = Function([x, y], Tuple([Call(f1, [x]), Call(f2, [y])]))
    assert_fused(fuse(mod)["main"], expected)


def test_diamond_is_one_group():
    x = var("x", shape=S)
    e = op.exp(x)
    mod = main_of(x, body=op.add(op.nn.relu(e), op.tanh(e)))

    p0 = p(0)
    e0 = op.exp(p0)
    f = prim([p0], op.add(op.nn.relu(e0), op.tanh(e0)), S)
    assert_fused(fuse(mod)["main"], Function([x], Call(f, [x])))


def test_two_consumers_that_do_not_rejoin_keep_their_producer_apart():
    x = var("x", shape=S)
    e = op.exp(x)
    mod = main_of(x, body=Tuple([op.nn.relu(e), op.tanh(e)]))
    out = fuse(mod)

    p0, q0, r0 = p(0), p(0), p(0)
    call_e = Call(prim([p0], op.exp(p0), S), [x])
    fr = prim([q0], op.nn.relu(q0), S)
    ft = prim([r0], op.tanh(r0), S)
    expected = Function([x], Tuple([Call(fr, [call_e]), Call(ft, [call_e])]))
    assert_fused(out["main"], expected)
    # the producer is computed once, not duplicated into both consumers
    assert sum(c.op.name == "exp" for c in op_calls(out["main"])) == 1


def test_param_order_follows_reading_order_and_args_are_shared():
    # TVM order: params in the order their operands are first read, left to right
    x, y = var("x", shape=S), var("y", shape=S)
    mod = main_of(x, y, body=op.add(y, op.multiply(op.exp(x), y)))
    p0, p1 = p(0), p(1)
    f = prim([p0, p1], op.add(p0, op.multiply(op.exp(p1), p0)), S)
    assert_fused(fuse(mod)["main"], Function([x, y], Call(f, [y, x])))


def test_scalar_constants_are_inlined_tensor_constants_become_params():
    x = var("x", shape=S)
    c = const(np.arange(6, dtype=F32).reshape(S))
    mod = main_of(x, body=op.multiply(op.add(x, const(1.0)), c))
    p0, p1 = p(0), p(1)
    f = prim([p0, p1], op.multiply(op.add(p0, const(1.0)), p1), S)
    assert_fused(fuse(mod)["main"], Function([x], Call(f, [x, c])))


# -- reductions ---------------------------------------------------------------------------


def test_elementwise_fuses_into_a_following_reduction():
    x = var("x", shape=S)
    mod = main_of(x, body=op.sum(op.exp(x), axis=1))
    p0 = p(0)
    f = prim([p0], op.sum(op.exp(p0), axis=1), (2,))
    assert_fused(fuse(mod)["main"], Function([x], Call(f, [x])))


def test_reduction_after_injective():
    # TVM's rule: an elementwise op fuses into the injective op after it, but an
    # injective op fuses only into injective consumers, not into a reduction
    x = var("x", shape=S)
    mod = main_of(x, body=op.sum(op.transpose(op.exp(x), axes=(1, 0)), axis=1))
    p0 = p(0)
    f1 = prim([p0], op.transpose(op.exp(p0), axes=(1, 0)), (3, 2))
    q0 = p(0, (3, 2))
    f2 = prim([q0], op.sum(q0, axis=1), (3,))
    assert_fused(fuse(mod)["main"], Function([x], Call(f2, [Call(f1, [x])])))


def test_a_reduction_ends_its_group():
    x = var("x", shape=S)
    mod = main_of(x, body=op.exp(op.sum(x, axis=1)))
    p0, q0 = p(0), p(0, (2,))
    f1 = prim([p0], op.sum(p0, axis=1), (2,))
    f2 = prim([q0], op.exp(q0), (2,))
    assert_fused(fuse(mod)["main"], Function([x], Call(f2, [Call(f1, [x])])))


def test_reductions_do_not_merge_with_each_other():
    # softmax written by hand: max and sum each start/end groups
    x = var("x", shape=S)
    shifted = op.exp(op.subtract(x, op.max(x, axis=1, keepdims=True)))
    mod = main_of(x, body=op.divide(shifted, op.sum(shifted, axis=1, keepdims=True)))
    out = check_semantics(FuseOps(), mod)
    for f in primitive_functions(out):
        assert sum(c.op.pattern == OpPattern.COMM_REDUCE for c in op_calls(f.body)) <= 1


# -- opaque ops, stateful ops -----------------------------------------------------------------


def test_opaque_op_breaks_groups_and_is_wrapped_alone():
    x = var("x", shape=S)
    mod = main_of(x, body=op.exp(op.add(op.nn.softmax(op.nn.relu(x)), const(1.0))))
    p0, q0, r0 = p(0), p(0), p(0)
    f_relu = prim([p0], op.nn.relu(p0), S)
    f_softmax = prim([q0], op.nn.softmax(q0), S)
    f_rest = prim([r0], op.exp(op.add(r0, const(1.0))), S)
    expected = Function([x], Call(f_rest, [Call(f_softmax, [Call(f_relu, [x])])]))
    assert_fused(fuse(mod)["main"], expected)


def test_stateful_op_is_opaque():
    register_op(
        "test_fuse.bump",
        num_inputs=1,
        type_rel=lambda args, attrs: args[0],
        kernel=lambda args, attrs: args[0] + 1,
        pattern=OpPattern.ELEMWISE,
        stateful=True,
        owner="test",
    )
    bump = Op.get("test_fuse.bump")
    x = var("x", shape=S)
    mod = main_of(x, body=op.nn.relu(Call(bump, [op.exp(x)])))
    out = check_semantics(FuseOps(), mod)
    assert sorted(len(op_calls(f.body)) for f in primitive_functions(out)) == [1, 1, 1]


# -- tuples and projections ---------------------------------------------------------------


def test_concatenate_takes_its_tuple_and_the_fields():
    # TVM's test_concatenate: the fields fuse into the injective consumer of the tuple
    x, y = var("x", shape=S), var("y", shape=S)
    mod = main_of(x, y, body=op.concatenate(Tuple([op.nn.relu(x), op.exp(y)]), axis=0))
    p0, p1 = p(0), p(1)
    f = prim([p0, p1], op.concatenate(Tuple([op.nn.relu(p0), op.exp(p1)]), axis=0), (4, 3))
    assert_fused(fuse(mod)["main"], Function([x, y], Call(f, [x, y])))


def test_tuple_output_keeps_its_fields_apart():
    # TVM's test_tuple_root: a tuple heading its region is not wrapped and takes no fields
    x = var("x", shape=S)
    mod = main_of(x, body=Tuple([op.nn.relu(x), op.exp(x)]))
    p0, q0 = p(0), p(0)
    expected = Function(
        [x], Tuple([Call(prim([p0], op.nn.relu(p0), S), [x]), Call(prim([q0], op.exp(q0), S), [x])])
    )
    assert_fused(fuse(mod)["main"], expected)


def test_split_and_projections_fuse_with_their_consumers():
    x = var("x", shape=S)
    parts = op.split(x, indices_or_sections=3, axis=1)
    mod = main_of(x, body=op.add(op.nn.relu(TupleGetItem(parts, 0)), TupleGetItem(parts, 2)))
    p0 = p(0)
    q = op.split(p0, indices_or_sections=3, axis=1)
    f = prim([p0], op.add(op.nn.relu(TupleGetItem(q, 0)), TupleGetItem(q, 2)), (2, 1))
    assert_fused(fuse(mod)["main"], Function([x], Call(f, [x])))


def test_projection_of_an_opaque_op_fuses_forward_with_a_tuple_param():
    x = var("x", shape=(1, 4, 2, 2))
    g, b, m, v = (var(n, shape=(4,)) for n in "gbmv")
    bn = op.nn.batch_norm(x, g, b, m, v)
    mod = main_of(x, g, b, m, v, body=op.nn.relu(TupleGetItem(bn, 0)))

    shapes = [(1, 4, 2, 2), (4,), (4,), (4,), (4,)]
    ps = [p(i, s) for i, s in enumerate(shapes)]
    f_bn = Function(
        ps,
        op.nn.batch_norm(*ps),
        TupleType([TensorType((1, 4, 2, 2), F32), TensorType((4,), F32), TensorType((4,), F32)]),
        {"Primitive": 1},
    )
    t0 = var("p0", TupleType([TensorType((1, 4, 2, 2), F32), TensorType((4,), F32),
                              TensorType((4,), F32)]))
    f_relu = prim([t0], op.nn.relu(TupleGetItem(t0, 0)), (1, 4, 2, 2))
    expected = Function([x, g, b, m, v], Call(f_relu, [Call(f_bn, [x, g, b, m, v])]))
    assert_fused(fuse(mod)["main"], expected)


# -- fuse_opt_level and max_depth ------------------------------------------------------------


def _chain_mod(n: int, shape=(4, 4)):
    x = var("x", shape=shape)
    y = x
    for _ in range(n):
        y = op.nn.relu(y)
    return main_of(x, body=y), x


def test_fuse_opt_level_0_wraps_each_op_alone():
    x = var("x", shape=S)
    mod = main_of(x, body=op.exp(op.add(x, const(1.0))))
    p0, q0 = p(0), p(0)
    f_add = prim([p0], op.add(p0, const(1.0)), S)
    f_exp = prim([q0], op.exp(q0), S)
    expected = Function([x], Call(f_exp, [Call(f_add, [x])]))
    assert_fused(fuse(mod, fuse_opt_level=0)["main"], expected)
    # -1 takes the PassContext's level: 0 fuses nothing there either
    assert_fused(fuse(mod, opt_level=0)["main"], expected)
    # an explicit level wins over the context's
    assert len(primitive_functions(fuse(mod, opt_level=0, fuse_opt_level=1))) == 1


def test_max_depth_bounds_the_ops_of_a_group():
    mod, x = _chain_mod(10, shape=S)

    def group(n):
        p0 = p(0)
        y = p0
        for _ in range(n):
            y = op.nn.relu(y)
        return prim([p0], y, S)

    expected = Function([x], Call(group(2), [Call(group(4), [Call(group(4), [x])])]))
    out = fuse(mod, config={MAX_DEPTH: 4})
    assert_fused(out["main"], expected)
    with PassContext(config={MAX_DEPTH: 1}):
        assert len(primitive_functions(FuseOps()(infer_type(mod)))) == 10


def test_bad_options_are_errors_naming_them():
    mod, _ = _chain_mod(3)
    with pytest.raises(PassError, match="std.FuseOps.max_depth"):
        fuse(mod, config={MAX_DEPTH: 0})
    with pytest.raises(TypeError, match="max_depth"):
        PassContext(config={MAX_DEPTH: "deep"})
    with pytest.raises(ValueError, match="fuse_opt_level"):
        FuseOps(fuse_opt_level=-2)
    with pytest.raises(TypeError, match="fuse_opt_level"):
        FuseOps(fuse_opt_level="1")


def test_registered_with_tvm_name_level_and_requirement():
    p_ = get_pass("FuseOps", fuse_opt_level=0)
    assert p_.info.name == "FuseOps" and p_.info.opt_level == 1
    assert list(p_.info.required) == ["InferType"] and p_.fuse_opt_level == 0


# -- boundaries: let, if, closures, global functions ------------------------------------------


def test_let_boundaries_break_groups():
    x, v = var("x", shape=S), var("v")
    e = op.exp(x)  # used in the let value and in the body: the output of its own group
    mod = main_of(x, body=Let(v, op.nn.relu(e), op.add(v, op.tanh(e))))

    q0, r0, a0, a1 = p(0), p(0), p(0), p(1)
    call_e = Call(prim([q0], op.exp(q0), S), [x])
    v2 = var("v")
    body = Let(
        v2,
        Call(prim([r0], op.nn.relu(r0), S), [call_e]),
        Call(prim([a0, a1], op.add(a0, op.tanh(a1)), S), [v2, call_e]),
    )
    assert_fused(fuse(mod)["main"], Function([x], body))


def test_let_value_fuses_within_itself():
    x, v = var("x", shape=S), var("v")
    mod = main_of(x, body=Let(v, op.nn.relu(op.exp(x)), op.tanh(op.negative(v))))
    p0, q0 = p(0), p(0)
    v2 = var("v")
    body = Let(
        v2,
        Call(prim([p0], op.nn.relu(op.exp(p0)), S), [x]),
        Call(prim([q0], op.tanh(op.negative(q0)), S), [v2]),
    )
    assert_fused(fuse(mod)["main"], Function([x], body))


def test_if_branches_fuse_separately():
    x = var("x", shape=S)
    e = op.exp(x)  # used by both branches: computed once, outside them
    cond = op.greater(op.sum(x), const(0.0))
    mod = main_of(x, body=If(cond, op.nn.relu(op.exp(e)), op.tanh(op.negative(e))))

    s0, g0 = p(0), p(0, ())
    f_sum = prim([s0], op.sum(s0), ())
    f_greater = prim([g0], op.greater(g0, const(0.0)), (), "bool")
    e0, t0, f0 = p(0), p(0), p(0)
    call_e = Call(prim([e0], op.exp(e0), S), [x])
    expected = Function(
        [x],
        If(
            Call(f_greater, [Call(f_sum, [x])]),
            Call(prim([t0], op.nn.relu(op.exp(t0)), S), [call_e]),
            Call(prim([f0], op.tanh(op.negative(f0)), S), [call_e]),
        ),
    )
    assert_fused(fuse(mod)["main"], expected)
    check_semantics(FuseOps(), mod)


def test_closures_and_global_calls_are_boundaries():
    x, y, h = var("x", shape=S), var("y", shape=S), var("h", shape=S)
    f = var("f")
    e = op.exp(x)  # captured by the closure and used outside it
    clo = Function([y], op.nn.relu(op.add(y, e)))
    body = Let(f, clo, op.multiply(Call(f, [x]), e))
    helper = GlobalVar("helper")
    mod = IRModule(
        {
            "helper": Function([h], op.exp(op.negative(h))),
            "main": Function([x], op.nn.relu(Call(helper, [op.exp(body)]))),
        }
    )
    out = check_semantics(FuseOps(), mod)
    assert_every_op_in_one_primitive_function(out)
    sizes = sorted(len(op_calls(fn.body)) for fn in primitive_functions(out))
    # helper: negative+exp; closure: add+relu; e alone; multiply alone; exp alone; relu alone
    assert sizes == [1, 1, 1, 1, 2, 2]

    h0 = p(0)
    expected_helper = Function([h], Call(prim([h0], op.exp(op.negative(h0)), S), [h]))
    assert_fused(out["helper"], expected_helper)


def test_functions_marked_primitive_or_skip_optimization_are_left_alone():
    x, h, k = var("x", shape=S), var("h", shape=S), var("k", shape=S)
    prim_fn = Function([h], op.exp(op.exp(h)), None, {"Primitive": 1})
    skip_fn = Function([k], op.exp(op.exp(k)), None, {"SkipOptimization": 1})
    mod = infer_type(IRModule({"main": Function([x], op.exp(x)), "p": prim_fn, "s": skip_fn}))
    with PassContext(opt_level=3):
        out = FuseOps()(mod)
    assert out["p"] is mod["p"] and out["s"] is mod["s"] and out["main"] is not mod["main"]


def test_running_twice_changes_nothing_the_second_time():
    out = fuse(models.resnet())
    assert fuse(out) is out


def test_module_without_op_calls_is_returned_as_is():
    x = var("x", shape=S)
    mod = infer_type(main_of(x, body=Tuple([x, x])))
    with PassContext(opt_level=3):
        assert FuseOps()(mod) is mod


def test_input_module_is_not_changed():
    mod = models.mobilenet()
    before = structural_hash(mod), dict(mod.functions)
    fuse(mod)
    assert structural_hash(mod) == before[0]
    assert all(mod[gv] is f for gv, f in before[1].items())


def test_ill_typed_module_is_a_pass_error_and_left_unchanged():
    x = var("x", shape=S)
    y = var("y", shape=(4, 5))
    mod = main_of(x, y, body=op.exp(op.add(x, y)))
    h = structural_hash(mod)
    with pytest.raises(PassError) as info:
        Sequential([FuseOps()])(mod)  # its requirement InferType fails
    assert "add" in str(info.value)
    assert structural_hash(mod) == h


# -- big programs: deep and wide ----------------------------------------------------------


def test_30000_deep_chain_fuses_into_groups_of_max_depth():
    mod, _ = _chain_mod(30_000)
    out = fuse(mod)
    sizes = [len(op_calls(f.body)) for f in primitive_functions(out)]
    assert len(sizes) == 118 and max(sizes) == 256 and sum(sizes) == 30_000
    arg = np.random.default_rng(0).standard_normal((4, 4)).astype(F32)
    np.testing.assert_array_equal(evaluate(out, arg), np.maximum(arg, 0))


def _let_chain(n: int) -> IRModule:
    # W3's shape: an unused `let d = tanh(x)` around each dataflow step (here
    # tanh(add(x, x)), which keeps values finite)
    x = var("x", shape=(4, 4))
    cur, binds = x, []
    for _ in range(n):
        binds.append((var("d"), op.tanh(cur)))
        cur = op.tanh(op.add(cur, cur))
    body = cur
    for d, value in reversed(binds):
        body = Let(d, value, body)
    return main_of(x, body=body)


def test_30000_deep_let_chain():
    out = fuse(_let_chain(30_000))
    sizes = [len(op_calls(f.body)) for f in primitive_functions(out)]
    # add+tanh fuse each step; each tanh bound by a let (its value) is alone
    assert sorted(set(sizes)) == [1, 2] and len(sizes) == 60_000
    # (the meaning, on a shorter chain: evaluating 60,000 closure calls is slow)
    check_semantics(FuseOps(), _let_chain(2_000))


def _fan_out(n: int) -> IRModule:
    # Each side node s_i feeds the long chain at step i and a node near the output:
    # walking parent links to their common post-dominator would take n - i steps each.
    x = var("x", shape=(2,))
    chain, sides = x, []
    for _ in range(n):
        s = op.negative(x)
        chain = op.add(chain, s)
        sides.append(op.tanh(s))
    return main_of(x, body=op.concatenate(Tuple([chain, *sides]), axis=0))


def test_wide_fan_out_is_post_dominated_without_quadratic_walks():
    out = fuse(_fan_out(20_000))
    assert_every_op_in_one_primitive_function(out)
    assert max(len(op_calls(f.body)) for f in primitive_functions(out)) <= 256
    check_semantics(FuseOps(), _fan_out(1_000))


def test_many_consumers_rejoining():
    x = var("x", shape=S)
    e = op.exp(x)
    acc = op.nn.relu(e)
    for i in range(300):
        acc = op.add(acc, op.multiply(e, const(float(i))))
    mod = main_of(x, body=acc)
    out = check_semantics(FuseOps(), mod)
    assert_every_op_in_one_primitive_function(out)
    assert max(len(op_calls(f.body)) for f in primitive_functions(out)) <= 256


# -- meaning preserved ----------------------------------------------------------------------


@pytest.mark.parametrize("fuse_opt_level", [-1, 0])
@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_models_keep_meaning(name, fuse_opt_level):
    out = check_semantics(FuseOps(fuse_opt_level=fuse_opt_level), models.MODELS[name]())
    assert_every_op_in_one_primitive_function(out)


def test_nhwc_resnet_keeps_meaning():
    check_semantics(FuseOps(), models.resnet(layout="NHWC"))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(sts.modules_and_inputs())
def test_random_programs_keep_meaning(mod_and_args):
    mod, args = mod_and_args
    expected = evaluate(mod, *args)
    with PassContext(opt_level=3, config={"testing.immutable_module": True}):
        out = Sequential([FuseOps()])(mod)
    infer_type(out)
    assert_outputs_close(evaluate(out, *args), expected)
    assert_every_op_in_one_primitive_function(out)
    with PassContext(opt_level=3):
        assert FuseOps()(out) is out


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(sts.modules())
def test_random_programs_check_semantics(mod):
    check_semantics(FuseOps(), mod)
    check_semantics(FuseOps(fuse_opt_level=0), mod, config={MAX_DEPTH: 2})


def test_fusion_through_a_group_formed_earlier():
    # reshape's post-dominator is the add; on the way, exp+transpose already form a
    # group whose output leads on to the second reshape: all of it is merged
    x = var("x", shape=S)
    src = op.reshape(x, newshape=(3, 2))
    b = op.reshape(op.transpose(op.exp(src), axes=(1, 0)), newshape=(3, 2))
    mod = main_of(x, body=op.add(b, op.negative(src)))

    p0 = p(0)
    r = op.reshape(p0, newshape=(3, 2))
    body = op.add(op.reshape(op.transpose(op.exp(r), axes=(1, 0)), newshape=(3, 2)), op.negative(r))
    assert_fused(fuse(mod)["main"], Function([x], Call(prim([p0], body, (3, 2)), [x])))


SQ = (3, 3)


@st.composite
def dataflow_programs(draw) -> IRModule:
    """Random dataflow DAGs over every fusion pattern: elementwise, broadcast,
    injective (reshape, transpose, split and its projections, concatenate of a
    tuple), reductions, opaque (softmax) and OUT_ELEMWISE_FUSABLE (dense) ops.
    Tensors are square so any op applies to any earlier node: the DAGs share
    nodes freely and have several outputs. Values stay bounded."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x, y = var("x", shape=SQ), var("y", shape=SQ)
    square: list = [x, y]  # the (3, 3) nodes
    columns: list = []  # (3, 1) nodes, used as broadcast operands

    def pick(pool):
        return pool[draw(st.integers(0, len(pool) - 1))]

    for _ in range(draw(st.integers(1, 25))):
        a = square[-1] if draw(st.booleans()) else pick(square)
        kind = draw(st.sampled_from(
            ["unary", "binary", "binary", "reduce", "transpose", "reshape", "softmax",
             "dense", "concat", "split"]))
        if kind == "unary":
            name = draw(st.sampled_from(["tanh", "negative", "sigmoid", "relu"]))
            node = op.nn.relu(a) if name == "relu" else getattr(op, name)(a)
        elif kind == "binary":
            b = pick(columns) if columns and draw(st.booleans()) else pick(square)
            if draw(st.booleans()):
                a, b = b, a
            node = getattr(op, draw(st.sampled_from(["add", "maximum", "subtract"])))(a, b)
            if len(infer_type(node).checked_type.shape) and node.checked_type.shape != SQ:
                node = op.add(node, pick(square))  # (3, 1) with (3, 1): back to square
        elif kind == "reduce":
            columns.append(op.sum(a, axis=1, keepdims=True))
            continue
        elif kind == "transpose":
            node = op.transpose(a, axes=(1, 0))
        elif kind == "reshape":
            node = op.reshape(op.reshape(a, newshape=(9,)), newshape=SQ)
        elif kind == "softmax":
            node = op.nn.softmax(a)
        elif kind == "dense":
            w = const(rng.uniform(-0.5, 0.5, size=SQ).astype(F32))
            node = op.nn.dense(a, w, units=3)
        elif kind == "concat":
            both = op.concatenate(Tuple([a, pick(square)]), axis=0)
            node = TupleGetItem(op.split(both, indices_or_sections=2, axis=0), 1)
        else:  # split into columns
            parts = op.split(a, indices_or_sections=3, axis=1)
            columns.append(op.multiply(TupleGetItem(parts, 0), TupleGetItem(parts, 2)))
            continue
        square.append(node)
    outputs = [square[-1]] + [pick(square) for _ in range(draw(st.integers(0, 2)))]
    if columns and draw(st.booleans()):
        outputs.append(pick(columns))
    return main_of(x, y, body=outputs[0] if len(outputs) == 1 else Tuple(outputs))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(dataflow_programs(), st.sampled_from([256, 3, 1]))
def test_random_dataflow_programs_over_every_pattern(mod, max_depth):
    out = check_semantics(FuseOps(), mod, config={MAX_DEPTH: max_depth})
    assert_every_op_in_one_primitive_function(out)
    # nothing duplicated, nothing lost: the same op calls, each in one function
    sizes = [len(op_calls(f.body)) for f in primitive_functions(out)]
    assert len(op_calls(mod["main"])) == sum(sizes) and max(sizes, default=0) <= max_depth
    with PassContext(opt_level=3, config={MAX_DEPTH: max_depth}):
        assert FuseOps()(out) is out


def test_text_round_trip_of_fused_module():
    out = fuse(models.mlp())
    assert_structural_equal(parse(str(out)), out)


# -- the ResNet model through the default -O3 pipeline ---------------------------------------


def test_resnet_o3_pipeline_fuses_every_conv_with_the_elementwise_ops_after_it():
    mod = models.resnet()
    with PassContext(opt_level=3):
        out = default_pipeline(3)(mod)
    assert_every_op_in_one_primitive_function(out)
    convs = 0
    for f in primitive_functions(out):
        names = [c.op.name for c in op_calls(f.body)]
        if "nn.conv2d" in names:
            convs += names.count("nn.conv2d")
            assert names.count("nn.conv2d") == 1, names
            # the batch-norm shift (add), the residual add and the relu ride along
            assert "add" in names and names[-1] == "nn.relu", names
    assert convs == 5
    check_semantics(default_pipeline(3), mod)
