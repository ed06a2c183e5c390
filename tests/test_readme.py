"""The README's Python examples run, in order, as one program."""

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run():
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 4, "the README tour lost its examples"
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md[python block {i}]", "exec"), namespace)


def test_pass_sections_have_runnable_examples():
    """'Writing a pass' and 'Pass instruments' each carry Python examples (run above)."""
    text = README.read_text()
    for title in ("## Writing a pass", "## Pass instruments"):
        assert title in text, f"README lost its {title!r} section"
        section = text.split(title, 1)[1].split("\n## ", 1)[0]
        assert "```python\n" in section, f"{title!r} has no runnable example"


def _section(text, title):
    assert title in text, f"README lost its {title!r} section"
    return text.split(title, 1)[1].split("\n## ", 1)[0]


def _run_cli(argv):
    """``irpass ARGV`` in-process, with the plugins loaded afresh for its settings."""
    from irpass.cli import main
    from irpass.testing.plugins import RegistrySnapshot

    saved = RegistrySnapshot.take()
    saved.core_only().restore()
    try:
        return main(argv)
    finally:
        saved.restore()


def test_readme_cli_commands_run(tmp_path, monkeypatch, capsys):
    """Every `irpass ...` line of 'The irpass command' runs, in order, and exits 0."""
    import shlex

    section = _section(README.read_text(), "## The irpass command")
    lines = [line for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S)
             for line in block.splitlines() if line.startswith("irpass ")]
    assert len(lines) >= 6, "the CLI section lost its examples"
    monkeypatch.chdir(tmp_path)
    for line in lines:
        argv = shlex.split(line, comments=True)[1:]
        code = _run_cli(argv)
        out, err = capsys.readouterr()
        assert code == 0, f"{line!r} exited {code}: {err}"
        if argv == ["passes"]:  # the listing; `passes NAME` shows one pass
            assert "InferType" in out
        if argv[:2] == ["-p", "no:std"]:
            assert "InferType" not in out and "PrintIR" in out
    assert (tmp_path / "resnet-opt.txt").exists() and (tmp_path / "again.txt").exists()
    assert sorted(p.name for p in (tmp_path / "dumps").glob("*.txt"))  # dump-ir wrote files


def test_readme_config_example_is_valid(tmp_path, monkeypatch, capsys):
    """The full config file of 'Config files' loads, validates and drives `irpass optimize`."""
    from irpass.settings import load_settings

    section = _section(README.read_text(), "## Config files")
    (toml,) = re.findall(r"```toml\n(.*?)```", section, flags=re.S)
    (tmp_path / "irpass.toml").write_text(toml)
    monkeypatch.chdir(tmp_path)
    settings = load_settings(cwd=tmp_path, environ={})
    assert settings.opt_level == 3 and settings.disabled_pass == ("PrintIR",)
    assert [name for name, *_ in settings.instruments] == ["timing", "dump-ir"]
    assert _run_cli(["config"]) == 0
    out = capsys.readouterr().out
    assert "irpass.toml" in out and "opt_level" in out
    assert _run_cli(["optimize", "--example", "mlp", "-o", "out.txt"]) == 0
    err = capsys.readouterr().err
    assert "InferType" in err                                 # the 'checked' pipeline ran
    assert list((tmp_path / "build" / "ir").glob("*_InferType.txt"))   # dump-ir from the file


STD_README = README.parent / "plugins" / "irpass_std" / "README.md"
STD_DOCS = STD_README.parent / "docs"


def test_standard_passes_reference_documents_every_std_pass():
    from irpass.transform import get_pass_entry, list_passes

    index = STD_README.read_text().split("## Reference", 1)[1]
    pages = {p.stem: p.read_text() for p in STD_DOCS.glob("*.md")}
    for name in (n for n in list_passes() if get_pass_entry(n).owner == "std"):
        # a pass has its own page, or is named on the page of the Sequential it belongs to
        assert name in pages or re.search(rf"\b{name}\b", index), f"{name} is not documented"
    for stem, text in pages.items():
        assert f"[{stem}](docs/{stem}.md)" in index, f"docs/{stem}.md is not in the index"
        assert "opt level" in text, f"docs/{stem}.md does not give the opt level"
        assert "```python\n" in text, f"docs/{stem}.md has no example"


def test_standard_passes_reference_examples_run():
    for page in sorted(STD_DOCS.glob("*.md")):
        for i, block in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)):
            exec(compile(block, f"irpass_std/docs/{page.name}[block {i}]", "exec"), {})
