// RUN: fsdp-opt %s -split-input-file -verify-diagnostics

// Verifier and ODS constraint failures of nn.constant and nn.dropout
// (dialects/nn/MiscOps.cpp): a constant's value has exactly its result type,
// which is a static tensor of an admitted element type; dropout's ratio is in
// [0, 1), its result has the input's type and its mask the input's shape.

// The value attribute's type is the result type (checked in generic form,
// since the custom form takes the type from the value).
func.func @constant_type_mismatch() {
  // expected-error @+1 {{'nn.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "nn.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<3xf32>
  return
}

// -----

// The element types must match as well: an i64 literal is not a ui64 tensor.
func.func @constant_element_type_mismatch() {
  // expected-error @+1 {{'nn.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "nn.constant"() {value = dense<1> : tensor<2xi64>} : () -> tensor<2xui64>
  return
}

// -----

// nn.constant makes tensors only: a scalar float literal is rejected.
func.func @constant_scalar() {
  // expected-error @+1 {{'nn.constant' op result #0 must be statically shaped tensor of}}
  %0 = nn.constant 1.0 : f32
  return
}

// -----

// The element type must be one of ONNX's: index is not.
func.func @constant_index() {
  // expected-error @+1 {{'nn.constant' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer or 1-bit signless integer values, but got 'tensor<2xindex>'}}
  %0 = nn.constant dense<1> : tensor<2xindex>
  return
}

// -----

// Explicitly signed integers are not admitted (signed is signless here).
func.func @constant_si32() {
  // expected-error @+1 {{'nn.constant' op result #0 must be statically shaped tensor of}}
  %0 = nn.constant dense<1> : tensor<2xsi32>
  return
}

// -----

// The value must be a typed attribute.
func.func @constant_untyped_value() {
  // expected-error @+1 {{invalid kind of attribute specified}}
  %0 = nn.constant unit
  return
}

// -----

// The value attribute is required.
func.func @constant_missing_value() {
  // expected-error @+1 {{'nn.constant' op requires attribute 'value'}}
  %0 = "nn.constant"() : () -> tensor<2xf32>
  return
}

// -----

// A ratio of 1 would drop everything (and scale by 1 / 0): ratio < 1.
func.func @dropout_ratio_one(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.dropout' op ratio must be in [0, 1), got 1.000000e+00}}
  %y, %m = nn.dropout %x {ratio = 1.0 : f32, training = true} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

// The ratio is a probability: negative values are rejected.
func.func @dropout_ratio_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.dropout' op ratio must be in [0, 1), got -5.000000e-01}}
  %y, %m = nn.dropout %x {ratio = -0.5 : f32, training = false} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

// A NaN ratio is not in [0, 1).
func.func @dropout_ratio_nan(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.dropout' op ratio must be in [0, 1), got nan}}
  %y, %m = nn.dropout %x {ratio = 0x7FC00000 : f32, training = true} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

// The mask has the input's shape.
func.func @dropout_mask_shape(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.dropout' op mask must have the input's shape}}
  %y, %m = nn.dropout %x {ratio = 0.5 : f32, training = true} : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xi1>)
  return
}

// -----

// The mask is a bool tensor.
func.func @dropout_mask_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.dropout' op result #1 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %y, %m = nn.dropout %x {ratio = 0.5 : f32, training = true} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// The result has the input's shape.
func.func @dropout_result_shape(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.dropout' op result must have the input's type}}
  %y, %m = nn.dropout %x {ratio = 0.5 : f32, training = true} : (tensor<2x4xf32>) -> (tensor<8xf32>, tensor<2x4xi1>)
  return
}

// -----

// The result has the input's element type.
func.func @dropout_result_element_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.dropout' op result must have the input's type}}
  %y, %m = nn.dropout %x {ratio = 0.5 : f32, training = true} : (tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xi1>)
  return
}

// -----

// dropout is float-only.
func.func @dropout_integer(%x: tensor<4xi32>) {
  // expected-error @+1 {{'nn.dropout' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %y, %m = nn.dropout %x {ratio = 0.5 : f32, training = true} : (tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi1>)
  return
}

// -----

// training is static and required.
func.func @dropout_missing_training(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.dropout' op requires attribute 'training'}}
  %y, %m = nn.dropout %x {ratio = 0.5 : f32} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

// ratio is static and required.
func.func @dropout_missing_ratio(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.dropout' op requires attribute 'ratio'}}
  %y, %m = nn.dropout %x {training = true} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

// seed, when given, is a 64-bit integer.
func.func @dropout_seed_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'seed' failed to satisfy constraint: 64-bit signless integer attribute}}
  %y, %m = nn.dropout %x {ratio = 0.5 : f32, training = true, seed = 1.0 : f32} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}
