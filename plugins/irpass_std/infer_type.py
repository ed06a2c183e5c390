"""InferType: fill in ``checked_type`` on every expression, ``ret_type`` on every function."""

from __future__ import annotations

from irpass.ir import Function, IRModule, infer_type
from irpass.transform import PassContext, module_pass


@module_pass(opt_level=0, name="InferType")
def InferType(mod: IRModule, ctx: PassContext) -> IRModule:
    """Infer the type of every expression (the core's type inference as a pass).

    Like TVM's, it also gives every function without a ``ret_type`` (nested
    ones included) its inferred return type, in a new module; a module whose
    functions are all annotated comes back as the same object. Every pass
    that reads ``checked_type`` lists ``"InferType"`` in its ``required``; the
    nodes a pass left unchanged keep their types without a walk (see "Types
    kept" in :mod:`irpass.ir.type_infer`). A
    type error is a :class:`irpass.TypeInferenceError` naming the function and
    expression.
    """
    return infer_type(mod)


def typed_function(func: Function, mod: IRModule) -> Function:
    """``func`` with a type on every node, for the function passes that read types.

    They list InferType in ``required``, so this is usually ``func`` itself; when the
    requirement was skipped (InferType disabled, or the pass called directly) the
    types are inferred here, which returns a copy when a function lacked its
    ``ret_type`` or a node shared with another program had a different type. So
    what such a pass rebuilds carries every ``ret_type``, as after InferType.
    """
    if (
        func.ret_type is not None
        and func.body._checked_type is not None
        and func._checked_type is not None
    ):
        return func
    return infer_type(func, mod)
