"""The Quickstart's main job, examples/quickstart.py, runs and reports what it checked."""

import pathlib
import runpy

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def test_quickstart_runs(capsys):
    runpy.run_path(str(EXAMPLES / "quickstart.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "text round trip: structurally equal, same outputs" in out
    assert "pipeline: every nn.relu became maximum, same outputs" in out
    table = out[out.index("Pass "):].splitlines()
    assert table[1].startswith("quickstart") and table[2].startswith("  TypeCheck")
