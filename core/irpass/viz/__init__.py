"""Pictures of programs: the dataflow graph of a module, a function or an expression.

``to_dot(obj)`` gives Graphviz's DOT text (no dependency); ``render(dot, "svg")``
lays it out with Graphviz (the ``viz`` extra and the ``dot`` program);
``write(obj, "model.svg")`` does both, the format chosen by the suffix (``.dot``,
``.svg``, ``.png``, ``.html``). See :mod:`irpass.viz.graph` for what is drawn and
how large models are kept readable.
"""

from .graph import DEFAULT_MAX_NODES, Box, Cluster, Edge, Graph, build_graph
from .render import FORMATS, GraphvizNotFound, html_page, render, to_dot, write

__all__ = [
    "DEFAULT_MAX_NODES",
    "FORMATS",
    "Box",
    "Cluster",
    "Edge",
    "Graph",
    "GraphvizNotFound",
    "build_graph",
    "html_page",
    "render",
    "to_dot",
    "write",
]
