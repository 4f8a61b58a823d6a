// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-accumulate-micro-batches{micro-batches=2 reduce=each})'
// RUN: not fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-accumulate-micro-batches{micro-batches=0})' 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-accumulate-micro-batches{micro-batches=2 reduce=sometimes})' 2>&1 | FileCheck %s --check-prefix=REDUCE

// One case per error of compiler/Transforms/AccumulateMicroBatches.cpp.
// ZERO: error: micro-batches must be >= 1, not 0
// REDUCE: error: reduce must be each or last, not 'sometimes'

// expected-error @+1 {{no @train_step to accumulate (run the train stage first)}}
module {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> tensor<4xf32> {
    return %w : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{gradient accumulation needs optimizer updates (nn.adamw, nn.sgd) in @train_step}}
func.func @train_step(%x: tensor<2xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A scalar input has no rows to split.
// expected-error @+1 {{input 'x' has no batch dimension to split into micro-batches}}
func.func @train_step(%x: tensor<f32> {nn.input = "x"}, %w: tensor<4xf32> {nn.param = "w"}, %lr: tensor<f64> {nn.lr}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.update = "w"}) {
  %0 = nn.mul %w, %x : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %2 = nn.sgd %w, %0, %lr {momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return %1, %2 : tensor<f32>, tensor<4xf32>
}

// -----

// Accumulating twice would square K.
module attributes {fsdp.grad_accum = 2 : i64} {
  // expected-error @+1 {{@train_step already accumulates micro-batches}}
  func.func @train_step(%x: tensor<2xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// No loss to average over the micro-batches.
// expected-error @+1 {{the step returns no loss}}
func.func @train_step(%x: tensor<4xf32> {nn.input = "x"}, %w: tensor<4xf32> {nn.param = "w"}, %lr: tensor<f64> {nn.lr}) {
  %0 = nn.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = nn.sgd %w, %0, %lr {momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return
}

// -----

// Nothing the loss or the gradient reads depends on the batch.
// expected-error @+1 {{the step's loss and gradients depend on no batch computation}}
func.func @train_step(%x: tensor<4xf32> {nn.input = "x"}, %w: tensor<4xf32> {nn.param = "w"}, %lr: tensor<f64> {nn.lr}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.update = "w"}) {
  %0 = nn.constant dense<1.5> : tensor<f32>
  %1 = nn.sgd %w, %w, %lr {momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return %0, %1 : tensor<f32>, tensor<4xf32>
}
