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
    multiply(dense(x, w), s)                ->  dense(x, w * s[:, None])

The scale travels from the multiply down through ``nn.bias_add``, ``add`` /
``subtract`` of a constant (the constant is scaled too), ``add`` / ``subtract``
of two branches that can both take it, ``nn.relu`` (only when every entry of
the scale is > 0, since ``relu(a) * s == relu(a * s)`` needs ``s > 0``) and
another per-channel ``multiply`` (whose scale is combined with it), and it
ends in ``nn.conv2d`` (scaled along the kernel's ``O`` axis, any
``kernel_layout`` and ``groups``) or ``nn.dense`` (scaled rows). Every node it
passes, the weighted op included, must have that one user (and a ``let``-bound
variable on the way must be used once): a value someone else also reads must
keep its meaning.

**Forward** (a scale *before* the weighted op moves into its input channels)::

    conv2d(relu(multiply(x, s)), w)  ->  conv2d(relu(x), w * s[I axis])   (s > 0)
    conv2d(multiply(x, s), w)        ->  conv2d(x, w * s[I axis])
    dense(multiply(x, s), w)         ->  dense(x, w * s[None, :])

From the data argument of a conv2d / dense the pass walks down a chain of
single-use ``nn.relu`` (needs ``s > 0``), ``nn.bias_add`` and ``add`` /
``subtract`` of a constant (TVM's ``relu(x * s + b)`` form: the constant
becomes ``b / s``, which needs ``s != 0``) to a per-channel ``multiply``, which
disappears. Grouped and depthwise convolutions are handled by scaling each
weight entry with the scale of the input channel it reads.

New weights: a ``Constant`` weight (or bias) becomes a new ``Constant``
computed with numpy in its own dtype (float16 in float32; weights are big and
a product rounded once is within an ulp of the exact one); anything else gets
a ``multiply`` by a constant factor, which ``FoldConstant`` (run after this
pass in the default pipeline) folds. SimplifyExpr runs before this pass in the
default pipeline and leaves a chain of constant affine ops after a conv2d as
``conv2d -> multiply -> add``, so batch norms followed by a per-channel
``Mul``/``Add`` (caffe2-exported ONNX models) fold completely.

The pass never fires on integer tensors, on non-finite scales, on a conv2d /
dense whose ``out_dtype`` differs from its input dtype, on a constant that
would broadcast the result to a bigger shape, or where a shape would change.

Cost: each pass first scans the function (closures included) for a conv2d /
dense and returns it as it is if there is none; else it makes one post-order
list of the function while counting uses, computes what can be scaled
bottom-up and the scale requests top-down (a node receives a request only from
its single user), and rewrites with one memoizing
:class:`~irpass.ir.ExprMutator`: linear in the size of the function and
iterative at any depth.
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
from irpass.transform import ConfigOption, Sequential, function_pass

from .infer_type import typed_function
from .scan import reaches_op_call

if TYPE_CHECKING:
    from irpass.ir import Expr, IRModule
    from irpass.transform import PassContext

__all__ = ["BackwardFoldScaleAxis", "ForwardFoldScaleAxis", "FoldScaleAxis"]

CONFIG_OPTIONS: list[ConfigOption] = []

_FLOAT_DTYPES = frozenset({"float16", "float32", "float64"})
_ADDITIVE = frozenset({"add", "subtract"})
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
    """

    def __init__(self, func: Function) -> None:
        order: list[Expr] = []
        uses: dict[Expr, int] = {}
        let_value: dict[Var, Expr] = {}
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
                let_value[node.var] = node.value
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
    if type(c) is not Constant:
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


def _scalar_side(call: Call) -> tuple[int, Constant] | None:
    """``(index of the other argument, constant)`` for a binary call with one Constant side."""
    a, b = call.args
    if type(b) is Constant and type(a) is not Constant:
        return 0, b
    if type(a) is Constant and type(b) is not Constant:
        return 1, a
    return None


class _Rewriter(ExprMutator):
    """Applies planned edits: ``forward[call] = i`` replaces a call by its i-th (rewritten)
    argument; ``edits[call]`` maps the rebuilt call to its replacement."""

    def __init__(self, forward: dict[Expr, int], edits: dict[Expr, _Edit]) -> None:
        self.forward = forward
        self.edits = edits

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
    """Plans and applies the backward folding of one function."""

    def __init__(self, func: Function) -> None:
        self.graph = _Graph(func)
        self.info: dict[Expr, _Scalable] = {}
        # per node: the argument indices the scale goes into (the rest are constants to scale)
        self.into: dict[Expr, tuple[int, ...]] = {}
        self.scale: dict[Expr, np.ndarray] = {}  # a folded multiply's own channel scale

    def run(self, func: Function) -> Function:
        if not self.graph.weighted:
            return func
        self.analyse()
        forward, edits = self.plan()
        if not forward:
            return func
        return _Rewriter(forward, edits).visit(func)

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
        if name == "nn.relu":
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
        if ia is not None and ib is not None:
            if ia[:2] != ib[:2] or _tensor_type(a) != out or _tensor_type(b) != out:
                return None
            self.into[call] = (0, 1)
            return ia._replace(positive=ia.positive or ib.positive)
        side = _scalar_side(call)
        if side is None:
            return None
        index, const = side
        inner = ia if index == 0 else ib
        if inner is None or _tensor_type(call.args[index]) != out:
            return None
        if const.data.ndim > inner.rank:
            return None
        self.into[call] = (index,)
        return inner

    def scalable_multiply(self, call: Call) -> _Scalable | None:
        out = _float_tensor(call)
        side = _scalar_side(call)
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
    def plan(self) -> tuple[dict[Expr, int], dict[Expr, _Edit]]:
        info, into, graph = self.info, self.into, self.graph
        request: dict[Expr, np.ndarray] = {}
        forward: dict[Expr, int] = {}
        edits: dict[Expr, _Edit] = {}
        for node in reversed(graph.order):
            if node not in info:
                continue
            incoming = request.get(node)
            own = self.scale.get(node)
            if own is not None:
                # a foldable multiply: the root of a folding, or absorbed into one above
                (index,) = into[node]
                vec = own if incoming is None else incoming * own
                request[graph.resolve(node.args[index])] = vec
                forward[node] = index
                continue
            if incoming is None:
                continue
            for index in into.get(node, ()):
                request[graph.resolve(node.args[index])] = incoming
            edit = self.edit(node, incoming)
            if edit is not None:
                edits[node] = edit
        return forward, edits

    def edit(self, call: Call, vec: np.ndarray) -> _Edit | None:
        """How ``call`` takes the channel scale ``vec`` of its output (None: nothing to do)."""
        name = call.op.name
        dtype = _tensor_type(call).dtype
        if name == "nn.conv2d":
            o_axis = call.attrs["kernel_layout"].index("O")
            return _replace_arg(1, _along(vec, o_axis, 4), dtype)
        if name == "nn.dense":
            return _replace_arg(1, vec[:, None], dtype)  # weight rows are output units
        if name == "nn.bias_add":
            return _replace_arg(1, vec, dtype)
        if name in _ADDITIVE and len(self.into[call]) == 1:
            (index,) = self.into[call]
            info = self.info[call]
            factor = _trailing(vec, info.axis, info.rank)
            return _replace_arg(1 - index, factor, dtype)
        return None  # relu, or an add whose both sides take the scale


def _replace_arg(index: int, factor: np.ndarray, dtype: str) -> _Edit:
    """An edit scaling argument ``index`` of a binary call by ``factor``."""

    def edit(new: Call) -> Expr:
        args = list(new.args)
        args[index] = _scaled(args[index], factor, dtype)
        return Call(new.op, args, new.attrs)

    return edit


# -- forward -------------------------------------------------------------------------------------


class _Forward:
    """Plans and applies the forward folding of one function."""

    def __init__(self, func: Function) -> None:
        self.graph = _Graph(func)
        self.forward: dict[Expr, int] = {}
        self.edits: dict[Expr, _Edit] = {}

    def run(self, func: Function) -> Function:
        if not self.graph.weighted:
            return func
        for node in self.graph.order:
            name = _op_name(node)
            if name in ("nn.conv2d", "nn.dense"):
                self.fold_into(node, name)
        if not self.forward:
            return func
        return _Rewriter(self.forward, self.edits).visit(func)

    def fold_into(self, call: Call, name: str) -> None:
        """Find ``multiply(x, s)`` below the data of ``call`` and plan folding ``s`` into it."""
        out = _weighted_ok(call)
        data_type = _tensor_type(call.args[0])
        if out is None or data_type is None:
            return
        rank = data_type.ndim
        axis = call.attrs["data_layout"].index("C") if name == "nn.conv2d" else rank - 1
        found = self.find_multiply(call.args[0], data_type, axis)
        if found is None:
            return
        node, index, vec, biases, needs_positive = found
        if needs_positive and not (vec > 0).all():
            return  # relu(x * s) != relu(x) * s unless s > 0
        if biases and not (vec != 0).all():
            return  # a bias would become b / s
        self.forward[node] = index
        dtype = data_type.dtype
        inverse = _trailing(1.0 / vec, axis, rank) if biases else None
        for add_like, arg in biases:
            factor = inverse if add_like.op.name != "nn.bias_add" else 1.0 / vec
            self.edits[add_like] = _replace_arg(arg, factor, dtype)
        if name == "nn.dense":
            factor = vec[None, :]
        else:
            factor = _input_channel_factor(vec, call)
        self.edits[call] = _replace_arg(1, factor, dtype)

    def find_multiply(
        self, node: Expr, data_type: TensorType, axis: int
    ) -> tuple[Call, int, np.ndarray, list[tuple[Call, int]], bool] | None:
        """Walk single-use relu / bias_add / add / subtract (of a constant) down from ``node``
        to a ``multiply`` by a constant per-channel along ``axis``.

        Returns ``(multiply, index of its data argument, channel scale, [(add-like call,
        index of its constant)], whether a relu is on the way)``, or ``None``.
        """
        graph = self.graph
        rank = data_type.ndim
        biases: list[tuple[Call, int]] = []
        needs_positive = False
        while True:
            if not graph.single_use(node):
                return None
            if type(node) is Var:
                value = graph.bound_value(node)
                if value is None:
                    return None
                node = value
                continue
            op = _op_name(node)
            if op is None or _tensor_type(node) != data_type:
                return None
            if op == "nn.relu":
                needs_positive = True
                node = node.args[0]
                continue
            if op == "nn.bias_add":
                if node.attrs["axis"] % rank != axis:
                    return None
                biases.append((node, 1))
                node = node.args[0]
                continue
            if op not in _ADDITIVE and op != "multiply":
                return None
            side = _scalar_side(node)
            if side is None or _tensor_type(node.args[side[0]]) != data_type:
                return None
            index, const = side
            if op == "multiply":
                vec = _channel_vector(const, rank, axis, data_type.shape[axis])
                if vec is None:
                    return None
                return node, index, vec, biases, needs_positive
            if const.data.ndim > rank:
                return None
            biases.append((node, 1 - index))
            node = node.args[index]


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
        out = _Backward(typed).run(typed)
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
        out = _Forward(typed).run(typed)
    return func if out is typed else out


def FoldScaleAxis() -> Sequential:
    """TVM's ``FoldScaleAxis``: :data:`BackwardFoldScaleAxis` then :data:`ForwardFoldScaleAxis`."""
    return Sequential(
        [BackwardFoldScaleAxis, ForwardFoldScaleAxis], opt_level=3, name="FoldScaleAxis"
    )
