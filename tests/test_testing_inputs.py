"""irpass.testing.inputs.generators_for_test: module-level generators reseeded per test, so a
test's random inputs do not depend on which tests drew before it in the same process."""

from __future__ import annotations

import os
import types
import zlib

import numpy as np
from irpass.testing.inputs import generators_for_test

RNG = np.random.default_rng(2)


def _module(seed: int) -> types.ModuleType:
    mod = types.ModuleType("fake_tests")
    mod.RNG = np.random.default_rng(seed)
    mod.other = np.random.default_rng(seed + 1)
    mod.NOT_A_GENERATOR = 7
    return mod


def _draws(mod: types.ModuleType, name: str) -> dict[str, list[float]]:
    return {k: g.random(4).tolist() for k, g in generators_for_test(mod, name).items()}


def test_draws_depend_on_the_test_and_the_seed_not_on_earlier_draws(monkeypatch):
    monkeypatch.delenv("IRPASS_TEST_SEED", raising=False)
    mod = _module(7)
    first = _draws(mod, "test_a[1]")
    mod.RNG.random(100)  # a test that drew before: it changes nothing
    assert _draws(mod, "test_a[1]") == first
    assert set(first) == {"RNG", "other"}  # every Generator, nothing else
    assert first["RNG"] != first["other"]
    assert _draws(mod, "test_a[2]")["RNG"] != first["RNG"]  # another test
    assert _draws(_module(8), "test_a[1]")["RNG"] != first["RNG"]  # another module seed
    monkeypatch.setenv("IRPASS_TEST_SEED", "1")
    assert _draws(mod, "test_a[1]")["RNG"] != first["RNG"]  # other inputs on demand


def test_the_suite_reseeds_this_module_for_each_test():
    # irpass_seeded_generators (usefixtures in pyproject.toml) rebound RNG for this test
    name = "test_the_suite_reseeds_this_module_for_each_test"
    salt = int(os.environ.get("IRPASS_TEST_SEED", "0"))
    want = np.random.default_rng([2, zlib.crc32(name.encode()), salt])
    assert RNG.random(3).tolist() == want.random(3).tolist()
