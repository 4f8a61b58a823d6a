#!/usr/bin/env python3
"""Writes small ONNX models for torch-export-ops.test: the math and data
movement ops of torch 2.x exports (Gelu, Reciprocal, Cos, Sin, Softplus,
Pad, Tile, CumSum, RMSNormalization) at the opsets that define them.

Usage: make_export_ops.py CASE OUT.onnx
       make_export_ops.py --list

Built with onnx.helper only (no checker), so Debian's onnx 1.12, which
does not know opsets above 17, writes them as well as a newer onnx would.
Integer operands (pads, axes, repeats) are int64 initializers, which import
as constants at any opset.
"""

import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_model import F, I64, const, init, model, run_case, vi  # noqa: E402


def ints(name, values):
    return init(name, values, np.int64)


def case_gelu(out):
    """Gelu with both approximations (opset 20)."""
    return model([helper.make_node("Gelu", ["x"], ["a"], name="gelu_none"),
                  helper.make_node("Gelu", ["x"], ["b"], name="gelu_tanh", approximate="tanh")],
                 [vi("x", F, [2, 3])], [vi("a", F, [2, 3]), vi("b", F, [2, 3])], opset=20)


def case_gelu_bad(out):
    return model([helper.make_node("Gelu", ["x"], ["a"], name="gelu_fast", approximate="fast")],
                 [vi("x", F, [2, 3])], [vi("a", F, [2, 3])], opset=20)


def case_gelu_old(out):
    """Gelu is an opset-20 operator: at 17 it is refused by name."""
    return model([helper.make_node("Gelu", ["x"], ["a"], name="gelu17")],
                 [vi("x", F, [2, 3])], [vi("a", F, [2, 3])], opset=17)


def case_unary(out):
    """Reciprocal, Cos, Sin, Softplus at opset 22 (Cos/Sin/Softplus v22)."""
    nodes = [helper.make_node(op, ["x"], [op.lower()], name=op.lower())
             for op in ("Reciprocal", "Cos", "Sin", "Softplus")]
    return model(nodes, [vi("x", F, [4])],
                 [vi(op.lower(), F, [4]) for op in ("Reciprocal", "Cos", "Sin", "Softplus")],
                 opset=22)


def case_unary_int(out):
    return model([helper.make_node("Reciprocal", ["x"], ["y"], name="recip_int")],
                 [vi("x", I64, [4])], [vi("y", I64, [4])], opset=13)


def case_pad_labels(out):
    """transformers' label shift: int64 labels padded with -100 at the end
    of the last dimension (opset 20, pads and value as constant inputs)."""
    return model([helper.make_node("Pad", ["labels", "pads", "value"], ["y"], name="shift")],
                 [vi("labels", I64, [2, 5])], [vi("y", I64, [2, 6])],
                 [ints("pads", [0, 0, 0, 1]), ints("value", -100)], opset=20)


def case_pad_axes(out):
    """opset 18 axes: crop one element in front of dim 1 (negative pad) and
    pad two behind it with the value v (a float initializer, so a
    parameter); dim 0 untouched."""
    return model([helper.make_node("Pad", ["x", "pads", "v", "axes"], ["y"], name="pad")],
                 [vi("x", F, [2, 5])], [vi("y", F, [2, 6])],
                 [ints("pads", [-1, 2]), ints("axes", [-1]), init("v", 0.5)], opset=18)


def case_pad_legacy(out):
    """opset 2: pads and value are attributes."""
    return model([helper.make_node("Pad", ["x"], ["y"], name="pad2", pads=[1, 0, 0, 2],
                                   value=1.5)],
                 [vi("x", F, [2, 3])], [vi("y", F, [3, 5])], opset=2)


def case_pad_fold(out):
    """Pad of an integer constant folds on the host."""
    return model([helper.make_node("Pad", ["c", "pads", "value"], ["y"], name="pad_fold")],
                 [], [vi("y", I64, [2, 3])],
                 [ints("c", [[1, 2], [3, 4]]), ints("pads", [0, 1, 0, 0]), ints("value", 7)],
                 opset=19)


def case_pad_reflect(out):
    return model([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad_reflect",
                                   mode="reflect")],
                 [vi("x", F, [2, 3])], [vi("y", F, [2, 5])], [ints("pads", [0, 1, 0, 1])],
                 opset=18)


def case_pad_overcrop(out):
    return model([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad_overcrop")],
                 [vi("x", F, [2, 3])], [vi("y", F, [2, 0])], [ints("pads", [0, -2, 0, -2])],
                 opset=18)


def case_pad_crop_int64_min(out):
    """A crop of INT64_MIN (found by fuzzing: negating it overflowed)."""
    return model([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad_min")],
                 [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
                 [ints("pads", [0, -2**63, 0, 0])], opset=18)


def case_pad_legacy_int_huge(out):
    """opset 2 on an int64 constant with a value int64 cannot hold
    (converting it was undefined)."""
    return model([helper.make_node("Pad", ["c"], ["y"], name="pad_huge", pads=[0, 1, 0, 0],
                                   value=1e30)],
                 [], [vi("y", I64, [2, 3])], [ints("c", [[1, 2], [3, 4]])], opset=2)


def case_tile(out):
    """Tile a float tensor [2, 3] by [2, 1], and fold Tile of an int64 constant."""
    return model([const("reps", [2, 1]), const("c", [1, 2]), const("creps", [3]),
                  helper.make_node("Tile", ["x", "reps"], ["y"], name="tile"),
                  helper.make_node("Tile", ["c", "creps"], ["z"], name="tile_fold")],
                 [vi("x", F, [2, 3])], [vi("y", F, [4, 3]), vi("z", I64, [6])], opset=13)


def case_cumsum(out):
    """CumSum along axis -1 of a float input, exclusive and reverse, and
    folded on an int64 constant (a position chain)."""
    return model([const("axis", -1), const("mask", [[1, 1, 0], [0, 1, 1]]),
                  helper.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum",
                                   exclusive=1, reverse=1),
                  helper.make_node("CumSum", ["mask", "axis"], ["pos"], name="cumsum_fold")],
                 [vi("x", F, [2, 3])], [vi("y", F, [2, 3]), vi("pos", I64, [2, 3])], opset=14)


def case_cumsum_axis_input(out):
    """The axis must be a constant."""
    return model([helper.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum_dyn")],
                 [vi("x", F, [2, 3]), vi("axis", I64, [])], [vi("y", F, [2, 3])], opset=14)


def case_rmsnorm(out):
    """RMSNormalization over the last dim (opset 23), scale [4]."""
    return model([helper.make_node("RMSNormalization", ["x", "w"], ["y"], name="rms",
                                   epsilon=1e-6)],
                 [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 3, 4])],
                 [init("w", np.linspace(0.5, 2.0, 4))], opset=23)


def case_rmsnorm_stash(out):
    return model([helper.make_node("RMSNormalization", ["x", "w"], ["y"], name="rms_stash",
                                   stash_type=11)],
                 [vi("x", F, [2, 4])], [vi("y", F, [2, 4])],
                 [init("w", np.ones(4))], opset=23)


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main(argv):
    return run_case(argv, CASES, __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
