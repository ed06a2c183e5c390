"""gc_paused: pauses overlap across threads and the collector comes back on after the last."""

from __future__ import annotations

import gc
import random
import sys
import threading
from collections.abc import Iterator

import pytest
from irpass.ir.gcpause import gc_paused


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_overlapping_and_nested_pauses_keep_the_collector_off_until_the_last_ends():
    # Two pauses that overlap without nesting, as two threads' pauses do.
    first, second = gc_paused(), gc_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled(), "the collector came back on while a pause was still active"
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()

    # Off before the first pause: off after the last.
    gc.disable()
    first.__enter__()
    with gc_paused():
        second.__enter__()
    first.__exit__(None, None, None)
    second.__exit__(None, None, None)
    assert not gc.isenabled()


def test_the_collector_state_a_program_sets_inside_a_pause():
    # The documented rule: when the last pause ends the collector is on if it
    # was on before the first; a gc.enable() inside a pause is kept.
    gc.disable()
    with gc_paused():
        gc.enable()
        with gc_paused():
            assert gc.isenabled()  # not switched off again: only speed is lost
    assert gc.isenabled()
    with gc_paused():
        gc.disable()
    assert gc.isenabled()
    with pytest.raises(KeyError):
        with gc_paused():
            raise KeyError("the block fails")
    assert gc.isenabled()


def _pause_at_random(seed: int, start: threading.Barrier, errors: list[str]) -> None:
    rng = random.Random(seed)
    start.wait()
    for _ in range(300):
        depth = rng.randint(1, 3)
        pauses = [gc_paused() for _ in range(depth)]
        for p in pauses:
            p.__enter__()
            if gc.isenabled():
                errors.append("the collector was on inside a pause")
        # Leave in any order: other threads' pauses interleave the same way.
        rng.shuffle(pauses)
        for p in pauses:
            if gc.isenabled():
                errors.append("the collector was on inside a pause")
            p.__exit__(None, None, None)


def test_threads_pausing_at_random_leave_the_collector_on():
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        for round_ in range(5):
            errors: list[str] = []
            start = threading.Barrier(8)
            threads = [
                threading.Thread(target=_pause_at_random, args=(round_ * 8 + k, start, errors))
                for k in range(8)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not errors, f"round {round_}: {errors[0]} ({len(errors)} times)"
            assert gc.isenabled(), f"round {round_}: the collector was left off"
    finally:
        sys.setswitchinterval(old_interval)

