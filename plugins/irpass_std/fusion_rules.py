"""FusePatterns: the rule set ``fuse``, which turns the decompositions transformers and modern
CNNs are exported as into the fused ops of the core.

Exporters write LayerNorm, RMSNorm, GELU, SiLU, HardSwish, scaled-dot-product attention and
rotary embeddings as chains of elementwise ops, reductions and matrix products; each rule
below recognises one such chain (in the forms the importer and SimplifyExpr leave of
torch's TorchScript and dynamo exports) and replaces it by the single op
(``nn.layer_norm``, ``nn.rms_norm``, ``nn.gelu``, ``nn.silu``, ``nn.hard_swish``,
``nn.attention``, ``nn.rotary_embedding``), so the exporter writes one ONNX node where the
opset has it. Two more put matrix products in the form the exporter's ``Gemm`` peephole
reads: a bias add after ``nn.dense`` becomes ``nn.bias_add``, and a 2-D ``matmul`` by a
constant followed by a bias add becomes ``nn.dense`` + ``nn.bias_add``.

Every rule checks what makes the replacement compute the same function, and leaves the match
alone otherwise: the constants (0.5, 1/sqrt(2), sqrt(2/pi), 0.044715, 1/6, ... within a few
float ulps of the constant's dtype), that reductions and slices run along the last axis,
that scalars do not broadcast the result to a bigger shape, the shapes of weights and
masks, and (as the pattern driver does for every rule) that no intermediate value the
fused op would hide has another user. Attention's masks get special care, since a query
row whose keys are all masked is where the forms differ: ``nn.attention`` gives zeros
there, a plain softmax over ``-inf`` gives NaN. So an additive mask that may hold ``-inf``
is only fused together with the ``where(isnan(p), 0, p)`` torch's SDPA export writes after
the softmax (which turns those rows into zeros too); masks that are provably finite (a
finite constant, a ``where`` between finite constants) or constant masks with no fully
masked row are fused without it. The fused forms are equal to the decompositions up to
float rounding, for finite inputs.

The pass is ``FUSE.as_pass(opt_level=2, name="FusePatterns")``: std puts it in the
default pipeline's optimize phase right after FoldConstant (the patterns read constants
that folding makes: the scale of a mask, the cos/sin tables of a rotary embedding), so
``-O2`` and ``-O3`` fuse. The rules are not registered through
``irpass_register_rewrites``: Canonicalize would then apply them at ``-O1`` too, before
the constants are folded. Each can still be turned off by its full name in the config
file's ``[rewrites] disable`` (``fuse.gelu_erf``), or all with ``fuse``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from irpass import op
from irpass.ir import Call, Constant, Expr, Op, TensorType, TupleGetItem, const
from irpass.ir.dataflow_pattern import (
    DFPattern,
    DFPatternCallback,
    has_shape,
    is_constant,
    is_op,
    is_tuple,
    is_tuple_get_item,
    wildcard,
)
from irpass.ir.dataflow_pattern.matcher import Matcher
from irpass.transform import PassContext, Rule, RuleSet

from .simplify_inference import DECOMPOSE_LAYER_NORM

__all__ = [
    "FUSE",
    "FusePatterns",
    "Attention",
    "DenseBiasAdd",
    "GeluErf",
    "GeluTanh",
    "HardSwish",
    "LayerNorm",
    "MatmulToDense",
    "RMSNorm",
    "RotaryEmbedding",
    "SiLU",
]

_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
#: A mask value at or below this is "masked out": added to any score of reasonable size it
#: rounds to itself in float32, and its exp underflows to 0 (torch writes finfo.min).
_MASKED = -1e30


# -- reading the program ------------------------------------------------------------------------


def _tensor(e: Expr) -> TensorType | None:
    """``e``'s tensor type, or None when it is not (yet) typed or not a tensor.

    The driver types the program before each round; a node a rule built in this round is
    untyped, and rules that need its type leave the match for the next round.
    """
    t = e._checked_type
    return t if type(t) is TensorType else None


def _call(e: Expr, *names: str) -> Call | None:
    """``e`` if it is a call of one of the ops ``names``."""
    if type(e) is Call and type(e.op) is Op and e.op.name in names:
        return e
    return None


def _scalar(e: Expr) -> float | None:
    """The value of a one-element float constant."""
    if type(e) is not Constant or e.data.size != 1 or e.data.dtype.kind != "f":
        return None
    return float(e.data.reshape(()))


def _near(e: Expr, want: float) -> bool:
    """``e`` is a one-element float constant within a few ulps (of its dtype) of ``want``."""
    value = _scalar(e)
    if value is None:
        return False
    if want == 0.0:
        return value == 0.0
    tol = max(4.0 * float(np.finfo(e.data.dtype).eps), 1e-6)
    return abs(value - want) <= tol * abs(want)


def _same_type(a: TensorType | None, b: TensorType | None) -> bool:
    return a is not None and b is not None and a.dtype == b.dtype and tuple(a.shape) == tuple(
        b.shape)


def _numpy_dtype(t: TensorType | None) -> bool:
    try:
        np.dtype(t.dtype)  # type: ignore[union-attr]
    except (TypeError, AttributeError):
        return False  # bfloat16 and friends: numpy has no name for them
    return True


def _float_type(e: Expr) -> TensorType | None:
    """``e``'s type if it is a float tensor of a dtype numpy knows."""
    t = _tensor(e)
    if t is None or not _numpy_dtype(t) or np.dtype(t.dtype).kind != "f":
        return None
    return t


def _over_last_axis(mean: Call, ndim: int) -> bool:
    """``mean`` reduces exactly the last of ``ndim`` axes and keeps it."""
    attrs = mean.attrs
    axes = attrs["axis"]
    if attrs["exclude"] or not attrs["keepdims"] or axes is None or len(axes) != 1:
        return False
    return axes[0] in (-1, ndim - 1)


def _vector_along_last(m: _Match, p: DFPattern, size: Any, dtype: str, ndim: int
                       ) -> Expr | None:
    """What ``p`` matched as a vector of ``size`` elements broadcast along the last axis of
    an ``ndim``-D result: a constant of shape ``(size,)`` or ``(1, ..., 1, size)`` (at
    most ``ndim`` dims; reshaped), or a tensor of shape ``(size,)``. None when it is
    anything else (it would broadcast elsewhere, or grow the result)."""
    e = m.pre(p)
    t = _tensor(e)
    if (t is None or t.dtype != dtype or not t.shape or len(t.shape) > ndim
            or t.shape[-1] != size):
        return None
    if any(d != 1 for d in t.shape[:-1]):
        return None
    if len(t.shape) == 1:
        return m.post(p)
    if type(e) is Constant:
        return const(np.ascontiguousarray(e.data.reshape(-1)))
    return None


def _small_scalar(e: Expr, ndim: int) -> float | None:
    """The value of a one-element float constant of at most ``ndim`` dims (so it cannot
    grow an ``ndim``-D operand)."""
    value = _scalar(e)
    return value if value is not None and e.data.ndim <= ndim else None


def _filled(value: float, size: Any, dtype: str) -> Expr | None:
    """A constant vector of ``size`` elements ``value`` (None for a symbolic size)."""
    if type(size) is not int:
        return None
    return const(np.full((size,), value, dtype=np.dtype(dtype)))


class _Match:
    """One match of a rule's pattern: what each pattern node matched as the round began
    (``pre``: typed, read types and structure there) and as rebuilt over this round's
    rewrites of the inputs (``post``: build the replacement from these)."""

    __slots__ = ("pre_map", "post_map")

    def __init__(self, pre_map: dict[DFPattern, list[Expr]],
                 post_map: dict[DFPattern, list[Expr]]) -> None:
        self.pre_map = pre_map
        self.post_map = post_map

    def __contains__(self, p: DFPattern) -> bool:
        return p in self.pre_map

    def pre(self, p: DFPattern) -> Expr:
        """What ``p`` matched, typed, as the round began."""
        return self.pre_map[p][0]

    def post(self, p: DFPattern) -> Expr:
        """What ``p`` matched, rebuilt over this round's rewrites."""
        return self.post_map[p][0]

    def near(self, p: DFPattern, want: float) -> bool:
        """``p`` did not take part in the match, or matched a constant near ``want``."""
        return p not in self.pre_map or _near(self.pre(p), want)


class _FusionRule(DFPatternCallback):
    """A rule of the ``fuse`` set: :meth:`fuse` gets the match on the typed program.

    The driver hands a callback the rewritten (``post``) nodes of the match, which are
    untyped where another rule fired below them in the same round; matching the pattern
    again at ``pre`` (linear in the pattern's size) gives the typed nodes, so a chain of
    fusions (norm, attention, norm, ...) all fire in one round.
    """

    def __init__(self) -> None:
        super().__init__(require_type=True)

    def callback(self, pre: Expr, post: Expr, node_map: dict[DFPattern, list[Expr]]) -> Expr:
        matcher = Matcher()
        assert self.pattern is not None
        if not matcher.match(self.pattern, pre):
            return post
        out = self.fuse(pre, _Match(matcher.memo, node_map))
        return post if out is None else out

    def fuse(self, pre: Expr, m: _Match) -> Expr | None:
        """The fused replacement of the match ``m`` at ``pre``, or None to leave it."""
        raise NotImplementedError


# -- normalizations -----------------------------------------------------------------------------


def _inv_sqrt(ve: DFPattern, one: DFPattern) -> tuple[DFPattern, DFPattern]:
    """``sqrt(ve)`` (to divide by) and ``one / sqrt(ve)`` (to multiply by): the two ways
    exporters write the division by a standard deviation."""
    std = is_op("sqrt")(ve)
    return std, is_op("divide")(one, std)


class LayerNorm(_FusionRule):
    """(x - mean(x)) / sqrt(mean((x - mean(x)) ** 2) + eps) * gamma + beta becomes nn.layer_norm

    Over the last axis; the square written as ``power(d, 2)`` or ``d * d``, the division
    as a divide or a multiply by ``1 / sqrt(...)``; gamma and beta (each optional) broadcast
    along the last axis only. A gamma or beta that does not (a residual added after an
    un-scaled norm) stays a multiply or add after the fused norm. Nothing fuses under
    ``std.SimplifyInference.decompose_layer_norm``: the user asked for the decomposition.
    """

    def __init__(self) -> None:
        super().__init__()
        self.x = wildcard()
        self.mean = is_op("mean")(self.x)
        self.d = is_op("subtract")(self.x, self.mean)
        self.two = is_constant()
        self.square = is_op("power")(self.d, self.two) | is_op("multiply")(self.d, self.d)
        self.var = is_op("mean")(self.square)
        self.eps = is_constant()
        self.one = is_constant()
        std, inv = _inv_sqrt(is_op("add")(self.eps, self.var), self.one)
        self.norm = is_op("divide")(self.d, std) | is_op("multiply")(inv, self.d)
        self.gamma, self.beta = wildcard(), wildcard()
        scaled = is_op("multiply")(self.norm, self.gamma) | self.norm
        self.pattern = is_op("add")(scaled, self.beta) | scaled

    def fuse(self, pre: Expr, m: _Match) -> Expr | None:
        if PassContext.current().config.get(DECOMPOSE_LAYER_NORM, False):
            return None  # the user asked for layer norms decomposed (SimplifyInference)
        xt = _float_type(m.pre(self.x))
        if xt is None or not xt.shape:
            return None
        ndim = len(xt.shape)
        if not (_over_last_axis(m.pre(self.mean), ndim) and _over_last_axis(m.pre(self.var),
                                                                             ndim)):
            return None
        eps = _norm_constants(m, ndim, self.two, self.one, self.eps)
        if eps is None:
            return None
        size, dtype = xt.shape[-1], xt.dtype
        gamma = m.post(self.gamma) if self.gamma in m else None
        beta = m.post(self.beta) if self.beta in m else None
        g = _vector_along_last(m, self.gamma, size, dtype, ndim) if gamma is not None else None
        b = _vector_along_last(m, self.beta, size, dtype, ndim) if beta is not None else None
        if gamma is not None and g is None:
            b = None  # (norm * gamma) + beta: beta cannot move before gamma
        ones, zeros = _filled(1.0, size, dtype), _filled(0.0, size, dtype)
        if (g is None and ones is None) or (b is None and zeros is None):
            return None
        out: Expr = op.nn.layer_norm(m.post(self.x), g if g is not None else ones,
                                     b if b is not None else zeros, axis=-1, epsilon=eps,
                                     center=b is not None, scale=g is not None)
        # what does not run along the last axis stays after the norm, in its order
        if gamma is not None and g is None:
            out = op.multiply(out, gamma)
        if beta is not None and b is None:
            out = op.add(out, beta)
        return out


def _norm_constants(m: _Match, ndim: int, two: DFPattern, one: DFPattern, eps: DFPattern
                    ) -> float | None:
    """The epsilon of a normalization's decomposition when its constants are right (the
    exponent 2, the 1 of ``1 / sqrt``, an epsilon >= 0, none growing the operand)."""
    for p, want in ((two, 2.0), (one, 1.0)):
        if p in m and not (_near(m.pre(p), want) and _small_scalar(m.pre(p), ndim) is not None):
            return None
    value = _small_scalar(m.pre(eps), ndim)
    return value if value is not None and value >= 0.0 else None


class RMSNorm(_FusionRule):
    """x / sqrt(mean(x ** 2) + eps) (with * weight) becomes nn.rms_norm

    Over the last axis; the square written as ``power(x, 2)`` or ``x * x``, the division
    as a divide or a multiply by ``1 / sqrt(...)`` (Llama's and T5's form; the float32
    casts Llama writes around it are gone once SimplifyExpr removed them as no-ops). The
    weight broadcasts along the last axis only; without one the weight is ones, and a
    factor that broadcasts elsewhere stays a multiply after the fused norm.
    """

    def __init__(self) -> None:
        super().__init__()
        self.x = wildcard()
        self.two = is_constant()
        self.square = is_op("power")(self.x, self.two) | is_op("multiply")(self.x, self.x)
        self.ms = is_op("mean")(self.square)
        self.eps = is_constant()
        self.one = is_constant()
        std, inv = _inv_sqrt(is_op("add")(self.eps, self.ms), self.one)
        self.norm = is_op("divide")(self.x, std) | is_op("multiply")(inv, self.x)
        self.weight = wildcard()
        self.pattern = is_op("multiply")(self.norm, self.weight) | self.norm

    def fuse(self, pre: Expr, m: _Match) -> Expr | None:
        xt = _float_type(m.pre(self.x))
        if xt is None or not xt.shape or not _over_last_axis(m.pre(self.ms), len(xt.shape)):
            return None
        ndim = len(xt.shape)
        eps = _norm_constants(m, ndim, self.two, self.one, self.eps)
        if eps is None:
            return None
        x, size, dtype = m.post(self.x), xt.shape[-1], xt.dtype
        weight = m.post(self.weight) if self.weight in m else None
        w = _vector_along_last(m, self.weight, size, dtype, ndim) if weight is not None else None
        if w is not None:
            return op.nn.rms_norm(x, w, axes=(-1,), epsilon=eps)
        ones = _filled(1.0, size, dtype)
        if ones is None:
            return None
        out: Expr = op.nn.rms_norm(x, ones, axes=(-1,), epsilon=eps)
        # a factor that does not run along the last axis stays after the norm
        return out if weight is None else op.multiply(out, weight)


# -- activations --------------------------------------------------------------------------------


def _half_times_x_times(gate: DFPattern, x: DFPattern, half: DFPattern,
                        one: DFPattern, half2: DFPattern) -> DFPattern:
    """``0.5 * x * (1 + gate)`` in the associations and distributions exporters write.

    ``x * (1 + gate) * 0.5``, ``x * 0.5 * (1 + gate)``, ``x * ((1 + gate) * 0.5)`` and
    SimplifyExpr's ``x * (gate * 0.5 + 0.5)``. In each call the constant comes first (the
    cheapest test, so a multiply of anything else fails at once) and the gate before the
    bare ``x``, so the gate binds ``x`` before ``x`` is compared with it.
    """
    one_plus = is_op("add")(one, gate)
    return (is_op("multiply")(half, is_op("multiply")(one_plus, x))
            | is_op("multiply")(one_plus, is_op("multiply")(half, x))
            | is_op("multiply")(is_op("multiply")(half, one_plus), x)
            | is_op("multiply")(is_op("add")(half2, is_op("multiply")(half, gate)), x))


class _Activation(_FusionRule):
    """An elementwise activation of ``self.x``: fused when the constants of the match have
    the values :meth:`expected` gives and the result has ``x``'s type (no constant grew
    it)."""

    x: DFPattern

    def expected(self) -> dict[DFPattern, float]:
        raise NotImplementedError

    def fused(self, x: Expr, m: _Match) -> Expr | None:
        raise NotImplementedError

    def fuse(self, pre: Expr, m: _Match) -> Expr | None:
        if not _same_type(_float_type(m.pre(self.x)), _tensor(pre)):
            return None
        if not all(m.near(p, want) for p, want in self.expected().items()):
            return None
        return self.fused(m.post(self.x), m)


class GeluErf(_Activation):
    """x * 0.5 * (1 + erf(x / sqrt(2))) becomes nn.gelu

    In the associations TorchScript and dynamo exports leave after SimplifyExpr
    (``x * (erf(.) + 1) * 0.5``, ``x * (erf(.) * 0.5 + 0.5)``, ...), with ``x / sqrt(2)``
    or ``x * (1 / sqrt(2))`` inside the erf.
    """

    def __init__(self) -> None:
        super().__init__()
        self.x = wildcard()
        self.root2, self.inv_root2 = is_constant(), is_constant()
        self.half, self.one, self.half2 = is_constant(), is_constant(), is_constant()
        erf = is_op("erf")(is_op("divide")(self.x, self.root2)
                           | is_op("multiply")(self.inv_root2, self.x))
        self.pattern = _half_times_x_times(erf, self.x, self.half, self.one, self.half2)

    def expected(self) -> dict[DFPattern, float]:
        return {self.root2: _SQRT2, self.inv_root2: 1.0 / _SQRT2, self.half: 0.5,
                self.one: 1.0, self.half2: 0.5}

    def fused(self, x: Expr, m: _Match) -> Expr | None:
        return op.nn.gelu(x)


class GeluTanh(_Activation):
    """0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3))) becomes nn.gelu (tanh)

    GPT-2's ``gelu_new`` as exported; the cube written as ``power(x, 3)`` or ``x * x * x``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.x = wildcard()
        self.three, self.k, self.root = is_constant(), is_constant(), is_constant()
        self.half, self.one, self.half2 = is_constant(), is_constant(), is_constant()
        cube = (is_op("power")(self.x, self.three)
                | is_op("multiply")(is_op("multiply")(self.x, self.x), self.x))
        inner = is_op("add")(is_op("multiply")(self.k, cube), self.x)
        gate = is_op("tanh")(is_op("multiply")(self.root, inner))
        self.pattern = _half_times_x_times(gate, self.x, self.half, self.one, self.half2)

    def expected(self) -> dict[DFPattern, float]:
        return {self.three: 3.0, self.k: 0.044715, self.root: _SQRT_2_OVER_PI,
                self.half: 0.5, self.one: 1.0, self.half2: 0.5}

    def fused(self, x: Expr, m: _Match) -> Expr | None:
        return op.nn.gelu(x, approximate="tanh")


class SiLU(_Activation):
    """x * sigmoid(x) becomes nn.silu"""

    def __init__(self) -> None:
        super().__init__()
        self.x = wildcard()
        self.pattern = is_op("multiply")(is_op("sigmoid")(self.x), self.x)

    def expected(self) -> dict[DFPattern, float]:
        return {}

    def fused(self, x: Expr, m: _Match) -> Expr | None:
        return op.nn.silu(x)


class HardSwish(_Activation):
    """x * clip(x / 6 + 0.5, 0, 1) becomes nn.hard_swish

    The hard-sigmoid form (``x * (1/6)`` or ``x / 6`` inside, as the importer writes ONNX
    HardSigmoid/HardSwish) and torch's ``x * relu6(x + 3) / 6`` (the division by 6 as a
    divide or a multiply by 1/6, before or after the product).
    """

    def __init__(self) -> None:
        super().__init__()
        self.x = wildcard()
        self.sixth, self.six, self.half = is_constant(), is_constant(), is_constant()
        self.three, self.six2, self.sixth2 = is_constant(), is_constant(), is_constant()
        self.clip1 = is_op("clip")(is_op("add")(self.half, is_op("multiply")(self.sixth, self.x)
                                                | is_op("divide")(self.x, self.six)))
        self.clip6 = is_op("clip")(is_op("add")(self.three, self.x))
        self.pattern = (is_op("multiply")(self.clip1, self.x)
                        | is_op("divide")(is_op("multiply")(self.clip6, self.x), self.six2)
                        | is_op("multiply")(self.sixth2, is_op("multiply")(self.clip6, self.x))
                        | is_op("multiply")(is_op("divide")(self.clip6, self.six2), self.x)
                        | is_op("multiply")(is_op("multiply")(self.sixth2, self.clip6), self.x))

    def expected(self) -> dict[DFPattern, float]:
        return {self.sixth: 1.0 / 6.0, self.six: 6.0, self.half: 0.5, self.three: 3.0,
                self.six2: 6.0, self.sixth2: 1.0 / 6.0}

    def fused(self, x: Expr, m: _Match) -> Expr | None:
        if self.clip1 in m:
            clip, bounds = m.pre(self.clip1), (0.0, 1.0)
        else:
            clip, bounds = m.pre(self.clip6), (0.0, 6.0)
        if (clip.attrs["a_min"], clip.attrs["a_max"]) != bounds:
            return None
        return op.nn.hard_swish(x)


# -- rotary embedding ---------------------------------------------------------------------------


def _half_slice(e: Expr, width: int, ndim: int) -> tuple[Expr, str] | None:
    """``(x, "lo" | "hi")`` when ``e`` is ``x[..., :width/2]`` or ``x[..., width/2:]``: a
    ``strided_slice`` of the last axis, or an item of a ``split`` into two halves."""
    half = width // 2
    if type(e) is TupleGetItem:
        split = _call(e.tuple_value, "split")
        if split is None or e.index not in (0, 1):
            return None
        a = split.attrs
        if a["axis"] not in (-1, ndim - 1) or a["indices_or_sections"] not in (2, (half,)):
            return None
        return split.args[0], ("lo", "hi")[e.index]
    sl = _call(e, "strided_slice")
    if sl is None:
        return None
    a = sl.attrs
    begin, end, strides, axes = a["begin"], a["end"], a["strides"], a["axes"]
    if axes is None:
        if len(begin) != ndim:
            return None
        # every axis but the last taken whole
        for b, en in zip(begin[:-1], end[:-1], strict=True):
            if b != 0 or type(en) is not int or en < 2**31:
                return None
        begin, end = begin[-1:], end[-1:]
        strides = strides[-1:] if strides is not None else None
    elif len(axes) != 1 or axes[0] not in (-1, ndim - 1):
        return None
    if strides is not None and tuple(strides) != (1,):
        return None
    b, en = begin[0], end[0]
    if type(b) is not int or type(en) is not int:
        return None
    b = min(max(b + width if b < 0 else b, 0), width)
    en = min(max(en + width if en < 0 else en, 0), width)
    if (b, en) == (0, half):
        return sl.args[0], "lo"
    if (b, en) == (half, width):
        return sl.args[0], "hi"
    return None


def _fits(shape: Sequence[Any], target: Sequence[Any]) -> bool:
    """``shape`` broadcasts to ``target`` without growing it (aligned at the end)."""
    if len(shape) > len(target):
        return False
    lead = len(target) - len(shape)
    return all(d == 1 or d == target[lead + k] for k, d in enumerate(shape))


class RotaryEmbedding(_FusionRule):
    """x * cos + concat(-x[..., D/2:], x[..., :D/2]) * sin becomes nn.rotary_embedding

    The rotate-half form of Hugging Face models, the halves taken by ``strided_slice`` on
    the last axis or by ``split`` into two, the negation a ``negative`` or a multiply by
    -1; ``cos`` and ``sin`` full width (any expressions, typically constants after
    FoldConstant) that broadcast to ``x`` without growing it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.x, self.cos, self.sin = wildcard(), wildcard(), wildcard()
        self.hi, self.lo = (is_op("strided_slice")(self.x)
                            | is_tuple_get_item(is_op("split")(self.x)) for _ in range(2))
        self.minus_one = is_constant()
        neg = is_op("negative")(self.hi) | is_op("multiply")(self.hi, self.minus_one)
        self.rot = is_op("concatenate")(is_tuple([neg, self.lo]))
        # the rotation first: its slices are checked before x is bound by x * cos
        self.pattern = is_op("add")(is_op("multiply")(self.rot, self.sin),
                                    is_op("multiply")(self.x, self.cos))

    def fuse(self, pre: Expr, m: _Match) -> Expr | None:
        x = m.pre(self.x)
        xt = _float_type(x)
        if xt is None or not _same_type(xt, _tensor(pre)) or not xt.shape:
            return None
        ndim, width = len(xt.shape), xt.shape[-1]
        if type(width) is not int or width % 2 or not m.near(self.minus_one, -1.0):
            return None
        if m.pre(self.rot).attrs["axis"] not in (-1, ndim - 1):
            return None
        hi = _half_slice(m.pre(self.hi), width, ndim)
        lo = _half_slice(m.pre(self.lo), width, ndim)
        if hi is None or lo is None or hi[1] != "hi" or lo[1] != "lo" or not (
                hi[0] is x and lo[0] is x):
            return None
        for table in (self.cos, self.sin):
            tt = _tensor(m.pre(table))
            if tt is None or tt.dtype != xt.dtype or not _fits(tt.shape, xt.shape):
                return None
        return op.nn.rotary_embedding(m.post(self.x), m.post(self.cos), m.post(self.sin))


# -- attention ----------------------------------------------------------------------------------

_LAYOUT_OPS = ("reshape", "transpose", "expand_dims", "broadcast_to")


class _View:
    """An expression read as ``base`` through a chain of layout ops (``steps``, from the
    base up: ``[op name, attrs, result shape, original node, its rebuilt form]``), with the
    scalar factors met along the chain taken out (their product is ``scale``).

    The chain is read on the typed nodes of the round and, in step, on their rebuilt forms
    (the driver's ``post`` nodes, where this round's rewrites of the inputs are), as far as
    those are the same calls. The rule edits the steps (un-transposes a key, drops a
    grouped-query repeat), then :meth:`build` makes the expression from the rebuilt forms,
    reusing nodes up to the first step that changed or had a factor taken out below it.
    """

    def __init__(self, base: Expr, base_post: Expr, base_shape: tuple[Any, ...]) -> None:
        self.base = base
        self.base_post = base_post
        self.base_shape = base_shape
        self.steps: list[list[Any]] = []
        self.scale = 1.0

    @property
    def shape(self) -> tuple[Any, ...]:
        """The shape of the expression :meth:`build` makes."""
        return self.steps[-1][2] if self.steps else self.base_shape

    def below(self, k: int) -> tuple[Any, ...]:
        """The shape under the ``k``-th step from the top (1: under the last one)."""
        return self.steps[-k - 1][2] if len(self.steps) > k else self.base_shape

    def top(self, *names: str) -> bool:
        """The last steps are calls of ``names``, in that order."""
        return len(self.steps) >= len(names) and tuple(
            st[0] for st in self.steps[len(self.steps) - len(names):]) == names

    def push(self, name: str, attrs: dict[str, Any], shape: tuple[Any, ...]) -> None:
        self.steps.append([name, attrs, tuple(shape), None, None])

    def pop(self, count: int = 1) -> list[Any]:
        """Remove the last ``count`` steps; the last one removed."""
        for _ in range(count):
            step = self.steps.pop()
        return step

    def build(self) -> Expr:
        """The expression the view stands for (its scale left out)."""
        out = self.base_post
        for name, attrs, _shape, orig, rebuilt in self.steps:
            if rebuilt is not None and rebuilt.args[0] is out:
                out = rebuilt  # nothing below it changed
            elif orig is not None:
                out = Call(orig.op, [out], orig.attrs)
            else:
                out = _layout_call(name, out, attrs)
        return out


def _layout_call(name: str, data: Expr, attrs: dict[str, Any]) -> Expr:
    if name == "reshape":
        return op.reshape(data, newshape=list(attrs["newshape"]))
    if name == "transpose":
        return op.transpose(data, axes=list(attrs["axes"]))
    if name == "expand_dims":
        return op.expand_dims(data, axis=attrs["axis"], num_newaxis=attrs["num_newaxis"])
    return op.broadcast_to(data, shape=list(attrs["shape"]))


def _scalar_factor(c: Call) -> tuple[Expr, float] | None:
    """``(x, s)`` when ``c`` is ``x * s``, ``s * x`` or ``x / (1 / s)`` for a finite,
    non-zero one-element float constant that does not grow ``x``'s shape."""
    a, b = c.args
    if c.op.name == "divide":
        d = _scalar(b)
        x, s = a, (1.0 / d if d else None)
    else:
        s, x = _scalar(b), a
        if s is None:
            s, x = _scalar(a), b
    if s is None or not math.isfinite(s) or s == 0.0:
        return None
    return (x, s) if _same_type(_tensor(x), _tensor(c)) else None


def _same_call(rebuilt: Expr | None, c: Call) -> Call | None:
    """``rebuilt`` when it is ``c`` rebuilt over new arguments (same op and attributes)."""
    if (type(rebuilt) is Call and rebuilt.op is c.op and len(rebuilt.args) == len(c.args)
            and (rebuilt.attrs is c.attrs or rebuilt.attrs == c.attrs)):
        return rebuilt
    return None


def _read_view(e: Expr, e_post: Expr) -> _View | None:
    """``e`` (``e_post`` rebuilt) as a :class:`_View`; None when a node on the way is
    untyped (a rule built it in this round: the next round sees it typed)."""
    chain: list[tuple[Call | None, Call | None, float, TensorType]] = []  # top down
    node: Expr = e
    post: Expr | None = e_post
    while True:
        t = _tensor(node)
        if t is None:
            return None
        c = _call(node, *_LAYOUT_OPS)
        if c is not None and (c.op.name != "transpose" or c.attrs["axes"] is not None):
            pc = _same_call(post, c)
            chain.append((c, pc, 1.0, t))
            node, post = c.args[0], (pc.args[0] if pc is not None else None)
            continue
        c = _call(node, "multiply", "divide")
        factor = _scalar_factor(c) if c is not None else None
        if c is None or factor is None:
            break
        pc = _same_call(post, c)
        chain.append((None, None, factor[1], t))
        index = 0 if c.args[0] is factor[0] else 1
        node, post = factor[0], (pc.args[index] if pc is not None else None)
    view = _View(node, post if post is not None else node, tuple(t.shape))
    for call, rebuilt, factor, ty in reversed(chain):
        if call is None:
            view.scale *= factor
        else:
            view.steps.append([call.op.name, dict(call.attrs.items()), tuple(ty.shape), call,
                               rebuilt])
    return view


def _swap_last_two(view: _View) -> None:
    """Make the 4-D ``view`` the transpose of its last two axes with the fewest layout ops:
    fold the swap into a last transpose, undo the reshape / transpose / reshape of a
    batched matmul, or else add a transpose."""
    b, h, d, s = view.shape
    target = (b, h, s, d)
    if view.top("transpose"):
        perm = list(view.pop()[1]["axes"])
        perm[2], perm[3] = perm[3], perm[2]
        if perm != [0, 1, 2, 3]:
            view.push("transpose", {"axes": tuple(perm)}, target)
        return
    if view.top("reshape", "transpose", "reshape") and tuple(view.steps[-2][1]["axes"]) == (
            0, 2, 1):
        inner = view.below(2)  # (b * h, s, d), read from whatever is under it
        if len(inner) == 3 and tuple(inner[1:]) == (s, d) and tuple(view.below(3)[-2:]) == (
                s, d):
            view.pop(3)
            if tuple(view.shape) != target:
                if view.top("reshape"):
                    view.pop()
                view.push("reshape", {"newshape": target}, target)
            return
    view.push("transpose", {"axes": (0, 1, 3, 2)}, target)


def _kv_groups(view: _View) -> int:
    """``n`` when ``view`` ends in the grouped-query repeat of its heads (``expand_dims``
    at axis 2, ``broadcast_to`` (B, Hkv, n, S, D), ``reshape`` to (B, Hkv * n, S, D));
    1 otherwise."""
    if not view.top("expand_dims", "broadcast_to", "reshape"):
        return 1
    exp, wide, flat = (st[1:3] for st in view.steps[-3:])
    below = view.below(3)
    if len(below) != 4 or exp[0]["axis"] not in (2, -3) or exp[0]["num_newaxis"] != 1:
        return 1
    b, hkv, s, d = below
    shape = wide[1]
    if len(shape) != 5 or (shape[0], shape[1], shape[3], shape[4]) != (b, hkv, s, d):
        return 1
    n = shape[2]
    if type(n) is not int or type(hkv) is not int or tuple(flat[1]) != (b, hkv * n, s, d):
        return 1
    return n


def _is_causal(masked: np.ndarray, q_seq: Any, kv_seq: Any) -> bool:
    """``masked`` (a bool array whose leading dims repeat one (q_seq, kv_seq) matrix) is
    true exactly where key j > query i: attention's upper-left causal mask."""
    if type(q_seq) is not int or type(kv_seq) is not int or masked.shape[-2:] != (
            q_seq, kv_seq):
        return False
    upper = np.arange(kv_seq)[None, :] > np.arange(q_seq)[:, None]
    return bool(np.all(masked.reshape(-1, q_seq, kv_seq) == upper))


def _finite(e: Expr) -> bool:
    """``e`` provably holds finite values only: a finite constant, or a ``where`` of them."""
    if type(e) is Constant:
        return bool(np.all(np.isfinite(e.data)))
    w = _call(e, "where")
    return w is not None and _finite(w.args[1]) and _finite(w.args[2])


def _masked_out(e: Expr) -> float | None:
    """The value of a one-element constant that masks a score out (-inf, or a finite
    value at most -1e30: added to a score it rounds to itself, and its exp is 0)."""
    v = _scalar(e)
    return v if v is not None and v <= _MASKED else None


class _Mask:
    """Attention's mask argument (None: none) and ``is_causal``."""

    __slots__ = ("mask", "causal")

    def __init__(self, mask: Expr | None = None, causal: bool = False) -> None:
        self.mask = mask
        self.causal = causal


def _additive_mask(m: Expr, scores: tuple[Any, ...], dtype: str, nan_guard: bool
                   ) -> _Mask | None:
    """``scores + m`` as attention's mask; None when ``m`` does not fit, or may mask a
    whole row with ``-inf`` and no ``isnan`` guard turns that row's NaN into zeros."""
    mt = _tensor(m)
    if mt is None or mt.dtype != dtype or not _fits(mt.shape, scores):
        return None
    if type(m) is Constant:
        data = m.data
        if np.any(np.isnan(data)) or np.any(data == np.inf):
            return None
        masked = data <= _MASKED
        if np.all(masked | (data == 0)) and _is_causal(masked, scores[2], scores[3]):
            return _Mask(causal=True)
        if not nan_guard and np.any(np.all(data == -np.inf, axis=-1)):
            return None
        return _Mask(m)
    w = _call(m, "where")
    if nan_guard and w is not None and _near(w.args[1], 0.0) and _masked_out(
            w.args[2]) == -np.inf:
        ct = _tensor(w.args[0])
        if ct is not None and ct.dtype == "bool" and _fits(ct.shape, scores):
            return _Mask(w.args[0])  # attention's bool mask: True attends, False is -inf
    if not nan_guard and not _finite(m):
        return None
    return _Mask(m)


def _select_mask(w: Call, scores: tuple[Any, ...], dtype: str, nan_guard: bool
                 ) -> tuple[Expr, _Mask] | None:
    """``where(cond, s, c)`` or ``where(cond, c, s)`` with ``c`` masking out: ``s`` and the
    mask (None when it cannot be one)."""
    cond, a, b = w.args
    ct = _tensor(cond)
    if ct is None or ct.dtype != "bool" or not _fits(ct.shape, scores):
        return None
    if _masked_out(b) is not None and _masked_out(a) is None:
        s, value, attend = a, _masked_out(b), True
    elif _masked_out(a) is not None and _masked_out(b) is None:
        s, value, attend = b, _masked_out(a), False
    else:
        return None
    assert value is not None
    if type(cond) is Constant:
        keep = cond.data if attend else ~cond.data
        if _is_causal(~keep, scores[2], scores[3]):
            return s, _Mask(causal=True)
        if not nan_guard and value == -np.inf and not np.all(np.any(keep, axis=-1)):
            return None  # a fully masked row: NaN before, zeros fused
        return s, _Mask(const(np.where(keep, 0.0, value).astype(dtype)))
    if value == -np.inf:
        if not nan_guard:
            return None
        if attend:
            return s, _Mask(cond)
    zero = const(np.zeros((), dtype=np.dtype(dtype)))
    fill = const(np.full((), value, dtype=np.dtype(dtype)))
    return s, _Mask(op.where(cond, zero, fill) if attend else op.where(cond, fill, zero))


class Attention(_FusionRule):
    """softmax(q @ k^T * scale [+ mask]) @ v becomes nn.attention

    The scale on the product or on q and k (torch's SDPA export multiplies each by
    sqrt(scale)), anywhere along their reshape/transpose chains; ``k^T`` as a transpose,
    as the reshape / transpose / reshape dynamo writes for a batched matmul, or anything
    else (then transposed back); k and v repeated for grouped-query attention
    (expand_dims, broadcast_to, reshape) read un-repeated; an additive mask, a bool mask
    as ``where(mask, scores, -inf or finfo.min)``, a constant causal mask
    (``is_causal``), and the ``where(isnan(p), 0, p)`` masked SDPA exports write after
    the softmax. 4-D (batch, heads, seq, head_dim) tensors only. When a mask is fused: see
    the module docstring.
    """

    def __init__(self) -> None:
        super().__init__()
        self.q, self.kt, self.v = wildcard(), wildcard(), wildcard()
        self.factor, self.divisor = is_constant(), is_constant()
        self.qk = is_op("matmul")(self.q, self.kt)
        scaled = (is_op("multiply")(self.qk, self.factor)
                  | is_op("divide")(self.qk, self.divisor) | self.qk)
        self.mask, self.cond, self.fill = wildcard(), wildcard(), is_constant()
        self.added = is_op("add")(scaled, self.mask)
        self.selected = (is_op("where")(self.cond, scaled, self.fill)
                         | is_op("where")(self.cond, self.fill, scaled))
        self.softmax = is_op("nn.softmax")(self.added | self.selected | scaled)
        self.zero = is_constant()
        self.guarded = is_op("where")(is_op("isnan")(self.softmax), self.zero, self.softmax)
        self.pattern = is_op("matmul")(self.guarded | self.softmax, self.v)

    def fuse(self, pre: Expr, m: _Match) -> Expr | None:
        out_t, qk_t = _tensor(pre), _float_type(m.pre(self.qk))
        if out_t is None or qk_t is None or len(qk_t.shape) != 4:
            return None
        if m.pre(self.softmax).attrs["axis"] not in (-1, 3):
            return None
        nan_guard = self.guarded in m
        if nan_guard and not m.near(self.zero, 0.0):
            return None
        scores, dtype = tuple(qk_t.shape), qk_t.dtype
        scale = 1.0
        if self.factor in m:
            scale = _small_scalar(m.pre(self.factor), 4) or 0.0
        elif self.divisor in m:
            divisor = _small_scalar(m.pre(self.divisor), 4)
            scale = 1.0 / divisor if divisor else 0.0
        if not math.isfinite(scale) or scale == 0.0:
            return None
        mask = self._mask(m, scores, dtype, nan_guard)
        views = _attention_inputs(m, self.q, self.kt, self.v, scores, out_t)
        if mask is None or views is None:
            return None
        q, k, v = views
        scale *= q.scale * k.scale
        head_dim = q.shape[3]
        default = type(head_dim) is int and head_dim > 0 and abs(
            scale * math.sqrt(head_dim) - 1.0) <= 1e-6
        query, key, value = q.build(), k.build(), v.build()
        bias = mask.mask
        if bias is not None and self.mask in m and bias is m.pre(self.mask):
            bias = m.post(self.mask)
        return op.nn.attention(query, key, value, bias, scale=None if default else scale,
                               is_causal=mask.causal)

    def _mask(self, m: _Match, scores: tuple[Any, ...], dtype: str, nan_guard: bool
              ) -> _Mask | None:
        if self.added in m:
            return _additive_mask(m.pre(self.mask), scores, dtype, nan_guard)
        if self.selected in m:
            found = _select_mask(m.pre(self.selected), scores, dtype, nan_guard)
            return None if found is None else found[1]
        return _Mask()


def _attention_inputs(m: _Match, q: DFPattern, kt: DFPattern, v: DFPattern,
                      scores: tuple[Any, ...], out_t: TensorType
                      ) -> tuple[_View, _View, _View] | None:
    """The views of query, key (un-transposed, un-repeated) and value, when their shapes
    are attention's: q (B, H, Sq, D), k (B, Hkv, Skv, D), v (B, Hkv, Skv, Dv)."""
    qv, kv, vv = (_read_view(m.pre(p), m.post(p)) for p in (q, kt, v))
    if qv is None or kv is None or vv is None or vv.scale != 1.0:
        return None  # a factor on v stays where it is: no fusion
    if len(kv.shape) != 4:
        return None
    _swap_last_two(kv)
    groups = _kv_groups(kv)
    if groups > 1 and _kv_groups(vv) == groups:
        kv.pop(3)
        vv.pop(3)
    qs, ks, vs = qv.shape, kv.shape, vv.shape
    if not (len(qs) == len(ks) == len(vs) == 4):
        return None
    b, h, sq, d = qs
    _, hkv, skv, _ = ks
    if (ks[0], ks[3]) != (b, d) or (vs[0], vs[1], vs[2]) != (b, hkv, skv):
        return None
    if type(h) is not int or type(hkv) is not int or hkv == 0 or h % hkv:
        return None
    if tuple(scores) != (b, h, sq, skv) or tuple(out_t.shape) != (b, h, sq, vs[3]):
        return None
    return qv, kv, vv


# -- dense and bias -----------------------------------------------------------------------------


class DenseBiasAdd(_FusionRule):
    """nn.dense(x, w) + b becomes nn.bias_add(nn.dense(x, w), b, axis=-1)

    When ``b`` runs along the last axis only (the add does not broadcast the product).
    """

    def __init__(self) -> None:
        super().__init__()
        self.dense, self.bias = is_op("nn.dense")(wildcard(), wildcard()), wildcard()
        self.pattern = is_op("add")(self.dense, self.bias)

    def fuse(self, pre: Expr, m: _Match) -> Expr | None:
        dt = _tensor(pre)
        if dt is None or not dt.shape:
            return None
        b = _vector_along_last(m, self.bias, dt.shape[-1], dt.dtype, len(dt.shape))
        return None if b is None else op.nn.bias_add(m.post(self.dense), b, axis=-1)


class MatmulToDense(_FusionRule):
    """matmul(x, W) + b (2-D, constant W) becomes nn.bias_add(nn.dense(x, W^T), b, axis=-1)

    What the exporter writes back as one ``Gemm`` (ONNX MatMul + Add as an exporter wrote
    them for ``nn.Linear``); the weight is transposed once, here. A transposed weight
    (``matmul(x, transpose(W))``) needs no constant: it is ``nn.dense(x, W)``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.x, self.w, self.bias = has_shape([None, None]), wildcard(), wildcard()
        self.matmul = is_op("matmul")(self.x, self.w.has_shape([None, None]))
        self.pattern = is_op("add")(self.matmul, self.bias)

    def fuse(self, pre: Expr, m: _Match) -> Expr | None:
        out_t, w = _tensor(pre), m.pre(self.w)
        if out_t is None or len(out_t.shape) != 2:
            return None
        if type(w) is Constant:
            weight: Expr = const(w.data.T)  # Constant copies it, blocked
        else:
            transposed = _call(m.post(self.w), "transpose")
            if transposed is None or tuple(transposed.attrs["axes"] or (1, 0)) != (1, 0):
                return None
            weight = transposed.args[0]
        b = _vector_along_last(m, self.bias, out_t.shape[-1], out_t.dtype, 2)
        if b is None:
            return None
        return op.nn.bias_add(op.nn.dense(m.post(self.x), weight), b, axis=-1)


# -- the rule set and its pass ------------------------------------------------------------------

#: The fusion rules, in the order they are tried at a node (the first match wins).
FUSE = RuleSet(
    "fuse",
    [
        Rule("layer_norm", LayerNorm()),
        Rule("rms_norm", RMSNorm()),
        Rule("gelu_erf", GeluErf()),
        Rule("gelu_tanh", GeluTanh()),
        Rule("hard_swish", HardSwish()),
        Rule("silu", SiLU()),
        Rule("attention", Attention()),
        Rule("rotary_embedding", RotaryEmbedding()),
        Rule("dense_bias_add", DenseBiasAdd()),
        Rule("matmul_dense", MatmulToDense()),
    ],
    doc="transformer and CNN decompositions become fused ops (std's FusePatterns pass)",
    pass_name="FusePatterns",
)

#: The pass applying :data:`FUSE` (opt level 2; std runs it after FoldConstant).
FusePatterns = FUSE.as_pass(opt_level=2, name="FusePatterns")
