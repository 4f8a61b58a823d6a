// An nn.fused chain is one Fused instruction whose ints are [ops,
// program..., result value ids...] (plan.fbs); with --fusion=none the plan
// keeps one kernel per op. Both plans compute the same bits (runtime
// FusedKernelsTest; the training parity test compares whole runs).

// RUN: fsdp-opt %s --emit=plan --mode=forward -o %t.plan
// RUN: fsdp-run %t.plan --dump | FileCheck %s
// CHECK: inst 0 Fused [%0, %1, %2] -> [%3, %4] ints=[3, 6, 0, -1, 2, 3, 1, 0, 4, 2, 3, 5]
// CHECK-NOT: inst 1

// RUN: fsdp-opt %s --emit=plan --mode=forward --fusion=none -o %t.unfused.plan
// RUN: fsdp-run %t.unfused.plan --dump | FileCheck %s --check-prefix=UNFUSED
// UNFUSED: inst 0 Exp
// UNFUSED-NEXT: inst 1 Mul
// UNFUSED-NEXT: inst 2 Add

// RUN: not fsdp-opt %s --emit=mlir --fusion=none 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: --fusion requires --emit=plan, --emit=report or --emit=trace

module {
  func.func @forward(%x: tensor<2x3xf32> {nn.input = "x"}) -> (tensor<2x3xf32> {nn.output = "e"}, tensor<2x3xf32> {nn.output = "y"}) {
    %half = nn.constant dense<0.5> : tensor<f32>
    %one = nn.constant dense<1.0> : tensor<f32>
    %e = nn.exp %x : tensor<2x3xf32>
    %m = nn.mul %e, %half : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %y = nn.add %m, %one : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    return %e, %y : tensor<2x3xf32>, tensor<2x3xf32>
  }
}
