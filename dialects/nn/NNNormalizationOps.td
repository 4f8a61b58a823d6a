//===- NNNormalizationOps.td - softmax and layer norm ----------*- tablegen -*-===//
//
// Normalizations over one axis (softmax, log-softmax) or a trailing block of
// axes (layer norm). ONNX's pre-13 softmax, which flattens to 2-D, is
// imported as reshape + softmax over the last axis + reshape, so here every
// softmax normalizes exactly one axis.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_NORMALIZATION_OPS_TD
#define FSDP_NN_NORMALIZATION_OPS_TD

include "dialects/nn/NNBase.td"

class NN_SoftmaxLikeOp<string mnemonic, string onnxName>
    : NN_Op<mnemonic, [AllTypesMatch<["input", "result"]>, NN_Differentiable,
                      NN_EncodedKernel]> {
  let summary = mnemonic # " over one axis (ONNX " # onnxName # ", opset >= 13 meaning)";
  let arguments = (ins NN_FloatTensor:$input, I64Attr:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def NN_SoftmaxOp : NN_SoftmaxLikeOp<"softmax", "Softmax">;
def NN_LogSoftmaxOp : NN_SoftmaxLikeOp<"log_softmax", "LogSoftmax">;

def NN_LayerNormOp : NN_Op<"layer_norm", [NN_Differentiable, NN_EncodedKernel]> {
  let summary = "layer normalization (ONNX LayerNormalization)";
  let description = [{
    Normalizes `input` over dimensions `[axis, rank)`, then scales and, when
    `bias` is present, shifts; `scale` and `bias` broadcast to those
    dimensions. Also returns the mean and the inverse standard deviation,
    shaped like `input` with the normalized dimensions set to 1, as the
    backward pass needs them (ONNX's optional outputs; unused ones are dead).
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale,
                       Optional<NN_FloatTensor>:$bias,
                       I64Attr:$axis, F32Attr:$epsilon);
  let results = (outs NN_FloatTensor:$result, NN_FloatTensor:$mean,
                      NN_FloatTensor:$inv_std_dev);
  let assemblyFormat = "$input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // FSDP_NN_NORMALIZATION_OPS_TD
