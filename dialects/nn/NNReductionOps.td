//===- NNReductionOps.td - reductions --------------------------*- tablegen -*-===//
//
// Reductions over an explicit, sorted, non-negative list of axes. ONNX's
// defaults (no axes means all axes; noop_with_empty_axes) are resolved by the
// importer so each op here states exactly what it reduces.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_REDUCTION_OPS_TD
#define FSDP_NN_REDUCTION_OPS_TD

include "dialects/nn/NNBase.td"

class NN_ReduceOp<string mnemonic, string onnxName>
    : NN_Op<mnemonic, [SameOperandsAndResultElementType, NN_Differentiable,
                      NN_EncodedKernel]> {
  let summary = mnemonic # " over axes (ONNX " # onnxName # ")";
  let description = [{
    Reduces `input` over `axes` (sorted, unique, in `[0, rank)`). With
    `keepdims` the reduced dimensions stay as size 1, otherwise they are
    removed.
  }];
  let arguments = (ins NN_NumericTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_ReduceSumOp : NN_ReduceOp<"reduce_sum", "ReduceSum">;
def NN_ReduceMaxOp : NN_ReduceOp<"reduce_max", "ReduceMax">;
def NN_ReduceMeanOp : NN_ReduceOp<"reduce_mean", "ReduceMean">;

#endif // FSDP_NN_REDUCTION_OPS_TD
