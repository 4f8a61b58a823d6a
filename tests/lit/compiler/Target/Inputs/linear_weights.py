#!/usr/bin/env python3
"""Writes an ONNX model whose only job is to carry initial weights.

Usage: linear_weights.py OUT.onnx

The plan-emitter training tests compile .mlir input; a plan's initial
parameter values come from the ONNX model the module's `nn.source`
attribute names. This model holds `fc.weight` [3, 4] and `fc.bias` [3]
(fixed values) in a one-node graph (y = x @ fc.weight^T + fc.bias), so the
test's .mlir can name it as its source.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    weight = np.arange(12, dtype=np.float32).reshape(3, 4) / 10.0
    bias = np.array([0.5, -0.5, 0.25], dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1)],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(weight, "fc.weight"), numpy_helper.from_array(bias, "fc.bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="linear_weights.py")
    model.ir_version = 8
    onnx.save(model, out)


if __name__ == "__main__":
    main()
