"""DumpIR: write the module after every pass execution into a directory.

Files are named ``NNN_<PassName>.txt``: ``NNN`` counts completed pass
executions from ``000`` (three digits, more past 999), so a Sequential's file
comes after its children's; the pass name keeps only ``[A-Za-z0-9_.-]`` (other
characters become ``_``). Each file holds the module's text, constants of more than
``print.elide_constants`` elements (16 by default) without their data, as the
printing instruments show them (``DumpIR(dir, elide_constants=-1)`` or the option
at -1 keeps every value, and then each file reads back with :func:`irpass.parse`).

The directory holds a manifest, ``.irpass-dump``, listing the files DumpIR
wrote there; it is updated as each file is created, so a pipeline that
crashes still leaves a directory DumpIR will reuse. DumpIR never overwrites
or deletes a file it did not create:

- a missing directory is created;
- a directory with anything but the manifest and the files it lists is
  refused with :class:`FileExistsError` (naming the directory and some of the
  foreign entries);
- a directory DumpIR wrote before is reused: its listed files are removed and
  numbering restarts at ``000`` (also when the same instrument enters a new
  context).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from .base import PassInstrument
from .printing import module_text

if TYPE_CHECKING:
    from ..ir.module import IRModule
    from ..transform.info import PassInfo

__all__ = ["DumpIR"]

# the name of the manifest file DumpIR keeps in its directory
MANIFEST = ".irpass-dump"
_MANIFEST_HEADER = "# irpass DumpIR manifest: the files below were written by DumpIR"
# Only names of this shape are accepted from a manifest: an edited manifest must
# not make DumpIR delete anything outside its own naming scheme.
_DUMP_NAME = re.compile(r"[0-9]{3,}_[A-Za-z0-9_.-]+\.txt")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_MAX_NAME = 100  # keeps file names well under common file-system limits
_SHOWN = 5  # foreign entries named in the error


class DumpIR(PassInstrument):
    """Writes ``NNN_<PassName>.txt`` into ``dump_dir`` after each pass execution.

    ``dump_dir`` is checked (and created) when the context is entered; see the
    module documentation for the rules that keep other files safe.
    """

    def __init__(
        self, dump_dir: str | os.PathLike[str], elide_constants: int | None = None
    ) -> None:
        self.dump_dir = Path(dump_dir)
        self.elide_constants = elide_constants
        self._count = 0

    def enter_pass_ctx(self) -> None:
        """Create or reclaim the directory; refuse one holding files DumpIR did not write."""
        directory = self.dump_dir
        if directory.exists() and not directory.is_dir():
            raise FileExistsError(f"DumpIR: {str(directory)!r} exists and is not a directory")
        directory.mkdir(parents=True, exist_ok=True)
        manifest = directory / MANIFEST
        owned = _read_manifest(manifest)
        foreign = sorted(
            entry.name
            for entry in directory.iterdir()
            if entry.name != MANIFEST
            and not (entry.name in owned and entry.is_file() and not entry.is_symlink())
        )
        if foreign:
            shown = ", ".join(repr(n) for n in foreign[:_SHOWN])
            more = f" and {len(foreign) - _SHOWN} more" if len(foreign) > _SHOWN else ""
            raise FileExistsError(
                f"DumpIR: directory {str(directory)!r} holds files DumpIR did not write "
                f"({shown}{more}); give an empty or new directory, or one DumpIR wrote before"
            )
        for name in owned:
            (directory / name).unlink(missing_ok=True)
        manifest.write_text(_MANIFEST_HEADER + "\n", encoding="utf-8")
        self._count = 0

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Write the module the pass produced to the next numbered file."""
        name = f"{self._count:03d}_{_UNSAFE.sub('_', info.name)[:_MAX_NAME]}.txt"
        path = self.dump_dir / name
        # "x" never replaces an existing file; the empty file is ours from here on,
        # so it is listed before its (slow) contents are written.
        try:
            out = path.open("x", encoding="utf-8")
        except FileExistsError:
            raise FileExistsError(
                f"DumpIR: {str(path)!r} appeared while dumping; it was not written by DumpIR "
                "and is left as is"
            ) from None
        with out:
            with (self.dump_dir / MANIFEST).open("a", encoding="utf-8") as manifest:
                manifest.write(name + "\n")
            out.write(module_text(mod, self.elide_constants))
        self._count += 1


def _read_manifest(manifest: Path) -> set[str]:
    """The file names a previous DumpIR listed; empty when there is no manifest."""
    if not manifest.exists():
        return set()
    if not manifest.is_file():
        raise FileExistsError(f"DumpIR: {str(manifest)!r} is not a DumpIR manifest file")
    lines = manifest.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != _MANIFEST_HEADER:
        raise FileExistsError(
            f"DumpIR: {str(manifest)!r} is not a DumpIR manifest (unexpected first line); "
            "refusing to reuse its directory"
        )
    return {line for line in lines[1:] if _DUMP_NAME.fullmatch(line)}
