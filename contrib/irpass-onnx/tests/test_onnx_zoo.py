"""The model zoo: small real architectures exported by today's PyTorch exporters.

``contrib/irpass-onnx/models/`` holds torchvision and Hugging Face transformers models in tiny
configurations with seeded random weights, exported by the TorchScript exporter (opset 17) and
the dynamo one (opset 18), with SDPA and eager attention, with and without an attention mask
(``models/make_models.py`` makes them; ``models/models.json`` lists each file with its inputs
and how to draw valid values for them). Each model goes through these stages, and stops at the
first it fails:

- ``import``: ``irpass_onnx.load_onnx`` (weights as constants);
- ``evaluate``: ``irpass.evaluate`` on seeded random inputs equals onnxruntime on the original;
- ``o3``: the module after -O3 equals it too;
- ``export``: ``to_onnx`` of the -O3 module passes ``onnx.checker`` with ``full_check``;
- ``onnxruntime``: onnxruntime on the export equals onnxruntime on the original;
- ``reimport``: irpass imports its own export again.

"Equal" is ``rtol`` 1e-3 plus an absolute tolerance of 1e-5 times the output's largest
magnitude (:data:`irpass_onnx.testing.SCALED_ATOL`): float32 rounding differs with the
summation order, and it scales with the output's magnitude, not with each element.

A model that does not pass every stage is listed in :data:`EXPECTED` with the first stage it
fails at, the outcome and why. The test fails when a model's result differs from its entry in
either direction (one that newly passes must be taken out of the table), like the conformance
expectations. Run this file as a script to print today's results (:func:`main`).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from irpass_onnx import OnnxExportError, OnnxImportError, from_onnx, load_onnx, to_onnx
from irpass_onnx.testing import (
    RANDOM_RTOL,
    SCALED_ATOL,
    check_outputs_close,
    evaluate_irpass,
    optimize_o3,
    run_onnxruntime,
)

MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
MANIFEST = json.loads((MODELS_DIR / "models.json").read_text())
ENTRIES: list[dict[str, Any]] = MANIFEST["models"]
#: The stages a model goes through, in order.
STAGES = ("import", "evaluate", "o3", "export", "onnxruntime", "reimport")
SEED = 0

#: Models that do not pass every stage today: file -> (first stage not passed, outcome, why).
#: Outcomes: ``unsupported`` (a clean OnnxImportError/OnnxExportError), ``wrong`` (outputs
#: differ), ``crash`` (any other exception).
EXPECTED: dict[str, tuple[str, str, str]] = {
    # every model passes today; an entry reads, e.g.
    # "tv_mobilenet_v3_small.dynamo18.onnx": ("import", "unsupported", "HardSwish not imported"),
}


@dataclass(frozen=True)
class Outcome:
    """How far a model got: ``stage`` is the first stage not passed (``""``: all passed)."""

    file: str
    stage: str
    outcome: str
    reason: str

    @property
    def passed(self) -> bool:
        """Every stage passed."""
        return not self.stage


def sample_inputs(entry: dict[str, Any], seed: int = SEED) -> dict[str, np.ndarray]:
    """Seeded valid inputs of a manifest entry: ``float`` standard normal, ``ids`` uniform in
    ``[0, high)``, ``mask`` a padding mask (each row ones then zeros: the first row all ones,
    the others with one to three zeros)."""
    rng = np.random.default_rng(seed)
    out = {}
    for spec in entry["inputs"]:
        shape, dtype, kind = tuple(spec["shape"]), np.dtype(spec["dtype"]), spec["kind"]
        if kind == "float":
            value = rng.standard_normal(shape)
        elif kind == "ids":
            value = rng.integers(0, spec["high"], size=shape)
        elif kind == "mask":
            length = shape[-1]
            lengths = rng.integers(max(1, length - 3), length, size=int(np.prod(shape[:-1])))
            lengths[0] = length
            value = (np.arange(length)[None, :] < lengths[:, None]).reshape(shape)
        else:
            raise ValueError(f"{entry['file']}: input {spec['name']!r} of unknown kind {kind!r}")
        out[spec["name"]] = np.asarray(value).astype(dtype)
    return out


def _one_line(text: str, limit: int = 240) -> str:
    line = " ".join(text.split()).replace(f"{MODELS_DIR}{os.sep}", "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _compare(got: list[np.ndarray], want: list[np.ndarray]) -> str | None:
    problems = check_outputs_close(got, want, rtol=RANDOM_RTOL, scaled_atol=SCALED_ATOL)
    return "; ".join(problems) if problems else None


def run_model(entry: dict[str, Any]) -> Outcome:
    """Run one model through :data:`STAGES`; the first stage it does not pass."""
    path = MODELS_DIR / entry["file"]
    original = onnx.load(str(path))
    inputs = sample_inputs(entry)
    reference = run_onnxruntime(original, inputs)
    state: dict[str, Any] = {}

    def stage_import() -> str | None:
        state["mod"] = load_onnx(path, weights="constants")
        return None

    def stage_evaluate() -> str | None:
        return _compare(evaluate_irpass(state["mod"], inputs), reference)

    def stage_o3() -> str | None:
        state["optimized"] = optimize_o3(state["mod"])
        return _compare(evaluate_irpass(state["optimized"], inputs), reference)

    def stage_export() -> str | None:
        state["exported"] = to_onnx(state["optimized"])
        onnx.checker.check_model(state["exported"], full_check=True)
        return None

    def stage_onnxruntime() -> str | None:
        return _compare(run_onnxruntime(state["exported"], inputs), reference)

    def stage_reimport() -> str | None:
        from_onnx(state["exported"])
        return None

    funcs = {"import": stage_import, "evaluate": stage_evaluate, "o3": stage_o3,
             "export": stage_export, "onnxruntime": stage_onnxruntime,
             "reimport": stage_reimport}
    for stage in STAGES:
        try:
            problem = funcs[stage]()
        except (OnnxImportError, OnnxExportError) as err:
            return Outcome(entry["file"], stage, "unsupported", _one_line(str(err)))
        except Exception as err:  # noqa: BLE001 - recorded as the model's outcome
            return Outcome(entry["file"], stage, "crash",
                           _one_line(f"{type(err).__name__}: {err}"))
        if problem is not None:
            return Outcome(entry["file"], stage, "wrong", _one_line(problem))
    return Outcome(entry["file"], "", "", "")


def test_the_zoo_has_every_kind_of_model():
    files = {e["file"] for e in ENTRIES}
    assert len(files) == len(ENTRIES) >= 50
    for arch in ("tv_mobilenet_v3_small", "tv_vit", "tv_swin", "hf_bert", "hf_distilbert",
                 "hf_gpt2", "hf_llama", "hf_t5", "hf_whisper", "hf_vit"):
        kinds = {e["exporter"] for e in ENTRIES if e["name"].startswith(arch)}
        assert kinds == {"torchscript", "dynamo"}, f"{arch}: exported by {sorted(kinds)}"
    assert {e["attention"] for e in ENTRIES if e["source"] == "transformers"} == {"sdpa", "eager"}
    for entry in ENTRIES:
        path = MODELS_DIR / entry["file"]
        assert path.is_file() and path.stat().st_size < 1 << 20, entry["file"]


def test_expectations_name_only_models_of_the_zoo():
    stale = sorted(set(EXPECTED) - {e["file"] for e in ENTRIES})
    assert not stale, f"EXPECTED lists models models.json does not have: {stale}"
    for file, (stage, outcome, _reason) in EXPECTED.items():
        assert stage in STAGES and outcome in ("unsupported", "wrong", "crash"), file


def test_sample_inputs_are_valid_and_seeded():
    entry = next(e for e in ENTRIES if any(i["kind"] == "mask" for i in e["inputs"]))
    a, b = sample_inputs(entry), sample_inputs(entry)
    for spec in entry["inputs"]:
        value = a[spec["name"]]
        assert np.array_equal(value, b[spec["name"]])
        assert value.shape == tuple(spec["shape"]) and value.dtype == np.dtype(spec["dtype"])
        if spec["kind"] == "ids":
            assert 0 <= value.min() and value.max() < spec["high"]
        if spec["kind"] == "mask":
            assert value[0].all() and not value.all() and value[:, 0].all()


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_model_gives_the_recorded_result(entry):
    got = run_model(entry)
    want = EXPECTED.get(entry["file"])
    hint = "; update EXPECTED in test_onnx_zoo.py if that is intended"
    if want is None:
        assert got.passed, (f"{entry['file']} used to pass every stage, now fails at "
                            f"{got.stage} ({got.outcome}): {got.reason}")
    else:
        assert not got.passed, (f"{entry['file']} now passes every stage; EXPECTED records "
                                f"{want[0]} {want[1]}" + hint)
        assert (got.stage, got.outcome) == want[:2], (
            f"{entry['file']}: now {got.stage} {got.outcome} ({got.reason}), recorded "
            f"{want[0]} {want[1]} ({want[2]})" + hint)


def main(argv: list[str]) -> int:
    """Print each model's result as a Markdown table (a column per stage), then the
    :data:`EXPECTED` entries of the models that do not pass; ``argv``: regexes of file
    names."""
    import re
    import time

    patterns = [re.compile(p) for p in argv]
    print("| model | nodes | " + " | ".join(STAGES) + " | s |")
    print("| --- | ---: |" + " --- |" * len(STAGES) + " ---: |")
    failed = []
    start_all = time.perf_counter()
    for entry in ENTRIES:
        if patterns and not any(p.search(entry["file"]) for p in patterns):
            continue
        start = time.perf_counter()
        got = run_model(entry)
        took = time.perf_counter() - start
        at = STAGES.index(got.stage) if got.stage else len(STAGES)
        cells = ["ok"] * at + ([got.outcome] if got.stage else [])
        cells += ["-"] * (len(STAGES) - len(cells))
        print(f"| {entry['file'].removesuffix('.onnx')} | {entry['nodes']} | "
              + " | ".join(cells) + f" | {took:.2f} |", flush=True)
        if not got.passed:
            failed.append(got)
    print(f"\n{len(failed)} not passing, {time.perf_counter() - start_all:.1f} s in all")
    for got in failed:
        print(f'    "{got.file}": ("{got.stage}", "{got.outcome}", {got.reason!r}),')
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
