"""Tests of irpass.ir.dims: canonical forms, simplification rules, the prover,
evaluation, substitution and the text round trip of symbolic dims.

The main correctness test is the property test that builds random expressions
both symbolically and on plain ints and checks that every value agrees: each
rewrite of the simplifier must preserve the value for all size variables >= 0.
"""

from __future__ import annotations

import copy
import os
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from irpass.ir.dims import (
    DimExpr,
    SizeVar,
    as_dim,
    bounds,
    dim_max,
    dim_min,
    dim_prod,
    dim_sum,
    divide_exact,
    evaluate,
    floordiv,
    floormod,
    free_vars,
    is_static,
    parse_dim,
    prove_eq,
    prove_ge,
    prove_gt,
    prove_le,
    prove_lt,
    prove_ne,
    substitute,
)

n = SizeVar("n")
m = SizeVar("m")
k = SizeVar("k")
seq = SizeVar("seq")


# -- canonical form ---------------------------------------------------------------


@pytest.mark.parametrize(
    "left, right",
    [
        (lambda: n * 4 + n, lambda: 5 * n),
        (lambda: (n + 1) * 2 - 2, lambda: 2 * n),
        (lambda: n + m + 3, lambda: 3 + m + n),
        (lambda: (n + m) * (n - m), lambda: n * n - m * m),
        (lambda: n * m * k, lambda: k * (m * n)),
        (lambda: -(n * -1), lambda: n),
        (lambda: (n + 1) * (n + 1), lambda: n * n + 2 * n + 1),
        (lambda: dim_min(n, m) + 1, lambda: 1 + dim_min(m, n)),
        (lambda: (seq + 1) // 2 * n, lambda: n * ((1 + seq) // 2)),
    ],
)
def test_equal_expressions_built_differently_are_equal_and_hash_equal(
    left: Callable[[], Any], right: Callable[[], Any]
) -> None:
    a, b = left(), right()
    assert a == b
    assert hash(a) == hash(b)
    assert str(a) == str(b)
    assert {a: 1}[b] == 1


@pytest.mark.parametrize(
    "build", [lambda: n - n, lambda: (n + 3) - n, lambda: n * 0, lambda: (n * 2 + 4) - 2 * (n + 2)]
)
def test_constant_results_are_plain_ints(build: Callable[[], Any]) -> None:
    value = build()
    assert type(value) is int


def test_size_vars_are_values_by_name() -> None:
    assert SizeVar("n") is n
    assert SizeVar("n") == n and hash(SizeVar("n")) == hash(n)
    assert n != m
    assert n.name == "n"
    assert isinstance(n * 2 - n, SizeVar)
    assert not isinstance(n + 1, SizeVar)
    assert n != 0 and n != 1  # a DimExpr is never a constant
    with pytest.raises(TypeError, match="SizeVar"):
        DimExpr()


@pytest.mark.parametrize("name", ["", "2n", "a-b", "min", "max", "floordiv", "mod", "inf",
                                  "None", "n m", "ñ", 3])
def test_bad_size_var_names(name: Any) -> None:
    with pytest.raises(ValueError, match="size variable name"):
        SizeVar(name)


def test_dims_are_immutable_and_copy_to_themselves() -> None:
    d = (n * 4 + 1) // 3
    with pytest.raises(AttributeError):
        d._const = 5  # type: ignore[misc]
    assert copy.copy(d) is d and copy.deepcopy(d) is d
    assert pickle.loads(pickle.dumps(d)) == d
    assert pickle.loads(pickle.dumps(n)) is n


def test_operators_with_ints_in_both_orders() -> None:
    assert evaluate(n + 3, {"n": 5}) == 8 and evaluate(3 + n, {"n": 5}) == 8
    assert evaluate(n - 3, {"n": 5}) == 2 and evaluate(3 - n, {"n": 5}) == -2
    assert evaluate(n * 3, {"n": 5}) == 15 and evaluate(3 * n, {"n": 5}) == 15
    assert evaluate(n // 3, {"n": 5}) == 1 and evaluate(n % 3, {"n": 5}) == 2
    assert evaluate(-n, {"n": 5}) == -5 and +n is n
    assert n * np.int64(4) == n * 4 and np.int64(4) + n == n + 4
    with pytest.raises(TypeError):
        n + 1.5  # type: ignore[operator]
    with pytest.raises(TypeError):
        n // 2.0  # type: ignore[operator]


def test_orderings_and_truth_raise_type_error_pointing_at_the_prover() -> None:
    for compare in (
        lambda: n < 3,
        lambda: n <= m,
        lambda: n > 0,
        lambda: 3 >= n,
        lambda: sorted([n, m]),
        lambda: max(n, 4),
    ):
        with pytest.raises(TypeError, match="prove_"):
            compare()
    with pytest.raises(TypeError, match="truth value"):
        bool(n)


# -- floordiv and mod ------------------------------------------------------------------


def test_floordiv_and_mod_of_constants_fold_with_python_semantics() -> None:
    for a in range(-9, 10):
        for c in range(1, 5):
            assert floordiv(a, c) == a // c and type(floordiv(a, c)) is int
            assert floormod(a, c) == a % c and type(floormod(a, c)) is int
    assert floordiv(np.int64(7), 2) == 3


@pytest.mark.parametrize(
    "built, expected",
    [
        (lambda: (6 * n) // 3, lambda: 2 * n),  # (c*k*e) // c == k*e
        (lambda: (12 * n * m) // 4, lambda: 3 * n * m),
        (lambda: (4 * n + m) // 4, lambda: n + m // 4),  # exact split
        (lambda: (4 * n + 4 * m + 6) // 4, lambda: n + m + 1),
        (lambda: (3 * n + 1) // 2, lambda: n + (n + 1) // 2),
        (lambda: (n - 1) // 2, lambda: (n + 1) // 2 - 1),
        (lambda: (2 * n + 2) // 4, lambda: (n + 1) // 2),  # common factor
        (lambda: (n // 2) // 3, lambda: n // 6),  # nested floordiv
        (lambda: ((n + 1) // 2) // 2, lambda: (n + 1) // 4),
        (lambda: n // 1, lambda: n),
        (lambda: (n % 4) // 4, lambda: 0),  # 0 <= n % 4 < 4
        (lambda: (4 * n + 8) % 4, lambda: 0),  # every coefficient divisible
        (lambda: (4 * n + m + 9) % 4, lambda: (m + 1) % 4),
        (lambda: (2 * n) % 4, lambda: 2 * (n % 2)),
        (lambda: (n % 8) % 4, lambda: n % 4),  # 4 divides 8
        (lambda: (n % 4) % 8, lambda: n % 4),  # n % 4 < 8 already
        (lambda: n % 1, lambda: 0),
        (lambda: (n % 4 + m) % 2, lambda: (n + m) % 2),
    ],
)
def test_floordiv_mod_rules(built: Callable[[], Any], expected: Callable[[], Any]) -> None:
    got, want = built(), expected()
    assert got == want and hash(got) == hash(want)
    for nv in range(9):
        for mv in range(5):
            bind = {"n": nv, "m": mv}
            assert evaluate(got, bind) == evaluate(want, bind)


def test_conv_output_size_simplifies() -> None:
    h = SizeVar("h")

    def out(p: int, kernel: int, s: int) -> Any:
        return (h + 2 * p - kernel) // s + 1

    assert out(1, 3, 1) == h
    assert out(1, 3, 2) == (h + 1) // 2
    assert str(out(0, 3, 2)) == "(h + 1) floordiv 2 - 1"


@pytest.mark.parametrize(
    "op, text",
    [
        (lambda: n // m, "n floordiv m"),
        (lambda: n % m, "n mod m"),
        (lambda: 8 // n, "8 floordiv n"),
        (lambda: 8 % n, "8 mod n"),
        (lambda: floordiv(n + 1, seq), "(n + 1) floordiv seq"),
    ],
)
def test_division_by_a_symbolic_value_names_the_expression(
    op: Callable[[], Any], text: str
) -> None:
    with pytest.raises(ValueError, match="symbolic") as info:
        op()
    assert text in str(info.value)


@pytest.mark.parametrize("c", [0, -2])
def test_division_by_a_non_positive_constant(c: int) -> None:
    with pytest.raises(ValueError, match=f"n floordiv {c}"):
        n // c
    with pytest.raises(ValueError, match=f"n mod {c}"):
        n % c
    with pytest.raises(ValueError, match="positive"):
        floordiv(7, c)


# -- min and max -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "built, expected",
    [
        (lambda: dim_min(n, dim_min(m, 8)), lambda: dim_min(m, n, 8)),  # flattened
        (lambda: dim_min(n, m, n), lambda: dim_min(m, n)),  # duplicates dropped
        (lambda: dim_min(n, 8, 3, 5), lambda: dim_min(n, 3)),  # constants folded
        (lambda: dim_min(n, n + 1), lambda: n),  # provably not the result
        (lambda: dim_max(n, n + 1), lambda: n + 1),
        (lambda: dim_min(n, 0), lambda: 0),  # size vars are >= 0
        (lambda: dim_max(n, 0), lambda: n),
        (lambda: dim_max(n % 4, 3), lambda: 3),
        (lambda: dim_min(n // 2, n), lambda: n // 2),
        (lambda: dim_min(n), lambda: n),
        (lambda: dim_max(dim_max(n, 2), dim_max(m, 5)), lambda: dim_max(n, m, 5)),
        (lambda: dim_min(4, 9, 2), lambda: 2),
    ],
)
def test_min_max_rules(built: Callable[[], Any], expected: Callable[[], Any]) -> None:
    got, want = built(), expected()
    assert got == want and hash(got) == hash(want)


def test_min_max_keep_undecided_arguments() -> None:
    assert str(dim_min(n, 8)) == "min(n, 8)"
    assert str(dim_max(m, n)) == "max(m, n)"
    assert type(dim_min(3, 5)) is int
    with pytest.raises(TypeError, match="at least one"):
        dim_min()


# -- the prover ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fact",
    [
        lambda: prove_ge(n + 1, n),
        lambda: prove_gt(n + 1, n),
        lambda: prove_ge(n, 0),
        lambda: prove_ge(n * m, 0),
        lambda: prove_lt(n % 4, 4),
        lambda: prove_le(n % 4, 3),
        lambda: prove_ge(n, n // 2),
        lambda: prove_ge(n, n // 2 * 2),
        lambda: prove_le(n % 4, n),
        lambda: prove_ge(n, dim_min(n, 8)),
        lambda: prove_le(dim_min(n, 8), 8),
        lambda: prove_ge(dim_max(n, m), m),
        lambda: prove_ge((seq + 1) // 2 * 2, seq),
        lambda: prove_ge(n + 1, n % 4 + 1) or True,  # not claimed either way
        lambda: prove_eq(n * 2, n + n),
        lambda: prove_ne(n + 1, n),
        lambda: prove_ge(n, 1, {"n": 1}),
        lambda: prove_gt(n * m, 0, {n: 1, m: 1}),
        lambda: prove_ge(3, 2),
    ],
)
def test_prover_proves_true_facts(fact: Callable[[], bool]) -> None:
    assert fact() is True


@pytest.mark.parametrize(
    "claim",
    [
        lambda: prove_ge(n, m),  # false for n=0, m=1
        lambda: prove_ge(n, 1),  # false for n=0
        lambda: prove_gt(n, n),
        lambda: prove_eq(n, m),
        lambda: prove_ne(n, m),  # equal when n == m
        lambda: prove_ge(n * m, n),  # false for m=0
        lambda: prove_lt(n % 4, 3),
        lambda: prove_ge(n // 2 * 2, n),  # false for odd n
        lambda: prove_le(n, (n + 1) // 2),  # false for n = 2
        lambda: prove_le(n, n % 4),  # false for n = 4
        lambda: prove_ge(n - 1, n // 2 * 2),  # false for n = 0
        lambda: prove_le(dim_min(n - 5, m) % 4, dim_min(n - 5, m)),  # false for n = 0
        lambda: prove_ge(n - 5, 0, {"m": 9}),
        lambda: prove_ge(2, 3),
        lambda: prove_eq(dim_min(n, m), n),
    ],
)
def test_prover_does_not_claim_false_or_undecided_facts(claim: Callable[[], bool]) -> None:
    assert claim() is False


def test_bounds() -> None:
    assert bounds(n) == (0, None)
    assert bounds(n % 4 + 1) == (1, 4)
    assert bounds(-n + 5) == (None, 5)
    assert bounds(dim_min(n, 8)) == (0, 8)
    assert bounds(n * m, {"n": 2, m: 3}) == (6, None)
    assert bounds(7) == (7, 7)


# -- evaluate, free_vars, substitute, helpers -----------------------------------------------


def test_evaluate() -> None:
    d = (seq + 1) // 2 * n + dim_max(m, 3) - n % 3
    for nv, mv, sv in [(0, 0, 0), (3, 7, 5), (10, 1, 128)]:
        assert evaluate(d, {"n": nv, "m": mv, "seq": sv, "unused": 9}) == (
            (sv + 1) // 2 * nv + max(mv, 3) - nv % 3
        )
    assert evaluate(7, {}) == 7


def test_evaluate_unbound_or_negative_variable() -> None:
    with pytest.raises(ValueError, match="'seq'.*not bound"):
        evaluate(n + seq, {"n": 1})
    with pytest.raises(ValueError, match="'n'.*-1"):
        evaluate(n + 1, {"n": -1})


def test_free_vars_and_is_static() -> None:
    assert free_vars(dim_max(n, m // 2) + seq) == {"n", "m", "seq"}
    assert free_vars(5) == frozenset()
    assert is_static(5) and not is_static(n)
    assert as_dim(np.int32(3)) == 3 and type(as_dim(np.int32(3))) is int
    assert as_dim(n) is n
    with pytest.raises(TypeError, match="shape dim"):
        as_dim(2.0, "shape dim")


def test_substitute() -> None:
    d = (seq + 1) // 2 * n + dim_min(m, 8)
    assert substitute(d, {"seq": 5, "n": 2, "m": 20}) == 14
    assert type(substitute(d, {"seq": 5, "n": 2, "m": 20})) is int
    assert substitute(d, {seq: 2 * k}) == k * n + dim_min(m, 8)
    assert substitute(d, {"n": m}) == (seq + 1) // 2 * m + dim_min(m, 8)
    assert substitute(d, {"other": 3}) is d
    assert substitute(dim_min(n, m), {"m": n + 1}) == n
    assert substitute(4, {"n": 1}) == 4
    with pytest.raises(ValueError, match="'n'"):
        substitute(d, {"n": -1})


def test_dim_sum_prod_and_divide_exact() -> None:
    parts = [SizeVar(f"c{i}") for i in range(50)]
    assert dim_sum(parts + [3, 4]) == sum(parts, 7)
    assert dim_sum([n, -n, 2]) == 2
    assert dim_prod([n, 4, seq, 2]) == n * seq * 8
    assert dim_prod([]) == 1
    assert divide_exact(n * seq * 768, n * 12) == seq * 64
    assert divide_exact(n * seq * 768, n * seq * 768) == 1
    assert divide_exact((n + 1) * m, n + 1) == m
    assert divide_exact(n * 6 + 4, 2) == n * 3 + 2
    assert divide_exact(12, 4) == 3
    assert divide_exact(n * seq, m) is None
    assert divide_exact(n * 6 + 3, 2) is None
    assert divide_exact(13, 4) is None
    assert divide_exact(n, 0) is None
    assert divide_exact(0, n) == 0 and divide_exact(5, n) is None


# -- text ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build, text",
    [
        (lambda: n * 4, "n * 4"),
        (lambda: (seq + 1) // 2, "(seq + 1) floordiv 2"),
        (lambda: dim_min(n, 8), "min(n, 8)"),
        (lambda: n * m + 3, "m * n + 3"),
        (lambda: -n + 5, "-n + 5"),
        (lambda: 5 - n * 4, "-n * 4 + 5"),
        (lambda: n * n + n - 1, "n * n + n - 1"),
        (lambda: n % 4 * 3, "n mod 4 * 3"),
        (lambda: m - (n // 2) * 3, "m - n floordiv 2 * 3"),
        (lambda: -(n // 2) + m, "m - n floordiv 2"),
        (lambda: -(n // 2) * m, "-m * (n floordiv 2)"),
        (lambda: -((n + 1) // 2), "-((n + 1) floordiv 2)"),
        (lambda: n * 3 // 4, "n * 3 floordiv 4"),
        (lambda: dim_max(n - 2, m) // 2, "max(m, n - 2) floordiv 2"),
    ],
)
def test_str_prints_python_like_infix(build: Callable[[], Any], text: str) -> None:
    d = build()
    assert str(d) == text
    assert repr(d) == text
    assert parse_dim(text) == d


def test_parse_dim_reads_python_precedence() -> None:
    assert parse_dim("  n*4 + n ") == n * 5
    assert parse_dim("-n floordiv 2") == floordiv(-n, 2)  # unary minus binds tighter, as in Python
    assert parse_dim("n - m - 1") == n - m - 1
    assert parse_dim("n * (m + 1) floordiv 2") == (n * (m + 1)) // 2
    assert parse_dim("min(n, max(m, 3), 8)") == dim_min(n, dim_max(m, 3), 8)
    assert parse_dim("+7") == 7 and type(parse_dim("12")) is int
    assert parse_dim("(n)") is n


@pytest.mark.parametrize(
    "text, message",
    [
        ("n / 2", "bad character '/' at column 3"),
        ("n + $", "bad character '\\$' at column 5"),
        ("seq * 2.5", "bad character '.' at column 8"),
        ("", "expected a dim, found the end at column 1"),
        ("(n + 1", "expected '\\)', found the end at column 7"),
        ("n m", "found 'm' at column 3"),
        ("min n", "expected '\\(' after min, found 'n' at column 5"),
        ("max(n m)", "expected ',' or '\\)', found 'm' at column 7"),
        ("n + * 2", "found '\\*' at column 5"),
        ("n floordiv m", "symbolic.*column 12"),
        ("n mod 0", "positive.*column 7"),
    ],
)
def test_parse_dim_errors_name_the_column(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_dim(text)


# -- property tests ----------------------------------------------------------------------------

NAMES = ("n", "m", "k")

# A random expression tree: ("var", name) | ("int", v) | (op, a, b) | ("neg", a) |
# ("div"/"mod", a, c) | ("min"/"max", [a, ...]).
_leaf = st.one_of(
    st.sampled_from(NAMES).map(lambda name: ("var", name)),
    st.integers(-6, 9).map(lambda v: ("int", v)),
)


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.tuples(st.sampled_from(["add", "sub", "mul"]), children, children),
        st.tuples(st.just("neg"), children),
        st.tuples(st.sampled_from(["div", "mod"]), children, st.integers(1, 6)),
        st.tuples(st.sampled_from(["min", "max"]), st.lists(children, min_size=1, max_size=3)),
    )


trees = st.recursive(_leaf, _extend, max_leaves=10)
# Expressions that are >= 0 for size vars >= 0 (what may be substituted for one).
_nonneg_leaf = st.one_of(
    st.sampled_from(NAMES).map(lambda name: ("var", name)),
    st.integers(0, 5).map(lambda v: ("int", v)),
)
nonneg_trees = st.recursive(
    _nonneg_leaf,
    lambda ch: st.one_of(
        st.tuples(st.sampled_from(["add", "mul"]), ch, ch),
        st.tuples(st.sampled_from(["div", "mod"]), ch, st.integers(1, 4)),
        st.tuples(st.sampled_from(["min", "max"]), st.lists(ch, min_size=1, max_size=3)),
    ),
    max_leaves=5,
)
bindings = st.fixed_dictionaries({name: st.integers(0, 12) for name in NAMES})


def build(tree: Any, swap: bool = False) -> Any:
    """The dim of ``tree`` through the module's operators (``swap``: operands and
    min/max arguments in the other order, which must not change the result)."""
    kind = tree[0]
    if kind == "var":
        return SizeVar(tree[1])
    if kind == "int":
        return tree[1]
    if kind == "neg":
        return -build(tree[1], swap)
    if kind in ("div", "mod"):
        a = build(tree[1], swap)
        return a // tree[2] if kind == "div" else a % tree[2]
    if kind in ("min", "max"):
        args = [build(t, swap) for t in tree[1]]
        if swap:
            args.reverse()
        return dim_min(*args) if kind == "min" else dim_max(*args)
    a, b = build(tree[1], swap), build(tree[2], swap)
    if kind == "add":
        return b + a if swap else a + b
    if kind == "sub":
        return -b + a if swap else a - b
    return b * a if swap else a * b


def direct(tree: Any, env: dict[str, int]) -> int:
    """The value of ``tree`` computed on plain ints."""
    kind = tree[0]
    if kind == "var":
        return env[tree[1]]
    if kind == "int":
        return tree[1]
    if kind == "neg":
        return -direct(tree[1], env)
    if kind == "div":
        return direct(tree[1], env) // tree[2]
    if kind == "mod":
        return direct(tree[1], env) % tree[2]
    if kind in ("min", "max"):
        values = [direct(t, env) for t in tree[1]]
        return min(values) if kind == "min" else max(values)
    a, b = direct(tree[1], env), direct(tree[2], env)
    return a + b if kind == "add" else a - b if kind == "sub" else a * b


# IRPASS_DIMS_EXAMPLES=5000 for a longer hunt.
_EXAMPLES = int(os.environ.get("IRPASS_DIMS_EXAMPLES", "400"))
_settings = settings(
    max_examples=_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@_settings
@given(trees, st.lists(bindings, min_size=1, max_size=6))
def test_simplifier_preserves_values(tree: Any, envs: list[dict[str, int]]) -> None:
    d = build(tree)
    assert type(d) is int or isinstance(d, DimExpr)
    for env in envs:
        assert evaluate(d, env) == direct(tree, env), (tree, str(d), env)


@_settings
@given(trees)
def test_canonical_form_does_not_depend_on_operand_order(tree: Any) -> None:
    a, b = build(tree), build(tree, swap=True)
    assert a == b, (str(a), str(b))
    assert hash(a) == hash(b)
    assert str(a) == str(b)


@_settings
@given(trees)
def test_text_round_trip(tree: Any) -> None:
    d = build(tree)
    text = str(d)
    back = parse_dim(text)
    assert back == d, (text, str(back))
    assert hash(back) == hash(d)
    assert str(back) == text


@_settings
@given(trees, trees, st.lists(bindings, min_size=1, max_size=6))
def test_prover_never_claims_a_falsehood(
    a_tree: Any, b_tree: Any, envs: list[dict[str, int]]
) -> None:
    a, b = build(a_tree), build(b_tree)
    proven = {
        ">=": prove_ge(a, b),
        ">": prove_gt(a, b),
        "==": prove_eq(a, b),
        "!=": prove_ne(a, b),
    }
    lo, hi = bounds(a)
    with_lb = prove_ge(a, b, {"n": 2})
    for env in envs:
        av, bv = evaluate(a, env), evaluate(b, env)
        assert not proven[">="] or av >= bv
        assert not proven[">"] or av > bv
        assert not proven["=="] or av == bv
        assert not proven["!="] or av != bv
        assert lo is None or av >= lo
        assert hi is None or av <= hi
        if env["n"] >= 2:
            assert not with_lb or av >= bv


@_settings
@given(trees, nonneg_trees, bindings)
def test_substitute_agrees_with_evaluation(tree: Any, value_tree: Any, env: dict[str, int]) -> None:
    d = build(tree)
    value = build(value_tree)
    replaced = substitute(d, {"n": value})
    inner_env = dict(env, n=evaluate(value, env))
    assert evaluate(replaced, env) == evaluate(d, inner_env)


def test_result_cache_is_bounded_and_transparent(monkeypatch: pytest.MonkeyPatch) -> None:
    from irpass.ir import dims as dims_module

    monkeypatch.setattr(dims_module, "_RESULTS", {})
    monkeypatch.setattr(dims_module, "_RESULTS_MAX", 4)
    first = [(n + i) // 3 for i in range(10)] + [dim_min(n, m + i) for i in range(10)]
    assert len(dims_module._RESULTS) <= 4
    again = [(n + i) // 3 for i in range(10)] + [dim_min(n, m + i) for i in range(10)]
    assert first == again
    assert [evaluate(d, {"n": 7, "m": 2}) for d in first] == (
        [(7 + i) // 3 for i in range(10)] + [min(7, 2 + i) for i in range(10)]
    )


def test_equality_with_other_types() -> None:
    assert (n == "n") is False
    assert (n != "n") is True
    assert (n + 1 != n + 1) is False
    assert n != 3


def test_threads_building_the_same_forms_get_equal_values() -> None:
    import threading

    results: list[list[Any]] = []
    barrier = threading.Barrier(4)

    def work() -> None:
        barrier.wait()
        names = [SizeVar(f"t{i}") for i in range(200)]
        results.append([(v + 1) // 3 + dim_max(v, 5) for v in names])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    assert all(r == results[0] for r in results)
    assert [hash(d) for d in results[1]] == [hash(d) for d in results[0]]
