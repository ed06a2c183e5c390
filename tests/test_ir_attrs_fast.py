"""Op.make_attrs builds its Attrs without normalizing the converted values again, and
Constant/const read dtype names from a cache: the results and errors are those of the
general paths (``Attrs(values)``, ``dtype.name``)."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from irpass.ir.attrs import Attrs
from irpass.ir.functor import post_order_visit
from irpass.ir.nodes import Call, Constant, const, var
from irpass.ir.op import (
    REQUIRED,
    AttrField,
    Op,
    OpPattern,
    attr_choice,
    attr_int,
    attr_ints,
    list_ops,
    register_op,
    unregister_op,
)
from irpass.ir.types import NUMPY_DTYPES, SUPPORTED_DTYPES, TensorType
from irpass.op import strided_slice
from irpass.op.nn import conv2d
from irpass.testing.programs import random_module

_counter = itertools.count()


def _kinds(value):
    """The exact types of a value, nested: equal values of other kinds differ here."""
    if type(value) is tuple:
        return (tuple, tuple(_kinds(v) for v in value))
    return type(value)


def _same_as_general_path(attrs: Attrs) -> None:
    """``attrs`` equal, hash and hold the same kinds of values as ``Attrs`` built from them."""
    general = Attrs(dict(attrs))
    assert attrs == general
    assert hash(attrs) == hash(general)
    assert list(attrs) == list(general)
    assert {k: _kinds(v) for k, v in attrs.items()} == {k: _kinds(v) for k, v in general.items()}


@pytest.fixture
def scratch_op():
    """Register a throw-away op with the given fields; unregistered afterwards."""
    names = []

    def make(*fields: AttrField) -> Op:
        name = f"test_attrs_fast.op{next(_counter)}"
        names.append(name)
        return register_op(
            name,
            num_inputs=1,
            type_rel=lambda types, attrs: types[0],
            kernel=lambda args, attrs: args[0],
            pattern=OpPattern.OPAQUE,
            attrs=fields,
        )

    yield make
    for name in names:
        unregister_op(name)


# -- attrs: the values ---------------------------------------------------------------------------


def test_strided_slice_attrs_from_numpy_and_lists_are_plain_python_values():
    x = var("x", shape=(4, 6))
    call = strided_slice(x, np.array([0, 1]), [np.int64(3), 5], (np.int32(1), 2), [0, 1])
    assert dict(call.attrs) == {"begin": (0, 1), "end": (3, 5), "strides": (1, 2), "axes": (0, 1)}
    assert {k: _kinds(v) for k, v in call.attrs.items()} == {
        k: (tuple, (int, int)) for k in ("begin", "end", "strides", "axes")
    }
    _same_as_general_path(call.attrs)


def test_conv2d_attrs_with_defaults_are_those_of_the_general_path():
    call = conv2d(var("x", shape=(1, 3, 8, 8)), var("w", shape=(4, 3, 3, 3)),
                  strides=[np.int64(2), 2], padding=1, channels=np.int32(4))
    assert call.attrs["strides"] == (2, 2)
    assert call.attrs["padding"] == (1, 1, 1, 1)
    assert type(call.attrs["channels"]) is int
    assert call.attrs["dilation"] == (1, 1)
    assert call.attrs["out_dtype"] == ""
    _same_as_general_path(call.attrs)


def test_every_call_of_random_programs_has_attrs_equal_to_the_general_path():
    seen = set()
    for seed in range(40):
        mod = random_module(seed)
        for gv in mod.get_global_vars():

            def check(e):
                if isinstance(e, Call) and isinstance(e.op, Op) and e.op.attr_fields:
                    seen.add(e.op.name)
                    _same_as_general_path(e.attrs)
                    # built again from a plain dict of the same values: the same attrs
                    again = e.op.make_attrs(dict(e.attrs))
                    assert again == e.attrs
                    _same_as_general_path(again)

            post_order_visit(mod[gv], check)
    assert len(seen) >= 20  # the programs reached many ops with attributes


def test_defaults_of_every_op_are_those_of_the_general_path():
    for name in list_ops():
        op = Op.get(name)
        if not op.attr_fields or any(f.default is REQUIRED for f in op.attr_fields):
            continue
        _same_as_general_path(op.make_attrs({}))


def test_a_converter_returning_non_plain_values_gets_them_normalized(scratch_op):
    op = scratch_op(
        AttrField("as_list", lambda v, where: [v, np.int64(v)]),
        AttrField("nested", lambda v, where: [[v], (np.float32(0.5),)]),
        AttrField("scalar", lambda v, where: np.bool_(v)),
        AttrField("choice", attr_choice("a", "b"), "a"),
    )
    attrs = op.make_attrs({"as_list": 3, "nested": 1, "scalar": True})
    assert dict(attrs) == {"as_list": (3, 3), "nested": ((1,), (0.5,)), "scalar": True,
                           "choice": "a"}
    assert _kinds(attrs["as_list"]) == (tuple, (int, int))
    assert _kinds(attrs["nested"]) == (tuple, ((tuple, (int,)), (tuple, (float,))))
    assert type(attrs["scalar"]) is bool
    _same_as_general_path(attrs)


def test_an_op_built_directly_gets_its_defaults_normalized():
    # register_op normalizes the defaults; an Op built by hand keeps them as given
    op = Op(
        "test_attrs_fast.direct",
        num_inputs=1,
        attr_fields=[AttrField("pads", attr_ints, [np.int64(1), 2]),
                     AttrField("scale", attr_int, np.int32(3))],
        type_rel=lambda types, attrs: types[0],
        kernel=lambda args, attrs: args[0],
        pattern=OpPattern.OPAQUE,
        stateful=False,
        doc="",
        owner="test",
    )
    attrs = op.make_attrs({})
    assert dict(attrs) == {"pads": (1, 2), "scale": 3}
    assert _kinds(attrs["pads"]) == (tuple, (int, int))
    assert type(attrs["scale"]) is int
    _same_as_general_path(attrs)


def test_the_attrs_carry_their_op_and_pass_through_a_rebuild(scratch_op):
    op = scratch_op(AttrField("k", attr_ints, (1,)))
    attrs = op.make_attrs({"k": [1, 2]})
    assert attrs._schema_key is op
    assert op.make_attrs(attrs) is attrs
    x = var("x", shape=(2,))
    assert Call(op, [x], attrs).attrs is attrs


# -- attrs: the errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attrs", "error", "message"),
    [
        ({"begin": [0, True], "end": [1, 1]}, TypeError,
         "strided_slice.begin[1] must be an int, got True"),
        ({"begin": [0, 1.0], "end": [1, 1]}, TypeError,
         "strided_slice.begin[1] must be an int, got 1.0"),
        ({"begin": [0, np.float32(1)], "end": [1, 1]}, TypeError,
         "strided_slice.begin[1] must be an int, got np.float32(1.0)"),
        ({"begin": "01", "end": [1, 1]}, TypeError,
         "strided_slice.begin must be an int, a symbolic dim or a sequence of those, got '01'"),
        ({"begin": [0], "end": [1], "strides": [None]}, TypeError,
         "strided_slice.strides[0] must be an int, got None"),
        ({"end": [1]}, ValueError, "op 'strided_slice' requires attribute 'begin'"),
        ({"begin": [0], "end": [1], "stride": [1]}, ValueError,
         "op 'strided_slice' has no attribute 'stride'; did you mean strides?"),
    ],
)
def test_strided_slice_rejects_bad_attrs_as_before(attrs, error, message):
    with pytest.raises(error) as info:
        Op.get("strided_slice").make_attrs(attrs)
    assert str(info.value).startswith(message)


def test_a_value_no_attrs_can_hold_is_named_after_the_other_checks(scratch_op):
    op = scratch_op(
        AttrField("first", lambda v, where: {v}),
        AttrField("second", attr_int, 0),
    )
    with pytest.raises(TypeError, match=r"^attribute attrs\['first'\] must be None, bool, int, "
                                        r"float, str, a symbolic dim or a tuple of those, "
                                        r"got set \{1\}$"):
        op.make_attrs({"first": 1})
    # the converters, the required and the unknown attributes are checked first
    with pytest.raises(TypeError, match=r"^test_attrs_fast\.op\d+\.second must be an int"):
        op.make_attrs({"first": 1, "second": "x"})
    with pytest.raises(ValueError, match="has no attribute 'third'"):
        op.make_attrs({"first": 1, "third": 0})
    nested = scratch_op(AttrField("n", lambda v, where: (1, [2, object()])))
    with pytest.raises(TypeError, match=r"^attribute attrs\['n'\]\[1\]\[1\] must be None"):
        nested.make_attrs({"n": 0})


def test_a_field_name_that_is_not_a_string_is_rejected_as_before(scratch_op):
    op = scratch_op(AttrField(1, attr_int, 0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^attrs: attribute names must be strings, got 1$"):
        op.make_attrs({})


def test_an_unhashable_converter_is_accepted(scratch_op):
    class Convert:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, value, where):
            return [value]

    op = scratch_op(AttrField("v", Convert(), 0))
    assert op.make_attrs({"v": 2})["v"] == (2,)
    assert op.make_attrs({})["v"] == (0,)


# -- dtype names ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SUPPORTED_DTYPES))
def test_constant_type_names_every_supported_dtype(name):
    pytest.importorskip("ml_dtypes")
    data = np.zeros((2, 1), NUMPY_DTYPES[name])
    assert Constant(data).type == TensorType((2, 1), name)
    assert const(data).type.dtype == name
    assert repr(Constant(data)) == f"Constant({name}[2, 1])"


@pytest.mark.parametrize(
    ("dtype", "name"),
    [(">f4", "float32"), (">i8", "int64"), ("<u2", "uint16"), ("?", "bool"),
     (np.dtype("f8", metadata={"unit": "m"}), "float64")],
)
def test_constant_type_names_dtypes_by_value(dtype, name):
    data = np.ones(3, dtype)
    assert Constant(data).type.dtype == name
    assert const(data).type.dtype == name


@pytest.mark.parametrize(
    ("data", "name"),
    [(np.zeros(2, np.complex64), "complex64"), (np.array(["a"]), "str32"),
     (np.zeros(1, "M8[s]"), "datetime64[s]"), (np.zeros(1, [("a", "f4")]), "void32")],
)
def test_unsupported_dtypes_are_named_in_the_errors(data, name):
    for _ in range(2):  # the second time, after the name was looked up once
        with pytest.raises(ValueError, match=rf"^Constant\.data: unsupported dtype "
                                             rf"'{re.escape(name)}'; expected one of \["):
            Constant(data)
    with pytest.raises(ValueError, match=rf"unsupported dtype '{re.escape(name)}'; expected"):
        const(data)
