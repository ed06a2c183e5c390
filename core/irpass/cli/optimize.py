"""``irpass optimize``: run the pipeline over a model, write the result, summarize.

The model is a file (``irpass.load``: its format from its suffix), ``-`` for standard
input (irpass text, or another format's bytes: ``--format``, else guessed from the
content), or, with no MODEL, a network from :mod:`irpass.testing.models` (``--example``,
default ``resnet``). The pipeline, opt level, required/disabled passes and instruments
come from the settings (command line > environment > config file). The result goes to
``-o OUT`` (``irpass.save``, format from the suffix), to standard output with ``-o -``
(``--format``, default text) or, without ``-o``, as text to standard output when that
is not a terminal; a module longer than the terminal is not dumped on it (one line says
how to get it). The summary (see :mod:`.summary`) goes to stderr so stdout stays a
parseable module; ``--json`` prints it as one JSON object on stdout instead. On a
terminal, a progress line on stderr says what runs (:mod:`.progress`).

Several MODELs, or ``--output-dir DIR``, optimize each model into DIR, ``-j N`` at a
time (:mod:`.batch`).

The result never overwrites the input: an ``-o`` that is the input file, or
whose files (the text format's ``.npz`` of constants, say) are any of the
files the input consists of (``irpass.formats.model_files``), is refused
before anything runs (exit 2, naming both). ``irpass optimize model.txt -o
model.ir`` is refused that way when ``model.txt`` keeps its constants in
``model.npz``, where ``model.ir``'s would go.

Every pass's result is checked (well-formedness and types, the config option
``verify_each``, :class:`irpass.instrument.VerifyEach`) unless ``--no-verify-each``
or the config file says ``verify_each = false``: a pass that returns a broken
module is named as the culprit.

``--check`` runs the input and the result on the same random inputs
(``irpass.testing.random_inputs``) and fails (exit 1, nothing written) when
an output differs beyond ``rtol``/``atol`` (``numpy.allclose``).

``--report FILE`` writes an HTML report of the run
(:class:`irpass.instrument.ReportInstrument`) with the summary's numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ..errors import IRPassError, PassError
from ..evaluator import evaluate
from ..formats import FileFormat, format_for, list_formats, load, model_files, save
from ..instrument.base import PassInstrument
from ..instrument.check import CheckEach, CheckEachError
from ..instrument.printing import PrintChanged, module_text
from ..instrument.verify import VerifyEach
from ..ir import IRModule
from ..ir.parser import parse
from ..testing import random_inputs
from ..testing.models import MODELS, transformer_encoder
from ..testing.semantics import compare_outputs, flatten_outputs
from ..transform import PassContext, Sequential, parse_pipeline
from ..transform.context import VERIFY_EACH
from .errors import CommandFailed, UsageError
from .progress import Progress, is_terminal
from .reproducer import (
    Positions,
    check_reproducer_dir,
    failing_point,
    read_reproducer,
    write_reproducer,
)
from .summary import RunSummary, count_ops, failure_record, file_size

if TYPE_CHECKING:
    from ..settings import Settings
    from ..transform import Pass, PassInfo

__all__ = [
    "add_arguments",
    "add_model_arguments",
    "check_output_path",
    "check_report_path",
    "compare_outputs",
    "example_models",
    "format_named",
    "load_model",
    "optimize_model",
    "read_stdin_model",
    "report_instrument",
    "run",
    "write_stdout_model",
    "written_nodes",
]

DEFAULT_EXAMPLE = "resnet"
STDIO = "-"  # MODEL or -o: standard input / output


def example_models() -> dict[str, Callable[[], IRModule]]:
    """The networks ``--example`` can build, by name (the builders' default sizes)."""
    # the module's table says "transformer"; the builder's own name works too
    return {**MODELS, "transformer_encoder": transformer_encoder}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``optimize``'s own arguments (the pass options are added by :mod:`.main`)."""
    examples = sorted(example_models())
    parser.add_argument(
        "models",
        nargs="*",
        metavar="MODEL",
        help="model file to optimize, format by suffix (.txt/.ir: the text format), or - "
        "for standard input; several with --output-dir; without it, the example network "
        f"--example (default {DEFAULT_EXAMPLE})",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="write the result to OUT (format by suffix; -: standard output, format by "
        "--format) instead of printing its text (which a terminal gets only when it fits)",
    )
    parser.add_argument(
        "--format",
        metavar="NAME",
        help="the format of - (standard input or output): text (the default for output), "
        "or a plugin's, e.g. onnx; standard input is recognized without it",
    )
    parser.add_argument(
        "--output-dir",
        metavar="DIR",
        help="optimize every MODEL into DIR (same file name; created if missing) and print "
        "one table; if any failed, the others are still written and the exit code is the "
        "worst failure's",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="with --output-dir: optimize N models at a time in separate processes "
        "(default 1; 0: one per CPU)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the summary as one JSON object on stdout (a list with --output-dir) "
        "instead of text on stderr; the result then needs -o or --output-dir",
    )
    parser.add_argument(
        "--report",
        metavar="FILE",
        help="write an HTML report of the run (passes, times, what each pass changed)",
    )
    parser.add_argument(
        "--example",
        choices=examples,
        metavar="NAME",
        help=f"the built-in network to optimize when no MODEL is given: {', '.join(examples)}",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="run the model before and after on random inputs and fail (exit 1) "
        "if an output differs beyond --rtol/--atol",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the --check inputs (default 0)"
    )
    parser.add_argument(
        "--rtol", type=float, default=1e-5, help="relative tolerance of --check (default 1e-5)"
    )
    parser.add_argument(
        "--atol", type=float, default=1e-6, help="absolute tolerance of --check (default 1e-6)"
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no summary and no progress line on stderr"
    )
    parser.add_argument(
        "--check-each",
        action="store_true",
        help="run the module on random inputs (--seed) after every pass and stop at the "
        "first pass that changed the outputs beyond --rtol/--atol, showing the module "
        "before and after it",
    )
    parser.add_argument(
        "--print-changed",
        nargs="?",
        const="module",
        choices=["module", "diff"],
        metavar="diff",
        help="print the module after each pass that changed it (once at the start), or "
        "with =diff a unified diff of its text; constants of more than "
        "print.elide_constants elements (default 16) without data",
    )
    parser.add_argument(
        "--reproducer",
        metavar="DIR",
        help="when a pass fails, write the module before it, the rest of the pipeline, the "
        "settings and the plugins into DIR (default: a new temporary directory, named in "
        "the error; 'off': none)",
    )
    parser.add_argument(
        "--reproduce",
        metavar="DIR",
        help="rerun a reproducer directory written by a failed run",
    )
    parser.add_argument(
        "--no-verify-each",
        dest="verify_each",
        action="store_false",
        default=None,
        help="do not check the module after every pass (the config option verify_each; "
        "on by default here, as MLIR verifies after every pass)",
    )


class _Recorder(PassInstrument):
    """Notes every pass that starts running, so the summary can list them, and shows it
    on the progress line.

    The Sequentials that only group passes (whose ``PassInfo`` objects are
    given) are left out: the summary lists the passes that did the work.
    """

    name = "irpass-cli-recorder"

    def __init__(self, containers: set[int], progress: Progress | None = None) -> None:
        self._containers = containers
        self._progress = progress
        self.ran: list[str] = []

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Record the pass by name, unless it is one of the pipeline's Sequentials."""
        if id(info) not in self._containers:
            self.ran.append(info.name)
            if self._progress is not None:
                self._progress.step(f"pass {len(self.ran)}: {info.name}", frequent=True)


def _container_infos(p: Pass) -> set[int]:
    """Identities of the ``PassInfo`` of every Sequential in the pipeline tree."""
    out: set[int] = set()
    stack = [p]
    while stack:
        q = stack.pop()
        if isinstance(q, Sequential):
            out.add(id(q.info))
            stack.extend(q.passes)
    return out


# -- standard input and output ----------------------------------------------------------


def format_named(name: str) -> FileFormat:
    """The registered format called ``name`` (``--format``); a :class:`UsageError` listing
    the known ones otherwise."""
    formats = {fmt.name: fmt for fmt, _ in list_formats()}
    if name not in formats:
        raise UsageError(f"--format {name}: no such format (known: {', '.join(sorted(formats))})")
    return formats[name]


def _looks_like_text(data: bytes) -> bool:
    # irpass text is UTF-8 without control characters other than whitespace; a binary
    # model (ONNX's protobuf starts with a field tag such as 0x08) has some in its head
    head = data[:4096]
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not merely a character cut at the 4096th byte
            return False
    return not any(b < 32 and b not in (9, 10, 13) for b in head)


def _stdin_format(data: bytes, name: str | None) -> FileFormat:
    """The format of the model on standard input: ``--format``, else irpass text if it
    reads as text, else the one loadable binary format registered."""
    if name is not None:
        fmt = format_named(name)
        if fmt.load is None:
            raise UsageError(f"--format {name}: the {name!r} format cannot load")
        return fmt
    if _looks_like_text(data):
        return format_named("text")
    binary = [fmt for fmt, _ in list_formats() if fmt.load is not None and fmt.name != "text"]
    if len(binary) != 1:
        known = ", ".join(f.name for f in binary) or "none is registered"
        raise UsageError(
            f"standard input is not irpass text; say its format with --format "
            f"NAME (binary formats: {known})"
        )
    return binary[0]


def read_stdin_model(name: str | None = None) -> tuple[IRModule, int]:
    """The model on standard input and its size in bytes (format: see :func:`_stdin_format`)."""
    data = sys.stdin.buffer.read()
    if not data:
        raise UsageError("MODEL is - but standard input is empty")
    fmt = _stdin_format(data, name)
    if fmt.name == "text":
        return parse(data.decode("utf-8", errors="replace"), filename="<stdin>"), len(data)
    # the formats' loaders read files: give them one
    with tempfile.TemporaryDirectory(prefix="irpass-stdin-") as tmp:
        path = Path(tmp) / f"stdin{fmt.suffixes[0]}"
        path.write_bytes(data)
        mod = fmt.load(path)  # type: ignore[misc]
    return mod, len(data)


def write_stdout_model(mod: IRModule, name: str | None) -> tuple[int, int | None]:
    """Write ``mod`` to standard output in format ``name`` (default text); the bytes
    written and the nodes of what was written as the format counts them (or None)."""
    fmt = format_named(name or "text")
    if fmt.name == "text":
        # the text format's constants inline (no .npz beside a stream)
        text = mod.astext()
        text = text if text.endswith("\n") else text + "\n"
        sys.stdout.write(text)
        sys.stdout.flush()
        return len(text.encode()), None
    if fmt.save is None:
        raise UsageError(f"--format {fmt.name}: the {fmt.name!r} format cannot save")
    with tempfile.TemporaryDirectory(prefix="irpass-stdout-") as tmp:
        path = Path(tmp) / f"stdout{fmt.suffixes[0]}"
        fmt.save(mod, path)  # type: ignore[misc]
        extra = sorted(p.name for p in Path(tmp).iterdir() if p != path)
        if extra:
            raise UsageError(
                f"the {fmt.name!r} format wrote more than one file "
                f"({', '.join(extra)} beside the model): write it with -o FILE"
            )
        data = path.read_bytes()
        nodes = written_nodes(path)
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return len(data), nodes


# -- loading ----------------------------------------------------------------------------


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """``MODEL`` and ``--example``, for the commands that take one model (``show``,
    ``bisect``, ``reduce``; ``optimize`` takes several); read them with :func:`load_model`."""
    parser.add_argument(
        "model",
        nargs="?",
        metavar="MODEL",
        help=f"model file (format by suffix, - for standard input); without it, --example "
        f"(default {DEFAULT_EXAMPLE})",
    )
    parser.add_argument(
        "--example",
        choices=sorted(example_models()),
        metavar="NAME",
        help="a built-in network instead of MODEL",
    )


def load_model(args: argparse.Namespace) -> tuple[IRModule, str]:
    """The model that ``args.model`` / ``args.example`` name, and how to call it in messages."""
    if args.model is not None:
        if args.example is not None:
            raise UsageError(
                "give a MODEL file or --example, not both", hint="see 'irpass optimize --help'"
            )
        if args.model == STDIO:
            return read_stdin_model(getattr(args, "format", None))[0], STDIO
        return load(args.model), args.model
    name = args.example or DEFAULT_EXAMPLE
    return example_models()[name](), f"example {name}"


def check_output_path(path: str, model: str | None) -> None:
    """Fail before any pass runs when the result could not be written, or would be
    written over a file of the input ``model``."""
    format_for(path, for_="save")
    parent = Path(path).parent
    if not parent.is_dir():
        raise FileNotFoundError(2, "no such directory to write the result into", str(parent))
    if model is not None and model != STDIO:
        _refuse_overwriting_the_input(model, path)


def check_report_path(path: str) -> None:
    """Fail before anything runs when ``--report``'s file could not be written."""
    if not Path(path).parent.is_dir():
        raise UsageError(
            f"--report {path}: no such directory to write the report into "
            f"({str(Path(path).parent)!r})"
        )
    from ..instrument import report

    try:
        report.check_report_path(path)
    except ValueError as exc:  # "report: 'x.txt' must end in .html ..."
        raise UsageError(f"--{exc}") from None


def _refuse_overwriting_the_input(model: str, output: str) -> None:
    """A :class:`UsageError` naming both when writing ``output`` would replace a file that
    ``model`` consists of (the input itself, or one of its side files)."""
    # only files that exist can be lost; an output written afresh (the usual case) spares
    # reading the input's side files (an ONNX model's list of external data files)
    outputs = [f for f in model_files(output, for_="save") if f.exists()]
    inputs = [f for f in model_files(model, for_="load") if f.exists()] if outputs else []
    for out in outputs:
        for inp in inputs:
            if not os.path.samefile(out, inp):
                continue
            if inp == inputs[0]:
                clash = f"the input {model!r}"
            elif out == inp:  # the same name: no need to repeat it
                clash = f"a file of the input {model!r}"
            else:
                clash = f"{str(inp)!r}, a file of the input {model!r}"
            if out == Path(output):
                what = f"the output {output!r} is {clash}"
            else:
                what = f"the output {output!r} would write {str(out)!r} beside it, which is {clash}"
            raise UsageError(f"{what}; write the result to another file")


def _evaluate(mod: IRModule, inputs: Mapping[str, Any]) -> Any:
    return evaluate(mod, **inputs)


def written_nodes(path: str | Path) -> int | None:
    """The nodes of the model written at ``path`` as its format counts them (its
    ``node_count``); None for a format that does not count them."""
    node_count = format_for(path, for_="save").node_count
    return None if node_count is None else node_count(Path(path))


# -- the command ------------------------------------------------------------------------


def _check_arguments(args: argparse.Namespace) -> None:
    """The combinations of arguments that make no sense, refused before anything runs."""
    if args.output == STDIO and args.json:
        raise UsageError(
            "--json prints on standard output, so the result cannot go there too: give -o FILE"
        )
    if args.models.count(STDIO) > 1 or (STDIO in args.models and len(args.models) > 1):
        raise UsageError("- (standard input) can only be the one MODEL")
    if args.format is not None:
        fmt = format_named(args.format)
        for used, what in ((args.output == STDIO, "save"), (STDIO in args.models, "load")):
            if used and getattr(fmt, what) is None:
                raise UsageError(f"--format {args.format}: the {fmt.name!r} format cannot {what}")
        if args.output == STDIO and fmt.name != "text" and is_terminal(sys.stdout):
            raise UsageError(
                f"-o - --format {fmt.name} writes binary data: send it to a file or a pipe, "
                "not to the terminal"
            )
    if args.jobs < 0:
        raise UsageError(f"-j {args.jobs}: give a number of processes >= 0")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """The ``optimize`` command; returns the exit code (failures raise, see :mod:`.main`)."""
    _check_arguments(args)
    if args.output_dir is not None or len(args.models) > 1:
        from .batch import run_batch

        return run_batch(args, settings)
    if args.jobs != 1:
        raise UsageError("-j runs several models at once: give them with --output-dir DIR")
    args.model = args.models[0] if args.models else None
    start = perf_counter()
    try:
        with Progress(enabled=False if args.quiet else None) as progress:
            summary = optimize_model(args, settings, progress)
    except Exception as exc:
        if args.json:  # a script reads the failure where it reads a success
            record = failure_record(args.model or "example", exc, perf_counter() - start)
            sys.stdout.write(json.dumps(record, indent=2) + "\n")
        raise  # and the error line on stderr, with its exit code, as without --json
    if args.json:
        sys.stdout.write(json.dumps(summary.record(), indent=2) + "\n")
    elif not args.quiet:
        sys.stderr.write(summary.render())
    return 0


def optimize_model(
    args: argparse.Namespace, settings: Settings, progress: Progress | None = None
) -> RunSummary:
    """Optimize ``args.model`` as the command line in ``args`` says and return the
    summary (printing nothing but the result, when it goes to standard output)."""
    started = perf_counter()
    progress = progress or Progress(enabled=False)
    if args.output is not None and args.output != STDIO:
        check_output_path(args.output, args.model)
    if args.report is not None:
        check_report_path(args.report)
    if args.reproducer not in (None, "off"):
        check_reproducer_dir(args.reproducer)
    base = settings.pass_context()
    # loaders and exporters read their options (e.g. a plugin's [config.onnx]) from the
    # current context; they get its config, not its instruments, which see only the passes
    io_ctx = PassContext(opt_level=base.opt_level, config=dict(base.config.explicit))
    size_in = None
    if args.reproduce is not None:
        mod, label, pipeline, base = _reproduce(args, settings, base)
    else:
        progress.step(f"loading {args.model or 'the example'}")
        with io_ctx:
            if args.model == STDIO:
                mod, size_in = read_stdin_model(args.format)
                label = STDIO
            else:
                mod, label = load_model(args)
        if args.model not in (None, STDIO):
            size_in = file_size(model_files(args.model, for_="load"))
    loaded = perf_counter()
    if args.reproduce is None:
        pipeline = settings.build_pipeline()  # imports the passes: start-up, not load

    summary = RunSummary(
        model=label, pipeline=settings.pipeline or "default", opt_level=base.opt_level
    )
    summary.size_in = size_in
    summary.time["load"] = loaded - started

    expected = inputs = None
    if args.check:
        progress.step("running the input model (--check)")
        check_start = perf_counter()
        inputs = random_inputs(mod, args.seed)
        try:
            expected = _evaluate(mod, inputs)
        except IRPassError as exc:
            raise ValueError(f"--check: cannot run the input model ({label}): {exc}") from exc
        summary.time["check"] = perf_counter() - check_start

    report = report_instrument(args, pipeline)
    recorder = _Recorder(_container_infos(pipeline), progress)
    positions = Positions()
    config = dict(base.config)
    if args.verify_each is not None or VERIFY_EACH not in base.config.explicit:
        config[VERIFY_EACH] = args.verify_each is not False
    # the recorder joins a copy of the configured context, ahead of the user's instruments
    ctx = PassContext(
        opt_level=base.opt_level,
        required_pass=base.required_pass,
        disabled_pass=base.disabled_pass,
        instruments=[
            recorder,
            positions,
            *base.instruments,
            *_debuggers(args, config[VERIFY_EACH]),
            *report,
        ],
        config=config,
    )
    summary.ran = recorder.ran
    # stdout is for the result: whatever passes print while running goes to stderr
    with ctx, contextlib.redirect_stdout(sys.stderr):
        try:
            progress.step("running the pipeline")
            start = perf_counter()
            try:
                result = pipeline(mod)
            except PassError as exc:
                if isinstance(exc, CheckEachError):
                    _show_around(exc)
                where = _save_reproducer(args, pipeline, exc, positions, mod, ctx)
                _write_report(report, args, summary, [exc])
                raise CommandFailed(f"{exc}{where}") from exc
            except IRPassError as exc:
                raise CommandFailed(str(exc)) from exc
            summary.time["passes"] = perf_counter() - start
        finally:
            # render() forgets everything when the context is left
            _print_instrument_reports(base.instruments)

    if args.check:
        assert inputs is not None
        progress.step("running the optimized model (--check)")
        check_start = perf_counter()
        summary.check = _check_result(args, label, expected, result, inputs)
        summary.time["check"] += perf_counter() - check_start  # both models' runs

    progress.step("counting op calls")
    summary.before, summary.after = count_ops(mod), count_ops(result)
    save_start = perf_counter()
    _write_result(args, result, summary, progress, io_ctx)
    summary.time["save"] = perf_counter() - save_start
    if summary.output not in (None, STDIO):  # reads the file back: not part of save's time
        summary.file_nodes = written_nodes(summary.output)
    summary.time["total"] = perf_counter() - started
    _write_report(report, args, summary, [])
    return summary


def _check_result(
    args: argparse.Namespace, label: str, expected: Any, result: IRModule, inputs: Mapping[str, Any]
) -> str:
    """``--check``: the line for the summary, or :class:`CommandFailed`."""
    try:
        actual = _evaluate(result, inputs)
    except IRPassError as exc:
        raise CommandFailed(f"--check: the optimized module fails to run: {exc}") from exc
    problems = compare_outputs(expected, actual, args.rtol, args.atol)
    if problems:
        shown = "; ".join(problems[:3]) + ("; ..." if len(problems) > 3 else "")
        raise CommandFailed(
            f"--check: the optimized module computes something else ({label}, seed "
            f"{args.seed}, rtol={args.rtol:g}, atol={args.atol:g}):\n  {shown}"
        )
    n = len(flatten_outputs(expected))
    return f"ok, {n} output(s) match (seed {args.seed}, rtol={args.rtol:g}, atol={args.atol:g})"


def _write_result(
    args: argparse.Namespace,
    result: IRModule,
    summary: RunSummary,
    progress: Progress,
    io_ctx: PassContext,
) -> None:
    """Write the result where ``-o`` says (or print it), filling the summary's output,
    size and ONNX node count."""
    out = args.output
    if out is not None and out != STDIO:
        progress.step(f"saving {out}")
        with io_ctx:
            save(result, out)
        summary.output = out
        summary.size_out = file_size(model_files(out, for_="save"))
        return
    if out is None and args.json:
        summary.note = "result not written (--json prints on standard output): give -o FILE"
        return
    progress.close()  # the result and the progress line would share the terminal
    if out is None and is_terminal(sys.stdout):
        rows = shutil.get_terminal_size().lines
        assert summary.after is not None
        # a module prints at least one line per op call: spare printing a big one
        text = None if summary.after.calls >= rows else result.astext()
        if text is None or text.count("\n") >= rows - 1:
            lines = (
                f"{text.count(chr(10)) + 1} lines"
                if text is not None
                else (f"{summary.after.calls} op calls")
            )
            summary.note = (
                f"the result ({lines}) is not printed on the terminal: write it "
                "with -o FILE, or print it with -o - or through a pipe"
            )
            if args.quiet:  # the note is not shown otherwise: say it anyway, it is needed
                sys.stderr.write(f"irpass: note: {summary.note}\n")
            return
    summary.output = STDIO
    summary.size_out, summary.file_nodes = write_stdout_model(result, args.format)


def report_instrument(args: argparse.Namespace, pipeline: Pass) -> list[PassInstrument]:
    """``[ReportInstrument(...)]`` with ``--report``, else ``[]``."""
    if args.report is None:
        return []
    from ..instrument.report import ReportInstrument

    # given the pipeline, the report lists the passes that were skipped too
    return [ReportInstrument(pipeline=pipeline)]


def _write_report(
    report: list[PassInstrument], args: argparse.Namespace, summary: RunSummary, findings: list[Any]
) -> None:
    for inst in report:
        inst.write(
            args.report,
            summary=summary.report_summary(),  # type: ignore[attr-defined]
            findings=findings,
        )


def _reproduce(
    args: argparse.Namespace, settings: Settings, base: PassContext
) -> tuple[IRModule, str, Pass, PassContext]:
    """The module, label, pipeline and context of ``--reproduce DIR``."""
    if (
        args.model is not None
        or args.example is not None
        or settings.pipeline not in (None, "default")
    ):
        raise UsageError(
            "--reproduce DIR reruns the saved module and pipeline: give no "
            "MODEL, --example or -P with it"
        )
    rep = read_reproducer(args.reproduce)
    pipeline = parse_pipeline(rep.pipeline, opt_level=rep.opt_level)
    for key, value in rep.options.items():  # the debugging options of the failing run
        if getattr(args, key, None) in (None, False, 0):
            setattr(args, key, value)
    ctx = PassContext(
        opt_level=rep.opt_level,
        required_pass=rep.required_pass,
        disabled_pass=rep.disabled_pass,
        instruments=base.instruments,
        config=rep.config,
    )
    return rep.module, f"reproducer {str(rep.path)!r}", pipeline, ctx


def _save_reproducer(
    args: argparse.Namespace,
    pipeline: Pass,
    exc: PassError,
    positions: Positions,
    start: IRModule,
    ctx: PassContext,
) -> str:
    """Write the reproducer of a failed pass; the line to add to the error."""
    if args.reproducer == "off" or args.reproduce is not None:
        return ""
    module, passes = failing_point(pipeline, exc, positions, start)
    options = {
        "check_each": args.check_each,
        "seed": args.seed,
        "rtol": args.rtol,
        "atol": args.atol,
    }
    try:
        path = write_reproducer(args.reproducer, module, passes, ctx, options, exc)
    except OSError as err:
        return f"\n  (no reproducer written: {err})"
    return f"\n  reproducer: {path} (rerun: irpass optimize --reproduce {path})"


def _show_around(exc: CheckEachError) -> None:
    """The module before and after the pass check-each blames (constants elided)."""
    sys.stderr.write(
        f"*** IR before {exc.pass_name} ***\n{module_text(exc.before)}\n"
        f"*** IR after {exc.pass_name} ***\n{module_text(exc.after)}\n"
    )


def _debuggers(args: argparse.Namespace, verify: bool) -> list[PassInstrument]:
    """The instruments the debugging options ask for, in the order they should see a
    pass's result: printed, then verified, then run."""
    out: list[PassInstrument] = []
    if args.print_changed is not None:
        out.append(PrintChanged(diff=args.print_changed == "diff"))
    if args.check_each:
        if verify:
            out.append(VerifyEach())  # an ill-typed module is reported as such, not run
        out.append(CheckEach(seed=args.seed, rtol=args.rtol, atol=args.atol))
    return out


def _print_instrument_reports(instruments: tuple[PassInstrument, ...]) -> None:
    for inst in instruments:
        render = getattr(inst, "render", None)
        if callable(render):
            text = render()
            if text:
                sys.stderr.write(text if text.endswith("\n") else text + "\n")
