#!/usr/bin/env python3
"""Writes small ONNX models (and hostile files) for the ONNX frontend lit tests.

Usage: make_model.py CASE OUT.onnx
       make_model.py --list

Each CASE is a function below, registered in CASES. Model cases build a
graph of a few nodes with onnx.helper and save it to OUT.onnx. Hostile cases
write deliberately broken files: empty, truncated, random bytes, and models
whose initializers use external data that is absent, outside the model's
directory, behind a symlink, or of the wrong size. External data files are
written next to OUT.onnx (same directory), so tests should generate into a
fresh directory (`rm -rf %t && mkdir %t`).

Everything is deterministic: random bytes come from a fixed seed, and no
case depends on the current directory or on the clock.
"""

import os
import random
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


# --- helpers ---------------------------------------------------------------


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name, values, dtype=np.int64):
    """A Constant node producing `name` from a numpy array."""
    arr = np.array(values, dtype=dtype)
    return helper.make_node("Constant", [], [name], name="const_" + name,
                            value=numpy_helper.from_array(arr, name))


def init(name, values, dtype=np.float32):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def model(nodes, inputs, outputs, initializers=(), opset=17, extra_opsets=(),
          ir_version=8, name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", opset)]
    opsets += [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(graph, opset_imports=opsets, producer_name="make_model.py")
    m.ir_version = ir_version
    return m


def external(tensor, location, offset=None, length=None):
    """Marks `tensor` as stored externally at `location`, dropping its bytes."""
    tensor.ClearField("raw_data")
    tensor.ClearField("float_data")
    tensor.ClearField("int64_data")
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = tensor.external_data.add()
            entry.key = key
            entry.value = str(value)
    return tensor


# --- import-basic ------------------------------------------------------------


def case_basic(out):
    """y = x @ W + b with exporter-style names; emb = Gather(table, positions)
    with an int64 initializer (a constant, not a parameter) and a bool mask
    initializer feeding Where."""
    W = init("layers.3.attn.qkv.weight", np.arange(16).reshape(4, 4) / 16.0)
    b = init("layers.3.attn.qkv.bias", [0.5, 0.25, 0.125, 0.0])
    table = init("embed.weight", np.arange(32).reshape(8, 4))
    positions = init("positions", [3, 1], np.int64)
    mask = init("mask", [[True, False, True, False]] * 2, np.bool_)
    nodes = [
        helper.make_node("MatMul", ["x", "layers.3.attn.qkv.weight"], ["xw"], name="/attn/MatMul"),
        helper.make_node("Add", ["xw", "layers.3.attn.qkv.bias"], ["h"], name="/attn/Add"),
        helper.make_node("Where", ["mask", "h", "x"], ["y"], name="/attn/Where"),
        helper.make_node("Gather", ["embed.weight", "positions"], ["emb"], name="/embed/Gather"),
    ]
    # Graph inputs listed before the initializers are declared, and the
    # initializers in "wrong" order: parameters must still come first.
    return model(nodes, [vi("x", F, [2, 4])],
                 [vi("y", F, [2, 4]), vi("emb", F, [2, 4])],
                 [W, positions, b, mask, table])


def case_basic_ir3(out):
    """IR 3 style: every initializer is also listed as a graph input; they
    must not appear twice in the signature."""
    W = init("fc.weight", np.ones((4, 3)))
    nodes = [helper.make_node("MatMul", ["x", "fc.weight"], ["y"], name="fc")]
    return model(nodes, [vi("x", F, [2, 4]), vi("fc.weight", F, [4, 3])],
                 [vi("y", F, [2, 3])], [W], opset=9, ir_version=3)


def case_constant_output(out):
    """A graph output computed entirely from constants: Shape(x) is folded,
    so the output is materialized as one nn.constant."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape")]
    return model(nodes, [vi("x", F, [2, 3, 5])], [vi("s", I64, [3])])


# --- shape-folding -----------------------------------------------------------


def shape_chain(opset):
    # x: [2, 3, 4] -> Reshape to [Shape(x)[0], (Shape(x)[1] * Shape(x)[2] + 12) / 2]
    #              = [2, 12], the way torch.onnx.export writes x.view(B, -1).
    def unsq(src, dst):
        if opset < 13:
            return [helper.make_node("Unsqueeze", [src], [dst], name="unsq_" + dst, axes=[0])]
        return [const("axes_" + dst, [0]),
                helper.make_node("Unsqueeze", [src, "axes_" + dst], [dst], name="unsq_" + dst)]

    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="/Shape"),
        const("i0", 0), const("i1", 1), const("i2", 2),
        helper.make_node("Gather", ["s", "i0"], ["b"], name="/Gather_0", axis=0),
        helper.make_node("Gather", ["s", "i1"], ["t"], name="/Gather_1", axis=0),
        helper.make_node("Gather", ["s", "i2"], ["c"], name="/Gather_2", axis=0),
        helper.make_node("Mul", ["t", "c"], ["tc"], name="/Mul"),
        const("twelve", 12), const("two", 2),
        helper.make_node("Add", ["tc", "twelve"], ["tc12"], name="/Add"),
        helper.make_node("Div", ["tc12", "two"], ["half"], name="/Div"),
    ]
    nodes += unsq("b", "b1") + unsq("half", "half1")
    nodes += [
        helper.make_node("Concat", ["b1", "half1"], ["shape"], name="/Concat", axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"], name="/Reshape"),
    ]
    return model(nodes, [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 12])], opset=opset)


def case_shape_chain13(out):
    return shape_chain(13)


def case_shape_chain11(out):
    return shape_chain(11)


def case_shape_arith(out):
    """Integer Add/Sub/Mul/Div/Neg/Cast on shape values fold to one constant
    graph output: s = Shape(x) = [6, 4]; (s + [2, 0]) / [4, 2] - 1 = [1, 1];
    times s = [6, 4]; Neg -> [-6, -4]; Cast to float -> [-6.0, -4.0]."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        const("a", [2, 0]), const("d", [4, 2]), const("one", 1),
        helper.make_node("Add", ["s", "a"], ["s1"], name="add"),
        helper.make_node("Div", ["s1", "d"], ["s2"], name="div"),
        helper.make_node("Sub", ["s2", "one"], ["s3"], name="sub"),
        helper.make_node("Mul", ["s3", "s"], ["s4"], name="mul"),
        helper.make_node("Neg", ["s4"], ["s5"], name="neg"),
        helper.make_node("Cast", ["s5"], ["f"], name="cast", to=F),
    ]
    return model(nodes, [vi("x", F, [6, 4])], [vi("f", F, [2])])


def case_slice9(out):
    """Slice before opset 10: starts/ends/axes are attributes."""
    nodes = [helper.make_node("Slice", ["x"], ["y"], name="slice",
                              starts=[1, 0], ends=[1000, -1], axes=[0, 2])]
    return model(nodes, [vi("x", F, [4, 5, 6])], [vi("y", F, [3, 5, 5])], opset=9)


def case_slice11(out):
    """Slice at opset 11: bounds are (constant) inputs; negative step."""
    nodes = [const("starts", [-1]), const("ends", [-1000]), const("axes", [1]),
             const("steps", [-2]),
             helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"],
                              name="slice")]
    return model(nodes, [vi("x", F, [4, 5])], [vi("y", F, [4, 3])], opset=11)


def case_slice13_fold(out):
    """Slice of a constant shape folds (torch's Shape -> Slice pattern):
    Shape(x)[-2:] = [5, 6], then Reshape(z, that)."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             const("starts", [-2]), const("ends", [2 ** 62]),
             helper.make_node("Slice", ["s", "starts", "ends"], ["tail"], name="slice"),
             helper.make_node("Reshape", ["z", "tail"], ["y"], name="reshape")]
    return model(nodes, [vi("x", F, [4, 5, 6]), vi("z", F, [30])],
                 [vi("y", F, [5, 6])], opset=13)


def case_split11(out):
    """Split at opset 11: sizes from the 'split' attribute."""
    nodes = [helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=1, split=[2, 4])]
    return model(nodes, [vi("x", F, [3, 6])], [vi("a", F, [3, 2]), vi("b", F, [3, 4])],
                 opset=11)


def case_split13(out):
    """Split at opset 13: sizes are a constant input."""
    nodes = [const("sizes", [1, 5]),
             helper.make_node("Split", ["x", "sizes"], ["a", "b"], name="split", axis=-1)]
    return model(nodes, [vi("x", F, [3, 6])], [vi("a", F, [3, 1]), vi("b", F, [3, 5])],
                 opset=13)


def case_split_sizes_overflow(out):
    """Split sizes whose sum overflows int64 (found by fuzzing: adding them
    up was undefined)."""
    nodes = [const("sizes", [2 ** 62 + 2 ** 61, 2 ** 62 + 2 ** 61]),
             helper.make_node("Split", ["x", "sizes"], ["a", "b"], name="split", axis=1)]
    return model(nodes, [vi("x", F, [2, 7])], [vi("a", F, [2, 2]), vi("b", F, [2, 5])],
                 opset=13)


def empty_init(name, dims):
    """An int64 initializer with no elements (a 0 among `dims`)."""
    return helper.make_tensor(name, TensorProto.INT64, dims, [])


def case_fold_empty_expand(out):
    """Expand of a constant to [2^62, 4, 0]: no elements, so it folds, and
    the huge dimensions before the 0 must not overflow the element count."""
    nodes = [const("c", [7]), const("shape", [2 ** 62, 4, 0]),
             helper.make_node("Expand", ["c", "shape"], ["y"], name="expand")]
    return model(nodes, [], [vi("y", I64, [2 ** 62, 4, 0])], opset=13)


def case_fold_empty_transpose(out):
    """Transpose of an empty [0, 2^62, 4] initializer: the element count and
    strides of the huge dimensions must not overflow as it folds."""
    nodes = [helper.make_node("Transpose", ["e"], ["t"], name="transpose")]
    return model(nodes, [], [vi("t", I64, [4, 2 ** 62, 0])],
                 [empty_init("e", [0, 2 ** 62, 4])], opset=13)


def case_range_budget(out):
    """Three Ranges of 2^23 positions: the third passes the model's 2^24."""
    nodes = [const("zero", 0), const("n", 2 ** 23), const("one", 1)]
    for k in range(3):
        nodes.append(helper.make_node("Range", ["zero", "n", "one"], ["r%d" % k],
                                      name="range%d" % k))
    return model(nodes, [], [vi("r2", I64, [2 ** 23])], opset=13)


def case_sequence_budget(out):
    """Two SplitToSequence nodes of 40000 parts each: the second passes the
    model's 65536."""
    nodes = [const("p", 0)]
    for k in range(2):
        nodes += [helper.make_node("SplitToSequence", ["x"], ["seq%d" % k], name="split%d" % k,
                                   axis=0),
                  helper.make_node("SequenceAt", ["seq%d" % k, "p"], ["y%d" % k],
                                   name="at%d" % k)]
    return model(nodes, [vi("x", F, [40000, 0])], [vi("y0", F, [1, 0]), vi("y1", F, [1, 0])],
                 opset=13)


def case_squeeze11(out):
    """Squeeze/Unsqueeze at opset 11: axes are attributes."""
    nodes = [helper.make_node("Squeeze", ["x"], ["s"], name="squeeze", axes=[1]),
             helper.make_node("Unsqueeze", ["s"], ["y"], name="unsqueeze", axes=[0, -1])]
    return model(nodes, [vi("x", F, [3, 1, 4])], [vi("y", F, [1, 3, 4, 1])], opset=11)


def case_squeeze13(out):
    """Squeeze/Unsqueeze at opset 13: axes are constant inputs; Squeeze
    without axes drops every 1."""
    nodes = [helper.make_node("Squeeze", ["x"], ["s"], name="squeeze"),
             const("axes", [1]),
             helper.make_node("Unsqueeze", ["s", "axes"], ["y"], name="unsqueeze")]
    return model(nodes, [vi("x", F, [1, 3, 1, 4])], [vi("y", F, [3, 1, 4])], opset=13)


def case_reshape_special(out):
    """Reshape with 0 (copy the input dimension) and -1 (infer)."""
    nodes = [const("shape", [0, -1]),
             helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape"),
             const("shape2", [0, 0, -1, 2]),
             helper.make_node("Reshape", ["x", "shape2"], ["z"], name="reshape2")]
    return model(nodes, [vi("x", F, [2, 3, 4])],
                 [vi("y", F, [2, 12]), vi("z", F, [2, 3, 2, 2])], opset=14)


def case_expand(out):
    """Expand with a constant shape (bidirectional broadcast)."""
    nodes = [const("shape", [2, 1, 4]),
             helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")]
    return model(nodes, [vi("x", F, [3, 1])], [vi("y", F, [2, 3, 4])], opset=13)


def case_fold_wrap(out):
    """Folding int64 arithmetic wraps around like the runtime's kernels
    instead of trapping: INT64_MIN / -1, INT64_MIN * -1, 2^62 * 4, -INT64_MIN."""
    nodes = [const("a", [-2 ** 63, 2 ** 62]), const("b", [-1, 4]),
             helper.make_node("Div", ["a", "b"], ["q"], name="div"),
             helper.make_node("Mul", ["a", "b"], ["p"], name="mul"),
             helper.make_node("Neg", ["a"], ["n"], name="neg")]
    return model(nodes, [], [vi("q", I64, [2]), vi("p", I64, [2]), vi("n", I64, [2])])


def case_fold_limit(out):
    """A broadcast of two small constants whose result is too big to fold
    ([512, 1] + [1, 512] = 262144 elements) stays an nn.add."""
    nodes = [const("a", np.arange(512).reshape(512, 1)),
             const("b", np.arange(512).reshape(1, 512)),
             helper.make_node("Add", ["a", "b"], ["y"], name="add")]
    return model(nodes, [], [vi("y", I64, [512, 512])])


# --- legacy-opsets -----------------------------------------------------------


def softmax(opset, axis, op="Softmax"):
    nodes = [helper.make_node(op, ["x"], ["y"], name="softmax", axis=axis)]
    return model(nodes, [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 3, 4])], opset=opset)


def case_softmax11(out):
    return softmax(11, 1)


def case_softmax11_last(out):
    return softmax(11, -1)


def case_logsoftmax11(out):
    return softmax(11, 0, "LogSoftmax")


def case_softmax13(out):
    return softmax(13, 1)


def case_dropout11(out):
    nodes = [helper.make_node("Dropout", ["x"], ["y", "mask"], name="dropout", ratio=0.25)]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], opset=11)


def case_dropout13_train(out):
    nodes = [const("ratio", 0.125, np.float32), const("training", True, np.bool_),
             helper.make_node("Dropout", ["x", "ratio", "training"], ["y"], name="dropout")]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], opset=13)


def case_reducesum11(out):
    nodes = [helper.make_node("ReduceSum", ["x"], ["y"], name="rs", axes=[-1, 0], keepdims=0)]
    return model(nodes, [vi("x", F, [2, 3, 4])], [vi("y", F, [3])], opset=11)


def case_reducesum13(out):
    nodes = [const("axes", [1]),
             helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="rs")]
    return model(nodes, [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 1, 4])], opset=13)


def case_reducesum13_all(out):
    """No axes input and noop_with_empty_axes = 0: reduce over all axes."""
    nodes = [helper.make_node("ReduceSum", ["x"], ["y"], name="rs", keepdims=0)]
    return model(nodes, [vi("x", F, [2, 3, 4])], [vi("y", F, [])], opset=13)


def case_reducesum13_noop(out):
    """noop_with_empty_axes = 1 and no axes: the identity."""
    nodes = [helper.make_node("ReduceSum", ["x"], ["r"], name="rs", noop_with_empty_axes=1),
             helper.make_node("Relu", ["r"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 3, 4])], opset=13)


def case_reducesum13_axes_attr(out):
    """At opset 13 'axes' is an input; the attribute form is refused."""
    nodes = [helper.make_node("ReduceSum", ["x"], ["y"], name="rs", axes=[1])]
    return model(nodes, [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 1, 4])], opset=13)


# --- errors ------------------------------------------------------------------


def case_err_foreign(out):
    nodes = [helper.make_node("Foo", ["x"], ["y"], name="/blocks.0/Foo", domain="com.x")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])], extra_opsets=[("com.x", 1)])


def case_err_foreign_noopset(out):
    nodes = [helper.make_node("Foo", ["x"], ["y"], name="foo", domain="com.y")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])])


def case_err_unknown_op(out):
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("FancyAttention", ["r"], ["y"], name="/blocks.1/FancyAttention")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])])


def case_err_opset_range(out):
    """LayerNormalization exists in the table only from opset 17."""
    nodes = [helper.make_node("LayerNormalization", ["x", "g"], ["y"], name="ln")]
    return model(nodes, [vi("x", F, [2, 4]), vi("g", F, [4])], [vi("y", F, [2, 4])],
                 opset=16)


def case_err_unnamed_node(out):
    """A node without a name is described by its index."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Sqrt", ["r", "r"], ["y"])]
    nodes[1].op_type = "Bogus"
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])])


def case_err_missing_input(out):
    nodes = [helper.make_node("Add", ["x", "nothere"], ["y"], name="/Add_7")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])])


def case_err_not_sorted(out):
    """Nodes out of topological order: the consumer comes first."""
    nodes = [helper.make_node("Relu", ["r"], ["y"], name="second"),
             helper.make_node("Relu", ["x"], ["r"], name="first")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])])


def case_err_broadcast(out):
    nodes = [helper.make_node("Add", ["a", "b"], ["y"], name="/blocks.2/Add")]
    return model(nodes, [vi("a", F, [3, 4]), vi("b", F, [5])], [vi("y", F, [3, 4])])


def case_err_matmul(out):
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y"], name="/mlp/MatMul")]
    return model(nodes, [vi("a", F, [2, 3]), vi("b", F, [4, 5])], [vi("y", F, [2, 5])])


def case_err_attr_kind(out):
    nodes = [helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1.0)]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])


def case_err_unknown_attr(out):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu", alpha=0.5)]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])


def case_err_reshape_dynamic(out):
    nodes = [helper.make_node("Reshape", ["x", "shp"], ["y"], name="/Reshape_3")]
    return model(nodes, [vi("x", F, [2, 6]), vi("shp", I64, [2])], [vi("y", F, [3, 4])])


def case_err_reshape_count(out):
    nodes = [const("shape", [5, -1]),
             helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")]
    return model(nodes, [vi("x", F, [2, 6])], [vi("y", F, [5, 2])])


def case_err_dynamic_dim(out):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, ["batch", 4])], [vi("y", F, ["batch", 4])])


def case_err_no_shape(out):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [helper.make_tensor_value_info("x", F, None)], [vi("y", F, [4])])


def case_err_output_shape(out):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [3, 2])])


def case_err_output_dtype(out):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", I64, [2, 3])])


def case_err_output_missing(out):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, [2, 3])], [vi("z", F, [2, 3])])


def case_err_duplicate_output(out):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu_a"),
             helper.make_node("Neg", ["x"], ["y"], name="neg_b")]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])


def case_err_duplicate_input(out):
    """A node output that shadows a graph input."""
    nodes = [helper.make_node("Relu", ["x"], ["x"], name="relu_self")]
    return model(nodes, [vi("x", F, [2, 3])], [vi("x", F, [2, 3])])


def case_err_duplicate_initializer(out):
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])],
                 [init("w", [1, 2]), init("w", [3, 4])])


def case_err_string_cast(out):
    nodes = [helper.make_node("Cast", ["x"], ["y"], name="/Cast_1", to=TensorProto.STRING)]
    return model(nodes, [vi("x", F, [2])], [vi("y", TensorProto.STRING, [2])])


def case_err_sequence_input(out):
    nodes = [helper.make_node("Identity", ["s"], ["y"], name="id")]
    seq = helper.make_tensor_sequence_value_info("s", F, [2])
    return model(nodes, [seq], [vi("y", F, [2])])


def case_err_string_initializer(out):
    t = helper.make_tensor("vocab", TensorProto.STRING, [2], [b"a", b"b"])
    nodes = [helper.make_node("Identity", ["x"], ["y"], name="id")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])], [t])


def case_err_raw_size(out):
    """An initializer whose raw_data does not match dims x dtype."""
    t = init("w", [1, 2, 3])
    t.dims[:] = [4]
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    return model(nodes, [vi("x", F, [4])], [vi("y", F, [4])], [t])


def case_err_div_zero(out):
    """Integer division by zero while folding a shape expression."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             const("zero", [0]),
             helper.make_node("Div", ["s", "zero"], ["q"], name="/Div_0"),
             helper.make_node("Reshape", ["x", "q"], ["y"], name="reshape")]
    return model(nodes, [vi("x", F, [4])], [vi("y", F, [4])])


def case_err_gather_range(out):
    """Out-of-range index while folding Gather on a shape."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             const("idx", 5),
             helper.make_node("Gather", ["s", "idx"], ["d"], name="/Gather_9"),
             helper.make_node("Unsqueeze", ["d"], ["y"], name="unsq", axes=[0])]
    return model(nodes, [vi("x", F, [4, 2])], [vi("y", I64, [1])], opset=11)


def case_err_reshape_overflow(out):
    """Reshape of an empty tensor to [2^32, 2^32]: the element counts only
    agree modulo 2^64."""
    nodes = [const("shape", [2 ** 32, 2 ** 32]),
             helper.make_node("Reshape", ["x", "shape"], ["y"], name="/Reshape_big")]
    return model(nodes, [vi("x", F, [0])], [vi("y", F, [2 ** 32, 2 ** 32])])


def case_err_expand_huge(out):
    nodes = [const("shape", [2 ** 62, 2 ** 62]),
             helper.make_node("Expand", ["x", "shape"], ["y"], name="/Expand_big")]
    return model(nodes, [vi("x", F, [1])], [vi("y", F, [2 ** 62, 2 ** 62])])


def case_err_huge_input(out):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, [2 ** 31, 2 ** 31])], [vi("y", F, [2 ** 31, 2 ** 31])])


# --- hostile files -----------------------------------------------------------


def write_bytes(out, data):
    with open(out, "wb") as f:
        f.write(data)


def hostile_empty(out):
    write_bytes(out, b"")


def hostile_truncated(out):
    # The graph is the bulk of the file (a 4 KiB initializer), so cutting
    # the file in half always lands inside a length-delimited field.
    m = ext_model(np.arange(1024, dtype=np.float32).reshape(32, 32))
    data = m.SerializeToString()
    write_bytes(out, data[: len(data) // 2])


def hostile_random(out):
    rng = random.Random(20240229)
    write_bytes(out, bytes(rng.randrange(256) for _ in range(4096)))


def hostile_not_model(out):
    """A valid protobuf that is not a model (a TensorProto)."""
    write_bytes(out, init("t", [1.0, 2.0]).SerializeToString())


def ext_model(weight, location=None, offset=None, length=None, bias=None):
    """y = x @ w (+ bias), with `w` optionally stored externally."""
    w = numpy_helper.from_array(weight, "blocks.0.mlp.weight")
    if location is not None:
        external(w, location, offset, length)
    nodes = [helper.make_node("MatMul", ["x", "blocks.0.mlp.weight"], ["y"], name="mm")]
    inits = [w]
    if bias is not None:
        nodes.append(helper.make_node("Add", ["y", "shift"], ["z"], name="add"))
        inits.append(bias)
        outputs = [vi("z", F, [2, weight.shape[1]])]
    else:
        outputs = [vi("y", F, [2, weight.shape[1]])]
    return model(nodes, [vi("x", F, [2, weight.shape[0]])], outputs, inits)


WEIGHT = np.arange(12, dtype=np.float32).reshape(4, 3)


def data_path(out, name):
    return os.path.join(os.path.dirname(os.path.abspath(out)), name)


def write_data(out, name, prefix=b""):
    write_bytes(data_path(out, name), prefix + WEIGHT.tobytes())


def hostile_ext_ok(out):
    """Weights in 'weights.bin' at offset 16 (after 16 junk bytes)."""
    write_data(out, "weights.bin", b"\xAA" * 16)
    return ext_model(WEIGHT, "weights.bin", offset=16, length=WEIGHT.nbytes)


def hostile_ext_subdir(out):
    """Weights in a subdirectory (allowed: still inside the model's directory)."""
    os.makedirs(data_path(out, "data"), exist_ok=True)
    write_data(out, "data/w.bin")
    return ext_model(WEIGHT, "data/w.bin")


def hostile_ext_absolute(out):
    write_data(out, "abs.bin")
    return ext_model(WEIGHT, data_path(out, "abs.bin"))


def hostile_ext_dotdot(out):
    write_data(out, "dotdot.bin")
    here = os.path.basename(os.path.dirname(os.path.abspath(out)))
    return ext_model(WEIGHT, "../" + here + "/dotdot.bin")


def hostile_ext_symlink(out):
    write_data(out, "real.bin")
    link = data_path(out, "link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("real.bin", link)
    return ext_model(WEIGHT, "link.bin")


def hostile_ext_symlink_dir(out):
    """A symlinked directory on the way to the data file."""
    os.makedirs(data_path(out, "realdir"), exist_ok=True)
    write_data(out, "realdir/w.bin")
    link = data_path(out, "linkdir")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("realdir", link)
    return ext_model(WEIGHT, "linkdir/w.bin")


def hostile_ext_missing(out):
    """The float weight's data file is absent (a model planned without its
    weights); shapes are all the importer needs."""
    path = data_path(out, "missing.bin")
    if os.path.exists(path):
        os.remove(path)
    return ext_model(WEIGHT, "missing.bin")


def hostile_ext_missing_int(out):
    """An int64 initializer (a Reshape shape) whose external data is absent:
    its value is needed at import time."""
    path = data_path(out, "missing_shape.bin")
    if os.path.exists(path):
        os.remove(path)
    shape = external(init("target_shape", [3, 4], np.int64), "missing_shape.bin")
    nodes = [helper.make_node("Reshape", ["x", "target_shape"], ["y"], name="/Reshape")]
    return model(nodes, [vi("x", F, [2, 6])], [vi("y", F, [3, 4])], [shape])


def hostile_ext_missing_output(out):
    """An int64 initializer with absent external data that is itself a graph
    output: the output cannot be materialized."""
    path = data_path(out, "missing_out.bin")
    if os.path.exists(path):
        os.remove(path)
    ids = external(init("token_ids", [3, 4], np.int64), "missing_out.bin")
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2]), vi("token_ids", I64, [2])], [ids])


def hostile_ext_directory(out):
    """The location names a directory, not a file."""
    os.makedirs(data_path(out, "adir"), exist_ok=True)
    return ext_model(WEIGHT, "adir")


def hostile_ext_length(out):
    write_data(out, "len.bin")
    return ext_model(WEIGHT, "len.bin", length=WEIGHT.nbytes - 4)


def hostile_ext_offset(out):
    """The offset leaves fewer bytes than the tensor needs."""
    write_data(out, "off.bin")
    return ext_model(WEIGHT, "off.bin", offset=8)


def hostile_ext_offset_huge(out):
    """An offset near INT64_MAX (no overflow in the bounds check)."""
    write_data(out, "huge.bin")
    return ext_model(WEIGHT, "huge.bin", offset=2 ** 63 - 2)


def hostile_ext_offset_bad(out):
    write_data(out, "bad.bin")
    return ext_model(WEIGHT, "bad.bin", offset="-5")


def hostile_ext_no_location(out):
    w = numpy_helper.from_array(WEIGHT, "blocks.0.mlp.weight")
    external(w, None, offset=0)
    m = ext_model(WEIGHT)
    m.graph.initializer[0].CopyFrom(w)
    return m


def hostile_huge_dims(out):
    """dims whose element count overflows int64."""
    t = init("w", [1.0])
    t.dims[:] = [2 ** 40, 2 ** 40]
    nodes = [helper.make_node("Identity", ["x"], ["y"], name="id")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])], [t])


def hostile_negative_dims(out):
    t = init("w", [1.0])
    t.dims[:] = [-1]
    nodes = [helper.make_node("Identity", ["x"], ["y"], name="id")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])], [t])


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}
CASES.update({name[len("hostile_"):]: fn for name, fn in globals().items()
              if name.startswith("hostile_")})


def run_case(argv, cases, usage):
    """The case scripts' command line: `SCRIPT CASE OUT.onnx` writes case
    CASE (a function of OUT returning the model, or None when it wrote OUT
    itself); `SCRIPT --list` names the cases. Shared by every make_*.py."""
    if len(argv) == 2 and argv[1] == "--list":
        print("\n".join(sorted(cases)))
        return 0
    if len(argv) != 3 or argv[1] not in cases:
        sys.stderr.write(usage)
        if len(argv) == 3:
            sys.stderr.write("unknown case '%s'\n" % argv[1])
        return 2
    out = argv[2]
    result = cases[argv[1]](out)
    if result is not None:
        # Save without onnx.save's external-data conversion (it would
        # rewrite our hand-made external_data entries).
        write_bytes(out, result.SerializeToString())
    return 0


def main(argv):
    return run_case(argv, CASES, __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
