"""nn.group_norm and nn.instance_norm: kernels against loop references written here, the
statistics' axes for every channel axis, float16, defaults and type-relation errors."""

from __future__ import annotations

import numpy as np
import pytest
from irpass.ir import var
from irpass.op.nn.norm import group_norm, instance_norm
from op_checks import infer, run, t

X, G, B = var("x"), var("g"), var("b")
RNG = np.random.default_rng(5)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def group_norm_ref(x, gamma, beta, groups, axis, eps, center=True, scale=True):
    """Loops over batch items and groups; each group's statistics cover its channels and every
    axis but the batch and channel ones."""
    x = np.moveaxis(x.astype("float64"), axis, 1)
    out = np.empty_like(x)
    per = x.shape[1] // groups
    for n in range(x.shape[0]):
        for g in range(groups):
            part = x[n, g * per:(g + 1) * per]
            mu = part.sum() / part.size
            var_ = ((part - mu) ** 2).sum() / part.size
            out[n, g * per:(g + 1) * per] = (part - mu) / np.sqrt(var_ + eps)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if scale:
        out = out * gamma.reshape(shape)
    if center:
        out = out + beta.reshape(shape)
    return np.moveaxis(out, 1, axis)


@pytest.mark.parametrize("shape, groups, axis", [
    ((2, 6, 3, 4), 3, 1),
    ((2, 6, 3, 4), 1, 1),
    ((2, 6, 3, 4), 6, 1),
    ((2, 3, 4, 6), 2, 3),
    ((2, 3, 4, 6), 2, -1),
    ((3, 8), 4, 1),
    ((2, 5, 4), 2, 2),
])
def test_group_norm_matches_loops(shape, groups, axis) -> None:
    x = rand(*shape) * 3 + 1
    c = shape[axis]
    gamma, beta = rand(c), rand(c)
    out = run(group_norm(X, G, B, num_groups=groups, axis=axis, epsilon=1e-3), x, gamma, beta)
    np.testing.assert_allclose(out, group_norm_ref(x, gamma, beta, groups, axis % len(shape),
                                                   1e-3), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("center, scale", [(False, True), (True, False), (False, False)])
def test_group_norm_center_scale(center, scale) -> None:
    x, gamma, beta = rand(2, 4, 3), rand(4), rand(4)
    out = run(group_norm(X, G, B, num_groups=2, center=center, scale=scale), x, gamma, beta)
    ref = group_norm_ref(x, gamma, beta, 2, 1, 1e-5, center, scale)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape, axis", [((2, 3, 4, 5), 1), ((2, 4, 5, 3), 3), ((2, 3, 7), 1)])
def test_instance_norm_matches_loops(shape, axis) -> None:
    x = rand(*shape) * 2 - 1
    c = shape[axis]
    gamma, beta = rand(c), rand(c)
    out = run(instance_norm(X, G, B, axis=axis, epsilon=1e-4), x, gamma, beta)
    np.testing.assert_allclose(out, group_norm_ref(x, gamma, beta, c, axis, 1e-4),
                               rtol=1e-4, atol=1e-5)


def test_float16_accumulates_in_float32() -> None:
    # 2048 values near 1000: a float16 sum would overflow its 65504 range
    x = (1000 + rand(1, 2, 32, 32)).astype("float16")
    gamma, beta = np.ones(2, "float16"), np.zeros(2, "float16")
    for call in (group_norm(X, G, B, num_groups=1), instance_norm(X, G, B)):
        out = run(call, x, gamma, beta)
        assert out.dtype == np.float16 and np.isfinite(out).all()
    ref = group_norm_ref(x, gamma.astype("float64"), beta.astype("float64"), 1, 1, 1e-5)
    np.testing.assert_allclose(run(group_norm(X, G, B, num_groups=1), x, gamma, beta), ref,
                               atol=2e-2)


def test_defaults_and_attribute_errors() -> None:
    attrs = group_norm(X, G, B, num_groups=2).attrs
    assert (attrs["axis"], attrs["epsilon"], attrs["center"], attrs["scale"]) == \
        (1, 1e-5, True, True)
    attrs = instance_norm(X, G, B).attrs
    assert (attrs["axis"], attrs["epsilon"], attrs["center"], attrs["scale"]) == \
        (1, 1e-5, True, True)
    with pytest.raises(ValueError, match="nn.group_norm.num_groups must be >= 1, got 0"):
        group_norm(X, G, B, num_groups=0)
    with pytest.raises(ValueError, match="nn.instance_norm.epsilon must be >= 0"):
        instance_norm(X, G, B, epsilon=-1.0)


def test_type_relation_errors() -> None:
    gn = group_norm(X, G, B, num_groups=4)
    assert infer(gn, t(2, 8, 3), t(8), t(8)) == t(2, 8, 3)
    with pytest.raises(ValueError, match=r"nn.group_norm: num_groups 4 does not divide the 6 "
                                         r"channels of axis 1 of data \(2, 6, 3\)"):
        infer(gn, t(2, 6, 3), t(6), t(6))
    with pytest.raises(ValueError, match=r"nn.group_norm: gamma must have shape \(8,\)"):
        infer(gn, t(2, 8, 3), t(4), t(8))
    with pytest.raises(TypeError, match="nn.group_norm: beta has dtype float16 but data has"):
        infer(gn, t(2, 8, 3), t(8), t(8, dtype="float16"))
    with pytest.raises(TypeError, match="nn.group_norm: data must have a floating-point"):
        infer(gn, t(2, 8, 3, dtype="int32"), t(8, dtype="int32"), t(8, dtype="int32"))
    with pytest.raises(ValueError, match="nn.group_norm: data must have at least 2 dim"):
        infer(gn, t(8), t(8), t(8))
    with pytest.raises(ValueError, match="nn.group_norm: axis must name the channel axis"):
        infer(group_norm(X, G, B, num_groups=1, axis=0), t(2, 8), t(2), t(2))
    inn = instance_norm(X, G, B)
    with pytest.raises(ValueError, match="nn.instance_norm: data must have at least 3 dim"):
        infer(inn, t(2, 3), t(3), t(3))
    with pytest.raises(ValueError, match="nn.instance_norm: axis 4 is out of range"):
        infer(instance_norm(X, G, B, axis=4), t(2, 3, 4), t(3), t(3))
