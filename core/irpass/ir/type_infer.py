"""Type inference: fills ``checked_type`` on every expression of a program.

Types are a cache derived from the program: the type of a node follows from
its sub-expressions, the type annotations on vars and functions, the type
relations of the ops it calls and, for a reference to a global function, the
module it is inferred in. :func:`infer_type` recomputes that cache, but for
the parts of the program whose types cannot have changed since they were
inferred (see "Types kept" below).

Like TVM's ``InferType``, it also fills in the annotation a function lacks:
every ``Function`` without a ``ret_type`` (nested ones included) comes back
with its inferred return type as ``ret_type``, so a program written without
annotations compares structurally equal, after inference, to one a pass built
with them (FuseOps annotates the functions it makes). Nothing else is
annotated: function params must be annotated already, and a let var without
annotation keeps none (its type is its ``checked_type``; TVM annotates it too,
which here would copy every let of a program and remap each use of its var).

It returns its argument when nothing needs a new node, and a copy otherwise
(as TVM's ``InferType`` returns a module); the input is never changed beyond
its ``checked_type`` caches. Nodes are immutable, so a function that gets a
``ret_type`` is a new ``Function``, and so is every node above it (the lets,
calls, ... on the path from the root): the rest is shared with the input.
Types can also force a copy: passes build new modules that share their
untouched functions with the old one, so the same ``Call`` of ``@f`` can sit
in two modules whose ``@f`` return different types. The inference first
computes every type into a table; when no node that already carries a
``checked_type`` would get a different one (the common case) it writes the
types in place, on the input's nodes. Otherwise it rebuilds the conflicting
nodes and all their ancestors as fresh nodes (a let var whose type changes
becomes a fresh var, remapped at every use) and types those: the input's
nodes keep their old types. So always use the result:
``mod = infer_type(mod)``. A module whose functions all carry a ``ret_type``
comes back as the very same object, unless a type conflict forces a copy.

Rules, by node kind:

* ``Var``: its annotation; a ``let``-bound var without annotation takes the
  type of its value. Function params must be annotated. In a module, every
  var must be bound (by a param or an enclosing let) before it is used; a
  bare expression may have free vars if they are annotated.
* ``Constant``: ``TensorType(data.shape, data.dtype)``.
* ``Tuple`` / ``TupleGetItem``: tuple of the field types / the selected field.
* ``Call`` of an ``Op``: whatever the op's type relation returns for the
  argument types and the call's attrs. A relation is a pure function of
  those, so one run of inference asks it once per distinct (op, attrs,
  argument types) and gives equal calls the same result object (unless most
  calls of the program are distinct, when remembering them does not pay; see
  ``_Inferrer.op_call_type``); a relation that raises is asked again, and
  reported, for every call.
* ``Call`` of anything else (a ``GlobalVar``, a ``Function``, a var holding a
  closure, ...): the callee must have a ``FuncType`` whose argument types equal
  the argument types; the call has its ``ret_type``. With symbolic param types
  the call instantiates the callee as Relax does: each size variable that is a
  dim of its own in a param type is bound by the first argument dim in its
  place (a symbolic or a static dim), every other symbolic dim is checked with
  those bindings (provably different: an error naming the argument, the dim
  and the symbols; undecidable: assumed, the evaluator checks it when the call
  runs), and the call has the ``ret_type`` with the bindings substituted. A
  local function keeps the size variables bound where it was made (by the
  params of the functions around it): its calls check them, as the evaluator
  does. Calls whose argument types equal the param types skip all this.
* ``Let``: the type of its body. A let-bound function may call itself
  through its var (letrec, as in Relay) if the var is annotated.
* ``If``: ``cond`` is ``Tensor[(), bool]``, both branches have the same type,
  which is the type of the ``If``.
* ``Function``: ``FuncType(param types, body type)``; a ``ret_type``
  annotation must equal the body type, a missing one is filled in with it.
  With symbolic dims, an annotation whose dims differ from the body's only
  where neither is provably different (``(n, c)`` for a body of ``(n, 3)``,
  after a pass refined a type a relation had assumed equal) stands, and is
  the function's return type.
* ``GlobalVar``: the type of the module's function of that name. Functions
  are inferred on demand in dependency order; a function that is called while
  it is being inferred (recursion, direct or mutual) must carry a ``ret_type``
  annotation.

Problems raise :class:`irpass.TypeInferenceError`, whose message says what is
wrong, shows the offending node with :func:`~irpass.ir.describe.describe` and
names the enclosing function. The error also carries the node as ``.expr``
and the function's name as ``.function`` (``None`` when unknown). A failed
inference changes no ``checked_type``.

The inference never recurses in Python: it runs one explicit work stack over
the program, so dataflow chains, let chains, nested functions and chains of
calls between global functions can all be arbitrarily deep. Every node is
visited once per call (a shared sub-expression is inferred once), and the
copy on a conflict, or to fill the ret_type of a nested function, is one more
pass over the table, so the work is linear in the size of the program. A
program whose only unannotated function is its root (a module of one
function, a function given alone: what a program built without annotations
usually is) costs one new ``Function`` more, not a pass. Programs repeat a
few distinct op calls many times, so most calls cost a lookup in the memo of
op-call types rather than a run of their type relation.

Types kept. A pass rebuilds the nodes it changes and shares the rest with its
input, whose nodes carry their types already; a pipeline infers types after
most passes (every pass that reads them requires ``InferType``), so without
more it would type the same unchanged nodes again and again. The walk does
not enter a node typed before when nothing its type depends on can differ:

* the node is pure dataflow: calls of ops, tuples, projections, constants
  and vars only, down to its leaves (no let, if, function, call of a function
  or global function below it, whose types depend on bindings or on the
  module); and
* every var below it is a param of the function being inferred (or there is
  none), so each var has the type of its annotation and is bound here. Where
  vars may be free (an expression inferred alone, outside global functions)
  and the caller does not ask for them (:func:`infer_type`, not
  :func:`infer_type_and_free_vars`), any pure dataflow node is taken.

Then its type is a function of the ops' relations, the attrs and the params'
annotations alone, which are the same as when it was inferred. The walk
records this on each node it types, as ``Expr._bound_by``: the ``params``
tuple of the function whose params bind every var below (``()`` for none),
``None`` when the node is not pure dataflow or mixes the params of two
functions. It costs a store per node (+20% instructions when inferring a
fresh program, W2 at 10^4 under callgrind) and saves the walk of whatever a
pass left unchanged (-27% of -O3's time over the ONNX zoo).

Types carried. A pass that changes one node near the inputs rebuilds every
node above it, and those new nodes would all be walked again. A node rebuilt
over operands of the types the old ones had has the old node's type, the
relations being functions of the operand types and the attrs alone; so the
rebuilding pass hands it on with :func:`carry_type`, which checks exactly that.
The default rebuilds of :class:`~irpass.ir.ExprMutator` (calls, tuples,
projections) and of both pattern rewriters carry types (a rule-set pass types
the nodes a rule built from the types below them, :func:`type_built`, so the
nodes above keep theirs), and so do the standard passes that rebuild by hand:
EliminateCommonSubexpr (a merged operand is the
same computation as the old one), FoldConstant (a folded operand has the
type of what it replaces), FoldScaleAxis (a scaled weight keeps its shape)
and CombineParallelDense (the split's fields have the types of the calls
they replace). A function rebuilt over the same params keeps the very params
tuple, which the carried ``_bound_by`` names. The rule that makes skipping
sound: a node that carries a ``_bound_by`` has a type on every node below it.
Over the ONNX zoo it took InferType from 18% of -O3's time to 2%.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import TypeVar

from ..errors import TypeInferenceError
from .attrs import EMPTY_ATTRS, Attrs
from .describe import describe
from .dims import Dim, SizeVar, free_vars, prove_ne, substitute
from .expr import Expr
from .module import IRModule
from .nodes import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    _dtype_name,
)
from .op import Op
from .types import FuncType, TensorType, TupleType, Type, substitute_sizes

__all__ = [
    "carry_type",
    "local_type",
    "type_built",
    "infer_type",
    "infer_type_and_free_vars",
    "mark_typed",
    "note_bound_by",
]

_T = TypeVar("_T", bound="Expr | IRModule")
_E = TypeVar("_E", bound=Expr)

# Stores a node's checked_type: the slot's setter, without the name lookup of setattr.
_set_checked_type = Expr._checked_type.__set__  # type: ignore[attr-defined]
_set_bound_by = Expr._bound_by.__set__  # type: ignore[attr-defined]
_unchecked_function = Function._unchecked

#: The type an ``If`` condition must have.
BOOL_SCALAR = TensorType((), "bool")

#: How a function passed directly to :func:`infer_type` is named in messages.
ROOT_FUNCTION = "the function given to infer_type"

# States of a node on the work stack.
_ENTER = 0  # first visit: push the children
_EXIT = 1  # children done: compute the node's type
_LET_BODY = 2  # a let's value is done, its body is not

# A label longer than this many nesting levels is shortened in messages.
_MAX_LABEL_LEVELS = 6

# The budget of the memo of op-call types (see _Inferrer.op_call_type): misses it
# allows at the start, what a hit earns, and its cap (so that a long repetitive
# stretch does not keep the memo on through a long distinct one after it).
_START_BUDGET = 256
_HIT_CREDIT = 4
_MAX_BUDGET = 4096


# Modules whose every node carries its inferred type. Modules and nodes are
# immutable and a node's type is never overwritten (a conflicting node is
# copied instead), so such a module stays typed: inferring it again -- each
# pass that requires InferType does -- is a set lookup, not a walk.
_TYPED_MODULES: weakref.WeakSet[IRModule] = weakref.WeakSet()


def infer_type(expr_or_module: _T, mod: IRModule | None = None) -> _T:
    """Infer the type of every node of an expression or a module.

    For a module, every function is inferred and each ``GlobalVar`` (the
    module's own and every reference in the code) gets the ``FuncType`` of
    its function. For an expression, ``mod`` optionally gives the module that
    its ``GlobalVar`` references point into (their functions are inferred too).

    The types are stored as each node's ``checked_type``, and every function
    without a ``ret_type`` gets its inferred return type as one. Returns the
    argument itself when that changes no node, else a copy whose changed nodes
    (the functions that got a ``ret_type``, the nodes whose type differs from
    the one they carry for another program, and the nodes above those) are
    fresh and the rest shared (see the module docstring); write
    ``mod = infer_type(mod)``. The input is left as it was, but for the
    ``checked_type`` caches of its nodes. For an expression, the functions of
    ``mod`` are inferred but not annotated: they are not part of the result.
    Raises :class:`irpass.TypeInferenceError` for an ill-typed program.
    """
    if isinstance(expr_or_module, IRModule):
        if mod is not None:
            raise TypeError("infer_type: pass mod= only with an expression, not with a module")
        if expr_or_module in _TYPED_MODULES:
            return expr_or_module
        typed = _Inferrer(expr_or_module).infer_module()
        _TYPED_MODULES.add(typed)
        return typed
    if isinstance(expr_or_module, Expr):
        return _infer_expr(expr_or_module, mod, free_vars=False)[0]
    raise TypeError(f"infer_type needs an Expr or an IRModule, got {type(expr_or_module).__name__}")


def mark_typed(mod: IRModule, types: Mapping[Expr, Type]) -> IRModule:
    """Record that ``types`` are the types of ``mod``'s nodes, for producers that computed
    them anyway with the ops' type relations (an importer types every node it makes).

    Writes each type onto its node where the node carries none, gives every
    ``GlobalVar`` the type of its function, and lets :func:`infer_type` (hence the
    ``InferType`` pass) return ``mod`` as it is: as if ``mod = infer_type(mod)`` had
    run, without its walk. ``types`` must hold every node of ``mod`` with the type
    inference would give it, and every function of ``mod`` (nested ones included) must
    carry its ``ret_type``; a function without one is a ``ValueError``. Returns ``mod``.
    """
    for gv, func in mod.items():
        if func.ret_type is None:
            raise ValueError(f"mark_typed: @{gv.name_hint} has no ret_type")
    for func in mod.functions.values():
        for p in func.params:
            _set_bound_by(p, func.params)
    for node, ty in types.items():
        t = type(node)
        if t is Function and node.ret_type is None:
            raise ValueError("mark_typed: a nested function has no ret_type")
        if node._checked_type is None:
            _set_checked_type(node, ty)
        # a child that comes after its parent in ``types`` still has None, which only
        # makes the next inference walk more
        note_bound_by(node)
    for gv, func in mod.items():
        _set_checked_type(gv, types[func])
    _TYPED_MODULES.add(mod)
    return mod


def note_bound_by(node: Expr) -> None:
    """Record which params bind the vars of ``node``, a node typed outside inference.

    For producers that type the nodes they build themselves (:func:`mark_typed`, the
    greedy rewriter): the ``_bound_by`` that inference's walk would record, from the
    node's children (see "Types kept" in the module docstring), so that the next
    inference takes the node's type rather than walking it. Children first: a child
    not noted yet makes its parent ``None``, which is always true.
    """
    t = type(node)
    if t is Call:
        if type(node.op) is Op:
            _set_bound_by(node, _join_bound(node.args))
    elif t is Tuple:
        _set_bound_by(node, _join_bound(node.fields))
    elif t is TupleGetItem:
        _set_bound_by(node, node.tuple_value._bound_by)
    elif t is Constant:
        _set_bound_by(node, ())


def carry_type(old: _E, new: _E) -> _E:
    """``new``, with the type of ``old`` when that is what inference would give it.

    For passes that rebuild a node over new operands (an operand they rewrote, or
    the rebuilt form of one): ``old`` and ``new`` are both calls of the same op with
    the very attrs object of ``old`` (``==`` takes ``1`` and ``1.0`` for equal, a
    relation may not), both tuples, or both projections of the same index. When
    ``old`` was typed in its function (it has a ``_bound_by``) and each new operand
    has the type of the old one (an operand kept as it is; a typed node of equal
    type; an untyped constant of the same shape and dtype, such as a folded weight),
    inference would give ``new`` the type of ``old``. Then ``new`` takes it (and such
    a constant its own), with the ``_bound_by`` of its operands, and the next
    inference does not walk it (see "Types kept" in the module docstring).
    Otherwise ``new`` is left as it is, to be inferred. Returns ``new``.
    """
    ty = old._checked_type
    if ty is None or old._bound_by is None or new._checked_type is not None:
        return new
    t = type(new)
    if type(old) is not t:
        return new
    if t is Call:
        if new.op is not old.op or new.attrs is not old.attrs:
            return new
        before, after = old.args, new.args
    elif t is Tuple:
        before, after = old.fields, new.fields
    elif t is TupleGetItem:
        if new.index != old.index:
            return new
        before, after = (old.tuple_value,), (new.tuple_value,)
    else:
        return new
    if len(before) != len(after):
        return new
    untyped = None
    for o, n in zip(before, after, strict=True):
        if n is not o:
            nt = n._checked_type
            if nt is None:
                if type(n) is not Constant or not _constant_has_type(n, o._checked_type):
                    return new
                if untyped is None:
                    untyped = []
                untyped.append((n, o._checked_type))
            elif nt is not o._checked_type and nt != o._checked_type:
                return new
    joined = _join_bound(after)
    if joined is None:
        return new
    # inference does not walk below ``new`` now: what is below must carry its type
    if untyped is not None:
        for const, const_type in untyped:
            _set_checked_type(const, const_type)
    _set_checked_type(new, ty)
    _set_bound_by(new, joined)
    return new


def type_built(root: Expr) -> None:
    """Type ``root`` and the untyped nodes below it from the types their operands carry.

    For producers that build a few nodes over a typed program (a rewrite rule's
    replacement): walking down from ``root`` only through nodes without a type, each op
    call, tuple, projection and constant met gets, children first, the type
    :func:`local_type` gives it from its operands' types, and its ``_bound_by`` (so the
    next inference keeps it). It stops, leaving the nodes above untyped for inference to
    type and to report on, at anything else (a var, a let, a call of a function) and
    at a relation that fails. The typed program's own nodes are not walked.
    """
    order: list[Expr] = []
    seen: set[Expr] = set()
    stack: list[Expr | None] = [root]
    while stack:
        node = stack.pop()
        if node is None:
            order.append(stack.pop())  # type: ignore[arg-type]
            continue
        if node._checked_type is not None or node in seen:
            continue
        seen.add(node)
        stack.append(node)
        stack.append(None)
        t = type(node)
        if t is Call:
            stack.extend(node.args)
        elif t is Tuple:
            stack.extend(node.fields)
        elif t is TupleGetItem:
            stack.append(node.tuple_value)
    for node in order:
        t = type(node)
        if not (t is Tuple or t is TupleGetItem or t is Constant
                or (t is Call and type(node.op) is Op)):
            return
        try:
            ty = local_type(node)
        except Exception:  # noqa: BLE001 - inference runs the relation again and reports
            return
        if ty is None:
            return
        _set_checked_type(node, ty)
        note_bound_by(node)


def local_type(node: Expr) -> Type | None:
    """The type of ``node`` from the types its operands carry, without walking further.

    An op call's is what its relation gives over its arguments' types; a call of a
    function-typed callee's is the callee's return type when the argument types are its
    parameter types; a constant's is its data's; a tuple's and a projection's are made
    and read from the fields'; a var's is its annotation. ``None`` when an operand has no
    type yet, for other kinds (let, if, function) and for a call of a callee without a
    fitting ``FuncType``. A relation that refuses its arguments or returns no
    :class:`Type`, or a projection out of range, is a ``ValueError`` saying what; the
    callers decide what a failure means (:func:`type_built` leaves the node to inference,
    the greedy rewriter reports the rule that built it).
    """
    t = type(node)
    if t is Call:
        arg_types = tuple([a._checked_type for a in node.args])
        if None in arg_types:
            return None
        op = node.op
        if type(op) is not Op:
            callee = op._checked_type
            if type(callee) is FuncType and callee.arg_types == arg_types:
                return callee.ret_type
            return None
        try:
            ty = op.type_rel(arg_types, node.attrs)
        except (TypeError, ValueError) as exc:
            shown = ", ".join(map(str, arg_types))
            raise ValueError(f"{op.name} of ({shown}): {exc}") from exc
        if not isinstance(ty, Type):
            raise ValueError(f"the type relation of {op.name} returned {ty!r}")
        return ty
    if t is Constant:
        return node.type
    if t is Tuple:
        fields = tuple([f._checked_type for f in node.fields])
        return None if None in fields else TupleType(fields)
    if t is TupleGetItem:
        value = node.tuple_value._checked_type
        if value is None:
            return None
        if type(value) is not TupleType or node.index >= len(value.fields):
            raise ValueError(f"field {node.index} of a value of type {value}")
        return value.fields[node.index]
    if t is Var:
        return node.type_annotation
    return None


def _constant_has_type(const: Constant, ty: Type | None) -> bool:
    data = const.data
    return (type(ty) is TensorType and ty.shape == data.shape
            and ty.dtype == _dtype_name(data.dtype))


def infer_type_and_free_vars(expr: Expr, mod: IRModule | None = None) -> tuple[Expr, list[Var]]:
    """:func:`infer_type` on an expression, also returning its free vars.

    Returns ``(typed, free)``: ``typed`` is what :func:`infer_type` returns
    (``expr`` or a copy of it), ``free`` the vars of ``typed`` used before (or
    without) any binding of them, in order of first use; for a well-formed
    expression that is :func:`~irpass.ir.analysis.free_vars`, found here at no
    extra cost.
    """
    if not isinstance(expr, Expr):
        raise TypeError(f"infer_type needs an Expr or an IRModule, got {type(expr).__name__}")
    return _infer_expr(expr, mod, free_vars=True)


def _infer_expr(expr: Expr, mod: IRModule | None, free_vars: bool) -> tuple[Expr, list[Var]]:
    if mod is not None and not isinstance(mod, IRModule):
        raise TypeError(f"infer_type: mod must be an IRModule, got {type(mod).__name__}")
    return _Inferrer(mod, free_vars).infer_expr(expr)


class _Inferrer:
    """One run of type inference (its memo tables live as long as the run)."""

    def __init__(self, mod: IRModule | None, free_vars: bool = True, keep: bool = True) -> None:
        self.mod = mod
        # Whether the caller wants the free vars (``unbound``), and whether types
        # are kept (see "Types kept"): a checker that must see every node says not.
        self.free_vars = free_vars
        self.keep = keep
        # Types inferred in this run, by node identity; also the "done" set. A node
        # enters it only after all its children did (the copy on conflict relies on it).
        self.types: dict[Expr, Type] = {}
        # Types of the function parameters bound in this run, and the annotations of
        # let vars bound to functions (which may call themselves through them): read
        # when a var is met that ``types`` does not hold yet. A let var is typed in
        # ``types`` alone, when its value is done (a second entry per let made the run
        # 12% slower on W3's chain of 10^5 lets).
        self.var_types: dict[Var, Type] = {}
        # Where each function sits, for messages: (enclosing function, name or None for
        # an anonymous one). The text is built only for an error, as a chain of
        # nested functions spelled out at every level would take quadratic memory.
        self.labels: dict[Function, tuple[Function | None, str | None]] = {}
        # Functions whose body is being inferred, innermost last.
        self.active: list[Function] = []
        self.active_set: set[Function] = set()
        # Parallel to ``active``: whether that function sits inside a global function,
        # where every var must be bound.
        self.in_global: list[bool] = []
        self.global_funcs: set[Function] = set()
        # Annotated vars met before any binding of them: the free vars, in order.
        self.unbound: list[Var] = []
        # Functions without a ret_type, inner ones first: commit() fills it in.
        self.unannotated: list[Function] = []
        # Memo of op-call types (see ``op_call_type``). ``rel_hits`` is keyed by
        # identities: (id(op), id(attrs), id(arg type), ...). Each id must stay the id of
        # that object for the run: the op and attrs are held by the call, a key of
        # ``types``; ``rel_keep`` holds the argument types. ``rel_results`` is keyed by
        # value: (op, attrs, kinds of the attr values, arg types).
        self.rel_hits: dict[tuple, Type] = {}
        self.rel_keep: list[tuple[Type, ...]] = []
        self.rel_results: dict[tuple, Type] = {}
        self.attr_kinds: dict[tuple, tuple] = {}  # one object per distinct kinds tuple
        self.rel_budget = _START_BUDGET  # see op_call_type
        # Constant types by (shape, numpy dtype): one TensorType per distinct pair.
        self.const_types: dict[tuple, TensorType] = {}
        # Size variables in scope, parallel to ``active``: those the params of the active
        # functions bind. A local function sees the ones bound where it was made
        # (``inherited``, only when there are some): a call of it checks them rather
        # than binding them afresh, as the evaluator does. ``let_functions`` maps a let
        # var to the function literal it binds, to find that function at a call.
        self.size_scope: list[frozenset[str]] = []
        self.inherited: dict[Function, frozenset[str]] = {}
        self.let_functions: dict[Var, Function] = {}
        if mod is not None:
            for gv, func in mod.items():
                self.labels.setdefault(func, (None, f"@{gv.name_hint}"))
                self.global_funcs.add(func)

    # -- entry points -------------------------------------------------------------------
    def infer_module(self) -> IRModule:
        mod = self.mod
        assert mod is not None
        types = self.types
        for gv, func in mod.items():
            self.run(func)
            types[gv] = types[func]
        # In a module of one function, that function sits in no other node.
        sole = next(iter(mod.functions.values())) if len(mod) == 1 else None
        remap = self.commit(self.unannotated, sole)
        if not remap:
            return mod
        return IRModule({remap.get(gv, gv): remap.get(f, f) for gv, f in mod.items()})

    def infer_expr(self, expr: Expr) -> tuple[Expr, list[Var]]:
        if type(expr) is Op:
            raise TypeInferenceError(f"op {expr.name!r} has no type of its own; infer a call of it")
        if type(expr) is Function:
            self.labels.setdefault(expr, (None, ROOT_FUNCTION))
        self.run(expr)
        # The functions of ``mod`` inferred on demand are not part of the result: their
        # annotations are filled when the module itself is inferred.
        targets = self.unannotated
        if self.global_funcs:
            targets = [f for f in targets if f is expr or f not in self.global_funcs]
        remap = self.commit(targets, expr if type(expr) is Function else None)
        if not remap:
            return expr, self.unbound
        return remap.get(expr, expr), [remap.get(v, v) for v in self.unbound]

    def commit(self, unannotated: list[Function], root: Function | None) -> dict[Expr, Expr]:
        """Store the inferred types; return the nodes that had to be copied (old -> new).

        In place when no node already carries a different type. Otherwise the
        conflicting nodes and every node above them are rebuilt and the copies
        get the types, so nodes shared with another program keep the types they
        have there. The functions of ``unannotated`` (those without a
        ``ret_type``) and every node above them are rebuilt too, each such
        function with its inferred return type as ``ret_type``; without a
        conflict the input's nodes are typed in place all the same. ``root`` is
        the function at the top of the program, if one is and no other node can
        hold it: when it is the only function to annotate, it alone is copied.
        """
        types = self.types
        conflicts = []
        # A program typed before holds few distinct type objects: remember which old
        # one was found equal to which new one rather than comparing each node's.
        # (The old types stay alive on their nodes, so their ids are not reused.)
        equal_to: dict[int, Type] = {}
        for n, t in types.items():
            old = n._checked_type
            if old is None or old is t or equal_to.get(id(old)) is t:
                continue
            if old != t:
                conflicts.append(n)
            else:
                equal_to[id(old)] = t
        if conflicts:
            return self.rebuild({*conflicts, *unannotated}, in_place=False)
        for n, t in types.items():
            _set_checked_type(n, t)
        if not unannotated:
            return {}
        if root is not None and len(unannotated) == 1 and unannotated[0] is root:
            # The common case of a program built without annotations: no walk.
            ty = types[root]
            new = _function_of(root, root.params, root.body, ty)
            _set_checked_type(new, ty)
            return {root: new}
        return self.rebuild(set(unannotated), in_place=True)

    def rebuild(self, targets: set[Expr], in_place: bool) -> dict[Expr, Expr]:
        """Copy ``targets`` and every node above them; return the copies (old -> new).

        ``types`` order puts children first, so a node's children are copied
        before it is looked at. The copies get the inferred types; so do the
        other nodes unless ``in_place`` says they already have them.
        """
        remap: dict[Expr, Expr] = {}
        for n, t in self.types.items():
            if n in targets or any(c in remap for c in n.children()):
                new = _rebuild(n, remap, t)
                remap[n] = new
                # ``n`` keeps the type it has in another program, which this one says
                # is wrong there too (pure dataflow types do not depend on the program):
                # never take it again without a walk
                _set_bound_by(n, None)
                n = new
            elif in_place:
                continue
            _set_checked_type(n, t)
        return remap

    # -- the work loop ------------------------------------------------------------------
    def run(self, root: Expr) -> None:
        """Infer ``root`` and everything below it with an explicit stack.

        Each turn of the loop handles ``node`` in ``state``. Where a node would
        push its last child to enter and pop it at once, it takes the child up
        directly (``node = child; continue``), and a node whose children are
        all typed goes on to its next state without the stack: the order of
        the work (hence which error of an ill-typed program is reported) is
        that of the plain push/pop walk, most nodes just cost no stack traffic.
        """
        types = self.types
        if root in types:
            return
        # The stack holds (node, state) pairs flattened: ``..., node, state``.
        # Pushing existing objects and small ints allocates nothing, which keeps
        # the garbage collector from rescanning a huge program again and again.
        stack: list = []
        push = stack.append
        pop = stack.pop
        var_types = self.var_types
        rel_hits = self.rel_hits
        const_types = self.const_types
        # op -> (attrs, argument types..., type) of the last call of it typed here; the
        # tuple keeps those objects alive, so the identity tests against it are sound
        last_call: dict[Op, tuple] = {}
        # A node typed before whose vars the params of the innermost function bind
        # (its ``_bound_by`` is those params, or ``()``) keeps its type and is not walked
        # again; so is any node with a ``_bound_by`` where vars may be free and the
        # caller does not want them (``loose``). See "Types kept" in the module docstring.
        bound_now, loose = self.scope_now()
        keep = self.keep
        node: Expr = root
        state = _ENTER
        while True:
            t = type(node)
            if state == _ENTER and node not in types:
                bound = node._bound_by
                if (
                    bound is not None
                    and keep
                    and (bound is bound_now or not bound or loose)
                    and node._checked_type is not None
                ):
                    types[node] = node._checked_type
                elif t is Call:
                    op = node.op
                    if type(op) is Op:
                        # Push the arguments still to do (the first one is taken up
                        # now); with none, the call is typed right away. Calls of one
                        # and two arguments, the most common, are spelled out.
                        args = node.args
                        nargs = len(args)
                        if nargs == 1:
                            last = args[0]
                            if last in types:
                                last = None
                            else:
                                push(node)
                                push(_EXIT)
                        elif nargs == 2:
                            # the loop below for two arguments, without its iterator:
                            # -6% instructions for InferType on W2 (callgrind, 10^4)
                            first, last = args
                            if last in types:
                                last = None
                            else:
                                push(node)
                                push(_EXIT)
                            if first not in types:
                                if last is None:
                                    push(node)
                                    push(_EXIT)
                                else:
                                    push(last)
                                    push(_ENTER)
                                last = first
                        else:
                            last = None
                            for a in reversed(args):
                                if a not in types:
                                    if last is None:
                                        push(node)
                                        push(_EXIT)
                                    else:
                                        push(last)
                                        push(_ENTER)
                                    last = a
                        if last is not None:
                            node = last
                            continue
                        state = _EXIT
                    else:
                        push(node)
                        push(_EXIT)
                        for a in reversed(node.args):
                            if a not in types:
                                push(a)
                                push(_ENTER)
                        if op not in types:
                            push(op)
                            push(_ENTER)
                elif t is Var:
                    ty = var_types.get(node)
                    types[node] = ty if ty is not None else self.var_type(node)
                elif t is Let:
                    value = node.value
                    if type(value) is Function:
                        if value not in self.labels:
                            parent = self.active[-1] if self.active else None
                            self.labels[value] = (parent, f"%{node.var.name_hint}")
                        if node.var.type_annotation is not None:
                            # letrec: the function may call itself through its annotated var.
                            var_types[node.var] = node.var.type_annotation
                        self.let_functions[node.var] = value
                    if value not in types:
                        push(node)
                        push(_LET_BODY)
                        node = value
                        continue
                    state = _LET_BODY
                elif t is Constant:
                    data = node.data
                    key = (data.shape, data.dtype)
                    ty = const_types.get(key)
                    if ty is None:
                        ty = const_types[key] = TensorType(data.shape, data.dtype.name)
                    types[node] = ty
                elif t is Tuple:
                    last = None
                    for f in reversed(node.fields):
                        if f not in types:
                            if last is None:
                                push(node)
                                push(_EXIT)
                            else:
                                push(last)
                                push(_ENTER)
                            last = f
                    if last is not None:
                        node = last
                        continue
                    state = _EXIT
                elif t is TupleGetItem:
                    value = node.tuple_value
                    if value not in types:
                        push(node)
                        push(_EXIT)
                        node = value
                        continue
                    state = _EXIT
                elif t is If:
                    last = None
                    for child in (node.false_branch, node.true_branch, node.cond):
                        if child not in types:
                            if last is None:
                                push(node)
                                push(_EXIT)
                            else:
                                push(last)
                                push(_ENTER)
                            last = child
                    if last is not None:
                        node = last
                        continue
                    state = _EXIT
                elif t is Function:
                    self.enter_function(node)
                    bound_now, loose = self.scope_now()
                    if node.body not in types:
                        push(node)
                        push(_EXIT)
                        node = node.body
                        continue
                    state = _EXIT
                elif t is GlobalVar:
                    func = self.global_function(node)
                    if func in types:
                        types[node] = types[func]
                    elif func in self.active_set:
                        types[node] = self.recursive_signature(node, func)
                    else:
                        push(node)
                        push(_EXIT)
                        node = func
                        continue
                elif t is Op:
                    self.fail(node, f"op {node.name!r} is used as a value; ops can only be called")
                else:
                    raise TypeError(f"infer_type: unknown node kind {t.__name__}")
            if state == _LET_BODY:
                # The value is done: bind the var, then do the body.
                v = node.var
                ty = types[node.value]
                ann = v.type_annotation
                if ann is not None and ann != ty:
                    self.fail(
                        node,
                        f"let variable %{v.name_hint} is annotated {ann} but its value has "
                        f"type {ty}",
                    )
                types[v] = ty
                body = node.body
                if body not in types:
                    push(node)
                    push(_EXIT)
                    node = body
                    state = _ENTER
                    continue
                state = _EXIT
            if state == _EXIT:
                if t is Call:
                    op = node.op
                    if type(op) is Op:
                        # The memo of op-call types by identity (see op_call_type);
                        # one- and two-argument calls spelled out, they are most. A key
                        # of ints only is not tracked by the garbage collector. Before
                        # the memo, the last call of the same op that the memo kept
                        # (``last_call``): a chain repeats one call, whose argument
                        # types are then the very objects of the last one, and a hit
                        # builds no key (-18% instructions for InferType on W2).
                        args = node.args
                        attrs = node.attrs
                        n = len(args)
                        if n == 1:
                            a = args[0]
                            _set_bound_by(node, a._bound_by)
                            at = types[a]
                            last = last_call.get(op)
                            if last is None or last[1] is not at or last[0] is not attrs:
                                key = (id(op), id(attrs), id(at))
                                ty = rel_hits.get(key)
                                if ty is None:
                                    ty = self.op_call_type(node, op, key)
                                if rel_hits.get(key) is ty:  # what the memo keeps, only
                                    last_call[op] = (attrs, at, ty)
                                types[node] = ty
                            else:
                                types[node] = last[2]
                        elif n == 2:
                            a, b = args
                            bound = a._bound_by
                            if bound is not b._bound_by:
                                bound = _join_bound(args)
                            _set_bound_by(node, bound)
                            at = types[a]
                            bt = types[b]
                            last = last_call.get(op)
                            if (
                                last is None
                                or last[1] is not at
                                or last[2] is not bt
                                or last[0] is not attrs
                            ):
                                key = (id(op), id(attrs), id(at), id(bt))
                                ty = rel_hits.get(key)
                                if ty is None:
                                    ty = self.op_call_type(node, op, key)
                                if rel_hits.get(key) is ty:  # what the memo keeps, only
                                    last_call[op] = (attrs, at, bt, ty)
                                types[node] = ty
                            else:
                                types[node] = last[3]
                        else:
                            _set_bound_by(node, _join_bound(args))
                            key = (id(op), id(attrs), *[id(types[a]) for a in args])
                            ty = rel_hits.get(key)
                            if ty is None:
                                ty = self.op_call_type(node, op, key)
                            types[node] = ty
                    else:
                        types[node] = self.call_type(node)
                elif t is Let:
                    types[node] = types[node.body]
                elif t is Tuple:
                    types[node] = TupleType(tuple(types[f] for f in node.fields))
                    _set_bound_by(node, _join_bound(node.fields))
                elif t is TupleGetItem:
                    types[node] = self.getitem_type(node)
                    _set_bound_by(node, node.tuple_value._bound_by)
                elif t is If:
                    types[node] = self.if_type(node)
                elif t is Function:
                    types[node] = self.function_type(node)
                    self.exit_function(node)
                    bound_now, loose = self.scope_now()
                else:  # GlobalVar whose function was inferred on demand
                    types[node] = types[self.global_function(node)]
            if not stack:
                return
            state = pop()
            node = pop()

    def scope_now(self) -> tuple[tuple[Var, ...] | None, bool]:
        """The params of the innermost function being inferred (None outside any), and
        whether a var may be used free here without the caller asking for free vars."""
        active = self.active
        loose = not self.free_vars and not (self.in_global and self.in_global[-1])
        return (active[-1].params if active else None), loose

    # -- context for messages -----------------------------------------------------------
    def label(self, func: Function) -> str:
        """How ``func`` is named in messages: ``@main``, ``%f in @main``, ..."""
        names: list[str] = []
        f: Function | None = func
        while f is not None:
            f, name = self.labels.get(f, (None, None))
            names.append(name or "a local function")
        if len(names) > _MAX_LABEL_LEVELS:
            # Keep the innermost three and the outermost two, which locate the code.
            names[3:-2] = [f"({len(names) - 5} more enclosing functions)"]
        return " in ".join(names)

    def where_suffix(self) -> str:
        return f" in {self.label(self.active[-1])}" if self.active else ""

    def fail(self, node: Expr, message: str, cause: BaseException | None = None) -> None:
        where = self.where_suffix()
        text = f"{message}\n  at: {describe(node)}"
        if where:
            text += f"\n  {where.strip()}"
        err = TypeInferenceError(text)
        err.expr = node
        err.function = self.label(self.active[-1]) if self.active else None
        if cause is not None:
            raise err from cause
        raise err

    def enter_function(self, func: Function) -> None:
        if func not in self.labels:
            self.labels[func] = (self.active[-1] if self.active else None, None)
        in_global = func in self.global_funcs or bool(self.in_global and self.in_global[-1])
        self.active.append(func)  # from here on, messages name this function
        self.active_set.add(func)
        self.in_global.append(in_global)
        var_types = self.var_types
        types = self.types
        for i, p in enumerate(func.params):
            ann = p.type_annotation
            if ann is None:
                self.fail(
                    p,
                    f"parameter {i} (%{p.name_hint}) of {self.label(func)} has no type "
                    "annotation; function parameters must be annotated",
                )
            var_types[p] = ann
            types[p] = ann
            _set_bound_by(p, func.params)
        outer = self.size_scope[-1] if self.size_scope else _NO_NAMES
        if outer:
            self.inherited[func] = outer
        own = _lone_size_vars(func.params)
        self.size_scope.append(outer | own if own else outer)

    def exit_function(self, func: Function) -> None:
        self.size_scope.pop()
        self.active.pop()
        self.active_set.discard(func)
        self.in_global.pop()

    # -- rules ---------------------------------------------------------------------------
    def var_type(self, v: Var) -> Type:
        ty = self.var_types.get(v)
        if ty is not None:
            return ty
        if v.type_annotation is not None:
            if self.in_global and self.in_global[-1]:
                self.fail(
                    v,
                    f"variable %{v.name_hint} is used before (or without) being bound: no "
                    "enclosing let or function parameter binds it before this use, and a "
                    "global function cannot have free variables",
                )
            # A free var with an annotation (e.g. an input of a bare expression).
            self.unbound.append(v)
            return v.type_annotation
        self.fail(
            v,
            f"variable %{v.name_hint} has no type: it is neither annotated nor bound "
            "by an enclosing let or function before this use (a let-bound function that "
            "calls itself needs a FuncType annotation on its var)",
        )
        raise AssertionError("unreachable")

    def global_function(self, gv: GlobalVar) -> Function:
        mod = self.mod
        if mod is None:
            self.fail(
                gv,
                f"@{gv.name_hint} refers to a global function but no module was given; "
                "infer the module (infer_type(mod)) or pass mod= with the expression",
            )
        if gv.name_hint not in mod:
            self.fail(
                gv,
                f"@{gv.name_hint} is not defined in the module "
                f"(functions: {', '.join('@' + g.name_hint for g in mod.get_global_vars())})",
            )
        return mod[gv.name_hint]

    def recursive_signature(self, gv: GlobalVar, func: Function) -> FuncType:
        if func.ret_type is None:
            self.fail(
                gv,
                f"@{gv.name_hint} is called recursively (directly or through other functions) "
                f"but has no ret_type annotation; annotate the return type of @{gv.name_hint}",
            )
        # Params are annotated: enter_function checked them when the inference of
        # the function began, which it has since the function is active.
        return FuncType(tuple(p.type_annotation for p in func.params), func.ret_type)

    def call_type(self, call: Call) -> Type:
        """The type of a call of a function-valued expression (not of an op)."""
        types = self.types
        arg_types = tuple(types[a] for a in call.args)
        callee_type = types[call.op]
        if not isinstance(callee_type, FuncType):
            self.fail(call, f"the callee has type {callee_type}, which is not a function type")
        expected = callee_type.arg_types
        if len(expected) != len(arg_types):
            self.fail(
                call,
                f"the callee takes {len(expected)} argument(s) ({_types(expected)}) "
                f"but {len(arg_types)} were given ({_types(arg_types)})",
            )
        for want, got in zip(expected, arg_types, strict=True):
            if want != got:
                # Unequal types: fine only if the callee's symbolic params instantiate to
                # the arguments (checked once, for the whole call, as Relax matches them).
                return self.instantiate(call, callee_type, arg_types)
        return callee_type.ret_type

    def instantiate(self, call: Call, callee_type: FuncType, arg_types: tuple[Type, ...]) -> Type:
        """The return type of a call whose argument types differ from the callee's param
        types: as Relax does, the callee's lone size variables are bound from the argument
        dims (the first occurrence binds), every other symbolic dim is checked against the
        argument's with those bindings -- provably different is an error, undecidable is
        assumed (the evaluator checks each call's bindings at run time) -- and the return
        type is the callee's with the bindings substituted."""
        callee = call.op
        if type(callee) is Var:
            callee = self.let_functions.get(callee, callee)
        # The sizes a local function inherits stay what they are: its params check them.
        inherited = self.inherited.get(callee, _NO_NAMES) if type(callee) is Function else _NO_NAMES
        bindings: dict[str, Dim] = {name: SizeVar(name) for name in inherited}
        checks: list[tuple[int, tuple[int, ...], int, Dim, Dim]] = []
        for i, (want, got) in enumerate(zip(callee_type.arg_types, arg_types, strict=True)):
            problem = _match_type(want, got, i, bindings, checks)
            if problem is not None:
                self.fail(
                    call,
                    f"argument {i}{self.param_name(call, i)} of the call has type {got} but the "
                    f"callee expects {want}{problem} (callee type: {callee_type})",
                )
        for i, path, k, want_dim, got_dim in checks:
            expected = substitute(want_dim, bindings)
            if expected == got_dim or not prove_ne(expected, got_dim):
                continue  # equal, or undecidable: assumed here, checked at run time
            field = "".join(f" field {j}" for j in path)
            names = sorted(free_vars(want_dim))
            symbols = ", ".join(
                f"{n} = {bindings[n]}" for n in names if n in bindings and n not in inherited
            )
            bound = f" with {symbols}" if symbols else ""
            kept = [n for n in names if n in inherited]
            if kept:
                bound += (
                    f" ({', '.join(kept)} bound by the function where the callee was "
                    "made, which its calls cannot change)"
                )
            self.fail(
                call,
                f"argument {i}{self.param_name(call, i)}{field} of the call has dim {k} = "
                f"{got_dim}, but the callee's parameter type {callee_type.arg_types[i]} says "
                f"{want_dim}{bound}, which is {expected}: they differ for every size",
            )
        return (
            substitute_sizes(callee_type.ret_type, bindings) if bindings else callee_type.ret_type
        )

    def param_name(self, call: Call, i: int) -> str:
        """`` (%name)`` of the callee's param ``i`` when the callee is a function whose
        params are at hand (a function literal, one bound by a let, a global function),
        else empty."""
        callee = call.op
        if type(callee) is Var:
            callee = self.let_functions.get(callee, callee)
        elif type(callee) is GlobalVar and self.mod is not None and callee.name_hint in self.mod:
            callee = self.mod[callee.name_hint]
        if type(callee) is Function and i < len(callee.params):
            return f" (%{callee.params[i].name_hint})"
        return ""

    def op_call_type(self, call: Call, op: Op, hit_key: tuple) -> Type:
        """The type of a call of ``op``, from its type relation or the memo.

        A type relation is a pure function of the argument types and the attrs,
        and programs repeat the same few calls, so the result is remembered for
        the run. By value (``rel_results``) when every argument type and the
        result are plain core types (:func:`_plain`), which compare and hash by
        value; the attrs are keyed with the kinds of their values, as ``==``
        takes ``1``, ``1.0`` and ``True`` for the same value while a relation
        may not. Then the result is remembered by identity under ``hit_key``
        (the caller's cheap first lookup, see ``rel_hits``) and the same
        result object is returned for equal calls, so the
        types further down a program are identical objects and hit there too.
        A failing relation is never remembered: every call of it runs it again
        and raises the same error for its own node.

        Remembering a call that never recurs costs more than it saves (keys,
        and objects the garbage collector then scans again and again), so in
        a program whose op calls are mostly distinct the memo stops: each
        lookup by value that misses spends one unit of ``rel_budget``, each
        hit earns :data:`_HIT_CREDIT`; at zero the rest of the run asks the
        relations directly (with the same results).
        """
        attrs = call.attrs
        arg_types = tuple([self.types[a] for a in call.args])
        plain = self.rel_budget > 0 and _plain_all(arg_types)
        if plain:
            kinds = _attr_kinds(attrs)
            if kinds:
                kinds = self.attr_kinds.setdefault(kinds, kinds)
            value_key = (op, attrs, kinds, arg_types)
            out = self.rel_results.get(value_key)
            if out is not None:
                self.rel_budget = min(self.rel_budget + _HIT_CREDIT, _MAX_BUDGET)
                self.remember(hit_key, arg_types, out)
                return out
            self.rel_budget -= 1
        try:
            out = op.type_rel(arg_types, attrs)
        except (TypeError, ValueError) as exc:
            self.fail(call, f"{_got(op, arg_types)}: {exc}", exc)
        except Exception as exc:
            # A bug in the relation rather than a bad program; keep the cause chained.
            self.fail(
                call,
                f"{_got(op, arg_types)}: the type relation of {op.name!r} failed with "
                f"{type(exc).__name__}: {exc}",
                exc,
            )
        if not isinstance(out, Type):
            self.fail(
                call,
                f"{_got(op, arg_types)}: its type relation returned {out!r}, which is not a "
                f"Type (op registered by {op.owner!r})",
            )
        if plain and _plain(out):
            self.rel_results[value_key] = out
            self.remember(hit_key, arg_types, out)
        return out

    def remember(self, hit_key: tuple, arg_types: tuple[Type, ...], out: Type) -> None:
        """Store ``out`` under the identity key, keeping the keyed types alive."""
        self.rel_hits[hit_key] = out
        self.rel_keep.append(arg_types)

    def getitem_type(self, item: TupleGetItem) -> Type:
        ty = self.types[item.tuple_value]
        if not isinstance(ty, TupleType):
            self.fail(item, f"field {item.index} taken of a value of type {ty}, not of a tuple")
        if item.index >= len(ty.fields):
            self.fail(
                item,
                f"field index {item.index} is out of range for a tuple of "
                f"{len(ty.fields)} field(s) of type {ty}",
            )
        return ty.fields[item.index]

    def if_type(self, node: If) -> Type:
        types = self.types
        cond = types[node.cond]
        if cond != BOOL_SCALAR:
            self.fail(node, f"the condition of an if must have type {BOOL_SCALAR}, got {cond}")
        t, f = types[node.true_branch], types[node.false_branch]
        if t != f:
            self.fail(node, f"the branches of an if have different types: {t} and {f}")
        return t

    def function_type(self, func: Function) -> Type:
        body = self.types[func.body]
        if func.ret_type is not None and func.ret_type != body:
            if _may_agree(func.ret_type, body):
                # Symbolic dims that only the run time can compare (a pass refined
                # ``(n, c)`` into ``(n, 3)`` where a relation assumed ``c == 3``): the
                # annotation stands, as a call's param type does.
                return FuncType(tuple(self.var_types[p] for p in func.params), func.ret_type)
            self.fail(
                func,
                f"{self.label(func)} is annotated to return {func.ret_type} but its body has "
                f"type {body}",
            )
        if func.ret_type is None:
            self.unannotated.append(func)
        return FuncType(tuple(self.var_types[p] for p in func.params), body)


#: The core type classes, which compare and hash by value.
_PLAIN_TYPES = (TensorType, TupleType, FuncType)
_TENSOR_ONLY = {TensorType}
# Types nested deeper than this are not memoized: hashing them recurses.
_MAX_PLAIN_DEPTH = 32


_NO_NAMES: frozenset[str] = frozenset()


def _lone_size_vars(params: tuple[Var, ...]) -> frozenset[str]:
    """The names of the size variables the params' types have as a dim of their own."""
    names: set[str] = set()
    for p in params:
        stack = [p.type_annotation]
        while stack:
            t = stack.pop()
            if isinstance(t, TensorType):
                if not t.is_static:
                    names.update(d.name for d in t.shape if type(d) is SizeVar)
            elif isinstance(t, TupleType):
                stack.extend(t.fields)
    return frozenset(names) if names else _NO_NAMES


def _symbolic(ty: Type) -> bool:
    """Whether a tensor or tuple type has a symbolic dim (other types: False)."""
    stack = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TensorType):
            if not t.is_static:
                return True
        elif isinstance(t, TupleType):
            stack.extend(t.fields)
    return False


def _match_type(
    want: Type,
    got: Type,
    i: int,
    bindings: dict[str, Dim],
    checks: list[tuple[int, tuple[int, ...], int, Dim, Dim]],
) -> str | None:
    """Match argument type ``got`` against param type ``want`` (argument ``i``): bind the
    lone size variables of ``want`` in ``bindings`` (first occurrence), queue every other
    dim of ``want`` that is not equal to ``got``'s in ``checks``. Returns why the types
    cannot match (a suffix for the message), or None."""
    if not (_symbolic(want) or _symbolic(got)):
        return None if want == got else ""
    stack: list[tuple[tuple[int, ...], Type, Type]] = [((), want, got)]
    while stack:
        path, w, g = stack.pop()
        where = " ".join(f"field {j}" for j in path)
        if isinstance(w, TensorType) and isinstance(g, TensorType):
            if w.dtype != g.dtype:
                return f" ({where or 'the tensor'}: dtype {g.dtype}, not {w.dtype})"
            if len(w.shape) != len(g.shape):
                return f" ({where or 'the tensor'}: rank {len(g.shape)}, not {len(w.shape)})"
            for k, (wd, gd) in enumerate(zip(w.shape, g.shape, strict=True)):
                if type(wd) is SizeVar and wd.name not in bindings:
                    bindings[wd.name] = gd
                elif wd != gd:
                    checks.append((i, path, k, wd, gd))
        elif isinstance(w, TupleType) and isinstance(g, TupleType):
            if len(w.fields) != len(g.fields):
                return f" ({where or 'the tuple'}: {len(g.fields)} fields, not {len(w.fields)})"
            # Last field pushed first: fields bind in order, as the evaluator binds them.
            for j in range(len(w.fields) - 1, -1, -1):
                stack.append(((*path, j), w.fields[j], g.fields[j]))
        elif w != g:
            return ""
    return None


def _may_agree(want: Type, got: Type) -> bool:
    """Whether two types with symbolic dims are alike but for dims that are not provably
    different (equal types are not asked; static-only ones must be equal)."""
    if not (_symbolic(want) or _symbolic(got)):
        return False
    stack = [(want, got)]
    while stack:
        w, g = stack.pop()
        if isinstance(w, TensorType) and isinstance(g, TensorType):
            if w.dtype != g.dtype or len(w.shape) != len(g.shape):
                return False
            for wd, gd in zip(w.shape, g.shape, strict=True):
                if wd != gd and (type(wd) is type(gd) is int or prove_ne(wd, gd)):
                    return False
        elif isinstance(w, TupleType) and isinstance(g, TupleType):
            if len(w.fields) != len(g.fields):
                return False
            stack.extend(zip(w.fields, g.fields, strict=True))
        elif w != g:
            return False
    return True


def _plain(ty: object) -> bool:
    """Whether ``ty`` is built of the core type classes only, not too deeply.

    Such a type is hashable and equal to another exactly when both have the
    same fields, so a type relation cannot tell two equal ones apart. A type
    of another class (a plugin's) may not be, so calls involving one are not
    memoized.
    """
    k = type(ty)
    if k is TensorType or (k is TupleType and {*map(type, ty.fields)} <= _TENSOR_ONLY):
        return True
    todo = [(ty, 0)]
    while todo:
        t, depth = todo.pop()
        k = type(t)
        if k is TensorType:
            continue
        if k not in _PLAIN_TYPES or depth > _MAX_PLAIN_DEPTH:
            return False
        inner = t.fields if k is TupleType else (*t.arg_types, t.ret_type)
        todo.extend((f, depth + 1) for f in inner)
    return True


def _plain_all(types: tuple[Type, ...]) -> bool:
    """Whether every type of ``types`` is :func:`_plain`."""
    for ty in types:
        if type(ty) is not TensorType and not _plain(ty):
            return False
    return True


def _attr_kinds(attrs: Attrs) -> tuple:
    """The Python classes of the attr values (nested like the values).

    ``Attrs`` compare with ``==``, for which ``True == 1 == 1.0``; keying the
    memo with these kinds too keeps calls whose attrs differ only in the kind
    of a value apart.
    """
    if attrs is EMPTY_ATTRS:
        return ()
    values = attrs._items.values()  # the plain dict: Mapping.values() is slow
    kinds = tuple(map(type, values))
    if tuple in kinds:
        kinds = tuple(map(_kind, values))
    return kinds


def _kind(value: object) -> object:
    if type(value) is tuple:
        return tuple(map(_kind, value))
    return type(value)


def _got(op: Op, arg_types: tuple[Type, ...]) -> str:
    return f"op {op.name!r} got argument types ({_types(arg_types)})"


def _types(types: tuple[Type, ...]) -> str:
    return ", ".join(str(t) for t in types)


def _function_of(func: Function, params: tuple[Var, ...], body: Expr, ty: FuncType) -> Function:
    """A copy of ``func`` with ``params`` and ``body``, annotated with its inferred return type."""
    ret = func.ret_type if func.ret_type is not None else ty.ret_type
    return _unchecked_function(params, body, ret, func.attrs)


def _rebuild(node: Expr, remap: dict[Expr, Expr], ty: Type) -> Expr:
    """A fresh copy of ``node`` (of type ``ty``) whose children are replaced as ``remap`` says."""
    get = remap.get
    t = type(node)
    if t is Call:
        return Call(get(node.op, node.op), [get(a, a) for a in node.args], node.attrs)
    if t is Var:
        return Var(node.name_hint, node.type_annotation)
    if t is Tuple:
        return Tuple([get(f, f) for f in node.fields])
    if t is TupleGetItem:
        return TupleGetItem(get(node.tuple_value, node.tuple_value), node.index)
    if t is Let:
        v, value, body = node.var, node.value, node.body
        return Let(get(v, v), get(value, value), get(body, body))
    if t is If:
        c, a, b = node.cond, node.true_branch, node.false_branch
        return If(get(c, c), get(a, a), get(b, b))
    if t is Function:
        body = node.body
        params = tuple([get(p, p) for p in node.params])
        return _function_of(node, params, get(body, body), ty)  # type: ignore[arg-type]
    if t is GlobalVar:
        return GlobalVar(node.name_hint)
    if t is Constant:
        return Constant(node.data)
    raise TypeError(f"infer_type: unknown node kind {t.__name__}")


def _join_bound(children: tuple[Expr, ...]) -> tuple[Var, ...] | None:
    """The ``_bound_by`` of a pure dataflow node over ``children``: theirs when they agree,
    ignoring constants' ``()``; ``None`` when one is ``None`` or two differ."""
    joined: tuple[Var, ...] | None = ()
    for child in children:
        bound = child._bound_by
        if bound is None:
            return None
        if bound is not joined and bound:
            if joined:
                return None  # the params of two different functions
            joined = bound
    return joined
