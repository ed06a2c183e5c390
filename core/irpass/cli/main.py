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
import importlib
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import IRPassError, ParseError, PassDependencyError, PassError
from .common import PROG, validate, warnings_as_lines
from .errors import CommandFailed, UsageError

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["build_parser", "main", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_INTERRUPTED"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class _Command:
    """One command: its help line, the module of ``irpass.cli`` that implements it (imported
    only when the command runs, so start-up pays for one command), the names of the
    module's argument-adding function and handler, and the shared options it takes."""

    help: str
    module: str
    add_arguments: str | None
    handler: str
    validate_first: bool
    # "run": the pipeline and pass-context options; "pipeline": those that choose and
    # filter the pipeline (irpass pipeline); "": none
    pass_options: str = ""


_COMMANDS: dict[str, _Command] = {
    "optimize": _Command(
        "run the pipeline over a model and write the result",
        "optimize",
        "add_arguments",
        "run",
        True,
        "run",
    ),
    "bisect": _Command(
        "find the first pass, then the first rewrite in it, after which the model is bad",
        "debug",
        "add_bisect_arguments",
        "run_bisect",
        True,
        "run",
    ),
    "reduce": _Command(
        "shrink a model while a pass still breaks it (or a test still fails)",
        "debug",
        "add_reduce_arguments",
        "run_reduce",
        True,
        "run",
    ),
    "show": _Command(
        "draw the dataflow graph of a model (SVG, PNG, DOT or HTML)",
        "show",
        "add_arguments",
        "run",
        False,
    ),
    "passes": _Command(
        "list the registered passes, or show one pass's documentation",
        "info",
        "add_passes_arguments",
        "run_passes",
        True,
    ),
    "rewrites": _Command(
        "list the rewrite rules of the plugins' rule sets", "info", None, "run_rewrites", True
    ),
    "plugins": _Command(
        "list the plugins, what each contributed, and failures",
        "info",
        "add_plugins_arguments",
        "run_plugins",
        False,
    ),
    "pipeline": _Command(
        "show the pipeline that would run, with the plugin behind each pass",
        "info",
        "add_pipeline_arguments",
        "run_pipeline",
        True,
        "pipeline",
    ),
    "config": _Command(
        "show the effective configuration and where each value came from",
        "info",
        "add_config_arguments",
        "run_config",
        False,
        "run",
    ),
}

COMMANDS = tuple(_COMMANDS)

_EPILOG = """\
-p means a plugin everywhere (as in pytest): -p MODULE loads one (a module
path, an entry-point name, or MODULE.py in the working directory), -p no:NAME
blocks one; the global options also work after the command. The pipeline of
optimize, bisect, reduce, pipeline and config is -P/--pipeline.

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
-p/--plugin, --config, --strict-plugins and --traceback work here as before the
command; -p loads (or with no:NAME blocks) a plugin, -P/--pipeline is the pipeline.
"""

# the global options that take a value, to find the command without parsing
_VALUE_OPTIONS = ("-p", "--plugin", "--config")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are exceptions, so :func:`main` returns instead of exiting."""

    def error(self, message: str) -> NoReturn:
        """Raise :class:`UsageError` with a pointer to this (sub)command's help."""
        raise UsageError(message, hint=f"see '{self.prog} --help'")


def version_text() -> str:
    """What ``irpass --version`` prints. Imports no plugin, no op set and no numpy: only
    the package's ``__init__`` and the standard library (``--version`` must start fast)."""
    import platform

    import irpass

    where = Path(irpass.__file__).resolve().parent
    return f"irpass {irpass.__version__} from {where} (Python {platform.python_version()})"


class _VersionAction(argparse.Action):
    """``--version``: prints :func:`version_text`, computed only when asked for."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str = argparse.SUPPRESS,
        default: str = argparse.SUPPRESS,
        help: str | None = None,
    ) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> NoReturn:
        print(version_text())
        parser.exit()


def command_module(name: str) -> Any:
    """The module of ``irpass.cli`` implementing command ``name``, imported now: the one
    place a command's code is imported (start-up imports only the command that runs)."""
    return importlib.import_module(f"{__package__}.{_COMMANDS[name].module}")


def _add_global_options(parser: argparse.ArgumentParser, *, after_command: bool) -> None:
    """The options every command accepts. Before the command they fill ``plugins``,
    ``config``...; after it, separate ``*_after`` names (defaults suppressed) so
    that both places combine instead of the sub-command's defaults hiding the
    values given before it."""
    suffix = "_after" if after_command else ""
    absent: dict[str, Any] = {"default": argparse.SUPPRESS} if after_command else {}
    parser.add_argument(
        "-p",
        "--plugin",
        dest="plugins" + suffix,
        action="append",
        metavar="MODULE|no:NAME",
        help="import MODULE (a module path, an entry-point name, or MODULE.py in the "
        "working directory) and register it as a plugin, or block plugin NAME (never "
        "imported); repeatable. The pipeline is -P",
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


def _add_pipeline_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("-P", "--pipeline", metavar="PIPELINE", help=help_text)


def _add_pass_filters(parser: argparse.ArgumentParser) -> None:
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


def _add_pass_options(parser: argparse.ArgumentParser) -> None:
    """The pass-context options of ``optimize``, ``bisect``, ``reduce`` and ``config``."""
    _add_pipeline_option(
        parser,
        "'default', a name from [pipelines], or a pipeline string such as "
        "'InferType,seq(FoldConstant),FuseOps{fuse_opt_level=2}'",
    )
    _add_opt_level(parser)
    _add_pass_filters(parser)
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


def command_in(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names (its first word that is not a global option or the
    value of one), or None: lets :func:`build_parser` set up that command alone."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--":
            return None
        elif arg in _VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            return arg if arg in _COMMANDS else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of the whole command line (global options, commands and their options).

    Only command ``only`` is set up whole (its module imported, its options added); the
    others are listed by name and help line, enough for ``irpass --help`` and for an
    unknown command's error. ``"*"`` sets up every command.
    """
    parser = _Parser(
        prog=PROG,
        description="Run compiler passes over tensor programs; passes, instruments and\n"
        "file formats come from plugins.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument(
        "--version",
        action=_VersionAction,
        help="show irpass's version and where it is installed, and exit",
    )
    _add_global_options(parser, after_command=False)

    common = _Parser(add_help=False, allow_abbrev=False)
    _add_global_options(common, after_command=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, spec in _COMMANDS.items():
        cmd = sub.add_parser(
            name,
            help=spec.help,
            description=spec.help[0].upper() + spec.help[1:] + ".",
            parents=[common],
            epilog=_COMMAND_EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            allow_abbrev=False,
        )
        cmd.set_defaults(validate_first=spec.validate_first)
        if only not in (name, "*"):
            continue
        module = command_module(name)
        if spec.add_arguments is not None:
            getattr(module, spec.add_arguments)(cmd)
        if spec.pass_options == "run":
            _add_pass_options(cmd)
        elif spec.pass_options == "pipeline":
            _add_opt_level(cmd)
            _add_pipeline_option(
                cmd, "show this pipeline (a name or pipeline string) instead of the default one"
            )
            _add_pass_filters(cmd)
        cmd.set_defaults(handler=getattr(module, spec.handler))
    return parser


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line; unknown arguments are a :class:`UsageError` pointing to
    the help of the command they were given to."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args, extra = build_parser(only=command_in(argv)).parse_known_args(argv)
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
    """Resolve the settings and load the plugins they allow (warnings become one-liners).

    A ``-p`` value that is a pipeline rather than a plugin (``-p FoldConstant,FuseOps``,
    or a pass name no module is named after) is a :class:`UsageError` saying that the
    pipeline is ``-P``; a ``-P`` value naming a plugin, the other way round.
    """
    from ..plugins import load
    from ..settings import load_settings

    overrides = cli_overrides(args)
    for spec in overrides["plugins"] or ():
        if _looks_like_pipeline(spec):
            raise _pipeline_as_plugin(spec)
    settings = load_settings(cli=overrides, environ=os.environ, cwd=Path.cwd())
    with warnings_as_lines():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            manager = load(settings.plugin_settings)
        failed = {r.name for r in manager.failures() if r.source == "-p"}
        for spec in overrides["plugins"] or ():
            if spec in failed and _names_pass_or_pipeline(spec, settings):
                raise _pipeline_as_plugin(spec)
        for w in caught:  # re-issued for warnings_as_lines to print
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    _check_pipeline_is_no_plugin(settings)
    return settings


def _looks_like_pipeline(spec: str) -> bool:
    """A ``-p`` value no module can be named: a pipeline string's punctuation, or 'default'."""
    return spec == "default" or any(c in spec for c in ",(){}=")


def _names_pass_or_pipeline(spec: str, settings: Settings) -> bool:
    from ..transform import list_passes

    return spec in settings.pipelines or spec in list_passes()


def _pipeline_as_plugin(spec: str) -> UsageError:
    return UsageError(f"-p loads a plugin; for a pipeline use -P/--pipeline (got -p {spec!r})")


def _check_pipeline_is_no_plugin(settings: Settings) -> None:
    """``-P no:NAME`` or ``-P mymod`` (a plugin where the pipeline goes): say so."""
    text = settings.pipeline
    if text is None or not settings.source("pipeline").startswith("cli"):
        return
    text = text.strip()
    if text.startswith("no:"):
        raise UsageError(f"-P/--pipeline is the pipeline; to block a plugin use -p {text}")
    if not text.isidentifier() or text == "default" or text in settings.pipelines:
        return
    from ..plugins import get_plugin_manager
    from ..transform import list_passes

    if text in list_passes():
        return
    plugins = {r.name for r in get_plugin_manager().records()}
    if text in plugins or (Path.cwd() / f"{text}.py").is_file():
        raise UsageError(f"-P/--pipeline is the pipeline; to load plugin {text!r} use -p {text}")


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
