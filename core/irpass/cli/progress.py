"""A one-line progress display on a terminal's standard error.

``irpass optimize`` (loading, each pass, saving), ``bisect``, ``reduce`` and a run over many
models say what they are doing on one line that is rewritten in place (``\\r``), with the
time the current step has taken so far, refreshed by a small thread so that a step that
gives no news (parsing a big file) still shows it is alive. Nothing at all is written
when standard error is not a terminal (a pipe, a file, a test's capture) or with ``-q``,
so logs and captured output never see a control character.

While the line is shown, anything else written to standard error (a warning, an
instrument's report) first erases it, so the two never mix on one line.

No dependency: ``tqdm`` and ``rich`` draw bars for loops of known length, but most of
irpass's steps have no known length (a parse, a pass, a bisection), and one rewritten line
is 100 lines of code.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
from time import monotonic
from typing import IO, Any

__all__ = ["Progress", "is_terminal"]

_ERASE = "\r\x1b[K"  # carriage return, then erase to the end of the line
_TICK = 0.25  # seconds between redraws of a step that gives no news
_MIN_GAP = 0.05  # at most 20 redraws a second, however fast the news comes


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (False for a closed or fake stream)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def _columns(stream: Any) -> int:
    """The width of the terminal ``stream`` is (``COLUMNS`` first, as :mod:`shutil` does);
    standard output may be a pipe while standard error is the terminal."""
    if "COLUMNS" not in os.environ:
        with contextlib.suppress(AttributeError, ValueError, OSError):
            return os.get_terminal_size(stream.fileno()).columns or 80
    return shutil.get_terminal_size().columns


class Progress:
    """The progress line: ``with Progress() as p: p.step("loading x"); ...``.

    ``enabled`` defaults to whether ``stream`` (standard error) is a terminal; a disabled
    Progress costs one attribute test per call.
    """

    def __init__(
        self, stream: IO[str] | None = None, *, enabled: bool | None = None, prefix: str = "irpass"
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = is_terminal(self.stream) if enabled is None else enabled
        self.prefix = prefix
        self._text = ""
        self._since = monotonic()
        self._drawn_at = 0.0
        self._shown = False
        self._held = False  # someone else's line is open on stderr: do not draw over it
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._saved_stderr: Any = None

    def __enter__(self) -> Progress:
        if self.enabled:
            # writes to stderr erase the line first (see _Erasing)
            self._saved_stderr = sys.stderr
            if sys.stderr is self.stream:
                sys.stderr = _Erasing(self.stream, self)
            self._thread = threading.Thread(target=self._tick, name="irpass-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop redrawing and erase the line."""
        if not self.enabled:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._saved_stderr is not None:
            sys.stderr = self._saved_stderr
            self._saved_stderr = None
        with self._lock:
            self._erase()
        self.enabled = False

    def step(self, text: str, *, frequent: bool = False) -> None:
        """Start a new step: show ``text`` and time the step from now. A ``frequent``
        step (one of many quick ones, such as passes) is drawn at most 20 times a second."""
        if not self.enabled:
            return
        with self._lock:
            self._text, self._since = text, monotonic()
            self._draw(force=not frequent)

    def update(self, text: str) -> None:
        """Change the text of the current step, keeping its clock."""
        if not self.enabled:
            return
        with self._lock:
            self._text = text
            self._draw(force=False)

    def clear(self) -> None:
        """Erase the line now, before writing to standard output on the same terminal
        (writes to standard error erase it themselves); the next step or tick redraws it."""
        if not self.enabled:
            return
        with self._lock:
            self._erase()
            self._drawn_at = monotonic()  # the next tick, not this instant, redraws it

    def _tick(self) -> None:
        while not self._stop.wait(_TICK):
            with self._lock:
                self._draw(force=True)

    def _draw(self, *, force: bool) -> None:
        now = monotonic()
        if self._held or not self._text or (not force and now - self._drawn_at < _MIN_GAP):
            return
        elapsed = now - self._since
        line = f"{self.prefix}: {self._text}"
        if elapsed >= 1:
            line += f" ({elapsed:.0f} s)"
        width = _columns(self.stream) - 1  # a full line would wrap
        if len(line) > width > 3:
            line = line[: width - 3] + "..."
        self.stream.write(_ERASE + line)
        self.stream.flush()
        self._drawn_at, self._shown = now, True

    def _erase(self) -> None:
        if self._shown:
            self.stream.write(_ERASE)
            self.stream.flush()
            self._shown = False


class _Erasing:
    """Standard error while a progress line is shown: each write erases the line first;
    the next tick draws it again below what was written."""

    def __init__(self, stream: IO[str], progress: Progress) -> None:
        self._stream, self._progress = stream, progress

    def write(self, text: str) -> int:
        with self._progress._lock:
            self._progress._erase()
            n = self._stream.write(text)
            # a line left open is not overwritten by the next redraw
            if text:
                self._progress._held = not text.endswith("\n")
            return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
