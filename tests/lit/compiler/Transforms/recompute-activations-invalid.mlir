// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-recompute-activations{ckpt=blocks})'
// RUN: not fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-recompute-activations{ckpt=auto})' 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not fsdp-opt %S/recompute-activations.mlir --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-recompute-activations{blocks=0,2})' 2>&1 | FileCheck %s --check-prefix=INDEX

// One case per error of compiler/Transforms/RecomputeActivations.cpp.
// POLICY: error: ckpt must be blocks or selective, not 'auto'
// A selected block the model does not have (recompute-activations.mlir has
// two): nothing is rewritten.
// INDEX: error: block 2 to checkpoint does not exist (the model has 2 blocks)

// expected-error @+1 {{no @train_step to checkpoint (run the train stage first)}}
module {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> tensor<4xf32> {
    return %w : tensor<4xf32>
  }
}

// -----

// Checkpointing runs before the shard stage.
// expected-error @+1 {{@train_step is already sharded (checkpointing runs before the shard stage)}}
func.func @train_step(%s: tensor<2xf32> {fsdp.unit = {flat_numel = 2 : i64, group_size = 1 : i64, name = "root", padded_numel = 2 : i64, params = [{name = "w", offset = 0 : i64, type = tensor<2xf32>}]}}) -> (tensor<2xf32> {nn.output = "loss"}) {
  %0 = nn.neg %s : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// expected-error @+1 {{the loss (the first result) is not computed by an op of @train_step: nothing to checkpoint}}
func.func @train_step(%l: tensor<f32> {nn.input = "l"}) -> (tensor<f32> {nn.output = "loss"}) {
  return %l : tensor<f32>
}

// -----

// Parameter names without repeated numbered blocks: nothing to checkpoint.
// expected-error @+1 {{no repeated blocks to checkpoint: no trainable parameter names a numbered block (such as 'layers.0.' or 'blocks.3.')}}
func.func @train_step(%w: tensor<4xf32> {nn.param = "head.w"}, %lr: tensor<f64> {nn.lr}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.update = "head.w"}) {
  %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %1 = nn.sgd %w, %w, %lr {momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return %0, %1 : tensor<f32>, tensor<4xf32>
}
