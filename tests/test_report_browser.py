"""The report and irpass.viz's SVG in a real browser: Debian's headless Chromium, started
here, renders each page once (``--dump-dom`` and ``--screenshot`` in one start, about a
second), and the test checks that the screenshot is not blank, that the DOM holds what it
should and that the console stayed silent (the pages have no script: any console line is
an error, e.g. a resource that failed to load). Screenshots stay as artifacts in
``$IRPASS_TEST_ARTIFACTS`` (default ``<rootdir>/test-artifacts/``).

Without Chromium the tests skip, unless ``IRPASS_REQUIRE_BROWSER`` is set (CI sets it):
then they fail. ``IRPASS_REQUIRE_GRAPHVIZ`` likewise makes a missing ``dot`` a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest
from irpass.instrument.report import ReportInstrument
from irpass.testing import models
from irpass.transform import PassContext, default_pipeline

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
)
WINDOW = (1024, 768)


def _chromium() -> str:
    found = os.environ.get("IRPASS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(found, os.X_OK):
        message = f"no Chromium at {found} (Debian: apt-get install chromium)"
        if os.environ.get("IRPASS_REQUIRE_BROWSER"):
            pytest.fail(message + "; IRPASS_REQUIRE_BROWSER is set")
        pytest.skip(message)
    return found


def _need_graphviz() -> None:
    try:
        import graphviz  # noqa: F401 - irpass.viz renders through it (the viz extra)
    except ImportError:
        missing = "the graphviz package (pip install 'irpass[viz]')"
    else:
        missing = None if shutil.which("dot") else "Graphviz's dot (apt-get install graphviz)"
    if missing is not None:
        message = f"pictures need {missing}"
        if os.environ.get("IRPASS_REQUIRE_GRAPHVIZ"):
            pytest.fail(message + "; IRPASS_REQUIRE_GRAPHVIZ is set")
        pytest.skip(message)


@pytest.fixture
def artifacts(request) -> Path:
    """Where screenshots are kept (a folder git ignores when it is the default one)."""
    env = os.environ.get("IRPASS_TEST_ARTIFACTS")
    folder = Path(env) if env else Path(request.config.rootpath) / "test-artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    if not env and not (folder / ".gitignore").exists():
        (folder / ".gitignore").write_text("*\n")
    return folder


class Loaded:
    """What Chromium made of a page: its DOM after load, the console lines, the pixels."""

    def __init__(self, dom: str, console: list[str], pixels: np.ndarray) -> None:
        self.dom = dom
        self.console = console
        self.pixels = pixels


def load(page: Path, screenshot: Path, tmp_path: Path) -> Loaded:
    """Open ``page`` (a file, no network) in headless Chromium, once."""
    profile = tmp_path / f"chromium-{screenshot.stem}"
    cmd = [
        _chromium(),
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        f"--screenshot={screenshot}",
        "--dump-dom",
        page.resolve().as_uri(),
    ]
    # no proxy variables: the page must not need the network, and Chromium must not try
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, f"chromium failed ({done.returncode}):\n{done.stderr[-3000:]}"
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return Loaded(done.stdout, console, read_png(screenshot))


def read_png(path: Path) -> np.ndarray:
    """The pixels of an 8-bit, non-interlaced PNG (what Chromium writes) as
    ``(height, width, channels)`` uint8: zlib and numpy, no imaging library."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG file"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
    assert header is not None, f"{path} has no IHDR chunk"
    width, height, depth, color, _, _, interlace = header
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[color]
    assert depth == 8 and not interlace, f"{path}: {depth}-bit, interlace {interlace}"
    stride = width * bpp
    raw = np.frombuffer(zlib.decompress(b"".join(chunks)), np.uint8).reshape(height, stride + 1)
    out = np.zeros((height, stride), np.uint8)
    prior = np.zeros(stride, np.uint8)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:]
        if kind == 0:
            row = line.copy()
        elif kind == 1:  # Sub: a running sum along the row, per channel
            sums = np.cumsum(line.reshape(width, bpp), axis=0, dtype=np.uint64)
            row = (sums & 0xFF).astype(np.uint8).reshape(-1)
        elif kind == 2:  # Up
            row = line + prior
        else:  # Average, Paeth: each byte needs the one just decoded
            row = _unfilter_sequential(kind, bytearray(line.tobytes()), prior.tolist(), bpp)
        out[y] = row
        prior = row
    return out.reshape(height, width, bpp)


def _unfilter_sequential(kind: int, row: bytearray, up: list[int], bpp: int) -> np.ndarray:
    for x in range(len(row)):
        a = row[x - bpp] if x >= bpp else 0
        b = up[x]
        if kind == 3:
            row[x] = (row[x] + ((a + b) >> 1)) & 0xFF
            continue
        c = up[x - bpp] if x >= bpp else 0
        p = a + b - c
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        row[x] = (row[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
    return np.frombuffer(bytes(row), np.uint8)


def drawn_share(pixels: np.ndarray) -> float:
    """The share of pixels that differ from the page's background (its commonest colour)."""
    flat = pixels.reshape(-1, pixels.shape[2])
    colors, counts = np.unique(flat, axis=0, return_counts=True)
    background = colors[counts.argmax()]
    return float((flat != background).any(axis=1).mean())


def test_the_report_renders_with_one_section_per_changed_pass(tmp_path, artifacts):
    _need_graphviz()
    path = tmp_path / "resnet-O3.html"
    report = ReportInstrument(path, pipeline="default")
    with PassContext(opt_level=3, instruments=[report]):
        default_pipeline(3)(models.resnet())
    changed = [c.name for c in report.changes]
    assert changed
    loaded = load(path, artifacts / "report-resnet-O3.png", tmp_path)
    assert loaded.console == []
    sections = re.findall(
        r'<section class="pass-change" id="change-\d+" data-pass="([^"]+)"', loaded.dom
    )
    assert sections == changed
    # every change section holds its diff and the pictures Graphviz drew
    assert loaded.dom.count('<pre class="diff">') == len(changed)
    assert loaded.dom.count("<svg") >= len(changed)
    assert drawn_share(loaded.pixels) > 0.02
    # the checks can fail: this Chromium logs a failing script, a blank page is seen
    control = tmp_path / "control.html"
    control.write_text("<!DOCTYPE html><html><body><script>undefinedFunction();</script>")
    loaded = load(control, artifacts / "control-blank.png", tmp_path)
    assert any("Uncaught ReferenceError" in line for line in loaded.console), loaded.console
    assert drawn_share(loaded.pixels) == 0.0


def test_a_viz_svg_renders(tmp_path, artifacts):
    _need_graphviz()
    from irpass import viz

    svg = tmp_path / "resnet.svg"
    svg.write_bytes(viz.render(viz.to_dot(models.resnet()), "svg"))
    loaded = load(svg, artifacts / "viz-resnet.png", tmp_path)
    assert loaded.console == []
    assert len(re.findall(r'<g id="node\d+" class="node"', loaded.dom)) >= 10
    assert drawn_share(loaded.pixels) > 0.02
