"""irpass.viz through Graphviz: SVG, PNG and the self-contained HTML page.

These need the ``graphviz`` package and the ``dot`` program. They skip without them
only when IRPASS_REQUIRE_GRAPHVIZ is unset; CI sets it, so there a missing Graphviz
fails instead of hiding the tests.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest
from irpass import viz
from irpass.testing.models import resnet

_HAVE = shutil.which("dot") is not None and importlib.util.find_spec("graphviz") is not None
pytestmark = pytest.mark.skipif(
    not _HAVE and not os.environ.get("IRPASS_REQUIRE_GRAPHVIZ"),
    reason="Graphviz (the dot program and the graphviz package) is not installed",
)


def test_svg_has_a_shape_and_text_per_box() -> None:
    svg = viz.render(viz.to_dot(resnet()), "svg").decode("utf-8")
    assert "<svg" in svg
    assert svg.count('class="node"') == len(viz.build_graph(resnet()).boxes)
    for text in ("nn.conv2d", "nn.softmax", "block 1 of 2", "(1, 16, 16, 16) float32"):
        assert f">{text}</text>" in svg, text


def test_png_is_a_png() -> None:
    png = viz.render(viz.to_dot(resnet()), "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_write_svg_png_and_a_self_contained_html_page(tmp_path) -> None:
    mod = resnet(num_blocks=3)
    for suffix in (".svg", ".png", ".html"):
        path = viz.write(mod, tmp_path / f"m{suffix}")
        assert path.stat().st_size > 1000
    page = (tmp_path / "m.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<?xml" not in page
    assert "repeated blocks collapsed: 3 \u00d7 a 9" in page  # the caption (dot writes - as &#45;)
    # nothing fetched when the page is opened
    for needle in ("<script", "<link", " src=", "url(", "@import"):
        assert needle not in page, needle
