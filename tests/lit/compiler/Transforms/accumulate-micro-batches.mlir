// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full},fsdp-accumulate-micro-batches{micro-batches=2 reduce=each})' | FileCheck %s --check-prefix=EACH
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full},fsdp-accumulate-micro-batches{micro-batches=2 reduce=last})' | FileCheck %s --check-prefix=LAST
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full},fsdp-accumulate-micro-batches{micro-batches=2 reduce=each last-units=layers.1})' | FileCheck %s --check-prefix=MIXED
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=grad-op},fsdp-accumulate-micro-batches{micro-batches=3 reduce=each})' | FileCheck %s --check-prefix=GRADOP
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-accumulate-micro-batches{micro-batches=2 reduce=last})' | FileCheck %s --check-prefix=UNSHARDED
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full},fsdp-accumulate-micro-batches{micro-batches=1})' | FileCheck %s --check-prefix=ONE
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-train-pipeline{world-size=2 grad-accum=2 accum-reduce=last})' | FileCheck %s --check-prefix=PIPELINE

// fsdp-accumulate-micro-batches (compiler/Transforms/AccumulateMicroBatches.cpp)
// on the two-block MLP of shard-parameters.mlir: the input doubles its
// rows, each micro-batch reads its slice, runs forward and backward with
// its own gathers, and each flat group's gradient is summed per
// micro-batch after its reduce-scatter (each) or before one
// reduce-scatter after the last micro-batch (last).

func.func @forward(%w0: tensor<4x4xf32> {nn.param = "layers.0.w"}, %b0: tensor<4xf32> {nn.param = "layers.0.bias"}, %w1: tensor<4x4xf32> {nn.param = "layers.1.w"}, %b: tensor<4xf32> {nn.param = "head.bias"}, %x: tensor<2x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.matmul %x, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = nn.add %0, %b0 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = nn.relu %1 : tensor<2x4xf32>
  %3 = nn.matmul %2, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %4 = nn.add %3, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %5 = nn.reduce_sum %4 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %5 : tensor<f32>
}

// each: the input holds both micro-batches; micro-batch 0 reads rows 0-1.
// EACH: module attributes {fsdp.accumulation = {layers.0 = "each", layers.1 = "each", root = "each"}, fsdp.grad_accum = 2 : i64
// EACH-LABEL: func.func @train_step(
// EACH-SAME: %[[X:[a-z0-9]+]]: tensor<4x4xf32> {nn.input = "x"}
// EACH: %[[X0:[0-9]+]] = nn.slice %[[X]] {ends = array<i64: 2, 4>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x4xf32> to tensor<2x4xf32>
// EACH: fsdp.all_gather
// EACH: nn.matmul %[[X0]]
// The root unit is gathered in place once per step, never again.
// EACH: fsdp.all_gather %{{[a-z0-9]+}} {{.*}}persistent
// Micro-batch 0's gradients are reduced as the shard stage placed them.
// EACH: %[[R0:[0-9]+]] = fsdp.reduce_scatter {{.*}} : tensor<32xf32> -> tensor<16xf32>
// EACH: %[[L1A:[0-9]+]] = fsdp.reduce_scatter {{.*}} : tensor<16xf32> -> tensor<8xf32>
// EACH: %[[L0A:[0-9]+]] = fsdp.reduce_scatter {{.*}} : tensor<20xf32> -> tensor<10xf32>
// Micro-batch 1: rows 2-3, its own (non-persistent) gathers, and each
// reduced shard added to the running sum right after it is reduced.
// EACH: %[[X1:[0-9]+]] = nn.slice %[[X]] {ends = array<i64: 4, 4>, starts = array<i64: 2, 0>, steps = array<i64: 1, 1>}
// EACH: fsdp.all_gather %{{[a-z0-9]+}} {fsdp.micro_batch = 1 : i64,
// EACH-NOT: persistent
// EACH: nn.matmul %[[X1]]
// EACH: %[[R1:[0-9]+]] = fsdp.reduce_scatter {{.*}} : tensor<32xf32> -> tensor<16xf32>
// EACH-NEXT: nn.add %[[R0]], %[[R1]] : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
// EACH: fsdp.reduce_scatter {{.*}} : tensor<16xf32> -> tensor<8xf32>
// EACH-NEXT: nn.add %[[L1A]], %{{[0-9]+}} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// EACH: fsdp.reduce_scatter {{.*}} : tensor<20xf32> -> tensor<10xf32>
// EACH-NEXT: nn.add %[[L0A]], %{{[0-9]+}} : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
// The sums and the loss are scaled by 1/K; the optimizer reads the mean.
// EACH: %[[HALF:[a-z0-9_]+]] = nn.constant dense<5.000000e-01> : tensor<f32>
// EACH: %[[MEAN:[0-9]+]] = nn.mul %{{[0-9]+}}, %[[HALF]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// EACH: %[[ROOTG:[0-9]+]] = nn.mul %{{[0-9]+}}, %[[HALF]] : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
// EACH: fsdp.all_reduce %[[MEAN]]
// EACH: nn.sgd %{{[a-z0-9]+}}, %[[ROOTG]]
// EACH-COUNT-2: nn.sgd
// EACH-NOT: nn.sgd

// last: micro-batch 0's packed gradients are kept unreduced; one
// reduce-scatter per group after the last micro-batch reads the mean.
// LAST: fsdp.accumulation = {layers.0 = "last", layers.1 = "last", root = "last"}
// LAST-LABEL: func.func @train_step(
// LAST: %[[F0:[0-9]+]] = fsdp.flatten {{.*}} -> tensor<32xf32>
// LAST-NOT: fsdp.reduce_scatter
// LAST: nn.slice {{.*}}starts = array<i64: 2, 0>
// LAST: %[[F1:[0-9]+]] = fsdp.flatten {{.*}} -> tensor<32xf32>
// LAST-NEXT: nn.add %[[F0]], %[[F1]] : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
// LAST-NOT: fsdp.reduce_scatter
// LAST: %[[G:[0-9]+]] = nn.mul %{{[0-9]+}}, %{{[a-z0-9_]+}} : (tensor<32xf32>, tensor<f32>) -> tensor<32xf32>
// LAST: fsdp.reduce_scatter %[[G]] {{.*}} : tensor<32xf32> -> tensor<16xf32>
// LAST-COUNT-2: fsdp.reduce_scatter
// LAST-NOT: fsdp.reduce_scatter

// A unit named in last-units accumulates unsharded; the others reduce per
// micro-batch: 2 + 2 reduce-scatters for root and layers.0, 1 for layers.1.
// MIXED: fsdp.accumulation = {layers.0 = "each", layers.1 = "last", root = "each"}
// MIXED-COUNT-5: fsdp.reduce_scatter
// MIXED-NOT: fsdp.reduce_scatter

// grad-op: every unit is gathered in place once for all three
// micro-batches; the gradients are reduced three times.
// GRADOP-LABEL: func.func @train_step(
// GRADOP-SAME: tensor<6x4xf32> {nn.input = "x"}
// GRADOP-COUNT-3: fsdp.all_gather {{.*}}persistent
// GRADOP-NOT: fsdp.all_gather
// GRADOP: nn.constant dense<0.333333343> : tensor<f32>

// Without sharding the gradients themselves are summed (last and each
// are the same thing there): one SGD per parameter reads the mean.
// UNSHARDED: fsdp.grad_accum = 2 : i64
// UNSHARDED-LABEL: func.func @train_step(
// UNSHARDED-SAME: tensor<4x4xf32> {nn.input = "x"}
// UNSHARDED-NOT: fsdp.{{all_gather|reduce_scatter|all_reduce}}
// UNSHARDED-COUNT-4: nn.sgd

// K = 1 changes nothing and records nothing.
// ONE-NOT: fsdp.grad_accum
// ONE-LABEL: func.func @train_step(
// ONE-SAME: tensor<2x4xf32> {nn.input = "x"}
// ONE-NOT: nn.slice

// fsdp-train-pipeline runs the pass after the shard stage, before the
// schedule stage puts every collective (micro-batch 1's too) on its stream.
// PIPELINE: fsdp.accumulation = {layers.0 = "last", layers.1 = "last", root = "last"}, {{.*}}fsdp.grad_accum = 2 : i64
// PIPELINE: fsdp.all_gather {{.*}}fsdp.micro_batch = 1 : i64{{.*}}fsdp.stream = 1
// PIPELINE: fsdp.reduce_scatter {{.*}}fsdp.stream = 1
