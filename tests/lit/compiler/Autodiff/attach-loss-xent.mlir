// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-attach-loss{xent=logits})' | FileCheck %s
// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-attach-loss{xent=logits labels=tgt})' | FileCheck %s --check-prefix=TGT

// fsdp-attach-loss with xent (compiler/Autodiff/AttachLoss.cpp,
// --loss=xent:OUTPUT[,LABELS]): mean softmax cross-entropy of the named
// logits output against an integer labels input, which is the existing
// input of that name or a new i64 input shaped like the logits without the
// class dimension. Logits [..., C] are flattened to [N, C] and labels to
// [N] first. @forward is left returning only the loss, named "loss". The
// first RUN line uses the default labels name "labels", the second
// labels=tgt.

// [2, 3, 5] logits with an existing labels input of each name: the logits
// are reshaped to [6, 5], the labels to [6], and the loss replaces the
// outputs. The default run uses "labels" (i64), the other "tgt" (i32).
// CHECK-LABEL: module @existing_labels
// CHECK: func.func @forward(%[[W:.+]]: tensor<2x3x5xf32> {nn.param = "w"}, %[[LABELS:.+]]: tensor<2x3xi64> {nn.input = "labels"}, %{{.+}}: tensor<2x3xi32> {nn.input = "tgt"}) -> (tensor<f32> {nn.output = "loss"}) {
// CHECK-NEXT: %[[SCORES:.+]] = nn.reshape %[[W]] : tensor<2x3x5xf32> to tensor<6x5xf32>
// CHECK-NEXT: %[[FLAT:.+]] = nn.reshape %[[LABELS]] : tensor<2x3xi64> to tensor<6xi64>
// CHECK-NEXT: %[[LOSS:.+]], %{{.+}} = nn.softmax_cross_entropy %[[SCORES]], %[[FLAT]] {reduction = "mean"} : (tensor<6x5xf32>, tensor<6xi64>) -> (tensor<f32>, tensor<6x5xf32>)
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>
// TGT-LABEL: module @existing_labels
// TGT: func.func @forward(%[[W:.+]]: tensor<2x3x5xf32> {nn.param = "w"}, %{{.+}}: tensor<2x3xi64> {nn.input = "labels"}, %[[TGT:.+]]: tensor<2x3xi32> {nn.input = "tgt"}) -> (tensor<f32> {nn.output = "loss"}) {
// TGT-NEXT: %[[SCORES:.+]] = nn.reshape %[[W]] : tensor<2x3x5xf32> to tensor<6x5xf32>
// TGT-NEXT: %[[FLAT:.+]] = nn.reshape %[[TGT]] : tensor<2x3xi32> to tensor<6xi32>
// TGT-NEXT: %[[LOSS:.+]], %{{.+}} = nn.softmax_cross_entropy %[[SCORES]], %[[FLAT]] {reduction = "mean"} : (tensor<6x5xf32>, tensor<6xi32>) -> (tensor<f32>, tensor<6x5xf32>)
// TGT-NEXT: return %[[LOSS]] : tensor<f32>
module @existing_labels {
  func.func @forward(%w: tensor<2x3x5xf32> {nn.param = "w"}, %l: tensor<2x3xi64> {nn.input = "labels"}, %t: tensor<2x3xi32> {nn.input = "tgt"}) -> (tensor<2x3x5xf32> {nn.output = "logits"}) {
    return %w : tensor<2x3x5xf32>
  }
}

// -----

// 2-D logits and no labels input: a new i64 [4] input is appended under the
// labels name; nothing needs reshaping. Other outputs are dropped from the
// signature (their ops stay until autodiff erases dead code).
// CHECK-LABEL: module @new_labels
// CHECK: func.func @forward(%[[X:.+]]: tensor<4x3xf32> {nn.input = "x"}, %[[W:.+]]: tensor<3x5xf32> {nn.param = "w"}, %[[LABELS:.+]]: tensor<4xi64> {nn.input = "labels"}) -> (tensor<f32> {nn.output = "loss"}) {
// CHECK-NEXT: %[[LOGITS:.+]] = nn.matmul %[[X]], %[[W]]
// CHECK-NEXT: nn.reduce_sum %[[W]]
// CHECK-NEXT: %[[LOSS:.+]], %{{.+}} = nn.softmax_cross_entropy %[[LOGITS]], %[[LABELS]] {reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>
// TGT-LABEL: module @new_labels
// TGT: func.func @forward(%{{.+}}: tensor<4x3xf32> {nn.input = "x"}, %{{.+}}: tensor<3x5xf32> {nn.param = "w"}, %[[TGT:.+]]: tensor<4xi64> {nn.input = "tgt"}) -> (tensor<f32> {nn.output = "loss"}) {
// TGT: nn.softmax_cross_entropy %{{.+}}, %[[TGT]] {reduction = "mean"}
module @new_labels {
  func.func @forward(%x: tensor<4x3xf32> {nn.input = "x"}, %w: tensor<3x5xf32> {nn.param = "w"}) -> (tensor<f32> {nn.output = "aux"}, tensor<4x5xf32> {nn.output = "logits"}) {
    %0 = nn.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    %1 = nn.reduce_sum %w {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x5xf32>) -> tensor<f32>
    return %1, %0 : tensor<f32>, tensor<4x5xf32>
  }
}

// -----

// A labels input whose shape does not match the logits without their class
// dimension is refused (both RUN lines: "labels" and "tgt" are both wrong).
module {
  // expected-error @+1 {{must be i32 or i64 [2, 3] to match logits [2, 3, 5], not [6] 'i64'}}
  func.func @forward(%w: tensor<2x3x5xf32> {nn.param = "w"}, %l: tensor<6xi64> {nn.input = "labels"}, %t: tensor<6xi64> {nn.input = "tgt"}) -> (tensor<2x3x5xf32> {nn.output = "logits"}) {
    return %w : tensor<2x3x5xf32>
  }
}

// -----

// Labels must be integers (i32 or i64).
module {
  // expected-error @+1 {{must be i32 or i64 [4] to match logits [4, 5], not [4] 'f32'}}
  func.func @forward(%w: tensor<4x5xf32> {nn.param = "w"}, %l: tensor<4xf32> {nn.input = "labels"}, %t: tensor<4xf32> {nn.input = "tgt"}) -> (tensor<4x5xf32> {nn.output = "logits"}) {
    return %w : tensor<4x5xf32>
  }
}

// -----

// The named output must exist; the error lists the outputs there are.
module {
  // expected-error @+1 {{--loss=xent: the model has no output 'logits' (outputs: y [4, 5] f32, loss [] f32)}}
  func.func @forward(%w: tensor<4x5xf32> {nn.param = "w"}) -> (tensor<4x5xf32> {nn.output = "y"}, tensor<f32> {nn.output = "loss"}) {
    %0 = nn.reduce_sum %w {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<f32>
    return %w, %0 : tensor<4x5xf32>, tensor<f32>
  }
}

// -----

// The named output must be float logits of rank >= 2.
module {
  // expected-error @+1 {{--loss=xent: output 'logits' must be float logits [..., classes], not [5] 'f32'}}
  func.func @forward(%w: tensor<5xf32> {nn.param = "w"}) -> (tensor<5xf32> {nn.output = "logits"}) {
    return %w : tensor<5xf32>
  }
}

// -----

// Integer "logits" are refused the same way.
module {
  // expected-error @+1 {{--loss=xent: output 'logits' must be float logits [..., classes], not [4, 5] 'i32'}}
  func.func @forward(%w: tensor<4x5xf32> {nn.param = "w"}, %x: tensor<4x5xi32> {nn.input = "x"}) -> (tensor<4x5xi32> {nn.output = "logits"}) {
    return %x : tensor<4x5xi32>
  }
}
