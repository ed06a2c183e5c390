"""If, Loop and Scan: imported as an IR ``If`` and as unrolled rounds or a tail-recursive local
function, each checked against onnxruntime (and through -O3)."""

from __future__ import annotations

import irpass
import numpy as np
import onnx
import pytest
from irpass.ir import Call, Function, post_order_visit
from irpass.transform import PassContext, default_pipeline
from irpass_onnx import OnnxImportError, from_onnx
from irpass_onnx.frontend.control import UNROLL_BUDGET
from irpass_onnx.testing import run_onnxruntime
from onnx import TensorProto, helper, numpy_helper
from onnx_cases import check, rand

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
node = helper.make_node


def vi(name, elem=F, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def graph(nodes, inputs, outputs, inits=None, name="g"):
    return helper.make_graph(nodes, name, inputs, outputs,
                             [numpy_helper.from_array(np.asarray(v), k)
                              for k, v in (inits or {}).items()])


def model(nodes, inputs, outputs, inits=None, opset=16):
    return helper.make_model(graph(nodes, inputs, outputs, inits),
                             opset_imports=[helper.make_opsetid("", opset)])


def kinds(mod):
    """The IR node classes in ``@main``."""
    seen = set()
    post_order_visit(mod["main"], lambda e: seen.add(type(e).__name__))
    return seen


def recursive(mod):
    """Whether ``@main`` holds a local function (a loop in the recursive form)."""
    fns = []
    post_order_visit(mod["main"], lambda e: fns.append(e) if isinstance(e, Function) else None)
    return len(fns) > 1


def check_o3(mod, feeds, want):
    with PassContext(opt_level=3):
        opt = default_pipeline(3)(mod)
    got = irpass.evaluate(opt, **feeds)
    got = list(got) if isinstance(got, tuple) else [got]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


# -- If -------------------------------------------------------------------------------------------


def if_model(then_nodes, then_out, else_nodes, else_out, outputs=("y",), opset=16):
    then = graph(then_nodes, [], then_out, name="then")
    other = graph(else_nodes, [], else_out, name="else")
    n = node("If", ["c"], list(outputs), then_branch=then, else_branch=other, name="branch")
    return model([n], [vi("c", B, []), vi("x", F, [2, 3])], [vi(o) for o in outputs],
                 opset=opset)


@pytest.mark.parametrize("cond", [True, False])
def test_if_runs_the_branch_the_condition_picks_reading_the_enclosing_graph(cond):
    m = if_model(
        [node("Mul", ["x", "x"], ["a"]), node("Relu", ["a"], ["t"]),
         node("ReduceSum", ["x"], ["t2"], keepdims=0)], [vi("t"), vi("t2")],
        [node("Neg", ["x"], ["e"]), node("ReduceMax", ["x"], ["e2"], keepdims=0)],
        [vi("e"), vi("e2")], outputs=("y", "z"))
    feeds = {"c": np.array(cond), "x": rand(2, 3, seed=1)}
    mod = check(m, feeds)
    assert "If" in kinds(mod)
    check_o3(mod, feeds, run_onnxruntime(m, feeds))


def test_if_with_a_condition_known_at_import_imports_only_that_branch():
    then = graph([node("Neg", ["x"], ["t"])], [], [vi("t")], name="then")
    other = graph([node("Abs", ["x"], ["e"])], [], [vi("e")], name="else")
    m = model([node("Constant", [], ["k"], value=numpy_helper.from_array(np.array([False]))),
               node("If", ["k"], ["y"], then_branch=then, else_branch=other)],
              [vi("x", F, [4])], [vi("y")])
    feeds = {"x": rand(4, seed=2)}
    mod = check(m, feeds)
    assert "If" not in kinds(mod)


def test_if_branches_of_different_types_fail_naming_the_node_and_output():
    m = if_model([node("ReduceSum", ["x"], ["t"], keepdims=0)], [vi("t")],
                 [node("Neg", ["x"], ["e"])], [vi("e")])
    with pytest.raises(OnnxImportError, match=r"node 0 'branch' \(If\): output 0 is "
                                              r"Tensor\[\(\), float32\] in then_branch"):
        from_onnx(m)


def test_a_bad_node_inside_a_branch_is_named_with_the_if_node_and_attribute():
    m = if_model([node("Reshape", ["x", "x"], ["t"], name="inner")], [vi("t")],
                 [node("Neg", ["x"], ["e"])], [vi("e")])
    with pytest.raises(OnnxImportError, match=r"\(If\): then_branch: node 0 'inner' "
                                              r"\(Reshape\)"):
        from_onnx(m)


# -- Loop -----------------------------------------------------------------------------------------


def loop_body(extra_nodes=(), cond_out="c_in", scan=True, outer="x"):
    """``v = v + outer * i``, the condition passed on (or ``cond_out``), scan output
    ``v * 2``."""
    nodes = [node("Cast", ["i"], ["fi"], to=F), node("Mul", [outer, "fi"], ["d"]),
             node("Add", ["v_in", "d"], ["v_out"]), *extra_nodes,
             node("Identity", [cond_out], ["c_out"])]
    outs = [vi("c_out", B, []), vi("v_out", F, [3])]
    if scan:
        nodes.append(node("Mul", ["v_out", "two"], ["s"]))
        outs.append(vi("s", F, [3]))
    return graph(nodes, [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [3])], outs,
                 {"two": np.float32(2)}, name="body")


def loop_reference(trip, x, v0, stop=None):
    v, rows = v0.copy(), []
    for i in range(trip):
        v = v + x * np.float32(i)
        rows.append(v * 2)
        if stop is not None and not stop(v):
            break
    return v, np.array(rows, np.float32).reshape(-1, 3)


@pytest.mark.parametrize("trip", [0, 3, UNROLL_BUDGET])
def test_loop_with_trip_count_and_scan_output(trip):
    m = model([node("Loop", ["M", "cond", "v0"], ["v", "scan"], body=loop_body())],
              [vi("x", F, [3]), vi("v0", F, [3])], [vi("v"), vi("scan")],
              {"M": np.int64(trip), "cond": np.array(True)})
    feeds = {"x": rand(3, seed=3), "v0": rand(3, seed=4)}
    mod = check(m, feeds)
    # a few rounds are unrolled; many become a recursive function
    assert recursive(mod) == (trip > 100)
    np.testing.assert_allclose(irpass.evaluate(mod, **feeds)[1],
                               loop_reference(trip, feeds["x"], feeds["v0"])[1], rtol=1e-5)
    assert irpass.evaluate(mod, **feeds)[1].shape == (trip, 3)
    check_o3(mod, feeds, run_onnxruntime(m, feeds))


def test_a_ten_thousand_round_loop_runs_without_recursion_error():
    m = model([node("Loop", ["M", "", "v0"], ["v"], body=loop_body(scan=False))],
              [vi("M", I64, []), vi("x", F, [3]), vi("v0", F, [3])], [vi("v")])
    feeds = {"M": np.array(10_000, np.int64), "x": np.ones(3, np.float32),
             "v0": np.zeros(3, np.float32)}
    v = np.zeros(3, np.float32)
    for i in range(10_000):
        v = v + np.float32(i)
    mod = check(m, feeds, ref=[v])
    assert recursive(mod)


def test_loop_with_a_condition_only_is_a_while_loop():
    # while v[0] < 50: v += x * i
    body = loop_body([node("ReduceMin", ["v_out"], ["lo"], keepdims=0),
                      node("Less", ["lo", "fifty"], ["more"])], cond_out="more", scan=False)
    body.initializer.append(numpy_helper.from_array(np.float32(50), "fifty"))
    m = model([node("Loop", ["", "go", "v0"], ["v"], body=body)],
              [vi("go", B, []), vi("x", F, [3]), vi("v0", F, [3])], [vi("v")])
    for go in (True, False):
        feeds = {"go": np.array(go), "x": np.array([1, 2, 3], np.float32),
                 "v0": np.zeros(3, np.float32)}
        mod = check(m, feeds)
        assert recursive(mod)


def test_loop_with_a_trip_count_only_ignores_the_body_condition():
    # the body's condition output is False, but without a condition input it does not count
    body = loop_body([node("Constant", [], ["no"], value=numpy_helper.from_array(
        np.array(False)))], cond_out="no")
    m = model([node("Loop", ["M", "", "v0"], ["v", "scan"], body=body)],
              [vi("x", F, [3]), vi("v0", F, [3])], [vi("v"), vi("scan")], {"M": np.int64(4)})
    feeds = {"x": rand(3, seed=5), "v0": rand(3, seed=6)}
    check(m, feeds, ref=loop_reference(4, feeds["x"], feeds["v0"]))


@pytest.mark.parametrize("trip", [0, 2, 7])
def test_loop_with_both_stops_at_whichever_comes_first(trip):
    body = loop_body([node("ReduceMin", ["v_out"], ["lo"], keepdims=0),
                      node("Less", ["lo", "ten"], ["more"])], cond_out="more", scan=False)
    body.initializer.append(numpy_helper.from_array(np.float32(10), "ten"))
    m = model([node("Loop", ["M", "go", "v0"], ["v"], body=body)],
              [vi("M", I64, []), vi("go", B, []), vi("x", F, [3]), vi("v0", F, [3])],
              [vi("v")])
    feeds = {"M": np.array(trip, np.int64), "go": np.array(True),
             "x": np.array([1, 2, 3], np.float32), "v0": np.zeros(3, np.float32)}
    check(m, feeds)


def test_loop_scan_output_with_a_runtime_trip_count_is_converted_when_it_is_known():
    body = loop_body(outer="w")  # reading only its own values: converted as a whole
    body.initializer.append(numpy_helper.from_array(np.float32([1, 2, 3]), "w"))
    m = model([node("Loop", ["M", "cond", "v0"], ["v", "scan"], body=body)],
              [vi("M", I64, []), vi("cond", B, []), vi("v0", F, [3])],
              [vi("v", F, [3]), vi("scan", F, [5, 3])])
    feeds = {"M": np.array(5, np.int64), "cond": np.array(True), "v0": rand(3, seed=7)}
    check(m, feeds)


def test_loop_scan_output_with_a_runtime_trip_count_reading_outer_values():
    # converted on its own at run time, the node gets the enclosing values it reads (x, and
    # e = exp(x), in the body and in an If nested in it) as extra loop-carried values
    inner = graph([node("Add", ["d", "e"], ["t"])], [], [vi("t", F, [3])], name="t")
    body = loop_body([node("Greater", ["fi", "one"], ["late"]),
                      node("If", ["late"], ["d2"], then_branch=inner, else_branch=inner)])
    body.output[1].name = "d2"
    m = model([node("Exp", ["x"], ["e"]), node("Neg", ["x"], ["nx"]),
               node("Loop", ["M", "", "v0"], ["v", "scan"], body=body, name="lp"),
               node("Add", ["v", "nx"], ["y"])],
              [vi("M", I64, []), vi("x", F, [3]), vi("v0", F, [3])],
              [vi("y", F, [3]), vi("v", F, [3]), vi("scan", F, [5, 3])],
              {"one": np.float32(1)})
    feeds = {"M": np.array(5, np.int64), "x": rand(3, seed=16), "v0": rand(3, seed=17)}
    mod = check(m, feeds)
    check_o3(mod, feeds, run_onnxruntime(m, feeds))
    with pytest.raises(irpass.IRPassError, match="declares float32\\[5, 3\\]"):
        irpass.evaluate(mod, **{**feeds, "M": np.array(4, np.int64)})


def test_a_loop_carried_value_changing_type_fails_cleanly():
    body = graph([node("Concat", ["v_in", "v_in"], ["v_out"], axis=0),
                  node("Identity", ["c_in"], ["c_out"])],
                 [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [3])],
                 [vi("c_out", B, []), vi("v_out", F, None)], name="body")
    m = model([node("Loop", ["M", "", "v0"], ["v"], body=body, name="grow")],
              [vi("M", I64, []), vi("v0", F, [3])], [vi("v")])
    with pytest.raises(OnnxImportError, match=r"'grow' \(Loop\): loop-carried value 0 is "
                                              r"Tensor\[\(3,\), float32\] on entry but "
                                              r"Tensor\[\(6,\), float32\]"):
        from_onnx(m)


def test_a_loop_without_trip_count_or_condition_fails_cleanly():
    m = model([node("Loop", ["", "", "v0"], ["v"], body=loop_body(scan=False), name="ever")],
              [vi("x", F, [3]), vi("v0", F, [3])], [vi("v")])
    with pytest.raises(OnnxImportError, match="neither a trip count nor a condition"):
        from_onnx(m)


def test_a_recursive_loop_computes_the_enclosing_values_it_reads_once():
    # the body reads `e = exp(x)`, computed outside: a let binds it, not every round
    m = model([node("Exp", ["x"], ["e"]),
               node("Loop", ["M", "", "v0"], ["v"], body=loop_body(scan=False, outer="e"))],
              [vi("x", F, [3]), vi("v0", F, [3])], [vi("v")], {"M": np.int64(2_000)})
    feeds = {"x": rand(3, seed=8), "v0": rand(3, seed=9)}
    mod = check(m, feeds)
    calls = []
    post_order_visit(mod["main"], lambda e: calls.append(e) if isinstance(e, Call) and getattr(
        e.op, "name", "") == "exp" else None)
    assert len(calls) == 1
    fns = []
    post_order_visit(mod["main"], lambda e: fns.append(e) if isinstance(e, Function) else None)
    inner = []
    post_order_visit(fns[0].body, lambda e: inner.append(e) if e is calls[0] else None)
    assert not inner, "exp(x) is computed inside the loop's function"


def test_a_nested_if_inside_a_loop_body():
    inner_then = graph([node("Add", ["v_in", "x"], ["t"])], [], [vi("t", F, [3])], name="t")
    inner_else = graph([node("Sub", ["v_in", "x"], ["e"])], [], [vi("e", F, [3])], name="e")
    body = graph([node("Mod", ["i", "two"], ["odd"]), node("Cast", ["odd"], ["b"], to=B),
                  node("If", ["b"], ["v_out"], then_branch=inner_then, else_branch=inner_else),
                  node("Identity", ["c_in"], ["c_out"])],
                 [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [3])],
                 [vi("c_out", B, []), vi("v_out", F, [3])], {"two": np.int64(2)}, name="body")
    m = model([node("Loop", ["M", "", "v0"], ["v"], body=body)],
              [vi("M", I64, []), vi("x", F, [3]), vi("v0", F, [3])], [vi("v")])
    feeds = {"M": np.array(7, np.int64), "x": rand(3, seed=10), "v0": rand(3, seed=11)}
    mod = check(m, feeds)
    check_o3(mod, feeds, run_onnxruntime(m, feeds))


# -- Scan -----------------------------------------------------------------------------------------


def _scan_body():
    body = graph([node("Add", ["s_in", "row"], ["s_out"]), node("Identity", ["s_out"], ["acc"]),
                  node("Mul", ["row", "three"], ["r3"])],
                 [vi("s_in", F, [4]), vi("row", F, [4])],
                 [vi("s_out", F, [4]), vi("acc", F, [4]), vi("r3", F, [4])],
                 {"three": np.float32(3)}, name="body")
    return body


@pytest.mark.parametrize("rows", [5, 400])
@pytest.mark.parametrize(("in_axis", "in_dir", "out_axes", "out_dirs"), [
    (0, 0, [0, 0], [0, 0]),
    (1, 1, [1, -1], [1, 0]),
])
def test_scan_directions_and_axes(rows, in_axis, in_dir, out_axes, out_dirs):
    shape = [rows, 4] if in_axis == 0 else [4, rows]
    n = node("Scan", ["s0", "xs"], ["s", "acc", "r3"], body=_scan_body(), num_scan_inputs=1,
             scan_input_axes=[in_axis], scan_input_directions=[in_dir],
             scan_output_axes=out_axes, scan_output_directions=out_dirs)
    m = model([n], [vi("s0", F, [4]), vi("xs", F, shape)], [vi("s"), vi("acc"), vi("r3")],
              opset=11)
    feeds = {"s0": rand(4, seed=12), "xs": rand(*shape, seed=13)}
    mod = check(m, feeds)
    assert recursive(mod) == (rows > 100)
    check_o3(mod, feeds, run_onnxruntime(m, feeds))


def test_a_scan_over_no_rows_gives_the_initial_state_and_empty_outputs():
    # onnxruntime refuses a scan axis of length 0, so the reference is written here
    n = node("Scan", ["s0", "xs"], ["s", "acc", "r3"], body=_scan_body(), num_scan_inputs=1,
             scan_input_axes=[1], scan_output_axes=[0, 1])
    m = model([n], [vi("s0", F, [4]), vi("xs", F, [4, 0])], [vi("s"), vi("acc"), vi("r3")],
              opset=11)
    s0 = rand(4, seed=18)
    got = irpass.evaluate(from_onnx(m), s0=s0, xs=np.zeros((4, 0), np.float32))
    np.testing.assert_array_equal(got[0], s0)
    assert got[1].shape == (0, 4) and got[2].shape == (4, 0)


def test_scan_opset_8_scans_each_batch_entry():
    n = node("Scan", ["", "s0", "xs"], ["s", "acc", "r3"], body=_scan_body(),
             num_scan_inputs=1, directions=[1])
    m = model([n], [vi("s0", F, [2, 4]), vi("xs", F, [2, 3, 4])],
              [vi("s"), vi("acc"), vi("r3")], opset=8)
    feeds = {"s0": rand(2, 4, seed=14), "xs": rand(2, 3, 4, seed=15)}
    s0, xs = feeds["s0"], feeds["xs"]
    want_s, want_acc = [], []
    for b in range(2):
        s, acc = s0[b], []
        for t in reversed(range(3)):
            s = s + xs[b, t]
            acc.append(s)
        want_s.append(s)
        want_acc.append(acc)
    # the scan outputs take the rows in scan order: reversed
    check(m, feeds, ref=[np.array(want_s), np.array(want_acc), xs[:, ::-1] * 3])


def test_scan_inputs_of_different_lengths_fail_cleanly():
    body = graph([node("Add", ["a", "b"], ["c"])], [vi("a", F, [4]), vi("b", F, [4])],
                 [vi("c", F, [4])], name="body")
    m = model([node("Scan", ["x", "y"], ["z"], body=body, num_scan_inputs=2, name="sc")],
              [vi("x", F, [3, 4]), vi("y", F, [5, 4])], [vi("z")], opset=11)
    with pytest.raises(OnnxImportError, match=r"'sc' \(Scan\): the scan inputs have different "
                                              r"lengths along their scan axes: \[3, 5\]"):
        from_onnx(m)


def test_the_import_leaves_a_model_with_subgraphs_as_it_was():
    m = model([node("Loop", ["M", "", "v0"], ["v"], body=loop_body(scan=False))],
              [vi("x", F, [3]), vi("v0", F, [3])], [vi("v")], {"M": np.int64(3)})
    before = m.SerializeToString()
    from_onnx(m)
    assert m.SerializeToString() == before
    assert onnx.load_from_string(before) == m


@pytest.mark.parametrize(("outer_rounds", "inner_rounds", "recursion"), [
    (3, 4, False), (150, 4, True), (20, 300, True)])
def test_nested_loops_unrolled_or_recursive(outer_rounds, inner_rounds, recursion):
    # outer: v += inner(w0 = v / 2); inner: w += x * j * 1e-4 -- the inner loop reads x from
    # the main graph and its trip count N from an initializer
    inner = graph([node("Cast", ["j"], ["fj"], to=F), node("Mul", ["x", "fj"], ["d"]),
                   node("Mul", ["d", "tiny"], ["d2"]), node("Add", ["w_in", "d2"], ["w_out"]),
                   node("Identity", ["c2"], ["c2o"])],
                  [vi("j", I64, []), vi("c2", B, []), vi("w_in", F, [3])],
                  [vi("c2o", B, []), vi("w_out", F, [3])], {"tiny": np.float32(1e-4)},
                  name="inner")
    outer = graph([node("Mul", ["v_in", "half"], ["w0"]),
                   node("Loop", ["N", "", "w0"], ["w"], body=inner),
                   node("Add", ["v_in", "w"], ["v_out"]), node("Identity", ["c_in"], ["c_out"])],
                  [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [3])],
                  [vi("c_out", B, []), vi("v_out", F, [3])], {"half": np.float32(0.5)},
                  name="outer")
    m = model([node("Loop", ["M", "", "v0"], ["v"], body=outer)],
              [vi("x", F, [3]), vi("v0", F, [3])], [vi("v")],
              {"M": np.int64(outer_rounds), "N": np.int64(inner_rounds)})
    feeds = {"x": rand(3, seed=19), "v0": rand(3, seed=20)}
    mod = check(m, feeds)
    assert recursive(mod) == recursion
    check_o3(mod, feeds, run_onnxruntime(m, feeds))


def test_a_scan_output_of_a_huge_trip_count_is_refused_not_allocated():
    # torch writes `while` loops with the largest int64 as trip count
    m = model([node("Loop", ["M", "", "v0"], ["v", "scan"], body=loop_body(), name="big")],
              [vi("x", F, [3]), vi("v0", F, [3])], [vi("v"), vi("scan")],
              {"M": np.int64(2**63 - 1)})
    with pytest.raises(OnnxImportError, match=r"'big' \(Loop\): scan output 0 would hold "
                                              r"\d+ elements"):
        from_onnx(m)
