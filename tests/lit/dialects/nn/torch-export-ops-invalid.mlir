// RUN: fsdp-opt %s -split-input-file -verify-diagnostics

// Verifier and ODS constraint failures of the torch 2.x export ops
// (dialects/nn/TorchExportOps.cpp and padShape/tileShape in ShapeRules.cpp).

// gelu knows torch's two approximations only.
func.func @gelu_approximate(%x: tensor<2xf32>) {
  // expected-error @+1 {{'nn.gelu' op approximate must be "none" or "tanh", got "fast"}}
  %0 = nn.gelu %x {approximate = "fast"} : tensor<2xf32>
  return
}

// -----

func.func @gelu_grad_approximate(%x: tensor<2xf32>) {
  // expected-error @+1 {{'nn.gelu_grad' op approximate must be "none" or "tanh", got "erf"}}
  %0 = nn.gelu_grad %x, %x {approximate = "erf"} : tensor<2xf32>
  return
}

// -----

// The unary math is float only.
func.func @cos_int(%x: tensor<2xi64>) {
  // expected-error @+1 {{'nn.cos' op operand #0 must be statically shaped tensor of}}
  %0 = nn.cos %x : tensor<2xi64>
  return
}

// -----

// pad's value is one element, rank 0.
func.func @pad_value_rank(%x: tensor<2xf32>, %v: tensor<1xf32>) {
  // expected-error @+1 {{'nn.pad' op value must be a rank-0 tensor, got shape [1]}}
  %0 = nn.pad %x, %v {pads = array<i64: 1, 0>} : (tensor<2xf32>, tensor<1xf32>) -> tensor<3xf32>
  return
}

// -----

// pad's value has the input's element type.
func.func @pad_value_type(%x: tensor<2xi64>, %v: tensor<f32>) {
  // expected-error @+1 {{'nn.pad' op requires the same element type for all operands and results}}
  %0 = nn.pad %x, %v {pads = array<i64: 1, 0>} : (tensor<2xi64>, tensor<f32>) -> tensor<3xi64>
  return
}

// -----

// Negative pads are the importer's business (a slice): not in nn.pad.
func.func @pad_negative(%x: tensor<4xf32>, %v: tensor<f32>) {
  // expected-error @+1 {{'nn.pad' op pads of dimension 0 are negative (-1, 0)}}
  %0 = nn.pad %x, %v {pads = array<i64: -1, 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<3xf32>
  return
}

// -----

func.func @pad_count(%x: tensor<2x2xf32>, %v: tensor<f32>) {
  // expected-error @+1 {{'nn.pad' op pads has 2 entries, expected 2 x rank = 4}}
  %0 = nn.pad %x, %v {pads = array<i64: 1, 0>} : (tensor<2x2xf32>, tensor<f32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @pad_result(%x: tensor<2xf32>, %v: tensor<f32>) {
  // expected-error @+1 {{'nn.pad' op result shape [4] does not match the expected [3]}}
  %0 = nn.pad %x, %v {pads = array<i64: 1, 0>} : (tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @tile_repeats(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.tile' op repeats has 1 entries for rank 2}}
  %0 = nn.tile %x {repeats = array<i64: 2>} : tensor<2x3xf32> to tensor<4x3xf32>
  return
}

// -----

func.func @tile_negative(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.tile' op repeats[1] = -1 is negative}}
  %0 = nn.tile %x {repeats = array<i64: 1, -1>} : tensor<2x3xf32> to tensor<2x3xf32>
  return
}

// -----

func.func @tile_result(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.tile' op result shape [4, 3] does not match the expected [2, 6]}}
  %0 = nn.tile %x {repeats = array<i64: 1, 2>} : tensor<2x3xf32> to tensor<4x3xf32>
  return
}

// -----

func.func @cumsum_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.cumsum' op axis 2 is outside [0, 2)}}
  %0 = nn.cumsum %x {axis = 2 : i64} : tensor<2x3xf32>
  return
}

// -----

// cumsum is numeric: bool masks are cast first.
func.func @cumsum_bool(%x: tensor<3xi1>) {
  // expected-error @+1 {{'nn.cumsum' op operand #0 must be statically shaped tensor of}}
  %0 = nn.cumsum %x {axis = 0 : i64} : tensor<3xi1>
  return
}
