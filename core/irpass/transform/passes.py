"""Passes: module passes, function passes and the Sequential that runs them.

Running a pass ``p(mod)`` under ``ctx = PassContext.current()``:

1. the instruments' ``should_run`` may skip it, then ``run_before_pass``;
2. the pass body runs; an exception from it becomes :class:`irpass.PassError`
   naming the pass (the original as ``__cause__``), and so do errors it
   reported through ``ctx.diag``;
3. ``run_after_pass`` with the result.

As in TVM, a pass called directly runs alone: the passes named in its
``info.required`` run only when a :class:`Sequential` runs it, right before
it (see :mod:`irpass.transform.registry`). A pass with requirements that
fails when called directly says so in its error, since the usual cause is a
requirement that did not run (a pass needing ``InferType`` on an untyped
module).

Passes never change their input: IR nodes and modules are immutable, and a
pass that returns the wrong kind of object is a :class:`PassReturnTypeError`.
With the config option ``testing.immutable_module`` set (as in TVM), every
pass execution also checks, by structural hash and function identity, that
its input module is unchanged afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import PassDependencyError, PassError, PassReturnTypeError
from ..ir.module import IRModule
from ..ir.nodes import Function
from ..ir.structural import structural_hash
from .context import INSTRUMENT_ERROR, PassContext
from .info import PassInfo

__all__ = ["Pass", "ModulePass", "FunctionPass", "Sequential"]

ModulePassFunc = Callable[[IRModule, PassContext], IRModule]
FunctionPassFunc = Callable[[Function, IRModule, PassContext], Function]

# The function attributes that make a FunctionPass leave a function alone.
SKIP_ATTRS = ("SkipOptimization", "Primitive")


class Pass:
    """A transformation ``IRModule -> IRModule`` with a :class:`PassInfo`.

    Call it on a module: ``new_mod = p(mod)``; it runs under
    :meth:`PassContext.current`. Subclasses implement :meth:`_transform`.
    """

    _kind = "Pass"
    _info: PassInfo

    @property
    def info(self) -> PassInfo:
        """The pass's name, opt_level and required passes."""
        return self._info

    def __call__(self, mod: IRModule) -> IRModule:
        if not isinstance(mod, IRModule):
            raise TypeError(
                f"pass {self._info.name!r} must be called on an IRModule, got "
                f"{type(mod).__name__} (wrap an expression with IRModule.from_expr)"
            )
        if not self._info.required:
            return self._execute(mod, PassContext.current())
        try:
            return self._execute(mod, PassContext.current())
        except PassError as err:
            _note_direct_call(self, err)
            raise

    def _execute(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Run this pass alone under ``ctx`` (instruments, body, checks); no requirements."""
        info = self._info
        if ctx._instruments:
            if not ctx._before_pass(mod, info):
                return mod
            out = self._run_body(mod, ctx)
            ctx._after_pass(out, info)
            return out
        return self._run_body(mod, ctx)

    def _run_body(self, mod: IRModule, ctx: PassContext) -> IRModule:
        diag = ctx.diag
        outer_pass = diag.pass_name
        name = diag.pass_name = self._info.name
        reported_before = len(diag.diagnostics)
        try:
            if ctx._check_immutable:
                out = _transform_checked(self, mod, ctx)
            else:
                out = self._transform(mod, ctx)
        except (PassError, PassDependencyError):
            raise
        except Exception as exc:
            if getattr(exc, INSTRUMENT_ERROR, False):
                raise  # an instrument's error around a pass nested in this one
            raise _body_error(ctx, name, exc) from exc
        finally:
            diag.pass_name = outer_pass
        if len(diag.diagnostics) > reported_before:
            _raise_reported(ctx, name, reported_before)
        if type(out) is not IRModule and not isinstance(out, IRModule):
            raise _return_error(self, ctx, out, "an IRModule")
        return out

    def _transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError(f"{type(self).__name__} does not implement _transform")

    def _body(self) -> Callable[[IRModule, PassContext], IRModule]:
        """The callable :meth:`_run_body` runs: ``_transform``, or what it would call."""
        return self._transform

    def __repr__(self) -> str:
        info = self._info
        req = f", required={list(info.required)}" if info.required else ""
        return f"{self._kind}(name={info.name!r}, opt_level={info.opt_level}{req})"

    __str__ = __repr__


class ModulePass(Pass):
    """A pass whose function ``pass_func(mod, ctx)`` returns a new module.

    Usually made with the :func:`irpass.transform.module_pass` decorator.
    """

    _kind = "ModulePass"

    def __init__(self, pass_func: ModulePassFunc, info: PassInfo) -> None:
        _init_func_pass(self, pass_func, info)

    def _transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return self.pass_func(mod, ctx)

    def _body(self) -> ModulePassFunc:
        return self.pass_func


class FunctionPass(Pass):
    """A pass whose function ``pass_func(func, mod, ctx)`` rewrites one function.

    It is called on every function of the module except those with a true
    ``SkipOptimization`` or ``Primitive`` attribute, always with the input
    module as ``mod``. Functions it returns unchanged (the same object) keep
    their identity, and a module in which nothing changed is returned as is.
    """

    _kind = "FunctionPass"

    def __init__(self, pass_func: FunctionPassFunc, info: PassInfo) -> None:
        _init_func_pass(self, pass_func, info)

    def _transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        pass_func = self.pass_func
        changed = False
        new_funcs = {}
        for gv, func in mod.items():
            attrs = func.attrs
            if attrs and any(attrs.get(key) for key in SKIP_ATTRS):
                new_funcs[gv] = func
                continue
            new = pass_func(func, mod, ctx)
            if not isinstance(new, Function):
                raise _return_error(self, ctx, new, f"a Function (for @{gv.name_hint})")
            changed = changed or new is not func
            new_funcs[gv] = new
        return IRModule(new_funcs) if changed else mod


class Sequential(Pass):
    """Runs ``passes`` in order; itself a pass (instruments see it, it has a PassInfo).

    Each pass runs when the current context enables it
    (:meth:`PassContext.pass_enabled`: disabled > required > opt_level),
    right after the passes its ``info.required`` names
    (:func:`irpass.transform.registry.run_requirements`: transitively, in
    dependency order). Only a Sequential resolves requirements, as in TVM;
    the requirements of the Sequential itself run when an enclosing
    Sequential runs it. Sequentials nest.
    """

    _kind = "Sequential"

    def __init__(
        self,
        passes: Sequence[Pass] | None = None,
        opt_level: int = 0,
        name: str = "sequential",
        required: Sequence[str] = (),
    ) -> None:
        if isinstance(passes, Pass):
            raise TypeError(f"Sequential {name!r}: passes must be a list of passes, got one pass")
        passes = tuple(passes) if passes is not None else ()
        for i, p in enumerate(passes):
            if not isinstance(p, Pass):
                hint = " (a pass factory: call it)" if callable(p) else ""
                raise TypeError(f"Sequential {name!r}: passes[{i}] is not a Pass: {p!r}{hint}")
        self.passes: tuple[Pass, ...] = passes
        self._info = PassInfo(opt_level, name, required)
        self._plan_key: tuple | None = None
        self._plan: tuple[_Step, ...] = ()

    def _steps(self, ctx: PassContext) -> tuple[_Step, ...]:
        """The passes that run under ``ctx`` (:meth:`PassContext.pass_enabled`), as
        ``(index, pass, name, body, required)``; worked out once per setting of the
        context's opt_level, disabled and required passes, not once per pass run."""
        key = (ctx.opt_level, ctx._disabled, ctx._required)
        if key != self._plan_key:
            self._plan = tuple(
                (i, p, p._info.name, p._body(), bool(p._info.required))
                for i, p in enumerate(self.passes)
                if ctx.pass_enabled(p._info)
            )
            self._plan_key = key
        return self._plan

    def _transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        frame: list[Any] = [self._info.name, 0, None]
        frames = ctx._frames
        frames.append(frame)
        try:
            return _run_steps(self._steps(ctx), mod, ctx, frame)
        finally:
            frames.pop()

    def __repr__(self) -> str:
        inner = ", ".join(p._info.name for p in self.passes)
        return f"{super().__repr__()[:-1]}, passes=[{inner}])"

    __str__ = __repr__


#: A step of a Sequential's plan: (index in its passes, pass, name, body, has requirements).
_Step = tuple[int, Pass, str, Callable[[IRModule, PassContext], IRModule], bool]


def _run_steps(
    steps: tuple[_Step, ...], mod: IRModule, ctx: PassContext, frame: list[Any]
) -> IRModule:
    """Run a Sequential's ``steps`` on ``mod``, each after its requirements.

    Does for each pass what :meth:`Pass._execute` does (the instruments around it,
    looked at before each pass since a pass may install some; the running pass's
    name on ``ctx.diag``; its exception or reported errors turned into a PassError
    naming it; its result checked to be a module), but calls the body itself, with
    a branch of its own for the common case of no instruments and no immutability
    check. W4 (1,000 trivial passes), us per pass execution: 0.22 through
    ``_execute`` for each, 0.07 here (the floor, a bare loop calling the pass
    functions, is 0.03); with PassTimingInstrument, 0.85 through ``_execute``, 0.62
    here.
    """
    diag = ctx.diag
    outer_pass = diag.pass_name
    reported = len(diag.diagnostics)
    checked = ctx._check_immutable
    name = outer_pass
    try:
        for i, p, name, body, required in steps:
            frame[1] = i
            if required:
                diag.pass_name = outer_pass
                mod = _run_requirements(p, mod, ctx)
                reported = len(diag.diagnostics)
            if checked or ctx._instruments:
                diag.pass_name = outer_pass  # the instruments run outside the pass
                if ctx._before_pass(mod, p._info):
                    diag.pass_name = name
                    out = _transform_checked(p, mod, ctx) if checked else body(mod, ctx)
                    if len(diag.diagnostics) != reported:
                        _raise_reported(ctx, name, reported)
                        reported = len(diag.diagnostics)
                    if type(out) is not IRModule and not isinstance(out, IRModule):
                        raise _return_error(p, ctx, out, "an IRModule")
                    diag.pass_name = outer_pass
                    ctx._after_pass(out, p._info)
                    mod = out
            else:
                diag.pass_name = name
                out = body(mod, ctx)
                if len(diag.diagnostics) != reported:
                    _raise_reported(ctx, name, reported)
                    reported = len(diag.diagnostics)
                if type(out) is not IRModule and not isinstance(out, IRModule):
                    raise _return_error(p, ctx, out, "an IRModule")
                mod = out
            frame[2] = name
    except (PassError, PassDependencyError):
        raise
    except Exception as exc:
        if getattr(exc, INSTRUMENT_ERROR, False):
            raise  # an instrument's error (around this pass or one nested in it)
        raise _body_error(ctx, name, exc) from exc
    finally:
        diag.pass_name = outer_pass
    return mod


def _run_requirements(p: Pass, mod: IRModule, ctx: PassContext) -> IRModule:
    from .registry import run_requirements  # the registry imports this module

    return run_requirements(p, mod, ctx)


def _body_error(ctx: PassContext, name: str, exc: Exception) -> PassError:
    """The PassError naming pass ``name`` that its body's exception ``exc`` becomes."""
    err = PassError(name, f"{type(exc).__name__}: {exc}")
    err.path = _path(ctx, name)
    return err


def _raise_reported(ctx: PassContext, name: str, reported_before: int) -> None:
    """Raise PassError if pass ``name`` reported errors (after the first ``reported_before``
    diagnostics)."""
    new = [d for d in ctx.diag.diagnostics[reported_before:] if d.severity == "error"]
    if new:
        err = PassError(name, f"reported {len(new)} error(s)", diagnostics=new)
        err.path = _path(ctx, name)
        raise err


def _transform_checked(p: Pass, mod: IRModule, ctx: PassContext) -> IRModule:
    """``p._transform`` that fails if it changed its input (config ``testing.immutable_module``)."""
    before = structural_hash(mod), [(gv, func) for gv, func in mod.items()]
    try:
        return p._transform(mod, ctx)
    finally:
        after = structural_hash(mod), [(gv, func) for gv, func in mod.items()]
        same_funcs = len(before[1]) == len(after[1]) and all(
            a[0] is b[0] and a[1] is b[1] for a, b in zip(before[1], after[1], strict=False)
        )
        if before[0] != after[0] or not same_funcs:
            name = p._info.name
            err = PassError(name, "changed its input module (testing.immutable_module is set)")
            err.path = _path(ctx, name)
            raise err


def _init_func_pass(p: ModulePass | FunctionPass, pass_func: Callable, info: PassInfo) -> None:
    if not callable(pass_func):
        raise TypeError(f"{p._kind}: pass_func must be callable, got {pass_func!r}")
    if not isinstance(info, PassInfo):
        raise TypeError(f"{p._kind}: info must be a PassInfo, got {info!r}")
    p.pass_func = pass_func
    p._info = info


# Marks a PassError that already carries the note of _note_direct_call.
_NOTED = "_irpass_direct_call_noted"


def _note_direct_call(p: Pass, err: PassError) -> None:
    """Add to ``err`` (``p``'s own failure on a direct call) that ``p``'s requirements
    did not run: the likely cause, and one that TVM's error would leave unsaid."""
    info = p._info
    if err.pass_name != info.name or getattr(err, _NOTED, False):
        return
    setattr(err, _NOTED, True)
    names = ", ".join(info.required)
    err.reason += (
        f"\n  note: {info.name!r} was called directly, so the passes it requires ({names}) "
        "did not run; run them first, or run the pass inside a Sequential, which runs "
        "them: Sequential([pass])(mod)"
    )


def _path(ctx: PassContext, name: str) -> list[str]:
    return ctx._position_parts() + [name]


def _return_error(p: Pass, ctx: PassContext, got: object, expected: str) -> PassReturnTypeError:
    name = p._info.name
    err = PassReturnTypeError(
        name, f"{p._kind} returned {type(got).__name__} {_short(got)}; it must return {expected}"
    )
    err.path = _path(ctx, name)
    return err


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
