"""Import of the ONNX tensor ops (frontend/tensor.py): small models at the opsets where the ops
changed, run by irpass.evaluate and compared with onnxruntime (graph optimizations off)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from irpass.ir import Constant
from irpass_onnx import OnnxImportError, from_onnx
from onnx import TensorProto as TP
from onnx import helper
from onnx_cases import check, elem_type, make_model, ops_in, rand

F32 = TP.FLOAT
I64 = TP.INT64


# -- helpers -----------------------------------------------------------------------------------


def unary_model(op, x, opset, out=F32, extra_inputs=None, inits=None, **attrs):
    ins = ["x", *(extra_inputs or [])]
    return make_model([helper.make_node(op, ins, ["y"], **attrs)], {"x": x}, {"y": out}, opset,
                      inits)


# -- Reshape / Flatten / Transpose -------------------------------------------------------------


@pytest.mark.parametrize("opset", [5, 13, 14])
@pytest.mark.parametrize("shape", [[0, -1], [-1, 2, 2], [6, 4], [0, 0, 2, 2]])
def test_reshape(opset, shape):
    x = rand(2, 3, 4)
    model = unary_model("Reshape", x, opset, extra_inputs=["s"],
                        inits={"s": np.array(shape, np.int64)})
    check(model, {"x": x})


def test_reshape_opset1_attr():
    x = rand(2, 3, 4)
    model = unary_model("Reshape", x, 1, shape=[0, -1])
    check(model, {"x": x}, ref=[x.reshape(2, 12)])


def test_reshape_allowzero():
    x = np.zeros((0, 3), np.float32)
    model = unary_model("Reshape", x, 14, extra_inputs=["s"], allowzero=1,
                        inits={"s": np.array([3, 0], np.int64)})
    check(model, {"x": x})


def test_reshape_shape_not_constant_names_node():
    x = rand(2, 3)
    model = make_model([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
                       {"x": x, "s": np.array([3, 2], np.int64)}, {"y": F32}, 13)
    with pytest.raises(OnnxImportError, match=r"node 0 'rs' \(Reshape\).*shape.*runtime value.*"
                                              r"no static shape for output 0 'y'"):
        from_onnx(model)


@pytest.mark.parametrize("shape", [[-2, 3], [-1, -1], [5, 5]])
def test_reshape_bad_shape(shape):
    x = rand(2, 3)
    model = unary_model("Reshape", x, 13, extra_inputs=["s"],
                        inits={"s": np.array(shape, np.int64)})
    with pytest.raises(OnnxImportError, match=r"\(Reshape\)"):
        from_onnx(model)


@pytest.mark.parametrize(("opset", "axis"), [(9, 0), (9, 2), (11, -1), (13, 3), (13, 1)])
def test_flatten(opset, axis):
    x = rand(2, 3, 4)
    check(unary_model("Flatten", x, opset, axis=axis) if axis != 1 else
          unary_model("Flatten", x, opset), {"x": x})


@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1], [0, 1, 2]])
def test_transpose(perm):
    x = rand(2, 3, 4)
    attrs = {} if perm is None else {"perm": perm}
    check(unary_model("Transpose", x, 13, **attrs), {"x": x})


def test_transpose_bad_perm():
    x = rand(2, 3)
    with pytest.raises(OnnxImportError, match="perm"):
        from_onnx(unary_model("Transpose", x, 13, perm=[0, 0]))


# -- Squeeze / Unsqueeze -----------------------------------------------------------------------


@pytest.mark.parametrize("axes", [None, [0], [-1, 0], [2]])
def test_squeeze_attr(axes):
    x = rand(1, 3, 1, 1)
    attrs = {} if axes is None else {"axes": axes}
    check(unary_model("Squeeze", x, 11, **attrs), {"x": x})


@pytest.mark.parametrize("axes", [None, [0], [-1, 0]])
def test_squeeze_input(axes):
    x = rand(1, 3, 1)
    if axes is None:
        model = unary_model("Squeeze", x, 13)
    else:
        model = unary_model("Squeeze", x, 13, extra_inputs=["a"],
                            inits={"a": np.array(axes, np.int64)})
    check(model, {"x": x})


def test_squeeze_not_one():
    x = rand(1, 3)
    with pytest.raises(OnnxImportError, match="cannot squeeze axis 1 of size 3"):
        from_onnx(unary_model("Squeeze", x, 11, axes=[1]))


@pytest.mark.parametrize("axes", [[0], [0, 3], [-1], [1, 2], [4, 0, 2]])
def test_unsqueeze_attr_and_input(axes):
    x = rand(2, 3)
    check(unary_model("Unsqueeze", x, 11, axes=axes), {"x": x})
    check(unary_model("Unsqueeze", x, 13, extra_inputs=["a"],
                      inits={"a": np.array(axes, np.int64)}), {"x": x})


def test_unsqueeze_bad_axes():
    x = rand(2, 3)
    with pytest.raises(OnnxImportError, match="out of range"):
        from_onnx(unary_model("Unsqueeze", x, 11, axes=[5]))
    with pytest.raises(OnnxImportError, match="twice"):
        from_onnx(unary_model("Unsqueeze", x, 11, axes=[1, -3]))


# -- Shape and shape arithmetic ----------------------------------------------------------------


@pytest.mark.parametrize(("opset", "attrs"), [
    (13, {}), (15, {}), (15, {"start": 1}), (15, {"start": -2, "end": -1}),
    (15, {"end": 10}), (15, {"start": 2, "end": 1}),
])
def test_shape(opset, attrs):
    x = rand(2, 3, 4)
    mod = check(unary_model("Shape", x, opset, out=I64, **attrs), {"x": x})
    assert isinstance(mod["main"].body, Constant)


def test_size():
    x = rand(2, 3, 4)
    check(unary_model("Size", x, 13, out=I64), {"x": x})


def test_shape_arithmetic_becomes_constants():
    # x.reshape(x.shape[0] * x.shape[1], -1) spelled the way exporters spell it
    x = rand(2, 3, 4)
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["d0"], axis=0),
        helper.make_node("Gather", ["s", "i1"], ["d1"], axis=0),
        helper.make_node("Mul", ["d0", "d1"], ["d01"]),
        helper.make_node("Unsqueeze", ["d01", "ax"], ["d01u"]),
        helper.make_node("Slice", ["s", "st", "en"], ["tail"]),
        helper.make_node("Cast", ["tail"], ["tailc"], to=I64),
        helper.make_node("ReduceProd", ["tailc"], ["rest"], keepdims=1),
        helper.make_node("Concat", ["d01u", "rest"], ["ns"], axis=0),
        helper.make_node("Reshape", ["x", "ns"], ["y"]),
    ]
    inits = {"i0": np.array(0, np.int64), "i1": np.array(1, np.int64),
             "ax": np.array([0], np.int64), "st": np.array([2], np.int64),
             "en": np.array([np.iinfo(np.int64).max], np.int64)}
    model = make_model(nodes, {"x": x}, {"y": F32}, 13, inits)
    mod = check(model, {"x": x})
    assert ops_in(mod) == ["reshape"]
    assert tuple(mod["main"].body.attrs["newshape"]) == (6, 4)


# -- Gather ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("axis", "indices"), [
    (0, np.array([1, -1, 0], np.int64)),
    (1, np.array([[2, -3], [0, 1]], np.int64)),
    (-1, np.array(-2, np.int64)),
    (2, np.array([3, 0], np.int32)),
])
def test_gather_constant_indices(axis, indices):
    x = rand(3, 4, 5)
    model = unary_model("Gather", x, 13, extra_inputs=["i"], inits={"i": indices}, axis=axis)
    mod = check(model, {"x": x})
    take = [e for e in ops_in(mod) if e == "take"]
    assert take == ["take"]


def test_gather_runtime_indices():
    x = rand(3, 4, 5)
    idx = np.array([[0, -1], [-4, 3]], np.int64)
    model = make_model([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)],
                       {"x": x, "i": idx}, {"y": F32}, 13)
    check(model, {"x": x, "i": idx})


def test_gather_out_of_range_constant():
    x = rand(3, 4)
    model = unary_model("Gather", x, 13, extra_inputs=["i"],
                        inits={"i": np.array([4], np.int64)}, axis=1)
    with pytest.raises(OnnxImportError, match="index 4 is out of range for axis 1 of size 4"):
        from_onnx(model)


def test_gather_of_constant_int_data_is_folded():
    x = rand(2, 3)
    nodes = [helper.make_node("Gather", ["c", "i"], ["g"], axis=0),
             helper.make_node("Reshape", ["x", "g"], ["y"])]
    inits = {"c": np.array([[3, 2], [6, 1]], np.int64), "i": np.array(1, np.int64)}
    mod = check(make_model(nodes, {"x": x}, {"y": F32}, 13, inits), {"x": x})
    assert ops_in(mod) == ["reshape"]


# -- Slice -------------------------------------------------------------------------------------

BIG = np.iinfo(np.int64).max


@pytest.mark.parametrize(("starts", "ends", "axes"), [
    ([0, 1], [2, 3], None), ([1], [-1], [2]), ([-2], [BIG], [-1]), ([0], [0], [0]),
])
def test_slice_opset9_attrs(starts, ends, axes):
    x = rand(3, 4, 5)
    attrs = {"starts": starts, "ends": ends}
    if axes is not None:
        attrs["axes"] = axes
    ref = x
    for k, (s, e) in enumerate(zip(starts, ends, strict=True)):
        a = axes[k] if axes else k
        idx = [slice(None)] * 3
        idx[a] = slice(s, e)
        ref = ref[tuple(idx)]
    check(unary_model("Slice", x, 9, **attrs), {"x": x})
    check(unary_model("Slice", x, 9, **attrs), {"x": x}, ref=[ref])


_SLICES = [
    ([0], [2], None, None),
    ([1, 0], [BIG, 4], [0, 2], [1, 2]),
    ([-1], [-BIG - 1], [1], [-1]),
    ([3, 4], [0, -10], [-2, -1], [-2, -3]),
    ([10], [20], [2], [1]),
    ([0, 0, 0], [BIG, BIG, BIG], None, None),
]


# negative axes arrived in opset 11: opset 10 gets only the cases without them
@pytest.mark.parametrize(("opset", "starts", "ends", "axes", "steps"), [
    (opset, *case) for opset in (10, 11, 13) for case in _SLICES
    if not (opset == 10 and case[2] is not None and min(case[2]) < 0)
])
def test_slice_inputs(opset, starts, ends, axes, steps):
    x = rand(3, 4, 5)
    names = ["st", "en"]
    inits = {"st": np.array(starts, np.int64), "en": np.array(ends, np.int64)}
    if axes is not None or steps is not None:
        names.append("ax")
        inits["ax"] = np.array(axes if axes is not None else list(range(len(starts))), np.int64)
    if steps is not None:
        names.append("sp")
        inits["sp"] = np.array(steps, np.int64)
    check(unary_model("Slice", x, opset, extra_inputs=names, inits=inits), {"x": x})


def test_slice_step_zero():
    x = rand(3, 4)
    inits = {"st": np.array([0], np.int64), "en": np.array([2], np.int64),
             "ax": np.array([0], np.int64), "sp": np.array([0], np.int64)}
    with pytest.raises(OnnxImportError, match="step of axis 0 is 0"):
        from_onnx(unary_model("Slice", x, 13, extra_inputs=["st", "en", "ax", "sp"],
                              inits=inits))


def test_slice_runtime_starts_names_node():
    x = rand(3, 4)
    model = make_model([helper.make_node("Slice", ["x", "st", "en"], ["y"], name="sl")],
                       {"x": x, "st": np.array([0], np.int64)}, {"y": F32}, 13,
                       {"en": np.array([2], np.int64)})
    with pytest.raises(OnnxImportError, match=r"'sl' \(Slice\): input 1 \(starts"):
        from_onnx(model)


# -- Constant / ConstantOfShape ----------------------------------------------------------------


@pytest.mark.parametrize(("attr", "value", "dtype"), [
    ("value", onnx.numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3)), None),
    ("value", onnx.numpy_helper.from_array(np.array([1, -2], np.int32)), None),
    ("value_float", 2.5, np.float32),
    ("value_floats", [1.0, 2.0], np.float32),
    ("value_int", 7, np.int64),
    ("value_ints", [3, 4, 5], np.int64),
])
def test_constant(attr, value, dtype):
    x = rand(2)
    node = helper.make_node("Constant", [], ["y"], **{attr: value})
    if attr == "value":
        want = onnx.numpy_helper.to_array(value)
    else:
        want = np.array(value, dtype)
    model = make_model([node], {"x": x}, {"y": elem_type(want)}, 13)
    mod = check(model, {"x": x})
    assert isinstance(mod["main"].body, Constant)


def test_constant_string_rejected():
    node = helper.make_node("Constant", [], ["y"], value_string="hi", name="c")
    model = make_model([node], {"x": rand(2)}, {"y": TP.STRING}, 13)
    with pytest.raises(OnnxImportError, match=r"'c' \(Constant\).*value_string"):
        from_onnx(model)


@pytest.mark.parametrize("materialize", [True, False])
@pytest.mark.parametrize(("value", "shape"), [
    (None, [2, 3]),
    (np.array([0.5], np.float32), [4]),
    (np.array([7], np.int64), [2, 2]),
    (np.array([1.5], np.float32), []),
])
def test_constant_of_shape(materialize, value, shape):
    attrs = {} if value is None else {"value": onnx.numpy_helper.from_array(value)}
    node = helper.make_node("ConstantOfShape", ["s"], ["y"], **attrs)
    out = F32 if value is None else elem_type(value)
    x = rand(2)
    model = make_model([node], {"x": x}, {"y": out}, 13, {"s": np.array(shape, np.int64)})
    mod = check(model, {"x": x}, materialize_constant_of_shape=materialize)
    float_out = value is None or value.dtype.kind == "f"
    if materialize or not float_out:  # integer results are folded at import anyway
        assert isinstance(mod["main"].body, Constant)
    else:
        assert ops_in(mod) == ["full"]


def test_constant_of_shape_feeding_math_stays_full():
    x = rand(2, 3)
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["c"],
                              value=onnx.numpy_helper.from_array(np.array([0.02], np.float32))),
             helper.make_node("Add", ["x", "c"], ["y"])]
    model = make_model(nodes, {"x": x}, {"y": F32}, 13, {"s": np.array([2, 3], np.int64)})
    assert ops_in(check(model, {"x": x}, materialize_constant_of_shape=False)) == ["full", "add"]
    assert ops_in(check(model, {"x": x}, materialize_constant_of_shape=True)) == ["add"]


# -- Identity / Cast ---------------------------------------------------------------------------


def test_identity():
    x = rand(2, 3)
    mod = check(unary_model("Identity", x, 13), {"x": x})
    assert ops_in(mod) == []


@pytest.mark.parametrize(("src", "to"), [
    (np.float32, TP.INT32), (np.float32, TP.INT64), (np.int64, TP.FLOAT),
    (np.float32, TP.BOOL), (np.float32, TP.FLOAT16), (np.float32, TP.DOUBLE),
    (np.int32, TP.INT32),
])
def test_cast(src, to):
    x = (rand(3, 4) * 10).astype(src)
    check(unary_model("Cast", x, 13, out=to, to=to), {"x": x})


def test_cast_opset1_string_to():
    x = rand(3) * 10
    check(unary_model("Cast", x, 1, out=I64, to="INT64"), {"x": x},
          ref=[x.astype(np.int64)])


def test_cast_unsupported_type():
    with pytest.raises(OnnxImportError, match=r"\(Cast\).*STRING"):
        from_onnx(unary_model("Cast", rand(2), 13, out=TP.STRING, to=TP.STRING))


# -- Concat / Split ----------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    xs = {f"x{i}": rand(2, 3, 4, seed=i) for i in range(3)}
    model = make_model([helper.make_node("Concat", list(xs), ["y"], axis=axis)], xs, {"y": F32},
                       13)
    check(model, xs)


def _split_model(opset, n, split=None, as_input=False, shape=(4, 6), **attrs):
    x = rand(*shape)
    ins = ["x"]
    inits = {}
    if split is not None:
        if as_input:
            ins.append("sp")
            inits["sp"] = np.array(split, np.int64)
        else:
            attrs["split"] = split
    outs = {f"y{i}": F32 for i in range(n)}
    node = helper.make_node("Split", ins, list(outs), **attrs)
    return make_model([node], {"x": x}, outs, opset, inits), x


@pytest.mark.parametrize(("opset", "n", "split", "as_input", "attrs"), [
    (11, 2, None, False, {"axis": 1}),
    (11, 3, [1, 2, 3], False, {"axis": -1}),
    (13, 2, [3, 1], True, {}),
    (13, 3, None, False, {"axis": 1}),
    (18, 3, None, False, {"axis": 1, "num_outputs": 3}),
    (18, 3, None, False, {"axis": 1, "num_outputs": 3, "shape": (2, 7)}),
    (18, 2, [2, 4], True, {"axis": 1}),
    (13, 1, None, False, {}),
])
def test_split(opset, n, split, as_input, attrs):
    model, x = _split_model(opset, n, split, as_input, **attrs)
    check(model, {"x": x})


def test_split_num_outputs_too_many():
    model, _ = _split_model(18, 4, axis=1, num_outputs=4)
    with pytest.raises(OnnxImportError, match="cannot split axis 1 of size 6 into 4 pieces"):
        from_onnx(model)


def test_split_uneven_without_sizes():
    model, _ = _split_model(13, 4, axis=1)
    with pytest.raises(OnnxImportError, match="does not split into 4 equal pieces"):
        from_onnx(model)


def test_split_sizes_do_not_add_up():
    model, _ = _split_model(11, 2, [1, 2], axis=1)
    with pytest.raises(OnnxImportError, match=r"split \[1, 2\] does not add up"):
        from_onnx(model)


# -- Expand / Tile -----------------------------------------------------------------------------


@pytest.mark.parametrize(("xshape", "shape"), [
    ((3, 1), [2, 1, 4]), ((3, 4), [4]), ((1,), [2, 3]), ((2, 3), [1, 1]), ((2, 1, 3), [2, 5, 3]),
])
def test_expand(xshape, shape):
    x = rand(*xshape)
    check(unary_model("Expand", x, 13, extra_inputs=["s"],
                      inits={"s": np.array(shape, np.int64)}), {"x": x})


def test_expand_incompatible():
    model = unary_model("Expand", rand(3, 2), 13, extra_inputs=["s"],
                        inits={"s": np.array([4, 2], np.int64)})
    with pytest.raises(OnnxImportError, match=r"\(Expand\).*does not broadcast"):
        from_onnx(model)


@pytest.mark.parametrize("reps", [[1, 1], [2, 3], [1, 2], [3, 1]])
def test_tile(reps):
    x = rand(2, 3)
    check(unary_model("Tile", x, 13, extra_inputs=["r"], inits={"r": np.array(reps, np.int64)}),
          {"x": x})


# -- Pad ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_opset2_attrs(mode):
    x = rand(1, 2, 3, 4)
    pads = [0, 0, 1, 2, 0, 0, 2, 1]
    model = unary_model("Pad", x, 2, pads=pads, mode=mode, value=1.5)
    width = list(zip(pads[:4], pads[4:], strict=True))
    kw = {"constant_values": 1.5} if mode == "constant" else {}
    check(model, {"x": x}, ref=[np.pad(x, width, mode=mode, **kw)])


@pytest.mark.parametrize("opset", [11, 13, 18])
@pytest.mark.parametrize(("mode", "pads", "value"), [
    ("constant", [0, 1, 2, 0, 1, 0], 2.0),
    ("constant", [1, 0, 0, 1, 2, 3], None),
    ("reflect", [0, 1, 2, 1, 2, 1], None),
    ("edge", [2, 0, 1, 0, 3, 1], None),
    ("constant", [0, -1, 1, -1, 2, -2], 0.5),
    ("edge", [0, 0, 0, 0, 0, 0], None),
])
def test_pad_inputs(opset, mode, pads, value):
    x = rand(2, 3, 5)
    ins = ["p"]
    inits = {"p": np.array(pads, np.int64)}
    if value is not None:
        ins.append("v")
        inits["v"] = np.array(value, np.float32)
    check(unary_model("Pad", x, opset, extra_inputs=ins, inits=inits, mode=mode), {"x": x})


def test_pad_axes_opset18():
    x = rand(2, 3, 5)
    inits = {"p": np.array([1, 2, 3, 0], np.int64), "v": np.array(1.0, np.float32),
             "a": np.array([-1, 0], np.int64)}
    check(unary_model("Pad", x, 18, extra_inputs=["p", "v", "a"], inits=inits), {"x": x})


@pytest.mark.parametrize(("mode", "pads"), [
    ("constant", [0, 1, 2, 0, 1, 0]), ("constant", [1, -1, 0, 0, 2, 1]),
    ("edge", [1, 0, 0, 0, 1, 2]),
])
@pytest.mark.parametrize("vshape", [(), (1,)])
def test_pad_runtime_constant_value(mode, pads, vshape):
    # the fill value does not shape the output: a graph input stays a runtime operand
    x, v = rand(2, 3, 5), np.full(vshape, -2.5, np.float32)
    model = make_model([helper.make_node("Pad", ["x", "p", "v"], ["y"], mode=mode)],
                       {"x": x, "v": v}, {"y": F32}, 13, {"p": np.array(pads, np.int64)})
    check(model, {"x": x, "v": v})


@pytest.mark.parametrize("pads", [[1, 1, 1, 1], [0, 2, 3, 0], [4, 0, 0, 7], [1, -1, 0, 2]])
def test_pad_wrap(pads):
    x = rand(2, 3)
    model = unary_model("Pad", x, 19, extra_inputs=["p"],
                        inits={"p": np.array(pads, np.int64)}, mode="wrap")
    if min(pads) >= 0:
        check(model, {"x": x})
    # the spec's numpy.pad, cropping the negative pads after
    width = [(max(pads[0], 0), max(pads[2], 0)), (max(pads[1], 0), max(pads[3], 0))]
    want = np.pad(x, width, mode="wrap")
    want = want[:, max(-pads[1], 0):] if pads[1] < 0 else want
    check(model, {"x": x}, ref=[want])


def test_pad_unknown_mode():
    model = unary_model("Pad", rand(2, 3), 19, extra_inputs=["p"],
                        inits={"p": np.array([1, 1, 1, 1], np.int64)}, mode="mirror")
    with pytest.raises(OnnxImportError, match="mode 'mirror' is not supported"):
        from_onnx(model)


# -- Where / Clip ------------------------------------------------------------------------------


def test_where():
    c = rand(3, 1, seed=1) > 0
    a, b = rand(1, 4, seed=2), rand(3, 4, seed=3)
    model = make_model([helper.make_node("Where", ["c", "a", "b"], ["y"])],
                       {"c": c, "a": a, "b": b}, {"y": F32}, 16)
    check(model, {"c": c, "a": a, "b": b})


@pytest.mark.parametrize("attrs", [{}, {"min": -0.5}, {"max": 0.3}, {"min": -0.2, "max": 0.7}])
def test_clip_opset6(attrs):
    x = rand(3, 4)
    check(unary_model("Clip", x, 6, **attrs), {"x": x})


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize(("lo", "hi"), [(None, None), (-0.5, None), (None, 0.25), (-1.0, 1.0),
                                        (0.5, -0.5)])
def test_clip_inputs(opset, lo, hi):
    x = rand(3, 4)
    ins = ["" if lo is None else "lo", "" if hi is None else "hi"]
    inits = {n: np.array(v, np.float32) for n, v in (("lo", lo), ("hi", hi)) if v is not None}
    while ins and ins[-1] == "":
        ins.pop()
    check(unary_model("Clip", x, opset, extra_inputs=ins, inits=inits), {"x": x})


def test_clip_runtime_bounds():
    x, lo, hi = rand(3, 4), np.array(-0.3, np.float32), np.array(0.4, np.float32)
    model = make_model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
                       {"x": x, "lo": lo, "hi": hi}, {"y": F32}, 13)
    mod = check(model, {"x": x, "lo": lo, "hi": hi})
    assert ops_in(mod) == ["maximum", "minimum"]


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_clip_int(dtype):
    x = (rand(3, 4) * 10).astype(dtype)
    inits = {"lo": np.array(-3, dtype), "hi": np.array(4, dtype)}
    check(unary_model("Clip", x, 13, out=elem_type(x), extra_inputs=["lo", "hi"], inits=inits),
          {"x": x})


# -- the input model -----------------------------------------------------------------------------


def test_model_with_many_ops_is_not_mutated():
    x = rand(1, 2, 3, 4)
    nodes = [
        helper.make_node("Pad", ["x", "p"], ["a"], mode="edge"),
        helper.make_node("Transpose", ["a"], ["b"], perm=[0, 2, 3, 1]),
        helper.make_node("Flatten", ["b"], ["c"], axis=2),
        helper.make_node("Split", ["c"], ["d", "e"], axis=1),
        helper.make_node("Concat", ["e", "d"], ["f"], axis=0),
        helper.make_node("Unsqueeze", ["f", "ax"], ["y"]),
    ]
    inits = {"p": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "ax": np.array([0], np.int64)}
    model = make_model(nodes, {"x": x}, {"y": F32}, 13, inits)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    check(model, {"x": x})
    assert model == copy
