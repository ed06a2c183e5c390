"""The importer on corrupted models: every failure is one :class:`OnnxImportError` naming the
file and where in the model (node, graph input or output, initializer, opset), never another
exception from deep inside; a corrupted model that still imports gives a well-formed module
that type-checks and exports as a model ``onnx.checker`` passes.

A few small models (built with ``onnx.helper``, covering the converters' input and attribute
handling), the light SqueezeNet and the committed zoo's tiny Llama are corrupted with seeded
random field changes of the ModelProto: dims, element types, names and op types that are not
valid UTF-8, attribute types and values, missing, extra and undefined inputs, duplicated
outputs, initializer data of the wrong size, opsets, node order. Each corrupted model is
serialized, written to a file and read through the pack's loader. ``python
test_onnx_import_fuzz.py N [SEED] [--zoo]`` runs N models per base model (the test runs a
bounded slice), or per model of the committed zoo, each through -O3 and re-import too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from irpass.ir import Constant, infer_type, well_formed
from irpass_onnx import OnnxImportError, from_onnx, load_onnx, to_onnx
from irpass_onnx.frontend.graph import MAX_FOLD_ELEMENTS
from irpass_onnx.testing import light_model
from onnx import AttributeProto, ModelProto, TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
#: Corrupted models per base model in the test (a few seconds in all).
CASES = 60
#: The committed zoo (``make_models.py``).
ZOO = Path(__file__).resolve().parents[1] / "models"
#: What an error must name besides the file: where in the model it is.
LOCATORS = ("node ", "graph input", "graph output", "initializer", "value_info", "opset",
            "the graph", "not a readable ONNX model", "sparse initializer")


# -- base models ----------------------------------------------------------------------------------


def _graph_model(nodes, inputs, outputs, inits, opset=13) -> ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _rand(*shape: int) -> np.ndarray:
    return np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)


def conv_net() -> ModelProto:
    """conv, batch norm, relu, pooling, flatten, gemm, softmax."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1], name="conv"),
        n("BatchNormalization", ["c", "g", "b", "m", "v"], ["bn"], epsilon=1e-5, name="bn"),
        n("Relu", ["bn"], ["r"], name="relu"),
        n("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
        n("Flatten", ["p"], ["f"], axis=1, name="flatten"),
        n("Gemm", ["f", "FW", "FB"], ["z"], transB=1, alpha=1.0, name="fc"),
        n("Softmax", ["z"], ["y"], axis=1, name="softmax"),
    ]
    inits = {"W": _rand(4, 3, 3, 3), "B": _rand(4), "g": _rand(4) + 2, "b": _rand(4),
             "m": _rand(4), "v": np.abs(_rand(4)) + 1, "FW": _rand(5, 64), "FB": _rand(5)}
    return _graph_model(nodes, [("x", F, [1, 3, 8, 8])], [("y", F, [1, 5])], inits)


def shape_net() -> ModelProto:
    """shape arithmetic folded at import: Shape, Gather, Concat, Reshape, Slice, Unsqueeze,
    Squeeze, Transpose, Split, Expand, Cast, ConstantOfShape, Constant, Where."""
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["s"], name="shape"),
        n("Constant", [], ["idx"], value=numpy_helper.from_array(np.array([0, 2], np.int64)),
          name="const"),
        n("Gather", ["s", "idx"], ["s2"], axis=0, name="gather"),
        n("Concat", ["s2", "minus1"], ["target"], axis=0, name="concat"),
        n("Reshape", ["x", "target"], ["r"], name="reshape"),
        n("Slice", ["r", "starts", "ends", "axes"], ["sl"], name="slice"),
        n("Unsqueeze", ["sl", "ax0"], ["u"], name="unsqueeze"),
        n("Squeeze", ["u", "ax0"], ["sq"], name="squeeze"),
        n("Transpose", ["sq"], ["t"], perm=[1, 0, 2], name="transpose"),
        n("Split", ["t", "split"], ["a", "b"], axis=2, name="split"),
        n("ConstantOfShape", ["s2"], ["ones"],
          value=numpy_helper.from_array(np.array([1.0], np.float32)), name="cos"),
        n("Cast", ["a"], ["ac"], to=F, name="cast"),
        n("Expand", ["ac", "eshape"], ["e"], name="expand"),
        n("Greater", ["e", "zero"], ["mask"], name="greater"),
        n("Where", ["mask", "e", "zero"], ["w"], name="where"),
        n("Add", ["w", "b"], ["y"], name="add"),
    ]
    inits = {"minus1": np.array([-1], np.int64), "starts": np.array([0, 1], np.int64),
             "ends": np.array([2, 4], np.int64), "axes": np.array([0, 2], np.int64),
             "ax0": np.array([0], np.int64), "split": np.array([1, 1], np.int64),
             "eshape": np.array([4, 2, 3], np.int64), "zero": np.array(0.0, np.float32)}
    return _graph_model(nodes, [("x", F, [2, 3, 4])], [("y", F, None), ("ones", F, None)],
                        inits)


def math_net() -> ModelProto:
    """matmul, layer norm, reductions, elementwise math, clip, pad."""
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "W"], ["mm"], name="matmul"),
        n("Add", ["mm", "B"], ["h"], name="bias"),
        n("LayerNormalization", ["h", "scale", "shift"], ["ln"], axis=-1, epsilon=1e-5,
          name="ln"),
        n("ReduceMean", ["ln"], ["mean"], axes=[1], keepdims=1, name="mean"),
        n("Sub", ["ln", "mean"], ["d"], name="sub"),
        n("Pow", ["d", "two"], ["sq"], name="pow"),
        n("Sqrt", ["sq"], ["rt"], name="sqrt"),
        n("Div", ["d", "rt"], ["q"], name="div"),
        n("Erf", ["q"], ["er"], name="erf"),
        n("Mul", ["er", "h"], ["m"], name="mul"),
        n("Tanh", ["m"], ["th"], name="tanh"),
        n("Clip", ["th", "lo", "hi"], ["cl"], name="clip"),
        n("Pad", ["cl", "pads"], ["y"], mode="constant", name="pad"),
    ]
    inits = {"W": _rand(6, 8), "B": _rand(8), "scale": _rand(8), "shift": _rand(8),
             "two": np.array(2.0, np.float32), "lo": np.array(-0.5, np.float32),
             "hi": np.array(0.5, np.float32), "pads": np.array([0, 1, 0, 1], np.int64)}
    return _graph_model(nodes, [("x", F, [3, 6])], [("y", F, [3, 10])], inits, opset=17)


def squeezenet() -> ModelProto:
    return light_model("squeezenet").load()


def llama() -> ModelProto:
    """The committed zoo's tiny Llama (dynamo export, SDPA with a mask): attention, rotary
    tables, and shape operands computed at run time (nodes imported as ``onnx.node``)."""
    return onnx.load(str(ZOO / "hf_llama_sdpa_mask.dynamo18.onnx"))


BASES: dict[str, Callable[[], ModelProto]] = {
    "conv_net": conv_net, "shape_net": shape_net, "math_net": math_net,
    "squeezenet": squeezenet, "llama": llama,
}


# -- corruptions ----------------------------------------------------------------------------------

_BAD_UTF8 = b"\xff\xfe"


class Corrupter:
    """Seeded random field changes of one ModelProto (the copy it is given)."""

    def __init__(self, model: ModelProto, rng: np.random.Generator) -> None:
        self.model = model
        self.graph = model.graph
        self.rng = rng
        #: Placeholder names to be replaced by invalid UTF-8 after serializing.
        self.markers: list[bytes] = []

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))] if len(seq) else None

    def value_infos(self) -> list[onnx.ValueInfoProto]:
        return list(self.graph.input) + list(self.graph.output) + list(self.graph.value_info)

    # each returns nothing; a corruption that finds no target does nothing
    def dim(self) -> None:
        vi = self.pick(self.value_infos())
        if vi is None or not vi.type.HasField("tensor_type"):
            return
        shape = vi.type.tensor_type.shape
        if not len(shape.dim) or self.rng.random() < 0.1:
            vi.type.tensor_type.ClearField("shape")
            return
        d = self.pick(shape.dim)
        choice = self.rng.random()
        if choice < 0.15:
            d.dim_param = self.pick(["N", "", "batch"])
        else:
            d.dim_value = int(self.pick([-3, -1, 0, 1, 2, 5, 2**31, 2**40]))

    def elem_type(self) -> None:
        value = int(self.rng.integers(0, 27))
        if self.rng.random() < 0.5 and len(self.graph.initializer):
            self.pick(self.graph.initializer).data_type = value
            return
        vi = self.pick(self.value_infos())
        if vi is not None:
            vi.type.tensor_type.elem_type = value

    def bad_utf8(self) -> None:
        marker = f"Q{len(self.markers):06d}".encode()
        text = marker.decode()
        g = self.graph
        node = self.pick(g.node)
        targets: list[Callable[[], None]] = []
        if node is not None:
            targets += [lambda: setattr(node, "name", text),
                        lambda: setattr(node, "op_type", text),
                        lambda: setattr(node, "domain", text)]
            if len(node.input):
                i = int(self.rng.integers(len(node.input)))
                targets.append(lambda: node.input.__setitem__(i, text))
            if len(node.output):
                j = int(self.rng.integers(len(node.output)))
                targets.append(lambda: node.output.__setitem__(j, text))
            if len(node.attribute):
                a = self.pick(node.attribute)
                targets.append(lambda: setattr(a, "name", text))
                if a.type == AttributeProto.STRING:
                    targets.append(lambda: setattr(a, "s", marker))
        for group in (g.input, g.output, g.initializer):
            item = self.pick(group)
            if item is not None:
                targets.append(lambda item=item: setattr(item, "name", text))
        vi = self.pick(list(g.input))
        if vi is not None and len(vi.type.tensor_type.shape.dim):
            targets.append(lambda: setattr(vi.type.tensor_type.shape.dim[0], "dim_param", text))
        targets.append(lambda: setattr(g, "name", text))
        if len(self.model.opset_import):
            targets.append(lambda: setattr(self.model.opset_import[0], "domain", text))
        self.pick(targets)()
        self.markers.append(marker)

    def attribute(self) -> None:
        node = self.pick([nd for nd in self.graph.node if len(nd.attribute)])
        if node is None:
            return
        a = self.pick(node.attribute)
        choice = self.rng.random()
        if choice < 0.25:
            a.type = int(self.pick(list(AttributeProto.AttributeType.values())))
        elif choice < 0.4:
            node.attribute.remove(a)
        elif choice < 0.55:
            a.CopyFrom(helper.make_attribute(a.name, self.pick([1.5, "NCHW", [1.0, 2.0]])))
        elif choice < 0.8 and a.type == AttributeProto.INTS:
            values = list(a.ints)
            action = self.rng.random()
            if action < 0.3 and values:
                values.pop()
            elif action < 0.6:
                values.append(int(self.pick([-7, 0, 3, 2**40])))
            elif values:
                values[int(self.rng.integers(len(values)))] = int(self.pick([-7, -1, 0, 99]))
            del a.ints[:]
            a.ints.extend(values)
        elif a.type == AttributeProto.INT:
            a.i = int(self.pick([-7, -1, 0, 1, 2, 99, 2**40]))
        elif a.type == AttributeProto.FLOAT:
            a.f = float(self.pick([-1.0, 0.0, float("nan"), float("inf")]))
        else:
            node.attribute.add().CopyFrom(helper.make_attribute("bogus", 3))

    def inputs(self) -> None:
        node = self.pick(self.graph.node)
        if node is None:
            return
        names = list(node.input)
        known = [vi.name for vi in self.graph.input] + [t.name for t in self.graph.initializer]
        choice = self.rng.random()
        if choice < 0.25 and names:
            names.pop(int(self.rng.integers(len(names))))
        elif choice < 0.45 and names:
            names[int(self.rng.integers(len(names)))] = ""
        elif choice < 0.6 and names:
            names[int(self.rng.integers(len(names)))] = "undefined_value"
        elif choice < 0.8:
            names.append(self.pick(known) or "x")
        else:
            names = names[::-1]
        del node.input[:]
        node.input.extend(names)

    def outputs(self) -> None:
        node = self.pick(self.graph.node)
        if node is None:
            return
        choice = self.rng.random()
        if choice < 0.3 and len(node.output):
            node.output.pop()
        elif choice < 0.6:
            node.output.append(f"extra_{len(node.output)}")
        else:
            other = self.pick(self.graph.node)
            if len(node.output) and len(other.output):
                node.output[0] = other.output[0]

    def initializer(self) -> None:
        t = self.pick(self.graph.initializer)
        if t is None:
            return
        choice = self.rng.random()
        if choice < 0.4 and t.raw_data:
            n = len(t.raw_data)
            t.raw_data = t.raw_data[: max(0, n - int(self.rng.integers(1, 9)))] if \
                self.rng.random() < 0.5 else t.raw_data + b"\x00" * int(self.rng.integers(1, 9))
        elif choice < 0.7 and len(t.dims):
            t.dims[int(self.rng.integers(len(t.dims)))] = int(self.pick([-2, 0, 1, 3, 2**40]))
        elif choice < 0.85:
            t.dims.append(2)
        else:
            t.float_data.extend([1.0, 2.0])

    def values(self) -> None:
        """An integer initializer (a shape, axes, pads) or a Constant node's value gets a
        surprising element."""
        tensors = [t for t in self.graph.initializer if t.data_type == TensorProto.INT64]
        tensors += [a.t for nd in self.graph.node for a in nd.attribute
                    if a.type == AttributeProto.TENSOR and a.t.data_type == TensorProto.INT64]
        t = self.pick(tensors)
        if t is None:
            return
        try:
            arr = numpy_helper.to_array(t).copy()
        except Exception:  # noqa: BLE001 - an earlier corruption broke it already
            return
        if arr.size:
            flat = arr.reshape(-1)
            flat[int(self.rng.integers(flat.size))] = int(
                self.pick([-7, -2, -1, 0, 3, 2**31, 2**40, -(2**62)]))
            t.CopyFrom(numpy_helper.from_array(arr, t.name))

    def opset(self) -> None:
        choice = self.rng.random()
        if choice < 0.2:
            del self.model.opset_import[:]
        elif len(self.model.opset_import):
            self.model.opset_import[0].version = int(self.pick([1, 5, 7, 9, 13, 18, 25, 1000]))

    def op_type(self) -> None:
        node = self.pick(self.graph.node)
        if node is not None:
            node.op_type = self.pick(["Relu", "Add", "Conv", "Gemm", "Reshape", "Concat",
                                      "Slice", "Softmax", "Split", "Gather", "Pad", "Clip",
                                      "BatchNormalization", "MaxPool", "Transpose", "Where"])

    def graph_io(self) -> None:
        g = self.graph
        choice = self.rng.random()
        if choice < 0.3 and len(g.output):
            g.output[int(self.rng.integers(len(g.output)))].name = "not_produced"
        elif choice < 0.45:
            del g.output[:]
        elif choice < 0.7 and len(g.input):
            g.input.pop()
        elif len(g.input):
            g.input.add().CopyFrom(g.input[0])

    def node_order(self) -> None:
        nodes = list(self.graph.node)
        if len(nodes) >= 2:
            i, j = (int(v) for v in self.rng.choice(len(nodes), 2, replace=False))
            nodes[i], nodes[j] = nodes[j], nodes[i]
            del self.graph.node[:]
            self.graph.node.extend(nodes)

    KINDS = ("dim", "elem_type", "bad_utf8", "attribute", "inputs", "outputs", "initializer",
             "values", "opset", "op_type", "graph_io", "node_order")

    def corrupt(self, count: int) -> list[str]:
        done = []
        for _ in range(count):
            kind = self.pick(self.KINDS)
            getattr(self, kind)()
            done.append(kind)
        return done

    def serialize(self) -> bytes:
        data = self.model.SerializeToString()
        for marker in self.markers:
            data = data.replace(marker, _BAD_UTF8 + marker[len(_BAD_UTF8):])
        return data


def corrupted(base: ModelProto, seed: int,
              corrupter: type[Corrupter] = Corrupter) -> tuple[bytes, list[str]]:
    """The serialized bytes of a seeded corruption of ``base`` (1 to 3 changes)."""
    rng = np.random.default_rng(seed)
    model = ModelProto()
    model.CopyFrom(base)
    c = corrupter(model, rng)
    kinds = c.corrupt(int(rng.integers(1, 4)))
    return c.serialize(), kinds


def corruption_outcomes(name: str, base: ModelProto, folder: Path,
                        corrupter: type[Corrupter] = Corrupter) -> dict[str, int]:
    """How many of :data:`CASES` seeded corruptions of ``base`` import ("ok") and how many
    are refused with one clean error; any other exception fails, naming the seed and the
    corruptions."""
    assert check_import(_write(folder / "base.onnx", base.SerializeToString())) == "ok"
    outcomes = {"ok": 0, "refused": 0}
    for seed in range(CASES):
        data, kinds = corrupted(base, seed, corrupter)
        path = _write(folder / f"{name}_{seed}.onnx", data)
        try:
            outcomes[check_import(path)] += 1
        except Exception as exc:  # noqa: BLE001 - reported with the seed and corruptions
            raise AssertionError(
                f"{name}, seed {seed}, corruptions {kinds}: {type(exc).__name__}: {exc}"
            ) from exc
    return outcomes


def check_import(path: Path) -> str:
    """Import the model in ``path``; ``"ok"`` or ``"refused"``, or an AssertionError saying
    what escaped."""
    try:
        mod = load_onnx(path)
    except OnnxImportError as err:
        message = str(err)
        assert str(path) in message, f"the error does not name the file: {message}"
        assert any(loc in message for loc in LOCATORS), f"the error names no place: {message}"
        assert "\n" not in message.strip(), f"not one line: {message}"
        return "refused"
    report = well_formed(mod)
    assert report, f"imported an ill-formed module: {report}"
    infer_type(mod)
    # what the importer takes, the exporter writes back as a valid model (an OnnxExportError
    # here is an error of the model the import should have named)
    onnx.checker.check_model(to_onnx(mod), full_check=True)
    return "ok"


# -- the corruptions the first fuzzing found, one by one ------------------------------------------


def _relu_model(input_name: str = "x", op_type: str = "Relu", dim: int = 2) -> ModelProto:
    return _graph_model(
        [helper.make_node(op_type, [input_name], ["h"], name="first"),
         helper.make_node("Neg", ["h"], ["y"], name="second")],
        [(input_name, F, [dim, 3])], [("y", F, None)], {})


def _refused(tmp_path: Path, data: bytes) -> str:
    path = _write(tmp_path / "bad.onnx", data)
    with pytest.raises(OnnxImportError) as info:
        load_onnx(path)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    return message


@pytest.mark.parametrize("length, folded", [(MAX_FOLD_ELEMENTS, True),
                                             (MAX_FOLD_ELEMENTS + 1, False)])
def test_a_huge_integer_result_of_constants_stays_a_computation(length, folded):
    # A constant corrupted from 2 to 2**31 made the import compute a 16 GB int64 product of
    # constants (and the system kill the process). Past MAX_FOLD_ELEMENTS such a result stays
    # a computation: the next node whose shapes disagree refuses the model, and a model that
    # means it runs it when it runs. (bool: 64 MB when the bound is missing.)
    model = _graph_model(
        [helper.make_node("Expand", ["c", "shape"], ["y"], name="expand")], [],
        [("y", TensorProto.BOOL, [length])],
        {"c": np.array([True]), "shape": np.array([length], np.int64)})
    body = from_onnx(model)["main"].body
    assert isinstance(body, Constant) is folded
    if not folded:
        assert body.op.name == "broadcast_to"


def test_a_negative_input_dim_names_the_input(tmp_path):
    message = _refused(tmp_path, _relu_model(dim=-3).SerializeToString())
    assert "graph input 0 'x'" in message and "-3 at index 0" in message


def _with_bad_utf8(model: ModelProto, marker: str) -> bytes:
    data = model.SerializeToString()
    assert data.count(marker.encode()) >= 1
    return data.replace(marker.encode(), b"\xff" + marker[1:].encode())


@pytest.mark.parametrize("where, model, expected", [
    ("graph input name", lambda: _relu_model(input_name="QQin"), "graph input 0: its name"),
    ("op type", lambda: _relu_model(op_type="QQop"), "node 0: its op_type"),
    ("node output", lambda: _graph_model([helper.make_node("Relu", ["x"], ["QQout"], name="r"),
                                          helper.make_node("Neg", ["QQout"], ["y"])],
                                         [("x", F, [2])], [("y", F, None)], {}),
     "node 0 'r' (Relu): its output 0"),
])
def test_strings_that_are_not_utf8_name_where_they_are(tmp_path, where, model, expected):
    message = _refused(tmp_path, _with_bad_utf8(model(), "QQ"))
    assert expected in message and "not valid UTF-8" in message, (where, message)


def test_unsupported_op_types_some_not_utf8_are_listed_in_one_error(tmp_path):
    # two unsupported op types, one of them bytes: the error must not try to sort them
    model = _graph_model([helper.make_node("QQop", ["x"], ["h"]),
                          helper.make_node("NoSuchOp", ["h"], ["y"])],
                         [("x", F, [2])], [("y", F, None)], {})
    message = _refused(tmp_path, _with_bad_utf8(model, "QQ"))
    assert "node 0" in message and "op_type" in message


def test_a_string_tensor_attribute_is_a_one_line_error(tmp_path):
    value = helper.make_tensor("value", TensorProto.STRING, [1], [b"a"])
    model = _graph_model(
        [helper.make_node("ConstantOfShape", ["shape"], ["y"], value=value, name="cos")],
        [], [("y", TensorProto.STRING, None)], {"shape": np.array([64, 64], np.int64)})
    message = _refused(tmp_path, model.SerializeToString())
    assert "node 0 'cos' (ConstantOfShape)" in message and "STRING" in message
    assert "\n" not in message and len(message) < 400, message


@pytest.fixture(scope="module")
def bases() -> dict[str, bytes]:
    return {name: make().SerializeToString() for name, make in BASES.items()}


@pytest.mark.parametrize("name", list(BASES))
def test_corrupted_models_fail_with_one_import_error_or_import_cleanly(name, bases, tmp_path):
    base = ModelProto()
    base.ParseFromString(bases[name])
    outcomes = corruption_outcomes(name, base, tmp_path)
    # the corruptions must mostly break the model, or the test proves little
    assert outcomes["refused"] >= CASES // 2, outcomes


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def check_pipeline(path: Path) -> None:
    """For a corrupted model that imports: -O3, export, ``onnx.checker`` and the re-import of
    the export, each without an exception but a clean refusal of the re-import of a model whose
    every run fails (FoldConstant then warned that a kernel raised)."""
    from irpass.transform import PassContext, default_pipeline

    with PassContext(opt_level=3) as ctx:
        mod = default_pipeline(3)(load_onnx(path))
        raised = any("raised" in str(d) for d in ctx.diag.diagnostics)
    out = to_onnx(mod)
    onnx.checker.check_model(out, full_check=True)
    try:
        from_onnx(out)
    except OnnxImportError:
        if not raised:
            raise


if __name__ == "__main__":
    # A longer run: python test_onnx_import_fuzz.py N [SEED] [--zoo]: N corruptions of each
    # base model (--zoo: of every model of the committed zoo instead), each that imports also
    # through -O3, export and re-import (check_pipeline).
    import tempfile
    import traceback
    from collections import Counter

    args = [a for a in sys.argv[1:] if a != "--zoo"]
    count = int(args[0]) if args else 1000
    first = int(args[1]) if len(args) > 1 else 0
    bases = dict(BASES)
    if "--zoo" in sys.argv:
        bases = {p.stem: (lambda p=p: onnx.load(str(p))) for p in sorted(ZOO.glob("*.onnx"))}
    escapes: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in bases.items():
            base = make()
            results: Counter[str] = Counter()
            for seed in range(first, first + count):
                data, kinds = corrupted(base, seed)
                path = _write(Path(tmp) / f"{name}_{seed}.onnx", data)
                try:
                    outcome = check_import(path)
                    if outcome == "ok":
                        check_pipeline(path)
                    results[outcome] += 1
                except Exception as exc:  # noqa: BLE001
                    key = f"{type(exc).__name__}: {str(exc)[:150]}".replace("\n", " ")
                    if escapes[key] == 0:
                        print(f"--- {name} seed {seed} {kinds}\n{key}")
                        cause = exc.__cause__ or exc.__context__ or exc
                        for line in traceback.format_tb(cause.__traceback__)[-2:]:
                            print(line.rstrip()[:400])
                    escapes[key] += 1
                    results["escaped"] += 1
            print(name, dict(results), flush=True)
    print(f"{sum(escapes.values())} escapes, {len(escapes)} kinds")
