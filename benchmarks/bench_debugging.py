"""The debugging tools at work on ResNet-50: bisect, reduce and print-changed.

The model is onnx's light ResNet-50 with seeded random weights (its shipped weights make
every output equal; needs irpass-onnx). A planted pass, run after the -O3 default
pipeline's first 8 passes, rewrites every relu and gets the 3rd wrong (``relu(-x)``);
this prints, per tool, the wall time (median of ``--repeat``) and what it found:

- ``bisect``: the -O3 pipeline with the planted pass, default oracle (outputs differ);
- ``reduce --check``: the model shrunk while the planted pipeline still changes its
  outputs;
- ``print-changed``: the size of its output over the plain -O3 pipeline, whole and diff.

Asserts nothing.

    python benchmarks/bench_debugging.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import statistics
import time

import onnx
from irpass import op
from irpass.debug import OutputsDiffer, PassChangesOutputs, bisect, reduce
from irpass.instrument import PrintChanged
from irpass.ir import ExprMutator
from irpass.transform import PassContext, Sequential, default_pipeline, function_pass
from irpass_onnx import from_onnx
from irpass_onnx.testing import light_model, randomize_weights


class _ThirdReluWrong(ExprMutator):
    def __init__(self, ctx):  # type: ignore[no-untyped-def]
        super().__init__()
        self.ctx, self.seen = ctx, 0

    def visit_call(self, call):  # type: ignore[no-untyped-def]
        new = super().visit_call(call)
        if getattr(call.op, "name", None) == "nn.relu" and self.ctx.debug_counter("relu"):
            self.seen += 1
            if self.seen == 3:
                return op.nn.relu(op.negative(new.args[0]))
        return new


@function_pass(opt_level=0, name="Planted")
def Planted(func, mod, ctx):  # type: ignore[no-untyped-def]
    return _ThirdReluWrong(ctx).visit(func)


def _timed(fn, repeat):  # type: ignore[no-untyped-def]
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    mod = from_onnx(randomize_weights(onnx.load(light_model("resnet50").path), seed=0))
    passes = list(default_pipeline(3).passes)
    planted = Sequential([*passes[:8], Planted, *passes[8:]], name="planted")

    t, found = _timed(lambda: bisect(mod, planted, OutputsDiffer(mod, rtol=1e-4, atol=1e-5),
                                     opt_level=3), args.repeat)
    print(f"bisect ResNet-50 -O3: {t:.1f} s; found {found.step.info.name} rewrite "
          f"{found.rewrite} of {found.rewrites}; questions {found.questions}")

    t, result = _timed(lambda: reduce(mod, PassChangesOutputs(planted, rtol=1e-4, atol=1e-5)),
                       args.repeat)
    print(f"reduce ResNet-50 --check: {t:.1f} s; {result.calls_before} -> "
          f"{result.calls_after} op calls, {result.questions} candidates")

    for diff in (False, True):
        out = io.StringIO()
        with PassContext(opt_level=3, instruments=[PrintChanged(diff=diff, stream=out)]):
            default_pipeline(3)(mod)
        print(f"print-changed{'=diff' if diff else ''} ResNet-50 -O3: "
              f"{len(out.getvalue().encode()) / 1e3:.0f} KB")


if __name__ == "__main__":
    main()
