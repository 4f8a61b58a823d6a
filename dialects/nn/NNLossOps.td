//===- NNLossOps.td - classification losses --------------------*- tablegen -*-===//
//
// The losses torch exports inside the graph: SoftmaxCrossEntropyLoss
// (F.cross_entropy) and NegativeLogLikelihoodLoss (F.nll_loss after
// log_softmax). Class scores are `[N, C, d1, ...]`, labels `[N, d1, ...]`;
// `reduction` is "none", "sum" or "mean" exactly as ONNX defines them
// (weighted mean divides by the summed weights of non-ignored labels).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_LOSS_OPS_TD
#define FSDP_NN_LOSS_OPS_TD

include "dialects/nn/NNBase.td"

def NN_SoftmaxCrossEntropyOp : NN_Op<"softmax_cross_entropy", [NN_Differentiable,
                                                                  NN_EncodedKernel]> {
  let summary = "softmax cross-entropy loss (ONNX SoftmaxCrossEntropyLoss)";
  let description = [{
    Returns the loss (a scalar for "sum"/"mean", `[N, d1, ...]` for "none")
    and the log-probabilities, shaped like `scores`. Labels equal to
    `ignore_index` contribute nothing and are not counted by "mean".
  }];
  let arguments = (ins NN_FloatTensor:$scores, NN_IndexTensor:$labels,
                       Optional<NN_FloatTensor>:$weights,
                       StrAttr:$reduction, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs NN_FloatTensor:$loss, NN_FloatTensor:$log_prob);
  let assemblyFormat = "$scores `,` $labels (`,` $weights^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_NllLossOp : NN_Op<"nll_loss", [NN_Differentiable, NN_EncodedKernel]> {
  let summary = "negative log-likelihood loss (ONNX NegativeLogLikelihoodLoss)";
  let description = [{
    `-input[n, label[n, d...], d...] * weight[label]`, reduced as `reduction`
    says; labels equal to `ignore_index` contribute nothing.
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_IndexTensor:$target,
                       Optional<NN_FloatTensor>:$weight,
                       StrAttr:$reduction, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs NN_FloatTensor:$loss);
  let assemblyFormat = "$input `,` $target (`,` $weight^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // FSDP_NN_LOSS_OPS_TD
