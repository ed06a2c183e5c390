"""Fast start: what ``import irpass`` and the listing commands import, and the lazy
mechanisms behind it (PEP 562 package attributes, numpy on first use, LazyPass).

Which modules a fresh process imports is behaviour (a subprocess reports its
``sys.modules``); how long that takes is measured in ``benchmarks/bench_startup.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import irpass
import irpass_std.plugin
import pytest
from irpass.testing.plugins import OWN_PLUGINS, plugin_environ
from irpass.transform import LazyPass, get_pass, get_pass_entry, register_pass


def _fresh(code: str) -> dict:
    """Run ``code`` in a fresh interpreter (irpass's own plugins only); it prints one JSON
    value, returned here. ``loaded(name)`` inside tells whether a module is imported."""
    prelude = "import json, sys\ndef loaded(name):\n    return name in sys.modules\n"
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=plugin_environ(OWN_PLUGINS),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- what a fresh process imports -----------------------------------------------------------


def test_import_irpass_imports_no_numpy_no_ir_and_no_plugins():
    got = _fresh(
        """
        import irpass
        print(json.dumps({m: loaded(m) for m in (
            "numpy", "irpass.ir.nodes", "irpass.op", "irpass.transform", "irpass.plugins",
            "importlib.metadata")}))
        """
    )
    assert not any(got.values()), got


def test_every_public_name_of_irpass_resolves_on_first_use():
    got = _fresh(
        """
        import irpass
        missing = [n for n in irpass.__all__ if not hasattr(irpass, n)]
        ns = {}
        exec("from irpass import *", ns)
        print(json.dumps({"missing": missing, "star": sorted(set(irpass.__all__) - set(ns)),
                          "dir": sorted(set(irpass.__all__) - set(dir(irpass))),
                          "version": irpass.__version__}))
        """
    )
    assert got["missing"] == got["star"] == got["dir"] == []
    assert got["version"] == irpass.__version__


def test_building_and_checking_ir_without_constants_imports_no_numpy():
    got = _fresh(
        """
        from irpass.ir import Call, Function, IRModule, Op, TensorType, Var, structural_equal
        from irpass.ir.op import attr_bool, attr_dims, attr_float, attr_int, attr_ints
        x = Var("x", TensorType([1, 8], "float32"))
        conv = [attr_int(3, "a"), attr_float(2, "b"), attr_bool(1, "c"), attr_ints([1, 2], "d"),
                attr_dims(4, "e")]
        print(json.dumps({"numpy": loaded("numpy"), "conv": conv}))
        """
    )
    assert got == {"numpy": False, "conv": [3, 2.0, True, [1, 2], [4]]}


def test_numpy_values_are_still_accepted_once_numpy_is_in_use():
    got = _fresh(
        """
        import numpy as np
        from irpass.ir import TensorType, TupleGetItem, Tuple, Var, const
        from irpass.ir.attrs import normalize_attr_value
        from irpass.ir.op import attr_bool, attr_int, attr_ints
        t = TensorType([np.int64(2), 3], np.dtype("float16"))
        item = TupleGetItem(Tuple([Var("a")]), np.int32(0))
        print(json.dumps({"shape": list(t.shape), "dtype": t.dtype, "index": item.index,
                          "attrs": [attr_int(np.int8(5), "a"), attr_bool(np.bool_(True), "b"),
                                    attr_ints(np.array([1, 2]), "c"),
                                    normalize_attr_value(np.float32(0.5), "d")],
                          "const": str(const(np.ones(2, "int64")).type)}))
        """
    )
    assert got == {
        "shape": [2, 3],
        "dtype": "float16",
        "index": 0,
        "attrs": [5, True, [1, 2], 0.5],
        "const": "Tensor[(2,), int64]",
    }


def test_the_op_set_is_loaded_when_an_op_is_first_named():
    got = _fresh(
        """
        import irpass.ir as ir
        before = loaded("irpass.op")
        ops = ir.list_ops()
        mod = ir.parse("def @main(%x: Tensor[(2,), float32]) { add(%x, %x) }")
        print(json.dumps({"before": before, "has_add": "add" in ops, "n": len(ops),
                          "text": mod.astext()}))
        """
    )
    assert got["before"] is False
    assert got["has_add"] and got["n"] > 100
    assert "add(%x, %x)" in got["text"]


def test_the_op_set_outlives_a_registry_snapshot_taken_before_it_was_loaded():
    got = _fresh(
        """
        from irpass.plugins import PluginSettings
        from irpass.testing.plugins import isolated_plugins
        before = loaded("irpass.op")
        with isolated_plugins(PluginSettings(autoload=False)):
            from irpass import op
            from irpass.ir import var
            op.add(var("x", shape=(2,)), var("y", shape=(2,)))
        from irpass.ir import Op, list_ops
        print(json.dumps({"before": before, "add": Op.get("add").name, "n": len(list_ops())}))
        """
    )
    assert got["before"] is False and got["add"] == "add" and got["n"] > 100


def test_a_plugin_op_cannot_take_a_core_op_name_before_the_op_set_is_loaded():
    got = _fresh(
        """
        from irpass.ir.op import OpPattern, register_op
        try:
            register_op("add", num_inputs=2, type_rel=lambda *a: None,
                        kernel=lambda *a: None, pattern=OpPattern.ELEMWISE, owner="pack")
            print(json.dumps("registered"))
        except ValueError as exc:
            print(json.dumps(str(exc)))
        """
    )
    assert "already registered by 'irpass'" in got


def test_a_plugin_op_is_registered_without_loading_the_op_set():
    got = _fresh(
        """
        from irpass.ir.op import OpPattern, register_op
        register_op("pack.thing", num_inputs=1, type_rel=lambda *a: None,
                    kernel=lambda *a: None, pattern=OpPattern.OPAQUE, owner="pack")
        print(json.dumps({"op set": loaded("irpass.op"), "numpy": loaded("numpy")}))
        """
    )
    assert got == {"op set": False, "numpy": False}


def test_the_core_op_names_are_the_op_sets():
    import irpass.op  # noqa: F401  (registers the op set)
    from irpass.ir.core_op_names import CORE_OP_NAMES
    from irpass.ir.op import _CORE_OPS

    assert set(_CORE_OPS) == set(CORE_OP_NAMES)


def test_a_function_named_as_its_submodule_stays_the_function():
    got = _fresh(
        """
        import irpass.ir.well_formed, irpass.ir.describe  # binds the submodules first
        import irpass.ir as ir
        print(json.dumps([callable(ir.well_formed), type(ir.well_formed).__name__,
                          type(ir.describe).__name__]))
        """
    )
    assert got == [True, "function", "function"]


def test_version_imports_no_numpy_and_no_plugin():
    got = _fresh(
        """
        import contextlib, io
        from irpass.cli.main import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["--version"])
        print(json.dumps({"code": code, "out": out.getvalue(), "numpy": loaded("numpy"),
                          "std": loaded("irpass_std.plugin"),
                          "metadata": loaded("importlib.metadata")}))
        """
    )
    assert got["code"] == 0 and got["out"].startswith(f"irpass {irpass.__version__} from ")
    assert got["numpy"] is False and got["std"] is False and got["metadata"] is False


def test_the_version_is_the_installed_distributions():
    from importlib.metadata import version

    assert irpass.__version__ == version("irpass")


def test_std_declarations_list_without_importing_a_pass_module():
    # the registry alone, as the plugin manager feeds it: names, opt levels, requirements
    # and descriptions come from the declarations
    got = _fresh(
        """
        from irpass.transform import register_pass, get_pass_entry
        from irpass_std.plugin import PASSES
        for p in PASSES:
            register_pass(p, owner="std")
        rows = {p.name: [e.lazy.info.opt_level, list(e.lazy.info.required), e.lazy.description]
                for p in PASSES if (e := get_pass_entry(p.name)).lazy is not None}
        imported = sorted(m for m in sys.modules if m.startswith("irpass_std.")
                          and m not in ("irpass_std.plugin", "irpass_std.options"))
        print(json.dumps({"rows": rows, "imported": imported}))
        """
    )
    assert got["imported"] == []
    assert got["rows"]["FoldConstant"][:2] == [2, []]
    assert got["rows"]["FuseOps"][:2] == [1, ["InferType"]]
    assert len(got["rows"]) == len(irpass_std.plugin.PASSES)


def test_irpass_passes_imports_no_numpy():
    got = _fresh(
        """
        import contextlib, io
        from irpass.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["passes"])
        print(json.dumps({"code": code, "numpy": loaded("numpy")}))
        """
    )
    assert got == {"code": 0, "numpy": False}


# -- LazyPass --------------------------------------------------------------------------------


@pytest.fixture
def pack(tmp_path, monkeypatch):
    """A module ``lazy_pack_mod`` on sys.path defining a pass ``Twice`` (opt 2, needs
    InferType), not imported yet."""
    (tmp_path / "lazy_pack_mod.py").write_text(
        textwrap.dedent(
            '''
            from irpass.transform import module_pass

            @module_pass(opt_level=2, name="Twice", required=["InferType"])
            def Twice(mod, ctx):
                """Return the module."""
                return mod
            '''
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "lazy_pack_mod"
    sys.modules.pop("lazy_pack_mod", None)


def test_a_lazy_pass_is_imported_when_first_made(pack):
    register_pass(
        LazyPass(f"{pack}:Twice", opt_level=2, required=["InferType"], description="Twice.")
    )
    entry = get_pass_entry("Twice")
    assert pack not in sys.modules
    assert entry.lazy is not None and entry.lazy.info.required == ("InferType",)
    assert entry.owner == pack and entry.origin == f"{pack}.Twice"
    made = get_pass("Twice")
    assert pack in sys.modules
    assert made.info.name == "Twice" and made.info.opt_level == 2
    assert irpass.transform.Twice() is sys.modules[pack].Twice  # the instance it declares


def test_a_declaration_that_disagrees_with_its_pass_is_an_error_naming_both(pack):
    register_pass(LazyPass(f"{pack}:Twice", opt_level=1, description="Twice."))
    with pytest.raises(TypeError, match=r"declared as opt_level=1, required=\[\].*lazy_pack_mod"):
        get_pass("Twice")


def test_a_lazy_pass_whose_module_is_missing_names_the_pass_and_target():
    register_pass(LazyPass("no_such_pack.mod:Gone", opt_level=0))
    with pytest.raises(ImportError, match=r"pass 'Gone' is declared at 'no_such_pack.mod:Gone'"):
        get_pass("Gone")


@pytest.mark.parametrize("target", ["no_colon", "mod:", ":Attr", "mod:not an attr", 3])
def test_a_lazy_pass_target_must_be_module_colon_attr(target):
    with pytest.raises(ValueError, match="target must be 'package.module:attr'"):
        LazyPass(target, opt_level=0)


def test_std_declarations_match_the_passes_they_declare():
    made = {}
    for decl in irpass_std.plugin.PASSES:
        args = {"desired_layouts": {"nn.conv2d": ["NHWC"]}} if decl.name == "ConvertLayout" else {}
        made[decl.name] = decl(**args)  # the declaration checks itself against the pass
        assert decl.description.strip() and "\n" not in decl.description
    assert set(made) == {d.name for d in irpass_std.plugin.PASSES}


def test_std_options_are_the_pass_modules_options():
    import importlib
    import pkgutil

    import irpass_std
    from irpass.ir.dataflow_pattern import DEFAULT_MAX_ROUNDS
    from irpass_std import options

    declared, read = [], set()
    for info in pkgutil.iter_modules(irpass_std.__path__):
        if info.name != "options":
            module = importlib.import_module(f"irpass_std.{info.name}")
            declared += getattr(module, "CONFIG_OPTIONS", [])
            # the keys a pass module reads its options by
            read |= {v for v in vars(module).values()
                     if isinstance(v, str) and v.startswith("std.") and v.count(".") == 2}
    keys = sorted(o.key for o in options.CONFIG_OPTIONS)
    # each option is listed by its pass's module, once, and read by its key
    assert len(keys) == 8 and sorted(o.key for o in declared) == keys
    assert read == set(keys)
    assert options.options_of("Canonicalize")[0].default == DEFAULT_MAX_ROUNDS


def test_the_text_format_suffixes_are_the_serializers():
    from irpass import formats
    from irpass.ir import serialize

    assert formats.TEXT_FORMAT.suffixes == serialize.TEXT_SUFFIXES


# -- LazyInstrument ----------------------------------------------------------------------------


def test_loading_the_instruments_plugin_imports_no_instrument():
    got = _fresh(
        """
        from irpass.plugins import load
        load()
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("irpass.instrument."))))
        """
    )
    assert got == ["irpass.instrument.base", "irpass.instrument.registry"]


def test_a_lazy_instrument_is_imported_when_first_asked_for(tmp_path, monkeypatch):
    from irpass.instrument import (
        LazyInstrument,
        PassInstrument,
        get_instrument,
        get_instrument_entry,
        register_instrument,
    )

    (tmp_path / "lazy_inst_mod.py").write_text(
        "from irpass.instrument import PassInstrument\n"
        "class Probe(PassInstrument):\n"
        '    """Probes."""\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    declared = LazyInstrument("lazy_inst_mod:Probe", "Probes passes.")
    entry = register_instrument("probe", declared, owner="tests")
    try:
        assert entry.description == "Probes passes." and "lazy_inst_mod" not in sys.modules
        assert isinstance(get_instrument("probe"), PassInstrument)
        assert get_instrument_entry("probe").factory is sys.modules["lazy_inst_mod"].Probe
        # the same declaration again is the same registration
        assert register_instrument("probe", declared, owner="tests").declared is declared
    finally:
        sys.modules.pop("lazy_inst_mod", None)


def test_a_lazy_instrument_that_cannot_be_imported_names_it():
    from irpass.instrument import LazyInstrument, get_instrument, register_instrument

    register_instrument("gone", LazyInstrument("no_such_pack:Gone", "Gone."), owner="tests")
    with pytest.raises(ImportError, match=r"instrument 'gone' \(from 'tests'\).*no_such_pack"):
        get_instrument("gone")
    with pytest.raises(ValueError, match="target must be 'package.module:attr'"):
        LazyInstrument("no_colon", "x")
