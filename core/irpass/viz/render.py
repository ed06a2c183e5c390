"""Pictures from DOT text: SVG or PNG through Graphviz, and a self-contained HTML page.

Rendering uses the ``graphviz`` Python package (the ``viz`` extra: ``pip install
'irpass[viz]'``), which runs Graphviz's ``dot`` program; without either,
:func:`render` raises :class:`GraphvizNotFound` saying how to get them. DOT text
itself needs neither.
"""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from ..errors import IRPassError
from ..ir import IRModule
from ..ir.expr import Expr
from .dot import graph_to_dot
from .graph import DEFAULT_MAX_NODES, Graph, build_graph

__all__ = [
    "GraphvizNotFound",
    "FORMATS",
    "render",
    "html_page",
    "to_dot",
    "write",
    "check_output_path",
]

#: Picture formats by file suffix; the ones that need Graphviz are rendered by ``dot``.
FORMATS = {".dot": "dot", ".svg": "svg", ".png": "png", ".html": "html"}

HOW_TO_GET_GRAPHVIZ = (
    "install the viz extra and Graphviz's dot program: pip install 'irpass[viz]' "
    "and e.g. apt install graphviz"
)


class GraphvizNotFound(IRPassError):
    """Rendering needs the ``graphviz`` package and Graphviz's ``dot`` program, and one is
    missing; the message says how to get them."""


def to_dot(
    obj: IRModule | Expr,
    *,
    max_nodes: int | None = DEFAULT_MAX_NODES,
    collapse: bool = True,
    elide_constants: int = 16,
) -> str:
    """The DOT text of the dataflow graph of ``obj``: a module (its functions side by
    side), a function, or an expression (the graph below it).

    ``collapse`` draws a run of repeated blocks as its first block and one box
    "× k more"; ``max_nodes`` (None: no cap) keeps that many boxes nearest the result
    and a note for the rest; constants of at most ``elide_constants`` elements show all
    their values, larger ones their first few.
    """
    graph = build_graph(
        obj, max_nodes=max_nodes, collapse=collapse, elide_constants=elide_constants
    )
    return graph_to_dot(graph)


def render(dot: str, fmt: str) -> bytes:
    """Lay out ``dot`` with Graphviz and return the picture as ``fmt`` ("svg" or "png").

    Raises :class:`GraphvizNotFound` when the ``graphviz`` package or the ``dot``
    program is missing.
    """
    if fmt not in ("svg", "png"):
        raise ValueError(f"render: fmt must be 'svg' or 'png', got {fmt!r}")
    try:
        import graphviz
    except ImportError:
        raise GraphvizNotFound(f"the graphviz package is missing: {HOW_TO_GET_GRAPHVIZ}") from None
    try:
        return graphviz.pipe("dot", fmt, dot.encode("utf-8"), quiet=True)
    except graphviz.ExecutableNotFound:
        raise GraphvizNotFound(
            f"Graphviz's dot program is not on PATH: {HOW_TO_GET_GRAPHVIZ}"
        ) from None
    except graphviz.CalledProcessError as exc:
        detail = (exc.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        raise RuntimeError(
            "dot failed on irpass's DOT text: " + (detail[0] if detail else str(exc))
        ) from None


_SVG_PROLOG = re.compile(r"\A\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?(<!--.*?-->\s*)*", re.S)


def html_page(svg: str | bytes, title: str) -> str:
    """A self-contained HTML page showing ``svg`` inline (no script, font or network)."""
    text = svg.decode("utf-8") if isinstance(svg, bytes) else svg
    text = _SVG_PROLOG.sub("", text, count=1)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n"
        "<style>body{font-family:Helvetica,Arial,sans-serif;margin:1em;background:#fff}"
        "h1{font-size:1.2em}.graph svg{max-width:100%;height:auto}</style>\n"
        "</head>\n<body>\n"
        f'<h1>{escape(title)}</h1>\n<div class="graph">\n{text}\n</div>\n'
        "</body>\n</html>\n"
    )


def check_output_path(path: str | Path) -> str:
    """The format of a picture to be written to ``path`` (by its suffix); ``ValueError``
    for an unknown suffix (naming the known ones), ``FileNotFoundError`` for a missing
    folder."""
    p = Path(path)
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        known = ", ".join(FORMATS)
        got = f"{p.suffix!r}" if p.suffix else "no suffix"
        raise ValueError(f"{str(p)!r}: unknown picture format ({got}); known: {known}")
    parent = p.parent
    if not parent.is_dir():
        raise FileNotFoundError(2, "no such folder to write the picture into", str(parent))
    return fmt


def write_graph(graph: Graph, path: str | Path, title: str = "") -> Path:
    """Write ``graph`` to ``path`` as DOT, SVG, PNG or HTML, by suffix."""
    p = Path(path)
    fmt = check_output_path(p)
    dot = graph_to_dot(graph)
    if fmt == "dot":
        p.write_text(dot, encoding="utf-8")
    elif fmt == "html":
        svg = render(dot, "svg")
        p.write_text(html_page(svg, title or p.stem), encoding="utf-8")
    else:
        p.write_bytes(render(dot, fmt))
    return p


def write(obj: IRModule | Expr, path: str | Path, **opts: object) -> Path:
    """Draw ``obj`` into ``path``, the format by suffix: ``.dot`` (text), ``.svg``,
    ``.png`` or ``.html`` (a page with the SVG inline). ``opts`` are :func:`to_dot`'s.
    Returns the path written."""
    check_output_path(path)
    graph = build_graph(obj, **opts)  # type: ignore[arg-type]
    return write_graph(graph, path)
