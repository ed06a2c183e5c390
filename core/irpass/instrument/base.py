"""PassInstrument: code that runs around every pass of a :class:`PassContext`.

An instrument has five points, all optional:

- ``enter_pass_ctx()`` / ``exit_pass_ctx()`` when the context it belongs to is
  entered / left (also when it is installed or removed by
  :meth:`PassContext.override_instruments`);
- ``should_run(mod, info) -> bool`` before a pass; any instrument answering
  ``False`` skips the pass (not asked for passes named in ``required_pass``);
- ``run_before_pass(mod, info)`` / ``run_after_pass(mod, info)`` around each
  pass that runs.

The context calls them in the order of its ``instruments`` list; the exact
rules, including what happens when one raises, are documented on
:class:`irpass.transform.PassContext`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ..ir.module import IRModule
    from ..transform.info import PassInfo

__all__ = ["PassInstrument", "pass_instrument"]

_C = TypeVar("_C", bound=type)


class PassInstrument:
    """Base class of instruments; every point does nothing by default.

    ``name`` is the class name unless an instance sets its own.
    """

    name: str = "PassInstrument"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            cls.name = cls.__name__

    def enter_pass_ctx(self) -> None:
        """Called when the owning context is entered."""

    def exit_pass_ctx(self) -> None:
        """Called when the owning context is left, or this instrument is overridden away."""

    def should_run(self, mod: IRModule, info: PassInfo) -> bool:
        """Whether the pass described by ``info`` may run on ``mod``."""
        return True

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Called before a pass runs, with its input module."""

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Called after a pass ran, with its output module."""

    def __repr__(self) -> str:
        return f"<instrument {self.name}>"


def pass_instrument(pi_cls: _C | None = None) -> Any:
    """Make a plain class an instrument: ``@pass_instrument class Tracer: ...``.

    The class defines any subset of the five points (``enter_pass_ctx``,
    ``exit_pass_ctx``, ``should_run``, ``run_before_pass``,
    ``run_after_pass``); the others do nothing. Usable with or without
    parentheses. Instances of the returned class are :class:`PassInstrument`.
    """

    def create(cls: _C) -> _C:
        if not isinstance(cls, type):
            raise TypeError(
                f"pass_instrument decorates a class, got {type(cls).__name__} {cls!r}"
            )
        if issubclass(cls, PassInstrument):
            return cls
        namespace = {
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
            "__wrapped__": cls,
        }
        return type(cls.__name__, (cls, PassInstrument), namespace)  # type: ignore[return-value]

    if pi_cls is None:
        return create
    return create(pi_cls)
