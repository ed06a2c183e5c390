"""The ONNX importer's graph handling: opsets, inputs, initializers, value_info, symbolic dims,
options, import-time folding, errors, and the converter registry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import irpass
import numpy as np
import onnx
import pytest
from irpass.ir import Call, Constant, Tuple, Var
from irpass.transform import PassContext
from irpass_onnx import OnnxImportError, from_onnx, load_onnx, load_weights
from irpass_onnx.frontend import registry
from irpass_onnx.testing import assert_outputs_close
from irpass_onnx.testing import run_onnxruntime as run_ort
from onnx import TensorProto, helper, numpy_helper
from onnx_cases import ops_in, rand

F = TensorProto.FLOAT


# -- helpers -----------------------------------------------------------------------------------


def vi(name: str, shape, elem: int = F) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def model_of(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[onnx.ValueInfoProto],
    outputs: Sequence[onnx.ValueInfoProto],
    inits: Mapping[str, np.ndarray] | None = None,
    opset: int = 13,
    ir_version: int | None = None,
    value_info: Sequence[onnx.ValueInfoProto] = (),
) -> onnx.ModelProto:
    graph = helper.make_graph(list(nodes), "g", list(inputs), list(outputs),
                              [numpy_helper.from_array(a, n) for n, a in (inits or {}).items()],
                              value_info=list(value_info))
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = ir_version or helper.find_min_ir_version_for(opsets)
    return model


def small_net(**kw) -> onnx.ModelProto:
    """conv -> relu -> gemm with float initializers and an int64 shape initializer."""
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Reshape", ["r", "shape"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "FW", "FB"], ["y"], transB=1, name="fc"),
    ]
    inits = {"W": rand(4, 3, 3, 3, seed=1), "B": rand(4, seed=2),
             "shape": np.array([1, -1], np.int64), "FW": rand(5, 64, seed=3),
             "FB": rand(5, seed=4)}
    return model_of(nodes, [vi("x", [1, 3, 4, 4])], [vi("y", [1, 5])], inits, **kw)


# -- module shape and attributes ---------------------------------------------------------------


def test_main_attrs_params_and_semantics():
    model = small_net()
    mod = from_onnx(model)
    main = mod["main"]
    assert [p.name_hint for p in main.params] == ["x"]
    assert main.params[0].type_annotation == irpass.TensorType((1, 3, 4, 4), "float32")
    assert main.attrs["onnx.opset"] == 13
    assert list(main.attrs["onnx.output_names"]) == ["y"]
    assert main.attrs["onnx.graph_name"] == "g"
    assert irpass.ir.well_formed(mod)
    irpass.ir.infer_type(mod)
    x = rand(1, 3, 4, 4, seed=9)
    assert_outputs_close([irpass.evaluate(mod, x)], run_ort(model, {"x": x}), rtol=1e-4,
                         atol=1e-5, scaled_atol=1e-5)


def test_several_outputs_are_a_tuple_and_outputs_may_be_inputs_or_constants():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["x"], ["n"])]
    model = model_of(nodes, [vi("x", [2, 3])], [vi("r", [2, 3]), vi("x", [2, 3]),
                                                 vi("k", [2])], {"k": rand(2)})
    mod = from_onnx(model)
    assert isinstance(mod["main"].body, Tuple)
    assert list(mod["main"].attrs["onnx.output_names"]) == ["r", "x", "k"]
    x = rand(2, 3, seed=1)
    got = irpass.evaluate(mod, x)
    for g, w in zip(got, run_ort(model, {"x": x}), strict=True):
        np.testing.assert_allclose(g, w)


def test_names_with_slashes_and_colons_are_kept():
    nodes = [helper.make_node("Relu", ["in/put:0"], ["out/put:0"])]
    mod = from_onnx(model_of(nodes, [vi("in/put:0", [2])], [vi("out/put:0", [2])]))
    assert mod["main"].params[0].name_hint == "in/put:0"
    irpass.parse(mod.astext())  # the text form reads back


def test_opset_from_ai_onnx_domain_and_missing_default_opset():
    model = small_net()
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("ai.onnx", 11))
    assert from_onnx(model)["main"].attrs["onnx.opset"] == 11
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(OnnxImportError, match="no opset of the default ONNX domain"):
        from_onnx(model)


def test_input_model_is_not_mutated():
    model = small_net()
    before = model.SerializeToString()
    from_onnx(model, weights="params", dim_values="*=1")
    from_onnx(model)
    assert model.SerializeToString() == before


def test_deep_graph_imports_iteratively():
    n = 3000
    nodes = [helper.make_node("Relu" if i % 2 else "Neg", [f"v{i}"], [f"v{i + 1}"])
             for i in range(n)]
    model = model_of(nodes, [vi("v0", [2])], [vi(f"v{n}", [2])])
    mod = from_onnx(model)
    x = np.array([1.0, -2.0], np.float32)
    np.testing.assert_allclose(irpass.evaluate(mod, x), run_ort(model, {"v0": x})[0])


# -- initializers and weights ------------------------------------------------------------------


def test_initializers_are_constants_by_default():
    mod = from_onnx(small_net())
    assert len(mod["main"].params) == 1
    assert "reshape" in ops_in(mod)


def test_weights_params_float_initializers_become_params_ints_stay():
    model = small_net()
    mod = from_onnx(model, weights="params")
    names = [p.name_hint for p in mod["main"].params]
    assert names == ["x", "W", "B", "FW", "FB"]  # graph inputs first, int64 'shape' stays
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer
               if t.data_type == F}
    x = rand(1, 3, 4, 4, seed=5)
    got = irpass.evaluate(mod, x, **weights)
    assert_outputs_close([got], run_ort(model, {"x": x}), rtol=1e-4, atol=1e-5,
                         scaled_atol=1e-5)


def test_load_weights_and_load_onnx_params(tmp_path):
    model = small_net()
    path = tmp_path / "net.onnx"
    onnx.save(model, str(path))
    weights = load_weights(path)
    assert sorted(weights) == ["B", "FB", "FW", "W"]
    mod = load_onnx(path, weights="params")
    x = rand(1, 3, 4, 4, seed=6)
    np.testing.assert_allclose(irpass.evaluate(mod, x, **weights),
                               irpass.evaluate(load_onnx(path), x), rtol=1e-6)


def test_options_come_from_the_pass_context():
    model = small_net()
    with PassContext(config={"onnx.weights": "params"}):
        assert len(from_onnx(model)["main"].params) == 5
        assert len(from_onnx(model, weights="constants")["main"].params) == 1  # keyword wins


def test_bad_option_is_an_import_error():
    with pytest.raises(OnnxImportError, match="onnx.weights"):
        from_onnx(small_net(), weights="bogus")


def test_graph_inputs_that_are_initializers_are_constants():
    # ONNX IR < 4 lists every initializer among the graph inputs.
    model = small_net(ir_version=3)
    for t in list(model.graph.initializer):
        model.graph.input.append(vi(t.name, list(t.dims), t.data_type))
    mod = from_onnx(model)
    assert [p.name_hint for p in mod["main"].params] == ["x"]
    x = rand(1, 3, 4, 4, seed=7)
    assert_outputs_close([irpass.evaluate(mod, x)], run_ort(model, {"x": x}), rtol=1e-4,
                         atol=1e-5, scaled_atol=1e-5)
    # with weights="params" they are params, once each
    names = [p.name_hint for p in from_onnx(model, weights="params")["main"].params]
    assert names == ["x", "W", "B", "FW", "FB"]


def test_constant_of_shape_materialize_option_both_ways():
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["w"],
                              value=helper.make_tensor("v", F, [1], [0.5])),
             helper.make_node("Add", ["x", "w"], ["y"])]
    model = model_of(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])],
                     {"shape": np.array([2, 3], np.int64)})
    x = rand(2, 3)
    on = from_onnx(model, materialize_constant_of_shape=True)
    off = from_onnx(model, materialize_constant_of_shape=False)
    assert "full" not in ops_in(on)
    assert "full" in ops_in(off)
    for mod in (on, off):
        np.testing.assert_allclose(irpass.evaluate(mod, x), x + 0.5)
    with PassContext(config={"onnx.materialize_constant_of_shape": False}):
        assert "full" in ops_in(from_onnx(model))


# -- symbolic dims and value_info --------------------------------------------------------------


def _symbolic_model(shape) -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    return model_of(nodes, [vi("x", shape)], [vi("y", shape)])


def test_symbolic_dims_become_size_variables():
    from irpass.ir.dims import SizeVar

    mod = from_onnx(_symbolic_model(["N", 3, "seq"]))
    assert mod["main"].params[0].type_annotation.shape == (SizeVar("N"), 3, SizeVar("seq"))
    for shape in [(1, 3, 1), (4, 3, 7)]:
        x = rand(*shape, seed=sum(shape)) - 0.5
        np.testing.assert_array_equal(irpass.evaluate(mod, x), np.maximum(x, 0))


def test_dim_names_become_identifiers_and_unknown_dims_fresh_variables():
    from irpass.ir.dims import SizeVar

    mod = from_onnx(_symbolic_model([None, "batch size", "2d", None]))
    shape = mod["main"].params[0].type_annotation.shape
    assert shape[1:3] == (SizeVar("batch_size"), SizeVar("d_2d"))
    assert isinstance(shape[0], SizeVar) and isinstance(shape[3], SizeVar)
    assert len(set(shape)) == 4  # two unknown dims are two variables


@pytest.mark.parametrize("dims, shape", [("N=2,seq=5", (2, 3, 5)), ("*=1", (1, 3, 1)),
                                         ({"N": 4, "*": 2}, (4, 3, 2))])
def test_symbolic_dims_fixed_by_option(dims, shape):
    mod = from_onnx(_symbolic_model(["N", 3, "seq"]), dim_values=dims)
    assert mod["main"].params[0].type_annotation.shape == shape


def test_dim_values_from_pass_context_and_unknown_dims():
    with PassContext(config={"onnx.dim_values": "*=7"}):
        mod = from_onnx(_symbolic_model([None, 2]))
    assert mod["main"].params[0].type_annotation.shape == (7, 2)


def test_partial_dim_values_leave_the_other_dims_symbolic():
    from irpass.ir.dims import SizeVar

    mod = from_onnx(_symbolic_model(["N", 3, "seq"]), dim_values="N=1")
    assert mod["main"].params[0].type_annotation.shape == (1, 3, SizeVar("seq"))


def test_dim_values_naming_a_dim_no_input_has_is_an_error():
    with pytest.raises(OnnxImportError, match=r"onnx.dim_values names dim\(s\) M that no graph "
                                              r"input has \(its symbolic dims: N, seq\)"):
        from_onnx(_symbolic_model(["N", 3, "seq"]), dim_values="M=1,N=2")


def test_value_info_mismatch_names_the_node():
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="act"),
             helper.make_node("Neg", ["r"], ["y"])]
    model = model_of(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])],
                     value_info=[vi("r", [3, 2])])
    with pytest.raises(OnnxImportError, match=r"node 0 'act' \(Relu\).*value_info"):
        from_onnx(model)
    # symbolic value_info is no constraint
    model = model_of(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])],
                     value_info=[vi("r", ["a", "b"])])
    from_onnx(model)


def test_graph_output_type_mismatch_is_an_error():
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    model = model_of(nodes, [vi("x", [2, 3])], [vi("y", [2, 4])])
    with pytest.raises(OnnxImportError, match="graph output 0 'y'"):
        from_onnx(model)


# -- import-time folding -----------------------------------------------------------------------


def test_shape_arithmetic_is_folded_float_math_is_not():
    # Reshape(x, Concat(Gather(Shape(x), 0), [-1])): the shape becomes a constant
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["flat"]),
        helper.make_node("Mul", ["w", "w"], ["w2"]),  # float over constants: stays
        helper.make_node("Add", ["flat", "w2"], ["y"]),
    ]
    inits = {"zero": np.array(0, np.int64), "axes": np.array([0], np.int64),
             "minus1": np.array([-1], np.int64), "w": rand(12, seed=1)}
    model = model_of(nodes, [vi("x", [2, 3, 4])], [vi("y", [2, 12])], inits)
    mod = from_onnx(model)
    assert sorted(ops_in(mod)) == ["add", "multiply", "reshape"]
    x = rand(2, 3, 4, seed=2)
    np.testing.assert_allclose(irpass.evaluate(mod, x), run_ort(model, {"x": x})[0],
                               rtol=1e-6)


def test_integer_math_over_constants_is_folded():
    nodes = [helper.make_node("Add", ["a", "b"], ["c"]),
             helper.make_node("Mul", ["c", "b"], ["d"]),
             helper.make_node("Cast", ["d"], ["y"], to=F)]
    model = model_of(nodes, [], [vi("y", [3])],
                     {"a": np.arange(3, dtype=np.int64), "b": np.full(3, 2, np.int64)})
    mod = from_onnx(model)
    body = mod["main"].body
    assert isinstance(body, Call) and body.op.name == "cast"  # float result: not folded
    assert isinstance(body.args[0], Constant)
    np.testing.assert_array_equal(body.args[0].data, [4, 6, 8])


# -- errors ------------------------------------------------------------------------------------


def test_unsupported_ops_are_listed_once_with_counts():
    # ops irpass leaves out on purpose (irpass_onnx.support.LEFT_OUT) and a foreign domain
    nodes = [
        helper.make_node("Bernoulli", ["x"], ["a"]),
        helper.make_node("Relu", ["x"], ["b"]),
        helper.make_node("Bernoulli", ["b"], ["c"]),
        helper.make_node("Multinomial", ["x"], ["d"]),
        helper.make_node("FusedConv", ["x"], ["e"], domain="com.microsoft"),
        helper.make_node("RandomUniformLike", ["x"], ["f"]),
    ]
    model = model_of(nodes, [vi("x", [2])], [vi("f", [2])])
    with pytest.raises(OnnxImportError) as err:
        from_onnx(model)
    msg = str(err.value)
    for part in ("Bernoulli (2)", "Multinomial (1)", "com.microsoft.FusedConv (1)",
                 "RandomUniformLike (1)", "4 unsupported"):
        assert part in msg, msg
    assert "Relu" not in msg


def test_op_newer_than_the_opset_is_unsupported():
    nodes = [helper.make_node("Gelu", ["x"], ["y"])]  # Gelu is opset 20
    model = model_of(nodes, [vi("x", [2])], [vi("y", [2])], opset=17)
    with pytest.raises(OnnxImportError, match=r"Gelu \(1\)"):
        from_onnx(model)


def test_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.onnx"
    model = model_of([helper.make_node("TopK", ["x"], ["y"])], [vi("x", [2])], [vi("y", [2])])
    onnx.save(model, str(path))
    with pytest.raises(OnnxImportError, match=f"^{path}: .*TopK"):
        load_onnx(path)
    with pytest.raises(OnnxImportError, match="no such file"):
        load_onnx(tmp_path / "missing.onnx")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff\x00 not a model")
    with pytest.raises(OnnxImportError, match="garbage.onnx"):
        load_onnx(garbage)


def test_irpass_load_uses_the_importer(tmp_path):
    path = tmp_path / "net.onnx"
    onnx.save(small_net(), str(path))
    mod = irpass.load(str(path))
    assert mod["main"].attrs["onnx.opset"] == 13


def test_undefined_input_names_the_node():
    nodes = [helper.make_node("Relu", ["later"], ["y"], name="first"),
             helper.make_node("Neg", ["x"], ["later"])]
    model = model_of(nodes, [vi("x", [2])], [vi("y", [2])])
    with pytest.raises(OnnxImportError, match=r"node 0 'first' \(Relu\): input 0 'later'"):
        from_onnx(model)


def test_type_error_names_the_node():
    nodes = [helper.make_node("Add", ["x", "z"], ["y"], name="plus")]
    model = model_of(nodes, [vi("x", [2, 3]), vi("z", [4])], [vi("y", [2, 3])])
    with pytest.raises(OnnxImportError, match=r"node 0 'plus' \(Add\)"):
        from_onnx(model)


def test_missing_required_attribute_names_the_node_and_attribute():
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], name="pool")]
    model = model_of(nodes, [vi("x", [1, 1, 4, 4])], [vi("y", None)], opset=11)
    with pytest.raises(OnnxImportError, match=r"node 0 'pool' \(MaxPool\).*'kernel_shape'"):
        from_onnx(model)


def test_unsupported_input_dtype_names_the_input():
    nodes = [helper.make_node("Identity", ["s"], ["y"])]
    model = model_of(nodes, [vi("s", [2], TensorProto.STRING)],
                     [vi("y", [2], TensorProto.STRING)])
    with pytest.raises(OnnxImportError, match="graph input 0 's'.*STRING"):
        from_onnx(model)


def test_non_static_shape_input_names_the_node():
    nodes = [helper.make_node("Reshape", ["x", "s"], ["y"], name="r")]
    model = model_of(nodes, [vi("x", [6]), vi("s", [2], TensorProto.INT64)], [vi("y", None)])
    with pytest.raises(OnnxImportError, match=r"node 0 'r' \(Reshape\).*'s'"):
        from_onnx(model)


def test_from_onnx_needs_a_model_proto():
    with pytest.raises(TypeError, match="ModelProto"):
        from_onnx(b"bytes")  # type: ignore[arg-type]


# -- the registry ------------------------------------------------------------------------------


def test_registry_picks_the_highest_since_not_above_the_opset():
    def v1(ctx):
        return ctx.input(0)

    def v7(ctx):
        return ctx.input(0)

    registry.converter("TestOnlyOp", since=1)(v1)
    registry.converter("TestOnlyOp", since=7)(v7)
    try:
        assert registry.lookup("TestOnlyOp", 6) is v1
        assert registry.lookup("TestOnlyOp", 7) is v7
        assert registry.lookup("TestOnlyOp", 20) is v7
        assert "TestOnlyOp" in registry.supported_op_types(1)
        with pytest.raises(ValueError, match="registered twice"):
            registry.converter("TestOnlyOp", since=7)(v1)
    finally:
        registry._TABLE.pop("TestOnlyOp", None)
    assert registry.lookup("TestOnlyOp", 7) is None


def test_params_are_vars_with_static_types():
    mod = from_onnx(small_net(), weights="params")
    for p in mod["main"].params:
        assert isinstance(p, Var) and isinstance(p.type_annotation, irpass.TensorType)


def test_value_assigned_twice_names_the_node():
    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"],
                                                                      name="again")]
    model = model_of(nodes, [vi("x", [2])], [vi("y", [2])])
    with pytest.raises(OnnxImportError, match=r"node 1 'again' \(Neg\).*already defined"):
        from_onnx(model)


def test_undefined_output_element_type_is_no_constraint():
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    model = model_of(nodes, [vi("x", [2])], [vi("y", None, TensorProto.UNDEFINED)])
    assert from_onnx(model)["main"].body.op.name == "nn.relu"


def test_load_weights_of_a_model_proto():
    weights = load_weights(small_net())
    assert sorted(weights) == ["B", "FB", "FW", "W"] and weights["W"].flags.writeable
