// RUN: fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-fuse-gelu)' | FileCheck %s

// GELU recognition (compiler/Transforms/FuseGelu.cpp): the formulas torch's
// exporters write for F.gelu become one nn.gelu; anything else stays.

// TorchScript's erf form: (x * (erf(x / sqrt 2) + 1)) * 0.5.
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: %[[G:.+]] = nn.gelu %arg0 : tensor<4x8xf32>
// CHECK-NEXT: return %[[G]]
module {
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = nn.constant dense<1.41421354> : tensor<f32>
  %d = nn.div %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = nn.erf %d : tensor<4x8xf32>
  %one = nn.constant dense<1.000000e+00> : tensor<f32>
  %a = nn.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = nn.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = nn.constant dense<5.000000e-01> : tensor<f32>
  %y = nn.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
}

// -----

// dynamo's order, x * (0.5 * (erf(x / sqrt 2) + 1)), in bf16.
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: %[[G:.+]] = nn.gelu %arg0 : tensor<4x8xbf16>
// CHECK-NEXT: return %[[G]]
module {
func.func @forward(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %c = nn.constant dense<1.41421354> : tensor<f32>
  %d = nn.div %x, %c : (tensor<4x8xbf16>, tensor<f32>) -> tensor<4x8xbf16>
  %e = nn.erf %d : tensor<4x8xbf16>
  %one = nn.constant dense<1.000000e+00> : tensor<f32>
  %a = nn.add %e, %one : (tensor<4x8xbf16>, tensor<f32>) -> tensor<4x8xbf16>
  %half = nn.constant dense<5.000000e-01> : tensor<f32>
  %h = nn.mul %half, %a : (tensor<f32>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %y = nn.mul %x, %h : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}
}

// -----

// TorchScript's tanh form, x³ as x * (x * x).
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: %[[G:.+]] = nn.gelu %arg0 {approximate = "tanh"} : tensor<4x8xf32>
// CHECK-NEXT: return %[[G]]
module {
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sq = nn.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %cube = nn.mul %x, %sq : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %kappa = nn.constant dense<4.471500e-02> : tensor<f32>
  %kc = nn.mul %kappa, %cube : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = nn.add %x, %kc : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %beta = nn.constant dense<0.797884583> : tensor<f32>
  %in = nn.mul %beta, %s : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = nn.tanh %in : tensor<4x8xf32>
  %one = nn.constant dense<1.000000e+00> : tensor<f32>
  %a = nn.add %one, %t : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = nn.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = nn.constant dense<5.000000e-01> : tensor<f32>
  %y = nn.mul %half, %m : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
}

// -----

// dynamo's tanh form, x³ as Pow(x, 3).
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: %[[G:.+]] = nn.gelu %arg0 {approximate = "tanh"} : tensor<4x8xf32>
// CHECK-NEXT: return %[[G]]
module {
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %three = nn.constant dense<3.000000e+00> : tensor<f32>
  %cube = nn.pow %x, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %kappa = nn.constant dense<4.471500e-02> : tensor<f32>
  %kc = nn.mul %cube, %kappa : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %s = nn.add %x, %kc : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %beta = nn.constant dense<0.797884583> : tensor<f32>
  %in = nn.mul %s, %beta : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %t = nn.tanh %in : tensor<4x8xf32>
  %one = nn.constant dense<1.000000e+00> : tensor<f32>
  %a = nn.add %t, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %half = nn.constant dense<5.000000e-01> : tensor<f32>
  %h = nn.mul %a, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %y = nn.mul %x, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
}

// -----

// Near misses stay: erf(x / sqrt 2) read again, another constant (0.6),
// and a different x in the factor than inside the erf.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: nn.gelu
// CHECK: return
module {
func.func @forward(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.000000e+00> : tensor<f32>
  %half = nn.constant dense<5.000000e-01> : tensor<f32>
  %other = nn.constant dense<6.000000e-01> : tensor<f32>
  %d = nn.div %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = nn.erf %d : tensor<4x8xf32>
  %a = nn.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = nn.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = nn.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %d2 = nn.div %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e2 = nn.erf %d2 : tensor<4x8xf32>
  %a2 = nn.add %e2, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m2 = nn.mul %x, %a2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y2 = nn.mul %m2, %other : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %d3 = nn.div %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e3 = nn.erf %d3 : tensor<4x8xf32>
  %a3 = nn.add %e3, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m3 = nn.mul %z, %a3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y3 = nn.mul %m3, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y, %e, %y2, %y3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
}
