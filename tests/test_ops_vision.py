"""vision.roi_align: the kernel against ONNX's reference RoiAlign (the spec's own loop code,
run through onnx.reference), layouts and type errors."""

from __future__ import annotations

import irpass
import numpy as np
import pytest
from irpass import op
from irpass.ir import Function, IRModule, var
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

rng = np.random.default_rng(11)


def onnx_roi_align(x, rois, batch, **attrs):
    node = helper.make_node("RoiAlign", ["x", "rois", "b"], ["y"], **attrs)
    feeds = {"x": x, "rois": rois, "b": batch}
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for k, v in feeds.items()]
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    return ReferenceEvaluator(model).run(None, feeds)[0]


def _eval(build, data, rois):
    pd = var("d", shape=data.shape, dtype=str(data.dtype))
    pr = var("r", shape=rois.shape, dtype=str(rois.dtype))
    mod = irpass.transform.InferType()(IRModule.from_expr(Function([pd, pr], build(pd, pr))))
    return mod["main"].ret_type, irpass.evaluate(mod, d=data, r=rois)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("ratio, scale", [(0, 1.0), (2, 0.5), (1, 0.25)])
def test_roi_align_matches_onnx_reference(mode, aligned, ratio, scale):
    x = rng.standard_normal((2, 3, 10, 8)).astype("float32")
    corners = rng.uniform(-3, 12 / scale, (6, 2, 2)).astype("float32")
    rois = np.concatenate([corners.min(axis=1), corners.max(axis=1)], axis=1)
    rois[0] = [1, 1, 1.2, 1.1]  # smaller than one element
    rois[1] = [-8, -8, -2, -3]  # outside the image
    batch = np.array([0, 1, 1, 0, 1, 0], dtype=np.int64)
    want = onnx_roi_align(x, rois, batch, mode=mode, output_height=3, output_width=4,
                          sampling_ratio=ratio, spatial_scale=scale,
                          coordinate_transformation_mode="half_pixel" if aligned
                          else "output_half_pixel")
    rows = np.concatenate([batch[:, None].astype("float32"), rois], axis=1)
    ty, got = _eval(lambda d, r: op.vision.roi_align(d, r, (3, 4), scale, ratio, mode=mode,
                                                     aligned=aligned), x, rows)
    assert ty.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_nhwc_layout_agrees_with_nchw():
    x = rng.standard_normal((1, 2, 6, 6)).astype("float32")
    rows = np.array([[0, 0.5, 1, 4, 5], [0, 2, 0, 6, 3]], dtype="float32")
    _, first = _eval(lambda d, r: op.vision.roi_align(d, r, (2, 2), 1.0), x, rows)
    _, last = _eval(lambda d, r: op.vision.roi_align(d, r, (2, 2), 1.0, layout="NHWC"),
                    x.transpose(0, 2, 3, 1), rows)
    np.testing.assert_allclose(last.transpose(0, 3, 1, 2), first, rtol=1e-6)


def test_constant_image_pools_to_its_value():
    x = np.full((1, 1, 5, 5), 3.0, dtype="float32")
    rows = np.array([[0, 0.5, 0.5, 3.5, 4]], dtype="float32")
    _, got = _eval(lambda d, r: op.vision.roi_align(d, r, (2, 3), 1.0), x, rows)
    np.testing.assert_allclose(got, 3.0, rtol=1e-6)


def test_errors():
    d, r = var("d", shape=(1, 2, 4, 4)), var("r", shape=(3, 4))
    mod = IRModule.from_expr(Function([d, r], op.vision.roi_align(d, r, (2, 2), 1.0)))
    with pytest.raises(Exception, match=r"vision.roi_align: rois .* must be \(num_rois, 5\)"):
        irpass.transform.InferType()(mod)
    x = np.zeros((1, 1, 3, 3), "float32")
    with pytest.raises(Exception, match=r"roi 0 has batch index 2.0, outside the 1 images"):
        _eval(lambda a, b: op.vision.roi_align(a, b, (1, 1), 1.0), x,
              np.array([[2, 0, 0, 1, 1]], "float32"))
    with pytest.raises(Exception, match=r"mode must be one of"):
        op.vision.roi_align(d, r, (2, 2), 1.0, mode="mean")


def test_roi_pool_takes_each_bins_maximum():
    x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
    rows = np.array([[0, 0, 0, 3, 3],      # the whole image: 2x2 bins of 2x2
                     [0, 2.4, 0.6, 7, 1.4],  # scale 0.5 rounds to x 1..4 (clipped), y 0..1
                     [0, 20, 20, 30, 30]], dtype="float32")  # outside: every bin empty
    _, got = _eval(lambda d, r: op.vision.roi_pool(d, r, (2, 2), 1.0), x, rows[:1])
    np.testing.assert_array_equal(got[0, 0], [[5, 7], [13, 15]])
    _, got = _eval(lambda d, r: op.vision.roi_pool(d, r, (1, 2), 0.5), x, rows)
    # roi 1: columns 1..4 (4 wide, 2 bins: 1-2 and 3-4 -> clipped to 3), rows 0..1
    np.testing.assert_array_equal(got[1, 0], [[6, 7]])
    np.testing.assert_array_equal(got[2], 0)


def test_roi_pool_errors():
    d, r = var("d", shape=(1, 2, 4, 4)), var("r", shape=(3, 4))
    mod = IRModule.from_expr(Function([d, r], op.vision.roi_pool(d, r, (2, 2), 1.0)))
    with pytest.raises(Exception, match=r"vision.roi_pool: rois .* must be \(num_rois, 5\)"):
        irpass.transform.InferType()(mod)
