// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-unscale-gradients)'

// One case per error of compiler/Transforms/UnscaleGradients.cpp.

// expected-error @+1 {{no @train_step to unscale (run the train stage first)}}
module {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> tensor<4xf32> {
    return %w : tensor<4xf32>
  }
}

// -----

// A declaration has no body to unscale in.
// expected-error @+1 {{gradient unscaling needs a single-block @train_step}}
func.func private @train_step(tensor<4xf32>) -> tensor<f32>

// -----

// The backward pass was not seeded with a loss scale.
// expected-error @+1 {{@train_step has no loss-scale argument (build it with fsdp-build-train-step{loss-scale=true})}}
func.func @train_step(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Running the pass twice would unscale twice.
// expected-error @+1 {{@train_step's gradients are already unscaled}}
func.func @train_step(%w: tensor<4xf32> {nn.param = "w"}, %s: tensor<f32> {nn.loss_scale}, %i: tensor<f32> {nn.inv_loss_scale}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// No optimizer update: nothing to unscale or skip.
// expected-error @+1 {{@train_step has no optimizer update to unscale the gradients of}}
func.func @train_step(%w: tensor<4xf32> {nn.param = "w"}, %s: tensor<f32> {nn.loss_scale}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
