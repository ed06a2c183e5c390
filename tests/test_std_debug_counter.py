"""The debug counter in the std passes (issue 22, "Bisect to the rewrite"): every std pass
that rewrites asks ``ctx.debug_counter(site)`` before each rewrite, so that the config
option ``debug_counter = {pass: N}`` makes it do its first N rewrites only.

For each pass, on example networks and small hand-built modules where it makes several
rewrites: with ``-1`` the count is the number of rewrites (counted here independently:
ops in the input, or by hand); with cap 0 the output is the input (or the pass's no-op
result); for every cap k (a sample for big counts) the output is well formed, well typed
and computes what the input computes; consecutive caps give different outputs (each
counted rewrite does something); ``ctx.debug_site(pass)`` names the rewrite let through
last.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import irpass
import numpy as np
import pytest
from irpass import Function, GlobalVar, IRModule, const, op, var
from irpass.evaluator import evaluate
from irpass.ir import (
    Call,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    assert_structural_equal,
    infer_type,
    post_order_visit,
    structural_hash,
    well_formed,
)
from irpass.testing import assert_outputs_close, models, random_inputs
from irpass.transform import Pass, PassContext

F32 = "float32"


# -- helpers -----------------------------------------------------------------------------------


def run(
    make: Callable[[], Pass], mod: IRModule, name: str, limit: int, config: dict | None = None
) -> tuple[IRModule, int, str | None]:
    """``make()`` on ``mod`` with the counter of ``name`` at ``limit``: (output, rewrites
    asked about, site of the last one let through)."""
    cfg = {"debug_counter": {name: limit}, "testing.immutable_module": True, **(config or {})}
    with PassContext(opt_level=3, config=cfg) as ctx:
        out = make()(mod)
    return out, ctx.debug_counts.get(name, 0), ctx.debug_site(name)


def nodes(mod: IRModule) -> list[Any]:
    """The distinct nodes of every function of ``mod``."""
    seen: list[Any] = []
    for _, func in mod.items():
        post_order_visit(func, seen.append)
    return seen


def op_count(mod: IRModule, *names: str) -> int:
    """How many calls of the ops ``names`` ``mod`` holds (distinct nodes)."""
    counts = Counter(
        n.op.name for n in nodes(mod) if type(n) is Call and isinstance(n.op, Op)
    )
    return sum(counts[name] for name in names)


def kind_count(mod: IRModule, kind: type) -> int:
    return sum(type(n) is kind for n in nodes(mod))


def fingerprint(mod: IRModule) -> tuple[int, int]:
    """Structure and sharing: CSE changes only the latter (structural equality ignores it)."""
    return structural_hash(mod), len(nodes(mod))


def assert_same_meaning(out: IRModule, mod: IRModule, expected: list[Any], what: str) -> None:
    report = well_formed(out)
    assert report, f"{what}: ill-formed:\n{report}"
    infer_type(out)  # raises on an ill-typed module
    for seed, want in enumerate(expected):
        got = evaluate(out, **random_inputs(mod, seed))
        assert_outputs_close(got, want, rtol=1e-4, atol=1e-5, what=f"{what}, seed {seed}")


def caps(count: int) -> list[int]:
    """Every cap for small counts, else the ends and the middle (with their successors)."""
    if count <= 8:
        return list(range(count + 1))
    mid = count // 2
    return sorted({0, 1, 2, mid, mid + 1, count - 1, count})


# -- hand-built modules ------------------------------------------------------------------------


def c(*shape: int, start: float = 1.0, positive: bool = False) -> Any:
    rng = np.random.default_rng(int(start * 10) + sum(shape))
    data = rng.uniform(0.5, 1.5, size=shape) if positive else rng.normal(size=shape)
    return const(data.astype(F32))


def fold_chain(n: int = 6) -> IRModule:
    """n steps ``x = multiply(x, add(a_i, b_i))``: n folds of ``add``."""
    x = var("x", shape=(2, 2))
    y: Any = x
    for i in range(n):
        y = op.multiply(y, op.add(c(2, 2, start=i), c(2, 2, start=i + 0.5)))
    return IRModule.from_expr(Function([x], y))


def fold_rules() -> IRModule:
    """One rewrite of every FoldConstant rule but shape values: 5 in all (by hand).

    ``let %v = add(c, c)``: fold add, substitute %v; ``(c, %x).0``: project;
    ``if (greater(c, c))``: fold greater, select the branch.
    """
    x = var("x", shape=(2,))
    v = Var("v")
    picked = TupleGetItem(Tuple([c(2, start=3), x]), 0)
    cond = op.greater(const(np.float32(2.0)), const(np.float32(1.0)))
    body = irpass.ir.If(cond, op.multiply(x, v), op.subtract(x, v))
    return IRModule.from_expr(
        Function([x], Let(v, op.add(c(2), c(2, start=2)), op.add(body, picked)))
    )


def cse_chain(n: int = 5) -> IRModule:
    """n steps ``x = add(exp(x), exp(x))`` with two exp nodes: n merges."""
    x = var("x", shape=(4, 4))
    y: Any = x
    for _ in range(n):
        y = op.add(op.exp(y), op.exp(y))
    return IRModule.from_expr(Function([x], y))


def cse_rules() -> IRModule:
    """A let var merge, a constant, a tuple and a projection: 6 merges (by hand).

    ``let %a = tanh(x); let %b = tanh(x)``: merge tanh, merge %b into %a;
    ``multiply(x, 2.0)`` twice with two constants: merge the constant, merge multiply;
    ``(x, m).0`` twice: merge the tuple, merge the projection.
    """
    x = var("x", shape=(3,))
    a, b = Var("a"), Var("b")
    two = np.float32(2.0)
    m1, m2 = op.multiply(x, const(two)), op.multiply(x, const(two))
    p1, p2 = TupleGetItem(Tuple([x, m1]), 1), TupleGetItem(Tuple([x, m2]), 1)
    body = op.add(op.add(a, b), op.subtract(p1, p2))
    return IRModule.from_expr(Function([x], Let(a, op.tanh(x), Let(b, op.tanh(x), body))))


def dce_module(n: int = 4) -> IRModule:
    """n dead lets ``let %d = tanh(x)`` around the dataflow, a dead let chain (2 removals)
    and a projection of a tuple literal (1): n + 3 removals."""
    x = var("x", shape=(2, 2))
    y: Any = x
    for i in range(n):
        y = Let(Var(f"d{i}"), op.tanh(y), op.nn.relu(op.add(y, y)))
    a, b = Var("a"), Var("b")
    y = Let(a, op.exp(y), Let(b, op.sigmoid(a), op.negative(y)))
    y = TupleGetItem(Tuple([y, op.exp(x)]), 0)
    return IRModule.from_expr(Function([x], y))


def forward_scales() -> IRModule:
    """Three multiplies the forward direction folds (one per weighted op after it)."""
    data = var("data", shape=(1, 3, 6, 6))
    y = op.nn.relu(op.multiply(data, c(3, 1, 1, positive=True)))
    y = op.nn.conv2d(y, c(4, 3, 3, 3), padding=(1, 1), channels=4, kernel_size=(3, 3))
    y = op.multiply(y, c(4, 1, 1, start=2, positive=True))
    y = op.nn.conv2d(y, c(4, 4, 1, 1), channels=4, kernel_size=(1, 1))
    y = op.reshape(y, newshape=(1, 144))
    y = op.nn.dense(op.multiply(y, c(144, start=3)), c(5, 144), units=5)
    return IRModule.from_expr(Function([data], y))


def layout_module() -> IRModule:
    """ConvertLayout to NHWC: 2 convs altered, relu/add/relu carried, the input's own
    back-to-back layout_transforms composed: 6 rewrites (by hand); reshape is not
    layout-agnostic, so the value goes back to NCHW before it."""
    data = var("data", shape=(1, 3, 6, 6))
    y = op.layout_transform(op.layout_transform(data, "NCHW", "NHWC"), "NHWC", "NCHW")
    y = op.nn.conv2d(y, c(4, 3, 3, 3), padding=(1, 1), channels=4, kernel_size=(3, 3))
    y = op.nn.relu(y)
    y = op.nn.conv2d(y, c(4, 4, 1, 1, start=2), channels=4, kernel_size=(1, 1))
    y = op.nn.relu(op.add(y, c(4, 1, 1, start=3)))
    return IRModule.from_expr(Function([data], op.reshape(y, newshape=(1, 144))))


def fuse_chain() -> IRModule:
    """Five elementwise ops in a chain: 4 fusions make one group."""
    x = var("x", shape=(2, 3))
    y = op.sigmoid(op.tanh(op.negative(op.exp(op.add(x, x)))))
    return IRModule.from_expr(Function([x], y))


def parallel_dense() -> IRModule:
    """Two inputs read by three dense calls each: 2 groups combined."""
    x, y = var("x", shape=(2, 8)), var("y", shape=(2, 8))
    outs = [op.nn.dense(v, c(4 + i, 8, start=i + (v is y)), units=4 + i) for v in (x, y)
            for i in range(3)]
    return IRModule.from_expr(Function([x, y], Tuple(outs)))


T = irpass.ir.TensorType((2, 3), F32)


def inline_module() -> IRModule:
    """@f (Inline) called 3 times, @g (Inline) never: 3 calls inlined, 2 functions removed."""
    x, a, b = Var("x", T), Var("a", T), Var("b", T)
    f = GlobalVar("f")
    f_fn = Function([a], op.add(op.exp(a), a), T, attrs={"Inline": 1})
    g_fn = Function([b], op.tanh(b), T, attrs={"Inline": 1})
    main = Function([x], op.multiply(Call(f, [Call(f, [x])]), Call(f, [op.negative(x)])))
    return IRModule({"main": main, "f": f_fn, "g": g_fn})


def closures() -> IRModule:
    """Two let-bound closures only ever called (the second calls the first): 2 lifted."""
    x, y, z = Var("x", T), Var("y", T), Var("z", T)
    f, h = Var("f"), Var("h")
    body = op.add(Call(h, [x]), Call(f, [x]))
    h_fn = Function([z], op.multiply(Call(f, [z]), z))
    return IRModule.from_expr(
        Function([x], Let(f, Function([y], op.add(y, x)), Let(h, h_fn, body)))
    )


def unused_functions() -> IRModule:
    """@main and three functions it never reaches (@a calls @b): 3 removals."""
    x, p, q, r = Var("x", T), Var("p", T), Var("q", T), Var("r", T)
    b = GlobalVar("b")
    return IRModule({
        "main": Function([x], op.exp(x)),
        "a": Function([p], Call(b, [p])),
        "b": Function([q], op.tanh(q)),
        "c": Function([r], op.negative(r)),
    })


def resnet() -> IRModule:
    return models.resnet(image_size=16, channels=8)


def resnet_lowered() -> IRModule:
    """ResNet with its batch norms lowered: a multiply by a constant scale after each conv."""
    with PassContext(opt_level=3):
        return irpass.transform.SimplifyInference()(infer_type(resnet()))


def resnet_anf() -> IRModule:
    return irpass.transform.ToANormalForm()(resnet())


# -- the cases ---------------------------------------------------------------------------------


@dataclass
class Case:
    """One pass on one module: ``rewrites`` counts its rewrites independently of the pass,
    ``first`` is the site of its first rewrite, ``noop`` its output with no rewrite (by
    default the input)."""

    id: str
    name: str
    make: Callable[[], Pass]
    module: Callable[[], IRModule]
    rewrites: Callable[[IRModule], int]
    first: str
    config: dict = field(default_factory=dict)
    noop: Callable[[IRModule], IRModule] | None = None


_NHWC = {"nn.conv2d": ["NHWC", "default"]}
_ALTER = {"std.AlterOpLayout.desired_layouts": "nn.conv2d=NHWC,default"}


def _wrapped_alone(mod: IRModule) -> IRModule:
    with PassContext(opt_level=3):
        return irpass.transform.FuseOps(fuse_opt_level=0)(mod)


CASES = [
    Case("fold-chain", "FoldConstant", irpass.transform.FoldConstant, fold_chain,
         lambda m: op_count(m, "add"), "fold add"),
    Case("fold-rules", "FoldConstant", irpass.transform.FoldConstant, fold_rules,
         lambda m: 5, "fold add"),
    Case("cse-chain", "EliminateCommonSubexpr", irpass.transform.EliminateCommonSubexpr,
         cse_chain, lambda m: op_count(m, "exp") // 2, "merge exp"),
    Case("cse-rules", "EliminateCommonSubexpr", irpass.transform.EliminateCommonSubexpr,
         cse_rules, lambda m: 6, "merge tanh"),
    Case("dce", "DeadCodeElimination", irpass.transform.DeadCodeElimination, dce_module,
         lambda m: kind_count(m, Let) + 1, "reduce a projection of a tuple"),
    Case("backward-resnet", "BackwardFoldScaleAxis", irpass.transform.BackwardFoldScaleAxis,
         resnet_lowered, lambda m: op_count(resnet(), "nn.batch_norm"),
         "fold the scale of a multiply backward"),
    Case("forward", "ForwardFoldScaleAxis", irpass.transform.ForwardFoldScaleAxis,
         forward_scales, lambda m: op_count(m, "multiply"),
         "fold the scale of a multiply forward"),
    Case("simplify-inference-resnet", "SimplifyInference", irpass.transform.SimplifyInference,
         resnet, lambda m: op_count(m, "nn.batch_norm", "nn.dropout"), "lower nn.batch_norm"),
    Case("simplify-inference-layer-norm", "SimplifyInference",
         irpass.transform.SimplifyInference, models.transformer_encoder,
         lambda m: op_count(m, "nn.layer_norm"), "decompose nn.layer_norm",
         config={"std.SimplifyInference.decompose_layer_norm": True}),
    Case("convert-layout", "ConvertLayout", lambda: irpass.transform.ConvertLayout(_NHWC),
         layout_module, lambda m: 6, "compose layout_transforms"),
    Case("alter-op-layout", "AlterOpLayout", irpass.transform.AlterOpLayout, layout_module,
         lambda m: 6, "compose layout_transforms", config=_ALTER),
    Case("fuse-chain", "FuseOps", irpass.transform.FuseOps, fuse_chain,
         lambda m: op_count(m, "add", "exp", "negative", "tanh", "sigmoid") - 1,
         "fuse add into the group of exp", noop=_wrapped_alone),
    Case("combine-parallel-dense", "CombineParallelDense",
         irpass.transform.CombineParallelDense, parallel_dense,
         lambda m: op_count(m, "nn.dense") // 3, "combine 3 parallel nn.dense calls"),
    Case("combine-transformer", "CombineParallelDense", irpass.transform.CombineParallelDense,
         models.transformer_encoder, lambda m: 1, "combine 3 parallel nn.dense calls"),
    Case("inline", "Inline", irpass.transform.Inline, inline_module, lambda m: 3 + 2,
         "inline @f"),
    Case("lambda-lift", "LambdaLift", irpass.transform.LambdaLift, closures,
         lambda m: kind_count(m, Function) - 1, "lift the closure %f"),
    Case("remove-unused", "RemoveUnusedFunctions", irpass.transform.RemoveUnusedFunctions,
         unused_functions, lambda m: len(m.get_global_vars()) - 1, "remove @c"),
    Case("graph-normal-form", "ToGraphNormalForm", irpass.transform.ToGraphNormalForm,
         resnet_anf, lambda m: kind_count(m, Let), "substitute %t"),
]

_MODULES: dict[str, IRModule] = {}
_EXPECTED: dict[str, list[Any]] = {}


def module(case: Case) -> IRModule:
    """The case's module, typed as the passes' required InferType leaves it (built once)."""
    if case.id not in _MODULES:
        _MODULES[case.id] = infer_type(case.module())
    return _MODULES[case.id]


def expected_outputs(case: Case) -> list[Any]:
    if case.id not in _EXPECTED:
        mod = module(case)
        _EXPECTED[case.id] = [evaluate(mod, **random_inputs(mod, seed)) for seed in (0, 1)]
    return _EXPECTED[case.id]


def counted(case: Case) -> int:
    """The rewrites the pass asks about with a count and no cap (it does make some)."""
    _, count, _ = run(case.make, module(case), case.name, -1, case.config)
    assert count >= 1, f"{case.id}: {case.name} never asked the debug counter"
    return count


# -- the tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_count_is_the_number_of_rewrites(case: Case) -> None:
    mod = module(case)
    full, count, site = run(case.make, mod, case.name, -1, case.config)
    assert count == case.rewrites(mod)
    assert site is None  # -1 counts without a cap: no rewrite is the last one let through
    # counting alone changes nothing: the output is the pass's own
    with PassContext(opt_level=3, config=case.config):
        plain = case.make()(mod)
    assert_structural_equal(full, plain)
    assert fingerprint(full) == fingerprint(plain)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_cap_zero_leaves_the_module_as_it_was(case: Case) -> None:
    mod = module(case)
    counted(case)  # the pass does rewrite this module
    out, _, site = run(case.make, mod, case.name, 0, case.config)
    assert_structural_equal(out, case.noop(mod) if case.noop else mod)
    assert site is None


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_cap_gives_a_valid_module_with_the_same_meaning(case: Case) -> None:
    mod = module(case)
    count = counted(case)
    expected = expected_outputs(case)
    prints: dict[int, tuple[int, int]] = {}
    for k in caps(count):
        out, asked, _ = run(case.make, mod, case.name, k, case.config)
        assert asked >= k, f"cap {k}: only {asked} rewrite(s) asked about"
        assert_same_meaning(out, mod, expected, f"{case.name} capped at {k}")
        prints[k] = fingerprint(out)
        if k - 1 in prints:  # each rewrite let through does something
            assert prints[k] != prints[k - 1], f"{case.name}: caps {k - 1} and {k} agree"
    # the same cap, the same rewrites: the order is fixed
    k = count // 2
    assert fingerprint(run(case.make, mod, case.name, k, case.config)[0]) == prints[k]
    assert prints[count] == fingerprint(run(case.make, mod, case.name, -1, case.config)[0])


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_site_names_the_rewrite(case: Case) -> None:
    mod = module(case)
    _, _, first = run(case.make, mod, case.name, 1, case.config)
    assert first == case.first
    count = counted(case)
    _, _, last = run(case.make, mod, case.name, count, case.config)
    assert last is not None and ".py:" not in last  # a name, not the caller's file:line


def test_only_the_passes_named_are_counted() -> None:
    """A counter on one pass leaves the others alone (and counts nothing for them)."""
    mod = infer_type(fold_chain())
    cfg = {"debug_counter": {"EliminateCommonSubexpr": 0, "FoldConstant": -1}}
    with PassContext(opt_level=3, config=cfg) as ctx:
        out = irpass.transform.FoldConstant()(mod)
    assert op_count(out, "add") == 0
    assert ctx.debug_counts == {"FoldConstant": op_count(mod, "add")}


def test_fold_scale_axis_counts_under_its_two_passes() -> None:
    """FoldScaleAxis is a Sequential: its rewrites are counted under the names of the
    passes that make them, BackwardFoldScaleAxis and ForwardFoldScaleAxis."""
    mod = resnet_lowered()
    names = {"BackwardFoldScaleAxis": 2, "ForwardFoldScaleAxis": -1}
    with PassContext(opt_level=3, config={"debug_counter": names}) as ctx:
        out = irpass.transform.FoldScaleAxis()(mod)
    counts = ctx.debug_counts
    assert counts["BackwardFoldScaleAxis"] == op_count(resnet(), "nn.batch_norm")
    # backward removed two multiplies; forward removes some of those it refused
    assert counts["ForwardFoldScaleAxis"] >= 1
    assert op_count(out, "multiply") == op_count(mod, "multiply") - 2 - counts[
        "ForwardFoldScaleAxis"
    ]
    expected = [evaluate(mod, **random_inputs(mod, 0))]
    assert_same_meaning(out, mod, expected, "FoldScaleAxis capped")


def test_fold_constant_starting_again_on_a_typed_copy_replays_the_counter() -> None:
    """The first shape_of of a non-constant makes FoldConstant infer types; when that
    returns a copy (a closure got its ret_type) the walk starts again on the copy. The
    rewrites asked about before must not be asked about (counted) a second time."""
    x, y = var("x", shape=(2, 3)), var("y", shape=(2, 3))
    closure = Function([y], op.add(y, op.add(c(2, 3), c(2, 3, start=2))))  # no ret_type
    size = op.cast(op.take(op.shape_of(x), const(np.int32(0))), F32)
    # the last argument is walked first: its folds come before the shape_of
    tail = op.add(Call(closure, [x]), op.add(c(2, 3, start=3), c(2, 3, start=4)))
    func = Function([x], op.add(op.multiply(x, size), tail))
    assert infer_type(func).body is not func.body  # the premise: a copy, not just a ret_type
    mod = IRModule.from_expr(func)
    expected = [evaluate(mod, **random_inputs(mod, 0))]
    # the two adds of constants, shape_of, take of its result, cast of that
    _, count, _ = run(irpass.transform.FoldConstant, mod, "FoldConstant", -1)
    assert count == 5
    for k in range(count + 1):
        out, asked, _ = run(irpass.transform.FoldConstant, mod, "FoldConstant", k)
        assert asked == count if k == count else asked > k
        assert_same_meaning(out, mod, expected, f"FoldConstant capped at {k}")
        assert op_count(out, "add", "shape_of", "take", "cast") == 8 - k  # one op each
