// RUN: fsdp-opt %s -split-input-file -verify-diagnostics

// Verifier and ODS constraint failures of the elementwise ops
// (dialects/nn/ElementwiseOps.cpp, NNElementwiseOps.td): numpy broadcasting
// of add/sub/mul/div/pow/where, Pow's and Where's element-type rules, the
// element types each op family admits, and static shapes only.

// Dynamic dimensions never reach the nn dialect: operands must be statically
// shaped.
func.func @add_dynamic_shape(%a: tensor<?xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8-bit signless integer}}
  %0 = nn.add %a, %a : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

// Unranked tensors are not statically shaped either.
func.func @mul_unranked(%a: tensor<*xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of}}
  %0 = nn.mul %a, %b : (tensor<*xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// A dynamic result type is rejected even when the operands are static.
func.func @sub_dynamic_result(%a: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of}}
  %0 = nn.sub %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<?xf32>
  return
}

// -----

// Binary arithmetic is numeric only: bool (i1) is not admitted.
func.func @add_bool(%a: tensor<4xi1>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<4xi1>'}}
  %0 = nn.add %a, %a : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

// Signed integers are signless in the nn dialect (as in ONNX's importer):
// an explicitly signed `si8` is not one of the admitted types.
func.func @add_si8(%a: tensor<4xsi8>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of}}
  %0 = nn.add %a, %a : (tensor<4xsi8>, tensor<4xsi8>) -> tensor<4xsi8>
  return
}

// -----

// Element types outside ONNX's set (here f8E4M3FN) are rejected.
func.func @div_f8(%a: tensor<4xf8E4M3FN>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of}}
  %0 = nn.div %a, %a : (tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN>
  return
}

// -----

// Binary arithmetic operands must share the element type (no implicit
// promotion).
func.func @add_mixed_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{requires the same element type for all operands and results}}
  %0 = nn.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

// torch's wrapped number is the only mix add/sub/mul/div take: a bf16/f16
// tensor with a rank-0 f32 operand. A rank-1 f32 operand is a tensor, not a
// scalar (torch would promote to f32), so it is refused.
func.func @mul_wrapped_scalar_rank1(%a: tensor<4xbf16>, %s: tensor<1xf32>) {
  // expected-error @+1 {{requires the same element type for all operands and results, or a bf16/f16 tensor and a rank-0 f32 operand with the tensor's result type; got 'bf16' and 'f32' -> 'bf16'}}
  %0 = nn.mul %a, %s : (tensor<4xbf16>, tensor<1xf32>) -> tensor<4xbf16>
  return
}

// -----

// The mixed op's result has the tensor's type, not f32.
func.func @add_wrapped_scalar_f32_result(%a: tensor<4xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{or a bf16/f16 tensor and a rank-0 f32 operand with the tensor's result type}}
  %0 = nn.add %s, %a : (tensor<f32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

// The scalar must be f32: a rank-0 f64 (or f16 next to bf16) is refused.
func.func @div_wrapped_scalar_f64(%a: tensor<4xf16>, %s: tensor<f64>) {
  // expected-error @+1 {{got 'f16' and 'f64' -> 'f16'}}
  %0 = nn.div %a, %s : (tensor<4xf16>, tensor<f64>) -> tensor<4xf16>
  return
}

// -----

// An f32 tensor with a rank-0 bf16 operand is not the wrapped-number form.
func.func @sub_f32_tensor_bf16_scalar(%a: tensor<4xf32>, %s: tensor<bf16>) {
  // expected-error @+1 {{got 'f32' and 'bf16' -> 'f32'}}
  %0 = nn.sub %a, %s : (tensor<4xf32>, tensor<bf16>) -> tensor<4xf32>
  return
}

// -----

// The other binary ops keep requiring equal element types.
func.func @max_wrapped_scalar(%a: tensor<4xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{requires the same element type for all operands and results}}
  %0 = nn.max %a, %s : (tensor<4xbf16>, tensor<f32>) -> tensor<4xbf16>
  return
}

// -----

// The result of binary arithmetic has the operands' element type.
func.func @mul_result_element_type(%a: tensor<4xi32>) {
  // expected-error @+1 {{requires the same element type for all operands and results}}
  %0 = nn.mul %a, %a : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi64>
  return
}

// -----

// Non-1 dimensions that differ do not broadcast.
func.func @add_broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'nn.add' op shapes [2, 3], [4] are not broadcast-compatible}}
  %0 = nn.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Broadcasting aligns trailing dimensions: [3, 1] and [3] broadcast to
// [3, 3], so the leading-aligned [3, 1] result is wrong.
func.func @sub_result_shape(%a: tensor<3x1xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'nn.sub' op result shape [3, 1] does not match the expected [3, 3]}}
  %0 = nn.sub %a, %b : (tensor<3x1xf32>, tensor<3xf32>) -> tensor<3x1xf32>
  return
}

// -----

// The result has the full broadcast rank, not the rank of the larger operand
// shape without the broadcast dimensions.
func.func @mul_result_rank(%a: tensor<4x1xf32>, %b: tensor<1x5xf32>) {
  // expected-error @+1 {{'nn.mul' op result shape [4] does not match the expected [4, 5]}}
  %0 = nn.mul %a, %b : (tensor<4x1xf32>, tensor<1x5xf32>) -> tensor<4xf32>
  return
}

// -----

// A zero-sized dimension broadcasts only with 0 or 1, never with 3.
func.func @div_zero_size_mismatch(%a: tensor<0xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'nn.div' op shapes [0], [3] are not broadcast-compatible}}
  %0 = nn.div %a, %b : (tensor<0xf32>, tensor<3xf32>) -> tensor<0xf32>
  return
}

// -----

// pow's result takes the base's element type, even when the exponent's
// differs.
func.func @pow_result_type(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error @+1 {{'nn.pow' op result element type must be the base's element type}}
  %0 = nn.pow %a, %b : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

// pow broadcasts like the other binary ops.
func.func @pow_broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{'nn.pow' op shapes [2, 3], [2] are not broadcast-compatible}}
  %0 = nn.pow %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

// pow's result shape is the broadcast shape.
func.func @pow_result_shape(%a: tensor<3xf32>, %b: tensor<2x1xf32>) {
  // expected-error @+1 {{'nn.pow' op result shape [3] does not match the expected [2, 3]}}
  %0 = nn.pow %a, %b : (tensor<3xf32>, tensor<2x1xf32>) -> tensor<3xf32>
  return
}

// -----

// pow's exponent is numeric: a bool exponent is rejected.
func.func @pow_bool_exponent(%a: tensor<4xf32>, %b: tensor<4xi1>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of}}
  %0 = nn.pow %a, %b : (tensor<4xf32>, tensor<4xi1>) -> tensor<4xf32>
  return
}

// -----

// where's condition must be a bool tensor.
func.func @where_condition_not_bool(%c: tensor<4xi8>, %x: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = nn.where %c, %x, %x : (tensor<4xi8>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// where's x and y must share an element type.
func.func @where_xy_types(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+1 {{'nn.where' op x, y and result must have the same element type}}
  %0 = nn.where %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

// where's result has x's (and y's) element type.
func.func @where_result_type(%c: tensor<4xi1>, %x: tensor<4xi32>) {
  // expected-error @+1 {{'nn.where' op x, y and result must have the same element type}}
  %0 = nn.where %c, %x, %x : (tensor<4xi1>, tensor<4xi32>, tensor<4xi32>) -> tensor<4xi64>
  return
}

// -----

// where broadcasts all three operands together; the condition takes part.
func.func @where_broadcast_mismatch(%c: tensor<2xi1>, %x: tensor<3xf32>, %y: tensor<1xf32>) {
  // expected-error @+1 {{'nn.where' op shapes [2], [3], [1] are not broadcast-compatible}}
  %0 = nn.where %c, %x, %y : (tensor<2xi1>, tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
  return
}

// -----

// where's result shape includes the condition's broadcast dimensions.
func.func @where_result_shape(%c: tensor<2x1xi1>, %x: tensor<3xf32>) {
  // expected-error @+1 {{'nn.where' op result shape [3] does not match the expected [2, 3]}}
  %0 = nn.where %c, %x, %x : (tensor<2x1xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

// exp (like log, sqrt, erf, tanh, sigmoid) is float-only: integers rejected.
func.func @exp_integer(%a: tensor<4xi32>) {
  // expected-error @+1 {{'nn.exp' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = nn.exp %a : tensor<4xi32>
  return
}

// -----

// log is float-only.
func.func @log_unsigned(%a: tensor<4xui8>) {
  // expected-error @+1 {{'nn.log' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = nn.log %a : tensor<4xui8>
  return
}

// -----

// sqrt is float-only.
func.func @sqrt_bool(%a: tensor<4xi1>) {
  // expected-error @+1 {{'nn.sqrt' op operand #0 must be statically shaped tensor of 16-bit float}}
  %0 = nn.sqrt %a : tensor<4xi1>
  return
}

// -----

// erf is float-only.
func.func @erf_integer(%a: tensor<4xi64>) {
  // expected-error @+1 {{'nn.erf' op operand #0 must be statically shaped tensor of 16-bit float}}
  %0 = nn.erf %a : tensor<4xi64>
  return
}

// -----

// tanh is float-only.
func.func @tanh_integer(%a: tensor<4xi8>) {
  // expected-error @+1 {{'nn.tanh' op operand #0 must be statically shaped tensor of 16-bit float}}
  %0 = nn.tanh %a : tensor<4xi8>
  return
}

// -----

// sigmoid is float-only, and the float unary ops need static shapes too.
func.func @sigmoid_dynamic(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'nn.sigmoid' op operand #0 must be statically shaped tensor of 16-bit float}}
  %0 = nn.sigmoid %a : tensor<?x4xf32>
  return
}

// -----

// neg takes floats and signed integers only, not unsigned ones.
func.func @neg_unsigned(%a: tensor<4xui8>) {
  // expected-error @+1 {{'nn.neg' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xui8>'}}
  %0 = nn.neg %a : tensor<4xui8>
  return
}

// -----

// relu takes floats and signed integers only, not bool.
func.func @relu_bool(%a: tensor<4xi1>) {
  // expected-error @+1 {{'nn.relu' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8-bit signless integer}}
  %0 = nn.relu %a : tensor<4xi1>
  return
}

// -----

// not is bool-only: f32 is rejected.
func.func @not_float(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.not' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = nn.not %a : tensor<4xf32>
  return
}

// -----

// not is bool-only: an 8-bit integer is not a bool.
func.func @not_i8(%a: tensor<4xi8>) {
  // expected-error @+1 {{'nn.not' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = nn.not %a : tensor<4xi8>
  return
}

// -----

// Unary ops keep the input type: in generic form a different result type
// is caught by the AllTypesMatch constraint.
func.func @exp_result_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.exp' op failed to verify that all of {input, result} have same type}}
  %0 = "nn.exp"(%a) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// Same for shape: neg cannot change the shape.
func.func @neg_result_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.neg' op failed to verify that all of {input, result} have same type}}
  %0 = "nn.neg"(%a) : (tensor<4xf32>) -> tensor<2x2xf32>
  return
}

// -----

// cast changes the element type only, never the shape.
func.func @cast_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.cast' op requires the same shape for all operands and results}}
  %0 = nn.cast %a : tensor<4xf32> to tensor<2x2xbf16>
  return
}

// -----

// cast's target must be one of the admitted element types (index is not).
func.func @cast_to_index(%a: tensor<4xi64>) {
  // expected-error @+1 {{'nn.cast' op result #0 must be statically shaped tensor of}}
  %0 = nn.cast %a : tensor<4xi64> to tensor<4xindex>
  return
}

// -----

// cast needs static shapes.
func.func @cast_dynamic(%a: tensor<?xf32>) {
  // expected-error @+1 {{'nn.cast' op operand #0 must be statically shaped tensor of}}
  %0 = nn.cast %a : tensor<?xf32> to tensor<?xf16>
  return
}

// -----

// Memrefs are not tensors: ops are value-semantic.
func.func @exp_memref(%a: memref<4xf32>) {
  // expected-error @+1 {{'nn.exp' op operand #0 must be statically shaped tensor of}}
  %0 = "nn.exp"(%a) : (memref<4xf32>) -> memref<4xf32>
  return
}
