"""Symbolic integer expressions for tensor dimensions.

A dim is either a plain Python ``int`` (a static dim: static shapes keep using
ints and never touch this module) or a :class:`DimExpr`, a symbolic integer
expression over size variables (``n``, ``seq``, ``n * 4``, ``(seq + 1) floordiv 2``,
``min(n, 8)``), as TVM Relax's ``PrimExpr`` shapes are.

Every ``DimExpr`` is kept in canonical form: a sum of products with integer
coefficients over *atoms*, plus an integer constant. Atoms are size variables
and the non-linear forms ``floordiv(e, c)``, ``mod(e, c)`` (``c`` a positive
constant), ``min(...)`` and ``max(...)``; a monomial is a product of atoms with
powers. Building an expression canonicalises it, so equal expressions built in
different orders are ``==`` and hash the same, and an expression that
simplifies to a constant comes back as a plain ``int``.

Size variables are non-negative (ONNX dims are), and the simplifier uses that:
``min(n, n + 1)`` is ``n``. Comparisons are not symbolic booleans: ``==`` is
structural equality of canonical forms and ``<`` and friends raise
``TypeError``; ask :func:`prove_ge` and the other provers instead, which answer
True only when the relation holds for every value of the size variables.

Atoms and monomials are interned (one object per distinct value), so the dicts
and tuples of a canonical form hash and compare them by identity; expressions
are small, so their operations cost microseconds.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Iterable, Mapping
from typing import Any, Union

__all__ = [
    "Dim",
    "DimExpr",
    "SizeVar",
    "as_dim",
    "is_static",
    "floordiv",
    "floormod",
    "dim_min",
    "dim_max",
    "dim_sum",
    "dim_prod",
    "divide_exact",
    "bounds",
    "prove_ge",
    "prove_gt",
    "prove_le",
    "prove_lt",
    "prove_eq",
    "prove_ne",
    "evaluate",
    "free_vars",
    "substitute",
    "parse_dim",
    "dim_terms",
    "RESERVED_NAMES",
]

#: A tensor dimension: a static ``int`` or a symbolic :class:`DimExpr`.
Dim = Union[int, "DimExpr"]

_INF = math.inf

# Atom kinds; their order is the canonical order of atoms of different kinds.
_VAR, _FLOORDIV, _MOD, _MIN, _MAX = range(5)

# How deep the prover substitutes bounds of min/max/floordiv/mod atoms (each level
# tries every such atom of the expression once); dims are small, 3 is plenty.
_PROVE_DEPTH = 3

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Names parse_dim reads as function calls or operators, and names the text format reads as
# other attribute values: none can name a size variable.
_CALLS = frozenset({"min", "max"})
_RESERVED = _CALLS | {"floordiv", "mod", "inf", "nan", "True", "False", "None"}
#: The identifiers that cannot name a size variable (they mean something else in dims or
#: in the text format).
RESERVED_NAMES: frozenset[str] = _RESERVED


class _Atom:
    """An interned atom: a size variable or a floordiv/mod/min/max form.

    ``mono`` is the monomial of the atom alone (power 1) and ``expr`` the
    expression ``1 * atom``; ``key`` is the deterministic sort key (computed on
    first use, since it walks the argument expressions).
    """

    __slots__ = ("kind", "name", "arg", "c", "args", "mono", "expr", "_key", "_range", "_vars")

    def __init__(self, kind: int) -> None:
        self.kind = kind
        self.name: str | None = None
        self.arg: DimExpr | None = None
        self.c = 0
        self.args: tuple[Dim, ...] = ()
        self._key: tuple[Any, ...] | None = None
        self._range: tuple[Any, Any] | None = None
        self._vars: frozenset[str] | None = None

    @property
    def key(self) -> tuple[Any, ...]:
        key = self._key
        if key is None:
            kind = self.kind
            if kind == _VAR:
                key = (kind, self.name)
            elif kind == _FLOORDIV or kind == _MOD:
                assert self.arg is not None
                key = (kind, self.arg._sort_key(), self.c)
            else:
                key = (kind, tuple(map(_arg_key, self.args)))
            self._key = key
        return key

    def __reduce__(self) -> Any:
        raise TypeError("atoms are internal; pickle the DimExpr")


class _Mono:
    """An interned monomial: a product of atoms with powers, ``factors`` sorted by atom key.

    ``key`` orders terms: higher degree first, then by the atoms' keys. ``atom``
    is the atom when the monomial is one atom to the power 1, else None.
    """

    __slots__ = ("factors", "degree", "key", "atom")

    def __init__(self, factors: tuple[tuple[_Atom, int], ...]) -> None:
        self.factors = factors
        self.degree = sum(p for _, p in factors)
        self.key = (-self.degree, tuple((a.key, -p) for a, p in factors))
        self.atom = factors[0][0] if len(factors) == 1 and factors[0][1] == 1 else None


# Interning tables: one object per distinct atom / monomial / product of two
# monomials. They only grow with the number of distinct symbolic forms a process
# builds, which stays small next to the programs that use them.
_ATOMS: dict[tuple[Any, ...], _Atom] = {}
_MONOS: dict[tuple[tuple[_Atom, int], ...], _Mono] = {}
_MONO_PRODUCTS: dict[tuple[_Mono, _Mono], _Mono] = {}
_VARS: dict[str, SizeVar] = {}

# Results of floordiv/mod/min/max by their arguments: type inference repeats the same
# shape arithmetic on every layer, and these forms cost a prover call or a split. Bounded
# (emptied when full), unlike the interning tables, since every entry can be rebuilt.
_RESULTS: dict[tuple[Any, ...], Any] = {}
_RESULTS_MAX = 1 << 14


def _cached(key: tuple[Any, ...], make: Any, *args: Any) -> Any:
    """``make(*args)``, remembered under ``key`` in the bounded :data:`_RESULTS`."""
    result = _RESULTS.get(key)
    if result is None:
        result = make(*args)
        if len(_RESULTS) >= _RESULTS_MAX:
            _RESULTS.clear()
        _RESULTS[key] = result
    return result


def _mono(factors: tuple[tuple[_Atom, int], ...]) -> _Mono:
    mono = _MONOS.get(factors)
    if mono is None:
        mono = _MONOS.setdefault(factors, _Mono(factors))
    return mono


def _mono_mul(m1: _Mono, m2: _Mono) -> _Mono:
    pair = (m1, m2)
    mono = _MONO_PRODUCTS.get(pair)
    if mono is None:
        powers: dict[_Atom, int] = dict(m1.factors)
        for atom, p in m2.factors:
            powers[atom] = powers.get(atom, 0) + p
        factors = tuple(sorted(powers.items(), key=_factor_key))
        mono = _MONO_PRODUCTS[pair] = _MONO_PRODUCTS[(m2, m1)] = _mono(factors)
    return mono


def _factor_key(item: tuple[_Atom, int]) -> tuple[Any, ...]:
    return item[0].key


def _term_key(item: tuple[_Mono, int]) -> tuple[Any, ...]:
    return item[0].key


def _arg_key(arg: Dim) -> tuple[Any, ...]:
    # Expressions before constants, so that min(n, 8) prints as written.
    if arg.__class__ is int:
        return (1, arg)
    return (0, arg._sort_key())  # type: ignore[union-attr]


class DimExpr:
    """A symbolic integer dimension in canonical form (build with :class:`SizeVar`,
    arithmetic, :func:`floordiv`, :func:`dim_min`, ... or :func:`parse_dim`).

    ``_terms`` is a tuple of ``(monomial, coefficient)`` pairs in canonical order
    (no zero coefficient, at least one term) and ``_const`` the constant. Values
    are immutable: ``==`` and ``hash`` are structural, ``<`` and the other
    orderings raise ``TypeError`` (use :func:`prove_ge` etc.), and so does
    ``bool()``, whose answer would depend on the size variables.
    """

    __slots__ = ("_terms", "_const", "_hash", "_key", "_vars")

    _terms: tuple[tuple[_Mono, int], ...]
    _const: int
    _hash: int | None

    def __new__(cls, *args: Any, **kwargs: Any) -> DimExpr:
        raise TypeError("build a DimExpr with SizeVar(name), arithmetic or parse_dim(text)")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"DimExpr is immutable (cannot set {name})")

    # -- equality and hashing ------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if isinstance(other, DimExpr):
            return self._const == other._const and self._terms == other._terms
        if isinstance(other, int):
            # A DimExpr is never constant (constants come back as ints).
            return False
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash((self._terms, self._const))
            _set_hash(self, h)
        return h

    def _ordering(self, other: object) -> bool:
        raise TypeError(
            f"cannot order the symbolic dim {self} against {other}: the answer depends on "
            "the size variables; use irpass.ir.dims.prove_lt/prove_le/prove_gt/prove_ge"
        )

    __lt__ = __le__ = __gt__ = __ge__ = _ordering

    def __bool__(self) -> bool:
        raise TypeError(
            f"the truth value of the symbolic dim {self} depends on the size variables; "
            "compare with == or use irpass.ir.dims.prove_ne(d, 0)"
        )

    # -- arithmetic -----------------------------------------------------------

    def __add__(self, other: Any) -> Dim:
        if other.__class__ is int:
            return _make(self._terms, self._const + other) if other else self
        if isinstance(other, DimExpr):
            return _add(self, other)
        value = _index(other)
        return NotImplemented if value is None else self.__add__(value)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Dim:
        if other.__class__ is int:
            return _make(self._terms, self._const - other) if other else self
        if isinstance(other, DimExpr):
            return _add(self, _scale(other, -1))  # type: ignore[arg-type]
        value = _index(other)
        return NotImplemented if value is None else self.__sub__(value)

    def __rsub__(self, other: Any) -> Dim:
        value = other if other.__class__ is int else _index(other)
        if value is None:
            return NotImplemented
        return _scale(self, -1) + value

    def __neg__(self) -> Dim:
        return _scale(self, -1)

    def __pos__(self) -> DimExpr:
        return self

    def __mul__(self, other: Any) -> Dim:
        if other.__class__ is int:
            return _scale(self, other)
        if isinstance(other, DimExpr):
            return _mul(self, other)
        value = _index(other)
        return NotImplemented if value is None else _scale(self, value)

    __rmul__ = __mul__

    def __floordiv__(self, other: Any) -> Dim:
        return floordiv(self, other)

    def __rfloordiv__(self, other: Any) -> Dim:
        return floordiv(other, self)

    def __mod__(self, other: Any) -> Dim:
        return floormod(self, other)

    def __rmod__(self, other: Any) -> Dim:
        return floormod(other, self)

    # -- text -----------------------------------------------------------------

    def __str__(self) -> str:
        return _str_expr(self)

    # The text is the readable form in tuples and error messages: a shape prints
    # as (n, 4), and parse_dim reads it back.
    __repr__ = __str__

    def __reduce__(self) -> Any:
        return (parse_dim, (_str_expr(self),))

    def __copy__(self) -> DimExpr:
        return self

    def __deepcopy__(self, memo: Any) -> DimExpr:
        return self

    # -- internals ------------------------------------------------------------

    def _sort_key(self) -> tuple[Any, ...]:
        try:
            return self._key
        except AttributeError:
            key = (tuple((m.key, k) for m, k in self._terms), self._const)
            _set_key(self, key)
            return key


class SizeVar(DimExpr):
    """A size variable: a named non-negative integer dim such as ``n`` or ``seq``.

    ``SizeVar(name)`` returns the one size variable of that name (equal and
    hashing equal by name; which function binds it is the caller's business).
    The name is an ASCII identifier other than ``min`` and ``max``. Arithmetic
    that simplifies to a lone variable returns this object, so ``isinstance(d,
    SizeVar)`` asks whether a dim is a plain variable.
    """

    __slots__ = ()

    def __new__(cls, name: str) -> SizeVar:
        var = _VARS.get(name)
        if var is not None:
            return var
        if not isinstance(name, str) or not _NAME_RE.match(name) or name in _RESERVED:
            raise ValueError(
                "size variable name must be an ASCII identifier other than "
                f"{', '.join(sorted(_RESERVED))}, got {name!r}"
            )
        atom = _Atom(_VAR)
        atom.name = name
        mono = atom.mono = _mono(((atom, 1),))
        var = object.__new__(SizeVar)
        _set_terms(var, ((mono, 1),))
        _set_const(var, 0)
        _set_hash(var, None)
        atom.expr = var
        # setdefault, so that two threads making the same variable get one object
        # (expressions compare atoms by identity).
        winner = _VARS.setdefault(name, var)
        if winner is var:
            _ATOMS[(_VAR, name)] = atom
        return winner

    @property
    def name(self) -> str:
        """The variable's name."""
        return self._terms[0][0].factors[0][0].name  # type: ignore[return-value]

    def __reduce__(self) -> Any:
        return (SizeVar, (self.name,))


# Slot setters (DimExpr forbids attribute assignment; these write the slots directly
# and cost less than object.__setattr__).
_set_terms = DimExpr._terms.__set__  # type: ignore[attr-defined]
_set_const = DimExpr._const.__set__  # type: ignore[attr-defined]
_set_hash = DimExpr.__dict__["_hash"].__set__
_set_key = DimExpr.__dict__["_key"].__set__
_set_vars = DimExpr.__dict__["_vars"].__set__
_new_object = object.__new__


def _make(terms: tuple[tuple[_Mono, int], ...], const: int) -> Dim:
    """The dim of canonical ``terms`` (sorted, no zero coefficient) and ``const``."""
    if not terms:
        return const
    if const == 0 and len(terms) == 1:
        mono, k = terms[0]
        if k == 1 and mono.atom is not None:
            return mono.atom.expr
    e = _new_object(DimExpr)
    _set_terms(e, terms)
    _set_const(e, const)
    # _hash is set (to None: computed on first use) since a missing slot's
    # AttributeError costs more than the store; _key and _vars are rarer.
    _set_hash(e, None)
    return e


def _from_dict(coeffs: dict[_Mono, int], const: int) -> Dim:
    terms = [t for t in coeffs.items() if t[1]]
    # dict order is a's terms then b's new ones: two sorted runs, which sorted()
    # merges in linear time.
    terms.sort(key=_term_key)
    return _make(tuple(terms), const)


def _add(a: DimExpr, b: DimExpr) -> Dim:
    coeffs = dict(a._terms)
    get = coeffs.get
    for m, k in b._terms:
        coeffs[m] = get(m, 0) + k
    return _from_dict(coeffs, a._const + b._const)


def _scale(a: DimExpr, k: int) -> Dim:
    if k == 1:
        return a
    if k == 0:
        return 0
    # Scaling keeps the order (it sorts by monomial only).
    return _make(tuple([(m, c * k) for m, c in a._terms]), a._const * k)


def _mul(a: DimExpr, b: DimExpr) -> Dim:
    ac, bc = a._const, b._const
    if len(a._terms) == 1 and len(b._terms) == 1 and not ac and not bc:
        # monomial * monomial (n * seq, the flatten of a shape): no sums to merge
        (m1, k1), (m2, k2) = a._terms[0], b._terms[0]
        return _make(((_mono_mul(m1, m2), k1 * k2),), 0)
    coeffs: dict[_Mono, int] = {}
    get = coeffs.get
    for m1, k1 in a._terms:
        for m2, k2 in b._terms:
            m = _mono_mul(m1, m2)
            coeffs[m] = get(m, 0) + k1 * k2
    if bc:
        for m1, k1 in a._terms:
            coeffs[m1] = get(m1, 0) + k1 * bc
    if ac:
        for m2, k2 in b._terms:
            coeffs[m2] = get(m2, 0) + ac * k2
    return _from_dict(coeffs, ac * bc)


def _index(value: Any) -> int | None:
    """``value`` as an int if it is an integer (numpy's included), else None."""
    if isinstance(value, int):
        return int(value)
    try:
        return operator.index(value)
    except TypeError:
        return None


def as_dim(value: Any, where: str = "dim") -> Dim:
    """``value`` as a dim: a ``DimExpr`` unchanged, an integer (numpy's too) as a Python int.

    ``TypeError`` naming ``where`` for anything else (floats, strings: use
    :func:`parse_dim` for text).
    """
    if value.__class__ is int or isinstance(value, DimExpr):
        return value  # type: ignore[no-any-return]
    if not isinstance(value, (bool, float, str)):
        index = _index(value)
        if index is not None:
            return index
    raise TypeError(f"{where} must be an int or a DimExpr, got {type(value).__name__} {value!r}")


def is_static(d: Dim) -> bool:
    """Whether the dim ``d`` is a plain integer (not symbolic)."""
    return not isinstance(d, DimExpr)


def _lone_atom(e: DimExpr) -> _Atom | None:
    """The atom when ``e`` is exactly ``1 * atom``, else None."""
    if e._const == 0 and len(e._terms) == 1:
        mono, k = e._terms[0]
        if k == 1:
            return mono.atom
    return None


def _atom_expr(kind: int, arg: DimExpr | None, c: int, args: tuple[Dim, ...]) -> DimExpr:
    """The expression ``1 * atom`` of the interned atom of these fields."""
    table_key = (kind, arg, c) if arg is not None else (kind, args)
    atom = _ATOMS.get(table_key)
    if atom is None:
        atom = _Atom(kind)
        atom.arg = arg
        atom.c = c
        atom.args = args
        mono = atom.mono = _mono(((atom, 1),))
        e = _new_object(DimExpr)
        _set_terms(e, ((mono, 1),))
        _set_const(e, 0)
        _set_hash(e, None)
        atom.expr = e
        atom = _ATOMS.setdefault(table_key, atom)  # one atom even when threads race
    return atom.expr  # type: ignore[no-any-return]


# -- floordiv and mod ---------------------------------------------------------


def _divisor(a: Any, b: Any, op: str) -> int:
    """The checked constant divisor of ``a op b``: a positive int, else ``ValueError``."""
    text = f"({a})" if " " in str(a) else str(a)
    if b.__class__ is int:
        c: int | None = b
    elif isinstance(b, DimExpr):
        raise ValueError(
            f"cannot compute {text} {op} {b}: dims divide only by positive int constants, "
            f"and {b} is symbolic"
        )
    else:
        c = None if isinstance(b, (bool, float, str)) else _index(b)
        if c is None:
            raise TypeError(f"dim {op} needs an int divisor, got {type(b).__name__} {b!r}")
    if c <= 0:
        raise ValueError(
            f"cannot compute {text} {op} {b}: dims divide only by positive int constants"
        )
    return c


def _split(e: DimExpr, c: int) -> tuple[Dim, Dim]:
    """``(q, r)`` with ``e == c * q + r``, every coefficient of ``r`` and its constant in [0, c).

    Exact for all integer values of the atoms, so ``e // c == q + r // c`` and
    ``e % c == r % c``.
    """
    q_terms = []
    r_terms = []
    for m, k in e._terms:
        qk, rk = divmod(k, c)
        if qk:
            q_terms.append((m, qk))
        if rk:
            r_terms.append((m, rk))
    qc, rc = divmod(e._const, c)
    return _make(tuple(q_terms), qc), _make(tuple(r_terms), rc)


def _content(e: DimExpr, c: int) -> int:
    """The gcd of ``c``, the coefficients and the constant of ``e``."""
    g = math.gcd(c, e._const)
    for _, k in e._terms:
        if g == 1:
            break
        g = math.gcd(g, k)
    return g


def _exact_div(e: DimExpr, g: int) -> Dim:
    return _make(tuple([(m, k // g) for m, k in e._terms]), e._const // g)


def floordiv(a: Dim, b: Dim) -> Dim:
    """``a // b`` (floor division) for a positive int constant ``b``; ints give ints.

    ``ValueError`` naming the expression when ``b`` is symbolic or not positive.
    """
    c = _divisor(a, b, "floordiv")
    if a.__class__ is int:
        return a // c  # type: ignore[operator]
    if not isinstance(a, DimExpr):
        value = _index(a)
        if value is None:
            raise TypeError(f"dim // needs an int or DimExpr, got {type(a).__name__} {a!r}")
        return value // c
    return _floordiv(a, c)


def _floordiv(e: DimExpr, c: int) -> Dim:
    if c == 1:
        return e
    return _cached((_FLOORDIV, e, c), _floordiv_new, e, c)


def _floordiv_new(e: DimExpr, c: int) -> Dim:
    q, r = _split(e, c)
    if r.__class__ is int:
        return q  # r is in [0, c)
    g = _content(r, c)  # type: ignore[arg-type]
    if g > 1:
        # floor(g*x / (g*c')) == floor(x / c')
        r = _exact_div(r, g)  # type: ignore[arg-type]
        c //= g
        if r.__class__ is int:
            return q
    atom = _lone_atom(r)  # type: ignore[arg-type]
    if atom is not None and atom.kind == _FLOORDIV:
        # (x // a) // c == x // (a * c)
        return q + _floordiv(atom.arg, atom.c * c)  # type: ignore[arg-type]
    lo, hi = _interval(r, None)
    if lo >= 0 and hi < c:
        return q
    return q + _atom_expr(_FLOORDIV, r, c, ())  # type: ignore[arg-type]


def floormod(a: Dim, b: Dim) -> Dim:
    """``a % b`` (Python's floor modulo) for a positive int constant ``b``; ints give ints.

    ``ValueError`` naming the expression when ``b`` is symbolic or not positive.
    """
    c = _divisor(a, b, "mod")
    if a.__class__ is int:
        return a % c  # type: ignore[operator]
    if not isinstance(a, DimExpr):
        value = _index(a)
        if value is None:
            raise TypeError(f"dim % needs an int or DimExpr, got {type(a).__name__} {a!r}")
        return value % c
    return _floormod(a, c)


def _floormod(e: DimExpr, c: int) -> Dim:
    if c == 1:
        return 0
    return _cached((_MOD, e, c), _floormod_new, e, c)


def _floormod_new(e: DimExpr, c: int) -> Dim:
    _, r = _split(e, c)
    if r.__class__ is int:
        return r
    # A term k * (x % a) with c dividing a is congruent to k * x modulo c: replace
    # it (this is also (x % a) % c == x % c), then reduce again.
    replaced = None
    for m, k in r._terms:  # type: ignore[union-attr]
        atom = m.atom
        if atom is not None and atom.kind == _MOD and atom.c % c == 0:
            if replaced is None:
                replaced = r
            replaced = replaced + k * (atom.arg - atom.expr)  # type: ignore[operator]
    if replaced is not None:
        return floormod(replaced, c)
    g = _content(r, c)  # type: ignore[arg-type]
    if g > 1:
        # (g*x) % (g*c') == g * (x % c')
        return g * _floormod(_exact_div(r, g), c // g)  # type: ignore[arg-type,operator]
    lo, hi = _interval(r, None)
    if lo >= 0 and hi < c:
        return r
    return _atom_expr(_MOD, r, c, ())  # type: ignore[arg-type]


# -- min and max --------------------------------------------------------------


def dim_min(*args: Dim) -> Dim:
    """The minimum of one or more dims; ints give an int.

    Nested mins are flattened, duplicates and constants folded, and an argument
    provably not smaller than another one dropped; one argument left is the result.
    """
    return _minmax(_MIN, args)


def dim_max(*args: Dim) -> Dim:
    """The maximum of one or more dims; ints give an int (see :func:`dim_min`)."""
    return _minmax(_MAX, args)


def _minmax(kind: int, args: tuple[Any, ...]) -> Dim:
    name = "min" if kind == _MIN else "max"
    if not args:
        raise TypeError(f"dim_{name} needs at least one argument")
    pick = min if kind == _MIN else max
    const: int | None = None
    exprs: dict[DimExpr, None] = {}
    todo = list(args)
    while todo:
        a = todo.pop()
        if a.__class__ is not int and not isinstance(a, DimExpr):
            a = as_dim(a, f"dim_{name} argument")
        if a.__class__ is int:
            const = a if const is None else pick(const, a)
            continue
        atom = _lone_atom(a)
        if atom is not None and atom.kind == kind:
            todo.extend(atom.args)
        else:
            exprs[a] = None
    if not exprs:
        return const  # type: ignore[return-value]
    candidates: list[Dim] = sorted(exprs, key=_arg_key)
    if const is not None:
        candidates.append(const)
    return _cached((kind, *candidates), _prune_minmax, kind, candidates)


def _prune_minmax(kind: int, candidates: list[Dim]) -> Dim:
    # Drop every argument another one provably beats (for min: is <= it). When two
    # are provably equal the first in canonical order stays.
    beats = prove_le if kind == _MIN else prove_ge
    kept: list[Dim] = []
    for x in candidates:
        if any(beats(y, x) for y in kept):
            continue
        kept = [y for y in kept if not beats(x, y)]
        kept.append(x)
    if len(kept) == 1:
        return kept[0]
    return _atom_expr(kind, None, 0, tuple(kept))


def dim_sum(dims: Iterable[Dim]) -> Dim:
    """The sum of ``dims`` in one pass (linear in the terms, unlike a chain of ``+``)."""
    coeffs: dict[_Mono, int] = {}
    get = coeffs.get
    const = 0
    for d in dims:
        if d.__class__ is int:
            const += d  # type: ignore[operator]
            continue
        d = as_dim(d, "dim_sum item")
        if d.__class__ is int:
            const += d  # type: ignore[operator]
            continue
        const += d._const  # type: ignore[union-attr]
        for m, k in d._terms:  # type: ignore[union-attr]
            coeffs[m] = get(m, 0) + k
    return _from_dict(coeffs, const)


def dim_prod(dims: Iterable[Dim]) -> Dim:
    """The product of ``dims`` (1 for none); the int factors are multiplied first."""
    const = 1
    result: Dim = 1
    for d in dims:
        if d.__class__ is int:
            const *= d  # type: ignore[operator]
        else:
            result = result * as_dim(d, "dim_prod item")  # type: ignore[operator]
    return result * const  # type: ignore[operator]


def divide_exact(a: Dim, b: Dim) -> Dim | None:
    """``a / b`` when ``b`` divides ``a`` exactly as a polynomial, else None.

    What reshape needs for a ``-1`` dim: ``divide_exact(n * seq * 768, n * 12)``
    is ``seq * 64``. A quotient is returned only when ``quotient * b == a``
    holds identically; None means "not found", not "does not divide". ``b == 0``
    gives None.
    """
    if b.__class__ is int or not isinstance(b, DimExpr):
        k = as_dim(b, "divisor")
        if k == 0:
            return None
        if a.__class__ is int or not isinstance(a, DimExpr):
            a = as_dim(a, "dividend")
            return a // k if a % k == 0 else None  # type: ignore[operator]
        if a._const % k or any(c % k for _, c in a._terms):  # type: ignore[operator]
            return None
        return _make(tuple([(m, c // k) for m, c in a._terms]), a._const // k)  # type: ignore
    if a.__class__ is int or not isinstance(a, DimExpr):
        return 0 if a == 0 else None
    if a == b:
        return 1
    if len(b._terms) == 1 and not b._const:
        # A monomial divisor (a product of dims): divide term by term.
        ((bm, bk),) = b._terms
        b_powers = bm.factors
        if a._const:
            return None
        terms = []
        for m, k in a._terms:
            if k % bk:
                return None
            powers = dict(m.factors)
            for at, p in b_powers:
                left = powers.get(at, 0) - p
                if left < 0:
                    return None
                powers[at] = left
            factors = tuple(sorted(((at, p) for at, p in powers.items() if p), key=_factor_key))
            terms.append((factors, k // bk))
        # Dividing every term by one monomial keeps the terms distinct, so only the
        # order (by degree first) may change.
        if len(terms) == 1 and not terms[0][0]:
            return terms[0][1]
        const = 0
        kept = []
        for factors, k in terms:
            if factors:
                kept.append((_mono(factors), k))
            else:
                const += k
        kept.sort(key=_term_key)
        return _make(tuple(kept), const)
    # Polynomial division by the leading term of b, checked at the end (the term
    # order need not be a monomial order, so a wrong turn only means None).
    lead_m, lead_k = b._terms[0]
    lead_powers = dict(lead_m.factors)
    quotient: Dim = 0
    rest: Dim = a
    for _ in range(len(a._terms) + 1):
        if rest.__class__ is int:
            break
        m, k = rest._terms[0]  # type: ignore[union-attr]
        powers = dict(m.factors)
        if k % lead_k or any(powers.get(at, 0) < p for at, p in lead_powers.items()):
            return None
        for at, p in lead_powers.items():
            powers[at] -= p
        factors = tuple(sorted(((at, p) for at, p in powers.items() if p), key=_factor_key))
        step: Dim = k // lead_k
        if factors:
            step = _make(((_mono(factors), k // lead_k),), 0)
        quotient = quotient + step  # type: ignore[operator]
        rest = a - quotient * b  # type: ignore[operator]
    if rest == 0 and quotient * b == a:  # type: ignore[operator]
        return quotient
    return None


# -- bounds and the prover ----------------------------------------------------
#
# Bounds are closed intervals over the extended integers: a lower end is an int
# or -inf, an upper end an int or +inf (math.inf, a float; everything else is an
# int so the arithmetic stays exact).


def _emul(a: Any, b: Any) -> Any:
    if a == 0 or b == 0:
        return 0  # 0 * inf is 0 for an interval end
    if a.__class__ is float or b.__class__ is float:
        return _INF if (a > 0) == (b > 0) else -_INF
    return a * b


def _eadd(a: Any, b: Any) -> Any:
    # Sums of lower ends never meet +inf, nor sums of upper ends -inf.
    if a.__class__ is float:
        return a
    if b.__class__ is float:
        return b
    return a + b


def _imul(x: tuple[Any, Any], y: tuple[Any, Any]) -> tuple[Any, Any]:
    if x[0] >= 0 and y[0] >= 0:
        return _emul(x[0], y[0]), _emul(x[1], y[1])
    products = (_emul(x[0], y[0]), _emul(x[0], y[1]), _emul(x[1], y[0]), _emul(x[1], y[1]))
    return min(products), max(products)


def _ipow(x: tuple[Any, Any], p: int) -> tuple[Any, Any]:
    result = x
    for _ in range(p - 1):
        result = _imul(result, x)
    if p % 2 == 0 and result[0] < 0:
        # x*x over an interval spanning 0 is not below 0.
        result = (0, result[1])
    return result


def _interval(d: Dim, lbs: Mapping[str, int] | None) -> tuple[Any, Any]:
    """Bounds ``(lo, hi)`` of ``d`` over all size-variable values (>= 0, or ``lbs``)."""
    if d.__class__ is int:
        return d, d
    lo = hi = d._const  # type: ignore[union-attr]
    for mono, k in d._terms:  # type: ignore[union-attr]
        factors = mono.factors
        if len(factors) == 1 and factors[0][1] == 1:
            mlo, mhi = _atom_interval(factors[0][0], lbs)
        else:
            mlo, mhi = 1, 1
            for atom, p in factors:
                mlo, mhi = _imul((mlo, mhi), _ipow(_atom_interval(atom, lbs), p))
        if k > 0:
            lo = _eadd(lo, _emul(k, mlo))
            hi = _eadd(hi, _emul(k, mhi))
        else:
            lo = _eadd(lo, _emul(k, mhi))
            hi = _eadd(hi, _emul(k, mlo))
    return lo, hi


def _atom_interval(atom: _Atom, lbs: Mapping[str, int] | None) -> tuple[Any, Any]:
    if lbs is None and atom._range is not None:
        return atom._range
    kind = atom.kind
    if kind == _VAR:
        rng: tuple[Any, Any] = (max(0, lbs.get(atom.name, 0)) if lbs else 0, _INF)  # type: ignore
    elif kind == _FLOORDIV:
        lo, hi = _interval(atom.arg, lbs)  # type: ignore[arg-type]
        c = atom.c
        rng = (lo if lo.__class__ is float else lo // c, hi if hi.__class__ is float else hi // c)
    elif kind == _MOD:
        rng = (0, atom.c - 1)  # Python's % by c > 0 is always in [0, c)
    else:
        ranges = [_interval(a, lbs) for a in atom.args]
        pick = min if kind == _MIN else max
        rng = (pick(r[0] for r in ranges), pick(r[1] for r in ranges))
    if lbs is None:
        atom._range = rng
    return rng


def bounds(
    d: Dim, lower_bounds: Mapping[str | SizeVar, int] | None = None
) -> tuple[int | None, int | None]:
    """Bounds ``(lo, hi)`` of ``d`` over all values of its size variables, None where unbounded.

    Size variables are >= 0, or >= ``lower_bounds[name]`` (keys are names or
    ``SizeVar``s). The bounds are sound, not always tight (interval arithmetic).
    """
    lo, hi = _interval(d, _lower_bounds(lower_bounds))
    return (None if lo.__class__ is float else lo, None if hi.__class__ is float else hi)


def _lower_bounds(lower_bounds: Mapping[Any, int] | None) -> dict[str, int] | None:
    if not lower_bounds:
        return None
    return {(k.name if isinstance(k, SizeVar) else k): int(v) for k, v in lower_bounds.items()}


def _nonneg(d: Dim, lbs: Mapping[str, int] | None, depth: int) -> bool:
    """Whether ``d >= 0`` is proven for all size-variable values."""
    lo = _interval(d, lbs)[0]
    if lo >= 0:
        return True
    if depth == 0 or d.__class__ is int:
        return False
    depth -= 1
    # Replace one linear atom by a bound that keeps the sum's lower bound sound,
    # and try again: k*min(x, ...) >= k*x for k < 0, k*max(x, ...) >= k*x for
    # k > 0, c*floor(x/c) between x - (c-1) and x, x % c <= x for x >= 0.
    for mono, k in d._terms:  # type: ignore[union-attr]
        atom = mono.atom
        if atom is None or atom.kind == _VAR:
            continue
        kind = atom.kind
        rest = d - k * atom.expr  # type: ignore[operator]
        if (kind == _MIN and k < 0) or (kind == _MAX and k > 0):
            for x in atom.args:
                if _nonneg(rest + k * x, lbs, depth):  # type: ignore[operator]
                    return True
        elif kind == _FLOORDIV:
            x, c = atom.arg, atom.c
            tail = k * x if k < 0 else k * (x - (c - 1))  # type: ignore[operator]
            if _nonneg(c * rest + tail, lbs, depth):  # type: ignore[operator]
                return True
        elif kind == _MOD and k < 0 and _nonneg(atom.arg, lbs, depth):
            if _nonneg(rest + k * atom.arg, lbs, depth):  # type: ignore[operator]
                return True
    return False


def prove_ge(a: Dim, b: Dim, lower_bounds: Mapping[str | SizeVar, int] | None = None) -> bool:
    """True when ``a >= b`` for every value of the size variables (>= 0, or
    ``lower_bounds``); False when that is false or could not be proven."""
    return _nonneg(a - b, _lower_bounds(lower_bounds), _PROVE_DEPTH)  # type: ignore[operator]


def prove_gt(a: Dim, b: Dim, lower_bounds: Mapping[str | SizeVar, int] | None = None) -> bool:
    """True when ``a > b`` is proven (see :func:`prove_ge`)."""
    return _nonneg(a - b - 1, _lower_bounds(lower_bounds), _PROVE_DEPTH)  # type: ignore[operator]


def prove_le(a: Dim, b: Dim, lower_bounds: Mapping[str | SizeVar, int] | None = None) -> bool:
    """True when ``a <= b`` is proven (see :func:`prove_ge`)."""
    return prove_ge(b, a, lower_bounds)


def prove_lt(a: Dim, b: Dim, lower_bounds: Mapping[str | SizeVar, int] | None = None) -> bool:
    """True when ``a < b`` is proven (see :func:`prove_ge`)."""
    return prove_gt(b, a, lower_bounds)


def prove_eq(a: Dim, b: Dim, lower_bounds: Mapping[str | SizeVar, int] | None = None) -> bool:
    """True when ``a == b`` is proven: equal canonical forms, or ``a >= b`` and ``b >= a``."""
    diff = a - b  # type: ignore[operator]
    if diff.__class__ is int:
        return diff == 0  # type: ignore[no-any-return]
    lbs = _lower_bounds(lower_bounds)
    return _nonneg(diff, lbs, _PROVE_DEPTH) and _nonneg(-diff, lbs, _PROVE_DEPTH)


def prove_ne(a: Dim, b: Dim, lower_bounds: Mapping[str | SizeVar, int] | None = None) -> bool:
    """True when ``a != b`` is proven (one of them is provably the greater)."""
    return prove_gt(a, b, lower_bounds) or prove_lt(a, b, lower_bounds)


# -- evaluation and substitution ----------------------------------------------


def evaluate(d: Dim, bindings: Mapping[str, int]) -> int:
    """The value of ``d`` with each size variable bound by name in ``bindings``.

    ``ValueError`` naming the variable when one is unbound or bound to a negative
    value (the simplifier's rewrites assume size variables >= 0).
    """
    if d.__class__ is int:
        return d  # type: ignore[return-value]
    if not isinstance(d, DimExpr):
        return as_dim(d)  # type: ignore[return-value]
    return _eval_expr(d, bindings, {}, d)


def _eval_expr(e: DimExpr, bindings: Mapping[str, int], memo: dict[_Atom, int], top: Dim) -> int:
    total = e._const
    for mono, k in e._terms:
        value = k
        for atom, p in mono.factors:
            v = memo.get(atom)
            if v is None:
                v = memo[atom] = _eval_atom(atom, bindings, memo, top)
            value *= v if p == 1 else v**p
        total += value
    return total


def _eval_atom(atom: _Atom, bindings: Mapping[str, int], memo: dict[_Atom, int], top: Dim) -> int:
    kind = atom.kind
    if kind == _VAR:
        name = atom.name
        try:
            value = bindings[name]  # type: ignore[index]
        except KeyError:
            raise ValueError(f"size variable {name!r} of dim {top} is not bound") from None
        value = operator.index(value)
        if value < 0:
            raise ValueError(f"size variable {name!r} of dim {top} is bound to {value} (< 0)")
        return value
    if kind == _FLOORDIV:
        return _eval_expr(atom.arg, bindings, memo, top) // atom.c  # type: ignore[arg-type]
    if kind == _MOD:
        return _eval_expr(atom.arg, bindings, memo, top) % atom.c  # type: ignore[arg-type]
    values = [
        a if a.__class__ is int else _eval_expr(a, bindings, memo, top)  # type: ignore[arg-type]
        for a in atom.args
    ]
    return min(values) if kind == _MIN else max(values)


def free_vars(d: Dim) -> frozenset[str]:
    """The names of the size variables ``d`` uses (empty for an int)."""
    if not isinstance(d, DimExpr):
        return frozenset()
    try:
        return d._vars
    except AttributeError:
        pass
    names: set[str] = set()
    for mono, _ in d._terms:
        for atom, _ in mono.factors:
            names |= _atom_vars(atom)
    result = frozenset(names)
    _set_vars(d, result)
    return result


def _atom_vars(atom: _Atom) -> frozenset[str]:
    if atom._vars is None:
        if atom.kind == _VAR:
            atom._vars = frozenset((atom.name,))  # type: ignore[arg-type]
        elif atom.arg is not None:
            atom._vars = free_vars(atom.arg)
        else:
            atom._vars = frozenset().union(*map(free_vars, atom.args))
    return atom._vars


def substitute(d: Dim, mapping: Mapping[str | SizeVar, Dim]) -> Dim:
    """``d`` with size variables replaced (keys are names or ``SizeVar``s) and re-simplified.

    Variables not in ``mapping`` stay. ``ValueError`` for a negative int value.
    """
    if not isinstance(d, DimExpr):
        return d
    subs: dict[str, Dim] = {}
    for key, value in mapping.items():
        name = key.name if isinstance(key, SizeVar) else key
        value = as_dim(value, f"substitute value of {name!r}")
        if value.__class__ is int and value < 0:  # type: ignore[operator]
            raise ValueError(f"size variable {name!r} cannot be {value} (< 0)")
        subs[name] = value
    if free_vars(d).isdisjoint(subs):
        return d
    return _subst_expr(d, subs, {})


def _subst_expr(e: DimExpr, subs: Mapping[str, Dim], memo: dict[_Atom, Dim]) -> Dim:
    total: Dim = e._const
    for mono, k in e._terms:
        value: Dim = k
        for atom, p in mono.factors:
            v = memo.get(atom)
            if v is None:
                v = memo[atom] = _subst_atom(atom, subs, memo)
            for _ in range(p):
                value = value * v  # type: ignore[operator]
        total = total + value  # type: ignore[operator]
    return total


def _subst_atom(atom: _Atom, subs: Mapping[str, Dim], memo: dict[_Atom, Dim]) -> Dim:
    if _atom_vars(atom).isdisjoint(subs):
        return atom.expr  # type: ignore[no-any-return]
    kind = atom.kind
    if kind == _VAR:
        return subs[atom.name]  # type: ignore[index]
    if kind == _FLOORDIV or kind == _MOD:
        inner = _subst_expr(atom.arg, subs, memo)  # type: ignore[arg-type]
        return floordiv(inner, atom.c) if kind == _FLOORDIV else floormod(inner, atom.c)
    args = [a if a.__class__ is int else _subst_expr(a, subs, memo) for a in atom.args]  # type: ignore
    return _minmax(kind, tuple(args))


# -- text -----------------------------------------------------------------------


def _str_expr(e: DimExpr) -> str:
    parts: list[str] = []
    for i, (mono, k) in enumerate(e._terms):
        text = _str_mono(mono, lead_minus=(i == 0 and k < 0))
        if abs(k) != 1:
            text = f"{text} * {abs(k)}"
        if i == 0:
            parts.append("-" + text if k < 0 else text)
        else:
            parts.append((" - " if k < 0 else " + ") + text)
    const = e._const
    if const:
        parts.append(f" - {-const}" if const < 0 else f" + {const}")
    return "".join(parts)


def _str_mono(mono: _Mono, lead_minus: bool) -> str:
    pieces: list[str] = []
    for atom, p in mono.factors:
        text = _str_atom(atom)
        # x floordiv c and x mod c are left-associative operators at the level of *: after
        # another factor or a unary minus they need parentheses.
        binary = atom.kind == _FLOORDIV or atom.kind == _MOD
        for _ in range(p):
            if binary and (pieces or lead_minus):
                pieces.append(f"({text})")
            else:
                pieces.append(text)
    return " * ".join(pieces)


def _str_atom(atom: _Atom) -> str:
    kind = atom.kind
    if kind == _VAR:
        return atom.name  # type: ignore[return-value]
    if kind == _FLOORDIV or kind == _MOD:
        arg = atom.arg
        text = _str_expr(arg)  # type: ignore[arg-type]
        if arg._const or len(arg._terms) > 1 or arg._terms[0][1] < 0:  # type: ignore[union-attr]
            text = f"({text})"
        return f"{text} {'floordiv' if kind == _FLOORDIV else 'mod'} {atom.c}"
    name = "min" if kind == _MIN else "max"
    return f"{name}({', '.join(map(str, atom.args))})"


_TOKEN_RE = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|([-+*(),]))")


def dim_terms(d: DimExpr) -> tuple[list[tuple[int, list[Any]]], int]:
    """The canonical form of ``d`` for code that rebuilds it elsewhere (an exporter writing
    it as ONNX arithmetic): ``(terms, constant)``, each term ``(coefficient, factors)``, each
    factor a :class:`SizeVar`, ``("floordiv", e, c)``, ``("mod", e, c)``, ``("min", args)`` or
    ``("max", args)``, repeated for powers (``n * n`` is two factors ``n``)."""
    terms: list[tuple[int, list[Any]]] = []
    for mono, k in d._terms:
        factors: list[Any] = []
        for atom, power in mono.factors:
            kind = atom.kind
            if kind == _VAR:
                factor: Any = SizeVar(atom.name)  # type: ignore[arg-type]
            elif kind == _FLOORDIV or kind == _MOD:
                factor = ("floordiv" if kind == _FLOORDIV else "mod", atom.arg, atom.c)
            else:
                factor = ("min" if kind == _MIN else "max", list(atom.args))
            factors.extend([factor] * power)
        terms.append((k, factors))
    return terms, d._const


def parse_dim(text: str) -> Dim:
    """Parse a dim as :func:`str` prints it: ints, size-variable names, ``+ - *``, the infix
    keywords ``floordiv`` and ``mod`` (MLIR affine expressions' spelling: the text format
    keeps ``//`` for comments and ``%`` for variables), parentheses, ``min(...)`` and
    ``max(...)``; ``floordiv`` and ``mod`` bind like ``*``, as ``//`` and ``%`` in Python.

    ``parse_dim(str(d)) == d`` for every dim. ``ValueError`` naming the (1-based)
    column of a bad character or unexpected token.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_dim needs a str, got {type(text).__name__} {text!r}")
    tokens: list[tuple[str, str, int]] = []  # (kind, text, column)
    pos = 0
    end = len(text)
    while True:
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            while pos < end and text[pos].isspace():
                pos += 1
            if pos == end:
                break
            raise ValueError(f"bad character {text[pos]!r} at column {pos + 1} in dim {text!r}")
        pos = m.end()
        if m.group(1) is not None:
            tokens.append(("int", m.group(1), m.start(1) + 1))
        elif m.group(2) is not None:
            tokens.append(("name", m.group(2), m.start(2) + 1))
        else:
            tokens.append(("op", m.group(3), m.start(3) + 1))
    tokens.append(("end", "", end + 1))
    return _Parser(text, tokens).parse()


class _Parser:
    """Recursive descent over the tokens: sum := term (('+'|'-') term)*,
    term := unary (('*'|'floordiv'|'mod') unary)*, unary := ('-'|'+') unary | atom."""

    def __init__(self, text: str, tokens: list[tuple[str, str, int]]) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0

    def error(self, what: str) -> ValueError:
        kind, tok, col = self.tokens[self.i]
        found = "the end" if kind == "end" else repr(tok)
        return ValueError(f"expected {what}, found {found} at column {col} in dim {self.text!r}")

    def parse(self) -> Dim:
        if self.tokens[0][0] == "end":
            raise self.error("a dim")
        value = self.sum()
        if self.tokens[self.i][0] != "end":
            raise self.error("an operator or the end")
        return value

    def sum(self) -> Dim:
        # The terms are added in one dim_sum: a chain of + would copy the growing
        # sum once per term.
        terms = [self.term()]
        while True:
            tok = self.tokens[self.i][1]
            if tok == "+":
                self.i += 1
                terms.append(self.term())
            elif tok == "-":
                self.i += 1
                terms.append(-self.term())  # type: ignore[operator]
            else:
                return terms[0] if len(terms) == 1 else dim_sum(terms)

    def term(self) -> Dim:
        value = self.unary()
        while True:
            tok = self.tokens[self.i][1]
            if tok == "*":
                self.i += 1
                value = value * self.unary()  # type: ignore[operator]
            elif (tok == "floordiv" or tok == "mod") and self.tokens[self.i][0] == "name":
                self.i += 1
                col = self.tokens[self.i][2]
                divisor = self.unary()
                try:
                    divide = floordiv if tok == "floordiv" else floormod
                    value = divide(value, divisor)
                except ValueError as exc:
                    raise ValueError(f"{exc} (at column {col} in dim {self.text!r})") from None
            else:
                return value

    def unary(self) -> Dim:
        tok = self.tokens[self.i][1]
        if tok == "-":
            self.i += 1
            return -self.unary()  # type: ignore[operator]
        if tok == "+":
            self.i += 1
            return self.unary()
        return self.atom()

    def atom(self) -> Dim:
        kind, tok, _ = self.tokens[self.i]
        if kind == "int":
            self.i += 1
            return int(tok)
        if kind == "name":
            if tok in _CALLS:
                self.i += 1
                if self.tokens[self.i][1] != "(":
                    raise self.error(f"'(' after {tok}")
                self.i += 1
                args = [self.sum()]
                while self.tokens[self.i][1] == ",":
                    self.i += 1
                    args.append(self.sum())
                if self.tokens[self.i][1] != ")":
                    raise self.error("',' or ')'")
                self.i += 1
                return dim_min(*args) if tok == "min" else dim_max(*args)
            self.i += 1
            return SizeVar(tok)
        if tok == "(":
            self.i += 1
            value = self.sum()
            if self.tokens[self.i][1] != ")":
                raise self.error("')'")
            self.i += 1
            return value
        raise self.error("an int, a name or '('")
