"""IRModule: the unit passes work on, a set of named global functions.

A module is immutable. ``with_function`` and ``update`` return new modules
that share the untouched functions with the old one, so handing a module to a
pass can never change it for anybody else.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

from .expr import Expr
from .nodes import Function, GlobalVar, Var

__all__ = ["IRModule"]


class IRModule:
    """A mapping from :class:`GlobalVar` to :class:`Function`.

    Functions are looked up by ``GlobalVar`` or by name (``mod["main"]``);
    global vars are identified by their name, and the module keeps one
    canonical ``GlobalVar`` object per name (``mod.get_global_var(name)``).
    """

    # __weakref__: type inference remembers the modules it has typed (a weak set)
    __slots__ = ("_funcs", "_gvars", "__weakref__")

    def __init__(self, functions: Mapping[GlobalVar | str, Function] | None = None) -> None:
        funcs: dict[str, Function] = {}
        gvars: dict[str, GlobalVar] = {}
        if functions is not None:
            if not isinstance(functions, Mapping):
                raise TypeError(
                    f"IRModule(functions=...) must be a mapping of GlobalVar or name to Function, "
                    f"got {type(functions).__name__}"
                )
            for key, func in functions.items():
                gv = _as_global_var(key)
                if gv.name_hint in funcs:
                    raise ValueError(f"IRModule: function name {gv.name_hint!r} given twice")
                if not isinstance(func, Function):
                    kind = type(func).__name__
                    raise TypeError(f"IRModule: @{gv.name_hint} must map to a Function, got {kind}")
                funcs[gv.name_hint] = func
                gvars[gv.name_hint] = gv
        object.__setattr__(self, "_funcs", funcs)
        object.__setattr__(self, "_gvars", gvars)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("IRModule is immutable; use with_function / update to build a new one")

    def __copy__(self) -> IRModule:
        return self

    def __deepcopy__(self, memo: dict) -> IRModule:
        return self

    @staticmethod
    def from_expr(expr: Expr) -> IRModule:
        """A module whose ``main`` is ``expr``.

        A :class:`Function` is used as is; any other expression becomes the
        body of a function whose params are its free variables (in order of
        first appearance).
        """
        if not isinstance(expr, Expr):
            raise TypeError(f"IRModule.from_expr needs an Expr, got {type(expr).__name__}")
        if not isinstance(expr, Function):
            from .analysis import free_vars

            expr = Function(free_vars(expr), expr)
        return IRModule({"main": expr})

    # -- lookup ----------------------------------------------------------------
    def __getitem__(self, key: GlobalVar | str) -> Function:
        name = _name_of(key)
        try:
            return self._funcs[name]
        except KeyError:
            raise KeyError(
                f"no function @{name} in the module (has: {sorted(self._funcs)})"
            ) from None

    def __contains__(self, key: object) -> bool:
        if isinstance(key, (str, GlobalVar)):
            return _name_of(key) in self._funcs
        return False

    def __iter__(self) -> Iterator[GlobalVar]:
        return iter(self._gvars.values())

    def __len__(self) -> int:
        return len(self._funcs)

    def get_global_var(self, name: str) -> GlobalVar:
        """The module's ``GlobalVar`` called ``name``."""
        try:
            return self._gvars[name]
        except KeyError:
            raise KeyError(
                f"no function @{name} in the module (has: {sorted(self._funcs)})"
            ) from None

    def get_global_vars(self) -> list[GlobalVar]:
        """All global vars, in insertion order."""
        return list(self._gvars.values())

    @property
    def functions(self) -> Mapping[GlobalVar, Function]:
        """A read-only view ``{GlobalVar: Function}`` in insertion order."""
        return MappingProxyType({self._gvars[n]: f for n, f in self._funcs.items()})

    def items(self) -> list[tuple[GlobalVar, Function]]:
        """``(GlobalVar, Function)`` pairs in insertion order."""
        return [(self._gvars[n], f) for n, f in self._funcs.items()]

    # -- functional updates ------------------------------------------------------
    def with_function(self, key: GlobalVar | str, func: Function) -> IRModule:
        """A new module with ``key`` bound to ``func`` (added or replaced)."""
        if not isinstance(func, Function):
            raise TypeError(f"with_function: expected a Function, got {type(func).__name__}")
        gv = _as_global_var(key)
        new = IRModule.__new__(IRModule)
        funcs = dict(self._funcs)
        gvars = dict(self._gvars)
        funcs[gv.name_hint] = func
        gvars.setdefault(gv.name_hint, gv)
        object.__setattr__(new, "_funcs", funcs)
        object.__setattr__(new, "_gvars", gvars)
        return new

    def without_function(self, key: GlobalVar | str) -> IRModule:
        """A new module without the function ``key``."""
        name = _name_of(key)
        self[name]  # raises a clear KeyError if absent
        new = IRModule.__new__(IRModule)
        object.__setattr__(new, "_funcs", {n: f for n, f in self._funcs.items() if n != name})
        object.__setattr__(new, "_gvars", {n: g for n, g in self._gvars.items() if n != name})
        return new

    def update(self, other: IRModule) -> IRModule:
        """A new module with every function of ``other`` added (replacing same names)."""
        if not isinstance(other, IRModule):
            raise TypeError(f"update: expected an IRModule, got {type(other).__name__}")
        new = self
        for gv, func in other.items():
            new = new.with_function(gv, func)
        return new

    def same_as(self, other: object) -> bool:
        """True when ``other`` is this very module object."""
        return self is other

    # -- text ---------------------------------------------------------------------
    def astext(self, show_meta_data: bool = True, elide_constants: int | None = None) -> str:
        """The text form (see :mod:`irpass.ir.printer`); parse it back with ``irpass.parse``
        (unless ``elide_constants=N`` left out the data of constants over N elements)."""
        from .printer import print_module

        return print_module(self, show_meta_data=show_meta_data,
                            elide_constants=elide_constants)

    def __str__(self) -> str:
        return self.astext()

    def __repr__(self) -> str:
        return f"IRModule({', '.join('@' + n for n in self._funcs)})"


def _name_of(key: GlobalVar | str) -> str:
    if isinstance(key, GlobalVar):
        return key.name_hint
    if isinstance(key, str):
        return key
    raise TypeError(f"functions are looked up by GlobalVar or name, got {type(key).__name__}")


def _as_global_var(key: GlobalVar | str) -> GlobalVar:
    if isinstance(key, GlobalVar):
        return key
    if isinstance(key, str):
        return GlobalVar(key)
    if isinstance(key, Var):
        raise TypeError(f"module keys are GlobalVars or names, got the local Var %{key.name_hint}")
    raise TypeError(f"module keys are GlobalVars or names, got {type(key).__name__}")
