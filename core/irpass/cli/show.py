"""``irpass show``: draw the dataflow graph of a model (see :mod:`irpass.viz`).

``show MODEL -o OUT`` draws the model as loaded (no pass runs) into OUT, the format
by suffix: ``.dot`` (Graphviz's text), ``.svg``, ``.png``, or ``.html`` (a page with
the SVG inline, nothing fetched when opened). Repeated blocks are drawn once with
a box "× k more" unless ``--no-collapse``; ``--function NAME`` draws one global
function; a picture of more than ``--max-nodes`` boxes is refused, naming what was
collapsed.

Without Graphviz (the ``viz`` extra and the ``dot`` program) an SVG, PNG or HTML
output becomes ``OUT``'s ``.dot`` beside it, and one line on stderr says how to get
the picture (exit 0).

Exit codes: 0 drawn, 2 bad usage or input (a missing output folder, an unknown
suffix, the input file as output, a model too large for one picture).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..viz import DEFAULT_MAX_NODES, FORMATS, GraphvizNotFound, build_graph
from ..viz.render import HOW_TO_GET_GRAPHVIZ, check_output_path, write_graph
from .errors import UsageError
from .optimize import add_model_arguments, load_model

if TYPE_CHECKING:
    from ..ir import IRModule
    from ..settings import Settings

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``show``'s arguments."""
    add_model_arguments(parser)
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="the picture: " + ", ".join(FORMATS) + " (by suffix)",
    )
    parser.add_argument(
        "--max-nodes",
        type=int,
        default=DEFAULT_MAX_NODES,
        metavar="N",
        help=f"refuse a picture of more than N boxes (default {DEFAULT_MAX_NODES})",
    )
    parser.add_argument(
        "--no-collapse",
        dest="collapse",
        action="store_false",
        help="draw every copy of a repeated block",
    )
    parser.add_argument("--function", metavar="NAME", help="draw only the global function NAME")


def _check_output(output: str, model: str | None) -> str:
    try:
        fmt = check_output_path(output)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except FileNotFoundError as exc:
        raise UsageError(f"cannot write {output!r}: no such folder {exc.filename!r}") from None
    if (
        model is not None
        and Path(output).exists()
        and Path(model).exists()
        and os.path.samefile(output, model)
    ):
        raise UsageError(
            f"the output {output!r} is the input model; write the picture to another file"
        )
    return fmt


def _pick(mod: IRModule, name: str | None, label: str) -> IRModule:
    if name is None:
        return mod
    names = [gv.name_hint for gv, _ in mod.items()]
    if name not in names:
        raise UsageError(f"{label} has no function {name!r} (functions: {', '.join(names)})")
    from ..ir import IRModule

    gv = mod.get_global_var(name)
    return IRModule({gv: mod[gv]})


def run(args: argparse.Namespace, settings: Settings) -> int:
    """The ``show`` command."""
    if args.max_nodes < 1:
        raise UsageError(f"--max-nodes must be at least 1, got {args.max_nodes}")
    fmt = _check_output(args.output, args.model)
    mod, label = load_model(args)
    mod = _pick(mod, args.function, label)
    graph = build_graph(mod, max_nodes=None, collapse=args.collapse)
    if len(graph.boxes) > args.max_nodes:
        done = (
            ("after collapsing " + ", ".join(graph.collapsed))
            if graph.collapsed
            else ("with nothing collapsed" if args.collapse else "with --no-collapse")
        )
        raise UsageError(
            f"{label} is too large for one picture: {len(graph.boxes):,} boxes {done}, "
            f"over --max-nodes {args.max_nodes}",
            hint="raise --max-nodes, or draw one function with --function NAME",
        )
    title = f"{label}" + (f" @{args.function}" if args.function else "")
    out = Path(args.output)
    try:
        write_graph(graph, out, title=title)
    except GraphvizNotFound:
        dot_path = out.with_suffix(".dot")
        if args.model is not None and dot_path.exists() and os.path.samefile(dot_path, args.model):
            raise UsageError(
                f"no Graphviz, and the DOT text's file {str(dot_path)!r} is the input model"
            ) from None
        write_graph(graph, dot_path)
        sys.stderr.write(
            f"irpass show: wrote the DOT text {dot_path} instead of {out}: for "
            f"{fmt.upper()}, {HOW_TO_GET_GRAPHVIZ}\n"
        )
        return 0
    if graph.collapsed:
        sys.stderr.write(f"irpass show: {out}: {graph.summary()}\n")
    return 0
