// RUN: fsdp-opt %s -split-input-file -verify-diagnostics

// Verifier and ODS constraint failures of the gradient ops
// (dialects/nn/GradientOps.cpp, NNGradientOps.td): each gradient op is
// checked against the forward op it differentiates, so the forward shape
// rule applied to its result must give the incoming gradient's shape, and
// element types match the forward op's.

// softmax_grad's axis must be inside the rank.
func.func @softmax_grad_axis_too_large(%y: tensor<2x3xf32>, %g: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.softmax_grad' op axis 2 must be in [0, 2)}}
  %0 = nn.softmax_grad %y, %g {axis = 2 : i64} : tensor<2x3xf32>
  return
}

// -----

// Axes are canonical (non-negative), and the message shows the axis as
// written, as the forward softmax's verifier does.
func.func @log_softmax_grad_axis_negative(%y: tensor<2x3xf32>, %g: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.log_softmax_grad' op axis -1 must be in [0, 2)}}
  %0 = nn.log_softmax_grad %y, %g {axis = -1 : i64} : tensor<2x3xf32>
  return
}

// -----

// The forward result, the gradient and the result share one type (only
// the generic form can spell a mismatch).
func.func @softmax_grad_types_differ(%y: tensor<2x3xf32>, %g: tensor<2x3xf16>) {
  // expected-error @+1 {{'nn.softmax_grad' op failed to verify that all of {output, grad, result} have same type}}
  %0 = "nn.softmax_grad"(%y, %g) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x3xf32>
  return
}

// -----

// The same for the activation gradients.
func.func @relu_grad_types_differ(%y: tensor<4xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{'nn.relu_grad' op failed to verify that all of {value, grad, result} have same type}}
  %0 = "nn.relu_grad"(%y, %g) : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  return
}

// -----

// Activation gradients are float-only.
func.func @tanh_grad_int(%y: tensor<4xi32>, %g: tensor<4xi32>) {
  // expected-error @+1 {{'nn.tanh_grad' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = nn.tanh_grad %y, %g : tensor<4xi32>
  return
}

// -----

// layer_norm_grad's axis must be inside the input's rank.
func.func @layer_norm_grad_axis(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %m: tensor<2x1xf32>, %g: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad' op axis 2 must be in [0, 2)}}
  %0:3 = nn.layer_norm_grad %x, %s, %m, %m, %g {axis = 2 : i64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// The scale has exactly the normalized shape (autodiff expands a
// broadcast scale first).
func.func @layer_norm_grad_scale_broadcast(%x: tensor<2x4xf32>, %s: tensor<1x4xf32>, %m: tensor<2x1xf32>, %g: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad' op scale, scale_grad and bias_grad must have the normalized shape [4] and the input's element type}}
  %0:3 = nn.layer_norm_grad %x, %s, %m, %m, %g {axis = 1 : i64} : (tensor<2x4xf32>, tensor<1x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// bias_grad has the normalized shape.
func.func @layer_norm_grad_bias_grad_shape(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %m: tensor<2x1xf32>, %g: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad' op scale, scale_grad and bias_grad must have the normalized shape [4] and the input's element type}}
  %0:3 = nn.layer_norm_grad %x, %s, %m, %m, %g {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>)
  return
}

// -----

// scale_grad has the input's element type.
func.func @layer_norm_grad_scale_grad_type(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %m: tensor<2x1xf32>, %g: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad' op scale, scale_grad and bias_grad must have the normalized shape [4] and the input's element type}}
  %0:3 = nn.layer_norm_grad %x, %s, %m, %m, %g {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xbf16>, tensor<4xf32>)
  return
}

// -----

// The saved statistics keep the normalized dimensions as 1s.
func.func @layer_norm_grad_stats_shape(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %m: tensor<2xf32>, %g: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad' op mean and inv_std_dev must have shape [2, 1]}}
  %0:3 = nn.layer_norm_grad %x, %s, %m, %m, %g {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// The incoming gradient has the input's type.
func.func @layer_norm_grad_grad_type(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %m: tensor<2x1xf32>, %g: tensor<2x4xf16>) {
  // expected-error @+1 {{'nn.layer_norm_grad' op grad and input_grad must have the input's type}}
  %0:3 = nn.layer_norm_grad %x, %s, %m, %m, %g {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf16>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// The input gradient has the input's type.
func.func @layer_norm_grad_input_grad_shape(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %m: tensor<2x1xf32>, %g: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad' op grad and input_grad must have the input's type}}
  %0:3 = nn.layer_norm_grad %x, %s, %m, %m, %g {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32>) -> (tensor<4x2xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// The scattered result has the gradient's element type.
func.func @gather_grad_element_type(%i: tensor<3xi64>, %g: tensor<3x4xf32>) {
  // expected-error @+1 {{'nn.gather_grad' op result must have the gradient's element type}}
  %0 = nn.gather_grad %i, %g {axis = 0 : i64} : (tensor<3xi64>, tensor<3x4xf32>) -> tensor<10x4xf16>
  return
}

// -----

// The axis must be inside the result's (the gathered data's) rank.
func.func @gather_grad_axis(%i: tensor<3xi64>, %g: tensor<3x4xf32>) {
  // expected-error @+1 {{'nn.gather_grad' op axis 2 is out of range for rank 2}}
  %0 = nn.gather_grad %i, %g {axis = 2 : i64} : (tensor<3xi64>, tensor<3x4xf32>) -> tensor<10x4xf32>
  return
}

// -----

// Gathering the result's shape with the indices must give the gradient's
// shape.
func.func @gather_grad_shape(%i: tensor<3xi64>, %g: tensor<3x5xf32>) {
  // expected-error @+1 {{'nn.gather_grad' op gathering [10, 4] gives [3, 4], not the gradient's [3, 5]}}
  %0 = nn.gather_grad %i, %g {axis = 0 : i64} : (tensor<3xi64>, tensor<3x5xf32>) -> tensor<10x4xf32>
  return
}

// -----

// Indices are i32 or i64.
func.func @gather_grad_float_indices(%i: tensor<3xf32>, %g: tensor<3x4xf32>) {
  // expected-error @+1 {{'nn.gather_grad' op operand #0 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xf32>'}}
  %0 = nn.gather_grad %i, %g {axis = 0 : i64} : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<10x4xf32>
  return
}

// -----

// starts, ends and steps have one entry per dimension of the result.
func.func @slice_grad_entries(%g: tensor<2x2xf32>) {
  // expected-error @+1 {{'nn.slice_grad' op starts, ends and steps need one entry per dimension (2)}}
  %0 = nn.slice_grad %g {starts = array<i64: 0>, ends = array<i64: 2, 2>, steps = array<i64: 1, 1>} : tensor<2x2xf32> to tensor<2x6xf32>
  return
}

// -----

// A zero step is no slice.
func.func @slice_grad_zero_step(%g: tensor<2x2xf32>) {
  // expected-error @+1 {{'nn.slice_grad' op dimension 1 (size 6): start 0, end 2, step 0 are not a clamped slice}}
  %0 = nn.slice_grad %g {starts = array<i64: 0, 0>, ends = array<i64: 2, 2>, steps = array<i64: 1, 0>} : tensor<2x2xf32> to tensor<2x6xf32>
  return
}

// -----

// Slicing the result's shape must give the gradient's shape (here the
// negative-step slice has 2 columns, not 3).
func.func @slice_grad_shape(%g: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.slice_grad' op slicing [2, 6] gives [2, 2], not the gradient's [2, 3]}}
  %0 = nn.slice_grad %g {starts = array<i64: 0, 5>, ends = array<i64: 2, 1>, steps = array<i64: 1, -2>} : tensor<2x3xf32> to tensor<2x6xf32>
  return
}

// -----

// The result has the gradient's element type.
func.func @slice_grad_element_type(%g: tensor<2x2xf32>) {
  // expected-error @+1 {{'nn.slice_grad' op requires the same element type for all operands and results}}
  %0 = nn.slice_grad %g {starts = array<i64: 0, 0>, ends = array<i64: 2, 2>, steps = array<i64: 1, 1>} : tensor<2x2xf32> to tensor<2x6xf16>
  return
}

// -----

// softmax_cross_entropy_grad's result has log_prob's type.
func.func @sce_grad_result_type(%lg: tensor<f32>, %lp: tensor<4x5xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op result must have log_prob's type}}
  %0 = nn.softmax_cross_entropy_grad %lg, %lp, %l {reduction = "mean"} : (tensor<f32>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x6xf32>
  return
}

// -----

// loss_grad has the scores' element type.
func.func @sce_grad_loss_grad_type(%lg: tensor<f16>, %lp: tensor<4x5xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op loss_grad, weights and result must share the scores' element type}}
  %0 = nn.softmax_cross_entropy_grad %lg, %lp, %l {reduction = "mean"} : (tensor<f16>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x5xf32>
  return
}

// -----

// Class weights have the scores' element type.
func.func @sce_grad_weights_type(%lg: tensor<f32>, %lp: tensor<4x5xf32>, %l: tensor<4xi64>, %w: tensor<5xf16>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op loss_grad, weights and result must share the scores' element type}}
  %0 = nn.softmax_cross_entropy_grad %lg, %lp, %l, %w {reduction = "mean"} : (tensor<f32>, tensor<4x5xf32>, tensor<4xi64>, tensor<5xf16>) -> tensor<4x5xf32>
  return
}

// -----

// With mean reduction the loss, and so its gradient, is a scalar.
func.func @sce_grad_loss_grad_shape(%lg: tensor<4xf32>, %lp: tensor<4x5xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op result shape [4] does not match the expected []}}
  %0 = nn.softmax_cross_entropy_grad %lg, %lp, %l {reduction = "mean"} : (tensor<4xf32>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x5xf32>
  return
}

// -----

// With reduction none the loss gradient is shaped like the labels.
func.func @sce_grad_none_shape(%lg: tensor<f32>, %lp: tensor<4x5xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op result shape [] does not match the expected [4]}}
  %0 = nn.softmax_cross_entropy_grad %lg, %lp, %l {reduction = "none"} : (tensor<f32>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x5xf32>
  return
}

// -----

// The labels have the scores' shape without the class dimension.
func.func @sce_grad_labels_shape(%lg: tensor<f32>, %lp: tensor<4x5xf32>, %l: tensor<3xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op labels have shape [3], expected [4] for scores [4, 5]}}
  %0 = nn.softmax_cross_entropy_grad %lg, %lp, %l {reduction = "mean"} : (tensor<f32>, tensor<4x5xf32>, tensor<3xi64>) -> tensor<4x5xf32>
  return
}

// -----

// The reduction is one of the forward op's.
func.func @sce_grad_reduction(%lg: tensor<f32>, %lp: tensor<4x5xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op reduction must be one of none, sum, mean; got 'avg'}}
  %0 = nn.softmax_cross_entropy_grad %lg, %lp, %l {reduction = "avg"} : (tensor<f32>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x5xf32>
  return
}

// -----

// nll_loss_grad's class weights have one entry per class.
func.func @nll_grad_weights_shape(%lg: tensor<f32>, %t: tensor<4xi64>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'nn.nll_loss_grad' op weights must be [C] = [5], got [4]}}
  %0 = nn.nll_loss_grad %lg, %t, %w {reduction = "mean"} : (tensor<f32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x5xf32>
  return
}

// -----

// loss_grad has the scores' (the result's) element type.
func.func @nll_grad_loss_grad_type(%lg: tensor<f64>, %t: tensor<4xi64>) {
  // expected-error @+1 {{'nn.nll_loss_grad' op loss_grad, weights and result must share the scores' element type}}
  %0 = nn.nll_loss_grad %lg, %t {reduction = "sum"} : (tensor<f64>, tensor<4xi64>) -> tensor<4x5xf32>
  return
}

// -----

// The result (the forward input) is [N, C, d...].
func.func @nll_grad_rank1_scores(%lg: tensor<f32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{'nn.nll_loss_grad' op scores must be [N, C, d...], got [5]}}
  %0 = nn.nll_loss_grad %lg, %t {reduction = "sum"} : (tensor<f32>, tensor<4xi64>) -> tensor<5xf32>
  return
}

// -----

// With reduction none the loss gradient is shaped like the target.
func.func @nll_grad_none_shape(%lg: tensor<f32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{'nn.nll_loss_grad' op result shape [] does not match the expected [4]}}
  %0 = nn.nll_loss_grad %lg, %t {reduction = "none"} : (tensor<f32>, tensor<4xi64>) -> tensor<4x5xf32>
  return
}

// -----

// reduce_max_grad's result has the input's type.
func.func @reduce_max_grad_result_type(%x: tensor<2x3xf32>, %o: tensor<2x1xf32>) {
  // expected-error @+1 {{'nn.reduce_max_grad' op result must have the input's type}}
  %0 = nn.reduce_max_grad %x, %o, %o {axes = array<i64: 1>} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<3x2xf32>
  return
}

// -----

// The axes must be valid for the input.
func.func @reduce_max_grad_axes(%x: tensor<2x3xf32>, %o: tensor<2x1xf32>) {
  // expected-error @+1 {{'nn.reduce_max_grad' op axes [2] must be sorted, unique and in [0, 2)}}
  %0 = nn.reduce_max_grad %x, %o, %o {axes = array<i64: 2>} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return
}

// -----

// The forward output and the gradient are given in kept-dims form.
func.func @reduce_max_grad_not_kept(%x: tensor<2x3xf32>, %o: tensor<2xf32>) {
  // expected-error @+1 {{'nn.reduce_max_grad' op output and grad must have the kept-dims shape [2, 1]}}
  %0 = nn.reduce_max_grad %x, %o, %o {axes = array<i64: 1>} : (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

// The forward output and the gradient have the input's element type.
func.func @reduce_max_grad_element_type(%x: tensor<2x3xf32>, %o: tensor<2x1xf32>, %g: tensor<2x1xf16>) {
  // expected-error @+1 {{'nn.reduce_max_grad' op output and grad must have the input's element type}}
  %0 = nn.reduce_max_grad %x, %o, %g {axes = array<i64: 1>} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf16>) -> tensor<2x3xf32>
  return
}

// -----

// dropout_grad's mask has the gradient's shape.
func.func @dropout_grad_mask_shape(%g: tensor<2x3xf32>, %m: tensor<3xi1>) {
  // expected-error @+1 {{'nn.dropout_grad' op mask must have the gradient's shape}}
  %0 = nn.dropout_grad %g, %m {ratio = 0.5 : f32} : tensor<2x3xf32>, tensor<3xi1>
  return
}

// -----

// The ratio is in [0, 1) (1 would divide by zero).
func.func @dropout_grad_ratio_one(%g: tensor<2x3xf32>, %m: tensor<2x3xi1>) {
  // expected-error @+1 {{'nn.dropout_grad' op ratio must be in [0, 1)}}
  %0 = nn.dropout_grad %g, %m {ratio = 1.0 : f32} : tensor<2x3xf32>, tensor<2x3xi1>
  return
}

// -----

// A negative ratio is refused too.
func.func @dropout_grad_ratio_negative(%g: tensor<2x3xf32>, %m: tensor<2x3xi1>) {
  // expected-error @+1 {{'nn.dropout_grad' op ratio must be in [0, 1)}}
  %0 = nn.dropout_grad %g, %m {ratio = -0.1 : f32} : tensor<2x3xf32>, tensor<2x3xi1>
  return
}

// -----

// The mask is bool.
func.func @dropout_grad_mask_type(%g: tensor<2x3xf32>, %m: tensor<2x3xi8>) {
  // expected-error @+1 {{'nn.dropout_grad' op operand #1 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<2x3xi8>'}}
  %0 = nn.dropout_grad %g, %m {ratio = 0.5 : f32} : tensor<2x3xf32>, tensor<2x3xi8>
  return
}
