"""Running a command with standard error (and/or output) on a pseudo-terminal, for the
tests of progress lines and of what is written to a terminal."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import termios
from collections.abc import Mapping, Sequence
from pathlib import Path


def run_on_terminal(
    command: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdout_terminal: bool = False,
    stderr_terminal: bool = True,
) -> tuple[int, bytes, bytes]:
    """Run ``command`` with stderr (and/or stdout) on a 24x80 pseudo-terminal; return the
    exit code, what the terminal received and what the other stream's pipe received."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=slave if stdout_terminal else subprocess.PIPE,
        stderr=slave if stderr_terminal else subprocess.PIPE,
    )
    os.close(slave)
    terminal = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        terminal += chunk
    os.close(master)
    pipe = (proc.stdout or proc.stderr).read()  # type: ignore[union-attr]
    return proc.wait(timeout=300), terminal, pipe
