"""The std passes keep the meaning of programs built from the ops added for ONNX
import (erf, nn.leaky_relu, nn.log_softmax, nn.lrn, take, strided_slice,
broadcast_to, tile, matmul, nn.conv2d_transpose): the passes know nothing
special about them, so they must treat them conservatively (e.g. no scale is
folded through ``nn.conv2d_transpose``, no layout is carried through ``nn.lrn``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from irpass import op
from irpass.ir import Call, Function, IRModule, Op, TupleGetItem, const, var
from irpass.testing import check_semantics
from irpass.transform import default_pipeline, get_pass
from test_std_semantics import VARIANTS, make_pass

RNG = np.random.default_rng(5)
BIG = 2**63 - 1


def c(*shape: int, scale: float = 0.5) -> object:
    """A random float32 constant."""
    return const((RNG.standard_normal(shape) * scale).astype("float32"))


def vision() -> IRModule:
    """conv -> batch_norm -> leaky_relu -> scaled conv2d_transpose -> lrn -> slice -> erf
    -> matmul -> log_softmax, with the scales the folding passes look for around the new ops."""
    x = var("x", shape=(1, 4, 6, 6))
    y = op.nn.conv2d(x, c(8, 4, 3, 3), padding=1)
    bn = op.nn.batch_norm(y, c(8), c(8), c(8), const(np.full(8, 1.5, "float32")))
    y = op.nn.leaky_relu(TupleGetItem(bn, 0), 0.1)
    # a per-channel scale before and after the transposed conv: FoldScaleAxis must not
    # fold either into its weight (it only knows conv2d and dense)
    y = op.multiply(y, c(8, 1, 1))
    t = op.nn.conv2d_transpose(y, c(8, 2, 3, 3), strides=2, padding=1, output_padding=1, groups=2)
    t = op.add(op.multiply(t, c(4, 1, 1)), c(4, 1, 1))
    t = op.nn.lrn(t, size=3, alpha=0.2)
    t = op.strided_slice(t, [0, 1, -1], [BIG, BIG, -BIG - 1], [1, 2, -1], axes=[1, 2, 3])
    t = op.nn.relu(op.erf(t))  # (1, 4, 6, 12)
    flat = op.reshape(t, (1, -1))
    logits = op.matmul(flat, c(288, 10, scale=0.1))
    return IRModule({"main": Function([x], op.nn.log_softmax(logits))})


def transformer() -> IRModule:
    """take (embedding) -> broadcast_to (position) -> tile -> matmul -> gelu (erf) ->
    log_softmax, on an int64 input."""
    ids = var("ids", shape=(2, 5), dtype="int64")
    emb = op.take(c(20, 8), ids, axis=0, mode="wrap")
    pos = op.broadcast_to(c(1, 5, 8), (2, 5, 8))
    h = op.add(emb, pos)
    h = op.tile(op.strided_slice(h, [0], [4], axes=[2]), (1, 1, 2))
    h = op.matmul(h, c(8, 8))
    gelu = op.multiply(
        op.multiply(h, const(np.float32(0.5))),
        op.add(const(np.float32(1.0)), op.erf(op.divide(h, const(np.float32(math.sqrt(2)))))),
    )
    out = op.nn.log_softmax(op.matmul(gelu, c(8, 3)), axis=-1)
    return IRModule({"main": Function([ids], out)})


MODELS = {"vision": vision, "transformer": transformer}
_CACHE: dict[str, IRModule] = {}


def model(name: str) -> IRModule:
    """The module ``name``, built once."""
    if name not in _CACHE:
        _CACHE[name] = MODELS[name]()
    return _CACHE[name]


def inputs(name: str) -> list[dict[str, np.ndarray]]:
    """Two argument sets (any int64 id is fine: the embedding take wraps)."""
    if name == "transformer":
        return [{"ids": RNG.integers(-40, 40, (2, 5)).astype("int64")} for _ in range(2)]
    return [{"x": RNG.standard_normal((1, 4, 6, 6)).astype("float32")} for _ in range(2)]


def op_names(mod: IRModule) -> list[str]:
    """The names of every op called in ``mod`` (also inside fused functions)."""
    from irpass.ir.functor import post_order_visit

    names: list[str] = []
    for _, fn in mod.functions.items():
        post_order_visit(
            fn,
            lambda e: (
                names.append(e.op.name) if isinstance(e, Call) and isinstance(e.op, Op) else None
            ),
        )
    return names


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_each_std_pass_keeps_the_meaning(variant: str, name: str) -> None:
    check_semantics(make_pass(variant), model(name), inputs=inputs(name), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_each_std_pass_then_fuse_ops_keeps_the_meaning(variant: str, name: str) -> None:
    passes = [make_pass(variant), get_pass("FuseOps")]
    check_semantics(passes, model(name), inputs=inputs(name), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_default_pipeline_keeps_the_meaning(opt_level: int, name: str) -> None:
    check_semantics(
        default_pipeline(opt_level),
        model(name),
        inputs=inputs(name),
        opt_level=opt_level,
        rtol=1e-4,
        atol=1e-5,
    )


def test_o3_folds_batch_norm_and_keeps_the_new_ops() -> None:
    out = check_semantics(default_pipeline(3), model("vision"), inputs=inputs("vision"))
    names = op_names(out)
    assert "nn.batch_norm" not in names
    for kept in ("nn.conv2d_transpose", "nn.lrn", "strided_slice", "erf", "matmul"):
        assert kept in names, kept
