//===- NNGradientOps.td - ops only backward passes use ---------*- tablegen -*-===//
//
// The gradient ops autodiff emits where composing forward ops would cost
// extra full-size temporaries or has no forward counterpart (scatter-add for
// Gather, zero-padding for Slice). Each one maps to one runtime kernel
// (plan.fbs documents their operand order); everything else in a backward
// pass is built from the forward ops.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_GRADIENT_OPS_TD
#define FSDP_NN_GRADIENT_OPS_TD

include "dialects/nn/NNBase.td"

class NN_ActivationGradOp<string mnemonic, string saved, string formula>
    : NN_Op<mnemonic, [AllTypesMatch<["value", "grad", "result"]>, NN_Kernel]> {
  let summary = "gradient of an elementwise activation";
  let description = "`value` is the forward op's " # saved # "; computes " # formula # ".";
  let arguments = (ins NN_FloatTensor:$value, NN_FloatTensor:$grad);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$value `,` $grad attr-dict `:` type($value)";
}

def NN_ReluGradOp : NN_ActivationGradOp<"relu_grad", "result y", "`y > 0 ? grad : 0`">;
def NN_ErfGradOp : NN_ActivationGradOp<"erf_grad", "input x",
                                       "`grad * 2/sqrt(pi) * exp(-x*x)`">;
def NN_TanhGradOp : NN_ActivationGradOp<"tanh_grad", "result y", "`grad * (1 - y*y)`">;
def NN_SigmoidGradOp : NN_ActivationGradOp<"sigmoid_grad", "result y",
                                           "`grad * (1 - y) * y`">;

class NN_SoftmaxGradLikeOp<string mnemonic, string formula>
    : NN_Op<mnemonic, [AllTypesMatch<["output", "grad", "result"]>, NN_EncodedKernel]> {
  let summary = "gradient of " # mnemonic;
  let description = "`output` is the forward result y; computes " # formula # ".";
  let arguments = (ins NN_FloatTensor:$output, NN_FloatTensor:$grad, I64Attr:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def NN_SoftmaxGradOp : NN_SoftmaxGradLikeOp<"softmax_grad", "`y * (grad - sum(grad * y, axis))`">;
def NN_LogSoftmaxGradOp
    : NN_SoftmaxGradLikeOp<"log_softmax_grad", "`grad - exp(y) * sum(grad, axis)`">;

def NN_LayerNormGradOp : NN_Op<"layer_norm_grad", [NN_EncodedKernel]> {
  let summary = "gradient of layer_norm";
  let description = [{
    From the forward input, scale and saved statistics, and the result's
    gradient: the gradients of the input, the scale and the bias. `scale`,
    `scale_grad` and `bias_grad` have exactly the normalized shape
    `input.shape[axis:]` (a broadcast scale is expanded first).
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale, NN_FloatTensor:$mean,
                       NN_FloatTensor:$inv_std_dev, NN_FloatTensor:$grad, I64Attr:$axis);
  let results = (outs NN_FloatTensor:$input_grad, NN_FloatTensor:$scale_grad,
                      NN_FloatTensor:$bias_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_GatherGradOp : NN_Op<"gather_grad", [NN_EncodedKernel]> {
  let summary = "gradient of gather: scatter-add into zeros";
  let description = [{
    The result (shaped like the gathered `data`) is zero except that each
    slice of `grad` is added at the position its index selected, in index
    order, so repeated indices (a token seen twice) accumulate
    deterministically.
  }];
  let arguments = (ins NN_IndexTensor:$indices, NN_FloatTensor:$grad, I64Attr:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$indices `,` $grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_SliceGradOp : NN_Op<"slice_grad", [SameOperandsAndResultElementType, NN_EncodedKernel]> {
  let summary = "gradient of slice: zeros with the slice written back";
  let description = [{
    The result has the sliced input's shape; `grad` is written at the
    positions `slice` with the same `starts`, `ends`, `steps` read, the rest
    is zero.
  }];
  let arguments = (ins NN_FloatTensor:$grad, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `to` type($result)";
  let hasVerifier = 1;
}

def NN_SoftmaxCrossEntropyGradOp : NN_Op<"softmax_cross_entropy_grad", [NN_EncodedKernel]> {
  let summary = "gradient of softmax_cross_entropy with respect to the scores";
  let description = [{
    `(exp(log_prob) - onehot(label)) * weight[label] * loss_grad`, divided by
    the summed weights of the counted labels for "mean"; rows whose label is
    `ignore_index` get zero. `loss_grad` is a scalar for "sum"/"mean" and
    shaped like `labels` for "none".
  }];
  let arguments = (ins NN_FloatTensor:$loss_grad, NN_FloatTensor:$log_prob,
                       NN_IndexTensor:$labels, Optional<NN_FloatTensor>:$weights,
                       StrAttr:$reduction, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_NllLossGradOp : NN_Op<"nll_loss_grad", [NN_EncodedKernel]> {
  let summary = "gradient of nll_loss with respect to its input";
  let description = [{
    Zero except `result[n, label, d...] = -weight[label] * loss_grad`
    (divided by the summed weights of the counted labels for "mean");
    the result type gives the input's shape.
  }];
  let arguments = (ins NN_FloatTensor:$loss_grad, NN_IndexTensor:$target,
                       Optional<NN_FloatTensor>:$weight,
                       StrAttr:$reduction, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_ReduceMaxGradOp : NN_Op<"reduce_max_grad", [NN_EncodedKernel]> {
  let summary = "gradient of reduce_max";
  let description = [{
    `output` and `grad` keep the reduced `axes` as size-1 dimensions; each
    maximum's gradient is shared evenly among the elements equal to it (as
    torch's amax backward does).
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$output, NN_FloatTensor:$grad,
                       DenseI64ArrayAttr:$axes);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_DropoutGradOp : NN_Op<"dropout_grad", [AllTypesMatch<["grad", "result"]>, NN_EncodedKernel]> {
  let summary = "gradient of dropout in training";
  let description = [{
    `mask ? grad / (1 - ratio) : 0` with the forward op's mask and ratio.
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_BoolTensor:$mask, F32Attr:$ratio);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $mask attr-dict `:` type($grad) `,` type($mask)";
  let hasVerifier = 1;
}

#endif // FSDP_NN_GRADIENT_OPS_TD
