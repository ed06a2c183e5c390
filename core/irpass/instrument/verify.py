"""VerifyEach: check the module after every pass and blame the pass that broke it.

MLIR verifies after every pass by default and LLVM has ``-verify-each``: an ill-formed
module a pass returns is then reported as that pass's fault, instead of surfacing as a
type error in whichever pass reads the types next. The check
(:class:`irpass.ir.verify.Verifier`) is well-formedness (scoping) and types, and it
costs what the pass changed, not the module's size.

Switched on by the config option ``verify_each`` (``irpass optimize`` turns it on unless
``--no-verify-each``), or by adding the instrument yourself::

    with PassContext(opt_level=3, config={"verify_each": True}):
        mod = pipeline(mod)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import PassError, TypeInferenceError, WellFormedError
from ..ir.verify import Verifier
from .base import PassInstrument

if TYPE_CHECKING:
    from ..ir.module import IRModule
    from ..transform.info import PassInfo

__all__ = ["VerifyEach", "VerifyError"]


class VerifyError(PassError):
    """The module a pass returned is ill-formed or ill-typed (``pass_name`` is that pass;
    ``path`` where it sat in the pipeline). The checker's own error is the ``__cause__``."""


class VerifyEach(PassInstrument):
    """Check well-formedness and types after every pass; blame the pass that broke them.

    The module a pipeline starts from is checked before the first pass (an ill-formed
    input is reported as such, not blamed on that pass).
    """

    name = "verify-each"

    def __init__(self) -> None:
        self._verifier = Verifier()
        self._started = False

    def enter_pass_ctx(self) -> None:
        """Start afresh: nothing checked yet."""
        self._verifier.clear()
        self._started = False

    def exit_pass_ctx(self) -> None:
        """Drop the checked nodes (they hold every module of the run alive)."""
        self._verifier.clear()
        self._started = False

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Check the input of the first pass."""
        if self._started:
            return
        self._started = True
        try:
            self._verifier.check(mod)
        except (TypeInferenceError, WellFormedError) as exc:
            raise self._error(info.name, "was given an ill-formed module (the pipeline's "
                              "input, before any pass ran)", exc) from exc

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Check what the pass returned."""
        try:
            self._verifier.check(mod)
        except (TypeInferenceError, WellFormedError) as exc:
            raise self._error(info.name, "returned an ill-formed module", exc) from exc

    @staticmethod
    def _error(pass_name: str, what: str, exc: Exception) -> VerifyError:
        from ..transform.context import PassContext  # the context imports this package

        err = VerifyError(pass_name, f"{what} (verify_each): {exc}")
        err.path = PassContext.current()._position_parts() + [pass_name]
        return err
