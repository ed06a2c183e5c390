"""The op set as a whole: every op is registered with its pattern and builder,
every kernel's output matches its type relation (over dtypes too), kernels
leave their inputs alone, and generic schema errors are clear."""

from __future__ import annotations

import irpass
import numpy as np
import pytest
from irpass import op
from irpass.ir import Call, Op, OpPattern, list_ops, var
from irpass.op.create import arange, one_hot
from irpass.op.indexing import gather, gather_nd
from irpass.op.linalg import det
from irpass.op.nn.depth_space import depth_to_space, space_to_depth
from irpass.op.scatter import scatter_elements, scatter_nd
from irpass.op.sort import topk
from irpass.op.transform import reverse, reverse_sequence, trilu
from op_checks import type_of

RNG = np.random.default_rng(3)
E, BC, INJ, RED, OEF, OPQ = (
    OpPattern.ELEMWISE,
    OpPattern.BROADCAST,
    OpPattern.INJECTIVE,
    OpPattern.COMM_REDUCE,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    OpPattern.OPAQUE,
)

# name -> fusion pattern, as the op set's specification gives them
PATTERNS = {
    **dict.fromkeys(["abs", "log", "exp", "sqrt", "tanh", "sigmoid", "negative", "nn.relu"], E),
    **dict.fromkeys(["erf", "nn.leaky_relu"], E),
    **dict.fromkeys(["add", "subtract", "multiply", "divide", "maximum", "minimum", "power"], BC),
    **dict.fromkeys(["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"], BC),
    "where": BC,
    "clip": E,
    "cast": E,
    "reinterpret": E,
    **dict.fromkeys(
        [
            "reshape",
            "reverse_reshape",
            "transpose",
            "concatenate",
            "split",
            "squeeze",
            "layout_transform",
            "nn.pad",
            "take",
            "strided_slice",
            "tile",
        ],
        INJ,
    ),
    "expand_dims": BC,
    "broadcast_to": BC,
    **dict.fromkeys(["sum", "mean", "max", "min", "prod"], RED),
    **dict.fromkeys(["zeros", "ones", "full", "zeros_like", "ones_like"], E),
    "shape_of": OPQ,
    "dims_tensor": OPQ,
    **dict.fromkeys(
        [
            "nn.conv2d",
            "nn.dense",
            "nn.batch_matmul",
            "nn.max_pool2d",
            "nn.avg_pool2d",
            "nn.global_avg_pool2d",
            "matmul",
            "nn.conv2d_transpose",
        ],
        OEF,
    ),
    "nn.bias_add": BC,
    **dict.fromkeys(["nn.softmax", "nn.batch_norm", "nn.layer_norm", "nn.dropout"], OPQ),
    **dict.fromkeys(["nn.log_softmax", "nn.lrn"], OPQ),
    **dict.fromkeys(["nn.gelu", "nn.silu", "nn.hard_swish"], E),
    **dict.fromkeys(["nn.rms_norm", "nn.attention"], OPQ),
    "nn.rotary_embedding": INJ,
}


def test_every_specified_op_is_registered_with_its_pattern() -> None:
    names = set(list_ops())
    missing = sorted(set(PATTERNS) - names)
    assert not missing, f"ops not registered: {missing}"
    wrong = {n: Op.get(n).pattern for n, p in PATTERNS.items() if Op.get(n).pattern != p}
    assert not wrong


def test_every_core_op_has_a_doc_and_a_builder() -> None:
    for name in PATTERNS:
        o = Op.get(name)
        assert o.doc and o.owner == "irpass", name
        module = op.nn if name.startswith("nn.") else op
        builder = getattr(module, name.removeprefix("nn."))
        assert callable(builder) and builder.__doc__, name
    assert op.get("add") is Op.get("add")


def test_builtins_are_not_shadowed_outside_the_op_modules() -> None:
    import builtins

    assert op.sum is not builtins.sum and op.max is not builtins.max
    assert sum([1, 2]) == 3 and max(1, 2) == 2 and abs(-1) == 1


# -- one representative call per op ------------------------------------------------------------


def r(*shape: int, dtype: str = "float32") -> np.ndarray:
    """Random positive values (safe for log/sqrt/pow)."""
    return (RNG.random(shape) + 0.5).astype(dtype)


V = [var(f"a{i}") for i in range(5)]

CASES: dict[str, tuple] = {
    **{
        n: (lambda n=n: getattr(op, n)(V[0]), [r(2, 3)])
        for n in ["abs", "log", "exp", "sqrt", "tanh", "sigmoid", "erf", "negative"]
    },
    **{
        n: (lambda n=n: getattr(op, n)(V[0], V[1]), [r(2, 1, 3), r(4, 1)])
        for n in [
            "add",
            "subtract",
            "multiply",
            "divide",
            "maximum",
            "minimum",
            "power",
            "equal",
            "not_equal",
            "less",
            "less_equal",
            "greater",
            "greater_equal",
        ]
    },
    "where": (lambda: op.where(V[0], V[1], V[2]), [r(2, 1) > 1.0, r(3), r(1, 3)]),
    "clip": (lambda: op.clip(V[0], 0.7, 1.2), [r(2, 3)]),
    "cast": (lambda: op.cast(V[0], "int16"), [r(2, 3) * 10]),
    "reinterpret": (lambda: op.reinterpret(V[0], "int32"), [r(2, 3)]),
    "qnn.quantize": (lambda: op.qnn.quantize(V[0], V[1], V[2], axis=1),
                     [r(2, 3) * 50, r(3), np.array([1, -2, 3], "int8")]),
    "qnn.dequantize": (lambda: op.qnn.dequantize(V[0], V[1], V[2], out_dtype="float16"),
                       [np.array([[1, 200], [0, 7]], "uint8"), r(), np.array(3, "uint8")]),
    "reshape": (lambda: op.reshape(V[0], (0, -1)), [r(2, 3, 4)]),
    "reverse_reshape": (lambda: op.reverse_reshape(V[0], (-1, 0)), [r(2, 3, 4)]),
    "transpose": (lambda: op.transpose(V[0], (2, 0, 1)), [r(2, 3, 4)]),
    "concatenate": (lambda: op.concatenate([V[0], V[1]], 1), [(r(2, 3), r(2, 2))]),
    "split": (lambda: op.split(V[0], (1, 3), axis=1), [r(2, 4)]),
    "squeeze": (lambda: op.squeeze(V[0]), [r(1, 3, 1)]),
    "expand_dims": (lambda: op.expand_dims(V[0], 1, 2), [r(2, 3)]),
    "layout_transform": (lambda: op.layout_transform(V[0], "NCHW", "NHWC"), [r(1, 2, 3, 4)]),
    "nn.pad": (lambda: op.nn.pad(V[0], ((1, 0), (2, 2)), pad_mode="reflect"), [r(3, 4)]),
    **{
        n: (lambda n=n: getattr(op, n)(V[0], axis=(0, -1), keepdims=True), [r(2, 3, 4)])
        for n in ["sum", "mean", "max", "min", "prod"]
    },
    "zeros": (lambda: op.zeros((2, 3), "int8"), []),
    "ones": (lambda: op.ones((2,), "float64"), []),
    "full": (lambda: op.full(V[0], (2, 2)), [np.array(3, "int32")]),
    "zeros_like": (lambda: op.zeros_like(V[0]), [r(2, 3)]),
    "ones_like": (lambda: op.ones_like(V[0]), [r(2, 3)]),
    "shape_of": (lambda: op.shape_of(V[0], "int64"), [r(2, 3)]),
    "dims_tensor": (lambda: op.dims_tensor((2, 0, 7), "int32"), []),
    "nn.conv2d": (
        lambda: op.nn.conv2d(V[0], V[1], strides=2, padding=1, groups=2),
        [r(1, 4, 7, 7), r(6, 2, 3, 3)],
    ),
    "nn.dense": (lambda: op.nn.dense(V[0], V[1]), [r(2, 5), r(3, 5)]),
    "nn.batch_matmul": (lambda: op.nn.batch_matmul(V[0], V[1]), [r(2, 3, 4), r(1, 5, 4)]),
    "nn.bias_add": (lambda: op.nn.bias_add(V[0], V[1]), [r(2, 3, 4), r(3)]),
    "nn.relu": (lambda: op.nn.relu(V[0]), [r(2, 3) - 1]),
    "nn.softmax": (lambda: op.nn.softmax(V[0]), [r(2, 3)]),
    "nn.batch_norm": (lambda: op.nn.batch_norm(*V), [r(2, 3, 4, 4), r(3), r(3), r(3), r(3)]),
    "nn.layer_norm": (lambda: op.nn.layer_norm(V[0], V[1], V[2]), [r(2, 5), r(5), r(5)]),
    "nn.dropout": (lambda: op.nn.dropout(V[0]), [r(2, 3)]),
    "nn.max_pool2d": (
        lambda: op.nn.max_pool2d(V[0], 3, 2, padding=1, ceil_mode=True),
        [r(1, 2, 6, 6)],
    ),
    "nn.avg_pool2d": (
        lambda: op.nn.avg_pool2d(V[0], 2, 2, layout="NHWC", count_include_pad=True),
        [r(1, 5, 5, 2)],
    ),
    "nn.global_avg_pool2d": (lambda: op.nn.global_avg_pool2d(V[0]), [r(1, 2, 3, 3)]),
    "nn.leaky_relu": (lambda: op.nn.leaky_relu(V[0], 0.2), [r(2, 3) - 1]),
    "nn.log_softmax": (lambda: op.nn.log_softmax(V[0], axis=0), [r(2, 3)]),
    "nn.lrn": (lambda: op.nn.lrn(V[0], size=3, alpha=0.5), [r(1, 4, 2, 2)]),
    "take": (
        lambda: op.take(V[0], V[1], axis=1, mode="wrap"),
        [r(2, 3), np.array([[-1, 0], [2, 5]], "int64")],
    ),
    "strided_slice": (
        lambda: op.strided_slice(V[0], (-1, 0), (-100, 3), (-1, 2), axes=(0, 2)),
        [r(2, 3, 4)],
    ),
    "broadcast_to": (lambda: op.broadcast_to(V[0], (2, 3, 4)), [r(3, 1)]),
    "tile": (lambda: op.tile(V[0], (2, 1, 3)), [r(2, 3)]),
    "matmul": (lambda: op.matmul(V[0], V[1]), [r(2, 1, 3, 4), r(5, 4, 2)]),
    "nn.conv1d": (
        lambda: op.nn.conv1d(V[0], V[1], strides=2, padding=(1, 2), dilation=2, groups=2),
        [r(1, 4, 9), r(6, 2, 3)],
    ),
    "nn.conv3d": (
        lambda: op.nn.conv3d(V[0], V[1], strides=(1, 2, 1), padding=1, data_layout="NDHWC",
                             kernel_layout="DHWIO"),
        [r(1, 4, 5, 4, 2), r(2, 2, 2, 2, 3)],
    ),
    "nn.conv1d_transpose": (
        lambda: op.nn.conv1d_transpose(V[0], V[1], strides=2, padding=(1, 0), output_padding=1),
        [r(1, 3, 4), r(3, 2, 3)],
    ),
    "nn.conv3d_transpose": (
        lambda: op.nn.conv3d_transpose(V[0], V[1], strides=(2, 1, 1), groups=2),
        [r(1, 4, 2, 3, 2), r(4, 1, 2, 2, 2)],
    ),
    "nn.max_pool1d": (lambda: op.nn.max_pool1d(V[0], 3, 2, padding=1, ceil_mode=True),
                      [r(1, 2, 8)]),
    "nn.max_pool3d": (lambda: op.nn.max_pool3d(V[0], 2, 2, dilation=(1, 1, 2)),
                      [r(1, 2, 4, 4, 6)]),
    "nn.avg_pool1d": (lambda: op.nn.avg_pool1d(V[0], 3, padding=1, layout="NWC"), [r(1, 6, 2)]),
    "nn.avg_pool3d": (
        lambda: op.nn.avg_pool3d(V[0], 2, 2, padding=(1, 0, 0), count_include_pad=True),
        [r(1, 2, 3, 4, 4)],
    ),
    "image.resize1d": (
        lambda: op.image.resize1d(V[0], (7,), method="cubic", cubic_alpha=-0.75,
                                  scales=(1.5,)),
        [r(1, 2, 5)],
    ),
    "image.resize2d": (
        lambda: op.image.resize2d(V[0], (3, 5), roi=(0.1, 0.0, 0.9, 1.2), layout="NHWC",
                                  coordinate_transformation_mode="tf_crop_and_resize",
                                  extrapolation_value=-1.0),
        [r(1, 4, 4, 2)],
    ),
    "image.resize3d": (
        lambda: op.image.resize3d(V[0], (1, 4, 2), method="nearest_neighbor",
                                  rounding_method="round_prefer_ceil"),
        [r(1, 1, 2, 3, 4)],
    ),
    "image.grid_sample": (
        lambda: op.image.grid_sample(V[0], V[1], method="bicubic", padding_mode="reflection"),
        [r(1, 2, 3, 4), r(1, 2, 2, 5) * 2 - 2],
    ),
    "vision.roi_align": (
        lambda: op.vision.roi_align(V[0], V[1], (2, 3), 0.5, mode="max", aligned=True),
        [r(2, 3, 6, 5), np.array([[1, 0, 1, 6, 9], [0, 2, 2, 3, 4]], "float32")],
    ),
    "vision.roi_pool": (
        lambda: op.vision.roi_pool(V[0], V[1], (2, 3), 0.5, layout="NHWC"),
        [r(2, 6, 5, 3), np.array([[1, 0, 1, 6, 9], [0, 2, 2, 3, 4]], "float32")],
    ),
    "nn.conv2d_transpose": (
        lambda: op.nn.conv2d_transpose(
            V[0], V[1], strides=2, padding=1, output_padding=1, groups=2
        ),
        [r(1, 4, 3, 3), r(4, 3, 3, 3)],
    ),
    # -- issue 19's ops: math, logic and bits ------------------------------------------------
    **{
        n: (lambda n=n: getattr(op, n)(V[0]), [r(2, 3) * 4 - 3])
        for n in ["sin", "cos", "tan", "atan", "sinh", "cosh", "asinh"]
        + ["floor", "ceil", "trunc", "round", "sign", "isnan", "isinf"]
    },
    **{n: (lambda n=n: getattr(op, n)(V[0]), [r(2, 3) - 1]) for n in ["asin", "acos", "atanh"]},
    "acosh": (lambda: op.acosh(V[0]), [r(2, 3) + 1]),
    **{
        n: (lambda n=n: getattr(op, n)(V[0], V[1]), [r(2, 3) * 6 - 4, r(3) * 2 - 1.5])
        for n in ["floor_mod", "trunc_mod"]
    },
    "logical_not": (lambda: op.logical_not(V[0]), [r(2, 3) > 1.0]),
    **{
        n: (lambda n=n: getattr(op, n)(V[0], V[1]), [r(2, 1) > 1.0, r(3) > 1.0])
        for n in ["logical_and", "logical_or", "logical_xor"]
    },
    "bitwise_not": (lambda: op.bitwise_not(V[0]), [np.array([[0, 5, -3], [7, 1, 2]], "int32")]),
    **{
        n: (
            lambda n=n: getattr(op, n)(V[0], V[1]),
            [np.array([[0, 5, 3], [7, 1, 2]], "int32"), np.array([1, 0, 3], "int32")],
        )
        for n in ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]
    },
    # -- reductions, scans, linear algebra -----------------------------------------------------
    "argmax": (lambda: op.argmax(V[0], axis=(0, -1), keepdims=True), [r(2, 3, 4)]),
    "argmin": (lambda: op.argmin(V[0], axis=1, select_last_index=True), [np.round(r(2, 3, 4))]),
    "cumsum": (lambda: op.cumsum(V[0], axis=1, exclusive=True), [r(2, 3)]),
    "cumprod": (lambda: op.cumprod(V[0]), [r(2, 3)]),
    "einsum": (lambda: op.einsum([V[0], V[1]], "bij,jk->bki"), [(r(2, 3, 4), r(4, 5))]),
    "linalg.det": (lambda: det(V[0]), [r(2, 3, 3)]),
    # -- indexing, creation, data movement ---------------------------------------------------
    "gather": (
        lambda: gather(V[0], 1, V[1]),
        [r(3, 4), np.array([[0, 1, 3], [2, 2, 1]], "int64")],
    ),
    "gather_nd": (
        lambda: gather_nd(V[0], V[1]),
        [r(3, 4, 2), np.array([[0, 2, 1], [3, 0, 1]], "int32")],
    ),
    "scatter_elements": (
        lambda: scatter_elements(V[0], V[1], V[2], axis=1, reduction="add"),
        [r(3, 4), np.array([[0, 3], [2, 2]], "int64"), r(2, 2)],
    ),
    "scatter_nd": (
        lambda: scatter_nd(V[0], V[1], V[2]),
        [r(3, 4), np.array([[2, 0]], "int64"), r(2, 4)],
    ),
    "topk": (lambda: topk(V[0], k=2, axis=0), [r(3, 4)]),
    "arange": (lambda: arange(1, 8, 2, dtype="int32"), []),
    "one_hot": (
        lambda: one_hot(V[0], V[1], V[2], depth=4, axis=0),
        [np.array([[0, 3], [1, 5]], "int64"), np.array(2.0, "float32"), np.array(-1.0, "float32")],
    ),
    "reverse": (lambda: reverse(V[0], axis=-1), [r(2, 3)]),
    "reverse_sequence": (
        lambda: reverse_sequence(V[0], V[1], seq_axis=0, batch_axis=1),
        [r(4, 3), np.array([2, 4, 1], "int32")],
    ),
    "trilu": (lambda: trilu(V[0], V[1], upper=False), [r(3, 4), np.array(1, "int64")]),
    "nn.depth_to_space": (lambda: depth_to_space(V[0], 2, mode="CRD"), [r(1, 8, 2, 3)]),
    "nn.space_to_depth": (lambda: space_to_depth(V[0], 2, layout="NHWC"), [r(1, 4, 6, 2)]),
    # -- nn --------------------------------------------------------------------------------------
    "nn.group_norm": (
        lambda: op.nn.norm.group_norm(*V[:3], num_groups=2), [r(2, 4, 3), r(4), r(4)]
    ),
    "nn.instance_norm": (
        lambda: op.nn.norm.instance_norm(*V[:3], axis=-1), [r(2, 3, 4), r(4), r(4)]
    ),
    # -- fused transformer ops (issue 21) ---------------------------------------------------------
    "nn.gelu": (lambda: op.nn.gelu(V[0], approximate="tanh"), [r(2, 3) * 4 - 3]),
    "nn.silu": (lambda: op.nn.silu(V[0]), [r(2, 3) * 4 - 3]),
    "nn.hard_swish": (lambda: op.nn.hard_swish(V[0]), [r(2, 3) * 8 - 5]),
    "nn.rms_norm": (lambda: op.nn.rms_norm(V[0], V[1], axes=(2, 1)), [r(2, 3, 4), r(4, 3)]),
    "nn.attention": (
        lambda: op.nn.attention(V[0], V[1], V[2], V[3], is_causal=True),
        [r(2, 4, 3, 8), r(2, 2, 5, 8), r(2, 2, 5, 6), r(1, 3, 5) > 1.0],
    ),
    "nn.rotary_embedding": (
        lambda: op.nn.rotary_embedding(V[0], V[1], V[2]), [r(2, 3, 4, 6), r(3, 1, 6), r(3, 1, 6)]
    ),
}


def read_only(value):
    """A read-only copy, like the data of a Constant."""
    if isinstance(value, tuple):
        return tuple(read_only(v) for v in value)
    value = np.array(value)
    value.setflags(write=False)
    return value


def core_ops() -> list[str]:
    """Every op the core registered (plugins and tests may add more)."""
    return [n for n in list_ops() if Op.get(n).owner == "irpass"]


def test_every_core_op_has_a_consistency_case() -> None:
    assert sorted(set(core_ops()) - set(CASES)) == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_result_matches_type_relation(name: str) -> None:
    build, inputs = CASES[name]
    call = build()
    assert call.op is Op.get(name)
    inputs = [read_only(v) for v in inputs]
    before = [type_of(v) for v in inputs]
    snapshot = [np.copy(v) if not isinstance(v, tuple) else tuple(map(np.copy, v)) for v in inputs]
    ty = call.op.type_rel(tuple(before), call.attrs)
    out = call.op.kernel(tuple(inputs), call.attrs)
    assert type_of(out) == ty
    for value, saved in zip(inputs, snapshot, strict=True):
        for a, b in zip(
            value if isinstance(value, tuple) else (value,),
            saved if isinstance(saved, tuple) else (saved,),
            strict=True,
        ):
            np.testing.assert_array_equal(a, b)


DTYPES = [
    "bool",
    "int8",
    "uint8",
    "int16",
    "int32",
    "int64",
    "uint64",
    "float16",
    "float32",
    "float64",
]


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_dtype_matches_type_relation_for_every_dtype(name: str) -> None:
    """Whatever dtype the type relation accepts, the kernel must return exactly that type
    (numpy upcasts integer sums, float16 math, int division...)."""
    build, inputs = CASES[name]
    call = build()
    accepted = 0
    for dtype in DTYPES:

        def conv(v, dtype=dtype):
            if isinstance(v, tuple):
                return tuple(conv(x) for x in v)
            return v if v.dtype == bool and name == "where" else v.astype(dtype)

        # a qnn op's scale and zero point have dtypes of their own: only its data varies
        values = [v if k and name.startswith("qnn.") else conv(v) for k, v in enumerate(inputs)]
        if name == "full":
            values = [np.array(1, dtype)]
        try:
            ty = call.op.type_rel(tuple(type_of(v) for v in values), call.attrs)
        except TypeError:
            continue  # this dtype is not allowed for the op
        accepted += 1
        with np.errstate(all="ignore"):
            out = call.op.kernel(tuple(values), call.attrs)
        assert type_of(out) == ty, dtype
    assert accepted >= 1


# -- generic errors from the schema ------------------------------------------------------------


def test_wrong_argument_count() -> None:
    x = var("x")
    with pytest.raises(ValueError, match="op 'add' takes 2 argument.s., got 1"):
        Call(Op.get("add"), [x])
    with pytest.raises(ValueError, match="op 'nn.batch_norm' takes 5 argument.s., got 3"):
        Call(Op.get("nn.batch_norm"), [x, x, x])
    with pytest.raises(TypeError):
        op.nn.conv2d(x)  # the builder's own signature


def test_unknown_missing_and_bad_attributes() -> None:
    x = var("x")
    with pytest.raises(
        ValueError, match="op 'nn.softmax' has no attribute 'axes'; did you mean axis"
    ):
        Call(Op.get("nn.softmax"), [x], {"axes": 1})
    with pytest.raises(ValueError, match="op 'expand_dims' requires attribute 'axis'"):
        Call(Op.get("expand_dims"), [x], {})
    with pytest.raises(TypeError, match="nn.softmax.axis must be an int, got 'last'"):
        op.nn.softmax(x, axis="last")
    with pytest.raises(ValueError, match="op 'abs' takes no attributes"):
        Call(Op.get("abs"), [x], {"axis": 1})


def test_builder_rejects_non_expressions() -> None:
    with pytest.raises(TypeError, match="add: rhs must be an expression, got str"):
        op.add(var("x"), "y")


def test_operator_overloads_use_the_registered_ops() -> None:
    x = irpass.var("x", shape=(2,))
    assert (x + x).op is Op.get("add") and (x / 2.0).op is Op.get("divide")
    assert (-x).op is Op.get("negative")


# -- text round trip ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_call_round_trips_through_the_text_format(name: str) -> None:
    """Every op's representative call (its attributes included) prints and parses back,
    and the parsed program computes the same values."""
    build, inputs = CASES[name]
    call = build()
    params = [var(f"p{i}", type_of(value)) for i, value in enumerate(inputs)]
    body = Call(call.op, params, call.attrs)
    mod = irpass.ir.IRModule({"main": irpass.ir.Function(params, body)})
    text = str(mod)
    back = irpass.ir.parse(text)
    irpass.ir.assert_structural_equal(back, mod)
    assert str(back) == text
    with np.errstate(all="ignore"):
        want, got = irpass.evaluate(mod, *inputs), irpass.evaluate(back, *inputs)
    for a, b in zip(
        want if isinstance(want, tuple) else (want,),
        got if isinstance(got, tuple) else (got,),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
