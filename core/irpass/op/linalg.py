"""Linear algebra: ``matmul``, ``einsum`` and ``linalg.det``.

``matmul`` is numpy's (and ONNX MatMul's) matrix product for tensors of rank
>= 1. Unlike ``nn.dense`` and ``nn.batch_matmul`` (Relay's fixed-rank products
with a transposed weight), it multiplies the last two axes of ``a`` and ``b``
and broadcasts the leading (batch) axes; a 1-D ``a`` is a row vector and a 1-D
``b`` a column vector, and that axis is dropped from the result.

``einsum(data, equation)`` is Relay's Einstein summation over a tuple of
tensors of one dtype, with numpy's equation syntax: letters (case-sensitive),
``...`` for broadcast axes, an optional ``-> output``; without one the output
is the ellipsis axes, then the letters used exactly once in ASCII order
(uppercase first). A letter names axes of the same size everywhere (no
broadcasting of a size-1 axis, which ONNX runtimes refuse).

``linalg.det`` is the determinant of each square matrix in the last two axes
(``numpy.linalg.det``; the determinant of a 0x0 matrix is 1). Relay has no
such op; it is here because ONNX has (Det) and no decomposition into the
other ops is exact.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..ir.attrs import Attrs
from ..ir.nodes import Call
from ..ir.op import AttrField, OpPattern, attr_str
from ..ir.types import TensorType, Type
from ._common import (
    FLOAT_DTYPES,
    NUMERIC_DTYPES,
    accumulate_dtype,
    as_tuple_expr,
    broadcast_shapes,
    check_dtype,
    check_same_dtype,
    dims_may_agree,
    make_call,
    match_dims,
    register,
    result,
    tensor_arg,
    tuple_fields,
)

__all__ = ["matmul", "einsum", "det", "einsum_terms"]


def _matmul_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    a = tensor_arg(arg_types[0], "matmul", "a")
    b = tensor_arg(arg_types[1], "matmul", "b")
    dtype = check_same_dtype("matmul", ("a", a), ("b", b))
    check_dtype(a, NUMERIC_DTYPES, "matmul", "a")
    for name, ty in (("a", a), ("b", b)):
        if ty.ndim == 0:
            raise ValueError(f"matmul: {name} must have at least 1 dimension, got {ty}")
    a_shape = a.shape if a.ndim > 1 else (1, *a.shape)
    b_shape = b.shape if b.ndim > 1 else (*b.shape, 1)
    if not dims_may_agree(a_shape[-1], b_shape[-2]):
        raise ValueError(
            f"matmul: the inner dimensions differ: a {a} has {a_shape[-1]} columns but "
            f"b {b} has {b_shape[-2]} rows"
        )
    batch = broadcast_shapes("matmul", ("a batch", a_shape[:-2]), ("b batch", b_shape[:-2]))
    rows = (a_shape[-2],) if a.ndim > 1 else ()
    cols = (b_shape[-1],) if b.ndim > 1 else ()
    return TensorType(batch + rows + cols, dtype)


def _matmul_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    a, b = args
    wide = accumulate_dtype(a.dtype.name)
    out = np.matmul(a.astype(wide, copy=False), b.astype(wide, copy=False))
    return result(out, a.dtype)


register(
    "matmul",
    num_inputs=2,
    type_rel=_matmul_rel,
    kernel=_matmul_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Matrix product of the last two axes with broadcast batch axes (numpy.matmul).",
)


def matmul(a: Any, b: Any) -> Call:
    """``a @ b`` with numpy's rules (ONNX MatMul): batch axes broadcast, 1-D operands
    are promoted to a matrix and the added axis is dropped again."""
    return make_call("matmul", [a, b], ["a", "b"])


# -- einsum ------------------------------------------------------------------------------------

_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _split_term(term: str, where: str) -> tuple[str, str, bool]:
    """A term as (letters before ``...``, letters after, whether it has one)."""
    head, dots, tail = term.partition("...")
    if "..." in tail or "." in head + tail:
        raise ValueError(f"{where}: {term!r} has a '.' that is not part of one '...'")
    bad = sorted(set(head + tail) - _LETTERS)
    if bad:
        raise ValueError(f"{where}: {term!r} has {bad[0]!r}; subscripts are letters a-z, A-Z")
    return head, tail, bool(dots)


@functools.lru_cache(maxsize=256)
def einsum_terms(
    equation: str, shapes: tuple[tuple[int, ...], ...]
) -> tuple[str, tuple[int, ...]]:
    """The explicit equation (``...`` spelled out as letters, an output term always) and the
    output shape of ``einsum`` on operands of ``shapes``; ``ValueError`` naming what does
    not fit."""
    where = f"einsum: equation {equation!r}"
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    if "->" in rhs:
        raise ValueError(f"{where} has more than one '->'")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"{where} has {len(terms)} input terms for {len(shapes)} operands")
    used = set(lhs) & _LETTERS
    spare = iter(sorted(_LETTERS - used - set(rhs)))
    sizes: dict[str, int] = {}
    ellipsis: tuple[int, ...] | None = None
    ell_letters: list[str] = []
    explicit_in = []
    for k, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        head, tail, dots = _split_term(term, where)
        named = len(head) + len(tail)
        if (named > len(shape)) or (not dots and named != len(shape)):
            raise ValueError(
                f"{where}: term {term!r} names {named} axes but operand {k} has shape {shape}"
            )
        extra = shape[len(head) : len(shape) - len(tail)] if dots else ()
        if dots:
            if ellipsis is not None:
                extra_of = (f"'...' of operand {k}", extra)
                ellipsis = broadcast_shapes("einsum", ("'...' before", ellipsis), extra_of)
            else:
                ellipsis = extra
            while len(ell_letters) < len(extra):
                letter = next(spare, None)
                if letter is None:
                    raise ValueError(f"{where} needs more than 52 distinct subscripts")
                ell_letters.insert(0, letter)
        for letter, d in zip(head + "." * len(extra) + tail, shape, strict=True):
            if letter == ".":
                continue
            seen = sizes.setdefault(letter, d)
            if seen != d:
                if not dims_may_agree(seen, d):
                    raise ValueError(
                        f"{where}: subscript {letter!r} has size {sizes[letter]} and {d} "
                        f"(operand {k} of shape {shape})"
                    )
                # symbolic: assumed equal (the run time checks), a static size kept
                sizes[letter] = match_dims("einsum", f"the sizes of subscript {letter!r}", seen, d)
        ell = "".join(ell_letters[len(ell_letters) - len(extra) :])
        explicit_in.append(head + ell + tail)
    for letter, d in zip(ell_letters, ellipsis or (), strict=True):
        sizes[letter] = d
    if arrow:
        head, tail, dots = _split_term(rhs, where)
        if dots and ellipsis is None:
            raise ValueError(f"{where}: the output has '...' but no input has")
        if ellipsis is not None and not dots and ellipsis:
            raise ValueError(f"{where}: the inputs have '...' axes the output must keep "
                             "(add '...' to the output)")
        out = head + ("".join(ell_letters) if dots else "") + tail
        for letter in head + tail:
            if letter not in used:
                raise ValueError(f"{where}: output subscript {letter!r} is in no input")
        if len(set(head + tail)) != len(head + tail):
            raise ValueError(f"{where}: the output names a subscript twice")
    else:
        counts: dict[str, int] = {}
        for letter in lhs:
            if letter in _LETTERS:
                counts[letter] = counts.get(letter, 0) + 1
        out = "".join(ell_letters) + "".join(sorted(c for c, n in counts.items() if n == 1))
    return ",".join(explicit_in) + "->" + out, tuple(sizes[c] for c in out)


def _einsum_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    fields = tuple_fields(arg_types[0], "einsum", "data")
    if not fields:
        raise ValueError("einsum: data must hold at least one tensor")
    dtype = check_same_dtype("einsum", *((f"data[{i}]", f) for i, f in enumerate(fields)))
    check_dtype(fields[0], NUMERIC_DTYPES, "einsum", "data[0]")
    _, shape = einsum_terms(attrs["equation"], tuple(f.shape for f in fields))
    return TensorType(shape, dtype)


def _einsum_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    arrays = args[0]
    dtype = arrays[0].dtype
    equation, _ = einsum_terms(attrs["equation"], tuple(a.shape for a in arrays))
    wide = accumulate_dtype(dtype.name)
    out = np.einsum(equation, *(a.astype(wide, copy=False) for a in arrays))
    return result(out, dtype)


register(
    "einsum",
    num_inputs=1,
    type_rel=_einsum_rel,
    kernel=_einsum_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    attrs=(AttrField("equation", attr_str, doc="The Einstein summation, numpy's syntax."),),
    doc="Einstein summation of a tuple of tensors by ``equation`` (numpy.einsum).",
)


def einsum(data: Any, equation: str) -> Call:
    """The Einstein summation ``equation`` of the tensors ``data`` (a list or a tuple
    expression), e.g. ``einsum([a, b], "ij,jk->ik")`` is a matrix product."""
    return make_call("einsum", [as_tuple_expr(data, "einsum")], ["data"], equation=equation)


# -- det ---------------------------------------------------------------------------------------


def _det_rel(arg_types: tuple[Type, ...], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types[0], "linalg.det", "data")
    check_dtype(data, FLOAT_DTYPES, "linalg.det", "data")
    if data.ndim < 2 or not dims_may_agree(data.shape[-1], data.shape[-2]):
        raise ValueError(
            f"linalg.det: data must be square matrices in its last two axes, got {data}"
        )
    return TensorType(data.shape[:-2], data.dtype)


def _det_kernel(args: tuple, attrs: Attrs) -> np.ndarray:
    x = args[0]
    return result(np.linalg.det(x.astype(accumulate_dtype(x.dtype.name), copy=False)), x.dtype)


register(
    "linalg.det",
    num_inputs=1,
    type_rel=_det_rel,
    kernel=_det_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Determinant of each square matrix in the last two axes (numpy.linalg.det).",
)


def det(data: Any) -> Call:
    """The determinant of each matrix in the last two axes of ``data`` (a float tensor of
    shape ``(..., M, M)``); the result has shape ``(...)``."""
    return make_call("linalg.det", [data], ["data"])
