// RUN: fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-build-train-step)' | FileCheck %s

// Gradients of the elementwise ops (dialects/nn/gradients/ElementwiseGradients.cpp).
// Each case is one op between the parameters and a summed loss, so the IR
// after the forward ops is the loss seed (1 expanded to the summed shape),
// then the op's gradient rule, then the return of the loss and one gradient
// per parameter marked with nn.grad. Broadcast operands get their gradient
// summed back to their own shape; integer and bool operands get none.

// add with a bias broadcast over the rows: the bias gradient is the seed
// summed over dimension 0 (kept, then reshaped to the bias's rank).
// CHECK-LABEL: module @add_bias_broadcast
// CHECK: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3xf32> {nn.input = "x"},
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<3xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3xf32> {nn.grad = "b"})
// CHECK-NEXT: %[[ADD:[0-9]+]] = nn.add %[[X]], %[[B]]
// CHECK-SAME: : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[ADD]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x3xf32>
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[EXPAND]] {axes = array<i64: 0>}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[REDUCE_SUM_1]]
// CHECK-SAME: : tensor<1x3xf32> to tensor<3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[RESHAPE_1]] : tensor<f32>, tensor<3xf32>
module @add_bias_broadcast {
  func.func @forward(%x: tensor<2x3xf32> {nn.input = "x"}, %b: tensor<3xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.add %x, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// add of two parameters of the same shape: both gradients are the incoming
// gradient itself, no reduction or copy.
// CHECK-LABEL: module @add_same_shape
// CHECK: func.func @train_step(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "a"},
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "a"}, tensor<2x3xf32> {nn.grad = "b"})
// CHECK-NEXT: %[[ADD:[0-9]+]] = nn.add %[[A]], %[[B]]
// CHECK-SAME: : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[ADD]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[EXPAND]], %[[EXPAND]] : tensor<f32>, tensor<2x3xf32>, tensor<2x3xf32>
module @add_same_shape {
  func.func @forward(%a: tensor<2x3xf32> {nn.param = "a"}, %b: tensor<2x3xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// sub with the parameter on the right, broadcast along dimension 1 ([2, 1]
// against [2, 3]): the gradient is summed over dimension 1 with keepdims (the
// shape is already [2, 1], no reshape) and negated.
// CHECK-LABEL: module @sub_rhs_broadcast
// CHECK: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3xf32> {nn.input = "x"},
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x1xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x1xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[SUB:[0-9]+]] = nn.sub %[[X]], %[[W]]
// CHECK-SAME: : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[SUB]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x3xf32>
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[EXPAND]] {axes = array<i64: 1>}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT: %[[NEG:[0-9]+]] = nn.neg %[[REDUCE_SUM_1]]
// CHECK-SAME: : tensor<2x1xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[NEG]] : tensor<f32>, tensor<2x1xf32>
module @sub_rhs_broadcast {
  func.func @forward(%x: tensor<2x3xf32> {nn.input = "x"}, %w: tensor<2x1xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.sub %x, %w : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// mul of a broadcast scale by an input: d(w * x)/dw = grad * x, summed over
// the broadcast rows. The input's gradient (grad * w) is not built.
// CHECK-LABEL: module @mul_scale_broadcast
// CHECK: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3xf32> {nn.input = "x"},
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[W]], %[[X]]
// CHECK-SAME: : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
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
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[MUL_1]] {axes = array<i64: 0>}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[REDUCE_SUM_1]]
// CHECK-SAME: : tensor<1x3xf32> to tensor<3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[RESHAPE_1]] : tensor<f32>, tensor<3xf32>
module @mul_scale_broadcast {
  func.func @forward(%x: tensor<2x3xf32> {nn.input = "x"}, %w: tensor<3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.mul %w, %x : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// div of two parameters: the numerator gets grad / b; the divisor gets
// -grad * (y / b), reusing the forward quotient y.
// CHECK-LABEL: module @div_both
// CHECK: func.func @train_step(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4xf32> {nn.param = "a"},
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<4xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "a"}, tensor<4xf32> {nn.grad = "b"})
// CHECK-NEXT: %[[DIV:[0-9]+]] = nn.div %[[A]], %[[B]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[DIV]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[DIV_1:[0-9]+]] = nn.div %[[EXPAND]], %[[B]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[NEG:[0-9]+]] = nn.neg %[[EXPAND]] : tensor<4xf32>
// CHECK-NEXT: %[[DIV_2:[0-9]+]] = nn.div %[[DIV]], %[[B]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[NEG]], %[[DIV_2]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[DIV_1]], %[[MUL]] : tensor<f32>, tensor<4xf32>, tensor<4xf32>
module @div_both {
  func.func @forward(%a: tensor<4xf32> {nn.param = "a"}, %b: tensor<4xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.div %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// pow with a constant float exponent: the base gets grad * (e * x^(e - 1));
// the exponent is a constant, so no log(x) term survives.
// CHECK-LABEL: module @pow_const_exponent
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<3.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[POW:[0-9]+]] = nn.pow %[[W]], %[[CONSTANT]]
// CHECK-SAME: : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[POW]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT_1:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT_1]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[CONSTANT_2:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[SUB:[0-9]+]] = nn.sub %[[CONSTANT]], %[[CONSTANT_2]]
// CHECK-SAME: : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT: %[[POW_1:[0-9]+]] = nn.pow %[[W]], %[[SUB]]
// CHECK-SAME: : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[CONSTANT]], %[[POW_1]]
// CHECK-SAME: : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[MUL]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[MUL_1]] : tensor<f32>, tensor<4xf32>
module @pow_const_exponent {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %e = nn.constant dense<3.0> : tensor<f32>
    %0 = nn.pow %w, %e : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// pow with an integer exponent input: the exponent is cast to the base's
// element type for the derivative and gets no gradient itself.
// CHECK-LABEL: module @pow_int_exponent
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"},
// CHECK-SAME: %[[E:[a-z0-9]+]]: tensor<i64> {nn.input = "e"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[POW:[0-9]+]] = nn.pow %[[W]], %[[E]]
// CHECK-SAME: : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[POW]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[CAST:[0-9]+]] = nn.cast %[[E]]
// CHECK-SAME: : tensor<i64> to tensor<f32>
// CHECK-NEXT: %[[CONSTANT_1:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[SUB:[0-9]+]] = nn.sub %[[CAST]], %[[CONSTANT_1]]
// CHECK-SAME: : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT: %[[POW_1:[0-9]+]] = nn.pow %[[W]], %[[SUB]]
// CHECK-SAME: : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[CAST]], %[[POW_1]]
// CHECK-SAME: : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[MUL]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[MUL_1]] : tensor<f32>, tensor<4xf32>
module @pow_int_exponent {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}, %e: tensor<i64> {nn.input = "e"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.pow %w, %e : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// pow with a trainable exponent: d(x^e)/de = grad * (y * log(x)), summed to
// the exponent's rank-0 shape.
// CHECK-LABEL: module @pow_param_exponent
// CHECK: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4xf32> {nn.input = "x"},
// CHECK-SAME: %[[E:[a-z0-9]+]]: tensor<f32> {nn.param = "e"}) -> (tensor<f32> {nn.output = "loss"}, tensor<f32> {nn.grad = "e"})
// CHECK-NEXT: %[[POW:[0-9]+]] = nn.pow %[[X]], %[[E]]
// CHECK-SAME: : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[POW]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[LOG:[0-9]+]] = nn.log %[[X]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[POW]], %[[LOG]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[MUL]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[MUL_1]] {axes = array<i64: 0>}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<1xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[REDUCE_SUM_1]]
// CHECK-SAME: : tensor<1xf32> to tensor<f32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[RESHAPE_1]] : tensor<f32>, tensor<f32>
module @pow_param_exponent {
  func.func @forward(%x: tensor<4xf32> {nn.input = "x"}, %e: tensor<f32> {nn.param = "e"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.pow %x, %e : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// where with a bool mask input: the mask is not differentiated; the
// parameter (the `x` branch) gets the gradient where the mask is true and
// zero elsewhere; the constant `y` branch gets nothing.
// CHECK-LABEL: module @where_mask
// CHECK: func.func @train_step(
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2x3xi1> {nn.input = "m"},
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<-1.000000e+09>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[WHERE:[0-9]+]] = nn.where %[[M]], %[[W]], %[[CONSTANT]]
// CHECK-SAME: : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[WHERE]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT_1:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT_1]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x3xf32>
// CHECK-NEXT: %[[CONSTANT_2:[0-9]+]] = nn.constant dense<0.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[WHERE_1:[0-9]+]] = nn.where %[[M]], %[[EXPAND]], %[[CONSTANT_2]]
// CHECK-SAME: : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[WHERE_1]] : tensor<f32>, tensor<2x3xf32>
module @where_mask {
  func.func @forward(%m: tensor<2x3xi1> {nn.input = "m"}, %w: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %y = nn.constant dense<-1.0e9> : tensor<f32>
    %0 = nn.where %m, %w, %y : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// where with the parameter in the `y` branch, broadcast from [3]: zero
// where the mask is true, summed over the rows.
// CHECK-LABEL: module @where_y_broadcast
// CHECK: func.func @train_step(
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2x3xi1> {nn.input = "m"},
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3xf32> {nn.input = "x"},
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[WHERE:[0-9]+]] = nn.where %[[M]], %[[X]], %[[W]]
// CHECK-SAME: : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[WHERE]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x3xf32>
// CHECK-NEXT: %[[CONSTANT_1:[0-9]+]] = nn.constant dense<0.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[WHERE_1:[0-9]+]] = nn.where %[[M]], %[[CONSTANT_1]], %[[EXPAND]]
// CHECK-SAME: : (tensor<2x3xi1>, tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[WHERE_1]] {axes = array<i64: 0>}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[REDUCE_SUM_1]]
// CHECK-SAME: : tensor<1x3xf32> to tensor<3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[RESHAPE_1]] : tensor<f32>, tensor<3xf32>
module @where_y_broadcast {
  func.func @forward(%m: tensor<2x3xi1> {nn.input = "m"}, %x: tensor<2x3xf32> {nn.input = "x"}, %w: tensor<3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.where %m, %x, %w : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// neg: the gradient is negated.
// CHECK-LABEL: module @neg
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[NEG:[0-9]+]] = nn.neg %[[W]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[NEG]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[NEG_1:[0-9]+]] = nn.neg %[[EXPAND]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[NEG_1]] : tensor<f32>, tensor<4xf32>
module @neg {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.neg %w : tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// relu: one relu_grad reading the forward result.
// CHECK-LABEL: module @relu
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[RELU:[0-9]+]] = nn.relu %[[W]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[RELU]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[RELU_GRAD:[0-9]+]] = nn.relu_grad %[[RELU]], %[[EXPAND]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[RELU_GRAD]] : tensor<f32>, tensor<4xf32>
module @relu {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.relu %w : tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// exp: grad * y, reusing the forward result.
// CHECK-LABEL: module @exp
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[EXP:[0-9]+]] = nn.exp %[[W]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[EXP]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[EXPAND]], %[[EXP]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[MUL]] : tensor<f32>, tensor<4xf32>
module @exp {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.exp %w : tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// log: grad / x.
// CHECK-LABEL: module @log
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[LOG:[0-9]+]] = nn.log %[[W]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[LOG]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[DIV:[0-9]+]] = nn.div %[[EXPAND]], %[[W]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[DIV]] : tensor<f32>, tensor<4xf32>
module @log {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.log %w : tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// sqrt: grad / (2 * y), in torch's operation order (y * 2 first).
// CHECK-LABEL: module @sqrt
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[SQRT:[0-9]+]] = nn.sqrt %[[W]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[SQRT]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[CONSTANT_1:[0-9]+]] = nn.constant dense<2.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[SQRT]], %[[CONSTANT_1]]
// CHECK-SAME: : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT: %[[DIV:[0-9]+]] = nn.div %[[EXPAND]], %[[MUL]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[DIV]] : tensor<f32>, tensor<4xf32>
module @sqrt {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.sqrt %w : tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// erf: one erf_grad reading the forward input (not the result).
// CHECK-LABEL: module @erf
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[ERF:[0-9]+]] = nn.erf %[[W]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[ERF]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[ERF_GRAD:[0-9]+]] = nn.erf_grad %[[W]], %[[EXPAND]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[ERF_GRAD]] : tensor<f32>, tensor<4xf32>
module @erf {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.erf %w : tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// tanh: one tanh_grad reading the forward result.
// CHECK-LABEL: module @tanh
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[TANH:[0-9]+]] = nn.tanh %[[W]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[TANH]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[TANH_GRAD:[0-9]+]] = nn.tanh_grad %[[TANH]], %[[EXPAND]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[TANH_GRAD]] : tensor<f32>, tensor<4xf32>
module @tanh {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.tanh %w : tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// sigmoid: one sigmoid_grad reading the forward result.
// CHECK-LABEL: module @sigmoid
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[SIGMOID:[0-9]+]] = nn.sigmoid %[[W]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[SIGMOID]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[SIGMOID_GRAD:[0-9]+]] = nn.sigmoid_grad %[[SIGMOID]], %[[EXPAND]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[SIGMOID_GRAD]] : tensor<f32>, tensor<4xf32>
module @sigmoid {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.sigmoid %w : tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// cast from f32 to bf16 (a mixed-precision compute copy): the gradient is
// cast back to the parameter's f32.
// CHECK-LABEL: module @cast_f32_bf16
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"}) -> (tensor<bf16> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[CAST:[0-9]+]] = nn.cast %[[W]]
// CHECK-SAME: : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[CAST]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xbf16>) -> tensor<bf16>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<bf16>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<bf16> to tensor<1xbf16>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xbf16> to tensor<4xbf16>
// CHECK-NEXT: %[[CAST_1:[0-9]+]] = nn.cast %[[EXPAND]]
// CHECK-SAME: : tensor<4xbf16> to tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[CAST_1]] : tensor<bf16>, tensor<4xf32>
module @cast_f32_bf16 {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<bf16> {nn.output = "loss"}) {
    %0 = nn.cast %w : tensor<4xf32> to tensor<4xbf16>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xbf16>) -> tensor<bf16>
    return %1 : tensor<bf16>
  }
}

// -----

// A float-to-int cast stops the gradient: only the path through the float
// multiplication reaches the parameter.
// CHECK-LABEL: module @cast_to_int_blocks
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[CAST:[0-9]+]] = nn.cast %[[W]]
// CHECK-SAME: : tensor<4xf32> to tensor<4xi32>
// CHECK-NEXT: %[[CAST_1:[0-9]+]] = nn.cast %[[CAST]]
// CHECK-SAME: : tensor<4xi32> to tensor<4xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[CAST_1]], %[[W]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[CAST_1]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[MUL_1]] : tensor<f32>, tensor<4xf32>
module @cast_to_int_blocks {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.cast %w : tensor<4xf32> to tensor<4xi32>
    %1 = nn.cast %0 : tensor<4xi32> to tensor<4xf32>
    %2 = nn.mul %1, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %3 = nn.reduce_sum %2 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}
