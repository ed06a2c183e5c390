"""Textual pipelines: ``"InferType,FoldConstant,seq(SimplifyExpr,CSE),FuseOps{fuse_opt_level=2}"``.

Grammar (whitespace between tokens is ignored)::

    pipeline := item (',' item)*
    item     := 'seq' '(' pipeline ')'          a nested Sequential
              | NAME options?                    a pass, 'default' or a named pipeline
    options  := '{' [key '=' value (',' key '=' value)*] '}'
    value    := WORD | STRING | '[' [value (',' value)*] ']' | '{' [key '=' value (',' ...)*] '}'

A ``WORD`` is a run of characters other than whitespace, quotes and
``,(){}[]=``: ``42`` and ``-3`` are ints, ``0.5`` and ``1e-3`` floats,
``true``/``false`` bools, ``none`` is ``None``, anything else a string
(``NHWC``, ``nn.conv2d``). A ``STRING`` is quoted with ``"`` or ``'``
(backslash escapes ``\\\\ \\" \\' \\n \\t``). Dict keys are words or strings.

Options are checked against the signature of the pass's factory: an unknown
name or a missing required argument is an error, and a value is converted to
the parameter's annotation when that is ``int``, ``float``, ``bool``, ``str``,
``list[...]``, ``tuple[...]``, ``dict[...]``, a ``Literal``, ``Optional[...]``
or a union of these (a word given for a ``str`` parameter is taken as
written: ``header=1.50`` is ``"1.50"``).

Names: ``seq`` and ``default`` are reserved. ``default`` is
:func:`~irpass.transform.default_pipeline` (``default{opt_level=3}``); a key
of ``named`` is that named pipeline's text, parsed in turn (it wins over a
pass of the same name); any other name is a registered pass.
"""

from __future__ import annotations

import collections.abc as cabc
import difflib
import functools
import inspect
import re
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

from ..errors import PipelineSyntaxError
from .passes import Pass, Sequential
from .pipeline import default_pipeline
from .registry import close_pass_names, get_pass, get_pass_entry

__all__ = ["parse_pipeline", "split_pipeline", "PipelineSyntaxError", "MAX_DEPTH"]

#: How deeply ``seq(...)``, lists, dicts and named pipelines may nest.
MAX_DEPTH = 64

RESERVED = ("seq", "default")

_PUNCT = ",(){}[]="
_WORD = re.compile(r"[^\s,(){}\[\]=\"']+")
_INT = re.compile(r"[+-]?\d+(?:_\d+)*")
_FLOAT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t"}
_WORDS = {"true": True, "True": True, "false": False, "False": False, "none": None,
          "None": None}


def parse_pipeline(
    text: str, *, named: Mapping[str, str] | None = None, opt_level: int = 2
) -> Sequential:
    """The passes ``text`` describes, as a :class:`Sequential` named ``"pipeline"``.

    ``seq(...)`` becomes a nested Sequential named ``"seq"``, ``default`` the
    default pipeline for ``opt_level`` (unless it says ``default{opt_level=N}``),
    a named pipeline a Sequential named after it. Every
    error -- syntax, unknown pass or option (with close matches), an option
    of the wrong type, a cycle among named pipelines -- is a
    :class:`PipelineSyntaxError` with the column and a caret; a pass factory
    that refuses its options is reported the same way::

        parse_pipeline("InferType,seq(FoldConstant,SimplifyExpr),FuseOps{fuse_opt_level=2}")
        parse_pipeline("fast,PrintIR", named={"fast": "InferType,FoldConstant"})
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_pipeline: text must be a str, got {type(text).__name__}")
    named = dict(named or {})
    for key, value in named.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                f"parse_pipeline: named pipelines map names to pipeline text, got {key!r}: "
                f"{value!r}"
            )
        if key in RESERVED:
            raise ValueError(f"parse_pipeline: {key!r} is reserved and cannot name a pipeline")
    default = functools.partial(default_pipeline, opt_level=opt_level)
    passes = _Parser(text, named, (), 0, default).parse()
    return Sequential(passes, opt_level=0, name="pipeline")


def split_pipeline(text: str) -> list[str]:
    """The top-level items of pipeline string ``text`` as written, trimmed:
    ``"FoldConstant, seq(A, B)"`` gives ``["FoldConstant", "seq(A, B)"]`` (what
    ``irpass pipeline`` shows next to each pass). Raises :class:`PipelineSyntaxError`
    for an unterminated string."""

    def fail(message: str, pos: int) -> PipelineSyntaxError:
        return PipelineSyntaxError(message, text, pos + 1)

    items, start, depth = [], 0, 0
    for tok in _tokenize(text, fail):
        if tok.kind == "punct" and tok.text in "({[":
            depth += 1
        elif tok.kind == "punct" and tok.text in ")}]":
            depth -= 1
        elif (tok.kind == "punct" and tok.text == "," and depth == 0) or tok.kind == "end":
            items.append(text[start : tok.pos].strip())
            start = tok.pos + 1
    return items


# -- tokens --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    kind: str  # "punct", "word", "string" or "end"
    text: str  # the source text (a string's unquoted value)
    pos: int  # 0-based offset of its first character


def _tokenize(text: str, fail: Callable[[str, int], Exception]) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in _PUNCT:
            tokens.append(_Token("punct", c, i))
            i += 1
        elif c in "\"'":
            value, end = _read_string(text, i, fail)
            tokens.append(_Token("string", value, i))
            i = end
        else:
            m = _WORD.match(text, i)
            assert m is not None  # every other character starts a word
            tokens.append(_Token("word", m.group(), i))
            i = m.end()
    tokens.append(_Token("end", "", n))
    return tokens


def _read_string(text: str, start: int, fail: Callable[[str, int], Exception]) -> tuple[str, int]:
    quote = text[start]
    out: list[str] = []
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == quote:
            return "".join(out), i + 1
        if c == "\\":
            nxt = text[i + 1: i + 2]
            if nxt not in _ESCAPES:
                raise fail(f"unknown escape '\\{nxt}' in a string (known: \\\\ \\\" \\' \\n \\t)",
                           i)
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        out.append(c)
        i += 1
    raise fail(f"string opened here is never closed (missing {quote})", start)


# -- values --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Value:
    """A parsed option value, kept with its source so conversion can point at it."""

    kind: str  # "word", "string", "list" or "dict"
    pos: int
    text: str = ""  # word / string
    items: tuple = ()  # list: _Value...; dict: (key str, key pos, _Value)...

    def natural(self) -> Any:
        """The value as the text says, with no annotation to go by."""
        if self.kind == "word":
            return _word_value(self.text)
        if self.kind == "string":
            return self.text
        if self.kind == "list":
            return [v.natural() for v in self.items]
        return {k: v.natural() for k, _, v in self.items}

    def describe(self) -> str:
        if self.kind == "list":
            return "a list"
        if self.kind == "dict":
            return "a dict"
        if self.kind == "string":
            return f"the string {self.text!r}"
        value = _word_value(self.text)
        kind = "a word" if isinstance(value, str) else f"{type(value).__name__}"
        return f"{self.text} ({kind})"


def _word_value(word: str) -> Any:
    if word in _WORDS:
        return _WORDS[word]
    if _INT.fullmatch(word):
        return int(word)
    if _FLOAT.fullmatch(word):
        return float(word)
    return word


class _ConvError(Exception):
    """A value that does not fit an annotation, at ``pos``."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


_SIMPLE_NAMES: dict[str, Any] = {
    "int": int, "float": float, "bool": bool, "str": str, "list": list, "tuple": tuple,
    "dict": dict, "Any": Any, "None": type(None),
}
_SEQUENCES = (list, tuple, cabc.Sequence, cabc.Iterable, cabc.Collection)
_MAPPINGS = (dict, cabc.Mapping)


def _string_annotation(ann: str) -> Any:
    """A best-effort reading of an annotation that could not be evaluated."""
    parts = [p.strip() for p in ann.split("|")]
    if all(p in _SIMPLE_NAMES for p in parts):
        types_ = tuple(_SIMPLE_NAMES[p] for p in parts)
        return types_[0] if len(types_) == 1 else Union[types_]  # noqa: UP007
    return Any


def _type_text(ann: Any) -> str:
    if isinstance(ann, type):
        return ann.__name__
    return str(ann).replace("typing.", "")


def _convert(value: _Value, ann: Any) -> Any:
    """``value`` converted to annotation ``ann``; a ``_ConvError`` if it does not fit."""
    if isinstance(ann, str):
        ann = _string_annotation(ann)
    if ann is inspect.Parameter.empty or ann is Any or ann is object:
        return value.natural()
    origin = get_origin(ann)
    args = get_args(ann)
    if origin is Union or origin is types.UnionType:
        return _convert_union(value, ann, args)
    if origin is Literal:
        got = value.natural()
        for choice in args:
            if got == choice and type(got) is type(choice):
                return choice
            if value.kind == "word" and isinstance(choice, str) and value.text == choice:
                return choice
        raise _ConvError(f"expects one of {', '.join(map(repr, args))}, got "
                         f"{value.describe()}", value.pos)
    if ann is type(None):
        if value.kind == "word" and _word_value(value.text) is None:
            return None
        raise _ConvError(f"expects none, got {value.describe()}", value.pos)
    target = origin or ann
    if target in (bool, int, float, str):
        return _convert_scalar(value, target, ann)
    if target in _SEQUENCES:
        return _convert_sequence(value, target, args, ann)
    if target in _MAPPINGS:
        if value.kind != "dict":
            raise _ConvError(f"expects {_type_text(ann)}, got {value.describe()}", value.pos)
        key_ann, val_ann = args if len(args) == 2 else (Any, Any)
        out = {}
        keep_keys = key_ann in (Any, str, inspect.Parameter.empty)
        for key, key_pos, item in value.items:
            if not keep_keys:  # e.g. dict[int, str]: {1=a}
                key = _convert(_Value("word", key_pos, key), key_ann)
            out[key] = _convert(item, val_ann)
        return out
    got = value.natural()
    if isinstance(ann, type) and not isinstance(got, ann):
        raise _ConvError(
            f"expects {_type_text(ann)}, which a pipeline string cannot give "
            f"(got {value.describe()})", value.pos
        )
    return got


def _convert_union(value: _Value, ann: Any, args: tuple) -> Any:
    got = value.natural()
    if got is None and type(None) in args:
        return None
    # the member the text already is goes first: 'int | str' keeps 3 an int
    members = sorted((a for a in args if a is not type(None)),
                     key=lambda a: (get_origin(a) or a) is not type(got))
    for member in members:
        try:
            return _convert(value, member)
        except _ConvError:
            continue
    raise _ConvError(f"expects {_type_text(ann)}, got {value.describe()}", value.pos)


def _convert_scalar(value: _Value, target: type, ann: Any) -> Any:
    if target is str:
        if value.kind in ("word", "string"):
            return value.text
    elif value.kind == "word":
        got = _word_value(value.text)
        if target is bool and isinstance(got, bool):
            return got
        if target is int and isinstance(got, int) and not isinstance(got, bool):
            return got
        if target is float and isinstance(got, (int, float)) and not isinstance(got, bool):
            return float(got)
        if target is float and value.text.lower().lstrip("+-") in ("inf", "nan"):
            return float(value.text)
    raise _ConvError(f"expects {_type_text(ann)}, got {value.describe()}", value.pos)


def _convert_sequence(value: _Value, target: Any, args: tuple, ann: Any) -> Any:
    if value.kind != "list":
        raise _ConvError(f"expects {_type_text(ann)} (write [a, b]), got {value.describe()}",
                         value.pos)
    items = value.items
    if target is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        if len(args) != len(items):
            raise _ConvError(f"expects {_type_text(ann)}: {len(args)} items, got {len(items)}",
                             value.pos)
        return tuple(_convert(v, a) for v, a in zip(items, args, strict=True))
    item_ann = args[0] if args else Any
    out = [_convert(v, item_ann) for v in items]
    return tuple(out) if target is tuple else out


# -- parser --------------------------------------------------------------------------------


class _Parser:
    """Recursive descent over one pipeline text; depth is capped at :data:`MAX_DEPTH`."""

    def __init__(self, text: str, named: dict[str, str], stack: tuple[str, ...],
                 depth: int, default: Callable[..., Pass]) -> None:
        self.text = text
        self.default = default  # what the item 'default' builds
        self.named = named
        self.stack = stack  # the named pipelines being expanded, outermost first
        self.depth = depth
        self.tokens = _tokenize(text, self._error)
        self.i = 0

    def _error(self, message: str, pos: int) -> PipelineSyntaxError:
        if self.stack:
            message = f"in named pipeline {self.stack[-1]!r}: {message}"
        return PipelineSyntaxError(message, self.text, pos + 1)

    def _peek(self) -> _Token:
        return self.tokens[self.i]

    def _next(self) -> _Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def _at(self, punct: str) -> bool:
        tok = self.tokens[self.i]
        return tok.kind == "punct" and tok.text == punct

    def _enter(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self._error(f"nested more than {MAX_DEPTH} levels deep", pos)

    def parse(self) -> list[Pass]:
        if self._peek().kind == "end":
            raise self._error("empty pipeline: expected a pass name", 0)
        passes = self._items(None)
        tok = self._peek()
        if tok.kind != "end":
            if tok.text == ")":
                raise self._error("unbalanced ')': no 'seq(' to close", tok.pos)
            raise self._error(f"expected ',' or the end of the pipeline, got {_show(tok)}",
                              tok.pos)
        return passes

    def _items(self, seq: _Token | None) -> list[Pass]:
        """Items up to a ')' (not consumed) when in the ``seq(`` starting at token ``seq``."""
        passes = [self._item()]
        while self._at(","):
            self._next()
            passes.append(self._item())
        if seq is not None and not self._at(")"):
            tok = self._peek()
            raise self._error(
                f"expected ',' or ')' closing the 'seq(' at column {seq.pos + 1}, "
                f"got {_show(tok)}", tok.pos
            )
        return passes

    def _item(self) -> Pass:
        tok = self._next()
        if tok.kind != "word":
            prev = self.tokens[self.i - 2] if self.i > 1 else None
            if prev is not None and prev.kind == "punct" and prev.text == "," and (
                    tok.kind == "end" or tok.text == ")"):
                raise self._error("trailing ',': expected a pass name after it", tok.pos)
            raise self._error(f"expected a pass name, got {_show(tok)}", tok.pos)
        name = tok.text
        if name == "seq":
            return self._seq(tok)
        if name == "default":
            return self._create(name, tok, self.default, self.default)
        if name in self.named:
            return self._named(tok)
        try:
            entry = get_pass_entry(name)
        except KeyError:
            raise self._error(f"unknown pass {name!r}{self._suggest(name)}", tok.pos) from None
        return self._create(name, tok, entry.factory, lambda **kw: get_pass(name, **kw))

    def _seq(self, tok: _Token) -> Pass:
        if self._at("{"):
            raise self._error("'seq' takes no options: write seq(A,B)", self._peek().pos)
        opener = self._next()
        if opener.kind != "punct" or opener.text != "(":
            raise self._error(f"expected '(' after 'seq', got {_show(opener)} ('seq' is "
                              "reserved for nested pipelines)", opener.pos)
        if self._at(")"):
            raise self._error("empty 'seq()': give it at least one pass", self._peek().pos)
        self._enter(opener.pos)
        passes = self._items(tok)
        self._next()  # the ')' _items checked
        self.depth -= 1
        return Sequential(passes, opt_level=0, name="seq")

    def _named(self, tok: _Token) -> Pass:
        name = tok.text
        if self._at("{"):
            raise self._error(f"named pipeline {name!r} takes no options", self._peek().pos)
        if name in self.stack:
            cycle = " -> ".join((*self.stack[self.stack.index(name):], name))
            raise self._error(f"named pipelines form a cycle: {cycle}", tok.pos)
        self._enter(tok.pos)
        inner = _Parser(self.named[name], self.named, (*self.stack, name), self.depth,
                        self.default)
        passes = inner.parse()
        self.depth -= 1
        return Sequential(passes, opt_level=0, name=name)

    def _suggest(self, name: str) -> str:
        close = close_pass_names(name)
        others = [*self.named, *RESERVED]
        close += [n for n in difflib.get_close_matches(name, others, n=2) if n not in close]
        return f"; did you mean {', '.join(map(repr, close[:3]))}?" if close else ""

    # options: [(key, key pos, _Value)]

    def _options(self) -> list[tuple[str, int, _Value]]:
        return list(self._dict_body(self._next(), is_options=True))

    def _dict_body(self, opener: _Token, is_options: bool) -> tuple:
        self._enter(opener.pos)
        entries: list[tuple[str, int, _Value]] = []
        seen: dict[str, int] = {}
        what = "option" if is_options else "key"
        if not self._at("}"):
            while True:
                key = self._next()
                if key.kind not in ("word", "string") or (
                        is_options and not key.text.isidentifier()):
                    expected = "an option name" if is_options else "a key"
                    raise self._error(f"expected {expected}, got {_show(key)}", key.pos)
                if key.text in seen:
                    raise self._error(f"{what} {key.text!r} given twice (first at column "
                                      f"{seen[key.text] + 1})", key.pos)
                seen[key.text] = key.pos
                eq = self._next()
                if eq.text != "=" or eq.kind != "punct":
                    raise self._error(f"expected '=' after {what} {key.text!r}, got "
                                      f"{_show(eq)}", eq.pos)
                entries.append((key.text, key.pos, self._value()))
                if not self._at(","):
                    break
                self._next()
        close = self._next()
        if close.kind != "punct" or close.text != "}":
            raise self._error(f"expected ',' or '}}' closing the '{{' at column "
                              f"{opener.pos + 1}, got {_show(close)}", close.pos)
        self.depth -= 1
        return tuple(entries)

    def _value(self) -> _Value:
        tok = self._next()
        if tok.kind in ("word", "string"):
            return _Value(tok.kind, tok.pos, tok.text)
        if tok.kind == "punct" and tok.text == "{":
            return _Value("dict", tok.pos, items=self._dict_body(tok, is_options=False))
        if tok.kind == "punct" and tok.text == "[":
            self._enter(tok.pos)
            items: list[_Value] = []
            if not self._at("]"):
                items.append(self._value())
                while self._at(","):
                    self._next()
                    items.append(self._value())
            close = self._next()
            if close.kind != "punct" or close.text != "]":
                raise self._error(f"expected ',' or ']' closing the '[' at column "
                                  f"{tok.pos + 1}, got {_show(close)}", close.pos)
            self.depth -= 1
            return _Value("list", tok.pos, items=tuple(items))
        raise self._error(f"expected a value, got {_show(tok)}", tok.pos)

    # creating passes

    def _create(self, name: str, tok: _Token, factory: Any, make: Callable[..., Pass]) -> Pass:
        options = self._options() if self._at("{") else []
        kwargs = self._bind(name, tok, factory, options)
        try:
            return make(**kwargs)
        except (TypeError, ValueError) as exc:
            text = str(exc) if str(exc).startswith("cannot create") else (
                f"cannot create {name!r}: {exc}")
            raise self._error(text, tok.pos) from exc

    def _bind(self, name: str, tok: _Token, factory: Any,
              options: list[tuple[str, int, _Value]]) -> dict[str, Any]:
        """``options`` checked against ``factory``'s signature and converted."""
        sig = _signature(factory)
        if sig is None:  # no signature to check against: pass the values as written
            return {key: value.natural() for key, _, value in options}
        params = sig.parameters
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
        accepted = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                               p.KEYWORD_ONLY)]
        kwargs: dict[str, Any] = {}
        for key, key_pos, value in options:
            if key not in accepted and not takes_any:
                raise self._error(self._unknown_option(name, key, accepted), key_pos)
            ann = params[key].annotation if key in params else inspect.Parameter.empty
            try:
                kwargs[key] = _convert(value, ann)
            except _ConvError as exc:
                raise self._error(f"option {key!r} of {name!r} {exc}", exc.pos) from None
        for pname, p in params.items():
            if p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if p.kind is p.POSITIONAL_ONLY:
                raise self._error(f"{name!r} needs the positional argument {pname!r}, which "
                                  "a pipeline string cannot give", tok.pos)
            if pname not in kwargs:
                raise self._error(f"{name!r} needs the option {pname!r} (write "
                                  f"{name}{{{pname}=...}})", tok.pos)
        return kwargs

    @staticmethod
    def _unknown_option(name: str, key: str, accepted: list[str]) -> str:
        if not accepted:
            return f"{name!r} takes no options, got {key!r}"
        close = difflib.get_close_matches(key, accepted, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"unknown option {key!r} for {name!r}{hint} (options: {', '.join(accepted)})"


def _signature(factory: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(factory, eval_str=True)
    except (NameError, SyntaxError, TypeError, AttributeError):
        pass  # annotations that do not evaluate: read the strings
    except ValueError:
        return None
    try:
        return inspect.signature(factory)
    except (TypeError, ValueError):
        return None


def _show(tok: _Token) -> str:
    if tok.kind == "end":
        return "the end of the text"
    if tok.kind == "string":
        return f"the string {tok.text!r}"
    return repr(tok.text)
