"""``irpass_onnx.testing`` itself: finding onnx's backend test data, the runner's inputs,
tolerances, random weights, the onnxruntime runner, the comparison helpers and the cut before
the softmax."""

from __future__ import annotations

import irpass
import numpy as np
import onnx
import pytest
from irpass_onnx import from_onnx
from irpass_onnx.testing import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    LIGHT_MODEL_NAMES,
    SCALED_ATOL,
    backend_data_dir,
    cached_step,
    check_outputs_close,
    check_softmax_reference,
    evaluate_irpass,
    graph_inputs,
    light_model,
    light_models,
    light_tolerances,
    logits_model,
    max_abs_error,
    max_error_ratio,
    output_list,
    perturb_weight,
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
    # with these inputs onnxruntime's logits give the reference output (compared in log
    # space: as probabilities, an ulp of these logits is the difference between 0 and 1/32)
    ref = case.reference_outputs()
    assert ref[0].shape == (1, 1000, 1, 1) and ref[0].dtype == np.float32
    assert check_softmax_reference(run_onnxruntime(logits_model(model), {name: x}), ref) == []


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
    model = logits_model(randomize_weights(case.load(), seed=3))
    plain = run_onnxruntime(model, case.inputs())
    optimized = run_onnxruntime(model, case.inputs(), optimized=True)
    assert check_outputs_close(plain, optimized, rtol=1e-4, scaled_atol=SCALED_ATOL) == []


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


def test_scaled_atol_is_relative_to_the_outputs_largest_magnitude():
    e = [np.array([1000.0, 0.0, -2.0], "float32")]
    a = [np.array([1000.0, 0.005, -2.0], "float32")]  # rounding of a sum with terms ~1000
    assert check_outputs_close(a, e, rtol=1e-3) != []  # elementwise: 0.005 vs 0 fails
    assert check_outputs_close(a, e, rtol=1e-3, scaled_atol=1e-5) == []  # 0.005 <= 0.01
    assert check_outputs_close([a[0] * 10], [e[0] * 10], rtol=1e-3, scaled_atol=1e-5) == []
    assert check_outputs_close([np.array([1000.0, 0.02, -2.0], "float32")], e, rtol=1e-3,
                               scaled_atol=1e-5) != []
    assert max_error_ratio(a, e, rtol=0.0, atol=0.0, scaled_atol=1e-5) == pytest.approx(0.5,
                                                                                      rel=1e-3)
    # NaNs match NaNs and infinities themselves; the scale ignores them
    e2 = [np.array([np.inf, np.nan, 1.0], "float32")]
    assert check_outputs_close(e2, e2, rtol=0.0, scaled_atol=1e-5) == []
    assert check_outputs_close([np.array([np.inf, np.nan, 1.1], "float32")], e2, rtol=0.0,
                               scaled_atol=1e-5) != []


def _softmax(z: np.ndarray) -> np.ndarray:
    z64 = z.astype(np.float64)
    p = np.exp(z64 - z64.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


def test_check_softmax_reference_is_well_conditioned_and_still_sensitive():
    # the light models' case: 1000 equal logits of 9.5e9 give the reference 1/1000 ...
    logits = np.full((1, 1000), 9.5e9, np.float32)
    reference = [_softmax(logits)]
    np.testing.assert_allclose(reference[0], 1e-3, rtol=1e-6)
    # ... and a few ulps (1024 each) of rounding, as another summation order gives, make the
    # probabilities 0 or 1/32 (what failed on another machine), not the logits
    noisy = logits.copy()
    noisy[0, :32] = np.nextafter(np.float32(9.5e9), np.float32(np.inf))
    assert check_outputs_close([_softmax(noisy)], reference, rtol=1e-3, atol=1e-7) != []
    assert check_softmax_reference([noisy], reference) == []
    # logits of a moderate scale: a reference that is not their softmax fails
    z = np.random.default_rng(0).standard_normal((2, 10)).astype(np.float32) * 2
    assert check_softmax_reference([z], [_softmax(z)]) == []
    moved = z.copy()
    moved[1, 3] += 0.05
    assert check_softmax_reference([moved], [_softmax(z)]) != []
    # a probability that underflowed to 0 matches any logit at least that low
    low = z.copy()
    low[0, 0] = -200.0
    assert check_softmax_reference([low], [_softmax(low)]) == []


def test_logits_model_cuts_before_the_final_softmax():
    case = light_model("squeezenet")
    model = case.load()
    original = model.SerializeToString()
    cut = logits_model(model)
    assert model.SerializeToString() == original
    assert len(cut.graph.node) == len(model.graph.node) - 1
    assert not any(n.op_type == "Softmax" for n in cut.graph.node)
    (logits,) = run_onnxruntime(cut, case.inputs())
    assert logits.shape == (1, 1000, 1, 1) and float(logits.min()) > 1e9
    # a model without a final softmax (DenseNet-121) is unchanged
    densenet = light_model("densenet121").load()
    assert logits_model(densenet).SerializeToString() == densenet.SerializeToString()


def _conv_kernels(mod) -> list[np.ndarray]:
    found = []
    irpass.ir.post_order_visit(mod["main"], lambda e: found.append(e.args[1].data) if (
        isinstance(e, irpass.ir.Call) and getattr(e.op, "name", None) == "nn.conv2d") else None)
    return found


def test_perturb_weight_makes_one_weight_off_in_a_copy():
    case = light_model("squeezenet")
    feeds = case.inputs()
    mod = from_onnx(randomize_weights(case.load(), seed=0, calibrate=feeds))
    text = mod.astext()
    wrong = perturb_weight(mod, "nn.conv2d", arg=1, index=3, factor=1.01)
    assert mod.astext() == text  # the module itself is unchanged
    before, after = _conv_kernels(mod), _conv_kernels(wrong)
    assert len(before) == len(after) == 26
    for k, (w, v) in enumerate(zip(before, after, strict=True)):
        if k == 3:  # children first: the 4th conv from the input
            np.testing.assert_array_equal(v, (w * np.float32(1.01)).astype(np.float32))
        else:
            np.testing.assert_array_equal(v, w)
    assert max_abs_error(evaluate_irpass(wrong, feeds), evaluate_irpass(mod, feeds)) > 0
    with pytest.raises(LookupError, match="26 call"):
        perturb_weight(mod, "nn.conv2d", index=26)
    with pytest.raises(LookupError, match="not a constant"):
        perturb_weight(mod, "nn.conv2d", arg=0)


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
