//===- NNLinearAlgebraOps.td - matmul and gemm -----------------*- tablegen -*-===//
//
// Matrix products: `nn.matmul` with numpy semantics (batch dimensions
// broadcast, 1-D operands promoted and the added dimension dropped) and
// `nn.gemm`, ONNX's `alpha * op(A) * op(B) + beta * C` on 2-D operands, which
// torch emits for every nn.Linear on 2-D input.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_LINEAR_ALGEBRA_OPS_TD
#define FSDP_NN_LINEAR_ALGEBRA_OPS_TD

include "dialects/nn/NNBase.td"

def NN_MatMulOp : NN_Op<"matmul", [SameOperandsAndResultElementType, NN_Differentiable,
                                   NN_Kernel]> {
  let summary = "numpy matrix product (ONNX MatMul)";
  let description = [{
    `lhs @ rhs` as `numpy.matmul`: the last two dimensions multiply, leading
    dimensions broadcast; a 1-D `lhs` is a row vector and a 1-D `rhs` a
    column vector, and the promoted dimension is removed from the result.
  }];
  let arguments = (ins NN_NumericTensor:$lhs, NN_NumericTensor:$rhs);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_GemmOp : NN_Op<"gemm", [NN_Differentiable, NN_EncodedKernel]> {
  let summary = "general matrix multiply (ONNX Gemm)";
  let description = [{
    `alpha * op(a) @ op(b) + beta * c`, where `op` transposes when `trans_a`
    / `trans_b` is set. `a` and `b` are 2-D; the optional `c` broadcasts
    unidirectionally to the `M x N` result.

    ```mlir
    %y = nn.gemm %x, %w, %b {trans_b = true}
        : (tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins NN_NumericTensor:$a, NN_NumericTensor:$b,
                       Optional<NN_NumericTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = "$a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // FSDP_NN_LINEAR_ALGEBRA_OPS_TD
