// RUN: fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-build-train-step)' | FileCheck %s
// RUN: fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-build-train-step{freeze=^frozen\.})' | FileCheck %s --check-prefix=FREEZE

// Dropout's gradient (dialects/nn/gradients/MiscGradients.cpp) and the
// autodiff driver's own behaviour (compiler/Autodiff/BuildTrainStep.cpp):
// accumulation of a value used several times, parameters the loss does not
// depend on, integer parameters, and --freeze.

// Training dropout: dropout_grad routes the gradient through the mask the
// forward op drew, with the forward ratio.
// CHECK-LABEL: module @dropout_training
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[RESULT:[a-z_0-9]+]], %[[MASK:[a-z_0-9]+]] = nn.dropout %[[W]] {ratio = 2.500000e-01 : f32, seed = 7 : i64, training = true}
// CHECK-SAME: : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[RESULT]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x3xf32>
// CHECK-NEXT: %[[DROPOUT_GRAD:[0-9]+]] = nn.dropout_grad %[[EXPAND]], %[[MASK]] {ratio = 2.500000e-01 : f32}
// CHECK-SAME: : tensor<2x3xf32>, tensor<2x3xi1>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[DROPOUT_GRAD]] : tensor<f32>, tensor<2x3xf32>
module @dropout_training {
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0, %mask = nn.dropout %w {ratio = 0.25 : f32, training = true, seed = 7 : i64} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// Inference dropout is the identity: the gradient passes unchanged and no
// dropout_grad is built.
// CHECK-LABEL: module @dropout_inference
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[RESULT:[a-z_0-9]+]], %[[MASK:[a-z_0-9]+]] = nn.dropout %[[W]] {ratio = 2.500000e-01 : f32, training = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[RESULT]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[EXPAND]] : tensor<f32>, tensor<2x3xf32>
module @dropout_inference {
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0, %mask = nn.dropout %w {ratio = 0.25 : f32, training = false} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// Training dropout with ratio 0 is also the identity.
// CHECK-LABEL: module @dropout_ratio_zero
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[RESULT:[a-z_0-9]+]], %[[MASK:[a-z_0-9]+]] = nn.dropout %[[W]] {ratio = 0.000000e+00 : f32, training = true}
// CHECK-SAME: : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[RESULT]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[EXPAND]] : tensor<f32>, tensor<2x3xf32>
module @dropout_ratio_zero {
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0, %mask = nn.dropout %w {ratio = 0.0 : f32, training = true} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// A parameter used twice (w * w): the contributions of both operands of the
// product are accumulated with one nn.add.
// CHECK-LABEL: module @used_twice
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[W]], %[[W]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[W]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[MUL_2:[0-9]+]] = nn.mul %[[EXPAND]], %[[W]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[ADD:[0-9]+]] = nn.add %[[MUL_1]], %[[MUL_2]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[ADD]] : tensor<f32>, tensor<4xf32>
module @used_twice {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.mul %w, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// A residual stream (h = x + tanh(x) with x = w * s): the gradient of x is
// the sum of the skip path and the tanh path, in reverse use order (the
// add's own contribution first).
// CHECK-LABEL: module @residual
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"},
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<4xf32> {nn.input = "s"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[W]], %[[S]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[TANH:[0-9]+]] = nn.tanh %[[MUL]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: %[[ADD:[0-9]+]] = nn.add %[[MUL]], %[[TANH]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[ADD]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[TANH_GRAD:[0-9]+]] = nn.tanh_grad %[[TANH]], %[[EXPAND]]
// CHECK-SAME: : tensor<4xf32>
// CHECK-NEXT: %[[ADD_1:[0-9]+]] = nn.add %[[EXPAND]], %[[TANH_GRAD]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[ADD_1]], %[[S]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[MUL_1]] : tensor<f32>, tensor<4xf32>
module @residual {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}, %s: tensor<4xf32> {nn.input = "s"}) -> (tensor<f32> {nn.output = "loss"}) {
    %x = nn.mul %w, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %0 = nn.tanh %x : tensor<4xf32>
    %1 = nn.add %x, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %2 = nn.reduce_sum %1 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// A parameter the loss does not use and an integer parameter get no
// gradient result (as torch leaves grad None) and no nn.grad entry.
// CHECK-LABEL: module @unused_and_int_params
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "w"},
// CHECK-SAME: %[[UNUSED:[a-z0-9]+]]: tensor<4xf32> {nn.param = "unused"},
// CHECK-SAME: %[[COUNT:[a-z0-9]+]]: tensor<4xi64> {nn.param = "count"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[CAST:[0-9]+]] = nn.cast %[[COUNT]]
// CHECK-SAME: : tensor<4xi64> to tensor<4xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[W]], %[[CAST]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[CAST]]
// CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[MUL_1]] : tensor<f32>, tensor<4xf32>
module @unused_and_int_params {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}, %u: tensor<4xf32> {nn.param = "unused"}, %n: tensor<4xi64> {nn.param = "count"}) -> (tensor<f32> {nn.output = "loss"}) {
    %c = nn.cast %n : tensor<4xi64> to tensor<4xf32>
    %0 = nn.mul %w, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// --freeze: parameters whose names match the regex are not trained, so
// nothing is differentiated on their behalf (no gradient of the frozen
// embedding, no gather_grad). Without --freeze both get gradients.
// CHECK-LABEL: module @freeze
// CHECK: func.func @train_step(
// CHECK-SAME: %[[FROZEN_WTE:[a-z0-9]+]]: tensor<10x4xf32> {nn.param = "frozen.wte"},
// CHECK-SAME: %[[HEAD_W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "head.w"},
// CHECK-SAME: %[[IDS:[a-z0-9]+]]: tensor<3xi64> {nn.input = "ids"}) -> (tensor<f32> {nn.output = "loss"}, tensor<10x4xf32> {nn.grad = "frozen.wte"}, tensor<4xf32> {nn.grad = "head.w"})
// CHECK-NEXT: %[[GATHER:[0-9]+]] = nn.gather %[[FROZEN_WTE]], %[[IDS]] {axis = 0 : i64}
// CHECK-SAME: : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[GATHER]], %[[HEAD_W]]
// CHECK-SAME: : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<3x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<3x4xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[HEAD_W]]
// CHECK-SAME: : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[MUL_2:[0-9]+]] = nn.mul %[[EXPAND]], %[[GATHER]]
// CHECK-SAME: : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[MUL_2]] {axes = array<i64: 0>}
// CHECK-SAME: : (tensor<3x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[REDUCE_SUM_1]]
// CHECK-SAME: : tensor<1x4xf32> to tensor<4xf32>
// CHECK-NEXT: %[[GATHER_GRAD:[0-9]+]] = nn.gather_grad %[[IDS]], %[[MUL_1]] {axis = 0 : i64}
// CHECK-SAME: : (tensor<3xi64>, tensor<3x4xf32>) -> tensor<10x4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[GATHER_GRAD]], %[[RESHAPE_1]] : tensor<f32>, tensor<10x4xf32>, tensor<4xf32>
// FREEZE-LABEL: module @freeze
// FREEZE: func.func @train_step(
// FREEZE-SAME: %[[FROZEN_WTE:[a-z0-9]+]]: tensor<10x4xf32> {nn.param = "frozen.wte"},
// FREEZE-SAME: %[[HEAD_W:[a-z0-9]+]]: tensor<4xf32> {nn.param = "head.w"},
// FREEZE-SAME: %[[IDS:[a-z0-9]+]]: tensor<3xi64> {nn.input = "ids"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.grad = "head.w"})
// FREEZE-NEXT: %[[GATHER:[0-9]+]] = nn.gather %[[FROZEN_WTE]], %[[IDS]] {axis = 0 : i64}
// FREEZE-SAME: : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
// FREEZE-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[GATHER]], %[[HEAD_W]]
// FREEZE-SAME: : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
// FREEZE-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// FREEZE-SAME: : (tensor<3x4xf32>) -> tensor<f32>
// FREEZE-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// FREEZE-SAME: : tensor<f32>
// FREEZE-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// FREEZE-SAME: : tensor<f32> to tensor<1x1xf32>
// FREEZE-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// FREEZE-SAME: : tensor<1x1xf32> to tensor<3x4xf32>
// FREEZE-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[GATHER]]
// FREEZE-SAME: : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// FREEZE-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[MUL_1]] {axes = array<i64: 0>}
// FREEZE-SAME: : (tensor<3x4xf32>) -> tensor<1x4xf32>
// FREEZE-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[REDUCE_SUM_1]]
// FREEZE-SAME: : tensor<1x4xf32> to tensor<4xf32>
// FREEZE-NEXT: return %[[REDUCE_SUM]], %[[RESHAPE_1]] : tensor<f32>, tensor<4xf32>
module @freeze {
  func.func @forward(%wte: tensor<10x4xf32> {nn.param = "frozen.wte"}, %w: tensor<4xf32> {nn.param = "head.w"}, %ids: tensor<3xi64> {nn.input = "ids"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.gather %wte, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
    %1 = nn.mul %0, %w : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %2 = nn.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x4xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
