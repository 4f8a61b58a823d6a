// RUN: fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-build-train-step)' | FileCheck %s

// Gradients of softmax, log_softmax and layer_norm
// (dialects/nn/gradients/NormalizationGradients.cpp): each is one fused
// gradient op reading the forward result (softmax) or the saved statistics
// (layer_norm), so the backward pass recomputes no forward reduction.

// softmax: one softmax_grad on the forward result, same axis.
// CHECK-LABEL: module @softmax
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "w"},
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[SOFTMAX:[0-9]+]] = nn.softmax %[[W]] {axis = 1 : i64}
// CHECK-SAME: : tensor<2x3xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[SOFTMAX]], %[[X]]
// CHECK-SAME: : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x3xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[X]]
// CHECK-SAME: : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[SOFTMAX_GRAD:[0-9]+]] = nn.softmax_grad %[[SOFTMAX]], %[[MUL_1]] {axis = 1 : i64}
// CHECK-SAME: : tensor<2x3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[SOFTMAX_GRAD]] : tensor<f32>, tensor<2x3xf32>
module @softmax {
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}, %x: tensor<2x3xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.softmax %w {axis = 1 : i64} : tensor<2x3xf32>
    %1 = nn.mul %0, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = nn.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// log_softmax over axis 0: one log_softmax_grad on the forward result.
// CHECK-LABEL: module @log_softmax
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "w"},
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[LOG_SOFTMAX:[0-9]+]] = nn.log_softmax %[[W]] {axis = 0 : i64}
// CHECK-SAME: : tensor<2x3xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[LOG_SOFTMAX]], %[[X]]
// CHECK-SAME: : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x3xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[X]]
// CHECK-SAME: : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[LOG_SOFTMAX_GRAD:[0-9]+]] = nn.log_softmax_grad %[[LOG_SOFTMAX]], %[[MUL_1]] {axis = 0 : i64}
// CHECK-SAME: : tensor<2x3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[LOG_SOFTMAX_GRAD]] : tensor<f32>, tensor<2x3xf32>
module @log_softmax {
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}, %x: tensor<2x3xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.log_softmax %w {axis = 0 : i64} : tensor<2x3xf32>
    %1 = nn.mul %0, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = nn.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// layer_norm with scale and bias over the last axis: one layer_norm_grad
// reading the input, scale and both saved statistics; its three results
// are the input, scale and bias gradients, already of the parameters'
// shapes (no reduction after it).
// CHECK-LABEL: module @layer_norm_bias
// CHECK: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4x8xf32> {nn.param = "x"},
// CHECK-SAME: %[[LN_WEIGHT:[a-z0-9]+]]: tensor<8xf32> {nn.param = "ln.weight"},
// CHECK-SAME: %[[LN_BIAS:[a-z0-9]+]]: tensor<8xf32> {nn.param = "ln.bias"},
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<2x4x8xf32> {nn.input = "t"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x4x8xf32> {nn.grad = "x"}, tensor<8xf32> {nn.grad = "ln.weight"}, tensor<8xf32> {nn.grad = "ln.bias"})
// CHECK-NEXT: %[[RESULT:[a-z_0-9]+]], %[[MEAN:[a-z_0-9]+]], %[[INV_STD_DEV:[a-z_0-9]+]] = nn.layer_norm %[[X]], %[[LN_WEIGHT]], %[[LN_BIAS]] {axis = 2 : i64, epsilon = 9.99999974E-6 : f32}
// CHECK-SAME: : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[RESULT]], %[[T]]
// CHECK-SAME: : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0, 1, 2>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x4x8xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1x1xf32> to tensor<2x4x8xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[T]]
// CHECK-SAME: : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[INPUT_GRAD:[a-z_0-9]+]], %[[SCALE_GRAD:[a-z_0-9]+]], %[[BIAS_GRAD:[a-z_0-9]+]] = nn.layer_norm_grad %[[X]], %[[LN_WEIGHT]], %[[MEAN]], %[[INV_STD_DEV]], %[[MUL_1]] {axis = 2 : i64}
// CHECK-SAME: : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[INPUT_GRAD]], %[[SCALE_GRAD]], %[[BIAS_GRAD]] : tensor<f32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
module @layer_norm_bias {
  func.func @forward(%x: tensor<2x4x8xf32> {nn.param = "x"}, %s: tensor<8xf32> {nn.param = "ln.weight"}, %b: tensor<8xf32> {nn.param = "ln.bias"}, %t: tensor<2x4x8xf32> {nn.input = "t"}) -> (tensor<f32> {nn.output = "loss"}) {
    %y, %mean, %inv = nn.layer_norm %x, %s, %b {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
    %0 = nn.mul %y, %t : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// layer_norm without bias: the op still has a bias_grad result, which
// nothing returns.
// CHECK-LABEL: module @layer_norm_no_bias
// CHECK: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32> {nn.input = "x"},
// CHECK-SAME: %[[LN_WEIGHT:[a-z0-9]+]]: tensor<8xf32> {nn.param = "ln.weight"},
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<4x8xf32> {nn.input = "t"}) -> (tensor<f32> {nn.output = "loss"}, tensor<8xf32> {nn.grad = "ln.weight"})
// CHECK-NEXT: %[[RESULT:[a-z_0-9]+]], %[[MEAN:[a-z_0-9]+]], %[[INV_STD_DEV:[a-z_0-9]+]] = nn.layer_norm %[[X]], %[[LN_WEIGHT]] {axis = 1 : i64, epsilon = 9.99999974E-6 : f32}
// CHECK-SAME: : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[RESULT]], %[[T]]
// CHECK-SAME: : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4x8xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<4x8xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[T]]
// CHECK-SAME: : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[INPUT_GRAD:[a-z_0-9]+]], %[[SCALE_GRAD:[a-z_0-9]+]], %[[BIAS_GRAD:[a-z_0-9]+]] = nn.layer_norm_grad %[[X]], %[[LN_WEIGHT]], %[[MEAN]], %[[INV_STD_DEV]], %[[MUL_1]] {axis = 1 : i64}
// CHECK-SAME: : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[SCALE_GRAD]] : tensor<f32>, tensor<8xf32>
module @layer_norm_no_bias {
  func.func @forward(%x: tensor<4x8xf32> {nn.input = "x"}, %s: tensor<8xf32> {nn.param = "ln.weight"}, %t: tensor<4x8xf32> {nn.input = "t"}) -> (tensor<f32> {nn.output = "loss"}) {
    %y, %mean, %inv = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
    %0 = nn.mul %y, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// layer_norm over two axes with a scale that broadcasts onto them ([1, 8]
// against the normalized [4, 8]): the scale is expanded for the gradient op
// and its gradient summed back to [1, 8].
// CHECK-LABEL: module @layer_norm_broadcast_scale
// CHECK: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4x8xf32> {nn.input = "x"},
// CHECK-SAME: %[[LN_WEIGHT:[a-z0-9]+]]: tensor<1x8xf32> {nn.param = "ln.weight"},
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<2x4x8xf32> {nn.input = "t"}) -> (tensor<f32> {nn.output = "loss"}, tensor<1x8xf32> {nn.grad = "ln.weight"})
// CHECK-NEXT: %[[RESULT:[a-z_0-9]+]], %[[MEAN:[a-z_0-9]+]], %[[INV_STD_DEV:[a-z_0-9]+]] = nn.layer_norm %[[X]], %[[LN_WEIGHT]] {axis = 1 : i64, epsilon = 9.99999974E-6 : f32}
// CHECK-SAME: : (tensor<2x4x8xf32>, tensor<1x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[RESULT]], %[[T]]
// CHECK-SAME: : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0, 1, 2>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x4x8xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1x1xf32> to tensor<2x4x8xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[T]]
// CHECK-SAME: : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[EXPAND_1:[0-9]+]] = nn.expand %[[LN_WEIGHT]]
// CHECK-SAME: : tensor<1x8xf32> to tensor<4x8xf32>
// CHECK-NEXT: %[[INPUT_GRAD:[a-z_0-9]+]], %[[SCALE_GRAD:[a-z_0-9]+]], %[[BIAS_GRAD:[a-z_0-9]+]] = nn.layer_norm_grad %[[X]], %[[EXPAND_1]], %[[MEAN]], %[[INV_STD_DEV]], %[[MUL_1]] {axis = 1 : i64}
// CHECK-SAME: : (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[SCALE_GRAD]] {axes = array<i64: 0>}
// CHECK-SAME: : (tensor<4x8xf32>) -> tensor<1x8xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[REDUCE_SUM_1]] : tensor<f32>, tensor<1x8xf32>
module @layer_norm_broadcast_scale {
  func.func @forward(%x: tensor<2x4x8xf32> {nn.input = "x"}, %s: tensor<1x8xf32> {nn.param = "ln.weight"}, %t: tensor<2x4x8xf32> {nn.input = "t"}) -> (tensor<f32> {nn.output = "loss"}) {
    %y, %mean, %inv = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x4x8xf32>, tensor<1x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
    %0 = nn.mul %y, %t : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}
