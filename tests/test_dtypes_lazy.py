"""Without ml_dtypes (simulated: ``sys.modules["ml_dtypes"] = None`` in a fresh interpreter),
the IR still takes the extension dtypes -- types, type inference, the text format -- and
computing with them is an ImportError saying what to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_without_ml_dtypes_the_ir_works_and_evaluation_says_what_to_install():
    script = textwrap.dedent("""
        import sys
        sys.modules["ml_dtypes"] = None  # as if it were not installed
        import irpass
        from irpass import op
        from irpass.ir import Function, IRModule, TensorType, var
        x = var("x", TensorType((2,), "bfloat16"))
        mod = IRModule.from_expr(Function([x], op.cast(x, "float32")))
        text = mod.astext()
        assert "bfloat16" in text and irpass.parse(text).astext() == text
        typed = irpass.transform.InferType()(mod)
        assert typed["main"].ret_type == TensorType((2,), "float32")
        from irpass.ir.types import numpy_dtype
        try:
            numpy_dtype("bfloat16")
        except ImportError as err:
            print("ERR", err)
        try:
            irpass.evaluate(IRModule.from_expr(Function([], op.cast(irpass.ir.const(1.5), "int4"))))
        except Exception as err:
            print("EVAL", type(err).__name__, err)
        print(numpy_dtype("float32"))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    assert "ERR dtype 'bfloat16' needs the ml_dtypes package" in out.stdout
    assert "pip install ml_dtypes" in out.stdout
    evaluated = next(line for line in out.stdout.splitlines() if line.startswith("EVAL"))
    assert "dtype 'int4' needs the ml_dtypes package" in evaluated
    assert out.stdout.strip().endswith("float32")
