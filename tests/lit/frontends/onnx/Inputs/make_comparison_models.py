#!/usr/bin/env python3
"""Writes the ONNX models of comparisons.test: comparisons, logic, IsNaN,
IsInf, Max and Min as torch 2.x's exporters use them.

Usage: make_comparison_models.py CASE OUT.onnx

Deterministic; onnx.helper of Debian's onnx 1.12 (opset numbers above 17
are only written into opset_import, which 1.12 allows).
"""

import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name, values, dtype=np.int64):
    arr = np.array(values, dtype=dtype)
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name))


def model(nodes, inputs, outputs, opset=20):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def mask():
    """A causal mask built from constant positions, as the dynamo exporter
    writes it: Equal/LessOrEqual/And/Not/Max on constants fold away."""
    return model([
        const("q", [[0], [1], [2], [3]]),
        const("k", [[0, 1, 2, 3]]),
        const("one", 1),
        helper.make_node("LessOrEqual", ["k", "q"], ["causal"]),
        helper.make_node("Equal", ["k", "k"], ["all"]),
        helper.make_node("And", ["causal", "all"], ["both"]),
        helper.make_node("Max", ["q", "one"], ["clamped"]),
        helper.make_node("Greater", ["clamped", "one"], ["late"]),
        helper.make_node("Or", ["both", "late"], ["keep"]),
        const("fill", -1.0e9, np.float32),
        helper.make_node("Where", ["keep", "x", "fill"], ["y"]),
    ], [vi("x", F, [4, 4])], [vi("y", F, [4, 4])])


def runtime():
    """The same ops on graph inputs: each becomes one nn op."""
    return model([
        helper.make_node("IsNaN", ["x"], ["nan"]),
        const("zero", 0.0, np.float32),
        helper.make_node("Where", ["nan", "zero", "x"], ["guarded"]),
        helper.make_node("Greater", ["x", "y"], ["gt"]),
        helper.make_node("Max", ["x", "y", "z"], ["mx"]),
        helper.make_node("Min", ["x", "z"], ["mn"]),
        helper.make_node("IsInf", ["x"], ["posinf"], detect_negative=0),
        helper.make_node("Xor", ["gt", "posinf"], ["either"]),
        helper.make_node("Equal", ["i", "j"], ["same"]),
        helper.make_node("LessOrEqual", ["i", "j"], ["le"]),
    ], [vi("x", F, [2, 3]), vi("y", F, [3]), vi("z", F, [2, 1]),
        vi("i", I64, [2, 3]), vi("j", I64, [1])],
        [vi("guarded", F, [2, 3]), vi("mx", F, [2, 3]), vi("mn", F, [2, 3]),
         vi("either", B, [2, 3]), vi("same", B, [2, 3]), vi("le", B, [2, 3])])


def bool_less():
    return model([helper.make_node("Less", ["a", "b"], ["y"])],
                 [vi("a", B, [2]), vi("b", B, [2])], [vi("y", B, [2])])


def and_float():
    return model([helper.make_node("And", ["a", "b"], ["y"])],
                 [vi("a", F, [2]), vi("b", F, [2])], [vi("y", B, [2])])


def isnan_int():
    return model([helper.make_node("IsNaN", ["a"], ["y"])],
                 [vi("a", I64, [2])], [vi("y", B, [2])])


def max_mixed():
    return model([helper.make_node("Max", ["a", "b"], ["y"])],
                 [vi("a", F, [2]), vi("b", I64, [2])], [vi("y", F, [2])])


def max_opset6():
    return model([helper.make_node("Max", ["a", "b"], ["y"])],
                 [vi("a", F, [2]), vi("b", F, [2])], [vi("y", F, [2])], opset=6)


CASES = {f.__name__: f for f in [mask, runtime, bool_less, and_float, isnan_int, max_mixed,
                                 max_opset6]}

if __name__ == "__main__":
    save(CASES[sys.argv[1]](), sys.argv[2])
