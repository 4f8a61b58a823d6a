// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full})' | FileCheck %s

// Values the forward derives from a parameter by views alone are derived
// again from the backward gather, so the forward gather dies with the
// forward pass. Here layers.1 packs two projections in one weight (as
// nn.MultiheadAttention packs q, k and v) and splits it by row slices;
// the backward of each matmul reads its slice again.

func.func @forward(%w0: tensor<4x4xf32> {nn.param = "layers.0.w"}, %w1: tensor<8x4xf32> {nn.param = "layers.1.w"}, %x: tensor<2x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.matmul %x, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = nn.relu %0 : tensor<2x4xf32>
  %q = nn.slice %w1 {starts = array<i64: 0, 0>, ends = array<i64: 4, 4>, steps = array<i64: 1, 1>} : tensor<8x4xf32> to tensor<4x4xf32>
  %k = nn.slice %w1 {starts = array<i64: 4, 0>, ends = array<i64: 8, 4>, steps = array<i64: 1, 1>} : tensor<8x4xf32> to tensor<4x4xf32>
  %kt = nn.transpose %k {perm = array<i64: 1, 0>} : tensor<4x4xf32> to tensor<4x4xf32>
  %2 = nn.matmul %1, %q : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %3 = nn.matmul %2, %kt : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %4 = nn.reduce_sum %3 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %4 : tensor<f32>
}

// CHECK-LABEL: func.func @train_step(
// CHECK: nn.relu
// CHECK-NEXT: %[[G1F:[0-9]+]] = fsdp.all_gather
// CHECK-NEXT: %[[W1F:[0-9]+]] = fsdp.flat_view %[[G1F]]
// CHECK-NEXT: %[[QF:[0-9]+]] = nn.slice %[[W1F]] {{.*}}starts = array<i64: 0, 0>
// CHECK-NEXT: %[[KF:[0-9]+]] = nn.slice %[[W1F]] {{.*}}starts = array<i64: 4, 0>
// CHECK-NEXT: %[[KTF:[0-9]+]] = nn.transpose %[[KF]]
// CHECK-NEXT: nn.matmul %{{[0-9]+}}, %[[QF]]
// CHECK-NEXT: nn.matmul %{{[0-9]+}}, %[[KTF]]
// Backward: layers.1 gathered again, its slices taken from this copy (the
// backward reads k itself and q transposed), and nothing reads the
// forward copy or views of it.
// CHECK: %[[G1B:[0-9]+]] = fsdp.all_gather
// CHECK-NEXT: %[[W1B:[0-9]+]] = fsdp.flat_view %[[G1B]]
// CHECK-NEXT: %[[QB:[0-9]+]] = nn.slice %[[W1B]] {{.*}}starts = array<i64: 0, 0>
// CHECK-NEXT: %[[KB:[0-9]+]] = nn.slice %[[W1B]] {{.*}}starts = array<i64: 4, 0>
// CHECK-NEXT: nn.matmul %{{[0-9]+}}, %[[KB]]
// CHECK-NEXT: nn.transpose %[[QB]]
// CHECK-NOT: %[[G1F]]{{[^0-9]}}
// CHECK-NOT: %[[W1F]]{{[^0-9]}}
// CHECK-NOT: %[[QF]]{{[^0-9]}}
// CHECK-NOT: %[[KF]]{{[^0-9]}}
// CHECK-NOT: %[[KTF]]{{[^0-9]}}
// CHECK: return
