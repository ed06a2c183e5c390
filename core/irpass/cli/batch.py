"""``irpass optimize A B ... --output-dir DIR [-j N]``: many models, one table.

Each MODEL is optimized as ``irpass optimize MODEL -o DIR/NAME`` would (same options,
same file name, or its stem with ``--format``'s suffix), ``N`` at a time in separate
processes (``-j 0``: one per CPU; ``-j 1``, the default, in this process, one after
the other). A model that fails does not stop the others: its row in the table says
``failed`` with the one-line error, the others are still written, and the exit code is
the worst of the failures' (1 a pass or ``--check`` failed, 2 bad input); a model that
kills its process (a crash in native code) fails alone. ``--reproducer DIR`` gives each
failing model its own ``DIR/NAME``. Clashes that
would lose files (two models with one output name, an output that is an input) are
refused before anything runs.

For a fleet beyond one machine, run :func:`optimize_file` per model under the
engine you already have (Ray, Dask, a batch queue): it is this command for one model,
returning the model's JSON record instead of raising.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import multiprocessing
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING, Any

from .errors import UsageError
from .info import format_table
from .optimize import STDIO, check_output_path, format_named, optimize_model
from .progress import Progress
from .summary import failure_record, human_bytes, human_seconds

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["optimize_file", "output_path", "run_batch"]


def output_path(model: str, out_dir: str | os.PathLike[str], format: str | None = None) -> Path:
    """Where ``--output-dir`` writes ``model``'s result: the same name in ``out_dir``, or
    with ``format`` (a format's name) its stem and that format's first suffix."""
    name = Path(model).name
    if format is not None:
        name = Path(model).stem + format_named(format).suffixes[0]
    return Path(out_dir) / name


def run_batch(args: argparse.Namespace, settings: Settings) -> int:
    """``optimize`` over several models into ``--output-dir``; the table or JSON list."""
    if args.output_dir is None:
        raise UsageError(
            "several MODELs are written with --output-dir DIR (-o names one result)",
            hint="see 'irpass optimize --help'",
        )
    if args.output is not None:
        raise UsageError("give -o OUT or --output-dir DIR, not both")
    if not args.models:
        raise UsageError("--output-dir DIR needs MODEL files to optimize")
    for option, value in (
        ("-", STDIO in args.models),
        ("--reproduce", args.reproduce),
        ("--report", args.report),
        ("--example", args.example),
    ):
        if value:
            raise UsageError(f"{option} is for one model, not with --output-dir")
    out_dir = Path(args.output_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--output-dir {args.output_dir}: not a directory")
    jobs: list[tuple[str, str]] = []
    taken: dict[Path, str] = {}
    for model in args.models:
        out = output_path(model, out_dir, args.format)
        if out in taken:
            raise UsageError(f"{taken[out]!r} and {model!r} would both be written to {str(out)!r}")
        taken[out] = model
        jobs.append((model, str(out)))
    out_dir.mkdir(parents=True, exist_ok=True)
    for model, out in jobs:
        check_output_path(out, model)

    workers = min(args.jobs or os.cpu_count() or 1, len(jobs))
    records: list[dict[str, Any] | None] = [None] * len(jobs)
    with Progress(enabled=False if args.quiet else None) as progress:
        progress.step(f"0 of {len(jobs)} models done")
        if workers == 1:
            for i, (model, out) in enumerate(jobs):
                progress.update(f"{i} of {len(jobs)} models done, now {model}")
                records[i] = _optimize_one(args, settings, model, out)
        else:
            _in_processes(args, jobs, workers, records, progress)
            # a worker that dies breaks the pool and every model it still held: those
            # run again, each alone, so that a crash fails only the model that crashed
            for i in [i for i, r in enumerate(records) if r is None]:
                _in_processes(args, [jobs[i]], 1, records, progress, first=i)
    for i, r in enumerate(records):
        if r is None:
            records[i] = {
                "model": jobs[i][0],
                "output": None,
                "status": "failed",
                "exit": 1,
                "error": "its process died (a crash in native code, or killed)",
                "time": {},
            }
    rows = [r for r in records if r is not None]
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif not args.quiet or any(r["status"] != "ok" for r in rows):
        sys.stderr.write(render_table(rows, workers))
    return max((r.get("exit", 0) for r in rows), default=0)


def _in_processes(
    args: argparse.Namespace,
    jobs: list[tuple[str, str]],
    workers: int,
    records: list[dict[str, Any] | None],
    progress: Progress,
    first: int = 0,
) -> None:
    """Optimize ``jobs`` in ``workers`` processes into ``records[first:]``; a model whose
    process died keeps its None."""
    # spawn: a fresh interpreter per worker, as on every platform (fork would copy this
    # process's threads and plugin state)
    context = multiprocessing.get_context("spawn")
    done = sum(r is not None for r in records)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {
            pool.submit(_worker, args, model, out): first + i for i, (model, out) in enumerate(jobs)
        }
        for future in as_completed(futures):
            with contextlib.suppress(BrokenProcessPool):
                records[futures[future]] = future.result()
                done += 1
                progress.update(f"{done} of {len(records)} models done")


def optimize_file(model: str, output: str, argv: Sequence[str] = ()) -> dict[str, Any]:
    """Optimize the file ``model`` into ``output`` as ``irpass optimize MODEL -o OUTPUT
    ARGV...`` does, in this process; return its JSON record (``status`` ``"ok"``, or
    ``"failed"`` with ``exit`` and ``error``) instead of printing or raising.

    For running irpass under a distributed engine, e.g. with Ray:
    ``ray.get([ray.remote(optimize_file).remote(m, f"out/{m}") for m in models])``.
    """
    from .main import parse_args, prepare

    args = parse_args(["optimize", model, "-o", output, "-q", *argv])
    with contextlib.redirect_stderr(io.StringIO()):  # warnings: once per process is enough
        settings = prepare(args)
    return _optimize_one(args, settings, model, output)


def _optimize_one(
    args: argparse.Namespace, settings: Settings, model: str, out: str
) -> dict[str, Any]:
    """One model's JSON record; a failure becomes a record with its exit code and error."""
    one = copy.copy(args)
    one.model, one.models, one.output, one.output_dir = model, [model], out, None
    one.quiet, one.json, one.report, one.jobs = True, False, None, 1
    if args.reproducer not in (None, "off"):  # one reproducer directory per model
        one.reproducer = str(Path(args.reproducer) / Path(out).name)
    start = perf_counter()
    try:
        return optimize_model(one, settings).record()
    except Exception as exc:  # the others go on: the failure is this model's row
        return failure_record(model, exc, perf_counter() - start)


def _worker(args: argparse.Namespace, model: str, out: str) -> dict[str, Any]:
    """A worker process's job: load the plugins as the command line says, optimize one."""
    from .main import prepare

    with contextlib.redirect_stderr(io.StringIO()):  # the parent printed the warnings
        settings = prepare(args)
    return _optimize_one(args, settings, model, out)


def render_table(rows: list[dict[str, Any]], workers: int) -> str:
    """The table ``--output-dir`` prints: one row per model, then a total line."""
    body = []
    for r in rows:
        t = r.get("time", {})

        def sec(key: str, t: dict[str, float] = t) -> str:
            return human_seconds(t[key]) if key in t else "-"

        if r["status"] == "ok":
            nodes = f"{r['nodes']['before']} -> {r['nodes']['after']}"
            size = f"{human_bytes(r['size']['input'])} -> {human_bytes(r['size']['output'])}"
            status, error = "ok", ""
        else:
            nodes = size = "-"
            status, error = "failed", r["error"].splitlines()[0]
        body.append(
            (
                r["model"],
                status,
                sec("load"),
                sec("passes"),
                sec("save"),
                sec("total"),
                nodes,
                size,
                error,
            )
        )
    failed = sum(r["status"] != "ok" for r in rows)
    headers = ("model", "status", "load", "passes", "save", "total", "op calls", "size", "error")
    if not failed:  # no empty column
        headers, body = headers[:-1], [row[:-1] for row in body]
    table = format_table(headers, body, align="<<>>>>><<"[: len(headers)])
    ok = len(rows) - failed
    tail = f"{ok} of {len(rows)} written" + (f", {failed} failed" if failed else "")
    return f"irpass optimize: {len(rows)} models, {workers} at a time\n{table}{tail}\n"
