"""The text-format parser: ``irpass.parse(text)`` reads what ``str(mod)`` writes.

The format is described in :mod:`irpass.ir.printer`. What the parser accepts
beyond what the printer writes:

* **Module or expression.** Text made of ``def @name(...) {...}`` definitions
  is a module. Any other text is read as one expression, written like the
  inside of a block (``%0 = add(%x, %x); multiply(%0, %y)``); :func:`parse`
  turns it into a module with :meth:`IRModule.from_expr` (its free variables
  become the params of ``@main``) and :func:`parse_expr` returns the
  expression itself. Only in an expression may ``%x`` be used without being
  bound (a free variable, one :class:`Var` per name); in a module that is an
  error.
* **Nesting.** Calls, tuples and ``if``/``fn``/``{ }`` blocks may nest to any
  depth (``add(multiply(%x, %y), %z)``); the parser keeps its own stack, so
  deep text never hits Python's recursion limit.
* **Shortcuts.** A scalar tensor type may be written as just its dtype
  (``float32`` for ``Tensor[(), float32]``); a number without suffix is a
  float32 (``1.5``) or int32 (``3``) constant; lists in attribute values may
  use ``(...)`` as well as ``[...]``; trailing commas are allowed;
  ``meta[relay.Constant][k]`` is read like ``meta[Constant][k]``.
* **Scoping.** ``%3 = ...;`` names are visible after their line in their
  block and in the blocks nested in it; defining a visible ``%3`` again is
  an error. A ``let`` may shadow a variable of the same name. In
  ``let %f = fn (...) {...};`` the function may call ``%f`` (recursion).
  Global functions may be used before they are defined.
* **Constants.** Big constants come from the ``#[metadata]`` section at the end
  of the text, or from the ``metadata=`` argument (a list of arrays indexed by
  ``k``, or ``{"Constant": [...]}``) when the text was printed with
  ``show_meta_data=False`` or saved by :func:`irpass.save`.

Every error is an :class:`irpass.ParseError` with the 1-based line and column
of the offending token, the source line and a caret: unexpected tokens say
what was expected (end of input included: a truncated text is an error at its
end), unknown ops list close matches, undefined or duplicate names, bad types,
bad metadata entries, and bad attributes (checked by the op's schema, reported
at the call). Only the arguments themselves raise ``TypeError`` (``text`` not
a ``str``, ``metadata=`` not a list of arrays).

Should any other exception escape the parser, or the node constructors and
attribute converters it calls, :func:`parse` turns it into a ``ParseError``
saying "internal error" at the token being read, with the original exception
as its ``__cause__``: malformed input must never end in a bare traceback, and
such an error is a bug to report (the fuzz test in ``tests/test_parser_fuzz.py``
fails on it).
"""

from __future__ import annotations

import base64
import binascii
import difflib
import functools
import json
import math
import re
import sys
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from ..errors import ParseError
from .attrs import EMPTY_ATTRS, Attrs
from .dims import Dim, parse_dim
from .expr import Expr
from .gcpause import gc_paused
from .lexer import EOF, Tokens, describe_token, error_at
from .literals import array_from_values, parse_number
from .module import IRModule
from .nodes import Call, Constant, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from .op import Op
from .types import (
    DTYPE_KINDS,
    SUPPORTED_DTYPES,
    FuncType,
    TensorType,
    TupleType,
    Type,
    numpy_dtype,
)

__all__ = ["parse", "parse_expr", "read_headers", "VERSION_PREFIX"]

#: Every ``#[version = "..."]`` header this parser reads starts with this.
VERSION_PREFIX = "irpass"

_KEYWORDS = frozenset(
    {"def", "fn", "let", "if", "else", "meta", "const", "True", "False", "None", "Tensor"}
)
_SPECIAL_FLOAT = re.compile(r"(?:inf|nan)(?:[fiu]\d+)?\Z")
_METADATA_LINE = re.compile(r"^#\[metadata\][ \t]*\r?$", re.MULTILINE)
_META_ENTRY = re.compile(
    r"\s*meta\[(?:relay\.)?Constant\]\[(\d+)\]\s*=\s*([a-z0-9_]+)\s*\(([^)]*)\)\s*([A-Za-z0-9+/=]*)\s*\Z"
)
# A metadata entry spelled exactly as the printer spells it, with the newline before
# it. (The data is checked by the base64 decoder: a character class here costs a
# third more.)
_META_LINES = re.compile(r"\nmeta\[Constant\]\[(\d+)\] = ([a-z0-9_]+) \(([^)\n]*)\) ([^\n]*)")
if sys.version_info >= (3, 11):
    # validate=True's check in C: b64decode checks with a regex first, 0.6 us an entry
    _b64decode = functools.partial(binascii.a2b_base64, strict_mode=True)
else:
    _b64decode = functools.partial(base64.b64decode, validate=True)
_HEADER = re.compile(r'\s*#\[\s*([A-Za-z_]\w*)\s*=\s*("(?:[^"\\\n]|\\.)*")\s*\]', re.ASCII)
# Types and attribute lists are read (and later compared, hashed and printed)
# by recursive code; nothing real nests them this deep.
_MAX_NESTING = 100
# numpy's limit on an array's byte size (and on each dimension).
_MAX_BYTES = 2**63 - 1
_MISSING = object()
_DIM_ENDS = frozenset({",", ")"})  # the tokens that end a dim of a shape
_ATTR_DIM_ENDS = frozenset({",", ")", "]"})  # ... and a dim in an attribute value
_DIM_OPERATORS = frozenset({"*", "+", "-", "floordiv", "mod"})
# How far the parser looks for the ')' that ends a call's attributes: longer
# attribute lists are read each time (a bound, so no text makes it quadratic).
_ATTRS_SPAN = 256
# The callees Call() takes besides an Op (it tests isinstance; subclasses go through it).
_CALLEES = frozenset({GlobalVar, Var, Function, Call, TupleGetItem, Let, If})
_T = TypeVar("_T")

# A parse step that needs a sub-expression yields a generator for it; the
# driver (_Parser.run) runs that generator and sends its result back. This
# keeps nesting on a heap-allocated stack instead of Python's call stack.
_Step = Generator[Any, Any, Any]


def parse(text: str, filename: str | None = None, metadata: Any = None) -> IRModule:
    """Parse the text of a module (or of one expression, which becomes ``@main``).

    ``filename`` only appears in error messages. ``metadata`` supplies the
    arrays of ``meta[Constant][k]`` when the text has no ``#[metadata]``
    section (a list of arrays, or ``{"Constant": [...]}``). Raises
    :class:`irpass.ParseError` for any malformed text (``TypeError`` only for
    arguments of the wrong type).
    """
    parser = _Parser(text, filename, metadata)
    with gc_paused():
        return parser.guarded(parser.parse_module)


def parse_expr(text: str, filename: str | None = None, metadata: Any = None) -> Expr:
    """Parse the text of one expression (what ``str(expr)`` writes); free ``%vars`` are allowed."""
    parser = _Parser(text, filename, metadata)
    with gc_paused():
        return parser.guarded(parser.parse_expression)


def read_headers(text: str) -> dict[str, str]:
    """The ``#[key = "value"]`` headers at the top of a text (``version``, ``metadata_file``).

    Only looks at the start of the text; a malformed header ends the scan
    (:func:`parse` reports it).
    """
    out: dict[str, str] = {}
    pos = 0
    while (m := _HEADER.match(text, pos)) is not None:
        try:
            out[m.group(1)] = json.loads(m.group(2))
        except ValueError:
            break
        pos = m.end()
    return out


class _Parser:
    """Recursive descent over the token list, with an explicit stack for nesting."""

    def __init__(self, text: str, filename: str | None, metadata: Any) -> None:
        # Only the arguments are checked here (TypeError); the metadata
        # section is read in _start, under guarded().
        if not isinstance(text, str):
            raise TypeError(f"parse: text must be a str, got {type(text).__name__}")
        self.text = text
        self.filename = filename
        self.metadata_arg = None if metadata is None else _metadata_arg(metadata)
        self.metadata_at = _metadata_line(text)
        # The metadata section (base64 lines) is read separately, not tokenized.
        end = None if self.metadata_at is None else self.metadata_at.start()
        self.tokens = Tokens(text, filename, end)
        self.toks = self.tokens.toks
        self.i = 0
        # The offset of the metadata line being read, for internal errors.
        self.meta_offset: int | None = None
        self.graph: dict[str, Expr] = {}
        self.vars: dict[str, Var] = {}
        self.undo: list[tuple[dict, str, Any]] = []
        self.free: dict[str, Var] | None = None
        self.globals: dict[str, GlobalVar] = {}
        self.global_uses: dict[str, int] = {}
        self.defined: set[str] = set()
        self.ops: dict[str, Op] = {}
        self.meta_consts: dict[int, Constant] = {}
        self.metadata_file: str | None = None
        self.meta: dict[int, np.ndarray] | None = None
        # the entries of the text's metadata section that are read-only views of its bytes
        self.meta_views: set[int] = set()
        # One object per distinct type token and per distinct attribute list of
        # an op (both immutable): reading either again is one dict lookup.
        self.tensor_types: dict[str, TensorType] = {}
        self.call_attrs: dict[Any, Attrs] = {}
        self.fn_attrs: dict[tuple[str, ...], Attrs] = {(): EMPTY_ATTRS}
        # The value of each number, string, True, False or None token read as an
        # attribute value (what it reads as depends on the token alone).
        self.scalars: dict[str, Any] = {"True": True, "False": False, "None": None}

    def _start(self) -> None:
        """Read the metadata section, or take the ``metadata=`` argument."""
        text = self.text
        m = self.metadata_at
        if m is not None:
            if self.metadata_arg is not None:
                raise error_at(
                    text,
                    m.start(),
                    "this text has its own #[metadata] section; do not pass metadata= as well",
                    self.filename,
                )
            self.meta = self._read_metadata_section(m.end())
        else:
            self.meta = self.metadata_arg

    # -- entry points ---------------------------------------------------------------
    def guarded(self, step: Callable[[], _T]) -> _T:
        """``step()``, where any exception but a ParseError becomes one at the current token.

        The last line of defence of parse's contract (a ParseError for any
        malformed text): the parser calls node constructors, attribute
        converters and numpy, whose every failure on odd values cannot be
        foreseen. Such an error is a bug; the message says so, and the
        original exception stays attached as ``__cause__``. Running out of
        memory is not the text's fault and passes through.
        """
        try:
            return step()
        except (ParseError, MemoryError):
            raise
        except Exception as exc:
            message = (
                f"internal error while parsing here ({type(exc).__name__}: {exc}); "
                "please report it with this text"
            )
            if self.meta_offset is not None:
                raise error_at(self.text, self.meta_offset, message, self.filename) from exc
            index = min(self.i, len(self.toks) - 1)
            raise self.tokens.error(message, index) from exc

    def parse_module(self) -> IRModule:
        self._start()
        self._headers()
        toks = self.toks
        if toks[self.i] not in ("def", EOF):
            expr = self._expression_until_eof()
            self._check_globals()
            return IRModule.from_expr(expr)
        funcs: dict[GlobalVar, Function] = {}
        while toks[self.i] != EOF:
            if toks[self.i] != "def":
                raise self.error(
                    f"expected 'def' to start the next function, got {describe_token(toks[self.i])}"
                )
            gv, func = self._def()
            funcs[gv] = func
        self._check_globals()
        return IRModule(funcs)

    def parse_expression(self) -> Expr:
        self._start()
        self._headers()
        return self._expression_until_eof()

    def _expression_until_eof(self) -> Expr:
        self.free = {}
        if self.toks[self.i] == EOF:
            raise self.error("expected an expression, got end of input")
        expr = self.run(self._block(EOF))
        return expr

    # -- driver and helpers ---------------------------------------------------------
    def run(self, gen: _Step) -> Any:
        """Run a parse step and every sub-step it asks for, without recursion."""
        stack = [gen]
        value = None
        while True:
            try:
                sub = stack[-1].send(value)
            except StopIteration as stop:
                stack.pop()
                if not stack:
                    return stop.value
                value = stop.value
                continue
            stack.append(sub)
            value = None

    def error(self, message: str, index: int | None = None, within: int = 0) -> ParseError:
        """A ParseError at token ``index`` (default: the current token), ``within``
        characters into it."""
        index = self.i if index is None else index
        tok = self.toks[index]
        # A token the lexer could not make sense of is the real problem.
        if tok == '"':
            message = "unterminated string (a string ends with '\"' on the same line)"
        elif tok == "/*":
            message = "unterminated comment ('/*' without '*/')"
        return self.tokens.error(message, index, within)

    def expect(self, tok: str, context: str) -> None:
        """Consume ``tok`` or fail saying what was expected where."""
        got = self.toks[self.i]
        if got != tok:
            raise self.error(f"expected '{tok}' {context}, got {describe_token(got)}")
        self.i += 1

    def _define(self, table: dict, key: str, value: Any) -> None:
        self.undo.append((table, key, table.get(key, _MISSING)))
        table[key] = value

    def _restore(self, mark: int) -> None:
        undo = self.undo
        while len(undo) > mark:
            table, key, old = undo.pop()
            if old is _MISSING:
                del table[key]
            else:
                table[key] = old

    # -- headers and metadata -----------------------------------------------------------
    def _headers(self) -> None:
        toks = self.toks
        while toks[self.i] == "#[":
            start = self.i
            self.i += 1
            key = toks[self.i]
            if key == "metadata" and toks[self.i + 1] == "]":
                raise self.error(
                    "the #[metadata] section must be last, on a line of its own", start
                )
            if not _is_ident(key):
                raise self.error(f"expected a header name, got {describe_token(key)}")
            self.i += 1
            self.expect("=", f"after the header name {key!r}")
            value_tok = toks[self.i]
            if value_tok[:1] != '"' or len(value_tok) < 2:
                raise self.error(
                    f"expected a string value for header {key!r}, got {describe_token(value_tok)}"
                )
            value = self._string(value_tok)
            self.i += 1
            self.expect("]", "to close the header")
            if key == "version":
                if not value.startswith(VERSION_PREFIX):
                    raise self.error(
                        f"unsupported version {value!r}: this is irpass text format "
                        f"'{VERSION_PREFIX} ...'",
                        start + 3,
                    )
            elif key == "metadata_file":
                self.metadata_file = value
            else:
                raise self.error(
                    f"unknown header {key!r} (known: version, metadata_file)", start + 1
                )

    def _read_metadata_section(self, start: int) -> dict[int, np.ndarray]:
        """The entries of the metadata section after ``start``.

        The printer's form, one entry a line with nothing else, is read with one
        regex scan and each (dtype, shape) group of entries becomes one array whose
        rows are the constants: 1.4 us an entry (W1's constants) rather than 2.4
        in the line by line reader. Anything else (comments, blank
        lines, any error) goes to :meth:`_read_metadata_lines`, which says where.
        """
        text = self.text
        entries = _META_LINES.findall(text, start)
        extra_lines = text.count("\n", start) - len(entries)
        # (one more newline is the text's last, after which only spaces may follow)
        if extra_lines and (extra_lines > 1 or text[text.rindex("\n") + 1 :].strip()):
            return self._read_metadata_lines(start)
        groups: dict[tuple[str, str], tuple[list[int], list[bytes]]] = {}
        try:
            for k_text, dtype, shape_text, data in entries:
                group = groups.get((dtype, shape_text))
                if group is None:
                    group = groups[dtype, shape_text] = ([], [])
                group[0].append(int(k_text))
                group[1].append(_b64decode(data))
        except ValueError:
            return self._read_metadata_lines(start)
        out: dict[int, np.ndarray] = {}
        views: list[int] = []
        for (dtype, shape_text), (keys, raws) in groups.items():
            try:
                little, shape, nbytes = _meta_layout("", dtype, shape_text, ValueError)
            except ValueError:
                return self._read_metadata_lines(start)
            if any(len(raw) != nbytes for raw in raws):
                return self._read_metadata_lines(start)
            block = np.frombuffer(b"".join(raws), dtype=little).reshape((len(keys), *shape))
            if little.isnative:
                views += keys
            else:
                block = block.astype(little.newbyteorder("="))
            # (iterating a block gives its rows as views; the rows of a 1-d block
            # would be numpy scalars)
            rows = iter(block) if shape else (block[j, ...] for j in range(len(keys)))
            out.update(zip(keys, rows, strict=True))
        if len(out) != len(entries):  # a key defined twice
            return self._read_metadata_lines(start)
        self.meta_views.update(views)
        return out

    def _read_metadata_lines(self, start: int) -> dict[int, np.ndarray]:
        """The metadata section after ``start`` line by line, for any form the
        parser takes (comments, blank lines), with errors at their line."""
        text = self.text
        out: dict[int, np.ndarray] = {}
        # (dtype, shape text) -> (little-endian dtype, shape, byte size): checked
        # once per layout, as a module's constants share a few.
        layouts: dict[tuple[str, str], tuple[np.dtype, tuple[int, ...], int]] = {}
        views = self.meta_views
        match = _META_ENTRY.match
        pos = start
        # (each line matched once, the entry's fields read inline: 3 us an entry
        # before, 1.5 after; the printer's form no longer comes here)
        for line in text[start:].split("\n"):
            m = match(line)
            self.meta_offset = pos
            if m is None:
                stripped = line.strip()
                if stripped and not stripped.startswith("//"):
                    raise self._meta_fail(
                        "expected a metadata entry 'meta[Constant][k] = <dtype> (<shape>) "
                        "<base64 data>'"
                    )
            else:
                k_text, dtype, shape_text, data = m.groups()
                layout = layouts.get((dtype, shape_text))
                if layout is None:
                    layout = layouts[dtype, shape_text] = _meta_layout(
                        k_text, dtype, shape_text, self._meta_fail
                    )
                little, shape, nbytes = layout
                try:
                    raw = _b64decode(data)
                except ValueError:
                    raise self._meta_fail(
                        f"meta[Constant][{k_text}]: the data is not valid base64"
                    ) from None
                if len(raw) != nbytes:
                    raise self._meta_fail(
                        f"meta[Constant][{k_text}]: {len(raw)} bytes of data, but {dtype} "
                        f"{shape} needs {nbytes} bytes"
                    )
                k = int(k_text)
                if k in out:
                    raise self._meta_fail(f"meta[Constant][{k}] is defined twice")
                # (one numpy call, and a constant then finds the bytes it views at once)
                arr = np.ndarray(shape, dtype=little, buffer=raw)
                if little.isnative:
                    views.add(k)
                else:
                    arr = arr.astype(little.newbyteorder("="))
                out[k] = arr
            pos += len(line) + 1
        self.meta_offset = None
        return out

    def _meta_fail(self, message: str) -> ParseError:
        """A ParseError at the metadata line being read (it starts at ``self.meta_offset``)."""
        text = self.text
        start = self.meta_offset or 0
        end = text.find("\n", start)
        line = text[start : None if end < 0 else end]
        return error_at(text, start + len(line) - len(line.lstrip()), message, self.filename)

    def _meta_constant(self) -> Constant:
        toks = self.toks
        start = self.i
        tok = toks[start]
        if tok != "meta":
            # one token from the lexer: meta[Constant][k]
            k_tok = tok[tok.rindex("[") + 1 : -1]
            self.i += 1
        else:
            self.i += 1
            self.expect("[", "after 'meta'")
            kind = toks[self.i]
            if kind not in ("Constant", "relay.Constant"):
                raise self.error(f"only meta[Constant][k] references exist, got meta[{kind}]")
            self.i += 1
            self.expect("]", "after meta[Constant")
            self.expect("[", "before the constant's index")
            k_tok = toks[self.i]
            if not k_tok.isdigit():
                raise self.error(f"expected the constant's index, got {describe_token(k_tok)}")
            self.i += 1
            self.expect("]", "after the constant's index")
        k = int(k_tok)
        const = self.meta_consts.get(k)
        if const is not None:
            return const
        if self.meta is None:
            if self.metadata_file is not None:
                msg = (
                    f"meta[Constant][{k}] is not in this text: its constants are in "
                    f"{self.metadata_file!r}; read it with irpass.load(path) or pass metadata="
                )
            else:
                msg = (
                    f"meta[Constant][{k}] is not defined: the text has no #[metadata] section "
                    "(it was printed with show_meta_data=False); pass metadata= to parse it"
                )
            raise self.error(msg, start)
        arr = self.meta.get(k)
        if arr is None:
            raise self.error(
                f"meta[Constant][{k}] is not defined: the metadata has {len(self.meta)} "
                f"constant(s)",
                start,
            )
        # the section's arrays view its decoded bytes (see _metadata_entry); metadata=
        # arrays are the caller's, checked (and copied where needed) by Constant()
        const = Constant._unchecked(arr) if k in self.meta_views else Constant(arr)
        self.meta_consts[k] = const
        return const

    # -- definitions ----------------------------------------------------------------
    def _global(self, name: str) -> GlobalVar:
        gv = self.globals.get(name)
        if gv is None:
            gv = self.globals[name] = GlobalVar(name)
        return gv

    def _check_globals(self) -> None:
        for name, index in self.global_uses.items():
            if name not in self.defined:
                close = difflib.get_close_matches(name, sorted(self.defined), n=3)
                hint = f"; did you mean {', '.join('@' + c for c in close)}?" if close else ""
                raise self.error(f"undefined global function @{name}{hint}", index)

    def _def(self) -> tuple[GlobalVar, Function]:
        toks = self.toks
        start = self.i
        self.i += 1
        tok = toks[self.i]
        if tok[:1] != "@":
            raise self.error(
                f"expected a global function name @name after 'def', got {describe_token(tok)}"
            )
        name = self._name(tok)
        if name in self.defined:
            raise self.error(f"duplicate definition of @{name}")
        self.defined.add(name)
        gv = self._global(name)
        self.i += 1
        func = self.run(self._function(f"of @{name}", f"bad function @{name}", start))
        return gv, func

    def _function(self, context: str, bad: str, start: int) -> _Step:
        """The rest of a ``def`` or ``fn``: ``(params) -> ret_type { body }`` as a Function.

        ``context`` says where in messages (``of @f``); ``bad`` prefixes the
        Function constructor's complaint, reported at token ``start``.
        """
        head = self._function_head(context)
        body, named = self._flat_block("}")
        if body is None:
            body = yield self._block("}", named)
        return self._function_tail(head, body, context, bad, start)

    def _function_head(self, context: str) -> tuple[Any, ...]:
        """``(params) -> ret_type {``: what :meth:`_function_tail` needs after the body."""
        mark = len(self.undo)
        params, attrs, key = self._params(context)
        ret_type = None
        if self.toks[self.i] == "->":
            self.i += 1
            ret_type = self._type()
        # (expect() in the common case without formatting its message)
        if self.toks[self.i] == "{":
            self.i += 1
        else:
            self.expect("{", f"to open the body {context}")
        return mark, params, attrs, key, ret_type

    def _function_tail(
        self, head: tuple[Any, ...], body: Expr, context: str, bad: str, start: int
    ) -> Function:
        """The ``}`` after the body, and the Function."""
        mark, params, attrs, key, ret_type = head
        if self.toks[self.i] == "}":
            self.i += 1
        else:
            self.expect("}", f"to close the body {context}")
        self._restore(mark)
        known = None if key is None else self.fn_attrs.get(key)
        if known is not None:
            # As Call._unchecked in _simple: distinct new Vars, a body, a Type or
            # None, and Attrs the same tokens made before.
            return Function._unchecked(tuple(params), body, ret_type, known)
        try:
            func = Function(params, body, ret_type, attrs)
        except (TypeError, ValueError) as exc:
            raise self.error(f"{bad}: {exc}", start) from None
        if key is not None:
            self.fn_attrs[key] = func.attrs
        return func

    def _params(self, context: str) -> tuple[list[Var], dict[str, Any], tuple[str, ...] | None]:
        """``( %x: T, %y, key=value )``; defines the params in the current scope.

        Returns the params, the attributes and the attributes' tokens (which
        determine them: the key of ``self.fn_attrs``; ``None`` when params
        follow them). When the key is known the attributes are not read (the
        dict is empty).
        """
        toks = self.toks
        if toks[self.i] == "(":
            self.i += 1
        else:
            self.expect("(", f"to open the parameter list {context}")
        params: list[Var] = []
        attrs: dict[str, Any] = {}
        first_attr = -1  # where the attributes start
        param_after_attr = False
        seen: set[str] = set()
        variables = self.vars
        undo = self.undo
        tensor_types = self.tensor_types
        # The cursor lives in `i` (every fused function has a parameter list);
        # self.i is set before anything that reads it or may raise.
        i = self.i
        while toks[i] != ")":
            tok = toks[i]
            if tok[:1] == "%":
                if first_attr >= 0:
                    param_after_attr = True
                self.i = i
                c = tok[1:2]
                if c.isdigit():
                    raise self.error(f"a parameter needs a variable name like %x, not {tok}")
                ty = None
                if tok[-1:] == "]" and c != '"':
                    # one token from the lexer: %x: Tensor[(2, 8), float32]
                    name, _, ty_tok = tok[1:].partition(": ")
                    ty = tensor_types.get(ty_tok)
                    if ty is None:
                        ty = tensor_types[ty_tok] = self._tensor_token(ty_tok, len(name) + 3)
                else:
                    name = tok[1:] if c != '"' and c else self._name(tok)
                if name in seen:
                    shown = tok if c == '"' else "%" + name
                    raise self.error(f"duplicate parameter {shown} {context}")
                seen.add(name)
                i += 1
                if ty is None and toks[i] == ":":
                    ty = tensor_types.get(toks[i + 1])
                    if ty is None:
                        self.i = i + 1
                        ty = self._type()
                        i = self.i
                    else:
                        i += 2
                v = Var._unchecked(name, ty)  # a str and a Type (or None)
                params.append(v)
                undo.append((variables, name, variables.get(name, _MISSING)))  # _define
                variables[name] = v
            else:
                if first_attr < 0:
                    first_attr = i
                    # Attributes last, as the printer writes them (Primitive=1),
                    # and read before: their tokens are the key (see _function_tail).
                    end = _index(toks, ")", i, i + _ATTRS_SPAN)
                    if end >= 0:
                        # (a known key has neither a '(' nor a '%' token: it was
                        # stored only for attributes after the last param)
                        key = tuple(toks[i:end])
                        if key in self.fn_attrs:
                            self.i = end + 1
                            return params, attrs, key
                self.i = i
                if not self._attr_pair(attrs, None, context):
                    raise self.error(
                        f"expected a parameter (%name) or an attribute (key=value) {context}, "
                        f"got {describe_token(tok)}"
                    )
                i = self.i
            tok = toks[i]
            if tok == ",":
                i += 1
            elif tok != ")":
                self.i = i
                raise self.error(
                    f"expected ',' or ')' in the parameter list {context}, got "
                    f"{describe_token(tok)}"
                )
        self.i = i + 1
        if first_attr < 0:
            return params, attrs, ()
        return params, attrs, None if param_after_attr else tuple(toks[first_attr:i])

    # -- types --------------------------------------------------------------------------
    def _type(self, depth: int = 0) -> Type:
        if depth > _MAX_NESTING:
            raise self.error(f"type nesting too deep (more than {_MAX_NESTING} levels)")
        toks = self.toks
        tok = toks[self.i]
        if tok[:7] == "Tensor[":
            # One token from the lexer: the same text is the same (immutable) type.
            ty = self.tensor_types.get(tok)
            if ty is None:
                ty = self.tensor_types[tok] = self._tensor_token(tok)
            self.i += 1
            return ty
        if tok == "Tensor":
            self.i += 1
            self.expect("[", "after 'Tensor'")
            shape = self._shape("of the tensor type")
            self.expect(",", "between the shape and the dtype of the tensor type")
            dtype = self._dtype()
            self.expect("]", "to close the tensor type")
            return TensorType(shape, dtype)
        if tok in SUPPORTED_DTYPES:
            self.i += 1
            return TensorType((), tok)
        if tok == "(":
            self.i += 1
            fields = []
            while toks[self.i] != ")":
                fields.append(self._type(depth + 1))
                if toks[self.i] == ",":
                    self.i += 1
                elif toks[self.i] != ")":
                    raise self.error(
                        f"expected ',' or ')' in the tuple type, got {describe_token(toks[self.i])}"
                    )
            self.i += 1
            return TupleType(fields)
        if tok == "fn":
            self.i += 1
            self.expect("(", "to open the argument types of the function type")
            args = []
            while toks[self.i] != ")":
                args.append(self._type(depth + 1))
                if toks[self.i] == ",":
                    self.i += 1
                elif toks[self.i] != ")":
                    raise self.error(
                        f"expected ',' or ')' in the function type, got "
                        f"{describe_token(toks[self.i])}"
                    )
            self.i += 1
            self.expect("->", "before the result type of the function type")
            return FuncType(args, self._type(depth + 1))
        hint = ""
        if _is_ident(tok):
            close = difflib.get_close_matches(tok, sorted(SUPPORTED_DTYPES) + ["Tensor"], n=1)
            if close:
                hint = f"; did you mean {close[0]}?"
        raise self.error(
            "expected a type (Tensor[(d0, d1, ...), dtype], a dtype, (T1, T2, ...) or "
            f"fn (T1, ...) -> T), got {describe_token(tok)}{hint}"
        )

    def _tensor_token(self, tok: str, at: int = 0) -> TensorType:
        """The type in a one-token ``Tensor[(1, 3), float32]`` (see the lexer), which
        starts ``at`` characters into the current token."""
        close = tok.index(")")
        dtype = tok[close + 3 : -1]
        if dtype not in SUPPORTED_DTYPES:
            raise self._unknown_dtype(dtype, self.i, at + close + 3)
        return TensorType(tuple(map(int, tok[8:close].replace(",", " ").split())), dtype)

    def _shape(self, context: str) -> tuple[Dim, ...]:
        toks = self.toks
        self.expect("(", f"to open the shape {context}")
        dims: list[Dim] = []
        while toks[self.i] != ")":
            tok = toks[self.i]
            if tok.isdigit() and toks[self.i + 1] in _DIM_ENDS:
                dims.append(int(tok))
                self.i += 1
            else:
                dims.append(self._symbolic_dim(context))
            if toks[self.i] == ",":
                self.i += 1
            elif toks[self.i] != ")":
                raise self.error(
                    f"expected ',' or ')' in the shape {context}, got "
                    f"{describe_token(toks[self.i])}"
                )
        self.i += 1
        return tuple(dims)

    def _symbolic_dim(self, context: str) -> Dim:
        """A dim that is an expression (``n``, ``seq * 4``, ``(h + 1) floordiv 2``): the
        tokens up to the ``,`` or ``)`` that ends it, read by :func:`~irpass.ir.dims.parse_dim`.
        """
        toks = self.toks
        start = self.i
        depth = 0
        while True:
            tok = toks[self.i]
            if tok == EOF or (depth == 0 and tok in _DIM_ENDS):
                break
            depth += (tok == "(") - (tok == ")")
            self.i += 1
        expected = (
            f"expected a dimension (a non-negative integer or a size expression such "
            f"as n or n * 4) in the shape {context}"
        )
        if self.i == start:
            raise self.error(f"{expected}, got {describe_token(toks[start])}")
        text = " ".join(toks[start : self.i])
        try:
            dim = parse_dim(text)
        except ValueError as err:
            raise self.error(f"{expected}, got {text!r} ({err})", start) from None
        if type(dim) is int and dim < 0:
            raise self.error(
                f"dimension {text!r} in the shape {context} is negative ({dim})", start
            )
        return dim

    def _dtype(self) -> str:
        tok = self.toks[self.i]
        if tok not in SUPPORTED_DTYPES:
            raise self._unknown_dtype(tok, self.i)
        self.i += 1
        return tok

    def _unknown_dtype(self, name: str, index: int, within: int = 0) -> ParseError:
        """The error for dtype ``name``, ``within`` characters into token ``index``."""
        close = difflib.get_close_matches(name, sorted(SUPPORTED_DTYPES), n=2)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        return self.error(f"unknown dtype {describe_token(name)}{hint}", index, within)

    # -- attribute values ---------------------------------------------------------------
    def _attr_value(self) -> Any:
        """A value after ``key=``: number, string, True/False/None, or a (nested) list."""
        toks = self.toks
        stack: list[tuple[list, str]] = []
        while True:
            tok = toks[self.i]
            if (tok == "[" or tok == "(") and not (tok == "(" and self._dim_in_parens()):
                self.i += 1
                close = "]" if tok == "[" else ")"
                if toks[self.i] != close:
                    if len(stack) == _MAX_NESTING:
                        raise self.error(
                            f"list value nested too deep (more than {_MAX_NESTING} levels)",
                            self.i - 1,
                        )
                    stack.append(([], close))
                    continue
                self.i += 1
                value: Any = ()
            else:
                value = self._attr_scalar()
            while True:
                if not stack:
                    return value
                items, close = stack[-1]
                items.append(value)
                tok = toks[self.i]
                if tok == ",":
                    self.i += 1
                    if toks[self.i] != close:
                        break
                    tok = close
                if tok != close:
                    raise self.error(
                        f"expected ',' or '{close}' in the list value, got {describe_token(tok)}"
                    )
                self.i += 1
                stack.pop()
                value = tuple(items)

    def _attr_pair(
        self, attrs: dict[str, Any], keys_at: dict[str, int] | None, context: str
    ) -> bool:
        """Read ``key=value`` at the current token into ``attrs``.

        Returns ``False``, consuming nothing, when the tokens do not start with
        ``key=``. ``keys_at`` (if given) gets the token index of each key, for
        errors about that attribute; ``context`` says where in the duplicate-key
        message (``in the call of add``).
        """
        toks = self.toks
        i = self.i
        if toks[i + 1] != "=" or (key := self._attr_key(toks[i])) is None:
            return False
        if key in attrs:
            raise self.error(f"duplicate attribute {key!r} {context}")
        if keys_at is not None:
            keys_at[key] = i
        self.i = i + 2
        attrs[key] = self._attr_value()
        return True

    def _attr_key(self, tok: str) -> str | None:
        """The attribute name in ``key=`` (an identifier, or a string for any other name)."""
        if _is_ident(tok):
            return tok
        if tok[:1] == '"' and len(tok) > 1:
            return self._string(tok)
        return None

    def _string(self, tok: str) -> str:
        try:
            return json.loads(tok)
        except ValueError as exc:
            raise self.error(f"bad string literal {tok}: {exc.args[0].split(':')[0]}") from None

    def _name(self, tok: str) -> str:
        """The name in the current token ``%x`` / ``@f`` / ``%"quoted"`` (JSON escapes)."""
        if len(tok) == 1:
            # The lexer only makes a name token of a sigil followed by a name.
            raise self.error(f"expected a name after '{tok}' (like {tok}x or {tok}\"any name\")")
        if tok[1] != '"':
            return tok[1:]
        try:
            name = json.loads(tok[1:])
        except ValueError as exc:
            raise self.error(f"bad quoted name {tok}: {exc.args[0].split(':')[0]}") from None
        if not name and tok[0] == "@":
            raise self.error("a global function name cannot be empty")
        return name

    def _attr_scalar(self) -> Any:
        tok = self.toks[self.i]
        value = self.scalars.get(tok, _MISSING)
        if value is not _MISSING:
            self.i += 1
            return value
        if tok[:1] == '"' and len(tok) > 1:
            value = self.scalars[tok] = self._string(tok)
            self.i += 1
            return value
        if tok[:1] == "[" and len(tok) > 1:
            # one token from the lexer: a list of ints, [0, 2, 1]
            value = self.scalars[tok] = tuple(map(int, tok[1:-1].split(", ")))
            self.i += 1
            return value
        if tok == "-" or (tok == "(" and self._dim_in_parens()):
            return self._attr_dim()  # -n + 9, (n + 1) floordiv 2
        if _is_number(tok):
            try:
                value, dtype = parse_number(tok)
            except ValueError as exc:
                raise self.error(str(exc)) from None
            if dtype is not None:
                raise self.error(
                    f"attribute values take no dtype suffix: write "
                    f"{tok[: -len(_suffix(tok))]} instead of {tok}"
                )
            self.scalars[tok] = value
            self.i += 1
            return value
        if _is_ident(tok):
            return self._attr_dim()
        raise self.error(
            "expected an attribute value (a number, a string, True, False, None, a size "
            f"expression or a [list]), got {describe_token(tok)}"
        )

    def _dim_in_parens(self) -> bool:
        """Whether the ``(`` at the cursor opens a size expression (``(n + 1) floordiv 2``)
        rather than a list: its ``)`` is followed by an operator of one."""
        toks = self.toks
        depth = 0
        j = self.i
        while toks[j] != EOF:
            depth += (toks[j] == "(") - (toks[j] == ")")
            j += 1
            if depth == 0:
                return toks[j] in _DIM_OPERATORS
        return False

    def _attr_dim(self) -> Any:
        """A symbolic dim as an attribute value: the tokens up to the ``,``, ``]`` or ``)``
        that ends it, read by :func:`~irpass.ir.dims.parse_dim`."""
        toks = self.toks
        start = self.i
        depth = 0
        while True:
            tok = toks[self.i]
            if tok == EOF or (depth == 0 and tok in _ATTR_DIM_ENDS):
                break
            depth += (tok == "(") - (tok == ")")
            self.i += 1
        text = " ".join(toks[start : self.i])
        try:
            return parse_dim(text)
        except ValueError as err:
            raise self.error(
                f"expected an attribute value, got {text!r}, which is not a size "
                f"expression either ({err})",
                start,
            ) from None

    # -- atoms ------------------------------------------------------------------------
    def _atom(self) -> Expr | None:
        """An expression that is a single token (or ``meta[...]``), else ``None``."""
        toks = self.toks
        tok = toks[self.i]
        e = self.graph.get(tok)
        if e is not None:
            self.i += 1
            return e
        c = tok[:1]
        if c == "%":
            if tok[1:2].isdigit():
                raise self.error(f"undefined {tok}: bind it with '{tok} = ...;' before use")
            name = tok[1:] if tok[1:2] not in ('"', "") else self._name(tok)
            v = self.vars.get(name)
            if v is None:
                v = self._free_var(name, tok)
            self.i += 1
            return v
        if c == "@":
            name = self._name(tok)
            gv = self._global(name)
            self.global_uses.setdefault(name, self.i)
            self.i += 1
            return gv
        if c == "m" and tok[:5] == "meta[":
            return self._meta_constant()
        if _is_number(tok):
            self.i += 1
            return self._scalar(tok, self.i - 1)
        if not _is_ident(tok):
            return None
        if tok == "True" or tok == "False":
            self.i += 1
            return Constant(np.array(tok == "True"))
        if tok == "meta" and toks[self.i + 1] == "[":
            return self._meta_constant()
        if tok in _KEYWORDS or toks[self.i + 1] == "(":
            return None
        op = self._op(tok)
        self.i += 1
        return op

    def _free_var(self, name: str, tok: str) -> Var:
        if ": " in name and tok[1:2] != '"':
            # one token from the lexer (%x: Tensor[...]) where no type goes
            raise self.error(
                "a type annotation ':' goes only on a parameter or after 'let %x'",
                within=len(name.partition(": ")[0]) + 1,
            )
        if self.free is None:
            close = difflib.get_close_matches(name, list(self.vars)[:10000], n=3)
            hint = f"; did you mean {', '.join('%' + c for c in close)}?" if close else ""
            raise self.error(f"undefined variable {tok}{hint}")
        v = self.free.get(name)
        if v is None:
            v = self.free[name] = Var(name)
        return v

    def _op(self, name: str) -> Op:
        op = self.ops.get(name)
        if op is None:
            try:
                op = Op.get(name)
            except ValueError as exc:
                raise self.error(str(exc)) from None
            self.ops[name] = op
        return op

    def _scalar(self, tok: str, index: int) -> Constant:
        try:
            value, dtype = parse_number(tok)
            if dtype is None:
                dtype = "float32" if isinstance(value, float) else "int32"
            return Constant(array_from_values([value], dtype, ()))
        except ValueError as exc:
            raise self.error(str(exc), index) from None

    def _inline_const(self) -> Constant:
        """``const(dtype, (shape), [v0, v1, ...])`` with values flat in C order."""
        toks = self.toks
        self.i += 1
        self.expect("(", "after 'const'")
        dtype = self._dtype()
        self.expect(",", "after the dtype of const(...)")
        shape_at = self.i
        shape = self._shape("of const(...)")
        if not all(type(d) is int for d in shape):
            raise self.error(
                "const(...) needs a static shape (non-negative integers), got "
                f"({', '.join(map(str, shape))})",
                shape_at,
            )
        self.expect(",", "after the shape of const(...)")
        if toks[self.i] == ".":
            raise self.error(
                "the values of this constant were elided when the text was "
                "printed (elide_constants, the printing instruments' default); "
                "print the module with every value to parse it"
            )
        self.expect("[", "to open the values of const(...)")
        values: list[Any] = []
        start = self.i
        kind = DTYPE_KINDS[dtype]
        while toks[self.i] != "]":
            tok = toks[self.i]
            value = self._const_element(tok, dtype, kind)
            values.append(value)
            self.i += 1
            if toks[self.i] == ",":
                self.i += 1
            elif toks[self.i] != "]":
                raise self.error(
                    f"expected ',' or ']' in the values of const(...), got "
                    f"{describe_token(toks[self.i])}"
                )
        self.i += 1
        size = _array_size(shape, numpy_dtype(dtype).itemsize)
        if size is None:
            raise self.error(f"const(...): shape {shape} is too large for an array", shape_at)
        if len(values) != size:
            raise self.error(
                f"const(...): shape {shape} needs {size} value(s), got {len(values)}", start
            )
        self.expect(")", "to close const(...)")
        try:
            return Constant(array_from_values(values, dtype, shape))
        except ValueError as exc:
            raise self.error(f"const(...): {exc}", start) from None

    def _const_element(self, tok: str, dtype: str, kind: str) -> Any:
        if kind == "b":
            if tok in ("True", "False"):
                return tok == "True"
            raise self.error(
                f"expected True or False in a bool const(...), got {describe_token(tok)}"
            )
        if _is_number(tok):
            try:
                value, suffix_dtype = parse_number(tok)
            except ValueError as exc:
                raise self.error(str(exc)) from None
            if suffix_dtype is not None:
                raise self.error(
                    "values in const(...) take no dtype suffix (the dtype comes first)"
                )
            if kind in "iu" and isinstance(value, float):
                raise self.error(f"expected an integer in a {dtype} const(...), got {tok}")
            return value
        raise self.error(f"expected a number in const(...), got {describe_token(tok)}")

    # -- expressions ------------------------------------------------------------------
    def _simple(self) -> Expr | None:
        """Fast path: an atom, a projection of one (``%3.0``), or a call of an op or of
        a ``%n`` whose arguments are all atoms.

        Returns ``None`` (consuming nothing) for anything else; the general
        path :meth:`_expr` then parses it.
        """
        toks = self.toks
        start = self.i
        if toks[start + 1] != "(":
            e = self._atom()
            if e is None:
                return None
            tok = toks[self.i]
            if tok[:1] == "." and tok[1:2].isdigit():
                # a projection %3.0 (of an atom: anything longer goes to _postfix)
                after = toks[self.i + 1]
                if after != "(" and after[:1] != ".":
                    try:
                        e = TupleGetItem(e, int(tok[1:]))
                    except (TypeError, ValueError) as exc:
                        raise self.error(str(exc)) from None
                    self.i += 1
                    return e
                self.i = start
                return None
            if tok == "(" or tok[:1] == ".":
                self.i = start
                return None
            return e
        tok = toks[start]
        op: Any = self.ops.get(tok)
        if op is None:
            if tok[:1] == "%":
                # a call of a named function value: %3(%1, %2) calls a fused function
                op = self.graph.get(tok)
                if op is None:
                    return None
            else:
                if tok in _KEYWORDS or not _is_ident(tok):
                    return None
                op = self._op(tok)
        is_op = type(op) is Op
        i = start + 2
        graph = self.graph
        args: list[Expr] = []
        attrs: dict[str, Any] | None = None
        keys_at: dict[str, int] | None = None
        # The key of the call's attributes in self.call_attrs: the op alone for
        # a call without any, else the op and the tokens of its attributes.
        key: Any = op
        end = -1
        known: Attrs | None = None
        variables = self.vars
        while True:
            tok = toks[i]
            e = graph.get(tok)
            if e is None and tok[:1] == "%" and (tok[1:2].isalpha() or tok[1:2] == "_"):
                # a plain variable name (%x); anything else goes through _atom below
                e = variables.get(tok[1:])
            if e is not None:
                i += 1
            elif tok == ")":
                break
            elif toks[i + 1] == "=":
                if not is_op:
                    self.i = start
                    return None
                if attrs is None:
                    # The attributes seen before (the same tokens up to the call's
                    # ')', no parens in the values) made these Attrs.
                    key = None
                    end = _index(toks, ")", i, i + _ATTRS_SPAN)
                    if end >= 0:
                        seg = toks[i:end]
                        if "(" not in seg:
                            key = (op, *seg)
                            known = self.call_attrs.get(key)
                            if known is not None:
                                i = end
                                break
                    attrs, keys_at = {}, {}
                self.i = i
                if not self._attr_pair(attrs, keys_at, f"in the call of {op.name}"):
                    # not key=value: the general path says what is wrong
                    self.i = start
                    return None
                i = self.i
                e = None
            else:
                self.i = i
                e = self._atom()
                if e is None:
                    self.i = start
                    return None
                i = self.i
            if e is not None:
                if attrs is not None:
                    self.i = start
                    return None
                args.append(e)
            tok = toks[i]
            if tok == ",":
                i += 1
            elif tok == ")":
                break
            else:
                self.i = start
                return None
        tok = toks[i + 1]
        if tok == "(" or tok[:1] == ".":
            self.i = start
            return None
        self.i = i + 1
        if not is_op:
            if type(op) in _CALLEES:
                # (what Call() accepts as a callee: a %n is one of these or an error)
                return Call._unchecked(op, tuple(args), EMPTY_ATTRS)
            return self._make_call(op, args, None, start + 1, None)
        if key is op:
            known = self.call_attrs.get(op)
        n = op.num_inputs
        if known is not None and (n < 0 or len(args) == n):
            # Everything Call() checks is known good: the args are expressions
            # (the parser made them), their number fits the op, and the Attrs
            # passed the op's schema before.
            return Call._unchecked(op, tuple(args), known)
        call = self._make_call(op, args, attrs, start, keys_at)
        if key is op or (key is not None and i == end):
            self.call_attrs[key] = call.attrs
        return call

    def _make_call(
        self,
        op: Expr,
        args: Sequence[Expr],
        attrs: dict | None,
        index: int,
        keys_at: Mapping[str, int] | None,
    ) -> Call:
        """The call, or a ParseError at ``index`` (at the ``key=`` of an attribute it names)."""
        try:
            # A tuple is what Call stores; handing it one skips a conversion.
            return Call(op, tuple(args), attrs)
        except (TypeError, ValueError) as exc:
            message = str(exc)
            key = _attr_error_key(op, message, keys_at) if keys_at else None
            raise self.error(message, index if key is None else keys_at[key]) from None

    def _sub(self) -> Generator[Any, Any, Expr]:
        """Parse a sub-expression (helper: ``e = yield from self._sub()``)."""
        e = self._simple()
        if e is None:
            e = yield self._expr()
        return e

    def _expr(self) -> _Step:
        toks = self.toks
        start = self.i
        tok = toks[start]
        e = self._atom()
        if e is None:
            if tok == "(":
                e = yield from self._paren()
            elif tok == "if":
                e = yield from self._if()
            elif tok == "fn":
                e = yield from self._fn()
            elif tok == "{":
                self.i += 1
                e = yield self._block("}")
                self.expect("}", "to close the block")
            elif tok == "const" and toks[start + 1] == "(":
                e = self._inline_const()
            elif _is_ident(tok) and tok not in _KEYWORDS and toks[start + 1] == "(":
                op = self._op(tok)
                self.i += 1
                args, attrs, keys_at = yield from self._call_args(op.name)
                e = self._make_call(op, args, attrs, start, keys_at)
            else:
                raise self.error(f"expected an expression, got {describe_token(tok)}")
        return (yield from self._postfix(e))

    def _postfix(self, e: Expr) -> Generator[Any, Any, Expr]:
        """``e`` followed by calls ``(...)`` and projections ``.0``, if any."""
        toks = self.toks
        while True:
            tok = toks[self.i]
            if tok == "(":
                at = self.i
                args, attrs, keys_at = yield from self._call_args("the function")
                e = self._make_call(e, args, attrs, at, keys_at)
            elif tok[:1] == "." and tok[1:2].isdigit():
                try:
                    e = TupleGetItem(e, int(tok[1:]))
                except (TypeError, ValueError) as exc:
                    raise self.error(str(exc)) from None
                self.i += 1
            else:
                return e

    def _call_args(
        self, callee: str
    ) -> Generator[Any, Any, tuple[list[Expr], dict | None, dict[str, int]]]:
        """``(args, key=value, ...)``: the args, the attributes and the token of each key."""
        toks = self.toks
        self.expect("(", f"to open the arguments of {callee}")
        context = f"in the call of {callee}"
        args: list[Expr] = []
        attrs: dict[str, Any] = {}
        keys_at: dict[str, int] = {}
        while toks[self.i] != ")":
            if not self._attr_pair(attrs, keys_at, context):
                if attrs:
                    raise self.error(f"positional argument after attributes {context}")
                a = yield from self._sub()
                args.append(a)
            tok = toks[self.i]
            if tok == ",":
                self.i += 1
            elif tok != ")":
                raise self.error(
                    f"expected ',' or ')' in the arguments of {callee}, got {describe_token(tok)}"
                )
        self.i += 1
        return args, attrs or None, keys_at

    def _paren(self) -> Generator[Any, Any, Expr]:
        toks = self.toks
        self.i += 1
        if toks[self.i] == ")":
            self.i += 1
            return Tuple(())
        first = yield from self._sub()
        if toks[self.i] == ")":
            self.i += 1
            return first
        fields = [first]
        while toks[self.i] == ",":
            self.i += 1
            if toks[self.i] == ")":
                break
            f = yield from self._sub()
            fields.append(f)
        tok = toks[self.i]
        if tok != ")":
            raise self.error(f"expected ',' or ')' in the tuple, got {describe_token(tok)}")
        self.i += 1
        return Tuple(tuple(fields))

    def _if(self) -> Generator[Any, Any, Expr]:
        start = self.i
        self.i += 1
        self.expect("(", "after 'if'")
        cond = yield from self._sub()
        self.expect(")", "after the condition of 'if'")
        self.expect("{", "to open the then-branch of 'if'")
        then = yield self._block("}")
        self.expect("}", "to close the then-branch of 'if'")
        self.expect("else", "after the then-branch of 'if' (an 'if' needs both branches)")
        self.expect("{", "to open the else-branch of 'if'")
        other = yield self._block("}")
        self.expect("}", "to close the else-branch of 'if'")
        try:
            return If(cond, then, other)
        except (TypeError, ValueError) as exc:
            raise self.error(str(exc), start) from None

    def _fn(self) -> Generator[Any, Any, Expr]:
        start = self.i
        self.i += 1
        return (yield from self._function("of the fn", "bad fn", start))

    def _flat_block(self, closing: str) -> tuple[Expr | None, list[str]]:
        """Read ``%n = ...;`` lines and then a result up to ``closing``, as long as
        :meth:`_simple` reads each: the block's result, or ``None`` at the first
        line of another kind, with the ``%n`` defined so far (the cursor at that
        line, where :meth:`_block` goes on).

        The body of a fused function is such a block: read without the
        generator machinery of :meth:`_block`, which costs more than its lines.
        """
        toks = self.toks
        graph = self.graph
        named_here: list[str] = []
        while True:
            line = self.i
            tok = toks[line]
            if toks[line + 1] == "=":
                if tok[:1] != "%" or not tok[1:2].isdigit() or tok in graph:
                    return None, named_here  # _block says what is wrong
                self.i += 2
                e = self._simple()
                if e is None or toks[self.i] != ";":
                    self.i = line
                    return None, named_here
                self.i += 1
                graph[tok] = e
                named_here.append(tok)
            else:
                e = self._simple()
                if e is None or toks[self.i] != closing:
                    self.i = line
                    return None, named_here
                for name in named_here:
                    del graph[name]
                return e, named_here

    def _block(self, closing: str, named_here: list[str] | None = None) -> _Step:
        """``stmt; stmt; ... result`` up to (not including) ``closing``; ``named_here``
        are the ``%n`` of its lines already read (by :meth:`_flat_block`)."""
        toks = self.toks
        mark = len(self.undo)
        lets: list[tuple[Var, Expr]] = []
        graph = self.graph
        variables = self.vars
        undo = self.undo
        # Graph names cannot be redefined, so leaving the block just drops them.
        if named_here is None:
            named_here = []
        while True:
            tok = toks[self.i]
            if tok[:1] == "%" and toks[self.i + 1] == "=":
                if not tok[1:2].isdigit():
                    raise self.error(
                        f"only graph names like %0 are bound with '='; write 'let {tok} = ...;' "
                        "to bind a variable"
                    )
                if tok in graph:
                    raise self.error(f"duplicate definition of {tok}")
                self.i += 2
                if toks[self.i] == "fn":
                    # A fused function: as _fn, without a generator when its body
                    # is flat (the common case, see _flat_block).
                    at = self.i
                    self.i += 1
                    head = self._function_head("of the fn")
                    e, named = self._flat_block("}")
                    if e is None:
                        e = yield self._block("}", named)
                    e = self._function_tail(head, e, "of the fn", "bad fn", at)
                    if toks[self.i] == "(" or toks[self.i][:1] == ".":
                        e = yield from self._postfix(e)
                else:
                    e = self._simple()
                    if e is None:
                        e = yield self._expr()
                if toks[self.i] != ";":
                    raise self.error(
                        f"expected ';' after the definition of {tok}, got "
                        f"{describe_token(toks[self.i])}"
                    )
                self.i += 1
                graph[tok] = e
                named_here.append(tok)
            elif tok == "let":
                self.i += 1
                tok = toks[self.i]
                if tok[:1] != "%" or tok[1:2].isdigit():
                    raise self.error(
                        f"expected a variable name like %x after 'let', got {describe_token(tok)}"
                    )
                ty = None
                if tok[-1:] == "]" and tok[1:2] != '"':
                    # one token from the lexer: %x: Tensor[(2, 8), float32]
                    tok, _, ty_tok = tok.partition(": ")
                    ty = self.tensor_types.get(ty_tok)
                    if ty is None:
                        ty = self.tensor_types[ty_tok] = self._tensor_token(ty_tok, len(tok) + 2)
                name = tok[1:] if tok[1:2] not in ('"', "") else self._name(tok)
                self.i += 1
                if ty is None and toks[self.i] == ":":
                    self.i += 1
                    ty = self._type()
                if toks[self.i] != "=":
                    self.expect("=", f"after 'let {tok}'")
                self.i += 1
                v = Var._unchecked(name, ty)
                if toks[self.i] == "fn":
                    # A let-bound function may call itself.
                    self._define(self.vars, name, v)
                e = self._simple()
                if e is None:
                    e = yield self._expr()
                if toks[self.i] != ";":
                    raise self.error(
                        f"expected ';' after the value of 'let {tok}', got "
                        f"{describe_token(toks[self.i])}"
                    )
                self.i += 1
                undo.append((variables, name, variables.get(name, _MISSING)))
                variables[name] = v
                lets.append((v, e))
            else:
                if tok == closing or tok == EOF:
                    where = "end of input" if tok == EOF else f"'{tok}'"
                    raise self.error(
                        f"expected an expression before {where}: a block ends with "
                        "its result expression (no ';' after it)"
                    )
                e = self._simple()
                if e is None:
                    e = yield self._expr()
                break
        if toks[self.i] != closing:
            tok = toks[self.i]
            if closing == EOF:
                raise self.error(
                    f"expected end of input after the result expression, got "
                    f"{describe_token(tok)} (statements end with ';')"
                )
            raise self.error(
                f"expected '{closing}' after the block's result expression, got "
                f"{describe_token(tok)} (statements end with ';')"
            )
        self._restore(mark)
        for name in named_here:
            del graph[name]
        for v, value in reversed(lets):
            e = Let._unchecked(v, value, e)  # a Var and two expressions
        return e


# -- helpers ------------------------------------------------------------------------------


def _is_ident(tok: str) -> bool:
    c = tok[:1]
    # (a one-token type, Tensor[...], is not one)
    return (c.isalpha() or c == "_") and tok[-1] != "]"


def _metadata_line(text: str) -> re.Match[str] | None:
    """The ``#[metadata]`` line of ``text``, if any.

    (str.find, then the pattern where the marker starts a line: searching with
    the pattern alone scans every line start, 3% of parsing a BERT-like module.)
    """
    pos = text.find("#[metadata]")
    while pos >= 0:
        if pos == 0 or text[pos - 1] == "\n":
            m = _METADATA_LINE.match(text, pos)
            if m is not None:
                return m
        pos = text.find("#[metadata]", pos + 1)
    return None


def _index(toks: list[str], tok: str, start: int, stop: int) -> int:
    """The index of the first ``tok`` in ``toks[start:stop]``, or -1."""
    try:
        return toks.index(tok, start, stop)
    except ValueError:
        return -1


def _suffix(tok: str) -> str:
    m = re.search(r"[fiu]\d+\Z", tok)
    return m.group(0) if m else ""


def _is_number(tok: str) -> bool:
    """Whether ``tok`` is (or, malformed, tries to be) a number: ``3``, ``-1.5f32``, ``nan``."""
    c = tok[:1]
    return c.isdigit() or (c == "-" and tok != "->") or _SPECIAL_FLOAT.match(tok) is not None


def _attr_error_key(op: Expr, message: str, keys_at: Mapping[str, int]) -> str | None:
    """The attribute given in the call that ``message`` (from the Call constructor) names."""
    if type(op) is not Op:
        return None
    for key in keys_at:
        # Converters say "nn.softmax.axis must be ...", the schema check
        # "has no attribute 'paddin'" or "takes no attributes, got [...]".
        named = re.escape(f"{op.name}.{key}") + r"(?![\w.])"
        if re.match(named, message) or f"attribute {key!r}" in message:
            return key
    if "takes no attributes" in message:
        return next(iter(keys_at), None)
    return None


def _shape_of_text(text: str) -> tuple[int, ...] | None:
    """The shape in a metadata entry's ``(2, 3)`` (without parentheses), ``None`` if malformed."""
    if not text.strip():
        return ()
    parts = [p.strip() for p in text.split(",")]
    if len(parts) > 1 and not parts[-1]:
        parts.pop()  # (4,)
    if not all(p.isascii() and p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def _array_size(shape: Sequence[int], itemsize: int) -> int | None:
    """The element count of an array of ``shape``, or ``None`` if numpy cannot make one."""
    nbytes = itemsize
    for d in shape:
        # numpy bounds the product of the nonzero dimensions even when one is 0.
        if d:
            nbytes *= d
            if nbytes > _MAX_BYTES:
                return None
    return math.prod(shape)


def _meta_layout(
    k: str, dtype: str, shape_text: str, fail: Callable[[str], Exception]
) -> tuple[np.dtype, tuple[int, ...], int]:
    """The stored dtype, shape and byte size of metadata entry ``k``, or ``fail(message)``."""
    what = f"meta[Constant][{k}]"
    if dtype not in SUPPORTED_DTYPES:
        raise fail(f"{what}: unknown dtype {dtype!r}")
    shape = _shape_of_text(shape_text)
    if shape is None:
        raise fail(
            f"{what}: bad shape ({shape_text}): expected "
            "non-negative integers separated by ',' like (2, 3), (4,) or ()"
        )
    little = numpy_dtype(dtype).newbyteorder("<")
    size = _array_size(shape, little.itemsize)
    if size is None:
        raise fail(f"{what}: shape {shape} is too large for an array")
    return little, shape, size * little.itemsize


def _metadata_arg(metadata: Any) -> dict[int, np.ndarray]:
    if isinstance(metadata, Mapping):
        if set(metadata) != {"Constant"}:
            raise TypeError(
                "parse: metadata must be a list of arrays or {'Constant': [arrays]}, got a "
                f"mapping with keys {sorted(map(str, metadata))}"
            )
        metadata = metadata["Constant"]
    if isinstance(metadata, (str, bytes)) or not isinstance(metadata, Sequence):
        raise TypeError(
            f"parse: metadata must be a list of arrays or {{'Constant': [arrays]}}, got "
            f"{type(metadata).__name__}"
        )
    out = {}
    for k, item in enumerate(metadata):
        if isinstance(item, Constant):
            item = item.data
        if not isinstance(item, np.ndarray):
            raise TypeError(
                f"parse: metadata[{k}] must be a numpy array, got {type(item).__name__}"
            )
        out[k] = item
    return out
