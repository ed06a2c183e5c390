"""Control flow written back to ONNX: an IR ``If`` as an ONNX ``If`` (branches reading the
enclosing graph's values, nested), a loop in the recursive form (what the importer makes of a
Loop or Scan it does not unroll) as an ONNX ``Loop``.

Each model goes import -> (-O3) -> export -> ``onnx.checker`` (full check) -> onnxruntime,
whose outputs must equal the original model's in onnxruntime, and the export is imported
again and evaluated by irpass with the same result."""

from __future__ import annotations

import irpass
import numpy as np
import onnx
import pytest
from irpass import op
from irpass.ir import Call, Function, If, Op, register_op, var
from irpass.ir.op import OpPattern, unregister_op
from irpass.transform import PassContext, default_pipeline, get_pass
from irpass_onnx import OnnxExportError, from_onnx, to_onnx
from irpass_onnx.export.graph import MAX_NESTING
from irpass_onnx.testing import run_onnxruntime
from onnx import TensorProto, numpy_helper
from onnx_cases import rand
from test_onnx_import_control import graph, loop_body, model, node, vi

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def round_trip(m: onnx.ModelProto, feeds: list[dict[str, np.ndarray]], optimize: bool,
               opset: int | None = None) -> onnx.ModelProto:
    """Export ``m`` (after -O3 if ``optimize``) and check the export against ``m`` in
    onnxruntime and, imported again, in irpass, for every feed dict."""
    mod = from_onnx(m)
    if optimize:
        with PassContext(opt_level=3):
            mod = default_pipeline(3)(mod)
    out = to_onnx(mod, opset=opset)
    onnx.checker.check_model(out, full_check=True)
    again = from_onnx(out)
    for f in feeds:
        want = run_onnxruntime(m, f)
        got = run_onnxruntime(out, {i.name: f[i.name] for i in out.graph.input})
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)
        back = irpass.evaluate(again, **{i.name: f[i.name] for i in out.graph.input})
        back = list(back) if isinstance(back, tuple) else [back]
        for g, w in zip(back, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)
    return out


def op_types(g: onnx.GraphProto) -> list[str]:
    """The op types of ``g`` and of the subgraphs nested in it."""
    out, stack = [], [g]
    while stack:
        cur = stack.pop()
        for n in cur.node:
            out.append(n.op_type)
            stack.extend(a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH)
    return out


# -- If -------------------------------------------------------------------------------------


def if_model(opset: int = 16) -> onnx.ModelProto:
    """``h = relu(x)`` outside; the then branch gives ``(h * x, -x)``, the else branch
    ``(h + w, |x|)``: both read values of the enclosing graph (a graph input, a computed
    value, a weight)."""
    then = graph([node("Mul", ["h", "x"], ["t0"]), node("Neg", ["x"], ["t1"])], [],
                 [vi("t0", F, [2, 3]), vi("t1", F, [2, 3])], name="then")
    other = graph([node("Add", ["h", "w"], ["e0"]), node("Abs", ["x"], ["e1"])], [],
                  [vi("e0", F, [2, 3]), vi("e1", F, [2, 3])], name="else")
    return model([node("Relu", ["x"], ["h"]),
                  node("If", ["c"], ["y", "z"], then_branch=then, else_branch=other),
                  node("Sigmoid", ["y"], ["s"])],
                 [vi("c", B, []), vi("x", F, [2, 3])], [vi("s", F, [2, 3]), vi("z", F, [2, 3])],
                 {"w": rand(2, 3, seed=9)}, opset=opset)


def if_feeds(seed: int) -> list[dict[str, np.ndarray]]:
    return [{"c": np.array(c), "x": rand(2, 3, seed=seed)} for c in (True, False)]


@pytest.mark.parametrize("optimize", [False, True])
def test_an_if_exports_as_an_if_node_whose_branches_read_the_enclosing_graph(optimize):
    out = round_trip(if_model(), if_feeds(1), optimize)
    assert op_types(out.graph).count("If") == 1


@pytest.mark.parametrize("opset", [9, 11, 21])
def test_an_if_exports_at_old_and_new_opsets(opset):
    out = round_trip(if_model(opset=max(opset, 11)), if_feeds(2), optimize=True, opset=opset)
    assert out.opset_import[0].version == opset
    assert "If" in op_types(out.graph)


def nested_if_model() -> onnx.ModelProto:
    """An If in the then branch of an If; the inner branches read a graph input, a value of
    the main graph and a value of the outer branch."""
    inner_then = graph([node("Mul", ["a", "h"], ["it"])], [], [vi("it", F, [3])],
                       name="inner_then")
    inner_else = graph([node("Sub", ["a", "x"], ["ie"])], [], [vi("ie", F, [3])],
                       name="inner_else")
    then = graph([node("Exp", ["x"], ["a"]),
                  node("If", ["d"], ["t"], then_branch=inner_then, else_branch=inner_else)],
                 [], [vi("t", F, [3])], name="then")
    other = graph([node("Tanh", ["h"], ["e"])], [], [vi("e", F, [3])], name="else")
    return model([node("Sigmoid", ["x"], ["h"]),
                  node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
                 [vi("c", B, []), vi("d", B, []), vi("x", F, [3])], [vi("y", F, [3])])


@pytest.mark.parametrize("optimize", [False, True])
def test_nested_ifs_export_as_nested_if_nodes(optimize):
    feeds = [{"c": np.array(c), "d": np.array(d), "x": rand(3, seed=3)}
             for c in (True, False) for d in (True, False)]
    out = round_trip(nested_if_model(), feeds, optimize)
    assert op_types(out.graph).count("If") == 2


def test_a_peephole_does_not_fold_a_value_a_branch_reads():
    # the conv's bias add is read by the branch: the Conv may take the bias, but the branch
    # must read the biased value, and the bias add inside the branch stays in the branch
    then = graph([node("Add", ["conv", "b2"], ["t"])], [], [vi("t", F, [1, 2, 3, 3])],
                 name="then")
    other = graph([node("Mul", ["conv", "b2"], ["e"])], [], [vi("e", F, [1, 2, 3, 3])],
                  name="else")
    m = model([node("Conv", ["x", "w"], ["conv0"]), node("Add", ["conv0", "b"], ["conv"]),
               node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
              [vi("c", B, []), vi("x", F, [1, 1, 3, 3])], [vi("y", F, [1, 2, 3, 3])],
              {"w": rand(2, 1, 1, 1, seed=4), "b": rand(1, 2, 1, 1, seed=5),
               "b2": rand(1, 2, 1, 1, seed=6)})
    feeds = [{"c": np.array(c), "x": rand(1, 1, 3, 3, seed=7)} for c in (True, False)]
    round_trip(m, feeds, optimize=True)


# -- Loop and Scan ------------------------------------------------------------------------------


def test_a_loop_with_a_run_time_trip_count_and_condition_exports_as_a_loop_node():
    # while i < M and min(v) < 10: v += x * i
    body = loop_body([node("ReduceMin", ["v_out"], ["lo"], keepdims=0),
                      node("Less", ["lo", "ten"], ["more"])], cond_out="more", scan=False)
    body.initializer.append(numpy_helper.from_array(np.float32(10), "ten"))
    m = model([node("Loop", ["M", "go", "v0"], ["v"], body=body)],
              [vi("M", I64, []), vi("go", B, []), vi("x", F, [3]), vi("v0", F, [3])],
              [vi("v", F, [3])])
    feeds = [{"M": np.array(trip, np.int64), "go": np.array(go),
              "x": np.array([1, 2, 3], np.float32), "v0": rand(3, seed=trip)}
             for trip in (0, 2, 7, 50) for go in (True, False)]
    for optimize in (False, True):
        out = round_trip(m, feeds, optimize)
        assert op_types(out.graph).count("Loop") == 1


def test_ten_thousand_round_loops_export_and_run():
    m = model([node("Loop", ["M", "", "v0"], ["v"], body=loop_body(scan=False))],
              [vi("M", I64, []), vi("x", F, [3]), vi("v0", F, [3])], [vi("v", F, [3])])
    feeds = [{"M": np.array(10_000, np.int64), "x": rand(3, seed=8) * np.float32(1e-4),
              "v0": rand(3, seed=9)}]
    out = round_trip(m, feeds, optimize=True)
    assert "Loop" in op_types(out.graph)
    # with a scan output of 10^4 rows (a trip count known at import)
    m = model([node("Loop", ["M", "", "v0"], ["v", "rows"], body=loop_body())],
              [vi("x", F, [3]), vi("v0", F, [3])],
              [vi("v", F, [3]), vi("rows", F, [10_000, 3])], {"M": np.int64(10_000)})
    out = round_trip(m, [{k: feeds[0][k] for k in ("x", "v0")}], optimize=True)
    assert "Loop" in op_types(out.graph)


@pytest.mark.parametrize("opset", [9, 16])
def test_a_loop_with_scan_outputs_exports_them_as_scan_outputs_of_a_loop_node(opset):
    # 600 rounds of a 5-node body: too many to unroll, so the importer makes the recursive
    # form with a buffer for the scan output, written row by row; ONNX writes it as a scan
    # output of a Loop of 600 rounds (no ScatterND, which opset 9 lacks, and no buffer copy
    # per round)
    m = model([node("Loop", ["M", "", "v0"], ["v", "rows"], body=loop_body())],
              [vi("x", F, [3]), vi("v0", F, [3])], [vi("v", F, [3]), vi("rows", F, [600, 3])],
              {"M": np.int64(600)})
    feeds = [{"x": rand(3, seed=10) * np.float32(1e-2), "v0": rand(3, seed=11)}]
    for optimize in (False, True):
        out = round_trip(m, feeds, optimize, opset=opset)
        assert op_types(out.graph).count("Loop") == 1
        assert "ScatterND" not in op_types(out.graph)


def test_a_scan_output_written_in_reverse_stays_a_buffer_carried_through_the_loop():
    body = graph([node("Add", ["s_in", "row"], ["s_out"]), node("Cos", ["s_out"], ["o"])],
                 [vi("s_in", F, [3]), vi("row", F, [3])],
                 [vi("s_out", F, [3]), vi("o", F, [3])], name="scan_body")
    m = model([node("Scan", ["s0", "xs"], ["s", "a"], body=body, num_scan_inputs=1,
                    scan_output_directions=[1])],
              [vi("s0", F, [3]), vi("xs", F, [600, 3])], [vi("s", F, [3]), vi("a", F, [600, 3])])
    feeds = [{"s0": rand(3, seed=23), "xs": rand(600, 3, seed=24) * np.float32(1e-2)}]
    out = round_trip(m, feeds, optimize=True)
    assert {"Loop", "ScatterND"} <= set(op_types(out.graph))


def test_a_long_scan_exports_as_a_loop_node():
    # a scan over 400 rows (a length the model gives as its input's shape), reversed, with
    # a state and two scan outputs, one along axis 1
    body = graph([node("Add", ["s_in", "row"], ["s_out"]), node("Mul", ["s_out", "k"], ["o1"]),
                  node("Sin", ["row"], ["o2"])],
                 [vi("s_in", F, [3]), vi("row", F, [3])],
                 [vi("s_out", F, [3]), vi("o1", F, [3]), vi("o2", F, [3])], name="scan_body")
    m = model([node("Scan", ["s0", "xs"], ["s", "a", "b"], body=body, num_scan_inputs=1,
                    scan_input_directions=[1], scan_output_axes=[0, 1])],
              [vi("s0", F, [3]), vi("xs", F, [400, 3]), vi("k", F, [3])],
              [vi("s", F, [3]), vi("a", F, [400, 3]), vi("b", F, [3, 400])])
    feeds = [{"s0": rand(3, seed=12), "xs": rand(400, 3, seed=13) * np.float32(1e-2),
              "k": rand(3, seed=14)}]
    for optimize in (False, True):
        out = round_trip(m, feeds, optimize)
        assert "Loop" in op_types(out.graph) and "Scan" not in op_types(out.graph)


def test_an_if_inside_a_loop_body_exports():
    # while i < M: v = v + x * i if sum(v) > 0 else v - x
    inner_then = graph([node("Add", ["v_in", "d"], ["a"])], [], [vi("a", F, [3])], name="t")
    inner_else = graph([node("Sub", ["v_in", "x"], ["b"])], [], [vi("b", F, [3])], name="e")
    body = graph([node("Cast", ["i"], ["fi"], to=F), node("Mul", ["x", "fi"], ["d"]),
                  node("ReduceSum", ["v_in"], ["tot"], keepdims=0),
                  node("Greater", ["tot", "zero"], ["pos"]),
                  node("If", ["pos"], ["v_out"], then_branch=inner_then,
                       else_branch=inner_else),
                  node("Identity", ["c_in"], ["c_out"])],
                 [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [3])],
                 [vi("c_out", B, []), vi("v_out", F, [3])], {"zero": np.float32(0)},
                 name="body")
    m = model([node("Loop", ["M", "", "v0"], ["v"], body=body)],
              [vi("M", I64, []), vi("x", F, [3]), vi("v0", F, [3])], [vi("v", F, [3])])
    feeds = [{"M": np.array(trip, np.int64), "x": rand(3, seed=15), "v0": rand(3, seed=16)}
             for trip in (0, 5, 40)]
    for optimize in (False, True):
        out = round_trip(m, feeds, optimize)
        assert {"Loop", "If"} <= set(op_types(out.graph))


def test_a_loop_inside_a_loop_body_exports_as_nested_loop_nodes():
    # for i < M: (for j < N: w += x * j); v = w / 2
    inner = graph([node("Cast", ["j"], ["fj"], to=F), node("Mul", ["x", "fj"], ["d"]),
                   node("Add", ["w_in", "d"], ["w_out"]), node("Identity", ["e_in"], ["e_out"])],
                  [vi("j", I64, []), vi("e_in", B, []), vi("w_in", F, [3])],
                  [vi("e_out", B, []), vi("w_out", F, [3])], name="inner")
    body = graph([node("Loop", ["N", "", "v_in"], ["w"], body=inner),
                  node("Mul", ["w", "half"], ["v_out"]), node("Identity", ["c_in"], ["c_out"])],
                 [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [3])],
                 [vi("c_out", B, []), vi("v_out", F, [3])], {"half": np.float32(0.5)},
                 name="outer")
    m = model([node("Loop", ["M", "", "v0"], ["v"], body=body)],
              [vi("M", I64, []), vi("N", I64, []), vi("x", F, [3]), vi("v0", F, [3])],
              [vi("v", F, [3])])
    feeds = [{"M": np.array(a, np.int64), "N": np.array(b, np.int64), "x": rand(3, seed=18),
              "v0": rand(3, seed=19)} for a in (0, 3, 20) for b in (0, 4)]
    for optimize in (False, True):
        out = round_trip(m, feeds, optimize)
        assert op_types(out.graph).count("Loop") == 2


@pytest.mark.parametrize("extra", ["ToANormalForm", "LambdaLift", "ToGraphNormalForm"])
def test_the_loop_and_if_forms_export_after_passes_that_rebind_them(extra):
    # A-normal form let-binds the If and the recursive call; LambdaLift makes the loop a
    # global function
    m = model([node("Loop", ["M", "", "v0"], ["v", "rows"], body=loop_body())],
              [vi("x", F, [3]), vi("v0", F, [3])], [vi("v", F, [3]), vi("rows", F, [600, 3])],
              {"M": np.int64(600)})
    cases = [(m, {"x": rand(3, seed=20) * np.float32(1e-2), "v0": rand(3, seed=21)}),
             (if_model(), {"c": np.array(False), "x": rand(2, 3, seed=22)})]
    for original, feeds in cases:
        with PassContext(opt_level=3):
            mod = get_pass(extra)(default_pipeline(3)(from_onnx(original)))
        out = to_onnx(mod)
        onnx.checker.check_model(out, full_check=True)
        for g, w in zip(run_onnxruntime(out, feeds), run_onnxruntime(original, feeds),
                        strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)
        assert {"Loop", "If"} & set(op_types(out.graph))


def test_a_recursive_function_of_another_form_is_an_error_naming_it():
    # the recursion is in the else branch and not a tail call of the loop form
    mod = irpass.parse("""#[version = "irpass 0.1"]
def @main(%x: Tensor[(), int64]) -> Tensor[(), int64] {
  let %fact: fn (Tensor[(), int64]) -> Tensor[(), int64] =
    fn (%n: Tensor[(), int64]) -> Tensor[(), int64] {
    if (less(%n, 1i64)) { 1i64 } else { multiply(%n, %fact(subtract(%n, 1i64))) }
  };
  %fact(%x)
}
""")
    with pytest.raises(OnnxExportError, match=r"%fact calls itself"):
        to_onnx(mod)


def nested_ifs(depth: int) -> irpass.IRModule:
    """``depth`` Ifs, each in the then branch of the next."""
    x = var("x", shape=(2,))
    c = var("c", shape=(), dtype="bool")
    e = x
    for _ in range(depth):
        e = If(c, op.negative(e), op.exp(x))
    return irpass.IRModule.from_expr(Function([c, x], e))


def test_ifs_nested_as_deep_as_onnx_reads_export():
    out = onnx.load_from_string(to_onnx(nested_ifs(MAX_NESTING)).SerializeToString())
    onnx.checker.check_model(out, full_check=True)
    x = rand(2, seed=17)
    for c, want in ((True, x * (-1) ** MAX_NESTING), (False, np.exp(x))):
        got = run_onnxruntime(out, {"c": np.array(c), "x": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 2000])
def test_ifs_nested_deeper_than_onnx_reads_are_an_error_naming_the_depth(depth):
    with pytest.raises(OnnxExportError, match=rf"nested {MAX_NESTING + 1} deep"):
        to_onnx(nested_ifs(depth))


@pytest.fixture
def foreign_op():
    name = "test_export_control.alpha"
    register_op(name, num_inputs=1, type_rel=lambda types, attrs: types[0],
                kernel=lambda args, attrs: args[0], pattern=OpPattern.ELEMWISE, owner="test")
    yield Op.get(name)
    unregister_op(name)


def test_ops_without_an_exporter_in_branches_are_listed_in_the_one_error(foreign_op):
    x = var("x", shape=(2,))
    c = var("c", shape=(), dtype="bool")
    inner = If(c, Call(foreign_op, [x]), op.exp(x))
    e = If(c, op.negative(inner), Call(foreign_op, [op.abs(x)]))
    with pytest.raises(OnnxExportError, match=r"test_export_control\.alpha \(2\)"):
        to_onnx(irpass.IRModule.from_expr(Function([c, x], e)))
