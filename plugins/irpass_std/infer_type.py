"""InferType: fill in ``checked_type`` on every expression of the module."""

from __future__ import annotations

from irpass.ir import Function, IRModule, infer_type
from irpass.transform import PassContext, module_pass


@module_pass(opt_level=0, name="InferType")
def InferType(mod: IRModule, ctx: PassContext) -> IRModule:
    """Infer the type of every expression (the core's type inference as a pass).

    Every pass that reads ``checked_type`` lists ``"InferType"`` in its
    ``required``. A type error is a :class:`irpass.TypeInferenceError` naming
    the function and expression.
    """
    return infer_type(mod)


def typed_function(func: Function, mod: IRModule) -> Function:
    """``func`` with a type on every node, for the function passes that read types.

    They list InferType in ``required``, so this is usually ``func`` itself; when the
    requirement was skipped (InferType disabled) the types are inferred here, which
    may return a retyped copy.
    """
    if func.body._checked_type is not None and func._checked_type is not None:
        return func
    return infer_type(func, mod)
