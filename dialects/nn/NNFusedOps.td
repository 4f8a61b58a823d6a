//===- NNFusedOps.td - fused elementwise chains ----------------*- tablegen -*-===//
//
// `nn.fused` is what the elementwise fusion pass (compiler/Transforms/
// FuseElementwise.cpp) turns a chain of elementwise ops into: one op,
// one runtime kernel, one pass over memory. The chain is kept as a program
// of op codes rather than as a region, because it is exactly what the
// runtime executes (plan.fbs, Kernel Fused) and what lit tests read.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_FUSED_OPS_TD
#define FSDP_NN_FUSED_OPS_TD

include "dialects/nn/NNBase.td"

def NN_FusedOp : NN_Op<"fused", [NN_EncodedKernel]> {
  let summary = "a chain of f32, bf16 or f16 elementwise ops computed in one pass";
  let description = [{
    `program` lists the ops as triples `[code, a, b]`: values `0 ..
    inputs-1` are the inputs, `inputs + k` the k-th op's result, and `b` is
    -1 for unary ops. `results` names the values returned, in order. Codes:
    0 add, 1 sub, 2 mul, 3 div, 4 neg, 5 relu, 6 exp, 7 log, 8 sqrt, 9 erf,
    10 tanh, 11 sigmoid, 12 relu_grad, 13 erf_grad, 14 tanh_grad,
    15 sigmoid_grad (each exactly the nn op of that name). Every result has
    one shape; every input has it too or holds a single element. Inputs and
    results share one element type, f32, bf16 or f16; in bf16 and f16 each
    op computes in f32 and rounds its result to that type (nearest even),
    as the unfused op does, so fusion changes no bit.

    ```mlir
    %y = nn.fused %x, %c {program = array<i64: 2, 0, 1, 9, 2, -1>,
                          results = array<i64: 3>}
        : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Variadic<NN_FloatTensor>:$inputs, DenseI64ArrayAttr:$program,
                       DenseI64ArrayAttr:$results_of);
  let results = (outs Variadic<NN_FloatTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
}

#endif // FSDP_NN_FUSED_OPS_TD
