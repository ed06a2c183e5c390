"""ONNX -> irpass -> ONNX: small hand-built models over the imported op set, at several opsets,
and the PyTorch-converted models shipped with onnx, unoptimized and at -O3. The original and
the exported model both run in onnxruntime (graph optimizations off) on the same inputs."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from irpass_onnx import OnnxExportError, OnnxImportError, from_onnx, to_onnx
from irpass_onnx.testing import (
    SCALED_ATOL,
    assert_outputs_close,
    optimize_o3,
    pytorch_models,
    run_onnxruntime,
)
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
rng = np.random.default_rng(0)


def init(name: str, array) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def weight(name: str, *shape: int, positive: bool = False) -> onnx.TensorProto:
    data = rng.standard_normal(shape).astype(np.float32)
    return init(name, np.abs(data) + 0.5 if positive else data)


def model_of(nodes, inputs, outputs, inits=(), opset=13) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, F, None) for n in outputs],
        initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = helper.find_min_ir_version_for([helper.make_opsetid("", opset)])
    return model


def feeds_of(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def needed_opset(mod) -> int | None:
    """The opset an export error asks for ("... needs opset >= 10"), if any."""
    try:
        to_onnx(mod)
    except OnnxExportError as err:
        found = re.search(r"needs opset >= (\d+)", str(err))
        if found:
            return int(found.group(1))
        raise
    return None


def roundtrip(model: onnx.ModelProto, opset: int | None = None, optimize: bool = False,
              rtol: float = 1e-4, atol: float = 1e-5, feeds: dict[str, np.ndarray] | None = None,
              expected: list[np.ndarray] | None = None,
              scaled_atol: float | None = None) -> onnx.ModelProto:
    """Import, optionally -O3, export, check, and compare the export in onnxruntime with the
    original in onnxruntime (or with ``expected``): within ``rtol`` and ``atol``, plus
    ``scaled_atol`` (default ``atol``) times each output's largest magnitude."""
    mod = from_onnx(model)
    if optimize:
        mod = optimize_o3(mod)
    out = to_onnx(mod, opset=opset if opset is not None else needed_opset(mod))
    onnx.checker.check_model(out, full_check=True)
    feeds = feeds_of(model) if feeds is None else feeds
    if expected is None:
        expected = run_onnxruntime(model, feeds)
    got = run_onnxruntime(out, feeds)
    assert [o.name for o in out.graph.output] == [o.name for o in model.graph.output]
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert_outputs_close([g], [e], rtol=rtol, atol=atol,
                             scaled_atol=atol if scaled_atol is None else scaled_atol)
    return out


# -- small models -------------------------------------------------------------------------------


def _conv_bn_relu_pool(opset):
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"], epsilon=1e-3),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1),
        helper.make_node("Softmax", ["y"], ["out"], axis=1),
    ]
    inits = [weight("w", 4, 3, 3, 3), weight("b", 4), weight("s", 4), weight("bb", 4),
             weight("m", 4), weight("v", 4, positive=True), weight("fw", 5, 4), weight("fb", 5)]
    return model_of(nodes, [("x", [1, 3, 16, 16])], ["out"], inits, opset)


def _shapes(opset):
    nodes = []
    inits = []
    if opset >= 13:
        inits += [init("axes0", np.array([0], np.int64)), init("split", np.array([2, 4], np.int64))]
        nodes += [helper.make_node("Unsqueeze", ["x", "axes0"], ["u"]),
                  helper.make_node("Squeeze", ["u", "axes0"], ["q"]),
                  helper.make_node("Split", ["q", "split"], ["a", "b"], axis=1)]
    else:
        nodes += [helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0]),
                  helper.make_node("Squeeze", ["u"], ["q"], axes=[0]),
                  helper.make_node("Split", ["q"], ["a", "b"], axis=1, split=[2, 4])]
    nodes += [helper.make_node("Transpose", ["b"], ["t"], perm=[0, 2, 1]),
              helper.make_node("Reshape", ["t", "shape"], ["rs"]),
              helper.make_node("Concat", ["rs", "rs"], ["cat"], axis=1),
              helper.make_node("Sigmoid", ["a"], ["sa"])]
    inits += [init("shape", np.array([3, -1], np.int64))]
    return model_of(nodes, [("x", [3, 6, 5])], ["cat", "sa"], inits, opset)


def _math(opset):
    nodes = [helper.make_node("Mul", ["x", "x"], ["sq"]),
             helper.make_node("Sqrt", ["sq"], ["ab"]),
             helper.make_node("Sub", ["ab", "x"], ["d"]),
             helper.make_node("Div", ["d", "two"], ["h"]),
             helper.make_node("Pow", ["h", "two"], ["p"]),
             helper.make_node("Erf", ["p"], ["e"]),
             helper.make_node("Tanh", ["e"], ["t"]),
             helper.make_node("Greater", ["t", "x"], ["gt"]),
             helper.make_node("Where", ["gt", "t", "x"], ["w"]),
             helper.make_node("LeakyRelu", ["w"], ["lr"], alpha=0.3)]
    if opset >= 13:
        nodes.append(helper.make_node("ReduceSum", ["lr", "axes"], ["out"], keepdims=1))
        extra = [init("axes", np.array([1], np.int64))]
    else:
        nodes.append(helper.make_node("ReduceSum", ["lr"], ["out"], axes=[1], keepdims=1))
        extra = []
    if opset >= 18:
        nodes.append(helper.make_node("ReduceMean", ["lr", "axes"], ["m"], keepdims=0))
    else:
        nodes.append(helper.make_node("ReduceMean", ["lr"], ["m"], axes=[1], keepdims=0))
    inits = [init("two", np.float32(2.0))] + extra
    if opset >= 18 and not extra:
        inits.append(init("axes", np.array([1], np.int64)))
    return model_of(nodes, [("x", [2, 5, 3])], ["out", "m"], inits, opset)


def _clip_pad_slice_gather(opset):
    nodes = []
    inits = [init("idx", np.array([[0, -1], [1, -2]], np.int64))]
    if opset >= 11:
        inits += [init("lo", np.float32(-0.5)), init("hi", np.float32(0.5)),
                  init("pads", np.array([0, 1, 2, 0, 0, 3], np.int64)),
                  init("st", np.array([1, -1], np.int64)), init("en", np.array([4, -8], np.int64)),
                  init("ax", np.array([1, 2], np.int64)), init("sp", np.array([2, -1], np.int64))]
        nodes += [helper.make_node("Clip", ["x", "lo", "hi"], ["c"]),
                  helper.make_node("Pad", ["c", "pads"], ["p"], mode="reflect"),
                  helper.make_node("Slice", ["p", "st", "en", "ax", "sp"], ["s"])]
    else:
        nodes += [helper.make_node("Clip", ["x"], ["c"], min=-0.5, max=0.5),
                  helper.make_node("Pad", ["c"], ["p"], pads=[0, 1, 2, 0, 0, 3], mode="reflect"),
                  helper.make_node("Slice", ["p"], ["s"], starts=[1, 2], ends=[4, 8], axes=[1, 2])]
    nodes.append(helper.make_node("Gather", ["s", "idx"], ["out"], axis=1))
    return model_of(nodes, [("x", [2, 5, 6])], ["out"], inits, opset)


def _layer_norm(opset):
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1,
                              epsilon=1e-5),
             helper.make_node("MatMul", ["y", "w"], ["m"]),
             helper.make_node("Softmax", ["m"], ["out"], axis=1)]
    inits = [weight("g", 6), weight("b", 6), weight("w", 6, 4)]
    return model_of(nodes, [("x", [2, 3, 6])], ["out"], inits, opset)


SMALL = {
    "conv_bn_relu_pool": (_conv_bn_relu_pool, (9, 11, 13, 17)),
    "shapes": (_shapes, (11, 13)),
    "math": (_math, (11, 13, 18)),
    "clip_pad_slice_gather": (_clip_pad_slice_gather, (9, 11, 13)),
    "layer_norm": (_layer_norm, (17, 18)),
}


@pytest.mark.parametrize("optimize", [False, True], ids=["O0", "O3"])
@pytest.mark.parametrize("case, opset",
                         [(n, o) for n, (_, opsets) in SMALL.items() for o in opsets])
def test_small_model_roundtrip_at_its_opset(case: str, opset: int, optimize: bool) -> None:
    build, _ = SMALL[case]
    out = roundtrip(build(opset), optimize=optimize)
    assert out.opset_import[0].version == opset  # the imported opset is kept


@pytest.mark.parametrize("target", [9, 13, 17, 21])
def test_small_model_roundtrip_to_another_opset(target: int) -> None:
    roundtrip(_conv_bn_relu_pool(11), opset=target)
    if target >= 11:
        roundtrip(_clip_pad_slice_gather(13), opset=target)


def test_conv_bn_roundtrip_after_o3_is_compact() -> None:
    out = roundtrip(_conv_bn_relu_pool(13), optimize=True)
    types = [n.op_type for n in out.graph.node]
    assert types == ["Conv", "Relu", "MaxPool", "GlobalAveragePool", "Reshape", "Gemm",
                     "Softmax"]


# -- the PyTorch-converted models of the installed onnx -----------------------------------------

def _importable(case) -> bool:
    try:
        from_onnx(case.load())
    except OnnxImportError:  # what the importer refuses, and why, is test_onnx_pytorch_models'
        return False
    return True


# decided at collection, so the round trip has a case for exactly the importable models
PYTORCH = [case for case in pytorch_models() if _importable(case)]


@pytest.mark.parametrize("optimize", [False, True], ids=["O0", "O3"])
@pytest.mark.parametrize("case", PYTORCH, ids=[f"{c.kind}/{c.name}" for c in PYTORCH])
def test_pytorch_model_roundtrip(case, optimize: bool) -> None:
    model = case.load()
    # onnxruntime 1.31 runs none of the opset-6 originals (Add(6) ...): the reference outputs
    # shipped with them stand in
    roundtrip(model, optimize=optimize, rtol=case.rtol, atol=case.atol, scaled_atol=SCALED_ATOL,
              feeds=case.inputs(model), expected=case.reference_outputs())
