"""Small ONNX models and checks for the converter tests (imported by the test modules,
like ``tests/op_checks.py`` in the core's suite)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import irpass
import numpy as np
import onnx
from irpass.ir import Call, Op
from irpass_onnx import from_onnx
from irpass_onnx.testing import assert_outputs_close, run_onnxruntime
from onnx import helper, numpy_helper


def elem_type(arr: np.ndarray) -> int:
    """The ONNX element type of ``arr``'s dtype."""
    return helper.np_dtype_to_tensor_dtype(arr.dtype)


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, int],
    opset: int,
    inits: Mapping[str, np.ndarray] | None = None,
) -> onnx.ModelProto:
    """A model of ``nodes``; ``inputs``/``inits`` map names to arrays (the inputs are typed
    from them), ``outputs`` names to ONNX element types (shapes left to inference)."""
    graph = helper.make_graph(
        list(nodes), "test",
        [helper.make_tensor_value_info(n, elem_type(a), a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (inits or {}).items()],
    )
    opsets = [helper.make_opsetid("", opset)]
    try:
        ir_version = helper.find_min_ir_version_for(opsets)
    except ValueError:  # onnx's table misses some old opsets
        ir_version = 3
    return helper.make_model(graph, opset_imports=opsets, ir_version=ir_version)


def rand(*shape: int, seed: int = 0, dtype: str | np.dtype = "float32") -> np.ndarray:
    """Seeded standard-normal data of ``shape`` and ``dtype``."""
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def ops_in(mod: irpass.IRModule) -> list[str]:
    """The names of the ops called in ``@main``, in post-order."""
    names: list[str] = []
    irpass.ir.post_order_visit(
        mod["main"],
        lambda e: names.append(e.op.name) if isinstance(e, Call) and isinstance(e.op, Op) else None,
    )
    return names


def check(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], ref=None, **options):
    """Import ``model``, evaluate it on ``feeds`` and compare with onnxruntime (or ``ref``).

    Also checks that the import left the ModelProto as it was; returns the module.
    """
    before = model.SerializeToString()
    mod = from_onnx(model, **options)
    assert model.SerializeToString() == before, "the import changed the ModelProto"
    out = irpass.evaluate(mod, **feeds)
    got = list(out) if isinstance(out, tuple) else [out]
    want = run_onnxruntime(model, feeds) if ref is None else ref
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        assert_outputs_close([g], [w], rtol=1e-5, atol=1e-6, scaled_atol=1e-6)
    return mod
