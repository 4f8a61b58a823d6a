// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-build-train-step{freeze=^frozen\.})'
// RUN: not fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-build-train-step{freeze=a(})' 2>&1 | FileCheck %s --check-prefix=REGEX

// What reverse-mode autodiff (compiler/Autodiff/BuildTrainStep.cpp) and the
// gradient rules refuse: each error names the op or function and the
// reason, and no half-built @train_step is left behind. The whole file runs
// with --freeze=^frozen\. (only the case naming such parameters is
// affected).

// The loss must depend on a trainable parameter.
module {
  // expected-error @+1 {{the loss does not depend on any trainable parameter}}
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}, %x: tensor<4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// A loss reached from a parameter only through integers does not depend on
// it (the cast to int stops the gradient).
module {
  // expected-error @+1 {{the loss does not depend on any trainable parameter}}
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.cast %w : tensor<4xf32> to tensor<4xi32>
    %1 = nn.cast %0 : tensor<4xi32> to tensor<4xf32>
    %2 = nn.reduce_sum %1 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// Layer norm's mean and inv_std_dev are statistics for the backward pass:
// a loss that uses them is refused rather than given a wrong gradient.
module {
  func.func @forward(%x: tensor<2x4xf32> {nn.param = "x"}, %s: tensor<4xf32> {nn.param = "s"}) -> (tensor<f32> {nn.output = "loss"}) {
    // expected-error @+1 {{'nn.layer_norm' op differentiating through layer_norm's mean or inv_std_dev output is not supported}}
    %y, %mean, %inv = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
    %0 = nn.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
    %1 = nn.reduce_sum %mean {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x1xf32>) -> tensor<f32>
    %2 = nn.add %0, %1 : (tensor<f32>, tensor<f32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// The same for inv_std_dev alone.
module {
  func.func @forward(%x: tensor<2x4xf32> {nn.param = "x"}, %s: tensor<4xf32> {nn.param = "s"}) -> (tensor<f32> {nn.output = "loss"}) {
    // expected-error @+1 {{'nn.layer_norm' op differentiating through layer_norm's mean or inv_std_dev output is not supported}}
    %y, %mean, %inv = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
    %0 = nn.reduce_sum %inv {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x1xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// An op without a gradient rule on the path from a parameter to the loss
// (a backward-only op used in a forward function).
module {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}, %g: tensor<4xf32> {nn.input = "g"}) -> (tensor<f32> {nn.output = "loss"}) {
    // expected-error @+1 {{'nn.relu_grad' op has no gradient rule, but the loss depends on a parameter through it}}
    %0 = nn.relu_grad %w, %g : tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// A call is not differentiated through (autodiff works on one function).
module {
  func.func private @helper(tensor<4xf32>) -> tensor<4xf32>
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    // expected-error @+1 {{'func.call' op has no gradient rule, but the loss depends on a parameter through it}}
    %0 = func.call @helper(%w) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// --freeze matching every float parameter leaves nothing to train.
module {
  // expected-error @+1 {{the model has no trainable parameters (--freeze matched every float parameter)}}
  func.func @forward(%a: tensor<4xf32> {nn.param = "frozen.a"}, %b: tensor<4xf32> {nn.param = "frozen.b"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.mul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = nn.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// A model whose only parameters are integers has nothing to train either.
module {
  // expected-error @+1 {{the model has no trainable parameters}}
  func.func @forward(%n: tensor<4xi64> {nn.param = "count"}, %x: tensor<4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// Autodiff runs after the loss is chosen: @forward must return only it.
module {
  // expected-error @+1 {{autodiff needs a forward function returning only the loss}}
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}, tensor<4xf32> {nn.output = "y"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %0, %w : tensor<f32>, tensor<4xf32>
  }
}

// -----

// There must be a @forward to differentiate.
// expected-error @+1 {{no @forward function to differentiate}}
module {
  func.func @model(%w: tensor<4xf32> {nn.param = "w"}) -> tensor<4xf32> {
    return %w : tensor<4xf32>
  }
}

// -----

// A declaration is not a forward function either.
// expected-error @+1 {{no @forward function to differentiate}}
module {
  func.func private @forward(tensor<4xf32>) -> tensor<f32>
}

// -----

// The pass runs once: a module that already has a @train_step is refused.
// expected-error @+1 {{the module already has a @train_step}}
module {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @train_step() {
    return
  }
}

// -----

// The forward function must be one block (straight-line code).
module {
  // expected-error @+1 {{autodiff needs a single-block function}}
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  ^unreachable:
    return %0 : tensor<f32>
  }
}

// -----

// An invalid --freeze regex is reported with the regex library's reason
// (second RUN line).
// REGEX: error: invalid --freeze regex: parentheses not balanced
module {
  func.func @forward(%w: tensor<4xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// Class weights of a loss get no gradient (as in torch); a trainable
// parameter flowing into them is an error, not a silent zero gradient.
module {
  func.func @forward(%scores: tensor<5x4xf32> {nn.param = "scores"},
                     %weights: tensor<4xf32> {nn.param = "class_weights"},
                     %labels: tensor<5xi64> {nn.input = "labels"}) -> (tensor<f32> {nn.output = "loss"}) {
    // expected-error @+1 {{'nn.softmax_cross_entropy' op has no gradient for operand #2, which depends on a trainable parameter; freeze that parameter with --freeze=REGEX}}
    %loss, %lp = nn.softmax_cross_entropy %scores, %labels, %weights {reduction = "mean"} : (tensor<5x4xf32>, tensor<5xi64>, tensor<4xf32>) -> (tensor<f32>, tensor<5x4xf32>)
    return %loss : tensor<f32>
  }
}
