"""The evaluator runs tail calls in constant memory (loops written as tail-recursive
functions, as the ONNX importer writes Loop and Scan), and every other call as before."""

import tracemalloc

import numpy as np
from irpass import evaluate
from irpass import op as O
from irpass.ir import (
    Call,
    Function,
    FuncType,
    GlobalVar,
    If,
    IRModule,
    Let,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    const,
    var,
)

I64 = TensorType((), "int64")


def i64(v):
    return const(np.int64(v))


def _buffer_loop(rounds: int, width: int):
    """``let f = fn (i, buf) { if (i < rounds) { f(i + 1, buf + 1) } else { buf } };
    f(0, zeros)``: each round makes a new ``width``-element float64 buffer."""
    buf_t = TensorType((width,), "float64")
    f = Var("f", FuncType([I64, buf_t], buf_t))
    i, buf = var("i", I64), var("buf", buf_t)
    step = Call(f, [O.add(i, i64(1)), O.add(buf, const(np.float64(1.0)))])
    fn = Function([i, buf], If(O.less(i, i64(rounds)), step, buf), buf_t)
    return Let(f, fn, Call(f, [i64(0), const(np.zeros(width))]))


def _peak_bytes(thunk):
    tracemalloc.start()
    try:
        result = thunk()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_tail_recursive_loop_keeps_no_activation_per_round():
    # 2,000 rounds of an 8 KB buffer: 16 MB if every round's activation stayed alive
    out, peak = _peak_bytes(lambda: evaluate(_buffer_loop(2_000, 1_000)))
    np.testing.assert_array_equal(out, np.full(1_000, 2_000.0))
    assert peak < 4_000_000, f"peak {peak} bytes"


def test_ten_thousand_rounds_with_a_growing_scan_buffer():
    # what a Loop with a scan output becomes: a buffer written one row per round
    n = 10_000
    buf_t = TensorType((n,), "int64")
    ret = TupleType([I64, buf_t])
    f = Var("f", FuncType([I64, I64, buf_t], ret))
    i, acc, buf = var("i", I64), var("acc", I64), var("buf", buf_t)
    acc2 = O.add(acc, i)
    row = O.where(O.equal(const(np.arange(n)), i), acc2, buf)
    fn = Function([i, acc, buf], If(O.less(i, i64(n)),
                                    Call(f, [O.add(i, i64(1)), acc2, row]),
                                    Tuple([acc, buf])), ret)
    expr = Let(f, fn, Call(f, [i64(0), i64(0), const(np.zeros(n, "int64"))]))
    (total, rows), peak = _peak_bytes(lambda: evaluate(expr))
    assert int(total) == n * (n - 1) // 2
    np.testing.assert_array_equal(rows, np.cumsum(np.arange(n)))
    assert peak < 20 * n * 8, f"peak {peak} bytes"


def test_tail_calls_through_lets_and_nested_ifs():
    # fn (i, x) { let y = x * 2; if (i < 1) { x } else { if (i < 3) { f(i - 1, y) }
    #                                                    else { let z = y; f(i - 1, z) } } }
    f = Var("f", FuncType([I64, I64], I64))
    i, x, y, z = var("i", I64), var("x", I64), Var("y"), Var("z")
    inner = If(O.less(i, i64(3)), Call(f, [O.subtract(i, i64(1)), y]),
               Let(z, y, Call(f, [O.subtract(i, i64(1)), z])))
    fn = Function([i, x], Let(y, O.multiply(x, i64(2)), If(O.less(i, i64(1)), x, inner)), I64)
    for k in range(6):
        assert int(evaluate(Let(f, fn, Call(f, [i64(k), i64(1)])))) == 2**k


def test_calls_not_in_tail_position_keep_their_caller():
    # fn (n) { if (n < 1) { (0, 0) } else { let r = f(n - 1); (r.0 + 1, (f(n - 1)).1 + n) } }
    pair = TupleType([I64, I64])
    f = Var("f", FuncType([I64], pair))
    n, r = var("n", I64), Var("r")
    again = Call(f, [O.subtract(n, i64(1))])  # one node, used twice: computed once
    body = If(O.less(n, i64(1)), Tuple([i64(0), i64(0)]),
              Let(r, again, Tuple([O.add(TupleGetItem(r, 0), i64(1)),
                                   O.add(TupleGetItem(again, 1), n)])))
    out = evaluate(Let(f, Function([n], body, pair), Call(f, [i64(50)])))
    assert (int(out[0]), int(out[1])) == (50, sum(range(51)))


def test_a_call_shared_between_a_tail_position_and_a_later_use():
    # fn (n, x) { if (n < 1) { x } else { (if (c) { %g } else { %g + 1 }, %g).0 }
    # where %g = f(n - 1, x + 1): the `if` is not the body's tail, so %g must be kept
    f = Var("f", FuncType([I64, I64], I64))
    n, x = var("n", I64), var("x", I64)
    g = Call(f, [O.subtract(n, i64(1)), O.add(x, i64(1))])
    pick = If(O.less(n, i64(3)), g, O.add(g, i64(1)))
    body = If(O.less(n, i64(1)), x, O.add(TupleGetItem(Tuple([pick, g]), 0),
                                          TupleGetItem(Tuple([pick, g]), 1)))
    expr = Let(f, Function([n, x], body, I64), Call(f, [i64(4), i64(0)]))

    def reference(k, v):
        if k < 1:
            return v
        inner = reference(k - 1, v + 1)
        return (inner if k < 3 else inner + 1) + inner

    assert int(evaluate(expr)) == reference(4, 0)


def test_tail_calls_between_global_functions_and_from_main():
    # @even(n) = if (n < 1) True else @odd(n - 1); @odd likewise; @main(x) = @even(x)
    def parity(other, base):
        n = var("n", I64)
        return Function([n], If(O.less(n, i64(1)), const(base),
                                Call(GlobalVar(other), [O.subtract(n, i64(1))])),
                        ret_type=TensorType((), "bool"))

    x = var("x", I64)
    mod = IRModule({"main": Function([x], Call(GlobalVar("even"), [x])),
                    "even": parity("odd", True), "odd": parity("even", False)})
    assert bool(evaluate(mod, 100_001)) is False
    assert bool(evaluate(mod, 100_000)) is True
