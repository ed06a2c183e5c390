"""ConvertLayout and AlterOpLayout: rewrite conv2d and pooling between NCHW and NHWC.

``ConvertLayout(desired_layouts)`` follows TVM Relay's pass of that name.
``desired_layouts`` maps an op to the layouts it should use::

    {"nn.conv2d": ["NHWC", "default"],     # data layout, kernel layout
     "nn.max_pool2d": ["NHWC"]}            # pooling ops: one layout

The convertible ops are ``nn.conv2d`` (data ``NCHW``/``NHWC``, kernel any
ordering of ``OIHW`` or ``"default"``: ``OIHW`` for ``NCHW`` data, ``HWIO`` for
``NHWC``) and ``nn.max_pool2d``, ``nn.avg_pool2d``, ``nn.global_avg_pool2d``.

``AlterOpLayout`` is TVM's target hook pass: each op may have an *alter-layout
hook* (:func:`register_alter_layout`) that returns a replacement for a call,
typically the op in another layout wrapped in ``layout_transform``\\ s. irpass has
no targets, so std registers no hook; the config option
``std.AlterOpLayout.desired_layouts`` (a string such as
``"nn.conv2d=NHWC,default; nn.max_pool2d=NHWC"``) makes ConvertLayout's
conversions hooks. With no hook and the option unset the pass returns its
input unchanged.

Algorithm (both passes). One :class:`~irpass.ir.ExprMutator` walk (iterative,
memoized by node identity, linear) rebuilds each function bottom-up and records,
for every rewritten tensor, its *layout state*: ``None`` when the new expression
computes exactly the original value, or a pair of axis-letter strings
``(orig, cur)`` meaning "the new expression is the original value with its axes
reordered from ``orig`` to ``cur``" (e.g. ``NCHW -> NHWC``). Tuples carry one
state per field.

* A call of an op with a hook (the desired conversions, or registered hooks) is
  handed to the hook with its arguments in their original layout. A conversion
  hook returns ``layout_transform(op'(layout_transform(x)), NHWC, NCHW)``; the
  outer transform of a hook's result is not emitted but becomes the state of
  the call's value, and the inner one composes with the transform that
  brought ``x`` back to its original layout, so two converted ops in a row have
  no transform between them. Constant weights are transposed at compile time.
* Layout-agnostic ops carry a converted operand's layout instead of undoing
  it: elementwise and broadcasting ops (their other operands are transposed:
  constants at compile time, lower-rank constants such as a ``(C, 1, 1)`` bias
  expanded and transposed, other tensors by a ``layout_transform``),
  ``nn.bias_add``, ``nn.batch_norm``, ``nn.layer_norm``, ``nn.softmax``,
  ``concatenate``, ``split`` and the reductions (their ``axis`` attributes
  renumbered), ``nn.pad`` (``pad_width`` permuted), the pooling ops not named in
  the desired layouts (they adopt the layout of their input, as in TVM), and
  ``transpose``/``layout_transform`` of a converted value (which only rename
  its axes: no op is emitted, and a transform back to the layout the value is
  held in cancels). Ops of plugins are carried when they are registered as
  ``ELEMWISE`` (or ``BROADCAST`` without attributes) and are not stateful.
* Any other use of a converted value (an op that is not layout-agnostic, such
  as ``reshape`` or ``nn.dense``, a call of a function, an ``if`` condition or
  branches held in different layouts, the result of a function) gets it back in
  its original layout through one ``layout_transform``, shared between uses.
  Let-bound values keep their layout across the binding (the var gets the
  permuted type annotation). A let block used as a value gets its transform
  inside, on its result, so let chains stay flat, when that use is its only one;
  a block used in several places (or as a tuple field) is converted as a whole,
  once, and a ``layout_transform`` of the block gives its other layout, since a
  second, transformed copy of the block would bind its vars twice.

So a network converted to NHWC has transforms only where data enters 4-D
NHWC land (after its input) and where it leaves it (before a reshape or the
function's result). A transform built on top of another composes with it, and
``layout_transform(layout_transform(x, A, B), B, A)`` becomes ``x``. Function
params and results keep their layouts, so signatures never change; nested
``Primitive`` functions are left alone. Nothing changed: the same function.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from irpass.errors import TypeInferenceError
from irpass.ir import (
    Call,
    Constant,
    Expr,
    ExprMutator,
    Function,
    If,
    IRModule,
    Let,
    Op,
    OpPattern,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Type,
    Var,
    infer_type,
)
from irpass.ir.gcpause import gc_paused
from irpass.plugins import register_registry
from irpass.transform import ConfigOption, PassContext, function_pass

from .infer_type import typed_function
from .options import options_of
from .scan import reaches_op_call

__all__ = [
    "CONFIG_OPTIONS",
    "DESIRED_LAYOUTS",
    "AlterOpLayout",
    "ConvertLayout",
    "AlterLayoutHook",
    "register_alter_layout",
    "unregister_alter_layout",
    "list_alter_layouts",
    "parse_desired_layouts_option",
]

#: Config key: the layouts AlterOpLayout converts ops to (see :func:`parse_desired_layouts_option`).
DESIRED_LAYOUTS = "std.AlterOpLayout.desired_layouts"

# declared in options.py (registered with the plugin, before any pass is imported)
CONFIG_OPTIONS: list[ConfigOption] = options_of("AlterOpLayout")

#: ``fn(call, arg_types) -> Expr | None``: an alter-layout hook (see :func:`register_alter_layout`).
AlterLayoutHook = Callable[[Call, tuple[Type, ...]], Expr | None]

_DATA_LAYOUTS = ("NCHW", "NHWC")
_DEFAULT_KERNEL = {"NCHW": "OIHW", "NHWC": "HWIO"}
_POOLS = ("nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d")
#: The ops ConvertLayout converts.
_CONVERTIBLE = ("nn.conv2d", *_POOLS)


# -- layout states ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    """The new expression holds the original value with its axes reordered.

    ``orig`` names the original value's axes in order, one distinct letter each;
    ``cur`` is the order of those axes in the new expression. Only the
    permutation matters: two states with the same ``perm`` are the same layout.
    """

    orig: str
    cur: str

    @property
    def perm(self) -> tuple[int, ...]:
        """New axis ``j`` is original axis ``perm[j]``."""
        return tuple(self.orig.index(c) for c in self.cur)


# A state: None (the original layout), a _Layout (a tensor), or a tuple of states (a tuple).
_State = Any


def _state(orig: str, cur: str) -> _Layout | None:
    return None if orig == cur else _Layout(orig, cur)


def _tuple_state(states: Sequence[_State]) -> _State:
    return tuple(states) if any(s is not None for s in states) else None


def _same(a: _State, b: _State) -> bool:
    if a is b:
        return True
    if a is None or b is None:
        return False
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(map(_same, a, b))
        )
    return a.perm == b.perm


def _retype(ty: Type | None, state: _State) -> Type | None:
    """The annotation of a var bound to a value held in ``state`` (``None``: leave it out)."""
    if ty is None or state is None:
        return ty
    if isinstance(state, _Layout) and isinstance(ty, TensorType) and ty.ndim == len(state.orig):
        return TensorType(tuple(ty.shape[i] for i in state.perm), ty.dtype)
    if isinstance(state, tuple) and isinstance(ty, TupleType) and len(ty.fields) == len(state):
        fields = [_retype(f, s) for f, s in zip(ty.fields, state, strict=True)]
        if all(f is not None for f in fields):
            return TupleType(fields)
    return None  # the var's type is then inferred from its value


# -- building layout transforms -----------------------------------------------------------------


def _is_transform(expr: Expr) -> bool:
    return type(expr) is Call and type(expr.op) is Op and expr.op.name == "layout_transform"


def _layout_transform(expr: Expr, src: str, dst: str, fold_constant: bool = True) -> Expr:
    """``expr`` (in layout ``src``) in layout ``dst``, without stacking transforms.

    The same layout gives ``expr``; a constant is transposed now (unless
    ``fold_constant`` is off); a ``layout_transform`` below composes with this one
    into one transform, or into nothing when the two are inverse.
    """
    if src == dst:
        return expr
    if fold_constant and type(expr) is Constant:
        return Constant(np.transpose(expr.data, [src.index(c) for c in dst]))
    if _is_transform(expr):
        inner_src, inner_dst = expr.attrs["src_layout"], expr.attrs["dst_layout"]
        if len(inner_dst) == len(src):
            # both name the axes of `expr`: rename dst with the inner transform's letters
            renamed = "".join(inner_dst[src.index(c)] for c in dst)
            return _layout_transform(expr.args[0], inner_src, renamed, fold_constant)
    return Call(Op.get("layout_transform"), [expr], {"src_layout": src, "dst_layout": dst})


def _fold_new_transforms(expr: Expr, known: set[Expr] | frozenset[Expr]) -> Expr:
    """``expr`` with the ``layout_transform``\\ s composed that a hook stacked up.

    Only the dataflow nodes the hook built are rebuilt: the walk (iterative) does
    not enter ``known`` nodes (what the rewriter made, the arguments the hook got),
    so it costs the size of the hook's result, not of the program below it.
    """
    memo: dict[Expr, Expr] = {}
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        if node in memo:
            continue
        kind = type(node)
        if node in known or kind not in (Call, Tuple, TupleGetItem):
            memo[node] = node
            continue
        children = (
            node.args if kind is Call else node.fields if kind is Tuple else (node.tuple_value,)
        )
        if not ready:
            stack.append((node, True))
            stack.extend((c, False) for c in children if c not in memo)
            continue
        new_children = tuple(memo[c] for c in children)
        if new_children == tuple(children):
            new = node
        elif kind is Call:
            new = Call(node.op, new_children, node.attrs)
        elif kind is Tuple:
            new = Tuple(new_children)
        else:
            new = TupleGetItem(new_children[0], node.index)
        if _is_transform(new) and (_is_transform(new.args[0]) or type(new.args[0]) is Constant):
            new = _layout_transform(new.args[0], new.attrs["src_layout"], new.attrs["dst_layout"])
        memo[node] = new
    return memo[expr]


# -- desired layouts ----------------------------------------------------------------------------


def _check_desired(desired: Any, where: str) -> dict[str, tuple[str, ...]]:
    """``desired`` checked: ``{op: (data_layout,)}`` or ``{"nn.conv2d": (data, kernel)}``."""
    example = "e.g. {'nn.conv2d': ['NHWC', 'default']}"
    if not isinstance(desired, Mapping):
        raise TypeError(
            f"{where} must be a dict mapping op names to lists of layouts ({example}), "
            f"got {type(desired).__name__} {desired!r}"
        )
    out: dict[str, tuple[str, ...]] = {}
    for name, layouts in desired.items():
        if not isinstance(name, str):
            raise TypeError(f"{where}: op names must be strings, got {name!r}")
        if name not in _CONVERTIBLE:
            close = difflib.get_close_matches(name, _CONVERTIBLE, n=2)
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise ValueError(
                f"{where}: cannot convert the layout of op {name!r}{hint} "
                f"(convertible ops: {', '.join(_CONVERTIBLE)})"
            )
        is_conv = name == "nn.conv2d"
        shape = "[data_layout] or [data_layout, kernel_layout]" if is_conv else "[layout]"
        if isinstance(layouts, str) or not isinstance(layouts, Sequence):
            raise TypeError(
                f"{where}[{name!r}] must be a list {shape}, e.g. "
                f"{['NHWC', 'default'] if is_conv else ['NHWC']}, got {layouts!r}"
            )
        layouts = tuple(layouts)
        if not (1 <= len(layouts) <= (2 if is_conv else 1)):
            raise ValueError(f"{where}[{name!r}] must be {shape}, got {list(layouts)!r}")
        data = layouts[0]
        if data not in _DATA_LAYOUTS:
            raise ValueError(
                f"{where}[{name!r}]: unsupported data layout {data!r}; "
                f"expected one of {list(_DATA_LAYOUTS)}"
            )
        if is_conv:
            kernel = layouts[1] if len(layouts) == 2 else "default"
            if kernel != "default" and (
                not isinstance(kernel, str) or len(kernel) != 4 or sorted(kernel) != sorted("OIHW")
            ):
                raise ValueError(
                    f"{where}[{name!r}]: unsupported kernel layout {kernel!r}; expected "
                    "'default' or an ordering of O, I, H, W such as 'OIHW' or 'HWIO'"
                )
            layouts = (data, kernel)
        out[name] = layouts
    return out


def parse_desired_layouts_option(text: str) -> dict[str, list[str]]:
    """The value of ``std.AlterOpLayout.desired_layouts`` as a ``desired_layouts`` dict.

    The string holds ``op=layout[,kernel_layout]`` entries separated by ``;``::

        "nn.conv2d=NHWC,default; nn.max_pool2d=NHWC"
        -> {"nn.conv2d": ["NHWC", "default"], "nn.max_pool2d": ["NHWC"]}

    An empty string is no conversion. A malformed or unsupported entry is a
    ``ValueError`` naming the option.
    """
    return {name: list(layouts) for name, layouts in _parse_option(text)}


@lru_cache(maxsize=32)
def _parse_option(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The checked ``(op, layouts)`` pairs of the option's value (cached: read per function)."""
    where = f"config {DESIRED_LAYOUTS!r}"
    desired: dict[str, list[str]] = {}
    for entry in text.split(";"):
        entry = entry.strip()
        if not entry:
            continue
        name, eq, layouts = entry.partition("=")
        if not eq or not name.strip() or not layouts.strip():
            raise ValueError(
                f"{where}: entry {entry!r} is not 'op=layout[,kernel_layout]' "
                "(e.g. 'nn.conv2d=NHWC,default; nn.max_pool2d=NHWC')"
            )
        if name.strip() in desired:
            raise ValueError(f"{where}: op {name.strip()!r} is given twice")
        desired[name.strip()] = [part.strip() for part in layouts.split(",")]
    return tuple(_check_desired(desired, where).items())


def _conv2d_converter(data_layout: str, kernel_layout: str) -> AlterLayoutHook:
    def convert(call: Call, arg_types: tuple[Type, ...]) -> Expr:
        attrs = call.attrs
        dl, kl = attrs["data_layout"], attrs["kernel_layout"]
        want_kl = _DEFAULT_KERNEL[data_layout] if kernel_layout == "default" else kernel_layout
        if dl == data_layout and kl == want_kl:
            return call
        data, weight = call.args
        out_layout = attrs["out_layout"] or dl
        new_out = out_layout
        updates: dict[str, Any] = {"kernel_layout": want_kl}
        if dl != data_layout:
            data = _layout_transform(data, dl, data_layout)
            updates.update(data_layout=data_layout, out_layout="")
            new_out = data_layout
        # a constant weight is transposed here, once, instead of on every run
        weight = _layout_transform(weight, kl, want_kl)
        conv = Call(call.op, [data, weight], attrs.replace(**updates))
        return _layout_transform(conv, new_out, out_layout)

    return convert


def _pool_converter(layout: str) -> AlterLayoutHook:
    def convert(call: Call, arg_types: tuple[Type, ...]) -> Expr:
        attrs = call.attrs
        current = attrs["layout"]
        if current == layout:
            return call
        out_layout = attrs["out_layout"] or current
        data = _layout_transform(call.args[0], current, layout)
        pool = Call(call.op, [data], attrs.replace(layout=layout, out_layout=""))
        return _layout_transform(pool, layout, out_layout)

    return convert


def _conversion_hooks(desired: Mapping[str, tuple[str, ...]]) -> dict[str, AlterLayoutHook]:
    hooks: dict[str, AlterLayoutHook] = {}
    for name, layouts in desired.items():
        if name == "nn.conv2d":
            hooks[name] = _conv2d_converter(layouts[0], layouts[1])
        else:
            hooks[name] = _pool_converter(layouts[0])
    return hooks


# -- carrying a layout through layout-agnostic ops ----------------------------------------------

_Rule = Callable[["_LayoutRewriter", Call, tuple[Expr, ...], tuple[_State, ...]], Any]


def _carry_broadcast(rw: _LayoutRewriter, call: Call, args: tuple, states: tuple) -> Any:
    """Elementwise/broadcasting ops: every operand in the layout of a converted one."""
    out_ty = call.checked_type
    if not isinstance(out_ty, TensorType):
        return None
    rank = out_ty.ndim
    target = next((s for s in states if isinstance(s, _Layout) and len(s.orig) == rank), None)
    if target is None:
        return None
    new_args = []
    for arg, new, state in zip(call.args, args, states, strict=True):
        ty = arg.checked_type
        if not isinstance(ty, TensorType):
            return None
        if ty.ndim == rank:
            new_args.append(rw.convert(new, state, target))
        else:
            new_args.append(rw.broadcast_operand(rw.convert(new, state, None), ty.shape, target))
    return Call(call.op, new_args, call.attrs), target


def _axis_in(state: _Layout, axis: int) -> int | None:
    """Where original axis ``axis`` is in the new layout (``None`` if out of range)."""
    rank = len(state.orig)
    if not -rank <= axis < rank:
        return None
    return state.cur.index(state.orig[axis % rank])


def _carry_axis(rw: _LayoutRewriter, call: Call, args: tuple, states: tuple) -> Any:
    """Ops with one ``axis`` attribute on their first operand (the rest 1-D along it)."""
    state = states[0]
    if not isinstance(state, _Layout):
        return None
    axis = _axis_in(state, call.attrs["axis"])
    if axis is None:
        return None
    rest = [rw.convert(a, s, None) for a, s in zip(args[1:], states[1:], strict=True)]
    new = Call(call.op, [args[0], *rest], call.attrs.replace(axis=axis))
    if call.op.name == "nn.batch_norm":
        return new, (state, None, None)
    return new, state


def _carry_reduce(rw: _LayoutRewriter, call: Call, args: tuple, states: tuple) -> Any:
    state = states[0]
    if not isinstance(state, _Layout):
        return None
    attrs = call.attrs
    rank = len(state.orig)
    if not attrs["axis"]:  # every axis
        return Call(call.op, [args[0]], attrs), (state if attrs["keepdims"] else None)
    axes = [a % rank for a in attrs["axis"] if -rank <= a < rank]
    if len(axes) != len(attrs["axis"]):
        return None
    new_axes = sorted(state.cur.index(state.orig[a]) for a in axes)
    new = Call(call.op, [args[0]], attrs.replace(axis=new_axes))
    if attrs["keepdims"]:
        return new, state
    reduced = set(axes) if not attrs["exclude"] else set(range(rank)) - set(axes)
    gone = {state.orig[a] for a in reduced}
    orig = "".join(c for c in state.orig if c not in gone)
    cur = "".join(c for c in state.cur if c not in gone)
    return new, _state(orig, cur)


def _carry_concatenate(rw: _LayoutRewriter, call: Call, args: tuple, states: tuple) -> Any:
    fields_state = states[0]
    out_ty = call.checked_type
    if not isinstance(fields_state, tuple) or not isinstance(out_ty, TensorType):
        return None
    target = next(
        (s for s in fields_state if isinstance(s, _Layout) and len(s.orig) == out_ty.ndim), None
    )
    if target is None:
        return None
    axis = _axis_in(target, call.attrs["axis"])
    if axis is None:
        return None
    tup = args[0]
    if type(tup) is Tuple:
        fields = tup.fields
    else:
        fields = tuple(TupleGetItem(tup, i) for i in range(len(fields_state)))
    new_fields = tuple(
        rw.convert(f, s, target) for f, s in zip(fields, fields_state, strict=True)
    )
    new_tup = tup if type(tup) is Tuple and new_fields == tup.fields else Tuple(new_fields)
    return Call(call.op, [new_tup], call.attrs.replace(axis=axis)), target


def _carry_split(rw: _LayoutRewriter, call: Call, args: tuple, states: tuple) -> Any:
    state = states[0]
    out_ty = call.checked_type
    if not isinstance(state, _Layout) or not isinstance(out_ty, TupleType):
        return None
    axis = _axis_in(state, call.attrs["axis"])
    if axis is None:
        return None
    new = Call(call.op, [args[0]], call.attrs.replace(axis=axis))
    return new, (state,) * len(out_ty.fields)


def _carry_pad(rw: _LayoutRewriter, call: Call, args: tuple, states: tuple) -> Any:
    state = states[0]
    width = call.attrs["pad_width"]
    if not isinstance(state, _Layout) or len(width) != len(state.orig):
        return None
    new_width = [width[i] for i in state.perm]
    return Call(call.op, [args[0]], call.attrs.replace(pad_width=new_width)), state


def _carry_permute(rw: _LayoutRewriter, call: Call, args: tuple, states: tuple) -> Any:
    """``transpose``/``layout_transform`` of a converted value only renames its axes."""
    state = states[0]
    if not isinstance(state, _Layout):
        return None
    rank = len(state.orig)
    attrs = call.attrs
    if call.op.name == "transpose":
        axes = attrs["axes"]
        axes = tuple(range(rank - 1, -1, -1)) if axes is None else tuple(a % rank for a in axes)
    else:
        src, dst = attrs["src_layout"], attrs["dst_layout"]
        axes = tuple(src.index(c) for c in dst)
    # result axis j is the input's original axis axes[j]
    return args[0], _state("".join(state.orig[a] for a in axes), state.cur)


def _carry_pool(rw: _LayoutRewriter, call: Call, args: tuple, states: tuple) -> Any:
    """A pooling op adopts the layout its input is held in, if the op supports it."""
    state = states[0]
    if not isinstance(state, _Layout):
        return None
    layout = call.attrs["layout"]
    if len(state.orig) != len(layout):
        return None
    new_layout = "".join(layout[state.orig.index(c)] for c in state.cur)
    if new_layout not in _DATA_LAYOUTS:
        return None
    out_layout = call.attrs["out_layout"] or layout
    new = Call(call.op, [args[0]], call.attrs.replace(layout=new_layout, out_layout=""))
    return new, _state(out_layout, new_layout)


_ELEMENTWISE = (
    "add subtract multiply divide power maximum minimum equal not_equal less less_equal "
    "greater greater_equal where negative abs exp log sqrt tanh sigmoid clip cast "
    "zeros_like ones_like nn.relu nn.dropout"
).split()

_RULES: dict[str, _Rule] = {
    **{name: _carry_broadcast for name in _ELEMENTWISE},
    **{name: _carry_axis for name in ("nn.bias_add", "nn.batch_norm", "nn.layer_norm")},
    "nn.softmax": _carry_axis,
    **{name: _carry_reduce for name in ("sum", "mean", "max", "min", "prod")},
    "concatenate": _carry_concatenate,
    "split": _carry_split,
    "nn.pad": _carry_pad,
    "transpose": _carry_permute,
    "layout_transform": _carry_permute,
    **{name: _carry_pool for name in _POOLS},
}


def _carry_rule(op: Op) -> _Rule | None:
    rule = _RULES.get(op.name)
    if rule is None and not op.stateful:
        # an op declared elementwise (or broadcasting, without attributes to
        # interpret) computes each output element from the same position of
        # its inputs, so it commutes with any reordering of the axes
        if op.pattern == OpPattern.ELEMWISE or (
            op.pattern == OpPattern.BROADCAST and not op.attr_fields
        ):
            return _carry_broadcast
    return rule


# -- the rewriter -------------------------------------------------------------------------------


def _let_uses(root: Expr) -> dict[Let, int]:
    """How many edges of ``root``'s graph lead to each let block (iterative, linear).

    A tuple's edge counts twice: a tuple is converted field by field while it may
    also be used as it is, so a let block in a tuple is never taken apart.
    """
    uses: dict[Let, int] = {}
    seen = {root}
    stack = [root]
    while stack:
        node = stack.pop()
        weight = 2 if type(node) is Tuple else 1
        for child in node.children():
            if type(child) is Let:
                uses[child] = uses.get(child, 0) + weight
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return uses


class _LayoutRewriter(ExprMutator):
    """Rewrites a function with the given hooks, carrying layouts (see the module doc)."""

    def __init__(
        self, hooks: Mapping[str, AlterLayoutHook], ctx: PassContext, root: Function
    ) -> None:
        self.hooks = hooks
        self.ctx = ctx
        self.root = root
        # asked before each op is altered, carried or composed (None: no debug counter)
        self.counter = ctx.rewrite_counter()
        #: original node -> layout state of its rewritten form (absent: the original layout)
        self.states: dict[Expr, _State] = {}
        self._converted: dict[tuple[Expr, _State, _State], Expr] = {}
        #: every dataflow node the rewriter produced (hooks' results are folded up to them)
        self._made: set[Expr] = set()
        #: rewritten let -> the original let it stands for
        self._let_source: dict[Expr, Let] = {}
        #: the original lets' use counts (see _let_uses), counted when first needed
        self._let_uses: dict[Let, int] | None = None

    # -- helpers -------------------------------------------------------------------------
    def convert(self, expr: Expr, cur: _State, want: _State) -> Expr:
        """``expr``, held in state ``cur``, brought to state ``want`` (shared per use)."""
        if _same(cur, want):
            return expr
        key = (expr, cur, want)
        out = self._converted.get(key)
        if out is None:
            if type(expr) is Let and self._owns(expr):
                # convert the result inside the let block: lets stay a flat chain. Only
                # for a block this one use owns: a copy next to the block as it is (or
                # converted otherwise) would bind its vars twice, so a shared block is
                # converted as a whole below, like any other value
                chain = []
                while type(expr) is Let and self._owns(expr):
                    chain.append(expr)
                    expr = expr.body
                out = self.convert(expr, cur, want)
                for let in reversed(chain):
                    out = Let(let.var, let.value, out)
            elif isinstance(cur, tuple) or isinstance(want, tuple):
                n = len(cur if isinstance(cur, tuple) else want)
                curs = cur or (None,) * n
                wants = want or (None,) * n
                if type(expr) is Tuple:
                    fields = expr.fields
                else:
                    fields = tuple(TupleGetItem(expr, i) for i in range(n))
                out = Tuple(
                    [self.convert(f, c, w) for f, c, w in zip(fields, curs, wants, strict=True)]
                )
            else:
                letters = (cur or want).orig
                ident = tuple(range(len(letters)))
                src = "".join(letters[i] for i in (cur.perm if cur else ident))
                dst = "".join(letters[i] for i in (want.perm if want else ident))
                out = _layout_transform(expr, src, dst)
            self._converted[key] = out
            self._made.add(out)
        return out

    def _owns(self, let: Let) -> bool:
        """Whether the rewritten ``let`` has exactly one use, which may take it apart."""
        source = self._let_source.get(let)
        if source is None:
            return False  # made by a hook: not ours to take apart
        if self._let_uses is None:
            self._let_uses = _let_uses(self.root)
        return self._let_uses.get(source) == 1

    def original(self, node: Expr) -> Expr:
        """The rewritten ``node`` in its original layout."""
        return self.convert(self.visit(node), self.states.get(node), None)

    def broadcast_operand(self, expr: Expr, shape: tuple[int, ...], target: _Layout) -> Expr:
        """An operand of lower rank (original layout) that broadcasts against a value held
        in ``target``: padded with leading 1s to the full rank, then reordered."""
        if all(d == 1 for d in shape):
            return expr
        key = (expr, "broadcast", target)
        out = self._converted.get(key)
        if out is None:
            rank = len(target.orig)
            if type(expr) is Constant:
                data = expr.data.reshape((1,) * (rank - len(shape)) + tuple(shape))
                data = np.transpose(data, target.perm)
                # leading 1s broadcast away: keep the operand's rank where possible
                while data.ndim > len(shape) and data.shape[0] == 1:
                    data = data.reshape(data.shape[1:])
                out = Constant(data)
            else:
                expand = Call(
                    Op.get("expand_dims"), [expr], {"axis": 0, "num_newaxis": rank - len(shape)}
                )
                out = self.convert(expand, None, target)
            self._converted[key] = out
            self._made.add(out)
        return out

    # -- calls ---------------------------------------------------------------------------
    def visit_call(self, call: Call) -> Expr:
        new = self._rewrite_call(call)
        self._made.add(new)
        return new

    def _rewrite_call(self, call: Call) -> Expr:
        op = call.op
        args = call.args
        if type(op) is not Op:
            # a function call: arguments in the layouts the callee was written for
            new_op = self.visit(op)
            new_args = tuple(map(self.original, args))
            if new_op is op and new_args == args:
                return call
            return Call(new_op, new_args, call.attrs)
        get = self.memo.get
        new_args = tuple(map(get, args))
        if None in new_args:  # children are normally memoized already (post-order walk)
            new_args = tuple(map(self.visit, args))
        states = tuple(map(self.states.get, args))
        converted = states.count(None) != len(states)
        hook = self.hooks.get(op.name)
        if hook is not None:
            done = self._apply_hook(hook, call, new_args, states)
            if done is not None:
                return done
        if converted:
            rule = _carry_rule(op)
            if rule is not None:
                carried = rule(self, call, new_args, states)
                if carried is not None and (
                    self.counter is None or self.counter(f"carry the layout through {op.name}")
                ):
                    new, state = carried
                    if state is not None:
                        self.states[call] = state
                    return new
            # not layout-agnostic: the arguments go back to their original layouts
            new_args = tuple(
                self.convert(a, s, None) for a, s in zip(new_args, states, strict=True)
            )
        if (
            op.name == "layout_transform"
            and _is_transform(new_args[0])
            and (self.counter is None or self.counter("compose layout_transforms"))
        ):
            # composes with the transform below it (one a conversion emitted, or the
            # program's own): inverse transforms back to back cancel
            return _layout_transform(
                new_args[0], call.attrs["src_layout"], call.attrs["dst_layout"], False
            )
        if new_args == args:
            return call
        return Call(op, new_args, call.attrs)

    def _apply_hook(
        self,
        hook: AlterLayoutHook,
        call: Call,
        new_args: tuple[Expr, ...],
        states: tuple[_State, ...],
    ) -> Expr | None:
        id_args = tuple(self.convert(a, s, None) for a, s in zip(new_args, states, strict=True))
        given = call if id_args == call.args else Call(call.op, id_args, call.attrs)
        arg_types = tuple(a.checked_type for a in call.args)
        try:
            result = hook(given, arg_types)
        except Exception as err:  # a plugin's hook: report it against the call
            self.ctx.diag.error(
                f"the alter-layout hook of {call.op.name!r} raised "
                f"{type(err).__name__}: {err}",
                expr=call,
            )
            return given
        if result is None:
            return None
        if not isinstance(result, Expr):
            self.ctx.diag.error(
                f"the alter-layout hook of {call.op.name!r} returned "
                f"{type(result).__name__} {result!r:.60}, not an expression or None",
                expr=call,
            )
            return given
        if result is given:
            return given
        if self.counter is not None and not self.counter(f"alter the layout of {call.op.name}"):
            return given  # refused: the call stays in its layouts, on its original inputs
        self._made.update(id_args)
        result = _fold_new_transforms(result, self._made)
        if _is_transform(result):
            # the transform back to the call's layout is left to the consumers
            src, dst = result.attrs["src_layout"], result.attrs["dst_layout"]
            self.states[call] = _state(dst, src)
            return result.args[0]
        return result

    # -- other nodes ---------------------------------------------------------------------
    def visit_tuple(self, tup: Tuple) -> Expr:
        new = super().visit_tuple(tup)
        self._made.add(new)
        state = _tuple_state([self.states.get(f) for f in tup.fields])
        if state is not None:
            self.states[tup] = state
        return new

    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        new = super().visit_tuple_getitem(item)
        self._made.add(new)
        state = self.states.get(item.tuple_value)
        if isinstance(state, tuple) and state[item.index] is not None:
            self.states[item] = state[item.index]
        return new

    def visit_let_binding(self, let: Let) -> tuple[Var, Expr]:
        value = self.visit(let.value)
        state = self.states.get(let.value)
        if state is None:
            return self.visit(let.var), value
        # the value keeps its new layout: a fresh var with the matching annotation
        var = Var(let.var.name_hint, _retype(let.var.type_annotation, state))
        self.memo[let.var] = var
        self.states[let.var] = state
        return var, value

    def visit_let(self, let: Let) -> Expr:
        new = super().visit_let(let)
        chain = []
        node: Expr = let
        while type(node) is Let and node not in self.states:
            chain.append(node)
            node = node.body
        state = self.states.get(node)
        memo, source = self.memo, self._let_source
        for link in chain:
            self.states[link] = state  # recorded even when None: marks the chain done
            source[memo[link]] = link
        return new

    def visit_if(self, node: If) -> Expr:
        cond = self.original(node.cond)
        then = self.visit(node.true_branch)
        other = self.visit(node.false_branch)
        s_then = self.states.get(node.true_branch)
        s_other = self.states.get(node.false_branch)
        if _same(s_then, s_other):
            if s_then is not None:
                self.states[node] = s_then
        else:
            then = self.convert(then, s_then, None)
            other = self.convert(other, s_other, None)
        if cond is node.cond and then is node.true_branch and other is node.false_branch:
            return node
        return If(cond, then, other)

    def visit_function(self, func: Function) -> Expr:
        attrs = func.attrs
        if attrs and (attrs.get("Primitive") or attrs.get("SkipOptimization")):
            return func
        # params and result keep their layouts: the signature never changes
        body = self.original(func.body)
        if body is func.body:
            return func
        return Function(func.params, body, func.ret_type, attrs)


def _rewrite(
    func: Function,
    mod: IRModule,
    ctx: PassContext,
    hooks: Mapping[str, AlterLayoutHook],
    check_types: str = "",
) -> Function:
    """``func`` rewritten with ``hooks``; ``func`` itself when nothing changed.

    ``check_types`` names hooks of plugins: the result is then type-checked, so a
    hook returning an expression of the wrong type is reported by this pass.
    """
    if not hooks or not reaches_op_call(func, {*hooks, "layout_transform"}):
        return func  # nothing to hook and no transform to compose: nothing can change
    typed_func = typed_function(func, mod)
    with gc_paused():  # many new acyclic nodes: nothing for the cyclic GC to collect
        out = _LayoutRewriter(hooks, ctx, typed_func).visit(typed_func)
    if out is typed_func:
        return func
    if check_types:
        try:
            infer_type(out, mod)
        except TypeInferenceError as err:
            ctx.diag.error(
                f"the alter-layout hooks ({check_types}) made the function ill-typed: {err}",
                expr=err.expr,
            )
    return out


# -- the passes ---------------------------------------------------------------------------------


@function_pass(opt_level=3, name="ConvertLayout", required=["InferType"])
class ConvertLayout:
    """Convert ``nn.conv2d`` and the pooling ops to the layouts in ``desired_layouts``.

    ``desired_layouts`` maps an op name to its layouts: ``{"nn.conv2d":
    [data_layout, kernel_layout]}`` (``kernel_layout`` optional, ``"default"``: OIHW
    for NCHW, HWIO for NHWC) and ``{"nn.max_pool2d" | "nn.avg_pool2d" |
    "nn.global_avg_pool2d": [layout]}``, layouts ``NCHW`` or ``NHWC``. A bad value
    is a ``TypeError``/``ValueError`` here, when the pass is made. Layout-agnostic
    ops between converted ops follow their layout, so ``layout_transform`` appears
    only where data enters and leaves the converted region (see the module doc).
    """

    def __init__(self, desired_layouts: Mapping[str, Sequence[str]]) -> None:
        checked = _check_desired(desired_layouts, "ConvertLayout: desired_layouts")
        #: The checked layouts, ``{op: (layout, ...)}``.
        self.desired_layouts = checked
        self._hooks = _conversion_hooks(checked)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        """``func`` with the desired layouts; ``func`` itself when nothing changes."""
        return _rewrite(func, mod, ctx, self._hooks)


# Registered with the test-registry snapshots, so a test's hooks do not outlive it.
_ALTER_HOOKS: dict[str, AlterLayoutHook] = register_registry({})


def register_alter_layout(
    op_name: str, fn: AlterLayoutHook | None = None, *, override: bool = False
) -> Any:
    """Register ``fn(call, arg_types) -> Expr | None`` as the alter-layout hook of ``op_name``.

    AlterOpLayout calls the hook on every call of the op, with the call's
    arguments in their original layouts and their types. It returns ``None`` to
    keep the call, or an expression of the call's type computing the same value,
    usually the op in another layout between ``layout_transform``\\ s::

        def conv_nhwc(call, arg_types):
            data, weight = call.args
            new = op.nn.conv2d(op.layout_transform(data, "NCHW", "NHWC"), ...,
                               data_layout="NHWC", kernel_layout="HWIO")
            return op.layout_transform(new, "NHWC", "NCHW")

    The pass composes back-to-back transforms and carries the result's layout
    through layout-agnostic ops, as ConvertLayout does. Usable as a decorator
    (``@register_alter_layout("nn.conv2d")``); registering an op twice needs
    ``override=True``. Returns ``fn``.
    """
    if not isinstance(op_name, str) or not op_name:
        raise TypeError(f"register_alter_layout: op_name must be an op name, got {op_name!r}")

    def register(hook: AlterLayoutHook) -> AlterLayoutHook:
        if not callable(hook):
            raise TypeError(f"register_alter_layout: the hook of {op_name!r} must be callable")
        if op_name in _ALTER_HOOKS and not override:
            raise ValueError(
                f"register_alter_layout: {op_name!r} already has an alter-layout hook "
                f"({_ALTER_HOOKS[op_name]!r}); pass override=True to replace it"
            )
        _ALTER_HOOKS[op_name] = hook
        return hook

    return register if fn is None else register(fn)


def unregister_alter_layout(op_name: str) -> None:
    """Remove the alter-layout hook of ``op_name`` (nothing if it has none)."""
    _ALTER_HOOKS.pop(op_name, None)


def list_alter_layouts() -> list[str]:
    """The ops with an alter-layout hook, sorted."""
    return sorted(_ALTER_HOOKS)


def _chain(first: AlterLayoutHook, then: AlterLayoutHook) -> AlterLayoutHook:
    def hook(call: Call, arg_types: tuple[Type, ...]) -> Expr | None:
        result = first(call, arg_types)
        return then(call, arg_types) if result is None else result

    return hook


def _alter_hooks(ctx: PassContext) -> dict[str, AlterLayoutHook]:
    """The registered hooks, falling back to the conversions the config option asks for."""
    text = ctx.config.get(DESIRED_LAYOUTS) or ""
    hooks = _conversion_hooks(dict(_parse_option(text))) if text else {}
    for name, fn in _ALTER_HOOKS.items():
        base = hooks.get(name)
        hooks[name] = fn if base is None else _chain(fn, base)
    return hooks


@function_pass(opt_level=3, name="AlterOpLayout", required=["InferType"])
def AlterOpLayout(func: Function, mod: IRModule, ctx: PassContext) -> Function:
    """Replace op calls by what their alter-layout hooks return, carrying layouts.

    The hooks are those of :func:`register_alter_layout`, plus the conversions
    that the config option ``std.AlterOpLayout.desired_layouts`` names (a hook
    returning ``None`` falls back to them). With neither, the function is
    returned as is.
    """
    return _rewrite(func, mod, ctx, _alter_hooks(ctx), ", ".join(list_alter_layouts()))
