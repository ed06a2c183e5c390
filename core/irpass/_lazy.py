"""Public names of a package imported on first use (PEP 562), so that importing the
package (or one of its submodules) does not import all the others.

``import irpass.transform.registry`` runs ``irpass/__init__.py`` and
``irpass/transform/__init__.py`` first; were those to import every submodule, as
re-exporting packages usually do, a command that only lists passes would import
the whole IR, the op set and numpy (about 0.3 s). The packages instead declare
where each public name lives and let :func:`attach` import it when it is first
read; the value is then stored in the package, so later reads are plain
attribute lookups.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["LazyModule", "attach", "check_target", "import_target"]


def attach(
    package: str,
    namespace: dict[str, Any],
    names: Mapping[str, Iterable[str]],
    submodules: Iterable[str] = (),
    fallback: Callable[[str], Any] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` (whose globals are
    ``namespace``).

    ``names`` maps a submodule (relative: ``".nodes"``) to the public names it
    defines; ``submodules`` are public names that are submodules themselves
    (``"op"``). A name that is neither goes to ``fallback``, which returns its
    value or raises ``AttributeError``; without one it is an ``AttributeError``.
    """
    where = {name: module for module, members in names.items() for name in members}
    shadowed = frozenset(name for name, module in where.items() if module == "." + name)
    subs = frozenset(submodules)
    if shadowed:
        # Importing submodule ``describe`` binds the package's attribute ``describe``
        # to the module, hiding the function of that name; eager re-exports bound the
        # function again afterwards, this class refuses the binding instead.
        module = sys.modules[package]
        module.__class__ = _KeepFunctions
        namespace["_lazy_shadowed"] = shadowed

    def __getattr__(name: str) -> Any:
        if name in subs:
            value = importlib.import_module("." + name, package)
        elif name in where:
            value = getattr(importlib.import_module(where[name], package), name)
        elif fallback is not None:
            return fallback(name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value  # later reads do not come here
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where) | subs)

    return __getattr__, __dir__


class _KeepFunctions(ModuleType):
    """A package whose public names in ``_lazy_shadowed`` are functions named as their
    submodules: importing the submodule leaves the package's attribute alone."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and name in self.__dict__.get("_lazy_shadowed", ()):
            return
        super().__setattr__(name, value)


class LazyModule:
    """Stands for a module under a global name until the first attribute is read from it,
    which imports the module and binds the name to it: later reads are the module's own.

    ``np = LazyModule("numpy", globals(), "np")`` lets a module import numpy only when
    code that computes with arrays first runs (building a :class:`~irpass.ir.Constant`,
    say), while its type checks on plain Python values run first and never touch it.
    """

    __slots__ = ("_module", "_namespace", "_alias")

    def __init__(self, module: str, namespace: dict[str, Any], alias: str) -> None:
        self._module = module
        self._namespace = namespace
        self._alias = alias

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self._module)
        self._namespace[self._alias] = module
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._module!r}>"


def check_target(target: object, what: str) -> str:
    """``target`` if it is a declaration's ``"package.module:attr"`` (the form of
    :class:`~irpass.transform.LazyPass`, ``LazyInstrument`` and ``LazyRuleSet``), else a
    ``ValueError`` naming ``what`` declared it."""
    module, _, attr = target.partition(":") if isinstance(target, str) else ("", "", "")
    if not module or not attr.isidentifier():
        raise ValueError(f"{what}: target must be 'package.module:attr', got {target!r}")
    return target


def import_target(target: str, failure: str) -> Any:
    """The object a checked ``"package.module:attr"`` names, imported now. If the import
    fails (``ImportError`` or a missing ``attr``), an ``ImportError`` saying ``failure``
    (the caller's words for what could not be imported) and the cause."""
    module, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"{failure}: {type(exc).__name__}: {exc}") from exc

