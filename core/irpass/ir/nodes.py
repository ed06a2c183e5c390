"""The expression nodes of the IR.

Every node is immutable and compares by identity. Constructors check their
arguments and raise ``TypeError``/``ValueError`` naming the offending field,
so a malformed node cannot be built in the first place.

Sequences (call arguments, tuple fields, function params) are stored as
tuples; attributes as :class:`~irpass.ir.attrs.Attrs`.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

from .._lazy import LazyModule
from .attrs import EMPTY_ATTRS, Attrs
from .expr import Expr, _set
from .op import Op
from .types import NATIVE_DTYPES, NUMPY_DTYPES, SUPPORTED_DTYPES, TensorType, Type, normalize_dtype

# Constants hold numpy arrays: numpy is imported when the first one is made, so code
# that builds, reads or transforms IR without constant data never imports it.
np: Any = LazyModule("numpy", globals(), "np")

__all__ = [
    "Expr",
    "Var",
    "GlobalVar",
    "Constant",
    "Tuple",
    "TupleGetItem",
    "Call",
    "Let",
    "If",
    "Function",
    "Op",
    "var",
    "const",
]


# The arrays Constant created (or took over) to hold constant data: id -> weak
# reference (ndarrays are not hashable), so a Constant built from another's data
# can share it without copying. A lookup checks that the reference still leads
# to the very array asked about, so an entry left by a dead array never vouches
# for another one; such entries are swept out when the table has doubled since
# the last sweep (amortized O(1) per entry, at most about twice the live entries).
# A plain dict of callback-free references costs a fraction of a microsecond per
# constant; weakref.WeakValueDictionary costs about 1 us.
_OWNED_STORAGE: dict[int, weakref.ReferenceType[np.ndarray]] = {}
_SWEEP_AT = [1024]  # the table size that triggers the next sweep
_ref = weakref.ref


def _own_storage(storage: np.ndarray) -> None:
    """Record ``storage`` (read-only, C-contiguous, referenced by no one else) as owned."""
    _OWNED_STORAGE[id(storage)] = _ref(storage)
    if len(_OWNED_STORAGE) >= _SWEEP_AT[0]:
        _sweep_owned()


def _sweep_owned() -> None:
    """Drop the entries of dead arrays; the next sweep is when the table has doubled."""
    for key, ref in list(_OWNED_STORAGE.items()):
        if ref() is None and _OWNED_STORAGE.get(key) is ref:
            _OWNED_STORAGE.pop(key, None)
    _SWEEP_AT[0] = max(1024, 2 * len(_OWNED_STORAGE))


def _is_owned(storage: np.ndarray) -> bool:
    ref = _OWNED_STORAGE.get(id(storage))
    return ref is not None and ref() is storage


# A copy of a view whose last two axes are swapped in memory (a transposed weight) goes in
# column blocks of this many elements: numpy's own copy walks the output row by row and reads
# each element from another cache line, 7-9x slower on a 768x3072 float32 weight (15 ms
# against 2 ms; a dynamo export of GPT-2 transposes 48 such weights). Views under
# _BLOCKED_MIN_BYTES, or whose rows are short, fit in cache either way.
_BLOCK = 64
_BLOCKED_MIN_BYTES = 256 << 10


def _c_copy(data: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A new C-contiguous array of ``dtype`` (``data``'s, in native byte order) equal to
    ``data``."""
    if (
        data.ndim >= 2
        and data.strides[-2] == data.itemsize
        and data.shape[-1] >= 4 * _BLOCK
        and data.nbytes >= _BLOCKED_MIN_BYTES
    ):
        out = np.empty(data.shape, dtype)
        for start in range(0, data.shape[-1], _BLOCK):
            out[..., start : start + _BLOCK] = data[..., start : start + _BLOCK]
        return out
    return np.array(data, dtype=dtype, copy=True, order="C")


def _views_bytes(data: np.ndarray) -> bool:
    """Whether ``data`` is a read-only, C-contiguous, native-order view of a ``bytes`` object.

    Such an array can never change (the bytes cannot, and numpy refuses to make a view of
    them writable), so a constant can hold it without a copy: that is how an importer's
    weights, read with ``np.frombuffer`` from the model file's bytes, become constants.
    """
    if data.flags.writeable or not data.flags.c_contiguous or not data.dtype.isnative:
        return False
    root = data.base
    while isinstance(root, np.ndarray):
        root = root.base
    return type(root) is bytes


# At most this many references to an array passed to Constant._own: the caller's
# variable, the parameter and sys.getrefcount's own argument. More means someone
# else holds it (and could make it writable again): it is copied instead.
_FRESH_REFCOUNT = 3

_new_node = object.__new__


def _builder_twin(cls: type) -> Any:
    """A class with ``cls``'s memory layout whose instances take plain attribute stores.

    The unchecked constructors fill a twin's fields and then make it a ``cls``
    (``node.__class__ = cls``, which CPython allows between classes of the same base
    and slots): the immutable node classes reject stores through ``Expr.__setattr__``,
    so their fields can only be set through the slot descriptors' ``__set__``, a call
    each. On a twin, whose ``__setattr__``/``__delattr__`` are ``object``'s, each store
    is the interpreter's inline slot store. Measured on ``Call._unchecked`` (five fields),
    CPython 3.11: 0.21 us a node against 0.41 through the descriptors, when the
    descriptors' calls were 40% of EliminateCommonSubexpr's time on W2 (two rebuilt calls
    a step; 26,157 -> 21,540 instructions a step). A standalone copy of both schemes, timed
    with its call: 3.10 0.43 against 0.50 us, 3.11 0.25 / 0.44, 3.12 0.33 / 0.56, 3.13
    0.30 / 0.50. A twin never leaves its constructor.
    """
    return type(f"_{cls.__name__}Builder", cls.__bases__, {
        "__slots__": cls.__slots__,
        "__setattr__": object.__setattr__,
        "__delattr__": object.__delattr__,
    })


# The numpy dtypes of NATIVE_DTYPES, filled in by the first Constant._own (they need numpy).
_NATIVE_DTYPES: set[np.dtype] = set()

# numpy 2 computes ``dtype.name`` in Python (1.5 us a read); looking the name up by
# dtype (hash and == in C) takes 0.03 us. Each supported dtype joins when first met
# (ml_dtypes' bfloat16 and friends, whose names ml_dtypes gives them, and
# non-native byte orders too), so it stays small.
_DTYPE_NAMES: dict[np.dtype, str] = {}


def _dtype_name(dtype: np.dtype) -> str:
    """``dtype.name``, from the cache when it can be."""
    try:
        return _DTYPE_NAMES[dtype]
    except KeyError:
        pass
    name = dtype.name
    if name in SUPPORTED_DTYPES:
        _DTYPE_NAMES[dtype] = name
    return name


def _check_expr(value: Any, where: str) -> Expr:
    if not isinstance(value, Expr):
        raise TypeError(f"{where} must be an Expr, got {type(value).__name__} {value!r}")
    return value


def _check_exprs(values: Any, where: str) -> tuple[Expr, ...]:
    if type(values) is list:
        values = tuple(values)
    elif type(values) is not tuple:
        if isinstance(values, Expr) or not isinstance(values, Sequence) or isinstance(values, str):
            raise TypeError(f"{where} must be a sequence of Expr, got {type(values).__name__}")
        values = tuple(values)
    # all(map(...)) keeps the common, valid case in C; the loop only finds the culprit.
    if not all(map(isinstance, values, repeat(Expr))):
        for i, v in enumerate(values):
            if not isinstance(v, Expr):
                raise TypeError(f"{where}[{i}] must be an Expr, got {type(v).__name__} {v!r}")
    return values


class Var(Expr):
    """A local variable. Two vars are the same variable only if they are the same object."""

    __slots__ = ("name_hint", "type_annotation")

    name_hint: str
    type_annotation: Type | None

    def __init__(self, name_hint: str, type_annotation: Type | None = None) -> None:
        if not isinstance(name_hint, str):
            raise TypeError(f"Var.name_hint must be a string, got {name_hint!r}")
        if type_annotation is not None and not isinstance(type_annotation, Type):
            raise TypeError(f"Var.type_annotation must be a Type or None, got {type_annotation!r}")
        _set(self, "_checked_type", None)
        _set(self, "_bound_by", None)
        _set(self, "name_hint", name_hint)
        _set(self, "type_annotation", type_annotation)

    @staticmethod
    def _unchecked(name_hint: str, type_annotation: Type | None = None) -> Var:
        """A fresh var from parts known to be valid (a ``str`` and a ``Type`` or None).

        For trusted builders only (passes that bind many temporaries); the node
        is indistinguishable from ``Var(name_hint, type_annotation)``.
        """
        node = _new_node(_VarBuilder)
        node._checked_type = None
        node._bound_by = None
        node.name_hint = name_hint
        node.type_annotation = type_annotation
        node.__class__ = Var
        return node

    def __repr__(self) -> str:
        return f"Var(%{self.name_hint})"


class GlobalVar(Expr):
    """The name of a function in an :class:`~irpass.ir.module.IRModule`.

    Structural equality compares global vars by name; as Python objects (``==``,
    ``hash``, dict keys) they compare by identity like every node, so look
    functions up through the module (``mod["f"]``, ``mod[gv]``), which goes by name.
    """

    __slots__ = ("name_hint",)

    name_hint: str

    def __init__(self, name_hint: str) -> None:
        if not isinstance(name_hint, str) or not name_hint:
            raise TypeError(f"GlobalVar.name_hint must be a non-empty string, got {name_hint!r}")
        _set(self, "_checked_type", None)
        _set(self, "_bound_by", None)
        _set(self, "name_hint", name_hint)

    def __repr__(self) -> str:
        return f"GlobalVar(@{self.name_hint})"


class Constant(Expr):
    """A constant tensor. ``data`` is a read-only numpy array owned by the node.

    The node keeps a private copy of the array it is given (its owner can no
    longer change the constant), exposed as a read-only view, which numpy will
    not make writable again. Building a constant from another constant's
    ``data``, or from a read-only array viewing a ``bytes`` object (what
    ``np.frombuffer`` gives for a file's bytes), shares the storage instead of
    copying: neither can change. An array whose strides are
    all zero -- one value repeated, as ``np.broadcast_to(value, shape)`` makes
    -- stays that way: the node copies the one element and broadcasts it, so a
    filled weight costs no memory until something computes with it.
    """

    __slots__ = ("data",)

    data: np.ndarray

    def __init__(self, data: np.ndarray) -> None:
        if not isinstance(data, np.ndarray):
            raise TypeError(f"Constant.data must be a numpy.ndarray, got {type(data).__name__}")
        name = _dtype_name(data.dtype)
        if name not in SUPPORTED_DTYPES:
            raise ValueError(
                f"Constant.data: unsupported dtype {name!r}; "
                f"expected one of {sorted(SUPPORTED_DTYPES)}"
            )
        base = data.base
        if (base is None or not _is_owned(base) or not data.flags.c_contiguous) and not (
            base is not None and _views_bytes(data)
        ):
            # Byte order is storage, not value: keep one (native) representation.
            dtype = data.dtype if data.dtype.isnative else data.dtype.newbyteorder("=")
            repeated = data.size > 1 and not any(data.strides)
            storage = _c_copy(data.flat[0] if repeated else data, dtype)
            storage.setflags(write=False)
            _own_storage(storage)
            # a broadcast view is read-only for good, like the plain view
            data = np.broadcast_to(storage, data.shape) if repeated else storage.view()
        _set(self, "_checked_type", None)
        _set(self, "_bound_by", ())  # a constant uses no var: see Expr._bound_by
        _set(self, "data", data)

    @classmethod
    def _own(cls, data: np.ndarray) -> Constant:
        """A constant that takes over ``data``, a fresh array, instead of copying it.

        For trusted builders (FoldConstant on a kernel's result). The node ends
        up exactly as ``Constant(data)`` would build it -- a read-only view of
        read-only, C-contiguous, native-byte-order storage of a supported dtype,
        recorded as owned -- but the storage is ``data`` itself, which is made
        read-only. That is safe only if nobody else can reach ``data``: so it
        is taken over only when it owns its memory (``base`` is None) and the
        caller's one variable is its only other reference; otherwise, and for
        any other dtype or layout, this is ``Constant(data)`` (a checked copy).
        The caller must not write to ``data`` afterwards (numpy would refuse).
        """
        if not _NATIVE_DTYPES:
            _NATIVE_DTYPES.update(NUMPY_DTYPES[name] for name in NATIVE_DTYPES)
        if (
            type(data) is not np.ndarray
            or data.base is not None
            or data.dtype not in _NATIVE_DTYPES
            or sys.getrefcount(data) > _FRESH_REFCOUNT
            or not data.flags.c_contiguous
        ):
            return cls(data)
        data.setflags(write=False)
        _own_storage(data)
        return Constant._unchecked(data.view())

    @staticmethod
    def _unchecked(data: np.ndarray) -> Constant:
        """A constant holding ``data``, which the caller made as ``Constant(data)`` would
        keep it: a read-only, C-contiguous, native-order array of a supported dtype that no
        one can write to (a view of a ``bytes`` object, as the text parser's metadata
        entries are, or an array :meth:`_own` took over). ``Constant(data)``'s checks cost
        1.2-2.4 us a constant, about a quarter of parsing a module of small constants (W1)."""
        node = _new_node(_ConstantBuilder)
        node._checked_type = None
        node._bound_by = ()  # a constant uses no var: see Expr._bound_by
        node.data = data
        node.__class__ = Constant
        return node

    @property
    def type(self) -> TensorType:
        """The tensor type of the constant."""
        return TensorType(self.data.shape, _dtype_name(self.data.dtype))

    def __repr__(self) -> str:
        return f"Constant({_dtype_name(self.data.dtype)}{list(self.data.shape)})"


class Tuple(Expr):
    """A tuple of expressions."""

    __slots__ = ("fields",)

    fields: tuple[Expr, ...]

    def __init__(self, fields: Sequence[Expr]) -> None:
        _set(self, "_checked_type", None)
        _set(self, "_bound_by", None)
        _set(self, "fields", _check_exprs(fields, "Tuple.fields"))

    def children(self) -> tuple[Expr, ...]:
        return self.fields

    def __repr__(self) -> str:
        return f"Tuple({len(self.fields)} fields)"


class TupleGetItem(Expr):
    """Field ``index`` of the tuple ``tuple_value``."""

    __slots__ = ("tuple_value", "index")

    tuple_value: Expr
    index: int

    def __init__(self, tuple_value: Expr, index: int) -> None:
        _check_expr(tuple_value, "TupleGetItem.tuple_value")
        if type(index) is not int and (
            isinstance(index, bool) or not isinstance(index, (int, np.integer))
        ):
            raise TypeError(f"TupleGetItem.index must be an int, got {index!r}")
        if index < 0:
            raise ValueError(f"TupleGetItem.index must be >= 0, got {index}")
        _set(self, "_checked_type", None)
        _set(self, "_bound_by", None)
        _set(self, "tuple_value", tuple_value)
        _set(self, "index", int(index))

    def children(self) -> tuple[Expr, ...]:
        return (self.tuple_value,)

    def __repr__(self) -> str:
        return f"TupleGetItem(.{self.index})"


class Call(Expr):
    """A call of ``op`` (an :class:`Op`, a :class:`GlobalVar`, a :class:`Var` or a
    :class:`Function`) on ``args``. Only op calls take ``attrs``; they are checked
    against the op's schema, with defaults filled in."""

    __slots__ = ("op", "args", "attrs")

    op: Expr
    args: tuple[Expr, ...]
    attrs: Attrs

    def __init__(
        self, op: Expr, args: Sequence[Expr], attrs: Mapping[str, Any] | None = None
    ) -> None:
        args = _check_exprs(args, "Call.args")
        if type(op) is Op:
            n = op.num_inputs
            if n >= 0 and len(args) != n:
                raise ValueError(
                    f"Call.args: op {op.name!r} takes {n} argument(s), got {len(args)}"
                )
            if (attrs is None or attrs is EMPTY_ATTRS) and not op.attr_fields:
                attrs = EMPTY_ATTRS  # the common rebuild of an attribute-less call: no check
            elif type(attrs) is not Attrs or attrs._schema_key is not op:
                attrs = op.make_attrs(attrs)
        else:
            if not isinstance(op, (GlobalVar, Var, Function, Call, TupleGetItem, Let, If)):
                raise TypeError(
                    "Call.op must be an Op or a function-valued expression (GlobalVar, Var, "
                    f"Function, ...), got {type(op).__name__} {op!r}"
                )
            if attrs:
                raise ValueError("Call.attrs: only calls of an Op take attributes")
            attrs = EMPTY_ATTRS
        _set(self, "_checked_type", None)
        _set(self, "_bound_by", None)
        _set(self, "op", op)
        _set(self, "args", args)
        _set(self, "attrs", attrs)

    def children(self) -> tuple[Expr, ...]:
        return (self.op, *self.args)

    def __repr__(self) -> str:
        name = self.op.name if type(self.op) is Op else type(self.op).__name__
        return f"Call({name}, {len(self.args)} args)"

    @staticmethod
    def _unchecked(op: Expr, args: tuple[Expr, ...], attrs: Attrs,
                   checked_type: Type | None = None,
                   bound_by: tuple[Var, ...] | None = None) -> Call:
        """A call built from parts known to be valid, without checking them.

        For trusted rebuilders only (the hot paths of passes): ``op`` must be
        an :class:`Op` (or a function-valued expression), ``args`` a *tuple* of
        expressions of the op's arity, and ``attrs`` an :class:`Attrs` the
        checked constructor would accept unchanged for ``op`` -- in practice
        the ``attrs`` of an existing call of the same ``op``. The node is
        indistinguishable from ``Call(op, args, attrs)``; about 3x cheaper.
        ``checked_type`` and ``bound_by`` are for a rebuilder that knows the
        call's type is that of the call it replaces, whose ``_checked_type``
        and ``_bound_by`` it passes on (see
        :func:`irpass.ir.type_infer.carry_type`).
        """
        node = _new_node(_CallBuilder)
        node._checked_type = checked_type
        node._bound_by = bound_by
        node.op = op
        node.args = args
        node.attrs = attrs
        node.__class__ = Call
        return node


class Let(Expr):
    """``let var = value; body``: binds ``var`` to ``value`` inside ``body``."""

    __slots__ = ("var", "value", "body")

    var: Var
    value: Expr
    body: Expr

    def __init__(self, var: Var, value: Expr, body: Expr) -> None:
        if type(var) is not Var:
            raise TypeError(f"Let.var must be a Var, got {type(var).__name__} {var!r}")
        _check_expr(value, "Let.value")
        _check_expr(body, "Let.body")
        _set(self, "_checked_type", None)
        _set(self, "_bound_by", None)
        _set(self, "var", var)
        _set(self, "value", value)
        _set(self, "body", body)

    def children(self) -> tuple[Expr, ...]:
        return (self.var, self.value, self.body)

    @staticmethod
    def _unchecked(var: Var, value: Expr, body: Expr) -> Let:
        """A let built from parts known to be valid (a :class:`Var`, two expressions).

        For trusted builders only; the node is indistinguishable from
        ``Let(var, value, body)``.
        """
        node = _new_node(_LetBuilder)
        node._checked_type = None
        node._bound_by = None
        node.var = var
        node.value = value
        node.body = body
        node.__class__ = Let
        return node

    def __repr__(self) -> str:
        return f"Let(%{self.var.name_hint})"


class If(Expr):
    """``if (cond) true_branch else false_branch``; ``cond`` is a scalar bool tensor."""

    __slots__ = ("cond", "true_branch", "false_branch")

    cond: Expr
    true_branch: Expr
    false_branch: Expr

    def __init__(self, cond: Expr, true_branch: Expr, false_branch: Expr) -> None:
        _check_expr(cond, "If.cond")
        _check_expr(true_branch, "If.true_branch")
        _check_expr(false_branch, "If.false_branch")
        _set(self, "_checked_type", None)
        _set(self, "_bound_by", None)
        _set(self, "cond", cond)
        _set(self, "true_branch", true_branch)
        _set(self, "false_branch", false_branch)

    def children(self) -> tuple[Expr, ...]:
        return (self.cond, self.true_branch, self.false_branch)

    def __repr__(self) -> str:
        return "If(...)"


class Function(Expr):
    """A function of ``params`` returning ``body``.

    ``ret_type`` is an optional annotation; ``attrs`` hold markers such as
    ``{"Primitive": 1}`` or ``{"SkipOptimization": 1}``.
    """

    __slots__ = ("params", "body", "ret_type", "attrs")

    params: tuple[Var, ...]
    body: Expr
    ret_type: Type | None
    attrs: Attrs

    def __init__(
        self,
        params: Sequence[Var],
        body: Expr,
        ret_type: Type | None = None,
        attrs: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(params, Expr) or not isinstance(params, Sequence):
            raise TypeError(
                f"Function.params must be a sequence of Var, got {type(params).__name__}"
            )
        params = tuple(params)
        seen: set[int] = set()
        for i, p in enumerate(params):
            if type(p) is not Var:
                raise TypeError(f"Function.params[{i}] must be a Var, got {type(p).__name__} {p!r}")
            if id(p) in seen:
                raise ValueError(
                    f"Function.params[{i}]: %{p.name_hint} appears twice in the params"
                )
            seen.add(id(p))
        _check_expr(body, "Function.body")
        if ret_type is not None and not isinstance(ret_type, Type):
            raise TypeError(f"Function.ret_type must be a Type or None, got {ret_type!r}")
        if attrs is None:
            attrs = EMPTY_ATTRS
        elif not isinstance(attrs, Attrs):
            attrs = Attrs(attrs, "Function.attrs")
        _set(self, "_checked_type", None)
        _set(self, "_bound_by", None)
        _set(self, "params", params)
        _set(self, "body", body)
        _set(self, "ret_type", ret_type)
        _set(self, "attrs", attrs)

    def children(self) -> tuple[Expr, ...]:
        return (*self.params, self.body)

    @staticmethod
    def _unchecked(
        params: tuple[Var, ...], body: Expr, ret_type: Type | None, attrs: Attrs
    ) -> Function:
        """A function built from parts known to be valid, without checking them.

        For trusted builders only: ``params`` a *tuple* of distinct :class:`Var`,
        ``body`` an expression, ``ret_type`` a :class:`Type` or None, ``attrs``
        an :class:`Attrs`. The node is indistinguishable from ``Function(...)``.
        """
        node = _new_node(_FunctionBuilder)
        node._checked_type = None
        node._bound_by = None
        node.params = params
        node.body = body
        node.ret_type = ret_type
        node.attrs = attrs
        node.__class__ = Function
        return node

    def with_attr(self, key: str, value: Any) -> Function:
        """A copy of this function with attribute ``key`` set to ``value``."""
        return Function(self.params, self.body, self.ret_type, self.attrs.replace(**{key: value}))

    def __repr__(self) -> str:
        return f"Function({len(self.params)} params)"


# The unchecked constructors' builder twins (see _builder_twin).
_VarBuilder = _builder_twin(Var)
_ConstantBuilder = _builder_twin(Constant)
_CallBuilder = _builder_twin(Call)
_LetBuilder = _builder_twin(Let)
_FunctionBuilder = _builder_twin(Function)


# -- builders -------------------------------------------------------------------------


def var(
    name: str,
    type_annotation: Type | None = None,
    shape: Sequence[int] | None = None,
    dtype: str = "float32",
) -> Var:
    """A new :class:`Var`; ``shape``/``dtype`` are a shortcut for a tensor annotation."""
    if shape is not None:
        if type_annotation is not None:
            raise ValueError("var: pass either type_annotation or shape, not both")
        type_annotation = TensorType(tuple(shape), dtype)
    return Var(name, type_annotation)


def const(value: Any, dtype: str | None = None) -> Constant:
    """A :class:`Constant` from a number, a (nested) list or an array.

    Without ``dtype``: Python floats become float32, ints int32 and bools
    bool (as in TVM); numpy arrays keep their dtype. An int that does not fit
    int32 is an error asking for an explicit ``dtype``.
    """
    try:
        if dtype is not None:
            data = np.asarray(value, dtype=normalize_dtype(dtype, "const(dtype=...)"))
        elif isinstance(value, (np.ndarray, np.generic)):
            data = np.asarray(value)
        else:
            data = np.asarray(value)
            if data.dtype == np.float64:
                data = data.astype(np.float32)
            elif data.dtype == np.int64:
                if data.size and (data.min() < -(2**31) or data.max() >= 2**31):
                    raise ValueError(
                        f"const({value!r}): value does not fit int32, the default for Python "
                        "ints; pass dtype='int64'"
                    )
                data = data.astype(np.int32)
    except (TypeError, ValueError, OverflowError) as err:
        if str(err).startswith("const("):
            raise
        raise ValueError(f"const({value!r}): not a tensor value: {err}") from None
    name = _dtype_name(data.dtype)
    if name not in SUPPORTED_DTYPES:
        raise ValueError(
            f"const({value!r}): unsupported dtype {name!r}; "
            f"expected numbers or bools (one of {sorted(SUPPORTED_DTYPES)})"
        )
    return Constant(data)
