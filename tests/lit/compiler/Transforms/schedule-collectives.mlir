// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full},fsdp-schedule-collectives{prefetch=0})' | FileCheck %s --check-prefix=K0
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full},fsdp-schedule-collectives{prefetch=1})' | FileCheck %s --check-prefix=K1
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full},fsdp-schedule-collectives{prefetch=1})' | FileCheck %s --check-prefix=OPT
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full},fsdp-schedule-collectives{prefetch=2 limit-all-gathers=0})' | FileCheck %s --check-prefix=K2
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full},fsdp-schedule-collectives{prefetch=2 limit-all-gathers=1})' | FileCheck %s --check-prefix=L1
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=grad-op},fsdp-schedule-collectives{prefetch=1})' | FileCheck %s --check-prefix=GRADOP

// fsdp-schedule-collectives (compiler/Transforms/ScheduleCollectives.cpp)
// on a four-block MLP (units layers.0-3 are %arg3-%arg6; the head bias is
// the root unit, %arg2). Every collective goes to the communication stream;
// all-gathers move K units ahead, forward in unit order and backward in
// reverse order (layers.0 needs no backward gather: its weight gradient
// reads only the input), bounded by the limit on units in full.

func.func @forward(%w0: tensor<4x4xf32> {nn.param = "layers.0.w"}, %w1: tensor<4x4xf32> {nn.param = "layers.1.w"}, %w2: tensor<4x4xf32> {nn.param = "layers.2.w"}, %w3: tensor<4x4xf32> {nn.param = "layers.3.w"}, %b: tensor<4xf32> {nn.param = "head.bias"}, %x: tensor<2x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.matmul %x, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = nn.relu %0 : tensor<2x4xf32>
  %2 = nn.matmul %1, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %3 = nn.relu %2 : tensor<2x4xf32>
  %4 = nn.matmul %3, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %5 = nn.relu %4 : tensor<2x4xf32>
  %6 = nn.matmul %5, %w3 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %7 = nn.add %6, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %8 = nn.reduce_sum %7 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %8 : tensor<f32>
}

// K = 0: the shard stage's places (each gather right before its unit's
// first use); the collectives are async all the same.
// K0-LABEL: func.func @train_step(
// K0: fsdp.all_gather %arg3 {fsdp.stream = 1 : i64,
// K0-NEXT: fsdp.flat_view
// K0-NEXT: nn.matmul
// K0-NEXT: nn.relu
// K0-NEXT: fsdp.all_gather %arg4 {fsdp.stream = 1 : i64,
// K0-NEXT: fsdp.flat_view
// K0: fsdp.reduce_scatter {{.*}}fsdp.stream = 1 : i64
// K0-NEXT: fsdp.all_gather %arg6
// K0-NEXT: fsdp.flat_view
// K0: fsdp.reduce_scatter {{.*}}fsdp.stream = 1 : i64
// K0-NEXT: nn.sgd %arg2
// K0-NEXT: nn.relu_grad
// K0-NEXT: fsdp.all_gather %arg5
// K0: fsdp.all_reduce {{.*}}fsdp.stream = 1 : i64

// K = 1: layers.1 is gathered when layers.0 starts (before its first
// reader), layers.2 when layers.1 starts, ...; the backward gathers
// layers.2 when layers.3 starts.
// K1-LABEL: func.func @train_step(
// K1: fsdp.all_gather %arg3
// K1-NEXT: fsdp.all_gather %arg4
// K1-NEXT: fsdp.flat_view
// K1-NEXT: nn.matmul
// K1-NEXT: nn.relu
// K1-NEXT: fsdp.all_gather %arg5
// K1-NEXT: fsdp.flat_view
// K1-NEXT: nn.matmul
// K1-NEXT: nn.relu
// K1-NEXT: fsdp.all_gather %arg6
// K1: fsdp.reduce_scatter
// K1-NEXT: fsdp.all_gather %arg6
// K1-NEXT: fsdp.all_gather %arg5
// K1-NEXT: fsdp.flat_view
// K1: nn.relu_grad
// K1-NEXT: fsdp.all_gather %arg4

// The optimizer overlaps the backward: each unit's update moves up behind
// the reduce-scatter that follows its gradient's, so that reduction runs
// during the next unit's backward and the update need not wait long; the
// last unit's update stays behind the loss all-reduce.
// OPT-LABEL: func.func @train_step(
// OPT: %[[RSROOT:[0-9]+]] = fsdp.reduce_scatter
// OPT: %[[RS3:[0-9]+]] = fsdp.reduce_scatter
// OPT-NEXT: nn.sgd %arg2, %[[RSROOT]]
// OPT: %[[RS2:[0-9]+]] = fsdp.reduce_scatter
// OPT-NEXT: nn.sgd %arg6, %[[RS3]]
// OPT: %[[RS1:[0-9]+]] = fsdp.reduce_scatter
// OPT-NEXT: nn.sgd %arg5, %[[RS2]]
// OPT: %[[RS0:[0-9]+]] = fsdp.reduce_scatter
// OPT-NEXT: nn.sgd %arg4, %[[RS1]]
// OPT-NEXT: fsdp.all_reduce
// OPT-NEXT: nn.sgd %arg3, %[[RS0]]
// OPT-NEXT: return

// K = 2 without a limit: two units ahead.
// K2-LABEL: func.func @train_step(
// K2: fsdp.all_gather %arg3
// K2-NEXT: fsdp.all_gather %arg4
// K2-NEXT: fsdp.all_gather %arg5
// K2-NEXT: fsdp.flat_view
// K2-NEXT: nn.matmul
// K2-NEXT: nn.relu
// K2-NEXT: fsdp.all_gather %arg6
// K2: fsdp.reduce_scatter
// K2-NEXT: fsdp.all_gather %arg6
// K2-NEXT: fsdp.all_gather %arg5
// K2-NEXT: fsdp.all_gather %arg4
// K2-NEXT: fsdp.flat_view

// Limit 1: one unit in full at a time, so each gather waits for the
// previous unit's last reader (just before the activation in between).
// L1-LABEL: func.func @train_step(
// L1: fsdp.all_gather %arg3
// L1-NEXT: fsdp.flat_view
// L1-NEXT: nn.matmul
// L1-NEXT: fsdp.all_gather %arg4
// L1-NEXT: nn.relu
// L1: nn.matmul
// L1-NEXT: fsdp.all_gather %arg5
// L1-NEXT: nn.relu

// grad-op: one gather per unit, kept for the backward; a unit counts
// against the limit (2) only until its last forward reader.
// GRADOP-LABEL: func.func @train_step(
// GRADOP: fsdp.all_gather %arg3
// GRADOP-NEXT: fsdp.all_gather %arg4
// GRADOP: nn.relu
// GRADOP-NEXT: fsdp.all_gather %arg5
// GRADOP: nn.relu
// GRADOP-NEXT: fsdp.all_gather %arg6
// GRADOP-NOT: fsdp.all_gather %arg{{[3-6]}}
