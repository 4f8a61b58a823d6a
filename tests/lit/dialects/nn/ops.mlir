// RUN: fsdp-opt %s -split-input-file | fsdp-opt - -split-input-file | FileCheck %s

// Round trip of every nn op through its custom assembly format: each case is
// parsed, verified, printed, parsed and verified again, and the second print
// must still spell the same op, attributes and types. Cases cover the element
// types each op admits (signed, unsigned, bool where allowed), numpy
// broadcasting, and optional operands both present and absent.

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// add on equal f32 shapes: the result has the common shape.
// CHECK-LABEL: func @add_f32
// CHECK: nn.add %arg0, %arg1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @add_f32(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = nn.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// add on unsigned 8-bit integers (ONNX uint8), which arith cannot express.
// CHECK-LABEL: func @add_ui8
// CHECK: nn.add %arg0, %arg1 : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
func.func @add_ui8(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xui8> {
  %0 = nn.add %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// add broadcasting a trailing-aligned lower-rank operand (bias add).
// CHECK-LABEL: func @add_broadcast_bias
// CHECK: nn.add %arg0, %arg1 : (tensor<2x8x16xbf16>, tensor<16xbf16>) -> tensor<2x8x16xbf16>
func.func @add_broadcast_bias(%a: tensor<2x8x16xbf16>, %b: tensor<16xbf16>) -> tensor<2x8x16xbf16> {
  %0 = nn.add %a, %b : (tensor<2x8x16xbf16>, tensor<16xbf16>) -> tensor<2x8x16xbf16>
  return %0 : tensor<2x8x16xbf16>
}

// -----

// torch's wrapped number: a bf16/f16 tensor with a rank-0 f32 operand on
// either side of add/sub/mul/div gives the tensor's type.
// CHECK-LABEL: func @wrapped_scalar
// CHECK: nn.mul %arg0, %arg1 : (tensor<2x3xbf16>, tensor<f32>) -> tensor<2x3xbf16>
// CHECK: nn.add %arg1, %arg0 : (tensor<f32>, tensor<2x3xbf16>) -> tensor<2x3xbf16>
// CHECK: nn.sub %arg2, %arg1 : (tensor<4xf16>, tensor<f32>) -> tensor<4xf16>
// CHECK: nn.div %arg1, %arg2 : (tensor<f32>, tensor<4xf16>) -> tensor<4xf16>
func.func @wrapped_scalar(%a: tensor<2x3xbf16>, %s: tensor<f32>, %h: tensor<4xf16>) {
  %0 = nn.mul %a, %s : (tensor<2x3xbf16>, tensor<f32>) -> tensor<2x3xbf16>
  %1 = nn.add %s, %a : (tensor<f32>, tensor<2x3xbf16>) -> tensor<2x3xbf16>
  %2 = nn.sub %h, %s : (tensor<4xf16>, tensor<f32>) -> tensor<4xf16>
  %3 = nn.div %s, %h : (tensor<f32>, tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

// sub with a rank-0 (scalar) right operand on signed 32-bit integers.
// CHECK-LABEL: func @sub_scalar_i32
// CHECK: nn.sub %arg0, %arg1 : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
func.func @sub_scalar_i32(%a: tensor<2x3xi32>, %b: tensor<i32>) -> tensor<2x3xi32> {
  %0 = nn.sub %a, %b : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

// sub of two rank-0 tensors gives a rank-0 tensor.
// CHECK-LABEL: func @sub_rank0
// CHECK: nn.sub %arg0, %arg1 : (tensor<f64>, tensor<f64>) -> tensor<f64>
func.func @sub_rank0(%a: tensor<f64>, %b: tensor<f64>) -> tensor<f64> {
  %0 = nn.sub %a, %b : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %0 : tensor<f64>
}

// -----

// mul broadcasting in both directions: [4, 1] * [1, 5] -> [4, 5].
// CHECK-LABEL: func @mul_broadcast_both
// CHECK: nn.mul %arg0, %arg1 : (tensor<4x1xf16>, tensor<1x5xf16>) -> tensor<4x5xf16>
func.func @mul_broadcast_both(%a: tensor<4x1xf16>, %b: tensor<1x5xf16>) -> tensor<4x5xf16> {
  %0 = nn.mul %a, %b : (tensor<4x1xf16>, tensor<1x5xf16>) -> tensor<4x5xf16>
  return %0 : tensor<4x5xf16>
}

// -----

// mul on unsigned 64-bit integers where the left operand has the lower rank.
// CHECK-LABEL: func @mul_ui64_lhs_lower_rank
// CHECK: nn.mul %arg0, %arg1 : (tensor<3xui64>, tensor<2x1x3xui64>) -> tensor<2x1x3xui64>
func.func @mul_ui64_lhs_lower_rank(%a: tensor<3xui64>, %b: tensor<2x1x3xui64>) -> tensor<2x1x3xui64> {
  %0 = nn.mul %a, %b : (tensor<3xui64>, tensor<2x1x3xui64>) -> tensor<2x1x3xui64>
  return %0 : tensor<2x1x3xui64>
}

// -----

// div on signed 64-bit integers (ONNX truncating integer division).
// CHECK-LABEL: func @div_i64
// CHECK: nn.div %arg0, %arg1 : (tensor<5xi64>, tensor<1xi64>) -> tensor<5xi64>
func.func @div_i64(%a: tensor<5xi64>, %b: tensor<1xi64>) -> tensor<5xi64> {
  %0 = nn.div %a, %b : (tensor<5xi64>, tensor<1xi64>) -> tensor<5xi64>
  return %0 : tensor<5xi64>
}

// -----

// A zero-sized dimension broadcasts against 1 and stays 0, as in numpy.
// CHECK-LABEL: func @add_zero_sized
// CHECK: nn.add %arg0, %arg1 : (tensor<0x3xf32>, tensor<1x3xf32>) -> tensor<0x3xf32>
func.func @add_zero_sized(%a: tensor<0x3xf32>, %b: tensor<1x3xf32>) -> tensor<0x3xf32> {
  %0 = nn.add %a, %b : (tensor<0x3xf32>, tensor<1x3xf32>) -> tensor<0x3xf32>
  return %0 : tensor<0x3xf32>
}

// -----

// pow with an exponent of another numeric element type (ONNX Pow allows it);
// the result takes the base's element type and the broadcast shape.
// CHECK-LABEL: func @pow_mixed_types
// CHECK: nn.pow %arg0, %arg1 : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
func.func @pow_mixed_types(%a: tensor<2x3xf32>, %b: tensor<i64>) -> tensor<2x3xf32> {
  %0 = nn.pow %a, %b : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// pow on integers, exponent broadcast across rows.
// CHECK-LABEL: func @pow_i32
// CHECK: nn.pow %arg0, %arg1 : (tensor<4x2xi32>, tensor<2xui8>) -> tensor<4x2xi32>
func.func @pow_i32(%a: tensor<4x2xi32>, %b: tensor<2xui8>) -> tensor<4x2xi32> {
  %0 = nn.pow %a, %b : (tensor<4x2xi32>, tensor<2xui8>) -> tensor<4x2xi32>
  return %0 : tensor<4x2xi32>
}

// -----

// where broadcasts all three operands: [2, 1] cond, [1, 3] x, scalar y.
// CHECK-LABEL: func @where_broadcast
// CHECK: nn.where %arg0, %arg1, %arg2 : (tensor<2x1xi1>, tensor<1x3xf32>, tensor<f32>) -> tensor<2x3xf32>
func.func @where_broadcast(%c: tensor<2x1xi1>, %x: tensor<1x3xf32>, %y: tensor<f32>) -> tensor<2x3xf32> {
  %0 = nn.where %c, %x, %y : (tensor<2x1xi1>, tensor<1x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// where selecting between bool tensors (x, y and result are i1).
// CHECK-LABEL: func @where_i1
// CHECK: nn.where %arg0, %arg1, %arg2 : (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
func.func @where_i1(%c: tensor<4xi1>, %x: tensor<4xi1>, %y: tensor<4xi1>) -> tensor<4xi1> {
  %0 = nn.where %c, %x, %y : (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// where selecting between unsigned integers; the condition has the larger rank.
// CHECK-LABEL: func @where_ui16
// CHECK: nn.where %arg0, %arg1, %arg2 : (tensor<2x4xi1>, tensor<4xui16>, tensor<1xui16>) -> tensor<2x4xui16>
func.func @where_ui16(%c: tensor<2x4xi1>, %x: tensor<4xui16>, %y: tensor<1xui16>) -> tensor<2x4xui16> {
  %0 = nn.where %c, %x, %y : (tensor<2x4xi1>, tensor<4xui16>, tensor<1xui16>) -> tensor<2x4xui16>
  return %0 : tensor<2x4xui16>
}

// -----

// neg and relu accept floats and signed integers.
// CHECK-LABEL: func @neg_relu
// CHECK: nn.neg %arg0 : tensor<3xf32>
// CHECK: nn.neg %arg1 : tensor<3xi8>
// CHECK: nn.relu %arg0 : tensor<3xf32>
// CHECK: nn.relu %arg1 : tensor<3xi8>
// CHECK: nn.relu %arg2 : tensor<2x2xbf16>
func.func @neg_relu(%a: tensor<3xf32>, %b: tensor<3xi8>, %c: tensor<2x2xbf16>) {
  %0 = nn.neg %a : tensor<3xf32>
  %1 = nn.neg %b : tensor<3xi8>
  %2 = nn.relu %a : tensor<3xf32>
  %3 = nn.relu %b : tensor<3xi8>
  %4 = nn.relu %c : tensor<2x2xbf16>
  return
}

// -----

// The float-only unary math ops, each on a different float element type,
// including a rank-0 input.
// CHECK-LABEL: func @unary_float
// CHECK: nn.exp %arg0 : tensor<2x3xf16>
// CHECK: nn.log %arg1 : tensor<4xf64>
// CHECK: nn.sqrt %arg2 : tensor<bf16>
// CHECK: nn.erf %arg3 : tensor<8xf32>
// CHECK: nn.tanh %arg3 : tensor<8xf32>
// CHECK: nn.sigmoid %arg3 : tensor<8xf32>
func.func @unary_float(%a: tensor<2x3xf16>, %b: tensor<4xf64>, %c: tensor<bf16>, %d: tensor<8xf32>) {
  %0 = nn.exp %a : tensor<2x3xf16>
  %1 = nn.log %b : tensor<4xf64>
  %2 = nn.sqrt %c : tensor<bf16>
  %3 = nn.erf %d : tensor<8xf32>
  %4 = nn.tanh %d : tensor<8xf32>
  %5 = nn.sigmoid %d : tensor<8xf32>
  return
}

// -----

// not on a bool tensor.
// CHECK-LABEL: func @not_i1
// CHECK: nn.not %arg0 : tensor<2x2xi1>
func.func @not_i1(%a: tensor<2x2xi1>) -> tensor<2x2xi1> {
  %0 = nn.not %a : tensor<2x2xi1>
  return %0 : tensor<2x2xi1>
}

// -----

// cast between any two admitted element types with the shape unchanged:
// float narrowing, bool to float, unsigned widening to signed, float to bool,
// and a rank-0 cast.
// CHECK-LABEL: func @cast
// CHECK: nn.cast %arg0 : tensor<2x3xf32> to tensor<2x3xbf16>
// CHECK: nn.cast %arg1 : tensor<4xi1> to tensor<4xf32>
// CHECK: nn.cast %arg2 : tensor<4xui8> to tensor<4xi64>
// CHECK: nn.cast %arg0 : tensor<2x3xf32> to tensor<2x3xi1>
// CHECK: nn.cast %arg3 : tensor<f64> to tensor<ui32>
func.func @cast(%a: tensor<2x3xf32>, %b: tensor<4xi1>, %c: tensor<4xui8>, %d: tensor<f64>) {
  %0 = nn.cast %a : tensor<2x3xf32> to tensor<2x3xbf16>
  %1 = nn.cast %b : tensor<4xi1> to tensor<4xf32>
  %2 = nn.cast %c : tensor<4xui8> to tensor<4xi64>
  %3 = nn.cast %a : tensor<2x3xf32> to tensor<2x3xi1>
  %4 = nn.cast %d : tensor<f64> to tensor<ui32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

// matmul of two matrices.
// CHECK-LABEL: func @matmul_2d
// CHECK: nn.matmul %arg0, %arg1 : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
func.func @matmul_2d(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %0 = nn.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// matmul broadcasting batch dimensions of different rank: [2, 1] x [5] -> [2, 5].
// CHECK-LABEL: func @matmul_batch_broadcast
// CHECK: nn.matmul %arg0, %arg1 : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
func.func @matmul_batch_broadcast(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32> {
  %0 = nn.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
  return %0 : tensor<2x5x3x6xf32>
}

// -----

// matmul of a batched lhs with a shared 2-D weight (the nn.Linear pattern).
// CHECK-LABEL: func @matmul_batch_weight
// CHECK: nn.matmul %arg0, %arg1 : (tensor<2x8x32xbf16>, tensor<32x64xbf16>) -> tensor<2x8x64xbf16>
func.func @matmul_batch_weight(%a: tensor<2x8x32xbf16>, %b: tensor<32x64xbf16>) -> tensor<2x8x64xbf16> {
  %0 = nn.matmul %a, %b : (tensor<2x8x32xbf16>, tensor<32x64xbf16>) -> tensor<2x8x64xbf16>
  return %0 : tensor<2x8x64xbf16>
}

// -----

// matmul with a 1-D lhs: promoted to a row vector, the row dim is dropped.
// CHECK-LABEL: func @matmul_vec_mat
// CHECK: nn.matmul %arg0, %arg1 : (tensor<4xf32>, tensor<4x6xf32>) -> tensor<6xf32>
func.func @matmul_vec_mat(%a: tensor<4xf32>, %b: tensor<4x6xf32>) -> tensor<6xf32> {
  %0 = nn.matmul %a, %b : (tensor<4xf32>, tensor<4x6xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// matmul with a 1-D rhs: promoted to a column vector, the column dim is dropped.
// CHECK-LABEL: func @matmul_mat_vec
// CHECK: nn.matmul %arg0, %arg1 : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
func.func @matmul_mat_vec(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3xf32> {
  %0 = nn.matmul %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// matmul of two vectors is a dot product with a rank-0 result.
// CHECK-LABEL: func @matmul_vec_vec
// CHECK: nn.matmul %arg0, %arg1 : (tensor<4xf64>, tensor<4xf64>) -> tensor<f64>
func.func @matmul_vec_vec(%a: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<f64> {
  %0 = nn.matmul %a, %b : (tensor<4xf64>, tensor<4xf64>) -> tensor<f64>
  return %0 : tensor<f64>
}

// -----

// matmul of a batched matrix with a vector, and of a vector with a batched
// matrix: the promoted dimension is dropped, the batch dimension kept.
// CHECK-LABEL: func @matmul_batch_vec
// CHECK: nn.matmul %arg0, %arg1 : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>
// CHECK: nn.matmul %arg1, %arg2 : (tensor<4xf32>, tensor<2x4x6xf32>) -> tensor<2x6xf32>
func.func @matmul_batch_vec(%a: tensor<2x3x4xf32>, %v: tensor<4xf32>, %b: tensor<2x4x6xf32>) {
  %0 = nn.matmul %a, %v : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  %1 = nn.matmul %v, %b : (tensor<4xf32>, tensor<2x4x6xf32>) -> tensor<2x6xf32>
  return
}

// -----

// matmul on signed and unsigned 8-bit integers (ONNX MatMul on int8/uint8).
// CHECK-LABEL: func @matmul_int
// CHECK: nn.matmul %arg0, %arg1 : (tensor<2x3xi8>, tensor<3x2xi8>) -> tensor<2x2xi8>
// CHECK: nn.matmul %arg2, %arg3 : (tensor<2x3xui8>, tensor<3x2xui8>) -> tensor<2x2xui8>
func.func @matmul_int(%a: tensor<2x3xi8>, %b: tensor<3x2xi8>, %c: tensor<2x3xui8>, %d: tensor<3x2xui8>) {
  %0 = nn.matmul %a, %b : (tensor<2x3xi8>, tensor<3x2xi8>) -> tensor<2x2xi8>
  %1 = nn.matmul %c, %d : (tensor<2x3xui8>, tensor<3x2xui8>) -> tensor<2x2xui8>
  return
}

// -----

// gemm without the optional bias; default alpha/beta/trans are not printed.
// CHECK-LABEL: func @gemm_no_bias
// CHECK: nn.gemm %arg0, %arg1 : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
func.func @gemm_no_bias(%a: tensor<8x32xf32>, %b: tensor<32x64xf32>) -> tensor<8x64xf32> {
  %0 = nn.gemm %a, %b : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}

// -----

// gemm with a 1-D bias and trans_b (torch's nn.Linear export).
// CHECK-LABEL: func @gemm_linear
// CHECK: nn.gemm %arg0, %arg1, %arg2 {trans_b = true} : (tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<8x64xf32>
func.func @gemm_linear(%x: tensor<8x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %0 = nn.gemm %x, %w, %b {trans_b = true} : (tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}

// -----

// gemm with both operands transposed, alpha/beta set, and an [M, 1] bias
// broadcasting along N.
// CHECK-LABEL: func @gemm_trans_both
// CHECK: nn.gemm %arg0, %arg1, %arg2 {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a = true, trans_b = true} : (tensor<4x3xf16>, tensor<5x4xf16>, tensor<3x1xf16>) -> tensor<3x5xf16>
func.func @gemm_trans_both(%a: tensor<4x3xf16>, %b: tensor<5x4xf16>, %c: tensor<3x1xf16>) -> tensor<3x5xf16> {
  %0 = nn.gemm %a, %b, %c {alpha = 0.5 : f32, beta = 2.0 : f32, trans_a = true, trans_b = true} : (tensor<4x3xf16>, tensor<5x4xf16>, tensor<3x1xf16>) -> tensor<3x5xf16>
  return %0 : tensor<3x5xf16>
}

// -----

// gemm on i32 with a rank-0 bias, and with a full [M, N] bias.
// CHECK-LABEL: func @gemm_int_bias
// CHECK: nn.gemm %arg0, %arg1, %arg2 : (tensor<2x3xi32>, tensor<3x4xi32>, tensor<i32>) -> tensor<2x4xi32>
// CHECK: nn.gemm %arg0, %arg1, %arg3 : (tensor<2x3xi32>, tensor<3x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
func.func @gemm_int_bias(%a: tensor<2x3xi32>, %b: tensor<3x4xi32>, %s: tensor<i32>, %c: tensor<2x4xi32>) {
  %0 = nn.gemm %a, %b, %s : (tensor<2x3xi32>, tensor<3x4xi32>, tensor<i32>) -> tensor<2x4xi32>
  %1 = nn.gemm %a, %b, %c : (tensor<2x3xi32>, tensor<3x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

// softmax over the last axis and log_softmax over the first.
// CHECK-LABEL: func @softmax
// CHECK: nn.softmax %arg0 {axis = 2 : i64} : tensor<2x4x8xf32>
// CHECK: nn.log_softmax %arg1 {axis = 0 : i64} : tensor<16xf16>
func.func @softmax(%a: tensor<2x4x8xf32>, %b: tensor<16xf16>) {
  %0 = nn.softmax %a {axis = 2 : i64} : tensor<2x4x8xf32>
  %1 = nn.log_softmax %b {axis = 0 : i64} : tensor<16xf16>
  return
}

// -----

// layer_norm over the last axis with scale and bias; mean and inv_std_dev
// are the input shape with the normalized dimension set to 1.
// CHECK-LABEL: func @layer_norm_bias
// CHECK: nn.layer_norm %arg0, %arg1, %arg2 {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
func.func @layer_norm_bias(%x: tensor<2x8x32xf32>, %s: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %y, %mean, %inv = nn.layer_norm %x, %s, %b {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
  return %y : tensor<2x8x32xf32>
}

// -----

// layer_norm without bias, normalizing the trailing two dimensions; the
// scale broadcasts onto them ([1, 32] onto [8, 32]).
// CHECK-LABEL: func @layer_norm_no_bias
// CHECK: nn.layer_norm %arg0, %arg1 {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x8x32xbf16>, tensor<1x32xbf16>) -> (tensor<2x8x32xbf16>, tensor<2x1x1xbf16>, tensor<2x1x1xbf16>)
func.func @layer_norm_no_bias(%x: tensor<2x8x32xbf16>, %s: tensor<1x32xbf16>) -> tensor<2x8x32xbf16> {
  %y, %mean, %inv = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8x32xbf16>, tensor<1x32xbf16>) -> (tensor<2x8x32xbf16>, tensor<2x1x1xbf16>, tensor<2x1x1xbf16>)
  return %y : tensor<2x8x32xbf16>
}

// -----

// layer_norm over every dimension (axis 0) with a rank-0 scale; the
// statistics are all ones in shape. Their element type may differ from the
// input's (ONNX's stash_type: f32 statistics for f16 data).
// CHECK-LABEL: func @layer_norm_axis0_stash_f32
// CHECK: nn.layer_norm %arg0, %arg1 {axis = 0 : i64, epsilon = 1.000000e-03 : f32} : (tensor<4x6xf16>, tensor<f16>) -> (tensor<4x6xf16>, tensor<1x1xf32>, tensor<1x1xf32>)
func.func @layer_norm_axis0_stash_f32(%x: tensor<4x6xf16>, %s: tensor<f16>) -> tensor<4x6xf16> {
  %y, %mean, %inv = nn.layer_norm %x, %s {axis = 0 : i64, epsilon = 1.0e-3 : f32} : (tensor<4x6xf16>, tensor<f16>) -> (tensor<4x6xf16>, tensor<1x1xf32>, tensor<1x1xf32>)
  return %y : tensor<4x6xf16>
}

// -----

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// reduce_sum keeps reduced dimensions as 1 by default (keepdims is not printed).
// CHECK-LABEL: func @reduce_sum_keepdims
// CHECK: nn.reduce_sum %arg0 {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
func.func @reduce_sum_keepdims(%a: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %0 = nn.reduce_sum %a {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return %0 : tensor<2x1x4xf32>
}

// -----

// reduce_sum on i64 without keepdims drops the reduced dimensions.
// CHECK-LABEL: func @reduce_sum_drop
// CHECK: nn.reduce_sum %arg0 {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xi64>) -> tensor<3xi64>
func.func @reduce_sum_drop(%a: tensor<2x3x4xi64>) -> tensor<3xi64> {
  %0 = nn.reduce_sum %a {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xi64>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// reduce_max over several axes of an unsigned tensor, keeping dimensions.
// CHECK-LABEL: func @reduce_max_ui32
// CHECK: nn.reduce_max %arg0 {axes = array<i64: 1, 2>} : (tensor<2x3x4xui32>) -> tensor<2x1x1xui32>
func.func @reduce_max_ui32(%a: tensor<2x3x4xui32>) -> tensor<2x1x1xui32> {
  %0 = nn.reduce_max %a {axes = array<i64: 1, 2>} : (tensor<2x3x4xui32>) -> tensor<2x1x1xui32>
  return %0 : tensor<2x1x1xui32>
}

// -----

// reduce_mean over all axes without keepdims gives a rank-0 result.
// CHECK-LABEL: func @reduce_mean_all
// CHECK: nn.reduce_mean %arg0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf16>) -> tensor<f16>
func.func @reduce_mean_all(%a: tensor<2x3xf16>) -> tensor<f16> {
  %0 = nn.reduce_mean %a {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf16>) -> tensor<f16>
  return %0 : tensor<f16>
}

// -----

// An empty axes list reduces nothing (ONNX noop_with_empty_axes, resolved at
// import): the result is the input shape, also for a rank-0 input.
// CHECK-LABEL: func @reduce_empty_axes
// CHECK: nn.reduce_sum %arg0 {axes = array<i64>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: nn.reduce_max %arg1 {axes = array<i64>, keepdims = false} : (tensor<i8>) -> tensor<i8>
func.func @reduce_empty_axes(%a: tensor<2x3xf32>, %b: tensor<i8>) {
  %0 = nn.reduce_sum %a {axes = array<i64>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.reduce_max %b {axes = array<i64>, keepdims = false} : (tensor<i8>) -> tensor<i8>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// softmax_cross_entropy with mean reduction, i64 labels, no weights: a rank-0
// loss and log-probabilities shaped like the scores.
// CHECK-LABEL: func @sce_mean
// CHECK: nn.softmax_cross_entropy %arg0, %arg1 {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf32>)
func.func @sce_mean(%s: tensor<8x10xf32>, %l: tensor<8xi64>) -> tensor<f32> {
  %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf32>)
  return %loss : tensor<f32>
}

// -----

// softmax_cross_entropy with class weights, ignore_index and i32 labels,
// summed.
// CHECK-LABEL: func @sce_weights
// CHECK: nn.softmax_cross_entropy %arg0, %arg1, %arg2 {ignore_index = -100 : i64, reduction = "sum"} : (tensor<8x10xf16>, tensor<8xi32>, tensor<10xf16>) -> (tensor<f16>, tensor<8x10xf16>)
func.func @sce_weights(%s: tensor<8x10xf16>, %l: tensor<8xi32>, %w: tensor<10xf16>) -> tensor<f16> {
  %loss, %lp = nn.softmax_cross_entropy %s, %l, %w {reduction = "sum", ignore_index = -100 : i64} : (tensor<8x10xf16>, tensor<8xi32>, tensor<10xf16>) -> (tensor<f16>, tensor<8x10xf16>)
  return %loss : tensor<f16>
}

// -----

// softmax_cross_entropy over [N, C, d1] scores (sequence labels) with no
// reduction: the loss is [N, d1].
// CHECK-LABEL: func @sce_none_spatial
// CHECK: nn.softmax_cross_entropy %arg0, %arg1 {reduction = "none"} : (tensor<4x50x16xf32>, tensor<4x16xi64>) -> (tensor<4x16xf32>, tensor<4x50x16xf32>)
func.func @sce_none_spatial(%s: tensor<4x50x16xf32>, %l: tensor<4x16xi64>) -> tensor<4x16xf32> {
  %loss, %lp = nn.softmax_cross_entropy %s, %l {reduction = "none"} : (tensor<4x50x16xf32>, tensor<4x16xi64>) -> (tensor<4x16xf32>, tensor<4x50x16xf32>)
  return %loss : tensor<4x16xf32>
}

// -----

// nll_loss with mean reduction and no weights.
// CHECK-LABEL: func @nll_mean
// CHECK: nn.nll_loss %arg0, %arg1 {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
func.func @nll_mean(%x: tensor<8x10xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %0 = nn.nll_loss %x, %t {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// nll_loss with weights, ignore_index, i32 targets and no reduction over
// [N, C, d1, d2] input.
// CHECK-LABEL: func @nll_weights_none
// CHECK: nn.nll_loss %arg0, %arg1, %arg2 {ignore_index = 0 : i64, reduction = "none"} : (tensor<2x5x3x4xf64>, tensor<2x3x4xi32>, tensor<5xf64>) -> tensor<2x3x4xf64>
func.func @nll_weights_none(%x: tensor<2x5x3x4xf64>, %t: tensor<2x3x4xi32>, %w: tensor<5xf64>) -> tensor<2x3x4xf64> {
  %0 = nn.nll_loss %x, %t, %w {reduction = "none", ignore_index = 0 : i64} : (tensor<2x5x3x4xf64>, tensor<2x3x4xi32>, tensor<5xf64>) -> tensor<2x3x4xf64>
  return %0 : tensor<2x3x4xf64>
}

// -----

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

// reshape keeping the element count, including to and from rank 0, on bool
// and on a zero-sized tensor.
// CHECK-LABEL: func @reshape
// CHECK: nn.reshape %arg0 : tensor<2x3x4xf32> to tensor<6x4xf32>
// CHECK: nn.reshape %arg1 : tensor<1x1xi64> to tensor<i64>
// CHECK: nn.reshape %arg2 : tensor<i1> to tensor<1x1x1xi1>
// CHECK: nn.reshape %arg3 : tensor<0x4xui8> to tensor<2x0xui8>
func.func @reshape(%a: tensor<2x3x4xf32>, %b: tensor<1x1xi64>, %c: tensor<i1>, %d: tensor<0x4xui8>) {
  %0 = nn.reshape %a : tensor<2x3x4xf32> to tensor<6x4xf32>
  %1 = nn.reshape %b : tensor<1x1xi64> to tensor<i64>
  %2 = nn.reshape %c : tensor<i1> to tensor<1x1x1xi1>
  %3 = nn.reshape %d : tensor<0x4xui8> to tensor<2x0xui8>
  return
}

// -----

// A zero-sized dimension makes the element count 0 however large the other
// dimensions are (no overflow is reported for them).
// CHECK-LABEL: func @reshape_zero_sized_huge
// CHECK: nn.reshape %arg0 : tensor<0x4294967296x4294967296xf32> to tensor<0xf32>
func.func @reshape_zero_sized_huge(%a: tensor<0x4294967296x4294967296xf32>) -> tensor<0xf32> {
  %0 = nn.reshape %a : tensor<0x4294967296x4294967296xf32> to tensor<0xf32>
  return %0 : tensor<0xf32>
}

// -----

// transpose: result dimension i is input dimension perm[i]; also the
// identity permutation and a rank-0 transpose with an empty perm.
// CHECK-LABEL: func @transpose
// CHECK: nn.transpose %arg0 {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> to tensor<4x2x3xf32>
// CHECK: nn.transpose %arg1 {perm = array<i64: 0, 1>} : tensor<2x5xui8> to tensor<2x5xui8>
// CHECK: nn.transpose %arg2 {perm = array<i64>} : tensor<i1> to tensor<i1>
func.func @transpose(%a: tensor<2x3x4xf32>, %b: tensor<2x5xui8>, %c: tensor<i1>) {
  %0 = nn.transpose %a {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> to tensor<4x2x3xf32>
  %1 = nn.transpose %b {perm = array<i64: 0, 1>} : tensor<2x5xui8> to tensor<2x5xui8>
  %2 = nn.transpose %c {perm = array<i64>} : tensor<i1> to tensor<i1>
  return
}

// -----

// concat of three inputs along axis 1, and of a single bool input.
// CHECK-LABEL: func @concat
// CHECK: nn.concat %arg0, %arg1, %arg2 {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
// CHECK: nn.concat %arg3 {axis = 0 : i64} : (tensor<5xi1>) -> tensor<5xi1>
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>, %c: tensor<2x4xf32>, %d: tensor<5xi1>) {
  %0 = nn.concat %a, %b, %c {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %1 = nn.concat %d {axis = 0 : i64} : (tensor<5xi1>) -> tensor<5xi1>
  return
}

// -----

// split into uneven parts along axis 1, into a single part, and with a
// zero-sized part.
// CHECK-LABEL: func @split
// CHECK: nn.split %arg0 {axis = 1 : i64} : (tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>)
// CHECK: nn.split %arg1 {axis = 0 : i64} : (tensor<4xi64>) -> tensor<4xi64>
// CHECK: nn.split %arg1 {axis = 0 : i64} : (tensor<4xi64>) -> (tensor<0xi64>, tensor<4xi64>)
func.func @split(%a: tensor<2x6xf32>, %b: tensor<4xi64>) {
  %0:3 = nn.split %a {axis = 1 : i64} : (tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>)
  %1 = nn.split %b {axis = 0 : i64} : (tensor<4xi64>) -> tensor<4xi64>
  %2:2 = nn.split %b {axis = 0 : i64} : (tensor<4xi64>) -> (tensor<0xi64>, tensor<4xi64>)
  return
}

// -----

// slice with positive steps: a strided window rounds up ((7 - 1) / 2 -> 3)
// and start == end gives an empty dimension.
// CHECK-LABEL: func @slice_forward
// CHECK: nn.slice %arg0 {ends = array<i64: 7, 2>, starts = array<i64: 1, 2>, steps = array<i64: 2, 1>} : tensor<8x4xf32> to tensor<3x0xf32>
func.func @slice_forward(%a: tensor<8x4xf32>) -> tensor<3x0xf32> {
  %0 = nn.slice %a {starts = array<i64: 1, 2>, ends = array<i64: 7, 2>, steps = array<i64: 2, 1>} : tensor<8x4xf32> to tensor<3x0xf32>
  return %0 : tensor<3x0xf32>
}

// -----

// slice with a negative step: end = -1 means "through index 0", so
// [dim - 1, -1, -1] reverses the whole dimension; a stride of -2 from 4
// takes indices 4, 2.
// CHECK-LABEL: func @slice_reverse
// CHECK: nn.slice %arg0 {ends = array<i64: -1, 1>, starts = array<i64: 7, 4>, steps = array<i64: -1, -2>} : tensor<8x5xi32> to tensor<8x2xi32>
func.func @slice_reverse(%a: tensor<8x5xi32>) -> tensor<8x2xi32> {
  %0 = nn.slice %a {starts = array<i64: 7, 4>, ends = array<i64: -1, 1>, steps = array<i64: -1, -2>} : tensor<8x5xi32> to tensor<8x2xi32>
  return %0 : tensor<8x2xi32>
}

// -----

// slice with a step larger than the span takes exactly one element, even
// for the largest steps of either sign (no overflow in the rounding).
// CHECK-LABEL: func @slice_huge_step
// CHECK: nn.slice %arg0 {ends = array<i64: 10>, starts = array<i64: 0>, steps = array<i64: 9223372036854775807>} : tensor<10xf32> to tensor<1xf32>
// CHECK: nn.slice %arg0 {ends = array<i64: -1>, starts = array<i64: 9>, steps = array<i64: -9223372036854775807>} : tensor<10xf32> to tensor<1xf32>
func.func @slice_huge_step(%a: tensor<10xf32>) {
  %0 = nn.slice %a {starts = array<i64: 0>, ends = array<i64: 10>, steps = array<i64: 9223372036854775807>} : tensor<10xf32> to tensor<1xf32>
  %1 = nn.slice %a {starts = array<i64: 9>, ends = array<i64: -1>, steps = array<i64: -9223372036854775807>} : tensor<10xf32> to tensor<1xf32>
  return
}

// -----

// slice of a zero-sized dimension stays empty for either step sign, and a
// rank-0 slice has no bounds at all.
// CHECK-LABEL: func @slice_empty_dim
// CHECK: nn.slice %arg0 {ends = array<i64: 0, 3>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<0x3xui8> to tensor<0x3xui8>
// CHECK: nn.slice %arg0 {ends = array<i64: -1, 3>, starts = array<i64: 0, 0>, steps = array<i64: -1, 1>} : tensor<0x3xui8> to tensor<0x3xui8>
// CHECK: nn.slice %arg1 {ends = array<i64>, starts = array<i64>, steps = array<i64>} : tensor<i1> to tensor<i1>
func.func @slice_empty_dim(%a: tensor<0x3xui8>, %b: tensor<i1>) {
  %0 = nn.slice %a {starts = array<i64: 0, 0>, ends = array<i64: 0, 3>, steps = array<i64: 1, 1>} : tensor<0x3xui8> to tensor<0x3xui8>
  %1 = nn.slice %a {starts = array<i64: 0, 0>, ends = array<i64: -1, 3>, steps = array<i64: -1, 1>} : tensor<0x3xui8> to tensor<0x3xui8>
  %2 = nn.slice %b {starts = array<i64>, ends = array<i64>, steps = array<i64>} : tensor<i1> to tensor<i1>
  return
}

// -----

// expand to a larger rank and size, from rank 0, to the same shape, and on
// bool.
// CHECK-LABEL: func @expand
// CHECK: nn.expand %arg0 : tensor<3x1xf32> to tensor<2x3x4xf32>
// CHECK: nn.expand %arg1 : tensor<i64> to tensor<2x2xi64>
// CHECK: nn.expand %arg0 : tensor<3x1xf32> to tensor<3x1xf32>
// CHECK: nn.expand %arg2 : tensor<1x4xi1> to tensor<5x4xi1>
func.func @expand(%a: tensor<3x1xf32>, %b: tensor<i64>, %c: tensor<1x4xi1>) {
  %0 = nn.expand %a : tensor<3x1xf32> to tensor<2x3x4xf32>
  %1 = nn.expand %b : tensor<i64> to tensor<2x2xi64>
  %2 = nn.expand %a : tensor<3x1xf32> to tensor<3x1xf32>
  %3 = nn.expand %c : tensor<1x4xi1> to tensor<5x4xi1>
  return
}

// -----

// gather as an embedding lookup: i64 indices [2, 8] into a [100, 16] table.
// CHECK-LABEL: func @gather_embedding
// CHECK: nn.gather %arg0, %arg1 {axis = 0 : i64} : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
func.func @gather_embedding(%w: tensor<100x16xf32>, %ids: tensor<2x8xi64>) -> tensor<2x8x16xf32> {
  %0 = nn.gather %w, %ids {axis = 0 : i64} : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

// gather along an inner axis with i32 indices, and with a rank-0 index,
// which removes the gathered dimension; data may be unsigned.
// CHECK-LABEL: func @gather_inner_axis
// CHECK: nn.gather %arg0, %arg1 {axis = 1 : i64} : (tensor<2x5x3xui8>, tensor<4xi32>) -> tensor<2x4x3xui8>
// CHECK: nn.gather %arg0, %arg2 {axis = 1 : i64} : (tensor<2x5x3xui8>, tensor<i64>) -> tensor<2x3xui8>
func.func @gather_inner_axis(%d: tensor<2x5x3xui8>, %i: tensor<4xi32>, %s: tensor<i64>) {
  %0 = nn.gather %d, %i {axis = 1 : i64} : (tensor<2x5x3xui8>, tensor<4xi32>) -> tensor<2x4x3xui8>
  %1 = nn.gather %d, %s {axis = 1 : i64} : (tensor<2x5x3xui8>, tensor<i64>) -> tensor<2x3xui8>
  return
}

// -----

// trilu: upper with an offset, lower with the default k (not printed),
// batched, and on bool (a causal mask).
// CHECK-LABEL: func @trilu
// CHECK: nn.trilu %arg0 {k = 1 : i64, upper = true} : tensor<4x4xf32>
// CHECK: nn.trilu %arg1 {upper = false} : tensor<2x3x5xi1>
func.func @trilu(%a: tensor<4x4xf32>, %b: tensor<2x3x5xi1>) {
  %0 = nn.trilu %a {upper = true, k = 1 : i64} : tensor<4x4xf32>
  %1 = nn.trilu %b {upper = false} : tensor<2x3x5xi1>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Constants and dropout
//===----------------------------------------------------------------------===//

// constant literals of float, unsigned, bool and rank-0 types (the result
// type is the attribute's type).
// CHECK-LABEL: func @constant
// CHECK: nn.constant dense<{{\[}}[1.000000e+00, 2.000000e+00]]> : tensor<1x2xf32>
// CHECK: nn.constant dense<[1, 255]> : tensor<2xui8>
// CHECK: nn.constant dense<[true, false]> : tensor<2xi1>
// CHECK: nn.constant dense<-7> : tensor<i64>
// CHECK: nn.constant dense<5.000000e-01> : tensor<3x3xbf16>
func.func @constant() {
  %0 = nn.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %1 = nn.constant dense<[1, 255]> : tensor<2xui8>
  %2 = nn.constant dense<[true, false]> : tensor<2xi1>
  %3 = nn.constant dense<-7> : tensor<i64>
  %4 = nn.constant dense<0.5> : tensor<3x3xbf16>
  return
}

// -----

// dropout in training with a fixed seed: the mask is i1 shaped like the input.
// CHECK-LABEL: func @dropout_seed
// CHECK: nn.dropout %arg0 {ratio = 1.000000e-01 : f32, seed = 42 : i64, training = true} : (tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xi1>)
func.func @dropout_seed(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y, %mask = nn.dropout %x {ratio = 0.1 : f32, training = true, seed = 42 : i64} : (tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xi1>)
  return %y : tensor<2x8xf32>
}

// -----

// dropout without a seed, in inference mode and with ratio 0 (both identity).
// CHECK-LABEL: func @dropout_no_seed
// CHECK: nn.dropout %arg0 {ratio = 5.000000e-01 : f32, training = false} : (tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xi1>)
// CHECK: nn.dropout %arg0 {ratio = 0.000000e+00 : f32, training = true} : (tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xi1>)
func.func @dropout_no_seed(%x: tensor<4xbf16>) {
  %y, %m = nn.dropout %x {ratio = 0.5 : f32, training = false} : (tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xi1>)
  %y2, %m2 = nn.dropout %x {ratio = 0.0 : f32, training = true} : (tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xi1>)
  return
}
