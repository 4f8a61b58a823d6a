// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-build-train-step{loss-scale=true})' | FileCheck %s

// fsdp-build-train-step{loss-scale=true} (compiler/Autodiff/BuildTrainStep.cpp,
// fp16 dynamic loss scaling): the backward pass starts from a new f32
// argument marked nn.loss_scale instead of the constant 1, so every
// gradient is the scale times the unscaled one (torch's backward of
// loss * scale); an f64 loss, or a function that already takes a loss
// scale, is refused.

// The seed is the argument: the gradient of w is the scale broadcast.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"},
// CHECK-SAME: %[[SCALE:[a-z0-9]+]]: tensor<f32> {nn.loss_scale})
// CHECK: %[[LOSS:[0-9]+]] = nn.reduce_sum %[[W]]
// CHECK-NOT: nn.constant
// CHECK: %[[SEED:[0-9]+]] = nn.reshape %[[SCALE]] : tensor<f32> to tensor<1xf32>
// CHECK: %[[GRAD:[0-9]+]] = nn.expand %[[SEED]]
// CHECK: return %[[LOSS]], %[[GRAD]]
func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// The scale is an f32 seed: an f64 loss would need another.
module {
  // expected-error @+1 {{loss scaling needs an f32 loss, not 'f64'}}
  func.func @forward(%w: tensor<4xf64> {nn.param = "w"}) -> (tensor<f64> {nn.output = "loss"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf64>) -> tensor<f64>
    return %0 : tensor<f64>
  }
}

// -----

module {
  // expected-error @+1 {{@forward already has a loss-scale argument}}
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}, %s: tensor<f32> {nn.loss_scale}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}
