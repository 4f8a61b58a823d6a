#!/usr/bin/env python3
"""Writes ONNX Attention models (opsets 23 and 24) for attention.test: the
forms that import as nn.attention (4-D and 3-D operands, grouped-query
heads, bool and float masks, short masks, is_causal with and without a key
cache, an explicit scale) and the ones refused by name.

Usage: make_attention_models.py CASE OUT.onnx
       make_attention_models.py --list

Runs with Debian's onnx 1.12, which predates Attention: the node, its
attributes and the opset number are plain protobuf fields, so onnx.helper
writes them all the same (no checker runs).
"""

import os
import sys

from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_model import F, I64, model, run_case, vi  # noqa: E402

B = TensorProto.BOOL
BF16 = TensorProto.BFLOAT16
DOUBLE = TensorProto.DOUBLE


def attention(inputs, outputs, opset=23, shapes=None, dtypes=None, **attrs):
    """One Attention node named 'attn' over graph inputs `inputs` (an empty
    name skips an optional input) with `shapes`, float unless `dtypes` says;
    the outputs have Q's type."""
    dtypes = dtypes or {}
    node = helper.make_node("Attention", inputs, outputs, name="attn", **attrs)
    ins = [vi(n, dtypes.get(n, F), shapes[n]) for n in inputs if n]
    outs = [vi(n, dtypes.get("q", F), None) for n in outputs if n]
    return model([node], ins, outs, opset=opset)


Q4 = {"q": [2, 4, 5, 8], "k": [2, 2, 5, 8], "v": [2, 2, 5, 6]}


def case_causal4d(out):
    """4-D grouped-query (4 query heads on 2 kv heads), is_causal, Tq = Tk,
    default scale 1/sqrt(8)."""
    return attention(["q", "k", "v"], ["y"], shapes=Q4, is_causal=1)


def case_cross_causal(out):
    """Tq = 3 queries, Tk = 7 keys, is_causal, no past: ONNX's offset is 0,
    so j <= i, nn.attention's top-left rule (opset 24)."""
    shapes = {"q": [1, 2, 3, 4], "k": [1, 2, 7, 4], "v": [1, 2, 7, 4]}
    return attention(["q", "k", "v"], ["y"], opset=24, shapes=shapes, is_causal=1)


def case_packed_mask(out):
    """3-D [B, T, heads * D] operands with q_num_heads 4, kv_num_heads 2, a
    bool mask [Tq, Tk], an explicit scale 0.25 and the present outputs
    (K and V as 4-D, no past)."""
    shapes = {"q": [2, 5, 32], "k": [2, 6, 16], "v": [2, 6, 12], "m": [5, 6]}
    return attention(["q", "k", "v", "m"], ["y", "pk", "pv"], shapes=shapes, dtypes={"m": B},
                     q_num_heads=4, kv_num_heads=2, scale=0.25)


def case_short_mask(out):
    """A float mask [2, 1, 5, 3] over 5 keys: padded with -inf to 5
    (opset 24's rule, the reference's at 23 and 24)."""
    shapes = {"q": [2, 2, 5, 8], "k": [2, 2, 5, 8], "v": [2, 2, 5, 8], "m": [2, 1, 5, 3]}
    return attention(["q", "k", "v", "m"], ["y"], opset=24, shapes=shapes)


def case_past_causal(out):
    """A key cache of 4 in front of 3 new keys with is_causal and a bool
    mask: keys concatenated, the frontier j <= i + 4 an explicit mask and'ed
    with attn_mask, the present outputs the concatenations."""
    shapes = {"q": [1, 2, 3, 4], "k": [1, 2, 3, 4], "v": [1, 2, 3, 4], "m": [1, 1, 3, 7],
              "pk": [1, 2, 4, 4], "pv": [1, 2, 4, 4]}
    return attention(["q", "k", "v", "m", "pk", "pv"], ["y", "nk", "nv"], shapes=shapes,
                     dtypes={"m": B}, is_causal=1)


def case_past_float_mask(out):
    """A float mask with a cache and is_causal: the causal bias (0 / -inf)
    is added to the mask."""
    shapes = {"q": [1, 1, 2, 4], "k": [1, 1, 2, 4], "v": [1, 1, 2, 4], "m": [2, 3],
              "pk": [1, 1, 1, 4], "pv": [1, 1, 1, 4]}
    return attention(["q", "k", "v", "m", "pk", "pv"], ["y"], shapes=shapes, is_causal=1)


def case_bf16_precision(out):
    """bfloat16 operands with softmax_precision float: what nn.attention
    computes in; the scale is sqrt(1/sqrt(8)) rounded to bfloat16, squared."""
    shapes = {"q": [1, 2, 4, 8], "k": [1, 2, 4, 8], "v": [1, 2, 4, 8]}
    return attention(["q", "k", "v"], ["y"], shapes=shapes,
                     dtypes={"q": BF16, "k": BF16, "v": BF16}, softmax_precision=1)


def case_softcap(out):
    """softcap 2.0 with a float mask: ONNX's function body, op by op."""
    return attention(["q", "k", "v", "m"], ["y"], shapes=dict(Q4, m=[5, 5]), softcap=2.0)


def case_qk_output(out):
    """The probabilities as qk_matmul_output (mode 3), is_causal: the body,
    with the causal frontier as an explicit bias."""
    return attention(["q", "k", "v"], ["y", "", "", "qk"], shapes=Q4, is_causal=1,
                     qk_matmul_output_mode=3)


def case_nonpad_causal(out):
    """nonpad_kv_seqlen with is_causal (opset 24): a bool mask computed at
    run time, still one nn.attention."""
    shapes = dict(Q4, n=[2])
    return attention(["q", "k", "v", "", "", "", "n"], ["y"], opset=24, shapes=shapes,
                     dtypes={"n": I64}, is_causal=1)


# --- refused ----------------------------------------------------------------


def case_err_softcap_negative(out):
    return attention(["q", "k", "v"], ["y"], shapes=Q4, softcap=-1.0)


def case_err_nonpad_past(out):
    """nonpad_kv_seqlen with a key cache: the reference refuses the pair."""
    shapes = dict(Q4, pk=[2, 2, 3, 8], pv=[2, 2, 3, 6], n=[2])
    return attention(["q", "k", "v", "", "pk", "pv", "n"], ["y"], opset=24, shapes=shapes,
                     dtypes={"n": I64})


def case_err_nonpad_shape(out):
    shapes = dict(Q4, n=[3])
    return attention(["q", "k", "v", "", "", "", "n"], ["y"], opset=24, shapes=shapes,
                     dtypes={"n": I64})


def case_err_mask_last_one(out):
    """A mask [5, 1] against 5 keys: broadcast (opset 23's text) or padded
    (the reference): refused."""
    return attention(["q", "k", "v", "m"], ["y"], shapes=dict(Q4, m=[5, 1]))


def case_err_mask_long(out):
    return attention(["q", "k", "v", "m"], ["y"], shapes=dict(Q4, m=[5, 6]))


def case_err_mask_int(out):
    return attention(["q", "k", "v", "m"], ["y"], shapes=dict(Q4, m=[5, 5]),
                     dtypes={"m": I64})


def case_err_negative_scale(out):
    return attention(["q", "k", "v"], ["y"], shapes=Q4, scale=-0.5)


def case_err_packed_no_heads(out):
    shapes = {"q": [2, 5, 32], "k": [2, 5, 32], "v": [2, 5, 32]}
    return attention(["q", "k", "v"], ["y"], shapes=shapes, q_num_heads=4)


def case_err_packed_indivisible(out):
    shapes = {"q": [2, 5, 30], "k": [2, 5, 32], "v": [2, 5, 32]}
    return attention(["q", "k", "v"], ["y"], shapes=shapes, q_num_heads=4, kv_num_heads=4)


def case_err_heads_4d(out):
    return attention(["q", "k", "v"], ["y"], shapes=Q4, q_num_heads=4, kv_num_heads=4)


def case_err_gqa_indivisible(out):
    shapes = {"q": [2, 3, 5, 8], "k": [2, 2, 5, 8], "v": [2, 2, 5, 8]}
    return attention(["q", "k", "v"], ["y"], shapes=shapes)


def case_err_past_alone(out):
    shapes = dict(Q4, pk=[2, 2, 3, 8])
    return attention(["q", "k", "v", "", "pk"], ["y"], shapes=shapes)


def case_err_precision(out):
    return attention(["q", "k", "v"], ["y"], shapes=Q4, softmax_precision=DOUBLE)


def case_err_causal2(out):
    return attention(["q", "k", "v"], ["y"], shapes=Q4, is_causal=2)


def case_err_opset25(out):
    """Attention-25 adds sliding windows: outside the table's range."""
    return attention(["q", "k", "v"], ["y"], opset=25, shapes=Q4)


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main(argv):
    return run_case(argv, CASES, __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
