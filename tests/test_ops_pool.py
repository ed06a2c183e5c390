"""nn.max_pool1d/3d and nn.avg_pool1d/3d: kernels against a reference loop written here
(ceil mode, dilation, padding, count_include_pad, channels-last layouts) and type errors."""

from __future__ import annotations

import itertools

import irpass
import numpy as np
import pytest
from irpass import op
from irpass.ir import Function, IRModule, var

rng = np.random.default_rng(3)


def _eval(build, x):
    p = var("x", shape=x.shape, dtype=str(x.dtype))
    mod = irpass.transform.InferType()(IRModule.from_expr(Function([p], build(p))))
    return mod["main"].ret_type, irpass.evaluate(mod, x=x)


def ref_pool(x, kind, kernel, strides, pads, dilation, ceil, include_pad):
    """One window at a time, as ONNX's reference describes pooling: ceil mode drops a last
    window that starts in the trailing padding; the divisor counts input elements, or with
    count_include_pad the positions inside the padded input."""
    nd = x.ndim - 2
    sizes = x.shape[2:]
    out = []
    for i in range(nd):
        room = sizes[i] + pads[i] + pads[nd + i] - dilation[i] * (kernel[i] - 1) - 1
        o = (-(-room // strides[i]) if ceil else room // strides[i]) + 1
        if ceil and (o - 1) * strides[i] >= sizes[i] + pads[i]:
            o -= 1
        out.append(o)
    y = np.zeros(x.shape[:2] + tuple(out))
    for b, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for pos in itertools.product(*map(range, out)):
            vals, count = [], 0
            for tap in itertools.product(*map(range, kernel)):
                src = [p * s + t * d - pads[i]
                       for i, (p, s, t, d)
                       in enumerate(zip(pos, strides, tap, dilation, strict=True))]
                inside = all(0 <= q < sizes[i] for i, q in enumerate(src))
                in_padded = all(-pads[i] <= q < sizes[i] + pads[nd + i]
                                for i, q in enumerate(src))
                if inside:
                    vals.append(float(x[(b, c, *src)]))
                count += inside or (include_pad and in_padded)
            y[(b, c, *pos)] = max(vals) if kind == "max" else sum(vals) / count
    return y


CASES = [
    # (data shape, kernel, strides, pads, dilation, ceil)
    ((2, 3, 11), (3,), (2,), (1, 1), (1,), False),
    ((1, 2, 10), (2,), (3,), (0, 1), (2,), True),
    ((1, 2, 5, 6, 4), (2, 3, 2), (2, 2, 1), (1, 0, 1, 0, 1, 0), (1, 1, 1), True),
    ((1, 1, 4, 4, 5), (2, 2, 2), (1, 2, 2), (0, 1, 0, 1, 1, 1), (2, 1, 1), False),
    ((1, 1, 2, 2, 2), (3, 3, 3), (3, 3, 3), (1, 1, 1, 1, 1, 1), (1, 1, 1), True),
]


@pytest.mark.parametrize("kind, include_pad", [("max", False), ("avg", False), ("avg", True)])
@pytest.mark.parametrize("shape, kernel, strides, pads, dilation, ceil", CASES)
def test_pool_nd_matches_reference_loop(kind, include_pad, shape, kernel, strides, pads,
                                        dilation, ceil):
    x = rng.standard_normal(shape).astype("float32")
    nd = len(kernel)
    extra = {"count_include_pad": include_pad} if kind == "avg" else {}
    build = getattr(op.nn, f"{kind}_pool{nd}d")
    ty, got = _eval(lambda p: build(p, kernel, strides, dilation, pads, ceil_mode=ceil,
                                    **extra), x)
    want = ref_pool(x, kind, kernel, strides, pads, dilation, ceil, include_pad)
    assert ty.shape == want.shape == got.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("nd, layout, perm", [(1, "NWC", (0, 2, 1)),
                                              (3, "NDHWC", (0, 2, 3, 4, 1))])
def test_channels_last_layout_agrees_with_channels_first(nd, layout, perm):
    x = rng.standard_normal((1, 3) + (5,) * nd).astype("float32")
    _, first = _eval(lambda p: getattr(op.nn, f"avg_pool{nd}d")(p, 2, 2, padding=1), x)
    _, last = _eval(lambda p: getattr(op.nn, f"avg_pool{nd}d")(p, 2, 2, padding=1,
                                                               layout=layout), x.transpose(perm))
    np.testing.assert_allclose(last, first.transpose(perm), rtol=1e-6)


def test_integer_average_truncates_and_max_keeps_dtype():
    x = np.array([[[-7, 2, 5, 6, -1]]], dtype="int8")
    _, avg = _eval(lambda p: op.nn.avg_pool1d(p, 2, 2), x)
    _, mx = _eval(lambda p: op.nn.max_pool1d(p, 2, 2, ceil_mode=True), x)
    assert avg.dtype == np.int8 and avg.tolist() == [[[-2, 5]]]
    assert mx.dtype == np.int8 and mx.tolist() == [[[2, 6, -1]]]


@pytest.mark.parametrize("build, shape, message", [
    (lambda p: op.nn.max_pool3d(p, 2), (1, 2, 4, 4), r"nn.max_pool3d.*data"),
    (lambda p: op.nn.avg_pool1d(p, 4), (1, 1, 3),
     r"nn.avg_pool1d: the window spans 4 elements along width"),
])
def test_type_errors_name_the_op(build, shape, message):
    p = var("x", shape=shape)
    with pytest.raises(Exception, match=message):
        irpass.transform.InferType()(IRModule.from_expr(Function([p], build(p))))


def test_bad_pool_size_is_refused():
    with pytest.raises(Exception, match=r"pool_size must be 1 or 3 ints"):
        op.nn.max_pool3d(var("x", shape=(1, 1, 2, 2, 2)), (2, 2))
