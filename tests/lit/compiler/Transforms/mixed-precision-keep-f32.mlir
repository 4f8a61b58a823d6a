// --keep-f32: a kept parameter stays f32 (marked for the sharder) and the
// op reading it takes f32 operands, the bf16 activation cast up (an f32
// policy on that module); what follows promotes by torch's rule.
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-mixed-precision{param-dtype=bf16 keep-f32=^norm})' 2>&1 | FileCheck %s --check-prefix=KEEP
// A regex matching no parameter is an error.
// RUN: not fsdp-opt %s --pass-pipeline='builtin.module(fsdp-mixed-precision{param-dtype=bf16 keep-f32=^nothing})' 2>&1 | FileCheck %s --check-prefix=NOMATCH
// NOMATCH: error: --keep-f32=^nothing matches no trainable parameter
// KEEP-LABEL: func.func @forward(
// KEEP-SAME: %arg1: tensor<3xf32> {nn.keep_f32, nn.param = "norm.weight"}
// KEEP: %[[XB:[0-9]+]] = nn.cast %arg0 : tensor<2x3xf32> to tensor<2x3xbf16>
// KEEP: %[[R:[0-9]+]] = nn.relu %[[XB]] : tensor<2x3xbf16>
// KEEP: %[[UP:[0-9]+]] = nn.cast %[[R]] : tensor<2x3xbf16> to tensor<2x3xf32>
// KEEP: nn.mul %[[UP]], %arg1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
func.func @forward(%x: tensor<2x3xf32> {nn.input = "x"}, %g: tensor<3xf32> {nn.param = "norm.weight"})
    -> (tensor<2x3xf32> {nn.output = "y"}) {
  %0 = nn.relu %x : tensor<2x3xf32>
  %1 = nn.mul %0, %g : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
