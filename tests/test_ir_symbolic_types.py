"""Symbolic dims in types: ``TensorType`` holds them, the text format prints and parses them,
and structural equality and hashing map size variables like bound variables."""

from __future__ import annotations

import pytest
from irpass.errors import ParseError
from irpass.ir import structural_equal, structural_hash
from irpass.ir.dims import SizeVar, floordiv
from irpass.ir.parser import parse
from irpass.ir.types import TensorType

n, m, seq = SizeVar("n"), SizeVar("m"), SizeVar("seq")


def test_tensor_type_holds_symbolic_dims_next_to_ints():
    t = TensorType((n, seq * 4, 3), "float32")
    assert t.shape == (n, 4 * seq, 3) and not t.is_static
    assert TensorType((2, 3)).is_static
    assert t == TensorType((n, seq + seq + seq + seq, 3)) and hash(t) == hash(
        TensorType((n, seq * 4, 3)))
    assert t.size == n * seq * 12
    assert str(t) == "Tensor[(n, seq * 4, 3), float32]"
    with pytest.raises(TypeError, match=r"shape\[1\] must be an int or a symbolic dim"):
        TensorType((n, "seq"))


@pytest.mark.parametrize("dims", [
    "n, 128", "n, (seq + 1) floordiv 2, 4", "n * seq, seq mod 3 + min(seq, 8)", "max(n, 2) - 1,",
])
def test_symbolic_shapes_round_trip_through_the_text_format(dims):
    text = f"def @main(%x: Tensor[({dims}), float32]) -> Tensor[({dims}), float32] {{\n  %x\n}}"
    mod = parse(text)
    ty = mod["main"].params[0].type_annotation
    assert isinstance(ty, TensorType) and not ty.is_static
    again = parse(str(mod))
    assert structural_equal(mod, again)
    assert again["main"].params[0].type_annotation == ty


def test_parsed_dims_are_the_expressions_they_spell():
    mod = parse("def @main(%x: Tensor[(n, (seq + 1) floordiv 2), float32]) { %x }")
    assert mod["main"].params[0].type_annotation.shape == (n, floordiv(seq + 1, 2))


@pytest.mark.parametrize("dims, column, words", [
    ("n, +", 26, "expected a dimension"),
    ("3.5,", 23, "expected a dimension"),
    ("n - 5 - n, 3", 23, "negative"),
    ("n floordiv m,", 23, "symbolic"),
])
def test_bad_symbolic_dims_name_the_place(dims, column, words):
    with pytest.raises(ParseError, match=words) as info:
        parse(f"def @main(%x: Tensor[({dims}), float32]) {{ %x }}")
    assert (info.value.line, info.value.column) == (1, column)


def _fn(a: str, b: str) -> str:
    return f"def @main(%x: Tensor[({a}), float32], %y: Tensor[({b}), float32]) {{ %x }}"


def test_structural_equality_renames_size_variables_one_to_one():
    base = parse(_fn("n, n * 4", "m,"))
    renamed = parse(_fn("k, k * 4", "q,"))
    assert structural_equal(base, renamed)
    assert structural_hash(base) == structural_hash(renamed)
    assert not structural_equal(base, parse(_fn("k, k * 4", "k,")))  # two vars become one
    assert not structural_equal(base, parse(_fn("k, k * 3", "q,")))
    assert not structural_equal(base, parse(_fn("k, 4", "q,")))  # a symbol is not an int


def test_symbolic_attribute_values_round_trip_through_the_text_format():
    from irpass.ir import Attrs
    from irpass.ir.parser import parse_expr

    # an op-less function attr keeps any attribute value, so the parser is what is tested
    values = [n, n * 4 - 1, floordiv(seq + 1, 2), -n + 9]
    for value in values:
        attrs = Attrs({"shape": (value, -1, 2.5, "s", None)})
        from irpass.ir.literals import format_attr_value

        text = format_attr_value(attrs["shape"])
        fn = parse_expr(f"fn (%x: Tensor[(2,), float32], shape={text}) {{ %x }}")
        assert fn.attrs["shape"] == (value, -1, 2.5, "s", None), text
    nested = parse_expr("fn (%x: Tensor[(2,), float32], a=[(1, 2), (n + 1) floordiv 2]) { %x }")
    assert nested.attrs["a"] == ((1, 2), floordiv(n + 1, 2))
