"""reST docstrings and Markdown pass pages as plain text (``irpass passes NAME``)."""

from __future__ import annotations

import pytest
from irpass.cli.doctext import markdown_code_blocks, markdown_to_text, rst_to_text


@pytest.mark.parametrize(
    "source, text",
    [
        (":class:`~irpass.transform.Pass`", "Pass"),
        (":func:`irpass.transform.get_pass`", "irpass.transform.get_pass"),
        (":py:meth:`Pass.run <irpass.transform.Pass.run>`", "Pass.run"),
        ("``x + 0`` is ``x``", "x + 0 is x"),
        (
            "*emphasis* and **strong**, but f(*args, **kwargs)",
            "emphasis and strong, but f(*args, **kwargs)",
        ),
        ("`the guide <https://example.org>`_", "the guide (https://example.org)"),
        ("a ``literal that\nwraps`` a line", "a literal that\nwraps a line"),
    ],
)
def test_inline_markup(source, text):
    assert rst_to_text(source) == text


def test_blocks_directives_and_fields():
    doc = """Summary line.

    Example::

        x = ``not markup`` * 2

    .. note::
       Read *this*
       twice.

    .. autofunction:: irpass.transform.get_pass
       :noindex:

    .. code-block:: python

       y = 1

    :param factor: how much
    :returns: the pass
    """
    assert rst_to_text(doc) == (
        "Summary line.\n\nExample:\n\n    x = ``not markup`` * 2\n\n"
        "Note: Read this\n    twice.\n\n    y = 1\n\nfactor: how much\nreturns: the pass"
    )


def test_markdown_page():
    page = (
        "### Pass\n\n*opt level 1*\n\nUses `a\nb` and [a link](http://x).\n\n"
        "```python\nprint(1)\n```\n\n```sh\nirpass\n```\n"
    )
    assert markdown_to_text(page) == "Pass\n\nopt level 1\n\nUses a\nb and a link."
    assert markdown_code_blocks(page) == ["print(1)"]
    assert markdown_code_blocks(page, "sh") == ["irpass"]
