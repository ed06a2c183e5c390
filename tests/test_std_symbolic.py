"""The standard passes on small symbolic programs (issue 20), one test per rule: each pass
runs on a program with size variables, its result is checked for what the rule must do
(ops counted) and evaluated against the original at several sizes on random inputs."""

from collections import Counter

import irpass
import numpy as np
import pytest
from irpass import transform as T
from irpass.ir import Call, Constant, Let, Op, post_order_visit
from irpass.ir.dims import SizeVar
from irpass.transform import PassContext
from irpass_std.simplify_inference import DECOMPOSE_LAYER_NORM

RNG = np.random.default_rng(2020)


def parse(body: str) -> irpass.ir.IRModule:
    return irpass.parse(body)


def ops(mod) -> Counter:
    """Op calls by name (``let`` for let bindings, ``call`` for calls of functions)."""
    found: Counter = Counter()
    for _, func in mod.items():
        def note(node):
            if type(node) is Call:
                found[node.op.name if type(node.op) is Op else "call"] += 1
            elif type(node) is Let:
                found["let"] += 1
        post_order_visit(func, note)
    return found


def run(pass_, mod, opt_level=3, **config):
    """``pass_`` on ``mod`` in a Sequential (which runs the passes it requires first)."""
    with PassContext(opt_level=opt_level, config=config) as ctx:
        out = T.Sequential([pass_])(mod)
    return out, ctx


def inputs(mod, sizes: dict[str, int], seed: int = 0) -> list[np.ndarray]:
    """Random inputs for @main with each size variable set from ``sizes``."""
    rng = np.random.default_rng(seed)
    out = []
    for p in mod["main"].params:
        ty = p.type_annotation
        shape = tuple(irpass.ir.dims.evaluate(d, sizes) for d in ty.shape)
        if ty.dtype.startswith("float"):
            out.append(rng.standard_normal(shape).astype(ty.dtype))
        else:
            out.append(rng.integers(0, 5, size=shape).astype(ty.dtype))
    return out


def flat(value) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [a for v in value for a in flat(v)]
    return [np.asarray(value)]


def assert_same_results(before, after, sizes_list, rtol=1e-5):
    """``before`` and ``after`` compute the same values at every size of ``sizes_list``."""
    for seed, sizes in enumerate(sizes_list):
        args = inputs(before, sizes, seed)
        want = flat(irpass.evaluate(before, *args))
        got = flat(irpass.evaluate(after, *args))
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype, (sizes, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6)


SIZES_N = [{"n": 1}, {"n": 3}, {"n": 6}]
N = SizeVar("n")


# -- FoldConstant ------------------------------------------------------------------------


SHAPE_SCAFFOLDING = """
def @main(%x: Tensor[(n, 128), float32]) {
  %0 = shape_of(%x, dtype="int64");
  %1 = take(%0, const(int64, (1,), [1]), axis=0);
  %2 = take(%0, const(int64, (1,), [0]), axis=0);
  %3 = multiply(%2, 0i64);
  %4 = add(%2, 1i64);
  %5 = concatenate((%1, %4, %3));
  %6 = greater_equal(%2, 0i64);
  %7 = equal(%2, 1i64);
  %8 = strided_slice(%0, begin=[1], end=[2]);
  (%1, %3, %5, %6, %7, %8)
}
"""


def test_fold_constant_computes_shape_values_of_symbolic_tensors():
    mod = parse(SHAPE_SCAFFOLDING)
    out, ctx = run(T.FoldConstant(), mod)
    assert not ctx.diag.warnings
    fields = out["main"].body.fields
    # the static dim, n * 0, n >= 0 and the sliced static dim are constants now
    for i, want in ((0, [128]), (1, [0]), (3, [True]), (5, [128])):
        assert type(fields[i]) is Constant, (i, fields[i])
        np.testing.assert_array_equal(fields[i].data, want)
    # n + 1, the concatenation holding it and n == 1 depend on n: kept as calls
    for i in (2, 4):
        assert type(fields[i]) is Call
    # the symbolic values are one dims_tensor call each: shape_of is left unused
    assert fields[2].op.name == "dims_tensor"
    assert list(fields[2].attrs["dims"]) == [128, N + 1, 0]
    assert ops(out)["shape_of"] == 0
    assert_same_results(mod, out, SIZES_N)  # n = 1 makes n == 1 true


def test_fold_constant_goes_through_let_bound_shape_values():
    mod = parse("""
def @main(%x: Tensor[(n, 4, 6), float32]) {
  let %s = shape_of(%x, dtype="int32");
  let %c = strided_slice(%s, begin=[1], end=[3]);
  let %p = prod(%c, keepdims=True);
  let %n = take(%s, const(int32, (1,), [0]), axis=0);
  let %t = concatenate((%n, %p));
  %t
}
""")
    out, ctx = run(T.FoldConstant(), mod)
    assert not ctx.diag.warnings
    text = out.astext()
    assert "prod(" not in text and "strided_slice(" not in text
    assert 'dims_tensor(dims=[n, 24], dtype="int32")' in text
    assert_same_results(mod, out, SIZES_N)


def test_fold_constant_folds_an_if_on_a_decided_shape_comparison():
    mod = parse("""
def @main(%x: Tensor[(n, 4), float32]) {
  %0 = shape_of(%x, dtype="int64");
  %1 = take(%0, 1i64, axis=0);
  if (greater(%1, 3i64)) { negative(%x) } else { %x }
}
""")
    out, _ = run(T.FoldConstant(), mod)
    assert ops(out) == Counter({"negative": 1})
    assert_same_results(mod, out, SIZES_N)


def test_fold_constant_leaves_symbolic_results_alone_without_a_warning():
    mod = parse("""
def @main(%x: Tensor[(n, 3), float32]) {
  %0 = broadcast_to(const(float32, (1, 3), [1.0, 2.0, 3.0]), shape=[n, 3]);
  %1 = arange(start=0, stop=n, dtype="float32");
  %2 = expand_dims(%1, axis=1);
  %3 = add(%x, %0);
  multiply(%3, %2)
}
""")
    out, ctx = run(T.FoldConstant(), mod)
    assert not ctx.diag.warnings
    assert ops(out) == ops(mod)
    assert_same_results(mod, out, SIZES_N)


def test_fold_constant_keeps_a_float_shape_of_a_symbolic_tensor():
    mod = parse("""
def @main(%x: Tensor[(n, 2), float32]) {
  %0 = shape_of(%x, dtype="float32");
  %1 = take(%0, const(int64, (1,), [1]), axis=0);
  add(%1, 1f32)
}
""")
    out, ctx = run(T.FoldConstant(), mod)
    assert not ctx.diag.warnings
    assert ops(out)["shape_of"] == 1
    assert_same_results(mod, out, SIZES_N)


def test_fold_constant_still_folds_shape_of_a_static_tensor():
    mod = parse("""
def @main(%x: Tensor[(n, 2), float32], %y: Tensor[(5, 3), float32]) {
  %0 = shape_of(%y, dtype="int64");
  %1 = shape_of(%x, dtype="int64");
  (%0, %1)
}
""")
    out, _ = run(T.FoldConstant(), mod)
    first, second = out["main"].body.fields
    assert type(first) is Constant and first.data.tolist() == [5, 3]
    assert type(second) is Call
    assert_same_results(mod, out, SIZES_N)


# -- SimplifyExpr ------------------------------------------------------------------------


def test_simplify_expr_removes_reshapes_and_broadcasts_to_the_own_symbolic_shape():
    mod = parse("""
def @main(%x: Tensor[(n, 4), float32], %y: Tensor[(1, 4), float32]) {
  %0 = reshape(%x, newshape=[n, 4]);
  %1 = reshape(%0, newshape=[-1, 4]);
  %2 = broadcast_to(%1, shape=[n, 4]);
  %3 = broadcast_to(%y, shape=[n, 4]);
  %4 = reshape(%2, newshape=[n * 4]);
  %5 = reshape(%4, newshape=[n, 2, 2]);
  (add(%2, %3), %5)
}
""")
    out, _ = run(T.SimplifyExpr(), mod)
    # the no-op reshapes and broadcast go, the broadcast of %y stays, the two reshapes merge
    assert ops(out) == Counter({"add": 1, "broadcast_to": 1, "reshape": 1})
    (merged,) = [n for n in _calls(out) if n.op.name == "reshape"]
    assert merged.args[0] is out["main"].params[0]
    assert_same_results(mod, out, SIZES_N)


def test_simplify_expr_reshape_there_and_back_is_removed():
    mod = parse("""
def @main(%x: Tensor[(b, s, 8), float32]) {
  %0 = reshape(%x, newshape=[b * s, 8]);
  %1 = reshape(%0, newshape=[b, s, 2, 4]);
  %2 = reshape(%1, newshape=[b, s, 8]);
  negative(%2)
}
""")
    out, _ = run(T.SimplifyExpr(), mod)
    assert ops(out) == Counter({"negative": 1})
    assert_same_results(mod, out, [{"b": 1, "s": 3}, {"b": 2, "s": 5}])


def test_simplify_expr_transposes_and_affine_chains_on_symbolic_shapes():
    mod = parse("""
def @main(%x: Tensor[(n, 3, 4), float32]) {
  %0 = transpose(%x, axes=[1, 0, 2]);
  %1 = transpose(%0, axes=[1, 0, 2]);
  %2 = multiply(%1, const(float32, (4,), [1.0, 2.0, 3.0, 4.0]));
  %3 = multiply(%2, 2f32);
  %4 = add(%3, const(float32, (4,), [1.0, 1.0, 1.0, 1.0]));
  add(%4, 1f32)
}
""")
    out, _ = run(T.SimplifyExpr(), mod)
    assert ops(out) == Counter({"multiply": 1, "add": 1})
    assert_same_results(mod, out, SIZES_N)


# -- the other passes ------------------------------------------------------------------


def _calls(mod):
    found = []
    post_order_visit(mod["main"], lambda n: found.append(n) if type(n) is Call else None)
    return found


def test_cse_merges_equal_shape_computations():
    mod = parse("""
def @main(%x: Tensor[(n, 4), float32]) {
  %0 = shape_of(%x, dtype="int64");
  %1 = shape_of(%x, dtype="int64");
  %2 = take(%0, const(int64, (1,), [0]), axis=0);
  %3 = take(%1, const(int64, (1,), [0]), axis=0);
  %4 = reshape(%x, newshape=[n * 4]);
  %5 = reshape(%x, newshape=[n * 4]);
  (add(%2, %3), add(%4, %5))
}
""")
    out, _ = run(T.EliminateCommonSubexpr(), mod)
    assert ops(out) == Counter({"shape_of": 1, "take": 1, "reshape": 1, "add": 2})
    assert_same_results(mod, out, SIZES_N)


def test_dead_code_elimination_drops_unused_symbolic_bindings():
    mod = parse("""
def @main(%x: Tensor[(n, 4), float32]) {
  let %s = shape_of(%x, dtype="int64");
  let %r = reshape(%x, newshape=[n * 4]);
  let %y = negative(%x);
  %y
}
""")
    out, _ = run(T.DeadCodeElimination(), mod)
    assert ops(out) == Counter({"negative": 1, "let": 1})
    assert_same_results(mod, out, SIZES_N)


def test_fuse_ops_fuses_symbolic_chains():
    mod = parse("""
def @main(%x: Tensor[(n, 8), float32], %w: Tensor[(4, 8), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = add(%0, 1f32);
  %2 = nn.relu(%1);
  %3 = reshape(%2, newshape=[n * 4]);
  exp(%3)
}
""")
    out, _ = run(T.FuseOps(), mod)
    assert 1 <= ops(out)["call"] < 5
    assert_same_results(mod, out, SIZES_N)


def test_fold_scale_axis_folds_into_a_dense_of_a_symbolic_batch():
    mod = parse("""
def @main(%x: Tensor[(n, 3), float32]) {
  %0 = nn.dense(%x, const(float32, (2, 3), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
  multiply(%0, const(float32, (2,), [2.0, 0.5]))
}
""")
    out, _ = run(T.Sequential([T.FoldScaleAxis(), T.FoldConstant()]), mod)
    assert ops(out)["multiply"] == 0
    assert_same_results(mod, out, SIZES_N)


def test_convert_layout_converts_a_conv_of_a_symbolic_batch():
    weight = RNG.standard_normal((4, 3, 3, 3)).astype("float32")
    x = irpass.ir.var("x", irpass.ir.TensorType((irpass.ir.dims.SizeVar("n"), 3, 8, 8)))
    y = irpass.op.nn.relu(irpass.op.nn.conv2d(x, irpass.const(weight), padding=(1, 1),
                                              channels=4, kernel_size=(3, 3)))
    y = irpass.op.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2))
    mod = irpass.ir.IRModule.from_expr(irpass.ir.Function([x], y))
    out, _ = run(T.ConvertLayout({"nn.conv2d": ["NHWC", "default"]}), mod)
    found = ops(out)
    assert found["layout_transform"] >= 1
    assert "NHWC" in out.astext()
    assert_same_results(mod, out, SIZES_N)


def test_simplify_inference_lowers_norms_of_symbolic_shapes():
    mod = parse("""
def @main(%x: Tensor[(n, 4, 5, 5), float32], %y: Tensor[(b, s, 8), float32]) {
  %0 = nn.batch_norm(%x, const(float32, (4,), [1.0, 2.0, 0.5, 1.5]),
                     const(float32, (4,), [0.1, 0.2, 0.3, 0.4]),
                     const(float32, (4,), [0.0, 1.0, -1.0, 0.5]),
                     const(float32, (4,), [1.0, 2.0, 0.5, 4.0]));
  %1 = nn.layer_norm(%y, const(float32, (8,), [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0]),
                     const(float32, (8,), [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]));
  (%0.0, %1)
}
""")
    out, _ = run(T.SimplifyInference(), mod, **{DECOMPOSE_LAYER_NORM: True})
    assert ops(out)["nn.batch_norm"] == 0 and ops(out)["nn.layer_norm"] == 0
    sizes = [{"n": 1, "b": 2, "s": 3}, {"n": 3, "b": 1, "s": 5}]
    assert_same_results(mod, out, sizes)


def test_normal_forms_round_trip_a_symbolic_program():
    mod = parse("""
def @main(%x: Tensor[(n, 4), float32]) {
  %0 = shape_of(%x, dtype="int64");
  %1 = reshape(%x, newshape=[n * 2, 2]);
  %2 = negative(%1);
  (%2, %2, %0)
}
""")
    anf, _ = run(T.ToANormalForm(), mod)
    assert ops(anf)["let"] >= 3
    gnf, _ = run(T.ToGraphNormalForm(), anf)
    assert ops(gnf)["let"] == 0
    irpass.assert_structural_equal(irpass.ir.infer_type(gnf), irpass.ir.infer_type(mod))
    assert_same_results(mod, anf, SIZES_N)
    assert_same_results(mod, gnf, SIZES_N)


# -- Inline and LambdaLift ----------------------------------------------------------------


INLINE = """
def @flat(%y: Tensor[(k, 4), float32], "Inline"=1) -> Tensor[(k * 4,), float32] {
  %0 = reshape(%y, newshape=[k * 4]);
  %1 = ones(shape=[k * 4], dtype="float32");
  add(%0, %1)
}

def @main(%x: Tensor[(n, 4), float32], %z: Tensor[(m, 4), float32]) {
  (@flat(%x), @flat(%z))
}
"""


def test_inline_instantiates_the_size_variables_of_the_callee():
    mod = parse(INLINE)
    out, ctx = run(T.Inline(), mod)
    assert not ctx.diag.warnings
    assert "flat" not in [gv.name_hint for gv in out.get_global_vars()]
    text = out.astext()
    assert "newshape=[n * 4]" in text and "newshape=[m * 4]" in text and "k" not in text
    sizes = [{"n": 1, "m": 2}, {"n": 3, "m": 1}]
    assert_same_results(mod, out, sizes)


def test_inline_keeps_a_call_whose_run_time_check_it_would_lose():
    mod = parse("""
def @both(%a: Tensor[(k,), float32], %b: Tensor[(k,), float32], "Inline"=1) {
  add(%a, %b)
}

def @main(%x: Tensor[(n,), float32], %y: Tensor[(m,), float32]) {
  @both(%x, %y)
}
""")
    out, ctx = run(T.Inline(), mod)
    (warning,) = ctx.diag.warnings
    assert "@both" in warning.message
    assert ops(out)["call"] == 1
    x = np.ones(3, "float32")
    np.testing.assert_array_equal(irpass.evaluate(out, x, x), x + x)
    with pytest.raises(irpass.EvaluationError, match="k = 2"):
        irpass.evaluate(out, x, np.ones(2, "float32"))


def test_lambda_lift_lifts_a_closure_whose_params_bind_its_sizes():
    mod = parse("""
def @main(%x: Tensor[(n, 4), float32]) {
  let %f = fn (%y: Tensor[(k, 4), float32]) {
    reshape(%y, newshape=[k * 4])
  };
  %f(%x)
}
""")
    out, _ = run(T.LambdaLift(), mod)
    assert len(out.get_global_vars()) == 2
    assert_same_results(mod, out, SIZES_N)


def test_lambda_lift_keeps_a_closure_that_uses_a_size_bound_outside_it():
    mod = parse("""
def @main(%x: Tensor[(n, 4), float32]) {
  let %f = fn (%y: Tensor[(4,), float32]) {
    %0 = ones(shape=[n, 4], dtype="float32");
    add(%0, %y)
  };
  %f(const(float32, (4,), [1.0, 2.0, 3.0, 4.0]))
}
""")
    out, _ = run(T.LambdaLift(), mod)
    assert len(out.get_global_vars()) == 1
    assert_same_results(mod, out, SIZES_N)


def test_simplify_inference_lowers_a_batch_norm_whose_channel_dim_is_symbolic():
    # the statistics have 3 entries, the data's channel dim is c (3 at run time): the
    # lowered scale and shift take their length from the statistics
    mod = parse("""
def @main(%x: Tensor[(n, c), float32]) {
  %0 = nn.batch_norm(%x, const(float32, (3,), [1.0, 2.0, 0.5]),
                     const(float32, (3,), [0.1, 0.2, 0.3]),
                     const(float32, (3,), [0.0, 1.0, -1.0]),
                     const(float32, (3,), [1.0, 2.0, 0.5]));
  %0.0
}
""")
    out, _ = run(T.SimplifyInference(), mod)
    assert ops(out)["nn.batch_norm"] == 0
    assert_same_results(mod, out, [{"n": 1, "c": 3}, {"n": 4, "c": 3}])
