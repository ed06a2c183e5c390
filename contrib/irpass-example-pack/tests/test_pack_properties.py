"""Property tests: FoldAddZero keeps the meaning of random well-typed programs.

The programs come from ``irpass.testing.strategies`` (hypothesis: every op of the core,
lets, ifs, closures, tuples, helper functions, ...); ``check_semantics`` is the fixture
of irpass's pytest plugin (hypothesis is in the pack's ``test`` extra).
"""

from __future__ import annotations

from hypothesis import given, settings
from irpass.testing import strategies as sts
from irpass_example_pack import FoldAddZero


# derandomize: the same programs on every run, so the suite's verdict never depends on luck
@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(mod=sts.modules(max_nodes=16))
def test_fold_add_zero_keeps_the_meaning_of_random_programs(check_semantics, mod):
    check_semantics(FoldAddZero(), mod)
