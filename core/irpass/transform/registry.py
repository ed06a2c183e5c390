"""The pass registry: pass factories by name, and ``required`` resolution.

A registered pass is a *factory*: calling it (with the pass's arguments, if
any) returns a new :class:`Pass`. Factories are what ``irpass.transform.X``
returns, what ``get_pass("X")`` calls, and how a pass's ``required`` names
are turned into passes at run time::

    @register_pass
    def FoldConstant() -> Pass:
        return function_pass(_fold, opt_level=2, name="FoldConstant")

A pack that wants ``irpass passes`` and plugin loading to stay fast registers
its passes as :class:`LazyPass` declarations instead: the name, opt level,
requirements and one-line description, and where the pass lives
(``"package.module:attr"``), which is imported only when the pass is first
made (:func:`get_pass`, ``irpass.transform.X``, a pipeline that runs it)::

    LazyPass("my_pack.fold:FoldMore", opt_level=2, required=["InferType"],
             description="Fold what FoldConstant leaves")

:func:`get_pass` checks the declaration against the pass it makes (a declared
opt level or requirement the pass does not have is a ``TypeError``), so a
listing never shows what running would not do. :attr:`PassEntry.lazy` gives a
listing the declaration of such a pass, without importing it.

Requirements are resolved only when a :class:`irpass.transform.Sequential`
runs a pass, as in TVM; a pass called directly runs alone. Each time a
Sequential runs a pass, :func:`run_requirements` runs the names it requires,
the names those require, and so on, first, in dependency order, each once
for that pass (a requirement shared by two requirements runs once). Going
down the whole requirement graph is irpass's one extension over TVM, whose
Sequential runs a pass's own requirements only: since a requirement runs
alone like any pass, its own requirements would otherwise never run. A cycle
or an unknown name is a :class:`irpass.PassDependencyError`. A requirement
named in the context's ``disabled_pass`` is skipped, and so are the
requirements only it needs; the requirements' opt levels are not checked
(the pass that needs them decided).
"""

from __future__ import annotations

import difflib
import inspect
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, overload

from .._lazy import check_target, import_target
from .._lazy_plugins import ensure_plugins
from ..errors import PassDependencyError, PassError
from ..ir.module import IRModule
from .context import PassContext
from .info import PassInfo
from .passes import Pass

__all__ = [
    "LazyPass",
    "PassEntry",
    "register_pass",
    "check_pass_factory",
    "get_pass",
    "get_pass_entry",
    "list_passes",
    "close_pass_names",
]

PassFactory = Callable[..., Pass]


@dataclass(frozen=True)
class PassEntry:
    """A registered pass: its name, factory, where the factory was defined
    (``origin``, ``module.qualname``) and who registered it (``owner``: a
    plugin or package name)."""

    name: str
    factory: PassFactory
    origin: str
    owner: str

    @property
    def lazy(self) -> LazyPass | None:
        """The declaration of a pass registered as a :class:`LazyPass` (its opt level,
        requirements and description, known without importing it), else None."""
        factory = self.factory
        return factory if isinstance(factory, LazyPass) else None


_PASSES: dict[str, PassEntry] = {}


class _Instance:
    """The factory of a pass registered as an instance: returns that instance."""

    def __init__(self, instance: Pass) -> None:
        self.instance = instance
        self.__doc__ = type(instance).__doc__

    def __call__(self) -> Pass:
        return self.instance

    def __repr__(self) -> str:
        return f"<factory of {self.instance!r}>"


class _TargetSignature:
    """``LazyPass.__signature__``: the target factory's signature (importing it), so that
    ``inspect.signature`` of a declaration reads the pass's options; None on the class."""

    def __get__(self, obj: LazyPass | None, owner: type | None = None) -> inspect.Signature | None:
        return None if obj is None else inspect.signature(obj.load())


class LazyPass:
    """A pass declared by where it lives (``target``, ``"package.module:attr"``), imported
    the first time it is made; what a listing needs is declared with it.

    ``attr`` is what :func:`register_pass` takes: a pass factory or a :class:`Pass`.
    ``name`` defaults to ``attr``; ``opt_level``, ``required`` and ``description`` (one
    line) must be those of the pass, which :func:`get_pass` checks each time it makes it.
    Calling the declaration makes the pass (``LazyPass(...)()``), as a factory would;
    once imported, its ``__doc__`` and signature are the factory's.
    """

    __signature__ = _TargetSignature()

    def __init__(
        self,
        target: str,
        *,
        opt_level: int,
        required: Iterable[str] | str = (),
        description: str = "",
        name: str | None = None,
    ) -> None:
        attr = check_target(target, "LazyPass").partition(":")[2]
        if not isinstance(description, str):
            raise TypeError(f"LazyPass {target!r}: description must be a str, got {description!r}")
        #: What the pass's own ``info`` must be (``name`` defaults to ``attr``).
        self.info = PassInfo(opt_level, attr if name is None else name, required)
        self.target = target
        self.description = description
        self.__doc__ = description  # what a listing shows of a factory
        self._factory: PassFactory | None = None

    @property
    def name(self) -> str:
        """The pass's name."""
        return self.info.name

    def load(self) -> PassFactory:
        """Import the target (once) and return its factory (a :class:`Pass` target: a
        factory returning it). ``ImportError`` / ``TypeError`` naming the pass and target."""
        if self._factory is None:
            obj = import_target(
                self.target,
                f"pass {self.name!r} is declared at {self.target!r}, which cannot be imported",
            )
            try:
                check_pass_factory(obj)
            except TypeError as exc:
                raise TypeError(f"pass {self.name!r} declared at {self.target!r}: {exc}") from None
            self._factory = _Instance(obj) if isinstance(obj, Pass) else obj
            self.__doc__ = self._factory.__doc__
        return self._factory

    def __call__(self, *args: Any, **kwargs: Any) -> Pass:
        made = self.load()(*args, **kwargs)
        info = getattr(made, "info", None)
        if isinstance(made, Pass) and info != self.info:
            raise TypeError(
                f"pass {self.name!r} is declared as opt_level={self.info.opt_level}, "
                f"required={list(self.info.required)} (LazyPass {self.target!r}), but the "
                f"pass made is {info.name!r} with opt_level={info.opt_level}, "
                f"required={list(info.required)}: correct the declaration"
            )
        return made

    def __repr__(self) -> str:
        return f"LazyPass({self.target!r}, name={self.name!r})"


@overload
def register_pass(
    factory: PassFactory | Pass,
    name: str | None = None,
    *,
    override: bool = False,
    owner: str | None = None,
) -> Any: ...
@overload
def register_pass(
    factory: None = None,
    name: str | None = None,
    *,
    override: bool = False,
    owner: str | None = None,
) -> Callable[[Any], Any]: ...


def register_pass(
    factory: PassFactory | Pass | None = None,
    name: str | None = None,
    *,
    override: bool = False,
    owner: str | None = None,
) -> Any:
    """Register a pass factory (or a pass) under ``name``; returns what it was given.

    Decorator (``@register_pass``, ``@register_pass(name="X")``) or call
    (``register_pass(make_x, "X")``). ``factory`` is a callable returning a
    new :class:`Pass` (a function or a class decorated with
    ``module_pass``/``function_pass``), a :class:`Pass` instance, which
    every lookup then returns, or a :class:`LazyPass` declaring one of those
    (imported when first made). ``name`` defaults to the factory's
    ``__name__`` (the pass's ``info.name`` for an instance); ``owner``
    defaults to the top-level package that defines the factory.

    Registering a different factory under a taken name is a ``ValueError``
    naming both origins, unless ``override=True``; registering the same one
    again is a no-op. What cannot be a factory -- a built-in function such as
    ``len``, a class that is not a :class:`Pass`, a function annotated to
    return something else -- is a ``TypeError`` (see :func:`check_pass_factory`).
    """

    def register(obj: Any) -> Any:
        entry = _make_entry(obj, name, owner)
        old = _PASSES.get(entry.name)
        if old is not None and not override and not _same(old, entry):
            raise ValueError(
                f"pass {entry.name!r} is already registered by {old.owner!r} ({old.origin}); "
                f"{entry.owner!r} ({entry.origin}) cannot register it again "
                "(pass override=True to replace it)"
            )
        _PASSES[entry.name] = entry
        return obj

    if factory is None:
        return register
    if isinstance(factory, str):
        raise TypeError(
            f"register_pass: the first argument is the factory; write "
            f"register_pass(factory, {factory!r}) or @register_pass(name={factory!r})"
        )
    return register(factory)


def get_pass(name: str, *args: Any, **kwargs: Any) -> Pass:
    """A new instance of the pass registered as ``name``, made with ``args`` / ``kwargs``."""
    entry = get_pass_entry(name)
    try:
        made = entry.factory(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"cannot create pass {name!r} ({entry.origin}): {exc}") from exc
    if not isinstance(made, Pass):
        raise TypeError(
            f"the factory of pass {name!r} ({entry.origin}, registered by {entry.owner!r}) "
            f"returned {type(made).__name__}, not a Pass"
        )
    return made


def get_pass_entry(name: str) -> PassEntry:
    """The registry entry of ``name``; a ``KeyError`` listing close names if absent."""
    if not isinstance(name, str):
        raise TypeError(f"pass names are str, got {name!r}")
    entry = lookup(name)
    if entry is None:
        raise KeyError(_unknown_message(name))
    return entry


def lookup(name: str) -> PassEntry | None:
    """The entry of ``name``, loading the plugins first if it is not registered yet; or None."""
    entry = _PASSES.get(name)
    if entry is None:
        ensure_plugins()
        entry = _PASSES.get(name)
    return entry


def load_factory(name: str) -> PassFactory:
    """The factory of the pass registered as ``name``, imported if it was declared as a
    :class:`LazyPass` (``KeyError`` if there is none)."""
    factory = get_pass_entry(name).factory
    return factory.load() if isinstance(factory, LazyPass) else factory


def unregister_pass(name: str) -> None:
    """Forget pass ``name`` (the plugin manager's undo when a plugin fails half-way)."""
    _PASSES.pop(name, None)


def list_passes() -> list[str]:
    """The names of all registered passes (the plugins' too), sorted."""
    ensure_plugins()
    return sorted(_PASSES)


def close_pass_names(name: str, n: int = 3) -> list[str]:
    """Registered names close to ``name`` (case-insensitive matches first)."""
    folded = [k for k in _PASSES if k.lower() == name.lower()]
    rest = difflib.get_close_matches(name, list(_PASSES), n=n)
    return (folded + [k for k in rest if k not in folded])[:n]


def run_requirements(p: Pass, mod: IRModule, ctx: PassContext) -> IRModule:
    """Run the passes ``p`` requires (transitively, in dependency order) on ``mod``:
    what a :class:`Sequential` does right before it runs ``p``. Each requirement runs
    alone, through the instruments, under the label ``<p>.required`` in the position."""
    info = p._info
    label = f"{info.name}.required"
    frame: list[Any] = [label, 0, None]
    ctx._frames.append(frame)
    try:
        order = _requirement_order(info.name, info.required, ctx._disabled)
        for i, (dep_name, dep) in enumerate(order):
            frame[1] = i
            mod = dep._execute(mod, ctx)
            frame[2] = dep_name
    finally:
        ctx._frames.pop()
    return mod


def _requirement_order(
    top: str, required: tuple[str, ...], disabled: frozenset[str]
) -> list[tuple[str, Pass]]:
    """Post-order over the requirement graph below ``top``, leaving out disabled
    passes and what only they require; raises on cycles and unknown names.
    Depth is that of the dependency graph (a handful), so recursing is harmless."""
    order: list[tuple[str, Pass]] = []
    done: set[str] = set()

    def visit(name: str, chain: list[str]) -> None:
        if name in chain:
            cycle = " -> ".join(chain[chain.index(name) :] + [name])
            raise PassDependencyError(
                f"pass requirements form a cycle: {cycle} "
                f"(while resolving {' -> '.join(chain + [name])})",
                chain + [name],
            )
        if name in done or name in disabled:
            return
        entry = lookup(name)
        if entry is None:
            chain_text = " -> ".join(chain + [name])
            close = close_pass_names(name)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise PassDependencyError(
                f"pass {chain[-1]!r} requires {name!r}, which is not a registered pass "
                f"(chain: {chain_text}){hint}",
                chain + [name],
            )
        try:
            dep = get_pass(name)
        except (TypeError, PassError) as exc:
            raise PassDependencyError(
                f"pass {chain[-1]!r} requires {name!r}, which cannot be created without "
                f"arguments (chain: {' -> '.join(chain + [name])}): {exc}",
                chain + [name],
            ) from exc
        for sub in dep._info.required:
            visit(sub, chain + [name])
        done.add(name)
        order.append((name, dep))

    for name in required:
        visit(name, [top])
    return order


def check_pass_factory(obj: Any, *, call: bool = False) -> None:
    """Raise ``TypeError`` saying why ``obj`` is not a pass factory (nor a :class:`Pass`).

    Judged without running ``obj``: a :class:`Pass` instance or a subclass of
    :class:`Pass` (a class decorated with ``module_pass``/``function_pass``) is
    fine; a built-in function, another class, or a function whose return
    annotation names something other than a Pass is refused. A function
    without a usable return annotation cannot be judged that way: with
    ``call=True``, if it can be called without arguments it is called once and
    must return a :class:`Pass` (if that call raises, it is let through: it
    may need its arguments or a context; :func:`get_pass` checks every result).
    The plugin manager calls with ``call=True``, once a plugin has been
    imported; :func:`register_pass`, often a decorator running while its module
    is still being imported, does not.
    """
    if isinstance(obj, (Pass, LazyPass)) or (isinstance(obj, type) and issubclass(obj, Pass)):
        return  # a LazyPass's target is checked when it is imported
    what = repr(_label(obj))
    if isinstance(obj, type):
        raise TypeError(
            f"{what} is a class that is not a Pass (decorate it with module_pass or function_pass)"
        )
    if not callable(obj):
        raise TypeError(f"{obj!r} is neither a pass factory nor a Pass")
    if inspect.isbuiltin(obj):
        raise TypeError(f"{what} is a built-in function, not a pass factory")
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # no signature to read: get_pass checks the result
        return
    returns = _return_class(obj, signature)
    if returns is not None:
        if issubclass(returns, Pass):
            return
        raise TypeError(f"{what} is annotated to return {returns.__name__}, not a Pass")
    takes_none = all(
        p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in signature.parameters.values()
    )
    if not (call and takes_none):
        return
    try:
        made = obj()
    except Exception:  # it cannot tell without its arguments (or a context): let it be
        return
    if not isinstance(made, Pass):
        text = repr(made)
        text = text if len(text) <= 60 else text[:57] + "..."
        raise TypeError(
            f"{what} is not a pass factory: called with no arguments it "
            f"returned {type(made).__name__} {text}, not a Pass"
        )


def _label(obj: Any) -> str:
    """``module.qualname`` of a function or class (the name alone for a builtin)."""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qualname is None:
        return repr(obj)
    module = getattr(obj, "__module__", None)
    return qualname if module in (None, "builtins") else f"{module}.{qualname}"


def _return_class(obj: Any, signature: inspect.Signature) -> type | None:
    """The class ``obj``'s return annotation names, if it names one irpass can resolve."""
    returns = signature.return_annotation
    if returns is signature.empty:
        return None
    if isinstance(returns, str):  # `from __future__ import annotations`
        try:
            returns = typing.get_type_hints(obj).get("return")
        except Exception:  # a name imported under TYPE_CHECKING, a typo: cannot judge
            return None
    if returns is None:  # `-> None`
        return type(None)
    return returns if isinstance(returns, type) else None


def _make_entry(obj: Any, name: str | None, owner: str | None) -> PassEntry:
    if isinstance(obj, Pass):
        factory: PassFactory = _Instance(obj)
        name = name or obj._info.name
        source = getattr(obj, "pass_func", None) or type(obj)
    elif isinstance(obj, LazyPass):
        module = obj.target.partition(":")[0]
        name = name or obj.name
        return PassEntry(name, obj, obj.target.replace(":", "."), owner or module.split(".")[0])
    elif callable(obj):
        try:
            check_pass_factory(obj)
        except TypeError as exc:
            raise TypeError(f"register_pass: {exc}") from None
        factory = obj
        name = name or getattr(obj, "__name__", None)
        source = obj
    else:
        raise TypeError(f"register_pass: expected a pass factory or a Pass, got {obj!r}")
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_pass: cannot tell the name of {obj!r}; pass name=")
    module = getattr(source, "__module__", None) or "?"
    qualname = getattr(source, "__qualname__", None) or getattr(source, "__name__", "?")
    return PassEntry(name, factory, f"{module}.{qualname}", owner or module.split(".")[0])


def _same(old: PassEntry, new: PassEntry) -> bool:
    if old.factory is new.factory:
        return True
    if isinstance(old.factory, _Instance) and isinstance(new.factory, _Instance):
        return old.factory.instance is new.factory.instance
    # a module imported again (notebook reload, importlib.reload) defines a new
    # function object with the same origin: that is the same pass. Lambdas and
    # local functions share origins without being the same.
    return old.origin == new.origin and old.owner == new.owner and "<" not in old.origin


def _unknown_message(name: str) -> str:
    close = close_pass_names(name) if isinstance(name, str) else []
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    return f"no pass named {name!r} is registered{hint}"


# The passes the core registers itself (PrintIR, Identity); last, as builtin imports
# this module.
from . import builtin  # noqa: E402, F401
