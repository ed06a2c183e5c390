"""CheckEach: run the module after every pass and stop at the first that changed its outputs.

``--check`` says that the optimized model computes something else; ``CheckEach`` says
which pass made it so. It evaluates the module (:func:`irpass.evaluate`) on fixed
random inputs before the first pass, and again after every pass that returned a new
module; the first whose outputs differ from those of the module it was given (beyond
``rtol``/``atol``, as ``numpy.allclose``) raises :class:`CheckEachError` naming the
pass, with the outputs' largest differences and both modules. Comparing each pass
with the one before (not with the input) blames the pass that made the difference
even when a later one would amplify it.

A pass inside which other passes ran (a ``Sequential``) is not checked on its own:
its passes were.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import IRPassError, PassError
from .base import PassInstrument

if TYPE_CHECKING:
    from ..ir.module import IRModule
    from ..transform.info import PassInfo

__all__ = ["CheckEach", "CheckEachError"]


class CheckEachError(PassError):
    """The pass ``pass_name`` changed what the module computes (or made it fail to run).

    ``before`` and ``after`` are the modules around the pass; ``problems`` one line per
    differing output (empty when the module stopped running: see ``__cause__``).
    """

    def __init__(self, pass_name: str, reason: str, before: IRModule, after: IRModule,
                 problems: list[str]) -> None:
        super().__init__(pass_name, reason)
        self.before = before
        self.after = after
        self.problems = problems


class CheckEach(PassInstrument):
    """Evaluate after every pass; raise :class:`CheckEachError` at the first pass whose
    outputs differ from its input's. ``inputs`` are the arguments of ``main`` by name
    (default: :func:`irpass.testing.random_inputs` of the first module, with ``seed``)."""

    name = "check-each"

    def __init__(self, inputs: Mapping[str, Any] | None = None, seed: int = 0,
                 rtol: float = 1e-5, atol: float = 1e-6) -> None:
        self.inputs = dict(inputs) if inputs is not None else None
        self.seed = int(seed)
        self.rtol = float(rtol)
        self.atol = float(atol)
        self._stack: list[list] = []
        self._outputs: tuple[IRModule, Any] | None = None
        self._args: dict[str, Any] | None = None

    def enter_pass_ctx(self) -> None:
        """Start afresh."""
        self._stack.clear()
        self._outputs = None
        self._args = None

    exit_pass_ctx = enter_pass_ctx

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Evaluate the first module; note the pass's input."""
        if self._stack:
            self._stack[-1][1] = True
        elif self._outputs is None:
            from ..testing import random_inputs  # testing imports the transform package

            self._args = self.inputs if self.inputs is not None else random_inputs(mod, self.seed)
            try:
                self._outputs = (mod, self._run(mod))
            except (IRPassError, ValueError, TypeError) as exc:  # bad inputs: Value/TypeError
                raise PassError(info.name, f"check-each: cannot run the module the pipeline "
                                f"starts from: {exc}") from exc
        self._stack.append([mod, False])

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Evaluate what the pass returned and compare it with what it was given."""
        before, had_inner = self._stack.pop()
        if had_inner or mod is before:
            return
        from ..testing.semantics import compare_outputs

        assert self._outputs is not None
        old_mod, old = self._outputs
        if old_mod is not before:  # a pass ran that we did not see (should_run said no)
            old = self._run(before)
        try:
            new = self._run(mod)
        except IRPassError as exc:
            raise self._error(info.name, f"the module it returned fails to run: {exc}",
                              before, mod, []) from exc
        problems = compare_outputs(old, new, self.rtol, self.atol)
        if problems:
            shown = "; ".join(problems[:3]) + ("; ..." if len(problems) > 3 else "")
            raise self._error(
                info.name,
                f"changed the outputs (check-each, seed {self.seed}, rtol={self.rtol:g}, "
                f"atol={self.atol:g}): {shown}", before, mod, problems)
        self._outputs = (mod, new)

    def _run(self, mod: IRModule) -> Any:
        from ..evaluator import evaluate

        assert self._args is not None
        return evaluate(mod, **self._args)

    @staticmethod
    def _error(name: str, reason: str, before: IRModule, after: IRModule,
               problems: list[str]) -> CheckEachError:
        from ..transform.context import PassContext  # the context imports this package

        err = CheckEachError(name, reason, before, after, problems)
        err.path = PassContext.current()._position_parts() + [name]
        return err
