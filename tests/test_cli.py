"""The ``irpass`` command, run in-process through ``irpass.cli.main.main``.

Each test starts with no plugins loaded (``fresh_plugins``), no IRPASS_*
variables and an empty working directory, so the command resolves its
settings and loads its plugins the way a fresh process would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import irpass
import irpass_std.plugin
import numpy as np
import pytest
from irpass.cli.main import main, split_names
from irpass.cli.optimize import compare_outputs, example_models
from irpass.cli.summary import count_ops
from irpass.testing import models, random_inputs
from irpass.testing.plugins import OWN_PLUGINS, plugin_environ

# A plugin module for the tests: passes that are wrong, raise, or need arguments.
PLUGIN_SOURCE = '''
"""Test plugin for the irpass CLI tests."""
import numpy as np
from irpass import op
from irpass.ir import ExprMutator, Function, const
from irpass.plugins import hookimpl
from irpass.transform import function_pass, module_pass


@function_pass(opt_level=0, name="ScaleOutput")
def ScaleOutput(func, mod, ctx):
    """Doubles every function's result (deliberately wrong)."""
    body = op.multiply(func.body, const(np.float32(2.0)))
    return Function(func.params, body, None, func.attrs)


@function_pass(opt_level=0, name="IllTyped")
def IllTyped(func, mod, ctx):
    """Adds a 7-vector to the result, which does not broadcast (deliberately ill-typed)."""
    return Function(func.params, op.add(func.body, const(np.ones(7, np.float32))), None,
                    func.attrs)


class _FlipThird(ExprMutator):
    def __init__(self, ctx):
        super().__init__()
        self.ctx, self.n = ctx, 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if getattr(call.op, "name", None) == "nn.relu" and self.ctx.debug_counter("relu"):
            self.n += 1
            if self.n == 3:
                return op.nn.relu(op.negative(new.args[0]))
        return new


@function_pass(opt_level=0, name="FlipThird")
def FlipThird(func, mod, ctx):
    """Rewrites every relu (counted); the third gets a negated operand (deliberately wrong)."""
    return _FlipThird(ctx).visit(func)


@module_pass(opt_level=0, name="Explode")
def Explode(mod, ctx):
    """Always raises."""
    raise RuntimeError("boom from Explode")


@module_pass(opt_level=0, name="Interrupt")
def Interrupt(mod, ctx):
    """Acts like Ctrl-C."""
    raise KeyboardInterrupt


def ScaleBy(k: float, shift: int = 0):
    """Scales every result by k (needs an argument)."""
    return ScaleOutput


def Broken():
    """A factory that crashes."""
    raise RuntimeError("factory crashed")


@hookimpl
def irpass_register_passes():
    return [ScaleOutput, IllTyped, FlipThird, Explode, Interrupt, ScaleBy, Broken]
'''

PLUGIN = "irpass_cli_test_plugin"
BROKEN_PLUGIN = "irpass_cli_test_broken_plugin"


@pytest.fixture(autouse=True)
def cli_env(fresh_plugins, monkeypatch, tmp_path):
    """Empty cwd, no IRPASS_* variables, the test plugin modules importable."""
    for var in ("IRPASS_PLUGINS", "IRPASS_DISABLE_PLUGIN_AUTOLOAD", "IRPASS_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    mods = tmp_path / "plugin_modules"
    mods.mkdir()
    (mods / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE)
    (mods / f"{BROKEN_PLUGIN}.py").write_text("import irpass_cli_no_such_module  # noqa\n")
    monkeypatch.syspath_prepend(str(mods))
    # reproducers of the failing runs go to the test's own temporary directory
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for name in (PLUGIN, BROKEN_PLUGIN):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield work
    for name in (PLUGIN, BROKEN_PLUGIN):
        sys.modules.pop(name, None)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the command; return (exit code, stdout, stderr)."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_error(err: str, *fragments: str) -> None:
    """A short error report: starts with 'irpass: error:', no traceback, names the fragments."""
    assert err.startswith("irpass: error: "), err
    assert "Traceback" not in err
    # the message, then at most: the expression, its function, the pipeline position and
    # the reproducer written
    assert len(err.strip().splitlines()) <= 5, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def same_outputs(a: irpass.IRModule, b: irpass.IRModule, seed: int = 0) -> bool:
    inputs = random_inputs(a, seed)
    return np.allclose(
        irpass.evaluate(a, **inputs), irpass.evaluate(b, **inputs), rtol=1e-5, atol=1e-6
    )


# -- global options ---------------------------------------------------------------------


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.startswith(f"irpass {irpass.__version__} ")
    assert f"Python {'.'.join(map(str, sys.version_info[:3]))}" in out


def test_no_command_is_a_usage_error(capsys):
    code, out, err = run(capsys)
    assert code == 2
    assert out == ""
    assert_one_error(err, "no command given", "optimize")


def test_unknown_command_and_option(capsys):
    code, _, err = run(capsys, "optimise")
    assert code == 2
    assert_one_error(err, "optimise", "irpass --help")
    code, _, err = run(capsys, "optimize", "--no-such-flag")
    assert code == 2
    assert_one_error(err, "--no-such-flag", "irpass optimize --help")


def test_help_exits_zero(capsys):
    code, out, _ = run(capsys, "optimize", "--help")
    assert code == 0
    assert "--disable-pass" in out and "--check" in out and "--plugin" in out


# -- optimize ---------------------------------------------------------------------------


def test_optimize_default_example_to_stdout(capsys):
    code, out, err = run(capsys, "optimize")
    assert code == 0, err
    result = irpass.parse(out)
    assert same_outputs(models.resnet(), result)
    # the summary: passes, time, node counts and the op table
    assert "irpass optimize: example resnet, default_pipeline at opt_level 2" in err
    assert "passes:" in err and "InferType" in err
    before, after = count_ops(models.resnet()), count_ops(result)
    assert after.fused_functions > 0
    assert (
        f"nodes:   {before.calls} -> {after.calls} ({after.fused_calls} in "
        f"{after.fused_functions} fused functions) op calls"
    ) in err
    conv_row = next(line for line in err.splitlines() if line.split()[:1] == ["nn.conv2d"])
    assert conv_row.split()[1:3] == [str(before.ops["nn.conv2d"])] * 2


def test_optimize_quiet_prints_no_summary(capsys):
    code, out, err = run(capsys, "optimize", "-q", "--example", "mlp")
    assert code == 0
    assert err == ""
    irpass.assert_structural_equal(irpass.parse(out), _expected_default(models.mlp()))


def _expected_default(mod: irpass.IRModule, level: int = 2) -> irpass.IRModule:
    from irpass.transform import PassContext, default_pipeline

    with PassContext(opt_level=level):
        return default_pipeline(level)(mod)


def test_optimize_output_file_loads_back(capsys, cli_env):
    out_path = cli_env / "out" / "resnet.txt"
    out_path.parent.mkdir()
    code, out, err = run(capsys, "optimize", "-o", str(out_path))
    assert code == 0, err
    assert out == ""
    assert f"wrote: {out_path}" in " ".join(err.split())  # a long path wraps to a new line
    loaded = irpass.load(out_path)
    irpass.assert_structural_equal(loaded, _expected_default(models.resnet()))


def test_optimize_model_file_with_pipeline_string(capsys, cli_env):
    src = cli_env / "mlp.txt"
    irpass.save(models.mlp(), src)
    code, out, err = run(capsys, "optimize", str(src), "--pipeline", "Identity")
    assert code == 0, err
    irpass.assert_structural_equal(irpass.parse(out), models.mlp())
    assert "1 run: Identity" in err
    assert f"irpass optimize: {src}," in err


def test_optimize_disabled_pass_does_not_run(capsys):
    code, _, err = run(
        capsys,
        "optimize",
        "-q",
        "--example",
        "mlp",
        "--pipeline",
        "Identity,InferType",
        "--disable-pass",
        "InferType",
    )
    assert code == 0, err
    code, _, err = run(
        capsys,
        "optimize",
        "--example",
        "mlp",
        "--pipeline",
        "Identity,InferType",
        "--disable-pass",
        "Identity,InferType",
    )
    assert code == 0, err
    assert "passes:  none ran" in err


def test_every_example_is_buildable():
    names = set(example_models())
    assert names == set(models.MODELS) | {"transformer_encoder"}


def test_optimize_check_passes(capsys):
    code, _, err = run(capsys, "optimize", "--example", "transformer", "--check", "--seed", "3")
    assert code == 0, err
    assert "check:   ok, 1 output(s) match (seed 3" in err


def test_optimize_check_catches_a_wrong_pass(capsys, cli_env):
    out_path = cli_env / "wrong.txt"
    code, out, err = run(
        capsys,
        "-p",
        PLUGIN,
        "optimize",
        "--example",
        "mlp",
        "--pipeline",
        "ScaleOutput",
        "--check",
        "-o",
        str(out_path),
    )
    assert code == 1
    assert out == ""
    assert_one_error(err, "--check", "output", "max abs error")
    assert not out_path.exists()  # a wrong result is not written
    # without --check the same run succeeds: the failure above is the check's
    code, _, err = run(
        capsys,
        "--plugin",
        PLUGIN,
        "optimize",
        "-q",
        "--example",
        "mlp",
        "--pipeline",
        "ScaleOutput",
    )
    assert code == 0, err


def test_check_tolerances_decide(capsys):
    # doubling the result is within a huge relative tolerance
    code, _, err = run(
        capsys,
        "optimize",
        "--plugin",
        PLUGIN,
        "--example",
        "mlp",
        "--pipeline",
        "ScaleOutput",
        "--check",
        "--rtol",
        "2",
        "-q",
    )
    assert code == 0, err


def test_verify_each_blames_the_pass_that_broke_the_module(capsys):
    code, out, err = run(
        capsys, "-p", PLUGIN, "optimize", "--example", "mlp", "--pipeline", "IllTyped,SimplifyExpr"
    )
    assert code == 1 and out == ""
    assert_one_error(err, "'IllTyped'", "ill-formed", "(7,)")
    # switched off, the pass after it is blamed (what verify_each is there to prevent)
    code, _, err = run(
        capsys,
        "-p",
        PLUGIN,
        "optimize",
        "--example",
        "mlp",
        "--pipeline",
        "IllTyped,SimplifyExpr",
        "--no-verify-each",
    )
    assert code == 1
    assert "'IllTyped'" not in err and "'InferType' failed" in err


def test_print_changed(capsys):
    code, out, err = run(
        capsys, "optimize", "--example", "resnet", "-O", "3", "-q", "--print-changed=diff"
    )
    assert code == 0, err
    assert err.startswith("*** IR Dump At Start ***\n")
    assert "*** IR Dump After FoldScaleAxis (diff) ***" not in err  # a Sequential of passes
    assert "*** IR Dump After SimplifyInference (diff) ***\n--- before SimplifyInference" in err
    assert "const(float32, (16, 3, 3, 3), ...)" in err  # the weights are elided
    assert out.startswith("#[version")  # the result still goes to stdout
    code, _, err = run(capsys, "optimize", "--example", "mlp", "-q", "--print-changed")
    assert code == 0 and "*** IR Dump After" in err and "--- before" not in err


def _reproducer_json(path):
    import json

    return json.loads((path / "reproducer.json").read_text())


def test_a_failing_pass_leaves_a_reproducer_that_fails_the_same_way(capsys, cli_env):
    repro = cli_env / "repro"
    pipeline = "InferType,seq(FoldConstant,IllTyped,SimplifyExpr),DeadCodeElimination"
    code, _, err = run(
        capsys,
        "-p",
        PLUGIN,
        "optimize",
        "--example",
        "mlp",
        "--pipeline",
        pipeline,
        "--reproducer",
        str(repro),
    )
    assert code == 1
    assert err.startswith("irpass: error: pass 'IllTyped' failed") and "Traceback" not in err
    assert f"reproducer: {repro} (rerun: irpass optimize --reproduce {repro})" in err
    data = _reproducer_json(repro)
    assert data["pipeline"] == "IllTyped,SimplifyExpr,DeadCodeElimination"
    assert data["failure"]["pass"] == "IllTyped" and data["irpass"] == irpass.__version__
    assert PLUGIN in [p["name"] for p in data["plugins"]]
    # the module saved is the one IllTyped was given: the mlp after FoldConstant
    saved = irpass.load(repro / "module.txt")
    with irpass.transform.PassContext(opt_level=2):
        expected = irpass.transform.parse_pipeline("InferType,FoldConstant")(models.mlp())
    irpass.assert_structural_equal(saved, expected)
    code, _, err2 = run(capsys, "-p", PLUGIN, "optimize", "--reproduce", str(repro))
    assert code == 1
    assert err2.splitlines()[0] == err.splitlines()[0]  # the same failure
    assert "reproducer:" not in err2  # a rerun writes none


def test_the_reproducer_goes_to_a_temporary_directory_by_default(capsys):
    code, _, err = run(
        capsys, "-p", PLUGIN, "optimize", "--example", "mlp", "--pipeline", "Explode"
    )
    assert code == 1
    where = err.split("reproducer: ")[1].split(" (rerun")[0]
    assert Path(where).is_dir() and _reproducer_json(Path(where))["failure"]["pass"] == "Explode"
    code, _, err = run(capsys, "-p", PLUGIN, "optimize", "--reproduce", where)
    assert code == 1 and "boom from Explode" in err
    code, _, err = run(
        capsys,
        "-p",
        PLUGIN,
        "optimize",
        "--example",
        "mlp",
        "--pipeline",
        "Explode",
        "--reproducer",
        "off",
    )
    assert code == 1 and "reproducer" not in err


def test_check_each_failure_reproduces_with_check_each(capsys, cli_env):
    repro = cli_env / "repro"
    code, _, err = run(
        capsys,
        "-p",
        PLUGIN,
        "optimize",
        "--example",
        "mlp",
        "--check-each",
        "--pipeline",
        "InferType,ScaleOutput,SimplifyExpr",
        "--reproducer",
        str(repro),
    )
    assert code == 1
    assert "*** IR before ScaleOutput ***" in err and "*** IR after ScaleOutput ***" in err
    assert "changed the outputs" in err
    code, _, err = run(capsys, "-p", PLUGIN, "optimize", "--reproduce", str(repro))
    assert code == 1 and "'ScaleOutput' failed: changed the outputs" in err


def test_bad_reproducer_directories_are_one_line_errors(capsys, cli_env):
    import json

    # (one plugin set per process: every run here loads the test plugin)
    repro = cli_env / "repro"
    run(
        capsys,
        "-p",
        PLUGIN,
        "optimize",
        "--example",
        "mlp",
        "--pipeline",
        "IllTyped",
        "--reproducer",
        str(repro),
    )
    empty = cli_env / "empty"
    empty.mkdir()
    code, _, err = run(capsys, "-p", PLUGIN, "optimize", "--reproduce", str(empty))
    assert code == 2
    assert_one_error(err, "not a reproducer directory")
    # a plugin the failing run had is not loaded now
    data = _reproducer_json(repro)
    data["plugins"].append(
        {
            "name": "no_such_pack",
            "source": "entry point",
            "module": "no_such_pack",
            "dist": "no-such-pack",
            "version": "1.2",
        }
    )
    (repro / "reproducer.json").write_text(json.dumps(data))
    code, _, err = run(capsys, "-p", PLUGIN, "optimize", "--reproduce", str(repro))
    assert code == 2
    assert_one_error(err, "plugin 'no_such_pack'", "no-such-pack 1.2", "not loaded")
    # from another irpass version
    data["plugins"].pop()
    data["irpass"] = "0.0.1"
    (repro / "reproducer.json").write_text(json.dumps(data))
    code, _, err = run(capsys, "-p", PLUGIN, "optimize", "--reproduce", str(repro))
    assert code == 2
    assert_one_error(err, "irpass 0.0.1", f"irpass {irpass.__version__}")
    code, _, err = run(
        capsys, "-p", PLUGIN, "optimize", "--example", "mlp", "--reproduce", str(repro)
    )
    assert code == 2
    assert_one_error(err, "--reproduce DIR", "no MODEL")
    # a reproducer directory that is not empty is refused, and the failure still shown
    code, _, err = run(
        capsys,
        "-p",
        PLUGIN,
        "optimize",
        "--example",
        "mlp",
        "--pipeline",
        "IllTyped",
        "--reproducer",
        str(repro),
    )
    assert code == 2 and "not an empty directory" in err


def test_bisect_names_the_pass_and_the_rewrite(capsys):
    code, out, err = run(
        capsys,
        "-p",
        PLUGIN,
        "bisect",
        "--example",
        "resnet",
        "-O",
        "3",
        "--pipeline",
        "default,FlipThird,SimplifyExpr",
    )
    assert code == 0, err
    assert "first bad pass: FlipThird" in out
    assert "first bad rewrite: 3 of 5 in FlipThird, at relu" in out
    assert "after:  negative(" in out


@pytest.mark.parametrize(
    "test, words",
    [
        ("irpass_no_such_command", ["irpass_no_such_command", "not found"]),
        ("false", ["bad already", "nothing to bisect"]),
        ("true", ["not bad", "nothing to bisect"]),
    ],
)
def test_bisect_bad_tests_are_one_line_errors(capsys, test, words):
    code, out, err = run(capsys, "bisect", "--example", "mlp", "--test", test)
    assert code == 2 and out == ""
    assert_one_error(err, *words)


def test_bisect_with_a_test_command(capsys, cli_env):
    # the command fails on models that contain a negative: only FlipThird's output does
    script = cli_env / "has_negative.py"
    script.write_text("import sys\nsys.exit(1 if 'negative(' in open(sys.argv[1]).read() else 0)\n")
    code, out, err = run(
        capsys,
        "-p",
        PLUGIN,
        "bisect",
        "--example",
        "resnet",
        "-O",
        "3",
        "--pipeline",
        "default,FlipThird",
        "--test",
        f"{sys.executable} {script}",
    )
    assert code == 0, err
    assert "first bad pass: FlipThird" in out and "first bad rewrite: 3 of 5" in out


def test_reduce_shrinks_a_miscompile(capsys, cli_env):
    out_path = cli_env / "small.txt"
    code, out, err = run(
        capsys,
        "-p",
        PLUGIN,
        "reduce",
        "--example",
        "resnet",
        "-O",
        "3",
        "--check",
        "--pipeline",
        "default,FlipThird",
        "-o",
        str(out_path),
    )
    assert code == 0, err
    assert "reduced @main from" in err
    small = irpass.load(out_path)
    from irpass.debug import count_calls

    assert count_calls(small) <= 10
    assert "nn.relu" in small.astext()
    code, _, err = run(capsys, "-p", PLUGIN, "reduce", "--example", "resnet")
    assert code == 2
    assert_one_error(err, "--test CMD, --check, --failing-pass NAME")
    code, _, err = run(
        capsys, "-p", PLUGIN, "reduce", "--example", "resnet", "--failing-pass", "FoldConstant"
    )
    assert code == 2
    assert_one_error(err, "not bad", "nothing to reduce")


def test_verify_each_off_in_the_config_file(capsys, cli_env):
    (cli_env / "irpass.toml").write_text("[config]\nverify_each = false\n")
    code, _, err = run(
        capsys, "-p", PLUGIN, "optimize", "--example", "mlp", "--pipeline", "IllTyped,SimplifyExpr"
    )
    assert code == 1
    assert "'InferType' failed" in err


def test_failing_pass_exits_1_without_traceback(capsys):
    code, out, err = run(
        capsys, "-p", PLUGIN, "optimize", "--example", "mlp", "--pipeline", "Explode"
    )
    assert code == 1
    assert out == ""
    assert_one_error(err, "Explode", "boom from Explode")


def test_traceback_option_shows_the_traceback(capsys):
    code, _, err = run(
        capsys, "-p", PLUGIN, "--traceback", "optimize", "--example", "mlp", "--pipeline", "Explode"
    )
    assert code == 1
    assert "Traceback (most recent call last)" in err
    assert "RuntimeError: boom from Explode" in err
    assert err.index("Traceback") < err.index("\nirpass: error: pass 'Explode' failed")


def test_traceback_option_after_the_command(capsys):
    code, _, err = run(capsys, "optimize", "missing.txt", "--traceback")
    assert code == 2
    assert "Traceback (most recent call last)" in err


def test_keyboard_interrupt_exits_130(capsys):
    code, _, err = run(
        capsys, "-p", PLUGIN, "optimize", "--example", "mlp", "--pipeline", "Interrupt"
    )
    assert code == 130
    assert "interrupted" in err


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["optimize", "--pipeline", "InferType,,Identity"], ["pipeline"]),
        (["optimize", "--pipeline", "InferTyp"], ["InferTyp", "InferType"]),
        (["optimize", "--disable-pass", "Identity,InferTyp"], ["InferTyp", "InferType"]),
        (["optimize", "--required-pass", "NoSuchPassAnywhere"], ["NoSuchPassAnywhere"]),
        (["optimize", "missing_model.txt"], ["missing_model.txt"]),
        (["optimize", "--instrument", "timeing"], ["timeing", "timing"]),
        (["optimize", "-o", "result.unknownsuffix"], [".unknownsuffix"]),
        (["optimize", "-o", "no_such_dir/out.txt"], ["no_such_dir"]),
        (["optimize", "model.txt", "--example", "mlp"], ["MODEL", "--example"]),
        (["optimize", "--example", "alexnet"], ["alexnet"]),
        (["optimize", "-O", "high"], ["high"]),
        (["--config", "nowhere.toml", "passes"], ["nowhere.toml"]),
        (["--strict-plugins", "-p", BROKEN_PLUGIN, "passes"], [BROKEN_PLUGIN]),
    ],
)
def test_bad_input_exits_2(capsys, argv, fragments):
    code, out, err = run(capsys, *argv)
    assert code == 2, err
    assert out == ""
    assert_one_error(err, *fragments)


@pytest.mark.parametrize(
    "output, clash",
    [
        ("model.txt", "is the input"),
        ("./model.txt", "is the input"),
        ("link.txt", "is the input"),  # a symlink to the input
        ("model.ir", "would write 'model.npz' beside it, which is a file of the input"),
        ("model", "would write 'model.npz' beside it, which is a file of the input"),
    ],
)
def test_optimize_never_writes_over_its_input_or_its_constants(capsys, cli_env, output, clash):
    irpass.save(models.resnet(), cli_env / "model.txt")
    (cli_env / "link.txt").symlink_to("model.txt")
    files = {p.name: p.read_bytes() for p in cli_env.iterdir()}
    assert sorted(files) == ["link.txt", "model.npz", "model.txt"]
    code, out, err = run(capsys, "optimize", "model.txt", "-O", "3", "-o", output)
    assert code == 2, err
    assert out == ""
    assert_one_error(err, f"the output {output!r} ", clash, "'model.txt'")
    assert len(err.strip().splitlines()) == 1, err
    assert {p.name: p.read_bytes() for p in cli_env.iterdir()} == files
    irpass.assert_structural_equal(irpass.load(cli_env / "model.txt"), models.resnet())
    # the same input to another name is fine and leaves the input as it was
    code, _, err = run(capsys, "optimize", "model.txt", "-q", "-o", "other.txt")
    assert code == 0, err
    assert all((cli_env / name).read_bytes() == data for name, data in files.items())


def test_optimize_refuses_an_output_whose_constants_file_is_another_inputs(capsys, cli_env):
    # the input is model.ir, whose constants live in model.npz; so would those of model.txt
    irpass.save(models.mlp(), cli_env / "model.ir")
    files = {p.name: p.read_bytes() for p in cli_env.iterdir()}
    code, _, err = run(
        capsys, "optimize", str(cli_env / "model.ir"), "-o", str(cli_env / "model.txt")
    )
    assert code == 2
    assert_one_error(
        err, str(cli_env / "model.ir"), str(cli_env / "model.txt"), str(cli_env / "model.npz")
    )
    assert {p.name: p.read_bytes() for p in cli_env.iterdir()} == files


def test_model_file_with_syntax_error(capsys, cli_env):
    (cli_env / "bad.txt").write_text("def @main(%x: Tensor[(1,), float32]) {\n  %x +\n}\n")
    code, _, err = run(capsys, "optimize", "bad.txt")
    assert code == 2
    assert_one_error(err, "bad.txt:")
    assert "error: error" not in err and ": error: " not in err[len("irpass: error: ") :]


def test_bad_config_file_exits_2(capsys, cli_env):
    (cli_env / "irpass.toml").write_text("opt_level = 2\nno_such_key = 1\n")
    code, _, err = run(capsys, "optimize", "-q")
    assert code == 2
    assert_one_error(err, "irpass.toml", "no_such_key")
    (cli_env / "irpass.toml").write_text("opt_level = [\n")
    code, _, err = run(capsys, "passes")
    assert code == 2
    assert_one_error(err, "irpass.toml")


def test_config_file_settings_are_used(capsys, cli_env):
    (cli_env / "irpass.toml").write_text('pipeline = "Identity"\n')
    code, out, err = run(capsys, "optimize", "--example", "mlp")
    assert code == 0, err
    assert "1 run: Identity" in err
    irpass.assert_structural_equal(irpass.parse(out), models.mlp())
    # the command line wins over the file
    code, _, err = run(capsys, "optimize", "--example", "mlp", "--pipeline", "InferType")
    assert code == 0, err
    assert "1 run: InferType" in err


# -- instruments ----------------------------------------------------------------------------


def test_timing_instrument_prints_its_table(capsys):
    code, out, err = run(capsys, "optimize", "-q", "--example", "mlp", "--instrument", "timing")
    assert code == 0, err
    lines = err.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("Pass "))
    assert "Total us" in lines[header]
    assert any(line.strip().startswith("InferType") for line in lines[header + 1 :])
    irpass.parse(out)  # stdout holds only the module


def test_dump_ir_instrument_writes_files(capsys, cli_env):
    dump = cli_env / "dump"
    code, out, err = run(
        capsys,
        "optimize",
        "-q",
        "--example",
        "mlp",
        "--pipeline",
        "Identity,InferType",
        "--instrument",
        f"dump-ir:{dump}",
    )
    assert code == 0, err
    files = sorted(p.name for p in dump.glob("*.txt"))
    assert files[:2] == ["000_Identity.txt", "001_InferType.txt"]
    # the weights are elided by default (print.elide_constants); every value when asked
    assert "const(float32, (128, 64), ...)" in (dump / "000_Identity.txt").read_text()
    (cli_env / "irpass.toml").write_text('[config]\n"print.elide_constants" = -1\n')
    code, out, err = run(
        capsys,
        "optimize",
        "-q",
        "--example",
        "mlp",
        "--pipeline",
        "Identity,InferType",
        "--instrument",
        f"dump-ir:{dump}",
    )
    assert code == 0, err
    irpass.assert_structural_equal(
        irpass.parse((dump / "000_Identity.txt").read_text()), models.mlp()
    )


def test_print_instruments_keep_stdout_clean(capsys):
    code, out, err = run(
        capsys,
        "optimize",
        "-q",
        "--example",
        "mlp",
        "--pipeline",
        "Identity",
        "--instrument",
        "print-before",
    )
    assert code == 0, err
    irpass.assert_structural_equal(irpass.parse(out), models.mlp())
    assert "def @main" in err


# -- listings ---------------------------------------------------------------------------


def _row(out: str, first: str) -> list[str]:
    """The whitespace-split cells of the line whose first cell is ``first``."""
    for line in out.splitlines():
        if line.split()[:1] == [first]:
            return line.split()
    raise AssertionError(f"no row {first!r} in:\n{out}")


def test_passes_lists_every_pass(capsys):
    code, out, err = run(capsys, "-p", PLUGIN, "passes")
    assert code == 0, err
    assert out.splitlines()[0].split() == ["pass", "opt_level", "required", "plugin", "description"]
    assert _row(out, "InferType")[1:4] == ["0", "-", "std"]
    assert _row(out, "Identity")[3] == "irpass"
    assert _row(out, "ScaleOutput")[1:4] == ["0", "-", PLUGIN]
    assert "Doubles every function's result" in out
    scale_by = _row(out, "ScaleBy")
    assert scale_by[1:4] == ["-", "-", PLUGIN]
    assert "needs arguments: ScaleBy(k: float, shift: int = 0)" in out
    assert _row(out, "Broken")[1] == "?"
    assert "factory crashed" in out


def test_passes_without_std(capsys):
    code, out, _ = run(capsys, "-p", "no:std", "passes")
    assert code == 0
    assert "InferType" not in out
    assert _row(out, "PrintIR")[3] == "irpass"


def test_plugins_listing(capsys):
    code, out, err = run(capsys, "plugins")
    assert code == 0, err
    assert out.splitlines()[0].split()[:2] == ["plugin", "status"]
    std = _row(out, "std")
    assert std[1] == "loaded"
    assert "irpass" in std  # its distribution
    assert _row(out, "irpass")[1] == "core"


def test_plugins_verbose_blocked_and_failed(capsys):
    code, out, err = run(capsys, "-p", "no:std", "-p", BROKEN_PLUGIN, "plugins", "-v")
    assert code == 0
    assert err.startswith("irpass: warning: ") and BROKEN_PLUGIN in err
    assert len([line for line in err.splitlines() if line.startswith("irpass: warning:")]) == 1
    lines = out.splitlines()
    std = next(i for i, line in enumerate(lines) if line.split()[:1] == ["std"])
    assert lines[std].split()[1] == "blocked"
    assert lines[std + 1].startswith("    ")  # the reason, indented
    broken = next(i for i, line in enumerate(lines) if line.split()[:1] == [BROKEN_PLUGIN])
    assert lines[broken].split()[1] == "failed"
    assert "irpass_cli_no_such_module" in lines[broken + 1]
    assert any(line.strip() == "instrument: timing" for line in lines)  # -v contributions


def test_plugins_summary_counts_kinds(capsys):
    code, out, _ = run(capsys, "--plugin", PLUGIN, "plugins")
    assert code == 0
    assert "7 passes" in " ".join(_row(out, PLUGIN))
    std, row = irpass_std.plugin, " ".join(_row(out, "std"))
    assert f"{len(std.irpass_register_passes())} passes," in row
    assert f"{len(std.irpass_register_config_options())} config options," in row
    assert f"{len(std.irpass_pipeline_passes())} pipeline insertions" in row


def test_pipeline_plan(capsys):
    code, out, err = run(capsys, "pipeline", "--opt-level", "3")
    assert code == 0, err
    assert out.startswith("default pipeline at opt_level 3")
    row = _row(out, "1")
    assert row[1:3] == ["InferType", "start"]
    assert row[-1] == "std"


def test_pipeline_without_plugins_is_empty(capsys):
    code, out, _ = run(capsys, "-p", "no:std", "pipeline")
    assert code == 0
    assert out.startswith("default pipeline at opt_level 2: 0 passes")


def test_pipeline_tree_of_a_pipeline_string(capsys):
    code, out, err = run(capsys, "pipeline", "--pipeline", "InferType,seq(Identity,PrintIR)")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "pipeline 'InferType,seq(Identity,PrintIR)'"
    width = lines[1].index("opt_level")
    names = [line[:width].rstrip() for line in lines[2:]]
    assert names[0].endswith("(Sequential)") and not names[0].startswith(" ")
    assert names[1] == "  InferType"
    assert names[2].endswith("(Sequential)") and names[2].startswith("  ")
    assert names[3:] == ["    Identity", "    PrintIR"]
    assert _row(out, "InferType")[-1] == "std"


def test_config_shows_values_and_sources(capsys, cli_env):
    code, out, err = run(capsys, "config")
    assert code == 0, err
    assert out.splitlines()[0].split() == ["config_file", "=", "(unset)", "[default]"]
    assert _row(out, "opt_level") == ["opt_level", "=", "2", "[default]"]
    toml = cli_env / "irpass.toml"
    toml.write_text("opt_level = 3\n")
    code, out, _ = run(capsys, "config")
    assert code == 0
    assert _row(out, "config_file")[2] == f'"{toml}"'
    line = next(line for line in out.splitlines() if line.startswith("opt_level"))
    assert "= 3" in line and "irpass.toml" in line
    code, out, _ = run(capsys, "config", "-O", "1", "--disable-pass", "Identity")
    line = next(line for line in out.splitlines() if line.startswith("opt_level"))
    assert "= 1" in line and "cli" in line
    line = next(line for line in out.splitlines() if line.startswith("disabled_pass"))
    assert '"Identity"' in line


def test_config_is_printed_before_its_errors(capsys, cli_env):
    (cli_env / "irpass.toml").write_text('disabled_pass = ["NoSuchPass"]\n')
    code, out, err = run(capsys, "config")
    assert code == 2
    assert "NoSuchPass" in out
    assert_one_error(err, "NoSuchPass")


# -- helpers ----------------------------------------------------------------------------


def test_split_names():
    assert split_names(None) is None
    assert split_names(["A,B", " C ", "D,,"]) == ["A", "B", "C", "D"]


def test_compare_outputs():
    a = np.zeros((2, 3), np.float32)
    assert compare_outputs(a, a + 1e-7, 1e-5, 1e-6) == []
    (problem,) = compare_outputs(a, a + 0.5, 1e-5, 1e-6)
    assert "6 of 6" in problem and "max abs error 0.5" in problem
    (problem,) = compare_outputs((a, a), (a, a[:1]), 1e-5, 1e-6)
    assert problem.startswith("output[1]: shape (2, 3) became (1, 3)")
    assert compare_outputs((a,), (a, a), 1e-5, 1e-6) == ["the result has 2 output(s) instead of 1"]


def test_count_ops_counts_calls_inside_fused_functions():
    x = irpass.var("x", shape=(2,))
    mod = irpass.IRModule.from_expr(irpass.op.add(irpass.op.add(x, x), x))
    counts = count_ops(mod)
    assert (counts.calls, counts.fused_calls, counts.fused_functions) == (2, 0, 0)
    assert dict(counts.ops) == {"add": 2}
    # one fused function holding two op calls, called once (a call of a function, not an op)
    p = irpass.var("p", shape=(2,))
    fused = irpass.Function([p], irpass.op.nn.relu(irpass.op.add(p, p)), None, {"Primitive": 1})
    y = irpass.var("y", shape=(2,))
    mod = irpass.IRModule.from_expr(irpass.op.negative(irpass.Call(fused, [y])))
    counts = count_ops(mod)
    assert (counts.calls, counts.fused_calls, counts.fused_functions) == (3, 2, 1)
    assert counts.text() == "3 (2 in 1 fused function)"
    assert dict(counts.ops) == {"add": 1, "nn.relu": 1, "negative": 1}


def test_count_ops_walks_any_depth():
    x = irpass.var("x", shape=(2,))
    body = x
    for _ in range(100_000):  # far deeper than Python's recursion limit
        body = irpass.op.negative(body)
    assert count_ops(irpass.IRModule.from_expr(body)).calls == 100_000


def test_optimize_file_returns_a_record_instead_of_raising(cli_env):
    from irpass.cli.batch import optimize_file

    irpass.save(models.mlp(), cli_env / "mlp.txt")
    rec = optimize_file("mlp.txt", "out.txt", ["--pipeline", "FuseOps"])
    assert rec["status"] == "ok" and rec["output"] == "out.txt"
    assert rec["fused"]["after"]["functions"] > 0
    assert "Primitive=1" in irpass.load(cli_env / "out.txt").astext()
    (cli_env / "bad.txt").write_text("def @main(")
    rec = optimize_file("bad.txt", "bad_out.txt")
    assert rec["status"] == "failed" and rec["exit"] == 2 and "bad.txt:1:" in rec["error"]
    assert not (cli_env / "bad_out.txt").exists()


# -- as a program -----------------------------------------------------------------------


def _env() -> dict[str, str]:
    """A child irpass's environment: irpass's own plugins, whatever packs are installed."""
    return plugin_environ(
        OWN_PLUGINS, {k: v for k, v in os.environ.items() if not k.startswith("IRPASS_")}
    )


def test_python_dash_m_version(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "irpass", "--version"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"irpass {irpass.__version__}")


def test_python_dash_m_optimize(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "irpass", "optimize", "-q", "--example", "mlp"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert same_outputs(models.mlp(), irpass.parse(proc.stdout))
    proc = subprocess.run(
        [sys.executable, "-m", "irpass", "optimize", "missing.txt"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("irpass: error: ") and "Traceback" not in proc.stderr


def test_each_test_starts_in_an_empty_directory(cli_env):
    # guards the fixture: every test starts in its own empty directory
    assert Path.cwd() == cli_env
    assert list(cli_env.iterdir()) == []
