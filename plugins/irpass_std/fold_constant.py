"""FoldConstant: evaluate at compile time what only depends on constants.

Follows the semantics of TVM Relay's ``FoldConstant`` (a function pass at opt
level 2 that needs no other pass). One memoized bottom-up rewrite, walked with
an explicit stack (so dataflow chains and let chains of any length need no
recursion) and linear in the size of the function, applies these rules to
every function except those marked ``Primitive``:

* **Op calls on constants.** A call of an :class:`~irpass.ir.Op` whose
  arguments are all constant -- a ``Constant``, or a ``Tuple`` of constants
  (as ``concatenate`` takes) -- runs the op's numpy kernel and becomes a
  ``Constant`` (a ``Tuple`` of constants for a tuple result). The kernel runs
  exactly as :func:`irpass.evaluate` would run it, so the folded program
  computes bit for bit what the original computed. Constant tuples built
  this way fold on in their users.
* **Let-bound constants.** ``let %v = <constant or constant tuple>; body``
  (a constant tuple: one whose fields are constants or constant tuples)
  becomes ``body`` with ``%v`` replaced by the constant, so uses of ``%v``
  can fold further.
* **Projections.** ``TupleGetItem(Tuple(f0, f1, ...), i)`` becomes ``fi``
  when the other fields are constants, variables or function literals (their
  evaluation has no effect, so dropping them is safe); with all fields
  constant this is the "TupleGetItem of a constant tuple" rule.
* **shape_of.** ``shape_of(x, dtype)`` of a static ``x`` becomes the constant
  shape of ``x`` in ``dtype`` (any dtype: ``"float32"`` gives a float32 constant,
  as in TVM). This needs only ``x``'s type: types are inferred
  (``irpass.ir.infer_type``) lazily, the first time a ``shape_of`` of a
  non-constant is met, so functions without one pay nothing for it.
* **Shape values.** ``shape_of`` of a tensor with symbolic dims (``Tensor[(n,
  128), float32]``) is no constant, but its value is known: ``[n, 128]``, a shape
  value (see :mod:`irpass.op.shape_values`). The call stays and its value is
  recorded; a call of an op whose arguments are shape values and integer
  constants (a tuple of them for ``concatenate``) is computed with
  :func:`~irpass.op.shape_values.eval_shape_call` -- ``take``,
  ``strided_slice``, ``concatenate``, arithmetic, the comparisons the prover
  decides, ... A result whose elements all come out static becomes a
  ``Constant`` (``take(shape_of(x), 1)`` is ``128``); a symbolic one becomes
  one ``dims_tensor`` call holding it (``take(shape_of(x), 0)`` is
  ``dims_tensor(dims=[n])``: the scaffolding that computed it goes, and the
  ``shape_of`` with it once nothing else uses it), recorded in turn so its
  users go on folding; one that cannot be known stays as it is. A let var
  bound to a shape value carries it to its uses, and a ``dims_tensor`` call is
  a shape value too.
  Only integer ``shape_of`` dtypes give shape values (a float shape is a
  computation on sizes no prover reasons about).
* **Symbolic results.** A call of constants whose result type is not static
  (``broadcast_to(c, shape=[batch, 1, 32])``, ``arange(stop=seq)``) depends on
  sizes known at run time only: it is left as it is, without a warning.
* **Constant conditions.** ``if (True) a else b`` becomes ``a`` (and
  ``False`` gives ``b``): the condition is a constant, so only that branch
  could ever run.

What it never does (TVM's heuristics, see its "Adding a Compiler Pass"
guide): fold a call of a ``stateful`` op (its effects must happen at run
time), fold a call with no arguments or a creation op (``zeros``, ``ones``,
``full``, ``zeros_like``, ``ones_like``, ``full_like``): folding those only
replaces a tiny call by a big constant and bloats the model. Calls of global
functions and closures are not evaluated (only op calls are), and the bodies
of ``Primitive`` functions (fused kernels) are left as they are, apart from
the substitution of let-bound constants they capture.

The config option ``std.FoldConstant.max_elements`` (int, default unbounded)
leaves alone a call whose result would have more elements than that. The
result type is computed with the op's type relation *before* the kernel runs,
so a large constant is never even computed; the same type is what the folded
value must match exactly (shape and dtype).

**Shared weights are not copied** (unlike TVM, which folds everything). A call
is left alone when its result would take at least :data:`SHARED_WEIGHT_BYTES`
and one of its constant operands is a *shared weight*: a constant of at least
that size that another node of the function uses too (counted on the function
as given; a let-bound constant counts as one use). Folding it would keep the
weight for its other users and add a second, rearranged copy: the transpose of
a tied embedding (GPT-2's and Whisper's output projection reads the token
embedding through a ``transpose``) would grow a 500 MB model by 150 MB, the
complaint users make of onnxsim, which folds it. A weight with one user is
folded as before (the copy replaces it). The config option
``std.FoldConstant.copy_shared_weights = True`` folds those calls too.

A kernel that raises (or returns a value that does not match the op's type
relation), and a call whose type relation refuses its arguments, is left
unfolded with a warning on ``ctx.diag`` naming the op and the call: the call
might sit in a branch that never runs, so failing the whole pass would reject
a program that runs fine. numpy floating-point warnings are silenced while
folding, as the kernels silence them at run time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from irpass.errors import TypeInferenceError
from irpass.ir import (
    Call,
    Constant,
    Expr,
    ExprMutator,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Type,
    Var,
    describe,
    infer_type,
    post_order_visit,
)
from irpass.ir.gcpause import gc_paused
from irpass.ir.type_infer import carry_type
from irpass.ir.types import NUMPY_DTYPES
from irpass.op.create import shape_value
from irpass.op.shape_values import as_call, eval_shape_call
from irpass.transform import ConfigOption, PassContext, function_pass
from irpass.transform.context import RewriteCounter

from .options import options_of

__all__ = [
    "CONFIG_OPTIONS",
    "COPY_SHARED_WEIGHTS",
    "MAX_ELEMENTS",
    "NEVER_FOLD",
    "SHARED_WEIGHT_BYTES",
    "FoldConstant",
    "fold_constant",
]

#: The config key bounding the number of elements of a folded constant.
MAX_ELEMENTS = "std.FoldConstant.max_elements"

#: The config key that lets FoldConstant copy shared weights (see the module docstring).
COPY_SHARED_WEIGHTS = "std.FoldConstant.copy_shared_weights"

#: The size (bytes) from which a constant that several nodes use is a shared weight, and
#: from which a folded result would count as a copy of it: well above the scalars, shapes
#: and per-channel vectors that folding is for, well below any real weight matrix.
SHARED_WEIGHT_BYTES = 1 << 20

# declared in options.py (registered with the plugin, before any pass is imported)
CONFIG_OPTIONS: list[ConfigOption] = options_of("FoldConstant")

#: Ops never folded even on constant arguments: creation ops, whose folding
#: only trades a small call for a big constant (TVM's skip list).
NEVER_FOLD: frozenset[str] = frozenset(
    {"zeros", "ones", "full", "zeros_like", "ones_like", "full_like"}
)

# Node kinds whose evaluation has no effect and costs nothing: a tuple field of
# one of these kinds may be dropped when a projection picks another field.
_ATOMS = (Constant, Var, GlobalVar, Function)

# Report function passed around: (message, expr) -> None.
Report = Callable[[str, Expr], None]


@function_pass(opt_level=2, name="FoldConstant")
def FoldConstant(func: Function, mod: IRModule, ctx: PassContext) -> Function:  # noqa: N802
    """Fold the constant subexpressions of ``func`` (see the module docstring).

    Reads ``std.FoldConstant.max_elements`` (a negative value is a ``ValueError``
    naming the option) and ``std.FoldConstant.copy_shared_weights`` from the context.
    Problems with single calls are reported as warnings on ``ctx.diag`` and the calls
    left unfolded.
    """
    limit = ctx.config.get(MAX_ELEMENTS)
    if limit is not None and limit < 0:
        raise ValueError(f"config option {MAX_ELEMENTS!r} must be >= 0 (or unset), got {limit}")
    return fold_constant(
        func,
        mod,
        max_elements=limit,
        report=ctx.diag.warning,
        counter=ctx.rewrite_counter(),
        copy_shared_weights=bool(ctx.config.get(COPY_SHARED_WEIGHTS, False)),
    )


def fold_constant(
    func: Function,
    mod: IRModule | None = None,
    *,
    max_elements: int | None = None,
    report: Report | None = None,
    counter: RewriteCounter | None = None,
    copy_shared_weights: bool = False,
) -> Function:
    """``func`` with its constant subexpressions folded; ``func`` itself if none were.

    ``mod`` is the module ``func`` belongs to (used to infer types for
    ``shape_of``); ``max_elements`` bounds the size of a folded constant;
    ``copy_shared_weights`` folds calls that copy a shared weight too (see the module
    docstring);
    ``report(message, expr)`` receives a message for each call left unfolded
    because its kernel or type relation failed; ``counter(site)``, if given, is
    asked before each rewrite (a fold, a substitution, a projection, a branch
    selected) and the rewrite skipped when it says ``False`` (the debug counter).
    """
    warnings: list[tuple[str, Expr]] = []
    if counter is not None:
        counter = _Replayed(counter)
    # No name holds a _Folder: its memo dies inside the pause (see gc_paused).
    with np.errstate(all="ignore"), gc_paused():
        try:
            out = _Folder(
                func, mod, max_elements, warnings, False, counter, copy_shared_weights
            ).visit(func)
        except _Retyped as retyped:
            # Type inference returned a copy: start again on the typed copy,
            # so the types read for shape_of belong to the nodes visited.
            typed = retyped.typed
            warnings.clear()
            if counter is not None:
                counter.rewind()
            out = _Folder(
                typed, mod, max_elements, warnings, True, counter, copy_shared_weights
            ).visit(typed)
            if out is typed:
                out = func  # nothing folded: keep the input's identity
    if report is not None:
        for message, expr in warnings:
            report(message, expr)
    return out


def _annotated_copy(typed: Expr, root: Expr) -> bool:
    """Whether ``typed`` (what ``infer_type`` returned for ``root``) is ``root`` with a
    ``ret_type`` filled in only: its body is ``root``'s, whose nodes then carry the types,
    so folding goes on without starting again (and the result keeps ``root``'s
    annotations, as when nothing needs a type)."""
    return (
        type(typed) is Function
        and type(root) is Function
        and typed.body is root.body
        and typed.params == root.params
    )


class _Replayed:
    """A counter that remembers its answers: the walk started again on a typed copy
    (:class:`_Retyped`) meets the same rewrites in the same order, and gets the
    answers the first walk got for them instead of asking the counter twice."""

    __slots__ = ("counter", "answers", "asked")

    def __init__(self, counter: RewriteCounter) -> None:
        self.counter = counter
        self.answers: list[bool] = []
        self.asked = 0

    def __call__(self, site: str) -> bool:
        k = self.asked
        self.asked = k + 1
        if k < len(self.answers):
            return self.answers[k]
        answer = self.counter(site)
        self.answers.append(answer)
        return answer

    def rewind(self) -> None:
        """Replay the answers from the first one."""
        self.asked = 0


class _Retyped(Exception):
    """Raised when ``infer_type`` returned a copy of the function being folded."""

    def __init__(self, typed: Function) -> None:
        super().__init__("type inference returned a copy")
        self.typed = typed


_unchecked_call = Call._unchecked
_own_constant = Constant._own

# A constant's type, by the (shape, dtype) of its data: Constant.type builds a
# new TensorType (and reads dtype.name, slow in numpy 2) on each access.
_TENSOR_TYPES: dict[tuple[tuple[int, ...], np.dtype], TensorType] = {}


# Work-item states of the rewrite (pushed after their node: ``node, state``).
_ENTER = 0  # first visit: push the children
_EXIT = 1  # children rewritten: rewrite the node
_LET_VALUE = 2  # a let's value is rewritten: substitute it if constant, then the body
_LET_BUILD = 3  # a let's body is rewritten: rebuild the let (or drop it)

# Nodes that are their own rewrite (a var: unless the memo maps it to a constant). They
# are never pushed: a parent reads ``memo.get(child, child)``.
_LEAVES = frozenset({Var, Constant, GlobalVar, Op})


class _Folder:
    """The rewrite of one function (see the module docstring for the rules).

    One explicit-stack post-order walk, memoized by node identity like
    :class:`~irpass.ir.ExprMutator` (a shared node is rewritten once and stays
    shared, an unchanged node is returned as is), but without a method call
    per node: folding a long chain is dominated by the kernels and the new
    constants, not by the walk. A let's value is rewritten before its body,
    so a let-bound constant is substituted (through the memo) before any use
    of its var is met.
    """

    def __init__(
        self,
        root: Function,
        mod: IRModule | None,
        max_elements: int | None,
        warnings: list[tuple[str, Expr]],
        typed: bool,
        counter: RewriteCounter | None = None,
        copy_shared_weights: bool = False,
    ) -> None:
        self.root = root
        self.mod = mod
        self.max_elements = max_elements
        self.copy_shared_weights = copy_shared_weights
        # The shared weights of ``root`` (see the module docstring), found on first need.
        self.shared: set[Constant] | None = None
        self.warnings = warnings
        # Asked before each rewrite (None: no debug counter on the pass).
        self.counter = counter
        # None: types not inferred yet; True: the nodes carry types; False: inference failed.
        self.typed: bool | None = True if typed else None
        # Old node -> rewritten node; a let var -> the constant substituted for it.
        self.memo: dict[Expr, Expr] = {}
        # Every constant tuple built or met -> the (shape, dtype) of each field when all
        # fields are constants (such a tuple can be an op's argument), None when some
        # field is itself a constant tuple.
        self.const_tuples: dict[Tuple, tuple | None] = {}
        # (op, attrs, argument keys) -> what _signature returns: type relations are pure
        # functions, and a program repeats the same few signatures many times.
        self.type_cache: dict[tuple, tuple[Type, int, np.dtype | None]] = {}
        # Whether calls of an op may be folded at all (not stateful, not a creation op).
        self.foldable: dict[Op, bool] = {}
        # Let vars replaced by constants, for Primitive functions that capture them.
        self.substitutions: dict[Var, Expr] = {}
        self.substituter: ExprMutator | None = None
        # Rewritten nodes (and let vars) whose value is a symbolic shape value -> that
        # value (an object array of dims) and its type. Empty unless a shape_of of a
        # symbolic tensor was met: calls consult it only then, so static programs pay
        # one test per call.
        self.shape_values: dict[Expr, tuple[np.ndarray, TensorType]] = {}

    def visit(self, root: Expr) -> Expr:
        """The rewritten form of ``root``."""
        memo = self.memo
        get = memo.get
        if type(root) in _LEAVES:
            return get(root, root)
        stack: list = [root, _ENTER]
        push = stack.append
        pop = stack.pop
        while stack:
            state = pop()
            node = pop()
            if state == _ENTER:
                if node in memo:
                    continue
                t = type(node)
                if t is Call:
                    # A call whose operands are all done (a fold of constants, say) is
                    # rewritten at once; otherwise after them (_EXIT).
                    ready = True
                    for a in node.args:
                        if type(a) not in _LEAVES and a not in memo:
                            if ready:
                                push(node)
                                push(_EXIT)
                                ready = False
                            push(a)
                            push(_ENTER)
                    op = node.op
                    if type(op) not in _LEAVES and op not in memo:
                        if ready:
                            push(node)
                            push(_EXIT)
                            ready = False
                        push(op)
                        push(_ENTER)
                    if ready:
                        memo[node] = self._rewrite_call(node)
                elif t is Let:
                    push(node)
                    push(_LET_VALUE)
                    value = node.value
                    if type(value) not in _LEAVES and value not in memo:
                        push(value)
                        push(_ENTER)
                elif t is Tuple:
                    push(node)
                    push(_EXIT)
                    for f in node.fields:
                        if type(f) not in _LEAVES and f not in memo:
                            push(f)
                            push(_ENTER)
                elif t is TupleGetItem or t is If:
                    push(node)
                    push(_EXIT)
                    children = (
                        (node.tuple_value,)
                        if t is TupleGetItem
                        else (node.false_branch, node.true_branch, node.cond)
                    )
                    for child in children:
                        if type(child) not in _LEAVES and child not in memo:
                            push(child)
                            push(_ENTER)
                elif t is Function:
                    attrs = node.attrs
                    if attrs and attrs.get("Primitive"):
                        memo[node] = self._substitute_only(node)
                    else:
                        push(node)
                        push(_EXIT)
                        body = node.body
                        if type(body) not in _LEAVES and body not in memo:
                            push(body)
                            push(_ENTER)
                else:
                    raise TypeError(f"FoldConstant cannot visit {t.__name__} {node!r}")
            elif state == _EXIT:
                t = type(node)
                if t is Call:
                    memo[node] = self._rewrite_call(node)
                elif t is Tuple:
                    memo[node] = self._rewrite_tuple(node)
                elif t is TupleGetItem:
                    memo[node] = self._rewrite_getitem(node)
                elif t is If:
                    memo[node] = self._rewrite_if(node)
                else:  # Function
                    body = get(node.body, node.body)
                    memo[node] = (
                        node
                        if body is node.body
                        else Function(node.params, body, node.ret_type, node.attrs)
                    )
            elif state == _LET_VALUE:
                value = get(node.value, node.value)
                if self.shape_values and value in self.shape_values:
                    self.shape_values[node.var] = self.shape_values[value]
                if (
                    type(value) is Constant or (type(value) is Tuple and value in self.const_tuples)
                ) and (
                    self.counter is None
                    or self.counter(f"substitute the constant bound to %{node.var.name_hint}")
                ):
                    # Substitute the constant for the var; the binding is dropped.
                    memo[node.var] = value
                    self.substitutions[node.var] = value
                    if self.substituter is not None:
                        self.substituter.memo[node.var] = value
                push(node)
                push(_LET_BUILD)
                body = node.body
                if type(body) not in _LEAVES and body not in memo:
                    push(body)
                    push(_ENTER)
            else:  # _LET_BUILD
                body = get(node.body, node.body)
                if node.var in memo:
                    memo[node] = body
                else:
                    value = get(node.value, node.value)
                    memo[node] = (
                        node
                        if value is node.value and body is node.body
                        else Let(node.var, value, body)
                    )
        return memo[root]

    # -- rules ---------------------------------------------------------------------

    def _rewrite_call(self, call: Call) -> Expr:
        get = self.memo.get
        args = call.args
        new_args = tuple(map(get, args, args))
        op = call.op
        if type(op) is Op:
            # Cheap rejection first: most calls of a big program have a non-constant operand.
            first = type(new_args[0]) if new_args else None
            if first is Constant or first is Tuple or op.name == "shape_of":
                folded = self._fold(call, op, new_args)
                # (a Call: a symbolic shape_of kept as it is, its value recorded)
                if folded is not None and (
                    self.counter is None
                    or type(folded) is Call
                    or self.counter(f"fold {op.name}")
                ):
                    return folded
            if self.shape_values:
                folded = self._fold_shape_values(call, op, new_args)
                if folded is not None and (
                    self.counter is None or self.counter(f"fold {op.name} of shape values")
                ):
                    return folded
            if not new_args and op.name == "dims_tensor":
                self._record_dims_tensor(call)
            new_op = op
        else:
            # Calls of global functions and closures are not evaluated.
            new_op = get(op, op)
        if new_op is op and new_args == args:
            return call
        if new_op is op and type(op) is Op:
            # Same op, same arity, the call's own (valid) attrs: nothing to check. A
            # folded argument has the type of what it replaces: the call keeps its type.
            return carry_type(call, _unchecked_call(op, new_args, call.attrs))
        attrs = call.attrs
        return Call(new_op, new_args, attrs if attrs else None)

    def _fold(self, call: Call, op: Op, args: tuple[Expr, ...]) -> Expr | None:
        """The folded value of ``op(*args)`` (``call`` rewritten), or None to keep the call."""
        foldable = self.foldable.get(op)
        if foldable is None:
            foldable = self.foldable[op] = not op.stateful and op.name not in NEVER_FOLD
        if not foldable or not args:
            return None
        keys = []
        values = []  # the kernel's arguments
        const_tuples = self.const_tuples
        for arg in args:
            t = type(arg)
            if t is Constant:
                data = arg.data
                keys.append((data.shape, data.dtype))
                values.append(data)
            elif t is Tuple and const_tuples.get(arg) is not None:
                keys.append(const_tuples[arg])  # a tuple of tensors, as concatenate takes
                values.append(_value(arg))
            elif op.name == "shape_of":
                return self._fold_shape_of(call, args)
            else:
                return None
        # The result type, from the op's type relation: it bounds the size before the
        # kernel runs, and the kernel's result must match it exactly.
        attrs = call.attrs
        cache_key = (op, attrs, tuple(keys))
        signature = self.type_cache.get(cache_key)
        if signature is None:
            signature = self._signature(call, op, args)
            if signature is None:
                return None
            self.type_cache[cache_key] = signature
        ty, elements, np_dtype = signature
        if elements is None:
            return None  # a symbolic result: its value depends on sizes known at run time
        if self.max_elements is not None and elements > self.max_elements:
            return None
        if (
            not self.copy_shared_weights
            and np_dtype is not None
            and elements * np_dtype.itemsize >= SHARED_WEIGHT_BYTES
            and self._copies_shared_weight(args)
        ):
            return None
        try:
            out = op.kernel(tuple(values), attrs)
        except Exception as exc:
            self._warn(f"the kernel of {op.name!r} raised {type(exc).__name__}: {exc}", call)
            return None
        if (  # the common case: a tensor of the right type
            np_dtype is not None
            and type(out) is np.ndarray
            and out.dtype == np_dtype
            and out.shape == ty.shape
        ):
            # The kernel's fresh result becomes the constant's storage (no copy).
            return _own_constant(out)
        folded = _as_expr(out, ty)
        if folded is None:
            self._warn(
                f"the kernel of {op.name!r} returned {_summary(out)}, but the op's type "
                f"relation says {ty}",
                call,
            )
        elif type(folded) is Tuple:
            self._register_tuple(folded)  # a constant tuple: its users may fold too
        return folded

    def _copies_shared_weight(self, args: tuple[Expr, ...]) -> bool:
        """Whether one of ``args`` is a shared weight of the function being folded."""
        big = [a for a in args if type(a) is Constant and a.data.nbytes >= SHARED_WEIGHT_BYTES]
        if not big:
            return False
        if self.shared is None:
            self.shared = _shared_weights(self.root)
        return any(a in self.shared for a in big)

    def _signature(
        self, call: Call, op: Op, args: tuple[Expr, ...]
    ) -> tuple[Type, int | None, np.dtype | None] | None:
        """``(result type, its number of elements, numpy dtype if a tensor)``, or None;
        the number of elements is None for a type that is not static."""
        try:
            ty = op.type_rel(tuple([_const_type(a) for a in args]), call.attrs)
        except Exception as exc:
            self._warn(
                f"the type relation of {op.name!r} refused the constant arguments "
                f"({type(exc).__name__}: {exc})",
                call,
            )
            return None
        if not _static(ty):
            return ty, None, None
        np_dtype = np.dtype(ty.dtype) if isinstance(ty, TensorType) else None
        return ty, _elements(ty), np_dtype

    def _rewrite_tuple(self, tup: Tuple) -> Expr:
        get = self.memo.get
        fields = tup.fields
        new_fields = tuple(map(get, fields, fields))
        new = tup if new_fields == fields else carry_type(tup, Tuple(new_fields))
        const_tuples = self.const_tuples
        keys: list | None = []
        for f in new_fields:
            t = type(f)
            if t is Constant:
                if keys is not None:
                    keys.append((f.data.shape, f.data.dtype))
            elif t is Tuple and f in const_tuples:
                keys = None  # nested: still constant, but no op takes it
            else:
                return new
        const_tuples[new] = tuple(keys) if keys is not None else None
        return new

    def _rewrite_getitem(self, item: TupleGetItem) -> Expr:
        value = self.memo.get(item.tuple_value, item.tuple_value)
        index = item.index
        if type(value) is Tuple and index < len(value.fields):
            fields = value.fields
            if (
                value in self.const_tuples
                or all(isinstance(f, _ATOMS) for i, f in enumerate(fields) if i != index)
            ) and (self.counter is None or self.counter(f"project field {index} of a tuple")):
                return fields[index]  # the other fields have no effect to keep
        return item if value is item.tuple_value else carry_type(item, TupleGetItem(value, index))

    def _rewrite_if(self, node: If) -> Expr:
        get = self.memo.get
        cond = get(node.cond, node.cond)
        if (
            type(cond) is Constant
            and cond.data.shape == ()
            and cond.data.dtype == np.bool_
            and (self.counter is None or self.counter("select the branch of a constant if"))
        ):
            # Only the selected branch can ever run.
            branch = node.true_branch if bool(cond.data) else node.false_branch
            return get(branch, branch)
        true_branch = get(node.true_branch, node.true_branch)
        false_branch = get(node.false_branch, node.false_branch)
        if (
            cond is node.cond
            and true_branch is node.true_branch
            and false_branch is node.false_branch
        ):
            return node
        return If(cond, true_branch, false_branch)

    # -- helpers -------------------------------------------------------------------

    def _substitute_only(self, func: Function) -> Function:
        """A Primitive function with the let-bound constants it captures substituted."""
        if self.substituter is None:
            if not self.substitutions:
                return func
            # One substituter for all Primitive functions: its memo holds every
            # substitution made so far (later ones are added as they are made).
            self.substituter = ExprMutator()
            self.substituter.memo.update(self.substitutions)
        return self.substituter.visit(func)

    def _register_tuple(self, tup: Tuple) -> None:
        """Record a constant tuple built by the pass (and the tuples nested in it)."""
        keys: list | None = []
        for f in tup.fields:
            if type(f) is Tuple:
                self._register_tuple(f)  # nesting bounded by the op's result type
                keys = None
            elif keys is not None:
                keys.append((f.data.shape, f.data.dtype))
        self.const_tuples[tup] = tuple(keys) if keys is not None else None

    def _fold_shape_of(self, call: Call, args: tuple[Expr, ...]) -> Expr | None:
        """``shape_of`` of a non-constant: the shape from the argument's type, or None.

        A symbolic shape keeps the call (``args`` rewritten) and records its shape value."""
        ty = self._type_of(call.args[0], call)
        if not isinstance(ty, TensorType):
            return None
        if self.max_elements is not None and len(ty.shape) > self.max_elements:
            return None
        dtype = call.attrs["dtype"]
        if ty.is_static:
            return Constant(shape_value(ty.shape, dtype))
        if np.dtype(NUMPY_DTYPES[dtype]).kind not in "iu":
            return None
        kept = call if args == call.args else _unchecked_call(call.op, args, call.attrs)
        value = np.empty(len(ty.shape), dtype=object)
        value[:] = ty.shape
        self.shape_values[kept] = (value, TensorType((len(ty.shape),), dtype))
        return kept

    def _fold_shape_values(self, call: Call, op: Op, args: tuple[Expr, ...]) -> Expr | None:
        """A call whose args are shape values and integer constants: a ``Constant`` when
        its value comes out static, the call itself (recorded) when symbolic, else None."""
        shape_values = self.shape_values
        values: list[Any] = []
        arg_types: list[Type] = []
        symbolic = False
        for arg in args:
            t = type(arg)
            if t is Tuple:  # concatenate's tuple of shape values and constants
                fields = [_shape_operand(f, shape_values) for f in arg.fields]
                if any(f is None for f in fields):
                    return None
                values.append(tuple(f[0] for f in fields))
                arg_types.append(TupleType(tuple(f[1] for f in fields)))
                symbolic = symbolic or any(f[2] for f in fields)
                continue
            operand = _shape_operand(arg, shape_values)
            if operand is None:
                return None
            values.append(operand[0])
            arg_types.append(operand[1])
            symbolic = symbolic or operand[2]
        if not symbolic or op.stateful or op.name in NEVER_FOLD:
            return None
        try:
            ty = op.type_rel(tuple(arg_types), call.attrs)
        except Exception:  # noqa: BLE001 - left to type inference to report
            return None
        if not isinstance(ty, TensorType) or not ty.is_static:
            return None
        out = eval_shape_call(op, values, call.attrs, ty.dtype)
        if out is None or out.shape != ty.shape:
            return None
        if out.dtype != object:
            if self.max_elements is not None and out.size > self.max_elements:
                return None
            return Constant(out)
        # the scaffolding that computed the value becomes one call holding it
        kept = as_call(out, ty.dtype)
        shape_values[kept] = (out, ty)
        return kept

    def _record_dims_tensor(self, call: Call) -> None:
        """Record the shape value of a ``dims_tensor`` call, so that its users fold."""
        dtype = call.attrs["dtype"]
        if np.dtype(NUMPY_DTYPES[dtype]).kind not in "iu":
            return
        dims = call.attrs["dims"]
        if all(type(d) is int for d in dims):
            return
        value = np.empty(len(dims), dtype=object)
        value[:] = list(dims)
        self.shape_values[call] = (value, TensorType((len(dims),), dtype))

    def _type_of(self, expr: Expr, call: Call) -> Type | None:
        """The inferred type of ``expr`` (an original node), inferring types on first use."""
        if self.typed is None:
            try:
                typed = infer_type(self.root, self.mod)
            except TypeInferenceError as exc:
                self.typed = False
                self._warn(f"the type of its argument is unknown (ill-typed: {exc})", call)
                return None
            if typed is not self.root and not _annotated_copy(typed, self.root):
                raise _Retyped(typed)
            self.typed = True
        if not self.typed:
            return None
        return expr._checked_type

    def _warn(self, message: str, call: Expr) -> None:
        self.warnings.append((f"not folding `{describe(call)}`: {message}", call))


def _shape_operand(
    expr: Expr, shape_values: dict[Expr, tuple[np.ndarray, TensorType]]
) -> tuple[np.ndarray, Type, bool] | None:
    """``(value, type, symbolic)`` of a shape value or an integer constant, else None."""
    known = shape_values.get(expr)
    if known is not None:
        return known[0], known[1], True
    if type(expr) is Constant and expr.data.dtype.kind in "iub":
        return expr.data, _const_type(expr), False
    return None


def _static(ty: Type) -> bool:
    """Whether every tensor type in ``ty`` has a static shape."""
    if type(ty) is TensorType:
        return ty.is_static
    if isinstance(ty, TupleType):
        return all(_static(f) for f in ty.fields)
    return True


def _shared_weights(root: Expr) -> set[Constant]:
    """The constants of at least :data:`SHARED_WEIGHT_BYTES` that two or more nodes under
    ``root`` use (a node using one twice counts once)."""
    users: dict[Constant, int] = {}

    def count(node: Expr) -> None:
        for child in {c for c in node.children() if type(c) is Constant}:
            if child.data.nbytes >= SHARED_WEIGHT_BYTES:
                users[child] = users.get(child, 0) + 1

    post_order_visit(root, count)
    return {c for c, n in users.items() if n > 1}


def _const_type(expr: Expr) -> Type:
    """The type of a constant or a tuple of constants."""
    if type(expr) is Tuple:
        return TupleType(tuple([_const_type(f) for f in expr.fields]))  # fields: constants
    data = expr.data
    key = (data.shape, data.dtype)
    ty = _TENSOR_TYPES.get(key)
    if ty is None:
        ty = _TENSOR_TYPES[key] = expr.type
    return ty


def _value(expr: Expr) -> Any:
    """The run-time value of a constant (its read-only array) or a tuple of constants."""
    if type(expr) is Tuple:
        return tuple([f.data for f in expr.fields])
    return expr.data


def _elements(ty: Type) -> int:
    """The number of elements of a value of type ``ty`` (tuples: all fields)."""
    if isinstance(ty, TensorType):
        return ty.size
    if isinstance(ty, TupleType):
        return sum(_elements(f) for f in ty.fields)
    return 0


def _as_expr(out: Any, ty: Type) -> Expr | None:
    """The constant expression for kernel result ``out`` of type ``ty``; None if it does not fit."""
    if isinstance(ty, TensorType):
        if isinstance(out, np.generic):
            out = np.asarray(out)
        if (
            type(out) is not np.ndarray
            or out.shape != ty.shape
            or out.dtype != NUMPY_DTYPES[ty.dtype]
        ):
            return None
        return Constant(out)
    if isinstance(ty, TupleType):
        if not isinstance(out, (tuple, list)) or len(out) != len(ty.fields):
            return None
        fields = [_as_expr(o, t) for o, t in zip(out, ty.fields, strict=True)]
        if any(f is None for f in fields):
            return None
        return Tuple(fields)
    return None


def _summary(out: Any) -> str:
    if isinstance(out, (np.ndarray, np.generic)):
        return f"an array of shape {np.shape(out)} and dtype {np.asarray(out).dtype}"
    if isinstance(out, (tuple, list)):
        return f"a {type(out).__name__} of {len(out)} value(s)"
    return f"a {type(out).__name__}"
