"""Emitters of the control-flow constructs: none yet.

What the importer makes of ONNX control flow exports as follows. A Loop or Scan unrolled at
import, and a Loop with scan outputs converted at run time (an ``onnx.node`` call, see
:mod:`.emitters_dynamic`), are dataflow and export as such. An IR ``If`` and a loop in the
recursive form (a let-bound function whose body is ``if (go) { loop(...) } else { ... }``) have
no dataflow form: the lowering (:mod:`.graph`) refuses them with an
:class:`~irpass_onnx.errors.OnnxExportError` naming the ``if``; writing them back as ONNX
``If`` and ``Loop`` nodes needs the lowering to emit subgraphs.
"""

from __future__ import annotations

__all__: list[str] = []
