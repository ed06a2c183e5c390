"""SimplifyInference: lower the training-shaped ops to plain arithmetic for inference.

Rewrites, as TVM's ``SimplifyInference`` does:

* ``nn.batch_norm(x, gamma, beta, mean, var)`` (the core's op returns the
  3-tuple ``(out, mean, var)``; ``out`` normalizes with the moving statistics)
  becomes ``x * scale + shift`` with the per-channel vectors
  ``scale = gamma / sqrt(var + epsilon)`` and ``shift = beta - mean * scale``
  (``gamma`` taken as 1 when ``scale=False``, ``beta`` as 0 when
  ``center=False``). When the vectors it needs are constants, ``scale`` and
  ``shift`` are computed here (in float64, then rounded to the data dtype) and
  stored as constants; otherwise the arithmetic is built from ops. Either way
  they are shaped ``(C, 1, ..., 1)`` to broadcast along ``axis`` (for NCHW,
  ``axis=1``: ``(C, 1, 1)``; for the last axis, as in NHWC, the ``(C,)`` vector
  broadcasts as is). ``bn[0]`` becomes the arithmetic itself; any other use
  of the call sees the tuple ``(x * scale + shift, mean, var)``;
* ``nn.dropout(x)`` becomes ``x`` (the core's dropout is the inference-mode
  identity with the input's type, not Relay's ``(out, mask)`` tuple);
* ``nn.layer_norm`` is decomposed into ``mean``, ``subtract``, ``multiply``,
  ``sqrt``, ``divide`` (then ``* gamma`` and ``+ beta``) only when the config
  option ``std.SimplifyInference.decompose_layer_norm`` is set; by default it
  is left alone, since a fused layer_norm kernel is usually faster.

A rewrite that would no longer evaluate an argument (``gamma`` with
``scale=False``, ``beta`` with ``center=False``) is skipped when that argument
may have side effects, so no stateful call is dropped.

One :class:`~irpass.ir.ExprMutator` walk (iterative, memoized by node
identity): linear in the size of the function; a function without any of the
ops above is returned after a quick read-only scan, without the walk. Needs
types (``InferType``) for the shape, dtype and channel axis of the data.
"""

from __future__ import annotations

import numpy as np
from irpass import op
from irpass.ir import (
    Attrs,
    Call,
    Constant,
    Expr,
    ExprMutator,
    Function,
    IRModule,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    const,
)
from irpass.ir.gcpause import gc_paused
from irpass.transform import ConfigOption, PassContext, function_pass
from irpass.transform.context import RewriteCounter

from .infer_type import typed_function
from .options import options_of
from .scan import reaches_op_call
from .simplify_expr import may_have_effects

__all__ = ["CONFIG_OPTIONS", "DECOMPOSE_LAYER_NORM", "SimplifyInference"]

#: Config key: also decompose ``nn.layer_norm`` into elementwise ops and reductions.
DECOMPOSE_LAYER_NORM = "std.SimplifyInference.decompose_layer_norm"

# declared in options.py (registered with the plugin, before any pass is imported)
CONFIG_OPTIONS: list[ConfigOption] = options_of("SimplifyInference")


@function_pass(opt_level=0, name="SimplifyInference", required=["InferType"])
def SimplifyInference(func: Function, mod: IRModule, ctx: PassContext) -> Function:
    """Lower ``nn.batch_norm``, ``nn.dropout`` (and optionally ``nn.layer_norm``) in ``func``.

    Returns ``func`` itself when it holds none of them.
    """
    decompose = bool(ctx.config.get(DECOMPOSE_LAYER_NORM, False))
    typed = typed_function(func, mod)
    if not reaches_op_call(typed, _LOWERED_WITH_LAYER_NORM if decompose else _LOWERED):
        return func  # none of the ops it lowers: the walk would rebuild nothing
    with gc_paused():  # many new acyclic nodes: nothing for the cyclic GC to collect
        out = _InferenceSimplifier(decompose, ctx.rewrite_counter()).visit(typed)
    return func if out is typed else out


_visit_call = ExprMutator.visit_call

# The ops the pass rewrites (nn.layer_norm only under DECOMPOSE_LAYER_NORM).
_LOWERED = frozenset({"nn.batch_norm", "nn.dropout"})
_LOWERED_WITH_LAYER_NORM = _LOWERED | {"nn.layer_norm"}


class _InferenceSimplifier(ExprMutator):
    def __init__(self, decompose_layer_norm: bool, counter: RewriteCounter | None = None) -> None:
        self.decompose_layer_norm = decompose_layer_norm
        self.counter = counter  # asked before each rewrite (None: no debug counter)
        self.effects = may_have_effects()
        # The tuple each rewritten batch_norm became -> its field 0 (the normalized data).
        self.bn_outputs: dict[Expr, Expr] = {}

    def visit_call(self, call: Call) -> Expr:
        new = _visit_call(self, call)
        callee = call.op
        if type(callee) is not Op or callee.name not in _LOWERED_WITH_LAYER_NORM:
            return new  # most calls: just rebuilt (or not) by the base class
        name = callee.name
        if name == "nn.dropout":
            return new.args[0] if self._allowed("remove nn.dropout") else new
        if name == "nn.batch_norm":
            return self._batch_norm(call, new)
        if name == "nn.layer_norm" and self.decompose_layer_norm:
            return self._layer_norm(call, new)
        return new

    def _allowed(self, site: str) -> bool:
        """Whether the debug counter lets the next rewrite through (always without one)."""
        return self.counter is None or self.counter(site)

    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        value = self.visit(item.tuple_value)
        if item.index == 0:
            out = self.bn_outputs.get(value)
            if out is not None:
                return out
        if value is item.tuple_value:
            return item
        return TupleGetItem(value, item.index)

    def _droppable(self, call: Call, unused: list[int]) -> bool:
        """Whether the rewrite may stop evaluating the arguments at ``unused``."""
        return not any(self.effects(call.args[i]) for i in unused)

    def _batch_norm(self, call: Call, new: Call) -> Expr:
        attrs = call.attrs
        unused = ([] if attrs["scale"] else [1]) + ([] if attrs["center"] else [2])
        if not self._droppable(new, unused) or not self._allowed("lower nn.batch_norm"):
            return new
        data, gamma, beta, mean, var = new.args
        dty = call.args[0].checked_type
        assert isinstance(dty, TensorType)
        axis = attrs["axis"] % dty.ndim
        # (C, 1, ..., 1): broadcasts against data along `axis` (leading dims need no 1s);
        # C as -1: the statistics' own length, also when data's channel dim is symbolic.
        vshape = (-1,) + (1,) * (dty.ndim - 1 - axis)
        needed = [mean, var]
        needed += [gamma] if attrs["scale"] else []
        needed += [beta] if attrs["center"] else []
        if all(type(v) is Constant for v in needed):
            scale, shift = _bn_constants(gamma, beta, mean, var, attrs, dty.dtype)
            scale_e: Expr = const(scale.reshape(vshape))
            shift_e: Expr = const(shift.reshape(vshape))
        else:
            eps = const(np.array(attrs["epsilon"], dtype=dty.dtype))
            std = op.sqrt(op.add(var, eps))
            one = const(np.array(1, dtype=dty.dtype))
            scale_v = op.divide(gamma if attrs["scale"] else one, std)
            mean_scaled = op.multiply(mean, scale_v)
            if attrs["center"]:
                shift_v = op.subtract(beta, mean_scaled)
            else:
                shift_v = op.negative(mean_scaled)
            scale_e = _along(scale_v, len(vshape))
            shift_e = _along(shift_v, len(vshape))
        out = op.add(op.multiply(data, scale_e), shift_e)
        tup = Tuple([out, mean, var])
        self.bn_outputs[tup] = out
        return tup

    def _layer_norm(self, call: Call, new: Call) -> Expr:
        attrs = call.attrs
        unused = ([] if attrs["scale"] else [1]) + ([] if attrs["center"] else [2])
        if not self._droppable(new, unused) or not self._allowed("decompose nn.layer_norm"):
            return new
        data, gamma, beta = new.args
        dty = call.args[0].checked_type
        assert isinstance(dty, TensorType)
        axis = attrs["axis"] % dty.ndim
        rank = dty.ndim - axis  # gamma/beta as (C, 1, ..., 1): `rank` dims
        mean = op.mean(data, axis=[axis], keepdims=True)
        centered = op.subtract(data, mean)
        var = op.mean(op.multiply(centered, centered), axis=[axis], keepdims=True)
        eps = const(np.array(attrs["epsilon"], dtype=dty.dtype))
        out = op.divide(centered, op.sqrt(op.add(var, eps)))
        if attrs["scale"]:
            out = op.multiply(out, _along(gamma, rank))
        if attrs["center"]:
            out = op.add(out, _along(beta, rank))
        return out


def _bn_constants(
    gamma: Expr, beta: Expr, mean: Expr, var: Expr, attrs: Attrs, dtype: str
) -> tuple[np.ndarray, np.ndarray]:
    """The per-channel ``(scale, shift)`` of a batch_norm with constant statistics."""
    mean_v = mean.data.astype(np.float64)
    with np.errstate(all="ignore"):  # a negative variance gives nan, as the kernel does
        std = np.sqrt(var.data.astype(np.float64) + attrs["epsilon"])
        scale = (gamma.data.astype(np.float64) if attrs["scale"] else 1.0) / std
        shift = (beta.data.astype(np.float64) if attrs["center"] else 0.0) - mean_v * scale
    return scale.astype(dtype), shift.astype(dtype)


def _along(vec: Expr, rank: int) -> Expr:
    """A ``(C,)`` vector shaped ``(C, 1, ..., 1)`` with ``rank`` dims in all."""
    if rank <= 1:
        return vec
    if type(vec) is Constant:
        return const(vec.data.reshape((vec.data.shape[0],) + (1,) * (rank - 1)))
    return op.expand_dims(vec, axis=1, num_newaxis=rank - 1)
