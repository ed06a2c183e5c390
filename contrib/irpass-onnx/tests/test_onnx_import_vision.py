"""Resize, Upsample and NonMaxSuppression: imported with constant operands, evaluated and
compared with onnxruntime (with ONNX's reference where onnxruntime departs from the spec),
then exported at several opsets and run in onnxruntime again."""

from __future__ import annotations

import irpass
import numpy as np
import onnx
import pytest
from irpass_onnx import OnnxImportError, from_onnx, to_onnx
from irpass_onnx.testing import assert_outputs_close, run_onnxruntime
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from onnx_cases import check, elem_type, make_model, ops_in, rand


def resize_model(x, opset=19, scales=None, sizes=None, roi=None, **attrs):
    inits = {}
    names = ["x", "", "", ""]
    if roi is not None:
        inits["roi"], names[1] = np.asarray(roi, np.float32), "roi"
    if scales is not None:
        inits["scales"], names[2] = np.asarray(scales, np.float32), "scales"
    if sizes is not None:
        inits["sizes"], names[3] = np.asarray(sizes, np.int64), "sizes"
    while names[-1] == "":
        names.pop()
    node = helper.make_node("Resize", names, ["y"], **attrs)
    return make_model([node], {"x": x}, {"y": elem_type(x)}, opset=opset, inits=inits)


def roundtrip(model, feeds, opsets=(11, 13, 19)):
    """Import, export at each opset (full check), run the export in onnxruntime and compare
    with irpass's own result."""
    mod = from_onnx(model)
    want = irpass.evaluate(mod, **feeds)
    for opset in opsets:
        exported = to_onnx(mod, opset=opset)
        onnx.checker.check_model(exported, full_check=True)
        got = run_onnxruntime(exported, feeds)
        assert_outputs_close(got, [want], rtol=1e-5, atol=1e-6, scaled_atol=1e-6)


RESIZE = [
    dict(scales=(1, 1, 2, 3), mode="nearest"),
    dict(scales=(1, 1, 0.6, 0.8), mode="linear"),
    dict(sizes=(1, 2, 7, 3), mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1),
    dict(sizes=(1, 2, 3, 9), mode="nearest", nearest_mode="floor",
         coordinate_transformation_mode="align_corners"),
    dict(scales=(1, 1, 0.5, 0.5), mode="linear", antialias=1),
    dict(sizes=(3, 4), axes=[3, 2], mode="linear",
         coordinate_transformation_mode="pytorch_half_pixel"),
    dict(sizes=(1, 2, 3, 3), roi=(0, 0, 0.2, 0.3, 1, 1, 0.9, 0.7), mode="linear",
         coordinate_transformation_mode="tf_crop_and_resize"),
]


@pytest.mark.parametrize("attrs", RESIZE)
def test_resize_matches_onnxruntime_and_exports(attrs):
    x = rand(1, 2, 5, 6)
    model = resize_model(x, **attrs)
    mod = check(model, {"x": x})
    assert ops_in(mod) == ["image.resize2d"]
    roundtrip(model, {"x": x})


@pytest.mark.parametrize("attrs", [
    # align_corners over a rounded-down output: onnxruntime stretches over the rounded size,
    # the spec over the unrounded one; the export keeps the spec's result
    dict(scales=(1, 1, 0.6, 0.7), mode="linear", coordinate_transformation_mode="align_corners"),
    # not_smaller scales both axes by the larger ratio; the output size is rounded to nearest
    dict(sizes=(1, 2, 2, 4), mode="nearest", keep_aspect_ratio_policy="not_smaller"),
    dict(scales=(1, 1, 1.7, 0.45), mode="cubic",
         coordinate_transformation_mode="half_pixel_symmetric"),
])
def test_resize_matches_the_reference(attrs):
    x = rand(1, 2, 5, 6)
    model = resize_model(x, **attrs)
    check(model, {"x": x}, ref=ReferenceEvaluator(model).run(None, {"x": x}))
    roundtrip(model, {"x": x}, opsets=(11, 19))


def test_resize_1d_3d_and_upsample():
    x1, x3 = rand(1, 2, 5), rand(1, 1, 2, 3, 4)
    check(resize_model(x1, scales=(1, 1, 1.5), mode="linear"), {"x": x1})
    m3 = resize_model(x3, sizes=(1, 1, 3, 5, 2), mode="nearest")
    assert ops_in(check(m3, {"x": x3})) == ["image.resize3d"]
    x = rand(1, 2, 3, 4)
    node = helper.make_node("Upsample", ["x", "s"], ["y"], mode="nearest")
    model = make_model([node], {"x": x}, {"y": TensorProto.FLOAT}, opset=9,
                       inits={"s": np.array([1, 1, 2, 3], np.float32)})
    check(model, {"x": x})
    roundtrip(model, {"x": x}, opsets=(9, 10, 13))


def test_resizing_the_channels_is_a_clear_error():
    x = rand(1, 2, 5, 6)
    with pytest.raises(OnnxImportError, match=r"resizing axis 1 \(channels\)"):
        from_onnx(resize_model(x, scales=(1, 2, 1, 1), mode="nearest"))
    with pytest.raises(OnnxImportError, match="exactly one of scales and sizes"):
        from_onnx(resize_model(x, scales=(1, 1, 2, 2), sizes=(1, 2, 10, 12)))


def nms_model(boxes, scores, max_out=None, iou=None, score=None, center=0):
    inits = {"boxes": boxes, "scores": scores}
    names = ["boxes", "scores"]
    for key, value, dtype in (("max", max_out, np.int64), ("iou", iou, np.float32),
                              ("score", score, np.float32)):
        if value is not None:
            inits[key] = np.array([value], dtype)
            names.append(key)
    node = helper.make_node("NonMaxSuppression", names, ["y"], center_point_box=center)
    graph = helper.make_graph(
        [node], "g", [], [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
        [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])


@pytest.mark.parametrize("kw", [
    dict(max_out=3, iou=0.5),
    dict(max_out=10, iou=0.3, score=0.2),
    dict(max_out=2, iou=0.0, center=1),
    dict(),
])
def test_non_max_suppression_is_computed_at_import(kw):
    rng = np.random.default_rng(1)
    corners = rng.uniform(0, 10, (2, 12, 2, 2)).astype(np.float32)
    boxes = np.concatenate([corners[:, :, 0], corners[:, :, 0] + corners[:, :, 1]], axis=2)
    if kw.get("center"):
        boxes = np.concatenate([corners[:, :, 0], corners[:, :, 1] + 0.5], axis=2)
    scores = rng.uniform(0, 1, (2, 3, 12)).astype(np.float32)
    scores[0, 0, 3] = scores[0, 0, 7]  # a tie: the lower index goes first
    model = nms_model(boxes, scores, **kw)
    mod = from_onnx(model)
    assert ops_in(mod) == []  # a constant
    got = irpass.evaluate(mod)
    want = run_onnxruntime(model, {})[0]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("attrs", [
    dict(mode="bilinear", padding_mode="zeros", align_corners=0),
    dict(mode="nearest", padding_mode="border", align_corners=1),
    dict(mode="bicubic", padding_mode="reflection", align_corners=0),
])
def test_grid_sample_matches_onnxruntime_and_exports(attrs):
    x = rand(2, 3, 5, 6)
    grid = np.random.default_rng(2).uniform(-1.2, 1.2, (2, 4, 3, 2)).astype(np.float32)
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], **attrs)
    model = make_model([node], {"x": x, "grid": grid}, {"y": TensorProto.FLOAT}, opset=16)
    feeds = {"x": x, "grid": grid}
    assert "image.grid_sample" in ops_in(check(model, feeds))
    roundtrip(model, feeds, opsets=(16, 20))


def test_grid_sample_before_opset_16_is_an_export_error():
    x = rand(1, 1, 3, 3)
    grid = np.zeros((1, 2, 2, 2), np.float32)
    node = helper.make_node("GridSample", ["x", "grid"], ["y"])
    model = make_model([node], {"x": x, "grid": grid}, {"y": TensorProto.FLOAT}, opset=16)
    with pytest.raises(Exception, match=r"GridSample, which needs opset >= 16"):
        to_onnx(from_onnx(model), opset=13)


@pytest.mark.parametrize("size, align", [((2, 3, 4, 5), 0), ((2, 3, 4, 5), 1),
                                         ((2, 1, 2, 3, 4), 0), ((2, 1, 1, 3, 2), 1)])
def test_affine_grid(size, align):
    k = len(size) - 2
    theta = np.random.default_rng(3).standard_normal((2, k, k + 1)).astype(np.float32)
    node = helper.make_node("AffineGrid", ["theta", "size"], ["y"], align_corners=align)
    model = make_model([node], {"theta": theta}, {"y": TensorProto.FLOAT}, opset=20,
                       inits={"size": np.array(size, np.int64)})
    ref = ReferenceEvaluator(model).run(None, {"theta": theta})
    check(model, {"theta": theta}, ref=ref)
    roundtrip(model, {"theta": theta}, opsets=(13, 20))
