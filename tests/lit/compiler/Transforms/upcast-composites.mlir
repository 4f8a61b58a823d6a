// RUN: fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-upcast-composites)' | FileCheck %s

// Composite upcast (compiler/Transforms/UpcastComposites.cpp): a 16-bit
// x * rsqrt(mean(x^2) + eps) [* weight] or x * sigmoid(x) runs in f32 and
// rounds once.

// torch's decomposition, `normed * weight`: the weight joins the f32 chain.
// CHECK-LABEL: func.func @forward
// CHECK: %[[X:.+]] = nn.cast %arg0 : tensor<2x8xbf16> to tensor<2x8xf32>
// CHECK: nn.pow %[[X]], %{{.+}} : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
// CHECK: nn.reduce_mean %{{.+}} {axes = array<i64: 1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
// CHECK: nn.reciprocal %{{.+}} : tensor<2x1xf32>
// CHECK: %[[N:.+]] = nn.mul %[[X]], %{{.+}} : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
// CHECK: %[[W:.+]] = nn.cast %arg1 : tensor<8xbf16> to tensor<8xf32>
// CHECK: %[[Y:.+]] = nn.mul %[[N]], %[[W]] : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK: %[[R:.+]] = nn.cast %[[Y]] : tensor<2x8xf32> to tensor<2x8xbf16>
// CHECK-NEXT: return %[[R]]
module {
func.func @forward(%x: tensor<2x8xbf16>, %w: tensor<8xbf16>) -> tensor<2x8xbf16> {
  %two = nn.constant dense<2.000000e+00> : tensor<f32>
  %eps = nn.constant dense<9.99999997E-7> : tensor<f32>
  %p = nn.pow %x, %two : (tensor<2x8xbf16>, tensor<f32>) -> tensor<2x8xbf16>
  %m = nn.reduce_mean %p {axes = array<i64: 1>} : (tensor<2x8xbf16>) -> tensor<2x1xbf16>
  %a = nn.add %m, %eps : (tensor<2x1xbf16>, tensor<f32>) -> tensor<2x1xbf16>
  %s = nn.sqrt %a : tensor<2x1xbf16>
  %r = nn.reciprocal %s : tensor<2x1xbf16>
  %n = nn.mul %x, %r : (tensor<2x8xbf16>, tensor<2x1xbf16>) -> tensor<2x8xbf16>
  %y = nn.mul %n, %w : (tensor<2x8xbf16>, tensor<8xbf16>) -> tensor<2x8xbf16>
  return %y : tensor<2x8xbf16>
}
}

// -----

// Gemma's `output * (1 + w)`: the weight's sum joins the f32 chain too.
// CHECK-LABEL: func.func @forward
// CHECK: %[[N:.+]] = nn.mul %{{.+}}, %{{.+}} : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
// CHECK: %[[ONE:.+]] = nn.cast %{{.+}} : tensor<bf16> to tensor<f32>
// CHECK: %[[W:.+]] = nn.cast %arg1 : tensor<8xbf16> to tensor<8xf32>
// CHECK: %[[S:.+]] = nn.add %[[ONE]], %[[W]] : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK: %[[Y:.+]] = nn.mul %[[N]], %[[S]] : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK: nn.cast %[[Y]] : tensor<2x8xf32> to tensor<2x8xbf16>
module {
func.func @forward(%x: tensor<2x8xbf16>, %w: tensor<8xbf16>) -> tensor<2x8xbf16> {
  %two = nn.constant dense<2.000000e+00> : tensor<f32>
  %eps = nn.constant dense<9.99999997E-7> : tensor<f32>
  %one = nn.constant dense<1.000000e+00> : tensor<bf16>
  %p = nn.pow %x, %two : (tensor<2x8xbf16>, tensor<f32>) -> tensor<2x8xbf16>
  %m = nn.reduce_mean %p {axes = array<i64: 1>} : (tensor<2x8xbf16>) -> tensor<2x1xbf16>
  %a = nn.add %m, %eps : (tensor<2x1xbf16>, tensor<f32>) -> tensor<2x1xbf16>
  %s = nn.sqrt %a : tensor<2x1xbf16>
  %r = nn.reciprocal %s : tensor<2x1xbf16>
  %n = nn.mul %x, %r : (tensor<2x8xbf16>, tensor<2x1xbf16>) -> tensor<2x8xbf16>
  %g = nn.add %one, %w : (tensor<bf16>, tensor<8xbf16>) -> tensor<8xbf16>
  %y = nn.mul %n, %g : (tensor<2x8xbf16>, tensor<8xbf16>) -> tensor<2x8xbf16>
  return %y : tensor<2x8xbf16>
}
}

// -----

// transformers' Llama, `weight * normed.to(dtype)`, x^2 as x * x: the
// normalized value rounds first and the weight's product stays in f16.
// CHECK-LABEL: func.func @forward
// CHECK: %[[X:.+]] = nn.cast %arg0 : tensor<2x8xf16> to tensor<2x8xf32>
// CHECK: nn.mul %[[X]], %[[X]] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK: %[[N:.+]] = nn.cast %{{.+}} : tensor<2x8xf32> to tensor<2x8xf16>
// CHECK-NEXT: %[[Y:.+]] = nn.mul %arg1, %[[N]] : (tensor<8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
// CHECK-NEXT: return %[[Y]]
module {
func.func @forward(%x: tensor<2x8xf16>, %w: tensor<8xf16>) -> tensor<2x8xf16> {
  %eps = nn.constant dense<9.99999997E-7> : tensor<f32>
  %p = nn.mul %x, %x : (tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
  %m = nn.reduce_mean %p {axes = array<i64: 1>} : (tensor<2x8xf16>) -> tensor<2x1xf16>
  %a = nn.add %m, %eps : (tensor<2x1xf16>, tensor<f32>) -> tensor<2x1xf16>
  %s = nn.sqrt %a : tensor<2x1xf16>
  %r = nn.reciprocal %s : tensor<2x1xf16>
  %n = nn.mul %x, %r : (tensor<2x8xf16>, tensor<2x1xf16>) -> tensor<2x8xf16>
  %y = nn.mul %w, %n : (tensor<8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
  return %y : tensor<2x8xf16>
}
}

// -----

// Near misses stay: an f32 chain, a mean over a leading axis, and a
// mean read twice.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: nn.cast
// CHECK: return
module {
func.func @forward(%x: tensor<2x8xf32>, %y: tensor<2x8xbf16>, %z: tensor<2x8xbf16>) -> (tensor<2x8xf32>, tensor<2x8xbf16>, tensor<2x8xbf16>, tensor<2x1xbf16>) {
  %two = nn.constant dense<2.000000e+00> : tensor<f32>
  %eps = nn.constant dense<9.99999997E-7> : tensor<f32>
  %p = nn.pow %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = nn.reduce_mean %p {axes = array<i64: 1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %a = nn.add %m, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = nn.sqrt %a : tensor<2x1xf32>
  %r = nn.reciprocal %s : tensor<2x1xf32>
  %n = nn.mul %x, %r : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %p2 = nn.pow %y, %two : (tensor<2x8xbf16>, tensor<f32>) -> tensor<2x8xbf16>
  %m2 = nn.reduce_mean %p2 {axes = array<i64: 0>} : (tensor<2x8xbf16>) -> tensor<1x8xbf16>
  %a2 = nn.add %m2, %eps : (tensor<1x8xbf16>, tensor<f32>) -> tensor<1x8xbf16>
  %s2 = nn.sqrt %a2 : tensor<1x8xbf16>
  %r2 = nn.reciprocal %s2 : tensor<1x8xbf16>
  %n2 = nn.mul %y, %r2 : (tensor<2x8xbf16>, tensor<1x8xbf16>) -> tensor<2x8xbf16>
  %p3 = nn.pow %z, %two : (tensor<2x8xbf16>, tensor<f32>) -> tensor<2x8xbf16>
  %m3 = nn.reduce_mean %p3 {axes = array<i64: 1>} : (tensor<2x8xbf16>) -> tensor<2x1xbf16>
  %a3 = nn.add %m3, %eps : (tensor<2x1xbf16>, tensor<f32>) -> tensor<2x1xbf16>
  %s3 = nn.sqrt %a3 : tensor<2x1xbf16>
  %r3 = nn.reciprocal %s3 : tensor<2x1xbf16>
  %n3 = nn.mul %z, %r3 : (tensor<2x8xbf16>, tensor<2x1xbf16>) -> tensor<2x8xbf16>
  return %n, %n2, %n3, %m3 : tensor<2x8xf32>, tensor<2x8xbf16>, tensor<2x8xbf16>, tensor<2x1xbf16>
}
}

// -----

// F.silu's export, sigmoid(x) * x: in f32 from a widened x, one rounding.
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: %[[X:.+]] = nn.cast %arg0 : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT: %[[S:.+]] = nn.sigmoid %[[X]] : tensor<4x8xf32>
// CHECK-NEXT: %[[M:.+]] = nn.mul %[[S]], %[[X]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[Y:.+]] = nn.cast %[[M]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT: return %[[Y]]
module {
func.func @forward(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %s = nn.sigmoid %x : tensor<4x8xbf16>
  %y = nn.mul %s, %x : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}
}

// -----

// A sigmoid read twice, or times another tensor, stays.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: nn.cast
// CHECK: return
module {
func.func @forward(%x: tensor<4x8xbf16>, %z: tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %s = nn.sigmoid %x : tensor<4x8xbf16>
  %y = nn.mul %x, %s : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %s2 = nn.sigmoid %x : tensor<4x8xbf16>
  %y2 = nn.mul %z, %s2 : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %y, %s, %y2 : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>
}
}
