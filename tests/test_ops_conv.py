"""nn.conv1d/conv3d and nn.conv1d_transpose/conv3d_transpose: kernels against reference
loops written here (one multiply-add per output element and kernel tap), type relations and
their errors."""

from __future__ import annotations

import itertools

import irpass
import numpy as np
import pytest
from irpass import op
from irpass.ir import Function, IRModule, var

rng = np.random.default_rng(7)


def _eval(call_builder, *arrays):
    params = [var(f"a{i}", shape=a.shape, dtype=str(a.dtype)) for i, a in enumerate(arrays)]
    mod = IRModule.from_expr(Function(params, call_builder(*params)))
    mod = irpass.transform.InferType()(mod)
    out = irpass.evaluate(mod, **{f"a{i}": a for i, a in enumerate(arrays)})
    return mod["main"].ret_type, out


def ref_conv(x, w, strides, pads, dilation, groups):
    """Direct N-d convolution: x (N, C, *S), w (O, C / groups, *K), pads befores then afters."""
    nd = x.ndim - 2
    widths = list(zip(pads[:nd], pads[nd:], strict=True))
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), *widths])
    n, c = x.shape[:2]
    o, cg, *kernel = w.shape
    og = o // groups
    out = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // strides[i] + 1
           for i in range(nd)]
    y = np.zeros((n, o, *out))
    for b, oc in itertools.product(range(n), range(o)):
        g = oc // og
        for pos in itertools.product(*map(range, out)):
            acc = 0.0
            for ic in range(cg):
                for tap in itertools.product(*map(range, kernel)):
                    src = tuple(p * s + t * d for p, s, t, d
                                in zip(pos, strides, tap, dilation, strict=True))
                    acc += xp[(b, g * cg + ic, *src)] * w[(oc, ic, *tap)]
            y[(b, oc, *pos)] = acc
    return y


def ref_conv_transpose(x, w, strides, pads, output_padding, dilation, groups):
    """Scatter form: x (N, C, *S), w (C, O / groups, *K); crop pads, extend output_padding."""
    nd = x.ndim - 2
    n, c, *size = x.shape
    _, og, *kernel = w.shape
    cg = c // groups
    full = [s * (i - 1) + d * (k - 1) + 1 + e
            for s, i, d, k, e in zip(strides, size, dilation, kernel, output_padding, strict=True)]
    y = np.zeros((n, og * groups, *full))
    for b, ic in itertools.product(range(n), range(c)):
        g = ic // cg
        for pos in itertools.product(*map(range, size)):
            for oc in range(og):
                for tap in itertools.product(*map(range, kernel)):
                    dst = tuple(p * s + t * d for p, s, t, d
                                in zip(pos, strides, tap, dilation, strict=True))
                    y[(b, g * og + oc, *dst)] += x[(b, ic, *pos)] * w[(ic, oc, *tap)]
    crop = tuple(slice(pads[i], full[i] - pads[nd + i]) for i in range(nd))
    return y[(slice(None), slice(None), *crop)]


CONV_CASES = [
    # (ndim, data shape, weight shape, strides, pads, dilation, groups)
    (1, (2, 4, 9), (6, 2, 3), (2,), (1, 2), (2,), 2),
    (1, (1, 3, 5), (2, 3, 5), (1,), (0, 0), (1,), 1),
    (3, (1, 2, 4, 5, 3), (3, 2, 2, 3, 1), (1, 2, 1), (1, 0, 0, 0, 1, 2), (1, 1, 2), 1),
    (3, (1, 4, 3, 3, 4), (4, 1, 1, 2, 2), (2, 1, 2), (0, 1, 1, 1, 0, 0), (1, 2, 1), 4),
]


@pytest.mark.parametrize("nd, xs, ws, strides, pads, dilation, groups", CONV_CASES)
def test_conv_nd_matches_reference_loop(nd, xs, ws, strides, pads, dilation, groups):
    x = rng.standard_normal(xs).astype("float32")
    w = rng.standard_normal(ws).astype("float32")
    build = getattr(op.nn, f"conv{nd}d")
    ty, got = _eval(lambda a, b: build(a, b, strides=strides, padding=pads, dilation=dilation,
                                       groups=groups), x, w)
    want = ref_conv(x, w, strides, pads, dilation, groups)
    assert ty.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv_channels_last_layouts_agree_with_channels_first():
    x = rng.standard_normal((1, 3, 4, 5, 6)).astype("float32")
    w = rng.standard_normal((2, 3, 2, 2, 3)).astype("float32")
    _, first = _eval(lambda a, b: op.nn.conv3d(a, b, padding=1), x, w)
    _, last = _eval(lambda a, b: op.nn.conv3d(a, b, padding=1, data_layout="NDHWC",
                                              kernel_layout="DHWIO"),
                    x.transpose(0, 2, 3, 4, 1), w.transpose(2, 3, 4, 1, 0))
    np.testing.assert_allclose(last.transpose(0, 4, 1, 2, 3), first, rtol=1e-5, atol=1e-5)
    x1 = x[:, :, 0, 0]
    w1 = w[:, :, 0, 0]
    _, first = _eval(lambda a, b: op.nn.conv1d(a, b), x1, w1)
    _, last = _eval(lambda a, b: op.nn.conv1d(a, b, data_layout="NWC", kernel_layout="WIO",
                                              out_layout="NCW"),
                    x1.transpose(0, 2, 1), w1.transpose(2, 1, 0))
    np.testing.assert_allclose(last, first, rtol=1e-5, atol=1e-5)


def test_conv_int_data_is_exact():
    x = rng.integers(-50, 50, (1, 2, 7)).astype("int32")
    w = rng.integers(-50, 50, (3, 2, 3)).astype("int32")
    _, got = _eval(lambda a, b: op.nn.conv1d(a, b, padding=1), x, w)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, ref_conv(x, w, (1,), (1, 1), (1,), 1).astype(np.int64))


TRANSPOSE_CASES = [
    # (ndim, data shape, weight shape, strides, pads, output_padding, dilation, groups)
    (1, (2, 3, 4), (3, 2, 3), (2,), (1, 0), (1,), (1,), 1),
    (1, (1, 4, 5), (4, 1, 2), (3,), (0, 2), (2,), (2,), 2),
    (3, (1, 2, 2, 3, 2), (2, 3, 2, 1, 3), (2, 1, 2), (0, 0, 1, 1, 0, 0), (1, 0, 0), (1, 1, 1), 1),
    (3, (1, 4, 2, 2, 3), (4, 1, 2, 2, 2), (1, 2, 1), (1, 0, 0, 0, 1, 0), (0, 1, 0), (2, 1, 1), 2),
]


@pytest.mark.parametrize("nd, xs, ws, strides, pads, extra, dilation, groups", TRANSPOSE_CASES)
def test_conv_transpose_nd_matches_reference_loop(nd, xs, ws, strides, pads, extra, dilation,
                                                  groups):
    x = rng.standard_normal(xs).astype("float32")
    w = rng.standard_normal(ws).astype("float32")
    build = getattr(op.nn, f"conv{nd}d_transpose")
    ty, got = _eval(lambda a, b: build(a, b, strides=strides, padding=pads, dilation=dilation,
                                       groups=groups, output_padding=extra), x, w)
    want = ref_conv_transpose(x, w, strides, pads, extra, dilation, groups)
    assert ty.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("build, shapes, message", [
    (lambda a, b: op.nn.conv1d(a, b), ((1, 3, 5), (2, 2, 3)),
     r"nn.conv1d: weight has 2 input channels per group but data has 3"),
    (lambda a, b: op.nn.conv3d(a, b), ((1, 3, 5, 5), (2, 3, 1, 1, 1)), r"nn.conv3d.*data"),
    (lambda a, b: op.nn.conv1d(a, b, kernel_size=4), ((1, 3, 5), (2, 3, 3)),
     r"kernel_size=\(4,\) but weight"),
    (lambda a, b: op.nn.conv3d(a, b), ((1, 1, 2, 5, 5), (1, 1, 3, 1, 1)),
     r"nn.conv3d: the window spans 3 elements along depth"),
    (lambda a, b: op.nn.conv1d_transpose(a, b, padding=(3, 3)), ((1, 2, 2), (2, 1, 2)),
     r"nn.conv1d_transpose: the output would have -3 elements along width"),
    (lambda a, b: op.nn.conv3d_transpose(a, b), ((1, 2, 2, 2, 2), (3, 1, 1, 1, 1)),
     r"weight .* has 3 input channels \(I\) but data has 2"),
])
def test_type_relation_errors_name_the_op_and_the_problem(build, shapes, message):
    params = [var(f"a{i}", shape=s) for i, s in enumerate(shapes)]
    mod = IRModule.from_expr(Function(params, build(*params)))
    with pytest.raises(Exception, match=message):
        irpass.transform.InferType()(mod)


@pytest.mark.parametrize("build, message", [
    (lambda a, b: op.nn.conv1d(a, b, strides=(1, 1)), r"strides must be 1 or 1 ints \(width\)"),
    (lambda a, b: op.nn.conv3d(a, b, padding=(1, 1)), r"padding must be 1, 3 .* or 6"),
    (lambda a, b: op.nn.conv3d(a, b, kernel_layout="OIHW"), r"unsupported layout 'OIHW'"),
    (lambda a, b: op.nn.conv1d_transpose(a, b, output_padding=-1), r">= 0"),
])
def test_bad_attributes_are_refused_when_building(build, message):
    with pytest.raises(Exception, match=message):
        build(var("a", shape=(1, 1, 4)), var("b", shape=(1, 1, 1)))
