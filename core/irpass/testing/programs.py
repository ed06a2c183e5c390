"""Random programs for testing passes: a seeded generator of valid, numerically tame modules.

``random_module(seed)`` builds an :class:`~irpass.ir.IRModule` from a seed (an int or a
``random.Random``); the same seed always gives the same module, so a program that breaks
a pass is reproduced by its seed alone::

    from irpass.testing.programs import random_args, random_module

    mod = random_module(1234)               # @main, often @helper functions too
    args = random_args(mod, seed=0)         # inputs for @main, by parameter name
    out = irpass.evaluate(mod, **args)

The soak (:mod:`irpass.testing.soak`) runs every standard pass on such programs, and
:mod:`irpass.testing.strategies` wraps the same generator for hypothesis: every decision
goes through a :class:`Choices` object, backed by ``random.Random`` here and by
hypothesis's ``draw`` there.

**What the programs hold.** Every op the core registers (:func:`irpass.ir.list_ops`),
with well-typed random attributes: elementwise and broadcasting math, comparisons,
``where``, ``clip``, ``cast``, ``reinterpret``, ``qnn.quantize``/``qnn.dequantize``,
reductions (``axis``, ``keepdims``, ``exclude``),
``reshape`` with Relay's special values, ``reverse_reshape``, ``transpose``,
``expand_dims``, ``squeeze``, ``broadcast_to``, ``tile``, ``strided_slice`` (negative
strides, ``axes``), ``take`` (every ``mode``), ``concatenate``, ``split``,
``layout_transform``, ``nn.pad`` (every mode), the creation ops, ``shape_of`` and
``dims_tensor``;
``nn.conv2d`` and ``nn.conv2d_transpose`` (NCHW and NHWC data, any kernel layout,
groups and depthwise, strides, asymmetric padding, dilation, ``out_layout``), pooling
(ceil mode, ``count_include_pad``), ``nn.batch_norm``, ``nn.layer_norm``, ``nn.lrn``,
``nn.dense``, ``nn.batch_matmul``, ``matmul``, ``nn.bias_add``, softmax and
log-softmax, ``nn.dropout``, ``nn.gelu``, ``nn.silu``, ``nn.hard_swish``, ``nn.rms_norm``,
``nn.attention`` (grouped heads, bool and additive masks, causal) and
``nn.rotary_embedding``; the 1-D and 3-D convolutions and pooling,
``nn.group_norm``, ``nn.instance_norm``, ``nn.depth_to_space``/``nn.space_to_depth``,
``einsum`` and ``linalg.det``; the trigonometric and hyperbolic functions (inputs kept
in their domains: ``clip`` before ``asin``, ``x + 1`` with ``x >= 0.1`` before
``acosh``), rounding and ``sign`` of exact values, ``floor_mod``/``trunc_mod`` by
divisors away from 0, ``isnan``/``isinf``, logical ops on bools, bitwise ops and shifts
on ints, ``argmax``/``argmin`` of exact values, ``cumsum``/``cumprod``, ``arange``,
``one_hot``, ``reverse``, ``reverse_sequence``, ``trilu``, ``topk``, and ``gather``,
``gather_nd``, ``scatter_elements``, ``scatter_nd`` with constant indices in range
(negative ones too) and every reduction. Values are mostly float32; int32/int64, bool,
float64 and float16 values appear through ``cast``, ``shape_of``, comparisons, integer
constants and the ops above. The IR side: ``let`` chains, ``let`` blocks used as values
(``%0 = { let %t = ...; %t }``, nested), ``if`` on a scalar bool, tuples (some bound
by a ``let``) and projections, closures (called directly, through a ``let``-bound var,
twice or through a tuple, nested, capturing outer values), recursion (a ``let``-bound
closure and a global ``@loop`` counting an int32 down to 0), global functions called
from ``@main`` (``@helper``, ``@helper_1``; some marked ``Inline=1``, one may call the
other), constants small (printed inline) and big (in the metadata), structurally equal
copies of calls, constants and ``let``-bound values (work for CSE, also across blocks),
the chains FoldScaleAxis and SimplifyInference rewrite (``conv2d -> batch_norm``,
per-channel ``multiply``/``add``/``bias_add`` around ``conv2d`` and ``dense``, through
``relu``), the chains SimplifyExpr rewrites (consecutive affine ops with constants,
shape ops that compose or cancel, ``x + 0``, ``x * ones_like(x)``, ...), and tensors
with a dimension of size 0 where the ops accept them. Variables share a few names, so
the printer renames. Each program leans its own way: some kinds of node are much
likelier than usual, others rarer, and from a few to nearly all values are let-bound.

**Valid by construction.** Each call's type comes from its op's type relation as the
call is built (an attribute choice the relation refuses is replaced by another), so
every program type-checks, is well formed, and runs. ``@main``'s parameters are
float32 tensors; the generator assumes their values lie in [-1, 1] (what
:func:`random_args` and :func:`irpass.testing.strategies.inputs_for` give).

**Numerically tame.** Every value carries an interval that holds it; an op that could
leave about [-1e4, 1e4] is not chosen (``exp`` of a small value only; ``divide``,
``log`` and ``sqrt`` only of values bounded away from 0, which the generator builds
as ``abs(x) + c`` when needed; ``power`` of a positive base by a small exponent;
weights scaled by their fan-in; ``batch_norm`` variances positive). Results are
finite, and a pass that only reorders floating-point arithmetic changes them by about
float32's rounding. Comparisons, casts to integer or float16, ``take`` indices and
``if`` conditions only read values computed *exactly* (params, constants and
data-movement ops of them: reshape, ``max``, ``relu``, ...), so no rounding difference
can flip a branch.

``features`` switch parts off (:data:`FEATURES` lists them); with none, a program is a
DAG of elementwise, broadcasting, reducing and scanning float32 ops over ``@main``'s
params.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from ..ir.expr import Expr
from ..ir.module import IRModule
from ..ir.nodes import Call, Constant, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from ..ir.op import Op
from ..ir.types import FuncType, TensorType, TupleType, Type
from .inputs import random_inputs

__all__ = [
    "FEATURES",
    "SHAPES",
    "Choices",
    "SeededChoices",
    "generate",
    "random_module",
    "random_args",
]

T = TypeVar("T")

#: The features a program may use; ``random_module(seed, features=...)`` takes a subset.
#: ``lets``: let chains and lets used as values; ``ifs``; ``closures``; ``globals``
#: (``@helper`` functions called from ``@main``); ``tuples`` (tuples, projections and
#: the tuple-typed ops ``split``, ``batch_norm``, ``concatenate``); ``constants``
#: (without it, weights are extra params of ``@main``); ``layout`` (reshape, transpose
#: and the other shape-changing ops); ``nn`` (convolution, pooling, normalization,
#: dense, matmul, softmax, bias_add, pad, dropout, and the scale/bias chains around
#: them); ``dtypes`` (int, bool, float64 and float16 values); ``empty`` (dimensions of
#: size 0).
FEATURES: frozenset[str] = frozenset(
    {"lets", "ifs", "closures", "globals", "tuples", "constants", "layout", "nn", "dtypes",
     "empty"}
)

#: Shapes of small params and constants: the first five broadcast with each other;
#: (4, 5) and (5,) make constants too big to print inline.
SHAPES: tuple[tuple[int, ...], ...] = ((2, 3), (3,), (1, 3), (2, 1), (), (4, 5), (5,))
# Shapes for the params of @main that feed nn ops: images (NCHW or NHWC read), a batch
# of vectors for dense, a batch of matrices for batch_matmul.
_NN_SHAPES: tuple[tuple[int, ...], ...] = (
    (1, 4, 6, 6), (2, 3, 5, 5), (1, 6, 6, 4), (1, 8, 4, 4), (2, 6), (3, 8), (2, 4, 6),
)
_MAX_BOUND = 1e4
# the kinds of step a program is built from (``_Generator.step``)
_KINDS = ("unary", "binary", "reduce", "create", "dup", "fodder", "constant", "layout", "tuple",
          "concat_split", "compare", "cast", "nn", "pattern", "let_value", "twin_blocks", "if",
          "closure", "loop", "global_call", "empty", "math")
_NAMES = ("x", "y", "v", "x_1", "tmp", "t")
_FLOATS = ("float32", "float64")


# -- where decisions come from ---------------------------------------------------------------


class Choices:
    """The source of every decision the generator makes.

    Subclasses implement :meth:`integer` and :meth:`seed`; the rest derive from them, so a
    hypothesis-backed source shrinks towards small integers: first options, ``False``.
    """

    def integer(self, lo: int, hi: int) -> int:
        """An int in ``[lo, hi]`` (both included)."""
        raise NotImplementedError

    def seed(self) -> int:
        """A seed for numpy's generator (the data of constants)."""
        raise NotImplementedError

    def chance(self, p: float) -> bool:
        """True with probability ``p``."""
        return self.integer(0, 999) >= 1000 - round(p * 1000)

    def choice(self, options: Sequence[T]) -> T:
        """One of ``options`` (a non-empty sequence), uniformly."""
        return options[self.integer(0, len(options) - 1)]

    def weighted(self, options: Sequence[tuple[T, float]]) -> T:
        """One of ``options`` (``(option, weight)`` pairs), by weight."""
        total = sum(w for _, w in options)
        point = self.integer(0, 9999) / 10000 * total
        for opt, w in options:
            point -= w
            if point < 0:
                return opt
        return options[-1][0]

    def uniform(self, lo: float, hi: float) -> float:
        """A float in ``[lo, hi]``, on a grid of 1000 steps (so it prints short)."""
        return round(lo + (hi - lo) * self.integer(0, 1000) / 1000, 6)


class SeededChoices(Choices):
    """Decisions from a ``random.Random``: the plain, reproducible source."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        """An int in ``[lo, hi]``."""
        return self.rng.randint(lo, hi)

    def seed(self) -> int:
        """A 32-bit seed."""
        return self.rng.getrandbits(32)


# -- values under construction ---------------------------------------------------------------


@dataclass(frozen=True)
class _Value:
    """An expression of the program being built: its tensor type, an interval holding all of
    its elements, and whether it is computed exactly (no rounding a pass could change)."""

    expr: Expr
    type: TensorType
    lo: float
    hi: float
    exact: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def dtype(self) -> str:
        return self.type.dtype

    @property
    def bound(self) -> float:
        return max(abs(self.lo), abs(self.hi))

    @property
    def size(self) -> int:
        return math.prod(self.type.shape)

    def like(self, expr: Expr, ty: TensorType | None = None) -> _Value:
        """The same interval and exactness for another expression (a data-movement op)."""
        return _Value(expr, ty or self.type, self.lo, self.hi, self.exact)


@dataclass
class _Scope:
    """What a block under construction can use, and the lets it has bound so far."""

    pool: list[_Value]
    lets: list[tuple[Var, Expr]] = field(default_factory=list)
    # values bound by the let blocks built so far (copies of them make blocks CSE can
    # merge, or must not merge across)
    blocks: list[_Value] = field(default_factory=list)

    def child(self) -> _Scope:
        return _Scope(list(self.pool), blocks=list(self.blocks))


@dataclass
class _Global:
    """A global function @main may call: its var, param types and result."""

    gv: GlobalVar
    params: list[TensorType]
    # the interval and type of what a call returns (expr unused): one tensor, or the
    # fields of a tuple
    results: list[_Value]


class _Unfit(Exception):
    """An op's type relation refused the arguments or attributes chosen: choose again."""


def _tensor(shape: Sequence[int], dtype: str = "float32") -> TensorType:
    return TensorType(tuple(shape), dtype)


def _broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def _call(name: str, args: Sequence[_Value | tuple[Expr, Type]],
          attrs: dict[str, Any] | None = None) -> tuple[Call, Any]:
    """``(Call, type)``: the call of op ``name`` on values (or ``(expr, type)`` pairs),
    typed by the op's own type relation."""
    op = Op.get(name)
    exprs = [a.expr if isinstance(a, _Value) else a[0] for a in args]
    types = [a.type if isinstance(a, _Value) else a[1] for a in args]
    try:
        checked = op.make_attrs(attrs or {})
        ty = op.type_rel(tuple(types), checked)
    except (TypeError, ValueError) as err:
        raise _Unfit(str(err)) from None
    return Call(op, exprs, checked if op.attr_fields else None), ty


def _interval(values: Iterable[float]) -> tuple[float, float]:
    vs = [v for v in values if not math.isnan(v)]
    return min(vs), max(vs)


def _mul_interval(a: _Value | tuple[float, float], b: _Value | tuple[float, float]):
    (alo, ahi) = (a.lo, a.hi) if isinstance(a, _Value) else a
    (blo, bhi) = (b.lo, b.hi) if isinstance(b, _Value) else b
    return _interval([alo * blo, alo * bhi, ahi * blo, ahi * bhi])


def _windows_touch_data(in_shape: tuple[int, ...], out_shape: tuple[int, ...],
                        attrs: Any) -> bool:
    """Whether every window of a pooling call reads at least one element of its input
    (with dilation and padding a window can fall between the rows, in the padding)."""
    layout, out_layout = attrs["layout"], attrs["out_layout"] or attrs["layout"]
    pads = attrs["padding"]
    for axis, before in (("H", pads[0]), ("W", pads[1])):
        k = 0 if axis == "H" else 1
        size, count = in_shape[layout.index(axis)], out_shape[out_layout.index(axis)]
        window, stride, dil = attrs["pool_size"][k], attrs["strides"][k], attrs["dilation"][k]
        for o in range(count):
            taps = (o * stride - before + i * dil for i in range(window))
            if not any(0 <= t < size for t in taps):
                return False
    return True


def _reach(expr: Expr, bound: dict[Var, Expr]) -> set[Expr]:
    """The nodes ``expr`` uses, through the values of the let vars in ``bound``."""
    seen: set[Expr] = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        if isinstance(e, Var) and e in bound:
            stack.append(bound[e])
        elif isinstance(e, Call):
            stack.extend(e.args)
            if not isinstance(e.op, Op):
                stack.append(e.op)
        elif isinstance(e, Tuple):
            stack.extend(e.fields)
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
        elif isinstance(e, Let):
            stack += [e.value, e.body]
        elif isinstance(e, If):
            stack += [e.cond, e.true_branch, e.false_branch]
        elif isinstance(e, Function):
            stack.append(e.body)
    return seen


def _sinks(values: list[_Value], bound: dict[Var, Expr], k: int) -> list[_Value]:
    """Up to ``k`` of ``values`` that reach the most nodes, none used by another picked."""
    reach = [(_reach(v.expr, bound), i) for i, v in enumerate(values)]
    reach.sort(key=lambda r: (-len(r[0]), -r[1]))
    picked: list[tuple[set[Expr], int]] = []
    for nodes, i in reach:
        expr = values[i].expr
        if any(expr in other for other, _ in picked) or any(
                values[j].expr in nodes for _, j in picked):
            continue
        picked.append((nodes, i))
        if len(picked) == k:
            break
    return [values[i] for _, i in sorted(picked, key=lambda r: r[1])]


def _wrap_lets(lets: list[tuple[Var, Expr]], body: Expr) -> Expr:
    for v, value in reversed(lets):
        body = Let(v, value, body)
    return body


# -- the generator ------------------------------------------------------------------------


class _Function:
    """The global function being built: its params (weights may add some on the way)."""

    def __init__(self, params: list[Var], exact_params: bool) -> None:
        self.params = params
        # @main's params are exact (the caller's data); a helper's are not (its callers
        # may pass values a pass computes differently)
        self.exact_params = exact_params


class _Generator:
    """Builds one module, one node at a time."""

    def __init__(self, choices: Choices, max_nodes: int, features: frozenset[str]) -> None:
        self.c = choices
        self.max_nodes = max_nodes
        self.features = features
        self.budget = 0
        self.names = itertools.cycle(_NAMES)
        self.globals: list[_Global] = []
        self.fn: _Function = _Function([], True)
        self.np_rng = np.random.default_rng(choices.seed())
        self.closure_depth = 0
        # Each program leans its own way: some kinds of step much likelier than usual,
        # some rarer, and anywhere from a few to all values let-bound (A-normal-ish).
        self.profile = {kind: choices.choice([1.0, 1.0, 0.3, 3.0]) for kind in _KINDS}
        self.let_rate = choices.choice([0.2, 0.2, 0.05, 0.5, 0.9])

    # -- small helpers --------------------------------------------------------------------
    def on(self, feature: str) -> bool:
        return feature in self.features

    def var(self, ty: Type | None) -> Var:
        return Var(next(self.names), ty)

    def maybe(self, ty: Type) -> Type | None:
        """``ty`` or no annotation (inference fills it in)."""
        return ty if self.c.chance(0.5) else None

    def pick(self, scope: _Scope, ok: Callable[[_Value], bool] = lambda v: True) -> _Value | None:
        """A value of the scope passing ``ok``; recent ones are likelier, so chains grow deep
        and most nodes get used."""
        cands = [v for v in scope.pool if ok(v)]
        if not cands:
            return None
        k = self.c.integer(0, len(cands) - 1)
        if self.c.chance(0.5):
            k = len(cands) - 1 - (k % min(3, len(cands)))
        return cands[k]

    def pick_float(self, scope: _Scope, ok: Callable[[_Value], bool] = lambda v: True,
                   max_bound: float = _MAX_BOUND) -> _Value | None:
        return self.pick(scope, lambda v: v.dtype == "float32" and v.bound <= max_bound and ok(v))

    def tamed(self, scope: _Scope, v: _Value, limit: float) -> _Value:
        """``v``, or ``tanh(v)`` when ``v`` may be bigger than ``limit``."""
        if v.bound <= limit:
            return v
        call, ty = _call("tanh", [v])
        return self.add(scope, _Value(call, ty, math.tanh(v.lo), math.tanh(v.hi), False))

    def add(self, scope: _Scope, v: _Value) -> _Value:
        scope.pool.append(v)
        return v

    def data(self, shape: Sequence[int], lo: float, hi: float, dtype: str = "float32"):
        """Random constant data in ``[lo, hi]``, now and then with exact 0, 1, -0.0 or all one
        value (what SimplifyExpr's rules look for)."""
        rng = self.np_rng
        shape = tuple(shape)
        if np.dtype(dtype).kind in "iu":
            return rng.integers(int(math.ceil(lo)), int(math.floor(hi)) + 1, size=shape).astype(
                dtype)
        if np.dtype(dtype).kind == "b":
            return rng.integers(0, 2, size=shape).astype(bool)
        arr = rng.uniform(lo, hi, size=shape)
        r = rng.random()
        if r < 0.08:
            special = [s for s in (0.0, 1.0, -1.0, 0.5) if lo <= s <= hi]
            if special:
                arr = np.full(shape, special[int(rng.integers(len(special)))])
        elif r < 0.2 and arr.size:
            mask = rng.random(shape) < 0.3
            special = [s for s in (0.0, -0.0, 1.0, -1.0) if lo <= s <= hi] or [lo]
            arr = np.where(mask, special[int(rng.integers(len(special)))], arr)
        return np.asarray(arr, dtype=dtype)

    def param(self, ty: TensorType) -> Var:
        """A new param of the global function being built (a weight given as input)."""
        taken = {p.name_hint for p in self.fn.params}
        name = next(self.names)
        while name in taken:
            name = f"{name}_{len(taken)}"
        p = Var(name, ty)
        self.fn.params.append(p)
        return p

    def constant(self, shape: Sequence[int], lo: float = -1.0, hi: float = 1.0,
                 dtype: str = "float32", as_param: bool | None = None) -> _Value:
        """A constant of ``shape`` with data in ``[lo, hi]``. A float32 one is now and then
        (always with ``as_param``, never with ``as_param=False``) a new param of the
        function instead, whose values lie in [-1, 1]: callers read the interval of what
        they get. Without the ``constants`` feature: a param, or ``zeros``/``ones`` for
        other dtypes."""
        shape = tuple(shape)
        consts = self.on("constants")
        if dtype == "float32" and (as_param or not consts or (
                as_param is None and self.c.chance(0.1))):
            return _Value(self.param(_tensor(shape)), _tensor(shape), -1.0, 1.0,
                          self.fn.exact_params)
        if not consts:
            return self.filled(shape, 1 if hi >= 1 > lo or lo > 0 else 0, dtype)
        arr = self.data(shape, lo, hi, dtype)
        # an empty constant lies in any interval: claim the one asked for
        alo, ahi = (float(arr.min()), float(arr.max())) if arr.size else (lo, hi)
        return _Value(Constant(arr), _tensor(shape, dtype), alo, ahi, True)

    def filled(self, shape: Sequence[int], value: int, dtype: str = "float32") -> _Value:
        """``zeros``/``ones`` of ``shape``: a known value without a constant."""
        call, ty = _call("ones" if value else "zeros", [], {"shape": tuple(shape),
                                                            "dtype": dtype})
        return _Value(call, ty, float(value), float(value), True)

    def positive_constant(self, shape: Sequence[int], lo: float, hi: float) -> _Value:
        """A float32 constant with data in ``[lo, hi]`` (``lo > 0``). Without the
        ``constants`` feature, ``sigmoid(param) + 1``, in [1.26, 1.74]."""
        if self.on("constants"):
            return self.constant(shape, lo, hi, as_param=False)
        p = self.constant(shape)
        call, ty = _call("sigmoid", [p])
        s = _Value(call, ty, 0.26, 0.74, False)
        one = self.filled((), 1)
        call, ty = _call("add", [s, one])
        return _Value(call, ty, 1.26, 1.74, False)

    def scalar(self, value: float, dtype: str = "float32") -> _Value:
        """A scalar constant (``zeros``/``ones`` without the ``constants`` feature)."""
        if not self.on("constants"):
            return self.filled((), 0 if value == 0 else 1, dtype)
        arr = np.array(value, dtype)
        return _Value(Constant(arr), _tensor((), dtype), float(arr), float(arr), True)

    # -- one step -------------------------------------------------------------------------
    def step(self, scope: _Scope) -> None:
        """Add one new node (or a few) to ``scope.pool``."""
        self.budget -= 1
        kinds: list[tuple[str, float]] = [("unary", 6), ("binary", 7), ("reduce", 2),
                                          ("create", 0.8), ("dup", 1.5), ("fodder", 1.5),
                                          ("math", 3)]
        on = self.on
        if on("constants"):
            kinds.append(("constant", 0.8))
        if on("layout"):
            kinds.append(("layout", 4))
        if on("tuples"):
            kinds += [("tuple", 1.0), ("concat_split", 1.0)]
        if on("dtypes"):
            kinds += [("compare", 1.0), ("cast", 0.8)]
        if on("nn"):
            kinds += [("nn", 5), ("pattern", 2)]
        if on("lets"):
            kinds += [("let_value", 1.2), ("twin_blocks", 0.4)]
        if on("ifs") and self.budget > 3:
            kinds.append(("if", 1.8))
        if on("closures") and self.budget > 2 and self.closure_depth < 2:
            kinds.append(("closure", 1.0))
            if on("lets") and on("ifs") and on("dtypes"):
                kinds.append(("loop", 0.4))
        if self.globals:
            kinds.append(("global_call", 1.5))
        if on("empty"):
            kinds.append(("empty", 0.3))
        kinds = [(k, w * self.profile.get(k, 1.0)) for k, w in kinds]
        for _attempt in range(6):
            kind = self.c.weighted(kinds)
            try:
                new = getattr(self, "_" + kind)(scope)
            except _Unfit:
                new = None
            if new is not None:
                break
        else:
            new = self._unary(scope)
        if not any(v is new for v in scope.pool):
            scope.pool.append(new)
        if on("lets") and self.c.chance(self.let_rate):
            self.bind(scope, new)

    def bind(self, scope: _Scope, v: _Value) -> _Value:
        """Bind ``v`` to a let var; later nodes may use the var or the value itself."""
        var = self.var(self.maybe(v.type))
        scope.lets.append((var, v.expr))
        return self.add(scope, v.like(var))

    # -- elementwise --------------------------------------------------------------------
    def _unary(self, scope: _Scope) -> _Value:
        a = self.pick(scope, lambda v: v.dtype in _FLOATS)
        if a is None:
            a = self.add(scope, self.constant((2, 3)))
        ops = ["negative", "abs", "tanh", "sigmoid", "erf", "nn.relu", "nn.leaky_relu",
               "clip", "nn.dropout", "sqrt", "log"]
        if a.bound <= 2.5:
            ops += ["exp", "exp"]
        name = self.c.choice(ops)
        attrs: dict[str, Any] = {}
        exact = a.exact
        if name in ("sqrt", "log"):
            a = self.away_from_zero(scope, a, 0.1)
        if name == "negative":
            lo, hi = -a.hi, -a.lo
        elif name == "abs":
            lo = 0.0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi))
            hi = a.bound
        elif name in ("tanh", "erf"):
            f = math.tanh if name == "tanh" else math.erf
            lo, hi, exact = f(a.lo), f(a.hi), False
        elif name == "sigmoid":
            lo = 1 / (1 + math.exp(min(-a.lo, 50)))
            hi = 1 / (1 + math.exp(min(-a.hi, 50)))
            exact = False
        elif name == "exp":
            lo, hi, exact = math.exp(a.lo), math.exp(a.hi), False
        elif name == "nn.relu":
            lo, hi = max(a.lo, 0.0), max(a.hi, 0.0)
        elif name == "nn.leaky_relu":
            alpha = self.c.choice([0.01, 0.1, 0.2, 0.5])
            attrs["alpha"] = alpha
            lo, hi = min(a.lo, a.lo * alpha), max(a.hi, a.hi * alpha)
            exact = False
        elif name == "clip":
            x0 = self.c.uniform(-1.5, 0.5)
            x1 = x0 + self.c.uniform(0.0, 2.0)
            attrs = {"a_min": x0, "a_max": x1}
            lo, hi = min(max(a.lo, x0), x1), max(min(a.hi, x1), x0)
        elif name == "nn.dropout":
            attrs["rate"] = self.c.choice([0.0, 0.1, 0.5])
            lo, hi = a.lo, a.hi
        elif name == "sqrt":
            lo, hi, exact = math.sqrt(a.lo), math.sqrt(a.hi), False
        else:  # log
            lo, hi, exact = math.log(a.lo), math.log(a.hi), False
        call, ty = _call(name, [a], attrs)
        return _Value(call, ty, lo, hi, exact)

    def away_from_zero(self, scope: _Scope, a: _Value, margin: float) -> _Value:
        """``a`` if it is >= ``margin``, else ``abs(a) + c`` (or ``relu``, ``a * a``), which
        is (the argument ``log``, ``sqrt``, ``divide`` and ``power`` need)."""
        if a.lo >= margin:
            return a
        inner = self.c.choice(["abs", "nn.relu", "square", "exp"] if a.bound <= 2.5
                              else ["abs", "nn.relu", "square"])
        if inner == "square" and a.bound > 100:
            inner = "abs"
        if inner == "square":
            call, ty = _call("multiply", [a, a])
            pos = _Value(call, ty, 0.0, a.bound ** 2, False)
        elif inner == "exp":
            call, ty = _call("exp", [a])
            pos = _Value(call, ty, math.exp(a.lo), math.exp(a.hi), False)
        else:
            call, ty = _call(inner, [a])
            pos = _Value(call, ty, 0.0, a.bound, a.exact)
        if pos.lo >= margin:
            return self.add(scope, pos)
        shift = self.scalar(self.c.choice([margin, 0.5, 1.0]), a.dtype) \
            if a.dtype != "float32" or self.c.chance(0.5) else self.positive_constant(
                self.c.choice([(), a.shape[-1:] if a.shape else ()]), max(margin, 0.1), 1.0)
        call, ty = _call("add", [pos, shift])
        return self.add(scope, _Value(call, ty, pos.lo + shift.lo, pos.hi + shift.hi, False))

    def partner(self, scope: _Scope, a: _Value, ok: Callable[[_Value], bool]) -> _Value:
        """A value to combine with ``a``: one of the scope, or a new constant of a shape
        that broadcasts with ``a``'s."""
        b = self.pick(scope, lambda v: v.dtype == a.dtype and _broadcast(a.shape, v.shape)
                      is not None and ok(v) and v is not a)
        if b is not None and self.c.chance(0.8):
            return b
        shapes = [a.shape, a.shape[-1:], ()]
        if len(a.shape) >= 3:
            # per-channel: (C, 1, 1) for NCHW, (C,) for NHWC
            shapes.append(a.shape[-3:-2] + (1, 1))
        if len(a.shape) >= 2:
            shapes.append((1,) + a.shape[1:])
        shape = self.c.choice(shapes)
        if a.dtype not in _FLOATS:
            return self.constant(shape, -3, 3, a.dtype)
        c = self.constant(shape, -1.0, 1.0, a.dtype)
        if not ok(c):
            c = self.positive_constant(shape, 0.5, 1.5)
        return c

    def _binary(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: v.dtype in _FLOATS or (
            self.on("dtypes") and v.dtype in ("int32", "int64")))
        if a is None:
            return None
        if a.dtype in _FLOATS:
            name = self.c.weighted([("add", 3), ("subtract", 2), ("multiply", 3), ("divide", 1),
                                    ("maximum", 1), ("minimum", 1), ("power", 0.5)])
        else:
            name = self.c.choice(["add", "subtract", "multiply", "maximum", "minimum"])
        limit = _MAX_BOUND if a.dtype in _FLOATS else 1e6
        if name == "divide":
            b = self.partner(scope, a, lambda v: v.bound <= 100)
            b = self.away_from_zero(scope, b, 0.5) if self.c.chance(0.5) or b.lo <= 0 else b
            if b.lo < 0.5:
                return None
            lo, hi = _interval([a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi])
            exact = False
        elif name == "power":
            base = self.away_from_zero(scope, self.tamed(scope, a, 2.0), 0.5)
            e = self.c.choice([0.5, 2.0, -1.0, 1.5, 3.0])
            b = self.scalar(e) if self.c.chance(0.6) else self.constant(
                base.shape[-1:], -1.0, 2.0, base.dtype)
            if base.dtype != b.dtype:
                return None
            a = base
            lo, hi = _interval([a.lo ** b.lo, a.lo ** b.hi, a.hi ** b.lo, a.hi ** b.hi])
            exact = False
        else:
            def fits(v: _Value) -> bool:
                if name == "multiply":
                    return v.bound * a.bound <= limit
                return v.bound + a.bound <= limit
            b = self.partner(scope, a, fits)
            if self.c.chance(0.5):
                a, b = b, a
            if name == "add":
                lo, hi = a.lo + b.lo, a.hi + b.hi
            elif name == "subtract":
                lo, hi = a.lo - b.hi, a.hi - b.lo
            elif name == "multiply":
                lo, hi = _mul_interval(a, b)
            elif name == "maximum":
                lo, hi = max(a.lo, b.lo), max(a.hi, b.hi)
            else:
                lo, hi = min(a.lo, b.lo), min(a.hi, b.hi)
            exact = (a.dtype not in _FLOATS or name in ("maximum", "minimum")) and a.exact \
                and b.exact
        if max(abs(lo), abs(hi)) > limit:
            return None
        call, ty = _call(name, [a, b])
        return _Value(call, ty, lo, hi, exact)

    # -- trigonometry, rounding, remainders, logic and bits ------------------------------------
    def _math(self, scope: _Scope) -> _Value | None:
        """The trigonometric and hyperbolic functions (inputs kept in their domains), the
        rounding ops and ``sign`` of exact values, ``floor_mod``/``trunc_mod`` by divisors
        away from 0; with ``dtypes`` also ``isnan``/``isinf`` and the logical, bitwise and
        shift ops on bool and integer values."""
        kinds = [("trig", 4), ("rounding", 1.5), ("mod", 1)]
        if self.on("dtypes"):
            kinds += [("classify", 0.4), ("logical", 1), ("bits", 1.5)]
        return getattr(self, "_math_" + self.c.weighted(kinds))(scope)

    def _math_trig(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: v.dtype in _FLOATS)
        if a is None:
            return None
        name = self.c.choice(["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
                              "asinh", "acosh", "atanh"])
        if name in ("asin", "acos", "atanh") and a.bound > 0.99:
            # clip keeps the value inside the domain however its input is rounded
            call, ty = _call("clip", [a], {"a_min": -0.99, "a_max": 0.99})
            a = self.add(scope, _Value(call, ty, min(max(a.lo, -0.99), 0.99),
                                       max(min(a.hi, 0.99), -0.99), a.exact))
        elif name == "acosh" and a.lo < 1.1:
            pos = self.away_from_zero(scope, a, 0.1)
            call, ty = _call("add", [pos, self.scalar(1.0, a.dtype)])
            a = self.add(scope, _Value(call, ty, pos.lo + 1.0, pos.hi + 1.0, False))
        elif name == "tan":
            a = self.tamed(scope, a, 1.2)
        elif name in ("sinh", "cosh"):
            a = self.tamed(scope, a, 5.0)
        if name in ("sin", "cos"):
            lo, hi = -1.0, 1.0
        elif name == "cosh":
            lo, hi = 1.0, math.cosh(a.bound)
        elif name == "acos":
            lo, hi = math.acos(a.hi), math.acos(a.lo)
        else:
            f = {"tan": math.tan, "asin": math.asin, "atan": math.atan, "sinh": math.sinh,
                 "asinh": math.asinh, "acosh": math.acosh, "atanh": math.atanh}[name]
            lo, hi = f(a.lo), f(a.hi)
        call, ty = _call(name, [a])
        return _Value(call, ty, lo, hi, False)

    def _math_rounding(self, scope: _Scope) -> _Value | None:
        # only exact values: a rounding difference a pass may make could flip a step by 1
        a = self.pick(scope, lambda v: v.exact and v.dtype not in ("bool", "float16"))
        if a is None:
            return None
        name = self.c.choice(["floor", "ceil", "trunc", "round", "sign"])
        call, ty = _call(name, [a])
        if name == "sign":
            lo, hi = float(np.sign(a.lo)), float(np.sign(a.hi))
        else:
            lo, hi = math.floor(a.lo), math.ceil(a.hi)
        return _Value(call, ty, lo, hi, True)

    def _math_mod(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: v.exact and v.dtype in _FLOATS + ("int32", "int64"))
        if a is None:
            return None
        shape = self.c.choice([a.shape, a.shape[-1:], ()])
        lo, hi = (0.5, 2.0) if a.dtype in _FLOATS else (1, 4)
        if self.c.chance(0.3):
            lo, hi = -hi, -lo
        b = self.constant(shape, lo, hi, a.dtype, as_param=False)
        if not b.exact or b.lo * b.hi <= 0:
            return None  # a divisor near 0, or computed by rounding ops
        name = self.c.choice(["floor_mod", "trunc_mod"])
        call, ty = _call(name, [a, b])
        m = max(abs(b.lo), abs(b.hi))
        if name == "floor_mod":  # the sign of the divisor
            lo, hi = (0.0, m) if b.lo > 0 else (-m, 0.0)
        else:  # the sign of the dividend
            lo, hi = max(-m, min(a.lo, 0.0)), min(m, max(a.hi, 0.0))
        return _Value(call, ty, lo, hi, True)

    def _math_classify(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: v.dtype in _FLOATS)
        if a is None:
            return None
        call, ty = _call(self.c.choice(["isnan", "isinf"]), [a])
        return _Value(call, ty, 0.0, 0.0, True)  # the values are finite

    def _math_logical(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: v.dtype == "bool") or self.condition(scope, scalar=False)
        if a is None:
            return None
        name = self.c.choice(["logical_not", "logical_and", "logical_or", "logical_xor"])
        args = [a] if name == "logical_not" else [a, self.partner(scope, a, lambda v: v.exact)]
        if not all(v.exact for v in args):
            return None
        call, ty = _call(name, args)
        return _Value(call, ty, 0.0, 1.0, True)

    def _math_bits(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: v.dtype in ("int32", "int64") and v.exact)
        if a is None:
            a = self.constant(self.c.choice(SHAPES[:5]), -8, 8, self.c.choice(["int32",
                                                                                "int64"]))
        name = self.c.choice(["bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor",
                              "left_shift", "right_shift"])
        if name == "bitwise_not":
            call, ty = _call(name, [a])
            return _Value(call, ty, -a.hi - 1, -a.lo - 1, True)
        if name.endswith("shift"):
            b = self.constant(self.c.choice([a.shape[-1:], ()]), 0, 3, a.dtype)
        else:
            b = self.partner(scope, a, lambda v: v.exact and v.bound <= 1e6)
        if not b.exact or a.bound > 1e5 or b.bound > 1e5:
            return None
        call, ty = _call(name, [a, b] if name.endswith("shift") or self.c.chance(0.5)
                         else [b, a])
        if name == "left_shift":
            lo, hi = min(a.lo * 8, a.lo), max(a.hi * 8, a.hi)
        elif name == "right_shift":
            lo, hi = min(a.lo, 0.0), max(a.hi, 0.0)
        else:
            # two's complement: within +-2**k when both operands are
            top = 2.0 ** (int(max(a.bound, b.bound)).bit_length() + 1)
            lo, hi = -top, top
        return _Value(call, ty, lo, hi, True)

    def _compare(self, scope: _Scope) -> _Value | None:
        """A comparison of exact values, used by ``where`` (or kept as a bool value)."""
        cond = self.condition(scope, scalar=False)
        if cond is None:
            return None
        x = self.pick(scope, lambda v: v.dtype in _FLOATS and _broadcast(v.shape, cond.shape)
                      is not None)
        if x is None or self.c.chance(0.2):
            return cond
        y = self.partner(scope, x, lambda v: True)
        call, ty = _call("where", [cond, x, y])
        return _Value(call, ty, min(x.lo, y.lo), max(x.hi, y.hi), x.exact and y.exact)

    def condition(self, scope: _Scope, scalar: bool) -> _Value | None:
        """A bool tensor (a scalar with ``scalar``) computed exactly from the scope."""
        a = self.pick(scope, lambda v: v.exact and v.dtype != "bool" and v.size > 0)
        if a is None:
            a = self.constant((2, 3))
        if scalar and a.shape:
            red = self.c.choice(["max", "min"] + (["sum"] if a.dtype in _FLOATS else []))
            call, ty = _call(red, [a])
            a = self.add(scope, _Value(call, ty, a.lo * (a.size if red == "sum" else 1),
                                       a.hi * (a.size if red == "sum" else 1), red != "sum"))
        name = self.c.choice(["greater", "less", "equal", "not_equal", "greater_equal",
                              "less_equal"])
        if a.dtype in _FLOATS:
            b = self.scalar(self.c.choice([0.0, 0.5, -0.5]), a.dtype) if scalar or \
                self.c.chance(0.5) else self.partner(scope, a, lambda v: v.exact)
        else:
            b = self.scalar(self.c.choice([0, 1, 3]), a.dtype) if scalar or self.c.chance(
                0.5) else self.partner(scope, a, lambda v: v.exact)
        if not b.exact:
            return None
        if self.c.chance(0.5):
            a, b = b, a
        call, ty = _call(name, [a, b])
        return _Value(call, ty, 0, 1, True)

    def _cast(self, scope: _Scope) -> _Value | None:
        if self.c.chance(0.25):
            return self._requantize(scope)
        a = self.pick(scope)
        if a is None:
            return None
        if a.dtype == "float32":
            targets = ["float64", "float64"]
            if a.exact:
                targets += ["int32", "int64", "float16", "bool"]
        elif a.dtype == "bool":
            targets = ["float32", "int32"]
        else:
            targets = ["float32"]
        dtype = self.c.choice(targets)
        call, ty = _call("cast", [a], {"dtype": dtype})
        if dtype.startswith("int"):
            lo, hi = float(math.trunc(a.lo)), float(math.trunc(a.hi))
        elif dtype == "bool":
            lo, hi = 0.0, 1.0
        else:
            lo, hi = a.lo, a.hi
        return _Value(call, ty, lo, hi, a.exact)

    def _requantize(self, scope: _Scope) -> _Value | None:
        """An exact float32 value through ``qnn.quantize`` and ``qnn.dequantize`` (a power-of-two
        scale: the result is exact too), or its bits through ``reinterpret`` and back."""
        a = self.pick(scope, lambda v: v.exact and v.dtype == "float32")
        if a is None:
            return None
        if self.c.chance(0.3):
            call, ty = _call("reinterpret", [a], {"dtype": self.c.choice(["int32", "uint32"])})
            call, ty = _call("reinterpret", [(call, ty)], {"dtype": "float32"})
            return a.like(call, ty)
        out = self.c.choice(["int8", "uint8"])
        scale = self.scalar(self.c.choice([0.125, 0.5, 2.0]))
        zero = self.scalar(self.c.choice([0, 3]), out)
        axis = self.c.choice([-1, 0]) if a.shape else 0
        q, qty = _call("qnn.quantize", [a, scale, zero], {"axis": axis, "out_dtype": out})
        call, ty = _call("qnn.dequantize", [(q, qty), scale, zero], {"axis": axis})
        s, z = float(scale.lo), float(zero.lo)
        lo, hi = (-128, 127) if out == "int8" else (0, 255)
        return _Value(call, ty, (lo - z) * s, (hi - z) * s, True)

    def _fodder(self, scope: _Scope) -> _Value | None:
        """Chains the simplifiers look for: consecutive affine ops with constants, shape
        ops that compose or cancel, identities (``x + 0``, ``x * ones_like(x)``, ``0 - x``,
        ``x / 1``, ``-(-x)``, a cast to the same dtype, a one-tensor concatenate)."""
        x = self.pick_float(scope, lambda v: len(v.shape) >= 1 and v.size > 0, max_bound=100)
        if x is None:
            return None
        kind = self.c.choice(["affine", "affine", "shape", "identity"])
        if kind == "affine":
            for _ in range(self.c.integer(2, 3)):
                op = self.c.choice(["add", "subtract", "multiply"] + (
                    ["nn.bias_add"] if self.on("nn") else []))
                if op == "nn.bias_add":
                    axis = self.channel_axis(x)
                    c = self.constant((x.shape[axis],))
                    call, ty = _call(op, [x, c], {"axis": axis})
                    x = self.add(scope, _Value(call, ty, x.lo + c.lo, x.hi + c.hi, False))
                    continue
                shape = self.c.choice([x.shape, x.shape[-1:], ()])
                c = self.constant(shape, 0.5, 1.5) if op == "multiply" else self.constant(shape)
                call, ty = _call(op, [x, c])
                lo, hi = {"add": (x.lo + c.lo, x.hi + c.hi), "subtract": (x.lo - c.hi,
                          x.hi - c.lo)}.get(op) or _mul_interval(x, c)
                x = self.add(scope, _Value(call, ty, lo, hi, False))
            return x
        if kind == "shape" and self.on("layout"):
            first = self.c.choice(["reshape", "transpose", "expand_dims", "layout_transform"])
            if first == "reshape":
                call, ty = _call("reshape", [x], {"newshape": [-1]})
                y = self.add(scope, x.like(call, ty))
                call, ty = _call("reshape", [y], {"newshape": list(x.shape)
                                                  if self.c.chance(0.5) else [1, -1]})
            elif first == "transpose" and len(x.shape) >= 2:
                call, ty = _call("transpose", [x])
                y = self.add(scope, x.like(call, ty))
                call, ty = _call("transpose", [y], {"axes": None if self.c.chance(0.5) else
                                                    list(range(len(x.shape)))[::-1]})
            elif first == "layout_transform" and len(x.shape) == 4:
                call, ty = _call("layout_transform", [x], {"src_layout": "NCHW",
                                                           "dst_layout": "NHWC"})
                y = self.add(scope, x.like(call, ty))
                call, ty = _call("layout_transform", [y], {"src_layout": "NHWC",
                                                           "dst_layout": self.c.choice(
                                                               ["NCHW", "HWCN"])})
            else:
                call, ty = _call("expand_dims", [x], {"axis": 0})
                y = self.add(scope, x.like(call, ty))
                call, ty = _call("squeeze", [y], {"axis": [0]})
            return x.like(call, ty)
        which = self.c.choice(["add0", "mul1", "sub0", "div1", "negneg", "cast"] + (
            ["concat"] if self.on("tuples") else []))
        if which == "negneg":
            call, ty = _call("negative", [x])
            y = self.add(scope, _Value(call, ty, -x.hi, -x.lo, x.exact))
            call, ty = _call("negative", [y])
            return x.like(call, ty)
        if which == "cast":
            call, ty = _call("cast", [x], {"dtype": x.dtype})
            return x.like(call, ty)
        if which == "concat":
            call, ty = _call("concatenate", [(Tuple([x.expr]), TupleType([x.type]))])
            return x.like(call, ty)
        creator = self.c.choice(["const", "like", "full"])
        value = 0 if which in ("add0", "sub0") else 1
        if creator == "like":
            call, ty = _call("ones_like" if value else "zeros_like", [x])
            unit = _Value(call, ty, value, value, True)
        elif creator == "full" and self.on("constants"):
            call, ty = _call("full", [self.scalar(value)], {"shape": x.shape[-1:]})
            unit = _Value(call, ty, value, value, True)
        else:
            unit = self.filled(self.c.choice([x.shape, x.shape[-1:], ()]), value)
        op = {"add0": "add", "mul1": "multiply", "sub0": "subtract", "div1": "divide"}[which]
        args = [unit, x] if which == "sub0" or (op in ("add", "multiply") and
                                                 self.c.chance(0.5)) else [x, unit]
        call, ty = _call(op, args)
        if which == "sub0":
            return _Value(call, ty, -x.hi, -x.lo, False)
        return _Value(call, ty, x.lo, x.hi, False)

    # -- reductions -----------------------------------------------------------------------
    def _reduce(self, scope: _Scope) -> _Value | None:
        names = [("sum", 4), ("mean", 2), ("max", 2), ("min", 1), ("prod", 0.5), ("scan", 1.2)]
        if self.on("dtypes"):
            names += [("argmax", 1), ("argmin", 0.8)]
        name = self.c.weighted(names)
        # the index of an extreme of exact values only: no rounding can move it
        a = self.pick(scope, lambda v: v.dtype in _FLOATS + ("int32", "int64") and (
            v.exact or not name.startswith("arg")))
        if a is None:
            return None
        if name == "scan":
            return self._scan(scope, a)
        nd = len(a.shape)
        attrs: dict[str, Any] = {}
        if nd and self.c.chance(0.75):
            k = self.c.integer(1, nd)
            axes = sorted(self.c.choice(list(itertools.combinations(range(nd), k))))
            attrs["axis"] = [ax - nd if self.c.chance(0.3) else ax for ax in axes]
            if self.c.chance(0.2):
                attrs["exclude"] = True
        if self.c.chance(0.4):
            attrs["keepdims"] = True
        if name.startswith("arg") and self.c.chance(0.3):
            attrs["select_last_index"] = True
        try:
            call, ty = _call(name, [a], attrs)
        except _Unfit:
            return None
        if name.startswith("arg"):
            return _Value(call, ty, 0.0, float(max(a.size - 1, 0)), True)
        if a.size == 0 and name not in ("sum", "prod") and math.prod(ty.shape):
            return None  # max/min of no elements are -inf/+inf (Relay's), a mean is NaN
        n = max(1, a.size // max(1, math.prod(ty.shape)))
        if name == "sum":
            lo, hi = a.lo * n, a.hi * n
        elif name == "prod":
            if a.bound > 1.5 or n * math.log(max(a.bound, 1.0)) > math.log(_MAX_BOUND):
                return None
            lo, hi = -(a.bound ** n), a.bound ** n
        else:
            lo, hi = a.lo, a.hi
        if a.size == 0 and name in ("sum", "prod"):
            lo, hi = min(lo, 1.0, 0.0), max(hi, 1.0, 0.0)
        if max(abs(lo), abs(hi)) > _MAX_BOUND:
            return None
        exact = a.exact and (name in ("max", "min") or a.dtype not in _FLOATS)
        return _Value(call, ty, lo, hi, exact)

    def _scan(self, scope: _Scope, a: _Value) -> _Value | None:
        """``cumsum`` or ``cumprod`` of ``a`` along an axis or flattened."""
        name = self.c.choice(["cumsum", "cumsum", "cumprod"])
        if name == "cumprod" and a.dtype in _FLOATS:
            a = self.tamed(scope, a, 1.0)
        nd = len(a.shape)
        axis = self.c.integer(-nd, nd - 1) if nd and self.c.chance(0.8) else None
        attrs: dict[str, Any] = {"axis": axis, "exclusive": self.c.chance(0.3)}
        if self.on("dtypes") and a.dtype == "float32" and self.c.chance(0.2):
            attrs["dtype"] = "float64"
        n = max(1, a.size if axis is None else a.shape[axis])
        if name == "cumsum":
            lo, hi = min(0.0, a.lo * n, a.lo), max(0.0, a.hi * n, a.hi)
        else:
            if a.bound > 1.5 or n * math.log(max(a.bound, 1.0)) > math.log(_MAX_BOUND):
                return None
            top = max(a.bound, 1.0) ** n
            lo, hi = -top, top
        if max(abs(lo), abs(hi)) > _MAX_BOUND:
            return None
        call, ty = _call(name, [a], attrs)
        return _Value(call, ty, lo, hi, a.exact and a.dtype not in _FLOATS)

    # -- creating tensors -------------------------------------------------------------------
    def _create(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope)
        name = self.c.choice(["zeros", "ones", "full", "zeros_like", "ones_like", "shape_of",
                              "dims_tensor", "arange", "one_hot"])
        if name in ("zeros_like", "ones_like", "shape_of") and a is None:
            return None
        if name == "arange":
            return self._arange()
        if name == "one_hot":
            return self._one_hot(scope)
        if name in ("zeros", "ones"):
            shape = a.shape if a is not None and self.c.chance(0.6) else self.c.choice(SHAPES)
            dtype = "float32" if not self.on("dtypes") else self.c.choice(
                ["float32", "float32", "int32", "float64"])
            call, ty = _call(name, [], {"shape": shape, "dtype": dtype})
            v = 0.0 if name == "zeros" else 1.0
            return _Value(call, ty, v, v, True)
        if name == "full":
            fill = self.pick(scope, lambda v: v.shape == () and v.dtype in _FLOATS)
            if fill is None:
                fill = self.scalar(self.c.uniform(-1, 1))
            shape = a.shape if a is not None and self.c.chance(0.6) else self.c.choice(SHAPES)
            attrs: dict[str, Any] = {"shape": shape}
            if self.on("dtypes") and self.c.chance(0.2):
                attrs["dtype"] = "float64"
            call, ty = _call("full", [fill], attrs)
            return _Value(call, ty, fill.lo, fill.hi, fill.exact)
        if name == "dims_tensor":  # static dims here: the programs have static shapes
            if not self.on("dtypes"):
                return None
            dims = a.shape if a is not None and self.c.chance(0.6) else self.c.choice(SHAPES)
            call, ty = _call("dims_tensor", [], {"dims": dims,
                                                 "dtype": self.c.choice(["int32", "int64"])})
            return _Value(call, ty, float(min(dims, default=0)), float(max(dims, default=0)),
                          True)
        assert a is not None
        if name == "shape_of":
            if not self.on("dtypes"):
                return None
            call, ty = _call("shape_of", [a], {"dtype": self.c.choice(["int32", "int64"])})
            hi = float(max(a.shape, default=0))
            return _Value(call, ty, 0.0, hi, True)
        call, ty = _call(name, [a])
        v = 0.0 if name == "zeros_like" else 1.0
        return _Value(call, ty, v, v, True)

    def _arange(self) -> _Value:
        """``arange`` with integer or float bounds, counting up or down, now and then
        empty."""
        dtype = self.c.choice(["float32", "int32", "int64"]) if self.on("dtypes") else "float32"
        n = self.c.integer(0 if self.on("empty") else 1, 8)
        step: float = self.c.choice([1, 2, -1, -3])
        if dtype == "float32" and self.c.chance(0.5):
            step = self.c.choice([0.5, -0.25, 0.75])
        start: float = self.c.integer(-4, 4)
        attrs: dict[str, Any] = {"start": start, "stop": start + n * step, "step": step,
                                 "dtype": dtype}
        if step == 1 and start >= 0 and self.c.chance(0.5):
            attrs.update(start=n, stop=None)  # arange(n)
        call, ty = _call("arange", [], attrs)
        ends = [start, start + n * step] if attrs["stop"] is not None else [0, n]
        return _Value(call, ty, min(ends), max(ends), True)

    def _one_hot(self, scope: _Scope) -> _Value | None:
        """``one_hot`` of exact integers (some outside ``[0, depth)``: a row of
        ``off_value``), the on and off values scalars of the scope or constants."""
        if not self.on("dtypes"):
            return None
        depth = self.c.integer(1, 5)
        idx = self.pick(scope, lambda v: v.dtype in ("int32", "int64") and v.exact
                        and len(v.shape) <= 2 and v.size <= 12)
        if idx is None or self.c.chance(0.4):
            idx = self.constant(self.c.choice([(), (3,), (2, 3)]), -1, depth,
                                self.c.choice(["int32", "int64"]))
        on = self.pick(scope, lambda v: v.shape == () and v.dtype in _FLOATS) or self.scalar(
            self.c.choice([1.0, 0.5, 3.0]))
        off = self.scalar(self.c.choice([0.0, -1.0]))
        dtype = self.c.choice(["float32", "float32", "int32", "float64", "float16"])
        if dtype == "int32" and not (on.exact and on.lo == on.hi):
            dtype = "float32"  # casting a computed value to int could round either way
        nd = len(idx.shape)
        attrs = {"depth": depth, "axis": self.c.integer(-nd - 1, nd), "dtype": dtype}
        call, ty = _call("one_hot", [idx, on, off], attrs)
        return _Value(call, ty, min(on.lo, off.lo), max(on.hi, off.hi), on.exact)

    def _constant(self, scope: _Scope) -> _Value:
        shape = self.c.choice(SHAPES)
        if self.on("dtypes") and self.c.chance(0.15):
            return self.constant(shape, -4, 4, self.c.choice(["int32", "int64"]))
        return self.constant(shape)

    def _dup(self, scope: _Scope, blocks: bool = False) -> _Value | None:
        """A structurally equal copy of a call or constant (with ``blocks``, maybe of the
        value a let block binds): work for CSE."""
        def copyable(v: _Value) -> bool:
            return isinstance(v.expr, Constant) or (
                isinstance(v.expr, Call) and isinstance(v.expr.op, Op))
        a = None
        if blocks and scope.blocks and self.c.chance(0.6):
            a = self.pick(_Scope(scope.blocks), copyable)
        a = a or self.pick(scope, copyable)
        if a is None:
            return None
        e = a.expr
        if isinstance(e, Constant):
            return a.like(Constant(e.data))
        assert isinstance(e, Call)
        return a.like(Call(e.op, e.args, e.attrs if e.op.attr_fields else None))

    # -- shape changes -----------------------------------------------------------------------
    def _layout(self, scope: _Scope) -> _Value | None:
        name = self.c.weighted([
            ("reshape", 3), ("reverse_reshape", 0.5), ("transpose", 3), ("expand_dims", 1),
            ("squeeze", 1), ("broadcast_to", 1), ("tile", 0.6), ("strided_slice", 1.5),
            ("take", 1), ("nn.pad", 0.8), ("layout_transform", 1), ("reverse", 0.6),
            ("trilu", 0.4), ("reverse_sequence", 0.4), ("gather", 0.6), ("gather_nd", 0.5),
            ("scatter_elements", 0.5), ("scatter_nd", 0.4), ("topk", 0.6),
        ])
        return getattr(self, "_op_" + name.replace("nn.", ""))(scope)

    def _op_reshape(self, scope: _Scope, name: str = "reshape") -> _Value | None:
        a = self.pick(scope, lambda v: len(v.shape) > 0 and v.size > 0)
        if a is None:
            return None
        size = a.size
        options = [s for s in SHAPES + _NN_SHAPES + ((3, 2), (6,), (1, 2, 3), (size,),
                   (1, size), (size, 1), a.shape[::-1]) if math.prod(s) == size]
        shape = list(self.c.choice(options))
        newshape = list(shape)
        special = self.c.integer(0, 5)
        if special == 1 and newshape:
            newshape[self.c.integer(0, len(newshape) - 1)] = -1
        elif special == 2 and len(newshape) <= len(a.shape):
            # 0 copies the matching input dim where it equals the target
            newshape = [0 if i < len(a.shape) and a.shape[i] == d else d
                        for i, d in enumerate(newshape)]
        elif special == 3 and len(a.shape) >= 2:
            newshape = [-3, -2] if name == "reshape" else [-2, -3]
        elif special == 4 and a.shape and a.shape[0] % 2 == 0 and a.shape[0] > 0:
            newshape = [-4, 2, -1, -2] if name == "reshape" else [-2, -4, -1, 2]
        attrs: dict[str, Any] = {"newshape": newshape}
        try:
            call, ty = _call(name, [a], attrs)
        except _Unfit:
            call, ty = _call(name, [a], {"newshape": shape})
        return a.like(call, ty)

    def _op_reverse_reshape(self, scope: _Scope) -> _Value | None:
        return self._op_reshape(scope, "reverse_reshape")

    def _op_transpose(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: len(v.shape) >= 2)
        if a is None:
            return None
        nd = len(a.shape)
        perm = list(range(nd))
        self.np_rng.shuffle(perm)
        axes: list[int] | None = perm
        if self.c.chance(0.25):
            axes = None
        elif self.c.chance(0.3):
            axes = [p - nd for p in perm]
        call, ty = _call("transpose", [a], {"axes": axes})
        return a.like(call, ty)

    def _op_expand_dims(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: len(v.shape) <= 4)
        if a is None:
            return None
        nd = len(a.shape)
        call, ty = _call("expand_dims", [a], {"axis": self.c.integer(-nd - 1, nd),
                                              "num_newaxis": self.c.choice([1, 1, 2, 0])})
        return a.like(call, ty)

    def _op_squeeze(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: 1 in v.shape)
        if a is None:
            return None
        ones = [i for i, d in enumerate(a.shape) if d == 1]
        axis = None if self.c.chance(0.4) else [self.c.choice(ones)]
        call, ty = _call("squeeze", [a], {"axis": axis})
        return a.like(call, ty)

    def _op_broadcast_to(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: len(v.shape) <= 3 and v.size <= 64)
        if a is None:
            return None
        shape = [d if d != 1 or self.c.chance(0.5) else self.c.integer(2, 3) for d in a.shape]
        if self.c.chance(0.5):
            shape = [self.c.integer(1, 3)] + shape
        call, ty = _call("broadcast_to", [a], {"shape": shape})
        return a.like(call, ty)

    def _op_tile(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: v.size <= 48)
        if a is None:
            return None
        reps = [self.c.integer(1, 2) for _ in range(self.c.integer(max(1, len(a.shape) - 1),
                                                                      len(a.shape) + 1))]
        call, ty = _call("tile", [a], {"reps": reps})
        return a.like(call, ty)

    def _op_strided_slice(self, scope: _Scope, empty: bool = False) -> _Value | None:
        a = self.pick(scope, lambda v: len(v.shape) > 0 and v.size > 0)
        if a is None:
            return None
        nd = len(a.shape)
        axes = list(range(nd))
        use_axes = self.c.chance(0.3)
        if use_axes:
            axes = sorted(self.c.choice(list(itertools.combinations(range(nd),
                                                                     self.c.integer(1, nd)))))
        begin, end, strides = [], [], []
        for k, ax in enumerate(axes):
            d = a.shape[ax]
            s = self.c.choice([1, 1, 1, 2, -1])
            if empty and k == 0:
                b = self.c.integer(0, d)
                begin.append(b)
                end.append(b)
                strides.append(1)
                continue
            if s > 0:
                b = self.c.integer(0, max(0, d - 1))
                e = self.c.integer(b + 1, d) if self.c.chance(0.7) else self.c.choice([d + 3, -1])
                if e == -1 and b >= d - 1:
                    e = d
            else:
                b = self.c.integer(0, d - 1) if self.c.chance(0.7) else -1
                e = self.c.choice([-d - 1, -d - 5]) if self.c.chance(0.6) else max(
                    -d - 1, (b if b >= 0 else d + b) - d - 1)
            begin.append(b)
            end.append(e)
            strides.append(s)
        attrs: dict[str, Any] = {"begin": begin, "end": end}
        if any(s != 1 for s in strides) or self.c.chance(0.3):
            attrs["strides"] = strides
        if use_axes:
            attrs["axes"] = axes
        call, ty = _call("strided_slice", [a], attrs)
        if not empty and 0 in ty.shape:
            return None
        return a.like(call, ty)

    def _op_take(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: len(v.shape) > 0 and v.size > 0)
        if a is None or not self.on("dtypes"):  # its indices are ints
            return None
        axis = None if self.c.chance(0.3) else self.c.integer(-len(a.shape), len(a.shape) - 1)
        n = a.size if axis is None else a.shape[axis]
        mode = self.c.choice(["clip", "wrap", "fast"])
        lo, hi = (-n, n - 1) if mode == "fast" else (-n - 2, n + 2)
        shape = self.c.choice([(), (2,), (3,), (2, 2)])
        idx = self.pick(scope, lambda v: v.dtype in ("int32", "int64") and v.exact
                        and v.lo >= lo and v.hi <= hi and len(v.shape) <= 2)
        if idx is None or self.c.chance(0.5):
            idx = self.constant(shape, lo, hi, self.c.choice(["int32", "int64"]))
        call, ty = _call("take", [a, idx], {"axis": axis, "mode": mode})
        return a.like(call, ty)

    def _op_pad(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: 0 < len(v.shape) <= 4 and v.size > 0
                      and v.dtype != "bool")
        if a is None:
            return None
        mode = self.c.choice(["constant", "constant", "edge", "reflect"])
        width = []
        for d in a.shape:
            top = d - 1 if mode == "reflect" else 2
            width.append([self.c.integer(0, min(top, 2)), self.c.integer(0, min(top, 2))])
        attrs: dict[str, Any] = {"pad_width": width, "pad_mode": mode}
        pad_value = 0.0
        if mode == "constant" and self.c.chance(0.5):
            pad_value = self.c.choice([0.5, -1.0, 2.0])
            attrs["pad_value"] = pad_value
        call, ty = _call("nn.pad", [a], attrs)
        return _Value(call, ty, min(a.lo, pad_value), max(a.hi, pad_value), a.exact)

    def _op_layout_transform(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: 2 <= len(v.shape) <= 5)
        if a is None:
            return None
        nd = len(a.shape)
        if nd == 4 and self.c.chance(0.7):
            src, dst = self.c.choice([("NCHW", "NHWC"), ("NHWC", "NCHW"), ("OIHW", "HWIO"),
                                      ("NCHW", "CNHW")])
        else:
            letters = list("NCHWD"[:nd])
            src = "".join(letters)
            self.np_rng.shuffle(letters)
            dst = "".join(letters)
        call, ty = _call("layout_transform", [a], {"src_layout": src, "dst_layout": dst})
        return a.like(call, ty)

    def _op_reverse(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: len(v.shape) > 0)
        if a is None:
            return None
        call, ty = _call("reverse", [a], {"axis": self.c.integer(-len(a.shape),
                                                                 len(a.shape) - 1)})
        return a.like(call, ty)

    def _op_trilu(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: len(v.shape) >= 2 and v.dtype != "bool")
        if a is None or not self.on("dtypes"):  # k is an int tensor
            return None
        k = self.constant((), -2, 2, self.c.choice(["int32", "int64"]))
        call, ty = _call("trilu", [a, k], {"upper": self.c.chance(0.5)})
        return _Value(call, ty, min(a.lo, 0.0), max(a.hi, 0.0), a.exact)

    def _op_reverse_sequence(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: len(v.shape) >= 2)
        if a is None or not self.on("dtypes"):
            return None
        nd = len(a.shape)
        seq, batch = self.c.choice(list(itertools.permutations(range(nd), 2)))
        lengths = self.constant((a.shape[batch],), 0, a.shape[seq] + 1,
                                self.c.choice(["int32", "int64"]))
        call, ty = _call("reverse_sequence", [a, lengths], {
            "seq_axis": seq - nd if self.c.chance(0.3) else seq, "batch_axis": batch})
        return a.like(call, ty)

    def _index_constant(self, shape: Sequence[int], size: int) -> _Value:
        """Int indices of ``shape`` in ``[-size, size)`` (negative ones count from the end)."""
        return self.constant(shape, -size, size - 1, self.c.choice(["int32", "int64"]))

    def _op_gather(self, scope: _Scope, scatter: bool = False) -> _Value | None:
        """``gather`` (or ``scatter_elements``) along an axis, the indices of the rank of the
        data and at most as long on the other axes."""
        a = self.pick(scope, lambda v: len(v.shape) > 0 and v.size > 0)
        if a is None or not self.on("dtypes"):
            return None
        nd = len(a.shape)
        axis = self.c.integer(0, nd - 1)
        shape = [self.c.integer(1, 3) if d == axis else self.c.integer(1, n)
                 for d, n in enumerate(a.shape)]
        idx = self._index_constant(shape, a.shape[axis])
        attrs: dict[str, Any] = {"axis": axis - nd if self.c.chance(0.3) else axis}
        if not scatter:
            call, ty = _call("gather", [a, idx], attrs)
            return a.like(call, ty)
        return self.scatter(scope, "scatter_elements", a, idx, tuple(shape), attrs,
                            "reduction", shape[axis])

    def _op_scatter_elements(self, scope: _Scope) -> _Value | None:
        return self._op_gather(scope, scatter=True)

    def _op_gather_nd(self, scope: _Scope, scatter: bool = False) -> _Value | None:
        """``gather_nd`` (or ``scatter_nd``): index tuples along the first axis of the
        indices, in range for every axis they index."""
        a = self.pick(scope, lambda v: len(v.shape) > 0 and v.size > 0)
        if a is None or not self.on("dtypes"):
            return None
        nd = len(a.shape)
        batch = 1 if not scatter and nd >= 2 and self.c.chance(0.3) else 0
        depth = self.c.integer(1, min(nd - batch, 2))
        rows = self.c.choice([(), (2,), (3,), (2, 2)])
        shape = (depth, *a.shape[:batch], *rows)
        idx = self._index_constant(shape, min(a.shape[batch:batch + depth]))
        if not scatter:
            attrs: dict[str, Any] = {"batch_dims": batch}
            if self.c.chance(0.3):
                attrs["index_rank"] = depth
            call, ty = _call("gather_nd", [a, idx], attrs)
            return a.like(call, ty)
        updates = tuple(rows) + a.shape[depth:]
        return self.scatter(scope, "scatter_nd", a, idx, updates, {}, "mode",
                            math.prod(rows))

    def _op_scatter_nd(self, scope: _Scope) -> _Value | None:
        return self._op_gather_nd(scope, scatter=True)

    def scatter(self, scope: _Scope, name: str, a: _Value, idx: _Value,
                shape: tuple[int, ...], attrs: dict[str, Any], key: str,
                hits: int) -> _Value | None:
        """``name`` writing updates of ``shape`` (a value of the scope or a constant) into
        ``a`` at ``idx``, combined by a random reduction (``attrs[key]``); at most ``hits``
        updates reach one element."""
        upd = self.pick(scope, lambda v: v.shape == shape and v.dtype == a.dtype)
        if upd is None:
            upd = self.constant(shape, -1.0, 1.0, a.dtype) if a.dtype in _FLOATS else \
                self.constant(shape, -3, 3, a.dtype)
        how = self.c.choice(["update", "update", "add", "mul", "min", "max"])
        attrs[key] = how
        if how == "add":
            lo, hi = min(a.lo, 0.0) + hits * min(upd.lo, 0.0), max(a.hi, 0.0) + hits * max(
                upd.hi, 0.0)
        elif how == "mul":
            if upd.bound > 1.5 or hits * math.log(max(upd.bound, 1.0)) > 3:
                return None
            top = a.bound * max(upd.bound, 1.0) ** hits
            lo, hi = -top, top
        else:
            lo, hi = min(a.lo, upd.lo), max(a.hi, upd.hi)
        if max(abs(lo), abs(hi)) > _MAX_BOUND:
            return None
        call, ty = _call(name, [a, idx, upd], attrs)
        exact = a.exact and upd.exact and (how not in ("add", "mul") or a.dtype not in _FLOATS)
        return _Value(call, ty, lo, hi, exact)

    def _op_topk(self, scope: _Scope) -> _Value | None:
        """``topk``: its values, its indices (of exact data: ties are kept in index
        order, but a rounding difference could reorder near ties) or both."""
        a = self.pick(scope, lambda v: len(v.shape) > 0 and v.size > 0 and v.dtype != "bool")
        if a is None:
            return None
        rets = ["values"]
        if self.on("dtypes") and a.exact:
            rets.append("indices")
            if self.on("tuples"):
                rets.append("both")
        nd = len(a.shape)
        axis = self.c.integer(-nd, nd - 1)
        n = a.shape[axis]
        attrs: dict[str, Any] = {"k": self.c.choice([1, n, self.c.integer(0, n)]),
                                 "axis": axis, "ret_type": self.c.choice(rets),
                                 "is_ascend": self.c.chance(0.3)}
        if self.c.chance(0.5):
            attrs["dtype"] = self.c.choice(["int32", "int64"])
        call, ty = _call("topk", [a], attrs)
        if attrs["ret_type"] == "values":
            return a.like(call, ty)
        index_range = (0.0, float(n - 1))
        if attrs["ret_type"] == "indices":
            return _Value(call, ty, *index_range, True)
        assert isinstance(ty, TupleType)
        if self.c.chance(0.5):
            self.add(scope, _Value(TupleGetItem(call, 1), ty.fields[1], *index_range, True))
        return a.like(TupleGetItem(call, 0), ty.fields[0])

    # -- tuples -----------------------------------------------------------------------------
    def _tuple(self, scope: _Scope) -> _Value | None:
        n = self.c.integer(1, 3)
        fields = [self.pick(scope) for _ in range(n)]
        vals = [f for f in fields if f is not None]
        if not vals:
            return None
        tup: Expr = Tuple([v.expr for v in vals])
        if self.c.chance(0.2):
            # a nested tuple: ((a, b), a), projected twice or once
            outer = Tuple([tup, vals[0].expr])
            if self.c.chance(0.5):
                return vals[0].like(TupleGetItem(outer, 1))
            j = self.c.integer(0, len(vals) - 1)
            return vals[j].like(TupleGetItem(TupleGetItem(outer, 0), j))
        if self.on("lets") and self.c.chance(0.3):
            tv = self.var(self.maybe(TupleType([v.type for v in vals])))
            scope.lets.append((tv, tup))
            tup = tv
        k = self.c.integer(0, len(vals) - 1)
        out = vals[k].like(TupleGetItem(tup, k))
        if self.c.chance(0.5):
            # a second projection of the same tuple: a shared tuple node
            j = self.c.integer(0, len(vals) - 1)
            self.add(scope, vals[j].like(TupleGetItem(tup, j)))
        return out

    def _concat_split(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: len(v.shape) > 0)
        if a is None:
            return None
        nd = len(a.shape)
        axis = self.c.integer(0, nd - 1)
        if self.c.chance(0.5):
            def same_but_axis(v: _Value) -> bool:
                return v.dtype == a.dtype and len(v.shape) == nd and all(
                    v.shape[i] == a.shape[i] for i in range(nd) if i != axis)
            parts = [a] + [self.pick(scope, same_but_axis) or a
                           for _ in range(self.c.integer(0, 2))]
            tup = Tuple([p.expr for p in parts])
            call, ty = _call("concatenate", [(tup, TupleType([p.type for p in parts]))],
                             {"axis": axis - nd if self.c.chance(0.3) else axis})
            return _Value(call, ty, min(p.lo for p in parts), max(p.hi for p in parts),
                          all(p.exact for p in parts))
        d = a.shape[axis]
        if d >= 2 and self.c.chance(0.6):
            divisors = [k for k in range(1, d + 1) if d % k == 0]
            spec: Any = self.c.choice(divisors)
        else:
            cuts = sorted(self.c.integer(0, d) for _ in range(self.c.integer(1, 2)))
            spec = cuts
        call, ty = _call("split", [a], {"indices_or_sections": spec, "axis": axis})
        assert isinstance(ty, TupleType)
        nonempty = [i for i, f in enumerate(ty.fields) if 0 not in f.shape] or [0]
        k = self.c.choice(nonempty)
        if 0 in ty.fields[k].shape and not self.on("empty"):
            return None
        out = a.like(TupleGetItem(call, k), ty.fields[k])
        if len(ty.fields) > 1 and self.c.chance(0.5):
            j = self.c.integer(0, len(ty.fields) - 1)
            if 0 not in ty.fields[j].shape or self.on("empty"):
                self.add(scope, a.like(TupleGetItem(call, j), ty.fields[j]))
        return out

    # -- size-0 dims -------------------------------------------------------------------------
    def _empty(self, scope: _Scope) -> _Value | None:
        """A tensor with a dimension of size 0 (a slice ``begin == end`` or ``zeros``), fed
        into an op that accepts it; the result is often concatenated back to a non-empty
        tensor."""
        if self.on("layout") and self.c.chance(0.5):
            e = self._op_strided_slice(scope, empty=True)
        else:
            shape = self.c.choice([(0,), (2, 0), (0, 3), (1, 0, 4)])
            call, ty = _call("zeros", [], {"shape": shape, "dtype": "float32"})
            e = _Value(call, ty, 0.0, 0.0, True)
        if e is None or 0 not in e.shape:
            return e
        self.add(scope, e)
        follow = self.c.choice(["unary", "binary", "sum"] + (
            ["concat", "concat"] if self.on("tuples") else []) + (
            ["reshape", "transpose"] if self.on("layout") else []))
        if follow == "unary":
            call, ty = _call(self.c.choice(["negative", "tanh", "nn.relu", "exp"]), [e])
            return e.like(call, ty)
        if follow == "binary":
            call, ty = _call(self.c.choice(["add", "multiply"]), [e, self.scalar(0.5)])
            return _Value(call, ty, min(e.lo, 0.0), max(e.hi, 1.0), False)
        if follow == "concat":
            axis = e.shape.index(0)
            other = self.pick(scope, lambda v: v.dtype == e.dtype and len(v.shape) == len(
                e.shape) and all(v.shape[i] == e.shape[i] for i in range(len(e.shape))
                                 if i != axis))
            if other is None:
                shape = list(e.shape)
                shape[axis] = 2
                other = self.constant(shape, dtype=e.dtype)
            tup = Tuple([e.expr, other.expr])
            call, ty = _call("concatenate", [(tup, TupleType([e.type, other.type]))],
                             {"axis": axis})
            return other.like(call, ty)
        if follow == "sum":
            call, ty = _call("sum", [e], {"axis": [e.shape.index(0)]})
            return _Value(call, ty, 0.0, 0.0, True)
        if follow == "reshape":
            call, ty = _call("reshape", [e], {"newshape": [-1]})
            return e.like(call, ty)
        call, ty = _call("transpose", [e])
        return e.like(call, ty)

    # -- nn ops ----------------------------------------------------------------------------
    def image(self, scope: _Scope, limit: float = 100.0) -> _Value | None:
        """A 4-D float32 value small enough to convolve."""
        a = self.pick_float(scope, lambda v: len(v.shape) == 4 and v.size > 0 and v.size <= 512)
        if a is None:
            a = self.reshaped(scope, 4)
        return None if a is None else self.tamed(scope, a, limit)

    def reshaped(self, scope: _Scope, rank: int) -> _Value | None:
        """A float32 value of the scope reshaped to ``rank`` dims (needs ``layout``)."""
        b = self.pick_float(scope, lambda v: 4 <= v.size <= 256 and len(v.shape) >= 1)
        if b is None or not self.on("layout"):
            return None
        head = b.shape[0] if len(b.shape) >= 2 else 1
        shape = (1,) * (rank - 2) + (head, b.size // head)
        call, ty = _call("reshape", [b], {"newshape": shape})
        return self.add(scope, b.like(call, ty))

    def _nn(self, scope: _Scope) -> _Value | None:
        name = self.c.weighted([
            ("conv2d", 4), ("conv2d_transpose", 1), ("max_pool2d", 1.5), ("avg_pool2d", 1.5),
            ("global_avg_pool2d", 1), ("batch_norm", 3), ("layer_norm", 1.5), ("lrn", 0.5),
            ("dense", 2.5), ("batch_matmul", 1), ("matmul", 1), ("bias_add", 1.5),
            ("softmax", 1.5), ("log_softmax", 0.7), ("conv1d", 0.5), ("conv3d", 0.5),
            ("conv1d_transpose", 0.3), ("conv3d_transpose", 0.3), ("max_pool1d", 0.6),
            ("max_pool3d", 0.6), ("avg_pool1d", 0.6), ("avg_pool3d", 0.6), ("resize1d", 0.4),
            ("resize2d", 0.5), ("resize3d", 0.5), ("grid_sample", 0.4), ("roi_align", 0.3),
            ("roi_pool", 0.3),
            ("depth_to_space", 0.5), ("space_to_depth", 0.5), ("group_norm", 0.7),
            ("instance_norm", 0.6), ("einsum", 0.8), ("det", 0.4),
            ("activation", 2.0), ("rms_norm", 0.8), ("attention", 0.8),
            ("rotary_embedding", 0.8),
        ])
        if name in ("batch_norm",) and not self.on("tuples"):
            return None
        if name in ("grid_sample", "roi_align", "roi_pool"):
            return getattr(self, "_vision_" + name)(scope)
        if name.startswith("resize"):
            return self._image_resize(scope, int(name[6]))
        if name[-2:] in ("1d", "3d") or name[-12:-10] in ("1d", "3d"):
            return self._nn_window_nd(scope, "nn." + name)
        return getattr(self, "_nn_" + name)(scope)

    def _vision_grid_sample(self, scope: _Scope) -> _Value | None:
        """image.grid_sample of an image at a constant grid of coordinates in [-1.2, 1.2]."""
        x = self.image(scope)
        if x is None:
            return None
        out = (self.c.integer(1, 4), self.c.integer(1, 4))
        grid = self.constant([x.shape[0], 2, *out], -1.2, 1.2)
        attrs = {"method": self.c.choice(["nearest", "bilinear", "bicubic"]),
                 "padding_mode": self.c.choice(["zeros", "border", "reflection"]),
                 "align_corners": self.c.chance(0.5)}
        try:
            call, ty = _call("image.grid_sample", [x, grid], attrs)
        except _Unfit:
            return None
        b = x.bound * (2.0 if attrs["method"] == "bicubic" else 1.0)
        return _Value(call, ty, -b, b, False)

    def _vision_roi_pool(self, scope: _Scope) -> _Value | None:
        return self._vision_roi_align(scope, "vision.roi_pool")

    def _vision_roi_align(self, scope: _Scope, name: str = "vision.roi_align") -> _Value | None:
        """vision.roi_align (or roi_pool) of an image over two constant regions inside it."""
        x = self.image(scope)
        if x is None or not self.on("constants"):
            return None
        n, _, h, w = x.shape
        rows = []
        for _ in range(2):
            y1, x1 = self.c.integer(0, max(h - 1, 0)), self.c.integer(0, max(w - 1, 0))
            rows.append([self.c.integer(0, n - 1), x1, y1, self.c.integer(x1, w),
                         self.c.integer(y1, h)])
        rois = (Constant(np.array(rows, dtype="float32")),
                TensorType((2, 5), "float32"))
        attrs: dict[str, Any] = {"pooled_size": (self.c.integer(1, 3), self.c.integer(1, 3)),
                                 "spatial_scale": 1.0}
        if name == "vision.roi_align":
            attrs.update(sample_ratio=self.c.choice([-1, 1, 2]),
                         mode=self.c.choice(["avg", "max"]), aligned=self.c.chance(0.5))
        try:
            call, ty = _call(name, [x, rois], attrs)
        except _Unfit:
            return None
        return _Value(call, ty, -x.bound, x.bound, False)

    def _image_resize(self, scope: _Scope, ndim: int) -> _Value | None:
        """image.resize1d/2d/3d of an image reshaped to ``ndim`` spatial axes."""
        x = self.image(scope)
        if x is None:
            return None
        n, c, h, w = x.shape
        shape = {1: (n, c, h * w), 2: (n, c, h, w), 3: (n, c, 1, h, w)}[ndim]
        if ndim != 2:
            if not self.on("layout"):
                return None
            call, ty = _call("reshape", [x], {"newshape": shape})
            x = self.add(scope, x.like(call, ty))
        method = self.c.choice(["nearest_neighbor", "linear", "linear", "cubic"])
        mode = self.c.choice(["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                              "tf_crop_and_resize", "half_pixel_symmetric"])
        size = tuple(max(1, int(s * self.c.choice([0.5, 1, 1.5, 2]))) for s in shape[2:])
        attrs: dict[str, Any] = {"size": size, "method": method,
                                 "coordinate_transformation_mode": mode,
                                 "cubic_alpha": self.c.choice([-0.5, -0.75])}
        if method == "nearest_neighbor":
            attrs["rounding_method"] = self.c.choice(["round_prefer_floor", "floor", "ceil"])
        elif self.c.chance(0.2):
            attrs["antialias"] = True
        if mode == "tf_crop_and_resize":
            attrs["roi"] = (0.1,) * ndim + (0.9,) * ndim
        try:
            call, ty = _call(f"image.resize{ndim}d", [x], attrs)
        except _Unfit:
            return None
        # cubic weights overshoot: at most 1.5x the input's bound (Keys' kernel, a >= -0.75)
        b = x.bound * (1.5 if method == "cubic" else 1.0)
        return _Value(call, ty, -b, b, False)

    def _nn_window_nd(self, scope: _Scope, name: str) -> _Value | None:
        """A 1-D or 3-D convolution, transposed convolution or pooling of an image
        reshaped to (N, C, H * W) or (N, C, 1, H, W)."""
        rank = 3 if "1d" in name else 5
        x = self.pick_float(scope, lambda v: len(v.shape) == rank and 0 < v.size <= 512,
                            max_bound=100.0)
        if x is None:
            x = self.image(scope)
            if x is None or not self.on("layout"):
                return None
            n, c, h, w = x.shape
            shape = (n, c, h * w) if rank == 3 else (n, c, 1, h, w)
            call, ty = _call("reshape", [x], {"newshape": shape})
            x = self.add(scope, x.like(call, ty))
        c = x.shape[1]
        spatial = x.shape[2:]
        kernel = tuple(self.c.choice([1, 2, 3]) if s >= 3 else 1 for s in spatial)
        strides = tuple(self.c.choice([1, 1, 2]) for _ in spatial)
        # padding below the kernel size: every window reads some data
        pads = [self.c.integer(0, k - 1) for k in kernel] * 2
        if "pool" in name:
            attrs: dict[str, Any] = {"pool_size": kernel, "strides": strides, "padding": pads,
                                     "ceil_mode": self.c.chance(0.3)}
            if "avg" in name:
                attrs["count_include_pad"] = self.c.chance(0.5)
            try:
                call, ty = _call(name, [x], attrs)
            except _Unfit:
                call, ty = _call(name, [x], {})
            if "max" in name:
                return x.like(call, ty)
            return _Value(call, ty, min(x.lo, 0.0), max(x.hi, 0.0), False)
        transpose = "transpose" in name
        o = self.c.choice([1, 2, 4])
        fan_in = c * math.prod(kernel)
        scale = math.sqrt(3.0 / fan_in)
        weight = self.constant([c, o, *kernel] if transpose else [o, c, *kernel], -scale, scale)
        if weight.bound > scale:  # a param: weights in [-1, 1]
            scale = 1.0
        attrs = {"strides": strides, "padding": pads}
        if transpose:
            attrs["output_padding"] = tuple(self.c.integer(0, s - 1) for s in strides)
        try:
            call, ty = _call(name, [x, weight], attrs)
        except _Unfit:
            return None
        b = fan_in * scale * x.bound
        return _Value(call, ty, -b, b, False)

    def _nn_conv2d(self, scope: _Scope, x: _Value | None = None, layout: str | None = None,
                   out_channels: int | None = None) -> _Value | None:
        x = x or self.image(scope)
        if x is None:
            return None
        layout = layout or self.c.choice(["NCHW", "NCHW", "NHWC"])
        n, c, h, w = (x.shape if layout == "NCHW" else
                      (x.shape[0], x.shape[3], x.shape[1], x.shape[2]))
        o = out_channels or self.c.choice(sorted({c, 2, 4, 8, 2 * c}))
        groups = 1
        g = self.c.integer(0, 4)
        if g == 1:
            groups, o = c, c * self.c.choice([1, 1, 2])  # depthwise
        elif g == 2:
            common = [k for k in range(2, c + 1) if c % k == 0 and o % k == 0]
            groups = self.c.choice(common) if common else 1
        kh, kw = self.c.choice([1, 3, 3, 2]), self.c.choice([1, 3, 3, 2])
        strides = (self.c.choice([1, 1, 2]), self.c.choice([1, 1, 2]))
        dilation = (self.c.choice([1, 1, 1, 2]), self.c.choice([1, 1, 1, 2]))
        padding = [self.c.choice([0, 0, 1, 2]) for _ in range(4)]
        if self.c.chance(0.5):
            padding = [(kh - 1) // 2, (kw - 1) // 2] * 2
        kernel_layout = ("OIHW" if layout == "NCHW" else "HWIO") if self.c.chance(0.7) else \
            "".join(self.np_rng.permutation(list("OIHW")))
        dims = {"O": o, "I": c // groups, "H": kh, "W": kw}
        fan_in = c // groups * kh * kw
        scale = math.sqrt(3.0 / fan_in)
        weight = self.constant([dims[ch] for ch in kernel_layout], -scale, scale)
        if weight.bound > scale:  # a param: weights in [-1, 1]
            scale = 1.0
        attrs: dict[str, Any] = {"strides": strides, "padding": padding, "dilation": dilation,
                                 "groups": groups, "data_layout": layout,
                                 "kernel_layout": kernel_layout}
        if self.c.chance(0.3):
            attrs["channels"] = o
            attrs["kernel_size"] = (kh, kw)
        if self.c.chance(0.1):
            attrs["out_layout"] = "NHWC" if layout == "NCHW" else "NCHW"
        try:
            call, ty = _call("nn.conv2d", [x, weight], attrs)
        except _Unfit:
            attrs.update(strides=(1, 1), dilation=(1, 1), padding=[kh // 2, kw // 2] * 2)
            if kh > h + 2 * (kh // 2) or kw > w + 2 * (kw // 2):
                return None
            call, ty = _call("nn.conv2d", [x, weight], attrs)
        b = fan_in * scale * x.bound
        return _Value(call, ty, -b, b, False)

    def _nn_conv2d_transpose(self, scope: _Scope) -> _Value | None:
        x = self.image(scope)
        if x is None:
            return None
        layout = self.c.choice(["NCHW", "NCHW", "NHWC"])
        c = x.shape[1] if layout == "NCHW" else x.shape[3]
        groups = c if self.c.chance(0.2) else 1
        o_per_group = self.c.choice([1, 2, 4]) if groups > 1 else self.c.choice([2, 4, c])
        kh, kw = self.c.choice([1, 2, 3]), self.c.choice([1, 2, 3])
        strides = (self.c.choice([1, 2]), self.c.choice([1, 2]))
        output_padding = (self.c.integer(0, strides[0] - 1), self.c.integer(0, strides[1] - 1))
        kernel_layout = "IOHW" if self.c.chance(0.7) else "".join(
            self.np_rng.permutation(list("OIHW")))
        dims = {"I": c, "O": o_per_group, "H": kh, "W": kw}
        fan_in = c // groups * kh * kw
        scale = math.sqrt(3.0 / fan_in)
        weight = self.constant([dims[ch] for ch in kernel_layout], -scale, scale)
        if weight.bound > scale:
            scale = 1.0
        attrs: dict[str, Any] = {"strides": strides, "output_padding": output_padding,
                                 "padding": [self.c.choice([0, 0, 1]) for _ in range(4)],
                                 "groups": groups, "data_layout": layout,
                                 "kernel_layout": kernel_layout}
        call, ty = _call("nn.conv2d_transpose", [x, weight], attrs)
        b = fan_in * scale * x.bound
        return _Value(call, ty, -b, b, False)

    def _nn_depth_to_space(self, scope: _Scope, name: str = "nn.depth_to_space") -> _Value | None:
        """``nn.depth_to_space`` or ``nn.space_to_depth`` by a block size that fits."""
        x = self.pick(scope, lambda v: len(v.shape) == 4 and v.size > 0 and v.dtype in _FLOATS)
        x = x or self.image(scope)
        if x is None:
            return None
        layout = self.c.choice(["NCHW", "NHWC"])
        d = dict(zip(layout, x.shape, strict=True))
        if name == "nn.depth_to_space":
            sizes = [b for b in (1, 2, 3) if d["C"] % (b * b) == 0]
        else:
            sizes = [b for b in (1, 2, 3) if d["H"] % b == 0 and d["W"] % b == 0]
        attrs = {"block_size": self.c.choice(sizes[1:] or sizes), "layout": layout,
                 "mode": self.c.choice(["DCR", "CRD"])}
        call, ty = _call(name, [x], attrs)
        return x.like(call, ty)

    def _nn_space_to_depth(self, scope: _Scope) -> _Value | None:
        return self._nn_depth_to_space(scope, "nn.space_to_depth")

    def _nn_group_norm(self, scope: _Scope, name: str = "nn.group_norm") -> _Value | None:
        """``nn.group_norm`` (a number of groups dividing the channels) or
        ``nn.instance_norm`` over the channel axis 1 or the last."""
        rank = 2 if name == "nn.group_norm" else 3
        x = self.pick_float(scope, lambda v: len(v.shape) >= rank and v.size > 0)
        if x is None:
            return None
        nd = len(x.shape)
        axis = self.c.choice([1, -1, nd - 1])
        ch = x.shape[axis]
        attrs: dict[str, Any] = {"axis": axis, "epsilon": self.c.choice([1e-5, 1e-3, 1e-2])}
        groups = ch
        if name == "nn.group_norm":
            groups = self.c.choice([g for g in range(1, ch + 1) if ch % g == 0])
            attrs["num_groups"] = groups
        if self.c.chance(0.15):
            attrs["center"] = False
        if self.c.chance(0.15):
            attrs["scale"] = False
        gamma = self.constant((ch,))
        beta = self.constant((ch,))
        call, ty = _call(name, [x, gamma, beta], attrs)
        # |x - mean| / std is at most sqrt(n) over a group of n elements
        n = ch // groups * x.size // max(1, x.shape[0] * ch)
        b = math.sqrt(max(n, 1)) * max(gamma.bound, 1.0) + beta.bound
        return _Value(call, ty, -b, b, False)

    def _nn_instance_norm(self, scope: _Scope) -> _Value | None:
        return self._nn_group_norm(scope, "nn.instance_norm")

    def _nn_einsum(self, scope: _Scope) -> _Value | None:
        """``einsum``: a permutation (maybe summing an axis) of one operand, a contraction
        of the last axis with a matrix (maybe spelled with ``...``), or a product of two
        operands of one shape summed over the last axis."""
        a = self.pick_float(scope, lambda v: 1 <= len(v.shape) <= 3 and v.size > 0,
                            max_bound=100)
        if a is None or not self.on("tuples"):  # its operands are a tuple
            return None
        nd = len(a.shape)
        letters = "abc"[:nd]
        kind = self.c.choice(["permute", "contract", "pairwise"])
        if kind == "permute":
            perm = list(letters)
            self.np_rng.shuffle(perm)
            out = "".join(perm)
            if self.c.chance(0.3):
                out = out[:-1]  # summed
            ops, eq = [a], f"{letters}->{out}"
            bound = a.bound * (a.shape[letters.index(perm[-1])] if len(out) < nd else 1)
        elif kind == "contract":
            k, n = a.shape[-1], self.c.choice([1, 2, 3])
            s = math.sqrt(3.0 / k)
            b = self.pick_float(scope, lambda v: v.shape == (k, n), max_bound=100) or \
                self.constant((k, n), -s, s)
            head = "..." if self.c.chance(0.3) else letters[:-1]
            ops, eq = [a, b], f"{head}{letters[-1]},{letters[-1]}z->{head}z"
            bound = k * a.bound * b.bound
        else:
            b = self.pick_float(scope, lambda v: v.shape == a.shape, max_bound=100) or \
                self.constant(a.shape)
            ops, eq = [a, b], f"{letters},{letters}->{letters[:-1]}"
            bound = a.shape[-1] * a.bound * b.bound
        if bound > _MAX_BOUND:
            return None
        tup = Tuple([o.expr for o in ops])
        call, ty = _call("einsum", [(tup, TupleType([o.type for o in ops]))], {"equation": eq})
        return _Value(call, ty, -bound, bound, False)

    def _nn_det(self, scope: _Scope) -> _Value | None:
        """``linalg.det`` of small square matrices (a stack of them now and then)."""
        a = self.pick_float(scope, lambda v: len(v.shape) >= 2 and v.shape[-1] == v.shape[-2]
                            and 0 < v.shape[-1] <= 3 and v.size <= 64, max_bound=2.0)
        if a is None:
            n = self.c.integer(1, 3)
            a = self.constant(self.c.choice([(), (2,)]) + (n, n))
        n = a.shape[-1]
        bound = math.factorial(n) * a.bound ** n
        call, ty = _call("linalg.det", [a])
        return _Value(call, ty, -bound, bound, False)

    def _nn_max_pool2d(self, scope: _Scope, name: str = "nn.max_pool2d") -> _Value | None:
        x = self.pick(scope, lambda v: len(v.shape) == 4 and v.size > 0 and v.dtype in _FLOATS)
        if x is None:
            x = self.image(scope)
            if x is None:
                return None
        layout = self.c.choice(["NCHW", "NCHW", "NHWC"])
        ph, pw = self.c.choice([1, 2, 2, 3]), self.c.choice([1, 2, 2, 3])
        attrs: dict[str, Any] = {
            "pool_size": (ph, pw), "strides": (self.c.choice([1, 2]), self.c.choice([1, 2])),
            "padding": [self.c.integer(0, ph - 1), self.c.integer(0, pw - 1),
                        self.c.integer(0, ph - 1), self.c.integer(0, pw - 1)],
            "layout": layout, "ceil_mode": self.c.chance(0.3),
        }
        if self.c.chance(0.2):
            attrs["dilation"] = (self.c.choice([1, 2]), self.c.choice([1, 2]))
        if name == "nn.avg_pool2d":
            attrs["count_include_pad"] = self.c.chance(0.5)
        if self.c.chance(0.1):
            attrs["out_layout"] = "NHWC" if layout == "NCHW" else "NCHW"
        try:
            call, ty = _call(name, [x], attrs)
            if not _windows_touch_data(x.shape, ty.shape, call.attrs):
                raise _Unfit("a window lies in the padding alone")  # -inf, or 0 / 0
        except _Unfit:
            call, ty = _call(name, [x], {"layout": layout})
        if name == "nn.max_pool2d":
            return x.like(call, ty)
        return _Value(call, ty, min(x.lo, 0.0), max(x.hi, 0.0), False)

    def _nn_avg_pool2d(self, scope: _Scope) -> _Value | None:
        return self._nn_max_pool2d(scope, "nn.avg_pool2d")

    def _nn_global_avg_pool2d(self, scope: _Scope) -> _Value | None:
        x = self.pick(scope, lambda v: len(v.shape) == 4 and v.size > 0 and v.dtype in _FLOATS)
        if x is None:
            return None
        layout = self.c.choice(["NCHW", "NHWC"])
        call, ty = _call("nn.global_avg_pool2d", [x], {"layout": layout})
        return _Value(call, ty, x.lo, x.hi, False)

    def channel_axis(self, a: _Value) -> int:
        nd = len(a.shape)
        if nd == 4:
            return self.c.choice([1, 1, 3, -1, -3])
        return self.c.integer(-nd, nd - 1)

    def _nn_batch_norm(self, scope: _Scope, x: _Value | None = None,
                       axis: int | None = None) -> _Value | None:
        """``batch_norm(...)[0]``, now and then ``[1]`` or ``[2]`` (its statistics); the
        result for a given ``x`` (a chain being built) is always ``[0]``."""
        chain = x is not None
        x = x or self.pick_float(scope, lambda v: len(v.shape) >= 1 and v.size > 0)
        if x is None:
            return None
        axis = self.channel_axis(x) if axis is None else axis
        ch = x.shape[axis]
        gamma = self.constant((ch,), 0.5, 1.5) if self.c.chance(0.8) else self.positive_constant(
            (ch,), 0.5, 1.5)
        beta = self.constant((ch,))
        mean = self.constant((ch,))
        var = self.positive_constant((ch,), 0.25, 2.0)
        attrs: dict[str, Any] = {"axis": axis, "epsilon": self.c.choice([1e-5, 1e-3, 0.1])}
        if self.c.chance(0.2):
            attrs["center"] = False
        if self.c.chance(0.2):
            attrs["scale"] = False
        call, tty = _call("nn.batch_norm", [x, gamma, beta, mean, var], attrs)
        assert isinstance(tty, TupleType)
        b = (x.bound + mean.bound) / math.sqrt(var.lo + attrs["epsilon"]) * gamma.bound \
            + beta.bound
        k = 0 if chain or self.c.chance(0.85) else self.c.integer(1, 2)
        if k == 0:
            return _Value(TupleGetItem(call, 0), tty.fields[0], -b, b, False)
        src = mean if k == 1 else var
        if self.c.chance(0.5):
            self.add(scope, _Value(TupleGetItem(call, 0), tty.fields[0], -b, b, False))
        return src.like(TupleGetItem(call, k), tty.fields[k])

    def _nn_layer_norm(self, scope: _Scope) -> _Value | None:
        x = self.pick_float(scope, lambda v: len(v.shape) >= 1 and v.size > 0)
        if x is None:
            return None
        axis = self.c.choice([-1, -1, self.c.integer(-len(x.shape), len(x.shape) - 1)])
        ch = x.shape[axis]
        gamma = self.constant((ch,))
        beta = self.constant((ch,))
        attrs: dict[str, Any] = {"axis": axis, "epsilon": self.c.choice([1e-5, 1e-3, 1e-2])}
        if self.c.chance(0.15):
            attrs["center"] = False
        if self.c.chance(0.15):
            attrs["scale"] = False
        call, ty = _call("nn.layer_norm", [x, gamma, beta], attrs)
        b = math.sqrt(max(ch, 1)) * gamma.bound + beta.bound
        return _Value(call, ty, -b, b, False)

    def _nn_activation(self, scope: _Scope) -> _Value | None:
        """One of the fused activations nn.gelu, nn.silu and nn.hard_swish."""
        a = self.pick(scope, lambda v: v.dtype in _FLOATS)
        if a is None:
            return None
        name = self.c.choice(["nn.gelu", "nn.silu", "nn.hard_swish"])
        attrs = {"approximate": self.c.choice(["none", "tanh"])} if name == "nn.gelu" else {}
        call, ty = _call(name, [a], attrs)
        # each is <= max(x, 0) and has its minimum (-0.17, -0.28, -0.375) below 0
        return _Value(call, ty, -0.375 if a.lo < 0 else 0.0, max(a.hi, 0.0), False)

    def _nn_rms_norm(self, scope: _Scope) -> _Value | None:
        x = self.pick_float(scope, lambda v: len(v.shape) >= 1 and v.size > 0)
        if x is None:
            return None
        nd = len(x.shape)
        axes = self.c.choice([(-1,), (-1,), tuple(range(-min(nd, 2), 0)),
                              (self.c.integer(-nd, nd - 1),)])
        weight = self.constant(tuple(x.shape[a] for a in axes))
        attrs = {"axes": axes, "epsilon": self.c.choice([1e-5, 1e-3, 1e-2])}
        call, ty = _call("nn.rms_norm", [x, weight], attrs)
        b = math.sqrt(max(math.prod(x.shape[a] for a in axes), 1)) * weight.bound
        return _Value(call, ty, -b, b, False)

    def _nn_attention(self, scope: _Scope) -> _Value | None:
        """nn.attention of a 4-D value as the query with constant key and value (fewer kv
        heads now and then), sometimes a bool or additive mask, causal or not."""
        q = self.image(scope, 10.0)
        if q is None:
            return None
        b, h, sq, d = q.shape
        hkv = self.c.choice([k for k in (1, 2, h) if k and h % k == 0])
        skv = self.c.integer(1, 4)
        s = 1.0 / math.sqrt(max(d, 1))
        key = self.constant((b, hkv, skv, d), -s, s)
        value = self.constant((b, hkv, skv, self.c.choice([d, 2, 3])))
        args = [q, key, value]
        kind = self.c.choice(["none", "none", "bool", "float"])
        if kind != "none":
            shape = self.c.choice([(sq, skv), (1, 1, sq, skv), (b, 1, 1, skv)])
            args.append(self.constant(shape, -2.0, 0.0, "bool" if kind == "bool" else
                                      "float32", as_param=False))
        attrs = {"is_causal": self.c.chance(0.4), "scale": self.c.choice([None, None, 0.5])}
        call, ty = _call("nn.attention", args, attrs)
        # a convex combination of value's rows (or 0 for a row with nothing to attend)
        return _Value(call, ty, min(value.lo, 0.0), max(value.hi, 0.0), False)

    def _nn_rotary_embedding(self, scope: _Scope) -> _Value | None:
        x = self.pick_float(scope, lambda v: len(v.shape) >= 1 and v.size > 0
                            and v.shape[-1] % 2 == 0)
        if x is None:
            return None
        nd = len(x.shape)
        tail = x.shape[-self.c.integer(1, nd):]
        if len(tail) > 1 and self.c.chance(0.5):
            tail = (1,) + tail[1:]
        cos, sin = self.constant(tail), self.constant(tail)
        call, ty = _call("nn.rotary_embedding", [x, cos, sin],
                         {"interleaved": self.c.chance(0.4)})
        b = x.bound * (cos.bound + sin.bound)
        return _Value(call, ty, -b, b, False)

    def _nn_lrn(self, scope: _Scope) -> _Value | None:
        x = self.pick_float(scope, lambda v: len(v.shape) >= 1 and v.size > 0, max_bound=100)
        if x is None:
            return None
        attrs = {"size": self.c.choice([1, 3, 5]), "axis": self.channel_axis(x),
                 "bias": self.c.choice([1.0, 2.0]), "alpha": self.c.choice([1e-4, 0.1]),
                 "beta": self.c.choice([0.5, 0.75])}
        call, ty = _call("nn.lrn", [x], attrs)
        return _Value(call, ty, -x.bound, x.bound, False)

    def _nn_dense(self, scope: _Scope, x: _Value | None = None) -> _Value | None:
        x = x or self.pick_float(scope, lambda v: len(v.shape) >= 1 and 0 < v.shape[-1] <= 32,
                                 max_bound=100)
        if x is None:
            return None
        k = x.shape[-1]
        units = self.c.choice([1, 2, 4, 8])
        scale = math.sqrt(3.0 / k)
        w = self.constant((units, k), -scale, scale)
        if w.bound > scale:
            scale = 1.0
        attrs: dict[str, Any] = {"units": units} if self.c.chance(0.5) else {}
        call, ty = _call("nn.dense", [x, w], attrs)
        b = k * scale * x.bound
        return _Value(call, ty, -b, b, False)

    def _nn_batch_matmul(self, scope: _Scope) -> _Value | None:
        x = self.pick_float(scope, lambda v: len(v.shape) == 3 and v.size > 0, max_bound=100)
        if x is None:
            x = self.reshaped(scope, 3)
            if x is None or x.bound > 100:
                return None
        ta, tb = self.c.chance(0.3), self.c.chance(0.7)
        b_, m, k = (x.shape[0], x.shape[2], x.shape[1]) if ta else x.shape
        n = self.c.choice([1, 3, 4])
        yshape = (self.c.choice([b_, 1]), n, k) if tb else (self.c.choice([b_, 1]), k, n)
        y = self.pick_float(scope, lambda v: v.shape == yshape and v is not x, max_bound=100)
        if y is None:
            s = math.sqrt(3.0 / k)
            y = self.constant(yshape, -s, s)
        call, ty = _call("nn.batch_matmul", [x, y], {"transpose_a": ta, "transpose_b": tb})
        b = k * x.bound * y.bound
        return _Value(call, ty, -b, b, False)

    def _nn_matmul(self, scope: _Scope) -> _Value | None:
        a = self.pick_float(scope, lambda v: 1 <= len(v.shape) <= 3 and v.size > 0,
                            max_bound=100)
        if a is None:
            return None
        k = a.shape[-1]
        n = self.c.choice([1, 2, 3])
        bshape = self.c.choice([(k,), (k, n), (1, k, n)] if len(a.shape) > 1 else [(k,),
                                                                                  (k, n)])
        s = math.sqrt(3.0 / k)
        b = self.pick_float(scope, lambda v: v.shape == bshape, max_bound=100) or self.constant(
            bshape, -s, s)
        call, ty = _call("matmul", [a, b])
        bound = k * a.bound * b.bound
        return _Value(call, ty, -bound, bound, False)

    def _nn_bias_add(self, scope: _Scope) -> _Value | None:
        x = self.pick_float(scope, lambda v: len(v.shape) >= 1)
        if x is None:
            return None
        axis = self.channel_axis(x)
        b = self.constant((x.shape[axis],))
        call, ty = _call("nn.bias_add", [x, b], {"axis": axis})
        return _Value(call, ty, x.lo + b.lo, x.hi + b.hi, False)

    def _nn_softmax(self, scope: _Scope, name: str = "nn.softmax") -> _Value | None:
        x = self.pick(scope, lambda v: len(v.shape) >= 1 and v.dtype in _FLOATS
                      and (v.size > 0 or self.on("empty")))
        if x is None:
            return None
        axis = self.c.integer(-len(x.shape), len(x.shape) - 1)
        call, ty = _call(name, [x], {"axis": axis})
        if name == "nn.softmax":
            return _Value(call, ty, 0.0, 1.0, False)
        b = (x.hi - x.lo) + math.log(max(2, x.shape[axis]))
        return _Value(call, ty, -b, 0.0, False)

    def _nn_log_softmax(self, scope: _Scope) -> _Value | None:
        return self._nn_softmax(scope, "nn.log_softmax")

    # -- scale and bias chains (FoldScaleAxis, SimplifyInference) -------------------------------
    def channel_const(self, ch: int, layout: str, lo: float, hi: float,
                      nd: int = 4) -> _Value:
        """A per-channel constant for a ``layout`` tensor: (C, 1, 1) for NCHW, (C,) or
        (1, 1, 1, C) for NHWC, (C,) for dense."""
        if layout == "NCHW":
            shape: tuple[int, ...] = self.c.choice([(ch, 1, 1), (1, ch, 1, 1)])
        elif layout == "NHWC":
            shape = self.c.choice([(ch,), (1, 1, 1, ch)])
        else:
            shape = (ch,)
        if lo > 0:
            return self.positive_constant(shape, lo, hi)
        return self.constant(shape, lo, hi)

    def _pattern(self, scope: _Scope) -> _Value | None:
        kind = self.c.weighted([("conv_bn", 3), ("conv_scale", 3), ("scale_conv", 2),
                                ("dense_scale", 1.5), ("scale_dense", 1), ("bn_relu_conv", 1),
                                ("conv_var_bias", 1)])
        x = self.image(scope, limit=10.0)
        if x is None:
            return None
        layout = self.c.choice(["NCHW", "NCHW", "NHWC"])
        caxis = 1 if layout == "NCHW" else 3
        relu = self.c.chance(0.5)
        if kind == "conv_bn":
            if not self.on("tuples"):
                return None
            conv = self._nn_conv2d(scope, x, layout)
            if conv is None:
                return None
            conv = self.add(scope, conv)
            out = self._nn_batch_norm(scope, conv, axis=caxis)
            assert out is not None
            if relu:
                out = self.relu(scope, out)
            return out
        if kind in ("conv_scale", "conv_var_bias"):
            conv = self.add(scope, self._nn_conv2d(scope, x, layout) or x)
            if conv is x:
                return None
            ch = conv.shape[caxis] if len(conv.shape) == 4 else conv.shape[-1]
            out = conv
            if kind == "conv_var_bias":
                # a bias that is not a constant: a param, expanded to (C, 1, 1) for NCHW
                expand = layout == "NCHW" and self.on("layout")
                bias = self.constant((ch,) if expand or layout == "NHWC" else (ch, 1, 1),
                                     as_param=True)
                if expand:
                    call, ty = _call("expand_dims", [bias], {"axis": 1, "num_newaxis": 2})
                    bias = bias.like(call, ty)
                call, ty = _call("add", [out, bias])
                out = self.add(scope, _Value(call, ty, out.lo + bias.lo, out.hi + bias.hi,
                                             False))
            elif self.c.chance(0.6):
                if self.c.chance(0.5):
                    b = self.constant((ch,))
                    call, ty = _call("nn.bias_add", [out, b], {"axis": caxis})
                else:
                    b = self.channel_const(ch, layout, -1, 1)
                    call, ty = _call(self.c.choice(["add", "subtract"]), [out, b])
                out = self.add(scope, _Value(call, ty, out.lo - b.bound, out.hi + b.bound,
                                             False))
            positive = relu or self.c.chance(0.5)
            if relu:
                out = self.relu(scope, out)
            s = self.channel_const(ch, layout, 0.5, 2.0) if positive else self.channel_const(
                ch, layout, -2.0, 2.0)
            call, ty = _call("multiply", [out, s] if self.c.chance(0.7) else [s, out])
            lo, hi = _mul_interval(out, s)
            return _Value(call, ty, lo, hi, False)
        if kind == "scale_conv":
            ch = x.shape[caxis]
            positive = relu or self.c.chance(0.5)
            s = self.channel_const(ch, layout, 0.5, 2.0) if positive else self.channel_const(
                ch, layout, -2.0, 2.0)
            call, ty = _call("multiply", [x, s])
            lo, hi = _mul_interval(x, s)
            y = self.add(scope, _Value(call, ty, lo, hi, False))
            if self.c.chance(0.4):
                b = self.channel_const(ch, layout, -1.0, 1.0)
                call, ty = _call("add", [y, b])
                y = self.add(scope, _Value(call, ty, y.lo + b.lo, y.hi + b.hi, False))
            if relu:
                y = self.relu(scope, y)
            return self._nn_conv2d(scope, y, layout)
        if kind == "bn_relu_conv":
            if not self.on("tuples"):
                return None
            y = self._nn_batch_norm(scope, x, axis=caxis)
            assert y is not None
            y = self.relu(scope, self.add(scope, y))
            return self._nn_conv2d(scope, self.tamed(scope, y, 10.0), layout)
        # dense chains
        v = self.pick_float(scope, lambda v: len(v.shape) == 2 and 0 < v.shape[-1] <= 32,
                            max_bound=10.0)
        if v is None:
            if not self.on("layout"):
                return None
            call, ty = _call("reshape", [x], {"newshape": [x.shape[0], -1]})
            v = self.add(scope, x.like(call, ty))
            if v.shape[-1] > 64:
                return None
        if kind == "dense_scale":
            d = self._nn_dense(scope, v)
            assert d is not None
            out = self.add(scope, d)
            if relu:
                out = self.relu(scope, out)
            s = self.channel_const(out.shape[-1], "dense", 0.5, 2.0)
            call, ty = _call("multiply", [out, s])
            lo, hi = _mul_interval(out, s)
            return _Value(call, ty, lo, hi, False)
        s = self.channel_const(v.shape[-1], "dense", 0.5, 2.0)
        call, ty = _call("multiply", [v, s])
        lo, hi = _mul_interval(v, s)
        y = self.add(scope, _Value(call, ty, lo, hi, False))
        if relu:
            y = self.relu(scope, y)
        return self._nn_dense(scope, y)

    def relu(self, scope: _Scope, a: _Value) -> _Value:
        call, ty = _call("nn.relu", [a])
        return self.add(scope, _Value(call, ty, max(a.lo, 0.0), max(a.hi, 0.0), a.exact))

    # -- blocks ----------------------------------------------------------------------------
    def _let_value(self, scope: _Scope) -> _Value:
        """``{ let %v = e; ... }`` used as a value (a let in non-tail position), its body a
        few steps that may bind lets of their own (nested)."""
        how = self.c.weighted([("unary", 3), ("pick", 2), ("dup", 2), ("nn", 2 * self.on("nn"))])
        a = None
        with contextlib.suppress(_Unfit):
            # a copy of a value of the scope: the same expression bound in two blocks
            a = {"unary": self._unary, "pick": self.pick,
                 "dup": lambda sc: self._dup(sc, blocks=True), "nn": self._nn}[how](scope)
        if a is None:
            a = self._unary(scope)
        scope.blocks.append(a)
        v = self.var(self.maybe(a.type))
        inner = scope.child()
        inner.pool.append(a.like(v))
        shape = self.c.weighted([("var", 3), ("chain", 5), ("other", 2)])
        if shape == "var":
            # just the var: `{ let %t = e; %t }`
            body = a.like(v)
        elif shape == "other":
            # a body that does not read the var: `{ let %t = e; f(%y) }` (a dead binding)
            other = self.pick(inner, lambda w: w.expr is not v) or a.like(v)
            body = self.chain(inner, other, 1 + self.c.integer(0, 1))
        else:
            body = self.chain(inner, a.like(v), 1 + self.c.integer(0, 2))
        return body.like(Let(v, a.expr, _wrap_lets(inner.lets, body.expr)))

    def _twin_blocks(self, scope: _Scope) -> _Value | None:
        """Two let blocks binding structurally equal values, the second one's body reading
        a use of the first (or its own var): ``%0 = { let %v = e; %v }; %1 = f(%0);
        %2 = { let %t = e'; g(%1) }`` -- CSE must merge them without a var escaping."""
        e = self._unary(scope)
        if not isinstance(e.expr, Call):
            return None
        v = self.var(self.maybe(e.type))
        inner = scope.child()
        body = e.like(v) if self.c.chance(0.5) else self.chain(inner, e.like(v), 1)
        first = self.add(scope, body.like(Let(v, e.expr, _wrap_lets(inner.lets, body.expr))))
        use = self.chain(scope, first, 1)
        t = self.var(self.maybe(e.type))
        copy = e.like(Call(e.expr.op, e.expr.args, e.expr.attrs if e.expr.op.attr_fields
                           else None))
        inner = scope.child()
        inner.pool.append(copy.like(t))
        start = use if self.c.chance(0.6) else copy.like(t)
        body = self.chain(inner, start, 1)
        return body.like(Let(t, copy.expr, _wrap_lets(inner.lets, body.expr)))

    def _if(self, scope: _Scope) -> _Value | None:
        cond = self.condition(scope, scalar=True)
        if cond is None:
            return None
        start = self.pick(scope, lambda v: v.dtype in _FLOATS)
        if start is None:
            return None
        if self.c.chance(0.5):
            # used by both branches only: the printer must put it before the `if`
            start = self._unary(_Scope([start]))
        self.budget -= 2
        second = self.pick(scope, lambda v: v is not start) if self.on("tuples") and \
            self.c.chance(0.25) else None
        if second is not None:
            # branches of a tuple type: `if (c) { (f(a), g(b)) } else { (h(a), k(b)) }`
            then = [self.branch(scope, start, [second]) for _ in range(2)]
            node = If(cond.expr, then[0][0].expr, then[1][0].expr)
            fields = [_Value(TupleGetItem(node, k), v.type, min(then[0][k + 1].lo,
                                                                  then[1][k + 1].lo),
                             max(then[0][k + 1].hi, then[1][k + 1].hi), False)
                      for k, v in enumerate((start, second))]
            k = self.c.integer(0, 1)
            if self.c.chance(0.5):
                self.add(scope, fields[1 - k])
            return fields[k]
        (then, out_then), (other, out_other) = (self.branch(scope, start) for _ in range(2))
        return _Value(If(cond.expr, then.expr, other.expr), start.type,
                      min(out_then.lo, out_other.lo), max(out_then.hi, out_other.hi), False)

    def branch(self, scope: _Scope, start: _Value, more: Sequence[_Value] = ()) -> list[Any]:
        """A branch of an ``if``: ``[body, out]`` computing a value of ``start``'s type
        from it (``out`` has its interval), or ``[body, out, more_out, ...]`` whose body is
        the tuple of one such value per start."""
        inner = scope.child()
        out = self.chain(inner, start, self.c.integer(1, 2))
        if self.on("lets") and self.c.chance(0.3):
            out = self.chain(inner, self._let_value(inner), 1)
            if out.type != start.type:
                out = self.chain(inner, start, 1)
        outs = [out] + [self.chain(inner, m, 1) for m in more]
        body: Expr = Tuple([o.expr for o in outs]) if more else out.expr
        return [out.like(_wrap_lets(inner.lets, body)), *outs]

    def chain(self, scope: _Scope, value: _Value, n: int) -> _Value:
        """``n`` type-preserving ops applied to ``value`` (partners come from ``scope``)."""
        for _ in range(n):
            self.budget -= 1
            if value.dtype in _FLOATS and self.c.chance(0.5):
                name = self.c.choice(["add", "subtract", "multiply", "maximum"])
                cur = value

                def fits(v: _Value, name: str = name, cur: _Value = cur) -> bool:
                    if v.dtype != cur.dtype or _broadcast(cur.shape, v.shape) != cur.shape:
                        return False
                    return (v.bound * cur.bound if name == "multiply"
                            else v.bound + cur.bound) <= _MAX_BOUND

                b = self.pick(scope, fits)
                if b is not None:
                    if name == "multiply":
                        lo, hi = _mul_interval(value, b)
                    elif name == "maximum":
                        lo, hi = max(value.lo, b.lo), max(value.hi, b.hi)
                    elif name == "add":
                        lo, hi = value.lo + b.lo, value.hi + b.hi
                    else:
                        lo, hi = value.lo - b.hi, value.hi - b.lo
                    call, ty = _call(name, [value, b])
                    value = self.add(scope, _Value(call, ty, lo, hi, False))
                    continue
            if value.dtype in _FLOATS:
                name = self.c.choice(["negative", "tanh", "sigmoid", "nn.relu"])
            else:
                name = self.c.choice(["negative", "abs"]) if value.dtype != "bool" else "copy"
            if name == "copy":
                call, ty = _call("maximum", [value, value])
                value = self.add(scope, value.like(call, ty))
                continue
            call, ty = _call(name, [value])
            if name == "negative":
                value = self.add(scope, _Value(call, ty, -value.hi, -value.lo, value.exact))
            elif name == "abs":
                value = self.add(scope, _Value(call, ty, 0.0, value.bound, value.exact))
            elif name == "nn.relu":
                value = self.add(scope, _Value(call, ty, max(value.lo, 0.0),
                                               max(value.hi, 0.0), value.exact))
            else:
                lo, hi = (math.tanh(value.lo), math.tanh(value.hi)) if name == "tanh" else (
                    0.0, 1.0)
                value = self.add(scope, _Value(call, ty, lo, hi, False))
            if self.on("lets") and self.c.chance(0.2):
                value = self.bind(scope, value)
        return value

    def _closure(self, scope: _Scope) -> _Value | None:
        """A local function capturing outer values, called directly, through a let-bound
        var (then maybe twice) or through a tuple; its body is a few steps of their own,
        closures among them."""
        arg = self.pick(scope)
        if arg is None:
            return None
        ty = arg.type
        twice = self.on("lets") and self.c.chance(0.3)
        second = self.pick(scope, lambda v: v.type == ty and v is not arg) if twice else None
        lo = min(arg.lo, second.lo) if second else arg.lo
        hi = max(arg.hi, second.hi) if second else arg.hi
        exact = arg.exact and (second.exact if second else True)
        p = self.var(ty)
        inner = scope.child()
        pv = _Value(p, ty, lo, hi, exact)
        inner.pool.append(pv)
        first_new = len(inner.pool) - 1
        self.closure_depth += 1
        budget = self.budget
        try:
            steps = self.c.integer(1, 3)
            self.budget = steps
            while self.budget > 0:
                self.step(inner)
            if self.c.chance(0.5):
                self.chain(inner, pv, 1)  # a result that reads the param
            nested = None
            if self.closure_depth < 2 and self.c.chance(0.2):
                nested = self._closure(inner)  # the result: a call of a nested closure
        finally:
            self.closure_depth -= 1
            self.budget = budget - steps
        out = nested or _sinks(inner.pool[first_new:], dict(inner.lets), 1)[0]
        fn = Function([p], _wrap_lets(inner.lets, out.expr), self.maybe(out.type))
        callee: Expr = fn
        if self.on("lets") and (twice or self.c.chance(0.4)):
            f = self.var(FuncType([ty], out.type) if self.c.chance(0.7) else None)
            scope.lets.append((f, fn))
            callee = f
        if self.on("tuples") and self.c.chance(0.15):
            callee = TupleGetItem(Tuple([callee]), 0)  # a function value in a tuple
        result = _Value(Call(callee, [arg.expr]), out.type, out.lo, out.hi, out.exact)
        if second is not None and not isinstance(callee, Function):
            self.add(scope, result)
            return _Value(Call(callee, [second.expr]), out.type, out.lo, out.hi, out.exact)
        return result

    def _loop(self, scope: _Scope) -> _Value | None:
        """A recursive closure counting down an int32 scalar: ``let %f = fn (%n, %x) {
        if (%n > 0) { %f(%n - 1, g(%x)) } else { %x } }; %f(3, %v)``."""
        x = self.pick(scope, lambda v: v.dtype in _FLOATS)
        if x is None:
            return None
        counter, body_x, f = self.loop_function(x.type, recursive_var=True)
        assert isinstance(f, Var)
        fn = self.loop_body(f, counter, body_x)
        scope.lets.append((f, fn))
        n = self.constant((), 0, 3, "int32")
        return _Value(Call(f, [n.expr, x.expr]), x.type, min(x.lo, -1.0), max(x.hi, 1.0),
                      False)

    def loop_function(self, ty: TensorType, recursive_var: bool) -> tuple[Var, Var, Expr]:
        """The params of a loop and what calls it recursively (a let var or a global)."""
        counter = Var("n", _tensor((), "int32"))
        body_x = self.var(ty)
        fty = FuncType([_tensor((), "int32"), ty], ty)
        return counter, body_x, Var(next(self.names), fty) if recursive_var else GlobalVar(
            "loop")

    def loop_body(self, f: Expr, counter: Var, x: Var) -> Function:
        """``fn (%n, %x) { if (%n > 0) { f(%n - 1, g(%x)) } else { %x } }`` with ``g`` a
        chain of bounded ops (so any number of rounds stays in range)."""
        ty = x.type_annotation
        assert isinstance(ty, TensorType)
        inner = _Scope([_Value(x, ty, -1.0, 1.0, False)])
        value = inner.pool[0]
        for _ in range(self.c.integer(1, 2)):
            name = self.c.choice(["tanh", "sigmoid", "nn.relu", "negative", "erf"])
            call, cty = _call(name, [value])
            value = self.add(inner, _Value(call, cty, -1.0, 1.0, False))
        zero = self.scalar(0, "int32")
        one = self.scalar(1, "int32")
        cond, _ = _call(self.c.choice(["greater", "not_equal"]), [
            (counter, _tensor((), "int32")), zero])
        dec, _ = _call("subtract", [(counter, _tensor((), "int32")), one])
        again = Call(f, [dec, _wrap_lets(inner.lets, value.expr)])
        return Function([counter, x], If(cond, again, x), ty)

    def _global_call(self, scope: _Scope) -> _Value | None:
        g = self.c.choice(self.globals)
        args = []
        for pty in g.params:
            if pty.dtype == "int32":  # the counter of @loop: a few rounds
                args.append(self.constant((), 0, 3, "int32").expr)
                continue
            a = self.pick(scope, lambda v, t=pty: v.type == t)
            if a is None:
                a = self.constant(pty.shape, dtype=pty.dtype)
            args.append(self.tamed(scope, a, 1.0).expr)
        call = Call(g.gv, args)
        if len(g.results) == 1:
            r = g.results[0]
            return _Value(call, r.type, r.lo, r.hi, False)
        fields = [_Value(TupleGetItem(call, k), r.type, r.lo, r.hi, False)
                  for k, r in enumerate(g.results)]
        k = self.c.integer(0, len(fields) - 1)
        for j, f in enumerate(fields):
            if j != k and self.c.chance(0.5):
                self.add(scope, f)
        return fields[k]

    # -- functions --------------------------------------------------------------------------
    def function(self, n_params: int, size: int, outputs: int,
                 shapes: Sequence[tuple[int, ...]], exact_params: bool,
                 ) -> tuple[Function, list[_Value]]:
        """A function of ``n_params`` float32 params (and any weights added as params) and
        about ``size`` nodes, and the values its result holds: one, or with ``outputs`` > 1
        the fields of a tuple of up to that many."""
        self.fn = _Function([], exact_params)
        params = [self.param(_tensor(self.c.choice(shapes))) for _ in range(n_params)]
        scope = _Scope([_Value(p, p.type_annotation, -1.0, 1.0, exact_params)  # type: ignore[arg-type]
                        for p in params])
        self.budget = size
        for _ in self.globals:
            if self.c.chance(0.7):
                # calls early in the body, so later nodes use them
                scope.pool.append(self._global_call(scope))
        while self.budget > 0:
            self.step(scope)
        produced = scope.pool[n_params:] or scope.pool
        # the result: the values that reach the most nodes and not each other, so most of
        # what was built is live and a wrong rewrite shows in the outputs
        k = self.c.integer(2, outputs) if outputs > 1 and len(produced) > 1 else 1
        picked = _sinks(produced, dict(scope.lets), k)
        body: Expr
        ret: Type
        if len(picked) > 1:
            body = Tuple([v.expr for v in picked])
            ret = TupleType([v.type for v in picked])
        else:
            body, ret = picked[0].expr, picked[0].type
        body = _wrap_lets(scope.lets, body)
        fn = Function(list(self.fn.params), body, self.maybe(ret))
        return fn, picked


def generate(choices: Choices, max_nodes: int = 24,
             features: Iterable[str] = FEATURES) -> IRModule:
    """A module built from ``choices``: ``@main`` of about ``max_nodes`` nodes (op calls
    and blocks; constants are extra) and, with ``globals``, up to two ``@helper``
    functions and a recursive ``@loop`` it calls. ``features`` is a subset of
    :data:`FEATURES`."""
    feats = frozenset(features)
    unknown = feats - FEATURES
    if unknown:
        raise ValueError(f"unknown program features {sorted(unknown)}; known: {sorted(FEATURES)}")
    if max_nodes < 1:
        raise ValueError(f"max_nodes must be >= 1, got {max_nodes}")
    g = _Generator(choices, max_nodes, feats)
    shapes = SHAPES[:5] + (_NN_SHAPES if "nn" in feats else ())
    funcs: dict[GlobalVar, Function] = {}
    main_size = max(1, choices.integer(1, max_nodes))
    if "globals" in feats and max_nodes >= 6 and choices.chance(0.5):
        for k in range(choices.integer(1, 2)):
            size = choices.integer(1, max(1, max_nodes // 4))
            main_size = max(1, min(main_size, max_nodes - size))
            # helpers may call the helpers made before them, not closures of main
            pair = "tuples" in feats and choices.chance(0.25)
            # a helper returns a tensor or a pair
            func, results = g.function(choices.integer(1, 2), size, 2 if pair else 1,
                                       SHAPES[:5] + (_NN_SHAPES[:2] if "nn" in feats else ()),
                                       exact_params=False)
            body = func.body
            attrs = {"Inline": 1} if choices.chance(0.5) else None
            # calls of a global function need its result type: always annotate it
            ret: Type = results[0].type if len(results) == 1 else TupleType(
                [r.type for r in results])
            func = Function(func.params, body, ret, attrs)
            gv = GlobalVar("helper" if k == 0 else f"helper_{k}")
            funcs[gv] = func
            params = [p.type_annotation for p in func.params]
            g.globals.append(_Global(gv, params, results))  # type: ignore[arg-type]
        if {"ifs", "dtypes"} <= feats and choices.chance(0.3):
            # a recursive global: never inlined (Inline warns), lifted closures call it
            ty = _tensor(choices.choice(SHAPES[:5]))
            counter, x, gv = g.loop_function(ty, recursive_var=False)
            assert isinstance(gv, GlobalVar)
            loop = g.loop_body(gv, counter, x)
            if choices.chance(0.3):
                loop = Function(loop.params, loop.body, loop.ret_type, {"Inline": 1})
            funcs[gv] = loop
            g.globals.append(_Global(gv, [_tensor((), "int32"), ty],
                                     [_Value(x, ty, -1.0, 1.0, False)]))
    result_tuple = "tuples" in feats and choices.chance(0.5)
    n_params = choices.integer(1, 3)
    main, _ = g.function(n_params, main_size, 3 if result_tuple else 1, shapes,
                         exact_params=True)
    # @main first, as people write it
    return IRModule({GlobalVar("main"): main, **funcs})


def random_module(seed: int | random.Random, max_nodes: int = 24,
                  features: Iterable[str] = FEATURES) -> IRModule:
    """The module of ``seed`` (an int or a ``random.Random``): see :func:`generate`."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    return generate(SeededChoices(rng), max_nodes, features)


def random_args(mod: IRModule | Function, seed: int = 0) -> dict[str, Any]:
    """Arguments for ``@main`` (or a function) by parameter name: floats uniform in
    [-1, 1] (the range the generator assumes), ints in [-8, 8], bools either way."""
    return random_inputs(mod, seed, draw=_random_value)


def _random_value(ty: Type, rng: np.random.Generator) -> Any:
    if isinstance(ty, TupleType):
        return tuple(_random_value(f, rng) for f in ty.fields)
    if not isinstance(ty, TensorType):
        raise TypeError(f"random_args: cannot make a value of type {ty}")
    kind = np.dtype(ty.dtype).kind
    if kind == "f":
        return rng.uniform(-1.0, 1.0, size=ty.shape).astype(ty.dtype)
    if kind == "b":
        return rng.integers(0, 2, size=ty.shape).astype(bool)
    return rng.integers(0 if kind == "u" else -8, 9, size=ty.shape).astype(ty.dtype)
