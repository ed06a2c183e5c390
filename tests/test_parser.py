"""The text parser: what hand-written text parses to, and every kind of ParseError."""

from __future__ import annotations

import math

import irpass
import numpy as np
import pytest
from irpass import ParseError, op
from irpass.ir import (
    Call,
    Constant,
    Function,
    FuncType,
    GlobalVar,
    If,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    parse,
    structural_equal,
    var,
)
from irpass.ir.op import AttrField, OpPattern, register_op
from irpass.ir.parser import parse_expr, read_headers

T3 = TensorType((3,), "float32")
ADD = Op.get("add")


def _any(value, where):
    return value


def _first(arg_types, attrs):
    return arg_types[0]


try:
    ANY_ATTRS = Op.get("test.parser.any")
except ValueError:
    ANY_ATTRS = register_op(
        "test.parser.any",
        num_inputs=1,
        type_rel=_first,
        kernel=lambda a, at: a[0],
        pattern=OpPattern.OPAQUE,
        attrs=[AttrField("v", _any, None)],
        owner="tests",
    )


def main_of(text: str) -> Function:
    return parse(text)["main"]


def fn_text(body: str, params: str = "%x: Tensor[(3,), float32]") -> str:
    return f"def @main({params}) {{\n{body}\n}}\n"


# -- structure ------------------------------------------------------------------------------


def test_params_types_and_a_call():
    f = main_of(
        "def @main(%x: Tensor[(1, 3), float32], %y: Tensor[(3,), float32])"
        " -> Tensor[(1, 3), float32] {\n"
        "  add(%x, %y)\n"
        "}"
    )
    x, y = f.params
    assert (x.name_hint, y.name_hint) == ("x", "y")
    assert x.type_annotation == TensorType((1, 3), "float32")
    assert y.type_annotation == T3
    assert f.ret_type == TensorType((1, 3), "float32")
    assert isinstance(f.body, Call) and f.body.op is ADD
    assert f.body.args[0] is x and f.body.args[1] is y


def test_graph_names_share_nodes_and_add_no_lets():
    f = main_of(fn_text("  %0 = tanh(%x);\n  %1 = add(%0, %0);\n  multiply(%1, %0)"))
    body = f.body
    assert isinstance(body, Call) and body.op.name == "multiply"
    t = body.args[1]
    assert t.op.name == "tanh" and body.args[0].args[0] is t and body.args[0].args[1] is t


def test_let_lines_become_a_let_chain():
    f = main_of(
        fn_text(
            "  let %v: Tensor[(3,), float32] = tanh(%x);\n  let %w = add(%v, %x);\n"
            "  multiply(%w, %v)"
        )
    )
    (x,) = f.params
    outer = f.body
    assert isinstance(outer, Let) and outer.var.name_hint == "v"
    assert outer.var.type_annotation == T3 and outer.value.args[0] is x
    inner = outer.body
    assert isinstance(inner, Let) and inner.var.type_annotation is None
    assert inner.value.args == (outer.var, x)
    assert isinstance(inner.body, Call) and inner.body.args == (inner.var, outer.var)


def test_block_expression_and_shadowing():
    f = main_of(fn_text("  %0 = {\n    let %x = tanh(%x);\n    negative(%x)\n  };\n  add(%0, %x)"))
    (x,) = f.params
    block = f.body.args[0]
    assert isinstance(block, Let)
    assert block.value.args[0] is x  # the value sees the param
    assert block.body.args[0] is block.var  # the body sees the new %x
    assert f.body.args[1] is x  # the block's %x is gone after the block


def test_nested_calls_and_tuples():
    f = main_of(fn_text("  (add(multiply(%x, %x), %x), (%x,), (), (%x), (%x, %x,))"))
    (x,) = f.params
    t = f.body
    assert isinstance(t, Tuple) and len(t.fields) == 5
    assert t.fields[0].op.name == "add" and t.fields[0].args[0].op.name == "multiply"
    assert isinstance(t.fields[1], Tuple) and t.fields[1].fields == (x,)
    assert isinstance(t.fields[2], Tuple) and t.fields[2].fields == ()
    assert t.fields[3] is x
    assert t.fields[4].fields == (x, x)


def test_tuple_projections_chain():
    f = main_of(fn_text("  %0 = ((%x, %x), %x);\n  %0.0.1"))
    body = f.body
    assert isinstance(body, TupleGetItem) and body.index == 1
    assert isinstance(body.tuple_value, TupleGetItem) and body.tuple_value.index == 0


def test_if_fn_closures_and_calls_of_values():
    f = main_of(
        "def @main(%x: Tensor[(3,), float32], %c: Tensor[(), bool]) {\n"
        "  %0 = fn (%y: Tensor[(3,), float32], Primitive=1) -> Tensor[(3,), float32] {\n"
        "    add(%y, %x)\n"
        "  };\n"
        "  if (%c) { %0(%x) } else { fn (%z) { %z }(%x) }\n"
        "}"
    )
    x, c = f.params
    assert isinstance(f.body, If) and f.body.cond is c
    call = f.body.true_branch
    fn = call.op
    assert isinstance(fn, Function) and dict(fn.attrs) == {"Primitive": 1}
    assert fn.ret_type == T3 and fn.body.args[1] is x  # captured
    other = f.body.false_branch
    assert isinstance(other.op, Function) and other.op.params[0].type_annotation is None


def test_recursive_let_bound_function():
    f = main_of(
        fn_text(
            "  let %f = fn (%n: Tensor[(3,), float32]) -> Tensor[(3,), float32] { %f(%n) };\n"
            "  %f(%x)"
        )
    )
    let = f.body
    assert let.value.body.op is let.var and let.body.op is let.var


def test_globals_may_be_used_before_their_definition():
    mod = parse(
        "def @main(%x: Tensor[(3,), float32]) { @helper(%x) }\n"
        "def @helper(%a: Tensor[(3,), float32]) -> Tensor[(3,), float32] { tanh(%a) }"
    )
    assert [gv.name_hint for gv in mod.get_global_vars()] == ["main", "helper"]
    assert mod["main"].body.op is mod.get_global_var("helper")


def test_types():
    f = main_of(
        "def @main(%a: float32, %b: Tensor[(), bool], %c: (Tensor[(3,), int8], (float64,)), "
        "%d: fn (Tensor[(2, 3), float32], int64) -> (), %e: ()) { %a }"
    )
    a, b, c, d, e = (p.type_annotation for p in f.params)
    assert a == TensorType((), "float32") and b == TensorType((), "bool")
    assert c == TupleType([TensorType((3,), "int8"), TupleType([TensorType((), "float64")])])
    assert d == FuncType([TensorType((2, 3), "float32"), TensorType((), "int64")], TupleType([]))
    assert e == TupleType([])


def test_attr_values_of_every_kind():
    def attr(text):
        return main_of(fn_text(f"  test.parser.any(%x, v={text})")).body.attrs["v"]

    assert attr("3") == 3 and type(attr("3")) is int
    assert attr("-3") == -3
    assert attr("2.5") == 2.5 and type(attr("2.5")) is float
    assert attr("1e-05") == 1e-05
    assert attr("inf") == math.inf and attr("-inf") == -math.inf and math.isnan(attr("nan"))
    assert attr("True") is True and attr("False") is False and attr("None") is None
    assert attr('"a\\"b\\n\\u00e9"') == 'a"b\né'
    assert attr("[]") == () and attr("()") == ()
    assert attr('[1, [2.5, "x"], [], None,]') == (1, (2.5, "x"), (), None)
    assert attr("(1, 2)") == (1, 2)


def test_quoted_attr_keys():
    mod = parse('def @main(%x: float32, "my-key"=1, "if"=True) { test.parser.any(%x, "v"=2) }')
    f = mod["main"]
    assert dict(f.attrs) == {"my-key": 1, "if": True}
    assert f.body.attrs["v"] == 2


def test_op_attrs_fill_in_defaults():
    f = main_of(
        "def @main(%x: Tensor[(1, 3, 8, 8), float32], "
        "%w: Tensor[(4, 3, 3, 3), float32]) {\n"
        "  nn.conv2d(%x, %w, padding=[1, 1], channels=4)\n}"
    )
    attrs = f.body.attrs
    assert attrs["padding"] == (1, 1, 1, 1) and attrs["channels"] == 4
    assert attrs["strides"] == (1, 1) and attrs["data_layout"] == "NCHW"


@pytest.mark.parametrize(
    "text, dtype, value",
    [
        ("1.5f32", "float32", 1.5),
        ("1.5", "float32", 1.5),
        ("3", "int32", 3),
        ("-3i64", "int64", -3),
        ("2u8", "uint8", 2),
        ("0.1f16", "float16", np.float16(0.1)),
        ("0.1f64", "float64", 0.1),
        ("-0.0f32", "float32", -0.0),
        ("1e+30f32", "float32", 1e30),
        ("inff32", "float32", np.inf),
        ("-inff64", "float64", -np.inf),
        ("nan", "float32", np.nan),
        ("True", "bool", True),
        ("False", "bool", False),
        ("18446744073709551615u64", "uint64", 2**64 - 1),
    ],
)
def test_scalar_literals(text, dtype, value):
    c = parse_expr(text)
    assert isinstance(c, Constant) and c.data.shape == () and c.data.dtype == np.dtype(dtype)
    expected = np.array(value, dtype=dtype)
    assert c.data.tobytes() == expected.tobytes()


def test_inline_tensor_constants():
    c = parse_expr("const(int16, (2, 2), [1, -2, 3, 4])")
    assert c.data.dtype == np.int16 and c.data.tolist() == [[1, -2], [3, 4]]
    c = parse_expr("const(bool, (3,), [True, False, True])")
    assert c.data.tolist() == [True, False, True]
    c = parse_expr("const(float32, (0, 2), [])")
    assert c.data.shape == (0, 2)
    c = parse_expr("const(float64, (3,), [nan, -inf, 2])")
    assert np.isnan(c.data[0]) and c.data[1] == -np.inf and c.data[2] == 2.0


def test_metadata_section_and_argument():
    text = (
        "def @main(%x: Tensor[(2,), float32]) {\n  add(%x, meta[Constant][0])\n}\n\n"
        "#[metadata]\n"
        "meta[Constant][0] = float32 (2,) AADAPwAAIEA=\n"
    )
    c = main_of(text).body.args[1]
    assert c.data.tolist() == [1.5, 2.5]
    body = "def @main(%x: Tensor[(2,), float32]) { add(%x, meta[relay.Constant][0]) }"
    c = parse(body, metadata=[np.array([4.0, 5.0], np.float32)])["main"].body.args[1]
    assert c.data.tolist() == [4.0, 5.0]
    c = parse(body, metadata={"Constant": [np.array([6.0, 7.0], np.float32)]})["main"].body.args[1]
    assert c.data.tolist() == [6.0, 7.0]


def test_same_meta_index_is_the_same_node():
    f = main_of(
        "def @main(%x: Tensor[(2,), float32]) {\n"
        "  add(meta[Constant][0], meta[Constant][0])\n}\n"
        "#[metadata]\nmeta[Constant][0] = float32 (2,) AADAPwAAIEA=\n"
    )
    assert f.body.args[0] is f.body.args[1]


def test_comments_and_headers_are_read():
    text = (
        '#[version = "irpass 0.1"]\n'
        "// a line comment\n"
        "def @main(%x: Tensor[(3,), float32]) { /* a\nblock comment */\n"
        "  %0 = tanh(%x) /* ty=Tensor[(3,), float32] */;\n  %0 // the result\n}\n"
    )
    assert main_of(text).body.op.name == "tanh"
    assert read_headers('#[version = "irpass 0.1"]\n#[metadata_file = "m.npz"]\ndef') == {
        "version": "irpass 0.1",
        "metadata_file": "m.npz",
    }


def test_bare_expression_text():
    mod = parse("%0 = add(%x, %y);\nmultiply(%0, %x)")
    f = mod["main"]
    assert [p.name_hint for p in f.params] == ["x", "y"]
    assert f.body.args[1] is f.params[0]
    e = parse_expr("fn (%a) { add(%a, %b) }")
    assert isinstance(e, Function) and e.body.args[1].name_hint == "b"
    assert parse("").functions == {}


def test_quoted_names():
    f = main_of('def @main(%"my var": Tensor[(3,), float32], %"0": float32) { (%"my var", %"0") }')
    assert [p.name_hint for p in f.params] == ["my var", "0"]
    assert f.body.fields == f.params
    mod = parse('def @"my.fn"() { 1f32 }')
    assert "my.fn" in mod
    assert main_of('def @main(%"a\\u0041\\n": float32) { %"aA\\n" }').params[0].name_hint == "aA\n"


def test_quoted_names_with_a_bad_escape_are_errors():
    # the same escapes as in strings: \q is not one
    check(err('def @main(%"a\\q": float32) { 1f32 }'), 1, 11, "bad quoted name", "escape")
    check(err(fn_text('  let %"v\\q" = %x;\n  %x')), 2, 7, "bad quoted name")
    check(err(fn_text('  tanh(%"x\\q")')), 2, 8, "bad quoted name")
    check(err('def @"f\\q"() { 1f32 }'), 1, 5, "bad quoted name")
    with pytest.raises(ParseError, match="bad quoted name"):
        parse_expr('add(%"a\\q", %"a\\q")')
    check(err(fn_text('  sum(%x, axis="a\\q")')), 2, 16, "bad string literal")


def test_deep_nesting_parses_without_recursion():
    depth = 5000
    text = "add(" * depth + "%x" + ", %x)" * depth
    e = parse_expr(text)
    n = 0
    while isinstance(e, Call):
        e = e.args[0]
        n += 1
    assert n == depth and isinstance(e, Var)
    blocks = parse_expr("{ " * depth + "%x" + " }" * depth)
    assert isinstance(blocks, Var)


def test_matches_a_hand_built_program():
    x = var("x", shape=(3,))
    c = var("c", TensorType((), "bool"))
    v = var("v")
    s = op.tanh(x)
    expected = Function(
        [x, c], Let(v, s, If(c, op.add(v, s), Tuple([TupleGetItem(Tuple([s, x]), 1)])[0]))
    )
    got = main_of(
        "def @main(%x: Tensor[(3,), float32], %c: Tensor[(), bool]) {\n"
        "  %0 = tanh(%x);\n  let %v = %0;\n"
        "  if (%c) { add(%v, %0) } else { %1 = (%0, %x); (%1.1,).0 }\n}"
    )
    assert structural_equal(got, expected)
    assert not structural_equal(got, Function([x, c], Let(v, s, If(c, op.add(s, v), x))))


# -- errors ----------------------------------------------------------------------------------


def err(text: str, **kw) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(text, **kw)
    return info.value


def check(e: ParseError, line: int, column: int, *fragments: str) -> None:
    assert (e.line, e.column) == (line, column), str(e)
    for fragment in fragments:
        assert fragment in e.message, e.message


def test_error_rendering_has_file_line_column_and_caret():
    e = err("def @main(%x: Tensor[(3,), float32]) {\n  add(%x %x)\n}", filename="m.txt")
    check(e, 2, 10, "expected ',' or ')' in the arguments of add, got '%x'")
    assert e.source_line == "  add(%x %x)" and e.filename == "m.txt"
    assert str(e) == (
        "m.txt:2:10: error: expected ',' or ')' in the arguments of add, got '%x'\n"
        "    add(%x %x)\n"
        "           ^"
    )


def test_unknown_op_lists_close_matches():
    e = err(fn_text("  %0 = tanh(%x);\n  nn.rleu(%0)"))
    check(e, 3, 3, "unknown op 'nn.rleu'", "did you mean nn.relu")


def test_undefined_names():
    check(err(fn_text("  add(%x, %y)")), 2, 11, "undefined variable %y")
    check(err(fn_text("  add(%x, %xx)")), 2, 11, "undefined variable %xx", "did you mean %x")
    check(err(fn_text("  add(%x, %3)")), 2, 11, "undefined %3")
    check(
        err(fn_text("  @g(%x)") + "def @go() { 1f32 }"),
        2,
        3,
        "undefined global function @g",
        "did you mean @go",
    )


def test_let_var_is_not_visible_in_its_own_value_or_after_its_block():
    check(err(fn_text("  let %v = add(%v, %x);\n  %v")), 2, 16, "undefined variable %v")
    check(err(fn_text("  %0 = { let %v = %x; %v };\n  %v")), 3, 3, "undefined variable %v")
    check(err(fn_text("  %0 = fn (%p) { %p };\n  %p")), 3, 3, "undefined variable %p")


def test_duplicate_definitions():
    check(
        err(fn_text("  %0 = tanh(%x);\n  %0 = tanh(%x);\n  %0")), 3, 3, "duplicate definition of %0"
    )
    check(
        err(fn_text("  %0 = tanh(%x);\n  %1 = fn () { %0 = tanh(%x); %0 };\n  %0")),
        3,
        16,
        "duplicate definition of %0",
    )
    check(err("def @f() { 1f32 }\ndef @f() { 2f32 }"), 2, 5, "duplicate definition of @f")
    check(err("def @f(%a, %a) { %a }"), 1, 12, "duplicate parameter %a")
    check(
        err("def @f(%a, Primitive=1, Primitive=2) { %a }"), 1, 25, "duplicate attribute 'Primitive'"
    )


def test_bad_types():
    check(
        err("def @f(%a: Tensor[(3,), float33]) { %a }"),
        1,
        25,
        "unknown dtype 'float33'",
        "did you mean float32",
    )
    check(err("def @f(%a: Tensor[(3.5,), float32]) { %a }"), 1, 20, "expected a dimension")
    check(
        err("def @f(%a: Tenser[(3,), float32]) { %a }"),
        1,
        12,
        "expected a type",
        "did you mean Tensor",
    )
    check(
        err("def @f(%a: Tensor[(3,) float32]) { %a }"),
        1,
        24,
        "expected ',' between the shape and the dtype",
    )
    deep = "(" * 150 + "float32" + ")" * 150
    check(err(f"def @f(%a: {deep}) {{ %a }}"), 1, 113, "type nesting too deep")


def test_bad_attributes_are_reported_at_their_key_or_at_the_call():
    text = (
        "def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {\n"
        "  %0 = nn.conv2d(%x, %w, paddin=[1, 1]);\n  %0\n}"
    )
    check(err(text), 2, 26, "no attribute 'paddin'", "did you mean padding")
    check(err(fn_text("  reshape(%x)")), 2, 3, "requires attribute 'newshape'")
    check(err(fn_text('  reshape(%x, newshape="a")')), 2, 15, "reshape.newshape")
    check(err(fn_text("  add(%x)")), 2, 3, "takes 2 argument(s), got 1")
    check(err(fn_text("  tanh(%x, axis=1, axis=2)")), 2, 20, "duplicate attribute 'axis'")
    check(err(fn_text("  sum(axis=1, %x)")), 2, 15, "positional argument after attributes")
    check(
        err(fn_text("  %0 = fn (%y) { %y };\n  %0(%x, axis=1)")),
        3,
        5,
        "only calls of an Op take attributes",
    )
    check(err(fn_text("  sum(%x, axis=1f32)")), 2, 16, "no dtype suffix")
    check(err(fn_text("  sum(%x, axis=%x)")), 2, 16, "expected an attribute value")
    check(err(fn_text("  sum(%x, axis=[1, 2)")), 2, 21, "expected ',' or ']'")


def test_attribute_errors_point_at_the_offending_key():
    # the caret goes under the key the message names, in calls parsed by either path
    check(err(fn_text("  nn.softmax(%x, axis=1.5)")), 2, 18, "nn.softmax.axis must be an int")
    check(err(fn_text("  nn.softmax(tanh(%x), axis=1.5)")), 2, 24, "nn.softmax.axis must be an int")
    check(err(fn_text('  sum(%x, keepdims=True, axis=[1, "a"])')), 2, 26, "sum.axis[1]")
    check(
        err(fn_text('  nn.conv2d(%x, %x, strides=[1, 1], padding="a")')), 2, 37, "nn.conv2d.padding"
    )
    check(err(fn_text("  tanh(%x, axis=1)")), 2, 12, "op 'tanh' takes no attributes")
    check(err(fn_text('  test.parser.any(%x, v=1, "w"=2)')), 2, 28, "no attribute 'w'")


def test_syntax_errors_say_what_was_expected():
    check(
        err(fn_text("  %0 = tanh(%x)\n  %0")),
        3,
        3,
        "expected ';' after the definition of %0",
        "got '%0'",
    )
    check(
        err(fn_text("  let %v = tanh(%x)\n  %v")), 3, 3, "expected ';' after the value of 'let %v'"
    )
    check(
        err(fn_text("  tanh(%x);")),
        2,
        11,
        "expected '}' after the block's result expression",
        "got ';'",
    )
    check(err(fn_text("")), 3, 1, "expected an expression before '}'")
    check(err("def @main() {"), 1, 14, "expected an expression before end of input")
    check(err(fn_text("  if (True) { %x }")), 3, 1, "expected 'else'")
    check(err(fn_text("  %x = tanh(%x);\n  %x")), 2, 3, "only graph names like %0 are bound")
    check(err(fn_text("  let %0 = tanh(%x);\n  %0")), 2, 7, "expected a variable name like %x")
    check(err("def @f(%0) { %0 }"), 1, 8, "a parameter needs a variable name")
    check(err("def main() { 1f32 }"), 1, 5, "expected a global function name @name")
    check(err("def @f() { 1f32 }\n@g"), 2, 1, "expected 'def'")
    check(err(fn_text("  add(%x, %x) }")), 3, 1, "expected 'def'")
    check(err(fn_text("  (%x, %x")), 3, 1, "expected ',' or ')' in the tuple")
    check(err(fn_text("  $")), 2, 3, "expected an expression, got '$'")
    check(err(fn_text('  sum(%x, axis="abc)')), 2, 16, "unterminated string")
    check(err(fn_text("  tanh(%x) /* never closed")), 2, 12, "unterminated comment")
    check(err(fn_text("  12abc")), 2, 3, "malformed number '12abc'")


def test_bad_literals():
    check(err(fn_text("  add(%x, 300u8)")), 2, 11, "value 300 is out of range for uint8")
    check(err(fn_text("  add(%x, 1.5i32)")), 2, 11, "int32 literals must be integers")
    check(err(fn_text("  add(%x, 3f8)")), 2, 11, "unknown dtype suffix 'f8'")
    check(
        err(fn_text("  const(float32, (2, 2), [1.0, 2.0, 3.0])")), 2, 27, "needs 4 value(s), got 3"
    )
    check(err(fn_text("  const(uint8, (1,), [300])")), 2, 23, "value 300 is out of range for uint8")
    check(err(fn_text("  const(int8, (1,), [1.5])")), 2, 22, "expected an integer")
    check(err(fn_text("  const(bool, (1,), [1])")), 2, 22, "expected True or False")
    check(err(fn_text("  const(float32, (1,), [1f32])")), 2, 25, "no dtype suffix")


def test_metadata_errors():
    text = "def @main(%x: Tensor[(2,), float32]) {\n  add(%x, meta[Constant][0])\n}\n"
    check(err(text), 2, 11, "meta[Constant][0] is not defined", "show_meta_data=False")
    check(
        err('#[version = "irpass 0.1"]\n#[metadata_file = "m.npz"]\n' + text),
        4,
        11,
        "'m.npz'",
        "irpass.load",
    )
    check(
        err(text + "#[metadata]\nmeta[Constant][1] = float32 (2,) AADAPwAAIEA=\n"),
        2,
        11,
        "meta[Constant][0] is not defined",
        "1 constant(s)",
    )
    check(
        err(text + "#[metadata]\n\nmeta[Constant][0] = float32 (3,) AADAPwAAIEA=\n"),
        6,
        1,
        "8 bytes of data",
        "(3,) needs 12 bytes",
    )
    check(
        err(text + "#[metadata]\nmeta[Constant][0] = float32 (2,) @@@\n"),
        5,
        1,
        "expected a metadata entry",
    )
    check(
        err(text + "#[metadata]\nmeta[Constant][0] = float31 (2,) AADAPwAAIEA=\n"),
        5,
        1,
        "unknown dtype 'float31'",
    )
    check(
        err(
            text + "#[metadata]\n  meta[Constant][0] = float32 (2,) AADAPwAAIEA=\n"
            "  meta[Constant][0] = float32 (2,) AADAPwAAIEA=\n"
        ),
        6,
        3,
        "defined twice",
    )
    with pytest.raises(ParseError, match="do not pass metadata="):
        parse(text + "#[metadata]\n", metadata=[np.zeros(2, np.float32)])
    check(err(fn_text("  meta[Function][0]")), 2, 8, "only meta[Constant][k]")
    # the end of the program is where the metadata section starts, not the end of the text
    unclosed = "def @main(%x: float32) {\n  add(%x, meta[Constant][0])\n\n"
    check(
        err(unclosed + "#[metadata]\nmeta[Constant][0] = float32 (2,) AADAPwAAIEA=\n"),
        2,
        29,
        "expected '}' after the block's result expression, got end of input",
    )


def test_metadata_data_that_is_not_base64_is_named():
    text = "def @main(%x: Tensor[(2,), float32]) {\n  add(%x, meta[Constant][0])\n}\n"
    check(
        err(text + "#[metadata]\n  meta[Constant][0] = float32 (2,) AAD=PwAAIEA=\n"),
        5,
        3,
        "meta[Constant][0]: the data is not valid base64",
    )


# The printer's form of the metadata section (one entry a line, nothing else) is read
# in one scan; anything else line by line. Both read the same, and report the same errors.
META_TEXT = "def @main(%x: Tensor[(2,), float32]) {\n  add(%x, meta[Constant][0])\n}\n"


@pytest.mark.parametrize(
    "entries, line, column, message",
    [
        ("meta[Constant][0] = float32 (2,) AAD=PwAAIEA=\n", 5, 1, "not valid base64"),
        ("meta[Constant][0] = float32 (3,) AADAPwAAIEA=\n", 5, 1, "(3,) needs 12 bytes"),
        ("meta[Constant][0] = float31 (2,) AADAPwAAIEA=\n", 5, 1, "unknown dtype"),
        ("meta[Constant][0] = float32 (2, x) AADAPwAAIEA=\n", 5, 1, "bad shape"),
        (
            "meta[Constant][0] = float32 (2,) AADAPwAAIEA=\n"
            "meta[Constant][0] = float32 (2,) AADAPwAAIEA=\n",
            6,
            1,
            "defined twice",
        ),
        ("meta[Constant][0] = float32 (2,) AADAPwAAIEA=\nrubbish\n", 6, 1, "expected a metadata"),
        ("meta[Constant][0] = float32 (2,) AADAPwAAIEA= x\n", 5, 1, "expected a metadata"),
    ],
)
def test_metadata_errors_in_the_printers_form(entries, line, column, message):
    check(err(META_TEXT + "#[metadata]\n" + entries), line, column, message)


@pytest.mark.parametrize(
    "section",
    [
        "meta[Constant][1] = float32 () AACAPw==\nmeta[Constant][0] = float32 (2,) AADAPwAAIEA=",
        "meta[Constant][1] = float32 () AACAPw==\nmeta[Constant][0] = float32 (2,) AADAPwAAIEA=\n",
        "// weights\nmeta[Constant][1] = float32 () AACAPw==\n\n"
        "  meta[Constant][0] = float32 (2,) AADAPwAAIEA=  \r\n\n",
    ],
)
def test_metadata_sections_read_alike(section):
    text = META_TEXT.replace("%x, meta[Constant][0]", "meta[Constant][1], meta[Constant][0]")
    body = parse(text + "#[metadata]\n" + section)["main"].body
    scalar, pair = (a.data for a in body.args)
    assert scalar.shape == () and scalar.dtype == np.float32 and scalar == 1.0
    assert pair.tolist() == [1.5, 2.5] and pair.dtype == np.float32
    assert not scalar.flags.writeable and not pair.flags.writeable


# The lexer makes one token of a parameter with a static type and of a list of ints
# after '=' (see irpass.ir.lexer); spelled any other way they are the usual tokens.
SPELLINGS = [
    (
        "def @main(%x: Tensor[(2, 3), float32]) { let %y: Tensor[(3, 2), float32] = "
        "transpose(%x, axes=[1, 0]); reshape(%y, newshape=[-1]) }",
        "def @main(%x : Tensor[ (2, 3), float32 ]) { let %y :Tensor[(3,2), float32] = "
        "transpose(%x, axes= [1,0]); reshape(%y, newshape=[ -1 ]) }",
    ),
    (
        "def @main(%x: Tensor[(2,), float32]) { %0 = fn (%p: Tensor[(2,), float32], "
        "Primitive=1) -> Tensor[(2,), float32] { tile(%p, reps=[2]) }; %0(%x) }",
        "def @main(%x: Tensor[(2,), float32]) { %0 = fn (%p /* c */: Tensor[(2,), float32], "
        "Primitive=1) -> Tensor[(2,), float32] { tile(%p, reps=[2 /* c */]) }; %0(%x) }",
    ),
]


@pytest.mark.parametrize("one_token, tokens", SPELLINGS)
def test_one_token_params_and_int_lists_read_as_their_tokens_do(one_token, tokens):
    a, b = parse(one_token), parse(tokens)
    assert structural_equal(a, b)
    assert parse(str(a)) is not a and structural_equal(parse(str(a)), a)


def test_int_list_attribute_values():
    func = parse(fn_text("  reshape(%x, newshape=[-1, 3, 1])", "%x: Tensor[(3,), float32]"))
    call = func["main"].body
    assert call.attrs["newshape"] == (-1, 3, 1)
    # nested lists keep their inner lists as tokens of their own
    func = parse(fn_text("  nn.pad(%x, pad_width=[[1, 2]])", "%x: Tensor[(3,), float32]"))
    assert func["main"].body.attrs["pad_width"] == ((1, 2),)


def test_one_token_param_errors_point_into_the_token():
    # the dtype of a one-token param, as for a type of its own
    check(err("def @main(%x: Tensor[(2, 3), floot32]) { %x }"), 1, 30, "unknown dtype 'floot32'")
    check(
        err("def @main(%x: float32) { let %y: Tensor[(2,), flt] = %x; %y }"),
        1,
        47,
        "unknown dtype 'flt'",
    )
    check(
        err("def @main(%x: Tensor[(2,), float32], %x: Tensor[(2,), float32]) { %x }"),
        1,
        38,
        "duplicate parameter %x of @main",
    )
    # a typed var where an expression goes: the ':' is the problem
    check(
        err("def @main(%x: Tensor[(2,), float32]) { add(%x: Tensor[(2,), float32], %x) }"),
        1,
        46,
        "a type annotation ':' goes only on a parameter or after 'let %x'",
    )
    with pytest.raises(ParseError, match="a type annotation"):
        parse_expr("add(%x: Tensor[(2,), float32], %x)")
    # a quoted name may hold ': ' (it is never one token with a type)
    free = parse_expr('add(%"a: b", %"a: b")').args[0]
    assert isinstance(free, Var) and free.name_hint == "a: b"


def test_metadata_argument_must_be_arrays():
    text = "def @main(%x: Tensor[(2,), float32]) { add(%x, meta[Constant][0]) }"
    with pytest.raises(TypeError, match="metadata must be a list of arrays"):
        parse(text, metadata={"consts": []})
    with pytest.raises(TypeError, match=r"metadata\[0\] must be a numpy array"):
        parse(text, metadata=[[1.0, 2.0]])


def test_header_errors():
    check(err('#[version = "0.0.5"]\ndef @f() { 1f32 }'), 1, 13, "unsupported version '0.0.5'")
    check(err('#[colour = "red"]\ndef @f() { 1f32 }'), 1, 3, "unknown header 'colour'")
    check(err("#[version = 1]\n"), 1, 13, "expected a string value")


def test_errors_in_bare_expressions_and_parse_expr():
    with pytest.raises(ParseError, match="expected end of input after the result expression"):
        parse_expr("%x %y")
    with pytest.raises(ParseError, match="undefined global function @nope"):
        parse("@nope(%x)")


def test_parse_is_exported_and_rejects_non_text():
    assert irpass.parse is parse
    with pytest.raises(TypeError, match="text must be a str"):
        parse(b"def @main() { 1f32 }")  # type: ignore[arg-type]


def test_every_dtype_name_parses_as_a_type():
    for dtype in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
    ):
        f = main_of(f"def @main(%a: Tensor[(2,), {dtype}]) {{ %a }}")
        assert f.params[0].type_annotation == TensorType((2,), dtype)


def test_global_var_objects_are_the_modules():
    mod = parse("def @main() { @main }")
    assert mod["main"].body is mod.get_global_var("main")
    assert isinstance(mod["main"].body, GlobalVar)


def test_truncated_text_is_an_error_at_its_end():
    check(err("add("), 1, 5, "expected an expression, got end of input")
    check(err("let %x ="), 1, 9, "expected an expression, got end of input")
    check(err("%0 ="), 1, 5, "expected an expression, got end of input")
    check(err("fn ("), 1, 5, "expected a parameter (%name) or an attribute", "got end of input")
    check(err("def @f(%x: float32,"), 1, 20, "expected a parameter", "got end of input")
    check(
        err("def @f(%x: float32, axis="), 1, 26, "expected an attribute value", "got end of input"
    )
    check(err("\n" * 5 + "tanh(%x, "), 6, 9, "got end of input")
    e = err("add(%x,\n", filename="cut.ir")
    assert str(e) == (
        "cut.ir:1:8: error: expected an expression, got end of input\n  add(%x,\n         ^"
    )


def test_a_sigil_needs_a_name_and_a_global_name_cannot_be_empty():
    check(err("@"), 1, 1, "expected a name after '@'")
    check(err("def @"), 1, 5, "expected a name after '@'")
    check(err("%"), 1, 1, "expected a name after '%'")
    check(err("add(%x, %)"), 1, 9, "expected a name after '%'")
    check(err("def @f(%) { 1f32 }"), 1, 8, "expected a name after '%'")
    check(err("let % = 1f32; 2f32"), 1, 5, "expected a name after '%'")
    check(err('def @""() { 1f32 }'), 1, 5, "a global function name cannot be empty")
    check(err('@""(%x)'), 1, 1, "a global function name cannot be empty")
    # A variable may have an empty name: the printer writes it %"".
    f = parse_expr('fn (%"") { %"" }')
    assert f.params[0].name_hint == "" and f.body is f.params[0]


def test_comments_at_the_end_of_the_text():
    x = parse_expr("tanh(%x) // the end")
    assert isinstance(x, Call) and x.op.name == "tanh"
    for tail in (" /* the end */", " // a\n/* b */ // c", "\n// only a comment\n"):
        assert structural_equal(
            main_of("def @main() { 1f32 }" + tail), main_of("def @main() { 1f32 }")
        )
    check(err("def @main() { 1f32 } /* never closed"), 1, 22, "unterminated comment")


METADATA_PROGRAM = "def @main(%x: Tensor[(2,), float32]) {\n  add(%x, meta[Constant][0])\n}\n"


def test_a_metadata_shape_is_non_negative_integers():
    for shape in ("-2", "-1, -2", "2 2", "+2", "2_0", "\u0662", "2,,", ", 2"):
        text = METADATA_PROGRAM + (
            f"#[metadata]\nmeta[Constant][0] = float32 ({shape}) AADAPwAAIEA=\n"
        )
        check(err(text, filename="m.ir"), 5, 1, f"meta[Constant][0]: bad shape ({shape})")
    # Every spelling the printer uses still reads, and spaces anywhere.
    for shape, data in (
        ("()", "AADAPw=="),
        ("(1,)", "AADAPw=="),
        ("(1, 1)", "AADAPw=="),
        ("( 1 , 1 , )", "AADAPw=="),
        ("(0, 3)", ""),
    ):
        text = (
            "def @main() { meta[Constant][0] }\n#[metadata]\n"
            f"meta[Constant][0] = float32 {shape} {data}\n"
        )
        value = main_of(text).body.data
        assert value.shape == tuple(int(d) for d in shape[1:-1].split(",") if d.strip())


@pytest.mark.parametrize(
    "shape",
    [
        "4294967296, 4294967296",
        "99999999999999999999999",
        "99999999999999999999999, 0",
        "0, 2305843009213693952",
    ],
)
def test_shapes_too_large_for_an_array(shape):
    dims = tuple(int(d) for d in shape.split(","))
    meta = METADATA_PROGRAM + f"#[metadata]\nmeta[Constant][0] = float32 ({shape}) \n"
    check(err(meta), 5, 1, f"meta[Constant][0]: shape {dims} is too large for an array")
    check(err(f"const(float32, ({shape}), [])"), 1, 16, f"const(...): shape {dims} is too large")


def test_attribute_lists_nest_at_most_100_deep():
    ok = "[" * 100 + "1" + "]" * 100
    call = main_of(fn_text(f"  test.parser.any(%x, v={ok})")).body
    v = call.attrs["v"]
    for _ in range(100):
        v = v[0]
    assert v == 1
    check(
        err(fn_text("  test.parser.any(%x, v=" + "[" * 101 + "1" + "]" * 101 + ")")),
        2,
        125,
        "list value nested too deep (more than 100 levels)",
    )


def _broken_attr(value, where):
    raise KeyError(f"{where}: a converter bug")


try:
    BROKEN = Op.get("test.parser.broken")
except ValueError:
    BROKEN = register_op(
        "test.parser.broken",
        num_inputs=1,
        type_rel=_first,
        kernel=lambda a, at: a[0],
        pattern=OpPattern.OPAQUE,
        attrs=[AttrField("v", _broken_attr, None)],
        owner="tests",
    )


def test_an_unexpected_exception_becomes_an_internal_parse_error_at_its_token():
    e = err(fn_text("  %0 = tanh(%x);\n  test.parser.broken(%0, v=1)"), filename="b.ir")
    assert e.message.startswith("internal error while parsing here (KeyError:")
    assert "a converter bug" in e.message and "please report it" in e.message
    # The token being read: the call was read, the '}' after it is next.
    assert (e.line, e.column, e.filename) == (4, 1, "b.ir")
    assert isinstance(e.__cause__, KeyError)


def test_repeated_types_and_attributes_are_one_object_each():
    # A big module repeats a few types and attribute lists many times (every param
    # of every fused function has a type); all are immutable, so the parser makes
    # one object of each: of each type text, of each op's attribute list, of each
    # function's.
    f = main_of(
        "def @main(%x: Tensor[(1, 3), float32], %y: Tensor[(1, 3), float32]) {\n"
        "  %0 = fn (%p: Tensor[(1, 3), float32], Primitive=1) { nn.softmax(%p, axis=0) };\n"
        "  %1 = fn (%q: Tensor[(1, 3), float32], Primitive=1) { nn.softmax(%q, axis=0) };\n"
        "  %2 = nn.log_softmax(%x, axis=0);\n"
        "  (%0(%x), %1(%y), %2)\n"
        "}"
    )
    x, y = f.params
    assert x.type_annotation is y.type_annotation
    assert x.type_annotation == TensorType((1, 3), "float32")
    f0, f1 = f.body.fields[0].op, f.body.fields[1].op
    assert f0.params[0].type_annotation is x.type_annotation
    assert f0.attrs is f1.attrs and dict(f0.attrs) == {"Primitive": 1}
    assert f0.body.attrs is f1.body.attrs and f0.body.attrs["axis"] == 0
    # the same attribute text on another op is that op's own attributes
    log_softmax = f.body.fields[2]
    assert log_softmax.op is Op.get("nn.log_softmax")
    assert log_softmax.attrs is not f0.body.attrs
    assert dict(log_softmax.attrs) == dict(Op.get("nn.log_softmax").make_attrs({"axis": 0}))


def test_const_needs_a_static_shape():
    # (a size expression there was an "internal error": numpy cannot size it)
    check(
        err("def @main() { const(int64, (n,), [1, 2, 3]) }"),
        1,
        28,
        "const(...) needs a static shape",
        "got (n)",
    )


def test_metadata_arrays_are_taken_as_constants_take_them():
    """The section's entries become read-only constants with their values; a metadata=
    array stays the caller's: the constant does not change when the array does."""
    weights = irpass.const(np.arange(64, dtype="float32"))
    text = irpass.IRModule.from_expr(op.add(irpass.var("x", shape=(64,)), weights)).astext(
        show_meta_data=True
    )
    data = parse(text)["main"].body.args[1].data
    assert not data.flags.writeable and data.tolist() == list(range(64))
    mine = np.array([4.0, 5.0], np.float32)
    body = "def @main(%x: Tensor[(2,), float32]) { add(%x, meta[Constant][0]) }"
    c = parse(body, metadata=[mine])["main"].body.args[1]
    mine[0] = 99.0
    assert c.data.tolist() == [4.0, 5.0]
