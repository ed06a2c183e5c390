"""The passes the core registers itself: ``PrintIR`` and ``Identity``."""

from __future__ import annotations

import sys
from typing import TextIO

from ..ir.module import IRModule
from .context import PassContext
from .info import PassInfo
from .passes import ModulePass, Pass
from .registry import register_pass

__all__ = ["PrintIR", "Identity"]


@register_pass
def PrintIR(header: str = "", show_meta_data: bool = False, stream: TextIO | None = None) -> Pass:
    """A pass that prints the module and returns it unchanged.

    The printout starts with a comment line naming ``header`` and where the
    pass sits: ``// PrintIR 'after fold' at opt[3], after FoldConstant``.
    It goes to ``stream`` (standard error when ``None``, looked up at each
    run so redirections apply). Constants print as the printing instruments show
    them (``print.elide_constants``); ``show_meta_data`` prints every value instead,
    with the section that holds the large constants.
    """

    def print_ir(mod: IRModule, ctx: PassContext) -> IRModule:
        out = stream if stream is not None else sys.stderr
        title = "PrintIR" + (f" {header!r}" if header else "")
        if ctx._frames:
            title += f" at {ctx.pass_position()}"
            last = ctx._frames[-1][2]
            title += f", after {last}" if last else ", first pass"
        if show_meta_data:
            text = mod.astext(show_meta_data=True)
        else:
            from ..instrument.printing import module_text  # the instruments import us

            text = module_text(mod)
        out.write(f"// {title}\n{text}\n")
        return mod

    return ModulePass(print_ir, PassInfo(0, "PrintIR"))


@register_pass
def Identity() -> Pass:
    """A pass that returns its input module: a placeholder, and a probe for pass overhead."""
    return ModulePass(_identity, PassInfo(0, "Identity"))


def _identity(mod: IRModule, ctx: PassContext) -> IRModule:
    return mod
