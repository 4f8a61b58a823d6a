// RUN: fsdp-opt %s -split-input-file -verify-diagnostics

// Verifier and ODS constraint failures of nn.matmul and nn.gemm
// (dialects/nn/LinearAlgebraOps.cpp, matmulShape / gemmShape in
// ShapeRules.cpp).

// matmul needs operands of rank >= 1 (numpy rejects scalars too).
func.func @matmul_rank0(%a: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'nn.matmul' op matmul operands must have rank >= 1}}
  %0 = nn.matmul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

// A rank-0 rhs is rejected as well.
func.func @matmul_rank0_rhs(%a: tensor<3x4xf32>, %b: tensor<f32>) {
  // expected-error @+1 {{'nn.matmul' op matmul operands must have rank >= 1}}
  %0 = nn.matmul %a, %b : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  return
}

// -----

// lhs's last dimension must equal rhs's second-to-last.
func.func @matmul_contracting_mismatch(%a: tensor<3x4xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+1 {{'nn.matmul' op contracting dimensions differ: lhs [3, 4], rhs [5, 6]}}
  %0 = nn.matmul %a, %b : (tensor<3x4xf32>, tensor<5x6xf32>) -> tensor<3x6xf32>
  return
}

// -----

// A 1-D lhs contracts its only dimension against rhs's rows.
func.func @matmul_vector_contracting_mismatch(%a: tensor<4xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+1 {{'nn.matmul' op contracting dimensions differ: lhs [4], rhs [5, 6]}}
  %0 = nn.matmul %a, %b : (tensor<4xf32>, tensor<5x6xf32>) -> tensor<6xf32>
  return
}

// -----

// A 1-D rhs contracts against lhs's last dimension.
func.func @matmul_rhs_vector_mismatch(%a: tensor<3x4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'nn.matmul' op contracting dimensions differ: lhs [3, 4], rhs [3]}}
  %0 = nn.matmul %a, %b : (tensor<3x4xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

// Batch dimensions broadcast as in numpy; 2 and 3 do not.
func.func @matmul_batch_mismatch(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) {
  // expected-error @+1 {{'nn.matmul' op shapes [2], [3] are not broadcast-compatible}}
  %0 = nn.matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
  return
}

// -----

// The dimension a 1-D operand was promoted with is removed from the result.
func.func @matmul_vector_dim_kept(%a: tensor<4xf32>, %b: tensor<4x6xf32>) {
  // expected-error @+1 {{'nn.matmul' op result shape [1, 6] does not match the expected [6]}}
  %0 = nn.matmul %a, %b : (tensor<4xf32>, tensor<4x6xf32>) -> tensor<1x6xf32>
  return
}

// -----

// The result carries the broadcast batch dimensions.
func.func @matmul_batch_result(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x6xf32>) {
  // expected-error @+1 {{'nn.matmul' op result shape [2, 3, 6] does not match the expected [2, 5, 3, 6]}}
  %0 = nn.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x3x6xf32>
  return
}

// -----

// Two vectors give a rank-0 result, not [1].
func.func @matmul_dot_result(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'nn.matmul' op result shape [1] does not match the expected []}}
  %0 = nn.matmul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<1xf32>
  return
}

// -----

// matmul operands and result share one element type.
func.func @matmul_element_types(%a: tensor<3x4xf16>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{'nn.matmul' op requires the same element type for all operands and results}}
  %0 = nn.matmul %a, %b : (tensor<3x4xf16>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return
}

// -----

// matmul is numeric: bool operands are rejected.
func.func @matmul_bool(%a: tensor<3x4xi1>, %b: tensor<4x5xi1>) {
  // expected-error @+1 {{'nn.matmul' op operand #0 must be statically shaped tensor of}}
  %0 = nn.matmul %a, %b : (tensor<3x4xi1>, tensor<4x5xi1>) -> tensor<3x5xi1>
  return
}

// -----

// matmul needs static shapes.
func.func @matmul_dynamic(%a: tensor<?x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{'nn.matmul' op operand #0 must be statically shaped tensor of}}
  %0 = nn.matmul %a, %b : (tensor<?x4xf32>, tensor<4x5xf32>) -> tensor<?x5xf32>
  return
}

// -----

// gemm's a must be 2-D (batched input goes through nn.matmul).
func.func @gemm_a_3d(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{'nn.gemm' op gemm operands must be 2-D, got [2, 3, 4] and [4, 5]}}
  %0 = nn.gemm %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return
}

// -----

// gemm's b must be 2-D as well (no 1-D promotion as in matmul).
func.func @gemm_b_1d(%a: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'nn.gemm' op gemm operands must be 2-D, got [3, 4] and [4]}}
  %0 = nn.gemm %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

// op(a)'s columns must equal op(b)'s rows.
func.func @gemm_contracting_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{'nn.gemm' op contracting dimensions differ: op(a) is 2x3, op(b) is 4x5}}
  %0 = nn.gemm %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

// trans_a transposes a before contracting: shapes that would match without
// it do not match with it.
func.func @gemm_trans_a_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+1 {{'nn.gemm' op contracting dimensions differ: op(a) is 3x2, op(b) is 3x5}}
  %0 = nn.gemm %a, %b {trans_a = true} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

// trans_b transposes b before contracting.
func.func @gemm_trans_b_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+1 {{'nn.gemm' op contracting dimensions differ: op(a) is 2x3, op(b) is 5x3}}
  %0 = nn.gemm %a, %b {trans_b = true} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

// The bias broadcasts unidirectionally onto [M, N], aligned at the trailing
// dimension: a [M] bias does not fit unless M == N.
func.func @gemm_bias_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<2xf32>) {
  // expected-error @+1 {{'nn.gemm' op bias of shape [2] does not broadcast to [2, 4]}}
  %0 = nn.gemm %a, %b, %c : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<2xf32>) -> tensor<2x4xf32>
  return
}

// -----

// The bias cannot have more dimensions than the result.
func.func @gemm_bias_rank3(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<1x2x4xf32>) {
  // expected-error @+1 {{'nn.gemm' op bias of shape [1, 2, 4] does not broadcast to [2, 4]}}
  %0 = nn.gemm %a, %b, %c : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<1x2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// The broadcast is unidirectional: the bias may not be larger than [M, N]
// in any dimension (the result would have to grow).
func.func @gemm_bias_larger(%a: tensor<1x3xf32>, %b: tensor<3x4xf32>, %c: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.gemm' op bias of shape [2, 4] does not broadcast to [1, 4]}}
  %0 = nn.gemm %a, %b, %c : (tensor<1x3xf32>, tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// gemm's result is [M, N] of op(a) @ op(b).
func.func @gemm_result_shape(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{'nn.gemm' op result shape [4, 2] does not match the expected [2, 4]}}
  %0 = nn.gemm %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32>
  return
}

// -----

// gemm's a and b must have the result's element type.
func.func @gemm_b_element_type(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) {
  // expected-error @+1 {{'nn.gemm' op operands and result must have the same element type}}
  %0 = nn.gemm %a, %b : (tensor<2x3xf32>, tensor<3x4xf16>) -> tensor<2x4xf32>
  return
}

// -----

// gemm's bias must have the result's element type too.
func.func @gemm_c_element_type(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4xbf16>) {
  // expected-error @+1 {{'nn.gemm' op operands and result must have the same element type}}
  %0 = nn.gemm %a, %b, %c : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xbf16>) -> tensor<2x4xf32>
  return
}

// -----

// gemm's result element type must be the operands'.
func.func @gemm_result_element_type(%a: tensor<2x3xi32>, %b: tensor<3x4xi32>) {
  // expected-error @+1 {{'nn.gemm' op operands and result must have the same element type}}
  %0 = nn.gemm %a, %b : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi64>
  return
}

// -----

// gemm is numeric: bool operands are rejected.
func.func @gemm_bool(%a: tensor<2x3xi1>, %b: tensor<3x4xi1>) {
  // expected-error @+1 {{'nn.gemm' op operand #0 must be statically shaped tensor of}}
  %0 = nn.gemm %a, %b : (tensor<2x3xi1>, tensor<3x4xi1>) -> tensor<2x4xi1>
  return
}

// -----

// alpha is an f32 attribute.
func.func @gemm_alpha_type(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{attribute 'alpha' failed to satisfy constraint: 32-bit float attribute}}
  %0 = nn.gemm %a, %b {alpha = 1 : i32} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// trans_b is a bool attribute.
func.func @gemm_trans_type(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{attribute 'trans_b' failed to satisfy constraint: bool attribute}}
  %0 = nn.gemm %a, %b {trans_b = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  return
}
