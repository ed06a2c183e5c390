"""ONNX's backend node tests, run through irpass: ``python -m irpass_onnx.conformance``.

The cases are rebuilt in memory from the test-case definitions that ship inside the
installed ``onnx`` package (``onnx.backend.test.case.node``: the same definitions ONNX's own
``backend-test-tools generate-data`` writes to disk), so they always match the installed
``onnx``. Each case is a one-node model (or its ``_expanded`` form: the node's function body)
with input data and the outputs ONNX's reference implementation computes.

A case goes through four stages, and stops at the first it fails:

``import``
    :func:`irpass_onnx.from_onnx`, then :func:`irpass.evaluate` on each data set, compared
    with the expected outputs as ONNX's backend runner compares them (same dtype and shape,
    ``numpy.testing.assert_allclose`` with the case's ``rtol``/``atol``, NaN equal to NaN).
``o3``
    the module through ``default_pipeline(3)``, evaluated and compared the same way.
``export``
    the optimized module exported (:func:`irpass_onnx.to_onnx`), valid under
    ``onnx.checker.check_model(full_check=True)``, and imported again by irpass with the
    same outputs.
``onnxruntime``
    the export run in onnxruntime (when installed) with the same outputs. Where
    onnxruntime's own kernel misses the expected outputs on the *original* model too (its
    DFT, say), the export is held to what onnxruntime computes for the original instead:
    the stage checks that the export kept the model's meaning, not onnxruntime's kernels.
    Where onnxruntime cannot run the original at all (no kernel for an op and dtype, or a
    dtype its Python binding cannot pass, as float8 and int4 arrays), the stage has nothing
    to compare and passes; where it runs the original but fails on the export, that is a
    ``crash``.

Two allowances for rounding (:func:`tolerance`), the kind onnxruntime's own test runner makes:
a float16 or bfloat16 output is compared with a relative tolerance of at least two units in
the last place of its dtype (ONNX's reference rounds every step of a function body to the
dtype, while irpass's kernels, like onnxruntime's, accumulate in float32 and round once); and
every float output with an absolute tolerance of at least four units in the last place of its
largest expected magnitude (a sum rounds relative to its terms, so an element that cancels to
nearly zero -- an inverse DFT of a real signal, say -- carries the rounding of its largest
neighbours, which the reference computes in float32 and irpass in float64).

Outcomes: ``pass``, ``unsupported`` (an :class:`OnnxImportError` or
:class:`OnnxExportError`: irpass says cleanly what it cannot do), ``wrong`` (a result differs:
never acceptable), ``crash`` (any other exception: never acceptable either).

The expectations file (``tests/conformance_expected.txt`` of the pack) lists every case that
does not pass all stages, one per line: ``name<TAB>stage<TAB>outcome<TAB>reason``. The test
suite fails when a case's result differs from the file, in either direction, so the file is
always the record of what irpass supports; ``--write FILE`` rewrites it.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

__all__ = ["Case", "Outcome", "STAGES", "STAGE_FUNCS", "node_cases", "run_case", "compare_outputs",
           "tolerance", "read_expectations", "format_expectations", "main"]

#: The stages a case goes through, in order.
STAGES = ("import", "o3", "export", "onnxruntime")


@dataclass(frozen=True)
class Case:
    """One node test: its name, model, data sets ``[(inputs, expected outputs)]`` and
    tolerances."""

    name: str
    model: onnx.ModelProto
    data_sets: tuple[tuple[tuple[Any, ...], tuple[Any, ...]], ...]
    rtol: float
    atol: float


@dataclass(frozen=True)
class Outcome:
    """How far a case got: ``stage`` is the first stage that did not pass (``""`` when all
    did), ``outcome`` one of ``pass``, ``unsupported``, ``wrong``, ``crash``."""

    name: str
    stage: str
    outcome: str
    reason: str = ""

    @property
    def passed(self) -> bool:
        """Every stage passed."""
        return self.outcome == "pass"

    def line(self) -> str:
        """The expectations-file line of a case that did not pass."""
        return f"{self.name}\t{self.stage}\t{self.outcome}\t{self.reason}"


def node_cases(pattern: str | None = None) -> list[Case]:
    """Every node test of the installed ``onnx`` whose name matches the regular expression
    ``pattern`` (all of them when ``None``), sorted by name."""
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        # the definitions compute their expected outputs with numpy, overflows and all
        warnings.simplefilter("ignore")
        cases = node.collect_testcases()
    rx = re.compile(pattern) if pattern else None
    out = []
    for c in cases:
        if rx is not None and not rx.search(c.name):
            continue
        data = tuple((tuple(_value(v) for v in ins), tuple(_value(v) for v in outs))
                     for ins, outs in c.data_sets)
        out.append(Case(c.name, c.model, data, float(c.rtol), float(c.atol)))
    return sorted(out, key=lambda c: c.name)


def _value(v: Any) -> Any:
    if isinstance(v, TensorProto):
        return numpy_helper.to_array(v)
    return v


def run_case(case: Case, stages: Sequence[str] = STAGES) -> Outcome:
    """Run ``case`` through ``stages`` (a prefix of :data:`STAGES` is usual)."""
    from irpass import IRPassError

    from .errors import OnnxExportError, OnnxImportError

    state: dict[str, Any] = {}
    for stage in STAGES:
        if stage not in stages:
            continue
        try:
            problem = STAGE_FUNCS[stage](case, state)
        except (OnnxImportError, OnnxExportError) as err:
            return Outcome(case.name, stage, "unsupported", _one_line(str(err)))
        except IRPassError as err:
            if isinstance(err.__cause__, (OnnxImportError, OnnxExportError)):
                # a node with run-time shape operands is converted when it runs
                return Outcome(case.name, stage, "unsupported", _one_line(str(err.__cause__)))
            return Outcome(case.name, stage, "crash", _one_line(f"{type(err).__name__}: {err}"))
        except Exception as err:  # noqa: BLE001 - every other exception is a finding
            return Outcome(case.name, stage, "crash", _one_line(f"{type(err).__name__}: {err}"))
        if problem:
            return Outcome(case.name, stage, "wrong", _one_line(problem))
    return Outcome(case.name, "", "pass")


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    # the model's own name adds nothing: every case is named on its line already
    text = re.sub(r"^ONNX model '[^']*': ", "", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _input_names(case: Case) -> list[str]:
    inits = {t.name for t in case.model.graph.initializer}
    return [i.name for i in case.model.graph.input if i.name not in inits]


def _evaluate_all(mod: Any, case: Case) -> str | None:
    """Evaluate ``mod`` on every data set; the first mismatch, described, or None."""
    import irpass

    names = _input_names(case)
    for k, (inputs, expected) in enumerate(case.data_sets):
        got = irpass.evaluate(mod, **dict(zip(names, inputs, strict=False)))
        got = list(got) if isinstance(got, tuple) else [got]
        problem = compare_outputs(got, list(expected), case.rtol, case.atol)
        if problem:
            return f"data set {k}: {problem}"
    return None


def compare_outputs(got: Sequence[Any], expected: Sequence[Any], rtol: float,
                    atol: float) -> str | None:
    """The first difference between ``got`` and ``expected`` as ONNX's backend runner
    finds them (count, dtype, shape, values within ``rtol``/``atol``), or None."""
    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        g, e = np.asarray(g), np.asarray(e)
        if g.dtype != e.dtype:
            return f"output {i} has dtype {g.dtype}, expected {e.dtype}"
        if g.shape != e.shape:
            return f"output {i} has shape {g.shape}, expected {e.shape}"
        dtype = e.dtype.name
        if e.dtype == object or e.dtype.kind in "USb":
            if not np.array_equal(g, e):
                return f"output {i} differs"
            continue
        if e.dtype.kind == "V" or e.dtype.name.startswith(("float8", "float4", "bfloat", "int4",
                                                           "uint4", "int2", "uint2")):
            g, e = g.astype(np.float32), e.astype(np.float32)  # ml_dtypes: compare as floats
        finite = np.abs(e[np.isfinite(e)]) if e.size else e
        largest = float(finite.max()) if finite.size else 0.0
        r, a = tolerance(dtype, rtol, atol, largest)
        try:
            np.testing.assert_allclose(g, e, rtol=r, atol=a)
        except AssertionError as err:
            lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
            detail = "; ".join(ln for ln in lines if ln.startswith(("Mismatched", "Max")))
            return f"output {i} differs ({detail or 'values'})"
    return None


#: The relative size of one unit in the last place of the float dtypes.
_ULP = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}


def tolerance(dtype: str, rtol: float, atol: float, largest: float) -> tuple[float, float]:
    """``(rtol, atol)`` for an output of ``dtype`` whose largest expected magnitude is
    ``largest``: the case's, with at least two units in the last place of relative tolerance
    for float16 and bfloat16, and four of ``largest`` as absolute tolerance for every float."""
    ulp = _ULP.get(dtype)
    if ulp is None:
        return rtol, atol
    if dtype in ("float16", "bfloat16"):
        rtol = max(rtol, 2 * ulp)
    return rtol, max(atol, 4 * ulp * largest)


def _stage_import(case: Case, state: dict[str, Any]) -> str | None:
    from . import from_onnx

    state["mod"] = mod = from_onnx(case.model)
    return _evaluate_all(mod, case)


def _stage_o3(case: Case, state: dict[str, Any]) -> str | None:
    from irpass.transform import PassContext, default_pipeline

    with PassContext(opt_level=3):
        state["opt"] = opt = default_pipeline(3)(state["mod"])
    return _evaluate_all(opt, case)


def _stage_export(case: Case, state: dict[str, Any]) -> str | None:
    from . import from_onnx, to_onnx

    state["exported"] = model = to_onnx(state["opt"])
    onnx.checker.check_model(model, full_check=True)
    return _evaluate_all(from_onnx(model), case)


def _stage_onnxruntime(case: Case, state: dict[str, Any]) -> str | None:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None  # not installed: nothing to compare with
    expected = [e for _inputs, e in case.data_sets]
    try:
        runs = _run_onnxruntime(state["exported"], case)
    except Exception:
        # onnxruntime may fail on the op itself (no kernel for the dtype, an empty bool
        # reduction) or its Python binding on the dtype (ml_dtypes' float8/int4 arrays):
        # if it fails on the original too, there is nothing to compare with
        if _run_onnxruntime_or_none(case.model, case) is None:
            return None
        raise
    problem = _compare_runs(runs, expected, case)
    if problem is None:
        return None
    # onnxruntime itself may miss ONNX's reference: then the export must compute what the
    # original computes in onnxruntime
    original = _run_onnxruntime_or_none(case.model, case)
    if original is None or _compare_runs(original, expected, case) is None:
        return problem
    return _compare_runs(runs, original, case)


def _run_onnxruntime(model: onnx.ModelProto, case: Case) -> list[list[Any]]:
    """The outputs of ``model`` in onnxruntime on each of the case's data sets."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    runs = []
    for inputs, _expected in case.data_sets:
        feed = dict(zip(_input_names(case), inputs, strict=False))
        runs.append(session.run(None, {n: np.asarray(feed[n]) for n in names}))
    return runs


def _run_onnxruntime_or_none(model: onnx.ModelProto, case: Case) -> list[list[Any]] | None:
    """:func:`_run_onnxruntime`, or None when onnxruntime cannot run the model."""
    try:
        return _run_onnxruntime(model, case)
    except Exception:  # noqa: BLE001 - any failure of onnxruntime's means "cannot run"
        return None


def _compare_runs(runs: Sequence[Sequence[Any]], expected: Sequence[Sequence[Any]],
                  case: Case) -> str | None:
    for k, (got, want) in enumerate(zip(runs, expected, strict=True)):
        problem = compare_outputs(list(got), list(want), case.rtol, case.atol)
        if problem:
            return f"data set {k}: {problem}"
    return None


#: Each stage's function: ``(case, state) -> problem or None``; ``state`` carries what the
#: earlier stages made (``mod``, ``opt``, ``exported``).
STAGE_FUNCS = {"import": _stage_import, "o3": _stage_o3, "export": _stage_export,
                "onnxruntime": _stage_onnxruntime}


# -- the expectations file --------------------------------------------------------------------


def read_expectations(path: str | Path) -> dict[str, Outcome]:
    """The expectations file's outcomes by case name (see the module docstring)."""
    out: dict[str, Outcome] = {}
    for k, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t", 3)
        if len(fields) < 3 or fields[1] not in STAGES:
            raise ValueError(f"{path}:{k}: expected 'name<TAB>stage<TAB>outcome<TAB>reason', "
                             f"got {line!r}")
        out[fields[0]] = Outcome(fields[0], fields[1], fields[2],
                                 fields[3] if len(fields) > 3 else "")
    return out


def format_expectations(outcomes: Iterable[Outcome], total: int) -> str:
    """The expectations file for ``outcomes`` (of ``total`` cases run)."""
    bad = sorted((o for o in outcomes if not o.passed), key=lambda o: o.name)
    by = Counter(o.outcome for o in bad)
    head = [
        "# ONNX backend node tests that do not pass every stage in irpass, one per line:",
        "# name<TAB>first stage not passed<TAB>outcome<TAB>reason.",
        "# Written by `python -m irpass_onnx.conformance --write <this file>`; the test suite",
        "# fails when a case's result differs from this file in either direction.",
        f"# {total - len(bad)} of {total} pass; " + ", ".join(
            f"{n} {k}" for k, n in sorted(by.items())),
    ]
    return "\n".join(head + [o.line() for o in bad]) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (``python -m irpass_onnx.conformance --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m irpass_onnx.conformance",
        description="Run ONNX's backend node tests through irpass and summarize.")
    parser.add_argument("--filter", metavar="REGEX", help="only cases whose name matches")
    parser.add_argument("--stages", default=",".join(STAGES),
                        help=f"comma-separated stages to run (default: {','.join(STAGES)})")
    parser.add_argument("--write", metavar="FILE", help="write the expectations file")
    parser.add_argument("--show", action="store_true", help="print every non-passing case")
    args = parser.parse_args(argv)
    stages = [s for s in args.stages.split(",") if s]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        parser.error(f"unknown stage {unknown[0]!r} (stages: {', '.join(STAGES)})")
    cases = node_cases(args.filter)
    start = time.monotonic()
    outcomes = [run_case(c, stages) for c in cases]
    seconds = time.monotonic() - start
    if args.show:
        for o in outcomes:
            if not o.passed:
                print(o.line())
    counts = Counter(o.outcome for o in outcomes)
    stage_counts = Counter(o.stage for o in outcomes if not o.passed)
    print(f"onnx {onnx.__version__}: {counts['pass']} of {len(cases)} node tests pass "
          f"({', '.join(f'{n} {k}' for k, n in sorted(counts.items()) if k != 'pass')}); "
          f"first failing stage: "
          f"{', '.join(f'{s} {stage_counts[s]}' for s in STAGES if stage_counts[s])}; "
          f"{seconds:.1f} s")
    if args.write:
        Path(args.write).write_text(format_expectations(outcomes, len(cases)), encoding="utf-8")
    return 0 if not (counts["wrong"] or counts["crash"]) else 1


if __name__ == "__main__":
    sys.exit(main())
