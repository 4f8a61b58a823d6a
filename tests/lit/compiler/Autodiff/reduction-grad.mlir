// RUN: fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-build-train-step)' | FileCheck %s

// Gradients of the reductions (dialects/nn/gradients/ReductionGradients.cpp):
// sum and mean spread the gradient back over the reduced dimensions (mean
// divides first, on the small tensor); max routes it through one
// reduce_max_grad with the output and gradient in kept-dims form.

// reduce_sum over one axis without keepdims, then a weighted sum: the
// gradient [2] is reshaped to the kept-dims [2, 1] and expanded to [2, 3].
// CHECK-LABEL: module @reduce_sum_axis
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "w"},
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[W]] {axes = array<i64: 1>, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[REDUCE_SUM]], %[[X]]
// CHECK-SAME: : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<2xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[X]]
// CHECK-SAME: : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[MUL_1]]
// CHECK-SAME: : tensor<2xf32> to tensor<2x1xf32>
// CHECK-NEXT: %[[EXPAND_1:[0-9]+]] = nn.expand %[[RESHAPE_1]]
// CHECK-SAME: : tensor<2x1xf32> to tensor<2x3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM_1]], %[[EXPAND_1]] : tensor<f32>, tensor<2x3xf32>
module @reduce_sum_axis {
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}, %x: tensor<2xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
    %1 = nn.mul %0, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = nn.reduce_sum %1 {axes = array<i64: 0>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// reduce_sum with keepdims: the gradient already has the kept-dims shape,
// so it is only expanded.
// CHECK-LABEL: module @reduce_sum_keepdims
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "w"},
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<1x3xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[W]] {axes = array<i64: 0>}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[REDUCE_SUM]], %[[X]]
// CHECK-SAME: : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<1x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<1x3xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[X]]
// CHECK-SAME: : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: %[[EXPAND_1:[0-9]+]] = nn.expand %[[MUL_1]]
// CHECK-SAME: : tensor<1x3xf32> to tensor<2x3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM_1]], %[[EXPAND_1]] : tensor<f32>, tensor<2x3xf32>
module @reduce_sum_keepdims {
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}, %x: tensor<1x3xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<1x3xf32>
    %1 = nn.mul %0, %x : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
    %2 = nn.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<1x3xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// reduce_mean as the loss itself: the seed is divided by the count (6) on
// the small kept-dims tensor, then expanded.
// CHECK-LABEL: module @reduce_mean
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[REDUCE_MEAN:[0-9]+]] = nn.reduce_mean %[[W]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]] : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[CONSTANT_1:[0-9]+]] = nn.constant dense<6.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[DIV:[0-9]+]] = nn.div %[[RESHAPE]], %[[CONSTANT_1]]
// CHECK-SAME: : (tensor<1x1xf32>, tensor<f32>) -> tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[DIV]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x3xf32>
// CHECK-NEXT: return %[[REDUCE_MEAN]], %[[EXPAND]] : tensor<f32>, tensor<2x3xf32>
module @reduce_mean {
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reduce_mean %w {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// reduce_max over axis 1: reduce_max_grad reads the input, the forward
// output and the gradient, the latter two reshaped to the kept dims [2, 1].
// CHECK-LABEL: module @reduce_max
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[REDUCE_MAX:[0-9]+]] = nn.reduce_max %[[W]] {axes = array<i64: 1>, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[REDUCE_MAX]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<2xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[REDUCE_MAX]]
// CHECK-SAME: : tensor<2xf32> to tensor<2x1xf32>
// CHECK-NEXT: %[[RESHAPE_2:[0-9]+]] = nn.reshape %[[EXPAND]]
// CHECK-SAME: : tensor<2xf32> to tensor<2x1xf32>
// CHECK-NEXT: %[[REDUCE_MAX_GRAD:[0-9]+]] = nn.reduce_max_grad %[[W]], %[[RESHAPE_1]], %[[RESHAPE_2]] {axes = array<i64: 1>}
// CHECK-SAME: : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[REDUCE_MAX_GRAD]] : tensor<f32>, tensor<2x3xf32>
module @reduce_max {
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reduce_max %w {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}
