"""Converters of the ONNX recurrent ops: RNN, GRU and LSTM.

As TVM's ONNX frontend does, each is unrolled over its static sequence length into core ops:
the input projection of every step is one ``matmul`` up front, each step adds the recurrent
``nn.dense`` and applies the gates' activations. Directions, activation lists with their
alpha/beta, ``clip``, GRU's ``linear_before_reset``, LSTM's peepholes and ``input_forget``,
``initial_h``/``initial_c``, ``layout`` and ``sequence_lens`` are all honoured.

``sequence_lens`` may be a run-time value: a batch entry past its length keeps its state and
outputs zeros (a select per step); a reverse pass walks the steps from the last one, so each
entry's pass starts at its own last valid step, and an entry of length 0 reports a zero final
state, as onnxruntime computes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from irpass.ir import Constant, Expr, Tuple

from .context import NodeContext
from .nn import call, scalar
from .registry import converter

__all__: list[str] = []

_FLOATS = ("float16", "float32", "float64")

#: Each activation function name: whether it takes alpha and beta, and their defaults (ONNX's
#: defaults of the op of the same name; None: the value must be given).
_ACTIVATIONS: dict[str, tuple[float | None, float | None] | tuple[()]] = {
    "relu": (), "tanh": (), "sigmoid": (), "softsign": (), "softplus": (),
    "affine": (None, None), "scaledtanh": (None, None), "hardsigmoid": (0.2, 0.5),
    "leakyrelu": (0.01,), "thresholdedrelu": (1.0,), "elu": (1.0,),
}

#: The gate count of each op and its default activations (one direction).
_SPECS = {"RNN": (1, ("Tanh",)), "GRU": (3, ("Sigmoid", "Tanh")),
          "LSTM": (4, ("Sigmoid", "Tanh", "Tanh"))}

Activation = Callable[[Expr], Expr]


def _activation(ctx: NodeContext, name: str, params: Sequence[float], dtype: str) -> Activation:
    """The function ``name`` as a builder of core-op calls; ``params`` its alpha (and beta)."""
    key = name.lower()

    def c(v: float) -> Constant:
        return scalar(v, dtype)

    if key == "relu":
        return lambda x: call("nn.relu", x)
    if key == "tanh":
        return lambda x: call("tanh", x)
    if key == "sigmoid":
        return lambda x: call("sigmoid", x)
    if key == "softsign":
        return lambda x: call("divide", x, call("add", c(1.0), call("abs", x)))
    if key == "softplus":
        return lambda x: call("log", call("add", c(1.0), call("exp", x)))
    if key == "affine":
        a, b = params
        return lambda x: call("add", call("multiply", x, c(a)), c(b))
    if key == "scaledtanh":
        a, b = params
        return lambda x: call("multiply", call("tanh", call("multiply", x, c(b))), c(a))
    if key == "hardsigmoid":
        a, b = params
        return lambda x: call("clip", call("add", call("multiply", x, c(a)), c(b)),
                              a_min=0.0, a_max=1.0)
    if key == "leakyrelu":
        return lambda x: call("nn.leaky_relu", x, alpha=float(params[0]))
    if key == "thresholdedrelu":
        return lambda x: call("where", call("greater", x, c(params[0])), x, c(0.0))
    if key == "elu":
        def elu(x: Expr) -> Expr:
            neg = call("multiply", call("subtract", call("exp", x), c(1.0)), c(params[0]))
            return call("where", call("less", x, c(0.0)), neg, x)
        return elu
    ctx.fail(f"activation {name!r} is not one of {', '.join(sorted(_ACTIVATIONS))} "
             "(case-insensitive)")


def _activations(ctx: NodeContext, per_dir: Sequence[str], dirs: int, dtype: str
                 ) -> list[list[Activation]]:
    """The activation functions of each direction, alpha/beta consumed in order."""
    names = ctx.attr("activations", None)
    names = list(per_dir) * dirs if names is None else list(names)
    if len(names) != len(per_dir) * dirs:
        ctx.fail(f"activations {names} has {len(names)} names; {ctx.node.op_type} with "
                 f"{dirs} direction(s) needs {len(per_dir) * dirs}")
    alphas = list(ctx.attr("activation_alpha", []))
    betas = list(ctx.attr("activation_beta", []))
    out: list[list[Activation]] = []
    for i, name in enumerate(names):
        defaults = _ACTIVATIONS.get(name.lower())
        if defaults is None:
            ctx.fail(f"activation {name!r} is not one of {', '.join(sorted(_ACTIVATIONS))} "
                     "(case-insensitive)")
        params = []
        for default, pool, what in zip(defaults, (alphas, betas), ("alpha", "beta"),
                                       strict=False):
            if pool:
                params.append(float(pool.pop(0)))
            elif default is None:
                ctx.fail(f"activation {name!r} needs an activation_{what} value")
            else:
                params.append(default)
        if i % len(per_dir) == 0:
            out.append([])
        out[-1].append(_activation(ctx, name, params, dtype))
    return out


@dataclass
class _Setup:
    """What every recurrent op reads the same way: types, sizes, per-direction inputs."""

    dtype: str
    steps: int
    batch: int
    hidden: int
    dirs: int
    reverse: list[bool]
    x: Expr  # (steps, batch, input), time-major whatever the layout
    masks: list[Expr | None]  # per step: (batch, 1) bool, None when every entry is valid
    acts: list[list[Activation]]
    clip: Callable[[Expr], Expr]


def _pick(x: Expr, i: int, axis: int = 0) -> Expr:
    """Index ``i`` of ``x`` along ``axis``, that axis dropped."""
    return call("squeeze", call("strided_slice", x, begin=[i], end=[i + 1], axes=[axis]),
                axis=[axis])


def _cols(x: Expr, begin: int, end: int) -> Expr:
    """Columns [begin, end) of a (batch, n) tensor."""
    return call("strided_slice", x, begin=[begin], end=[end], axes=[1])


def _setup(ctx: NodeContext, gates: int) -> _Setup:
    op = ctx.node.op_type
    xt, wt, rt = ctx.type_of(0), ctx.type_of(1), ctx.type_of(2)
    dtype = xt.dtype
    if dtype not in _FLOATS:
        ctx.fail(f"X has dtype {dtype}; {op} takes {', '.join(_FLOATS)}")
    direction = ctx.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        ctx.fail(f"direction {direction!r} is not one of forward, reverse, bidirectional")
    dirs = 2 if direction == "bidirectional" else 1
    layout = int(ctx.attr("layout", 0)) if ctx.opset >= 14 else 0
    if layout not in (0, 1):
        ctx.fail(f"layout {layout} is not 0 or 1")
    if len(xt.shape) != 3:
        ctx.fail(f"X {xt} must be 3-D")
    steps, batch, size = (xt.shape[1], xt.shape[0], xt.shape[2]) if layout else xt.shape
    if steps < 1:
        ctx.fail(f"X {xt} has no time steps")
    if len(rt.shape) != 3 or rt.shape[0] != dirs or rt.shape[1] % gates:
        ctx.fail(f"R {rt} must have shape ({dirs}, {gates} * hidden_size, hidden_size)")
    hidden = rt.shape[2]
    if ctx.has_attr("hidden_size") and int(ctx.attr("hidden_size")) != hidden:
        ctx.fail(f"hidden_size {ctx.attr('hidden_size')} does not match R {rt}")
    if rt.shape[1] != gates * hidden:
        ctx.fail(f"R {rt} must have shape ({dirs}, {gates * hidden}, {hidden})")
    if wt.shape != (dirs, gates * hidden, size):
        ctx.fail(f"W {wt} must have shape ({dirs}, {gates * hidden}, {size})")
    for i, ty in ((1, wt), (2, rt)):
        if ty.dtype != dtype:
            ctx.fail(f"input {i} has dtype {ty.dtype} but X has {dtype}")
    x = ctx.input(0)
    if layout:
        x = call("transpose", x, axes=[1, 0, 2])
    per_dir = _SPECS[op][1]
    clip_value = ctx.attr("clip", None)
    if clip_value is None:
        def clip(v: Expr) -> Expr:
            return v
    else:
        bound = float(clip_value)
        if bound <= 0:
            ctx.fail(f"clip {bound} must be positive")

        def clip(v: Expr) -> Expr:
            return call("clip", v, a_min=-bound, a_max=bound)
    return _Setup(
        dtype=dtype, steps=steps, batch=batch, hidden=hidden, dirs=dirs,
        reverse=[direction == "reverse", True][:dirs],
        x=x, masks=_masks(ctx, steps, batch),
        acts=_activations(ctx, per_dir, dirs, dtype), clip=clip,
    )


def _masks(ctx: NodeContext, steps: int, batch: int) -> list[Expr | None]:
    """Per step, which batch entries are within their sequence_lens ((batch, 1) bool)."""
    if not ctx.has_input(4):
        return [None] * steps
    lt = ctx.type_of(4)
    if lt.dtype not in ("int32", "int64") or lt.shape != (batch,):
        ctx.fail(f"sequence_lens {lt} must be int32 (or int64) of shape ({batch},)")
    known = ctx.known(4)
    if known is not None:
        if np.any(known < 0) or np.any(known > steps):
            ctx.fail(f"sequence_lens {known.tolist()} must be within [0, {steps}]")
        return [None if bool(np.all(known > t)) else
                Constant(np.asarray(known > t).reshape(batch, 1)) for t in range(steps)]
    lens = call("reshape", ctx.input(4), newshape=[batch, 1])
    return [call("less", Constant(np.array(t, dtype=lt.dtype)), lens) for t in range(steps)]


def _state(ctx: NodeContext, i: int, s: _Setup, what: str) -> list[Expr]:
    """Input ``i`` (an initial state, (dirs, batch, hidden) or batch-major) per direction;
    zeros when absent."""
    if not ctx.has_input(i):
        zeros = Constant(np.zeros((s.batch, s.hidden), dtype=s.dtype))
        return [zeros] * s.dirs
    ty = ctx.type_of(i)
    layout = int(ctx.attr("layout", 0)) if ctx.opset >= 14 else 0
    want = (s.batch, s.dirs, s.hidden) if layout else (s.dirs, s.batch, s.hidden)
    if ty.shape != want or ty.dtype != s.dtype:
        ctx.fail(f"{what} {ty} must be {s.dtype} of shape {want}")
    return [_pick(ctx.input(i), d, axis=1 if layout else 0) for d in range(s.dirs)]


def _bias(ctx: NodeContext, s: _Setup, gates: int) -> list[tuple[Expr, Expr] | None]:
    """B per direction as (Wb, Rb), each (gates * hidden,); None when absent."""
    if not ctx.has_input(3):
        return [None] * s.dirs
    ty = ctx.type_of(3)
    n = gates * s.hidden
    if ty.shape != (s.dirs, 2 * n) or ty.dtype != s.dtype:
        ctx.fail(f"B {ty} must be {s.dtype} of shape ({s.dirs}, {2 * n})")
    out = []
    for d in range(s.dirs):
        b = _pick(ctx.input(3), d)
        out.append((call("strided_slice", b, begin=[0], end=[n], axes=[0]),
                    call("strided_slice", b, begin=[n], end=[2 * n], axes=[0])))
    return out


def _keep(mask: Expr | None, new: Expr, old: Expr) -> Expr:
    """``new`` for the batch entries within their length, ``old`` for the others."""
    return new if mask is None else call("where", mask, new, old)


def _projections(s: _Setup, d: int, w: Expr, bias: Expr | None) -> list[Expr]:
    """X @ W_d^T (+ bias) for every step, computed as one product: (batch, gates * hidden)."""
    proj = call("matmul", s.x, call("transpose", _pick(w, d), axes=[1, 0]))
    if bias is not None:
        proj = call("add", proj, bias)
    return [_pick(proj, t) for t in range(s.steps)]


def _order(s: _Setup, d: int) -> range:
    return range(s.steps - 1, -1, -1) if s.reverse[d] else range(s.steps)


def _outputs(ctx: NodeContext, s: _Setup, ys: list[list[Expr]], finals: list[list[Expr]]
             ) -> list[Expr]:
    """Y (steps, dirs, batch, hidden) and the final states (dirs, batch, hidden), or their
    batch-major forms for layout 1; ``ys[d][t]`` is direction d's output at step t."""
    layout = int(ctx.attr("layout", 0)) if ctx.opset >= 14 else 0

    def stack(xs: Sequence[Expr], axis: int) -> Expr:
        xs = [call("expand_dims", x, axis=axis) for x in xs]
        return xs[0] if len(xs) == 1 else call("concatenate", Tuple(list(xs)), axis=axis)

    y = stack([stack(per_dir, 0) for per_dir in ys], 1)  # (steps, dirs, batch, hidden)
    outs = [call("transpose", y, axes=[2, 0, 1, 3]) if layout else y]
    for states in finals:
        h = stack(states, 0)  # (dirs, batch, hidden)
        outs.append(call("transpose", h, axes=[1, 0, 2]) if layout else h)
    return outs[: max(ctx.num_outputs, 1)]


def _final(s: _Setup, state: Expr) -> Expr:
    """A final state: zero for a batch entry of length 0 (whose state never ran), as
    onnxruntime reports it; the step-0 mask tells those entries."""
    return _zeros_where_done(s, 0, state) if s.steps else state


def _zeros_where_done(s: _Setup, t: int, h: Expr) -> Expr:
    """Y at step t: the state, zero for batch entries past their length."""
    mask = s.masks[t]
    return h if mask is None else call("where", mask, h, scalar(0.0, s.dtype))


# -- RNN ---------------------------------------------------------------------------------------


@converter("RNN", since=1)
def _rnn(ctx: NodeContext) -> list[Expr]:
    s = _setup(ctx, 1)
    biases = _bias(ctx, s, 1)
    h0 = _state(ctx, 5, s, "initial_h")
    ys, finals = [], []
    for d in range(s.dirs):
        b = biases[d]
        proj = _projections(s, d, ctx.input(1), None if b is None else call("add", *b))
        r = _pick(ctx.input(2), d)
        (f,) = s.acts[d]
        h = h0[d]
        y: list[Expr] = [None] * s.steps  # type: ignore[list-item]
        for t in _order(s, d):
            new = f(s.clip(call("add", proj[t], call("nn.dense", h, r))))
            h = _keep(s.masks[t], new, h)
            y[t] = _zeros_where_done(s, t, new)
        ys.append(y)
        finals.append(_final(s, h))
    return _outputs(ctx, s, ys, [finals])


# -- GRU ---------------------------------------------------------------------------------------


@converter("GRU", since=1)
def _gru(ctx: NodeContext) -> list[Expr]:
    s = _setup(ctx, 3)
    hid = s.hidden
    before = bool(ctx.attr("linear_before_reset", 0))
    biases = _bias(ctx, s, 3)
    h0 = _state(ctx, 5, s, "initial_h")
    one = scalar(1.0, s.dtype)
    ys, finals = [], []
    for d in range(s.dirs):
        b = biases[d]
        r_all = _pick(ctx.input(2), d)  # (3 * hidden, hidden): z, r, h
        r_zr = call("strided_slice", r_all, begin=[0], end=[2 * hid], axes=[0])
        r_h = call("strided_slice", r_all, begin=[2 * hid], end=[3 * hid], axes=[0])
        rb_h = None
        if b is None:
            in_bias = None
        else:
            wb, rb = b
            rb_h = call("strided_slice", rb, begin=[2 * hid], end=[3 * hid], axes=[0])
            if before:  # the h gate's recurrent bias goes inside the reset product
                rb_zr = call("strided_slice", rb, begin=[0], end=[2 * hid], axes=[0])
                zeros = Constant(np.zeros((hid,), dtype=s.dtype))
                in_bias = call("add", wb, call("concatenate", Tuple([rb_zr, zeros]), axis=0))
            else:
                in_bias = call("add", wb, rb)
        proj = _projections(s, d, ctx.input(1), in_bias)
        f, g = s.acts[d]
        h = h0[d]
        y: list[Expr] = [None] * s.steps  # type: ignore[list-item]
        for t in _order(s, d):
            x = proj[t]
            rec = call("nn.dense", h, r_all if before else r_zr)
            z = f(s.clip(call("add", _cols(x, 0, hid), _cols(rec, 0, hid))))
            r = f(s.clip(call("add", _cols(x, hid, 2 * hid), _cols(rec, hid, 2 * hid))))
            if before:
                rec_h = _cols(rec, 2 * hid, 3 * hid)
                if rb_h is not None:
                    rec_h = call("add", rec_h, rb_h)
                pre = call("add", _cols(x, 2 * hid, 3 * hid), call("multiply", r, rec_h))
            else:
                pre = call("add", _cols(x, 2 * hid, 3 * hid),
                           call("nn.dense", call("multiply", r, h), r_h))
            cand = g(s.clip(pre))
            new = call("add", call("multiply", call("subtract", one, z), cand),
                       call("multiply", z, h))
            h = _keep(s.masks[t], new, h)
            y[t] = _zeros_where_done(s, t, new)
        ys.append(y)
        finals.append(_final(s, h))
    return _outputs(ctx, s, ys, [finals])


# -- LSTM --------------------------------------------------------------------------------------


@converter("LSTM", since=1)
def _lstm(ctx: NodeContext) -> list[Expr]:
    s = _setup(ctx, 4)
    hid = s.hidden
    biases = _bias(ctx, s, 4)
    h0 = _state(ctx, 5, s, "initial_h")
    c0 = _state(ctx, 6, s, "initial_c")
    coupled = bool(ctx.attr("input_forget", 0))
    peeps: list[tuple[Expr, Expr, Expr] | None] = [None] * s.dirs
    if ctx.has_input(7):
        pt = ctx.type_of(7)
        if pt.shape != (s.dirs, 3 * hid) or pt.dtype != s.dtype:
            ctx.fail(f"P {pt} must be {s.dtype} of shape ({s.dirs}, {3 * hid})")
        for d in range(s.dirs):
            p = _pick(ctx.input(7), d)
            peeps[d] = tuple(  # type: ignore[assignment]
                call("strided_slice", p, begin=[k * hid], end=[(k + 1) * hid], axes=[0])
                for k in range(3))
    one = scalar(1.0, s.dtype)
    ys, hs, cs = [], [], []
    for d in range(s.dirs):
        b = biases[d]
        proj = _projections(s, d, ctx.input(1), None if b is None else call("add", *b))
        r = _pick(ctx.input(2), d)
        f, g, act_h = s.acts[d]
        h, c = h0[d], c0[d]
        y: list[Expr] = [None] * s.steps  # type: ignore[list-item]
        for t in _order(s, d):
            pre = call("add", proj[t], call("nn.dense", h, r))  # gates i, o, f, c
            gi, go, gf, gc = (_cols(pre, k * hid, (k + 1) * hid) for k in range(4))
            if peeps[d] is not None:
                p_i, p_o, p_f = peeps[d]
                gi = call("add", gi, call("multiply", p_i, c))
                gf = call("add", gf, call("multiply", p_f, c))
            i = f(s.clip(gi))
            forget = call("subtract", one, i) if coupled else f(s.clip(gf))
            c_new = call("add", call("multiply", forget, c), call("multiply", i, g(s.clip(gc))))
            if peeps[d] is not None:
                go = call("add", go, call("multiply", peeps[d][1], c_new))
            h_new = call("multiply", f(s.clip(go)), act_h(c_new))
            h = _keep(s.masks[t], h_new, h)
            c = _keep(s.masks[t], c_new, c)
            y[t] = _zeros_where_done(s, t, h_new)
        ys.append(y)
        hs.append(_final(s, h))
        cs.append(_final(s, c))
    return _outputs(ctx, s, ys, [hs, cs])
