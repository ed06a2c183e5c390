"""HardSigmoid, HardSwish, Mish, Celu, ThresholdedRelu, Shrink, Softsign, Swish, SwiGLU and
Hardmax: imported as core ops (decomposed), each checked against onnxruntime on random
inputs at every opset version of the op (onnx's reference evaluator where onnxruntime
lacks the opset), with attribute defaults and extreme inputs."""

from __future__ import annotations

import irpass
import numpy as np
import onnx
import pytest
from irpass_onnx import OnnxImportError, from_onnx
from irpass_onnx.testing import run_onnxruntime
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from onnx_cases import check, make_model, ops_in, rand

F32, F16, F64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE


def _model(op: str, opset: int, x: np.ndarray, out_type: int = F32, extra=None, **attrs):
    inputs = {"x": x, **(extra or {})}
    node = helper.make_node(op, list(inputs), ["y"], **attrs)
    return make_model([node], inputs, {"y": out_type}, opset)


def _reference(model: onnx.ModelProto, feeds):
    with np.errstate(over="ignore"):  # its sigmoid's exp(-x) of a very negative x
        return ReferenceEvaluator(model).run(None, feeds)


def _check(model, feeds):
    """Against onnxruntime where it runs the model's opset, else onnx's reference."""
    try:
        import onnxruntime as ort

        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 - onnxruntime too old for the opset
        return check(model, feeds, ref=_reference(model, feeds))
    return check(model, feeds)


def _wide(seed=0, dtype="float32"):
    """Random values with extremes: large magnitudes (exp must not overflow) and exact 0."""
    x = rand(3, 4, 5, seed=seed, dtype="float64") * 3
    x[0, 0, :] = [-1e4, -90.0, 0.0, 90.0, 1e4]
    return x.astype(dtype)


CASES = [
    ("HardSigmoid", [1, 6, 22], {}),
    ("HardSigmoid", [6], {"alpha": 0.5, "beta": 0.25}),
    ("HardSwish", [14, 22], {}),
    ("Mish", [18, 22], {}),
    ("Celu", [12, 22], {}),
    ("Celu", [12], {"alpha": 2.5}),
    ("Celu", [12], {"alpha": 0.3}),
    ("ThresholdedRelu", [10, 22], {}),
    ("ThresholdedRelu", [10], {"alpha": -0.5}),
    ("Shrink", [9], {}),
    ("Shrink", [9], {"lambd": 1.5, "bias": 0.5}),
    ("Softsign", [1, 22], {}),
    ("Swish", [24], {}),
    ("Swish", [24], {"alpha": -1.7}),
]


@pytest.mark.parametrize(("op", "opsets", "attrs"), CASES,
                         ids=[f"{c[0]}-{'-'.join(map(str, c[1]))}-{len(c[2])}" for c in CASES])
@pytest.mark.parametrize("seed", [0, 1])
def test_activation_matches_onnxruntime(op, opsets, attrs, seed):
    x = _wide(seed)
    for opset in opsets:
        mod = _check(_model(op, opset, x, **attrs), {"x": x})
        assert not [n for n in ops_in(mod) if n.startswith("onnx.")], (op, opset)


@pytest.mark.parametrize("op", ["HardSigmoid", "Softsign", "Mish", "Celu", "HardSwish",
                                "ThresholdedRelu", "Swish"])
@pytest.mark.parametrize(("dtype", "etype"), [("float64", F64), ("float16", F16)])
def test_other_float_dtypes(op, dtype, etype):
    x = (rand(2, 7, seed=3) * 4).astype(dtype)
    opset = 24 if op == "Swish" else 22
    model = _model(op, opset, x, out_type=etype)
    got = irpass.evaluate(from_onnx(model), x=x)
    assert got.dtype == x.dtype
    if op == "Celu":  # Celu takes float32 only before opset 28: compare with its formula
        xf = x.astype("float64")
        want = np.maximum(xf, 0) + np.minimum(0, np.expm1(xf))
    else:
        try:
            want = run_onnxruntime(model, {"x": x})[0]
        except Exception:  # noqa: BLE001 - onnxruntime too old for the opset
            want = _reference(model, {"x": x})[0]
    # onnxruntime computes some of these for doubles with float32 constants
    tol = 1e-3 if dtype == "float16" else 1e-7
    np.testing.assert_allclose(got.astype("float64"), want.astype("float64"), rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint8", "int64", "float64"])
def test_shrink_on_integers_and_doubles(dtype):
    info = np.iinfo(dtype) if dtype != "float64" else None
    lo = max(info.min, -20) if info else -20
    x = np.random.default_rng(5).integers(lo, 20, size=(4, 6)).astype(dtype)
    etype = helper.np_dtype_to_tensor_dtype(x.dtype)
    for attrs in ({}, {"lambd": 2.0, "bias": 1.0}, {"lambd": 3.0, "bias": 1.5}):
        _check(_model("Shrink", 9, x, out_type=etype, **attrs), {"x": x})


def test_swiglu_matches_the_reference():
    a, b = _wide(2), _wide(3)
    for attrs in ({}, {"alpha": 1.702}):
        node = helper.make_node("SwiGLU", ["a", "b"], ["y"], **attrs)
        model = make_model([node], {"a": a, "b": b}, {"y": F32}, 28)
        _check(model, {"a": a, "b": b})


def test_swiglu_needs_inputs_of_one_shape():
    a, b = rand(2, 3), rand(3)
    node = helper.make_node("SwiGLU", ["a", "b"], ["y"])
    model = make_model([node], {"a": a, "b": b}, {"y": F32}, 28)
    with pytest.raises(OnnxImportError, match="SwiGLU.*must have the same shape"):
        from_onnx(model)


def _hardmax_ref(x: np.ndarray, axis: int, legacy: bool) -> np.ndarray:
    """One 1 at the first maximum of each lane (a loop over the lanes)."""
    shape = x.shape
    if legacy:
        x = x.reshape(int(np.prod(shape[:axis])), -1)
        axis = 1
    moved = np.moveaxis(x, axis, -1)
    out = np.zeros_like(moved)
    for pos in np.ndindex(moved.shape[:-1]):
        lane = list(moved[pos])
        out[pos][lane.index(max(lane))] = 1
    return np.moveaxis(out, -1, axis).reshape(shape)


@pytest.mark.parametrize(("opset", "axis"), [
    (opset, axis) for opset in (1, 11, 13) for axis in (None, 0, 1, 2, -1, -3)
    if opset > 1 or axis is None or axis >= 0  # Hardmax-1 has no negative axes
])
def test_hardmax_every_version(opset, axis):
    x = np.round(rand(2, 3, 4, seed=7) * 2) / 2  # ties: the first maximum wins
    attrs = {} if axis is None else {"axis": axis}
    mod = _check(_model("Hardmax", opset, x, **attrs), {"x": x})
    legacy = opset < 13
    default = 1 if legacy else -1
    a = default if axis is None else axis
    a = a + 3 if a < 0 else a
    got = irpass.evaluate(mod, x=x)
    np.testing.assert_array_equal(got, _hardmax_ref(x, a, legacy))


def test_hardmax_axis_out_of_range_is_an_import_error():
    with pytest.raises(OnnxImportError, match="Hardmax.*axis 3 is out of range"):
        from_onnx(_model("Hardmax", 13, rand(2, 3, 4), axis=3))


def test_celu_alpha_zero_is_an_import_error():
    with pytest.raises(OnnxImportError, match="Celu.*alpha=0"):
        from_onnx(_model("Celu", 12, rand(2, 3), alpha=0.0))


def test_integer_input_of_a_float_activation_is_an_import_error():
    x = np.arange(6, dtype="int32").reshape(2, 3)
    model = _model("Softsign", 22, x, out_type=TensorProto.INT32)
    with pytest.raises(OnnxImportError, match="Softsign.*int32"):
        from_onnx(model)
