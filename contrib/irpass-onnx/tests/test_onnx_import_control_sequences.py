"""Sequences (IR tuples of a length known at import) and optionals (known at import to have a
value or not), checked against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from irpass_onnx import OnnxImportError, from_onnx
from onnx import TensorProto, helper, numpy_helper
from onnx_cases import check, rand

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
node = helper.make_node


def vi(name, elem=F, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=None, opset=18):
    g = helper.make_graph(nodes, "g", inputs, outputs,
                          [numpy_helper.from_array(np.asarray(v), k)
                           for k, v in (inits or {}).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def i64(*v):
    return np.array(v, np.int64) if len(v) != 1 else np.int64(v[0])


ABC = {"a": rand(2, 3, seed=1), "b": rand(1, 3, seed=2), "c": rand(4, 3, seed=3)}
ABC_IN = [vi("a", F, [2, 3]), vi("b", F, [1, 3]), vi("c", F, [4, 3])]


def test_construct_at_insert_erase_length_and_concat():
    nodes = [node("SequenceConstruct", ["a", "b"], ["s"]),
             node("SequenceInsert", ["s", "c", "one"], ["s2"]),     # a c b
             node("SequenceInsert", ["s2", "a"], ["s3"]),           # a c b a
             node("SequenceErase", ["s3", "zero"], ["s4"]),         # c b a
             node("SequenceErase", ["s4"], ["s5"]),                 # c b
             node("SequenceAt", ["s4", "minus1"], ["last"]),        # a
             node("SequenceLength", ["s3"], ["n"]),
             node("ConcatFromSequence", ["s5"], ["cat"], axis=0)]
    m = model(nodes, ABC_IN, [vi("last"), vi("n", I64), vi("cat")],
              {"one": i64(1), "zero": i64(0), "minus1": i64(-1)})
    check(m, ABC)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_from_sequence_with_a_new_axis_stacks(axis):
    nodes = [node("SequenceConstruct", ["a", "a2"], ["s"]),
             node("ConcatFromSequence", ["s"], ["y"], axis=axis, new_axis=1)]
    m = model([node("Neg", ["a"], ["a2"]), *nodes], [vi("a", F, [2, 3])], [vi("y")])
    check(m, {"a": ABC["a"]})


@pytest.mark.parametrize(("split", "keepdims"), [(None, 1), (None, 0), (i64(2), 1),
                                                 (i64(1, 4), 1)])
def test_split_to_sequence(split, keepdims):
    inits = {} if split is None else {"split": split}
    ins = ["x"] if split is None else ["x", "split"]
    nodes = [node("SplitToSequence", ins, ["s"], axis=1, keepdims=keepdims),
             node("SequenceLength", ["s"], ["n"]),
             node("SequenceAt", ["s", "last"], ["tail"]),
             node("ConcatFromSequence", ["s"], ["y"], axis=1, new_axis=0 if keepdims else 1)]
    m = model(nodes, [vi("x", F, [3, 5])], [vi("n", I64), vi("tail"), vi("y")],
              {**inits, "last": i64(-1)})
    check(m, {"x": rand(3, 5, seed=4)})


def test_sequence_map_over_sequences_and_a_tensor():
    body = helper.make_graph(
        [node("ReduceSum", ["t"], ["r"], keepdims=1), node("Add", ["r", "w"], ["o"]),
         node("Shape", ["t"], ["sh"])],
        "body", [vi("t", F, None), vi("w", F, [3])], [vi("o", F, None), vi("sh", I64, None)])
    nodes = [node("SequenceConstruct", ["a", "b", "c"], ["s"]),
             node("SequenceMap", ["s", "w"], ["outs", "shapes"], body=body),
             node("ConcatFromSequence", ["outs"], ["y"], axis=0),
             node("ConcatFromSequence", ["shapes"], ["z"], axis=0)]
    m = model(nodes, [*ABC_IN, vi("w", F, [3])], [vi("y"), vi("z", I64)])
    check(m, {**ABC, "w": rand(3, seed=5)})


def test_a_loop_growing_a_sequence_is_unrolled():
    # s = []; for i in range(4): s.append(x[:i + 1].sum()) -- the element shapes differ
    body = helper.make_graph(
        [node("Add", ["i", "one"], ["end"]), node("Unsqueeze", ["end", "zero"], ["ends"]),
         node("Slice", ["x", "starts", "ends"], ["part"]),
         node("SequenceInsert", ["s_in", "part"], ["s_out"]),
         node("Identity", ["c_in"], ["c_out"])],
        "body", [vi("i", I64, []), vi("c_in", B, []), helper.make_tensor_sequence_value_info(
            "s_in", F, None)],
        [vi("c_out", B, []), helper.make_tensor_sequence_value_info("s_out", F, None)],
        [numpy_helper.from_array(i64(1), "one"), numpy_helper.from_array(i64(0), "zero"),
         numpy_helper.from_array(i64(0)[None], "starts")])
    nodes = [node("SequenceEmpty", [], ["s0"], dtype=F),
             node("Loop", ["M", "", "s0"], ["s"], body=body),
             node("SequenceLength", ["s"], ["n"]),
             node("SequenceAt", ["s", "two"], ["third"]),
             node("ConcatFromSequence", ["s"], ["y"], axis=0)]
    m = model(nodes, [vi("x", F, [5])], [vi("n", I64), vi("third"), vi("y")],
              {"M": i64(4), "two": i64(2)})
    check(m, {"x": rand(5, seed=6)})


def test_optionals_with_and_without_a_value():
    then = helper.make_graph([node("Optional", ["x"], ["o1"])], "then", [],
                             [helper.make_value_info("o1", helper.make_optional_type_proto(
                                 helper.make_tensor_type_proto(F, [3])))])
    nodes = [node("Optional", ["x"], ["full"]),
             node("Optional", [], ["empty"], type=helper.make_tensor_type_proto(F, [3])),
             node("OptionalHasElement", ["full"], ["has"]),
             node("OptionalHasElement", ["empty"], ["hasnt"]),
             node("OptionalHasElement", [""], ["no_input"]),
             node("OptionalGetElement", ["full"], ["got"]),
             node("If", ["c"], ["picked"], then_branch=then, else_branch=then),
             node("OptionalGetElement", ["picked"], ["y"])]
    m = model(nodes, [vi("x", F, [3]), vi("c", B, [])],
              [vi("has", B), vi("hasnt", B), vi("no_input", B), vi("got"), vi("y")])
    check(m, {"x": rand(3, seed=7), "c": np.array(True)})


# -- clean errors -----------------------------------------------------------------------------


def _fails(m, pattern):
    with pytest.raises(OnnxImportError, match=pattern):
        from_onnx(m)


def test_a_position_out_of_range_is_named():
    m = model([node("SequenceConstruct", ["a", "b"], ["s"]),
               node("SequenceAt", ["s", "p"], ["y"], name="at")],
              ABC_IN[:2], [vi("y")], {"p": i64(2)})
    _fails(m, r"node 1 'at' \(SequenceAt\): position 2 is out of range for a sequence of "
              r"length 2")


def test_a_runtime_position_is_named():
    m = model([node("SequenceConstruct", ["a", "b"], ["s"]),
               node("SequenceAt", ["s", "p"], ["y"], name="at")],
              [*ABC_IN[:2], vi("p", I64, [])], [vi("y")])
    _fails(m, r"'at' \(SequenceAt\): the position is a run-time value")


def test_a_sequence_graph_output_is_refused():
    m = model([node("SequenceConstruct", ["a", "b"], ["s"])], ABC_IN[:2],
              [helper.make_tensor_sequence_value_info("s", F, None)])
    _fails(m, r"graph output 0 's' is a sequence")


def test_elements_of_two_dtypes_are_refused():
    m = model([node("Cast", ["a"], ["ai"], to=I64),
               node("SequenceConstruct", ["ai", "b"], ["s"], name="mix"),
               node("SequenceLength", ["s"], ["n"])], ABC_IN[:2], [vi("n", I64)])
    _fails(m, r"'mix' \(SequenceConstruct\): a sequence's elements must have one dtype")


def test_concatenating_an_empty_sequence_is_refused():
    m = model([node("SequenceEmpty", [], ["s"]),
               node("ConcatFromSequence", ["s"], ["y"], axis=0, name="cat")], [], [vi("y")])
    _fails(m, r"'cat' \(ConcatFromSequence\): the sequence is empty")


def test_getting_the_value_of_an_empty_optional_is_refused():
    m = model([node("Optional", [], ["e"], type=helper.make_tensor_type_proto(F, [3])),
               node("OptionalGetElement", ["e"], ["y"], name="get")], [], [vi("y")])
    _fails(m, r"'get' \(OptionalGetElement\): the optional has no value")


def test_testing_an_optional_graph_input_is_refused():
    opt = helper.make_value_info("o", helper.make_optional_type_proto(
        helper.make_tensor_type_proto(F, [3])))
    m = model([node("OptionalHasElement", ["o"], ["y"], name="has")], [opt], [vi("y", B)])
    _fails(m, r"'has' \(OptionalHasElement\): its input is an optional graph input")


def test_an_if_with_a_value_in_one_branch_only_is_refused():
    full = helper.make_graph([node("Optional", ["x"], ["o1"])], "then", [],
                             [helper.make_value_info("o1", helper.make_optional_type_proto(
                                 helper.make_tensor_type_proto(F, [3])))])
    empty = helper.make_graph(
        [node("Optional", [], ["o2"], type=helper.make_tensor_type_proto(F, [3]))], "else", [],
        [helper.make_value_info("o2", helper.make_optional_type_proto(
            helper.make_tensor_type_proto(F, [3])))])
    m = model([node("If", ["c"], ["o"], then_branch=full, else_branch=empty, name="pick"),
               node("OptionalHasElement", ["o"], ["y"])],
              [vi("x", F, [3]), vi("c", B, [])], [vi("y", B)])
    _fails(m, r"'pick' \(If\): output 0 is an optional with a value in one branch")
