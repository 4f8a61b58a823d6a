// RUN: fsdp-opt %s --split-input-file --verify-diagnostics

// nn.fused programs the runtime could not execute are refused (one case per
// rule of dialects/nn/FusedOps.cpp).

func.func @not_triples(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{program must be a non-empty list of [code, a, b] triples}}
  %0 = nn.fused %x {program = array<i64: 6, 0>, results_of = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @results_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{needs one `results` entry per result}}
  %0 = nn.fused %x {program = array<i64: 6, 0, -1>, results_of = array<i64: 1, 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @unknown_code(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{op 0 has unknown code 16}}
  %0 = nn.fused %x {program = array<i64: 16, 0, -1>, results_of = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @forward_reference(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{op 0 must read inputs or earlier ops}}
  %0 = nn.fused %x {program = array<i64: 0, 0, 1>, results_of = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @unary_with_b(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{op 0 must read inputs or earlier ops and have b = -1}}
  %0 = nn.fused %x {program = array<i64: 6, 0, 0>, results_of = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @result_is_input(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result value 0 is not an op's value}}
  %0 = nn.fused %x {program = array<i64: 6, 0, -1>, results_of = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f64(%x: tensor<4xf64>) -> tensor<4xf64> {
  // expected-error @+1 {{results must be f32, bf16 or f16, not 'f64'}}
  %0 = nn.fused %x {program = array<i64: 6, 0, -1>, results_of = array<i64: 1>} : (tensor<4xf64>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// A bf16 program reading an f32 scalar (torch's scalar rule allows that
// mix in nn.mul, not in a program).
func.func @mixed_dtypes(%x: tensor<4xbf16>, %s: tensor<f32>) -> tensor<4xbf16> {
  // expected-error @+1 {{inputs must be 'bf16' (the results' element type) with the results' shape or one element}}
  %0 = nn.fused %x, %s {program = array<i64: 2, 0, 1>, results_of = array<i64: 2>} : (tensor<4xbf16>, tensor<f32>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

func.func @two_result_types(%x: tensor<4xf16>) -> (tensor<4xf16>, tensor<4xf32>) {
  // expected-error @+1 {{results must all be of one element type and shape}}
  %0:2 = nn.fused %x {program = array<i64: 6, 0, -1, 4, 1, -1>, results_of = array<i64: 1, 2>} : (tensor<4xf16>) -> (tensor<4xf16>, tensor<4xf32>)
  return %0#0, %0#1 : tensor<4xf16>, tensor<4xf32>
}

// -----

func.func @row_broadcast(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{inputs must be 'f32' (the results' element type) with the results' shape or one element}}
  %0 = nn.fused %x, %b {program = array<i64: 0, 0, 1>, results_of = array<i64: 2>} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// 7 x 7905747460161236407 wraps to exactly 1 in 64 bits: the element count
// is checked, so the operand is not taken for a single element.
func.func @count_wraps_to_one(%x: tensor<4xf32>, %b: tensor<7x7905747460161236407xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{inputs must be 'f32' (the results' element type) with the results' shape or one element}}
  %0 = nn.fused %x, %b {program = array<i64: 0, 0, 1>, results_of = array<i64: 2>} : (tensor<4xf32>, tensor<7x7905747460161236407xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
