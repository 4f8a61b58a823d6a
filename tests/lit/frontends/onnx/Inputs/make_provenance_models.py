#!/usr/bin/env python3
"""Writes small ONNX models shaped like torch's exports, for the lit tests of
which initializers are parameters (frontends/onnx/ParameterProvenance.h).

Usage: make_provenance_models.py CASE OUT.onnx

The dynamo exporter's metadata (GraphProto.metadata_props, field 16, and
NodeProto.metadata_props, field 9) is newer than the Debian onnx (1.12) the
lit suite runs, so it is appended to the serialized messages as protobuf
fields by hand; readers that know the fields see them as torch writes them.
Cases:
  folded    dynamo optimize=True style: fc.weight folded into a transposed
            `val_3`, ln2.weight merged into ln1.weight, wpe.weight folded
            with every node using it, a float buffer and a
            float scale constant; graph signature + node metadata; returns
            a scalar loss.
  clean     dynamo optimize=False style: parameters under their torch names,
            head.weight a tied alias no node names, a float rotary buffer;
            no warning expected.
  tied      legacy exporter with constant folding: `onnx::MatMul_7` is the
            exact transpose of emb.weight.
  untied    as tied, but the [4, 3] weight is not emb.weight's transpose.
  manifest  no metadata; initializers `val_0`, `b`, `gain`, `mask` that a
            manifest (Inputs/provenance-manifest.json) names; returns a
            scalar loss.
"""

import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, payload):
    """A length-delimited protobuf field."""
    return varint((number << 3) | 2) + varint(len(payload)) + payload


def entry(key, value):
    """A serialized StringStringEntryProto."""
    return field(1, key.encode()) + field(2, value.encode())


def save(out, nodes, inputs, outputs, inits, signature=None, node_metadata=None):
    """Saves the model; `signature` is the graph signature text and
    `node_metadata` maps a node index to its (key, value) pairs."""
    graph = helper.make_graph([], "provenance", inputs, outputs, inits)
    graph_bytes = graph.SerializeToString()
    for i, node in enumerate(nodes):
        node_bytes = node.SerializeToString()
        for key, value in (node_metadata or {}).get(i, []):
            node_bytes += field(9, entry(key, value))
        graph_bytes += field(1, node_bytes)  # GraphProto.node
    if signature is not None:
        graph_bytes += field(16, entry(
            "pkg.torch.export.ExportedProgram.graph_signature", signature))
    model = helper.make_model(
        helper.make_graph([], "placeholder", [], []),
        opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch")
    model.ClearField("graph")
    with open(out, "wb") as f:
        f.write(model.SerializeToString() + field(7, graph_bytes))  # ModelProto.graph


def tensor(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def scoped(module, op, fx):
    return [("pkg.torch.onnx.name_scopes", repr(["", module, op])),
            ("pkg.torch.onnx.fx_node", fx)]


def folded(out):
    w = np.arange(16, dtype=np.float32).reshape(4, 4) / 16
    signature = "\n".join([
        "", "# inputs",
        "p_fc_weight: PARAMETER target='fc.weight'",
        "p_fc_bias: PARAMETER target='fc.bias'",
        "p_ln1_weight: PARAMETER target='ln1.weight'",
        "p_ln2_weight: PARAMETER target='ln2.weight'",
        "p_wpe_weight: PARAMETER target='wpe.weight'",
        "b_mask: BUFFER target='mask' persistent=True",
        "x: USER_INPUT", "", "# outputs", "loss: USER_OUTPUT", ""])
    nodes = [
        helper.make_node("MatMul", ["x", "val_3"], ["mm"], name="node_linear"),
        helper.make_node("Add", ["mm", "fc.bias"], ["linear"], name="node_linear_add"),
        helper.make_node("Mul", ["linear", "ln1.weight"], ["mul"], name="node_mul"),
        helper.make_node("Mul", ["mul", "ln1.weight"], ["mul_1"], name="node_mul_1"),
        helper.make_node("Add", ["mul_1", "mask"], ["add"], name="node_add"),
        helper.make_node("Mul", ["add", "val_9"], ["y"], name="node_scale"),
        helper.make_node("ReduceMean", ["y"], ["loss"], name="node_mean", keepdims=0),
    ]
    linear = "%linear : [num_users=1] = call_function[target=torch.ops.aten.linear.default]" \
             "(args = (%x, %p_fc_weight, %p_fc_bias), kwargs = {})"
    meta = {
        0: scoped("fc", "linear", linear), 1: scoped("fc", "linear", linear),
        2: scoped("ln1", "mul", "%mul : [num_users=1] = call_function[target=torch.ops."
                  "aten.mul.Tensor](args = (%linear, %p_ln1_weight), kwargs = {})"),
        3: scoped("ln2", "mul_1", "%mul_1 : [num_users=1] = call_function[target=torch.ops."
                  "aten.mul.Tensor](args = (%mul, %p_ln2_weight), kwargs = {})"),
    }
    inits = [tensor("val_3", w.T), tensor("fc.bias", [0.1, 0.2, 0.3, 0.4]),
             tensor("ln1.weight", [1, 1, 1, 1]), tensor("mask", np.zeros((2, 4))),
             tensor("val_9", 0.5)]
    save(out, nodes, [helper.make_tensor_value_info("x", F, [2, 4])],
         [helper.make_tensor_value_info("loss", F, [])], inits, signature, meta)


def clean(out):
    signature = "\n".join([
        "", "# inputs",
        "p_fc_weight: PARAMETER target='fc.weight'",
        "p_fc_bias: PARAMETER target='fc.bias'",
        "p_head_weight: PARAMETER target='head.weight'",
        "b_rot_inv_freq: BUFFER target='rot.inv_freq' persistent=False",
        "x: USER_INPUT", "", "# outputs", "y: USER_OUTPUT", ""])
    nodes = [
        helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["h"], transB=1),
        helper.make_node("Mul", ["h", "rot.inv_freq"], ["y"]),
    ]
    inits = [tensor("fc.weight", np.eye(4)), tensor("fc.bias", [0, 1, 2, 3]),
             tensor("rot.inv_freq", [1.0, 0.1, 0.01, 0.001])]
    save(out, nodes, [helper.make_tensor_value_info("x", F, [2, 4])],
         [helper.make_tensor_value_info("y", F, [2, 4])], inits, signature, {})


def legacy_tied(out, split=True):
    emb = np.arange(12, dtype=np.float32).reshape(3, 4) / 12
    head = emb.T if split else emb.T + 1
    nodes = [
        helper.make_node("Gather", ["emb.weight", "ids"], ["h"], name="/emb/Gather"),
        helper.make_node("MatMul", ["h", "onnx::MatMul_7"], ["logits"], name="/head/MatMul"),
    ]
    # A zero-initialized pair of transposed shapes is no tie: not reported.
    inits = [tensor("emb.weight", emb), tensor("onnx::MatMul_7", head),
             tensor("lora.a", np.zeros((2, 5))), tensor("lora.b", np.zeros((5, 2)))]
    save(out, nodes, [helper.make_tensor_value_info("ids", I64, [2])],
         [helper.make_tensor_value_info("logits", F, [2, 3])], inits)


def manifest(out):
    w = np.arange(16, dtype=np.float32).reshape(4, 4) / 16 - 0.5
    nodes = [
        helper.make_node("MatMul", ["x", "val_0"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["h"]),
        helper.make_node("Mul", ["h", "gain"], ["g"]),
        helper.make_node("Add", ["g", "mask"], ["m"]),
        helper.make_node("Mul", ["m", "m"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0),
    ]
    inits = [tensor("val_0", w), tensor("b", [0.1, -0.2, 0.3, -0.4]),
             tensor("gain", [1.0, 2.0, 0.5, 1.5]), tensor("mask", np.full((2, 4), -0.25))]
    save(out, nodes, [helper.make_tensor_value_info("x", F, [2, 4])],
         [helper.make_tensor_value_info("loss", F, [])], inits)


def padding_idx(out, index="0"):
    """An embedding whose FX text carries padding_idx (`index`; "-1" is
    torch's no-padding value, which must stay silent)."""
    signature = "\n".join([
        "", "# inputs", "p_emb_weight: PARAMETER target='emb.weight'",
        "idx: USER_INPUT", "", "# outputs", "y: USER_OUTPUT", ""])
    nodes = [helper.make_node("Gather", ["emb.weight", "idx"], ["y"], name="node_embedding")]
    fx = ("%embedding : [num_users=1] = call_function[target=torch.ops.aten.embedding.default]"
          "(args = (%p_emb_weight, %idx" + (", " + index if index else "") + "), kwargs = {})")
    save(out, nodes, [helper.make_tensor_value_info("idx", TensorProto.INT64, [2])],
         [helper.make_tensor_value_info("y", F, [2, 4])], [tensor("emb.weight", np.eye(4))],
         signature, {0: scoped("emb", "embedding", fx)})


CASES = {"folded": folded, "clean": clean, "tied": legacy_tied,
         "untied": lambda out: legacy_tied(out, split=False), "manifest": manifest,
         "padding_idx": padding_idx, "no_padding_idx": lambda out: padding_idx(out, None),
         "padding_idx_none": lambda out: padding_idx(out, "-1"),
         "padding_idx_blank": lambda out: padding_idx(out, " ")}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        sys.exit("usage: make_provenance_models.py {%s} OUT.onnx" % "|".join(CASES))
    CASES[sys.argv[1]](sys.argv[2])
