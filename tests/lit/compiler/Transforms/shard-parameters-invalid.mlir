// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-shard-parameters{world-size=2})'
// RUN: not fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-shard-parameters{world-size=4 shard=hybrid:3})' 2>&1 | FileCheck %s --check-prefix=HYBRID

// One case per error of compiler/Transforms/ShardParameters.cpp.
// HYBRID: error: --shard=hybrid:3: group size does not divide --world-size=4

// expected-error @+1 {{no @train_step to shard (run the train stage first)}}
module {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> tensor<4xf32> {
    return %w : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{@train_step is already sharded}}
func.func @train_step(%s: tensor<2xf32> {fsdp.unit = {flat_numel = 2 : i64, group_size = 1 : i64, name = "root", padded_numel = 2 : i64, params = [{name = "w", offset = 0 : i64, type = tensor<2xf32>}]}}) -> (tensor<2xf32> {nn.output = "loss"}) {
  return %s : tensor<2xf32>
}

// -----

// A parameter's new value must come from the optimizer pass.
// expected-error @+1 {{the update of parameter 'w' is not an optimizer op on it (run fsdp-apply-optimizer)}}
func.func @train_step(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.update = "w"}) {
  %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %1 = nn.neg %w : tensor<4xf32>
  return %0, %1 : tensor<f32>, tensor<4xf32>
}

// -----

// Everything frozen: nothing to shard.
// expected-error @+1 {{no parameter has an optimizer update: nothing to shard}}
func.func @train_step(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
