// RUN: fsdp-opt %s -split-input-file -verify-diagnostics

// Verifier and ODS constraint failures of nn.adamw and nn.sgd
// (dialects/nn/OptimizerOps.cpp, NNOptimizerOps.td): a parameter, its
// gradient, its state and the new values share one type; hyperparameters
// are in the ranges torch.optim accepts; the learning rate is an f64 and
// the step an i64 scalar.

// AdamW's operands and results share one type (the custom form spells it
// once; the generic form can spell a mismatch).
func.func @adamw_grad_type(%p: tensor<4xf32>, %g: tensor<3xf32>, %lr: tensor<f64>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw' op failed to verify that all of {param, grad, exp_avg, exp_avg_sq, new_param, new_exp_avg, new_exp_avg_sq} have same type}}
  %0:3 = "nn.adamw"(%p, %g, %p, %p, %lr, %s) {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : (tensor<4xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// beta1 is in [0, 1).
func.func @adamw_beta1(%p: tensor<4xf32>, %lr: tensor<f64>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw' op betas must be in [0, 1)}}
  %0:3 = nn.adamw %p, %p, %p, %p, %lr, %s {beta1 = 1.0 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f64>, tensor<i64>
  return
}

// -----

// beta2 is in [0, 1).
func.func @adamw_beta2(%p: tensor<4xf32>, %lr: tensor<f64>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw' op betas must be in [0, 1)}}
  %0:3 = nn.adamw %p, %p, %p, %p, %lr, %s {beta1 = 0.9 : f64, beta2 = -0.5 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f64>, tensor<i64>
  return
}

// -----

// A NaN beta is out of range too.
func.func @adamw_beta_nan(%p: tensor<4xf32>, %lr: tensor<f64>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw' op betas must be in [0, 1)}}
  %0:3 = nn.adamw %p, %p, %p, %p, %lr, %s {beta1 = 0x7FF8000000000000 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f64>, tensor<i64>
  return
}

// -----

// eps is non-negative.
func.func @adamw_eps(%p: tensor<4xf32>, %lr: tensor<f64>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw' op eps and weight_decay must be non-negative}}
  %0:3 = nn.adamw %p, %p, %p, %p, %lr, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = -1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f64>, tensor<i64>
  return
}

// -----

// weight_decay is non-negative.
func.func @adamw_weight_decay(%p: tensor<4xf32>, %lr: tensor<f64>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw' op eps and weight_decay must be non-negative}}
  %0:3 = nn.adamw %p, %p, %p, %p, %lr, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = -0.01 : f64} : tensor<4xf32>, tensor<f64>, tensor<i64>
  return
}

// -----

// The learning rate is an f64 scalar.
func.func @adamw_lr_f32(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw' op operand #4 must be 0D tensor of 64-bit float values, but got 'tensor<f32>'}}
  %0:3 = nn.adamw %p, %p, %p, %p, %lr, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f32>, tensor<i64>
  return
}

// -----

// The step number is an i64 scalar (rank 0).
func.func @adamw_step_rank1(%p: tensor<4xf32>, %lr: tensor<f64>, %s: tensor<1xi64>) {
  // expected-error @+1 {{'nn.adamw' op operand #5 must be 0D tensor of 64-bit signless integer values, but got 'tensor<1xi64>'}}
  %0:3 = nn.adamw %p, %p, %p, %p, %lr, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f64>, tensor<1xi64>
  return
}

// -----

// Parameters are float.
func.func @adamw_int_param(%p: tensor<4xi32>, %lr: tensor<f64>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0:3 = nn.adamw %p, %p, %p, %p, %lr, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xi32>, tensor<f64>, tensor<i64>
  return
}

// -----

// SGD: the gradient has the parameter's type.
func.func @sgd_grad_type(%p: tensor<4xf32>, %g: tensor<4xf16>, %lr: tensor<f64>) {
  // expected-error @+1 {{'nn.sgd' op parameter, gradient, state and results must all have type 'tensor<4xf32>'}}
  %0 = nn.sgd %p, %g, %lr {momentum = 0.0 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<4xf32>, tensor<4xf16>, tensor<f64>) -> tensor<4xf32>
  return
}

// -----

// The new parameter has the parameter's type.
func.func @sgd_result_type(%p: tensor<4xf32>, %lr: tensor<f64>) {
  // expected-error @+1 {{'nn.sgd' op parameter, gradient, state and results must all have type 'tensor<4xf32>'}}
  %0 = nn.sgd %p, %p, %lr {momentum = 0.0 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<2x2xf32>
  return
}

// -----

// The momentum buffer has the parameter's type.
func.func @sgd_buffer_type(%p: tensor<4xf32>, %b: tensor<3xf32>, %lr: tensor<f64>) {
  // expected-error @+1 {{'nn.sgd' op parameter, gradient, state and results must all have type 'tensor<4xf32>'}}
  %0:2 = nn.sgd %p, %p, %lr, %b {momentum = 0.9 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<3xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// A momentum buffer operand needs a new-buffer result.
func.func @sgd_buffer_without_result(%p: tensor<4xf32>, %lr: tensor<f64>) {
  // expected-error @+1 {{'nn.sgd' op a momentum buffer operand needs a momentum buffer result and vice versa}}
  %0 = nn.sgd %p, %p, %lr, %p {momentum = 0.9 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// And a new-buffer result needs a buffer operand.
func.func @sgd_result_without_buffer(%p: tensor<4xf32>, %lr: tensor<f64>) {
  // expected-error @+1 {{'nn.sgd' op a momentum buffer operand needs a momentum buffer result and vice versa}}
  %0:2 = nn.sgd %p, %p, %lr {momentum = 0.9 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// momentum is non-negative.
func.func @sgd_negative_momentum(%p: tensor<4xf32>, %lr: tensor<f64>) {
  // expected-error @+1 {{'nn.sgd' op momentum and weight_decay must be non-negative}}
  %0 = nn.sgd %p, %p, %lr {momentum = -0.9 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return
}

// -----

// weight_decay is non-negative.
func.func @sgd_negative_weight_decay(%p: tensor<4xf32>, %lr: tensor<f64>) {
  // expected-error @+1 {{'nn.sgd' op momentum and weight_decay must be non-negative}}
  %0 = nn.sgd %p, %p, %lr {momentum = 0.0 : f64, weight_decay = -1.0 : f64, nesterov = false} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return
}

// -----

// momentum > 0 needs a buffer.
func.func @sgd_momentum_without_buffer(%p: tensor<4xf32>, %lr: tensor<f64>) {
  // expected-error @+1 {{'nn.sgd' op a momentum buffer is needed exactly when momentum > 0}}
  %0 = nn.sgd %p, %p, %lr {momentum = 0.9 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return
}

// -----

// A buffer with momentum 0 is refused (torch keeps no buffer then).
func.func @sgd_buffer_without_momentum(%p: tensor<4xf32>, %lr: tensor<f64>) {
  // expected-error @+1 {{'nn.sgd' op a momentum buffer is needed exactly when momentum > 0}}
  %0:2 = nn.sgd %p, %p, %lr, %p {momentum = 0.0 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Nesterov needs momentum.
func.func @sgd_nesterov_without_momentum(%p: tensor<4xf32>, %lr: tensor<f64>) {
  // expected-error @+1 {{'nn.sgd' op nesterov needs momentum}}
  %0 = nn.sgd %p, %p, %lr {momentum = 0.0 : f64, weight_decay = 0.0 : f64, nesterov = true} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return
}

// -----

// SGD's learning rate is an f64 scalar as well.
func.func @sgd_lr_f32(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'nn.sgd' op operand #2 must be 0D tensor of 64-bit float values, but got 'tensor<f32>'}}
  %0 = nn.sgd %p, %p, %lr {momentum = 0.0 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// skip_if's flag is an f32 scalar.
func.func @adamw_skip_if_type(%p: tensor<4xf32>, %lr: tensor<f64>, %s: tensor<i64>, %f: tensor<f64>) {
  // expected-error @+1 {{'nn.adamw' op operand #6 must be 0D tensor of 32-bit float values, but got 'tensor<f64>'}}
  %0:3 = nn.adamw %p, %p, %p, %p, %lr, %s skip_if(%f : tensor<f64>) {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f64>, tensor<i64>
  return
}
