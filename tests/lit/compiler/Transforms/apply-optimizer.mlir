// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-apply-optimizer{weight-decay=0.1 no-decay=bias$})' | FileCheck %s --check-prefix=ADAMW
// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-apply-optimizer{optimizer=sgd})' | FileCheck %s --check-prefix=SGD
// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-apply-optimizer{optimizer=sgd momentum=0.9 nesterov=true weight-decay=0.01})' | FileCheck %s --check-prefix=MOM
// RUN: not fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-apply-optimizer{optimizer=adam})' 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-apply-optimizer{no-decay=a(})' 2>&1 | FileCheck %s --check-prefix=BADRE
// RUN: not fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-apply-optimizer{optimizer=sgd nesterov=true})' 2>&1 | FileCheck %s --check-prefix=NESTEROV

// fsdp-apply-optimizer (compiler/Transforms/ApplyOptimizer.cpp) appends one
// update op per parameter that has a gradient, after the whole backward
// pass. AdamW (first RUN line) adds exp_avg and exp_avg_sq state arguments
// per parameter, an f64 nn.lr and an i64 nn.step argument; SGD without
// momentum (second) adds only nn.lr; SGD with momentum (third) adds one
// momentum_buffer per parameter and nn.lr. The results become the loss,
// the new parameters and the new state, each marked nn.update with the
// name of what it replaces. A parameter without a gradient gets no state
// and no update. --no-decay exempts matching parameters from weight decay.

// A linear layer (weight and bias with gradients) and an unused parameter.
// ADAMW-LABEL: module @linear
// ADAMW: func.func @train_step(
// ADAMW-SAME: %[[FC_WEIGHT:[a-z0-9]+]]: tensor<4x3xf32> {nn.param = "fc.weight"},
// ADAMW-SAME: %[[FC_BIAS:[a-z0-9]+]]: tensor<3xf32> {nn.param = "fc.bias"},
// ADAMW-SAME: %[[UNUSED:[a-z0-9]+]]: tensor<3xf32> {nn.param = "unused"},
// ADAMW-SAME: %[[X:[a-z0-9]+]]: tensor<2x4xf32> {nn.input = "x"},
// ADAMW-SAME: %[[FC_WEIGHT_EXP_AVG:[a-z0-9]+]]: tensor<4x3xf32> {nn.state = "fc.weight.exp_avg"},
// ADAMW-SAME: %[[FC_WEIGHT_EXP_AVG_SQ:[a-z0-9]+]]: tensor<4x3xf32> {nn.state = "fc.weight.exp_avg_sq"},
// ADAMW-SAME: %[[FC_BIAS_EXP_AVG:[a-z0-9]+]]: tensor<3xf32> {nn.state = "fc.bias.exp_avg"},
// ADAMW-SAME: %[[FC_BIAS_EXP_AVG_SQ:[a-z0-9]+]]: tensor<3xf32> {nn.state = "fc.bias.exp_avg_sq"},
// ADAMW-SAME: %[[LR:[a-z0-9]+]]: tensor<f64> {nn.lr},
// ADAMW-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {nn.step}) -> (tensor<f32> {nn.output = "loss"}, tensor<4x3xf32> {nn.update = "fc.weight"}, tensor<3xf32> {nn.update = "fc.bias"}, tensor<4x3xf32> {nn.update = "fc.weight.exp_avg"}, tensor<4x3xf32> {nn.update = "fc.weight.exp_avg_sq"}, tensor<3xf32> {nn.update = "fc.bias.exp_avg"}, tensor<3xf32> {nn.update = "fc.bias.exp_avg_sq"})
// ADAMW-NEXT: %[[MATMUL:[0-9]+]] = nn.matmul %[[X]], %[[FC_WEIGHT]]
// ADAMW-SAME: : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
// ADAMW-NEXT: %[[ADD:[0-9]+]] = nn.add %[[MATMUL]], %[[FC_BIAS]]
// ADAMW-SAME: : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// ADAMW-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[ADD]] {axes = array<i64: 0, 1>, keepdims = false}
// ADAMW-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// ADAMW-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[FC_WEIGHT]], %[[FC_WEIGHT]]
// ADAMW-SAME: : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// ADAMW-NEXT: %[[NEG:[0-9]+]] = nn.neg %[[FC_BIAS]]
// ADAMW-SAME: : tensor<3xf32>
// ADAMW-NEXT: %[[NEW_PARAM:[a-z_0-9]+]], %[[NEW_EXP_AVG:[a-z_0-9]+]], %[[NEW_EXP_AVG_SQ:[a-z_0-9]+]] = nn.adamw %[[FC_WEIGHT]], %[[MUL]], %[[FC_WEIGHT_EXP_AVG]], %[[FC_WEIGHT_EXP_AVG_SQ]], %[[LR]], %[[STEP]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64}
// ADAMW-SAME: : tensor<4x3xf32>, tensor<f64>, tensor<i64>
// ADAMW-NEXT: %[[NEW_PARAM_0:[a-z_0-9]+]], %[[NEW_EXP_AVG_1:[a-z_0-9]+]], %[[NEW_EXP_AVG_SQ_2:[a-z_0-9]+]] = nn.adamw %[[FC_BIAS]], %[[NEG]], %[[FC_BIAS_EXP_AVG]], %[[FC_BIAS_EXP_AVG_SQ]], %[[LR]], %[[STEP]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, weight_decay = 0.000000e+00 : f64}
// ADAMW-SAME: : tensor<3xf32>, tensor<f64>, tensor<i64>
// ADAMW-NEXT: return %[[REDUCE_SUM]], %[[NEW_PARAM]], %[[NEW_PARAM_0]], %[[NEW_EXP_AVG]], %[[NEW_EXP_AVG_SQ]], %[[NEW_EXP_AVG_1]], %[[NEW_EXP_AVG_SQ_2]] : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
// SGD-LABEL: module @linear
// SGD: func.func @train_step(
// SGD-SAME: %[[FC_WEIGHT:[a-z0-9]+]]: tensor<4x3xf32> {nn.param = "fc.weight"},
// SGD-SAME: %[[FC_BIAS:[a-z0-9]+]]: tensor<3xf32> {nn.param = "fc.bias"},
// SGD-SAME: %[[UNUSED:[a-z0-9]+]]: tensor<3xf32> {nn.param = "unused"},
// SGD-SAME: %[[X:[a-z0-9]+]]: tensor<2x4xf32> {nn.input = "x"},
// SGD-SAME: %[[LR:[a-z0-9]+]]: tensor<f64> {nn.lr}) -> (tensor<f32> {nn.output = "loss"}, tensor<4x3xf32> {nn.update = "fc.weight"}, tensor<3xf32> {nn.update = "fc.bias"})
// SGD-NEXT: %[[MATMUL:[0-9]+]] = nn.matmul %[[X]], %[[FC_WEIGHT]]
// SGD-SAME: : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
// SGD-NEXT: %[[ADD:[0-9]+]] = nn.add %[[MATMUL]], %[[FC_BIAS]]
// SGD-SAME: : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// SGD-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[ADD]] {axes = array<i64: 0, 1>, keepdims = false}
// SGD-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// SGD-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[FC_WEIGHT]], %[[FC_WEIGHT]]
// SGD-SAME: : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// SGD-NEXT: %[[NEG:[0-9]+]] = nn.neg %[[FC_BIAS]]
// SGD-SAME: : tensor<3xf32>
// SGD-NEXT: %[[NEW_PARAM:[a-z_0-9]+]] = nn.sgd %[[FC_WEIGHT]], %[[MUL]], %[[LR]] {momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64}
// SGD-SAME: : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<f64>) -> tensor<4x3xf32>
// SGD-NEXT: %[[NEW_PARAM_0:[a-z_0-9]+]] = nn.sgd %[[FC_BIAS]], %[[NEG]], %[[LR]] {momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64}
// SGD-SAME: : (tensor<3xf32>, tensor<3xf32>, tensor<f64>) -> tensor<3xf32>
// SGD-NEXT: return %[[REDUCE_SUM]], %[[NEW_PARAM]], %[[NEW_PARAM_0]] : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>
// MOM-LABEL: module @linear
// MOM: func.func @train_step(
// MOM-SAME: %[[FC_WEIGHT:[a-z0-9]+]]: tensor<4x3xf32> {nn.param = "fc.weight"},
// MOM-SAME: %[[FC_BIAS:[a-z0-9]+]]: tensor<3xf32> {nn.param = "fc.bias"},
// MOM-SAME: %[[UNUSED:[a-z0-9]+]]: tensor<3xf32> {nn.param = "unused"},
// MOM-SAME: %[[X:[a-z0-9]+]]: tensor<2x4xf32> {nn.input = "x"},
// MOM-SAME: %[[FC_WEIGHT_MOMENTUM_BUFFER:[a-z0-9]+]]: tensor<4x3xf32> {nn.state = "fc.weight.momentum_buffer"},
// MOM-SAME: %[[FC_BIAS_MOMENTUM_BUFFER:[a-z0-9]+]]: tensor<3xf32> {nn.state = "fc.bias.momentum_buffer"},
// MOM-SAME: %[[LR:[a-z0-9]+]]: tensor<f64> {nn.lr}) -> (tensor<f32> {nn.output = "loss"}, tensor<4x3xf32> {nn.update = "fc.weight"}, tensor<3xf32> {nn.update = "fc.bias"}, tensor<4x3xf32> {nn.update = "fc.weight.momentum_buffer"}, tensor<3xf32> {nn.update = "fc.bias.momentum_buffer"})
// MOM-NEXT: %[[MATMUL:[0-9]+]] = nn.matmul %[[X]], %[[FC_WEIGHT]]
// MOM-SAME: : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
// MOM-NEXT: %[[ADD:[0-9]+]] = nn.add %[[MATMUL]], %[[FC_BIAS]]
// MOM-SAME: : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// MOM-NEXT: %[[REDUCE_SUM:[0-9]+]] = nn.reduce_sum %[[ADD]] {axes = array<i64: 0, 1>, keepdims = false}
// MOM-SAME: : (tensor<2x3xf32>) -> tensor<f32>
// MOM-NEXT: %[[MUL:[0-9]+]] = nn.mul %[[FC_WEIGHT]], %[[FC_WEIGHT]]
// MOM-SAME: : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// MOM-NEXT: %[[NEG:[0-9]+]] = nn.neg %[[FC_BIAS]]
// MOM-SAME: : tensor<3xf32>
// MOM-NEXT: %[[NEW_PARAM:[a-z_0-9]+]], %[[NEW_MOMENTUM_BUFFER:[a-z_0-9]+]] = nn.sgd %[[FC_WEIGHT]], %[[MUL]], %[[LR]], %[[FC_WEIGHT_MOMENTUM_BUFFER]] {momentum = 9.000000e-01 : f64, nesterov = true, weight_decay = 1.000000e-02 : f64}
// MOM-SAME: : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<f64>, tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>)
// MOM-NEXT: %[[NEW_PARAM_0:[a-z_0-9]+]], %[[NEW_MOMENTUM_BUFFER_1:[a-z_0-9]+]] = nn.sgd %[[FC_BIAS]], %[[NEG]], %[[LR]], %[[FC_BIAS_MOMENTUM_BUFFER]] {momentum = 9.000000e-01 : f64, nesterov = true, weight_decay = 1.000000e-02 : f64}
// MOM-SAME: : (tensor<3xf32>, tensor<3xf32>, tensor<f64>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
// MOM-NEXT: return %[[REDUCE_SUM]], %[[NEW_PARAM]], %[[NEW_PARAM_0]], %[[NEW_MOMENTUM_BUFFER]], %[[NEW_MOMENTUM_BUFFER_1]] : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>, tensor<4x3xf32>, tensor<3xf32>
module @linear {
  func.func @train_step(%w: tensor<4x3xf32> {nn.param = "fc.weight"}, %b: tensor<3xf32> {nn.param = "fc.bias"}, %e: tensor<3xf32> {nn.param = "unused"}, %x: tensor<2x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4x3xf32> {nn.grad = "fc.weight"}, tensor<3xf32> {nn.grad = "fc.bias"}) {
    %0 = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %1 = nn.add %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %loss = nn.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    %gw = nn.mul %w, %w : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %gb = nn.neg %b : tensor<3xf32>
    return %loss, %gw, %gb : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>
  }
}

// -----

// The optimizer is added to the training step: without one (autodiff not
// run yet) the pass refuses.
// expected-error @+1 {{no @train_step to add the optimizer to (run autodiff first)}}
module {
  func.func @forward(%w: tensor<3xf32> {nn.param = "w"}) -> (tensor<3xf32> {nn.output = "y"}) {
    return %w : tensor<3xf32>
  }
}

// -----

// The pass runs once: a step that already has state arguments is refused.
module {
  // expected-error @+1 {{@train_step already has optimizer state}}
  func.func @train_step(%w: tensor<3xf32> {nn.param = "w"}, %m: tensor<3xf32> {nn.state = "w.momentum_buffer"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3xf32> {nn.grad = "w"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
    return %0, %w : tensor<f32>, tensor<3xf32>
  }
}

// -----

// Every result after the loss must be a parameter's gradient.
module {
  // expected-error @+1 {{result 1 is not the gradient of a parameter}}
  func.func @train_step(%w: tensor<3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3xf32> {nn.output = "y"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
    return %0, %w : tensor<f32>, tensor<3xf32>
  }
}

// -----

// A gradient naming no parameter of the step is refused the same way.
module {
  // expected-error @+1 {{result 2 is not the gradient of a parameter}}
  func.func @train_step(%w: tensor<3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<3xf32> {nn.grad = "w"}, tensor<3xf32> {nn.grad = "v"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
    return %0, %w, %w : tensor<f32>, tensor<3xf32>, tensor<3xf32>
  }
}

// Option errors (the last three RUN lines): an unknown optimizer and an
// invalid --no-decay regex are reported by the pass; Nesterov without
// momentum builds an nn.sgd that its verifier refuses.
// BADOPT: error: optimizer must be adamw or sgd, not 'adam'
// BADRE: error: invalid --no-decay regex: parentheses not balanced
// NESTEROV: error: loc("optimizer:fc.weight"): 'nn.sgd' op nesterov needs momentum
