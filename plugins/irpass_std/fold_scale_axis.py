"""FoldScaleAxis: fold per-channel constant scales into the weights of ``conv2d`` / ``dense``.

This follows TVM Relay's ``FoldScaleAxis`` (a ``Sequential`` of
``BackwardFoldScaleAxis`` then ``ForwardFoldScaleAxis``). A *per-channel*
constant is one that, broadcast against a tensor, varies along the tensor's
channel axis only: shape ``(C, 1, 1)`` against NCHW data, ``(C,)`` or
``(1, 1, 1, C)`` against NHWC, ``(units,)`` against a dense output. A scalar (or
an all-ones shape) is per-channel along every axis; a full tensor is not.

**Backward** (a scale *after* the weighted op moves into its output channels)::

    multiply(conv2d(x, w), s)               ->  conv2d(x, w * s[O axis])
    multiply(bias_add(conv2d(x, w), b), s)  ->  bias_add(conv2d(x, w * s), b * s)
    multiply(relu(add(dense(x, w), b)), s)  ->  relu(add(dense(x, w * s[:, None]), b * s))

The scale travels from the multiply down through ``nn.bias_add``, ``add`` /
``subtract`` of a bias (the bias is scaled too), ``add`` / ``subtract`` of two
branches that can both take it, ``nn.relu`` and ``nn.leaky_relu`` (only when
every entry of the scale is > 0, since ``relu(a) * s == relu(a * s)`` needs
``s > 0``) and another per-channel ``multiply`` (whose scale is combined with
it), and it ends in ``nn.conv2d`` (scaled along the kernel's ``O`` axis, any
``kernel_layout`` and ``groups``) or ``nn.dense`` (scaled rows). Every node it
passes, the weighted op included, must have that one user (and a ``let``-bound
variable on the way must be used once): a value someone else also reads must
keep its meaning. A value with several users stops the scale, but each of
its users still folds its own (TVM's dual consumer: ``relu(conv2d(x, w) * s)``
read by two convolutions that each have a scale after them folds all three).

**Forward** (a scale *before* the weighted op moves into its input channels)::

    conv2d(relu(multiply(x, s)), w)     ->  conv2d(relu(x), w * s[I axis])   (s > 0)
    conv2d(add(multiply(x, s), b), w)   ->  conv2d(add(x, b / s), w * s[I axis])
    dense(multiply(x, s), w)            ->  dense(x, w * s[None, :])

From the data argument of each conv2d / dense the pass asks down a chain of
``nn.relu`` / ``nn.leaky_relu`` (needs ``s > 0``), ``nn.bias_add`` and ``add`` /
``subtract`` of a bias (TVM's ``relu(x * s + b)`` form: the bias becomes
``b / s``, which needs every entry of ``s`` nonzero and not subnormal, lest
``b / s`` overflow) for a per-channel ``multiply``, which disappears. A value
on the way may have several users when *all* of them ask for the same axis
(TVM's dual path: ``relu(x * s) - b`` read by two convolutions folds ``s``
into both weights); a value also read by anything else keeps its meaning.
Grouped and depthwise convolutions are handled by scaling each weight entry
with the scale of the input channel it reads.

A *bias* is the other operand of an ``add`` / ``subtract``: a constant of any
shape, or any other float tensor that varies along the channel axis only (a
parameter ``b`` of shape ``(C, 1, 1)``, ``expand_dims(b, 1, 2)``, ...), as in
TVM; it must not broadcast the result to a bigger shape.

A-normal form: wherever a constant is read (a scale, a bias, a weight), a var
bound by a ``let`` to a ``Constant`` (or to such a var: ``let %d = %c``) counts
as that constant, whatever its number of uses, as ``ToANormalForm`` binds every
constant. A new weight or bias goes into the binding when the vars from the use
to the constant have one use each (the program keeps its form), else into the
use itself, so that every other reader of the var still sees the old value; a
binding whose every use the rewrite removed (the scale of a folded multiply, a
weight all of whose readers got a new one) is dropped.

New weights and biases: a ``Constant`` becomes a new ``Constant`` computed with
numpy in its own dtype (float16 in float32; weights are big and a product
rounded once is within an ulp of the exact one); anything else becomes
``multiply(w, factor)`` (``divide(b, factor)`` for a forward bias) with a
constant ``factor`` shaped to broadcast along the channel axis, which
``FoldConstant`` (run after this pass in the default pipeline) folds when ``w``
is a constant expression. SimplifyExpr runs before this pass in the default
pipeline and leaves a chain of constant affine ops after a conv2d as
``conv2d -> multiply -> add``, so batch norms followed by a per-channel
``Mul``/``Add`` (caffe2-exported ONNX models) fold completely.

The pass never fires on integer tensors, on scales that are not constants or
not finite, on a conv2d / dense whose ``out_dtype`` differs from its input
dtype, on a bias that would broadcast the result to a bigger shape, or where a
shape would change.

Cost: each pass first scans the function (closures included) for a conv2d /
dense and returns it as it is if there is none; else it makes one post-order
list of the function while counting uses and noting the let-bound vars that
stand for constants. Backward computes what can be scaled bottom-up and the
scale requests top-down (a node receives a request only from its single user);
forward sends the requests top-down (a value takes the meet of its users'
requests, and none unless every user sent one) and the scales bottom-up. Both
rewrite with one memoizing :class:`~irpass.ir.ExprMutator`:
linear in the size of the function and iterative at any depth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from irpass.ir import (
    Call,
    Constant,
    ExprMutator,
    Function,
    If,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
)
from irpass.ir.gcpause import gc_paused
from irpass.ir.type_infer import carry_type
from irpass.transform import ConfigOption, Sequential, function_pass
from irpass.transform.context import RewriteCounter

from .infer_type import typed_function
from .scan import reaches_op_call

if TYPE_CHECKING:
    from irpass.ir import Expr, IRModule
    from irpass.transform import PassContext

__all__ = ["BackwardFoldScaleAxis", "ForwardFoldScaleAxis", "FoldScaleAxis"]

CONFIG_OPTIONS: list[ConfigOption] = []

_FLOAT_DTYPES = frozenset({"float16", "float32", "float64"})
_ADDITIVE = frozenset({"add", "subtract"})
# Positively homogeneous ops: f(a * s) == f(a) * s for every s > 0, so a scale crosses them
# when all its entries are positive (TVM lets it cross these two).
_HOMOGENEOUS = frozenset({"nn.relu", "nn.leaky_relu"})
_WEIGHTED = frozenset({"nn.conv2d", "nn.dense"})
# Node kinds with sub-expressions (the rest are leaves: vars, constants, global vars, ops).
_INNER = frozenset({Call, Tuple, TupleGetItem, Let, If, Function})

# An edit of one call: given the call rebuilt with rewritten arguments, its replacement.
_Edit = Callable[[Call], "Expr"]


# -- shared analysis -----------------------------------------------------------------------------


class _Graph:
    """The inner nodes of one function in post-order, their use counts and the let bindings.

    A use is one reference from a parent (a call argument or callee, a tuple
    field, a let's value or body, an if's condition or branch, a function
    body); a let's or function's binders are not uses. A node used once has
    one user whose value depends on it, so rewriting the node is safe when
    that user is rewritten to match. ``order`` holds the calls, tuples,
    projections, lets, ifs and functions (closures included), children
    before parents; ``weighted`` tells whether any of them is a conv2d or
    dense call (if none is, neither direction has anything to do).
    ``constants`` maps each let-bound var whose value is a ``Constant``, or
    a var bound to such a var (``let %c = const; let %d = %c``), to that
    constant: the A-normal form binds every constant to a var.
    """

    def __init__(self, func: Function) -> None:
        order: list[Expr] = []
        uses: dict[Expr, int] = {}
        let_value: dict[Var, Expr] = {}
        constants: dict[Expr, Constant] = {}
        weighted = False
        # One explicit-stack walk: each inner node is expanded once (counting a use for
        # each of its children) and appended to `order` when the marker under it pops.
        expanded: set[Expr] = set()
        stack: list[Expr | None] = [func]
        push, pop = stack.append, stack.pop
        get = uses.get
        while stack:
            node = pop()
            if node is None:
                order.append(pop())  # type: ignore[arg-type]
                continue
            if node in expanded:
                continue
            expanded.add(node)
            t = type(node)
            if t is Call:
                op = node.op
                if type(op) is Op:
                    children: tuple[Expr, ...] = node.args
                    if op.name in _WEIGHTED:
                        weighted = True
                else:
                    children = (op, *node.args)
            elif t is Let:
                # pushed last, the value is walked (and listed) before the body: a let-bound
                # var's value then comes before every use of the var in `order`
                children = (node.body, node.value)
                value = node.value
                let_value[node.var] = value
                # a let is expanded before every node of its body, so the binding of a var
                # this value names (which encloses this let) is already known
                if type(value) is Constant:
                    constants[node.var] = value
                elif type(value) is Var and value in constants:
                    constants[node.var] = constants[value]
            elif t is Tuple:
                children = node.fields
            elif t is TupleGetItem:
                children = (node.tuple_value,)
            elif t is If:
                children = (node.cond, node.true_branch, node.false_branch)
            elif t is Function:
                children = (node.body,)
            else:
                continue
            push(node)
            push(None)
            for child in children:
                uses[child] = get(child, 0) + 1
                if type(child) in _INNER and child not in expanded:
                    push(child)
        self.order = order
        self.uses = uses
        self.let_value = let_value
        self.constants = constants
        self.weighted = weighted

    def single_use(self, node: Expr) -> bool:
        """Whether ``node`` has exactly one user."""
        return self.uses.get(node, 0) == 1

    def bound_value(self, node: Expr) -> Expr | None:
        """The value of a let-bound var used once whose value is used by the let only."""
        value = self.let_value.get(node)  # type: ignore[call-overload]
        if value is None or not self.single_use(node) or not self.single_use(value):
            return None
        return value

    def resolve(self, node: Expr) -> Expr:
        """``node``, or for a let-bound var used once the value it stands for (transitively)."""
        while type(node) is Var:
            value = self.bound_value(node)
            if value is None:
                break
            node = value
        return node

    def constant(self, node: Expr) -> Constant | None:
        """The constant ``node`` is, or stands for as a let-bound var (whatever its uses:
        reading a constant's value changes nothing), else ``None``."""
        return node if type(node) is Constant else self.constants.get(node)

    def sole_binders(self, node: Expr) -> list[Var]:
        """The vars of the chain ``node`` -> its let value -> ... that have one use each,
        from ``node`` on: a new value given to the last one reaches ``node``'s one user
        and no one else (empty when ``node`` is no var or is used more than once)."""
        chain: list[Var] = []
        uses, let_value = self.uses, self.let_value
        while type(node) is Var and uses.get(node, 0) == 1 and node in let_value:
            chain.append(node)
            node = let_value[node]
        return chain

    def scalar_side(self, call: Call) -> tuple[int, Constant] | None:
        """``(index of the other argument, constant)`` for a binary call with exactly one
        constant argument (a ``Constant`` or a let-bound var standing for one)."""
        a, b = call.args
        ca, cb = self.constant(a), self.constant(b)
        if cb is not None and ca is None:
            return 0, cb
        if ca is not None and cb is None:
            return 1, ca
        return None


def _op_name(node: Expr) -> str | None:
    """The op name of a call of an :class:`Op`, else ``None``."""
    if type(node) is Call and type(node.op) is Op:
        return node.op.name
    return None


def _tensor_type(node: Expr) -> TensorType | None:
    ty = node._checked_type
    return ty if isinstance(ty, TensorType) else None


def _float_tensor(node: Expr) -> TensorType | None:
    ty = _tensor_type(node)
    return ty if ty is not None and ty.dtype in _FLOAT_DTYPES else None


def _channel_vector(c: Expr, rank: int, axis: int, extent: int) -> np.ndarray | None:
    """The per-channel values of constant ``c`` along ``axis`` of a rank-``rank`` tensor.

    ``None`` unless ``c`` is a finite float constant that, aligned to the
    right as numpy broadcasting does, has extent 1 on every other axis (and
    ``extent`` or 1 on ``axis``).
    """
    if type(c) is not Constant or type(extent) is not int:  # a symbolic channel count
        return None
    data = c.data
    if data.dtype.kind != "f":  # dtype.kind: much cheaper than dtype.name
        return None
    shape = data.shape
    if len(shape) > rank:
        return None
    padded = (1,) * (rank - len(shape)) + shape
    for j, d in enumerate(padded):
        if d != 1 and (j != axis or d != extent):
            return None
    vec = data.reshape(-1).astype(np.float64)
    if not np.isfinite(vec).all():
        return None
    return vec if vec.shape[0] == extent else np.repeat(vec, extent)


def _along(vec: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """``vec`` shaped to broadcast along ``axis`` of a rank-``rank`` tensor."""
    return vec.reshape(tuple(vec.shape[0] if j == axis else 1 for j in range(rank)))


def _trailing(vec: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """``vec`` shaped ``(C, 1, ...)`` to broadcast along ``axis`` of a rank-``rank`` tensor
    with as few dimensions as possible (a scaled constant keeps its own rank if it can)."""
    return vec.reshape((vec.shape[0],) + (1,) * (rank - 1 - axis))


def _scaled(expr: Expr, factor: np.ndarray, dtype: str) -> Expr:
    """``expr * factor``: a new constant when ``expr`` is one, else a ``multiply`` call.

    A constant is scaled in its own dtype (float16 in float32): a product of two floats
    rounded once is within an ulp of the float64 product, and weights are big (ResNet-50
    holds 25M of them; float64 products take eight times as long).
    """
    if type(expr) is Constant:
        wide = np.promote_types(dtype, np.float32)
        product = np.multiply(expr.data, factor.astype(wide), dtype=wide)
        return Constant(product.astype(dtype, copy=False))
    return Call(Op.get("multiply"), [expr, Constant(factor.astype(dtype))])


def _divided(expr: Expr, factor: np.ndarray, dtype: str) -> Expr:
    """``expr / factor``: a new constant when ``expr`` is one, else a ``divide`` call
    (which FoldConstant folds when ``expr`` is a constant expression)."""
    if type(expr) is Constant:
        wide = np.promote_types(dtype, np.float32)
        quotient = np.divide(expr.data, factor.astype(wide), dtype=wide)
        return Constant(quotient.astype(dtype, copy=False))
    return Call(Op.get("divide"), [expr, Constant(factor.astype(dtype))])


def _bias_ok(graph: _Graph, bias: Expr, axis: int, rank: int) -> bool:
    """Whether ``bias``, the operand of an ``add`` / ``subtract`` beside the scaled value
    (of rank ``rank``, scaled along ``axis``), can take the scale itself.

    A constant (or a let-bound var standing for one) of any shape that broadcasts within
    the rank can (the new one is computed here); any other float tensor must vary along
    ``axis`` only, as TVM requires, so the ``multiply`` / ``divide`` left on it acts on
    one value per channel, not on a full tensor at run time.
    """
    const = graph.constant(bias)
    if const is not None:
        return const.data.ndim <= rank
    ty = _float_tensor(bias)
    if ty is None or ty.ndim > rank:
        return False
    offset = rank - ty.ndim
    return all(d == 1 for j, d in enumerate(ty.shape) if j + offset != axis)


def _weighted_ok(call: Call) -> TensorType | None:
    """The float output type of a conv2d / dense whose output dtype is its input dtype."""
    out = _float_tensor(call)
    data = _tensor_type(call.args[0])
    if out is None or data is None or out.dtype != data.dtype:
        return None
    return out


def _conv_out_axis(call: Call) -> int:
    attrs = call.attrs
    return (attrs["out_layout"] or attrs["data_layout"]).index("C")


class _Plan:
    """The rewrite planned for one function.

    ``forward[call] = i`` replaces a call by its i-th (rewritten) argument;
    ``edits[call]`` maps the rebuilt call to its replacement; ``rebind[var]``
    is the new value of the let binding of ``var`` (``None``: the binding is
    dropped). A constant operand bound to a var (A-normal form) gets its new
    value in the binding when the vars from the use to the constant are used
    once each (the module keeps its form), else at the use: a var also read
    elsewhere keeps its value. A binding of a constant, or of a var standing
    for one, whose every use the rewrite removes is dropped, so no dead copy
    of a weight is left behind.
    """

    def __init__(self, graph: _Graph) -> None:
        self.graph = graph
        self.forward: dict[Expr, int] = {}
        self.edits: dict[Expr, _Edit] = {}
        self.rebind: dict[Var, Expr | None] = {}
        self.lost: dict[Expr, int] = {}  # per let-bound var: how many of its uses are gone

    def remove(self, call: Call, index: int) -> None:
        """Replace the binary ``call`` by its argument ``index`` (the other one, a constant
        scale, loses this use)."""
        self.forward[call] = index
        self.release(call.args[1 - index])

    def scale_arg(
        self,
        call: Call,
        index: int,
        factor: np.ndarray,
        dtype: str,
        apply: Callable[[Expr, np.ndarray, str], Expr] = _scaled,
    ) -> None:
        """Scale argument ``index`` of ``call`` by ``factor`` (``apply`` is :func:`_scaled`,
        or :func:`_divided` to divide it)."""
        graph = self.graph
        arg = call.args[index]
        const = graph.constant(arg)
        new = None
        if const is not None:
            new = apply(const, factor, dtype)
            binders = graph.sole_binders(arg)
            if binders:
                last = binders[-1]
                self.rebind[last] = new
                self.release(graph.let_value[last])  # a var it was bound to loses a use
                return
            self.release(arg)

        def edit(rebuilt: Call) -> Expr:
            args = list(rebuilt.args)
            args[index] = new if new is not None else apply(args[index], factor, dtype)
            # a scaled constant has the shape and dtype of the one it replaces
            return carry_type(call, Call(rebuilt.op, args, rebuilt.attrs))

        self.edits[call] = edit

    def release(self, node: Expr) -> None:
        """A use of ``node``, a constant operand, is gone: drop the bindings (of ``node``,
        then of the vars they were bound to) that have no use left."""
        uses, let_value, lost = self.graph.uses, self.graph.let_value, self.lost
        while type(node) is Var and node in let_value:
            count = lost.get(node, 0) + 1
            lost[node] = count
            if count < uses[node]:
                return
            self.rebind[node] = None
            node = let_value[node]


class _Rewriter(ExprMutator):
    """Applies a :class:`_Plan`."""

    def __init__(self, plan: _Plan) -> None:
        self.forward = plan.forward
        self.edits = plan.edits
        self.rebind = plan.rebind

    def visit_let_binding(self, let: Let) -> tuple[Var, Expr] | None:
        var = let.var  # vars are never rewritten here
        rebind = self.rebind
        if var in rebind:
            value = rebind[var]
            return None if value is None else (var, value)
        return var, self.visit(let.value)

    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        index = self.forward.get(call)
        if index is not None:
            return new.args[index]
        edit = self.edits.get(call)
        return edit(new) if edit is not None else new


# -- backward ------------------------------------------------------------------------------------


class _Scalable(NamedTuple):
    """A per-channel scale along ``axis`` (of a rank-``rank`` tensor) can be pushed into
    the node's inputs; if ``positive`` only when every entry is > 0 (a relu is on the way)."""

    axis: int
    rank: int
    positive: bool


class _Backward:
    """Plans and applies the backward folding of one function.

    ``counter(site)``, if given, is asked before each multiply is removed (the debug
    counter): a multiply it refuses stays, and a scale from a multiply above it
    goes on through it into the weights below (``(x * s) * t == (x * t) * s``).
    """

    def __init__(self, func: Function, counter: RewriteCounter | None = None) -> None:
        self.counter = counter
        self.graph = _Graph(func)
        self.info: dict[Expr, _Scalable] = {}
        # per node: the argument indices the scale goes into (the rest are constants to scale)
        self.into: dict[Expr, tuple[int, ...]] = {}
        self.scale: dict[Expr, np.ndarray] = {}  # a folded multiply's own channel scale

    def run(self, func: Function) -> Function:
        if not self.graph.weighted:
            return func
        self.analyse()
        plan = self.plan()
        if not plan.forward:
            return func
        return _Rewriter(plan).visit(func)

    # bottom-up: what each node could absorb
    def analyse(self) -> None:
        info = self.info
        for node in self.graph.order:
            name = _op_name(node)
            if name is None:
                continue
            found = self.scalable(node, name)
            if found is not None:
                info[node] = found

    def arg_info(self, node: Expr) -> _Scalable | None:
        """What a single-use argument can absorb (a let-bound var: what its value can)."""
        if not self.graph.single_use(node):
            return None
        return self.info.get(self.graph.resolve(node))

    def scalable(self, call: Call, name: str) -> _Scalable | None:
        if name == "nn.conv2d":
            if _weighted_ok(call) is None:
                return None
            return _Scalable(_conv_out_axis(call), 4, False)
        if name == "nn.dense":
            out = _weighted_ok(call)
            return None if out is None else _Scalable(out.ndim - 1, out.ndim, False)
        if name in _HOMOGENEOUS:
            inner = self.arg_info(call.args[0])
            if inner is None:
                return None
            self.into[call] = (0,)
            return inner._replace(positive=True)
        if name == "nn.bias_add":
            inner = self.arg_info(call.args[0])
            if inner is None or call.attrs["axis"] % inner.rank != inner.axis:
                return None
            self.into[call] = (0,)
            return inner
        if name in _ADDITIVE:
            return self.scalable_additive(call)
        if name == "multiply":
            return self.scalable_multiply(call)
        return None

    def scalable_additive(self, call: Call) -> _Scalable | None:
        out = _float_tensor(call)
        if out is None:
            return None
        a, b = call.args
        ia, ib = self.arg_info(a), self.arg_info(b)
        if (
            ia is not None
            and ib is not None
            and ia[:2] == ib[:2]
            and _tensor_type(a) == out
            and _tensor_type(b) == out
        ):
            self.into[call] = (0, 1)  # both branches take the scale: no multiply is left
            return ia._replace(positive=ia.positive or ib.positive)
        for index, inner in ((0, ia), (1, ib)):
            # one branch takes the scale, the other operand is scaled by a multiply
            if (
                inner is not None
                and _tensor_type(call.args[index]) == out
                and _bias_ok(self.graph, call.args[1 - index], inner.axis, inner.rank)
            ):
                self.into[call] = (index,)
                return inner
        return None

    def scalable_multiply(self, call: Call) -> _Scalable | None:
        out = _float_tensor(call)
        side = self.graph.scalar_side(call)
        if out is None or side is None:
            return None
        index, const = side
        arg = call.args[index]
        inner = self.arg_info(arg)
        if inner is None or _tensor_type(arg) != out:
            return None
        vec = _channel_vector(const, inner.rank, inner.axis, out.shape[inner.axis])
        if vec is None:
            return None
        if inner.positive and not (vec > 0).all():
            return None  # it would cross a relu with a non-positive scale
        self.into[call] = (index,)
        self.scale[call] = vec
        return inner

    # top-down: which nodes receive which scale
    def plan(self) -> _Plan:
        info, into, graph = self.info, self.into, self.graph
        request: dict[Expr, np.ndarray] = {}
        plan = _Plan(graph)
        for node in reversed(graph.order):
            if node not in info:
                continue
            incoming = request.get(node)
            own = self.scale.get(node)
            if own is not None:
                # a foldable multiply: the root of a folding, or absorbed into one above
                (index,) = into[node]
                if self.counter is None or self.counter("fold the scale of a multiply backward"):
                    vec = own if incoming is None else incoming * own
                    request[graph.resolve(node.args[index])] = vec
                    plan.remove(node, index)
                elif incoming is not None:
                    request[graph.resolve(node.args[index])] = incoming
                continue
            if incoming is None:
                continue
            for index in into.get(node, ()):
                request[graph.resolve(node.args[index])] = incoming
            self.edit(plan, node, incoming)
        return plan

    def edit(self, plan: _Plan, call: Call, vec: np.ndarray) -> None:
        """Plan how ``call`` takes the channel scale ``vec`` of its output."""
        name = call.op.name
        dtype = _tensor_type(call).dtype
        if name == "nn.conv2d":
            o_axis = call.attrs["kernel_layout"].index("O")
            plan.scale_arg(call, 1, _along(vec, o_axis, 4), dtype)
        elif name == "nn.dense":
            plan.scale_arg(call, 1, vec[:, None], dtype)  # weight rows are output units
        elif name == "nn.bias_add":
            plan.scale_arg(call, 1, vec, dtype)
        elif name in _ADDITIVE and len(self.into[call]) == 1:
            (index,) = self.into[call]
            info = self.info[call]
            plan.scale_arg(call, 1 - index, _trailing(vec, info.axis, info.rank), dtype)
        # else a relu, or an add whose both sides take the scale: nothing to do


# -- forward -------------------------------------------------------------------------------------


# What every user of a value accepts, ``(axis, rank, positive, divides)``: a per-channel
# scale along ``axis`` of the rank-``rank`` value may be taken out of it and into the
# weights further up, if every entry is > 0 when ``positive`` (a relu is on the way) and
# none is 0 or subnormal when ``divides`` (a bias on the way becomes ``b / s``). A plain
# tuple: one is built per node on the way.
_Request = tuple[int, int, bool, bool]


class _Forward:
    """Plans and applies the forward folding of one function.

    As in TVM, requests travel from the users down to the values they read (users
    first), then the scale travels back up: a value takes part only when *every* one of
    its users asked for the same axis (so a value read by two convolutions folds into
    both, and one also read by anything else never changes).
    """

    def __init__(self, func: Function, counter: RewriteCounter | None = None) -> None:
        self.counter = counter  # asked before each multiply is removed (the debug counter)
        self.graph = _Graph(func)
        # the var a let binds each value to (followed when the value has no other user)
        self.binder: dict[Expr, Var] = {v: k for k, v in self.graph.let_value.items()}
        # per value: how many users sent a request, and the meet of them (None: they disagree)
        self.received: dict[Expr, tuple[int, _Request | None]] = {}
        self.through: dict[Expr, tuple[int, _Request]] = {}  # index of the scaled argument
        self.folds: dict[Expr, tuple[int, np.ndarray]] = {}  # multiply -> data index, scale

    def run(self, func: Function) -> Function:
        if not self.graph.weighted:
            return func
        self.request()
        if not self.folds:
            return func
        return _Rewriter(self.plan()).visit(func)

    # top-down: what each value's users accept
    def send(self, node: Expr, req: _Request) -> None:
        received = self.received
        got = received.get(node)
        if got is None:
            received[node] = (1, req)
            return
        count, old = got
        if old is None or old[0] != req[0] or old[1] != req[1]:
            received[node] = (count + 1, None)  # the users disagree on the axis
        else:
            received[node] = (count + 1, (old[0], old[1], old[2] or req[2], old[3] or req[3]))

    def request(self) -> None:
        uses, binder, received = self.graph.uses, self.binder, self.received
        for node in reversed(self.graph.order):
            if type(node) is not Call or type(node.op) is not Op:
                continue
            name = node.op.name
            if name in _WEIGHTED:
                self.consume(node, name)
                continue
            # the request on the node if every user sent one (a let's value with no other
            # user stands for its var, transitively)
            key = node
            while key in binder and uses[key] == 1:
                key = binder[key]
            got = received.get(key)
            if got is None or got[1] is None or got[0] != uses[key]:
                continue
            axis, rank, positive, divides = got[1]
            if name in _HOMOGENEOUS:
                self.pass_to(node, 0, (axis, rank, True, divides))
            elif name == "nn.bias_add":
                if node.attrs["axis"] % rank == axis:
                    self.pass_to(node, 0, (axis, rank, positive, True))
            elif name in _ADDITIVE:
                out = _float_tensor(node)
                if out is None:
                    continue
                for index in (0, 1):  # like TVM, the left operand is tried first
                    data = node.args[index]
                    if (
                        self.graph.constant(data) is None
                        and _tensor_type(data) == out
                        and _bias_ok(self.graph, node.args[1 - index], axis, rank)
                    ):
                        self.pass_to(node, index, (axis, rank, positive, True))
                        break
            elif name == "multiply":
                self.fold_multiply(node, got[1])

    def consume(self, call: Call, name: str) -> None:
        """A conv2d / dense asks its data for a scale along the input channel axis."""
        data_type = _tensor_type(call.args[0])
        if _weighted_ok(call) is None or data_type is None:
            return
        rank = data_type.ndim
        axis = call.attrs["data_layout"].index("C") if name == "nn.conv2d" else rank - 1
        self.send(call.args[0], (axis, rank, False, False))

    def pass_to(self, call: Call, index: int, req: _Request) -> None:
        """``call`` can carry a scale of argument ``index`` to its users: ask that argument."""
        self.through[call] = (index, req)
        self.send(call.args[index], req)

    def fold_multiply(self, call: Call, req: _Request) -> None:
        """Plan removing ``multiply(x, s)`` when ``s`` is per-channel along the requested axis."""
        out = _float_tensor(call)
        side = self.graph.scalar_side(call)
        if out is None or side is None:
            return
        index, const = side
        if _tensor_type(call.args[index]) != out:
            return
        axis, rank, positive, divides = req
        vec = _channel_vector(const, rank, axis, out.shape[axis])
        if vec is None:
            return
        if positive and not (vec > 0).all():
            return  # relu(x * s) != relu(x) * s unless s > 0
        if divides and not (np.abs(vec) >= np.finfo(out.dtype).tiny).all():
            # a bias would become b / s: a zero or subnormal s would make it overflow
            return
        self.folds[call] = (index, vec)

    # bottom-up: the scale each value now lacks, and the edits that make up for it
    def plan(self) -> _Plan:
        uses, binder, folds, through = self.graph.uses, self.binder, self.folds, self.through
        scaled: dict[Expr, np.ndarray] = {}
        plan = _Plan(self.graph)
        for node in self.graph.order:
            if type(node) is not Call:
                continue
            if node in folds:
                if self.counter is not None and not self.counter(
                    "fold the scale of a multiply forward"
                ):
                    continue  # the multiply stays: nothing above it lacks a scale
                index, vec = folds[node]
                plan.remove(node, index)
            elif node in through:
                index, req = through[node]
                vec = scaled.get(node.args[index])
                if vec is None:
                    continue
                _bias_edit(plan, node, index, vec, req)
            else:
                name = _op_name(node)
                if name in _WEIGHTED:
                    vec = scaled.get(node.args[0])
                    if vec is not None:
                        _weight_edit(plan, node, name, vec)
                continue
            # `node` now computes its old value divided by `vec`; so do the vars bound to it
            scaled[node] = vec
            while node in binder and uses[node] == 1:
                node = binder[node]
                scaled[node] = vec
        return plan


def _bias_edit(plan: _Plan, call: Call, index: int, vec: np.ndarray, req: _Request) -> None:
    """Plan how an op carrying the scale ``vec`` of argument ``index`` makes up for it."""
    name = call.op.name
    if name in _HOMOGENEOUS:
        return
    dtype = _tensor_type(call).dtype
    if name == "nn.bias_add":
        plan.scale_arg(call, 1, vec, dtype, _divided)
    else:
        plan.scale_arg(call, 1 - index, _trailing(vec, req[0], req[1]), dtype, _divided)


def _weight_edit(plan: _Plan, call: Call, name: str, vec: np.ndarray) -> None:
    """Plan how a conv2d / dense whose data lost the scale ``vec`` takes it into its weight."""
    dtype = _tensor_type(call.args[0]).dtype
    factor = vec[None, :] if name == "nn.dense" else _input_channel_factor(vec, call)
    plan.scale_arg(call, 1, factor, dtype)


def _input_channel_factor(vec: np.ndarray, conv: Call) -> np.ndarray:
    """The factor scaling each conv2d weight entry by the scale of the input channel it reads.

    With ``groups`` g, output channel ``o`` reads input channels
    ``(o // (O / g)) * I + i`` for ``i`` in ``range(I)`` (``I`` channels per group),
    which covers depthwise convolutions too.
    """
    layout = conv.attrs["kernel_layout"]
    if conv.attrs["groups"] == 1:
        return _along(vec, layout.index("I"), 4)  # the same factor for every output channel
    shape = _tensor_type(conv.args[1]).shape
    o, per_group = shape[layout.index("O")], shape[layout.index("I")]
    out_per_group = o // conv.attrs["groups"]
    channel = (np.arange(o) // out_per_group)[:, None] * per_group + np.arange(per_group)[None, :]
    oihw = vec[channel].reshape(o, per_group, 1, 1)
    return oihw.transpose(["OIHW".index(ch) for ch in layout])


# -- the passes ----------------------------------------------------------------------------------


@function_pass(opt_level=3, name="BackwardFoldScaleAxis", required=["InferType"])
def BackwardFoldScaleAxis(func: Function, mod: IRModule, ctx: PassContext) -> Function:
    """Fold ``multiply(conv2d/dense(...), s)`` with a per-channel constant ``s`` into the
    weights (through bias_add, add/subtract of constants and relu for ``s > 0``).

    Returns ``func`` itself when there is nothing to fold.
    """
    typed = typed_function(func, mod)
    if not reaches_op_call(typed, _WEIGHTED):
        return func  # no conv2d or dense: nothing to fold into, no graph to build
    with gc_paused():  # many dict entries, no cycles: the collector would only rescan the IR
        out = _Backward(typed, ctx.rewrite_counter()).run(typed)
    return func if out is typed else out


@function_pass(opt_level=3, name="ForwardFoldScaleAxis", required=["InferType"])
def ForwardFoldScaleAxis(func: Function, mod: IRModule, ctx: PassContext) -> Function:
    """Fold ``conv2d/dense(relu(multiply(x, s)), w)`` (relu optional, ``s > 0`` when
    present; biases in between become ``b / s``) into the weights' input channels.

    Returns ``func`` itself when there is nothing to fold.
    """
    typed = typed_function(func, mod)
    if not reaches_op_call(typed, _WEIGHTED):
        return func  # no conv2d or dense: nothing to fold into, no graph to build
    with gc_paused():
        out = _Forward(typed, ctx.rewrite_counter()).run(typed)
    return func if out is typed else out


def FoldScaleAxis() -> Sequential:
    """TVM's ``FoldScaleAxis``: :data:`BackwardFoldScaleAxis` then :data:`ForwardFoldScaleAxis`."""
    return Sequential(
        [BackwardFoldScaleAxis, ForwardFoldScaleAxis], opt_level=3, name="FoldScaleAxis"
    )
