// RUN: fsdp-opt %s -split-input-file -verify-diagnostics

// Verifier and ODS constraint failures of nn.softmax, nn.log_softmax and
// nn.layer_norm (dialects/nn/NormalizationOps.cpp): axes are canonical
// (non-negative, inside the rank), layer norm's scale/bias broadcast onto the
// normalized dimensions, its statistics have those dimensions collapsed to
// 1, and epsilon is positive.

// softmax's axis must be inside the rank.
func.func @softmax_axis_too_large(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.softmax' op axis 2 must be in [0, 2)}}
  %0 = nn.softmax %a {axis = 2 : i64} : tensor<2x3xf32>
  return
}

// -----

// softmax's axis is canonical: negative axes are resolved at import.
func.func @softmax_axis_negative(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.softmax' op axis -1 must be in [0, 2)}}
  %0 = nn.softmax %a {axis = -1 : i64} : tensor<2x3xf32>
  return
}

// -----

// A rank-0 input has no axis to normalize over.
func.func @softmax_rank0(%a: tensor<f32>) {
  // expected-error @+1 {{'nn.softmax' op axis 0 must be in [0, 0)}}
  %0 = nn.softmax %a {axis = 0 : i64} : tensor<f32>
  return
}

// -----

// log_softmax has the same axis rule.
func.func @log_softmax_axis_out_of_range(%a: tensor<4xf16>) {
  // expected-error @+1 {{'nn.log_softmax' op axis 1 must be in [0, 1)}}
  %0 = nn.log_softmax %a {axis = 1 : i64} : tensor<4xf16>
  return
}

// -----

// log_softmax rejects negative axes too.
func.func @log_softmax_axis_negative(%a: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.log_softmax' op axis -2 must be in [0, 2)}}
  %0 = nn.log_softmax %a {axis = -2 : i64} : tensor<2x4xf32>
  return
}

// -----

// softmax is float-only.
func.func @softmax_integer(%a: tensor<4xi32>) {
  // expected-error @+1 {{'nn.softmax' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = nn.softmax %a {axis = 0 : i64} : tensor<4xi32>
  return
}

// -----

// softmax keeps its input type (checked in generic form).
func.func @softmax_result_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.softmax' op failed to verify that all of {input, result} have same type}}
  %0 = "nn.softmax"(%a) {axis = 0 : i64} : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// softmax's axis is required (the opset-13 default is resolved at import).
func.func @softmax_missing_axis(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.softmax' op requires attribute 'axis'}}
  %0 = nn.softmax %a : tensor<4xf32>
  return
}

// -----

// softmax's axis is a 64-bit integer attribute.
func.func @softmax_axis_i32(%a: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'axis' failed to satisfy constraint: 64-bit signless integer attribute}}
  %0 = nn.softmax %a {axis = 0 : i32} : tensor<4xf32>
  return
}

// -----

// layer_norm's axis must be inside the rank.
func.func @layer_norm_axis_too_large(%x: tensor<2x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op axis 2 must be in [0, 2)}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
  return
}

// -----

// layer_norm's axis is canonical (ONNX's default -1 is resolved at import).
func.func @layer_norm_axis_negative(%x: tensor<2x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op axis -1 must be in [0, 2)}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = -1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

// The scale must broadcast onto the normalized dimensions [axis, rank).
func.func @layer_norm_bad_scale(%x: tensor<2x8x32xf32>, %s: tensor<16xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op scale of shape [16] does not broadcast to the normalized shape [32]}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8x32xf32>, tensor<16xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
  return
}

// -----

// The scale may not reach into the non-normalized (batch) dimensions.
func.func @layer_norm_scale_too_high_rank(%x: tensor<2x8x32xf32>, %s: tensor<8x32xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op scale of shape [8, 32] does not broadcast to the normalized shape [32]}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8x32xf32>, tensor<8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
  return
}

// -----

// The bias, when present, must broadcast onto the normalized dimensions too.
func.func @layer_norm_bad_bias(%x: tensor<2x8x32xf32>, %s: tensor<32xf32>, %b: tensor<8x1xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op bias of shape [8, 1] does not broadcast to the normalized shape [32]}}
  %y, %m, %r = nn.layer_norm %x, %s, %b {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<8x1xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
  return
}

// -----

// The scale has the input's element type.
func.func @layer_norm_scale_type(%x: tensor<2x8xf16>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op input, scale, bias and result must have the same element type}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf16>, tensor<8xf32>) -> (tensor<2x8xf16>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

// The bias has the input's element type.
func.func @layer_norm_bias_type(%x: tensor<2x8xf32>, %s: tensor<8xf32>, %b: tensor<8xbf16>) {
  // expected-error @+1 {{'nn.layer_norm' op input, scale, bias and result must have the same element type}}
  %y, %m, %r = nn.layer_norm %x, %s, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xbf16>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

// The result has the input's element type.
func.func @layer_norm_result_type(%x: tensor<2x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op input, scale, bias and result must have the same element type}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf64>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

// The result has the input's shape.
func.func @layer_norm_result_shape(%x: tensor<2x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op result shape [2, 1] does not match the expected [2, 8]}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

// mean is the input shape with the normalized dimensions set to 1 (kept,
// not dropped).
func.func @layer_norm_bad_mean_shape(%x: tensor<2x8x32xf32>, %s: tensor<32xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op mean and inv_std_dev must have shape [2, 8, 1]}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8x32xf32>, tensor<32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8xf32>, tensor<2x8x1xf32>)
  return
}

// -----

// inv_std_dev has the same shape as mean; every dimension from axis on is 1.
func.func @layer_norm_bad_inv_std_dev_shape(%x: tensor<2x8x32xf32>, %s: tensor<8x32xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op mean and inv_std_dev must have shape [2, 1, 1]}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8x32xf32>, tensor<8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x1x1xf32>, tensor<2x8x1xf32>)
  return
}

// -----

// mean and inv_std_dev may use a stash type other than the input's, but the
// same one for both (ONNX's single type U; regression: was not checked).
func.func @layer_norm_stat_types_differ(%x: tensor<2x8xf16>, %s: tensor<8xf16>) {
  // expected-error @+1 {{'nn.layer_norm' op mean and inv_std_dev must have the same element type}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf16>, tensor<8xf16>) -> (tensor<2x8xf16>, tensor<2x1xf32>, tensor<2x1xf64>)
  return
}

// -----

// epsilon must be positive: zero is rejected.
func.func @layer_norm_epsilon_zero(%x: tensor<2x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op epsilon must be positive}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 0.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

// A negative epsilon is rejected.
func.func @layer_norm_epsilon_negative(%x: tensor<2x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op epsilon must be positive}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = -1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

// A NaN epsilon is not positive either (regression: `eps <= 0` let it pass).
func.func @layer_norm_epsilon_nan(%x: tensor<2x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op epsilon must be positive}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 0x7FC00000 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

// epsilon is required (ONNX's default is filled in at import).
func.func @layer_norm_missing_epsilon(%x: tensor<2x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op requires attribute 'epsilon'}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

// layer_norm is float-only.
func.func @layer_norm_integer(%x: tensor<2x8xi32>, %s: tensor<8xi32>) {
  // expected-error @+1 {{'nn.layer_norm' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xi32>, tensor<8xi32>) -> (tensor<2x8xi32>, tensor<2x1xi32>, tensor<2x1xi32>)
  return
}

// -----

// layer_norm's statistics are float tensors too.
func.func @layer_norm_integer_stats(%x: tensor<2x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op result #1 must be statically shaped tensor of 16-bit float}}
  %y, %m, %r = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xi32>, tensor<2x1xf32>)
  return
}
