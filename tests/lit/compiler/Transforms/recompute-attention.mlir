// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-recompute-activations{ckpt=selective})' | FileCheck %s --check-prefix=SELECTIVE
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-recompute-activations{ckpt=blocks})' | FileCheck %s --check-prefix=BLOCKS

// Checkpointing around a fused attention (compiler/Transforms/
// RecomputeActivations.cpp): two blocks h' = h + tanh(attention(h W, h, h)).
// nn.attention_grad reads the op's output and log-sum-exp, never a score
// tensor, so those are all a checkpoint has to keep or recompute.

func.func @forward(%w0: tensor<4x4xf32> {nn.param = "layers.0.w"}, %w1: tensor<4x4xf32> {nn.param = "layers.1.w"}, %x: tensor<1x2x4x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
  %q0 = nn.matmul %x, %w0 : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %o0, %l0 = nn.attention %q0, %x, %x {is_causal = true, scale = 5.000000e-01 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4xf32>)
  %t0 = nn.tanh %o0 : tensor<1x2x4x4xf32>
  %h1 = nn.add %x, %t0 : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %q1 = nn.matmul %h1, %w1 : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %o1, %l1 = nn.attention %q1, %h1, %h1 {is_causal = true, scale = 5.000000e-01 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4xf32>)
  %t1 = nn.tanh %o1 : tensor<1x2x4x4xf32>
  %h2 = nn.add %h1, %t1 : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %s = nn.reduce_sum %h2 {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x4x4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// selective keeps the attention's output and log-sum-exp (the op costs most
// to recompute, and its saved tensors are B·H·T·(D + 1) values): only tanh
// is recomputed, from the saved output, and the gradient reads the
// forward's own results.
// SELECTIVE-LABEL: func.func @train_step(
// SELECTIVE: %[[O0:[a-z0-9_]+]], %[[L0:[a-z0-9_]+]] = nn.attention
// SELECTIVE: %[[O1:[a-z0-9_]+]], %[[L1:[a-z0-9_]+]] = nn.attention
// SELECTIVE-NOT: nn.attention {{.*}}fsdp.recompute
// SELECTIVE: nn.tanh %[[O1]] {fsdp.recompute = "layers.1"}
// SELECTIVE: nn.attention_grad %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[O1]], %[[L1]],
// SELECTIVE: nn.tanh %[[O0]] {fsdp.recompute = "layers.0"}
// SELECTIVE: nn.attention_grad %{{[0-9]+}}, %arg2, %arg2, %[[O0]], %[[L0]],

// blocks recomputes each block's attention from the block's input, and the
// gradient reads the recomputed output and log-sum-exp.
// BLOCKS-LABEL: func.func @train_step(
// BLOCKS: nn.reduce_sum
// BLOCKS: %[[Q1:[0-9]+]] = nn.matmul %{{[0-9]+}}, %arg1 {fsdp.recompute = "layers.1"}
// BLOCKS-NEXT: %[[O1:[a-z0-9_]+]], %[[L1:[a-z0-9_]+]] = nn.attention %[[Q1]], {{.*}}fsdp.recompute = "layers.1"
// BLOCKS: nn.attention_grad %[[Q1]], %{{[0-9]+}}, %{{[0-9]+}}, %[[O1]], %[[L1]],
// BLOCKS: %[[Q0:[0-9]+]] = nn.matmul %arg2, %arg0 {fsdp.recompute = "layers.0"}
// BLOCKS-NEXT: %[[O0:[a-z0-9_]+]], %[[L0:[a-z0-9_]+]] = nn.attention %[[Q0]], {{.*}}fsdp.recompute = "layers.0"
// BLOCKS: nn.attention_grad %[[Q0]], %arg2, %arg2, %[[O0]], %[[L0]],
