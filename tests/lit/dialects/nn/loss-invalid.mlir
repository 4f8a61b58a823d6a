// RUN: fsdp-opt %s -split-input-file -verify-diagnostics

// Verifier and ODS constraint failures of nn.softmax_cross_entropy and
// nn.nll_loss (dialects/nn/LossOps.cpp, classificationLossShape in
// ShapeRules.cpp): reduction is none/sum/mean, scores are [N, C, d...],
// labels [N, d...], weights [C], the loss is [N, d...] for "none" and a
// scalar otherwise, and types follow the scores.

// reduction must be one of ONNX's three strings.
func.func @sce_bad_reduction(%s: tensor<8x10xf32>, %l: tensor<8xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op reduction must be one of none, sum, mean; got 'avg'}}
  %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "avg"} : (tensor<8x10xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf32>)
  return
}

// -----

// reduction is case-sensitive, as in ONNX.
func.func @nll_bad_reduction(%x: tensor<8x10xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'nn.nll_loss' op reduction must be one of none, sum, mean; got 'Mean'}}
  %0 = nn.nll_loss %x, %t {reduction = "Mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

// reduction is required (ONNX's default "mean" is filled in at import).
func.func @nll_missing_reduction(%x: tensor<8x10xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'nn.nll_loss' op requires attribute 'reduction'}}
  %0 = nn.nll_loss %x, %t : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

// reduction is a string attribute.
func.func @sce_reduction_not_string(%s: tensor<8x10xf32>, %l: tensor<8xi64>) {
  // expected-error @+1 {{attribute 'reduction' failed to satisfy constraint: string attribute}}
  %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = 1 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf32>)
  return
}

// -----

// ignore_index is a 64-bit integer attribute.
func.func @nll_ignore_index_type(%x: tensor<8x10xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{attribute 'ignore_index' failed to satisfy constraint: 64-bit signless integer attribute}}
  %0 = nn.nll_loss %x, %t {reduction = "mean", ignore_index = 1.0 : f32} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

// Scores need at least the batch and class dimensions.
func.func @sce_scores_rank1(%s: tensor<10xf32>, %l: tensor<i64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op scores must be [N, C, d...], got [10]}}
  %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "mean"} : (tensor<10xf32>, tensor<i64>) -> (tensor<f32>, tensor<10xf32>)
  return
}

// -----

// nll_loss's input needs [N, C] as well.
func.func @nll_input_rank0(%x: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'nn.nll_loss' op scores must be [N, C, d...], got []}}
  %0 = nn.nll_loss %x, %t {reduction = "sum"} : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

// Labels are [N]: a different batch size is rejected.
func.func @sce_labels_batch(%s: tensor<8x10xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op labels have shape [4], expected [8] for scores [8, 10]}}
  %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "mean"} : (tensor<8x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<8x10xf32>)
  return
}

// -----

// Labels carry the spatial dimensions of [N, C, d1]: [N] alone is wrong.
func.func @nll_labels_missing_spatial(%x: tensor<4x50x16xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{'nn.nll_loss' op labels have shape [4], expected [4, 16] for scores [4, 50, 16]}}
  %0 = nn.nll_loss %x, %t {reduction = "mean"} : (tensor<4x50x16xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

// Labels have no class dimension (one-hot labels are not ONNX's form).
func.func @sce_labels_one_hot(%s: tensor<8x10xf32>, %l: tensor<8x10xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op labels have shape [8, 10], expected [8] for scores [8, 10]}}
  %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "sum"} : (tensor<8x10xf32>, tensor<8x10xi64>) -> (tensor<f32>, tensor<8x10xf32>)
  return
}

// -----

// Weights are one per class: [C].
func.func @sce_weights_shape(%s: tensor<8x10xf32>, %l: tensor<8xi64>, %w: tensor<5xf32>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op weights must be [C] = [10], got [5]}}
  %loss, %lp = nn.softmax_cross_entropy %s, %l, %w {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>, tensor<5xf32>) -> (tensor<f32>, tensor<8x10xf32>)
  return
}

// -----

// Weights are 1-D: [1, C] is rejected.
func.func @nll_weights_rank2(%x: tensor<8x10xf32>, %t: tensor<8xi64>, %w: tensor<1x10xf32>) {
  // expected-error @+1 {{'nn.nll_loss' op weights must be [C] = [10], got [1, 10]}}
  %0 = nn.nll_loss %x, %t, %w {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>, tensor<1x10xf32>) -> tensor<f32>
  return
}

// -----

// Weights have the scores' element type.
func.func @sce_weights_type(%s: tensor<8x10xf32>, %l: tensor<8xi64>, %w: tensor<10xf16>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op weights must have the scores' element type}}
  %loss, %lp = nn.softmax_cross_entropy %s, %l, %w {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>, tensor<10xf16>) -> (tensor<f32>, tensor<8x10xf32>)
  return
}

// -----

// nll_loss's weight has the input's element type.
func.func @nll_weight_type(%x: tensor<8x10xf16>, %t: tensor<8xi64>, %w: tensor<10xf32>) {
  // expected-error @+1 {{'nn.nll_loss' op weights must have the scores' element type}}
  %0 = nn.nll_loss %x, %t, %w {reduction = "mean"} : (tensor<8x10xf16>, tensor<8xi64>, tensor<10xf32>) -> tensor<f16>
  return
}

// -----

// The loss has the scores' element type.
func.func @sce_loss_type(%s: tensor<8x10xf16>, %l: tensor<8xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op loss must have the scores' element type}}
  %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "mean"} : (tensor<8x10xf16>, tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf16>)
  return
}

// -----

// nll_loss's loss has the input's element type.
func.func @nll_loss_type(%x: tensor<8x10xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'nn.nll_loss' op loss must have the scores' element type}}
  %0 = nn.nll_loss %x, %t {reduction = "sum"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f64>
  return
}

// -----

// The log-probabilities have exactly the scores' type: element type.
func.func @sce_log_prob_element_type(%s: tensor<8x10xf32>, %l: tensor<8xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op log_prob must have the scores' type}}
  %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf16>)
  return
}

// -----

// The log-probabilities have exactly the scores' type: shape.
func.func @sce_log_prob_shape(%s: tensor<8x10xf32>, %l: tensor<8xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op log_prob must have the scores' type}}
  %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8xf32>)
  return
}

// -----

// "mean" (and "sum") reduce to a rank-0 loss.
func.func @sce_mean_loss_shape(%s: tensor<8x10xf32>, %l: tensor<8xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op result shape [8] does not match the expected []}}
  %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> (tensor<8xf32>, tensor<8x10xf32>)
  return
}

// -----

// "sum" gives a rank-0 loss, not [1].
func.func @nll_sum_loss_shape(%x: tensor<8x10xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'nn.nll_loss' op result shape [1] does not match the expected []}}
  %0 = nn.nll_loss %x, %t {reduction = "sum"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<1xf32>
  return
}

// -----

// "none" keeps the per-label loss, shaped like the labels.
func.func @nll_none_loss_shape(%x: tensor<4x50x16xf32>, %t: tensor<4x16xi64>) {
  // expected-error @+1 {{'nn.nll_loss' op result shape [] does not match the expected [4, 16]}}
  %0 = nn.nll_loss %x, %t {reduction = "none"} : (tensor<4x50x16xf32>, tensor<4x16xi64>) -> tensor<f32>
  return
}

// -----

// Labels are integer class indices (i32 or i64), not floats.
func.func @sce_float_labels(%s: tensor<8x10xf32>, %l: tensor<8xf32>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<8xf32>'}}
  %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xf32>) -> (tensor<f32>, tensor<8x10xf32>)
  return
}

// -----

// Labels of other integer widths (here i16) are not index types.
func.func @nll_i16_targets(%x: tensor<8x10xf32>, %t: tensor<8xi16>) {
  // expected-error @+1 {{'nn.nll_loss' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<8xi16>'}}
  %0 = nn.nll_loss %x, %t {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi16>) -> tensor<f32>
  return
}

// -----

// Scores are float-only.
func.func @sce_integer_scores(%s: tensor<8x10xi32>, %l: tensor<8xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "mean"} : (tensor<8x10xi32>, tensor<8xi64>) -> (tensor<i32>, tensor<8x10xi32>)
  return
}

// -----

// Weights are float-only.
func.func @nll_integer_weight(%x: tensor<8x10xf32>, %t: tensor<8xi64>, %w: tensor<10xi64>) {
  // expected-error @+1 {{'nn.nll_loss' op operand #2 must be statically shaped tensor of 16-bit float}}
  %0 = nn.nll_loss %x, %t, %w {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>, tensor<10xi64>) -> tensor<f32>
  return
}
