//===- NNMiscOps.td - constants and dropout --------------------*- tablegen -*-===//
//
// `nn.constant` holds literal tensors (ONNX Constant, folded shape tensors,
// integer initializers). It exists beside `arith.constant` because ONNX
// needs unsigned element types (`ui8` ...), which `arith` does not accept.
// `nn.dropout` keeps its ratio and training flag static: a graph that
// switches dropout at run time is not something a static plan can schedule.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_MISC_OPS_TD
#define FSDP_NN_MISC_OPS_TD

include "dialects/nn/NNBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

def NN_ConstantOp : NN_Op<"constant", [ConstantLike, AllTypesMatch<["value", "result"]>]> {
  let summary = "literal tensor (ONNX Constant)";
  let arguments = (ins TypedAttrInterface:$value);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def NN_DropoutOp : NN_Op<"dropout", [NN_Differentiable, NN_EncodedKernel]> {
  let summary = "dropout (ONNX Dropout)";
  let description = [{
    In training (`training = true`, `ratio > 0`) each element is zeroed with
    probability `ratio` and the rest scaled by `1 / (1 - ratio)`; `mask` is
    true where an element was kept. Otherwise the result is the input and
    the mask all true. `seed`, when given, fixes the random stream.
  }];
  let arguments = (ins NN_FloatTensor:$input, F32Attr:$ratio, BoolAttr:$training,
                       OptionalAttr<I64Attr>:$seed);
  let results = (outs NN_FloatTensor:$result, NN_BoolTensor:$mask);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // FSDP_NN_MISC_OPS_TD
