"""Scalars stay scalars in the export: a 0-d constant is an initializer of shape ``[]``, not
``[1]`` (a Gather by a scalar index drops its axis; ``Size`` and other scalar outputs keep
rank 0). Each model is checked with ``onnx.checker.check_model(full_check=True)``, run in
onnxruntime and imported back by irpass, against ``irpass.evaluate`` of the module."""

from __future__ import annotations

import irpass
import numpy as np
import onnx
import pytest
from irpass import op
from irpass.ir import Function, IRModule, Tuple, var
from irpass.testing import random_inputs
from irpass_onnx import from_onnx, to_onnx
from irpass_onnx.testing import run_onnxruntime
from onnx import TensorProto, helper


def fn(params, body) -> IRModule:
    return IRModule.from_expr(Function(params, body))


def _flat(result) -> list[np.ndarray]:
    return [np.asarray(r) for r in (result if isinstance(result, tuple) else (result,))]


def check(mod: IRModule, opset: int = 17) -> onnx.ModelProto:
    """Export, check, run in onnxruntime and import back; every output equals irpass's own,
    with its dtype and shape (rank 0 included)."""
    model = to_onnx(mod, opset=opset)
    onnx.checker.check_model(model, full_check=True)
    inputs = random_inputs(mod, seed=3)
    expected = _flat(irpass.evaluate(mod, **inputs))
    for got in (run_onnxruntime(model, inputs), _flat(irpass.evaluate(from_onnx(model),
                                                                      **inputs))):
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            g = np.asarray(g)
            assert (g.shape, g.dtype) == (e.shape, e.dtype)
            np.testing.assert_allclose(g, e, rtol=1e-6)
    return model


def _initializer_dims(model: onnx.ModelProto) -> dict[str, list[int]]:
    return {t.name: list(t.dims) for t in model.graph.initializer}


def _output_dims(model: onnx.ModelProto) -> list[list[int]]:
    return [[d.dim_value for d in o.type.tensor_type.shape.dim] for o in model.graph.output]


@pytest.mark.parametrize("opset", [9, 13, 17, 21])
def test_take_with_a_scalar_constant_index_drops_the_axis(opset):
    x = var("x", shape=(3, 4, 5), dtype="float32")
    mod = fn([x], op.take(x, irpass.const(np.array(2, "int64")), axis=1))
    model = check(mod, opset)
    gather = next(n for n in model.graph.node if n.op_type == "Gather")
    assert _initializer_dims(model)[gather.input[1]] == []
    assert _output_dims(model) == [[3, 5]]


def test_take_of_a_scalar_index_param():
    x, i = var("x", shape=(6, 2), dtype="float32"), var("i", shape=(), dtype="int64")
    mod = fn([x, i], op.take(x, i, axis=0, mode="clip"))
    model = check(mod)
    assert _output_dims(model) == [[2]]


def test_a_scalar_constant_is_a_rank_0_initializer():
    s = var("s", shape=(), dtype="float32")
    mod = fn([s], op.multiply(op.add(s, irpass.const(np.float32(2.5))),
                              irpass.const(np.float32(-1.0))))
    model = check(mod)
    assert sorted(_initializer_dims(model).values()) == [[], []]
    assert _output_dims(model) == [[]]


def test_scalar_outputs_that_are_constants_computed_or_inputs():
    x, s = var("x", shape=(2, 3), dtype="float32"), var("s", shape=(), dtype="int32")
    mod = fn([x, s], Tuple([irpass.const(np.int64(7)), op.sum(x), s,
                            op.shape_of(irpass.const(np.float32(1.0)))]))
    model = check(mod)
    assert _output_dims(model) == [[], [], [], [0]]


def test_onnx_size_round_trips_as_a_scalar():
    graph = helper.make_graph(
        [helper.make_node("Size", ["x"], ["n"]), helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "i"], ["d"], axis=0)],
        "size", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])],
        [helper.make_tensor_value_info("n", TensorProto.INT64, []),
         helper.make_tensor_value_info("d", TensorProto.INT64, [])],
        initializer=[helper.make_tensor("i", TensorProto.INT64, [], [1])])
    original = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model = check(from_onnx(original))
    assert _output_dims(model) == [[], []]
    x = np.zeros((3, 4, 5), np.float32)
    assert [r.tolist() for r in run_onnxruntime(model, {"x": x})] == [60, 4]


def test_an_embedding_lookup_and_a_class_token_round_trip():
    # BERT/ViT-like: token and position embeddings looked up by Gather, the first token's
    # row taken with a scalar index (its axis dropped), then a dense layer
    rng = np.random.default_rng(1)
    ids = var("ids", shape=(2, 5), dtype="int64")
    tokens = irpass.const(rng.standard_normal((50, 8)).astype(np.float32))
    positions = irpass.const(rng.standard_normal((5, 8)).astype(np.float32))
    h = op.add(op.take(tokens, ids, axis=0),
               op.take(positions, op.arange(5, dtype="int64"), axis=0))
    first = op.take(h, irpass.const(np.array(0, "int64")), axis=1)
    mod = fn([ids], op.nn.dense(first, irpass.const(rng.standard_normal((3, 8)).astype(
        np.float32))))
    inputs = {"ids": rng.integers(0, 50, (2, 5)).astype(np.int64)}
    model = to_onnx(mod, opset=17)
    onnx.checker.check_model(model, full_check=True)
    expected = np.asarray(irpass.evaluate(mod, **inputs))
    assert expected.shape == (2, 3)
    np.testing.assert_allclose(run_onnxruntime(model, inputs)[0], expected, rtol=1e-5)
    again = from_onnx(model)
    np.testing.assert_allclose(np.asarray(irpass.evaluate(again, **inputs)), expected,
                               rtol=1e-5)
    # and its own export of the re-imported module still holds the lookups
    assert [n.op_type for n in to_onnx(again).graph.node].count("Gather") >= 2
