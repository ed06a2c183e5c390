"""Model file formats: loaders and exporters chosen by file suffix.

:func:`load` and :func:`save` (also ``irpass.load`` / ``irpass.save``) look up
the format registered for the path's suffix. The core registers the text
format (``.txt``, ``.ir``, and any path without a suffix; see
:mod:`irpass.ir.serialize`); plugins add others
through the ``irpass_register_formats`` hook, e.g. ``.onnx``::

    @hookimpl
    def irpass_register_formats():
        return [FileFormat("onnx", (".onnx",), load=load_onnx, save=save_onnx)]

A model can be more than one file (the text format keeps big constants in a
``.npz`` beside the text; an ONNX model may keep tensors in external data
files): a format's ``side_files(path, for_)`` names the others, and
:func:`model_files` lists them all, so that ``irpass optimize`` can refuse an
output that would overwrite any file of its input. A saver should write each
file through :func:`atomic_path`, so that a failed save never leaves a
half-written file over an existing one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _lazy
from ._lazy_plugins import ensure_plugins
from .ir.module import IRModule

# The text format's code (parser, printer, numpy for the .npz) is imported when a
# model is first read or written, not by the plugin manager, which imports this module.
__getattr__, __dir__ = _lazy.attach(__name__, globals(), {"irpass.ir.serialize": ["atomic_path"]})
if TYPE_CHECKING:
    from .ir.serialize import atomic_path

__all__ = [
    "FileFormat",
    "register_format",
    "unregister_format",
    "format_for",
    "list_formats",
    "load",
    "save",
    "model_files",
    "atomic_path",
]

Loader = Callable[..., IRModule]
Saver = Callable[..., None]
SideFiles = Callable[[Path, str], Iterable["str | os.PathLike[str]"]]
NodeCount = Callable[[Path], int]


@dataclass(frozen=True)
class FileFormat:
    """A model file format: its name, suffixes (``".onnx"``) and how to read and write it.

    ``load(path, **options) -> IRModule`` and ``save(mod, path, **options)``;
    either may be ``None`` for a format irpass can only read or only write.
    ``side_files(path, for_)``, if given, names the files other than ``path`` that belong
    to the model there: for ``for_="load"`` those loading the existing ``path`` reads, for
    ``"save"`` those saving to ``path`` may write (relative to the working directory, or
    absolute). ``node_count(path) -> int``, if given, counts the nodes of the model in the
    file at ``path`` as the format's own tools count them (ONNX: the main graph's nodes);
    ``irpass optimize`` shows it for the file it wrote.
    """

    name: str
    suffixes: tuple[str, ...]
    load: Loader | None = None
    save: Saver | None = None
    description: str = ""
    side_files: SideFiles | None = None
    node_count: NodeCount | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"FileFormat: name must be a non-empty str, got {self.name!r}")
        suffixes = (self.suffixes,) if isinstance(self.suffixes, str) else tuple(self.suffixes)
        for s in suffixes:
            if not isinstance(s, str) or not s.startswith(".") or len(s) < 2:
                raise ValueError(f"FileFormat {self.name!r}: suffixes look like '.onnx', got {s!r}")
        if not suffixes:
            raise ValueError(f"FileFormat {self.name!r}: no suffixes")
        object.__setattr__(self, "suffixes", tuple(s.lower() for s in suffixes))
        if self.load is None and self.save is None:
            raise ValueError(f"FileFormat {self.name!r}: neither load nor save is given")
        for what in ("load", "save", "side_files", "node_count"):
            fn = getattr(self, what)
            if fn is not None and not callable(fn):
                raise TypeError(f"FileFormat {self.name!r}: {what} must be callable, got {fn!r}")


@dataclass(frozen=True)
class _Entry:
    format: FileFormat
    owner: str


_BY_SUFFIX: dict[str, _Entry] = {}


def register_format(fmt: FileFormat, *, owner: str = "irpass") -> FileFormat:
    """Make ``fmt`` the format of its suffixes; a suffix another owner holds is a ``ValueError``."""
    if not isinstance(fmt, FileFormat):
        raise TypeError(f"register_format: expected a FileFormat, got {type(fmt).__name__}")
    for s in fmt.suffixes:
        old = _BY_SUFFIX.get(s)
        if old is not None and old.format is not fmt:
            raise ValueError(
                f"file suffix {s!r} is already the {old.format.name!r} format of {old.owner!r}; "
                f"{owner!r} cannot register its {fmt.name!r} format for it"
            )
    for s in fmt.suffixes:
        _BY_SUFFIX[s] = _Entry(fmt, owner)
    return fmt


def unregister_format(fmt: FileFormat) -> None:
    """Remove ``fmt`` from every suffix it holds."""
    for s in fmt.suffixes:
        if s in _BY_SUFFIX and _BY_SUFFIX[s].format is fmt:
            del _BY_SUFFIX[s]


def list_formats() -> list[tuple[FileFormat, str]]:
    """Every registered format with its owner, by name."""
    ensure_plugins()
    seen: dict[int, tuple[FileFormat, str]] = {}
    for e in _BY_SUFFIX.values():
        seen.setdefault(id(e.format), (e.format, e.owner))
    return sorted(seen.values(), key=lambda fo: fo[0].name)


def format_for(path: str | os.PathLike[str], *, for_: str = "load") -> FileFormat:
    """The format of ``path`` by its suffix, able to ``for_`` (``"load"`` or ``"save"``) it."""
    suffix = Path(path).suffix.lower()
    if not suffix:  # irpass's own format needs no suffix
        return TEXT_FORMAT
    entry = _BY_SUFFIX.get(suffix)
    if entry is None:
        ensure_plugins()
        entry = _BY_SUFFIX.get(suffix)
    if entry is None:
        known = ", ".join(sorted(_BY_SUFFIX))
        raise ValueError(
            f"{str(path)!r}: no file format for suffix {suffix!r} (known: {known}); "
            "a plugin adds formats through the irpass_register_formats hook"
        )
    if getattr(entry.format, for_) is None:
        raise ValueError(
            f"{str(path)!r}: the {entry.format.name!r} format (from {entry.owner!r}) cannot {for_}"
        )
    return entry.format


def _load_text(path: str | os.PathLike[str]) -> IRModule:
    """:func:`irpass.ir.serialize.load`."""
    from .ir import serialize

    return serialize.load(path)


def _save_text(mod: IRModule, path: str | os.PathLike[str]) -> None:
    """:func:`irpass.ir.serialize.save`."""
    from .ir import serialize

    serialize.save(mod, path)


def _text_side_files(path: str | os.PathLike[str], for_: str = "load") -> list[Path]:
    """:func:`irpass.ir.serialize.side_files`."""
    from .ir import serialize

    return serialize.side_files(path, for_)


TEXT_FORMAT = register_format(
    # the suffixes of irpass.ir.serialize.TEXT_SUFFIXES (test_startup checks they agree)
    FileFormat(
        "text",
        (".txt", ".ir"),
        load=_load_text,
        save=_save_text,
        description="the irpass text format (big constants in a .npz beside it)",
        side_files=_text_side_files,
    )
)


def model_files(path: str | os.PathLike[str], *, for_: str = "load") -> list[Path]:
    """``path`` and the side files of the model there (its format's ``side_files``): every
    file that loading it reads (``for_="load"``) or saving to it may write (``"save"``)."""
    fmt = format_for(path, for_=for_)
    files = [Path(path)]
    if fmt.side_files is not None:
        for f in fmt.side_files(Path(path), for_):
            p = Path(f)
            if p not in files:
                files.append(p)
    return files


def load(path: str | os.PathLike[str], **options: Any) -> IRModule:
    """Read a model file into an :class:`IRModule`; the format comes from the suffix."""
    fmt = format_for(path, for_="load")
    mod = fmt.load(path, **options)  # type: ignore[misc]
    if not isinstance(mod, IRModule):
        raise TypeError(
            f"the {fmt.name!r} loader returned {type(mod).__name__} for {str(path)!r}, "
            "not an IRModule"
        )
    return mod


def save(mod: IRModule, path: str | os.PathLike[str], **options: Any) -> None:
    """Write ``mod`` to a model file; the format comes from the suffix.

    An existing file is replaced only once the new one is complete (the formats write
    through :func:`atomic_path`). The text format never writes its constants over the
    ``.npz`` of another model beside it (``FileExistsError``, see
    :mod:`irpass.ir.serialize`); saving over the very file you loaded is allowed here,
    ``irpass optimize`` refuses it.
    """
    format_for(path, for_="save").save(mod, path, **options)  # type: ignore[misc]
