"""Finding repeated blocks: runs of alike copies in a sequence of nodes.

:func:`find_runs` looks for a block of tokens (each node's op and attributes) repeated
back to back; :func:`copies_alike` then checks that the copies are wired alike, each
using the copy before; :func:`copy_before` finds a first copy that other nodes were
mixed into. :mod:`irpass.viz.graph` draws the first copy of each run and one box for
the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..ir.expr import Expr

__all__ = ["copies_alike", "copy_before", "find_runs"]

_CANDIDATES = 16  # periods tried per position when looking for repeats
_MIN_COLLAPSE = 4  # a run is collapsed when it hides at least this many nodes


def _wiring(
    ops_of: list[list[Expr]], pos: dict[Expr, int], at: Sequence[int], before: Sequence[int]
) -> list[tuple]:
    """How the elements at positions ``at`` (a copy of a block) are wired, per operand:
    ``("in", k)`` the k-th element of the copy, ``("prev", k)`` the k-th of ``before``
    (the copy before), ``("out",)`` another element, ``("leaf",)`` a var or constant."""
    inside = {j: k for k, j in enumerate(at)}
    prev = {j: k for k, j in enumerate(before)}
    out: list[tuple] = []
    for i in at:
        for x in ops_of[i]:
            j = pos.get(x)
            if j is None:
                out.append(("leaf",))
            elif j in inside:
                out.append(("in", inside[j]))
            elif j in prev:
                out.append(("prev", prev[j]))
            else:
                out.append(("out",))
    return out


def _fits_first(first: list[tuple], pattern: list[tuple]) -> bool:
    """Whether the first copy's wiring is the others' (it takes from outside, or from a
    param, what they take from the copy before)."""
    return len(first) == len(pattern) and all(
        w == p or (w[0] in ("out", "leaf") and p[0] == "prev")
        for w, p in zip(first, pattern, strict=True)
    )


def copies_alike(
    ops_of: list[list[Expr]], pos: dict[Expr, int], start: int, length: int, count: int
) -> int:
    """How many copies from ``start`` on are wired alike (:func:`_wiring`): 0 unless the
    first two are, and the copies follow one another (each uses the one before): copies
    side by side, as the q, k and v projections of attention, are no run."""

    def copy(c: int) -> range:
        return range(start + c * length, start + (c + 1) * length)

    pattern = _wiring(ops_of, pos, copy(1), copy(0))
    if not any(w[0] == "prev" for w in pattern):
        return 0
    if not _fits_first(_wiring(ops_of, pos, copy(0), ()), pattern):
        return 0
    alike = 2
    while alike < count and _wiring(ops_of, pos, copy(alike), copy(alike - 1)) == pattern:
        alike += 1
    return alike


def copy_before(
    tokens: list[int],
    ops_of: list[list[Expr]],
    pos: dict[Expr, int],
    start: int,
    length: int,
    floor: int,
) -> list[int] | None:
    """The positions of one more copy of the block at ``start`` just before it, with
    other elements between them, or None.

    Program order puts a value that the copies share (the attention mask of BERT's
    layers, computed once, used by every layer) inside the first copy, which then
    differs from the rest; here the first copy is found again by matching the block's
    tokens backwards from ``start`` (above ``floor``), stepping over at most ``length``
    other elements, and its wiring is checked as any copy's.
    """
    t = length - 1
    p = start - 1
    matched: list[int] = []
    skipped = 0
    while t >= 0 and p >= floor and skipped <= length:
        if tokens[p] == tokens[start + t]:
            matched.append(p)
            t -= 1
        else:
            skipped += 1
        p -= 1
    if t >= 0 or not skipped:
        return None
    matched.reverse()
    pattern = _wiring(ops_of, pos, range(start, start + length), matched)
    if not any(w[0] == "prev" for w in pattern):
        return None
    return matched if _fits_first(_wiring(ops_of, pos, matched, ()), pattern) else None


def find_runs(
    tokens: list[int],
    weights: list[int] | None = None,
    alike: Callable[[int, int, int], int] | None = None,
) -> list[tuple[int, int, int]]:
    """Runs of a block repeated back to back: ``(start, length, count)`` with
    ``tokens[start + i*length : start + (i+1)*length]`` equal for ``i < count``.

    Greedy from the left; at each position the periods tried are the distances to the
    next few occurrences of the same token, the one hiding most nodes wins. Equal
    windows are found with a rolling hash and confirmed element by element, so the cost
    is linear in practice (each confirmed window is then skipped). ``weights`` (default
    1 each) count what each token stands for: a run is kept when the copies after the
    first weigh at least a few nodes. ``alike(start, length, count)``, when given, says
    how many of the copies really are one block (their wiring): fewer than 2, no run.
    """
    n = len(tokens)
    if n < 2:
        return []
    nxt = [-1] * n
    last: dict[int, int] = {}
    for i in range(n - 1, -1, -1):
        nxt[i] = last.get(tokens[i], -1)
        last[tokens[i]] = i
    mod = (1 << 61) - 1
    base = 1_000_003
    pre = [0] * (n + 1)
    pw = [1] * (n + 1)
    for i, t in enumerate(tokens):
        pre[i + 1] = (pre[i] * base + t) % mod
        pw[i + 1] = pw[i] * base % mod

    acc = [0] * (n + 1)
    for i in range(n):
        acc[i + 1] = acc[i] + (1 if weights is None else weights[i])

    def h(i: int, length: int) -> int:
        return (pre[i + length] - pre[i] * pw[length]) % mod

    runs: list[tuple[int, int, int]] = []
    i = 0
    while i < n:
        best: tuple[int, int, int, int] | None = None
        j = nxt[i]
        tries = 0
        while j != -1 and tries < _CANDIDATES:
            length = j - i
            if i + 2 * length > n:
                break
            first = h(i, length)
            # a multiple of a period already found covers no more and hides less
            if (best is None or length % best[1]) and (
                h(j, length) == first and tokens[i:j] == tokens[j : j + length]
            ):
                count = 2
                while (
                    i + (count + 1) * length <= n
                    and h(i + count * length, length) == first
                    and tokens[i:j] == tokens[i + count * length : i + (count + 1) * length]
                ):
                    count += 1
                # The earliest start can cut a block in two when what precedes the run
                # ends like a block does (a relu before blocks ending in relu); a block
                # ends with its output, which what follows the run uses: so shift the
                # copies as far right as the tokens after the run allow.
                end = i + count * length
                shift = 0
                while (
                    shift < length - 1
                    and end + shift < n
                    and tokens[end + shift] == tokens[i + shift]
                ):
                    shift += 1
                start = i + shift
                if alike is not None:
                    found = count
                    count = alike(start, length, found)
                    if count < 2 and shift:
                        start, count = i, alike(i, length, found)
                if count >= 2:
                    gain = acc[start + count * length] - acc[start + length]
                    if best is None or gain > best[3]:
                        best = (start, length, count, gain)
            j = nxt[j]
            tries += 1
        if best is not None and best[3] >= _MIN_COLLAPSE:
            start, length, count, _ = best
            runs.append((start, length, count))
            i = start + count * length
        else:
            i += 1
    return runs
