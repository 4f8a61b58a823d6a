// RUN: fsdp-opt %s -split-input-file -verify-diagnostics

// Verifier and ODS constraint failures of the data-movement ops
// (dialects/nn/ShapeOps.cpp and the transpose/concat/slice/gather/broadcast
// rules in ShapeRules.cpp): reshape, transpose, concat, split, slice,
// expand, gather and trilu.

//===----------------------------------------------------------------------===//
// reshape
//===----------------------------------------------------------------------===//

// reshape keeps the element count.
func.func @reshape_count_mismatch(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.reshape' op cannot reshape [2, 3] to [4]: element counts differ}}
  %0 = nn.reshape %a : tensor<2x3xf32> to tensor<4xf32>
  return
}

// -----

// A one-element tensor reshaped to an empty one changes the count too.
func.func @reshape_to_empty(%a: tensor<1xf32>) {
  // expected-error @+1 {{'nn.reshape' op cannot reshape [1] to [0, 1]: element counts differ}}
  %0 = nn.reshape %a : tensor<1xf32> to tensor<0x1xf32>
  return
}

// -----

// reshape keeps the element type.
func.func @reshape_element_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.reshape' op requires the same element type for all operands and results}}
  %0 = nn.reshape %a : tensor<2x3xf32> to tensor<6xf16>
  return
}

// -----

// reshape's target shape is static (shapes are folded at import).
func.func @reshape_dynamic_result(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.reshape' op result #0 must be statically shaped tensor of}}
  %0 = nn.reshape %a : tensor<2x3xf32> to tensor<?xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// transpose
//===----------------------------------------------------------------------===//

// perm must be a permutation: no repeated entries.
func.func @transpose_duplicate(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.transpose' op perm [0, 0] is not a permutation}}
  %0 = nn.transpose %a {perm = array<i64: 0, 0>} : tensor<2x3xf32> to tensor<2x2xf32>
  return
}

// -----

// perm entries must be dimensions of the input.
func.func @transpose_out_of_range(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.transpose' op perm [0, 2] is not a permutation}}
  %0 = nn.transpose %a {perm = array<i64: 0, 2>} : tensor<2x3xf32> to tensor<2x3xf32>
  return
}

// -----

// perm entries are non-negative.
func.func @transpose_negative(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.transpose' op perm [-1, 0] is not a permutation}}
  %0 = nn.transpose %a {perm = array<i64: -1, 0>} : tensor<2x3xf32> to tensor<3x2xf32>
  return
}

// -----

// perm has one entry per input dimension.
func.func @transpose_perm_size(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.transpose' op perm has 1 entries for an input of rank 2}}
  %0 = nn.transpose %a {perm = array<i64: 0>} : tensor<2x3xf32> to tensor<2x3xf32>
  return
}

// -----

// Result dimension i is input dimension perm[i].
func.func @transpose_result_shape(%a: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'nn.transpose' op result shape [4, 3, 2] does not match the expected [4, 2, 3]}}
  %0 = nn.transpose %a {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> to tensor<4x3x2xf32>
  return
}

// -----

// transpose keeps the element type.
func.func @transpose_element_type(%a: tensor<2x3xi32>) {
  // expected-error @+1 {{'nn.transpose' op requires the same element type for all operands and results}}
  %0 = nn.transpose %a {perm = array<i64: 1, 0>} : tensor<2x3xi32> to tensor<3x2xi64>
  return
}

// -----

// perm is required.
func.func @transpose_missing_perm(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.transpose' op requires attribute 'perm'}}
  %0 = nn.transpose %a : tensor<2x3xf32> to tensor<3x2xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// concat
//===----------------------------------------------------------------------===//

// Inputs agree on every dimension except the concatenation axis.
func.func @concat_mismatch_outside_axis(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+1 {{'nn.concat' op input shapes [2, 3] and [3, 3] differ outside axis 1}}
  %0 = nn.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

// Sizes along the axis that add up past int64 are an error, not a wrapped
// sum (the verifier sees untrusted .mlir input).
func.func @concat_size_overflow(%a: tensor<0x6917529027641081856xf32>) {
  // expected-error @+1 {{'nn.concat' op concatenated size along axis 1 overflows int64}}
  %0 = nn.concat %a, %a {axis = 1 : i64} : (tensor<0x6917529027641081856xf32>, tensor<0x6917529027641081856xf32>) -> tensor<0x7xf32>
  return
}

// -----

// Inputs have the same rank.
func.func @concat_rank_mismatch(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{'nn.concat' op input shapes [2, 3] and [2] differ outside axis 0}}
  %0 = nn.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x3xf32>
  return
}

// -----

// The mismatch is found in any input, not only the second.
func.func @concat_third_input(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>, %c: tensor<1x1xf32>) {
  // expected-error @+1 {{'nn.concat' op input shapes [2, 3] and [1, 1] differ outside axis 1}}
  %0 = nn.concat %a, %b, %c {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<1x1xf32>) -> tensor<2x5xf32>
  return
}

// -----

// The axis must be inside the rank.
func.func @concat_axis_out_of_range(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.concat' op axis 2 is out of range for rank 2}}
  %0 = nn.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// The axis is canonical: negative axes are resolved at import.
func.func @concat_axis_negative(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.concat' op axis -1 is out of range for rank 2}}
  %0 = nn.concat %a, %a {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

// Rank-0 inputs cannot be concatenated (there is no axis).
func.func @concat_rank0(%a: tensor<f32>) {
  // expected-error @+1 {{'nn.concat' op axis 0 is out of range for rank 0}}
  %0 = nn.concat %a, %a {axis = 0 : i64} : (tensor<f32>, tensor<f32>) -> tensor<2xf32>
  return
}

// -----

// The result's axis dimension is the sum of the inputs'.
func.func @concat_result_shape(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.concat' op result shape [2, 8] does not match the expected [2, 7]}}
  %0 = nn.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Inputs and result share an element type.
func.func @concat_element_type(%a: tensor<2xf32>, %b: tensor<2xf16>) {
  // expected-error @+1 {{'nn.concat' op requires the same element type for all operands and results}}
  %0 = nn.concat %a, %b {axis = 0 : i64} : (tensor<2xf32>, tensor<2xf16>) -> tensor<4xf32>
  return
}

// -----

// concat needs at least one input.
func.func @concat_no_inputs() {
  // expected-error @+1 {{'nn.concat' op expected 1 or more operands, but found 0}}
  %0 = nn.concat {axis = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// split
//===----------------------------------------------------------------------===//

// The result sizes along the axis add up to the input's.
func.func @split_sizes_not_summing(%a: tensor<6x2xf32>) {
  // expected-error @+1 {{'nn.split' op result sizes along axis 0 add up to 5, not 6}}
  %0:2 = nn.split %a {axis = 0 : i64} : (tensor<6x2xf32>) -> (tensor<2x2xf32>, tensor<3x2xf32>)
  return
}

// -----

// Result sizes that add up past int64 are an error, not a wrapped sum.
func.func @split_sizes_overflow(%a: tensor<0x7xf32>) {
  // expected-error @+1 {{'nn.split' op result sizes along axis 1 overflow int64}}
  %0:2 = nn.split %a {axis = 1 : i64} : (tensor<0x7xf32>) -> (tensor<0x6917529027641081856xf32>, tensor<0x6917529027641081856xf32>)
  return
}

// -----

// Sizes that overshoot the input are rejected too.
func.func @split_sizes_too_large(%a: tensor<2x6xf32>) {
  // expected-error @+1 {{'nn.split' op result sizes along axis 1 add up to 7, not 6}}
  %0:2 = nn.split %a {axis = 1 : i64} : (tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x4xf32>)
  return
}

// -----

// The axis must be inside the rank.
func.func @split_axis_out_of_range(%a: tensor<2x6xf32>) {
  // expected-error @+1 {{'nn.split' op axis 2 must be in [0, 2)}}
  %0:2 = nn.split %a {axis = 2 : i64} : (tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  return
}

// -----

// The axis is canonical: negative axes are resolved at import.
func.func @split_axis_negative(%a: tensor<2x6xf32>) {
  // expected-error @+1 {{'nn.split' op axis -1 must be in [0, 2)}}
  %0:2 = nn.split %a {axis = -1 : i64} : (tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  return
}

// -----

// A rank-0 input cannot be split.
func.func @split_rank0(%a: tensor<f32>) {
  // expected-error @+1 {{'nn.split' op axis 0 must be in [0, 0)}}
  %0 = nn.split %a {axis = 0 : i64} : (tensor<f32>) -> tensor<f32>
  return
}

// -----

// split needs at least one result.
func.func @split_no_results(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.split' op needs at least one result}}
  nn.split %a {axis = 0 : i64} : (tensor<4xf32>) -> ()
  return
}

// -----

// Results agree with the input outside the axis.
func.func @split_mismatch_outside_axis(%a: tensor<2x6xf32>) {
  // expected-error @+1 {{'nn.split' op result shape [3, 2] differs from the input [2, 6] outside axis 1}}
  %0:2 = nn.split %a {axis = 1 : i64} : (tensor<2x6xf32>) -> (tensor<2x4xf32>, tensor<3x2xf32>)
  return
}

// -----

// Results have the input's rank.
func.func @split_result_rank(%a: tensor<2x6xf32>) {
  // expected-error @+1 {{'nn.split' op result shape [6] differs from the input [2, 6] outside axis 1}}
  %0:2 = nn.split %a {axis = 1 : i64} : (tensor<2x6xf32>) -> (tensor<6xf32>, tensor<2x0xf32>)
  return
}

// -----

// Results have the input's element type.
func.func @split_element_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.split' op results must have the input's element type}}
  %0:2 = nn.split %a {axis = 0 : i64} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf16>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// slice
//===----------------------------------------------------------------------===//

// One start, end and step per dimension.
func.func @slice_wrong_count(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'nn.slice' op starts, ends and steps need one entry per dimension (2)}}
  %0 = nn.slice %a {starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : tensor<4x4xf32> to tensor<4x4xf32>
  return
}

// -----

// steps must have one entry per dimension too.
func.func @slice_wrong_step_count(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.slice' op starts, ends and steps need one entry per dimension (1)}}
  %0 = nn.slice %a {starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1, 1>} : tensor<4xf32> to tensor<4xf32>
  return
}

// -----

// A zero step is never valid.
func.func @slice_zero_step(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.slice' op dimension 0 (size 4): start 0, end 4, step 0 are not a clamped slice}}
  %0 = nn.slice %a {starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 0>} : tensor<4xf32> to tensor<4xf32>
  return
}

// -----

// Bounds are already clamped: a negative start (ONNX's "from the end") is
// resolved at import.
func.func @slice_negative_start(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.slice' op dimension 0 (size 4): start -1, end 4, step 1 are not a clamped slice}}
  %0 = nn.slice %a {starts = array<i64: -1>, ends = array<i64: 4>, steps = array<i64: 1>} : tensor<4xf32> to tensor<1xf32>
  return
}

// -----

// With a positive step the end is at most the dimension (INT64_MAX-style
// "to the end" is clamped at import).
func.func @slice_end_past_dim(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{'nn.slice' op dimension 1 (size 4): start 0, end 5, step 1 are not a clamped slice}}
  %0 = nn.slice %a {starts = array<i64: 0, 0>, ends = array<i64: 3, 5>, steps = array<i64: 1, 1>} : tensor<3x4xf32> to tensor<3x4xf32>
  return
}

// -----

// With a positive step the end is at least 0: -1 is only meaningful for a
// negative step.
func.func @slice_forward_end_minus_one(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.slice' op dimension 0 (size 4): start 0, end -1, step 1 are not a clamped slice}}
  %0 = nn.slice %a {starts = array<i64: 0>, ends = array<i64: -1>, steps = array<i64: 1>} : tensor<4xf32> to tensor<0xf32>
  return
}

// -----

// With a negative step the start is at most dim - 1.
func.func @slice_backward_start_at_dim(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.slice' op dimension 0 (size 4): start 4, end -1, step -1 are not a clamped slice}}
  %0 = nn.slice %a {starts = array<i64: 4>, ends = array<i64: -1>, steps = array<i64: -1>} : tensor<4xf32> to tensor<4xf32>
  return
}

// -----

// With a negative step the end is at least -1.
func.func @slice_backward_end_below(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.slice' op dimension 0 (size 4): start 3, end -2, step -1 are not a clamped slice}}
  %0 = nn.slice %a {starts = array<i64: 3>, ends = array<i64: -2>, steps = array<i64: -1>} : tensor<4xf32> to tensor<4xf32>
  return
}

// -----

// With a negative step the end is at most dim - 1.
func.func @slice_backward_end_at_dim(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.slice' op dimension 0 (size 4): start 3, end 4, step -1 are not a clamped slice}}
  %0 = nn.slice %a {starts = array<i64: 3>, ends = array<i64: 4>, steps = array<i64: -1>} : tensor<4xf32> to tensor<0xf32>
  return
}

// -----

// The result dimension is ceil((end - start) / step): 0..7 by 2 is 4.
func.func @slice_wrong_result(%a: tensor<8xf32>) {
  // expected-error @+1 {{'nn.slice' op result shape [3] does not match the expected [4]}}
  %0 = nn.slice %a {starts = array<i64: 0>, ends = array<i64: 7>, steps = array<i64: 2>} : tensor<8xf32> to tensor<3xf32>
  return
}

// -----

// start > end with a positive step selects nothing.
func.func @slice_empty_result(%a: tensor<8xf32>) {
  // expected-error @+1 {{'nn.slice' op result shape [2] does not match the expected [0]}}
  %0 = nn.slice %a {starts = array<i64: 5>, ends = array<i64: 3>, steps = array<i64: 1>} : tensor<8xf32> to tensor<2xf32>
  return
}

// -----

// A backward slice of a zero-sized dimension is empty (regression: the
// canonical bounds start 0, end -1 were counted as one element).
func.func @slice_backward_zero_sized(%a: tensor<0xf32>) {
  // expected-error @+1 {{'nn.slice' op result shape [1] does not match the expected [0]}}
  %0 = nn.slice %a {starts = array<i64: 0>, ends = array<i64: -1>, steps = array<i64: -1>} : tensor<0xf32> to tensor<1xf32>
  return
}

// -----

// A huge step takes one element (regression: ceil(span / step) overflowed
// and expected [0]).
func.func @slice_huge_step_result(%a: tensor<10xf32>) {
  // expected-error @+1 {{'nn.slice' op result shape [0] does not match the expected [1]}}
  %0 = nn.slice %a {starts = array<i64: 0>, ends = array<i64: 10>, steps = array<i64: 9223372036854775807>} : tensor<10xf32> to tensor<0xf32>
  return
}

// -----

// The most negative step, -2^63, is rejected: its magnitude does not fit in
// an int64.
func.func @slice_min_step(%a: tensor<10xf32>) {
  // expected-error @+1 {{'nn.slice' op dimension 0 (size 10): start 9, end -1, step -9223372036854775808 are not a clamped slice}}
  %0 = nn.slice %a {starts = array<i64: 9>, ends = array<i64: -1>, steps = array<i64: -9223372036854775808>} : tensor<10xf32> to tensor<1xf32>
  return
}

// -----

// A huge negative step takes one element (regression: -step + span - 1
// overflowed).
func.func @slice_huge_negative_step_result(%a: tensor<10xf32>) {
  // expected-error @+1 {{'nn.slice' op result shape [2] does not match the expected [1]}}
  %0 = nn.slice %a {starts = array<i64: 9>, ends = array<i64: -1>, steps = array<i64: -9223372036854775807>} : tensor<10xf32> to tensor<2xf32>
  return
}

// -----

// slice keeps the element type.
func.func @slice_element_type(%a: tensor<4xi32>) {
  // expected-error @+1 {{'nn.slice' op requires the same element type for all operands and results}}
  %0 = nn.slice %a {starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : tensor<4xi32> to tensor<4xi64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// expand
//===----------------------------------------------------------------------===//

// expand's result must be a numpy broadcast of the input: 3 and 4 conflict.
func.func @expand_not_broadcast(%a: tensor<3xf32>) {
  // expected-error @+1 {{'nn.expand' op shapes [3], [4] are not broadcast-compatible}}
  %0 = nn.expand %a : tensor<3xf32> to tensor<4xf32>
  return
}

// -----

// expand cannot drop dimensions.
func.func @expand_lower_rank(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.expand' op result shape [3] does not match the expected [2, 3]}}
  %0 = nn.expand %a : tensor<2x3xf32> to tensor<3xf32>
  return
}

// -----

// expand cannot shrink a dimension to 1 (the result would have to be the
// broadcast [3, 4]).
func.func @expand_shrink_to_one(%a: tensor<3x1xf32>) {
  // expected-error @+1 {{'nn.expand' op result shape [1, 4] does not match the expected [3, 4]}}
  %0 = nn.expand %a : tensor<3x1xf32> to tensor<1x4xf32>
  return
}

// -----

// expand keeps the element type.
func.func @expand_element_type(%a: tensor<1xi1>) {
  // expected-error @+1 {{'nn.expand' op requires the same element type for all operands and results}}
  %0 = nn.expand %a : tensor<1xi1> to tensor<4xi8>
  return
}

// -----

//===----------------------------------------------------------------------===//
// gather
//===----------------------------------------------------------------------===//

// The axis must be inside data's rank.
func.func @gather_axis_out_of_range(%d: tensor<4x8xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'nn.gather' op axis 2 is out of range for rank 2}}
  %0 = nn.gather %d, %i {axis = 2 : i64} : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<4x8x2xf32>
  return
}

// -----

// The axis is canonical: negative axes are resolved at import.
func.func @gather_axis_negative(%d: tensor<4x8xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'nn.gather' op axis -1 is out of range for rank 2}}
  %0 = nn.gather %d, %i {axis = -1 : i64} : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return
}

// -----

// Rank-0 data has nothing to gather from.
func.func @gather_rank0_data(%d: tensor<f32>, %i: tensor<i64>) {
  // expected-error @+1 {{'nn.gather' op axis 0 is out of range for rank 0}}
  %0 = nn.gather %d, %i {axis = 0 : i64} : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

// The result is data[:axis] + indices + data[axis+1:]: the indices' shape
// replaces the gathered dimension.
func.func @gather_wrong_result(%d: tensor<100x16xf32>, %i: tensor<2x8xi64>) {
  // expected-error @+1 {{'nn.gather' op result shape [2, 16] does not match the expected [2, 8, 16]}}
  %0 = nn.gather %d, %i {axis = 0 : i64} : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x16xf32>
  return
}

// -----

// Gathering along an inner axis keeps the outer dimensions in front.
func.func @gather_inner_axis_result(%d: tensor<2x5x3xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{'nn.gather' op result shape [4, 2, 3] does not match the expected [2, 4, 3]}}
  %0 = nn.gather %d, %i {axis = 1 : i64} : (tensor<2x5x3xf32>, tensor<4xi32>) -> tensor<4x2x3xf32>
  return
}

// -----

// The result has data's element type.
func.func @gather_element_type(%d: tensor<4x8xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'nn.gather' op result must have the data's element type}}
  %0 = nn.gather %d, %i {axis = 0 : i64} : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<2x8xf16>
  return
}

// -----

// Indices are i32 or i64: i16 is rejected.
func.func @gather_i16_indices(%d: tensor<4x8xf32>, %i: tensor<2xi16>) {
  // expected-error @+1 {{'nn.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xi16>'}}
  %0 = nn.gather %d, %i {axis = 0 : i64} : (tensor<4x8xf32>, tensor<2xi16>) -> tensor<2x8xf32>
  return
}

// -----

// Indices are signed: ui32 is rejected.
func.func @gather_unsigned_indices(%d: tensor<4x8xf32>, %i: tensor<2xui32>) {
  // expected-error @+1 {{'nn.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xui32>'}}
  %0 = nn.gather %d, %i {axis = 0 : i64} : (tensor<4x8xf32>, tensor<2xui32>) -> tensor<2x8xf32>
  return
}

// -----

// Indices are integers: float indices are rejected.
func.func @gather_float_indices(%d: tensor<4x8xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{'nn.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xf32>'}}
  %0 = nn.gather %d, %i {axis = 0 : i64} : (tensor<4x8xf32>, tensor<2xf32>) -> tensor<2x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// trilu
//===----------------------------------------------------------------------===//

// trilu works on matrices: rank 1 is rejected.
func.func @trilu_rank1(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.trilu' op input must have rank >= 2}}
  %0 = nn.trilu %a {upper = true} : tensor<4xf32>
  return
}

// -----

// Rank 0 is rejected too.
func.func @trilu_rank0(%a: tensor<i1>) {
  // expected-error @+1 {{'nn.trilu' op input must have rank >= 2}}
  %0 = nn.trilu %a {upper = false} : tensor<i1>
  return
}

// -----

// upper is required (ONNX's default is filled in at import).
func.func @trilu_missing_upper(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'nn.trilu' op requires attribute 'upper'}}
  %0 = nn.trilu %a : tensor<4x4xf32>
  return
}

// -----

// trilu keeps its input type (checked in generic form).
func.func @trilu_result_type(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'nn.trilu' op failed to verify that all of {input, result} have same type}}
  %0 = "nn.trilu"(%a) {upper = true} : (tensor<4x4xf32>) -> tensor<4x4xf16>
  return
}

// -----

// Element counts are compared without wrap-around: 2^32 x 2^32 is not 0.
func.func @reshape_count_overflow(%arg0: tensor<4294967296x4294967296xi8>) -> tensor<0xi8> {
  // expected-error @+1 {{element count overflows int64}}
  %0 = nn.reshape %arg0 : tensor<4294967296x4294967296xi8> to tensor<0xi8>
  return %0 : tensor<0xi8>
}
