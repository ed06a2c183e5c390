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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .errors import EvaluationError
from .ir.analysis import FreeVarTable
from .ir.describe import describe
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
    local functions). Calling it from Python evaluates the function.
    """

    __slots__ = ("func", "env", "name", "mod")

    def __init__(
        self,
        func: Function,
        env: Mapping[Var, Any],
        name: str | None = None,
        mod: IRModule | None = None,
    ) -> None:
        self.func = func
        self.env = dict(env)
        self.name = name
        self.mod = mod

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the function on ``args`` (checked and converted like :func:`evaluate`'s).

        The result follows :func:`evaluate`'s rule: fresh, writable arrays.
        """
        values = _bind_inputs(self.func, args, kwargs)
        return _export(_Interpreter(self.mod, self.func).call(self, values))

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
        return _export(
            _Interpreter(mod).call(closure, _bind_inputs(main, args, kwargs, "@main"))
        )
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
        return _export(_Interpreter(None, expr).call(closure, _bind_inputs(expr, args, kwargs)))
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
        if arr.dtype.name != ty.dtype or arr.shape != ty.shape:
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
        if arr.shape != ty.shape:
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

    def call(self, closure: Closure, args: list[Any]) -> Any:
        """Call ``closure`` on already-checked argument values."""
        return self._run(closure.func.body, self._activation(closure, args))

    def run_closed(self, expr: Expr) -> Any:
        return self._run(expr, {})

    def _activation(self, closure: Closure, args: list[Any]) -> dict[Expr, Any]:
        # Vars and nodes share one memo table per activation: vars are unique
        # objects, so a var's value can live next to the values of expressions.
        memo: dict[Expr, Any] = dict(closure.env)
        for p, a in zip(closure.func.params, args, strict=True):
            memo[p] = a
        return memo

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
        closure = Closure(func, env, mod=self.mod)
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
                        memo[node] = self._run_kernel(node, op, memo)
                        continue
                    # A call of a closure: run its body in a new activation, on this
                    # same stack (no Python recursion however deep the IR recursion).
                    closure = memo[op]
                    callee = self._activation(closure, [memo[a] for a in node.args])
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
            raise EvaluationError(
                f"evaluate: the kernel of op {op.name!r} failed with {type(exc).__name__}: {exc}"
                f"\n  at: {describe(call)}"
            ) from exc
        return _check_result(out, call.checked_type, op, call)


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


def _check_result(out: Any, ty: Type, op: Op, call: Call, path: str = "") -> Any:
    """Check a kernel's result against the call's inferred type; normalize numpy scalars."""
    if isinstance(ty, TensorType):
        expected = NUMPY_DTYPES[ty.dtype]
        if type(out) is np.ndarray and out.shape == ty.shape and out.dtype == expected:
            return out  # the common case, checked cheaply
        if isinstance(out, np.generic):
            out = np.asarray(out)
        if not isinstance(out, np.ndarray):
            _kernel_mismatch(op, call, ty, f"a {type(out).__name__}", path)
        if out.shape != ty.shape or out.dtype.name != ty.dtype:
            _kernel_mismatch(
                op, call, ty, f"an array of shape {out.shape} and dtype {out.dtype.name}", path
            )
        return out
    if isinstance(ty, TupleType):
        if not isinstance(out, (tuple, list)) or len(out) != len(ty.fields):
            _kernel_mismatch(op, call, ty, f"{type(out).__name__} {out!r:.60}", path)
        return tuple(
            _check_result(o, t, op, call, f"{path}[{i}]")
            for i, (o, t) in enumerate(zip(out, ty.fields, strict=True))
        )
    return out


def _kernel_mismatch(op: Op, call: Call, ty: Type, got: str, path: str) -> None:
    at_field = f" at field {path}" if path else ""
    raise EvaluationError(
        f"evaluate: the kernel of op {op.name!r} returned {got}{at_field}"
        f", but the op's type relation says {ty} (the kernel and the type relation of "
        f"{op.name!r}, registered by {op.owner!r}, disagree)\n  at: {describe(call)}"
    )
