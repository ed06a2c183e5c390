"""The rules of SimplifyExpr: the rule set ``simplify``, each rule a pattern and a callback.

Each rule is a :class:`~irpass.ir.dataflow_pattern.DFPatternCallback` whose pattern
says which calls it looks at (``add(x, <a constant or a creation op>)``,
``transpose(transpose(x))``, ...) and whose callback decides from the values and types
whether the match becomes something simpler (it returns ``post`` when not). The rules
are written for the greedy walk (:func:`~irpass.ir.dataflow_pattern.rewrite_greedy`),
which SimplifyExpr runs: they read types on ``post`` and its inputs, which that walk
keeps typed, and ask :func:`~irpass.ir.dataflow_pattern.rewrite_context` for

- ``single_use(node)``: an affine merge consumes its inner op only when nothing else
  uses it (the count is the walk's, exact as rewrites replace nodes);
- ``options["std.SimplifyExpr.finite_math"]``: whether ``x * 0`` may become zeros;
- ``cache(...)``: per program, the side-effect analysis (``x * 0`` and the ``*_like``
  creation ops may drop an expression only if it has none) and the memo of the one
  value a constant or creation call holds.

The nodes a callback builds carry their type (``RewriteContext.typed``), which is the
type of the node they replace or, for an inner node, computed here: the walk takes it
as given rather than running the op's type relation.

See ``simplify_expr``'s module docstring (and ``docs/SimplifyExpr.md``) for what each
rule does; the rule names are listed in :data:`RULE_DOCS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from irpass.ir import (
    Call,
    Constant,
    Expr,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    Type,
)
from irpass.ir.dataflow_pattern import (
    DFPattern,
    DFPatternCallback,
    RewriteContext,
    is_constant,
    is_op,
    rewrite_context,
    wildcard,
)
from irpass.transform import Rule, RuleSet

from .effects import Callees, EffectAnalysis

__all__ = ["FINITE_MATH", "RULE_DOCS", "SIMPLIFY", "may_have_effects"]

#: Config key (and option handed to the rules): allow ``x * 0 -> 0``.
FINITE_MATH = "std.SimplifyExpr.finite_math"


def may_have_effects() -> Callable[[Expr], bool]:
    """A fresh, memoized "may evaluating this expression have a side effect?" for one program.

    The shared analysis of :mod:`.effects`, looking into function literals only: an
    expression has effects when it calls a ``stateful`` op, or calls a function that
    is not a literal ``Function`` whose body is effect-free (a global function or a
    closure held in a var is assumed to have effects). A rewrite that would drop the
    evaluation of an expression asks this first.
    """
    return EffectAnalysis(None, Callees.LITERALS).may_have_effects


# -- what the rules share: one per program -------------------------------------------------


class _State:
    """The rules' view of the program being simplified (one per walk, in its context)."""

    __slots__ = ("ctx", "finite_math", "_effects", "_fills")

    def __init__(self, ctx: RewriteContext) -> None:
        self.ctx = ctx
        self.finite_math = bool(ctx.options.get(FINITE_MATH, False))
        self._effects: Callable[[Expr], bool] | None = None
        # Constants and creation calls -> the one value all their elements hold, or None.
        self._fills: dict[Expr, object] = {}

    def type_of(self, expr: Expr) -> Type:
        """The type of a node of the program (the greedy walk keeps every one typed)."""
        return expr._checked_type  # type: ignore[return-value]

    def single_use(self, node: Expr) -> bool:
        """Whether at most one user reads ``node``, so a rule may consume it."""
        return self.ctx.single_use(node)

    def effects(self, expr: Expr) -> bool:
        """Whether evaluating ``expr`` may have a side effect."""
        if self._effects is None:
            self._effects = may_have_effects()
        return self._effects(expr)

    def make(self, name: str, args: list[Expr], attrs: dict | None, ty: Type) -> Call:
        """A new call of op ``name`` whose type is ``ty``."""
        node = Call(Op.get(name), args, attrs)
        self.ctx.typed(node, ty)
        return node

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


def _state() -> _State:
    ctx = rewrite_context()
    assert ctx is not None, "the simplify rules run inside a rewrite driver"
    return ctx.cache("std.simplify", lambda: _State(ctx))


# -- rules: a pattern and a function of the matched call -----------------------------------

Apply = Callable[[_State, Call], "Expr | None"]

_RULES: list[Rule] = []

#: ``rule name -> what it does``, in the order the rules are tried.
RULE_DOCS: dict[str, str] = {}


class _SimplifyRule(DFPatternCallback):
    """A rule of the set: the match (a call, ``post``) becomes what ``apply`` returns."""

    def __init__(self, pattern: DFPattern, apply: Apply) -> None:
        super().__init__()
        self.pattern = pattern
        self.apply = apply

    def callback(self, pre: Expr, post: Expr, node_map: dict) -> Expr:
        out = self.apply(_state(), post)  # type: ignore[arg-type]
        return post if out is None else out


def _rule(name: str, pattern: DFPattern, doc: str) -> Callable[[Apply], Apply]:
    """Add the decorated function as rule ``name`` of ``pattern`` (in definition order:
    earlier rules are tried first at a node)."""

    def add(apply: Apply) -> Apply:
        _RULES.append(Rule(name, _SimplifyRule(pattern, apply), doc))
        RULE_DOCS[name] = doc
        return apply

    return add


# The creation ops ``_State.fill`` may know the one value of.
_FILL_OPS = ("zeros", "ones", "zeros_like", "ones_like", "full")


def _filled() -> DFPattern:
    """A constant or a creation call: an operand whose one value ``fill`` may know."""
    # nested to the right, constants first: the matcher reaches them in one step
    pattern: DFPattern = is_op(_FILL_OPS[-1])(None)
    for name in reversed(_FILL_OPS[:-1]):
        pattern = is_op(name)(None) | pattern
    return is_constant() | pattern


def _neutral_operand(s: _State, call: Call, neutral: int, sides: tuple[int, ...]) -> Expr | None:
    """The operand ``call`` reduces to when the other one (at an index in ``sides``) holds
    only ``neutral`` and the result type is the kept operand's type."""
    ty = s.type_of(call)
    for other in sides:
        keep = call.args[1 - other]
        if s.fill(call.args[other]) == neutral and s.type_of(keep) == ty:
            return keep
    return None


# -- arithmetic identities ----------------------------------------------------------------


@_rule("add_zero", is_op("add")(wildcard(), _filled()), "x + 0 and 0 + x become x")
def _add_zero(s: _State, call: Call) -> Expr | None:
    return _neutral_operand(s, call, 0, (1, 0))


@_rule("subtract_zero", is_op("subtract")(wildcard(), _filled()), "x - 0 becomes x")
def _subtract_zero(s: _State, call: Call) -> Expr | None:
    return _neutral_operand(s, call, 0, (1,))


@_rule("zero_minus", is_op("subtract")(_filled(), wildcard()), "0 - x becomes negative(x)")
def _zero_minus(s: _State, call: Call) -> Expr | None:
    x = call.args[1]
    ty = s.type_of(call)
    if s.fill(call.args[0]) == 0 and s.type_of(x) == ty:
        return s.make("negative", [x], None, ty)
    return None


@_rule("multiply_one", is_op("multiply")(wildcard(), _filled()), "x * 1 and 1 * x become x")
def _multiply_one(s: _State, call: Call) -> Expr | None:
    return _neutral_operand(s, call, 1, (1, 0))


@_rule("multiply_zero", is_op("multiply")(wildcard(), _filled()),
       "x * 0 and 0 * x become zeros (std.SimplifyExpr.finite_math only; x without effects)")
def _multiply_zero(s: _State, call: Call) -> Expr | None:
    if not s.finite_math:
        return None
    ty = s.type_of(call)
    for zero, other in ((1, 0), (0, 1)):
        z = call.args[zero]
        if s.fill(z) == 0 and not s.effects(call.args[other]):
            if s.type_of(z) == ty:
                return z
            assert isinstance(ty, TensorType)
            return s.make("zeros", [], {"shape": ty.shape, "dtype": ty.dtype}, ty)
    return None


@_rule("divide_one", is_op("divide")(wildcard(), _filled()), "x / 1 becomes x")
def _divide_one(s: _State, call: Call) -> Expr | None:
    return _neutral_operand(s, call, 1, (1,))


@_rule("bias_add_zero", is_op("nn.bias_add")(wildcard(), _filled()), "bias_add(x, 0) becomes x")
def _bias_add_zero(s: _State, call: Call) -> Expr | None:
    if s.fill(call.args[1]) == 0:
        return call.args[0]  # bias_add keeps its data's type
    return None


# -- chains of affine ops with constants ---------------------------------------------------


class _Affine(NamedTuple):
    """A call read as ``x + c`` (kind "add") or ``x * c`` (kind "multiply")."""

    kind: str
    x: Expr
    # the constant, shaped to broadcast against ``x`` as the call does (negated for a
    # subtract, laid along the axis for a bias_add)
    c: np.ndarray
    axis: int | None  # a bias_add's axis, else None


_AFFINE_OPS = frozenset({"add", "subtract", "multiply", "nn.bias_add"})
_COMMUTATIVE = frozenset({"add", "multiply"})


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


def _affine(s: _State, call: Call, index: int) -> _Affine | None:
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


def _affine_chain(s: _State, call: Call) -> Expr | None:
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
        # the outer multiply's own constant: c2 as it is; the walk then simplifies this
        # multiply first (it may merge with a multiply below it)
        x = s.make("multiply", [x, call.args[side]], None, TensorType(scale, ty.dtype))
    axis = inner.axis if inner.axis is not None else outer.axis
    if kind == "add" and axis is not None and s.type_of(x) == ty:
        vector = _channel_vector(merged, len(ty.shape), axis, ty.shape[axis])
        if vector is not None:
            return s.make("nn.bias_add", [x, Constant(vector)], {"axis": axis}, ty)
    return s.make(kind, [x, Constant(merged)], None, ty)


def _channel_vector(c: np.ndarray, rank: int, axis: int, extent: int) -> np.ndarray | None:
    """``c`` as the ``(extent,)`` vector a bias_add along ``axis`` adds, if it varies along
    ``axis`` only (broadcast against a rank-``rank`` tensor), else None."""
    if c.ndim > rank or type(extent) is not int:  # a symbolic extent: no vector of it
        return None
    padded = (1,) * (rank - c.ndim) + c.shape
    if any(d != 1 for j, d in enumerate(padded) if j != axis):
        return None
    return np.broadcast_to(c.reshape(-1), (extent,)) if padded[axis] in (1, extent) else None


def _add_like(x: DFPattern, c: DFPattern) -> DFPattern:
    """``x + c``, ``x - c`` or ``bias_add(x, c)`` (``c + x`` too: add patterns commute)."""
    return is_op("add")(x, c) | is_op("subtract")(x, c) | is_op("nn.bias_add")(x, c)


# Three patterns, one callback: the shapes of chain _affine_chain merges.
_rule("merge_adds", _add_like(_add_like(wildcard(), is_constant()), is_constant()),
      "(x + c1) + c2 becomes x + (c1 + c2) (also -, nn.bias_add; the inner op used once)",
      )(_affine_chain)
_rule("merge_multiplies", is_op("multiply")(is_op("multiply")(wildcard(), is_constant()),
                                            is_constant()),
      "(x * c1) * c2 becomes x * (c1 * c2) (the inner multiply used once)")(_affine_chain)
_rule("distribute_multiply", is_op("multiply")(_add_like(wildcard(), is_constant()),
                                               is_constant()),
      "(x + c1) * c2 becomes x * c2 + c1 * c2 (the inner op used once)")(_affine_chain)


# -- negation -----------------------------------------------------------------------------


@_rule("double_negative", is_op("negative")(is_op("negative")(wildcard())),
       "negative(negative(x)) becomes x")
def _double_negative(s: _State, call: Call) -> Expr | None:
    return call.args[0].args[0]


# -- reshape-like ops ---------------------------------------------------------------------

_RESHAPE_LIKE = ("reshape", "reverse_reshape", "squeeze", "expand_dims")


def _reshape_like(arg: DFPattern) -> DFPattern:
    """A call of any reshape-like op on ``arg`` (a fresh callee pattern each time: a
    pattern node used twice must match the same op twice)."""
    callee: DFPattern = is_op(_RESHAPE_LIKE[0])
    for name in _RESHAPE_LIKE[1:]:
        callee = callee | is_op(name)
    return callee(arg)


@_rule("reshape_noop", _reshape_like(wildcard()),
       "a reshape-like op whose result has its input's type becomes its input")
def _reshape_noop(s: _State, call: Call) -> Expr | None:
    x = call.args[0]
    return x if s.type_of(x) == s.type_of(call) else None


@_rule("reshape_constant", _reshape_like(is_constant()),
       "a reshape-like op of a constant becomes the constant with the new (static) shape")
def _reshape_constant(s: _State, call: Call) -> Expr | None:
    ty = s.type_of(call)
    if isinstance(ty, TensorType) and ty.is_static:
        # the same elements under another shape: a view of the constant, no copy
        return Constant(call.args[0].data.reshape(ty.shape))
    return None


@_rule("reshape_reshape", _reshape_like(_reshape_like(wildcard())),
       "two reshape-like ops become one reshape (or the input, back to its shape)")
def _reshape_reshape(s: _State, call: Call) -> Expr | None:
    src = call.args[0].args[0]
    ty = s.type_of(call)
    if s.type_of(src) == ty:
        return src
    assert isinstance(ty, TensorType)
    # A static shape as newshape: 0 would mean "copy the input dimension" unless allowzero.
    attrs = {"newshape": ty.shape, "allowzero": 0 in ty.shape}
    return s.make("reshape", [src], attrs, ty)


# -- transposes and layout transforms -----------------------------------------------------


def _permutation(axes: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """The permutation ``transpose(axes=axes)`` applies (None reverses; negatives count back)."""
    if axes is None:
        return tuple(range(ndim - 1, -1, -1))
    return tuple(a % ndim for a in axes)


@_rule("transpose_noop", is_op("transpose")(wildcard()),
       "a transpose by the identity permutation becomes its input")
def _transpose_noop(s: _State, call: Call) -> Expr | None:
    x = call.args[0]
    ndim = len(s.type_of(x).shape)
    return x if _permutation(call.attrs["axes"], ndim) == tuple(range(ndim)) else None


@_rule("transpose_transpose", is_op("transpose")(is_op("transpose")(wildcard())),
       "two transposes become one by the composed permutation (or the input)")
def _transpose_transpose(s: _State, call: Call) -> Expr | None:
    x = call.args[0]
    src = x.args[0]
    ndim = len(s.type_of(x).shape)
    perm = _permutation(call.attrs["axes"], ndim)
    inner = _permutation(x.attrs["axes"], ndim)
    # out[i] = x[perm[i]] = src[inner[perm[i]]]
    composed = tuple(inner[p] for p in perm)
    if composed == tuple(range(ndim)):
        return src
    return s.make("transpose", [src], {"axes": composed}, s.type_of(call))


@_rule("layout_transform_noop", is_op("layout_transform")(wildcard()),
       "a layout_transform from a layout to itself becomes its input")
def _layout_transform_noop(s: _State, call: Call) -> Expr | None:
    return call.args[0] if call.attrs["src_layout"] == call.attrs["dst_layout"] else None


@_rule("layout_transform_pair", is_op("layout_transform")(is_op("layout_transform")(wildcard())),
       "layout transforms A -> B -> C become A -> C (the input when C is A)")
def _layout_transform_pair(s: _State, call: Call) -> Expr | None:
    x = call.args[0]
    if x.attrs["dst_layout"] != call.attrs["src_layout"]:
        return None
    first, dst = x.attrs["src_layout"], call.attrs["dst_layout"]
    if first == dst:
        return x.args[0]
    attrs = {"src_layout": first, "dst_layout": dst}
    return s.make("layout_transform", [x.args[0]], attrs, s.type_of(call))


# -- casts, broadcasts, concatenations ----------------------------------------------------


@_rule("cast_noop", is_op("cast")(wildcard()), "a cast to the dtype x has becomes x")
def _cast_noop(s: _State, call: Call) -> Expr | None:
    x = call.args[0]
    return x if s.type_of(x) == s.type_of(call) else None


@_rule("broadcast_to_noop", is_op("broadcast_to")(wildcard()),
       "broadcast_to the shape x has becomes x")
def _broadcast_to_noop(s: _State, call: Call) -> Expr | None:
    # ``broadcast_to(x, shape=[n, 4])`` of an ``(n, 4)`` tensor: symbolic dims compare
    # structurally: nothing to broadcast
    x = call.args[0]
    return x if s.type_of(x) == s.type_of(call) else None


@_rule("concatenate_single", is_op("concatenate")(wildcard()),
       "concatenate of a one-tensor tuple becomes that tensor")
def _concatenate_single(s: _State, call: Call) -> Expr | None:
    data = call.args[0]
    if type(data) is Tuple:
        return data.fields[0] if len(data.fields) == 1 else None
    if len(s.type_of(data).fields) != 1:
        return None
    return s.ctx.typed(TupleGetItem(data, 0), s.type_of(call))


#: The rule set of SimplifyExpr; ``[rewrites] disable = ["simplify.<rule>"]`` turns a
#: rule off, ``["simplify"]`` all of them.
SIMPLIFY = RuleSet(
    "simplify",
    _RULES,
    doc="SimplifyExpr's algebraic and shape simplifications (std)",
    pass_name="SimplifyExpr",
)
