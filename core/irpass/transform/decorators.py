"""The ``module_pass`` and ``function_pass`` decorators.

Both accept a function or a class, with or without arguments, or are called
directly::

    @module_pass(opt_level=2)
    def drop_debug(mod, ctx): ...             # drop_debug is a ModulePass

    @function_pass
    class ScaleBy:                            # ScaleBy(3.0) is a FunctionPass
        def __init__(self, k): self.k = k
        def transform_function(self, func, mod, ctx): ...

    p = module_pass(drop_debug_func, opt_level=3, name="DropDebug")

A decorated function becomes a pass instance; a decorated class becomes a
pass class whose constructor takes the original class's arguments (the
original instance's attributes stay reachable on the pass). The default name
is the function's or class's name, the default ``opt_level`` 0.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from .info import PassInfo
from .passes import FunctionPass, ModulePass

__all__ = ["module_pass", "function_pass"]


def module_pass(
    pass_func: Callable[..., Any] | type | None = None,
    opt_level: int | None = None,
    name: str | None = None,
    required: Sequence[str] = (),
) -> Any:
    """Make a :class:`ModulePass` from ``pass_func(mod, ctx) -> IRModule`` or from a
    class with ``transform_module(self, mod, ctx)``."""
    return _decorate(ModulePass, "transform_module", ("mod", "ctx"),
                     pass_func, opt_level, name, required)


def function_pass(
    pass_func: Callable[..., Any] | type | None = None,
    opt_level: int | None = None,
    name: str | None = None,
    required: Sequence[str] = (),
) -> Any:
    """Make a :class:`FunctionPass` from ``pass_func(func, mod, ctx) -> Function`` or
    from a class with ``transform_function(self, func, mod, ctx)``."""
    return _decorate(FunctionPass, "transform_function", ("func", "mod", "ctx"),
                     pass_func, opt_level, name, required)


def _decorate(
    kind: type,
    method: str,
    params: tuple[str, ...],
    pass_func: Any,
    opt_level: int | None,
    name: str | None,
    required: Sequence[str],
) -> Any:
    decorator = "module_pass" if kind is ModulePass else "function_pass"
    level = 0 if opt_level is None else opt_level

    def create(obj: Any) -> Any:
        if isinstance(obj, type):
            impl = getattr(obj, method, None)
            if not callable(impl):
                raise TypeError(
                    f"{decorator}: class {obj.__qualname__} must define "
                    f"{method}(self, {', '.join(params)})"
                )
            _check_arity(decorator, obj.__qualname__ + "." + method, impl, ("self",) + params)
            return _pass_class(kind, method, obj, PassInfo(level, name or obj.__name__, required))
        if callable(obj):
            label = getattr(obj, "__qualname__", repr(obj))
            _check_arity(decorator, label, obj, params)
            pass_name = name or getattr(obj, "__name__", None) or type(obj).__name__
            return kind(obj, PassInfo(level, pass_name, required))
        hint = ""
        if isinstance(obj, int):
            hint = f" (did you mean {decorator}(opt_level={obj})?)"
        raise TypeError(
            f"{decorator} decorates a function or a class, got {type(obj).__name__} {obj!r}{hint}"
        )

    if pass_func is None:
        return create
    return create(pass_func)


def _pass_class(kind: type, method: str, cls: type, info: PassInfo) -> type:
    """A subclass of ``kind`` whose instances wrap an instance of ``cls``."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        inst = cls(*args, **kwargs)
        self.__dict__["_inst"] = inst
        kind.__init__(self, getattr(inst, method), info)

    def __getattr__(self: Any, attr: str) -> Any:
        # only reached for names the pass itself lacks: look on the user's object
        try:
            inst = self.__dict__["_inst"]
        except KeyError:
            raise AttributeError(attr) from None
        return getattr(inst, attr)

    namespace = {
        "__init__": __init__,
        "__getattr__": __getattr__,
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
        "__wrapped__": cls,
        "_kind": kind.__name__,
    }
    return type(cls.__name__, (kind,), namespace)


def _check_arity(decorator: str, label: str, func: Any, params: tuple[str, ...]) -> None:
    """Refuse, when the pass is made, a function that cannot take the pass arguments."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):  # builtins without a signature: let the call tell
        return
    try:
        sig.bind(*params)
    except TypeError:
        raise TypeError(
            f"{decorator}: {label}{sig} cannot be called as {label}({', '.join(params)})"
        ) from None
