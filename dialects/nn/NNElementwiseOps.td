//===- NNElementwiseOps.td - elementwise nn ops ----------------*- tablegen -*-===//
//
// Elementwise ops with ONNX's multidirectional (numpy) broadcasting: binary
// arithmetic, Where, unary math, Not, Cast. The result shape is the
// broadcast of the operand shapes; the verifiers recompute it with the same
// helper the importer uses, so IR from any source obeys one rule.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_ELEMENTWISE_OPS_TD
#define FSDP_NN_ELEMENTWISE_OPS_TD

include "dialects/nn/NNBase.td"

class NN_BinaryOp<string mnemonic, string onnxName, list<Trait> traits = [SameOperandsAndResultElementType],
                  string scalarRule = "">
    : NN_Op<mnemonic, !listconcat(traits, [NN_Differentiable, NN_Kernel])> {
  let summary = "elementwise " # mnemonic # " with numpy broadcasting (ONNX " # onnxName # ")";
  let description = [{
    Computes `lhs }] # mnemonic # [{ rhs` elementwise. Operands broadcast as in
    numpy; the result has the broadcast shape and the operands' element type.
    Integer division truncates toward zero as ONNX specifies.
  }] # scalarRule;
  let arguments = (ins NN_NumericTensor:$lhs, NN_NumericTensor:$rhs);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

// Add, sub, mul and div also take torch's wrapped number: a bf16 or f16
// tensor with a rank-0 f32 operand (a Python scalar, which an export makes
// an f32 constant) gives the tensor's type, computed as torch 2.x's CPU
// kernels compute it. Their element types are checked by the verifier
// (ElementwiseOps.cpp), not by SameOperandsAndResultElementType.
class NN_ArithmeticOp<string mnemonic, string onnxName, string scalarRule>
    : NN_BinaryOp<mnemonic, onnxName, [], [{

    A bf16 or f16 tensor may meet a rank-0 f32 operand on either side (torch's
    wrapped number, a Python scalar); the result then has the tensor's type
    and each element is computed in float from the tensor's element x and the
    scalar s: }] # scalarRule # [{ The result rounds once to the tensor's type.
    Every other mix of element types is an error.
  }]>;

def NN_AddOp : NN_ArithmeticOp<"add", "Add",
    "`x + s'` and `s' + x`, where s' is s rounded to the tensor's type first (torch's add "
    "casts the scalar to the tensor's dtype).">;
def NN_SubOp : NN_ArithmeticOp<"sub", "Sub",
    "`x - s'` and `s' - x` with s' as for add (torch's sub and rsub).">;
def NN_MulOp : NN_ArithmeticOp<"mul", "Mul",
    "`x * s` with s not rounded, in either operand order (torch's `x * s` and `s * x` "
    "both reach its CPU-scalar mul path).">;
def NN_DivOp : NN_ArithmeticOp<"div", "Div",
    "`x / s` with s not rounded (a true division, torch's CPU-scalar div path); "
    "`s' / x` with s' rounded to the tensor's type first (torch.div(s, x)).">;

def NN_PowOp : NN_Op<"pow", [NN_Differentiable, NN_Kernel]> {
  let summary = "elementwise power with numpy broadcasting (ONNX Pow)";
  let description = [{
    `base ** exponent`. As in ONNX, the exponent may have a different numeric
    element type than the base; the result has the base's element type and
    the broadcast shape.
  }];
  let arguments = (ins NN_NumericTensor:$base, NN_NumericTensor:$exponent);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = "$base `,` $exponent attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_WhereOp : NN_Op<"where", [NN_Differentiable, NN_Kernel]> {
  let summary = "select with numpy broadcasting (ONNX Where)";
  let description = [{
    `condition ? x : y` elementwise over the broadcast of all three shapes.
    `x`, `y` and the result share an element type.
  }];
  let arguments = (ins NN_BoolTensor:$condition, NN_AnyTensor:$x, NN_AnyTensor:$y);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$condition `,` $x `,` $y attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

class NN_UnaryOp<string mnemonic, string onnxName, Type operandType,
                 list<Trait> traits = [NN_Differentiable]>
    : NN_Op<mnemonic, !listconcat(traits, [AllTypesMatch<["input", "result"]>, NN_Kernel])> {
  let summary = "elementwise " # mnemonic # " (ONNX " # onnxName # ")";
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def NN_NegOp : NN_UnaryOp<"neg", "Neg", NN_SignedTensor>;
def NN_ReluOp : NN_UnaryOp<"relu", "Relu", NN_SignedTensor>;
def NN_ExpOp : NN_UnaryOp<"exp", "Exp", NN_FloatTensor>;
def NN_LogOp : NN_UnaryOp<"log", "Log", NN_FloatTensor>;
def NN_SqrtOp : NN_UnaryOp<"sqrt", "Sqrt", NN_FloatTensor>;
def NN_ErfOp : NN_UnaryOp<"erf", "Erf", NN_FloatTensor>;
def NN_TanhOp : NN_UnaryOp<"tanh", "Tanh", NN_FloatTensor>;
def NN_SigmoidOp : NN_UnaryOp<"sigmoid", "Sigmoid", NN_FloatTensor>;
def NN_NotOp : NN_UnaryOp<"not", "Not", NN_BoolTensor, []>;

def NN_CastOp : NN_Op<"cast", [SameOperandsAndResultShape, NN_Differentiable, NN_Kernel]> {
  let summary = "element type conversion (ONNX Cast)";
  let description = [{
    Converts each element to the result's element type: floats round to
    nearest even, float to integer truncates toward zero, anything to bool is
    `x != 0`.
  }];
  let arguments = (ins NN_AnyTensor:$input);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
}

// --- Comparisons, logic, float classification, max and min -------------------
// torch 2.x exports build attention masks with comparisons and logic on
// constants (folded at import) and guard SDPA's softmax with
// `where(isnan(p), 0, p)` on activations. Comparisons and logic yield bool
// and carry no gradient; max and min are differentiable.

def NN_CompareOp : NN_Op<"compare", [NN_EncodedKernel]> {
  let summary = "elementwise comparison with numpy broadcasting (ONNX Equal, Less, "
                "LessOrEqual, Greater, GreaterOrEqual)";
  let description = [{
    `lhs <predicate> rhs` elementwise over the broadcast shape, with
    `predicate` one of "eq", "lt", "le", "gt", "ge". Operands share a numeric
    element type (bool for "eq"); the result is bool. Any comparison with a
    NaN is false, as in IEEE 754 and torch.
  }];
  let arguments = (ins StrAttr:$predicate, NN_AnyTensor:$lhs, NN_AnyTensor:$rhs);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat =
      "$predicate $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_LogicalOp : NN_Op<"logical", [NN_EncodedKernel]> {
  let summary = "elementwise logic on bool with numpy broadcasting (ONNX And, Or, Xor)";
  let description = [{
    `lhs <op> rhs` for `op` one of "and", "or", "xor" over the broadcast
    shape; operands and result are bool.
  }];
  let arguments = (ins StrAttr:$op, NN_BoolTensor:$lhs, NN_BoolTensor:$rhs);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat = "$op $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_IsNaNOp : NN_Op<"is_nan", [SameOperandsAndResultShape, NN_Kernel]> {
  let summary = "elementwise NaN test (ONNX IsNaN)";
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def NN_IsInfOp : NN_Op<"is_inf", [SameOperandsAndResultShape, NN_EncodedKernel]> {
  let summary = "elementwise infinity test (ONNX IsInf)";
  let description = [{
    True for +inf when `detect_positive`, for -inf when `detect_negative`.
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_negative,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_positive);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

// torch.maximum / torch.minimum: NaN propagates; on ties the gradient is
// split evenly between the operands (derivatives.yaml).
def NN_MaxOp : NN_BinaryOp<"max", "Max">;
def NN_MinOp : NN_BinaryOp<"min", "Min">;

#endif // FSDP_NN_ELEMENTWISE_OPS_TD
