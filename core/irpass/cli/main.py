"""``irpass``'s argument parsing, the common start-up of every command, and error reporting.

Every command goes through the same steps: parse the arguments; resolve the
settings (:func:`irpass.settings.load_settings`: command line > environment >
config file > defaults); load the plugins those settings allow, printing each
:class:`~irpass.plugins.PluginWarning` as one ``irpass: warning:`` line;
validate the settings against what the plugins registered; run the command.

Errors never show a traceback unless ``--traceback`` is given: they are
printed as ``irpass: error: <message>`` and mapped to an exit code (0 ok, 1 a
pass or ``--check`` failed, 2 bad usage or input, 130 interrupted).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import irpass

from ..errors import IRPassError, ParseError, PassDependencyError, PassError
from ..plugins import load
from ..settings import load_settings
from . import debug, info, optimize
from .common import PROG, validate, warnings_as_lines
from .errors import CommandFailed, UsageError

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["build_parser", "main", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_INTERRUPTED"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

COMMANDS = ("optimize", "bisect", "reduce", "passes", "plugins", "pipeline", "config")

_EPILOG = """\
global options may also follow the command in their long forms (--plugin,
--config, --strict-plugins, --traceback); after 'optimize', 'pipeline' and
'config', -p is the pipeline, not a plugin.

environment:
  IRPASS_CONFIG                    config file to use (like --config)
  IRPASS_PLUGINS=mod1,mod2         plugin modules to load (like -p mod)
  IRPASS_DISABLE_PLUGIN_AUTOLOAD=1 load no plugin from entry points

config files: --config PATH, else IRPASS_CONFIG, else ./irpass.toml, else the
[tool.irpass] table of the nearest pyproject.toml walking up. 'irpass config'
shows the effective settings and where each value came from.

exit codes: 0 ok, 1 a pass or --check failed, 2 bad usage or input,
130 interrupted. Errors are one or two lines; --traceback shows the traceback.
"""

_COMMAND_EPILOG = """\
--plugin, --config, --strict-plugins and --traceback work here as before the
command; -p here means --pipeline.
"""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are exceptions, so :func:`main` returns instead of exiting."""

    def error(self, message: str) -> NoReturn:
        """Raise :class:`UsageError` with a pointer to this (sub)command's help."""
        raise UsageError(message, hint=f"see '{self.prog} --help'")


def _version_text() -> str:
    where = Path(irpass.__file__).resolve().parent
    return f"irpass {irpass.__version__} from {where} (Python {platform.python_version()})"


def _add_global_options(parser: argparse.ArgumentParser, *, after_command: bool) -> None:
    """The options every command accepts. Before the command they fill ``plugins``,
    ``config``...; after it, separate ``*_after`` names (defaults suppressed) so
    that both places combine instead of the sub-command's defaults hiding the
    values given before it."""
    suffix = "_after" if after_command else ""
    absent: dict[str, Any] = {"default": argparse.SUPPRESS} if after_command else {}
    flags = ("--plugin",) if after_command else ("-p", "--plugin")
    parser.add_argument(
        *flags,
        dest="plugins" + suffix,
        action="append",
        metavar="MODULE|no:NAME",
        help="import MODULE and register it as a plugin, or block plugin NAME "
        "(never imported); repeatable",
        **absent,
    )
    parser.add_argument(
        "--config",
        dest="config" + suffix,
        metavar="PATH",
        help="config file to use (a TOML file: irpass.toml keys, or a pyproject.toml "
        "with [tool.irpass])",
        **absent,
    )
    parser.add_argument(
        "--strict-plugins",
        dest="strict" + suffix,
        action="store_true",
        help="a plugin that fails to load is an error instead of a warning",
        **absent,
    )
    parser.add_argument(
        "--traceback",
        dest="traceback" + suffix,
        action="store_true",
        help="show the traceback of an error",
        **absent,
    )


def _add_pass_options(parser: argparse.ArgumentParser) -> None:
    """The pass-context options of ``optimize`` and ``config``."""
    parser.add_argument(
        "-p",
        "--pipeline",
        metavar="PIPELINE",
        help="'default', a name from [pipelines], or a pipeline string such as "
        "'InferType,seq(FoldConstant),FuseOps{fuse_opt_level=2}'",
    )
    _add_opt_level(parser)
    parser.add_argument(
        "--disable-pass",
        dest="disabled_pass",
        action="append",
        metavar="NAME[,NAME...]",
        help="never run these passes; repeatable",
    )
    parser.add_argument(
        "--required-pass",
        dest="required_pass",
        action="append",
        metavar="NAME[,NAME...]",
        help="run these passes whatever their opt_level; repeatable",
    )
    parser.add_argument(
        "--instrument",
        dest="instruments",
        action="append",
        metavar="NAME[:ARG]",
        help="switch on an instrument, e.g. timing, print-before, print-after, "
        "dump-ir:DIR ('irpass plugins -v' lists them); repeatable",
    )


def _add_opt_level(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-O",
        "--opt-level",
        dest="opt_level",
        type=int,
        metavar="LEVEL",
        help="optimization level (default 2, or opt_level from the config file)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of the whole command line (global options, commands and their options)."""
    parser = _Parser(
        prog=PROG,
        description="Run compiler passes over tensor programs; passes, instruments and\n"
        "file formats come from plugins.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=_version_text())
    _add_global_options(parser, after_command=False)

    common = _Parser(add_help=False, allow_abbrev=False)
    _add_global_options(common, after_command=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=help_text,
            description=help_text[0].upper() + help_text[1:] + ".",
            parents=[common],
            epilog=_COMMAND_EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            allow_abbrev=False,
        )

    opt = command("optimize", "run the pipeline over a model and write the result")
    optimize.add_arguments(opt)
    _add_pass_options(opt)
    opt.set_defaults(handler=optimize.run, validate_first=True)

    bis = command("bisect", "find the first pass, then the first rewrite in it, after which "
                  "the model is bad")
    debug.add_bisect_arguments(bis)
    _add_pass_options(bis)
    bis.set_defaults(handler=debug.run_bisect, validate_first=True)

    red = command("reduce", "shrink a model while a pass still breaks it (or a test still "
                  "fails)")
    debug.add_reduce_arguments(red)
    _add_pass_options(red)
    red.set_defaults(handler=debug.run_reduce, validate_first=True)

    passes = command("passes", "list the registered passes")
    passes.set_defaults(handler=info.run_passes, validate_first=True)

    rewrites = command("rewrites", "list the rewrite rules of the plugins' rule sets")
    rewrites.set_defaults(handler=info.run_rewrites, validate_first=True)

    plugins = command("plugins", "list the plugins, what each contributed, and failures")
    plugins.add_argument(
        "-v", "--verbose", action="store_true", help="list every contribution of each plugin"
    )
    plugins.set_defaults(handler=info.run_plugins, validate_first=False)

    pipeline = command(
        "pipeline", "show the default pipeline with the plugin behind each pass"
    )
    _add_opt_level(pipeline)
    pipeline.add_argument(
        "-p",
        "--pipeline",
        metavar="PIPELINE",
        help="show this pipeline (a name or pipeline string) as a tree instead",
    )
    pipeline.set_defaults(handler=info.run_pipeline, validate_first=True)

    config = command("config", "show the effective configuration and where each value came from")
    _add_pass_options(config)
    config.set_defaults(handler=info.run_config, validate_first=False)
    return parser


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line; unknown arguments are a :class:`UsageError` pointing to
    the help of the command they were given to."""
    args, extra = build_parser().parse_known_args(argv)
    if extra:
        where = f"{PROG} {args.command}" if args.command else PROG
        raise UsageError(f"unrecognized arguments: {' '.join(extra)}", hint=f"see '{where} --help'")
    return args


def split_names(values: Sequence[str] | None) -> list[str] | None:
    """Repeated and comma-separated option values as one list (``None`` when not given)."""
    if values is None:
        return None
    out: list[str] = []
    for value in values:
        out.extend(n.strip() for n in value.split(",") if n.strip())
    return out


def cli_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The command-line values for :func:`irpass.settings.load_settings` (None: not given)."""
    plugins = [*(args.plugins or ()), *getattr(args, "plugins_after", ())]
    return {
        "config": getattr(args, "config_after", None) or args.config,
        "plugins": plugins or None,
        "strict": True if args.strict or getattr(args, "strict_after", False) else None,
        "opt_level": getattr(args, "opt_level", None),
        "pipeline": getattr(args, "pipeline", None),
        "required_pass": split_names(getattr(args, "required_pass", None)),
        "disabled_pass": split_names(getattr(args, "disabled_pass", None)),
        "instruments": getattr(args, "instruments", None),
    }


def prepare(args: argparse.Namespace) -> Settings:
    """Resolve the settings and load the plugins they allow (warnings become one-liners)."""
    settings = load_settings(cli=cli_overrides(args), environ=os.environ, cwd=Path.cwd())
    with warnings_as_lines():
        load(settings.plugin_settings)
    return settings


def _run(args: argparse.Namespace) -> int:
    if args.command is None:
        raise UsageError(
            f"no command given (choose from {', '.join(COMMANDS)})", hint=f"see '{PROG} --help'"
        )
    settings = prepare(args)
    if args.validate_first:
        notes = validate(settings)
        if not getattr(args, "quiet", False):
            for note in notes:
                print(f"{PROG}: note: {note}", file=sys.stderr)
    return int(args.handler(args, settings))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``irpass`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code.

    Never raises (except ``SystemExit`` from nowhere): errors are printed on
    stderr as ``irpass: error: ...`` and turned into exit codes.
    """
    args: argparse.Namespace | None = None
    try:
        args = parse_args(argv)
        return _run(args)
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader of our output went away (`irpass passes | head`): stop quietly
        _silence_stdout()
        return EXIT_FAILED
    except Exception as exc:
        show_traceback = args is not None and (
            args.traceback or getattr(args, "traceback_after", False)
        )
        if show_traceback:
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
        code, message = describe_error(exc, traceback_shown=show_traceback)
        print(f"{PROG}: error: {message}", file=sys.stderr)
        if isinstance(exc, UsageError) and exc.hint:
            print(f"({exc.hint})", file=sys.stderr)
        return code


def describe_error(exc: BaseException, *, traceback_shown: bool = False) -> tuple[int, str]:
    """The exit code and the message for an error that ended a command.

    Errors irpass reports on purpose (bad input, failed passes) are their own
    message; anything else is a bug somewhere, and says so.
    """
    if isinstance(exc, CommandFailed):
        return EXIT_FAILED, str(exc)
    if isinstance(exc, UsageError):
        return EXIT_USAGE, str(exc)
    if isinstance(exc, ParseError):
        # its text starts "file:line:col: error: ..."; one "error:" is enough
        return EXIT_USAGE, str(exc).replace(": error: ", ": ", 1)
    if isinstance(exc, (PassError, PassDependencyError)):
        return EXIT_FAILED, str(exc)
    if isinstance(exc, IRPassError):  # ConfigError, PipelineSyntaxError, PluginError, ...
        return EXIT_USAGE, str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return EXIT_USAGE, f"{where}{exc.strerror}"
    if isinstance(exc, KeyError):
        # str(KeyError) quotes its message; registries put whole sentences in it
        return EXIT_USAGE, str(exc.args[0]) if exc.args else "KeyError"
    if isinstance(exc, (ValueError, TypeError, OSError)):
        return EXIT_USAGE, str(exc)
    hint = "" if traceback_shown else " (run with --traceback for details)"
    return EXIT_FAILED, f"unexpected {type(exc).__name__}: {exc}{hint}"


def _silence_stdout() -> None:
    # Python flushes stdout at exit and would raise BrokenPipeError again there
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
