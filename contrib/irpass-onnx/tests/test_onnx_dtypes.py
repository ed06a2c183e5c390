"""The ONNX element types beyond numpy's (bfloat16, float8, float4, int4/uint4, int2/uint2,
float8e8m0): graph inputs and initializers of those types import, move through the data ops,
evaluate, and export (packed by onnx where sub-byte) at the opsets that have them; at older
opsets (and for a type newer than the newest opset the exporter writes), the export is a clean
error."""

from __future__ import annotations

import irpass
import ml_dtypes
import numpy as np
import onnx
import pytest
from irpass import op
from irpass.ir import Function, IRModule, var
from irpass_onnx import OnnxExportError, OnnxImportError, from_onnx, to_onnx
from irpass_onnx.dtypes import DTYPE_MIN_OPSET, DTYPE_TO_ONNX, ONNX_TO_DTYPE, dtype_of
from irpass_onnx.export import MAX_OPSET
from irpass_onnx.testing import run_onnxruntime
from onnx import TensorProto as TP
from onnx import helper
from onnx.reference import ReferenceEvaluator
from onnx_cases import make_model

TYPES = {TP.BFLOAT16: "bfloat16", TP.FLOAT8E4M3FN: "float8_e4m3fn",
         TP.FLOAT8E4M3FNUZ: "float8_e4m3fnuz", TP.FLOAT8E5M2: "float8_e5m2",
         TP.FLOAT8E5M2FNUZ: "float8_e5m2fnuz", TP.INT4: "int4", TP.UINT4: "uint4",
         TP.FLOAT4E2M1: "float4_e2m1fn", TP.INT2: "int2", TP.UINT2: "uint2",
         TP.FLOAT8E8M0: "float8_e8m0fnu"}


def values(dtype: str, shape) -> np.ndarray:
    base = np.array([1, 0, 2, 1, 3, 0, 1, 2, 0, 3, 1, 1], np.float32)
    if dtype in ("int2", "int4") or dtype.startswith(("float", "bfloat")):
        base = base - 1
    if dtype == "float8_e8m0fnu":
        base = base + 1
    return np.resize(base, int(np.prod(shape))).reshape(shape).astype(getattr(ml_dtypes, dtype))


def data_model(elem: int, opset: int) -> onnx.ModelProto:
    """x (2, 3) and an initializer w (2, 3) of ``elem``: reshape, transpose (the data ops
    every opset with the type takes it in; Concat has no float8 or int4 yet)."""
    dtype = TYPES[elem]
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Transpose", ["r"], ["y"], perm=[1, 0]),
             helper.make_node("Reshape", ["w", "shape"], ["z"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", elem, [2, 3])],
        [helper.make_tensor_value_info("y", elem, [2, 3]),
         helper.make_tensor_value_info("z", elem, [3, 2])],
        [onnx.numpy_helper.from_array(values(dtype, (2, 3)), "w"),
         onnx.numpy_helper.from_array(np.array([3, 2], np.int64), "shape")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_the_table_covers_every_onnx_type_but_strings_and_complex():
    lacking = {k for k in TP.DataType.values() if k not in ONNX_TO_DTYPE}
    assert lacking == {TP.UNDEFINED, TP.STRING, TP.COMPLEX64, TP.COMPLEX128}
    assert all(DTYPE_TO_ONNX[v] == k for k, v in ONNX_TO_DTYPE.items())
    with pytest.raises(ValueError, match="where: ONNX element type COMPLEX64 has no irpass"):
        dtype_of(TP.COMPLEX64, "where")


@pytest.mark.parametrize("elem", sorted(TYPES), ids=lambda e: TP.DataType.Name(e))
def test_inputs_and_initializers_of_each_type_import_and_evaluate(elem):
    model = data_model(elem, 25)
    dtype = TYPES[elem]
    x = values(dtype, (2, 3))
    mod = from_onnx(model)
    got = irpass.evaluate(mod, x=x)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype == np.dtype(getattr(ml_dtypes, dtype))
        np.testing.assert_array_equal(g.astype(np.float32), w.astype(np.float32))


@pytest.mark.parametrize("elem", sorted(TYPES), ids=lambda e: TP.DataType.Name(e))
def test_export_writes_each_type_from_its_opset_and_refuses_it_before(elem):
    dtype = TYPES[elem]
    mod = from_onnx(data_model(elem, 25))
    need = DTYPE_MIN_OPSET[dtype]
    if need <= MAX_OPSET:
        model = to_onnx(mod, opset=MAX_OPSET)
        onnx.checker.check_model(model, full_check=True)
        x = values(dtype, (2, 3))
        back = irpass.evaluate(from_onnx(model), x=x)
        want = ReferenceEvaluator(model).run(None, {"x": x})
        before = irpass.evaluate(mod, x=x)
        for b, w, e in zip(back, want, before, strict=True):
            np.testing.assert_array_equal(b.astype(np.float32), w.astype(np.float32))
            np.testing.assert_array_equal(b.astype(np.float32), e.astype(np.float32))
    older = need - 1 if need <= MAX_OPSET else MAX_OPSET
    with pytest.raises(OnnxExportError, match=rf"{TP.DataType.Name(elem)} \({dtype}\) needs "):
        to_onnx(IRModule.from_expr(Function([v := var("x", shape=(2,), dtype="float32")],
                                            op.cast(v, dtype))), opset=older)


@pytest.mark.parametrize("elem", sorted(TYPES), ids=lambda e: TP.DataType.Name(e))
@pytest.mark.parametrize("where", ["initializer 'w'", "graph input 0 'x'"])
def test_a_type_the_models_opset_lacks_is_refused_at_import_naming_where(elem, where):
    # no op of an older opset takes the type, and no export could write it at that opset
    need = DTYPE_MIN_OPSET[TYPES[elem]]
    model = data_model(elem, need - 1)
    # the other value (and what it flows to) of a type every opset has
    if where.startswith("initializer"):
        model.graph.input[0].type.tensor_type.elem_type = TP.FLOAT
        model.graph.output[0].type.tensor_type.elem_type = TP.FLOAT
    else:
        model.graph.initializer[0].CopyFrom(
            onnx.numpy_helper.from_array(np.zeros((2, 3), np.float32), "w"))
        model.graph.output[1].type.tensor_type.elem_type = TP.FLOAT
    with pytest.raises(OnnxImportError, match=rf"{where}: ONNX element type "
                       rf"{TP.DataType.Name(elem)} is not in the model's opset {need - 1} "
                       rf"\(ONNX has it from opset {need}\)"):
        from_onnx(model)


def test_a_type_irpass_lacks_is_refused_naming_where():
    model = make_model([helper.make_node("Identity", ["x"], ["y"])], {}, {"y": TP.FLOAT}, 13)
    model.graph.input.append(helper.make_tensor_value_info("s", TP.STRING, [2]))
    model.graph.node.append(helper.make_node("Identity", ["s"], ["t"], name="strings"))
    with pytest.raises(OnnxImportError, match="graph input .*'s'.*STRING has no irpass dtype"):
        from_onnx(model)


def test_reinterpret_between_integers_exports_as_cast_else_is_a_clean_error():
    mod = IRModule.from_expr(Function([v := var("x", shape=(2,), dtype="float32")],
                                      op.reinterpret(v, "int32")))
    with pytest.raises(OnnxExportError, match="BitCast, which needs opset >= 26"):
        to_onnx(mod, opset=21)
    for src, dst in (("int8", "uint8"), ("uint32", "int32"), ("bool", "uint8")):
        mod = IRModule.from_expr(Function([v := var("x", shape=(4,), dtype=src)],
                                          op.reinterpret(v, dst)))
        model = to_onnx(mod, opset=9)
        onnx.checker.check_model(model, full_check=True)
        x = np.array([0, 1, 200, 255], np.uint8).astype(src)
        if src == "uint32":
            x = np.array([0, 1, 2**31, 2**32 - 1], np.uint32)
        np.testing.assert_array_equal(run_onnxruntime(model, {"x": x})[0],
                                      irpass.evaluate(mod, x=x))


@pytest.mark.parametrize("dst", ["float8_e4m3fn", "float8_e5m2"])
def test_exported_float8_cast_does_not_saturate(dst):
    # the core's cast converts as ml_dtypes does; ONNX's saturates unless told not to
    mod = IRModule.from_expr(Function([v := var("x", shape=(4,), dtype="float32")],
                                      op.cast(v, dst)))
    model = to_onnx(mod, opset=21)
    x = np.array([1e6, -1e6, np.inf, 3.0], np.float32)
    want = irpass.evaluate(mod, x=x).astype(np.float32)
    got = ReferenceEvaluator(model).run(None, {"x": x})[0].astype(np.float32)
    np.testing.assert_array_equal(got, want)
