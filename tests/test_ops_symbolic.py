"""Every core op's type relation on symbolic shapes (issue 20).

The core property: take an op's sample call with static shapes, replace dims of its
inputs (and of its shape-like attributes) with size variables, run the relation, and
substituting the original values into the symbolic result must give exactly the
static relation's result. Dims an op needs as numbers (a conv's channels, a split
point) give a ``ValueError`` naming the op and the symbol instead.

The samples are the op registry test's ``CASES`` (one call per core op, with input
values) plus the symbolic-attribute samples below.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from irpass import op
from irpass.ir import Call, Op, TensorType, TupleType, Type, list_ops
from irpass.ir.dims import DimExpr, SizeVar, dim_min, evaluate, substitute
from irpass.ir.parser import parse
from irpass.ir.type_infer import infer_type
from irpass.op.create import arange, one_hot
from irpass.op.indexing import gather_nd
from op_checks import type_of
from test_ops_registry import CASES, V

# -- symbolising types and results ---------------------------------------------------------------


def flat_tensors(ty: Type) -> list[TensorType]:
    """The tensor types of ``ty`` in order (a tuple's fields in turn)."""
    if isinstance(ty, TupleType):
        return [t for f in ty.fields for t in flat_tensors(f)]
    assert isinstance(ty, TensorType), ty
    return [ty]


def rebuild(ty: Type, shapes: list[tuple]) -> Type:
    """``ty`` with its tensors' shapes taken from ``shapes`` in order (consumed)."""
    if isinstance(ty, TupleType):
        return TupleType(tuple(rebuild(f, shapes) for f in ty.fields))
    return TensorType(shapes.pop(0), ty.dtype)


def symbolise(types: list[Type], picks: Callable[[int, int, int], bool]) -> tuple[list[Type], dict]:
    """``types`` with dim ``j`` of flat tensor ``k`` (value ``v``) replaced by the size
    variable ``s<v>`` where ``picks(k, j, v)``; returns the types and the bindings."""
    bindings: dict[str, int] = {}
    out = []
    k = 0
    for ty in types:
        shapes = []
        for t in flat_tensors(ty):
            shape = []
            for j, v in enumerate(t.shape):
                if picks(k, j, v):
                    bindings[f"s{v}"] = v
                    shape.append(SizeVar(f"s{v}"))
                else:
                    shape.append(v)
            shapes.append(tuple(shape))
            k += 1
        out.append(rebuild(ty, shapes))
    return out, bindings


def concrete(ty: Type, bindings: dict[str, int]) -> Type:
    """``ty`` with every size variable replaced by its bound value."""
    if isinstance(ty, TupleType):
        return TupleType(tuple(concrete(f, bindings) for f in ty.fields))
    assert isinstance(ty, TensorType), ty
    for d in ty.shape:
        assert type(d) is int or isinstance(d, DimExpr), (ty, type(d))
    return TensorType(tuple(substitute(d, bindings) for d in ty.shape), ty.dtype)


def static_case(name: str) -> tuple[Call, list[Type]]:
    build, inputs = CASES[name]
    return build(), [type_of(v) for v in inputs]


def relation(call: Call, types: list[Type]) -> Type:
    return call.op.type_rel(tuple(types), call.attrs)


# Dims the ops need as numbers, per op: (flat input tensor, dim) of the registry's sample.
# Symbolising one of them must give a ValueError naming the op and the symbol.
STATIC_DIMS: dict[str, set[tuple[int, int]]] = {
    # a convolution's weight: its channels and kernel size decide the computation
    **{
        name: {(1, j) for j in range(rank)}
        for name, rank in [
            ("nn.conv1d", 3), ("nn.conv2d", 4), ("nn.conv3d", 5),
            ("nn.conv1d_transpose", 3), ("nn.conv2d_transpose", 4), ("nn.conv3d_transpose", 5),
        ]
    },
    # the length of the index tuples decides the rank of the result
    "gather_nd": {(1, 0)},
    "scatter_nd": {(1, 0)},
    # squeeze without axis: which dims are 1 decides the rank of the result (as in Relax;
    # with axis given, a symbolic dim is squeezed, see the samples below)
    "squeeze": {(0, 0), (0, 1), (0, 2)},
}


def dims_of(types: list[Type]) -> list[tuple[int, int, int]]:
    """(flat tensor, dim, value) for every dim of ``types``."""
    return [
        (k, j, v)
        for k, t in enumerate(t for ty in types for t in flat_tensors(ty))
        for j, v in enumerate(t.shape)
    ]


def check_symbolic(call: Call, types: list[Type], sym: list[Type], bindings: dict) -> None:
    expected = relation(call, types)
    got = relation(call, sym)
    assert concrete(got, bindings) == expected, (sym, got)


def check_needs_static(call: Call, sym: list[Type], symbol: str) -> None:
    with pytest.raises(ValueError) as info:
        relation(call, sym)
    message = str(info.value)
    assert message.startswith(call.op.name) and symbol in message, message


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_dim_alone_symbolic_gives_the_static_result(name: str) -> None:
    call, types = static_case(name)
    needs = STATIC_DIMS.get(name, set())
    for k, j, v in dims_of(types):
        sym, bindings = symbolise(types, lambda k2, j2, _v, k=k, j=j: (k2, j2) == (k, j))
        if (k, j) in needs:
            check_needs_static(call, sym, f"s{v}")
        else:
            check_symbolic(call, types, sym, bindings)


@pytest.mark.parametrize("name", sorted(CASES))
def test_all_dims_symbolic_by_value_give_the_static_result(name: str) -> None:
    """Every dim but the 1s and the ones the op needs static: equal values share a
    variable (so dims that must agree do), and a 1 stays 1 (a symbolic dim that is 1
    at run time broadcasts, which no relation can know)."""
    call, types = static_case(name)
    needs = STATIC_DIMS.get(name, set())
    sym, bindings = symbolise(types, lambda k, j, v: v != 1 and (k, j) not in needs)
    check_symbolic(call, types, sym, bindings)


def test_the_samples_cover_every_core_op() -> None:
    core = {n for n in list_ops() if Op.get(n).owner == "irpass"}
    assert sorted(core - set(CASES)) == []



# -- symbolic attributes: samples run through the relation and the kernel ----------------------

n, seq, h, w = SizeVar("n"), SizeVar("seq"), SizeVar("h"), SizeVar("w")
BIG = 2**63 - 1  # what exporters write for "to the end"
RNG = np.random.default_rng(20)


def concrete_attrs(call: Call, bindings: dict[str, int]) -> dict[str, Any]:
    """The call's attributes with every symbolic dim evaluated (what the evaluator gives a
    kernel)."""

    def value(v: Any) -> Any:
        if isinstance(v, DimExpr):
            return evaluate(v, bindings)
        if isinstance(v, tuple):
            return tuple(value(x) for x in v)
        return v

    return {k: value(v) for k, v in call.attrs.items()}


def random_input(ty: TensorType) -> np.ndarray:
    if ty.dtype.startswith("int"):
        return RNG.integers(0, 3, ty.shape).astype(ty.dtype)
    return RNG.random(ty.shape).astype(ty.dtype)


# name -> (builder of the call, symbolic input types, bindings to check). The bindings
# include the edge cases of each formula (a clamp that bites, a dim of 1).
ATTR_SAMPLES: list[tuple[str, Callable[[], Call], list[TensorType], list[dict[str, int]]]] = [
    ("reshape", lambda: op.reshape(V[0], (0, 0, 4, -1)), [TensorType((n, seq, 8))],
     [{"n": 2, "seq": 3}, {"n": 1, "seq": 1}]),
    ("reshape", lambda: op.reshape(V[0], (n * seq, 8)), [TensorType((n, seq, 8))],
     [{"n": 2, "seq": 3}]),
    ("reshape", lambda: op.reshape(V[0], (-1, 12)), [TensorType((n, 3, 4))], [{"n": 5}]),
    ("reshape", lambda: op.reshape(V[0], (n, -1, 4)), [TensorType((n * seq * 8,))],
     [{"n": 2, "seq": 3}]),
    ("reshape", lambda: op.reshape(V[0], (-3, 0)), [TensorType((n, seq, 4))],
     [{"n": 2, "seq": 3}]),
    ("reshape", lambda: op.reshape(V[0], (-4, n, -1, -2)), [TensorType((n * 2, 3))],
     [{"n": 4}]),
    ("reshape", lambda: op.reshape(V[0], (2, -1, n)), [TensorType((n, 6))], [{"n": 2}]),
    ("reverse_reshape", lambda: op.reverse_reshape(V[0], (-1, 0)), [TensorType((n, seq, 4))],
     [{"n": 2, "seq": 3}]),
    ("broadcast_to", lambda: op.broadcast_to(V[0], (n, seq, 8)), [TensorType((1, 8))],
     [{"n": 2, "seq": 3}]),
    ("broadcast_to", lambda: op.broadcast_to(V[0], (n, 3)), [TensorType((n, 1))], [{"n": 2}]),
    ("tile", lambda: op.tile(V[0], (n, 1)), [TensorType((2, seq))], [{"n": 3, "seq": 2}]),
    ("zeros", lambda: op.zeros((n, 4), "int8"), [], [{"n": 3}, {"n": 0}]),
    ("ones", lambda: op.ones((n * 2, seq), "float32"), [], [{"n": 3, "seq": 1}]),
    ("full", lambda: op.full(V[0], (n, seq)), [TensorType((), "int32")], [{"n": 2, "seq": 5}]),
    ("arange", lambda: arange(seq, dtype="int64"), [], [{"seq": 0}, {"seq": 7}]),
    ("dims_tensor", lambda: op.dims_tensor((n, 4, seq * 2 + 1)), [], [{"n": 3, "seq": 0}]),
    ("arange", lambda: arange(1, seq + 1, 2, dtype="int64"), [], [{"seq": 6}, {"seq": 7}]),
    ("arange", lambda: arange(seq, 0, -3, dtype="float32"), [], [{"seq": 7}, {"seq": 0}]),
    ("one_hot", lambda: one_hot(V[0], V[1], V[2], depth=seq), [
        TensorType((n,), "int64"), TensorType((), "float32"), TensorType((), "float32")],
     [{"n": 2, "seq": 3}]),
    # [:seq] of a position table: min(seq, 16), the clamp the table's length imposes
    ("strided_slice", lambda: op.strided_slice(V[0], (0,), (seq,)), [TensorType((16, 4))],
     [{"seq": 5}, {"seq": 16}, {"seq": 40}]),
    ("strided_slice", lambda: op.strided_slice(V[0], (0,), (BIG,), axes=(1,)),
     [TensorType((n, seq, 8))], [{"n": 2, "seq": 3}]),
    ("strided_slice", lambda: op.strided_slice(V[0], (1, -2), (BIG, BIG), (2, 1)),
     [TensorType((seq, n))], [{"seq": 0, "n": 1}, {"seq": 5, "n": 4}, {"seq": 6, "n": 0}]),
    ("strided_slice", lambda: op.strided_slice(V[0], (-1,), (-BIG,), (-1,)),
     [TensorType((n, 2))], [{"n": 0}, {"n": 3}]),
    ("strided_slice", lambda: op.strided_slice(V[0], (-2,), (0,), (-2,)),
     [TensorType((n,))], [{"n": 0}, {"n": 1}, {"n": 6}]),
    ("strided_slice", lambda: op.strided_slice(V[0], (seq,), (seq * 2,)), [TensorType((n, 3))],
     [{"seq": 1, "n": 5}, {"seq": 3, "n": 4}, {"seq": 4, "n": 2}]),
    ("strided_slice", lambda: op.strided_slice(V[0], (-seq - 1,), (BIG,)), [TensorType((n,))],
     [{"seq": 1, "n": 5}, {"seq": 7, "n": 4}]),
    ("squeeze", lambda: op.squeeze(V[0], axis=(0,)), [TensorType((n, 3))], [{"n": 1}]),
    ("split", lambda: op.split(V[0], 2, axis=1), [TensorType((3, n * 2))], [{"n": 2}]),
    ("split", lambda: op.split(V[0], (1, 3)), [TensorType((n, 2))], [{"n": 3}, {"n": 5}]),
    ("image.resize2d", lambda: op.image.resize2d(V[0], (h * 2, w * 2)),
     [TensorType((1, 3, h, w))], [{"h": 2, "w": 3}]),
    ("take", lambda: op.take(V[0], V[1]), [TensorType((n, 3)), TensorType((seq,), "int64")],
     [{"n": 2, "seq": 4}]),
    ("cumsum", lambda: op.cumsum(V[0]), [TensorType((n, 3))], [{"n": 2}]),
    ("matmul", lambda: op.matmul(V[0], V[1]),
     [TensorType((n, 1, seq, 4)), TensorType((1, 3, 4, seq))], [{"n": 2, "seq": 5}]),
    ("nn.batch_matmul", lambda: op.nn.batch_matmul(V[0], V[1]),
     [TensorType((n, seq, 4)), TensorType((1, seq, 4))], [{"n": 2, "seq": 3}]),
    ("concatenate", lambda: op.concatenate([V[0], V[1]], 1),
     [TupleType((TensorType((n, seq)), TensorType((n, 2))))], [{"n": 2, "seq": 3}]),
    ("nn.max_pool2d", lambda: op.nn.max_pool2d(V[0], 3, 2, padding=1, ceil_mode=True),
     [TensorType((1, 2, h, w))], [{"h": 5, "w": 6}, {"h": 1, "w": 2}, {"h": 7, "w": 8}]),
    ("nn.avg_pool2d", lambda: op.nn.avg_pool2d(V[0], 2, 3, ceil_mode=True),
     [TensorType((1, 2, h, w))], [{"h": 5, "w": 6}, {"h": 2, "w": 4}, {"h": 7, "w": 9}]),
    ("nn.conv2d", lambda: op.nn.conv2d(V[0], V[1], strides=2, padding=1, dilation=2),
     [TensorType((n, 4, h, w)), TensorType((6, 4, 3, 3))], [{"n": 2, "h": 5, "w": 8}]),
    ("nn.conv2d_transpose", lambda: op.nn.conv2d_transpose(V[0], V[1], strides=2, padding=1,
                                                           output_padding=1),
     [TensorType((n, 4, h, w)), TensorType((4, 3, 3, 3))], [{"n": 1, "h": 3, "w": 2}]),
]


@pytest.mark.parametrize("k", range(len(ATTR_SAMPLES)),
                         ids=[f"{s[0]}-{i}" for i, s in enumerate(ATTR_SAMPLES)])
def test_symbolic_attrs_give_the_kernels_shape(k: int) -> None:
    """The symbolic result, evaluated at each binding, is the shape of what the kernel
    computes from random inputs of the bound shapes with the bound attributes."""
    name, build, types, cases = ATTR_SAMPLES[k]
    call = build()
    assert call.op.name == name
    got = relation(call, types)
    for bindings in cases:
        static_call = Call(call.op, call.args, concrete_attrs(call, bindings))
        inputs = []
        for ty in types:
            fields = [concrete(t, bindings) for t in flat_tensors(ty)]
            values = [random_input(t) for t in fields]  # type: ignore[arg-type]
            inputs.append(tuple(values) if isinstance(ty, TupleType) else values[0])
        static_types = [concrete(ty, bindings) for ty in types]
        assert relation(static_call, static_types) == concrete(got, bindings), bindings
        with np.errstate(all="ignore"):
            out = call.op.kernel(tuple(inputs), static_call.attrs)
        assert type_of(out) == concrete(got, bindings), (bindings, got)


def test_the_common_symbolic_results_stay_simple() -> None:
    """No clamps where none is needed: open slices, -1 and conv sizes are plain formulas."""
    assert relation(op.reshape(V[0], (0, 0, 4, -1)), [TensorType((n, seq, 8))]).shape == (
        n, seq, 4, 2)
    assert relation(op.strided_slice(V[0], (0,), (BIG,), axes=(1,)),
                    [TensorType((n, seq, 8))]).shape == (n, seq, 8)
    assert relation(op.strided_slice(V[0], (0,), (seq,)), [TensorType((16, 4))]).shape == (
        dim_min(seq, 16), 4)
    assert relation(arange(seq, dtype="int64"), []).shape == (seq,)
    conv = op.nn.conv2d(V[0], V[1], padding=1)
    assert relation(conv, [TensorType((n, 4, h, w)), TensorType((6, 4, 3, 3))]).shape == (
        n, 6, h, w)


# -- errors: the dims ops need as numbers ---------------------------------------------------------


@pytest.mark.parametrize("call, types, words", [
    (lambda: op.nn.conv2d(V[0], V[1]),
     [TensorType((1, n, 5, 5)), TensorType((6, n, 3, 3))], "input channels (I) of weight"),
    (lambda: op.nn.conv2d(V[0], V[1]),
     [TensorType((1, 4, 5, 5)), TensorType((6, 4, h, 3))], "kernel height (H) of weight"),
    (lambda: op.squeeze(V[0]), [TensorType((n, 1))], "axis=None"),
    (lambda: gather_nd(V[0], V[1]), [TensorType((3, 4)), TensorType((n, 2), "int64")],
     "index tuples"),
])
def test_a_symbolic_dim_where_a_number_is_needed_names_the_op_and_the_symbol(call, types, words):
    c = call()
    with pytest.raises(ValueError) as info:
        relation(c, types)
    message = str(info.value)
    assert message.startswith(c.op.name) and words in message
    assert "symbolic dim n" in message or "symbolic dim h" in message, message


@pytest.mark.parametrize("call, types, words", [
    (lambda: op.reshape(V[0], (-1, 2)), [TensorType((n, 3))], "cannot infer the -1"),
    (lambda: op.split(V[0], 3), [TensorType((n,))], "symbolic size n"),
    (lambda: op.strided_slice(V[0], (n - seq,), (BIG,)), [TensorType((4,))],
     "begin n - seq"),
    (lambda: op.nn.dense(V[0], V[1]), [TensorType((n, 4)), TensorType((3, 5))], "4 features"),
    (lambda: op.nn.max_pool2d(V[0], 3), [TensorType((1, 1, 1, h))], "window spans 3"),
    (lambda: op.squeeze(V[0], axis=(0,)), [TensorType((n + 2, 3))], "not 1"),
])
def test_symbolic_shapes_that_cannot_fit_are_clear_value_errors(call, types, words):
    c = call()
    with pytest.raises(ValueError, match=re.escape(words)) as info:
        relation(c, types)
    assert str(info.value).startswith(c.op.name)


# -- end to end: type inference of a program with symbolic parameters ---------------------------

BERT_BLOCK = """
def @main(%x: Tensor[(n, seq, 64), float32], %w: Tensor[(64, 64), float32],
          %g: Tensor[(64,), float32], %b: Tensor[(64,), float32],
          %pos: Tensor[(512, 64), float32]) {
  %0 = strided_slice(%pos, begin=[0], end=[seq]);
  %1 = add(%x, %0);
  %2 = nn.dense(%1, %w);
  %3 = reshape(%2, newshape=[0, 0, 4, -1]);
  %4 = transpose(%3, axes=[0, 2, 1, 3]);
  %5 = reshape(%4, newshape=[-1, seq, 16]);
  %6 = nn.batch_matmul(%5, %5);
  %7 = nn.softmax(%6);
  %8 = nn.batch_matmul(%7, %5, transpose_b=False);
  %9 = reshape(%8, newshape=[n, 4, seq, 16]);
  %10 = transpose(%9, axes=[0, 2, 1, 3]);
  %11 = reshape(%10, newshape=[0, 0, -1]);
  %12 = add(%11, %x);
  nn.layer_norm(%12, %g, %b)
}
"""


def test_a_bert_like_block_infers_symbolic_types() -> None:
    mod = infer_type(parse(BERT_BLOCK))
    assert mod["main"].ret_type == TensorType((n, seq, 64))
    text = str(mod)
    assert "Tensor[(n * 4, seq, seq), float32]" in text
    assert "Tensor[(n, 4, seq, 16), float32]" in text
    assert "min(seq, 512)" in text  # the position table slice


def test_type_inference_checks_what_it_can_decide() -> None:
    bad = """
    def @main(%x: Tensor[(n, seq, 64), float32], %w: Tensor[(32, 48), float32]) {
      nn.dense(%x, %w)
    }"""
    with pytest.raises(Exception, match="64 features"):
        infer_type(parse(bad))
