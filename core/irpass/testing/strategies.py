"""Hypothesis strategies for random, well-typed programs and inputs to run them on.

Property tests of passes draw a module, run the pass, and compare::

    from hypothesis import given
    from irpass.testing import strategies as sts

    @given(sts.modules_and_inputs())
    def test_fold_constant_keeps_meaning(mod_and_args):
        mod, args = mod_and_args
        assert_allclose(evaluate(FoldConstant()(mod), *args), evaluate(mod, *args))

:func:`modules` builds ``@main`` (and often a second global function
``@helper`` that it calls) from float32 tensors of the shapes in
:data:`SHAPES` -- small ones that broadcast together, like ``(2, 3)``,
``(3,)`` and ``()``, and ``(4, 5)`` for constants too big to print inline --
with the standard ops ``add``, ``subtract``, ``multiply``, ``maximum``,
``negative``, ``tanh``, ``exp``, ``sigmoid``, ``nn.relu``, ``reshape`` and
``transpose``. Programs have shared sub-expressions (a DAG), constants,
``let`` chains and ``let`` used as a value, tuples and projections, ``if`` on
a comparison (``greater(sum(x), c)``) with a node shared by both branches,
closures that capture outer values (called directly or through a
``let``-bound variable), and calls of ``@helper``. Variables share a few
names (``x``, ``y``, ``v``, ...), so the printer's renaming gets exercised.

Every program is well typed by construction (each node's shape is tracked
while it is built), and values stay finite: params and constants are drawn
from [-1, 1] and an op that could make a value bigger than about 10^4 (``exp``
of a big value, a long chain of products) is not chosen. :func:`inputs_for`
draws matching arguments, :func:`modules_and_inputs` both.

Hypothesis is only a test dependency: import this module from tests only.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ..ir.expr import Expr
from ..ir.module import IRModule
from ..ir.nodes import Call, Constant, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from ..ir.op import Op
from ..ir.types import FuncType, TensorType, TupleType, Type

__all__ = ["modules", "inputs_for", "modules_and_inputs", "SHAPES"]

#: Shapes of params and constants. The first five broadcast with each other;
#: (4, 5) and (5,) make constants too big to print inline.
SHAPES: tuple[tuple[int, ...], ...] = ((2, 3), (3,), (1, 3), (2, 1), (), (4, 5), (5,))

# the first four keep the bound of their input at most as it is (see ``_chain``)
_UNARY = ("negative", "tanh", "sigmoid", "nn.relu", "exp", "erf", "nn.leaky_relu")
_BINARY = ("add", "subtract", "multiply", "maximum")
_MAX_BOUND = 1e4
Draw = Callable[[st.SearchStrategy[Any]], Any]


@dataclass
class _Value:
    """An expression of the program being built, with its shape and a bound on |value|."""

    expr: Expr
    shape: tuple[int, ...]
    bound: float


@dataclass
class _Scope:
    """What a block under construction can use, and the lets it has bound so far."""

    pool: list[_Value]
    lets: list[tuple[Var, Expr]] = field(default_factory=list)

    def child(self) -> _Scope:
        return _Scope(list(self.pool))


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _tensor(shape: tuple[int, ...]) -> TensorType:
    return TensorType(shape, "float32")


class _Builder:
    """Draws one program, one node at a time."""

    def __init__(self, draw: Draw, max_nodes: int, features: frozenset[str]) -> None:
        self.draw = draw
        self.budget = max_nodes
        self.features = features
        # Few distinct names, so different vars often share one (the printer renames).
        self.names = itertools.cycle(["x", "y", "v", "x_1", "tmp"])
        self.helper: tuple[GlobalVar, Function, list[tuple[int, ...]], float] | None = None

    def _flag(self, name: str, p: float) -> bool:
        return name in self.features and self.draw(st.floats(0, 1)) < p

    # -- leaves --------------------------------------------------------------------
    def constant(self, shapes: tuple[tuple[int, ...], ...] = SHAPES) -> _Value:
        shape = self.draw(st.sampled_from(shapes))
        data = self.draw(
            hnp.arrays(np.float32, shape, elements=st.floats(-1, 1, width=32))
        )
        # -0.0 and 0.0 print differently; both must survive the round trip.
        return _Value(Constant(data), shape, 1.0)

    # -- one step ------------------------------------------------------------------
    def step(self, scope: _Scope) -> None:
        """Add one new node (or a few) to ``scope.pool``."""
        self.budget -= 1
        draw = self.draw
        pool = scope.pool
        kinds = ["unary", "binary", "binary", "unary"]
        if "constants" in self.features:
            kinds.append("constant")
        if "layout" in self.features:
            kinds += ["reshape", "transpose"]
        if "tuples" in self.features:
            kinds.append("tuple")
        if "lets" in self.features:
            kinds += ["let_value"]
        if "ifs" in self.features and self.budget > 4:
            kinds.append("if")
        if "closures" in self.features and self.budget > 3:
            kinds.append("closure")
        if self.helper is not None:
            kinds.append("global_call")
        kind = draw(st.sampled_from(kinds))
        new = getattr(self, "_" + kind)(scope)
        if new is None:
            new = self._unary(scope)
        pool.append(new)
        if "lets" in self.features and self._flag("lets", 0.25):
            # Bind it: later nodes may use the let var or the value itself.
            v = Var(next(self.names), _tensor(new.shape) if draw(st.booleans()) else None)
            scope.lets.append((v, new.expr))
            pool.append(_Value(v, new.shape, new.bound))

    def pick(self, scope: _Scope, ok: Callable[[_Value], bool] = lambda v: True) -> _Value | None:
        # Recent values are likelier, so chains grow deep and most nodes get used.
        cands = [v for v in scope.pool if ok(v)]
        if not cands:
            return None
        k = self.draw(st.integers(0, len(cands) - 1))
        if self.draw(st.booleans()):
            k = len(cands) - 1 - (k % min(3, len(cands)))
        return cands[k]

    def _unary(self, scope: _Scope) -> _Value:
        name = self.draw(st.sampled_from(_UNARY))
        a = self.pick(scope, lambda v: name != "exp" or v.bound <= 5)
        if a is None:
            name = "tanh"
            a = self.pick(scope)
        assert a is not None
        if name == "exp":
            # Only here: exp of the (possibly huge) bound of an operand of another op
            # would overflow and warn for nothing.
            bound = float(np.exp(a.bound))
        else:
            bound = {"tanh": 1.0, "sigmoid": 1.0, "erf": 1.0}.get(name, a.bound)
        return _Value(Call(Op.get(name), [a.expr]), a.shape, bound)

    def _binary(self, scope: _Scope) -> _Value | None:
        name = self.draw(st.sampled_from(_BINARY))
        a = self.pick(scope)
        assert a is not None

        def fits(v: _Value) -> bool:
            if _broadcast(a.shape, v.shape) is None:
                return False
            return _combine(name, a.bound, v.bound) <= _MAX_BOUND

        b = self.pick(scope, fits)
        if b is None:
            return None
        if self.draw(st.booleans()):
            a, b = b, a
        shape = _broadcast(a.shape, b.shape)
        assert shape is not None
        return _Value(Call(Op.get(name), [a.expr, b.expr]), shape, _combine(name, a.bound, b.bound))

    def _constant(self, scope: _Scope) -> _Value:
        return self.constant()

    def _reshape(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: len(v.shape) > 0)
        if a is None:
            return None
        size = int(np.prod(a.shape))
        extra = ((3, 2), (6,), (3, 1), (1, 2, 3), (2,), (1, 2), (5, 4), (size,), a.shape)
        options = sorted({s for s in SHAPES + extra if int(np.prod(s)) == size})
        shape = self.draw(st.sampled_from(options))
        newshape = list(shape)
        if newshape and self.draw(st.booleans()):
            newshape[self.draw(st.integers(0, len(newshape) - 1))] = -1
        call = Call(Op.get("reshape"), [a.expr], {"newshape": newshape})
        return _Value(call, tuple(shape), a.bound)

    def _transpose(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope, lambda v: len(v.shape) >= 2)
        if a is None:
            return None
        nd = len(a.shape)
        if self.draw(st.booleans()):
            axes = None
            perm = list(reversed(range(nd)))
        else:
            perm = self.draw(st.permutations(list(range(nd))))
            axes = perm
        shape = tuple(a.shape[i] for i in perm)
        return _Value(Call(Op.get("transpose"), [a.expr], {"axes": axes}), shape, a.bound)

    def _tuple(self, scope: _Scope) -> _Value:
        n = self.draw(st.integers(1, 3))
        fields = [self.pick(scope) for _ in range(n)]
        tup = Tuple([f.expr for f in fields if f is not None])
        k = self.draw(st.integers(0, len(tup.fields) - 1))
        chosen = fields[k]
        assert chosen is not None
        out = _Value(TupleGetItem(tup, k), chosen.shape, chosen.bound)
        if self.draw(st.booleans()):
            # A second projection of the same tuple: a shared tuple node.
            j = self.draw(st.integers(0, len(tup.fields) - 1))
            other = fields[j]
            assert other is not None
            scope.pool.append(_Value(TupleGetItem(tup, j), other.shape, other.bound))
        return out

    def _let_value(self, scope: _Scope) -> _Value:
        """``{ let %v = e; f(%v) }`` used as a value (a let in non-tail position)."""
        a = self._unary(scope)
        v = Var(next(self.names), _tensor(a.shape) if self.draw(st.booleans()) else None)
        inner = scope.child()
        inner.pool.append(_Value(v, a.shape, a.bound))
        body = self._chain(inner, _Value(v, a.shape, a.bound), 1 + self.draw(st.integers(0, 1)))
        return _Value(Let(v, a.expr, _wrap_lets(inner.lets, body.expr)), body.shape, body.bound)

    def _if(self, scope: _Scope) -> _Value | None:
        a = self.pick(scope)
        c = self.pick(scope)
        assert a is not None and c is not None
        total = Call(Op.get("sum"), [c.expr])
        threshold = Constant(np.array(self.draw(st.sampled_from([0.0, 0.5, -0.5])), np.float32))
        cond = Call(Op.get(self.draw(st.sampled_from(["greater", "less"]))), [total, threshold])
        start = a
        if self.draw(st.booleans()):
            # Used by both branches only: the printer must put it before the `if`.
            start = self._unary(_Scope([a]))
        then = self._branch(scope, start)
        other = self._branch(scope, start)
        self.budget -= 2
        return _Value(If(cond, then.expr, other.expr), start.shape, max(then.bound, other.bound))

    def _branch(self, scope: _Scope, start: _Value) -> _Value:
        inner = scope.child()
        out = self._chain(inner, start, self.draw(st.integers(1, 2)))
        return _Value(_wrap_lets(inner.lets, out.expr), out.shape, out.bound)

    def _chain(self, scope: _Scope, value: _Value, n: int) -> _Value:
        """``n`` shape-preserving ops applied to ``value`` (partners come from ``scope``)."""
        for _ in range(n):
            self.budget -= 1
            if self.draw(st.booleans()):
                name = self.draw(st.sampled_from(_BINARY))
                cur = value

                def fits(v: _Value, name: str = name, cur: _Value = cur) -> bool:
                    return (
                        _broadcast(cur.shape, v.shape) == cur.shape
                        and _combine(name, cur.bound, v.bound) <= _MAX_BOUND
                    )

                b = self.pick(scope, fits)
                if b is not None:
                    value = _Value(
                        Call(Op.get(name), [value.expr, b.expr]),
                        value.shape,
                        _combine(name, value.bound, b.bound),
                    )
                    scope.pool.append(value)
                    continue
            name = self.draw(st.sampled_from(_UNARY[:4]))
            bound = 1.0 if name in ("tanh", "sigmoid") else value.bound
            value = _Value(Call(Op.get(name), [value.expr]), value.shape, bound)
            scope.pool.append(value)
            if self._flag("lets", 0.2):
                ann = _tensor(value.shape) if self.draw(st.booleans()) else None
                v = Var(next(self.names), ann)
                scope.lets.append((v, value.expr))
                value = _Value(v, value.shape, value.bound)
                scope.pool.append(value)
        return value

    def _closure(self, scope: _Scope) -> _Value | None:
        arg = self.pick(scope)
        assert arg is not None
        p = Var(next(self.names), _tensor(arg.shape))
        inner = scope.child()
        inner.pool.append(_Value(p, arg.shape, arg.bound))
        out = self._chain(inner, _Value(p, arg.shape, arg.bound), self.draw(st.integers(1, 3)))
        ret = _tensor(out.shape) if self.draw(st.booleans()) else None
        fn = Function([p], _wrap_lets(inner.lets, out.expr), ret)
        if self._flag("lets", 0.5):
            f = Var(next(self.names), FuncType([_tensor(arg.shape)], _tensor(out.shape)))
            scope.lets.append((f, fn))
            return _Value(Call(f, [arg.expr]), out.shape, out.bound)
        return _Value(Call(fn, [arg.expr]), out.shape, out.bound)

    def _global_call(self, scope: _Scope) -> _Value | None:
        assert self.helper is not None
        gv, func, shapes, bound = self.helper
        args = []
        for shape in shapes:
            a = self.pick(scope, lambda v, s=shape: v.shape == s and v.bound <= 1.0)
            if a is None:
                a = self.constant((shape,))
            args.append(a.expr)
        ret = func.ret_type
        assert isinstance(ret, TensorType)
        return _Value(Call(gv, args), ret.shape, bound)

    # -- functions -----------------------------------------------------------------
    def function(
        self, n_params: int, size: int, result_tuple: bool
    ) -> tuple[Function, float, Type]:
        """A function of ``n_params`` tensor params and about ``size`` nodes (plus its bound
        on |result| and its result type)."""
        params = [
            Var(next(self.names), _tensor(self.draw(st.sampled_from(SHAPES[:5]))))
            for _ in range(n_params)
        ]
        assert all(isinstance(p.type_annotation, TensorType) for p in params)
        scope = _Scope([_Value(p, p.type_annotation.shape, 1.0) for p in params])  # type: ignore[union-attr]
        start = self.budget
        self.budget = size
        while self.budget > 0:
            self.step(scope)
        self.budget = start
        last = scope.pool[len(params):] or scope.pool
        if result_tuple and len(last) > 1:
            k = self.draw(st.integers(2, min(3, len(last))))
            picked = last[-k:]
            body: Expr = Tuple([v.expr for v in picked])
            ret: Type = TupleType([_tensor(v.shape) for v in picked])
            bound = max(v.bound for v in picked)
        else:
            body = last[-1].expr
            ret = _tensor(last[-1].shape)
            bound = last[-1].bound
        body = _wrap_lets(scope.lets, body)
        annotate = self.draw(st.booleans())
        return Function(params, body, ret if annotate else None), bound, ret


def _combine(name: str, a: float, b: float) -> float:
    if name == "multiply":
        return a * b
    if name == "maximum":
        return max(a, b)
    return a + b


def _wrap_lets(lets: list[tuple[Var, Expr]], body: Expr) -> Expr:
    for v, value in reversed(lets):
        body = Let(v, value, body)
    return body


_ALL_FEATURES = frozenset({"lets", "ifs", "closures", "globals", "tuples", "constants", "layout"})


@st.composite
def _modules(draw: Draw, max_nodes: int, features: frozenset[str]) -> IRModule:
    b = _Builder(draw, max_nodes, features)
    funcs: dict[GlobalVar, Function] = {}
    main_size = max(1, draw(st.integers(1, max_nodes)))
    if "globals" in features and max_nodes >= 6 and draw(st.booleans()):
        helper_size = draw(st.integers(1, max(1, max_nodes // 4)))
        main_size = max(1, min(main_size, max_nodes - helper_size))
        inner = _Builder(draw, helper_size, features - {"globals"})
        inner.names = b.names
        func, bound, ret = inner.function(draw(st.integers(1, 2)), helper_size, False)
        # Calls of a global function need its result type: always annotate it.
        func = Function(func.params, func.body, ret, func.attrs)
        gv = GlobalVar("helper")
        shapes = [p.type_annotation.shape for p in func.params]  # type: ignore[union-attr]
        b.helper = (gv, func, shapes, bound)
        funcs[gv] = func
    result_tuple = "tuples" in features and draw(st.booleans())
    main, _, _ = b.function(draw(st.integers(1, 3)), main_size, result_tuple)
    # @main first, as people write it.
    return IRModule({GlobalVar("main"): main, **funcs})


def modules(
    max_nodes: int = 24,
    *,
    lets: bool = True,
    ifs: bool = True,
    closures: bool = True,
    globals: bool = True,  # noqa: A002 - the feature's name
    tuples: bool = True,
    constants: bool = True,
    layout: bool = True,
) -> st.SearchStrategy[IRModule]:
    """Random well-typed modules with ``@main`` of about ``max_nodes`` nodes or fewer.

    The keyword flags switch features off: ``lets`` (let chains, lets used as
    values), ``ifs``, ``closures``, ``globals`` (a second function ``@helper``
    called from ``@main``), ``tuples``, ``constants``, ``layout`` (reshape
    and transpose). With all off, programs are DAGs of elementwise and
    broadcasting ops over the params.
    """
    if max_nodes < 1:
        raise ValueError(f"modules: max_nodes must be >= 1, got {max_nodes}")
    flags = {
        "lets": lets,
        "ifs": ifs,
        "closures": closures,
        "globals": globals,
        "tuples": tuples,
        "constants": constants,
        "layout": layout,
    }
    features = frozenset(name for name, on in flags.items() if on)
    return _modules(max_nodes, features)


def _value_strategy(ty: Type) -> st.SearchStrategy[Any]:
    if isinstance(ty, TensorType):
        dtype = np.dtype(ty.dtype)
        if dtype.kind == "f":
            elements = st.floats(-1, 1, width=min(64, dtype.itemsize * 8))
        elif dtype.kind == "b":
            elements = st.booleans()
        else:
            elements = st.integers(0 if dtype.kind == "u" else -8, 8)
        return hnp.arrays(dtype, ty.shape, elements=elements)
    if isinstance(ty, TupleType):
        return st.tuples(*(_value_strategy(f) for f in ty.fields))
    raise TypeError(f"inputs_for: cannot make a value of type {ty}")


def inputs_for(func_or_mod: IRModule | Function) -> st.SearchStrategy[tuple[Any, ...]]:
    """Arguments for ``@main`` of a module (or for a function), one per param.

    Floats are drawn from [-1, 1], ints from [-8, 8], with exactly the
    params' shapes and dtypes. Every param must have a type annotation.
    """
    func = func_or_mod["main"] if isinstance(func_or_mod, IRModule) else func_or_mod
    if not isinstance(func, Function):
        raise TypeError(f"inputs_for: expected an IRModule or a Function, got {func!r}")
    parts = []
    for p in func.params:
        if p.type_annotation is None:
            raise ValueError(f"inputs_for: param %{p.name_hint} has no type annotation")
        parts.append(_value_strategy(p.type_annotation))
    return st.tuples(*parts)


def modules_and_inputs(
    max_nodes: int = 24, **features: bool
) -> st.SearchStrategy[tuple[IRModule, tuple[Any, ...]]]:
    """``(module, args)``: a module from :func:`modules` and arguments for its ``@main``."""
    return modules(max_nodes, **features).flatmap(
        lambda mod: st.tuples(st.just(mod), inputs_for(mod))
    )
