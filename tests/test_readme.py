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
