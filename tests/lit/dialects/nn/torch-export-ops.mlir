// RUN: fsdp-opt %s -split-input-file | fsdp-opt - -split-input-file | FileCheck %s

// The torch 2.x export ops (dialects/nn/NNTorchExportOps.td) print and
// parse back: gelu and gelu_grad with both approximations (none is the
// default and not printed), the unary math, pad with a rank-0 value
// (integer and float), tile and cumsum with their attributes.

// CHECK-LABEL: func @math
func.func @math(%x: tensor<2x3xf32>, %g: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: nn.gelu %{{.*}} : tensor<2x3xf32>
  %0 = nn.gelu %x : tensor<2x3xf32>
  // CHECK: nn.gelu %{{.*}} {approximate = "tanh"} : tensor<2x3xf32>
  %1 = nn.gelu %0 {approximate = "tanh"} : tensor<2x3xf32>
  // CHECK: nn.reciprocal
  %2 = nn.reciprocal %1 : tensor<2x3xf32>
  // CHECK: nn.cos
  %3 = nn.cos %2 : tensor<2x3xf32>
  // CHECK: nn.sin
  %4 = nn.sin %3 : tensor<2x3xf32>
  // CHECK: nn.softplus
  %5 = nn.softplus %4 : tensor<2x3xf32>
  // CHECK: nn.gelu_grad %{{.*}}, %{{.*}} {approximate = "tanh"} : tensor<2x3xf32>
  %6 = nn.gelu_grad %5, %g {approximate = "tanh"} : tensor<2x3xf32>
  return %6 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func @pad
func.func @pad(%labels: tensor<2x5xi64>, %x: tensor<2x3xbf16>) -> (tensor<2x6xi64>, tensor<3x5xbf16>) {
  %m100 = nn.constant dense<-100> : tensor<i64>
  // CHECK: nn.pad %{{.*}}, %{{.*}} {pads = array<i64: 0, 0, 0, 1>} : (tensor<2x5xi64>, tensor<i64>) -> tensor<2x6xi64>
  %0 = nn.pad %labels, %m100 {pads = array<i64: 0, 0, 0, 1>} : (tensor<2x5xi64>, tensor<i64>) -> tensor<2x6xi64>
  %v = nn.constant dense<1.5> : tensor<bf16>
  // CHECK: nn.pad {{.*}} -> tensor<3x5xbf16>
  %1 = nn.pad %x, %v {pads = array<i64: 1, 0, 0, 2>} : (tensor<2x3xbf16>, tensor<bf16>) -> tensor<3x5xbf16>
  return %0, %1 : tensor<2x6xi64>, tensor<3x5xbf16>
}

// -----

// CHECK-LABEL: func @tile_cumsum
func.func @tile_cumsum(%x: tensor<2x3xf32>, %m: tensor<2x3xi64>) -> (tensor<4x3xf32>, tensor<2x3xi64>) {
  // CHECK: nn.tile %{{.*}} {repeats = array<i64: 2, 1>} : tensor<2x3xf32> to tensor<4x3xf32>
  %0 = nn.tile %x {repeats = array<i64: 2, 1>} : tensor<2x3xf32> to tensor<4x3xf32>
  // CHECK: nn.cumsum %{{.*}} {axis = 1 : i64, exclusive = true, reverse = true} : tensor<2x3xi64>
  %1 = nn.cumsum %m {axis = 1 : i64, exclusive = true, reverse = true} : tensor<2x3xi64>
  return %0, %1 : tensor<4x3xf32>, tensor<2x3xi64>
}
