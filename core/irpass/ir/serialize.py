"""Saving and loading modules: the text format, with big constants in a ``.npz``.

``irpass.save(mod, "model.txt")`` writes the module's text (see
:mod:`irpass.ir.printer`) to ``model.txt``. Constants too big to print inline
appear in the text as ``meta[Constant][k]``; instead of an embedded
``#[metadata]`` section (base64, what ``str(mod)`` gives) their arrays go to
``model.npz`` next to the text -- the text's path with its suffix replaced by
``.npz`` -- under the keys ``Constant_0``, ``Constant_1``, ... (readable with
``numpy.load``). The text's header names that file::

    #[version = "irpass 0.1"]
    #[metadata_file = "model.npz"]
    def @main(...) {
      ...
    }

A module without big constants is the text file alone (no ``.npz``).
``irpass.load("model.txt")`` reads the text and, when its header names a
metadata file, the arrays from that file in the text's directory (a clear
``FileNotFoundError`` when it is missing). The text is UTF-8.
``load(save(mod))`` is structurally equal to ``mod``.

**Never over another model's constants.** ``model.txt`` and ``model.ir``
would share ``model.npz``. :func:`save` refuses (``FileExistsError`` naming
both files, nothing written) to write constants over a ``.npz`` that another
text file beside it names in its header: saving to ``model.ir`` next to a
``model.txt`` that keeps its constants in ``model.npz`` would make
``model.txt`` load someone else's arrays, or none. Saving again to the path
whose constants they are (``model.txt`` over ``model.txt``) replaces both
files, as any save replaces the file it writes. :func:`side_files` lists the
files besides the text that belong to a model, which ``irpass optimize`` uses
to refuse an output that would overwrite its input's.

**A failed save leaves the old files.** Each file is written to a temporary
file in the same directory and renamed over its destination only when it is
complete (:func:`atomic_path`), the constants before the text that names
them. An error while printing or writing (a full disk, say) leaves any
existing ``model.txt``/``model.npz`` as they were.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .module import IRModule
from .parser import parse, read_headers
from .printer import _print_module

__all__ = ["save", "load", "metadata_path", "side_files", "atomic_path", "TEXT_SUFFIXES"]

#: The suffixes of the text format (a path without a suffix is text too).
TEXT_SUFFIXES = (".txt", ".ir")
# how much of a text file is read for its headers (they are the first lines)
_HEADER_BYTES = 1 << 16


def metadata_path(path: str | os.PathLike[str]) -> Path:
    """Where :func:`save` puts the constants of a module saved to ``path``."""
    p = Path(path)
    if p.suffix.lower() == ".npz":
        raise ValueError(f"save: {str(p)!r} would be overwritten by its own constants; "
                         "use another suffix for the text file, e.g. '.txt'")
    return p.with_suffix(".npz") if p.suffix else p.with_name(p.name + ".npz")


def _named_metadata(path: Path) -> Path | None:
    """The metadata file the header of the existing text ``path`` names, if any."""
    try:
        with open(path, "rb") as f:
            head = f.read(_HEADER_BYTES).decode("utf-8", errors="ignore")
    except OSError:
        return None
    name = read_headers(head).get("metadata_file")
    return path.parent / name if isinstance(name, str) and name else None


def side_files(path: str | os.PathLike[str], for_: str = "load") -> list[Path]:
    """The files besides the text ``path`` that belong to the model there: for ``"load"``
    the metadata file the header of the existing ``path`` names (what :func:`load` reads;
    none if it names none or ``path`` does not exist), for ``"save"`` the ``.npz`` that
    :func:`save` writes for a module with big constants."""
    if for_ == "save":
        return [metadata_path(path)]
    if for_ != "load":
        raise ValueError(f"side_files: for_ must be 'load' or 'save', got {for_!r}")
    named = _named_metadata(Path(path))
    return [] if named is None else [named]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _owner_of(npz: Path, path: Path) -> Path | None:
    """Another text file next to ``npz`` (not ``path``) whose header names ``npz``."""
    stem = npz.stem
    try:
        entries = list(os.scandir(npz.parent))
    except OSError:
        return None
    for entry in entries:
        name = Path(entry.name)
        if not (entry.name == stem or (name.stem == stem
                                       and name.suffix.lower() in TEXT_SUFFIXES)):
            continue
        other = npz.parent / entry.name
        if _same_file(other, path) or not entry.is_file():
            continue
        named = _named_metadata(other)
        if named is not None and _same_file(named, npz):
            return other
    return None


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path in ``path``'s directory to write the file to; when the block ends
    without an error it is renamed over ``path`` (one atomic step), else removed. So a
    failed write never leaves a half-written file where ``path`` was. The temporary file
    is created empty with the permissions of the file it replaces (a new file's, with the
    umask, if there is none); a symlink at ``path`` keeps pointing where it did, to the new
    file."""
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    while True:
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            break
        except FileExistsError:  # pragma: no cover - 32 random bits collided
            continue
    try:
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def save(mod: IRModule, path: str | os.PathLike[str]) -> None:
    """Write ``mod`` to ``path`` as text, big constants to ``<path without suffix>.npz``.

    ``FileExistsError`` (nothing written) when that ``.npz`` holds the constants of
    another text file beside it (``model.ir`` next to ``model.txt``: see the module
    docstring). Each file is replaced in one step: a failed save leaves the old ones.
    """
    if not isinstance(mod, IRModule):
        raise TypeError(f"save: expected an IRModule, got {type(mod).__name__}")
    p = Path(path)
    npz = metadata_path(p)
    text, meta = _print_module(mod, show_meta_data=False, metadata_file=npz.name)
    if meta:
        owner = _owner_of(npz, p)
        if owner is not None:
            raise FileExistsError(
                f"save: {str(npz)!r} holds the constants of {str(owner)!r}; saving "
                f"{str(p)!r} would overwrite them (save under another name)"
            )
        arrays = {f"Constant_{k}": np.ascontiguousarray(a) for k, a in enumerate(meta)}
        with atomic_path(npz) as tmp, open(tmp, "wb") as f:
            np.savez(f, **arrays)
    with atomic_path(p) as tmp:
        tmp.write_text(text, encoding="utf-8")


def load(path: str | os.PathLike[str]) -> IRModule:
    """Read a module written by :func:`save` (or any module text, e.g. ``str(mod)``)."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    name = read_headers(text).get("metadata_file")
    if name is None:
        return parse(text, str(p))
    npz = p.parent / name
    if not npz.exists():
        raise FileNotFoundError(
            f"{str(p)!r} keeps its constants in {name!r}, which is missing (looked for "
            f"{str(npz)!r}); save() writes both files, keep them together"
        )
    with np.load(npz, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    consts = []
    for k in range(len(arrays)):
        key = f"Constant_{k}"
        if key not in arrays:
            raise ValueError(f"{str(npz)!r} has no array {key!r} (it has {sorted(arrays)})")
        consts.append(arrays[key])
    return parse(text, str(p), metadata=consts)
