// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-clip-gradients{max-norm=1.0})'
// RUN: not fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-clip-gradients{norm-type=3})' 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-clip-gradients{max-norm=-1.0})' 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// One case per error of compiler/Transforms/ClipGradients.cpp.
// TYPE: error: norm-type must be 2 or inf, not '3'
// NEGATIVE: error: clip max-norm must be > 0 (0: only compute the norm), not -1

// expected-error @+1 {{no @train_step to clip (run the train stage first)}}
module {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> tensor<4xf32> {
    return %w : tensor<4xf32>
  }
}

// -----

// Everything frozen: no update to clip.
// expected-error @+1 {{no optimizer update to clip (run fsdp-apply-optimizer)}}
func.func @train_step(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Clipping twice would scale twice.
// expected-error @+1 {{@train_step already outputs grad_norm}}
func.func @train_step(%w: tensor<4xf32> {nn.param = "w"}, %lr: tensor<f64> {nn.lr}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.update = "w"}, tensor<f32> {nn.output = "grad_norm"}) {
  %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %1 = nn.sgd %w, %w, %lr {momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return %0, %1, %0 : tensor<f32>, tensor<4xf32>, tensor<f32>
}

// -----

// The norm needs every gradient before the first update reads one.
func.func @train_step(%w: tensor<4xf32> {nn.param = "w"}, %v: tensor<4xf32> {nn.param = "v"}, %lr: tensor<f64> {nn.lr}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.update = "w"}, tensor<4xf32> {nn.update = "v"}) {
  %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %1 = nn.sgd %w, %w, %lr {momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  %2 = nn.neg %v : tensor<4xf32>
  // expected-error @+1 {{'nn.sgd' op its gradient is computed after the first optimizer update; gradient clipping needs every gradient before any update}}
  %3 = nn.sgd %v, %2, %lr {momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return %0, %1, %3 : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}
