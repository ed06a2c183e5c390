"""The soak's progress line: on a terminal's standard error, erased at the end, and absent
with -q or when standard error is not a terminal (issue 24: progress on anything long)."""

import subprocess
import sys

from terminal import run_on_terminal

ERASE = b"\r\x1b[K"
SOAK = [sys.executable, "-m", "irpass.testing.soak", "--programs", "2", "--shrink-budget", "0"]


def _run_with_stderr_on_a_terminal(*extra: str) -> tuple[bytes, bytes]:
    """(what the terminal got, what standard output got)."""
    code, terminal, out = run_on_terminal([*SOAK, *extra])
    assert code == 0, (terminal, out)
    return terminal, out


def test_soak_draws_a_progress_line_on_a_terminal_and_erases_it():
    terminal, out = _run_with_stderr_on_a_terminal()
    assert b"soak: 2 programs x" in terminal or b"soak: 1 of 2 programs" in terminal
    assert terminal.endswith(ERASE)  # nothing left on the line
    assert b"0 failures" in out and ERASE not in out


def test_soak_quiet_draws_nothing():
    terminal, out = _run_with_stderr_on_a_terminal("-q")
    assert terminal == b""
    assert b"0 failures" in out


def test_soak_through_a_pipe_draws_nothing():
    proc = subprocess.run(SOAK, capture_output=True, timeout=300)
    assert proc.returncode == 0
    assert proc.stderr == b"" and ERASE not in proc.stdout
