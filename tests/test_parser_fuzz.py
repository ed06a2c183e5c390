"""Malformed text only ever gives a located ParseError: seeded mutations of real module texts,
and nesting deeper than any recursion limit.

The mutations are deterministic (fixed seeds), so a failure names a text that
reproduces it; the whole file runs in a few seconds.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import irpass
import irpass.testing.models
import pytest
from irpass import ParseError
from irpass.ir.lexer import Tokens
from irpass.ir.parser import parse_expr

# A module with every construct of the format: headers, comments, typed params
# (tuple and function types), let (quoted name), graph names, if, fn with
# attributes, calls of values, tuples and projections, attributes of every
# kind, scalar and inline constants, and a metadata constant.
RICH = """#[version = "irpass 0.1"]
// a comment
def @f(%a: Tensor[(2, 3), float32], %b: (float32, Tensor[(3,), int64]),
       %g: fn (float32) -> float32) -> Tensor[(2, 3), float32] {
  let %t: Tensor[(2, 3), float32] = add(%a, meta[Constant][0]);
  %0 = nn.softmax(%t, axis=-1);
  %1 = fn (%y: float32, Primitive=1) -> float32 { %g(%y) };
  %2 = if (less(%b.0, 1.5f32)) { %0 } else { { let %"q v" = negative(%0); %"q v" } };
  /* block comment */
  %3 = const(int32, (2,), [1, -2]);
  %4 = reshape(%2, newshape=[-1, 3]);
  %5 = (%4, %3, True, -0.0f64, nan, 3u8, %1);
  %5.0
}
def @main(%x: Tensor[(2, 3), float32]) {
  @f(%x, (1f32, const(int64, (3,), [1, 2, 3])), fn (%z: float32) { multiply(%z, 2f32) })
}
#[metadata]
meta[Constant][0] = float32 (2, 3) AACAPwAAAEAAAEBAAACAQAAAoEAAAMBA
"""

FILENAME = "fuzz.ir"


def check_parse(text: str) -> None:
    """``parse`` succeeds or raises a ParseError with a position, a caret and the file."""
    try:
        irpass.parse(text, FILENAME)
    except ParseError as err:
        where = f"for the text {text!r}"
        assert not err.message.startswith("internal error"), f"{err} {where}"
        assert 1 <= err.line <= text.count("\n") + 1, where
        assert err.column >= 1, where
        assert err.filename == FILENAME, where
        rendered = str(err)
        assert rendered.startswith(f"{FILENAME}:{err.line}:{err.column}: error: "), where
        if err.source_line:
            assert "\n  " + " " * (err.column - 1) + "^" in rendered, where
        else:
            # Only a text with nothing to read shows no line (it has no caret to show).
            assert not Tokens(text).toks[0], where


def test_every_truncation_of_a_module():
    mod = irpass.parse(RICH)  # whole, it is a valid module
    assert {gv.name_hint for gv in mod.functions} == {"f", "main"}
    assert irpass.structural_equal(irpass.parse(str(mod)), mod)
    for end in range(len(RICH)):
        check_parse(RICH[:end])


def _token_spans(text: str) -> list[tuple[int, int]]:
    tokens = Tokens(text)
    return [m.span(1) for m in tokens.pattern.finditer(text) if m.group(1)]


def _mutations(text: str, seed: int, count: int) -> Iterator[str]:
    rng = random.Random(seed)
    spans = _token_spans(text)
    noise = '()[]{},;=:%@"-.0123456789eEfinx#/*\n\t '
    for _ in range(count):
        kind = rng.randrange(6)
        a, b = rng.choice(spans)
        if kind == 0:  # truncation
            yield text[: rng.randrange(len(text) + 1)]
        elif kind == 1:  # token deletion
            yield text[:a] + text[b:]
        elif kind == 2:  # token duplication
            yield text[:b] + " " + text[a:b] + text[b:]
        elif kind == 3:  # a token replaced by another of the text
            c, d = rng.choice(spans)
            yield text[:a] + text[c:d] + text[b:]
        elif kind == 4:  # a flipped bit (of an ASCII byte, keeping the text valid UTF-8)
            data = bytearray(text.encode())
            pos = rng.randrange(len(data))
            if data[pos] < 0x80:
                data[pos] ^= 1 << rng.randrange(7)
            yield data.decode()
        else:  # an inserted character
            pos = rng.randrange(len(text) + 1)
            yield text[:pos] + rng.choice(noise) + text[pos:]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mutations_of_a_module_with_every_construct(seed):
    for text in _mutations(RICH, seed, 600):
        check_parse(text)


@pytest.mark.parametrize("seed", [0, 1])
def test_mutations_of_resnet(seed):
    text = str(irpass.testing.models.resnet())
    for t in _mutations(text, seed, 150):
        check_parse(t)
    # The metadata section: each entry's shape is rewritten, the data kept.
    rng = random.Random(seed)
    head, meta = text.split("#[metadata]\n")
    lines = meta.splitlines()
    for k in rng.sample(range(len(lines)), 8):
        line = lines[k]
        shape = line[line.index("(") + 1 : line.index(")")]
        dims = [d.strip() for d in shape.split(",") if d.strip()]
        for bad in (
            ", ".join("-" + d for d in dims),  # the same size, negative dimensions
            ", ".join(d + "0" * 20 for d in dims),  # too big for any array
            " ".join(dims),  # no commas
            ", ".join(dims[:-1] + ["0", str(2**70)]),  # zero elements, one dimension too big
            shape + ", x",
        ):
            mutated = line.replace(f"({shape})", f"({bad})", 1)
            check_parse(head + "#[metadata]\n" + "\n".join(lines[:k] + [mutated] + lines[k + 1 :]))


N = 100_000  # far deeper than Python's recursion limit

DEEP = {
    "parentheses": "(" * N + "%x" + ")" * N,
    "truncated calls": "add(" * N + "%x",
    "blocks": "{ " * N + "%x" + " }" * N,
    "truncated functions": "fn () { " * N,
    "truncated if conditions": "if (" * N,
    "projections": "%x" + ".0" * N,
    "attribute lists": "reshape(%x, newshape=" + "[" * N + "]" * N + ")",
    "types": "def @f(%x: " + "(" * N + ")" * N + ") { %x }",
    "function types": "def @f(%x: " + "fn (" * N,
}


def test_deep_nesting_parses_or_is_a_parse_error():
    for text in DEEP.values():
        check_parse(text)
    # and what parses is read as written
    e = parse_expr("(" * N + "%x" + ")" * N)
    assert isinstance(e, irpass.ir.Var)
    e = parse_expr("%x" + ".0" * N)
    for _ in range(N):
        assert isinstance(e, irpass.ir.TupleGetItem)
        e = e.tuple_value
    assert isinstance(e, irpass.ir.Var)
