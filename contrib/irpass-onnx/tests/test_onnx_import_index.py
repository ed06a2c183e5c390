"""Import of the ONNX indexing, scatter, selection, creation and block ops (frontend/tensor.py):
GatherElements, GatherND, ScatterElements/Scatter, ScatterND, TensorScatter, Trilu,
ReverseSequence, TopK, NonZero, Compress, Unique, Range, OneHot, EyeLike, DepthToSpace,
SpaceToDepth, CenterCropPad and Col2Im; small models run by irpass.evaluate and compared with
onnxruntime on random inputs (numpy where onnxruntime has no kernel); errors name the node."""

from __future__ import annotations

import irpass
import numpy as np
import pytest
from irpass_onnx import OnnxImportError, from_onnx
from onnx import TensorProto as TP
from onnx import helper
from onnx_cases import check, elem_type, make_model, ops_in, rand

F32 = TP.FLOAT
I64 = TP.INT64


def one_node(op, inputs, outputs, opset, inits=None, **attrs):
    """A model of one ``op`` node named n0: ``inputs`` become graph inputs, ``inits``
    initializers (appended to the node's inputs in order), ``outputs`` name -> elem type."""
    names = list(inputs) + list(inits or {})
    node = helper.make_node(op, names, list(outputs), name="n0", **attrs)
    return make_model([node], inputs, outputs, opset, inits)


def declared(op, inputs, outputs, opset, **attrs):
    """Like :func:`one_node` with the output types declared with shapes: ``outputs`` maps
    names to arrays of the expected dtype and shape (the dynamic import needs them)."""
    node = helper.make_node(op, list(inputs), list(outputs), name="n0", **attrs)
    graph = helper.make_graph(
        [node], "test",
        [helper.make_tensor_value_info(n, elem_type(a), a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, elem_type(a), a.shape) for n, a in outputs.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def ints(low, high, shape, seed=0, dtype=np.int64):
    return np.random.default_rng(seed).integers(low, high, shape).astype(dtype)


# -- GatherElements and GatherND -------------------------------------------------------------


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize(("shape", "ishape", "axis"), [
    ((3, 4), (2, 4), 0), ((3, 4), (3, 6), 1), ((2, 3, 4), (2, 2, 4), -2), ((5,), (7,), 0),
])
@pytest.mark.parametrize("idt", [np.int32, np.int64])
def test_gather_elements(opset, shape, ishape, axis, idt):
    x = rand(*shape, seed=1)
    idx = ints(-shape[axis], shape[axis], ishape, seed=2, dtype=idt)
    check(one_node("GatherElements", {"x": x, "i": idx}, {"y": F32}, opset, axis=axis),
          {"x": x, "i": idx})


@pytest.mark.parametrize(("shape", "ishape", "batch"), [
    ((3, 4), (2, 2), 0), ((3, 4), (5, 1), 0), ((2, 3, 4), (4, 3), 0), ((2, 3, 4), (2, 2, 2), 0),
    ((2, 3, 4), (2, 1), 1), ((2, 3, 4), (2, 5, 2), 1), ((2, 3, 4), (2, 3, 1), 2),
    ((3, 4), (2,), 0),
])
def test_gather_nd(shape, ishape, batch):
    x = rand(*shape, seed=3)
    depth = ishape[-1]
    rng = np.random.default_rng(4)
    idx = np.stack([rng.integers(-shape[batch + j], shape[batch + j], ishape[:-1])
                    for j in range(depth)], axis=-1).astype(np.int64).reshape(ishape)
    check(one_node("GatherND", {"x": x, "i": idx}, {"y": F32}, 13, batch_dims=batch),
          {"x": x, "i": idx})


def test_gather_elements_float_indices_name_node():
    model = one_node("GatherElements", {"x": rand(2, 3), "i": rand(2, 3)}, {"y": F32}, 13)
    with pytest.raises(OnnxImportError, match=r"'n0' \(GatherElements\).*indices"):
        from_onnx(model)


def test_scatter_nd_updates_of_another_dtype_name_node():
    x, idx = rand(3, 2), np.array([[0], [2]], np.int64)
    model = one_node("ScatterND", {"x": x, "i": idx, "u": np.ones((2, 2), np.int64)},
                     {"y": F32}, 16)
    with pytest.raises(OnnxImportError, match=r"'n0' \(ScatterND\).*updates"):
        from_onnx(model)


def test_gather_nd_opset_11_has_no_batch_dims():
    x, idx = rand(2, 3), np.array([[1, 2], [0, 0]], np.int64)
    check(one_node("GatherND", {"x": x, "i": idx}, {"y": F32}, 11), {"x": x, "i": idx})


# -- scatters ----------------------------------------------------------------------------------


def unique_rows(shape, size, axis, seed):
    """Indices of ``shape`` without repeats along ``axis`` (``none`` needs them for a
    defined result)."""
    rng = np.random.default_rng(seed)
    perm = np.argsort(rng.random(shape[:axis] + (size,) + shape[axis + 1:]), axis=axis)
    return np.take(perm, np.arange(shape[axis]), axis=axis).astype(np.int64)


@pytest.mark.parametrize(("op", "opset"), [("ScatterElements", 11), ("ScatterElements", 13),
                                           ("ScatterElements", 18), ("Scatter", 10)])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements(op, opset, axis):
    x = rand(4, 5, seed=5)
    ishape = (2, 5) if axis == 0 else (4, 3)
    idx = unique_rows(ishape, x.shape[axis], axis % 2, seed=6)
    idx = np.where(ints(0, 2, ishape, seed=7) == 1, idx - x.shape[axis], idx)  # some negative
    upd = rand(*ishape, seed=8)
    check(one_node(op, {"x": x, "i": idx, "u": upd}, {"y": F32}, opset, axis=axis),
          {"x": x, "i": idx, "u": upd})


@pytest.mark.parametrize(("reduction", "opset"), [
    ("add", 16), ("mul", 16), ("max", 18), ("min", 18), ("none", 18)])
def test_scatter_elements_reduction(reduction, opset):
    x = rand(4, 5, seed=9)
    if reduction == "none":
        idx = unique_rows((3, 5), 4, 0, seed=10)
    else:  # repeated indices combine
        idx = ints(0, 4, (6, 5), seed=10)
    upd = rand(*idx.shape, seed=11)
    check(one_node("ScatterElements", {"x": x, "i": idx, "u": upd}, {"y": F32}, opset,
                   reduction=reduction), {"x": x, "i": idx, "u": upd})


@pytest.mark.parametrize(("reduction", "opset"), [
    ("none", 11), ("none", 13), ("add", 16), ("mul", 16), ("max", 18), ("min", 18)])
@pytest.mark.parametrize(("shape", "ishape"), [((4, 5, 6), (3, 1)), ((4, 5, 6), (2, 2, 2)),
                                               ((4, 5), (6, 2)), ((4, 5), (2, 2, 1))])
def test_scatter_nd(reduction, opset, shape, ishape):
    x = rand(*shape, seed=12)
    depth = ishape[-1]
    # distinct index tuples (`none` needs them); the reductions get repeats through an
    # extra copy of the first ones
    flat = np.random.default_rng(13).permutation(int(np.prod(shape[:depth])))
    n = int(np.prod(ishape[:-1]))
    tuples = np.stack(np.unravel_index(flat[:n], shape[:depth]), axis=-1)
    if reduction != "none":
        tuples[-1] = tuples[0]
    idx = tuples.reshape(ishape).astype(np.int64)
    upd = rand(*(ishape[:-1] + shape[depth:]), seed=14)
    attrs = {} if opset < 16 else {"reduction": reduction}
    check(one_node("ScatterND", {"x": x, "i": idx, "u": upd}, {"y": F32}, opset, **attrs),
          {"x": x, "i": idx, "u": upd})


def test_scatter_bad_reduction():
    x, idx = rand(3), np.array([0], np.int64)
    model = one_node("ScatterElements", {"x": x, "i": idx, "u": rand(1)}, {"y": F32}, 18,
                     reduction="mean")
    with pytest.raises(OnnxImportError, match=r"'n0' \(ScatterElements\): reduction 'mean'"):
        from_onnx(model)


def tensor_scatter_ref(cache, update, write, mode, axis):
    out = cache.copy()
    axis %= cache.ndim
    for prefix in np.ndindex(cache.shape[:axis]):
        for s in range(update.shape[axis]):
            pos = write[prefix[0]] + s
            if mode == "circular":
                pos %= cache.shape[axis]
            out[(*prefix, pos)] = update[(*prefix, s)]
    return out


@pytest.mark.parametrize(("mode", "axis", "shape", "seq"), [
    ("linear", -2, (2, 3, 8, 4), 3), ("circular", -2, (2, 3, 8, 4), 5),
    ("linear", 1, (3, 6, 2), 2), ("circular", 2, (2, 3, 4), 4),
])
@pytest.mark.parametrize("with_indices", [True, False])
def test_tensor_scatter(mode, axis, shape, seq, with_indices):
    cache = rand(*shape, seed=15)
    ushape = list(shape)
    ushape[axis] = seq
    update = rand(*ushape, seed=16)
    limit = shape[axis] - seq + 1 if mode == "linear" else shape[axis]
    write = ints(0, limit, (shape[0],), seed=17) if with_indices else np.zeros(shape[0], np.int64)
    feeds = {"c": cache, "u": update}
    if with_indices:
        feeds["w"] = write
    model = one_node("TensorScatter", feeds, {"y": F32}, 24, mode=mode, axis=axis)
    # onnxruntime has no TensorScatter kernel: the loop of the spec is the reference
    check(model, feeds, ref=[tensor_scatter_ref(cache, update, write, mode, axis)])


# -- Trilu and ReverseSequence -----------------------------------------------------------------


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 2, -1, -7, 9])
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 6, 4)])
def test_trilu(upper, k, shape):
    x = rand(*shape, seed=18)
    feeds = {"x": x}
    if k is not None:
        feeds["k"] = np.array(k, np.int64)
    check(one_node("Trilu", feeds, {"y": F32}, 14, upper=upper), feeds)


@pytest.mark.parametrize(("time_axis", "batch_axis", "shape"), [(0, 1, (5, 3, 2)),
                                                                (1, 0, (3, 5))])
def test_reverse_sequence(time_axis, batch_axis, shape):
    x = rand(*shape, seed=19)
    lens = ints(1, 6, (shape[batch_axis],), seed=20)
    check(one_node("ReverseSequence", {"x": x, "l": lens}, {"y": F32}, 10,
                   time_axis=time_axis, batch_axis=batch_axis), {"x": x, "l": lens})


def test_reverse_sequence_bad_axes():
    x, lens = rand(3, 4), np.ones(4, np.int64)
    with pytest.raises(OnnxImportError, match=r"'n0' \(ReverseSequence\): time_axis 1 and "):
        from_onnx(one_node("ReverseSequence", {"x": x, "l": lens}, {"y": F32}, 10,
                           time_axis=1, batch_axis=1))


# -- TopK --------------------------------------------------------------------------------------


# largest is an attribute from opset 11
@pytest.mark.parametrize(("opset", "largest"), [(1, 1), (10, 1), (11, 0), (11, 1), (24, 0),
                                                (24, 1)])
@pytest.mark.parametrize(("k", "axis"), [(1, -1), (3, 1), (4, 0), (5, -1)])
def test_top_k(opset, k, axis, largest):
    # few distinct values: many ties, which come in index order
    x = ints(0, 4, (4, 5), seed=21).astype(np.float32)
    attrs = {"axis": axis}
    if opset >= 11:
        attrs["largest"] = largest
    outs = {"v": F32, "i": I64}
    if opset >= 10:
        model = one_node("TopK", {"x": x}, outs, opset, {"k": np.array([k], np.int64)}, **attrs)
    else:
        model = one_node("TopK", {"x": x}, outs, opset, k=k, **attrs)
    check(model, {"x": x})


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_top_k_dtypes(dtype):
    x = rand(3, 6, seed=22, dtype=np.float64).__mul__(10).astype(dtype)
    model = one_node("TopK", {"x": x}, {"v": elem_type(x), "i": I64}, 11,
                     {"k": np.array([2], np.int64)})
    check(model, {"x": x})


def test_top_k_zero():
    x = rand(3, 4)
    model = one_node("TopK", {"x": x}, {"v": F32, "i": I64}, 11, {"k": np.array([0], np.int64)})
    check(model, {"x": x})


def test_top_k_too_large():
    model = one_node("TopK", {"x": rand(3, 4)}, {"v": F32, "i": I64}, 11,
                     {"k": np.array([5], np.int64)})
    with pytest.raises(OnnxImportError, match=r"'n0' \(TopK\): K 5 is out of range"):
        from_onnx(model)


def test_top_k_runtime_k():
    x = rand(3, 6, seed=23)
    k = np.array([2], np.int64)
    model = declared("TopK", {"x": x, "k": k},
                     {"v": np.zeros((3, 2), np.float32), "i": np.zeros((3, 2), np.int64)}, 11)
    check(model, {"x": x, "k": k})


# -- data-dependent shapes ---------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
def test_non_zero_constant(shape):
    x = rand(*shape, seed=24)
    data = np.where(np.abs(x) < 0.7, 0, x).astype(np.float32)
    nodes = [helper.make_node("NonZero", ["c"], ["nz"]),
             helper.make_node("Cast", ["nz"], ["nzf"], to=F32),
             helper.make_node("ReduceSum", ["nzf"], ["s"], keepdims=0),
             helper.make_node("Add", ["x", "s"], ["y"])]
    model = make_model(nodes, {"x": x}, {"y": F32}, 13, {"c": data})
    check(model, {"x": x})


def test_non_zero_runtime_needs_declared_type():
    x = rand(3, 4)
    model = one_node("NonZero", {"x": x}, {"y": I64}, 13)
    with pytest.raises(OnnxImportError, match=r"'n0' \(NonZero\): input 0 \(X"):
        from_onnx(model)


def test_non_zero_runtime_declared():
    x = np.array([[1, 0, 2], [0, 0, 3]], np.float32)
    model = declared("NonZero", {"x": x}, {"y": np.zeros((2, 3), np.int64)}, 13)
    check(model, {"x": x})


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("short", [False, True])
def test_compress(axis, short):
    x = rand(3, 4, seed=25)
    size = x.size if axis is None else x.shape[axis]
    cond = rand(size - 1 if short else size, seed=26) > 0
    attrs = {} if axis is None else {"axis": axis}
    model = make_model([helper.make_node("Compress", ["x", "c"], ["y"], **attrs)], {"x": x},
                       {"y": F32}, 11, {"c": cond})
    check(model, {"x": x})


def test_compress_needs_bool():
    x = rand(3)
    model = make_model([helper.make_node("Compress", ["x", "c"], ["y"], name="n0")], {"x": x},
                       {"y": F32}, 11, {"c": np.array([1, 0, 1], np.int64)})
    with pytest.raises(OnnxImportError, match=r"'n0' \(Compress\): condition must be a 1-D bool"):
        from_onnx(model)


@pytest.mark.parametrize("sorted_", [0, 1])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("n_out", [1, 4])
def test_unique_constant(sorted_, axis, n_out):
    data = ints(0, 3, (4, 3), seed=27).astype(np.float32)
    data[2] = data[0]  # a repeated row for axis 0
    data[:, 2] = data[:, 1]  # a repeated column for axis 1
    attrs = {"sorted": sorted_}
    if axis is not None:
        attrs["axis"] = axis
    outs = ["y", "idx", "inv", "cnt"][:n_out]
    # the outputs are constants: feed them through Identity from a graph input's shape
    nodes = [helper.make_node("Unique", ["c"], [f"u_{n}" for n in outs], **attrs)]
    nodes += [helper.make_node("Identity", [f"u_{n}"], [n]) for n in outs]
    types = {"y": F32, "idx": I64, "inv": I64, "cnt": I64}
    model = make_model(nodes, {}, {n: types[n] for n in outs}, 11, {"c": data})
    check(model, {})


def test_unique_runtime_declared():
    x = np.array([2, 1, 1, 3, 4, 3], np.float32)
    outs = {"y": np.zeros(4, np.float32), "idx": np.zeros(4, np.int64),
            "inv": np.zeros(6, np.int64), "cnt": np.zeros(4, np.int64)}
    check(declared("Unique", {"x": x}, outs, 11, sorted=0), {"x": x})


# -- Range, OneHot, EyeLike --------------------------------------------------------------------


@pytest.mark.parametrize(("start", "limit", "delta", "dtype"), [
    (0, 10, 3, np.int64), (10, 4, -2, np.int32), (1, 1, 1, np.int64), (5, 1, 1, np.int16),
    (0.5, 3.2, 0.3, np.float32), (1.0, -2.0, -0.25, np.float64), (0, 2**40, 2**38, np.int64),
])
def test_range_constant(start, limit, delta, dtype):
    inits = {n: np.array(v, dtype) for n, v in (("s", start), ("l", limit), ("d", delta))}
    model = one_node("Range", {}, {"y": elem_type(np.zeros(0, dtype))}, 11, inits)
    mod = check(model, {})
    assert ops_in(mod) in ([], ["arange"])


def test_range_runtime_declared():
    feeds = {"s": np.array(1.5, np.float32), "l": np.array(7.0, np.float32),
             "d": np.array(2.0, np.float32)}
    model = declared("Range", feeds, {"y": np.zeros(3, np.float32)}, 11)
    check(model, feeds)


def test_range_zero_delta():
    inits = {n: np.array(v, np.int64) for n, v in (("s", 0), ("l", 3), ("d", 0))}
    with pytest.raises(OnnxImportError, match=r"'n0' \(Range\): delta must not be 0"):
        from_onnx(one_node("Range", {}, {"y": I64}, 11, inits))


def test_range_bool():
    inits = {n: np.array(True) for n in ("s", "l", "d")}
    with pytest.raises(OnnxImportError, match=r"'n0' \(Range\): start, limit and delta must be "
                                              r"numbers, got bool"):
        from_onnx(one_node("Range", {}, {"y": TP.BOOL}, 11, inits))


@pytest.mark.parametrize("opset", [9, 11])
@pytest.mark.parametrize("axis", [-1, 0, 1, -2])
@pytest.mark.parametrize("idt", [np.int64, np.int32, np.float32])
def test_one_hot(opset, axis, idt):
    depth = 5
    # in range, negative (from opset 11: counted from the end) and out of range
    idx = ints(-depth - 1, depth + 2, (3, 4), seed=28).astype(idt)
    values = np.array([-1.5, 2.0], np.float32)
    model = one_node("OneHot", {"i": idx}, {"y": F32}, opset,
                     {"depth": np.array(depth, np.int64), "values": values}, axis=axis)
    # onnxruntime's kernels take int64 indices only with these types, and count negative
    # indices from the end at opset 9 too, which its spec leaves off
    ref = None if idt == np.int64 and opset >= 11 else [one_hot_ref(idx, depth, values, axis,
                                                                     opset)]
    check(model, {"i": idx}, ref=ref)


def one_hot_ref(idx, depth, values, axis, opset):
    idx = idx.astype(np.int64)
    if opset >= 11:
        idx = np.where(idx < 0, idx + depth, idx)
    hot = np.expand_dims(idx, -1) == np.arange(depth)
    out = np.where(hot, values[1], values[0]).astype(values.dtype)
    return np.moveaxis(out, -1, axis if axis >= 0 else idx.ndim + 1 + axis)


def test_one_hot_runtime_values():
    idx = np.array([0, 2, 1], np.int64)
    values = np.array([0, 7], np.int32)
    model = one_node("OneHot", {"i": idx, "values": values}, {"y": TP.INT32}, 11,
                     {"depth": np.array([3.0], np.float32)})
    node = model.graph.node[0]
    node.input[:] = ["i", "depth", "values"]
    check(model, {"i": idx, "values": values})


def test_one_hot_bad_values():
    model = one_node("OneHot", {"i": np.array([0], np.int64)}, {"y": F32}, 11,
                     {"depth": np.array(3, np.int64), "values": np.zeros(3, np.float32)})
    with pytest.raises(OnnxImportError, match=r"'n0' \(OneHot\): values must hold two"):
        from_onnx(model)


@pytest.mark.parametrize("opset", [9, 22])
@pytest.mark.parametrize(("shape", "k"), [((3, 3), 0), ((3, 5), 1), ((4, 2), -1), ((2, 3), 4)])
@pytest.mark.parametrize("dtype", [None, TP.INT32, TP.DOUBLE])
def test_eye_like(opset, shape, k, dtype):
    x = rand(*shape, seed=29)
    attrs = {"k": k}
    if dtype is not None:
        attrs["dtype"] = dtype
    check(one_node("EyeLike", {"x": x}, {"y": dtype or F32}, opset, **attrs), {"x": x})


def test_eye_like_needs_2d():
    with pytest.raises(OnnxImportError, match=r"'n0' \(EyeLike\): input must be 2-D"):
        from_onnx(one_node("EyeLike", {"x": rand(2, 2, 2)}, {"y": F32}, 9))


# -- blocks ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("opset", "mode"), [(1, None), (11, "DCR"), (11, "CRD"), (13, "CRD")])
@pytest.mark.parametrize("block", [2, 3])
def test_depth_to_space(opset, mode, block):
    x = rand(2, 2 * block * block, 3, 4, seed=30)
    attrs = {"blocksize": block}
    if mode is not None:
        attrs["mode"] = mode
    check(one_node("DepthToSpace", {"x": x}, {"y": F32}, opset, **attrs), {"x": x})


@pytest.mark.parametrize("opset", [1, 13])
@pytest.mark.parametrize("block", [2, 3])
def test_space_to_depth(opset, block):
    x = rand(2, 3, 2 * block, 3 * block, seed=31)
    check(one_node("SpaceToDepth", {"x": x}, {"y": F32}, opset, blocksize=block), {"x": x})


def space_to_depth_crd(x, b):
    n, c, h, w = x.shape
    t = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 1, 3, 5, 2, 4)
    return t.reshape(n, c * b * b, h // b, w // b)


def test_space_to_depth_crd():
    # onnxruntime has no opset-28 SpaceToDepth: CRD is channel-major, then the block offsets
    x = rand(1, 2, 4, 6, seed=32)
    check(one_node("SpaceToDepth", {"x": x}, {"y": F32}, 28, blocksize=2, mode="CRD"),
          {"x": x}, ref=[space_to_depth_crd(x, 2)])


def test_depth_to_space_bad_mode():
    with pytest.raises(OnnxImportError, match=r"'n0' \(DepthToSpace\): mode must be"):
        from_onnx(one_node("DepthToSpace", {"x": rand(1, 4, 2, 2)}, {"y": F32}, 13,
                           blocksize=2, mode="XYZ"))


def center_crop_pad_ref(x, shape, axes):
    out = x
    for a, t in zip(axes, shape, strict=True):
        dim = out.shape[a]
        if t < dim:
            b = (dim - t) // 2
            out = np.take(out, np.arange(b, b + t), axis=a)
        elif t > dim:
            before = (t - dim) // 2
            width = [(0, 0)] * out.ndim
            width[a] = (before, t - dim - before)
            out = np.pad(out, width)
    return out


@pytest.mark.parametrize(("shape", "target", "axes"), [
    ((10, 7, 3), [5, 10, 3], None), ((10, 8, 3), [6, 5], [0, 1]), ((3, 9, 12), [7, 15], [1, 2]),
    ((9, 11, 3), [20, 4], [-3, -2]), ((4, 4), [4, 4], None),
])
def test_center_crop_pad(shape, target, axes):
    x = rand(*shape, seed=33)
    attrs = {} if axes is None else {"axes": axes}
    model = one_node("CenterCropPad", {"x": x}, {"y": F32}, 18,
                     {"shape": np.array(target, np.int64)}, **attrs)
    ref = center_crop_pad_ref(x, target, [a % len(shape) for a in (axes or range(len(shape)))])
    check(model, {"x": x})
    check(model, {"x": x}, ref=[ref])


def col2im_ref(x, image, block, dil, pads, strides):
    """The spec's loop: each column entry added at its position in the padded image."""
    n = len(image)
    padded = [image[i] + pads[i] + pads[i + n] for i in range(n)]
    counts = [(padded[i] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(n)]
    batch, ck, _ = x.shape
    kernel = int(np.prod(block))
    out = np.zeros((batch, ck // kernel, *padded), x.dtype)
    for c in range(ck // kernel):
        for kk, off in enumerate(np.ndindex(*block)):
            for ll, start in enumerate(np.ndindex(*counts)):
                pos = tuple(start[i] * strides[i] + off[i] * dil[i] for i in range(n))
                out[(slice(None), c, *pos)] += x[:, c * kernel + kk, ll]
    return out[(slice(None), slice(None), *(slice(pads[i], pads[i] + image[i])
                                            for i in range(n)))]


@pytest.mark.parametrize(("image", "block", "dil", "pads", "strides"), [
    ([5, 5], [1, 5], [1, 1], [0, 0, 0, 0], [1, 1]),
    ([5, 5], [2, 2], [1, 1], [1, 0, 1, 2], [1, 1]),
    ([6, 7], [2, 3], [2, 1], [0, 0, 0, 0], [2, 2]),
    ([3, 4, 5], [1, 2, 2], [1, 1, 1], [0, 0, 0, 0, 0, 0], [1, 1, 2]),
])
def test_col2im(image, block, dil, pads, strides):
    n = len(image)
    padded = [image[i] + pads[i] + pads[i + n] for i in range(n)]
    counts = [(padded[i] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(n)]
    x = rand(2, 3 * int(np.prod(block)), int(np.prod(counts)), seed=34)
    model = one_node("Col2Im", {"x": x}, {"y": F32}, 18,
                     {"image": np.array(image, np.int64), "block": np.array(block, np.int64)},
                     dilations=dil, pads=pads, strides=strides)
    check(model, {"x": x}, ref=[col2im_ref(x, image, block, dil, pads, strides)])
    if n == 2:  # onnxruntime's Col2Im is 2-D only
        check(model, {"x": x})


def test_col2im_wrong_length():
    x = rand(1, 4, 7)
    model = one_node("Col2Im", {"x": x}, {"y": F32}, 18,
                     {"image": np.array([4, 4], np.int64), "block": np.array([2, 2], np.int64)})
    with pytest.raises(OnnxImportError, match=r"'n0' \(Col2Im\): input's dimension 2 \(7\)"):
        from_onnx(model)


def test_imported_ops_are_the_core_ones():
    # the transpose of constant indices into the core's layout is folded at import
    x, idx = rand(3, 4), np.array([[1, 0]], np.int64)
    mod = from_onnx(one_node("GatherND", {"x": x}, {"y": F32}, 13, {"i": idx}))
    assert ops_in(mod) == ["gather_nd"]
    out = irpass.evaluate(mod, x=x)
    np.testing.assert_array_equal(out, x[[1], [0]])
