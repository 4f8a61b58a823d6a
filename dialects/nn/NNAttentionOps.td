//===- NNAttentionOps.td - fused scaled dot-product attention -*- tablegen -*-===//
//
// One op for softmax(q kᵀ · scale + mask) v, the function torch's
// scaled_dot_product_attention and ONNX's Attention compute, so the plan
// runs it as one flash-style kernel that never materializes the
// B·H·Tq·Tk scores: the forward saves only its output and each row's
// log-sum-exp, and the gradient recomputes the probabilities from them.
// The importer (ONNX Attention) and the fsdp-fuse-attention pass (the
// exporters' decompositions) produce it; its gradient is one
// nn.attention_grad.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_ATTENTION_OPS_TD
#define FSDP_NN_ATTENTION_OPS_TD

include "dialects/nn/NNBase.td"

def NN_AttentionOp : NN_Op<"attention", [NN_Differentiable, NN_EncodedKernel]> {
  let summary = "scaled dot-product attention (torch's scaled_dot_product_attention)";
  let description = [{
    `query` is `[B, H, Tq, D]`, `key` `[B, Hkv, Tk, D]` and `value`
    `[B, Hkv, Tk, Dv]` with Hkv dividing H (grouped-query attention: query
    head h reads key/value head h / (H / Hkv)); `result` is `[B, H, Tq, Dv]`
    in their one float type. The score of query i and key j is
    `dot(q_i, k_j) * scale`, plus `mask` where it is a float tensor, or
    -inf where a bool `mask` is false; `mask` broadcasts (numpy, rank at most
    4) to `[B, H, Tq, Tk]` and is a bool, the operands' float type or f32.
    `is_causal` also masks keys j > i (torch's top-left alignment). Each
    row's probabilities are the softmax of its scores; a row whose every key
    is masked gives zeros (torch's math backend since 2.5, its "safe"
    softmax). `lse` `[B, H, Tq]` is each row's log-sum-exp of the scores
    (-inf for a fully masked row), f32 (f64 for f64 operands): what the
    gradient needs instead of the probabilities.

    `dropout_p` (in [0, 1)) drops each probability as nn.dropout with that
    ratio, `training` true and `seed` would drop it on the [B, H, Tq, Tk]
    probability tensor: the keep bit of element (b, h, i, j) is the same
    counter-based draw (seed, step, its row-major index), kept ones scaled
    by 1 / (1 - dropout_p). No mask is stored; the gradient draws the same
    bits again. `lse` is that of the probabilities before dropout.
  }];
  let arguments = (ins NN_FloatTensor:$query, NN_FloatTensor:$key, NN_FloatTensor:$value,
                       Optional<NN_AnyTensor>:$mask, BoolAttr:$is_causal, F32Attr:$scale,
                       DefaultValuedAttr<F32Attr, "0.0f">:$dropout_p,
                       OptionalAttr<I64Attr>:$seed);
  let results = (outs NN_FloatTensor:$result, NN_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_AttentionGradOp : NN_Op<"attention_grad", [NN_EncodedKernel]> {
  let summary = "gradient of attention";
  let description = [{
    From the forward's operands, its result and log-sum-exp and the result's
    gradient: the gradients of query, key and value (shaped as they are).
    The probabilities are recomputed from `lse`, never stored. The mask gets
    no gradient (nn.attention's mask is data: fsdp-fuse-attention fuses no
    mask computed from a parameter). `dropout_p` and `seed` are the
    forward's, so the same probabilities are dropped.
  }];
  let arguments = (ins NN_FloatTensor:$query, NN_FloatTensor:$key, NN_FloatTensor:$value,
                       Optional<NN_AnyTensor>:$mask, NN_FloatTensor:$forward_result,
                       NN_FloatTensor:$lse, NN_FloatTensor:$grad, BoolAttr:$is_causal,
                       F32Attr:$scale, DefaultValuedAttr<F32Attr, "0.0f">:$dropout_p,
                       OptionalAttr<I64Attr>:$seed);
  let results = (outs NN_FloatTensor:$query_grad, NN_FloatTensor:$key_grad,
                      NN_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? `,` $forward_result `,` $lse `,` $grad attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // FSDP_NN_ATTENTION_OPS_TD
