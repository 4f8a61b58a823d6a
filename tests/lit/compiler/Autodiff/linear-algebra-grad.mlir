// RUN: fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-build-train-step)' | FileCheck %s

// Gradients of matmul and gemm (dialects/nn/gradients/LinearAlgebraGradients.cpp):
// dA = dY @ B^T and dB = A^T @ dY after undoing numpy's 1-D promotion and
// summing broadcast batch dimensions; a 2-D weight under a batched input
// gets one product over the folded rows; gemm's transpose cases map onto
// gemm's own trans flags, so no transpose is materialized.

// A plain 2-D product with the weight trainable and the input not: only
// dW = x^T @ dY is built (the transpose of the input is a real copy).
// CHECK-LABEL: module @matmul_2d_weight
// CHECK: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3xf32> {nn.input = "x"},
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3x4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[MATMUL:[0-9]+]] = nn.matmul %[[X]], %[[W]]
// CHECK-SAME: : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MATMUL]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x4xf32>
// CHECK-NEXT: %[[TRANSPOSE:[0-9]+]] = nn.transpose %[[X]] {perm = array<i64: 1, 0>}
// CHECK-SAME: : tensor<2x3xf32> to tensor<3x2xf32>
// CHECK-NEXT: %[[MATMUL_1:[0-9]+]] = nn.matmul %[[TRANSPOSE]], %[[EXPAND]]
// CHECK-SAME: : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[MATMUL_1]] : tensor<f32>, tensor<3x4xf32>
module @matmul_2d_weight {
  func.func @forward(%x: tensor<2x3xf32> {nn.input = "x"}, %w: tensor<3x4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// x @ W^T with W stored [out, in] (torch's Linear): the input gradient is
// dY @ W, reading W directly (the transposes compose away), and W's gradient
// is built as dY^T @ x instead of (x^T @ dY) followed by a transpose.
// CHECK-LABEL: module @matmul_transposed_weight
// CHECK: func.func @train_step(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "a"},
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "a"}, tensor<4x3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[TRANSPOSE:[0-9]+]] = nn.transpose %[[W]] {perm = array<i64: 1, 0>}
// CHECK-SAME: : tensor<4x3xf32> to tensor<3x4xf32>
// CHECK-NEXT: %[[MATMUL:[0-9]+]] = nn.matmul %[[A]], %[[TRANSPOSE]]
// CHECK-SAME: : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MATMUL]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x4xf32>
// CHECK-NEXT: %[[MATMUL_1:[0-9]+]] = nn.matmul %[[EXPAND]], %[[W]]
// CHECK-SAME: : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[TRANSPOSE_1:[0-9]+]] = nn.transpose %[[EXPAND]] {perm = array<i64: 1, 0>}
// CHECK-SAME: : tensor<2x4xf32> to tensor<4x2xf32>
// CHECK-NEXT: %[[MATMUL_2:[0-9]+]] = nn.matmul %[[TRANSPOSE_1]], %[[A]]
// CHECK-SAME: : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[MATMUL_1]], %[[MATMUL_2]] : tensor<f32>, tensor<2x3xf32>, tensor<4x3xf32>
module @matmul_transposed_weight {
  func.func @forward(%a: tensor<2x3xf32> {nn.param = "a"}, %w: tensor<4x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %t = nn.transpose %w {perm = array<i64: 1, 0>} : tensor<4x3xf32> to tensor<3x4xf32>
    %0 = nn.matmul %a, %t : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// The same under a batched input ([2, 5, 3] @ W^T, W [4, 3]): the weight's
// gradient is one product over the folded rows, dY_rows^T @ x_rows, with no
// transpose of the product.
// CHECK-LABEL: module @matmul_batched_transposed_weight
// CHECK: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x5x3xf32> {nn.input = "x"},
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4x3xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[TRANSPOSE:[0-9]+]] = nn.transpose %[[W]] {perm = array<i64: 1, 0>}
// CHECK-SAME: : tensor<4x3xf32> to tensor<3x4xf32>
// CHECK-NEXT: %[[MATMUL:[0-9]+]] = nn.matmul %[[X]], %[[TRANSPOSE]]
// CHECK-SAME: : (tensor<2x5x3xf32>, tensor<3x4xf32>) -> tensor<2x5x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MATMUL]] {axes = array<i64: 0, 1, 2>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x5x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1x1xf32> to tensor<2x5x4xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[X]]
// CHECK-SAME: : tensor<2x5x3xf32> to tensor<10x3xf32>
// CHECK-NEXT: %[[RESHAPE_2:[0-9]+]] = nn.reshape %[[EXPAND]]
// CHECK-SAME: : tensor<2x5x4xf32> to tensor<10x4xf32>
// CHECK-NEXT: %[[TRANSPOSE_1:[0-9]+]] = nn.transpose %[[RESHAPE_2]] {perm = array<i64: 1, 0>}
// CHECK-SAME: : tensor<10x4xf32> to tensor<4x10xf32>
// CHECK-NEXT: %[[MATMUL_1:[0-9]+]] = nn.matmul %[[TRANSPOSE_1]], %[[RESHAPE_1]]
// CHECK-SAME: : (tensor<4x10xf32>, tensor<10x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[MATMUL_1]] : tensor<f32>, tensor<4x3xf32>
module @matmul_batched_transposed_weight {
  func.func @forward(%x: tensor<2x5x3xf32> {nn.input = "x"}, %w: tensor<4x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %t = nn.transpose %w {perm = array<i64: 1, 0>} : tensor<4x3xf32> to tensor<3x4xf32>
    %0 = nn.matmul %x, %t : (tensor<2x5x3xf32>, tensor<3x4xf32>) -> tensor<2x5x4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x5x4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// A 1-D left operand ([3] @ [3, 4] -> [4]): it is promoted to [1, 3] and the
// gradient [4] to [1, 4]; the gradients come back as [3] and [3, 4].
// CHECK-LABEL: module @matmul_1d_lhs
// CHECK: func.func @train_step(
// CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<3xf32> {nn.param = "v"},
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3xf32> {nn.grad = "v"}, tensor<3x4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[MATMUL:[0-9]+]] = nn.matmul %[[V]], %[[W]]
// CHECK-SAME: : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MATMUL]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<4xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[V]]
// CHECK-SAME: : tensor<3xf32> to tensor<1x3xf32>
// CHECK-NEXT: %[[RESHAPE_2:[0-9]+]] = nn.reshape %[[EXPAND]]
// CHECK-SAME: : tensor<4xf32> to tensor<1x4xf32>
// CHECK-NEXT: %[[TRANSPOSE:[0-9]+]] = nn.transpose %[[W]] {perm = array<i64: 1, 0>}
// CHECK-SAME: : tensor<3x4xf32> to tensor<4x3xf32>
// CHECK-NEXT: %[[MATMUL_1:[0-9]+]] = nn.matmul %[[RESHAPE_2]], %[[TRANSPOSE]]
// CHECK-SAME: : (tensor<1x4xf32>, tensor<4x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: %[[RESHAPE_3:[0-9]+]] = nn.reshape %[[MATMUL_1]]
// CHECK-SAME: : tensor<1x3xf32> to tensor<3xf32>
// CHECK-NEXT: %[[TRANSPOSE_1:[0-9]+]] = nn.transpose %[[RESHAPE_1]] {perm = array<i64: 1, 0>}
// CHECK-SAME: : tensor<1x3xf32> to tensor<3x1xf32>
// CHECK-NEXT: %[[MATMUL_2:[0-9]+]] = nn.matmul %[[TRANSPOSE_1]], %[[RESHAPE_2]]
// CHECK-SAME: : (tensor<3x1xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[RESHAPE_3]], %[[MATMUL_2]] : tensor<f32>, tensor<3xf32>, tensor<3x4xf32>
module @matmul_1d_lhs {
  func.func @forward(%v: tensor<3xf32> {nn.param = "v"}, %w: tensor<3x4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.matmul %v, %w : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// A 1-D right operand ([2, 3] @ [3] -> [2]): promoted to [3, 1], the
// gradient to [2, 1].
// CHECK-LABEL: module @matmul_1d_rhs
// CHECK: func.func @train_step(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "a"},
// CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<3xf32> {nn.param = "v"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "a"}, tensor<3xf32> {nn.grad = "v"})
// CHECK-NEXT: %[[MATMUL:[0-9]+]] = nn.matmul %[[A]], %[[V]]
// CHECK-SAME: : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MATMUL]] {axes = array<i64: 0>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1xf32> to tensor<2xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[V]]
// CHECK-SAME: : tensor<3xf32> to tensor<3x1xf32>
// CHECK-NEXT: %[[RESHAPE_2:[0-9]+]] = nn.reshape %[[EXPAND]]
// CHECK-SAME: : tensor<2xf32> to tensor<2x1xf32>
// CHECK-NEXT: %[[TRANSPOSE:[0-9]+]] = nn.transpose %[[RESHAPE_1]] {perm = array<i64: 1, 0>}
// CHECK-SAME: : tensor<3x1xf32> to tensor<1x3xf32>
// CHECK-NEXT: %[[MATMUL_1:[0-9]+]] = nn.matmul %[[RESHAPE_2]], %[[TRANSPOSE]]
// CHECK-SAME: : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[TRANSPOSE_1:[0-9]+]] = nn.transpose %[[A]] {perm = array<i64: 1, 0>}
// CHECK-SAME: : tensor<2x3xf32> to tensor<3x2xf32>
// CHECK-NEXT: %[[MATMUL_2:[0-9]+]] = nn.matmul %[[TRANSPOSE_1]], %[[RESHAPE_2]]
// CHECK-SAME: : (tensor<3x2xf32>, tensor<2x1xf32>) -> tensor<3x1xf32>
// CHECK-NEXT: %[[RESHAPE_3:[0-9]+]] = nn.reshape %[[MATMUL_2]]
// CHECK-SAME: : tensor<3x1xf32> to tensor<3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[MATMUL_1]], %[[RESHAPE_3]] : tensor<f32>, tensor<2x3xf32>, tensor<3xf32>
module @matmul_1d_rhs {
  func.func @forward(%a: tensor<2x3xf32> {nn.param = "a"}, %v: tensor<3xf32> {nn.param = "v"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.matmul %a, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// A dot product of two vectors is already the scalar loss: the seed needs no
// reshape, the gradient is promoted to [1, 1].
// CHECK-LABEL: module @matmul_dot
// CHECK: func.func @train_step(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<3xf32> {nn.param = "a"},
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<3xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3xf32> {nn.grad = "a"}, tensor<3xf32> {nn.grad = "b"})
// CHECK-NEXT: %[[MATMUL:[0-9]+]] = nn.matmul %[[A]], %[[B]]
// CHECK-SAME: : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[A]]
// CHECK-SAME: : tensor<3xf32> to tensor<1x3xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[B]]
// CHECK-SAME: : tensor<3xf32> to tensor<3x1xf32>
// CHECK-NEXT: %[[RESHAPE_2:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[TRANSPOSE:[0-9]+]] = nn.transpose %[[RESHAPE_1]] {perm = array<i64: 1, 0>}
// CHECK-SAME: : tensor<3x1xf32> to tensor<1x3xf32>
// CHECK-NEXT: %[[MATMUL_1:[0-9]+]] = nn.matmul %[[RESHAPE_2]], %[[TRANSPOSE]]
// CHECK-SAME: : (tensor<1x1xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: %[[RESHAPE_3:[0-9]+]] = nn.reshape %[[MATMUL_1]]
// CHECK-SAME: : tensor<1x3xf32> to tensor<3xf32>
// CHECK-NEXT: %[[TRANSPOSE_1:[0-9]+]] = nn.transpose %[[RESHAPE]] {perm = array<i64: 1, 0>}
// CHECK-SAME: : tensor<1x3xf32> to tensor<3x1xf32>
// CHECK-NEXT: %[[MATMUL_2:[0-9]+]] = nn.matmul %[[TRANSPOSE_1]], %[[RESHAPE_2]]
// CHECK-SAME: : (tensor<3x1xf32>, tensor<1x1xf32>) -> tensor<3x1xf32>
// CHECK-NEXT: %[[RESHAPE_4:[0-9]+]] = nn.reshape %[[MATMUL_2]]
// CHECK-SAME: : tensor<3x1xf32> to tensor<3xf32>
// CHECK-NEXT: return %[[MATMUL]], %[[RESHAPE_3]], %[[RESHAPE_4]] : tensor<f32>, tensor<3xf32>, tensor<3xf32>
module @matmul_dot {
  func.func @forward(%a: tensor<3xf32> {nn.param = "a"}, %b: tensor<3xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.matmul %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// A batched input under a 2-D weight ([2, 5, 3] @ [3, 4]): the weight's
// gradient folds the batch into the rows, one [3, 10] x [10, 4] product, no
// per-batch products summed afterwards.
// CHECK-LABEL: module @matmul_batched_2d_weight
// CHECK: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x5x3xf32> {nn.input = "x"},
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3x4xf32> {nn.grad = "w"})
// CHECK-NEXT: %[[MATMUL:[0-9]+]] = nn.matmul %[[X]], %[[W]]
// CHECK-SAME: : (tensor<2x5x3xf32>, tensor<3x4xf32>) -> tensor<2x5x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MATMUL]] {axes = array<i64: 0, 1, 2>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x5x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1x1xf32> to tensor<2x5x4xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[X]]
// CHECK-SAME: : tensor<2x5x3xf32> to tensor<10x3xf32>
// CHECK-NEXT: %[[RESHAPE_2:[0-9]+]] = nn.reshape %[[EXPAND]]
// CHECK-SAME: : tensor<2x5x4xf32> to tensor<10x4xf32>
// CHECK-NEXT: %[[TRANSPOSE:[0-9]+]] = nn.transpose %[[RESHAPE_1]] {perm = array<i64: 1, 0>}
// CHECK-SAME: : tensor<10x3xf32> to tensor<3x10xf32>
// CHECK-NEXT: %[[MATMUL_1:[0-9]+]] = nn.matmul %[[TRANSPOSE]], %[[RESHAPE_2]]
// CHECK-SAME: : (tensor<3x10xf32>, tensor<10x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[MATMUL_1]] : tensor<f32>, tensor<3x4xf32>
module @matmul_batched_2d_weight {
  func.func @forward(%x: tensor<2x5x3xf32> {nn.input = "x"}, %w: tensor<3x4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.matmul %x, %w : (tensor<2x5x3xf32>, tensor<3x4xf32>) -> tensor<2x5x4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x5x4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// A batched product whose right operand broadcasts over the batch ([2, 5, 3]
// @ [1, 3, 4]): both operands' gradients are batched products; the right
// one is summed over the broadcast batch dimension.
// CHECK-LABEL: module @matmul_batch_broadcast
// CHECK: func.func @train_step(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x5x3xf32> {nn.param = "a"},
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<1x3x4xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x5x3xf32> {nn.grad = "a"}, tensor<1x3x4xf32> {nn.grad = "b"})
// CHECK-NEXT: %[[MATMUL:[0-9]+]] = nn.matmul %[[A]], %[[B]]
// CHECK-SAME: : (tensor<2x5x3xf32>, tensor<1x3x4xf32>) -> tensor<2x5x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[MATMUL]] {axes = array<i64: 0, 1, 2>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x5x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1x1xf32> to tensor<2x5x4xf32>
// CHECK-NEXT: %[[TRANSPOSE:[0-9]+]] = nn.transpose %[[B]] {perm = array<i64: 0, 2, 1>}
// CHECK-SAME: : tensor<1x3x4xf32> to tensor<1x4x3xf32>
// CHECK-NEXT: %[[MATMUL_1:[0-9]+]] = nn.matmul %[[EXPAND]], %[[TRANSPOSE]]
// CHECK-SAME: : (tensor<2x5x4xf32>, tensor<1x4x3xf32>) -> tensor<2x5x3xf32>
// CHECK-NEXT: %[[TRANSPOSE_1:[0-9]+]] = nn.transpose %[[A]] {perm = array<i64: 0, 2, 1>}
// CHECK-SAME: : tensor<2x5x3xf32> to tensor<2x3x5xf32>
// CHECK-NEXT: %[[MATMUL_2:[0-9]+]] = nn.matmul %[[TRANSPOSE_1]], %[[EXPAND]]
// CHECK-SAME: : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[MATMUL_2]] {axes = array<i64: 0>}
// CHECK-SAME: : (tensor<2x3x4xf32>) -> tensor<1x3x4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[MATMUL_1]], %[[REDUCE_SUM_1]] : tensor<f32>, tensor<2x5x3xf32>, tensor<1x3x4xf32>
module @matmul_batch_broadcast {
  func.func @forward(%a: tensor<2x5x3xf32> {nn.param = "a"}, %b: tensor<1x3x4xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.matmul %a, %b : (tensor<2x5x3xf32>, tensor<1x3x4xf32>) -> tensor<2x5x4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x5x4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// gemm without transposes, with alpha and a broadcast bias (beta = 1):
// dA = alpha dY B^T = gemm(dY, B, trans_b), dB = alpha A^T dY =
// gemm(A, dY, trans_a); the bias gradient is dY summed over the rows.
// CHECK-LABEL: module @gemm_nn_bias
// CHECK: func.func @train_step(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "a"},
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<3x4xf32> {nn.param = "b"},
// CHECK-SAME: %[[C:[a-z0-9]+]]: tensor<4xf32> {nn.param = "c"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "a"}, tensor<3x4xf32> {nn.grad = "b"}, tensor<4xf32> {nn.grad = "c"})
// CHECK-NEXT: %[[GEMM:[0-9]+]] = nn.gemm %[[A]], %[[B]], %[[C]] {alpha = 2.000000e+00 : f32}
// CHECK-SAME: : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[GEMM]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x4xf32>
// CHECK-NEXT: %[[GEMM_1:[0-9]+]] = nn.gemm %[[EXPAND]], %[[B]] {alpha = 2.000000e+00 : f32, beta = 0.000000e+00 : f32, trans_b = true}
// CHECK-SAME: : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[GEMM_2:[0-9]+]] = nn.gemm %[[A]], %[[EXPAND]] {alpha = 2.000000e+00 : f32, beta = 0.000000e+00 : f32, trans_a = true}
// CHECK-SAME: : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM_1:[0-9]+]] = nn.reduce_sum %[[EXPAND]] {axes = array<i64: 0>}
// CHECK-SAME: : (tensor<2x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT: %[[RESHAPE_1:[0-9]+]] = nn.reshape %[[REDUCE_SUM_1]]
// CHECK-SAME: : tensor<1x4xf32> to tensor<4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[GEMM_1]], %[[GEMM_2]], %[[RESHAPE_1]] : tensor<f32>, tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>
module @gemm_nn_bias {
  func.func @forward(%a: tensor<2x3xf32> {nn.param = "a"}, %b: tensor<3x4xf32> {nn.param = "b"}, %c: tensor<4xf32> {nn.param = "c"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.gemm %a, %b, %c {alpha = 2.0 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// gemm with trans_b (a Linear layer, B stored [N, K]) and beta = 0.5:
// dA = gemm(dY, B), dB = gemm(dY, A, trans_a) = dY^T A in B's layout; the
// bias gradient is scaled by beta.
// CHECK-LABEL: module @gemm_nt_beta
// CHECK: func.func @train_step(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x3xf32> {nn.param = "a"},
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<4x3xf32> {nn.param = "b"},
// CHECK-SAME: %[[C:[a-z0-9]+]]: tensor<2x4xf32> {nn.param = "c"}) -> (tensor<f32> {nn.output = "loss"}, tensor<2x3xf32> {nn.grad = "a"}, tensor<4x3xf32> {nn.grad = "b"}, tensor<2x4xf32> {nn.grad = "c"})
// CHECK-NEXT: %[[GEMM:[0-9]+]] = nn.gemm %[[A]], %[[B]], %[[C]] {beta = 5.000000e-01 : f32, trans_b = true}
// CHECK-SAME: : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[GEMM]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x4xf32>
// CHECK-NEXT: %[[GEMM_1:[0-9]+]] = nn.gemm %[[EXPAND]], %[[B]] {beta = 0.000000e+00 : f32}
// CHECK-SAME: : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[GEMM_2:[0-9]+]] = nn.gemm %[[EXPAND]], %[[A]] {beta = 0.000000e+00 : f32, trans_a = true}
// CHECK-SAME: : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[CONSTANT_1:[0-9]+]] = nn.constant dense<5.000000e-01>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[EXPAND]], %[[CONSTANT_1]]
// CHECK-SAME: : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[GEMM_1]], %[[GEMM_2]], %[[MUL]] : tensor<f32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x4xf32>
module @gemm_nt_beta {
  func.func @forward(%a: tensor<2x3xf32> {nn.param = "a"}, %b: tensor<4x3xf32> {nn.param = "b"}, %c: tensor<2x4xf32> {nn.param = "c"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.gemm %a, %b, %c {beta = 0.5 : f32, trans_b = true} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// gemm with trans_a (A stored [K, M]): dA = gemm(B, dY, trans_b) = B dY^T
// in A's layout, dB = gemm(A, dY).
// CHECK-LABEL: module @gemm_tn
// CHECK: func.func @train_step(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<3x2xf32> {nn.param = "a"},
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<3x4xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3x2xf32> {nn.grad = "a"}, tensor<3x4xf32> {nn.grad = "b"})
// CHECK-NEXT: %[[GEMM:[0-9]+]] = nn.gemm %[[A]], %[[B]] {trans_a = true}
// CHECK-SAME: : (tensor<3x2xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[GEMM]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x4xf32>
// CHECK-NEXT: %[[GEMM_1:[0-9]+]] = nn.gemm %[[B]], %[[EXPAND]] {beta = 0.000000e+00 : f32, trans_b = true}
// CHECK-SAME: : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: %[[GEMM_2:[0-9]+]] = nn.gemm %[[A]], %[[EXPAND]] {beta = 0.000000e+00 : f32}
// CHECK-SAME: : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[GEMM_1]], %[[GEMM_2]] : tensor<f32>, tensor<3x2xf32>, tensor<3x4xf32>
module @gemm_tn {
  func.func @forward(%a: tensor<3x2xf32> {nn.param = "a"}, %b: tensor<3x4xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.gemm %a, %b {trans_a = true} : (tensor<3x2xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// gemm with both transposes: dA = gemm(B, dY, trans_a, trans_b) = B^T dY^T,
// dB = gemm(dY, A, trans_a, trans_b) = dY^T A^T.
// CHECK-LABEL: module @gemm_tt
// CHECK: func.func @train_step(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<3x2xf32> {nn.param = "a"},
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<4x3xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3x2xf32> {nn.grad = "a"}, tensor<4x3xf32> {nn.grad = "b"})
// CHECK-NEXT: %[[GEMM:[0-9]+]] = nn.gemm %[[A]], %[[B]] {trans_a = true, trans_b = true}
// CHECK-SAME: : (tensor<3x2xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[GEMM]] {axes = array<i64: 0, 1>, fsdp.eval_loss, keepdims = false}
// CHECK-SAME: : (tensor<2x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[CONSTANT:[0-9]+]] = nn.constant dense<1.000000e+00>
// CHECK-SAME: : tensor<f32>
// CHECK-NEXT: %[[RESHAPE:[0-9]+]] = nn.reshape %[[CONSTANT]]
// CHECK-SAME: : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[EXPAND:[0-9]+]] = nn.expand %[[RESHAPE]]
// CHECK-SAME: : tensor<1x1xf32> to tensor<2x4xf32>
// CHECK-NEXT: %[[GEMM_1:[0-9]+]] = nn.gemm %[[B]], %[[EXPAND]] {beta = 0.000000e+00 : f32, trans_a = true, trans_b = true}
// CHECK-SAME: : (tensor<4x3xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: %[[GEMM_2:[0-9]+]] = nn.gemm %[[EXPAND]], %[[A]] {beta = 0.000000e+00 : f32, trans_a = true, trans_b = true}
// CHECK-SAME: : (tensor<2x4xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: return %[[REDUCE_SUM]], %[[GEMM_1]], %[[GEMM_2]] : tensor<f32>, tensor<3x2xf32>, tensor<4x3xf32>
module @gemm_tt {
  func.func @forward(%a: tensor<3x2xf32> {nn.param = "a"}, %b: tensor<4x3xf32> {nn.param = "b"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.gemm %a, %b {trans_a = true, trans_b = true} : (tensor<3x2xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}
