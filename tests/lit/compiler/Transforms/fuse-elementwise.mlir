// RUN: fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(fsdp-fuse-elementwise))' | FileCheck %s

// Elementwise fusion (compiler/Transforms/FuseElementwise.cpp): chains of
// f32 elementwise ops of one shape, with full or single-element operands,
// become one nn.fused whose program lists [code, a, b] per op (values: the
// inputs first, then each op's result).

// The erf GELU torch exports: div, erf, add, mul, mul in one op. Inputs in
// first-use order: %x, the three scalars.
// CHECK-LABEL: func.func @gelu
// CHECK-NEXT: %[[C0:.+]] = nn.constant dense<1.41421354> : tensor<f32>
// CHECK-NEXT: %[[C1:.+]] = nn.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[C2:.+]] = nn.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[F:.+]] = nn.fused %arg0, %[[C0]], %[[C1]], %[[C2]] {program = array<i64: 3, 0, 1, 9, 4, -1, 0, 5, 2, 2, 0, 6, 2, 7, 3>, results_of = array<i64: 8>} : (tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[F]]
func.func @gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c0 = nn.constant dense<1.41421354> : tensor<f32>
  %c1 = nn.constant dense<1.0> : tensor<f32>
  %c2 = nn.constant dense<0.5> : tensor<f32>
  %0 = nn.div %x, %c0 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = nn.erf %0 : tensor<4x8xf32>
  %2 = nn.add %1, %c1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = nn.mul %x, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = nn.mul %3, %c2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// An intermediate read after the group (a value saved for the backward
// pass) becomes a second result.
// CHECK-LABEL: func.func @saved_intermediate
// CHECK-NEXT: %[[F:.+]]:2 = nn.fused %arg0, %arg1 {program = array<i64: 6, 0, -1, 2, 2, 1>, results_of = array<i64: 2, 3>}
// CHECK-NEXT: %[[T:.+]] = nn.transpose %[[F]]#0
// CHECK-NEXT: return %[[F]]#1, %[[T]]
func.func @saved_intermediate(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %0 = nn.exp %x : tensor<4x4xf32>
  %1 = nn.mul %0, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = nn.transpose %0 {perm = array<i64: 1, 0>} : tensor<4x4xf32> to tensor<4x4xf32>
  return %1, %2 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A value read by another op between its producer and the next elementwise
// op keeps the groups apart: the fused op would come after that reader.
// CHECK-LABEL: func.func @read_in_between
// CHECK-NEXT: %[[E:.+]] = nn.exp %arg0
// CHECK-NEXT: %[[T:.+]] = nn.transpose %[[E]]
// CHECK-NEXT: %[[M:.+]] = nn.mul %[[E]], %[[T]]
func.func @read_in_between(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = nn.exp %x : tensor<4x4xf32>
  %1 = nn.transpose %0 {perm = array<i64: 1, 0>} : tensor<4x4xf32> to tensor<4x4xf32>
  %2 = nn.mul %0, %1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}

// -----

// Not fused: a row-broadcast operand (a bias), f64, and a lone op.
// CHECK-LABEL: func.func @not_fusible
// CHECK-NOT: nn.fused
// CHECK: nn.add
// CHECK: nn.exp
// CHECK: nn.exp
// CHECK: nn.neg
func.func @not_fusible(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %d: tensor<4x8xf64>)
    -> (tensor<4x8xf32>, tensor<4x8xf64>) {
  %0 = nn.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = nn.exp %0 : tensor<4x8xf32>
  %2 = nn.exp %d : tensor<4x8xf64>
  %3 = nn.neg %2 : tensor<4x8xf64>
  return %1, %3 : tensor<4x8xf32>, tensor<4x8xf64>
}

// -----

// bf16 and f16 chains fuse as f32 ones do (the runtime rounds each op's
// result to the storage dtype, as the unfused kernels store it), with
// single-element operands of the same dtype.
// CHECK-LABEL: func.func @bf16_chain
// CHECK-NEXT: %[[C:.+]] = nn.constant dense<5.000000e-01> : tensor<bf16>
// CHECK-NEXT: %[[F:.+]] = nn.fused %arg0, %[[C]], %arg1 {program = array<i64: 2, 0, 1, 10, 3, -1, 0, 4, 2>, results_of = array<i64: 5>} : (tensor<4x8xbf16>, tensor<bf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK-NEXT: return %[[F]]
func.func @bf16_chain(%x: tensor<4x8xbf16>, %y: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %c = nn.constant dense<0.5> : tensor<bf16>
  %0 = nn.mul %x, %c : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  %1 = nn.tanh %0 : tensor<4x8xbf16>
  %2 = nn.add %1, %y : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %2 : tensor<4x8xbf16>
}

// -----

// CHECK-LABEL: func.func @f16_chain
// CHECK-NEXT: %[[F:.+]]:2 = nn.fused %arg0 {program = array<i64: 6, 0, -1, 8, 1, -1>, results_of = array<i64: 1, 2>} : (tensor<16xf16>) -> (tensor<16xf16>, tensor<16xf16>)
// CHECK-NEXT: %[[T:.+]] = nn.transpose
func.func @f16_chain(%x: tensor<16xf16>) -> (tensor<16xf16>, tensor<16xf16>) {
  %0 = nn.exp %x : tensor<16xf16>
  %1 = nn.sqrt %0 : tensor<16xf16>
  %2 = nn.transpose %0 {perm = array<i64: 0>} : tensor<16xf16> to tensor<16xf16>
  return %1, %2 : tensor<16xf16>, tensor<16xf16>
}

// -----

// A cast ends a chain: the bf16 ops before it and the f32 ops after it fuse
// apart, each in its own dtype, and nothing fuses across the cast.
// CHECK-LABEL: func.func @cast_splits_dtypes
// CHECK-NEXT: %[[B:.+]] = nn.fused %arg0 {program = array<i64: 6, 0, -1, 4, 1, -1>, results_of = array<i64: 2>} : (tensor<8xbf16>) -> tensor<8xbf16>
// CHECK-NEXT: %[[W:.+]] = nn.cast %[[B]] : tensor<8xbf16> to tensor<8xf32>
// CHECK-NEXT: %[[F:.+]] = nn.fused %[[W]], %arg1 {program = array<i64: 0, 0, 1, 10, 2, -1>, results_of = array<i64: 3>} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT: return %[[F]]
func.func @cast_splits_dtypes(%x: tensor<8xbf16>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %0 = nn.exp %x : tensor<8xbf16>
  %1 = nn.neg %0 : tensor<8xbf16>
  %2 = nn.cast %1 : tensor<8xbf16> to tensor<8xf32>
  %3 = nn.add %2, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %4 = nn.tanh %3 : tensor<8xf32>
  return %4 : tensor<8xf32>
}
