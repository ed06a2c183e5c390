"""Helpers for checking irpass-onnx on the real networks the ``onnx`` package ships.

The installed ``onnx`` holds, under ``onnx/backend/test/data/``:

- ``light/light_<name>.onnx``: nine ImageNet networks (ResNet-50, SqueezeNet, VGG-19, ...) whose
  weights are all ``ConstantOfShape(0.02)``, with one reference output each
  (``light_<name>_output_0.pb``) for the input the onnx test runner builds
  (:func:`runner_inputs`), at the tolerances of ``real/test_<name>/data.json``;
- ``pytorch-converted/test_*/`` and ``pytorch-operator/test_*/``: small layer models
  (``model.onnx``) with ``test_data_set_0/{input,output}_<i>.pb``.

The models are used where they are installed (:func:`backend_data_dir`), never copied.
Because the light models' weights are constant, their reference outputs prove little (every
logit is equal); :func:`randomize_weights` gives a copy with seeded random weights of the same
shapes, to be compared with :func:`run_onnxruntime` instead.

**Well-conditioned comparisons.** The light models' logits are about 1e10 and all equal: one
float32 ulp there is 1024, so a different summation order in a convolution (another BLAS,
another CPU) moves them by a few ulps, and the final softmax turns that into probabilities of
0 or 1/32 instead of 1/1000. Comparing those probabilities tests the summation order, not the
import. So the comparisons here are made where they are well conditioned:

- before the softmax: :func:`logits_model` cuts a model at the input of its final softmax, and
  :func:`check_softmax_reference` compares logits with a shipped softmax output in log space;
- with a tolerance relative to the magnitude of the values: ``scaled_atol`` in
  :func:`check_outputs_close` is an absolute error allowed per unit of the output's largest
  magnitude (:data:`SCALED_ATOL`), since the rounding error of a sum scales with its terms, not
  with the result (an element near zero is as uncertain as its neighbours);

and each stays able to catch a real error: :func:`perturb_weight` makes one weight of a
module 1% off, which the same comparison must reject.

``onnxruntime`` is imported only by :func:`run_onnxruntime` (it is in the pack's ``test``
extra, not a dependency).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto, TensorProto, ValueInfoProto, helper, numpy_helper

__all__ = [
    "shape_computing_nodes",
    "LIGHT_MODEL_NAMES",
    "ONNXSIM_NODE_COUNTS",
    "DEFAULT_RTOL",
    "DEFAULT_ATOL",
    "RANDOM_RTOL",
    "RANDOM_ATOL",
    "SCALED_ATOL",
    "RealModel",
    "backend_data_dir",
    "light_models",
    "light_model",
    "pytorch_models",
    "graph_inputs",
    "runner_inputs",
    "read_tensor",
    "light_tolerances",
    "randomize_weights",
    "logits_model",
    "perturb_weight",
    "run_onnxruntime",
    "output_list",
    "max_abs_error",
    "max_error_ratio",
    "check_outputs_close",
    "assert_outputs_close",
    "check_softmax_reference",
    "onnx_node_count",
    "evaluate_irpass",
    "cached_step",
    "ModelRun",
    "optimize_o3",
]

#: The light models of onnx 1.14+ (``light/light_<name>.onnx``), in the order the test runner
#: lists them.
LIGHT_MODEL_NAMES: tuple[str, ...] = (
    "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
    "squeezenet", "vgg19", "zfnet512",
)

#: Nodes onnxsim leaves in the light models, measured (issue 6); others were not measured.
ONNXSIM_NODE_COUNTS: dict[str, int] = {
    "resnet50": 123, "densenet121": 550, "inception_v2": 226, "squeezenet": 66,
}

#: The onnx test runner's tolerances when a model has no ``data.json``.
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-7
#: The tolerances of the random-weights check (float32 against onnxruntime); the tests pair
#: ``RANDOM_RTOL`` with :data:`SCALED_ATOL` instead of the absolute ``RANDOM_ATOL``.
RANDOM_RTOL = 1e-3
RANDOM_ATOL = 1e-5
#: Rounding allowed in any comparison with a reference, per unit of the output's largest
#: magnitude (``scaled_atol`` of :func:`check_outputs_close`): float32 sums of a few thousand
#: terms, in any order, stay well within it; a weight 1% off does not.
SCALED_ATOL = 1e-5

_PYTORCH_KINDS = ("pytorch-converted", "pytorch-operator")


def backend_data_dir() -> Path | None:
    """``onnx/backend/test/data`` of the installed onnx, or ``None`` if it ships none."""
    path = Path(onnx.__file__).resolve().parent / "backend" / "test" / "data"
    return path if path.is_dir() else None


@dataclass(frozen=True)
class RealModel:
    """One model of the backend test data: where it is, its reference data and tolerances.

    ``kind`` is ``"light"``, ``"pytorch-converted"`` or ``"pytorch-operator"``; ``name`` is
    ``"resnet50"`` for ``light/light_resnet50.onnx`` and the directory name
    (``"test_Conv2d"``) for the others.
    """

    name: str
    kind: str
    path: Path
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL

    @property
    def id(self) -> str:
        """A short test id: the name (light models) or ``kind/name``."""
        return self.name if self.kind == "light" else f"{self.kind}/{self.name}"

    def load(self) -> ModelProto:
        """The model, read from where onnx installed it (external data resolved)."""
        return onnx.load(str(self.path))

    def inputs(self, model: ModelProto | None = None) -> dict[str, np.ndarray]:
        """The inputs the reference outputs were computed for, by graph input name."""
        model = self.load() if model is None else model
        if self.kind == "light":
            return runner_inputs(model)
        names = [vi.name for vi in graph_inputs(model)]
        files = _numbered(self.path.parent / "test_data_set_0", "input")
        if len(files) != len(names):
            raise ValueError(
                f"{self.id}: {len(files)} input file(s) for {len(names)} graph input(s) {names}"
            )
        return {name: read_tensor(f) for name, f in zip(names, files, strict=True)}

    def reference_outputs(self) -> list[np.ndarray]:
        """The reference outputs, in graph output order."""
        if self.kind == "light":
            files = _numbered(self.path.parent, f"{self.path.stem}_output")
        else:
            files = _numbered(self.path.parent / "test_data_set_0", "output")
        if not files:
            raise FileNotFoundError(f"{self.id}: no reference output next to {self.path}")
        return [read_tensor(f) for f in files]


def _numbered(directory: Path, prefix: str) -> list[Path]:
    """``prefix_0.pb``, ``prefix_1.pb``, ... as long as they exist."""
    found = []
    while (directory / f"{prefix}_{len(found)}.pb").is_file():
        found.append(directory / f"{prefix}_{len(found)}.pb")
    return found


def light_tolerances(name: str) -> tuple[float, float]:
    """``(rtol, atol)`` of light model ``name``: ``real/test_<name>/data.json`` if there, else
    the runner's defaults (1e-3, 1e-7)."""
    root = backend_data_dir()
    data = None if root is None else root / "real" / f"test_{name}" / "data.json"
    if data is not None and data.is_file():
        meta = json.loads(data.read_text())
        return float(meta.get("rtol", DEFAULT_RTOL)), float(meta.get("atol", DEFAULT_ATOL))
    return DEFAULT_RTOL, DEFAULT_ATOL


def light_models() -> list[RealModel]:
    """Every ``light/light_*.onnx`` of the installed onnx that has a reference output, by name."""
    root = backend_data_dir()
    if root is None or not (root / "light").is_dir():
        return []
    found = []
    for path in sorted((root / "light").glob("light_*.onnx")):
        name = path.stem[len("light_"):]
        if not (path.parent / f"{path.stem}_output_0.pb").is_file():
            continue
        rtol, atol = light_tolerances(name)
        found.append(RealModel(name, "light", path, rtol, atol))
    return found


def light_model(name: str) -> RealModel:
    """The light model ``name`` (``"resnet50"``); ``LookupError`` listing those found."""
    for model in light_models():
        if model.name == name:
            return model
    names = ", ".join(m.name for m in light_models()) or "none"
    raise LookupError(f"no light model {name!r} in the installed onnx (found: {names})")


def pytorch_models(kinds: Iterable[str] = _PYTORCH_KINDS) -> list[RealModel]:
    """Every ``pytorch-converted`` / ``pytorch-operator`` model with test data, by kind and
    name."""
    root = backend_data_dir()
    found = []
    for kind in kinds:
        if kind not in _PYTORCH_KINDS:
            raise ValueError(f"unknown kind {kind!r} (kinds: {', '.join(_PYTORCH_KINDS)})")
        base = None if root is None else root / kind
        if base is None or not base.is_dir():
            continue
        for case in sorted(base.iterdir()):
            model = case / "model.onnx"
            if model.is_file() and (case / "test_data_set_0" / "output_0.pb").is_file():
                found.append(RealModel(case.name, kind, model))
    return found


def graph_inputs(model: ModelProto) -> list[ValueInfoProto]:
    """The graph inputs a caller feeds: those that are not initializers (an IR<4 model lists
    every initializer as an input too)."""
    inits = {t.name for t in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


def runner_inputs(model: ModelProto) -> dict[str, np.ndarray]:
    """The inputs the onnx test runner builds for a light model: unknown dims are 1, values
    ``(np.arange(n).reshape(shape) / n).astype(np.float32)``."""
    feeds = {}
    for vi in graph_inputs(model):
        tt = vi.type.tensor_type
        if tt.elem_type != TensorProto.FLOAT:
            raise ValueError(f"input {vi.name!r}: the runner only builds float inputs")
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim)
        n = int(np.prod(shape))
        feeds[vi.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
    return feeds


def read_tensor(path: str | Path) -> np.ndarray:
    """The array of a serialized ``TensorProto`` file (``input_0.pb``, ``*_output_0.pb``)."""
    tensor = TensorProto()
    tensor.ParseFromString(Path(path).read_bytes())
    return numpy_helper.to_array(tensor)


# -- random weights -------------------------------------------------------------------------

# Ops a weight flows through unchanged on its way to the op that decides its role
# (DenseNet's BN scales are Unsqueezed before their Mul).
_PASS_THROUGH = {"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity", "Cast", "Transpose",
                 "Expand"}


def _role(name: str, consumers: Mapping[str, list[tuple[onnx.NodeProto, int]]]) -> tuple:
    """``(op_type, input index, node)`` of the first op that uses tensor ``name`` other than
    to reshape it; ``("", -1, None)`` when nothing does."""
    todo = [name]
    seen = set()
    while todo:
        current = todo.pop(0)
        if current in seen:
            continue
        seen.add(current)
        for node, index in consumers.get(current, []):
            if node.op_type in _PASS_THROUGH and index == 0:
                todo.extend(node.output[:1])
                continue
            return node.op_type, index, node
    return "", -1, None


def _attr(node: onnx.NodeProto | None, name: str, default: Any) -> Any:
    if node is not None:
        for a in node.attribute:
            if a.name == name:
                return helper.get_attribute_value(a)
    return default


def _random_weight(
    shape: tuple[int, ...], role: tuple, rng: np.random.Generator, gain: float = 1.0
) -> np.ndarray:
    """Values for a weight of ``shape`` used as ``role``, scaled so that a deep network keeps
    activations of order 1: conv/dense weights with He's standard deviation sqrt(2 / fan-in)
    (drawn uniformly), batch-norm variances and scales around 1 (scales times ``gain``),
    shifts, means and biases small."""
    op_type, index, node = role
    size = int(np.prod(shape)) if shape else 1

    def uniform(lo: float, hi: float) -> np.ndarray:
        # float32 draws in place: VGG-19 has 143M weights
        values = rng.random(shape, dtype=np.float32)
        values *= np.float32(hi - lo)
        values += np.float32(lo)
        return values

    def normal(std: float) -> np.ndarray:
        # uniform with the same standard deviation (He-uniform): as good here, and faster
        half = float(std) * np.sqrt(3.0)
        return uniform(-half, half)

    if op_type in ("Conv", "ConvTranspose") and index == 1 and len(shape) >= 3:
        taps = int(np.prod(shape[2:]))
        fan_in = shape[1] * taps if op_type == "Conv" else shape[0] * taps
        return normal(np.sqrt(2.0 / max(fan_in, 1)))
    if op_type in ("Gemm", "MatMul") and index in (0, 1) and len(shape) >= 2:
        if op_type == "Gemm":
            trans = _attr(node, "transB" if index == 1 else "transA", 0)
            fan_in = shape[1] if (index == 1) == bool(trans) else shape[0]
        else:
            fan_in = shape[-2] if index == 1 else shape[-1]
        return normal(np.sqrt(2.0 / max(fan_in, 1)))
    if op_type in ("BatchNormalization", "InstanceNormalization", "LayerNormalization"):
        if index == 1:  # scale
            return uniform(0.8, 1.2) * np.float32(gain)
        if index == 4:
            return uniform(0.5, 1.5)  # running variance: positive
        if index == 3:  # running mean
            return normal(0.1)
        return normal(0.05)  # shift
    if op_type in ("Mul", "Div"):
        return uniform(0.8, 1.2)
    if op_type == "PRelu":
        return uniform(0.0, 0.3)
    if op_type in ("Conv", "ConvTranspose", "Gemm", "Add", "Sub", "Sum"):
        return normal(0.05)  # biases and other shifts
    if size == 1:
        return uniform(0.5, 1.5)
    return normal(0.5)


def _residual_gains(graph: onnx.GraphProto, constant: set[str]) -> dict[str, float]:
    """Batch-norm scale factors by the BN node's first output, for BNs that feed a sum of
    activations (a residual connection).

    Random batch-norm statistics do not normalize: each residual block then multiplies the
    variance of the activations by about 2, and ResNet-50's logits end up in the thousands
    (a one-hot softmax, which hides errors). So a BN on a branch summed with an untouched
    skip connection gets scales 4x smaller, and the BNs of a sum of BN outputs only share
    one unit of variance (1/sqrt(k) each).
    """
    producer = {out: node for node in graph.node for out in node.output}
    gains: dict[str, float] = {}
    for node in graph.node:
        if node.op_type not in ("Sum", "Add"):
            continue
        live = [name for name in node.input if name and name not in constant]
        if len(live) < 2:
            continue
        bns = []
        for name in live:
            src = producer.get(name)
            while src is not None and src.op_type in _PASS_THROUGH:
                src = producer.get(src.input[0])
            if src is not None and src.op_type == "BatchNormalization":
                bns.append(src.output[0])
        factor = 0.25 if len(bns) < len(live) else 1.0 / np.sqrt(len(live))
        for out in bns:
            gains[out] = min(gains.get(out, 1.0), factor)
    return gains


def _constant_tensors(graph: onnx.GraphProto) -> set[str]:
    """Names of the tensors computed from initializers and constants alone (weights)."""
    known = {t.name for t in graph.initializer}
    for node in graph.node:
        if all(not name or name in known for name in node.input):
            known.update(node.output)
    return known


def _value_info(name: str, array: np.ndarray) -> ValueInfoProto:
    return helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape)
    )


def _shape_of(name: str, inits: Mapping[str, TensorProto],
              constants: Mapping[str, np.ndarray]) -> tuple[int, ...] | None:
    if name in inits:
        return tuple(int(d) for d in numpy_helper.to_array(inits[name]).reshape(-1))
    if name in constants:
        return tuple(int(d) for d in constants[name].reshape(-1))
    return None


def _add_initializer(graph: onnx.GraphProto, name: str, array: np.ndarray) -> None:
    """Append a float32 initializer in place (``append`` of a built TensorProto copies it)."""
    tensor = graph.initializer.add()
    tensor.name = name
    tensor.data_type = TensorProto.FLOAT
    tensor.dims.extend(array.shape)
    tensor.raw_data = np.ascontiguousarray(array, dtype="<f4").tobytes()


def randomize_weights(
    model: ModelProto,
    seed: int = 0,
    calibrate: Mapping[str, np.ndarray] | None = None,
    logit_std: float = 2.0,
) -> ModelProto:
    """A copy of ``model`` whose weights are seeded random values of the same shapes.

    Every float32 initializer, and every float ``ConstantOfShape`` whose shape is known
    (an initializer or a ``Constant`` node), is replaced by an initializer of the same name and
    shape; a ConstantOfShape node is removed, and so is its shape tensor if nothing else uses
    it. Values are scaled by role (see :func:`_random_weight`; batch norms on residual
    branches get smaller scales, see :func:`_residual_gains`) so deep networks stay
    numerically sane. Each tensor's values depend only on ``seed`` and its name. An IR<4
    model also lists the new initializers as graph inputs, as that IR version requires.
    ``model`` itself is not changed.

    With ``calibrate`` (inputs by name), the layer computing the logits of a final
    ``Softmax`` (the Gemm/Conv before it, through reshapes, ReLU and pooling) is rescaled so
    the logits have standard deviation ``logit_std`` for those inputs (one onnxruntime run):
    random weights can leave a softmax one-hot (Inception v1's logits reach ~30), which
    would hide errors.
    """
    out = _randomized(model, seed)
    if calibrate is not None:
        _calibrate_logits(out, calibrate, logit_std)
    return out


# ops between a classifier layer and its softmax that scale with their input (ReLU, pooling)
_HOMOGENEOUS = {"Reshape", "Flatten", "Relu", "GlobalAveragePool", "AveragePool", "MaxPool",
                "GlobalMaxPool", "Dropout", "Identity", "Squeeze", "Unsqueeze"}


def _calibrate_logits(model: ModelProto, inputs: Mapping[str, np.ndarray],
                      logit_std: float) -> None:
    graph = model.graph
    softmax = [n for n in graph.node if n.op_type == "Softmax"]
    if not softmax:
        return
    producer = {out: node for node in graph.node for out in node.output}
    layer = producer.get(softmax[-1].input[0])
    while layer is not None and layer.op_type in _HOMOGENEOUS:
        layer = producer.get(layer.input[0])
    inits = {t.name: t for t in graph.initializer}
    if layer is None or layer.op_type not in ("Gemm", "Conv", "MatMul"):
        return
    weights = []
    for name in layer.input[1:3]:
        # a weight may be reshaped on its way (Inception v1's classifier)
        while name not in inits and name in producer and producer[name].op_type in _PASS_THROUGH:
            name = producer[name].input[0]
        if name in inits:
            weights.append(name)
    if not weights:
        return
    probe = ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.append(helper.make_empty_tensor_value_info(softmax[-1].input[0]))
    logits = run_onnxruntime(probe, inputs)[-1]
    std = float(np.std(logits))
    if not np.isfinite(std) or std == 0.0:
        return
    factor = np.float32(logit_std / std)
    for name in weights:
        tensor = inits[name]
        tensor.raw_data = (numpy_helper.to_array(tensor) * factor).astype("<f4").tobytes()


def _randomized(model: ModelProto, seed: int) -> ModelProto:
    out = ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    inits = {t.name: t for t in graph.initializer}
    constants: dict[str, np.ndarray] = {}
    consumers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in graph.node:
        if node.op_type == "Constant" and len(node.output) == 1:
            value = _attr(node, "value", None)
            if isinstance(value, TensorProto):
                constants[node.output[0]] = numpy_helper.to_array(value)
        for i, name in enumerate(node.input):
            if name:
                consumers.setdefault(name, []).append((node, i))

    gains = _residual_gains(graph, _constant_tensors(graph))

    def fresh(name: str, shape: tuple[int, ...]) -> np.ndarray:
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        role = _role(name, consumers)
        gain = gains.get(role[2].output[0], 1.0) if role[2] is not None else 1.0
        return _random_weight(shape, role, rng, gain)

    new_values: dict[str, np.ndarray] = {}
    for name, tensor in inits.items():
        if tensor.data_type == TensorProto.FLOAT:
            new_values[name] = fresh(name, tuple(tensor.dims))
    removed: list[onnx.NodeProto] = []
    for node in graph.node:
        if node.op_type != "ConstantOfShape":
            continue
        value = _attr(node, "value", None)
        if isinstance(value, TensorProto) and value.data_type != TensorProto.FLOAT:
            continue
        shape = _shape_of(node.input[0], inits, constants)
        if shape is None:
            continue
        new_values[node.output[0]] = fresh(node.output[0], shape)
        removed.append(node)

    kept = [n for n in graph.node if all(n is not r for r in removed)]
    used = {name for n in kept for name in n.input} | {o.name for o in graph.output}
    dead = {n.input[0] for n in removed if n.input[0] not in used}
    kept = [n for n in kept if not (n.op_type == "Constant" and n.output[0] in dead)]
    del graph.node[:]
    graph.node.extend(kept)

    old_inits = list(graph.initializer)
    del graph.initializer[:]
    for t in old_inits:
        if t.name in dead:
            continue
        if t.name in new_values:
            _add_initializer(graph, t.name, new_values.pop(t.name))
        else:
            graph.initializer.append(t)
    for name, array in new_values.items():  # the ConstantOfShape outputs, in node order
        _add_initializer(graph, name, array)

    lists_inits = out.ir_version < 4
    if dead or lists_inits:
        old_inputs = list(graph.input)
        del graph.input[:]
        graph.input.extend(vi for vi in old_inputs if vi.name not in dead)
        if lists_inits:
            listed = {vi.name for vi in graph.input}
            for name, array in ((n, new_values.get(n)) for n in list(new_values)):
                if name not in listed:
                    graph.input.append(_value_info(name, array))
    # value_info of the removed nodes' outputs stays valid: same names, types and shapes
    return out


# -- cutting and perturbing -----------------------------------------------------------------


def logits_model(model: ModelProto) -> ModelProto:
    """A copy of ``model`` cut before its final softmax: each graph output computed by a
    ``Softmax`` node is replaced by that node's input (the logits, same name as in the model,
    shape left to the runtime) and the node is removed. Outputs computed otherwise stay.

    The softmax saturates on large logits (see the module docstring): comparisons made on
    the logits, with a tolerance relative to their magnitude, do not depend on the summation
    order that rounded them. ``model`` itself is not changed.
    """
    out = ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    producer = {name: node for node in graph.node for name in node.output}
    outputs = {vi.name for vi in graph.output}
    cut = []
    for vi in graph.output:
        node = producer.get(vi.name)
        if node is None or node.op_type != "Softmax" or node.domain not in ("", "ai.onnx"):
            continue
        logits = node.input[0]
        vi.CopyFrom(helper.make_empty_tensor_value_info(logits))
        if logits in outputs:
            raise ValueError(f"cannot cut before the softmax {node.name!r}: its input "
                             f"{logits!r} is a graph output already")
        cut.append(node)
    still_read = {name for node in graph.node if all(node is not c for c in cut)
                  for name in node.input}
    kept = [node for node in graph.node
            if all(node is not c for c in cut) or any(o in still_read for o in node.output)]
    del graph.node[:]
    graph.node.extend(kept)
    return out


def perturb_weight(mod: Any, op_name: str, arg: int = 1, index: int = 0,
                   factor: float = 1.01) -> Any:
    """A copy of ``mod`` (an :class:`irpass.IRModule`) in which the ``index``-th call of
    ``op_name`` in ``@main`` (children first: 0 is the one nearest the inputs) has its
    constant argument ``arg`` multiplied by ``factor``: one weight 1% off by default, e.g.
    a batch norm's scale (``"nn.batch_norm"``, arg 1) or a conv's kernel (``"nn.conv2d"``,
    arg 1). The error a comparison must still catch. ``LookupError`` if there is no such
    call or the argument is not a constant."""
    from irpass.ir import Call, Constant, ExprMutator, Op, const

    class _Perturb(ExprMutator):
        def __init__(self) -> None:
            super().__init__()
            self.seen = 0
            self.done = False

        def visit_call(self, call: Any) -> Any:
            new = super().visit_call(call)
            if type(new.op) is Op and new.op.name == op_name:
                if self.seen == index:
                    weight = new.args[arg] if arg < len(new.args) else None
                    if not isinstance(weight, Constant):
                        raise LookupError(f"argument {arg} of {op_name} call {index} is not "
                                          "a constant")
                    data = weight.data
                    args = list(new.args)
                    args[arg] = const((data * np.asarray(factor, data.dtype)).astype(data.dtype))
                    new = Call(new.op, args, new.attrs)
                    self.done = True
                self.seen += 1
            return new

    mutator = _Perturb()
    main = mutator.visit(mod["main"])
    if not mutator.done:
        raise LookupError(f"@main has {mutator.seen} call(s) of {op_name}, no call {index}")
    return mod.with_function("main", main)


# -- running and comparing ------------------------------------------------------------------

def shape_computing_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """The nodes of ``graph`` that only compute shapes: ``Shape`` and ``Size``, and every
    node that reads at least one value computed so and otherwise only constants (the
    ``Gather``/``Slice``/``Concat``/``Unsqueeze``/``Cast``/``Range``/arithmetic scaffolding of
    dynamic exports, up to the ``Reshape``/``Expand``/... that consumes it, which computes).
    A ``ConstantOfShape`` of a constant shape counts as a constant."""
    constants = {t.name for t in graph.initializer}
    derived: set[str] = set()
    found: list[onnx.NodeProto] = []
    for node in graph.node:
        inputs = [i for i in node.input if i]
        if node.op_type == "Constant" or (node.op_type == "ConstantOfShape" and not (
                set(inputs) & derived)):
            constants.update(node.output)
            continue
        if node.op_type in ("Shape", "Size") or (
                any(i in derived for i in inputs)
                and all(i in derived or i in constants for i in inputs)):
            derived.update(node.output)
            found.append(node)
    return found


def run_onnxruntime(
    model: ModelProto, inputs: Mapping[str, np.ndarray], optimized: bool = False
) -> list[np.ndarray]:
    """Outputs of ``model`` in onnxruntime (CPU) for ``inputs`` (by graph input name), in graph
    output order. Graph optimizations are off unless ``optimized``, so the reference is the
    graph as written."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized
        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    options.log_severity_level = 3  # warnings about IR<4 initializers-as-inputs are noise here
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    wanted = {i.name for i in session.get_inputs()}
    feeds = {k: np.asarray(v) for k, v in inputs.items() if k in wanted}
    return [np.asarray(o) for o in session.run(None, feeds)]


def output_list(result: Any) -> list[np.ndarray]:
    """An :func:`irpass.evaluate` result (an array or a nested tuple) as a flat list of
    arrays."""
    flat: list[np.ndarray] = []
    todo = [result]
    while todo:
        item = todo.pop()
        if isinstance(item, (tuple, list)):
            todo.extend(reversed(item))
        else:
            flat.append(np.asarray(item))
    return flat


def evaluate_irpass(mod: Any, inputs: Mapping[str, np.ndarray],
                    weights: Mapping[str, np.ndarray] | None = None) -> list[np.ndarray]:
    """``irpass.evaluate`` of ``mod``'s ``@main`` on ``inputs`` (by parameter name, which is
    the graph input name; ``weights`` too for a module imported with ``weights="params"``), as
    a flat list of outputs."""
    import irpass

    return output_list(irpass.evaluate(mod, **dict(inputs), **dict(weights or {})))


def _pairs(actual: Sequence[Any], expected: Sequence[Any]) -> list[tuple[np.ndarray, np.ndarray]]:
    actual, expected = output_list(list(actual)), output_list(list(expected))
    if len(actual) != len(expected):
        raise AssertionError(f"{len(actual)} output(s), expected {len(expected)}")
    pairs = []
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        if a.shape != e.shape:
            raise AssertionError(f"output {i}: shape {a.shape}, expected {e.shape}")
        pairs.append((a, e))
    return pairs


def max_abs_error(actual: Sequence[Any], expected: Sequence[Any]) -> float:
    """The largest absolute difference over all outputs (``AssertionError`` if the outputs'
    count or shapes differ; NaN if either has a NaN where the other does not)."""
    worst = 0.0
    for a, e in _pairs(actual, expected):
        if a.size:
            with np.errstate(invalid="ignore"):  # inf - inf
                diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
            both_nan = np.isnan(a) & np.isnan(e) if a.dtype.kind == "f" else False
            diff = np.where(both_nan, 0.0, diff)
            worst = max(worst, float(np.max(diff)))
    return worst


def _tolerance(e: np.ndarray, rtol: float, atol: float, scaled_atol: float) -> np.ndarray:
    """The allowed absolute error of each element of ``e`` (float64)."""
    scale = float(np.nanmax(np.abs(e[np.isfinite(e)]))) if np.isfinite(e).any() else 0.0
    return atol + scaled_atol * scale + rtol * np.abs(e)


def _close(a: np.ndarray, e: np.ndarray, rtol: float, atol: float,
           scaled_atol: float) -> np.ndarray:
    """Elementwise: ``|a - e| <= atol + scaled_atol * max|e| + rtol * |e|`` (NaNs and equal
    infinities match)."""
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(invalid="ignore"):
        close = np.abs(a64 - e64) <= _tolerance(e64, rtol, atol, scaled_atol)
    return close | (a64 == e64) | (np.isnan(a64) & np.isnan(e64))


def max_error_ratio(actual: Sequence[Any], expected: Sequence[Any],
                    rtol: float, atol: float, scaled_atol: float = 0.0) -> float:
    """``max |a - e| / (atol + scaled_atol * max|e| + rtol * |e|)`` over all outputs: at most
    1 means :func:`check_outputs_close` with these tolerances passes for every output."""
    worst = 0.0
    for a, e in _pairs(actual, expected):
        if a.size:
            a64, e64 = a.astype(np.float64), e.astype(np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.abs(a64 - e64) / _tolerance(e64, rtol, atol, scaled_atol)
            ratio = np.where(_close(a, e, 0.0, 0.0, 0.0), 0.0, ratio)
            worst = max(worst, float(np.nanmax(ratio)) if not np.isnan(ratio).all() else 0.0)
    return worst


def check_outputs_close(actual: Sequence[Any], expected: Sequence[Any], *, rtol: float,
                        atol: float = 0.0, scaled_atol: float = 0.0) -> list[str]:
    """One line per output of ``actual`` not close to ``expected`` (count, shape, dtype,
    values); empty when all match.

    An element ``a`` matches ``e`` when ``|a - e| <= atol + scaled_atol * max|e| + rtol *
    |e|``, ``max|e|`` being the largest finite magnitude of that output: ``scaled_atol`` is
    rounding relative to the output's scale (see the module docstring), ``atol`` an absolute
    floor. NaNs match NaNs, infinities the same infinity.
    """
    try:
        pairs = _pairs(actual, expected)
    except AssertionError as exc:
        return [str(exc)]
    problems = []
    for i, (a, e) in enumerate(pairs):
        if a.dtype != e.dtype:
            problems.append(f"output {i}: dtype {a.dtype}, expected {e.dtype}")
            continue
        close = _close(a, e, rtol, atol, scaled_atol)
        if not close.all():
            bad = int(close.size - np.count_nonzero(close))
            err = max_abs_error([a], [e])
            where = np.unravel_index(int(np.argmin(close)), close.shape)
            problems.append(
                f"output {i}: {bad} of {close.size} element(s) differ (rtol={rtol:g}, "
                f"atol={atol:g}, scaled_atol={scaled_atol:g}), max abs error {err:.3g}, first "
                f"at {tuple(map(int, where))}: {a[where]!r} vs {e[where]!r} "
                f"(|expected| max {float(np.abs(e.astype(np.float64)).max()):.3g})"
            )
    return problems


def assert_outputs_close(actual: Sequence[Any], expected: Sequence[Any], *, rtol: float,
                         atol: float = 0.0, scaled_atol: float = 0.0,
                         what: str = "outputs") -> None:
    """``AssertionError`` naming ``what`` and every output of ``actual`` not close to
    ``expected`` (see :func:`check_outputs_close`)."""
    problems = check_outputs_close(actual, expected, rtol=rtol, atol=atol,
                                   scaled_atol=scaled_atol)
    if problems:
        raise AssertionError(f"{what}: " + "; ".join(problems))


def _log_softmax(z: np.ndarray, axis: int) -> np.ndarray:
    z = z.astype(np.float64)
    shifted = z - np.max(z, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def check_softmax_reference(logits: Sequence[Any], reference: Sequence[Any], *, axis: int = 1,
                            scaled_atol: float = SCALED_ATOL) -> list[str]:
    """One line per output whose shipped softmax ``reference`` is not the softmax of
    ``logits`` (over ``axis``), compared where that is well conditioned: in log space, where
    ``log(reference)`` must equal ``log_softmax(logits)`` within ``scaled_atol`` times the
    logits' largest magnitude (plus 1e-3 for the reference's own float32 rounding);
    probabilities below the smallest normal float32 (underflowed to 0) match any logit that
    low. Empty when all match."""
    try:
        pairs = _pairs(logits, reference)
    except AssertionError as exc:
        return [str(exc)]
    tiny = float(np.finfo(np.float32).tiny)
    floor = np.log(tiny)
    problems = []
    for i, (z, p) in enumerate(pairs):
        want = np.log(np.maximum(p.astype(np.float64), tiny))
        got = np.maximum(_log_softmax(z, axis), floor)
        scale = float(np.abs(z.astype(np.float64)).max()) if z.size else 0.0
        tol = scaled_atol * scale + 1e-3
        err = float(np.abs(got - want).max()) if z.size else 0.0
        if not err <= tol:
            problems.append(f"output {i}: log(reference) differs from log_softmax(logits) by "
                            f"up to {err:.3g} (allowed {tol:.3g}; |logits| max {scale:.3g})")
    return problems


def onnx_node_count(model: ModelProto) -> int:
    """The number of nodes of the main graph (what onnxsim's node counts count)."""
    return len(model.graph.node)


class cached_step:  # noqa: N801 - used like functools.cached_property
    """A method run once per object, like :class:`functools.cached_property`, that also
    remembers a failure: later reads raise the same exception again (so tests sharing an
    expensive step that failed do not all run it again)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        steps = obj.__dict__.setdefault("_cached_steps", {})
        if self.name not in steps:
            try:
                steps[self.name] = (True, self.fn(obj))
            except Exception as exc:  # noqa: BLE001 - raised again on every read
                steps[self.name] = (False, exc)
        ok, value = steps[self.name]
        if ok:
            return value
        raise value


def optimize_o3(mod: Any) -> Any:
    """``mod`` through the default pipeline at -O3, as ``irpass optimize -O3`` runs it."""
    from irpass.transform import PassContext, default_pipeline

    with PassContext(opt_level=3):
        return default_pipeline(3)(mod)


class ModelRun:
    """The steps every real-model test shares, each run on first use and then kept: the
    model as shipped, its inputs and reference outputs, the module ``irpass.load`` makes of
    it (through the plugin's format, as users load it) and that module at -O3. Test modules
    subclass it with their own further steps."""

    def __init__(self, case: RealModel) -> None:
        self.case = case

    @cached_step
    def model(self) -> ModelProto:
        return self.case.load()

    @cached_step
    def inputs(self) -> dict[str, np.ndarray]:
        return self.case.inputs(self.model)

    @cached_step
    def reference(self) -> list[np.ndarray]:
        return self.case.reference_outputs()

    @cached_step
    def mod(self) -> Any:
        import irpass

        return irpass.load(str(self.case.path))

    @cached_step
    def optimized(self) -> Any:
        return optimize_o3(self.mod)
