"""Export of every core op: each small module is exported, checked with
``onnx.checker.check_model(full_check=True)``, run in onnxruntime (graph optimizations off)
and compared with ``irpass.evaluate``; opset-dependent ops at opsets 9, 13 and 17."""

from __future__ import annotations

import irpass
import numpy as np
import onnx
import pytest
from irpass import op
from irpass.ir import Function, IRModule, Op, Tuple, list_ops, var
from irpass.op.nn.depth_space import depth_to_space, space_to_depth
from irpass.op.nn.norm import group_norm, instance_norm
from irpass.op.scatter import scatter_elements, scatter_nd
from irpass.op.sort import topk
from irpass.testing import random_inputs
from irpass_onnx import OnnxExportError, from_onnx
from irpass_onnx.export import supported_ops, to_onnx
from irpass_onnx.export.emitters_index import RANGE_CONSTANT_MAX
from irpass_onnx.testing import assert_outputs_close
from irpass_onnx.testing import run_onnxruntime as run_ort
from onnx import TensorProto, helper

RTOL, ATOL = 1e-5, 1e-6
OPSETS = (9, 13, 17)
rng = np.random.default_rng(0)


def check_export(mod: IRModule, opset: int = 17, inputs: dict | None = None,
                 rtol: float = RTOL, atol: float = ATOL):
    """Export, validate, run in onnxruntime and compare with irpass.evaluate; the model."""
    model = to_onnx(mod, opset=opset)
    onnx.checker.check_model(model, full_check=True)
    inputs = random_inputs(mod, seed=1) if inputs is None else inputs
    expected = irpass.evaluate(mod, **inputs)
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    got = run_ort(model, inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        e = np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype
        assert_outputs_close([g], [e], rtol=rtol, atol=atol, scaled_atol=atol)
    return model


def fn(params, body) -> IRModule:
    return IRModule.from_expr(Function(params, body))


def const(*shape, dtype="float32", low=None):
    data = rng.standard_normal(shape).astype(dtype)
    if low is not None:
        data = np.abs(data) + low
    return irpass.const(data)


X4 = (2, 3, 5, 6)


def _x(shape=X4, dtype="float32", name="x"):
    return var(name, shape=shape, dtype=dtype)


# -- one builder per case: name -> (module, opsets, inputs or None) ----------------------------


def _unary(name):
    def build():
        x = _x()
        return fn([x], getattr(op, name)(x))
    return build


def _positive_unary(name):
    def build():
        x = _x()
        return fn([x], getattr(op, name)(op.add(op.abs(x), irpass.const(np.float32(0.5)))))
    return build


def _binary(name, dtype="float32"):
    def build():
        a, b = _x((2, 3, 4), dtype, "a"), _x((3, 1), dtype, "b")
        return fn([a, b], getattr(op, name)(a, b))
    return build


def _build_divide_int():
    a = _x((2, 3), "int32", "a")
    return fn([a], op.divide(a, irpass.const(np.array([2, -3, 4], "int32"))))


def _build_power():
    a = _x((2, 3), name="a")
    return fn([a], op.power(op.abs(a), irpass.const(np.float32(1.5))))


def _build_where():
    c, a, b = _x((3, 1), "bool", "c"), _x((3, 4), name="a"), _x((4,), name="b")
    return fn([c, a, b], op.where(c, a, b))


def _build_clip():
    x = _x()
    return fn([x], op.clip(x, -0.5, 0.7))


def _build_clip_half_open():
    x = _x()
    return fn([x], op.clip(x, float("-inf"), 0.3))


def _build_clip_int():
    x = _x((3, 4), "int32")
    return fn([x], op.clip(x, 1.5, 6.2))


def _build_cast():
    x = _x()
    return fn([x], op.cast(op.multiply(x, irpass.const(np.float32(3))), "int32"))


def _build_cast_same():
    x = _x()
    return fn([x], op.add(op.cast(x, "float32"), x))


def _build_reshape():
    x = _x()
    return fn([x], op.reshape(x, (0, -1, 3)))


def _build_reverse_reshape():
    x = _x((10, 5, 4))
    return fn([x], op.reverse_reshape(x, (-1, 0)))


def _build_squeeze():
    x = _x((2, 1, 3, 1))
    return fn([x], op.squeeze(x, axis=[1]))


def _build_expand_dims():
    x = _x((2, 3))
    return fn([x], op.expand_dims(x, 1, 2))


def _build_transpose():
    x = _x()
    return fn([x], op.transpose(x, (0, 2, 3, 1)))


def _build_transpose_default():
    x = _x()
    return fn([x], op.transpose(x))


def _build_layout_transform():
    x = _x()
    return fn([x], op.layout_transform(x, "NCHW", "NHWC"))


def _build_concatenate():
    a, b = _x((2, 3), name="a"), _x((2, 5), name="b")
    return fn([a, b], op.concatenate([a, b, a], axis=1))


def _build_split():
    x = _x((6, 4))
    parts = op.split(x, 3, axis=0)
    return fn([x], irpass.ir.Tuple([parts[0], parts[2]]))


def _build_split_indices():
    x = _x((2, 7))
    parts = op.split(x, (2, 5), axis=-1)
    return fn([x], op.add(parts[1], parts[1]))


def _reduce(name, **kw):
    def build():
        x = _x()
        return fn([x], getattr(op, name)(x, **kw))
    return build


def _build_reduce_special(name, shape, dtype):
    def build():
        x = _x(shape, dtype)
        return fn([x], getattr(op, name)(x, axis=1))
    return build


def _build_full():
    x = _x((2, 3))
    return fn([x], op.add(x, op.full(irpass.const(np.float32(2.5)), shape=(2, 3))))


def _build_full_var():
    x, v = _x((2, 3)), _x((), name="v")
    return fn([x, v], op.add(x, op.full(v, shape=(2, 3))))


def _build_zeros_ones():
    x = _x((2, 3))
    return fn([x], op.add(op.add(x, op.ones((2, 3))), op.zeros((3,))))


def _build_like():
    x = _x((2, 3))
    return fn([x], op.add(op.ones_like(x), op.zeros_like(x)))


def _build_shape_of():
    x = _x((2, 3))
    return fn([x], op.shape_of(x, dtype="int64"))


def _build_shape_of_narrow():
    # 200 wraps to -56 in int8 and 70000 is inf in float16, as a cast gives
    x, y = _x((1, 200)), _x((70000,), name="y")
    return fn([x, y], Tuple([op.shape_of(x, dtype="int8"), op.shape_of(y, dtype="float16")]))


def _build_conv2d():
    x = _x((1, 4, 9, 9))
    return fn([x], op.nn.conv2d(x, const(6, 2, 3, 3), strides=2, padding=(1, 0, 2, 1),
                                dilation=(1, 2), groups=2))


def _build_conv2d_nhwc():
    x = _x((1, 9, 9, 4))
    return fn([x], op.nn.conv2d(x, const(3, 3, 4, 5), padding=1, data_layout="NHWC",
                                kernel_layout="HWIO"))


def _build_conv2d_var_weight():
    x, w = _x((1, 3, 6, 6)), _x((3, 3, 3, 2), name="w")
    return fn([x, w], op.nn.conv2d(x, w, kernel_layout="HWIO", out_layout="NHWC"))


def _build_conv2d_transpose():
    x = _x((1, 4, 5, 5))
    return fn([x], op.nn.conv2d_transpose(x, const(4, 3, 3, 3), strides=2, padding=(1, 1, 0, 0),
                                          output_padding=(1, 0)))


def _build_conv2d_transpose_grouped():
    x = _x((1, 4, 4, 5))
    return fn([x], op.nn.conv2d_transpose(x, const(4, 3, 2, 2), strides=(1, 2), groups=2,
                                          dilation=(2, 1)))


def _build_conv1d():
    x = _x((1, 4, 9))
    return fn([x], op.nn.conv1d(x, const(6, 2, 3), strides=2, padding=(1, 2), dilation=2,
                                groups=2))


def _build_conv3d():
    x = _x((1, 5, 4, 6, 2))
    return fn([x], op.nn.conv3d(x, const(2, 3, 2, 2, 3), strides=(1, 2, 1), padding=1,
                                data_layout="NDHWC", kernel_layout="DHWIO"))


def _build_conv1d_transpose():
    x = _x((1, 3, 4))
    return fn([x], op.nn.conv1d_transpose(x, const(3, 2, 3), strides=2, padding=(1, 0),
                                          output_padding=1))


def _build_conv3d_transpose():
    x = _x((1, 4, 2, 3, 2))
    return fn([x], op.nn.conv3d_transpose(x, const(4, 1, 2, 2, 2), strides=(2, 1, 1), groups=2))


def _pool_nd(name, shape, **kw):
    def build():
        x = _x(shape)
        return fn([x], getattr(op.nn, name)(x, **kw))

    return build


def _build_resize(n, shape, size, **kw):
    def build():
        x = _x(shape)
        return fn([x], getattr(op.image, f"resize{n}d")(x, size, **kw))

    return build


def _build_grid_sample(n, **kw):
    def build():
        x = _x((1, 2, 3, 4, 5)[: n + 2])
        g = _x((1, n, 2, 3, 2)[: n + 2], name="g")
        layout = "NCHW" if n == 2 else "NCDHW"
        return fn([x, g], op.image.grid_sample(x, g, layout=layout, **kw))

    return build


def _build_roi_align(**kw):
    def build():
        x = _x((2, 3, 6, 5))
        rois = irpass.const(np.array([[1, 0, 1, 6, 9], [0, 2, 2, 3, 4]], "float32"))
        return fn([x], op.vision.roi_align(x, rois, (2, 3), 0.5, **kw))

    return build


def _build_roi_align_var_rois():
    x, rois = _x((1, 2, 6, 5)), _x((3, 5), name="rois")
    return fn([x, rois], op.vision.roi_align(x, rois, (2, 2), 1.0, sample_ratio=2,
                                             layout="NCHW"))


def _build_roi_pool():
    x, rois = _x((2, 3, 6, 5)), _x((2, 5), name="rois")
    return fn([x, rois], op.vision.roi_pool(x, rois, (2, 3), 0.5))


def _roi_pool_inputs(mod):
    return {"x": rng.standard_normal((2, 3, 6, 5)).astype("float32"),
            "rois": np.array([[1, 0, 1, 6, 9], [0, 2, 2, 3, 4]], "float32")}


def _pool(name, **kw):
    def build():
        x = _x((1, 3, 9, 8))
        return fn([x], getattr(op.nn, name)(x, **kw))
    return build


def _build_pool_nhwc():
    x = _x((1, 8, 8, 3))
    return fn([x], op.nn.max_pool2d(x, pool_size=2, strides=2, layout="NHWC"))


def _build_pool_ceil_nhwc_to_nchw():
    x = _x((1, 9, 8, 3))
    return fn([x], op.nn.max_pool2d(x, pool_size=2, strides=2, layout="NHWC", out_layout="NCHW",
                                    ceil_mode=True))


def _build_global_avg_pool():
    x = _x()
    return fn([x], op.nn.global_avg_pool2d(x))


def _build_global_avg_pool_nhwc():
    x = _x()
    return fn([x], op.nn.global_avg_pool2d(x, layout="NHWC"))


def _build_bias_add():
    x = _x()
    return fn([x], op.nn.bias_add(x, const(3)))


def _build_bias_add_var():
    x, b = _x(), _x((5,), name="b")
    return fn([x, b], op.nn.bias_add(x, b, axis=2))


def _build_dense():
    x = _x((4, 6))
    return fn([x], op.nn.dense(x, const(5, 6)))


def _build_dense_3d():
    x = _x((2, 4, 6))
    return fn([x], op.add(op.nn.dense(x, const(5, 6)), const(5)))


def _build_dense_var_bias():
    x, b = _x((4, 6)), _x((5,), name="b")
    return fn([x, b], op.nn.bias_add(op.nn.dense(x, const(5, 6)), b))


def _build_batch_matmul():
    x, y = _x((2, 3, 4), name="x"), _x((2, 5, 4), name="y")
    return fn([x, y], op.nn.batch_matmul(x, y))


def _build_batch_matmul_ta():
    x = _x((1, 4, 3))
    return fn([x], op.nn.batch_matmul(x, const(2, 4, 5), transpose_a=True, transpose_b=False))


def _build_matmul():
    a, b = _x((2, 3, 4), name="a"), _x((4,), name="b")
    return fn([a, b], op.matmul(a, b))


def _build_dropout():
    x = _x()
    return fn([x], op.nn.relu(op.nn.dropout(x, 0.3)))


def _build_batch_norm(axis=1, shape=X4):
    def build():
        x = _x(shape)
        c = shape[axis]
        bn = op.nn.batch_norm(x, const(c), const(c), const(c), const(c, low=0.5), axis=axis)
        return fn([x], bn[0])
    return build


def _build_batch_norm_var():
    x, g = _x(), _x((3,), name="g")
    bn = op.nn.batch_norm(x, g, const(3), const(3), const(3, low=0.5), center=False)
    return fn([x, g], irpass.ir.Tuple([bn[0], bn[1]]))


def _build_layer_norm(axis=-1, **kw):
    def build():
        x = _x((2, 5, 6))
        c = (2, 5, 6)[axis]
        return fn([x], op.nn.layer_norm(x, const(c), const(c), axis=axis, **kw))
    return build


def _build_group_norm(num_groups=2, axis=1):
    def build():
        x = _x((2, 6, 4, 3))
        c = (2, 6, 4, 3)[axis]
        return fn([x], group_norm(x, const(c), const(c), num_groups=num_groups, axis=axis))
    return build


def _build_instance_norm(axis=1):
    def build():
        x = _x((2, 5, 4, 3))
        c = (2, 5, 4, 3)[axis]
        return fn([x], instance_norm(x, const(c), const(c), axis=axis))
    return build


def _softmax(name, axis):
    def build():
        x = _x()
        return fn([x], getattr(op.nn, name)(x, axis=axis))
    return build


def _build_pad(mode="constant", value=0.0):
    def build():
        x = _x()
        return fn([x], op.nn.pad(x, ((0, 0), (1, 0), (2, 1), (0, 3)), value, mode))
    return build


def _build_leaky_relu():
    x = _x()
    return fn([x], op.nn.leaky_relu(x, alpha=0.2))


def _build_lrn(axis=1):
    def build():
        x = _x((2, 7, 4, 3))
        return fn([x], op.nn.lrn(x, size=3, axis=axis, bias=1.5, alpha=0.01, beta=0.6))
    return build


def _build_take(axis=1, mode="clip", known=True):
    def build():
        x = _x((3, 5, 2))
        if known:
            idx = irpass.const(np.array([[0, 4], [-1, 7]], "int64"))
            return fn([x], op.take(x, idx, axis=axis, mode=mode))
        i = _x((2, 2), "int64", "i")
        return fn([x, i], op.take(x, i, axis=axis, mode=mode))
    return build


def _take_inputs(mod):
    inputs = random_inputs(mod, seed=1)
    if "i" in inputs:
        # mode 'fast' takes indices in [-n, n) only (ONNX Gather's); the others any index
        fast = mod["main"].body.attrs["mode"] == "fast"
        inputs["i"] = np.array([[0, 4], [-1, -5 if fast else 7]], "int64")
    return inputs


def _build_strided_slice(**kw):
    def build():
        x = _x((4, 6, 5))
        return fn([x], op.strided_slice(x, **kw))
    return build


def _build_broadcast_to():
    x = _x((3, 1))
    return fn([x], op.broadcast_to(x, (2, 3, 4)))


def _build_tile(reps):
    def build():
        x = _x((2, 3))
        return fn([x], op.tile(x, reps))
    return build


# -- the ops added with the ONNX import (math, logic, bits, scans, indexing) ------------------


def _inputs(**arrays):
    """An inputs function: fixed arrays for some params, random ones for the rest."""
    def make(mod):
        inputs = random_inputs(mod, seed=1)
        inputs.update({k: np.asarray(v) for k, v in arrays.items()})
        return inputs
    return make


def _in_unit(name):
    # asin, acos, atanh: arguments inside (-1, 1)
    def build():
        x = _x()
        return fn([x], getattr(op, name)(op.multiply(op.tanh(x), irpass.const(np.float32(0.9)))))
    return build


def _build_acosh():
    x = _x()
    return fn([x], op.acosh(op.add(op.abs(x), irpass.const(np.float32(1.0)))))


def _scaled_unary(name, dtype="float32"):
    # rounding ops: values spread over several integers
    def build():
        x = _x(dtype=dtype)
        if dtype != "float32":
            return fn([x], getattr(op, name)(x))
        return fn([x], getattr(op, name)(op.multiply(x, irpass.const(np.float32(3.0)))))
    return build


_HALVES = np.array([-2.5, -1.5, -0.5, -0.0, 0.5, 1.5, 2.5, 3.7, -3.7, np.inf, -np.inf, np.nan],
                   "float32")
_SPECIALS = np.array([0.0, -1.5, np.inf, -np.inf, np.nan, 3.0e38], "float32")


def _unary_1d(name, n):
    def build():
        x = _x((n,))
        return fn([x], getattr(op, name)(x))
    return build


def _build_mod(name, dtype):
    def build():
        a, b = _x((2, 3, 4), dtype, "a"), _x((3, 1), dtype, "b")
        return fn([a, b], getattr(op, name)(a, b))
    return build


_MOD_INPUTS = _inputs(a=(np.arange(24).reshape(2, 3, 4) - 11) * 1.25,
                      b=np.array([[3.0], [-2.5], [7.0]]))
_MOD_INT_INPUTS = _inputs(a=(np.arange(24, dtype="int32").reshape(2, 3, 4) - 11) * 5,
                          b=np.array([[3], [-4], [7]], "int32"))


def _mod_inputs(dtype):
    def make(mod):
        base = (_MOD_INT_INPUTS if dtype == "int32" else _MOD_INPUTS)(mod)
        return {k: v.astype(dtype) for k, v in base.items()}
    return make


def _build_shift(name, dtype):
    def build():
        a, b = _x((2, 4), dtype, "a"), _x((4,), dtype, "b")
        return fn([a, b], getattr(op, name)(a, b))
    return build


def _shift_inputs(dtype):
    return _inputs(a=np.array([[1, 5, 100, 127], [-1, -8, -100, 64]]).astype(dtype),
                   b=np.array([0, 1, 3, 6]).astype(dtype))


def _build_arg(name, **kw):
    def build():
        x = _x()
        return fn([x], getattr(op, name)(x, **kw))
    return build


def _ties_inputs(mod):
    # few distinct values, so select_last_index matters
    return {"x": np.random.default_rng(2).integers(0, 3, X4).astype("float32")}


def _build_scan(name, in_dtype="float32", **kw):
    def build():
        x = _x((3, 4, 5), in_dtype)
        return fn([x], getattr(op, name)(x, **kw))
    return build


def _build_einsum(equation, *shapes):
    def build():
        xs = [_x(s, name=f"x{i}") for i, s in enumerate(shapes)]
        return fn(xs, op.einsum(xs, equation))
    return build


def _build_det():
    x = _x((2, 3, 3))
    return fn([x], op.linalg.det(x))


def _build_gather(known=True):
    def build():
        x = _x((3, 4))
        idx = np.array([[0, 2, -1, 1], [2, 0, 1, -3]], "int64")
        if known:
            return fn([x], op.gather(x, 0, irpass.const(idx)))
        i = _x((2, 4), "int32", "i")
        return fn([x, i], op.gather(x, 1, i))
    return build


def _build_gather_nd(batch_dims=0):
    def build():
        x = _x((3, 4, 5))
        if batch_dims:
            idx = np.array([[[1], [3], [-1]]], "int32")  # (M=1, 3, 1): one tuple per batch
            return fn([x], op.gather_nd(x, irpass.const(idx), batch_dims=1))
        i = _x((2, 3), "int64", "i")  # M = 2 tuples of 3
        return fn([x, i], op.gather_nd(x, i))
    return build


_GATHER_ND_INPUTS = _inputs(i=np.array([[0, 2, -1], [3, 1, 0]], "int64"))


def _build_scatter_elements(reduction="update"):
    def build():
        x, u = _x((3, 4)), _x((2, 4), name="u")
        idx = np.array([[0, 2, 1, 2], [1, 0, -1, 0]], "int64")
        return fn([x, u], scatter_elements(x, irpass.const(idx), u, axis=0,
                                           reduction=reduction))
    return build


def _build_scatter_nd():
    x, u = _x((4, 3)), _x((2, 3), name="u")
    idx = irpass.const(np.array([[3, 1]], "int64"))  # (M=1, 2 tuples)
    return fn([x, u], scatter_nd(x, idx, u))


def _build_topk(**kw):
    def build():
        x = _x((3, 6))
        return fn([x], topk(x, **kw))
    return build


def _build_arange():
    x = _x((7,))
    return fn([x], op.add(x, op.arange(2.0, 9.0, 1.0, dtype="float32")))


def _build_one_hot():
    i, on = _x((2, 3), "int32", "i"), _x((), name="on")
    return fn([i, on], op.one_hot(i, on, irpass.const(np.float32(-1)), depth=4, axis=1))


_ONE_HOT_INPUTS = _inputs(i=np.array([[0, 3, -1], [5, 2, 1]], "int32"))


def _build_reverse(axis=1):
    def build():
        x = _x((3, 4, 2))
        return fn([x], op.reverse(x, axis))
    return build


def _build_reverse_sequence(seq_axis=1, batch_axis=0, known=True):
    def build():
        x = _x((3, 5, 2) if batch_axis == 0 else (5, 3, 2))
        if known:
            lengths = irpass.const(np.array([1, 7, 3], "int32"))
            return fn([x], op.reverse_sequence(x, lengths, seq_axis, batch_axis))
        n = _x((3,), "int64", "n")
        return fn([x, n], op.reverse_sequence(x, n, seq_axis, batch_axis))
    return build


_REVERSE_SEQUENCE_INPUTS = _inputs(n=np.array([0, 4, 9], "int64"))


def _build_trilu(upper=True, known=True):
    def build():
        x = _x((2, 4, 5))
        if known:
            return fn([x], op.trilu(x, irpass.const(np.array(-1, "int32")), upper))
        k = _x((), "int64", "k")
        return fn([x, k], op.trilu(x, k, upper))
    return build


def _build_depth_space(which, **kw):
    def build():
        shape = (1, 8, 2, 3) if which == "depth_to_space" else (1, 2, 4, 6)
        if kw.get("layout") == "NHWC":
            shape = (shape[0], shape[2], shape[3], shape[1])
        x = _x(shape)
        f = depth_to_space if which == "depth_to_space" else space_to_depth
        return fn([x], f(x, 2, **kw))
    return build



def _build_quantize(scale_shape=(), out="int8", x_dtype="float32"):
    # scale () per tensor, (3,) per axis 1, X4 one per element (block quantization's form)
    def build():
        x = _x(dtype=x_dtype)
        scale = irpass.const((rng.random(scale_shape) * 0.2 + 0.02).astype(x_dtype))
        zero = irpass.const(rng.integers(0, 20, scale_shape).astype(out))
        return fn([x], op.qnn.quantize(op.multiply(x, irpass.const(np.array(3, x_dtype))),
                                       scale, zero, axis=1, out_dtype=out))
    return build


def _build_dequantize(scale_shape=(), dtype="int8", out="float32", scale_dtype="float32"):
    def build():
        x = _x(dtype=dtype)
        scale = irpass.const((rng.random(scale_shape) * 0.2 + 0.02).astype(scale_dtype))
        zero = irpass.const(rng.integers(0, 20, scale_shape).astype(dtype))
        return fn([x], op.qnn.dequantize(x, scale, zero, axis=1, out_dtype=out))
    return build


_QUANT_INPUTS = _inputs(x=rng.integers(-128, 128, X4).astype("int8"))

CASES = {
    **{n: (_unary(n), (17,)) for n in ("abs", "exp", "tanh", "sigmoid", "negative", "erf")},
    **{n: (_positive_unary(n), (17,)) for n in ("log", "sqrt")},
    "nn.relu": (lambda: fn([x := _x()], op.nn.relu(x)), (17,)),
    **{n: (_binary(n), (17,)) for n in ("add", "subtract", "multiply", "divide", "maximum",
                                        "minimum", "less", "greater")},
    "equal": (_binary("equal"), OPSETS),
    "not_equal": (_binary("not_equal"), OPSETS),
    "equal_int": (_binary("equal", "int32"), OPSETS),
    "maximum_int": (_binary("maximum", "int32"), (13, 17)),
    "relu_int": (lambda: fn([x := _x(dtype="int32")], op.nn.relu(x)), (13, 17)),
    "less_equal": (_binary("less_equal"), OPSETS),
    "greater_equal": (_binary("greater_equal"), OPSETS),
    "maximum_bool": (_binary("maximum", "bool"), (17,)),
    "minimum_bool": (_binary("minimum", "bool"), (17,)),
    "add_int64": (_binary("add", "int64"), (17,)),
    "divide_int": (_build_divide_int, (17,)),
    "power": (_build_power, (17,)),
    "where": (_build_where, (17,)),
    "clip": (_build_clip, OPSETS),
    "clip_half_open": (_build_clip_half_open, OPSETS),
    "clip_int": (_build_clip_int, (13, 17)),
    "cast": (_build_cast, (17,)),
    "cast_same": (_build_cast_same, (17,)),
    "reshape": (_build_reshape, (17,)),
    "reverse_reshape": (_build_reverse_reshape, (17,)),
    "squeeze": (_build_squeeze, OPSETS),
    "expand_dims": (_build_expand_dims, OPSETS),
    "transpose": (_build_transpose, (17,)),
    "transpose_default": (_build_transpose_default, (17,)),
    "layout_transform": (_build_layout_transform, (17,)),
    "concatenate": (_build_concatenate, (17,)),
    "split": (_build_split, OPSETS),
    "split_indices": (_build_split_indices, OPSETS),
    "sum": (_reduce("sum", axis=(1, 3)), OPSETS),
    "sum_all": (_reduce("sum"), OPSETS),
    "mean": (_reduce("mean", axis=-1, keepdims=True), OPSETS + (18,)),
    "max": (_reduce("max", axis=(0,), exclude=True), OPSETS + (18,)),
    "min": (_reduce("min", axis=2), OPSETS + (18,)),
    "prod": (_reduce("prod", axis=1, keepdims=True), OPSETS + (18,)),
    "max_bool": (_build_reduce_special("max", (2, 3, 4), "bool"), OPSETS + (18,)),
    "min_bool": (_build_reduce_special("min", (2, 3, 4), "bool"), (17,)),
    "max_empty_bool": (_build_reduce_special("max", (2, 0, 4), "bool"), (17,)),
    "prod_empty": (_build_reduce_special("prod", (2, 0, 4), "float32"), (17,)),
    "full": (_build_full, (17,)),
    "full_var": (_build_full_var, (17,)),
    "zeros_ones": (_build_zeros_ones, (9, 17)),
    "like": (_build_like, (17,)),
    "shape_of": (_build_shape_of, (17,)),
    "shape_of_narrow": (_build_shape_of_narrow, (17,)),
    "nn.conv2d": (_build_conv2d, (9, 17)),
    "conv2d_nhwc": (_build_conv2d_nhwc, (17,)),
    "conv2d_var_weight": (_build_conv2d_var_weight, (17,)),
    "nn.conv1d": (_build_conv1d, (9, 17)),
    "nn.conv3d": (_build_conv3d, (9, 17)),
    "nn.conv1d_transpose": (_build_conv1d_transpose, (9, 17)),
    "nn.conv3d_transpose": (_build_conv3d_transpose, (9, 17)),
    "nn.max_pool1d": (_pool_nd("max_pool1d", (1, 2, 8), pool_size=3, strides=2, padding=1,
                               ceil_mode=True), (9, 17)),
    "nn.max_pool3d": (_pool_nd("max_pool3d", (1, 2, 4, 4, 6), pool_size=2, strides=2,
                               dilation=(1, 1, 2)), (17,)),
    "nn.avg_pool1d": (_pool_nd("avg_pool1d", (1, 6, 2), pool_size=3, padding=1, layout="NWC"),
                      (9, 17)),
    "nn.avg_pool3d": (_pool_nd("avg_pool3d", (1, 2, 3, 4, 4), pool_size=2, strides=2,
                               padding=(1, 0, 0), count_include_pad=True), (9, 17)),
    "avg_pool2d_ceil_last_window_in_pad": (
        _pool_nd("avg_pool2d", (1, 1, 2, 2), pool_size=3, strides=3, padding=1, ceil_mode=True),
        (9, 17)),
    "image.resize1d": (_build_resize(1, (1, 2, 5), (8,), method="cubic", cubic_alpha=-0.75),
                       (9, 13, 17)),
    "image.resize2d": (_build_resize(2, (1, 3, 4, 5), (6, 10), method="nearest_neighbor",
                                     coordinate_transformation_mode="asymmetric"), OPSETS),
    "resize2d_nhwc_crop": (_build_resize(2, (1, 4, 4, 2), (3, 5), roi=(0.1, 0.0, 0.9, 1.2),
                                         layout="NHWC", extrapolation_value=-1.0,
                                         coordinate_transformation_mode="tf_crop_and_resize"),
                           (11, 17)),
    "resize2d_antialias": (_build_resize(2, (1, 1, 8, 8), (3, 5), antialias=True), (13, 18)),
    "resize2d_rounded_scales": (_build_resize(2, (1, 2, 5, 6), (3, 4), scales=(0.6, 0.7),
                                              coordinate_transformation_mode="align_corners"),
                                (9, 13)),
    "image.resize3d": (_build_resize(3, (1, 1, 2, 3, 4), (4, 3, 2)), (9, 17)),
    "image.grid_sample": (_build_grid_sample(2, method="bicubic", padding_mode="reflection"),
                          (16, 20)),
    "grid_sample_nearest": (_build_grid_sample(2, method="nearest", align_corners=False),
                            (16,)),
    "vision.roi_align": (_build_roi_align(aligned=True), (16, 17)),
    "roi_align_output_half_pixel": (_build_roi_align(sample_ratio=2), (10, 16)),
    # the batch indices must name an image
    "vision.roi_pool": (_build_roi_pool, (9, 17), _roi_pool_inputs),
    "nn.conv2d_transpose": (_build_conv2d_transpose, (9, 17)),
    "conv2d_transpose_grouped": (_build_conv2d_transpose_grouped, (17,)),
    "nn.max_pool2d": (_pool("max_pool2d", pool_size=3, strides=2, padding=1), (9, 17)),
    "max_pool_ceil": (_pool("max_pool2d", pool_size=2, strides=2, ceil_mode=True), OPSETS),
    "max_pool_dilated": (_pool("max_pool2d", pool_size=2, dilation=2), (13, 17)),
    "nn.avg_pool2d": (_pool("avg_pool2d", pool_size=3, strides=2, padding=1), (9, 17)),
    "avg_pool_include_pad": (_pool("avg_pool2d", pool_size=3, padding=1,
                                   count_include_pad=True), (17,)),
    "avg_pool_ceil": (_pool("avg_pool2d", pool_size=2, strides=2, ceil_mode=True), OPSETS),
    "pool_nhwc": (_build_pool_nhwc, (17,)),
    "pool_ceil_nhwc_to_nchw": (_build_pool_ceil_nhwc_to_nchw, OPSETS),
    "nn.global_avg_pool2d": (_build_global_avg_pool, (17,)),
    "global_avg_pool_nhwc": (_build_global_avg_pool_nhwc, (17,)),
    "nn.bias_add": (_build_bias_add, (17,)),
    "bias_add_var": (_build_bias_add_var, (17,)),
    "nn.dense": (_build_dense, (9, 17)),
    "dense_3d": (_build_dense_3d, (17,)),
    "dense_var_bias": (_build_dense_var_bias, (9, 17)),
    "nn.batch_matmul": (_build_batch_matmul, (17,)),
    "batch_matmul_ta": (_build_batch_matmul_ta, (17,)),
    "matmul": (_build_matmul, (17,)),
    "nn.dropout": (_build_dropout, OPSETS),
    "nn.batch_norm": (_build_batch_norm(), (9, 17)),
    "batch_norm_axis3": (_build_batch_norm(axis=3), (17,)),
    "batch_norm_1d": (_build_batch_norm(axis=0, shape=(4,)), (17,)),
    "batch_norm_axis0": (_build_batch_norm(axis=0, shape=(3, 2, 5)), (17,)),
    "batch_norm_var": (_build_batch_norm_var, (17,)),
    "nn.layer_norm": (_build_layer_norm(), OPSETS + (18,)),
    "layer_norm_axis1": (_build_layer_norm(axis=1), (17, 18)),
    "layer_norm_plain": (_build_layer_norm(center=False, scale=False), (13, 17)),
    "nn.group_norm": (_build_group_norm(), OPSETS + (18, 21)),
    "group_norm_nhwc": (_build_group_norm(3, axis=3), (17,)),
    "nn.instance_norm": (_build_instance_norm(), OPSETS),
    "instance_norm_axis2": (_build_instance_norm(axis=2), (17,)),
    "nn.softmax": (_softmax("softmax", -1), OPSETS),
    "softmax_axis1": (_softmax("softmax", 1), OPSETS),
    "nn.log_softmax": (_softmax("log_softmax", -1), OPSETS),
    "log_softmax_axis2": (_softmax("log_softmax", 2), OPSETS),
    "nn.pad": (_build_pad(value=1.5), OPSETS),
    "pad_edge": (_build_pad("edge"), OPSETS),
    "pad_reflect": (_build_pad("reflect"), OPSETS),
    "nn.leaky_relu": (_build_leaky_relu, (17,)),
    "nn.lrn": (_build_lrn(), (9, 17)),
    "lrn_axis3": (_build_lrn(axis=3), (17,)),
    "take": (_build_take(), (17,)),
    "take_wrap": (_build_take(mode="wrap"), (17,)),
    "take_flat": (_build_take(axis=None, mode="fast"), (17,)),
    "take_var_clip": (_build_take(known=False), (13, 17)),
    "take_var_wrap": (_build_take(mode="wrap", known=False), (13, 17)),
    "take_var_fast": (_build_take(mode="fast", known=False), (10, 17)),
    "strided_slice": (_build_strided_slice(begin=(1, -1), end=(3, 0), strides=(1, -2)), OPSETS),
    "strided_slice_axes": (_build_strided_slice(begin=(1,), end=(100,), axes=(2,)), OPSETS),
    "broadcast_to": (_build_broadcast_to, (9, 17)),
    "tile": (_build_tile((2, 1, 3)), (17,)),
    "tile_short": (_build_tile((2,)), (17,)),
    **{n: (_unary(n), (9, 17)) for n in ("sin", "cos", "tan", "atan", "sinh", "cosh",
                                           "asinh")},
    **{n: (_in_unit(n), (9, 17)) for n in ("asin", "acos", "atanh")},
    "acosh": (_build_acosh, (9, 17)),
    **{n: (_scaled_unary(n), (9, 17)) for n in ("floor", "ceil", "sign")},
    "trunc": (_unary_1d("trunc", 12), OPSETS, _inputs(x=_HALVES)),
    "round": (_unary_1d("round", 12), (11, 17), _inputs(x=_HALVES)),
    "round_int": (_scaled_unary("round", "int32"), (9, 17)),
    "floor_int": (_scaled_unary("floor", "int64"), (9, 17)),
    "sign_int": (_scaled_unary("sign", "int32"), (9, 17)),
    "isnan": (_unary_1d("isnan", 6), (9, 17), _inputs(x=_SPECIALS)),
    "isinf": (_unary_1d("isinf", 6), OPSETS, _inputs(x=_SPECIALS)),
    "floor_mod": (_build_mod("floor_mod", "float32"), (10, 17), _mod_inputs("float32")),
    "trunc_mod": (_build_mod("trunc_mod", "float32"), (10, 17), _mod_inputs("float32")),
    "floor_mod_int": (_build_mod("floor_mod", "int32"), (10, 17), _mod_inputs("int32")),
    "trunc_mod_int": (_build_mod("trunc_mod", "int32"), (10, 17), _mod_inputs("int32")),
    **{n: (_binary(n, "bool"), (9, 17)) for n in ("logical_and", "logical_or", "logical_xor")},
    "logical_not": (lambda: fn([x := _x(dtype="bool")], op.logical_not(x)), (9, 17)),
    **{n: (_binary(n, "int32"), (18, 21)) for n in ("bitwise_and", "bitwise_or",
                                                    "bitwise_xor")},
    "bitwise_not": (lambda: fn([x := _x(dtype="int32")], op.bitwise_not(x)), (18,)),
    "left_shift": (_build_shift("left_shift", "uint8"), (11, 17), _shift_inputs("uint8")),
    "right_shift": (_build_shift("right_shift", "uint32"), (11, 17), _shift_inputs("uint32")),
    "left_shift_signed": (_build_shift("left_shift", "int8"), (11, 17), _shift_inputs("int8")),
    "right_shift_signed": (_build_shift("right_shift", "int32"), (11, 17),
                           _shift_inputs("int32")),
    "right_shift_int16": (_build_shift("right_shift", "int16"), (11, 17),
                          _shift_inputs("int16")),
    "argmax": (_build_arg("argmax", axis=1, keepdims=True), OPSETS),
    "argmin": (_build_arg("argmin", axis=(1, 3), exclude=True), OPSETS),
    "argmax_all": (_build_arg("argmax"), OPSETS),
    "argmin_last": (_build_arg("argmin", axis=-1, select_last_index=True), (13, 17),
                    _ties_inputs),
    "argmax_last_multi": (_build_arg("argmax", axis=(0, 2), select_last_index=True), (17,),
                          _ties_inputs),
    "cumsum": (_build_scan("cumsum", axis=1), (11, 17)),
    "cumsum_flat_exclusive": (_build_scan("cumsum", "int32", dtype="int64", exclusive=True),
                              (11, 17)),
    "cumprod": (_build_scan("cumprod", axis=-1), (9, 13, 18)),
    "cumprod_exclusive_int": (_build_scan("cumprod", "int32", axis=0, exclusive=True),
                              (13, 18)),
    "einsum": (_build_einsum("ij,jk", (3, 4), (4, 5)), (12, 17)),
    "einsum_ellipsis": (_build_einsum("...ij,...jk->...ik", (2, 3, 4), (2, 4, 5)), (17,)),
    "einsum_trace": (_build_einsum("bii->b", (2, 3, 3)), (17,)),
    "linalg.det": (_build_det, (11, 17)),
    "gather": (_build_gather(), (11, 17)),
    "gather_var": (_build_gather(known=False), (13,),
                   _inputs(i=np.array([[0, 3, -1, 1], [2, 0, 1, -4]], "int32"))),
    "gather_nd": (_build_gather_nd(), (11, 17), _GATHER_ND_INPUTS),
    "gather_nd_batch": (_build_gather_nd(batch_dims=1), (12, 17)),
    "scatter_elements": (_build_scatter_elements(), OPSETS),
    "scatter_elements_add": (_build_scatter_elements("add"), (16, 17)),
    "scatter_elements_max": (_build_scatter_elements("max"), (18,)),
    "scatter_nd": (_build_scatter_nd, (11, 17)),
    "topk": (_build_topk(k=2), OPSETS),
    "topk_ascend_values": (_build_topk(k=2, axis=0, ret_type="values", is_ascend=True), (11, 17)),
    "topk_all_indices": (_build_topk(k=0, ret_type="indices", dtype="int64"), (17,)),
    "arange": (_build_arange, (9, 17)),
    "one_hot": (_build_one_hot, (9, 17), _ONE_HOT_INPUTS),
    "reverse": (_build_reverse(), OPSETS),
    "reverse_last": (_build_reverse(-1), (17,)),
    "reverse_sequence": (_build_reverse_sequence(), (10, 17)),
    "reverse_sequence_batch_first": (_build_reverse_sequence(0, 1), (10, 17)),
    "reverse_sequence_var": (_build_reverse_sequence(2, 0, known=False), (13, 17),
                             _REVERSE_SEQUENCE_INPUTS),
    "trilu": (_build_trilu(), OPSETS),
    "trilu_lower": (_build_trilu(upper=False), OPSETS),
    "trilu_var": (_build_trilu(upper=False, known=False), (14, 17), _inputs(k=np.array(1))),
    "nn.depth_to_space": (_build_depth_space("depth_to_space"), (9, 17)),
    "depth_to_space_crd": (_build_depth_space("depth_to_space", mode="CRD"), OPSETS),
    "depth_to_space_nhwc": (_build_depth_space("depth_to_space", layout="NHWC"), (17,)),
    "nn.space_to_depth": (_build_depth_space("space_to_depth"), (9, 17)),
    "space_to_depth_crd": (_build_depth_space("space_to_depth", mode="CRD"), (9, 17)),
    # between integers a Cast; else BitCast, opset 26: a clean error (test_onnx_dtypes.py)
    "reinterpret": (lambda: fn([x := _x(dtype="int16")], op.reinterpret(x, "uint16")), (9, 17)),
    "qnn.quantize": (_build_quantize(), (10, 13, 17, 21)),
    "quantize_axis_uint8": (_build_quantize((3,), "uint8"), (13, 21)),
    "quantize_per_element": (_build_quantize(X4), (10, 17)),
    "quantize_int16": (_build_quantize((), "int16"), (17, 21)),
    "quantize_float64": (_build_quantize((3,), x_dtype="float64"), (10, 21)),
    "qnn.dequantize": (_build_dequantize(), (10, 13, 21), _QUANT_INPUTS),
    "dequantize_axis": (_build_dequantize((3,)), (13, 17), _QUANT_INPUTS),
    "dequantize_per_element_f16": (_build_dequantize(X4, out="float16"), (10, 17),
                                   _QUANT_INPUTS),
    "dequantize_int32_f64_scale": (_build_dequantize((), "int32", "float64", "float64"),
                                   (10, 21)),
}


@pytest.mark.parametrize(
    "case, opset",
    [(name, o) for name, (_, opsets, *_rest) in CASES.items() for o in opsets],
)
def test_op_exports_and_runs(case: str, opset: int) -> None:
    build, _, *make_inputs = CASES[case]
    mod = build()
    if make_inputs:
        inputs = make_inputs[0](mod)
    else:
        inputs = _take_inputs(mod) if case.startswith("take") else None
    check_export(mod, opset=opset, inputs=inputs)


def test_every_core_op_has_an_emitter_and_a_case() -> None:
    # the core's ops only: in a full run, other test modules have registered ops of their own
    ops = {name for name in list_ops() if Op.get(name).owner == "irpass"}
    assert ops <= set(supported_ops()), sorted(ops - set(supported_ops()))
    # ops tested under their own name (others are covered by named variants above)
    covered = {"abs", "add", "sigmoid", "cast", "clip", "concatenate", "divide", "equal", "exp",
               "expand_dims", "full", "greater", "greater_equal", "layout_transform", "less",
               "less_equal", "log", "max", "maximum", "mean", "min", "minimum", "multiply",
               "negative", "not_equal", "ones", "ones_like", "power", "prod", "reshape",
               "reverse_reshape", "shape_of", "split", "sqrt", "squeeze", "subtract", "sum",
               "dims_tensor",  # test_onnx_symbolic.py: test_dims_tensor_exports_as_computed_sizes
               # test_fused_ops_onnx.py exports each at an old and a new opset
               "nn.gelu", "nn.silu", "nn.hard_swish", "nn.rms_norm", "nn.attention",
               "nn.rotary_embedding",
               "tanh", "transpose", "where", "zeros", "zeros_like"}
    named = set(CASES) | covered
    assert ops <= named, sorted(ops - named)


@pytest.mark.parametrize("build", [
    lambda: fn([x := _x(dtype="int32")], op.nn.relu(x)),
    _binary("minimum", "int64"),
    _build_clip_int,
])
def test_integer_ops_onnx_lacks_at_old_opsets_are_clean_errors(build) -> None:
    with pytest.raises(OnnxExportError, match=r"opset >= 12.*\(export opset 9\)"):
        to_onnx(build(), opset=9)


@pytest.mark.parametrize("build, opset, needs", [
    (_binary("bitwise_and", "int32"), 17, "BitwiseAnd, which needs opset >= 18"),
    (lambda: fn([x := _x(dtype="int32")], op.bitwise_not(x)), 17, "BitwiseNot.*>= 18"),
    (_unary_1d("round", 3), 10, "Round, which needs opset >= 11"),
    (_build_mod("floor_mod", "int32"), 9, "Mod, which needs opset >= 10"),
    (_build_shift("left_shift", "uint8"), 10, "BitShift, which needs opset >= 11"),
    (_build_arg("argmin", axis=-1, select_last_index=True), 11, r"ArgMin\(select_last.*>= 12"),
    (_build_scan("cumsum", axis=1), 10, "CumSum, which needs opset >= 11"),
    (_build_einsum("ij,jk", (3, 4), (4, 5)), 11, "Einsum, which needs opset >= 12"),
    (_build_det, 10, "Det, which needs opset >= 11"),
    (_build_gather(), 10, "GatherElements, which needs opset >= 11"),
    (_build_gather_nd(), 10, "GatherND, which needs opset >= 11"),
    (_build_gather_nd(batch_dims=1), 11, r"GatherND\(batch_dims > 0\).*>= 12"),
    (_build_scatter_elements("add"), 15, "reduction='add'.*>= 16"),
    (_build_scatter_elements("min"), 17, "reduction='min'.*>= 18"),
    (_build_scatter_nd, 10, "ScatterND, which needs opset >= 11"),
    (_build_topk(k=2, is_ascend=True), 10, r"TopK\(largest=0\).*>= 11"),
    (_build_reverse_sequence(), 9, "ReverseSequence, which needs opset >= 10"),
    (_build_reverse_sequence(2, 0, known=False), 11, "computed lengths needs opset >= 12"),
    (_build_trilu(known=False), 13, "Trilu, which needs opset >= 14"),
])
def test_ops_onnx_lacks_at_the_export_opset_are_clean_errors(build, opset, needs) -> None:
    mod = build()
    with pytest.raises(OnnxExportError, match=needs + rf".*\(export opset {opset}\)"):
        to_onnx(mod, opset=opset)


def _bf16(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("bfloat16")


def test_bfloat16_ops_onnx_lacks_before_opset_22_run_in_float32():
    # Einsum and ReverseSequence take bfloat16 only from opset 22: at 21 their bfloat16
    # operands go through float32 (exact for bfloat16 values) and back
    a, b = var("a", shape=(2, 3), dtype="bfloat16"), var("b", shape=(3, 4), dtype="bfloat16")
    x = var("x", shape=(3, 5, 2), dtype="bfloat16")
    mod = fn([a, b, x], Tuple([op.einsum([a, b], "ij,jk->ik"), op.reverse_sequence(
        x, irpass.const(np.array([1, 4, 5], "int64")), 1, 0)]))
    model = to_onnx(mod, opset=21)
    for op_type in ("Einsum", "ReverseSequence"):
        node = next(n for n in model.graph.node if n.op_type == op_type)
        producer = next(n for n in model.graph.node if n.output[0] == node.input[0])
        assert producer.op_type == "Cast" and producer.attribute[0].i == TensorProto.FLOAT
    inputs = {"a": _bf16(2, 3), "b": _bf16(3, 4, seed=1), "x": _bf16(3, 5, 2, seed=2)}
    onnx.checker.check_model(model, full_check=True)
    again = irpass.evaluate(from_onnx(model), **inputs)
    for g, e in zip(again, irpass.evaluate(mod, **inputs), strict=True):
        assert np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(e, np.float32),
                                   rtol=1e-2, atol=1e-2)


def test_a_dynamic_bfloat16_compress_runs_in_float32_with_declared_types():
    # Compress with a run-time condition is a dynamic node, written as it was imported (at
    # opset 22); at 21 Compress has no bfloat16: float32 between casts, whose values the
    # export declares so that the re-import can type the dynamic node again
    graph = helper.make_graph(
        [helper.make_node("Compress", ["x", "c"], ["y"], axis=0)], "compress",
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [4, 2]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [4])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2, 2])])
    original = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    mod = from_onnx(original)
    model = to_onnx(mod, opset=21)
    assert [n.op_type for n in model.graph.node] == ["Cast", "Compress", "Cast"]
    declared = {vi.name for vi in model.graph.value_info}
    assert {model.graph.node[1].input[0], model.graph.node[1].output[0]} <= declared
    inputs = {"x": _bf16(4, 2), "c": np.array([True, False, False, True])}
    onnx.checker.check_model(model, full_check=True)
    got, expected = irpass.evaluate(from_onnx(model), **inputs), irpass.evaluate(mod, **inputs)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(expected, np.float32))


def test_a_long_range_of_known_bounds_is_a_range_node_not_an_initializer():
    n = RANGE_CONSTANT_MAX + 1
    x = var("x", shape=(n,), dtype="int64")
    mod = fn([x], op.add(x, op.arange(0, n, 1, dtype="int64")))
    model = to_onnx(mod)
    onnx.checker.check_model(model, full_check=True)
    assert "Range" in [node.op_type for node in model.graph.node]
    assert all(np.prod(t.dims) <= 1 for t in model.graph.initializer)
    xs = np.arange(n, dtype=np.int64)[::-1].copy()
    np.testing.assert_array_equal(run_ort(model, {"x": xs})[0], xs + np.arange(n))
    # one element fewer: an initializer, as every short range
    short = to_onnx(fn([y := var("y", shape=(n - 1,), dtype="int64")],
                       op.add(y, op.arange(0, n - 1, 1, dtype="int64"))))
    assert "Range" not in [node.op_type for node in short.graph.node]


def test_a_value_the_export_cannot_compute_is_an_export_error_naming_the_node():
    # opset 10 has no Range: the range is computed, and 2**62 int64 elements are more than
    # numpy can hold. Its error (the ValueError numpy raises) becomes an OnnxExportError naming
    # the node.
    mod = fn([], op.arange(0, 1 << 62, 1, dtype="int64"))
    with pytest.raises(OnnxExportError, match=r"arange.*(ValueError|MemoryError): .*opset 10"):
        to_onnx(mod, opset=10)


def test_a_node_of_a_type_onnx_lacks_at_the_export_opset_is_a_clean_error():
    # a bfloat16 MaxUnpool with a run-time output_shape stays a MaxUnpool node (a dynamic
    # one); MaxUnpool takes no bfloat16 before opset 22: the export's final type check names
    # the node instead of writing an invalid model
    graph = helper.make_graph(
        [helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"], kernel_shape=[2, 2],
                          strides=[2, 2])], "unpool",
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [1, 1, 2, 2]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [1, 1, 2, 2]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [1, 1, 4, 4])])
    mod = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]))
    with pytest.raises(OnnxExportError, match=r"not valid at opset 21: .*MaxUnpool.*bfloat16"):
        to_onnx(mod, opset=21)


def test_a_dynamic_float16_range_runs_in_float32():
    # Range with run-time bounds is a dynamic node; it takes no float16 before opset 22, and
    # the core computes float16 math in float32 rounded once anyway: so does the export
    graph = helper.make_graph(
        [helper.make_node("Range", ["a", "b", "d"], ["y"])], "range",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT16, []) for n in "abd"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4])])
    mod = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]))
    model = to_onnx(mod, opset=21)
    onnx.checker.check_model(model, full_check=True)
    assert [n.op_type for n in model.graph.node] == ["Cast"] * 3 + ["Range", "Cast"]
    inputs = {"a": np.float16(0.1), "b": np.float16(1.3), "d": np.float16(0.3)}
    inputs = {k: np.asarray(v) for k, v in inputs.items()}
    expected = np.asarray(irpass.evaluate(mod, **inputs))
    for got in (run_ort(model, inputs)[0], np.asarray(irpass.evaluate(from_onnx(model),
                                                                      **inputs))):
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("op_type, shape, identity", [
    ("ReduceMax", (2, 0, 4), False), ("ReduceMin", (2, 0, 4), True),
    ("ReduceMax", (2, 3, 4), None),
])
def test_a_dynamic_bool_reduction_runs_on_uint8(op_type, shape, identity):
    # ReduceMax with run-time axes is a dynamic node; onnxruntime has no bool kernel for an
    # empty reduction, so the export reduces uint8 0/1 (identities 0 and 255: False, True)
    graph = helper.make_graph(
        [helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=1)], "reduce",
        [helper.make_tensor_value_info("x", TensorProto.BOOL, shape),
         helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", TensorProto.BOOL, [2, 1, 4])])
    mod = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]))
    model = to_onnx(mod)
    onnx.checker.check_model(model, full_check=True)
    x = np.random.default_rng(0).random(shape) > 0.5
    inputs = {"x": x, "axes": np.array([1], np.int64)}
    got = run_ort(model, inputs)[0]
    expected = np.asarray(irpass.evaluate(mod, **inputs))
    assert got.dtype == np.bool_ and np.array_equal(got, expected)
    if identity is not None:
        assert (got == identity).all()


@pytest.mark.parametrize("value", [
    3, -1, True, np.int64(7), 0.5, -0.0, float("inf"), np.float32(1.5), "NCHW", b"raw",
    [1, 2, 3], (4,), [np.int64(2), 3], [0.5, 1.0], [np.float32(2.5)],
    [1, 2.5], ["a", "b"], onnx.helper.make_tensor("t", onnx.TensorProto.FLOAT, [1], [2.0]),
])
def test_node_protos_are_the_ones_make_node_makes(value):
    from irpass_onnx.export.builder import add_node_protos

    graph = onnx.GraphProto()
    records = [["Op", ["a", "b"], ["c"], {"z": value, "a": 1, "skipped": None}],
               ["Op", [], ["", "d"], {}]]
    add_node_protos(graph.node, records, {"a": "A", "c": "C"})
    want = [onnx.helper.make_node("Op", ["A", "b"], ["C"], name="C", z=value, a=1,
                                  skipped=None),
            onnx.helper.make_node("Op", [], ["", "d"], name="")]
    assert [n.SerializeToString() for n in graph.node] == [n.SerializeToString() for n in want]
