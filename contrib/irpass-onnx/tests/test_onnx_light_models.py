"""The nine ``light`` ImageNet networks onnx ships (ResNet-50, SqueezeNet, VGG-19, ...):
import, evaluate, optimize at -O3, export, each checked against onnxruntime before the final
softmax and, with seeded random weights, after it.

The light models' weights are all ``ConstantOfShape(0.02)``: their logits are all equal and
huge (SqueezeNet's about 9.5e9, where one float32 ulp is 1024), so the few ulps a different
summation order moves them by become probabilities of 0 or 1/32 instead of the reference's
1/1000 after the softmax. With those weights the outputs are compared before the softmax
(``logits_model``: the graph cut at the softmax's input, for irpass and onnxruntime alike),
with a tolerance relative to their magnitude, and onnxruntime's logits are checked against
the shipped reference output in log space (``check_softmax_reference``). Those weights make
the logits depend on little but the last layers, so the random-weights tests (irpass before
and after -O3, and the exported model in onnxruntime, each against onnxruntime on the
randomized original with graph optimizations off, rtol 1e-3 and ``SCALED_ATOL``) are the ones
that count. Each comparison is shown to catch one weight 1% off (``perturb_weight``).

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
from irpass_onnx.export.builder import SPLAT_MIN_BYTES, splat_value
from irpass_onnx.testing import (
    ONNXSIM_NODE_COUNTS,
    RANDOM_RTOL,
    SCALED_ATOL,
    ModelRun,
    cached_step,
    check_outputs_close,
    check_softmax_reference,
    evaluate_irpass,
    graph_inputs,
    light_model,
    light_models,
    logits_model,
    onnx_node_count,
    optimize_o3,
    perturb_weight,
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

    # -- the model as shipped: -O3 and export of the whole model --
    @cached_step
    def exported(self) -> onnx.ModelProto:
        return to_onnx(self.optimized)

    # -- the model as shipped, cut before its softmax, against onnxruntime --
    @cached_step
    def logits_model(self) -> onnx.ModelProto:
        return logits_model(self.model)

    @cached_step
    def logits_expected(self) -> list[np.ndarray]:
        return run_onnxruntime(self.logits_model, self.inputs, optimized=False)

    @cached_step
    def logits_mod(self) -> IRModule:
        return from_onnx(self.logits_model)

    @cached_step
    def logits_before(self) -> list[np.ndarray]:
        return evaluate_irpass(self.logits_mod, self.inputs)

    @cached_step
    def logits_optimized(self) -> IRModule:
        return optimize_o3(self.logits_mod)

    @cached_step
    def logits_after(self) -> list[np.ndarray]:
        return evaluate_irpass(self.logits_optimized, self.inputs)

    @cached_step
    def logits_exported_out(self) -> list[np.ndarray]:
        return run_onnxruntime(to_onnx(self.logits_optimized), self.inputs)

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


# -- the comparisons (each is shown below to catch one weight 1% off) --------------------------


def logits_problems(run: LightRun, actual: list[np.ndarray]) -> list[str]:
    """How ``actual`` logits (shipped weights) differ from onnxruntime's beyond the model's
    tolerance (``data.json``'s rtol) and :data:`SCALED_ATOL`."""
    return check_outputs_close(actual, run.logits_expected, rtol=run.case.rtol,
                               scaled_atol=SCALED_ATOL)


def random_problems(run: LightRun, actual: list[np.ndarray]) -> list[str]:
    """How ``actual`` outputs (random weights) differ from onnxruntime's on the randomized
    original beyond ``RANDOM_RTOL`` and :data:`SCALED_ATOL`."""
    return check_outputs_close(actual, run.random_expected, rtol=RANDOM_RTOL,
                               scaled_atol=SCALED_ATOL)


def _has_final_softmax(run: LightRun) -> bool:
    return len(run.logits_model.graph.node) < len(run.model.graph.node)


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


def test_onnxruntimes_logits_give_the_shipped_reference_output(run):
    # the reference is the softmax of the logits the tests below compare with (DenseNet-121
    # has no softmax: its reference is its output)
    if _has_final_softmax(run):
        problems = check_softmax_reference(run.logits_expected, run.reference, axis=1)
    else:
        problems = check_outputs_close(run.logits_expected, run.reference, rtol=run.case.rtol,
                                       scaled_atol=SCALED_ATOL)
    assert not problems, f"{run.case.name}: onnxruntime vs the reference output: {problems}"


def test_evaluate_matches_onnxruntime_before_the_softmax(run):
    problems = logits_problems(run, run.logits_before)
    assert not problems, f"{run.case.name}: irpass.evaluate: {problems}"


def test_o3_matches_onnxruntime_before_the_softmax(run):
    problems = logits_problems(run, run.logits_after)
    assert not problems, f"{run.case.name}: -O3: {problems}"


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


def test_export_runs_in_onnxruntime_like_the_original_before_the_softmax(run):
    problems = logits_problems(run, run.logits_exported_out)
    assert not problems, f"{run.case.name}: exported, onnxruntime: {problems}"


def compute_node_count(model: onnx.ModelProto) -> int:
    """The nodes of the main graph that compute something: all but the ConstantOfShape nodes
    of a constant shape, which only hold a constant-filled tensor (onnxsim expands those
    into initializers, the export keeps them: light ResNet-50 stays 0.7 MB, not 102 MB)."""
    inits = {t.name for t in model.graph.initializer}
    return sum(1 for n in model.graph.node
               if not (n.op_type == "ConstantOfShape" and n.input[0] in inits))


def test_export_has_no_more_nodes_than_onnxsim_leaves(run, record_property):
    nodes = onnx_node_count(run.exported)
    record_property("nodes_before", onnx_node_count(run.model))
    record_property("nodes_after_o3", nodes)
    assert nodes <= onnx_node_count(run.model)
    if run.case.name in ONNXSIM_NODE_COUNTS:
        assert compute_node_count(run.exported) <= ONNXSIM_NODE_COUNTS[run.case.name], Counter(
            n.op_type for n in run.exported.graph.node)


def test_export_writes_constant_filled_weights_as_constant_of_shape(run):
    # the shipped weights are ConstantOfShape(0.02); -O3 folds them (and the batch norms)
    # into constants, which must not come back as megabytes of one repeated number
    big_splats = [t.name for t in run.exported.graph.initializer
                  if len(t.raw_data) > SPLAT_MIN_BYTES
                  and splat_value(onnx.numpy_helper.to_array(t)) is not None]
    assert not big_splats
    assert any(n.op_type == "ConstantOfShape" for n in run.exported.graph.node)
    assert run.exported.ByteSize() < 16 * run.model.ByteSize()


# -- random weights: the check that counts -------------------------------------------------


def test_random_weights_evaluate_matches_onnxruntime(run):
    problems = random_problems(run, run.random_before)
    assert not problems, f"{run.case.name}, random weights, irpass: {problems}"


def test_random_weights_o3_matches_onnxruntime(run):
    problems = random_problems(run, run.random_after)
    assert not problems, f"{run.case.name}, random weights, -O3: {problems}"


def test_random_weights_export_matches_onnxruntime(run):
    # (the full checker ran on the same graph with the reference weights)
    problems = random_problems(run, run.random_exported_out)
    assert not problems, f"{run.case.name}, random weights, exported, onnxruntime: {problems}"


# -- the comparisons catch a real error -----------------------------------------------------

#: One weight per model made 1% off: SqueezeNet has no batch norm, so a conv's kernel; the
#: first one, whose error has the whole network to be diluted in.
PERTURBED = [("squeezenet", "nn.conv2d"), ("resnet50", "nn.batch_norm")]


@pytest.mark.parametrize("name, op_name", PERTURBED, ids=[p[0] for p in PERTURBED])
def test_one_weight_1_percent_off_fails_both_comparisons(name, op_name):
    # its own run, not the module's: pytest would not keep that one for these two models
    run = LightRun(light_model(name))
    wrong = perturb_weight(run.logits_mod, op_name, arg=1, index=0, factor=1.01)
    assert logits_problems(run, evaluate_irpass(wrong, run.inputs)), (
        f"{name}: the shipped-weights comparison misses {op_name} 0 1% off")
    wrong = perturb_weight(run.random_mod, op_name, arg=1, index=0, factor=1.01)
    assert random_problems(run, evaluate_irpass(wrong, run.inputs)), (
        f"{name}: the random-weights comparison misses {op_name} 0 1% off")
