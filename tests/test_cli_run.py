"""``irpass optimize`` as a user runs it, the real command in a subprocess: the summary and
``--json``, the progress line on a terminal (a pseudo-terminal here) and nothing through
a pipe, output safety (no module dump longer than the terminal, ``-`` for standard input
and output), many models at once with ``--output-dir``/``-j``, ``--report``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import irpass
import pytest
from irpass.cli.progress import Progress
from irpass.testing import models
from irpass.testing.plugins import OWN_PLUGINS, plugin_environ
from terminal import run_on_terminal

ERASE = "\r\x1b[K"

# three op calls that FuseOps puts into one fused function
SMALL = """\
def @main(%x: Tensor[(4,), float32]) {
  %0 = add(%x, %x);
  %1 = nn.relu(%0);
  negative(%1)
}
"""

BROKEN_PLUGIN = '''
"""A pass that always raises, and one that computes something else."""
import numpy as np
from irpass import op
from irpass.ir import Function, const
from irpass.plugins import hookimpl
from irpass.transform import function_pass, module_pass


@module_pass(opt_level=0, name="Explode")
def Explode(mod, ctx):
    """Always raises."""
    raise RuntimeError("boom from Explode")


@function_pass(opt_level=0, name="ScaleOutput")
def ScaleOutput(func, mod, ctx):
    """Doubles every function's result (deliberately wrong)."""
    return Function(func.params, op.multiply(func.body, const(np.float32(2.0))), None,
                    func.attrs)


@module_pass(opt_level=0, name="DieOnDense")
def DieOnDense(mod, ctx):
    """Ends its process at once, as a crash in native code would, on a model with a dense."""
    import os
    if "nn.dense" in mod.astext():
        os._exit(70)
    return mod


@hookimpl
def irpass_register_passes():
    return [Explode, ScaleOutput, DieOnDense]
'''


def _command() -> list[str]:
    script = Path(sys.executable).with_name("irpass")
    return [str(script)] if script.exists() else [sys.executable, "-m", "irpass"]


def _env(*plugins: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("IRPASS_") and k not in ("LINES", "COLUMNS")
    }
    return plugin_environ(OWN_PLUGINS + plugins, env)


def irpass_run(
    cwd: Path, *argv: str, stdin: bytes | None = None, plugins: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[bytes]:
    """Run the ``irpass`` command in ``cwd``; stdout and stderr are pipes."""
    return subprocess.run(
        [*_command(), *argv],
        cwd=cwd,
        env=_env(*plugins),
        input=stdin,
        capture_output=True,
        timeout=300,
    )


def irpass_on_terminal(
    cwd: Path,
    *argv: str,
    stdout_terminal: bool = False,
    stderr_terminal: bool = True,
    plugins: tuple[str, ...] = (),
) -> tuple[int, bytes, bytes]:
    """Run ``irpass`` with stderr (and/or stdout) on a 24x80 pseudo-terminal; return the
    exit code, what the terminal received and what the pipe received."""
    return run_on_terminal(
        [*_command(), *argv],
        cwd=cwd,
        env=_env(*plugins),
        stdout_terminal=stdout_terminal,
        stderr_terminal=stderr_terminal,
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "small.txt").write_text(SMALL)
    return tmp_path


# -- summary and --json -----------------------------------------------------------------


def test_summary_splits_the_time_and_counts_op_calls_in_fused_functions(work):
    proc = irpass_run(work, "optimize", "small.txt", "--pipeline", "FuseOps", "-o", "out.txt")
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.decode()
    time_line = next(line for line in err.splitlines() if line.strip().startswith("time:"))
    for phase in ("load", "passes", "save"):
        assert f"{phase} " in time_line, time_line
    assert "nodes:   3 -> 3 (3 in 1 fused function) op calls" in err
    size_in, size_out = (work / "small.txt").stat().st_size, (work / "out.txt").stat().st_size
    assert f"size:    {size_in} B -> {size_out} B" in err


def test_json_is_one_object_with_the_documented_keys(work):
    proc = irpass_run(
        work, "optimize", "small.txt", "--pipeline", "FuseOps", "-o", "out.txt", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    assert b"irpass optimize:" not in proc.stderr  # the text summary is replaced
    rec = json.loads(proc.stdout)
    assert rec["model"] == "small.txt" and rec["output"] == "out.txt"
    assert rec["status"] == "ok" and rec["pipeline"] == "FuseOps" and rec["opt_level"] == 2
    assert rec["passes"] == ["InferType", "FuseOps"]
    assert set(rec["time"]) == {"load", "passes", "save", "total"}
    t = rec["time"]
    assert 0 <= t["load"] + t["passes"] + t["save"] <= t["total"]
    assert rec["nodes"] == {"before": 3, "after": 3}
    assert rec["fused"] == {
        "before": {"calls": 0, "functions": 0},
        "after": {"calls": 3, "functions": 1},
    }
    assert rec["ops"]["before"] == rec["ops"]["after"] == {"add": 1, "negative": 1, "nn.relu": 1}
    assert rec["size"] == {
        "input": (work / "small.txt").stat().st_size,
        "output": (work / "out.txt").stat().st_size,
    }
    assert rec["file_nodes"] is None and rec["check"] is None


def test_json_of_a_failed_run_is_a_failure_record(work):
    (work / "bad.txt").write_text("def @main(")
    proc = irpass_run(work, "optimize", "bad.txt", "-o", "out.txt", "--json")
    assert proc.returncode == 2
    rec = json.loads(proc.stdout)
    assert (rec["model"], rec["status"], rec["exit"], rec["output"]) == (
        "bad.txt",
        "failed",
        2,
        None,
    )
    assert rec["error"].startswith("bad.txt:1:")
    assert proc.stderr.startswith(b"irpass: error: bad.txt:1:")  # as without --json
    assert not (work / "out.txt").exists()


def test_onnx_output_counts_the_written_files_nodes(work):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("irpass_onnx")
    proc = irpass_run(
        work,
        "optimize",
        "small.txt",
        "--pipeline",
        "InferType",
        "-o",
        "out.onnx",
        "--json",
        plugins=("onnx",),
    )
    assert proc.returncode == 0, proc.stderr
    written = onnx.load(str(work / "out.onnx"))
    assert json.loads(proc.stdout)["file_nodes"] == len(written.graph.node) > 0


# -- progress ---------------------------------------------------------------------------


def test_progress_line_on_a_terminal_and_nothing_through_a_pipe(work):
    code, terminal, _ = irpass_on_terminal(work, "optimize", "--example", "resnet", "-o", "r.txt")
    assert code == 0
    shown = terminal.decode()
    assert "\rirpass: loading" in shown.replace("\x1b[K", "")  # drawn in place
    assert "irpass optimize: example resnet" in shown  # then the summary
    # the line is erased before the summary: no progress text left on the summary's line
    assert shown.split("irpass optimize:")[0].endswith("\r\x1b[K")
    # stderr through a pipe: the summary alone
    proc = irpass_run(work, "optimize", "--example", "resnet", "-o", "r2.txt")
    assert proc.returncode == 0
    assert b"\r" not in proc.stderr and b"\x1b" not in proc.stderr
    assert proc.stderr.startswith(b"irpass optimize: example resnet")
    # -q: nothing on the terminal either
    code, terminal, _ = irpass_on_terminal(
        work, "optimize", "-q", "--example", "resnet", "-o", "r3.txt"
    )
    assert code == 0 and terminal == b""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_erases_its_line_before_anything_else_on_stderr(monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setenv("COLUMNS", "30")
    with Progress() as progress:
        progress.step("loading a model with a long name")
        print("irpass: warning: something", file=sys.stderr)
    assert sys.stderr is term
    shown = term.getvalue()
    first = shown.split(ERASE)[1]
    assert first == "irpass: loading a model wi..."  # 29 columns: the width - 1
    assert ERASE + "irpass: warning: something\n" in shown
    assert shown.endswith(("\n", ERASE))  # nothing of the line is left at the end
    # not a terminal: nothing at all
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stderr", plain)
    with Progress() as progress:
        progress.step("loading")
    assert plain.getvalue() == ""


# -- output safety ----------------------------------------------------------------------


def test_a_module_longer_than_the_terminal_is_not_dumped_on_it(work):
    code, terminal, err = irpass_on_terminal(
        work, "optimize", "--example", "resnet", stdout_terminal=True, stderr_terminal=False
    )
    assert code == 0
    assert terminal == b""
    assert b"-o FILE" in err and b"-o -" in err
    # a small one is, and -o - prints a big one anyway
    code, terminal, _ = irpass_on_terminal(
        work,
        "optimize",
        "small.txt",
        "--pipeline",
        "InferType",
        "-q",
        stdout_terminal=True,
        stderr_terminal=False,
    )
    assert code == 0
    irpass.parse(terminal.decode().replace("\r\n", "\n"))
    code, terminal, _ = irpass_on_terminal(
        work,
        "optimize",
        "--example",
        "resnet",
        "-o",
        "-",
        "-q",
        stdout_terminal=True,
        stderr_terminal=False,
    )
    assert code == 0
    assert terminal.count(b"\n") > 24
    # through a pipe, as before: the whole module
    proc = irpass_run(work, "optimize", "--example", "resnet", "-q")
    assert proc.returncode == 0 and proc.stderr == b""
    irpass.parse(proc.stdout.decode())


def test_standard_input_and_output(work):
    proc = irpass_run(
        work, "optimize", "-", "--pipeline", "FuseOps", "-o", "-", "--json", stdin=SMALL.encode()
    )
    assert proc.returncode == 2  # --json owns standard output
    assert proc.stderr.startswith(b"irpass: error: ") and b"-o FILE" in proc.stderr
    proc = irpass_run(
        work, "optimize", "-", "--pipeline", "FuseOps", "-o", "-", stdin=SMALL.encode()
    )
    assert proc.returncode == 0, proc.stderr
    result = irpass.parse(proc.stdout.decode())
    assert "Primitive" in result.astext()
    assert b"irpass optimize: -, pipeline 'FuseOps'" in proc.stderr
    assert f"size:    {len(SMALL)} B -> {len(proc.stdout)} B".encode() in proc.stderr
    # nothing on standard input, or a syntax error there: one line naming it
    proc = irpass_run(work, "optimize", "-", stdin=b"")
    assert proc.returncode == 2 and b"standard input is empty" in proc.stderr
    proc = irpass_run(work, "optimize", "-", stdin=b"def @main(")
    assert proc.returncode == 2 and proc.stderr.startswith(b"irpass: error: <stdin>:1:")


def test_onnx_through_standard_input_and_output(work):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("irpass_onnx")
    proc = irpass_run(
        work,
        "optimize",
        "small.txt",
        "--pipeline",
        "InferType",
        "-o",
        "small.onnx",
        "-q",
        plugins=("onnx",),
    )
    assert proc.returncode == 0, proc.stderr
    data = (work / "small.onnx").read_bytes()
    # recognized as ONNX without --format; written back as ONNX with it
    proc = irpass_run(
        work,
        "optimize",
        "-",
        "--pipeline",
        "InferType",
        "-o",
        "-",
        "--format",
        "onnx",
        stdin=data,
        plugins=("onnx",),
    )
    assert proc.returncode == 0, proc.stderr
    model = onnx.load_from_string(proc.stdout)
    assert [n.op_type for n in model.graph.node] == ["Add", "Relu", "Neg"]
    assert b"file:    3 nodes in the written file" in proc.stderr
    assert f"size:    {len(data)} B -> {len(proc.stdout)} B".encode() in proc.stderr
    proc = irpass_run(
        work,
        "optimize",
        "-",
        "--pipeline",
        "InferType",
        "--format",
        "nope",
        stdin=data,
        plugins=("onnx",),
    )
    assert proc.returncode == 2 and b"--format nope" in proc.stderr
    # ONNX bytes are not sent to a terminal
    code, terminal, err = irpass_on_terminal(
        work,
        "optimize",
        "small.txt",
        "-o",
        "-",
        "--format",
        "onnx",
        stdout_terminal=True,
        stderr_terminal=False,
        plugins=("onnx",),
    )
    assert code == 2 and terminal == b"" and b"not to the terminal" in err


# -- many models ------------------------------------------------------------------------


def test_many_models_in_parallel_one_table_failures_do_not_stop_the_others(work):
    irpass.save(models.mlp(), work / "mlp.txt")
    (work / "bad.txt").write_text("def @main(")
    proc = irpass_run(
        work, "optimize", "small.txt", "bad.txt", "mlp.txt", "--output-dir", "out", "-j", "2"
    )
    assert proc.returncode == 2  # bad input
    err = proc.stderr.decode()
    rows = {line.split()[0]: line for line in err.splitlines()[2:] if line.split()}
    assert rows["small.txt"].split()[1] == "ok" and rows["mlp.txt"].split()[1] == "ok"
    assert rows["bad.txt"].split()[1] == "failed" and "bad.txt:1:" in rows["bad.txt"]
    assert "2 of 3 written, 1 failed" in err
    for name in ("mlp.txt", "small.txt"):  # optimized: fused by the default pipeline
        assert "Primitive=1" in irpass.load(work / "out" / name).astext()
    assert not (work / "out" / "bad.txt").exists()


def test_many_models_json_and_a_failing_pass(work):
    (work / "explode_plugin.py").write_text(BROKEN_PLUGIN)
    irpass.save(models.mlp(), work / "mlp.txt")
    env_plugins = ("--plugin", "explode_plugin")
    proc = irpass_run(
        work,
        *env_plugins,
        "optimize",
        "small.txt",
        "mlp.txt",
        "--output-dir",
        "out",
        "--json",
        "--pipeline",
        "InferType",
        "--reproducer",
        "off",
    )
    assert proc.returncode == 0, proc.stderr
    recs = json.loads(proc.stdout)
    assert [r["model"] for r in recs] == ["small.txt", "mlp.txt"]
    assert [r["output"] for r in recs] == [
        str(Path("out", "small.txt")),
        str(Path("out", "mlp.txt")),
    ]
    assert recs[0]["nodes"] == {"before": 3, "after": 3}
    proc = irpass_run(
        work,
        *env_plugins,
        "optimize",
        "small.txt",
        "mlp.txt",
        "--output-dir",
        "out2",
        "--json",
        "--pipeline",
        "Explode",
        "--reproducer",
        "repro",
        "-j",
        "2",
    )
    assert proc.returncode == 1
    recs = json.loads(proc.stdout)
    assert [r["status"] for r in recs] == ["failed", "failed"]
    assert all("boom from Explode" in r["error"] and r["exit"] == 1 for r in recs)
    # each failure has its own reproducer directory, named in its error
    for name in ("small.txt", "mlp.txt"):
        assert (work / "repro" / name / "reproducer.json").exists()
        assert any(str(Path("repro", name)) in r["error"] for r in recs)


def test_a_model_that_kills_its_process_fails_alone(work):
    (work / "explode_plugin.py").write_text(BROKEN_PLUGIN)
    irpass.save(models.mlp(), work / "mlp.txt")
    (work / "small2.txt").write_text(SMALL)
    proc = irpass_run(
        work,
        "--plugin",
        "explode_plugin",
        "optimize",
        "small.txt",
        "mlp.txt",
        "small2.txt",
        "--output-dir",
        "out",
        "--pipeline",
        "DieOnDense",
        "-j",
        "2",
    )
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "Traceback" not in err and "2 of 3 written, 1 failed" in err
    rows = {line.split()[0]: line for line in err.splitlines()[2:] if line.split()}
    assert "process died" in rows["mlp.txt"]
    assert sorted(p.name for p in (work / "out").iterdir()) == ["small.txt", "small2.txt"]


def test_many_models_never_overwrite_an_input_or_each_other(work):
    (work / "a").mkdir()
    (work / "a" / "small.txt").write_text(SMALL)
    before = (work / "small.txt").read_bytes()
    proc = irpass_run(work, "optimize", "small.txt", "--output-dir", ".")
    assert proc.returncode == 2 and b"small.txt" in proc.stderr
    assert proc.stderr.count(b"\n") <= 2
    proc = irpass_run(work, "optimize", "small.txt", "a/small.txt", "--output-dir", "out")
    assert proc.returncode == 2 and b"would both be written" in proc.stderr
    assert (work / "small.txt").read_bytes() == before and not (work / "out").exists()
    proc = irpass_run(work, "optimize", "small.txt", "a/small.txt")
    assert proc.returncode == 2 and b"--output-dir" in proc.stderr


# -- --report ---------------------------------------------------------------------------


def test_report_into_a_missing_folder_is_one_line(work):
    proc = irpass_run(
        work, "optimize", "small.txt", "-o", "out.txt", "--report", "missing/run.html"
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith(b"irpass: error: --report missing/run.html")
    assert not (work / "out.txt").exists()


def test_report_of_optimize_and_bisect(work):
    (work / "explode_plugin.py").write_text(BROKEN_PLUGIN)
    proc = irpass_run(
        work,
        "optimize",
        "small.txt",
        "--pipeline",
        "FuseOps",
        "-o",
        "out.txt",
        "--report",
        "run.html",
        "--check",
    )
    assert proc.returncode == 0, proc.stderr
    page = (work / "run.html").read_text()
    assert "small.txt" in page and "out.txt" in page and 'data-pass="FuseOps"' in page
    assert "1 output(s) match" in page  # the summary's --check verdict
    proc = irpass_run(
        work,
        "--plugin",
        "explode_plugin",
        "bisect",
        "small.txt",
        "--pipeline",
        "InferType,ScaleOutput",
        "--report",
        "bisect.html",
    )
    assert proc.returncode == 0, proc.stderr
    assert b"first bad pass: ScaleOutput" in proc.stdout
    assert "ScaleOutput" in (work / "bisect.html").read_text()
    proc = irpass_run(work, "optimize", "small.txt", "-o", "out2.txt", "--report", "run.txt")
    assert proc.returncode == 2 and b".html" in proc.stderr and proc.stderr.count(b"\n") == 1
    assert not (work / "out2.txt").exists()


def test_bisect_and_reduce_show_progress_on_a_terminal(work):
    (work / "explode_plugin.py").write_text(BROKEN_PLUGIN)
    wrong = ("--plugin", "explode_plugin")
    code, terminal, out = irpass_on_terminal(
        work, *wrong, "bisect", "small.txt", "--pipeline", "InferType,ScaleOutput"
    )
    assert code == 0
    assert b"\rirpass: bisect: " in terminal.replace(b"\x1b[K", b"")
    assert b"first bad pass: ScaleOutput" in out
    code, terminal, out = irpass_on_terminal(
        work,
        *wrong,
        "reduce",
        "small.txt",
        "--check",
        "--pipeline",
        "InferType,ScaleOutput",
        "-o",
        "reduced.txt",
    )
    assert code == 0
    assert b"\rirpass: reduce: " in terminal.replace(b"\x1b[K", b"")
    assert b"irpass reduce: small.txt: " in terminal
    code, terminal, out = irpass_on_terminal(
        work,
        *wrong,
        "reduce",
        "small.txt",
        "--check",
        "--pipeline",
        "InferType,ScaleOutput",
        "-q",
        "-o",
        "-",
    )
    assert code == 0
    assert terminal == b""
    irpass.parse(out.decode())  # -o -: standard output, not a file named "-"
    assert not (work / "-").exists()
