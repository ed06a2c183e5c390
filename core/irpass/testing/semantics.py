"""``check_semantics``: run a pass and prove, on random inputs, that it kept the meaning.

A pass-pack author's first test for every pass::

    from irpass.testing import check_semantics, models

    def test_my_pass_keeps_resnet_meaning():
        check_semantics(MyPass(), models.resnet())

The check runs the pass with ``testing.immutable_module`` set (so a pass that
edits its input fails), then requires the result to be well formed and well
typed, to keep ``main``'s signature, and to compute the same outputs as the
input module on a few seeded random inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..evaluator import evaluate
from ..ir import IRModule, infer_type, structural_hash, well_formed
from ..transform import Pass, PassContext, Sequential, parse_pipeline
from .inputs import random_inputs

__all__ = ["check_semantics", "assert_outputs_close", "compare_outputs", "flatten_outputs"]


def check_semantics(
    transform: Pass | Sequence[Pass] | str,
    mod: IRModule,
    *,
    inputs: Sequence[Mapping[str, Any]] | None = None,
    seeds: Sequence[int] = (0, 1),
    rtol: float = 1e-4,
    atol: float = 1e-5,
    opt_level: int = 3,
    config: Mapping[str, Any] | None = None,
) -> IRModule:
    """Run ``transform`` on ``mod`` and check that ``main`` still computes the same thing.

    ``transform`` is a pass, a list of passes (run as a :class:`Sequential`)
    or a textual pipeline (``"SimplifyExpr,FoldConstant"``). A single pass
    runs the way a pipeline runs it, inside a :class:`Sequential`, so the
    passes its ``info.required`` names (``InferType`` for many) run first,
    as they would not on a direct call; it runs whatever its ``opt_level``,
    as a direct call would. It all runs inside
    ``PassContext(opt_level=opt_level, config=config)`` with
    ``testing.immutable_module`` switched on. ``inputs`` are the argument
    sets to compare on (by parameter name); by default one random set per
    seed in ``seeds`` (:func:`irpass.testing.random_inputs`).

    Returns the transformed module. Raises ``AssertionError`` naming the
    transform, the input set and the first differing output when the meaning
    changed, and when the result is ill formed, ill typed, has no ``main``
    or changed ``main``'s parameters; errors of the pass itself propagate.
    """
    if not isinstance(mod, IRModule):
        raise TypeError(f"check_semantics: mod must be an IRModule, got {type(mod).__name__}")
    label, run, forced = _as_pass(transform)
    cfg = {"testing.immutable_module": True, **(config or {})}
    before_hash = structural_hash(mod)
    with PassContext(opt_level=opt_level, required_pass=forced, config=cfg):
        out = run(mod)
    if structural_hash(mod) != before_hash:  # belt and braces: immutable_module checks this too
        raise AssertionError(f"{label} changed its input module")
    if not isinstance(out, IRModule):
        raise AssertionError(f"{label} returned {type(out).__name__}, not an IRModule")
    report = well_formed(out)
    if not report:
        raise AssertionError(f"{label} produced an ill-formed module:\n{report}")
    try:
        out_typed = infer_type(out)
    except Exception as exc:
        raise AssertionError(f"{label} produced an ill-typed module: {exc}") from exc
    if "main" not in out:
        raise AssertionError(f"{label} removed @main")
    _check_signature(label, infer_type(mod), out_typed)
    arg_sets = list(inputs) if inputs is not None else [random_inputs(mod, s) for s in seeds]
    for i, args in enumerate(arg_sets):
        expected = evaluate(mod, **args)
        got = evaluate(out, **args)
        where = f"input set {i}" + (f" (seed {seeds[i]})" if inputs is None else "")
        assert_outputs_close(got, expected, rtol=rtol, atol=atol, what=f"{label}, {where}")
    return out


def assert_outputs_close(
    got: Any, expected: Any, *, rtol: float = 1e-4, atol: float = 1e-5, what: str = "output"
) -> None:
    """Compare two evaluation results (arrays or nested tuples of arrays).

    Shapes and dtypes must match exactly, values within ``rtol``/``atol``
    (NaNs equal NaNs). The ``AssertionError`` names the tuple path, the worst
    element and its two values.
    """
    _compare(got, expected, rtol, atol, what, "result")


def _compare(got: Any, expected: Any, rtol: float, atol: float, what: str, path: str) -> None:
    if isinstance(expected, tuple):
        if not isinstance(got, tuple) or len(got) != len(expected):
            raise AssertionError(
                f"{what}: {path} is a {len(expected)}-tuple before, got {got!r:.80}"
            )
        for k, (g, e) in enumerate(zip(got, expected, strict=True)):
            _compare(g, e, rtol, atol, what, f"{path}.{k}")
        return
    if not isinstance(expected, np.ndarray):
        return  # a closure: nothing to compare by value
    if not isinstance(got, np.ndarray):
        raise AssertionError(f"{what}: {path} is an array before, got {type(got).__name__}")
    if got.shape != expected.shape or got.dtype != expected.dtype:
        raise AssertionError(
            f"{what}: {path} was {expected.dtype}{list(expected.shape)}, "
            f"now {got.dtype}{list(got.shape)}"
        )
    if expected.dtype == bool or expected.dtype.kind in "iu":
        bad = got != expected
    else:
        close = np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
        bad = ~close
    if bad.any():
        diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
        diff = np.where(bad, np.nan_to_num(diff, nan=np.inf), -1.0)
        worst = np.unravel_index(int(np.argmax(diff)), expected.shape) if expected.ndim else ()
        raise AssertionError(
            f"{what}: {path} differs at {int(bad.sum())} of {expected.size} element(s); "
            f"worst at index {tuple(int(i) for i in worst)}: "
            f"{got[worst]!r} after vs {expected[worst]!r} before (rtol={rtol}, atol={atol})"
        )


def _as_pass(transform: Pass | Sequence[Pass] | str) -> tuple[str, Pass, list[str]]:
    """The label, the pass to run and the names to put in ``required_pass``."""
    if isinstance(transform, Pass):
        # a Sequential runs the pass's requirements; required_pass keeps a pass above
        # opt_level from being skipped, as a direct call would not skip it
        name = transform.info.name
        return f"pass {name!r}", Sequential([transform], name="check_semantics"), [name]
    if isinstance(transform, str):
        return f"pipeline {transform!r}", parse_pipeline(transform), []
    if isinstance(transform, Sequence) and all(isinstance(p, Pass) for p in transform):
        names = ",".join(p.info.name for p in transform)
        return f"passes {names}", Sequential(list(transform)), []
    raise TypeError(
        "check_semantics: transform must be a Pass, a list of passes or a pipeline string, "
        f"got {type(transform).__name__}"
    )


def _check_signature(label: str, before: IRModule, after: IRModule) -> None:
    old, new = before["main"], after["main"]
    old_sig = [(p.name_hint, str(p.checked_type)) for p in old.params]
    new_sig = [(p.name_hint, str(p.checked_type)) for p in new.params]
    if old_sig != new_sig:
        raise AssertionError(f"{label} changed @main's parameters: {old_sig} -> {new_sig}")


def flatten_outputs(value: Any, label: str = "output") -> list[tuple[str, Any]]:
    """The arrays of a result (a tuple's fields, depth first), labelled ``output[0][1]``."""
    out: list[tuple[str, Any]] = []
    stack = [(label, value)]
    while stack:
        name, item = stack.pop()
        if isinstance(item, tuple):
            stack.extend((f"{name}[{i}]", f) for i, f in reversed(list(enumerate(item))))
        else:
            out.append((name, item))
    return out


def compare_outputs(before: Any, after: Any, rtol: float, atol: float) -> list[str]:
    """One line per output of ``after`` that differs from ``before`` beyond the
    tolerances (``numpy.allclose``, NaNs equal); empty when all match."""
    problems: list[str] = []
    old = flatten_outputs(before)
    new = flatten_outputs(after)
    if len(old) != len(new):
        return [f"the result has {len(new)} output(s) instead of {len(old)}"]
    for (label, a), (_, b) in zip(old, new, strict=True):
        a = np.asarray(a)
        b = np.asarray(b)
        if a.shape != b.shape:
            problems.append(f"{label}: shape {a.shape} became {b.shape}")
            continue
        if a.dtype.kind not in "biufc" or b.dtype.kind not in "biufc":
            if not np.array_equal(a, b):
                problems.append(f"{label}: values differ")
            continue
        if np.allclose(b, a, rtol=rtol, atol=atol, equal_nan=True):
            continue
        close = np.isclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        worst = float(np.nanmax(diff)) if np.any(~np.isnan(diff)) else float("nan")
        bad = int(close.size - np.count_nonzero(close))
        problems.append(
            f"{label}: {bad} of {close.size} element(s) differ, max abs error {worst:.3g}"
        )
    return problems
