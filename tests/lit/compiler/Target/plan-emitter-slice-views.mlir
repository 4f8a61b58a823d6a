// A slice that is one run of its input's elements, starting on the 64-byte
// buffer alignment, is a view: a second buffer description over the
// input's bytes at the run's offset, with no instruction (attention's
// packed q/k/v weight split `in_proj_weight[16:48]`, and a run inside an
// outer index of 1). A slice narrowing an inner dimension (a column range)
// or starting off the alignment (row 1 of 3-float rows, 12 bytes in) is
// still copied by a Slice instruction.

// RUN: fsdp-opt %s --emit=plan --mode=forward -o %t.plan
// RUN: fsdp-run %t.plan --dump | FileCheck %s

// CHECK: buffer %0 f32[48, 16] persistent+0 size=3072 "w"
// CHECK: buffer %2 f32[1, 4, 16] persistent+3200 size=256 "v"
// CHECK: buffer %4 f32[32, 16] persistent+1024 size=2048
// CHECK: buffer %7 f32[1, 2, 16] persistent+3328 size=128
// CHECK: inst 0 Exp [%4] -> [%5]
// CHECK-NEXT: inst 1 Slice [%1] -> [%6] ints=[1, 0, 1, 1]
// CHECK-NEXT: inst 2 Neg [%7] -> [%8]
// CHECK-NEXT: inst 3 Slice [%3] -> [%9] ints=[0, 0, 1, 1]
// CHECK-NOT: inst

module {
  func.func @forward(%w: tensor<48x16xf32> {nn.input = "w"}, %c: tensor<8x3xf32> {nn.input = "c"},
                     %v: tensor<1x4x16xf32> {nn.input = "v"}, %m: tensor<4x16xf32> {nn.input = "m"})
      -> (tensor<32x16xf32> {nn.output = "kv"}, tensor<7x3xf32> {nn.output = "rows"},
          tensor<1x2x16xf32> {nn.output = "inner"}, tensor<4x8xf32> {nn.output = "cols"}) {
    %kv = nn.slice %w {starts = array<i64: 16, 0>, ends = array<i64: 48, 16>, steps = array<i64: 1, 1>} : tensor<48x16xf32> to tensor<32x16xf32>
    %kv2 = nn.exp %kv : tensor<32x16xf32>
    %rows = nn.slice %c {starts = array<i64: 1, 0>, ends = array<i64: 8, 3>, steps = array<i64: 1, 1>} : tensor<8x3xf32> to tensor<7x3xf32>
    %inner = nn.slice %v {starts = array<i64: 0, 2, 0>, ends = array<i64: 1, 4, 16>, steps = array<i64: 1, 1, 1>} : tensor<1x4x16xf32> to tensor<1x2x16xf32>
    %inner2 = nn.neg %inner : tensor<1x2x16xf32>
    %cols = nn.slice %m {starts = array<i64: 0, 0>, ends = array<i64: 4, 8>, steps = array<i64: 1, 1>} : tensor<4x16xf32> to tensor<4x8xf32>
    return %kv2, %rows, %inner2, %cols : tensor<32x16xf32>, tensor<7x3xf32>, tensor<1x2x16xf32>, tensor<4x8xf32>
  }
}
