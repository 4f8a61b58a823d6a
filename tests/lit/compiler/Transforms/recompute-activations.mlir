// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-recompute-activations{ckpt=blocks})' | FileCheck %s --check-prefix=BLOCKS
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-recompute-activations{ckpt=selective})' | FileCheck %s --check-prefix=SELECTIVE
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-recompute-activations{ckpt=blocks},fsdp-shard-parameters{world-size=2})' | FileCheck %s --check-prefix=SHARDED
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-recompute-activations{ckpt=blocks},fsdp-recompute-activations{ckpt=blocks})' | FileCheck %s --check-prefix=TWICE
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-recompute-activations{ckpt=blocks blocks=1})' | FileCheck %s --check-prefix=ONLY1

// fsdp-recompute-activations (compiler/Transforms/RecomputeActivations.cpp)
// on two residual blocks y = x + tanh(x W)^2 and a root head. The backward
// reads tanh's result (tanh_grad and the square's gradient); matmul's
// output only feeds tanh.

func.func @forward(%w0: tensor<4x4xf32> {nn.param = "layers.0.w"}, %w1: tensor<4x4xf32> {nn.param = "layers.1.w"}, %b: tensor<4xf32> {nn.param = "head.bias"}, %x: tensor<2x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.matmul %x, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = nn.tanh %0 : tensor<2x4xf32>
  %2 = nn.mul %1, %1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = nn.add %x, %2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %4 = nn.matmul %3, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %5 = nn.tanh %4 : tensor<2x4xf32>
  %6 = nn.mul %5, %5 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %7 = nn.add %3, %6 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %8 = nn.add %7, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %9 = nn.reduce_sum %8 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %9 : tensor<f32>
}

// blocks: each block's forward (matmul, tanh) is cloned right before the
// block's first backward use, from the block's input; the backward reads
// only the clones. The block output %3 (layers.1's input) stays saved and
// feeds layers.1's recomputation; the head (root) is not a block.
// BLOCKS-LABEL: func.func @train_step(
// BLOCKS-SAME: %[[W0:[a-z0-9]+]]: tensor<4x4xf32> {nn.param = "layers.0.w"}, %[[W1:[a-z0-9]+]]: tensor<4x4xf32> {nn.param = "layers.1.w"}
// BLOCKS-SAME: %[[X:[a-z0-9]+]]: tensor<2x4xf32> {nn.input = "x"}
// BLOCKS: %[[M0:[0-9]+]] = nn.matmul %[[X]], %[[W0]] : (
// BLOCKS-NEXT: %[[T0:[0-9]+]] = nn.tanh %[[M0]] : tensor
// BLOCKS-NEXT: nn.mul %[[T0]], %[[T0]]
// BLOCKS-NEXT: %[[Y0:[0-9]+]] = nn.add %[[X]],
// BLOCKS-NEXT: %[[M1:[0-9]+]] = nn.matmul %[[Y0]], %[[W1]] : (
// BLOCKS-NEXT: %[[T1:[0-9]+]] = nn.tanh %[[M1]] : tensor
// BLOCKS: nn.reduce_sum
// Backward of layers.1.
// BLOCKS: %[[RM1:[0-9]+]] = nn.matmul %[[Y0]], %[[W1]] {fsdp.recompute = "layers.1"}
// BLOCKS-NEXT: %[[RT1:[0-9]+]] = nn.tanh %[[RM1]] {fsdp.recompute = "layers.1"}
// BLOCKS-NEXT: nn.mul %{{[0-9]+}}, %[[RT1]]
// BLOCKS-NEXT: nn.mul %{{[0-9]+}}, %[[RT1]]
// BLOCKS-NEXT: nn.add
// BLOCKS-NEXT: nn.tanh_grad %[[RT1]],
// Backward of layers.0.
// BLOCKS: %[[RM0:[0-9]+]] = nn.matmul %[[X]], %[[W0]] {fsdp.recompute = "layers.0"}
// BLOCKS-NEXT: %[[RT0:[0-9]+]] = nn.tanh %[[RM0]] {fsdp.recompute = "layers.0"}
// BLOCKS-NEXT: nn.mul %{{[0-9]+}}, %[[RT0]]
// BLOCKS: nn.tanh_grad %[[RT0]],
// BLOCKS-NOT: fsdp.recompute
// BLOCKS: return

// selective: the matmul outputs stay saved; only tanh is recomputed, from
// the saved matmul output.
// SELECTIVE-LABEL: func.func @train_step(
// SELECTIVE: %[[M0:[0-9]+]] = nn.matmul
// SELECTIVE: %[[M1:[0-9]+]] = nn.matmul
// SELECTIVE: nn.reduce_sum
// SELECTIVE-NOT: nn.matmul {{.*}}fsdp.recompute
// SELECTIVE: %[[RT1:[0-9]+]] = nn.tanh %[[M1]] {fsdp.recompute = "layers.1"}
// SELECTIVE: nn.tanh_grad %[[RT1]],
// SELECTIVE: %[[RT0:[0-9]+]] = nn.tanh %[[M0]] {fsdp.recompute = "layers.0"}
// SELECTIVE: nn.tanh_grad %[[RT0]],
// SELECTIVE-NOT: fsdp.recompute

// Sharded afterwards (--shard=full): the recomputed ops are backward ops,
// so they read each unit's backward all-gather, and layers.0, whose
// backward read no parameter before, is gathered again for its
// recomputation.
// SHARDED-LABEL: func.func @train_step(
// SHARDED: nn.reduce_sum
// SHARDED: %[[G1:[0-9]+]] = fsdp.all_gather %[[L1:[a-z0-9]+]]
// SHARDED-NEXT: %[[V1:[0-9]+]] = fsdp.flat_view %[[G1]]
// SHARDED-NEXT: nn.matmul %{{[0-9]+}}, %[[V1]] {fsdp.recompute = "layers.1"}
// SHARDED: %[[G0:[0-9]+]] = fsdp.all_gather
// SHARDED-NEXT: %[[V0:[0-9]+]] = fsdp.flat_view %[[G0]]
// SHARDED-NEXT: nn.matmul %{{[a-z0-9]+}}, %[[V0]] {fsdp.recompute = "layers.0"}

// A second run finds nothing left to drop: the backward already reads
// recomputed copies only.
// TWICE-COUNT-4: fsdp.recompute
// TWICE-NOT: fsdp.recompute

// blocks=1: only the selected block (by index in model order, as
// --ckpt=auto chooses them) is recomputed; layers.0's backward reads its
// saved values.
// ONLY1-LABEL: func.func @train_step(
// ONLY1: nn.matmul %{{[0-9]+}}, %{{[a-z0-9]+}} {fsdp.recompute = "layers.1"}
// ONLY1-NEXT: nn.tanh %{{[0-9]+}} {fsdp.recompute = "layers.1"}
// ONLY1-NOT: fsdp.recompute
// ONLY1: return
