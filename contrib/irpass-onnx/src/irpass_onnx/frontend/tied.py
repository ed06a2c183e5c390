"""Tied weights written twice: a 2-D initializer that equals the transpose of another.

A language model whose output projection shares the token embedding (GPT-2, Llama/SmolLM,
Whisper's decoder, T5) reads the table through a ``Transpose`` when exported; PyTorch's
TorchScript exporter folds that ``Transpose`` into a second initializer, so GPT-2 small's
file holds its 154 MB table twice. The importer binds such an initializer to ``transpose``
of the first one instead: FoldConstant leaves the transpose of a shared weight unfolded and
the exporter writes one table (``std.FoldConstant.copy_shared_weights``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from irpass.ir import Constant

__all__ = ["MIN_BYTES", "transposed_copies"]

#: Initializers smaller than this are not compared: the saving is the size of a weight, and
#: FoldConstant would fold the transpose of a smaller one back (its shared-weight size; the
#: pack's tied-weight tests use a table of exactly this size, so they fail if the two part).
MIN_BYTES = 1 << 20

# the side of the square tiles compared at a time
_TILE = 256


def transposed_copies(consts: Sequence[tuple[str, Constant]]) -> dict[str, str]:
    """``{name: the name of an earlier constant whose transpose it equals}`` among
    ``consts`` (name, constant) in order; only 2-D, non-square constants of ``MIN_BYTES`` or
    more take part, compared bit for bit."""
    seen: dict[tuple[str, tuple[int, ...]], list[tuple[str, np.ndarray]]] = {}
    copies: dict[str, str] = {}
    for name, c in consts:
        data = c.data
        if data.ndim != 2 or data.shape[0] == data.shape[1] or data.nbytes < MIN_BYTES:
            continue
        for other_name, other in seen.get((data.dtype.str, data.shape[::-1]), ()):
            if _is_transpose(data, other):
                copies[name] = other_name
                break
        else:
            seen.setdefault((data.dtype.str, data.shape), []).append((name, data))
    return copies


def _is_transpose(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` (m, n) equals ``b.T`` (``b`` is n, m), bit for bit."""
    # the elements as unsigned integers of their size (1, 2, 4 or 8 bytes: every dtype a
    # Constant holds): equal exactly when their bits are (NaN == NaN, -0.0 != 0.0); a view,
    # so b.T stays a view too
    bits = np.dtype(f"u{a.dtype.itemsize}")
    a, bt = a.view(bits), b.view(bits).T
    m, n = a.shape
    rows = np.linspace(0, m - 1, 16).astype(np.intp)
    cols = np.linspace(0, n - 1, 16).astype(np.intp)
    # 256 elements first: two unrelated weights differ there, and the whole comparison
    # (154 MB for GPT-2's table) is made only for a real copy
    if not np.array_equal(a[rows[:, None], cols], bt[rows[:, None], cols]):
        return False
    # tile by tile into one buffer: a tile of b.T reads _TILE short runs of b, where a row of
    # b.T would read one element from each of n cache lines and pages (blocks of whole rows
    # took 0.4-0.7 s on GPT-2's table, these tiles 0.13 s); no temporary as big as the table
    differ = np.empty((_TILE, _TILE), dtype=bool)
    for i in range(0, m, _TILE):
        for j in range(0, n, _TILE):
            x, y = a[i:i + _TILE, j:j + _TILE], bt[i:i + _TILE, j:j + _TILE]
            if np.not_equal(x, y, out=differ[: x.shape[0], : x.shape[1]]).any():
                return False
    return True
