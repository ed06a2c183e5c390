"""image.resize1d/2d/3d: the kernel against ONNX's reference implementation of Resize (the
spec's own numpy code, run through onnx.reference) and hand-computed values; type errors."""

from __future__ import annotations

import irpass
import numpy as np
import pytest
from irpass import op
from irpass.ir import Function, IRModule, var
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

rng = np.random.default_rng(5)


def _eval(build, x):
    p = var("x", shape=x.shape, dtype=str(x.dtype))
    mod = irpass.transform.InferType()(IRModule.from_expr(Function([p], build(p))))
    return mod["main"].ret_type, irpass.evaluate(mod, x=x)


def onnx_resize(x, scales=None, sizes=None, roi=None, **attrs):
    """ONNX's reference Resize of ``x`` (scales/sizes/roi over every axis)."""
    names = ["x", "roi" if roi is not None else "", "scales" if scales is not None else "",
             "sizes" if sizes is not None else ""]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("Resize", names, ["y"], **attrs)
    feeds = {"x": x}
    if roi is not None:
        feeds["roi"] = np.asarray(roi, np.float32)
    if scales is not None:
        feeds["scales"] = np.asarray(scales, np.float32)
    if sizes is not None:
        feeds["sizes"] = np.asarray(sizes, np.int64)
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for k, v in feeds.items()]
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    return ReferenceEvaluator(model).run(None, feeds)[0]


_MODES = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic"}


CASES = [
    # (shape, scales or None, sizes or None, onnx attrs)
    ((1, 2, 4, 5), (1, 1, 1.7, 0.6), None, {"mode": "linear"}),
    ((1, 2, 4, 5), (1, 1, 2.0, 3.0), None, {"mode": "nearest"}),
    ((2, 1, 5, 4), None, (2, 1, 3, 7), {"mode": "cubic", "exclude_outside": 1,
                                        "cubic_coeff_a": -0.5}),
    ((1, 1, 6, 6), (1, 1, 0.5, 0.7), None, {"mode": "cubic", "antialias": 1}),
    ((1, 1, 8, 5), None, (1, 1, 3, 3), {"mode": "linear", "antialias": 1,
                                        "coordinate_transformation_mode": "pytorch_half_pixel"}),
    ((1, 2, 4, 4), (1, 1, 0.6, 1.5), None, {"mode": "linear",
                                            "coordinate_transformation_mode": "align_corners"}),
    ((1, 1, 5, 3), (1, 1, 1.5, 2.5), None,
     {"mode": "nearest", "nearest_mode": "ceil",
      "coordinate_transformation_mode": "half_pixel_symmetric"}),
    ((1, 1, 5, 3), None, (1, 1, 7, 2),
     {"mode": "nearest", "nearest_mode": "round_prefer_ceil",
      "coordinate_transformation_mode": "asymmetric"}),
    ((1, 3, 7), (1, 1, 0.45), None, {"mode": "cubic"}),
    ((1, 1, 3, 4, 2), None, (1, 1, 5, 2, 3), {"mode": "linear",
                                              "coordinate_transformation_mode": "asymmetric"}),
]


@pytest.mark.parametrize("shape, scales, sizes, attrs", CASES)
def test_resize_matches_onnx_reference(shape, scales, sizes, attrs):
    x = rng.standard_normal(shape).astype("float32")
    want = onnx_resize(x, scales=scales, sizes=sizes, **attrs)
    n = len(shape) - 2
    method = _MODES[attrs["mode"]]
    kw = dict(method=method,
              coordinate_transformation_mode=attrs.get("coordinate_transformation_mode",
                                                       "half_pixel"),
              rounding_method=attrs.get("nearest_mode", "round_prefer_floor")
              if method == "nearest_neighbor" else "",
              cubic_alpha=attrs.get("cubic_coeff_a", -0.75),
              cubic_exclude=attrs.get("exclude_outside", 0),
              antialias=bool(attrs.get("antialias", 0)),
              scales=None if scales is None else scales[2:])
    build = getattr(op.image, f"resize{n}d")
    ty, got = _eval(lambda p: build(p, want.shape[2:], **kw), x)
    assert ty.shape == want.shape == got.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_tf_crop_and_resize_reads_extrapolation_value_outside_the_input():
    x = rng.standard_normal((1, 1, 4, 4)).astype("float32")
    roi = (0, 0, 0.4, -0.2, 1, 1, 1.3, 0.8)
    want = onnx_resize(x, sizes=(1, 1, 3, 3), roi=roi, mode="linear",
                       coordinate_transformation_mode="tf_crop_and_resize",
                       extrapolation_value=7.5)
    _, got = _eval(lambda p: op.image.resize2d(
        p, (3, 3), roi=(0.4, -0.2, 1.3, 0.8), coordinate_transformation_mode="tf_crop_and_resize",
        extrapolation_value=7.5), x)
    assert (got == 7.5).any()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_nearest_2x_upsampling_repeats_and_keeps_int_dtype():
    x = np.array([[[[1, 2], [3, 4]]]], dtype="int32")
    _, got = _eval(lambda p: op.image.resize2d(p, (4, 4), method="nearest_neighbor",
                                               coordinate_transformation_mode="asymmetric"), x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, x.repeat(2, axis=2).repeat(2, axis=3))


def test_linear_on_uint8_rounds_half_to_even_and_channels_last_layout():
    x = np.array([[[0], [3]]], dtype="uint8")  # NWC: width 2, one channel
    # half_pixel 2 -> 4: sources -0.25, 0.25, 0.75, 1.25 -> 0, 0.75, 2.25, 3
    _, got = _eval(lambda p: op.image.resize1d(p, (4,), layout="NWC"), x)
    assert got.dtype == np.uint8 and got[0, :, 0].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("build, shape, message", [
    (lambda p: op.image.resize2d(p, (2, 2)), (1, 4, 4), r"image.resize2d.*data"),
    (lambda p: op.image.resize1d(p, (3,), method="nearest_neighbor", antialias=True),
     (1, 1, 4), r"antialias applies to linear and cubic"),
    (lambda p: op.image.resize1d(p, (3,)), (1, 1, 0), r"empty along width"),
])
def test_type_errors(build, shape, message):
    p = var("x", shape=shape)
    with pytest.raises(Exception, match=message):
        irpass.transform.InferType()(IRModule.from_expr(Function([p], build(p))))


@pytest.mark.parametrize("kw, message", [
    ({"method": "bilinear"}, r"method must be one of"),
    ({"coordinate_transformation_mode": "corners"}, r"coordinate_transformation_mode"),
    ({"scales": (0.0, 1.0)}, r"scales must be > 0"),
    ({"roi": (0, 0, 1)}, r"roi must be 4 numbers"),
])
def test_bad_attributes_are_refused(kw, message):
    with pytest.raises(Exception, match=message):
        op.image.resize2d(var("x", shape=(1, 1, 2, 2)), (3, 3), **kw)


def onnx_grid_sample(x, grid, **attrs):
    """ONNX's reference GridSample (grid channels-last, as ONNX has it)."""
    node = helper.make_node("GridSample", ["x", "g"], ["y"], **attrs)
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for k, v in (("x", x), ("g", grid))]
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    return ReferenceEvaluator(model).run(None, {"x": x, "g": grid})[0]


_GRID_MODES = {"linear": "bilinear", "nearest": "nearest", "cubic": "bicubic"}


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_2d_matches_onnx_reference(mode, padding, align):
    x = rng.standard_normal((2, 3, 4, 5)).astype("float32")
    # coordinates past [-1, 1] too, so every padding mode matters
    grid = rng.uniform(-1.7, 1.7, (2, 3, 6, 2)).astype("float32")
    want = onnx_grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align)
    _, got = _eval2(lambda a, b: op.image.grid_sample(
        a, b, method=_GRID_MODES[mode], padding_mode=padding, align_corners=bool(align)),
        x, grid.transpose(0, 3, 1, 2))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode, padding", [("linear", "zeros"), ("nearest", "reflection"),
                                           ("linear", "border")])
def test_grid_sample_3d_matches_onnx_reference(mode, padding):
    x = rng.standard_normal((1, 2, 3, 4, 5)).astype("float32")
    grid = rng.uniform(-1.3, 1.3, (1, 2, 3, 2, 3)).astype("float32")
    want = onnx_grid_sample(x, grid, mode=mode, padding_mode=padding)
    _, got = _eval2(lambda a, b: op.image.grid_sample(
        a, b, method=_GRID_MODES[mode], layout="NCDHW", padding_mode=padding,
        align_corners=False), x, grid.transpose(0, 4, 1, 2, 3))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_grid_sample_identity_grid_with_align_corners_returns_the_input():
    x = rng.standard_normal((1, 2, 3, 4)).astype("float32")
    ys, xs = np.meshgrid(np.linspace(-1, 1, 3), np.linspace(-1, 1, 4), indexing="ij")
    grid = np.stack([xs, ys])[None].astype("float32")
    _, got = _eval2(lambda a, b: op.image.grid_sample(a, b), x, grid)
    np.testing.assert_allclose(got, x, rtol=1e-6, atol=1e-6)


def test_grid_sample_type_errors():
    data, grid = var("d", shape=(1, 2, 4, 4)), var("g", shape=(1, 3, 2, 2))
    mod = IRModule.from_expr(Function([data, grid], op.image.grid_sample(data, grid)))
    with pytest.raises(Exception, match=r"image.grid_sample: grid .* must be \(N, 2, out...\)"):
        irpass.transform.InferType()(mod)
    with pytest.raises(Exception, match=r"method must be one of"):
        op.image.grid_sample(data, grid, method="linear")


def _eval2(build, a, b):
    pa = var("a", shape=a.shape, dtype=str(a.dtype))
    pb = var("b", shape=b.shape, dtype=str(b.dtype))
    mod = irpass.transform.InferType()(IRModule.from_expr(Function([pa, pb], build(pa, pb))))
    return mod["main"].ret_type, irpass.evaluate(mod, a=a, b=b)
