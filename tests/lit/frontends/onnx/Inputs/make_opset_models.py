#!/usr/bin/env python3
"""Writes ONNX models for the opset 18-28, element type, IR version and
model-local function lit tests (opsets-18-28.test, dynamo-structural.test,
functions.test, element-types.test).

Usage: make_opset_models.py CASE OUT.onnx
       make_opset_models.py --list

Runs with Debian's onnx 1.12, which predates these opsets: nodes, attributes
and opset numbers are plain protobuf fields, so onnx.helper writes them all
the same (no checker runs). Fields 1.12 does not know (FunctionProto
overload and attribute_proto, NodeProto overload) are appended as raw
protobuf bytes, which is exactly how a newer writer serializes them.
"""

import os
import sys

import numpy as np
from onnx import AttributeProto, TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_model import F, I64, const, init, model, run_case, vi  # noqa: E402

B = TensorProto.BOOL


def node(op, inputs, outputs, name=None, **attrs):
    return helper.make_node(op, inputs, outputs, name=name or op.lower(), **attrs)


# --- opset 18-28 versions of existing operators ------------------------------


def case_split18_num_outputs(out):
    """Split-18 with num_outputs = 3 on a dimension of 7: chunks 3, 3, 1."""
    nodes = [node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)]
    return model(nodes, [vi("x", F, [2, 7])],
                 [vi("a", F, [2, 3]), vi("b", F, [2, 3]), vi("c", F, [2, 1])], opset=18)


def case_split18_even(out):
    """num_outputs that divides the dimension: equal parts (opset 28)."""
    nodes = [node("Split", ["x"], ["a", "b"], axis=-1, num_outputs=2)]
    return model(nodes, [vi("x", F, [2, 6])], [vi("a", F, [2, 3]), vi("b", F, [2, 3])],
                 opset=28)


def case_split18_input(out):
    """Split-20 with the split sizes as a constant input, as in 13-17."""
    nodes = [const("sizes", [2, 5]), node("Split", ["x", "sizes"], ["a", "b"], axis=1)]
    return model(nodes, [vi("x", F, [2, 7])], [vi("a", F, [2, 2]), vi("b", F, [2, 5])],
                 opset=20)


def case_err_split18_neither(out):
    """Opset 18 needs the split input or num_outputs."""
    nodes = [node("Split", ["x"], ["a", "b"], axis=1)]
    return model(nodes, [vi("x", F, [2, 6])], [vi("a", F, [2, 3]), vi("b", F, [2, 3])],
                 opset=18)


def case_err_split18_mismatch(out):
    nodes = [node("Split", ["x"], ["a", "b"], axis=1, num_outputs=3)]
    return model(nodes, [vi("x", F, [2, 6])], [vi("a", F, [2, 3]), vi("b", F, [2, 3])],
                 opset=18)


def case_err_split18_short(out):
    """5 into 4 chunks of 2 leaves -1 for the last: refused."""
    nodes = [node("Split", ["x"], ["a", "b", "c", "d"], axis=0, num_outputs=4)]
    outs = [vi(n, F, None) for n in "abcd"]
    return model(nodes, [vi("x", F, [5])], outs, opset=18)


def case_err_split17_num_outputs(out):
    """num_outputs does not exist before opset 18."""
    nodes = [node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2)]
    return model(nodes, [vi("x", F, [2, 6])], [vi("a", F, [2, 3]), vi("b", F, [2, 3])],
                 opset=17)


def case_reduce18_axes_input(out):
    """ReduceMax/ReduceMean-18 take axes as an optional constant input."""
    nodes = [const("axes", [-1]),
             node("ReduceMax", ["x", "axes"], ["mx"], keepdims=0),
             node("ReduceMean", ["x", "axes"], ["mean"]),
             node("ReduceMean", ["x"], ["all"], keepdims=0),
             node("ReduceMax", ["x"], ["same"], name="noop", noop_with_empty_axes=1)]
    return model(nodes, [vi("x", F, [2, 3])],
                 [vi("mx", F, [2]), vi("mean", F, [2, 1]), vi("all", F, []),
                  vi("same", F, [2, 3])], opset=18)


def case_err_reduce18_axes_attr(out):
    nodes = [node("ReduceMean", ["x"], ["y"], axes=[1])]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 1])], opset=18)


def case_reducemax20_bool(out):
    """ReduceMax-20 on bool: any along axis 1."""
    nodes = [const("axes", [1]), node("ReduceMax", ["m", "axes"], ["y"], keepdims=0)]
    return model(nodes, [vi("m", B, [2, 3])], [vi("y", B, [2])], opset=20)


def case_err_reducemax18_bool(out):
    nodes = [const("axes", [1]), node("ReduceMax", ["m", "axes"], ["y"], keepdims=0)]
    return model(nodes, [vi("m", B, [2, 3])], [vi("y", B, [2])], opset=18)


def case_cast19(out):
    """Cast-19 and Cast-24 attributes (saturate, round_mode) only concern
    float 8; a float -> int32 cast with them imports as before."""
    nodes = [node("Cast", ["x"], ["y"], to=TensorProto.INT32, saturate=0)]
    return model(nodes, [vi("x", F, [3])], [vi("y", TensorProto.INT32, [3])], opset=19)


def case_cast24(out):
    nodes = [node("Cast", ["x"], ["y"], to=TensorProto.FLOAT16, saturate=1, round_mode="up")]
    return model(nodes, [vi("x", F, [3])], [vi("y", TensorProto.FLOAT16, [3])], opset=24)


def case_err_cast18_saturate(out):
    """saturate does not exist before opset 19."""
    nodes = [node("Cast", ["x"], ["y"], to=TensorProto.INT32, saturate=0)]
    return model(nodes, [vi("x", F, [3])], [vi("y", TensorProto.INT32, [3])], opset=18)


def case_err_cast_float8(out):
    """Cast to float8e4m3fn (17) is refused by type name."""
    nodes = [node("Cast", ["x"], ["y"], to=17)]
    return model(nodes, [vi("x", F, [3])], [vi("y", 17, [3])], opset=19)


def case_opset28_mix(out):
    """Type-only bumps at opset 28: Shape, Reshape, Unsqueeze, Squeeze,
    Transpose, Identity, Constant, Concat, Softmax, LayerNormalization."""
    nodes = [node("Shape", ["x"], ["s"], start=1),
             const("infer", [-1]),
             node("Concat", ["infer", "s"], ["s2"], axis=0),
             node("Reshape", ["x", "s2"], ["r"]),
             const("ax", [0]),
             node("Unsqueeze", ["r", "ax"], ["u"]),
             node("Squeeze", ["u", "ax"], ["q"]),
             node("Transpose", ["q"], ["t"], perm=[0, 2, 1]),
             node("Identity", ["t"], ["i"]),
             node("Softmax", ["i"], ["sm"], axis=-1),
             node("LayerNormalization", ["sm", "g", "b"], ["y"], axis=-1)]
    return model(nodes, [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 4, 3])],
                 [init("g", np.ones(3)), init("b", np.zeros(3))], opset=28)


def case_err_opset29(out):
    """Opset 29 does not exist in ONNX 1.23: refused as out of range."""
    nodes = [node("Relu", ["x"], ["y"])]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])], opset=29)


# --- IR versions -------------------------------------------------------------


def ir_case(ir):
    def build(out):
        nodes = [node("Relu", ["x"], ["y"])]
        return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])], opset=20, ir_version=ir)
    return build


for _ir in (9, 10, 11, 12, 13, 14):
    globals()["case_ir%d" % _ir] = ir_case(_ir)


# --- element types of later ONNX versions ------------------------------------


def raw_tensor(name, dtype, dims, nbytes):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    t.raw_data = bytes(nbytes)
    return t


def case_err_float8_initializer(out):
    nodes = [node("Identity", ["w"], ["y"])]
    return model(nodes, [], [vi("y", 19, [4])], [raw_tensor("w", 19, [4], 4)], opset=20)


def case_err_int4_initializer(out):
    nodes = [node("Identity", ["w"], ["y"])]
    return model(nodes, [], [vi("y", 22, [4])], [raw_tensor("w", 22, [4], 2)], opset=21)


def case_err_float4_input(out):
    nodes = [node("Identity", ["x"], ["y"])]
    return model(nodes, [vi("x", 23, [4])], [vi("y", 23, [4])], opset=23)


def case_err_uint2_constant(out):
    nodes = [helper.make_node("Constant", [], ["c"], name="c2",
                              value=raw_tensor("v", 25, [4], 1))]
    return model(nodes, [], [vi("c", 25, [4])], opset=25)


def case_err_float6_cast(out):
    nodes = [node("Cast", ["x"], ["y"], to=28)]
    return model(nodes, [vi("x", F, [3])], [vi("y", 28, [3])], opset=28)


# --- dynamo exporter's structural ops ---------------------------------------


def case_castlike(out):
    """CastLike of a float constant to int64 folds; CastLike of a tensor to
    float16 is a cast; to its own type, nothing."""
    nodes = [helper.make_node("Constant", [], ["c"], name="c",
                              value=numpy_helper.from_array(np.array(3.7, np.float32), "c")),
             node("CastLike", ["c", "n"], ["ci"], name="fold"),
             node("Add", ["n", "ci"], ["sum"]),
             node("CastLike", ["x", "h"], ["xh"], name="tohalf"),
             node("CastLike", ["x", "x"], ["xs"], name="same", saturate=1)]
    return model(nodes, [vi("x", F, [3]), vi("h", TensorProto.FLOAT16, [1]),
                         vi("n", I64, [])],
                 [vi("sum", I64, []), vi("xh", TensorProto.FLOAT16, [3]), vi("xs", F, [3])],
                 opset=20)


def case_split_to_sequence(out):
    """gpt2's qkv split: SplitToSequence with 1-D sizes, three SequenceAt."""
    nodes = [const("sizes", [4, 4, 4]),
             node("SplitToSequence", ["x", "sizes"], ["seq"], axis=2),
             const("p0", 0), const("p1", 1), const("pm1", -1),
             node("SequenceAt", ["seq", "p0"], ["q"], name="at0"),
             node("SequenceAt", ["seq", "p1"], ["k"], name="at1"),
             node("SequenceAt", ["seq", "pm1"], ["v"], name="atm1")]
    return model(nodes, [vi("x", F, [2, 3, 12])],
                 [vi("q", F, [2, 3, 4]), vi("k", F, [2, 3, 4]), vi("v", F, [2, 3, 4])],
                 opset=20)


def case_split_to_sequence_scalar(out):
    """A scalar split of 4 on a dimension of 10: chunks 4, 4, 2; an
    Identity passes the sequence on."""
    nodes = [const("size", 4),
             node("SplitToSequence", ["x", "size"], ["seq"], axis=1),
             node("Identity", ["seq"], ["seq2"]),
             const("p", 2),
             node("SequenceAt", ["seq2", "p"], ["y"], name="at")]
    return model(nodes, [vi("x", F, [2, 10])], [vi("y", F, [2, 2])], opset=20)


def case_split_to_sequence_nokeep(out):
    """No split and keepdims = 0: slices of 1 with the axis dropped; on a
    constant input the parts fold."""
    nodes = [const("table", [[1, 2, 3], [4, 5, 6]]),
             node("SplitToSequence", ["table"], ["seq"], axis=0, keepdims=0),
             const("p", 1),
             node("SequenceAt", ["seq", "p"], ["row"], name="at"),
             node("Add", ["row", "row"], ["y"]),
             node("SplitToSequence", ["x"], ["seqx"], name="splitx", axis=1, keepdims=0),
             node("SequenceAt", ["seqx", "p"], ["col"], name="atx")]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", I64, [3]), vi("col", F, [2])],
                 opset=20)


def case_err_sequence_other_use(out):
    """A sequence passed to any op but SequenceAt is refused by name."""
    nodes = [node("SplitToSequence", ["x"], ["seq"], axis=0),
             node("Relu", ["seq"], ["y"])]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], opset=20)


def case_err_sequence_output(out):
    nodes = [node("SplitToSequence", ["x"], ["seq"], axis=0)]
    out_seq = helper.make_tensor_sequence_value_info("seq", F, None)
    return model(nodes, [vi("x", F, [2, 3])], [out_seq], opset=20)


def case_err_sequence_at_position(out):
    nodes = [node("SplitToSequence", ["x"], ["seq"], axis=0),
             const("p", 2),
             node("SequenceAt", ["seq", "p"], ["y"], name="at")]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [1, 3])], opset=20)


def case_err_sequence_at_dynamic(out):
    nodes = [node("SplitToSequence", ["x"], ["seq"], axis=0),
             node("SequenceAt", ["seq", "p"], ["y"], name="at")]
    return model(nodes, [vi("x", F, [2, 3]), vi("p", I64, [])], [vi("y", F, [1, 3])],
                 opset=20)


def case_err_sequence_sizes_overflow(out):
    """1-D sizes whose sum overflows int64 (adding them up was undefined)."""
    nodes = [const("sizes", [2 ** 62 + 2 ** 61, 2 ** 62 + 2 ** 61]),
             node("SplitToSequence", ["x", "sizes"], ["seq"], axis=1),
             const("p", 0),
             node("SequenceAt", ["seq", "p"], ["y"], name="at")]
    return model(nodes, [vi("x", F, [2, 7])], [vi("y", F, [2, 7])], opset=20)


def case_err_sequence_too_many_parts(out):
    """No split on a dimension of 2^20: a part of 1 each would make a
    million values."""
    nodes = [node("SplitToSequence", ["x"], ["seq"], axis=0),
             const("p", 0),
             node("SequenceAt", ["seq", "p"], ["y"], name="at")]
    return model(nodes, [vi("x", F, [2 ** 20, 0])], [vi("y", F, [1, 0])], opset=20)


def case_sequence_chunk_huge(out):
    """A scalar chunk near INT64_MAX on a dimension near 2^62: one chunk
    (stepping past the dimension overflowed int64 before)."""
    nodes = [const("size", 2 ** 62),
             node("SplitToSequence", ["x", "size"], ["seq"], axis=1),
             const("p", 1),
             node("SequenceAt", ["seq", "p"], ["y"], name="at")]
    return model(nodes, [vi("x", F, [0, 2 ** 62 + 1])], [vi("y", F, [0, 1])], opset=20)


def case_err_concat_overflow(out):
    """Concat of two empty tensors whose sizes along the axis add up past
    int64."""
    nodes = [node("Concat", ["x", "x"], ["y"], axis=1)]
    return model(nodes, [vi("x", F, [0, 2 ** 62 + 2 ** 61])], [vi("y", F, [0, 1])], opset=20)


def case_range(out):
    """nanoGPT's positions: Range(0, 5, 1) in int64 folds into Gather's
    indices; a float Range folds too."""
    nodes = [const("start", 0), const("limit", 5), const("delta", 1),
             node("Range", ["start", "limit", "delta"], ["pos"]),
             node("Gather", ["wpe", "pos"], ["y"], axis=0),
             const("fs", 1.0, np.float32), const("fl", 0.0, np.float32),
             const("fd", -0.25, np.float32),
             node("Range", ["fs", "fl", "fd"], ["fr"], name="frange")]
    return model(nodes, [], [vi("y", F, [5, 4]), vi("fr", F, [4])],
                 [init("wpe", np.arange(32).reshape(8, 4))], opset=20)


def case_err_range_dynamic(out):
    nodes = [const("start", 0), const("delta", 1),
             node("Range", ["start", "n", "delta"], ["pos"])]
    return model(nodes, [vi("n", I64, [])], [vi("pos", I64, [5])], opset=20)


def case_err_range_zero_delta(out):
    nodes = [const("start", 0), const("limit", 5), const("delta", 0),
             node("Range", ["start", "limit", "delta"], ["pos"])]
    return model(nodes, [], [vi("pos", I64, [5])], opset=20)


def case_constant_of_shape(out):
    """A constant shape: small results fold (here an int64 mask of ones that
    an Add consumes), large ones become a broadcast scalar; no value
    attribute means float 0."""
    value = numpy_helper.from_array(np.array([1], np.int64), "v")
    nodes = [const("shape", [2, 3]),
             node("ConstantOfShape", ["shape"], ["ones"], value=value),
             node("Add", ["ones", "ones"], ["twos"]),
             const("big", [512, 512]),
             node("ConstantOfShape", ["big"], ["zeros"], name="bigzeros")]
    return model(nodes, [], [vi("twos", I64, [2, 3]), vi("zeros", F, [512, 512])], opset=20)


def case_err_constant_of_shape_dynamic(out):
    nodes = [node("ConstantOfShape", ["s"], ["y"])]
    return model(nodes, [vi("s", I64, [2])], [vi("y", F, [2, 3])], opset=20)


def case_gathernd(out):
    """GatherND on constants folds: indices [[1], [0]] pick rows; with
    batch_dims = 1 each batch picks its own element."""
    nodes = [const("data", [[1, 2], [3, 4]]), const("rows", [[1], [0]]),
             node("GatherND", ["data", "rows"], ["swapped"]),
             const("pick", [[1], [0]]),
             node("GatherND", ["data", "pick"], ["diag"], name="batched", batch_dims=1),
             node("Add", ["swapped", "swapped"], ["y"])]
    return model(nodes, [], [vi("y", I64, [2, 2]), vi("diag", I64, [2])], opset=20)


def case_mask_chain(out):
    """The shape of the exporter's attention-mask chains: Range, Unsqueeze,
    Expand, Transpose, Cast to bool, Not and GatherND on constants all
    fold, leaving only the results."""
    nodes = [const("start", 0), const("limit", 3), const("delta", 1),
             node("Range", ["start", "limit", "delta"], ["pos"]),
             const("ax0", [0]), const("shape", [2, 3]),
             node("Unsqueeze", ["pos", "ax0"], ["row"], name="u0"),
             node("Expand", ["row", "shape"], ["grid"]),
             node("Transpose", ["grid"], ["t"]),
             node("Cast", ["t"], ["b"], to=B),
             node("Not", ["b"], ["mask"]),
             const("rev", [[2], [1], [0]]),
             node("GatherND", ["t", "rev"], ["g"])]
    return model(nodes, [], [vi("mask", B, [3, 2]), vi("g", I64, [3, 2])], opset=20)


def case_err_gathernd_dynamic(out):
    nodes = [const("rows", [[1], [0]]), node("GatherND", ["x", "rows"], ["y"])]
    return model(nodes, [vi("x", F, [2, 2])], [vi("y", F, [2, 2])], opset=20)


def case_err_gathernd_range(out):
    nodes = [const("data", [[1, 2], [3, 4]]), const("rows", [[2], [0]]),
             node("GatherND", ["data", "rows"], ["y"])]
    return model(nodes, [], [vi("y", I64, [2, 2])], opset=20)


# --- model-local functions ---------------------------------------------------


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def raw_field(number, payload):
    """A length-delimited protobuf field, as newer ONNX writes fields 1.12
    does not define."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def with_raw_fields(message, fields):
    """`message` with raw length-delimited fields appended (protobuf merges
    concatenated messages, so this is the same as setting them)."""
    data = message.SerializeToString() + b"".join(raw_field(n, p) for n, p in fields)
    copy = type(message)()
    copy.ParseFromString(data)
    return copy


def ref_attr(name, ref, attr_type):
    a = AttributeProto()
    a.name = name
    a.ref_attr_name = ref
    a.type = attr_type
    return a


def scaled_softmax_fn():
    """custom.ScaledSoftmax(x) -> y: Softmax-11 (the function imports opset
    11) over the referenced `axis` attribute of (x * 2); its inner value
    names clash with the graph's."""
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    inner = [helper.make_node("Constant", [], ["t"], name="k", value=two),
             helper.make_node("Mul", ["x", "t"], ["tmp"], name="scale"),
             helper.make_node("Softmax", ["tmp"], ["y"], name="sm")]
    inner[2].attribute.append(ref_attr("axis", "axis", AttributeProto.INT))
    return helper.make_function("custom", "ScaledSoftmax", ["x"], ["y"], inner,
                                [helper.make_opsetid("", 11)], ["axis"])


def function_model(functions, nodes, inputs, outputs, opset=20):
    m = model(nodes, inputs, outputs, opset=opset, extra_opsets=[("custom", 1)], ir_version=10)
    m.functions.extend(functions)
    return m


def case_function_inline(out):
    """Two calls of one function with different axis attributes; the graph
    already has a value named `tmp`, which the inlined `tmp`s must not
    capture."""
    nodes = [node("Relu", ["x"], ["tmp"], name="pre"),
             helper.make_node("ScaledSoftmax", ["tmp"], ["a"], name="call0",
                              domain="custom", axis=0),
             helper.make_node("ScaledSoftmax", ["tmp"], ["b"], name="call1",
                              domain="custom", axis=1),
             node("Add", ["a", "b"], ["y"])]
    return function_model([scaled_softmax_fn()], nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])


def case_function_default_attr(out):
    """An attribute the call omits takes the function's attribute_proto
    default (ONNX IR 9 field, written raw); a nested call goes two deep; an
    overload picks among functions of one name."""
    fn = scaled_softmax_fn()
    default = helper.make_attribute("axis", 0)
    fn = with_raw_fields(fn, [(11, default.SerializeToString())])
    del fn.attribute[:]
    outer = helper.make_function(
        "custom", "Twice", ["x"], ["y"],
        [helper.make_node("ScaledSoftmax", ["x"], ["m"], name="first", domain="custom"),
         helper.make_node("Relu", ["m"], ["y"], name="act")],
        [helper.make_opsetid("", 20), helper.make_opsetid("custom", 1)])
    neg = helper.make_function("custom", "Twice", ["x"], ["y"],
                               [helper.make_node("Neg", ["x"], ["y"], name="neg")],
                               [helper.make_opsetid("", 20)])
    neg = with_raw_fields(neg, [(13, b"neg")])
    call = helper.make_node("Twice", ["x"], ["y"], name="call", domain="custom")
    call_neg = with_raw_fields(helper.make_node("Twice", ["y"], ["z"], name="callneg",
                                                domain="custom"), [(8, b"neg")])
    return function_model([fn, outer, neg], [call, call_neg], [vi("x", F, [2, 3])],
                          [vi("z", F, [2, 3])])


def case_err_function_recursive(out):
    body = [helper.make_node("Loop", ["x"], ["y"], name="again", domain="custom")]
    fn = helper.make_function("custom", "Loop", ["x"], ["y"], body,
                              [helper.make_opsetid("custom", 1)])
    nodes = [helper.make_node("Loop", ["x"], ["y"], name="call", domain="custom")]
    return function_model([fn], nodes, [vi("x", F, [2])], [vi("y", F, [2])])


def case_err_function_bomb(out):
    """f0 calls f1 twice, f1 calls f2 twice, ... f40 is empty: 2^40 calls
    from a small file, stopped by the node budget."""
    fns = []
    for i in range(40):
        body = [helper.make_node("F%d" % (i + 1), ["x"], ["y"], name="a", domain="custom"),
                helper.make_node("F%d" % (i + 1), ["x"], ["z"], name="b", domain="custom")]
        fns.append(helper.make_function("custom", "F%d" % i, ["x"], ["y", "z"], body,
                                        [helper.make_opsetid("custom", 1)]))
    fns.append(helper.make_function("custom", "F40", ["x"], ["y", "z"], [],
                                    [helper.make_opsetid("custom", 1)]))
    nodes = [helper.make_node("F0", ["x"], ["y", "z"], name="call", domain="custom")]
    return function_model(fns, nodes, [vi("x", F, [2])], [vi("y", F, [2])])


def case_err_function_deep(out):
    """A chain of 10000 functions, each calling the next."""
    depth = 10000
    fns = [helper.make_function("custom", "F%d" % i, ["x"], ["y"],
                                [helper.make_node("F%d" % (i + 1), ["x"], ["y"], name="n",
                                                  domain="custom")],
                                [helper.make_opsetid("custom", 1)]) for i in range(depth)]
    fns.append(helper.make_function("custom", "F%d" % depth, ["x"], ["y"],
                                    [helper.make_node("Relu", ["x"], ["y"], name="r")],
                                    [helper.make_opsetid("", 20)]))
    nodes = [helper.make_node("F0", ["x"], ["y"], name="call", domain="custom")]
    return function_model(fns, nodes, [vi("x", F, [2])], [vi("y", F, [2])])


def case_err_function_missing(out):
    fn = scaled_softmax_fn()
    nodes = [helper.make_node("Missing", ["x"], ["y"], name="call", domain="custom")]
    return function_model([fn], nodes, [vi("x", F, [2])], [vi("y", F, [2])])


def case_err_function_arity(out):
    fn = scaled_softmax_fn()
    nodes = [helper.make_node("ScaledSoftmax", ["x", "x"], ["y"], name="call",
                              domain="custom", axis=0)]
    return function_model([fn], nodes, [vi("x", F, [2])], [vi("y", F, [2])])


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main(argv):
    return run_case(argv, CASES, __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
