"""A reference interpreter: runs IR programs on numpy arrays.

:func:`evaluate` runs a module's ``main``, a :class:`~irpass.ir.Function` or a
closed expression. Op calls run the op's numpy kernel; calls of global
functions and closures, ``let``, ``if`` and tuples are interpreted directly.
It is meant for testing passes (compare a program's results before and
after), not for speed.

Values at run time are numpy arrays (tensors), Python tuples (tuples) and
:class:`Closure` objects (functions).

The interpreter keeps its own stack of pending work instead of recursing in
Python, for dataflow chains, let chains *and* calls: a chain of a million
nodes runs, and so does a recursive IR function a million calls deep (memory
permitting). Each call of a function is an activation with its own memo
table, so a sub-expression shared inside a function body is computed once
per call of that function; the table (and every intermediate value in it)
lives until the call returns. A tail call (a call whose value is the value of
the function it is in: the body, a branch of an ``if`` or the body of a
``let`` in such a place) ends its caller's activation first, so a loop
written as a tail-recursive function -- what the ONNX importer makes of
``Loop`` and ``Scan`` -- runs in constant memory however many rounds it
makes. The free vars a closure captures come from one
:class:`~irpass.ir.analysis.FreeVarTable` per run, so creating closures costs
time linear in the program, however deeply its functions nest.

Results never alias what the caller holds: the arrays returned by
:func:`evaluate` (and by calling a :class:`Closure`) are fresh and writable,
never views of the inputs, of constants or of each other. The interpreter
runs on read-only views of the inputs (so no kernel can change a caller's
array) and copies a result array only when it is read-only (an input, a
constant or a view of one) or shares its buffer with an earlier part of the
same result.

Symbolic shapes (:mod:`irpass.ir.dims`): a function whose params have types with
size variables (``Tensor[(n, 16), float32]``) binds them, each time it is
called, from the shapes of the values it gets, as TVM Relax binds the
symbolic vars of a function's signature: a dim that is a lone variable binds
it (two params disagreeing on it is an error naming both), then every compound
dim (``n * 4``) is checked against the bound values. Each activation has its
own bindings, so each round of a recursive loop binds anew; a local function
starts from the bindings of the activation that created it (a param of it
naming an outer variable is checked against the outer value). Op calls then
run with those values: symbolic attributes (``reshape(%x, newshape=[n, -1])``)
reach the kernel as ints, and each result is checked against the call's type
with the size variables bound -- the run-time check of what a type relation
assumed and could not prove (``n`` and ``m`` broadcast to ``n``), as Relax's
``match_cast`` is. Functions without size variables pay nothing for this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .errors import EvaluationError
from .ir.analysis import FreeVarTable
from .ir.attrs import Attrs
from .ir.describe import describe
from .ir.dims import DimExpr, SizeVar, free_vars
from .ir.dims import evaluate as eval_dim
from .ir.expr import Expr
from .ir.module import IRModule
from .ir.nodes import Call, Constant, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from .ir.op import Op
from .ir.type_infer import infer_type, infer_type_and_free_vars
from .ir.types import NUMPY_DTYPES, FuncType, TensorType, TupleType, Type

__all__ = ["evaluate", "Closure"]


class Closure:
    """A function value: a :class:`Function` with the values of its free vars.

    ``name`` is the global function's name for module functions (``None`` for
    local functions). ``sizes`` holds the size variables bound where a local
    function was created (its body may use them). Calling it from Python
    evaluates the function.
    """

    __slots__ = ("func", "env", "name", "mod", "sizes", "_plan")

    def __init__(
        self,
        func: Function,
        env: Mapping[Var, Any],
        name: str | None = None,
        mod: IRModule | None = None,
        sizes: _Sizes | None = None,
    ) -> None:
        self.func = func
        self.env = dict(env)
        self.name = name
        self.mod = mod
        self.sizes = sizes
        # How the params bind size variables (see _Interpreter._activation); False
        # until the first call works it out.
        self._plan: _Plan | None | bool = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the function on ``args`` (checked and converted like :func:`evaluate`'s).

        The result follows :func:`evaluate`'s rule: fresh, writable arrays.
        """
        label = f"@{self.name}" if self.name else "the function"
        values = _bind_inputs(self.func, args, kwargs, label)
        return _export(_Interpreter(self.mod, self.func).call(self, values, label))

    def __repr__(self) -> str:
        what = f"@{self.name}" if self.name else f"fn with {len(self.func.params)} param(s)"
        return f"Closure({what})"


def evaluate(func_or_mod: IRModule | Function | Expr, *args: Any, **kwargs: Any) -> Any:
    """Run a program on numpy values and return its result.

    ``func_or_mod`` is an :class:`IRModule` (its ``main`` runs), a
    :class:`Function` (called on the inputs) or an expression without free
    variables (evaluated as is; it takes no inputs). Inputs are given by
    position and/or by parameter name (``name_hint``).

    Type inference runs first, so an ill-typed program raises
    :class:`irpass.TypeInferenceError` before anything runs. Numpy arrays must
    have exactly the parameter's shape and dtype; Python numbers and lists are
    converted to the parameter's dtype (a conversion that changes a value is
    refused); a tuple-typed parameter takes a Python tuple. A missing, extra
    or duplicate input, or one of the wrong shape or dtype, raises
    ``ValueError`` naming the parameter.

    A parameter type with size variables (``Tensor[(n, 16), float32]``) takes
    any array of its rank and dtype whose static dims match; the inputs bind
    the variables (``n`` is the size of that dim), which must agree wherever a
    variable appears as a dim of its own, and compound dims (``n * 4``) must
    equal their value: otherwise a ``ValueError`` names both parameters, the
    dim and the symbol. Results of op calls are then checked against their
    types with those values (:class:`irpass.EvaluationError` naming the call,
    its type and the values of its size variables).

    Returns a numpy array, a (nested) Python tuple for a tuple result, or a
    :class:`Closure` for a function result. Every returned array is fresh and
    writable: it never shares memory with an input, a constant of the
    program or another array of the result, so the caller may change it.
    """
    if isinstance(func_or_mod, IRModule):
        mod = func_or_mod
        if "main" not in mod:
            raise ValueError(
                "evaluate: the module has no @main function to run "
                f"(functions: {', '.join('@' + gv.name_hint for gv in mod.get_global_vars())})"
            )
        mod = infer_type(mod)
        main = mod["main"]
        closure = Closure(main, {}, "main", mod)
        values = _bind_inputs(main, args, kwargs, "@main")
        return _export(_Interpreter(mod).call(closure, values, "@main"))
    if not isinstance(func_or_mod, Expr):
        raise TypeError(
            "evaluate needs an IRModule, a Function or an expression, "
            f"got {type(func_or_mod).__name__}"
        )
    expr = func_or_mod
    expr, loose = infer_type_and_free_vars(expr)
    if loose:
        names = ", ".join(f"%{v.name_hint}" for v in loose)
        raise ValueError(
            f"evaluate: the expression has free variables ({names}); make them the "
            "parameters of a Function and pass their values as inputs"
        )
    if isinstance(expr, Function):
        closure = Closure(expr, {})
        values = _bind_inputs(expr, args, kwargs)
        return _export(_Interpreter(None, expr).call(closure, values, "the function"))
    if args or kwargs:
        raise ValueError(
            f"evaluate: a {type(expr).__name__} expression takes no inputs, got "
            f"{len(args)} positional and {len(kwargs)} named; wrap it in a Function with params"
        )
    return _export(_Interpreter(None, expr).run_closed(expr))


# -- inputs ------------------------------------------------------------------------------


def _bind_inputs(
    func: Function, args: tuple[Any, ...], kwargs: Mapping[str, Any], label: str = "the function"
) -> list[Any]:
    """Match ``args``/``kwargs`` to the params of ``func``; check and convert each value."""
    params = func.params
    if len(args) > len(params):
        raise ValueError(
            f"{label} takes {len(params)} input(s) ({_param_list(params)}), "
            f"got {len(args)} positional"
        )
    given: list[Any] = list(args) + [_MISSING] * (len(params) - len(args))
    positions: dict[str, list[int]] = {}
    for i, p in enumerate(params):
        positions.setdefault(p.name_hint, []).append(i)
    for name, value in kwargs.items():
        where = positions.get(name)
        if where is None:
            raise ValueError(
                f"{label} has no parameter named {name!r} (parameters: {_param_list(params)})"
            )
        if len(where) > 1:
            raise ValueError(
                f"{label} has {len(where)} parameters named {name!r} (at positions "
                f"{', '.join(map(str, where))}); pass them by position"
            )
        i = where[0]
        if given[i] is not _MISSING:
            raise ValueError(
                f"parameter %{name} (position {i}) of {label} is given twice, "
                "by position and by name"
            )
        given[i] = value
    out = []
    for i, (p, value) in enumerate(zip(params, given, strict=True)):
        ty = p.checked_type if p._checked_type is not None else p.type_annotation
        where = f"parameter %{p.name_hint} (position {i}) of {label}"
        if value is _MISSING:
            raise ValueError(f"missing input for {where}, of type {ty}")
        out.append(_convert(value, ty, where))
    return out


def _param_list(params: tuple[Var, ...]) -> str:
    return ", ".join(f"%{p.name_hint}" for p in params) or "none"


def _convert(value: Any, ty: Type, where: str) -> Any:
    if isinstance(ty, TensorType):
        return _convert_tensor(value, ty, where)
    if isinstance(ty, TupleType):
        if not isinstance(value, tuple):
            raise ValueError(f"{where}: expected a tuple for type {ty}, got {type(value).__name__}")
        if len(value) != len(ty.fields):
            raise ValueError(
                f"{where}: expected a tuple of {len(ty.fields)} field(s) for type {ty}, "
                f"got {len(value)}"
            )
        return tuple(
            _convert(v, t, f"{where} field {i}")
            for i, (v, t) in enumerate(zip(value, ty.fields, strict=True))
        )
    if isinstance(ty, FuncType):
        if isinstance(value, Closure):
            return value
        raise ValueError(f"{where}: expected a function (a Closure) of type {ty}, got {value!r}")
    raise ValueError(f"{where}: cannot take an input of type {ty}")


def _convert_tensor(value: Any, ty: TensorType, where: str) -> np.ndarray:
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype.name != ty.dtype or (arr.shape != ty.shape and not _fits(arr.shape, ty)):
            raise ValueError(
                f"{where}: expected {ty}, got an array of shape {arr.shape} and dtype "
                f"{arr.dtype.name}"
            )
        return _read_only(arr)
    if isinstance(value, (bool, int, float, list, tuple)):
        try:
            plain = np.asarray(value)
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused below
                arr = np.asarray(value, dtype=ty.dtype)
        except (ValueError, TypeError, OverflowError) as exc:
            raise ValueError(f"{where}: cannot convert {value!r} to {ty}: {exc}") from None
        if plain.dtype.kind not in "biuf":
            raise ValueError(f"{where}: expected numbers for {ty}, got {value!r}")
        if arr.shape != ty.shape and not _fits(arr.shape, ty):
            raise ValueError(
                f"{where}: expected {ty}, got a {type(value).__name__} of shape {arr.shape}"
            )
        with np.errstate(invalid="ignore"):
            same = np.array_equal(arr, plain, equal_nan=arr.dtype.kind == "f")
        if not same:
            if arr.dtype.kind != "f":
                # Float targets may round (1/3 in float32); other targets must keep the value.
                raise ValueError(
                    f"{where}: {value!r} does not fit {ty} without changing its value"
                )
            with np.errstate(invalid="ignore"):
                overflow = np.isfinite(plain) & ~np.isfinite(arr)
            if overflow.any():
                # A finite number that becomes inf is not rounding: refuse it.
                at = np.unravel_index(np.argmax(overflow), overflow.shape)
                raise ValueError(
                    f"{where}: {plain[at].item()!r} is out of the range of {ty.dtype} "
                    f"(it would become {arr[at].item()})"
                )
        return _read_only(arr)
    raise ValueError(
        f"{where}: expected {ty} (a numpy array, number or list), got {type(value).__name__}"
    )


def _fits(shape: tuple[int, ...], ty: TensorType) -> bool:
    """Whether ``shape`` has the rank and the static dims of ``ty`` (its symbolic dims are
    bound and checked with the other params, see :func:`_bind_sizes`)."""
    return len(shape) == len(ty.shape) and all(
        type(d) is not int or d == s for d, s in zip(ty.shape, shape, strict=True)
    )


def _read_only(arr: np.ndarray) -> np.ndarray:
    """A read-only view of ``arr``: views of it (reshape, ...) are read-only too."""
    view = arr.view()
    view.flags.writeable = False
    return view


def _export(value: Any, owners: set[int] | None = None) -> Any:
    """``value`` with every read-only or already-returned array replaced by a copy."""
    if owners is None:
        owners = set()
    if isinstance(value, np.ndarray):
        owner = _owner(value)
        if not value.flags.writeable or id(owner) in owners:
            value = value.copy()
            owner = value
        owners.add(id(owner))
        return value
    if isinstance(value, tuple):
        return tuple([_export(v, owners) for v in value])
    return value  # closures: calling one applies the same rule to its result


def _owner(arr: np.ndarray) -> object:
    """The object owning the memory of ``arr`` (itself, or the end of its ``base`` chain)."""
    owner: object = arr
    while isinstance(owner, np.ndarray) and owner.base is not None:
        owner = owner.base
    return owner


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


# -- size variables ----------------------------------------------------------------------


class _Sizes:
    """The size variables bound in an activation, and what the activation computed from them.

    ``values`` maps each variable's name to its value; ``shapes`` caches the concrete shape
    of each symbolic result type met (by ``id``: the types live on the program's nodes,
    which outlive the run) and ``attrs`` the attrs of each call with the values put in
    (by ``id``, and ``attr_values`` by value for the symbolic ones: equal calls often
    have equal attrs in distinct objects). A local function created in the activation
    shares this object (the same values).
    """

    __slots__ = ("values", "shapes", "attrs", "attr_values")

    def __init__(self, values: dict[str, int]) -> None:
        self.values = values
        self.shapes: dict[int, tuple[int, ...]] = {}
        self.attrs: dict[int, Attrs] = {}
        self.attr_values: dict[Attrs, Attrs] = {}

    def describe(self, names: Iterable[str]) -> str:
        """``n = 2, seq = 7`` for the bound ones of ``names``, in order of name."""
        values = self.values
        return ", ".join(f"{n} = {values[n]}" for n in sorted(names) if n in values)


class _SymbolicMemo(dict):  # type: ignore[type-arg]
    """The memo table of an activation with size variables bound (``sizes``).

    A plain ``dict`` is the memo of every other activation: telling the two apart is
    one ``type(memo)`` test, so op calls in functions without size variables pay no
    lookup of bindings they do not have.
    """

    __slots__ = ("sizes",)

    sizes: _Sizes


class _Plan:
    """How a function's params bind its size variables.

    ``lone``: ``(param index, field path, dim index, name)`` of each dim that is a lone
    size variable, in param order (the first binds, later ones are checked);
    ``compound``: ``(param index, field path, dim index, expr)`` of each other symbolic
    dim, checked once the lone ones are bound.
    """

    __slots__ = ("lone", "compound")

    def __init__(
        self,
        lone: tuple[tuple[int, tuple[int, ...], int, str], ...],
        compound: tuple[tuple[int, tuple[int, ...], int, DimExpr], ...],
    ) -> None:
        self.lone = lone
        self.compound = compound


def _param_type(p: Var) -> Type:
    return p.checked_type if p._checked_type is not None else p.type_annotation


def _make_plan(func: Function) -> _Plan | None:
    """The binding plan of ``func``'s params; ``None`` when no param type has a size var."""
    lone: list[tuple[int, tuple[int, ...], int, str]] = []
    compound: list[tuple[int, tuple[int, ...], int, DimExpr]] = []
    for i, p in enumerate(func.params):
        stack: list[tuple[tuple[int, ...], Type]] = [((), _param_type(p))]
        while stack:
            path, ty = stack.pop()
            if isinstance(ty, TensorType):
                for k, d in enumerate(ty.shape):
                    if type(d) is int:
                        continue
                    if isinstance(d, SizeVar):
                        lone.append((i, path, k, d.name))
                    else:
                        compound.append((i, path, k, d))  # type: ignore[arg-type]
            elif isinstance(ty, TupleType):
                # Pushed last field first, so fields are seen (and bind) in order.
                for j in range(len(ty.fields) - 1, -1, -1):
                    stack.append(((*path, j), ty.fields[j]))
            # A function-typed param brings a closure with its own bindings.
    if not lone and not compound:
        return None
    return _Plan(tuple(lone), tuple(compound))


def _field(value: Any, path: tuple[int, ...]) -> Any:
    for j in path:
        value = value[j]
    return value


def _param_where(params: tuple[Var, ...], i: int, path: tuple[int, ...], label: str) -> str:
    """``parameter %x (position 0)``, then `` of <label>`` if a label is given, then the
    tuple fields (the way :func:`_bind_inputs` names params)."""
    of = f" of {label}" if label else ""
    fields = "".join(f" field {j}" for j in path)
    return f"parameter %{params[i].name_hint} (position {i}){of}{fields}"


def _bind_sizes(
    plan: _Plan,
    params: tuple[Var, ...],
    values: list[Any],
    inherited: _Sizes | None,
    label: str,
) -> dict[str, int]:
    """The size variables ``values`` bind by ``plan`` (over the ``inherited`` ones).

    ``ValueError`` naming the parameters, the dim and the symbol when two dims that
    are the same variable disagree, a compound dim has another value, or a compound
    dim uses a variable no param binds on its own.
    """
    bound: dict[str, int] = dict(inherited.values) if inherited is not None else {}
    setter: dict[str, tuple[int, tuple[int, ...], int]] = {}
    for i, path, k, name in plan.lone:
        size = _field(values[i], path).shape[k]
        old = bound.get(name)
        if old is None:
            bound[name] = size
            setter[name] = (i, path, k)
        elif old != size:
            first = setter.get(name)
            if first is None:
                by = "the function where this one was created"
            elif first[:2] == (i, path):
                by = f"its dim {first[2]}"
            else:
                by = _param_where(params, first[0], first[1], "")
            raise ValueError(
                f"{_param_where(params, i, path, label)}: dim {k} is {name} = {size}, "
                f"but {by} set {name} = {old}"
            )
    for i, path, k, expr in plan.compound:
        shape = _field(values[i], path).shape
        where = _param_where(params, i, path, label)
        unbound = sorted(free_vars(expr) - bound.keys())
        if unbound:
            raise ValueError(
                f"{where}: dim {k} is {expr}, but no parameter has {', '.join(unbound)} as a "
                "dim of its own, so its value is unknown (give a parameter a dim that is "
                f"{unbound[0]} alone)"
            )
        want = eval_dim(expr, bound)
        if shape[k] != want:
            given = ", ".join(f"{n} = {bound[n]}" for n in sorted(free_vars(expr)))
            raise ValueError(
                f"{where}: dim {k} is {expr} = {want} with {given}, but the array has "
                f"{shape[k]} there (shape {shape})"
            )
    return bound


def _concrete_shape(ty: TensorType, sizes: _Sizes | None, op: Op, call: Call) -> tuple[int, ...]:
    """``ty.shape`` with the bound values put in; ``EvaluationError`` for an unbound variable."""
    if sizes is not None:
        shape = sizes.shapes.get(id(ty))
        if shape is not None:
            return shape
    values = sizes.values if sizes is not None else {}
    names: set[str] = set()
    for d in ty.shape:
        names |= free_vars(d)
    unbound = sorted(names - values.keys())
    if unbound:
        raise EvaluationError(
            f"evaluate: the type {ty} of the call of op {op.name!r} uses the size variable"
            f"{'s' if len(unbound) > 1 else ''} {', '.join(unbound)}, which no parameter of "
            "the function running it (or of the functions around it) binds, so the result "
            f"cannot be checked\n  at: {describe(call)}"
        )
    shape = tuple([d if type(d) is int else eval_dim(d, values) for d in ty.shape])
    if sizes is not None:
        sizes.shapes[id(ty)] = shape
    return shape


def _has_dims(value: Any) -> bool:
    """Whether an attribute value holds a symbolic dim (attr tuples nest a level or two)."""
    if isinstance(value, DimExpr):
        return True
    return type(value) is tuple and any(_has_dims(v) for v in value)


def _put_values(value: Any, values: Mapping[str, int]) -> Any:
    if isinstance(value, DimExpr):
        return eval_dim(value, values)
    if type(value) is tuple:
        return tuple([_put_values(v, values) for v in value])
    return value


def _arguments_text(call: Call, args: tuple[Any, ...], sizes: _Sizes) -> str:
    """The call's arguments with their types and actual shapes, and the values of the size
    variables of those types, for run-time check errors."""
    parts = []
    names: set[str] = set()
    for a, v in zip(call.args, args, strict=True):
        ty = a._checked_type
        if isinstance(ty, TensorType):
            for d in ty.shape:
                names |= free_vars(d)
        got = f"shape {v.shape}" if isinstance(v, np.ndarray) else f"a {type(v).__name__}"
        operand = f"%{a.name_hint}" if type(a) is Var else describe(a, 40)
        parts.append(f"{operand}: {ty} has {got}")
    values = sizes.describe(names)
    return "; ".join(parts) + (f" (with {values})" if values else "")


# -- the interpreter -----------------------------------------------------------------------

# States of a work item.
_ENTER = 0  # first visit
_EXIT = 1  # operands done: compute the node
_LET_BODY = 2  # the let's value is done: bind the var, run the body
_RESULT = 3  # the node's value is the value of another node (a callee's body, a branch)


class _Interpreter:
    """Evaluates expressions with one explicit work stack across all calls."""

    def __init__(self, mod: IRModule | None, root: Expr | None = None) -> None:
        self.mod = mod
        self.root = root
        self.globals: dict[str, Closure] = {}
        # Filled on the first closure made: the free vars of every function at once.
        self.free_vars: FreeVarTable | None = None
        # How each function called so far binds its size variables (None: it has none).
        self.plans: dict[Function, _Plan | None] = {}
        # Whether each Attrs object met in a function with size variables holds a
        # symbolic dim (by id: the attrs live on the program's calls, which outlive the run).
        self.symbolic_attrs: dict[int, bool] = {}

    def call(self, closure: Closure, args: list[Any], label: str) -> Any:
        """Call ``closure`` on already-checked argument values (the inputs of ``label``:
        ``ValueError`` naming its params if they bind size variables inconsistently)."""
        return self._run(closure.func.body, self._activation(closure, args, label))

    def run_closed(self, expr: Expr) -> Any:
        return self._run(expr, {})

    def _activation(
        self, closure: Closure, args: list[Any], label: str | None, call: Call | None = None
    ) -> dict[Expr, Any]:
        """The memo table of a call of ``closure`` on ``args``: the param values, the captured
        vars and, if the function has size variables, their bindings. ``label`` names the
        function in errors about inputs from Python; ``call`` is the call in the program
        otherwise."""
        # Vars and nodes share one memo table per activation: vars are unique
        # objects, so a var's value can live next to the values of expressions.
        func = closure.func
        plan = closure._plan
        if plan is False:  # the first call of this closure: one plan per function per run
            try:
                plan = self.plans[func]
            except KeyError:
                plan = self.plans[func] = _make_plan(func)
            closure._plan = plan
        sizes = closure.sizes
        memo: dict[Expr, Any]
        if plan is None and sizes is None:
            memo = dict(closure.env)  # the static case: no bindings to look at
        else:
            memo = _SymbolicMemo(closure.env)
            if plan is not None:
                sizes = _Sizes(self._bind(plan, closure, args, sizes, label, call))
            memo.sizes = sizes  # type: ignore[attr-defined]
        for p, a in zip(func.params, args, strict=True):
            memo[p] = a
        return memo

    @staticmethod
    def _bind(
        plan: _Plan,
        closure: Closure,
        args: list[Any],
        inherited: _Sizes | None,
        label: str | None,
        call: Call | None,
    ) -> dict[str, int]:
        params = closure.func.params
        if call is None:  # the inputs of evaluate or of a Closure called from Python
            return _bind_sizes(plan, params, args, inherited, label or "the function")
        try:
            name = f"@{closure.name}" if closure.name else "a local function"
            return _bind_sizes(plan, params, args, inherited, name)
        except ValueError as exc:
            # Inside the program: the values were checked against their types already,
            # so this is a run-time check that failed (or a closure given as an input
            # that does not have the type its parameter says).
            raise EvaluationError(f"evaluate: {exc}\n  at: {describe(call)}") from None

    def _global(self, gv: GlobalVar) -> Closure:
        closure = self.globals.get(gv.name_hint)
        if closure is None:
            mod = self.mod
            if mod is None or gv.name_hint not in mod:
                raise EvaluationError(f"evaluate: @{gv.name_hint} is not a function of the module")
            closure = Closure(mod[gv.name_hint], {}, gv.name_hint, mod)
            self.globals[gv.name_hint] = closure
        return closure

    def _closure(
        self, func: Function, memo: dict[Expr, Any], self_var: Var | None = None
    ) -> Closure:
        """Capture the free vars of ``func``; ``self_var`` names the closure itself (letrec)."""
        table = self.free_vars
        if table is None:
            roots: list[Expr] = [f for _gv, f in self.mod.items()] if self.mod is not None else []
            if self.root is not None:
                roots.append(self.root)
            table = self.free_vars = FreeVarTable(*roots)
        fvs = table[func]
        env: dict[Var, Any] = {}
        for v in fvs:
            if v is self_var:
                continue
            try:
                env[v] = memo[v]
            except KeyError:
                raise EvaluationError(
                    f"evaluate: %{v.name_hint} is used by `{describe(func)}` but has no "
                    "value where the function is created"
                ) from None
        # A local function sees the size variables of the activation creating it.
        sizes = memo.sizes if type(memo) is _SymbolicMemo else None  # type: ignore[attr-defined]
        closure = Closure(func, env, mod=self.mod, sizes=sizes)
        if self_var is not None and self_var in fvs:
            closure.env[self_var] = closure
        return closure

    def _run(self, root: Expr, root_memo: dict[Expr, Any]) -> Any:
        """The value of ``root`` evaluated in the activation ``root_memo``."""
        # The root's value is forwarded into `out` like a callee's body into its call, so
        # a tail call in the root ends the root's activation too.
        out: dict[Expr, Any] = {}
        stack: list = []
        self._push_result(stack, root, out, root, root_memo)
        # Kernels compute IEEE arithmetic (overflow is inf, 0/0 is nan) and leave the
        # numpy error state to their caller (see ``irpass.ir.op.Kernel``).
        with np.errstate(all="ignore"):
            self._run_loop(stack)
        return out[root]

    def _run_loop(self, stack: list) -> None:
        # Work items are flattened into one list, state last: ``memo, node, state``,
        # or ``source_memo, source, memo, node, _RESULT``. Pushing existing objects
        # and small ints allocates nothing for the garbage collector to scan.
        push = stack.append
        pop = stack.pop
        symbolic = _SymbolicMemo  # a local: tested at every op call
        while stack:
            state = pop()
            node = pop()
            memo = pop()
            t = type(node)
            if state == _ENTER:
                if node in memo:
                    continue
                if t is Call:
                    push(memo)
                    push(node)
                    push(_EXIT)
                    for a in reversed(node.args):
                        if a not in memo:
                            push(memo)
                            push(a)
                            push(_ENTER)
                    op = node.op
                    if type(op) is not Op and op not in memo:
                        push(memo)
                        push(op)
                        push(_ENTER)
                elif t is Constant:
                    memo[node] = node.data
                elif t is Var:
                    raise EvaluationError(
                        f"evaluate: %{node.name_hint} is used outside the scope of its binding "
                        "(it has no value here); check the program with irpass.ir.well_formed"
                    )
                elif t is Tuple:
                    push(memo)
                    push(node)
                    push(_EXIT)
                    for f in reversed(node.fields):
                        if f not in memo:
                            push(memo)
                            push(f)
                            push(_ENTER)
                elif t is TupleGetItem:
                    push(memo)
                    push(node)
                    push(_EXIT)
                    if node.tuple_value not in memo:
                        push(memo)
                        push(node.tuple_value)
                        push(_ENTER)
                elif t is Let:
                    push(memo)
                    push(node)
                    push(_LET_BODY)
                    value = node.value
                    if value not in memo:
                        if type(value) is Function:
                            # A let-bound function may call itself through the let var.
                            memo[value] = self._closure(value, memo, node.var)
                        else:
                            push(memo)
                            push(value)
                            push(_ENTER)
                elif t is If:
                    push(memo)
                    push(node)
                    push(_EXIT)
                    if node.cond not in memo:
                        push(memo)
                        push(node.cond)
                        push(_ENTER)
                elif t is Function:
                    memo[node] = self._closure(node, memo)
                elif t is GlobalVar:
                    memo[node] = self._global(node)
                else:
                    raise EvaluationError(f"evaluate: cannot evaluate {describe(node)} as a value")
            elif state == _EXIT:
                if t is Call:
                    op = node.op
                    if type(op) is Op:
                        if type(memo) is symbolic:
                            memo[node] = self._run_symbolic_kernel(node, op, memo)
                        else:
                            memo[node] = self._run_kernel(node, op, memo)
                        continue
                    # A call of a closure: run its body in a new activation, on this
                    # same stack (no Python recursion however deep the IR recursion).
                    closure = memo[op]
                    callee = self._activation(closure, [memo[a] for a in node.args], None, node)
                    source = closure.func.body
                    source_memo = callee
                    tail = _tail_destination(stack, memo, node)
                    if tail is not None:
                        # The caller's activation has nothing left to do but pass this
                        # call's value on: drop it, and let the callee's body pass its
                        # value straight to where the caller's would have gone.
                        del stack[tail[0]:]
                        self._push_result(stack, tail[2], tail[1], source, source_memo)
                        continue
                elif t is Tuple:
                    memo[node] = tuple([memo[f] for f in node.fields])
                    continue
                elif t is TupleGetItem:
                    memo[node] = memo[node.tuple_value][node.index]
                    continue
                else:  # If: the condition is known, run one branch
                    cond = memo[node.cond]
                    source = node.true_branch if _truth(cond, node) else node.false_branch
                    source_memo = memo
                self._push_result(stack, node, memo, source, source_memo)
            elif state == _LET_BODY:
                memo[node.var] = memo[node.value]
                self._push_result(stack, node, memo, node.body, memo)
            else:  # _RESULT: the value of `node` is the value of `source`
                source = pop()
                source_memo = pop()
                memo[node] = source_memo[source]

    @staticmethod
    def _push_result(stack: list, node: Expr, memo: dict, source: Expr, source_memo: dict) -> None:
        """Arrange for ``node`` to take the value of ``source`` (evaluated first if needed)."""
        stack += (source_memo, source, memo, node, _RESULT)
        if source not in source_memo:
            stack += (source_memo, source, _ENTER)

    def _run_kernel(self, call: Call, op: Op, memo: dict[Expr, Any]) -> Any:
        args = tuple([memo[a] for a in call.args])
        try:
            out = op.kernel(args, call.attrs)
        except Exception as exc:
            self._unbound_attrs(call, op)
            raise EvaluationError(
                f"evaluate: the kernel of op {op.name!r} failed with {type(exc).__name__}: {exc}"
                f"\n  at: {describe(call)}"
            ) from exc
        return _check_result(out, call.checked_type, op, call)

    def _run_symbolic_kernel(self, call: Call, op: Op, memo: _SymbolicMemo) -> Any:
        """Run an op call in an activation with size variables bound: symbolic attributes
        get their values first, and the result is checked against the type evaluated."""
        args = tuple([memo[a] for a in call.args])
        sizes = memo.sizes
        attrs = sizes.attrs.get(id(call.attrs))
        if attrs is None:
            attrs = sizes.attrs[id(call.attrs)] = self._concrete_attrs(call, op, sizes)
        try:
            out = op.kernel(args, attrs)
        except Exception as exc:
            raise EvaluationError(
                f"evaluate: the kernel of op {op.name!r} failed with {type(exc).__name__}: {exc}"
                f"\n  at: {describe(call)}"
                f"\n  arguments: {_arguments_text(call, args, sizes)}"
            ) from exc
        ty = call.checked_type
        # A symbolic type already evaluated in this activation (relations give equal
        # calls the same type object): compare with its shape, as a static one is.
        shape = sizes.shapes.get(id(ty))
        if (
            shape is not None
            and type(out) is np.ndarray
            and out.shape == shape
            and out.dtype == NUMPY_DTYPES[ty.dtype]  # type: ignore[attr-defined]
        ):
            return out
        return _check_result(out, ty, op, call, "", sizes, args)

    def _symbolic(self, attrs: Attrs) -> bool:
        found = self.symbolic_attrs.get(id(attrs))
        if found is None:
            found = self.symbolic_attrs[id(attrs)] = any(map(_has_dims, attrs.values()))
        return found

    def _concrete_attrs(self, call: Call, op: Op, sizes: _Sizes) -> Attrs:
        """``call.attrs`` with the bound value put in for each symbolic dim."""
        attrs = call.attrs
        if not self._symbolic(attrs):
            return attrs
        done = sizes.attr_values.get(attrs)
        if done is None:
            done = sizes.attr_values[attrs] = self._put_sizes(call, op, sizes)
        return done

    @staticmethod
    def _put_sizes(call: Call, op: Op, sizes: _Sizes) -> Attrs:
        attrs = call.attrs
        values = sizes.values
        items = {}
        for name, value in attrs.items():
            if _has_dims(value):
                try:
                    value = _put_values(value, values)
                except ValueError as exc:  # a size variable no param binds
                    raise EvaluationError(
                        f"evaluate: attribute {name} = {_attr_text(attrs[name])} of the call of "
                        f"op {op.name!r} cannot be given a value: {exc} (no parameter of the "
                        f"function running it binds it)\n  at: {describe(call)}"
                    ) from None
            items[name] = value
        return Attrs(items)

    def _unbound_attrs(self, call: Call, op: Op) -> None:
        """After a kernel failed in an activation without size variables: if an attribute
        holds a symbolic dim (which the kernel got as such), say that instead."""
        attrs = call.attrs
        for name, value in attrs.items():
            if _has_dims(value):
                raise EvaluationError(
                    f"evaluate: attribute {name} = {_attr_text(value)} of the call of op "
                    f"{op.name!r} uses size variables, but no parameter of the function "
                    f"running it binds any\n  at: {describe(call)}"
                )


def _tail_destination(stack: list, memo: dict, node: Expr) -> tuple[int, dict, Expr] | None:
    """Where the value of the call ``node`` of activation ``memo`` goes, when it is a tail
    call: ``(k, caller_memo, caller_node)`` with ``stack[k:]`` the work items that only pass
    it on to ``caller_node`` (the forwarding of an ``if``'s branch, a ``let``'s body, and
    last the activation's body to the call that made it); ``None`` when the activation
    has other work pending (the call is not in tail position)."""
    k = len(stack)
    dest = node
    # Every item above the activation's own return belongs to the activation (it was
    # pushed while running its body), so a chain of forwardings from the top down to
    # that return means nothing else of the activation is pending.
    while k >= 5 and stack[k - 1] == _RESULT and stack[k - 5] is memo and stack[k - 4] is dest:
        k -= 5
        if stack[k + 2] is not memo:
            return k, stack[k + 2], stack[k + 3]
        dest = stack[k + 3]
    return None


def _truth(cond: Any, node: If) -> bool:
    if not isinstance(cond, np.ndarray) or cond.shape != () or cond.dtype != np.bool_:
        raise EvaluationError(
            f"evaluate: the condition of `{describe(node)}` must be a scalar bool, got {cond!r}"
        )
    return bool(cond)


def _check_result(
    out: Any,
    ty: Type,
    op: Op,
    call: Call,
    path: str = "",
    sizes: _Sizes | None = None,
    args: tuple[Any, ...] = (),
) -> Any:
    """Check a kernel's result against the call's inferred type; normalize numpy scalars.

    A symbolic type is checked with the values of ``sizes`` put in (the run-time check
    of what its type relation assumed).
    """
    if isinstance(ty, TensorType):
        expected = NUMPY_DTYPES[ty.dtype]
        if type(out) is np.ndarray and out.shape == ty.shape and out.dtype == expected:
            return out  # the common case, checked cheaply
        if isinstance(out, np.generic):
            out = np.asarray(out)
        if not isinstance(out, np.ndarray):
            _kernel_mismatch(op, call, ty, f"a {type(out).__name__}", path)
        if out.dtype.name != ty.dtype or (out.shape != ty.shape and ty.is_static):
            _kernel_mismatch(
                op, call, ty, f"an array of shape {out.shape} and dtype {out.dtype.name}", path
            )
        if out.shape != ty.shape and out.shape != _concrete_shape(ty, sizes, op, call):
            _symbolic_mismatch(out, ty, op, call, path, sizes, args)
        return out
    if isinstance(ty, TupleType):
        if not isinstance(out, (tuple, list)) or len(out) != len(ty.fields):
            _kernel_mismatch(op, call, ty, f"{type(out).__name__} {out!r:.60}", path)
        return tuple(
            _check_result(o, t, op, call, f"{path}[{i}]", sizes, args)
            for i, (o, t) in enumerate(zip(out, ty.fields, strict=True))
        )
    return out


def _symbolic_mismatch(
    out: np.ndarray,
    ty: TensorType,
    op: Op,
    call: Call,
    path: str,
    sizes: _Sizes | None,
    args: tuple[Any, ...],
) -> None:
    names: set[str] = set()
    for d in ty.shape:
        names |= free_vars(d)
    with_values = f" with {sizes.describe(names)}" if sizes is not None else ""
    at_field = f" at field {path}" if path else ""
    arguments = (
        f"\n  arguments: {_arguments_text(call, args, sizes)}"
        if args and sizes is not None
        else ""
    )
    raise EvaluationError(
        f"evaluate: {describe(call)} gave shape {out.shape}{at_field} but its type is {ty}"
        f"{with_values} (a run-time check of the shapes the type relation of {op.name!r} "
        "could not compare statically and assumed to agree)"
        f"{arguments}"
    )


def _attr_text(value: Any) -> str:
    if type(value) is tuple:
        return "[" + ", ".join(map(_attr_text, value)) + "]"
    return str(value)


def _kernel_mismatch(op: Op, call: Call, ty: Type, got: str, path: str) -> None:
    at_field = f" at field {path}" if path else ""
    raise EvaluationError(
        f"evaluate: the kernel of op {op.name!r} returned {got}{at_field}"
        f", but the op's type relation says {ty} (the kernel and the type relation of "
        f"{op.name!r}, registered by {op.owner!r}, disagree)\n  at: {describe(call)}"
    )
