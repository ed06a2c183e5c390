"""The tokenizer of the text format.

The whole text is cut into token strings by one regular expression (fast: the
loop runs in C), and a token's kind is read from its first character (and, for
the one-token types ``Tensor[...]`` and ``meta[Constant][k]``, its last). Token
positions are not stored: they are only needed for error messages, so
:meth:`Tokens.offset` finds them by scanning again.
"""

from __future__ import annotations

import re

from ..errors import ParseError

__all__ = ["Tokens", "EOF", "error_at", "describe_token"]

#: The token after the last one.
EOF = ""

_TOKENS = r"""
    (
      \[(?<==\[)-?\d+(?:,\ -?\d+)*\]            # an int list value: axes=[0, 2, 1]
    | [()\[\]{},;=:]
    | %\d+                                 # graph name  %3
    | Tensor\[\((?:\d+(?:,\ \d+)*,?)?\),\ [A-Za-z_]\w*\]   # a static tensor type, see below
    | meta\[(?:relay\.)?Constant\]\[\d+\]  # a constant of the metadata, likewise
    | %[A-Za-z_]\w*:\ Tensor\[\((?:\d+(?:,\ \d+)*,?)?\),\ [A-Za-z_]\w*\]   # %x: Tensor[(2,), f32]
    | [%@][A-Za-z_]\w*                     # variable %x, global function @f
    | [A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*      # identifier, op name  nn.conv2d
    | [%@]"(?:[^"\\\n]|\\.)*"              # quoted names %"my var"
    | "(?:[^"\\\n]|\\.)*"                  # string
    | ->
    | -?(?:\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|inf|nan)(?:[fiu]\d+)?(?!\w)   # number
    | \.\d+                                # tuple index  .0
    | \#\[
    | /\*                                  # an unterminated comment
    | -?\d[\w.]*                           # a malformed number
    | \S                                   # anything else is an error
    | \Z                                   # the end (EOF), after any comments
    )
"""
# A static tensor type spelled as the printer spells it, Tensor[(1, 3), float32],
# is one token: types are about half the tokens of a typical module (every
# param of every fused function has one), and the parser reads such a token
# with one dict lookup (Parser._type). Any other spelling (other spacing, a
# comment or a symbolic dim inside) is cut into the usual tokens. The same
# goes for meta[Constant][k] (seven tokens otherwise), for a list of ints right
# after an attribute's '=' and for a parameter (or let) with such a type,
# %p0: Tensor[(2, 8), float32]: the three cut the tokens of a BERT-like module
# by a sixth, and the regex's cost is per token (about 130 ns).
_FLAGS = re.VERBOSE | re.DOTALL | re.ASCII
# Whitespace and comments before each token are skipped; text without any
# '/' has no comments, and the simpler pattern is a third faster. The empty
# match at the end makes trailing comments part of it: without it, the regex
# would backtrack into the last comment to find a token there.
_TOKEN = re.compile(r"\s*(?:(?://[^\n]*|/\*.*?\*/)\s*)*" + _TOKENS, _FLAGS)
_TOKEN_NO_COMMENTS = re.compile(r"\s*" + _TOKENS, _FLAGS)


class Tokens:
    """The tokens of ``text[:end]``: a list of strings ending with at least two :data:`EOF`.

    The parser looks one token ahead of its cursor, and its cursor stops at
    the first :data:`EOF` (it never consumes it), so the second one makes that
    lookahead defined at the end of any text, truncated ones included.
    Positions in messages refer to the whole ``text``.
    """

    def __init__(self, text: str, filename: str | None = None, end: int | None = None) -> None:
        self.text = text
        self.filename = filename
        self.end = len(text) if end is None else end
        has_slash = text.find("/", 0, self.end) >= 0
        self.pattern = _TOKEN if has_slash else _TOKEN_NO_COMMENTS
        # findall ends with the empty match(es) at the end: the first EOF.
        self.toks: list[str] = self.pattern.findall(text, 0, self.end)
        self.toks.append(EOF)

    def offset(self, index: int) -> int:
        """Character offset of token ``index`` in the text."""
        end = 0
        for k, m in enumerate(self.pattern.finditer(self.text, 0, self.end)):
            if not m.group(1):
                break
            if k == index:
                return m.start(1)
            end = m.end(1)
        # The end-of-input token sits right after the last real token.
        return end

    def error(self, message: str, index: int, within: int = 0) -> ParseError:
        """A :class:`ParseError` pointing at token ``index`` (``within`` characters into it)."""
        return error_at(self.text, self.offset(index) + within, message, self.filename)


def error_at(text: str, offset: int, message: str, filename: str | None) -> ParseError:
    """A :class:`ParseError` at character ``offset`` of ``text`` (1-based line and column)."""
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    if line_end < 0:
        line_end = len(text)
    line = text.count("\n", 0, offset) + 1
    column = offset - line_start + 1
    return ParseError(message, line, column, text[line_start:line_end], filename)


def describe_token(tok: str) -> str:
    """How a token is named in messages: ``'%1'``, ``end of input``, ``an unterminated string``."""
    if tok == EOF:
        return "end of input"
    if tok == '"':
        return "an unterminated string"
    if tok == "/*":
        return "an unterminated comment ('/*' without '*/')"
    return repr(tok)
