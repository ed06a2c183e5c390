"""Build a ResNet-style example network, type-check it, print it, run it, round-trip its
text, then run a small pass pipeline over it under a timing instrument.

This is the README's "main job" until the `irpass` command exists:

    python examples/quickstart.py
"""

from __future__ import annotations

import collections

import irpass
import numpy as np
from irpass.instrument import PassTimingInstrument
from irpass.ir import (
    Call,
    ExprMutator,
    Function,
    IRModule,
    Op,
    infer_type,
    post_order_visit,
    well_formed,
)
from irpass.testing import random_inputs
from irpass.testing.models import resnet
from irpass.transform import PassContext, Sequential, function_pass, module_pass


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


class _ReluToMaximum(ExprMutator):
    def visit_call(self, call: Call) -> irpass.Expr:
        new = super().visit_call(call)
        if isinstance(new, Call) and new.op is Op.get("nn.relu"):
            # the rewritten argument is a new, untyped node: take the dtype from the original
            dtype = call.args[0].checked_type.dtype
            return irpass.op.maximum(new.args[0], irpass.const(np.zeros((), dtype)))
        return new


@function_pass(opt_level=1)
def relu_to_maximum(func: Function, mod: IRModule, ctx: PassContext) -> Function:
    """Rewrite ``nn.relu(x)`` as ``maximum(x, 0)`` (needs types: the zero takes x's dtype)."""
    return _ReluToMaximum().visit(func)


@module_pass(opt_level=0, name="TypeCheck")
def type_check(mod: IRModule, ctx: PassContext) -> IRModule:
    """Fill ``checked_type`` on every node."""
    return infer_type(mod)


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

    pipeline = Sequential([type_check, relu_to_maximum, type_check], name="quickstart")
    timing = PassTimingInstrument()
    with PassContext(opt_level=2, instruments=[timing]):
        rewritten = pipeline(mod)
        print(timing.render(), end="")
    assert "nn.relu" not in op_counts(rewritten) and "nn.relu" in op_counts(mod)
    np.testing.assert_allclose(irpass.evaluate(rewritten, **inputs), probs, rtol=1e-6)
    print("pipeline: every nn.relu became maximum, same outputs")


if __name__ == "__main__":
    main()
