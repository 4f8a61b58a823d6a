// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-mixed-precision{param-dtype=bf16 freeze=frozen|buffer})' | FileCheck %s
// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(fsdp-mixed-precision{param-dtype=f16 output-dtype=f32 freeze=frozen|buffer})' | FileCheck %s --check-prefix=F16
// RUN: not fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-mixed-precision{param-dtype=bf16 cast-forward-inputs=false})' 2>&1 | FileCheck %s --check-prefix=NOCAST

// fsdp-mixed-precision (compiler/Transforms/MixedPrecision.cpp): @forward
// computes in the compute dtype as FSDP2's MixedPrecisionPolicy makes
// torch compute it.

// Parameters and float inputs are cast once at the top; ops follow their
// operands; a constant-only value (an export's Python scalar or SDPA
// scale) takes the dtype it meets; integer inputs are untouched.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: -> (tensor<2x3xbf16> {nn.output = "y"})
// CHECK-DAG: %[[X:[0-9]+]] = nn.cast %arg0 : tensor<2x4xf32> to tensor<2x4xbf16>
// CHECK-DAG: %[[W:[0-9]+]] = nn.cast %arg1 : tensor<4x3xf32> to tensor<4x3xbf16>
// CHECK: %[[MM:[0-9]+]] = nn.matmul %[[X]], %[[W]] : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xbf16>
// CHECK: %[[S:[0-9]+]] = nn.constant dense<1.250000e-01> : tensor<1xf32>
// CHECK: %[[SB:[0-9]+]] = nn.cast %[[S]] : tensor<1xf32> to tensor<1xbf16>
// CHECK: nn.mul %[[MM]], %[[SB]] : (tensor<2x3xbf16>, tensor<1xbf16>) -> tensor<2x3xbf16>
// CHECK: nn.softmax {{.*}} : tensor<2x3xbf16>
// Without cast-forward-inputs the f32 input meets a bf16 weight, which
// torch refuses too.
// NOCAST: error: 'nn.matmul' op has operands of dtypes f32 and bf16 under --param-dtype=bf16
// F16-LABEL: func.func @forward(
// F16-SAME: -> (tensor<2x3xf32> {nn.output = "y"})
// F16-DAG: nn.cast %arg1 : tensor<4x3xf32> to tensor<4x3xf16>
// F16-DAG: nn.cast %arg0 : tensor<2x4xf32> to tensor<2x4xf16>
// F16: nn.matmul {{.*}} -> tensor<2x3xf16>
// F16: nn.cast {{.*}} : tensor<2x3xf16> to tensor<2x3xf32>
// F16-NEXT: return
func.func @forward(%x: tensor<2x4xf32> {nn.input = "x"}, %w: tensor<4x3xf32> {nn.param = "w"},
                   %ids: tensor<2xi64> {nn.input = "ids"}) -> (tensor<2x3xf32> {nn.output = "y"}) {
  %0 = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %s = nn.constant dense<0.125> : tensor<1xf32>
  %1 = nn.mul %0, %s : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %2 = nn.softmax %1 {axis = 1 : i64} : tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----

// A rank-0 operand does not promote a dimensioned one; a dimensioned
// f32 operand does (torch: bf16 + f32 tensor is f32), and an explicit
// conversion the model wrote keeps its target.
// CHECK-LABEL: func.func @forward(
// CHECK: %[[A:[0-9]+]] = nn.cast %arg0 : tensor<3xf32> to tensor<3xbf16>
// CHECK: %[[L:[0-9]+]] = nn.cast %arg1 : tensor<f32> to tensor<bf16>
// CHECK: %[[SUM:[0-9]+]] = nn.add %[[A]], %[[L]] : (tensor<3xbf16>, tensor<bf16>) -> tensor<3xbf16>
// CHECK: %[[WIDE:[0-9]+]] = nn.cast %[[SUM]] : tensor<3xbf16> to tensor<3xf32>
// CHECK: nn.add %[[WIDE]], %arg2 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
func.func @forward(%a: tensor<3xf32> {nn.param = "a"}, %l: tensor<f32> {nn.param = "l"},
                   %buf: tensor<3xf32> {nn.param = "buffer"}) -> (tensor<3xf32> {nn.output = "y"}) {
  %0 = nn.add %a, %l : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %1 = nn.add %0, %buf : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}

// -----

// torch refuses a matmul of a bf16 activation and an f32 buffer.
func.func @forward(%x: tensor<2x4xf32> {nn.input = "x"}, %w: tensor<4x3xf32> {nn.param = "w"},
                   %b: tensor<3x3xf32> {nn.param = "frozen"}) -> (tensor<2x3xf32> {nn.output = "y"}) {
  %0 = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %c = nn.constant dense<1.0> : tensor<f32>
  %1 = nn.mul %0, %c : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // expected-error @+1 {{torch refuses a matrix product of mixed dtypes}}
  %2 = nn.matmul %1, %b : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}


// -----

// F.linear (matmul by transpose(weight), then the bias) becomes one gemm
// with the bias, as torch's addmm rounds once; it reads the weight with
// trans_b, so neither the forward nor the weight's gradient transposes.
// CHECK-LABEL: func.func @forward(
// CHECK-DAG: %[[W:[0-9]+]] = nn.cast %arg1 : tensor<5x4xf32> to tensor<5x4xbf16>
// CHECK-DAG: %[[X:[0-9]+]] = nn.cast %arg0 : tensor<2x3x4xf32> to tensor<2x3x4xbf16>
// CHECK-DAG: %[[B:[0-9]+]] = nn.cast %arg2 : tensor<5xf32> to tensor<5xbf16>
// CHECK: %[[FLAT:[0-9]+]] = nn.reshape %[[X]] : tensor<2x3x4xbf16> to tensor<6x4xbf16>
// CHECK: %[[G:[0-9]+]] = nn.gemm %[[FLAT]], %[[W]], %[[B]] {trans_b = true} : (tensor<6x4xbf16>, tensor<5x4xbf16>, tensor<5xbf16>) -> tensor<6x5xbf16>
// CHECK: nn.reshape %[[G]] : tensor<6x5xbf16> to tensor<2x3x5xbf16>
// CHECK-NOT: nn.transpose
// CHECK: return
func.func @forward(%x: tensor<2x3x4xf32> {nn.input = "x"}, %w: tensor<5x4xf32> {nn.param = "w"},
                   %bias: tensor<5xf32> {nn.param = "bias"}) -> (tensor<2x3x5xf32> {nn.output = "y"}) {
  %wt = nn.transpose %w {perm = array<i64: 1, 0>} : tensor<5x4xf32> to tensor<4x5xf32>
  %0 = nn.matmul %x, %wt : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %1 = nn.add %0, %bias : (tensor<2x3x5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  return %1 : tensor<2x3x5xf32>
}

// -----

// A Python scalar in mul/div/add keeps f32 (torch's wrapped number: the
// kernel multiplies by it unrounded) unless the compute dtype holds it
// exactly, as GELU's 0.5 and 1: then it becomes a bf16 constant, which
// changes no bit and lets the op fuse. 1/sqrt(2) is not exact in bf16.
// CHECK-LABEL: func.func @forward(
// CHECK-DAG: %[[X:[0-9]+]] = nn.cast %arg0 : tensor<2x3xf32> to tensor<2x3xbf16>
// CHECK-DAG: %[[R2:[0-9]+]] = nn.constant dense<1.41421354> : tensor<f32>
// CHECK: %[[D:[0-9]+]] = nn.div %[[X]], %[[R2]] : (tensor<2x3xbf16>, tensor<f32>) -> tensor<2x3xbf16>
// CHECK: %[[E:[0-9]+]] = nn.erf %[[D]] : tensor<2x3xbf16>
// CHECK: %[[ONE:[0-9]+]] = nn.constant dense<1.000000e+00> : tensor<bf16>
// CHECK: %[[A:[0-9]+]] = nn.add %[[E]], %[[ONE]] : (tensor<2x3xbf16>, tensor<bf16>) -> tensor<2x3xbf16>
// CHECK: %[[M:[0-9]+]] = nn.mul %[[X]], %[[A]]
// CHECK: %[[HALF:[0-9]+]] = nn.constant dense<5.000000e-01> : tensor<bf16>
// CHECK: nn.mul %[[M]], %[[HALF]] : (tensor<2x3xbf16>, tensor<bf16>) -> tensor<2x3xbf16>
// CHECK-NOT: tensor<f32>
// CHECK: return
func.func @forward(%x: tensor<2x3xf32> {nn.input = "x"}) -> (tensor<2x3xf32> {nn.output = "y"}) {
  %r2 = nn.constant dense<1.41421354> : tensor<f32>
  %0 = nn.div %x, %r2 : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = nn.erf %0 : tensor<2x3xf32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %2 = nn.add %1, %one : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %3 = nn.mul %x, %2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %4 = nn.mul %3, %half : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}
