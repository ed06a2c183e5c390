"""Type inference on symbolic programs: is it linear in the number of nodes? (issue 20)

Two chains over ``x: Tensor[(n, seq, 64), float32]``, each step four calls:

* ``same``: ``relu(add(reshape(reshape(x, [0, 0, 4, -1]), [0, 0, -1]), x))``; every
  step has the same types (inference may reuse a relation's result);
* ``growing``: ``concatenate([reshape(reshape(x, ...), ...), y], axis=1)`` then ``relu``;
  the sequence dim grows by one a step (``seq + 1``, ``seq + 2``, ...), so every call
  has new types and every relation computes with new expressions.

Prints CPU µs per node at 10^4 and 10^5 nodes and their ratio (linear: 1.0).

    python benchmarks/bench_symbolic.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from irpass import op
from irpass.ir import Function, IRModule, TensorType, var
from irpass.ir.dims import SizeVar
from irpass.ir.expr import Expr
from irpass.ir.type_infer import infer_type

N, SEQ = SizeVar("n"), SizeVar("seq")


def chain(kind: str, steps: int) -> IRModule:
    """The ``kind`` chain of ``steps`` steps (four calls each)."""
    x = var("x", TensorType((N, SEQ, 64)))
    y = var("y", TensorType((N, 1, 64)))
    cur: Expr = x
    for _ in range(steps):
        heads = op.reshape(op.reshape(cur, (0, 0, 4, -1)), (0, 0, -1))
        if kind == "same":
            cur = op.nn.relu(op.add(heads, cur))
        else:
            cur = op.nn.relu(op.concatenate([heads, y], axis=1))
    return IRModule.from_expr(Function([x, y], cur))


def time_infer(kind: str, nodes: int, repeat: int) -> float:
    """Median CPU seconds of infer_type on a fresh ``kind`` chain of about ``nodes`` calls."""
    times = []
    for _ in range(repeat):
        mod = chain(kind, nodes // 4)
        gc.collect()
        start = time.process_time()
        infer_type(mod)
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("chain     nodes     CPU s   us/node")
    for kind in ("same", "growing"):
        per = {}
        for nodes in (10_000, 100_000):
            t = time_infer(kind, nodes, args.repeat)
            per[nodes] = t / nodes * 1e6
            print(f"{kind:8} {nodes:7} {t:9.3f} {per[nodes]:9.2f}")
        print(f"  {kind}: us/node at 10^5 / at 10^4 = {per[100_000] / per[10_000]:.2f} "
              "(linear: 1.0)")


if __name__ == "__main__":
    main()
