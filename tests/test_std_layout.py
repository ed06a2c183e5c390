"""ConvertLayout and AlterOpLayout (plugins/irpass_std/layout.py).

Expected-IR tests build the input and the hand-written expected program with the
op builders (constants transposed with numpy, never by the pass) and compare with
``assert_structural_equal``; property tests run ``check_semantics`` on the example
networks, on the core's random programs and on random convolutional networks
(mixed layouts, lets, ifs, tuples, closures, a second global) drawn below.
"""

from __future__ import annotations

import re
from pathlib import Path

import irpass
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from irpass import op
from irpass.ir import (
    Call,
    Constant,
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
    Var,
    assert_structural_equal,
    const,
    infer_type,
    post_order_visit,
    register_op,
    var,
)
from irpass.testing import check_semantics, models
from irpass.testing import strategies as sts
from irpass.transform import PassContext, Sequential, get_pass
from irpass_std.layout import (
    _CONVERTIBLE,
    CONFIG_OPTIONS,
    DESIRED_LAYOUTS,
    AlterOpLayout,
    ConvertLayout,
    list_alter_layouts,
    register_alter_layout,
    unregister_alter_layout,
)
from irpass_std.layout import (
    parse_desired_layouts_option as parse_option,
)

NHWC = {"nn.conv2d": ["NHWC", "default"]}
NCHW = {"nn.conv2d": ["NCHW", "default"]}
DOCS = Path(__file__).resolve().parents[1] / "plugins" / "irpass_std" / "docs"

RNG = np.random.default_rng(7)


def weights(*shape: int) -> Constant:
    return const(RNG.standard_normal(shape).astype("float32") * 0.5)


def to_nhwc(c: Constant) -> Constant:
    """(C, 1, 1)-style or 4-D constants moved by hand, for expected programs."""
    return const(np.ascontiguousarray(np.transpose(c.data, (0, 2, 3, 1))))


def hwio(w: Constant) -> Constant:
    return const(np.ascontiguousarray(np.transpose(w.data, (2, 3, 1, 0))))


def lt(x, src, dst):
    return op.layout_transform(x, src, dst)


def run(p, func_or_mod, opt_level=3, config=None):
    """``p`` on the module typed first, as after its required InferType (a pass called
    alone runs no requirement)."""
    mod = func_or_mod if isinstance(func_or_mod, IRModule) else IRModule.from_expr(func_or_mod)
    mod = infer_type(mod)
    with PassContext(opt_level=opt_level, config=config):
        return p(mod)


def convert(func_or_mod, desired=None):
    return run(ConvertLayout(desired or NHWC), func_or_mod)


def expect(out: IRModule, expected: Function, name: str = "main") -> None:
    """``out[name]`` is the hand-written ``expected``, typed as ``run`` types the input
    (InferType gives a function without a return type the inferred one)."""
    assert_structural_equal(out[name], infer_type(out.with_function(name, expected))[name])


def transforms(expr) -> list[Call]:
    out = []

    def f(n):
        if type(n) is Call and type(n.op) is Op and n.op.name == "layout_transform":
            out.append(n)

    post_order_visit(expr, f)
    return out


def x_nchw(shape=(1, 3, 8, 8), name="x"):
    return var(name, shape=shape)


def conv(x, w, layout="NCHW", kernel="OIHW", **kw):
    return op.nn.conv2d(x, w, padding=(1, 1), data_layout=layout, kernel_layout=kernel, **kw)


# -- expected IR: conv2d --------------------------------------------------------------------------


def test_single_conv_transforms_at_the_boundary_and_transposes_the_weight():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    out = convert(Function([x], conv(x, w)))
    expected = Function(
        [x], lt(conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO"), "NHWC", "NCHW")
    )
    expect(out, expected)


def test_explicit_kernel_layout():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    out = convert(Function([x], conv(x, w)), {"nn.conv2d": ["NHWC", "OHWI"]})
    w_ohwi = const(np.ascontiguousarray(np.transpose(w.data, (0, 2, 3, 1))))
    body = conv(lt(x, "NCHW", "NHWC"), w_ohwi, "NHWC", "OHWI")
    expect(out, Function([x], lt(body, "NHWC", "NCHW")))


def test_data_layout_only_means_the_default_kernel():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    a = convert(Function([x], conv(x, w)), {"nn.conv2d": ["NHWC"]})
    b = convert(Function([x], conv(x, w)), {"nn.conv2d": ("NHWC", "HWIO")})
    assert_structural_equal(a, b)


def test_non_constant_weight_gets_a_runtime_transform():
    x, w = x_nchw(), var("w", shape=(4, 3, 3, 3))
    out = convert(Function([x, w], conv(x, w)))
    body = conv(lt(x, "NCHW", "NHWC"), lt(w, "OIHW", "HWIO"), "NHWC", "HWIO")
    expect(out, Function([x, w], lt(body, "NHWC", "NCHW")))


def test_conv_relu_conv_has_no_transform_in_between():
    x, w1, w2 = x_nchw(), weights(4, 3, 3, 3), weights(5, 4, 3, 3)
    out = convert(Function([x], conv(op.nn.relu(conv(x, w1)), w2)))
    y = op.nn.relu(conv(lt(x, "NCHW", "NHWC"), hwio(w1), "NHWC", "HWIO"))
    expected = Function([x], lt(conv(y, hwio(w2), "NHWC", "HWIO"), "NHWC", "NCHW"))
    expect(out, expected)
    assert len(transforms(out["main"])) == 2


def test_conv_bias_add_relu_moves_the_bias_axis():
    x, w, b = x_nchw(), weights(4, 3, 3, 3), weights(4)
    out = convert(Function([x], op.nn.relu(op.nn.bias_add(conv(x, w), b))))
    y = op.nn.bias_add(conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO"), b, axis=3)
    expect(out, Function([x], lt(op.nn.relu(y), "NHWC", "NCHW")))


def test_residual_add_of_two_converted_branches():
    x, w1, w2, w3 = x_nchw(), weights(4, 3, 3, 3), weights(4, 4, 3, 3), weights(4, 3, 3, 3)
    a = op.nn.relu(conv(x, w1))
    b = conv(a, w2)
    c = conv(x, w3)
    out = convert(Function([x], op.nn.relu(op.add(b, c))))
    xt = lt(x, "NCHW", "NHWC")
    a2 = op.nn.relu(conv(xt, hwio(w1), "NHWC", "HWIO"))
    b2 = conv(a2, hwio(w2), "NHWC", "HWIO")
    c2 = conv(xt, hwio(w3), "NHWC", "HWIO")
    expected = Function([x], lt(op.nn.relu(op.add(b2, c2)), "NHWC", "NCHW"))
    expect(out, expected)


def test_batch_norm_axis_and_tuple_field():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    g, b, m, v = weights(4), weights(4), weights(4), const(np.ones(4, "float32"))
    out = convert(Function([x], op.nn.batch_norm(conv(x, w), g, b, m, v)[0]))
    y = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    expected = Function([x], lt(op.nn.batch_norm(y, g, b, m, v, axis=3)[0], "NHWC", "NCHW"))
    expect(out, expected)


def test_returning_the_batch_norm_tuple_transforms_only_its_first_field():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    g, b, m, v = weights(4), weights(4), weights(4), const(np.ones(4, "float32"))
    out = convert(Function([x], op.nn.batch_norm(conv(x, w), g, b, m, v)))
    bn = op.nn.batch_norm(conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO"), g, b, m, v, axis=3)
    expected = Function([x], Tuple([lt(bn[0], "NHWC", "NCHW"), bn[1], bn[2]]))
    expect(out, expected)


def test_conv_with_explicit_out_layout():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    out = convert(Function([x], op.nn.relu(conv(x, w, out_layout="NHWC"))))
    body = op.nn.relu(conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO"))
    expect(out, Function([x], body))


def test_depthwise_conv():
    x, w = x_nchw(), weights(3, 1, 3, 3)
    out = convert(Function([x], conv(x, w, groups=3)))
    body = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO", groups=3)
    expect(out, Function([x], lt(body, "NHWC", "NCHW")))


def test_nhwc_network_to_nchw():
    x = var("x", shape=(1, 8, 8, 3))
    w = weights(3, 3, 3, 4)
    out = convert(Function([x], op.nn.relu(conv(x, w, "NHWC", "HWIO"))), NCHW)
    w_oihw = const(np.ascontiguousarray(np.transpose(w.data, (3, 2, 0, 1))))
    body = op.nn.relu(conv(lt(x, "NHWC", "NCHW"), w_oihw, "NCHW", "OIHW"))
    expect(out, Function([x], lt(body, "NCHW", "NHWC")))


def test_conv_already_in_the_desired_layouts_is_kept():
    x, w = var("x", shape=(1, 8, 8, 3)), weights(3, 3, 3, 4)
    mod = infer_type(IRModule.from_expr(Function([x], conv(x, w, "NHWC", "HWIO"))))
    assert convert(mod) is mod


def test_conv_in_the_data_layout_gets_the_desired_kernel_layout():
    x, w = var("x", shape=(1, 8, 8, 3)), weights(4, 3, 3, 3)
    out = convert(Function([x], conv(x, w, "NHWC", "OIHW")))
    expect(out, Function([x], conv(x, hwio(w), "NHWC", "HWIO")))


# -- expected IR: broadcasting operands ---------------------------------------------------------


def test_constant_channel_operand_is_transposed_at_compile_time():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    c3, c4, s = weights(4, 1, 1), weights(1, 4, 1, 1), const(np.float32(2))
    out = convert(Function([x], op.multiply(op.add(op.subtract(conv(x, w), c3), c4), s)))
    y = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    c3t = const(c3.data.reshape(1, 1, 4))
    body = op.multiply(op.add(op.subtract(y, c3t), to_nhwc(c4)), s)
    expect(out, Function([x], lt(body, "NHWC", "NCHW")))
    assert len(transforms(out["main"])) == 2


def test_rank_1_constant_broadcasts_along_width():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    c = weights(8)  # broadcasts along W in NCHW
    out = convert(Function([x], op.add(conv(x, w), c)))
    y = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    expected = Function([x], lt(op.add(y, const(c.data.reshape(8, 1))), "NHWC", "NCHW"))
    expect(out, expected)


def test_non_constant_operand_of_full_rank_is_transformed():
    x, w, y = x_nchw(), weights(4, 3, 3, 3), var("y", shape=(1, 4, 8, 8))
    out = convert(Function([x, y], op.add(conv(x, w), y)))
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    expected = Function([x, y], lt(op.add(c, lt(y, "NCHW", "NHWC")), "NHWC", "NCHW"))
    expect(out, expected)


def test_non_constant_operand_of_lower_rank_is_expanded_and_transformed():
    x, w, b = x_nchw(), weights(4, 3, 3, 3), var("b", shape=(4, 1, 1))
    out = convert(Function([x, b], op.add(b, conv(x, w))))
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    bt = lt(op.expand_dims(b, 0, 1), "NCHW", "NHWC")
    expect(out, Function([x, b], lt(op.add(bt, c), "NHWC", "NCHW")))


def test_size_one_operands_are_left_alone():
    x, w, s = x_nchw(), weights(4, 3, 3, 3), var("s", shape=(1, 1))
    out = convert(Function([x, s], op.maximum(conv(x, w), s)))
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    expect(out, Function([x, s], lt(op.maximum(c, s), "NHWC", "NCHW")))


def test_where_and_comparisons_are_carried():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    y = conv(x, w)
    out = convert(Function([x], op.where(op.greater(y, const(np.float32(0))), y, op.negative(y))))
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    body = op.where(op.greater(c, const(np.float32(0))), c, op.negative(c))
    expect(out, Function([x], lt(body, "NHWC", "NCHW")))


# -- expected IR: axis attributes --------------------------------------------------------------


def test_softmax_concatenate_and_split_axes():
    x, w1, w2 = x_nchw(), weights(4, 3, 3, 3), weights(2, 3, 3, 3)
    cat = op.concatenate([conv(x, w1), conv(x, w2)], axis=1)
    parts = op.split(op.nn.softmax(cat, axis=1), 2, axis=-1)
    out = convert(Function([x], op.add(parts[0], parts[1])))
    xt = lt(x, "NCHW", "NHWC")
    cat2 = op.concatenate(
        [conv(xt, hwio(w1), "NHWC", "HWIO"), conv(xt, hwio(w2), "NHWC", "HWIO")], axis=3
    )
    parts2 = op.split(op.nn.softmax(cat2, axis=3), 2, axis=2)
    expected = Function([x], lt(op.add(parts2[0], parts2[1]), "NHWC", "NCHW"))
    expect(out, expected)


def test_concatenate_with_an_unconverted_field():
    x, w, y = x_nchw(), weights(4, 3, 3, 3), var("y", shape=(1, 2, 8, 8))
    out = convert(Function([x, y], op.concatenate([conv(x, w), y], axis=1)))
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    body = op.concatenate([c, lt(y, "NCHW", "NHWC")], axis=3)
    expect(out, Function([x, y], lt(body, "NHWC", "NCHW")))


def test_reduction_over_height_and_width_leaves_no_transform():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    out = convert(Function([x], op.mean(conv(x, w), axis=[2, 3])))
    body = op.mean(conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO"), axis=[1, 2])
    expect(out, Function([x], body))


def test_reduction_keeping_a_permuted_rank_3_value():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    out = convert(Function([x], op.sum(conv(x, w), axis=[0])))
    body = op.sum(conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO"), axis=[0])
    expect(out, Function([x], lt(body, "HWC", "CHW")))


def test_reduction_with_keepdims_and_exclude():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    keep = op.max(conv(x, w), axis=[1], keepdims=True)
    excl = op.sum(conv(x, w), axis=[1], exclude=True)  # reduces N, H, W: leaves C
    out = convert(Function([x], Tuple([keep, excl])))
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    expected = Function(
        [x],
        Tuple(
            [
                lt(op.max(c, axis=[3], keepdims=True), "NHWC", "NCHW"),
                op.sum(c, axis=[3], exclude=True),
            ]
        ),
    )
    expect(out, expected)


def test_pad_width_and_layer_norm_axis():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    g, b = weights(4), weights(4)
    y = op.nn.pad(conv(x, w), [(0, 0), (0, 0), (1, 2), (3, 4)])
    out = convert(Function([x], op.nn.layer_norm(y, g, b, axis=1)))
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    y2 = op.nn.pad(c, [(0, 0), (1, 2), (3, 4), (0, 0)])
    expected = Function([x], lt(op.nn.layer_norm(y2, g, b, axis=3), "NHWC", "NCHW"))
    expect(out, expected)


# -- expected IR: pooling ----------------------------------------------------------------------


def test_pooling_converted_on_its_own():
    x = x_nchw()
    desired = {"nn.max_pool2d": ["NHWC"], "nn.global_avg_pool2d": ["NHWC"]}
    out = convert(Function([x], op.nn.global_avg_pool2d(op.nn.max_pool2d(x, (2, 2)))), desired)
    body = op.nn.global_avg_pool2d(
        op.nn.max_pool2d(lt(x, "NCHW", "NHWC"), (2, 2), layout="NHWC"), layout="NHWC"
    )
    expect(out, Function([x], lt(body, "NHWC", "NCHW")))


def test_pooling_follows_a_converted_conv():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    y = op.nn.avg_pool2d(op.nn.max_pool2d(conv(x, w), (2, 2), strides=(2, 2)), (2, 2))
    out = convert(Function([x], y))
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    p = op.nn.avg_pool2d(
        op.nn.max_pool2d(c, (2, 2), strides=(2, 2), layout="NHWC"), (2, 2), layout="NHWC"
    )
    expect(out, Function([x], lt(p, "NHWC", "NCHW")))


def test_pool_named_in_desired_keeps_its_layout_after_a_converted_conv():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    desired = {"nn.conv2d": ["NHWC"], "nn.max_pool2d": ["NCHW"]}
    out = convert(Function([x], op.nn.max_pool2d(conv(x, w), (2, 2))), desired)
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    expect(
        out, Function([x], op.nn.max_pool2d(lt(c, "NHWC", "NCHW"), (2, 2)))
    )


def test_global_pool_then_reshape_transforms_before_the_reshape():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    out = convert(Function([x], op.reshape(op.nn.global_avg_pool2d(conv(x, w)), [1, 4])))
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    g = op.nn.global_avg_pool2d(c, layout="NHWC")
    expect(out, Function([x], op.reshape(lt(g, "NHWC", "NCHW"), [1, 4])))


# -- expected IR: transforms that cancel -------------------------------------------------------


def test_inverse_transforms_around_a_converted_conv_cancel():
    # an NHWC input fed to an NCHW conv through explicit transforms, converted to NHWC
    x, w = var("x", shape=(1, 8, 8, 3)), weights(4, 3, 3, 3)
    body = lt(op.nn.relu(conv(lt(x, "NHWC", "NCHW"), w)), "NCHW", "NHWC")
    out = convert(Function([x], body))
    expect(
        out, Function([x], op.nn.relu(conv(x, hwio(w), "NHWC", "HWIO")))
    )
    assert transforms(out["main"]) == []


def test_existing_back_to_back_transforms_cancel():
    x, w = x_nchw(), weights(3, 3, 3, 3)
    y = conv(x, w)
    body = op.add(
        lt(lt(y, "NCHW", "NHWC"), "NHWC", "NCHW"), lt(lt(x, "NCHW", "NHWC"), "NHWC", "NCHW")
    )
    out = convert(Function([x], body))
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    expect(out, Function([x], op.add(lt(c, "NHWC", "NCHW"), x)))
    # also when there is nothing to convert
    mod = IRModule.from_expr(Function([x], op.nn.relu(lt(lt(x, "NCHW", "NHWC"), "NHWC", "NCHW"))))
    expect(convert(mod), Function([x], op.nn.relu(x)))


def test_transpose_of_a_converted_value_only_renames_axes():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    out = convert(Function([x], op.nn.relu(op.transpose(conv(x, w), [0, 2, 3, 1]))))
    body = op.nn.relu(conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO"))
    expect(out, Function([x], body))


def test_two_converted_convs_in_a_row_of_opposite_requests_compose():
    # NHWC conv then NCHW conv, both asked to become NCHW: one transform at the input
    x = var("x", shape=(1, 8, 8, 3))
    w1, w2 = weights(3, 3, 3, 4), weights(5, 4, 3, 3)
    body = conv(lt(conv(x, w1, "NHWC", "HWIO"), "NHWC", "NCHW"), w2)
    out = convert(Function([x], body), NCHW)
    w1t = const(np.ascontiguousarray(np.transpose(w1.data, (3, 2, 0, 1))))
    expect(out, Function([x], conv(conv(lt(x, "NHWC", "NCHW"), w1t), w2)))


# -- expected IR: ops that cannot carry a layout ----------------------------------------------


def test_unsupported_op_gets_the_original_layout_back():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    y = op.nn.relu(conv(x, w))
    out = convert(Function([x], op.add(op.reshape(y, [1, -1]), op.reshape(y, [1, -1]))))
    c = op.nn.relu(conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO"))
    back = lt(c, "NHWC", "NCHW")  # one transform, shared by both users
    expect(
        out, Function([x], op.add(op.reshape(back, [1, -1]), op.reshape(back, [1, -1])))
    )
    assert len(transforms(out["main"])) == 2


def test_conv_not_in_desired_layouts_gets_its_input_back():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    out = convert(Function([x], conv(op.nn.max_pool2d(x, (2, 2)), w)), {"nn.max_pool2d": ["NHWC"]})
    p = op.nn.max_pool2d(lt(x, "NCHW", "NHWC"), (2, 2), layout="NHWC")
    expect(out, Function([x], conv(lt(p, "NHWC", "NCHW"), w)))


def test_plugin_elementwise_op_is_carried_but_a_stateful_one_is_not():
    def kernel(args, attrs):
        return args[0] * 2

    def rel(arg_types, attrs):
        return arg_types[0]

    register_op(
        "test.double", num_inputs=1, type_rel=rel, kernel=kernel, pattern=OpPattern.ELEMWISE
    )
    register_op(
        "test.noisy",
        num_inputs=1,
        type_rel=rel,
        kernel=kernel,
        pattern=OpPattern.ELEMWISE,
        stateful=True,
    )
    x, w = x_nchw(), weights(4, 3, 3, 3)
    double, noisy = Op.get("test.double"), Op.get("test.noisy")
    out = convert(Function([x], Call(noisy, [Call(double, [conv(x, w)])])))
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    expected = Function([x], Call(noisy, [lt(Call(double, [c]), "NHWC", "NCHW")]))
    expect(out, expected)


# -- expected IR: lets, ifs, tuples, closures, globals ----------------------------------------


def test_let_bound_values_keep_the_new_layout_with_a_new_annotation():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    a = var("a", shape=(1, 4, 8, 8))
    b = Var("b")
    out = convert(Function([x], Let(a, conv(x, w), Let(b, op.nn.relu(a), op.add(b, a)))))
    a2 = var("a", shape=(1, 8, 8, 4))
    b2 = Var("b")
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    expected = Function(
        [x], Let(a2, c, Let(b2, op.nn.relu(a2), lt(op.add(b2, a2), "NHWC", "NCHW")))
    )
    expect(out, expected)


def test_if_with_branches_in_the_same_layout_is_carried():
    x, w1, w2 = x_nchw(), weights(4, 3, 3, 3), weights(4, 3, 3, 3)
    cond = op.greater(op.sum(x), const(np.float32(0)))
    out = convert(Function([x], op.nn.relu(If(cond, conv(x, w1), op.negative(conv(x, w2))))))
    xt = lt(x, "NCHW", "NHWC")
    branch = If(
        cond, conv(xt, hwio(w1), "NHWC", "HWIO"), op.negative(conv(xt, hwio(w2), "NHWC", "HWIO"))
    )
    expect(out, Function([x], lt(op.nn.relu(branch), "NHWC", "NCHW")))


def test_if_with_branches_in_different_layouts_transforms_each():
    x, w = x_nchw(), weights(3, 3, 3, 3)
    cond = op.greater(op.sum(x), const(np.float32(0)))
    out = convert(Function([x], If(cond, conv(x, w), op.nn.relu(x))))
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    expect(
        out, Function([x], If(cond, lt(c, "NHWC", "NCHW"), op.nn.relu(x)))
    )


def test_closure_capturing_a_converted_value_and_converting_inside():
    x, w1, w2 = x_nchw(), weights(4, 3, 3, 3), weights(4, 4, 3, 3)
    outer = conv(x, w1)
    p = var("p", shape=(1, 4, 8, 8))
    f = Function([p], op.add(conv(p, w2), outer))
    out = convert(Function([x], Call(f, [op.nn.relu(outer)])))
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w1), "NHWC", "HWIO")
    f2 = Function(
        [p], lt(op.add(conv(lt(p, "NCHW", "NHWC"), hwio(w2), "NHWC", "HWIO"), c), "NHWC", "NCHW")
    )
    expect(
        out, Function([x], Call(f2, [lt(op.nn.relu(c), "NHWC", "NCHW")]))
    )


def test_globals_are_converted_independently_and_keep_their_signatures():
    x, w1, w2 = x_nchw(), weights(4, 3, 3, 3), weights(4, 4, 3, 3)
    p = var("p", shape=(1, 4, 8, 8))
    helper = GlobalVar("helper")
    mod = IRModule(
        {
            GlobalVar("main"): Function([x], Call(helper, [conv(x, w1)])),
            helper: Function([p], op.nn.relu(conv(p, w2))),
        }
    )
    out = convert(mod)
    c = conv(lt(x, "NCHW", "NHWC"), hwio(w1), "NHWC", "HWIO")
    expect(out, Function([x], Call(helper, [lt(c, "NHWC", "NCHW")])))
    h = op.nn.relu(conv(lt(p, "NCHW", "NHWC"), hwio(w2), "NHWC", "HWIO"))
    expect(out, Function([p], lt(h, "NHWC", "NCHW")), "helper")
    check_semantics(ConvertLayout(NHWC), mod)


def test_nested_primitive_function_is_left_alone():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    p = var("p", shape=(1, 3, 8, 8))
    prim = Function([p], conv(p, w), attrs={"Primitive": 1})
    mod = infer_type(IRModule.from_expr(Function([x], Call(prim, [x]))))
    assert convert(mod) is mod


def test_tuple_result_fields_go_back_separately():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    c = conv(x, w)
    t = Tuple([c, x])
    out = convert(Function([x], Tuple([TupleGetItem(t, 0), t])))
    c2 = conv(lt(x, "NCHW", "NHWC"), hwio(w), "NHWC", "HWIO")
    t2 = Tuple([c2, x])
    field = lt(TupleGetItem(t2, 0), "NHWC", "NCHW")
    expected = Function([x], Tuple([field, Tuple([lt(c2, "NHWC", "NCHW"), x])]))
    expect(out, expected)


# -- let blocks used as values in two layouts ----------------------------------------------------

_SIGNATURE = "def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {\n"
_COND = "%9 = greater(sum(%x), 0f32);\n"
_ZEROS = 'zeros(shape=[1, 4, 6, 6], dtype="float32")'
# Each program uses the let block %0 (its conv converted to NHWC) as a value both in the
# new layout and in the original one; converting it by copying the block bound %t twice.
SHARED_LET_BLOCKS = {
    "issue": "%0 = { let %t = nn.conv2d(%x, %w); %t };\n"
    "%1 = nn.relu(%0);\n(%1, reshape(%0, newshape=[-1]))",
    "chain": "%0 = { let %t = nn.conv2d(%x, %w); let %u = nn.relu(%t); %u };\n"
    "(nn.relu(%0), reshape(%0, newshape=[-1]))",
    "inner_block_shared": "%0 = { let %u = nn.conv2d(%x, %w); %u };\n"
    "%1 = { let %t = sum(%x); %0 };\n(nn.relu(%1), reshape(%0, newshape=[-1]))",
    "if_branch": _COND + "%0 = { let %t = nn.conv2d(%x, %w); %t };\n"
    f"%1 = if (%9) {{ %0 }} else {{ {_ZEROS} }};\n(nn.relu(%0), %1)",
    "nested_function_body": "%0 = { let %t = nn.conv2d(%x, %w); %t };\n"
    "%1 = fn () { %0 };\n(nn.relu(%0), %1())",
    "tuple_field": "%0 = { let %t = nn.conv2d(%x, %w); %t };\n"
    "%1 = (%0, %x);\n(nn.relu(%1.0), %1)",
    "tuple_field_and_use": "%0 = { let %t = nn.conv2d(%x, %w); %t };\n"
    "%1 = (%0, %x);\n(nn.relu(%0), %1)",
    "block_of_a_tuple": "%0 = { let %t = (nn.conv2d(%x, %w), %x); %t };\n(nn.relu(%0.0), %0)",
}
NHWC_OPTION = {DESIRED_LAYOUTS: "nn.conv2d=NHWC,default"}


def _shared_let_module(name):
    return irpass.parse(_SIGNATURE + SHARED_LET_BLOCKS[name] + "\n}")


def test_let_block_used_in_two_layouts_is_converted_once():
    mod = _shared_let_module("issue")
    out = run(Sequential([get_pass("InferType"), ConvertLayout(NHWC)]), mod)
    x, w = out["main"].params
    t = Var("t")
    c = op.nn.conv2d(
        lt(x, "NCHW", "NHWC"), lt(w, "OIHW", "HWIO"), data_layout="NHWC", kernel_layout="HWIO"
    )
    block = Let(t, c, t)
    # one block in NHWC; the reshape gets it back through a transform of the whole block
    relu = lt(op.nn.relu(block), "NHWC", "NCHW")
    expected = Function([x, w], Tuple([relu, op.reshape(lt(block, "NHWC", "NCHW"), [-1])]))
    expect(out, expected)


@pytest.mark.parametrize("name", sorted(SHARED_LET_BLOCKS))
def test_let_block_used_in_two_layouts_is_well_formed_and_keeps_its_meaning(name):
    mod = _shared_let_module(name)
    infer = get_pass("InferType")
    # check_semantics checks well_formed and compares outputs on random inputs
    check_semantics([infer, ConvertLayout(NHWC)], mod)
    check_semantics([infer, AlterOpLayout], mod, config=NHWC_OPTION)


@pytest.mark.parametrize("name", ["issue", "if_branch", "nested_function_body", "tuple_field"])
def test_let_block_used_in_two_layouts_through_the_default_pipeline(name):
    from irpass.transform import default_pipeline

    mod = _shared_let_module(name)
    out = check_semantics(default_pipeline(3), mod, config=NHWC_OPTION)
    # the option took effect: the NHWC conv is there (FuseOps may have wrapped it)
    assert 'data_layout="NHWC"' in out.astext(show_meta_data=False)


# -- nothing to do -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mlp", "transformer"])
def test_models_without_conv_come_back_as_the_same_module(name):
    mod = infer_type(models.MODELS[name]())
    assert convert(mod) is mod


def test_empty_desired_layouts_is_a_no_op():
    mod = infer_type(models.resnet(num_blocks=1))
    assert run(ConvertLayout({}), mod) is mod


def test_unchanged_function_keeps_its_identity_next_to_a_changed_one():
    x, w = x_nchw(), weights(4, 3, 3, 3)
    y = var("y", shape=(2, 2))
    keep = Function([y], op.nn.relu(y))
    mod = infer_type(
        IRModule({GlobalVar("main"): Function([x], conv(x, w)), GlobalVar("other"): keep})
    )
    out = convert(mod)
    assert out["other"] is mod["other"] and out["main"] is not mod["main"]


# -- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("desired", "error", "match"),
    [
        ("NHWC", TypeError, "must be a dict mapping op names"),
        (
            {"nn.conv3d": ["NHWC"]},
            ValueError,
            "cannot convert the layout of op 'nn.conv3d'.*nn.conv2d",
        ),
        ({"nn.dense": ["NC"]}, ValueError, "cannot convert the layout of op 'nn.dense'"),
        ({"nn.conv2d": "NHWC"}, TypeError, r"desired_layouts\['nn.conv2d'\] must be a list"),
        ({"nn.conv2d": []}, ValueError, "must be .data_layout."),
        ({"nn.conv2d": ["NHWC", "HWIO", "x"]}, ValueError, "must be .data_layout."),
        ({"nn.conv2d": ["NCWH", "default"]}, ValueError, "unsupported data layout 'NCWH'"),
        ({"nn.conv2d": ["default"]}, ValueError, "unsupported data layout 'default'"),
        ({"nn.conv2d": ["NHWC", "OIHX"]}, ValueError, "unsupported kernel layout 'OIHX'"),
        ({"nn.max_pool2d": ["NHWC", "default"]}, ValueError, r"must be \[layout\]"),
        ({"nn.max_pool2d": ["NCDHW"]}, ValueError, "unsupported data layout"),
        ({1: ["NHWC"]}, TypeError, "op names must be strings"),
    ],
)
def test_bad_desired_layouts(desired, error, match):
    with pytest.raises(error, match=match):
        ConvertLayout(desired)


def test_bad_desired_layouts_through_the_registry():
    with pytest.raises(ValueError, match="nn.max_pool2d"):
        get_pass("ConvertLayout", desired_layouts={"nn.max_pool": ["NHWC"]})


def test_ill_typed_module_is_a_pass_error_and_is_left_unchanged():
    x, w = x_nchw(), weights(4, 5, 3, 3)  # 5 input channels for 3
    mod = IRModule.from_expr(Function([x], conv(x, w)))
    before = str(mod)
    with pytest.raises(irpass.PassError, match="ConvertLayout"), PassContext(opt_level=3):
        ConvertLayout(NHWC)(mod)  # untyped: the pass infers the types itself
    with pytest.raises(irpass.PassError, match="InferType"), PassContext(opt_level=3):
        Sequential([get_pass("InferType"), ConvertLayout(NHWC)])(mod)
    assert str(mod) == before


# -- depth ---------------------------------------------------------------------------------------

DEPTH = 30_000


def test_deep_dataflow_chain():
    x, w = x_nchw((1, 2, 4, 4)), weights(3, 2, 3, 3)
    y = conv(x, w)
    for i in range(DEPTH):
        y = op.nn.relu(y) if i % 2 else op.add(y, const(np.float32(0.001)))
    mod = IRModule.from_expr(Function([x], y))
    out = convert(mod)
    lts = transforms(out["main"])
    assert len(lts) == 2 and lts[0].args[0] is x and out["main"].body is lts[1]
    args = {"x": np.ones((1, 2, 4, 4), "float32")}
    np.testing.assert_allclose(
        irpass.evaluate(out, **args), irpass.evaluate(mod, **args), rtol=1e-5
    )


def test_deep_let_chain():
    x, w = x_nchw((1, 2, 4, 4)), weights(3, 2, 3, 3)
    vs = [Var(f"v{i}") for i in range(DEPTH)]
    body = vs[-1]
    for i in range(DEPTH - 1, 0, -1):
        body = Let(vs[i], op.nn.relu(vs[i - 1]), body)
    mod = IRModule.from_expr(Function([x], Let(vs[0], conv(x, w), body)))
    out = convert(mod)
    assert len(transforms(out["main"])) == 2
    args = {"x": np.ones((1, 2, 4, 4), "float32")}
    np.testing.assert_allclose(
        irpass.evaluate(out, **args), irpass.evaluate(mod, **args), rtol=1e-5
    )


# -- meaning: example networks ----------------------------------------------------------------


def _model_cases():
    cases = [(name, build, d) for name, build in models.MODELS.items() for d in ("NHWC", "NCHW")]
    cases += [("resnet_nhwc", lambda: models.resnet(layout="NHWC"), d) for d in ("NCHW", "NHWC")]
    return cases


@pytest.mark.parametrize(
    ("name", "build", "layout"), _model_cases(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_models_keep_their_meaning(name, build, layout):
    desired = {
        "nn.conv2d": [layout, "default"],
        "nn.max_pool2d": [layout],
        "nn.avg_pool2d": [layout],
        "nn.global_avg_pool2d": [layout],
    }
    check_semantics(ConvertLayout({"nn.conv2d": [layout, "default"]}), build())
    check_semantics(ConvertLayout(desired), build())


def _users(func):
    users: dict = {}

    def f(n):
        for c in n.children():
            users.setdefault(c, []).append(n)

    post_order_visit(func, f)
    return users


@pytest.mark.parametrize("name", ["resnet", "mobilenet"])
def test_converted_networks_have_transforms_only_at_input_and_output(name):
    mod = models.MODELS[name]()
    out = check_semantics(ConvertLayout(NHWC), mod)
    main = out["main"]
    lts = transforms(main)
    users = _users(main)
    assert len(lts) == 2
    first, last = lts
    assert first.args[0] is main.params[0] and first.attrs["dst_layout"] == "NHWC"
    assert [u.op.name for u in users[last]] == ["reshape"]
    for n in users:
        if (
            type(n) is Call
            and type(n.op) is Op
            and n.op.name in ("nn.conv2d", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d")
        ):
            assert "NCHW" not in (n.attrs.get("data_layout"), n.attrs.get("layout"))


def test_nhwc_resnet_back_to_nchw_and_round_trip():
    mod = models.resnet(layout="NHWC")
    nchw = check_semantics(ConvertLayout(NCHW), mod)
    assert len(transforms(nchw["main"])) == 2
    again = check_semantics(ConvertLayout(NHWC), nchw)
    # back in NHWC: every transform cancelled
    assert transforms(again["main"]) == []


# -- meaning: random programs -------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sts.modules())
def test_core_random_programs_keep_their_meaning(mod):
    mod = infer_type(mod)
    convertible = any(set(_CONVERTIBLE) & set(_op_names(f)) for f in mod.functions.values())
    if not convertible:  # nothing to convert: the very module comes back
        assert convert(mod) is mod
        assert run(AlterOpLayout, mod, config={DESIRED_LAYOUTS: "nn.conv2d=NHWC"}) is mod
    check_semantics(ConvertLayout(NHWC), mod, seeds=(0,))
    check_semantics(AlterOpLayout, mod, seeds=(0,), config={DESIRED_LAYOUTS: "nn.conv2d=NHWC"})


def _op_names(func):
    names = set()
    post_order_visit(
        func, lambda n: names.add(n.op.name) if type(n) is Call and type(n.op) is Op else None
    )
    return names


_ANY = st.sampled_from


@st.composite
def conv_nets(draw, max_steps=14):
    """A random network over 4-D tensors with convolutions and pooling in NCHW and NHWC,
    layout-agnostic ops, lets (chained and as blocks used as values), ifs, tuples,
    closures and a second global function."""
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)

    def w(*shape):
        return const((rng.standard_normal(shape) * 0.4).astype("float32"))

    shape0 = (2, draw(_ANY([2, 3])), draw(_ANY([5, 6])), draw(_ANY([4, 7])))
    x = var("x", shape=shape0)
    params = [x]
    pool = [(x, shape0)]  # 4-D values
    tails = []  # other values that may end up in the result
    shown = []  # values that do end up in the result
    lets = []

    def pick():
        k = draw(st.integers(0, len(pool) - 1))
        return pool[-1 - k % 3] if draw(st.booleans()) else pool[k]

    def conv_of(v, s, weight_params=True):
        layout = draw(_ANY(["NCHW", "NHWC"]))
        dims = dict(zip(layout, s, strict=True))
        c = dims["C"]
        groups = c if draw(st.integers(0, 4)) == 0 else 1
        oc = c if groups > 1 else draw(_ANY([2, 3, 4]))
        k = draw(_ANY([1, 3]))
        stride = 2 if min(dims["H"], dims["W"]) >= 4 and draw(st.integers(0, 3)) == 0 else 1
        kl = draw(_ANY(["OIHW", "HWIO", "OHWI"]))
        kdims = {"O": oc, "I": c // groups, "H": k, "W": k}
        kshape = tuple(kdims[ch] for ch in kl)
        if weight_params and draw(st.integers(0, 5)) == 0:
            weight = var(f"w{len(params)}", shape=kshape)
            params.append(weight)
        else:
            weight = w(*kshape)
        out_layout = draw(_ANY(["", "", "NCHW", "NHWC"]))
        y = op.nn.conv2d(
            v,
            weight,
            strides=stride,
            padding=k // 2,
            groups=groups,
            data_layout=layout,
            kernel_layout=kl,
            out_layout=out_layout,
        )
        oh = (dims["H"] - 1) // stride + 1
        ow = (dims["W"] - 1) // stride + 1
        od = {"N": dims["N"], "C": oc, "H": oh, "W": ow}
        return y, tuple(od[ch] for ch in (out_layout or layout))

    def pool_of(v, s):
        layout = draw(_ANY(["NCHW", "NHWC"]))
        dims = dict(zip(layout, s, strict=True))
        kind = draw(_ANY(["max", "avg", "global"]))
        if kind == "global" or min(dims["H"], dims["W"]) < 2:
            od = dict(dims, H=1, W=1)
            return op.nn.global_avg_pool2d(v, layout=layout), tuple(od[ch] for ch in layout)
        stride = draw(_ANY([1, 2]))
        fn = op.nn.max_pool2d if kind == "max" else op.nn.avg_pool2d
        od = dict(dims, H=(dims["H"] - 2) // stride + 1, W=(dims["W"] - 2) // stride + 1)
        return fn(v, (2, 2), strides=(stride, stride), layout=layout), tuple(
            od[ch] for ch in layout
        )

    for _ in range(draw(st.integers(1, max_steps))):
        v, s = pick()
        kind = draw(
            _ANY(
                [
                    "conv",
                    "conv",
                    "conv",
                    "pool",
                    "unary",
                    "binary",
                    "bias",
                    "bn",
                    "concat",
                    "softmax",
                    "reduce",
                    "let",
                    "block",
                    "if",
                    "transpose",
                    "lt",
                    "pad",
                    "tuple",
                    "closure",
                    "reshape",
                    "split",
                ]
            )
        )
        if kind == "conv":
            pool.append(conv_of(v, s))
        elif kind == "pool":
            pool.append(pool_of(v, s))
        elif kind == "unary":
            fn = draw(_ANY([op.nn.relu, op.tanh, op.negative, op.sigmoid]))
            pool.append((fn(v), s))
        elif kind == "binary":
            fn = draw(_ANY([op.add, op.multiply, op.subtract, op.maximum]))
            other_kind = draw(_ANY(["same", "c11", "1c11", "scalar", "param", "param_c11", "w"]))
            c_axis = draw(_ANY([1, 3]))
            if other_kind == "same":
                cands = [p for p in pool if p[1] == s]
                other = cands[draw(st.integers(0, len(cands) - 1))][0]
            elif other_kind == "c11":
                other = w(*s[c_axis:])
            elif other_kind == "1c11":
                other = w(*[d if i == c_axis else 1 for i, d in enumerate(s)])
            elif other_kind == "scalar":
                other = const(np.float32(0.5))
            elif other_kind == "w":
                other = w(s[-1])
            else:
                shape = s if other_kind == "param" else s[c_axis:]
                other = var(f"p{len(params)}", shape=shape)
                params.append(other)
            pair = (v, other) if draw(st.booleans()) else (other, v)
            pool.append((fn(*pair), s))
        elif kind == "bias":
            axis = draw(_ANY([1, 3, -1]))
            pool.append((op.nn.bias_add(v, w(s[axis]), axis=axis), s))
        elif kind == "bn":
            axis = draw(_ANY([1, 3]))
            c = s[axis]
            bn = op.nn.batch_norm(v, w(c), w(c), w(c), const(np.full(c, 1.5, "float32")), axis=axis)
            pool.append((bn[0], s))
            if draw(st.booleans()):
                tails.append(bn)
        elif kind == "concat":
            axis = draw(_ANY([0, 1, 2, 3]))
            cands = [
                p
                for p in pool
                if all(a == b for i, (a, b) in enumerate(zip(p[1], s, strict=True)) if i != axis)
            ]
            other, os_ = cands[draw(st.integers(0, len(cands) - 1))]
            shape = tuple(
                a + b if i == axis else a for i, (a, b) in enumerate(zip(s, os_, strict=True))
            )
            pool.append((op.concatenate([v, other], axis=axis), shape))
        elif kind == "split":
            axis = draw(_ANY([0, 1, 2, 3]))
            parts = op.split(v, [1], axis=axis) if s[axis] > 1 else op.split(v, 1, axis=axis)
            first = tuple(1 if i == axis else d for i, d in enumerate(s))
            pool.append((parts[0], first))
        elif kind == "softmax":
            pool.append((op.nn.softmax(v, axis=draw(_ANY([1, -1, 2]))), s))
        elif kind == "reduce":
            axes = draw(_ANY([[1], [2, 3], [0, 1], [1, 2], None]))
            keep = draw(st.booleans())
            fn = draw(_ANY([op.sum, op.mean, op.max]))
            y = fn(v, axis=axes, keepdims=keep)
            if keep:
                pool.append(
                    (y, tuple(1 if axes is None or i in axes else d for i, d in enumerate(s)))
                )
            else:
                tails.append(y)
        elif kind == "let":
            lv = var(f"l{len(lets)}", shape=s) if draw(st.booleans()) else Var(f"l{len(lets)}")
            lets.append((lv, v))
            pool.append((lv, s))
        elif kind == "block":
            # a let block used as a value: picked again, it may be needed in two layouts
            bv = Var(f"b{len(pool)}")
            inner, inner_shape = conv_of(v, s)
            if inner_shape != s:
                inner = v
            block = Let(bv, inner, op.nn.relu(bv) if draw(st.booleans()) else bv)
            pool.append((block, s))
            shown.append(block)  # in the result as well: used twice if picked again
        elif kind == "if":
            cond = op.greater(op.sum(pick()[0]), const(np.float32(0)))
            a, _ = conv_of(v, s) if draw(st.booleans()) else (op.nn.relu(v), s)
            if _ != s:
                a = op.nn.relu(v)
            b = op.negative(v) if draw(st.booleans()) else op.nn.relu(v)
            pool.append((If(cond, a, b), s))
        elif kind == "transpose":
            perm = draw(st.permutations([0, 1, 2, 3]))
            pool.append((op.transpose(v, perm), tuple(s[i] for i in perm)))
        elif kind == "lt":
            src, dst = draw(_ANY([("NCHW", "NHWC"), ("NHWC", "NCHW")]))
            pool.append((lt(v, src, dst), tuple(s[src.index(ch)] for ch in dst)))
        elif kind == "pad":
            width = [(0, 0), (0, 1), (1, 0), (2, 1)]
            pool.append(
                (op.nn.pad(v, width), tuple(d + a + b for d, (a, b) in zip(s, width, strict=True)))
            )
        elif kind == "tuple":
            other, os_ = pick()
            t = Tuple([v, other])
            pool.append((TupleGetItem(t, 1), os_))
            pool.append((TupleGetItem(t, 0), s))
        elif kind == "closure":
            p = var("p", shape=s)
            body, bs = conv_of(p, s) if draw(st.booleans()) else (op.nn.relu(p), s)
            captured, cs = pick()
            if cs == bs:
                body = op.add(body, captured)
            pool.append((Call(Function([p], body), [v]), bs))
        elif kind == "reshape":
            tails.append(op.reshape(v, [s[0], -1]))

    last, _ = pool[-1]
    results = [last] + ([tails[-1]] if tails and draw(st.booleans()) else []) + shown
    funcs = {}
    if draw(st.booleans()):
        # a second global with its own conv, called from main
        v, s = pick()
        p = var("p", shape=s)
        hbody, hs = conv_of(p, s, weight_params=False)
        helper = GlobalVar("helper")
        funcs[helper] = Function([p], op.nn.relu(hbody), TensorType(hs, "float32"))
        results.append(Call(helper, [v]))
    body = results[0] if len(results) == 1 else Tuple(results)
    for lv, value in reversed(lets):
        body = Let(lv, value, body)
    return IRModule({GlobalVar("main"): Function(params, body), **funcs})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv_nets(), st.sampled_from(["NHWC", "NCHW"]), st.booleans())
def test_random_conv_networks_keep_their_meaning(mod, layout, with_pools):
    desired = {"nn.conv2d": [layout, draw_kernel(layout)]}
    if with_pools:
        desired.update({"nn.max_pool2d": [layout], "nn.global_avg_pool2d": [layout]})
    out = check_semantics(ConvertLayout(desired), mod, seeds=(0,))
    # converting again to the same layouts changes nothing more
    assert convert(out, desired) is out
    for func in out.functions.values():
        for t in transforms(func):
            # transforms never stack, and constants are transposed, not transformed
            arg = t.args[0]
            assert not (type(arg) is Call and arg.op is Op.get("layout_transform"))
            assert type(arg) is not Constant


def draw_kernel(layout):
    return "default" if layout == "NHWC" else "OIHW"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv_nets())
def test_random_conv_networks_round_trip(mod):
    there = check_semantics(ConvertLayout(NHWC), mod, seeds=(0,))
    check_semantics(ConvertLayout(NCHW), there, seeds=(0,))


# -- AlterOpLayout -------------------------------------------------------------------------------


@pytest.fixture
def hooks():
    """Alter-layout hooks a test registers are removed after it."""
    before = set(list_alter_layouts())
    yield
    for name in set(list_alter_layouts()) - before:
        unregister_alter_layout(name)


def _tvm_doc_example():
    x = var("x", shape=(1, 2, 3))
    c = const(np.array([1, 2, 3], "float32").reshape(1, 1, 3) * np.ones((1, 2, 3), "float32"))
    y = op.add(x, op.multiply(op.add(c, c), const(np.float32(2))))
    z = op.add(y, c)
    z1 = op.add(y, c)
    return IRModule.from_expr(Function([x], op.add(z, z1)))


def test_alter_op_layout_without_hooks_returns_the_same_function():
    mod = infer_type(_tvm_doc_example())
    assert run(AlterOpLayout, mod) is mod
    resnet = infer_type(models.resnet(num_blocks=1))
    assert run(AlterOpLayout, resnet) is resnet


def test_alter_op_layout_in_the_tvm_doc_pipeline_changes_nothing_the_others_did():
    mod = _tvm_doc_example()
    names = ["InferType", "FoldConstant", "EliminateCommonSubexpr"]
    with PassContext(opt_level=3):
        without = Sequential([get_pass(n) for n in names])(mod)
        with_alter = Sequential([get_pass(n) for n in [*names, "AlterOpLayout"]])(mod)
    assert_structural_equal(with_alter, without)


def test_alter_op_layout_info():
    assert AlterOpLayout.info.opt_level == 3 and AlterOpLayout.info.required == ("InferType",)
    p = ConvertLayout(NHWC)
    assert p.info.opt_level == 3 and p.info.required == ("InferType",)
    assert p.info.name == "ConvertLayout" and p.desired_layouts == {
        "nn.conv2d": ("NHWC", "default")
    }


def test_config_option_is_declared():
    (option,) = CONFIG_OPTIONS
    assert option.key == DESIRED_LAYOUTS and option.value_type is str and option.default == ""


def test_config_option_converts_like_convert_layout():
    mod = models.resnet(num_blocks=1)
    out = check_semantics(AlterOpLayout, mod, config={DESIRED_LAYOUTS: "nn.conv2d=NHWC,default"})
    assert_structural_equal(out, convert(mod))
    desired = {"nn.conv2d": ["NHWC"], "nn.max_pool2d": ["NHWC"]}
    text = " nn.conv2d = NHWC ; nn.max_pool2d=NHWC;"
    assert_structural_equal(
        run(AlterOpLayout, mod, config={DESIRED_LAYOUTS: text}), convert(mod, desired)
    )


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("nn.conv2d", "is not 'op=layout"),
        ("nn.conv2d=NHWC;nn.conv2d=NCHW", "given twice"),
        ("nn.conv2d=NCWH", "unsupported data layout"),
        ("nn.dense=NC", "cannot convert the layout of op 'nn.dense'"),
    ],
)
def test_bad_config_option(text, match):
    with pytest.raises(ValueError, match=match):
        parse_option(text)
    x, w = x_nchw(), weights(4, 3, 3, 3)
    with pytest.raises(irpass.PassError, match=match):
        run(AlterOpLayout, Function([x], conv(x, w)), config={DESIRED_LAYOUTS: text})


def test_parse_option():
    assert parse_option("") == {}
    assert parse_option("nn.conv2d=NHWC,OHWI;nn.avg_pool2d=NCHW") == {
        "nn.conv2d": ["NHWC", "OHWI"],
        "nn.avg_pool2d": ["NCHW"],
    }
    assert parse_option("nn.conv2d=NHWC") == {"nn.conv2d": ["NHWC", "default"]}


def _conv_to_nhwc_hook(call, arg_types):
    """What a target's hook would do: NHWC conv between transforms."""
    if call.attrs["data_layout"] != "NCHW":
        return None
    data, weight = call.args
    new = op.nn.conv2d(
        lt(data, "NCHW", "NHWC"),
        lt(weight, "OIHW", "HWIO"),
        padding=call.attrs["padding"],
        data_layout="NHWC",
        kernel_layout="HWIO",
    )
    return lt(new, "NHWC", "NCHW")


def test_registered_hook_is_applied_and_its_transforms_cancel(hooks):
    register_alter_layout("nn.conv2d", _conv_to_nhwc_hook)
    x, w1, w2 = x_nchw(), weights(4, 3, 3, 3), weights(4, 4, 3, 3)
    mod = IRModule.from_expr(Function([x], conv(op.nn.relu(conv(x, w1)), w2)))
    out = check_semantics(AlterOpLayout, mod)
    # the hook transformed the constant weights: folded into constants too
    assert_structural_equal(out, convert(mod))


def test_hook_returning_none_keeps_the_call(hooks):
    seen = []

    @register_alter_layout("nn.conv2d")
    def hook(call, arg_types):
        seen.append(tuple(t.shape for t in arg_types))
        return None

    x, w = x_nchw(), weights(4, 3, 3, 3)
    mod = infer_type(IRModule.from_expr(Function([x], conv(x, w))))
    assert run(AlterOpLayout, mod) is mod
    assert seen == [((1, 3, 8, 8), (4, 3, 3, 3))]


def test_hook_falls_back_to_the_config_conversion(hooks):
    register_alter_layout("nn.conv2d", lambda call, types: None)
    mod = models.resnet(num_blocks=1)
    out = run(AlterOpLayout, mod, config={DESIRED_LAYOUTS: "nn.conv2d=NHWC"})
    assert_structural_equal(out, convert(mod))


def test_hook_errors_are_reported_against_the_call(hooks):
    def broken(call, arg_types):
        raise RuntimeError("no NHWC kernel")

    register_alter_layout("nn.conv2d", broken)
    x, w = x_nchw(), weights(4, 3, 3, 3)
    mod = IRModule.from_expr(Function([x], conv(x, w)))
    with pytest.raises(
        irpass.PassError,
        match="alter-layout hook of 'nn.conv2d' raised RuntimeError: no NHWC kernel",
    ):
        run(AlterOpLayout, mod)
    register_alter_layout("nn.conv2d", lambda call, types: "nope", override=True)
    with pytest.raises(irpass.PassError, match="returned str 'nope'"):
        run(AlterOpLayout, mod)


def test_hook_result_of_the_wrong_type_is_reported(hooks):
    # an NHWC result where the NCHW one was expected: the add after it no longer types
    register_alter_layout("nn.conv2d", lambda call, types: op.nn.relu(lt(call, "NCHW", "NHWC")))
    x, w, y = x_nchw(), weights(4, 3, 3, 3), var("y", shape=(1, 4, 8, 8))
    mod = IRModule.from_expr(Function([x, y], op.add(conv(x, w), y)))
    with pytest.raises(irpass.PassError, match=r"hooks \(nn.conv2d\) made the function ill-typed"):
        run(AlterOpLayout, mod)


def test_register_alter_layout_api(hooks):
    def hook(call, arg_types):
        return None

    assert register_alter_layout("nn.max_pool2d", hook) is hook
    assert "nn.max_pool2d" in list_alter_layouts()
    with pytest.raises(ValueError, match="already has an alter-layout hook"):
        register_alter_layout("nn.max_pool2d", hook)
    register_alter_layout("nn.max_pool2d", hook, override=True)
    with pytest.raises(TypeError, match="must be callable"):
        register_alter_layout("nn.avg_pool2d", 3)
    with pytest.raises(TypeError, match="op_name"):
        register_alter_layout("", hook)
    unregister_alter_layout("nn.max_pool2d")
    unregister_alter_layout("nn.max_pool2d")
    assert "nn.max_pool2d" not in list_alter_layouts()


# -- documentation -------------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["ConvertLayout.md", "AlterOpLayout.md"])
def test_doc_page_example_runs(page, hooks):
    text = (DOCS / page).read_text()
    name = page.removesuffix(".md")
    assert text.startswith(f"### {name}\n")
    assert "*function pass, opt level 3; requires InferType" in text
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(DOCS / page), "exec"), {})
