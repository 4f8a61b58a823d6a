// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-accumulate-micro-batches{micro-batches=3 reduce=each})' | FileCheck %s

// fsdp-accumulate-micro-batches gives each micro-batch's dropout a seed of
// its own (the mask is a function of seed, step and element): micro-batch
// 0 keeps the op's seed, 1 and 2 draw others.

func.func @forward(%w: tensor<4x4xf32> {nn.param = "w"}, %x: tensor<2x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1, %mask = nn.dropout %0 {ratio = 0.5 : f32, training = true, seed = 7 : i64} : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xi1>)
  %2 = nn.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// CHECK-LABEL: func.func @train_step(
// CHECK: nn.dropout {{.*}}seed = 7 : i64
// CHECK: nn.dropout {{.*}}seed = [[S1:[0-9]+]] : i64
// CHECK-NOT: seed = 7 :
// CHECK: nn.dropout {{.*}}seed = [[S2:[0-9]+]] : i64
// CHECK-NOT: seed = [[S1]] :
// CHECK: return
