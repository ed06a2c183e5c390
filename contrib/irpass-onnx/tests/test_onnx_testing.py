"""``irpass_onnx.testing`` itself: finding onnx's backend test data, the runner's inputs,
tolerances, random weights, the onnxruntime runner and the comparison helpers."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from irpass_onnx.testing import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    LIGHT_MODEL_NAMES,
    backend_data_dir,
    cached_step,
    check_outputs_close,
    graph_inputs,
    light_model,
    light_models,
    light_tolerances,
    max_abs_error,
    max_error_ratio,
    output_list,
    pytorch_models,
    randomize_weights,
    run_onnxruntime,
)


def test_the_data_is_found_in_the_installed_onnx_not_copied():
    root = backend_data_dir()
    assert root is not None and root.parent.parent.parent.name == "onnx"
    models = light_models()
    assert [m.name for m in models] == sorted(LIGHT_MODEL_NAMES)
    assert all(m.path.is_relative_to(root) for m in models + pytorch_models())


def test_tolerances_come_from_data_json():
    assert light_tolerances("densenet121") == (2e-3, 1e-7)
    assert light_tolerances("resnet50") == (1e-3, 1e-7)
    assert light_tolerances("no_such_model") == (DEFAULT_RTOL, DEFAULT_ATOL)
    assert light_model("densenet121").rtol == 2e-3
    with pytest.raises(LookupError, match="resnet50"):
        light_model("resnet5")


def test_runner_inputs_are_the_runners_ramp():
    case = light_model("squeezenet")
    model = case.load()
    (name, x), = case.inputs(model).items()
    assert name == graph_inputs(model)[0].name == "data_0"
    n = x.size
    assert x.shape == (1, 3, 224, 224) and x.dtype == np.float32
    np.testing.assert_array_equal(x, (np.arange(n).reshape(x.shape) / n).astype(np.float32))
    # with these inputs onnxruntime gives the reference output: the reading is right
    ref = case.reference_outputs()
    assert check_outputs_close(run_onnxruntime(model, {name: x}), ref, rtol=case.rtol,
                               atol=case.atol) == []


def test_pytorch_models_read_their_test_data():
    # (onnxruntime no longer runs most of these opset-6 models: Add-6, Gemm-6, ...)
    case = next(m for m in pytorch_models(["pytorch-operator"]) if m.name.endswith("concat2"))
    inputs = case.inputs()
    assert list(inputs) == [vi.name for vi in graph_inputs(case.load())] and len(inputs) == 2
    out = run_onnxruntime(case.load(), inputs)
    assert check_outputs_close(out, case.reference_outputs(), rtol=1e-3, atol=1e-7) == []
    with pytest.raises(ValueError, match="unknown kind"):
        pytorch_models(["light"])


@pytest.fixture(scope="module")
def resnet():
    model = light_model("resnet50").load()
    return model, model.SerializeToString()


def _weights(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """Shapes of the float initializers and of the ConstantOfShape outputs."""
    inits = {t.name: t for t in model.graph.initializer}
    shapes = {t.name: tuple(t.dims) for t in inits.values() if t.data_type == 1}
    for n in model.graph.node:
        if n.op_type == "ConstantOfShape":
            shapes[n.output[0]] = tuple(onnx.numpy_helper.to_array(inits[n.input[0]]))
    return shapes


def test_randomize_weights_keeps_every_weight_shape(resnet):
    model, original = resnet
    rand = randomize_weights(model, seed=0)
    assert model.SerializeToString() == original  # the input is left alone
    onnx.checker.check_model(rand, full_check=True)
    assert not any(n.op_type == "ConstantOfShape" for n in rand.graph.node)
    assert len(rand.graph.node) == len(model.graph.node) - sum(
        n.op_type == "ConstantOfShape" for n in model.graph.node)
    after = {t.name: tuple(t.dims) for t in rand.graph.initializer if t.data_type == 1}
    assert after == _weights(model)
    # IR 3: every initializer is listed as a graph input too; the shape tensors are gone
    assert rand.ir_version == 3
    assert {vi.name for vi in rand.graph.input} == {
        t.name for t in rand.graph.initializer} | {"gpu_0/data_0"}
    assert not any(t.name.endswith("__SHAPE") for t in rand.graph.initializer)


def test_randomize_weights_is_seeded(resnet):
    model, _ = resnet
    a, b = randomize_weights(model, seed=1), randomize_weights(model, seed=1)
    c = randomize_weights(model, seed=2)
    assert a.SerializeToString() == b.SerializeToString()
    assert a.graph.initializer[5].raw_data != c.graph.initializer[5].raw_data


def test_random_weights_are_scaled_by_role(resnet):
    model, _ = resnet
    rand = randomize_weights(model, seed=0)
    values = {t.name: onnx.numpy_helper.to_array(t) for t in rand.graph.initializer}
    for node in rand.graph.node:
        if node.op_type == "Conv":
            w = values[node.input[1]]
            fan_in = int(np.prod(w.shape[1:]))
            assert abs(w.std() / np.sqrt(2 / fan_in) - 1) < 0.2, node.input[1]
        if node.op_type == "BatchNormalization":
            scale, shift, mean, var = (values[i] for i in node.input[1:])
            assert (var >= 0.5).all() and (var <= 1.5).all()
            assert (np.abs(scale) <= 1.2).all() and (np.abs(shift) < 0.2).all()


@pytest.mark.parametrize("name", ["resnet50", "shufflenet", "inception_v1", "squeezenet"])
def test_random_weights_keep_a_deep_network_sane(name):
    case = light_model(name)
    model, inputs = case.load(), case.inputs()
    (raw,) = run_onnxruntime(randomize_weights(model, seed=0), inputs)
    assert np.isfinite(raw).all()
    (prob,) = run_onnxruntime(randomize_weights(model, seed=0, calibrate=inputs), inputs)
    np.testing.assert_allclose(prob.sum(), 1.0, rtol=1e-4)
    # not a one-hot softmax, which would hide errors, nor a flat one
    assert 0.01 < prob.max() < 0.5 and prob.min() > 1e-9
    logits = np.log(prob)
    assert 1.5 < logits.std() < 2.5  # calibrated to 2


def test_run_onnxruntime_with_and_without_graph_optimizations():
    case = light_model("squeezenet")
    model = randomize_weights(case.load(), seed=3)
    plain = run_onnxruntime(model, case.inputs())
    optimized = run_onnxruntime(model, case.inputs(), optimized=True)
    assert max_abs_error(plain, optimized) < 1e-6


def test_comparison_helpers():
    e = [np.array([1.0, 2.0, np.nan], "float32")]
    a = [np.array([1.0, 2.001, np.nan], "float32")]
    assert max_abs_error(a, e) == pytest.approx(0.001, rel=1e-3)
    assert max_error_ratio(a, e, rtol=1e-3, atol=0.0) == pytest.approx(0.5, rel=1e-2)
    assert check_outputs_close(a, e, rtol=1e-3, atol=0) == []
    problems = check_outputs_close(a, e, rtol=1e-4, atol=0)
    assert len(problems) == 1 and "1 of 3 element(s)" in problems[0]
    assert "shape" in check_outputs_close([np.zeros(2)], [np.zeros(3)], rtol=1, atol=1)[0]
    assert "output(s)" in check_outputs_close(a, a + a, rtol=1, atol=1)[0]
    assert [x.shape for x in output_list((np.zeros(1), (np.zeros(2), np.zeros(3))))] == [
        (1,), (2,), (3,)]


def test_cached_step_remembers_values_and_failures():
    calls = []

    class Steps:
        @cached_step
        def value(self):
            calls.append("value")
            return 42

        @cached_step
        def broken(self):
            calls.append("broken")
            raise RuntimeError("boom")

    s = Steps()
    assert s.value == s.value == 42
    for _ in range(2):
        with pytest.raises(RuntimeError, match="boom"):
            s.broken  # noqa: B018
    assert calls == ["value", "broken"]
