"""Build a ResNet-style example network, type-check it, print it, run it, round-trip its text.

This is the README's "main job" until the `irpass` command exists:

    python examples/quickstart.py
"""

from __future__ import annotations

import collections

import irpass
import numpy as np
from irpass.ir import Call, infer_type, post_order_visit, well_formed
from irpass.testing import random_inputs
from irpass.testing.models import resnet


def op_counts(mod: irpass.IRModule) -> collections.Counter:
    """How many calls of each op the module's functions make."""
    counts: collections.Counter = collections.Counter()
    for _, func in mod.items():
        post_order_visit(
            func,
            lambda n: (
                counts.update([n.op.name])
                if isinstance(n, Call) and isinstance(n.op, irpass.Op)
                else None
            ),
        )
    return counts


def main() -> None:
    mod = resnet(image_size=32, channels=16, num_blocks=2, seed=0)
    mod = infer_type(mod)
    assert well_formed(mod)
    print(mod.astext(show_meta_data=False))
    print("ops:", dict(sorted(op_counts(mod).items())))

    inputs = random_inputs(mod, seed=0)
    probs = irpass.evaluate(mod, **inputs)
    print("output", probs.shape, probs.dtype, "sum", float(probs.sum()))
    assert np.isclose(probs.sum(), 1.0, atol=1e-5)

    again = irpass.parse(str(mod))
    irpass.assert_structural_equal(again, mod)
    np.testing.assert_array_equal(irpass.evaluate(again, **inputs), probs)
    print("text round trip: structurally equal, same outputs")


if __name__ == "__main__":
    main()
