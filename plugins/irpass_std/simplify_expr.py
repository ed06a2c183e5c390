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
* ``cast`` to the dtype ``x`` already has becomes ``x``;
* ``concatenate`` of a one-tensor tuple becomes that tensor.

Like TVM's ``SimplifyExpr`` (``relay.transform.SimplifyExpr``) the pass works
on the dataflow graph and never looks through ``let``-bound variables.

Algorithm. One :class:`~irpass.ir.ExprMutator` walk rebuilds the function
bottom-up (iteratively, memoized by node identity, so a shared node is
simplified once and stays shared). When a call is rebuilt its arguments are
already in normal form; the rules of its op are applied at that node, and
whatever a rule builds is simplified again at the same spot before the parent
sees it. Every rule removes at least one op call or turns ``0 - x`` into a
``negative``, so this local loop runs a bounded number of times per node: the
result is a fixed point (``reshape(reshape(reshape(x)))`` back to ``x``'s shape
becomes ``x``, ``x * 1 + 0`` becomes ``x``) in time linear in the size of the
function, without re-running whole-function passes.

Types: the pass requires ``InferType``, so every input node carries its
``checked_type``. A rewrite keeps the type of the node it replaces, so the
type of each new node is known when it is built and kept in a side table; no
rule reads ``checked_type`` of a node the pass made.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from irpass.ir import (
    Call,
    Constant,
    Expr,
    ExprMutator,
    Function,
    GlobalVar,
    IRModule,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    Type,
    Var,
    infer_type,
)
from irpass.ir.gcpause import gc_paused
from irpass.transform import ConfigOption, PassContext, function_pass

__all__ = ["CONFIG_OPTIONS", "FINITE_MATH", "SimplifyExpr"]

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
    typed = _typed(func, mod)
    # The walk allocates many long-lived, acyclic nodes: the cyclic GC would only rescan them.
    with gc_paused():
        out = _Simplifier(bool(finite_math)).visit(typed)
    return func if out is typed else out


def _typed(func: Function, mod: IRModule) -> Function:
    """``func`` with types: as is after InferType, else inferred here (a retyped copy maybe)."""
    try:
        func.checked_type  # noqa: B018 - probing the cache
    except ValueError:
        return infer_type(func, mod)
    return func


# -- side effects -------------------------------------------------------------------------------


class Effects:
    """Whether evaluating an expression may have a side effect, memoized over one program.

    An expression has effects when it calls a ``stateful`` op, or calls a
    function that is not a literal ``Function`` whose body is effect-free
    (a global function or a closure held in a var is assumed to have effects).
    Building a closure has none. A rewrite that would drop the evaluation of an
    expression asks this first. Iterative and memoized: linear over all queries.
    """

    def __init__(self) -> None:
        self.memo: dict[Expr, bool] = {}

    def __call__(self, root: Expr) -> bool:
        """True if evaluating ``root`` may have a side effect."""
        memo = self.memo
        found = memo.get(root)
        if found is not None:
            return found
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if node in memo:
                continue
            t = type(node)
            if t in _EFFECT_FREE_LEAVES:
                memo[node] = False
                continue
            if t is Call and type(node.op) is not Op:
                # Calling a function runs its body; only a literal one can be inspected.
                callee = node.op
                parts = (callee.body, *node.args) if type(callee) is Function else node.args
            elif t is Call:
                parts = node.args
            else:  # Tuple, TupleGetItem, Let, If
                parts = node.children()
            if not ready:
                stack.append((node, True))
                stack.extend((p, False) for p in parts if p not in memo)
                continue
            if t is Call:
                callee = node.op
                if type(callee) is Op:
                    own = callee.stateful
                else:
                    own = type(callee) is not Function
            else:
                own = False
            memo[node] = own or any(memo[p] for p in parts)
        return memo[root]


# Nodes whose evaluation does nothing but produce a value (a Function builds a closure).
_EFFECT_FREE_LEAVES = frozenset({Var, GlobalVar, Constant, Op, Function})


# -- the rewriting walk -------------------------------------------------------------------------


class _Simplifier(ExprMutator):
    """The bottom-up walk; ``_RULES`` maps an op name to its rule."""

    def __init__(self, finite_math: bool) -> None:
        self.finite_math = finite_math
        # The type of each node this pass built (input nodes carry checked_type).
        self.types: dict[Expr, Type] = {}
        self.effects = Effects()
        # Constants and creation calls -> the one value all their elements hold, or None.
        self._fills: dict[Expr, object] = {}

    def type_of(self, expr: Expr) -> Type:
        """The type of an input node or of a node the pass built."""
        t = self.types.get(expr)
        return t if t is not None else expr.checked_type

    def make(self, name: str, args: list[Expr], attrs: dict | None, ty: Type) -> Call:
        """A new call of op ``name`` whose type is ``ty`` (recorded for later rules)."""
        node = Call(Op.get(name), args, attrs)
        self.types[node] = ty
        return node

    def visit_call(self, call: Call) -> Expr:
        get = self.memo.get
        op = call.op
        args = call.args
        # The arguments are memoized already (post-order walk); visit() covers the rest.
        new_args = tuple([get(a) or self.visit(a) for a in args])
        if type(op) is not Op:
            new_op = get(op) or self.visit(op)
            if new_op is op and new_args == args:
                return call
            return Call(new_op, new_args)
        if new_args == args:
            new = call
        else:
            # Passing the attrs of an op without attributes as None skips their re-check.
            new = Call(op, new_args, call.attrs if op.attr_fields else None)
            # A rewritten argument has its original's type: record it for the rules.
            types = self.types
            types[new] = call.checked_type
            for old, arg in zip(args, new_args, strict=True):
                if arg is not old:
                    types[arg] = old.checked_type
        rule = _RULES.get(op.name)
        if rule is None:
            return new
        # Apply rules at this spot until none fires: each removes an op call (or
        # trades `0 - x` for a negative), so this loop is short.
        node: Expr = new
        while True:
            out = rule(self, node)
            if out is None:
                return node
            node = out
            if type(node) is not Call or type(node.op) is not Op:
                return node
            rule = _RULES.get(node.op.name)
            if rule is None:
                return node

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
    return _neutral_operand(s, call, 0, (1, 0))


def _subtract(s: _Simplifier, call: Call) -> Expr | None:
    keep = _neutral_operand(s, call, 0, (1,))
    if keep is not None:
        return keep
    x = call.args[1]
    ty = s.type_of(call)
    if s.fill(call.args[0]) == 0 and s.type_of(x) == ty:
        return s.make("negative", [x], None, ty)
    return None


def _multiply(s: _Simplifier, call: Call) -> Expr | None:
    keep = _neutral_operand(s, call, 1, (1, 0))
    if keep is not None or not s.finite_math:
        return keep
    ty = s.type_of(call)
    for zero, other in ((1, 0), (0, 1)):
        z = call.args[zero]
        if s.fill(z) == 0 and not s.effects(call.args[other]):
            if s.type_of(z) == ty:
                return z
            assert isinstance(ty, TensorType)
            return s.make("zeros", [], {"shape": ty.shape, "dtype": ty.dtype}, ty)
    return None


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


def _concatenate(s: _Simplifier, call: Call) -> Expr | None:
    data = call.args[0]
    if type(data) is Tuple:
        return data.fields[0] if len(data.fields) == 1 else None
    if len(s.type_of(data).fields) != 1:
        return None
    item = TupleGetItem(data, 0)
    s.types[item] = s.type_of(call)
    return item


_RULES: dict[str, Rule] = {
    "add": _add,
    "subtract": _subtract,
    "multiply": _multiply,
    "divide": _divide,
    "negative": _negative,
    "transpose": _transpose,
    "layout_transform": _layout_transform,
    "cast": _cast,
    "concatenate": _concatenate,
    **{name: _reshape_like for name in _RESHAPE_LIKE},
}
