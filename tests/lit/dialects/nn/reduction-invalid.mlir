// RUN: fsdp-opt %s -split-input-file -verify-diagnostics

// Verifier and ODS constraint failures of nn.reduce_sum, nn.reduce_max and
// nn.reduce_mean (dialects/nn/ReductionOps.cpp, reduceShape in
// ShapeRules.cpp): axes are sorted, unique and in [0, rank); the result
// keeps reduced dimensions as 1 with keepdims and drops them without.

// Axes must be sorted.
func.func @reduce_sum_axes_unsorted(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.reduce_sum' op axes [1, 0] must be sorted, unique and in [0, 2)}}
  %0 = nn.reduce_sum %a {axes = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<1x1xf32>
  return
}

// -----

// Axes must be unique.
func.func @reduce_max_axes_duplicate(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.reduce_max' op axes [1, 1] must be sorted, unique and in [0, 2)}}
  %0 = nn.reduce_max %a {axes = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return
}

// -----

// Axes must be below the rank.
func.func @reduce_mean_axis_out_of_range(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.reduce_mean' op axes [2] must be sorted, unique and in [0, 2)}}
  %0 = nn.reduce_mean %a {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Axes are canonical: negative axes are resolved at import.
func.func @reduce_sum_axis_negative(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.reduce_sum' op axes [-1] must be sorted, unique and in [0, 2)}}
  %0 = nn.reduce_sum %a {axes = array<i64: -1>} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return
}

// -----

// A rank-0 input admits no axis at all.
func.func @reduce_max_rank0_axis(%a: tensor<f32>) {
  // expected-error @+1 {{'nn.reduce_max' op axes [0] must be sorted, unique and in [0, 0)}}
  %0 = nn.reduce_max %a {axes = array<i64: 0>} : (tensor<f32>) -> tensor<f32>
  return
}

// -----

// With keepdims (the default) reduced dimensions stay as size 1.
func.func @reduce_sum_keepdims_result(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.reduce_sum' op result shape [2] does not match the expected [2, 1]}}
  %0 = nn.reduce_sum %a {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// Without keepdims reduced dimensions are removed.
func.func @reduce_mean_no_keepdims_result(%a: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'nn.reduce_mean' op result shape [2, 1, 4] does not match the expected [2, 4]}}
  %0 = nn.reduce_mean %a {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return
}

// -----

// The result keeps the non-reduced dimensions unchanged.
func.func @reduce_max_wrong_kept_dim(%a: tensor<2x3x4xi32>) {
  // expected-error @+1 {{'nn.reduce_max' op result shape [2, 1, 5] does not match the expected [2, 1, 4]}}
  %0 = nn.reduce_max %a {axes = array<i64: 1>} : (tensor<2x3x4xi32>) -> tensor<2x1x5xi32>
  return
}

// -----

// An empty axes list reduces nothing: the result is the input shape.
func.func @reduce_sum_empty_axes_result(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.reduce_sum' op result shape [] does not match the expected [2, 3]}}
  %0 = nn.reduce_sum %a {axes = array<i64>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return
}

// -----

// Reductions keep the input's element type (no accumulation type change).
func.func @reduce_sum_element_type(%a: tensor<4xi32>) {
  // expected-error @+1 {{'nn.reduce_sum' op requires the same element type for all operands and results}}
  %0 = nn.reduce_sum %a {axes = array<i64: 0>} : (tensor<4xi32>) -> tensor<1xi64>
  return
}

// -----

// Reductions are numeric: bool input is rejected.
func.func @reduce_max_bool(%a: tensor<4xi1>) {
  // expected-error @+1 {{'nn.reduce_max' op operand #0 must be statically shaped tensor of}}
  %0 = nn.reduce_max %a {axes = array<i64: 0>} : (tensor<4xi1>) -> tensor<1xi1>
  return
}

// -----

// Reductions need static shapes.
func.func @reduce_mean_dynamic(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'nn.reduce_mean' op operand #0 must be statically shaped tensor of}}
  %0 = nn.reduce_mean %a {axes = array<i64: 1>} : (tensor<?x4xf32>) -> tensor<?x1xf32>
  return
}

// -----

// axes is a dense i64 array, not an array attribute of integers.
func.func @reduce_sum_axes_array_attr(%a: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'axes' failed to satisfy constraint: i64 dense array attribute}}
  %0 = nn.reduce_sum %a {axes = [0]} : (tensor<4xf32>) -> tensor<1xf32>
  return
}

// -----

// axes is required: "all axes" is spelled out at import.
func.func @reduce_mean_missing_axes(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.reduce_mean' op requires attribute 'axes'}}
  %0 = nn.reduce_mean %a : (tensor<4xf32>) -> tensor<1xf32>
  return
}
