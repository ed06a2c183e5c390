"""InferType: fill in ``checked_type`` on every expression of the module."""

from __future__ import annotations

from irpass.ir import IRModule, infer_type
from irpass.transform import PassContext, module_pass


@module_pass(opt_level=0, name="InferType")
def InferType(mod: IRModule, ctx: PassContext) -> IRModule:
    """Infer the type of every expression (the core's type inference as a pass).

    Every pass that reads ``checked_type`` lists ``"InferType"`` in its
    ``required``. A type error is a :class:`irpass.TypeInferenceError` naming
    the function and expression.
    """
    return infer_type(mod)
