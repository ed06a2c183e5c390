"""W2's floor: what hash-consing costs on irpass's nodes, beside the pass and onnx_ir.

Issue 25 asks for EliminateCommonSubexpr on W2 at 10x onnx_ir's CSE pass. This
script asks how close any CSE over irpass's nodes could come. For each N, in a
fresh process, on the typed W2 module (as ``bench_peers.py`` gives irpass):

- ``pass``: EliminateCommonSubexpr alone (its InferType finds the module typed);
- ``order + hash-cons``: the least a hash-consing CSE does on these nodes. The
  post-order is given (computed before the clock starts), so there is no walk;
  each op call's merged args are looked up in a table per op and, for a new
  key, the call is rebuilt over them (``Call._unchecked``, type carried, as the
  pass does). No attrs, lets, scopes, fskip or debug counter;

each timed with the collector paused, median of ``--repeat``, in microseconds
per step, with the minor page faults per step the run took (new memory the
process touched for the first time: about 2 us each on the VM of the README).
With onnx_ir installed (``pip install -e '.[bench]'``), its W2 runs through
``bench_peers.py``'s case in a fresh process too, and the last column is the
bound 10x asks for: onnx_ir's figure / 10.

    python benchmarks/bench_cse_floor.py
    python benchmarks/bench_cse_floor.py --sizes 10000 100000 --repeat 7
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_std_passes import count_ops, fresh, w2  # noqa: E402
from irpass.ir import (  # noqa: E402
    Call,
    Expr,
    Function,
    IRModule,
    Op,
    infer_type,
    post_order_visit,
)
from irpass.ir.gcpause import gc_paused  # noqa: E402
from irpass.transform import get_pass  # noqa: E402


def post_order(func: Function) -> list[Expr]:
    """Every node of ``func``'s body once, each after its children."""
    order: list[Expr] = []
    post_order_visit(func.body, order.append)
    return order


def hash_cons(func: Function, order: list[Expr]) -> Expr:
    """The merged body of ``func``, visiting ``order``: one table per op keyed by the
    merged args (the one merged arg of a unary call), a call rebuilt when its args
    changed. Only what W2 holds: unary and binary op calls without attrs, and their
    operands (mapped to themselves). Written as the pass's hot loop is (a branch per
    arity, no tuple for an unchanged call's key), so that it is the floor of that loop."""
    memo: dict[Expr, Expr] = {}
    get = memo.get
    tables: dict[Op, dict[Any, Expr]] = defaultdict(dict)
    rebuild = Call._unchecked
    for node in order:
        if type(node) is not Call:
            memo[node] = node
            continue
        args = node.args
        if len(args) == 1:
            (a,) = args
            key = get(a)
            same = key is a
            new_args = args if same else (key,)
        else:
            a, b = args
            na, nb = get(a), get(b)
            same = na is a and nb is b
            key = new_args = args if same else (na, nb)
        table = tables[node.op]
        canon = table.get(key)
        if canon is None:
            canon = table[key] = node if same else rebuild(
                node.op, new_args, node.attrs, node._checked_type, node._bound_by)
        memo[node] = canon
    return memo[func.body]


def _timed(run: Callable[[], Any], repeat: int, n: int) -> dict[str, float]:
    """Median µs per step of ``run()`` and its median minor page faults per step."""
    times, faults = [], []
    for _ in range(repeat):
        gc.collect()
        with gc_paused():
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            result = run()
            times.append(time.perf_counter() - start)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
            del result
    return {"us": statistics.median(times) / n * 1e6, "faults": statistics.median(faults) / n}


def case(n: int, repeat: int) -> dict[str, Any]:
    """The two irpass rows at ``n`` (checked: one exp per step is left)."""
    mod = infer_type(w2(n))
    func = mod["main"]
    order = post_order(func)
    cse = get_pass("EliminateCommonSubexpr")
    for out in (cse(fresh(mod)), IRModule.from_expr(Function(func.params, hash_cons(func, order)))):
        if count_ops(out)["exp"] != n:
            raise SystemExit(f"a row did not merge W2's exps at N={n}")
    return {
        "pass": _timed(lambda: cse(fresh(mod)), repeat, n),
        "order + hash-cons": _timed(lambda: hash_cons(func, order), repeat, n),
    }


def _child(args: list[str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:70]}
    return json.loads(lines[-1])


def main() -> None:
    """Parse the options, run each size in a fresh process and print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (median)")
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(case(args.case, args.repeat)))
        return
    try:
        import onnx_ir  # noqa: F401
        have_onnx_ir = True
    except ImportError:
        have_onnx_ir = False
    print(f"Python {sys.version.split()[0]}; W2 typed; median of {args.repeat}; "
          "us per step (minor page faults per step)")
    print(f"{'N':>7}  {'pass':>14}  {'order + hash-cons':>18}  {'onnx_ir':>9}  "
          f"{'onnx_ir / 10':>12}")
    for n in args.sizes:
        ours = _child([__file__, "--case", str(n), "--repeat", str(args.repeat)])
        peer: dict[str, Any] = {"error": "not installed"}
        if have_onnx_ir:
            peer = _child([str(HERE / "bench_peers.py"), "--case", "onnx_ir", "W2", str(n),
                           "--repeat", str(args.repeat)])
        if "error" in ours:
            print(f"{n:>7}  {ours['error']}")
            continue
        row = [f"{ours[k]['us']:.2f} ({ours[k]['faults']:.2f})"
               for k in ("pass", "order + hash-cons")]
        theirs = (f"{peer['us']:>9.2f}  {peer['us'] / 10:>12.2f}" if "us" in peer
                  else f"{peer['error']:>9}  {'-':>12}")
        print(f"{n:>7}  {row[0]:>14}  {row[1]:>18}  {theirs}")


if __name__ == "__main__":
    main()
