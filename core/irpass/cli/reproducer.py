"""Crash reproducers: what ``irpass optimize`` saves when a pass fails, and how it reruns it.

MLIR's pass manager writes the module and the pipeline that crashed into a file that
``mlir-opt`` runs again; irpass does the same with a directory. When a pass raises, or
``verify_each`` or ``--check-each`` finds it broke the module, ``irpass optimize`` writes
(to ``--reproducer DIR``, by default a new temporary directory it names):

- ``module.txt`` (and ``module.npz`` for the large constants): the module just before
  the failing pass, as :func:`irpass.save` writes it;
- ``reproducer.json``: the pipeline from that pass on as a pipeline string, the
  effective settings (opt level, required and disabled passes, config options, the
  debugging options given), the plugins that were loaded with their distributions
  and versions, irpass's version, and the failure (pass, where, message);
- ``README.txt``: the command that reruns it.

``irpass optimize --reproduce DIR`` loads that, checks that this is the same irpass
version and that every plugin the run had is loaded (else a one-line error saying
which), and runs the pipeline on the module again: it fails the same way.

"Just before the failing pass" is at the level of the innermost ``Sequential`` the
failure happened in: for a pass that failed in a requirement (``InferType`` run for
``SimplifyExpr``), the module before that requirement ran, and the pipeline from the
pass that required it. Passes are written by their registered names (with their
default options): a pass that is not registered cannot be, and the directory says so.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import irpass

from ..formats import load, save
from ..instrument.base import PassInstrument
from ..plugins import get_plugin_manager
from ..transform import PassContext, Sequential
from ..transform.registry import get_pass_entry
from .errors import UsageError

if TYPE_CHECKING:
    from ..errors import PassError
    from ..ir.module import IRModule
    from ..transform import Pass, PassInfo

__all__ = [
    "Positions",
    "Reproducer",
    "check_reproducer_dir",
    "failing_point",
    "pipeline_text",
    "read_reproducer",
    "write_reproducer",
]

FORMAT = 1  # the layout of reproducer.json
_MODULE = "module.txt"
_JSON = "reproducer.json"
_POSITION = re.compile(r"(.*)\[(\d+)\]\Z")


class Positions(PassInstrument):
    """Remembers the module at the start of every position of the pipeline (the indices
    of the running Sequentials and requirement lists), so a failure's path finds the
    module its pass was given."""

    name = "irpass-cli-positions"

    def __init__(self) -> None:
        self.modules: dict[tuple[int, ...], IRModule] = {}

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Note the module where this position starts."""
        key = tuple(frame[1] for frame in PassContext.current()._frames)
        self.modules.setdefault(key, mod)


@dataclass
class Reproducer:
    """A reproducer directory read back: the module, the pipeline and the settings."""

    path: Path
    module: IRModule
    pipeline: str
    opt_level: int
    required_pass: list[str]
    disabled_pass: list[str]
    config: dict[str, Any]
    options: dict[str, Any]
    failure: dict[str, Any]


def failing_point(
    pipeline: Sequential, err: PassError, positions: Positions, start: IRModule
) -> tuple[IRModule, list[Pass]]:
    """The module before the pass that failed and the passes from it on (flattened out
    of the Sequentials it sat in); the whole pipeline and ``start`` when the path does
    not lead into ``pipeline``."""
    path = list(err.path)
    seqs: list[tuple[Sequential, int]] = []
    current: Pass = pipeline
    for part in path:
        m = _POSITION.match(part)
        if m is None or not isinstance(current, Sequential) or m.group(1) != current.info.name:
            break
        index = int(m.group(2))
        if index >= len(current.passes):
            break
        seqs.append((current, index))
        current = current.passes[index]
    if not seqs:
        return start, [pipeline]
    key = tuple(i for _, i in seqs)
    module = positions.modules.get(key, start)
    # the innermost level from the failing pass on, then what follows at each level out
    rest: list[Pass] = []
    for depth, (seq, index) in enumerate(reversed(seqs)):
        rest.extend(seq.passes[index:] if depth == 0 else seq.passes[index + 1 :])
    return module, rest


def pipeline_text(passes: list[Pass]) -> str:
    """The passes as a pipeline string (``seq(...)`` for a Sequential that is not a
    registered pass); ``ValueError`` naming a pass that is not registered."""
    parts = []
    for p in passes:
        name = p.info.name
        if _registered(name):
            parts.append(name)
        elif isinstance(p, Sequential):
            parts.append(f"seq({pipeline_text(list(p.passes))})")
        else:
            raise ValueError(
                f"pass {name!r} is not registered, so a pipeline string cannot name it"
            )
    return ",".join(parts)


def _registered(name: str) -> bool:
    try:
        get_pass_entry(name)
    except KeyError:
        return False
    return True


def _plugins() -> list[dict[str, Any]]:
    out = []
    for record in get_plugin_manager().records():
        if record.status != "loaded":
            continue
        out.append(
            {
                "name": record.name,
                "source": record.source,
                "module": record.module,
                "dist": record.dist,
                "version": record.version,
            }
        )
    return out


def write_reproducer(
    directory: str | Path | None,
    module: IRModule,
    passes: list[Pass],
    ctx: PassContext,
    options: dict[str, Any],
    err: PassError,
) -> Path:
    """Write a reproducer of ``err`` (see the module docs); return its directory."""
    if directory is None:
        path = Path(tempfile.mkdtemp(prefix="irpass-reproducer-"))
    else:
        path = Path(directory)
        check_reproducer_dir(path)
        path.mkdir(parents=True, exist_ok=True)
    try:
        text, problem = pipeline_text(passes), None
    except ValueError as exc:
        text, problem = None, str(exc)
    save(module, path / _MODULE)
    data = {
        "format": FORMAT,
        "irpass": irpass.__version__,
        "python": sys.version.split()[0],
        "pipeline": text,
        "pipeline_problem": problem,
        "opt_level": ctx.opt_level,
        "required_pass": list(ctx.required_pass),
        "disabled_pass": list(ctx.disabled_pass),
        "config": {k: v for k, v in ctx.config.explicit.items() if _jsonable(v)},
        "options": options,
        "plugins": _plugins(),
        "failure": {
            "pass": err.pass_name,
            "path": list(err.path),
            "kind": type(err).__name__,
            "message": str(err),
        },
    }
    (path / _JSON).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (path / "README.txt").write_text(
        f"irpass {irpass.__version__}: pass {err.pass_name!r} failed ({type(err).__name__}).\n"
        f"Rerun: irpass optimize --reproduce {path}\n",
        encoding="utf-8",
    )
    return path


def check_reproducer_dir(directory: str | Path) -> None:
    """A :class:`UsageError` unless ``directory`` is new or an empty directory (checked
    before the run, so a failure's message is not lost to a bad ``--reproducer``)."""
    path = Path(directory)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(
            f"--reproducer: {str(path)!r} exists and is not an empty "
            "directory; give a new or empty one"
        )


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def read_reproducer(directory: str | Path) -> Reproducer:
    """Read a reproducer directory; a :class:`UsageError` (one line) when it is not one,
    was written by another irpass version, or needs a plugin that is not loaded."""
    path = Path(directory)
    where = f"--reproduce {str(path)!r}"
    try:
        data = json.loads((path / _JSON).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{where}: no {_JSON} there; not a reproducer directory") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{where}: cannot read {_JSON}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(f"{where}: {_JSON} is not a reproducer of this format")
    if data.get("irpass") != irpass.__version__:
        raise UsageError(
            f"{where}: written by irpass {data.get('irpass')}, this is irpass "
            f"{irpass.__version__}; rerun it with that version"
        )
    loaded = {r.name: r for r in get_plugin_manager().records() if r.status == "loaded"}
    for plugin in data.get("plugins", []):
        if plugin["name"] not in loaded:
            origin = (
                f"{plugin['dist']} {plugin['version'] or ''}".strip()
                if plugin.get("dist")
                else f"module {plugin.get('module')}"
            )
            hint = f"-p {plugin['module']}" if plugin.get("source") == "-p" else "install it"
            raise UsageError(
                f"{where}: the failing run had plugin {plugin['name']!r} "
                f"({origin}), which is not loaded now; {hint}"
            )
    if data.get("pipeline") is None:
        raise UsageError(
            f"{where}: the pipeline could not be written as a string "
            f"({data.get('pipeline_problem')}); rerun it from Python"
        )
    try:
        module = load(path / _MODULE)
    except (OSError, irpass.IRPassError) as exc:
        raise UsageError(f"{where}: cannot load {_MODULE}: {exc}") from None
    return Reproducer(
        path,
        module,
        data["pipeline"],
        data["opt_level"],
        data["required_pass"],
        data["disabled_pass"],
        data["config"],
        data.get("options", {}),
        data["failure"],
    )
