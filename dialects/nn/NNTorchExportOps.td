//===- NNTorchExportOps.td - math and data movement of torch 2.x graphs -*- tablegen -*-===//
//
// The ops torch 2.x's exporters emit that the first importer did not need:
// GELU as one op (opset 20; both of torch's approximations) with its fused
// gradient, the unary math of RMSNorm and rotary tables (Reciprocal, Cos,
// Sin), Softplus, and the data movement of label shifting, repeat_interleave
// and mask chains (constant Pad, Tile, CumSum). Each maps to one plan kernel
// (runtime/plan/Kernels.def). Kept in a file of their own so the families
// they join (NNElementwiseOps.td, NNShapeOps.td) stay as they were.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_TORCH_EXPORT_OPS_TD
#define FSDP_NN_TORCH_EXPORT_OPS_TD

include "dialects/nn/NNBase.td"
include "dialects/nn/NNElementwiseOps.td"

def NN_GeluOp : NN_Op<"gelu", [AllTypesMatch<["input", "result"]>, NN_Differentiable,
                               NN_EncodedKernel]> {
  let summary = "Gaussian error linear unit (ONNX Gelu, torch.nn.functional.gelu)";
  let description = [{
    `approximate = "none"`: `x * 0.5 * (1 + erf(x / sqrt(2)))`;
    `approximate = "tanh"`: `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`,
    torch's formulas and operation order.
  }];
  let arguments = (ins NN_FloatTensor:$input, DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def NN_ReciprocalOp : NN_UnaryOp<"reciprocal", "Reciprocal", NN_FloatTensor>;
def NN_CosOp : NN_UnaryOp<"cos", "Cos", NN_FloatTensor>;
def NN_SinOp : NN_UnaryOp<"sin", "Sin", NN_FloatTensor>;
def NN_SoftplusOp : NN_UnaryOp<"softplus", "Softplus", NN_FloatTensor> {
  let description = [{
    ONNX's `ln(exp(x) + 1)` for every x, computed stably as
    `max(x, 0) + log1p(exp(-|x|))` (no threshold, unlike torch's
    `F.softplus` default, which returns x above 20).
  }];
}

def NN_GeluGradOp : NN_Op<"gelu_grad", [AllTypesMatch<["input", "grad", "result"]>,
                                        NN_EncodedKernel]> {
  let summary = "gradient of gelu";
  let description = [{
    `input` is the forward op's x; computes `grad * gelu'(x)` with torch's
    GeluBackward formula for the same `approximate`.
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$grad,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def NN_PadOp : NN_Op<"pad", [SameOperandsAndResultElementType, NN_Differentiable,
                             NN_EncodedKernel]> {
  let summary = "constant padding (ONNX Pad, mode constant)";
  let description = [{
    `pads` holds every dimension's elements added before it, then every
    dimension's elements added after it (ONNX's layout), all non-negative:
    the importer turns ONNX's negative pads (cropping) into an `nn.slice`
    first. New elements hold `value`, a rank-0 tensor of the input's element
    type, so integer tensors (labels padded with -100) pad exactly.
  }];
  let arguments = (ins NN_AnyTensor:$input, NN_AnyTensor:$value, DenseI64ArrayAttr:$pads);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$input `,` $value attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_TileOp : NN_Op<"tile", [SameOperandsAndResultElementType, NN_Differentiable,
                               NN_EncodedKernel]> {
  let summary = "repeat the whole tensor along each dimension (ONNX Tile)";
  let description = [{
    Result dimension `i` is `input.dim(i) * repeats[i]`, and
    `result[j] = input[j mod input.shape]` elementwise.
  }];
  let arguments = (ins NN_AnyTensor:$input, DenseI64ArrayAttr:$repeats);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def NN_CumSumOp : NN_Op<"cumsum", [AllTypesMatch<["input", "result"]>, NN_Differentiable,
                                   NN_EncodedKernel]> {
  let summary = "cumulative sum along an axis (ONNX CumSum)";
  let description = [{
    `result[i] = sum of input[j]` along `axis` over `j <= i` (`j < i` with
    `exclusive`; `j >= i`, `j > i` with `reverse`). Integers wrap.
  }];
  let arguments = (ins NN_NumericTensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

#endif // FSDP_NN_TORCH_EXPORT_OPS_TD
