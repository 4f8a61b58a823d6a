//===- FSDPFlatParamOps.td - a unit's flat parameter -----*- tablegen -*-===//
//
// FSDP's FlatParameter in value form. A unit's parameters live end to end
// in one flat 1-D buffer (compiler/Analysis/FlatLayout.h); after the
// all-gather each parameter is read as a view of its slice (flat_view),
// and before the reduce-scatter the unit's gradients are packed into one
// flat buffer of the same layout (flatten). Both exist because no upstream
// op says "these bytes, reinterpreted" (flat_view costs nothing: the plan
// emitter turns it into a buffer alias) or "scatter these tensors into one
// zero-padded buffer at fixed offsets" in one step.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FSDP_FLAT_PARAM_OPS_TD
#define FSDP_FSDP_FLAT_PARAM_OPS_TD

include "dialects/fsdp/FSDPBase.td"
include "dialects/nn/NNInterfaces.td"

def FSDP_FlatViewOp : FSDP_Op<"flat_view", [Pure]> {
  let summary = "a parameter read in place from its unit's flat buffer";
  let description = [{
    `result` is elements [offset, offset + numel(result)) of the 1-D `flat`
    buffer, in row-major order, with the result's shape.
  }];
  let arguments = (ins FSDP_FloatTensor:$flat, I64Attr:$offset);
  let results = (outs FSDP_FloatTensor:$result);
  let assemblyFormat = "$flat attr-dict `:` type($flat) `->` type($result)";
  let hasVerifier = 1;
}

def FSDP_FlattenOp : FSDP_Op<"flatten", [Pure, NN_EncodedKernel]> {
  let summary = "pack tensors into one zero-padded flat buffer";
  let description = [{
    `result` is zero except that input i's elements, in row-major order,
    start at element `offsets[i]`. Ranges are ascending and disjoint.
  }];
  let arguments = (ins Variadic<FSDP_FloatTensor>:$inputs, DenseI64ArrayAttr:$offsets);
  let results = (outs FSDP_FloatTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $result)";
  let hasVerifier = 1;
}

#endif // FSDP_FSDP_FLAT_PARAM_OPS_TD
