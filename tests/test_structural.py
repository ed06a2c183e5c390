"""Structural equality, assert_structural_equal and structural hashing.

Expected results are worked out by hand, or (for random programs) come from
a small reference written here: a recursive canonical form in which bound
vars are numbered at their binding site, so two programs are alpha-equivalent
exactly when their canonical forms are equal.
"""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from irpass.ir import (
    Attrs,
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
    assert_structural_equal,
    structural_equal,
    structural_hash,
)
from irpass.ir.op import AttrField, OpPattern, attr_int, attr_str, register_op
from work_counts import calls_made

# -- private test ops -----------------------------------------------------------------------


def _first_type(arg_types, attrs):
    return arg_types[0]


def _first_value(args, attrs):
    return args[0]


def _op(name, num_inputs, attrs=()):
    try:
        return Op.get(name)
    except ValueError:
        return register_op(
            name,
            num_inputs=num_inputs,
            type_rel=_first_type,
            kernel=_first_value,
            pattern=OpPattern.OPAQUE,
            attrs=attrs,
            owner="tests",
        )


ADD = _op("test.structural.add", 2)
MUL = _op("test.structural.mul", 2)
NEG = _op("test.structural.neg", 1)
CONCAT = _op("test.structural.concat", -1)
AXIS = _op(
    "test.structural.axis_op",
    1,
    attrs=(AttrField("axis", attr_int, 0), AttrField("mode", attr_str, "same")),
)

T = TensorType((2, 3), "float32")
T2 = TensorType((3, 2), "float32")


def add(a, b):
    return Call(ADD, (a, b))


def neg(a):
    return Call(NEG, (a,))


def axis_op(a, axis=0, mode="same"):
    return Call(AXIS, (a,), {"axis": axis, "mode": mode})


def c(value, dtype="float32"):
    """A fresh constant object (never shared between lhs and rhs by accident)."""
    return Constant(np.array(value, dtype=dtype))


def mismatch(lhs, rhs, **kwargs):
    """The assert_structural_equal message; also checks structural_equal agrees."""
    assert not structural_equal(lhs, rhs, **kwargs)
    assert not structural_equal(rhs, lhs, **kwargs)
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(lhs, rhs, **kwargs)
    return str(info.value)


def assert_equal_and_same_hash(lhs, rhs, **kwargs):
    assert structural_equal(lhs, rhs, **kwargs)
    assert structural_equal(rhs, lhs, **kwargs)
    assert_structural_equal(lhs, rhs, **kwargs)
    assert structural_hash(lhs, **kwargs) == structural_hash(rhs, **kwargs)


# -- each node kind, each field ----------------------------------------------------------------


def _field_cases():
    """(id, build) where build() returns (lhs, rhs, path, lhs text, rhs text)."""
    x = Var("x", T)
    cases = {}

    def case(fn):
        cases[fn.__name__] = fn
        return fn

    @case
    def kind():
        return add(x, c(1.0)), Tuple([x]), "<root>", "Call(test.structural.add", "Tuple(1 fields)"

    @case
    def global_var_name():
        return (
            Call(GlobalVar("f"), (x,)),
            Call(GlobalVar("g"), (x,)),
            "<root>.op",
            "GlobalVar(@f)",
            "GlobalVar(@g)",
        )

    @case
    def constant_dtype():
        return c([1, 2], "float32"), c([1, 2], "int32"), "<root>.data.dtype", "float32", "int32"

    @case
    def constant_shape():
        return c([1, 2]), c([[1, 2]]), "<root>.data.shape", "(2,)", "(1, 2)"

    @case
    def constant_values():
        return c([[1, 2], [3, 4]]), c([[1, 2], [3, 5]]), "<root>.data[1, 1]", "4.0", "5.0"

    @case
    def constant_scalar():
        return add(x, c(1.0)), add(x, c(2.0)), "<root>.args[1].data", "1.0", "2.0"

    @case
    def tuple_arity():
        return Tuple([x, x]), Tuple([x, x, x]), "<root>.fields", "2 fields", "3 fields"

    @case
    def tuple_field():
        return Tuple([x, c(1.0)]), Tuple([x, c(2.0)]), "<root>.fields[1].data", "1.0", "2.0"

    @case
    def getitem_index():
        tup = Tuple([x, x])
        return TupleGetItem(tup, 0), TupleGetItem(tup, 1), "<root>.index", "0", "1"

    @case
    def getitem_value():
        return (
            TupleGetItem(Tuple([x, c(1.0)]), 0),
            TupleGetItem(Tuple([x, c(3.0)]), 0),
            "<root>.tuple_value.fields[1].data",
            "1.0",
            "3.0",
        )

    @case
    def call_op():
        return (
            add(x, x),
            Call(MUL, (x, x)),
            "<root>.op",
            "Op(test.structural.add)",
            "Op(test.structural.mul)",
        )

    @case
    def call_op_kind():
        return (
            add(x, x),
            Call(GlobalVar("add"), (x, x)),
            "<root>.op",
            "Op(test.structural.add)",
            "GlobalVar(@add)",
        )

    @case
    def call_arity():
        return Call(CONCAT, (x, x)), Call(CONCAT, (x, x, x)), "<root>.args", "2 args", "3 args"

    @case
    def call_arg():
        return add(x, neg(c(1.0))), add(x, neg(c(2.0))), "<root>.args[1].args[0].data", "1.0", "2.0"

    @case
    def call_attr():
        return axis_op(x, axis=1), axis_op(x, axis=2), "<root>.attrs['axis']", "1", "2"

    @case
    def call_attr_str():
        return axis_op(x, mode="a"), axis_op(x, mode="b"), "<root>.attrs['mode']", "'a'", "'b'"

    @case
    def let_var_type():
        a, b = Var("a", T), Var("b", T2)
        return Let(a, x, a), Let(b, x, b), "<root>.var.type_annotation", str(T), str(T2)

    @case
    def let_value():
        a, b = Var("a"), Var("b")
        return Let(a, c(1.0), a), Let(b, c(2.0), b), "<root>.value.data", "1.0", "2.0"

    @case
    def let_body():
        a, b = Var("a"), Var("b")
        return Let(a, x, neg(a)), Let(b, x, b), "<root>.body", "Call(test.structural.neg", "%b"

    @case
    def if_cond():
        return (
            If(c(True, "bool"), x, x),
            If(c(False, "bool"), x, x),
            "<root>.cond.data",
            "True",
            "False",
        )

    @case
    def if_true_branch():
        return If(x, x, x), If(x, neg(x), x), "<root>.true_branch", "%x", "Call("

    @case
    def if_false_branch():
        return If(x, x, c(1.0)), If(x, x, c(2.0)), "<root>.false_branch.data", "1.0", "2.0"

    @case
    def function_arity():
        p, q, r = Var("p"), Var("q"), Var("r")
        return Function([p], p), Function([q, r], q), "<root>.params", "1 params", "2 params"

    @case
    def function_param_type():
        p1, p2, q1, q2 = Var("p1", T), Var("p2", T), Var("q1", T), Var("q2")
        return (
            Function([p1, p2], p1),
            Function([q1, q2], q1),
            "<root>.params[1].type_annotation",
            str(T),
            "None",
        )

    @case
    def function_ret_type():
        p, q = Var("p"), Var("q")
        return Function([p], p, T), Function([q], q, T2), "<root>.ret_type", str(T), str(T2)

    @case
    def function_attr_value():
        p, q = Var("p"), Var("q")
        return (
            Function([p], p, attrs={"Primitive": 1}),
            Function([q], q, attrs={"Primitive": 2}),
            "<root>.attrs['Primitive']",
            "1",
            "2",
        )

    @case
    def function_attr_missing():
        p, q = Var("p"), Var("q")
        return (
            Function([p], p, attrs={"Primitive": 1}),
            Function([q], q),
            "<root>.attrs['Primitive']",
            "1",
            "no such key",
        )

    @case
    def function_body():
        p, q = Var("p"), Var("q")
        return (
            Function([p], neg(p)),
            Function([q], add(q, q)),
            "<root>.body.op",
            "Op(test.structural.neg)",
            "Op(test.structural.add)",
        )

    return cases


_CASES = _field_cases()


@pytest.mark.parametrize("name", sorted(_CASES))
def test_each_field_difference_is_found_and_named(name):
    lhs, rhs, path, ltext, rtext = _CASES[name]()
    message = mismatch(lhs, rhs)
    assert message.startswith(f"structural mismatch at {path}: lhs has ")
    lhs_part, rhs_part = message.split(", rhs has ", 1)
    assert ltext in lhs_part
    assert rtext in rhs_part


def test_equal_nodes_of_every_kind():
    x = Var("x", T)

    def build():
        p, q, v = Var("p", T), Var("q"), Var("v", T)
        tup = Tuple([p, c([1.0, 2.0]), GlobalVar("g")])
        body = Let(v, axis_op(TupleGetItem(tup, 0), axis=1), If(c(True, "bool"), add(v, x), neg(q)))
        return Function([p, q], body, ret_type=T, attrs={"Primitive": 1, "name": "f"})

    assert_equal_and_same_hash(build(), build())


def test_module_differences():
    def build(axis, extra=False):
        x = Var("x", T)
        funcs = {"main": Function([x], neg(axis_op(neg(x), axis=axis)))}
        if extra:
            y = Var("y", T)
            funcs["helper"] = Function([y], y)
        return IRModule(funcs)

    assert_equal_and_same_hash(build(1), build(1))
    assert_equal_and_same_hash(build(1, True), build(1, True))
    message = mismatch(build(1), build(2))
    assert message == (
        "structural mismatch at @main.body.args[0].attrs['axis']: lhs has 1, rhs has 2"
    )
    message = mismatch(build(1, extra=True), build(1))
    assert message.startswith("structural mismatch at @helper: lhs has Function(1 params)")
    assert "rhs has no function @helper" in message


def test_module_global_vars_compare_by_name():
    def build():
        x, y = Var("x", T), Var("y", T)
        helper = Function([y], neg(y))
        mod = IRModule({"helper": helper})
        main = Function([x], Call(mod.get_global_var("helper"), (x,)))
        return mod.with_function("main", main)

    assert_equal_and_same_hash(build(), build())
    # The order functions were added in does not matter.
    x, y = Var("x", T), Var("y", T)
    other = IRModule(
        {
            "main": Function([x], Call(GlobalVar("helper"), (x,))),
            "helper": Function([y], neg(y)),
        }
    )
    assert_equal_and_same_hash(build(), other)


# -- attrs and plain values ---------------------------------------------------------------------


def test_attr_values_are_typed():
    p, q = Var("p"), Var("q")
    int_one = Function([p], p, attrs={"k": 1})
    assert "<root>.attrs['k']: lhs has 1, rhs has 1.0" in mismatch(
        int_one, Function([q], q, attrs={"k": 1.0})
    )
    assert "lhs has 1, rhs has True" in mismatch(int_one, Function([q], q, attrs={"k": True}))
    nan_l = Function([p], p, attrs={"k": (1.0, math.nan)})
    nan_r = Function([q], q, attrs={"k": (1.0, math.nan)})
    assert_equal_and_same_hash(nan_l, nan_r)
    zero_l = Function([p], p, attrs={"k": -0.0})
    zero_r = Function([q], q, attrs={"k": 0.0})
    assert_equal_and_same_hash(zero_l, zero_r)
    nested = mismatch(
        Function([p], p, attrs={"k": (1, (2, 3))}), Function([q], q, attrs={"k": (1, (2, 4))})
    )
    assert nested.startswith("structural mismatch at <root>.attrs['k'][1][1]: lhs has 3, rhs has 4")


def test_plain_values_types_and_attrs():
    assert_equal_and_same_hash(TensorType((2, 3), "float32"), TensorType([2, 3], "float32"))
    assert mismatch(T, T2) == (f"structural mismatch at <root>: lhs has {T}, rhs has {T2}")
    ft = FuncType([T, TupleType([T, T2])], T)
    assert_equal_and_same_hash(ft, FuncType([T, TupleType([T, T2])], T))
    assert not structural_equal(ft, FuncType([T, TupleType([T2, T])], T))
    assert mismatch(Attrs({"a": 1, "b": "s"}), Attrs({"a": 2, "b": "s"})).startswith(
        "structural mismatch at <root>['a']: lhs has 1, rhs has 2"
    )
    assert_equal_and_same_hash(Attrs({"a": (1, 2)}), {"a": (1, 2)})
    assert_equal_and_same_hash([1, "a", None, 2.5], (1, "a", None, 2.5))
    assert not structural_equal(1, 1.0)
    assert not structural_equal(1, True)
    assert not structural_equal(None, 0)
    assert "lhs has 2 items, rhs has 3 items" in mismatch([1, 2], [1, 2, 3])
    assert_equal_and_same_hash(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    assert_equal_and_same_hash([math.nan, -0.0], [math.nan, 0.0])
    assert not structural_equal(math.nan, 0.0)


def test_sequences_of_programs_share_the_var_matching():
    x, y = Var("x", T), Var("y", T)
    # Element-wise each pair is equal with map_free_vars, but x cannot match both y and x.
    assert structural_equal([neg(x)], [neg(y)], map_free_vars=True)
    message = mismatch([neg(x), neg(x)], [neg(y), neg(x)], map_free_vars=True)
    assert message.startswith("structural mismatch at <root>[1].args[0]: lhs has %x")
    assert structural_equal([neg(x), neg(x)], [neg(y), neg(y)], map_free_vars=True)
    assert structural_hash([neg(x), neg(x)], map_free_vars=True) == structural_hash(
        [neg(y), neg(y)], map_free_vars=True
    )


def test_unsupported_values_are_rejected():
    with pytest.raises(TypeError, match="does not support object"):
        structural_equal(object(), object())
    with pytest.raises(TypeError, match="does not support object"):
        structural_hash([1, object()])
    with pytest.raises(TypeError, match="string keys only"):
        structural_equal({1: "a"}, {1.0: "a"})


# -- constants ----------------------------------------------------------------------------------


def test_constants_compare_by_dtype_shape_and_values():
    assert_equal_and_same_hash(c([[1, 2], [3, 4]]), c([[1, 2], [3, 4]]))
    assert_equal_and_same_hash(c([1.0, np.nan, -0.0]), c([1.0, np.nan, 0.0]))
    assert_equal_and_same_hash(c([True, False], "bool"), c([True, False], "bool"))
    # A different NaN bit pattern is still NaN.
    odd_nan = np.array([np.nan], dtype="float32").view("uint32") | np.uint32(1)
    assert_equal_and_same_hash(c([np.nan]), Constant(odd_nan.view("float32")))
    assert not structural_equal(c([1, 2], "int32"), c([1, 2], "int64"))
    assert not structural_equal(c(1.0), c([1.0]))
    assert not structural_equal(c([np.nan]), c([0.0]))


def test_big_constants():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((64, 64)).astype("float32")
    data[3, 5] = np.nan
    data[7, 7] = -0.0
    other = data.copy()
    other[7, 7] = 0.0
    assert_equal_and_same_hash(Constant(data), Constant(other))
    other[40, 2] += 1.0
    message = mismatch(Constant(data), Constant(other))
    assert message.startswith("structural mismatch at <root>.data[40, 2]: lhs has ")
    assert structural_hash(Constant(data)) != structural_hash(Constant(other))


# -- variables ------------------------------------------------------------------------------------


def test_bound_vars_compare_up_to_renaming():
    def fn(n1, n2):
        a, b = Var(n1, T), Var(n2, T)
        return Function([a, b], add(a, neg(b)))

    assert_equal_and_same_hash(fn("x", "y"), fn("p", "q"))
    assert_equal_and_same_hash(fn("x", "y"), fn("y", "x"))  # names never matter
    a, b = Var("a", T), Var("b", T)
    swapped = Function([a, b], add(b, neg(a)))
    message = mismatch(fn("x", "y"), swapped)
    assert message.startswith("structural mismatch at <root>.body.args[0]: lhs has %x")
    assert "(matched with rhs %a" in message
    assert message.split(", rhs has ", 1)[1].startswith("%b")


def test_let_vars_compare_up_to_renaming():
    x = Var("x", T)

    def prog(n1, n2):
        u, v = Var(n1), Var(n2)
        return Let(u, neg(x), Let(v, add(u, x), add(v, u)))

    assert_equal_and_same_hash(prog("u", "v"), prog("a", "b"))
    u, v = Var("u"), Var("v")
    swapped = Let(u, neg(x), Let(v, add(u, x), add(u, v)))
    assert mismatch(prog("u", "v"), swapped).startswith(
        "structural mismatch at <root>.body.body.args[0]: lhs has %v"
    )
    assert structural_hash(prog("u", "v")) != structural_hash(swapped)


def test_recursive_let():
    x = Var("x", T)

    def prog(depth_arg):
        # let f = fn (y) { f(neg(y)) }; f(<depth_arg>)
        f, y = Var("f"), Var("y", T)
        return Let(f, Function([y], Call(f, (neg(y),))), Call(f, (depth_arg,)))

    assert_equal_and_same_hash(prog(x), prog(x))
    assert mismatch(prog(x), prog(neg(x))).startswith("structural mismatch at <root>.body.args[0]")


def test_matching_is_one_to_one_for_bound_vars():
    a, b, p, q = Var("a"), Var("b"), Var("p"), Var("q")
    lhs = Function([a], Function([b], add(a, b)))
    rhs = Function([p], Function([q], add(p, p)))
    message = mismatch(lhs, rhs)
    assert message.startswith("structural mismatch at <root>.body.body.args[1]: lhs has %b")


def test_free_vars_need_the_same_object_unless_mapped():
    x, y, x2 = Var("x", T), Var("y", T), Var("x", T)
    assert_equal_and_same_hash(add(x, c(1.0)), add(x, c(1.0)))
    message = mismatch(add(x, c(1.0)), add(y, c(1.0)))
    assert message.startswith("structural mismatch at <root>.args[0]: lhs has free var %x")
    assert "map_free_vars=True" in message
    assert "a different Var object" in mismatch(neg(x), neg(x2))
    assert_equal_and_same_hash(add(x, c(1.0)), add(y, c(1.0)), map_free_vars=True)
    # Mapped free vars must agree on their type annotation.
    z = Var("z", T2)
    message = mismatch(neg(x), neg(z), map_free_vars=True)
    assert message.startswith("structural mismatch at <root>.args[0].type_annotation")


def test_free_var_matching_is_one_to_one():
    x, y, z = Var("x"), Var("y"), Var("z")
    assert not structural_equal(add(x, y), add(z, z), map_free_vars=True)
    assert not structural_equal(add(x, x), add(y, z), map_free_vars=True)
    assert structural_equal(add(x, y), add(y, x), map_free_vars=True)
    assert not structural_equal(add(x, y), add(y, x))
    message = mismatch(add(x, y), add(z, z), map_free_vars=True)
    assert message.startswith("structural mismatch at <root>.args[1]: lhs has free var %y")
    assert "matched with lhs %x" in message


def test_a_free_var_never_equals_a_bound_one():
    x, a, b = Var("x"), Var("a"), Var("b")
    assert not structural_equal(
        Function([a], add(a, x)), Function([b], add(b, b)), map_free_vars=True
    )
    # ... and a var bound on one side is not the same free var on the other.
    assert not structural_equal(Function([a], a), Function([b], a))


def test_hash_of_free_vars():
    x, y, x2 = Var("x", T), Var("y", T), Var("x", T)
    # Without mapping: by name and type (identical objects hash alike).
    assert structural_hash(neg(x)) == structural_hash(neg(x2))
    assert structural_hash(neg(x)) != structural_hash(neg(y))
    assert structural_hash(neg(x)) != structural_hash(neg(Var("x", T2)))
    # With mapping: by order of first appearance.
    assert structural_hash(add(x, y), map_free_vars=True) == structural_hash(
        add(y, x), map_free_vars=True
    )
    assert structural_hash(add(x, y), map_free_vars=True) != structural_hash(
        add(x, x), map_free_vars=True
    )


# -- sharing --------------------------------------------------------------------------------------


def test_dag_equals_tree():
    x = Var("x", T)
    s = neg(x)
    dag = add(s, s)
    tree = add(neg(x), neg(x))
    assert_equal_and_same_hash(dag, tree)
    assert_equal_and_same_hash(tree, dag)


def _diamond(levels, leaf):
    node = leaf
    for _ in range(levels):
        node = add(neg(node), node)
    return node


def _diamond_tree(levels, leaf):
    if levels == 0:
        return leaf
    return add(neg(_diamond_tree(levels - 1, leaf)), _diamond_tree(levels - 1, leaf))


def test_small_diamond_equals_its_tree_expansion():
    x = Var("x", T)
    assert_equal_and_same_hash(_diamond(7, x), _diamond_tree(7, x))


def test_shared_functions_and_lets():
    # The same binder-containing node shared on the lhs and duplicated (with the same vars)
    # on the rhs: still equal.
    p = Var("p", T)
    f = Function([p], neg(p))
    x = Var("x", T)
    lhs = Tuple([Call(f, (x,)), Call(f, (x,))])
    rhs = Tuple([Call(Function([p], neg(p)), (x,)), Call(Function([p], neg(p)), (x,))])
    assert_equal_and_same_hash(lhs, rhs)
    # Copies with their own params are a different program, as in TVM: a var matched once
    # stays matched for the whole comparison.
    q1, q2 = Var("q1", T), Var("q2", T)
    renamed = Tuple([Call(Function([q1], neg(q1)), (x,)), Call(Function([q2], neg(q2)), (x,))])
    assert mismatch(lhs, renamed).startswith("structural mismatch at <root>.fields[1].op.params[0]")


def test_diamond_ladder_is_linear():
    calls = []
    for levels in (1_000, 4_000, 10_000):  # 2**levels paths from the root
        x = Var("x", T)
        lhs, rhs = _diamond(levels, x), _diamond(levels, x)

        def compare(lhs=lhs, rhs=rhs, x=x, levels=levels):
            assert structural_equal(lhs, rhs)
            assert structural_hash(lhs) == structural_hash(rhs)
            assert not structural_equal(lhs, _diamond(levels, Var("y", T)))

        if levels == 10_000:  # a walk of the paths would never end
            compare()
        else:
            calls.append(calls_made(compare)[1])
    assert calls[1] < 5 * calls[0]  # 4x the levels: about 4x the calls


# -- hashing ------------------------------------------------------------------------------------


def test_hash_is_a_64_bit_int():
    h = structural_hash(add(Var("x"), c(1.0)))
    assert isinstance(h, int)
    assert 0 <= h < 2**64


_PROGRAM_SOURCE = textwrap.dedent(
    """
    import numpy as np
    from irpass.ir import (Call, Constant, Function, GlobalVar, IRModule, Let, Op, TensorType,
                           Tuple, TupleGetItem, Var, structural_hash)
    from irpass.ir.op import AttrField, OpPattern, attr_int, attr_str, register_op

    def _get(name, n, attrs=()):
        try:
            return Op.get(name)
        except ValueError:
            return register_op(name, num_inputs=n, type_rel=lambda t, a: t[0],
                               kernel=lambda v, a: v[0], pattern=OpPattern.OPAQUE, attrs=attrs)

    ADD = _get("test.structural.add", 2)
    AXIS = _get("test.structural.axis_op", 1,
                (AttrField("axis", attr_int, 0), AttrField("mode", attr_str, "same")))
    T = TensorType((2, 3), "float32")
    x, free, v = Var("x", T), Var("free_var", T), Var("v")
    big = Constant(np.arange(100, dtype="float32").reshape(10, 10))
    body = Let(v, Call(AXIS, (x,), {"axis": 1, "mode": "reflect"}),
               Tuple([Call(ADD, (v, free)), TupleGetItem(Tuple([big, Constant(np.array(0.5))]), 1),
                      Call(GlobalVar("helper"), (x,))]))
    y = Var("y", T)
    MOD = IRModule({"main": Function([x], body, attrs={"Compiler": "ccompiler", "eps": 1e-5}),
                    "helper": Function([y], y)})
    """
)


def test_hash_is_the_same_in_other_processes():
    scope: dict = {}
    exec(_PROGRAM_SOURCE, scope)
    expected = structural_hash(scope["MOD"])
    script = _PROGRAM_SOURCE + "\nprint(structural_hash(MOD))\n"
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        assert int(out.stdout.strip()) == expected


def test_hash_distinguishes_small_changes():
    x, y = Var("x", T), Var("y", T)
    programs = [
        neg(x),
        neg(y),
        add(x, y),
        add(y, x),
        add(x, x),
        Call(MUL, (x, y)),
        axis_op(x, axis=0),
        axis_op(x, axis=1),
        axis_op(x, axis=1, mode="other"),
        Tuple([x, y]),
        Tuple([y, x]),
        Tuple([x]),
        Tuple([]),
        TupleGetItem(Tuple([x, y]), 0),
        TupleGetItem(Tuple([x, y]), 1),
        If(x, x, y),
        If(x, y, x),
        c(1.0),
        c(2.0),
        c(1.0, "float64"),
        c([1.0]),
        c(1, "int32"),
        GlobalVar("f"),
        GlobalVar("g"),
        Function([x], x),
        Function([x], x, ret_type=T),
        Function([x], x, attrs={"Primitive": 1}),
        Function([x, y], x),
        Function([x, y], y),
        Let(Var("v"), x, x),
        Let(Var("v", T), x, x),
        (lambda v: Let(v, x, v))(Var("v")),
        T,
        T2,
        TupleType([T, T2]),
        FuncType([T], T2),
        (1, 2),
        (2, 1),
        "a",
        None,
        1,
        1.0,
        True,
    ]
    hashes = {structural_hash(p) for p in programs}
    assert len(hashes) == len(programs)


# -- deep programs ------------------------------------------------------------------------------


def _call_chain(n, x):
    one = c(1.0)
    node = x
    for _ in range(n):
        node = add(node, one)
    return node


def _let_chain(n, x):
    """let v0 = 1.0; let v1 = v0; ...; add(v_last, x): x is used only at the bottom."""
    vars_ = [Var(f"v{i}", T) for i in range(n)]
    body = add(vars_[-1], x)
    for i in range(n - 1, 0, -1):
        body = Let(vars_[i], vars_[i - 1], body)
    return Let(vars_[0], c(1.0), body)


def _check_deep(n, builder, repeated=None):
    x, y = Var("x", T), Var("y", T)
    lhs = Function([x], builder(n, x))
    if repeated is None:
        # Cheaper for a million nodes: a new root over the same body is still compared node
        # by node (only the root is checked for identity).
        rhs = Function([x], lhs.body)
    else:
        rhs = Function([y], builder(n, y))
    assert structural_equal(lhs, rhs)
    assert structural_hash(lhs) == structural_hash(rhs)
    if repeated is not None:
        # Same body, different binder: the difference is at the very bottom.
        message = mismatch(lhs, Function([y], lhs.body))
        assert message.startswith("structural mismatch at <root>")
        assert f"({repeated})*" in message
        assert len(message) < 600


def test_deep_call_chain():
    _check_deep(100_000, _call_chain, ".args[0]")


def test_deep_let_chain():
    _check_deep(100_000, _let_chain, ".body")


def test_deep_nesting_of_other_nodes():
    x = Var("x", T)
    tup_l, tup_r, fn_l, fn_r, if_l, if_r = x, x, x, x, x, x
    for _ in range(20_000):
        tup_l, tup_r = TupleGetItem(Tuple([tup_l]), 0), TupleGetItem(Tuple([tup_r]), 0)
        p, q = Var("p"), Var("q")
        fn_l, fn_r = Function([p], fn_l), Function([q], fn_r)
        if_l, if_r = If(x, if_l, x), If(x, if_r, x)
    for lhs, rhs in ((tup_l, tup_r), (fn_l, fn_r), (if_l, if_r)):
        assert_equal_and_same_hash(lhs, rhs)


@pytest.mark.slow
def test_million_node_call_chain():
    _check_deep(1_000_000, _call_chain)


@pytest.mark.slow
def test_million_deep_let_chain():
    _check_deep(1_000_000, _let_chain)


# -- random programs against a reference ----------------------------------------------------------

FREE = [Var("x", T), Var("y", T), Var("z")]
FREE_RENAMED = [Var("x2", T), Var("y2", T), Var("z2")]
NAMES = ["a", "b", "x"]


class Picker:
    """Random choices from hypothesis data or from a seeded random.Random."""

    def __init__(self, data=None, rng=None):
        self.data, self.rng = data, rng

    def int(self, lo, hi):
        if self.data is not None:
            return self.data.draw(st.integers(lo, hi))
        return self.rng.randint(lo, hi)

    def pick(self, seq):
        return seq[self.int(0, len(seq) - 1)]


def random_program(p, depth=4):
    """A small well-formed program; closed sub-programs are sometimes shared (a DAG)."""
    closed = []

    def build(scope, depth):
        k = p.int(0, 2) if depth <= 0 else p.int(0, 10)
        if k == 0:
            return p.pick(scope + FREE)
        if k == 1:
            return c(p.pick([0.0, 1.0, math.nan]))
        if k == 2:
            return GlobalVar(p.pick(["f", "g"]))
        d = depth - 1
        if k == 3:
            e = add(build(scope, d), build(scope, d))
        elif k == 4:
            e = axis_op(build(scope, d), axis=p.int(0, 1))
        elif k == 5:
            e = Tuple([build(scope, d) for _ in range(p.int(0, 2))])
        elif k == 6:
            e = TupleGetItem(Tuple([build(scope, d), build(scope, d)]), p.int(0, 1))
        elif k == 7:
            v = Var(p.pick(NAMES), p.pick([None, T]))
            e = Let(v, build(scope, d), build(scope + [v], d))
        elif k == 8:
            params = [Var(p.pick(NAMES), p.pick([None, T])) for _ in range(p.int(0, 2))]
            e = Function(
                params,
                build(scope + params, d),
                ret_type=p.pick([None, T]),
                attrs=p.pick([None, {"Primitive": 1}]),
            )
        elif k == 9:
            e = If(build(scope, d), build(scope, d), build(scope, d))
        else:
            return p.pick(closed) if closed else p.pick(FREE)
        if not scope:
            closed.append(e)
        return e

    return build([], depth)


def copy_program(e, p, rename=True, share=True, rename_free=False, mutate_at=-1):
    """Rebuild ``e``: bound vars renamed to fresh vars, sharing kept or expanded into a tree,
    free vars optionally renamed, and node number ``mutate_at`` (pre-order) replaced."""
    env = dict(zip(FREE, FREE_RENAMED, strict=True)) if rename_free else {}
    memo = {}
    count = [0]

    def fresh(v):
        if not rename:
            return v
        if v not in env:
            env[v] = Var(p.pick(NAMES) + "_", v.type_annotation)
        return env[v]

    def go(e, scope, mutable=True):
        count[0] += 1
        if mutable and count[0] - 1 == mutate_at:
            return p.pick(scope + FREE + [c(0.0), c(2.0), GlobalVar("g")])
        if share and e in memo:
            return memo[e]
        t = type(e)
        if t is Var:
            out = env.get(e, e)
        elif t in (Constant, GlobalVar, Op):
            out = Constant(e.data.copy()) if t is Constant else e
        elif t is Call:
            out = Call(go(e.op, scope, False), [go(a, scope) for a in e.args], e.attrs)
        elif t is Tuple:
            out = Tuple([go(f, scope) for f in e.fields])
        elif t is TupleGetItem:
            out = TupleGetItem(go(e.tuple_value, scope), e.index)
        elif t is If:
            out = If(*(go(ch, scope) for ch in e.children()))
        elif t is Let:
            v = fresh(e.var)
            out = Let(v, go(e.value, scope), go(e.body, scope + [v]))
        else:
            params = [fresh(q) for q in e.params]
            out = Function(params, go(e.body, scope + params), e.ret_type, e.attrs)
        memo[e] = out
        return out

    return go(e, [])


def canonical(e, map_free_vars):
    """Reference: a nested tuple, equal for two programs exactly when they are equal.

    Bound vars are numbered at their binding site (in pre-order, a var keeps its first
    number), free vars are identified by object, or numbered at first appearance when
    map_free_vars. The program is walked as a tree (sharing expanded).
    """
    numbers = {}
    counter = [0]

    def number(v, kind):
        if v not in numbers:
            numbers[v] = (kind, counter[0])
            counter[0] += 1

    def value(x):
        if isinstance(x, tuple):
            return tuple(value(i) for i in x)
        if isinstance(x, float) and math.isnan(x):
            return ("float", "nan")
        if isinstance(x, float) and x == 0:
            return ("float", 0.0)
        return (type(x).__name__, x)

    def attrs(a):
        return tuple(sorted((k, value(v)) for k, v in a.items()))

    def go(e):
        t = type(e)
        if t is Var:
            if e not in numbers:
                if map_free_vars:
                    number(e, "free")
                    numbers[e] += (e.type_annotation,)
                else:
                    return ("var", "free", id(e))
            return ("var",) + numbers[e]
        if t is Constant:
            data = [value(v) for v in e.data.ravel().tolist()]
            return ("const", e.data.dtype.name, e.data.shape, tuple(data))
        if t is GlobalVar:
            return ("global", e.name_hint)
        if t is Op:
            return ("op", e.name)
        if t is Call:
            return ("call", go(e.op), attrs(e.attrs), tuple(go(a) for a in e.args))
        if t is Tuple:
            return ("tuple", tuple(go(f) for f in e.fields))
        if t is TupleGetItem:
            return ("getitem", e.index, go(e.tuple_value))
        if t is If:
            return ("if", go(e.cond), go(e.true_branch), go(e.false_branch))
        if t is Let:
            number(e.var, "bound")
            return ("let", e.var.type_annotation, go(e.value), go(e.body))
        for q in e.params:
            number(q, "bound")
        annotations = tuple(q.type_annotation for q in e.params)
        return ("fn", annotations, e.ret_type, attrs(e.attrs), go(e.body))

    return go(e)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_programs_against_reference(data):
    p = Picker(data=data)
    lhs = random_program(p)
    variant = p.int(0, 3)
    if variant == 0:
        rhs = random_program(p)
    else:
        rhs = copy_program(
            lhs,
            p,
            rename=bool(p.int(0, 1)),
            share=bool(p.int(0, 1)),
            rename_free=bool(p.int(0, 1)),
            mutate_at=p.int(-5, 12),
        )
    for map_free_vars in (False, True):
        expected = canonical(lhs, map_free_vars) == canonical(rhs, map_free_vars)
        assert structural_equal(lhs, rhs, map_free_vars) == expected
        assert structural_equal(rhs, lhs, map_free_vars) == expected
        if expected:
            assert structural_hash(lhs, map_free_vars) == structural_hash(rhs, map_free_vars)
            assert_structural_equal(lhs, rhs, map_free_vars)
        else:
            with pytest.raises(AssertionError, match="^structural mismatch at "):
                assert_structural_equal(lhs, rhs, map_free_vars)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_renamed_and_unshared_copies_are_equal(data):
    p = Picker(data=data)
    program = random_program(p, depth=5)
    # Renaming bound vars (sharing kept) and expanding sharing (vars kept) preserve equality.
    for copy in (copy_program(program, p, rename=True), copy_program(program, p, share=False)):
        assert_equal_and_same_hash(program, copy)
    renamed_free = copy_program(program, p, rename=True, rename_free=True)
    assert_equal_and_same_hash(program, renamed_free, map_free_vars=True)


def test_random_programs_rarely_collide():
    rng = random.Random(2024)
    by_form = {}
    for _ in range(400):
        program = random_program(Picker(rng=rng), depth=4)
        by_form.setdefault(canonical(program, False), []).append(structural_hash(program))
    for hashes in by_form.values():
        assert len(set(hashes)) == 1  # equal programs, equal hashes
    distinct = {hashes[0] for hashes in by_form.values()}
    assert len(by_form) > 150
    assert len(distinct) >= 0.99 * len(by_form)
