"""NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against onnxruntime: every
reduction, class weights, ignore_index (inside and outside the class range), the log_prob
output, targets of higher rank, and the errors."""

from __future__ import annotations

import irpass
import numpy as np
import onnx_cases
import pytest
from irpass_onnx import OnnxImportError, from_onnx
from irpass_onnx.testing import assert_outputs_close
from irpass_onnx.testing import run_onnxruntime as run_ort
from onnx import TensorProto, helper
from onnx_cases import rand

F = TensorProto.FLOAT


def _target(shape, classes, seed=0, ignore=None, dtype="int64"):
    t = np.random.default_rng(seed).integers(0, classes, size=shape).astype(dtype)
    if ignore is not None:
        t.reshape(-1)[::3] = ignore  # every third sample ignored
    return t


def check(op, inputs, opset=13, outputs=("loss",), rtol=1e-5, atol=1e-6, **attrs):
    names = ["x", "t"] + (["w"] if "w" in inputs else [])
    node = helper.make_node(op, names, list(outputs), **attrs)
    dtype = helper.np_dtype_to_tensor_dtype(inputs["x"].dtype)
    model = onnx_cases.make_model([node], inputs, dict.fromkeys(outputs, dtype), opset)
    got = irpass.evaluate(from_onnx(model), **inputs)
    got = list(got) if isinstance(got, tuple) else [got]
    want = run_ort(model, inputs)
    assert len(got) == len(want) == len(outputs)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert_outputs_close([g], [w], rtol=rtol, atol=atol, scaled_atol=atol)


CASES = [  # x shape, ignore_index, weighted
    ((5, 4), None, False),
    ((5, 4), None, True),
    ((3, 4, 6), 2, False),
    ((3, 4, 6), -100, True),
    ((2, 3, 4, 5), 1, True),
    ((2, 3, 2, 2, 3), None, True),
]


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("shape, ignore, weighted", CASES)
def test_negative_log_likelihood_loss(reduction, shape, ignore, weighted) -> None:
    c = shape[1]
    inputs = {"x": rand(*shape), "t": _target((shape[0],) + shape[2:], c, ignore=ignore)}
    if weighted:
        inputs["w"] = np.abs(rand(c, seed=2)) + 0.1
    attrs = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    check("NegativeLogLikelihoodLoss", inputs, **attrs)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("shape, ignore, weighted", CASES)
def test_softmax_cross_entropy_loss_and_log_prob(reduction, shape, ignore, weighted) -> None:
    c = shape[1]
    inputs = {"x": rand(*shape) * 3,
              "t": _target((shape[0],) + shape[2:], c, ignore=ignore, dtype="int32")}
    if weighted:
        inputs["w"] = np.abs(rand(c, seed=2)) + 0.1
    attrs = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    check("SoftmaxCrossEntropyLoss", inputs, outputs=("loss", "log_prob"), **attrs)
    check("SoftmaxCrossEntropyLoss", inputs, **attrs)


def test_float64_and_float16() -> None:
    check("SoftmaxCrossEntropyLoss", {"x": rand(4, 3, dtype="float64"), "t": _target(4, 3)},
          reduction="sum")
    inputs = {"x": rand(6, 5, dtype="float16"), "t": _target(6, 5)}
    node = helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["loss"])
    model = onnx_cases.make_model([node], inputs, {"loss": TensorProto.FLOAT16}, 13)
    got = irpass.evaluate(from_onnx(model), **inputs)
    x, t = inputs["x"].astype("float64"), inputs["t"]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, -x[np.arange(6), t].mean(), rtol=2e-3)


@pytest.mark.parametrize("attrs, inputs, message", [
    ({"reduction": "max"}, {"x": rand(3, 4), "t": _target(3, 4)},
     "reduction 'max' is not one of none, sum, mean"),
    ({}, {"x": rand(3, 4), "t": _target(4, 4)}, r"the target \(input 1\) has shape \(4,\)"),
    ({}, {"x": rand(3, 4), "t": _target(3, 4).astype("float32")},
     r"the target \(input 1\) must be int32 or int64"),
    ({}, {"x": rand(3, 4), "t": _target(3, 4), "w": rand(3)},
     r"the weight \(input 2\) must have shape \(4,\)"),
])
def test_errors_name_the_node(attrs, inputs, message) -> None:
    names = ["x", "t"] + (["w"] if "w" in inputs else [])
    node = helper.make_node("NegativeLogLikelihoodLoss", names, ["loss"], **attrs)
    model = onnx_cases.make_model([node], inputs, {"loss": F}, 13)
    with pytest.raises(OnnxImportError, match=r"\(NegativeLogLikelihoodLoss\): " + message):
        from_onnx(model)
