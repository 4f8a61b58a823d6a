// RUN: fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-build-train-step)' | FileCheck %s

// Gradients of the data-movement ops (dialects/nn/gradients/ShapeGradients.cpp):
// each is the adjoint movement: reshape back, transpose by the inverse
// permutation, slice a concat's gradient apart, concatenate a split's back
// (zeros for unused pieces), scatter-add for gather, zero-padding for
// slice, a sum over broadcast dimensions for expand, the same triangle for
// trilu.

// reshape: the gradient is reshaped back to the parameter's shape.
// CHECK-LABEL: module @reshape
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x6xf32> {nn.param = "w"},
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<3x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x6xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[W]]
// CHECK-SAME: : tensor<2x6xf32> to tensor<3x4xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[RESHAPE]], %[[X]]
// CHECK-SAME: : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<3x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE_1]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<3x4xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[X]]
// CHECK-SAME: : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[RESHAPE_2:[0-9]+]] = nn.reshape %[[MUL_1]]
// CHECK-SAME: : tensor<3x4xf32> to tensor<2x6xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[RESHAPE_2]] : tensor<f32>, tensor<2x6xf32>
module @reshape {
  func.func @forward(%w: tensor<2x6xf32> {nn.param = "w"}, %x: tensor<3x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reshape %w : tensor<2x6xf32> to tensor<3x4xf32>
    %1 = nn.mul %0, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %2 = nn.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x4xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// transpose with a 3-D permutation [2, 0, 1]: the gradient is transposed
// by the inverse permutation [1, 2, 0].
// CHECK-LABEL: module @transpose_3d
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x3x4xf32> {nn.param = "w"},
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x2x3xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3x4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[TRANSPOSE:[0-9]+]] = nn.transpose %[[W]] {perm = array<i64: 2, 0, 1>}
// CHECK-SAME: : tensor<2x3x4xf32> to tensor<4x2x3xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[TRANSPOSE]], %[[X]]
// CHECK-SAME: : (tensor<4x2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0, 1, 2>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4x2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1x1xf32> to tensor<4x2x3xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[X]]
// CHECK-SAME: : (tensor<4x2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: %[[TRANSPOSE_1:[0-9]+]] = nn.transpose %[[MUL_1]] {perm = array<i64: 1, 2, 0>}
// CHECK-SAME: : tensor<4x2x3xf32> to tensor<2x3x4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[TRANSPOSE_1]] : tensor<f32>, tensor<2x3x4xf32>
module @transpose_3d {
  func.func @forward(%w: tensor<2x3x4xf32> {nn.param = "w"}, %x: tensor<4x2x3xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.transpose %w {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> to tensor<4x2x3xf32>
    %1 = nn.mul %0, %x : (tensor<4x2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
    %2 = nn.reduce_sum %1 {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<4x2x3xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// concat of two parameters and an input along axis 1: each parameter's
// gradient is its slice [offset, offset + size) of the result's gradient;
// the input's slice is not built.
// CHECK-LABEL: module @concat
// CHECK: func.func @train_step(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "a"},
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x1xf32> {nn.input = "x"},
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<2x2xf32> {nn.param = "b"},
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<2x6xf32> {nn.input = "t"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "a"}, tensor<2x2xf32> {nn.grad = "b"})
// CHECK-NEXT: %[[CONCAT:[0-9]+]] = nn.concat %[[A]], %[[X]], %[[B]] {axis = 1 : i64}
// CHECK-SAME: : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[CONCAT]], %[[T]]
// CHECK-SAME: : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x6xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x6xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[T]]
// CHECK-SAME: : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[SLICE:[0-9]+]] = nn.slice %[[MUL_1]] {ends = array<i64: 2, 3>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>}
// CHECK-SAME: : tensor<2x6xf32> to tensor<2x3xf32>
// CHECK-NEXT: %[[SLICE_1:[0-9]+]] = nn.slice %[[MUL_1]] {ends = array<i64: 2, 6>, starts = array<i64: 0, 4>, steps = array<i64: 1, 1>}
// CHECK-SAME: : tensor<2x6xf32> to tensor<2x2xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[SLICE]], %[[SLICE_1]] : tensor<f32>, tensor<2x3xf32>, tensor<2x2xf32>
module @concat {
  func.func @forward(%a: tensor<2x3xf32> {nn.param = "a"}, %x: tensor<2x1xf32> {nn.input = "x"}, %b: tensor<2x2xf32> {nn.param = "b"}, %t: tensor<2x6xf32> {nn.input = "t"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.concat %a, %x, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
    %1 = nn.mul %0, %t : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
    %2 = nn.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x6xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// split into three pieces with the middle one unused: the gradient is the
// concat of the used pieces' gradients with zeros in the middle.
// CHECK-LABEL: module @split_unused_piece
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x6xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x6xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[SPLIT:[0-9]+]]:3 = nn.split %[[W]] {axis = 1 : i64}
// CHECK-SAME: : (tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>)
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[SPLIT]]#0 {axes = array<i64: 0, 1>, keepdims = false}
// CHECK-SAME: : (tensor<2x1xf32>) -> tensor<f32>
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[SPLIT]]#2 {axes = array<i64: 0, 1>, keepdims = false}
// CHECK-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[ADD:[0-9]+]] = nn.add %[[REDUCE_SUM]], %[[REDUCE_SUM_1]]
// CHECK-SAME: : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x3xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND_1:[0-9]+]] = nn.expand %[[RESHAPE_1]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x1xf32>
// CHECK-NEXT: %[[CONSTANT_1:[0-9]+]] = nn.constant dense<0.000000e+00>
// CHECK-SAME: : tensor<2x2xf32>
// CHECK-NEXT: %[[CONCAT:[0-9]+]] = nn.concat %[[EXPAND_1]], %[[CONSTANT_1]], %[[EXPAND]] {axis = 1 : i64}
// CHECK-SAME: : (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: return %[[ADD]], %[[CONCAT]] : tensor<f32>, tensor<2x6xf32>
module @split_unused_piece {
  func.func @forward(%w: tensor<2x6xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0:3 = nn.split %w {axis = 1 : i64} : (tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>)
    %1 = nn.reduce_sum %0#0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x1xf32>) -> tensor<f32>
    %2 = nn.reduce_sum %0#2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    %3 = nn.add %1, %2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}

// -----

// slice with a negative step (reversing [1, 5) of axis 1 from the end):
// slice_grad writes the gradient back at the same positions with the same
// starts, ends and steps.
// CHECK-LABEL: module @slice_negative_step
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x6xf32> {nn.param = "w"},
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x6xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[SLICE:[0-9]+]] = nn.slice %[[W]] {ends = array<i64: 2, 1>, starts = array<i64: 0, 5>, steps = array<i64: 1, -2>}
// CHECK-SAME: : tensor<2x6xf32> to tensor<2x2xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[SLICE]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x2xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x2xf32>
// CHECK-NEXT: %[[SLICE_GRAD:[0-9]+]] = nn.slice_grad %[[EXPAND]] {ends = array<i64: 2, 1>, starts = array<i64: 0, 5>, steps = array<i64: 1, -2>}
// CHECK-SAME: : tensor<2x2xf32> to tensor<2x6xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[SLICE_GRAD]] : tensor<f32>, tensor<2x6xf32>
module @slice_negative_step {
  func.func @forward(%w: tensor<2x6xf32> {nn.param = "w"}, %x: tensor<2x3xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.slice %w {starts = array<i64: 0, 5>, ends = array<i64: 2, 1>, steps = array<i64: 1, -2>} : tensor<2x6xf32> to tensor<2x2xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x2xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// expand of a [3, 1] parameter to [2, 3, 4]: the gradient is summed over
// the added leading dimension and the stretched last one.
// CHECK-LABEL: module @expand
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x1xf32> {nn.param = "w"},
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3x1xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[W]]
// CHECK-SAME: : tensor<3x1xf32> to tensor<2x3x4xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[EXPAND]], %[[X]]
// CHECK-SAME: : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0, 1, 2>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1x1xf32>
// CHECK-NEXT: %[[EXPAND_1:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1x1xf32> to tensor<2x3x4xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND_1]], %[[X]]
// CHECK-SAME: : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[MUL_1]] {axes = array<i64: 0, 2>}
// CHECK-SAME: : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[REDUCE_SUM_1]]
// CHECK-SAME: : tensor<1x3x1xf32> to tensor<3x1xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[RESHAPE_1]] : tensor<f32>, tensor<3x1xf32>
module @expand {
  func.func @forward(%w: tensor<3x1xf32> {nn.param = "w"}, %x: tensor<2x3x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.expand %w : tensor<3x1xf32> to tensor<2x3x4xf32>
    %1 = nn.mul %0, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %2 = nn.reduce_sum %1 {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// gather as an embedding lookup: one gather_grad (scatter-add) from the
// token ids; the ids get no gradient.
// CHECK-LABEL: module @gather_embedding
// CHECK: func.func @train_step(
// CHECK-SAME: %[[WTE:[a-z0-9]+]]: tensor<10x4xf32> {nn.param = "wte"},
// CHECK-SAME: %[[IDS:[a-z0-9]+]]: tensor<2x3xi64> {nn.input = "ids"}) -> (tensor<f32> {nn.output = "loss"}, tensor<10x4xf32> {nn.grad = "wte"})
// CHECK-NEXT: %[[GATHER:[0-9]+]] = nn.gather %[[WTE]], %[[IDS]] {axis = 0 : i64}
// CHECK-SAME: : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[GATHER]] {axes = array<i64: 0, 1, 2>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1x1xf32> to tensor<2x3x4xf32>
// CHECK-NEXT: %[[GATHER_GRAD:[0-9]+]] = nn.gather_grad %[[IDS]], %[[EXPAND]] {axis = 0 : i64}
// CHECK-SAME: : (tensor<2x3xi64>, tensor<2x3x4xf32>) -> tensor<10x4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[GATHER_GRAD]] : tensor<f32>, tensor<10x4xf32>
module @gather_embedding {
  func.func @forward(%wte: tensor<10x4xf32> {nn.param = "wte"}, %ids: tensor<2x3xi64> {nn.input = "ids"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.gather %wte, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// A gathered table used twice (two lookups of the same parameter, as tied
// embeddings do): two gather_grads accumulated with nn.add, the later
// use's contribution first (reverse use order).
// CHECK-LABEL: module @gather_repeated_use
// CHECK: func.func @train_step(
// CHECK-SAME: %[[WTE:[a-z0-9]+]]: tensor<10x4xf32> {nn.param = "wte"},
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<3xi64> {nn.input = "a"},
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<2xi32> {nn.input = "b"}) -> (tensor<f32> {nn.output = "loss"}, tensor<10x4xf32> {nn.grad = "wte"})
// CHECK-NEXT: %[[GATHER:[0-9]+]] = nn.gather %[[WTE]], %[[A]] {axis = 0 : i64}
// CHECK-SAME: : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[GATHER_1:[0-9]+]] = nn.gather %[[WTE]], %[[B]] {axis = 1 : i64}
// CHECK-SAME: : (tensor<10x4xf32>, tensor<2xi32>) -> tensor<10x2xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[GATHER]] {axes = array<i64: 0, 1>, keepdims = false}
// CHECK-SAME: : (tensor<3x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[GATHER_1]] {axes = array<i64: 0, 1>, keepdims = false}
// CHECK-SAME: : (tensor<10x2xf32>) -> tensor<f32>
// CHECK-NEXT: %[[ADD:[0-9]+]] = nn.add %[[REDUCE_SUM]], %[[REDUCE_SUM_1]]
// CHECK-SAME: : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<10x2xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND_1:[0-9]+]] = nn.expand %[[RESHAPE_1]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<3x4xf32>
// CHECK-NEXT: %[[GATHER_GRAD:[0-9]+]] = nn.gather_grad %[[B]], %[[EXPAND]] {axis = 1 : i64}
// CHECK-SAME: : (tensor<2xi32>, tensor<10x2xf32>) -> tensor<10x4xf32>
// CHECK-NEXT: %[[GATHER_GRAD_1:[0-9]+]] = nn.gather_grad %[[A]], %[[EXPAND_1]] {axis = 0 : i64}
// CHECK-SAME: : (tensor<3xi64>, tensor<3x4xf32>) -> tensor<10x4xf32>
// CHECK-NEXT: %[[ADD_1:[0-9]+]] = nn.add %[[GATHER_GRAD]], %[[GATHER_GRAD_1]]
// CHECK-SAME: : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
// CHECK-NEXT: return %[[ADD]], %[[ADD_1]] : tensor<f32>, tensor<10x4xf32>
module @gather_repeated_use {
  func.func @forward(%wte: tensor<10x4xf32> {nn.param = "wte"}, %a: tensor<3xi64> {nn.input = "a"}, %b: tensor<2xi32> {nn.input = "b"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.gather %wte, %a {axis = 0 : i64} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
    %1 = nn.gather %wte, %b {axis = 1 : i64} : (tensor<10x4xf32>, tensor<2xi32>) -> tensor<10x2xf32>
    %2 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x4xf32>) -> tensor<f32>
    %3 = nn.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<10x2xf32>) -> tensor<f32>
    %4 = nn.add %2, %3 : (tensor<f32>, tensor<f32>) -> tensor<f32>
    return %4 : tensor<f32>
  }
}

// -----

// trilu (a causal mask's triangle): the gradient is masked by the same
// triangle.
// CHECK-LABEL: module @trilu
// CHECK: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x3xf32> {nn.param = "w"},
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<3x3xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3x3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[TRILU:[0-9]+]] = nn.trilu %[[W]] {upper = false}
// CHECK-SAME: : tensor<3x3xf32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[TRILU]], %[[X]]
// CHECK-SAME: : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MUL]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<3x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<3x3xf32>
// CHECK-NEXT: %[[MUL_1:[0-9]+]] = nn.mul %[[EXPAND]], %[[X]]
// CHECK-SAME: : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT: %[[TRILU_1:[0-9]+]] = nn.trilu %[[MUL_1]] {upper = false}
// CHECK-SAME: : tensor<3x3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[TRILU_1]] : tensor<f32>, tensor<3x3xf32>
module @trilu {
  func.func @forward(%w: tensor<3x3xf32> {nn.param = "w"}, %x: tensor<3x3xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.trilu %w {upper = false, k = 0 : i64} : tensor<3x3xf32>
    %1 = nn.mul %0, %x : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    %2 = nn.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x3xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
