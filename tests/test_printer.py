"""The text printer: what ``str(mod)`` / ``str(expr)`` write, checked against hand-written text."""

from __future__ import annotations

import base64
import re

import numpy as np
import pytest
from irpass import op
from irpass.ir import (
    Call,
    Constant,
    Function,
    FuncType,
    GlobalVar,
    If,
    IRModule,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    const,
    infer_type,
    var,
)
from irpass.ir.op import AttrField, OpPattern, attr_float, attr_int, attr_str, register_op
from irpass.ir.printer import INLINE_CONST_MAX, print_expr, print_module, type_text
from irpass.ir.types import Type, shape_text

T3 = TensorType((3,), "float32")
T13 = TensorType((1, 3), "float32")
BOOL = TensorType((), "bool")


def _any(value, where):
    return value


def _first(arg_types, attrs):
    return arg_types[0]


def _private_op(name, attrs):
    try:
        return Op.get(name)
    except ValueError:
        return register_op(name, num_inputs=1, type_rel=_first, kernel=lambda a, at: a[0],
                           pattern=OpPattern.OPAQUE, attrs=attrs, owner="tests")


ATTRS_OP = _private_op(
    "test.printer.attrs",
    [
        AttrField("i", attr_int, 0),
        AttrField("f", attr_float, 0.0),
        AttrField("b", _any, False),
        AttrField("s", attr_str, "NCHW"),
        AttrField("n", _any, None),
        AttrField("t", _any, (1, 1)),
        AttrField("req", _any),
    ],
)


def body_of(text: str) -> str:
    """The lines between ``def @main(...) {`` and its closing ``}``, dedented by 2."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("def @main"))
    end = lines.index("}", start)
    return "\n".join(line[2:] for line in lines[start + 1 : end])


def main_text(*params, body, ret_type=None):
    return str(IRModule({"main": Function(list(params), body, ret_type)}))


# -- whole modules ---------------------------------------------------------------------------


def test_module_text_exactly():
    x = var("x", shape=(1, 3))
    y = var("y", shape=(3,))
    a = op.add(x, y)
    b = op.nn.relu(a)
    mod = IRModule({"main": Function([x, y], op.multiply(b, a), T13)})
    assert str(mod) == (
        '#[version = "irpass 0.1"]\n'
        "def @main(%x: Tensor[(1, 3), float32], %y: Tensor[(3,), float32]) "
        "-> Tensor[(1, 3), float32] {\n"
        "  %0 = add(%x, %y);\n"
        "  %1 = nn.relu(%0);\n"
        "  multiply(%1, %0)\n"
        "}\n"
    )
    assert mod.astext() == str(mod) == print_module(mod)


def test_two_functions_and_global_calls():
    a = var("a", shape=(3,))
    helper = Function([a], op.tanh(a), T3)
    x = var("x", shape=(3,))
    gv = GlobalVar("helper")
    main = Function([x], Call(gv, [op.negative(x)]))
    text = str(IRModule({"main": main, gv: helper}))
    assert text == (
        '#[version = "irpass 0.1"]\n'
        "def @main(%x: Tensor[(3,), float32]) {\n"
        "  %0 = negative(%x);\n"
        "  @helper(%0)\n"
        "}\n"
        "\n"
        "def @helper(%a: Tensor[(3,), float32]) -> Tensor[(3,), float32] {\n"
        "  tanh(%a)\n"
        "}\n"
    )


def test_empty_module():
    assert str(IRModule()) == '#[version = "irpass 0.1"]\n'


# -- node kinds -----------------------------------------------------------------------------


def test_tuples_and_projections():
    x = var("x", shape=(3,))
    t = Tuple([op.tanh(x), x])
    body = Tuple([TupleGetItem(t, 0), Tuple([x]), Tuple([]), TupleGetItem(t, 1)])
    assert body_of(main_text(x, body=body)) == (
        "%0 = tanh(%x);\n"
        "%1 = (%0, %x);\n"
        "%2 = %1.0;\n"
        "%3 = (%x,);\n"
        "%4 = ();\n"
        "%5 = %1.1;\n"
        "(%2, %3, %4, %5)"
    )


def test_let_chain_prints_as_let_lines():
    x = var("x", shape=(3,))
    v = var("v", shape=(3,))
    w = var("w")
    body = Let(v, op.tanh(x), Let(w, op.add(v, x), op.multiply(w, v)))
    assert body_of(main_text(x, body=body)) == (
        "let %v: Tensor[(3,), float32] = tanh(%x);\n"
        "let %w = add(%v, %x);\n"
        "multiply(%w, %v)"
    )


def test_let_value_printed_in_place_and_order_of_lines():
    x = var("x", shape=(3,))
    v = var("v")
    body = Let(v, op.tanh(x), op.add(op.negative(v), op.sigmoid(x)))
    assert body_of(main_text(x, body=body)) == (
        "let %v = tanh(%x);\n"
        "%0 = negative(%v);\n"
        "%1 = sigmoid(%x);\n"
        "add(%0, %1)"
    )


def test_let_in_a_non_tail_position_is_a_block():
    x = var("x", shape=(3,))
    v = var("v")
    inner = Let(v, op.tanh(x), op.negative(v))
    body = op.add(inner, x)
    assert body_of(main_text(x, body=body)) == (
        "%0 = {\n"
        "  let %v = tanh(%x);\n"
        "  negative(%v)\n"
        "};\n"
        "add(%0, %x)"
    )
    # As the value of another let it prints in place.
    w = var("w")
    body = Let(w, inner, w)
    assert body_of(main_text(x, body=body)) == (
        "let %w = {\n"
        "  let %v = tanh(%x);\n"
        "  negative(%v)\n"
        "};\n"
        "%w"
    )


def test_shared_let_value_is_named_once():
    x = var("x", shape=(3,))
    v = var("v")
    t = op.tanh(x)
    body = Let(v, t, op.add(v, t))
    assert body_of(main_text(x, body=body)) == (
        "%0 = tanh(%x);\n"
        "let %v = %0;\n"
        "add(%v, %0)"
    )


def test_if_with_a_node_shared_by_both_branches():
    x = var("x", shape=(3,))
    c = var("c", BOOL)
    s = op.tanh(x)
    only_then = op.exp(x)
    body = If(c, op.add(s, only_then), op.negative(s))
    assert body_of(main_text(x, c, body=body)) == (
        "%0 = tanh(%x);\n"
        "if (%c) {\n"
        "  %1 = exp(%x);\n"
        "  add(%0, %1)\n"
        "} else {\n"
        "  negative(%0)\n"
        "}"
    )


def test_if_as_an_operand_and_node_used_after_it():
    x = var("x", shape=(3,))
    c = var("c", BOOL)
    s = op.tanh(x)
    i = If(c, op.negative(s), x)
    body = op.add(i, s)
    assert body_of(main_text(x, c, body=body)) == (
        "%0 = tanh(%x);\n"
        "%1 = if (%c) {\n"
        "  negative(%0)\n"
        "} else {\n"
        "  %x\n"
        "};\n"
        "add(%1, %0)"
    )


def test_same_node_as_both_branches():
    x = var("x", shape=(3,))
    c = var("c", BOOL)
    s = op.tanh(x)
    assert body_of(main_text(x, c, body=If(c, s, s))) == (
        "%0 = tanh(%x);\n"
        "if (%c) {\n"
        "  %0\n"
        "} else {\n"
        "  %0\n"
        "}"
    )


def test_closure_node_used_inside_and_outside_goes_outside():
    x = var("x", shape=(3,))
    y = var("y", shape=(3,))
    outer = op.tanh(x)
    fn = Function([y], op.add(op.multiply(y, x), outer), T3, {"Primitive": 1})
    body = op.add(Call(fn, [x]), outer)
    assert body_of(main_text(x, body=body)) == (
        "%0 = tanh(%x);\n"
        "%1 = fn (%y: Tensor[(3,), float32], Primitive=1) -> Tensor[(3,), float32] {\n"
        "  %2 = multiply(%y, %x);\n"
        "  add(%2, %0)\n"
        "};\n"
        "%3 = %1(%x);\n"
        "add(%3, %0)"
    )


def test_closure_node_used_only_inside_stays_inside():
    x = var("x", shape=(3,))
    y = var("y", shape=(3,))
    fn = Function([y], op.add(y, op.tanh(x)))
    f = var("f", FuncType([T3], T3))
    body = Let(f, fn, Call(f, [x]))
    assert body_of(main_text(x, body=body)) == (
        "let %f: fn (Tensor[(3,), float32]) -> Tensor[(3,), float32] = "
        "fn (%y: Tensor[(3,), float32]) {\n"
        "  %0 = tanh(%x);\n"
        "  add(%y, %0)\n"
        "};\n"
        "%f(%x)"
    )


def test_function_attrs_of_every_kind_and_no_params():
    fn = Function([], const(1.0), None, {"Primitive": 1, "Name": "k", "Flag": True, "F": 0.5})
    assert print_expr(fn) == 'fn (Primitive=1, Name="k", Flag=True, F=0.5) {\n  1.0f32\n}'


def test_attr_keys_that_are_not_identifiers_are_quoted():
    fn = Function([], const(1.0), None, {"my-key": 1, "ok": 2})
    assert print_expr(fn) == 'fn ("my-key"=1, ok=2) {\n  1.0f32\n}'


def test_print_expr_forms():
    x = var("x", shape=(3,))
    assert print_expr(x) == "%x"
    assert str(GlobalVar("main")) == "@main"
    assert str(Op.get("nn.relu")) == "nn.relu"
    assert str(op.tanh(op.negative(x))) == "%0 = negative(%x);\ntanh(%0)"
    assert str(Function([x], op.tanh(x))) == "fn (%x: Tensor[(3,), float32]) {\n  tanh(%x)\n}"


def test_op_and_global_as_values():
    x = var("x", shape=(3,))
    body = Tuple([Op.get("nn.relu"), GlobalVar("my fn"), x])
    assert print_expr(body) == '(nn.relu, @"my fn", %x)'


# -- attributes ------------------------------------------------------------------------------


def test_default_attrs_are_left_out_and_required_ones_kept():
    x = var("x", shape=(1, 3, 8, 8))
    w = var("w", shape=(4, 3, 3, 3))
    conv = op.nn.conv2d(x, w, padding=(1, 1), channels=4)
    assert print_expr(conv) == "nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4)"
    assert print_expr(op.nn.conv2d(x, w)) == "nn.conv2d(%x, %w)"
    # newshape has no default: always printed
    assert print_expr(op.reshape(x, newshape=(1, -1))) == "reshape(%x, newshape=[1, -1])"


def test_attr_values_of_every_kind():
    x = var("x", shape=(3,))
    call = Call(ATTRS_OP, [x], {"req": None})
    assert print_expr(call) == "test.printer.attrs(%x, req=None)"
    call = Call(
        ATTRS_OP,
        [x],
        {
            "i": -3,
            "f": -0.0,
            "b": True,
            "s": 'a"b\\c\nd',
            "n": (1, 2),
            "t": (),
            "req": ((1, 2.5), ("x", None, False), ((),)),
        },
    )
    assert print_expr(call) == (
        'test.printer.attrs(%x, i=-3, f=-0.0, b=True, s="a\\"b\\\\c\\nd", n=[1, 2], t=[], '
        'req=[[1, 2.5], ["x", None, False], [[]]])'
    )


@pytest.mark.parametrize(
    "value, text",
    [(1e-05, "1e-05"), (1e20, "1e+20"), (3.0, "3.0"), (float("inf"), "inf"),
     (float("-inf"), "-inf"), (float("nan"), "nan"), (0.1, "0.1")],
)
def test_float_attrs_always_look_like_floats(value, text):
    x = var("x", shape=(3,))
    assert print_expr(Call(ATTRS_OP, [x], {"f": value, "req": 1})) == (
        f"test.printer.attrs(%x, f={text}, req=1)"
    )


def test_int_default_differs_from_bool_and_float():
    x = var("x", shape=(3,))
    # b defaults to False; 0 is a different value (an int) and must be printed
    assert print_expr(Call(ATTRS_OP, [x], {"b": 0, "req": 1})) == (
        "test.printer.attrs(%x, b=0, req=1)"
    )
    assert print_expr(Call(ATTRS_OP, [x], {"f": 0.0, "b": False, "req": 1})) == (
        "test.printer.attrs(%x, req=1)"
    )


# -- constants ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, dtype, text",
    [
        (1.5, "float32", "1.5f32"),
        (0.1, "float16", "0.1f16"),
        (0.1, "float64", "0.1f64"),
        (-0.0, "float32", "-0.0f32"),
        (float("nan"), "float32", "nanf32"),
        (float("inf"), "float16", "inff16"),
        (float("-inf"), "float64", "-inff64"),
        (1e30, "float32", "1e+30f32"),
        (-3, "int64", "-3i64"),
        (-128, "int8", "-128i8"),
        (7, "int16", "7i16"),
        (7, "int32", "7i32"),
        (2, "uint8", "2u8"),
        (65535, "uint16", "65535u16"),
        (7, "uint32", "7u32"),
        (2**64 - 1, "uint64", "18446744073709551615u64"),
        (True, "bool", "True"),
        (False, "bool", "False"),
    ],
)
def test_scalar_constants(value, dtype, text):
    assert print_expr(Constant(np.array(value, dtype=dtype))) == text


def test_small_tensor_constants_inline():
    assert print_expr(const(np.array([[1, 2], [3, 4]], dtype=np.int32))) == (
        "const(int32, (2, 2), [1, 2, 3, 4])"
    )
    assert print_expr(const(np.array([True, False]))) == "const(bool, (2,), [True, False])"
    assert print_expr(const(np.zeros((0, 3), np.float32))) == "const(float32, (0, 3), [])"
    values = np.array([0.1, -0.0, np.nan, -np.inf], np.float32)
    assert print_expr(const(values)) == "const(float32, (4,), [0.1, -0.0, nan, -inf])"
    assert INLINE_CONST_MAX == 4
    assert print_expr(const(np.ones(4, np.float64))) == "const(float64, (4,), [1.0, 1.0, 1.0, 1.0])"
    assert print_expr(const(np.ones(5, np.float64))).startswith("meta[Constant][0]\n")


def test_big_constant_goes_to_the_metadata_section():
    data = np.arange(17, dtype=np.float32).reshape(17)  # > INLINE_CONST_MAX elements
    x = var("x", shape=(17,))
    c = const(data)
    text = main_text(x, body=op.add(op.add(x, c), c))
    assert body_of(text) == (
        "%0 = add(%x, meta[Constant][0]);\n"
        "add(%0, meta[Constant][0])"
    )
    tail = text.split("#[metadata]\n")[1]
    m = re.fullmatch(r"meta\[Constant\]\[0\] = float32 \(17,\) (\S+)\n", tail)
    assert m is not None, tail
    assert base64.b64decode(m.group(1)) == np.arange(17, dtype="<f4").tobytes()


def test_metadata_numbering_follows_identity_not_value():
    x = var("x", shape=(20,))
    c1 = const(np.ones(20, np.float32))
    c2 = const(np.ones(20, np.float32))
    text = main_text(x, body=op.add(op.add(x, c1), op.add(c2, c1)))
    assert "meta[Constant][0]" in text and "meta[Constant][1]" in text
    assert "meta[Constant][2]" not in text
    assert text.count("\nmeta[Constant]") == 2


def test_show_meta_data_false_leaves_the_section_out():
    x = var("x", shape=(20,))
    mod = IRModule({"main": Function([x], op.add(x, const(np.ones(20, np.float32))))})
    short = print_module(mod, show_meta_data=False)
    assert "meta[Constant][0]" in short
    assert "#[metadata]" not in short
    assert mod.astext(show_meta_data=False) == short
    assert "#[metadata]" in str(mod)


def test_values_that_would_not_read_back_exactly_go_to_the_metadata():
    bits = np.array([0xFFC00001], dtype=np.uint32)  # a negative NaN with a payload
    odd_nan = bits.view(np.float32).reshape(())
    assert print_expr(Constant(odd_nan)).startswith("meta[Constant][0]")
    # A big-endian array prints by value like any other.
    big_endian = np.array([1.5, 2.5], dtype=">f4")
    assert print_expr(Constant(big_endian)) == "const(float32, (2,), [1.5, 2.5])"


# -- names -----------------------------------------------------------------------------------


def test_clashing_var_names_are_made_unique_per_module():
    x1 = var("x", shape=(3,))
    x2 = var("x", shape=(3,))
    x3 = var("x_1", shape=(3,))
    x4 = var("x", shape=(3,))
    body = Let(x4, op.add(x1, x2), op.add(x4, x3))
    text = main_text(x1, x2, x3, body=body)
    assert text.splitlines()[1].startswith("def @main(%x: Tensor[(3,), float32], "
                                           "%x_1: Tensor[(3,), float32], "
                                           "%x_1_1: Tensor[(3,), float32])")
    assert body_of(text) == "let %x_2: Tensor[(3,), float32] = add(%x, %x_1);\nadd(%x_2, %x_1_1)"


def test_names_are_unique_across_the_functions_of_a_module():
    a = var("x", shape=(3,))
    b = var("x", shape=(3,))
    text = str(IRModule({"main": Function([a], a), "f": Function([b], b)}))
    assert "def @main(%x: Tensor[(3,), float32]) {\n  %x\n}" in text
    assert "def @f(%x_1: Tensor[(3,), float32]) {\n  %x_1\n}" in text


@pytest.mark.parametrize(
    "name, text",
    [("my var", '%"my var"'), ("", '%""'), ("0", '%"0"'), ("12", '%"12"'), ("1abc", '%"1abc"'),
     ("a.b", '%"a.b"'), ("é", '%"é"'), ('q"', '%"q\\""'), ("_ok9", "%_ok9")],
)
def test_names_that_are_not_identifiers_are_quoted(name, text):
    assert print_expr(Var(name)) == text


def test_quoted_global_names():
    assert print_expr(GlobalVar("my.func")) == '@"my.func"'


# -- types -------------------------------------------------------------------------------------


def test_type_text():
    assert type_text(TensorType((), "bool")) == "Tensor[(), bool]"
    assert type_text(TensorType((3,), "int8")) == "Tensor[(3,), int8]"
    assert type_text(TupleType([T3])) == "(Tensor[(3,), float32],)"
    assert type_text(TupleType([])) == "()"
    assert type_text(FuncType([T3, BOOL], TupleType([T3, T13]))) == (
        "fn (Tensor[(3,), float32], Tensor[(), bool]) -> "
        "(Tensor[(3,), float32], Tensor[(1, 3), float32])"
    )


def test_str_of_a_type_is_its_text_and_shapes_print_like_python_tuples():
    fn_type = FuncType([T3], TupleType([T13, BOOL]))
    assert str(fn_type) == (
        "fn (Tensor[(3,), float32]) -> (Tensor[(1, 3), float32], Tensor[(), bool])"
    )
    assert str(TupleType([BOOL])) == "(Tensor[(), bool],)"
    assert [shape_text(s) for s in [(), (3,), (1, 3), (0, 2, 5)]] == [
        "()", "(3,)", "(1, 3)", "(0, 2, 5)"
    ]

    class OtherType(Type):
        __slots__ = ()

    with pytest.raises(TypeError, match="cannot print type"):
        type_text(TupleType([OtherType()]))


def test_checked_types_are_shown_as_comments():
    x = var("x", shape=(1, 3))
    y = var("y", shape=(3,))
    mod = infer_type(IRModule({"main": Function([x, y], op.nn.relu(op.add(x, y)))}))
    assert body_of(str(mod)) == (
        "%0 = add(%x, %y) /* ty=Tensor[(1, 3), float32] */;\n"
        "nn.relu(%0) /* ty=Tensor[(1, 3), float32] */"
    )


# -- size and depth ----------------------------------------------------------------------------


def test_diamond_ladder_prints_in_linear_size():
    x = var("x", shape=(3,))
    e = x
    levels = 2000
    for _ in range(levels):
        e = op.add(op.tanh(e), op.sigmoid(e))  # every level uses the previous one twice
    text = main_text(x, body=e)
    lines = text.splitlines()
    # header, def line, 3 nodes per level (the last one is the result), closing brace
    assert len(lines) == 3 * levels + 3
    assert len(text) < 40 * 3 * levels


def test_deeply_nested_blocks_print_without_recursion():
    x = var("x", shape=(3,))
    c = var("c", BOOL)
    e = x
    depth = 3000
    for _ in range(depth):
        e = If(c, op.tanh(x), e)
    text = main_text(x, c, body=e)
    assert text.count("} else {") == depth
    assert ("  " * depth) + "%x" in text
