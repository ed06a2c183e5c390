"""SimplifyExpr: algebraic and shape simplifications, to a fixed point in one walk.

The rules (each fires only when the result has exactly the type of the call it
replaces, so a rewrite never changes a shape or a dtype):

* identities of arithmetic: ``x + 0``, ``0 + x``, ``x - 0``, ``x * 1``,
  ``1 * x``, ``x / 1`` become ``x``, and ``0 - x`` becomes ``negative(x)``. The
  "0" and "1" are constants whose elements all hold that value, of any shape
  that broadcasts into ``x``'s, or the creation ops ``zeros``/``ones`` (also
  ``full`` of a constant and ``zeros_like``/``ones_like``). A constant that
  would broadcast ``x`` to a bigger shape keeps its call;
* ``x * 0`` and ``0 * x`` become zeros of the result type, only under the
  config option ``std.SimplifyExpr.finite_math`` (it is wrong when ``x`` holds
  an inf or a nan) and only when ``x`` has no side effects;
* ``negative(negative(x))`` becomes ``x``;
* the reshape-like ops (``reshape``, ``reverse_reshape``, ``squeeze``,
  ``expand_dims``) only regroup the row-major element sequence, so a
  reshape-like op whose result has the input's shape is the identity (this
  removes ``reshape`` to the same shape and ``squeeze`` of the axes an
  ``expand_dims`` added), and two consecutive ones become one ``reshape`` to
  the final (static) shape;
* ``transpose(transpose(x, p), q)`` becomes one transpose by the composed
  permutation, or ``x`` when that is the identity (``axes=None`` reverses
  the axes); a transpose by the identity permutation is removed. Likewise a
  ``layout_transform`` from a layout to itself, and two back-to-back layout
  transforms ``A -> B -> C`` become ``A -> C`` (removed when ``C`` is ``A``);
* a reshape-like op of a constant becomes the constant with the new shape (a
  view of the same data: ``expand_dims`` of a weight vector, as ONNX importers
  emit for ``Unsqueeze``, is a constant the rules below and FoldScaleAxis see);
* ``cast`` to the dtype ``x`` already has becomes ``x``, and ``broadcast_to`` the
  shape ``x`` already has becomes ``x``;
* ``concatenate`` of a one-tensor tuple becomes that tensor;
* two consecutive affine ops with constants (``add``, ``subtract`` of a
  constant, ``multiply``, ``nn.bias_add``; TVM's ``SimplifyConsecutiveAdd``
  and friends) merge when the inner one has no other user:
  ``(x + c1) + c2 -> x + (c1 + c2)``, ``(x * c1) * c2 -> x * (c1 * c2)`` and
  ``(x + c1) * c2 -> x * c2 + c1 * c2``; ``x * c + d`` is the normal form. A
  batch norm lowered by SimplifyInference followed by a per-channel ``Mul``
  and ``Add`` (caffe2-exported ONNX models) thus becomes one multiply and one
  add, and a scale after a conv2d moves next to it, where FoldScaleAxis folds
  it into the weights. The merged constant is computed here (float64 for
  floats, rounded once; integers wrap as the ops do); the rule does not fire
  when it would hold more elements than the bigger operand, or any inf or nan
  (which is the case whenever an operand holds one). Merged adds stay a ``nn.bias_add``
  when one of them was and the sum runs along its axis. ``bias_add`` of zeros
  becomes ``x``.

"Single use" counts the users in the input function plus those of the
nodes a rewrite replaced (``x + 0 -> x`` gives ``x`` the users of the add)
minus the references that went with a replaced node, so a rewrite earlier in
the same walk does not block one later; a chain of such merges runs in one
walk, and the result is a fixed point.

Like TVM's ``SimplifyExpr`` (``relay.transform.SimplifyExpr``) the pass works
on the dataflow graph and never looks through ``let``-bound variables.

Algorithm. A quick read-only scan first looks for a call some rule could fire
on as it is (an ``add`` or ``multiply`` needs a constant or creation-op
operand, a ``negative`` a negative operand, ...); if there is none, no rule
fires anywhere and the function is returned as it is. Otherwise one
:class:`~irpass.ir.ExprMutator` walk rebuilds the function
bottom-up (iteratively, memoized by node identity, so a shared node is
simplified once and stays shared). When a call is rebuilt its arguments are
already in normal form; the rules of its op are applied at that node, and
whatever a rule builds is simplified again at the same spot before the parent
sees it. Every rule removes at least one op call, turns ``0 - x`` into a
``negative`` or moves a constant multiply below a constant add (which a
multiply never moves back over), so this local loop runs a bounded number of
times per node: the result is a fixed point
(``reshape(reshape(reshape(x)))`` back to ``x``'s shape
becomes ``x``, ``x * 1 + 0`` becomes ``x``) in time linear in the size of the
function, without re-running whole-function passes.

Types: the pass requires ``InferType``, so every input node carries its
``checked_type``. A rewrite keeps the type of the node it replaces, so the
type of each new node is known when it is built and kept in a side table; no
rule reads ``checked_type`` of a node the pass made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from irpass.ir import (
    Call,
    Constant,
    Expr,
    ExprMutator,
    Function,
    GlobalVar,
    IRModule,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    Type,
    Var,
)
from irpass.ir.gcpause import gc_paused
from irpass.transform import ConfigOption, PassContext, function_pass

from .effects import Callees, EffectAnalysis
from .infer_type import typed_function
from .scan import reaches_op_call

__all__ = ["CONFIG_OPTIONS", "FINITE_MATH", "SimplifyExpr"]

_unchecked_call = Call._unchecked

#: Config key: allow ``x * 0 -> 0`` (wrong when ``x`` holds inf or nan).
FINITE_MATH = "std.SimplifyExpr.finite_math"

CONFIG_OPTIONS: list[ConfigOption] = [
    ConfigOption(
        FINITE_MATH,
        bool,
        False,
        "SimplifyExpr: assume no inf/nan values and rewrite x * 0 to zeros",
    ),
]


@function_pass(opt_level=0, name="SimplifyExpr", required=["InferType"])
def SimplifyExpr(func: Function, mod: IRModule, ctx: PassContext) -> Function:
    """Simplify the algebraic and shape identities of ``func`` (see the module docstring).

    Returns ``func`` itself when no rule fired.
    """
    finite_math = ctx.config.get(FINITE_MATH, False)
    typed = typed_function(func, mod)
    if not reaches_op_call(typed, _RULES, _may_fire):
        return func  # no rule can fire anywhere: the walk would rebuild nothing
    # The walk allocates many long-lived, acyclic nodes: the cyclic GC would only rescan them.
    with gc_paused():
        simplifier = _Simplifier(bool(finite_math))
        simplifier.root = typed
        out = simplifier.visit(typed)
        del simplifier  # its memo dies inside the pause (see gc_paused)
    return func if out is typed else out


# -- side effects -------------------------------------------------------------------------------


def may_have_effects() -> Callable[[Expr], bool]:
    """A fresh, memoized "may evaluating this expression have a side effect?" for one program.

    The shared analysis of :mod:`.effects`, looking into function literals only: an
    expression has effects when it calls a ``stateful`` op, or calls a function that
    is not a literal ``Function`` whose body is effect-free (a global function or a
    closure held in a var is assumed to have effects). A rewrite that would drop the
    evaluation of an expression asks this first.
    """
    return EffectAnalysis(None, Callees.LITERALS).may_have_effects


# Nodes whose evaluation does nothing but produce a value (a Function builds a closure).
_EFFECT_FREE_LEAVES = frozenset({Var, GlobalVar, Constant, Op, Function})


def _use_counts(root: Expr) -> dict[Expr, int]:
    """How many references each node under ``root`` has from its parents (each parent once;
    a let's and a function's binders are no uses). Iterative, linear."""
    uses: dict[Expr, int] = {}
    get = uses.get
    seen: set[Expr] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        t = type(node)
        if t is Call:
            parts = node.args if type(node.op) is Op else (node.op, *node.args)
        elif t is Let:
            parts = (node.value, node.body)
        elif t is Function:
            parts = (node.body,)
        elif t in _EFFECT_FREE_LEAVES:
            continue
        else:  # Tuple, TupleGetItem, If
            parts = node.children()
        for part in parts:
            uses[part] = get(part, 0) + 1
            if part not in seen:
                stack.append(part)
    return uses


# -- the rewriting walk -------------------------------------------------------------------------


class _Simplifier(ExprMutator):
    """The bottom-up walk; ``_RULES`` maps an op name to its rule."""

    def __init__(self, finite_math: bool) -> None:
        self.finite_math = finite_math
        # The type of each node this pass built (input nodes carry checked_type).
        self.types: dict[Expr, Type] = {}
        self.effects = may_have_effects()
        # Constants and creation calls -> the one value all their elements hold, or None.
        self._fills: dict[Expr, object] = {}
        # The function walked, and its use counts (computed when a rule first asks).
        self.root: Expr | None = None
        self._uses: dict[Expr, int] | None = None
        # A node that replaces input nodes -> those nodes (their users are now its users).
        self.origins: dict[Expr, list[Expr]] = {}
        # A node -> how many references to it went away with a node a rule replaced.
        self.dropped: dict[Expr, int] = {}
        # A node -> (how many of its origins are summed, the sum of their use counts).
        self._origin_uses: dict[Expr, tuple[int, int]] = {}

    def type_of(self, expr: Expr) -> Type:
        """The type of an input node or of a node the pass built."""
        t = self.types.get(expr)
        if t is not None:
            return t
        if type(expr) is Constant and expr._checked_type is None:
            t = self.types[expr] = expr.type  # a constant a rule made
            return t
        return expr.checked_type

    def make(self, name: str, args: list[Expr], attrs: dict | None, ty: Type) -> Call:
        """A new call of op ``name`` whose type is ``ty`` (recorded for later rules)."""
        node = Call(Op.get(name), args, attrs)
        self.types[node] = ty
        return node

    def constant(self, data: np.ndarray) -> Constant:
        """A new constant holding ``data`` (:meth:`type_of` reads its type off the data)."""
        return Constant(data)

    def single_use(self, node: Expr) -> bool:
        """Whether at most one user reads ``node``, so a rule may consume it.

        The count is the input function's, plus the users of every input node
        that ``node`` replaces, minus the references that went with a node a rule
        replaced; a node a rule built and nobody took over has the one user that
        rule gave it. Over-counts at worst (a reference from a node that became
        dead further away), which only keeps a rewrite from firing.
        """
        uses = self._uses
        if uses is None:
            assert self.root is not None
            uses = self._uses = _use_counts(self.root)
        count = uses.get(node, 0) - self.dropped.get(node, 0)
        origins = self.origins.get(node)
        if origins:
            # a running sum: a node that replaces many others is asked about many times
            done, total = self._origin_uses.get(node, (0, 0))
            for i in range(done, len(origins)):
                total += uses.get(origins[i], 1)
            self._origin_uses[node] = (len(origins), total)
            count += total
        return count <= 1

    def visit_call(self, call: Call) -> Expr:
        get = self.memo.get
        op = call.op
        args = call.args
        # The arguments are memoized already (post-order walk), so map(get) in C finds
        # them all; visit() covers the rest, in argument order.
        new_args = tuple(map(get, args))
        if None in new_args:
            visit = self.visit
            new_args = tuple([get(a) or visit(a) for a in args])
        if type(op) is not Op:
            new_op = get(op) or self.visit(op)
            if new_op is op and new_args == args:
                return call
            return Call(new_op, new_args)
        if new_args == args:
            if op.name not in _RULES or not _may_fire(call):
                return call  # the common case: nothing to rebuild, no rule to try
            new = call
        else:
            # Same op, arity and (valid) attrs, new args that are expressions: no re-check.
            new = _unchecked_call(op, new_args, call.attrs)
            # A rewritten argument has its original's type: record it for the rules.
            types = self.types
            types[new] = call.checked_type
            for old, arg in zip(args, new_args, strict=True):
                if arg is not old:
                    types[arg] = old.checked_type
        out = self.reduce(new) if op.name in _RULES and _may_fire(new) else new
        if out is not call:
            # the users of `call` now use `out`: remembered for the use counts
            origins = self.origins.get(out)
            if origins is None:
                self.origins[out] = [call]
            else:
                origins.append(call)
        return out

    def reduce(self, node: Expr) -> Expr:
        """``node`` (whose arguments are simplified) with the rules applied at its spot until
        none fires. Each rule removes an op call, trades ``0 - x`` for a negative or moves a
        constant multiply below a constant add, so this loop is short."""
        while type(node) is Call and type(node.op) is Op:
            rule = _RULES.get(node.op.name)
            if rule is None:
                return node
            out = rule(self, node)
            if out is None:
                return node
            self._drop_reference(node, out)
            node = out
        return node

    def _drop_reference(self, node: Call, out: Expr) -> None:
        """``out`` replaces ``node``, which held a reference to it (a rule returned an operand,
        or an operand of a single-use operand): that reference is gone."""
        if out._checked_type is None and out not in self.origins:
            return  # a node a rule just built: its one reference was never counted
        args = node.args
        if any(a is out for a in args):
            self.dropped[out] = self.dropped.get(out, 0) + 1
            return
        for a in args:
            t = type(a)
            if t is Call or t is Tuple or t is TupleGetItem:
                if any(c is out for c in a.children()) and self.single_use(a):
                    self.dropped[out] = self.dropped.get(out, 0) + 1
                    return

    # -- helpers for the rules ----------------------------------------------------------
    def fill(self, expr: Expr) -> object:
        """The value every element of ``expr`` holds if that is known statically, else None.

        Known for constants whose elements are all equal and for the creation
        ops ``zeros``, ``ones``, ``full`` (of a constant) and ``zeros_like`` /
        ``ones_like`` (of an expression without side effects, since a rule
        may drop it).
        """
        t = type(expr)
        if t is not Constant and not (t is Call and type(expr.op) is Op):
            return None
        fills = self._fills
        if expr in fills:
            return fills[expr]
        value = None
        if t is Constant:
            data = expr.data
            if data.size:
                first = data.flat[0]
                if bool((data == first).all()):
                    value = first.item()
        else:
            name = expr.op.name
            if name in ("zeros", "ones"):
                value = 0 if name == "zeros" else 1
            elif name in ("zeros_like", "ones_like") and not self.effects(expr.args[0]):
                value = 0 if name == "zeros_like" else 1
            elif name == "full" and type(expr.args[0]) is Constant:
                # The fill is converted to the result dtype (0.5 fills an int tensor with 0).
                dtype = self.type_of(expr).dtype
                with np.errstate(all="ignore"):
                    value = expr.args[0].data.astype(dtype).item()
        fills[expr] = value
        return value


Rule = Callable[[_Simplifier, Call], "Expr | None"]


def _is_op(expr: Expr, name: str) -> bool:
    return type(expr) is Call and type(expr.op) is Op and expr.op.name == name


def _neutral_operand(
    s: _Simplifier, call: Call, neutral: int, sides: tuple[int, ...]
) -> Expr | None:
    """The operand ``call`` reduces to when the other one (at an index in ``sides``) holds
    only ``neutral`` and the result type is the kept operand's type."""
    ty = s.type_of(call)
    for other in sides:
        keep = call.args[1 - other]
        if s.fill(call.args[other]) == neutral and s.type_of(keep) == ty:
            return keep
    return None


def _add(s: _Simplifier, call: Call) -> Expr | None:
    keep = _neutral_operand(s, call, 0, (1, 0))
    return keep if keep is not None else _affine_chain(s, call)


def _subtract(s: _Simplifier, call: Call) -> Expr | None:
    keep = _neutral_operand(s, call, 0, (1,))
    if keep is not None:
        return keep
    x = call.args[1]
    ty = s.type_of(call)
    if s.fill(call.args[0]) == 0 and s.type_of(x) == ty:
        return s.make("negative", [x], None, ty)
    return _affine_chain(s, call)


def _multiply(s: _Simplifier, call: Call) -> Expr | None:
    keep = _neutral_operand(s, call, 1, (1, 0))
    if keep is not None:
        return keep
    if s.finite_math:
        ty = s.type_of(call)
        for zero, other in ((1, 0), (0, 1)):
            z = call.args[zero]
            if s.fill(z) == 0 and not s.effects(call.args[other]):
                if s.type_of(z) == ty:
                    return z
                assert isinstance(ty, TensorType)
                return s.make("zeros", [], {"shape": ty.shape, "dtype": ty.dtype}, ty)
    return _affine_chain(s, call)


def _bias_add(s: _Simplifier, call: Call) -> Expr | None:
    if s.fill(call.args[1]) == 0:
        return call.args[0]  # bias_add keeps its data's type
    return _affine_chain(s, call)


# -- chains of affine ops with constants ---------------------------------------------------


class _Affine(NamedTuple):
    """A call read as ``x + c`` (kind "add") or ``x * c`` (kind "multiply")."""

    kind: str
    x: Expr
    # the constant, shaped to broadcast against ``x`` as the call does (negated for a
    # subtract, laid along the axis for a bias_add)
    c: np.ndarray
    axis: int | None  # a bias_add's axis, else None


def _constant_side(call: Call) -> int | None:
    """The index of the constant argument of an affine op call (add, subtract, multiply,
    nn.bias_add) whose other argument is not a constant; else None. ``c - x`` is none."""
    name = call.op.name
    if name not in _AFFINE_OPS:
        return None
    lhs, rhs = call.args
    if type(rhs) is Constant:
        return 1 if type(lhs) is not Constant else None
    if type(lhs) is Constant and name in _COMMUTATIVE:
        return 0
    return None


_AFFINE_OPS = frozenset({"add", "subtract", "multiply", "nn.bias_add"})
_COMMUTATIVE = frozenset({"add", "multiply"})


def _affine(s: _Simplifier, call: Call, index: int) -> _Affine | None:
    """``call`` (an affine op call whose argument ``index`` is a constant) as ``x + c`` or
    ``x * c``; None unless the constant holds numbers (an inf or a nan in it shows in the
    merged constant, which the caller checks)."""
    name = call.op.name
    x = call.args[1 - index]
    data = call.args[index].data
    if data.dtype.kind not in "fiu":
        return None
    axis = None
    if name == "nn.bias_add":
        rank = len(s.type_of(x).shape)
        axis = call.attrs["axis"] % rank
        data = data.reshape(data.shape + (1,) * (rank - 1 - axis))
    elif name == "subtract":
        with np.errstate(all="ignore"):  # integers wrap, as the op does
            data = np.asarray(np.negative(data))
    return _Affine("multiply" if name == "multiply" else "add", x, data, axis)


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape numpy broadcasting gives ``a`` and ``b``, or None if they do not broadcast."""
    if len(a) < len(b):
        a, b = b, a
    b = (1,) * (len(a) - len(b)) + tuple(b)
    out = []
    for m, n in zip(a, b, strict=True):
        if m != n and m != 1 and n != 1:
            return None
        out.append(n if m == 1 else m)
    return tuple(out)


def _affine_chain(s: _Simplifier, call: Call) -> Expr | None:
    """Merge two consecutive affine ops with constants, the inner one used only here:

    * ``(x + c1) + c2`` -> ``x + (c1 + c2)``  (``-``, ``nn.bias_add`` alike)
    * ``(x * c1) * c2`` -> ``x * (c1 * c2)``
    * ``(x + c1) * c2`` -> ``x * c2 + c1 * c2``  (the multiply moves next to ``x``, where it
      may merge again, and where FoldScaleAxis finds a conv2d's scale)

    The merged constant is computed here (floats in float64, rounded once) and may not
    hold more elements than the bigger of the two, nor any inf or nan (every element of
    either constant meets one of the other in it: an inf or a nan in an operand shows); the
    result must have the call's type. ``(x * c1) + c2`` is the normal form and stays.
    """
    side = _constant_side(call)
    if side is None:
        return None
    inner_call = call.args[1 - side]
    if type(inner_call) is not Call or type(inner_call.op) is not Op:
        return None
    inner_side = _constant_side(inner_call)
    if inner_side is None:
        return None
    if inner_call.op.name == "multiply" and call.op.name != "multiply":
        return None
    outer = _affine(s, call, side)
    inner = _affine(s, inner_call, inner_side) if outer is not None else None
    if inner is None or not s.single_use(inner_call):
        return None
    ty = s.type_of(call)
    assert isinstance(ty, TensorType)
    c1, c2 = inner.c, outer.c
    wide = np.float64 if c1.dtype.kind == "f" else c1.dtype
    with np.errstate(all="ignore"):  # integers wrap, as the ops do
        a, b = c1.astype(wide), c2.astype(wide)
        merged = np.asarray(a + b if outer.kind == "add" else a * b).astype(ty.dtype)
    if merged.size > max(c1.size, c2.size):
        return None  # the merged constant would be bigger than both operands
    if merged.dtype.kind == "f" and not np.isfinite(merged).all():
        return None
    x = inner.x
    xshape = s.type_of(x).shape
    if inner.kind == outer.kind:
        kind = outer.kind
        shape = _broadcast(xshape, merged.shape)
        scale = None
    else:  # (x + c1) * c2
        kind = "add"
        scale_shape = _broadcast(xshape, c2.shape)
        shape = None if scale_shape is None else _broadcast(scale_shape, merged.shape)
        scale = scale_shape
    if shape != ty.shape:
        return None
    if scale is not None:
        # the outer multiply's own constant: c2 as it is
        product = s.make("multiply", [x, call.args[side]], None, TensorType(scale, ty.dtype))
        x = s.reduce(product)  # it may merge with a multiply below it
    axis = inner.axis if inner.axis is not None else outer.axis
    if kind == "add" and axis is not None and s.type_of(x) == ty:
        vector = _channel_vector(merged, len(ty.shape), axis, ty.shape[axis])
        if vector is not None:
            return s.make("nn.bias_add", [x, s.constant(vector)], {"axis": axis}, ty)
    return s.make(kind, [x, s.constant(merged)], None, ty)


def _channel_vector(c: np.ndarray, rank: int, axis: int, extent: int) -> np.ndarray | None:
    """``c`` as the ``(extent,)`` vector a bias_add along ``axis`` adds, if it varies along
    ``axis`` only (broadcast against a rank-``rank`` tensor), else None."""
    if c.ndim > rank or type(extent) is not int:  # a symbolic extent: no vector of it
        return None
    padded = (1,) * (rank - c.ndim) + c.shape
    if any(d != 1 for j, d in enumerate(padded) if j != axis):
        return None
    return np.broadcast_to(c.reshape(-1), (extent,)) if padded[axis] in (1, extent) else None


def _divide(s: _Simplifier, call: Call) -> Expr | None:
    return _neutral_operand(s, call, 1, (1,))


def _negative(s: _Simplifier, call: Call) -> Expr | None:
    x = call.args[0]
    return x.args[0] if _is_op(x, "negative") else None


_RESHAPE_LIKE = frozenset({"reshape", "reverse_reshape", "squeeze", "expand_dims"})


def _reshape_like(s: _Simplifier, call: Call) -> Expr | None:
    x = call.args[0]
    ty = s.type_of(call)
    if s.type_of(x) == ty:
        return x
    if type(x) is Constant and isinstance(ty, TensorType) and ty.is_static:
        # the same elements under another shape: a view of the constant, no copy
        return s.constant(x.data.reshape(ty.shape))
    if type(x) is Call and type(x.op) is Op and x.op.name in _RESHAPE_LIKE:
        src = x.args[0]
        if s.type_of(src) == ty:
            return src
        assert isinstance(ty, TensorType)
        # A static shape as newshape: 0 would mean "copy the input dimension" unless allowzero.
        attrs = {"newshape": ty.shape, "allowzero": 0 in ty.shape}
        return s.make("reshape", [src], attrs, ty)
    return None


def _permutation(axes: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """The permutation ``transpose(axes=axes)`` applies (None reverses; negatives count back)."""
    if axes is None:
        return tuple(range(ndim - 1, -1, -1))
    return tuple(a % ndim for a in axes)


def _transpose(s: _Simplifier, call: Call) -> Expr | None:
    x = call.args[0]
    ndim = len(s.type_of(x).shape)
    identity = tuple(range(ndim))
    perm = _permutation(call.attrs["axes"], ndim)
    if perm == identity:
        return x
    if not _is_op(x, "transpose"):
        return None
    src = x.args[0]
    inner = _permutation(x.attrs["axes"], ndim)
    # out[i] = x[perm[i]] = src[inner[perm[i]]]
    composed = tuple(inner[p] for p in perm)
    if composed == identity:
        return src
    return s.make("transpose", [src], {"axes": composed}, s.type_of(call))


def _layout_transform(s: _Simplifier, call: Call) -> Expr | None:
    x = call.args[0]
    src, dst = call.attrs["src_layout"], call.attrs["dst_layout"]
    if src == dst:
        return x
    if not _is_op(x, "layout_transform") or x.attrs["dst_layout"] != src:
        return None
    first = x.attrs["src_layout"]
    if first == dst:
        return x.args[0]
    attrs = {"src_layout": first, "dst_layout": dst}
    return s.make("layout_transform", [x.args[0]], attrs, s.type_of(call))


def _cast(s: _Simplifier, call: Call) -> Expr | None:
    x = call.args[0]
    return x if s.type_of(x) == s.type_of(call) else None


def _broadcast_to(s: _Simplifier, call: Call) -> Expr | None:
    # to the shape x already has (``broadcast_to(x, shape=[n, 4])`` of an ``(n, 4)``
    # tensor: symbolic dims compare structurally): nothing to broadcast
    x = call.args[0]
    return x if s.type_of(x) == s.type_of(call) else None


def _concatenate(s: _Simplifier, call: Call) -> Expr | None:
    data = call.args[0]
    if type(data) is Tuple:
        return data.fields[0] if len(data.fields) == 1 else None
    if len(s.type_of(data).fields) != 1:
        return None
    item = TupleGetItem(data, 0)
    s.types[item] = s.type_of(call)
    return item


# The ops whose rules need an operand with a known fill (see ``_Simplifier.fill``) or a
# constant operand (the affine chains): without one, none of them fires.
_ARITHMETIC = frozenset({"add", "subtract", "multiply", "divide", "nn.bias_add"})
# The creation ops ``_Simplifier.fill`` may know the one value of.
_FILL_OPS = frozenset({"zeros", "ones", "zeros_like", "ones_like", "full"})


def _may_fire(call: Call) -> bool:
    """False only if no rule of ``call``'s op can fire on it as it is: a cheap test that
    spares most calls of ``add``/``multiply``/... the rules.

    Those rules need an operand whose fill ``_Simplifier.fill`` may know (it returns
    None for anything but a constant or a creation call) or a constant operand.
    """
    name = call.op.name
    if name in _ARITHMETIC:
        for arg in call.args:
            t = type(arg)
            if t is Constant or (t is Call and type(arg.op) is Op and arg.op.name in _FILL_OPS):
                return True
        return False
    if name == "negative":
        return _is_op(call.args[0], "negative")
    return True


_RULES: dict[str, Rule] = {
    "add": _add,
    "nn.bias_add": _bias_add,
    "subtract": _subtract,
    "multiply": _multiply,
    "divide": _divide,
    "negative": _negative,
    "transpose": _transpose,
    "layout_transform": _layout_transform,
    "cast": _cast,
    "broadcast_to": _broadcast_to,
    "concatenate": _concatenate,
    **{name: _reshape_like for name in _RESHAPE_LIKE},
}
