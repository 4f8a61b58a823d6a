// RUN: fsdp-opt %s -split-input-file -verify-diagnostics

// Verifier failures of nn.compare, nn.logical, nn.max and nn.min
// (dialects/nn/ElementwiseOps.cpp): predicate names, operand element types
// and numpy broadcasting.

func.func @compare_bad_predicate(%a: tensor<4xf32>) {
  // expected-error @+1 {{predicate must be one of eq, lt, le, gt, ge; got 'ne'}}
  %0 = nn.compare "ne" %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @compare_mixed_types(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error @+1 {{operands must have the same element type}}
  %0 = nn.compare "lt" %a, %b : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  return
}

// -----

func.func @compare_bool_ordered(%a: tensor<4xi1>) {
  // expected-error @+1 {{bool operands only compare with eq}}
  %0 = nn.compare "lt" %a, %a : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

func.func @compare_bad_broadcast(%a: tensor<3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{}}
  %0 = nn.compare "eq" %a, %b : (tensor<3xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @logical_bad_op(%a: tensor<4xi1>) {
  // expected-error @+1 {{op must be one of and, or, xor; got 'nand'}}
  %0 = nn.logical "nand" %a, %a : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

func.func @logical_float(%a: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 1-bit signless integer}}
  %0 = nn.logical "and" %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @max_wrong_shape(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{}}
  %0 = nn.max %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @is_nan_int(%a: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of}}
  %0 = nn.is_nan %a : (tensor<4xi64>) -> tensor<4xi1>
  return
}
