"""Workload W4: the cost of running a pass, measured on 1,000 trivial passes.

A module with one small function (``add(x, x)``) goes through a
``Sequential`` of 1,000 Python module passes that each return their input.
Prints the median time per pass execution (microseconds) of several runs:

- a bare Python loop calling the 1,000 pass functions (the floor);
- the Sequential with no instruments;
- with a no-op instrument (a ``PassInstrument`` that does nothing);
- with ``PassTimingInstrument``;
- with a plugin implementing the instrument hooks loaded but its instrument
  not switched on (the plugin path's promise: no cost), and switched on;
- with ``testing.immutable_module`` set (a structural hash before and after each pass).

    python benchmarks/bench_pass_overhead.py --passes 1000 --repeat 7
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import irpass
from irpass import IRModule
from irpass.instrument import PassInstrument, PassTimingInstrument, get_instrument
from irpass.plugins import register
from irpass.transform import PassContext, Sequential, module_pass


def w4_module() -> IRModule:
    """The W4 module: one function ``add(x, x)`` on a float32 (4, 4) input."""
    x = irpass.var("x", shape=(4, 4))
    return irpass.IRModule.from_expr(irpass.Function([x], irpass.op.add(x, x)))


def trivial(mod: IRModule, ctx: PassContext) -> IRModule:
    """A pass function that returns its input."""
    return mod


def median_us_per_pass(run: Callable[[], object], n_passes: int, repeat: int) -> float:
    """Median over ``repeat`` runs of ``run()``, divided by ``n_passes``, in microseconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) / n_passes * 1e6


def main() -> None:
    """Print the W4 figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    n, repeat = args.passes, args.repeat

    mod = w4_module()
    passes = [module_pass(trivial, opt_level=0, name=f"trivial{i}") for i in range(n)]
    seq = Sequential(passes, name="w4")

    def bare_loop() -> None:
        m = mod
        for p in passes:
            m = p.pass_func(m, None)

    def under(ctx: PassContext) -> float:
        with ctx:
            seq(mod)  # warm-up
            return median_us_per_pass(lambda: seq(mod), n, repeat)

    class NoOp(PassInstrument):
        """An instrument that does nothing at every point."""

    class HookPlugin:
        """A plugin whose instrument hooks do nothing."""

        @irpass.hookimpl
        def irpass_run_before_pass(self, mod, info):
            pass

        @irpass.hookimpl
        def irpass_run_after_pass(self, mod, info):
            pass

    register(HookPlugin(), name="bench-hooks")
    timing = PassTimingInstrument()
    rows = [
        ("bare Python loop over the pass functions", median_us_per_pass(bare_loop, n, repeat)),
        ("Sequential, no instruments", under(PassContext())),
        ("Sequential + no-op instrument", under(PassContext(instruments=[NoOp()]))),
        ("Sequential + PassTimingInstrument", under(PassContext(instruments=[timing]))),
        ("Sequential, hook plugin loaded, instrument off", under(PassContext())),
        (
            "Sequential + hook plugin's instrument on",
            under(PassContext(instruments=[get_instrument("bench-hooks")])),
        ),
        (
            "Sequential, testing.immutable_module",
            under(PassContext(config={"testing.immutable_module": True})),
        ),
    ]
    print(f"W4: {n} trivial module passes, median of {repeat} runs")
    print(f"{'configuration':48s} {'us/pass':>9s}")
    for label, us in rows:
        print(f"{label:48s} {us:9.2f}")


if __name__ == "__main__":
    main()
