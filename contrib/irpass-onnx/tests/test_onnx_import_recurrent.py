"""RNN, GRU and LSTM against onnxruntime: every direction, both layouts, biases, initial
states, peepholes, input_forget, linear_before_reset, clip, activation lists with their
alpha/beta, sequence_lens given at run time or as a constant, every output, and the errors."""

from __future__ import annotations

import irpass
import numpy as np
import onnx_cases
import pytest
from irpass_onnx import OnnxImportError, from_onnx
from irpass_onnx.testing import assert_outputs_close
from irpass_onnx.testing import run_onnxruntime as run_ort
from onnx import helper
from onnx.reference import ReferenceEvaluator
from onnx_cases import rand

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_NAMES = ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P")


def make_inputs(op, dirs, layout=0, steps=4, batch=3, size=5, hidden=4, bias=True,
                init=False, peep=False, lens=None, dtype="float32"):
    g = _GATES[op]
    x = rand(steps, batch, size, dtype=dtype)
    inputs = {"X": x.transpose(1, 0, 2).copy() if layout else x,
              "W": rand(dirs, g * hidden, size, seed=1, dtype=dtype) / 2,
              "R": rand(dirs, g * hidden, hidden, seed=2, dtype=dtype) / 2}
    if bias:
        inputs["B"] = rand(dirs, 2 * g * hidden, seed=3, dtype=dtype) / 2
    if lens is not None:
        inputs["sequence_lens"] = np.asarray(lens, dtype=np.int32)
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    if init:
        inputs["initial_h"] = rand(*state, seed=4, dtype=dtype)
        if op == "LSTM":
            inputs["initial_c"] = rand(*state, seed=5, dtype=dtype)
    if peep:
        inputs["P"] = rand(dirs, 3 * hidden, seed=6, dtype=dtype)
    return inputs


def check(op, inputs, outputs=None, opset=14, const=(), ref="ort", rtol=1e-5, atol=1e-5,
          **attrs):
    """``const`` names inputs that become initializers (known at import); ``ref`` "onnx"
    compares with ONNX's reference implementation (for what onnxruntime lacks)."""
    n_out = 3 if op == "LSTM" else 2
    outputs = ["Y", "Y_h", "Y_c"][:n_out] if outputs is None else outputs
    names = [n if n in inputs else "" for n in _NAMES[: 8 if op == "LSTM" else 6]]
    while not names[-1]:
        names.pop()
    hidden = inputs["R"].shape[-1]
    node = helper.make_node(op, names, outputs, hidden_size=hidden, **attrs)
    feeds = {n: inputs[n] for n in names if n and n not in const}
    inits = {n: inputs[n] for n in const}
    elem = helper.np_dtype_to_tensor_dtype(inputs["X"].dtype)
    model = onnx_cases.make_model([node], feeds, {o: elem for o in outputs if o}, opset, inits)
    got = irpass.evaluate(from_onnx(model), **feeds)
    got = list(got) if isinstance(got, tuple) else [got]
    want = run_ort(model, feeds) if ref == "ort" else ReferenceEvaluator(model).run(None, feeds)
    assert len(got) == len(want) == len([o for o in outputs if o])
    for gv, wv in zip(got, want, strict=True):
        assert gv.shape == wv.shape and gv.dtype == wv.dtype
        assert_outputs_close([gv], [wv], rtol=rtol, atol=atol, scaled_atol=atol)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_directions_and_layouts(op, direction, layout) -> None:
    dirs = 2 if direction == "bidirectional" else 1
    # onnxruntime refuses layout 1 (batch-major)
    check(op, make_inputs(op, dirs, layout=layout, init=True), direction=direction,
          layout=layout, ref="onnx" if layout else "ort")


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_defaults_without_bias_and_states(op) -> None:
    check(op, make_inputs(op, 1, bias=False))
    check(op, make_inputs(op, 1, bias=False), outputs=["", "Y_h"])  # Y left out


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("const", [(), ("sequence_lens",)])
@pytest.mark.parametrize("lens", [[4, 2, 1], [4, 0, 3]])  # an empty entry's final state is 0
def test_sequence_lens(op, direction, const, lens) -> None:
    dirs = 2 if direction == "bidirectional" else 1
    inputs = make_inputs(op, dirs, init=True, lens=lens)
    check(op, inputs, direction=direction, const=const)


@pytest.mark.parametrize("lbr", [0, 1])
@pytest.mark.parametrize("bias", [True, False])
def test_gru_linear_before_reset(lbr, bias) -> None:
    check("GRU", make_inputs("GRU", 2, bias=bias, init=True), direction="bidirectional",
          linear_before_reset=lbr)


def test_lstm_peepholes_and_input_forget() -> None:
    check("LSTM", make_inputs("LSTM", 2, init=True, peep=True), direction="bidirectional")
    check("LSTM", make_inputs("LSTM", 1, init=True, peep=True), input_forget=1)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_clip(op) -> None:
    check(op, make_inputs(op, 1, init=True), clip=0.3)


_ACTS = [
    ("Relu", [], []), ("Sigmoid", [], []), ("Affine", [0.5], [0.1]),
    ("LeakyRelu", [0.2], []), ("ThresholdedRelu", [0.1], []), ("ScaledTanh", [1.5], [0.7]),
    ("HardSigmoid", [0.3], [0.4]), ("Elu", [0.8], []), ("Softsign", [], []),
    ("Softplus", [], []),
]


@pytest.mark.parametrize("name, alpha, beta", _ACTS)
def test_rnn_activations(name, alpha, beta) -> None:
    attrs = {"activations": [name]}
    if alpha:
        attrs["activation_alpha"] = alpha
    if beta:
        attrs["activation_beta"] = beta
    check("RNN", make_inputs("RNN", 1, init=True), **attrs)


def test_activation_lists_consume_alpha_and_beta_in_order() -> None:
    check("GRU", make_inputs("GRU", 2, init=True), direction="bidirectional",
          activations=["HardSigmoid", "Tanh", "Sigmoid", "LeakyRelu"],
          activation_alpha=[0.3, 0.05], activation_beta=[0.4])
    check("LSTM", make_inputs("LSTM", 1, init=True),
          activations=["Sigmoid", "ScaledTanh", "Affine"],
          activation_alpha=[1.2, 0.9], activation_beta=[0.8, 0.1])


def test_float64() -> None:
    for op in ("RNN", "GRU", "LSTM"):  # onnxruntime has them for float32 only
        check(op, make_inputs(op, 1, dtype="float64"), ref="onnx")


def test_errors() -> None:
    def fails(op, inputs, match, **attrs):
        names = [n for n in _NAMES if n in inputs]
        node = helper.make_node(op, names, ["Y"], **attrs)
        model = onnx_cases.make_model([node], inputs, {"Y": 1}, 14)
        with pytest.raises(OnnxImportError, match=match):
            from_onnx(model)

    fails("RNN", make_inputs("RNN", 1, bias=False), "activation 'Gelu' is not one of",
          activations=["Gelu"])
    fails("RNN", make_inputs("RNN", 1, bias=False), "needs an activation_alpha",
          activations=["Affine"])
    fails("GRU", make_inputs("GRU", 2, bias=False), "needs 4", direction="bidirectional",
          activations=["Sigmoid", "Tanh"])
    fails("LSTM", make_inputs("LSTM", 2, bias=False), r"R .* must have shape \(1, ")
    fails("LSTM", make_inputs("LSTM", 1, bias=False), "direction 'sideways'",
          direction="sideways")
    fails("RNN", make_inputs("RNN", 1, bias=False), "hidden_size 7 does not match",
          hidden_size=7)
    fails("GRU", make_inputs("GRU", 1, bias=False, steps=0), "has no time steps")
