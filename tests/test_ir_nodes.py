"""Construction, validation and immutability of types, attrs, nodes and ops."""

import re

import numpy as np
import pytest
from irpass.ir import (
    Attrs,
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
    const,
    nodes,
    var,
)
from irpass.ir.op import AttrField, OpPattern, attr_int, attr_ints, register_op


def _rel_first(arg_types, attrs):
    return arg_types[0]


def _kernel_first(args, attrs):
    return args[0]


TEST_OP = register_op(
    "test.nodes.ident",
    num_inputs=1,
    type_rel=_rel_first,
    kernel=_kernel_first,
    pattern=OpPattern.ELEMWISE,
    attrs=(AttrField("axis", attr_int, 0), AttrField("sizes", attr_ints)),
    owner="tests",
)


# -- types ---------------------------------------------------------------------------


def test_tensor_type_normalizes_and_compares_by_value():
    a = TensorType([2, np.int64(3)], np.float32)
    b = TensorType((2, 3), "float32")
    assert a == b and hash(a) == hash(b)
    assert a.shape == (2, 3) and type(a.shape[1]) is int
    assert a.dtype == "float32" and a.ndim == 2 and a.size == 6
    assert str(a) == "Tensor[(2, 3), float32]"
    assert str(TensorType((5,))) == "Tensor[(5,), float32]"
    assert TensorType((2, 3), "float64") != a


@pytest.mark.parametrize(
    "shape, dtype, exc, words",
    [
        ((2, -1), "float32", ValueError, "shape[1] must be >= 0"),
        ((2, 1.5), "float32", TypeError, "shape[1] must be an int"),
        (3, "float32", TypeError, "sequence of ints"),
        ((2,), "complex64", ValueError, "unsupported dtype 'complex64'"),
        ((2,), 7, TypeError, "dtype"),
    ],
)
def test_tensor_type_rejects_bad_fields(shape, dtype, exc, words):
    with pytest.raises(exc, match=words.replace("[", r"\[").replace("]", r"\]")):
        TensorType(shape, dtype)


def test_tuple_and_func_types():
    t = TensorType((2,))
    tt = TupleType([t, t])
    assert tt.fields == (t, t) and str(tt) == "(Tensor[(2,), float32], Tensor[(2,), float32])"
    ft = FuncType([t], tt)
    assert ft == FuncType((t,), TupleType((t, t)))
    with pytest.raises(TypeError, match=r"TupleType.fields\[1\]"):
        TupleType([t, "x"])
    with pytest.raises(TypeError, match="FuncType.ret_type"):
        FuncType([t], None)


def test_types_are_frozen():
    t = TensorType((2,))
    with pytest.raises(AttributeError):
        t.shape = (3,)


# -- attrs -----------------------------------------------------------------------------


def test_attrs_are_immutable_hashable_and_normalized():
    a = Attrs(
        {"padding": [1, 1], "axis": np.int64(2), "rate": np.float32(0.5), "flag": np.bool_(True)}
    )
    assert a["padding"] == (1, 1) and type(a["axis"]) is int and type(a["rate"]) is float
    assert a.flag is True and a.axis == 2
    assert a == Attrs({"padding": (1, 1), "axis": 2, "rate": 0.5, "flag": True})
    assert hash(a) == hash(Attrs({"flag": True, "rate": 0.5, "axis": 2, "padding": (1, 1)}))
    with pytest.raises(AttributeError, match="immutable"):
        a.axis = 3
    with pytest.raises(TypeError):
        a["axis"] = 3  # type: ignore[index]
    with pytest.raises(AttributeError, match="no field 'nope'"):
        _ = a.nope
    b = a.replace(axis=1)
    assert b.axis == 1 and a.axis == 2


def test_attrs_reject_unsupported_values():
    with pytest.raises(TypeError, match=r"attribute attrs\['f'\] must be None"):
        Attrs({"f": object()})
    with pytest.raises(TypeError, match="names must be strings"):
        Attrs({1: 2})


# -- ops -----------------------------------------------------------------------------------


def test_op_registry_lookup_and_errors():
    assert Op.get("test.nodes.ident") is TEST_OP
    with pytest.raises(
        ValueError, match="unknown op 'test.nodes.idnet'.*did you mean test.nodes.ident"
    ):
        Op.get("test.nodes.idnet")
    with pytest.raises(ValueError, match="already registered by 'tests'.*'someone' cannot"):
        register_op(
            "test.nodes.ident",
            num_inputs=1,
            type_rel=_rel_first,
            kernel=_kernel_first,
            pattern=OpPattern.ELEMWISE,
            owner="someone",
        )
    with pytest.raises(ValueError, match="num_inputs"):
        register_op(
            "test.nodes.bad",
            num_inputs=-2,
            type_rel=_rel_first,
            kernel=_kernel_first,
            pattern=OpPattern.OPAQUE,
        )
    with pytest.raises(ValueError):
        register_op(
            "test.nodes.bad2", num_inputs=1, type_rel=_rel_first, kernel=_kernel_first, pattern=99
        )


def _register(name, attrs=()):
    return register_op(
        name,
        num_inputs=1,
        type_rel=_rel_first,
        kernel=_kernel_first,
        pattern=OpPattern.ELEMWISE,
        attrs=attrs,
        owner="tests",
    )


def test_register_op_leaves_the_callers_attr_fields_alone():
    shared = AttrField("sizes", attr_ints, [3, 4])
    first = _register("test.nodes.shared1", (shared,))
    second = _register("test.nodes.shared2", (shared,))
    assert shared.default == [3, 4]  # the caller's field is not converted in place
    assert first.attr_default("sizes") == (3, 4) == second.attr_default("sizes")
    assert first.attr_fields[0] is not shared


def test_register_op_with_a_bad_default_changes_nothing():
    good = AttrField("sizes", attr_ints, [1])
    bad = AttrField("axis", attr_int, "zero")
    with pytest.raises(TypeError, match=r"test.nodes.baddefault.axis must be an int"):
        _register("test.nodes.baddefault", (good, bad))
    assert good.default == [1]
    with pytest.raises(ValueError, match="unknown op"):
        Op.get("test.nodes.baddefault")


def test_attr_ints_accepts_one_int_and_says_so():
    assert attr_ints(3, "w") == (3,) and attr_ints(np.array([1, 2]), "w") == (1, 2)
    with pytest.raises(TypeError, match=r"w must be an int or a sequence of ints, got 'x'"):
        attr_ints("x", "w")


@pytest.mark.parametrize(
    "name,words",
    [
        ("contrib.my-op", "not a dotted identifier"),
        ("test.nodes.my op", "not a dotted identifier"),
        ("1op", "not a dotted identifier"),
        ("test..nodes", "not a dotted identifier"),
        ("test.nodes.", "not a dotted identifier"),
        (".relu", "not a dotted identifier"),
        ("test.2d", "not a dotted identifier"),
        ("test.nod\u00e9", "not a dotted identifier"),
        ("fn", "reserved word"),
        ("let", "reserved word"),
        ("meta", "reserved word"),
        ("const", "reserved word"),
        ("Tensor", "reserved word"),
        ("None", "reserved word"),
        ("True", "reserved word"),
        ("inf", "reserved word"),
        ("nan", "reserved word"),
        ("inff32", "reserved word"),
        ("float32", "reserved word"),
        ("uint8", "reserved word"),
        ("bool", "reserved word"),
    ],
)
def test_register_op_rejects_names_the_text_format_cannot_read(name, words):
    with pytest.raises(ValueError, match=f"op name {re.escape(repr(name))} .*{words}"):
        _register(name)
    with pytest.raises(ValueError, match="unknown op"):
        Op.get(name)


def test_reserved_op_names_cover_the_parser_keywords():
    from irpass.ir import op as op_module
    from irpass.ir import parser

    assert parser._KEYWORDS <= op_module.RESERVED_NAMES


@pytest.mark.parametrize("name", ["test.nodes.fn", "test.nodes.float32", "_test_infinity", "t.x_1"])
def test_accepted_op_names_read_back_from_text(name):
    from irpass.ir import IRModule, parse

    op = _register(name)
    x = var("x", shape=(2,))
    mod = IRModule.from_expr(Function([x], Call(op, [x])))
    assert parse(str(mod))["main"].body.op is op


def test_call_checks_attrs_against_the_op_schema():
    x = var("x", shape=(2,))
    c = Call(TEST_OP, [x], {"sizes": [1, 2]})
    assert c.attrs == {"axis": 0, "sizes": (1, 2)}  # default filled in
    with pytest.raises(ValueError, match="requires attribute 'sizes'"):
        Call(TEST_OP, [x])
    with pytest.raises(ValueError, match="has no attribute 'axes'.*did you mean axis"):
        Call(TEST_OP, [x], {"sizes": [1], "axes": 1})
    with pytest.raises(TypeError, match=r"test.nodes.ident.axis must be an int"):
        Call(TEST_OP, [x], {"sizes": [1], "axis": "0"})
    with pytest.raises(ValueError, match="takes 1 argument"):
        Call(TEST_OP, [x, x], {"sizes": [1]})
    # Rebuilding with the checked attrs reuses them as they are.
    assert Call(TEST_OP, [x], c.attrs).attrs is c.attrs


# -- nodes ---------------------------------------------------------------------------------


def test_var_identity_and_helpers():
    a = var("x", shape=(2, 3))
    b = var("x", shape=(2, 3))
    assert a is not b and a != b and len({a, b}) == 2
    assert a.type_annotation == TensorType((2, 3))
    assert var("i", shape=(), dtype="int64").type_annotation == TensorType((), "int64")
    with pytest.raises(ValueError, match="either type_annotation or shape"):
        var("x", TensorType((1,)), shape=(1,))
    with pytest.raises(TypeError, match="Var.name_hint"):
        Var(3)
    with pytest.raises(TypeError, match="Var.type_annotation"):
        Var("x", (2, 3))


def test_const_dtype_rules_and_readonly_data():
    assert const(1.5).data.dtype == np.float32
    assert const(2).data.dtype == np.int32
    assert const(True).data.dtype == np.bool_
    assert const([1, 2], dtype="int64").data.dtype == np.int64
    arr = np.arange(6, dtype=np.float64).reshape(2, 3)
    c = const(arr)
    assert c.data.dtype == np.float64 and c.type == TensorType((2, 3), "float64")
    arr[0, 0] = 100.0  # the constant owns a copy
    assert c.data[0, 0] == 0.0
    with pytest.raises(ValueError):
        c.data[0, 0] = 5.0
    with pytest.raises(ValueError, match="unsupported dtype 'complex128'"):
        Constant(np.zeros(2, dtype=np.complex128))
    with pytest.raises(TypeError, match="numpy.ndarray"):
        Constant([1, 2])


@pytest.mark.parametrize(
    "build, words",
    [
        (lambda x: Tuple(x), "Tuple.fields must be a sequence of Expr"),
        (lambda x: Tuple([x, 3]), r"Tuple.fields\[1\] must be an Expr"),
        (lambda x: TupleGetItem(x, -1), "TupleGetItem.index must be >= 0"),
        (lambda x: TupleGetItem(x, "0"), "TupleGetItem.index must be an int"),
        (lambda x: TupleGetItem(3, 0), "TupleGetItem.tuple_value must be an Expr"),
        (lambda x: Call(x, [x], {"a": 1}), "only calls of an Op take attributes"),
        (lambda x: Call(const(1.0), [x]), "Call.op must be an Op or a function-valued"),
        (lambda x: Call(TEST_OP, x, {"sizes": [1]}), "Call.args must be a sequence"),
        (lambda x: Let(GlobalVar("g"), x, x), "Let.var must be a Var"),
        (lambda x: Let(var("y"), None, x), "Let.value must be an Expr"),
        (lambda x: If(x, x, 1), "If.false_branch must be an Expr"),
        (lambda x: Function([x, x], x), r"Function.params\[1\]: %x appears twice"),
        (lambda x: Function([const(1)], x), r"Function.params\[0\] must be a Var"),
        (lambda x: Function([x], x, ret_type="float32"), "Function.ret_type"),
        (lambda x: GlobalVar(""), "GlobalVar.name_hint"),
    ],
)
def test_constructors_name_the_offending_field(build, words):
    x = var("x", shape=(2,))
    with pytest.raises((TypeError, ValueError), match=words):
        build(x)


def test_nodes_are_immutable():
    x = var("x", shape=(2,))
    c = Call(TEST_OP, [x], {"sizes": [1]})
    f = Function([x], c)
    for node, field in [(x, "name_hint"), (c, "args"), (f, "body"), (TEST_OP, "kernel")]:
        with pytest.raises(AttributeError, match="immutable"):
            setattr(node, field, None)
    with pytest.raises(AttributeError, match="immutable"):
        del c.op
    assert f.attrs == {} and f.with_attr("Primitive", 1).attrs == {"Primitive": 1} and f.attrs == {}


def test_checked_type_is_an_error_before_type_inference():
    x = var("x", shape=(2,))
    with pytest.raises(ValueError, match="run irpass.ir.infer_type"):
        _ = x.checked_type


def test_operator_overloads_build_calls():
    x = var("x", shape=(2,))
    y = var("y", shape=(2,))
    for expr, name in [(x + y, "add"), (x - y, "subtract"), (x * y, "multiply"), (x / y, "divide")]:
        assert isinstance(expr, Call) and expr.op is Op.get(name) and expr.args == (x, y)
    r = 2.0 * x
    assert r.op is Op.get("multiply") and isinstance(r.args[0], Constant) and r.args[1] is x
    assert r.args[0].data.dtype == np.float32
    n = -x
    assert n.op is Op.get("negative") and n.args == (x,)
    item = x[1]
    assert isinstance(item, TupleGetItem) and item.tuple_value is x and item.index == 1
    with pytest.raises(TypeError, match="not iterable"):
        list(x)


def test_children_are_in_field_order():
    x, y = var("x"), var("y")
    c = Call(TEST_OP, [x], {"sizes": [1]})
    t = Tuple([x, c])
    let = Let(y, t, y)
    f = Function([x], let)
    cond = If(x, y, c)
    assert c.children() == (TEST_OP, x)
    assert t.children() == (x, c)
    assert TupleGetItem(t, 0).children() == (t,)
    assert let.children() == (y, t, y)
    assert f.children() == (x, let)
    assert cond.children() == (x, y, c)
    assert x.children() == () and const(1).children() == ()


def test_constant_keeps_native_byte_order():
    big_endian = np.arange(4, dtype=">f4")
    c = Constant(big_endian)
    assert c.data.dtype.isnative and c.data.dtype.name == "float32"
    np.testing.assert_array_equal(c.data, [0.0, 1.0, 2.0, 3.0])


def test_constant_cannot_be_changed_through_the_callers_array():
    a = np.zeros(3, np.float32)
    a.setflags(write=False)
    c = Constant(a)
    a.setflags(write=True)
    a[0] = 42.0
    assert c.data[0] == 0.0
    with pytest.raises(ValueError):
        c.data.setflags(write=True)
    shared = Constant(c.data)  # another constant's data is shared, not copied
    assert shared.data.base is c.data.base


def test_constant_shares_a_read_only_view_of_bytes_and_copies_anything_else():
    raw = np.arange(6, dtype="<f4").tobytes()
    view = np.frombuffer(raw, dtype="<f4").reshape(2, 3)
    c = Constant(view)
    assert np.shares_memory(c.data, view)  # bytes cannot change: no copy
    with pytest.raises(ValueError):
        c.data.setflags(write=True)
    writable = np.frombuffer(bytearray(raw), dtype="<f4")  # a bytearray can change
    assert not np.shares_memory(Constant(writable).data, writable)
    big_endian = np.frombuffer(np.arange(3, dtype=">f4").tobytes(), dtype=">f4")
    assert Constant(big_endian).data.dtype.isnative  # stored in native order, copied
    strided = np.frombuffer(raw, dtype="<f4")[::2]
    c = Constant(strided)
    assert c.data.flags.c_contiguous and not np.shares_memory(c.data, strided)
    np.testing.assert_array_equal(c.data, [0.0, 2.0, 4.0])


@pytest.mark.parametrize(
    "shape, axes",
    [((600, 700), (1, 0)), ((3, 300, 450), (0, 2, 1)), ((2, 2, 260, 300), (0, 1, 3, 2))],
)
@pytest.mark.parametrize("dtype", ["<f4", ">f4", "<f2", "<i8", "bool", "<u2"])
def test_constant_copies_a_big_transposed_view_exactly(shape, axes, dtype):
    # views big enough for the blocked copy of nodes._c_copy (last axis not a multiple
    # of the block width: the last block is partial)
    rng = np.random.default_rng(7)
    a = (rng.integers(0, 1000, size=shape) if dtype != "bool" else rng.random(shape) > 0.5)
    a = a.astype(dtype)
    view = a.transpose(axes)
    assert view.strides[-2] == view.itemsize and view.shape[-1] % nodes._BLOCK
    assert view.nbytes >= nodes._BLOCKED_MIN_BYTES
    c = Constant(view)
    assert c.data.flags.c_contiguous and c.data.dtype.isnative
    assert c.data.dtype == view.dtype.newbyteorder("=")
    np.testing.assert_array_equal(c.data, view)
    assert not np.shares_memory(c.data, a)


@pytest.mark.parametrize(
    "value, words",
    [
        (2**40, r"const\(1099511627776\): value does not fit int32.*dtype='int64'"),
        ("abc", r"const\('abc'\): unsupported dtype"),
        ([1, [2, 3]], r"const\(\[1, \[2, 3\]\]\): not a tensor value"),
    ],
)
def test_const_rejects_values_it_cannot_represent(value, words):
    with pytest.raises(ValueError, match=words):
        const(value)
    assert const(2**40, dtype="int64").data.item() == 2**40


def test_attrs_copy_and_name_their_owner_in_errors():
    import copy

    a = Attrs({"axis": 1})
    assert copy.copy(a) is a and copy.deepcopy(a) is a
    with pytest.raises(TypeError, match=r"Function.attrs: attribute names must be strings"):
        Function([], const(1.0), attrs={1: 2})
    with pytest.raises(TypeError, match=r"Function.attrs\['f'\]"):
        Function([], const(1.0), attrs={"f": object()})


def test_checked_type_error_describes_the_node():
    x = var("x", shape=(2,))
    with pytest.raises(ValueError, match=r"checked_type of test.nodes.ident\(%x"):
        _ = Call(TEST_OP, [x], {"sizes": [1]}).checked_type


# -- the unchecked constructors of trusted rebuilders -----------------------------------


def test_unchecked_call_is_the_same_node_as_the_checked_one():
    from irpass import structural_equal

    x = var("x", shape=(2,))
    checked = Call(TEST_OP, [x], {"sizes": [1]})
    fast = Call._unchecked(TEST_OP, (x,), checked.attrs)
    assert type(fast) is Call and fast is not checked
    assert fast.op is TEST_OP and fast.args == (x,) and fast.attrs is checked.attrs
    assert fast.children() == checked.children()
    assert structural_equal(fast, checked)
    with pytest.raises(ValueError, match="run irpass.ir.infer_type"):
        _ = fast.checked_type  # no type yet, like every new node
    with pytest.raises(AttributeError, match="immutable"):
        fast.args = ()
    with pytest.raises(AttributeError, match="immutable"):
        del fast.op
    ty = TensorType((2,), "float32")
    typed = Call._unchecked(TEST_OP, (x,), checked.attrs, ty, (x,))
    assert type(typed) is Call and typed.checked_type is ty and typed._bound_by == (x,)
    plain = Call._unchecked(Op.get("exp"), (x,), Call(Op.get("exp"), [x]).attrs)
    assert structural_equal(plain, Call(Op.get("exp"), [x]))


def test_unchecked_function_is_the_same_node_as_the_checked_one():
    from irpass import structural_equal

    x = var("x", shape=(2,))
    body = Call(Op.get("exp"), [x])
    checked = Function([x], body, TensorType((2,), "float32"), {"Primitive": 1})
    fast = Function._unchecked((x,), body, checked.ret_type, checked.attrs)
    assert type(fast) is Function and fast.params == (x,) and fast.body is body
    assert fast.ret_type == checked.ret_type and fast.attrs == {"Primitive": 1}
    assert structural_equal(fast, checked)
    with pytest.raises(AttributeError, match="immutable"):
        fast.body = x


def test_unchecked_let_and_var_are_the_same_nodes_as_the_checked_ones():
    from irpass import structural_equal

    x = var("x", shape=(2,))
    ty = TensorType((2,), "float32")
    v = Var._unchecked("t", ty)
    assert type(v) is Var and v.name_hint == "t" and v.type_annotation is ty
    assert Var._unchecked("u").type_annotation is None
    value = Call(Op.get("exp"), [x])
    fast = Let._unchecked(v, value, v)
    checked_var = Var("t", ty)
    checked = Let(checked_var, value, checked_var)
    assert type(fast) is Let and fast.var is v and fast.value is value and fast.body is v
    assert structural_equal(Function([x], fast), Function([x], checked))
    with pytest.raises(ValueError, match="run irpass.ir.infer_type"):
        _ = fast.checked_type
    with pytest.raises(AttributeError, match="immutable"):
        fast.body = x
    with pytest.raises(AttributeError, match="immutable"):
        v.name_hint = "w"


def _fresh_own(make):
    """Constant._own on an array only this frame holds (as a kernel result is)."""
    out = make()
    return Constant._own(out)


def test_constant_own_takes_over_a_fresh_array_without_copying():
    import sys

    c = _fresh_own(lambda: np.arange(6, dtype=np.float32).reshape(2, 3) + 1)
    assert c.type == TensorType((2, 3), "float32")
    np.testing.assert_array_equal(c.data, np.arange(6).reshape(2, 3) + 1)
    storage = c.data.base
    if sys.implementation.name == "cpython":  # the refcount test is CPython's
        assert storage is not None and storage.base is None  # the kernel's array itself
    # the same invariants as Constant(): read-only view of read-only owned storage
    assert not c.data.flags.writeable and not storage.flags.writeable
    with pytest.raises(ValueError):
        c.data[0, 0] = 5.0
    with pytest.raises(ValueError):
        c.data.setflags(write=True)
    assert Constant(c.data).data.base is storage  # shared, not copied, like any constant
    with pytest.raises(ValueError, match="run irpass.ir.infer_type"):
        _ = c.checked_type


def test_constant_own_copies_what_it_cannot_take_over():
    held = np.ones(3, np.float32) * 2
    keep = [held]  # someone else holds the array: it must stay theirs
    c = Constant._own(held)
    assert c.data.base is not held and held.flags.writeable
    held[0] = 9.0
    assert c.data[0] == 2.0 and keep
    # a view (not the owner of its memory), a non-contiguous array, another byte order
    base = np.arange(8, dtype=np.float32)
    for make in (
        lambda: base[::2],
        lambda: np.ones((3, 2), np.float32, order="F") * 1,
        lambda: np.arange(4, dtype=">f4"),
    ):
        c = _fresh_own(make)
        assert c.data.flags.c_contiguous and c.data.dtype.isnative
        assert not c.data.flags.writeable
    assert base.flags.writeable  # the view's base was not frozen
    with pytest.raises(ValueError, match="unsupported dtype 'complex128'"):
        _fresh_own(lambda: np.zeros(2, dtype=np.complex128))
    with pytest.raises(TypeError, match="numpy.ndarray"):
        Constant._own([1.0, 2.0])


def test_owned_storage_entries_of_dead_arrays_are_swept():
    import gc

    from irpass.ir import nodes

    made = [_fresh_own(lambda: np.zeros(4, np.float32) + 1) for _ in range(50)]
    made += [Constant(np.zeros(4, np.float32)) for _ in range(50)]
    assert all(nodes._is_owned(c.data.base) for c in made)
    del made
    gc.collect()
    nodes._sweep_owned()  # (runs on its own each time the table has doubled)
    assert all(ref() is not None for ref in nodes._OWNED_STORAGE.values())


def test_constant_keeps_a_repeated_value_as_a_broadcast_of_its_own_copy():
    fill = np.array(0.5, dtype=np.float32)
    c = Constant(np.broadcast_to(fill, (1000, 1000)))
    assert c.data.shape == (1000, 1000) and (c.data == 0.5).all()
    assert c.data.strides == (0, 0)  # one element stored, not a million
    assert not np.shares_memory(c.data, fill)
    fill[...] = 7.0  # the caller's scalar is not the constant's
    assert (c.data == 0.5).all()
    with pytest.raises(ValueError):
        c.data.setflags(write=True)
    # a constant rebuilt from it stays one element, a big-endian source comes out native
    assert Constant(c.data).data.strides == (0, 0)
    swapped = Constant(np.broadcast_to(np.array(3, ">i4"), (2, 2)))
    assert swapped.data.dtype == np.dtype("int32") and (swapped.data == 3).all()
    # a single element or an ordinary array is copied as before
    assert Constant(np.broadcast_to(fill, (1,))).data.strides == (4,)
