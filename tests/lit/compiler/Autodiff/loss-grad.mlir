// RUN: fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-build-train-step)' | FileCheck %s

// Gradients of the classification losses (dialects/nn/gradients/LossGradients.cpp):
// only the scores are differentiated (labels are integers, class weights
// constants of the loss); each loss has one fused gradient op that carries
// the forward op's reduction and ignore_index.

// softmax_cross_entropy with mean reduction on trainable logits: one
// softmax_cross_entropy_grad from the loss seed, the forward log_prob and
// the labels.
// CHECK-LABEL: module @sce_mean
// CHECK: func.func @train_step(
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<4x5xf32> {nn.param = "s"},
// CHECK-SAME: %[[LABELS:[a-z0-9]+]]: tensor<4xi64> {nn.input = "labels"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4x5xf32> {nn.grad = "s"})
// CHECK-NEXT: %[[LOSS:[a-z_0-9]+]], %[[LOG_PROB:[a-z_0-9]+]] = nn.softmax_cross_entropy %[[S]], %[[LABELS]] {fsdp.eval_loss, reduction = "mean"}
// CHECK-SAME: : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[SOFTMAX_CROSS_ENTROPY_GRAD:[0-9]+]] = nn.softmax_cross_entropy_grad %[[CONSTANT]], %[[LOG_PROB]], %[[LABELS]] {reduction = "mean"}
// CHECK-SAME: : (tensor<f32>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x5xf32>
// CHECK-NEXT: return %[[LOSS]], %[[SOFTMAX_CROSS_ENTROPY_GRAD]] : tensor<f32>, tensor<4x5xf32>
module @sce_mean {
  func.func @forward(%s: tensor<4x5xf32> {nn.param = "s"}, %l: tensor<4xi64> {nn.input = "labels"}) -> (tensor<f32> {nn.output = "loss"}) {
    %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
    return %loss : tensor<f32>
  }
}

// -----

// With class weights, ignore_index and sum reduction: the weights (a
// constant of the loss) and both attributes reach the gradient op.
// CHECK-LABEL: module @sce_weights_ignore
// CHECK: func.func @train_step(
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<4x5xf32> {nn.param = "s"},
// CHECK-SAME: %[[LABELS:[a-z0-9]+]]: tensor<4xi32> {nn.input = "labels"},
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<5xf32> {nn.input = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4x5xf32> {nn.grad = "s"})
// CHECK-NEXT: %[[LOSS:[a-z_0-9]+]], %[[LOG_PROB:[a-z_0-9]+]] = nn.softmax_cross_entropy %[[S]], %[[LABELS]], %[[W]] {fsdp.eval_loss, ignore_index = -100 : i64, reduction = "sum"}
// CHECK-SAME: : (tensor<4x5xf32>, tensor<4xi32>, tensor<5xf32>) -> (tensor<f32>, tensor<4x5xf32>)
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[SOFTMAX_CROSS_ENTROPY_GRAD:[0-9]+]] = nn.softmax_cross_entropy_grad %[[CONSTANT]], %[[LOG_PROB]], %[[LABELS]], %[[W]] {ignore_index = -100 : i64, reduction = "sum"}
// CHECK-SAME: : (tensor<f32>, tensor<4x5xf32>, tensor<4xi32>, tensor<5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT: return %[[LOSS]], %[[SOFTMAX_CROSS_ENTROPY_GRAD]] : tensor<f32>, tensor<4x5xf32>
module @sce_weights_ignore {
  func.func @forward(%s: tensor<4x5xf32> {nn.param = "s"}, %l: tensor<4xi32> {nn.input = "labels"}, %w: tensor<5xf32> {nn.input = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %loss, %lp = nn.softmax_cross_entropy %s, %l, %w {reduction = "sum", ignore_index = -100 : i64} : (tensor<4x5xf32>, tensor<4xi32>, tensor<5xf32>) -> (tensor<f32>, tensor<4x5xf32>)
    return %loss : tensor<f32>
  }
}

// -----

// reduction "none" with the per-row losses summed afterwards: the loss
// gradient reaching the op is shaped like the labels.
// CHECK-LABEL: module @sce_none
// CHECK: func.func @train_step(
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<4x5xf32> {nn.param = "s"},
// CHECK-SAME: %[[LABELS:[a-z0-9]+]]: tensor<4xi64> {nn.input = "labels"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4x5xf32> {nn.grad = "s"})
// CHECK-NEXT: %[[LOSS:[a-z_0-9]+]], %[[LOG_PROB:[a-z_0-9]+]] = nn.softmax_cross_entropy %[[S]], %[[LABELS]] {reduction = "none"}
// CHECK-SAME: : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<4xf32>, tensor<4x5xf32>)
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[LOSS]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[SOFTMAX_CROSS_ENTROPY_GRAD:[0-9]+]] = nn.softmax_cross_entropy_grad %[[EXPAND]], %[[LOG_PROB]], %[[LABELS]] {reduction = "none"}
// CHECK-SAME: : (tensor<4xf32>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x5xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[SOFTMAX_CROSS_ENTROPY_GRAD]] : tensor<f32>, tensor<4x5xf32>
module @sce_none {
  func.func @forward(%s: tensor<4x5xf32> {nn.param = "s"}, %l: tensor<4xi64> {nn.input = "labels"}) -> (tensor<f32> {nn.output = "loss"}) {
    %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "none"} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<4xf32>, tensor<4x5xf32>)
    %0 = nn.reduce_sum %loss {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// When the log_prob output also reaches the loss, its gradient goes through
// log_softmax_grad (axis 1, the class axis) and is added to the loss's.
// CHECK-LABEL: module @sce_log_prob_used
// CHECK: func.func @train_step(
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<4x5xf32> {nn.param = "s"},
// CHECK-SAME: %[[LABELS:[a-z0-9]+]]: tensor<4xi64> {nn.input = "labels"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4x5xf32> {nn.grad = "s"})
// CHECK-NEXT: %[[LOSS:[a-z_0-9]+]], %[[LOG_PROB:[a-z_0-9]+]] = nn.softmax_cross_entropy %[[S]], %[[LABELS]] {reduction = "mean"}
// CHECK-SAME: : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[LOG_PROB]] {axes = array<i64: 0, 1>, keepdims = false}
// CHECK-SAME: : (tensor<4x5xf32>) -> tensor<f32>
// CHECK-NEXT: %[[ADD:[0-9]+]] = nn.add %[[LOSS]], %[[REDUCE_SUM]]
// CHECK-SAME: : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<4x5xf32>
// CHECK-NEXT: %[[SOFTMAX_CROSS_ENTROPY_GRAD:[0-9]+]] = nn.softmax_cross_entropy_grad %[[CONSTANT]], %[[LOG_PROB]], %[[LABELS]] {reduction = "mean"}
// CHECK-SAME: : (tensor<f32>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x5xf32>
// CHECK-NEXT: %[[LOG_SOFTMAX_GRAD:[0-9]+]] = nn.log_softmax_grad %[[LOG_PROB]], %[[EXPAND]] {axis = 1 : i64}
// CHECK-SAME: : tensor<4x5xf32>
// CHECK-NEXT: %[[ADD_1:[0-9]+]] = nn.add %[[SOFTMAX_CROSS_ENTROPY_GRAD]], %[[LOG_SOFTMAX_GRAD]]
// CHECK-SAME: : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT: return %[[ADD]], %[[ADD_1]] : tensor<f32>, tensor<4x5xf32>
module @sce_log_prob_used {
  func.func @forward(%s: tensor<4x5xf32> {nn.param = "s"}, %l: tensor<4xi64> {nn.input = "labels"}) -> (tensor<f32> {nn.output = "loss"}) {
    %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
    %0 = nn.reduce_sum %lp {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<f32>
    %1 = nn.add %loss, %0 : (tensor<f32>, tensor<f32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// nll_loss on log_softmax (the ONNX export of F.cross_entropy without the
// fused op): nll_loss_grad, then log_softmax_grad.
// CHECK-LABEL: module @nll_log_softmax
// CHECK: func.func @train_step(
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<4x5xf32> {nn.param = "s"},
// CHECK-SAME: %[[TARGET:[a-z0-9]+]]: tensor<4xi64> {nn.input = "target"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4x5xf32> {nn.grad = "s"})
// CHECK-NEXT: %[[LOG_SOFTMAX:[0-9]+]] = nn.log_softmax %[[S]] {axis = 1 : i64}
// CHECK-SAME: : tensor<4x5xf32>
// CHECK-NEXT: %[[NLL_LOSS:[0-9]+]] = nn.nll_loss %[[LOG_SOFTMAX]], %[[TARGET]] {fsdp.eval_loss, reduction = "mean"}
// CHECK-SAME: : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[NLL_LOSS_GRAD:[0-9]+]] = nn.nll_loss_grad %[[CONSTANT]], %[[TARGET]] {reduction = "mean"}
// CHECK-SAME: : (tensor<f32>, tensor<4xi64>) -> tensor<4x5xf32>
// CHECK-NEXT: %[[LOG_SOFTMAX_GRAD:[0-9]+]] = nn.log_softmax_grad %[[LOG_SOFTMAX]], %[[NLL_LOSS_GRAD]] {axis = 1 : i64}
// CHECK-SAME: : tensor<4x5xf32>
// CHECK-NEXT: return %[[NLL_LOSS]], %[[LOG_SOFTMAX_GRAD]] : tensor<f32>, tensor<4x5xf32>
module @nll_log_softmax {
  func.func @forward(%s: tensor<4x5xf32> {nn.param = "s"}, %t: tensor<4xi64> {nn.input = "target"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.log_softmax %s {axis = 1 : i64} : tensor<4x5xf32>
    %1 = nn.nll_loss %0, %t {reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// nll_loss with weights, ignore_index and a spatial dimension
// ([N, C, D] scores, [N, D] targets).
// CHECK-LABEL: module @nll_weights_spatial
// CHECK: func.func @train_step(
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<2x5x3xf32> {nn.param = "s"},
// CHECK-SAME: %[[TARGET:[a-z0-9]+]]: tensor<2x3xi64> {nn.input = "target"},
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<5xf32> {nn.input = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x5x3xf32> {nn.grad = "s"})
// CHECK-NEXT: %[[NLL_LOSS:[0-9]+]] = nn.nll_loss %[[S]], %[[TARGET]], %[[W]] {fsdp.eval_loss, ignore_index = 0 : i64, reduction = "mean"}
// CHECK-SAME: : (tensor<2x5x3xf32>, tensor<2x3xi64>, tensor<5xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[NLL_LOSS_GRAD:[0-9]+]] = nn.nll_loss_grad %[[CONSTANT]], %[[TARGET]], %[[W]] {ignore_index = 0 : i64, reduction = "mean"}
// CHECK-SAME: : (tensor<f32>, tensor<2x3xi64>, tensor<5xf32>) -> tensor<2x5x3xf32>
// CHECK-NEXT: return %[[NLL_LOSS]], %[[NLL_LOSS_GRAD]] : tensor<f32>, tensor<2x5x3xf32>
module @nll_weights_spatial {
  func.func @forward(%s: tensor<2x5x3xf32> {nn.param = "s"}, %t: tensor<2x3xi64> {nn.input = "target"}, %w: tensor<5xf32> {nn.input = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.nll_loss %s, %t, %w {reduction = "mean", ignore_index = 0 : i64} : (tensor<2x5x3xf32>, tensor<2x3xi64>, tensor<5xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}
