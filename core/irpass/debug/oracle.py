"""Oracles: what ``bisect`` and ``reduce`` ask of a module -- "is this one bad?".

- :class:`OutputsDiffer`: it computes something other than a reference, on fixed inputs
  (or fails to run). With no test of their own, users get this one.
- :class:`CommandFails`: a user's command exits non-zero on it (LLVM's bugpoint and
  ``llvm-reduce --test``): the module is saved to a file in the input's format, whose
  path replaces ``{}`` in the command or is appended to it.
- :class:`PassFails`: running a pass (or pipeline) on it raises (``reduce
  --failing-pass NAME``).
- :class:`PassChangesOutputs`: running a pass (or pipeline) on it changes its outputs
  (``reduce --check``: the miscompile is still there).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import IRPassError
from ..evaluator import evaluate
from ..ir.module import IRModule
from ..testing.inputs import random_inputs
from ..testing.semantics import compare_outputs
from ..transform import Pass, PassContext

__all__ = ["Oracle", "OracleError", "OutputsDiffer", "CommandFails", "PassFails",
           "PassChangesOutputs"]


class OracleError(IRPassError):
    """An oracle that cannot answer: a command that is not found, inputs that do not fit."""


class Oracle:
    """Decides whether a module is bad; ``calls`` counts the questions asked."""

    calls = 0

    def is_bad(self, mod: IRModule) -> bool:
        """Whether ``mod`` shows the problem."""
        self.calls += 1
        return self._bad(mod)

    def _bad(self, mod: IRModule) -> bool:
        raise NotImplementedError

    def describe(self) -> str:
        """What "bad" means, for reports."""
        raise NotImplementedError


class OutputsDiffer(Oracle):
    """Bad when the module's outputs on ``inputs`` (default: random ones of ``reference``,
    from ``seed``) differ from ``reference``'s beyond ``rtol``/``atol``, or it fails to run."""

    def __init__(self, reference: IRModule, inputs: Mapping[str, Any] | None = None,
                 seed: int = 0, rtol: float = 1e-5, atol: float = 1e-6) -> None:
        self.inputs = dict(inputs) if inputs is not None else random_inputs(reference, seed)
        self.seed, self.rtol, self.atol = seed, rtol, atol
        try:
            self.expected = evaluate(reference, **self.inputs)
        except (IRPassError, ValueError, TypeError) as exc:
            raise OracleError(f"cannot run the reference module: {exc}") from exc
        self.last: list[str] = []

    def _bad(self, mod: IRModule) -> bool:
        try:
            got = evaluate(mod, **self.inputs)
        except IRPassError as exc:
            self.last = [f"fails to run: {exc}"]
            return True
        self.last = compare_outputs(self.expected, got, self.rtol, self.atol)
        return bool(self.last)

    def describe(self) -> str:
        return (f"outputs differ from the input model's (seed {self.seed}, rtol={self.rtol:g}, "
                f"atol={self.atol:g})")


class CommandFails(Oracle):
    """Bad when ``command`` exits non-zero on the module, saved with ``suffix`` (the input
    model's, so the command reads the format it expects)."""

    def __init__(self, command: str, suffix: str = ".txt", timeout: float | None = None) -> None:
        words = shlex.split(command)
        if not words:
            raise OracleError("--test: the command is empty")
        if shutil.which(words[0]) is None and not Path(words[0]).is_file():
            raise OracleError(f"--test: command {words[0]!r} not found")
        self.command, self.words, self.suffix, self.timeout = command, words, suffix, timeout
        self._dir = tempfile.mkdtemp(prefix="irpass-test-")
        # the candidates' folder goes with the oracle
        weakref.finalize(self, shutil.rmtree, self._dir, True)
        self.last: list[str] = []

    def _bad(self, mod: IRModule) -> bool:
        from ..formats import save

        path = os.path.join(self._dir, f"candidate{self.suffix}")
        save(mod, path)
        argv = ([w.replace("{}", path) for w in self.words] if any("{}" in w for w in self.words)
                else [*self.words, path])
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout)
        except OSError as exc:
            raise OracleError(f"--test: cannot run {self.command!r}: {exc}") from exc
        tail = (done.stderr or done.stdout).strip().splitlines()
        self.last = [f"exit {done.returncode}" + (f": {tail[-1]}" if tail else "")]
        return done.returncode != 0

    def describe(self) -> str:
        return f"the command {self.command!r} exits non-zero"


class PassFails(Oracle):
    """Bad when ``transform`` raises on the module (under ``config``)."""

    def __init__(self, transform: Pass, opt_level: int = 3,
                 config: Mapping[str, Any] | None = None) -> None:
        self.transform, self.opt_level, self.config = transform, opt_level, dict(config or {})
        self.last: list[str] = []

    def _bad(self, mod: IRModule) -> bool:
        try:
            with PassContext(opt_level=self.opt_level, config=self.config):
                self.transform(mod)
        except IRPassError as exc:
            self.last = [str(exc).splitlines()[0]]
            return True
        return False

    def describe(self) -> str:
        return f"{self.transform.info.name} fails"


class PassChangesOutputs(Oracle):
    """Bad when ``transform`` changes what the module computes on random inputs."""

    def __init__(self, transform: Pass, opt_level: int = 3, seed: int = 0,
                 rtol: float = 1e-5, atol: float = 1e-6) -> None:
        self.transform, self.opt_level = transform, opt_level
        self.seed, self.rtol, self.atol = seed, rtol, atol
        self.last: list[str] = []

    def _bad(self, mod: IRModule) -> bool:
        try:
            inputs = random_inputs(mod, self.seed)
            before = evaluate(mod, **inputs)
        except (IRPassError, ValueError, TypeError):
            return False  # a candidate that does not run shows nothing
        try:
            with PassContext(opt_level=self.opt_level):
                after = evaluate(self.transform(mod), **inputs)
        except IRPassError:
            return False  # another failure than the one reduced
        self.last = compare_outputs(before, after, self.rtol, self.atol)
        return bool(self.last)

    def describe(self) -> str:
        return f"{self.transform.info.name} changes the outputs"
