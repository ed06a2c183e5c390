"""CombineParallelDense (plugins/irpass_std/combine_parallel.py): parallel dense/matmul
calls on one input become one call and a split, with the followers every branch shares
folded in. Meaning is checked by evaluating before and after on random inputs with a
tolerance (the combined product may sum in another order); structure by counting calls.
Then the cases that must stay as they are, the pipeline position, and -O3 on two ONNX
transformers against onnxruntime."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import irpass
import irpass_onnx
import numpy as np
import onnx
import pytest
from irpass import op
from irpass.errors import PassError
from irpass.ir import (
    Call,
    Function,
    IRModule,
    Op,
    Tuple,
    const,
    infer_type,
    post_order_visit,
    structural_equal,
    structural_hash,
    var,
    well_formed,
)
from irpass.ir.dims import SizeVar
from irpass.testing import check_semantics, models
from irpass.transform import PassContext, Sequential, default_pipeline, get_pass, pipeline_plan
from irpass_onnx.testing import SCALED_ATOL, check_outputs_close, run_onnxruntime

ROOT = Path(__file__).resolve().parents[1]
ONNX_MODELS = ROOT / "contrib" / "irpass-onnx" / "models"
RTOL, ATOL = 1e-5, 1e-6


def rand(*shape: int, seed: int = 0, dtype: str = "float32") -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def c(*shape: int, seed: int = 0) -> irpass.ir.Constant:
    return const(rand(*shape, seed=seed))


def combine(mod: IRModule, config: dict | None = None, **kwargs) -> IRModule:
    """``mod`` through InferType and the pass, as a pipeline runs it."""
    with PassContext(opt_level=3, config=config or {}):
        return Sequential([get_pass("InferType"), get_pass("CombineParallelDense", **kwargs)])(mod)


def counts(mod: IRModule) -> Counter:
    """Op calls by name, nested functions included."""
    found: Counter = Counter()
    for _, func in mod.items():
        post_order_visit(func, lambda n: found.update([n.op.name])
                         if type(n) is Call and type(n.op) is Op else None)
    return found


def flat(value) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [a for v in value for a in flat(v)]
    return [np.asarray(value)]


def assert_same_meaning(before: IRModule, after: IRModule, *inputs: np.ndarray) -> None:
    want = flat(irpass.evaluate(before, *inputs))
    got = flat(irpass.evaluate(after, *inputs))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def module(x, outs) -> IRModule:
    return IRModule.from_expr(Function([x], Tuple(outs) if len(outs) > 1 else outs[0]))


# -- what is combined ----------------------------------------------------------------------


def test_three_dense_with_biases_become_one_dense_one_add_and_a_split():
    x = var("x", shape=(4, 16))
    outs = [op.add(op.nn.dense(x, c(8, 16, seed=i), units=8), c(8, seed=10 + i))
            for i in range(3)]
    mod = module(x, outs)
    out = combine(mod)
    n = counts(out)
    assert n["nn.dense"] == 1 and n["add"] == 1 and n["split"] == 1 and n["concatenate"] == 2
    split = out["main"].body.fields[0].tuple_value
    assert split.attrs["indices_or_sections"] == (8, 16) and split.attrs["axis"] == 1
    dense = split.args[0].args[0]
    assert dense.op.name == "nn.dense" and dense.attrs["units"] == 24
    assert well_formed(out)
    assert_same_meaning(mod, out, rand(4, 16, seed=7))


def test_matmul_qkv_on_a_3d_input():
    """A transformer's q/k/v: matmul by (K, N) weights, a bias add, then the head reshape."""
    x = var("x", shape=(2, 5, 16))
    heads = []
    for i in range(3):
        y = op.add(op.matmul(x, c(16, 16, seed=i)), c(16, seed=20 + i))
        heads.append(op.transpose(op.reshape(y, (2, 5, 2, 8)), (0, 2, 1, 3)))
    scores = op.matmul(heads[0], op.transpose(heads[1], (0, 1, 3, 2)))
    mod = module(x, [op.matmul(op.nn.softmax(scores), heads[2])])
    out = combine(mod)
    n = counts(out)
    assert n["matmul"] == 3 and n["add"] == 1 and n["split"] == 1  # 1 projection + 2 attention
    weight = next(a for a in _calls(out, "matmul") if a.args[1].op.name == "concatenate").args[1]
    assert weight.attrs["axis"] == 1
    assert_same_meaning(mod, out, rand(2, 5, 16, seed=3))


def test_symbolic_batch_and_sequence():
    n, seq = SizeVar("n"), SizeVar("seq")
    x = var("x", shape=(n, seq, 16))
    outs = [op.add(op.matmul(x, c(16, 8, seed=i)), c(1, 1, 8, seed=30 + i)) for i in range(3)]
    mod = module(x, outs)
    out = combine(mod)
    n_calls = counts(out)
    assert n_calls["matmul"] == 1 and n_calls["add"] == 1 and n_calls["split"] == 1
    assert infer_type(out)["main"].checked_type == infer_type(mod)["main"].checked_type
    for shape in [(1, 1, 16), (2, 7, 16), (3, 4, 16)]:
        assert_same_meaning(mod, out, rand(*shape, seed=shape[1]))


def test_branches_of_different_widths():
    x = var("x", shape=(3, 16))
    widths = (8, 4, 12, 1)
    outs = [op.nn.relu(op.nn.bias_add(op.nn.dense(x, c(w, 16, seed=i)), c(w, seed=40 + i)))
            for i, w in enumerate(widths)]
    mod = module(x, outs)
    out = combine(mod)
    n = counts(out)
    assert n["nn.dense"] == 1 and n["nn.bias_add"] == 1 and n["nn.relu"] == 1
    split = out["main"].body.fields[0].tuple_value
    assert split.attrs["indices_or_sections"] == (8, 12, 24)
    assert_same_meaning(mod, out, rand(3, 16, seed=4))


def test_followers_are_folded_level_by_level_while_every_branch_has_the_same():
    x = var("x", shape=(4, 16))
    outs = []
    for i in range(3):
        y = op.multiply(c(8, seed=60 + i), op.add(op.nn.dense(x, c(8, 16, seed=i)), c(1, 8)))
        y = op.tanh(y)
        outs.append(op.exp(y) if i == 0 else op.sigmoid(y))  # the third level differs
    mod = module(x, outs)
    out = combine(mod)
    n = counts(out)
    assert n["nn.dense"] == 1 and n["add"] == 1 and n["multiply"] == 1 and n["tanh"] == 1
    assert n["exp"] == 1 and n["sigmoid"] == 2
    assert_same_meaning(mod, out, rand(4, 16, seed=5))


def test_an_equal_scalar_follower_is_kept_as_it_is():
    x = var("x", shape=(4, 16))
    outs = [op.multiply(op.nn.dense(x, c(8, 16, seed=i)), const(np.float32(0.5)))
            for i in range(3)]
    mod = module(x, outs)
    out = combine(mod)
    assert counts(out)["multiply"] == 1 and counts(out)["concatenate"] == 1
    assert_same_meaning(mod, out, rand(4, 16, seed=6))


def test_option_and_argument_set_the_minimum():
    x = var("x", shape=(4, 16))
    mod = module(x, [op.nn.dense(x, c(8, 16, seed=i)) for i in range(2)])
    typed = infer_type(mod)
    with PassContext(opt_level=3):
        assert get_pass("CombineParallelDense")(typed) is typed  # default 3: two stay
    out = combine(mod, {"std.CombineParallelDense.min_num_branches": 2})
    assert counts(out)["nn.dense"] == 1
    assert_same_meaning(mod, out, rand(4, 16, seed=8))
    assert counts(combine(mod, min_num_branches=2))["nn.dense"] == 1
    with pytest.raises(ValueError, match="min_num_branches"):
        get_pass("CombineParallelDense", min_num_branches=1)
    with pytest.raises(PassError, match="min_num_branches"):
        combine(mod, {"std.CombineParallelDense.min_num_branches": 1})


def test_groups_on_chained_inputs_and_a_branch_with_several_uses_after_its_follower():
    """The first group's first end feeds the second group: both combine, in one rebuild."""
    x = var("x", shape=(4, 16))
    first = [op.add(op.nn.dense(x, c(16, 16, seed=i)), c(16, seed=70 + i)) for i in range(3)]
    h = first[0]  # used three times: it ends the branch, nothing past it is folded
    second = [op.nn.dense(h, c(4, 16, seed=80 + i)) for i in range(3)]
    mod = module(x, [*second, first[1], first[2]])
    out = combine(mod)
    assert counts(out)["nn.dense"] == 2 and counts(out)["split"] == 2
    assert well_formed(out)
    assert_same_meaning(mod, out, rand(4, 16, seed=9))


def test_a_program_in_a_normal_form_is_left_as_it_is():
    """ToANormalForm binds the weights to vars: they are no constants any more (the pass
    works on graph form, as TVM's does)."""
    x = var("x", shape=(4, 16))
    outs = [op.add(op.nn.dense(x, c(8, 16, seed=i)), c(8, seed=90 + i)) for i in range(3)]
    with PassContext(opt_level=3):
        anf = get_pass("ToANormalForm")(module(x, outs))
    _unchanged(anf)


def test_let_bound_branches_in_graph_form_are_combined():
    """Calls bound by lets (a let's value is their one use) are replaced in place."""
    x = var("x", shape=(4, 16))
    lets = [var(f"t{i}") for i in range(3)]
    body = Tuple([op.tanh(t) for t in lets])
    for i, t in reversed(list(enumerate(lets))):
        body = irpass.ir.Let(t, op.nn.dense(x, c(8, 16, seed=i)), body)
    mod = IRModule.from_expr(Function([x], body))
    out = combine(mod)
    assert counts(out)["nn.dense"] == 1 and well_formed(out)
    assert_same_meaning(mod, out, rand(4, 16, seed=10))


def test_calls_in_nested_functions_are_combined_there():
    x = var("x", shape=(4, 16))
    y = var("y", shape=(4, 16))
    inner = Function([y], Tuple([op.nn.dense(y, c(8, 16, seed=i)) for i in range(3)]))
    mod = IRModule.from_expr(Function([x], Call(inner, [op.tanh(x)])))
    out = combine(mod)
    assert counts(out)["nn.dense"] == 1
    assert_same_meaning(mod, out, rand(4, 16, seed=11))


def test_order_is_deterministic_and_the_input_is_left_alone():
    x = var("x", shape=(4, 16))
    outs = [op.add(op.nn.dense(x, c(8, 16, seed=i)), c(8, seed=i)) for i in range(4)]
    mod = infer_type(module(x, outs))
    before = structural_hash(mod)
    with PassContext(opt_level=3, config={"testing.immutable_module": True}):
        one = get_pass("CombineParallelDense")(mod)
        two = get_pass("CombineParallelDense")(mod)
    assert structural_hash(mod) == before
    assert structural_equal(one, two) and str(one) == str(two)
    # the weights are concatenated in program order
    (dense,) = _calls(one, "nn.dense")
    weights = dense.args[1].args[0].fields
    assert [w.data[0, 0] for w in weights] == [o.args[0].args[1].data[0, 0] for o in outs]


def test_a_deep_program_needs_no_recursion():
    x = var("x", shape=(2, 4))
    h = x
    for i in range(5000):
        ys = [op.nn.dense(h, const(np.eye(4, dtype="float32") * 0.5)) for _ in range(3)]
        h = op.tanh(op.add(op.add(ys[0], ys[1]), ys[2])) if i % 2 else op.tanh(ys[0] + ys[1])
    mod = module(x, [h])
    out = combine(mod)
    assert counts(out)["nn.dense"] == 2500 * 2 + 2500
    assert_same_meaning(mod, out, rand(2, 4, seed=12))


# -- what is left alone --------------------------------------------------------------------


def _unchanged(mod: IRModule, **kwargs) -> IRModule:
    typed = infer_type(mod)
    with PassContext(opt_level=3):
        out = get_pass("CombineParallelDense", **kwargs)(typed)
    assert out is typed
    return out


def test_two_branches_stay_with_the_default_minimum():
    x = var("x", shape=(4, 16))
    _unchanged(module(x, [op.nn.dense(x, c(8, 16, seed=i)) for i in range(2)]))


def test_weights_that_are_not_constants_stay():
    x = var("x", shape=(4, 16))
    ws = [var(f"w{i}", shape=(8, 16)) for i in range(3)]
    mod = IRModule.from_expr(Function([x, *ws], Tuple([op.nn.dense(x, w) for w in ws])))
    _unchanged(mod)


def test_different_out_dtypes_or_data_inputs_stay_apart():
    x = var("x", shape=(4, 16), dtype="int8")
    w = [const(np.ones((8, 16), "int8") * i) for i in range(3)]
    outs = [op.nn.dense(x, w[0], out_dtype="int32"), op.nn.dense(x, w[1], out_dtype="int32"),
            op.nn.dense(x, w[2], out_dtype="int16")]
    _unchanged(module(x, outs))
    a, b = var("a", shape=(4, 16)), var("b", shape=(4, 16))
    mixed = [op.nn.dense(a, c(8, 16)), op.nn.dense(b, c(8, 16)), op.nn.dense(a, c(8, 16))]
    _unchanged(IRModule.from_expr(Function([a, b], Tuple(mixed))))


def test_dense_and_matmul_on_one_input_are_not_mixed():
    x = var("x", shape=(4, 16))
    outs = [op.nn.dense(x, c(8, 16)), op.matmul(x, c(16, 8)), op.nn.dense(x, c(8, 16, seed=1))]
    _unchanged(module(x, outs))


def test_a_branch_used_twice_is_left_out():
    x = var("x", shape=(4, 16))
    ys = [op.nn.dense(x, c(8, 16, seed=i)) for i in range(3)]
    _unchanged(module(x, [op.add(ys[0], ys[0]), ys[1], ys[2]]))
    # with a fourth branch the other three still combine, the one used twice stays
    ys.append(op.nn.dense(x, c(8, 16, seed=3)))
    mod = module(x, [op.tanh(ys[0]), op.exp(ys[0]), ys[1], ys[2], ys[3]])
    out = combine(mod)
    assert counts(out)["nn.dense"] == 2 and counts(out)["split"] == 1
    assert_same_meaning(mod, out, rand(4, 16, seed=13))


def test_a_bias_on_another_axis_is_not_folded():
    x = var("x", shape=(4, 16))
    outs = [op.add(op.nn.dense(x, c(8, 16, seed=i)), c(4, 1, seed=i)) for i in range(3)]
    mod = module(x, outs)
    out = combine(mod)
    n = counts(out)
    assert n["nn.dense"] == 1 and n["add"] == 3  # combined, the adds stay after the split
    assert_same_meaning(mod, out, rand(4, 16, seed=14))
    # a constant that would broadcast the branch to a bigger shape stays too
    outs = [op.add(op.nn.dense(x, c(8, 16, seed=i)), c(2, 4, 8, seed=i)) for i in range(3)]
    mod = module(x, outs)
    out = combine(mod)
    assert counts(out)["add"] == 3
    assert_same_meaning(mod, out, rand(4, 16, seed=15))


def test_weights_of_other_ranks_and_constant_data_first_stay():
    x = var("x", shape=(2, 4, 16))
    _unchanged(module(x, [op.matmul(x, c(2, 16, 8, seed=i)) for i in range(3)]))
    y = var("y", shape=(16, 4))
    _unchanged(module(y, [op.matmul(c(8, 16, seed=i), y) for i in range(3)]))


def test_primitive_functions_are_left_alone():
    y = var("y", shape=(4, 16))
    inner = Function([y], Tuple([op.nn.dense(y, c(8, 16, seed=i)) for i in range(3)]),
                     attrs={"Primitive": 1})
    x = var("x", shape=(4, 16))
    _unchanged(IRModule.from_expr(Function([x], Call(inner, [x]))))


def test_branches_of_an_if_are_not_combined_with_each_other():
    x = var("x", shape=(4, 16))
    cond = var("p", shape=(), dtype="bool")
    then = op.add(op.nn.dense(x, c(8, 16, seed=0)), op.nn.dense(x, c(8, 16, seed=1)))
    other = op.nn.dense(x, c(8, 16, seed=2))
    mod = IRModule.from_expr(Function([cond, x], irpass.ir.If(cond, then, other)))
    _unchanged(mod)  # three on x, but two in one branch and one in the other
    out = combine(mod, min_num_branches=2)
    assert counts(out)["nn.dense"] == 2 and counts(out)["split"] == 1
    for p in (True, False):
        assert_same_meaning(mod, out, np.array(p), rand(4, 16, seed=17))


# -- the pipeline --------------------------------------------------------------------------


def test_pipeline_position_and_folded_weights():
    assert "CombineParallelDense" not in pipeline_plan(2).names
    names = list(pipeline_plan(3).names)
    at = names.index("CombineParallelDense")
    assert names[at - 1] == "FoldScaleAxis" and names[at + 1] == "FoldConstant"
    x = var("x", shape=(4, 16))
    outs = [op.add(op.nn.dense(x, c(8, 16, seed=i)), c(8, seed=i)) for i in range(3)]
    mod = module(x, outs)
    with PassContext(opt_level=3):
        out = default_pipeline(3)(mod)
    n = counts(out)
    assert n["nn.dense"] == 1 and n["concatenate"] == 0  # FoldConstant joined the weights
    assert_same_meaning(mod, out, rand(4, 16, seed=16))


def test_example_transformer_at_o3():
    mod = models.transformer_encoder()
    out = check_semantics(default_pipeline(3), mod, rtol=1e-4, atol=1e-5)
    assert counts(out)["nn.dense"] == 4  # q/k/v combined, output projection, feed-forward x2
    assert counts(out)["split"] == 1


def _calls(mod: IRModule, name: str) -> list[Call]:
    found: list[Call] = []
    post_order_visit(mod["main"], lambda n: found.append(n)
                     if type(n) is Call and type(n.op) is Op and n.op.name == name else None)
    return found


# -- -O3 on ONNX transformers against onnxruntime ------------------------------------------


def _inputs(path: Path) -> dict[str, np.ndarray]:
    model = onnx.load(path)
    if path.parent.name == "dynamic":
        entries = json.loads((path.parent / "models.json").read_text())["models"]
        (entry,) = [e for e in entries if e["file"] == path.name]
        rng = np.random.default_rng(0)
        out = {}
        for spec in entry["inputs"]:
            shape = [3, 7]  # batch 3, sequence 7: not the export's sizes
            if spec["kind"] == "ids":
                out[spec["name"]] = rng.integers(0, spec["high"], shape).astype(spec["dtype"])
            else:
                mask = np.ones(shape, spec["dtype"])
                mask[1, 5:] = 0
                out[spec["name"]] = mask
        return out
    rng = np.random.default_rng(0)
    return {i.name: rng.standard_normal(
        [d.dim_value for d in i.type.tensor_type.shape.dim]).astype("float32")
        for i in model.graph.input}


@pytest.mark.parametrize("path", [
    ONNX_MODELS / "hf_vit_sdpa.dynamo18.onnx",
    ONNX_MODELS / "dynamic" / "hf_bert_sdpa_mask.dynamo18.onnx",
], ids=lambda p: p.stem)
def test_o3_on_onnx_transformers(path):
    mod = irpass_onnx.load_onnx(path)
    exported = {}
    for disabled in ([], ["CombineParallelDense"]):
        with PassContext(opt_level=3, disabled_pass=disabled):
            exported[bool(disabled)] = irpass_onnx.to_onnx(default_pipeline(3)(mod))
    with_pass, without = exported[False], exported[True]
    kinds = Counter(n.op_type for n in with_pass.graph.node)
    kinds_without = Counter(n.op_type for n in without.graph.node)
    assert len(with_pass.graph.node) < len(without.graph.node)
    assert kinds["MatMul"] == kinds_without["MatMul"] - 4  # q/k/v of 2 layers: 6 -> 2
    assert kinds["Split"] == kinds_without["Split"] + 2
    inputs = _inputs(path)
    want = run_onnxruntime(onnx.load(path), inputs)
    got = run_onnxruntime(with_pass, inputs)
    assert not check_outputs_close(got, want, rtol=1e-3, scaled_atol=SCALED_ATOL)
