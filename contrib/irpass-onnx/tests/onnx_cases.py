"""Small ONNX models for the converter tests (imported by the test modules, like
``tests/op_checks.py`` in the core's suite)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
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
