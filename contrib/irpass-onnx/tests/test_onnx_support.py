"""The supported-operator table: what the README says against what the importer does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from irpass_onnx import support
from irpass_onnx.frontend import registry

README = Path(__file__).resolve().parents[1] / "README.md"
ROW = re.compile(r"^\| (\w+) \| [\d, ]+ \| (.+) \|$")


def _readme_rows() -> dict[str, str]:
    text = README.read_text(encoding="utf-8")
    start, end = text.index(support.BEGIN), text.index(support.END)
    return {m[1]: m[2] for line in text[start:end].splitlines() if (m := ROW.match(line))}


def test_every_readme_row_tells_what_the_importer_does() -> None:
    claimed = _readme_rows()
    # ops a newer onnx adds are not in the README yet; those the README has must be right
    actual = {r.op_type: r.status for r in support.rows()}
    wrong = {op: (said, actual[op]) for op, said in claimed.items()
             if op in actual and actual[op] != said}
    assert not wrong, ("README rows that are no longer true (regenerate with "
                       f"`python -m irpass_onnx.support --write README.md`): {wrong}")


def test_every_imported_op_is_in_the_readme() -> None:
    claimed = _readme_rows()
    missing = [op for op in registry.registered_op_types()
               if op in {r.op_type for r in support.rows()} and op not in claimed]
    assert not missing


def test_left_out_ops_are_not_imported_and_exist() -> None:
    defined = {r.op_type for r in support.rows()}
    for op in support.LEFT_OUT:
        assert registry.first_opset(op) is None, f"{op} is imported but listed as left out"
        assert op in defined, f"{op} is not an operator of the installed onnx"


def test_status_reads_the_registry() -> None:
    by_name = {r.op_type: r for r in support.rows()}
    assert by_name["Relu"].status == "from opset 1"
    assert by_name["Bernoulli"].status == "left out: random"


def test_write_replaces_only_the_marked_part(tmp_path: Path) -> None:
    doc = tmp_path / "README.md"
    doc.write_text(f"# title\n{support.BEGIN}\nold table\n{support.END}\ntail\n", encoding="utf-8")
    assert support.main(["--write", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert text.startswith(f"# title\n{support.BEGIN}\n")
    assert text.endswith(f"\n{support.END}\ntail\n")
    assert "old table" not in text and "| Relu |" in text


def test_write_without_markers_is_an_error_and_leaves_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    doc = tmp_path / "README.md"
    doc.write_text("no markers here\n", encoding="utf-8")
    assert support.main(["--write", str(doc)]) == 1
    assert doc.read_text(encoding="utf-8") == "no markers here\n"
    assert "markers" in capsys.readouterr().err
