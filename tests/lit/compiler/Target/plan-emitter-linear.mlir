// A transpose of the last two dims read only by matmuls (torch's exported
// Linear: x @ W.t()) is not materialized: the MatMul kernel reads W in place
// with ints [trans_a, trans_b] = [0, 1]. A transpose with another user
// (here, an output) stays.

// RUN: fsdp-opt %s --emit=plan --mode=forward -o %t.plan
// RUN: fsdp-run %t.plan --dump | FileCheck %s
// CHECK-NOT: Transpose [%1]
// CHECK: inst 0 MatMul [%0, %1] -> [%3] ints=[0, 1]
// CHECK: inst 1 Transpose [%2] -> [%4] ints=[1, 0]
// CHECK: inst 2 MatMul [%0, %4] -> [%5]{{$}}

module {
  func.func @forward(%x: tensor<2x5x3xf32> {nn.input = "x"}, %w: tensor<4x3xf32> {nn.input = "w"},
                     %v: tensor<4x3xf32> {nn.input = "v"})
      -> (tensor<2x5x4xf32> {nn.output = "y"}, tensor<2x5x4xf32> {nn.output = "z"},
          tensor<3x4xf32> {nn.output = "vt"}) {
    %wt = nn.transpose %w {perm = array<i64: 1, 0>} : tensor<4x3xf32> to tensor<3x4xf32>
    %y = nn.matmul %x, %wt : (tensor<2x5x3xf32>, tensor<3x4xf32>) -> tensor<2x5x4xf32>
    %vt = nn.transpose %v {perm = array<i64: 1, 0>} : tensor<4x3xf32> to tensor<3x4xf32>
    %z = nn.matmul %x, %vt : (tensor<2x5x3xf32>, tensor<3x4xf32>) -> tensor<2x5x4xf32>
    return %y, %z, %vt : tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<3x4xf32>
  }
}

// A 1-D lhs with a folded transposed rhs keeps both flags (the plan checker
// accepts two flags whatever the lhs rank).
// RUN: fsdp-opt %S/Inputs/vector-times-transpose.mlir --emit=plan --mode=forward -o %t.vec.plan
// RUN: fsdp-run %t.vec.plan --dump | FileCheck %s --check-prefix=VECTOR
// VECTOR: inst 0 MatMul [%0, %1] -> [%2] ints=[0, 1]
