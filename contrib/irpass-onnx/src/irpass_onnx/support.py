"""Which ONNX operators the importer takes: the table in the pack's README, made from the code.

Every operator of the default ONNX domain that the installed ``onnx`` defines gets one row: the
opsets its schema changed at, the opset the importer takes it from (its oldest converter; a
model of a newer opset uses the newest converter at or below it), or why it is left out.
:data:`LEFT_OUT` says which operators irpass does not import on purpose and why; an operator
in neither the registry nor that table is simply not done yet, and the table says so.

``python -m irpass_onnx.support`` prints the table; ``--write README.md`` replaces the part of
the file between the markers :data:`BEGIN` and :data:`END` with it (the README test checks
that every row there still tells the truth).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import onnx
from onnx import defs

from .frontend import registry

__all__ = ["LEFT_OUT", "BEGIN", "END", "Row", "rows", "markdown", "main"]

#: Operators irpass does not import on purpose, with the reason.
LEFT_OUT: dict[str, str] = {
    "Bernoulli": "random",
    "Multinomial": "random",
    "RandomNormal": "random",
    "RandomNormalLike": "random",
    "RandomUniform": "random",
    "RandomUniformLike": "random",
    "StringConcat": "strings: irpass tensors are numeric",
    "StringNormalizer": "strings: irpass tensors are numeric",
    "StringSplit": "strings: irpass tensors are numeric",
    "RegexFullMatch": "strings: irpass tensors are numeric",
    "TfIdfVectorizer": "reads strings or n-gram pools; a text-pipeline op, not a tensor one",
    "ImageDecoder": "decodes JPEG/PNG bytes: needs an image codec, not tensor math",
}

#: The markers around the generated table in a README.
BEGIN = "<!-- support-table: begin (python -m irpass_onnx.support --write README.md) -->"
END = "<!-- support-table: end -->"


@dataclass(frozen=True)
class Row:
    """One operator: its schema's versions and what the importer does with it."""

    op_type: str
    #: The opsets at which the operator's schema changed, oldest first.
    versions: tuple[int, ...]
    #: The oldest opset the importer converts it at (``None``: not imported).
    since: int | None
    #: Why it is not imported, for the operators of :data:`LEFT_OUT`.
    left_out: str | None

    @property
    def status(self) -> str:
        """The README's status cell."""
        if self.since is not None:
            return f"from opset {self.since}"
        if self.left_out is not None:
            return f"left out: {self.left_out}"
        return "not yet"


def _schema_versions() -> dict[str, list[int]]:
    found: dict[str, set[int]] = {}
    for schema in defs.get_all_schemas_with_history():
        if schema.domain in ("", "ai.onnx"):
            found.setdefault(schema.name, set()).add(schema.since_version)
    return {name: sorted(v) for name, v in found.items()}


def rows() -> list[Row]:
    """One :class:`Row` per operator of the default domain, by name."""
    out = []
    for name, versions in sorted(_schema_versions().items()):
        since = registry.first_opset(name)
        if since is not None:
            since = max(since, versions[0])  # a converter may predate the operator
        out.append(Row(name, tuple(versions), since, LEFT_OUT.get(name)))
    return out


def markdown() -> str:
    """The table, with a summary line, as Markdown."""
    table = rows()
    taken = sum(r.since is not None for r in table)
    left = sum(r.since is None and r.left_out is not None for r in table)
    lines = [
        f"{taken} of the {len(table)} operators of the default domain that onnx "
        f"{onnx.__version__} defines (up to opset {defs.onnx_opset_version()}) import; "
        f"{left} are left out on purpose; {len(table) - taken - left} are not done yet.",
        "",
        "| operator | schema versions | irpass imports it |",
        "|---|---|---|",
    ]
    lines += [f"| {r.op_type} | {', '.join(map(str, r.versions))} | {r.status} |" for r in table]
    return "\n".join(lines)


def replace_table(text: str, table: str) -> str:
    """``text`` with the part between :data:`BEGIN` and :data:`END` replaced by ``table``."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the file has no {BEGIN!r} ... {END!r} markers")
    # the blank line ends the Markdown table before the closing marker
    return text[: start + len(BEGIN)] + "\n" + table + "\n\n" + text[end:]


def main(argv: list[str] | None = None) -> int:
    """The command line: print the table, or write it into a README between the markers."""
    parser = argparse.ArgumentParser(prog="python -m irpass_onnx.support", description=__doc__)
    parser.add_argument("--write", metavar="FILE", type=Path,
                        help="replace the table between the markers in FILE")
    args = parser.parse_args(argv)
    table = markdown()
    if args.write is None:
        print(table)
        return 0
    try:
        text = args.write.read_text(encoding="utf-8")
        args.write.write_text(replace_table(text, table), encoding="utf-8")
    except (OSError, ValueError) as err:
        print(f"irpass_onnx.support: {args.write}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
