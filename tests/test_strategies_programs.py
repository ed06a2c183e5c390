"""The random program generator (irpass.testing.programs) and the hypothesis strategies
built on it (irpass.testing.strategies): valid, tame, reproducible programs that use the
whole op set and every construct of the IR."""

from __future__ import annotations

import random
from collections import Counter

import irpass
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from irpass.ir import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    infer_type,
    list_ops,
    parse,
    post_order_visit,
    structural_equal,
    structural_hash,
    well_formed,
)
from irpass.plugins.manager import CORE
from irpass.testing import strategies as sts
from irpass.testing.programs import FEATURES, generate, random_args, random_module

SEEDS = range(300)


def _nodes(func):
    out = []
    post_order_visit(func, out.append)
    return out


def _op_names(mod):
    return {n.op.name for _, f in mod.items() for n in _nodes(f)
            if isinstance(n, Call) and isinstance(n.op, Op)}


@pytest.fixture(scope="module")
def programs():
    return [random_module(s) for s in SEEDS]


def test_same_seed_same_program_other_seed_other_program():
    assert str(random_module(7)) == str(random_module(7))
    assert str(random_module(7)) == str(random_module(random.Random(7)))
    assert structural_hash(random_module(7)) != structural_hash(random_module(8))


def test_programs_are_valid_typed_finite_and_round_trip(programs):
    for seed, mod in zip(SEEDS, programs, strict=True):
        assert well_formed(mod), (seed, str(well_formed(mod)))
        infer_type(mod)
        assert [type(p.type_annotation) for p in mod["main"].params] == [TensorType] * len(
            mod["main"].params)
        assert all(p.type_annotation.dtype == "float32" for p in mod["main"].params)
        args = random_args(mod, seed)
        out = irpass.evaluate(mod, **args)
        for leaf in out if isinstance(out, tuple) else (out,):
            if isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f":
                assert np.isfinite(leaf).all(), seed
                assert np.abs(leaf).max(initial=0) <= 1e4, seed  # tame
        assert structural_equal(parse(str(mod)), mod), seed


def test_every_registered_op_is_generated(programs):
    seen = Counter()
    for mod in programs:
        seen.update(_op_names(mod))
    # the core's op set: other test modules register ops of their own when imported
    core_ops = {name for name in list_ops() if Op.get(name).owner == CORE}
    missing = sorted(core_ops - set(seen))
    assert not missing, f"ops the generator never builds: {missing}"


def _let_as_value(func):
    """A let that is not the tail of a let chain: a block used as a value."""
    tails = set()
    lets = [n for n in _nodes(func) if isinstance(n, Let)]
    for n in lets:
        tails.add(n.body)
    body = func.body
    while isinstance(body, Let):
        tails.add(body)
        body = body.body
    return any(n not in tails for n in lets)


def _constructs(mod):
    found = set()
    for gv, func in mod.items():
        nodes = _nodes(func)
        if _let_as_value(func):
            found.add("let used as a value")
        for n in nodes:
            if isinstance(n, Let) and isinstance(n.value, Let):
                found.add("nested let")
            if isinstance(n, If):
                found.add("if")
            if isinstance(n, TupleGetItem):
                found.add("projection")
            if isinstance(n, Function) and n is not func:
                found.add("closure")
                if any(isinstance(m, Function) and m is not n for m in _nodes(n.body)):
                    found.add("nested closure")
            if isinstance(n, Call) and isinstance(n.op, GlobalVar) and gv.name_hint == "main":
                callee = mod[n.op]
                found.add("call of an Inline function" if callee.attrs.get("Inline")
                          else "call of a plain function")
            if isinstance(n, Constant):
                found.add("big constant" if n.data.size > 4 else "small constant")
            if isinstance(n, Call) and n.op is Op.get("nn.batch_norm") and isinstance(
                    n.args[0], Call) and n.args[0].op is Op.get("nn.conv2d"):
                found.add("conv2d -> batch_norm")
            ty = getattr(n, "_checked_type", None)
            if isinstance(ty, TensorType):
                if 0 in ty.shape:
                    found.add("size-0 dimension")
                found.add(ty.dtype)
        hashes = Counter(structural_hash(n) for n in nodes
                         if isinstance(n, Call) and isinstance(n.op, Op))
        if any(k > 1 for k in hashes.values()):
            found.add("structurally equal calls")
    return found


def test_every_construct_is_generated(programs):
    found = set()
    for mod in programs:
        found |= _constructs(infer_type(mod))
    wanted = {"let used as a value", "nested let", "if", "projection", "closure",
              "nested closure", "call of an Inline function", "call of a plain function",
              "big constant", "small constant", "conv2d -> batch_norm", "size-0 dimension",
              "structurally equal calls", "float32", "float64", "float16", "int32", "int64",
              "bool"}
    assert not wanted - found, sorted(wanted - found)


def test_if_conditions_are_scalar_bools(programs):
    for mod in programs:
        typed = infer_type(mod)
        for _, func in typed.items():
            for n in _nodes(func):
                if isinstance(n, If):
                    assert n.cond.checked_type == TensorType((), "bool")


@pytest.mark.parametrize("off", sorted(FEATURES))
def test_switching_a_feature_off_removes_it(off):
    checks = {
        "lets": lambda n: isinstance(n, Let),
        "ifs": lambda n: isinstance(n, If),
        "closures": lambda n: False,  # checked below: no nested functions
        "globals": lambda n: isinstance(n, GlobalVar),
        "tuples": lambda n: isinstance(n, (Tuple, TupleGetItem)),
        "constants": lambda n: isinstance(n, Constant),
        "layout": lambda n: isinstance(n, Call) and isinstance(n.op, Op) and n.op.name in {
            "reshape", "reverse_reshape", "transpose", "expand_dims", "squeeze", "tile",
            "broadcast_to", "strided_slice", "take", "nn.pad", "layout_transform"},
        "nn": lambda n: isinstance(n, Call) and isinstance(n.op, Op) and (
            n.op.name.startswith("nn.") and n.op.name not in {
                "nn.relu", "nn.leaky_relu", "nn.dropout", "nn.pad"} or n.op.name == "matmul"),
        # only if's scalar bool conditions are not float32
        "dtypes": lambda n: isinstance(getattr(n, "_checked_type", None), TensorType) and
            n._checked_type.dtype != "float32" and n._checked_type != TensorType((), "bool"),
        "empty": lambda n: isinstance(getattr(n, "_checked_type", None), TensorType) and 0 in
            n._checked_type.shape,
    }
    feats = FEATURES - {off}
    for seed in range(60):
        mod = infer_type(random_module(seed, features=feats))
        for _, func in mod.items():
            for n in _nodes(func):
                assert not checks[off](n), (off, seed, str(mod))
                if off == "closures":
                    assert not (isinstance(n, Function) and n is not func), (seed, str(mod))
        if off == "globals":
            assert list(mod.functions) == [mod.get_global_var("main")]


def test_no_features_gives_elementwise_dataflow():
    allowed = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
               "negative", "abs", "tanh", "sigmoid", "erf", "exp", "log", "sqrt", "clip",
               "nn.relu", "nn.leaky_relu", "nn.dropout", "sum", "mean", "max", "min",
               "prod", "zeros", "ones", "full", "zeros_like", "ones_like", "cast", "sin", "cos",
               "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "floor",
               "ceil", "trunc", "round", "sign", "floor_mod", "trunc_mod", "cumsum", "cumprod",
               "arange"}
    for seed in range(60):
        mod = random_module(seed, features=())
        kinds = {type(n) for n in _nodes(mod["main"])}
        assert kinds <= {Function, irpass.ir.Var, Call, Op}, (seed, str(mod))
        assert _op_names(mod) <= allowed, (seed, _op_names(mod) - allowed)


def test_unknown_features_and_sizes_are_refused():
    with pytest.raises(ValueError, match="unknown program features.*'loops'"):
        random_module(0, features={"lets", "loops"})
    with pytest.raises(ValueError, match="max_nodes must be >= 1"):
        random_module(0, max_nodes=0)


def test_random_args_are_by_name_in_range_and_seeded():
    mod = random_module(3)
    a, b = random_args(mod, 1), random_args(mod, 1)
    assert list(a) == [p.name_hint for p in mod["main"].params]
    for k in a:
        assert np.array_equal(a[k], b[k]) and np.abs(a[k]).max(initial=0) <= 1
    assert any(not np.array_equal(a[k], random_args(mod, 2)[k]) for k in a)


def test_bigger_programs_for_a_bigger_budget():
    small = sum(len(_nodes(random_module(s, max_nodes=5)["main"])) for s in range(30))
    big = sum(len(_nodes(random_module(s, max_nodes=60)["main"])) for s in range(30))
    assert big > 3 * small


# -- the hypothesis strategies ------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(sts.modules_and_inputs())
def test_strategy_programs_run_on_drawn_inputs(case):
    mod, args = case
    assert well_formed(mod)
    out = irpass.evaluate(mod, *args)
    for leaf in out if isinstance(out, tuple) else (out,):
        if isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f":
            assert np.isfinite(leaf).all()


def test_strategy_reaches_the_nn_ops_and_blocks():
    seen: set[str] = set()

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck),
              derandomize=True, database=None)
    @given(sts.modules())
    def collect(mod):
        seen.update(_op_names(mod))
        seen.update(_constructs(infer_type(mod)))

    collect()
    # (every op is checked on seeded programs above; this is the strategy's share)
    assert {"nn.conv2d", "nn.batch_norm", "nn.dense", "let used as a value",
            "call of an Inline function"} <= seen


def test_strategy_flags_reach_the_generator():
    seen: set[str] = set()

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck),
              database=None)
    @given(sts.modules(nn=False, layout=False, dtypes=False))
    def collect(mod):
        seen.update(_op_names(mod))

    collect()
    assert not {n for n in seen if n.startswith("nn.conv") or n in ("reshape", "shape_of")}


def test_the_generator_takes_any_source_of_choices():
    class Zeros(irpass.testing.programs.Choices):
        """Every decision its first option: the smallest program there is."""

        def integer(self, lo, hi):
            return lo

        def seed(self):
            return 0

    mod = generate(Zeros(), 24)
    assert well_formed(mod) and len(_nodes(mod["main"])) < 10
