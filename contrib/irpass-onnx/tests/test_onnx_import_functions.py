"""Model-local functions (``model.functions``) are inlined at import: nested calls, attribute
references, default attribute values, calls inside subgraphs; checked against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from irpass_onnx import OnnxImportError, from_onnx
from onnx import AttributeProto, TensorProto, helper
from onnx_cases import check, ops_in, rand

F, B = TensorProto.FLOAT, TensorProto.BOOL
node = helper.make_node
OPSETS = [helper.make_opsetid("", 18), helper.make_opsetid("local", 1)]


def vi(name, elem=F, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def ref(name: str, attr_type: int, refers_to: str) -> AttributeProto:
    """Attribute ``name`` of a node in a function body, taking the function's attribute
    ``refers_to``."""
    a = AttributeProto()
    a.name, a.type, a.ref_attr_name = name, attr_type, refers_to
    return a


def functions() -> list[onnx.FunctionProto]:
    # Scale(x; alpha=1.5) = x * alpha
    alpha = node("Constant", [], ["a"])
    alpha.attribute.append(ref("value_float", AttributeProto.FLOAT, "alpha"))
    scale = helper.make_function("local", "Scale", ["x"], ["y"],
                                 [alpha, node("Mul", ["x", "a"], ["y"])], OPSETS,
                                 attribute_protos=[helper.make_attribute("alpha", 1.5)])
    # ScaleAct(x; beta) = LeakyRelu(Scale(x; alpha=beta), alpha=beta / ...) -- nested, by ref
    inner = node("Scale", ["x"], ["s"], domain="local")
    inner.attribute.append(ref("alpha", AttributeProto.FLOAT, "beta"))
    act = node("LeakyRelu", ["s"], ["y"])
    act.attribute.append(ref("alpha", AttributeProto.FLOAT, "slope"))
    scale_act = helper.make_function("local", "ScaleAct", ["x"], ["y"], [inner, act], OPSETS,
                                     attributes=["beta", "slope"])
    return [scale, scale_act]


def model_with_functions(nodes, inputs, outputs) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(g, opset_imports=OPSETS, functions=functions())


def test_nested_functions_with_attribute_references_and_defaults_are_inlined():
    nodes = [node("ScaleAct", ["x"], ["p"], domain="local", beta=2.0, slope=0.1),
             node("ScaleAct", ["x"], ["q"], domain="local", beta=-3.0, slope=0.5),
             node("Scale", ["x"], ["r"], domain="local"),  # the default alpha
             node("Sum", ["p", "q", "r"], ["y"])]
    m = model_with_functions(nodes, [vi("x", F, [2, 5])], [vi("y")])
    mod = check(m, {"x": rand(2, 5, seed=1)})
    assert sorted(set(ops_in(mod))) == ["add", "multiply", "nn.leaky_relu"]


def test_functions_called_inside_subgraphs_are_inlined():
    then = helper.make_graph([node("ScaleAct", ["x"], ["t"], domain="local", beta=4.0,
                                   slope=0.2)], "then", [], [vi("t", F, [3])])
    other = helper.make_graph([node("Scale", ["x"], ["e"], domain="local", alpha=-1.0)],
                              "else", [], [vi("e", F, [3])])
    m = model_with_functions([node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
                             [vi("c", B, []), vi("x", F, [3])], [vi("y")])
    for c in (True, False):
        check(m, {"c": np.array(c), "x": rand(3, seed=2)})


def test_a_call_of_an_undefined_local_function_is_named():
    m = model_with_functions([node("Missing", ["x"], ["y"], domain="local")],
                             [vi("x", F, [3])], [vi("y")])
    with pytest.raises(OnnxImportError, match=r"local\.Missing \(1\)"):
        from_onnx(m)
