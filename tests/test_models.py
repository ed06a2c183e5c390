"""The example networks type-check, evaluate, and compute what they claim to."""

import irpass
import numpy as np
import pytest
from irpass.ir import Call, Constant, TensorType, infer_type, structural_equal, well_formed
from irpass.testing import random_inputs
from irpass.testing.models import MODELS, input_type, mlp, resnet, transformer_encoder


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_is_well_typed_and_deterministic(name):
    build = MODELS[name]
    mod = build()
    mod = infer_type(mod)
    assert well_formed(mod)
    assert isinstance(mod["main"].body.checked_type, TensorType)
    assert structural_equal(infer_type(build()), mod)  # same seed, same module
    assert not structural_equal(infer_type(build(seed=1)), mod)


@pytest.mark.parametrize("name", ["mlp", "resnet", "mobilenet"])
def test_classifier_outputs_are_probabilities(name):
    mod = MODELS[name]()
    out = irpass.evaluate(mod, **random_inputs(mod, seed=3))
    assert out.dtype == np.float32 and out.shape == (1, 10)
    assert np.all(out >= 0) and np.isclose(out.sum(), 1.0, atol=1e-5)


def _relu(x):
    return np.maximum(x, 0)


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_mlp_matches_a_numpy_forward_pass():
    mod = mlp(batch=2, in_features=8, hidden=(16, 12), num_classes=5, seed=7)
    # Read the weights off the IR from the output down: softmax(bias_add(dense(...))).
    layers = []
    node = mod["main"].body.args[0]
    while isinstance(node, Call):
        if node.op.name == "nn.bias_add":
            bias = node.args[1].data
            dense = node.args[0]
            layers.append((dense.args[1].data, bias))
            node = dense.args[0]
        elif node.op.name == "nn.relu":
            node = node.args[0]
        else:
            raise AssertionError(f"unexpected op {node.op.name}")
    layers.reverse()
    assert [w.shape for w, _ in layers] == [(16, 8), (12, 16), (5, 12)]

    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    h = x.astype(np.float64)
    for i, (w, b) in enumerate(layers):
        h = h @ w.T.astype(np.float64) + b
        if i < len(layers) - 1:
            h = _relu(h)
    np.testing.assert_allclose(irpass.evaluate(mod, x), _softmax(h), rtol=1e-5, atol=1e-6)


def test_resnet_treats_each_batch_element_independently():
    one = resnet(batch=1, image_size=16, channels=8, num_blocks=1, seed=5)
    two = resnet(batch=2, image_size=16, channels=8, num_blocks=1, seed=5)
    data = np.random.default_rng(1).standard_normal((2, 3, 16, 16)).astype(np.float32)
    both = irpass.evaluate(two, data)
    for i in range(2):
        np.testing.assert_allclose(
            both[i : i + 1], irpass.evaluate(one, data[i : i + 1]), rtol=1e-5, atol=1e-6
        )


def test_resnet_nhwc_variant_builds_and_runs():
    mod = resnet(image_size=16, channels=8, num_blocks=1, layout="NHWC")
    assert input_type(mod) == TensorType((1, 16, 16, 3))
    out = irpass.evaluate(mod, **random_inputs(mod))
    assert out.shape == (1, 10) and np.isclose(out.sum(), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="layout must be 'NCHW' or 'NHWC'"):
        resnet(layout="NCWH")


def test_mobilenet_uses_depthwise_convolutions():
    mod = MODELS["mobilenet"]()
    groups = []
    irpass.ir.post_order_visit(
        mod["main"],
        lambda n: (
            groups.append((n.attrs.groups, n.attrs.channels))
            if isinstance(n, Call) and n.op.name == "nn.conv2d"
            else None
        ),
    )
    assert any(g > 1 and g == c for g, c in groups), groups


def test_transformer_layer_is_permutation_equivariant():
    # Self-attention without positional encodings commutes with permuting the tokens:
    # a check of reshape/transpose/batch_matmul/softmax/layer_norm working together.
    mod = transformer_encoder(batch=1, seq_len=6, d_model=16, num_heads=4, d_ff=32, seed=2)
    x = np.random.default_rng(4).standard_normal((1, 6, 16)).astype(np.float32)
    perm = np.array([3, 0, 5, 1, 4, 2])
    out = irpass.evaluate(mod, x)
    out_perm = irpass.evaluate(mod, x[:, perm])
    np.testing.assert_allclose(out_perm, out[:, perm], rtol=1e-4, atol=1e-5)
    # layer_norm output: per token zero mean / unit variance before gamma, beta.
    assert out.shape == (1, 6, 16) and np.all(np.isfinite(out))


def test_models_hold_weights_as_constants():
    mod = resnet()
    consts = []
    irpass.ir.post_order_visit(
        mod["main"], lambda n: consts.append(n) if isinstance(n, Constant) else None
    )
    assert len(mod["main"].params) == 1 and len(consts) > 10
