"""Every std pass keeps the meaning of every example network and of random programs.

Cross-cutting checks of the standard pass pack (issue 5), on top of each pass's
own tests: :func:`irpass.testing.check_semantics` (the pass runs with
``testing.immutable_module``, its result must be well formed, well typed, keep
``@main``'s signature and compute the same outputs) for

- every std pass (and the variants with non-default arguments) on every model
  of :data:`irpass.testing.models.MODELS` and the NHWC ResNet;
- every std pass on hypothesis programs (lets, ifs, closures, tuples, globals);
- the default pipeline at -O0..-O3, on the models and on hypothesis programs;
- passes likely to interact: ``ToANormalForm`` then each pass, each pass then
  ``FuseOps``, the normal-form round trip around each pass, and random
  sequences of passes.

``test_every_std_pass_is_covered`` fails when the ``std`` plugin registers a
pass that is missing from :data:`PASSES`, so a new pass cannot ship without
these checks.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from irpass.ir import IRModule
from irpass.testing import check_semantics, models
from irpass.testing import strategies as sts
from irpass.transform import Pass, default_pipeline, get_pass, get_pass_entry, list_passes

NHWC = {"nn.conv2d": ["NHWC", "default"]}
NCHW = {"nn.conv2d": ["NCHW", "default"]}

#: Every std pass by registered name, with the arguments it is tested with.
PASSES: dict[str, dict[str, Any]] = {
    "InferType": {},
    "FoldConstant": {},
    "DeadCodeElimination": {},
    "EliminateCommonSubexpr": {},
    "SimplifyExpr": {},
    "SimplifyInference": {},
    "BackwardFoldScaleAxis": {},
    "ForwardFoldScaleAxis": {},
    "FoldScaleAxis": {},
    "CombineParallelDense": {},
    "FusePatterns": {},
    "Canonicalize": {},  # with the rule sets of the plugins the tests load (none of std's)
    "AlterOpLayout": {},
    "ConvertLayout": {"desired_layouts": NHWC},
    "FuseOps": {},
    "ToANormalForm": {},
    "ToGraphNormalForm": {},
    "LambdaLift": {},
    "Inline": {},
    "RemoveUnusedFunctions": {},
}

#: Test id -> (registered name, arguments): the passes above plus variants.
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    **{name: (name, kwargs) for name, kwargs in PASSES.items()},
    "FuseOps_fuse_opt_level_0": ("FuseOps", {"fuse_opt_level": 0}),
    "ConvertLayout_NCHW": ("ConvertLayout", {"desired_layouts": NCHW}),
    "CombineParallelDense_min_2": ("CombineParallelDense", {"min_num_branches": 2}),
}


def make_pass(variant: str) -> Pass:
    """A fresh instance of the pass of test id ``variant``."""
    name, kwargs = VARIANTS[variant]
    return get_pass(name, **kwargs)


def _model_builders() -> dict[str, Callable[[], IRModule]]:
    builders: dict[str, Callable[[], IRModule]] = dict(models.MODELS)
    if "layout" in inspect.signature(models.resnet).parameters:
        builders["resnet_nhwc"] = lambda: models.resnet(layout="NHWC")
    return builders


MODEL_BUILDERS = _model_builders()
_MODEL_CACHE: dict[str, IRModule] = {}


def model(name: str) -> IRModule:
    """The example network ``name``, built once (modules are immutable, so sharing is safe)."""
    if name not in _MODEL_CACHE:
        _MODEL_CACHE[name] = MODEL_BUILDERS[name]()
    return _MODEL_CACHE[name]


#: (test, variant, model) cases that fail because of a bug in the pass, with the
#: reason; marked xfail(strict=True) so the suite stays green and the bug stays
#: visible. ``test`` is "pass", "anf" (ToANormalForm first) or "fuse" (FuseOps after).
KNOWN_BUGS: dict[tuple[str, str, str], str] = {}


def _cases(test: str, variants: list[str]) -> list[Any]:
    cases = []
    for v in variants:
        for m in MODEL_BUILDERS:
            reason = KNOWN_BUGS.get((test, v, m))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            cases.append(pytest.param(v, m, id=f"{v}-{m}", marks=marks))
    return cases


def _args_by_name(mod: IRModule, args: tuple[Any, ...]) -> list[dict[str, Any]]:
    names = [p.name_hint for p in mod["main"].params]
    assert len(set(names)) == len(names), f"@main has two params of one name: {names}"
    return [dict(zip(names, args, strict=True))]


# Hypothesis settings: a few seconds per property; generated programs are small.
PROPERTY = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
PROPERTY_SMALL = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def test_every_std_pass_is_covered():
    std = {name for name in list_passes() if get_pass_entry(name).owner == "std"}
    missing = std - set(PASSES)
    assert not missing, f"std passes without semantics tests: {sorted(missing)}"
    stale = set(PASSES) - std
    assert not stale, f"tested passes the std plugin does not register: {sorted(stale)}"


def test_variants_are_constructible():
    for variant, (name, _) in VARIANTS.items():
        p = make_pass(variant)
        assert isinstance(p, Pass)
        assert p.info.name == name


# --- each pass on each model -------------------------------------------------------


@pytest.mark.parametrize(("variant", "model_name"), _cases("pass", list(VARIANTS)))
def test_pass_keeps_model_meaning(variant, model_name):
    check_semantics(make_pass(variant), model(model_name))


# --- each pass on random programs --------------------------------------------------


@pytest.mark.parametrize("variant", list(VARIANTS))
@PROPERTY
@given(case=sts.modules_and_inputs())
def test_pass_keeps_random_program_meaning(variant, case):
    mod, args = case
    check_semantics(make_pass(variant), mod, inputs=_args_by_name(mod, args))


# --- the default pipeline ----------------------------------------------------------


@pytest.mark.parametrize("model_name", list(MODEL_BUILDERS))
@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_default_pipeline_keeps_model_meaning(opt_level, model_name):
    check_semantics(default_pipeline(opt_level), model(model_name), opt_level=opt_level)


@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
@PROPERTY
@given(case=sts.modules_and_inputs())
def test_default_pipeline_keeps_random_program_meaning(opt_level, case):
    mod, args = case
    check_semantics(
        default_pipeline(opt_level), mod, inputs=_args_by_name(mod, args), opt_level=opt_level
    )


# --- passes likely to interact -----------------------------------------------------

OTHERS = [v for v in VARIANTS if v != "ToANormalForm"]


@pytest.mark.parametrize(("variant", "model_name"), _cases("anf", OTHERS))
def test_a_normal_form_then_pass_keeps_model_meaning(variant, model_name):
    check_semantics([get_pass("ToANormalForm"), make_pass(variant)], model(model_name))


@pytest.mark.parametrize(("variant", "model_name"), _cases("fuse", list(VARIANTS)))
def test_pass_then_fuse_ops_keeps_model_meaning(variant, model_name):
    check_semantics([make_pass(variant), get_pass("FuseOps")], model(model_name))


@pytest.mark.parametrize("variant", OTHERS)
@PROPERTY_SMALL
@given(case=sts.modules_and_inputs())
def test_a_normal_form_then_pass_keeps_random_program_meaning(variant, case):
    mod, args = case
    passes = [get_pass("ToANormalForm"), make_pass(variant), get_pass("ToGraphNormalForm")]
    check_semantics(passes, mod, inputs=_args_by_name(mod, args))


@pytest.mark.parametrize("variant", list(VARIANTS))
@PROPERTY_SMALL
@given(case=sts.modules_and_inputs())
def test_pass_then_fuse_ops_keeps_random_program_meaning(variant, case):
    mod, args = case
    check_semantics([make_pass(variant), get_pass("FuseOps")], mod, inputs=_args_by_name(mod, args))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sequence=st.lists(st.sampled_from(list(VARIANTS)), min_size=2, max_size=5),
    case=sts.modules_and_inputs(),
)
def test_random_pass_sequences_keep_random_program_meaning(sequence, case):
    mod, args = case
    check_semantics([make_pass(v) for v in sequence], mod, inputs=_args_by_name(mod, args))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sequence=st.lists(st.sampled_from(list(VARIANTS)), min_size=2, max_size=6),
    model_name=st.sampled_from(list(MODEL_BUILDERS)),
)
def test_random_pass_sequences_keep_model_meaning(sequence, model_name):
    check_semantics([make_pass(v) for v in sequence], model(model_name))


# --- check_semantics runs one pass as a pipeline would -----------------------------


def test_check_semantics_runs_a_single_pass_with_its_requirements_whatever_its_level():
    # called directly, FuseOps runs alone and fails on an untyped module; check_semantics
    # runs it in a Sequential (so InferType runs first), and at opt_level 0 all the same
    mod = models.mlp()
    out = check_semantics(get_pass("FuseOps"), mod, opt_level=0)
    assert "Primitive=1" in str(out) and "Primitive" not in str(mod)
