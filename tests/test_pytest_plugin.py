"""irpass's pytest plugin (irpass.testing.pytest_plugin), run on small test files with pytester.

The files run in-process (``pytester.runpytest``); the plugin comes in through its
``pytest11`` entry point, as in a pass pack's own test run.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

README = Path(__file__).resolve().parents[1] / "README.md"

# what a pass author writes: a small program and a pass run on it
PROGRAM = '''
import numpy as np
import irpass
from irpass import op
from irpass.transform import get_pass


def folded():
    x = irpass.var("x", shape=(4,))
    one = irpass.const(np.ones(4, dtype="float32"))
    mod = irpass.IRModule.from_expr(irpass.Function([x], op.multiply(x, one + one)))
    return get_pass("FoldConstant")(mod)
'''

# FoldConstant's result for PROGRAM, written by hand
EXPECTED = """\
#[version = "irpass 0.1"]
def @main(%x: Tensor[(4,), float32]) {
  multiply(%x, const(float32, (4,), [2.0, 2.0, 2.0, 2.0]))
}
"""


def run(pytester, *args):
    """Run pytest on the pytester directory. In a process that imported an editable
    irpass already, pytest warns that it cannot rewrite irpass's asserts: not our subject."""
    return pytester.runpytest("-p", "no:cacheprovider",
                              "-W", "ignore::pytest.PytestAssertRewriteWarning", *args)


@pytest.fixture
def ir_test(pytester):
    """A test file comparing FoldConstant's result with ``expected/fold.txt``."""
    pytester.makepyfile(test_pyt_fold=PROGRAM + textwrap.dedent("""
        def test_fold(assert_ir_matches):
            assert_ir_matches(folded(), "expected/fold.txt")
    """))
    return pytester.path / "expected" / "fold.txt"


# -- expected-IR files ---------------------------------------------------------------------


def test_expected_ir_matches_up_to_formatting_comments_and_names(pytester, ir_test):
    ir_test.parent.mkdir()
    ir_test.write_text("// FoldConstant folds one + one\n" + EXPECTED.replace("%x", "%input")
                       .replace("  multiply", "        multiply"))
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert ir_test.read_text().startswith("// FoldConstant")  # left alone


def test_expected_ir_mismatch_fails_with_first_difference_and_diff(pytester, ir_test):
    ir_test.parent.mkdir()
    ir_test.write_text(EXPECTED.replace("2.0, 2.0, 2.0, 2.0", "2.0, 2.0, 2.0, 3.0"))
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*the module does not match expected-IR file expected/fold.txt",
        "*first difference: structural mismatch at @main.body.args?1?.data?3?: "
        "the module has 2.0, the file has 3.0",
        "*--- expected/fold.txt",
        "*+++ module",
        "*run pytest with --irpass-update to rewrite the file*",
    ])
    out = result.stdout.str()
    assert "-  multiply(%x, const(float32, (4,), [2.0, 2.0, 2.0, 3.0]))" in out
    assert "+  multiply(%x, const(float32, (4,), [2.0, 2.0, 2.0, 2.0]))" in out
    assert "3.0" in ir_test.read_text()  # not rewritten without the option


def test_missing_expected_file_says_to_run_with_update(pytester, ir_test):
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*expected-IR file expected/fold.txt does not exist; run pytest with --irpass-update*"])
    assert not ir_test.exists()


def test_unparseable_expected_file_says_where_and_to_update(pytester, ir_test):
    ir_test.parent.mkdir()
    ir_test.write_text(EXPECTED.replace("multiply(", "multiply(("))
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*expected-IR file expected/fold.txt does not parse: expected/fold.txt:4:1: error: *",
        "*run pytest with --irpass-update to rewrite it*"])


def test_update_writes_missing_and_differing_files_then_they_match(pytester, ir_test):
    result = run(pytester, "--irpass-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*irpass: 1 expected-IR file(s) written*",
                                 "  expected/fold.txt"])
    assert ir_test.read_text() == EXPECTED
    run(pytester).assert_outcomes(passed=1)

    ir_test.write_text(EXPECTED.replace("multiply", "add"))
    result = run(pytester, "--irpass-update")
    result.assert_outcomes(passed=1)
    assert "multiply(%x" in ir_test.read_text()


def test_update_leaves_matching_files_alone_and_reports_nothing(pytester, ir_test):
    ir_test.parent.mkdir()
    ir_test.write_text("// reviewed\n" + EXPECTED)
    result = run(pytester, "--irpass-update")
    result.assert_outcomes(passed=1)
    assert ir_test.read_text() == "// reviewed\n" + EXPECTED
    assert "written" not in result.stdout.str()


def test_expected_path_is_relative_to_the_test_file(pytester):
    sub = pytester.mkpydir("pack_tests")
    (sub / "test_deep.py").write_text(PROGRAM + textwrap.dedent("""
        def test_fold(assert_ir_matches):
            assert_ir_matches(folded(), "expected/fold.txt")
    """))
    (sub / "expected").mkdir()
    (sub / "expected" / "fold.txt").write_text(EXPECTED)
    run(pytester).assert_outcomes(passed=1)


def test_assert_ir_matches_rejects_a_non_module(pytester):
    pytester.makepyfile("""
        def test_expr(assert_ir_matches):
            import irpass
            assert_ir_matches(irpass.var("x", shape=(2,)), "x.txt")
    """)
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*TypeError: assert_ir_matches: expected an IRModule, got Var*"])


# -- isolated plugin sets ------------------------------------------------------------------

PLUGIN = '''
import irpass
from irpass.transform import module_pass


@module_pass(opt_level=0, name="PytesterPass")
def pytester_pass(mod, ctx):
    return mod


@irpass.hookimpl
def irpass_register_passes():
    return [pytester_pass]
'''


def test_plugin_sets_are_isolated_and_put_back(pytester):
    pytester.syspathinsert()
    pytester.makepyfile(pytester_plugin=PLUGIN, broken_plugin="raise ImportError('no luck')")
    pytester.makepyfile(test_pyt_sets="""
        import irpass.plugins
        import pytest
        from irpass.plugins import PluginError
        from irpass.transform import list_passes

        BEFORE = {}

        def test_0_before():
            BEFORE["passes"] = list_passes()
            BEFORE["manager"] = irpass.plugins.get_plugin_manager()
            assert "FoldConstant" in BEFORE["passes"] and "PytesterPass" not in BEFORE["passes"]

        def unchanged():
            assert list_passes() == BEFORE["passes"]
            assert irpass.plugins.get_plugin_manager() is BEFORE["manager"]

        @pytest.mark.irpass_plugins("pytester_plugin")
        def test_1_marker():
            assert "PytesterPass" in list_passes() and "FoldConstant" not in list_passes()
            record = irpass.plugins.get_plugin_manager().record("pytester_plugin")
            assert record.status == "loaded"

        def test_2_after():
            unchanged()

        def test_3_fixture(irpass_plugins):
            manager = irpass_plugins("std", "pytester_plugin")
            assert manager is irpass.plugins.get_plugin_manager()
            assert {"PytesterPass", "FoldConstant"} <= set(list_passes())
            irpass_plugins()
            assert "PytesterPass" not in list_passes() and "FoldConstant" not in list_passes()

        def test_4_after():
            unchanged()

        @pytest.mark.irpass_plugins("pytester_plugin")
        def test_5_failing():
            assert False, "fails inside the set"

        def test_6_after():
            unchanged()

        def test_7_broken_is_an_error(irpass_plugins):
            with pytest.raises(PluginError, match="broken_plugin.*no luck"):
                irpass_plugins("broken_plugin")
            unchanged()
            irpass_plugins("broken_plugin", strict=False)  # a warning, then skipped
            assert irpass.plugins.get_plugin_manager().record("broken_plugin").status == "failed"

        def test_8_after():
            unchanged()

        @pytest.fixture
        def plugin_passes(irpass_plugins):
            return list_passes()

        @pytest.mark.irpass_plugins("pytester_plugin")
        def test_9_a_fixture_requesting_it_sees_the_marked_set(plugin_passes):
            assert "PytesterPass" in plugin_passes

        def test_10_after():
            unchanged()

        def test_11_registered_in_the_test(irpass_plugins):
            import pytester_plugin

            irpass.plugins.register(pytester_plugin, name="inline")
            assert "PytesterPass" in list_passes()

        def test_12_after():
            unchanged()
    """)
    result = run(pytester, "-W", "ignore::UserWarning")
    result.assert_outcomes(passed=12, failed=1)
    result.stdout.fnmatch_lines(["*test_5_failing*fails inside the set*"])


def test_bad_marker_arguments_name_the_marker_and_the_test(pytester):
    pytester.makepyfile(test_pyt_bad="""
        import pytest

        @pytest.mark.irpass_plugins("std", autolod=True)
        def test_typo():
            pass

        @pytest.mark.irpass_plugins(block="std")
        def test_block_str():
            pass
    """)
    result = run(pytester)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([
        "*TypeError: @pytest.mark.irpass_plugins on test_pyt_bad.py::test_typo: *autolod*",
        "*TypeError: @pytest.mark.irpass_plugins on test_pyt_bad.py::test_block_str: "
        "irpass_plugins: block must be a list of plugin names, got 'std'",
    ])


# -- irpass_seeded_generators ---------------------------------------------------------------


def test_seeded_generators_give_a_test_the_same_inputs_whatever_ran_before(pytester):
    pytester.makeini("""
        [pytest]
        usefixtures = irpass_seeded_generators
    """)
    pytester.makepyfile(test_pyt_rng="""
        import numpy as np

        RNG = np.random.default_rng(3)

        def test_first():
            print("first", RNG.random())

        def test_second():
            print("second", RNG.random())
    """)

    def draws(*args):
        result = run(pytester, "-s", *args)
        result.assert_outcomes(passed=2 if not args else 1)
        return dict(re.findall(r"(first|second) ([0-9.e-]+)", result.stdout.str()))

    both = draws()
    assert both["first"] != both["second"]
    # alone, or after the other: the same draw (without the fixture, test_second would
    # draw the module generator's first number when run alone, its second after test_first)
    assert draws("-k", "second") == {"second": both["second"]}
    assert draws("-k", "first") == {"first": both["first"]}


# -- example networks, check_semantics, hypothesis -----------------------------------------


def test_example_models_parametrize_the_test(pytester):
    pytester.makepyfile(test_pyt_models="""
        import pytest
        from irpass.transform import get_pass

        SEEN = []

        def test_model(irpass_example_model, check_semantics):
            out = check_semantics(get_pass("FoldConstant"), irpass_example_model)
            assert "main" in out
            SEEN.append(irpass_example_model)

        def test_fresh_each_time():
            assert len(SEEN) == 4 and len({id(m) for m in SEEN}) == 4

        @pytest.mark.parametrize("irpass_example_model", ["resnet"], indirect=True)
        def test_picked(irpass_example_model):
            assert "nn.conv2d" in str(irpass_example_model)
    """)
    result = run(pytester, "-v")
    result.assert_outcomes(passed=6)
    for name in ("mlp", "mobilenet", "resnet", "transformer"):
        result.stdout.fnmatch_lines([f"*test_model?{name}? PASSED*"])
    result.stdout.fnmatch_lines(["*test_picked?resnet? PASSED*"])


def test_check_semantics_fixture_catches_a_miscompile(pytester):
    pytester.makepyfile(test_pyt_wrong="""
        import irpass
        from irpass.transform import module_pass

        @module_pass(opt_level=0, name="NegateOutput")
        def negate(mod, ctx):
            f = mod["main"]
            return irpass.IRModule.from_expr(irpass.Function(f.params, irpass.op.negative(f.body)))

        def test_negate(irpass_example_model, check_semantics):
            check_semantics(negate, irpass_example_model)
    """)
    result = run(pytester)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["*AssertionError: pass 'NegateOutput', input set 0*differs*"])


def test_hypothesis_programs_with_the_check_semantics_fixture(pytester):
    pytester.makepyfile(test_pyt_props="""
        from hypothesis import given, settings
        from irpass.testing import strategies as sts
        from irpass.transform import get_pass

        RUNS = []

        @settings(max_examples=5, deadline=None, database=None)
        @given(mod=sts.modules(max_nodes=10))
        def test_fold_constant_keeps_meaning(check_semantics, mod):
            check_semantics(get_pass("FoldConstant"), mod)
            RUNS.append(mod)

        def test_ran():
            assert len(RUNS) >= 2
    """)
    # hypothesis refuses function-scoped fixtures in @given tests: check_semantics is not one
    run(pytester).assert_outcomes(passed=2)


# -- a suite that does not use the plugin --------------------------------------------------


def test_a_suite_that_does_not_use_it_sees_no_difference(pytester):
    pytester.makepyfile(test_pyt_plain="""
        import pytest

        @pytest.fixture
        def value():
            return 1

        def test_plain(value):
            assert value == 1
    """)

    def output(*args):
        result = run(pytester, *args)
        # the header lists the plugin's distribution; the last line has the time
        return [line for line in result.stdout.lines[:-1]
                if not line.startswith(("plugins:", "rootdir:"))]

    for args, shown in ((["-v", "--setup-show"], "(fixtures used: value) PASSED"),
                        (["--fixtures-per-test"], "value -- test_pyt_plain.py:3")):
        without = output(*args, "-p", "no:irpass")
        assert any(shown in line for line in without)
        assert output(*args) == without
        assert output(*args, "--irpass-update") == without


def test_the_plugin_can_be_switched_off(pytester):
    pytester.makepyfile(test_pyt_off="""
        def test_uses(assert_ir_matches):
            pass
    """)
    run(pytester).assert_outcomes(passed=1)
    result = run(pytester, "-p", "no:irpass")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'assert_ir_matches' not found*"])


# -- the README's example ------------------------------------------------------------------


def test_readme_testing_section_example_runs(pytester):
    """The "Testing a pass pack" example: its first run with --irpass-update writes the
    expected file, the next passes against it."""
    section = README.read_text().split("### Testing a pass pack", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 2, "the section lost its examples"
    pytester.makepyfile(test_pyt_pack="\n".join(blocks))
    result = run(pytester, "--irpass-update")
    result.assert_outcomes(passed=7)
    written = pytester.path / "expected" / "fold.txt"
    assert "multiply(%x, const(float32, (4,), [2.0, 2.0, 2.0, 2.0]))" in written.read_text()
    run(pytester).assert_outcomes(passed=7)
