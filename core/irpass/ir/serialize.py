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
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .module import IRModule
from .parser import parse, read_headers
from .printer import _print_module

__all__ = ["save", "load", "metadata_path"]


def metadata_path(path: str | os.PathLike[str]) -> Path:
    """Where :func:`save` puts the constants of a module saved to ``path``."""
    p = Path(path)
    if p.suffix == ".npz":
        raise ValueError(f"save: {str(p)!r} would be overwritten by its own constants; "
                         "use another suffix for the text file, e.g. '.txt'")
    return p.with_suffix(".npz") if p.suffix else p.with_name(p.name + ".npz")


def save(mod: IRModule, path: str | os.PathLike[str]) -> None:
    """Write ``mod`` to ``path`` as text, big constants to ``<path without suffix>.npz``."""
    if not isinstance(mod, IRModule):
        raise TypeError(f"save: expected an IRModule, got {type(mod).__name__}")
    npz = metadata_path(path)
    text, meta = _print_module(mod, show_meta_data=False, metadata_file=npz.name)
    Path(path).write_text(text, encoding="utf-8")
    if meta:
        arrays = {f"Constant_{k}": np.ascontiguousarray(a) for k, a in enumerate(meta)}
        with open(npz, "wb") as f:
            np.savez(f, **arrays)


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
