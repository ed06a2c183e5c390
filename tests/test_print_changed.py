"""Printing for people: constants elided above a size, and PrintChanged (whole or diff)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from irpass import op
from irpass.errors import ParseError
from irpass.instrument import DumpIR, PrintAfterAll, PrintChanged
from irpass.ir import Function, IRModule, const, parse, structural_equal, var
from irpass.transform import PassContext, Sequential, get_pass


def _mod() -> IRModule:
    x = var("x", shape=(4, 64))
    w = const(np.arange(64 * 32, dtype=np.float32).reshape(64, 32) / 1000)
    small = const(np.arange(8, dtype=np.float32))
    y = op.nn.dense(x, op.transpose(w))  # transpose of a constant: FoldConstant folds it
    z = op.add(op.reshape(y, (4, 4, 8)), small)
    return IRModule.from_expr(Function([x], op.add(z, op.zeros((4, 4, 8), "float32"))))


def test_big_constants_print_without_data_and_do_not_parse_back():
    mod = _mod()
    text = mod.astext(elide_constants=16)
    assert "const(float32, (64, 32), ...)" in text
    assert "const(float32, (8,), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])" in text
    assert "#[metadata]" not in text
    with pytest.raises(ParseError, match="elided"):
        parse(text)
    # in full, the same module round-trips
    assert structural_equal(parse(mod.astext()), mod)
    with pytest.raises(ValueError, match="elide_constants"):
        mod.astext(elide_constants=-2)


def test_printing_instruments_elide_as_configured():
    out = io.StringIO()
    with PassContext(instruments=[PrintAfterAll(stream=out)]):
        get_pass("InferType")(_mod())
    assert "const(float32, (64, 32), ...)" in out.getvalue()
    assert "#[metadata]" not in out.getvalue()
    out = io.StringIO()
    with PassContext(instruments=[PrintAfterAll(stream=out)],
                     config={"print.elide_constants": -1}):
        get_pass("InferType")(_mod())
    assert "#[metadata]" in out.getvalue() and "..." not in out.getvalue()
    out = io.StringIO()
    with PassContext(instruments=[PrintAfterAll(stream=out, elide_constants=2)]):
        get_pass("InferType")(_mod())
    assert "const(float32, (8,), ...)" in out.getvalue()


def test_dump_ir_elides_unless_asked(tmp_path):
    with PassContext(instruments=[DumpIR(tmp_path / "a")]):
        get_pass("InferType")(_mod())
    (dump,) = sorted((tmp_path / "a").glob("*.txt"))
    assert "const(float32, (64, 32), ...)" in dump.read_text()
    with PassContext(instruments=[DumpIR(tmp_path / "b", elide_constants=-1)]):
        typed = get_pass("InferType")(_mod())
    (dump,) = sorted((tmp_path / "b").glob("*.txt"))
    assert structural_equal(parse(dump.read_text()), typed)


def _pipeline():
    names = ["InferType", "Identity", "FoldConstant", "SimplifyExpr", "Identity"]
    return Sequential([get_pass(n) for n in names], name="pipe")


def test_print_changed_prints_the_start_and_each_pass_that_changed_the_module():
    out = io.StringIO()
    with PassContext(opt_level=3, instruments=[PrintChanged(stream=out)]):
        _pipeline()(_mod())
    text = out.getvalue()
    headers = [line for line in text.splitlines() if line.startswith("***")]
    # Identity changes nothing; the Sequential "pipe" runs the others and is not printed;
    # SimplifyExpr's requirement InferType runs again, on a typed module: no change
    assert headers == [
        "*** IR Dump At Start ***",
        "*** IR Dump After InferType ***",
        "*** IR Dump After FoldConstant ***",
        "*** IR Dump After SimplifyExpr ***",
    ]
    after_fold = text.split("*** IR Dump After FoldConstant ***")[1]
    assert "transpose" not in after_fold.split("***")[0]


def test_print_changed_diff():
    out = io.StringIO()
    with PassContext(opt_level=3, instruments=[PrintChanged(diff=True, stream=out)]):
        _pipeline()(_mod())
    text = out.getvalue()
    part = text.split("*** IR Dump After SimplifyExpr (diff) ***\n")[1]
    lines = part.splitlines()
    assert lines[0] == "--- before SimplifyExpr" and lines[1] == "+++ after SimplifyExpr"
    removed = [ln for ln in lines if ln.startswith("-") and not ln.startswith("---")]
    added = [ln for ln in lines if ln.startswith("+") and not ln.startswith("+++")]
    # x + zeros is gone: a line with the zeros was removed, none was added
    assert any("zeros" in ln for ln in removed)
    assert not any("zeros" in ln for ln in added)
    assert len(lines) < 20  # a diff, not the whole module twice


def test_print_changed_argument_is_checked():
    assert PrintChanged("diff").diff is True
    with pytest.raises(ValueError, match="diff"):
        PrintChanged("full")
