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


@pytest.mark.parametrize("attrs, opset", [
    (dict(output_height=3, output_width=2, sampling_ratio=2, spatial_scale=0.5), 16),
    (dict(output_height=2, output_width=2, coordinate_transformation_mode="output_half_pixel"),
     16),
    (dict(output_height=4, output_width=3, mode="max", sampling_ratio=1), 16),
    (dict(output_height=2, output_width=3, spatial_scale=0.25), 10),
])
def test_roi_align(attrs, opset):
    x = rand(2, 3, 8, 9)
    rois = np.array([[0, 0, 7, 6], [1.5, 2, 5, 8.5], [3, 1, 3.5, 1.2]], np.float32)
    if attrs.get("spatial_scale") == 0.25:
        rois *= 4
    batch = np.array([1, 0, 1], np.int64)
    node = helper.make_node("RoiAlign", ["x", "rois", "b"], ["y"], **attrs)
    model = make_model([node], {"x": x, "rois": rois, "b": batch}, {"y": TensorProto.FLOAT},
                       opset=opset)
    feeds = {"x": x, "rois": rois, "b": batch}
    # ONNX's reference reads RoiAlign-10 with opset 16's default (half_pixel); onnxruntime
    # keeps opset 10's output_half_pixel. Its max mode departs from the spec's.
    ref = None if opset == 10 else ReferenceEvaluator(model).run(None, feeds)
    mod = check(model, feeds, ref=ref)
    assert "vision.roi_align" in ops_in(mod)
    if attrs.get("mode") != "max":
        roundtrip(model, feeds, opsets=(16,))


@pytest.mark.parametrize("with_shape", [False, True])
def test_max_unpool_inverts_max_pool_with_indices(with_shape):
    # the indices number the unpooled (inferred) shape's elements; output_shape pads it
    x = rand(1, 2, 4, 4)
    pool = helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2])
    ins = ["p", "i"] + (["shape"] if with_shape else [])
    unpool = helper.make_node("MaxUnpool", ins, ["y"], kernel_shape=[2, 2], strides=[2, 2])
    inits = {"shape": np.array([1, 2, 5, 6], np.int64)} if with_shape else {}
    model = make_model([pool, unpool], {"x": x}, {"y": TensorProto.FLOAT}, opset=11,
                       inits=inits)
    mod = check(model, {"x": x}, ref=ReferenceEvaluator(model).run(None, {"x": x}))
    assert "scatter_elements" in ops_in(mod)


@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices_output(storage_order):
    x = rand(2, 3, 5, 6)
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 2], strides=[2, 2],
                            pads=[1, 0, 1, 1], storage_order=storage_order)
    model = make_model([node], {"x": x}, {"y": TensorProto.FLOAT, "i": TensorProto.INT64},
                       opset=12)
    check(model, {"x": x})


@pytest.mark.parametrize("attrs, with_mask, with_bias", [
    (dict(), False, False),
    (dict(pads=[1, 0, 1, 2], strides=[2, 1], dilations=[1, 2]), True, True),
    (dict(group=2, offset_group=2), True, False),
])
def test_deform_conv_matches_the_reference(attrs, with_mask, with_bias):
    rng = np.random.default_rng(6)
    x = rand(2, 4, 5, 6)
    groups, og = attrs.get("group", 1), attrs.get("offset_group", 1)
    w = rand(6, 4 // groups, 2, 3, seed=1)
    strides, dil = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1])
    pads = attrs.get("pads", [0, 0, 0, 0])
    oh = (5 + pads[0] + pads[2] - dil[0] * 1 - 1) // strides[0] + 1
    ow = (6 + pads[1] + pads[3] - dil[1] * 2 - 1) // strides[1] + 1
    offset = rng.uniform(-1.5, 1.5, (2, og * 6 * 2, oh, ow)).astype(np.float32)
    names = ["x", "w", "offset", "b" if with_bias else "", "mask" if with_mask else ""]
    while names[-1] == "":
        names.pop()
    inputs = {"x": x, "w": w, "offset": offset}
    if with_bias:
        inputs["b"] = rand(6, seed=3)
    if with_mask:
        inputs["mask"] = rng.uniform(0, 1, (2, og * 6, oh, ow)).astype(np.float32)
    node = helper.make_node("DeformConv", names, ["y"], **attrs)
    model = make_model([node], inputs, {"y": TensorProto.FLOAT}, opset=19)
    mod = check(model, inputs, ref=ReferenceEvaluator(model).run(None, inputs))
    assert "image.grid_sample" in ops_in(mod)


@pytest.mark.parametrize("scale", [1.0, 0.5, 0.3])
def test_max_roi_pool_matches_onnxruntime_and_exports(scale):
    rng = np.random.default_rng(7)
    x = rand(2, 3, 9, 11)
    corners = rng.uniform(-2, 24, (8, 2, 2)).astype(np.float32)
    rois = np.concatenate([rng.integers(0, 2, (8, 1)).astype(np.float32), corners.min(1),
                           corners.max(1)], axis=1)
    node = helper.make_node("MaxRoiPool", ["x", "r"], ["y"], pooled_shape=[3, 2],
                            spatial_scale=scale)
    model = make_model([node], {"x": x, "r": rois}, {"y": TensorProto.FLOAT}, opset=13)
    feeds = {"x": x, "r": rois}
    assert ops_in(check(model, feeds)) == ["vision.roi_pool"]
    roundtrip(model, feeds, opsets=(11, 13))


@pytest.mark.parametrize("op_type, opset, scales", [
    ("Resize", 10, (1, 1, 2, 3)), ("Resize", 10, (1, 1, 0.5, 0.4)),
    ("Resize", 10, (1, 1, 1.5, 2.5)), ("Upsample", 9, (1, 1, 2, 3)),
    ("Upsample", 9, (1, 1, 1.5, 2.5)),
])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_10_and_upsample_match_onnxruntime(op_type, opset, scales, mode):
    # asymmetric coordinates; nearest rounds down when upsampling, up when downsampling;
    # the export shrinks with Resize from opset 10, before that element by element
    x = rand(1, 2, 7, 9)
    node = helper.make_node(op_type, ["x", "s"], ["y"], mode=mode)
    model = make_model([node], {"x": x}, {"y": TensorProto.FLOAT}, opset=opset,
                       inits={"s": np.array(scales, np.float32)})
    check(model, {"x": x})
    roundtrip(model, {"x": x}, opsets=(9, 10, 13))


@pytest.mark.parametrize("size, kw", [
    ((1, 3), dict(method="cubic", coordinate_transformation_mode="pytorch_half_pixel")),
    ((2, 1), dict(method="linear", coordinate_transformation_mode="tf_crop_and_resize",
                  roi=(0.1, 0.1, 0.9, 0.9), antialias=True)),
    ((3, 4), dict(method="linear", coordinate_transformation_mode="tf_crop_and_resize",
                  roi=(0.1, 0.1, 0.9, 0.9))),
    ((4, 5), dict(method="nearest_neighbor", coordinate_transformation_mode="half_pixel_symmetric",
                  rounding_method="round_prefer_floor")),
    ((5, 20), dict(method="nearest_neighbor", coordinate_transformation_mode="asymmetric")),
])
def test_resize_export_matches_the_kernel_where_onnxruntime_departs_from_the_spec(size, kw):
    # onnxruntime's Resize maps these coordinates (or rounds these sizes) its own way: the
    # export keeps irpass's result, which is the spec's
    from irpass import op
    from irpass.ir import Function, IRModule, var

    x = rand(1, 2, 7, 6)
    p = var("x", shape=x.shape)
    mod = IRModule.from_expr(Function([p], op.image.resize2d(p, size, **kw)))
    want = irpass.evaluate(mod, x=x)
    for opset in (9, 11, 19):
        exported = to_onnx(mod, opset=opset)
        onnx.checker.check_model(exported, full_check=True)
        assert_outputs_close(run_onnxruntime(exported, {"x": x}), [want], rtol=1e-5, atol=1e-6,
                             scaled_atol=1e-6)
