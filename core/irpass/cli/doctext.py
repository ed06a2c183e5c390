"""Documentation as plain text for a terminal: docstrings (reStructuredText) and pass pages
(Markdown), without docutils.

Only what irpass's and the plugins' docs use is understood: inline markup
(roles such as ``:class:`~irpass.transform.Pass``` become ``Pass``, ````code````
becomes ``code``, ``*emphasis*`` and ``**strong**`` lose their stars, links keep
their text), literal blocks (``::``), and directives: admonitions (``.. note::``)
become a ``Note:`` paragraph, code blocks stay indented, anything else
(``.. autofunction::``, comments) is dropped with its body. Text that is not
markup passes through unchanged.
"""

from __future__ import annotations

import inspect
import re

__all__ = ["rst_to_text", "markdown_to_text", "markdown_code_blocks", "first_paragraph"]

# :role:`text`, :domain:role:`text`; "~a.b.C" shows "C", "title <target>" shows "title"
_ROLE = re.compile(r":(?:[A-Za-z][\w.+-]*:)+`([^`]+)`")
_LITERAL = re.compile(r"``((?:[^`]|`(?!`))+?)``")  # may wrap a line
_STRONG = re.compile(r"\*\*(\S(?:.*?\S)?)\*\*")
_EMPHASIS = re.compile(r"(?<![\w*\\])\*(\S(?:[^*]*?\S)?)\*(?![\w*])")
_LINK = re.compile(r"`([^`<]+?)\s*<([^`>]+)>`__?")
_REF = re.compile(r"`([^`]+)`__?(?!\w)")
_INTERPRETED = re.compile(r"(?<![`:\w])`([^`]+)`(?![`_\w])")
_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+([\w:-]+)::\s*(.*)$")
_COMMENT = re.compile(r"^(\s*)\.\.(\s|$)")
_FIELD = re.compile(r"^(\s*):(param|parameter|arg|type|returns?|raises?|rtype)\b\s*([^:]*):\s*")

_ADMONITIONS = {
    "note": "Note",
    "warning": "Warning",
    "tip": "Tip",
    "important": "Important",
    "caution": "Caution",
    "attention": "Attention",
    "danger": "Danger",
    "hint": "Hint",
    "seealso": "See also",
    "versionadded": "New in version",
    "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version",
}
_CODE = {"code", "code-block", "sourcecode", "doctest", "testcode", "literalinclude"}


def _role_text(match: re.Match[str]) -> str:
    text = match.group(1)
    title = re.match(r"(.+?)\s*<[^>]+>$", text)
    if title:
        return title.group(1)
    text = text.lstrip("!")
    return text.rsplit(".", 1)[-1] if text.startswith("~") else text


def _inline(line: str) -> str:
    """One line's inline markup as plain text."""
    line = _ROLE.sub(_role_text, line)
    line = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})", line)
    line = _LITERAL.sub(r"\1", line)
    line = _STRONG.sub(r"\1", line)
    line = _EMPHASIS.sub(r"\1", line)
    line = _REF.sub(r"\1", line)
    return _INTERPRETED.sub(r"\1", line)


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip())


def rst_to_text(text: str | None) -> str:
    """``text`` (a docstring, indented or not) as plain text (see the module docs)."""
    lines = inspect.cleandoc(text or "").splitlines()
    out: list[str] = []  # text lines; literal lines are marked by a leading "\0"
    i, n = 0, len(lines)
    literal_from = None  # the indentation of the paragraph a literal block belongs to
    while i < n:
        line = lines[i]
        stripped = line.strip()
        indent = _indent_of(line)
        if literal_from is not None:
            if stripped and indent <= literal_from:
                literal_from = None  # the block ended: this line is text again
            else:
                out.append("\0" + line.rstrip())
                i += 1
                continue
        directive = _DIRECTIVE.match(line)
        if directive or _COMMENT.match(line):
            body_end = _block_end(lines, i + 1, indent)
            if directive:
                out.extend(
                    "\0" + line for line in _directive(directive, lines[i + 1 : body_end], indent)
                )
            i = body_end
            continue
        field = _FIELD.match(line)
        if field:
            name = field.group(3).strip()
            label = f"{field.group(2)} {name}".strip() if field.group(2) != "param" else name
            line = field.group(1) + label + ": " + line[field.end() :]
        if stripped == "::":
            literal_from = indent
            i += 1
            continue
        if stripped.endswith("::"):
            literal_from = indent
            line = line.rstrip()[:-1]  # "Example::" reads "Example:"
            if line.endswith(" :"):
                line = line[:-2]
        out.append(line.rstrip())
        i += 1
    return _squeeze(_render(out))


def _render(lines: list[str]) -> str:
    """Inline markup resolved over each run of text lines (a literal may wrap a line);
    the lines marked literal ("\\0") kept as they are."""
    chunks: list[str] = []
    text: list[str] = []
    for line in lines:
        if line.startswith("\0"):
            if text:
                chunks.append(_inline("\n".join(text)))
                text = []
            chunks.append(line[1:])
        else:
            text.append(line)
    if text:
        chunks.append(_inline("\n".join(text)))
    return "\n".join(chunks)


def _block_end(lines: list[str], start: int, indent: int) -> int:
    """Where the indented body starting at ``start`` of a construct at ``indent`` ends."""
    j = start
    while j < len(lines) and (not lines[j].strip() or _indent_of(lines[j]) > indent):
        j += 1
    return j


def _directive(match: re.Match[str], body: list[str], indent: int) -> list[str]:
    name, argument = match.group(2).lower(), match.group(3).strip()
    pad = " " * indent
    if name in _ADMONITIONS:
        text = rst_to_text("\n".join(body))
        head = f"{pad}{_ADMONITIONS[name]}"
        if argument:
            head += f" {_inline(argument)}"
        first, *rest = text.splitlines() or [""]
        lines = [f"{head}: {first}".rstrip()]
        lines += [f"{pad}    {line}".rstrip() if line else "" for line in rest]
        return ["", *lines, ""]
    if name in _CODE:
        code = [line for line in body if not re.match(r"\s*:[\w-]+:", line)]
        block = inspect.cleandoc("\n".join(code)).splitlines()
        return ["", *(f"{pad}    {line}".rstrip() for line in block), ""]
    return []  # autodoc and other directives say nothing to a reader of plain text


def markdown_to_text(text: str) -> str:
    """A Markdown page's prose as plain text: headings and emphasis marks go, inline
    code loses its backticks (also when it wraps a line), links keep their text; fenced
    code blocks are left out (see :func:`markdown_code_blocks`)."""
    prose: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            prose.append(re.sub(r"^#+\s*", "", line).rstrip())
    out = "\n".join(prose)
    out = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"\1", out)
    out = re.sub(r"`([^`]+)`", r"\1", out)
    out = _STRONG.sub(r"\1", out)
    out = _EMPHASIS.sub(r"\1", out)
    out = re.sub(r"(?<!\w)_(\S(?:[^_\n]*?\S)?)_(?!\w)", r"\1", out)
    return _squeeze(out)


def markdown_code_blocks(text: str, language: str = "python") -> list[str]:
    """The fenced code blocks of a Markdown page in ``language``, in order."""
    pattern = rf"^```{re.escape(language)}[^\n]*\n(.*?)^```"
    return [block.rstrip("\n") for block in re.findall(pattern, text, flags=re.S | re.M)]


def first_paragraph(text: str) -> str:
    """The first paragraph of plain text, joined into one line."""
    para = re.split(r"\n\s*\n", text.strip(), maxsplit=1)[0]
    return " ".join(para.split())


def _squeeze(text: str) -> str:
    """No run of blank lines longer than one, none at either end."""
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")
