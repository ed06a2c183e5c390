"""The std passes together: TVM's pass-infrastructure example and the default
pipeline at -O3 on the example networks."""

from __future__ import annotations

from collections import Counter

import irpass
import numpy as np
import pytest
from irpass import op
from irpass.ir import (
    Call,
    Constant,
    Function,
    IRModule,
    Op,
    OpPattern,
    TensorType,
    Tuple,
    TupleGetItem,
    assert_structural_equal,
    const,
    post_order_visit,
    var,
)
from irpass.testing import check_semantics, models
from irpass.transform import PassContext, Sequential, default_pipeline, get_pass

F32 = TensorType((4, 4), "float32")


# -- the example of TVM's pass-infrastructure documentation ----------------------------


def _doc_example() -> tuple[IRModule, np.ndarray, object, object]:
    """``y = add(x, (c+c)*2); z = add(y, c); z1 = add(y, c); z2 = add(z, z1)``."""
    x = var("x", F32)
    data = np.random.default_rng(0).standard_normal((4, 4)).astype("float32")
    c = const(data)
    y = op.add(x, op.multiply(op.add(c, c), const(np.float32(2))))
    z = op.add(y, c)
    z1 = op.add(y, c)
    return IRModule.from_expr(Function([x], op.add(z, z1))), data, x, c


def _doc_pipeline() -> Sequential:
    return Sequential([get_pass(n) for n in (
        "InferType", "FoldConstant", "EliminateCommonSubexpr", "AlterOpLayout")])


def test_tvm_doc_example_at_opt_level_3_folds_and_merges():
    mod, data, x, c = _doc_example()
    with PassContext(opt_level=3):
        out = _doc_pipeline()(mod)
    folded = const((data + data) * np.float32(2))  # computed by numpy, not by the pass
    y = op.add(x, folded)
    z = op.add(y, c)
    assert_structural_equal(out["main"], Function([x], op.add(z, z), F32))


def test_tvm_doc_example_at_opt_level_2_skips_cse():
    mod, data, x, c = _doc_example()
    with PassContext(opt_level=2):
        out = _doc_pipeline()(mod)
    y = op.add(x, const((data + data) * np.float32(2)))
    assert_structural_equal(out["main"], Function([x], op.add(op.add(y, c), op.add(y, c)), F32))


def test_tvm_doc_example_with_folding_disabled_still_merges():
    mod, data, x, c = _doc_example()
    with PassContext(opt_level=3, disabled_pass=["FoldConstant"]):
        out = _doc_pipeline()(mod)
    y = op.add(x, op.multiply(op.add(c, c), const(np.float32(2))))
    z = op.add(y, c)
    assert_structural_equal(out["main"], Function([x], op.add(z, z), F32))
    check_semantics(_doc_pipeline(), mod)


# -- the default pipeline at -O3 --------------------------------------------------------


def _calls(mod: IRModule) -> list[Call]:
    """Every op call of the module, fused functions included, each node once."""
    found: list[Call] = []

    def visit(node: object) -> None:
        if type(node) is Call and type(node.op) is Op:
            found.append(node)

    for _gv, func in mod.items():
        post_order_visit(func, visit)
    return found


def _primitive_functions(mod: IRModule) -> list[Function]:
    found: list[Function] = []

    def visit(node: object) -> None:
        if type(node) is Function and node.attrs and node.attrs.get("Primitive"):
            found.append(node)

    for _gv, func in mod.items():
        post_order_visit(func, visit)
    return found


def _constant_valued(node: object) -> bool:
    if type(node) is Constant:
        return True
    if type(node) is Tuple:
        return all(_constant_valued(f) for f in node.fields)
    if type(node) is TupleGetItem:
        return _constant_valued(node.tuple_value)
    return False


_CREATION = {"zeros", "ones", "full", "zeros_like", "ones_like", "full_like"}


@pytest.fixture(scope="module")
def resnet_o3() -> tuple[IRModule, IRModule]:
    mod = models.resnet()
    with PassContext(opt_level=3):
        return mod, default_pipeline(3)(mod)


def test_o3_resnet_keeps_meaning():
    check_semantics(default_pipeline(3), models.resnet())


def test_o3_resnet_has_no_batch_norm_or_dropout(resnet_o3):
    before, after = resnet_o3
    names_before = Counter(c.op.name for c in _calls(before))
    assert names_before["nn.batch_norm"] > 0 and names_before["nn.dropout"] == 1
    names = Counter(c.op.name for c in _calls(after))
    assert names["nn.batch_norm"] == 0 and names["nn.dropout"] == 0


def test_o3_resnet_has_no_foldable_constant_subexpression(resnet_o3):
    _, after = resnet_o3
    foldable = [
        c.op.name for c in _calls(after)
        if c.args and not c.op.stateful and c.op.name not in _CREATION
        and all(_constant_valued(a) for a in c.args)
    ]
    assert foldable == []


def test_o3_resnet_has_no_duplicate_subexpression(resnet_o3):
    _, after = resnet_o3
    seen: dict[tuple, Call] = {}
    for c in _calls(after):
        key = (c.op, tuple(sorted(c.attrs.items(), key=lambda kv: kv[0])).__repr__(),
               tuple(map(id, c.args)))
        assert key not in seen, f"{c.op.name} computed twice on the same arguments"
        seen[key] = c


def test_o3_resnet_fuses_every_conv_with_the_elementwise_ops_after_it(resnet_o3):
    _, after = resnet_o3
    prims = _primitive_functions(after)
    inside = {id(c) for f in prims for c in _calls(IRModule({"f": f}))}
    convs = [c for c in _calls(after) if c.op.name == "nn.conv2d"]
    assert convs and all(id(c) in inside for c in convs), "a conv2d left outside a fused function"
    for f in prims:
        ops = [c.op for c in _calls(IRModule({"f": f}))]
        if any(o.name == "nn.conv2d" for o in ops):
            # the batch-norm shift (add) and the relu ride along with their conv
            assert any(o.pattern <= OpPattern.BROADCAST for o in ops), [o.name for o in ops]


def test_o3_resnet_folds_batch_norm_scales_into_the_conv_weights(resnet_o3):
    before, after = resnet_o3
    weights_before = [c.args[1].data for c in _calls(before) if c.op.name == "nn.conv2d"]
    calls_after = _calls(after)
    convs_after = [c for c in calls_after if c.op.name == "nn.conv2d"]
    assert len(convs_after) == len(weights_before)
    # no per-channel multiply is left on a conv output (inside its fused function)...
    assert not any(c.op.name == "multiply" and c.args[0] in convs_after for c in calls_after)
    # ...because every conv weight was scaled: none of the original weights is left
    kernels = _constants(after, ndim=4)
    assert len(kernels) == len(weights_before)
    assert not any(np.array_equal(k, w) for k in kernels for w in weights_before)


def _constants(mod: IRModule, ndim: int) -> list[np.ndarray]:
    found: list[np.ndarray] = []

    def visit(node: object) -> None:
        if type(node) is Constant and node.data.ndim == ndim:
            found.append(node.data)

    for _gv, func in mod.items():
        post_order_visit(func, visit)
    return found


@pytest.mark.parametrize("name", sorted(models.MODELS))
@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_default_pipeline_keeps_meaning_of_every_model(name, opt_level):
    check_semantics(default_pipeline(opt_level), models.MODELS[name](), opt_level=opt_level)


def test_without_std_the_default_pipeline_is_empty(manager):
    assert "std" not in [r.name for r in manager.records()]
    assert default_pipeline(3).passes == ()
    assert "FoldConstant" not in irpass.transform.list_passes()
