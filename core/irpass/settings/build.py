"""Making the objects the settings describe: the PassContext and the pipeline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..instrument import get_instrument
from ..transform import PassContext, PipelineSyntaxError, parse_pipeline, pipeline_plan
from ..transform.pipeline import MAX_OPT_LEVEL, PipelinePlan
from .validate import context_parts, pipeline_problem

if TYPE_CHECKING:
    from ..transform import Sequential
    from .model import Settings

__all__ = ["build_pipeline", "default_plan", "pass_context"]


def pass_context(settings: Settings) -> PassContext:
    """A new PassContext from ``settings`` (see :meth:`Settings.pass_context`)."""
    parts = context_parts(settings)
    instruments = []
    for index, (name, args, kwargs) in parts.instruments:
        try:
            instruments.append(get_instrument(name, *args, **kwargs))
        except Exception as exc:  # a plugin's factory may raise anything: name the setting
            text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
            if not text.startswith("cannot create instrument"):
                text = f"cannot create instrument {name!r}: {type(exc).__name__}: {text}"
            origin = settings.origin_of("instruments", index)
            raise origin.error(
                f"instruments.{name}", None, text, value=":".join([name, *map(str, args)])
            ) from exc
    return PassContext(
        opt_level=settings.opt_level,
        required_pass=settings.required_pass,
        disabled_pass=settings.disabled_pass,
        instruments=instruments,
        config=parts.config,
    )


def build_pipeline(settings: Settings) -> Sequential:
    """The pipeline ``settings`` names (see :meth:`Settings.build_pipeline`)."""
    text = settings.pipeline
    if text is None or text.strip() == "default":
        return default_plan(settings).sequential()
    try:
        return parse_pipeline(text, named=dict(settings.pipelines), opt_level=settings.opt_level)
    except (PipelineSyntaxError, KeyError, TypeError, ValueError) as exc:
        error = settings.origin_of("pipeline").error(None, "pipeline", pipeline_problem(exc))
        raise error from exc


def default_plan(settings: Settings) -> PipelinePlan:
    """The default pipeline's plan for ``settings``: the passes of ``opt_level``, and those
    ``required_pass`` names whatever their level (``--required-pass`` is "run these passes
    whatever their opt_level", as in TVM, so they must be in the pipeline to run at all).

    A required pass above the level takes the place it has in the pipeline of the
    highest level, among the passes of ``opt_level`` in their order there.
    """
    plan = pipeline_plan(settings.opt_level)
    missing = set(settings.required_pass) - set(plan.names)
    if not missing:
        return plan
    full = pipeline_plan(MAX_OPT_LEVEL)
    if not missing & set(full.names):  # required passes no plugin inserts: nothing to add
        return plan
    rows = tuple(
        row for row in full.rows if row.opt_level <= settings.opt_level or row.pass_name in missing
    )
    kept = {row.pass_name for row in rows}
    dropped = tuple(d for d in plan.dropped if d.pass_name not in kept)
    return PipelinePlan(settings.opt_level, rows, dropped)
