"""``irpass optimize``: run the pipeline over a model, write the result, summarize.

The model is a file (``irpass.load``: its format from its suffix) or, with no
MODEL, a network from :mod:`irpass.testing.models` (``--example``, default
``resnet``). The pipeline, opt level, required/disabled passes and
instruments come from the settings (command line > environment > config
file). The result goes to ``-o OUT`` (``irpass.save``, format from the
suffix) or, as text, to stdout; the summary goes to stderr so stdout stays a
parseable module.

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
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ..errors import IRPassError, PassError
from ..evaluator import evaluate
from ..formats import format_for, load, model_files, save
from ..instrument.base import PassInstrument
from ..instrument.check import CheckEach, CheckEachError
from ..instrument.printing import PrintChanged, module_text
from ..instrument.verify import VerifyEach
from ..ir import Call, IRModule, Op
from ..ir.functor import post_order_visit
from ..testing import random_inputs
from ..testing.models import MODELS, transformer_encoder
from ..testing.semantics import compare_outputs, flatten_outputs
from ..transform import PassContext, Sequential, parse_pipeline
from ..transform.context import VERIFY_EACH
from .errors import CommandFailed, UsageError
from .info import format_table
from .reproducer import (
    Positions,
    check_reproducer_dir,
    failing_point,
    read_reproducer,
    write_reproducer,
)

if TYPE_CHECKING:
    from ..settings import Settings
    from ..transform import Pass, PassInfo

__all__ = ["add_arguments", "run", "count_nodes", "compare_outputs", "example_models"]

DEFAULT_EXAMPLE = "resnet"
_WIDTH = 100  # where the summary's pass list wraps


def example_models() -> dict[str, Callable[[], IRModule]]:
    """The networks ``--example`` can build, by name (the builders' default sizes)."""
    # the module's table says "transformer"; the builder's own name works too
    return {**MODELS, "transformer_encoder": transformer_encoder}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``optimize``'s own arguments (the pass options are added by :mod:`.main`)."""
    examples = sorted(example_models())
    parser.add_argument(
        "model",
        nargs="?",
        metavar="MODEL",
        help="model file to optimize, format by suffix (.txt/.ir: the text format); "
        f"without it, the example network --example (default {DEFAULT_EXAMPLE})",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="write the result to OUT (format by suffix) instead of printing its text",
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
        "-q", "--quiet", action="store_true", help="no summary on stderr"
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
    """Notes every pass that starts running, so the summary can list them.

    The Sequentials that only group passes (whose ``PassInfo`` objects are
    given) are left out: the summary lists the passes that did the work.
    """

    name = "irpass-cli-recorder"

    def __init__(self, containers: set[int]) -> None:
        self._containers = containers
        self.ran: list[str] = []

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Record the pass by name, unless it is one of the pipeline's Sequentials."""
        if id(info) not in self._containers:
            self.ran.append(info.name)


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


@dataclass
class _Counts:
    nodes: int = 0
    ops: Counter[str] = field(default_factory=Counter)


def count_nodes(mod: IRModule) -> tuple[int, Counter[str]]:
    """The number of distinct expression nodes of each function (ops themselves not
    counted), summed over the module, and the number of calls of each op."""
    counts = _Counts()

    def visit(node: Any) -> None:
        if type(node) is Op:
            return
        counts.nodes += 1
        if type(node) is Call and type(node.op) is Op:
            counts.ops[node.op.name] += 1

    for _, func in mod.items():
        post_order_visit(func, visit)
    return counts.nodes, counts.ops


def _load_model(args: argparse.Namespace) -> tuple[IRModule, str]:
    if args.model is not None:
        if args.example is not None:
            raise UsageError(
                "give a MODEL file or --example, not both", hint="see 'irpass optimize --help'"
            )
        return load(args.model), args.model
    name = args.example or DEFAULT_EXAMPLE
    return example_models()[name](), f"example {name}"


def _check_output_path(path: str, model: str | None) -> None:
    """Fail before any pass runs when the result could not be written, or would be
    written over a file of the input ``model``."""
    format_for(path, for_="save")
    parent = Path(path).parent
    if not parent.is_dir():
        raise FileNotFoundError(2, "no such directory to write the result into", str(parent))
    if model is not None:
        _refuse_overwriting_the_input(model, path)


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


def run(args: argparse.Namespace, settings: Settings) -> int:
    """The ``optimize`` command; returns the exit code (failures raise, see :mod:`.main`)."""
    if args.output is not None:
        _check_output_path(args.output, args.model)
    if args.reproducer not in (None, "off"):
        check_reproducer_dir(args.reproducer)
    base = settings.pass_context()
    # loaders and exporters read their options (e.g. a plugin's [config.onnx]) from the
    # current context; they get its config, not its instruments, which see only the passes
    io_ctx = PassContext(opt_level=base.opt_level, config=dict(base.config.explicit))
    if args.reproduce is not None:
        mod, label, pipeline, base = _reproduce(args, settings, base)
    else:
        with io_ctx:
            mod, label = _load_model(args)
        pipeline = settings.build_pipeline()

    expected = inputs = None
    if args.check:
        inputs = random_inputs(mod, args.seed)
        try:
            expected = _evaluate(mod, inputs)
        except IRPassError as exc:
            raise ValueError(f"--check: cannot run the input model ({label}): {exc}") from exc

    recorder = _Recorder(_container_infos(pipeline))
    positions = Positions()
    config = dict(base.config)
    if args.verify_each is not None or VERIFY_EACH not in base.config.explicit:
        config[VERIFY_EACH] = args.verify_each is not False
    # the recorder joins a copy of the configured context, ahead of the user's instruments
    ctx = PassContext(
        opt_level=base.opt_level,
        required_pass=base.required_pass,
        disabled_pass=base.disabled_pass,
        instruments=[recorder, positions, *base.instruments,
                     *_debuggers(args, config[VERIFY_EACH])],
        config=config,
    )
    # stdout is for the result: whatever passes print while running goes to stderr
    with ctx, contextlib.redirect_stdout(sys.stderr):
        try:
            start = perf_counter()
            try:
                result = pipeline(mod)
            except PassError as exc:
                if isinstance(exc, CheckEachError):
                    _show_around(exc)
                where = _save_reproducer(args, pipeline, exc, positions, mod, ctx)
                raise CommandFailed(f"{exc}{where}") from exc
            except IRPassError as exc:
                raise CommandFailed(str(exc)) from exc
            elapsed = perf_counter() - start
        finally:
            # render() forgets everything when the context is left
            _print_instrument_reports(base.instruments)

    check_line = None
    if args.check:
        assert inputs is not None
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
        check_line = (
            f"ok, {n} output(s) match (seed {args.seed}, rtol={args.rtol:g}, atol={args.atol:g})"
        )

    if args.output is not None:
        with io_ctx:
            save(result, args.output)
    else:
        text = result.astext()
        sys.stdout.write(text if text.endswith("\n") else text + "\n")

    if not args.quiet:
        shown = "default_pipeline" if settings.pipeline in (None, "default") else (
            f"pipeline {settings.pipeline!r}")
        summary = _Summary(label, shown, ctx.opt_level, recorder.ran, elapsed)
        sys.stderr.write(summary.render(mod, result, check_line, args.output))
    return 0


def _reproduce(args: argparse.Namespace, settings: Settings,
               base: PassContext) -> tuple[IRModule, str, Pass, PassContext]:
    """The module, label, pipeline and context of ``--reproduce DIR``."""
    if args.model is not None or args.example is not None or settings.pipeline not in (
            None, "default"):
        raise UsageError("--reproduce DIR reruns the saved module and pipeline: give no "
                         "MODEL, --example or -p with it")
    rep = read_reproducer(args.reproduce)
    pipeline = parse_pipeline(rep.pipeline, opt_level=rep.opt_level)
    for key, value in rep.options.items():  # the debugging options of the failing run
        if getattr(args, key, None) in (None, False, 0):
            setattr(args, key, value)
    ctx = PassContext(opt_level=rep.opt_level, required_pass=rep.required_pass,
                      disabled_pass=rep.disabled_pass, instruments=base.instruments,
                      config=rep.config)
    return rep.module, f"reproducer {str(rep.path)!r}", pipeline, ctx


def _save_reproducer(args: argparse.Namespace, pipeline: Pass, exc: PassError,
                     positions: Positions, start: IRModule, ctx: PassContext) -> str:
    """Write the reproducer of a failed pass; the line to add to the error."""
    if args.reproducer == "off" or args.reproduce is not None:
        return ""
    module, passes = failing_point(pipeline, exc, positions, start)
    options = {"check_each": args.check_each, "seed": args.seed, "rtol": args.rtol,
               "atol": args.atol}
    try:
        path = write_reproducer(args.reproducer, module, passes, ctx, options, exc)
    except OSError as err:
        return f"\n  (no reproducer written: {err})"
    return f"\n  reproducer: {path} (rerun: irpass optimize --reproduce {path})"


def _show_around(exc: CheckEachError) -> None:
    """The module before and after the pass check-each blames (constants elided)."""
    sys.stderr.write(f"*** IR before {exc.pass_name} ***\n{module_text(exc.before)}\n"
                     f"*** IR after {exc.pass_name} ***\n{module_text(exc.after)}\n")


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


@dataclass
class _Summary:
    """What ``optimize`` prints on stderr after a run."""

    label: str
    pipeline: str
    opt_level: int
    ran: list[str]
    seconds: float

    def render(
        self, before: IRModule, after: IRModule, check: str | None, output: str | None
    ) -> str:
        """The summary text: header, passes, time, node counts, check, op table."""
        nodes_before, ops_before = count_nodes(before)
        nodes_after, ops_after = count_nodes(after)
        lines = [f"irpass optimize: {self.label}, {self.pipeline} at opt_level {self.opt_level}"]
        fields = [
            ("passes", _pass_list(self.ran)),
            ("time", f"{self.seconds * 1e3:.1f} ms"),
            ("nodes", f"{nodes_before} -> {nodes_after}"),
        ]
        if check is not None:
            fields.append(("check", check))
        if output is not None:
            fields.append(("wrote", output))
        for key, value in fields:
            lines.append(_wrap(f"  {key + ':':<9}", value))
        table = _op_table(ops_before, ops_after)
        if table:
            lines.append("")
            lines.extend("  " + row for row in table)
        return "\n".join(lines) + "\n"


def _pass_list(ran: list[str]) -> str:
    """``"5 run: InferType, FoldConstant x2, ..."``: names in first-run order with counts."""
    if not ran:
        return "none ran"
    counts = Counter(ran)
    names = [n if counts[n] == 1 else f"{n} x{counts[n]}" for n in dict.fromkeys(ran)]
    return f"{len(ran)} run: " + ", ".join(names)


def _wrap(prefix: str, text: str) -> str:
    """``prefix + text``, wrapped after commas at :data:`_WIDTH` columns, aligned."""
    lines: list[str] = []
    line = prefix
    for word in text.split(" "):
        if len(line) + len(word) + 1 > _WIDTH and line.strip():
            lines.append(line.rstrip())
            line = " " * len(prefix)
        line += word + " "
    lines.append(line.rstrip())
    return "\n".join(lines)


def _op_table(before: Counter[str], after: Counter[str]) -> list[str]:
    names = sorted(set(before) | set(after))
    if not names:
        return []
    rows = []
    for name in names:
        b, a = before.get(name, 0), after.get(name, 0)
        change = "" if a == b else f"{a - b:+d}"
        rows.append((name, str(b), str(a), change))
    return format_table(("op", "before", "after", "change"), rows, align="<>>>").splitlines()
