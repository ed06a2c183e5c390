"""Every std pass survives deep programs, ill-typed input, and leaves its input alone.

Cross-cutting robustness checks of the standard pass pack (issue 5):

(a) Deep programs: every std pass on a 30,000-step chain in the shape of
    workload W3 (an unused ``let d = tanh(x)`` per step around a dataflow
    chain), on one in the shape of W2 (two separate equal calls per step) and
    on the same W3 chain in A-normal form (a let chain 60,000 deep) finishes
    without ``RecursionError`` (the recursion limit is about 1,000) and
    computes the same output on a random input. The steps' arithmetic differs
    from the benchmark's W2/W3 (``tanh`` and small constants instead of
    ``exp`` and doubling) so values stay finite and the comparison means
    something.
(b) Ill-typed input: every pass given a module with ``add`` of a (2, 3) and a
    (4, 5) tensor in ``@main`` either raises an irpass error
    (:class:`irpass.errors.IRPassError`) whose message names the pass and
    the offending expression, or -- only a pass that does not need types --
    returns a result (possibly with a warning); either way the input module is
    unchanged (structural hash and the very same function objects). A pass
    that requires ``InferType`` must report the error. ``test_ill_typed_report``
    prints what each pass did (``pytest -s``).
(c) Every pass on every model under ``testing.immutable_module``: the pass
    infrastructure fails a pass that changed its input; we also compare hash
    and function identity ourselves.
(d) A pass called directly runs alone (as in TVM, only a Sequential runs its
    ``required`` passes): on an untyped model, a pass that requires
    ``InferType`` either works (it types what it needs itself) or fails with a
    ``PassError`` naming it and saying to run ``InferType`` or use a Sequential.

(a)-(c) run each pass as a pipeline runs it, inside a :class:`Sequential`
(:func:`run_in_sequential`), so its requirements run first.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from irpass import op
from irpass.errors import IRPassError, PassError, TypeInferenceError
from irpass.evaluator import evaluate
from irpass.instrument import pass_instrument
from irpass.ir import (
    Call,
    Expr,
    Function,
    GlobalVar,
    IRModule,
    Let,
    Tuple,
    Var,
    infer_type,
    structural_hash,
    var,
)
from irpass.ir.describe import describe
from irpass.ir.nodes import const
from irpass.testing import assert_outputs_close, models
from irpass.transform import Pass, PassContext, Sequential, get_pass, get_pass_entry, list_passes

NHWC = {"nn.conv2d": ["NHWC", "default"]}

#: Every std pass by registered name, with the arguments it is tested with, plus
#: variants with non-default arguments (test id -> (name, arguments)).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "InferType": ("InferType", {}),
    "FoldConstant": ("FoldConstant", {}),
    "DeadCodeElimination": ("DeadCodeElimination", {}),
    "EliminateCommonSubexpr": ("EliminateCommonSubexpr", {}),
    "SimplifyExpr": ("SimplifyExpr", {}),
    "SimplifyInference": ("SimplifyInference", {}),
    "BackwardFoldScaleAxis": ("BackwardFoldScaleAxis", {}),
    "ForwardFoldScaleAxis": ("ForwardFoldScaleAxis", {}),
    "FoldScaleAxis": ("FoldScaleAxis", {}),
    "CombineParallelDense": ("CombineParallelDense", {}),
    "CombineParallelDense_min_2": ("CombineParallelDense", {"min_num_branches": 2}),
    "FusePatterns": ("FusePatterns", {}),
    "Canonicalize": ("Canonicalize", {}),
    "AlterOpLayout": ("AlterOpLayout", {}),
    "ConvertLayout": ("ConvertLayout", {"desired_layouts": NHWC}),
    "FuseOps": ("FuseOps", {}),
    "FuseOps_fuse_opt_level_0": ("FuseOps", {"fuse_opt_level": 0}),
    "ToANormalForm": ("ToANormalForm", {}),
    "ToGraphNormalForm": ("ToGraphNormalForm", {}),
    "LambdaLift": ("LambdaLift", {}),
    "Inline": ("Inline", {}),
    "RemoveUnusedFunctions": ("RemoveUnusedFunctions", {}),
}

#: Cases that fail because of a bug in the pass (test id -> reason), marked
#: xfail(strict=True) so the suite stays green and the bug stays visible.
#: Keys: ("deep", variant, chain), ("ill_typed", variant, module), ("immutable", variant, model).
KNOWN_BUGS: dict[tuple[str, str, str], str] = {}


def make_pass(variant: str) -> Pass:
    """A fresh instance of the pass of test id ``variant``."""
    name, kwargs = VARIANTS[variant]
    return get_pass(name, **kwargs)


def run_in_sequential(p: Pass, mod: IRModule) -> IRModule:
    """``p`` on ``mod`` the way a pipeline runs it: its ``required`` passes first."""
    return Sequential([p], name="robustness")(mod)


def needs_types(p: Pass) -> bool:
    """True when ``p`` (or a pass inside a Sequential ``p``) requires InferType."""
    if "InferType" in p.info.required or p.info.name == "InferType":
        return True
    return isinstance(p, Sequential) and any(needs_types(q) for q in p.passes)


def _params(test: str, variants: list[str], items: list[str]) -> list[Any]:
    out = []
    for v in variants:
        for item in items:
            reason = KNOWN_BUGS.get((test, v, item))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(v, item, id=f"{v}-{item}", marks=marks))
    return out


def _snapshot(mod: IRModule) -> tuple[int, list[tuple[Any, Any]]]:
    return structural_hash(mod), list(mod.functions.items())


def _assert_unchanged(mod: IRModule, before: tuple[int, list[tuple[Any, Any]]], who: str) -> None:
    h, funcs = before
    assert structural_hash(mod) == h, f"{who} changed its input module"
    now = list(mod.functions.items())
    assert len(now) == len(funcs) and all(
        a[0] is b[0] and a[1] is b[1] for a, b in zip(now, funcs, strict=True)
    ), f"{who} replaced functions of its input module"


def test_every_std_pass_is_covered():
    std = {name for name in list_passes() if get_pass_entry(name).owner == "std"}
    tested = {name for name, _ in VARIANTS.values()}
    assert std == tested, f"untested: {sorted(std - tested)}; not std: {sorted(tested - std)}"


# --- (a) deep programs -------------------------------------------------------------

DEPTH = 30_000
SHAPE = (4, 4)


def _small_const(rng: np.random.Generator) -> Expr:
    return const(rng.normal(0.0, 0.1, size=SHAPE).astype(np.float32))


def w3_style(n: int, *, anf: bool = False) -> IRModule:
    """``let d_i = tanh(x_i)`` (never used) around ``x_{i+1} = tanh(add(x_i, c_i))``.

    With ``anf`` every ``x_{i+1}`` is let-bound too: a let chain ``2n`` deep.
    """
    rng = np.random.default_rng(3)
    x = var("x", shape=SHAPE)
    cur: Expr = x
    steps: list[tuple[Expr, Expr]] = []  # (unused value, next x)
    for _ in range(n):
        steps.append((op.tanh(cur), op.tanh(op.add(cur, _small_const(rng)))))
        cur = steps[-1][1]
    if not anf:
        body = cur
        for dead, _ in reversed(steps):
            body = Let(Var("d"), dead, body)
        return IRModule.from_expr(Function([x], body))
    # A-normal form: bind every step's values, innermost last.
    bindings: list[tuple[Var, Expr]] = []
    cur_var: Expr = x
    for _ in range(n):
        bindings.append((Var("d"), op.tanh(cur_var)))
        nxt = Var("x")
        bindings.append((nxt, op.tanh(op.add(cur_var, _small_const(rng)))))
        cur_var = nxt
    body = cur_var
    for v, value in reversed(bindings):
        body = Let(v, value, body)
    return IRModule.from_expr(Function([x], body))


def w2_style(n: int) -> IRModule:
    """Per step ``a = tanh(x)``, ``b = tanh(x)`` (equal but separate nodes) and
    ``x = multiply(add(a, b), 0.5)``."""
    x = var("x", shape=SHAPE)
    cur: Expr = x
    for _ in range(n):
        cur = op.multiply(op.add(op.tanh(cur), op.tanh(cur)), const(np.float32(0.5)))
    return IRModule.from_expr(Function([x], cur))


CHAINS: dict[str, Callable[[], IRModule]] = {
    "w3_let": lambda: w3_style(DEPTH),
    "w3_anf": lambda: w3_style(DEPTH // 2, anf=True),  # DEPTH lets deep
    "w2_dataflow": lambda: w2_style(DEPTH),
}


_DEEP_CACHE: dict[str, tuple[IRModule, Any, np.ndarray, Any]] = {}


def deep_chain(name: str) -> tuple[IRModule, Any, np.ndarray, Any]:
    """Chain ``name`` (built once), its snapshot, a random input and the output on it."""
    if name not in _DEEP_CACHE:
        mod = CHAINS[name]()
        arg = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
        _DEEP_CACHE[name] = (mod, _snapshot(mod), arg, evaluate(mod, arg))
    return _DEEP_CACHE[name]


@pytest.mark.slow
@pytest.mark.parametrize(("variant", "chain"), _params("deep", list(VARIANTS), list(CHAINS)))
def test_pass_on_deep_chain(variant, chain):
    mod, before, arg, expected = deep_chain(chain)
    with PassContext(opt_level=3):
        # a RecursionError would surface as a PassError
        out = run_in_sequential(make_pass(variant), mod)
    _assert_unchanged(mod, before, variant)
    if out is not mod:  # the same module computes the same thing
        assert_outputs_close(evaluate(out, arg), expected, what=f"{variant} on {chain}")


# --- (b) ill-typed input -----------------------------------------------------------


def _ill_typed_vars() -> tuple[IRModule, Expr]:
    """``@main(x: (2, 3), y: (4, 5))`` with well-typed lets, an unused let, a
    foldable constant, a closure and the ill-typed ``add(%x, %y)``."""
    x, y = var("x", shape=(2, 3)), var("y", shape=(4, 5))
    bad = op.add(x, y)
    t, a, u, c, f, p = Var("t"), Var("a"), Var("u"), Var("c"), Var("f"), var("p", shape=(2, 3))
    folded = op.add(const(np.ones((2, 3), np.float32)), const(np.ones((2, 3), np.float32)))
    body = Let(
        t,
        op.tanh(x),
        Let(
            u,
            op.negative(t),  # unused
            Let(
                c,
                folded,
                Let(
                    f,
                    Function([p], op.multiply(p, c)),
                    Let(a, bad, Tuple([op.multiply(a, a), Call(f, [t])])),
                ),
            ),
        ),
    )
    return IRModule.from_expr(Function([x, y], body)), bad


def _ill_typed_consts() -> tuple[IRModule, Expr]:
    """``@main(x: (2, 3))`` computing ``multiply(x, add(c1: (2, 3), c2: (4, 5)))``:
    the ill-typed call has only constant arguments, so a folder would evaluate it."""
    x = var("x", shape=(2, 3))
    bad = op.add(const(np.ones((2, 3), np.float32)), const(np.ones((4, 5), np.float32)))
    return IRModule.from_expr(Function([x], op.multiply(x, bad))), bad


def _ill_typed_helper() -> tuple[IRModule, Expr]:
    """The ill-typed add inside ``@helper``, called from ``@main``."""
    a, b = var("a", shape=(2, 3)), var("b", shape=(4, 5))
    bad = op.add(a, b)
    helper = Function([a, b], bad)
    x, y = var("x", shape=(2, 3)), var("y", shape=(4, 5))
    gv = GlobalVar("helper")
    main = Function([x, y], op.tanh(Call(gv, [x, y])))
    return IRModule({GlobalVar("main"): main, gv: helper}), bad


ILL_TYPED: dict[str, Callable[[], tuple[IRModule, Expr]]] = {
    "vars_in_main": _ill_typed_vars,
    "consts_in_main": _ill_typed_consts,
    "in_helper": _ill_typed_helper,
}

#: variant -> {module: outcome}, filled by test_pass_on_ill_typed_module: "error" (an
#: IRPassError), "warning" (succeeded with a warning at the ill-typed call) or "accepted".
_OUTCOMES: dict[str, dict[str, str]] = {}


def _mentions(err: BaseException, bad: Expr) -> bool:
    text = str(err)
    if describe(bad) in text:
        return True
    diags = getattr(err, "diagnostics", ())
    return any(getattr(d, "expr", None) is bad for d in diags)


@pytest.mark.parametrize(
    ("variant", "module"), _params("ill_typed", list(VARIANTS), list(ILL_TYPED))
)
def test_pass_on_ill_typed_module(variant, module):
    mod, bad = ILL_TYPED[module]()
    p = make_pass(variant)
    before = _snapshot(mod)
    ctx = PassContext(opt_level=3)
    try:
        with ctx:
            run_in_sequential(p, mod)
    except IRPassError as err:
        _OUTCOMES.setdefault(variant, {})[module] = "error"
        name = VARIANTS[variant][0]
        assert name in str(err), f"the error does not name the pass {name}:\n{err}"
        assert _mentions(err, bad), f"the error does not show {describe(bad)}:\n{err}"
    except Exception as err:  # noqa: BLE001 - anything else is the failure under test
        pytest.fail(f"{variant} raised a bare {type(err).__name__}, not an irpass error: {err}")
    else:
        warned = any(d.expr is bad for d in ctx.diag.warnings)
        _OUTCOMES.setdefault(variant, {})[module] = "warning" if warned else "accepted"
        assert not needs_types(p), f"{variant} requires InferType but accepted an ill-typed module"
    _assert_unchanged(mod, before, variant)


def test_ill_typed_report():
    """Print which passes diagnose the ill-typed modules (run with ``-s``); no assertion
    beyond the per-case tests, which may have been deselected."""
    for variant in VARIANTS:
        outcome = _OUTCOMES.get(variant)
        if outcome:
            cells = ", ".join(f"{m}: {r}" for m, r in sorted(outcome.items()))
            print(f"ill-typed input: {variant:28} {cells}")


def test_ill_typed_modules_are_ill_typed():
    for build in ILL_TYPED.values():
        mod, _ = build()
        with pytest.raises(TypeInferenceError):
            infer_type(mod)


# --- (c) immutable input on every model --------------------------------------------


def _model_builders() -> dict[str, Callable[[], IRModule]]:
    builders: dict[str, Callable[[], IRModule]] = dict(models.MODELS)
    if "layout" in inspect.signature(models.resnet).parameters:
        builders["resnet_nhwc"] = lambda: models.resnet(layout="NHWC")
    return builders


MODEL_BUILDERS = _model_builders()


@pytest.mark.parametrize(
    ("variant", "model_name"), _params("immutable", list(VARIANTS), list(MODEL_BUILDERS))
)
def test_pass_leaves_model_untouched(variant, model_name):
    mod = MODEL_BUILDERS[model_name]()
    before = _snapshot(mod)
    with PassContext(opt_level=3, config={"testing.immutable_module": True}):
        out = run_in_sequential(make_pass(variant), mod)
    assert isinstance(out, IRModule)
    _assert_unchanged(mod, before, variant)


# --- (d) a direct call runs the pass alone -----------------------------------------


@pytest.mark.parametrize(
    "variant", [v for v in VARIANTS if "InferType" in make_pass(v).info.required]
)
def test_direct_call_on_untyped_module_runs_alone_and_says_so(variant):
    mod = models.resnet()
    arg = np.random.default_rng(0).standard_normal(mod["main"].params[0].type_annotation.shape)
    arg = arg.astype(np.float32)
    name = VARIANTS[variant][0]
    ran: list[str] = []

    @pass_instrument
    class Trace:
        def run_before_pass(self, mod, info):
            ran.append(info.name)

    try:
        with PassContext(opt_level=3, instruments=[Trace()]):
            out = make_pass(variant)(mod)
    except PassError as err:
        text = str(err)
        assert err.pass_name == name and "InferType" in text and "Sequential" in text, text
    else:
        assert_outputs_close(evaluate(out, arg), evaluate(mod, arg), what=variant)
    assert ran == [name]  # InferType did not run
