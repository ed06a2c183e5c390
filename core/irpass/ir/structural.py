"""Structural equality and hashing of programs, up to renaming of bound variables.

Two programs are structurally equal when they have the same shape and the
same values everywhere, with these rules (those of TVM's ``StructuralEqual``):

* Types and attributes compare by value. Scalars are typed: ``1``, ``1.0``
  and ``True`` are three different values; ``nan`` equals ``nan``.
* Bound variables compare up to renaming. At a binding site (a function's
  params, a let's var) the lhs var is matched with the rhs var, whose type
  annotations must be equal; afterwards a use of a var is equal only to a use
  of the var it was matched with. The matching is one-to-one and holds for the
  whole comparison. Names of ``Var`` never matter.
* Size variables in types (the ``n`` of ``Tensor[(n, 4), float32]``) compare
  up to renaming too, matched one to one on first encounter for the whole
  comparison: ``fn (%x: Tensor[(n, 4)])`` equals ``fn (%x: Tensor[(m, 4)])``.
* Free variables are equal only when they are the same object, unless
  ``map_free_vars=True``: then they are matched on first encounter like bound
  variables.
* ``GlobalVar`` compares by name, ``Op`` by identity, ``Constant`` by dtype,
  shape and values.
* Sharing of nodes that bind nothing does not matter: a DAG that shares a call
  equals a tree that repeats it. A shared node that binds vars (a ``Function``
  used twice) is one binding site, so it does not equal two copies with fresh
  params (as in TVM). Pairs already matched are remembered, so comparing a DAG
  with an equal DAG takes time linear in its number of nodes.

``structural_hash`` is consistent with equality (equal programs hash alike,
also across renaming and with ``map_free_vars``) and deterministic across
processes: strings and array bytes go through BLAKE2b, and hashes are combined
with Python's hash of tuples of ints, which (unlike the hash of ``str``) is not
salted: it is the same on every 64-bit CPython since 3.8. A bound var hashes
as the position of its binding site in a traversal order fixed by the
program's structure; a free var by its name and type, or with
``map_free_vars`` by the order of its first appearance. A symbolic dim hashes
as "symbolic", whatever its expression, so renamed size variables hash alike.

Both functions use an explicit work stack, never recursion, so programs a
million nodes deep are fine; every node of a DAG is processed once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from .._lazy import LazyModule
from .attrs import EMPTY_ATTRS, Attrs
from .dims import DimExpr, SizeVar, free_vars, substitute
from .expr import Expr
from .gcpause import gc_paused
from .module import IRModule
from .nodes import Call, Constant, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from .op import Op
from .types import FuncType, TensorType, TupleType, Type

# Arrays (constants' data) and numpy scalars are compared once numpy is in use; plain
# Python values are classified first, so comparing IR without constants imports no numpy.
np: Any = LazyModule("numpy", globals(), "np")

__all__ = ["structural_equal", "assert_structural_equal", "structural_hash"]

_ROOT = "<root>"
_MAX_DESCRIPTION = 80
_MAX_PATH = 300


# -- public API ---------------------------------------------------------------------------


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """Whether ``lhs`` and ``rhs`` are structurally equal (see the module docstring).

    Works on expressions, modules, types, attrs, plain values (None, bool,
    int, float, str, numpy arrays) and lists, tuples and dicts of those.
    """
    if lhs is rhs:
        # Matching every var with itself is always consistent.
        return True
    with gc_paused():
        try:
            _Comparer(map_free_vars, explain=False).compare(lhs, rhs)
        except _Mismatch:
            return False
    return True


def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    """Raise ``AssertionError`` unless ``lhs`` and ``rhs`` are structurally equal.

    The message names the first difference found: a path from the root
    (``@main.body.args[1].attrs['axis']``) and a short description of what each
    side has there.
    """
    if lhs is rhs:
        return
    try:
        with gc_paused():
            _Comparer(map_free_vars, explain=True).compare(lhs, rhs)
    except _Mismatch as err:
        raise AssertionError(
            f"structural mismatch at {err.path}: lhs has {err.lhs}, rhs has {err.rhs}"
        ) from None


def structural_hash(node: Any, map_free_vars: bool = False) -> int:
    """A 64-bit hash (a non-negative int) consistent with :func:`structural_equal`.

    Equal programs hash alike, also up to renaming of bound vars (and of free vars
    with ``map_free_vars=True``). The same program gives the same hash in every
    process on 64-bit CPython.
    """
    return _Hasher(map_free_vars).value(node) & 0xFFFF_FFFF_FFFF_FFFF


# -- descriptions for messages ------------------------------------------------------------


def _cap(text: str, limit: int = _MAX_DESCRIPTION) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe_var(v: Var) -> str:
    if v.type_annotation is None:
        return _cap(f"%{v.name_hint}")
    return _cap(f"%{v.name_hint}: {v.type_annotation}")


def _describe(value: Any) -> str:
    """A one-line description of ``value``, capped in length."""
    if type(value) is Var:
        return _describe_var(value)
    if isinstance(value, Type):
        return _cap(str(value))
    if isinstance(value, np.ndarray):
        return _cap(f"array {value.dtype.name}{list(value.shape)}")
    if isinstance(value, (Expr, IRModule)):
        return _cap(repr(value))
    if isinstance(value, (list, tuple)) and len(value) > 8:
        return f"{type(value).__name__} of {len(value)} items"
    return _cap(repr(value))


def _render_path(parts: list[str]) -> str:
    """Join path components, folding long runs (a million ``.body``) and capping the length."""
    out: list[str] = []
    i = 0
    n = len(parts)
    while i < n:
        j = i + 1
        while j < n and parts[j] == parts[i]:
            j += 1
        run = j - i
        out.append(f"({parts[i]})*{run}" if run > 3 else parts[i] * run)
        i = j
    text = "".join(out)
    if len(text) > _MAX_PATH:
        half = _MAX_PATH // 2
        text = f"{text[:half]} ... {text[-half:]}"
    return text


# -- plain values (attrs, types, arrays, scalars) --------------------------------------------

# A difference: (path suffix, lhs description, rhs description).
_Diff = tuple[str, str, str]
_NodeCallback = Callable[[Any, Any, str], None]


# The kinds of the plain Python values, by exact type (their subclasses, numpy's
# scalars and the rest go through the isinstance tests of _kind).
_PLAIN_KINDS = {
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    list: "sequence",
    tuple: "sequence",
}


def _kind(value: Any) -> str:
    """The comparison category of a value; values of different kinds are never equal."""
    if isinstance(value, Expr):
        return "expr"
    if isinstance(value, IRModule):
        return "module"
    if isinstance(value, Type):
        return "type"
    if value is None:
        return "none"
    kind = _PLAIN_KINDS.get(type(value))
    if kind is not None:
        return kind
    if isinstance(value, DimExpr):
        return "dim"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        return "sequence"
    if isinstance(value, Mapping):
        if not isinstance(value, Attrs) and not all(isinstance(k, str) for k in value):
            # Python's == on keys (1 == 1.0 == True) would not match the typed hashing.
            raise TypeError("structural comparison supports mappings with string keys only")
        return "mapping"
    if isinstance(value, np.ndarray):
        return "array"
    raise TypeError(
        f"structural comparison does not support {type(value).__name__} values ({_describe(value)})"
    )


def _array_diff(a: np.ndarray, b: np.ndarray, where: str) -> _Diff | None:
    if a is b:
        return None
    if a.dtype is not b.dtype and a.dtype != b.dtype:
        return f"{where}.dtype", a.dtype.name, b.dtype.name
    if a.shape != b.shape:
        return f"{where}.shape", str(a.shape), str(b.shape)
    if a.size <= 64 and a.tobytes() == b.tobytes():
        # Same bits, same values; cheaper than numpy comparisons on small arrays.
        return None
    if a.dtype.kind in "fc":
        same = (a == b) | (np.isnan(a) & np.isnan(b))
    else:
        same = a == b
    if same.all():
        return None
    first = tuple(int(i) for i in np.argwhere(~np.asarray(same))[0])
    label = f"{where}[{', '.join(map(str, first))}]" if first else where
    return label, _describe(a[first].item()), _describe(b[first].item())


def _key_label(key: Any) -> str:
    return f"[{key!r}]"


def _diff(lhs: Any, rhs: Any, where: str, on_node: _NodeCallback | None = None) -> _Diff | None:
    """The first difference between two plain values, or None when they are equal.

    Expressions and modules met inside containers go to ``on_node``, which
    raises :class:`_Mismatch` itself; attrs never hold any.
    """
    kind = _kind(lhs)
    if kind != _kind(rhs):
        return where, _describe(lhs), _describe(rhs)
    if kind in ("expr", "module"):
        if on_node is None:
            raise TypeError(f"unexpected IR node inside a plain value at {where}")
        on_node(lhs, rhs, where)
        return None
    if kind == "float":
        if lhs == rhs or (lhs != lhs and rhs != rhs):
            return None
        return where, _describe(lhs), _describe(rhs)
    if kind == "sequence":
        if len(lhs) != len(rhs):
            return where, f"{len(lhs)} items", f"{len(rhs)} items"
        for i, (a, b) in enumerate(zip(lhs, rhs, strict=True)):
            d = _diff(a, b, f"{where}[{i}]", on_node)
            if d is not None:
                return d
        return None
    if kind == "mapping":
        if lhs is rhs:
            return None
        for key in sorted(set(lhs) | set(rhs), key=repr):
            label = f"{where}{_key_label(key)}"
            if key not in rhs:
                return label, _describe(lhs[key]), "no such key"
            if key not in lhs:
                return label, "no such key", _describe(rhs[key])
            d = _diff(lhs[key], rhs[key], label, on_node)
            if d is not None:
                return d
        return None
    if kind == "array":
        return _array_diff(lhs, rhs, where)
    # none, bool, int, str, type: plain value equality.
    if lhs == rhs:
        return None
    return where, _describe(lhs), _describe(rhs)


def _values_equal(lhs: Any, rhs: Any) -> bool:
    """Fast strict equality of attribute values (typed scalars, nan == nan, nested tuples)."""
    t = type(lhs)
    if t is not type(rhs):
        return False
    if t is float:
        return lhs == rhs or (lhs != lhs and rhs != rhs)
    if t is tuple:
        return len(lhs) == len(rhs) and all(map(_values_equal, lhs, rhs))
    return lhs == rhs


def _attrs_equal(lhs: Mapping[str, Any], rhs: Mapping[str, Any]) -> bool:
    if lhs is rhs:
        return True
    if len(lhs) != len(rhs):
        return False
    for key, value in lhs.items():
        if key not in rhs or not _values_equal(value, rhs[key]):
            return False
    return True


# -- equality ---------------------------------------------------------------------------------


class _Mismatch(Exception):
    """The first difference found; ends the comparison."""

    def __init__(self, path: str, lhs: str, rhs: str) -> None:
        super().__init__(path, lhs, rhs)
        self.path = path
        self.lhs = lhs
        self.rhs = rhs


# A work item of the expression comparison: (lhs, rhs, parent item, k). For the root item
# the parent is None and k is the path label of the root; otherwise k is the position of
# the pair among the parent's children, turned into a label only when a difference is found.
_Item = tuple[Any, Any, Any, Any]


def _edge_label(parent: Expr, k: int) -> str:
    t = type(parent)
    if t is Call:
        return ".op" if k == 0 else f".args[{k - 1}]"
    if t is Tuple:
        return f".fields[{k}]"
    if t is TupleGetItem:
        return ".tuple_value"
    if t is Let:
        return (".var", ".value", ".body")[k]
    if t is If:
        return (".cond", ".true_branch", ".false_branch")[k]
    return ".body"  # Function


class _Comparer:
    """One structural comparison: the var matching and the memo of matched pairs."""

    def __init__(self, map_free_vars: bool, explain: bool) -> None:
        self.map_free_vars = map_free_vars
        self.explain = explain
        self.lmap: dict[Var, Var] = {}
        self.rmap: dict[Var, Var] = {}
        # size variables matched so far, by name (lhs -> rhs and back)
        self.size_lmap: dict[str, str] = {}
        self.size_rmap: dict[str, str] = {}
        # lhs node -> the rhs node it was matched with first; further partners of the same
        # lhs node (a DAG compared with a tree) go to `seen_extra`.
        self.seen: dict[Expr, Expr] = {}
        self.seen_extra: set[tuple[Expr, Expr]] = set()

    # -- entry points ----------------------------------------------------------------------
    def compare(self, lhs: Any, rhs: Any) -> None:
        """Raise :class:`_Mismatch` at the first difference between ``lhs`` and ``rhs``."""
        d = _diff(lhs, rhs, _ROOT, self._node)
        if d is not None:
            raise _Mismatch(*d)

    def _node(self, lhs: Any, rhs: Any, where: str) -> None:
        if isinstance(lhs, IRModule):
            self._module(lhs, rhs, "" if where == _ROOT else where)
        else:
            self._expr(lhs, rhs, where)

    def _module(self, lhs: IRModule, rhs: IRModule, prefix: str) -> None:
        lnames = {gv.name_hint for gv in lhs}
        rnames = {gv.name_hint for gv in rhs}
        for name in sorted(lnames | rnames):
            if name not in rnames:
                raise _Mismatch(f"{prefix}@{name}", _describe(lhs[name]), f"no function @{name}")
            if name not in lnames:
                raise _Mismatch(f"{prefix}@{name}", f"no function @{name}", _describe(rhs[name]))
        for name in sorted(lnames):
            self._expr(lhs[name], rhs[name], f"{prefix}@{name}")

    # -- failures ----------------------------------------------------------------------------
    def _fail(self, item: _Item, suffix: str, lhs: str, rhs: str) -> _Mismatch:
        if not self.explain:
            return _Mismatch("", "", "")
        parts = [suffix]
        while item is not None:
            parent = item[2]
            parts.append(item[3] if parent is None else _edge_label(parent[0], item[3]))
            item = parent
        parts.reverse()
        return _Mismatch(_render_path(parts), lhs, rhs)

    def _fail_diff(self, item: _Item, d: _Diff) -> _Mismatch:
        return self._fail(item, *d)

    # -- types -------------------------------------------------------------------------------
    def _types_equal(self, a: Type | None, b: Type | None) -> bool:
        """Whether two types are equal up to the renaming of size variables."""
        if a is b or a == b:
            return True
        ta = type(a)
        if ta is not type(b):
            return False
        if ta is TensorType:
            return (
                a.dtype == b.dtype
                and len(a.shape) == len(b.shape)
                and all(self._dims_equal(x, y) for x, y in zip(a.shape, b.shape, strict=True))
            )
        if ta is TupleType:
            return len(a.fields) == len(b.fields) and all(
                self._types_equal(x, y) for x, y in zip(a.fields, b.fields, strict=True)
            )
        if ta is FuncType:
            return (
                len(a.arg_types) == len(b.arg_types)
                and all(
                    self._types_equal(x, y) for x, y in zip(a.arg_types, b.arg_types, strict=True)
                )
                and self._types_equal(a.ret_type, b.ret_type)
            )
        return False

    def _dims_equal(self, a: Any, b: Any) -> bool:
        if type(a) is int or type(b) is int:
            return a == b
        lmap, rmap = self.size_lmap, self.size_rmap
        if isinstance(a, SizeVar) and isinstance(b, SizeVar):
            partner = lmap.get(a.name)
            if partner is None and b.name not in rmap:
                lmap[a.name] = b.name
                rmap[b.name] = a.name
                return True
            return partner == b.name
        if not isinstance(a, DimExpr) or not isinstance(b, DimExpr):
            return False
        # an expression equals another once its variables are renamed as matched so far
        names = free_vars(a)
        if any(v not in lmap for v in names):
            return False
        return substitute(a, {v: SizeVar(lmap[v]) for v in names}) == b

    # -- variables ---------------------------------------------------------------------------
    def _bind(self, item: _Item, label: str, lv: Var, rv: Var) -> None:
        """Match the vars of a binding site (``label`` names it within ``item``'s node)."""
        lt, rt = lv.type_annotation, rv.type_annotation
        if lt is not rt and not self._types_equal(lt, rt):
            raise self._fail(
                item,
                f"{label}.type_annotation",
                _describe(lv.type_annotation),
                _describe(rv.type_annotation),
            )
        lmap = self.lmap
        partner = lmap.get(lv)
        if partner is rv:
            return
        if partner is not None:
            raise self._fail(
                item,
                label,
                f"{_describe_var(lv)} (already matched with rhs {_describe_var(partner)})",
                _describe_var(rv),
            )
        other = self.rmap.get(rv)
        if other is not None:
            raise self._fail(
                item,
                label,
                _describe_var(lv),
                f"{_describe_var(rv)} (already matched with lhs {_describe_var(other)})",
            )
        lmap[lv] = rv
        self.rmap[rv] = lv

    def _use(self, item: _Item, lv: Var, rv: Var) -> None:
        """Check a use of a var (``item`` is the pair itself)."""
        partner = self.lmap.get(lv)
        if partner is rv:
            return
        if partner is not None:
            raise self._fail(
                item,
                "",
                f"{_describe_var(lv)} (matched with rhs {_describe_var(partner)})",
                _describe_var(rv),
            )
        other = self.rmap.get(rv)
        if other is not None:
            raise self._fail(
                item,
                "",
                f"free var {_describe_var(lv)}",
                f"{_describe_var(rv)} (matched with lhs {_describe_var(other)})",
            )
        if lv is not rv:
            if not self.map_free_vars:
                same_name = " (a different Var object)" if lv.name_hint == rv.name_hint else ""
                raise self._fail(
                    item,
                    "",
                    f"free var {_describe_var(lv)}",
                    f"free var {_describe_var(rv)}{same_name}; free vars are equal only if "
                    "they are the same object (or with map_free_vars=True)",
                )
            if not self._types_equal(lv.type_annotation, rv.type_annotation):
                raise self._fail(
                    item,
                    ".type_annotation",
                    _describe(lv.type_annotation),
                    _describe(rv.type_annotation),
                )
        self.lmap[lv] = rv
        self.rmap[rv] = lv

    # -- expressions -------------------------------------------------------------------------
    def _expr(self, root_lhs: Expr, root_rhs: Expr, label: str) -> None:
        seen = self.seen
        seen_extra = self.seen_extra
        lmap = self.lmap
        rmap = self.rmap
        fail = self._fail
        use = self._use
        stack: list[_Item] = [(root_lhs, root_rhs, None, label)]
        push = stack.append
        pop = stack.pop
        while stack:
            item = pop()
            lhs = item[0]
            rhs = item[1]
            t = type(lhs)
            if t is not type(rhs):
                raise fail(item, "", _describe(lhs), _describe(rhs))
            if t is Var:
                if lmap.get(lhs) is not rhs:
                    use(item, lhs, rhs)
                continue
            if t is Op:
                if lhs is not rhs:
                    raise fail(item, "", _describe(lhs), _describe(rhs))
                continue
            if t is GlobalVar:
                if lhs.name_hint != rhs.name_hint:
                    raise fail(item, "", _describe(lhs), _describe(rhs))
                continue
            if lhs is rhs and t is Constant:
                continue
            # Pairs already matched are not compared again: that keeps DAGs linear. A pair
            # is recorded when it is first expanded; its subtree is finished before anything
            # that could meet the pair again, and any difference in it ends the comparison.
            partner = seen.get(lhs)
            if partner is rhs:
                continue
            if partner is None:
                seen[lhs] = rhs
            else:
                key = (lhs, rhs)
                if key in seen_extra:
                    continue
                seen_extra.add(key)

            if t is Call:
                lop = lhs.op
                rop = rhs.op
                largs = lhs.args
                rargs = rhs.args
                if type(lop) is Op and lop is not rop:
                    raise fail(item, ".op", _describe(lop), _describe(rop))
                n = len(largs)
                if n != len(rargs):
                    raise fail(item, ".args", f"{n} args", f"{len(rargs)} args")
                if lhs.attrs is not rhs.attrs and not _attrs_equal(lhs.attrs, rhs.attrs):
                    raise self._fail_diff(item, _diff(lhs.attrs, rhs.attrs, ".attrs"))
                # Pushed last to first, so the args are compared first to last. Args that
                # are trivially equal (an already matched var, equal small constants) are
                # not pushed at all.
                while n:
                    n -= 1
                    la = largs[n]
                    ra = rargs[n]
                    ta = type(la)
                    if ta is Var:
                        if lmap.get(la) is ra:
                            continue
                    elif ta is Constant and type(ra) is Constant:
                        if la is ra:
                            continue
                        da = la.data
                        db = ra.data
                        if (
                            da.size <= 64
                            and da.dtype is db.dtype
                            and da.shape == db.shape
                            and da.tobytes() == db.tobytes()
                        ):
                            continue
                    push((la, ra, item, n + 1))
                if type(lop) is not Op:
                    push((lop, rop, item, 0))
            elif t is Let:
                lv = lhs.var
                rv = rhs.var
                lt = lv.type_annotation
                rt = rv.type_annotation
                if lv not in lmap and rv not in rmap and (lt is rt or self._types_equal(lt, rt)):
                    lmap[lv] = rv
                    rmap[rv] = lv
                else:
                    self._bind(item, ".var", lv, rv)
                push((lhs.body, rhs.body, item, 2))
                lv = lhs.value
                if type(lv) is not Var or lmap.get(lv) is not rhs.value:
                    push((lv, rhs.value, item, 1))
            elif t is Tuple:
                lf, rf = lhs.fields, rhs.fields
                if len(lf) != len(rf):
                    raise fail(item, ".fields", f"{len(lf)} fields", f"{len(rf)} fields")
                for i in range(len(lf) - 1, -1, -1):
                    push((lf[i], rf[i], item, i))
            elif t is TupleGetItem:
                if lhs.index != rhs.index:
                    raise fail(item, ".index", str(lhs.index), str(rhs.index))
                push((lhs.tuple_value, rhs.tuple_value, item, 0))
            elif t is Constant:
                d = _array_diff(lhs.data, rhs.data, ".data")
                if d is not None:
                    raise self._fail_diff(item, d)
            elif t is Function:
                lp, rp = lhs.params, rhs.params
                if len(lp) != len(rp):
                    raise fail(item, ".params", f"{len(lp)} params", f"{len(rp)} params")
                for i, (lv, rv) in enumerate(zip(lp, rp, strict=True)):
                    self._bind(item, f".params[{i}]", lv, rv)
                if not self._types_equal(lhs.ret_type, rhs.ret_type):
                    raise fail(item, ".ret_type", _describe(lhs.ret_type), _describe(rhs.ret_type))
                if not _attrs_equal(lhs.attrs, rhs.attrs):
                    raise self._fail_diff(item, _diff(lhs.attrs, rhs.attrs, ".attrs"))
                push((lhs.body, rhs.body, item, 0))
            elif t is If:
                push((lhs.false_branch, rhs.false_branch, item, 2))
                push((lhs.true_branch, rhs.true_branch, item, 1))
                push((lhs.cond, rhs.cond, item, 0))
            else:
                raise TypeError(f"structural comparison does not support {t.__name__} nodes")


# -- hashing ------------------------------------------------------------------------------------

_STR_CACHE: dict[str, int] = {}
_STR_CACHE_LIMIT = 1 << 16


def _str_hash(text: str) -> int:
    """A process-independent 64-bit hash of a string (cached)."""
    h = _STR_CACHE.get(text)
    if h is None:
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        h = int.from_bytes(digest, "little")
        if len(_STR_CACHE) >= _STR_CACHE_LIMIT:
            _STR_CACHE.clear()
        _STR_CACHE[text] = h
    return h


def _tag(name: str) -> int:
    return _str_hash(f"irpass.structural.{name}")


_T_NONE = _tag("None")
_T_BOOL = _tag("bool")
_T_INT = _tag("int")
_T_FLOAT = _tag("float")
_T_NAN = _tag("nan")
_T_STR = _tag("str")
_T_SEQ = _tag("sequence")
_T_MAP = _tag("mapping")
_T_ARRAY = _tag("array")
_T_TENSOR_TYPE = _tag("TensorType")
_T_TUPLE_TYPE = _tag("TupleType")
_T_FUNC_TYPE = _tag("FuncType")
_T_MODULE = _tag("IRModule")
_T_BOUND = _tag("bound var")
_T_FREE_MAPPED = _tag("free var by order")
_T_FREE_NAMED = _tag("free var by name")
_T_GLOBAL = _tag("GlobalVar")
_T_OP = _tag("Op")
_T_CONST = _tag("Constant")
_T_CALL = _tag("Call")
_T_TUPLE = _tag("Tuple")
_T_GETITEM = _tag("TupleGetItem")
_T_LET = _tag("Let")
_T_IF = _tag("If")
_T_FUNC = _tag("Function")
_T_SYMBOLIC_DIM = _tag("SymbolicDim")
_EMPTY_ATTRS_HASH = hash((_T_MAP, 0))

_LEAVES = frozenset({Var, Constant, Op, GlobalVar})


def _type_hash(ty: Type | None) -> int:
    t = type(ty)
    if t is TensorType:
        shape = ty.shape
        if not ty.is_static:
            shape = tuple(d if type(d) is int else _T_SYMBOLIC_DIM for d in shape)
        return hash((_T_TENSOR_TYPE, _str_hash(ty.dtype), len(shape), *shape))
    if ty is None:
        return _T_NONE
    if t is TupleType:
        return hash((_T_TUPLE_TYPE, len(ty.fields), *map(_type_hash, ty.fields)))
    if t is FuncType:
        args = ty.arg_types
        return hash((_T_FUNC_TYPE, len(args), *map(_type_hash, args), _type_hash(ty.ret_type)))
    raise TypeError(f"structural_hash does not support the type {t.__name__}")


_DTYPE_HASH: dict[np.dtype, int] = {}


def _dtype_hash(dtype: np.dtype) -> int:
    # Cached: dtype.name takes microseconds.
    h = _DTYPE_HASH.get(dtype)
    if h is None:
        h = _DTYPE_HASH[dtype] = _str_hash(dtype.name)
    return h


def _array_hash(a: np.ndarray) -> int:
    # Small arrays (most constants are scalars) hash their values, which is faster than a
    # digest. hash() of a number depends only on its value, and 0.0 and -0.0 hash alike;
    # nan is the exception, so it is replaced by a fixed tag.
    dtype_hash = _DTYPE_HASH.get(a.dtype) or _dtype_hash(a.dtype)
    if a.ndim == 0:
        value = a.item()
        return hash((_T_ARRAY, dtype_hash, 0, _T_NAN if value != value else value))
    head = (_T_ARRAY, dtype_hash, a.ndim, *a.shape)
    floating = a.dtype.kind in "fc"
    if a.size <= 16:
        values = a.ravel().tolist()
        if floating:
            values = [_T_NAN if x != x else x for x in values]
        return hash((*head, *values))
    if floating:
        # Values equal under comparison must hash alike: one zero, one nan.
        a = np.array(a, copy=True)
        a[a == 0] = 0
        a[np.isnan(a)] = np.nan
    data = np.ascontiguousarray(a).tobytes()
    digest = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")
    return hash((*head, digest))


def _plain_hash(value: Any, on_node: Callable[[Any], int] | None = None) -> int:
    """Hash of a plain value, consistent with :func:`_diff`."""
    kind = _kind(value)
    if kind in ("expr", "module"):
        if on_node is None:
            raise TypeError("unexpected IR node inside a plain value")
        return on_node(value)
    if kind == "str":
        return hash((_T_STR, _str_hash(value)))
    if kind == "int":
        return hash((_T_INT, int(value)))
    if kind == "float":
        value = float(value)
        if value != value:
            return _T_NAN
        # hash() of a float depends only on its value (0.0 and -0.0 alike).
        return hash((_T_FLOAT, hash(value)))
    if kind == "bool":
        return hash((_T_BOOL, int(value)))
    if kind == "none":
        return _T_NONE
    if kind == "sequence":
        return hash((_T_SEQ, len(value), *[_plain_hash(v, on_node) for v in value]))
    if kind == "mapping":
        keys = sorted(value, key=repr)
        items = [h for k in keys for h in (_plain_hash(k), _plain_hash(value[k], on_node))]
        return hash((_T_MAP, len(keys), *items))
    if kind == "array":
        return _array_hash(value)
    if kind == "dim":
        # by its text: attributes compare size variables by name
        return hash((_T_SYMBOLIC_DIM, _str_hash(str(value))))
    return _type_hash(value)


class _Hasher:
    """One structural hash computation: node memo and var numbering."""

    def __init__(self, map_free_vars: bool) -> None:
        self.map_free_vars = map_free_vars
        self.memo: dict[Expr, int] = {}
        # Binding sites and (with map_free_vars) free vars are numbered separately.
        self.bound_count = 0
        self.free_count = 0
        # Keyed by id: attrs compare by Python equality (1 == 1.0), hashing is stricter.
        self.attrs_memo: dict[int, int] = {}
        self.type_memo: dict[int, int] = {}

    def value(self, value: Any) -> int:
        """Hash any supported value, sharing the var numbering among its parts."""
        return _plain_hash(value, self._node)

    def _node(self, node: Any) -> int:
        if isinstance(node, IRModule):
            parts: list[int] = []
            for name in sorted(gv.name_hint for gv in node):
                parts.append(_str_hash(name))
                parts.append(self._expr(node[name]))
            return hash((_T_MODULE, len(parts), *parts))
        return self._expr(node)

    def _attrs(self, attrs: Mapping[str, Any]) -> int:
        if attrs is EMPTY_ATTRS or not attrs:
            return _EMPTY_ATTRS_HASH
        key = id(attrs)
        h = self.attrs_memo.get(key)
        if h is None:
            h = self.attrs_memo[key] = _plain_hash(attrs)
        return h

    def _type(self, ty: Type | None) -> int:
        # Annotations are usually shared objects; keyed by id like the attrs.
        if ty is None:
            return _T_NONE
        key = id(ty)
        h = self.type_memo.get(key)
        if h is None:
            h = self.type_memo[key] = _type_hash(ty)
        return h

    def _leaf(self, node: Expr) -> None:
        """Hash a leaf into the memo (a var met here before any binding site is free)."""
        t = type(node)
        if t is Var:
            ann = self._type(node.type_annotation)
            if self.map_free_vars:
                h = hash((_T_FREE_MAPPED, self.free_count, ann))
                self.free_count += 1
            else:
                h = hash((_T_FREE_NAMED, _str_hash(node.name_hint), ann))
        elif t is Constant:
            h = _array_hash(node.data) ^ _T_CONST
        elif t is Op:
            h = hash((_T_OP, _str_hash(node.name)))
        else:
            h = hash((_T_GLOBAL, _str_hash(node.name_hint)))
        self.memo[node] = h

    def _expr(self, root: Expr) -> int:
        # Post-order with an explicit stack. When a node is first popped, its binding sites
        # are numbered and its leaf children hashed on the spot; then the node goes back on
        # the stack under a None marker, with its unhashed children on top. Popping the
        # marker means the children are done. Var numbers thus follow an order fixed by
        # the program's structure, the same for any two equal programs.
        memo = self.memo
        leaf = self._leaf
        leaves = _LEAVES
        attrs_hash = self._attrs
        type_hash = self._type
        getitem = memo.__getitem__
        if root in memo:
            return memo[root]
        if type(root) in leaves:
            leaf(root)
            return memo[root]
        bound_count = self.bound_count
        stack: list[Expr | None] = [root]
        push = stack.append
        pop = stack.pop
        while stack:
            node = pop()
            if node is None:
                node = pop()
                t = type(node)
                if t is Call:
                    attrs = node.attrs
                    ah = _EMPTY_ATTRS_HASH if attrs is EMPTY_ATTRS else attrs_hash(attrs)
                    args = node.args
                    if len(args) == 2:
                        h = hash((_T_CALL, memo[node.op], ah, memo[args[0]], memo[args[1]]))
                    else:
                        h = hash((_T_CALL, memo[node.op], ah, *map(getitem, args)))
                elif t is Let:
                    ann = type_hash(node.var.type_annotation)
                    h = hash((_T_LET, ann, memo[node.value], memo[node.body]))
                elif t is TupleGetItem:
                    h = hash((_T_GETITEM, node.index, memo[node.tuple_value]))
                elif t is Tuple:
                    fields = node.fields
                    h = hash((_T_TUPLE, len(fields), *map(getitem, fields)))
                elif t is Function:
                    params = node.params
                    h = hash(
                        (
                            _T_FUNC,
                            len(params),
                            *[type_hash(p.type_annotation) for p in params],
                            type_hash(node.ret_type),
                            attrs_hash(node.attrs),
                            memo[node.body],
                        )
                    )
                else:  # If
                    h = hash(
                        (_T_IF, memo[node.cond], memo[node.true_branch], memo[node.false_branch])
                    )
                memo[node] = h
                continue
            if node in memo:
                continue
            t = type(node)
            if t is Call:
                children: tuple[Expr, ...] = node.args
                first = node.op
            elif t is Let:
                # The commonest deep shape, so handled without the generic code below.
                if node.var not in memo:
                    memo[node.var] = hash((_T_BOUND, bound_count))
                    bound_count += 1
                push(node)
                push(None)
                child = node.body
                if child not in memo:
                    if type(child) in leaves:
                        leaf(child)
                    else:
                        push(child)
                child = node.value
                if child not in memo:
                    if type(child) in leaves:
                        leaf(child)
                    else:
                        push(child)
                continue
            elif t is TupleGetItem:
                children = ()
                first = node.tuple_value
            elif t is Tuple:
                children = node.fields
                first = None
            elif t is Function:
                for p in node.params:
                    if p not in memo:
                        memo[p] = hash((_T_BOUND, bound_count))
                        bound_count += 1
                children = ()
                first = node.body
            elif t is If:
                children = (node.true_branch, node.false_branch)
                first = node.cond
            elif t in leaves:
                leaf(node)
                continue
            else:
                raise TypeError(f"structural_hash does not support {t.__name__} nodes")
            push(node)
            push(None)
            # Pushed last to first, so the children are hashed first to last.
            for child in reversed(children):
                if child not in memo:
                    if type(child) in leaves:
                        leaf(child)
                    else:
                        push(child)
            if first is not None and first not in memo:
                if type(first) in leaves:
                    leaf(first)
                else:
                    push(first)
        self.bound_count = bound_count
        return memo[root]
