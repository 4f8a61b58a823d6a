// Views need no copy: a reshape is a second buffer description over the
// same bytes (same region and offset, its own shape), and a transpose of
// the last two dims read only by matmuls is read in place with a transpose
// flag, here on the batched lhs of an attention-style product. The viewed
// value stays allocated until the last read through any of its views: %n,
// allocated after %e's last direct use but before its reshape %r is read,
// does not get %e's bytes.

// RUN: fsdp-opt %s --emit=plan --mode=forward -o %t.plan
// RUN: fsdp-run %t.plan --dump | FileCheck %s

// CHECK: buffer %2 f32[2, 3, 4] arena+0 size=96
// CHECK: buffer %3 f32[6, 4] arena+0 size=96
// CHECK: buffer %4 f32[2, 4, 4] persistent+{{[0-9]+}} size=128 "y"
// CHECK: buffer %5 f32[2, 3, 4] arena+128 size=96
// CHECK: buffer %6 f32[4, 3] persistent+128 size=48
// CHECK-NOT: Copy
// CHECK-NOT: Transpose
// CHECK: inst 0 Exp [%0] -> [%2]
// CHECK: inst 1 MatMul [%2, %1] -> [%4] ints=[1, 0]
// CHECK: inst 2 Softmax [%0] -> [%5] ints=[2]
// CHECK: inst 3 MatMul [%3, %6] -> [%7]{{$}}
// CHECK: inst 4 Add [%5, %0] -> [%8]

module {
  func.func @forward(%x: tensor<2x3x4xf32> {nn.input = "x"}, %w: tensor<3x4xf32> {nn.input = "w"})
      -> (tensor<2x4x4xf32> {nn.output = "y"}, tensor<6x3xf32> {nn.output = "z"},
          tensor<2x3x4xf32> {nn.output = "u"}) {
    %e = nn.exp %x : tensor<2x3x4xf32>
    %r = nn.reshape %e : tensor<2x3x4xf32> to tensor<6x4xf32>
    %t = nn.transpose %e {perm = array<i64: 0, 2, 1>} : tensor<2x3x4xf32> to tensor<2x4x3xf32>
    %y = nn.matmul %t, %w : (tensor<2x4x3xf32>, tensor<3x4xf32>) -> tensor<2x4x4xf32>
    %n = nn.softmax %x {axis = 2 : i64} : tensor<2x3x4xf32>
    %w2 = nn.reshape %w : tensor<3x4xf32> to tensor<4x3xf32>
    %z = nn.matmul %r, %w2 : (tensor<6x4xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
    %u = nn.add %n, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %y, %z, %u : tensor<2x4x4xf32>, tensor<6x3xf32>, tensor<2x3x4xf32>
  }
}
