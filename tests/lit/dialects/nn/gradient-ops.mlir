// RUN: fsdp-opt %s -split-input-file | fsdp-opt - -split-input-file | FileCheck %s

// Round trip of the gradient and optimizer ops through their custom
// assembly formats (dialects/nn/NNGradientOps.td, NNOptimizerOps.td): each
// case is parsed, verified, printed, parsed and verified again, and the
// second print must spell the same op, operands, attributes and types.
// Optional operands (class weights, the momentum buffer) appear both
// present and absent.

// The activation gradients take the saved forward value and the gradient.
// CHECK-LABEL: func @activation_grads
// CHECK: nn.relu_grad %arg0, %arg1 : tensor<2x3xf32>
// CHECK: nn.erf_grad %arg0, %arg1 : tensor<2x3xf32>
// CHECK: nn.tanh_grad %arg0, %arg1 : tensor<2x3xf32>
// CHECK: nn.sigmoid_grad %arg0, %arg1 : tensor<2x3xf32>
func.func @activation_grads(%y: tensor<2x3xf32>, %g: tensor<2x3xf32>) {
  %0 = nn.relu_grad %y, %g : tensor<2x3xf32>
  %1 = nn.erf_grad %y, %g : tensor<2x3xf32>
  %2 = nn.tanh_grad %y, %g : tensor<2x3xf32>
  %3 = nn.sigmoid_grad %y, %g : tensor<2x3xf32>
  return
}

// -----

// softmax_grad and log_softmax_grad keep their axis; bf16 is accepted.
// CHECK-LABEL: func @softmax_grads
// CHECK: nn.softmax_grad %arg0, %arg1 {axis = 1 : i64} : tensor<4x8xbf16>
// CHECK: nn.log_softmax_grad %arg0, %arg1 {axis = 0 : i64} : tensor<4x8xbf16>
func.func @softmax_grads(%y: tensor<4x8xbf16>, %g: tensor<4x8xbf16>) {
  %0 = nn.softmax_grad %y, %g {axis = 1 : i64} : tensor<4x8xbf16>
  %1 = nn.log_softmax_grad %y, %g {axis = 0 : i64} : tensor<4x8xbf16>
  return
}

// -----

// layer_norm_grad over the last two axes: three results of the normalized
// shape for scale and bias.
// CHECK-LABEL: func @layer_norm_grad
// CHECK: %{{.+}}, %{{.+}}, %{{.+}} = nn.layer_norm_grad %arg0, %arg1, %arg2, %arg2, %arg0 {axis = 1 : i64} : (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
func.func @layer_norm_grad(%x: tensor<2x4x8xf32>, %s: tensor<4x8xf32>, %m: tensor<2x1x1xf32>) {
  %0:3 = nn.layer_norm_grad %x, %s, %m, %m, %x {axis = 1 : i64} : (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

// gather_grad scatters an embedding gradient back into the table's shape,
// with i32 or i64 indices.
// CHECK-LABEL: func @gather_grad
// CHECK: nn.gather_grad %arg0, %arg2 {axis = 0 : i64} : (tensor<2x3xi64>, tensor<2x3x4xf32>) -> tensor<10x4xf32>
// CHECK: nn.gather_grad %arg1, %arg3 {axis = 1 : i64} : (tensor<5xi32>, tensor<10x5xf32>) -> tensor<10x4xf32>
func.func @gather_grad(%ids: tensor<2x3xi64>, %cols: tensor<5xi32>, %g: tensor<2x3x4xf32>, %h: tensor<10x5xf32>) {
  %0 = nn.gather_grad %ids, %g {axis = 0 : i64} : (tensor<2x3xi64>, tensor<2x3x4xf32>) -> tensor<10x4xf32>
  %1 = nn.gather_grad %cols, %h {axis = 1 : i64} : (tensor<5xi32>, tensor<10x5xf32>) -> tensor<10x4xf32>
  return
}

// -----

// slice_grad with a negative step.
// CHECK-LABEL: func @slice_grad
// CHECK: nn.slice_grad %arg0 {ends = array<i64: 2, 1>, starts = array<i64: 0, 5>, steps = array<i64: 1, -2>} : tensor<2x2xf32> to tensor<2x6xf32>
func.func @slice_grad(%g: tensor<2x2xf32>) {
  %0 = nn.slice_grad %g {starts = array<i64: 0, 5>, ends = array<i64: 2, 1>, steps = array<i64: 1, -2>} : tensor<2x2xf32> to tensor<2x6xf32>
  return
}

// -----

// softmax_cross_entropy_grad without and with class weights and
// ignore_index; with reduction none the loss gradient is shaped like the
// labels.
// CHECK-LABEL: func @sce_grad
// CHECK: nn.softmax_cross_entropy_grad %arg0, %arg2, %arg3 {reduction = "mean"} : (tensor<f32>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x5xf32>
// CHECK: nn.softmax_cross_entropy_grad %arg1, %arg2, %arg3, %arg4 {ignore_index = -100 : i64, reduction = "none"} : (tensor<4xf32>, tensor<4x5xf32>, tensor<4xi64>, tensor<5xf32>) -> tensor<4x5xf32>
func.func @sce_grad(%lg: tensor<f32>, %lgn: tensor<4xf32>, %lp: tensor<4x5xf32>, %l: tensor<4xi64>, %w: tensor<5xf32>) {
  %0 = nn.softmax_cross_entropy_grad %lg, %lp, %l {reduction = "mean"} : (tensor<f32>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x5xf32>
  %1 = nn.softmax_cross_entropy_grad %lgn, %lp, %l, %w {reduction = "none", ignore_index = -100 : i64} : (tensor<4xf32>, tensor<4x5xf32>, tensor<4xi64>, tensor<5xf32>) -> tensor<4x5xf32>
  return
}

// -----

// nll_loss_grad on spatial scores, without and with weights.
// CHECK-LABEL: func @nll_grad
// CHECK: nn.nll_loss_grad %arg0, %arg1 {reduction = "sum"} : (tensor<f64>, tensor<2x3xi32>) -> tensor<2x5x3xf64>
// CHECK: nn.nll_loss_grad %arg0, %arg1, %arg2 {ignore_index = 0 : i64, reduction = "mean"} : (tensor<f64>, tensor<2x3xi32>, tensor<5xf64>) -> tensor<2x5x3xf64>
func.func @nll_grad(%lg: tensor<f64>, %t: tensor<2x3xi32>, %w: tensor<5xf64>) {
  %0 = nn.nll_loss_grad %lg, %t {reduction = "sum"} : (tensor<f64>, tensor<2x3xi32>) -> tensor<2x5x3xf64>
  %1 = nn.nll_loss_grad %lg, %t, %w {reduction = "mean", ignore_index = 0 : i64} : (tensor<f64>, tensor<2x3xi32>, tensor<5xf64>) -> tensor<2x5x3xf64>
  return
}

// -----

// reduce_max_grad with the output and gradient in kept-dims form.
// CHECK-LABEL: func @reduce_max_grad
// CHECK: nn.reduce_max_grad %arg0, %arg1, %arg1 {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>, tensor<1x3x1xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
func.func @reduce_max_grad(%x: tensor<2x3x4xf32>, %o: tensor<1x3x1xf32>) {
  %0 = nn.reduce_max_grad %x, %o, %o {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>, tensor<1x3x1xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

// dropout_grad with the forward mask and ratio.
// CHECK-LABEL: func @dropout_grad
// CHECK: nn.dropout_grad %arg0, %arg1 {ratio = 1.000000e-01 : f32} : tensor<2x3xf32>, tensor<2x3xi1>
func.func @dropout_grad(%g: tensor<2x3xf32>, %m: tensor<2x3xi1>) {
  %0 = nn.dropout_grad %g, %m {ratio = 0.1 : f32} : tensor<2x3xf32>, tensor<2x3xi1>
  return
}

// -----

// AdamW: three results of the parameter's type.
// CHECK-LABEL: func @adamw
// CHECK: %{{.+}}, %{{.+}}, %{{.+}} = nn.adamw %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64} : tensor<4x3xbf16>, tensor<f64>, tensor<i64>
func.func @adamw(%p: tensor<4x3xbf16>, %g: tensor<4x3xbf16>, %m: tensor<4x3xbf16>, %v: tensor<4x3xbf16>, %lr: tensor<f64>, %s: tensor<i64>) {
  %0:3 = nn.adamw %p, %g, %m, %v, %lr, %s {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64} : tensor<4x3xbf16>, tensor<f64>, tensor<i64>
  return
}

// -----

// SGD without momentum (no buffer operand or result) and with Nesterov
// momentum (buffer in, new buffer out).
// CHECK-LABEL: func @sgd
// CHECK: nn.sgd %arg0, %arg1, %arg3 {momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f64>) -> tensor<8xf32>
// CHECK: %{{.+}}, %{{.+}} = nn.sgd %arg0, %arg1, %arg3, %arg2 {momentum = 9.000000e-01 : f64, nesterov = true, weight_decay = 1.000000e-02 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f64>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
func.func @sgd(%p: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %lr: tensor<f64>) {
  %0 = nn.sgd %p, %g, %lr {momentum = 0.0 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<8xf32>, tensor<8xf32>, tensor<f64>) -> tensor<8xf32>
  %1:2 = nn.sgd %p, %g, %lr, %b {momentum = 0.9 : f64, weight_decay = 0.01 : f64, nesterov = true} : (tensor<8xf32>, tensor<8xf32>, tensor<f64>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Dynamic loss scaling's skip_if: an f32 scalar flag after the operands,
// with or without SGD's momentum buffer.
// CHECK-LABEL: func @skip_if
// CHECK: nn.adamw %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 skip_if(%arg6 : tensor<f32>) {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, weight_decay = 0.000000e+00 : f64} : tensor<8xf32>, tensor<f64>, tensor<i64>
// CHECK: nn.sgd %arg0, %arg1, %arg4 skip_if(%arg6 : tensor<f32>) {momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f64>) -> tensor<8xf32>
// CHECK: nn.sgd %arg0, %arg1, %arg4, %arg2 skip_if(%arg6 : tensor<f32>) {momentum = 9.000000e-01 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f64>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
func.func @skip_if(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f64>, %s: tensor<i64>, %found: tensor<f32>) {
  %0:3 = nn.adamw %p, %g, %m, %v, %lr, %s skip_if(%found : tensor<f32>) {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<f64>, tensor<i64>
  %1 = nn.sgd %p, %g, %lr skip_if(%found : tensor<f32>) {momentum = 0.0 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<8xf32>, tensor<8xf32>, tensor<f64>) -> tensor<8xf32>
  %2:2 = nn.sgd %p, %g, %lr, %m skip_if(%found : tensor<f32>) {momentum = 0.9 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<8xf32>, tensor<8xf32>, tensor<f64>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return
}
