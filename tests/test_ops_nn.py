"""nn ops: conv2d, conv2d_transpose, pooling and lrn against naive loop
references, dense, batch_matmul, bias_add, activations and normalization."""

from __future__ import annotations

import irpass
import numpy as np
import pytest
from irpass import op
from irpass.ir import Call, Function, TupleType, var
from op_checks import infer, run, t

X, W, B = var("x"), var("w"), var("b")
RNG = np.random.default_rng(2)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    """Random values in [-1, 1)."""
    return (RNG.random(shape) * 2 - 1).astype(dtype)


# -- conv2d ------------------------------------------------------------------------------------


def conv2d_ref(x, w, strides, padding, dilation, groups):
    """Direct loops over output positions; x NCHW, w OIHW, padding (t, l, b, r)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = strides, dilation, padding
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr))
    xp[:, :, pt : pt + h, pl : pl + wd] = x
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for b in range(n):
        for oc in range(o):
            g = oc // og
            for i in range(oh):
                for j in range(ow):
                    acc = 0.0
                    for ci in range(cg):
                        for p in range(kh):
                            for q in range(kw):
                                acc += (
                                    xp[b, g * cg + ci, i * sh + p * dh, j * sw + q * dw]
                                    * w[oc, ci, p, q]
                                )
                    out[b, oc, i, j] = acc
    return out


CONV_CASES = [
    # (N, C, H, W), (O, C/groups, KH, KW), strides, padding (t, l, b, r), dilation, groups
    ((1, 3, 5, 5), (2, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((2, 2, 6, 5), (3, 2, 3, 2), (2, 1), (1, 0, 1, 0), (1, 1), 1),
    ((1, 2, 7, 7), (2, 2, 3, 3), (1, 2), (2, 1, 0, 2), (2, 1), 1),
    ((1, 4, 5, 5), (6, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
    ((1, 3, 6, 6), (3, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 3),  # depthwise
    ((1, 2, 5, 5), (4, 1, 2, 2), (1, 1), (0, 0, 1, 1), (2, 2), 2),  # depthwise, multiplier 2
]


@pytest.mark.parametrize("dshape,wshape,strides,padding,dilation,groups", CONV_CASES)
@pytest.mark.parametrize("layouts", [("NCHW", "OIHW"), ("NHWC", "HWIO"), ("NHWC", "OHWI")])
def test_conv2d_matches_loops(dshape, wshape, strides, padding, dilation, groups, layouts) -> None:
    x, w = rand(*dshape), rand(*wshape)
    expected = conv2d_ref(x, w, strides, padding, dilation, groups)
    dl, kl = layouts
    xl = x.transpose(["NCHW".index(c) for c in dl])
    wl = w.transpose(["OIHW".index(c) for c in kl])
    call = op.nn.conv2d(
        X,
        W,
        strides=strides,
        padding=padding,
        dilation=dilation,
        groups=groups,
        data_layout=dl,
        kernel_layout=kl,
    )
    out = run(call, xl, wl)
    np.testing.assert_allclose(
        out, expected.transpose(["NCHW".index(c) for c in dl]), rtol=1e-5, atol=1e-5
    )


def test_conv2d_shapes_by_hand() -> None:
    call = op.nn.conv2d(X, W, strides=2, padding=1, channels=8, kernel_size=3)
    assert infer(call, t(1, 3, 32, 32), t(8, 3, 3, 3)) == t(1, 8, 16, 16)
    nhwc = op.nn.conv2d(X, W, padding=(1, 2), data_layout="NHWC", kernel_layout="HWIO")
    assert infer(nhwc, t(2, 10, 10, 4), t(3, 5, 4, 6)) == t(2, 10, 10, 6)
    out_nchw = op.nn.conv2d(X, W, data_layout="NHWC", kernel_layout="HWIO", out_layout="NCHW")
    assert infer(out_nchw, t(2, 10, 10, 4), t(3, 3, 4, 6)) == t(2, 6, 8, 8)
    dilated = op.nn.conv2d(X, W, dilation=2)
    assert infer(dilated, t(1, 1, 9, 9), t(1, 1, 3, 3)) == t(1, 1, 5, 5)


def test_conv2d_padding_forms_are_normalized() -> None:
    assert op.nn.conv2d(X, W, padding=1).attrs["padding"] == (1, 1, 1, 1)
    assert op.nn.conv2d(X, W, padding=(1, 2)).attrs["padding"] == (1, 2, 1, 2)
    assert op.nn.conv2d(X, W, padding=(1, 2, 3, 4)).attrs["padding"] == (1, 2, 3, 4)
    assert op.nn.conv2d(X, W, strides=2).attrs["strides"] == (2, 2)


def test_conv2d_int8_with_int32_out_dtype() -> None:
    x = RNG.integers(-128, 127, size=(1, 2, 4, 4)).astype("int8")
    w = RNG.integers(-128, 127, size=(2, 2, 3, 3)).astype("int8")
    out = run(op.nn.conv2d(X, W, out_dtype="int32"), x, w)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(
        out, conv2d_ref(x.astype(int), w.astype(int), (1, 1), (0,) * 4, (1, 1), 1)
    )


@pytest.mark.parametrize(
    "kwargs,dshape,wshape,error,message",
    [
        (
            {},
            (1, 3, 8, 8),
            (4, 4, 3, 3),
            ValueError,
            r"weight has 4 input channels per group but data has 3 channels \(data_layout NCHW, "
            r"kernel_layout OIHW, groups 1\)",
        ),
        (
            {"groups": 2},
            (1, 3, 8, 8),
            (4, 1, 3, 3),
            ValueError,
            r"data has 3 channels, not divisible by groups 2 \(data_layout NCHW, "
            r"kernel_layout OIHW, groups 2\)",
        ),
        (
            {"groups": 2},
            (1, 4, 8, 8),
            (3, 2, 3, 3),
            ValueError,
            r"weight has 3 output channels, not divisible by groups 2 \(data_layout NCHW, "
            r"kernel_layout OIHW, groups 2\)",
        ),
        (
            {"channels": 5},
            (1, 3, 8, 8),
            (4, 3, 3, 3),
            ValueError,
            r"channels=5 but weight \(4, 3, 3, 3\) \(OIHW\) has 4 output channels",
        ),
        (
            {"kernel_size": (5, 5)},
            (1, 3, 8, 8),
            (4, 3, 3, 3),
            ValueError,
            r"kernel_size=\(5, 5\) but weight \(4, 3, 3, 3\) \(OIHW\) has a 3x3 kernel",
        ),
        (
            {},
            (1, 3, 2, 8),
            (4, 3, 3, 3),
            ValueError,
            r"the window spans 3 elements along height \(size 3, dilation 1\) but the padded input "
            r"has only 2",
        ),
        ({}, (3, 8, 8), (4, 3, 3, 3), ValueError, r"data must be 4-D \(layout NCHW\)"),
    ],
)
def test_conv2d_errors(kwargs, dshape, wshape, error, message) -> None:
    with pytest.raises(error, match=f"nn.conv2d: {message}"):
        infer(op.nn.conv2d(X, W, **kwargs), t(*dshape), t(*wshape))


def test_conv2d_dtype_mismatch() -> None:
    with pytest.raises(TypeError, match="nn.conv2d: arguments must have the same dtype"):
        infer(op.nn.conv2d(X, W), t(1, 3, 8, 8), t(4, 3, 3, 3, dtype="float64"))


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"padding": (1, 2, 3)}, "nn.conv2d.padding must be 1, 2 .* or 4"),
        ({"strides": 0}, "nn.conv2d.strides values must be >= 1"),
        ({"data_layout": "NCWH"}, "nn.conv2d.data_layout: unsupported layout 'NCWH'"),
        ({"kernel_layout": "OIHW8o"}, "nn.conv2d.kernel_layout: unsupported layout"),
        ({"groups": 0}, "nn.conv2d.groups must be >= 1"),
        ({"stride": 2}, "op 'nn.conv2d' has no attribute 'stride'; did you mean strides"),
    ],
)
def test_conv2d_attr_errors(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        if "stride" in kwargs:
            Call(op.get("nn.conv2d"), [X, W], kwargs)
        else:
            op.nn.conv2d(X, W, **kwargs)


# -- pooling -----------------------------------------------------------------------------------


def pool_ref(x, kind, out_hw, pool, strides, padding, dilation, include_pad=False):
    """Loops over output positions; x NCHW. Positions outside the input are skipped
    (max) or left out of the sum; ``include_pad`` counts positions in the padded input."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr) = pool, strides, dilation, padding
    out = np.zeros((n, c) + tuple(out_hw))
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            vals, padded = [], 0
            for p in range(kh):
                for q in range(kw):
                    r, s = i * sh + p * dh - pt, j * sw + q * dw - pl
                    if -pt <= r < h + pb and -pl <= s < w + pr:
                        padded += 1
                    if 0 <= r < h and 0 <= s < w:
                        vals.append(x[:, :, r, s])
            stack = np.stack(vals, axis=-1)
            if kind == "max":
                out[:, :, i, j] = stack.max(axis=-1)
            else:
                out[:, :, i, j] = stack.sum(axis=-1) / (padded if include_pad else len(vals))
    return out


POOL_CASES = [
    # (H, W), pool, strides, padding, dilation, ceil_mode, expected (OH, OW) by hand
    ((6, 6), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False, (3, 3)),
    ((7, 7), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False, (3, 3)),
    ((7, 7), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), True, (4, 4)),
    ((5, 5), (3, 3), (3, 3), (1, 1, 1, 1), (1, 1), False, (2, 2)),
    # ceil would give 3, but the third window would start in the trailing padding
    ((5, 5), (3, 3), (3, 3), (1, 1, 1, 1), (1, 1), True, (2, 2)),
    ((6, 5), (3, 2), (2, 1), (1, 0, 1, 1), (1, 1), True, (4, 5)),
    ((7, 7), (2, 3), (1, 2), (1, 1, 0, 0), (2, 1), False, (6, 3)),
    ((8, 8), (3, 3), (3, 3), (1, 1, 1, 1), (1, 1), True, (3, 3)),
    # the sixth window starts at 9 (input), covers padding at 10 and overhangs at 11
    ((10, 10), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, (6, 6)),
    # PyTorch/ONNX drop the window at 6 (past the input); TVM would keep it: 3x3
    ((5, 5), (1, 1), (3, 3), (0, 0, 0, 0), (1, 1), True, (2, 2)),
]


@pytest.mark.parametrize("hw,pool,strides,padding,dilation,ceil_mode,out_hw", POOL_CASES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_max_pool2d_matches_loops(hw, pool, strides, padding, dilation, ceil_mode, out_hw, layout):
    x = rand(2, 3, *hw)
    call = op.nn.max_pool2d(X, pool, strides, dilation, padding, layout=layout, ceil_mode=ceil_mode)
    xl = x if layout == "NCHW" else x.transpose(0, 2, 3, 1)
    out = run(call, xl)
    expected = pool_ref(x, "max", out_hw, pool, strides, padding, dilation)
    if layout == "NHWC":
        expected = expected.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@pytest.mark.parametrize("hw,pool,strides,padding,dilation,ceil_mode,out_hw", POOL_CASES)
@pytest.mark.parametrize("include_pad", [False, True])
def test_avg_pool2d_matches_loops(
    hw, pool, strides, padding, dilation, ceil_mode, out_hw, include_pad
):
    x = rand(1, 2, *hw)
    call = op.nn.avg_pool2d(
        X, pool, strides, dilation, padding, ceil_mode=ceil_mode, count_include_pad=include_pad
    )
    out = run(call, x)
    expected = pool_ref(x, "avg", out_hw, pool, strides, padding, dilation, include_pad)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_avg_pool_count_include_pad_by_hand() -> None:
    x = np.ones((1, 1, 2, 2), dtype="float32")
    excl = run(op.nn.avg_pool2d(X, 2, 2, padding=1), x)
    incl = run(op.nn.avg_pool2d(X, 2, 2, padding=1, count_include_pad=True), x)
    assert excl.tolist() == [[[[1.0, 1.0], [1.0, 1.0]]]]
    assert incl.tolist() == [[[[0.25, 0.25], [0.25, 0.25]]]]


def test_pool_integer_dtypes() -> None:
    x = np.array([[[[1, 2], [4, 8]]]], dtype="int32")
    assert run(op.nn.max_pool2d(X, 2, padding=1), x)[0, 0].tolist() == [
        [1, 2, 2],
        [4, 8, 8],
        [4, 8, 8],
    ]
    avg = run(op.nn.avg_pool2d(X, 2), np.array([[[[1, 2], [4, 8]]]], "int8"))
    assert avg.dtype == np.int8 and avg.item() == 3  # 15 / 4 truncated
    assert run(op.nn.max_pool2d(X, 2), np.array([[[[-5, -6], [-7, -8]]]], "int8")).item() == -5


def test_ceil_mode_docs_state_the_difference_from_tvm() -> None:
    from irpass.op.nn import _window, pool

    for module in (_window, pool):
        doc = " ".join(module.__doc__.split())
        assert "as in TVM" not in doc
        assert "5x5" in doc and "2x2 here" in doc and "3x3 in TVM" in doc


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_integer_avg_pool_is_exact_for_64_bit_values(dtype) -> None:
    # float64 holds integers exactly only up to 2**53; these need all 64 bits
    big = 2**62 if dtype == "int64" else 2**64 - 8
    x = np.array([[[[big + 1, big + 3], [big + 6, big + 7]]]], dtype=dtype)
    pairs = run(op.nn.avg_pool2d(X, (1, 2)), x)
    assert pairs.dtype == np.dtype(dtype)
    assert pairs[0, 0, :, 0].tolist() == [big + 2, big + 6]  # (2b+4)/2, (2b+13)/2 truncated
    whole = run(op.nn.global_avg_pool2d(X), x)
    assert whole.item() == big + 4  # (4b + 17) / 4 truncated
    padded = run(op.nn.avg_pool2d(X, 2, padding=(0, 1), count_include_pad=True), x)
    # windows over columns {-1, 0}, {0, 1}, {1, 2}; padding counts in every divisor
    expected = [(2 * big + 7) // 4, (4 * big + 17) // 4, (2 * big + 10) // 4]
    assert padded[0, 0, 0].tolist() == expected


def test_integer_avg_pool_truncates_negative_averages_toward_zero() -> None:
    x = np.array([[[[-(2**62) - 1, -(2**62) - 2], [-7, 2]]]], dtype="int64")
    out = run(op.nn.avg_pool2d(X, (1, 2)), x)
    assert out[0, 0, :, 0].tolist() == [-(2**62) - 1, -2]  # -(2**63 + 3) / 2 and -5 / 2
    assert run(op.nn.global_avg_pool2d(X), x).item() == -(2**63 + 8) // 4


def test_tap_slices_select_each_taps_input_positions() -> None:
    from irpass.op.nn._window import tap_slices

    # tap (1, 2) of a dilation-(2, 1) kernel, strides (3, 2), 2x3 outputs
    rows, cols = tap_slices((1, 2), (3, 2), (2, 1), (2, 3))
    assert list(range(12))[rows] == [2, 5] and list(range(12))[cols] == [2, 4, 6]


def test_pool_out_layout_and_errors() -> None:
    call = op.nn.max_pool2d(X, (2, 2), (2, 2), layout="NHWC", out_layout="NCHW")
    assert infer(call, t(1, 8, 6, 3)) == t(1, 3, 4, 3)
    with pytest.raises(ValueError, match="nn.max_pool2d: the window spans 5 elements along width"):
        infer(op.nn.max_pool2d(X, (1, 5)), t(1, 1, 4, 4))
    with pytest.raises(ValueError, match=r"nn.avg_pool2d: data must be 4-D \(layout NCHW\)"):
        infer(op.nn.avg_pool2d(X), t(1, 4, 4))
    with pytest.raises(ValueError, match="nn.max_pool2d.layout: unsupported layout 'NCDHW'"):
        op.nn.max_pool2d(X, layout="NCDHW")
    with pytest.raises(TypeError, match="nn.max_pool2d: data must have a numeric"):
        infer(op.nn.max_pool2d(X), t(1, 1, 2, 2, dtype="bool"))


def test_global_avg_pool2d() -> None:
    x = rand(2, 3, 4, 5)
    out = run(op.nn.global_avg_pool2d(X), x)
    assert out.shape == (2, 3, 1, 1)
    # means of values in [-1, 1] can cancel to near 0, where rtol alone is below the float32
    # rounding of any summation order: atol covers it
    np.testing.assert_allclose(out[:, :, 0, 0], x.mean(axis=(2, 3)), rtol=1e-5, atol=1e-6)
    nhwc = run(op.nn.global_avg_pool2d(X, layout="NHWC"), x.transpose(0, 2, 3, 1))
    np.testing.assert_allclose(nhwc[:, 0, 0, :], x.mean(axis=(2, 3)), rtol=1e-5, atol=1e-6)
    ints = run(op.nn.global_avg_pool2d(X), np.array([[[[1, 2], [2, 2]]]], "int32"))
    assert ints.item() == 1  # 7 / 4 truncated


# -- dense, batch_matmul, bias_add -------------------------------------------------------------


def test_dense() -> None:
    x, w = rand(2, 5, 4), rand(3, 4)
    call = op.nn.dense(X, W, units=3)
    assert infer(call, t(2, 5, 4), t(3, 4)) == t(2, 5, 3)
    expected = np.einsum("abk,uk->abu", x.astype("float64"), w.astype("float64"))
    # atol: a sum that cancels to near 0 (float32 rounding of 4 products of size <= 1)
    np.testing.assert_allclose(run(call, x, w), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(
        ValueError, match=r"nn.dense: data has 4 features .* weight \(3, 5\) expects 5"
    ):
        infer(call, t(2, 4), t(3, 5))
    with pytest.raises(ValueError, match=r"nn.dense: units=3 but weight \(2, 4\) has 2"):
        infer(call, t(2, 4), t(2, 4))
    with pytest.raises(ValueError, match=r"nn.dense: weight \(units, in_features\) must be 2-D"):
        infer(call, t(2, 4), t(4))


def test_dense_int8_accumulates_in_out_dtype() -> None:
    x = np.full((1, 4), 100, "int8")
    w = np.full((2, 4), 100, "int8")
    out = run(op.nn.dense(X, W, out_dtype="int32"), x, w)
    assert out.tolist() == [[40000, 40000]]


@pytest.mark.parametrize("ta,tb", [(False, True), (False, False), (True, False), (True, True)])
def test_batch_matmul(ta, tb) -> None:
    x = rand(3, 2, 4) if not ta else rand(3, 4, 2)
    y = rand(1, 5, 4) if tb else rand(1, 4, 5)  # batch 1 broadcasts
    call = op.nn.batch_matmul(X, W, transpose_a=ta, transpose_b=tb)
    out = run(call, x, y)
    assert out.shape == (3, 2, 5)
    xx = x.transpose(0, 2, 1) if ta else x
    yy = y.transpose(0, 2, 1) if tb else y
    for b in range(3):
        np.testing.assert_allclose(out[b], xx[b] @ yy[0], rtol=1e-5, atol=1e-6)


def test_batch_matmul_errors() -> None:
    call = op.nn.batch_matmul(X, W)
    with pytest.raises(ValueError, match="nn.batch_matmul: reduction dims differ: x .* K=4"):
        infer(call, t(2, 3, 4), t(2, 5, 3))
    with pytest.raises(ValueError, match="batch sizes 2 .x. and 3 .y. differ"):
        infer(call, t(2, 3, 4), t(3, 5, 4))
    with pytest.raises(ValueError, match=r"nn.batch_matmul: x \(batch, M, K\) must be 3-D"):
        infer(call, t(3, 4), t(2, 5, 4))


def test_bias_add() -> None:
    x, b = rand(2, 3, 4), rand(3)
    out = run(op.nn.bias_add(X, B), x, b)
    np.testing.assert_allclose(out, x + b[None, :, None], rtol=1e-6)
    out = run(op.nn.bias_add(X, B, axis=-1), x, rand(4))
    assert out.shape == (2, 3, 4)
    with pytest.raises(
        ValueError, match=r"nn.bias_add: bias must have shape \(3,\) to match axis 1"
    ):
        infer(op.nn.bias_add(X, B), t(2, 3, 4), t(4))


# -- activations and normalization -------------------------------------------------------------


def test_relu() -> None:
    assert run(op.nn.relu(X), np.array([-1.5, 0.0, 2.0], "float32")).tolist() == [0.0, 0.0, 2.0]
    assert run(op.nn.relu(X), np.array([-3, 4], "int8")).tolist() == [0, 4]


def test_softmax() -> None:
    x = rand(2, 3, 4)
    out = run(op.nn.softmax(X, axis=1), x)
    e = np.exp(x.astype("float64"))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    big = run(op.nn.softmax(X), np.array([1000.0, 1000.0, -1000.0], "float32"))
    assert big.tolist() == [0.5, 0.5, 0.0]
    with pytest.raises(TypeError, match="nn.softmax: data must have a floating-point dtype"):
        infer(op.nn.softmax(X), t(3, dtype="int32"))
    with pytest.raises(ValueError, match="nn.softmax: axis 2 is out of range"):
        infer(op.nn.softmax(X, axis=2), t(3, 3))


def test_batch_norm() -> None:
    x = rand(2, 3, 4, 4)
    gamma, beta, mean, var_ = rand(3), rand(3), rand(3), rand(3) + 1.5
    call = op.nn.batch_norm(X, *[var(n) for n in "gbmv"], epsilon=1e-3)
    ty = infer(call, t(2, 3, 4, 4), t(3), t(3), t(3), t(3))
    assert ty == TupleType((t(2, 3, 4, 4), t(3), t(3)))
    out, m, v = run(call, x, gamma, beta, mean, var_)
    c = (slice(None), None, None)
    expected = (x - mean[c]) / np.sqrt(var_[c] + 1e-3) * gamma[c] + beta[c]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(m, mean)
    np.testing.assert_array_equal(v, var_)
    plain = op.nn.batch_norm(X, *[var(n) for n in "gbmv"], center=False, scale=False)
    np.testing.assert_allclose(
        run(plain, x, gamma, beta, mean, var_)[0],
        (x - mean[c]) / np.sqrt(var_[c] + 1e-5),
        rtol=1e-5,
    )


def test_batch_norm_errors() -> None:
    call = op.nn.batch_norm(X, *[var(n) for n in "gbmv"])
    with pytest.raises(ValueError, match=r"nn.batch_norm: moving_var must have shape \(3,\)"):
        infer(call, t(2, 3, 4), t(3), t(3), t(3), t(4))
    with pytest.raises(TypeError, match="nn.batch_norm: gamma has dtype float64 but data has"):
        infer(call, t(2, 3, 4), t(3, dtype="float64"), t(3), t(3), t(3))
    with pytest.raises(ValueError, match="nn.batch_norm.epsilon must be >= 0"):
        op.nn.batch_norm(X, *[var(n) for n in "gbmv"], epsilon=-1.0)


def test_layer_norm() -> None:
    x, gamma, beta = rand(2, 3, 5), rand(5), rand(5)
    out = run(op.nn.layer_norm(X, var("g"), var("b")), x, gamma, beta)
    xd = x.astype("float64")
    mu = xd.mean(axis=-1, keepdims=True)
    sd = np.sqrt(((xd - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, (xd - mu) / sd * gamma + beta, rtol=1e-4, atol=1e-5)
    on1 = run(op.nn.layer_norm(X, var("g"), var("b"), axis=1), x, rand(3), rand(3))
    assert on1.shape == (2, 3, 5)
    with pytest.raises(ValueError, match=r"nn.layer_norm: gamma must have shape \(5,\)"):
        infer(op.nn.layer_norm(X, var("g"), var("b")), t(2, 5), t(2), t(5))


def test_dropout_is_identity_copy() -> None:
    x = rand(3, 2)
    call = op.nn.dropout(X, rate=0.25)
    assert infer(call, t(3, 2)) == t(3, 2)
    out = run(call, x)
    np.testing.assert_array_equal(out, x)
    assert not np.shares_memory(out, x)
    with pytest.raises(ValueError, match=r"nn.dropout.rate must be in \[0, 1\), got 1.0"):
        op.nn.dropout(X, rate=1.0)


def test_leaky_relu() -> None:
    x = np.array([-2.0, -0.0, 0.0, 0.5, -np.inf, np.nan], "float32")
    out = run(op.nn.leaky_relu(X, alpha=0.1), x)
    np.testing.assert_array_equal(out[:5], np.array([-0.2, -0.0, 0.0, 0.5, -np.inf], "float32"))
    assert np.isnan(out[5])
    y = rand(3, 4, dtype="float64")
    np.testing.assert_array_equal(run(op.nn.leaky_relu(X), y), np.where(y > 0, y, 0.01 * y))
    h = rand(5, dtype="float16")
    assert run(op.nn.leaky_relu(X, 0.2), h).dtype == np.float16
    assert op.nn.leaky_relu(X).attrs["alpha"] == 0.01
    with pytest.raises(TypeError, match="nn.leaky_relu: data must have a floating-point dtype"):
        infer(op.nn.leaky_relu(X), t(3, dtype="int32"))
    with pytest.raises(TypeError, match="nn.leaky_relu.alpha must be a number"):
        op.nn.leaky_relu(X, alpha="0.1")


def test_log_softmax_matches_log_of_softmax() -> None:
    x = rand(2, 3, 4) * 5
    for axis in (-1, 0, 1):
        out = run(op.nn.log_softmax(X, axis=axis), x)
        xd = x.astype("float64")
        e = np.exp(xd)
        np.testing.assert_allclose(
            out, np.log(e / e.sum(axis=axis, keepdims=True)), rtol=1e-5, atol=1e-6
        )
    assert op.nn.log_softmax(X).attrs["axis"] == -1


def test_log_softmax_is_stable_where_softmax_underflows() -> None:
    x = np.array([[1000.0, 0.0, -1000.0]], "float32")
    out = run(op.nn.log_softmax(X), x)
    # softmax of the last two is 0 in float32: log would give -inf, not these
    np.testing.assert_allclose(out, [[0.0, -1000.0, -2000.0]], rtol=1e-6)
    assert np.all(np.isfinite(out))


def test_log_softmax_errors() -> None:
    with pytest.raises(TypeError, match="nn.log_softmax: data must have a floating-point dtype"):
        infer(op.nn.log_softmax(X), t(3, dtype="int64"))
    with pytest.raises(ValueError, match="nn.log_softmax: axis -3 is out of range"):
        infer(op.nn.log_softmax(X, axis=-3), t(3, 3))
    with pytest.raises(ValueError, match="nn.log_softmax: data must have at least one dim"):
        infer(op.nn.log_softmax(X), t())


# An empty tensor in, an empty tensor of the same shape and dtype out, whichever
# axis has size 0 and whichever axis the op normalizes over.
EMPTY_CASES = [((2, 0), 1), ((2, 0), 0), ((2, 0), -1), ((0, 3), 0), ((0, 3), 1),
               ((0, 3), -2), ((0,), 0), ((3, 0, 2), 1), ((3, 0, 2), 2)]
ACTIVATIONS = {
    "nn.softmax": lambda x, axis: op.nn.softmax(x, axis=axis),
    "nn.log_softmax": lambda x, axis: op.nn.log_softmax(x, axis=axis),
    "nn.relu": lambda x, axis: op.nn.relu(x),
    "nn.leaky_relu": lambda x, axis: op.nn.leaky_relu(x),
    "nn.dropout": lambda x, axis: op.nn.dropout(x),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize(
    ("shape", "axis"), EMPTY_CASES, ids=[f"{s}-axis{a}" for s, a in EMPTY_CASES]
)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_activations_of_empty_tensors_are_empty(name, shape, axis, dtype) -> None:
    x = var("x", shape=shape, dtype=dtype)
    call = ACTIVATIONS[name](x, axis)
    out = run(call, np.zeros(shape, dtype))  # the kernel's result has the inferred type
    assert out.shape == shape and out.dtype == dtype
    out = irpass.evaluate(Function([x], call), np.zeros(shape, dtype))
    assert out.shape == shape and out.dtype == dtype


def lrn_ref(x, size, axis, bias, alpha, beta):
    """ONNX LRN by loops: the window [c - floor((size-1)/2), c + ceil((size-1)/2)]."""
    x = np.moveaxis(x.astype("float64"), axis, 0)
    c = x.shape[0]
    out = np.empty_like(x)
    for ch in range(c):
        lo = max(0, ch - (size - 1) // 2)
        hi = min(c - 1, ch + int(np.ceil((size - 1) / 2)))
        square_sum = np.zeros_like(x[0])
        for k in range(lo, hi + 1):
            square_sum += x[k] ** 2
        out[ch] = x[ch] / (bias + alpha / size * square_sum) ** beta
    return np.moveaxis(out, 0, axis)


@pytest.mark.parametrize(
    "shape,size,axis,bias,alpha,beta",
    [
        ((2, 7, 3, 3), 5, 1, 2.0, 1e-4, 0.75),
        ((1, 6, 2, 2), 3, 1, 1.0, 0.5, 0.5),
        ((1, 5, 2, 2), 4, 1, 1.5, 0.3, 0.75),  # even size: one more neighbour after
        ((1, 3, 4), 7, 1, 1.0, 1.0, 1.0),  # window wider than the channels
        ((2, 3, 6), 3, -1, 0.5, 2.0, 0.25),
        ((4,), 1, 0, 1.0, 1.0, 2.0),
    ],
)
def test_lrn_matches_loops(shape, size, axis, bias, alpha, beta) -> None:
    x = rand(*shape) * 3
    call = op.nn.lrn(X, size=size, axis=axis, bias=bias, alpha=alpha, beta=beta)
    assert infer(call, t(*shape)) == t(*shape)
    out = run(call, x)
    np.testing.assert_allclose(out, lrn_ref(x, size, axis, bias, alpha, beta), rtol=1e-5)


def test_lrn_defaults_and_errors() -> None:
    attrs = op.nn.lrn(X).attrs
    assert (attrs["size"], attrs["axis"], attrs["bias"], attrs["alpha"], attrs["beta"]) == (
        5,
        1,
        2.0,
        1e-4,
        0.75,
    )
    with pytest.raises(TypeError, match="nn.lrn: data must have a floating-point dtype"):
        infer(op.nn.lrn(X), t(1, 3, 2, 2, dtype="int32"))
    with pytest.raises(ValueError, match="nn.lrn: axis 1 is out of range for a 1-D"):
        infer(op.nn.lrn(X), t(3))
    with pytest.raises(ValueError, match="nn.lrn.size must be >= 1, got 0"):
        op.nn.lrn(X, size=0)
    with pytest.raises(ValueError, match="nn.lrn.beta must be a finite number"):
        op.nn.lrn(X, beta=float("nan"))


# -- conv2d_transpose --------------------------------------------------------------------------


def conv2d_transpose_ref(x, w, strides, padding, output_padding, dilation, groups):
    """Scatter loops, as ONNX ConvTranspose defines it; x NCHW, w (C, M/groups, kH, kW)."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    (sh, sw), (dh, dw), (oph, opw) = strides, dilation, output_padding
    pt, pl, pb, pr = padding
    cg = c // groups
    full_h = sh * (h - 1) + dh * (kh - 1) + 1 + oph
    full_w = sw * (wd - 1) + dw * (kw - 1) + 1 + opw
    full = np.zeros((n, og * groups, full_h, full_w))
    for b in range(n):
        for ci in range(c):
            g = ci // cg
            for i in range(h):
                for j in range(wd):
                    for o in range(og):
                        for p in range(kh):
                            for q in range(kw):
                                full[b, g * og + o, i * sh + p * dh, j * sw + q * dw] += (
                                    x[b, ci, i, j] * w[ci, o, p, q]
                                )
    return full[:, :, pt : full_h - pb, pl : full_w - pr]


CONV_T_CASES = [
    # (N, C, H, W), (C, M/groups, KH, KW), strides, padding, output_padding, dilation, groups
    ((1, 2, 3, 3), (2, 3, 3, 3), (1, 1), (0, 0, 0, 0), (0, 0), (1, 1), 1),
    ((2, 3, 4, 3), (3, 2, 3, 2), (2, 2), (1, 0, 1, 0), (1, 1), (1, 1), 1),
    ((1, 2, 3, 4), (2, 2, 2, 3), (3, 2), (0, 1, 2, 1), (2, 1), (1, 2), 1),
    ((1, 4, 3, 3), (4, 3, 3, 3), (2, 1), (1, 1, 1, 1), (1, 0), (2, 1), 2),
    ((1, 3, 4, 4), (3, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), 3),  # depthwise
    ((1, 2, 2, 2), (2, 2, 1, 1), (3, 3), (0, 0, 0, 0), (2, 2), (1, 1), 1),  # 1x1, gaps
    ((1, 1, 5, 5), (1, 1, 4, 4), (1, 1), (3, 3, 3, 3), (0, 0), (1, 1), 1),  # heavy cropping
]


@pytest.mark.parametrize("dshape,wshape,strides,padding,opad,dilation,groups", CONV_T_CASES)
@pytest.mark.parametrize("layouts", [("NCHW", "IOHW"), ("NHWC", "HWOI"), ("NCHW", "OIHW")])
def test_conv2d_transpose_matches_loops(
    dshape, wshape, strides, padding, opad, dilation, groups, layouts
) -> None:
    x, w = rand(*dshape), rand(*wshape)
    expected = conv2d_transpose_ref(x, w, strides, padding, opad, dilation, groups)
    dl, kl = layouts
    xl = x.transpose(["NCHW".index(c) for c in dl])
    wl = w.transpose(["IOHW".index(c) for c in kl])
    call = op.nn.conv2d_transpose(
        X,
        W,
        strides=strides,
        padding=padding,
        output_padding=opad,
        dilation=dilation,
        groups=groups,
        channels=wshape[1] * groups,
        kernel_size=wshape[2:],
        data_layout=dl,
        kernel_layout=kl,
    )
    out = run(call, xl, wl)
    want = expected.transpose(["NCHW".index(c) for c in dl])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_conv2d_transpose_is_the_adjoint_of_conv2d() -> None:
    """<conv2d(y, w), x> == <y, conv2d_transpose(x, w)> for the same strides/padding/dilation."""
    y, w = rand(1, 3, 7, 6), rand(2, 3, 3, 3)  # conv2d: 3 -> 2 channels, OIHW
    kw = {"strides": (2, 2), "padding": (1, 1, 1, 1), "dilation": (1, 1)}
    cy = run(op.nn.conv2d(X, W, **kw), y, w).astype("float64")
    x = rand(*cy.shape).astype("float32")
    # the transposed conv maps 2 -> 3 channels with the same weight read as IOHW;
    # output_padding recovers the rows the strided conv2d dropped
    ty = run(op.nn.conv2d_transpose(X, W, output_padding=(0, 1), **kw), x, w).astype("float64")
    assert ty.shape == y.shape
    np.testing.assert_allclose(np.sum(cy * x), np.sum(y * ty), rtol=1e-5, atol=1e-4)


def test_conv2d_transpose_shapes_and_dtypes() -> None:
    call = op.nn.conv2d_transpose(X, W, strides=2, padding=1, output_padding=1)
    assert call.attrs["padding"] == (1, 1, 1, 1) and call.attrs["output_padding"] == (1, 1)
    assert infer(call, t(1, 4, 5, 5), t(4, 8, 3, 3)) == t(1, 8, 10, 10)
    nhwc = op.nn.conv2d_transpose(X, W, data_layout="NHWC", out_layout="NCHW")
    assert infer(nhwc, t(1, 5, 5, 4), t(4, 8, 3, 3)) == t(1, 8, 7, 7)
    ints = op.nn.conv2d_transpose(X, W, out_dtype="int32")
    x = RNG.integers(-100, 100, (1, 2, 3, 3)).astype("int8")
    w = RNG.integers(-100, 100, (2, 1, 2, 2)).astype("int8")
    out = run(ints, x, w)
    expected = conv2d_transpose_ref(
        x.astype(int), w.astype(int), (1, 1), (0,) * 4, (0, 0), (1, 1), 1
    )
    np.testing.assert_array_equal(out, expected.astype("int32"))


@pytest.mark.parametrize(
    "kwargs,dshape,wshape,error,message",
    [
        ({}, (1, 3, 4, 4), (2, 2, 3, 3), ValueError, r"weight \(2, 2, 3, 3\) has 2 input ch"),
        (
            {"groups": 2},
            (1, 3, 4, 4),
            (3, 2, 3, 3),
            ValueError,
            r"data has 3 channels, not divisib",
        ),
        ({"channels": 5}, (1, 2, 4, 4), (2, 2, 3, 3), ValueError, r"channels=5 but weight"),
        ({"kernel_size": 2}, (1, 2, 4, 4), (2, 2, 3, 3), ValueError, r"kernel_size=\(2, 2\)"),
        ({"padding": 3}, (1, 2, 2, 2), (2, 2, 2, 2), ValueError, r"the output would have -3 elem"),
        ({}, (1, 2, 4), (2, 2, 3, 3), ValueError, r"data must be 4-D \(layout NCHW\)"),
        ({}, (1, 2, 4, 4), (2, 2, 3), ValueError, r"weight must be 4-D \(layout IOHW\)"),
    ],
)
def test_conv2d_transpose_errors(kwargs, dshape, wshape, error, message) -> None:
    with pytest.raises(error, match="nn.conv2d_transpose: " + message):
        infer(op.nn.conv2d_transpose(X, W, **kwargs), t(*dshape), t(*wshape))


def test_conv2d_transpose_type_and_attr_errors() -> None:
    with pytest.raises(TypeError, match="nn.conv2d_transpose: arguments must have the same dtype"):
        infer(op.nn.conv2d_transpose(X, W), t(1, 2, 3, 3), t(2, 2, 3, 3, dtype="float64"))
    with pytest.raises(TypeError, match="nn.conv2d_transpose: data must have a numeric"):
        infer(
            op.nn.conv2d_transpose(X, W), t(1, 2, 3, 3, dtype="bool"), t(2, 2, 3, 3, dtype="bool")
        )
    with pytest.raises(ValueError, match=r"nn.conv2d_transpose.output_padding values must be >= 0"):
        op.nn.conv2d_transpose(X, W, output_padding=(-1, 0))
    with pytest.raises(ValueError, match=r"nn.conv2d_transpose.kernel_layout: unsupported layout"):
        op.nn.conv2d_transpose(X, W, kernel_layout="IOHWX")


# -- example models ----------------------------------------------------------------------------


def test_resnet_conv_weights_have_the_same_scale_in_both_layouts() -> None:
    """Both layouts draw the same numbers in the same order; with the right fan_in
    (kh * kw * in channels, whatever the layout) they are scaled alike."""
    from irpass.ir.functor import post_order_visit
    from irpass.testing.models import resnet

    def conv_weights(layout: str) -> list[np.ndarray]:
        found: list[np.ndarray] = []

        def visit(node) -> None:
            if isinstance(node, Call) and node.op is op.get("nn.conv2d"):
                found.append(node.args[1].data)

        mod = resnet(image_size=8, channels=4, num_blocks=1, layout=layout)
        post_order_visit(mod["main"], visit)
        return found

    nchw, nhwc = conv_weights("NCHW"), conv_weights("NHWC")
    assert len(nchw) == len(nhwc) == 3
    for a, b in zip(nchw, nhwc, strict=True):
        assert b.shape == (a.shape[2], a.shape[3], a.shape[1], a.shape[0])
        np.testing.assert_array_equal(np.sort(a, axis=None), np.sort(b, axis=None))
