"""The nine ``light`` ImageNet networks onnx ships (ResNet-50, SqueezeNet, VGG-19, ...):
import, evaluate, optimize at -O3, export, each checked against the reference output and,
with seeded random weights, against onnxruntime.

The light models' weights are all ``ConstantOfShape(0.02)``, so their reference outputs are
nearly constant and a match proves little; the random-weights tests (irpass before and after
-O3, and the exported model in onnxruntime, each against onnxruntime on the randomized
original with graph optimizations off, rtol 1e-3 / atol 1e-5) are the ones that count.

Every step of a model (import, evaluation, -O3, export, onnxruntime runs) runs once and is
shared by that model's tests through the module-scoped ``run`` fixture; pytest groups the tests
by model, so one model's arrays (VGG-19's weights are 574 MB) are freed before the next.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
from irpass.ir import Call, Constant, Function, IRModule, Op, post_order_visit
from irpass_onnx import from_onnx, to_onnx
from irpass_onnx.testing import (
    ONNXSIM_NODE_COUNTS,
    RANDOM_ATOL,
    RANDOM_RTOL,
    ModelRun,
    assert_outputs_close,
    cached_step,
    evaluate_irpass,
    graph_inputs,
    light_models,
    onnx_node_count,
    optimize_o3,
    randomize_weights,
    run_onnxruntime,
)

SEED = 0
MODELS = light_models()


def test_the_installed_onnx_ships_the_light_models():
    # onnx >= 1.14 ships all nine: finding none would silently test nothing
    assert len(MODELS) == 9, [m.name for m in MODELS]


class LightRun(ModelRun):
    """The steps of one light model, each run on first use and then shared."""

    # -- the model as shipped, against its reference output --
    @cached_step
    def before(self) -> list[np.ndarray]:
        return evaluate_irpass(self.mod, self.inputs)

    @cached_step
    def after(self) -> list[np.ndarray]:
        return evaluate_irpass(self.optimized, self.inputs)

    @cached_step
    def exported(self) -> onnx.ModelProto:
        return to_onnx(self.optimized)

    @cached_step
    def exported_out(self) -> list[np.ndarray]:
        return run_onnxruntime(self.exported, self.inputs)

    # -- the same network with seeded random weights, against onnxruntime --
    @cached_step
    def random_model(self) -> onnx.ModelProto:
        return randomize_weights(self.model, SEED, calibrate=self.inputs)

    @cached_step
    def random_expected(self) -> list[np.ndarray]:
        return run_onnxruntime(self.random_model, self.inputs, optimized=False)

    @cached_step
    def random_mod(self) -> IRModule:
        return from_onnx(self.random_model)

    @cached_step
    def random_before(self) -> list[np.ndarray]:
        return evaluate_irpass(self.random_mod, self.inputs)

    @cached_step
    def random_optimized(self) -> IRModule:
        return optimize_o3(self.random_mod)

    @cached_step
    def random_after(self) -> list[np.ndarray]:
        return evaluate_irpass(self.random_optimized, self.inputs)

    @cached_step
    def random_exported(self) -> onnx.ModelProto:
        return to_onnx(self.random_optimized)

    @cached_step
    def random_exported_out(self) -> list[np.ndarray]:
        return run_onnxruntime(self.random_exported, self.inputs)


@pytest.fixture(scope="module", params=MODELS, ids=[m.name for m in MODELS])
def run(request) -> LightRun:
    return LightRun(request.param)


# -- helpers over the IR --------------------------------------------------------------------


def _op_calls(mod: IRModule) -> list[Call]:
    """Every op call of the module, those inside fused ``Primitive`` functions included."""
    found: list[Call] = []

    def visit(node: object) -> None:
        if type(node) is Call and type(node.op) is Op:
            found.append(node)

    for _gv, func in mod.items():
        post_order_visit(func, visit)
    return found


def _primitive_count(mod: IRModule) -> int:
    found = []

    def visit(node: object) -> None:
        if type(node) is Function and node.attrs and node.attrs.get("Primitive"):
            found.append(node)

    for _gv, func in mod.items():
        post_order_visit(func, visit)
    return len(found)


def _kernels(mod: IRModule) -> list[np.ndarray]:
    """The 4-D constants of the module (conv weights), fused functions included."""
    found: list[np.ndarray] = []

    def visit(node: object) -> None:
        if type(node) is Constant and node.data.ndim == 4:
            found.append(node.data)

    for _gv, func in mod.items():
        post_order_visit(func, visit)
    return found


def _bn_fed_conv_weights(model: onnx.ModelProto) -> list[np.ndarray]:
    """Weights of the Conv nodes whose output goes straight into a BatchNormalization."""
    inits = {t.name: t for t in model.graph.initializer}
    bn_inputs = {n.input[0] for n in model.graph.node if n.op_type == "BatchNormalization"}
    return [
        onnx.numpy_helper.to_array(inits[n.input[1]])
        for n in model.graph.node
        if n.op_type == "Conv" and n.output[0] in bn_inputs and n.input[1] in inits
    ]


# -- the model as shipped -------------------------------------------------------------------


def test_import_keeps_the_graph_signature(run):
    main = run.mod["main"]
    assert [p.name_hint for p in main.params] == [vi.name for vi in graph_inputs(run.model)]
    assert list(main.attrs["onnx.output_names"]) == [o.name for o in run.model.graph.output]
    assert main.attrs["onnx.opset"] == run.model.opset_import[0].version


def test_evaluate_matches_the_reference_output(run):
    assert_outputs_close(run.before, run.reference, rtol=run.case.rtol, atol=run.case.atol,
                         what=f"{run.case.name}: irpass.evaluate vs reference")


def test_o3_matches_the_reference_output(run):
    assert_outputs_close(run.after, run.reference, rtol=run.case.rtol, atol=run.case.atol,
                         what=f"{run.case.name}: -O3 vs reference")


def test_o3_leaves_no_batch_norm_or_dropout(run):
    # fused functions included; with the shipped weights and with random ones
    for mod, optimized in ((run.mod, run.optimized), (run.random_mod, run.random_optimized)):
        before = Counter(c.op.name for c in _op_calls(mod))
        after = Counter(c.op.name for c in _op_calls(optimized))
        assert after["nn.batch_norm"] == 0 and after["nn.dropout"] == 0, after
        assert before["nn.conv2d"] == after["nn.conv2d"] > 0
        assert _primitive_count(optimized) > 0, "-O3 fused nothing"


def test_o3_folds_batch_norm_scales_into_the_conv_weights(run):
    # with random weights, so that scaled and unscaled kernels cannot coincide
    calls = _op_calls(run.random_optimized)  # children before parents
    # a conv output (or the conv plus its bias/shift adds) is never multiplied any more,
    # even inside a fused function, where the constants are parameters...
    conv_out = set()
    for c in calls:
        if c.op.name == "nn.conv2d" or (
            c.op.name in ("add", "nn.bias_add") and id(c.args[0]) in conv_out
            and type(c.args[1]) is not Call
        ):
            conv_out.add(id(c))
    scaled = [c for c in calls
              if c.op.name == "multiply" and any(id(a) in conv_out for a in c.args)]
    assert not scaled, f"{len(scaled)} multiply(s) still scale a conv2d output"
    # ...because the kernels of the convs followed by a batch norm were all rescaled
    bn_fed = _bn_fed_conv_weights(run.random_model)
    kernels = _kernels(run.random_optimized)
    unscaled = sum(any(np.array_equal(k, w) for k in kernels) for w in bn_fed)
    assert unscaled == 0, f"{unscaled} of {len(bn_fed)} batch-normed conv kernels unchanged"


def test_export_passes_the_full_onnx_check(run):
    onnx.checker.check_model(run.exported, full_check=True)


def test_export_runs_in_onnxruntime_like_the_reference(run):
    assert_outputs_close(run.exported_out, run.reference, rtol=run.case.rtol,
                         atol=run.case.atol, what=f"{run.case.name}: exported, onnxruntime")


def test_export_has_no_more_nodes_than_onnxsim_leaves(run, record_property):
    nodes = onnx_node_count(run.exported)
    record_property("nodes_before", onnx_node_count(run.model))
    record_property("nodes_after_o3", nodes)
    assert nodes <= onnx_node_count(run.model)
    if run.case.name in ONNXSIM_NODE_COUNTS:
        assert nodes <= ONNXSIM_NODE_COUNTS[run.case.name], Counter(
            n.op_type for n in run.exported.graph.node)


# -- random weights: the check that counts -------------------------------------------------


def test_random_weights_evaluate_matches_onnxruntime(run):
    assert_outputs_close(run.random_before, run.random_expected, rtol=RANDOM_RTOL,
                         atol=RANDOM_ATOL, what=f"{run.case.name}, random weights, irpass")


def test_random_weights_o3_matches_onnxruntime(run):
    assert_outputs_close(run.random_after, run.random_expected, rtol=RANDOM_RTOL,
                         atol=RANDOM_ATOL, what=f"{run.case.name}, random weights, -O3")


def test_random_weights_export_matches_onnxruntime(run):
    # (the full checker ran on the same graph with the reference weights)
    assert_outputs_close(run.random_exported_out, run.random_expected, rtol=RANDOM_RTOL,
                         atol=RANDOM_ATOL,
                         what=f"{run.case.name}, random weights, exported, onnxruntime")
