// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-build-train-step{loss-scale=true})' | FileCheck %s

// fsdp-build-train-step{loss-scale=true} (compiler/Autodiff/BuildTrainStep.cpp,
// fp16 dynamic loss scaling): the backward pass starts from a new f32
// argument marked nn.loss_scale instead of the constant 1, so every
// gradient is the scale times the unscaled one (torch's backward of
// loss * scale), cast to the loss's dtype; a function that already takes a
// loss scale is refused.

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

// torch's loss * scale is f32 and autograd hands an f16 loss the scale
// rounded to f16: the seed is the f32 scale argument cast to the loss's
// dtype (inf for 65536, which skips the step as torch's first f16 step is).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[SCALE16:[a-z0-9]+]]: tensor<f32> {nn.loss_scale}
// CHECK: nn.cast %[[SCALE16]] : tensor<f32> to tensor<f16>
module {
  func.func @forward(%w: tensor<4xf16> {nn.param = "w"}) -> (tensor<f16> {nn.output = "loss"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf16>) -> tensor<f16>
    return %0 : tensor<f16>
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
