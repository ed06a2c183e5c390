"""BackwardFoldScaleAxis, ForwardFoldScaleAxis and FoldScaleAxis (irpass_std/fold_scale_axis.py).

Expected-IR tests (one per rule, and the cases where the pass must not fire)
build the input and the hand-written result; expected weights are computed
here with numpy from the test's own arrays. Scales are powers of two where a
result is a product of several of them, so every expected constant is exact.
Every expected-IR test also checks meaning (``check_semantics``: before and
after evaluated on random inputs). TVM's own test cases
(tests/python/relay/test_pass_fold_scale_axis.py) are ported in their own
section, with TVM's parameter weights and biases. Meaning is checked besides
on every example network, on networks whose batch norms were turned into
``multiply``/``add`` (by hand and by SimplifyInference), on hypothesis
programs and on random conv/dense chains (parameter biases, leaky relus, two
consumers). Programs in A-normal form (every constant let-bound, some shared)
have their own expected-IR tests, and the random chains and example networks
must fold the same in A-normal form as in graph form.
"""

from __future__ import annotations

import re
from pathlib import Path

import irpass
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from irpass import op
from irpass.ir import (
    Call,
    Constant,
    ExprMutator,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    Op,
    Tuple,
    Var,
    assert_structural_equal,
    infer_type,
    post_order_visit,
    var,
)
from irpass.testing import check_semantics, models
from irpass.testing import strategies as sts
from irpass.transform import PassContext, Sequential, get_pass
from irpass_std.fold_scale_axis import (
    BackwardFoldScaleAxis,
    FoldScaleAxis,
    ForwardFoldScaleAxis,
)

RNG = np.random.default_rng(1234)
DOC = Path(__file__).resolve().parents[1] / "plugins" / "irpass_std" / "docs" / "FoldScaleAxis.md"


def _arr(*shape, low=-1.0, high=1.0, dtype="float32"):
    return RNG.uniform(low, high, size=shape).astype(dtype)


def _c(a):
    return Constant(np.asarray(a))


def _pow2(*shape, negative=False):
    """Powers of two in [1/4, 4], all positive unless ``negative``."""
    a = (2.0 ** RNG.integers(-2, 3, size=shape)).astype("float32")
    if negative:
        a = a * np.where(RNG.integers(0, 2, size=shape) == 0, -1.0, 1.0).astype("float32")
        a.flat[0] = -abs(a.flat[0])
    return a


def _mod(params, body):
    return IRModule.from_expr(Function(params, body))


def _run(p, mod):
    """Run ``p`` at opt level 3, checking meaning, and return the result's main."""
    return check_semantics(p, mod)["main"]


def _same(p, mod):
    """``p`` does not fire: the very same module comes back, and its main too.

    The module is typed first, so that the InferType a Sequential runs before the
    passes (FoldScaleAxis's) has nothing to add either.
    """
    mod = infer_type(mod)
    with PassContext(opt_level=3):
        out = p(mod)
    assert out is mod
    assert out["main"] is mod["main"]


def _assert_ir(out, expected):
    """``out`` is the hand-written ``expected`` function, compared as TVM's tests compare
    them: both typed (InferType gives a function without ``ret_type`` its inferred one, and
    the passes type what they rewrite)."""
    assert_structural_equal(out, infer_type(expected))


def _ops(expr):
    """The op names of every op call in ``expr``."""
    names = []

    def collect(n):
        if type(n) is Call and type(n.op) is Op:
            names.append(n.op.name)

    post_order_visit(expr, collect)
    return names


X = (1, 3, 6, 6)


# -- registration ------------------------------------------------------------------------------


def test_registered_with_tvm_names_and_levels():
    for name in ("BackwardFoldScaleAxis", "ForwardFoldScaleAxis"):
        p = get_pass(name)
        assert p.info.name == name and p.info.opt_level == 3
        assert list(p.info.required) == ["InferType"]
    seq = FoldScaleAxis()
    assert isinstance(seq, Sequential)
    assert seq.info.name == "FoldScaleAxis" and seq.info.opt_level == 3
    assert [p.info.name for p in seq.passes] == ["BackwardFoldScaleAxis", "ForwardFoldScaleAxis"]
    assert get_pass("FoldScaleAxis").info.name == "FoldScaleAxis"
    assert irpass.transform.FoldScaleAxis().info.name == "FoldScaleAxis"


def test_doc_paragraph_and_example_run():
    text = DOC.read_text()
    assert text.startswith("### FoldScaleAxis\n")
    assert "opt level 3; requires InferType; config: none*" in text
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], str(DOC), "exec"), {})


# -- backward: expected IR ---------------------------------------------------------------------


def test_backward_conv_nchw():
    x = var("x", shape=X)
    w, s = _arr(4, 3, 3, 3), _arr(4, 1, 1)
    mod = _mod([x], op.multiply(op.nn.conv2d(x, _c(w), padding=1), _c(s)))
    out = _run(BackwardFoldScaleAxis, mod)
    expected = Function([x], op.nn.conv2d(x, _c(w * s.reshape(4, 1, 1, 1)), padding=1))
    _assert_ir(out, expected)


def test_backward_scale_on_the_left_and_out_layout():
    x = var("x", shape=X)
    w, s = _arr(4, 3, 3, 3), _arr(1, 1, 1, 4)
    conv = op.nn.conv2d(x, _c(w), out_layout="NHWC")
    mod = _mod([x], op.multiply(_c(s), conv))
    out = _run(BackwardFoldScaleAxis, mod)
    expected = op.nn.conv2d(x, _c(w * s.reshape(4, 1, 1, 1)), out_layout="NHWC")
    _assert_ir(out, Function([x], expected))


@pytest.mark.parametrize("scale_shape", [(5,), (1, 1, 1, 5)])
def test_backward_conv_nhwc_hwio(scale_shape):
    x = var("x", shape=(1, 6, 6, 3))
    w, s = _arr(3, 3, 3, 5), _arr(*scale_shape)
    conv = op.nn.conv2d(x, _c(w), data_layout="NHWC", kernel_layout="HWIO")
    mod = _mod([x], op.multiply(conv, _c(s)))
    out = _run(BackwardFoldScaleAxis, mod)
    expected = op.nn.conv2d(
        x, _c(w * s.reshape(1, 1, 1, 5)), data_layout="NHWC", kernel_layout="HWIO"
    )
    _assert_ir(out, Function([x], expected))


def test_backward_scalar_scale():
    x = var("x", shape=X)
    w = _arr(4, 3, 1, 1)
    mod = _mod([x], op.multiply(op.nn.conv2d(x, _c(w)), irpass.const(0.5)))
    out = _run(BackwardFoldScaleAxis, mod)
    _assert_ir(out, Function([x], op.nn.conv2d(x, _c(w * np.float32(0.5)))))


@pytest.mark.parametrize("groups", [3, 6])
def test_backward_grouped_conv_scales_output_channels(groups):
    x = var("x", shape=(1, 6, 5, 5))
    w, s = _arr(6, 6 // groups, 3, 3), _arr(6, 1, 1)
    conv = op.nn.conv2d(x, _c(w), groups=groups)
    out = _run(BackwardFoldScaleAxis, _mod([x], op.multiply(conv, _c(s))))
    expected = op.nn.conv2d(x, _c(w * s.reshape(6, 1, 1, 1)), groups=groups)
    _assert_ir(out, Function([x], expected))


def test_backward_through_bias_add_scales_the_bias():
    x = var("x", shape=X)
    w, b, s = _arr(4, 3, 3, 3), _arr(4), _arr(4, 1, 1)
    y = op.nn.bias_add(op.nn.conv2d(x, _c(w)), _c(b))
    out = _run(BackwardFoldScaleAxis, _mod([x], op.multiply(y, _c(s))))
    expected = op.nn.bias_add(op.nn.conv2d(x, _c(w * s.reshape(4, 1, 1, 1))), _c(b * s.reshape(4)))
    _assert_ir(out, Function([x], expected))


def test_backward_through_add_and_subtract_of_constants():
    x = var("x", shape=X)
    w, b, c, s = _arr(4, 3, 3, 3), _arr(4, 1, 1), _arr(1), _pow2(4, 1, 1, negative=True)
    y = op.subtract(_c(c), op.add(op.nn.conv2d(x, _c(w)), _c(b)))
    out = _run(BackwardFoldScaleAxis, _mod([x], op.multiply(y, _c(s))))
    conv = op.nn.conv2d(x, _c(w * s.reshape(4, 1, 1, 1)))
    # the scalar-like constant c (shape (1,)) becomes per-channel: c * s has shape (4, 1, 1)
    expected = op.subtract(_c(c * s), op.add(conv, _c(b * s)))
    _assert_ir(out, Function([x], expected))


def test_backward_through_relu_with_positive_scale():
    x = var("x", shape=X)
    w, b, s = _arr(4, 3, 3, 3), _arr(4), _arr(4, 1, 1, low=0.1, high=2.0)
    y = op.nn.relu(op.nn.bias_add(op.nn.conv2d(x, _c(w), padding=1), _c(b)))
    out = _run(BackwardFoldScaleAxis, _mod([x], op.multiply(y, _c(s))))
    conv = op.nn.conv2d(x, _c(w * s.reshape(4, 1, 1, 1)), padding=1)
    expected = op.nn.relu(op.nn.bias_add(conv, _c(b * s.reshape(4))))
    _assert_ir(out, Function([x], expected))


def test_backward_dense_scales_rows():
    x = var("x", shape=(2, 5))
    w, b, s = _arr(4, 5), _arr(4), _arr(4)
    y = op.nn.bias_add(op.nn.dense(x, _c(w), units=4), _c(b), axis=-1)
    out = _run(BackwardFoldScaleAxis, _mod([x], op.multiply(y, _c(s))))
    expected = op.nn.bias_add(op.nn.dense(x, _c(w * s[:, None]), units=4), _c(b * s), axis=-1)
    _assert_ir(out, Function([x], expected))


def test_backward_dense_with_3d_data():
    x = var("x", shape=(2, 3, 5))
    w, s = _arr(4, 5), _arr(1, 1, 4)
    out = _run(BackwardFoldScaleAxis, _mod([x], op.multiply(op.nn.dense(x, _c(w)), _c(s))))
    _assert_ir(out, Function([x], op.nn.dense(x, _c(w * s.reshape(4, 1)))))


def test_backward_non_constant_weight_gets_a_multiply():
    x = var("x", shape=X)
    w = var("w", shape=(4, 3, 3, 3))
    s = _arr(4, 1, 1)
    out = _run(BackwardFoldScaleAxis, _mod([x, w], op.multiply(op.nn.conv2d(x, w), _c(s))))
    expected = op.nn.conv2d(x, op.multiply(w, _c(s.reshape(4, 1, 1, 1))))
    _assert_ir(out, Function([x, w], expected))


def test_backward_non_constant_bias_gets_a_multiply():
    x, b = var("x", shape=X), var("b", shape=(4,))
    w, s = _arr(4, 3, 1, 1), _arr(4, 1, 1)
    y = op.nn.bias_add(op.nn.conv2d(x, _c(w)), b)
    out = _run(BackwardFoldScaleAxis, _mod([x, b], op.multiply(y, _c(s))))
    expected = op.nn.bias_add(
        op.nn.conv2d(x, _c(w * s.reshape(4, 1, 1, 1))), op.multiply(b, _c(s.reshape(4)))
    )
    _assert_ir(out, Function([x, b], expected))


def test_backward_nested_multiplies_combine():
    x = var("x", shape=X)
    w, s1, s2 = _arr(4, 3, 3, 3), _pow2(4, 1, 1), _pow2(4, 1, 1)
    y = op.multiply(op.nn.relu(op.multiply(op.nn.conv2d(x, _c(w)), _c(s1))), _c(s2))
    out = _run(BackwardFoldScaleAxis, _mod([x], y))
    expected = op.nn.relu(op.nn.conv2d(x, _c(w * (s1 * s2).reshape(4, 1, 1, 1))))
    _assert_ir(out, Function([x], expected))


def test_backward_add_of_two_conv_branches_scales_both():
    x = var("x", shape=X)
    w1, w2, s = _arr(4, 3, 3, 3), _arr(4, 3, 1, 1), _arr(4, 1, 1)
    y = op.add(op.nn.conv2d(x, _c(w1), padding=1), op.nn.conv2d(x, _c(w2)))
    out = _run(BackwardFoldScaleAxis, _mod([x], op.multiply(y, _c(s))))
    s4 = s.reshape(4, 1, 1, 1)
    expected = op.add(op.nn.conv2d(x, _c(w1 * s4), padding=1), op.nn.conv2d(x, _c(w2 * s4)))
    _assert_ir(out, Function([x], expected))


def test_backward_through_a_let_bound_var_used_once():
    x, v = var("x", shape=X), var("v")
    w, s = _arr(4, 3, 1, 1), _arr(4, 1, 1)
    mod = _mod([x], Let(v, op.nn.conv2d(x, _c(w)), op.multiply(v, _c(s))))
    out = _run(BackwardFoldScaleAxis, mod)
    expected = Let(v, op.nn.conv2d(x, _c(w * s.reshape(4, 1, 1, 1))), v)
    _assert_ir(out, Function([x], expected))


def test_backward_through_a_chain_of_let_bound_vars():
    # the A-normal form: every value bound to a var used once
    x, a, b, c = var("x", shape=X), var("a"), var("b"), var("c")
    w, s = _arr(4, 3, 1, 1), _arr(4, 1, 1)
    body = Let(a, op.nn.conv2d(x, _c(w)), Let(b, a, Let(c, op.multiply(b, _c(s)), c)))
    out = _run(BackwardFoldScaleAxis, _mod([x], body))
    conv = op.nn.conv2d(x, _c(w * s.reshape(4, 1, 1, 1)))
    _assert_ir(out, Function([x], Let(a, conv, Let(b, a, Let(c, b, c)))))


def test_backward_multiply_used_twice_still_folds():
    x = var("x", shape=X)
    w, s = _arr(4, 3, 1, 1), _arr(4, 1, 1)
    m = op.multiply(op.nn.conv2d(x, _c(w)), _c(s))
    out = _run(BackwardFoldScaleAxis, _mod([x], op.add(m, op.nn.relu(m))))
    conv = op.nn.conv2d(x, _c(w * s.reshape(4, 1, 1, 1)))
    _assert_ir(out, Function([x], op.add(conv, op.nn.relu(conv))))


# -- backward: does not fire -------------------------------------------------------------------


def test_backward_negative_scale_does_not_cross_relu():
    x = var("x", shape=X)
    s = _arr(4, 1, 1, low=0.5, high=1.0)
    s[2] = -0.5
    y = op.nn.relu(op.nn.conv2d(x, _c(_arr(4, 3, 3, 3))))
    _same(BackwardFoldScaleAxis, _mod([x], op.multiply(y, _c(s))))


def test_backward_zero_scale_does_not_cross_relu():
    x = var("x", shape=X)
    y = op.nn.relu(op.nn.conv2d(x, _c(_arr(4, 3, 3, 3))))
    _same(BackwardFoldScaleAxis, _mod([x], op.multiply(y, _c(np.zeros((4, 1, 1), "float32")))))


def test_backward_positive_scale_crosses_relu_over_a_negative_inner_multiply():
    # relu(conv * s1) * s2 == relu(conv * (s1 * s2)) for s2 > 0, whatever the sign of s1
    x = var("x", shape=X)
    w, s1, s2 = _arr(4, 3, 1, 1), _pow2(4, 1, 1, negative=True), _pow2(4, 1, 1)
    y = op.multiply(op.nn.relu(op.multiply(op.nn.conv2d(x, _c(w)), _c(s1))), _c(s2))
    out = _run(BackwardFoldScaleAxis, _mod([x], y))
    expected = op.nn.relu(op.nn.conv2d(x, _c(w * (s1 * s2).reshape(4, 1, 1, 1))))
    _assert_ir(out, Function([x], expected))


def test_backward_negative_outer_scale_leaves_only_the_inner_fold():
    x = var("x", shape=X)
    w, s1, s2 = _arr(4, 3, 1, 1), _pow2(4, 1, 1), _pow2(4, 1, 1, negative=True)
    y = op.multiply(op.nn.relu(op.multiply(op.nn.conv2d(x, _c(w)), _c(s1))), _c(s2))
    out = _run(BackwardFoldScaleAxis, _mod([x], y))
    expected = op.multiply(op.nn.relu(op.nn.conv2d(x, _c(w * s1.reshape(4, 1, 1, 1)))), _c(s2))
    _assert_ir(out, Function([x], expected))


@pytest.mark.parametrize("shape", [(4, 6, 6), (1, 4, 6, 6), (6,), (1, 1, 6, 1), (6, 1)])
def test_backward_non_per_channel_constant_does_not_fire(shape):
    x = var("x", shape=X)
    y = op.nn.conv2d(x, _c(_arr(4, 3, 3, 3)), padding=1)
    _same(BackwardFoldScaleAxis, _mod([x], op.multiply(y, _c(_arr(*shape)))))


def test_backward_scale_that_broadcasts_to_a_bigger_shape_does_not_fire():
    x = var("x", shape=(1, 5))
    y = op.nn.dense(x, _c(_arr(4, 5)))
    _same(BackwardFoldScaleAxis, _mod([x], op.multiply(y, _c(_arr(3, 1)))))
    _same(BackwardFoldScaleAxis, _mod([x], op.multiply(y, _c(_arr(2, 1, 4)))))


def test_backward_conv_used_twice_does_not_fire():
    x = var("x", shape=X)
    conv = op.nn.conv2d(x, _c(_arr(4, 3, 3, 3)))
    _same(BackwardFoldScaleAxis, _mod([x], op.add(op.multiply(conv, _c(_arr(4, 1, 1))), conv)))


def test_backward_intermediate_used_twice_does_not_fire():
    x = var("x", shape=X)
    y = op.nn.bias_add(op.nn.conv2d(x, _c(_arr(4, 3, 3, 3))), _c(_arr(4)))
    body = Tuple([op.multiply(y, _c(_arr(4, 1, 1))), y])
    _same(BackwardFoldScaleAxis, _mod([x], body))


def test_backward_let_var_used_twice_does_not_fire():
    x, v = var("x", shape=X), var("v")
    s = _c(_arr(4, 1, 1))
    body = Let(v, op.nn.conv2d(x, _c(_arr(4, 3, 1, 1))), op.add(op.multiply(v, s), v))
    _same(BackwardFoldScaleAxis, _mod([x], body))


def test_backward_bias_add_on_another_axis_does_not_fire():
    x = var("x", shape=(1, 3, 4, 4))
    y = op.nn.bias_add(op.nn.conv2d(x, _c(_arr(4, 3, 1, 1))), _c(_arr(4)), axis=2)
    _same(BackwardFoldScaleAxis, _mod([x], op.multiply(y, _c(_arr(4, 1, 1)))))


def test_backward_non_constant_scale_and_other_ops_do_not_fire():
    x, s = var("x", shape=X), var("s", shape=(4, 1, 1))
    conv = op.nn.conv2d(x, _c(_arr(4, 3, 3, 3)))
    _same(BackwardFoldScaleAxis, _mod([x, s], op.multiply(conv, s)))
    x2 = var("x", shape=(2, 3, 5))
    bmm = op.nn.batch_matmul(x2, _c(_arr(2, 4, 5)))
    _same(BackwardFoldScaleAxis, _mod([x2], op.multiply(bmm, _c(_arr(4)))))
    _same(BackwardFoldScaleAxis, _mod([x], op.multiply(op.tanh(conv), _c(_arr(4, 1, 1)))))


def test_backward_int_dtypes_do_not_fire():
    x = var("x", shape=X, dtype="int32")
    w = Constant(RNG.integers(-3, 3, size=(4, 3, 1, 1)).astype("int32"))
    s = Constant(np.full((4, 1, 1), 2, "int32"))
    _same(BackwardFoldScaleAxis, _mod([x], op.multiply(op.nn.conv2d(x, w), s)))


def test_backward_out_dtype_differing_does_not_fire():
    x = var("x", shape=X, dtype="float16")
    w = Constant(_arr(4, 3, 1, 1, dtype="float16"))
    y = op.nn.conv2d(x, w, out_dtype="float32")
    _same(BackwardFoldScaleAxis, _mod([x], op.multiply(y, _c(_arr(4, 1, 1)))))


def test_backward_nonfinite_scale_does_not_fire():
    x = var("x", shape=X)
    s = _arr(4, 1, 1)
    s[1] = np.inf
    y = op.nn.conv2d(x, _c(_arr(4, 3, 1, 1)))
    _same(BackwardFoldScaleAxis, _mod([x], op.multiply(y, _c(s))))


# -- forward: expected IR ----------------------------------------------------------------------


def test_forward_relu_positive_scale():
    x = var("x", shape=X)
    w, s = _arr(4, 3, 3, 3), _arr(3, 1, 1, low=0.1, high=2.0)
    y = op.nn.conv2d(op.nn.relu(op.multiply(x, _c(s))), _c(w), padding=1)
    out = _run(ForwardFoldScaleAxis, _mod([x], y))
    expected = op.nn.conv2d(op.nn.relu(x), _c(w * s.reshape(1, 3, 1, 1)), padding=1)
    _assert_ir(out, Function([x], expected))


def test_forward_without_relu_any_sign():
    x = var("x", shape=X)
    w, s = _arr(4, 3, 3, 3), _pow2(3, 1, 1, negative=True)
    y = op.nn.conv2d(op.multiply(_c(s), x), _c(w))
    out = _run(ForwardFoldScaleAxis, _mod([x], y))
    _assert_ir(out, Function([x], op.nn.conv2d(x, _c(w * s.reshape(1, 3, 1, 1)))))


def test_forward_nhwc_hwio():
    x = var("x", shape=(1, 5, 5, 3))
    w, s = _arr(3, 3, 3, 4), _arr(3, low=0.1, high=2.0)
    conv = op.nn.conv2d(
        op.nn.relu(op.multiply(x, _c(s))), _c(w), data_layout="NHWC", kernel_layout="HWIO"
    )
    out = _run(ForwardFoldScaleAxis, _mod([x], conv))
    expected = op.nn.conv2d(
        op.nn.relu(x), _c(w * s.reshape(1, 1, 3, 1)), data_layout="NHWC", kernel_layout="HWIO"
    )
    _assert_ir(out, Function([x], expected))


@pytest.mark.parametrize("groups", [2, 4])
def test_forward_grouped_and_depthwise(groups):
    x = var("x", shape=(1, 4, 5, 5))
    out_ch = 8
    w, s = _arr(out_ch, 4 // groups, 3, 3), _arr(4, 1, 1, low=0.1, high=2.0)
    y = op.nn.conv2d(op.nn.relu(op.multiply(x, _c(s))), _c(w), groups=groups)
    out = _run(ForwardFoldScaleAxis, _mod([x], y))
    # output channel o belongs to group o // (out_ch / groups) and reads input channels
    # group * (4 / groups) + i
    expect_w = w.copy()
    for o in range(out_ch):
        for i in range(4 // groups):
            expect_w[o, i] *= s[(o // (out_ch // groups)) * (4 // groups) + i, 0, 0]
    expected = op.nn.conv2d(op.nn.relu(x), _c(expect_w), groups=groups)
    _assert_ir(out, Function([x], expected))


def test_forward_dense_scales_columns():
    x = var("x", shape=(2, 5))
    w, s = _arr(4, 5), _arr(5)
    out = _run(ForwardFoldScaleAxis, _mod([x], op.nn.dense(op.multiply(x, _c(s)), _c(w))))
    _assert_ir(out, Function([x], op.nn.dense(x, _c(w * s[None, :]))))


def test_forward_biases_become_b_over_s():
    x = var("x", shape=X)
    w, b, c, s = _arr(4, 3, 3, 3), _arr(3), _arr(3, 1, 1), _pow2(3, 1, 1)
    y = op.subtract(_c(c), op.nn.bias_add(op.multiply(x, _c(s)), _c(b)))
    out = _run(ForwardFoldScaleAxis, _mod([x], op.nn.conv2d(op.nn.relu(y), _c(w))))
    inner = op.subtract(_c(c / s), op.nn.bias_add(x, _c(b / s.reshape(3))))
    expected = op.nn.conv2d(op.nn.relu(inner), _c(w * s.reshape(1, 3, 1, 1)))
    _assert_ir(out, Function([x], expected))


def test_forward_non_constant_weight_gets_a_multiply():
    x, w = var("x", shape=X), var("w", shape=(4, 3, 1, 1))
    s = _arr(3, 1, 1)
    out = _run(ForwardFoldScaleAxis, _mod([x, w], op.nn.conv2d(op.multiply(x, _c(s)), w)))
    expected = op.nn.conv2d(x, op.multiply(w, _c(s.reshape(1, 3, 1, 1))))
    _assert_ir(out, Function([x, w], expected))


def test_forward_through_a_let_bound_var():
    x, v = var("x", shape=X), var("v")
    w, s = _arr(4, 3, 1, 1), _arr(3, 1, 1)
    mod = _mod([x], Let(v, op.multiply(x, _c(s)), op.nn.conv2d(v, _c(w))))
    out = _run(ForwardFoldScaleAxis, mod)
    expected = Let(v, x, op.nn.conv2d(v, _c(w * s.reshape(1, 3, 1, 1))))
    _assert_ir(out, Function([x], expected))


# -- forward: does not fire --------------------------------------------------------------------


def test_forward_negative_scale_does_not_cross_relu():
    x = var("x", shape=X)
    s = _arr(3, 1, 1, low=0.5, high=1.0)
    s[0] = -1.0
    y = op.nn.conv2d(op.nn.relu(op.multiply(x, _c(s))), _c(_arr(4, 3, 3, 3)))
    _same(ForwardFoldScaleAxis, _mod([x], y))


def test_forward_zero_scale_with_a_bias_does_not_fire():
    x = var("x", shape=X)
    s = _arr(3, 1, 1)
    s[1] = 0.0
    y = op.nn.conv2d(op.add(op.multiply(x, _c(s)), _c(_arr(3, 1, 1))), _c(_arr(4, 3, 3, 3)))
    _same(ForwardFoldScaleAxis, _mod([x], y))


@pytest.mark.parametrize("bias", ["constant", "parameter"])
def test_forward_subnormal_scale_with_a_bias_does_not_fire(bias):
    # b / s would overflow to inf (hypothesis found 0.47 / 1e-39 on a dense chain)
    x = var("x", shape=(2, 4))
    b = var("b", shape=(4,)) if bias == "parameter" else _c(_arr(4))
    params = [x, b] if bias == "parameter" else [x]

    def program(s):
        return _mod(params, op.nn.dense(op.add(op.multiply(x, _c(s)), b), _c(_arr(3, 4))))

    s = np.array([1.0, 0.5, 2.0, 1e-39], "float32")
    _same(ForwardFoldScaleAxis, program(s))
    # the control: the smallest normal scale folds
    s[3] = np.finfo("float32").tiny
    assert "multiply" not in _ops(_run(ForwardFoldScaleAxis, program(s)))


@pytest.mark.parametrize("shape", [(3, 6, 6), (6,), (1, 3, 6, 1)])
def test_forward_non_per_channel_does_not_fire(shape):
    x = var("x", shape=X)
    y = op.nn.conv2d(op.multiply(x, _c(_arr(*shape))), _c(_arr(4, 3, 3, 3)))
    _same(ForwardFoldScaleAxis, _mod([x], y))


def test_forward_multiply_used_twice_does_not_fire():
    x = var("x", shape=X)
    m = op.multiply(x, _c(_arr(3, 1, 1)))
    y = op.nn.conv2d(m, _c(_arr(3, 3, 1, 1)))
    _same(ForwardFoldScaleAxis, _mod([x], op.add(y, m)))


def test_forward_relu_used_twice_does_not_fire():
    x = var("x", shape=X)
    r = op.nn.relu(op.multiply(x, _c(_arr(3, 1, 1, low=0.1, high=1.0))))
    y = op.nn.conv2d(r, _c(_arr(3, 3, 1, 1)))
    _same(ForwardFoldScaleAxis, _mod([x], op.add(y, r)))


# -- biases that are not constants, values with several users, leaky_relu ----------------------


def _pos(*shape):
    """A positive scale, as TVM's tests draw them."""
    return _arr(*shape, low=0.5, high=1.0)


def test_forward_parameter_bias_becomes_a_divide():
    x, b = var("x", shape=X), var("b", shape=(3, 1, 1))
    w, s = _arr(4, 3, 3, 3), _pos(3, 1, 1)
    y = op.nn.conv2d(op.add(op.nn.relu(op.multiply(x, _c(s))), b), _c(w), padding=1)
    out = _run(ForwardFoldScaleAxis, _mod([x, b], y))
    inner = op.add(op.nn.relu(x), op.divide(b, _c(s)))
    expected = op.nn.conv2d(inner, _c(w * s.reshape(1, 3, 1, 1)), padding=1)
    _assert_ir(out, Function([x, b], expected))


def test_forward_parameter_bias_of_bias_add_and_on_the_left_of_subtract():
    x, b, c = var("x", shape=X), var("b", shape=(3,)), var("c", shape=())
    w, s = _arr(4, 3, 1, 1), _pow2(3, 1, 1, negative=True)
    y = op.subtract(c, op.nn.bias_add(op.multiply(x, _c(s)), b))
    out = _run(ForwardFoldScaleAxis, _mod([x, b, c], op.nn.conv2d(y, _c(w))))
    # a scalar bias becomes one value per channel: c / s has shape (3, 1, 1)
    inner = op.subtract(op.divide(c, _c(s)), op.nn.bias_add(x, op.divide(b, _c(s.reshape(3)))))
    expected = op.nn.conv2d(inner, _c(w * s.reshape(1, 3, 1, 1)))
    _assert_ir(out, Function([x, b, c], expected))


def test_forward_bias_expression_nhwc():
    # expand_dims of a parameter: any expression varying along the channel axis only
    x, b = var("x", shape=(1, 5, 5, 3)), var("b", shape=(3,))
    w, s = _arr(1, 1, 3, 4), _pos(3)
    bias = op.expand_dims(b, axis=0, num_newaxis=3)  # (1, 1, 1, 3)
    y = op.add(op.nn.relu(op.multiply(x, _c(s))), bias)
    conv = op.nn.conv2d(y, _c(w), data_layout="NHWC", kernel_layout="HWIO")
    out = _run(ForwardFoldScaleAxis, _mod([x, b], conv))
    inner = op.add(op.nn.relu(x), op.divide(op.expand_dims(b, axis=0, num_newaxis=3), _c(s)))
    expected = op.nn.conv2d(
        inner, _c(w * s.reshape(1, 1, 3, 1)), data_layout="NHWC", kernel_layout="HWIO"
    )
    _assert_ir(out, Function([x, b], expected))


@pytest.mark.parametrize("shape", [(1, 3, 6, 6), (6,), (3, 6, 1)])
def test_forward_full_tensor_parameter_bias_does_not_fire(shape):
    # dividing a tensor that is not per-channel would cost a full-size divide at run time
    x, w = var("x", shape=X), _c(_arr(4, 3, 1, 1))
    s = _c(_pos(3, 1, 1))
    b = var("b", shape=shape)
    _same(ForwardFoldScaleAxis, _mod([x, b], op.nn.conv2d(op.add(op.multiply(x, s), b), w)))
    # the control: a per-channel bias folds
    c = var("b", shape=(3, 1, 1))
    mod = _mod([x, c], op.nn.conv2d(op.add(op.multiply(x, s), c), w))
    assert "multiply" not in _ops(_run(ForwardFoldScaleAxis, mod))


def test_forward_zero_scale_with_a_parameter_bias_does_not_fire():
    x, b = var("x", shape=X), var("b", shape=(3, 1, 1))
    s = _pos(3, 1, 1)
    w = _c(_arr(4, 3, 1, 1))
    mod = _mod([x, b], op.nn.conv2d(op.add(op.multiply(x, _c(s)), b), w))
    assert "multiply" not in _ops(_run(ForwardFoldScaleAxis, mod))
    s[2] = 0.0
    _same(ForwardFoldScaleAxis, _mod([x, b], op.nn.conv2d(op.add(op.multiply(x, _c(s)), b), w)))


def test_backward_parameter_bias_gets_a_multiply():
    x, b = var("x", shape=X), var("b", shape=(4, 1, 1))
    w, s = _arr(4, 3, 3, 3), _pow2(4, 1, 1, negative=True)
    y = op.subtract(b, op.nn.conv2d(x, _c(w), padding=1))
    out = _run(BackwardFoldScaleAxis, _mod([x, b], op.multiply(y, _c(s))))
    expected = op.subtract(
        op.multiply(b, _c(s)), op.nn.conv2d(x, _c(w * s.reshape(4, 1, 1, 1)), padding=1)
    )
    _assert_ir(out, Function([x, b], expected))


def test_backward_full_tensor_parameter_bias_does_not_fire():
    x, b = var("x", shape=X), var("b", shape=(1, 4, 6, 6))
    w, s = _arr(4, 3, 3, 3), _pos(4, 1, 1)
    y = op.add(op.nn.conv2d(x, _c(w), padding=1), b)
    _same(BackwardFoldScaleAxis, _mod([x, b], op.multiply(y, _c(s))))
    # the control: a per-channel one folds
    c = var("b", shape=(1, 4, 1, 1))
    y = op.add(op.nn.conv2d(x, _c(w), padding=1), c)
    out = _run(BackwardFoldScaleAxis, _mod([x, c], op.multiply(y, _c(s))))
    conv = op.nn.conv2d(x, _c(w * s.reshape(4, 1, 1, 1)), padding=1)
    _assert_ir(out, Function([x, c], op.add(conv, op.multiply(c, _c(s)))))


def test_backward_and_forward_through_leaky_relu():
    x = var("x", shape=X)
    w1, w2, s1, s2 = _arr(4, 3, 1, 1), _arr(2, 4, 1, 1), _pos(4, 1, 1), _pos(4, 1, 1)
    y = op.multiply(op.nn.leaky_relu(op.nn.conv2d(x, _c(w1)), alpha=0.1), _c(s1))
    out = _run(BackwardFoldScaleAxis, _mod([x], y))
    expected = op.nn.leaky_relu(op.nn.conv2d(x, _c(w1 * s1.reshape(4, 1, 1, 1))), alpha=0.1)
    _assert_ir(out, Function([x], expected))
    x4 = var("x", shape=(1, 4, 6, 6))
    y = op.nn.conv2d(op.nn.leaky_relu(op.multiply(x4, _c(s2)), alpha=0.1), _c(w2))
    out = _run(ForwardFoldScaleAxis, _mod([x4], y))
    expected = op.nn.conv2d(op.nn.leaky_relu(x4, alpha=0.1), _c(w2 * s2.reshape(1, 4, 1, 1)))
    _assert_ir(out, Function([x4], expected))
    # not with a negative entry
    s2[1] = -0.5
    y = op.nn.conv2d(op.nn.leaky_relu(op.multiply(x4, _c(s2)), alpha=0.1), _c(w2))
    _same(ForwardFoldScaleAxis, _mod([x4], y))


def test_forward_value_read_by_two_convs_folds_into_both_unless_also_reshaped():
    x = var("x", shape=(1, 3, 1, 1))
    w1, w2, wd, s = _arr(4, 3, 1, 1), _arr(5, 3, 1, 1), _arr(2, 1), _pos(3, 1, 1)
    r = op.nn.relu(op.multiply(x, _c(s)))
    # the dense reads r through a reshape: not a scale user, so no fold at all
    flat = op.nn.dense(op.reshape(r, newshape=(3, 1)), _c(wd))
    _same(ForwardFoldScaleAxis, _mod([x], Tuple([op.nn.conv2d(r, _c(w1)), flat])))
    body = Tuple([op.nn.conv2d(r, _c(w1)), op.nn.conv2d(r, _c(w2))])
    out = _run(ForwardFoldScaleAxis, _mod([x], body))
    s4 = s.reshape(1, 3, 1, 1)
    r2 = op.nn.relu(x)
    expected = Tuple([op.nn.conv2d(r2, _c(w1 * s4)), op.nn.conv2d(r2, _c(w2 * s4))])
    _assert_ir(out, Function([x], expected))


def test_forward_users_asking_for_different_axes_do_not_fire():
    # NCHW reads channel axis 1, NHWC axis 3 of the same (1, 4, 4, 4) value
    x = var("x", shape=(1, 4, 4, 4))
    w1, w2, s = _arr(2, 4, 1, 1), _arr(1, 1, 4, 2), _pos(4, 1, 1)
    m = op.multiply(x, _c(s))
    a = op.nn.conv2d(m, _c(w1))
    b = op.nn.conv2d(m, _c(w2), data_layout="NHWC", kernel_layout="HWIO")
    _same(ForwardFoldScaleAxis, _mod([x], Tuple([a, b])))
    # the control: two NCHW readers
    out = _run(ForwardFoldScaleAxis, _mod([x], Tuple([a, op.nn.conv2d(m, _c(w1))])))
    folded = op.nn.conv2d(x, _c(w1 * s.reshape(1, 4, 1, 1)))
    _assert_ir(out, Function([x], Tuple([folded, folded])))


def test_forward_one_path_through_relu_needs_a_positive_scale_on_both():
    x = var("x", shape=X)
    w1, w2 = _arr(4, 3, 1, 1), _arr(2, 3, 1, 1)
    for s, folds in ((_pos(3, 1, 1), True), (-_pos(3, 1, 1), False)):
        m = op.multiply(x, _c(s))
        body = op.add(op.nn.conv2d(m, _c(w1)), op.nn.conv2d(op.nn.relu(m), _c(w1)))
        mod = _mod([x], Tuple([body, op.nn.conv2d(m, _c(w2))]))
        if not folds:
            _same(ForwardFoldScaleAxis, mod)
            continue
        out = _run(ForwardFoldScaleAxis, mod)
        s4 = s.reshape(1, 3, 1, 1)
        expected = Tuple(
            [
                op.add(op.nn.conv2d(x, _c(w1 * s4)), op.nn.conv2d(op.nn.relu(x), _c(w1 * s4))),
                op.nn.conv2d(x, _c(w2 * s4)),
            ]
        )
        _assert_ir(out, Function([x], expected))


def test_forward_a_normal_form_var_read_twice_and_bound_to_another_var():
    x, b = var("x", shape=X), var("b", shape=(3, 1, 1))
    m, y, z = var("m"), var("y"), var("z")
    w1, w2, s = _arr(4, 3, 1, 1), _arr(2, 3, 1, 1), _pos(3, 1, 1)
    body = Let(
        m,
        op.multiply(x, _c(s)),
        Let(y, op.add(m, b), Let(z, y, Tuple([op.nn.conv2d(z, _c(w1)), op.nn.conv2d(z, _c(w2))]))),
    )
    out = _run(ForwardFoldScaleAxis, _mod([x, b], body))
    s4 = s.reshape(1, 3, 1, 1)
    convs = Tuple([op.nn.conv2d(z, _c(w1 * s4)), op.nn.conv2d(z, _c(w2 * s4))])
    expected = Let(m, x, Let(y, op.add(m, op.divide(b, _c(s))), Let(z, y, convs)))
    _assert_ir(out, Function([x, b], expected))


def test_forward_var_read_by_two_convs_and_returned_does_not_fire():
    x, m = var("x", shape=X), var("m")
    w, s = _arr(4, 3, 1, 1), _pos(3, 1, 1)
    convs = [op.nn.conv2d(m, _c(w)), op.nn.conv2d(m, _c(w))]
    _same(ForwardFoldScaleAxis, _mod([x], Let(m, op.multiply(x, _c(s)), Tuple([*convs, m]))))
    # the control: read by the two convolutions only
    out = _run(ForwardFoldScaleAxis, _mod([x], Let(m, op.multiply(x, _c(s)), Tuple(convs))))
    folded = op.nn.conv2d(m, _c(w * s.reshape(1, 3, 1, 1)))
    _assert_ir(out, Function([x], Let(m, x, Tuple([folded, folded]))))


# -- A-normal form: let-bound constants ----------------------------------------------------------
#
# ToANormalForm binds every constant to a var of its own. Both directions read a scale, a bias
# or a weight through such a var (and chains `let %d = %c`); a new weight or bias goes into the
# binding when the vars on the way are used once each, else into the use (the var keeps its
# value for its other users), and a binding whose every use went away is dropped.


def _lets(bindings, body):
    """``let v1 = e1; let v2 = e2; ...; body`` from ``[(v1, e1), (v2, e2), ...]``."""
    for v, value in reversed(bindings):
        body = Let(v, value, body)
    return body


def test_a_normal_form_backward_conv_with_let_bound_weight_bias_and_scale():
    x = var("x", shape=X)
    wv, cv, bv, av, sv, mv = (var(n) for n in ("w", "c", "b", "a", "s", "m"))
    w, b, s = _arr(4, 3, 3, 3), _arr(4), _arr(4, 1, 1)
    body = _lets(
        [
            (wv, _c(w)),
            (cv, op.nn.conv2d(x, wv, padding=1)),
            (bv, _c(b)),
            (av, op.nn.bias_add(cv, bv)),
            (sv, _c(s)),
            (mv, op.multiply(av, sv)),
        ],
        mv,
    )
    out = _run(BackwardFoldScaleAxis, _mod([x], body))
    expected = _lets(
        [
            (wv, _c(w * s.reshape(4, 1, 1, 1))),
            (cv, op.nn.conv2d(x, wv, padding=1)),
            (bv, _c(b * s.reshape(4))),
            (av, op.nn.bias_add(cv, bv)),
            (mv, av),  # the multiply is gone, and so is the binding of its scale
        ],
        mv,
    )
    _assert_ir(out, Function([x], expected))


def test_a_normal_form_forward_conv_with_let_bound_scale_bias_and_weight():
    x = var("x", shape=X)
    sv, mv, rv, bv, av, wv, cv = (var(n) for n in ("s", "m", "r", "b", "a", "w", "c"))
    s, b, w = _pos(3, 1, 1), _arr(3, 1, 1), _arr(4, 3, 3, 3)
    body = _lets(
        [
            (sv, _c(s)),
            (mv, op.multiply(sv, x)),  # the scale on the left
            (rv, op.nn.relu(mv)),
            (bv, _c(b)),
            (av, op.add(rv, bv)),
            (wv, _c(w)),
            (cv, op.nn.conv2d(av, wv, padding=1)),
        ],
        cv,
    )
    out = _run(ForwardFoldScaleAxis, _mod([x], body))
    expected = _lets(
        [
            (mv, x),
            (rv, op.nn.relu(mv)),
            (bv, _c(b / s)),
            (av, op.add(rv, bv)),
            (wv, _c(w * s.reshape(1, 3, 1, 1))),
            (cv, op.nn.conv2d(av, wv, padding=1)),
        ],
        cv,
    )
    _assert_ir(out, Function([x], expected))


def test_a_normal_form_backward_dense_with_let_bound_weight_bias_and_scale():
    x = var("x", shape=(2, 5))
    wv, dv, bv, av, sv, mv = (var(n) for n in ("w", "d", "b", "a", "s", "m"))
    w, b, s = _arr(4, 5), _arr(4), _arr(4)
    body = _lets(
        [
            (wv, _c(w)),
            (dv, op.nn.dense(x, wv)),
            (bv, _c(b)),
            (av, op.add(dv, bv)),
            (sv, _c(s)),
            (mv, op.multiply(av, sv)),
        ],
        mv,
    )
    out = _run(BackwardFoldScaleAxis, _mod([x], body))
    expected = _lets(
        [
            (wv, _c(w * s[:, None])),
            (dv, op.nn.dense(x, wv)),
            (bv, _c(b * s)),
            (av, op.add(dv, bv)),
            (mv, av),
        ],
        mv,
    )
    _assert_ir(out, Function([x], expected))


def test_a_normal_form_forward_dense_through_chains_of_let_bound_vars():
    # let %d = %c: the scale and the weight are each two vars away from their constant
    x = var("x", shape=(2, 5))
    s1, s2, mv, w1, w2, dv = (var(n) for n in ("s1", "s2", "m", "w1", "w2", "d"))
    s, w = _arr(5), _arr(4, 5)
    body = _lets(
        [
            (s1, _c(s)),
            (s2, s1),
            (mv, op.multiply(x, s2)),
            (w1, _c(w)),
            (w2, w1),
            (dv, op.nn.dense(mv, w2)),
        ],
        dv,
    )
    out = _run(ForwardFoldScaleAxis, _mod([x], body))
    # both scale bindings lose their only use; the weight's chain keeps its form
    expected = _lets([(mv, x), (w1, _c(w * s[None, :])), (w2, w1), (dv, op.nn.dense(mv, w2))], dv)
    _assert_ir(out, Function([x], expected))


def test_a_normal_form_shared_weight_only_one_user_folds():
    # %w is read by two convolutions and only the first has a scale after it: the first gets
    # the scaled weight at its use, the second still reads the original through %w
    x = var("x", shape=X)
    wv, c1, c2, sv, mv = (var(n) for n in ("w", "c1", "c2", "s", "m"))
    w, s = _arr(4, 3, 1, 1), _arr(4, 1, 1)
    bindings = [
        (wv, _c(w)),
        (c1, op.nn.conv2d(x, wv)),
        (c2, op.nn.conv2d(x, wv)),
        (sv, _c(s)),
        (mv, op.multiply(c1, sv)),
    ]
    out = _run(BackwardFoldScaleAxis, _mod([x], _lets(bindings, Tuple([mv, c2]))))
    expected = _lets(
        [
            (wv, _c(w)),
            (c1, op.nn.conv2d(x, _c(w * s.reshape(4, 1, 1, 1)))),
            (c2, op.nn.conv2d(x, wv)),
            (mv, c1),
        ],
        Tuple([mv, c2]),
    )
    _assert_ir(out, Function([x], expected))


def test_a_normal_form_shared_weight_through_a_chain_gets_its_value_in_the_chain():
    # conv2d(x, %v) folds, %v = %w is used once, %w also feeds a conv that does not fold:
    # %v is bound to the new weight, %w keeps the old one
    x = var("x", shape=X)
    wv, vv, c1, c2, sv, mv = (var(n) for n in ("w", "v", "c1", "c2", "s", "m"))
    w, s = _arr(4, 3, 1, 1), _arr(4, 1, 1)
    bindings = [
        (wv, _c(w)),
        (vv, wv),
        (c1, op.nn.conv2d(x, vv)),
        (c2, op.nn.conv2d(x, wv)),
        (sv, _c(s)),
        (mv, op.multiply(c1, sv)),
    ]
    out = _run(BackwardFoldScaleAxis, _mod([x], _lets(bindings, Tuple([mv, c2]))))
    expected = _lets(
        [
            (wv, _c(w)),
            (vv, _c(w * s.reshape(4, 1, 1, 1))),
            (c1, op.nn.conv2d(x, vv)),
            (c2, op.nn.conv2d(x, wv)),
            (mv, c1),
        ],
        Tuple([mv, c2]),
    )
    _assert_ir(out, Function([x], expected))


def test_a_normal_form_shared_weight_both_users_fold_and_the_binding_goes():
    x = var("x", shape=(2, 5))
    wv, d1, d2, s1v, s2v, m1, m2 = (var(n) for n in ("w", "d1", "d2", "s1", "s2", "m1", "m2"))
    w, s1, s2 = _arr(4, 5), _arr(4), _arr(4)
    bindings = [
        (wv, _c(w)),
        (d1, op.nn.dense(x, wv)),
        (d2, op.nn.dense(x, wv)),
        (s1v, _c(s1)),
        (m1, op.multiply(d1, s1v)),
        (s2v, _c(s2)),
        (m2, op.multiply(s2v, d2)),
    ]
    out = _run(BackwardFoldScaleAxis, _mod([x], _lets(bindings, Tuple([m1, m2]))))
    expected = _lets(
        [
            (d1, op.nn.dense(x, _c(w * s1[:, None]))),
            (d2, op.nn.dense(x, _c(w * s2[:, None]))),
            (m1, d1),
            (m2, d2),
        ],
        Tuple([m1, m2]),
    )
    _assert_ir(out, Function([x], expected))


def test_a_normal_form_shared_scale_and_bias_keep_their_bindings():
    # backward: the scale is also added after the multiply; forward: the bias is also returned
    x = var("x", shape=X)
    wv, cv, sv, mv = (var(n) for n in ("w", "c", "s", "m"))
    w, s = _arr(4, 3, 1, 1), _arr(4, 1, 1)
    bindings = [(wv, _c(w)), (cv, op.nn.conv2d(x, wv)), (sv, _c(s)), (mv, op.multiply(cv, sv))]
    out = _run(BackwardFoldScaleAxis, _mod([x], _lets(bindings, op.add(mv, sv))))
    expected = _lets(
        [(wv, _c(w * s.reshape(4, 1, 1, 1))), (cv, op.nn.conv2d(x, wv)), (sv, _c(s)), (mv, cv)],
        op.add(mv, sv),
    )
    _assert_ir(out, Function([x], expected))

    sv, mv, bv, av, wv, cv = (var(n) for n in ("s", "m", "b", "a", "w", "c"))
    s, b, w = _arr(3, 1, 1), _arr(3, 1, 1), _arr(4, 3, 1, 1)
    bindings = [
        (sv, _c(s)),
        (mv, op.multiply(x, sv)),
        (bv, _c(b)),
        (av, op.subtract(mv, bv)),
        (wv, _c(w)),
        (cv, op.nn.conv2d(av, wv)),
    ]
    out = _run(ForwardFoldScaleAxis, _mod([x], _lets(bindings, Tuple([cv, bv]))))
    expected = _lets(
        [
            (mv, x),
            (bv, _c(b)),
            (av, op.subtract(mv, _c(b / s))),
            (wv, _c(w * s.reshape(1, 3, 1, 1))),
            (cv, op.nn.conv2d(av, wv)),
        ],
        Tuple([cv, bv]),
    )
    _assert_ir(out, Function([x], expected))


def test_a_normal_form_let_bound_scale_that_cannot_fold_leaves_the_module_alone():
    # a let-bound scale is read, but the rules still hold: -s cannot cross the relu
    x = var("x", shape=X)
    wv, cv, rv, sv, mv = (var(n) for n in ("w", "c", "r", "s", "m"))
    bindings = [
        (wv, _c(_arr(4, 3, 1, 1))),
        (cv, op.nn.conv2d(x, wv)),
        (rv, op.nn.relu(cv)),
        (sv, _c(-_pos(4, 1, 1))),
        (mv, op.multiply(rv, sv)),
    ]
    _same(BackwardFoldScaleAxis, _mod([x], _lets(bindings, mv)))
    # the control: a positive scale crosses the relu
    bindings[3] = (sv, _c(_pos(4, 1, 1)))
    out = _run(BackwardFoldScaleAxis, _mod([x], _lets(bindings, mv)))
    assert "multiply" not in _ops(out)


def test_a_normal_form_matches_the_graph_form_result_on_models():
    # ToANormalForm then FoldScaleAxis computes the weights FoldScaleAxis computes on the
    # graph form: the same constants, in bindings
    def constants(expr):
        found = []
        post_order_visit(expr, lambda n: found.append(n.data) if type(n) is Constant else None)
        return sorted((a.shape, a.tobytes()) for a in found)

    for name in ("resnet", "mobilenet"):
        mod = models.MODELS[name]()
        graph = check_semantics([get_pass("SimplifyInference"), FoldScaleAxis()], mod)
        anf = check_semantics(
            [get_pass("SimplifyInference"), get_pass("ToANormalForm"), FoldScaleAxis()], mod
        )
        assert constants(anf["main"]) == constants(graph["main"]), name


# -- TVM's tests/python/relay/test_pass_fold_scale_axis.py ---------------------------------------
#
# The cases of TVM's test file in irpass's form: weights and biases are parameters, as there,
# and a folded scale is a constant factor shaped to broadcast where TVM's expected programs
# squeeze / expand_dims the scale. irpass has no blocked layouts (NCHW4c) and no conv3d, so
# those variants are left out.


def test_tvm_fold_fwd_simple():
    x, w, b = (
        var("x", shape=(2, 4, 10, 10)),
        var("w", shape=(2, 4, 3, 3)),
        var("b", shape=(4, 1, 1)),
    )
    s = _pos(4, 1, 1)
    y = op.add(op.nn.relu(op.multiply(x, _c(s))), b)
    before = op.nn.conv2d(y, w, channels=2, kernel_size=(3, 3), padding=(1, 1))
    out = _run(ForwardFoldScaleAxis, _mod([x, w, b], before))
    y = op.add(op.nn.relu(x), op.divide(b, _c(s)))
    w2 = op.multiply(w, _c(s.reshape(1, 4, 1, 1)))
    expected = op.nn.conv2d(y, w2, channels=2, kernel_size=(3, 3), padding=(1, 1))
    _assert_ir(out, Function([x, w, b], expected))


def test_tvm_fold_fwd_dual_path():
    # depthwise NHWC convolutions both reading relu(s * x) - b
    x, w, b = var("x", shape=(2, 4, 10, 3)), var("w", shape=(3, 3, 1, 3)), var("b", shape=(3,))
    s = _pos(3)
    kw = dict(
        channels=3,
        kernel_size=(3, 3),
        data_layout="NHWC",
        kernel_layout="HWIO",
        groups=3,
        padding=(1, 1),
    )
    y = op.subtract(op.nn.relu(op.multiply(_c(s), x)), b)
    out = _run(
        ForwardFoldScaleAxis,
        _mod([x, w, b], op.add(op.nn.conv2d(y, w, **kw), op.nn.conv2d(y, w, **kw))),
    )
    y = op.subtract(op.nn.relu(x), op.divide(b, _c(s)))
    # depthwise: output channel k reads input channel k, the kernel's O axis
    w1, w2 = op.multiply(w, _c(s.reshape(1, 1, 1, 3))), op.multiply(w, _c(s.reshape(1, 1, 1, 3)))
    expected = op.add(op.nn.conv2d(y, w1, **kw), op.nn.conv2d(y, w2, **kw))
    _assert_ir(out, Function([x, w, b], expected))


def test_tvm_fold_fwd_fail():
    # the scaled value is also added to the convolution's output: nothing may change
    x, w = var("x", shape=(2, 11, 10, 4)), var("w", shape=(3, 3, 4, 4))
    kw = dict(
        channels=4, kernel_size=(3, 3), data_layout="NHWC", kernel_layout="HWIO", padding=(1, 1)
    )
    s = _pos(4)
    m = op.multiply(x, _c(s))
    y = op.nn.conv2d(op.nn.leaky_relu(m, alpha=0.1), w, **kw)
    _same(ForwardFoldScaleAxis, _mod([x, w], op.add(y, m)))
    # the control: without the second user the scale goes through the leaky relu
    out = _run(ForwardFoldScaleAxis, _mod([x, w], y))
    w2 = op.multiply(w, _c(s.reshape(1, 1, 4, 1)))  # HWIO: the input channels
    _assert_ir(out, Function([x, w], op.nn.conv2d(op.nn.leaky_relu(x, alpha=0.1), w2, **kw)))


def test_tvm_fold_fwd_relu_fail():
    x, w = var("x", shape=(2, 11, 10, 4)), var("w", shape=(3, 3, 4, 4))
    kw = dict(
        channels=4, kernel_size=(3, 3), data_layout="NHWC", kernel_layout="HWIO", padding=(1, 1)
    )
    scale_var = var("s", shape=(4,))
    for scale, params in ((scale_var, [x, w, scale_var]), (_c(-_pos(4)), [x, w])):
        y = op.nn.conv2d(op.nn.relu(op.multiply(x, scale)), w, **kw)
        _same(ForwardFoldScaleAxis, _mod(params, y))  # not a constant, or not positive


def test_tvm_fold_fwd_let_fail():
    x, w, b, v = (
        var("x", shape=(2, 11, 10, 4)),
        var("w", shape=(3, 3, 4, 4)),
        var("b", shape=(4,)),
        var("v"),
    )
    kw = dict(
        channels=4, kernel_size=(3, 3), data_layout="NHWC", kernel_layout="HWIO", padding=(1, 1)
    )
    s = _pos(4)
    y = op.add(op.nn.relu(op.multiply(x, _c(s))), b)
    conv = op.nn.conv2d(v, w, **kw)
    # the let's value is also read by the add: it must keep its meaning
    _same(ForwardFoldScaleAxis, _mod([x, w, b], Let(v, y, op.add(conv, y))))
    # the control: its only user is the let
    out = _run(ForwardFoldScaleAxis, _mod([x, w, b], Let(v, y, conv)))
    y2 = op.add(op.nn.relu(x), op.divide(b, _c(s)))
    expected = Let(v, y2, op.nn.conv2d(v, op.multiply(w, _c(s.reshape(1, 1, 4, 1))), **kw))
    _assert_ir(out, Function([x, w, b], expected))


def test_tvm_fold_fwd_negative_scale():
    x, w = var("x", shape=(2, 4, 10, 10)), var("w", shape=(4, 4, 3, 3))
    s = -_pos(4, 1, 1)
    kw = dict(channels=4, kernel_size=(3, 3), padding=(1, 1))
    out = _run(ForwardFoldScaleAxis, _mod([x, w], op.nn.conv2d(op.multiply(x, _c(s)), w, **kw)))
    expected = op.nn.conv2d(x, op.multiply(w, _c(s.reshape(1, 4, 1, 1))), **kw)
    _assert_ir(out, Function([x, w], expected))


@pytest.mark.parametrize(("data_shape", "weight_shape"), [((2, 4), (3, 4)), ((3, 5), (4, 5))])
def test_tvm_fold_fwd_dense(data_shape, weight_shape):
    x, w = var("x", shape=data_shape), var("w", shape=weight_shape)
    b = var("b", shape=(data_shape[1],))
    s = _pos(data_shape[1])
    before = op.nn.dense(op.add(op.nn.relu(op.multiply(x, _c(s))), b), w)
    out = _run(ForwardFoldScaleAxis, _mod([x, w, b], before))
    y = op.add(op.nn.relu(x), op.divide(b, _c(s)))
    expected = op.nn.dense(y, op.multiply(w, _c(s[None, :])))
    _assert_ir(out, Function([x, w, b], expected))


def test_tvm_fold_bwd_simple():
    x, w, b = var("x", shape=(2, 4, 10, 10)), var("w", shape=(8, 4, 3, 3)), var("b", shape=(8,))
    s = _pos(8, 1, 1)
    kw = dict(channels=8, kernel_size=(3, 3), padding=(1, 1))
    y = op.add(op.nn.conv2d(x, w, **kw), op.expand_dims(b, axis=1, num_newaxis=2))
    out = _run(BackwardFoldScaleAxis, _mod([x, w, b], op.multiply(op.nn.relu(y), _c(s))))
    conv = op.nn.conv2d(x, op.multiply(w, _c(s.reshape(8, 1, 1, 1))), **kw)
    bias = op.multiply(op.expand_dims(b, axis=1, num_newaxis=2), _c(s))
    _assert_ir(out, Function([x, w, b], op.nn.relu(op.add(conv, bias))))


def test_tvm_fold_bwd_dual_path():
    x, w = var("x", shape=(2, 4, 10, 10)), var("w", shape=(8, 4, 3, 3))
    s = _pos(8, 1, 1)
    kw = dict(channels=8, kernel_size=(3, 3), padding=(1, 1))
    y = op.add(op.nn.relu(op.nn.conv2d(x, w, **kw)), op.nn.relu(op.nn.conv2d(x, w, **kw)))
    out = _run(BackwardFoldScaleAxis, _mod([x, w], op.multiply(y, _c(s))))
    s4 = s.reshape(8, 1, 1, 1)
    y1 = op.nn.relu(op.nn.conv2d(x, op.multiply(w, _c(s4)), **kw))
    y2 = op.nn.relu(op.nn.conv2d(x, op.multiply(w, _c(s4)), **kw))
    _assert_ir(out, Function([x, w], op.add(y1, y2)))


def test_tvm_fold_bwd_simple_constant():
    # weights and bias bound to constants, the scale a scalar; the whole FoldScaleAxis
    x = var("data", shape=(1, 3, 20, 20))
    w, b = _arr(16, 3, 3, 3), _arr(16, 1, 1)
    kw = dict(kernel_size=(3, 3), channels=16, padding=(1, 1))
    y = op.nn.relu(op.add(op.nn.conv2d(x, _c(w), **kw), _c(b)))
    mod = _mod([x], op.multiply(y, irpass.const(2.0)))
    out = check_semantics(Sequential([get_pass("InferType"), FoldScaleAxis()]), mod)["main"]
    two = np.float32(2.0)
    expected = op.nn.relu(op.add(op.nn.conv2d(x, _c(w * two), **kw), _c(b * two)))
    _assert_ir(out, Function([x], expected))


def test_tvm_fold_bwd_dual_consumer():
    x, w = var("x", shape=(2, 4, 10, 10)), var("w", shape=(4, 4, 3, 3))
    s = _pos(4, 1, 1)
    kw = dict(channels=4, kernel_size=(3, 3), padding=(1, 1))

    def block(data, weight):
        return op.nn.relu(op.multiply(op.nn.conv2d(data, weight, **kw), _c(s)))

    y0 = block(x, w)
    out = _run(BackwardFoldScaleAxis, _mod([x, w], op.add(block(y0, w), block(y0, w))))

    def folded(data):
        return op.nn.relu(op.nn.conv2d(data, op.multiply(w, _c(s.reshape(4, 1, 1, 1))), **kw))

    y0 = folded(x)
    _assert_ir(out, Function([x, w], op.add(folded(y0), folded(y0))))


def test_tvm_fold_bwd_fail():
    x, w = var("x", shape=(4, 4, 4, 4)), var("w", shape=(4, 4, 3, 3))
    s = _c(_pos(4, 1, 1))
    kw = dict(channels=4, kernel_size=(3, 3), padding=(1, 1))
    # the two branches have their channels on different axes (irpass has NHWC, not CNHW)
    y1 = op.nn.relu(op.nn.conv2d(x, w, **kw))
    y2 = op.nn.relu(op.nn.conv2d(x, w, out_layout="NHWC", **kw))
    _same(BackwardFoldScaleAxis, _mod([x, w], op.multiply(op.add(y1, y2), s)))
    # the convolution is also read by the relu
    y1 = op.nn.conv2d(x, w, **kw)
    _same(BackwardFoldScaleAxis, _mod([x, w], op.add(op.multiply(y1, s), op.nn.relu(y1))))


def test_tvm_fold_bwd_relu_fail():
    x, w = var("x", shape=(4, 4, 10, 10)), var("w", shape=(4, 4, 3, 3))
    kw = dict(channels=4, kernel_size=(3, 3), padding=(1, 1))
    scale_var = var("s", shape=(4, 1, 1))
    negative = _c(RNG.uniform(-1.0, 0.0, size=(4, 1, 1)).astype("float32"))
    for scale, params in ((scale_var, [x, w, scale_var]), (negative, [x, w])):
        y = op.multiply(op.nn.relu(op.nn.conv2d(x, w, **kw)), scale)
        _same(BackwardFoldScaleAxis, _mod(params, y))


def test_tvm_fold_bwd_negative_scale():
    x, w = var("x", shape=(2, 4, 10, 10)), var("w", shape=(8, 4, 3, 3))
    s = -_pos(8, 1, 1)
    kw = dict(channels=8, kernel_size=(3, 3), padding=(1, 1))
    out = _run(BackwardFoldScaleAxis, _mod([x, w], op.multiply(op.nn.conv2d(x, w, **kw), _c(s))))
    expected = op.nn.conv2d(x, op.multiply(w, _c(s.reshape(8, 1, 1, 1))), **kw)
    _assert_ir(out, Function([x, w], expected))


@pytest.mark.parametrize(("data_shape", "weight_shape"), [((2, 4), (3, 4)), ((3, 5), (4, 5))])
def test_tvm_fold_bwd_dense(data_shape, weight_shape):
    x, w = var("x", shape=data_shape), var("w", shape=weight_shape)
    b = var("b", shape=(weight_shape[0],))
    s = _pos(weight_shape[0])
    before = op.multiply(op.nn.relu(op.add(op.nn.dense(x, w), b)), _c(s))
    out = _run(BackwardFoldScaleAxis, _mod([x, w, b], before))
    y = op.add(op.nn.dense(x, op.multiply(w, _c(s[:, None]))), op.multiply(b, _c(s)))
    _assert_ir(out, Function([x, w, b], op.nn.relu(y)))


def test_tvm_fold_bwd_bias_add():
    x, w, b = var("x", shape=(2, 4, 10, 10)), var("w", shape=(4, 4, 3, 3)), var("b", shape=(4,))
    s = _pos(4, 1, 1)
    kw = dict(channels=4, kernel_size=(3, 3), padding=(1, 1))
    y = op.nn.relu(op.nn.bias_add(op.nn.conv2d(x, w, **kw), b))
    out = _run(BackwardFoldScaleAxis, _mod([x, w, b], op.multiply(y, _c(s))))
    conv = op.nn.conv2d(x, op.multiply(w, _c(s.reshape(4, 1, 1, 1))), **kw)
    expected = op.nn.relu(op.nn.bias_add(conv, op.multiply(b, _c(s.reshape(4)))))
    _assert_ir(out, Function([x, w, b], expected))


# -- FoldScaleAxis end to end ------------------------------------------------------------------


def test_fold_scale_axis_both_directions():
    x = var("x", shape=X)
    w1, w2, b = _arr(4, 3, 3, 3), _arr(5, 4, 1, 1), _arr(4, 1, 1)
    s1, s2 = _arr(4, 1, 1, low=-1.0, high=1.0), _arr(4, 1, 1, low=0.1, high=2.0)
    # backward: s1 goes into w1 (and b stays); r has a second user, so s2 cannot go
    # backward and goes forward into w2
    r = op.nn.relu(op.add(op.multiply(op.nn.conv2d(x, _c(w1), padding=1), _c(s1)), _c(b)))
    y = op.nn.conv2d(op.nn.relu(op.multiply(r, _c(s2))), _c(w2))
    out = _run(FoldScaleAxis(), _mod([x], Tuple([y, r])))
    r2 = op.nn.relu(op.add(op.nn.conv2d(x, _c(w1 * s1.reshape(4, 1, 1, 1)), padding=1), _c(b)))
    expected = Tuple([op.nn.conv2d(op.nn.relu(r2), _c(w2 * s2.reshape(1, 4, 1, 1))), r2])
    _assert_ir(out, Function([x], expected))


def test_backward_goes_first():
    # the positive scale s2 could go either way; like TVM, backward runs first and takes it
    x = var("x", shape=X)
    w1, w2, b = _arr(4, 3, 3, 3), _arr(5, 4, 1, 1), _arr(4, 1, 1)
    s1, s2 = _pow2(4, 1, 1, negative=True), _pow2(4, 1, 1)
    y = op.add(op.multiply(op.nn.conv2d(x, _c(w1), padding=1), _c(s1)), _c(b))
    y = op.nn.conv2d(op.nn.relu(op.multiply(op.nn.relu(y), _c(s2))), _c(w2))
    out = _run(FoldScaleAxis(), _mod([x], y))
    first = op.add(op.nn.conv2d(x, _c(w1 * (s1 * s2).reshape(4, 1, 1, 1)), padding=1), _c(b * s2))
    expected = op.nn.conv2d(op.nn.relu(op.nn.relu(first)), _c(w2))
    _assert_ir(out, Function([x], expected))


def test_nothing_to_fold_returns_the_same_module():
    x = var("x", shape=X)
    conv = op.nn.conv2d(x, _c(_arr(4, 3, 3, 3)))
    _same(FoldScaleAxis(), _mod([x], op.nn.relu(conv)))


def test_folds_inside_closures_ifs_and_other_globals():
    x = var("x", shape=X)
    w, s, t = _arr(4, 3, 1, 1), _arr(4, 1, 1), _arr(3, 1, 1, low=0.1, high=1.0)
    folded = op.nn.conv2d(x, _c(w * s.reshape(4, 1, 1, 1)))
    # a closure capturing x
    f = var("f")
    closure = Function([], op.multiply(op.nn.conv2d(x, _c(w)), _c(s)))
    body = Let(f, closure, Call(f, []))
    out = _run(BackwardFoldScaleAxis, _mod([x], body))
    _assert_ir(out, Function([x], Let(f, Function([], folded), Call(f, []))))
    # the branches of an if
    cond = op.greater(op.sum(x), irpass.const(0.0))
    branch = If(cond, op.multiply(op.nn.conv2d(x, _c(w)), _c(s)), op.nn.conv2d(x, _c(w)))
    out = _run(BackwardFoldScaleAxis, _mod([x], branch))
    _assert_ir(out, Function([x], If(cond, folded, op.nn.conv2d(x, _c(w)))))
    # a second global function, forward direction
    h = GlobalVar("helper")
    xh = var("x", shape=X)
    helper = Function([xh], op.nn.conv2d(op.nn.relu(op.multiply(xh, _c(t))), _c(_arr(2, 3, 1, 1))))
    mod = infer_type(IRModule({"main": Function([x], Call(h, [x])), h: helper}))
    out_mod = check_semantics(FoldScaleAxis(), mod)
    assert out_mod["main"] is mod["main"]
    assert "multiply" not in _ops(out_mod["helper"])


def test_conv_output_used_in_two_branches_does_not_fire():
    x = var("x", shape=X)
    conv = op.nn.conv2d(x, _c(_arr(4, 3, 1, 1)))
    cond = op.greater(op.sum(x), irpass.const(0.0))
    body = If(cond, op.multiply(conv, _c(_arr(4, 1, 1))), conv)
    _same(BackwardFoldScaleAxis, _mod([x], body))


def test_ill_typed_module_is_a_pass_error_and_input_is_untouched():
    x = var("x", shape=X)
    bad = op.multiply(op.nn.conv2d(x, _c(_arr(4, 2, 3, 3))), _c(_arr(4, 1, 1)))
    mod = _mod([x], bad)
    text = str(mod)
    with pytest.raises(irpass.PassError) as info, PassContext(opt_level=3):
        FoldScaleAxis()(mod)
    assert "InferType" in str(info.value) or "conv2d" in str(info.value)
    assert str(mod) == text


# -- example networks --------------------------------------------------------------------------


def _model_cases():
    cases = [(name, build) for name, build in sorted(models.MODELS.items())]
    cases.append(("resnet_nhwc", lambda: models.resnet(layout="NHWC")))
    return cases


@pytest.mark.parametrize(("name", "build"), _model_cases(), ids=[c[0] for c in _model_cases()])
@pytest.mark.parametrize(
    "which", ["FoldScaleAxis", "BackwardFoldScaleAxis", "ForwardFoldScaleAxis"]
)
def test_models_keep_meaning(name, build, which):
    check_semantics(get_pass(which), build())


class _ManualSimplifyInference(ExprMutator):
    """batch_norm(...)[0] -> add(multiply(x, scale), shift) with precomputed constants, the
    form SimplifyInference produces (written here so these tests do not depend on it)."""

    def visit_tuple_getitem(self, item):
        new = super().visit_tuple_getitem(item)
        bn = new.tuple_value
        if new.index != 0 or type(bn) is not Call or bn.op is not Op.get("nn.batch_norm"):
            return new
        data, gamma, beta, mean, variance = bn.args
        ndim = 4
        axis = bn.attrs["axis"] % ndim
        scale = gamma.data / np.sqrt(variance.data + bn.attrs["epsilon"])
        shift = beta.data - mean.data * scale
        shape = (scale.shape[0],) + (1,) * (ndim - 1 - axis)
        return op.add(
            op.multiply(data, Constant(scale.reshape(shape).astype("float32"))),
            Constant(shift.reshape(shape).astype("float32")),
        )


def _hand_simplified(mod):
    return IRModule({gv: _ManualSimplifyInference().visit(f) for gv, f in mod.items()})


def _multiplies_of_weighted_ops(expr):
    """Multiply calls that take a conv2d / dense output directly."""
    hits = []

    def check(node):
        if type(node) is Call and node.op is Op.get("multiply"):
            for a in node.args:
                if type(a) is Call and type(a.op) is Op and a.op.name in ("nn.conv2d", "nn.dense"):
                    hits.append(node)

    post_order_visit(expr, check)
    return hits


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_batch_norm_scales_end_up_in_the_weights(layout):
    mod = _hand_simplified(models.resnet(layout=layout))
    assert len(_multiplies_of_weighted_ops(mod["main"])) == 5
    out = check_semantics(FoldScaleAxis(), mod)
    assert _ops(out["main"]).count("multiply") == 0
    assert _ops(out["main"]).count("nn.conv2d") == 5


def test_mobilenet_hand_simplified_folds_every_scale():
    mod = _hand_simplified(models.mobilenet())
    out = check_semantics(FoldScaleAxis(), mod)
    assert _ops(out["main"]).count("multiply") == 0


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_with_simplify_inference_pipeline(name):
    mod = models.MODELS[name]()
    out = check_semantics([get_pass("SimplifyInference"), FoldScaleAxis()], mod)
    # no constant scale stays on a conv2d / dense output
    for m in _multiplies_of_weighted_ops(out["main"]):
        assert not any(type(a) is Constant for a in m.args), str(m)
    if name in ("resnet", "mobilenet"):  # every batch-norm scale went into a weight
        assert "multiply" not in _ops(out["main"])


def test_with_simplify_inference_pipeline_nhwc():
    mod = models.resnet(layout="NHWC")
    out = check_semantics([get_pass("SimplifyInference"), FoldScaleAxis()], mod)
    assert "multiply" not in _ops(out["main"])


@pytest.mark.parametrize("name", ["resnet", "mobilenet"])
def test_a_normal_form_models_fold_through_lets(name):
    passes = [get_pass("SimplifyInference"), get_pass("ToANormalForm"), FoldScaleAxis()]
    out = check_semantics(passes, models.MODELS[name]())
    assert "multiply" not in _ops(out["main"])


def test_default_pipeline_at_o3_keeps_meaning_on_resnet():
    from irpass.transform import default_pipeline

    check_semantics(default_pipeline(3), models.resnet())
    check_semantics(default_pipeline(3), _hand_simplified(models.resnet()))


# -- hypothesis --------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(sts.modules())
def test_hypothesis_programs_are_left_alone(mod):
    # these programs have no conv2d / dense: nothing to fold, the very module comes back
    weighted = any({"nn.conv2d", "nn.dense"} & set(_ops(func)) for func in mod.functions.values())
    mod = infer_type(mod)  # else the InferType FoldScaleAxis runs first annotates a copy
    with PassContext(opt_level=3):
        assert weighted or FoldScaleAxis()(mod) is mod
    check_semantics(FoldScaleAxis(), mod, seeds=(0,))


_CHAIN_OPS = (
    "bias_add",
    "add",
    "subtract_left",
    "relu",
    "leaky_relu",
    "scale_pos",
    "scale_any",
    "scale_full",
    "add_param",
    "bias_add_param",
)


@st.composite
def _weighted_chains(draw):
    """A conv2d or dense followed by a random chain of the ops the pass looks through
    (per-channel multiplies among them), and a consumer conv2d / dense (forward
    direction); some steps are let-bound, and sometimes a node of the chain is also
    returned (a second user)."""
    dense = draw(st.booleans())
    nhwc = not dense and draw(st.booleans())
    c_in, c_mid = 3, 4
    if dense:
        x = var("x", shape=(2, c_in))
        y = op.nn.dense(x, _c(_arr(c_mid, c_in)))
        axis, rank = 1, 2
    else:
        x = var("x", shape=(1, 4, 4, c_in) if nhwc else (1, c_in, 4, 4))
        groups = draw(st.sampled_from([1, 1, 2] if not nhwc else [1]))
        w_shape = (3, 3, c_in, c_mid) if nhwc else (c_mid * groups, c_in, 3, 3)
        if groups == 2:
            x = var("x", shape=(1, 2 * c_in, 4, 4))
            c_mid = c_mid * groups
        y = op.nn.conv2d(
            x,
            _c(_arr(*w_shape)),
            padding=1,
            groups=groups,
            data_layout="NHWC" if nhwc else "NCHW",
            kernel_layout="HWIO" if nhwc else "OIHW",
        )
        axis, rank = (3 if nhwc else 1), 4

    def per_channel(low, high):
        full = [1] * rank
        full[axis] = c_mid
        # numpy aligns shapes to the right: leading ones may go, down to a scalar
        start = draw(st.integers(0, axis + 1))
        shape = tuple(full[start:])
        data = np.asarray(
            draw(st.lists(st.floats(low, high, width=32), min_size=c_mid, max_size=c_mid)),
            "float32",
        )
        if start > axis:  # the same value for every channel
            data = data[:1]
        return Constant(data.reshape(shape))

    extra = []
    bindings = []
    params = [x]
    for kind in draw(st.lists(st.sampled_from(_CHAIN_OPS), max_size=6)):
        if kind == "bias_add":
            y = op.nn.bias_add(y, _c(_arr(c_mid)), axis=axis)
        elif kind == "add_param":  # a parameter bias: per-channel, or scalar, or full
            shape = per_channel(-1, 1).data.shape
            if draw(st.integers(0, 4)) == 0:
                shape = tuple(_tensor_shape(y, params, bindings))
            params.append(var(f"b{len(params)}", shape=shape))
            y = op.add(y, params[-1]) if draw(st.booleans()) else op.subtract(params[-1], y)
        elif kind == "bias_add_param":
            params.append(var(f"b{len(params)}", shape=(c_mid,)))
            y = op.nn.bias_add(y, params[-1], axis=axis)
        elif kind == "leaky_relu":
            y = op.nn.leaky_relu(y, alpha=0.2)
        elif kind == "add":
            y = op.add(y, per_channel(-1, 1))
        elif kind == "subtract_left":
            y = op.subtract(per_channel(-1, 1), y)
        elif kind == "relu":
            y = op.nn.relu(y)
        elif kind == "scale_pos":
            y = op.multiply(y, per_channel(0.25, 2))
        elif kind == "scale_any":
            y = op.multiply(per_channel(-2, 2), y)
        else:  # a full tensor: not per-channel
            shape = (2, c_mid) if dense else ((1, 4, 4, c_mid) if nhwc else (1, c_mid, 4, 4))
            y = op.multiply(y, _c(_arr(*shape)))
        if draw(st.integers(0, 3)) == 0:  # bind it to a var, as the A-normal form does
            v = Var(f"t{len(bindings)}")
            bindings.append((v, y))
            y = v
        if draw(st.integers(0, 9)) == 0:
            extra.append(y)

    def consumer(data):
        if dense:
            return op.nn.dense(data, _c(_arr(3, c_mid)))
        return op.nn.conv2d(
            data,
            _c(_arr(*((1, 1, c_mid, 2) if nhwc else (2, c_mid, 1, 1)))),
            data_layout="NHWC" if nhwc else "NCHW",
            kernel_layout="HWIO" if nhwc else "OIHW",
        )

    # one consumer, or two (TVM's dual path), one of them maybe after a relu
    outputs = [consumer(y) for _ in range(draw(st.integers(1, 2)))]
    if len(outputs) == 2 and draw(st.booleans()):
        outputs[1] = consumer(op.nn.relu(y))
    body = Tuple([*outputs, *extra]) if len(outputs) + len(extra) > 1 else outputs[0]
    for v, value in reversed(bindings):
        body = Let(v, value, body)
    return _mod(params, body)


def _tensor_shape(y, params, bindings):
    """The shape of ``y`` (a chain built so far), from type inference."""
    body = y
    for v, value in reversed(bindings):
        body = Let(v, value, body)
    return infer_type(_mod(params, body))["main"].body.checked_type.shape


@settings(max_examples=60, deadline=None)
@given(_weighted_chains())
def test_random_weighted_chains_keep_meaning(mod):
    check_semantics(FoldScaleAxis(), mod, rtol=1e-3, atol=1e-4)


@settings(max_examples=60, deadline=None)
@given(_weighted_chains())
def test_random_weighted_chains_fold_the_same_in_a_normal_form(mod):
    # every constant let-bound: the same ops are left as on the graph form, and meaning kept
    graph = check_semantics(FoldScaleAxis(), mod, rtol=1e-3, atol=1e-4)
    anf = check_semantics([get_pass("ToANormalForm"), FoldScaleAxis()], mod, rtol=1e-3, atol=1e-4)
    assert sorted(_ops(anf["main"])) == sorted(_ops(graph["main"]))


# -- deep programs -----------------------------------------------------------------------------

DEPTH = 30_000


def test_deep_chain_backward_folds_every_layer():
    x = var("x", shape=(1, 2))
    w = _c(np.eye(2, dtype="float32"))
    s = _c(np.array([1.0, 0.5], "float32"))
    y = x
    for _ in range(DEPTH // 3):
        y = op.nn.relu(op.multiply(op.nn.dense(y, w), s))
    mod = _mod([x], y)
    with PassContext(opt_level=3):
        out = FoldScaleAxis()(mod)
    ops = _ops(out["main"])
    assert ops.count("multiply") == 0 and ops.count("nn.dense") == DEPTH // 3
    args = {"x": np.array([[1.0, 1.0]], "float32")}
    got = irpass.evaluate(out, **args)
    # each layer keeps channel 0 and halves channel 1: 0.5 ** 10000 underflows to 0
    np.testing.assert_array_equal(got, irpass.evaluate(mod, **args))


def test_deep_let_chain_forward():
    x = var("x", shape=(1, 2))
    w = _c(np.eye(2, dtype="float32"))
    s = _c(np.array([1.0, 0.5], "float32"))
    bindings = []
    prev = x
    for i in range(DEPTH // 3):
        v = Var(f"v{i}")
        bindings.append((v, op.nn.relu(op.multiply(prev, s))))
        prev = op.nn.dense(v, w)
    body = prev
    for v, value in reversed(bindings):
        body = Let(v, value, body)
    mod = _mod([x], body)
    with PassContext(opt_level=3):
        out = ForwardFoldScaleAxis(mod)
    ops = _ops(out["main"])
    assert ops.count("multiply") == 0 and ops.count("nn.dense") == DEPTH // 3
    args = {"x": np.array([[1.0, -1.0]], "float32")}
    np.testing.assert_array_equal(irpass.evaluate(out, **args), irpass.evaluate(mod, **args))


def test_deep_dual_path_chain_with_a_parameter_bias_forward():
    # each layer: relu(v * s) + b read by two dense layers whose outputs are added
    x, b = var("x", shape=(1, 2)), var("b", shape=(2,))
    w = _c(np.eye(2, dtype="float32") * np.float32(0.5))
    s = _c(np.array([1.0, 0.5], "float32"))
    y = x
    for _ in range(DEPTH // 6):
        v = op.add(op.nn.relu(op.multiply(y, s)), b)
        y = op.add(op.nn.dense(v, w), op.nn.dense(v, w))
    mod = _mod([x, b], y)
    with PassContext(opt_level=3):
        out = ForwardFoldScaleAxis(mod)
    ops = _ops(out["main"])
    assert ops.count("divide") == DEPTH // 6 and ops.count("multiply") == 0
    args = {"x": np.array([[1.0, -1.0]], "float32"), "b": np.array([0.25, 0.5], "float32")}
    np.testing.assert_allclose(irpass.evaluate(out, **args), irpass.evaluate(mod, **args))


@pytest.mark.parametrize("direction", ["backward", "forward"])
def test_deep_a_normal_form_chain_folds_every_layer(direction):
    # every layer's weight and scale let-bound, as ToANormalForm leaves them
    x = var("x", shape=(1, 2))
    w = np.eye(2, dtype="float32")
    s = np.array([1.0, 0.5], "float32")
    bindings, prev = [], x
    for i in range(DEPTH // 5):
        wv, sv, dv, mv, rv = (Var(f"{n}{i}") for n in "wsdmr")
        if direction == "backward":  # relu(dense(x, w) * s)
            steps = [
                (wv, _c(w)),
                (dv, op.nn.dense(prev, wv)),
                (sv, _c(s)),
                (mv, op.multiply(dv, sv)),
                (rv, op.nn.relu(mv)),
            ]
            prev = rv
        else:  # dense(relu(x * s), w)
            steps = [
                (sv, _c(s)),
                (mv, op.multiply(prev, sv)),
                (rv, op.nn.relu(mv)),
                (wv, _c(w)),
                (dv, op.nn.dense(rv, wv)),
            ]
            prev = dv
        bindings += steps
    mod = _mod([x], _lets(bindings, prev))
    p = BackwardFoldScaleAxis if direction == "backward" else ForwardFoldScaleAxis
    with PassContext(opt_level=3):
        out = Sequential([get_pass("InferType"), p])(mod)
    ops = _ops(out["main"])
    assert ops.count("multiply") == 0 and ops.count("nn.dense") == DEPTH // 5
    args = {"x": np.array([[1.0, 1.0]], "float32")}
    np.testing.assert_array_equal(irpass.evaluate(out, **args), irpass.evaluate(mod, **args))


def test_deep_chain_with_nothing_to_fold_is_the_same_object():
    x = var("x", shape=(1, 2))
    y = x
    for _ in range(DEPTH):
        y = op.nn.relu(y)
    _same(FoldScaleAxis(), _mod([x], op.nn.dense(y, _c(_arr(3, 2)))))


# -- networks shaped like the ONNX importer's output (the onnx backend test 'light' models) --------
#
# Conv with bias -> nn.bias_add(nn.conv2d(x, W), B); BatchNormalization ->
# nn.batch_norm(...)[0]; the caffe2-exported models (DenseNet-121, Inception v2) follow each
# batch norm with Mul and Add of unsqueezed vectors: multiply(y, expand_dims(w)), add(y,
# expand_dims(b)). After the default pipeline at -O3 no batch_norm may remain, every scale
# after a conv must be in its weights (only per-channel adds, which the ONNX exporter turns
# into the Conv's bias, may follow it), and a pre-activation batch norm + Mul + Add must be
# one multiply and one add at most (none when the scale is positive: it goes into the next
# conv's weights).


class _Net:
    """Builds importer-shaped blocks with seeded weights."""

    def __init__(self, seed=0, positive=True):
        self.rng = np.random.default_rng(seed)
        self.low = 0.5 if positive else -1.5  # gamma and the caffe2 scale
        self.convs = []

    def vec(self, n, low=-1.0, high=1.0):
        return Constant(self.rng.uniform(low, high, size=n).astype("float32"))

    def conv(self, x, cin, cout, k, bias=False):
        w = self.rng.normal(0, (2 / (cin * k * k)) ** 0.5, size=(cout, cin, k, k))
        weight = Constant(w.astype("float32"))
        self.convs.append(weight)
        y = op.nn.conv2d(x, weight, padding=(k // 2, k // 2), channels=cout, kernel_size=(k, k))
        return op.nn.bias_add(y, self.vec(cout), axis=1) if bias else y

    def bn(self, x, ch, caffe2=True):
        stats = (self.vec(ch, self.low, 1.5), self.vec(ch), self.vec(ch), self.vec(ch, 0.5, 1.5))
        y = op.nn.batch_norm(x, *stats, axis=1, epsilon=1e-5)[0]
        if caffe2:
            scale = op.expand_dims(self.vec(ch, self.low, 1.5), axis=1, num_newaxis=2)
            y = op.add(op.multiply(y, scale), op.expand_dims(self.vec(ch), axis=1, num_newaxis=2))
        return y


def _densenet_like(layers=2, positive=True):
    """Stem conv-BN-relu, dense layers (BN-relu-conv1x1-BN-relu-conv3x3, concatenated onto the
    input), a transition BN-relu-conv1x1-avg_pool and a final BN-relu."""
    n = _Net(positive=positive)
    data = var("data", shape=(1, 3, 8, 8))
    x = op.nn.relu(n.bn(n.conv(data, 3, 8, 3), 8))
    ch = 8
    for _ in range(layers):
        y = n.conv(op.nn.relu(n.bn(x, ch)), ch, 16, 1)
        y = n.conv(op.nn.relu(n.bn(y, 16)), 16, 4, 3)
        x = op.concatenate(Tuple([x, y]), axis=1)
        ch += 4
    x = op.nn.avg_pool2d(n.conv(op.nn.relu(n.bn(x, ch)), ch, ch, 1), pool_size=(2, 2))
    x = op.nn.relu(n.bn(x, ch))
    return IRModule.from_expr(Function([data], x)), n


def _resnet_like(blocks=2, bias=False, positive=True):
    """Stem conv-BN-relu; residual blocks conv-BN-relu-conv-BN + shortcut (a conv-BN
    projection in the first block), add, relu."""
    n = _Net(positive=positive)
    data = var("data", shape=(1, 3, 8, 8))
    x = op.nn.relu(n.bn(n.conv(data, 3, 8, 3, bias), 8, caffe2=False))
    for i in range(blocks):
        y = op.nn.relu(n.bn(n.conv(x, 8, 8, 3, bias), 8, caffe2=False))
        y = n.bn(n.conv(y, 8, 8, 3, bias), 8, caffe2=False)
        short = n.bn(n.conv(x, 8, 8, 1, bias), 8, caffe2=False) if i == 0 else x
        x = op.nn.relu(op.add(y, short))
    return IRModule.from_expr(Function([data], x)), n


def _o3_unfused(mod):
    from irpass.transform import default_pipeline

    with PassContext(opt_level=3, disabled_pass=["FuseOps"]):
        return default_pipeline(3)(mod)["main"]


def _users(expr):
    users = {}

    def visit(node):
        for child in node.children() if type(node) in (Call, Tuple) else ():
            users.setdefault(child, []).append(node)

    post_order_visit(expr, visit)
    return users


def _per_channel_add(node):
    if type(node) is not Call or type(node.op) is not Op:
        return False
    if node.op.name == "nn.bias_add":
        return node.attrs["axis"] == 1 and type(node.args[1]) is Constant
    return (
        node.op.name == "add"
        and type(node.args[1]) is Constant
        and node.args[1].data.shape in ((node.args[1].data.shape[0], 1, 1),)
    )


def _conv_tails(func):
    """For each conv2d: the ops after it up to its first user that is no single-use
    per-channel constant add (the chain the ONNX exporter merges into the Conv)."""
    users = _users(func.body)
    tails = []
    for conv in (c for c in _calls_of(func) if c.op.name == "nn.conv2d"):
        node, chain = conv, []
        while len(users.get(node, [])) == 1 and _per_channel_add(users[node][0]):
            node = users[node][0]
            chain.append(node.op.name)
        after = [u.op.name if type(u) is Call else type(u).__name__ for u in users.get(node, [])]
        tails.append((chain, after))
    return tails


def _calls_of(func):
    found = []
    post_order_visit(func, lambda n: found.append(n) if type(n) is Call else None)
    return found


def test_densenet_like_o3_folds_every_batch_norm():
    mod, net = _densenet_like()
    out = _o3_unfused(mod)
    check_semantics(irpass.transform.default_pipeline(3), mod)
    counts = {name: _ops(out).count(name) for name in set(_ops(out))}
    # 7 batch norms: 3 after a conv (its scale goes into the conv's output channels, the
    # shift is an add the exporter merges into the Conv's bias) and 4 before a relu (a
    # positive scale goes into the next conv's input channels, the shift stays an add; the
    # last batch norm has no conv after it and keeps its multiply)
    assert counts == {
        "nn.conv2d": 6,
        "nn.relu": 7,
        "concatenate": 2,
        "nn.avg_pool2d": 1,
        "add": 7,
        "multiply": 1,
    }
    for chain, after in _conv_tails(out):
        assert chain in ([], ["add"]) and "multiply" not in after
    kernels = [c.args[1].data for c in _calls_of(out) if c.op.name == "nn.conv2d"]
    unchanged = [k for k in kernels if any(np.array_equal(k, w.data) for w in net.convs)]
    # only the two 3x3 convs keep their weights: the batch norm before each went backward
    # into the 1x1 conv before it, and none follows them
    assert len(unchanged) == 2 and all(k.shape[2:] == (3, 3) for k in unchanged)


def test_densenet_like_o3_with_negative_scales_keeps_one_multiply_per_pre_activation():
    mod, _ = _densenet_like(positive=False)
    out = _o3_unfused(mod)
    check_semantics(irpass.transform.default_pipeline(3), mod)
    names = _ops(out)
    assert "nn.batch_norm" not in names
    # a scale with negative entries cannot cross the relu: the 4 batch norms before a relu
    # are one multiply + one add each; the 3 after a conv are folded into it (one add each)
    assert names.count("multiply") == 4 and names.count("add") == 4 + 3
    for _chain, after in _conv_tails(out):
        assert "multiply" not in after


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("positive", [True, False])
def test_resnet_like_o3_leaves_convs_with_per_channel_adds(bias, positive):
    mod, net = _resnet_like(bias=bias, positive=positive)
    out = _o3_unfused(mod)
    check_semantics(irpass.transform.default_pipeline(3), mod)
    names = _ops(out)
    # 6 convs, 5 relus, 2 residual adds; each batch norm (and conv bias) is one add
    assert names.count("nn.conv2d") == 6 and names.count("nn.relu") == 5
    assert "multiply" not in names and "nn.batch_norm" not in names
    assert names.count("add") + names.count("nn.bias_add") == 2 + 6
    for chain, _after in _conv_tails(out):
        assert len(chain) == 1  # one per-channel add: the Conv's bias
    kernels = [c.args[1].data for c in _calls_of(out) if c.op.name == "nn.conv2d"]
    assert not any(np.array_equal(k, w.data) for k in kernels for w in net.convs)


def test_pre_activation_block_expected_ir():
    # relu(x * s + t) -> conv: the scale goes into the conv's input channels, t becomes t / s
    x = var("x", shape=(1, 4, 5, 5))
    s, t = _pow2(4, 1, 1), _arr(4, 1, 1)
    w = _arr(6, 4, 1, 1)
    body = op.nn.conv2d(op.nn.relu(op.add(op.multiply(x, _c(s)), _c(t))), _c(w), channels=6)
    out = _run(get_pass("FoldScaleAxis"), _mod([x], body))
    relu = op.nn.relu(op.add(x, _c(t / s)))
    expected = op.nn.conv2d(relu, _c(w * s.reshape(1, 4, 1, 1)), channels=6)
    _assert_ir(out, Function([x], expected))


def test_conv_bias_batch_norm_mul_add_end_in_the_weights_and_one_bias_expected_ir():
    # the ONNX importer's Conv(+B) -> BatchNormalization -> Mul -> Add, after SimplifyInference:
    # SimplifyExpr leaves conv -> multiply -> bias_add, BackwardFoldScaleAxis scales the weights
    x = var("x", shape=X)
    w = _arr(4, 3, 3, 3)
    b, t, shift = (
        np.array(v, "float32") for v in ([0.5, -1, 2, 0.25], [1, 2, -3, 0.5], [-0.25, 0.75, 1, 2])
    )
    s1, s2 = _pow2(4), _pow2(4)
    y = op.nn.bias_add(op.nn.conv2d(x, _c(w), padding=1), _c(b))
    y = op.add(op.multiply(y, _c(s1.reshape(4, 1, 1))), _c(t.reshape(4, 1, 1)))
    y = op.multiply(y, op.expand_dims(_c(s2), axis=1, num_newaxis=2))
    y = op.add(y, op.expand_dims(_c(shift), axis=1, num_newaxis=2))
    passes = [get_pass("SimplifyExpr"), BackwardFoldScaleAxis]
    out = _run(passes, _mod([x], y))
    scale = s1 * s2
    bias = (b * s1 + t) * s2 + shift
    conv = op.nn.conv2d(x, _c(w * scale.reshape(4, 1, 1, 1)), padding=1)
    _assert_ir(out, Function([x], op.nn.bias_add(conv, _c(bias), axis=1)))
