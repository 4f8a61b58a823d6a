// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-attach-loss)' | FileCheck %s

// fsdp-attach-loss without xent (compiler/Autodiff/AttachLoss.cpp, --loss=auto):
// the model's own loss is its one scalar float output, or among several the
// one named "loss"; @forward is left returning only it. A model without a
// usable loss is an error that lists the outputs it does have, so the user
// can write the --loss flag that fixes it.

// One scalar float output among others: it becomes the only result and
// keeps its name; the logits output is dropped from the signature.
// CHECK-LABEL: module @one_scalar
// CHECK: func.func @forward(%{{.+}}: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "mse"}) {
// CHECK-NEXT: %[[SUM:.+]] = nn.reduce_sum
// CHECK-NEXT: return %[[SUM]] : tensor<f32>
module @one_scalar {
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<2x3xf32> {nn.output = "logits"}, tensor<f32> {nn.output = "mse"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %w, %0 : tensor<2x3xf32>, tensor<f32>
  }
}

// -----

// A one-element tensor ([1]) counts as a scalar loss.
// CHECK-LABEL: module @one_element
// CHECK: -> (tensor<1xf32> {nn.output = "l"})
module @one_element {
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<1xf32> {nn.output = "l"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    %1 = nn.reshape %0 : tensor<f32> to tensor<1xf32>
    return %1 : tensor<1xf32>
  }
}

// -----

// Several scalar outputs: the one named "loss" is chosen.
// CHECK-LABEL: module @named_loss
// CHECK: func.func @forward(%{{.+}}: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "loss"}) {
// CHECK-NEXT: nn.reduce_sum
// CHECK-NEXT: %[[MEAN:.+]] = nn.reduce_mean
// CHECK-NEXT: return %[[MEAN]] : tensor<f32>
module @named_loss {
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "total"}, tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    %1 = nn.reduce_mean %w {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %0, %1 : tensor<f32>, tensor<f32>
  }
}

// -----

// Several scalar outputs, none named "loss": ambiguous, so an error listing
// every output with shape and type.
module {
  // expected-error @+1 {{the model has several scalar outputs and none is named 'loss' (outputs: a [] f32, b [] f32, logits [2, 3] f32); choose or attach one with --loss=xent:OUTPUT[,LABELS]}}
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "a"}, tensor<f32> {nn.output = "b"}, tensor<2x3xf32> {nn.output = "logits"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    return %0, %0, %w : tensor<f32>, tensor<f32>, tensor<2x3xf32>
  }
}

// -----

// No scalar float output (logits only, and an integer scalar): the error
// lists the outputs; unnamed results are listed by position.
module {
  // expected-error @+1 {{the model has no scalar float output to train on (outputs: logits [2, 3] f32, result1 [] i64); choose or attach one with --loss=xent:OUTPUT[,LABELS]}}
  func.func @forward(%w: tensor<2x3xf32> {nn.param = "w"}, %n: tensor<i64> {nn.input = "n"}) -> (tensor<2x3xf32> {nn.output = "logits"}, tensor<i64>) {
    return %w, %n : tensor<2x3xf32>, tensor<i64>
  }
}

// -----

// The pass needs a @forward function.
// expected-error @+1 {{no @forward function}}
module {
  func.func @model(%w: tensor<2x3xf32> {nn.param = "w"}) -> tensor<2x3xf32> {
    return %w : tensor<2x3xf32>
  }
}
