"""The normalization converters (LayerNormalization's Mean/InvStdDev outputs and stash_type,
BatchNormalization in training mode, InstanceNormalization, GroupNormalization 18 and 21,
RMSNormalization) against onnxruntime, and the export of nn.group_norm / nn.instance_norm."""

from __future__ import annotations

import irpass
import numpy as np
import onnx_cases
import pytest
from irpass.ir import Function, IRModule, var
from irpass.op.nn.norm import group_norm, instance_norm
from irpass_onnx import OnnxImportError, from_onnx, to_onnx
from irpass_onnx.testing import assert_outputs_close
from irpass_onnx.testing import run_onnxruntime as run_ort
from onnx import TensorProto, checker, helper
from onnx_cases import ops_in, rand

F, H = TensorProto.FLOAT, TensorProto.FLOAT16


def check(nodes, inputs, outputs, opset, rtol=1e-4, atol=1e-5):
    """Import the model, evaluate it and compare every output with onnxruntime."""
    model = onnx_cases.make_model(nodes, inputs, outputs, opset)
    mod = from_onnx(model)
    got = irpass.evaluate(mod, **inputs)
    got = list(got) if isinstance(got, tuple) else [got]
    want = run_ort(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert_outputs_close([g], [w], rtol=rtol, atol=atol, scaled_atol=atol)
    return mod


# -- LayerNormalization ------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_layer_norm_mean_and_inv_std_dev_outputs(axis) -> None:
    x = rand(2, 3, 4) * 3 + 1
    shape = x.shape[axis % 3:]
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"],
                            axis=axis, epsilon=1e-3)
    check([node], {"x": x, "s": rand(*shape, seed=1), "b": rand(*shape, seed=2)},
          {"y": F, "mean": F, "inv": F}, 17)


def test_layer_norm_only_inv_std_dev_used() -> None:
    node = helper.make_node("LayerNormalization", ["x", "s"], ["y", "", "inv"])
    check([node], {"x": rand(3, 5), "s": rand(5, seed=1)}, {"y": F, "inv": F}, 17)


def test_layer_norm_float16_stashes_float32_statistics() -> None:
    x = (rand(2, 3, 64) * 4 + 50).astype("float16")
    s, b = rand(64, seed=1).astype("float16"), rand(64, seed=2).astype("float16")
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"])
    mod = check([node], {"x": x, "s": s, "b": b}, {"y": H, "mean": F, "inv": F}, 17,
                rtol=2e-3, atol=2e-3)
    out = mod["main"].body
    assert [f.checked_type.dtype for f in out.fields] == ["float16", "float32", "float32"]


def test_layer_norm_statistics_only_when_used() -> None:
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"])
    inputs = {"x": rand(2, 6), "s": rand(6, seed=1), "b": rand(6, seed=2)}
    used = check([node], inputs, {"y": F, "mean": F}, 17)
    assert "nn.layer_norm" not in ops_in(used)
    # unread statistics keep the core op (one node, a fused kernel)
    assert ops_in(check([node], inputs, {"y": F}, 17)) == ["nn.layer_norm"]


def test_layer_norm_bad_stash_type_is_a_clean_error() -> None:
    node = helper.make_node("LayerNormalization", ["x", "s"], ["y", "mean"], stash_type=7)
    model = onnx_cases.make_model([node], {"x": rand(2, 3), "s": rand(3)}, {"y": F, "mean": F},
                                  17)
    with pytest.raises(OnnxImportError, match=r"\(LayerNormalization\): stash_type 7 is not "
                                              r"supported"):
        from_onnx(model)


# -- BatchNormalization ------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 4, 2, 5), (6, 4), (2, 4, 7)])
def test_batch_norm_training_mode_outputs_running_statistics(shape) -> None:
    c = shape[1]
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                            ["y", "rm", "rv"], training_mode=1, momentum=0.7, epsilon=1e-2)
    inputs = {"x": rand(*shape) * 2 + 1, "s": rand(c, seed=1), "b": rand(c, seed=2),
              "m": rand(c, seed=3), "v": np.abs(rand(c, seed=4)) + 0.5}
    check([node], inputs, {"y": F, "rm": F, "rv": F}, 15)


def test_batch_norm_inference_float16_data_float32_parameters() -> None:
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])
    inputs = {"x": rand(2, 3, 4).astype("float16"), "s": rand(3, seed=1),
              "b": rand(3, seed=2), "m": rand(3, seed=3), "v": np.abs(rand(3, seed=4)) + 0.5}
    model = onnx_cases.make_model([node], inputs, {"y": H}, 15)
    got = irpass.evaluate(from_onnx(model), **inputs)
    x = inputs["x"].astype("float64")
    ref = ((x - inputs["m"][:, None]) / np.sqrt(inputs["v"][:, None] + 1e-5)
           * inputs["s"][:, None] + inputs["b"][:, None])
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, ref, rtol=5e-3, atol=5e-3)


# -- InstanceNormalization and GroupNormalization ----------------------------------------------


def test_instance_norm_is_the_core_op() -> None:
    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)
    mod = check([node], {"x": rand(2, 3, 4, 5), "s": rand(3, seed=1), "b": rand(3, seed=2)},
                {"y": F}, 13)
    assert ops_in(mod) == ["nn.instance_norm"]


@pytest.mark.parametrize("opset, groups, shape", [
    (18, 2, (2, 4, 3, 3)), (18, 4, (2, 4, 5)), (18, 1, (3, 6, 2, 2)),
    (21, 2, (2, 4, 3, 3)), (21, 3, (2, 6, 5)), (21, 6, (1, 6, 2, 2)),
])
def test_group_norm_opsets(opset, groups, shape) -> None:
    c = shape[1]
    n = c if opset >= 21 else groups
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups,
                            epsilon=1e-3)
    mod = check([node], {"x": rand(*shape) * 2, "s": rand(n, seed=1), "b": rand(n, seed=2)},
                {"y": F}, opset)
    assert "nn.group_norm" in ops_in(mod)


def test_group_norm_groups_must_divide_channels() -> None:
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3)
    model = onnx_cases.make_model(
        [node], {"x": rand(2, 4, 3), "s": rand(4), "b": rand(4)}, {"y": F}, 21)
    with pytest.raises(OnnxImportError, match="num_groups 3 does not divide the 4 channels"):
        from_onnx(model)


# -- RMSNormalization --------------------------------------------------------------------------


@pytest.mark.parametrize("axis, scale_shape", [(-1, (5,)), (1, (4, 5)), (0, (3, 4, 5)),
                                               (1, (1, 5))])
def test_rms_norm(axis, scale_shape) -> None:
    node = helper.make_node("RMSNormalization", ["x", "s"], ["y"], axis=axis, epsilon=1e-3)
    check([node], {"x": rand(3, 4, 5) * 2, "s": rand(*scale_shape, seed=1)}, {"y": F}, 23)


def test_rms_norm_float16() -> None:
    x = (rand(2, 256) * 30).astype("float16")  # the squares' sum overflows float16
    node = helper.make_node("RMSNormalization", ["x", "s"], ["y"])
    check([node], {"x": x, "s": rand(256, seed=1).astype("float16")}, {"y": H}, 23,
          rtol=2e-3, atol=2e-3)


# -- export of the core ops ----------------------------------------------------------------


def _norm_module(kind: str, shape, axis, center=True, scale=True):
    x = var("x", shape=shape, dtype="float32")
    c = shape[axis]
    rng = np.random.default_rng(3)
    gamma = irpass.const(rng.standard_normal(c).astype("float32"))
    beta = irpass.const(rng.standard_normal(c).astype("float32"))
    if kind == "group":
        body = group_norm(x, gamma, beta, num_groups=2, axis=axis, epsilon=1e-3,
                          center=center, scale=scale)
    else:
        body = instance_norm(x, gamma, beta, axis=axis, epsilon=1e-3, center=center,
                             scale=scale)
    return IRModule.from_expr(Function([x], body))


@pytest.mark.parametrize("opset", [9, 13, 17, 21])
@pytest.mark.parametrize("kind, shape, axis, center, scale", [
    ("group", (2, 4, 3, 5), 1, True, True),
    ("group", (2, 3, 5, 4), 3, True, True),
    ("group", (3, 6), 1, False, True),
    ("group", (2, 4, 6), 1, True, False),
    ("instance", (2, 4, 3, 5), 1, True, True),
    ("instance", (2, 3, 5, 4), -1, False, False),
])
def test_grouped_norms_export_and_run(opset, kind, shape, axis, center, scale) -> None:
    mod = _norm_module(kind, shape, axis, center, scale)
    model = to_onnx(mod, opset=opset)
    checker.check_model(model, full_check=True)
    x = rand(*shape) * 3 - 1
    want = irpass.evaluate(mod, x=x)
    got = run_ort(model, {"x": x})[0]
    assert got.shape == want.shape
    assert_outputs_close([got], [want], rtol=1e-4, atol=1e-5, scaled_atol=1e-5)
    again = irpass.evaluate(from_onnx(model), x=x)
    assert_outputs_close([again], [want], rtol=1e-4, atol=1e-5, scaled_atol=1e-5)
