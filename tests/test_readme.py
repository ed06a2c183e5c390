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
