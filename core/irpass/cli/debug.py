"""``irpass bisect`` and ``irpass reduce``: find the pass and rewrite that broke a model, and
the smallest model that still shows it (see :mod:`irpass.debug`).

``bisect MODEL`` runs the pipeline (``-P``, ``-O``, the config file's, as ``optimize``
does), finds the first pass after which the model is bad and then the first rewrite
inside that pass, and prints them. "Bad" is, by default, outputs that differ from the
input model's on random inputs (``--seed``, ``--rtol``, ``--atol``); with ``--test
CMD``, a command that exits non-zero on the model (saved in the input's format; its
path replaces ``{}`` in CMD or is appended).

``reduce MODEL`` shrinks the model while it stays bad: ``--check`` (the pipeline still
changes its outputs), ``--failing-pass NAME`` (that pass still fails on it) or ``--test
CMD``; the result goes to ``-o OUT`` or, as text, to standard output.

On a terminal both show a progress line on standard error (the questions asked so far,
and for how long); ``-q`` turns it off. ``bisect --report FILE`` writes the finding into
an HTML report (:class:`irpass.instrument.ReportInstrument`).

Exit codes: 0 found / reduced, 2 bad usage or nothing to bisect or reduce (the test
fails on the unmodified model, or never fails), 1 a failure while running.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING

from ..debug import (
    BisectError,
    CommandFails,
    Oracle,
    OracleError,
    OutputsDiffer,
    PassChangesOutputs,
    PassFails,
    ReduceError,
    bisect,
    reduce,
)
from ..formats import save
from ..transform import Sequential, get_pass
from .errors import UsageError
from .optimize import (
    STDIO,
    add_model_arguments,
    check_output_path,
    check_report_path,
    load_model,
    report_instrument,
    write_stdout_model,
)
from .progress import Progress

if TYPE_CHECKING:
    from ..ir.module import IRModule
    from ..settings import Settings

__all__ = ["add_bisect_arguments", "add_reduce_arguments", "run_bisect", "run_reduce"]


def _add_model_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument(
        "--test",
        metavar="CMD",
        help="a command that exits non-zero on a bad model (the model's path "
        "replaces {} in CMD, or is appended)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--rtol", type=float, default=1e-5, help="relative tolerance")
    parser.add_argument("--atol", type=float, default=1e-6, help="absolute tolerance")
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress line (and no notes) on stderr"
    )


def add_bisect_arguments(parser: argparse.ArgumentParser) -> None:
    """``bisect``'s own arguments (the pass options are added by :mod:`.main`)."""
    _add_model_arguments(parser)
    parser.add_argument(
        "--report",
        metavar="FILE",
        help="also write the finding into an HTML report of the run",
    )


class _Counting(Oracle):
    """The oracle, showing on the progress line how many questions it was asked."""

    def __init__(self, oracle: Oracle, progress: Progress, text: str) -> None:
        self._oracle, self._progress, self._text = oracle, progress, text

    def _bad(self, mod: IRModule) -> bool:
        self._progress.update(self._text.format(self.calls))
        return self._oracle.is_bad(mod)

    def describe(self) -> str:
        """The wrapped oracle's description."""
        return self._oracle.describe()


def add_reduce_arguments(parser: argparse.ArgumentParser) -> None:
    """``reduce``'s own arguments (the pass options are added by :mod:`.main`)."""
    _add_model_arguments(parser)
    parser.add_argument(
        "--check", action="store_true", help="bad = the pipeline (-P) changes the model's outputs"
    )
    parser.add_argument(
        "--failing-pass",
        metavar="NAME",
        help="bad = the pass NAME (after the passes it requires) fails on it",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="write the reduced model to OUT (-: standard output) instead of printing its text",
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=2000,
        help="at most this many candidates tested (default 2000)",
    )


def _suffix(args: argparse.Namespace) -> str:
    return Path(args.model).suffix if args.model else ".txt"


def _oracle(args: argparse.Namespace, mod: IRModule) -> Oracle:
    try:
        if args.test is not None:
            return CommandFails(args.test, _suffix(args))
        return OutputsDiffer(mod, seed=args.seed, rtol=args.rtol, atol=args.atol)
    except OracleError as exc:
        raise UsageError(str(exc)) from None


def run_bisect(args: argparse.Namespace, settings: Settings) -> int:
    """The ``bisect`` command."""
    if args.report is not None:
        check_report_path(args.report)
    started = perf_counter()
    base = settings.pass_context()
    with Progress(enabled=False if args.quiet else None) as progress:
        progress.step(f"loading {args.model or 'the example'}")
        mod, label = load_model(args)
        pipeline = settings.build_pipeline()
        oracle = _oracle(args, mod)
        report = report_instrument(args, pipeline)
        progress.step("bisect: running the pipeline")
        try:
            found = bisect(
                mod,
                pipeline,
                _Counting(oracle, progress, "bisect: question {}"),
                opt_level=base.opt_level,
                required_pass=base.required_pass,
                disabled_pass=base.disabled_pass,
                config=base.config.explicit,
            )
        except (BisectError, OracleError) as exc:
            raise UsageError(f"bisect {label}: {exc}") from None
    sys.stdout.write(f"irpass bisect: {label}, opt_level {base.opt_level}\n" + found.render())
    for inst in report:
        summary = {
            "model": label,
            "pipeline": settings.pipeline or "default",
            "time": {"total": perf_counter() - started},
        }
        inst.write(args.report, summary=summary, findings=[found])  # type: ignore[attr-defined]
    return 0


def run_reduce(args: argparse.Namespace, settings: Settings) -> int:
    """The ``reduce`` command."""
    if args.output not in (None, STDIO):
        check_output_path(args.output, args.model)
    chosen = [x for x in (args.test is not None, args.check, args.failing_pass is not None) if x]
    if len(chosen) != 1:
        raise UsageError("reduce needs one of --test CMD, --check, --failing-pass NAME")
    base = settings.pass_context()
    with Progress(enabled=False if args.quiet else None) as progress:
        progress.step(f"loading {args.model or 'the example'}")
        mod, label = load_model(args)
    oracle: Oracle
    if args.failing_pass is not None:
        try:
            oracle = PassFails(
                Sequential([get_pass(args.failing_pass)], name="reduce"),
                opt_level=base.opt_level,
                config=base.config.explicit,
            )
        except KeyError as exc:
            raise UsageError(str(exc.args[0]) if exc.args else str(exc)) from None
    elif args.check:
        oracle = PassChangesOutputs(
            settings.build_pipeline(),
            opt_level=base.opt_level,
            seed=args.seed,
            rtol=args.rtol,
            atol=args.atol,
        )
    else:
        oracle = _oracle(args, mod)
    with Progress(enabled=False if args.quiet else None) as progress:
        progress.step("reduce: testing the model")
        try:
            result = reduce(
                mod, _Counting(oracle, progress, "reduce: candidate {}"), budget=args.budget
            )
        except (ReduceError, OracleError) as exc:
            raise UsageError(f"reduce {label}: {exc}") from None
    if not args.quiet:
        sys.stderr.write(f"irpass reduce: {label}: " + result.render())
    if args.output not in (None, STDIO):
        save(result.module, args.output)
    else:
        write_stdout_model(result.module, None)
    return 0
